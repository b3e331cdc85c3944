//! Helper agents and read-only delegates as one workbench capability: both launch `pi --mode json
//! -p` children like the main Pi (same program and arguments — `--no-mcp` included — and in the
//! demo the same offline model settings), share one board, and show on it: the footer's helper
//! spend and the dock's agent rows. While model fusion is on (its status on the bus), helpers
//! default to its sidekick and a warm pool of sidekick Pis serves them; the pool stops on every
//! exit path.

use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio::sync::watch;
use unipi_widgets::agents::helpers_segment;
use unipi_widgets::dashboard::{InfoGroup, InfoRow};
use unipi_widgets::footer::{Segment, format_cost, format_tokens};

use super::dock::HelperDock;
use super::module::{CONFIG_FILE, HelperSettings, HelpersConfig, HelpersModule, PiLaunch};
use crate::bridge::Module;
use crate::capability::settings::live_reporting;
use crate::capability::{BridgeLink, Capability, Changed, Registration, StartContext};
use crate::config::module_file::ModuleConfig;
use crate::delegate::DelegateModule;
use crate::views::dock::DockSource;

pub const REGISTRATION: Registration = Registration {
    name: "helpers",
    start,
    key_tables: &[],
    actions: &[],
    dock: Some(&super::dock::WORDS),
};

fn start(context: &mut StartContext<'_>) -> Option<Arc<dyn Capability>> {
    // subagents.json is followed (its caps apply to the next spawn); the agent types are read
    // here, once: Pi is told them with the tool, so a new or changed type needs a restart.
    let config = live_reporting(context, &[CONFIG_FILE], HelpersConfig::load);
    let (mut catalog, agent_errors) = super::agents::load_agents(context.home, context.workspace);
    for error in &agent_errors {
        context.report(error);
    }
    // Unipi's switches, read once like the types: the tools are declared once.
    let switches = config.get();
    catalog.switch(&switches.types);
    if !switches.enabled {
        tracing::info!("helpers: `enabled: false` in subagents.json; no helper tools declared");
    }
    let child = context.child_pi();
    // Kept across sessions (`get` and `resume` of an earlier run read them); never in a shared
    // temporary directory: without a state or cache directory, in the private runtime one.
    let runs_root = dirs::state_dir()
        .or_else(dirs::cache_dir)
        .map(|dir| dir.join("unipi-tui"))
        .or_else(|| {
            crate::sys::private_dir::runtime_root()
                .ok()
                .map(|root| root.path.clone())
        })
        .unwrap_or_else(|| std::env::temp_dir().join("unipi-tui"))
        .join("helper-runs");
    let launch = PiLaunch {
        program: child.program,
        leading_args: child.leading_args,
        env: child.env,
    };
    let helpers = HelpersModule::new(HelperSettings::new(
        launch,
        context.workspace.to_path_buf(),
        runs_root,
        catalog,
        config,
    ));
    helpers.finalize_orphaned_runs();
    helpers.attach_ui(context.ui.clone());
    let delegate = start_delegate(context, &helpers);
    let changed = Changed::default();
    changed.follow(helpers.board().subscribe());
    Some(Arc::new(HelpersCapability {
        enabled: switches.enabled,
        dock: Arc::new(HelperDock::new(helpers.board(), changed.clone())),
        helpers,
        delegate,
        changed,
    }))
}

/// The read-only delegate module (`bg_delegate` / `bg_result`), launched like the helpers and
/// shown on their board.
fn start_delegate(
    context: &mut StartContext<'_>,
    helpers: &HelpersModule,
) -> Option<DelegateModule> {
    let launch = helpers.launch();
    let pi = crate::delegate::artifacts::PiCommand {
        program: launch.program.clone(),
        leading_args: launch.leading_args.clone(),
    };
    let (module, errors) =
        DelegateModule::for_app(context.home, context.workspace, pi, launch.env.clone());
    for error in &errors {
        context.report(error);
    }
    match module {
        Ok(Some(module)) => {
            module.attach_board(helpers.board());
            Some(module)
        }
        Ok(None) => None,
        Err(err) => {
            context.report(format!("Delegates could not start: {err:#}"));
            None
        }
    }
}

struct HelpersCapability {
    /// `subagents.json`'s `enabled` at start: off, the helpers module is not given to Pi.
    enabled: bool,
    helpers: HelpersModule,
    delegate: Option<DelegateModule>,
    dock: Arc<HelperDock>,
    changed: Changed,
}

impl Capability for HelpersCapability {
    fn modules(&self) -> Vec<Arc<dyn Module>> {
        let mut modules: Vec<Arc<dyn Module>> = Vec::new();
        if self.enabled {
            modules.push(Arc::new(self.helpers.clone()));
        }
        if let Some(delegate) = &self.delegate {
            modules.push(Arc::new(delegate.clone()));
        }
        modules
    }

    fn attach(&self, bridge: &BridgeLink) {
        self.helpers
            .attach_host(bridge.host.clone(), PathBuf::from(&bridge.extension));
        self.helpers.watch_sessions(&bridge.bus());
        self.helpers.follow_fusion(&bridge.bus());
        if let Some(delegate) = &self.delegate {
            delegate.connect(bridge.host.clone(), &bridge.bus());
        }
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.changed.subscribe())
    }

    fn footer_segments(&self) -> Vec<Segment> {
        helpers_segment(&self.dock.spend()).into_iter().collect()
    }

    fn dock(&self) -> Option<Arc<dyn DockSource>> {
        Some(self.dock.clone())
    }

    fn info_group(&self) -> Option<BoxFuture<'static, InfoGroup>> {
        let spend = self.dock.spend();
        let rows = vec![
            InfoRow::new(
                "Runs",
                format!("{} running · {} finished", spend.running, spend.finished),
            ),
            InfoRow::new(
                "Spent",
                format!(
                    "{} tokens · {}",
                    format_tokens(spend.tokens),
                    format_cost(spend.cost)
                ),
            ),
        ];
        let group = InfoGroup {
            id: "helpers".to_owned(),
            title: "Helpers".to_owned(),
            rows,
        };
        Some(Box::pin(async move { group }))
    }

    fn shutdown(&self) -> BoxFuture<'static, ()> {
        let helpers = self.helpers.clone();
        Box::pin(async move { helpers.shutdown().await })
    }

    fn kill_now(&self) {
        self.helpers.kill_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::helpers::agents::AgentCatalog;
    use crate::helpers::board::HelperBoard;

    /// `enabled: false` in `subagents.json` (Unipi's master switch): no helper tool reaches Pi.
    #[test]
    fn a_switched_off_module_declares_no_tools() {
        let dir = tempfile::tempdir().unwrap();
        let tools = |enabled: bool| {
            let helpers = HelpersModule::new(HelperSettings::new(
                PiLaunch {
                    program: "pi".into(),
                    leading_args: Vec::new(),
                    env: Vec::new(),
                },
                dir.path().to_path_buf(),
                dir.path().join("runs"),
                AgentCatalog::builtin(),
                HelpersConfig::default(),
            ));
            let board: HelperBoard = helpers.board();
            let capability = HelpersCapability {
                enabled,
                dock: Arc::new(HelperDock::new(board, Changed::default())),
                helpers,
                delegate: None,
                changed: Changed::default(),
            };
            let modules = capability.modules();
            modules
                .iter()
                .flat_map(|module| module.tools())
                .map(|tool| tool.name)
                .collect::<Vec<_>>()
        };
        assert!(tools(true).contains(&"spawn_helper".to_owned()));
        assert_eq!(tools(false), Vec::<String>::new());
    }
}

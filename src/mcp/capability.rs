//! MCP as a workbench capability: started from the MCP config files (every configured server in
//! parallel, without waiting — tools are declared to Pi as servers arrive), its bridge module,
//! the footer segment `MCP 2/3 · 14 tools`, `/unipi:mcp-status` (the overlay) and
//! `/unipi:mcp-reload`, and stopping every server on every exit path.
//!
//! When the workbench owns MCP (the default; `mcp.owner: "pi"` in `workbench.json` leaves it to
//! each Pi), Pi 1.x — which has its own MCP client — runs with `--no-mcp` (main and helpers
//! alike, since helpers copy the main Pi's arguments) so no server runs twice; Pi 0.7x has no
//! MCP and no such flag.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::watch;
use unipi_widgets::dashboard::{InfoGroup, InfoRow};
use unipi_widgets::footer::Segment;
use unipi_widgets::mcp::mcp_segment;

use super::module::{McpModule, McpStatus, RELOAD_COMMAND, STATUS_COMMAND};
use super::view::{MCP_KEYS, McpPort, McpView};
use crate::bridge::{Command, CommandCall, CommandReply, CommandSpec, Module, NotifyLevel};
use crate::capability::{BridgeLink, Capability, Registration, StartContext, Ui};

pub const REGISTRATION: Registration = Registration {
    name: "mcp",
    start,
    key_tables: &[&MCP_KEYS],
    actions: &[],
    dock: None,
};

/// How long `/unipi:mcp-reload` waits before answering Pi (the bridge gives commands 10 s); a
/// slower reload goes on and the overlay shows where it got.
const RELOAD_ANSWER_WITHIN: Duration = Duration::from_secs(8);

fn start(context: &mut StartContext<'_>) -> Option<Arc<dyn Capability>> {
    use super::config::{Owner, load, load_with_agent_dir};
    // The demo reads nothing of `~/.pi`: Pi's user file is looked for in its throwaway agent dir.
    let config = match context.demo {
        Some(demo) => load_with_agent_dir(context.home, Some(demo.agent_dir()), context.workspace),
        None => load(context.home, context.workspace),
    };
    for problem in config.errors.iter().map(ToString::to_string) {
        context.report(problem);
    }
    for notice in &config.notices {
        context.report(notice);
    }
    if config.settings.owner == Owner::Pi {
        tracing::info!("mcp: owned by Pi (mcp.owner = \"pi\"); the workbench starts no server");
        return None;
    }
    if context
        .pi
        .version
        .as_deref()
        .is_some_and(|version| crate::pi::version_at_least(version, "1.0.0"))
    {
        context.pi.args.push(std::ffi::OsString::from("--no-mcp"));
    }
    let manager = super::manager::McpManager::new(config);
    manager.start_all();
    let module = McpModule::new(manager);
    Some(Arc::new(McpCapability {
        version: module.subscribe(),
        module,
        ui: context.ui.clone(),
        home: context.home.map(PathBuf::from),
        workspace: context.workspace.to_path_buf(),
        segment: Mutex::new((None, None)),
    }))
}

struct McpCapability {
    module: McpModule,
    ui: Ui,
    home: Option<PathBuf>,
    workspace: PathBuf,
    /// The footer segment as of a status version: the status is only read again after it
    /// changed, not on every frame.
    segment: Mutex<(Option<u64>, Option<Segment>)>,
    version: watch::Receiver<u64>,
}

impl Capability for McpCapability {
    fn modules(&self) -> Vec<Arc<dyn Module>> {
        vec![Arc::new(self.module.clone())]
    }

    fn commands(&self) -> Vec<Command> {
        commands(
            self.module.clone(),
            self.ui.clone(),
            self.home.clone(),
            self.workspace.clone(),
        )
    }

    fn attach(&self, bridge: &BridgeLink) {
        self.module
            .attach(Arc::clone(&bridge.registry), bridge.host.clone());
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.module.subscribe())
    }

    fn footer_segments(&self) -> Vec<Segment> {
        let version = *self.version.borrow();
        let mut cached = crate::sys::lock(&self.segment);
        if cached.0 != Some(version) {
            *cached = (Some(version), footer_segment(&self.module.status()));
        }
        cached.1.clone().into_iter().collect()
    }

    fn info_group(&self) -> Option<BoxFuture<'static, InfoGroup>> {
        let group = info_group(&self.module.status());
        Some(Box::pin(async move { group }))
    }

    fn shutdown(&self) -> BoxFuture<'static, ()> {
        let module = self.module.clone();
        Box::pin(async move { module.shutdown().await })
    }

    fn kill_now(&self) {
        self.module.manager().kill_all_now();
    }
}

/// MCP's tab in `/unipi:info`: the servers and tools in totals, then a row per server (its state,
/// its tools, why it failed).
pub(crate) fn info_group(status: &McpStatus) -> InfoGroup {
    let mut rows = vec![
        InfoRow::new(
            "Servers",
            format!(
                "{} running of {} configured · {} failed",
                status.running(),
                status.configured(),
                status.failed()
            ),
        ),
        InfoRow::new("Tools", format!("{} bridged to Pi", status.tools())),
    ];
    for error in &status.config_errors {
        rows.push(InfoRow::new("Config", error.clone()));
    }
    for server in &status.servers {
        let snapshot = &server.snapshot;
        let state = if server.enabled {
            super::module::status_word(snapshot.status)
        } else {
            "disabled"
        };
        let mut row = InfoRow::new(
            snapshot.name.clone(),
            format!("{state} · {} tools", snapshot.tools.len()),
        );
        if !snapshot.tools.is_empty() {
            let names: Vec<&str> = snapshot
                .tools
                .iter()
                .map(|t| t.bridged_name.as_str())
                .collect();
            row = row.detail(names.join(", "));
        }
        if let Some(error) = &snapshot.error {
            row = row.detail(error.clone());
        }
        rows.push(row);
    }
    InfoGroup {
        id: "mcp".to_owned(),
        title: "MCP".to_owned(),
        rows,
    }
}

/// `/unipi:mcp-status` and `/unipi:mcp-reload` over `module`, with the screen in `ui` and the
/// config files below `home` and `workspace`.
pub(super) fn commands(
    module: McpModule,
    ui: Ui,
    home: Option<PathBuf>,
    workspace: PathBuf,
) -> Vec<Command> {
    vec![
        Command::new(
            CommandSpec::new(
                STATUS_COMMAND,
                "MCP servers: state, tools, errors; restart or stop one",
            ),
            (module.clone(), ui),
            status,
        ),
        Command::new(
            CommandSpec::new(
                RELOAD_COMMAND,
                "Re-read the MCP config files and apply them",
            ),
            (module, home, workspace),
            reload,
        ),
    ]
}

/// `/unipi:mcp-status`: the overlay; headless (no pane to draw on), the same facts in words.
async fn status((module, ui): (McpModule, Ui), _call: CommandCall) -> CommandReply {
    if ui.has_screen() {
        ui.open(McpView::new(Arc::new(McpPort::new(module)), ui.keymap()));
        CommandReply::Done
    } else {
        CommandReply::Notify {
            message: status_text(&module.status()),
            level: NotifyLevel::Info,
        }
    }
}

/// `/unipi:mcp-reload`: re-reads the config files and applies them, answering within
/// [`RELOAD_ANSWER_WITHIN`].
async fn reload(
    (module, home, workspace): (McpModule, Option<PathBuf>, PathBuf),
    _call: CommandCall,
) -> CommandReply {
    let reload = tokio::spawn(async move { module.reload(home.as_deref(), &workspace).await });
    match tokio::time::timeout(RELOAD_ANSWER_WITHIN, reload).await {
        Ok(Ok(summary)) => CommandReply::Notify {
            message: summary,
            level: NotifyLevel::Info,
        },
        Ok(Err(err)) => CommandReply::Failed {
            message: format!("MCP reload failed: {err}"),
        },
        Err(_) => CommandReply::Notify {
            message: format!(
                "MCP reload is still starting servers; /{STATUS_COMMAND} shows their state"
            ),
            level: NotifyLevel::Info,
        },
    }
}

/// The servers in one line each, for a run without a screen.
fn status_text(status: &McpStatus) -> String {
    if status.servers.is_empty() {
        return "No MCP servers are configured.".to_owned();
    }
    status
        .servers
        .iter()
        .map(|server| {
            let snapshot = &server.snapshot;
            let mut line = format!(
                "{}: {} ({} tools)",
                snapshot.name,
                super::module::status_word(snapshot.status),
                snapshot.tools.len()
            );
            if let Some(error) = &snapshot.error {
                line.push_str(&format!(" — {error}"));
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `MCP 2/3 · 14 tools`, when servers are configured.
pub(crate) fn footer_segment(status: &McpStatus) -> Option<Segment> {
    mcp_segment(
        status.running(),
        status.configured(),
        status.tools(),
        status.failed(),
    )
}

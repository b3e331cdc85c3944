//! The dashboard as the workbench runs it: a capability that the start-up adds beside the
//! others ([`start`]) and that holds them, so `/unipi:info` can ask each for its group
//! ([`Capability::info_group`]) without any of them being named here. It declares the
//! workbench's own bridge module (`unipi_info`) with `/unipi:info` and `/unipi:info-settings`,
//! builds the tabs off the UI loop — its own groups ([`super::groups`]), the capabilities' (each
//! under a time limit, so a stuck one cannot hold the dashboard), and the workbench's page — and
//! arranges them as `info.json` says. A refresh from the open view recomputes them and signals
//! the change, and the view pulls them ([`InfoSource`]). With `showOnBoot` the dashboard opens
//! when the main Pi's first session starts, as Unipi's did.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::watch;
use unipi_widgets::dashboard::{DashboardModel, DashboardTab, InfoGroup, InfoRow};
use unipi_widgets::info::InfoModel;

use super::groups::{self, PiFiles};
use super::settings::{self, InfoConfig};
use super::usage::Clock;
use crate::bridge::{
    AgentId, BusEvent, Command, CommandCall, CommandReply, CommandSpec, InfoModule, Module,
    NotifyLevel, PiEvent,
};
use crate::capability::{BridgeLink, Capability, Changed, StartContext, Ui};
use crate::config::module_file::ModuleConfig;
use crate::views::info::{DashboardView, InfoSource};
use crate::views::settings::{SettingsStore, SettingsView};

/// The id of the workbench's own page.
const WORKBENCH: &str = "workbench";
/// How long one capability may take to give its group.
const GROUP_LIMIT: Duration = Duration::from_secs(3);

/// The dashboard over the started `capabilities` (it holds them; it is not among them).
pub fn start(
    capabilities: &[Arc<dyn Capability>],
    context: &StartContext<'_>,
    log_path: PathBuf,
) -> Arc<dyn Capability> {
    let (config, errors) = InfoConfig::load(context.home, context.workspace);
    for error in &errors {
        tracing::warn!("info settings: {error}");
    }
    // Pi's agent directory as the main Pi gets it (the demo's and the tests' throwaway one).
    let agent_dir = context
        .child_pi()
        .env
        .into_iter()
        .find(|(key, value)| key == "PI_CODING_AGENT_DIR" && !value.is_empty())
        .map(|(_, dir)| PathBuf::from(dir))
        .or_else(|| crate::config::pi_agent_dir(context.home));
    Arc::new(InfoDashboard {
        inner: Arc::new(Inner {
            capabilities: capabilities.to_vec(),
            files: PiFiles {
                agent_dir,
                workspace: context.workspace.to_path_buf(),
            },
            home: context.home.map(Path::to_path_buf),
            show_on_boot: config.show_on_boot,
            ui: context.ui.clone(),
            log_path,
            link: OnceLock::new(),
            changed: Changed::default(),
            fresh: Mutex::new(None),
            booted: AtomicBool::new(false),
        }),
    })
}

/// The dashboard capability (cheap to clone: it is all shared).
#[derive(Clone)]
struct InfoDashboard {
    inner: Arc<Inner>,
}

struct Inner {
    capabilities: Vec<Arc<dyn Capability>>,
    files: PiFiles,
    home: Option<PathBuf>,
    show_on_boot: bool,
    ui: Ui,
    log_path: PathBuf,
    link: OnceLock<BridgeLink>,
    changed: Changed,
    /// Tabs recomputed for the open view, until it takes them.
    fresh: Mutex<Option<Vec<DashboardTab>>>,
    /// The dashboard opened at start already (`showOnBoot`).
    booted: AtomicBool,
}

impl InfoDashboard {
    /// Every tab there is, arranged as the settings say.
    async fn tabs(&self) -> Vec<DashboardTab> {
        let (config, all) = tokio::join!(self.config(), self.all_tabs());
        let ids: Vec<&str> = all.iter().map(tab_id).collect();
        let order: Vec<String> = config
            .arrange(&ids)
            .into_iter()
            .map(str::to_owned)
            .collect();
        let mut all: Vec<Option<DashboardTab>> = all.into_iter().map(Some).collect();
        order
            .iter()
            .filter_map(|id| {
                let slot = all
                    .iter_mut()
                    .find(|tab| tab.as_ref().is_some_and(|tab| tab_id(tab) == id))?;
                slot.take()
            })
            .collect()
    }

    /// The settings as the files say now (a bad file is logged; its good keys hold).
    async fn config(&self) -> InfoConfig {
        let home = self.inner.home.clone();
        let workspace = self.inner.files.workspace.clone();
        let loaded = tokio::task::spawn_blocking(move || {
            let (config, errors) = InfoConfig::load(home.as_deref(), &workspace);
            for error in &errors {
                tracing::warn!("info settings: {error}");
            }
            config
        })
        .await;
        loaded.unwrap_or_default()
    }

    /// Usage first, the capabilities' groups in registration order, then extensions, skills and
    /// the workbench's page.
    async fn all_tabs(&self) -> Vec<DashboardTab> {
        let files = self.inner.files.clone();
        let own = tokio::task::spawn_blocking(move || {
            let usage = groups::usage_group(&files, &Clock::local());
            (
                usage,
                [
                    groups::extensions_group(&files),
                    groups::skills_group(&files),
                ],
            )
        });
        let groups = self
            .inner
            .capabilities
            .iter()
            .filter_map(|capability| capability.info_group())
            .map(|group| tokio::time::timeout(GROUP_LIMIT, group));
        let (own, groups) = tokio::join!(own, futures_util::future::join_all(groups));
        let (usage, rest) = own.unwrap_or_else(|err| {
            let failed = |id: &str, title: &str| InfoGroup {
                id: id.to_owned(),
                title: title.to_owned(),
                rows: vec![InfoRow::new(
                    "Error",
                    format!("reading Pi's files failed: {err}"),
                )],
            };
            (
                failed(groups::USAGE, "Usage"),
                [
                    failed(groups::EXTENSIONS, "Extensions"),
                    failed(groups::SKILLS, "Skills"),
                ],
            )
        });
        let mut tabs = vec![DashboardTab::Group(usage)];
        for group in groups {
            match group {
                Ok(group) => tabs.push(DashboardTab::Group(group)),
                Err(_) => tracing::warn!("info: a capability's group took over {GROUP_LIMIT:?}"),
            }
        }
        tabs.extend(rest.map(DashboardTab::Group));
        tabs.push(DashboardTab::Workbench(self.workbench()));
        tabs
    }

    /// The workbench's own page: modules, versions, paths.
    fn workbench(&self) -> InfoModel {
        let link = self.inner.link.get();
        super::workbench::model(
            link.map(|link| (link.registry.as_ref(), &link.host)),
            &self.inner.log_path,
        )
    }

    /// Opens the dashboard (or says it in words without a screen).
    async fn open(self) -> CommandReply {
        let tabs = self.tabs().await;
        if !self.inner.ui.has_screen() {
            return CommandReply::Notify {
                message: super::workbench::text(&tabs),
                level: NotifyLevel::Info,
            };
        }
        let model = DashboardModel {
            tabs,
            ..DashboardModel::default()
        };
        let source: Arc<dyn InfoSource> = Arc::new(self.clone());
        let ui = &self.inner.ui;
        ui.open(DashboardView::new(model, source, ui.keymap()));
        CommandReply::Done
    }

    /// `/unipi:info`.
    async fn info_command(self, _call: CommandCall) -> CommandReply {
        self.open().await
    }

    /// `/unipi:info-settings`: the settings overlay over every group there is now.
    async fn settings_command(self, _call: CommandCall) -> CommandReply {
        if !self.inner.ui.has_screen() {
            return CommandReply::Failed {
                message: format!(
                    "the settings overlay needs the workbench's screen; edit ~/{}",
                    InfoConfig::FILE
                ),
            };
        }
        let (config, all) = tokio::join!(self.config(), self.all_tabs());
        let groups: Vec<(String, String)> = all
            .iter()
            .map(|tab| (tab_id(tab).to_owned(), tab.title().to_owned()))
            .collect();
        let store = Arc::new(SaveStore {
            dashboard: self.clone(),
            outcome: Arc::new(Mutex::new(None)),
        });
        self.inner.ui.open(SettingsView::new(
            "Info dashboard settings",
            settings::fields(&config, &groups),
            settings::to_values,
            store,
        ));
        CommandReply::Done
    }

    /// Opens the dashboard once, when the main Pi's first session starts (`showOnBoot`).
    fn open_on_boot(&self, bus: &crate::bridge::EventBus) {
        let mut events = bus.subscribe();
        let dashboard = self.clone();
        tokio::spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                match events.recv().await {
                    Ok(BusEvent::Pi { agent, event }) if agent == AgentId::main() => {
                        if matches!(event.as_ref(), PiEvent::SessionStart(_))
                            && !dashboard.inner.booted.swap(true, Ordering::SeqCst)
                        {
                            dashboard.open().await;
                            return;
                        }
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                }
            }
        });
    }
}

/// A tab's id: its group's, or the workbench page's.
fn tab_id(tab: &DashboardTab) -> &str {
    match tab {
        DashboardTab::Workbench(_) => WORKBENCH,
        DashboardTab::Group(group) => &group.id,
    }
}

impl InfoSource for InfoDashboard {
    fn refresh(&self) {
        let dashboard = self.clone();
        tokio::spawn(async move {
            let tabs = dashboard.tabs().await;
            *crate::sys::lock(&dashboard.inner.fresh) = Some(tabs);
            dashboard.inner.changed.bump();
        });
    }

    fn take(&self) -> Option<Vec<DashboardTab>> {
        crate::sys::lock(&self.inner.fresh).take()
    }
}

/// Saves the settings overlay's values into the home file off the UI loop.
struct SaveStore {
    dashboard: InfoDashboard,
    outcome: Arc<Mutex<Option<Result<String, crate::bridge::Refusal>>>>,
}

impl SettingsStore for SaveStore {
    fn save(&self, values: serde_json::Value) {
        let home = self.dashboard.inner.home.clone();
        let outcome = Arc::clone(&self.outcome);
        let changed = self.dashboard.inner.changed.clone();
        tokio::spawn(async move {
            let saved = tokio::task::spawn_blocking(move || match home {
                Some(home) => settings::save(&home, &values).map_err(|err| format!("{err:#}")),
                None => Err("no home directory".to_owned()),
            })
            .await
            .unwrap_or_else(|err| Err(format!("the save did not finish: {err}")));
            if let Err(err) = &saved {
                tracing::warn!("saving the info settings: {err}");
            }
            *crate::sys::lock(&outcome) = Some(saved.map_err(Into::into));
            changed.bump();
        });
    }

    fn take_outcome(&self) -> Option<Result<String, crate::bridge::Refusal>> {
        crate::sys::lock(&self.outcome).take()
    }
}

impl Capability for InfoDashboard {
    fn modules(&self) -> Vec<Arc<dyn Module>> {
        vec![Arc::new(InfoModule)]
    }

    fn commands(&self) -> Vec<Command> {
        vec![
            Command::new(info_spec(), self.clone(), Self::info_command),
            Command::new(
                CommandSpec::new(
                    "unipi:info-settings",
                    "Choose the info dashboard's groups, their order, and whether it opens at start",
                ),
                self.clone(),
                Self::settings_command,
            ),
        ]
    }

    fn attach(&self, bridge: &BridgeLink) {
        // Attached once; a second attach would be the same bridge.
        let _ = self.inner.link.set(bridge.clone());
        if self.inner.show_on_boot && self.inner.ui.has_screen() {
            self.open_on_boot(&bridge.bus());
        }
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.inner.changed.subscribe())
    }
}

/// `/unipi:info`, as Pi and F1 describe it.
fn info_spec() -> CommandSpec {
    CommandSpec::new(
        "unipi:info",
        "Dashboard: usage and cost, each capability's figures, extensions, skills, modules",
    )
}

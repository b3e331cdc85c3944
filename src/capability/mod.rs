//! The seam between the workbench and its capabilities (background tasks, helpers, MCP, the
//! compactor, and whatever comes next). A capability lives in its own folder and plugs in here
//! with one line in [`registrations`]; the app holds a list of `Arc<dyn Capability>` and knows
//! none of them by name.
//!
//! What a capability gives the workbench, and how:
//! - **Start** — [`Registration::start`] builds it from its config, given a [`StartContext`] (home,
//!   workspace, how Pi is launched, the [`Ui`] handle); config errors go to
//!   [`StartContext::report`], which logs them and shows them once the screen is up.
//! - **Pi** — [`Capability::modules`]: bridge [`Module`]s with its tools and hooks; and
//!   [`Capability::commands`]: its `/unipi:*` commands, each a [`Command`] declared once with its
//!   handler (and completer), which the bridge looks up by name, so nothing matches command names;
//!   one that needs the screen opens a view through the [`Ui`] handle.
//! - **The bridge** — [`Capability::attach`] hands it the running host, registry, bus and the
//!   extension file once the bridge is up.
//! - **The screen** — [`Capability::footer_segments`] (read from memory every frame),
//!   [`Capability::info_group`] (its tab in the `/unipi:info` dashboard, computed on request),
//!   [`Capability::dock`] (its rows in the dock, and the port the dock sends requests to; what its
//!   rows are called and what the dock's row keys do on them is [`Registration::dock`]), views it
//!   opens with [`Ui::open`], and [`Capability::changes`], the one signal the app's single
//!   forwarder turns into a redraw and a refresh of the open views.
//! - **Keys** — each of its views owns a key table ([`KeyTableSpec`], listed in
//!   [`Registration::key_tables`]); the keymap file can rebind them like the workbench's own. A
//!   workbench-wide key (the board, the detach key) is a [`GlobalAction`] in
//!   [`Registration::actions`]: declared once, bound by name, offered to [`Capability::action`].
//! - **Stop** — [`Capability::shutdown`] on every exit path, and [`Capability::kill_now`] from the
//!   panic hook.
//!
//! `docs/architecture.md` walks through adding one.

pub mod settings;
pub mod ui;

use std::path::Path;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio::sync::watch;
use unipi_widgets::dashboard::InfoGroup;
use unipi_widgets::footer::Segment;

use crate::bridge::{BridgeHost, Command, EventBus, Module, Registry};
use crate::config::keymap::KeyTableSpec;
use crate::pi::PiCommand;
use crate::views::dock::{DockRequest, DockSource, DockWords};

pub use crate::sys::Changed;
pub use ui::{NewTerminal, ScreenState, Ui, UiReceiver, UiRequest};

#[cfg(test)]
pub(crate) mod fake;
#[cfg(test)]
mod tests;

/// A workbench capability, as the app and the bridge see it.
pub trait Capability: Send + Sync + 'static {
    /// The bridge modules that offer its tools and hooks to Pi. Read once, before the bridge
    /// starts.
    fn modules(&self) -> Vec<Arc<dyn Module>> {
        Vec::new()
    }

    /// Its `/unipi:*` commands, each declared once with its handler; listed (`/unipi:info`) under
    /// its first module. Read once, before the bridge starts.
    fn commands(&self) -> Vec<Command> {
        Vec::new()
    }

    /// The bridge is running: keep what is needed of it. Not called when the bridge could not
    /// start (the workbench then runs Pi without it).
    fn attach(&self, _bridge: &BridgeLink) {}

    /// Fires when something it shows changed (a version counter; bursts coalesce). The app
    /// redraws and refreshes its open views; nothing is read from here.
    fn changes(&self) -> Option<watch::Receiver<u64>> {
        None
    }

    /// Its footer segments, from memory: called for every frame, so no I/O and no waiting.
    fn footer_segments(&self) -> Vec<Segment> {
        Vec::new()
    }

    /// Its section of the dock (rows its widget drew, their verbs and hints) and the port the
    /// dock's requests on them go to.
    fn dock(&self) -> Option<Arc<dyn DockSource>> {
        None
    }

    /// Its group in the `/unipi:info` dashboard — an id (what `info.json` orders and hides), a
    /// title and rows of figures — computed each time the dashboard opens or refreshes, and
    /// awaited off the UI loop (it may read files or the database; blocking work goes to
    /// `spawn_blocking`). `None`: it has no figures to show.
    fn info_group(&self) -> Option<BoxFuture<'static, InfoGroup>> {
        None
    }

    /// One of the [`GlobalAction`]s of the registrations, by name, when its key is pressed:
    /// `true` when this capability took it (a view it opens goes through the [`Ui`] handle).
    fn action(&self, _name: &str) -> bool {
        false
    }

    /// Stops everything it started (processes, tasks, files in use); awaited on every exit path
    /// of the workbench, in reverse registration order.
    fn shutdown(&self) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }

    /// The panic path: kill what it started, now, synchronously (no runtime may be left).
    fn kill_now(&self) {}
}

/// One line in [`registrations`]: how to start a capability, the key tables of its views and
/// the workbench-wide key actions it offers.
pub struct Registration {
    /// A short, stable name (the start-up log).
    pub name: &'static str,
    /// Builds it from its config; `None` when it is switched off or could not start (the reason
    /// is reported on the context).
    pub start: fn(&mut StartContext<'_>) -> Option<Arc<dyn Capability>>,
    /// The key tables its views own (the keymap file may rebind them).
    pub key_tables: &'static [&'static KeyTableSpec],
    /// The workbench-wide key actions it offers (keymap files bind them by name; F1 lists them).
    pub actions: &'static [&'static GlobalAction],
    /// When it lists rows in the dock: what they are called and what the dock's row keys do on
    /// them (F1's lines, the notice when nothing can be docked), whether it started or not.
    pub dock: Option<&'static DockWords>,
}

/// A workbench-wide key action a capability offers (`board`, `session.detach`), declared once in
/// its [`Registration`] — the name keymap files bind, what F1 says, the default keys — as helix
/// declares each command once and keymaps look commands up by name. When its key is pressed the
/// app offers it by name to the running capabilities ([`Capability::action`]); when none takes
/// it (the capability is off, or not in a session), the app does what [`Otherwise`] says. The
/// declaration holds whether the capability started or not, so its key and its F1 line do too.
#[derive(Debug)]
pub struct GlobalAction {
    /// The name keymap files bind: `"alt+k" = "board"`.
    pub name: &'static str,
    /// Its line in F1.
    pub description: &'static str,
    /// Its default keys in keymap notation (`"ctrl+alt+d"`, chords too), under the user's file
    /// like the built-in ones.
    pub keys: &'static [&'static str],
    /// Offered also when a view is open and has no use for the key (the detach key works from
    /// under any overlay); otherwise only with no view open.
    pub under_views: bool,
    /// What the app does when no running capability takes it.
    pub otherwise: Otherwise,
    /// Where F1 lists it among the capabilities' actions: lower first, equal ones in
    /// registration order (F1 keeps the order the actions came in).
    pub help_order: u8,
}

/// What the app does with a [`GlobalAction`] no running capability took.
#[derive(Debug)]
pub enum Otherwise {
    /// The key goes on to Pi, as if the workbench had not bound it.
    ToPi,
    /// A footer notice says why nothing happened.
    Notice(&'static str),
    /// The dock's `request` goes to every dock source (whichever capability listed the entries),
    /// then `notice` shows: one of the dock's own verbs, reached without opening it.
    Dock {
        request: DockRequest,
        notice: &'static str,
    },
}

/// Every capability, in start order. Order matters only where one reads what another put on the
/// context: MCP adds `--no-mcp` to Pi's arguments before helpers and fusion copy them for their
/// children.
pub fn registrations() -> Vec<Registration> {
    vec![
        crate::mcp::REGISTRATION,
        crate::tasks::REGISTRATION,
        crate::fusion::REGISTRATION,
        crate::btw::REGISTRATION,
        crate::helpers::REGISTRATION,
        crate::compactor::REGISTRATION,
        crate::askuser::REGISTRATION,
        crate::notify::REGISTRATION,
        crate::web::REGISTRATION,
        crate::detach::REGISTRATION,
        crate::workflow::REGISTRATION,
        crate::ralph::REGISTRATION,
        crate::doctor::REGISTRATION,
        #[cfg(test)]
        crate::hello::REGISTRATION,
    ]
}

/// Every registration's global actions, in the order F1 lists them.
pub fn global_actions() -> Vec<&'static GlobalAction> {
    let mut actions: Vec<&'static GlobalAction> = registrations()
        .iter()
        .flat_map(|registration| registration.actions.iter().copied())
        .collect();
    // Stable: equal ranks keep registration order.
    actions.sort_by_key(|action| action.help_order);
    actions
}

/// Every registration's words for its rows in the dock, in registration order.
pub fn dock_words() -> Vec<&'static DockWords> {
    registrations()
        .iter()
        .filter_map(|registration| registration.dock)
        .collect()
}

/// Every key table a view owns: the workbench's own and every capability's.
pub fn key_tables() -> Vec<&'static KeyTableSpec> {
    let mut tables = crate::views::key_tables();
    for registration in registrations() {
        tables.extend(registration.key_tables.iter().copied());
    }
    tables
}

/// What a capability starts from.
pub struct StartContext<'a> {
    pub home: Option<&'a Path>,
    /// The directory the workbench was started in; every child runs there.
    pub workspace: &'a Path,
    /// How Pi is launched; a capability may add arguments every Pi gets (`--no-mcp`).
    pub pi: &'a mut PiCommand,
    /// The demo's offline settings (a throwaway agent directory, the scripted model), if any.
    pub demo: Option<&'a crate::demo::DemoSession>,
    /// The handle to the screen (views, notices); it has no screen in a headless run.
    pub ui: Ui,
    notices: Vec<String>,
}

impl<'a> StartContext<'a> {
    pub fn new(
        home: Option<&'a Path>,
        workspace: &'a Path,
        pi: &'a mut PiCommand,
        demo: Option<&'a crate::demo::DemoSession>,
        ui: Ui,
    ) -> Self {
        StartContext {
            home,
            workspace,
            pi,
            demo,
            ui,
            notices: Vec::new(),
        }
    }

    /// A problem worth the user's attention at start (a bad config file, a module that could not
    /// start): logged now, shown once the screen is up.
    pub fn report(&mut self, problem: impl std::fmt::Display) {
        let text = problem.to_string();
        tracing::warn!("start-up: {text}");
        self.notices.push(text);
    }

    /// The problems reported so far.
    pub fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }

    /// How a child Pi (a helper, a sidekick) is launched like the main one: the same program,
    /// launcher arguments (with what capabilities added, `--no-mcp`) and environment, and in the
    /// demo the same offline model settings. The user's own Pi arguments are not included.
    pub fn child_pi(&self) -> ChildPi {
        let text = |value: &std::ffi::OsString| value.to_string_lossy().into_owned();
        let mut leading_args: Vec<String> = self.pi.args.iter().map(text).collect();
        let mut env: Vec<(String, String)> = self
            .pi
            .env
            .iter()
            .map(|(k, v)| (text(k), text(v)))
            .collect();
        if let Some(demo) = self.demo {
            leading_args.extend(demo.pi_args.iter().map(text));
            env.extend(demo.env.iter().map(|(k, v)| (text(k), text(v))));
        }
        ChildPi {
            program: self.pi.program.clone(),
            leading_args,
            env,
        }
    }
}

/// How to start a child Pi like the main one ([`StartContext::child_pi`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildPi {
    pub program: std::path::PathBuf,
    pub leading_args: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// The running bridge, as capabilities see it once it is up.
#[derive(Clone)]
pub struct BridgeLink {
    pub host: BridgeHost,
    pub registry: Arc<Registry>,
    /// The bridge extension file (helpers load it into their own Pi).
    pub extension: std::path::PathBuf,
}

impl BridgeLink {
    pub fn bus(&self) -> EventBus {
        self.registry.bus().clone()
    }

    /// A running bridge with no Pi behind it, its runtime files under `dir` (tests): its bus and
    /// host, and the events it would send the app.
    #[cfg(test)]
    pub(crate) async fn idle(
        dir: &Path,
    ) -> (
        BridgeLink,
        tokio::sync::mpsc::Receiver<crate::bridge::BridgeEvent>,
    ) {
        let registry = Arc::new(Registry::new());
        let (events, received) = tokio::sync::mpsc::channel(16);
        let options = crate::bridge::HostOptions {
            runtime_base: Some(dir.to_path_buf()),
            ..crate::bridge::HostOptions::default()
        };
        let host = BridgeHost::start_with(Arc::clone(&registry), events, options)
            .await
            .unwrap();
        let link = BridgeLink {
            host,
            registry,
            extension: std::path::PathBuf::from("unused.ts"),
        };
        (link, received)
    }
}

/// Starts every registered capability, in order.
pub fn start_all(context: &mut StartContext<'_>) -> Vec<Arc<dyn Capability>> {
    registrations()
        .into_iter()
        .filter_map(|registration| {
            let started = (registration.start)(context);
            tracing::info!(
                "capability {}: {}",
                registration.name,
                if started.is_some() { "started" } else { "off" }
            );
            started
        })
        .collect()
}

/// Every capability's bridge modules, in registration order, each with the commands listed
/// under it: a capability's commands go with its first module.
pub fn modules(capabilities: &[Arc<dyn Capability>]) -> Vec<(Arc<dyn Module>, Vec<Command>)> {
    let mut modules = Vec::new();
    for capability in capabilities {
        let mut commands = capability.commands();
        for module in capability.modules() {
            modules.push((module, std::mem::take(&mut commands)));
        }
        if !commands.is_empty() {
            tracing::error!("a capability with commands has no module to list them under");
        }
    }
    modules
}

/// Stops every capability, the last started first.
pub async fn shutdown_all(capabilities: &[Arc<dyn Capability>]) {
    for capability in capabilities.iter().rev() {
        capability.shutdown().await;
    }
}

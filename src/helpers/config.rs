//! The helpers module's configuration: the caps and defaults of `subagents.json` (home, then
//! workspace) and the original Unipi's switches there (`enabled`, `types.<name>.enabled`, read
//! at start), how Pi is launched for a helper, the settings the app hands the module, and the
//! nesting depth this process runs at.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::agents::AgentCatalog;
use super::board::HelperBoard;
use super::spec::DEFAULT_DEADLINE;
use crate::config::live::LiveConfig;
use serde_json::Value;

use crate::config::module_file::{ModuleConfig, Object, Style, Wording, to_u32, to_usize};

/// The nesting depth of the process reading it (unset: the root session, depth 0).
pub(crate) const DEPTH_ENV: &str = "UNIPI_HELPER_DEPTH";
/// The config file, relative to the home directory and to the workspace.
pub const CONFIG_FILE: &str = ".unipi/config/subagents.json";
/// Caps and defaults from `subagents.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelpersConfig {
    /// `maxSubagentDepth`: how deep helpers may nest (the root session is depth 0).
    pub max_depth: u32,
    /// `maxSubagentSpawnsPerSession`.
    pub max_spawns_per_session: u32,
    /// `maxConcurrent`: runs alive at once, foreground and background.
    pub max_concurrent: usize,
    /// `maxActiveAsyncRunsPerSession`: background runs alive at once.
    pub max_active_async: usize,
    /// `defaultDeadlineMinutes`.
    pub deadline: Duration,
    /// `maxSubagentSpawnsPerRun`: spawns one top-level run's whole tree (or one workflow
    /// script) may make.
    pub max_spawns_per_run: u32,
    /// `supervisorTimeoutSeconds`: how long a helper's question waits for its parent.
    pub supervisor_timeout: Duration,
    /// `enabled` (Unipi's master switch): off, the helper tools are not declared at all.
    pub enabled: bool,
    /// `types.<name>.enabled` (Unipi's), with the file that said it last: a type switched off
    /// is not offered and a call naming it is refused.
    pub types: BTreeMap<String, (bool, PathBuf)>,
}

impl Default for HelpersConfig {
    fn default() -> Self {
        Self {
            max_depth: 2,
            max_spawns_per_session: 20,
            max_concurrent: 4,
            max_active_async: 4,
            deadline: DEFAULT_DEADLINE,
            max_spawns_per_run: 64,
            supervisor_timeout: Duration::from_secs(300),
            enabled: true,
            types: BTreeMap::new(),
        }
    }
}

/// A bad file or value is reported and the value before it kept; unknown keys are ignored (the
/// file is shared with settings this module does not own).
impl ModuleConfig for HelpersConfig {
    const FILE: &'static str = CONFIG_FILE;
    const STYLE: Style = Style::BACKTICKS.wording(Wording::Found).dotted();

    fn read(&mut self, file: &mut Object<'_>) {
        let mut number = |key: &str, min: u64| file.at_least(key, min);
        let minutes = |n: u64| Duration::from_secs(n.saturating_mul(60));
        let depth = number("maxSubagentDepth", 0).map(to_u32);
        let spawns = number("maxSubagentSpawnsPerSession", 0).map(to_u32);
        let concurrent = number("maxConcurrent", 1).map(to_usize);
        let active_async = number("maxActiveAsyncRunsPerSession", 1).map(to_usize);
        let deadline = number("defaultDeadlineMinutes", 1).map(minutes);
        let per_run = number("maxSubagentSpawnsPerRun", 1).map(to_u32);
        let supervisor = number("supervisorTimeoutSeconds", 1).map(Duration::from_secs);
        self.max_depth = depth.unwrap_or(self.max_depth);
        self.max_spawns_per_session = spawns.unwrap_or(self.max_spawns_per_session);
        self.max_concurrent = concurrent.unwrap_or(self.max_concurrent);
        self.max_active_async = active_async.unwrap_or(self.max_active_async);
        self.deadline = deadline.unwrap_or(self.deadline);
        self.max_spawns_per_run = per_run.unwrap_or(self.max_spawns_per_run);
        self.supervisor_timeout = supervisor.unwrap_or(self.supervisor_timeout);
        file.flag("enabled", &mut self.enabled);
        let Some(mut types) = file.section("types", "an object of helper types") else {
            return;
        };
        for (name, _) in types.members() {
            let Some(mut entry) = types.section(name, "an object") else {
                continue;
            };
            if let Some(on) = entry.get("enabled", "true or false", Value::as_bool) {
                self.types
                    .insert(name.clone(), (on, entry.path().to_owned()));
            }
        }
    }
}

/// How to start Pi for a helper (the app's own launch: program, extension flags, env).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PiLaunch {
    pub program: PathBuf,
    pub leading_args: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// Everything the module needs, given by the app.
#[derive(Clone)]
pub struct HelperSettings {
    pub launch: PiLaunch,
    /// The helpers' working directory (the workspace).
    pub cwd: PathBuf,
    /// Where run directories are created (`<runs_root>/<run id>/`).
    pub runs_root: PathBuf,
    pub catalog: AgentCatalog,
    /// `subagents.json`, followed: the caps and defaults apply to the next spawn
    /// ([`HelperSettings::config`]).
    pub config: LiveConfig<HelpersConfig>,
    /// This process's helper depth (see [`depth_from_env`]).
    pub depth: u32,
    /// Where runs are shown (the dock); the module keeps its rows current.
    pub board: HelperBoard,
}

impl HelperSettings {
    /// The caps and defaults as `subagents.json` says now.
    pub fn config(&self) -> std::sync::Arc<HelpersConfig> {
        self.config.get()
    }

    /// Settings at the depth [`DEPTH_ENV`] says.
    pub fn new(
        launch: PiLaunch,
        cwd: PathBuf,
        runs_root: PathBuf,
        catalog: AgentCatalog,
        config: impl Into<LiveConfig<HelpersConfig>>,
    ) -> Self {
        Self {
            launch,
            cwd,
            runs_root,
            catalog,
            config: config.into(),
            depth: depth_from_env(),
            board: HelperBoard::new(),
        }
    }
}

/// [`DEPTH_ENV`] as a number; unset or unreadable is the root, 0.
pub(crate) fn depth_from_env() -> u32 {
    std::env::var(DEPTH_ENV)
        .ok()
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0)
}

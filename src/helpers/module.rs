//! The `helpers` bridge module: the `spawn_helper` and `get_helper_result` tools for single
//! helpers. It owns the decisions around a run — argument parsing, the preflight (type, enabled,
//! depth, prompt, spawn cap, concurrency) and the caps' counters, truncation, the result the
//! model reads and the follow-up notification of a background run — and leaves the process to
//! [`HelperRunner`].
//!
//! `spawn_helper` never fails as a tool call: a refusal or a failed run is an ordinary result
//! whose `details.status` is `"error"` with a `reason`, as in the TypeScript original, so the
//! model reads why and what to do instead of an exception. Every refusal happens before a
//! process or a run directory exists. The caps are counted under one lock and released by a
//! guard, so a cancelled or panicking call cannot leak a concurrency slot.
//!
//! A background run's completion goes to a [`HelperNotificationSink`] — the [`BridgeHost`] in the
//! app, a channel in tests — exactly once, as a `helper-result-notification` follow-up that
//! wakes the agent that spawned it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use super::agents::{AgentCatalog, AgentType, THINKING_LEVELS};
use super::events::{ToolUse, Usage};
use super::runner::{
    DEFAULT_DEADLINE, HelperRunner, OUTPUT_FILE, Progress, RunOutcome, RunSpec, RunStatus,
    STATUS_FILE,
};
use crate::bridge::{
    AgentId, BridgeHost, CancelToken, Card, CardTint, MessageTypeSpec, Module, ToolCall, ToolError,
    ToolOutput, ToolSpec,
};
use crate::config::{ConfigError, read_module_config};

/// The tool names.
pub const SPAWN_TOOL: &str = "spawn_helper";
pub const RESULT_TOOL: &str = "get_helper_result";
/// The custom message type of a background run's completion.
pub const NOTIFICATION_TYPE: &str = "helper-result-notification";
/// The nesting depth of the process reading it (unset: the root session, depth 0).
pub const DEPTH_ENV: &str = "UNIPI_HELPER_DEPTH";
/// The config file, relative to the home directory and to the workspace.
pub const CONFIG_FILE: &str = ".unipi/config/subagents.json";
/// Default truncation of a result the model reads.
pub const MAX_OUTPUT_BYTES: usize = 200 * 1024;
pub const MAX_OUTPUT_LINES: usize = 5_000;

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
}

impl Default for HelpersConfig {
    fn default() -> Self {
        Self {
            max_depth: 2,
            max_spawns_per_session: 20,
            max_concurrent: 4,
            max_active_async: 4,
            deadline: DEFAULT_DEADLINE,
        }
    }
}

impl HelpersConfig {
    /// The defaults, then `<home>/.unipi/config/subagents.json`, then the workspace's file. A bad
    /// file or value is reported and the value before it kept; unknown keys are ignored (the
    /// file is shared with settings this module does not own).
    pub fn load(home: Option<&Path>, workspace: &Path) -> (Self, Vec<ConfigError>) {
        let (sources, mut errors) = read_module_config(home, workspace, CONFIG_FILE);
        let mut config = Self::default();
        for (path, text) in sources {
            config.merge(&path, &text, &mut errors);
        }
        (config, errors)
    }

    /// Applies one file's keys.
    pub fn merge(&mut self, path: &Path, text: &str, errors: &mut Vec<ConfigError>) {
        let value: Value = match serde_json::from_str(text) {
            Ok(value) => value,
            Err(err) => {
                errors.push(ConfigError::Invalid {
                    path: path.to_owned(),
                    line: err.line().max(1),
                    column: err.column().max(1),
                    message: format!("invalid JSON: {err}"),
                });
                return;
            }
        };
        let Some(object) = value.as_object() else {
            errors.push(ConfigError::at(path, text, 0, "expected a JSON object"));
            return;
        };
        let mut number = |key: &str, min: u64| -> Option<u64> {
            let raw = object.get(key)?;
            match raw.as_u64().filter(|n| *n >= min) {
                Some(n) => Some(n),
                None => {
                    let offset = text.find(&format!("\"{key}\"")).unwrap_or(0);
                    errors.push(ConfigError::at(
                        path,
                        text,
                        offset,
                        format!("{key} must be an integer ≥ {min}, found {raw}"),
                    ));
                    None
                }
            }
        };
        let to_u32 = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        let to_usize = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        if let Some(n) = number("maxSubagentDepth", 0) {
            self.max_depth = to_u32(n);
        }
        if let Some(n) = number("maxSubagentSpawnsPerSession", 0) {
            self.max_spawns_per_session = to_u32(n);
        }
        if let Some(n) = number("maxConcurrent", 1) {
            self.max_concurrent = to_usize(n);
        }
        if let Some(n) = number("maxActiveAsyncRunsPerSession", 1) {
            self.max_active_async = to_usize(n);
        }
        if let Some(n) = number("defaultDeadlineMinutes", 1) {
            self.deadline = Duration::from_secs(n.saturating_mul(60));
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
#[derive(Debug, Clone)]
pub struct HelperSettings {
    pub launch: PiLaunch,
    /// The helpers' working directory (the workspace).
    pub cwd: PathBuf,
    /// Where run directories are created (`<runs_root>/<run id>/`).
    pub runs_root: PathBuf,
    pub catalog: AgentCatalog,
    pub config: HelpersConfig,
    /// This process's helper depth (see [`depth_from_env`]).
    pub depth: u32,
}

impl HelperSettings {
    /// Settings at the depth [`DEPTH_ENV`] says.
    pub fn new(
        launch: PiLaunch,
        cwd: PathBuf,
        runs_root: PathBuf,
        catalog: AgentCatalog,
        config: HelpersConfig,
    ) -> Self {
        Self {
            launch,
            cwd,
            runs_root,
            catalog,
            config,
            depth: depth_from_env(),
        }
    }
}

/// [`DEPTH_ENV`] as a number; unset or unreadable is the root, 0.
pub fn depth_from_env() -> u32 {
    std::env::var(DEPTH_ENV)
        .ok()
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0)
}

/// One background run's completion, ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct HelperNotice {
    /// The agent that spawned the run.
    pub agent: AgentId,
    pub run_id: String,
    pub content: String,
    pub details: Value,
}

/// Where background completions go.
pub trait HelperNotificationSink: Send + Sync + 'static {
    fn deliver(&self, notice: HelperNotice) -> BoxFuture<'static, anyhow::Result<()>>;
}

impl HelperNotificationSink for BridgeHost {
    fn deliver(&self, notice: HelperNotice) -> BoxFuture<'static, anyhow::Result<()>> {
        let host = self.clone();
        Box::pin(async move {
            // The agent is waiting for this result: wake it.
            let wake = true;
            host.send_follow_up(
                &notice.agent,
                NOTIFICATION_TYPE,
                notice.content,
                notice.details,
                wake,
            )
            .await?;
            Ok(())
        })
    }
}

/// A sink forwarding into a channel (tests, or an app routing notices itself).
#[derive(Debug, Clone)]
pub struct HelperChannelSink(pub mpsc::UnboundedSender<HelperNotice>);

impl HelperNotificationSink for HelperChannelSink {
    fn deliver(&self, notice: HelperNotice) -> BoxFuture<'static, anyhow::Result<()>> {
        let sent = self.0.send(notice);
        Box::pin(async move { sent.map_err(|_| anyhow::anyhow!("notification channel closed")) })
    }
}

/// The `helpers` module. Cheap to clone (shared state).
#[derive(Clone)]
pub struct HelpersModule {
    inner: Arc<Inner>,
}

impl HelpersModule {
    pub fn new(settings: HelperSettings) -> Self {
        Self {
            inner: Arc::new(Inner {
                settings,
                state: Mutex::new(State::default()),
                sink: Mutex::new(None),
                next_id: AtomicU64::new(1),
            }),
        }
    }

    /// Where background completions go; without a sink they are only recorded.
    pub fn attach_sink(&self, sink: Arc<dyn HelperNotificationSink>) {
        *lock(&self.inner.sink) = Some(sink);
    }

    /// [`HelpersModule::attach_sink`] with the bridge host.
    pub fn attach_host(&self, host: BridgeHost) {
        self.attach_sink(Arc::new(host));
    }
}

impl Module for HelpersModule {
    fn name(&self) -> &'static str {
        "helpers"
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let config = &self.inner.settings.config;
        let types: Vec<String> = self
            .inner
            .settings
            .catalog
            .iter()
            .filter(|agent| agent.enabled)
            .map(|agent| format!("{} ({})", agent.name, agent.description))
            .collect();
        // A call may legitimately last the whole run deadline; the host must not cut it first.
        let timeout = config.deadline + Duration::from_secs(60);
        vec![
            ToolSpec::new(
                SPAWN_TOOL,
                "Spawn helper",
                format!(
                    "Delegate a self-contained task to a helper agent (a separate Pi with its \
                     own context) and get its final answer. Types: {}. Foreground (default) \
                     waits for the answer; run_in_background returns a run id at once and a \
                     <helper-result-notification> arrives when it ends.",
                    types.join("; ")
                ),
            )
            .string_param("type", "The helper type, e.g. explore or work", true)
            .string_param(
                "prompt",
                "The complete task: the helper sees nothing of this conversation",
                true,
            )
            .string_param("description", "A 3-5 word label for the run", true)
            .boolean_param(
                "run_in_background",
                "Return a run id at once and notify on completion (alias: async)",
                false,
            )
            .boolean_param("async", "Alias of run_in_background", false)
            .string_param("model", "Override the type's model (provider/model)", false)
            .param(
                "thinking",
                json!({"type": "string", "enum": THINKING_LEVELS,
                       "description": "Override the type's thinking level"}),
                false,
            )
            .integer_param("max_turns", "A turn budget for the helper", false)
            .prompt_snippet("delegate a self-contained task to a helper agent")
            .guideline(
                "Use spawn_helper for self-contained investigations or changes whose details \
                 need not enter this context; give the prompt everything the helper needs.",
            )
            .guideline(
                "After spawn_helper with run_in_background, do not poll get_helper_result; \
                 continue or end the turn and wait for the <helper-result-notification>.",
            )
            .timeout(timeout),
            ToolSpec::new(
                RESULT_TOOL,
                "Helper result",
                "Read a helper run's result by its run id; wait: true waits for a running one.",
            )
            .string_param("id", "The run id spawn_helper returned", true)
            .boolean_param("wait", "Wait until the run ends (default false)", false)
            .timeout(timeout),
        ]
    }

    fn message_types(&self) -> Vec<MessageTypeSpec> {
        vec![MessageTypeSpec::new(NOTIFICATION_TYPE, "Helper result")]
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let inner = self.inner.clone();
        Box::pin(async move {
            match call.tool.as_str() {
                SPAWN_TOOL => Ok(inner.spawn(call).await),
                RESULT_TOOL => inner.result(&call.args, &call.cancel).await,
                other => Err(ToolError::new(format!(
                    "module `helpers` declares no tool `{other}`"
                ))),
            }
        })
    }
}

/// `spawn_helper`'s arguments after normalization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnArgs {
    pub agent_type: String,
    pub prompt: String,
    pub description: String,
    pub background: Option<bool>,
    pub model: Option<String>,
    pub thinking: Option<String>,
    pub max_turns: Option<u32>,
}

/// Reads `spawn_helper`'s arguments; the error says which one is wrong.
pub fn parse_spawn_args(args: &Value) -> Result<SpawnArgs, String> {
    if !args.is_object() {
        return Err("spawn_helper arguments must be an object".to_string());
    }
    let text = |key: &str| -> Result<Option<String>, String> {
        match args.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(format!("{key} must be a string, found {other}")),
        }
    };
    let flag = |key: &str| -> Result<Option<bool>, String> {
        match args.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(flag)) => Ok(Some(*flag)),
            Some(other) => Err(format!("{key} must be true or false, found {other}")),
        }
    };
    let agent_type = text("type")?
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .ok_or("type is required (a helper type such as explore or work)")?;
    let prompt = text("prompt")?.unwrap_or_default();
    let description = text("description")?
        .map(|text| text.trim().to_string())
        .filter(|text| !text.is_empty())
        .unwrap_or_else(|| default_description(&prompt));
    let background = match (flag("run_in_background")?, flag("async")?) {
        (Some(a), Some(b)) if a != b => {
            return Err("run_in_background and async disagree; give one".to_string());
        }
        (a, b) => a.or(b),
    };
    let thinking = text("thinking")?;
    if let Some(level) = &thinking
        && !THINKING_LEVELS.contains(&level.as_str())
    {
        return Err(format!(
            "thinking must be one of {}, found {level:?}",
            THINKING_LEVELS.join(", ")
        ));
    }
    let max_turns = match args.get("max_turns") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_u64()
                .filter(|n| *n >= 1)
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| format!("max_turns must be a positive integer, found {value}"))?,
        ),
    };
    Ok(SpawnArgs {
        agent_type,
        prompt,
        description,
        background,
        model: text("model")?.filter(|model| !model.trim().is_empty()),
        thinking,
        max_turns,
    })
}

/// Why a spawn was refused before any process existed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{0}")]
    BadArguments(String),
    #[error("{0}")]
    Agent(#[from] super::agents::AgentError),
    #[error(
        "helper depth limit reached: this session is at depth {depth} and maxSubagentDepth is \
         {max}; do the task yourself instead of delegating it"
    )]
    DepthExceeded { depth: u32, max: u32 },
    #[error("prompt is empty: give the helper the complete task")]
    EmptyPrompt,
    #[error(
        "the session's helper spawn budget is used up ({max} spawns, \
         maxSubagentSpawnsPerSession); do the rest yourself. More budget can be granted only \
         from the interactive root session (grant-spawn-budget)"
    )]
    SpawnCapReached { max: u32 },
    #[error("{running} helpers are already running (maxConcurrent {max}); wait for one to finish")]
    TooManyRunning { running: usize, max: usize },
    #[error(
        "{running} background helpers are already running (maxActiveAsyncRunsPerSession {max}); \
         wait for a <helper-result-notification> first"
    )]
    TooManyBackground { running: usize, max: usize },
}

/// The counters the caps look at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub spawns: u32,
    pub running: usize,
    pub background: usize,
}

/// The preflight, in the documented order: type → enabled → depth → prompt → spawn cap →
/// concurrency. Returns the type with the call's overrides applied.
pub fn preflight(
    catalog: &AgentCatalog,
    config: &HelpersConfig,
    depth: u32,
    counters: Counters,
    args: &SpawnArgs,
) -> Result<(AgentType, bool), Refusal> {
    let mut agent = catalog.resolve(&args.agent_type)?;
    if depth >= config.max_depth {
        return Err(Refusal::DepthExceeded {
            depth,
            max: config.max_depth,
        });
    }
    if args.prompt.trim().is_empty() {
        return Err(Refusal::EmptyPrompt);
    }
    if counters.spawns >= config.max_spawns_per_session {
        return Err(Refusal::SpawnCapReached {
            max: config.max_spawns_per_session,
        });
    }
    if counters.running >= config.max_concurrent {
        return Err(Refusal::TooManyRunning {
            running: counters.running,
            max: config.max_concurrent,
        });
    }
    let background = args.background.unwrap_or(agent.run_in_background);
    if background && counters.background >= config.max_active_async {
        return Err(Refusal::TooManyBackground {
            running: counters.background,
            max: config.max_active_async,
        });
    }
    if let Some(model) = &args.model {
        agent.model = Some(model.clone());
    }
    if let Some(thinking) = &args.thinking {
        agent.thinking = Some(thinking.clone());
    }
    if let Some(turns) = args.max_turns {
        agent.max_turns = Some(turns);
    }
    if let Some(turns) = agent.max_turns {
        // Pi has no turn flag: the budget is stated to the helper (not enforced yet).
        agent.system_prompt.push_str(&format!(
            "\n\nYou have a budget of {turns} turns. Give your final answer before it runs out."
        ));
    }
    Ok((agent, background))
}

/// `text` cut to `max_lines` lines and then `max_bytes` bytes (on a character boundary), and
/// whether anything was cut.
pub fn truncate_output(text: &str, max_bytes: usize, max_lines: usize) -> (String, bool) {
    let mut end = text.len();
    if let Some((index, _)) = text.match_indices('\n').nth(max_lines.saturating_sub(1)) {
        end = index;
    }
    let mut cut = end < text.len();
    if end > max_bytes {
        end = max_bytes;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        cut = true;
    }
    (text[..end].to_string(), cut)
}

/// A run's end as the tools report it.
#[derive(Debug, Clone, PartialEq)]
pub struct HelperResult {
    pub run_id: String,
    pub agent_type: String,
    pub description: String,
    pub status: RunStatus,
    pub text: String,
    pub truncated: bool,
    pub tool_uses: Vec<ToolUse>,
    pub turns: u32,
    pub usage: Usage,
    pub duration: Duration,
    pub error: Option<String>,
}

impl HelperResult {
    fn from_outcome(run: &RunInfo, outcome: RunOutcome, duration: Duration) -> Self {
        let (text, truncated) = truncate_output(
            &outcome.summary.final_text,
            MAX_OUTPUT_BYTES,
            MAX_OUTPUT_LINES,
        );
        Self {
            run_id: run.id.clone(),
            agent_type: run.agent_type.clone(),
            description: run.description.clone(),
            status: outcome.status,
            text,
            truncated,
            tool_uses: outcome.summary.tool_uses,
            turns: outcome.summary.turns,
            usage: outcome.summary.usage,
            duration,
            error: outcome.error,
        }
    }

    fn ok(&self) -> bool {
        self.status == RunStatus::Completed
    }

    /// What the model reads.
    pub fn content(&self) -> String {
        let mut text = if self.ok() {
            self.text.clone()
        } else {
            format!(
                "Helper run {} {}: {}",
                self.run_id,
                self.status.as_str(),
                self.error.as_deref().unwrap_or("no reason recorded")
            )
        };
        if self.truncated {
            text.push_str(&format!(
                "\n\n[output truncated to {MAX_OUTPUT_LINES} lines / {} KB]",
                MAX_OUTPUT_BYTES / 1024
            ));
        }
        text
    }

    /// `details` for renderers and state, with a card.
    pub fn details(&self) -> Value {
        let tool_uses: Vec<Value> = self
            .tool_uses
            .iter()
            .map(|tool| json!({"name": tool.name, "args": tool.args, "isError": tool.is_error}))
            .collect();
        let details = json!({
            "status": if self.ok() { "completed" } else { "error" },
            "runStatus": self.status.as_str(),
            "reason": self.error,
            "runId": self.run_id,
            "type": self.agent_type,
            "description": self.description,
            "toolUses": tool_uses,
            "toolUseCount": self.tool_uses.len(),
            "turns": self.turns,
            "durationMs": duration_ms(self.duration),
            "usage": usage_json(&self.usage),
            "truncated": self.truncated,
        });
        self.card().attach(details)
    }

    /// `✓ helper explore · <description> · 2 tools · 3s`, with the answer's first lines.
    pub fn card(&self) -> Card {
        let (icon, tint) = match self.status {
            RunStatus::Completed => ("✓", CardTint::Success),
            RunStatus::Queued | RunStatus::Running => ("●", CardTint::Info),
            _ => ("✗", CardTint::Error),
        };
        let title = format!(
            "{icon} helper {} · {} · {} tools · {:.1}s",
            self.agent_type,
            self.description,
            self.tool_uses.len(),
            self.duration.as_secs_f64()
        );
        let mut card = Card::new(title, tint);
        for line in self
            .text
            .lines()
            .filter(|line| !line.trim().is_empty())
            .take(3)
        {
            card = card.line(line.chars().take(200).collect::<String>());
        }
        let footer = match &self.error {
            Some(error) if !self.ok() => format!("{} · {error}", self.run_id),
            _ => self.run_id.clone(),
        };
        card.footer(footer)
    }

    fn output(&self) -> ToolOutput {
        ToolOutput::text(self.content()).with_details(self.details())
    }

    /// The `<helper-result-notification>` block of a background run.
    pub fn notification_content(&self) -> String {
        let mut lines = vec![
            "<helper-result-notification>".to_string(),
            format!("  <run-id>{}</run-id>", self.run_id),
            format!("  <type>{}</type>", escape_xml(&self.agent_type)),
            format!(
                "  <description>{}</description>",
                escape_xml(&self.description)
            ),
            format!("  <status>{}</status>", self.status.as_str()),
        ];
        if let Some(error) = self.error.as_ref().filter(|_| !self.ok()) {
            lines.push(format!("  <error>{}</error>", escape_xml(error)));
        }
        lines.push(format!(
            "  <result>{}</result>",
            escape_xml(&self.content())
        ));
        lines.push(
            "  <guidance>This result is final; do not call get_helper_result for it.</guidance>"
                .to_string(),
        );
        lines.push("</helper-result-notification>".to_string());
        lines.join("\n")
    }
}

struct Inner {
    settings: HelperSettings,
    state: Mutex<State>,
    sink: Mutex<Option<Arc<dyn HelperNotificationSink>>>,
    next_id: AtomicU64,
}

#[derive(Default)]
struct State {
    counters: Counters,
    runs: HashMap<String, RunEntry>,
}

struct RunEntry {
    info: RunInfo,
    progress: watch::Receiver<Progress>,
    result: watch::Receiver<Option<HelperResult>>,
}

#[derive(Debug, Clone)]
struct RunInfo {
    id: String,
    agent_type: String,
    description: String,
}

/// Holds one concurrency slot (and a background slot) until dropped.
struct Slot {
    inner: Arc<Inner>,
    background: bool,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut state = lock(&self.inner.state);
        state.counters.running = state.counters.running.saturating_sub(1);
        if self.background {
            state.counters.background = state.counters.background.saturating_sub(1);
        }
    }
}

impl Inner {
    async fn spawn(self: Arc<Self>, call: ToolCall) -> ToolOutput {
        let args = match parse_spawn_args(&call.args) {
            Ok(args) => args,
            Err(reason) => return refusal_output(&Refusal::BadArguments(reason)),
        };
        let (agent, background, slot) = match self.reserve(&args) {
            Ok(reserved) => reserved,
            Err(refusal) => return refusal_output(&refusal),
        };
        let info = RunInfo {
            id: self.new_run_id(),
            agent_type: agent.name.clone(),
            description: args.description.clone(),
        };
        let spec = self.run_spec(agent, &args.prompt, &info.id);
        let started = Instant::now();
        let mut handle = match HelperRunner::start(spec).await {
            Ok(handle) => handle,
            Err(err) => {
                return error_output(&format!("could not start the helper: {err:#}"), &info.id);
            }
        };
        let (result_tx, result_rx) = watch::channel(None);
        lock(&self.state).runs.insert(
            info.id.clone(),
            RunEntry {
                info: info.clone(),
                progress: handle.progress(),
                result: result_rx,
            },
        );
        if background {
            let inner = self.clone();
            let agent_id = call.agent.clone();
            let run = info.clone();
            tokio::spawn(async move {
                let outcome = handle.wait().await;
                drop(slot);
                let result = HelperResult::from_outcome(&run, outcome, started.elapsed());
                result_tx.send_replace(Some(result.clone()));
                inner.notify(agent_id, &result).await;
            });
            let card = Card::new(
                format!(
                    "● helper {} · {} · started",
                    info.agent_type, info.description
                ),
                CardTint::Info,
            )
            .footer(info.id.clone());
            return ToolOutput::text(format!(
                "Helper run {} started in the background ({}). A <helper-result-notification> \
                 arrives when it ends; continue with other work meanwhile.",
                info.id, info.agent_type
            ))
            .with_details(json!({
                "status": "running",
                "runId": info.id,
                "type": info.agent_type,
                "description": info.description,
                "background": true,
            }))
            .with_card(&card);
        }
        let mut progress = handle.progress();
        let mut progress_open = true;
        let outcome = loop {
            tokio::select! {
                outcome = handle.wait() => break outcome,
                () = call.cancel.cancelled() => {
                    let stopped = handle.stop().await;
                    drop(slot);
                    let mut outcome = match stopped {
                        Ok(outcome) => outcome,
                        Err(err) => return error_output(&format!("{err:#}"), &info.id),
                    };
                    outcome.status = RunStatus::Stopped;
                    outcome.error = Some("cancelled: the call was aborted".to_string());
                    let result = HelperResult::from_outcome(&info, outcome, started.elapsed());
                    result_tx.send_replace(Some(result.clone()));
                    return result.output();
                }
                changed = progress.changed(), if progress_open => match changed {
                    Ok(()) => {
                        let now = progress.borrow_and_update().clone();
                        call.updates.send(progress_update(&info, &now, started.elapsed()));
                    }
                    Err(_) => progress_open = false,
                },
            }
        };
        drop(slot);
        let result = HelperResult::from_outcome(&info, outcome, started.elapsed());
        result_tx.send_replace(Some(result.clone()));
        result.output()
    }

    /// Preflight and reserve the caps under one lock, so two calls cannot both take the last slot.
    fn reserve(self: &Arc<Self>, args: &SpawnArgs) -> Result<(AgentType, bool, Slot), Refusal> {
        let mut state = lock(&self.state);
        let settings = &self.settings;
        let (agent, background) = preflight(
            &settings.catalog,
            &settings.config,
            settings.depth,
            state.counters,
            args,
        )?;
        state.counters.spawns += 1;
        state.counters.running += 1;
        if background {
            state.counters.background += 1;
        }
        let slot = Slot {
            inner: self.clone(),
            background,
        };
        Ok((agent, background, slot))
    }

    fn run_spec(&self, agent: AgentType, prompt: &str, run_id: &str) -> RunSpec {
        let settings = &self.settings;
        let mut spec = RunSpec::new(
            &settings.launch.program,
            agent,
            prompt,
            &settings.cwd,
            settings.runs_root.join(run_id),
        );
        spec.leading_args = settings.launch.leading_args.clone();
        spec.env = settings.launch.env.clone();
        spec.env
            .push((DEPTH_ENV.to_string(), (settings.depth + 1).to_string()));
        spec.deadline = settings.config.deadline;
        spec
    }

    fn new_run_id(&self) -> String {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_millis());
        // The runs root may be shared by several workbenches: time and pid keep ids apart.
        format!("h{ms:x}-{}-{n}", std::process::id())
    }

    async fn notify(&self, agent: AgentId, result: &HelperResult) {
        let sink = lock(&self.sink).clone();
        let Some(sink) = sink else {
            tracing::info!(run = %result.run_id, "helper finished with no notification sink");
            return;
        };
        let notice = HelperNotice {
            agent,
            run_id: result.run_id.clone(),
            content: result.notification_content(),
            details: result.details(),
        };
        if let Err(err) = sink.deliver(notice).await {
            tracing::warn!(run = %result.run_id, "helper notification not delivered: {err:#}");
        }
    }

    async fn result(&self, args: &Value, cancel: &CancelToken) -> Result<ToolOutput, ToolError> {
        let id = args
            .get("id")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|id| !id.is_empty())
            .ok_or_else(|| ToolError::new("get_helper_result needs id (the run id)"))?;
        let wait = match args.get("wait") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(wait)) => *wait,
            Some(other) => {
                return Err(ToolError::new(format!(
                    "wait must be true or false, found {other}"
                )));
            }
        };
        let entry = {
            let state = lock(&self.state);
            state.runs.get(id).map(|entry| {
                (
                    entry.info.clone(),
                    entry.progress.clone(),
                    entry.result.clone(),
                )
            })
        };
        let Some((info, progress, mut result)) = entry else {
            return self.result_from_disk(id);
        };
        if wait {
            tokio::select! {
                _ = result.wait_for(Option::is_some) => {}
                () = cancel.cancelled() => {}
            }
        }
        let finished = result.borrow().clone();
        // The sender is gone without a result when a foreground call was dropped mid-run (the
        // host's timeout): its child was killed with it.
        let abandoned = result.has_changed().is_err();
        match finished {
            Some(result) => Ok(result.output()),
            None if abandoned => Ok(error_output(
                "the run ended without a result (its call was abandoned and the helper killed)",
                id,
            )),
            None => {
                let now = progress.borrow().clone();
                Ok(ToolOutput::text(format!(
                    "Helper run {id} is still running ({} turns, {} tool uses so far). Its \
                     result arrives as a <helper-result-notification>; wait: true waits for it.",
                    now.turns, now.tool_uses
                ))
                .with_details(json!({
                    "status": "running",
                    "runId": id,
                    "type": info.agent_type,
                    "description": info.description,
                })))
            }
        }
    }

    /// A run of an earlier session, read back from its directory (status and output files).
    fn result_from_disk(&self, id: &str) -> Result<ToolOutput, ToolError> {
        let unknown = || {
            ToolError::new(format!(
                "no helper run with id {id:?}; use the run id spawn_helper returned"
            ))
        };
        let safe = id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !safe {
            return Err(unknown());
        }
        let dir = self.settings.runs_root.join(id);
        let status: Value = std::fs::read(dir.join(STATUS_FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or_else(unknown)?;
        let output = std::fs::read_to_string(dir.join(OUTPUT_FILE)).unwrap_or_default();
        let (text, truncated) = truncate_output(&output, MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES);
        let run_status = status["status"].as_str().unwrap_or("unknown");
        let body = if run_status == RunStatus::Completed.as_str() {
            text
        } else {
            format!(
                "Helper run {id} {run_status}: {}",
                status["error"].as_str().unwrap_or("no result recorded")
            )
        };
        Ok(ToolOutput::text(body).with_details(json!({
            "status": if run_status == "completed" { "completed" } else { "error" },
            "runStatus": run_status,
            "runId": id,
            "truncated": truncated,
            "fromDisk": true,
        })))
    }
}

fn progress_update(info: &RunInfo, progress: &Progress, elapsed: Duration) -> ToolOutput {
    let mut line = format!(
        "helper {} · {} · turn {} · {} tools · {:.0}s",
        info.agent_type,
        info.description,
        progress.turns,
        progress.tool_uses,
        elapsed.as_secs_f64()
    );
    if let Some(tool) = &progress.last_tool {
        line.push_str(&format!(" · {tool}"));
    }
    ToolOutput::text(line.clone()).with_details(json!({
        "status": "running",
        "runId": info.id,
        "turns": progress.turns,
        "toolUseCount": progress.tool_uses,
        "lastTool": progress.last_tool,
        "usage": usage_json(&progress.usage),
        "card": Card::new(format!("● {line}"), CardTint::Info),
    }))
}

fn refusal_output(refusal: &Refusal) -> ToolOutput {
    ToolOutput::text(format!("spawn_helper refused: {refusal}"))
        .with_details(json!({"status": "error", "reason": refusal.to_string()}))
        .with_card(&Card::new("✗ helper refused", CardTint::Error).line(refusal.to_string()))
}

fn error_output(reason: &str, run_id: &str) -> ToolOutput {
    ToolOutput::text(format!("spawn_helper failed: {reason}"))
        .with_details(json!({"status": "error", "reason": reason, "runId": run_id}))
        .with_card(&Card::new("✗ helper failed", CardTint::Error).line(reason))
}

fn usage_json(usage: &Usage) -> Value {
    json!({
        "input": usage.input,
        "output": usage.output,
        "cacheRead": usage.cache_read,
        "cacheWrite": usage.cache_write,
        "total": usage.total,
        "cost": usage.cost,
    })
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The first five words of the prompt, when no description was given.
fn default_description(prompt: &str) -> String {
    prompt
        .split_whitespace()
        .take(5)
        .collect::<Vec<_>>()
        .join(" ")
}

fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A poisoned lock only means another call panicked mid-update; the counters stay usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::{CancelHandle, UpdateSender};
    use crate::helpers::agents::AgentError;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/pi-json")
            .join(name)
    }

    /// Settings whose "Pi" is `sh -c <script> fake <pi args…>`.
    fn settings(dir: &Path, script: &str) -> HelperSettings {
        HelperSettings {
            launch: PiLaunch {
                program: "/bin/sh".into(),
                leading_args: vec!["-c".into(), script.into(), "fake".into()],
                env: vec![],
            },
            cwd: dir.to_path_buf(),
            runs_root: dir.join("runs"),
            catalog: AgentCatalog::builtin(),
            config: HelpersConfig::default(),
            depth: 0,
        }
    }

    fn replay_script() -> String {
        format!("cat '{}'", fixture("pi-1.6.0-explore.jsonl").display())
    }

    fn call(tool: &str, args: Value) -> ToolCall {
        ToolCall {
            agent: AgentId::main(),
            tool: tool.into(),
            call_id: "call-1".into(),
            args,
            updates: UpdateSender::detached(),
            cancel: CancelToken::never(),
        }
    }

    fn args(agent_type: &str, prompt: &str) -> SpawnArgs {
        SpawnArgs {
            agent_type: agent_type.into(),
            prompt: prompt.into(),
            description: "read the notes".into(),
            background: None,
            model: None,
            thinking: None,
            max_turns: None,
        }
    }

    fn text(output: &ToolOutput) -> String {
        output
            .content
            .iter()
            .map(|block| match block {
                crate::bridge::ContentBlock::Text { text } => text.clone(),
                crate::bridge::ContentBlock::Image { .. } => String::new(),
            })
            .collect()
    }

    #[test]
    fn config_merges_files_and_reports_bad_values() {
        let path = Path::new("/w/.unipi/config/subagents.json");
        let cases: [(&str, HelpersConfig, usize); 4] = [
            ("{}", HelpersConfig::default(), 0),
            (
                r#"{"maxSubagentDepth": 1, "maxSubagentSpawnsPerSession": 3, "maxConcurrent": 2,
                    "maxActiveAsyncRunsPerSession": 1, "defaultDeadlineMinutes": 5, "other": true}"#,
                HelpersConfig {
                    max_depth: 1,
                    max_spawns_per_session: 3,
                    max_concurrent: 2,
                    max_active_async: 1,
                    deadline: Duration::from_secs(300),
                },
                0,
            ),
            (
                r#"{"maxConcurrent": 0, "maxSubagentDepth": "deep"}"#,
                HelpersConfig::default(),
                2,
            ),
            ("{not json", HelpersConfig::default(), 1),
        ];
        for (text, want, error_count) in cases {
            let mut config = HelpersConfig::default();
            let mut errors = Vec::new();
            config.merge(path, text, &mut errors);
            assert_eq!(config, want, "{text}");
            assert_eq!(errors.len(), error_count, "{text}: {errors:?}");
            assert!(errors.iter().all(|err| err.path() == path));
        }
    }

    #[test]
    fn config_load_lets_the_workspace_win() {
        let home = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        for (root, text) in [
            (
                home.path(),
                r#"{"maxConcurrent": 7, "maxSubagentDepth": 3}"#,
            ),
            (workspace.path(), r#"{"maxConcurrent": 2}"#),
        ] {
            let file = root.join(CONFIG_FILE);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        let (config, errors) = HelpersConfig::load(Some(home.path()), workspace.path());
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!((config.max_concurrent, config.max_depth), (2, 3));
    }

    #[test]
    fn spawn_args_table() {
        let ok = parse_spawn_args(&json!({
            "type": " explore ", "prompt": "Summarize the notes", "async": true,
            "thinking": "low", "max_turns": 3, "model": "p/m"
        }))
        .unwrap();
        assert_eq!(ok.agent_type, "explore");
        assert_eq!(ok.description, "Summarize the notes");
        assert_eq!(ok.background, Some(true));
        assert_eq!(ok.thinking.as_deref(), Some("low"));
        assert_eq!(ok.max_turns, Some(3));
        assert_eq!(ok.model.as_deref(), Some("p/m"));
        let bad = [
            (json!([]), "must be an object"),
            (json!({"prompt": "x"}), "type is required"),
            (json!({"type": 3}), "type must be a string"),
            (
                json!({"type": "explore", "run_in_background": true, "async": false}),
                "disagree",
            ),
            (
                json!({"type": "explore", "thinking": "huge"}),
                "thinking must be one of",
            ),
            (
                json!({"type": "explore", "max_turns": 0}),
                "max_turns must be",
            ),
            (
                json!({"type": "explore", "async": "yes"}),
                "async must be true or false",
            ),
        ];
        for (value, want) in bad {
            let err = parse_spawn_args(&value).unwrap_err();
            assert!(err.contains(want), "{value}: {err}");
        }
    }

    #[test]
    fn preflight_refusals_in_order() {
        let mut catalog = AgentCatalog::builtin();
        let mut off = catalog.resolve("work").unwrap();
        off.name = "off".into();
        off.enabled = false;
        catalog.insert(off);
        let config = HelpersConfig {
            max_spawns_per_session: 2,
            max_concurrent: 2,
            max_active_async: 1,
            ..HelpersConfig::default()
        };
        let fresh = Counters::default();
        let background = |mut spawn: SpawnArgs| {
            spawn.background = Some(true);
            spawn
        };
        let cases = [
            (args("nope", ""), 0, fresh, "unknown helper type \"nope\""),
            (args("off", "x"), 0, fresh, "is disabled"),
            (args("explore", "x"), 2, fresh, "depth limit reached"),
            (args("explore", "  "), 0, fresh, "prompt is empty"),
            (
                args("explore", "x"),
                0,
                Counters { spawns: 2, ..fresh },
                "spawn budget is used up",
            ),
            (
                args("explore", "x"),
                0,
                Counters {
                    running: 2,
                    ..fresh
                },
                "maxConcurrent 2",
            ),
            (
                background(args("explore", "x")),
                0,
                Counters {
                    running: 1,
                    background: 1,
                    ..fresh
                },
                "maxActiveAsyncRunsPerSession 1",
            ),
        ];
        for (spawn, depth, counters, want) in cases {
            let refusal = preflight(&catalog, &config, depth, counters, &spawn).unwrap_err();
            assert!(refusal.to_string().contains(want), "{want}: {refusal}");
        }
        assert!(matches!(
            preflight(&catalog, &config, 0, fresh, &args("nope", "x")),
            Err(Refusal::Agent(AgentError::Unknown { .. }))
        ));
        let mut spawn = args("explore", "x");
        spawn.model = Some("p/m".into());
        spawn.max_turns = Some(4);
        let (agent, background) = preflight(&catalog, &config, 1, fresh, &spawn).unwrap();
        assert!(!background);
        assert_eq!(agent.model.as_deref(), Some("p/m"));
        assert!(
            agent.system_prompt.contains("budget of 4 turns"),
            "{}",
            agent.system_prompt
        );
    }

    #[test]
    fn truncation_table() {
        let cases = [
            ("short", 10, 5, "short", false),
            ("a\nb\nc\nd", 100, 2, "a\nb", true),
            ("a\nb", 100, 2, "a\nb", false),
            ("abcdef", 4, 10, "abcd", true),
            ("ééé", 3, 10, "é", true),
        ];
        for (input, bytes, lines, want, cut) in cases {
            assert_eq!(
                truncate_output(input, bytes, lines),
                (want.to_string(), cut),
                "{input:?}"
            );
        }
    }

    #[tokio::test]
    async fn refusals_are_error_results_and_start_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = settings(dir.path(), "exit 1");
        settings.config.max_spawns_per_session = 0;
        let module = HelpersModule::new(settings);
        let cases = [
            (
                json!({"type": "nope", "prompt": "x"}),
                "unknown helper type",
            ),
            (json!({"type": "explore", "prompt": ""}), "prompt is empty"),
            (
                json!({"type": "explore", "prompt": "x"}),
                "spawn budget is used up",
            ),
            (json!({"prompt": "x"}), "type is required"),
        ];
        for (value, want) in cases {
            let output = module
                .call_tool(call(SPAWN_TOOL, value.clone()))
                .await
                .unwrap();
            assert_eq!(output.details["status"], "error", "{value}");
            assert!(text(&output).contains(want), "{value}: {}", text(&output));
            assert!(output.details["reason"].as_str().unwrap().contains(want));
        }
        assert!(!dir.path().join("runs").exists(), "a refusal created a run");
    }

    #[tokio::test]
    async fn depth_guard_refuses_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = settings(dir.path(), "exit 1");
        settings.depth = 2;
        let module = HelpersModule::new(settings);
        let output = module
            .call_tool(call(SPAWN_TOOL, json!({"type": "explore", "prompt": "x"})))
            .await
            .unwrap();
        assert_eq!(output.details["status"], "error");
        assert!(
            text(&output).contains("depth limit reached"),
            "{}",
            text(&output)
        );
    }

    #[tokio::test]
    async fn foreground_run_returns_the_answer_and_streams_progress() {
        let dir = tempfile::tempdir().unwrap();
        let depth_file = dir.path().join("depth");
        let script = format!(
            "echo \"$UNIPI_HELPER_DEPTH\" > '{}'; {}",
            depth_file.display(),
            replay_script()
        );
        let mut settings = settings(dir.path(), &script);
        settings.depth = 1;
        let module = HelpersModule::new(settings);
        let (out, mut updates) = mpsc::channel(64);
        let mut tool_call = call(
            SPAWN_TOOL,
            json!({"type": "explore", "prompt": "Summarize the notes", "description": "read notes"}),
        );
        tool_call.updates = UpdateSender::new(out, 9);
        let output = module.call_tool(tool_call).await.unwrap();
        assert_eq!(text(&output), "The notes say: helpers are read-only.");
        let details = &output.details;
        assert_eq!(details["status"], "completed", "{details}");
        assert_eq!(details["toolUseCount"], 1);
        assert_eq!(details["toolUses"][0]["name"], "read");
        assert_eq!(details["truncated"], false);
        assert_eq!(details["description"], "read notes");
        assert!(details["usage"]["input"].as_u64().unwrap() > 0, "{details}");
        assert!(details["durationMs"].as_u64().is_some());
        assert!(
            details["card"]["title"]
                .as_str()
                .unwrap()
                .starts_with("✓ helper explore")
        );
        assert_eq!(std::fs::read_to_string(&depth_file).unwrap().trim(), "2");
        let update = updates.try_recv().expect("at least one progress update");
        assert!(update.contains("tool_update"), "{update}");
        let state = lock(&module.inner.state).counters;
        assert_eq!((state.spawns, state.running, state.background), (1, 0, 0));
    }

    #[tokio::test]
    async fn background_run_notifies_once_and_get_result_waits() {
        let dir = tempfile::tempdir().unwrap();
        // Holds the answer back until the test lets it go, so `wait` really waits.
        let gate = dir.path().join("go");
        let script = format!(
            "while [ ! -e '{}' ]; do sleep 0.05; done; {}",
            gate.display(),
            replay_script()
        );
        let module = HelpersModule::new(settings(dir.path(), &script));
        let (sink, mut notices) = mpsc::unbounded_channel();
        module.attach_sink(Arc::new(HelperChannelSink(sink)));
        let started = module
            .call_tool(call(
                SPAWN_TOOL,
                json!({"type": "explore", "prompt": "Summarize the notes",
                       "description": "read notes", "run_in_background": true}),
            ))
            .await
            .unwrap();
        assert_eq!(started.details["status"], "running", "{}", started.details);
        let id = started.details["runId"].as_str().unwrap().to_string();
        assert_eq!(lock(&module.inner.state).counters.background, 1);

        let pending = module
            .call_tool(call(RESULT_TOOL, json!({"id": id})))
            .await
            .unwrap();
        assert_eq!(pending.details["status"], "running");
        assert!(text(&pending).contains("still running"));

        let waiter = tokio::spawn({
            let module = module.clone();
            let id = id.clone();
            async move {
                module
                    .call_tool(call(RESULT_TOOL, json!({"id": id, "wait": true})))
                    .await
            }
        });
        std::fs::write(&gate, "").unwrap();
        let waited = tokio::time::timeout(Duration::from_secs(20), waiter)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(text(&waited), "The notes say: helpers are read-only.");
        assert_eq!(waited.details["runId"], id.as_str());

        let notice = tokio::time::timeout(Duration::from_secs(5), notices.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(notice.run_id, id);
        assert_eq!(notice.agent, AgentId::main());
        assert!(notice.content.starts_with("<helper-result-notification>"));
        assert!(
            notice.content.contains("helpers are read-only"),
            "{}",
            notice.content
        );
        assert_eq!(notice.details["card"]["tint"], "success");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(notices.try_recv().is_err(), "a second notification");
        let counters = lock(&module.inner.state).counters;
        assert_eq!((counters.running, counters.background), (0, 0));
    }

    #[tokio::test]
    async fn cancel_stops_the_child() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = settings(dir.path(), "echo '{\"type\":\"agent_start\"}'; sleep 30");
        settings.launch.env.clear();
        let module = HelpersModule::new(settings);
        let (handle, token) = CancelHandle::pair();
        let mut tool_call = call(SPAWN_TOOL, json!({"type": "explore", "prompt": "x"}));
        tool_call.cancel = token;
        let running = tokio::spawn(module.call_tool(tool_call));
        tokio::time::sleep(Duration::from_millis(300)).await;
        handle.cancel();
        let output = tokio::time::timeout(Duration::from_secs(10), running)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(output.details["status"], "error", "{}", output.details);
        assert_eq!(output.details["runStatus"], "stopped");
        assert!(text(&output).contains("cancelled"), "{}", text(&output));
        assert_eq!(lock(&module.inner.state).counters.running, 0);
    }

    #[tokio::test]
    async fn an_abandoned_foreground_run_reads_as_ended() {
        let dir = tempfile::tempdir().unwrap();
        let module = HelpersModule::new(settings(dir.path(), "sleep 30"));
        let spawn = module.call_tool(call(SPAWN_TOOL, json!({"type": "explore", "prompt": "x"})));
        // The host's timeout drops the call's future mid-run.
        assert!(
            tokio::time::timeout(Duration::from_millis(300), spawn)
                .await
                .is_err()
        );
        let id = lock(&module.inner.state)
            .runs
            .keys()
            .next()
            .unwrap()
            .clone();
        let output = module
            .call_tool(call(RESULT_TOOL, json!({"id": id, "wait": true})))
            .await
            .unwrap();
        assert_eq!(output.details["status"], "error", "{}", output.details);
        assert!(text(&output).contains("abandoned"), "{}", text(&output));
        assert_eq!(lock(&module.inner.state).counters.running, 0);
    }

    #[tokio::test]
    async fn unknown_run_id_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let module = HelpersModule::new(settings(dir.path(), "exit 1"));
        for id in ["h1-2-3", "../etc"] {
            let err = module
                .call_tool(call(RESULT_TOOL, json!({"id": id})))
                .await
                .unwrap_err();
            assert!(err.message.contains("no helper run with id"), "{err}");
        }
    }
}

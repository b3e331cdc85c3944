//! The `helpers` bridge module: the `spawn_helper`, `get_helper_result` and
//! `contact_supervisor` tools. It owns the decisions around a run — routing (management action →
//! workflow script → single helper), the preflight and the caps' counters, budgets, the
//! acceptance gate, truncation, the result the model reads, the follow-up notification of a
//! background run, the supervisor channel — and leaves the process to [`HelperRunner`].
//!
//! `spawn_helper` never fails as a tool call: a refusal or a failed run is an ordinary result
//! whose `details.status` is `"error"` with a `reason`, as in the TypeScript original, so the
//! model reads why and what to do instead of an exception. Every refusal happens before a
//! process or a run directory exists. The caps are counted under one lock and released by a
//! guard, so a cancelled or panicking call cannot leak a concurrency slot.
//!
//! Calls are answered for the agent that made them: the main Pi, or a helper that loaded the
//! bridge with its own token (agent id `helper:<run id>`). The caller decides the depth the depth
//! guard checks, the run tree the per-run spawn cap counts, whose question a reply may answer,
//! and where a background run's notification goes (to the [`HelperNotificationSink`] — the
//! [`BridgeHost`] in the app, a channel in tests — exactly once).
//!
//! Management actions live in `actions.rs`, workflow scripts in `workflow.rs`, the supervisor
//! channel in `supervisor.rs`; they are `impl Inner` blocks over the state kept here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};

use super::acceptance;
use super::agents::{AgentCatalog, AgentType, THINKING_LEVELS};
pub use super::args::{
    Acceptance, ContextMode, MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES, OutputLimit, Request, SpawnArgs,
    parse_request, parse_spawn_args,
};
use super::board::{BoardRow, HelperBoard, RowKind, RunControl};
use super::events::{ToolUse, Usage};
use super::runner::{
    DEFAULT_DEADLINE, HelperRunner, OUTPUT_FILE, Progress, RunHandle, RunOutcome, RunSpec,
    RunStatus, STATUS_FILE,
};
use crate::bridge::{
    AgentId, BridgeHost, CancelToken, Card, CardTint, MessageTypeSpec, Module, ToolCall, ToolError,
    ToolOutput, ToolSpec, UpdateSender,
};
use crate::config::{ConfigError, read_module_config};

/// The tool names.
pub const SPAWN_TOOL: &str = "spawn_helper";
pub const RESULT_TOOL: &str = "get_helper_result";
pub const SUPERVISOR_TOOL: &str = "contact_supervisor";
/// The custom message type of a background run's completion.
pub const NOTIFICATION_TYPE: &str = "helper-result-notification";
/// The custom message type of a helper's message to its parent.
pub const SUPERVISOR_MESSAGE_TYPE: &str = "helper-supervisor-message";
/// The nesting depth of the process reading it (unset: the root session, depth 0).
pub const DEPTH_ENV: &str = "UNIPI_HELPER_DEPTH";
/// The config file, relative to the home directory and to the workspace.
pub const CONFIG_FILE: &str = ".unipi/config/subagents.json";
/// The bridge agent id prefix of a helper's own Pi.
pub const CHILD_AGENT_PREFIX: &str = "helper:";

/// What a helper that is not a workflow step is told about its place, after its task.
pub const BOUNDARY_INSTRUCTIONS: &str = "\n\n---\nBoundaries: you are a helper agent working \
for another agent, not for the user directly. Do this task and nothing beyond it. You cannot \
ask the user anything: when you are blocked and contact_supervisor is available, ask your \
supervisor with it; otherwise say in your answer what blocked you. Finish with a concise final \
answer (findings or changes, with file paths): it is all your supervisor will read.";

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
        let object = match crate::config::error::json_object(path, text) {
            Ok(object) => object,
            Err(err) => {
                errors.push(err);
                return;
            }
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
        if let Some(n) = number("maxSubagentSpawnsPerRun", 1) {
            self.max_spawns_per_run = to_u32(n);
        }
        if let Some(n) = number("supervisorTimeoutSeconds", 1) {
            self.supervisor_timeout = Duration::from_secs(n);
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
    pub config: HelpersConfig,
    /// This process's helper depth (see [`depth_from_env`]).
    pub depth: u32,
    /// Where runs are shown (the dock); the module keeps its rows current.
    pub board: HelperBoard,
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
            board: HelperBoard::new(),
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

/// One message for an agent, ready to send as a follow-up.
#[derive(Debug, Clone, PartialEq)]
pub struct HelperNotice {
    /// The agent it is for.
    pub agent: AgentId,
    pub run_id: String,
    /// The custom message type ([`NOTIFICATION_TYPE`] or [`SUPERVISOR_MESSAGE_TYPE`]).
    pub custom_type: String,
    pub content: String,
    pub details: Value,
    /// Whether it starts a turn of an idle agent.
    pub trigger_turn: bool,
}

/// Where the module's notices go.
pub trait HelperNotificationSink: Send + Sync + 'static {
    fn deliver(&self, notice: HelperNotice) -> BoxFuture<'static, anyhow::Result<()>>;
}

impl HelperNotificationSink for BridgeHost {
    fn deliver(&self, notice: HelperNotice) -> BoxFuture<'static, anyhow::Result<()>> {
        let host = self.clone();
        Box::pin(async move {
            host.send_follow_up(
                &notice.agent,
                &notice.custom_type,
                notice.content,
                notice.details,
                notice.trigger_turn,
            )
            .await
            .map_err(|err| anyhow::anyhow!("{err}"))
        })
    }
}

/// A sink that hands notices to a channel (tests, embedders).
pub struct HelperChannelSink(pub mpsc::UnboundedSender<HelperNotice>);

impl HelperNotificationSink for HelperChannelSink {
    fn deliver(&self, notice: HelperNotice) -> BoxFuture<'static, anyhow::Result<()>> {
        let sent = self.0.send(notice);
        Box::pin(async move { sent.map_err(|_| anyhow::anyhow!("the notice channel is closed")) })
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
                bridge: Mutex::new(None),
                next_id: AtomicU64::new(1),
            }),
        }
    }

    /// Where background completions and supervisor messages go; without a sink they are only
    /// recorded.
    pub fn attach_sink(&self, sink: Arc<dyn HelperNotificationSink>) {
        *lock(&self.inner.sink) = Some(sink);
    }

    /// Attaches the bridge: notices go through `host`, and every helper Pi loads the bridge
    /// extension at `extension` with its own token, so the workbench's tools reach it.
    pub fn attach_host(&self, host: BridgeHost, extension: PathBuf) {
        self.attach_sink(Arc::new(host.clone()));
        *lock(&self.inner.bridge) = Some(ChildBridge { host, extension });
    }

    /// Keeps the agents' session files (from `session_start` on `bus`), which `context: fork`
    /// copies, until the bus closes; background runs announce their end on `bus`.
    pub fn watch_sessions(&self, bus: &crate::bridge::EventBus) {
        lock(&self.inner.state).bus = Some(bus.clone());
        let mut events = bus.subscribe();
        let inner = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                match events.recv().await {
                    Ok(crate::bridge::BusEvent::Pi { agent, event }) => {
                        if let crate::bridge::PiEvent::SessionStart(start) = event.as_ref() {
                            let Some(inner) = inner.upgrade() else { return };
                            let mut state = lock(&inner.state);
                            match &start.session_file {
                                Some(file) => {
                                    state.sessions.insert(agent, PathBuf::from(file));
                                }
                                None => {
                                    state.sessions.remove(&agent);
                                }
                            }
                        }
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                }
            }
        });
    }

    /// Records `file` as `agent`'s session file (what [`HelpersModule::watch_sessions`] does).
    pub fn set_session_file(&self, agent: AgentId, file: PathBuf) {
        lock(&self.inner.state).sessions.insert(agent, file);
    }

    /// The board the module keeps current.
    pub fn board(&self) -> HelperBoard {
        self.inner.settings.board.clone()
    }

    /// How helpers launch Pi.
    pub fn launch(&self) -> &PiLaunch {
        &self.inner.settings.launch
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
                     <helper-result-notification> arrives when it ends. workflowScript runs a \
                     declared fan-out of steps; action manages runs (list, get, status, \
                     children.list, resume, stop, grant-spawn-budget, doctor, guide, reply). \
                     action: \"guide\" explains everything.",
                    types.join("; ")
                ),
            )
            .string_param("type", "The helper type, e.g. explore or work", false)
            .string_param(
                "prompt",
                "The complete task: the helper sees nothing of this conversation (unless context is fork)",
                false,
            )
            .string_param("description", "A 3-5 word label for the run", false)
            .boolean_param(
                "run_in_background",
                "Return a run id at once and notify on completion (alias: async)",
                false,
            )
            .boolean_param("async", "Alias of run_in_background", false)
            .param(
                "context",
                json!({"type": "string", "enum": ["fresh", "fork"],
                       "description": "fresh (default): the helper knows only the prompt; fork: \
                       it starts with a copy of this conversation (background only)"}),
                false,
            )
            .string_param("model", "Override the type's model (provider/model)", false)
            .param(
                "thinking",
                json!({"type": "string", "enum": THINKING_LEVELS,
                       "description": "Override the type's thinking level"}),
                false,
            )
            .integer_param(
                "max_turns",
                "Turn budget: steered to answer at the limit, stopped after a grace",
                false,
            )
            .integer_param("max_tool_uses", "Tool-call budget", false)
            .integer_param("max_tokens", "Token budget (input + output)", false)
            .param(
                "max_cost",
                json!({"type": "number", "description": "Cost budget in USD"}),
                false,
            )
            .string_param(
                "gate",
                "One verify command (e.g. cargo test) that must exit 0 for the answer to be accepted",
                false,
            )
            .param(
                "acceptance",
                json!({"type": "object", "description": "Full acceptance gate (instead of gate)",
                       "properties": {
                           "commands": {"type": "array", "items": {"type": "string"}},
                           "timeoutSeconds": {"type": "integer"}}}),
                false,
            )
            .param(
                "maxOutput",
                json!({"description": "Truncate the answer: a byte count or {bytes, lines} \
                       (default 200 KB / 5000 lines)",
                       "anyOf": [{"type": "integer"},
                                 {"type": "object", "properties": {
                                     "bytes": {"type": "integer"}, "lines": {"type": "integer"}}}]}),
                false,
            )
            .param(
                "workflowScript",
                json!({"description": "A declared fan-out: {steps: [{id, type, prompt, \
                       description?, after?: [ids]}], maxParallel?}; {{id}} in a prompt is \
                       replaced by that earlier step's answer",
                       "anyOf": [{"type": "object"}, {"type": "string"}]}),
                false,
            )
            .param(
                "action",
                json!({"type": "string", "enum": super::args::ACTIONS,
                       "description": "A management action instead of a spawn"}),
                false,
            )
            .string_param("id", "The run id an action is about", false)
            .string_param("message", "resume: the new message; reply: the answer", false)
            .integer_param("amount", "grant-spawn-budget: how many more spawns", false)
            .prompt_snippet("delegate a self-contained task to a helper agent")
            .guideline(
                "Use spawn_helper for self-contained investigations or changes whose details \
                 need not enter this context; give the prompt everything the helper needs.",
            )
            .guideline(
                "After spawn_helper with run_in_background, do not poll get_helper_result; \
                 continue or end the turn and wait for the <helper-result-notification>.",
            )
            .guideline(
                "A <helper-supervisor-message> with kind question waits for your answer: reply \
                 with spawn_helper action reply, id and message.",
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
            ToolSpec::new(
                SUPERVISOR_TOOL,
                "Contact supervisor",
                "Only for helper agents: send your supervisor (the agent that spawned you) a \
                 question, and wait for its answer, or a status note. Use it when you are \
                 blocked on a decision only your supervisor can make.",
            )
            .string_param("message", "The question or the status note", true)
            .param(
                "kind",
                json!({"type": "string", "enum": ["question", "status"],
                       "description": "question (default) waits for the answer; status does not"}),
                false,
            )
            .timeout(config.supervisor_timeout + Duration::from_secs(30)),
        ]
    }

    fn message_types(&self) -> Vec<MessageTypeSpec> {
        vec![
            MessageTypeSpec::new(NOTIFICATION_TYPE, "Helper result"),
            MessageTypeSpec::new(SUPERVISOR_MESSAGE_TYPE, "Helper message"),
        ]
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let inner = self.inner.clone();
        Box::pin(async move {
            match call.tool.as_str() {
                SPAWN_TOOL => Ok(inner.spawn_helper(call).await),
                RESULT_TOOL => inner.result(&call.args, &call.cancel).await,
                SUPERVISOR_TOOL => inner.contact_supervisor(call).await,
                other => Err(ToolError::new(format!(
                    "module `helpers` declares no tool `{other}`"
                ))),
            }
        })
    }
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
        "context fork needs a background run (run_in_background: true): a forked helper \
         copies this conversation and runs beside it"
    )]
    ForkNeedsBackground,
    #[error(
        "context fork needs this session's file, and this session has none (in-memory or not \
         started yet); use context fresh and put what the helper needs in the prompt"
    )]
    ForkWithoutSession,
    #[error(
        "the session's helper spawn budget is used up ({max} spawns, \
         maxSubagentSpawnsPerSession); do the rest yourself. More budget can be granted only \
         from the interactive root session (spawn_helper action grant-spawn-budget)"
    )]
    SpawnCapReached { max: u32 },
    #[error(
        "this run's helper tree has used its spawn budget ({max} spawns, \
         maxSubagentSpawnsPerRun); do the rest yourself"
    )]
    RunSpawnCapReached { max: u32 },
    #[error(
        "the workflow needs {needed} spawns but only {left} are left ({why}); split it or \
         do part of it yourself"
    )]
    FanoutBudget {
        needed: usize,
        left: usize,
        why: &'static str,
    },
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

/// What the caps see for one call: the caller's depth, the session counters, the session cap
/// (config plus grants) and, for a call from inside a run tree, that tree's spawns so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    pub depth: u32,
    pub counters: Counters,
    pub spawn_cap: u32,
    pub run_spawns: Option<u32>,
}

impl Admission {
    /// A root caller at `depth` with `counters` and the config's session cap.
    pub fn root(config: &HelpersConfig, depth: u32, counters: Counters) -> Self {
        Self {
            depth,
            counters,
            spawn_cap: config.max_spawns_per_session,
            run_spawns: None,
        }
    }
}

/// The preflight, in the documented order: type → enabled → depth → prompt → context → session
/// spawn cap → run spawn cap → concurrency. Returns the type with the call's overrides applied
/// and whether the run goes to the background.
pub fn preflight(
    catalog: &AgentCatalog,
    config: &HelpersConfig,
    admission: Admission,
    args: &SpawnArgs,
) -> Result<(AgentType, bool), Refusal> {
    let mut agent = catalog.resolve(&args.agent_type)?;
    if admission.depth >= config.max_depth {
        return Err(Refusal::DepthExceeded {
            depth: admission.depth,
            max: config.max_depth,
        });
    }
    if args.prompt.trim().is_empty() {
        return Err(Refusal::EmptyPrompt);
    }
    let background = args.background.unwrap_or(agent.run_in_background);
    // An explicit fork is never quietly turned into a fresh run.
    if args.context == Some(ContextMode::Fork) && !background {
        return Err(Refusal::ForkNeedsBackground);
    }
    check_caps(config, admission, 1, background)?;
    if let Some(model) = &args.model {
        agent.model = Some(model.clone());
    }
    if let Some(thinking) = &args.thinking {
        agent.thinking = Some(thinking.clone());
    }
    if let Some(turns) = args.max_turns {
        agent.max_turns = Some(turns);
    }
    Ok((agent, background))
}

/// The spawn caps and the concurrency caps for `spawns` more runs.
pub(super) fn check_caps(
    config: &HelpersConfig,
    admission: Admission,
    spawns: u32,
    background: bool,
) -> Result<(), Refusal> {
    let counters = admission.counters;
    if counters.spawns.saturating_add(spawns) > admission.spawn_cap {
        return Err(Refusal::SpawnCapReached {
            max: admission.spawn_cap,
        });
    }
    if let Some(used) = admission.run_spawns
        && used.saturating_add(spawns) > config.max_spawns_per_run
    {
        return Err(Refusal::RunSpawnCapReached {
            max: config.max_spawns_per_run,
        });
    }
    if counters.running >= config.max_concurrent {
        return Err(Refusal::TooManyRunning {
            running: counters.running,
            max: config.max_concurrent,
        });
    }
    if background && counters.background >= config.max_active_async {
        return Err(Refusal::TooManyBackground {
            running: counters.background,
            max: config.max_active_async,
        });
    }
    Ok(())
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
    pub limit: OutputLimit,
    pub tool_uses: Vec<ToolUse>,
    pub turns: u32,
    pub usage: Usage,
    pub duration: Duration,
    pub error: Option<String>,
    /// The acceptance gate's verdict when there was one: `Some(true)` accepted.
    pub accepted: Option<bool>,
}

impl HelperResult {
    fn from_outcome(run: &RunInfo, outcome: RunOutcome, duration: Duration) -> Self {
        let (text, truncated) = truncate_output(
            &outcome.summary.final_text,
            run.limit.bytes,
            run.limit.lines,
        );
        Self {
            run_id: run.id.clone(),
            agent_type: run.agent_type.clone(),
            description: run.description.clone(),
            status: outcome.status,
            text,
            truncated,
            limit: run.limit,
            tool_uses: outcome.summary.tool_uses,
            turns: outcome.summary.turns,
            usage: outcome.summary.usage,
            duration,
            error: outcome.error,
            accepted: None,
        }
    }

    pub fn ok(&self) -> bool {
        self.status == RunStatus::Completed && self.accepted != Some(false)
    }

    /// What the model reads.
    pub fn content(&self) -> String {
        let mut text = if self.ok() {
            self.text.clone()
        } else if self.accepted == Some(false) {
            format!(
                "Helper run {} finished but its answer was rejected: {}\n\nThe helper's \
                 answer:\n{}",
                self.run_id,
                self.error.as_deref().unwrap_or("the gate failed"),
                self.text
            )
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
                "\n\n[output truncated to {} lines / {} bytes; the full answer is in the run's \
                 output.txt]",
                self.limit.lines, self.limit.bytes
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
            "accepted": self.accepted,
        });
        self.card().attach(details)
    }

    /// `✓ helper explore · <description> · 2 tools · 3s`, with the answer's first lines.
    pub fn card(&self) -> Card {
        let (icon, tint) = match self.status {
            _ if self.accepted == Some(false) => ("✗", CardTint::Error),
            RunStatus::Completed => ("✓", CardTint::Success),
            RunStatus::Queued | RunStatus::Running => ("●", CardTint::Info),
            _ => ("✗", CardTint::Error),
        };
        let mut title = format!(
            "{icon} helper {} · {} · {} tools · {:.1}s",
            self.agent_type,
            self.description,
            self.tool_uses.len(),
            self.duration.as_secs_f64()
        );
        if self.usage.total > 0 {
            title.push_str(&format!(" · {}", spend(&self.usage)));
        }
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
            Some(error) if !self.ok() => {
                let first = error.lines().next().unwrap_or_default();
                format!("{} · {first}", self.run_id)
            }
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
            format!(
                "  <status>{}</status>",
                if self.accepted == Some(false) {
                    "rejected"
                } else {
                    self.status.as_str()
                }
            ),
        ];
        if let Some(error) = self.error.as_ref().filter(|_| !self.ok()) {
            lines.push(format!("  <error>{}</error>", escape_xml(error)));
        }
        lines.push(format!(
            "  <usage>{} turns, {} tool uses, {}</usage>",
            self.turns,
            self.tool_uses.len(),
            spend(&self.usage)
        ));
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

/// `12.3k tok · $0.0123`, in the footer's number formats.
pub fn spend(usage: &Usage) -> String {
    use unipi_widgets::footer::{format_cost, format_tokens};
    let tokens = format!("{} tok", format_tokens(usage.total));
    if usage.cost > 0.0 {
        format!("{tokens} · {}", format_cost(usage.cost))
    } else {
        tokens
    }
}

/// The bridge, as helpers load it.
pub(super) struct ChildBridge {
    pub(super) host: BridgeHost,
    pub(super) extension: PathBuf,
}

pub(super) struct Inner {
    pub(super) settings: HelperSettings,
    pub(super) state: Mutex<State>,
    sink: Mutex<Option<Arc<dyn HelperNotificationSink>>>,
    bridge: Mutex<Option<ChildBridge>>,
    next_id: AtomicU64,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) counters: Counters,
    /// Spawns granted on top of the config's session cap.
    pub(super) granted: u32,
    pub(super) runs: HashMap<String, RunEntry>,
    /// Run ids in start order.
    pub(super) order: Vec<String>,
    /// The helpers' own Pis, by their bridge agent id.
    pub(super) children: HashMap<AgentId, ChildAgent>,
    /// Spawns per top-level run tree.
    pub(super) run_spawns: HashMap<String, u32>,
    /// Session files by agent (for `context: fork`).
    pub(super) sessions: HashMap<AgentId, PathBuf>,
    /// The event bus, once the bridge is up (background runs announce their end on it).
    pub(super) bus: Option<crate::bridge::EventBus>,
    /// Open supervisor questions by run id.
    pub(super) questions: HashMap<String, oneshot::Sender<String>>,
}

/// A helper's own Pi as a caller.
#[derive(Debug, Clone)]
pub(super) struct ChildAgent {
    pub(super) run: String,
    pub(super) depth: u32,
    /// The top-level run of its tree.
    pub(super) root: String,
}

pub(super) struct RunEntry {
    pub(super) info: RunInfo,
    pub(super) progress: watch::Receiver<Progress>,
    pub(super) result: watch::Receiver<Option<HelperResult>>,
    pub(super) control: Arc<dyn RunControl>,
}

/// Who is calling: the main Pi (or this process's root) or a helper's Pi.
#[derive(Debug, Clone)]
pub(super) struct Caller {
    pub(super) agent: AgentId,
    pub(super) depth: u32,
    /// The caller's own run, when it is a helper.
    pub(super) run: Option<String>,
    /// The top-level run of the caller's tree, when it is a helper.
    pub(super) root: Option<String>,
}

impl Caller {
    /// The main Pi: not a helper, and the agent the workbench itself launched.
    pub(super) fn is_root(&self) -> bool {
        self.run.is_none() && self.agent == AgentId::main()
    }
}

#[derive(Debug, Clone)]
pub(super) struct RunInfo {
    pub(super) id: String,
    pub(super) agent_type: String,
    pub(super) description: String,
    pub(super) parent_agent: AgentId,
    pub(super) parent_run: Option<String>,
    pub(super) background: bool,
    pub(super) limit: OutputLimit,
    /// The type as the run used it (for resume).
    pub(super) agent: AgentType,
    pub(super) run_dir: PathBuf,
}

/// Holds one concurrency slot (and a background slot) until dropped.
pub(super) struct Slot {
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

/// Where a run's conversation starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum SessionStart {
    Fresh,
    Fork(PathBuf),
    Resume(PathBuf),
}

/// One run about to start, after its preflight.
pub(super) struct Launch {
    pub(super) agent: AgentType,
    pub(super) prompt: String,
    pub(super) description: String,
    pub(super) background: bool,
    pub(super) caller: Caller,
    /// A workflow step: no boundary instructions.
    pub(super) fanout: bool,
    pub(super) session: SessionStart,
    pub(super) acceptance: Option<Acceptance>,
    pub(super) limit: OutputLimit,
    pub(super) budget: BudgetArgs,
    pub(super) slot: Slot,
}

/// The budgets a call asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct BudgetArgs {
    pub(super) max_turns: Option<u32>,
    pub(super) max_tool_uses: Option<u32>,
    pub(super) max_tokens: Option<u64>,
    pub(super) max_cost: Option<f64>,
}

impl BudgetArgs {
    pub(super) fn of(args: &SpawnArgs, agent: &AgentType) -> Self {
        Self {
            max_turns: args.max_turns.or(agent.max_turns),
            max_tool_uses: args.max_tool_uses,
            max_tokens: args.max_tokens,
            max_cost: args.max_cost,
        }
    }
}

/// A started run: what the waiting side needs.
pub(super) struct Started {
    pub(super) info: RunInfo,
    handle: RunHandle,
    result_tx: watch::Sender<Option<HelperResult>>,
    acceptance: Option<Acceptance>,
    slot: Slot,
    started: Instant,
}

impl Inner {
    /// The caller of `agent`: a helper's own Pi when it is one of ours, else the root.
    pub(super) fn caller(&self, agent: &AgentId) -> Caller {
        let state = lock(&self.state);
        match state.children.get(agent) {
            Some(child) => Caller {
                agent: agent.clone(),
                depth: child.depth,
                run: Some(child.run.clone()),
                root: Some(child.root.clone()),
            },
            None => Caller {
                agent: agent.clone(),
                depth: self.settings.depth,
                run: None,
                root: None,
            },
        }
    }

    pub(super) fn admission(&self, state: &State, caller: &Caller) -> Admission {
        Admission {
            depth: caller.depth,
            counters: state.counters,
            spawn_cap: self
                .settings
                .config
                .max_spawns_per_session
                .saturating_add(state.granted),
            run_spawns: caller
                .root
                .as_ref()
                .map(|root| state.run_spawns.get(root).copied().unwrap_or(0)),
        }
    }

    async fn spawn_helper(self: Arc<Self>, call: ToolCall) -> ToolOutput {
        let request = match parse_request(&call.args) {
            Ok(request) => request,
            Err(reason) => return refusal_output(&Refusal::BadArguments(reason)),
        };
        let caller = self.caller(&call.agent);
        match request {
            Request::Action(action) => self.action(&caller, action, &call).await,
            Request::Workflow(script) => self.workflow(caller, *script, &call).await,
            Request::Single(args) => self.single(caller, *args, &call).await,
        }
    }

    async fn single(
        self: Arc<Self>,
        caller: Caller,
        args: SpawnArgs,
        call: &ToolCall,
    ) -> ToolOutput {
        let (agent, background, slot) = match self.reserve(&caller, &args) {
            Ok(reserved) => reserved,
            Err(refusal) => return self.refused(&refusal),
        };
        let session = match args.context {
            Some(ContextMode::Fork) => {
                let file = lock(&self.state).sessions.get(&caller.agent).cloned();
                match file {
                    Some(file) => SessionStart::Fork(file),
                    None => return self.refused(&Refusal::ForkWithoutSession),
                }
            }
            _ => SessionStart::Fresh,
        };
        let launch = Launch {
            budget: BudgetArgs::of(&args, &agent),
            agent,
            prompt: args.prompt.clone(),
            description: args.description.clone(),
            background,
            caller,
            fanout: false,
            session,
            acceptance: args.acceptance.clone(),
            limit: args.max_output.unwrap_or_default(),
            slot,
        };
        self.start_and_report(launch, call).await
    }

    /// Starts a launch and answers the call: at once for a background run, at the end for a
    /// foreground one.
    pub(super) async fn start_and_report(
        self: Arc<Self>,
        launch: Launch,
        call: &ToolCall,
    ) -> ToolOutput {
        let started = match self.start(launch).await {
            Ok(started) => started,
            Err((reason, id)) => return error_output(&reason, &id),
        };
        if started.info.background {
            let info = started.info.clone();
            tokio::spawn(self.clone().finish_in_background(started));
            return background_output(&info);
        }
        let result = self
            .finish(started, &call.cancel, Some(&call.updates))
            .await;
        result.output()
    }

    /// Runs a background run to its end and delivers its notification.
    pub(super) async fn finish_in_background(self: Arc<Self>, started: Started) {
        let agent = started.info.parent_agent.clone();
        let (agent_type, description) = (
            started.info.agent_type.clone(),
            started.info.description.clone(),
        );
        let result = self
            .clone()
            .finish(started, &CancelToken::never(), None)
            .await;
        if let Some(bus) = lock(&self.state).bus.clone() {
            bus.emit(
                "helpers",
                crate::bridge::names::HELPER_FINISHED,
                serde_json::json!({"id": result.run_id, "type": agent_type,
                    "description": description, "status": result.status.as_str(),
                    "error": result.error}),
            );
        }
        self.notify(HelperNotice {
            agent,
            run_id: result.run_id.clone(),
            custom_type: NOTIFICATION_TYPE.to_string(),
            content: result.notification_content(),
            details: result.details(),
            trigger_turn: true,
        })
        .await;
    }

    /// Preflight and reserve the caps under one lock, so two calls cannot both take the last slot.
    fn reserve(
        self: &Arc<Self>,
        caller: &Caller,
        args: &SpawnArgs,
    ) -> Result<(AgentType, bool, Slot), Refusal> {
        let mut state = lock(&self.state);
        let admission = self.admission(&state, caller);
        let (agent, background) = preflight(
            &self.settings.catalog,
            &self.settings.config,
            admission,
            args,
        )?;
        Ok((
            agent,
            background,
            self.take_slot(&mut state, caller, background),
        ))
    }

    /// Consumes one spawn and one concurrency slot (the caller checked the caps).
    pub(super) fn take_slot(
        self: &Arc<Self>,
        state: &mut State,
        caller: &Caller,
        background: bool,
    ) -> Slot {
        state.counters.spawns += 1;
        state.counters.running += 1;
        if background {
            state.counters.background += 1;
        }
        if let Some(root) = &caller.root {
            *state.run_spawns.entry(root.clone()).or_insert(0) += 1;
        }
        Slot {
            inner: self.clone(),
            background,
        }
    }

    /// Launches the process, registers the run and its board row. The error carries the reason
    /// and the run id.
    pub(super) async fn start(
        self: &Arc<Self>,
        launch: Launch,
    ) -> Result<Started, (String, String)> {
        let id = self.new_run_id();
        let info = RunInfo {
            id: id.clone(),
            agent_type: launch.agent.name.clone(),
            description: launch.description.clone(),
            parent_agent: launch.caller.agent.clone(),
            parent_run: launch.caller.run.clone(),
            background: launch.background,
            limit: launch.limit,
            agent: launch.agent.clone(),
            run_dir: self.settings.runs_root.join(&id),
        };
        let child_agent = AgentId::new(format!("{CHILD_AGENT_PREFIX}{id}"));
        let spec = match self.run_spec(&launch, &info, &child_agent) {
            Ok(spec) => spec,
            Err(err) => return Err((format!("could not prepare the helper: {err:#}"), id)),
        };
        lock(&self.state).children.insert(
            child_agent.clone(),
            ChildAgent {
                run: id.clone(),
                depth: launch.caller.depth + 1,
                root: launch.caller.root.clone().unwrap_or_else(|| id.clone()),
            },
        );
        let handle = match HelperRunner::start(spec).await {
            Ok(handle) => handle,
            Err(err) => {
                self.forget_child(&child_agent);
                return Err((format!("could not start the helper: {err:#}"), id));
            }
        };
        let (result_tx, result_rx) = watch::channel(None);
        let control: Arc<dyn RunControl> = handle.control();
        let mut row = BoardRow::new(&id, RowKind::Helper, &info.agent_type, &info.description);
        row.parent = info.parent_run.clone();
        row.model = info.agent.model.clone();
        row.status = RunStatus::Running;
        self.settings.board.upsert(row);
        self.settings.board.attach_control(&id, control.clone());
        {
            let mut state = lock(&self.state);
            state.order.push(id.clone());
            state.runs.insert(
                id.clone(),
                RunEntry {
                    info: info.clone(),
                    progress: handle.progress(),
                    result: result_rx,
                    control,
                },
            );
        }
        Ok(Started {
            info,
            handle,
            result_tx,
            acceptance: launch.acceptance,
            slot: launch.slot,
            started: Instant::now(),
        })
    }

    /// Waits for a run to end (streaming progress to `updates`, stopping it when `cancel`
    /// fires), applies the gate, records and returns the result.
    pub(super) async fn finish(
        self: Arc<Self>,
        started: Started,
        cancel: &CancelToken,
        updates: Option<&UpdateSender>,
    ) -> HelperResult {
        let Started {
            info,
            mut handle,
            result_tx,
            acceptance,
            slot,
            started,
        } = started;
        let mut progress = handle.progress();
        let mut progress_open = true;
        let mut cancelled = false;
        let outcome = loop {
            tokio::select! {
                outcome = handle.wait() => break outcome,
                () = cancel.cancelled(), if !cancelled => {
                    cancelled = true;
                    handle.request_stop();
                }
                changed = progress.changed(), if progress_open => match changed {
                    Ok(()) => {
                        let now = progress.borrow_and_update().clone();
                        self.settings.board.update(&info.id, |row| apply_progress(row, &now));
                        if let Some(updates) = updates {
                            updates.send(progress_update(&info, &now, started.elapsed()));
                        }
                    }
                    Err(_) => progress_open = false,
                },
            }
        };
        let mut outcome = outcome;
        if cancelled {
            outcome.status = RunStatus::Stopped;
            outcome.error = Some("cancelled: the call was aborted".to_string());
        }
        let mut result = HelperResult::from_outcome(&info, outcome, started.elapsed());
        if result.status == RunStatus::Completed
            && let Some(acceptance) = &acceptance
        {
            match acceptance::evaluate(acceptance, &self.settings.cwd, cancel).await {
                Ok(()) => result.accepted = Some(true),
                Err(rejection) => {
                    result.accepted = Some(false);
                    result.error = Some(rejection.to_string());
                }
            }
        }
        result.duration = started.elapsed();
        drop(slot);
        self.settings.board.update(&info.id, |row| {
            row.status = result.status;
            row.turns = result.turns;
            row.tool_uses = result.tool_uses.len();
            row.usage = result.usage;
            row.duration = Some(result.duration);
            row.error = result.error.clone().filter(|_| !result.ok());
            if result.accepted == Some(false) {
                row.status = RunStatus::Failed;
            }
        });
        self.forget_child(&AgentId::new(format!("{CHILD_AGENT_PREFIX}{}", info.id)));
        result_tx.send_replace(Some(result.clone()));
        result
    }

    pub(super) fn has_bridge(&self) -> bool {
        lock(&self.bridge).is_some()
    }

    /// The child's bridge token stops working; its open question (if any) is dropped.
    fn forget_child(&self, agent: &AgentId) {
        let bridge = lock(&self.bridge).as_ref().map(|b| b.host.clone());
        if let Some(host) = bridge {
            host.unregister_agent(agent);
        }
        // The child agent record stays: a late call from it still resolves to its depth.
    }

    fn run_spec(
        &self,
        launch: &Launch,
        info: &RunInfo,
        child_agent: &AgentId,
    ) -> anyhow::Result<RunSpec> {
        let settings = &self.settings;
        let mut agent = launch.agent.clone();
        let mut prompt = launch.prompt.clone();
        if !launch.fanout {
            prompt.push_str(BOUNDARY_INSTRUCTIONS);
        }
        let child_depth = launch.caller.depth + 1;
        let mut leading_args = settings.launch.leading_args.clone();
        let mut env = settings.launch.env.clone();
        if let Some(bridge) = lock(&self.bridge).as_ref() {
            env.extend(bridge.host.register_agent(child_agent.clone())?);
            leading_args.extend(["-e".to_string(), bridge.extension.display().to_string()]);
            // The workbench's tools the child is offered: the supervisor channel always,
            // helpers of its own only while the depth limit allows.
            if !agent.tools.is_empty() {
                agent.tools.push(SUPERVISOR_TOOL.to_string());
                // Bridged MCP tools, as Pi 1.x keeps its own MCP tools under `--tools`.
                agent
                    .tools
                    .push(crate::mcp::module::HELPER_TOOLS_PATTERN.to_string());
                if child_depth < settings.config.max_depth {
                    agent.tools.push(SPAWN_TOOL.to_string());
                    agent.tools.push(RESULT_TOOL.to_string());
                }
            }
        }
        let mut spec = RunSpec::new(
            &settings.launch.program,
            agent,
            prompt,
            &settings.cwd,
            info.run_dir.clone(),
        );
        spec.leading_args = leading_args;
        spec.env = env;
        spec.env
            .push((DEPTH_ENV.to_string(), child_depth.to_string()));
        spec.deadline = settings.config.deadline;
        apply_launch_extras(&mut spec, launch);
        Ok(spec)
    }

    fn new_run_id(&self) -> String {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_millis());
        // The runs root may be shared by several workbenches: time and pid keep ids apart.
        format!("h{ms:x}-{}-{n}", std::process::id())
    }

    pub(super) async fn notify(&self, notice: HelperNotice) {
        let sink = lock(&self.sink).clone();
        let Some(sink) = sink else {
            tracing::info!(run = %notice.run_id, "helper notice with no sink: {}", notice.custom_type);
            return;
        };
        let run = notice.run_id.clone();
        if let Err(err) = sink.deliver(notice).await {
            tracing::warn!(run = %run, "helper notice not delivered: {err:#}");
        }
    }

    /// A refusal: shown on the board as a failed row too, so the user sees it.
    pub(super) fn refused(&self, refusal: &Refusal) -> ToolOutput {
        tracing::info!("spawn_helper refused: {refusal}");
        refusal_output(refusal)
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
    pub(super) fn result_from_disk(&self, id: &str) -> Result<ToolOutput, ToolError> {
        let unknown = || {
            ToolError::new(format!(
                "no helper run with id {id:?}; use the run id spawn_helper returned \
                 (spawn_helper action list shows them)"
            ))
        };
        let status = self.status_on_disk(id).ok_or_else(unknown)?;
        let dir = self.settings.runs_root.join(id);
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

    /// A run directory's `status.json`, for ids that are safe path components.
    pub(super) fn status_on_disk(&self, id: &str) -> Option<Value> {
        let safe = !id.is_empty()
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !safe {
            return None;
        }
        let dir = self.settings.runs_root.join(id);
        std::fs::read(dir.join(STATUS_FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
    }
}

/// The runner settings a launch decides beyond the type: where the conversation starts and the
/// budgets (the runner states them in the system prompt and enforces them).
fn apply_launch_extras(spec: &mut RunSpec, launch: &Launch) {
    use super::budget::Budget;
    use super::runner::SessionMode;
    spec.budget = Budget {
        max_turns: launch.budget.max_turns,
        max_tool_uses: launch.budget.max_tool_uses,
        max_tokens: launch.budget.max_tokens,
        max_cost: launch.budget.max_cost,
        ..Budget::default()
    };
    match &launch.session {
        SessionStart::Fresh => {}
        SessionStart::Fork(file) => spec.session = SessionMode::Fork(file.clone()),
        SessionStart::Resume(file) => spec.session = SessionMode::Resume(file.clone()),
    }
}

/// A board row brought up to date with a run's progress.
fn apply_progress(row: &mut BoardRow, progress: &Progress) {
    row.turns = progress.turns;
    row.tool_uses = progress.tool_uses;
    row.usage = progress.usage;
    if let Some(model) = &progress.model {
        row.model = Some(model.clone());
    }
    if let Some(activity) = progress
        .last_activity_text
        .as_ref()
        .or(progress.last_tool.as_ref())
    {
        row.last_activity = activity.clone();
    }
}

fn background_output(info: &RunInfo) -> ToolOutput {
    let card = Card::new(
        format!(
            "● helper {} · {} · started",
            info.agent_type, info.description
        ),
        CardTint::Info,
    )
    .footer(info.id.clone());
    ToolOutput::text(format!(
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
    .with_card(&card)
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
    if progress.usage.total > 0 {
        line.push_str(&format!(" · {}", spend(&progress.usage)));
    }
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

pub(super) fn refusal_output(refusal: &Refusal) -> ToolOutput {
    ToolOutput::text(format!("spawn_helper refused: {refusal}"))
        .with_details(json!({"status": "error", "reason": refusal.to_string()}))
        .with_card(&Card::new("✗ helper refused", CardTint::Error).line(refusal.to_string()))
}

pub(super) fn error_output(reason: &str, run_id: &str) -> ToolOutput {
    ToolOutput::text(format!("spawn_helper failed: {reason}"))
        .with_details(json!({"status": "error", "reason": reason, "runId": run_id}))
        .with_card(&Card::new("✗ helper failed", CardTint::Error).line(reason))
}

pub(super) fn usage_json(usage: &Usage) -> Value {
    json!({
        "input": usage.input,
        "output": usage.output,
        "cacheRead": usage.cache_read,
        "cacheWrite": usage.cache_write,
        "total": usage.total,
        "cost": usage.cost,
    })
}

pub(super) fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

pub(super) fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A poisoned lock only means another call panicked mid-update; the counters stay usable.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
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
            board: HelperBoard::new(),
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
            ..SpawnArgs::default()
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
                    ..HelpersConfig::default()
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
        let at = |depth: u32, counters: Counters| Admission::root(&config, depth, counters);
        for (spawn, depth, counters, want) in cases {
            let refusal = preflight(&catalog, &config, at(depth, counters), &spawn).unwrap_err();
            assert!(refusal.to_string().contains(want), "{want}: {refusal}");
        }
        assert!(matches!(
            preflight(&catalog, &config, at(0, fresh), &args("nope", "x")),
            Err(Refusal::Agent(AgentError::Unknown { .. }))
        ));
        // An explicit fork is refused in the foreground, never downgraded.
        let mut fork = args("explore", "x");
        fork.context = Some(ContextMode::Fork);
        assert_eq!(
            preflight(&catalog, &config, at(0, fresh), &fork),
            Err(Refusal::ForkNeedsBackground)
        );
        fork.background = Some(true);
        assert!(preflight(&catalog, &config, at(0, fresh), &fork).is_ok());
        // Granted budget raises the session cap; a run tree has its own cap.
        let granted = Admission {
            spawn_cap: 3,
            ..at(0, Counters { spawns: 2, ..fresh })
        };
        assert!(preflight(&catalog, &config, granted, &args("explore", "x")).is_ok());
        let tree = Admission {
            run_spawns: Some(config.max_spawns_per_run),
            ..at(1, fresh)
        };
        assert_eq!(
            preflight(&catalog, &config, tree, &args("explore", "x")),
            Err(Refusal::RunSpawnCapReached { max: 64 })
        );
        let mut spawn = args("explore", "x");
        spawn.model = Some("p/m".into());
        spawn.max_turns = Some(4);
        let (agent, background) = preflight(&catalog, &config, at(1, fresh), &spawn).unwrap();
        assert!(!background);
        assert_eq!(agent.model.as_deref(), Some("p/m"));
        assert_eq!(agent.max_turns, Some(4));
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
    async fn a_background_run_announces_its_end_on_the_bus() {
        let dir = tempfile::tempdir().unwrap();
        let module = HelpersModule::new(settings(dir.path(), &replay_script()));
        let bus = crate::bridge::EventBus::new();
        let mut events = bus.subscribe();
        module.watch_sessions(&bus);
        let started = module
            .call_tool(call(
                SPAWN_TOOL,
                json!({"type": "explore", "prompt": "Summarize the notes",
                       "description": "read notes", "run_in_background": true}),
            ))
            .await
            .unwrap();
        let id = started.details["runId"].as_str().unwrap().to_string();
        let finished = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                if let Ok(crate::bridge::BusEvent::Module { name, data, .. }) = events.recv().await
                    && name == crate::bridge::names::HELPER_FINISHED
                {
                    return data;
                }
            }
        })
        .await
        .unwrap();
        assert_eq!(
            finished,
            json!({"id": id, "type": "explore", "description": "read notes",
                   "status": "completed", "error": null})
        );
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

    /// Settings whose "Pi" is the RPC stand-in in `mode`; it logs argv and stdin to `<dir>/log`.
    fn rpc_settings(dir: &Path, mode: &str) -> HelperSettings {
        let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bin/fake-pi-rpc.py");
        let mut settings = settings(dir, "");
        settings.launch = PiLaunch {
            program: fake,
            leading_args: vec![mode.to_string()],
            env: vec![(
                "FAKE_PI_LOG".to_string(),
                dir.join("log").display().to_string(),
            )],
        };
        settings
    }

    fn log(dir: &Path) -> String {
        std::fs::read_to_string(dir.join("log")).unwrap_or_default()
    }

    fn call_as(agent: &AgentId, tool: &str, args: Value) -> ToolCall {
        ToolCall {
            agent: agent.clone(),
            ..call(tool, args)
        }
    }

    fn child_of(id: &str) -> AgentId {
        AgentId::new(format!("{CHILD_AGENT_PREFIX}{id}"))
    }

    async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
        for _ in 0..200 {
            if done() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("timed out waiting for {what}");
    }

    #[tokio::test]
    async fn a_single_helper_is_told_its_boundaries_and_a_workflow_step_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let module = HelpersModule::new(rpc_settings(dir.path(), "answer"));
        let output = module
            .call_tool(call(
                SPAWN_TOOL,
                json!({"type": "explore", "prompt": "SINGLE-TASK"}),
            ))
            .await
            .unwrap();
        assert_eq!(output.details["status"], "completed", "{}", output.details);
        assert!(
            text(&output).starts_with("Done: SINGLE-TASK"),
            "{}",
            text(&output)
        );
        let script = json!({"workflowScript": {"steps": [
            {"id": "a", "type": "explore", "prompt": "STEP-A"},
            {"id": "b", "type": "explore", "prompt": "STEP-B"},
            {"id": "sum", "type": "explore", "after": ["a", "b"], "prompt": "JOIN [{{a}}] [{{b}}]"}
        ], "maxParallel": 2}});
        let output = module.call_tool(call(SPAWN_TOOL, script)).await.unwrap();
        let body = text(&output);
        assert_eq!(output.details["status"], "completed", "{body}");
        assert!(body.contains("3 of 3 steps completed"), "{body}");
        // The last step saw the earlier answers in its prompt.
        assert!(
            body.contains("Done: JOIN [Done: STEP-A] [Done: STEP-B]"),
            "{body}"
        );
        let log = log(dir.path());
        let prompts: Vec<&str> = log.lines().filter(|l| l.contains("\"prompt\"")).collect();
        assert_eq!(prompts.len(), 4, "{log}");
        assert!(prompts[0].contains("SINGLE-TASK") && prompts[0].contains("Boundaries:"));
        assert!(
            prompts[1..].iter().all(|p| !p.contains("Boundaries:")),
            "{prompts:?}"
        );
        let counters = lock(&module.inner.state).counters;
        assert_eq!((counters.spawns, counters.running), (4, 0));
        // Every run is on the board, ended.
        let rows = module.board().rows();
        assert_eq!(rows.len(), 4);
        assert!(
            rows.iter().all(|row| row.status == RunStatus::Completed),
            "{rows:?}"
        );
        assert!(
            rows.iter()
                .all(|row| row.tool_uses == 1 && row.usage.total > 0)
        );
    }

    #[tokio::test]
    async fn a_workflow_that_does_not_fit_the_budget_is_refused_before_anything_starts() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = rpc_settings(dir.path(), "answer");
        settings.config.max_spawns_per_session = 2;
        let module = HelpersModule::new(settings);
        let script = json!({"workflowScript": {"steps": [
            {"id": "a", "type": "explore", "prompt": "x"},
            {"id": "b", "type": "explore", "prompt": "y"},
            {"id": "c", "type": "nope", "prompt": "z"}
        ]}});
        let output = module
            .call_tool(call(SPAWN_TOOL, script.clone()))
            .await
            .unwrap();
        assert!(
            text(&output).contains("step c: unknown helper type"),
            "{}",
            text(&output)
        );
        let mut fits_not = script;
        fits_not["workflowScript"]["steps"][2]["type"] = json!("explore");
        let output = module.call_tool(call(SPAWN_TOOL, fits_not)).await.unwrap();
        assert_eq!(output.details["status"], "error");
        assert!(
            text(&output).contains("needs 3 spawns but only 2 are left"),
            "{}",
            text(&output)
        );
        assert!(
            !dir.path().join("runs").exists(),
            "a refused workflow created a run"
        );
        assert_eq!(lock(&module.inner.state).counters.spawns, 0);
    }

    #[tokio::test]
    async fn the_gate_decides_and_max_output_truncates() {
        let dir = tempfile::tempdir().unwrap();
        let module = HelpersModule::new(rpc_settings(dir.path(), "answer"));
        let rejected = module
            .call_tool(call(
                SPAWN_TOOL,
                json!({"type": "work", "prompt": "fix", "gate": "echo nope; exit 4"}),
            ))
            .await
            .unwrap();
        assert_eq!(rejected.details["status"], "error", "{}", rejected.details);
        assert_eq!(rejected.details["accepted"], false);
        let body = text(&rejected);
        assert!(
            body.contains("rejected") && body.contains("exited with 4"),
            "{body}"
        );
        assert!(body.contains("nope"), "the gate's output is shown: {body}");
        let accepted = module
            .call_tool(call(
                SPAWN_TOOL,
                json!({"type": "work", "prompt": "fix", "acceptance": {"commands": ["true"]},
                       "maxOutput": 5}),
            ))
            .await
            .unwrap();
        assert_eq!(
            accepted.details["status"], "completed",
            "{}",
            accepted.details
        );
        assert_eq!(accepted.details["accepted"], true);
        assert_eq!(accepted.details["truncated"], true);
        assert!(
            text(&accepted).starts_with("Done:\n\n[output truncated to"),
            "{}",
            text(&accepted)
        );
    }

    #[tokio::test]
    async fn management_actions() {
        let dir = tempfile::tempdir().unwrap();
        let module = HelpersModule::new(rpc_settings(dir.path(), "answer"));
        let done = module
            .call_tool(call(
                SPAWN_TOOL,
                json!({"type": "explore", "prompt": "first"}),
            ))
            .await
            .unwrap();
        let id = done.details["runId"].as_str().unwrap().to_string();
        let list = module
            .call_tool(call(SPAWN_TOOL, json!({"action": "list"})))
            .await
            .unwrap();
        assert!(
            text(&list).contains(&id) && text(&list).contains("completed"),
            "{}",
            text(&list)
        );
        let children = module
            .call_tool(call(
                SPAWN_TOOL,
                json!({"action": "children.list", "id": id}),
            ))
            .await
            .unwrap();
        assert_eq!(text(&children), "No child runs.");
        let get = module
            .call_tool(call(SPAWN_TOOL, json!({"action": "get", "id": id})))
            .await
            .unwrap();
        assert!(text(&get).starts_with("Done: first"), "{}", text(&get));
        let status = module
            .call_tool(call(SPAWN_TOOL, json!({"action": "status"})))
            .await
            .unwrap();
        assert_eq!(status.details["spawns"], 1);
        assert_eq!(status.details["spawnCap"], 20);
        // A helper cannot raise the budget; the root session can.
        let from_child = module
            .call_tool(call_as(
                &child_of(&id),
                SPAWN_TOOL,
                json!({"action": "grant-spawn-budget"}),
            ))
            .await
            .unwrap();
        assert_eq!(from_child.details["status"], "error");
        assert!(text(&from_child).contains("only from the interactive root session"));
        let grant = module
            .call_tool(call(
                SPAWN_TOOL,
                json!({"action": "grant-spawn-budget", "amount": 5}),
            ))
            .await
            .unwrap();
        assert_eq!(grant.details["spawnCap"], 25, "{}", grant.details);
        let guide = module
            .call_tool(call(SPAWN_TOOL, json!({"action": "guide"})))
            .await
            .unwrap();
        assert!(text(&guide).contains("workflowScript") && text(&guide).contains("reply"));
        let doctor = module
            .call_tool(call(SPAWN_TOOL, json!({"action": "doctor"})))
            .await
            .unwrap();
        assert_eq!(doctor.details["status"], "completed", "{}", text(&doctor));
        assert!(text(&doctor).contains("✓ Pi program"), "{}", text(&doctor));
        // Resume continues the run's stored session.
        let resumed = module
            .call_tool(call(
                SPAWN_TOOL,
                json!({"action": "resume", "id": id, "message": "and then?"}),
            ))
            .await
            .unwrap();
        assert_eq!(
            resumed.details["status"], "completed",
            "{}",
            resumed.details
        );
        assert!(
            text(&resumed).starts_with("Done: and then?"),
            "{}",
            text(&resumed)
        );
        let session = dir
            .path()
            .join("runs")
            .join(&id)
            .join("session/fake-session.jsonl");
        assert!(
            log(dir.path()).contains(&format!("\"--session\", \"{}\"", session.display())),
            "{}",
            log(dir.path())
        );
        let unknown = module
            .call_tool(call(SPAWN_TOOL, json!({"action": "stop", "id": "h0-0-0"})))
            .await
            .unwrap();
        assert!(
            text(&unknown).contains("no helper run with id"),
            "{}",
            text(&unknown)
        );
    }

    #[tokio::test]
    async fn stop_ends_a_background_run_as_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let module = HelpersModule::new(rpc_settings(dir.path(), "forever"));
        let (sink, mut notices) = mpsc::unbounded_channel();
        module.attach_sink(Arc::new(HelperChannelSink(sink)));
        let started = module
            .call_tool(call(
                SPAWN_TOOL,
                json!({"type": "explore", "prompt": "loop", "async": true}),
            ))
            .await
            .unwrap();
        let id = started.details["runId"].as_str().unwrap().to_string();
        let board = module.board();
        wait_until("turns on the board", || {
            board.row(&id).is_some_and(|row| row.turns >= 1)
        })
        .await;
        // Another helper may not stop it.
        let stranger = module
            .call_tool(call_as(
                &child_of("h9-9-9"),
                SPAWN_TOOL,
                json!({"action": "stop", "id": id}),
            ))
            .await
            .unwrap();
        assert!(
            text(&stranger).contains("not spawned by you"),
            "{}",
            text(&stranger)
        );
        let stop = module
            .call_tool(call(SPAWN_TOOL, json!({"action": "stop", "id": id})))
            .await
            .unwrap();
        assert_eq!(stop.details["stopped"], true, "{}", stop.details);
        let notice = tokio::time::timeout(Duration::from_secs(15), notices.recv())
            .await
            .unwrap()
            .unwrap();
        assert!(
            notice.content.contains("<status>stopped</status>"),
            "{}",
            notice.content
        );
        assert_eq!(board.row(&id).unwrap().status, RunStatus::Stopped);
        let pid: i32 = serde_json::from_str::<Value>(
            &std::fs::read_to_string(dir.path().join("runs").join(&id).join("process.json"))
                .unwrap(),
        )
        .unwrap()["pid"]
            .as_i64()
            .unwrap() as i32;
        assert!(
            nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), None).is_err(),
            "the helper's process group survived the stop"
        );
    }

    #[tokio::test]
    async fn a_helper_asks_its_supervisor_and_only_the_parent_answers() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = rpc_settings(dir.path(), "forever");
        settings.config.supervisor_timeout = Duration::from_secs(20);
        let module = HelpersModule::new(settings);
        let (sink, mut notices) = mpsc::unbounded_channel();
        module.attach_sink(Arc::new(HelperChannelSink(sink)));
        let started = module
            .call_tool(call(
                SPAWN_TOOL,
                json!({"type": "explore", "prompt": "loop", "async": true}),
            ))
            .await
            .unwrap();
        let id = started.details["runId"].as_str().unwrap().to_string();
        let child = child_of(&id);
        let asking = tokio::spawn(module.call_tool(call_as(
            &child,
            SUPERVISOR_TOOL,
            json!({"message": "A or B?"}),
        )));
        let notice = tokio::time::timeout(Duration::from_secs(5), notices.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(notice.custom_type, SUPERVISOR_MESSAGE_TYPE);
        assert_eq!(notice.agent, AgentId::main());
        assert!(notice.trigger_turn);
        assert!(
            notice.content.contains("<message>A or B?</message>"),
            "{}",
            notice.content
        );
        assert!(notice.content.contains(&format!("id \"{id}\"")));
        // Not the parent: refused, and the question stays open.
        let stranger = module
            .call_tool(call_as(
                &AgentId::new("someone"),
                SPAWN_TOOL,
                json!({"action": "reply", "id": id, "message": "C"}),
            ))
            .await
            .unwrap();
        assert!(
            text(&stranger).contains("only the agent that spawned"),
            "{}",
            text(&stranger)
        );
        let reply = module
            .call_tool(call(
                SPAWN_TOOL,
                json!({"action": "reply", "id": id, "message": "use B"}),
            ))
            .await
            .unwrap();
        assert_eq!(reply.details["status"], "completed", "{}", text(&reply));
        let answered = asking.await.unwrap().unwrap();
        assert_eq!(text(&answered), "Your supervisor answered:\nuse B");
        // No open question any more.
        let late = module
            .call_tool(call(
                SPAWN_TOOL,
                json!({"action": "reply", "id": id, "message": "again"}),
            ))
            .await
            .unwrap();
        assert!(text(&late).contains("no open question"), "{}", text(&late));
        // A status note does not wait and does not start a turn.
        let note = module
            .call_tool(call_as(
                &child,
                SUPERVISOR_TOOL,
                json!({"message": "half done", "kind": "status"}),
            ))
            .await
            .unwrap();
        assert_eq!(note.details["status"], "sent");
        let notice = notices.recv().await.unwrap();
        assert!(!notice.trigger_turn);
        // The root session has no supervisor.
        let root = module
            .call_tool(call(SUPERVISOR_TOOL, json!({"message": "hello?"})))
            .await
            .unwrap();
        assert!(
            text(&root).contains("not a helper agent"),
            "{}",
            text(&root)
        );
        // A helper's own spawns are checked at its depth.
        let nested = module
            .call_tool(call_as(
                &child,
                SPAWN_TOOL,
                json!({"type": "explore", "prompt": "x", "async": true}),
            ))
            .await
            .unwrap();
        assert_eq!(nested.details["status"], "running", "{}", text(&nested));
        let grand = lock(&module.inner.state)
            .runs
            .values()
            .find(|entry| entry.info.parent_run.as_deref() == Some(id.as_str()))
            .map(|entry| entry.info.id.clone())
            .expect("the nested run is recorded under its parent");
        let too_deep = module
            .call_tool(call_as(
                &child_of(&grand),
                SPAWN_TOOL,
                json!({"type": "explore", "prompt": "x"}),
            ))
            .await
            .unwrap();
        assert!(
            text(&too_deep).contains("depth 2 and maxSubagentDepth is 2"),
            "{}",
            text(&too_deep)
        );
        // The nested run's parent may stop it; the root may stop anything.
        let stopped = module
            .call_tool(call_as(
                &child,
                SPAWN_TOOL,
                json!({"action": "stop", "id": grand}),
            ))
            .await
            .unwrap();
        assert_eq!(stopped.details["stopped"], true, "{}", text(&stopped));
        module
            .call_tool(call(SPAWN_TOOL, json!({"action": "stop", "id": id})))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn an_unanswered_question_times_out_and_a_foreground_one_is_answered_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = rpc_settings(dir.path(), "forever");
        settings.config.supervisor_timeout = Duration::from_millis(300);
        let module = HelpersModule::new(settings);
        let started = module
            .call_tool(call(
                SPAWN_TOOL,
                json!({"type": "explore", "prompt": "loop", "async": true}),
            ))
            .await
            .unwrap();
        let id = started.details["runId"].as_str().unwrap().to_string();
        let unanswered = module
            .call_tool(call_as(
                &child_of(&id),
                SUPERVISOR_TOOL,
                json!({"message": "?"}),
            ))
            .await
            .unwrap();
        assert_eq!(
            unanswered.details["reason"],
            "timeout",
            "{}",
            text(&unanswered)
        );
        assert!(text(&unanswered).contains("No answer from your supervisor"));
        module
            .call_tool(call(SPAWN_TOOL, json!({"action": "stop", "id": id})))
            .await
            .unwrap();

        let foreground = tokio::spawn(module.call_tool(call(
            SPAWN_TOOL,
            json!({"type": "explore", "prompt": "loop"}),
        )));
        let fg_id = {
            let module = module.clone();
            let mut found = None;
            wait_until("the foreground run", || {
                found = lock(&module.inner.state)
                    .runs
                    .values()
                    .find(|entry| !entry.info.background)
                    .map(|entry| entry.info.id.clone());
                found.is_some()
            })
            .await;
            found.unwrap()
        };
        let at_once = module
            .call_tool(call_as(
                &child_of(&fg_id),
                SUPERVISOR_TOOL,
                json!({"message": "?"}),
            ))
            .await
            .unwrap();
        assert_eq!(
            at_once.details["reason"],
            "foreground",
            "{}",
            text(&at_once)
        );
        module
            .call_tool(call(SPAWN_TOOL, json!({"action": "stop", "id": fg_id})))
            .await
            .unwrap();
        let ended = tokio::time::timeout(Duration::from_secs(15), foreground)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(ended.details["runStatus"], "stopped", "{}", ended.details);
    }

    #[tokio::test]
    async fn context_fork_copies_the_callers_session_or_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let module = HelpersModule::new(rpc_settings(dir.path(), "answer"));
        let (sink, mut notices) = mpsc::unbounded_channel();
        module.attach_sink(Arc::new(HelperChannelSink(sink)));
        let args = json!({"type": "explore", "prompt": "x", "context": "fork", "async": true});
        let refused = module
            .call_tool(call(SPAWN_TOOL, args.clone()))
            .await
            .unwrap();
        assert!(
            text(&refused).contains("needs this session's file"),
            "{}",
            text(&refused)
        );
        let parent = dir.path().join("parent.jsonl");
        std::fs::write(&parent, "{\"type\":\"session\"}\n").unwrap();
        module.set_session_file(AgentId::main(), parent.clone());
        let started = module.call_tool(call(SPAWN_TOOL, args)).await.unwrap();
        assert_eq!(started.details["status"], "running", "{}", started.details);
        let notice = tokio::time::timeout(Duration::from_secs(15), notices.recv())
            .await
            .unwrap()
            .unwrap();
        assert!(
            notice.content.contains("<status>completed</status>"),
            "{}",
            notice.content
        );
        assert!(
            log(dir.path()).contains(&format!("\"--fork\", \"{}\"", parent.display())),
            "{}",
            log(dir.path())
        );
    }
}

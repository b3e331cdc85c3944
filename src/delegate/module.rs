//! The `delegate` bridge module: `bg_delegate` launches one read-only child agent seeded with a
//! frozen projection of the calling agent's conversation, `bg_result` reads its verified answer,
//! and a `delegate-result-notification` follow-up wakes the agent when the child ends.
//!
//! The module owns the parent's half of the protocol in [`super::artifacts`]: a preflight that
//! refuses before anything exists (arguments, session file, route pinned to a model Pi lists,
//! window, seed budget), the task directory with `seed.json` (re-hashed after writing) and the
//! manifest, the child process (`unipi-tui __delegate-child`, its own process group), and — when
//! the child exits — the adjudication: verify `result.json` against the manifest, write
//! `outcome.json`, move the manifest to its terminal state, update the dock's row and deliver
//! the answer inline or as an artifact reference, never shortened.
//!
//! What the module needs from the app comes through [`DelegateHost`] (the models Pi can use and
//! where notifications go; the [`BridgeHost`] in the app, a channel in tests) and
//! [`DelegateModule::observe`] (each agent's session file and current model, from `session_start`
//! and `model_select` on the event bus).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::sync::{mpsc, watch};

use super::artifacts::{
    self, CHILD_LOG_FILE, ChildResult, ChildTerminal, Delivery, ErrorRecord, Limits, Manifest,
    ManifestState, OUTCOME_FILE, OUTCOME_SCHEMA, Outcome, PiCommand, RESULT_FILE, Route,
    RouteOrigin, SEED_FILE, TERMINAL_FILE, TaskDir,
};
use super::child::{CHILD_SUBCOMMAND, PROGRESS_LINE, STARTED_LINE};
use super::config::DelegateConfig;
use super::errors::{DelegateError, DelegateErrorCode};
pub use super::report::{LAUNCH_SCHEMA, RESULT_VIEW_SCHEMA};
use super::report::{Launch, notification, receipt, running_view, terminal_view};
use super::seed::{SeedInput, build_seed, sha256_hex};
use crate::bridge::{
    AgentId, AgentNotice, BridgeHost, BusEvent, CancelToken, EventBus, HostCall, MessageTypeSpec,
    ModelInfo, Module, NoticeSink, PiEvent, Refusal, ToolCall, ToolError, ToolOutput, ToolSpec,
    WakeReach, send_to,
};
use crate::config::live::LiveConfig;
use crate::helpers::board::{BoardRow, HelperBoard, RowKind, RunControl, TranscriptEntry};
use crate::helpers::events::Usage;
use crate::helpers::runner::RunStatus;
use crate::sys::{
    GroupGuard, GroupStop, ProcessGroup, Reach, SpawnGrouped as _, lock, now_ms, random_u64,
    write_new_atomic,
};
use crate::tasks::TASKS_CONFIG_FILE;
use crate::text::non_blank_str;

/// The tool names.
pub const DELEGATE_TOOL: &str = "bg_delegate";
pub const RESULT_TOOL: &str = "bg_result";
/// The custom message type of a delegate's completion.
pub const NOTIFICATION_TYPE: &str = "delegate-result-notification";
/// The child's task must fit one command-line argument (Linux: 128 KiB); this leaves room.
pub const MAX_CHILD_PROMPT_BYTES: usize = 120 * 1024;
/// The framing around the seed in the child's task, in bytes (generous).
const PROMPT_FRAME_BYTES: usize = 1024;
/// How long a stopped child has to record its cancellation before its groups are killed: the
/// runner's own grace and slack, plus time to write.
pub const STOP_GRACE: Duration = Duration::from_secs(8);

/// What the module needs from the app: the models an agent can use, and where completions go.
pub trait DelegateHost: NoticeSink {
    /// The models `agent`'s Pi can use right now (route pinning).
    fn models(&self, agent: &AgentId) -> BoxFuture<'static, anyhow::Result<Vec<ModelInfo>>>;
}

impl DelegateHost for BridgeHost {
    fn models(&self, agent: &AgentId) -> BoxFuture<'static, anyhow::Result<Vec<ModelInfo>>> {
        let host = self.clone();
        let agent = agent.clone();
        Box::pin(async move {
            let value = host.call(&agent, HostCall::ListModels).await?;
            Ok(serde_json::from_value(value)?)
        })
    }
}

/// What a delegate's wake promise allows past its deadline: the stop and the notification.
const WAKE_DELIVERY: Duration = Duration::from_secs(60);

/// A host with a fixed model list whose notices go into a channel (tests, or an app routing
/// notices itself).
#[derive(Debug, Clone)]
pub struct ChannelHost {
    pub models: Vec<ModelInfo>,
    pub notices: mpsc::UnboundedSender<AgentNotice>,
}

impl DelegateHost for ChannelHost {
    fn models(&self, _agent: &AgentId) -> BoxFuture<'static, anyhow::Result<Vec<ModelInfo>>> {
        let models = self.models.clone();
        Box::pin(async move { Ok(models) })
    }
}

impl NoticeSink for ChannelHost {
    fn deliver(&self, notice: AgentNotice) -> BoxFuture<'static, anyhow::Result<()>> {
        send_to(&self.notices, notice)
    }
}

/// What the module knows of one agent's session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParentSession {
    pub session_id: Option<String>,
    /// `None` for `--no-session`: no delegate can be seeded.
    pub session_file: Option<PathBuf>,
    /// The current `(provider, model)`.
    pub model: Option<(String, String)>,
}

/// Everything the module needs, given by the app.
#[derive(Debug, Clone)]
pub struct DelegateSettings {
    /// The workspace: the child's cwd and the artifacts' root.
    pub workspace: PathBuf,
    /// How the child runs Pi.
    pub pi: PiCommand,
    /// Environment for the child (and its Pi), on top of the inherited one.
    pub env: Vec<(String, String)>,
    /// The `unipi-tui` binary that has the `__delegate-child` subcommand.
    pub child_program: PathBuf,
    /// The `delegate` section of `background-tasks.json`, followed: an edit applies to the next
    /// launch (the tool's existence is fixed at start: `enabled` needs a restart).
    pub config: LiveConfig<DelegateConfig>,
}

impl DelegateSettings {
    /// Settings running the child from this very executable.
    pub fn new(
        workspace: PathBuf,
        pi: PiCommand,
        env: Vec<(String, String)>,
        config: LiveConfig<DelegateConfig>,
    ) -> anyhow::Result<Self> {
        let child_program = std::env::current_exe()
            .map_err(|err| anyhow::anyhow!("cannot locate the unipi-tui executable: {err}"))?;
        Ok(Self {
            workspace,
            pi,
            env,
            child_program,
            config,
        })
    }
}

/// The `delegate` module. Cheap to clone (shared state).
#[derive(Clone)]
pub struct DelegateModule {
    inner: Arc<DelegateService>,
}

impl DelegateModule {
    pub fn new(settings: DelegateSettings) -> Self {
        Self {
            inner: Arc::new(DelegateService {
                settings,
                host: Mutex::new(None),
                board: Mutex::new(None),
                sessions: Mutex::new(HashMap::new()),
                tasks: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The module as the app starts it: config from `background-tasks.json` (home, then the
    /// workspace), the child run from this executable. `None` when delegates are disabled; the
    /// config errors are for the app's notice.
    pub fn for_app(
        home: Option<&Path>,
        workspace: &Path,
        pi: PiCommand,
        env: Vec<(String, String)>,
    ) -> (
        anyhow::Result<Option<Self>>,
        Vec<crate::config::ConfigError>,
    ) {
        let (config, errors) =
            LiveConfig::module(home, workspace, &[TASKS_CONFIG_FILE], DelegateConfig::load);
        if !config.get().enabled {
            return (Ok(None), errors);
        }
        let settings = DelegateSettings::new(workspace.to_path_buf(), pi, env, config);
        (settings.map(|settings| Some(Self::new(settings))), errors)
    }

    /// Connects a registered module to the running bridge: models and notifications through
    /// `host`, session files and models from the registry's event bus.
    pub fn connect(&self, host: BridgeHost, bus: &EventBus) {
        self.attach_host(Arc::new(host));
        self.watch_bus(bus);
    }

    /// Where models come from and completions go; without a host every launch is refused
    /// (`route_unresolved`: no models are known).
    pub fn attach_host(&self, host: Arc<dyn DelegateHost>) {
        *lock(&self.inner.host) = Some(host);
    }

    /// The dock's board: a row per delegate, with a stop control.
    pub fn attach_board(&self, board: HelperBoard) {
        *lock(&self.inner.board) = Some(board);
    }

    /// Follows `session_start` and `model_select` on the bus (runs until the bus closes).
    pub fn watch_bus(&self, bus: &EventBus) -> tokio::task::JoinHandle<()> {
        let module = self.clone();
        let mut events = bus.subscribe();
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(BusEvent::Pi { agent, event }) => module.observe(&agent, &event),
                    Ok(_) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                }
            }
        })
    }

    /// Applies one Pi event to what the module knows of `agent`'s session.
    pub fn observe(&self, agent: &AgentId, event: &PiEvent) {
        let mut sessions = lock(&self.inner.sessions);
        match event {
            PiEvent::SessionStart(start) => {
                let session = sessions.entry(agent.clone()).or_default();
                session.session_id.clone_from(&start.session_id);
                session.session_file = start.session_file.as_ref().map(PathBuf::from);
                if let Some(model) = &start.model {
                    session.model = Some((model.provider.clone(), model.id.clone()));
                }
            }
            PiEvent::ModelSelect(select) => {
                let session = sessions.entry(agent.clone()).or_default();
                session.model = Some((select.model.provider.clone(), select.model.id.clone()));
            }
            _ => {}
        }
    }

    /// Sets what the module knows of `agent`'s session directly.
    pub fn set_session(&self, agent: &AgentId, session: ParentSession) {
        lock(&self.inner.sessions).insert(agent.clone(), session);
    }

    /// A task's outcome once decided (for the app and tests).
    pub fn outcome(&self, task_id: &str) -> Option<Outcome> {
        lock(&self.inner.tasks)
            .get(task_id)
            .and_then(|task| task.outcome.borrow().clone())
    }

    /// Stops a running delegate (as the dock's stop does); false when it is not running.
    pub fn stop(&self, task_id: &str) -> bool {
        let control = lock(&self.inner.tasks)
            .get(task_id)
            .map(|task| task.control.clone());
        match control {
            Some(control) if control.outcome.borrow().is_none() => {
                control.stop();
                true
            }
            _ => false,
        }
    }
}

impl Module for DelegateModule {
    fn name(&self) -> &'static str {
        "delegate"
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let config = self.inner.settings.config.get();
        if !config.enabled {
            return vec![];
        }
        let wait_timeout = Duration::from_secs(config.timeout_seconds + 60);
        vec![
            ToolSpec::new(
                DELEGATE_TOOL,
                "Background Delegate",
                "Start one read-only child agent (read, grep, find, ls) seeded with a frozen copy \
                 of this conversation, to answer one question in the background. The route \
                 (provider/model) is pinned and never substituted. Returns a task id at once; a \
                 <delegate-result-notification> arrives when the child ends.",
            )
            .string_param("name", "A short label for the delegate", true)
            .param(
                "prompt",
                json!({"type": "string",
                       "description": "The question the delegate must answer (kept verbatim)"}),
                true,
            )
            .param(
                "route",
                json!({"type": "object",
                       "description": "The model to pin; default: this session's current model",
                       "properties": {"provider": {"type": "string"}, "model": {"type": "string"}},
                       "required": ["provider", "model"], "additionalProperties": false}),
                false,
            )
            .integer_param("maxTurns", "Turn budget (default from config)", false)
            .integer_param(
                "timeoutSeconds",
                "Run deadline (default from config)",
                false,
            )
            .boolean_param(
                "notifyOnCompletion",
                "Send a notification when it ends (default true)",
                false,
            )
            .boolean_param(
                "triggerOnCompletion",
                "Start a follow-up turn with the notification (default true)",
                false,
            )
            .prompt_snippet("delegate a read-only investigation to a background child agent")
            .guideline(
                "After bg_delegate, do not poll bg_result; end the turn or continue other work \
                 and wait for the <delegate-result-notification>.",
            ),
            ToolSpec::new(
                RESULT_TOOL,
                "Background Result",
                "Read a delegate's verified answer by task id. Inline when it fits the inline \
                 cap, otherwise an artifact reference to the complete answer; never truncated.",
            )
            .string_param("taskId", "The task id bg_delegate returned", true)
            .param(
                "delivery",
                json!({"type": "string", "enum": ["inline", "artifact"],
                       "description": "Force inline (errors when too large) or artifact"}),
                false,
            )
            .boolean_param(
                "wait",
                "Wait until the delegate ends (default false)",
                false,
            )
            .timeout(wait_timeout),
        ]
    }

    fn message_types(&self) -> Vec<MessageTypeSpec> {
        vec![MessageTypeSpec::new(NOTIFICATION_TYPE, "Delegate result")]
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let inner = self.inner.clone();
        Box::pin(async move {
            let result = match call.tool.as_str() {
                DELEGATE_TOOL => inner.launch(&call).await,
                RESULT_TOOL => inner.result(&call.args, &call.cancel).await,
                other => {
                    return Err(ToolError::new(format!(
                        "module `delegate` declares no tool `{other}`"
                    )));
                }
            };
            result.map_err(|err| ToolError {
                message: err.describe(),
                details: json!({"error_code": err.code.as_str()}),
            })
        })
    }
}

/// `bg_delegate`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelegateArgs {
    pub name: String,
    pub prompt: String,
    pub route: Option<(String, String)>,
    pub max_turns: Option<u32>,
    pub timeout_seconds: Option<u64>,
    pub notify: bool,
    pub trigger: bool,
}

/// Reads `bg_delegate`'s arguments (a closed schema).
pub fn parse_delegate_args(args: &Value) -> Result<DelegateArgs, DelegateError> {
    const KEYS: [&str; 7] = [
        "name",
        "prompt",
        "route",
        "maxTurns",
        "timeoutSeconds",
        "notifyOnCompletion",
        "triggerOnCompletion",
    ];
    let Some(object) = args.as_object() else {
        return Err(DelegateError::invalid(
            "bg_delegate arguments must be an object",
        ));
    };
    let unknown: Vec<&str> = object
        .keys()
        .map(String::as_str)
        .filter(|key| !KEYS.contains(key))
        .collect();
    if !unknown.is_empty() {
        return Err(DelegateError::invalid(format!(
            "bg_delegate contains unsupported key(s): {}",
            unknown.join(", ")
        )));
    }
    let text = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or("");
    let name = text("name").trim().to_string();
    if name.is_empty() {
        return Err(DelegateError::invalid(
            "bg_delegate requires a non-empty name",
        ));
    }
    let prompt = text("prompt").to_string();
    if prompt.trim().is_empty() {
        return Err(DelegateError::invalid(
            "bg_delegate requires a non-blank prompt",
        ));
    }
    let route = match object.get("route") {
        None | Some(Value::Null) => None,
        Some(route) => {
            let part = |key: &str| {
                non_blank_str(route.get(key))
                    .map(str::to_string)
                    .ok_or_else(|| {
                        DelegateError::invalid(format!(
                            "bg_delegate route.{key} must be a non-empty string"
                        ))
                    })
            };
            Some((part("provider")?, part("model")?))
        }
    };
    let positive = |key: &str| -> Result<Option<u64>, DelegateError> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value.as_u64().filter(|n| *n >= 1).map(Some).ok_or_else(|| {
                DelegateError::invalid(format!("bg_delegate {key} must be a positive integer"))
            }),
        }
    };
    let flag = |key: &str| -> Result<bool, DelegateError> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(true),
            Some(Value::Bool(flag)) => Ok(*flag),
            Some(_) => Err(DelegateError::invalid(format!(
                "bg_delegate {key} must be true or false"
            ))),
        }
    };
    Ok(DelegateArgs {
        name,
        prompt,
        route,
        max_turns: positive("maxTurns")?.map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
        timeout_seconds: positive("timeoutSeconds")?,
        notify: flag("notifyOnCompletion")?,
        trigger: flag("triggerOnCompletion")?,
    })
}

/// Pins the route: an explicit one must be listed exactly; an omitted one is the session's
/// current model, which must be listed too (its window is needed). No fallback, ever.
pub fn resolve_route(
    requested: Option<&(String, String)>,
    current: Option<&(String, String)>,
    models: &[ModelInfo],
) -> Result<Route, DelegateError> {
    let (wanted, origin) = match (requested, current) {
        (Some(route), _) => (route, RouteOrigin::Explicit),
        (None, Some(route)) => (route, RouteOrigin::ParentCurrent),
        (None, None) => {
            return Err(DelegateError::new(
                DelegateErrorCode::RouteUnresolved,
                "bg_delegate has no route: the session has no current model and none was given",
            ));
        }
    };
    let Some(model) = models
        .iter()
        .find(|model| model.provider == wanted.0 && model.id == wanted.1)
    else {
        let mut listed: Vec<String> = models
            .iter()
            .map(|m| format!("{}/{}", m.provider, m.id))
            .collect();
        listed.sort();
        listed.truncate(20);
        return Err(DelegateError::new(
            DelegateErrorCode::RouteUnresolved,
            format!(
                "route {}/{} is not in the current model registry (available: {}); it is never \
                 substituted",
                wanted.0,
                wanted.1,
                if listed.is_empty() {
                    "none".to_string()
                } else {
                    listed.join(", ")
                }
            ),
        ));
    };
    let route = Route {
        provider: model.provider.clone(),
        model: model.id.clone(),
        context_window_tokens: model.context_window.unwrap_or(0),
        origin,
    };
    if route.allowed_input_tokens().is_none() {
        return Err(DelegateError::new(
            DelegateErrorCode::RouteCapacityUnknown,
            format!(
                "route {} declares a context window of {} tokens; a delegate needs at least 36864",
                route.qualified(),
                route.context_window_tokens
            ),
        ));
    }
    Ok(route)
}

// --- internals ---------------------------------------------------------------------------------

struct DelegateService {
    settings: DelegateSettings,
    host: Mutex<Option<Arc<dyn DelegateHost>>>,
    board: Mutex<Option<HelperBoard>>,
    sessions: Mutex<HashMap<AgentId, ParentSession>>,
    tasks: Mutex<HashMap<String, TaskEntry>>,
}

struct TaskEntry {
    dir: TaskDir,
    outcome: watch::Receiver<Option<Outcome>>,
    control: Arc<Control>,
}

/// The stop control of one running child (also the dock's [`RunControl`]).
struct Control {
    stop: watch::Sender<bool>,
    outcome: watch::Receiver<Option<Outcome>>,
    directive: String,
}

impl RunControl for Control {
    fn steer(&self, _message: String) -> Result<(), Refusal> {
        Err("delegates cannot be steered".into())
    }

    fn stop(&self) {
        self.stop.send_replace(true);
    }

    fn transcript(&self) -> Vec<TranscriptEntry> {
        let mut entries = vec![TranscriptEntry::User(self.directive.clone())];
        if let Some(outcome) = self.outcome.borrow().as_ref() {
            entries.push(TranscriptEntry::Note(format!(
                "ended {}",
                outcome.status.as_str()
            )));
        }
        entries
    }
}

impl DelegateService {
    async fn launch(self: &Arc<Self>, call: &ToolCall) -> Result<ToolOutput, DelegateError> {
        let config = self.settings.config.get();
        let args = parse_delegate_args(&call.args)?;
        let session = lock(&self.sessions)
            .get(&call.agent)
            .cloned()
            .unwrap_or_default();
        let Some(session_file) = session.session_file.clone() else {
            return Err(DelegateError::new(
                DelegateErrorCode::SeedProjectionFailed,
                "this session has no session file (it is in memory, or Pi has not reported \
                 one yet), so there is no conversation to seed a delegate from",
            ));
        };
        let host = lock(&self.host).clone();
        // A delegate that will wake the caller must be able to: a print or JSON run waits for
        // it (at most its deadline) or, where it cannot wait, the launch is refused in words.
        let wakes_caller = args.notify && args.trigger;
        let deadline = Duration::from_secs(args.timeout_seconds.unwrap_or(config.timeout_seconds));
        if wakes_caller {
            let reach = host
                .as_ref()
                .map_or(WakeReach::Anytime, |host| host.wake_reach(&call.agent));
            if let Some(refused) = reach.refusal_for(
                "a delegate",
                Some(deadline),
                "pass triggerOnCompletion: false and wait for its answer with bg_result",
            ) {
                return Err(DelegateError::new(
                    DelegateErrorCode::InvalidArguments,
                    refused,
                ));
            }
        }
        let models = match &host {
            Some(host) => host.models(&call.agent).await.map_err(|err| {
                DelegateError::new(
                    DelegateErrorCode::RouteUnresolved,
                    format!("cannot read the model registry: {err:#}"),
                )
            })?,
            None => Vec::new(),
        };
        let route = resolve_route(args.route.as_ref(), session.model.as_ref(), &models)?;
        let allowed = route.allowed_input_tokens().unwrap_or(0);
        let limits = Limits {
            max_turns: args.max_turns.unwrap_or(config.max_turns),
            timeout_seconds: args.timeout_seconds.unwrap_or(config.timeout_seconds),
            inline_answer_bytes: config.inline_answer_bytes,
            allowed_input_tokens: allowed,
            ..Limits::default()
        };
        // One byte per token is the conservative estimate: the seed, the directive (which the
        // child's task repeats) and the frame must fit the allowed input.
        let allowed_bytes = usize::try_from(allowed).unwrap_or(usize::MAX);
        let fixed = args.prompt.len() * 2 + PROMPT_FRAME_BYTES;
        let budget = config
            .seed_budget_bytes
            .min(allowed_bytes.saturating_sub(fixed))
            .min(MAX_CHILD_PROMPT_BYTES.saturating_sub(fixed));
        if budget < 1024 {
            return Err(DelegateError::new(
                DelegateErrorCode::SeedBudgetExceeded,
                format!(
                    "the prompt ({} bytes) leaves no room for the conversation seed within {} \
                     allowed input tokens",
                    args.prompt.len(),
                    allowed
                ),
            ));
        }
        let task_id = format!("d{:016x}{:016x}", random_u64(), random_u64());
        let nonce = format!("{:016x}{:016x}", random_u64(), random_u64());
        let cwd = self.settings.workspace.clone();
        let run = format!(
            "{}-{}",
            session.session_id.as_deref().unwrap_or("session"),
            std::process::id()
        );
        let dir = TaskDir::new(&self.settings.workspace, &sanitize(&run), &task_id);
        let prepared = {
            let (dir, pi) = (dir.clone(), self.settings.pi.clone());
            let (prompt, name, call_id) =
                (args.prompt.clone(), args.name.clone(), call.call_id.clone());
            blocking(move || {
                let seed = build_seed(&SeedInput {
                    task_id: &task_id,
                    nonce: &nonce,
                    cwd: &cwd,
                    route: &route,
                    directive: &prompt,
                    session_file: &session_file,
                    active_call_id: Some(&call_id),
                    budget_bytes: budget,
                    limits,
                })?;
                let now = now_ms();
                let manifest = Manifest {
                    schema_version: artifacts::MANIFEST_SCHEMA.to_string(),
                    task_id: task_id.clone(),
                    launch_nonce: nonce,
                    name,
                    created_at: now,
                    updated_at: now,
                    cwd,
                    route,
                    limits,
                    seed_sha256: seed.sha256.clone(),
                    seed_bytes: seed.bytes.len(),
                    directive_sha256: sha256_hex(prompt.as_bytes()),
                    pi,
                    state: ManifestState::Launched,
                    child_pid: None,
                    error: None,
                };
                // From here on something exists on disk: a failure removes the task directory.
                dir.create()?;
                if let Err(err) = persist(&dir, &seed.bytes, &manifest) {
                    let _ = std::fs::remove_dir_all(&dir.dir);
                    return Err(err);
                }
                Ok((seed.accounting, manifest))
            })
            .await
        };
        let (accounting, manifest) = prepared?;
        // Owed until the notice is delivered (the launch is dropped after it).
        let wake = host.filter(|_| wakes_caller).and_then(|host| {
            host.promise_wake(
                &call.agent,
                format!("delegate {}", manifest.task_id),
                deadline + WAKE_DELIVERY,
            )
        });
        let launch = Launch {
            agent: call.agent.clone(),
            name: args.name.clone(),
            dir,
            manifest,
            notify: args.notify,
            trigger: args.trigger,
            started: Instant::now(),
            _wake: wake,
        };
        let receipt = receipt(&launch, &accounting);
        self.spawn_child(launch, args.prompt)?;
        Ok(receipt)
    }

    /// Starts the child and its supervisor.
    fn spawn_child(
        self: &Arc<Self>,
        launch: Launch,
        directive: String,
    ) -> Result<(), DelegateError> {
        let dir = launch.dir.clone();
        let spawned = spawn_child_process(&self.settings, &dir);
        let (mut child, group) = match spawned {
            Ok(spawned) => spawned,
            Err(err) => {
                let error = ErrorRecord {
                    code: DelegateErrorCode::ChildSpawnFailed.as_str().to_string(),
                    message: format!("{err:#}"),
                };
                let _ = dir.transition(ManifestState::Failed, Some(error), None);
                return Err(DelegateError::new(
                    DelegateErrorCode::ChildSpawnFailed,
                    format!("cannot start the delegate child: {err:#}"),
                )
                .with_artifacts(dir.dir.clone(), dir.preserved()));
            }
        };
        let pid = group.raw().unsigned_abs();
        if let Err(err) = dir.transition(ManifestState::Running, None, Some(pid)) {
            tracing::warn!("delegate {}: {err:#}", launch.manifest.task_id);
        }
        let (outcome_tx, outcome_rx) = watch::channel(None);
        let (stop_tx, stop_rx) = watch::channel(false);
        let control = Arc::new(Control {
            stop: stop_tx,
            outcome: outcome_rx.clone(),
            directive,
        });
        let task_id = launch.manifest.task_id.clone();
        lock(&self.tasks).insert(
            task_id.clone(),
            TaskEntry {
                dir: dir.clone(),
                outcome: outcome_rx,
                control: control.clone(),
            },
        );
        if let Some(board) = lock(&self.board).clone() {
            let mut row = BoardRow::new(&task_id, RowKind::Delegate, "delegate", &launch.name);
            row.model = Some(launch.manifest.route.qualified());
            row.status = RunStatus::Running;
            row.last_activity = "started".to_string();
            board.upsert(row);
            board.attach_control(&task_id, control);
        }
        let stdout = child.stdout.take();
        let inner = self.clone();
        tokio::spawn(async move {
            let groups = DelegateGroups {
                child: GroupGuard::new(group, Reach::Group),
                pi: GroupGuard::unarmed(Reach::Group),
            };
            let stopped = inner
                .supervise(&launch, child, stdout, stop_rx, &groups)
                .await;
            groups.disarm();
            inner.finish(launch, stopped, outcome_tx).await;
        });
        Ok(())
    }

    /// Follows the child to its exit; returns whether the parent stopped it.
    async fn supervise(
        &self,
        launch: &Launch,
        mut child: tokio::process::Child,
        stdout: Option<tokio::process::ChildStdout>,
        mut stop: watch::Receiver<bool>,
        groups: &DelegateGroups,
    ) -> bool {
        let task_id = &launch.manifest.task_id;
        let mut lines = stdout.map(|out| BufReader::new(out).lines());
        let mut stopped = false;
        let mut stop_open = true;
        let mut stopping = GroupStop::default();
        loop {
            tokio::select! {
                status = child.wait() => {
                    if let Err(err) = status {
                        tracing::warn!("delegate {task_id}: waiting for the child: {err}");
                    }
                    break;
                }
                line = next_line(&mut lines) => match line {
                    Some(line) => self.progress(task_id, &line, groups),
                    None => lines = None,
                },
                changed = stop.changed(), if !stopped && stop_open => match changed {
                    Ok(()) if *stop.borrow() => {
                        stopped = true;
                        if let Some(group) = groups.child.group() {
                            stopping.start(group, STOP_GRACE, Reach::Group);
                        }
                    }
                    Ok(()) => {}
                    // Nobody can stop it any more; it runs to its own deadline.
                    Err(_) => stop_open = false,
                },
                // Past the grace the child's group is killed; its exit above ends the loop.
                _ = stopping.finished() => {}
            }
        }
        // The child is reaped; a Pi it failed to stop goes too.
        groups.pi.kill_now();
        stopped
    }

    fn progress(&self, task_id: &str, line: &str, groups: &DelegateGroups) {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            return;
        };
        match value["type"].as_str() {
            Some(STARTED_LINE) => {
                if let Some(group) = value["piPid"]
                    .as_u64()
                    .and_then(|pid| u32::try_from(pid).ok())
                    .and_then(ProcessGroup::of_leader)
                {
                    groups.pi.arm(group);
                }
            }
            Some(PROGRESS_LINE) => {
                let Some(board) = lock(&self.board).clone() else {
                    return;
                };
                let usage: Usage =
                    serde_json::from_value(value["usage"].clone()).unwrap_or_default();
                board.update(task_id, |row| {
                    row.turns = u32::try_from(value["turns"].as_u64().unwrap_or(0)).unwrap_or(0);
                    row.tool_uses =
                        usize::try_from(value["toolUses"].as_u64().unwrap_or(0)).unwrap_or(0);
                    row.usage = usage;
                    if let Some(tool) = value["lastTool"].as_str() {
                        row.last_activity = tool.to_string();
                    }
                });
            }
            _ => {}
        }
    }

    /// Adjudicates the ended child, records the outcome and delivers the notification.
    async fn finish(
        &self,
        launch: Launch,
        stopped: bool,
        outcome_tx: watch::Sender<Option<Outcome>>,
    ) {
        let task_id = launch.manifest.task_id.clone();
        let decided = {
            let (dir, manifest) = (launch.dir.clone(), launch.manifest.clone());
            blocking(move || Ok(record_outcome(&dir, &manifest, stopped))).await
        };
        let (outcome, verified) = match decided {
            Ok(decided) => decided,
            Err(err) => {
                tracing::warn!("delegate {task_id}: {}", err.describe());
                return;
            }
        };
        if let Some(board) = lock(&self.board).clone() {
            board.update(&task_id, |row| {
                row.status = match outcome.status {
                    ManifestState::Committed => RunStatus::Completed,
                    ManifestState::Cancelled => RunStatus::Stopped,
                    _ => RunStatus::Failed,
                };
                row.duration = Some(launch.started.elapsed());
                row.turns = outcome.turns;
                row.tool_uses = outcome.tool_calls;
                row.error = outcome
                    .error
                    .as_ref()
                    .map(|e| format!("{}: {}", e.code, e.message));
            });
            board.detach_control(&task_id);
        }
        outcome_tx.send_replace(Some(outcome.clone()));
        if !launch.notify {
            return;
        }
        let host = lock(&self.host).clone();
        let Some(host) = host else {
            tracing::info!("delegate {task_id} ended with no host to notify");
            return;
        };
        let cap = launch.manifest.limits.inline_answer_bytes;
        let (content, details) = notification(&launch, &outcome, verified.as_ref(), cap);
        let notice = AgentNotice {
            agent: launch.agent.clone(),
            id: task_id.clone(),
            custom_type: NOTIFICATION_TYPE.to_owned(),
            content,
            details,
            trigger_turn: launch.trigger,
        };
        if let Err(err) = host.deliver(notice).await {
            tracing::warn!("delegate {task_id}: notification not delivered: {err:#}");
        }
    }

    async fn result(
        &self,
        args: &Value,
        cancel: &CancelToken,
    ) -> Result<ToolOutput, DelegateError> {
        let Some(object) = args.as_object() else {
            return Err(DelegateError::invalid(
                "bg_result arguments must be an object",
            ));
        };
        if let Some(key) = object
            .keys()
            .find(|key| !["taskId", "delivery", "wait"].contains(&key.as_str()))
        {
            return Err(DelegateError::invalid(format!(
                "bg_result contains unsupported key(s): {key}"
            )));
        }
        let task_id = non_blank_str(object.get("taskId"))
            .ok_or_else(|| DelegateError::invalid("bg_result requires taskId"))?;
        let delivery = match object.get("delivery") {
            None | Some(Value::Null) => None,
            Some(value) => Some(value.as_str().and_then(Delivery::parse).ok_or_else(|| {
                DelegateError::invalid("bg_result delivery must be inline or artifact")
            })?),
        };
        let wait = match object.get("wait") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(wait)) => *wait,
            Some(_) => {
                return Err(DelegateError::invalid(
                    "bg_result wait must be true or false",
                ));
            }
        };
        let known = lock(&self.tasks)
            .get(task_id)
            .map(|task| (task.dir.clone(), task.outcome.clone()));
        let dir = match known {
            Some((dir, mut outcome)) => {
                if wait {
                    tokio::select! {
                        _ = outcome.wait_for(Option::is_some) => {}
                        () = cancel.cancelled() => {}
                    }
                }
                if outcome.borrow().is_none() {
                    return Ok(running_view(task_id, &dir));
                }
                dir
            }
            None => self.find_on_disk(task_id)?,
        };
        blocking(move || terminal_view(&dir, delivery)).await
    }

    /// A task of an earlier run of this workspace, by its directory.
    fn find_on_disk(&self, task_id: &str) -> Result<TaskDir, DelegateError> {
        let unknown = |why: &str| {
            DelegateError::new(
                DelegateErrorCode::TaskUnknown,
                format!("bg_result does not know task {task_id}: {why}"),
            )
        };
        let well_formed = task_id.len() == 33
            && task_id.starts_with('d')
            && task_id[1..].chars().all(|c| c.is_ascii_hexdigit());
        if !well_formed {
            return Err(unknown("not a delegate task id"));
        }
        let root = self.settings.workspace.join(".unipi").join("delegate");
        let runs = std::fs::read_dir(&root).map_err(|_| unknown("no delegate artifacts here"))?;
        runs.flatten()
            .map(|run| TaskDir::at(run.path().join(task_id)))
            .find(|dir| dir.file(OUTCOME_FILE).exists())
            .ok_or_else(|| unknown("no finished task with that id in this workspace"))
    }
}

/// Runs file work off the async workers (session files and answers may be megabytes).
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, DelegateError> + Send + 'static,
) -> Result<T, DelegateError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|err| {
            Err(DelegateError::new(
                DelegateErrorCode::ArtifactError,
                format!("the delegate's file work failed: {err}"),
            ))
        })
}

/// Adjudicates the ended child and records it: `outcome.json`, then the manifest's terminal
/// state. A failed write is logged; the outcome still reaches the agent.
fn record_outcome(
    dir: &TaskDir,
    manifest: &Manifest,
    stopped: bool,
) -> (Outcome, Option<ChildResult>) {
    let (outcome, verified) = adjudicate(dir, manifest, stopped);
    let task_id = &manifest.task_id;
    if let Err(err) = write_new_atomic(
        &dir.file(OUTCOME_FILE),
        &artifacts::canonical_line(&outcome),
    ) {
        tracing::warn!("delegate {task_id}: cannot write outcome.json: {err}");
    }
    if let Err(err) = dir.transition(outcome.status, outcome.error.clone(), None) {
        tracing::warn!("delegate {task_id}: {err:#}");
    }
    (outcome, verified)
}

/// Writes `seed.json` (exclusive), re-reads it to prove the bytes on disk are the hashed ones,
/// and creates the manifest.
fn persist(dir: &TaskDir, seed: &[u8], manifest: &Manifest) -> Result<(), DelegateError> {
    let path = dir.file(SEED_FILE);
    let persist_failed =
        |message: String| DelegateError::new(DelegateErrorCode::SeedPersistFailed, message);
    write_new_atomic(&path, seed)
        .map_err(|err| persist_failed(format!("cannot write {}: {err}", path.display())))?;
    let on_disk = std::fs::read(&path)
        .map_err(|err| persist_failed(format!("cannot re-read {}: {err}", path.display())))?;
    if sha256_hex(&on_disk) != manifest.seed_sha256 {
        return Err(persist_failed(format!(
            "{} does not hash to the seed just written",
            path.display()
        )));
    }
    dir.create_manifest(manifest)
}

fn spawn_child_process(
    settings: &DelegateSettings,
    dir: &TaskDir,
) -> anyhow::Result<(tokio::process::Child, ProcessGroup)> {
    let log = std::fs::File::create(dir.file(CHILD_LOG_FILE))?;
    let mut command = tokio::process::Command::new(&settings.child_program);
    command
        .arg(CHILD_SUBCOMMAND)
        .arg(&dir.dir)
        .current_dir(&settings.workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .kill_on_drop(false)
        .envs(settings.env.iter().map(|(k, v)| (k, v)));
    for name in [
        crate::bridge::env::SOCKET,
        crate::bridge::env::TOKEN,
        crate::bridge::env::AGENT,
    ] {
        command.env_remove(name);
    }
    Ok(command.spawn_grouped()?)
}

/// The process groups of one delegate: the child's, and its Pi's once the child reports it.
/// Dropped armed (the runtime is going away), each guard kills its group, so nothing outlives
/// the workbench.
struct DelegateGroups {
    child: GroupGuard,
    pi: GroupGuard,
}

impl DelegateGroups {
    /// The child is reaped: its group id may be reused, so neither is signalled again.
    fn disarm(&self) {
        self.child.disarm();
        self.pi.disarm();
    }
}

async fn next_line(
    lines: &mut Option<tokio::io::Lines<BufReader<tokio::process::ChildStdout>>>,
) -> Option<String> {
    match lines {
        Some(lines) => lines.next_line().await.ok().flatten(),
        None => std::future::pending().await,
    }
}

/// Reads what the child left and decides: a verified result commits; a terminal record or no
/// record fails (or is cancelled).
fn adjudicate(dir: &TaskDir, manifest: &Manifest, stopped: bool) -> (Outcome, Option<ChildResult>) {
    let mut outcome = Outcome {
        schema_version: OUTCOME_SCHEMA.to_string(),
        task_id: manifest.task_id.clone(),
        launch_nonce: manifest.launch_nonce.clone(),
        status: ManifestState::Failed,
        error: None,
        answer_bytes: None,
        answer_sha256: None,
        turns: 0,
        tool_calls: 0,
        usage: None,
        decided_at: now_ms(),
    };
    let record = |code: DelegateErrorCode, message: String| {
        Some(ErrorRecord {
            code: code.as_str().to_string(),
            message,
        })
    };
    if let Ok(bytes) = std::fs::read(dir.file(RESULT_FILE)) {
        match artifacts::verify_result(manifest, &bytes) {
            Ok(result) => {
                outcome.status = ManifestState::Committed;
                outcome.answer_bytes = Some(result.answer.byte_length);
                outcome.answer_sha256 = Some(result.answer.sha256.clone());
                outcome.turns = result.turns;
                outcome.tool_calls = result.tool_calls;
                outcome.usage = Some(result.usage);
                return (outcome, Some(result));
            }
            Err(err) => {
                outcome.error = record(err.code, err.message);
                return (outcome, None);
            }
        }
    }
    let terminal: Option<ChildTerminal> = artifacts::read_json(&dir.file(TERMINAL_FILE)).ok();
    match terminal {
        Some(terminal)
            if terminal.task_id == manifest.task_id
                && terminal.launch_nonce == manifest.launch_nonce =>
        {
            let code = DelegateErrorCode::parse(&terminal.code)
                .unwrap_or(DelegateErrorCode::ChildExitedWithoutCommit);
            outcome.status = if code == DelegateErrorCode::ChildCancelled {
                ManifestState::Cancelled
            } else {
                ManifestState::Failed
            };
            outcome.turns = terminal.turns;
            outcome.tool_calls = terminal.tool_calls;
            outcome.error = record(code, terminal.message);
        }
        _ if stopped => {
            outcome.status = ManifestState::Cancelled;
            outcome.error = record(
                DelegateErrorCode::ChildCancelled,
                "the delegate was stopped before it committed an answer".to_string(),
            );
        }
        _ => {
            outcome.error = record(
                DelegateErrorCode::ChildExitedWithoutCommit,
                "the child exited without committing result.json".to_string(),
            );
        }
    }
    (outcome, None)
}

/// A directory-name-safe form of a session id.
fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;
    use crate::bridge::{CancelToken, UpdateSender};

    fn model(provider: &str, id: &str, window: Option<u64>) -> ModelInfo {
        ModelInfo {
            provider: provider.into(),
            id: id.into(),
            context_window: window,
            ..ModelInfo::default()
        }
    }

    fn pair(a: &str, b: &str) -> (String, String) {
        (a.to_string(), b.to_string())
    }

    #[test]
    fn argument_table() {
        let cases = [
            (json!({"name": "a", "prompt": "q"}), None),
            (json!({"prompt": "q"}), Some("requires a non-empty name")),
            (
                json!({"name": "a", "prompt": "  "}),
                Some("requires a non-blank prompt"),
            ),
            (json!({"name": "a"}), Some("requires a non-blank prompt")),
            (
                json!({"name": "a", "prompt": "q", "x": 1, "y": 2}),
                Some("unsupported key(s): x, y"),
            ),
            (
                json!({"name": "a", "prompt": "q", "route": {"provider": "p"}}),
                Some("route.model"),
            ),
            (
                json!({"name": "a", "prompt": "q", "maxTurns": 0}),
                Some("maxTurns must be a positive"),
            ),
            (
                json!({"name": "a", "prompt": "q", "triggerOnCompletion": "no"}),
                Some("true or false"),
            ),
        ];
        for (args, want) in cases {
            let got = parse_delegate_args(&args);
            match want {
                None => assert!(got.is_ok(), "{args}: {got:?}"),
                Some(fragment) => {
                    let err = got.unwrap_err();
                    assert_eq!(err.code, DelegateErrorCode::InvalidArguments);
                    assert!(err.message.contains(fragment), "{args}: {}", err.message);
                }
            }
        }
        let parsed = parse_delegate_args(&json!({"name": " a ", "prompt": " q ",
            "route": {"provider": "p", "model": "m"}, "triggerOnCompletion": false}))
        .unwrap();
        assert_eq!(parsed.name, "a");
        assert_eq!(parsed.prompt, " q ", "the prompt is kept verbatim");
        assert_eq!(parsed.route, Some(pair("p", "m")));
        assert!(parsed.notify && !parsed.trigger);
    }

    #[test]
    fn route_table() {
        let models = [
            model("p", "m", Some(128_000)),
            model("p", "small", Some(8_000)),
            model("q", "m", None),
        ];
        let cases = [
            (
                Some(pair("p", "m")),
                None,
                Ok(("p", "m", RouteOrigin::Explicit)),
            ),
            (
                None,
                Some(pair("p", "m")),
                Ok(("p", "m", RouteOrigin::ParentCurrent)),
            ),
            // An explicit route wins over the current model, and is never substituted.
            (
                Some(pair("p", "gone")),
                Some(pair("p", "m")),
                Err(DelegateErrorCode::RouteUnresolved),
            ),
            (
                Some(pair("P", "m")),
                None,
                Err(DelegateErrorCode::RouteUnresolved),
            ),
            (None, None, Err(DelegateErrorCode::RouteUnresolved)),
            (
                None,
                Some(pair("x", "y")),
                Err(DelegateErrorCode::RouteUnresolved),
            ),
            (
                Some(pair("p", "small")),
                None,
                Err(DelegateErrorCode::RouteCapacityUnknown),
            ),
            (
                Some(pair("q", "m")),
                None,
                Err(DelegateErrorCode::RouteCapacityUnknown),
            ),
        ];
        for (requested, current, want) in cases {
            let got = resolve_route(requested.as_ref(), current.as_ref(), &models)
                .map(|r| (r.provider, r.model, r.origin))
                .map_err(|e| e.code);
            let want = want.map(|(p, m, o)| (p.to_string(), m.to_string(), o));
            assert_eq!(got, want, "{requested:?} / {current:?}");
        }
    }

    fn session_file(dir: &Path) -> PathBuf {
        let path = dir.join("parent.jsonl");
        let lines = [
            json!({"type": "session", "version": 3, "id": "s1"}),
            json!({"type": "message", "id": "a", "parentId": null,
                   "message": {"role": "user", "content": "what is in notes.txt?"}}),
        ];
        let text: Vec<String> = lines.iter().map(Value::to_string).collect();
        std::fs::write(&path, text.join("\n")).unwrap();
        path
    }

    fn module_in(
        workspace: &Path,
        models: Vec<ModelInfo>,
    ) -> (DelegateModule, mpsc::UnboundedReceiver<AgentNotice>) {
        let settings = DelegateSettings {
            workspace: workspace.to_path_buf(),
            pi: PiCommand::default(),
            env: vec![],
            child_program: PathBuf::from("/nonexistent/unipi-tui"),
            config: DelegateConfig::default().into(),
        };
        let module = DelegateModule::new(settings);
        let (tx, rx) = mpsc::unbounded_channel();
        module.attach_host(Arc::new(ChannelHost {
            models,
            notices: tx,
        }));
        (module, rx)
    }

    fn call(args: Value) -> ToolCall {
        ToolCall {
            agent: AgentId::main(),
            tool: DELEGATE_TOOL.to_string(),
            call_id: "c1".to_string(),
            args,
            updates: UpdateSender::detached(),
            cancel: CancelToken::never(),
        }
    }

    /// A host of a print run whose Pi cannot wait after its agent stops (Pi 0.7x `-p`).
    struct CannotWaitHost(Vec<ModelInfo>);

    impl DelegateHost for CannotWaitHost {
        fn models(&self, _agent: &AgentId) -> BoxFuture<'static, anyhow::Result<Vec<ModelInfo>>> {
            let models = self.0.clone();
            Box::pin(async move { Ok(models) })
        }
    }

    impl NoticeSink for CannotWaitHost {
        fn deliver(&self, _notice: AgentNotice) -> BoxFuture<'static, anyhow::Result<()>> {
            Box::pin(async { anyhow::bail!("nobody is there to wake") })
        }

        fn wake_reach(&self, _agent: &AgentId) -> WakeReach {
            WakeReach::Never
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_delegate_that_would_wake_a_run_that_cannot_wait_is_refused_in_words() {
        let workspace = tempfile::tempdir().unwrap();
        let file = session_file(workspace.path());
        let (module, _rx) = module_in(workspace.path(), vec![]);
        module.attach_host(Arc::new(CannotWaitHost(vec![model(
            "p",
            "m",
            Some(128_000),
        )])));
        module.set_session(
            &AgentId::main(),
            ParentSession {
                session_id: Some("s1".into()),
                session_file: Some(file),
                model: Some(pair("p", "m")),
            },
        );
        let err = module
            .call_tool(call(json!({"name": "a", "prompt": "q"})))
            .await
            .unwrap_err();
        assert!(
            err.message.contains("could not wake you"),
            "{}",
            err.message
        );
        assert!(
            err.message
                .contains("pass triggerOnCompletion: false and wait for its answer with bg_result"),
            "{}",
            err.message
        );
        assert!(
            !workspace.path().join(".unipi").exists(),
            "a directory was created"
        );
        // Without the wake it is not refused for it (it goes on, here to a child that cannot start).
        let err = module
            .call_tool(call(
                json!({"name": "a", "prompt": "q", "triggerOnCompletion": false}),
            ))
            .await
            .unwrap_err();
        assert!(
            err.message.starts_with(&format!(
                "[{}]",
                DelegateErrorCode::ChildSpawnFailed.as_str()
            )),
            "{}",
            err.message
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn preflight_refusals_create_nothing() {
        let workspace = tempfile::tempdir().unwrap();
        let file = session_file(workspace.path());
        let listed = vec![model("p", "m", Some(128_000))];
        let with_session = ParentSession {
            session_id: Some("s1".into()),
            session_file: Some(file.clone()),
            model: Some(pair("p", "m")),
        };
        let no_file = ParentSession {
            session_file: None,
            ..with_session.clone()
        };
        let cases = [
            (
                "route not listed",
                listed.clone(),
                with_session.clone(),
                json!({"name": "a", "prompt": "q", "route": {"provider": "p", "model": "other"}}),
                DelegateErrorCode::RouteUnresolved,
            ),
            (
                "empty registry",
                vec![],
                with_session.clone(),
                json!({"name": "a", "prompt": "q"}),
                DelegateErrorCode::RouteUnresolved,
            ),
            (
                "missing question",
                listed.clone(),
                with_session.clone(),
                json!({"name": "a"}),
                DelegateErrorCode::InvalidArguments,
            ),
            (
                "no session file",
                listed.clone(),
                no_file,
                json!({"name": "a", "prompt": "q"}),
                DelegateErrorCode::SeedProjectionFailed,
            ),
        ];
        for (name, models, session, args, want) in cases {
            let (module, _rx) = module_in(workspace.path(), models);
            module.set_session(&AgentId::main(), session);
            let err = module.call_tool(call(args)).await.unwrap_err();
            assert!(
                err.message.starts_with(&format!("[{}]", want.as_str())),
                "{name}: {}",
                err.message
            );
            assert!(err.message.contains("Child process created: no"), "{name}");
            assert!(
                !workspace.path().join(".unipi").exists(),
                "{name}: a directory was created"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_child_that_cannot_start_fails_with_its_evidence_kept() {
        let workspace = tempfile::tempdir().unwrap();
        let file = session_file(workspace.path());
        let (module, _rx) = module_in(workspace.path(), vec![model("p", "m", Some(128_000))]);
        module.set_session(
            &AgentId::main(),
            ParentSession {
                session_id: Some("s/1".into()),
                session_file: Some(file),
                model: Some(pair("p", "m")),
            },
        );
        let err = module
            .call_tool(call(json!({"name": "a", "prompt": "q"})))
            .await
            .unwrap_err();
        assert!(
            err.message.starts_with("[child_spawn_failed]"),
            "{}",
            err.message
        );
        let run = workspace
            .path()
            .join(format!(".unipi/delegate/s_1-{}", std::process::id()));
        let task = std::fs::read_dir(&run)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let manifest = TaskDir::at(&task).read_manifest().unwrap();
        assert_eq!(manifest.state, ManifestState::Failed);
        assert_eq!(manifest.error.unwrap().code, "child_spawn_failed");
    }

    #[test]
    fn session_start_and_model_select_update_the_parent_session() {
        use crate::bridge::{ModelSelect, SessionStart};
        let workspace = tempfile::tempdir().unwrap();
        let (module, _rx) = module_in(workspace.path(), vec![]);
        let agent = AgentId::main();
        module.observe(
            &agent,
            &PiEvent::SessionStart(Box::new(SessionStart {
                session_id: Some("s1".into()),
                session_file: Some("/x/s1.jsonl".into()),
                model: Some(model("p", "m", Some(1))),
                ..SessionStart::default()
            })),
        );
        module.observe(
            &agent,
            &PiEvent::ModelSelect(Box::new(ModelSelect {
                model: model("q", "n", None),
                ..ModelSelect::default()
            })),
        );
        let session = lock(&module.inner.sessions).get(&agent).cloned().unwrap();
        assert_eq!(
            session,
            ParentSession {
                session_id: Some("s1".into()),
                session_file: Some(PathBuf::from("/x/s1.jsonl")),
                model: Some(pair("q", "n")),
            }
        );
    }
}

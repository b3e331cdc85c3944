//! The `helpers` bridge module: the `spawn_helper`, `get_helper_result` and
//! `contact_supervisor` tools. It owns the decisions around a run — routing (management action →
//! workflow script → single helper), the preflight and the caps' counters, budgets, the
//! acceptance gate, truncation, the result the model reads, the follow-up notification of a
//! background run, the supervisor channel — and leaves the process to
//! [`HelperRunner`](super::runner::HelperRunner).
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
//! and where a background run's notification goes (to the [`NoticeSink`] — the
//! [`BridgeHost`] in the app, a channel in tests — exactly once).
//!
//! This file is the tool surface: the declarations Pi sees and the dispatch of a call. The rest
//! is split by responsibility: `config` (subagents.json, launch, settings), `preflight` (the
//! checks before a spawn), `service` (starting and finishing runs) with `actions`, `workflow` and
//! `supervisor` beside it, `ledger` (the counters, runs and questions behind one lock, reached
//! through methods), `results` (what the model reads), `notice` (messages outside a call) and
//! `names` (tool and message names).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::json;

use super::agents::THINKING_LEVELS;
use super::board::HelperBoard;
use super::service::{ChildBridge, HelperService};
#[cfg(test)]
use crate::bridge::AgentId;
use crate::bridge::{
    BridgeHost, MessageTypeSpec, Module, NoticeSink, ToolCall, ToolError, ToolOutput, ToolSpec,
};

#[cfg(test)]
pub(crate) use super::args::{ContextMode, SpawnArgs, parse_spawn_args};
pub use super::config::{CONFIG_FILE, HelperSettings, HelpersConfig, PiLaunch};
#[cfg(test)]
pub(crate) use super::names::CHILD_AGENT_PREFIX;
pub use super::names::{NOTIFICATION_TYPE, RESULT_TOOL, SPAWN_TOOL};
pub(crate) use super::names::{SUPERVISOR_MESSAGE_TYPE, SUPERVISOR_TOOL};
#[cfg(test)]
pub(crate) use super::preflight::{Admission, Counters, Refusal, preflight};
pub use super::results::spend;
#[cfg(test)]
pub(crate) use super::results::truncate_output;

/// The `helpers` module. Cheap to clone (shared state).
#[derive(Clone)]
pub struct HelpersModule {
    service: Arc<HelperService>,
}

impl HelpersModule {
    pub fn new(settings: HelperSettings) -> Self {
        Self {
            service: Arc::new(HelperService::new(settings)),
        }
    }

    /// The screen: `get_helper_result`'s `view` opens the dock there.
    pub(crate) fn attach_ui(&self, ui: crate::capability::Ui) {
        self.service.set_ui(ui);
    }

    /// Where background completions and supervisor messages go; without a sink they are only
    /// recorded.
    pub fn attach_sink(&self, sink: Arc<dyn NoticeSink>) {
        self.service.set_sink(sink);
    }

    /// Attaches the bridge: notices go through `host`, and every helper Pi loads the bridge
    /// extension at `extension` with its own token, so the workbench's tools reach it.
    pub fn attach_host(&self, host: BridgeHost, extension: PathBuf) {
        self.attach_sink(Arc::new(host.clone()));
        self.service.set_bridge(ChildBridge { host, extension });
    }

    /// Keeps the agents' session files (from `session_start` on `bus`), which `context: fork`
    /// copies, until the bus closes; background runs announce their end on `bus`.
    pub(crate) fn watch_sessions(&self, bus: &crate::bridge::EventBus) {
        self.service.set_bus(bus.clone());
        let mut events = bus.subscribe();
        let service = Arc::downgrade(&self.service);
        tokio::spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                match events.recv().await {
                    Ok(crate::bridge::BusEvent::Pi { agent, event }) => {
                        if let crate::bridge::PiEvent::SessionStart(start) = event.as_ref() {
                            let Some(service) = service.upgrade() else {
                                return;
                            };
                            let file = start.session_file.as_ref().map(PathBuf::from);
                            service.ledger().set_session_file(agent, file);
                        }
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                }
            }
        });
    }

    /// Follows model fusion's status on `bus`: its sidekick becomes the model of helpers that
    /// name none, and a warm pool of sidekick Pis serves them while fusion is on.
    pub(crate) fn follow_fusion(&self, bus: &crate::bridge::EventBus) {
        super::sidekick::follow(&self.service, bus);
    }

    /// The sidekick model helpers default to (fusion's, while it is on).
    pub fn sidekick_model(&self) -> Option<String> {
        self.service.pool().model()
    }

    /// Records `file` as `agent`'s session file (what [`HelpersModule::watch_sessions`] does).
    #[cfg(test)]
    pub(crate) fn set_session_file(&self, agent: AgentId, file: PathBuf) {
        self.service.ledger().set_session_file(agent, Some(file));
    }

    /// Writes the final state of runs an earlier workbench left `running` when it died (see
    /// `orphans`); returns their ids.
    pub(crate) fn finalize_orphaned_runs(&self) -> Vec<String> {
        super::orphans::finalize_orphans(&self.service.settings().runs_root)
    }

    /// Stops every live run and waits until each wrote its final state (bounded), then stops
    /// the warm processes: for every exit path of the workbench.
    pub async fn shutdown(&self) {
        self.service.shutdown().await;
        self.service.shutdown_pool().await;
    }

    /// The panic path: stops every live run and writes its final state now, and SIGKILLs the
    /// warm processes.
    pub fn kill_now(&self) {
        self.service.kill_now();
        self.service.pool().kill_now();
    }

    /// The board the module keeps current.
    pub fn board(&self) -> HelperBoard {
        self.service.settings().board.clone()
    }

    /// How helpers launch Pi.
    pub fn launch(&self) -> &PiLaunch {
        &self.service.settings().launch
    }
}

impl Module for HelpersModule {
    fn name(&self) -> &'static str {
        "helpers"
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let config = self.service.settings().config();
        let types: Vec<String> = self
            .service
            .settings()
            .catalog
            .iter()
            .filter(|agent| agent.enabled)
            .map(|agent| format!("{} ({})", agent.name, agent.description))
            .collect();
        // A call may legitimately last the whole run deadline; the host must not cut it first.
        let timeout = config.deadline + Duration::from_secs(60);
        vec![
            spawn_tool(&types, timeout),
            result_tool(timeout),
            supervisor_tool(config.supervisor_timeout + Duration::from_secs(30)),
        ]
    }

    fn message_types(&self) -> Vec<MessageTypeSpec> {
        vec![
            MessageTypeSpec::new(NOTIFICATION_TYPE, "Helper result"),
            MessageTypeSpec::new(SUPERVISOR_MESSAGE_TYPE, "Helper message"),
        ]
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let service = self.service.clone();
        Box::pin(async move {
            match call.tool.as_str() {
                SPAWN_TOOL => Ok(service.spawn_helper(call).await),
                RESULT_TOOL => service.result(&call.agent, &call.args, &call.cancel).await,
                SUPERVISOR_TOOL => service.contact_supervisor(call).await,
                other => Err(ToolError::new(format!(
                    "module `helpers` declares no tool `{other}`"
                ))),
            }
        })
    }
}

/// `spawn_helper`: a single helper, a workflow script or a management action.
fn spawn_tool(types: &[String], timeout: Duration) -> ToolSpec {
    let spec = ToolSpec::new(
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
    );
    let spec = task_params(spec);
    let spec = budget_params(spec);
    let spec = output_params(spec);
    action_params(spec)
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
        .timeout(timeout)
}

/// What the helper is and does: its type, task, label, mode, context, model and thinking.
fn task_params(spec: ToolSpec) -> ToolSpec {
    spec
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
}

/// The run's budgets.
fn budget_params(spec: ToolSpec) -> ToolSpec {
    spec.integer_param(
        "max_turns",
        "Turn budget: steered to answer at the limit, stopped after a grace",
        false,
    )
    .integer_param("max_tool_uses", "Tool-call budget", false)
    .integer_param("max_tokens", "Token budget (input + output)", false)
    .number_param("max_cost", "Cost budget in USD", false)
}

/// How the answer is accepted and cut.
fn output_params(spec: ToolSpec) -> ToolSpec {
    spec.string_param(
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
}

/// A workflow script, or a management action with its arguments.
fn action_params(spec: ToolSpec) -> ToolSpec {
    spec.param(
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
    .string_param(
        "message",
        "resume: the new message; reply: the answer",
        false,
    )
    .integer_param("amount", "grant-spawn-budget: how many more spawns", false)
}

/// `get_helper_result`.
fn result_tool(timeout: Duration) -> ToolSpec {
    ToolSpec::new(
        RESULT_TOOL,
        "Helper result",
        "Read a helper run's result by its run id; wait: true waits for a running one.",
    )
    .string_param("id", "The run id spawn_helper returned", false)
    .string_param(
        "agent_id",
        "The same run id under the original Unipi's name (give id or agent_id)",
        false,
    )
    .boolean_param("wait", "Wait until the run ends (default false)", false)
    .boolean_param(
        "view",
        "Also show the run's transcript to the user in the workbench's dock (default false)",
        false,
    )
    .timeout(timeout)
}

/// `contact_supervisor`, for helper agents.
fn supervisor_tool(timeout: Duration) -> ToolSpec {
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
    .timeout(timeout)
}

#[cfg(test)]
#[path = "module_tests.rs"]
mod tests;

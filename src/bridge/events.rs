//! What the bridge tells the app: [`BridgeEvent`]s on the host's channel, with Pi's lifecycle as
//! the typed [`PiEvent`]. The types cover what the workbench draws and decides on (footer state,
//! usage and cost, context fill, "user is active"); anything else Pi reports arrives as
//! [`PiEvent::Other`] so a later consumer needs no protocol change, only a match arm.
//!
//! The payload field names are the wire's (snake_case, chosen by the extension), so each event is
//! a plain serde decode of the `data` object the extension sent.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::AgentId;

/// A message from the bridge host to the app.
#[derive(Debug)]
pub enum BridgeEvent {
    /// A Pi process authenticated (again, after `/reload`, `/new`, `/resume`, `/fork`).
    Connected {
        agent: AgentId,
        pi_version: String,
        protocol: u32,
        capabilities: Capabilities,
    },
    /// A Pi process's connection ended.
    Disconnected {
        agent: AgentId,
        reason: DisconnectReason,
    },
    /// Something happened in a Pi process.
    Pi { agent: AgentId, event: PiEvent },
    /// A refused connection, a bad line, a module panic: worth a log line or a notice, never
    /// fatal. `agent` is known when the offender had authenticated (or presented a valid token).
    Fault {
        agent: Option<AgentId>,
        message: String,
    },
    /// A `/unipi:*` command was answered (queued before Pi gets the answer): a run without a
    /// screen, where Pi shows no notices, says it on stderr.
    CommandAnswered {
        agent: AgentId,
        name: String,
        reply: CommandReply,
    },
}

/// How the app answers a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandReply {
    /// Handled (e.g. a view opened); Pi shows nothing.
    Done,
    /// Handled; Pi shows this notice.
    Notify { message: String, level: NotifyLevel },
    /// Not handled; Pi shows this as an error.
    Failed { message: String },
}

/// Pi's notification levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NotifyLevel {
    Info,
    Warning,
    Error,
}

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DisconnectReason {
    /// The extension said goodbye on Pi's `session_shutdown`, with Pi's reason: `quit`, or
    /// `reload` / `new` / `resume` / `fork`, after which the new extension instance reconnects.
    Goodbye(String),
    /// The socket closed without a goodbye (Pi crashed or was killed).
    Closed,
    /// Reading the socket failed.
    Error(String),
    /// The host is shutting down.
    HostShutdown,
    /// The agent was unregistered.
    Revoked,
}

impl DisconnectReason {
    /// Whether Pi is expected to reconnect right away (its runtime is being replaced).
    pub fn expects_reconnect(&self) -> bool {
        matches!(self, Self::Goodbye(reason) if reason != "quit")
    }
}

impl std::fmt::Display for DisconnectReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Goodbye(reason) => write!(f, "Pi closed the bridge ({reason})"),
            Self::Closed => f.write_str("the bridge connection closed without a goodbye"),
            Self::Error(err) => write!(f, "the bridge connection failed: {err}"),
            Self::HostShutdown => f.write_str("the workbench is shutting down"),
            Self::Revoked => f.write_str("the agent was unregistered"),
        }
    }
}

/// What the extension found at run time in the Pi that loaded it (not inferred from versions).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Capabilities {
    /// Optional events this Pi emits (e.g. `agent_settled`, `session_compact_failed`).
    pub events: Vec<String>,
    /// Methods of Pi's `ExtensionAPI` object.
    pub methods: Vec<String>,
    /// Methods of `ctx.ui`.
    pub ui: Vec<String>,
    /// Whether tools carry an `exposure` (1.x).
    pub tool_exposure: bool,
    /// Pi's run mode (`tui`, `rpc`, `json`, `print`) when Pi says.
    pub mode: Option<String>,
    /// Whether Pi has a UI (`ctx.hasUI`): false in print and JSON mode, which is how a Pi that
    /// names no mode (0.7x) tells them from its TUI and RPC mode.
    pub has_ui: Option<bool>,
}

impl Capabilities {
    pub fn has_event(&self, name: &str) -> bool {
        self.events.iter().any(|event| event == name)
    }

    pub fn has_method(&self, name: &str) -> bool {
        self.methods.iter().any(|method| method == name)
    }

    pub fn has_ui(&self, name: &str) -> bool {
        self.ui.iter().any(|method| method == name)
    }
}

/// Pi's lifecycle, as far as the workbench cares.
#[derive(Debug, Clone, PartialEq)]
pub enum PiEvent {
    /// A session started, loaded or was replaced (`reason`: startup, reload, new, resume, fork).
    /// (Boxed: it is the largest payload, and events are moved through channels.)
    SessionStart(Box<SessionStart>),
    SessionShutdown(SessionShutdown),
    /// The session's display name changed (`/name`).
    SessionName {
        name: Option<String>,
    },
    /// A low-level agent run began.
    AgentStart,
    /// A low-level run ended; Pi may still retry or continue.
    AgentEnd,
    /// Pi is idle and will not continue by itself. `synthetic`: this Pi has no `agent_settled`
    /// event, and the extension sent this right after `agent_end` instead.
    AgentSettled {
        aborted: bool,
        synthetic: bool,
    },
    TurnEnd(TurnEnd),
    /// An assistant message finished (one model response), with its usage and cost.
    MessageEnd(MessageEnd),
    ToolExecutionStart(ToolExecution),
    ToolExecutionEnd(ToolExecution),
    ModelSelect(Box<ModelSelect>),
    ThinkingLevel {
        level: String,
        previous: Option<String>,
    },
    CompactionStart {
        reason: Option<String>,
    },
    CompactionEnd(CompactionEnd),
    /// The user submitted input (typed, RPC or from an extension).
    UserInput(UserInput),
    /// Whether messages are queued (steering / follow-up) behind the running turn.
    QueueUpdate {
        pending: bool,
    },
    /// What the model's stream is doing now (sent when it changes): `thinking`, `writing`,
    /// `calling_tool`.
    StreamPhase {
        phase: String,
    },
    /// Pi's footer data as the extension's (empty) footer sees it: other extensions' statuses and
    /// whether Pi compacts by itself. Sent when it changes.
    FooterStatus(FooterStatus),
    /// Any other forwarded event, untyped.
    Other {
        name: String,
        data: Value,
    },
}

impl PiEvent {
    /// Decodes an `event` message. A known name with a payload that does not decode is an
    /// error; the caller keeps it as [`PiEvent::Other`].
    pub(crate) fn from_wire(name: &str, data: &Value) -> Result<Self, serde_json::Error> {
        use payload::{Name, Phase, Queue, Reason, Settled, Thinking, decode};
        Ok(match name {
            "session_start" => Self::SessionStart(Box::new(decode(data)?)),
            "session_shutdown" => Self::SessionShutdown(decode(data)?),
            "session_info_changed" => {
                let Name { name } = decode(data)?;
                Self::SessionName { name }
            }
            "agent_start" => Self::AgentStart,
            "agent_end" => Self::AgentEnd,
            "agent_settled" => {
                let Settled { aborted, synthetic } = decode(data)?;
                Self::AgentSettled { aborted, synthetic }
            }
            "turn_end" => Self::TurnEnd(decode(data)?),
            "message_end" => Self::MessageEnd(decode(data)?),
            "tool_execution_start" => Self::ToolExecutionStart(decode(data)?),
            "tool_execution_end" => Self::ToolExecutionEnd(decode(data)?),
            "model_select" => Self::ModelSelect(Box::new(decode(data)?)),
            "thinking_level_select" => {
                let Thinking { level, previous } = decode(data)?;
                Self::ThinkingLevel { level, previous }
            }
            "compaction_start" => {
                let Reason { reason } = decode(data)?;
                Self::CompactionStart { reason }
            }
            "compaction_end" => Self::CompactionEnd(decode(data)?),
            "input" => Self::UserInput(decode(data)?),
            "queue_update" => {
                let Queue { pending } = decode(data)?;
                Self::QueueUpdate { pending }
            }
            "stream_phase" => {
                let Phase { phase } = decode(data)?;
                Self::StreamPhase { phase }
            }
            "footer_status" => Self::FooterStatus(decode(data)?),
            other => Self::Other {
                name: other.to_string(),
                data: data.clone(),
            },
        })
    }

    /// The wire name of the event.
    pub fn name(&self) -> &str {
        match self {
            Self::SessionStart(_) => "session_start",
            Self::SessionShutdown(_) => "session_shutdown",
            Self::SessionName { .. } => "session_info_changed",
            Self::AgentStart => "agent_start",
            Self::AgentEnd => "agent_end",
            Self::AgentSettled { .. } => "agent_settled",
            Self::TurnEnd(_) => "turn_end",
            Self::MessageEnd(_) => "message_end",
            Self::ToolExecutionStart(_) => "tool_execution_start",
            Self::ToolExecutionEnd(_) => "tool_execution_end",
            Self::ModelSelect(_) => "model_select",
            Self::ThinkingLevel { .. } => "thinking_level_select",
            Self::CompactionStart { .. } => "compaction_start",
            Self::CompactionEnd(_) => "compaction_end",
            Self::UserInput(_) => "input",
            Self::QueueUpdate { .. } => "queue_update",
            Self::StreamPhase { .. } => "stream_phase",
            Self::FooterStatus(_) => "footer_status",
            Self::Other { name, .. } => name,
        }
    }
}

/// The payloads of the events that carry a few fields of their own, as the extension sends them.
mod payload {
    use serde::Deserialize;
    use serde_json::Value;

    #[derive(Deserialize)]
    pub(super) struct Settled {
        #[serde(default)]
        pub(super) aborted: bool,
        #[serde(default)]
        pub(super) synthetic: bool,
    }
    #[derive(Deserialize)]
    pub(super) struct Name {
        #[serde(default)]
        pub(super) name: Option<String>,
    }
    #[derive(Deserialize)]
    pub(super) struct Thinking {
        pub(super) level: String,
        #[serde(default)]
        pub(super) previous: Option<String>,
    }
    #[derive(Deserialize)]
    pub(super) struct Reason {
        #[serde(default)]
        pub(super) reason: Option<String>,
    }
    #[derive(Deserialize)]
    pub(super) struct Queue {
        pub(super) pending: bool,
    }
    #[derive(Deserialize)]
    pub(super) struct Phase {
        pub(super) phase: String,
    }
    pub(super) fn decode<T: serde::de::DeserializeOwned>(
        data: &Value,
    ) -> Result<T, serde_json::Error> {
        // Events without a payload may come with `data` absent or null.
        if data.is_null() {
            T::deserialize(&Value::Object(serde_json::Map::new()))
        } else {
            T::deserialize(data)
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SessionStart {
    pub reason: String,
    pub previous_session_file: Option<String>,
    pub session_id: Option<String>,
    /// `None` for an in-memory session (`--no-session`).
    pub session_file: Option<String>,
    pub session_name: Option<String>,
    pub cwd: Option<String>,
    /// The model at start (Pi emits no `model_select` when it restores one).
    pub model: Option<ModelInfo>,
    pub thinking_level: Option<String>,
    pub context_usage: Option<ContextUsage>,
}

/// Pi's footer data: other extensions' `ctx.ui.setStatus` texts (by key, as Pi orders them; the
/// extension strips colours and line breaks) and Pi's auto-compaction setting (`None`: this Pi
/// does not say).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct FooterStatus {
    pub statuses: Vec<ExtensionStatus>,
    pub auto_compaction: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ExtensionStatus {
    pub key: String,
    pub text: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SessionShutdown {
    /// quit, reload, new, resume, fork.
    pub reason: String,
    pub target_session_file: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct TurnEnd {
    pub turn_index: u64,
    /// The turn's assistant message usage, when it had one.
    pub usage: Option<Usage>,
    /// `ctx.getContextUsage()` at the end of the turn.
    pub context_usage: Option<ContextUsage>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct MessageEnd {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub usage: Usage,
    /// stop, length, toolUse, error, aborted.
    pub stop_reason: Option<String>,
    pub error_message: Option<String>,
    /// The message's text (its text blocks joined), at most its last 64 KiB; `None` from an
    /// extension that does not send it.
    pub text: Option<String>,
}

/// Token counts and cost of one model response (cost in the provider's currency, usually USD).
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total_tokens: u64,
    pub cost: f64,
}

/// How full the context window is. `tokens` and `percent` are unknown right after a
/// compaction until the next response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ContextUsage {
    pub tokens: Option<u64>,
    pub context_window: u64,
    /// 0–100.
    pub percent: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ToolExecution {
    pub tool: String,
    pub call_id: String,
    /// Only meaningful on `tool_execution_end`.
    pub is_error: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct ModelInfo {
    pub provider: String,
    pub id: String,
    pub name: Option<String>,
    pub context_window: Option<u64>,
    pub max_tokens: Option<u64>,
    pub reasoning: bool,
    /// It takes images (Pi's `input` lists `image`).
    pub vision: bool,
    /// Pi has credentials for its provider (`None` where the answer does not say: events, or a
    /// Pi without `hasConfiguredAuth`).
    pub has_auth: Option<bool>,
    /// Prices per million tokens.
    pub cost: Option<ModelCost>,
}

impl ModelInfo {
    /// `provider/id`, the form `--model` and the presets use.
    pub fn qualified(&self) -> String {
        format!("{}/{}", self.provider, self.id)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct ModelCost {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ModelSelect {
    pub model: ModelInfo,
    pub previous: Option<ModelInfo>,
    /// set, cycle, restore.
    pub source: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CompactionEnd {
    /// manual, threshold, overflow (Pi 1.x).
    pub reason: Option<String>,
    pub aborted: bool,
    /// Set when compaction failed (only Pi lines with `session_compact_failed` report failures).
    pub error: Option<String>,
    pub from_extension: bool,
    pub tokens_before: Option<u64>,
    /// `ctx.getContextUsage()` once the compaction is written (a successful one only).
    pub context_usage: Option<ContextUsage>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct UserInput {
    /// The text as typed (cut to 64 KiB by the extension; `truncated` says so).
    pub text: String,
    /// interactive, rpc, extension.
    pub source: Option<String>,
    /// steer / followUp when typed while Pi was working (Pi 1.x).
    pub streaming_behavior: Option<String>,
    pub truncated: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_each_typed_event() -> Result<(), serde_json::Error> {
        // (wire name, data, expected)
        let cases = vec![
            ("agent_start", Value::Null, PiEvent::AgentStart),
            (
                "agent_settled",
                json!({"aborted": true}),
                PiEvent::AgentSettled {
                    aborted: true,
                    synthetic: false,
                },
            ),
            (
                "session_shutdown",
                json!({"reason": "reload"}),
                PiEvent::SessionShutdown(SessionShutdown {
                    reason: "reload".into(),
                    target_session_file: None,
                }),
            ),
            (
                "turn_end",
                json!({"turn_index": 2, "context_usage": {"tokens": 18, "context_window": 128000, "percent": 0.01}}),
                PiEvent::TurnEnd(TurnEnd {
                    turn_index: 2,
                    usage: None,
                    context_usage: Some(ContextUsage {
                        tokens: Some(18),
                        context_window: 128_000,
                        percent: Some(0.01),
                    }),
                }),
            ),
            (
                "message_end",
                json!({"provider": "p", "model": "m", "stop_reason": "stop",
                       "usage": {"input": 10, "output": 5, "cost": 0.5}, "text": "all done"}),
                PiEvent::MessageEnd(MessageEnd {
                    provider: Some("p".into()),
                    model: Some("m".into()),
                    usage: Usage {
                        input: 10,
                        output: 5,
                        cost: 0.5,
                        ..Usage::default()
                    },
                    stop_reason: Some("stop".into()),
                    error_message: None,
                    text: Some("all done".into()),
                }),
            ),
            (
                "tool_execution_end",
                json!({"tool": "bash", "call_id": "c1", "is_error": true}),
                PiEvent::ToolExecutionEnd(ToolExecution {
                    tool: "bash".into(),
                    call_id: "c1".into(),
                    is_error: true,
                }),
            ),
            (
                "thinking_level_select",
                json!({"level": "high", "previous": "off"}),
                PiEvent::ThinkingLevel {
                    level: "high".into(),
                    previous: Some("off".into()),
                },
            ),
            (
                "queue_update",
                json!({"pending": true}),
                PiEvent::QueueUpdate { pending: true },
            ),
            (
                "turn_start",
                json!({"turn_index": 0}),
                PiEvent::Other {
                    name: "turn_start".into(),
                    data: json!({"turn_index": 0}),
                },
            ),
        ];
        for (name, data, expected) in cases {
            let event = PiEvent::from_wire(name, &data)?;
            assert_eq!(event, expected, "{name}");
            assert_eq!(event.name(), name);
        }
        Ok(())
    }

    #[test]
    fn a_known_event_with_a_bad_payload_is_an_error() {
        assert!(PiEvent::from_wire("thinking_level_select", &json!({"level": 3})).is_err());
        assert!(PiEvent::from_wire("queue_update", &json!({})).is_err());
    }

    #[test]
    fn capabilities_decode_leniently() -> Result<(), serde_json::Error> {
        let caps: Capabilities = serde_json::from_value(json!({
            "events": ["agent_settled"], "ui": ["setFooter"], "tool_exposure": true, "extra": 1
        }))?;
        assert!(caps.has_event("agent_settled") && !caps.has_event("agent_before_settle"));
        assert!(caps.has_ui("setFooter") && caps.tool_exposure && caps.methods.is_empty());
        Ok(())
    }

    #[test]
    fn only_a_runtime_replacement_expects_a_reconnect() {
        assert!(DisconnectReason::Goodbye("reload".into()).expects_reconnect());
        assert!(!DisconnectReason::Goodbye("quit".into()).expects_reconnect());
        assert!(!DisconnectReason::Closed.expects_reconnect());
    }
}

//! The bridge: the workbench's side of the private socket that Pi's bridge extension connects to.
//!
//! Pi in a PTY emits terminal bytes, not events, so every Pi process the workbench starts loads a
//! small, generic TypeScript extension (`bridge/extension.ts`, embedded here and written to the
//! cache by [`extension_file`]) that connects back over a Unix socket and speaks newline-delimited
//! JSON (`docs/bridge-protocol.md`). Everything with meaning lives on this side: a capability is a
//! Rust [`Module`] that declares tools in a [`Registry`], with the `/unipi:*` [`Command`]s listed
//! under it; the [`BridgeHost`] declares them to each connected Pi, runs tool calls against the
//! modules and commands by name against their handlers (with
//! timeouts, cancellation, streaming updates and panic isolation), forwards Pi's lifecycle events
//! to the app as typed [`BridgeEvent`]s and onto the [`EventBus`], and carries the app's calls
//! into Pi ([`HostCall`]).
//!
//! Shape: one accept loop, one task per connection (plus a writer task), one task per tool call.
//! The connection tasks never wait on the app loop except to deliver events, so a busy UI slows
//! Pi's event stream down instead of losing it, and a misbehaving client only ever loses its own
//! connection.

mod alert;
mod bus;
mod command;
mod connection;
mod events;
mod extension;
mod host;
mod host_state;
mod info;
pub(crate) mod log_limit;
mod module;
mod notice;
pub mod protocol;
mod registry;
mod runtime_dir;
mod specs;
mod tools;
mod wakes;

use std::fmt;
use std::sync::Arc;

pub use alert::{AlertPriority, Alerting};
pub use bus::{BusEvent, BusMessage, EventBus};
pub use command::{Command, CommandCall};
pub use events::{
    BridgeEvent, Capabilities, CommandReply, CompactionEnd, ContextUsage, DisconnectReason,
    ExtensionStatus, FooterStatus, MessageEnd, ModelCost, ModelInfo, ModelSelect, NotifyLevel,
    PiEvent, SessionShutdown, SessionStart, ToolExecution, TurnEnd, Usage, UserInput,
};
pub use extension::extension_file;
pub use host::{BridgeError, BridgeHost, DeliverAs, HostCall, PathRule};
pub use host_state::{AgentInfo, HostOptions};
pub use info::InfoModule;
pub use module::{
    CancelHandle, CancelToken, Card, CardTint, CommandSpec, Completion, ContentBlock, HookCall,
    MessageTypeSpec, Module, Refusal, ToolCall, ToolError, ToolOutput, ToolSpec, UpdateSender,
};
pub use notice::{AgentNotice, ChannelSink, NoticeSink, send_to};
pub use registry::{ModuleInfo, ModuleStatus, Registry, RegistryError};
pub use wakes::{HEADLESS_WAIT_LIMIT, WakePromise, WakeReach, Wakes};

/// Which Pi process a message belongs to: `main` for the Pi in the pane, a helper's own id for
/// each helper agent. Cheap to clone.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentId(Arc<str>);

impl AgentId {
    pub fn new(id: impl Into<String>) -> Self {
        Self(Arc::from(id.into()))
    }

    /// The Pi running in the workbench's pane.
    pub fn main() -> Self {
        Self::new("main")
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AgentId({})", self.0)
    }
}

/// The environment variables the extension reads (set per Pi process by
/// [`BridgeHost::register_agent`]).
pub mod env {
    /// Path of the host's Unix socket.
    pub const SOCKET: &str = "UNIPI_TUI_SOCKET";
    /// The secret this Pi process authenticates with.
    pub const TOKEN: &str = "UNIPI_TUI_TOKEN";
    /// The agent id, for the extension's own messages (the host goes by the token).
    pub const AGENT: &str = "UNIPI_TUI_AGENT";
}

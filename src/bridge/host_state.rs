//! The bridge host's state that its connection tasks share: the options, the module registry,
//! the app's event channel, and one entry per agent (its token, the process bound to it, its
//! live connection, what it said in its last `hello`). It sits in a file of its own so the host,
//! the connections and the tool calls all depend on it rather than on each other.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{Notify, mpsc, oneshot};

use super::AgentId;
use super::events::{BridgeEvent, Capabilities};
use super::log_limit::{Admit, RefusalLog, clip};
use super::protocol::ErrorMsg;
use super::registry::Registry;
use super::wakes::Wakes;
use crate::sys::lock;

/// Timeouts and choices of a host. The defaults suit the workbench; tests shorten them.
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// How long a new connection may take to send `hello`.
    pub hello_timeout: Duration,
    /// How long a tool call may run unless its [`ToolSpec`](super::ToolSpec) says otherwise.
    pub tool_timeout: Duration,
    /// How long a cancelled tool call may take to wind down before it is dropped.
    pub cancel_grace: Duration,
    /// How long the app may take to answer a `/unipi:*` command.
    pub command_timeout: Duration,
    /// How long a module may take to answer one of Pi's hooks (Pi waits meanwhile).
    pub hook_timeout: Duration,
    /// Ask each Pi to replace its footer with an empty one (the workbench draws its own).
    pub hide_footer: bool,
    /// Where the runtime directory goes (default: the user's private runtime directory).
    pub runtime_base: Option<PathBuf>,
    /// The most connections held open before their `hello`; more are closed at once, so a
    /// flood of silent connections costs neither file descriptors nor memory.
    pub max_unauthenticated: usize,
    /// Card tint → `#rrggbb` from the workbench theme (see `WelcomeOptions::card_colors`).
    pub card_colors: std::collections::BTreeMap<String, String>,
}

impl Default for HostOptions {
    fn default() -> Self {
        Self {
            hello_timeout: Duration::from_secs(5),
            tool_timeout: Duration::from_secs(120),
            cancel_grace: Duration::from_secs(5),
            command_timeout: Duration::from_secs(10),
            hook_timeout: Duration::from_secs(60),
            hide_footer: true,
            runtime_base: None,
            max_unauthenticated: 64,
            card_colors: std::collections::BTreeMap::new(),
        }
    }
}

/// What the host knows about an agent's Pi.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentInfo {
    pub agent: AgentId,
    pub pi_version: String,
    pub protocol: u32,
    pub capabilities: Capabilities,
    /// Whether it has a live connection now (the rest is from its last connection).
    pub connected: bool,
}

/// What the host and its connection tasks share.
#[derive(Debug)]
pub(crate) struct HostState {
    pub(crate) registry: Arc<Registry>,
    pub(crate) events: mpsc::Sender<BridgeEvent>,
    pub(crate) options: HostOptions,
    pub(crate) agents: Mutex<HashMap<AgentId, AgentEntry>>,
    /// Which refused connections go into the log.
    pub(crate) refusals: RefusalLog,
    /// The wake-ups promised to each agent (a print or JSON run's settle waits for them).
    pub(crate) wakes: Wakes,
    next_call_id: AtomicU64,
}

/// One agent: its current token, the process that used it, and its live connection.
#[derive(Debug, Default)]
pub(crate) struct AgentEntry {
    pub(crate) token: String,
    /// The pid of the first process that authenticated with `token`.
    pub(crate) bound_pid: Option<i32>,
    pub(crate) connection: Option<ConnectionHandle>,
    /// From the latest authenticated connection.
    pub(crate) last: Option<AgentInfo>,
}

impl AgentEntry {
    pub(crate) fn info(&self) -> Option<AgentInfo> {
        self.last.clone().map(|info| AgentInfo {
            connected: self.connection.is_some(),
            ..info
        })
    }
}

/// What a host call's waiter receives: the value, or the extension's error.
pub(crate) type CallAnswer = Result<Value, ErrorMsg>;
/// Host calls waiting for their answer, by call id.
pub(crate) type PendingCalls = Arc<Mutex<HashMap<u64, oneshot::Sender<CallAnswer>>>>;

/// The handle of an authenticated connection.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionHandle {
    pub(crate) conn_id: u64,
    /// Lines to the extension (the connection's writer task drains it).
    pub(crate) out: mpsc::Sender<String>,
    pub(crate) pending: PendingCalls,
    /// Notified to close the connection (the agent was unregistered).
    pub(crate) kill: Arc<Notify>,
}

impl ConnectionHandle {
    pub(crate) fn pending_calls(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<CallAnswer>>> {
        lock(&self.pending)
    }
}

impl HostState {
    pub(crate) fn new(
        registry: Arc<Registry>,
        events: mpsc::Sender<BridgeEvent>,
        options: HostOptions,
    ) -> Self {
        Self {
            registry,
            events,
            options,
            agents: Mutex::new(HashMap::new()),
            refusals: RefusalLog::default(),
            wakes: Wakes::default(),
            next_call_id: AtomicU64::new(1),
        }
    }

    /// A fresh id for a host call.
    pub(crate) fn next_call_id(&self) -> u64 {
        self.next_call_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn lock_agents(&self) -> std::sync::MutexGuard<'_, HashMap<AgentId, AgentEntry>> {
        lock(&self.agents)
    }

    pub(crate) fn connection_of(&self, agent: &AgentId) -> Option<ConnectionHandle> {
        self.lock_agents()
            .get(agent)
            .and_then(|entry| entry.connection.clone())
    }

    /// A fault for the app's log; never waits (a flood of bad clients must not stall the host).
    pub(crate) fn fault(&self, agent: Option<AgentId>, message: String) {
        let _ = self.events.try_send(BridgeEvent::Fault { agent, message });
    }

    /// Logs (and reports as a fault) a refused connection, `why` cut to a log line's size — at
    /// most a few per window, saying how many were left out before ([`RefusalLog`]).
    pub(crate) fn refused(&self, conn: u64, pid: Option<i32>, agent: Option<AgentId>, why: &str) {
        let Admit::Log { left_out } = self.refusals.admit(std::time::Instant::now()) else {
            return;
        };
        if left_out > 0 {
            tracing::warn!("bridge: {left_out} more refused connections were not logged");
        }
        let why = clip(why);
        tracing::warn!(conn, pid = ?pid, "bridge refused a connection: {why}");
        self.fault(agent, format!("bridge refused a connection: {why}"));
    }
}

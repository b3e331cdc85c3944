//! The shared set of MCP servers: per server a state (starting → running → stopped | error), its
//! tools after the config's filters, its last error and stderr tail; tool calls routed to the
//! right connection; events for the bridge module, overlay and footer. Each server lives in its
//! own task (start, supervise, reconnect), so one slow or broken server never holds up another;
//! a generation number per server lets stop/restart supersede a task without racing it. All
//! rmcp and process handling is in [`super::client`]; this file is the map, the states and the
//! events.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, bail};
use futures_util::future::join_all;
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;

pub use super::call::{CallOutcome, McpContent, ProgressUpdate};
use super::client::{CallFailure, Connection, ListedTool, StderrTail};
use super::config::{McpConfig, ServerConfig};
use super::naming::named_tool;
use crate::sys::{Changed, lock};

/// A server's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerStatus {
    Starting,
    Running,
    Stopped,
    Error,
}

/// One tool a server offers, with the name it is bridged under.
#[derive(Debug, Clone, PartialEq)]
pub struct McpToolInfo {
    pub server: String,
    pub name: String,
    pub bridged_name: String,
    pub description: String,
    pub input_schema: serde_json::Value,
}

/// What the overlay and footer show about one server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSnapshot {
    pub name: String,
    /// The config file that defined it.
    pub source: PathBuf,
    pub status: ServerStatus,
    /// After the enabled/disabled filters, sorted by name; empty unless running.
    pub tools: Vec<McpToolInfo>,
    /// Why it is in Error (start failure, start-up timeout, unexpected exit).
    pub error: Option<String>,
    /// The current (or last) process's stderr; over 10,000 chars cut to the last 5,000.
    pub stderr_tail: String,
    /// A running stdio server's pid, which is also its process group id (every process it
    /// started, `npx` children included, has this pgid unless it left the group itself).
    pub pid: Option<u32>,
    /// `command args…` or the URL.
    pub target: String,
    /// Manual restarts plus automatic reconnect attempts.
    pub restarts: u32,
}

/// Changes subscribers hear about.
#[derive(Debug, Clone, PartialEq)]
pub enum McpEvent {
    ServerStarted { server: String, tools: usize },
    ServerError { server: String, error: String },
    ServerStopped { server: String },
    ToolsChanged { server: String },
}

/// Why a call produced no result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpCallError {
    #[error("MCP server '{0}' is not configured")]
    UnknownServer(String),
    #[error("MCP server '{server}' is not running ({status:?})")]
    NotRunning {
        server: String,
        status: ServerStatus,
    },
    #[error("MCP tool '{tool}' on server '{server}' timed out after {after:?}")]
    Timeout {
        server: String,
        tool: String,
        after: Duration,
    },
    #[error("MCP server '{server}' exited during the call: {stderr_tail}")]
    ServerExited { server: String, stderr_tail: String },
    #[error("the MCP call was cancelled")]
    Cancelled,
    #[error("MCP protocol error: {0}")]
    Protocol(String),
}

/// The shared set of MCP servers: one process (or HTTP session) per configured server, whatever
/// number of agents use it. Cheap to clone; every clone is the same set. Needs a Tokio runtime.
#[derive(Clone)]
pub struct McpManager {
    inner: Arc<ServerSet>,
}

impl McpManager {
    /// A manager for `config`'s servers, none started yet (disabled ones stay stopped).
    pub fn new(config: McpConfig) -> Self {
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        let servers = config
            .servers
            .iter()
            .map(|server| (server.name.clone(), ServerEntry::new(server.clone())))
            .collect();
        Self {
            inner: Arc::new(ServerSet {
                config: Mutex::new(config),
                servers: Mutex::new(servers),
                signals: Signals {
                    events,
                    changed: Changed::default(),
                },
            }),
        }
    }

    /// Server started/error/stopped and tool-list changes, from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<McpEvent> {
        self.inner.signals.events.subscribe()
    }

    /// Starts every enabled server that is not running or starting, each in its own task, and
    /// returns at once: a slow or broken server never holds up the others or the caller.
    pub fn start_all(&self) {
        for entry in self.inner.entries() {
            let idle = matches!(entry.status(), ServerStatus::Stopped | ServerStatus::Error);
            if entry.config.enabled && idle {
                start(&entry, &self.inner.signals);
            }
        }
    }

    /// Waits until no server is starting; false if `timeout` passed first.
    pub async fn wait_settled(&self, timeout: Duration) -> bool {
        let mut changed = self.inner.signals.changed.subscribe();
        let settled = async {
            loop {
                let starting = self
                    .inner
                    .entries()
                    .iter()
                    .any(|entry| entry.status() == ServerStatus::Starting);
                if !starting {
                    return;
                }
                if changed.changed().await.is_err() {
                    return;
                }
            }
        };
        tokio::time::timeout(timeout, settled).await.is_ok()
    }

    /// Every configured server's state, sorted by name.
    pub fn snapshot(&self) -> Vec<ServerSnapshot> {
        self.inner
            .entries()
            .iter()
            .map(|entry| entry.snapshot())
            .collect()
    }

    /// The configuration the manager runs (as last given to [`Self::new`] or [`Self::reload`]).
    pub fn config(&self) -> McpConfig {
        lock(&self.inner.config).clone()
    }

    /// Calls `tool` on `server` with `arguments` as given. The server's timeout is an idle
    /// timeout (progress notifications restart it); `progress` receives those notifications;
    /// `cancelled` resolving tells the server `notifications/cancelled` and returns
    /// [`McpCallError::Cancelled`] at once. A server that dies during the call fails it at once
    /// with its stderr tail and goes to Error.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: serde_json::Value,
        progress: Option<mpsc::UnboundedSender<ProgressUpdate>>,
        cancelled: Pin<Box<dyn Future<Output = ()> + Send>>,
    ) -> Result<CallOutcome, McpCallError> {
        let entry = self
            .inner
            .entry(server)
            .ok_or_else(|| McpCallError::UnknownServer(server.to_owned()))?;
        let (connection, generation) = {
            let state = lock(&entry.state);
            match (&state.connection, state.status) {
                (Some(connection), ServerStatus::Running) => (connection.clone(), state.generation),
                (_, status) => {
                    return Err(McpCallError::NotRunning {
                        server: server.to_owned(),
                        status,
                    });
                }
            }
        };
        let timeout = entry.config.timeout;
        let result = connection
            .call(tool, arguments, timeout, progress, cancelled)
            .await;
        result.map_err(|failure| match failure {
            CallFailure::Timeout => McpCallError::Timeout {
                server: server.to_owned(),
                tool: tool.to_owned(),
                after: timeout,
            },
            CallFailure::Cancelled => McpCallError::Cancelled,
            CallFailure::Closed(reason) => {
                // Mark it here too (the supervisor will as well) so the caller sees Error now.
                entry.mark_exited(generation, &reason, &self.inner.signals);
                McpCallError::ServerExited {
                    server: server.to_owned(),
                    stderr_tail: connection.stderr().text(),
                }
            }
            CallFailure::Protocol(message) => McpCallError::Protocol(message),
        })
    }

    /// Stops `server` if it runs, starts it again and waits until it is running (Ok) or has
    /// failed (the error).
    pub async fn restart(&self, server: &str) -> anyhow::Result<()> {
        let entry = self
            .inner
            .entry(server)
            .ok_or_else(|| anyhow!("no MCP server named `{server}` is configured"))?;
        if !entry.config.enabled {
            bail!(
                "MCP server `{server}` is disabled in {}",
                entry.config.source.display()
            );
        }
        stop_slot(&entry, &self.inner.signals).await;
        lock(&entry.state).restarts += 1;
        start(&entry, &self.inner.signals);
        let mut changed = self.inner.signals.changed.subscribe();
        loop {
            match entry.status() {
                ServerStatus::Running => return Ok(()),
                ServerStatus::Error | ServerStatus::Stopped => {
                    let error = lock(&entry.state).error.clone();
                    bail!(
                        "MCP server `{server}` did not start: {}",
                        error.unwrap_or_else(|| "stopped".to_owned())
                    );
                }
                ServerStatus::Starting => {
                    if changed.changed().await.is_err() {
                        bail!("MCP server `{server}`: the manager went away");
                    }
                }
            }
        }
    }

    /// Stops `server`: closes its stdin (ends the session), SIGTERM to its process group,
    /// SIGKILL after a grace period. Returns when nothing of it is left running.
    pub async fn stop(&self, server: &str) -> anyhow::Result<()> {
        let entry = self
            .inner
            .entry(server)
            .ok_or_else(|| anyhow!("no MCP server named `{server}` is configured"))?;
        stop_slot(&entry, &self.inner.signals).await;
        Ok(())
    }

    /// Takes a new configuration: servers that were removed or changed are stopped, new and
    /// changed ones started (when enabled); unchanged ones keep running untouched.
    pub async fn reload(&self, config: McpConfig) {
        let wanted: BTreeMap<String, ServerConfig> = config
            .servers
            .iter()
            .map(|server| (server.name.clone(), server.clone()))
            .collect();
        let outdated: Vec<Arc<ServerEntry>> = {
            let mut servers = lock(&self.inner.servers);
            let names: Vec<String> = servers
                .iter()
                .filter(|(name, entry)| wanted.get(*name) != Some(&entry.config))
                .map(|(name, _)| name.clone())
                .collect();
            names
                .iter()
                .filter_map(|name| servers.remove(name))
                .collect()
        };
        join_all(
            outdated
                .iter()
                .map(|entry| stop_slot(entry, &self.inner.signals)),
        )
        .await;
        let added: Vec<Arc<ServerEntry>> = {
            let mut servers = lock(&self.inner.servers);
            let mut added = Vec::new();
            for server in wanted.into_values() {
                if !servers.contains_key(&server.name) {
                    let entry = ServerEntry::new(server);
                    servers.insert(entry.config.name.clone(), entry.clone());
                    added.push(entry);
                }
            }
            added
        };
        *lock(&self.inner.config) = config;
        for entry in added.iter().filter(|entry| entry.config.enabled) {
            start(entry, &self.inner.signals);
        }
        self.inner.signals.bump();
    }

    /// Stops every server (in parallel); none outlives the workbench.
    /// SIGKILLs every server's process group at once, without waiting (the panic path, where no
    /// runtime may be left to await [`McpManager::shutdown`]).
    pub fn kill_all_now(&self) {
        self.inner.kill_all_now();
    }

    pub async fn shutdown(&self) {
        let entries = self.inner.entries();
        join_all(
            entries
                .iter()
                .map(|entry| stop_slot(entry, &self.inner.signals)),
        )
        .await;
    }
}

/// Events waiting for slow subscribers before the oldest are dropped.
const EVENT_CAPACITY: usize = 256;
/// Waits before reconnecting a server that had been running and exited; then it stays in Error.
const RECONNECT_DELAYS: [Duration; 3] = [
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
];

struct ServerSet {
    config: Mutex<McpConfig>,
    servers: Mutex<BTreeMap<String, Arc<ServerEntry>>>,
    signals: Signals,
}

impl ServerSet {
    fn entries(&self) -> Vec<Arc<ServerEntry>> {
        lock(&self.servers).values().cloned().collect()
    }

    fn entry(&self, name: &str) -> Option<Arc<ServerEntry>> {
        lock(&self.servers).get(name).cloned()
    }
}

impl ServerSet {
    /// SIGKILLs every server's process group now, synchronously.
    fn kill_all_now(&self) {
        for entry in lock(&self.servers).values() {
            let mut state = lock(&entry.state);
            if let Some(task) = state.task.take() {
                task.abort();
            }
            if let Some(connection) = state.connection.take() {
                connection.kill_now();
            }
        }
    }
}

impl Drop for ServerSet {
    /// The last resort when `shutdown` was never awaited: no server outlives the workbench.
    fn drop(&mut self) {
        self.kill_all_now();
    }
}

/// What tasks need to tell the world; cloned into them so they never keep the manager alive.
#[derive(Clone)]
struct Signals {
    events: broadcast::Sender<McpEvent>,
    /// Bumped on every state change; `wait_settled` and `restart` watch it.
    changed: Changed,
}

impl Signals {
    fn emit(&self, event: McpEvent) {
        let _ = self.events.send(event);
        self.bump();
    }

    fn bump(&self) {
        self.changed.bump();
    }
}

/// One configured server and its state.
struct ServerEntry {
    config: ServerConfig,
    state: Mutex<ServerState>,
}

struct ServerState {
    status: ServerStatus,
    tools: Vec<McpToolInfo>,
    error: Option<String>,
    stderr: Arc<StderrTail>,
    connection: Option<Arc<Connection>>,
    restarts: u32,
    /// Bumped by every start and stop; a task whose generation is gone has been superseded.
    generation: u64,
    /// The task that starts, supervises and reconnects the server.
    task: Option<JoinHandle<()>>,
}

impl ServerEntry {
    fn new(config: ServerConfig) -> Arc<Self> {
        Arc::new(Self {
            config,
            state: Mutex::new(ServerState {
                status: ServerStatus::Stopped,
                tools: Vec::new(),
                error: None,
                stderr: StderrTail::new(),
                connection: None,
                restarts: 0,
                generation: 0,
                task: None,
            }),
        })
    }

    fn status(&self) -> ServerStatus {
        lock(&self.state).status
    }

    fn snapshot(&self) -> ServerSnapshot {
        let state = lock(&self.state);
        ServerSnapshot {
            name: self.config.name.clone(),
            source: self.config.source.clone(),
            status: state.status,
            tools: state.tools.clone(),
            error: state.error.clone(),
            stderr_tail: state.stderr.text(),
            pid: state.connection.as_ref().and_then(|c| c.pid()),
            target: self.config.target(),
            restarts: state.restarts,
        }
    }

    /// The tools the filters let through, with their bridged names, sorted by name.
    fn tool_infos(&self, listed: Vec<ListedTool>) -> Vec<McpToolInfo> {
        let mut tools: Vec<McpToolInfo> = listed
            .into_iter()
            .filter(|tool| self.config.offers_tool(&tool.name))
            .map(|tool| McpToolInfo {
                server: self.config.name.clone(),
                bridged_name: named_tool(self.config.tool_naming, &self.config.name, &tool.name),
                name: tool.name,
                description: tool.description,
                input_schema: tool.input_schema,
            })
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools
    }

    /// A running server of `generation` went away: Error, with the reason. False if it had
    /// already been handled or superseded.
    fn mark_exited(&self, generation: u64, reason: &str, signals: &Signals) -> bool {
        {
            let mut state = lock(&self.state);
            if state.generation != generation || state.status != ServerStatus::Running {
                return false;
            }
            state.status = ServerStatus::Error;
            state.error = Some(format!("exited unexpectedly: {reason}"));
            state.tools.clear();
        }
        signals.emit(McpEvent::ServerError {
            server: self.config.name.clone(),
            error: format!("exited unexpectedly: {reason}"),
        });
        true
    }
}

/// Starts `entry` in a new task (a new generation: anything older is superseded).
fn start(entry: &Arc<ServerEntry>, signals: &Signals) {
    let mut state = lock(&entry.state);
    state.generation += 1;
    state.status = ServerStatus::Starting;
    state.error = None;
    state.tools.clear();
    state.stderr = StderrTail::new();
    if let Some(task) = state.task.take() {
        task.abort();
    }
    let generation = state.generation;
    let task = tokio::spawn(run_server(entry.clone(), generation, signals.clone()));
    state.task = Some(task);
    drop(state);
    signals.bump();
}

/// Stops `entry`'s task and process; Stopped afterwards.
async fn stop_slot(entry: &Arc<ServerEntry>, signals: &Signals) {
    let (task, connection, was) = {
        let mut state = lock(&entry.state);
        state.generation += 1;
        let was = state.status;
        state.status = ServerStatus::Stopped;
        state.tools.clear();
        state.error = None;
        (state.task.take(), state.connection.take(), was)
    };
    if let Some(task) = task {
        task.abort();
        // Dropping a half-made connection kills its process group; wait until that happened.
        let _ = task.await;
    }
    if let Some(connection) = connection {
        connection.close().await;
    }
    if was != ServerStatus::Stopped {
        signals.emit(McpEvent::ServerStopped {
            server: entry.config.name.clone(),
        });
    } else {
        signals.bump();
    }
}

/// Connects, then supervises: re-lists tools on `tools/list_changed`, and when the server goes
/// away, reconnects with backoff ([`RECONNECT_DELAYS`]) before giving up in Error.
async fn run_server(entry: Arc<ServerEntry>, generation: u64, signals: Signals) {
    let name = entry.config.name.clone();
    let Some(mut connected) = connect(&entry, generation, &signals).await else {
        return;
    };
    loop {
        let connection = connected.connection.clone();
        let reason = supervise(
            &entry,
            generation,
            &signals,
            &connection,
            &mut connected.tools_changed,
        )
        .await;
        entry.mark_exited(generation, &reason, &signals);
        tracing::warn!(server = %name, %reason, "MCP server exited");
        {
            let mut state = lock(&entry.state);
            if state.generation != generation {
                return;
            }
            state.connection = None;
        }
        // Whatever is left of its process group goes before a new one comes.
        connection.close().await;
        let mut reconnected = None;
        for delay in RECONNECT_DELAYS {
            tokio::time::sleep(delay).await;
            {
                let mut state = lock(&entry.state);
                if state.generation != generation {
                    return;
                }
                state.status = ServerStatus::Starting;
                state.restarts += 1;
                state.stderr = StderrTail::new();
            }
            signals.bump();
            if let Some(next) = connect(&entry, generation, &signals).await {
                reconnected = Some(next);
                break;
            }
        }
        match reconnected {
            Some(next) => connected = next,
            None => return,
        }
    }
}

/// A live connection and its tool-change ticks.
struct ActiveConnection {
    connection: Arc<Connection>,
    tools_changed: mpsc::UnboundedReceiver<()>,
}

/// One connection attempt; installs the connection and reports, or records the error.
async fn connect(
    entry: &Arc<ServerEntry>,
    generation: u64,
    signals: &Signals,
) -> Option<ActiveConnection> {
    let stderr = lock(&entry.state).stderr.clone();
    match Connection::connect(&entry.config, stderr).await {
        Ok(connected) => {
            let connection = Arc::new(connected.connection);
            let tools = entry.tool_infos(connected.tools);
            let count = tools.len();
            let current = {
                let mut state = lock(&entry.state);
                let current = state.generation == generation;
                if current {
                    state.status = ServerStatus::Running;
                    state.tools = tools;
                    state.error = None;
                    state.connection = Some(connection.clone());
                }
                current
            };
            if !current {
                connection.close().await;
                return None;
            }
            signals.emit(McpEvent::ServerStarted {
                server: entry.config.name.clone(),
                tools: count,
            });
            Some(ActiveConnection {
                connection,
                tools_changed: connected.tools_changed,
            })
        }
        Err(err) => {
            let error = format!("{err:#}");
            {
                let mut state = lock(&entry.state);
                if state.generation != generation {
                    return None;
                }
                state.status = ServerStatus::Error;
                state.error = Some(error.clone());
            }
            tracing::warn!(server = %entry.config.name, %error, "MCP server failed to start");
            signals.emit(McpEvent::ServerError {
                server: entry.config.name.clone(),
                error,
            });
            None
        }
    }
}

/// Follows a running server until it goes away; returns why.
async fn supervise(
    entry: &Arc<ServerEntry>,
    generation: u64,
    signals: &Signals,
    connection: &Arc<Connection>,
    tools_changed: &mut mpsc::UnboundedReceiver<()>,
) -> String {
    let closed = connection.closed();
    tokio::pin!(closed);
    loop {
        tokio::select! {
            reason = &mut closed => return reason,
            Some(()) = tools_changed.recv() => {
                // Several notifications in a burst need one listing.
                while tools_changed.try_recv().is_ok() {}
                let listed = tokio::time::timeout(entry.config.timeout, connection.list_tools()).await;
                match listed {
                    Ok(Ok(listed)) => {
                        let tools = entry.tool_infos(listed);
                        {
                            let mut state = lock(&entry.state);
                            if state.generation != generation {
                                return "superseded".to_owned();
                            }
                            if state.tools == tools {
                                continue;
                            }
                            state.tools = tools;
                        }
                        signals.emit(McpEvent::ToolsChanged { server: entry.config.name.clone() });
                    }
                    Ok(Err(err)) => tracing::warn!(server = %entry.config.name, "re-listing tools failed: {err:#}"),
                    Err(_) => tracing::warn!(server = %entry.config.name, "re-listing tools timed out"),
                }
            }
        }
    }
}

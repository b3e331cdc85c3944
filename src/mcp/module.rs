//! The MCP bridge module: the [`McpManager`]'s servers as one bridge [`Module`] named `mcp`, so
//! every Pi the workbench runs — the main agent and each helper, all connected to the same
//! bridge host — sees the same `mcp__<server>__<tool>` tools, served by one process per server.
//!
//! Shape: the tools are a *plan* computed outside the registry ([`plan`], pure and table-tested)
//! from the manager's snapshot and the other modules' tool names, stored, and only then handed to
//! `Registry::refresh` — which calls [`Module::tools`] under its own lock, so `tools()` must
//! answer from memory and never ask the registry. Servers are planned in name order; a server
//! whose batch clashes (with another module's tool, an earlier server's, itself, or an invalid
//! name) is left out whole and stopped, and the clash is kept until that server starts again, so
//! the status overlay can say which names collided. Every manager event (a server started, its
//! tools changed, it stopped or failed) re-plans and re-declares, which is how a slow server's
//! tools arrive after Pi started and how a stopped server's tools leave every Pi's active set
//! (Pi cannot unregister a tool: it stays registered, inactive, until that Pi restarts).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, mpsc, watch};

use super::bus::{ServerError, ServerStarted, ServerStopped, ToolsRegistered, ToolsUnregistered};
use super::manager::{
    CallOutcome, McpCallError, McpContent, McpEvent, McpManager, ProgressUpdate, ServerSnapshot,
    ServerStatus,
};
use crate::bridge::{
    AgentId, BridgeHost, ContentBlock, Module, Registry, ToolCall, ToolError, ToolOutput, ToolSpec,
};
use crate::sys::{Changed, lock};

/// The module's name in the registry (and `/unipi:info`).
pub const MODULE_NAME: &str = "mcp";
/// Opens the status overlay.
pub(crate) const STATUS_COMMAND: &str = "unipi:mcp-status";
/// Re-reads the MCP config files and applies the difference.
pub(crate) const RELOAD_COMMAND: &str = "unipi:mcp-reload";

/// The `--tools` entry that keeps every bridged MCP tool for a helper with a tool allow-list
/// (Pi 1.x matches `*` in `--tools`; Pi 0.7x takes it as a name and offers none of them).
pub const HELPER_TOOLS_PATTERN: &str = "mcp__*";
/// What the bridge's call timeout adds to the server's own per-call timeout: the manager's
/// timeout (which progress restarts) is the one that should fire, with its clearer error.
pub(crate) const CALL_TIMEOUT_MARGIN: Duration = Duration::from_secs(5);
/// The least the bridge allows a bridged call. The bridge's timeout is a fixed ceiling (progress
/// does not restart it), so it must not cut a long operation that keeps reporting progress; an
/// idle server is still stopped at its own timeout by the manager.
pub(crate) const CALL_CEILING: Duration = Duration::from_secs(60 * 60);
/// Stderr the model gets with a "server exited" error (the overlay shows the whole tail).
const MODEL_STDERR_CHARS: usize = 2_000;

/// The MCP servers as a bridge module. Cheap to clone.
#[derive(Clone)]
pub struct McpModule {
    inner: Arc<McpBridge>,
}

/// One bridged tool that is (or would be) declared.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlannedTool {
    pub server: String,
    /// The server's own name for it (what `tools/call` needs).
    pub tool: String,
    pub spec: ToolSpec,
}

/// Why one bridged name could not be declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clash {
    pub name: String,
    pub(crate) with: ClashWith,
}

/// What a bridged name collided with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClashWith {
    /// A tool of another workbench module.
    Module(String),
    /// A tool of a server earlier in name order.
    Server(String),
    /// Another tool of the same server (two names that sanitise alike).
    SameServer,
    /// Not a name model providers accept.
    InvalidName,
}

impl std::fmt::Display for Clash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.with {
            ClashWith::Module(module) => write!(
                f,
                "`{}` is already a tool of the workbench module `{module}`",
                self.name
            ),
            ClashWith::Server(server) => write!(
                f,
                "`{}` is already bridged from MCP server `{server}`",
                self.name
            ),
            ClashWith::SameServer => write!(f, "`{}` names two of this server's tools", self.name),
            ClashWith::InvalidName => write!(f, "`{}` is not a valid tool name", self.name),
        }
    }
}

/// The declared tools and the servers left out, from one snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// In server order, then the server's tool order.
    pub(crate) tools: Vec<PlannedTool>,
    /// Servers whose batch was left out, with every clashing name.
    pub clashes: BTreeMap<String, Vec<Clash>>,
}

/// One server as the status overlay shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServerView {
    pub snapshot: ServerSnapshot,
    /// Enabled in the config (a disabled server is listed, never started).
    pub enabled: bool,
    /// Its tools are declared to every connected Pi now.
    pub declared: bool,
    /// Why its tools are not declared, when they clashed.
    pub clashes: Vec<Clash>,
    /// Agents that called one of its tools this session.
    pub callers: Vec<AgentId>,
}

/// Everything the overlay and footer read.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct McpStatus {
    pub servers: Vec<ServerView>,
    /// Connected Pi processes: every one of them has the declared tools.
    pub connected_agents: Vec<AgentId>,
    /// Problems in the config files (named by file, server and field).
    pub config_errors: Vec<String>,
}

impl McpStatus {
    /// Enabled servers (what the footer counts as configured).
    pub(crate) fn configured(&self) -> usize {
        self.servers.iter().filter(|server| server.enabled).count()
    }

    pub(crate) fn running(&self) -> usize {
        self.servers
            .iter()
            .filter(|server| server.snapshot.status == ServerStatus::Running)
            .count()
    }

    /// Servers in error or with clashing names.
    pub(crate) fn failed(&self) -> usize {
        self.servers
            .iter()
            .filter(|server| {
                server.snapshot.status == ServerStatus::Error || !server.clashes.is_empty()
            })
            .count()
    }

    /// Tools declared to Pi.
    pub(crate) fn tools(&self) -> usize {
        self.servers
            .iter()
            .filter(|server| server.declared)
            .map(|server| server.snapshot.tools.len())
            .sum()
    }
}

struct McpBridge {
    manager: McpManager,
    state: Mutex<Routing>,
    link: OnceLock<Link>,
    /// Bumped after every change the overlay or footer shows.
    changes: Changed,
    /// One re-plan at a time, so declarations go out in the order they were computed.
    sync_lock: tokio::sync::Mutex<()>,
}

struct Link {
    registry: Arc<Registry>,
    host: BridgeHost,
}

#[derive(Default)]
struct Routing {
    plan: Plan,
    /// Clashes of servers that were stopped for them, kept until the server starts again.
    stopped_for_clash: BTreeMap<String, Vec<Clash>>,
    callers: BTreeMap<String, BTreeSet<AgentId>>,
}

impl McpModule {
    pub fn new(manager: McpManager) -> Self {
        McpModule {
            inner: Arc::new(McpBridge {
                manager,
                state: Mutex::new(Routing::default()),
                link: OnceLock::new(),
                changes: Changed::default(),
                sync_lock: tokio::sync::Mutex::new(()),
            }),
        }
    }

    pub fn manager(&self) -> &McpManager {
        &self.inner.manager
    }

    /// Connects the module to the bridge once the host runs: declares what is running already
    /// and re-declares on every manager event from now on. Call once; later calls are ignored.
    pub fn attach(&self, registry: Arc<Registry>, host: BridgeHost) {
        if self.inner.link.set(Link { registry, host }).is_err() {
            tracing::warn!("mcp: the module was attached twice; the first bridge stays");
            return;
        }
        let events = self.inner.manager.subscribe();
        let module = self.clone();
        tokio::spawn(async move {
            module.sync().await;
            module.follow(events).await;
        });
    }

    /// A receiver that changes whenever the status changes (servers, declarations, callers).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// What the overlay and footer show, now.
    pub(crate) fn status(&self) -> McpStatus {
        let snapshots = self.inner.manager.snapshot();
        let config = self.inner.manager.config();
        let config_errors = config.errors.iter().map(ToString::to_string).collect();
        let connected_agents = self
            .inner
            .link
            .get()
            .map(|link| {
                link.host
                    .agents()
                    .into_iter()
                    .filter(|agent| agent.connected)
                    .map(|agent| agent.agent)
                    .collect()
            })
            .unwrap_or_default();
        let state = self.state();
        let declared: HashSet<&str> = state
            .plan
            .tools
            .iter()
            .map(|tool| tool.server.as_str())
            .collect();
        let servers = snapshots
            .into_iter()
            .map(|snapshot| {
                let clashes = state
                    .plan
                    .clashes
                    .get(&snapshot.name)
                    .or_else(|| state.stopped_for_clash.get(&snapshot.name))
                    .cloned()
                    .unwrap_or_default();
                ServerView {
                    enabled: config
                        .server(&snapshot.name)
                        .is_none_or(|server| server.enabled),
                    declared: declared.contains(snapshot.name.as_str()),
                    callers: state
                        .callers
                        .get(&snapshot.name)
                        .map(|agents| agents.iter().cloned().collect())
                        .unwrap_or_default(),
                    clashes,
                    snapshot,
                }
            })
            .collect();
        McpStatus {
            servers,
            connected_agents,
            config_errors,
        }
    }

    /// Restarts `server` (from any state); its tools come back when it is running.
    pub async fn restart(&self, server: &str) -> anyhow::Result<()> {
        self.state().stopped_for_clash.remove(server);
        let result = self.inner.manager.restart(server).await;
        self.sync().await;
        result
    }

    /// Stops `server`; its tools leave every Pi's active set.
    pub async fn stop(&self, server: &str) -> anyhow::Result<()> {
        let result = self.inner.manager.stop(server).await;
        self.sync().await;
        result
    }

    /// Re-reads the MCP config files and applies the difference; returns a one-line summary.
    pub async fn reload(&self, home: Option<&Path>, workspace: &Path) -> String {
        let config = super::config::load(home, workspace);
        let servers = config
            .servers
            .iter()
            .filter(|server| server.enabled)
            .count();
        let errors = config.errors.len();
        // Who owns MCP decides how Pi was started (`--no-mcp`): that waits for a restart.
        let owner_note = if config.settings.owner == super::config::Owner::Pi {
            format!(
                " mcp.owner is \"pi\" in {}: that takes effect at the next start (this Pi was \
                 started with --no-mcp); until then the workbench runs the servers.",
                super::config::WORKBENCH_CONFIG_FILE
            )
        } else {
            String::new()
        };
        self.inner.manager.reload(config).await;
        self.sync().await;
        match errors {
            0 => format!("MCP config reloaded: {servers} enabled server(s).{owner_note}"),
            n => format!(
                "MCP config reloaded: {servers} enabled server(s); {n} problem(s) in the files, see /{STATUS_COMMAND}.{owner_note}"
            ),
        }
    }

    /// Stops every server (the workbench is exiting).
    pub async fn shutdown(&self) {
        self.inner.manager.shutdown().await;
    }

    /// Re-plans from the manager's snapshot and, when the plan changed, refreshes the registry
    /// and re-declares to every connected Pi.
    pub async fn sync(&self) {
        let _one_at_a_time = self.inner.sync_lock.lock().await;
        let Some(link) = self.inner.link.get() else {
            return;
        };
        let snapshots = self.inner.manager.snapshot();
        let taken: Vec<(String, String)> = link
            .registry
            .tool_names()
            .into_iter()
            .filter(|(module, _)| module != MODULE_NAME)
            .collect();
        let timeouts = self.call_timeouts();
        let fresh = plan(&snapshots, &taken, &|server| {
            timeouts
                .get(server)
                .copied()
                .unwrap_or(super::config::DEFAULT_CALL_TIMEOUT)
        });
        let (previous, newly_clashed) = {
            let mut state = self.state();
            for snapshot in &snapshots {
                // A server that starts again is planned afresh.
                if snapshot.status == ServerStatus::Running
                    && !fresh.clashes.contains_key(&snapshot.name)
                {
                    state.stopped_for_clash.remove(&snapshot.name);
                }
            }
            let newly_clashed: Vec<(String, Vec<Clash>)> = fresh
                .clashes
                .iter()
                .filter(|(server, _)| !state.plan.clashes.contains_key(*server))
                .map(|(server, clashes)| (server.clone(), clashes.clone()))
                .collect();
            for (server, clashes) in &fresh.clashes {
                state
                    .stopped_for_clash
                    .insert(server.clone(), clashes.clone());
            }
            (
                std::mem::replace(&mut state.plan, fresh.clone()),
                newly_clashed,
            )
        };
        if previous.tools != fresh.tools {
            if let Err(err) = link.registry.refresh(MODULE_NAME) {
                // Another module's tools changed between the plan and the refresh; the old
                // declarations stay and the next event re-plans.
                tracing::warn!("mcp: refreshing the declared tools failed: {err}");
            }
            link.host.redeclare().await;
        }
        announce_changes(link.registry.bus(), &previous, &fresh);
        for (server, clashes) in newly_clashed {
            let error = clash_message(&clashes);
            tracing::warn!("mcp: server `{server}`: {error}");
            let failed = ServerError {
                name: server.clone(),
                error,
            };
            link.registry.bus().publish(MODULE_NAME, &failed);
            // Its prepared client is disconnected: a server whose tools nobody can call should
            // not hold a process.
            if let Err(err) = self.inner.manager.stop(&server).await {
                tracing::warn!("mcp: stopping clashing server `{server}`: {err:#}");
            }
        }
        self.changed();
    }

    /// Listens to the manager until it goes away.
    async fn follow(&self, mut events: broadcast::Receiver<McpEvent>) {
        loop {
            match events.recv().await {
                Ok(event) => {
                    self.publish(&event);
                    self.sync().await;
                }
                Err(broadcast::error::RecvError::Lagged(_)) => self.sync().await,
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    /// The manager's event on the bus under Unipi's name.
    fn publish(&self, event: &McpEvent) {
        let Some(link) = self.inner.link.get() else {
            return;
        };
        let bus = link.registry.bus();
        match event {
            McpEvent::ServerStarted { server, tools } => {
                let pid = self
                    .inner
                    .manager
                    .snapshot()
                    .into_iter()
                    .find(|snapshot| &snapshot.name == server)
                    .and_then(|snapshot| snapshot.pid);
                bus.publish(
                    MODULE_NAME,
                    &ServerStarted {
                        name: server.clone(),
                        tool_count: *tools,
                        pid,
                    },
                );
            }
            McpEvent::ServerError { server, error } => {
                bus.publish(
                    MODULE_NAME,
                    &ServerError {
                        name: server.clone(),
                        error: error.clone(),
                    },
                );
            }
            McpEvent::ServerStopped { server } => {
                bus.publish(
                    MODULE_NAME,
                    &ServerStopped {
                        name: server.clone(),
                    },
                );
            }
            McpEvent::ToolsChanged { .. } => {}
        }
    }

    fn call_timeouts(&self) -> BTreeMap<String, Duration> {
        self.inner
            .manager
            .config()
            .servers
            .iter()
            .map(|server| (server.name.clone(), server.timeout))
            .collect()
    }

    fn route(&self, bridged: &str) -> Option<(String, String)> {
        self.state()
            .plan
            .tools
            .iter()
            .find(|tool| tool.spec.name == bridged)
            .map(|tool| (tool.server.clone(), tool.tool.clone()))
    }

    /// Tells [`McpModule::subscribe`]rs that something they show changed.
    pub fn changed(&self) {
        self.inner.changes.bump();
    }

    fn state(&self) -> MutexGuard<'_, Routing> {
        lock(&self.inner.state)
    }
}

impl Module for McpModule {
    fn name(&self) -> &'static str {
        MODULE_NAME
    }

    fn tools(&self) -> Vec<ToolSpec> {
        // Called under the registry's lock: answer from the stored plan only.
        self.state()
            .plan
            .tools
            .iter()
            .map(|tool| tool.spec.clone())
            .collect()
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let module = self.clone();
        Box::pin(async move {
            let Some((server, tool)) = module.route(&call.tool) else {
                return Err(ToolError::new(format!(
                    "`{}` is no longer offered by any running MCP server (it was stopped or \
                     reloaded); see /{STATUS_COMMAND}",
                    call.tool
                )));
            };
            module
                .state()
                .callers
                .entry(server.clone())
                .or_default()
                .insert(call.agent.clone());
            module.changed();
            let (progress_tx, mut progress_rx) = mpsc::unbounded_channel::<ProgressUpdate>();
            let updates = call.updates.clone();
            let forward = tokio::spawn(async move {
                while let Some(update) = progress_rx.recv().await {
                    updates.send(progress_output(&update));
                }
            });
            let cancel = call.cancel.clone();
            let result = module
                .inner
                .manager
                .call_tool(
                    &server,
                    &tool,
                    call.args,
                    Some(progress_tx),
                    Box::pin(async move { cancel.cancelled().await }),
                )
                .await;
            // The sender went with the call: the forwarder ends after the last update.
            let _ = forward.await;
            match result {
                Ok(outcome) => map_outcome(&server, &tool, outcome),
                Err(err) => Err(map_call_error(&server, &tool, err)),
            }
        })
    }
}

/// The tools to declare for `snapshots`, given the tool names `taken` by other modules as
/// (module, tool); `timeout` is each server's per-call timeout. Running servers only, in name
/// order; a batch with any clash is left out whole.
pub fn plan(
    snapshots: &[ServerSnapshot],
    taken: &[(String, String)],
    timeout: &dyn Fn(&str) -> Duration,
) -> Plan {
    let others: BTreeMap<&str, &str> = taken
        .iter()
        .map(|(module, tool)| (tool.as_str(), module.as_str()))
        .collect();
    let mut servers: Vec<&ServerSnapshot> = snapshots
        .iter()
        .filter(|snapshot| snapshot.status == ServerStatus::Running)
        .collect();
    servers.sort_by(|a, b| a.name.cmp(&b.name));
    let mut accepted: BTreeMap<String, String> = BTreeMap::new();
    let mut plan = Plan::default();
    for server in servers {
        let mut own = HashSet::new();
        let mut clashes = Vec::new();
        for tool in &server.tools {
            let name = &tool.bridged_name;
            let with = if !is_tool_name(name) {
                Some(ClashWith::InvalidName)
            } else if let Some(module) = others.get(name.as_str()) {
                Some(ClashWith::Module((*module).to_owned()))
            } else if let Some(owner) = accepted.get(name) {
                Some(ClashWith::Server(owner.clone()))
            } else if !own.insert(name.clone()) {
                Some(ClashWith::SameServer)
            } else {
                None
            };
            if let Some(with) = with {
                clashes.push(Clash {
                    name: name.clone(),
                    with,
                });
            }
        }
        if !clashes.is_empty() {
            plan.clashes.insert(server.name.clone(), clashes);
            continue;
        }
        let call_timeout = (timeout(&server.name) + CALL_TIMEOUT_MARGIN).max(CALL_CEILING);
        for tool in &server.tools {
            accepted.insert(tool.bridged_name.clone(), server.name.clone());
            let description = if tool.description.trim().is_empty() {
                format!("Tool `{}` of the MCP server `{}`.", tool.name, server.name)
            } else {
                tool.description.clone()
            };
            plan.tools.push(PlannedTool {
                server: server.name.clone(),
                tool: tool.name.clone(),
                spec: ToolSpec::new(
                    tool.bridged_name.clone(),
                    format!("{} ({} MCP)", tool.name, server.name),
                    description,
                )
                .parameters(object_schema(&tool.input_schema))
                .timeout(call_timeout),
            });
        }
    }
    plan
}

/// An MCP tool's input schema as Pi's parameters: always an `object` schema with `properties`
/// (providers reject anything else), without the `$schema` marker some servers add.
pub(crate) fn object_schema(schema: &Value) -> Value {
    let Value::Object(object) = schema else {
        return empty_object_schema();
    };
    let declared_type = object.get("type");
    let is_object = match declared_type {
        Some(Value::String(kind)) => kind == "object",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "object"),
        None => true,
        Some(_) => false,
    };
    if !is_object {
        return empty_object_schema();
    }
    let mut object: Map<String, Value> = object.clone();
    object.remove("$schema");
    object.insert("type".into(), json!("object"));
    if !matches!(object.get("properties"), Some(Value::Object(_))) {
        object.insert("properties".into(), json!({}));
    }
    Value::Object(object)
}

/// A finished call as Pi's tool result: text and images as they are, a resource as its URI (and
/// text), structured content as a JSON text block unless the server already sent it as text,
/// and an error result as a [`ToolError`] with the server's own words.
pub(crate) fn map_outcome(
    server: &str,
    tool: &str,
    outcome: CallOutcome,
) -> Result<ToolOutput, ToolError> {
    let mut content: Vec<ContentBlock> = outcome
        .content
        .into_iter()
        .map(|item| match item {
            McpContent::Text(text) => ContentBlock::text(text),
            McpContent::Image { data, mime } => ContentBlock::Image {
                data,
                mime_type: mime,
            },
            McpContent::Resource { uri, text } => ContentBlock::text(match text {
                Some(text) => format!("[resource {uri}]\n{text}"),
                None => format!("[resource {uri}]"),
            }),
            McpContent::Other(value) => ContentBlock::text(value.to_string()),
        })
        .collect();
    let mut details = json!({"server": server, "tool": tool});
    if let Some(structured) = &outcome.structured {
        let already_sent = content.iter().any(|block| match block {
            ContentBlock::Text { text } => {
                serde_json::from_str::<Value>(text).is_ok_and(|value| &value == structured)
            }
            ContentBlock::Image { .. } => false,
        });
        if !already_sent {
            content.push(ContentBlock::text(structured.to_string()));
        }
        details["structured"] = structured.clone();
    }
    if outcome.is_error {
        let text = content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text } => Some(text.as_str()),
                ContentBlock::Image { .. } => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let message = if text.trim().is_empty() {
            format!("MCP tool `{tool}` on server `{server}` reported an error without a message")
        } else {
            text
        };
        return Err(ToolError { message, details });
    }
    if content.is_empty() {
        content.push(ContentBlock::text(format!(
            "MCP tool `{tool}` on server `{server}` returned no content."
        )));
    }
    Ok(ToolOutput { content, details })
}

/// A call that produced no result, in words the model (and the user) can act on.
pub(crate) fn map_call_error(server: &str, tool: &str, err: McpCallError) -> ToolError {
    let message = match err {
        McpCallError::UnknownServer(_) => format!(
            "MCP server `{server}` is no longer configured (the config was reloaded); \
             `{tool}` cannot run"
        ),
        McpCallError::NotRunning { status, .. } => format!(
            "MCP server `{server}` is not running ({}); restart it from /{STATUS_COMMAND}",
            status_word(status)
        ),
        McpCallError::Timeout { after, .. } => format!(
            "MCP tool `{tool}` on server `{server}` timed out after {}s without progress",
            after.as_secs()
        ),
        McpCallError::ServerExited { stderr_tail, .. } => {
            let tail = tail_chars(stderr_tail.trim(), MODEL_STDERR_CHARS);
            if tail.is_empty() {
                format!("MCP server `{server}` exited during the `{tool}` call (no stderr output)")
            } else {
                format!(
                    "MCP server `{server}` exited during the `{tool}` call. The end of its \
                     stderr:\n{tail}"
                )
            }
        }
        McpCallError::Cancelled => {
            format!("The `{tool}` call to MCP server `{server}` was cancelled")
        }
        McpCallError::Protocol(message) => {
            format!("MCP tool `{tool}` on server `{server}` failed: {message}")
        }
    };
    ToolError {
        message,
        details: json!({"server": server, "tool": tool, "error": true}),
    }
}

/// A lower-case word for a state, as the overlay and errors say it.
pub(crate) fn status_word(status: ServerStatus) -> &'static str {
    match status {
        ServerStatus::Starting => "starting",
        ServerStatus::Running => "running",
        ServerStatus::Stopped => "stopped",
        ServerStatus::Error => "error",
    }
}

/// One sentence naming every clashing name.
pub(crate) fn clash_message(clashes: &[Clash]) -> String {
    let list: Vec<String> = clashes.iter().map(ToString::to_string).collect();
    format!(
        "tool name clash, none of its tools were declared: {}",
        list.join("; ")
    )
}

fn progress_output(update: &ProgressUpdate) -> ToolOutput {
    let amount = match update.total {
        Some(total) if total > 0.0 => format!("{:.0}%", update.progress * 100.0 / total),
        _ => format!("{}", update.progress),
    };
    let text = match &update.message {
        Some(message) => format!("progress {amount}: {message}"),
        None => format!("progress {amount}"),
    };
    ToolOutput::text(text).with_details(json!({
        "progress": update.progress,
        "total": update.total,
        "message": update.message,
    }))
}

/// Emits `tools:registered` / `tools:unregistered` for servers whose declared batch appeared
/// or went between two plans.
fn announce_changes(bus: &crate::bridge::EventBus, before: &Plan, after: &Plan) {
    let by_server = |plan: &Plan| {
        let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for tool in &plan.tools {
            map.entry(tool.server.clone())
                .or_default()
                .push(tool.spec.name.clone());
        }
        map
    };
    let (before, after) = (by_server(before), by_server(after));
    for (server, names) in &after {
        if before.get(server) != Some(names) {
            bus.publish(
                MODULE_NAME,
                &ToolsRegistered {
                    server_name: server.clone(),
                    tool_names: names.clone(),
                },
            );
        }
    }
    for (server, names) in &before {
        if !after.contains_key(server) {
            bus.publish(
                MODULE_NAME,
                &ToolsUnregistered {
                    server_name: server.clone(),
                    tool_names: names.clone(),
                },
            );
        }
    }
}

/// The names the bridge registry accepts.
fn is_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

fn empty_object_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

/// The last `max` characters of `text`.
fn tail_chars(text: &str, max: usize) -> &str {
    let count = text.chars().count();
    if count <= max {
        return text;
    }
    let skip = count - max;
    text.char_indices()
        .nth(skip)
        .map_or(text, |(index, _)| &text[index..])
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::mcp::manager::McpToolInfo;
    use crate::test_table::check_table;

    fn make_server(name: &str, status: ServerStatus, tools: &[&str]) -> ServerSnapshot {
        ServerSnapshot {
            name: name.to_owned(),
            source: PathBuf::from("/home/u/.unipi/config/mcp.json"),
            status,
            tools: tools
                .iter()
                .map(|tool| McpToolInfo {
                    server: name.to_owned(),
                    name: (*tool).to_owned(),
                    bridged_name: crate::mcp::naming::bridged_tool_name(name, tool),
                    description: format!("{tool} things"),
                    input_schema: json!({"type": "object", "properties": {"x": {"type": "string"}}}),
                })
                .collect(),
            error: None,
            stderr_tail: String::new(),
            pid: Some(42),
            target: "npx -y x".to_owned(),
            restarts: 0,
        }
    }

    fn sixty(_: &str) -> Duration {
        Duration::from_secs(60)
    }

    fn names(plan: &Plan) -> Vec<&str> {
        plan.tools
            .iter()
            .map(|tool| tool.spec.name.as_str())
            .collect()
    }

    #[test]
    fn schemas_become_object_schemas() {
        let cases = [
            (
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
            ),
            (
                json!({"type": "object"}),
                json!({"type": "object", "properties": {}}),
            ),
            (
                json!({"properties": {"a": {}}, "$schema": "http://json-schema.org/draft-07/schema#"}),
                json!({"type": "object", "properties": {"a": {}}}),
            ),
            (
                json!({"type": ["object", "null"], "properties": {}}),
                json!({"type": "object", "properties": {}}),
            ),
            (
                json!({"type": "string"}),
                json!({"type": "object", "properties": {}}),
            ),
            (Value::Null, json!({"type": "object", "properties": {}})),
            (json!(true), json!({"type": "object", "properties": {}})),
            (
                json!({"type": "object", "properties": []}),
                json!({"type": "object", "properties": {}}),
            ),
        ];
        check_table(cases, object_schema);
    }

    #[test]
    fn running_servers_are_planned_in_name_order_with_their_timeouts() {
        let snapshots = vec![
            make_server("zeta", ServerStatus::Running, &["b", "a"]),
            make_server("alpha", ServerStatus::Running, &["echo"]),
            make_server("slow", ServerStatus::Starting, &["x"]),
            make_server("dead", ServerStatus::Error, &["y"]),
            make_server("off", ServerStatus::Stopped, &["z"]),
        ];
        let timeout = |server: &str| Duration::from_secs(if server == "zeta" { 10 } else { 60 });
        let plan = plan(&snapshots, &[], &timeout);
        assert_eq!(
            names(&plan),
            ["mcp__alpha__echo", "mcp__zeta__b", "mcp__zeta__a"]
        );
        assert!(plan.clashes.is_empty());
        let zeta = &plan.tools[1];
        assert_eq!((zeta.server.as_str(), zeta.tool.as_str()), ("zeta", "b"));
        assert_eq!(zeta.spec.timeout, Some(CALL_CEILING));
        assert_eq!(zeta.spec.description, "b things");
        assert_eq!(zeta.spec.parameters["type"], "object");
    }

    #[test]
    fn a_clashing_batch_is_left_out_whole_and_names_its_clashes() {
        let taken = vec![("tasks".to_owned(), "mcp__tools__bg_run".to_owned())];
        let mut same = make_server("dup", ServerStatus::Running, &["a-b", "a_b"]);
        same.tools[1].bridged_name = same.tools[0].bridged_name.clone();
        let mut invalid = make_server("bad", ServerStatus::Running, &["ok"]);
        invalid.tools[0].bridged_name = "has space".to_owned();
        /// (what, servers, declared tools, clashes as (server, with))
        type Case<'a> = (
            &'a str,
            Vec<ServerSnapshot>,
            Vec<&'a str>,
            Vec<(&'a str, ClashWith)>,
        );
        let cases: Vec<Case> = vec![
            (
                "another module's tool",
                vec![
                    make_server("tools", ServerStatus::Running, &["bg_run", "other"]),
                    make_server("fine", ServerStatus::Running, &["x"]),
                ],
                vec!["mcp__fine__x"],
                vec![("tools", ClashWith::Module("tasks".into()))],
            ),
            (
                "an earlier server's tool (names that sanitise alike)",
                vec![
                    make_server("every_thing", ServerStatus::Running, &["echo", "add"]),
                    make_server("every-thing", ServerStatus::Running, &["echo"]),
                ],
                vec!["mcp__every_thing__echo"],
                vec![("every_thing", ClashWith::Server("every-thing".into()))],
            ),
            (
                "two tools of one server",
                vec![same],
                vec![],
                vec![("dup", ClashWith::SameServer)],
            ),
            (
                "an invalid name",
                vec![invalid],
                vec![],
                vec![("bad", ClashWith::InvalidName)],
            ),
        ];
        for (what, snapshots, want_tools, want_clashes) in cases {
            let plan = plan(&snapshots, &taken, &sixty);
            assert_eq!(names(&plan), want_tools, "{what}");
            let clashes: Vec<(&str, ClashWith)> = plan
                .clashes
                .iter()
                .flat_map(|(server, clashes)| {
                    clashes
                        .iter()
                        .map(|clash| (server.as_str(), clash.with.clone()))
                })
                .collect();
            assert_eq!(clashes, want_clashes, "{what}");
        }
    }

    #[test]
    fn declared_batches_that_come_and_go_are_announced_on_the_bus() {
        use crate::bridge::{BusEvent, BusMessage, EventBus};
        let bus = EventBus::new();
        let mut events = bus.subscribe();
        let one = plan(
            &[make_server("a", ServerStatus::Running, &["x"])],
            &[],
            &sixty,
        );
        let two = plan(
            &[
                make_server("a", ServerStatus::Running, &["x"]),
                make_server("b", ServerStatus::Running, &["y", "z"]),
            ],
            &[],
            &sixty,
        );
        announce_changes(&bus, &Plan::default(), &one);
        announce_changes(&bus, &one, &two);
        announce_changes(&bus, &two, &two);
        announce_changes(&bus, &two, &Plan::default());
        let mut seen = Vec::new();
        while let Ok(BusEvent::Module {
            module, name, data, ..
        }) = events.try_recv()
        {
            assert_eq!(module, MODULE_NAME);
            seen.push((name, data));
        }
        let want = vec![
            (
                ToolsRegistered::NAME,
                json!({"serverName": "a", "toolNames": ["mcp__a__x"]}),
            ),
            (
                ToolsRegistered::NAME,
                json!({"serverName": "b", "toolNames": ["mcp__b__y", "mcp__b__z"]}),
            ),
            (
                ToolsUnregistered::NAME,
                json!({"serverName": "a", "toolNames": ["mcp__a__x"]}),
            ),
            (
                ToolsUnregistered::NAME,
                json!({"serverName": "b", "toolNames": ["mcp__b__y", "mcp__b__z"]}),
            ),
        ];
        let want: Vec<(String, Value)> = want
            .into_iter()
            .map(|(name, data)| (name.to_owned(), data))
            .collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn a_clash_message_names_every_name() {
        let clashes = vec![
            Clash {
                name: "mcp__a__x".into(),
                with: ClashWith::Server("a-".into()),
            },
            Clash {
                name: "mcp__a__y".into(),
                with: ClashWith::Module("tasks".into()),
            },
        ];
        let message = clash_message(&clashes);
        assert!(
            message.contains("`mcp__a__x` is already bridged from MCP server `a-`"),
            "{message}"
        );
        assert!(
            message.contains("`mcp__a__y` is already a tool of the workbench module `tasks`"),
            "{message}"
        );
    }

    fn outcome(content: Vec<McpContent>, structured: Option<Value>, is_error: bool) -> CallOutcome {
        CallOutcome {
            content,
            structured,
            is_error,
        }
    }

    #[test]
    fn results_map_to_pi_content() {
        let text = |t: &str| ContentBlock::text(t);
        let cases: Vec<(&str, CallOutcome, Vec<ContentBlock>, Value)> = vec![
            (
                "text and image",
                outcome(
                    vec![
                        McpContent::Text("Echo: hi".into()),
                        McpContent::Image {
                            data: "AAAA".into(),
                            mime: "image/png".into(),
                        },
                    ],
                    None,
                    false,
                ),
                vec![
                    text("Echo: hi"),
                    ContentBlock::Image {
                        data: "AAAA".into(),
                        mime_type: "image/png".into(),
                    },
                ],
                json!({"server": "s", "tool": "t"}),
            ),
            (
                "resources by uri",
                outcome(
                    vec![
                        McpContent::Resource {
                            uri: "test://static/resource/1".into(),
                            text: Some("body".into()),
                        },
                        McpContent::Resource {
                            uri: "file:///blob".into(),
                            text: None,
                        },
                    ],
                    None,
                    false,
                ),
                vec![
                    text("[resource test://static/resource/1]\nbody"),
                    text("[resource file:///blob]"),
                ],
                json!({"server": "s", "tool": "t"}),
            ),
            (
                "structured content only",
                outcome(vec![], Some(json!({"sum": 3})), false),
                vec![text(r#"{"sum":3}"#)],
                json!({"server": "s", "tool": "t", "structured": {"sum": 3}}),
            ),
            (
                "structured content the server already sent as text",
                outcome(
                    vec![McpContent::Text("{\n  \"sum\": 3\n}".into())],
                    Some(json!({"sum": 3})),
                    false,
                ),
                vec![text("{\n  \"sum\": 3\n}")],
                json!({"server": "s", "tool": "t", "structured": {"sum": 3}}),
            ),
            (
                "other content as JSON",
                outcome(
                    vec![McpContent::Other(json!({"type": "audio"}))],
                    None,
                    false,
                ),
                vec![text(r#"{"type":"audio"}"#)],
                json!({"server": "s", "tool": "t"}),
            ),
            (
                "nothing",
                outcome(vec![], None, false),
                vec![text("MCP tool `t` on server `s` returned no content.")],
                json!({"server": "s", "tool": "t"}),
            ),
        ];
        for (what, outcome, want_content, want_details) in cases {
            let output =
                map_outcome("s", "t", outcome).unwrap_or_else(|err| panic!("{what}: {err}"));
            assert_eq!(output.content, want_content, "{what}");
            assert_eq!(output.details, want_details, "{what}");
        }
    }

    #[test]
    fn an_error_result_becomes_a_tool_error_with_the_servers_text() {
        let err = map_outcome(
            "s",
            "t",
            outcome(vec![McpContent::Text("file not found".into())], None, true),
        )
        .err()
        .map(|err| err.message);
        assert_eq!(err.as_deref(), Some("file not found"));
        let silent = map_outcome("s", "t", outcome(vec![], None, true))
            .err()
            .map(|err| err.message);
        assert_eq!(
            silent.as_deref(),
            Some("MCP tool `t` on server `s` reported an error without a message")
        );
    }

    #[test]
    fn call_errors_say_what_happened() {
        let long_tail = format!("{}END", "x".repeat(5_000));
        let cases = [
            (
                McpCallError::UnknownServer("s".into()),
                "no longer configured",
            ),
            (
                McpCallError::NotRunning {
                    server: "s".into(),
                    status: ServerStatus::Stopped,
                },
                "is not running (stopped); restart it from /unipi:mcp-status",
            ),
            (
                McpCallError::Timeout {
                    server: "s".into(),
                    tool: "t".into(),
                    after: Duration::from_secs(60),
                },
                "timed out after 60s without progress",
            ),
            (
                McpCallError::ServerExited {
                    server: "s".into(),
                    stderr_tail: "panic: boom\n".into(),
                },
                "exited during the `t` call. The end of its stderr:\npanic: boom",
            ),
            (
                McpCallError::ServerExited {
                    server: "s".into(),
                    stderr_tail: String::new(),
                },
                "exited during the `t` call (no stderr output)",
            ),
            (McpCallError::Cancelled, "was cancelled"),
            (
                McpCallError::Protocol("invalid params".into()),
                "MCP tool `t` on server `s` failed: invalid params",
            ),
        ];
        for (err, want) in cases {
            let message = map_call_error("s", "t", err.clone()).message;
            assert!(message.contains(want), "{err:?}: {message}");
        }
        let message = map_call_error(
            "s",
            "t",
            McpCallError::ServerExited {
                server: "s".into(),
                stderr_tail: long_tail,
            },
        )
        .message;
        assert!(
            message.ends_with("xEND") && message.len() < 2_200,
            "{}",
            message.len()
        );
    }

    #[test]
    fn progress_reads_as_a_percentage_when_the_total_is_known() {
        let update = |progress, total, message: Option<&str>| ProgressUpdate {
            progress,
            total,
            message: message.map(str::to_owned),
        };
        let text = |output: ToolOutput| match output.content.first() {
            Some(ContentBlock::Text { text }) => text.clone(),
            _ => String::new(),
        };
        assert_eq!(
            text(progress_output(&update(5.0, Some(10.0), Some("step 5")))),
            "progress 50%: step 5"
        );
        assert_eq!(
            text(progress_output(&update(3.0, None, None))),
            "progress 3"
        );
    }

    #[tokio::test]
    async fn tools_are_declared_and_clashes_reported_through_the_registry() -> anyhow::Result<()> {
        // Without servers (the manager has none configured) the module declares nothing, and
        // its commands are registered.
        let module = McpModule::new(McpManager::new(super::super::config::McpConfig::default()));
        let registry = Registry::new();
        let ui =
            crate::capability::Ui::headless(Arc::new(crate::config::keymap::Keymap::defaults()));
        let commands = super::super::capability::commands(module.clone(), ui, None, PathBuf::new());
        registry.register_with_commands(Arc::new(module.clone()), commands)?;
        let info = registry.modules();
        assert_eq!(info[0].tools, Vec::<String>::new());
        assert_eq!(info[0].commands, vec![STATUS_COMMAND, RELOAD_COMMAND]);
        // A stored plan is what tools() answers (refresh calls it under the registry's lock).
        module.state().plan = plan(
            &[make_server("everything", ServerStatus::Running, &["echo"])],
            &[],
            &sixty,
        );
        registry.refresh(MODULE_NAME)?;
        assert_eq!(
            registry.tool_names(),
            vec![("mcp".to_owned(), "mcp__everything__echo".to_owned())]
        );
        Ok(())
    }

    #[tokio::test]
    async fn a_call_to_an_undeclared_tool_says_so() {
        let module = McpModule::new(McpManager::new(super::super::config::McpConfig::default()));
        let call = ToolCall {
            agent: AgentId::main(),
            tool: "mcp__gone__echo".into(),
            call_id: "c1".into(),
            args: json!({}),
            updates: crate::bridge::UpdateSender::detached(),
            cancel: crate::bridge::CancelToken::never(),
        };
        let err = module
            .call_tool(call)
            .await
            .err()
            .map(|err| err.message)
            .unwrap_or_default();
        assert!(
            err.contains("no longer offered by any running MCP server"),
            "{err}"
        );
    }

    /// `mcp.owner` cannot change while Pi runs (it was started with `--no-mcp` or not): a
    /// reload after it was set says it waits for the next start, instead of nothing.
    #[tokio::test]
    async fn a_reload_says_that_a_new_owner_waits_for_the_next_start() {
        use crate::config::module_file::write_module_file;
        use crate::mcp::config::WORKBENCH_CONFIG_FILE;
        let (home, workspace) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let module = McpModule::new(McpManager::new(super::super::config::McpConfig::default()));
        let said = module.reload(Some(home.path()), workspace.path()).await;
        assert_eq!(said, "MCP config reloaded: 0 enabled server(s).");
        write_module_file(
            workspace.path(),
            WORKBENCH_CONFIG_FILE,
            r#"{"mcp": {"owner": "pi"}}"#,
        );
        let said = module.reload(Some(home.path()), workspace.path()).await;
        assert!(
            said.ends_with(
                "mcp.owner is \"pi\" in .unipi/config/workbench.json: that takes effect at the \
                 next start (this Pi was started with --no-mcp); until then the workbench runs \
                 the servers."
            ),
            "{said}"
        );
        module.shutdown().await;
    }
}

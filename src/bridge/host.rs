//! [`BridgeHost`]: the listening socket, the agents it knows (one token per Pi process), the
//! live connection of each, and the app's calls into Pi.
//!
//! Tokens and connections are kept per agent in one map behind one lock, so "a token is good
//! for one connection at a time of one Pi process" is a single check: a `hello` is accepted when
//! the agent has no live connection and the peer is the process that first used the token (or
//! the token is unused). That is what lets Pi's re-instantiated extension reconnect after
//! `/reload`, `/new`, `/resume` and `/fork` while a copied token stays useless to anyone else.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::net::UnixListener;
use tokio::sync::{Semaphore, mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio_util::task::TaskTracker;

use super::events::{BridgeEvent, NotifyLevel};
use super::host_state::{AgentEntry, AgentInfo, HostOptions, HostState};
use super::protocol::HostMessage;
use super::registry::Registry;
use super::runtime_dir::{RuntimeDir, SOCKET_NAME, new_token};
use super::wakes::{WakeReach, Wakes};
use super::{AgentId, connection, env};
use crate::sys::lock;

/// A call from the workbench into one Pi process.
#[derive(Debug, Clone, PartialEq)]
pub enum HostCall {
    /// `pi.sendMessage`: a custom message (rendered as a card when its type is declared).
    SendMessage {
        custom_type: String,
        content: String,
        display: bool,
        details: Value,
        deliver_as: Option<DeliverAs>,
        trigger_turn: bool,
    },
    /// `pi.sendUserMessage`: as if the user typed it.
    SendUserMessage {
        content: String,
        deliver_as: Option<DeliverAs>,
    },
    /// `pi.setModel`; answers `true`, or `false` when Pi has no credentials for it.
    SetModel { provider: String, id: String },
    /// The models Pi can use: `[{provider, id, name, context_window, max_tokens, reasoning,
    /// vision, has_auth, cost}]` (decodes as `Vec<ModelInfo>`).
    ListModels,
    /// Every model Pi knows, with or without credentials (`has_auth` tells them apart): what a
    /// model picker lists, so a model without a key can be shown and refused in words.
    ListAllModels,
    /// `pi.setSessionName`: the name the session selector shows.
    SetSessionName { name: String },
    /// Starts a compaction (the outcome arrives as `CompactionEnd`).
    Compact { instructions: Option<String> },
    /// `ctx.getContextUsage()`: `{tokens, context_window, percent}` or null.
    GetContextUsage,
    /// `pi.setActiveTools`.
    SetActiveTools { names: Vec<String> },
    /// `pi.getActiveTools`.
    GetActiveTools,
    /// `pi.setThinkingLevel`.
    SetThinkingLevel { level: String },
    /// `ctx.ui.notify` (a no-op in print and JSON modes).
    Notify { message: String, level: NotifyLevel },
    /// Hide Pi's footer (an empty one) or give it back.
    SetFooter { hidden: bool },
    /// `ctx.ui.setWidget(key, lines, {placement: "aboveEditor"})`: plain text lines above Pi's
    /// editor under `key`; `None` removes them. Answers whether Pi has a UI to show them in.
    SetWidget {
        key: String,
        lines: Option<Vec<String>>,
    },
    /// A tool policy the extension enforces in Pi's `tool_call` hook: a call of a tool not in
    /// `allowed` is blocked with `reason` (`{tool}` in it replaced by the tool's name), and a call
    /// of one of `paths.tools` whose `path` is not under `paths.root` with `paths.reason`.
    /// `allowed: None` lifts the policy. Complements `SetActiveTools`, which hides tools from the
    /// model but does not stop calls that reach Pi another way (nested calls, tools activated
    /// meanwhile); a call of a hidden tool, which Pi answers "not found" without asking the
    /// hook, gets `reason` as its result too.
    SetToolPolicy {
        allowed: Option<Vec<String>>,
        reason: String,
        paths: Option<PathRule>,
    },
    /// `ctx.ui.setEditorText`: replaces the text in Pi's editor (the user submits it).
    SetEditorText { text: String },
    /// Pi's own new session (`ctx.newSession`, which Pi gives commands only: the extension runs
    /// its own command for it), whose first user message is `first_message`. The old session
    /// ends as with `/new` (`session_shutdown`, then `session_start` with reason `new`).
    NewSession { first_message: String },
}

/// Where the tools of a [`HostCall::SetToolPolicy`] may write: a call of one of `tools` whose
/// `path` argument (resolved the way Pi resolves it, symlinks followed) is not under `root` is
/// blocked with `reason` (`{tool}` and `{path}` in it replaced by the tool and the path asked for).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathRule {
    pub tools: Vec<String>,
    pub root: PathBuf,
    pub reason: String,
}

/// When a message sent into a busy Pi is delivered (Pi's `deliverAs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum DeliverAs {
    Steer,
    FollowUp,
    NextTurn,
}

impl HostCall {
    /// The wire method name.
    pub fn method(&self) -> &'static str {
        match self {
            Self::SendMessage { .. } => "send_message",
            Self::SendUserMessage { .. } => "send_user_message",
            Self::SetModel { .. } => "set_model",
            Self::ListModels | Self::ListAllModels => "list_models",
            Self::SetSessionName { .. } => "set_session_name",
            Self::Compact { .. } => "compact",
            Self::GetContextUsage => "get_context_usage",
            Self::SetActiveTools { .. } => "set_active_tools",
            Self::GetActiveTools => "get_active_tools",
            Self::SetThinkingLevel { .. } => "set_thinking_level",
            Self::Notify { .. } => "notify",
            Self::SetFooter { .. } => "set_footer",
            Self::SetWidget { .. } => "set_widget",
            Self::SetToolPolicy { .. } => "set_tool_policy",
            Self::SetEditorText { .. } => "set_editor_text",
            Self::NewSession { .. } => "new_session",
        }
    }

    /// The wire params.
    pub fn params(&self) -> Value {
        match self {
            Self::SendMessage {
                custom_type,
                content,
                display,
                details,
                deliver_as,
                trigger_turn,
            } => json!({
                "custom_type": custom_type, "content": content, "display": display,
                "details": details, "deliver_as": deliver_as, "trigger_turn": trigger_turn,
            }),
            Self::SendUserMessage {
                content,
                deliver_as,
            } => json!({"content": content, "deliver_as": deliver_as}),
            Self::SetModel { provider, id } => json!({"provider": provider, "id": id}),
            Self::Compact { instructions } => json!({"instructions": instructions}),
            Self::SetActiveTools { names } => json!({"names": names}),
            Self::SetThinkingLevel { level } => json!({"level": level}),
            Self::Notify { message, level } => json!({"message": message, "level": level}),
            Self::SetFooter { hidden } => json!({"hidden": hidden}),
            Self::SetWidget { key, lines } => json!({"key": key, "lines": lines}),
            Self::SetToolPolicy {
                allowed,
                reason,
                paths,
            } => json!({"allowed": allowed, "reason": reason, "paths": paths}),
            Self::SetEditorText { text } => json!({"text": text}),
            Self::NewSession { first_message } => json!({"first_message": first_message}),
            Self::ListAllModels => json!({"all": true}),
            Self::SetSessionName { name } => json!({"name": name}),
            Self::ListModels | Self::GetContextUsage | Self::GetActiveTools => json!({}),
        }
    }

    /// How long [`BridgeHost::call`] waits for the answer.
    pub(crate) fn default_timeout(&self) -> Duration {
        match self {
            // Setting a model may resolve credentials; everything else is in-process.
            Self::SetModel { .. } => Duration::from_secs(30),
            _ => Duration::from_secs(10),
        }
    }
}

/// Why a host call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BridgeError {
    #[error("agent `{agent}` is not connected to the bridge")]
    NotConnected { agent: AgentId },
    #[error("agent `{agent}` disconnected before answering `{method}`")]
    Disconnected {
        agent: AgentId,
        method: &'static str,
    },
    #[error("agent `{agent}` did not answer `{method}` within {after:?}")]
    Timeout {
        agent: AgentId,
        method: &'static str,
        after: Duration,
    },
    #[error("Pi could not do `{method}`: {message} ({code})")]
    Remote {
        method: &'static str,
        code: String,
        message: String,
    },
}

/// A failed host call, read by the user or the model as the error says it.
impl From<BridgeError> for super::module::Refusal {
    fn from(err: BridgeError) -> Self {
        anyhow::Error::from(err).into()
    }
}

/// The bridge host. Cheap to clone; the socket and runtime directory live until
/// [`BridgeHost::shutdown`] or until the last clone is dropped.
#[derive(Debug, Clone)]
pub struct BridgeHost {
    inner: Arc<HostResources>,
}

#[derive(Debug)]
struct HostResources {
    state: Arc<HostState>,
    runtime: RuntimeDir,
    socket_path: PathBuf,
    /// Dropping (or sending `true`) stops the accept loop and every connection.
    stop: watch::Sender<bool>,
    /// The connection tasks: counted while they run, nothing kept once they end.
    connections: TaskTracker,
    accept: Mutex<Option<JoinHandle<()>>>,
}

impl BridgeHost {
    /// Creates the runtime directory, binds the socket and starts accepting, with the default
    /// [`HostOptions`].
    pub async fn start(
        registry: Arc<Registry>,
        events: mpsc::Sender<BridgeEvent>,
    ) -> anyhow::Result<BridgeHost> {
        Self::start_with(registry, events, HostOptions::default()).await
    }

    pub async fn start_with(
        registry: Arc<Registry>,
        events: mpsc::Sender<BridgeEvent>,
        options: HostOptions,
    ) -> anyhow::Result<BridgeHost> {
        let runtime = RuntimeDir::create(options.runtime_base.as_deref())?;
        let socket_path = runtime.path().join(SOCKET_NAME);
        let listener = UnixListener::bind(&socket_path).with_context(|| {
            format!(
                "cannot listen on the bridge socket {}",
                socket_path.display()
            )
        })?;
        let (stop, stop_rx) = watch::channel(false);
        let state = Arc::new(HostState::new(registry, events, options));
        let connections = TaskTracker::new();
        let accept = tokio::spawn(accept_loop(
            listener,
            state.clone(),
            stop_rx,
            connections.clone(),
        ));
        tracing::info!("bridge listening on {}", socket_path.display());
        Ok(BridgeHost {
            inner: Arc::new(HostResources {
                state,
                runtime,
                socket_path,
                stop,
                connections,
                accept: Mutex::new(Some(accept)),
            }),
        })
    }

    pub fn socket_path(&self) -> &Path {
        &self.inner.socket_path
    }

    pub fn runtime_dir(&self) -> &Path {
        self.inner.runtime.path()
    }

    /// The tools the registry declares now, as (module, tool name).
    pub fn tool_names(&self) -> Vec<(String, String)> {
        self.inner.state.registry.tool_names()
    }

    /// How many connections the host serves now: the authenticated ones and those awaiting (or
    /// being refused) their `hello`, which [`HostOptions::max_unauthenticated`] bounds. A
    /// connection that ended leaves nothing behind.
    pub fn connection_tasks(&self) -> usize {
        self.inner.connections.len()
    }

    /// Issues a fresh token for one Pi process of `agent` (replacing any earlier token of that
    /// agent; a live connection stays) and returns the environment for that process:
    /// `UNIPI_TUI_SOCKET`, `UNIPI_TUI_TOKEN`, `UNIPI_TUI_AGENT`.
    pub fn register_agent(&self, agent: AgentId) -> anyhow::Result<Vec<(String, String)>> {
        let token = new_token()?;
        let mut agents = self.inner.state.lock_agents();
        let entry = agents.entry(agent.clone()).or_default();
        entry.token = token.clone();
        entry.bound_pid = None;
        drop(agents);
        Ok(vec![
            (
                env::SOCKET.to_string(),
                self.inner.socket_path.display().to_string(),
            ),
            (env::TOKEN.to_string(), token),
            (env::AGENT.to_string(), agent.to_string()),
        ])
    }

    /// Forgets `agent`: its token stops working and a live connection is closed.
    pub fn unregister_agent(&self, agent: &AgentId) {
        let removed = self.inner.state.lock_agents().remove(agent);
        if let Some(conn) = removed.and_then(|entry| entry.connection) {
            conn.kill.notify_one();
        }
    }

    /// Delivers a host-made custom message to `agent` as a follow-up (after the current turn),
    /// shown in the transcript, optionally starting a new turn: how every module's durable
    /// notifications (background tasks, helpers) reach the agent.
    pub(crate) async fn send_follow_up(
        &self,
        agent: &AgentId,
        custom_type: &str,
        content: String,
        details: Value,
        trigger_turn: bool,
    ) -> Result<(), BridgeError> {
        let call = HostCall::SendMessage {
            custom_type: custom_type.to_string(),
            content,
            display: true,
            details,
            deliver_as: Some(DeliverAs::FollowUp),
            trigger_turn,
        };
        self.call(agent, call).await.map(|_| ())
    }

    /// Calls into `agent`'s Pi and waits (at most [`HostCall::default_timeout`]) for the answer.
    pub async fn call(&self, agent: &AgentId, call: HostCall) -> Result<Value, BridgeError> {
        let timeout = call.default_timeout();
        self.call_with_timeout(agent, call, timeout).await
    }

    pub async fn call_with_timeout(
        &self,
        agent: &AgentId,
        call: HostCall,
        timeout: Duration,
    ) -> Result<Value, BridgeError> {
        let method = call.method();
        let conn =
            self.inner
                .state
                .connection_of(agent)
                .ok_or_else(|| BridgeError::NotConnected {
                    agent: agent.clone(),
                })?;
        let id = self.inner.state.next_call_id();
        let (answer_tx, answer) = oneshot::channel();
        conn.pending_calls().insert(id, answer_tx);
        let line = HostMessage::Call {
            id,
            method: method.to_string(),
            params: call.params(),
        }
        .to_line();
        let disconnected = || BridgeError::Disconnected {
            agent: agent.clone(),
            method,
        };
        if conn.out.send(line).await.is_err() {
            conn.pending_calls().remove(&id);
            return Err(disconnected());
        }
        match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(error))) => Err(BridgeError::Remote {
                method,
                code: error.code,
                message: error.message,
            }),
            Ok(Err(_)) => Err(disconnected()),
            Err(_) => {
                conn.pending_calls().remove(&id);
                Err(BridgeError::Timeout {
                    agent: agent.clone(),
                    method,
                    after: timeout,
                })
            }
        }
    }

    /// Sends the registry's current declarations to every connected Pi (after a module was
    /// added or changed state). A new connection always gets them in `welcome`.
    pub async fn redeclare(&self) {
        let state = &self.inner.state;
        let line = HostMessage::Declare {
            declarations: state.registry.declarations(state.options.tool_timeout),
        }
        .to_line();
        let outs: Vec<_> = state
            .lock_agents()
            .values()
            .filter_map(|entry| entry.connection.as_ref().map(|conn| conn.out.clone()))
            .collect();
        for out in outs {
            let _ = out.send(line.clone()).await;
        }
    }

    /// What the host knows about `agent` (Pi version, capabilities, whether connected).
    pub fn agent_info(&self, agent: &AgentId) -> Option<AgentInfo> {
        let agents = self.inner.state.lock_agents();
        agents.get(agent).and_then(AgentEntry::info)
    }

    /// The wake-ups promised to agents: work that will start a turn takes a promise here.
    pub fn wakes(&self) -> Wakes {
        self.inner.state.wakes.clone()
    }

    /// Whether `agent` can still be woken once its current run ends (from what its Pi said in
    /// its last `hello`; an agent that never connected counts as one whose Pi stays up).
    pub fn wake_reach(&self, agent: &AgentId) -> WakeReach {
        self.agent_info(agent)
            .map_or(WakeReach::Anytime, |info| WakeReach::of(&info.capabilities))
    }

    /// Every agent that has connected at least once.
    pub fn agents(&self) -> Vec<AgentInfo> {
        let agents = self.inner.state.lock_agents();
        let mut infos: Vec<AgentInfo> = agents.values().filter_map(AgentEntry::info).collect();
        infos.sort_by(|a, b| a.agent.cmp(&b.agent));
        infos
    }

    /// Says goodbye to every connection, stops accepting and removes the runtime directory.
    pub async fn shutdown(self) {
        self.inner.stop.send_replace(true);
        let accept = lock(&self.inner.accept).take();
        if let Some(accept) = accept
            && tokio::time::timeout(SHUTDOWN_GRACE, accept).await.is_err()
        {
            tracing::warn!("the bridge's connections did not close within {SHUTDOWN_GRACE:?}");
        }
        self.inner.runtime.remove();
    }
}

/// Closes a connection at once because too many others await their `hello`: one error line if
/// the socket takes it without waiting, then the close (no task, no buffer, no wait).
fn refuse_busy(state: &HostState, stream: tokio::net::UnixStream, conn_id: u64) {
    let pid = stream.peer_cred().ok().and_then(|cred| cred.pid());
    let error = super::protocol::WireError::new(
        super::protocol::ErrorCode::NotAuthenticated,
        format!(
            "too many connections are waiting to authenticate (at most {}); try again",
            state.options.max_unauthenticated
        ),
    );
    let _ = stream.try_write(HostMessage::error(&error).to_line().as_bytes());
    state.refused(conn_id, pid, None, &error.message);
}

/// How long [`BridgeHost::shutdown`] waits for connections to close.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

async fn accept_loop(
    listener: UnixListener,
    state: Arc<HostState>,
    mut stop: watch::Receiver<bool>,
    connections: TaskTracker,
) {
    let mut next_conn_id: u64 = 1;
    let pending = Arc::new(Semaphore::new(state.options.max_unauthenticated));
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let conn_id = next_conn_id;
                    next_conn_id += 1;
                    match pending.clone().try_acquire_owned() {
                        Ok(permit) => {
                            // Detached and tracked: a task that ends is freed at once. (In a
                            // `JoinSet`, ended tasks waited to be reaped one per turn of this
                            // loop, and only when its `select!` picked that branch: a flood of
                            // connections left tens of thousands unreaped, ~2.8 KB each.)
                            connections.spawn(connection::serve(
                                state.clone(),
                                stream,
                                conn_id,
                                stop.clone(),
                                permit,
                            ));
                        }
                        Err(_) => refuse_busy(&state, stream, conn_id),
                    }
                }
                Err(err) => {
                    tracing::warn!("bridge accept failed: {err}");
                    // Out of file descriptors and the like: do not spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            changed = stop.changed() => {
                if changed.is_err() || *stop.borrow() {
                    break;
                }
            }
        }
    }
    drop(listener);
    // Each connection sees the same stop signal and says goodbye; wait for them to finish.
    connections.close();
    connections.wait().await;
}

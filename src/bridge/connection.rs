//! One client connection: the handshake, then the read loop that dispatches each line, and the
//! clean-up when it ends. Writes go through a queue to a writer task, so tool tasks, host calls
//! and the read loop never contend for the socket and a slow reader on the other side only fills
//! a queue.
//!
//! Policy on bad input: before authentication any problem ends the connection (after an `error`
//! line saying why); after it, a bad line is answered with an `error` line and skipped, because
//! the Pi session on the other side must go on.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncWriteExt as _, BufReader, BufWriter};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{Notify, OwnedSemaphorePermit, broadcast, mpsc, oneshot, watch};

use super::AgentId;
use super::bus::BusEvent;
use super::command::CommandCall;
use super::events::{
    BridgeEvent, Capabilities, CommandReply, DisconnectReason, NotifyLevel, PiEvent,
};
use super::host_state::{AgentEntry, AgentInfo, ConnectionHandle, HostState};
use super::log_limit::clip;
use super::module::{CancelHandle, Completion};
use super::protocol::{
    CallResultMsg, ClientMessage, CommandMsg, CompleteMsg, ErrorCode, ErrorMsg, EventMsg,
    GoodbyeMsg, Hello, HostMessage, LineBuf, LineRead, MAX_HELLO_BYTES, MAX_LINE_BYTES,
    PROTOCOL_VERSION, ToolCallMsg, WelcomeOptions, WireError, parse_client_line, read_line,
};
use super::runtime_dir::secrets_match;
use super::tools;
use crate::sys::lock;

/// Lines queued for the writer before senders wait.
const OUTBOUND_QUEUE: usize = 1024;
/// How long the writer may take to flush the last lines of a closing connection.
const WRITER_GRACE: Duration = Duration::from_secs(1);

/// Serves one accepted connection to its end. `pending` is its place among the connections
/// awaiting `hello`, given back once the handshake is over either way.
pub(crate) async fn serve(
    state: Arc<HostState>,
    stream: UnixStream,
    conn_id: u64,
    stop: watch::Receiver<bool>,
    pending: OwnedSemaphorePermit,
) {
    let peer_pid = stream.peer_cred().ok().and_then(|cred| cred.pid());
    let (read_half, write_half) = stream.into_split();
    let (out, out_rx) = mpsc::channel(OUTBOUND_QUEUE);
    let (writer_stop, writer_stop_rx) = oneshot::channel();
    let mut writer = tokio::spawn(write_lines(write_half, out_rx, writer_stop_rx));
    let mut connection = Connection {
        state,
        conn_id,
        peer_pid,
        out,
        reader: BufReader::with_capacity(64 * 1024, read_half),
        buf: LineBuf::default(),
        stop,
        inflight: Arc::new(Mutex::new(HashMap::new())),
        announced: false,
    };
    let handshake = connection.handshake().await;
    drop(pending);
    match handshake {
        Handshake::Accepted { agent, kill, bus } => {
            let reason = connection.run(&agent, &kill, bus).await;
            connection.finish(&agent, reason).await;
        }
        Handshake::Refused { mut error, agent } => {
            // What the stranger sent may be in the message: cut it, for the log and the answer.
            error.message = clip(&error.message);
            connection.state.refused(
                conn_id,
                peer_pid,
                agent,
                &format!("{} ({})", error.message, error.code.as_str()),
            );
            connection.send(HostMessage::error(&error)).await;
        }
        Handshake::Closed => tracing::debug!(conn = conn_id, "closed before hello"),
    }
    // Let the writer flush what is queued (the refusal, the goodbye), then stop it even if tool
    // tasks still hold senders: their answers have nowhere to go.
    let _ = writer_stop.send(());
    if tokio::time::timeout(WRITER_GRACE, &mut writer)
        .await
        .is_err()
    {
        // The peer stopped reading; do not keep its socket open on its behalf.
        writer.abort();
    }
}

enum Handshake {
    Accepted {
        agent: AgentId,
        kill: Arc<Notify>,
        /// The bus from before the agent was announced, so what answers the announcement
        /// reaches this Pi too.
        bus: broadcast::Receiver<BusEvent>,
    },
    Refused {
        error: WireError,
        agent: Option<AgentId>,
    },
    Closed,
}

struct Connection {
    state: Arc<HostState>,
    conn_id: u64,
    peer_pid: Option<i32>,
    out: mpsc::Sender<String>,
    reader: BufReader<OwnedReadHalf>,
    buf: LineBuf,
    stop: watch::Receiver<bool>,
    /// Cancel handles of this connection's running tool calls, by bridge id.
    inflight: Arc<Mutex<HashMap<u64, CancelHandle>>>,
    /// Whether the app has been told this connection ended.
    announced: bool,
}

impl Connection {
    async fn send(&self, message: HostMessage) {
        // A closed queue means the connection is ending; the message no longer matters.
        let _ = self.out.send(message.to_line()).await;
    }

    async fn handshake(&mut self) -> Handshake {
        let timeout = self.state.options.hello_timeout;
        let read = tokio::time::timeout(
            timeout,
            read_line(&mut self.reader, &mut self.buf, MAX_HELLO_BYTES),
        )
        .await;
        let refuse = |code, message: String| Handshake::Refused {
            error: WireError::new(code, message),
            agent: None,
        };
        match read {
            Err(_) => {
                return refuse(
                    ErrorCode::HelloTimeout,
                    format!("no hello within {timeout:?}"),
                );
            }
            Ok(Err(_) | Ok(LineRead::Eof)) => return Handshake::Closed,
            Ok(Ok(LineRead::TooLong)) => {
                return refuse(
                    ErrorCode::LineTooLong,
                    format!("the first line is longer than {MAX_HELLO_BYTES} bytes"),
                );
            }
            Ok(Ok(LineRead::Line)) => {}
        }
        let hello = match parse_client_line(&self.buf.line) {
            Ok(ClientMessage::Hello(hello)) => hello,
            Ok(other) => {
                return refuse(
                    ErrorCode::NotAuthenticated,
                    format!(
                        "the first message must be `hello`, not `{}`",
                        client_type(&other)
                    ),
                );
            }
            Err(error) => return Handshake::Refused { error, agent: None },
        };
        self.admit(hello).await
    }

    /// Checks the hello against the agents' tokens and, when it passes, makes this the
    /// agent's live connection and sends `welcome`.
    async fn admit(&mut self, hello: Hello) -> Handshake {
        let Some(token) = hello.token.as_deref().filter(|token| !token.is_empty()) else {
            return Handshake::Refused {
                error: WireError::new(ErrorCode::BadToken, "the hello carries no token"),
                agent: None,
            };
        };
        let kill = Arc::new(Notify::new());
        let pi_version = hello.pi_version.clone().unwrap_or_default();
        let capabilities = decode_capabilities(&hello.capabilities);
        let admitted = match self.bind(&hello, token, &kill, &pi_version, &capabilities) {
            Ok(agent) => agent,
            Err(refused) => return refused,
        };
        tracing::info!(
            conn = self.conn_id,
            pid = ?self.peer_pid,
            "bridge: agent `{admitted}` connected (Pi {pi_version}, capabilities {capabilities:?})"
        );
        self.welcome(&admitted).await;
        let bus = self.state.registry.bus().subscribe();
        // Unipi's modules announced themselves at each session start, where this Pi is now.
        for (name, data) in self.state.registry.ready_for_pi() {
            let name = name.to_owned();
            self.send(HostMessage::UnipiEvent { name, data }).await;
        }
        self.state.registry.bus().send(BusEvent::AgentConnected {
            agent: admitted.clone(),
            pi_version: pi_version.clone(),
        });
        self.deliver(BridgeEvent::Connected {
            agent: admitted.clone(),
            pi_version,
            protocol: PROTOCOL_VERSION,
            capabilities,
        })
        .await;
        Handshake::Accepted {
            agent: admitted,
            kill,
            bus,
        }
    }

    /// Finds the agent `token` was issued to and, unless [`refusal`] says no, makes this its
    /// live connection (binding the token to this peer's pid on first use).
    fn bind(
        &self,
        hello: &Hello,
        token: &str,
        kill: &Arc<Notify>,
        pi_version: &str,
        capabilities: &Capabilities,
    ) -> Result<AgentId, Handshake> {
        let mut agents = self.state.lock_agents();
        let found = agents
            .iter_mut()
            .find(|(_, entry)| secrets_match(entry.token.as_bytes(), token.as_bytes()));
        let Some((agent, entry)) = found else {
            return Err(Handshake::Refused {
                error: WireError::new(ErrorCode::BadToken, "the token is not one this host issued"),
                agent: None,
            });
        };
        if let Some(error) = refusal(agent, entry, hello, self.peer_pid) {
            return Err(Handshake::Refused {
                error,
                agent: Some(agent.clone()),
            });
        }
        entry.bound_pid = entry.bound_pid.or(self.peer_pid);
        entry.connection = Some(ConnectionHandle {
            conn_id: self.conn_id,
            out: self.out.clone(),
            pending: Arc::new(Mutex::new(HashMap::new())),
            kill: kill.clone(),
        });
        entry.last = Some(AgentInfo {
            agent: agent.clone(),
            pi_version: pi_version.to_string(),
            protocol: PROTOCOL_VERSION,
            capabilities: capabilities.clone(),
            connected: true,
        });
        Ok(agent.clone())
    }

    /// Sends `welcome`: the agent's name, the modules' declarations and the display options.
    async fn welcome(&self, agent: &AgentId) {
        let options = &self.state.options;
        self.send(HostMessage::Welcome {
            protocol: PROTOCOL_VERSION,
            agent: agent.to_string(),
            host_version: env!("CARGO_PKG_VERSION").to_string(),
            declarations: self.state.registry.declarations(options.tool_timeout),
            options: WelcomeOptions {
                hide_footer: options.hide_footer,
                card_colors: options.card_colors.clone(),
            },
        })
        .await;
    }

    /// Reads and dispatches lines until the connection ends, and passes the modules' events on
    /// to Pi's `pi.events`; returns why it ended.
    async fn run(
        &mut self,
        agent: &AgentId,
        kill: &Notify,
        mut bus: broadcast::Receiver<BusEvent>,
    ) -> DisconnectReason {
        let mut bus_open = true;
        loop {
            if *self.stop.borrow() {
                return self.host_shutdown().await;
            }
            let read = tokio::select! {
                read = read_line(&mut self.reader, &mut self.buf, MAX_LINE_BYTES) => read,
                changed = self.stop.changed() => {
                    if changed.is_err() || *self.stop.borrow() {
                        return self.host_shutdown().await;
                    }
                    continue;
                }
                () = kill.notified() => return DisconnectReason::Revoked,
                event = bus.recv(), if bus_open => {
                    bus_open = self.forward(event).await;
                    continue;
                }
            };
            match read {
                Ok(LineRead::Line) => match parse_client_line(&self.buf.line) {
                    Ok(message) => {
                        if let Some(reason) = self.dispatch(agent, message).await {
                            return reason;
                        }
                    }
                    Err(error) => self.complain(agent, error).await,
                },
                Ok(LineRead::TooLong) => {
                    let error = WireError::new(
                        ErrorCode::LineTooLong,
                        format!("a line longer than {MAX_LINE_BYTES} bytes was dropped"),
                    );
                    self.complain(agent, error).await;
                }
                Ok(LineRead::Eof) => return DisconnectReason::Closed,
                Err(err) => return DisconnectReason::Error(err.to_string()),
            }
        }
    }

    /// A module event with a form for Pi goes to its `pi.events` ([`BusMessage::pi_event`]).
    /// Pi's own events and the connections' are not sent back; one that fell behind loses
    /// events (logged), never the connection. False once the bus is closed.
    ///
    /// [`BusMessage::pi_event`]: super::BusMessage::pi_event
    async fn forward(&self, event: Result<BusEvent, broadcast::error::RecvError>) -> bool {
        match event {
            Ok(BusEvent::Module {
                name,
                pi_event: Some(data),
                ..
            }) => self.send(HostMessage::UnipiEvent { name, data }).await,
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(skipped)) => {
                tracing::warn!(
                    conn = self.conn_id,
                    "bridge: {skipped} module events were not passed on to Pi (it fell behind)"
                );
            }
            Err(broadcast::error::RecvError::Closed) => return false,
        }
        true
    }

    async fn host_shutdown(&self) -> DisconnectReason {
        self.send(HostMessage::Goodbye {
            reason: "unipi-tui is shutting down".into(),
        })
        .await;
        DisconnectReason::HostShutdown
    }

    /// Answers a bad line of an authenticated client and goes on.
    async fn complain(&self, agent: &AgentId, mut error: WireError) {
        error.message = clip(&error.message);
        tracing::warn!(
            conn = self.conn_id,
            "bridge: bad line from agent `{agent}`: {} ({})",
            error.message,
            error.code.as_str()
        );
        self.state.fault(
            Some(agent.clone()),
            format!("bad bridge message: {}", error.message),
        );
        self.send(HostMessage::error(&error)).await;
    }

    /// Handles one message of an authenticated client; `Some` ends the connection.
    async fn dispatch(
        &mut self,
        agent: &AgentId,
        message: ClientMessage,
    ) -> Option<DisconnectReason> {
        match message {
            ClientMessage::Hello(_) => {
                let error = WireError::new(ErrorCode::BadMessage, "already authenticated");
                self.complain(agent, error).await;
            }
            ClientMessage::Event(event) => self.on_event(agent, event).await,
            ClientMessage::ToolCall(call) => self.on_tool_call(agent, call).await,
            ClientMessage::ToolCancel(cancel) => self.on_tool_cancel(cancel.id),
            ClientMessage::Command(command) => self.forward_command(agent, command),
            ClientMessage::Complete(complete) => {
                let items = self.complete(&complete);
                self.send(HostMessage::CompleteResult {
                    id: complete.id,
                    items,
                })
                .await;
            }
            ClientMessage::CallResult(result) => self.on_call_result(agent, result).await,
            ClientMessage::Hook(hook) if hook.name == tools::SETTLE_HOOK => {
                tools::spawn_settle_hold(&self.state, agent.clone(), self.out.clone(), hook.id);
            }
            ClientMessage::Hook(hook) => {
                super::tools::spawn_hook(&self.state, agent.clone(), self.out.clone(), hook);
            }
            ClientMessage::Goodbye(goodbye) => return Some(self.on_goodbye(agent, goodbye).await),
            ClientMessage::Error(error) => self.on_client_error(agent, &error),
        }
        None
    }

    /// A Pi event: typed (or kept as `Other` when its payload is unexpected), published on the
    /// bus and delivered to the app.
    async fn on_event(&self, agent: &AgentId, event: EventMsg) {
        let pi_event = PiEvent::from_wire(&event.name, &event.data).unwrap_or_else(|err| {
            tracing::warn!(
                "bridge: event `{}` has an unexpected payload: {}",
                clip(&event.name),
                clip(&err.to_string())
            );
            PiEvent::Other {
                name: event.name,
                data: event.data,
            }
        });
        self.state.registry.bus().send(BusEvent::Pi {
            agent: agent.clone(),
            event: Arc::new(pi_event.clone()),
        });
        self.deliver(BridgeEvent::Pi {
            agent: agent.clone(),
            event: pi_event,
        })
        .await;
    }

    /// Starts a tool call, unless its id is already in flight.
    async fn on_tool_call(&self, agent: &AgentId, call: ToolCallMsg) {
        let duplicate = self.lock_inflight().contains_key(&call.id);
        if duplicate {
            let error = WireError::new(
                ErrorCode::BadMessage,
                format!("tool call id {} is already in flight", call.id),
            );
            self.complain(agent, error).await;
        } else {
            tools::spawn_call(
                &self.state,
                agent.clone(),
                self.out.clone(),
                self.inflight.clone(),
                call,
            );
        }
    }

    fn on_tool_cancel(&self, id: u64) {
        let handle = self.lock_inflight().get(&id).cloned();
        match handle {
            Some(handle) => handle.cancel(),
            // The result may have crossed the cancel on the wire: nothing to do.
            None => tracing::debug!("bridge: cancel for finished tool call {id}"),
        }
    }

    /// The answer to one of the host's calls, handed to the call waiting for it.
    async fn on_call_result(&self, agent: &AgentId, result: CallResultMsg) {
        let waiter = self
            .state
            .lock_agents()
            .get(agent)
            .and_then(|entry| entry.connection.as_ref())
            .filter(|conn| conn.conn_id == self.conn_id)
            .and_then(|conn| conn.pending_calls().remove(&result.id));
        match waiter {
            Some(waiter) => {
                let outcome = if result.ok {
                    Ok(result.value)
                } else {
                    Err(result.error.unwrap_or(super::protocol::ErrorMsg {
                        code: ErrorCode::Internal.as_str().into(),
                        message: "the call failed without saying why".into(),
                    }))
                };
                let _ = waiter.send(outcome);
            }
            None => {
                // Late answers to timed-out calls land here too; say so, do not drop.
                let error = WireError::new(
                    ErrorCode::UnknownId,
                    format!("no pending call has id {}", result.id),
                );
                self.complain(agent, error).await;
            }
        }
    }

    /// The extension says goodbye: announce and release, then acknowledge.
    async fn on_goodbye(&mut self, agent: &AgentId, goodbye: GoodbyeMsg) -> DisconnectReason {
        // Announce and release before acknowledging: the extension waits for the ack,
        // and Pi's next extension instance must find the agent free when it says hello
        // (and the app must see this Disconnected before the next Connected).
        let reason = DisconnectReason::Goodbye(goodbye.reason.clone());
        self.announce_disconnect(agent, &reason).await;
        self.release(agent);
        self.send(HostMessage::Goodbye {
            reason: goodbye.reason,
        })
        .await;
        reason
    }

    /// An error the extension reports: logged and shown as a fault.
    fn on_client_error(&self, agent: &AgentId, error: &ErrorMsg) {
        let message = clip(&error.message);
        tracing::warn!(
            "bridge: agent `{agent}` reported {}: {message}",
            clip(&error.code)
        );
        self.state.fault(
            Some(agent.clone()),
            format!("the bridge extension reported: {message}"),
        );
    }

    /// Runs a `/unipi:*` invocation on the handler of the command of that name, in a task of its
    /// own (a panic or a timeout becomes an error Pi shows), and answers Pi with what it returns.
    fn forward_command(&self, agent: &AgentId, command: CommandMsg) {
        let state = self.state.clone();
        let out = self.out.clone();
        let call = CommandCall {
            agent: agent.clone(),
            name: command.name.clone(),
            args: command.args,
        };
        let agent = agent.clone();
        tokio::spawn(async move {
            let name = call.name.clone();
            let reply = match state.registry.command(&name) {
                None => CommandReply::Failed {
                    message: format!("unipi-tui has no command /{name}"),
                },
                Some((module, command)) => {
                    let timeout = state.options.command_timeout;
                    let agent = call.agent.clone();
                    let task = tokio::spawn(command.run(call));
                    match tokio::time::timeout(timeout, task).await {
                        Ok(Ok(reply)) => reply,
                        Ok(Err(err)) => {
                            let message =
                                format!("module `{module}` failed running /{name}: {err}");
                            tracing::error!("bridge: {message}");
                            state.fault(Some(agent), message.clone());
                            CommandReply::Failed { message }
                        }
                        Err(_) => CommandReply::Failed {
                            message: format!(
                                "the workbench did not answer /{name} within {timeout:?}"
                            ),
                        },
                    }
                }
            };
            // Before the answer goes to Pi, so whoever follows the events has it by the time
            // Pi has acted on it (a print run may exit right after).
            let answered = BridgeEvent::CommandAnswered {
                agent: agent.clone(),
                name: name.clone(),
                reply: reply.clone(),
            };
            let _ = state.events.send(answered).await;
            let (ok, message, level) = match reply {
                CommandReply::Done => (true, None, None),
                CommandReply::Notify { message, level } => (true, Some(message), Some(level)),
                CommandReply::Failed { message } => {
                    (false, Some(message), Some(NotifyLevel::Error))
                }
            };
            let line = HostMessage::CommandResult {
                id: command.id,
                ok,
                message,
                level,
            }
            .to_line();
            let _ = out.send(line).await;
        });
    }

    /// Completions for a command argument: the static ones that match, then its completer's.
    fn complete(&self, request: &CompleteMsg) -> Vec<Completion> {
        let Some((module, command)) = self.state.registry.command(&request.command) else {
            return Vec::new();
        };
        let mut items: Vec<Completion> = command
            .spec
            .completions
            .iter()
            .filter(|item| item.value.starts_with(&request.prefix))
            .cloned()
            .collect();
        // Module code runs on this connection's task: a panic must not take the connection.
        match std::panic::catch_unwind(AssertUnwindSafe(|| command.complete(&request.prefix))) {
            Ok(more) => items.extend(more),
            Err(_) => tracing::error!("module `{module}` panicked completing /{}", request.command),
        }
        items
    }

    /// Delivers an event to the app, waiting if its queue is full (backpressure on Pi's
    /// stream rather than loss). A gone app is not an error here.
    async fn deliver(&self, event: BridgeEvent) {
        let _ = self.state.events.send(event).await;
    }

    /// Frees the agent for its next connection, if this is still its live one.
    fn release(&self, agent: &AgentId) -> Option<ConnectionHandle> {
        let mut agents = self.state.lock_agents();
        let entry = agents.get_mut(agent)?;
        if entry
            .connection
            .as_ref()
            .is_some_and(|conn| conn.conn_id == self.conn_id)
        {
            entry.connection.take()
        } else {
            None
        }
    }

    async fn finish(&mut self, agent: &AgentId, reason: DisconnectReason) {
        for handle in self.lock_inflight().values() {
            handle.cancel();
        }
        // Announced while the agent is still held, so the app sees this Disconnected before
        // the Connected of a reconnecting instance.
        self.announce_disconnect(agent, &reason).await;
        // Dropping the pending senders fails the waiting host calls with `Disconnected`.
        if let Some(conn) = self.release(agent) {
            conn.pending_calls().clear();
        }
    }

    /// Tells the bus and the app that this connection ended (once).
    async fn announce_disconnect(&mut self, agent: &AgentId, reason: &DisconnectReason) {
        if std::mem::replace(&mut self.announced, true) {
            return;
        }
        tracing::info!(
            conn = self.conn_id,
            "bridge: agent `{agent}` disconnected: {reason}"
        );
        self.state.registry.bus().send(BusEvent::AgentDisconnected {
            agent: agent.clone(),
            reason: reason.clone(),
        });
        self.deliver(BridgeEvent::Disconnected {
            agent: agent.clone(),
            reason: reason.clone(),
        })
        .await;
    }

    fn lock_inflight(&self) -> std::sync::MutexGuard<'_, HashMap<u64, CancelHandle>> {
        lock(&self.inflight)
    }
}

fn client_type(message: &ClientMessage) -> &'static str {
    match message {
        ClientMessage::Hello(_) => "hello",
        ClientMessage::Event(_) => "event",
        ClientMessage::ToolCall(_) => "tool_call",
        ClientMessage::ToolCancel(_) => "tool_cancel",
        ClientMessage::Command(_) => "command",
        ClientMessage::Complete(_) => "complete",
        ClientMessage::CallResult(_) => "call_result",
        ClientMessage::Hook(_) => "hook",
        ClientMessage::Goodbye(_) => "goodbye",
        ClientMessage::Error(_) => "error",
    }
}

/// Why an agent whose token matched may not connect now: it is connected already, its token is
/// bound to another process, or the extension speaks another protocol.
fn refusal(
    agent: &AgentId,
    entry: &AgentEntry,
    hello: &Hello,
    peer_pid: Option<i32>,
) -> Option<WireError> {
    if entry.connection.is_some() {
        Some(WireError::new(
            ErrorCode::TokenInUse,
            format!("agent `{agent}` already has a live bridge connection"),
        ))
    } else if entry.bound_pid.is_some_and(|bound| Some(bound) != peer_pid) {
        Some(WireError::new(
            ErrorCode::TokenReused,
            format!(
                "the token of agent `{agent}` belongs to another process (pid {:?}, not {:?})",
                entry.bound_pid, peer_pid
            ),
        ))
    } else if hello.protocol != Some(PROTOCOL_VERSION) {
        Some(WireError::new(
            ErrorCode::ProtocolMismatch,
            match hello.protocol {
                Some(theirs) => format!(
                    "the bridge extension speaks protocol {theirs}, unipi-tui speaks \
                     {PROTOCOL_VERSION}: the extension file and the unipi-tui binary are \
                     from different builds"
                ),
                None => format!(
                    "the hello states no protocol version; unipi-tui speaks {PROTOCOL_VERSION}"
                ),
            },
        ))
    } else {
        None
    }
}

fn decode_capabilities(value: &Value) -> Capabilities {
    if value.is_null() {
        return Capabilities::default();
    }
    serde_json::from_value(value.clone()).unwrap_or_else(|err| {
        tracing::warn!(
            "bridge: cannot read the hello's capabilities ({}): {}",
            clip(&err.to_string()),
            clip(&value.to_string())
        );
        Capabilities::default()
    })
}

/// Writes queued lines, batching what is already queued into one flush. On `stop` it writes
/// what is queued at that moment and ends (closing the write half).
async fn write_lines(
    write_half: OwnedWriteHalf,
    mut lines: mpsc::Receiver<String>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut writer = BufWriter::with_capacity(64 * 1024, write_half);
    loop {
        let line = tokio::select! {
            biased;
            line = lines.recv() => line,
            _ = &mut stop => {
                while let Ok(line) = lines.try_recv() {
                    if writer.write_all(line.as_bytes()).await.is_err() {
                        return;
                    }
                }
                break;
            }
        };
        let Some(line) = line else {
            break;
        };
        let mut written = writer.write_all(line.as_bytes()).await;
        while written.is_ok()
            && let Ok(more) = lines.try_recv()
        {
            written = writer.write_all(more.as_bytes()).await;
        }
        if written.is_err() || writer.flush().await.is_err() {
            // The peer is gone; the read side will notice and end the connection.
            return;
        }
    }
    let _ = writer.flush().await;
    let _ = writer.shutdown().await;
}

//! The session's core, run by the session process: it owns the PTY the workbench runs in, the
//! listening socket, and at most one attached client, and pumps bytes between the two.
//!
//! - **Connections** are accepted only from our own user: the socket's directory is private, and
//!   the peer's credentials (`SO_PEERCRED`) are checked on accept too, so a socket reached some
//!   other way still refuses another user. The first frame says what the connection is for
//!   ([`Role`]): a terminal attaching, `ls` asking for the status, `kill`, or the workbench's
//!   control link (accepted only from the workbench's own pid).
//! - **The relay** is a byte pump: the client's input goes to the PTY unchanged, the PTY's output
//!   to the client in chunks. While nobody is attached the output is dropped: the workbench
//!   repaints everything when a terminal attaches, so nothing shown is lost.
//! - **Attach, detach, takeover.** The first attach starts the workbench at that terminal's size
//!   and `TERM`. A later one resizes the PTY and tells the workbench ([`Control::Attached`]), which
//!   writes a marker ([`attach_marker`]), sets up every terminal mode again and repaints; output is
//!   forwarded from the marker on, so nothing half-written before reaches the new terminal. An
//!   attach while a client is attached takes over: the first is told ([`Control::Detached`]) and
//!   let go. The detach key (the workbench says [`Control::Detach`]) and a client that goes away
//!   detach; a client that stops reading its output for [`SLOW_CLIENT`] is dropped, so a frozen
//!   connection never stalls the workbench.
//! - **The end.** When the workbench exits (Pi exited, or `kill` stopped it) the client and the
//!   `kill` callers get its exit code ([`Control::Exit`]), the workbench's process group is made
//!   sure to be empty, and [`serve`] returns the code; the caller removes the session's directory.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::protocol::{
    Control, DetachReason, Frame, FrameReader, Keyboard, Role, Status, VERSION, attach_marker,
    write_frame,
};
use crate::pane::pty::{ChildExit, Pty, PtyEvent, SpawnSpec, terminate_group};
use crate::sys::{lock, sleep_until_some};

/// A client whose output queue stays full this long is dropped.
pub(crate) const SLOW_CLIENT: Duration = Duration::from_secs(5);
/// How long a new connection has to say what it is for.
const HELLO_WITHIN: Duration = Duration::from_secs(5);
/// How long the workbench gets to stop (it stops Pi, helpers, tasks and MCP servers first).
pub const STOP_GRACE: Duration = Duration::from_secs(10);
/// Output after an attach waits this long for the workbench's marker, then flows anyway.
const MARKER_WITHIN: Duration = Duration::from_secs(2);
/// After the workbench exited, how long its terminal's last output may take to drain.
const DRAIN_WITHIN: Duration = Duration::from_secs(2);
/// Frames queued for a client before the relay waits for it.
const QUEUE: usize = 64;

/// What the first attaching terminal is like, for the program the session starts.
#[derive(Clone, Debug)]
pub(crate) struct FirstAttach {
    pub rows: u16,
    pub cols: u16,
    pub term: Option<String>,
}

/// Builds what runs in the session's terminal, once the first terminal attached.
pub(crate) type Program = Box<dyn FnOnce(&FirstAttach) -> SpawnSpec + Send>;

/// What [`serve`] runs.
pub(crate) struct ServerOptions {
    /// The session's status as `ls` shows it (name, pid, cwd, start); kept current here.
    pub status: Status,
    pub listener: tokio::net::UnixListener,
    pub program: Program,
    /// The session ends when no terminal attaches this soon after it started.
    pub first_attach_within: Duration,
}

/// Runs the session until its program exits (or nobody attached in time, or it was killed);
/// returns the program's exit code. `terminate` resolving (SIGTERM) ends it like `kill`.
pub(crate) async fn serve(
    options: ServerOptions,
    terminate: impl Future<Output = ()>,
) -> Result<i32> {
    let (events_tx, mut events) = mpsc::channel::<Event>(64);
    let status = Arc::new(Mutex::new(options.status));
    let accept = tokio::spawn(accept_loop(
        options.listener,
        events_tx.clone(),
        Arc::clone(&status),
    ));
    let (pty_tx, mut pty_events) = mpsc::channel::<PtyEvent>(4);
    let mut session = Session::new(status, options.program, pty_tx);
    let started = Instant::now();
    tokio::pin!(terminate);
    let mut terminated = false;
    let code = loop {
        let first_attach_at =
            (session.pty.is_none()).then(|| started + options.first_attach_within);
        let marker_at = match &session.forward {
            Forward::AfterMarker { deadline, .. } => Some(*deadline),
            Forward::All => None,
        };
        let drained_at = session.exited_at.map(|at| at + DRAIN_WITHIN);
        tokio::select! {
            biased;
            () = &mut terminate, if !terminated => {
                terminated = true;
                if session.terminate() {
                    break 0;
                }
            }
            Some(event) = pty_events.recv() => session.pty_event(event).await,
            Some(event) = events.recv() => {
                if let Some(code) = session.event(event) {
                    break code;
                }
            }
            () = sleep_until_some(first_attach_at) => {
                break session.never_attached(options.first_attach_within);
            }
            () = sleep_until_some(marker_at) => session.marker_missed(),
            () = sleep_until_some(drained_at), if !session.closed => session.drain_expired(),
        }
        if let Some(exit) = session.exit
            && session.closed
        {
            break exit.shell_code();
        }
    };
    accept.abort();
    session.finish(code).await;
    Ok(code)
}

/// A terminal attaching.
struct AttachRequest {
    id: u64,
    peer: String,
    rows: u16,
    cols: u16,
    keyboard: Keyboard,
    term: Option<String>,
    out: Outbox,
}

/// What the connections tell the loop.
enum Event {
    Attach(AttachRequest),
    Kill {
        out: Outbox,
    },
    Workbench {
        id: u64,
        pid: Option<i32>,
        out: Outbox,
    },
    /// A frame from an attached client (or one that was, which is ignored).
    FromClient {
        id: u64,
        frame: Frame,
    },
    ClientGone {
        id: u64,
    },
    FromWorkbench {
        id: u64,
        control: Control,
    },
    WorkbenchGone {
        id: u64,
    },
}

/// Frames for one peer, written by a task of its own (so a slow peer never blocks the loop
/// beyond [`SLOW_CLIENT`]).
struct Outbox {
    tx: mpsc::Sender<Frame>,
    writer: JoinHandle<()>,
}

impl Outbox {
    fn new(mut write: OwnedWriteHalf, peer: String) -> Outbox {
        let (tx, mut rx) = mpsc::channel::<Frame>(QUEUE);
        let writer = tokio::spawn(async move {
            while let Some(frame) = rx.recv().await {
                match tokio::time::timeout(SLOW_CLIENT, write_frame(&mut write, &frame)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(err)) => {
                        tracing::debug!("writing to {peer}: {err}");
                        return;
                    }
                    Err(_) => {
                        tracing::info!("{peer} read nothing for {SLOW_CLIENT:?}; dropped");
                        return;
                    }
                }
            }
            // Every queued frame is written: close our side.
            let _ = tokio::io::AsyncWriteExt::shutdown(&mut write).await;
        });
        Outbox { tx, writer }
    }

    /// Queues a control frame without waiting; a peer that stopped reading loses it.
    fn say(&self, control: Control) {
        if self.tx.try_send(Frame::Control(control)).is_err() {
            tracing::debug!("a control frame for a peer that does not read was dropped");
        }
    }

    /// Lets the peer go once its queue is written (bounded by [`SLOW_CLIENT`] per frame).
    fn close(self) -> JoinHandle<()> {
        self.writer
    }
}

struct Client {
    id: u64,
    peer: String,
    out: Outbox,
}

/// Where the PTY's output goes while a client is attached.
enum Forward {
    All,
    /// After an attach: dropped until the workbench's marker for this attach.
    AfterMarker {
        marker: Vec<u8>,
        seen: Vec<u8>,
        deadline: Instant,
    },
}

struct Session {
    name: String,
    status: Arc<Mutex<Status>>,
    program: Option<Program>,
    pty: Option<Pty>,
    pty_tx: mpsc::Sender<PtyEvent>,
    client: Option<Client>,
    forward: Forward,
    workbench: Option<(u64, Outbox)>,
    /// `kill` callers waiting for the end.
    killers: Vec<Outbox>,
    /// Attaches so far (names the marker the workbench writes for each).
    generation: u64,
    exit: Option<ChildExit>,
    closed: bool,
    stopping: bool,
    /// Said to the client with the exit code (who ended the session).
    ending: Option<String>,
    /// When the program exited: the terminal has [`DRAIN_WITHIN`] from then to close.
    exited_at: Option<Instant>,
}

impl Session {
    fn new(status: Arc<Mutex<Status>>, program: Program, pty_tx: mpsc::Sender<PtyEvent>) -> Self {
        let name = lock(&status).name.clone();
        Self {
            name,
            status,
            program: Some(program),
            pty: None,
            pty_tx,
            client: None,
            forward: Forward::All,
            workbench: None,
            killers: Vec::new(),
            generation: 0,
            exit: None,
            closed: false,
            stopping: false,
            ending: None,
            exited_at: None,
        }
    }

    /// SIGTERM: ends the session like `kill`; true when it ends now.
    fn terminate(&mut self) -> bool {
        tracing::info!("session {}: asked to stop (signal)", self.name);
        self.stop("the session process was asked to stop")
    }

    async fn pty_event(&mut self, event: PtyEvent) {
        match event {
            PtyEvent::Output(bytes) => self.output(bytes).await,
            PtyEvent::Closed => self.closed = true,
            PtyEvent::Exited(exit) => {
                tracing::info!("session {}: the program exited: {exit:?}", self.name);
                self.exit = Some(exit);
                self.exited_at = Some(Instant::now());
            }
        }
    }

    /// Nobody attached in time: the exit code the session ends with.
    fn never_attached(&self, within: Duration) -> i32 {
        tracing::warn!(
            "session {}: no terminal attached within {within:?}; ending",
            self.name
        );
        1
    }

    fn marker_missed(&mut self) {
        tracing::warn!(
            "session {}: the workbench did not mark its repaint within {MARKER_WITHIN:?}; \
             forwarding its output as it comes",
            self.name
        );
        self.forward = Forward::All;
    }

    fn drain_expired(&mut self) {
        tracing::warn!(
            "session {}: the terminal stayed open {DRAIN_WITHIN:?} after the program \
             exited (a process it left holds it)",
            self.name
        );
        self.closed = true;
    }

    /// Handles one event; the exit code when the session ends now (killed before its program
    /// started, or the program could not start).
    fn event(&mut self, event: Event) -> Option<i32> {
        match event {
            Event::Attach(request) => {
                if let Err(err) = self.attach(request) {
                    tracing::error!("session {}: {err:#}", self.name);
                    self.ending = Some(format!("unipi-tui: {err:#}"));
                    return Some(1);
                }
            }
            Event::Kill { out } => {
                self.killers.push(out);
                let why = format!("session {} was ended by `unipi-tui kill`", self.name);
                return self.stop(&why).then_some(0);
            }
            Event::Workbench { id, pid, out } => {
                let expected = self.pty.as_ref().map(|pty| pty.pid());
                if pid.and_then(|pid| u32::try_from(pid).ok()) == expected && expected.is_some() {
                    tracing::info!("session {}: the workbench's control link is up", self.name);
                    if let Some((_, old)) = self.workbench.replace((id, out)) {
                        drop(old.close());
                    }
                } else {
                    tracing::warn!(
                        "session {}: a control link from pid {pid:?} refused (the workbench is \
                         {expected:?})",
                        self.name
                    );
                    out.say(Control::Refused {
                        message: "only the session's workbench has a control link".to_owned(),
                    });
                }
            }
            Event::FromClient { id, frame } => self.client_sent(id, frame),
            Event::ClientGone { id } => {
                if self.client.as_ref().is_some_and(|client| client.id == id) {
                    tracing::info!("session {}: the client went away; detached", self.name);
                    self.detach(None);
                }
            }
            Event::FromWorkbench { id, control } => {
                if self.workbench.as_ref().is_some_and(|(link, _)| *link == id) {
                    self.workbench_sent(control);
                }
            }
            Event::WorkbenchGone { id } => {
                if self.workbench.as_ref().is_some_and(|(link, _)| *link == id) {
                    tracing::info!("session {}: the workbench's control link closed", self.name);
                    self.workbench = None;
                }
            }
        }
        None
    }

    fn attach(&mut self, request: AttachRequest) -> Result<()> {
        let AttachRequest {
            id,
            peer,
            rows,
            cols,
            keyboard,
            term,
            out,
        } = request;
        if self.stopping {
            out.say(Control::Refused {
                message: format!("session {} is ending", self.name),
            });
            return Ok(());
        }
        if let Some(old) = self.client.take() {
            tracing::info!(
                "session {}: {} takes over from {}",
                self.name,
                peer,
                old.peer
            );
            old.out.say(Control::Detached {
                reason: DetachReason::TakenOver,
                message: format!(
                    "[session {} was attached from another terminal; this one is detached]",
                    self.name
                ),
            });
            drop(old.out.close());
        } else {
            tracing::info!("session {}: {peer} attached ({cols}x{rows})", self.name);
        }
        self.generation += 1;
        self.client = Some(Client { id, peer, out });
        lock(&self.status).attached = true;
        match &self.pty {
            None => {
                let program = self
                    .program
                    .take()
                    .context("the session's program was started already")?;
                let spec = program(&FirstAttach { rows, cols, term });
                let tx = self.pty_tx.clone();
                let pty = Pty::spawn(spec, move |event| {
                    // A closed channel means the session is ending; the event no longer matters.
                    let _ = tx.blocking_send(event);
                })
                .context("cannot start the session's program")?;
                tracing::info!(
                    "session {}: the program started (pid {})",
                    self.name,
                    pty.pid()
                );
                self.pty = Some(pty);
                self.forward = Forward::All;
            }
            Some(pty) => {
                if let Err(err) = pty.resize(rows, cols) {
                    tracing::warn!("session {}: {err:#}", self.name);
                }
                match &self.workbench {
                    Some((_, link)) => {
                        link.say(Control::Attached {
                            generation: self.generation,
                            keyboard,
                        });
                        self.forward = Forward::AfterMarker {
                            marker: attach_marker(self.generation),
                            seen: Vec::new(),
                            deadline: Instant::now() + MARKER_WITHIN,
                        };
                    }
                    None => self.forward = Forward::All,
                }
            }
        }
        Ok(())
    }

    fn client_sent(&mut self, id: u64, frame: Frame) {
        if self.client.as_ref().is_none_or(|client| client.id != id) {
            return;
        }
        let Some(pty) = &self.pty else { return };
        match frame {
            Frame::Input(bytes) => pty.write(bytes),
            Frame::Control(Control::Resize { rows, cols }) => {
                if let Err(err) = pty.resize(rows, cols) {
                    tracing::warn!("session {}: {err:#}", self.name);
                }
            }
            other => tracing::debug!("session {}: ignored from the client: {other:?}", self.name),
        }
    }

    fn workbench_sent(&mut self, control: Control) {
        match control {
            Control::Detach => {
                if self.client.is_some() {
                    tracing::info!("session {}: detached by the detach key", self.name);
                    self.detach(Some(DetachReason::Key));
                }
            }
            Control::Pi { state } => lock(&self.status).pi = state,
            other => tracing::debug!(
                "session {}: ignored from the workbench: {other:?}",
                self.name
            ),
        }
    }

    /// Lets the client go (telling it why, if it is still there) and tells the workbench.
    fn detach(&mut self, reason: Option<DetachReason>) {
        if let Some(client) = self.client.take() {
            if let Some(reason) = reason {
                let message = match reason {
                    DetachReason::Key => format!(
                        "[detached from session {0}; `unipi-tui attach {0}` re-attaches]",
                        self.name
                    ),
                    DetachReason::TakenOver | DetachReason::TooSlow => {
                        format!("[detached from session {}]", self.name)
                    }
                };
                client.out.say(Control::Detached { reason, message });
            }
            drop(client.out.close());
        }
        self.forward = Forward::All;
        lock(&self.status).attached = false;
        if let Some((_, link)) = &self.workbench {
            link.say(Control::Away);
        }
    }

    /// The PTY's output: to the attached client, if any (see [`Forward`]).
    async fn output(&mut self, bytes: Vec<u8>) {
        let Some(client) = &self.client else { return };
        let bytes = match &mut self.forward {
            Forward::All => bytes,
            Forward::AfterMarker { marker, seen, .. } => {
                seen.extend_from_slice(&bytes);
                match seen
                    .windows(marker.len())
                    .position(|w| w == marker.as_slice())
                {
                    Some(at) => {
                        let rest = seen.split_off(at + marker.len());
                        self.forward = Forward::All;
                        rest
                    }
                    None => {
                        // Keep only what could be the start of the marker.
                        let keep = marker.len().saturating_sub(1).min(seen.len());
                        seen.drain(..seen.len() - keep);
                        return;
                    }
                }
            }
        };
        if bytes.is_empty() {
            return;
        }
        if client
            .out
            .tx
            .send_timeout(Frame::Output(bytes), SLOW_CLIENT)
            .await
            .is_err()
        {
            tracing::warn!(
                "session {}: {} did not read its output for {SLOW_CLIENT:?}; detached",
                self.name,
                client.peer
            );
            if let Some(client) = self.client.take() {
                client.out.close().abort();
            }
            self.detach(Some(DetachReason::TooSlow));
        }
    }

    /// Ends the session: stops the program (in the background, so its last output still
    /// drains). `true` when there is nothing to stop (it never started).
    fn stop(&mut self, why: &str) -> bool {
        self.ending.get_or_insert_with(|| why.to_owned());
        let Some(pty) = &self.pty else { return true };
        if !self.stopping && self.exit.is_none() {
            self.stopping = true;
            let group = pty.group();
            tokio::spawn(terminate_group(group, STOP_GRACE));
        }
        false
    }

    /// Tells the client and the `kill` callers the exit code, makes sure the program's group
    /// is gone, and waits (bounded) until they were told.
    async fn finish(mut self, code: i32) {
        let exit = Control::Exit {
            code,
            message: self.ending.take(),
        };
        let mut writers = Vec::new();
        if let Some(client) = self.client.take() {
            client.out.say(exit.clone());
            writers.push(client.out.close());
        }
        for killer in self.killers.drain(..) {
            killer.say(exit.clone());
            writers.push(killer.close());
        }
        if let Some((_, link)) = self.workbench.take() {
            link.close().abort();
        }
        if let Some(pty) = &self.pty {
            // Whatever the program left in its group (it exited, or never stopped).
            terminate_group(pty.group(), Duration::from_millis(500)).await;
        }
        for writer in writers {
            let _ = tokio::time::timeout(SLOW_CLIENT, writer).await;
        }
        lock(&self.status).attached = false;
        tracing::info!("session {}: ended with {code}", self.name);
    }
}

/// Accepts connections until the session ends.
async fn accept_loop(
    listener: tokio::net::UnixListener,
    events: mpsc::Sender<Event>,
    status: Arc<Mutex<Status>>,
) {
    let mut next_id = 0u64;
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                next_id += 1;
                tokio::spawn(handshake(
                    stream,
                    next_id,
                    events.clone(),
                    Arc::clone(&status),
                ));
            }
            Err(err) => {
                tracing::warn!("accepting a connection: {err}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Checks who connected and what for, then hands the connection to the loop.
async fn handshake(
    stream: UnixStream,
    id: u64,
    events: mpsc::Sender<Event>,
    status: Arc<Mutex<Status>>,
) {
    let me = nix::unistd::geteuid().as_raw();
    let cred = match stream.peer_cred() {
        Ok(cred) => cred,
        Err(err) => {
            tracing::warn!("cannot read a connection's credentials; closed: {err}");
            return;
        }
    };
    let pid = cred.pid();
    let peer = match pid {
        Some(pid) => format!("client pid {pid} (uid {})", cred.uid()),
        None => format!("client uid {}", cred.uid()),
    };
    let (read, mut write) = stream.into_split();
    if cred.uid() != me {
        tracing::warn!("refused {peer}: not uid {me}, the session's owner");
        let message = format!(
            "refused: uid {} is not the owner of this session (uid {me})",
            cred.uid()
        );
        refuse(&mut write, message).await;
        return;
    }
    let mut reader = FrameReader::new(read, peer.clone());
    let Some(role) = read_hello(&mut reader, &mut write, &peer).await else {
        return;
    };
    let event = match role {
        Role::Status => {
            let answer = Frame::Control(Control::Status(lock(&status).clone()));
            let _ = tokio::time::timeout(HELLO_WITHIN, write_frame(&mut write, &answer)).await;
            return;
        }
        Role::Kill => Event::Kill {
            out: Outbox::new(write, peer),
        },
        Role::Attach {
            rows,
            cols,
            keyboard,
            term,
        } => Event::Attach(AttachRequest {
            id,
            peer: peer.clone(),
            rows,
            cols,
            keyboard,
            term,
            out: Outbox::new(write, peer.clone()),
        }),
        Role::Workbench => Event::Workbench {
            id,
            pid,
            out: Outbox::new(write, format!("the workbench ({peer})")),
        },
    };
    let workbench = matches!(event, Event::Workbench { .. });
    let reads = matches!(event, Event::Attach(_) | Event::Workbench { .. });
    if events.send(event).await.is_err() || !reads {
        return;
    }
    relay_peer(reader, id, workbench, &events).await;
}

/// Tells a peer it is refused (it has [`HELLO_WITHIN`] to take it).
async fn refuse(write: &mut OwnedWriteHalf, message: String) {
    let refusal = Frame::Control(Control::Refused { message });
    let _ = tokio::time::timeout(HELLO_WITHIN, write_frame(write, &refusal)).await;
}

/// The role the peer's first frame, a `hello` of this protocol version, asks for; `None` (the
/// connection is closed) for anything else, for silence past [`HELLO_WITHIN`] or for another
/// version (which is refused in words).
async fn read_hello(
    reader: &mut FrameReader<OwnedReadHalf>,
    write: &mut OwnedWriteHalf,
    peer: &str,
) -> Option<Role> {
    match tokio::time::timeout(HELLO_WITHIN, reader.next()).await {
        Ok(Ok(Some(Frame::Control(Control::Hello { version, role })))) if version == VERSION => {
            Some(role)
        }
        Ok(Ok(Some(Frame::Control(Control::Hello { version, .. })))) => {
            tracing::warn!("refused {peer}: protocol version {version}, not {VERSION}");
            let message = format!(
                "this session speaks protocol version {VERSION}, the client {version}: \
                 attach with the unipi-tui that started it"
            );
            refuse(write, message).await;
            None
        }
        Ok(Ok(Some(other))) => {
            tracing::warn!("{peer} did not start with a hello ({other:?}); closed");
            None
        }
        Ok(Ok(None)) => None,
        Ok(Err(err)) => {
            tracing::warn!("{err}; closed");
            None
        }
        Err(_) => {
            tracing::warn!("{peer} said nothing for {HELLO_WITHIN:?}; closed");
            None
        }
    }
}

/// Hands the loop everything an attached terminal or the workbench sends from now on, then
/// its end.
async fn relay_peer(
    mut reader: FrameReader<OwnedReadHalf>,
    id: u64,
    workbench: bool,
    events: &mpsc::Sender<Event>,
) {
    loop {
        let next = reader.next().await;
        let event = match next {
            Ok(Some(frame)) if workbench => match frame {
                Frame::Control(control) => Event::FromWorkbench { id, control },
                other => {
                    tracing::debug!("the workbench sent {other:?}; ignored");
                    continue;
                }
            },
            Ok(Some(frame)) => Event::FromClient { id, frame },
            Ok(None) | Err(_) => {
                if let Err(err) = next {
                    tracing::warn!("{err}; closed");
                }
                if workbench {
                    Event::WorkbenchGone { id }
                } else {
                    Event::ClientGone { id }
                }
            }
        };
        let gone = matches!(
            event,
            Event::ClientGone { .. } | Event::WorkbenchGone { .. }
        );
        if events.send(event).await.is_err() || gone {
            return;
        }
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;

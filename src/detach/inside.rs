//! The workbench as a session's program: the ordinary workbench, which learns from its
//! environment ([`SESSION_ENV`]) that a session process runs it, and keeps a control link to
//! that process over the session's socket. It plugs in as a capability:
//!
//! - **attach and detach**: the session says a terminal attached ([`Control::Attached`]) or none is
//!   ([`Control::Away`]); both go to the app through the [`Ui`] handle ([`Ui::terminal_attached`]),
//!   which re-emits every terminal mode and repaints on an attach, and publishes `attached` in the
//!   screen's state — which the notifications read to treat "nobody attached" like "the user is
//!   away";
//! - **the detach key**: the keymap's `session.detach` reaches this capability through
//!   [`Capability::action`] and asks the session to let its client go; outside a session this
//!   capability does not start, so the key goes to Pi;
//! - **Pi's state for `ls`**: idle, working or waiting for input, followed from the bridge's events
//!   and Pi's own `blocked` status, sent when it changes.
//!
//! Only the session process's own child takes the link: whatever the workbench starts inherits
//! the variables, so the session's pid is checked against our parent's.

use std::collections::HashSet;
use std::sync::Arc;

use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::{broadcast, mpsc, watch};

use super::daemon::{SESSION_ENV, SESSION_NAME_ENV, SESSION_PID_ENV};
use super::protocol::{
    Control, Frame, FrameReader, Keyboard, PiState, Role, VERSION, attach_marker, write_frame,
};
use crate::bridge::{AgentId, Alerting, BusEvent, EventBus, PiEvent};
use crate::capability::{
    BridgeLink, Capability, GlobalAction, NewTerminal, Otherwise, Registration, ScreenState,
    StartContext, Ui,
};
use crate::pane::emulator::ProgramState;
use crate::term::tui::KeyboardProtocol;

pub const REGISTRATION: Registration = Registration {
    name: "detach",
    start,
    key_tables: &[],
    actions: &[&DETACH],
    dock: None,
};

/// Ctrl+Alt+D: let the attached terminal go. It works from under any overlay; outside a session
/// this capability does not start and the key is Pi's.
static DETACH: GlobalAction = GlobalAction {
    name: "session.detach",
    description: "Detach from a detachable session (it runs on)",
    keys: &["ctrl+alt+d"],
    under_views: true,
    otherwise: Otherwise::ToPi,
    help_order: 30,
};

fn start(context: &mut StartContext<'_>) -> Option<Arc<dyn Capability>> {
    let socket = std::env::var_os(SESSION_ENV)?;
    let session_pid = std::env::var(SESSION_PID_ENV).ok()?;
    let parent = nix::unistd::getppid().as_raw().to_string();
    if session_pid != parent || !context.ui.has_screen() {
        tracing::debug!("{SESSION_ENV} is set, but this is not the session's workbench");
        return None;
    }
    let name = std::env::var(SESSION_NAME_ENV).unwrap_or_default();
    let stream = match std::os::unix::net::UnixStream::connect(&socket)
        .and_then(|stream| {
            stream.set_nonblocking(true)?;
            Ok(stream)
        })
        .and_then(tokio::net::UnixStream::from_std)
    {
        Ok(stream) => stream,
        Err(err) => {
            context.report(format!(
                "Session {name}: no control link to the session process ({err}); the detach key \
                 and `unipi-tui ls` will not know this workbench"
            ));
            return None;
        }
    };
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(link(stream, rx, context.ui.clone()));
    tracing::info!("running in session {name}");
    Some(Arc::new(InSession {
        link: tx,
        ui: context.ui.clone(),
    }))
}

struct InSession {
    link: mpsc::UnboundedSender<Control>,
    ui: Ui,
}

impl Capability for InSession {
    fn attach(&self, bridge: &BridgeLink) {
        tokio::spawn(follow_pi(
            bridge.bus(),
            self.ui.watch_screen(),
            self.link.clone(),
        ));
    }

    /// The detach key: asks the session to let the attached terminal go. Outside a session
    /// there is no such capability, so the app gives the key to Pi.
    fn action(&self, name: &str) -> bool {
        name == DETACH.name && self.link.send(Control::Detach).is_ok()
    }
}

/// The control link: the session's attach/detach news to the app, our messages to the session.
async fn link(
    stream: tokio::net::UnixStream,
    mut outgoing: mpsc::UnboundedReceiver<Control>,
    ui: Ui,
) {
    let (read, mut write) = stream.into_split();
    if let Err(err) = send(
        &mut write,
        Control::Hello {
            version: VERSION,
            role: Role::Workbench,
        },
    )
    .await
    {
        tracing::warn!("session control link: {err}");
        return;
    }
    let mut frames = FrameReader::new(read, "the session process");
    loop {
        tokio::select! {
            Some(control) = outgoing.recv() => {
                if let Err(err) = send(&mut write, control).await {
                    tracing::warn!("session control link: {err}");
                    return;
                }
            }
            frame = frames.next() => match frame {
                Ok(Some(Frame::Control(Control::Attached { generation, keyboard }))) => {
                    tracing::info!("a terminal attached ({keyboard:?})");
                    ui.terminal_attached(Some(NewTerminal {
                        marker: attach_marker(generation),
                        keyboard: match keyboard {
                            Keyboard::Kitty => KeyboardProtocol::Kitty,
                            Keyboard::ModifyOtherKeys => KeyboardProtocol::ModifyOtherKeys,
                            Keyboard::Legacy => KeyboardProtocol::Legacy,
                        },
                    }));
                }
                Ok(Some(Frame::Control(Control::Away))) => {
                    tracing::info!("no terminal is attached");
                    ui.terminal_attached(None);
                }
                Ok(Some(Frame::Control(Control::Refused { message }))) => {
                    tracing::warn!("the session refused the control link: {message}");
                    return;
                }
                Ok(Some(other)) => tracing::debug!("ignored from the session: {other:?}"),
                Ok(None) => {
                    tracing::info!("the session process closed the control link");
                    return;
                }
                Err(err) => {
                    tracing::warn!("session control link: {err}");
                    return;
                }
            },
        }
    }
}

async fn send(write: &mut OwnedWriteHalf, control: Control) -> std::io::Result<()> {
    write_frame(write, &Frame::Control(control)).await
}

/// Sends Pi's state to the session whenever it changes, until the bus closes.
async fn follow_pi(
    bus: EventBus,
    mut screen: watch::Receiver<ScreenState>,
    link: mpsc::UnboundedSender<Control>,
) {
    let mut events = bus.subscribe();
    let mut pi = PiTracker::default();
    let mut sent = PiState::Starting;
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(event) => pi.on_event(&event),
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            },
            changed = screen.changed() => {
                if changed.is_err() {
                    return;
                }
                let blocked = screen
                    .borrow_and_update()
                    .pi_status
                    .as_ref()
                    .is_some_and(|status| status.state == ProgramState::Blocked);
                pi.blocked = blocked;
            }
        }
        let now = pi.state();
        if now != sent {
            sent = now;
            if link.send(Control::Pi { state: now }).is_err() {
                return;
            }
        }
    }
}

/// What the main Pi does, from its events, the questions waiting for the user and its
/// `blocked` status.
#[derive(Debug, Default)]
struct PiTracker {
    connected: bool,
    working: bool,
    questions: HashSet<u64>,
    blocked: bool,
}

impl PiTracker {
    fn on_event(&mut self, event: &BusEvent) {
        match event {
            BusEvent::AgentConnected { agent, .. } if *agent == AgentId::main() => {
                self.connected = true;
            }
            BusEvent::AgentDisconnected { agent, .. } if *agent == AgentId::main() => {
                self.connected = false;
                self.working = false;
            }
            BusEvent::Pi { agent, event } if *agent == AgentId::main() => match **event {
                PiEvent::AgentStart => {
                    self.connected = true;
                    self.working = true;
                }
                PiEvent::AgentSettled { .. } => self.working = false,
                _ => self.connected = true,
            },
            // A question of any capability, as it tells the notifications.
            BusEvent::Module {
                alerting: Some(alerting),
                ..
            } => match alerting {
                Alerting::Alert {
                    question: Some(id), ..
                } => {
                    self.questions.insert(*id);
                }
                Alerting::Answered(id) => {
                    self.questions.remove(id);
                }
                _ => {}
            },
            _ => {}
        }
    }

    fn state(&self) -> PiState {
        if self.blocked || !self.questions.is_empty() {
            PiState::Waiting
        } else if self.working {
            PiState::Working
        } else if self.connected {
            PiState::Idle
        } else {
            PiState::Starting
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::askuser::bus::{AskUserAnswered, AskUserPrompt};

    fn asked(id: u64) -> BusEvent {
        let prompt = AskUserPrompt {
            id,
            agent: "main".into(),
            question: "Go?".into(),
            context: None,
            option_count: 0,
            allow_multiple: false,
            allow_freeform: true,
            question_count: 1,
        };
        BusEvent::message("ask", &prompt).unwrap()
    }

    fn answered(id: u64) -> BusEvent {
        let answered = AskUserAnswered {
            id,
            agent: "main".into(),
            kind: "selection".into(),
        };
        BusEvent::message("ask", &answered).unwrap()
    }

    #[test]
    fn pi_is_starting_then_idle_working_and_waiting_as_events_say() {
        let mut pi = PiTracker::default();
        assert_eq!(pi.state(), PiState::Starting);
        pi.on_event(&BusEvent::AgentConnected {
            agent: AgentId::main(),
            pi_version: "1.6.0".into(),
        });
        assert_eq!(pi.state(), PiState::Idle);
        pi.on_event(&BusEvent::main_pi(PiEvent::AgentStart));
        assert_eq!(pi.state(), PiState::Working);
        pi.on_event(&asked(7));
        assert_eq!(pi.state(), PiState::Waiting);
        pi.on_event(&answered(7));
        assert_eq!(pi.state(), PiState::Working);
        pi.on_event(&BusEvent::main_pi(PiEvent::AgentSettled {
            aborted: false,
            synthetic: false,
        }));
        assert_eq!(pi.state(), PiState::Idle);
        pi.blocked = true;
        assert_eq!(pi.state(), PiState::Waiting);
        // A helper's events are not the main Pi's.
        pi.blocked = false;
        pi.on_event(&BusEvent::Pi {
            agent: AgentId::new("helper-1"),
            event: Arc::new(PiEvent::AgentStart),
        });
        assert_eq!(pi.state(), PiState::Idle);
    }
}

//! Which events become notifications, and when. The router follows the event bus and the
//! screen's state, turns what matters into an [`Alert`] ([`Router::route`], pure), and sends it by
//! the rules. Pi's own events it reads itself; every other event says on itself whether and how
//! it alerts ([`Alerting`], attached by the capability that publishes it), so the router knows no
//! other capability.
//!
//! - The event's settings: enabled, its platforms (else every enabled one, else the defaults), its
//!   priority (a question = high, failures = normal, everything else = low).
//! - Needs-input (a question a capability's alert waits on, or Pi's own `blocked` program status,
//!   which covers Pi's and other extensions' dialogs) waits out the silence after input and goes
//!   only if the question still waits and the keyboard has been quiet that long: at the keyboard
//!   you are not buzzed, away you are.
//! - Everything else goes at once, unless the user typed within the silence (they are there).
//! - Nobody attached (a session whose terminal left) is "away": nothing is held back and nothing
//!   waits out the silence — the question reaches the phone at once, also one that was already
//!   waiting when the terminal left (the wait follows the screen's state).
//! - "Agent done" is not sent by a run without the workbench's screen (`-p`, `--mode json`: a
//!   script learns of the end from the exit) unless `headlessAgentEnd` says so.
//! - "Agent done" is not sent while running work will wake the agent anyway (its publisher says how
//!   much, [`Alerting::PendingWakes`]), nor after a run the user aborted; a run that ended in an
//!   error says so instead ("errors", never for an aborted run).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use tokio::sync::broadcast;

use super::NEEDS_INPUT;
use super::config::Priority;
use super::dispatch::Dispatcher;
use super::platforms::Notice;
use crate::bridge::{AgentId, AlertPriority, Alerting, BusEvent, EventBus, PiEvent};
use crate::pane::emulator::{ProgramState, ProgramStatus};

/// What an alert waits for before it is sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Waits {
    /// Nothing: sent now (unless the user is at the keyboard).
    No,
    /// A question, until answered ([`Alerting::Answered`]).
    Question(u64),
    /// Pi's `blocked` status, until it changes.
    Blocked,
}

/// A notification in the making.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alert {
    /// The config key of its event (`agent_end`, `agent_error`, …).
    pub event: &'static str,
    pub notice: Notice,
    pub waits: Waits,
}

impl Alert {
    fn new(
        event: &'static str,
        label: &str,
        message: impl Into<String>,
        priority: Priority,
    ) -> Self {
        Alert {
            event,
            notice: Notice::new(format!("Pi — {label}"), message, priority),
            waits: Waits::No,
        }
    }
}

/// What the router remembers between events.
#[derive(Debug, Default)]
struct State {
    /// Questions not yet settled.
    questions: HashSet<u64>,
    /// Per publishing module: its running work whose end wakes the agent.
    waking: HashMap<String, usize>,
    /// The main agent's current run ended a model request in an error.
    run_error: Option<String>,
    session_name: Option<String>,
}

/// What [`Router::fire`] did with an alert.
#[derive(Debug)]
pub(crate) enum Fired {
    /// Its event is off, or no platform is on.
    Off,
    /// The user is at the keyboard.
    HeldBack,
    /// Handed to the dispatcher.
    Sent,
    /// Waiting for the user to be away; the wait says whether it was sent in the end.
    Waiting(
        #[cfg_attr(not(test), allow(dead_code, reason = "only tests await the wait"))]
        tokio::task::JoinHandle<bool>,
    ),
}

#[derive(Clone)]
pub struct Router {
    dispatcher: Dispatcher,
    state: Arc<Mutex<State>>,
}

impl Router {
    pub fn new(dispatcher: Dispatcher) -> Self {
        Router {
            dispatcher,
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Follows the bus and the screen until the bus closes.
    pub async fn run(self, bus: EventBus) {
        let mut events = bus.subscribe();
        let mut screen = self.dispatcher.ui().watch_screen();
        let mut blocked = is_blocked(screen.borrow().pi_status.as_ref());
        let mut screen_open = true;
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Ok(event) => {
                        if let Some(alert) = self.route(&event) {
                            self.fire(alert);
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(skipped)) => {
                        tracing::debug!("notify: skipped {skipped} events");
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                changed = screen.changed(), if screen_open => {
                    if changed.is_err() {
                        screen_open = false;
                        continue;
                    }
                    let status = screen.borrow_and_update().pi_status.clone();
                    let now = is_blocked(status.as_ref());
                    if now && !blocked {
                        self.fire(blocked_alert(status.as_ref()));
                    }
                    blocked = now;
                }
            }
        }
    }

    /// The alert an event makes, if any (and what the router learns from it).
    pub fn route(&self, event: &BusEvent) -> Option<Alert> {
        let mut state = self.lock();
        match event {
            BusEvent::Pi { agent, event } if *agent == AgentId::main() => {
                route_pi(&mut state, event)
            }
            BusEvent::Module {
                module,
                alerting: Some(alerting),
                ..
            } => route_alerting(&mut state, module, alerting),
            _ => None,
        }
    }

    /// Sends `alert` by the rules: its event's settings, then now, or once the user is away.
    pub(crate) fn fire(&self, alert: Alert) -> Fired {
        let config = self.dispatcher.config();
        let event = config.event(alert.event);
        if !event.enabled {
            tracing::debug!("notify: {} is off", alert.event);
            return Fired::Off;
        }
        if alert.event == "agent_end"
            && !self.dispatcher.ui().has_screen()
            && !config.headless_agent_end
        {
            tracing::debug!("notify: agent_end of a run without a screen (headlessAgentEnd off)");
            return Fired::Off;
        }
        let mut notice = alert.notice;
        if let Some(priority) = event.priority {
            notice.priority = priority;
        }
        let platforms = config.platforms_for(&event.platforms);
        if platforms.is_empty() {
            tracing::debug!("notify: no platform for {}", alert.event);
            return Fired::Off;
        }
        let silence = config.silence_after_input;
        if alert.waits == Waits::No {
            if at_keyboard(&self.dispatcher.ui().screen(), silence) {
                tracing::debug!(
                    "notify: {} held back: the user is at the keyboard",
                    alert.event
                );
                return Fired::HeldBack;
            }
            self.dispatcher.dispatch(alert.event, notice, platforms);
            return Fired::Sent;
        }
        let this = self.clone();
        let raised = Instant::now();
        let mut screen = self.dispatcher.ui().watch_screen();
        Fired::Waiting(tokio::spawn(async move {
            // Wait until the keyboard has been quiet for the silence since the question came, or
            // nobody is attached any more — the terminal leaving wakes the wait, it does not sit
            // out the silence.
            let mut watching = true;
            loop {
                let state = screen.borrow_and_update().clone();
                if !state.attached {
                    break;
                }
                let typed = state.last_input;
                let quiet_from = typed.map_or(raised, |at| at.max(raised));
                let due = quiet_from + silence;
                if Instant::now() >= due {
                    break;
                }
                tokio::select! {
                    () = tokio::time::sleep_until(due.into()) => {}
                    changed = screen.changed(), if watching => watching = changed.is_ok(),
                }
            }
            if this.still_waiting(&alert.waits) {
                this.dispatcher.dispatch(alert.event, notice, platforms);
                true
            } else {
                tracing::debug!("notify: {} answered in time", alert.event);
                false
            }
        }))
    }

    fn still_waiting(&self, waits: &Waits) -> bool {
        match waits {
            Waits::No => true,
            Waits::Question(id) => self.lock().questions.contains(id),
            Waits::Blocked => is_blocked(self.dispatcher.ui().screen().pi_status.as_ref()),
        }
    }
}

/// The user is at the keyboard: a terminal is attached and they typed within `silence`.
fn at_keyboard(screen: &crate::capability::ScreenState, silence: std::time::Duration) -> bool {
    screen.attached && screen.last_input.is_some_and(|at| at.elapsed() < silence)
}

fn is_blocked(status: Option<&ProgramStatus>) -> bool {
    status.is_some_and(|status| status.state == ProgramState::Blocked)
}

/// Pi's own `blocked`: a dialog (Pi's or an extension's) waits for the user.
fn blocked_alert(status: Option<&ProgramStatus>) -> Alert {
    let message = match status.and_then(|s| s.message.as_deref()) {
        Some(what) if !what.trim().is_empty() => format!("Pi is waiting for you: {}", what.trim()),
        _ => "Pi is waiting for your input".to_owned(),
    };
    Alert {
        waits: Waits::Blocked,
        ..Alert::new(NEEDS_INPUT, "Input Needed", message, Priority::High)
    }
}

fn route_pi(state: &mut State, event: &PiEvent) -> Option<Alert> {
    match event {
        PiEvent::SessionStart(start) => {
            state.session_name = start.session_name.clone();
            None
        }
        PiEvent::SessionName { name } => {
            state.session_name = name.clone();
            None
        }
        PiEvent::AgentStart => {
            state.run_error = None;
            None
        }
        PiEvent::MessageEnd(end) if end.stop_reason.as_deref() == Some("error") => {
            state.run_error = Some(
                end.error_message
                    .clone()
                    .unwrap_or_else(|| "the model request failed".to_owned()),
            );
            None
        }
        PiEvent::AgentSettled { aborted: true, .. } => {
            state.run_error = None;
            None
        }
        PiEvent::AgentSettled { .. } => {
            if let Some(error) = state.run_error.take() {
                return Some(Alert::new(
                    "agent_error",
                    "Agent Error",
                    error,
                    Priority::Normal,
                ));
            }
            if state.waking.values().any(|&count| count > 0) {
                // Running work will wake the agent: the turn is not really over.
                return None;
            }
            let message = match &state.session_name {
                Some(name) => format!("{name} - Agent is complete"),
                None => "Agent is complete".to_owned(),
            };
            Some(Alert::new(
                "agent_end",
                "Agent Complete",
                message,
                Priority::Low,
            ))
        }
        // A compaction that failed or was refused is Pi's to show (a short session is refused).
        PiEvent::CompactionEnd(end) if end.aborted || end.error.is_some() => None,
        PiEvent::CompactionEnd(end) => Some(Alert::new(
            "compaction_done",
            "Compaction Done",
            match end.tokens_before {
                Some(tokens) => format!("Context compacted (was {tokens} tokens)"),
                None => "Context compacted".to_owned(),
            },
            Priority::Low,
        )),
        PiEvent::SessionShutdown(_) => Some(Alert::new(
            "session_shutdown",
            "Session End",
            "Session ending",
            Priority::Low,
        )),
        _ => None,
    }
}

/// What a capability's message says of itself.
fn route_alerting(state: &mut State, module: &str, alerting: &Alerting) -> Option<Alert> {
    match alerting {
        Alerting::Alert {
            event,
            title,
            body,
            priority,
            question,
        } => {
            let waits = match *question {
                Some(id) => {
                    state.questions.insert(id);
                    Waits::Question(id)
                }
                None => Waits::No,
            };
            Some(Alert {
                waits,
                ..Alert::new(event, title, body.clone(), priority_of(*priority))
            })
        }
        Alerting::Answered(id) => {
            state.questions.remove(id);
            None
        }
        Alerting::PendingWakes(count) => {
            state.waking.insert(module.to_owned(), *count);
            None
        }
    }
}

fn priority_of(priority: AlertPriority) -> Priority {
    match priority {
        AlertPriority::Low => Priority::Low,
        AlertPriority::Normal => Priority::Normal,
        AlertPriority::High => Priority::High,
    }
}

//! The one way a capability reaches the screen: a cloneable [`Ui`] handle that sends
//! [`UiRequest`]s to the app's loop (open a view, open the dock, a footer notice, bytes for the
//! outer terminal). Requests are rare and user-driven, so the channel is unbounded and sending
//! never waits; the loop handles them like any other event.
//!
//! A headless run (Pi in print or RPC mode, no pane) has a `Ui` without a screen: views are not
//! opened ([`Ui::open`] says so, and the command can answer Pi in words instead).

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Instant;

use tokio::sync::{mpsc, watch};

use crate::config::keymap::Keymap;
use crate::pane::emulator::ProgramStatus;
use crate::views::View;

/// What the screen knows that capabilities may act on (a notification waits while the user is
/// at the keyboard, a desktop alert is skipped while the terminal has focus, Pi's `blocked`
/// state means a dialog waits for the user). Published by the app as it changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScreenState {
    /// The outer terminal has focus (as its focus reports say; `true` when it sends none).
    pub focused: bool,
    /// When the user last typed or pasted.
    pub last_input: Option<Instant>,
    /// Pi's program status (OSC 7501), when it reports one.
    pub pi_status: Option<ProgramStatus>,
    /// A terminal is attached (false headless, and while a detachable session has no client).
    pub attached: bool,
}

impl Default for ScreenState {
    fn default() -> Self {
        ScreenState {
            focused: true,
            last_input: None,
            pi_status: None,
            attached: false,
        }
    }
}

/// What a capability asks of the screen.
pub enum UiRequest {
    /// Push a view on the stack (it gets the keys until it closes).
    Open(Box<dyn View>),
    /// Open the dock, optionally on one entry's detail.
    OpenDock { detail: Option<String> },
    /// A short notice in the footer's hint slot.
    Notice(String),
    /// Bytes for the outer terminal outside a frame (OSC 52, OSC 9 notifications, BEL).
    Terminal(Vec<u8>),
    /// A detachable session's terminal changed: `Some`, a terminal attached (perhaps another
    /// one than before: every terminal mode is set up again for it and everything repainted);
    /// `None`, no terminal is attached.
    TerminalAttached(Option<NewTerminal>),
}

/// A terminal that attached to a detachable session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewTerminal {
    /// Written first, so the session forwards from here on (`detach::protocol::attach_marker`).
    pub marker: Vec<u8>,
    /// How this terminal reports modified keys (the client asked it).
    pub keyboard: crate::term::tui::KeyboardProtocol,
}

impl std::fmt::Debug for UiRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UiRequest::Open(_) => f.write_str("Open(<view>)"),
            UiRequest::OpenDock { detail } => write!(f, "OpenDock({detail:?})"),
            UiRequest::Notice(text) => write!(f, "Notice({text:?})"),
            UiRequest::Terminal(bytes) => write!(f, "Terminal({} bytes)", bytes.len()),
            UiRequest::TerminalAttached(terminal) => write!(f, "TerminalAttached({terminal:?})"),
        }
    }
}

/// The app's end of the channel.
pub type UiReceiver = mpsc::UnboundedReceiver<UiRequest>;

/// The handle capabilities keep. Cheap to clone.
#[derive(Clone)]
pub struct Ui {
    tx: Option<mpsc::UnboundedSender<UiRequest>>,
    keymap: Arc<Keymap>,
    /// The pane's width as last drawn (for text sized to it, such as Pi's widget lines).
    pane_width: Arc<AtomicU16>,
    screen: Arc<watch::Sender<ScreenState>>,
}

impl Ui {
    /// A handle with a screen, and the receiver the app's loop reads.
    pub fn channel(keymap: Arc<Keymap>) -> (Ui, UiReceiver) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Ui {
                tx: Some(tx),
                keymap,
                pane_width: Arc::new(AtomicU16::new(80)),
                screen: Arc::new(
                    watch::channel(ScreenState {
                        attached: true,
                        ..ScreenState::default()
                    })
                    .0,
                ),
            },
            rx,
        )
    }

    /// A handle without a screen (headless runs, tests of a module alone).
    pub fn headless(keymap: Arc<Keymap>) -> Ui {
        Ui {
            tx: None,
            keymap,
            pane_width: Arc::new(AtomicU16::new(80)),
            screen: Arc::new(watch::channel(ScreenState::default()).0),
        }
    }

    /// Whether views can be shown (false headless, or once the app has ended).
    pub fn has_screen(&self) -> bool {
        self.tx.as_ref().is_some_and(|tx| !tx.is_closed())
    }

    /// Opens `view` over the pane; `false` when there is no screen to show it on.
    pub fn open(&self, view: impl View + 'static) -> bool {
        self.send(UiRequest::Open(Box::new(view)))
    }

    /// Opens the dock (on `detail`'s entry when given); `false` without a screen.
    pub fn open_dock(&self, detail: Option<String>) -> bool {
        self.send(UiRequest::OpenDock { detail })
    }

    /// A short notice in the footer.
    pub fn notice(&self, text: impl Into<String>) -> bool {
        self.send(UiRequest::Notice(text.into()))
    }

    /// Bytes for the outer terminal (not part of a frame).
    pub fn terminal(&self, bytes: Vec<u8>) -> bool {
        self.send(UiRequest::Terminal(bytes))
    }

    /// A detachable session's terminal attached (`Some`) or left (`None`).
    pub fn terminal_attached(&self, terminal: Option<NewTerminal>) -> bool {
        self.send(UiRequest::TerminalAttached(terminal))
    }

    /// The resolved keymap, for views that take their key table from it.
    pub fn keymap(&self) -> &Keymap {
        &self.keymap
    }

    /// The pane's width, in columns, as last drawn.
    pub fn pane_width(&self) -> u16 {
        self.pane_width.load(Ordering::Relaxed)
    }

    /// The app records the pane's width on every draw.
    pub(crate) fn set_pane_width(&self, width: u16) {
        self.pane_width.store(width, Ordering::Relaxed);
    }

    /// The screen's state now.
    pub fn screen(&self) -> ScreenState {
        self.screen.borrow().clone()
    }

    /// Follows the screen's state (focus, input, Pi's program status) as it changes.
    pub fn watch_screen(&self) -> watch::Receiver<ScreenState> {
        self.screen.subscribe()
    }

    /// The app records what the screen knows; only real changes wake the watchers (typing moves
    /// `last_input` on every key, which watchers read when they look, not as a wake-up).
    pub(crate) fn update_screen(&self, change: impl FnOnce(&mut ScreenState)) {
        self.screen.send_if_modified(|state| {
            let before = (state.focused, state.pi_status.clone(), state.attached);
            change(state);
            before != (state.focused, state.pi_status.clone(), state.attached)
        });
    }

    fn send(&self, request: UiRequest) -> bool {
        match &self.tx {
            Some(tx) => tx.send(request).is_ok(),
            None => {
                tracing::debug!("no screen for {request:?}");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_headless_handle_opens_nothing_and_says_so() {
        let ui = Ui::headless(Arc::new(Keymap::defaults()));
        assert!(!ui.has_screen());
        assert!(!ui.notice("hello"));
        assert!(!ui.open_dock(None));
    }

    #[test]
    fn screen_state_wakes_watchers_on_focus_and_status_not_on_typing() {
        let (ui, _rx) = Ui::channel(Arc::new(Keymap::defaults()));
        let mut watcher = ui.watch_screen();
        assert!(ui.screen().attached && ui.screen().focused);
        ui.update_screen(|state| state.last_input = Some(Instant::now()));
        assert!(!watcher.has_changed().unwrap());
        assert!(ui.screen().last_input.is_some(), "read when looked at");
        ui.update_screen(|state| state.focused = false);
        assert!(watcher.has_changed().unwrap());
        watcher.borrow_and_update();
        assert!(!ui.screen().focused);
        assert!(!Ui::headless(Arc::new(Keymap::defaults())).screen().attached);
    }

    #[test]
    fn requests_reach_the_receiver_in_order_until_it_is_gone() {
        let (ui, mut rx) = Ui::channel(Arc::new(Keymap::defaults()));
        assert!(ui.has_screen());
        assert!(ui.notice("one"));
        assert!(ui.open_dock(Some("bg-1".into())));
        assert!(matches!(rx.try_recv(), Ok(UiRequest::Notice(text)) if text == "one"));
        assert!(
            matches!(rx.try_recv(), Ok(UiRequest::OpenDock { detail: Some(id) }) if id == "bg-1")
        );
        drop(rx);
        assert!(!ui.has_screen());
        assert!(!ui.notice("two"));
    }
}

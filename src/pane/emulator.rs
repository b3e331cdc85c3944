//! Pi's terminal. Pi runs in our PTY, so we are the terminal it talks to: this module parses its
//! output into a `vt100::Screen`, answers the queries a real terminal answers (vt100 answers none),
//! tracks the input modes Pi negotiates, and hands the out-of-band sequences (clipboard,
//! notifications, titles, bell) to the outer terminal instead of swallowing them. Everything
//! leaves through `take_*` queues, so the pane writes replies to the PTY and passthrough to the
//! real terminal, and tests check both as data.
//!
//! vt100 does the screen; its callbacks (`responder.rs`) answer CSI queries at the exact point of
//! the stream (a CPR sees the cursor where the query sits). OSC strings are not taken from vt100,
//! which drops their terminator and caps their fields: a small scanner (`scanner.rs`) runs beside
//! it, and `process` splits the input right after each OSC or RIS, so vt100 has handled exactly
//! the bytes before it when `osc.rs` answers, and replies keep stream order.
//!
//! What Pi sends at start-up (recorded in `tests/fixtures/pi-*.startup`):
//! - Pi 1.6.0, fullscreen and `--tui-mode regular`: `CSI > 7 u` + `CSI ? u` (kitty keyboard), `OSC
//!   7501 ; ? ST` (Program Status support), `CSI c` (DA1, the sentinel for both), `CSI ? 2031 h`,
//!   `OSC 10/11 ; ? BEL` and `OSC 4 ; 0..15 ; ? BEL` followed by another `CSI c`; with a DA1 but no
//!   kitty reply it falls back to `CSI > 4 ; 2 m`. Fullscreen also enters the alternate screen
//!   (1049), mouse modes 1000/1002/1003/1006 and focus (1004) before the kitty push, so its kitty
//!   flags live on the alternate screen's stack. `CSI 16 t` is sent only when Pi thinks the
//!   terminal shows images (decided from environment variables).
//! - Pi 0.73.1: only `CSI ? u`. Any `CSI ? flags u` reply (even 0) makes it push `CSI > 7 u` (on
//!   the main screen: 0.73 has no fullscreen mode); without one it sends `CSI > 4 ; 2 m` after 150
//!   ms. No DA1, colour or Program Status queries.
//! - Both use `CSI ? 2026 h … l` around every frame and set the title with `OSC 0 ; … BEL`.
//!
//! The pane's scrollback is ours, not vt100's ([`History`] says why): vt100 runs with none and
//! hands each row leaving the main screen to the callbacks, and `CSI 3 J` empties the history.
//!
//! vt100 is our patched copy (`vendor/vt100`, see `vendor/README.md`): it adds the VT100/xterm
//! behaviours that change how each printed character is written (character sets, insert mode,
//! autowrap off), tab stops, DECALN and the origin-mode fixes, checked screen by screen against
//! vttest in `conformance_tests.rs`.
//!
//! Not done: DCS queries (XTGETTCAP, DECRQSS; vt100 ignores DCS and Pi sends none), kitty
//! graphics (APC, no reply means "unsupported"), 132-column mode (DECCOLM clears the screen
//! but the pane keeps its width), double-width lines (DECDWL), reverse screen (DECSCNM).

mod osc;
mod program_status;
mod responder;
mod scanner;

#[cfg(test)]
mod conformance_tests;
#[cfg(test)]
mod fidelity_tests;
#[cfg(test)]
mod tests;

use std::num::NonZeroU16;
use std::time::{Duration, Instant};

pub use osc::tmux_passthrough;
pub use program_status::{ProgramState, ProgramStatus};
#[cfg(test)]
use responder::CellSize;
use responder::Responder;
use scanner::{EscapeScanner, ScanEvent};

use crate::pane::history::History;
use crate::pane::{KeyboardModes, TerminalColors};

/// How long a synchronized-output block may hold back drawing. A child that dies or stalls
/// between `CSI ? 2026 h` and `l` must not freeze the pane.
pub(crate) const SYNCHRONIZED_UPDATE_TIMEOUT: Duration = Duration::from_secs(1);

/// Facts about the terminal the workbench itself runs in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostInfo {
    /// We run inside tmux: notifications must go through tmux's DCS passthrough.
    pub in_tmux: bool,
}

/// Something the child did that the workbench reacts to, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmulatorEvent {
    /// An OSC 7501 report.
    ProgramStatus(ProgramStatus),
    /// OSC 7501 `state=clear`: the child withdrew its status.
    ProgramStatusCleared,
    /// OSC 0 or 2.
    Title(String),
    /// BEL.
    Bell,
}

pub struct Emulator {
    parser: vt100::Parser<Responder>,
    scanner: EscapeScanner,
}

impl Emulator {
    /// `scrollback` is how many rows of history to keep.
    pub fn new(
        rows: u16,
        cols: u16,
        scrollback: usize,
        colors: TerminalColors,
        host: HostInfo,
    ) -> Self {
        let (rows, cols) = (non_zero(rows), non_zero(cols));
        let responder = Responder::new(colors, host, History::new(scrollback));
        Self {
            parser: vt100::Parser::new_with_callbacks(rows, cols, 0, responder),
            scanner: EscapeScanner::default(),
        }
    }

    /// Parses a chunk of the child's output. Chunks may split anywhere, even inside a sequence.
    pub fn process(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some((index, event)) = self.scanner.next_event(rest) {
            // Feed vt100 up to and including the byte that completed the event, so the event
            // is handled after everything before it and before everything after it.
            let (before, after) = rest.split_at(index + 1);
            self.parser.process(before);
            let responder = self.parser.callbacks_mut();
            match event {
                ScanEvent::Osc {
                    payload,
                    terminator,
                } => responder.handle_osc(&payload, terminator),
                ScanEvent::FullReset => responder.full_reset(),
                ScanEvent::EraseScrollback => responder.history.clear(),
            }
            rest = after;
        }
        self.parser.process(rest);
    }

    /// Bytes to write back to the child's PTY, in the order the queries came.
    pub fn take_replies(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.parser.callbacks_mut().replies)
    }

    /// Bytes for the outer terminal (clipboard, notifications, titles, bell), already wrapped for
    /// tmux where tmux needs it. Write them between frames, never inside one.
    pub fn take_passthrough(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.parser.callbacks_mut().passthrough)
    }

    pub fn take_events(&mut self) -> Vec<EmulatorEvent> {
        std::mem::take(&mut self.parser.callbacks_mut().events)
    }

    pub fn screen(&self) -> &vt100::Screen {
        self.parser.screen()
    }

    pub fn screen_mut(&mut self) -> &mut vt100::Screen {
        self.parser.screen_mut()
    }

    /// Rows that scrolled off the top of the main screen, oldest first.
    pub fn history(&self) -> &History {
        &self.parser.callbacks().history
    }

    /// `(rows, cols)` of the screen.
    pub fn size(&self) -> (u16, u16) {
        let (rows, cols) = self.parser.screen().size();
        (rows.get(), cols.get())
    }

    /// Resizes the screen (resize the PTY together with it). Zero is treated as one. Rows pushed
    /// off the top by a shorter screen go to the history.
    pub fn resize(&mut self, rows: u16, cols: u16) {
        self.parser.set_size(non_zero(rows), non_zero(cols));
    }

    /// The key encoding the child asked for, on the screen it is drawing on now.
    pub(crate) fn keyboard_modes(&self) -> KeyboardModes {
        let screen = self.parser.screen();
        let modes = &self.parser.callbacks().modes;
        KeyboardModes {
            kitty_flags: modes.kitty(screen.alternate_screen()).current(),
            modify_other_keys: modes.modify_other_keys,
            application_cursor: screen.application_cursor(),
        }
    }

    /// `CSI ? 1004 h`: the child wants `CSI I` / `CSI O` on focus changes.
    pub fn focus_reporting(&self) -> bool {
        self.parser.callbacks().modes.focus_reporting
    }

    /// [`Self::synchronized_update_at`] now.
    #[cfg(test)]
    pub(crate) fn synchronized_update(&self) -> bool {
        self.synchronized_update_at(Instant::now())
    }

    /// True while the child is inside a `CSI ? 2026 h … l` block at `now`, for at most
    /// [`SYNCHRONIZED_UPDATE_TIMEOUT`]: hold drawing the pane until it turns false.
    pub fn synchronized_update_at(&self, now: Instant) -> bool {
        self.synchronized_update_deadline()
            .is_some_and(|deadline| now < deadline)
    }

    /// When the open synchronized block stops holding drawing back, so the frame scheduler can
    /// wake up then even if the child never ends it. `None` outside a block.
    pub fn synchronized_update_deadline(&self) -> Option<Instant> {
        let since = self.parser.callbacks().modes.synchronized_since?;
        Some(since + SYNCHRONIZED_UPDATE_TIMEOUT)
    }

    #[cfg(test)]
    pub(crate) fn program_status(&self) -> Option<&ProgramStatus> {
        self.parser.callbacks().program_status.as_ref()
    }

    /// The theme changed. If the child enabled colour-scheme reports (`CSI ? 2031 h`), tell it
    /// (`CSI ? 997 ; 1|2 n`) so it can query the new colours.
    #[cfg(test)]
    pub(crate) fn set_colors(&mut self, colors: TerminalColors) {
        let responder = self.parser.callbacks_mut();
        if responder.colors == colors {
            return;
        }
        responder.colors = colors;
        if responder.modes.color_scheme_reports {
            responder.reply_color_scheme();
        }
    }

    /// The outer terminal's cell size in pixels, for `CSI 14 t` / `CSI 16 t` (Pi sizes images
    /// with it). Until set, or when a dimension is 0 (the host did not say), 8x16 is claimed.
    #[cfg(test)]
    pub(crate) fn set_cell_pixel_size(&mut self, width: u16, height: u16) {
        if width > 0 && height > 0 {
            self.parser.callbacks_mut().cell_size = CellSize { width, height };
        }
    }
}

fn non_zero(value: u16) -> NonZeroU16 {
    NonZeroU16::new(value).unwrap_or(NonZeroU16::MIN)
}

//! The vt100 callbacks object: it answers the CSI queries vt100 leaves unhandled, tracks the
//! modes vt100 does not (kitty keyboard stacks, modifyOtherKeys, focus reporting, colour-scheme
//! reports, synchronized output) and queues replies, passthrough bytes and events in stream
//! order. It runs inside `vt100::Parser::process`, so a CPR reads the cursor exactly where the
//! query sits in the stream. OSC strings are handled in `osc.rs` from the scanner's events. It
//! also receives the rows that scroll off the main screen and keeps them in the pane's history.

use std::time::Instant;

use vt100::{MouseProtocolEncoding, MouseProtocolMode, Screen};

use super::{EmulatorEvent, HostInfo, ProgramStatus};
use crate::pane::TerminalColors;
use crate::pane::history::History;

/// wezterm's cap: a child that pushes without popping must not grow the stack for ever.
const KITTY_STACK_LIMIT: usize = 128;
/// The five kitty progressive-enhancement flags.
const KITTY_FLAGS_MASK: u16 = 0b1_1111;

const PRIMARY_DEVICE_ATTRIBUTES: &[u8] = b"\x1b[?62;22;52c";

pub(super) struct Responder {
    pub(super) colors: TerminalColors,
    pub(super) host: HostInfo,
    pub(super) cell_size: CellSize,
    pub(super) replies: Vec<u8>,
    pub(super) passthrough: Vec<u8>,
    pub(super) events: Vec<EmulatorEvent>,
    pub(super) modes: TrackedModes,
    pub(super) program_status: Option<ProgramStatus>,
    pub(super) history: History,
}

/// Pixel size of one cell, for `CSI 14 t` / `CSI 16 t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CellSize {
    pub(super) width: u16,
    pub(super) height: u16,
}

impl Default for CellSize {
    /// A common 8x16 cell, used until the host terminal tells us its real one.
    fn default() -> Self {
        Self {
            width: 8,
            height: 16,
        }
    }
}

/// Modes vt100 does not track; all are cleared by a full reset (RIS).
#[derive(Debug, Default)]
pub(super) struct TrackedModes {
    /// `CSI ? 1004 h`.
    pub(super) focus_reporting: bool,
    /// `CSI ? 2031 h`: send `CSI ? 997 ; 1|2 n` when our colours change.
    pub(super) color_scheme_reports: bool,
    /// When the open `CSI ? 2026 h` block began.
    pub(super) synchronized_since: Option<Instant>,
    /// `CSI > 4 ; n m`.
    pub(super) modify_other_keys: u8,
    pub(super) kitty_main: KittyStack,
    pub(super) kitty_alternate: KittyStack,
}

impl TrackedModes {
    /// The kitty stack of the screen the child is drawing on; the protocol keeps one per screen.
    pub(super) fn kitty(&self, alternate_screen: bool) -> &KittyStack {
        if alternate_screen {
            &self.kitty_alternate
        } else {
            &self.kitty_main
        }
    }

    fn kitty_mut(&mut self, alternate_screen: bool) -> &mut KittyStack {
        if alternate_screen {
            &mut self.kitty_alternate
        } else {
            &mut self.kitty_main
        }
    }
}

/// A kitty keyboard flags stack. The flags in force are the top entry, or 0 when empty.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct KittyStack {
    entries: Vec<u8>,
}

impl KittyStack {
    pub(super) fn current(&self) -> u8 {
        self.entries.last().copied().unwrap_or(0)
    }

    fn push(&mut self, flags: u8) {
        self.entries.push(flags);
        if self.entries.len() > KITTY_STACK_LIMIT {
            self.entries.remove(0);
        }
    }

    /// Pops `count` entries; popping more than there are empties the stack (flags 0).
    fn pop(&mut self, count: usize) {
        self.entries
            .truncate(self.entries.len().saturating_sub(count));
    }

    /// `CSI = flags ; mode u`: 1 replaces, 2 sets the given bits, 3 clears them. On an empty
    /// stack this sets the base entry, which a later pop removes again.
    fn set(&mut self, flags: u8, mode: u16) {
        let current = self.current();
        let new = match mode {
            1 => flags,
            2 => current | flags,
            3 => current & !flags,
            _ => {
                tracing::debug!(mode, "ignoring kitty keyboard set with unknown mode");
                return;
            }
        };
        match self.entries.last_mut() {
            Some(top) => *top = new,
            None => self.entries.push(new),
        }
    }
}

impl Responder {
    pub(super) fn new(colors: TerminalColors, host: HostInfo, history: History) -> Self {
        Self {
            colors,
            host,
            cell_size: CellSize::default(),
            replies: Vec::new(),
            passthrough: Vec::new(),
            events: Vec::new(),
            modes: TrackedModes::default(),
            program_status: None,
            history,
        }
    }

    /// RIS: vt100 rebuilt its screen; forget the modes the child negotiated, as a terminal does.
    pub(super) fn full_reset(&mut self) {
        self.modes = TrackedModes::default();
    }

    pub(super) fn reply(&mut self, bytes: &[u8]) {
        self.replies.extend_from_slice(bytes);
    }

    /// `CSI ? 997 ; 1 n` for a dark theme, `2` for a light one (contour's colour-scheme report).
    pub(super) fn reply_color_scheme(&mut self) {
        let scheme = if self.colors.is_dark() { 1 } else { 2 };
        self.reply(format!("\x1b[?997;{scheme}n").as_bytes());
    }

    fn reply_cursor_position(&mut self, screen: &Screen, private: bool) {
        let (mut row, col) = screen.cursor_position();
        // In origin mode the row counts from the top of the scroll region, as CUP addresses it.
        if screen.origin_mode() {
            row = row.saturating_sub(screen.scroll_region().0);
        }
        // Just after printing in the last column the cursor waits there to wrap (vt100 keeps
        // it one past); a terminal reports the last column.
        let (_, cols) = screen.size();
        let col = col.min(cols.get() - 1);
        let marker = if private { "?" } else { "" };
        self.reply(format!("\x1b[{marker}{};{}R", row + 1, col + 1).as_bytes());
    }

    fn reply_window_report(&mut self, screen: &Screen, params: &[&[u16]]) {
        let (rows, cols) = screen.size();
        let (rows, cols) = (u32::from(rows.get()), u32::from(cols.get()));
        let CellSize { width, height } = self.cell_size;
        let reply = match param(params, 0) {
            14 => format!(
                "\x1b[4;{};{}t",
                rows * u32::from(height),
                cols * u32::from(width)
            ),
            16 => format!("\x1b[6;{height};{width}t"),
            18 => format!("\x1b[8;{rows};{cols}t"),
            19 => format!("\x1b[9;{rows};{cols}t"),
            op => {
                tracing::trace!(op, "ignoring window operation");
                return;
            }
        };
        self.reply(reply.as_bytes());
    }

    /// DECRQM for DEC private modes: 1 set, 2 reset, 0 not recognised.
    fn private_mode_state(&self, screen: &Screen, mode: u16) -> u8 {
        let set = match mode {
            1 => screen.application_cursor(),
            6 => screen.origin_mode(),
            7 => screen.autowrap(),
            9 => screen.mouse_protocol_mode() == MouseProtocolMode::Press,
            25 => !screen.hide_cursor(),
            47 | 1049 => screen.alternate_screen(),
            1000 => screen.mouse_protocol_mode() == MouseProtocolMode::PressRelease,
            1002 => screen.mouse_protocol_mode() == MouseProtocolMode::ButtonMotion,
            1003 => screen.mouse_protocol_mode() == MouseProtocolMode::AnyMotion,
            1004 => self.modes.focus_reporting,
            1005 => screen.mouse_protocol_encoding() == MouseProtocolEncoding::Utf8,
            1006 => screen.mouse_protocol_encoding() == MouseProtocolEncoding::Sgr,
            2004 => screen.bracketed_paste(),
            2026 => self.modes.synchronized_since.is_some(),
            2031 => self.modes.color_scheme_reports,
            _ => return 0,
        };
        if set { 1 } else { 2 }
    }

    /// `CSI ? … h/l` for the modes vt100 hands us. vt100 calls back once per mode it does not
    /// know, each time with the whole parameter list, so this must be idempotent.
    fn set_private_modes(&mut self, params: &[&[u16]], on: bool) {
        for mode in params.iter().filter_map(|p| p.first()) {
            match mode {
                1004 => self.modes.focus_reporting = on,
                2031 => self.modes.color_scheme_reports = on,
                2026 if on => {
                    // A second `h` without an `l` continues the block; restarting the clock
                    // would let a stuck child hold the pane longer than the timeout.
                    self.modes
                        .synchronized_since
                        .get_or_insert_with(Instant::now);
                }
                2026 => self.modes.synchronized_since = None,
                _ => {}
            }
        }
    }

    fn kitty_keyboard(&mut self, screen: &Screen, marker: u8, params: &[&[u16]]) {
        let alternate = screen.alternate_screen();
        let flags = (param(params, 0) & KITTY_FLAGS_MASK) as u8;
        match marker {
            b'?' => {
                let current = self.modes.kitty(alternate).current();
                self.reply(format!("\x1b[?{current}u").as_bytes());
            }
            b'>' => self.modes.kitty_mut(alternate).push(flags),
            b'<' => {
                let count = usize::from(param(params, 0).max(1));
                self.modes.kitty_mut(alternate).pop(count);
            }
            b'=' => {
                let mode = param(params, 1).max(1);
                self.modes.kitty_mut(alternate).set(flags, mode);
            }
            _ => {}
        }
    }

    /// `CSI > 4 ; n m` sets modifyOtherKeys, `CSI > 4 m` resets it; other xterm key-modifier
    /// resources (`CSI > 0|1|2 ; n m`) do not change what we encode.
    fn modify_other_keys(&mut self, params: &[&[u16]]) {
        if param(params, 0) != 4 {
            return;
        }
        match params.get(1).and_then(|p| p.first()).copied().unwrap_or(0) {
            level @ 0..=2 => self.modes.modify_other_keys = level as u8,
            level => tracing::debug!(level, "ignoring unsupported modifyOtherKeys level"),
        }
    }
}

impl vt100::Callbacks for Responder {
    /// vt100 runs without scrollback, so this sees each row as it leaves the top of the screen.
    /// The alternate screen has no history, as in a real terminal.
    fn on_scroll(&mut self, row: vt100::capture::RowContents<'_>, alternate_screen: bool) {
        if !alternate_screen {
            self.history.push(row);
        }
    }

    fn audible_bell(&mut self, _: &mut Screen) {
        self.events.push(EmulatorEvent::Bell);
        self.passthrough.push(0x07);
    }

    fn unhandled_escape(&mut self, _: &mut Screen, i1: Option<u8>, _i2: Option<u8>, b: u8) {
        // DECID: the VT100-era spelling of DA1.
        if i1.is_none() && b == b'Z' {
            self.reply(PRIMARY_DEVICE_ATTRIBUTES);
        }
    }

    fn unhandled_csi(
        &mut self,
        screen: &mut Screen,
        i1: Option<u8>,
        i2: Option<u8>,
        params: &[&[u16]],
        c: char,
    ) {
        let first = param(params, 0);
        match (i1, i2, c) {
            // DA1: VT220 (62) with ANSI colour (22) and OSC 52 clipboard (52).
            (None, None, 'c') if first == 0 => self.reply(PRIMARY_DEVICE_ATTRIBUTES),
            // DA2: VT220, "xterm patch 277" (the first with SGR mouse, which we parse; wezterm
            // answers the same for that reason), ROM cartridge 0.
            (Some(b'>'), None, 'c') if first == 0 => self.reply(b"\x1b[>1;277;0c"),
            // XTVERSION.
            (Some(b'>'), None, 'q') if first == 0 => {
                let version = concat!("\x1bP>|unipi-tui(", env!("CARGO_PKG_VERSION"), ")\x1b\\");
                self.reply(version.as_bytes());
            }
            // DSR status and CPR.
            (None, None, 'n') if first == 5 => self.reply(b"\x1b[0n"),
            (None, None, 'n') if first == 6 => self.reply_cursor_position(screen, false),
            // DECXCPR and the colour-scheme query.
            (Some(b'?'), None, 'n') if first == 6 => self.reply_cursor_position(screen, true),
            (Some(b'?'), None, 'n') if first == 996 => self.reply_color_scheme(),
            // DECREQTPARM (solicited when asked with 1, unsolicited-allowed with 0).
            (None, None, 'x') if first <= 1 => {
                self.reply(format!("\x1b[{};1;1;128;128;1;0x", first + 2).as_bytes());
            }
            (None, None, 't') => self.reply_window_report(screen, params),
            // DECRQM, DEC private and ANSI. Of the ANSI modes only IRM (4) is implemented.
            (Some(b'?'), Some(b'$'), 'p') => {
                let state = self.private_mode_state(screen, first);
                self.reply(format!("\x1b[?{first};{state}$y").as_bytes());
            }
            (Some(b'$'), None, 'p') => {
                let state = match first {
                    4 if screen.insert_mode() => 1,
                    4 => 2,
                    _ => 0,
                };
                self.reply(format!("\x1b[{first};{state}$y").as_bytes());
            }
            (Some(b'?'), None, 'h') => self.set_private_modes(params, true),
            (Some(b'?'), None, 'l') => self.set_private_modes(params, false),
            (Some(marker @ (b'?' | b'>' | b'<' | b'=')), None, 'u') => {
                self.kitty_keyboard(screen, marker, params);
            }
            (Some(b'>'), None, 'm') => self.modify_other_keys(params),
            // XTQMODKEYS for modifyOtherKeys.
            (Some(b'?'), None, 'm') if first == 4 => {
                let level = self.modes.modify_other_keys;
                self.reply(format!("\x1b[>4;{level}m").as_bytes());
            }
            _ => tracing::trace!(?i1, ?i2, ?params, %c, "unhandled CSI"),
        }
    }
}

/// The first value of parameter `index`; vte reports an omitted parameter as 0.
fn param(params: &[&[u16]], index: usize) -> u16 {
    params
        .get(index)
        .and_then(|p| p.first())
        .copied()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy)]
    enum Op {
        Push(u8),
        Pop(usize),
        Set(u8, u16),
    }

    #[test]
    fn kitty_stack_push_pop_set() {
        use Op::*;
        let cases: &[(&str, &[Op], u8)] = &[
            ("empty", &[], 0),
            ("push", &[Push(7)], 7),
            ("push push", &[Push(1), Push(3)], 3),
            ("push push pop", &[Push(1), Push(3), Pop(1)], 1),
            ("over-pop empties", &[Push(1), Push(3), Pop(5)], 0),
            ("set replaces top", &[Push(1), Set(4, 1)], 4),
            ("set or", &[Push(1), Set(4, 2)], 5),
            ("set and-not", &[Push(7), Set(2, 3)], 5),
            ("set on empty, then pop", &[Set(3, 1), Pop(1)], 0),
            ("set on empty", &[Set(3, 1)], 3),
            ("unknown set mode ignored", &[Push(1), Set(4, 9)], 1),
            (
                "set only changes the top",
                &[Push(1), Push(2), Set(8, 1), Pop(1)],
                1,
            ),
        ];
        for (name, ops, expected) in cases {
            let mut stack = KittyStack::default();
            for op in *ops {
                match *op {
                    Push(flags) => stack.push(flags),
                    Pop(count) => stack.pop(count),
                    Set(flags, mode) => stack.set(flags, mode),
                }
            }
            assert_eq!(stack.current(), *expected, "{name}");
        }
    }

    #[test]
    fn kitty_stack_is_capped_dropping_the_oldest_entries() {
        let mut stack = KittyStack::default();
        for n in 0..200u16 {
            stack.push((n % 32) as u8);
        }
        assert_eq!(stack.entries.len(), KITTY_STACK_LIMIT);
        assert_eq!(stack.current(), (199 % 32) as u8);
        stack.pop(KITTY_STACK_LIMIT - 1);
        // The survivor is entry 72 (200 - 128), not entry 0.
        assert_eq!(stack.current(), (72 % 32) as u8);
    }
}

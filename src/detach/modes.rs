//! What the attached client must undo on the user's terminal when it lets go of it.
//!
//! The client relays the workbench's output unchanged, so it does not know by itself which
//! modes the workbench set up (the alternate screen, mouse and focus reporting, bracketed paste,
//! the kitty keyboard stack, modifyOtherKeys, the cursor's shape and visibility). It follows the
//! output through [`ModeTracker`], which reads only the sequences that set or clear those modes,
//! and at exit writes exactly the resets that are due ([`ModeTracker::resets`]). Resetting only
//! what is set matters: leaving an alternate screen the terminal is not on restores a saved
//! cursor position on xterm, which would put the shell's prompt over the workbench's last words
//! (its transcript, printed after it restored the terminal itself).

/// The modes set on the terminal, as the output so far set them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ModeTracker {
    alternate_screen: bool,
    /// DEC private mouse modes set (1000, 1002, 1003, 1005, 1006, 1015, 1016).
    mouse: Vec<u16>,
    bracketed_paste: bool,
    focus_reporting: bool,
    cursor_hidden: bool,
    cursor_shape_set: bool,
    kitty_depth: u32,
    modify_other_keys: bool,
    parser: Parser,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum Parser {
    #[default]
    Ground,
    Escape,
    /// Inside a CSI: its parameter and intermediate bytes so far.
    Csi(Vec<u8>),
    /// Inside a string (OSC, DCS, APC, PM, SOS) until BEL or ST.
    Text,
    /// An ESC inside a string: `\` ends it.
    TextEscape,
}

/// A CSI longer than this is not one of ours; it is skipped.
const MAX_CSI: usize = 64;
const MOUSE_MODES: [u16; 7] = [1000, 1002, 1003, 1005, 1006, 1015, 1016];

impl ModeTracker {
    /// A terminal with none of the modes set.
    pub(crate) const fn new() -> Self {
        ModeTracker {
            alternate_screen: false,
            mouse: Vec::new(),
            bracketed_paste: false,
            focus_reporting: false,
            cursor_hidden: false,
            cursor_shape_set: false,
            kitty_depth: 0,
            modify_other_keys: false,
            parser: Parser::Ground,
        }
    }

    /// Follows `bytes`, the next output written to the terminal.
    pub(crate) fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.parser == Parser::Ground {
                // Plain text is most of the output: skip to the next escape at once.
                match bytes.iter().position(|&b| b == 0x1b) {
                    Some(at) => bytes = &bytes[at..],
                    None => return,
                }
            }
            self.step(bytes[0]);
            bytes = &bytes[1..];
        }
    }

    fn step(&mut self, byte: u8) {
        const ESC: u8 = 0x1b;
        const CAN: u8 = 0x18;
        const SUB: u8 = 0x1a;
        const BEL: u8 = 0x07;
        self.parser = match std::mem::take(&mut self.parser) {
            _ if byte == CAN || byte == SUB => Parser::Ground,
            Parser::Ground if byte == ESC => Parser::Escape,
            Parser::Ground => Parser::Ground,
            Parser::Escape => match byte {
                b'[' => Parser::Csi(Vec::new()),
                b']' | b'P' | b'_' | b'^' | b'X' => Parser::Text,
                ESC => Parser::Escape,
                _ => Parser::Ground,
            },
            Parser::Csi(mut params) => match byte {
                ESC => Parser::Escape,
                0x20..=0x3f => {
                    params.push(byte);
                    if params.len() > MAX_CSI {
                        params.clear();
                        params.push(b'!'); // poisoned: dispatches nothing
                    }
                    Parser::Csi(params)
                }
                0x40..=0x7e => {
                    self.csi(&params, byte);
                    Parser::Ground
                }
                // C0 controls inside a CSI are executed and the CSI goes on.
                _ => Parser::Csi(params),
            },
            Parser::Text => match byte {
                BEL => Parser::Ground,
                ESC => Parser::TextEscape,
                _ => Parser::Text,
            },
            Parser::TextEscape => match byte {
                b'\\' => Parser::Ground,
                ESC => Parser::TextEscape,
                _ => Parser::Text,
            },
        };
    }

    fn csi(&mut self, params: &[u8], last: u8) {
        let (prefix, rest) = match params.first() {
            Some(p @ (b'?' | b'>' | b'<' | b'=')) => (Some(*p), &params[1..]),
            _ => (None, params),
        };
        let Ok(text) = std::str::from_utf8(rest) else {
            return;
        };
        let numbers = || text.split(';').map(|n| n.parse::<u16>().ok());
        match (prefix, last) {
            (Some(b'?'), b'h' | b'l') => {
                let on = last == b'h';
                for mode in numbers().flatten() {
                    self.dec_mode(mode, on);
                }
            }
            (Some(b'>'), b'u') => self.kitty_depth += 1,
            (Some(b'<'), b'u') => {
                let count = numbers().next().flatten().unwrap_or(1).max(1);
                self.kitty_depth = self.kitty_depth.saturating_sub(u32::from(count));
            }
            (Some(b'>'), b'm') => {
                let mut values = numbers();
                if values.next().flatten() == Some(4) {
                    self.modify_other_keys = values.next().flatten().unwrap_or(0) != 0;
                }
            }
            // DECSCUSR: `CSI Ps SP q`.
            (None, b'q') if text.ends_with(' ') => {
                let shape = text.trim_end().parse::<u16>().unwrap_or(0);
                self.cursor_shape_set = shape != 0;
            }
            _ => {}
        }
    }

    fn dec_mode(&mut self, mode: u16, on: bool) {
        match mode {
            47 | 1047 | 1049 => self.alternate_screen = on,
            25 => self.cursor_hidden = !on,
            1004 => self.focus_reporting = on,
            2004 => self.bracketed_paste = on,
            m if MOUSE_MODES.contains(&m) => {
                self.mouse.retain(|set| *set != m);
                if on {
                    self.mouse.push(m);
                }
            }
            _ => {}
        }
    }

    /// Whether any mode is set (the terminal needs resets).
    #[cfg(test)]
    pub(crate) fn is_clean(&self) -> bool {
        self.resets() == b"\x1b[m"
    }

    /// The bytes that undo every mode set, in the order a careful program restores: cancel a
    /// sequence cut off half way, keyboard reporting, input reporting, the cursor, and the
    /// alternate screen last. Always ends attributes (`SGR 0`), which is harmless.
    pub(crate) fn resets(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.parser != Parser::Ground {
            out.push(0x18); // CAN: the terminal drops the sequence it was reading
        }
        if self.kitty_depth > 0 {
            out.extend(format!("\x1b[<{}u", self.kitty_depth).into_bytes());
        }
        if self.modify_other_keys {
            out.extend_from_slice(b"\x1b[>4;0m");
        }
        if self.focus_reporting {
            out.extend_from_slice(b"\x1b[?1004l");
        }
        if self.bracketed_paste {
            out.extend_from_slice(b"\x1b[?2004l");
        }
        for mode in self.mouse.iter().rev() {
            out.extend(format!("\x1b[?{mode}l").into_bytes());
        }
        if self.cursor_shape_set {
            out.extend_from_slice(b"\x1b[0 q");
        }
        out.extend_from_slice(b"\x1b[m");
        if self.alternate_screen {
            out.extend_from_slice(b"\x1b[?1049l");
        }
        if self.cursor_hidden {
            out.extend_from_slice(b"\x1b[?25h");
        }
        out
    }

    /// Everything is undone (after [`ModeTracker::resets`] was written).
    pub(crate) fn reset(&mut self) {
        *self = ModeTracker::new();
    }
}

impl Default for ModeTracker {
    fn default() -> Self {
        ModeTracker::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the workbench writes when it takes the terminal (crossterm's sequences).
    const ENTER: &[u8] = b"\x1b[?1049h\x1b[?1000h\x1b[?1002h\x1b[?1003h\x1b[?1015h\x1b[?1006h\
        \x1b[?2004h\x1b[?1004h\x1b[?25l\x1b[>1u";
    /// What it writes when it gives the terminal back (`term::tui::restore`).
    const LEAVE: &[u8] = b"\x1b[<1u\x1b[<u\x1b[>4;0m\x1b[?1004l\x1b[?2004l\x1b[?1006l\x1b[?1015l\
        \x1b[?1003l\x1b[?1002l\x1b[?1000l\x1b[0 q\x1b[?1049l\x1b[?25h";

    #[test]
    fn the_workbench_s_modes_are_undone_in_reverse() {
        let mut tracker = ModeTracker::default();
        tracker.feed(ENTER);
        tracker.feed(b"\x1b[6 q some text \x1b]0;a title\x07\x1b[1;31mred");
        assert_eq!(
            String::from_utf8(tracker.resets()).unwrap(),
            "\x1b[<1u\x1b[?1004l\x1b[?2004l\x1b[?1006l\x1b[?1015l\x1b[?1003l\x1b[?1002l\
             \x1b[?1000l\x1b[0 q\x1b[m\x1b[?1049l\x1b[?25h"
        );
    }

    #[test]
    fn a_terminal_the_workbench_restored_itself_needs_nothing_more() {
        let mut tracker = ModeTracker::default();
        tracker.feed(ENTER);
        tracker.feed(b"\x1b[>4;2m");
        tracker.feed(LEAVE);
        tracker.feed(b"Pi's transcript\r\n");
        assert!(tracker.is_clean(), "{:?}", tracker.resets());
        // Above all, no `?1049l`: it would move the cursor back over the transcript.
        assert!(!tracker.resets().windows(7).any(|w| w == b"\x1b[?1049"));
    }

    #[test]
    fn sequences_split_across_chunks_count_and_a_cut_one_is_cancelled() {
        let mut tracker = ModeTracker::default();
        for byte in ENTER {
            tracker.feed(&[*byte]);
        }
        tracker.feed(b"\x1b[>4;");
        tracker.feed(b"2m\x1b[38;2;1");
        let resets = tracker.resets();
        assert_eq!(resets[0], 0x18, "the cut SGR is cancelled first");
        let text = String::from_utf8(resets).unwrap();
        assert!(
            text.contains("\x1b[>4;0m") && text.contains("\x1b[?1049l"),
            "{text:?}"
        );
    }

    #[test]
    fn strings_hide_what_looks_like_modes_and_combined_modes_count() {
        let mut tracker = ModeTracker::default();
        tracker.feed(b"\x1b]52;c;\x1b[?1049h\x07\x1bP\x1b[?2004h\x1b\\");
        assert!(tracker.is_clean(), "inside OSC/DCS: {:?}", tracker.resets());
        tracker.feed(b"\x1b[?1000;1006h\x1b[>1u\x1b[>1u\x1b[<u");
        assert_eq!(
            String::from_utf8(tracker.resets()).unwrap(),
            "\x1b[<1u\x1b[?1006l\x1b[?1000l\x1b[m"
        );
        tracker.feed(b"\x1b[<5u\x1b[?1006;1000l");
        assert!(tracker.is_clean());
    }
}

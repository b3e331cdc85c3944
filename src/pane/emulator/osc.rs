//! OSC strings, as the scanner delivers them (whole, with their terminator): colour queries
//! (OSC 4/10/11) answered from the theme, Program Status (OSC 7501), and the out-of-band
//! sequences the outer terminal must see — clipboard (52), notifications (9, 777, 99), titles
//! (0, 2). Everything else (8 hyperlinks, 133 prompt marks, 1337 images, 7 cwd) is in-band
//! decoration vt100 cannot draw, and is dropped.
//!
//! Inside tmux, notifications are wrapped in tmux's DCS passthrough (needs `allow-passthrough
//! on`), because tmux drops OSC sequences it does not implement; OSC 52, titles and BEL are sent
//! plain because tmux implements those and forwards them according to its own settings
//! (`set-clipboard`, `set-titles`, `bell-action`).

use super::EmulatorEvent;
use super::program_status::{self, ProgramStatusMessage};
use super::responder::Responder;
use super::scanner::OscTerminator;
use crate::pane::{Rgb, TerminalColors};

/// OSC 52 selection letters xterm accepts (the same set vt100 checks).
const CLIPBOARD_SELECTIONS: &[u8] = b"cpqs01234567";

impl Responder {
    pub(super) fn handle_osc(&mut self, payload: &[u8], terminator: OscTerminator) {
        let (code, rest) = match payload.iter().position(|&b| b == b';') {
            Some(at) => (&payload[..at], &payload[at + 1..]),
            None => (payload, &[][..]),
        };
        match code {
            b"0" | b"2" => {
                let title = String::from_utf8_lossy(rest).into_owned();
                self.events.push(EmulatorEvent::Title(title));
                self.forward_osc(payload, terminator, false);
            }
            b"4" => self.reply_palette(rest, terminator),
            b"10" | b"11" => self.reply_dynamic_colors(code, rest, terminator),
            b"52" => self.forward_clipboard(rest),
            b"9" | b"777" | b"99" => self.forward_osc(payload, terminator, self.host.in_tmux),
            b"7501" => self.program_status(payload, rest, terminator),
            _ => tracing::trace!(code = %String::from_utf8_lossy(code), "dropping OSC"),
        }
    }

    /// `OSC 4 ; n ; ? [; m ; ?]…`: one reply per queried index, as xterm sends them. Pairs
    /// that set a colour are ignored; the theme owns the palette.
    fn reply_palette(&mut self, pairs: &[u8], terminator: OscTerminator) {
        let fields: Vec<&[u8]> = pairs.split(|&b| b == b';').collect();
        for pair in fields.chunks(2) {
            let [index, b"?"] = pair else { continue };
            let Some(index) = std::str::from_utf8(index)
                .ok()
                .and_then(|s| s.parse::<u8>().ok())
            else {
                continue;
            };
            let color = palette_color(&self.colors, index);
            self.reply_color(&format!("4;{index}"), color, terminator);
        }
    }

    /// `OSC 10 ; ?` / `OSC 11 ; ?`. xterm lets one sequence go on to the next dynamic colour
    /// (`OSC 10 ; ? ; ?` asks for 10 and 11); we answer 10 and 11 only.
    fn reply_dynamic_colors(&mut self, code: &[u8], values: &[u8], terminator: OscTerminator) {
        let first: u16 = if code == b"10" { 10 } else { 11 };
        for (code, value) in (first..).zip(values.split(|&b| b == b';')) {
            let color = match code {
                10 => self.colors.foreground,
                11 => self.colors.background,
                _ => break,
            };
            if value == b"?" {
                self.reply_color(&code.to_string(), color, terminator);
            }
        }
    }

    fn reply_color(&mut self, prefix: &str, Rgb(r, g, b): Rgb, terminator: OscTerminator) {
        // xterm's 16-bit-per-channel form; Pi and most readers scale any width.
        let reply = format!("\x1b]{prefix};rgb:{r:02x}{r:02x}/{g:02x}{g:02x}/{b:02x}{b:02x}");
        self.reply(reply.as_bytes());
        self.reply(terminator.bytes());
    }

    /// `OSC 52 ; selection ; base64`: forwarded to the outer terminal, which owns the clipboard.
    /// A read request (`data` = `?`) is not forwarded and not answered: the child gets no access
    /// to the user's clipboard through us (Pi never asks; a reader times out like on a terminal
    /// that disallows reads).
    fn forward_clipboard(&mut self, rest: &[u8]) {
        let (selection, data) = match rest.iter().position(|&b| b == b';') {
            Some(at) => (&rest[..at], &rest[at + 1..]),
            None => {
                tracing::debug!("OSC 52 without data");
                return;
            }
        };
        if !selection.iter().all(|b| CLIPBOARD_SELECTIONS.contains(b)) {
            tracing::debug!("OSC 52 with unknown selection");
            return;
        }
        if data == b"?" {
            tracing::debug!("not forwarding an OSC 52 clipboard read request");
            return;
        }
        if !data
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"+/=".contains(&b))
        {
            tracing::debug!("OSC 52 data is not base64");
            return;
        }
        self.passthrough.extend_from_slice(b"\x1b]52;");
        self.passthrough.extend_from_slice(selection);
        self.passthrough.push(b';');
        self.passthrough.extend_from_slice(data);
        self.passthrough.extend_from_slice(b"\x1b\\");
    }

    /// Re-emits `ESC ] payload` with the child's own terminator, tmux-wrapped if asked.
    fn forward_osc(&mut self, payload: &[u8], terminator: OscTerminator, wrap_for_tmux: bool) {
        let mut sequence = b"\x1b]".to_vec();
        sequence.extend_from_slice(payload);
        sequence.extend_from_slice(terminator.bytes());
        if wrap_for_tmux {
            self.passthrough
                .extend_from_slice(&tmux_passthrough(&sequence));
        } else {
            self.passthrough.extend_from_slice(&sequence);
        }
    }

    fn program_status(&mut self, payload: &[u8], body: &[u8], terminator: OscTerminator) {
        let parsed = std::str::from_utf8(body)
            .map_err(|_| "not UTF-8".to_owned())
            .and_then(|body| program_status::parse(body).map_err(|error| error.to_string()));
        match parsed {
            // A supporting terminal echoes the query's body.
            Ok(ProgramStatusMessage::Query) => {
                self.reply(b"\x1b]");
                self.reply(payload);
                self.reply(terminator.bytes());
            }
            Ok(ProgramStatusMessage::Report(status)) => {
                self.program_status = Some(status.clone());
                self.events.push(EmulatorEvent::ProgramStatus(status));
            }
            Ok(ProgramStatusMessage::Clear) => {
                self.program_status = None;
                self.events.push(EmulatorEvent::ProgramStatusCleared);
            }
            Err(error) => tracing::debug!(%error, "ignoring malformed OSC 7501 report"),
        }
    }
}

/// tmux's DCS passthrough: `ESC P tmux; <sequence with every ESC doubled> ESC \`.
pub fn tmux_passthrough(sequence: &[u8]) -> Vec<u8> {
    let mut wrapped = b"\x1bPtmux;".to_vec();
    for &byte in sequence {
        if byte == 0x1b {
            wrapped.push(0x1b);
        }
        wrapped.push(byte);
    }
    wrapped.extend_from_slice(b"\x1b\\");
    wrapped
}

/// Colour `index` of the 256-colour palette: the theme's 16, then xterm's 6x6x6 cube and
/// 24-step grey ramp.
pub(super) fn palette_color(colors: &TerminalColors, index: u8) -> Rgb {
    const CUBE_LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];
    match index {
        0..=15 => colors.palette[usize::from(index)],
        16..=231 => {
            let cube = usize::from(index - 16);
            Rgb(
                CUBE_LEVELS[cube / 36],
                CUBE_LEVELS[cube / 6 % 6],
                CUBE_LEVELS[cube % 6],
            )
        }
        232..=255 => {
            let level = 8 + 10 * (index - 232);
            Rgb(level, level, level)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palette_follows_the_theme_then_the_xterm_cube_and_grey_ramp() {
        let mut colors = TerminalColors {
            foreground: Rgb(0, 0, 0),
            background: Rgb(0, 0, 0),
            palette: [Rgb(0, 0, 0); 16],
        };
        colors.palette[9] = Rgb(1, 2, 3);
        let cases = [
            (9, Rgb(1, 2, 3)),
            (16, Rgb(0, 0, 0)),
            (17, Rgb(0, 0, 95)),
            (21, Rgb(0, 0, 255)),
            (22, Rgb(0, 95, 0)),
            (52, Rgb(95, 0, 0)),
            (196, Rgb(255, 0, 0)),
            (208, Rgb(255, 135, 0)),
            (231, Rgb(255, 255, 255)),
            (232, Rgb(8, 8, 8)),
            (244, Rgb(128, 128, 128)),
            (255, Rgb(238, 238, 238)),
        ];
        for (index, expected) in cases {
            assert_eq!(palette_color(&colors, index), expected, "colour {index}");
        }
    }

    #[test]
    fn tmux_passthrough_doubles_every_escape() {
        assert_eq!(
            tmux_passthrough(b"\x1b]9;hi\x1b\\"),
            b"\x1bPtmux;\x1b\x1b]9;hi\x1b\x1b\\\x1b\\".to_vec()
        );
        assert_eq!(
            tmux_passthrough(b"\x1b]777;notify;a;b\x07"),
            b"\x1bPtmux;\x1b\x1b]777;notify;a;b\x07\x1b\\".to_vec()
        );
    }
}

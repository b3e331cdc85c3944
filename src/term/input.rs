//! Decoding of the outer terminal's raw input bytes into events.
//!
//! The workbench reads its own stdin as bytes and decodes them here instead of using crossterm's
//! `EventStream`, because crossterm cannot parse xterm modifyOtherKeys (`CSI 27;m;code~`), which
//! tmux sends with `extended-keys`, and because terminal replies (kitty flags, colours, cursor
//! reports) must reach the app as data instead of as stray keys. [`InputDecoder`] is a pure,
//! synchronous, incremental parser: bytes go in as they arrive, split anywhere (inside a UTF-8
//! char, a sequence or a paste), and [`InputEvent`]s come out in crossterm's types, following
//! crossterm's conventions so the rest of the app (keymap, key encoder for Pi) sees familiar
//! values. It owns no timer: the app calls [`InputDecoder::flush_pending`] after
//! [`ESC_TIMEOUT`] without input, which is how a lone `ESC` becomes the Esc key.
//!
//! Decisions where terminals are ambiguous (each one keeps the bytes Pi would have seen, since
//! the key encoder turns the decoded key back into the same bytes):
//! - `\n` is Ctrl+J and `\x08` is Ctrl+H (crossterm in raw mode); the terminal sends `\r` for
//!   Enter, and `\x08` for Ctrl+Backspace only on some terminals (Windows Terminal).
//! - `\x1c..\x1f` are Ctrl+`\` `]` `^` `_` (crossterm says Ctrl+4..7; the punctuation is what the
//!   keys are called in xterm's and Pi's tables).
//! - `ESC ESC` is two Esc presses (as crossterm decodes it), so each Esc in a burst acts: tmux's
//!   `send-keys Escape Escape Escape`, or a fast typist, delivers them in one read, and each must
//!   step back (close the dock from a task's detail, not leave it open for the next letters).
//!   Legacy Alt+Esc is the same two bytes and is given up for that; kitty and modifyOtherKeys still
//!   report it. `ESC ESC [ A` is Alt+Up (rxvt style).
//! - Shifted characters are reported as the character produced, with SHIFT only when it is an
//!   upper-case letter: legacy `A`, kitty `CSI 97:65;2u` and modifyOtherKeys `CSI 27;2;97~` are all
//!   `Char('A')` + SHIFT; kitty `CSI 49:33;2u` is `Char('!')` like a legacy `!`. (crossterm reports
//!   the kitty `A` without SHIFT; we keep it so all three encodings agree.)
//! - `CSI 1;m R` is legacy modified F3 and `CSI r;c R` a cursor report: see
//!   [`InputDecoder::cursor_report`] for the rule.
//! - `ESC ]`, `ESC P` and `ESC _` open OSC/DCS/APC strings only when the next byte looks like a
//!   reply (a digit for OSC, a parameter byte for DCS, a letter for APC); otherwise they are
//!   Alt+`]`, Alt+Shift+P, Alt+`_`. A string still open at the timeout is resolved as those Alt
//!   keys followed by its bytes as text, so typed text is never lost.
//! - A bracketed paste waits for its end marker however long it takes; the timeout does not end it
//!   ([`InputDecoder::has_pending`] is false inside a paste).

use std::time::Duration;

use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyEventState, KeyModifiers, MediaKeyCode,
    ModifierKeyCode, MouseButton, MouseEvent, MouseEventKind,
};

/// How long the app waits after the last byte before calling [`InputDecoder::flush_pending`].
/// Terminals write a whole escape sequence in one go, so a gap this long means a lone `ESC` was
/// the Esc key; over SSH a sequence can still be split, which costs at worst an Alt+key.
pub const ESC_TIMEOUT: Duration = Duration::from_millis(25);

/// One decoded piece of terminal input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InputEvent {
    /// A key, mouse, paste or focus event, in crossterm's types.
    Event(Event),
    /// A reply from the outer terminal to a query the workbench sent (never forwarded to Pi as
    /// keys).
    Reply(TerminalReply),
}

/// A terminal's answer to one of our queries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TerminalReply {
    /// `CSI ? flags u`: the kitty keyboard flags in effect.
    KittyFlags(u8),
    /// `CSI ? 6x ; … c` (DA1): every parameter as sent; the first is the conformance level.
    PrimaryDeviceAttributes(Vec<u16>),
    /// `OSC 10/11/4;n ; rgb:R/G/B` (BEL or ST), each component scaled to 8 bits.
    Color { slot: ColorSlot, rgb: (u8, u8, u8) },
    /// `CSI r ; c R` or `CSI ? r ; c R`, 0-based like crossterm's `cursor::position()`.
    CursorPosition { row: u16, col: u16 },
    /// `CSI ? 997 ; 1|2 n`: the terminal's colour scheme changed or was queried.
    ColorScheme { dark: bool },
    /// Any other reply-like sequence (DA2, DECRPM, XTVERSION, OSC, DCS, APC …), bytes kept whole.
    Other(Vec<u8>),
}

/// Which colour an OSC colour reply is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ColorSlot {
    Foreground,
    Background,
    Palette(u8),
}

/// The incremental decoder. Feed it bytes; it keeps what may be the start of a longer sequence.
#[derive(Debug, Default)]
pub struct InputDecoder {
    /// Bytes not decoded yet: an incomplete sequence or char (in [`Mode::Ground`]), or an `ESC`
    /// that may start a string terminator (in [`Mode::String`]).
    held: Vec<u8>,
    mode: Mode,
    /// Cursor reports the app asked for and has not received yet.
    cursor_reports_expected: u32,
}

impl InputDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed bytes as they arrive (sequences may be split anywhere, even inside UTF-8 or a
    /// paste).
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<InputEvent> {
        let mut out = Vec::new();
        self.held.extend_from_slice(bytes);
        self.run(false, &mut out);
        out
    }

    /// True when bytes are held back because they may be the start of a longer sequence (a
    /// lone ESC, a split char, an unterminated reply). False inside a bracketed paste, which
    /// only its end marker ends.
    pub fn has_pending(&self) -> bool {
        match self.mode {
            Mode::Ground => !self.held.is_empty(),
            Mode::Paste(_) => false,
            Mode::String(_) => true,
        }
    }

    /// True between `CSI 200~` and `CSI 201~`.
    #[cfg(test)]
    pub(crate) fn in_paste(&self) -> bool {
        matches!(self.mode, Mode::Paste(_))
    }

    /// Called by the app when no more bytes arrived for [`ESC_TIMEOUT`]: resolve what is held
    /// back. A lone ESC becomes the Esc key; ESC + a partial sequence becomes Alt + its second
    /// byte followed by the rest as text; a split char that never completed is dropped.
    pub(crate) fn flush_pending(&mut self) -> Vec<InputEvent> {
        let mut out = Vec::new();
        match std::mem::take(&mut self.mode) {
            Mode::Ground => {}
            paste @ Mode::Paste(_) => {
                self.mode = paste;
                return out;
            }
            Mode::String(string) => {
                if string.overflowed {
                    tracing::debug!("dropped an unterminated oversized terminal string");
                } else {
                    // The introducer was typed as Alt+char after all; the body is typed text.
                    out.push(key_event(alt_char(string.raw[1])));
                    let mut rest = string.raw[2..].to_vec();
                    rest.append(&mut self.held);
                    self.held = rest;
                }
            }
        }
        self.run(true, &mut out);
        out
    }

    /// Tell the decoder the app sent a cursor position query (`CSI 6 n`): the next report is read
    /// as one ([`Self::cursor_report`] has the rule).
    #[cfg(test)]
    pub(crate) fn expect_cursor_report(&mut self) {
        self.cursor_reports_expected = self.cursor_reports_expected.saturating_add(1);
    }
}

// ---------------------------------------------------------------------------------------------
// Decoder internals

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;
const PASTE_END: &[u8] = b"\x1b[201~";
/// Longer than any key or reply CSI we know (DA1 lists are the longest, ~60 bytes); a CSI that
/// grows past this is garbage, not a sequence.
const MAX_CSI_LEN: usize = 256;
/// OSC/DCS/APC bodies beyond this are consumed but not kept (an OSC 52 clipboard reply could be
/// large; we never ask for one).
const MAX_STRING_LEN: usize = 1 << 20;

#[derive(Debug, Default)]
enum Mode {
    #[default]
    Ground,
    /// Inside a bracketed paste: the body so far, which may end with part of the end marker.
    Paste(Vec<u8>),
    /// Inside an OSC/DCS/APC string.
    String(StringSeq),
}

#[derive(Debug)]
struct StringSeq {
    /// The whole sequence so far, introducer (`ESC ]`, `ESC P`, `ESC _`) included.
    raw: Vec<u8>,
    overflowed: bool,
}

impl StringSeq {
    fn push(&mut self, byte: u8) {
        if self.raw.len() >= MAX_STRING_LEN {
            self.overflowed = true;
        } else {
            self.raw.push(byte);
        }
    }
}

/// Progress of a string sequence over some input; each carries the bytes consumed.
enum StringStep {
    Open(usize),
    /// Ended on an `ESC` that may begin `ESC \`: wait for the next byte.
    NeedMore(usize),
    Terminated(usize),
    /// An `ESC` not followed by `\` cancels the string; that `ESC` is not consumed.
    Aborted(usize),
}

enum Scan<'a> {
    Complete(Csi<'a>),
    Incomplete,
    Malformed,
}

/// A complete CSI sequence, split into its parts (ECMA-48 grammar).
struct Csi<'a> {
    raw: &'a [u8],
    /// A private marker `<`, `=`, `>` or `?` right after `CSI`.
    prefix: Option<u8>,
    params: &'a [u8],
    intermediates: &'a [u8],
    final_byte: u8,
}

/// `;`-separated fields, each a list of `:`-separated numbers (None where empty).
type Fields = Vec<Vec<Option<u32>>>;

enum KeySeq {
    Key(KeyEvent, usize),
    NotKey,
    Incomplete,
}

impl InputDecoder {
    /// Decode `held` as far as possible. With `at_end`, no more bytes are coming soon, so
    /// everything in ground mode is resolved.
    fn run(&mut self, at_end: bool, out: &mut Vec<InputEvent>) {
        let input = std::mem::take(&mut self.held);
        let mut pos = 0;
        while pos < input.len() {
            let rest = &input[pos..];
            match &mut self.mode {
                Mode::Paste(body) => {
                    let (consumed, ended) = take_paste(body, rest);
                    pos += consumed;
                    if ended {
                        let text = String::from_utf8_lossy(body).into_owned();
                        out.push(InputEvent::Event(Event::Paste(text)));
                        self.mode = Mode::Ground;
                    }
                }
                Mode::String(string) => match take_string(string, rest) {
                    StringStep::Open(consumed) => pos += consumed,
                    StringStep::NeedMore(consumed) => {
                        pos += consumed;
                        break;
                    }
                    StringStep::Terminated(consumed) => {
                        pos += consumed;
                        if string.overflowed {
                            tracing::debug!("dropped an oversized terminal string");
                        } else {
                            out.extend(decode_string(&string.raw));
                        }
                        self.mode = Mode::Ground;
                    }
                    StringStep::Aborted(consumed) => {
                        pos += consumed;
                        tracing::debug!(
                            sequence = %string.raw.escape_ascii(),
                            "dropped a terminal string cancelled by ESC"
                        );
                        self.mode = Mode::Ground;
                    }
                },
                Mode::Ground => match self.step(rest, at_end, out) {
                    Some(consumed) => pos += consumed,
                    None => break,
                },
            }
        }
        self.held = input[pos..].to_vec();
    }

    /// Decode one key or sequence at the start of `input` (non-empty). Returns the bytes
    /// consumed (at least one), or None to wait for more (never with `at_end`).
    fn step(&mut self, input: &[u8], at_end: bool, out: &mut Vec<InputEvent>) -> Option<usize> {
        if input[0] == ESC {
            return self.step_escape(input, at_end, out);
        }
        let (consumed, key) = decode_plain(input, at_end)?;
        out.extend(key.map(key_event));
        Some(consumed)
    }

    fn step_escape(
        &mut self,
        input: &[u8],
        at_end: bool,
        out: &mut Vec<InputEvent>,
    ) -> Option<usize> {
        let Some(&second) = input.get(1) else {
            return at_end.then(|| {
                out.push(key_event(plain(KeyCode::Esc)));
                1
            });
        };
        match second {
            b'[' => self.step_csi(input, at_end, out),
            b'O' => step_ss3(input, at_end, out),
            b']' | b'P' | b'_' => {
                let Some(&third) = input.get(2) else {
                    return at_end.then(|| {
                        out.push(key_event(alt_char(second)));
                        2
                    });
                };
                if !at_end && opens_string(second, third) {
                    self.mode = Mode::String(StringSeq {
                        raw: input[..2].to_vec(),
                        overflowed: false,
                    });
                } else {
                    out.push(key_event(alt_char(second)));
                }
                Some(2)
            }
            ESC => step_double_escape(input, at_end, out),
            _ => {
                let (consumed, key) = decode_plain(&input[1..], at_end)?;
                match key {
                    Some(key) => {
                        out.push(key_event(with_alt(key)));
                        Some(1 + consumed)
                    }
                    // ESC before a byte that is no key: keep the Esc, drop the byte later.
                    None => {
                        out.push(key_event(plain(KeyCode::Esc)));
                        Some(1)
                    }
                }
            }
        }
    }

    fn step_csi(&mut self, input: &[u8], at_end: bool, out: &mut Vec<InputEvent>) -> Option<usize> {
        let fallback = |out: &mut Vec<InputEvent>| {
            out.push(key_event(alt_char(b'[')));
            Some(2)
        };
        match input.get(2) {
            None => return if at_end { fallback(out) } else { None },
            // X10 mouse: three raw bytes follow, whatever their value.
            Some(b'M') => {
                if input.len() < 6 {
                    return if at_end { fallback(out) } else { None };
                }
                match x10_mouse(&input[3..6]) {
                    Some(mouse) => out.push(InputEvent::Event(Event::Mouse(mouse))),
                    None => debug_dropped(&input[..6]),
                }
                return Some(6);
            }
            // Linux console F1..F5: `CSI [ A..E`.
            Some(b'[') => {
                return match input.get(3) {
                    None if !at_end => None,
                    Some(&b @ b'A'..=b'E') => {
                        out.push(key_event(plain(KeyCode::F(b - b'A' + 1))));
                        Some(4)
                    }
                    _ => fallback(out),
                };
            }
            Some(_) => {}
        }
        match scan_csi(input) {
            Scan::Complete(csi) => {
                self.interpret_csi(&csi, out);
                Some(csi.raw.len())
            }
            Scan::Incomplete if !at_end => None,
            Scan::Incomplete => fallback(out),
            Scan::Malformed => {
                tracing::debug!(
                    bytes = %input[..input.len().min(MAX_CSI_LEN)].escape_ascii(),
                    "malformed CSI, read as Alt+[ and text"
                );
                fallback(out)
            }
        }
    }

    fn interpret_csi(&mut self, csi: &Csi<'_>, out: &mut Vec<InputEvent>) {
        let Some(fields) = parse_fields(csi.params) else {
            debug_dropped(csi.raw);
            return;
        };
        let plain_csi = csi.prefix.is_none() && csi.intermediates.is_empty();
        if plain_csi && csi.final_byte == b'~' {
            if fields == [[Some(200)]] {
                self.mode = Mode::Paste(Vec::new());
                return;
            }
            if fields == [[Some(201)]] {
                tracing::debug!("paste end marker outside a paste");
                return;
            }
        }
        match self.decode_csi(csi, &fields) {
            Some(event) => out.push(event),
            None if is_reply_like(csi) => {
                out.push(InputEvent::Reply(TerminalReply::Other(csi.raw.to_vec())));
            }
            None => debug_dropped(csi.raw),
        }
    }

    fn decode_csi(&mut self, csi: &Csi<'_>, fields: &Fields) -> Option<InputEvent> {
        let first = field(fields, 0);
        let event = match (csi.prefix, csi.intermediates, csi.final_byte) {
            (None, [], b'I') if fields.is_empty() => InputEvent::Event(Event::FocusGained),
            (None, [], b'O') if fields.is_empty() => InputEvent::Event(Event::FocusLost),
            (Some(b'<'), [], b'M' | b'm') => {
                InputEvent::Event(Event::Mouse(sgr_mouse(fields, csi.final_byte)?))
            }
            (None, [], b'M') => InputEvent::Event(Event::Mouse(rxvt_mouse(fields)?)),
            (None | Some(b'?'), [], b'R') => match self.cursor_report(csi.prefix, fields) {
                Some(reply) => InputEvent::Reply(reply),
                None => key_event(csi_key(csi, fields)?),
            },
            (Some(b'?'), [], b'u') => {
                InputEvent::Reply(TerminalReply::KittyFlags(u8::try_from(first?).ok()?))
            }
            (Some(b'?'), [], b'c') => {
                let attributes = fields
                    .iter()
                    .map(|f| {
                        f.first()
                            .copied()
                            .flatten()
                            .and_then(|n| u16::try_from(n).ok())
                    })
                    .collect::<Option<Vec<u16>>>()?;
                InputEvent::Reply(TerminalReply::PrimaryDeviceAttributes(attributes))
            }
            (Some(b'?'), [], b'n') if first == Some(997) => {
                let dark = match field(fields, 1)? {
                    1 => true,
                    2 => false,
                    _ => return None,
                };
                InputEvent::Reply(TerminalReply::ColorScheme { dark })
            }
            _ => key_event(csi_key(csi, fields)?),
        };
        Some(event)
    }

    /// Until as many reports arrived as cursor position queries (`CSI 6 n`) were sent, every
    /// `CSI r ; c R` is a [`TerminalReply::CursorPosition`]. Otherwise `CSI R` and `CSI 1 ; m R`
    /// are (modified) F3, as legacy xterm sends them, and any other `CSI r ; c R` is a cursor
    /// report. `CSI ? r ; c R` (DECXCPR, asked with `CSI ? 6 n`) is always a cursor report, so
    /// prefer that query where the terminal supports it. None means "a key".
    fn cursor_report(&mut self, prefix: Option<u8>, fields: &Fields) -> Option<TerminalReply> {
        let row = field(fields, 0);
        let col = field(fields, 1);
        let looks_like_f3 = fields.len() <= 2 && matches!(row, None | Some(1));
        if prefix.is_none() && looks_like_f3 && self.cursor_reports_expected == 0 {
            return None;
        }
        let (Some(row), Some(col)) = (row, col) else {
            return None;
        };
        self.cursor_reports_expected = self.cursor_reports_expected.saturating_sub(1);
        Some(TerminalReply::CursorPosition {
            row: to_zero_based(row),
            col: to_zero_based(col),
        })
    }
}

/// `ESC ESC …`: Esc, the second ESC then decoded on its own (another Esc, or Alt + what follows
/// it); or Alt + the key sequence after the second ESC (rxvt sends Alt+Up as `ESC ESC [ A`).
fn step_double_escape(input: &[u8], at_end: bool, out: &mut Vec<InputEvent>) -> Option<usize> {
    let esc = |out: &mut Vec<InputEvent>| {
        out.push(key_event(plain(KeyCode::Esc)));
        Some(1)
    };
    let Some(&third) = input.get(2) else {
        // Wait for a possible `[` or `O` of an rxvt Alt+key.
        return if at_end { esc(out) } else { None };
    };
    if third != b'[' && third != b'O' {
        return esc(out);
    }
    match key_sequence(&input[1..]) {
        KeySeq::Key(key, consumed) => {
            out.push(key_event(with_alt(key)));
            Some(1 + consumed)
        }
        KeySeq::Incomplete if !at_end => None,
        // Not a key (or never completed): the first ESC is Esc, the rest decodes on its own.
        KeySeq::Incomplete | KeySeq::NotKey => {
            out.push(key_event(plain(KeyCode::Esc)));
            Some(1)
        }
    }
}

/// A key encoded as a CSI or SS3 sequence at the start of `input`, without side effects.
fn key_sequence(input: &[u8]) -> KeySeq {
    if input.get(1) == Some(&b'O') {
        return match scan_ss3(input) {
            Scan::Complete(ss3) => match ss3_key(&ss3) {
                Some(key) => KeySeq::Key(key, ss3.raw.len()),
                None => KeySeq::NotKey,
            },
            Scan::Incomplete => KeySeq::Incomplete,
            Scan::Malformed => KeySeq::NotKey,
        };
    }
    if matches!(input.get(2), Some(b'M' | b'[')) {
        return KeySeq::NotKey;
    }
    match scan_csi(input) {
        Scan::Complete(csi) => match parse_fields(csi.params).and_then(|f| csi_key(&csi, &f)) {
            Some(key) => KeySeq::Key(key, csi.raw.len()),
            None => KeySeq::NotKey,
        },
        Scan::Incomplete => KeySeq::Incomplete,
        Scan::Malformed => KeySeq::NotKey,
    }
}

fn step_ss3(input: &[u8], at_end: bool, out: &mut Vec<InputEvent>) -> Option<usize> {
    match scan_ss3(input) {
        Scan::Complete(ss3) => {
            match ss3_key(&ss3) {
                Some(key) => out.push(key_event(key)),
                None => debug_dropped(ss3.raw),
            }
            Some(ss3.raw.len())
        }
        Scan::Incomplete if !at_end => None,
        Scan::Incomplete | Scan::Malformed => {
            out.push(key_event(alt_char(b'O')));
            Some(2)
        }
    }
}

/// Whether `ESC <intro> <next>` starts a reply string rather than being `Alt+<intro>`.
fn opens_string(intro: u8, next: u8) -> bool {
    match intro {
        b']' => next.is_ascii_digit(),
        b'P' => (0x21..=0x3f).contains(&next),
        b'_' => next.is_ascii_alphabetic(),
        _ => false,
    }
}

/// Scan a CSI sequence (`input` starts with `ESC [`).
fn scan_csi(input: &[u8]) -> Scan<'_> {
    let mut index = 2;
    let prefix = match input.get(index) {
        Some(&b @ (b'<' | b'=' | b'>' | b'?')) => {
            index += 1;
            Some(b)
        }
        _ => None,
    };
    let params_start = index;
    let mut intermediates_start = None;
    loop {
        if index >= MAX_CSI_LEN {
            return Scan::Malformed;
        }
        let Some(&byte) = input.get(index) else {
            return Scan::Incomplete;
        };
        match byte {
            0x30..=0x3f if intermediates_start.is_none() => {}
            0x20..=0x2f => {
                intermediates_start.get_or_insert(index);
            }
            0x40..=0x7e => {
                let params_end = intermediates_start.unwrap_or(index);
                return Scan::Complete(Csi {
                    raw: &input[..=index],
                    prefix,
                    params: &input[params_start..params_end],
                    intermediates: &input[params_end..index],
                    final_byte: byte,
                });
            }
            _ => return Scan::Malformed,
        }
        index += 1;
    }
}

/// Scan an SS3 sequence (`input` starts with `ESC O`): optional parameters, then a final byte.
/// Returned in the CSI shape so the key decoding reads the same.
fn scan_ss3(input: &[u8]) -> Scan<'_> {
    for (index, &byte) in input.iter().enumerate().skip(2) {
        match byte {
            b'0'..=b'9' | b';' => {}
            0x40..=0x7e => {
                return Scan::Complete(Csi {
                    raw: &input[..=index],
                    prefix: None,
                    params: &input[2..index],
                    intermediates: &[],
                    final_byte: byte,
                });
            }
            _ => return Scan::Malformed,
        }
    }
    if input.len() > 16 {
        return Scan::Malformed;
    }
    Scan::Incomplete
}

fn parse_fields(params: &[u8]) -> Option<Fields> {
    if params.is_empty() {
        return Some(Vec::new());
    }
    let text = std::str::from_utf8(params).ok()?;
    text.split(';')
        .map(|field| {
            field
                .split(':')
                .map(|number| {
                    if number.is_empty() {
                        Some(None)
                    } else {
                        number.parse::<u32>().ok().map(Some)
                    }
                })
                .collect::<Option<Vec<_>>>()
        })
        .collect()
}

/// The first number of field `index`, if present.
fn field(fields: &Fields, index: usize) -> Option<u32> {
    fields.get(index)?.first().copied().flatten()
}

/// Replies we do not decode still reach the app whole; keys never look like this.
fn is_reply_like(csi: &Csi<'_>) -> bool {
    matches!(csi.prefix, Some(b'?' | b'>' | b'='))
        || !csi.intermediates.is_empty()
        || (!csi.params.is_empty() && matches!(csi.final_byte, b'c' | b'n' | b't' | b'x' | b'y'))
}

fn debug_dropped(raw: &[u8]) {
    tracing::debug!(sequence = %raw.escape_ascii(), "dropped unknown terminal input sequence");
}

// ---------------------------------------------------------------------------------------------
// Keys

/// A byte that is not ESC at the start of `input`: a control, DEL or a UTF-8 char.
fn decode_plain(input: &[u8], at_end: bool) -> Option<(usize, Option<KeyEvent>)> {
    let byte = input[0];
    let key = match byte {
        0x00 => ctrl(' '),
        b'\t' => plain(KeyCode::Tab),
        b'\r' => plain(KeyCode::Enter),
        b'\n' => ctrl('j'),
        0x01..=0x1a => ctrl(char::from(b'a' + byte - 1)),
        ESC => plain(KeyCode::Esc),
        0x1c => ctrl('\\'),
        0x1d => ctrl(']'),
        0x1e => ctrl('^'),
        0x1f => ctrl('_'),
        0x7f => plain(KeyCode::Backspace),
        0x20..=0x7e => char_key(
            char::from(byte),
            KeyModifiers::NONE,
            KeyEventKind::Press,
            KeyEventState::NONE,
        ),
        _ => return decode_utf8(input, at_end),
    };
    Some((1, Some(key)))
}

fn decode_utf8(input: &[u8], at_end: bool) -> Option<(usize, Option<KeyEvent>)> {
    let width = match input[0] {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => {
            tracing::debug!(byte = input[0], "dropped a byte that starts no UTF-8 char");
            return Some((1, None));
        }
    };
    let available = input.len().min(width);
    if input[1..available].iter().any(|b| b & 0xc0 != 0x80) {
        tracing::debug!("dropped a broken UTF-8 char");
        return Some((1, None));
    }
    if input.len() < width {
        if at_end {
            tracing::debug!("dropped an unfinished UTF-8 char");
            return Some((input.len(), None));
        }
        return None;
    }
    let Some(c) = std::str::from_utf8(&input[..width])
        .ok()
        .and_then(|s| s.chars().next())
    else {
        tracing::debug!("dropped an invalid UTF-8 char");
        return Some((1, None));
    };
    let key = char_key(
        c,
        KeyModifiers::NONE,
        KeyEventKind::Press,
        KeyEventState::NONE,
    );
    Some((width, Some(key)))
}

/// Keys sent as CSI: xterm cursor/function keys (with kitty's `:event` suffix), BackTab,
/// `CSI n ~` keys, modifyOtherKeys `CSI 27;m;code~` and CSI-u (kitty, tmux).
fn csi_key(csi: &Csi<'_>, fields: &Fields) -> Option<KeyEvent> {
    if csi.prefix.is_some() || !csi.intermediates.is_empty() {
        return None;
    }
    match csi.final_byte {
        b'~' => tilde_key(fields),
        b'u' => csi_u_key(fields),
        letter => {
            if fields.len() > 2 || !matches!(field(fields, 0), None | Some(1)) {
                return None;
            }
            let (modifiers, kind, state) = modifier_field(fields.get(1));
            let (code, extra_state) = letter_key(letter)?;
            let modifiers = if code == KeyCode::BackTab {
                modifiers | KeyModifiers::SHIFT
            } else {
                modifiers
            };
            Some(KeyEvent::new_with_kind_and_state(
                code,
                modifiers,
                kind,
                state | extra_state,
            ))
        }
    }
}

/// Final letters of `CSI [1;m] X` and `SS3 X` keys.
fn letter_key(letter: u8) -> Option<(KeyCode, KeyEventState)> {
    let code = match letter {
        b'A' => KeyCode::Up,
        b'B' => KeyCode::Down,
        b'C' => KeyCode::Right,
        b'D' => KeyCode::Left,
        b'E' => return Some((KeyCode::KeypadBegin, KeyEventState::KEYPAD)),
        b'F' => KeyCode::End,
        b'H' => KeyCode::Home,
        b'P' => KeyCode::F(1),
        b'Q' => KeyCode::F(2),
        b'R' => KeyCode::F(3),
        b'S' => KeyCode::F(4),
        b'Z' => KeyCode::BackTab,
        _ => return None,
    };
    Some((code, KeyEventState::NONE))
}

fn tilde_key(fields: &Fields) -> Option<KeyEvent> {
    let number = field(fields, 0)?;
    if number == 27 {
        // xterm modifyOtherKeys: CSI 27 ; mods ; codepoint ~
        if fields.len() != 3 {
            return None;
        }
        let (modifiers, kind, state) = modifier_field(fields.get(1));
        return codepoint_key(field(fields, 2)?, modifiers, kind, state);
    }
    if fields.len() > 2 {
        return None;
    }
    let code = match number {
        1 | 7 => KeyCode::Home,
        2 => KeyCode::Insert,
        3 => KeyCode::Delete,
        4 | 8 => KeyCode::End,
        5 => KeyCode::PageUp,
        6 => KeyCode::PageDown,
        11..=15 => KeyCode::F(function_number(number - 10)),
        17..=21 => KeyCode::F(function_number(number - 11)),
        23..=26 => KeyCode::F(function_number(number - 12)),
        28 | 29 => KeyCode::F(function_number(number - 15)),
        31..=34 => KeyCode::F(function_number(number - 17)),
        _ => return None,
    };
    let (modifiers, kind, state) = modifier_field(fields.get(1));
    Some(KeyEvent::new_with_kind_and_state(
        code, modifiers, kind, state,
    ))
}

/// `CSI code[:shifted[:base]] [; mods[:event]] [; text] u`. The text field (kitty's "report
/// associated text") is not used: the key and its shifted form say the same for our needs.
fn csi_u_key(fields: &Fields) -> Option<KeyEvent> {
    let key_field = fields.first()?;
    let codepoint = key_field.first().copied().flatten()?;
    let shifted = key_field.get(1).copied().flatten().and_then(char::from_u32);
    let (modifiers, kind, state) = modifier_field(fields.get(1));
    let key = codepoint_key(codepoint, modifiers, kind, state)?;
    match (key.code, shifted) {
        (KeyCode::Char(_), Some(shifted)) if modifiers.contains(KeyModifiers::SHIFT) => Some(
            char_key(shifted, modifiers - KeyModifiers::SHIFT, kind, key.state),
        ),
        _ => Some(key),
    }
}

/// The key for a Unicode codepoint or kitty functional key number (CSI-u, modifyOtherKeys).
fn codepoint_key(
    codepoint: u32,
    modifiers: KeyModifiers,
    kind: KeyEventKind,
    state: KeyEventState,
) -> Option<KeyEvent> {
    if let Some((code, key_state)) = functional_key(codepoint) {
        let modifiers = match code {
            // kitty reports a modifier key with its own bit possibly unset; crossterm sets it.
            KeyCode::Modifier(which) => modifiers | modifier_key_bit(which),
            _ => modifiers,
        };
        return Some(KeyEvent::new_with_kind_and_state(
            code,
            modifiers,
            kind,
            state | key_state,
        ));
    }
    let code = match codepoint {
        27 => KeyCode::Esc,
        13 => KeyCode::Enter,
        9 if modifiers.contains(KeyModifiers::SHIFT) => KeyCode::BackTab,
        9 => KeyCode::Tab,
        127 | 8 => KeyCode::Backspace,
        _ => {
            let c = char::from_u32(codepoint).filter(|c| !c.is_control())?;
            return Some(char_key(c, modifiers, kind, state));
        }
    };
    Some(KeyEvent::new_with_kind_and_state(
        code, modifiers, kind, state,
    ))
}

/// kitty's functional keys in the private-use area.
fn functional_key(codepoint: u32) -> Option<(KeyCode, KeyEventState)> {
    let keypad = |code| Some((code, KeyEventState::KEYPAD));
    let plain = |code| Some((code, KeyEventState::NONE));
    match codepoint {
        57344 => plain(KeyCode::Esc),
        57345 => plain(KeyCode::Enter),
        57346 => plain(KeyCode::Tab),
        57347 => plain(KeyCode::Backspace),
        57348 => plain(KeyCode::Insert),
        57349 => plain(KeyCode::Delete),
        57350 => plain(KeyCode::Left),
        57351 => plain(KeyCode::Right),
        57352 => plain(KeyCode::Up),
        57353 => plain(KeyCode::Down),
        57354 => plain(KeyCode::PageUp),
        57355 => plain(KeyCode::PageDown),
        57356 => plain(KeyCode::Home),
        57357 => plain(KeyCode::End),
        57358 => plain(KeyCode::CapsLock),
        57359 => plain(KeyCode::ScrollLock),
        57360 => plain(KeyCode::NumLock),
        57361 => plain(KeyCode::PrintScreen),
        57362 => plain(KeyCode::Pause),
        57363 => plain(KeyCode::Menu),
        57364..=57398 => plain(KeyCode::F(function_number(codepoint - 57363))),
        57399..=57408 => {
            let digit = char::from_digit(codepoint - 57399, 10)?;
            keypad(KeyCode::Char(digit))
        }
        57409 => keypad(KeyCode::Char('.')),
        57410 => keypad(KeyCode::Char('/')),
        57411 => keypad(KeyCode::Char('*')),
        57412 => keypad(KeyCode::Char('-')),
        57413 => keypad(KeyCode::Char('+')),
        57414 => keypad(KeyCode::Enter),
        57415 => keypad(KeyCode::Char('=')),
        57416 => keypad(KeyCode::Char(',')),
        57417 => keypad(KeyCode::Left),
        57418 => keypad(KeyCode::Right),
        57419 => keypad(KeyCode::Up),
        57420 => keypad(KeyCode::Down),
        57421 => keypad(KeyCode::PageUp),
        57422 => keypad(KeyCode::PageDown),
        57423 => keypad(KeyCode::Home),
        57424 => keypad(KeyCode::End),
        57425 => keypad(KeyCode::Insert),
        57426 => keypad(KeyCode::Delete),
        57427 => keypad(KeyCode::KeypadBegin),
        57428 => plain(KeyCode::Media(MediaKeyCode::Play)),
        57429 => plain(KeyCode::Media(MediaKeyCode::Pause)),
        57430 => plain(KeyCode::Media(MediaKeyCode::PlayPause)),
        57431 => plain(KeyCode::Media(MediaKeyCode::Reverse)),
        57432 => plain(KeyCode::Media(MediaKeyCode::Stop)),
        57433 => plain(KeyCode::Media(MediaKeyCode::FastForward)),
        57434 => plain(KeyCode::Media(MediaKeyCode::Rewind)),
        57435 => plain(KeyCode::Media(MediaKeyCode::TrackNext)),
        57436 => plain(KeyCode::Media(MediaKeyCode::TrackPrevious)),
        57437 => plain(KeyCode::Media(MediaKeyCode::Record)),
        57438 => plain(KeyCode::Media(MediaKeyCode::LowerVolume)),
        57439 => plain(KeyCode::Media(MediaKeyCode::RaiseVolume)),
        57440 => plain(KeyCode::Media(MediaKeyCode::MuteVolume)),
        57441 => plain(KeyCode::Modifier(ModifierKeyCode::LeftShift)),
        57442 => plain(KeyCode::Modifier(ModifierKeyCode::LeftControl)),
        57443 => plain(KeyCode::Modifier(ModifierKeyCode::LeftAlt)),
        57444 => plain(KeyCode::Modifier(ModifierKeyCode::LeftSuper)),
        57445 => plain(KeyCode::Modifier(ModifierKeyCode::LeftHyper)),
        57446 => plain(KeyCode::Modifier(ModifierKeyCode::LeftMeta)),
        57447 => plain(KeyCode::Modifier(ModifierKeyCode::RightShift)),
        57448 => plain(KeyCode::Modifier(ModifierKeyCode::RightControl)),
        57449 => plain(KeyCode::Modifier(ModifierKeyCode::RightAlt)),
        57450 => plain(KeyCode::Modifier(ModifierKeyCode::RightSuper)),
        57451 => plain(KeyCode::Modifier(ModifierKeyCode::RightHyper)),
        57452 => plain(KeyCode::Modifier(ModifierKeyCode::RightMeta)),
        57453 => plain(KeyCode::Modifier(ModifierKeyCode::IsoLevel3Shift)),
        57454 => plain(KeyCode::Modifier(ModifierKeyCode::IsoLevel5Shift)),
        _ => None,
    }
}

fn modifier_key_bit(which: ModifierKeyCode) -> KeyModifiers {
    match which {
        ModifierKeyCode::LeftShift | ModifierKeyCode::RightShift => KeyModifiers::SHIFT,
        ModifierKeyCode::LeftControl | ModifierKeyCode::RightControl => KeyModifiers::CONTROL,
        ModifierKeyCode::LeftAlt | ModifierKeyCode::RightAlt => KeyModifiers::ALT,
        ModifierKeyCode::LeftSuper | ModifierKeyCode::RightSuper => KeyModifiers::SUPER,
        ModifierKeyCode::LeftHyper | ModifierKeyCode::RightHyper => KeyModifiers::HYPER,
        ModifierKeyCode::LeftMeta | ModifierKeyCode::RightMeta => KeyModifiers::META,
        ModifierKeyCode::IsoLevel3Shift | ModifierKeyCode::IsoLevel5Shift => KeyModifiers::NONE,
    }
}

/// SS3 keys: cursor keys in application mode, F1..F4, and the application keypad.
fn ss3_key(ss3: &Csi<'_>) -> Option<KeyEvent> {
    let fields = parse_fields(ss3.params)?;
    // Old xterms put the modifier alone (`SS3 5 A`) or after a 1 (`SS3 1;5 A`).
    let (modifiers, kind, state) = modifier_field(fields.last());
    let keypad = |code| Some((code, KeyEventState::KEYPAD));
    let (code, key_state) = match ss3.final_byte {
        b'M' => keypad(KeyCode::Enter),
        b'I' => keypad(KeyCode::Tab),
        b' ' => keypad(KeyCode::Char(' ')),
        b'X' => keypad(KeyCode::Char('=')),
        b'j' => keypad(KeyCode::Char('*')),
        b'k' => keypad(KeyCode::Char('+')),
        b'l' => keypad(KeyCode::Char(',')),
        b'm' => keypad(KeyCode::Char('-')),
        b'n' => keypad(KeyCode::Char('.')),
        b'o' => keypad(KeyCode::Char('/')),
        digit @ b'p'..=b'y' => keypad(KeyCode::Char(char::from(b'0' + digit - b'p'))),
        b'Z' => None,
        letter => letter_key(letter),
    }?;
    Some(KeyEvent::new_with_kind_and_state(
        code,
        modifiers,
        kind,
        state | key_state,
    ))
}

/// A `mods[:event]` field: modifiers are 1 + shift 1 | alt 2 | ctrl 4 | super 8 | hyper 16 |
/// meta 32 | caps lock 64 | num lock 128; events are 1 press, 2 repeat, 3 release.
fn modifier_field(field: Option<&Vec<Option<u32>>>) -> (KeyModifiers, KeyEventKind, KeyEventState) {
    let mask = field
        .and_then(|f| f.first().copied().flatten())
        .unwrap_or(1)
        .saturating_sub(1);
    let kind = match field.and_then(|f| f.get(1).copied().flatten()) {
        Some(2) => KeyEventKind::Repeat,
        Some(3) => KeyEventKind::Release,
        _ => KeyEventKind::Press,
    };
    let mut modifiers = KeyModifiers::NONE;
    for (bit, modifier) in [
        (1, KeyModifiers::SHIFT),
        (2, KeyModifiers::ALT),
        (4, KeyModifiers::CONTROL),
        (8, KeyModifiers::SUPER),
        (16, KeyModifiers::HYPER),
        (32, KeyModifiers::META),
    ] {
        if mask & bit != 0 {
            modifiers |= modifier;
        }
    }
    let mut state = KeyEventState::NONE;
    if mask & 64 != 0 {
        state |= KeyEventState::CAPS_LOCK;
    }
    if mask & 128 != 0 {
        state |= KeyEventState::NUM_LOCK;
    }
    (modifiers, kind, state)
}

/// A char key, normalised the way crossterm reports legacy input: an upper-case char carries
/// SHIFT, and SHIFT on an ASCII letter makes it upper-case.
fn char_key(
    c: char,
    modifiers: KeyModifiers,
    kind: KeyEventKind,
    state: KeyEventState,
) -> KeyEvent {
    let (c, modifiers) = if c.is_uppercase() {
        (c, modifiers | KeyModifiers::SHIFT)
    } else if modifiers.contains(KeyModifiers::SHIFT) && c.is_ascii_lowercase() {
        (c.to_ascii_uppercase(), modifiers)
    } else {
        (c, modifiers)
    };
    KeyEvent::new_with_kind_and_state(KeyCode::Char(c), modifiers, kind, state)
}

/// F-key numbers fit in u8 by construction (at most 35); saturate rather than wrap anyway.
fn function_number(n: u32) -> u8 {
    u8::try_from(n).unwrap_or(u8::MAX)
}

fn plain(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn with_alt(mut key: KeyEvent) -> KeyEvent {
    key.modifiers |= KeyModifiers::ALT;
    key
}

/// Alt + an ASCII byte, for an escape sequence that turned out to be typed keys.
fn alt_char(byte: u8) -> KeyEvent {
    char_key(
        char::from(byte),
        KeyModifiers::ALT,
        KeyEventKind::Press,
        KeyEventState::NONE,
    )
}

fn key_event(key: KeyEvent) -> InputEvent {
    InputEvent::Event(Event::Key(key))
}

// ---------------------------------------------------------------------------------------------
// Mouse

/// SGR mouse: `CSI < b ; x ; y M|m`, `m` meaning release.
fn sgr_mouse(fields: &Fields, final_byte: u8) -> Option<MouseEvent> {
    if fields.len() != 3 {
        return None;
    }
    let (kind, modifiers) = mouse_button(field(fields, 0)?)?;
    let kind = match (kind, final_byte) {
        (MouseEventKind::Down(button), b'm') => MouseEventKind::Up(button),
        (kind, _) => kind,
    };
    Some(MouseEvent {
        kind,
        column: to_zero_based(field(fields, 1)?),
        row: to_zero_based(field(fields, 2)?),
        modifiers,
    })
}

/// urxvt mouse: `CSI b ; x ; y M` with b offset by 32 like X10.
fn rxvt_mouse(fields: &Fields) -> Option<MouseEvent> {
    if fields.len() != 3 {
        return None;
    }
    let (kind, modifiers) = mouse_button(field(fields, 0)?.checked_sub(32)?)?;
    Some(MouseEvent {
        kind,
        column: to_zero_based(field(fields, 1)?),
        row: to_zero_based(field(fields, 2)?),
        modifiers,
    })
}

/// X10 mouse: `CSI M b x y`, each byte offset by 32, coordinates 1-based.
fn x10_mouse(bytes: &[u8]) -> Option<MouseEvent> {
    let (kind, modifiers) = mouse_button(u32::from(bytes[0].checked_sub(32)?))?;
    Some(MouseEvent {
        kind,
        column: u16::from(bytes[1].saturating_sub(33)),
        row: u16::from(bytes[2].saturating_sub(33)),
        modifiers,
    })
}

/// The button byte: low bits and bits 6-7 name the button, 4/8/16 are shift/alt/ctrl, 32 is
/// motion. Legacy release (button 3) does not say which button; crossterm calls it Left.
fn mouse_button(cb: u32) -> Option<(MouseEventKind, KeyModifiers)> {
    let button = (cb & 0b11) | ((cb & 0b1100_0000) >> 4);
    let motion = cb & 32 != 0;
    let kind = match (button, motion) {
        (0, false) => MouseEventKind::Down(MouseButton::Left),
        (1, false) => MouseEventKind::Down(MouseButton::Middle),
        (2, false) => MouseEventKind::Down(MouseButton::Right),
        (0, true) => MouseEventKind::Drag(MouseButton::Left),
        (1, true) => MouseEventKind::Drag(MouseButton::Middle),
        (2, true) => MouseEventKind::Drag(MouseButton::Right),
        (3, false) => MouseEventKind::Up(MouseButton::Left),
        (3..=5, true) => MouseEventKind::Moved,
        (4, false) => MouseEventKind::ScrollUp,
        (5, false) => MouseEventKind::ScrollDown,
        (6, false) => MouseEventKind::ScrollLeft,
        (7, false) => MouseEventKind::ScrollRight,
        _ => return None,
    };
    let mut modifiers = KeyModifiers::NONE;
    if cb & 4 != 0 {
        modifiers |= KeyModifiers::SHIFT;
    }
    if cb & 8 != 0 {
        modifiers |= KeyModifiers::ALT;
    }
    if cb & 16 != 0 {
        modifiers |= KeyModifiers::CONTROL;
    }
    Some((kind, modifiers))
}

fn to_zero_based(one_based: u32) -> u16 {
    u16::try_from(one_based.saturating_sub(1)).unwrap_or(u16::MAX)
}

// ---------------------------------------------------------------------------------------------
// Paste and strings

/// Move paste bytes into `body` up to and including the end marker. Returns the bytes consumed
/// and whether the paste ended (the marker is then removed from `body`).
fn take_paste(body: &mut Vec<u8>, input: &[u8]) -> (usize, bool) {
    for (index, &byte) in input.iter().enumerate() {
        body.push(byte);
        if byte == b'~' && body.ends_with(PASTE_END) {
            body.truncate(body.len() - PASTE_END.len());
            return (index + 1, true);
        }
    }
    (input.len(), false)
}

/// Move string bytes into `string` up to its terminator: BEL or ST (`ESC \`).
fn take_string(string: &mut StringSeq, input: &[u8]) -> StringStep {
    for (index, &byte) in input.iter().enumerate() {
        match byte {
            BEL => {
                string.push(byte);
                return StringStep::Terminated(index + 1);
            }
            ESC => {
                return match input.get(index + 1) {
                    None => StringStep::NeedMore(index),
                    Some(b'\\') => {
                        string.push(ESC);
                        string.push(b'\\');
                        StringStep::Terminated(index + 2)
                    }
                    Some(_) => StringStep::Aborted(index),
                };
            }
            _ => string.push(byte),
        }
    }
    StringStep::Open(input.len())
}

/// A complete OSC/DCS/APC string (introducer and terminator included).
fn decode_string(raw: &[u8]) -> Vec<InputEvent> {
    let body = raw
        .strip_suffix(b"\x1b\\")
        .or_else(|| raw.strip_suffix(&[BEL]))
        .unwrap_or(raw);
    if raw.get(1) == Some(&b']') {
        if let Some(colors) = body.get(2..).and_then(osc_colors) {
            return colors.into_iter().map(InputEvent::Reply).collect();
        }
    }
    vec![InputEvent::Reply(TerminalReply::Other(raw.to_vec()))]
}

/// `10;rgb:…`, `11;rgb:…`, `4;n;rgb:…[;n;rgb:…]`.
fn osc_colors(content: &[u8]) -> Option<Vec<TerminalReply>> {
    let text = std::str::from_utf8(content).ok()?;
    let (command, rest) = text.split_once(';')?;
    let single = |slot| {
        Some(vec![TerminalReply::Color {
            slot,
            rgb: parse_color(rest)?,
        }])
    };
    match command {
        "10" => single(ColorSlot::Foreground),
        "11" => single(ColorSlot::Background),
        "4" => {
            let parts: Vec<&str> = rest.split(';').collect();
            if parts.len() % 2 != 0 {
                return None;
            }
            parts
                .chunks(2)
                .map(|pair| {
                    Some(TerminalReply::Color {
                        slot: ColorSlot::Palette(pair[0].parse().ok()?),
                        rgb: parse_color(pair[1])?,
                    })
                })
                .collect()
        }
        _ => None,
    }
}

/// `rgb:R/G/B` (or `rgba:R/G/B/A`) with 1-4 hex digits per component, scaled to 8 bits.
fn parse_color(spec: &str) -> Option<(u8, u8, u8)> {
    let (components, count) = if let Some(rest) = spec.strip_prefix("rgb:") {
        (rest, 3)
    } else {
        (spec.strip_prefix("rgba:")?, 4)
    };
    let values = components
        .split('/')
        .map(scale_hex_component)
        .collect::<Option<Vec<u8>>>()?;
    if values.len() != count {
        return None;
    }
    Some((values[0], values[1], values[2]))
}

fn scale_hex_component(digits: &str) -> Option<u8> {
    if digits.is_empty() || digits.len() > 4 {
        return None;
    }
    let value = u32::from_str_radix(digits, 16).ok()?;
    let max = (1u32 << (4 * digits.len())) - 1;
    u8::try_from((value * 255 + max / 2) / max).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key compared field by field: crossterm's `KeyEvent: PartialEq` ignores the case
    /// difference between `Char('a')`+SHIFT and `Char('A')`, which these tests must see.
    #[derive(Debug, PartialEq)]
    enum Seen {
        Key(KeyCode, KeyModifiers, KeyEventKind, KeyEventState),
        Other(InputEvent),
    }

    fn seen(events: Vec<InputEvent>) -> Vec<Seen> {
        events
            .into_iter()
            .map(|event| match event {
                InputEvent::Event(Event::Key(k)) => Seen::Key(k.code, k.modifiers, k.kind, k.state),
                other => Seen::Other(other),
            })
            .collect()
    }

    const NONE: KeyModifiers = KeyModifiers::NONE;
    const SHIFT: KeyModifiers = KeyModifiers::SHIFT;
    const ALT: KeyModifiers = KeyModifiers::ALT;
    const CTRL: KeyModifiers = KeyModifiers::CONTROL;
    const META: KeyModifiers = KeyModifiers::META;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> Seen {
        Seen::Key(code, modifiers, KeyEventKind::Press, KeyEventState::NONE)
    }

    fn release(code: KeyCode, modifiers: KeyModifiers) -> Seen {
        Seen::Key(code, modifiers, KeyEventKind::Release, KeyEventState::NONE)
    }

    fn repeat(code: KeyCode, modifiers: KeyModifiers) -> Seen {
        Seen::Key(code, modifiers, KeyEventKind::Repeat, KeyEventState::NONE)
    }

    fn keypad(code: KeyCode, modifiers: KeyModifiers) -> Seen {
        Seen::Key(code, modifiers, KeyEventKind::Press, KeyEventState::KEYPAD)
    }

    fn locked(code: KeyCode, modifiers: KeyModifiers, state: KeyEventState) -> Seen {
        Seen::Key(code, modifiers, KeyEventKind::Press, state)
    }

    fn ch(c: char) -> Seen {
        key(KeyCode::Char(c), NONE)
    }

    fn chm(c: char, modifiers: KeyModifiers) -> Seen {
        key(KeyCode::Char(c), modifiers)
    }

    fn event(event: Event) -> Seen {
        Seen::Other(InputEvent::Event(event))
    }

    fn reply(reply: TerminalReply) -> Seen {
        Seen::Other(InputEvent::Reply(reply))
    }

    fn mouse(kind: MouseEventKind, column: u16, row: u16, modifiers: KeyModifiers) -> Seen {
        event(Event::Mouse(MouseEvent {
            kind,
            column,
            row,
            modifiers,
        }))
    }

    /// What the app sees: the bytes in one read, then the timeout.
    fn decode_all(bytes: &[u8]) -> Vec<Seen> {
        let mut decoder = InputDecoder::new();
        let mut events = decoder.feed(bytes);
        events.extend(decoder.flush_pending());
        assert!(!decoder.has_pending(), "flush left bytes behind");
        seen(events)
    }

    fn decode_bytewise(bytes: &[u8]) -> Vec<Seen> {
        let mut decoder = InputDecoder::new();
        let mut events = Vec::new();
        for byte in bytes {
            events.extend(decoder.feed(std::slice::from_ref(byte)));
        }
        events.extend(decoder.flush_pending());
        seen(events)
    }

    type Row = (&'static [u8], Vec<Seen>);

    /// Each row decoded in one read, one byte at a time, and split in two at every point.
    fn check_table(rows: &[Row]) {
        for (bytes, expected) in rows {
            let shown = bytes.escape_ascii().to_string();
            assert_eq!(&decode_all(bytes), expected, "one read: {shown}");
            assert_eq!(&decode_bytewise(bytes), expected, "bytewise: {shown}");
            for split in 1..bytes.len() {
                let mut decoder = InputDecoder::new();
                let mut events = decoder.feed(&bytes[..split]);
                events.extend(decoder.feed(&bytes[split..]));
                events.extend(decoder.flush_pending());
                assert_eq!(&seen(events), expected, "split at {split}: {shown}");
            }
        }
    }

    fn text_rows() -> Vec<Row> {
        vec![
            (b"a", vec![ch('a')]),
            (b"A", vec![chm('A', SHIFT)]),
            (b" ~", vec![ch(' '), ch('~')]),
            (b"ab1", vec![ch('a'), ch('b'), ch('1')]),
            ("é".as_bytes(), vec![ch('é')]),
            ("É".as_bytes(), vec![chm('É', SHIFT)]),
            ("日本".as_bytes(), vec![ch('日'), ch('本')]),
            ("😀x".as_bytes(), vec![ch('😀'), ch('x')]),
            // Invalid UTF-8 is dropped, the text around it kept.
            (b"a\xffb", vec![ch('a'), ch('b')]),
            (b"a\xc3b", vec![ch('a'), ch('b')]),
        ]
    }

    #[test]
    fn decodes_text() {
        check_table(&text_rows());
    }

    fn control_rows() -> Vec<Row> {
        vec![
            (b"\r", vec![key(KeyCode::Enter, NONE)]),
            (b"\t", vec![key(KeyCode::Tab, NONE)]),
            (b"\x7f", vec![key(KeyCode::Backspace, NONE)]),
            (b"\n", vec![chm('j', CTRL)]),
            (b"\x08", vec![chm('h', CTRL)]),
            (b"\x00", vec![chm(' ', CTRL)]),
            (b"\x01", vec![chm('a', CTRL)]),
            (b"\x03", vec![chm('c', CTRL)]),
            (b"\x1a", vec![chm('z', CTRL)]),
            (b"\x1c", vec![chm('\\', CTRL)]),
            (b"\x1d", vec![chm(']', CTRL)]),
            (b"\x1e", vec![chm('^', CTRL)]),
            (b"\x1f", vec![chm('_', CTRL)]),
            (b"\x1b", vec![key(KeyCode::Esc, NONE)]),
        ]
    }

    #[test]
    fn decodes_controls() {
        check_table(&control_rows());
    }

    fn alt_rows() -> Vec<Row> {
        vec![
            (b"\x1ba", vec![chm('a', ALT)]),
            (b"\x1bA", vec![chm('A', ALT | SHIFT)]),
            (b"\x1b1", vec![chm('1', ALT)]),
            ("\x1bé".as_bytes(), vec![chm('é', ALT)]),
            (b"\x1b\r", vec![key(KeyCode::Enter, ALT)]),
            (b"\x1b\x7f", vec![key(KeyCode::Backspace, ALT)]),
            (b"\x1b\x01", vec![chm('a', CTRL | ALT)]),
            // Several Esc presses in one read are each an Esc.
            (
                b"\x1b\x1b",
                vec![key(KeyCode::Esc, NONE), key(KeyCode::Esc, NONE)],
            ),
            (
                b"\x1b\x1b\x1b",
                vec![
                    key(KeyCode::Esc, NONE),
                    key(KeyCode::Esc, NONE),
                    key(KeyCode::Esc, NONE),
                ],
            ),
            (b"\x1b\x1b[A", vec![key(KeyCode::Up, ALT)]),
            (b"\x1b\x1bOB", vec![key(KeyCode::Down, ALT)]),
            (b"\x1b\x1bx", vec![key(KeyCode::Esc, NONE), chm('x', ALT)]),
            (
                b"\x1b\x1b\x1b[A",
                vec![key(KeyCode::Esc, NONE), key(KeyCode::Up, ALT)],
            ),
            // Would-be sequence introducers that never became sequences.
            (b"\x1b[", vec![chm('[', ALT)]),
            (b"\x1bO", vec![chm('O', ALT | SHIFT)]),
            (b"\x1b]", vec![chm(']', ALT)]),
            (b"\x1b]x", vec![chm(']', ALT), ch('x')]),
            (b"\x1b]a\x07", vec![chm(']', ALT), ch('a'), chm('g', CTRL)]),
            (b"\x1bP", vec![chm('P', ALT | SHIFT)]),
            (b"\x1bPp", vec![chm('P', ALT | SHIFT), ch('p')]),
            (b"\x1b_", vec![chm('_', ALT)]),
            // An open CSI or string at the timeout is Alt + its introducer, then text.
            (b"\x1b[1;", vec![chm('[', ALT), ch('1'), ch(';')]),
            (b"\x1b]1", vec![chm(']', ALT), ch('1')]),
            (
                b"\x1b]11;x\x1b",
                vec![
                    chm(']', ALT),
                    ch('1'),
                    ch('1'),
                    ch(';'),
                    ch('x'),
                    key(KeyCode::Esc, NONE),
                ],
            ),
            // Malformed CSI: a control inside; the control is kept.
            (
                b"\x1b[1;\x03",
                vec![chm('[', ALT), ch('1'), ch(';'), chm('c', CTRL)],
            ),
        ]
    }

    #[test]
    fn decodes_alt_and_unfinished_escapes() {
        check_table(&alt_rows());
    }

    fn xterm_rows() -> Vec<Row> {
        use KeyCode::*;
        vec![
            (b"\x1b[A", vec![key(Up, NONE)]),
            (b"\x1b[B", vec![key(Down, NONE)]),
            (b"\x1b[C", vec![key(Right, NONE)]),
            (b"\x1b[D", vec![key(Left, NONE)]),
            (b"\x1b[H", vec![key(Home, NONE)]),
            (b"\x1b[F", vec![key(End, NONE)]),
            (b"\x1bOA", vec![key(Up, NONE)]),
            (b"\x1bOD", vec![key(Left, NONE)]),
            (b"\x1bOH", vec![key(Home, NONE)]),
            (b"\x1bOF", vec![key(End, NONE)]),
            (b"\x1bOP", vec![key(F(1), NONE)]),
            (b"\x1bOS", vec![key(F(4), NONE)]),
            (b"\x1bO2P", vec![key(F(1), SHIFT)]),
            (b"\x1bOM", vec![keypad(Enter, NONE)]),
            (b"\x1bOq", vec![keypad(Char('1'), NONE)]),
            (b"\x1b[1;2A", vec![key(Up, SHIFT)]),
            (b"\x1b[1;3B", vec![key(Down, ALT)]),
            (b"\x1b[1;5C", vec![key(Right, CTRL)]),
            (b"\x1b[1;6D", vec![key(Left, CTRL | SHIFT)]),
            (b"\x1b[1;9H", vec![key(Home, KeyModifiers::SUPER)]),
            (b"\x1b[1;17F", vec![key(End, KeyModifiers::HYPER)]),
            (b"\x1b[1;33A", vec![key(Up, META)]),
            (
                b"\x1b[1;65A",
                vec![locked(Up, NONE, KeyEventState::CAPS_LOCK)],
            ),
            (
                b"\x1b[1;133A",
                vec![locked(Up, CTRL, KeyEventState::NUM_LOCK)],
            ),
            (b"\x1b[E", vec![keypad(KeypadBegin, NONE)]),
            (b"\x1b[2~", vec![key(Insert, NONE)]),
            (b"\x1b[3~", vec![key(Delete, NONE)]),
            (b"\x1b[5~", vec![key(PageUp, NONE)]),
            (b"\x1b[6~", vec![key(PageDown, NONE)]),
            (b"\x1b[1~", vec![key(Home, NONE)]),
            (b"\x1b[7~", vec![key(Home, NONE)]),
            (b"\x1b[4~", vec![key(End, NONE)]),
            (b"\x1b[8~", vec![key(End, NONE)]),
            (b"\x1b[3;5~", vec![key(Delete, CTRL)]),
            (b"\x1b[5;3~", vec![key(PageUp, ALT)]),
            (b"\x1b[11~", vec![key(F(1), NONE)]),
            (b"\x1b[13~", vec![key(F(3), NONE)]),
            (b"\x1b[15~", vec![key(F(5), NONE)]),
            (b"\x1b[17~", vec![key(F(6), NONE)]),
            (b"\x1b[21~", vec![key(F(10), NONE)]),
            (b"\x1b[23~", vec![key(F(11), NONE)]),
            (b"\x1b[24~", vec![key(F(12), NONE)]),
            (b"\x1b[24;2~", vec![key(F(12), SHIFT)]),
            (b"\x1b[1;2P", vec![key(F(1), SHIFT)]),
            (b"\x1b[1;5Q", vec![key(F(2), CTRL)]),
            (b"\x1b[1;5R", vec![key(F(3), CTRL)]),
            (b"\x1b[1;3S", vec![key(F(4), ALT)]),
            (b"\x1b[[A", vec![key(F(1), NONE)]),
            (b"\x1b[Z", vec![key(BackTab, SHIFT)]),
            (b"\x1b[1;5Z", vec![key(BackTab, CTRL | SHIFT)]),
            (b"\x1b[Aab", vec![key(Up, NONE), ch('a'), ch('b')]),
            (
                b"x\x1b[3~\r",
                vec![ch('x'), key(Delete, NONE), key(Enter, NONE)],
            ),
        ]
    }

    #[test]
    fn decodes_xterm_keys() {
        check_table(&xterm_rows());
    }

    fn modify_other_keys_rows() -> Vec<Row> {
        use KeyCode::*;
        vec![
            (b"\x1b[27;5;13~", vec![key(Enter, CTRL)]),
            (b"\x1b[27;2;13~", vec![key(Enter, SHIFT)]),
            (b"\x1b[27;5;9~", vec![key(Tab, CTRL)]),
            (b"\x1b[27;2;9~", vec![key(BackTab, SHIFT)]),
            (b"\x1b[27;3;27~", vec![key(Esc, ALT)]),
            (b"\x1b[27;5;127~", vec![key(Backspace, CTRL)]),
            (b"\x1b[27;5;32~", vec![chm(' ', CTRL)]),
            (b"\x1b[27;5;97~", vec![chm('a', CTRL)]),
            (b"\x1b[27;6;97~", vec![chm('A', CTRL | SHIFT)]),
            (b"\x1b[27;6;65~", vec![chm('A', CTRL | SHIFT)]),
            (b"\x1b[27;7;49~", vec![chm('1', CTRL | ALT)]),
            // tmux's csi-u variant of the same keys.
            (b"\x1b[13;2u", vec![key(Enter, SHIFT)]),
            (b"\x1b[105;5u", vec![chm('i', CTRL)]),
            (b"\x1b[9;5u", vec![key(Tab, CTRL)]),
        ]
    }

    #[test]
    fn decodes_modify_other_keys() {
        check_table(&modify_other_keys_rows());
    }

    fn kitty_rows() -> Vec<Row> {
        use KeyCode::*;
        vec![
            (b"\x1b[97u", vec![ch('a')]),
            (b"\x1b[97;1u", vec![ch('a')]),
            (b"\x1b[97;5u", vec![chm('a', CTRL)]),
            (b"\x1b[97;3u", vec![chm('a', ALT)]),
            (b"\x1b[97;2u", vec![chm('A', SHIFT)]),
            (b"\x1b[97:65;2u", vec![chm('A', SHIFT)]),
            (b"\x1b[97:65;6u", vec![chm('A', CTRL | SHIFT)]),
            (b"\x1b[49:33;2u", vec![ch('!')]),
            (b"\x1b[49:33;6u", vec![chm('!', CTRL)]),
            // The shifted form only counts with SHIFT held; the base layout key is ignored.
            (b"\x1b[1089::99;5u", vec![chm('с', CTRL)]),
            (b"\x1b[97;1:1u", vec![ch('a')]),
            (b"\x1b[97;1:2u", vec![repeat(Char('a'), NONE)]),
            (b"\x1b[97;1:3u", vec![release(Char('a'), NONE)]),
            (b"\x1b[97;5:3u", vec![release(Char('a'), CTRL)]),
            (
                b"\x1b[97;65u",
                vec![locked(Char('a'), NONE, KeyEventState::CAPS_LOCK)],
            ),
            (b"\x1b[97;1;97u", vec![ch('a')]),
            (b"\x1b[13u", vec![key(Enter, NONE)]),
            (b"\x1b[13;2u", vec![key(Enter, SHIFT)]),
            (b"\x1b[13;1:3u", vec![release(Enter, NONE)]),
            (b"\x1b[9;2u", vec![key(BackTab, SHIFT)]),
            (b"\x1b[127;5u", vec![key(Backspace, CTRL)]),
            (b"\x1b[27u", vec![key(Esc, NONE)]),
            (b"\x1b[27;1:3u", vec![release(Esc, NONE)]),
            (b"\x1b[57399u", vec![keypad(Char('0'), NONE)]),
            (b"\x1b[57414;2u", vec![keypad(Enter, SHIFT)]),
            (b"\x1b[57426u", vec![keypad(Delete, NONE)]),
            (b"\x1b[57344u", vec![key(Esc, NONE)]),
            (b"\x1b[57358u", vec![key(CapsLock, NONE)]),
            (b"\x1b[57376u", vec![key(F(13), NONE)]),
            (b"\x1b[57398u", vec![key(F(35), NONE)]),
            (b"\x1b[57428u", vec![key(Media(MediaKeyCode::Play), NONE)]),
            (
                b"\x1b[57441;2u",
                vec![key(Modifier(ModifierKeyCode::LeftShift), SHIFT)],
            ),
            (
                b"\x1b[57442;1:3u",
                vec![release(Modifier(ModifierKeyCode::LeftControl), CTRL)],
            ),
            (
                b"\x1b[57452u",
                vec![key(Modifier(ModifierKeyCode::RightMeta), META)],
            ),
            // Functional keys in their legacy shapes, with event types.
            (b"\x1b[1;1:3A", vec![release(Up, NONE)]),
            (b"\x1b[1;5:2C", vec![repeat(Right, CTRL)]),
            (b"\x1b[3;1:3~", vec![release(Delete, NONE)]),
            (b"\x1b[6;2:1~", vec![key(PageDown, SHIFT)]),
            (b"\x1b[P", vec![key(F(1), NONE)]),
            (b"\x1b[1;1:3P", vec![release(F(1), NONE)]),
            (b"\x1b[13;1:3~", vec![release(F(3), NONE)]),
        ]
    }

    #[test]
    fn decodes_kitty_keys() {
        check_table(&kitty_rows());
    }

    fn focus_rows() -> Vec<Row> {
        vec![
            (b"\x1b[I", vec![event(Event::FocusGained)]),
            (b"\x1b[O", vec![event(Event::FocusLost)]),
            (
                b"\x1b[Ia\x1b[O",
                vec![event(Event::FocusGained), ch('a'), event(Event::FocusLost)],
            ),
        ]
    }

    #[test]
    fn decodes_focus() {
        check_table(&focus_rows());
    }

    fn paste(text: &str) -> Seen {
        event(Event::Paste(text.to_owned()))
    }

    fn paste_rows() -> Vec<Row> {
        vec![
            (b"\x1b[200~hello\x1b[201~", vec![paste("hello")]),
            (b"\x1b[200~\x1b[201~", vec![paste("")]),
            (b"\x1b[200~a\r\nb\rc\n\x1b[201~", vec![paste("a\r\nb\rc\n")]),
            (
                "\x1b[200~déjà 日本\x1b[201~".as_bytes(),
                vec![paste("déjà 日本")],
            ),
            // Escapes inside a paste stay text, even a partial end marker.
            (
                b"\x1b[200~\x1b[A\x1b[201\x1b\x1b[201~",
                vec![paste("\x1b[A\x1b[201\x1b")],
            ),
            (b"x\x1b[200~y\x1b[201~z", vec![ch('x'), paste("y"), ch('z')]),
            // A stray end marker is dropped.
            (b"\x1b[201~a", vec![ch('a')]),
        ]
    }

    #[test]
    fn decodes_paste() {
        check_table(&paste_rows());
    }

    #[test]
    fn a_huge_paste_split_across_many_feeds_is_one_event() {
        let text: String = (0..20_000).map(|i| format!("line {i} ✓\r\n")).collect();
        let mut bytes = b"\x1b[200~".to_vec();
        bytes.extend_from_slice(text.as_bytes());
        bytes.extend_from_slice(b"\x1b[201~\x01");
        let mut decoder = InputDecoder::new();
        let mut events = Vec::new();
        for chunk in bytes.chunks(4093) {
            events.extend(decoder.feed(chunk));
            if decoder.in_paste() {
                assert!(
                    !decoder.has_pending(),
                    "a paste must not wait for the ESC timeout"
                );
                assert!(
                    decoder.flush_pending().is_empty(),
                    "the timeout must not end a paste"
                );
            }
        }
        assert_eq!(seen(events), vec![paste(&text), chm('a', CTRL)]);
        assert!(!decoder.in_paste());
    }

    fn mouse_rows() -> Vec<Row> {
        use MouseButton::{Left, Middle, Right};
        use MouseEventKind::*;
        vec![
            (b"\x1b[<0;1;1M", vec![mouse(Down(Left), 0, 0, NONE)]),
            (b"\x1b[<0;10;5m", vec![mouse(Up(Left), 9, 4, NONE)]),
            (b"\x1b[<1;3;4M", vec![mouse(Down(Middle), 2, 3, NONE)]),
            (b"\x1b[<2;3;4m", vec![mouse(Up(Right), 2, 3, NONE)]),
            (b"\x1b[<32;20;7M", vec![mouse(Drag(Left), 19, 6, NONE)]),
            (b"\x1b[<35;20;7M", vec![mouse(Moved, 19, 6, NONE)]),
            (b"\x1b[<64;5;5M", vec![mouse(ScrollUp, 4, 4, NONE)]),
            (b"\x1b[<65;5;5M", vec![mouse(ScrollDown, 4, 4, NONE)]),
            (b"\x1b[<66;5;5M", vec![mouse(ScrollLeft, 4, 4, NONE)]),
            (b"\x1b[<67;5;5M", vec![mouse(ScrollRight, 4, 4, NONE)]),
            (b"\x1b[<4;1;1M", vec![mouse(Down(Left), 0, 0, SHIFT)]),
            (b"\x1b[<8;1;1M", vec![mouse(Down(Left), 0, 0, ALT)]),
            (b"\x1b[<16;1;1M", vec![mouse(Down(Left), 0, 0, CTRL)]),
            (b"\x1b[<80;300;200M", vec![mouse(ScrollUp, 299, 199, CTRL)]),
            // X10: button, column, row each + 32, 1-based.
            (b"\x1b[M !!", vec![mouse(Down(Left), 0, 0, NONE)]),
            (b"\x1b[M#*%", vec![mouse(Up(Left), 9, 4, NONE)]),
            (b"\x1b[M`++", vec![mouse(ScrollUp, 10, 10, NONE)]),
            (b"\x1b[M0\xff\x21", vec![mouse(Down(Left), 222, 0, CTRL)]),
            // X10 bytes are raw, even an ESC.
            (
                b"\x1b[M \x1b!a",
                vec![mouse(Down(Left), 0, 0, NONE), ch('a')],
            ),
            // urxvt 1015.
            (b"\x1b[32;10;5M", vec![mouse(Down(Left), 9, 4, NONE)]),
        ]
    }

    #[test]
    fn decodes_mouse() {
        check_table(&mouse_rows());
    }

    fn color(slot: ColorSlot, rgb: (u8, u8, u8)) -> Seen {
        reply(TerminalReply::Color { slot, rgb })
    }

    fn other(bytes: &[u8]) -> Seen {
        reply(TerminalReply::Other(bytes.to_vec()))
    }

    fn reply_rows() -> Vec<Row> {
        use ColorSlot::{Background, Foreground, Palette};
        use TerminalReply::{ColorScheme, CursorPosition, KittyFlags, PrimaryDeviceAttributes};
        vec![
            (b"\x1b[?0u", vec![reply(KittyFlags(0))]),
            (b"\x1b[?15u", vec![reply(KittyFlags(15))]),
            (
                b"\x1b[?62;22;52c",
                vec![reply(PrimaryDeviceAttributes(vec![62, 22, 52]))],
            ),
            (
                b"\x1b[?65;1;9c",
                vec![reply(PrimaryDeviceAttributes(vec![65, 1, 9]))],
            ),
            (
                b"\x1b]11;rgb:1e1e/1e1e/2e2e\x07",
                vec![color(Background, (0x1e, 0x1e, 0x2e))],
            ),
            (
                b"\x1b]10;rgb:ffff/8080/0000\x1b\\",
                vec![color(Foreground, (0xff, 0x80, 0x00))],
            ),
            (
                b"\x1b]10;rgb:f/8/0\x07",
                vec![color(Foreground, (0xff, 0x88, 0x00))],
            ),
            (
                b"\x1b]11;rgba:ff/00/7f/ff\x07",
                vec![color(Background, (0xff, 0, 0x7f))],
            ),
            (
                b"\x1b]4;1;rgb:cdcd/0000/0000\x1b\\",
                vec![color(Palette(1), (0xcd, 0, 0))],
            ),
            (
                b"\x1b[12;40R",
                vec![reply(CursorPosition { row: 11, col: 39 })],
            ),
            (
                b"\x1b[?1;1;1R",
                vec![reply(CursorPosition { row: 0, col: 0 })],
            ),
            (b"\x1b[?997;1n", vec![reply(ColorScheme { dark: true })]),
            (b"\x1b[?997;2n", vec![reply(ColorScheme { dark: false })]),
            // Replies we keep whole.
            (b"\x1b[>1;277;0c", vec![other(b"\x1b[>1;277;0c")]),
            (b"\x1b[?2026;2$y", vec![other(b"\x1b[?2026;2$y")]),
            (b"\x1b[?5n", vec![other(b"\x1b[?5n")]),
            (b"\x1b[0n", vec![other(b"\x1b[0n")]),
            (b"\x1b[8;24;80t", vec![other(b"\x1b[8;24;80t")]),
            (
                b"\x1bP>|kitty(0.40)\x1b\\",
                vec![other(b"\x1bP>|kitty(0.40)\x1b\\")],
            ),
            (b"\x1bP1$r0m\x1b\\", vec![other(b"\x1bP1$r0m\x1b\\")]),
            (b"\x1b]52;c;aGk=\x07", vec![other(b"\x1b]52;c;aGk=\x07")]),
            (b"\x1b]11;?\x07", vec![other(b"\x1b]11;?\x07")]),
            (b"\x1b_Gi=1;OK\x1b\\", vec![other(b"\x1b_Gi=1;OK\x1b\\")]),
            // A reply between keys stays out of the keys.
            (
                b"a\x1b[?1u\x1b]11;rgb:0/0/0\x07b",
                vec![
                    ch('a'),
                    reply(KittyFlags(1)),
                    color(Background, (0, 0, 0)),
                    ch('b'),
                ],
            ),
            // A string cancelled by ESC is dropped; the ESC starts the next sequence.
            (b"\x1b]11;rgb:\x1b[A", vec![key(KeyCode::Up, NONE)]),
            // Unknown but well-formed sequences leave nothing behind.
            (b"\x1b[99~x", vec![ch('x')]),
            (b"\x1b[5Gx", vec![ch('x')]),
            (b"\x1b[<1;2;3Xx", vec![ch('x')]),
            (b"\x1bO~x", vec![ch('x')]),
            (b"\x1b[<200;1;1Mx", vec![ch('x')]),
        ]
    }

    #[test]
    fn decodes_replies() {
        check_table(&reply_rows());
    }

    #[test]
    fn cursor_report_ambiguity_follows_the_expectation() {
        let f3 = |mods| vec![key(KeyCode::F(3), mods)];
        let position = |row, col| vec![reply(TerminalReply::CursorPosition { row, col })];

        let mut decoder = InputDecoder::new();
        assert_eq!(seen(decoder.feed(b"\x1b[1;5R")), f3(CTRL));
        assert_eq!(seen(decoder.feed(b"\x1b[R")), f3(NONE));
        assert_eq!(seen(decoder.feed(b"\x1b[2;5R")), position(1, 4));

        decoder.expect_cursor_report();
        decoder.expect_cursor_report();
        assert_eq!(seen(decoder.feed(b"\x1b[1;5R")), position(0, 4));
        assert_eq!(seen(decoder.feed(b"\x1b[1;1R")), position(0, 0));
        // Both expected reports arrived: back to F3.
        assert_eq!(seen(decoder.feed(b"\x1b[1;2R")), f3(SHIFT));
    }

    #[test]
    fn a_lone_escape_waits_for_the_timeout() {
        let mut decoder = InputDecoder::new();
        assert!(decoder.feed(b"\x1b").is_empty());
        assert!(decoder.has_pending());
        assert_eq!(seen(decoder.flush_pending()), vec![key(KeyCode::Esc, NONE)]);
        assert!(!decoder.has_pending());
        assert!(decoder.flush_pending().is_empty());

        // Without the timeout, the next bytes complete the sequence instead.
        assert!(decoder.feed(b"\x1b").is_empty());
        assert_eq!(seen(decoder.feed(b"[A")), vec![key(KeyCode::Up, NONE)]);
        assert!(!decoder.has_pending());
    }

    #[test]
    fn a_split_char_is_held_until_complete() {
        let mut decoder = InputDecoder::new();
        assert!(decoder.feed(b"\xe6").is_empty());
        assert!(decoder.has_pending());
        assert!(decoder.feed(b"\x97").is_empty());
        assert_eq!(seen(decoder.feed(b"\xa5")), vec![ch('日')]);
        assert!(!decoder.has_pending());
    }

    #[test]
    fn every_table_decodes_the_same_when_concatenated() {
        // Sequences back to back in one read must not bleed into each other. Rows whose
        // meaning depends on the timeout (lone ESC, unfinished sequences) are left out.
        let rows: Vec<Row> = [
            text_rows(),
            control_rows(),
            xterm_rows(),
            modify_other_keys_rows(),
            kitty_rows(),
            focus_rows(),
            paste_rows(),
            mouse_rows(),
            reply_rows(),
        ]
        .into_iter()
        .flatten()
        .filter(|(bytes, _)| bytes.last() != Some(&ESC))
        .collect();
        let mut bytes = Vec::new();
        let mut expected = Vec::new();
        for (row_bytes, row_expected) in rows {
            bytes.extend_from_slice(row_bytes);
            // A separator that cannot join either neighbour.
            bytes.push(b'\r');
            expected.extend(row_expected);
            expected.push(key(KeyCode::Enter, NONE));
        }
        assert_eq!(decode_all(&bytes), expected);
        assert_eq!(decode_bytewise(&bytes), expected);
    }
}

//! Turns the outer terminal's input (crossterm key, mouse, paste and focus events) into the bytes
//! Pi's PTY expects, in the mode Pi negotiated with us — we are Pi's terminal. Pure functions over
//! the negotiated state ([`KeyboardModes`], vt100's mouse modes), so every rule is a table test.
//!
//! Three keyboard encodings, chosen by what the child asked for:
//! - **kitty** (`CSI > flags u`, Pi asks for 7): the kitty keyboard protocol, progressive flags
//!   1/2/4/8/16. F1–F4 use the spec's `CSI 11~`…`CSI 14~` spelling rather than `CSI P`…: both are
//!   allowed, the `~` form never collides with a cursor position report (`CSI 1;5R` is both F3 and
//!   a CPR), and Pi 0.7x decodes only the `~` form (of unmodified F-keys).
//! - **modifyOtherKeys** (`CSI > 4 ; 1|2 m`, Pi's fallback, at level 2): modified keys become `CSI
//!   27 ; mods ; codepoint ~`. Level 2 does so for every modified key except Shift on a printable
//!   key (the shifted text) and Shift+Tab (`CSI Z`); level 1 only where the legacy bytes would lose
//!   a modifier.
//! - **legacy**: xterm bytes as the kitty spec tabulates them (C0 controls for Ctrl, an `ESC`
//!   prefix for Alt, `CSI 1;m X` and `CSI n;m~` for functional keys). Like the kitty terminal, a
//!   combination legacy has no bytes for (Shift+Enter, Ctrl+Tab, Ctrl+Shift+letter, Super+…) goes
//!   out as `CSI u`: Pi decodes `CSI u` in every mode, so Shift+Enter still means newline before
//!   negotiation finishes.
//!
//! crossterm reports Shift+a as `Char('A')` (with or without SHIFT, depending on the outer
//! terminal's own flags) and Shift+Tab as `BackTab`; [`PressedKey`] folds those back into the
//! unshifted key plus modifiers, which is what every encoding is defined over.

use crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyEventState, KeyModifiers, MediaKeyCode, ModifierKeyCode,
    MouseButton, MouseEvent, MouseEventKind,
};
use vt100::{MouseProtocolEncoding, MouseProtocolMode};

use super::KeyboardModes;

/// The bytes for `key` in the mode the child negotiated. `None` when the event must not be sent:
/// a release or a lone modifier the child did not ask for, or a key with no encoding in this mode.
pub(crate) fn encode_key(key: &KeyEvent, modes: KeyboardModes) -> Option<Vec<u8>> {
    let pressed = PressedKey::from_crossterm(key)?;
    if modes.kitty_flags & KITTY_KNOWN_FLAGS != 0 {
        encode_kitty(&pressed, modes)
    } else {
        encode_xterm(&pressed, modes)
    }
}

/// The report for a mouse event. `ev.column`/`ev.row` are already relative to the pane
/// (0-based). `None` when the child's mouse mode does not report this kind of event.
pub fn encode_mouse(
    ev: &MouseEvent,
    mode: MouseProtocolMode,
    encoding: MouseProtocolEncoding,
) -> Option<Vec<u8>> {
    let (code, release) = mouse_button_code(ev.kind, mode)?;
    // X10 compatibility mode (9) reports bare presses: no modifier bits.
    let code = if mode == MouseProtocolMode::Press {
        code
    } else {
        code | mouse_modifier_bits(ev.modifiers)
    };
    let x = u32::from(ev.column) + 1;
    let y = u32::from(ev.row) + 1;
    if encoding == MouseProtocolEncoding::Sgr {
        let final_byte = if release { 'm' } else { 'M' };
        return Some(format!("\x1b[<{code};{x};{y}{final_byte}").into_bytes());
    }
    // Only SGR names the released button; the older encodings all say "3".
    let code = if release {
        3 | (code & !BUTTON_BITS)
    } else {
        code
    };
    let mut out = b"\x1b[M".to_vec();
    if encoding == MouseProtocolEncoding::Utf8 {
        for value in [code, x.min(UTF8_MAX_COORD), y.min(UTF8_MAX_COORD)] {
            push_utf8_mouse_value(&mut out, value);
        }
    } else {
        for value in [code, x.min(X10_MAX_COORD), y.min(X10_MAX_COORD)] {
            out.push(x10_byte(value));
        }
    }
    Some(out)
}

/// Pasted text. Bracketed: wrapped in `ESC[200~`…`ESC[201~`, with every `ESC` removed from the text
/// so the paste cannot end the bracket early or smuggle a sequence. Unbracketed: line ends become
/// CR, as if typed.
pub fn encode_paste(text: &str, bracketed: bool) -> Vec<u8> {
    if bracketed {
        let mut out = Vec::with_capacity(text.len() + 12);
        out.extend_from_slice(b"\x1b[200~");
        out.extend(text.bytes().filter(|&b| b != ESC));
        out.extend_from_slice(b"\x1b[201~");
        out
    } else {
        text.replace("\r\n", "\r").replace('\n', "\r").into_bytes()
    }
}

/// The focus report (`CSI ? 1004 h`): `CSI I` on gain, `CSI O` on loss.
pub fn encode_focus(gained: bool) -> &'static [u8] {
    if gained { b"\x1b[I" } else { b"\x1b[O" }
}

// ---------------------------------------------------------------------------------------------
// Key model

const ESC: u8 = 0x1b;

const KITTY_DISAMBIGUATE: u8 = 1;
const KITTY_EVENT_TYPES: u8 = 2;
const KITTY_ALTERNATE_KEYS: u8 = 4;
const KITTY_ALL_KEYS: u8 = 8;
const KITTY_ASSOCIATED_TEXT: u8 = 16;
const KITTY_KNOWN_FLAGS: u8 = 31;

/// Modifier bits as the kitty protocol and xterm number them; on the wire the parameter is
/// `1 + bits`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Mods(u8);

impl Mods {
    const NONE: Self = Self(0);
    const SHIFT: Self = Self(1);
    const ALT: Self = Self(2);
    const CTRL: Self = Self(4);
    const SUPER: Self = Self(8);
    const HYPER: Self = Self(16);
    const META: Self = Self(32);

    fn from_crossterm(mods: KeyModifiers) -> Self {
        let pairs = [
            (KeyModifiers::SHIFT, Self::SHIFT),
            (KeyModifiers::ALT, Self::ALT),
            (KeyModifiers::CONTROL, Self::CTRL),
            (KeyModifiers::SUPER, Self::SUPER),
            (KeyModifiers::HYPER, Self::HYPER),
            (KeyModifiers::META, Self::META),
        ];
        pairs
            .iter()
            .filter(|(flag, _)| mods.contains(*flag))
            .fold(Self::NONE, |acc, (_, bit)| acc.with(*bit))
    }

    fn with(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    fn without(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }

    fn has(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    fn is_empty(self) -> bool {
        self.0 == 0
    }

    fn param(self) -> u32 {
        1 + u32::from(self.0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Press,
    Repeat,
    Release,
}

impl Action {
    /// The kitty event-type sub-parameter.
    fn code(self) -> u32 {
        match self {
            Self::Press => 1,
            Self::Repeat => 2,
            Self::Release => 3,
        }
    }
}

/// Keys with a legacy `CSI`/`SS3` form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Functional {
    Up,
    Down,
    Right,
    Left,
    Home,
    End,
    Begin,
    Insert,
    Delete,
    PageUp,
    PageDown,
    /// F1..=F12.
    F(u8),
}

impl Functional {
    /// `(number, final byte)` of the `CSI number ; mods final` form. `kitty` picks the spec's
    /// `~` spelling for F1–F4; legacy keeps xterm's `CSI 1;m P` except for F3, whose `CSI 1;m R`
    /// would read as a cursor position report.
    fn csi(self, kitty: bool) -> (u32, u8) {
        match self {
            Self::Up => (1, b'A'),
            Self::Down => (1, b'B'),
            Self::Right => (1, b'C'),
            Self::Left => (1, b'D'),
            Self::Home => (1, b'H'),
            Self::End => (1, b'F'),
            Self::Begin => (1, b'E'),
            Self::Insert => (2, b'~'),
            Self::Delete => (3, b'~'),
            Self::PageUp => (5, b'~'),
            Self::PageDown => (6, b'~'),
            Self::F(n @ 1..=4) if kitty => (10 + u32::from(n), b'~'),
            Self::F(1) => (1, b'P'),
            Self::F(2) => (1, b'Q'),
            Self::F(3) => (13, b'~'),
            Self::F(4) => (1, b'S'),
            Self::F(n @ 5) => (10 + u32::from(n), b'~'),
            Self::F(n @ 6..=10) => (11 + u32::from(n), b'~'),
            Self::F(n) => (12 + u32::from(n), b'~'),
        }
    }

    /// The `SS3` final byte legacy uses for the unmodified key: always for F1–F4, and for the
    /// cursor keys (arrows, Home, End) when the child set DECCKM.
    fn ss3(self, application_cursor: bool) -> Option<u8> {
        match self {
            Self::F(n @ 1..=4) => Some(b'O' + n),
            Self::Up | Self::Down | Self::Right | Self::Left | Self::Home | Self::End
                if application_cursor =>
            {
                Some(self.csi(false).1)
            }
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeyKind {
    /// A key that types a character. `base` is the unshifted key (kitty's key code), `text` what
    /// it types with the shift state held (`a`/`A`).
    Text {
        base: char,
        text: char,
    },
    Enter,
    Tab,
    Backspace,
    Escape,
    Functional(Functional),
    /// Keys only the kitty protocol can name (F13+, locks, media keys, lone modifiers), sent only
    /// with "report all keys": Pi 0.7x would insert their Private Use Area code point as text.
    KittyOnly(u32),
}

/// A crossterm key event reduced to what the encoders need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PressedKey {
    kind: KeyKind,
    mods: Mods,
    action: Action,
}

impl PressedKey {
    fn from_crossterm(key: &KeyEvent) -> Option<Self> {
        let mut mods = Mods::from_crossterm(key.modifiers);
        let kind = match key.code {
            KeyCode::Char(c) => {
                let (base, text, shifted) = split_shift(
                    c,
                    mods.has(Mods::SHIFT),
                    key.state.contains(KeyEventState::CAPS_LOCK),
                );
                if shifted {
                    mods = mods.with(Mods::SHIFT);
                }
                KeyKind::Text { base, text }
            }
            KeyCode::Null => {
                mods = mods.with(Mods::CTRL);
                KeyKind::Text {
                    base: ' ',
                    text: ' ',
                }
            }
            KeyCode::Enter => KeyKind::Enter,
            KeyCode::Tab => KeyKind::Tab,
            KeyCode::BackTab => {
                mods = mods.with(Mods::SHIFT);
                KeyKind::Tab
            }
            KeyCode::Backspace => KeyKind::Backspace,
            KeyCode::Esc => KeyKind::Escape,
            KeyCode::Up => KeyKind::Functional(Functional::Up),
            KeyCode::Down => KeyKind::Functional(Functional::Down),
            KeyCode::Right => KeyKind::Functional(Functional::Right),
            KeyCode::Left => KeyKind::Functional(Functional::Left),
            KeyCode::Home => KeyKind::Functional(Functional::Home),
            KeyCode::End => KeyKind::Functional(Functional::End),
            KeyCode::KeypadBegin => KeyKind::Functional(Functional::Begin),
            KeyCode::Insert => KeyKind::Functional(Functional::Insert),
            KeyCode::Delete => KeyKind::Functional(Functional::Delete),
            KeyCode::PageUp => KeyKind::Functional(Functional::PageUp),
            KeyCode::PageDown => KeyKind::Functional(Functional::PageDown),
            KeyCode::F(n @ 1..=12) => KeyKind::Functional(Functional::F(n)),
            KeyCode::F(n @ 13..=35) => KeyKind::KittyOnly(57376 + u32::from(n - 13)),
            KeyCode::F(_) => return None,
            KeyCode::CapsLock => KeyKind::KittyOnly(57358),
            KeyCode::ScrollLock => KeyKind::KittyOnly(57359),
            KeyCode::NumLock => KeyKind::KittyOnly(57360),
            KeyCode::PrintScreen => KeyKind::KittyOnly(57361),
            KeyCode::Pause => KeyKind::KittyOnly(57362),
            KeyCode::Menu => KeyKind::KittyOnly(57363),
            KeyCode::Media(media) => KeyKind::KittyOnly(media_key_code(media)),
            KeyCode::Modifier(modifier) => KeyKind::KittyOnly(modifier_key_code(modifier)),
        };
        let action = match key.kind {
            KeyEventKind::Press => Action::Press,
            KeyEventKind::Repeat => Action::Repeat,
            KeyEventKind::Release => Action::Release,
        };
        Some(Self { kind, mods, action })
    }
}

/// Splits a typed character into (unshifted key, typed text, shift is held). An uppercase letter
/// means Shift unless Caps Lock explains it; a lowercase letter or US-layout digit/symbol with
/// SHIFT held types its shifted form (kitty's own legacy encoder assumes the same layout).
fn split_shift(c: char, shift_held: bool, caps_lock: bool) -> (char, char, bool) {
    if let Some(lower) = single_char(c.to_lowercase()).filter(|&lower| lower != c) {
        return (lower, c, shift_held || !caps_lock);
    }
    if shift_held {
        if let Some(upper) = single_char(c.to_uppercase()).filter(|&upper| upper != c) {
            return (c, upper, true);
        }
        if let Some(shifted) = us_shifted_symbol(c) {
            return (c, shifted, true);
        }
    }
    (c, c, shift_held)
}

fn single_char(mut chars: impl Iterator<Item = char>) -> Option<char> {
    let first = chars.next()?;
    chars.next().is_none().then_some(first)
}

fn us_shifted_symbol(c: char) -> Option<char> {
    const UNSHIFTED: &str = "`1234567890-=[]\\;',./";
    const SHIFTED: &str = "~!@#$%^&*()_+{}|:\"<>?";
    let index = UNSHIFTED.chars().position(|u| u == c)?;
    SHIFTED.chars().nth(index)
}

fn media_key_code(media: MediaKeyCode) -> u32 {
    match media {
        MediaKeyCode::Play => 57428,
        MediaKeyCode::Pause => 57429,
        MediaKeyCode::PlayPause => 57430,
        MediaKeyCode::Reverse => 57431,
        MediaKeyCode::Stop => 57432,
        MediaKeyCode::FastForward => 57433,
        MediaKeyCode::Rewind => 57434,
        MediaKeyCode::TrackNext => 57435,
        MediaKeyCode::TrackPrevious => 57436,
        MediaKeyCode::Record => 57437,
        MediaKeyCode::LowerVolume => 57438,
        MediaKeyCode::RaiseVolume => 57439,
        MediaKeyCode::MuteVolume => 57440,
    }
}

fn modifier_key_code(modifier: ModifierKeyCode) -> u32 {
    match modifier {
        ModifierKeyCode::LeftShift => 57441,
        ModifierKeyCode::LeftControl => 57442,
        ModifierKeyCode::LeftAlt => 57443,
        ModifierKeyCode::LeftSuper => 57444,
        ModifierKeyCode::LeftHyper => 57445,
        ModifierKeyCode::LeftMeta => 57446,
        ModifierKeyCode::RightShift => 57447,
        ModifierKeyCode::RightControl => 57448,
        ModifierKeyCode::RightAlt => 57449,
        ModifierKeyCode::RightSuper => 57450,
        ModifierKeyCode::RightHyper => 57451,
        ModifierKeyCode::RightMeta => 57452,
        ModifierKeyCode::IsoLevel3Shift => 57453,
        ModifierKeyCode::IsoLevel5Shift => 57454,
    }
}

// ---------------------------------------------------------------------------------------------
// Legacy and modifyOtherKeys

fn encode_xterm(key: &PressedKey, modes: KeyboardModes) -> Option<Vec<u8>> {
    // Legacy has no release events; a repeat is just another press.
    if key.action == Action::Release {
        return None;
    }
    let legacy = match key.kind {
        KeyKind::Functional(f) => {
            return Some(legacy_functional(f, key.mods, modes.application_cursor));
        }
        KeyKind::KittyOnly(_) => return None,
        KeyKind::Text { base, text } => legacy_text(base, text, key.mods),
        KeyKind::Enter | KeyKind::Tab | KeyKind::Backspace | KeyKind::Escape => {
            legacy_c0(key.kind, key.mods)
        }
    };
    match modes.modify_other_keys {
        0 => legacy.into_bytes().or_else(|| Some(csi_u_fallback(key))),
        1 => match legacy {
            Legacy::Exact(bytes) => Some(bytes),
            Legacy::Lossy(_) | Legacy::Missing => modify_other_keys_csi(key),
        },
        _ if level2_modifies(key) => modify_other_keys_csi(key),
        _ => legacy.into_bytes().or_else(|| modify_other_keys_csi(key)),
    }
}

/// What legacy encoding can say about a key.
#[derive(Debug, PartialEq, Eq)]
enum Legacy {
    /// Bytes that carry every held modifier.
    Exact(Vec<u8>),
    /// The bytes legacy terminals send, though they drop a modifier (Ctrl+1 is `1`).
    Lossy(Vec<u8>),
    /// Legacy has no bytes for this combination.
    Missing,
}

impl Legacy {
    fn into_bytes(self) -> Option<Vec<u8>> {
        match self {
            Self::Exact(bytes) | Self::Lossy(bytes) => Some(bytes),
            Self::Missing => None,
        }
    }
}

/// The kitty spec's legacy text-key algorithm: Alt prefixes `ESC`, Ctrl maps through the C0
/// table, Shift types the shifted text; other combinations have no legacy bytes.
fn legacy_text(base: char, text: char, mods: Mods) -> Legacy {
    let extra = mods.without(Mods::SHIFT.with(Mods::ALT).with(Mods::CTRL));
    if !extra.is_empty() {
        return Legacy::Missing;
    }
    let alt = mods.has(Mods::ALT);
    let prefixed = |bytes: &[u8]| -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len() + 1);
        if alt {
            out.push(ESC);
        }
        out.extend_from_slice(bytes);
        out
    };
    let shift_is_visible = text != base;
    if mods.has(Mods::CTRL) {
        if mods.has(Mods::SHIFT) {
            // Ctrl+Shift+Space is NUL in the spec's C0 table; every other Ctrl+Shift needs CSI u.
            return if base == ' ' && !alt {
                Legacy::Lossy(vec![0])
            } else {
                Legacy::Missing
            };
        }
        return match ctrl_byte(base) {
            Some(byte) => Legacy::Exact(prefixed(&[byte])),
            None if is_legacy_text_key(base) => Legacy::Lossy(prefixed(&[base as u8])),
            None => Legacy::Missing,
        };
    }
    let mut utf8 = [0; 4];
    let typed = text.encode_utf8(&mut utf8).as_bytes();
    if alt && !text.is_ascii() {
        return Legacy::Missing;
    }
    if mods.has(Mods::SHIFT) && !shift_is_visible {
        return Legacy::Lossy(prefixed(typed));
    }
    Legacy::Exact(prefixed(typed))
}

/// Enter, Tab, Backspace and Escape: the legacy forms kitty keeps (Alt prefix, Shift+Tab `CSI Z`,
/// Ctrl+Backspace BS); other combinations have no legacy bytes.
fn legacy_c0(kind: KeyKind, mods: Mods) -> Legacy {
    let byte = match kind {
        KeyKind::Enter => b'\r',
        KeyKind::Tab => b'\t',
        KeyKind::Backspace => 0x7f,
        _ => ESC,
    };
    let exact = |bytes: &[u8]| Legacy::Exact(bytes.to_vec());
    match (kind, mods) {
        (_, Mods::NONE) => exact(&[byte]),
        (_, Mods::ALT) => exact(&[ESC, byte]),
        (KeyKind::Tab, Mods::SHIFT) => exact(b"\x1b[Z"),
        (KeyKind::Tab, m) if m == Mods::SHIFT.with(Mods::ALT) => exact(b"\x1b\x1b[Z"),
        (KeyKind::Backspace, Mods::CTRL) => exact(&[0x08]),
        (KeyKind::Backspace, m) if m == Mods::CTRL.with(Mods::ALT) => exact(&[ESC, 0x08]),
        _ => Legacy::Missing,
    }
}

fn legacy_functional(f: Functional, mods: Mods, application_cursor: bool) -> Vec<u8> {
    if let (true, Some(final_byte)) = (mods.is_empty(), f.ss3(application_cursor)) {
        return vec![ESC, b'O', final_byte];
    }
    let (number, final_byte) = f.csi(false);
    kitty_csi(number, None, mods, Action::Press, None, final_byte)
}

/// xterm's and kitty's Ctrl mapping of ASCII keys to C0 controls, plus Ctrl+- as 0x1f (xterm's
/// Ctrl+_ on the same key, which Pi reads as `ctrl+-`, its undo).
fn ctrl_byte(c: char) -> Option<u8> {
    Some(match c {
        'a'..='z' => c as u8 - b'a' + 1,
        ' ' | '2' | '@' => 0,
        '3' | '[' => 27,
        '4' | '\\' => 28,
        '5' | ']' => 29,
        '6' | '^' | '~' => 30,
        '7' | '/' | '_' | '-' => 31,
        '8' | '?' => 127,
        _ => return None,
    })
}

/// The unshifted ASCII keys the kitty spec's legacy text algorithm covers.
fn is_legacy_text_key(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || "`-=[]\\;',./".contains(c)
}

/// Level 2 of modifyOtherKeys reports every modified key except Shift on a printable key (its
/// shifted text) and Shift+Tab (`CSI Z`).
fn level2_modifies(key: &PressedKey) -> bool {
    if key.mods.is_empty() {
        return false;
    }
    match key.kind {
        KeyKind::Text { base, text } => !(key.mods == Mods::SHIFT && text != base),
        KeyKind::Tab => key.mods != Mods::SHIFT,
        KeyKind::Enter | KeyKind::Backspace | KeyKind::Escape => true,
        KeyKind::Functional(_) | KeyKind::KittyOnly(_) => false,
    }
}

/// `CSI 27 ; mods ; codepoint ~`. The code point is the typed character, as xterm reports the
/// shifted keysym (Ctrl+Shift+a is 65).
fn modify_other_keys_csi(key: &PressedKey) -> Option<Vec<u8>> {
    let code = match key.kind {
        KeyKind::Text { text, .. } => u32::from(text),
        KeyKind::Enter => 13,
        KeyKind::Tab => 9,
        KeyKind::Backspace => 127,
        KeyKind::Escape => 27,
        KeyKind::Functional(_) | KeyKind::KittyOnly(_) => return None,
    };
    Some(format!("\x1b[27;{};{code}~", key.mods.param()).into_bytes())
}

/// The `CSI code ; mods u` that legacy mode sends for combinations it has no bytes for.
fn csi_u_fallback(key: &PressedKey) -> Vec<u8> {
    kitty_csi(
        kitty_key_code(key.kind),
        None,
        key.mods,
        Action::Press,
        None,
        b'u',
    )
}

// ---------------------------------------------------------------------------------------------
// kitty keyboard protocol

fn encode_kitty(key: &PressedKey, modes: KeyboardModes) -> Option<Vec<u8>> {
    let flags = modes.kitty_flags;
    // "Report all keys" sends everything as CSI u, which includes what disambiguate asks for.
    let disambiguate = flags & (KITTY_DISAMBIGUATE | KITTY_ALL_KEYS) != 0;
    let event_types = flags & KITTY_EVENT_TYPES != 0;
    let all_keys = flags & KITTY_ALL_KEYS != 0;
    let action = match key.action {
        Action::Release if !event_types => return None,
        Action::Repeat if !event_types => Action::Press,
        action => action,
    };
    let mods = key.mods;
    match key.kind {
        KeyKind::Text { base, text } => kitty_text(base, text, mods, action, flags),
        KeyKind::Enter | KeyKind::Tab | KeyKind::Backspace => {
            // These keep their legacy byte so a shell can still run `reset` after a crashed
            // child left the mode on, and so their unmodified release is not reported.
            if !all_keys && mods.is_empty() {
                if action == Action::Release {
                    return None;
                }
                return legacy_c0(key.kind, mods).into_bytes();
            }
            kitty_c0(key.kind, mods, action, disambiguate)
        }
        KeyKind::Escape => kitty_c0(key.kind, mods, action, disambiguate),
        KeyKind::Functional(f) => {
            if !disambiguate && !event_types {
                return Some(legacy_functional(f, mods, modes.application_cursor));
            }
            let (number, final_byte) = f.csi(true);
            Some(kitty_csi(number, None, mods, action, None, final_byte))
        }
        KeyKind::KittyOnly(code) => {
            all_keys.then(|| kitty_csi(code, None, mods, action, None, b'u'))
        }
    }
}

/// A key that types `text` (`base` unshifted) under kitty `flags`: the text itself when it types
/// and not every key is reported, the legacy bytes for a press without disambiguate, otherwise
/// `CSI u` with the shifted key and the associated text as the flags ask.
fn kitty_text(base: char, text: char, mods: Mods, action: Action, flags: u8) -> Option<Vec<u8>> {
    let disambiguate = flags & (KITTY_DISAMBIGUATE | KITTY_ALL_KEYS) != 0;
    let all_keys = flags & KITTY_ALL_KEYS != 0;
    let types_text = mods.without(Mods::SHIFT).is_empty();
    if types_text && !all_keys {
        // Text is sent as text; only its release needs an escape code.
        if action != Action::Release {
            return Some(text.to_string().into_bytes());
        }
    }
    let shifted = (flags & KITTY_ALTERNATE_KEYS != 0 && mods.has(Mods::SHIFT) && text != base)
        .then_some(text);
    // Without disambiguate, presses keep the legacy bytes where legacy has some.
    let legacy = (!disambiguate && action == Action::Press && shifted.is_none())
        .then(|| legacy_text(base, text, mods).into_bytes())
        .flatten();
    if legacy.is_some() {
        return legacy;
    }
    let associated =
        (flags & KITTY_ASSOCIATED_TEXT != 0 && all_keys && types_text && action != Action::Release)
            .then_some(text);
    Some(kitty_csi(
        u32::from(base),
        shifted.map(u32::from),
        mods,
        action,
        associated,
        b'u',
    ))
}

/// Enter, Tab, Backspace or Escape as `CSI u`, or its legacy bytes for a press without
/// disambiguate where legacy has some.
fn kitty_c0(kind: KeyKind, mods: Mods, action: Action, disambiguate: bool) -> Option<Vec<u8>> {
    let legacy = (!disambiguate && action == Action::Press)
        .then(|| legacy_c0(kind, mods).into_bytes())
        .flatten();
    if legacy.is_some() {
        return legacy;
    }
    Some(kitty_csi(
        kitty_key_code(kind),
        None,
        mods,
        action,
        None,
        b'u',
    ))
}

fn kitty_key_code(kind: KeyKind) -> u32 {
    match kind {
        KeyKind::Text { base, .. } => u32::from(base),
        KeyKind::Enter => 13,
        KeyKind::Tab => 9,
        KeyKind::Backspace => 127,
        KeyKind::Escape => 27,
        KeyKind::Functional(f) => f.csi(true).0,
        KeyKind::KittyOnly(code) => code,
    }
}

/// `CSI number[:shifted] ; mods[:event] ; text final`, leaving out what is default: the number 1
/// before a letter final, the modifier field when it is 1 and the event a press.
fn kitty_csi(
    number: u32,
    shifted: Option<u32>,
    mods: Mods,
    action: Action,
    text: Option<char>,
    final_byte: u8,
) -> Vec<u8> {
    let has_mods_field = !mods.is_empty() || action != Action::Press;
    let mut out = String::from("\x1b[");
    if number != 1 || shifted.is_some() || has_mods_field || text.is_some() {
        out.push_str(&number.to_string());
    }
    if let Some(shifted) = shifted {
        out.push_str(&format!(":{shifted}"));
    }
    if has_mods_field || text.is_some() {
        out.push(';');
    }
    if has_mods_field {
        out.push_str(&mods.param().to_string());
        if action != Action::Press {
            out.push_str(&format!(":{}", action.code()));
        }
    }
    if let Some(text) = text {
        out.push_str(&format!(";{}", u32::from(text)));
    }
    out.push(char::from(final_byte));
    out.into_bytes()
}

// ---------------------------------------------------------------------------------------------
// Mouse

/// The two low bits name the button; 3 is "released" in the X10 and UTF-8 encodings.
const BUTTON_BITS: u32 = 0b11;
const MOTION_BIT: u32 = 32;
const WHEEL_BIT: u32 = 64;
/// X10 sends each value as one byte `32 + value`, so 223 is the last reachable cell.
const X10_MAX_COORD: u32 = 223;
/// xterm's 1005 encoding stops at 2015 (`32 + 2015` is the last two-byte UTF-8 character).
const UTF8_MAX_COORD: u32 = 2015;

/// The button code before modifiers, and whether the event is a release; `None` when `mode`
/// does not report this kind of event.
fn mouse_button_code(kind: MouseEventKind, mode: MouseProtocolMode) -> Option<(u32, bool)> {
    let reports_release = matches!(
        mode,
        MouseProtocolMode::PressRelease
            | MouseProtocolMode::ButtonMotion
            | MouseProtocolMode::AnyMotion
    );
    let reports_drag = matches!(
        mode,
        MouseProtocolMode::ButtonMotion | MouseProtocolMode::AnyMotion
    );
    match kind {
        _ if mode == MouseProtocolMode::None => None,
        MouseEventKind::Down(button) => Some((button_number(button), false)),
        MouseEventKind::Up(button) => reports_release.then_some((button_number(button), true)),
        MouseEventKind::Drag(button) => {
            reports_drag.then_some((button_number(button) | MOTION_BIT, false))
        }
        MouseEventKind::Moved => {
            (mode == MouseProtocolMode::AnyMotion).then_some((3 | MOTION_BIT, false))
        }
        MouseEventKind::ScrollUp => Some((WHEEL_BIT, false)),
        MouseEventKind::ScrollDown => Some((WHEEL_BIT | 1, false)),
        MouseEventKind::ScrollLeft => Some((WHEEL_BIT | 2, false)),
        MouseEventKind::ScrollRight => Some((WHEEL_BIT | 3, false)),
    }
}

fn button_number(button: MouseButton) -> u32 {
    match button {
        MouseButton::Left => 0,
        MouseButton::Middle => 1,
        MouseButton::Right => 2,
    }
}

fn mouse_modifier_bits(mods: KeyModifiers) -> u32 {
    let mut bits = 0;
    if mods.contains(KeyModifiers::SHIFT) {
        bits |= 4;
    }
    if mods.contains(KeyModifiers::ALT) {
        bits |= 8;
    }
    if mods.contains(KeyModifiers::CONTROL) {
        bits |= 16;
    }
    bits
}

/// `32 + value` as one byte; callers cap `value` at 223 so it always fits.
fn x10_byte(value: u32) -> u8 {
    u8::try_from(32 + value).unwrap_or(u8::MAX)
}

fn push_utf8_mouse_value(out: &mut Vec<u8>, value: u32) {
    // Capped at 2015 by the caller, so `32 + value` is always a valid scalar value.
    let c = char::from_u32(32 + value).unwrap_or(char::REPLACEMENT_CHARACTER);
    let mut buf = [0; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    const NO: &str = "<not sent>";

    const fn modes(
        kitty_flags: u8,
        modify_other_keys: u8,
        application_cursor: bool,
    ) -> KeyboardModes {
        KeyboardModes {
            kitty_flags,
            modify_other_keys,
            application_cursor,
        }
    }

    /// The negotiated modes every key row is checked under, in column order.
    const MODES: [(&str, KeyboardModes); 9] = [
        ("legacy", modes(0, 0, false)),
        ("DECCKM", modes(0, 0, true)),
        ("modifyOtherKeys 1", modes(0, 1, false)),
        ("modifyOtherKeys 2", modes(0, 2, false)),
        ("kitty 1", modes(1, 0, false)),
        ("kitty 1|2", modes(3, 0, false)),
        ("kitty 1|2|4 (Pi)", modes(7, 0, false)),
        ("kitty 1|8", modes(9, 0, false)),
        ("kitty 31", modes(31, 0, false)),
    ];

    const NONE: KeyModifiers = KeyModifiers::NONE;
    const S: KeyModifiers = KeyModifiers::SHIFT;
    const C: KeyModifiers = KeyModifiers::CONTROL;
    const A: KeyModifiers = KeyModifiers::ALT;

    fn press(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    fn release(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new_with_kind(code, mods, KeyEventKind::Release)
    }

    fn repeat(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new_with_kind(code, mods, KeyEventKind::Repeat)
    }

    fn ch(c: char) -> KeyCode {
        KeyCode::Char(c)
    }

    fn show(bytes: Option<&[u8]>) -> String {
        bytes.map_or_else(
            || NO.to_string(),
            |b| String::from_utf8_lossy(b).escape_debug().to_string(),
        )
    }

    /// Checks every row under every mode and reports all mismatches at once.
    fn check_table(rows: &[(&str, KeyEvent, [&str; 9])]) {
        check_matrix(rows, &MODES, encode_key);
    }

    /// `encode(input, mode)` for every row's input under every named mode, against the row's
    /// expectation for that mode ([`NO`]: nothing is sent); all mismatches reported at once.
    fn check_matrix<I, M: Copy, const N: usize>(
        rows: &[(&str, I, [&str; N])],
        modes: &[(impl std::fmt::Display, M); N],
        encode: impl Fn(&I, M) -> Option<Vec<u8>>,
    ) {
        let mut mismatches = Vec::new();
        for (name, input, expected) in rows {
            for ((mode_name, mode), want) in modes.iter().zip(expected) {
                let got = encode(input, *mode);
                let want = (*want != NO).then_some(want.as_bytes());
                if got.as_deref() != want {
                    mismatches.push(format!(
                        "{name} under {mode_name}: got {}, want {}",
                        show(got.as_deref()),
                        show(want)
                    ));
                }
            }
        }
        assert!(
            mismatches.is_empty(),
            "{} mismatches:\n{}",
            mismatches.len(),
            mismatches.join("\n")
        );
    }

    #[test]
    fn text_keys_in_every_mode() {
        #[rustfmt::skip]
        let rows = [
            //                                  legacy        DECCKM        mok1          mok2                kitty1           kitty3           kitty7             kitty9            kitty31
            ("a", press(ch('a'), NONE),         ["a",         "a",          "a",          "a",                "a",             "a",             "a",               "\x1b[97u",       "\x1b[97;;97u"]),
            ("é", press(ch('é'), NONE),         ["é",         "é",          "é",          "é",                "é",             "é",             "é",               "\x1b[233u",      "\x1b[233;;233u"]),
            ("日", press(ch('日'), NONE),       ["日",        "日",         "日",         "日",               "日",            "日",            "日",              "\x1b[26085u",    "\x1b[26085;;26085u"]),
            ("space", press(ch(' '), NONE),     [" ",         " ",          " ",          " ",                " ",             " ",             " ",               "\x1b[32u",       "\x1b[32;;32u"]),
            ("Shift+a", press(ch('A'), S),      ["A",         "A",          "A",          "A",                "A",             "A",             "A",               "\x1b[97;2u",     "\x1b[97:65;2;65u"]),
            // An outer terminal with alternate keys drops SHIFT and reports the shifted key.
            ("A without SHIFT", press(ch('A'), NONE),
                                                ["A",         "A",          "A",          "A",                "A",             "A",             "A",               "\x1b[97;2u",     "\x1b[97:65;2;65u"]),
            ("Shift+é", press(ch('É'), S),      ["É",         "É",          "É",          "É",                "É",             "É",             "É",               "\x1b[233;2u",    "\x1b[233:201;2;201u"]),
            ("Shift+1 as !", press(ch('!'), NONE),
                                                ["!",         "!",          "!",          "!",                "!",             "!",             "!",               "\x1b[33u",       "\x1b[33;;33u"]),
            ("Shift+Space", press(ch(' '), S),  [" ",         " ",          "\x1b[27;2;32~", "\x1b[27;2;32~",  " ",             " ",             " ",               "\x1b[32;2u",     "\x1b[32;2;32u"]),
            ("Ctrl+c", press(ch('c'), C),       ["\x03",      "\x03",       "\x03",       "\x1b[27;5;99~",    "\x1b[99;5u",    "\x1b[99;5u",    "\x1b[99;5u",      "\x1b[99;5u",     "\x1b[99;5u"]),
            ("Ctrl+j", press(ch('j'), C),       ["\n",        "\n",         "\n",         "\x1b[27;5;106~",   "\x1b[106;5u",   "\x1b[106;5u",   "\x1b[106;5u",     "\x1b[106;5u",    "\x1b[106;5u"]),
            ("Ctrl+Shift+f", press(ch('F'), C | S),
                                                ["\x1b[102;6u", "\x1b[102;6u", "\x1b[27;6;70~", "\x1b[27;6;70~", "\x1b[102;6u", "\x1b[102;6u",   "\x1b[102:70;6u",  "\x1b[102;6u",    "\x1b[102:70;6u"]),
            // Without alternate keys in the outer terminal, crossterm keeps the lowercase letter.
            ("Ctrl+Shift+f lowercase", press(ch('f'), C | S),
                                                ["\x1b[102;6u", "\x1b[102;6u", "\x1b[27;6;70~", "\x1b[27;6;70~", "\x1b[102;6u", "\x1b[102;6u",   "\x1b[102:70;6u",  "\x1b[102;6u",    "\x1b[102:70;6u"]),
            ("Alt+b", press(ch('b'), A),        ["\x1bb",     "\x1bb",      "\x1bb",      "\x1b[27;3;98~",    "\x1b[98;3u",    "\x1b[98;3u",    "\x1b[98;3u",      "\x1b[98;3u",     "\x1b[98;3u"]),
            ("Alt+Shift+b", press(ch('B'), A | S),
                                                ["\x1bB",     "\x1bB",      "\x1bB",      "\x1b[27;4;66~",    "\x1b[98;4u",    "\x1b[98;4u",    "\x1b[98:66;4u",   "\x1b[98;4u",     "\x1b[98:66;4u"]),
            ("Alt+.", press(ch('.'), A),        ["\x1b.",     "\x1b.",      "\x1b.",      "\x1b[27;3;46~",    "\x1b[46;3u",    "\x1b[46;3u",    "\x1b[46;3u",      "\x1b[46;3u",     "\x1b[46;3u"]),
            ("Ctrl+Alt+a", press(ch('a'), C | A),
                                                ["\x1b\x01",  "\x1b\x01",   "\x1b\x01",   "\x1b[27;7;97~",    "\x1b[97;7u",    "\x1b[97;7u",    "\x1b[97;7u",      "\x1b[97;7u",     "\x1b[97;7u"]),
            ("Ctrl+Space", press(ch(' '), C),   ["\0",        "\0",         "\0",         "\x1b[27;5;32~",    "\x1b[32;5u",    "\x1b[32;5u",    "\x1b[32;5u",      "\x1b[32;5u",     "\x1b[32;5u"]),
            ("Ctrl+@ as Null", press(KeyCode::Null, NONE),
                                                ["\0",        "\0",         "\0",         "\x1b[27;5;32~",    "\x1b[32;5u",    "\x1b[32;5u",    "\x1b[32;5u",      "\x1b[32;5u",     "\x1b[32;5u"]),
            ("Ctrl+[", press(ch('['), C),       ["\x1b",      "\x1b",       "\x1b",       "\x1b[27;5;91~",    "\x1b[91;5u",    "\x1b[91;5u",    "\x1b[91;5u",      "\x1b[91;5u",     "\x1b[91;5u"]),
            ("Ctrl+]", press(ch(']'), C),       ["\x1d",      "\x1d",       "\x1d",       "\x1b[27;5;93~",    "\x1b[93;5u",    "\x1b[93;5u",    "\x1b[93;5u",      "\x1b[93;5u",     "\x1b[93;5u"]),
            ("Ctrl+-", press(ch('-'), C),       ["\x1f",      "\x1f",       "\x1f",       "\x1b[27;5;45~",    "\x1b[45;5u",    "\x1b[45;5u",    "\x1b[45;5u",      "\x1b[45;5u",     "\x1b[45;5u"]),
            ("Ctrl+3", press(ch('3'), C),       ["\x1b",      "\x1b",       "\x1b",       "\x1b[27;5;51~",    "\x1b[51;5u",    "\x1b[51;5u",    "\x1b[51;5u",      "\x1b[51;5u",     "\x1b[51;5u"]),
            ("Ctrl+1", press(ch('1'), C),       ["1",         "1",          "\x1b[27;5;49~", "\x1b[27;5;49~", "\x1b[49;5u",    "\x1b[49;5u",    "\x1b[49;5u",      "\x1b[49;5u",     "\x1b[49;5u"]),
            ("Ctrl+é", press(ch('é'), C),       ["\x1b[233;5u", "\x1b[233;5u", "\x1b[27;5;233~", "\x1b[27;5;233~", "\x1b[233;5u", "\x1b[233;5u", "\x1b[233;5u",     "\x1b[233;5u",    "\x1b[233;5u"]),
            ("Alt+é", press(ch('é'), A),        ["\x1b[233;3u", "\x1b[233;3u", "\x1b[27;3;233~", "\x1b[27;3;233~", "\x1b[233;3u", "\x1b[233;3u", "\x1b[233;3u",     "\x1b[233;3u",    "\x1b[233;3u"]),
            ("Super+a", press(ch('a'), KeyModifiers::SUPER),
                                                ["\x1b[97;9u", "\x1b[97;9u", "\x1b[27;9;97~", "\x1b[27;9;97~", "\x1b[97;9u",    "\x1b[97;9u",    "\x1b[97;9u",      "\x1b[97;9u",     "\x1b[97;9u"]),
        ];
        check_table(&rows);
    }

    #[test]
    fn enter_tab_backspace_escape_in_every_mode() {
        #[rustfmt::skip]
        let rows = [
            //                                          legacy         DECCKM         mok1              mok2              kitty1          kitty3          kitty7          kitty9          kitty31
            ("Enter", press(KeyCode::Enter, NONE),      ["\r",         "\r",          "\r",             "\r",             "\r",           "\r",           "\r",           "\x1b[13u",     "\x1b[13u"]),
            ("Shift+Enter", press(KeyCode::Enter, S),   ["\x1b[13;2u", "\x1b[13;2u",  "\x1b[27;2;13~",  "\x1b[27;2;13~",  "\x1b[13;2u",   "\x1b[13;2u",   "\x1b[13;2u",   "\x1b[13;2u",   "\x1b[13;2u"]),
            ("Ctrl+Enter", press(KeyCode::Enter, C),    ["\x1b[13;5u", "\x1b[13;5u",  "\x1b[27;5;13~",  "\x1b[27;5;13~",  "\x1b[13;5u",   "\x1b[13;5u",   "\x1b[13;5u",   "\x1b[13;5u",   "\x1b[13;5u"]),
            ("Alt+Enter", press(KeyCode::Enter, A),     ["\x1b\r",     "\x1b\r",      "\x1b\r",         "\x1b[27;3;13~",  "\x1b[13;3u",   "\x1b[13;3u",   "\x1b[13;3u",   "\x1b[13;3u",   "\x1b[13;3u"]),
            ("Tab", press(KeyCode::Tab, NONE),          ["\t",         "\t",          "\t",             "\t",             "\t",           "\t",           "\t",           "\x1b[9u",      "\x1b[9u"]),
            ("Shift+Tab", press(KeyCode::BackTab, S),   ["\x1b[Z",     "\x1b[Z",      "\x1b[Z",         "\x1b[Z",         "\x1b[9;2u",    "\x1b[9;2u",    "\x1b[9;2u",    "\x1b[9;2u",    "\x1b[9;2u"]),
            ("Alt+Shift+Tab", press(KeyCode::BackTab, S | A),
                                                        ["\x1b\x1b[Z", "\x1b\x1b[Z",  "\x1b\x1b[Z",     "\x1b[27;4;9~",   "\x1b[9;4u",    "\x1b[9;4u",    "\x1b[9;4u",    "\x1b[9;4u",    "\x1b[9;4u"]),
            ("Ctrl+Tab", press(KeyCode::Tab, C),        ["\x1b[9;5u",  "\x1b[9;5u",   "\x1b[27;5;9~",   "\x1b[27;5;9~",   "\x1b[9;5u",    "\x1b[9;5u",    "\x1b[9;5u",    "\x1b[9;5u",    "\x1b[9;5u"]),
            ("Backspace", press(KeyCode::Backspace, NONE),
                                                        ["\x7f",       "\x7f",        "\x7f",           "\x7f",           "\x7f",         "\x7f",         "\x7f",         "\x1b[127u",    "\x1b[127u"]),
            ("Alt+Backspace", press(KeyCode::Backspace, A),
                                                        ["\x1b\x7f",   "\x1b\x7f",    "\x1b\x7f",       "\x1b[27;3;127~", "\x1b[127;3u",  "\x1b[127;3u",  "\x1b[127;3u",  "\x1b[127;3u",  "\x1b[127;3u"]),
            ("Ctrl+Backspace", press(KeyCode::Backspace, C),
                                                        ["\x08",       "\x08",        "\x08",           "\x1b[27;5;127~", "\x1b[127;5u",  "\x1b[127;5u",  "\x1b[127;5u",  "\x1b[127;5u",  "\x1b[127;5u"]),
            ("Shift+Backspace", press(KeyCode::Backspace, S),
                                                        ["\x1b[127;2u", "\x1b[127;2u", "\x1b[27;2;127~", "\x1b[27;2;127~", "\x1b[127;2u", "\x1b[127;2u",  "\x1b[127;2u",  "\x1b[127;2u",  "\x1b[127;2u"]),
            ("Esc", press(KeyCode::Esc, NONE),          ["\x1b",       "\x1b",        "\x1b",           "\x1b",           "\x1b[27u",     "\x1b[27u",     "\x1b[27u",     "\x1b[27u",     "\x1b[27u"]),
            ("Alt+Esc", press(KeyCode::Esc, A),         ["\x1b\x1b",   "\x1b\x1b",    "\x1b\x1b",       "\x1b[27;3;27~",  "\x1b[27;3u",   "\x1b[27;3u",   "\x1b[27;3u",   "\x1b[27;3u",   "\x1b[27;3u"]),
            ("Shift+Esc", press(KeyCode::Esc, S),       ["\x1b[27;2u", "\x1b[27;2u",  "\x1b[27;2;27~",  "\x1b[27;2;27~",  "\x1b[27;2u",   "\x1b[27;2u",   "\x1b[27;2u",   "\x1b[27;2u",   "\x1b[27;2u"]),
        ];
        check_table(&rows);
    }

    #[test]
    fn functional_keys_in_every_mode() {
        #[rustfmt::skip]
        let rows = [
            //                                          legacy        DECCKM       mok1         mok2         kitty1       kitty3       kitty7       kitty9         kitty31
            ("Up", press(KeyCode::Up, NONE),            ["\x1b[A",    "\x1bOA",    "\x1b[A",    "\x1b[A",    "\x1b[A",    "\x1b[A",    "\x1b[A",    "\x1b[A",      "\x1b[A"]),
            ("Down", press(KeyCode::Down, NONE),        ["\x1b[B",    "\x1bOB",    "\x1b[B",    "\x1b[B",    "\x1b[B",    "\x1b[B",    "\x1b[B",    "\x1b[B",      "\x1b[B"]),
            ("Shift+Up", press(KeyCode::Up, S),         ["\x1b[1;2A", "\x1b[1;2A", "\x1b[1;2A", "\x1b[1;2A", "\x1b[1;2A", "\x1b[1;2A", "\x1b[1;2A", "\x1b[1;2A",   "\x1b[1;2A"]),
            ("Ctrl+Left", press(KeyCode::Left, C),      ["\x1b[1;5D", "\x1b[1;5D", "\x1b[1;5D", "\x1b[1;5D", "\x1b[1;5D", "\x1b[1;5D", "\x1b[1;5D", "\x1b[1;5D",   "\x1b[1;5D"]),
            ("Ctrl+Right", press(KeyCode::Right, C),    ["\x1b[1;5C", "\x1b[1;5C", "\x1b[1;5C", "\x1b[1;5C", "\x1b[1;5C", "\x1b[1;5C", "\x1b[1;5C", "\x1b[1;5C",   "\x1b[1;5C"]),
            ("Ctrl+Up", press(KeyCode::Up, C),          ["\x1b[1;5A", "\x1b[1;5A", "\x1b[1;5A", "\x1b[1;5A", "\x1b[1;5A", "\x1b[1;5A", "\x1b[1;5A", "\x1b[1;5A",   "\x1b[1;5A"]),
            ("Ctrl+Shift+Down", press(KeyCode::Down, C | S),
                                                        ["\x1b[1;6B", "\x1b[1;6B", "\x1b[1;6B", "\x1b[1;6B", "\x1b[1;6B", "\x1b[1;6B", "\x1b[1;6B", "\x1b[1;6B",   "\x1b[1;6B"]),
            ("Alt+Left", press(KeyCode::Left, A),       ["\x1b[1;3D", "\x1b[1;3D", "\x1b[1;3D", "\x1b[1;3D", "\x1b[1;3D", "\x1b[1;3D", "\x1b[1;3D", "\x1b[1;3D",   "\x1b[1;3D"]),
            ("Home", press(KeyCode::Home, NONE),        ["\x1b[H",    "\x1bOH",    "\x1b[H",    "\x1b[H",    "\x1b[H",    "\x1b[H",    "\x1b[H",    "\x1b[H",      "\x1b[H"]),
            ("End", press(KeyCode::End, NONE),          ["\x1b[F",    "\x1bOF",    "\x1b[F",    "\x1b[F",    "\x1b[F",    "\x1b[F",    "\x1b[F",    "\x1b[F",      "\x1b[F"]),
            ("Ctrl+Home", press(KeyCode::Home, C),      ["\x1b[1;5H", "\x1b[1;5H", "\x1b[1;5H", "\x1b[1;5H", "\x1b[1;5H", "\x1b[1;5H", "\x1b[1;5H", "\x1b[1;5H",   "\x1b[1;5H"]),
            ("Shift+End", press(KeyCode::End, S),       ["\x1b[1;2F", "\x1b[1;2F", "\x1b[1;2F", "\x1b[1;2F", "\x1b[1;2F", "\x1b[1;2F", "\x1b[1;2F", "\x1b[1;2F",   "\x1b[1;2F"]),
            ("PageUp", press(KeyCode::PageUp, NONE),    ["\x1b[5~",   "\x1b[5~",   "\x1b[5~",   "\x1b[5~",   "\x1b[5~",   "\x1b[5~",   "\x1b[5~",   "\x1b[5~",     "\x1b[5~"]),
            ("Ctrl+PageUp", press(KeyCode::PageUp, C),  ["\x1b[5;5~", "\x1b[5;5~", "\x1b[5;5~", "\x1b[5;5~", "\x1b[5;5~", "\x1b[5;5~", "\x1b[5;5~", "\x1b[5;5~",   "\x1b[5;5~"]),
            ("Shift+PageDown", press(KeyCode::PageDown, S),
                                                        ["\x1b[6;2~", "\x1b[6;2~", "\x1b[6;2~", "\x1b[6;2~", "\x1b[6;2~", "\x1b[6;2~", "\x1b[6;2~", "\x1b[6;2~",   "\x1b[6;2~"]),
            ("Insert", press(KeyCode::Insert, NONE),    ["\x1b[2~",   "\x1b[2~",   "\x1b[2~",   "\x1b[2~",   "\x1b[2~",   "\x1b[2~",   "\x1b[2~",   "\x1b[2~",     "\x1b[2~"]),
            ("Alt+Delete", press(KeyCode::Delete, A),   ["\x1b[3;3~", "\x1b[3;3~", "\x1b[3;3~", "\x1b[3;3~", "\x1b[3;3~", "\x1b[3;3~", "\x1b[3;3~", "\x1b[3;3~",   "\x1b[3;3~"]),
            ("Keypad 5", press(KeyCode::KeypadBegin, NONE),
                                                        ["\x1b[E",    "\x1b[E",    "\x1b[E",    "\x1b[E",    "\x1b[E",    "\x1b[E",    "\x1b[E",    "\x1b[E",      "\x1b[E"]),
            ("F1", press(KeyCode::F(1), NONE),          ["\x1bOP",    "\x1bOP",    "\x1bOP",    "\x1bOP",    "\x1b[11~",  "\x1b[11~",  "\x1b[11~",  "\x1b[11~",    "\x1b[11~"]),
            ("Shift+F1", press(KeyCode::F(1), S),       ["\x1b[1;2P", "\x1b[1;2P", "\x1b[1;2P", "\x1b[1;2P", "\x1b[11;2~", "\x1b[11;2~", "\x1b[11;2~", "\x1b[11;2~", "\x1b[11;2~"]),
            ("F2", press(KeyCode::F(2), NONE),          ["\x1bOQ",    "\x1bOQ",    "\x1bOQ",    "\x1bOQ",    "\x1b[12~",  "\x1b[12~",  "\x1b[12~",  "\x1b[12~",    "\x1b[12~"]),
            ("F3", press(KeyCode::F(3), NONE),          ["\x1bOR",    "\x1bOR",    "\x1bOR",    "\x1bOR",    "\x1b[13~",  "\x1b[13~",  "\x1b[13~",  "\x1b[13~",    "\x1b[13~"]),
            ("Ctrl+F3", press(KeyCode::F(3), C),        ["\x1b[13;5~", "\x1b[13;5~", "\x1b[13;5~", "\x1b[13;5~", "\x1b[13;5~", "\x1b[13;5~", "\x1b[13;5~", "\x1b[13;5~", "\x1b[13;5~"]),
            ("Alt+F4", press(KeyCode::F(4), A),         ["\x1b[1;3S", "\x1b[1;3S", "\x1b[1;3S", "\x1b[1;3S", "\x1b[14;3~", "\x1b[14;3~", "\x1b[14;3~", "\x1b[14;3~", "\x1b[14;3~"]),
            ("F5", press(KeyCode::F(5), NONE),          ["\x1b[15~",  "\x1b[15~",  "\x1b[15~",  "\x1b[15~",  "\x1b[15~",  "\x1b[15~",  "\x1b[15~",  "\x1b[15~",    "\x1b[15~"]),
            ("F6", press(KeyCode::F(6), NONE),          ["\x1b[17~",  "\x1b[17~",  "\x1b[17~",  "\x1b[17~",  "\x1b[17~",  "\x1b[17~",  "\x1b[17~",  "\x1b[17~",    "\x1b[17~"]),
            ("F10", press(KeyCode::F(10), NONE),        ["\x1b[21~",  "\x1b[21~",  "\x1b[21~",  "\x1b[21~",  "\x1b[21~",  "\x1b[21~",  "\x1b[21~",  "\x1b[21~",    "\x1b[21~"]),
            ("F11", press(KeyCode::F(11), NONE),        ["\x1b[23~",  "\x1b[23~",  "\x1b[23~",  "\x1b[23~",  "\x1b[23~",  "\x1b[23~",  "\x1b[23~",  "\x1b[23~",    "\x1b[23~"]),
            ("Ctrl+F12", press(KeyCode::F(12), C),      ["\x1b[24;5~", "\x1b[24;5~", "\x1b[24;5~", "\x1b[24;5~", "\x1b[24;5~", "\x1b[24;5~", "\x1b[24;5~", "\x1b[24;5~", "\x1b[24;5~"]),
            ("F13", press(KeyCode::F(13), NONE),        [NO,          NO,          NO,          NO,          NO,          NO,          NO,          "\x1b[57376u", "\x1b[57376u"]),
            ("CapsLock", press(KeyCode::CapsLock, NONE),
                                                        [NO,          NO,          NO,          NO,          NO,          NO,          NO,          "\x1b[57358u", "\x1b[57358u"]),
            // crossterm sets the modifier's own bit on its press, as kitty reports it.
            ("Left Shift alone", press(KeyCode::Modifier(ModifierKeyCode::LeftShift), S),
                                                        [NO,          NO,          NO,          NO,          NO,          NO,          NO,          "\x1b[57441;2u", "\x1b[57441;2u"]),
        ];
        check_table(&rows);
    }

    #[test]
    fn repeats_and_releases_in_every_mode() {
        #[rustfmt::skip]
        let rows = [
            //                                              legacy    DECCKM    mok1      mok2             kitty1      kitty3             kitty7               kitty9        kitty31
            ("a release", release(ch('a'), NONE),           [NO,      NO,       NO,       NO,              NO,         "\x1b[97;1:3u",    "\x1b[97;1:3u",      NO,           "\x1b[97;1:3u"]),
            ("a repeat", repeat(ch('a'), NONE),             ["a",     "a",      "a",      "a",             "a",        "a",               "a",                 "\x1b[97u",   "\x1b[97;1:2;97u"]),
            ("Shift+a release", release(ch('A'), S),        [NO,      NO,       NO,       NO,              NO,         "\x1b[97;2:3u",    "\x1b[97:65;2:3u",   NO,           "\x1b[97:65;2:3u"]),
            ("Ctrl+c release", release(ch('c'), C),         [NO,      NO,       NO,       NO,              NO,         "\x1b[99;5:3u",    "\x1b[99;5:3u",      NO,           "\x1b[99;5:3u"]),
            ("Ctrl+c repeat", repeat(ch('c'), C),           ["\x03",  "\x03",   "\x03",   "\x1b[27;5;99~", "\x1b[99;5u", "\x1b[99;5:2u",  "\x1b[99;5:2u",      "\x1b[99;5u", "\x1b[99;5:2u"]),
            // Unmodified Enter/Tab/Backspace keep their legacy byte, so their release is never
            // reported unless every key is an escape code.
            ("Enter release", release(KeyCode::Enter, NONE), [NO,     NO,       NO,       NO,              NO,         NO,                NO,                  NO,           "\x1b[13;1:3u"]),
            ("Enter repeat", repeat(KeyCode::Enter, NONE),  ["\r",    "\r",     "\r",     "\r",            "\r",       "\r",              "\r",                "\x1b[13u",   "\x1b[13;1:2u"]),
            ("Tab release", release(KeyCode::Tab, NONE),    [NO,      NO,       NO,       NO,              NO,         NO,                NO,                  NO,           "\x1b[9;1:3u"]),
            ("Backspace release", release(KeyCode::Backspace, NONE),
                                                            [NO,      NO,       NO,       NO,              NO,         NO,                NO,                  NO,           "\x1b[127;1:3u"]),
            ("Shift+Enter release", release(KeyCode::Enter, S),
                                                            [NO,      NO,       NO,       NO,              NO,         "\x1b[13;2:3u",    "\x1b[13;2:3u",      NO,           "\x1b[13;2:3u"]),
            ("Esc release", release(KeyCode::Esc, NONE),    [NO,      NO,       NO,       NO,              NO,         "\x1b[27;1:3u",    "\x1b[27;1:3u",      NO,           "\x1b[27;1:3u"]),
            ("Up release", release(KeyCode::Up, NONE),      [NO,      NO,       NO,       NO,              NO,         "\x1b[1;1:3A",     "\x1b[1;1:3A",       NO,           "\x1b[1;1:3A"]),
            ("Up repeat", repeat(KeyCode::Up, NONE),        ["\x1b[A", "\x1bOA", "\x1b[A", "\x1b[A",         "\x1b[A",   "\x1b[1;1:2A",     "\x1b[1;1:2A",       "\x1b[A",     "\x1b[1;1:2A"]),
            ("Ctrl+Left release", release(KeyCode::Left, C), [NO,     NO,       NO,       NO,              NO,         "\x1b[1;5:3D",     "\x1b[1;5:3D",       NO,           "\x1b[1;5:3D"]),
            ("PageDown release", release(KeyCode::PageDown, NONE),
                                                            [NO,      NO,       NO,       NO,              NO,         "\x1b[6;1:3~",     "\x1b[6;1:3~",       NO,           "\x1b[6;1:3~"]),
            ("F1 release", release(KeyCode::F(1), NONE),    [NO,      NO,       NO,       NO,              NO,         "\x1b[11;1:3~",    "\x1b[11;1:3~",      NO,           "\x1b[11;1:3~"]),
            ("Left Shift release", release(KeyCode::Modifier(ModifierKeyCode::LeftShift), S),
                                                            [NO,      NO,       NO,       NO,              NO,         NO,                NO,                  NO,           "\x1b[57441;2:3u"]),
        ];
        check_table(&rows);
    }

    #[test]
    fn kitty_flags_without_disambiguate_keep_legacy_forms() {
        let cases = [
            // Event types alone: text and legacy-encodable combinations stay legacy on press.
            (modes(2, 0, false), press(ch('a'), C), Some("\x01")),
            (modes(2, 0, false), press(KeyCode::Esc, NONE), Some("\x1b")),
            (modes(2, 0, false), press(KeyCode::Enter, A), Some("\x1b\r")),
            (modes(2, 0, false), repeat(ch('a'), C), Some("\x1b[97;5:2u")),
            (modes(2, 0, true), press(KeyCode::Up, NONE), Some("\x1b[A")),
            // Alternate keys alone: application cursor mode still applies.
            (modes(4, 0, true), press(KeyCode::Up, NONE), Some("\x1bOA")),
            (
                modes(4, 0, false),
                press(ch('F'), C | S),
                Some("\x1b[102:70;6u"),
            ),
            (modes(4, 0, false), press(ch('f'), C), Some("\x06")),
            // Disambiguate overrides application cursor mode.
            (modes(1, 0, true), press(KeyCode::Up, NONE), Some("\x1b[A")),
            (
                modes(1, 0, true),
                press(KeyCode::F(1), NONE),
                Some("\x1b[11~"),
            ),
        ];
        for (modes, key, want) in cases {
            let got = encode_key(&key, modes);
            assert_eq!(
                show(got.as_deref()),
                show(want.map(str::as_bytes)),
                "{key:?} under {modes:?}"
            );
        }
    }

    #[test]
    fn caps_lock_uppercase_is_not_shift() {
        let key = KeyEvent::new_with_kind_and_state(
            ch('A'),
            C,
            KeyEventKind::Press,
            KeyEventState::CAPS_LOCK,
        );
        assert_eq!(
            encode_key(&key, modes(0, 0, false)).as_deref(),
            Some(&b"\x01"[..])
        );
        assert_eq!(
            encode_key(&key, modes(1, 0, false)).as_deref(),
            Some(&b"\x1b[97;5u"[..])
        );
    }

    fn mouse(kind: MouseEventKind, column: u16, row: u16, modifiers: KeyModifiers) -> MouseEvent {
        MouseEvent {
            kind,
            column,
            row,
            modifiers,
        }
    }

    #[test]
    fn mouse_reports_per_mode_in_sgr() {
        use MouseProtocolMode as M;
        let left = MouseButton::Left;
        #[rustfmt::skip]
        let rows = [
            //                                                          None  Press (9)         PressRelease (1000)  ButtonMotion (1002)  AnyMotion (1003)
            ("left press", mouse(MouseEventKind::Down(left), 4, 9, NONE), [NO, "\x1b[<0;5;10M", "\x1b[<0;5;10M",    "\x1b[<0;5;10M",     "\x1b[<0;5;10M"]),
            ("middle press", mouse(MouseEventKind::Down(MouseButton::Middle), 4, 9, NONE),
                                                                        [NO, "\x1b[<1;5;10M", "\x1b[<1;5;10M",    "\x1b[<1;5;10M",     "\x1b[<1;5;10M"]),
            ("right release", mouse(MouseEventKind::Up(MouseButton::Right), 4, 9, NONE),
                                                                        [NO, NO,              "\x1b[<2;5;10m",    "\x1b[<2;5;10m",     "\x1b[<2;5;10m"]),
            ("left drag", mouse(MouseEventKind::Drag(left), 4, 9, NONE), [NO, NO,             NO,                 "\x1b[<32;5;10M",    "\x1b[<32;5;10M"]),
            ("motion", mouse(MouseEventKind::Moved, 4, 9, NONE),        [NO, NO,              NO,                 NO,                  "\x1b[<35;5;10M"]),
            ("wheel up", mouse(MouseEventKind::ScrollUp, 4, 9, NONE),   [NO, "\x1b[<64;5;10M", "\x1b[<64;5;10M",  "\x1b[<64;5;10M",    "\x1b[<64;5;10M"]),
            ("wheel down", mouse(MouseEventKind::ScrollDown, 4, 9, NONE),
                                                                        [NO, "\x1b[<65;5;10M", "\x1b[<65;5;10M",  "\x1b[<65;5;10M",    "\x1b[<65;5;10M"]),
            ("wheel left", mouse(MouseEventKind::ScrollLeft, 0, 0, NONE),
                                                                        [NO, "\x1b[<66;1;1M", "\x1b[<66;1;1M",    "\x1b[<66;1;1M",     "\x1b[<66;1;1M"]),
            ("wheel right", mouse(MouseEventKind::ScrollRight, 0, 0, NONE),
                                                                        [NO, "\x1b[<67;1;1M", "\x1b[<67;1;1M",    "\x1b[<67;1;1M",     "\x1b[<67;1;1M"]),
            // X10 compatibility mode (9) carries no modifiers.
            ("ctrl left press", mouse(MouseEventKind::Down(left), 4, 9, C),
                                                                        [NO, "\x1b[<0;5;10M", "\x1b[<16;5;10M",   "\x1b[<16;5;10M",    "\x1b[<16;5;10M"]),
            ("shift alt wheel", mouse(MouseEventKind::ScrollDown, 4, 9, S | A),
                                                                        [NO, "\x1b[<65;5;10M", "\x1b[<77;5;10M",  "\x1b[<77;5;10M",    "\x1b[<77;5;10M"]),
            ("ctrl drag", mouse(MouseEventKind::Drag(MouseButton::Right), 4, 9, C),
                                                                        [NO, NO,              NO,                 "\x1b[<50;5;10M",    "\x1b[<50;5;10M"]),
            ("far cell", mouse(MouseEventKind::Down(left), 499, 299, NONE),
                                                                        [NO, "\x1b[<0;500;300M", "\x1b[<0;500;300M", "\x1b[<0;500;300M", "\x1b[<0;500;300M"]),
        ];
        let modes = [
            M::None,
            M::Press,
            M::PressRelease,
            M::ButtonMotion,
            M::AnyMotion,
        ]
        .map(|mode| (format!("{mode:?}"), mode));
        check_matrix(&rows, &modes, |event, mode| {
            encode_mouse(event, mode, MouseProtocolEncoding::Sgr)
        });
    }

    #[test]
    fn mouse_reports_in_x10_and_utf8_encodings() {
        use MouseProtocolEncoding::{Default as X10, Utf8};
        use MouseProtocolMode::{AnyMotion, PressRelease};
        let left = MouseButton::Left;
        let cases: [(
            &str,
            MouseEvent,
            MouseProtocolMode,
            MouseProtocolEncoding,
            &[u8],
        ); 10] = [
            (
                "left press",
                mouse(MouseEventKind::Down(left), 4, 9, NONE),
                PressRelease,
                X10,
                b"\x1b[M %*",
            ),
            // X10 cannot say which button went up: always 3.
            (
                "left release",
                mouse(MouseEventKind::Up(left), 4, 9, NONE),
                PressRelease,
                X10,
                b"\x1b[M#%*",
            ),
            (
                "right release",
                mouse(MouseEventKind::Up(MouseButton::Right), 4, 9, NONE),
                PressRelease,
                X10,
                b"\x1b[M#%*",
            ),
            (
                "ctrl release",
                mouse(MouseEventKind::Up(left), 4, 9, C),
                PressRelease,
                X10,
                b"\x1b[M3%*",
            ),
            (
                "wheel up",
                mouse(MouseEventKind::ScrollUp, 0, 0, NONE),
                PressRelease,
                X10,
                b"\x1b[M`!!",
            ),
            (
                "motion",
                mouse(MouseEventKind::Moved, 0, 0, NONE),
                AnyMotion,
                X10,
                b"\x1b[MC!!",
            ),
            // 32 + 223 = 255 is the last byte X10 can carry; further cells are clamped to it.
            (
                "far cell",
                mouse(MouseEventKind::Down(left), 400, 222, NONE),
                PressRelease,
                X10,
                b"\x1b[M \xff\xff",
            ),
            (
                "utf8 near cell",
                mouse(MouseEventKind::Down(left), 4, 9, NONE),
                PressRelease,
                Utf8,
                b"\x1b[M %*",
            ),
            // Column 301 is 32 + 301 = U+014D, two UTF-8 bytes.
            (
                "utf8 far cell",
                mouse(MouseEventKind::Down(left), 300, 9, NONE),
                PressRelease,
                Utf8,
                b"\x1b[M \xc5\x8d*",
            ),
            // xterm's UTF-8 encoding stops at 2015 (U+07FF).
            (
                "utf8 beyond limit",
                mouse(MouseEventKind::Up(left), 5000, 9, NONE),
                PressRelease,
                Utf8,
                b"\x1b[M#\xdf\xbf*",
            ),
        ];
        for (name, ev, mode, encoding, want) in cases {
            let got = encode_mouse(&ev, mode, encoding);
            assert_eq!(got.as_deref(), Some(want), "{name}");
        }
        let none = encode_mouse(
            &mouse(MouseEventKind::Down(left), 0, 0, NONE),
            MouseProtocolMode::None,
            X10,
        );
        assert_eq!(none, None);
    }

    #[test]
    fn paste_brackets_and_strips_escapes() {
        let cases: [(&str, bool, &[u8]); 5] = [
            ("hello", true, b"\x1b[200~hello\x1b[201~"),
            ("a\nb\r\nc", true, b"\x1b[200~a\nb\r\nc\x1b[201~"),
            // A pasted end marker must not end the paste early.
            (
                "x\x1b[201~rm -rf /\n",
                true,
                b"\x1b[200~x[201~rm -rf /\n\x1b[201~",
            ),
            ("a\nb\r\nc", false, b"a\rb\rc"),
            ("日本\n", false, "日本\r".as_bytes()),
        ];
        for (text, bracketed, want) in cases {
            assert_eq!(
                encode_paste(text, bracketed),
                want,
                "{text:?} bracketed={bracketed}"
            );
        }
    }

    #[test]
    fn focus_reports() {
        assert_eq!(encode_focus(true), b"\x1b[I");
        assert_eq!(encode_focus(false), b"\x1b[O");
    }
}

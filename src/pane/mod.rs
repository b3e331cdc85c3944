//! The pane: Pi's PTY, the terminal emulator that parses its output, the key/mouse encoder that
//! talks back to it, and the renderer that copies its screen into a ratatui buffer.

pub mod emulator;
pub mod encode;
pub mod history;
pub mod pty;
pub mod render;

/// Keyboard modes the child negotiated with its terminal (us). The encoder turns keys into the
/// bytes these modes call for; the emulator tracks them from the child's output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct KeyboardModes {
    /// Current (top of stack) kitty keyboard flags: 1 disambiguate, 2 report event types,
    /// 4 report alternate keys, 8 report all keys as escape codes, 16 report associated text.
    pub kitty_flags: u8,
    /// xterm modifyOtherKeys level set with `CSI > 4 ; n m` (0 off, 1, 2).
    pub modify_other_keys: u8,
    /// DECCKM: cursor keys send `SS3 A` instead of `CSI A`.
    pub application_cursor: bool,
}

/// An sRGB colour as the terminal reports it in OSC 4/10/11 replies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Rgb(pub u8, pub u8, pub u8);

/// The colours the workbench claims as "its terminal's" when the child asks (OSC 10/11/4 and the
/// colour-scheme report). They come from the active theme so Pi picks matching colours.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TerminalColors {
    pub foreground: Rgb,
    pub background: Rgb,
    /// The 16 ANSI colours; 16..=255 follow the standard xterm cube and grey ramp.
    pub palette: [Rgb; 16],
}

impl TerminalColors {
    /// True when the background is dark (relative luminance below one half); drives the
    /// `CSI ? 997 ; 1|2 n` colour-scheme report.
    pub fn is_dark(&self) -> bool {
        let Rgb(r, g, b) = self.background;
        (0.2126 * f64::from(r) + 0.7152 * f64::from(g) + 0.0722 * f64::from(b)) < 128.0
    }
}

//! The pane: Pi's PTY, the terminal emulator that parses its output, the key/mouse encoder that
//! talks back to it, and the renderer that copies its screen into a ratatui buffer.

pub mod emulator;
pub mod encode;
pub mod pty;
pub mod render;

/// Keyboard modes the child negotiated with its terminal (us). The encoder turns keys into the
/// bytes these modes call for; the emulator tracks them from the child's output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyboardModes {
    /// Current (top of stack) kitty keyboard flags: 1 disambiguate, 2 report event types,
    /// 4 report alternate keys, 8 report all keys as escape codes, 16 report associated text.
    pub kitty_flags: u8,
    /// xterm modifyOtherKeys level set with `CSI > 4 ; n m` (0 off, 1, 2).
    pub modify_other_keys: u8,
    /// DECCKM: cursor keys send `SS3 A` instead of `CSI A`.
    pub application_cursor: bool,
}

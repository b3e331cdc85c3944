//! The styles every widget draws with, one field per role. Widgets never pick colours themselves:
//! they read a role from here, so a theme file (loaded by the application) or `NO_COLOR` changes
//! every widget at once. Roles are ratatui `Style`s rather than bare colours so a role can carry
//! bold/dim/reversed too — which is all [`Theme::plain`] has to keep the UI legible without colour.

use ratatui::style::{Modifier, Style};

/// Styles per widget role. Segment roles (status, key hint, …) are patched over their container's
/// base style (`footer`, `overlay_text`), so they only need to name what differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Theme {
    /// The footer bar itself: its background and default text.
    pub footer: Style,
    /// Emphasised text: the git branch, overlay highlights.
    pub accent: Style,
    /// De-emphasised text: separators, "pi running", notes.
    pub muted: Style,
    /// The key hint at the right end of the footer ("F1 help").
    pub key_hint: Style,
    /// Pi's program status (OSC 7501) `working`.
    pub status_working: Style,
    /// Pi's program status `blocked`: a dialog waits for the user, the state that must stand out.
    pub status_blocked: Style,
    /// Pi's program status `done`.
    pub status_done: Style,
    /// Pi's program status `error`.
    pub status_error: Style,
    /// Pi's program status `idle`.
    pub status_idle: Style,
    /// Border of overlays (the help box).
    pub overlay_border: Style,
    /// Title in an overlay's border.
    pub overlay_title: Style,
    /// The key column of the help overlay.
    pub overlay_key: Style,
    /// Body text and background of overlays.
    pub overlay_text: Style,
    /// The "lines back" badge over the pane and the footer's scrolled-back marker.
    pub scrollback_badge: Style,
    /// Something the user should notice but that is not broken.
    pub warning: Style,
    /// Something broke: Pi exited, a config file is bad.
    pub error: Style,
}

impl Theme {
    /// A theme without any colour (for `NO_COLOR` and as the base the loader fills in): roles are
    /// told apart by bold, dim, underline and reverse video only.
    pub fn plain() -> Self {
        let bold = Style::new().add_modifier(Modifier::BOLD);
        Self {
            footer: Style::new().add_modifier(Modifier::REVERSED),
            accent: bold,
            muted: Style::new().add_modifier(Modifier::DIM),
            key_hint: bold,
            status_working: bold,
            status_blocked: bold.add_modifier(Modifier::UNDERLINED),
            status_done: Style::new(),
            status_error: bold,
            status_idle: Style::new().add_modifier(Modifier::DIM),
            overlay_border: Style::new(),
            overlay_title: bold,
            overlay_key: bold,
            overlay_text: Style::new(),
            scrollback_badge: Style::new().add_modifier(Modifier::REVERSED),
            warning: bold,
            error: bold,
        }
    }
}

impl Default for Theme {
    fn default() -> Self {
        Self::plain()
    }
}

//! Modal views: overlays stacked above the pane (help now; pickers, prompts and the dock later).
//!
//! Views live on a `Vec<Box<dyn View>>`; the top one gets keys first, and with no view open keys
//! go to the keymap and then to Pi (codex's `BottomPaneView` stack, helix's compositor). A view
//! renders from its own state with pure widgets and never does I/O; anything it wants done is
//! returned as a [`ViewAction`] for the app to carry out.

pub mod help;
pub mod info;

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use unipi_widgets::theme::Theme;

/// What a view asks of its owner after handling a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViewAction {
    /// The key was used; keep the view.
    Consumed,
    /// Close this view.
    Close,
}

pub trait View {
    /// Draws the view. `area` is the region views may use (the pane; the footer stays visible).
    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme);
    /// Handles a key press while the view is on top.
    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction;
    /// Where the terminal cursor goes while this view is on top (None hides it).
    fn cursor(&self, _area: Rect) -> Option<Position> {
        None
    }
}

/// The stack of open views.
#[derive(Default)]
pub struct ViewStack {
    views: Vec<Box<dyn View>>,
}

impl ViewStack {
    pub fn push(&mut self, view: Box<dyn View>) {
        self.views.push(view);
    }

    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
    }

    pub fn len(&self) -> usize {
        self.views.len()
    }

    /// Gives the key to the top view; `false` when no view is open.
    pub fn handle_key(&mut self, key: &KeyEvent) -> bool {
        let Some(top) = self.views.last_mut() else {
            return false;
        };
        match top.handle_key(key) {
            ViewAction::Consumed => {}
            ViewAction::Close => {
                self.views.pop();
            }
        }
        true
    }

    /// Renders every view, bottom first, and returns the top view's cursor.
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) -> Option<Position> {
        for view in &self.views {
            view.render(area, buf, theme);
        }
        self.views.last().and_then(|top| top.cursor(area))
    }
}

//! Modal views: overlays stacked above the pane (help, info, the task dock; pickers and prompts
//! later).
//!
//! Views live on a `Vec<Box<dyn View>>`; the top one gets keys first, and with no view open keys
//! go to the keymap and then to Pi (codex's `BottomPaneView` stack, helix's compositor). A view
//! renders from its own state with pure widgets and never does I/O; anything it wants done is
//! returned as a [`ViewAction`] — a [`ViewRequest`] for work with side effects (stopping a task,
//! copying text) — for the app to carry out.

pub mod compaction;
pub mod dock;
pub mod help;
pub mod info;
pub mod mcp;
pub mod settings;

use std::any::Any;

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
    /// The key was used and asks the app for something only it can do; keep the view.
    Request(ViewRequest),
}

/// Work a view asks the app to do, because views do no I/O. The app reports the outcome back to
/// the view, if at all, through the view's own methods (e.g. the dock's notice).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViewRequest {
    /// Stop the background task with this id.
    StopTask(String),
    /// Stop every running background task.
    StopAllTasks,
    /// Start a finished shell task again (same command, name and settings; no wake).
    RerunTask(String),
    /// Put this text on the clipboard (OSC 52).
    CopyText(String),
    /// Mark every finished task as seen (`Ctrl+Alt+C`).
    ClearFinishedNotices,
    /// The user opened this task's details: it is no longer unseen.
    MarkSeen(String),
    /// Write these settings (a JSON object of the module's config keys) to `module`'s config
    /// file; the app reports the outcome with the settings view's `save_finished`.
    SaveSettings {
        module: String,
        values: serde_json::Value,
    },
}

/// The keys of a read-only, scrollable overlay (info, the last compaction): `None` closes it
/// (Esc, Enter, q), otherwise the rows to scroll by (0 for any other key; `isize::MIN`/`MAX` for
/// the top and the end).
pub fn pager_keys(key: &KeyEvent) -> Option<isize> {
    use crossterm::event::KeyCode;
    Some(match key.code {
        KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q') => return None,
        KeyCode::Up | KeyCode::Char('k') => -1,
        KeyCode::Down | KeyCode::Char('j') => 1,
        KeyCode::PageUp => -10,
        KeyCode::PageDown => 10,
        KeyCode::Home | KeyCode::Char('g') => isize::MIN,
        KeyCode::End | KeyCode::Char('G') => isize::MAX,
        _ => 0,
    })
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
    /// The view as `Any`, for views the app updates after opening them (the dock's rows);
    /// `None` for views nobody needs to reach.
    fn as_any_mut(&mut self) -> Option<&mut dyn Any> {
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

    /// Gives the key to the top view: `None` when no view is open (the key is not taken), else
    /// the requests the view made for the app to carry out (often none).
    pub fn handle_key(&mut self, key: &KeyEvent) -> Option<Vec<ViewRequest>> {
        let top = self.views.last_mut()?;
        let mut requests = Vec::new();
        match top.handle_key(key) {
            ViewAction::Consumed => {}
            ViewAction::Close => {
                self.views.pop();
            }
            ViewAction::Request(request) => requests.push(request),
        }
        Some(requests)
    }

    /// The topmost open view of type `T`, to update it (e.g. the dock's rows).
    pub fn find_mut<T: View + 'static>(&mut self) -> Option<&mut T> {
        self.views
            .iter_mut()
            .rev()
            .find_map(|view| view.as_any_mut()?.downcast_mut::<T>())
    }

    /// Renders every view, bottom first, and returns the top view's cursor.
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) -> Option<Position> {
        for view in &self.views {
            view.render(area, buf, theme);
        }
        self.views.last().and_then(|top| top.cursor(area))
    }
}

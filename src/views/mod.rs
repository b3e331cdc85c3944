//! Modal views: overlays stacked above the pane (help, info, the dock, a capability's overlay).
//!
//! Views live on a `Vec<Box<dyn View>>`; the top one gets keys first, and with no view open keys
//! go to the keymap and then to Pi (codex's `BottomPaneView` stack, helix's compositor). A view
//! renders from its own state with pure widgets and never does I/O. It asks for work one way:
//! through the port it was opened with (a capability's handle: the dock's [`dock::DockSource`]s,
//! the settings view's store, an overlay's port), whose answers and later state it pulls in
//! [`View::refresh`] when its capability signals a change. What only the app can do (the
//! clipboard, a footer notice) a view returns as a [`ViewEffect`]. The app never reaches into a
//! view by type.
//!
//! Every view has its key table ([`crate::config::keymap::KeyTableSpec`]), rebindable in the
//! keymap file; Ctrl+C closes the top view; a key a view does not use is not swallowed silently
//! (the footer says so and names the key that closes the view).

pub mod dock;
pub mod help;
pub mod info;
pub mod line_edit;
pub mod notice;
pub mod pager;
pub mod settings;
#[cfg(test)]
pub(crate) mod test_keys;

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use unipi_widgets::theme::Theme;

/// What a view did with a key.
pub enum ViewAction {
    /// The key was used; keep the view.
    Consumed,
    /// Close this view.
    Close,
    /// The view has no use for this key (the app says so in the footer; Pi does not get it).
    Unhandled,
    /// Close this view and let the key go on (to the keymap, then Pi): for passive boxes that
    /// must not eat the user's typing.
    CloseAndPass,
    /// The key was used and asks the app for something only it can do; keep the view.
    Effect(ViewEffect),
}

impl std::fmt::Debug for ViewAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ViewAction::Consumed => f.write_str("Consumed"),
            ViewAction::Close => f.write_str("Close"),
            ViewAction::Unhandled => f.write_str("Unhandled"),
            ViewAction::CloseAndPass => f.write_str("CloseAndPass"),
            ViewAction::Effect(effect) => write!(f, "Effect({effect:?})"),
        }
    }
}

impl PartialEq for ViewAction {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ViewAction::Effect(a), ViewAction::Effect(b)) => a == b,
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }
}

/// What only the app can do for a view.
pub enum ViewEffect {
    /// Put this text on the clipboard (OSC 52: works over SSH too).
    Copy(String),
    /// A short notice in the footer.
    Notice(String),
    /// Open another view above this one.
    Open(Box<dyn View>),
}

impl std::fmt::Debug for ViewEffect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ViewEffect::Copy(text) => write!(f, "Copy({text:?})"),
            ViewEffect::Notice(text) => write!(f, "Notice({text:?})"),
            ViewEffect::Open(view) => write!(f, "Open({})", view.title()),
        }
    }
}

impl PartialEq for ViewEffect {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ViewEffect::Copy(a), ViewEffect::Copy(b)) => a == b,
            (ViewEffect::Notice(a), ViewEffect::Notice(b)) => a == b,
            (ViewEffect::Open(a), ViewEffect::Open(b)) => a.title() == b.title(),
            _ => false,
        }
    }
}

/// What views may read when they refresh: the app's own knowledge of Pi (the main agent's
/// model, tokens, cost, activity — the footer's data).
pub struct RefreshContext<'a> {
    pub pi: &'a unipi_widgets::footer::FooterData,
}

pub trait View: Send {
    /// What the view is called (the "does nothing here" notice, logs). Views with the same
    /// title are one of a kind: opening another replaces the open one.
    fn title(&self) -> &str;
    /// Draws the view. `area` is the region views may use (the pane; the footer stays visible).
    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme);
    /// Handles a key press while the view is on top.
    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction;
    /// Pasted text while the view is on top; `false` when it takes no text.
    fn handle_paste(&mut self, _text: &str) -> bool {
        false
    }
    /// Where the terminal cursor goes while this view is on top (None hides it).
    fn cursor(&self, _area: Rect) -> Option<Position> {
        None
    }
    /// Something it shows may have changed: pull fresh data from its port (memory only).
    fn refresh(&mut self, _context: &RefreshContext<'_>) {}
    /// How often it wants a refresh while open, if something in it moves (runtimes).
    fn tick_every(&self) -> Option<Duration> {
        None
    }
    /// The key that closes it, for the "does nothing here" notice.
    fn close_hint(&self) -> String {
        "Esc".to_owned()
    }
    /// The key table in use now (a view with a text field may switch tables while it is being
    /// typed in): F1 over the view opens the help at that table's section.
    fn key_table(&self) -> Option<&'static crate::config::keymap::KeyTableSpec> {
        None
    }
    /// Its work was finished elsewhere (a question answered by its timeout, or withdrawn when
    /// Pi aborted the call): the stack drops it at the next refresh rather than leave a stale
    /// box open, and does not open it at all when it is finished already.
    fn finished(&self) -> bool {
        false
    }
}

/// Every key table the workbench's own views take (capabilities list theirs in their
/// registration).
pub fn key_tables() -> Vec<&'static crate::config::keymap::KeyTableSpec> {
    vec![&dock::keys::DOCK_KEYS, &pager::PAGER_KEYS, &info::INFO_KEYS]
}

/// The stack of open views.
#[derive(Default)]
pub struct ViewStack {
    views: Vec<Box<dyn View>>,
}

/// What the stack did with a key.
#[derive(Debug, PartialEq)]
pub enum KeyOutcome {
    /// No view is open: the key is not the stack's.
    NoView,
    /// A view used it (and maybe asked for an effect).
    Used(Option<ViewEffect>),
    /// The top view closed and the key goes on to the keymap and Pi.
    Passed,
    /// The top view has no use for it: tell the user which key closes it.
    Unhandled { view: String, close: String },
}

impl ViewStack {
    /// Opens `view` on top. An open view with the same title is replaced (one of a kind).
    pub fn push(&mut self, view: Box<dyn View>) {
        if view.finished() {
            return;
        }
        self.views.retain(|open| open.title() != view.title());
        self.views.push(view);
    }

    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
    }

    pub fn len(&self) -> usize {
        self.views.len()
    }

    /// The titles of the open views, bottom first.
    pub fn titles(&self) -> Vec<String> {
        self.views.iter().map(|v| v.title().to_owned()).collect()
    }

    /// The key table of the top view, if it has one.
    pub fn top_key_table(&self) -> Option<&'static crate::config::keymap::KeyTableSpec> {
        self.views.last().and_then(|top| top.key_table())
    }

    /// Gives the key to the top view. Ctrl+C closes it whatever it is.
    pub fn handle_key(&mut self, key: &KeyEvent) -> KeyOutcome {
        let Some(top) = self.views.last_mut() else {
            return KeyOutcome::NoView;
        };
        if key.code == KeyCode::Char('c') && key.modifiers == KeyModifiers::CONTROL {
            self.views.pop();
            return KeyOutcome::Used(None);
        }
        match top.handle_key(key) {
            ViewAction::Consumed => KeyOutcome::Used(None),
            ViewAction::Close => {
                self.views.pop();
                KeyOutcome::Used(None)
            }
            ViewAction::Effect(effect) => KeyOutcome::Used(Some(effect)),
            ViewAction::CloseAndPass => {
                self.views.pop();
                KeyOutcome::Passed
            }
            ViewAction::Unhandled => KeyOutcome::Unhandled {
                view: top.title().to_owned(),
                close: top.close_hint(),
            },
        }
    }

    /// Gives pasted text to the top view; `false` when none is open or it takes no text.
    pub fn handle_paste(&mut self, text: &str) -> bool {
        self.views
            .last_mut()
            .is_some_and(|top| top.handle_paste(text))
    }

    /// Lets every open view pull fresh data, and drops those whose work is finished.
    pub fn refresh(&mut self, context: &RefreshContext<'_>) {
        for view in &mut self.views {
            view.refresh(context);
        }
        self.views.retain(|view| !view.finished());
    }

    /// The shortest refresh period any open view asks for.
    pub fn tick_every(&self) -> Option<Duration> {
        self.views.iter().filter_map(|v| v.tick_every()).min()
    }

    /// Renders every view, bottom first, and returns the top view's cursor.
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) -> Option<Position> {
        for view in &self.views {
            view.render(area, buf, theme);
        }
        self.views.last().and_then(|top| top.cursor(area))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    /// A view whose work another party finishes.
    struct Answerable {
        done: Arc<AtomicBool>,
    }

    impl View for Answerable {
        fn title(&self) -> &str {
            "a question"
        }
        fn render(&self, _area: Rect, _buf: &mut Buffer, _theme: &Theme) {}
        fn handle_key(&mut self, _key: &KeyEvent) -> ViewAction {
            ViewAction::Consumed
        }
        fn finished(&self) -> bool {
            self.done.load(Ordering::Relaxed)
        }
    }

    #[test]
    fn a_view_finished_elsewhere_closes_at_the_next_refresh_and_never_opens() {
        let done = Arc::new(AtomicBool::new(false));
        let mut stack = ViewStack::default();
        stack.push(Box::new(Answerable { done: done.clone() }));
        let pi = unipi_widgets::footer::FooterData::default();
        stack.refresh(&RefreshContext { pi: &pi });
        assert_eq!(stack.len(), 1);
        done.store(true, Ordering::Relaxed);
        stack.refresh(&RefreshContext { pi: &pi });
        assert!(stack.is_empty());
        stack.push(Box::new(Answerable { done }));
        assert!(stack.is_empty(), "a finished view is not opened");
    }
}

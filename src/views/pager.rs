//! The keys of every read-only, scrollable overlay (help, `/unipi:info`, the last compaction, the
//! start-up problems, a capability's report): one `[pager]` table, so a user who rebinds
//! scrolling or closing does it once for all of them. Defaults are in `keymaps/default.toml`.

use std::cell::Cell;

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use unipi_widgets::theme::Theme;

use super::{View, ViewAction};
use crate::config::keymap::{KeyTable, KeyTableSpec, Keymap, key_table};

key_table! {
    /// The `[pager]` table (its defaults are in `keymaps/default.toml`).
    pub(crate) static PAGER_KEYS,
    pub(crate) enum PagerAction,
    table "pager", title "Read-only overlays (help, info, reports)",
    defaults [],
    actions {
        Close => "pager.close", "Close the overlay";
        Up => "pager.up", "Scroll up a line";
        Down => "pager.down", "Scroll down a line";
        PageUp => "pager.page_up", "Scroll up a page";
        PageDown => "pager.page_down", "Scroll down a page";
        Top => "pager.top", "To the top";
        Bottom => "pager.bottom", "To the end";
    }
}

/// Rows a page key scrolls in a read-only overlay.
pub(crate) const OVERLAY_PAGE: usize = 10;

/// What a pager key means for a scrolled overlay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PagerStep {
    Close,
    /// Rows to scroll by (`isize::MIN` / `isize::MAX` for the top and the end).
    Scroll(isize),
    /// Not a pager key.
    Unbound,
}

/// A read-only overlay's keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pager {
    keys: KeyTable<PagerAction>,
}

impl Pager {
    pub(crate) fn new(keymap: &Keymap) -> Self {
        Pager {
            keys: KeyTable::from_keymap(keymap),
        }
    }

    /// What `key` does, given a page of `page` rows.
    pub(crate) fn step(&self, key: &KeyEvent, page: usize) -> PagerStep {
        let page = isize::try_from(page.max(1)).unwrap_or(isize::MAX);
        match self.keys.action(key) {
            Some(PagerAction::Close) => PagerStep::Close,
            Some(PagerAction::Up) => PagerStep::Scroll(-1),
            Some(PagerAction::Down) => PagerStep::Scroll(1),
            Some(PagerAction::PageUp) => PagerStep::Scroll(-page),
            Some(PagerAction::PageDown) => PagerStep::Scroll(page),
            Some(PagerAction::Top) => PagerStep::Scroll(isize::MIN),
            Some(PagerAction::Bottom) => PagerStep::Scroll(isize::MAX),
            None => PagerStep::Unbound,
        }
    }

    /// Handles `key` for an overlay scrolled to `scroll` (at most `max`): closes, scrolls by the
    /// fixed page of read-only overlays (10 rows), or is not a pager key.
    pub(crate) fn handle(
        &self,
        key: &KeyEvent,
        scroll: &mut usize,
        max: usize,
    ) -> super::ViewAction {
        match self.step(key, OVERLAY_PAGE) {
            PagerStep::Close => super::ViewAction::Close,
            PagerStep::Scroll(delta) => {
                *scroll = scroll.saturating_add_signed(delta).min(max);
                super::ViewAction::Consumed
            }
            PagerStep::Unbound => super::ViewAction::Unhandled,
        }
    }

    /// The close hint on the overlay's border ("Esc close").
    pub(crate) fn close_hint(&self) -> String {
        format!("{} close", self.close_key())
    }

    /// The key that closes the overlay, as a hint shows it.
    pub(crate) fn close_key(&self) -> String {
        self.keys.close_key(PagerAction::Close)
    }

    /// The keys that scroll, as a hint shows them, most useful first: `↑↓`, `PgUp`, `PgDn`,
    /// `Home`, `End` with the default keymap (an unbound action is left out).
    pub(crate) fn scroll_keys(&self) -> Vec<String> {
        self.keys
            .hints(&[
                (&[PagerAction::Up, PagerAction::Down], ""),
                (&[PagerAction::PageUp], ""),
                (&[PagerAction::PageDown], ""),
                (&[PagerAction::Top], ""),
                (&[PagerAction::Bottom], ""),
            ])
            .into_iter()
            .map(|(keys, _)| keys)
            .collect()
    }
}

/// A read-only overlay's widget model: it draws itself (with the close hint on its border) and
/// says how far it scrolls on a given screen.
pub trait PagedModel: Send + 'static {
    /// What the overlay is called (notices, one of a kind).
    fn title(&self) -> &str;
    /// The first content row shown; only the view moves it.
    fn scroll_mut(&mut self) -> &mut usize;
    fn max_scroll(&self, screen: Rect) -> usize;
    fn render(&self, hint: &str, theme: &Theme, screen: Rect, buf: &mut Buffer);
}

/// A read-only overlay: a [`PagedModel`] scrolled with the `[pager]` keys. It opens at the top.
/// A passive one (the start-up problems) lets typing through: a key that is not the pager's
/// closes it and goes on to Pi.
pub struct PagedView<M> {
    model: M,
    pager: Pager,
    passive: bool,
    /// The area of the last render, to clamp scrolling to what is visible.
    last_area: Cell<Rect>,
}

impl<M: PagedModel> PagedView<M> {
    pub fn new(mut model: M, keymap: &Keymap) -> Self {
        *model.scroll_mut() = 0;
        PagedView {
            model,
            pager: Pager::new(keymap),
            passive: false,
            last_area: Cell::new(Rect::default()),
        }
    }

    /// The same overlay, opened scrolled to `row` (a document viewer opens at its line; clamped
    /// to the last page when drawn).
    pub fn scrolled_to(mut self, row: usize) -> Self {
        *self.model.scroll_mut() = row;
        self
    }

    /// The same overlay, but typing closes it and goes on to Pi.
    pub fn passive(mut self) -> Self {
        self.passive = true;
        self
    }

    pub fn model(&self) -> &M {
        &self.model
    }
}

impl<M: PagedModel> View for PagedView<M> {
    fn title(&self) -> &str {
        self.model.title()
    }

    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        self.last_area.set(area);
        let mut hint = self.pager.close_hint();
        if self.passive {
            hint.push_str(" · typing goes to Pi");
        }
        self.model.render(&hint, theme, area, buf);
    }

    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction {
        let max = self.model.max_scroll(self.last_area.get());
        match self.pager.handle(key, self.model.scroll_mut(), max) {
            ViewAction::Unhandled if self.passive => ViewAction::CloseAndPass,
            done => done,
        }
    }

    fn close_hint(&self) -> String {
        self.pager.close_key()
    }

    fn key_table(&self) -> Option<&'static KeyTableSpec> {
        Some(&PAGER_KEYS)
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyModifiers};

    use super::*;
    use crate::test_table::check_table;
    use crate::views::test_keys::{key, user_keymap};

    #[test]
    fn default_pager_keys() {
        let pager = Pager::new(&Keymap::defaults());
        let cases = [
            (KeyCode::Esc, PagerStep::Close),
            (KeyCode::Enter, PagerStep::Close),
            (KeyCode::Char('q'), PagerStep::Close),
            (KeyCode::Up, PagerStep::Scroll(-1)),
            (KeyCode::Char('k'), PagerStep::Scroll(-1)),
            (KeyCode::Down, PagerStep::Scroll(1)),
            (KeyCode::Char('j'), PagerStep::Scroll(1)),
            (KeyCode::PageUp, PagerStep::Scroll(-10)),
            (KeyCode::PageDown, PagerStep::Scroll(10)),
            (KeyCode::Home, PagerStep::Scroll(isize::MIN)),
            (KeyCode::Char('g'), PagerStep::Scroll(isize::MIN)),
            (KeyCode::End, PagerStep::Scroll(isize::MAX)),
            (KeyCode::Char('x'), PagerStep::Unbound),
            (KeyCode::F(1), PagerStep::Unbound),
        ];
        check_table(cases, |code| pager.step(&key(*code), 10));
        let shifted_g = KeyEvent::new(KeyCode::Char('G'), KeyModifiers::NONE);
        assert_eq!(pager.step(&shifted_g, 10), PagerStep::Scroll(isize::MAX));
        assert_eq!(pager.close_key(), "Esc");
        assert_eq!(pager.scroll_keys(), ["↑↓", "PgUp", "PgDn", "Home", "End"]);
    }

    #[test]
    fn a_user_table_rebinds_every_overlay_at_once() {
        let keymap = user_keymap("[pager]\n\"x\" = \"pager.close\"\n\"esc\" = \"none\"\n");
        let pager = Pager::new(&keymap);
        assert_eq!(pager.step(&key(KeyCode::Char('x')), 5), PagerStep::Close);
        assert_eq!(pager.step(&key(KeyCode::Esc), 5), PagerStep::Unbound);
        assert_eq!(pager.close_key(), "x");
    }
}

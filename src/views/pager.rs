//! The keys of every read-only, scrollable overlay (help, `/unipi:info`, the last compaction, the
//! start-up problems, a capability's report): one `[pager]` table, so a user who rebinds
//! scrolling or closing does it once for all of them. Defaults are in `keymaps/default.toml`.

use crossterm::event::KeyEvent;

use crate::config::keymap::{KeyTable, KeyTableSpec, Keymap, TableAction};

/// The `[pager]` table.
pub static PAGER_KEYS: KeyTableSpec = KeyTableSpec {
    table: "pager",
    title: "Read-only overlays (help, info, reports)",
    actions: &[
        ("pager.close", "Close the overlay"),
        ("pager.up", "Scroll up a line"),
        ("pager.down", "Scroll down a line"),
        ("pager.page_up", "Scroll up a page"),
        ("pager.page_down", "Scroll down a page"),
        ("pager.top", "To the top"),
        ("pager.bottom", "To the end"),
    ],
    defaults: &[],
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PagerAction {
    Close,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
}

impl TableAction for PagerAction {
    const SPEC: &'static KeyTableSpec = &PAGER_KEYS;

    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "pager.close" => PagerAction::Close,
            "pager.up" => PagerAction::Up,
            "pager.down" => PagerAction::Down,
            "pager.page_up" => PagerAction::PageUp,
            "pager.page_down" => PagerAction::PageDown,
            "pager.top" => PagerAction::Top,
            "pager.bottom" => PagerAction::Bottom,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            PagerAction::Close => "pager.close",
            PagerAction::Up => "pager.up",
            PagerAction::Down => "pager.down",
            PagerAction::PageUp => "pager.page_up",
            PagerAction::PageDown => "pager.page_down",
            PagerAction::Top => "pager.top",
            PagerAction::Bottom => "pager.bottom",
        }
    }
}

/// Rows a page key scrolls in a read-only overlay.
pub const OVERLAY_PAGE: usize = 10;

/// What a pager key means for a scrolled overlay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PagerStep {
    Close,
    /// Rows to scroll by (`isize::MIN` / `isize::MAX` for the top and the end).
    Scroll(isize),
    /// Not a pager key.
    Unbound,
}

/// A read-only overlay's keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pager {
    keys: KeyTable<PagerAction>,
}

impl Pager {
    pub fn new(keymap: &Keymap) -> Self {
        Pager {
            keys: KeyTable::from_keymap(keymap),
        }
    }

    /// What `key` does, given a page of `page` rows.
    pub fn step(&self, key: &KeyEvent, page: usize) -> PagerStep {
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
    pub fn handle(&self, key: &KeyEvent, scroll: &mut usize, max: usize) -> super::ViewAction {
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
    pub fn close_hint(&self) -> String {
        format!("{} close", self.close_key())
    }

    /// The key that closes the overlay, as a hint shows it.
    pub fn close_key(&self) -> String {
        self.keys
            .hint_key(PagerAction::Close)
            .unwrap_or_else(|| "Ctrl+C".to_owned())
    }

    /// The hint line of a scrolled overlay: scrolling keys, then the close key.
    pub fn hints(&self) -> Vec<(String, String)> {
        self.keys.hints(&[
            (
                &[
                    PagerAction::Up,
                    PagerAction::Down,
                    PagerAction::PageUp,
                    PagerAction::PageDown,
                ],
                "scroll",
            ),
            (&[PagerAction::Close], "close"),
        ])
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crossterm::event::{KeyCode, KeyModifiers};

    use super::*;
    use crate::config::keymap::keymap_from_sources;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

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
        for (code, want) in cases {
            assert_eq!(pager.step(&key(code), 10), want, "{code:?}");
        }
        let shifted_g = KeyEvent::new(KeyCode::Char('G'), KeyModifiers::NONE);
        assert_eq!(pager.step(&shifted_g, 10), PagerStep::Scroll(isize::MAX));
        assert_eq!(pager.close_key(), "Esc");
    }

    #[test]
    fn a_user_table_rebinds_every_overlay_at_once() {
        let (keymap, errors) = keymap_from_sources(Some((
            Path::new("/cfg/keymap.toml"),
            "[pager]\n\"x\" = \"pager.close\"\n\"esc\" = \"none\"\n",
        )));
        assert!(errors.is_empty(), "{errors:?}");
        let pager = Pager::new(&keymap);
        assert_eq!(pager.step(&key(KeyCode::Char('x')), 5), PagerStep::Close);
        assert_eq!(pager.step(&key(KeyCode::Esc), 5), PagerStep::Unbound);
        assert_eq!(pager.close_key(), "x");
    }
}

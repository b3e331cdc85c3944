//! The `/unipi:compact-view` overlay: the last compaction's statistics, the summary Pi now
//! carries instead of the history, and the manifest of what was summarized away (the pure widget
//! `unipi_widgets::compactor` draws it). Esc, q or Enter close it; arrows, j/k, PgUp/PgDn, g/G
//! scroll. The app builds the model when the command runs, so the view is a snapshot of that
//! moment and does no I/O.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use unipi_widgets::compactor::{CompactionModel, render_compaction};
use unipi_widgets::theme::Theme;

use crate::views::pager::{PagedModel, PagedView};

/// The `/unipi:compact-view` overlay.
pub(crate) type CompactionView = PagedView<CompactionModel>;

impl PagedModel for CompactionModel {
    fn title(&self) -> &str {
        "the last compaction"
    }

    fn scroll_mut(&mut self) -> &mut usize {
        &mut self.scroll
    }

    fn max_scroll(&self, screen: Rect) -> usize {
        CompactionModel::max_scroll(self, screen)
    }

    fn render(&self, hint: &str, theme: &Theme, screen: Rect, buf: &mut Buffer) {
        render_compaction(self, hint, theme, screen, buf);
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyModifiers};
    use unipi_widgets::compactor::ManifestRow;

    use crossterm::event::KeyEvent;

    use super::*;
    use crate::config::keymap::Keymap;
    use crate::views::{View, ViewAction};

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    /// A compaction whose manifest has `rows` entries: taller than a small screen.
    fn make_model_with(rows: usize) -> CompactionModel {
        CompactionModel {
            when: "2026-11-30 10:12 UTC · manual".to_owned(),
            tokens_before: 9_000,
            tokens_after: 1_000,
            summary: "## Goals\n- ship it".to_owned(),
            manifest: (0..rows)
                .map(|i| ManifestRow {
                    id: format!("e{i}"),
                    role: "user".to_owned(),
                    chars: 10,
                    tool: None,
                })
                .collect(),
            scroll: 3,
            ..CompactionModel::default()
        }
    }

    fn rendered(view: &CompactionView, width: u16, height: u16) -> String {
        let area = Rect::new(0, 0, width, height);
        let mut buf = Buffer::empty(area);
        view.render(area, &mut buf, &Theme::plain());
        buf.content().iter().map(|c| c.symbol()).collect()
    }

    #[test]
    fn keys_close_and_scroll_within_the_content() {
        let mut view = CompactionView::new(make_model_with(30), &Keymap::defaults());
        assert_eq!(view.model().scroll, 0, "opens at the top");
        rendered(&view, 60, 12);
        let max = view.model().max_scroll(Rect::new(0, 0, 60, 12));
        assert!(max > 20, "max {max}");
        let steps = [
            (KeyCode::Down, ViewAction::Consumed, 1),
            (KeyCode::Char('k'), ViewAction::Consumed, 0),
            (KeyCode::PageDown, ViewAction::Consumed, 10),
            (KeyCode::Char('G'), ViewAction::Consumed, max),
            (KeyCode::Down, ViewAction::Consumed, max),
            (KeyCode::Home, ViewAction::Consumed, 0),
            (KeyCode::Char('x'), ViewAction::Unhandled, 0),
        ];
        for (code, action, scroll) in steps {
            assert_eq!(view.handle_key(&key(code)), action, "{code:?}");
            assert_eq!(view.model().scroll, scroll, "after {code:?}");
        }
        assert!(rendered(&view, 60, 12).contains("Last compaction"));
        view.handle_key(&key(KeyCode::End));
        assert!(rendered(&view, 60, 12).contains("e29"));
        for code in [KeyCode::Esc, KeyCode::Enter, KeyCode::Char('q')] {
            assert_eq!(view.handle_key(&key(code)), ViewAction::Close, "{code:?}");
        }
    }
}

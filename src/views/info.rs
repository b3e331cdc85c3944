//! The `/unipi:info` overlay view: shows the workbench's modules, what they registered, the
//! versions on both sides of the bridge and the workbench's paths (the pure widget
//! `unipi_widgets::info` draws it). Esc, q or Enter close it; arrows, j/k, PgUp/PgDn, g/G scroll
//! when the terminal is too small. The app builds the [`InfoModel`] when the command runs; the
//! view only shows it, so what it says is a snapshot of that moment.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use unipi_widgets::info::{InfoModel, max_scroll, render};
use unipi_widgets::theme::Theme;

use super::pager::{PagedModel, PagedView};

/// The `/unipi:info` overlay.
pub type InfoView = PagedView<InfoModel>;

impl PagedModel for InfoModel {
    fn title(&self) -> &str {
        "/unipi:info"
    }

    fn scroll_mut(&mut self) -> &mut usize {
        &mut self.scroll
    }

    fn max_scroll(&self, screen: Rect) -> usize {
        max_scroll(self, screen)
    }

    fn render(&self, hint: &str, theme: &Theme, screen: Rect, buf: &mut Buffer) {
        render(self, hint, theme, screen, buf);
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyCode;
    use unipi_widgets::info::{InfoPaths, ModuleInfo, ModuleState};

    use super::*;
    use crate::config::keymap::Keymap;
    use crate::test_table::check_table;
    use crate::views::test_keys::key;
    use crate::views::{View, ViewAction};

    /// An info model with `count` modules: more rows than a small screen holds.
    fn make_model_with(count: usize) -> InfoModel {
        InfoModel {
            modules: (0..count)
                .map(|i| ModuleInfo {
                    name: format!("module{i}"),
                    state: ModuleState::Ready,
                    tools: vec![format!("tool{i}")],
                    commands: vec![format!("/unipi:cmd{i}")],
                })
                .collect(),
            pi_version: Some("1.6.0".to_owned()),
            bridge_protocol: "1".to_owned(),
            workbench_version: "0.1.0".to_owned(),
            paths: InfoPaths::default(),
            scroll: 7,
        }
    }

    fn rendered(view: &InfoView, width: u16, height: u16) -> Buffer {
        let area = Rect::new(0, 0, width, height);
        let mut buf = Buffer::empty(area);
        view.render(area, &mut buf, &Theme::plain());
        buf
    }

    #[test]
    fn close_keys_close_and_others_are_unhandled() {
        let mut view = InfoView::new(make_model_with(2), &Keymap::defaults());
        let cases = [
            (KeyCode::Esc, ViewAction::Close),
            (KeyCode::Enter, ViewAction::Close),
            (KeyCode::Char('q'), ViewAction::Close),
            (KeyCode::Char('x'), ViewAction::Unhandled),
            (KeyCode::F(1), ViewAction::Unhandled),
            (KeyCode::Down, ViewAction::Consumed),
        ];
        check_table(cases, |code| view.handle_key(&key(*code)));
    }

    #[test]
    fn scrolling_is_clamped_to_the_rendered_area() {
        // Opens at the top whatever the model said.
        let mut view = InfoView::new(make_model_with(10), &Keymap::defaults());
        assert_eq!(view.model().scroll, 0);
        rendered(&view, 60, 12);
        let max = max_scroll(view.model(), Rect::new(0, 0, 60, 12));
        assert!(max > 10, "max {max}");

        let steps = [
            (KeyCode::Down, 1),
            (KeyCode::Char('j'), 2),
            (KeyCode::Up, 1),
            (KeyCode::Char('k'), 0),
            (KeyCode::Up, 0),
            (KeyCode::PageDown, 10),
            (KeyCode::Char('G'), max),
            (KeyCode::Down, max),
            (KeyCode::PageUp, max - 10),
            (KeyCode::Char('g'), 0),
            (KeyCode::End, max),
            (KeyCode::Home, 0),
        ];
        for (code, want) in steps {
            view.handle_key(&key(code));
            assert_eq!(view.model().scroll, want, "after {code:?}");
        }
    }

    #[test]
    fn the_scrolled_window_is_drawn() {
        let mut view = InfoView::new(make_model_with(10), &Keymap::defaults());
        let before = rendered(&view, 60, 12);
        view.handle_key(&key(KeyCode::Char('G')));
        let after = rendered(&view, 60, 12);
        let text = |buf: &Buffer| buf.content().iter().map(|c| c.symbol()).collect::<String>();
        assert!(text(&before).contains("Modules"));
        assert!(!text(&after).contains("Modules"));
        assert!(text(&after).contains("runtime"));
    }
}

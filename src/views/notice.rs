//! A dismissable box of messages over the pane — the configuration problems found at start, shown
//! once the screen is up (they cannot be printed: the alternate screen would hide them). It
//! wraps and scrolls (nothing is cut off), says how to close it, and does not eat typing: a key
//! that is not one of the pager's closes the box and goes on to Pi, so a user who starts typing
//! their prompt loses nothing.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use unipi_widgets::notice::{NoticeModel, max_scroll, render};
use unipi_widgets::theme::Theme;

use super::pager::{PagedModel, PagedView};
use crate::config::keymap::Keymap;

/// A box of messages; typing closes it and goes on to Pi.
pub(crate) type NoticeView = PagedView<NoticeModel>;

/// The box titled `title` listing `messages`.
pub fn notice_view(title: &str, messages: Vec<String>, keymap: &Keymap) -> NoticeView {
    let model = NoticeModel {
        title: title.to_owned(),
        messages,
        hint: String::new(),
        scroll: 0,
    };
    PagedView::new(model, keymap).passive()
}

impl PagedModel for NoticeModel {
    fn title(&self) -> &str {
        &self.title
    }

    fn scroll_mut(&mut self) -> &mut usize {
        &mut self.scroll
    }

    fn max_scroll(&self, screen: Rect) -> usize {
        max_scroll(self, screen)
    }

    fn render(&self, hint: &str, theme: &Theme, screen: Rect, buf: &mut Buffer) {
        let model = NoticeModel {
            hint: hint.to_owned(),
            ..self.clone()
        };
        render(&model, theme, screen, buf);
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyCode;

    use super::*;
    use crate::views::test_keys::key;
    use crate::views::{View, ViewAction};

    #[test]
    fn scrolls_closes_and_lets_typing_through() {
        let messages = (0..8)
            .map(|i| format!("/cfg/m{i}.json:1:1: a long message about what is wrong ").repeat(3))
            .collect();
        let mut view = notice_view("Start-up problems", messages, &Keymap::defaults());
        let mut buf = Buffer::empty(Rect::new(0, 0, 80, 20));
        view.render(buf.area, &mut buf, &Theme::plain());
        assert_eq!(
            view.handle_key(&key(KeyCode::Char('j'))),
            ViewAction::Consumed
        );
        assert_eq!(view.model().scroll, 1);
        assert_eq!(view.handle_key(&key(KeyCode::End)), ViewAction::Consumed);
        assert!(view.model().scroll > 1);
        assert_eq!(
            view.handle_key(&key(KeyCode::Char('h'))),
            ViewAction::CloseAndPass
        );
        assert_eq!(view.handle_key(&key(KeyCode::Esc)), ViewAction::Close);
    }
}

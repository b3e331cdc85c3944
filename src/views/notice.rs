//! A dismissable box of messages over the pane — the configuration problems found at start, shown
//! once the screen is up (they cannot be printed: the alternate screen would hide them). It
//! wraps and scrolls (nothing is cut off), says how to close it, and does not eat typing: a key
//! that is not one of the pager's closes the box and goes on to Pi, so a user who starts typing
//! their prompt loses nothing.

use std::cell::Cell;

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use unipi_widgets::notice::{NoticeModel, max_scroll, render};
use unipi_widgets::theme::Theme;

use super::pager::Pager;
use super::{View, ViewAction};
use crate::config::keymap::Keymap;

pub struct NoticeView {
    model: NoticeModel,
    pager: Pager,
    last_area: Cell<Rect>,
}

impl NoticeView {
    pub fn new(title: &str, messages: Vec<String>, keymap: &Keymap) -> Self {
        let pager = Pager::new(keymap);
        NoticeView {
            model: NoticeModel {
                title: title.to_owned(),
                messages,
                hint: format!("{} · typing goes to Pi", pager.close_hint()),
                scroll: 0,
            },
            pager,
            last_area: Cell::new(Rect::default()),
        }
    }

    pub fn model(&self) -> &NoticeModel {
        &self.model
    }
}

impl View for NoticeView {
    fn title(&self) -> &str {
        &self.model.title
    }

    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        self.last_area.set(area);
        render(&self.model, theme, area, buf);
    }

    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction {
        let max = max_scroll(&self.model, self.last_area.get());
        match self.pager.handle(key, &mut self.model.scroll, max) {
            ViewAction::Unhandled => ViewAction::CloseAndPass,
            done => done,
        }
    }

    fn close_hint(&self) -> String {
        self.pager.close_key()
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyModifiers};

    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn scrolls_closes_and_lets_typing_through() {
        let messages = (0..8)
            .map(|i| format!("/cfg/m{i}.json:1:1: a long message about what is wrong ").repeat(3))
            .collect();
        let mut view = NoticeView::new("Start-up problems", messages, &Keymap::defaults());
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

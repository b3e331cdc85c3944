//! A dismissable box of messages over the pane — used to show configuration problems once the
//! screen is up (they cannot be printed: the alternate screen would hide them).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph, Widget, Wrap};
use unipi_widgets::theme::Theme;

use crate::views::{View, ViewAction};

pub struct NoticeView {
    title: String,
    lines: Vec<String>,
}

impl NoticeView {
    pub fn new(title: &str, lines: Vec<String>) -> Self {
        NoticeView {
            title: title.to_string(),
            lines,
        }
    }
}

impl View for NoticeView {
    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        let width = area.width.saturating_sub(4).clamp(1, 100);
        let wanted = u16::try_from(self.lines.len())
            .unwrap_or(u16::MAX)
            .saturating_add(4);
        let height = wanted.min(area.height);
        let rect = Rect::new(
            area.x + (area.width - width) / 2,
            area.y + (area.height - height) / 2,
            width,
            height,
        );
        Clear.render(rect, buf);
        let mut text: Vec<Line> = self
            .lines
            .iter()
            .map(|l| Line::styled(l.clone(), theme.overlay_text))
            .collect();
        text.push(Line::default());
        text.push(Line::styled("Esc or Enter to close", theme.muted));
        Paragraph::new(text)
            .wrap(Wrap { trim: false })
            .block(
                Block::bordered()
                    .border_style(theme.overlay_border)
                    .title(Line::styled(
                        format!(" {} ", self.title),
                        theme.overlay_title,
                    )),
            )
            .render(rect, buf);
    }

    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction {
        match key.code {
            KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q') => ViewAction::Close,
            _ => ViewAction::Consumed,
        }
    }
}

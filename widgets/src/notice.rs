//! A box of messages over the pane (the start-up problems: bad config files, a module that could
//! not start): every message is wrapped to the box's width and bulleted, nothing is cut off, the
//! box scrolls when the messages do not fit, and its bottom border says how to close it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::overlay::{BORDER, centred_box, render_scrolled, text_width};
use crate::text::{width, wrap};
use crate::theme::Theme;

/// The widest a notice box gets.
const MAX_WIDTH: u16 = 100;
const BULLET: &str = "• ";

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NoticeModel {
    pub title: String,
    pub messages: Vec<String>,
    /// The closing hint on the bottom border ("Esc close").
    pub hint: String,
    /// First content row shown.
    pub scroll: usize,
}

/// Where the box goes on `screen`: centred, as tall as its wrapped messages allow.
pub fn notice_area(model: &NoticeModel, screen: Rect) -> Rect {
    centred_box(screen, MAX_WIDTH, |width| {
        lines(model, text_width(width)).len()
    })
}

/// The largest useful `scroll` on `screen`.
pub fn max_scroll(model: &NoticeModel, screen: Rect) -> usize {
    let area = notice_area(model, screen);
    let visible = usize::from(area.height).saturating_sub(2 * BORDER);
    lines(model, text_width(area.width))
        .len()
        .saturating_sub(visible)
}

pub fn render(model: &NoticeModel, theme: &Theme, screen: Rect, buf: &mut Buffer) {
    let area = notice_area(model, screen);
    let styled: Vec<Line> = lines(model, text_width(area.width))
        .into_iter()
        .map(|(bullet, text)| {
            Line::from(vec![
                Span::styled(bullet, theme.warning),
                Span::styled(text, theme.overlay_text),
            ])
        })
        .collect();
    render_scrolled(
        &model.title,
        &model.hint,
        &styled,
        model.scroll,
        theme,
        area,
        buf,
    );
}

/// The content rows as (bullet or indent, text), a blank row between messages.
fn lines(model: &NoticeModel, max: usize) -> Vec<(String, String)> {
    let indent = width(BULLET);
    let mut rows = Vec::new();
    for (index, message) in model.messages.iter().enumerate() {
        if index > 0 {
            rows.push((String::new(), String::new()));
        }
        for (line_no, line) in wrap(message, max.saturating_sub(indent))
            .into_iter()
            .enumerate()
        {
            let lead = if line_no == 0 {
                BULLET.to_owned()
            } else {
                " ".repeat(indent)
            };
            rows.push((lead, line));
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::render_to_string;

    fn model(count: usize) -> NoticeModel {
        NoticeModel {
            title: "Start-up problems (defaults used where a file was bad)".to_owned(),
            messages: (0..count)
                .map(|i| {
                    format!(
                        "/home/ada/.unipi/config/module{i}.json:3:14: expected a number for \
                         `maxOutputBytes`, found a string; the default (20 MiB) is used"
                    )
                })
                .collect(),
            hint: "Esc close".to_owned(),
            scroll: 0,
        }
    }

    #[test]
    fn wrapped_messages_fit_and_say_how_to_close() {
        crate::assert_ui_snapshot!(
            "notice_two_messages_80x20",
            render_to_string(80, 20, |area, buf| render(
                &model(2),
                &Theme::plain(),
                area,
                buf
            ))
        );
    }

    #[test]
    fn eight_long_messages_scroll_instead_of_being_cut() {
        let screen = Rect::new(0, 0, 80, 24);
        let many = model(8);
        let max = max_scroll(&many, screen);
        assert!(max > 0, "8 wrapped messages do not fit in 24 rows");
        crate::assert_ui_snapshot!(
            "notice_eight_messages_top_80x24",
            render_to_string(80, 24, |area, buf| render(
                &many,
                &Theme::plain(),
                area,
                buf
            ))
        );
        let end = NoticeModel {
            scroll: max,
            ..many.clone()
        };
        let text = render_to_string(80, 24, |area, buf| render(&end, &Theme::plain(), area, buf));
        assert!(text.contains("module7.json"), "{text}");
        assert!(text.contains("Esc close"), "{text}");
    }
}

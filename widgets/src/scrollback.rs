//! The scrollback badge: while the user browses the pane's history, a small label at the pane's
//! top-right says how far back they are and how to get back to live output. It sits on top of
//! Pi's screen, so it stays as small as it can and gives up words before it gives up the number:
//! full text, then without the return hint, then just the arrow and the count.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use crate::text::{truncate_end, width};
use crate::theme::Theme;

/// What the badge says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScrollbackModel {
    /// How many lines above live output the top of the view is.
    pub lines_back: usize,
    /// The keys that return to live output, e.g. "Shift+PgDn/End"; from the keymap.
    pub return_keys: Option<String>,
}

impl ScrollbackModel {
    /// The longest form: "↑ 123 lines back · Shift+PgDn/End to return".
    pub fn text(&self) -> String {
        match self.return_keys.as_deref().filter(|k| !k.is_empty()) {
            Some(keys) => format!("{} · {keys} to return", self.count_text()),
            None => self.count_text(),
        }
    }

    fn count_text(&self) -> String {
        let unit = if self.lines_back == 1 {
            "line"
        } else {
            "lines"
        };
        format!("↑ {} {unit} back", self.lines_back)
    }

    fn short_text(&self) -> String {
        format!("↑ {}", self.lines_back)
    }

    /// The longest form that fits in `max` columns (padding excluded).
    fn fitted_text(&self, max: usize) -> String {
        [self.text(), self.count_text(), self.short_text()]
            .into_iter()
            .find(|text| width(text) <= max)
            .unwrap_or_else(|| truncate_end(&self.short_text(), max))
    }
}

/// Where the badge goes in `pane`: its top row, flush right.
pub fn badge_area(model: &ScrollbackModel, pane: Rect) -> Rect {
    if pane.is_empty() {
        return Rect {
            width: 0,
            height: 0,
            ..pane
        };
    }
    let text = model.fitted_text(usize::from(pane.width).saturating_sub(2 * PADDING));
    let w = u16::try_from(width(&text) + 2 * PADDING)
        .unwrap_or(u16::MAX)
        .min(pane.width);
    Rect {
        x: pane.right() - w,
        y: pane.y,
        width: w,
        height: 1,
    }
}

/// Draw the badge at the top-right of `pane`.
pub fn render(model: &ScrollbackModel, theme: &Theme, pane: Rect, buf: &mut Buffer) {
    let area = badge_area(model, pane);
    if area.is_empty() {
        return;
    }
    let text = model.fitted_text(usize::from(area.width).saturating_sub(2 * PADDING));
    buf.set_style(area, theme.scrollback_badge);
    let x = area.x + u16::from(area.width > 2 * PADDING as u16);
    buf.set_stringn(
        x,
        area.y,
        &text,
        usize::from(area.right() - x),
        theme.scrollback_badge,
    );
}

/// One blank column each side so the badge reads as a label, not as Pi's text.
const PADDING: usize = 1;

#[cfg(test)]
mod tests {
    use ratatui::style::{Color, Modifier, Style};

    use super::*;
    use crate::test_support::render_to_string;

    fn model(lines_back: usize) -> ScrollbackModel {
        ScrollbackModel {
            lines_back,
            return_keys: Some("Shift+PgDn/End".to_owned()),
        }
    }

    fn snapshot(model: &ScrollbackModel, width: u16) -> String {
        render_to_string(width, 2, |area, buf| {
            render(model, &Theme::plain(), area, buf);
        })
    }

    #[test]
    fn badge_gives_up_words_before_the_count() {
        for width in [80, 30, 10] {
            crate::assert_ui_snapshot!(
                format!("scrollback_badge_{width}"),
                snapshot(&model(123), width)
            );
        }
        crate::assert_ui_snapshot!("scrollback_badge_one_line", snapshot(&model(1), 60));
    }

    #[test]
    fn text_forms() {
        let cases = [
            (
                model(123),
                100,
                "↑ 123 lines back · Shift+PgDn/End to return",
            ),
            (model(123), 20, "↑ 123 lines back"),
            (model(1), 20, "↑ 1 line back"),
            (model(123), 8, "↑ 123"),
            (model(123456), 4, "↑ 1…"),
            (
                ScrollbackModel {
                    lines_back: 5,
                    return_keys: None,
                },
                100,
                "↑ 5 lines back",
            ),
        ];
        for (model, max, want) in cases {
            assert_eq!(model.fitted_text(max), want, "{model:?} in {max}");
        }
    }

    #[test]
    fn never_panics_on_tiny_panes() {
        for width in 1..=12 {
            snapshot(&model(9_999_999), width);
        }
        let mut buf = Buffer::empty(Rect::new(0, 0, 4, 1));
        render(&model(1), &Theme::plain(), Rect::new(0, 0, 0, 0), &mut buf);
    }

    #[test]
    fn badge_uses_its_style_and_plain_is_colourless() {
        let theme = Theme {
            scrollback_badge: Style::new().fg(Color::Black).bg(Color::Yellow),
            ..Theme::plain()
        };
        let mut buf = Buffer::empty(Rect::new(0, 0, 60, 1));
        render(&model(7), &theme, buf.area, &mut buf);
        let area = badge_area(&model(7), buf.area);
        assert_eq!(area.right(), 60);
        assert_eq!(buf[(area.x, 0)].bg, Color::Yellow);
        assert_eq!(buf[(area.x.saturating_sub(1), 0)].bg, Color::Reset);

        let mut buf = Buffer::empty(Rect::new(0, 0, 60, 1));
        render(&model(7), &Theme::plain(), buf.area, &mut buf);
        assert!(
            buf.content()
                .iter()
                .all(|c| c.fg == Color::Reset && c.bg == Color::Reset)
        );
        assert!(buf[(area.x, 0)].modifier.contains(Modifier::REVERSED));
    }
}

//! The `/btw` box: a side question and the sidekick's answer, over the pane and outside the
//! conversation. It shows the question, then "asking…", the answer (wrapped, scrolled with the
//! keys) or why there is none, the call's tokens, cost and saving, a notice and the keys — among
//! them the explicit one that adds the exchange to the conversation.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Widget};

use crate::text::{truncate_end, wrap};
use crate::theme::Theme;

/// The widest the text gets.
const MAX_TEXT_WIDTH: usize = 84;

/// Where the answer stands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum BtwAnswer {
    #[default]
    Asking,
    Answered {
        text: String,
        /// `1,234 tokens · $0.0003 · saved $0.0180`.
        usage: String,
    },
    Failed(String),
}

/// What the box shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BtwModel {
    pub question: String,
    /// The sidekick answering (`provider/id`).
    pub sidekick: String,
    pub answer: BtwAnswer,
    /// The first answer row shown.
    pub scroll: usize,
    pub notice: Option<String>,
    pub keys: String,
}

/// The box for `screen`: its area, the text width, and how many answer rows fit.
fn geometry(model: &BtwModel, screen: Rect) -> Option<(Rect, usize, usize, Vec<String>)> {
    let text_width = MAX_TEXT_WIDTH.min(usize::from(screen.width).saturating_sub(4));
    if text_width < 16 {
        return None;
    }
    let question = wrap(&format!("Q: {}", model.question), text_width);
    let body = match &model.answer {
        BtwAnswer::Asking => vec!["Asking the sidekick…".to_owned()],
        BtwAnswer::Answered { text, .. } => wrap(text, text_width),
        BtwAnswer::Failed(error) => wrap(&format!("No answer: {error}"), text_width),
    };
    // question, blank, body, blank, usage, notice, the keys (wrapped to the width)
    let keys = super::key_rows(&model.keys, text_width).len();
    let fixed = question.len().min(3) + 1 + 1 + 1 + 1 + keys;
    let height = (fixed + body.len() + 2).min(usize::from(screen.height));
    if height < fixed + 3 {
        return None;
    }
    let area = super::centred_box(screen, text_width, height);
    Some((area, text_width, height - 2 - fixed, body))
}

/// How far the answer scrolls on `screen`.
pub fn max_scroll(model: &BtwModel, screen: Rect) -> usize {
    geometry(model, screen).map_or(0, |(_, _, visible, body)| {
        body.len().saturating_sub(visible)
    })
}

/// Draws the box centred on `screen`.
pub fn render(model: &BtwModel, theme: &Theme, screen: Rect, buf: &mut Buffer) {
    let Some((area, max, visible, body)) = geometry(model, screen) else {
        return;
    };
    Clear.render(area, buf);
    let title = format!("Side question · {}", model.sidekick);
    let scroll = model.scroll.min(body.len().saturating_sub(visible));
    let text = crate::overlay::frame(&title, "", scroll, body.len(), theme, area, buf);
    let mut lines: Vec<Line<'static>> = wrap(&format!("Q: {}", model.question), max)
        .into_iter()
        .take(3)
        .map(|row| Line::styled(row, theme.overlay_title))
        .collect();
    lines.push(Line::default());
    let body_style = match model.answer {
        BtwAnswer::Answered { .. } => theme.overlay_text,
        BtwAnswer::Asking => theme.muted,
        BtwAnswer::Failed(_) => theme.error,
    };
    lines.extend(
        body.iter()
            .skip(scroll)
            .take(visible)
            .map(|row| Line::styled(row.clone(), body_style)),
    );
    for (row, line) in lines.iter().enumerate() {
        buf.set_line(text.x, text.y + row as u16, line, text.width);
    }
    let keys = super::key_rows(&model.keys, max).len() as u16;
    let bottom = text.y + text.height;
    if let BtwAnswer::Answered { usage, .. } = &model.answer {
        buf.set_line(
            text.x,
            bottom.saturating_sub(keys + 2),
            &Line::styled(truncate_end(usage, max), theme.muted),
            text.width,
        );
    }
    let notice = model.notice.as_deref().map(|notice| (notice, theme.accent));
    super::notice_and_keys(buf, text, max, notice, &model.keys, theme);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::render_to_string;

    #[test]
    fn asking_then_answered_with_usage_and_keys() {
        let mut model = BtwModel {
            question: "what does the retry flag do?".into(),
            sidekick: "anthropic/claude-haiku-4-5".into(),
            keys: "i add to the conversation · y copy · ↑↓ scroll · Esc close".into(),
            ..BtwModel::default()
        };
        let draw = |model: &BtwModel| {
            render_to_string(90, 16, |area, buf| {
                render(model, &Theme::plain(), area, buf)
            })
        };
        assert!(draw(&model).contains("Asking the sidekick…"));
        model.answer = BtwAnswer::Answered {
            text: "It retries a failed provider call once, after a pause, before the turn \
                   fails. Pi's settings turn it off with retry.enabled = false."
                .into(),
            usage: "1,234 tokens · $0.0003 · saved $0.0180".into(),
        };
        model.notice = Some("Added to the conversation".into());
        let screen = draw(&model);
        assert!(screen.contains("saved $0.0180"), "{screen}");
        crate::assert_ui_snapshot!("fusion_btw_answered", screen);
        model.answer = BtwAnswer::Failed("the sidekick did not answer within 120s".into());
        assert!(draw(&model).contains("No answer: the sidekick did not answer"));
    }

    #[test]
    fn a_long_answer_scrolls() {
        let model = BtwModel {
            question: "q".into(),
            sidekick: "p/s".into(),
            answer: BtwAnswer::Answered {
                text: (0..40)
                    .map(|n| format!("line {n}"))
                    .collect::<Vec<_>>()
                    .join("\n"),
                usage: String::new(),
            },
            scroll: 5,
            keys: "Esc close".into(),
            ..BtwModel::default()
        };
        let screen = Rect::new(0, 0, 60, 14);
        assert_eq!(max_scroll(&model, screen), 40 - (14 - 2 - 6));
        let text = render_to_string(60, 14, |area, buf| {
            render(&model, &Theme::plain(), area, buf)
        });
        assert!(
            text.contains("line 5") && !text.contains("line 4 "),
            "{text}"
        );
    }
}

//! The `/btw` thread overlay: a side conversation drawn over the pane, outside the main one.
//! Top to bottom: the summary (how many exchanges, who answers, asking or idle), the transcript
//! (`You` / `Assistant` blocks, turns apart by a rule; it follows the latest unless scrolled),
//! the status line, the input line where the next question is typed, and the keys.

use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

use crate::fusion::key_rows;
use crate::overlay::{self, frame};
use crate::text::{truncate_end, width, wrap};
use crate::theme::Theme;

/// The widest the box gets.
const MAX_WIDTH: u16 = 110;
/// The rows a box is at least and at most (borders included), screen allowing.
const MIN_HEIGHT: usize = 18;
const MAX_HEIGHT: usize = 32;
/// The rule between turns.
const RULE_WIDTH: usize = 40;
/// What the input line starts with.
const PROMPT: &str = "› ";
/// The text when there is nothing yet.
pub const EMPTY: &str = "No BTW thread yet. Ask a side question to start one.";

/// One exchange.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BtwTurn {
    pub question: String,
    pub answer: String,
}

/// What the overlay shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BtwThreadModel {
    /// A tangent (no main context) rather than a contextual thread.
    pub tangent: bool,
    /// Who answers (`provider/id (main model)`), or why nobody can.
    pub answerer: String,
    pub turns: Vec<BtwTurn>,
    /// The question on its way, if any.
    pub asking: Option<String>,
    pub status: String,
    /// The status is an error.
    pub failed: bool,
    pub input: String,
    /// In characters from the start of `input`.
    pub cursor: usize,
    /// The first transcript row shown; `None` follows the latest.
    pub scroll: Option<usize>,
    pub keys: String,
}

/// Where things go on `screen`.
struct Layout {
    area: Rect,
    text: Rect,
    transcript: Vec<Line<'static>>,
    visible: usize,
}

fn layout(model: &BtwThreadModel, theme: &Theme, screen: Rect) -> Option<Layout> {
    let preferred = (usize::from(screen.height) * 78 / 100).clamp(MIN_HEIGHT, MAX_HEIGHT);
    let area = overlay::centred_box(screen, MAX_WIDTH, |_| preferred - 2);
    let max = overlay::text_width(area.width);
    let keys = key_rows(&model.keys, max).len();
    // summary, rule, [transcript], rule, status, input, keys
    let chrome = 5 + keys;
    let inner = usize::from(area.height).saturating_sub(2);
    if max < 20 || inner < chrome + 3 {
        return None;
    }
    // Inside the border and the padding, as `overlay::frame` lays it out.
    let text = Rect {
        x: area.x + (overlay::BORDER + overlay::PADDING) as u16,
        y: area.y + overlay::BORDER as u16,
        width: max as u16,
        height: inner as u16,
    };
    Some(Layout {
        area,
        text,
        transcript: transcript(model, theme, max),
        visible: inner - chrome,
    })
}

/// The transcript's lines at `max` columns.
fn transcript(model: &BtwThreadModel, theme: &Theme, max: usize) -> Vec<Line<'static>> {
    let mut lines: Vec<Line<'static>> = Vec::new();
    let block = |lines: &mut Vec<Line<'static>>, who: &str, text: &str, style| {
        lines.push(Line::styled(who.to_owned(), style));
        for row in wrap(text.trim(), max.saturating_sub(2)) {
            lines.push(Line::from(format!("  {row}")));
        }
    };
    for (index, turn) in model.turns.iter().enumerate() {
        if index > 0 {
            lines.push(Line::styled("─".repeat(RULE_WIDTH.min(max)), theme.muted));
        }
        block(&mut lines, "You", &turn.question, theme.accent);
        block(&mut lines, "Assistant", &turn.answer, theme.status_done);
    }
    if let Some(question) = &model.asking {
        if !model.turns.is_empty() {
            lines.push(Line::styled("─".repeat(RULE_WIDTH.min(max)), theme.muted));
        }
        block(&mut lines, "You", question, theme.accent);
        lines.push(Line::styled("  ▍ asking…", theme.muted));
    }
    if lines.is_empty() {
        lines.push(Line::styled(EMPTY, theme.muted));
    }
    lines
}

/// The transcript's rows and how many show at once on `screen` (the view scrolls with them).
pub fn transcript_rows(model: &BtwThreadModel, screen: Rect) -> (usize, usize) {
    layout(model, &Theme::plain(), screen)
        .map_or((0, 0), |layout| (layout.transcript.len(), layout.visible))
}

/// Draws the overlay centred on `screen`.
pub fn render(model: &BtwThreadModel, theme: &Theme, screen: Rect, buf: &mut Buffer) {
    let Some(layout) = layout(model, theme, screen) else {
        return;
    };
    Clear.render(layout.area, buf);
    let total = layout.transcript.len();
    let last_page = total.saturating_sub(layout.visible);
    let first = model
        .scroll
        .map_or(last_page, |scroll| scroll.min(last_page));
    let title = if model.tangent {
        "BTW tangent · a side thread outside the conversation"
    } else {
        "BTW · a side thread outside the conversation"
    };
    let text = frame(title, "", 0, 0, theme, layout.area, buf);
    let max = usize::from(text.width);
    let mut row = text.y;
    let mut put = |line: &Line<'_>, buf: &mut Buffer| {
        buf.set_line(text.x, row, line, text.width);
        row += 1;
    };
    put(
        &summary_line(model, first, total, layout.visible, theme, max),
        buf,
    );
    let rule = Line::styled("─".repeat(max), theme.overlay_border);
    put(&rule, buf);
    for index in 0..layout.visible {
        let line = layout
            .transcript
            .get(first + index)
            .cloned()
            .unwrap_or_default();
        put(&line, buf);
    }
    put(&rule, buf);
    let status_style = if model.failed {
        theme.error
    } else {
        theme.warning
    };
    put(
        &Line::styled(truncate_end(&model.status, max), status_style),
        buf,
    );
    put(&input_line(model, theme, max), buf);
    for keys in key_rows(&model.keys, max) {
        put(&Line::styled(keys, theme.overlay_key), buf);
    }
}

fn summary_line(
    model: &BtwThreadModel,
    first: usize,
    total: usize,
    visible: usize,
    theme: &Theme,
    max: usize,
) -> Line<'static> {
    let count = model.turns.len();
    let mut text = format!(
        "{count} exchange{} · {} · {}",
        if count == 1 { "" } else { "s" },
        model.answerer,
        if model.asking.is_some() {
            "asking"
        } else {
            "idle"
        }
    );
    let (above, below) = (first, total.saturating_sub(first + visible));
    if above > 0 || below > 0 {
        text.push_str(&format!(" · ↑{above} ↓{below}"));
    }
    Line::styled(truncate_end(&text, max), theme.muted)
}

/// The input row: the prompt and the end of the text that fits with the cursor.
fn input_line(model: &BtwThreadModel, theme: &Theme, max: usize) -> Line<'static> {
    let shown = input_tail(model, max);
    Line::from(vec![
        Span::styled(PROMPT, theme.accent),
        Span::styled(shown, theme.overlay_text),
    ])
}

/// The part of the input shown: all of it, or its end when it is wider than the row.
fn input_tail(model: &BtwThreadModel, max: usize) -> String {
    let room = max.saturating_sub(width(PROMPT) + 1);
    let before: String = model.input.chars().take(model.cursor).collect();
    let skip = width(&before).saturating_sub(room);
    model.input.chars().skip(skip).collect::<String>()
}

/// Where the terminal cursor goes: in the input line, after the text before the cursor.
pub fn cursor_position(model: &BtwThreadModel, screen: Rect) -> Option<Position> {
    let layout = layout(model, &Theme::plain(), screen)?;
    let max = usize::from(layout.text.width);
    let keys = key_rows(&model.keys, max).len() as u16;
    let row = layout.text.y + layout.text.height - keys - 1;
    let room = max.saturating_sub(width(PROMPT) + 1);
    let before: String = model.input.chars().take(model.cursor).collect();
    let x = width(PROMPT) + width(&before).min(room);
    Some(Position::new(layout.text.x + x as u16, row))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::render_to_string;

    fn thread() -> BtwThreadModel {
        BtwThreadModel {
            answerer: "unipi-scripted/scripted-small (sidekick)".into(),
            turns: vec![
                BtwTurn {
                    question: "what does the retry flag do?".into(),
                    answer: "It retries a failed provider call once, after a pause, before the \
                             turn fails. Pi's settings turn it off with retry.enabled = false."
                        .into(),
                },
                BtwTurn {
                    question: "and where is it set?".into(),
                    answer: "In ~/.pi/agent/settings.json, under retry.".into(),
                },
            ],
            asking: Some("does the workbench change it?".into()),
            status: "Asking unipi-scripted/scripted-small…".into(),
            input: "/btw:inject".into(),
            cursor: 11,
            keys: "Enter ask · PgUp/PgDn scroll · Esc close (the thread is kept)".into(),
            ..BtwThreadModel::default()
        }
    }

    fn draw(model: &BtwThreadModel, cols: u16, rows: u16) -> String {
        render_to_string(cols, rows, |area, buf| {
            render(model, &Theme::plain(), area, buf)
        })
    }

    #[test]
    fn the_thread_at_80x24_and_120x40() {
        let model = thread();
        let small = draw(&model, 80, 24);
        assert!(small.contains("2 exchanges"), "{small}");
        assert!(small.contains("▍ asking…"), "follows the latest: {small}");
        crate::assert_ui_snapshot!("btw_thread_80x24", small);
        let large = draw(&model, 120, 40);
        assert!(large.contains("what does the retry flag do?"), "{large}");
        crate::assert_ui_snapshot!("btw_thread_120x40", large);
    }

    #[test]
    fn an_empty_tangent_and_a_failure_at_80x24() {
        let model = BtwThreadModel {
            tangent: true,
            answerer: "unipi-scripted/scripted-big (main model)".into(),
            status: "Request failed: the side Pi did not answer within 120s. The thread is kept."
                .into(),
            failed: true,
            keys: "Enter ask · Esc close".into(),
            ..BtwThreadModel::default()
        };
        let screen = draw(&model, 80, 24);
        assert!(screen.contains(EMPTY), "{screen}");
        assert!(screen.contains("BTW tangent"), "{screen}");
        crate::assert_ui_snapshot!("btw_tangent_empty_80x24", screen);
    }

    #[test]
    fn scrolled_up_it_says_what_is_above_and_below() {
        let mut model = thread();
        model.asking = None;
        model.turns = (0..12)
            .map(|n| BtwTurn {
                question: format!("question {n}"),
                answer: format!("answer {n}"),
            })
            .collect();
        let screen = Rect::new(0, 0, 80, 24);
        let (total, visible) = transcript_rows(&model, screen);
        assert!(total > visible, "{total} > {visible}");
        model.scroll = Some(0);
        let text = draw(&model, 80, 24);
        assert!(text.contains("question 0"), "{text}");
        assert!(text.contains(&format!("↑0 ↓{}", total - visible)), "{text}");
        let cursor = cursor_position(&model, screen).unwrap();
        let row: String = text.lines().nth(usize::from(cursor.y)).unwrap().into();
        assert!(row.contains("› /btw:inject"), "{row}");
    }
}

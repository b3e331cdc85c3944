//! The question modal (`ask_user`): a centred box over the pane with the question's context
//! (muted), the question, its numbered options — the cursor `›`, a tick box in a multi-select
//! question, the description under each, a note the user wrote, a mark on options that end the
//! question (`↵ ends the turn`, `↗ new task`) or are recommended — then the editor when the user
//! types, the countdown of a question with a timeout, one line of feedback and the key hints.
//!
//! The editor wraps by character (so the cursor maps to a cell exactly) and shows a line break
//! as `↵`; [`cursor_position`] lays the box out the same way to place the terminal cursor. A box
//! taller than the screen scrolls to keep the cursor's row (or the editor) in view, with the
//! countdown, notice and keys pinned below.

use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

use crate::overlay::{BORDER, PADDING};
use crate::text::{truncate_end, width, wrap};
use crate::theme::Theme;

/// The box's text width (less on a narrower screen): wider screens keep a readable line
/// length. The box keeps it whatever it shows — the editor opening, text typed, other hints — so
/// it never jumps while the user answers.
const TEXT_WIDTH: usize = 76;
/// The editor's left edge.
const EDITOR_BAR: &str = "┃ ";

/// What marks a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowMark {
    /// A plain option.
    None,
    /// Choosing it asks for text.
    TakesText,
    /// Ends the agent's turn.
    EndsTurn,
    /// Starts a new task.
    NewTask,
}

impl RowMark {
    fn suffix(self) -> &'static str {
        match self {
            RowMark::None => "",
            RowMark::TakesText => " ✎",
            RowMark::EndsTurn => " ↵ ends the turn",
            RowMark::NewTask => " ↗ new task",
        }
    }
}

/// One option row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AskRow {
    pub label: String,
    pub description: Option<String>,
    /// `Some` in a multi-select question (and for the own-answer row there): ticked or not.
    pub tick: Option<bool>,
    /// What the user wrote on it (the own-answer row: the answer).
    pub note: Option<String>,
    pub mark: RowMark,
    pub recommended: bool,
}

/// The open editor, under row `row`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AskEditor {
    pub row: usize,
    pub text: String,
    /// In characters from the start of `text`.
    pub cursor: usize,
}

/// Everything the modal draws.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AskModel {
    /// The border's title (`Question from the agent · 1 of 2`).
    pub title: String,
    pub context: Option<String>,
    pub question: String,
    pub rows: Vec<AskRow>,
    pub cursor: usize,
    pub editor: Option<AskEditor>,
    /// `⏱ 25s left · then PostgreSQL`.
    pub countdown: Option<String>,
    /// One line of feedback.
    pub notice: Option<String>,
    /// Key hints (key, what it does), from the view's key table.
    pub keys: Vec<(String, String)>,
    /// How to leave, on the bottom border (`Esc cancel`).
    pub close: String,
}

/// One laid-out content line, and which row it belongs to (for scrolling).
struct Laid<'a> {
    line: Line<'a>,
    row: Option<usize>,
}

struct Layout<'a> {
    area: Rect,
    text: Rect,
    lines: Vec<Laid<'a>>,
    footer: Vec<Line<'a>>,
    first: usize,
    visible: usize,
    /// The editor's cursor: (content line, column).
    cursor: Option<(usize, usize)>,
}

/// Draws the modal centred on `screen`. Too small for a border and one row, it draws nothing.
pub fn render(model: &AskModel, theme: &Theme, screen: Rect, buf: &mut Buffer) {
    let Some(layout) = layout(model, theme, screen) else {
        return;
    };
    Clear.render(layout.area, buf);
    let text = crate::overlay::frame(&model.title, &model.close, 0, 0, theme, layout.area, buf);
    for (index, laid) in layout
        .lines
        .iter()
        .skip(layout.first)
        .take(layout.visible)
        .enumerate()
    {
        buf.set_line(text.x, text.y + index as u16, &laid.line, text.width);
    }
    for (index, line) in layout.footer.iter().enumerate() {
        let y = text.y + (layout.visible + index) as u16;
        buf.set_line(text.x, y, line, text.width);
    }
    if layout.lines.len() > layout.visible {
        let marker = format!(
            " {}-{}/{} ",
            layout.first + 1,
            (layout.first + layout.visible).min(layout.lines.len()),
            layout.lines.len()
        );
        let area = layout.area;
        let x = (area.x + area.width).saturating_sub(width(&marker) as u16 + 1);
        buf.set_string(x, area.y + area.height - 1, marker, theme.overlay_border);
    }
}

/// Where the terminal cursor goes while the editor is open.
pub fn cursor_position(model: &AskModel, theme: &Theme, screen: Rect) -> Option<Position> {
    let layout = layout(model, theme, screen)?;
    let (line, column) = layout.cursor?;
    let row = line
        .checked_sub(layout.first)
        .filter(|r| *r < layout.visible)?;
    Some(Position {
        x: layout.text.x + column as u16,
        y: layout.text.y + row as u16,
    })
}

fn layout<'a>(model: &'a AskModel, theme: &Theme, screen: Rect) -> Option<Layout<'a>> {
    let chrome = 2 * (BORDER + PADDING);
    let room = usize::from(screen.width).saturating_sub(chrome);
    let text_width = TEXT_WIDTH.min(room);
    if text_width < 8 || screen.height < 2 * BORDER as u16 + 2 {
        return None;
    }
    let (lines, cursor) = content(model, theme, text_width);
    let footer = footer(model, theme, text_width);
    let box_width = text_width + chrome;
    let box_height = (lines.len() + footer.len() + 2 * BORDER).min(usize::from(screen.height));
    if box_height < footer.len() + 2 * BORDER + 1 {
        return None;
    }
    let area = Rect {
        x: screen.x + (screen.width - box_width as u16) / 2,
        y: screen.y + (screen.height - box_height as u16) / 2,
        width: box_width as u16,
        height: box_height as u16,
    };
    let visible = box_height - 2 * BORDER - footer.len();
    // Keep the editor's cursor, else the selected row, in view (its whole block when it fits).
    let focus = match cursor {
        Some((line, _)) => (line, line),
        None => {
            let rows: Vec<usize> = lines
                .iter()
                .enumerate()
                .filter(|(_, laid)| laid.row == Some(model.cursor))
                .map(|(index, _)| index)
                .collect();
            (
                rows.first().copied().unwrap_or(0),
                rows.last().copied().unwrap_or(0),
            )
        }
    };
    let first = if focus.1 < visible {
        0
    } else if focus.1 - focus.0 < visible {
        focus.1 + 1 - visible
    } else {
        focus.0
    };
    let text = Rect {
        x: area.x + (BORDER + PADDING) as u16,
        y: area.y + BORDER as u16,
        width: text_width as u16,
        height: area.height.saturating_sub(2 * BORDER as u16),
    };
    Some(Layout {
        area,
        text,
        lines,
        footer,
        first,
        visible,
        cursor,
    })
}

/// The scrolling part: context, question, rows (with descriptions, notes and the editor).
fn content<'a>(
    model: &'a AskModel,
    theme: &Theme,
    text_width: usize,
) -> (Vec<Laid<'a>>, Option<(usize, usize)>) {
    let mut lines = Vec::new();
    let plain = |line: Line<'a>| Laid { line, row: None };
    if let Some(context) = &model.context {
        for line in wrap(context, text_width) {
            lines.push(plain(Line::from(Span::styled(line, theme.muted))));
        }
        lines.push(plain(Line::default()));
    }
    let bold = theme.accent.add_modifier(Modifier::BOLD);
    for line in wrap(&model.question, text_width) {
        lines.push(plain(Line::from(Span::styled(line, bold))));
    }
    lines.push(plain(Line::default()));
    let mut cursor = None;
    // Descriptions, notes and the editor line up under the label: `› 1. `.
    let digits = model.rows.len().max(1).to_string().len();
    let indent_width = 2 + digits + 2;
    let under = text_width.saturating_sub(indent_width).max(1);
    for (index, row) in model.rows.iter().enumerate() {
        let selected = index == model.cursor;
        lines.push(Laid {
            line: row_line(index, digits, row, selected, theme, text_width),
            row: Some(index),
        });
        let indent = " ".repeat(indent_width);
        if let Some(description) = &row.description {
            for line in wrap(description, under) {
                lines.push(Laid {
                    line: Line::from(vec![
                        Span::raw(indent.clone()),
                        Span::styled(line, theme.muted),
                    ]),
                    row: Some(index),
                });
            }
        }
        let editing = model.editor.as_ref().filter(|editor| editor.row == index);
        if let Some(editor) = editing {
            let (rows, (line, column)) =
                editor_lines(editor, under.saturating_sub(width(EDITOR_BAR)));
            cursor = Some((
                lines.len() + line,
                indent_width + width(EDITOR_BAR) + column,
            ));
            for text in rows {
                lines.push(Laid {
                    line: Line::from(vec![
                        Span::raw(indent.clone()),
                        Span::styled(EDITOR_BAR, theme.accent),
                        Span::styled(text, theme.overlay_text),
                    ]),
                    row: Some(index),
                });
            }
        } else if let Some(note) = &row.note {
            for line in wrap(&format!("“{note}”"), under) {
                lines.push(Laid {
                    line: Line::from(vec![
                        Span::raw(indent.clone()),
                        Span::styled(line, theme.accent),
                    ]),
                    row: Some(index),
                });
            }
        }
    }
    (lines, cursor)
}

/// `› 1. [x] Label ✎  (recommended)`.
fn row_line<'a>(
    index: usize,
    digits: usize,
    row: &'a AskRow,
    selected: bool,
    theme: &Theme,
    text_width: usize,
) -> Line<'a> {
    let marker = if selected { "› " } else { "  " };
    let number = format!("{:>digits$}. ", index + 1);
    let tick = match row.tick {
        Some(true) => "[x] ",
        Some(false) => "[ ] ",
        None => "",
    };
    let label_style = if selected {
        theme.accent.add_modifier(Modifier::REVERSED)
    } else {
        theme.overlay_text
    };
    let mut tail = row.mark.suffix().to_owned();
    if row.recommended {
        tail.push_str("  (recommended)");
    }
    let room =
        text_width.saturating_sub(width(marker) + width(&number) + width(tick) + width(&tail));
    let mut spans = vec![
        Span::styled(marker, theme.accent),
        Span::styled(number, theme.muted),
        Span::styled(
            tick,
            if row.tick == Some(true) {
                theme.accent
            } else {
                theme.muted
            },
        ),
        Span::styled(truncate_end(&row.label, room.max(1)), label_style),
    ];
    if !tail.is_empty() {
        spans.push(Span::styled(tail, theme.muted));
    }
    Line::from(spans)
}

/// The editor's text cut into rows of `room` cells (a line break shown as `↵` and starting a
/// new row), and where the cursor falls: (row, column).
fn editor_lines(editor: &AskEditor, room: usize) -> (Vec<String>, (usize, usize)) {
    let room = room.max(2);
    let mut rows = vec![String::new()];
    let mut used = 0;
    let mut cursor = (0, 0);
    for (index, ch) in editor.text.chars().enumerate() {
        if index == editor.cursor {
            cursor = (rows.len() - 1, used);
        }
        let shown = if ch == '\n' { '↵' } else { ch };
        let w = width(shown.encode_utf8(&mut [0u8; 4]));
        if used + w > room {
            rows.push(String::new());
            used = 0;
            if index == editor.cursor {
                cursor = (rows.len() - 1, 0);
            }
        }
        if let Some(last) = rows.last_mut() {
            last.push(shown);
        }
        used += w;
        if ch == '\n' {
            rows.push(String::new());
            used = 0;
        }
    }
    if editor.cursor >= editor.text.chars().count() {
        if used + 1 > room {
            rows.push(String::new());
            used = 0;
        }
        cursor = (rows.len() - 1, used);
    }
    (rows, cursor)
}

/// The pinned part: the countdown, the notice and the keys.
fn footer<'a>(model: &'a AskModel, theme: &Theme, text_width: usize) -> Vec<Line<'a>> {
    let mut lines = vec![Line::default()];
    if let Some(countdown) = &model.countdown {
        lines.push(Line::from(Span::styled(
            truncate_end(countdown, text_width),
            theme.warning,
        )));
    }
    if let Some(notice) = &model.notice {
        for line in wrap(notice, text_width) {
            lines.push(Line::from(Span::styled(line, theme.accent)));
        }
    }
    let mut keys = Vec::new();
    let mut used = 0;
    let mut line: Vec<Span<'a>> = Vec::new();
    for (key, what) in &model.keys {
        let entry = width(key) + 1 + width(what);
        let gap = if line.is_empty() { 0 } else { 3 };
        if used + gap + entry > text_width && !line.is_empty() {
            keys.push(Line::from(std::mem::take(&mut line)));
            used = 0;
        }
        if !line.is_empty() {
            line.push(Span::styled(" · ", theme.muted));
            used += 3;
        }
        line.push(Span::styled(key.clone(), theme.overlay_key));
        line.push(Span::styled(format!(" {what}"), theme.muted));
        used += entry;
    }
    if !line.is_empty() {
        keys.push(Line::from(line));
    }
    lines.extend(keys);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_ui_snapshot;
    use crate::test_support::render_to_string;

    fn row(label: &str) -> AskRow {
        AskRow {
            label: label.to_owned(),
            description: None,
            tick: None,
            note: None,
            mark: RowMark::None,
            recommended: false,
        }
    }

    fn keys(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, w)| ((*k).to_owned(), (*w).to_owned()))
            .collect()
    }

    fn single() -> AskModel {
        AskModel {
            title: "Question from the agent".into(),
            context: Some(
                "The project stores sessions; the current store is a JSON file per session.".into(),
            ),
            question: "Which database should the session index use?".into(),
            rows: vec![
                AskRow {
                    description: Some("Embedded, no server, one file beside the project.".into()),
                    recommended: true,
                    ..row("SQLite")
                },
                AskRow {
                    description: Some("A server to run; worth it for several writers.".into()),
                    ..row("PostgreSQL")
                },
                AskRow {
                    mark: RowMark::EndsTurn,
                    ..row("Stop here")
                },
                AskRow {
                    mark: RowMark::TakesText,
                    ..row("Type your own answer")
                },
            ],
            cursor: 0,
            editor: None,
            countdown: None,
            notice: None,
            keys: keys(&[
                ("↑↓", "move"),
                ("Enter", "choose"),
                ("type", "to answer"),
                ("Tab", "note"),
                ("Esc", "cancel"),
            ]),
            close: "Esc cancel".into(),
        }
    }

    fn draw(model: &AskModel, width: u16, height: u16) -> String {
        render_to_string(width, height, |area, buf| {
            render(model, &Theme::plain(), area, buf)
        })
    }

    #[test]
    fn single_select() {
        assert_ui_snapshot!("ask_single", draw(&single(), 90, 24));
    }

    #[test]
    fn multi_select_with_notes() {
        let mut model = single();
        model.title = "Question from helper:explore-1 · 2 of 3".into();
        model.context = None;
        model.question = "Which checks should run before the release?".into();
        model.rows = vec![
            AskRow {
                tick: Some(true),
                ..row("Unit tests")
            },
            AskRow {
                tick: Some(true),
                mark: RowMark::TakesText,
                note: Some("only the fast ones".into()),
                ..row("End-to-end tests")
            },
            AskRow {
                tick: Some(false),
                ..row("Benchmarks")
            },
            AskRow {
                tick: Some(false),
                mark: RowMark::NewTask,
                ..row("Plan the release instead")
            },
            AskRow {
                tick: Some(false),
                mark: RowMark::TakesText,
                ..row("Type your own answer")
            },
        ];
        model.cursor = 2;
        model.notice =
            Some("Nothing ticked yet: Space ticks an option, Enter sends the ticked ones.".into());
        model.keys = keys(&[
            ("↑↓", "move"),
            ("Space", "tick"),
            ("Enter", "send"),
            ("type", "to answer"),
            ("Tab", "note"),
            ("Esc", "cancel"),
        ]);
        assert_ui_snapshot!("ask_multi_notes", draw(&model, 90, 24));
    }

    #[test]
    fn freeform_editor_and_its_cursor() {
        let mut model = single();
        model.cursor = 3;
        model.editor = Some(AskEditor {
            row: 3,
            text:
                "Neither: keep the JSON files\nbut add an index file beside them, rebuilt on start"
                    .into(),
            cursor: 12,
        });
        model.keys = keys(&[("Enter", "done"), ("Esc", "back"), ("Ctrl+U", "clear")]);
        let screen = draw(&model, 90, 26);
        assert_ui_snapshot!("ask_freeform", screen);
        let position = cursor_position(&model, &Theme::plain(), Rect::new(0, 0, 90, 26)).unwrap();
        // The test backend quotes each row: cell x is character x + 1 of the row.
        let line: Vec<char> = screen
            .lines()
            .nth(usize::from(position.y))
            .unwrap()
            .chars()
            .collect();
        let from_cursor: String = line[usize::from(position.x) + 1..].iter().collect();
        // The cursor sits on the 13th character of the text ("Neither: kee|p").
        assert!(from_cursor.starts_with("p the JSON files"), "{from_cursor}");
    }

    #[test]
    fn the_box_keeps_its_width_while_the_user_answers() {
        let screen = Rect::new(0, 0, 120, 30);
        let area = |model: &AskModel| layout(model, &Theme::plain(), screen).unwrap().area;
        let short = AskModel {
            title: "Question from the agent".into(),
            question: "Go?".into(),
            rows: vec![row("Yes"), row("No")],
            keys: keys(&[
                ("↑↓", "move"),
                ("Enter", "choose"),
                ("type", "to answer"),
                ("Tab", "note"),
                ("Esc", "cancel"),
            ]),
            close: "Esc cancel".into(),
            ..AskModel::default()
        };
        let editing = |text: &str| AskModel {
            editor: Some(AskEditor {
                row: 1,
                text: text.into(),
                cursor: text.chars().count(),
            }),
            keys: keys(&[("Enter", "done"), ("Esc", "back"), ("Ctrl+U", "clear")]),
            ..short.clone()
        };
        let noticed = AskModel {
            notice: Some("This option takes no note.".into()),
            ..short.clone()
        };
        let states = [
            short.clone(),
            editing(""),
            editing("u"),
            editing("only if it is cheap to run and someone else looks after the server"),
            noticed,
        ];
        let widths: Vec<u16> = states.iter().map(|model| area(model).width).collect();
        assert_eq!(widths, vec![widths[0]; states.len()], "{widths:?}");
        assert_eq!(area(&short).x, area(&editing("u")).x, "nor moved sideways");
        assert_ui_snapshot!(
            "ask_short_editing",
            draw(&editing("only if it is cheap to run"), 100, 14)
        );
    }

    #[test]
    fn countdown_and_launcher() {
        let mut model = single();
        model.countdown = Some("⏱ 25s left · then: SQLite".into());
        assert_ui_snapshot!("ask_timeout", draw(&model, 90, 24));
        let launcher = AskModel {
            title: "Start a new task".into(),
            context: None,
            question: "New task: write the release notes".into(),
            rows: vec![
                row("New session"),
                row("Compact and run here"),
                row("Run here"),
                row("Cancel"),
            ],
            cursor: 0,
            keys: keys(&[("↑↓", "move"), ("Enter", "choose"), ("Esc", "cancel")]),
            close: "Esc cancel".into(),
            ..AskModel::default()
        };
        assert_ui_snapshot!("ask_launcher", draw(&launcher, 60, 14));
        assert_ui_snapshot!("ask_launcher_80x24", draw(&launcher, 80, 24));
        assert_ui_snapshot!("ask_launcher_120x40", draw(&launcher, 120, 40));
    }

    #[test]
    fn narrow_and_short_screens_scroll_to_the_cursor() {
        let mut model = single();
        model.cursor = 1;
        assert_ui_snapshot!("ask_narrow", draw(&model, 36, 16));
        // Nothing at all when there is no room for a box.
        assert!(
            draw(&model, 6, 3)
                .trim_matches(|c: char| c == '"' || c.is_whitespace())
                .is_empty()
        );
    }

    #[test]
    fn the_editor_wraps_by_character_and_shows_line_breaks() {
        let editor = AskEditor {
            row: 0,
            text: "abcdef\ngh".into(),
            cursor: 9,
        };
        assert_eq!(
            editor_lines(&editor, 4),
            (vec!["abcd".into(), "ef↵".into(), "gh".into()], (2, 2))
        );
        let at_start = AskEditor {
            cursor: 0,
            ..editor.clone()
        };
        assert_eq!(editor_lines(&at_start, 4).1, (0, 0));
        let at_wrap = AskEditor {
            cursor: 4,
            ..editor
        };
        assert_eq!(editor_lines(&at_wrap, 4).1, (1, 0));
        let full = AskEditor {
            row: 0,
            text: "abcd".into(),
            cursor: 4,
        };
        assert_eq!(
            editor_lines(&full, 4),
            (vec!["abcd".into(), String::new()], (1, 0))
        );
    }
}

//! The kanban board: a full-screen view of the workflow's documents as cards in columns (To Do,
//! In Progress, Done, and Reviewed when a card is there), with overall progress and the active
//! filters on top, the milestones' progress under them (overall, then each phase, the current
//! focus marked) when the project has milestones, the documents with their progress and parser
//! warnings below, and the last action's notice and the keys at the bottom (each wrapped onto a few
//! rows rather than cut). On a terminal too narrow for every column it shows the selected column
//! alone, with arrows saying there is more either side.
//!
//! The model is plain data filled by the board's view; nothing here knows files or parsing.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

use crate::text::{truncate_end, width};
use crate::theme::Theme;

/// One card.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Card {
    pub text: String,
    /// Where it comes from: `plans/x.md:12`.
    pub source: String,
    /// The document type (`plan`, `spec`, …).
    pub kind: String,
}

/// One column of cards.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Column {
    pub title: String,
    pub cards: Vec<Card>,
}

/// One document in the documents panel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DocRow {
    pub kind: String,
    pub title: String,
    pub path: String,
    pub done: usize,
    pub total: usize,
    pub warnings: Vec<String>,
}

/// One milestone phase with its progress.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PhaseRow {
    pub name: String,
    pub done: usize,
    pub total: usize,
    /// The current focus (the first phase not finished).
    pub current: bool,
}

/// The milestones' progress (`MILESTONES.md`), shown above the columns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MilestonesRow {
    pub done: usize,
    pub total: usize,
    pub phases: Vec<PhaseRow>,
}

/// What the board shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BoardModel {
    pub columns: Vec<Column>,
    /// The milestones' progress, when the project has milestones.
    pub milestones: Option<MilestonesRow>,
    /// Selected column and card within it.
    pub selected: (usize, usize),
    pub docs: Vec<DocRow>,
    /// The document of the selected card (its warnings are listed), by index in `docs`.
    pub selected_doc: Option<usize>,
    /// The active filters as text (`type plan · status todo · "auth"`); empty for none.
    pub filter: String,
    /// The filter text being typed, when the user is typing one.
    pub editing: Option<String>,
    /// The result of the last action (a move, a copy, a refused edit).
    pub notice: Option<String>,
    /// The key hints.
    pub hint: String,
}

/// Rows a notice may take (wrapped at spaces); a longer one ends in `…`.
const MAX_NOTICE_ROWS: usize = 3;
/// Rows the key hint may take (broken between its entries).
const MAX_HINT_ROWS: usize = 2;

/// Columns narrower than this make the board show one column at a time.
const MIN_COLUMN_WIDTH: u16 = 22;

impl BoardModel {
    /// Finished and total cards of every document.
    pub fn overall(&self) -> (usize, usize) {
        self.docs
            .iter()
            .fold((0, 0), |(d, t), doc| (d + doc.done, t + doc.total))
    }
}

/// `pct` of `done` out of `total`, rounded.
fn percent(done: usize, total: usize) -> usize {
    (done * 100 + total / 2).checked_div(total).unwrap_or(0)
}

/// A text progress bar `cells` wide.
fn bar(done: usize, total: usize, cells: usize) -> String {
    let filled = (done * cells + total / 2).checked_div(total).unwrap_or(0);
    format!(
        "{}{}",
        "█".repeat(filled),
        "░".repeat(cells - filled.min(cells))
    )
}

pub fn render(model: &BoardModel, theme: &Theme, area: Rect, buf: &mut Buffer) {
    if area.width < 8 || area.height < 6 {
        return;
    }
    Clear.render(area, buf);
    buf.set_style(area, theme.overlay_text);
    let (done, total) = model.overall();
    let mut header = vec![
        Span::styled(" Kanban ", theme.overlay_title),
        Span::raw(format!(
            " {} · {done}/{total} done ({}%) ",
            count(model.docs.len(), "doc", "docs"),
            percent(done, total)
        )),
        Span::styled(bar(done, total, 10), theme.accent),
    ];
    if let Some(typing) = &model.editing {
        header.push(Span::styled(format!("  filter: {typing}▏"), theme.warning));
    } else if !model.filter.is_empty() {
        header.push(Span::styled(
            format!("  filter: {}", model.filter),
            theme.warning,
        ));
    }
    buf.set_line(area.x, area.y, &Line::from(header), area.width);

    let text_width = usize::from(area.width.saturating_sub(2));
    let notice = model
        .notice
        .as_deref()
        .map(|notice| {
            fit_lines(
                crate::text::wrap(notice, text_width),
                MAX_NOTICE_ROWS,
                text_width,
            )
        })
        .unwrap_or_default();
    let hint = fit_lines(
        wrap_hint(&model.hint, text_width),
        MAX_HINT_ROWS,
        text_width,
    );
    let bottom_rows = (notice.len() + hint.len()) as u16;
    let docs_rows = docs_panel_height(model, area.height);
    let milestone_rows = match &model.milestones {
        Some(milestones) if area.height >= 12 => {
            render_milestones(milestones, theme, area, buf);
            2
        }
        _ => 0,
    };
    let board = Rect {
        x: area.x,
        y: area.y + 1 + milestone_rows,
        width: area.width,
        height: area
            .height
            .saturating_sub(1 + milestone_rows + docs_rows + bottom_rows),
    };
    if model.docs.is_empty() {
        let empty = "No workflow documents in .unipi/docs yet — /unipi:brainstorm or /unipi:plan writes one";
        for (row, text) in crate::text::wrap(empty, usize::from(area.width.saturating_sub(4)))
            .iter()
            .enumerate()
            .take(usize::from(board.height.saturating_sub(1)))
        {
            buf.set_string(area.x + 2, board.y + 1 + row as u16, text, theme.muted);
        }
    } else {
        render_columns(model, theme, board, buf);
    }
    let docs_area = Rect {
        x: area.x,
        y: board.y + board.height,
        width: area.width,
        height: docs_rows,
    };
    render_docs(model, theme, docs_area, buf);
    let bottom = notice
        .iter()
        .map(|line| (line, theme.warning))
        .chain(hint.iter().map(|line| (line, theme.muted)));
    for (y, (line, style)) in (docs_area.y + docs_area.height..).zip(bottom) {
        buf.set_string(area.x + 1, y, line, style);
    }
}

/// The milestones' two rows under the header: overall progress and the current focus, then each
/// phase with its figures (`✓` finished, `▸` the focus), cut with `…` when they do not fit.
fn render_milestones(milestones: &MilestonesRow, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let max = usize::from(area.width.saturating_sub(2));
    let focus = milestones
        .phases
        .iter()
        .find(|phase| phase.current)
        .map(|phase| format!("  focus: {}", phase.name))
        .unwrap_or_default();
    let overall = Line::from(vec![
        Span::styled(" ◉ Milestones ", theme.accent),
        Span::raw(format!(
            "{}/{} done ({}%) ",
            milestones.done,
            milestones.total,
            percent(milestones.done, milestones.total)
        )),
        Span::styled(bar(milestones.done, milestones.total, 10), theme.accent),
        Span::styled(focus, theme.muted),
    ]);
    buf.set_line(area.x, area.y + 1, &overall, area.width);
    let phases: Vec<String> = milestones
        .phases
        .iter()
        .map(|phase| {
            let mark = if phase.total > 0 && phase.done == phase.total {
                "✓"
            } else if phase.current {
                "▸"
            } else {
                "·"
            };
            format!("{mark} {} {}/{}", phase.name, phase.done, phase.total)
        })
        .collect();
    let text = truncate_end(&phases.join("   "), max);
    buf.set_string(area.x + 3, area.y + 2, text, theme.muted);
}

/// `n doc` / `n docs`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// At most `rows` of `lines`, the last one ending in `…` when some were left out.
fn fit_lines(mut lines: Vec<String>, rows: usize, max: usize) -> Vec<String> {
    if lines.len() > rows {
        lines.truncate(rows);
        if let Some(last) = lines.last_mut() {
            *last = truncate_end(&format!("{last}{}", crate::text::ELLIPSIS), max);
        }
    }
    lines
}

/// The key hint in lines of at most `max` columns, broken between its `·`-separated entries
/// (never inside one, unless one alone is wider than a line).
fn wrap_hint(hint: &str, max: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for entry in hint.split(" · ") {
        match lines.last_mut() {
            Some(line) if width(line) + 3 + width(entry) <= max => {
                line.push_str(" · ");
                line.push_str(entry);
            }
            _ => lines.push(truncate_end(entry, max)),
        }
    }
    lines
}

/// Rows for the documents panel: a rule, one row per document and the selected document's
/// warnings, at most a third of the screen.
fn docs_panel_height(model: &BoardModel, height: u16) -> u16 {
    if model.docs.is_empty() {
        return 0;
    }
    let warnings = model
        .selected_doc
        .and_then(|index| model.docs.get(index))
        .map_or(0, |doc| doc.warnings.len());
    let wanted = 1 + model.docs.len() + warnings;
    (wanted as u16).min(height / 3).max(2)
}

fn render_columns(model: &BoardModel, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let count = model.columns.len().max(1) as u16;
    let (first, shown) = if area.width / count >= MIN_COLUMN_WIDTH {
        (0, model.columns.len())
    } else {
        (
            model.selected.0.min(model.columns.len().saturating_sub(1)),
            1,
        )
    };
    let column_width = area.width / shown.max(1) as u16;
    for (slot, (index, column)) in model
        .columns
        .iter()
        .enumerate()
        .skip(first)
        .take(shown)
        .enumerate()
    {
        let x = area.x + slot as u16 * column_width;
        let w = if slot + 1 == shown {
            area.width - slot as u16 * column_width
        } else {
            column_width
        };
        let rect = Rect {
            x,
            y: area.y,
            width: w,
            height: area.height,
        };
        let selected = (model.selected.0 == index).then_some(model.selected.1);
        let more_left = shown == 1 && index > 0;
        let more_right = shown == 1 && index + 1 < model.columns.len();
        render_column(column, selected, (more_left, more_right), theme, rect, buf);
    }
}

fn render_column(
    column: &Column,
    selected: Option<usize>,
    more: (bool, bool),
    theme: &Theme,
    area: Rect,
    buf: &mut Buffer,
) {
    if area.height < 2 || area.width < 4 {
        return;
    }
    let inner_width = usize::from(area.width.saturating_sub(2));
    render_column_head(column, selected.is_some(), more, theme, area, buf);
    // Two rows per card: its text, then where it comes from.
    let rows = usize::from(area.height.saturating_sub(2));
    let mut per_page = (rows / 2).max(1);
    if column.cards.len() > per_page {
        // The last row says how many more there are.
        per_page = (rows.saturating_sub(1) / 2).max(1);
    }
    let chosen = selected.unwrap_or(0);
    let first = chosen
        .saturating_sub(per_page - 1)
        .min(column.cards.len().saturating_sub(per_page));
    for (slot, (index, card)) in column
        .cards
        .iter()
        .enumerate()
        .skip(first)
        .take(per_page)
        .enumerate()
    {
        let y = area.y + 2 + 2 * slot as u16;
        render_card(card, selected == Some(index), y, theme, area, buf);
    }
    if column.cards.len() > first + per_page {
        let more = format!("+{} more", column.cards.len() - first - per_page);
        let y = area.y + area.height - 1;
        buf.set_string(area.x + 1, y, truncate_end(&more, inner_width), theme.muted);
    }
}

/// The column's title with its card count (arrows when more columns are off screen), and the
/// rule under it.
fn render_column_head(
    column: &Column,
    is_selected: bool,
    (more_left, more_right): (bool, bool),
    theme: &Theme,
    area: Rect,
    buf: &mut Buffer,
) {
    let inner_width = usize::from(area.width.saturating_sub(2));
    let title = format!(
        "{}{} ({}){}",
        if more_left { "◂ " } else { "" },
        column.title,
        column.cards.len(),
        if more_right { " ▸" } else { "" }
    );
    let title_style = if is_selected {
        theme.overlay_title
    } else {
        theme.accent
    };
    buf.set_string(
        area.x + 1,
        area.y,
        truncate_end(&title, inner_width),
        title_style,
    );
    buf.set_string(
        area.x + 1,
        area.y + 1,
        "─".repeat(inner_width),
        theme.overlay_border,
    );
}

/// One card at row `y` of the column: its text, then (when the column has room) its type and
/// where it comes from.
fn render_card(
    card: &Card,
    is_selected: bool,
    y: u16,
    theme: &Theme,
    area: Rect,
    buf: &mut Buffer,
) {
    let inner_width = usize::from(area.width.saturating_sub(2));
    let text_style = if is_selected {
        theme.overlay_text.add_modifier(Modifier::REVERSED)
    } else {
        Style::new()
    };
    let mark = if is_selected { "▸ " } else { "  " };
    let text = truncate_end(&format!("{mark}{}", card.text), inner_width);
    let pad = inner_width.saturating_sub(width(&text));
    buf.set_string(
        area.x + 1,
        y,
        format!("{text}{}", " ".repeat(pad)),
        text_style,
    );
    if y + 1 < area.y + area.height {
        // The type stays whole; the file name gives up its middle (its line number stays).
        let kind = format!("  {} · ", card.kind);
        let room = inner_width.saturating_sub(width(&kind));
        let source = truncate_end(
            &format!("{kind}{}", crate::text::truncate_middle(&card.source, room)),
            inner_width,
        );
        buf.set_string(area.x + 1, y + 1, source, theme.muted);
    }
}

fn render_docs(model: &BoardModel, theme: &Theme, area: Rect, buf: &mut Buffer) {
    if area.height == 0 {
        return;
    }
    let rule = "─ Documents ";
    let rest = usize::from(area.width).saturating_sub(width(rule));
    buf.set_stringn(
        area.x,
        area.y,
        format!("{rule}{}", "─".repeat(rest)),
        usize::from(area.width),
        theme.overlay_border,
    );
    let mut lines: Vec<Line<'_>> = Vec::new();
    for (index, doc) in model.docs.iter().enumerate() {
        let chosen = model.selected_doc == Some(index);
        let warn = if doc.warnings.is_empty() {
            Span::raw("")
        } else {
            Span::styled(format!("  ⚠ {}", doc.warnings.len()), theme.warning)
        };
        let name_style = if chosen { theme.accent } else { Style::new() };
        lines.push(Line::from(vec![
            Span::styled(if chosen { "▸ " } else { "  " }, theme.accent),
            Span::styled(bar(doc.done, doc.total, 8), theme.accent),
            Span::raw(format!(
                " {:>3}% {:>2}/{:<2} ",
                percent(doc.done, doc.total),
                doc.done,
                doc.total
            )),
            Span::styled(format!("{:<10} ", doc.kind), theme.muted),
            Span::styled(doc.title.clone(), name_style),
            Span::styled(format!("  {}", doc.path), theme.muted),
            warn,
        ]));
        if chosen {
            for warning in &doc.warnings {
                lines.push(Line::from(Span::styled(
                    format!("      ⚠ {warning}"),
                    theme.warning,
                )));
            }
        }
    }
    // Keep the selected document's rows in view.
    let visible = usize::from(area.height - 1);
    let anchor = model.selected_doc.unwrap_or(0)
        + model
            .selected_doc
            .and_then(|i| model.docs.get(i))
            .map_or(0, |doc| doc.warnings.len());
    let first = (anchor + 1)
        .saturating_sub(visible)
        .min(lines.len().saturating_sub(visible));
    for (row, line) in lines.iter().skip(first).take(visible).enumerate() {
        buf.set_line(
            area.x + 1,
            area.y + 1 + row as u16,
            line,
            area.width.saturating_sub(2),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::render_to_string;

    fn card(text: &str, source: &str, kind: &str) -> Card {
        Card {
            text: text.into(),
            source: source.into(),
            kind: kind.into(),
        }
    }

    fn columns(todo: Vec<Card>, doing: Vec<Card>, done: Vec<Card>) -> Vec<Column> {
        vec![
            Column {
                title: "To Do".into(),
                cards: todo,
            },
            Column {
                title: "In Progress".into(),
                cards: doing,
            },
            Column {
                title: "Done".into(),
                cards: done,
            },
        ]
    }

    fn model() -> BoardModel {
        BoardModel {
            columns: columns(
                vec![
                    card("Task 3 — Show snippets", "plans/search-plan.md:17", "plan"),
                    card("Rank by recency", "specs/search-design.md:12", "spec"),
                ],
                vec![card(
                    "Task 2 — Rank by recency",
                    "plans/search-plan.md:16",
                    "plan",
                )],
                vec![card(
                    "Task 1 — Index the session files",
                    "plans/search-plan.md:12",
                    "plan",
                )],
            ),
            selected: (0, 0),
            milestones: None,
            docs: vec![
                DocRow {
                    kind: "plan".into(),
                    title: "Search plan".into(),
                    path: "plans/search-plan.md".into(),
                    done: 1,
                    total: 3,
                    warnings: vec!["line 23: unknown task status `started`".into()],
                },
                DocRow {
                    kind: "spec".into(),
                    title: "Search design".into(),
                    path: "specs/search-design.md".into(),
                    done: 0,
                    total: 1,
                    warnings: vec![],
                },
            ],
            selected_doc: Some(0),
            filter: String::new(),
            editing: None,
            notice: None,
            hint: "hjkl move · H/L move card · Enter open · c copy command · / filter · q close"
                .into(),
        }
    }

    fn draw(model: &BoardModel, w: u16, h: u16) -> String {
        render_to_string(w, h, |area, buf| render(model, &Theme::plain(), area, buf))
    }

    #[test]
    fn empty_board() {
        let empty = BoardModel {
            columns: columns(vec![], vec![], vec![]),
            hint: "q close".into(),
            ..BoardModel::default()
        };
        crate::assert_ui_snapshot!("kanban_empty", draw(&empty, 80, 12));
    }

    #[test]
    fn a_board_with_cards_and_a_warning() {
        crate::assert_ui_snapshot!("kanban_cards", draw(&model(), 100, 20));
    }

    #[test]
    fn many_cards_scroll_to_the_selection() {
        let mut many = model();
        many.columns[0].cards = (1..=30)
            .map(|n| {
                card(
                    &format!("Task {n} — Step {n}"),
                    &format!("plans/long.md:{}", n + 5),
                    "plan",
                )
            })
            .collect();
        many.selected = (0, 17);
        crate::assert_ui_snapshot!("kanban_many", draw(&many, 100, 24));
    }

    #[test]
    fn filters_and_a_notice_show_on_top_and_bottom() {
        let mut filtered = model();
        filtered.columns = columns(vec![filtered.columns[0].cards[1].clone()], vec![], vec![]);
        filtered.filter = "type spec · \"recency\"".into();
        filtered.selected_doc = Some(1);
        filtered.notice = Some(
            "plans/search-plan.md:16 changed on disk since the board read it; not overwritten"
                .into(),
        );
        crate::assert_ui_snapshot!("kanban_filtered", draw(&filtered, 100, 20));
        filtered.filter.clear();
        filtered.editing = Some("recen".into());
        let typing = draw(&filtered, 100, 20);
        assert!(typing.contains("filter: recen▏"), "{typing}");
    }

    #[test]
    fn milestones_show_their_progress_above_the_columns() {
        let mut with = model();
        with.milestones = Some(MilestonesRow {
            done: 3,
            total: 7,
            phases: vec![
                PhaseRow {
                    name: "Phase 1: Foundation".into(),
                    done: 2,
                    total: 2,
                    current: false,
                },
                PhaseRow {
                    name: "Phase 2: Search".into(),
                    done: 1,
                    total: 3,
                    current: true,
                },
                PhaseRow {
                    name: "Phase 3: Polish".into(),
                    done: 0,
                    total: 2,
                    current: false,
                },
            ],
        });
        crate::assert_ui_snapshot!("kanban_milestones", draw(&with, 100, 20));
        // Too short a screen keeps the columns and leaves the milestones out.
        let short = draw(&with, 100, 10);
        assert!(!short.contains("Milestones"), "{short}");
    }

    #[test]
    fn a_narrow_terminal_shows_one_column_with_arrows() {
        let mut narrow = model();
        narrow.selected = (1, 0);
        crate::assert_ui_snapshot!("kanban_narrow", draw(&narrow, 40, 18));
    }

    #[test]
    fn the_reviewed_column_and_tiny_areas() {
        let mut reviewed = model();
        reviewed.columns.push(Column {
            title: "Reviewed".into(),
            cards: vec![card("Task 8 — Docs", "plans/search-plan.md:22", "plan")],
        });
        reviewed.selected = (3, 0);
        let screen = draw(&reviewed, 100, 20);
        assert!(
            screen.contains("Reviewed (1)") && screen.contains("▸ Task 8 — Docs"),
            "{screen}"
        );
        // Too small to draw anything sensible: nothing, and no panic.
        let tiny = draw(&reviewed, 6, 4);
        assert!(
            tiny.trim_matches(|c: char| c == '"' || c.is_whitespace())
                .is_empty(),
            "{tiny}"
        );
    }
}

//! The background-task dock: a bordered panel over the lower part of the screen that lists the
//! session's background tasks (status icon, name, id, status and exit code, runtime, output size,
//! whether the task will wake the agent, the last output line of running tasks) or shows one
//! task in detail (every field, the command, and a live-following output tail).
//!
//! The widget renders a plain [`DockModel`] the application fills from the task service: it
//! knows nothing about processes or files, which is why the output tail arrives as lines in the
//! row and why selection, mode and scroll live in the model (the view that owns the model
//! changes them on keys). Rows are shown in [`sort_rows`] order — running first, then failed,
//! stopped, done — and `selected` indexes the rows [`visible_rows`] keeps, so the view and the
//! widget always agree on what is selected.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Widget};

use crate::text::{first_line, shorten_path, truncate_end, width};
use crate::theme::Theme;

/// The list's title.
pub const TITLE: &str = "bg tasks";
/// Shown when the session has no tasks at all.
pub const EMPTY_TEXT: &str = "No background tasks in this session.";
/// Shown when every task is finished and seen while history is hidden.
pub const EMPTY_VIEW_TEXT: &str = "No running background tasks. Press h to show history.";
/// The marker of tasks whose end will wake the agent.
pub const WAKES_MARKER: &str = "⏰ wakes agent";
/// Fewest rows the dock takes (border, subtitle, one row, keys).
pub const MIN_HEIGHT: u16 = 6;

/// Where a task is in its life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum TaskStatus {
    /// Declared in display order: [`sort_rows`] sorts by it.
    #[default]
    Running,
    Failed,
    Stopped,
    Done,
}

impl TaskStatus {
    /// One-column icon shown in front of the row.
    pub fn icon(self) -> &'static str {
        match self {
            TaskStatus::Running => "▶",
            TaskStatus::Failed => "✗",
            TaskStatus::Stopped => "■",
            TaskStatus::Done => "✓",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            TaskStatus::Running => "running",
            TaskStatus::Failed => "failed",
            TaskStatus::Stopped => "stopped",
            TaskStatus::Done => "done",
        }
    }

    pub fn is_finished(self) -> bool {
        self != TaskStatus::Running
    }

    fn style(self, theme: &Theme) -> Style {
        match self {
            TaskStatus::Running => theme.status_working,
            TaskStatus::Failed => theme.error,
            TaskStatus::Stopped => theme.warning,
            TaskStatus::Done => theme.status_done,
        }
    }
}

/// One task as the dock shows it. Times are display strings so the widget stays free of clocks
/// and time zones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DockRow {
    pub id: String,
    pub name: String,
    pub status: TaskStatus,
    /// `None` while running, or when ended by a signal.
    pub exit_code: Option<i32>,
    pub runtime_secs: u64,
    pub output_bytes: u64,
    /// The task's end triggers a turn of the agent.
    pub wakes_agent: bool,
    /// Last line of output, shown on the list row of running tasks.
    pub last_line: Option<String>,
    /// Finished and not yet looked at.
    pub unseen: bool,
    /// Finished and cleared from the list (Ctrl+Alt+C): only shown with history on.
    pub cleared: bool,
    pub command: String,
    pub output_path: String,
    /// Why a stopped task was stopped (`user`, `timeout`, `output_cap`, `shutdown`).
    pub kill_kind: Option<String>,
    /// Why a failed task failed, when something more than the exit code says so.
    pub error: Option<String>,
    pub pid: Option<u32>,
    /// A shell command (can be rerun from the dock) rather than a helper agent.
    pub is_shell: bool,
    pub started_at: String,
    pub ended_at: Option<String>,
    /// The end of the output, oldest first, for the detail view.
    pub tail: Vec<String>,
}

/// What the dock's body shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DockMode {
    #[default]
    List,
    /// The selected task. `scroll` is the first tail line shown when not `follow`ing; following
    /// shows the newest lines as they arrive.
    Detail { scroll: usize, follow: bool },
}

/// Everything the dock draws.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DockModel {
    /// In [`sort_rows`] order.
    pub rows: Vec<DockRow>,
    /// Index into [`visible_rows`].
    pub selected: usize,
    pub mode: DockMode,
    /// Show finished tasks that were already seen.
    pub show_history: bool,
    /// The first stop-all press happened; the next one stops everything.
    pub stop_all_armed: bool,
    /// Key hints (key, what it does) for the bottom line, from the keymap.
    pub keys: Vec<(String, String)>,
    /// One line of feedback above the keys ("Stopped build.", the stop-all warning).
    pub notice: Option<String>,
}

/// Order rows for display: running, failed, stopped, done. Stable, so within a group the order
/// given (the task service's newest-first) is kept.
pub fn sort_rows(rows: &mut [DockRow]) {
    rows.sort_by_key(|row| row.status);
}

/// The rows the list shows: all with history, else running tasks and finished ones not cleared
/// yet (looking at a task marks it seen, but it stays listed until the user clears it).
pub fn visible_rows(model: &DockModel) -> Vec<&DockRow> {
    model
        .rows
        .iter()
        .filter(|row| model.show_history || !row.status.is_finished() || !row.cleared)
        .collect()
}

/// The selected visible row, if any.
pub fn selected_row(model: &DockModel) -> Option<&DockRow> {
    visible_rows(model).get(model.selected).copied()
}

/// Rows the dock wants on a screen `screen_height` rows tall: about 40 % (half in detail, where
/// the output tail needs the room), at least [`MIN_HEIGHT`], never more than the screen.
pub fn dock_height(model: &DockModel, screen_height: u16) -> u16 {
    let share = match model.mode {
        DockMode::List => u32::from(screen_height) * 2 / 5,
        DockMode::Detail { .. } => u32::from(screen_height) / 2,
    };
    u16::try_from(share)
        .unwrap_or(u16::MAX)
        .max(MIN_HEIGHT)
        .min(screen_height)
}

/// The dock's area: the lower [`dock_height`] rows of `screen`, full width.
pub fn dock_area(model: &DockModel, screen: Rect) -> Rect {
    let height = dock_height(model, screen.height);
    Rect {
        y: screen.bottom() - height,
        height,
        ..screen
    }
}

/// How many list rows fit in a dock drawn into `area`.
pub fn list_capacity(model: &DockModel, area: Rect) -> usize {
    usize::from(area.height).saturating_sub(2 + chrome_rows(model))
}

/// How many output-tail lines fit in a detail view drawn into `area`.
pub fn detail_tail_capacity(model: &DockModel, area: Rect) -> usize {
    let header = selected_row(model).map_or(0, |row| detail_fields(row).len() + 1);
    usize::from(area.height).saturating_sub(2 + chrome_rows(model) + header)
}

/// The largest useful detail `scroll` in `area` (0 when the whole tail fits).
pub fn max_detail_scroll(model: &DockModel, area: Rect) -> usize {
    let tail = selected_row(model).map_or(0, |row| row.tail.len());
    tail.saturating_sub(detail_tail_capacity(model, area))
}

/// Draw the dock into `area` (use [`dock_area`] to place it), over whatever is there.
pub fn render(model: &DockModel, theme: &Theme, area: Rect, buf: &mut Buffer) {
    // Below this there is no room for a border around one row; draw nothing rather than a
    // broken box.
    if area.width < 3 || area.height < 3 {
        return;
    }
    Clear.render(area, buf);
    let visible = visible_rows(model);
    let detail = match (model.mode, visible.get(model.selected)) {
        (DockMode::Detail { scroll, follow }, Some(row)) => Some((*row, scroll, follow)),
        _ => None,
    };
    let title = match detail {
        Some((row, ..)) => format!("bg: {}", row.name),
        None => TITLE.to_owned(),
    };
    let title = Line::from(Span::styled(
        format!(
            " {} ",
            truncate_end(&title, usize::from(area.width).saturating_sub(4))
        ),
        theme.overlay_title,
    ));
    let mut block = Block::bordered()
        .border_style(theme.overlay_border)
        .style(theme.overlay_text)
        .title(title);

    let inner_height = usize::from(area.height) - 2;
    let body_rows = inner_height.saturating_sub(chrome_rows(model));
    let text_width = usize::from(area.width).saturating_sub(2 + 2 * PADDING);
    let (body, position) = match detail {
        Some((row, scroll, follow)) => {
            detail_lines(row, scroll, follow, body_rows, text_width, theme)
        }
        None => list_lines(model, &visible, body_rows, text_width, theme),
    };
    if let Some(position) = position {
        block = block.title_bottom(Line::from(position).right_aligned());
    }
    let inner = block.inner(area);
    block.render(area, buf);
    let text_area = Rect {
        x: inner.x + PADDING as u16,
        width: inner.width.saturating_sub(2 * PADDING as u16),
        ..inner
    };

    let mut lines = vec![subtitle(
        model,
        &visible,
        detail.map(|(row, ..)| row),
        text_width,
        theme,
    )];
    lines.extend(body.into_iter().take(body_rows));
    lines.resize(1 + body_rows, Line::default());
    if let Some(notice) = &model.notice {
        let style = if model.stop_all_armed {
            theme.warning
        } else {
            theme.accent
        };
        lines.push(Line::styled(
            truncate_end(&first_line(notice), text_width),
            style,
        ));
    }
    lines.push(keys_line(&model.keys, text_width, theme));
    // On a very short dock the keys and the notice matter more than the subtitle and body.
    let skip = lines.len().saturating_sub(inner_height);
    let shown = lines.iter().skip(skip);
    for (offset, line) in shown.enumerate() {
        buf.set_line(
            text_area.x,
            text_area.y + offset as u16,
            line,
            text_area.width,
        );
    }
}

/// Duration as the dock shows it: `12s`, `1m05s`, `2h03m`.
pub fn format_runtime(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
    }
}

/// Byte count as the dock shows it: `512 B`, `12.3 KiB`, `4.0 MiB`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `done exit 0`, `failed exit 2`, `stopped (timeout)`, `running`.
pub fn status_text(row: &DockRow) -> String {
    let mut text = row.status.label().to_owned();
    if let Some(code) = row.exit_code {
        text.push_str(&format!(" exit {code}"));
    }
    if let (TaskStatus::Stopped, Some(kind)) = (row.status, &row.kill_kind) {
        text.push_str(&format!(" ({kind})"));
    }
    text
}

const PADDING: usize = 1;
/// Column label width in the detail view.
const LABEL_WIDTH: usize = 9;

/// Rows below the body: the notice (when any) and the keys line; plus the subtitle above it.
fn chrome_rows(model: &DockModel) -> usize {
    2 + usize::from(model.notice.is_some())
}

fn subtitle(
    model: &DockModel,
    visible: &[&DockRow],
    detail: Option<&DockRow>,
    max_width: usize,
    theme: &Theme,
) -> Line<'static> {
    let text = match detail {
        Some(row) if row.status == TaskStatus::Running => {
            format!("{} · live tail", row.id)
        }
        Some(row) => format!("{} · final output", row.id),
        None => {
            let count =
                |status: TaskStatus| model.rows.iter().filter(|r| r.status == status).count();
            let mut parts = vec![format!("{} running", count(TaskStatus::Running))];
            for status in [TaskStatus::Failed, TaskStatus::Stopped, TaskStatus::Done] {
                let n = count(status);
                if n > 0 {
                    parts.push(format!("{n} {}", status.label()));
                }
            }
            let unseen = model.rows.iter().filter(|r| r.unseen).count();
            if unseen > 0 {
                parts.push(format!("{unseen} unseen"));
            }
            let hidden = model.rows.len() - visible.len();
            if model.show_history {
                parts.push("history shown".to_owned());
            } else if hidden > 0 {
                parts.push(format!("{hidden} in history"));
            }
            parts.join(" · ")
        }
    };
    Line::styled(truncate_end(&text, max_width), theme.muted)
}

fn keys_line(keys: &[(String, String)], max_width: usize, theme: &Theme) -> Line<'static> {
    let mut spans = Vec::new();
    let mut used = 0;
    for (index, (key, what)) in keys.iter().enumerate() {
        let sep = if index == 0 { "" } else { " · " };
        let piece = width(sep) + width(key) + 1 + width(what);
        // Whole hints only: a hint cut in half reads as a different key.
        if used + piece > max_width {
            break;
        }
        used += piece;
        spans.push(Span::styled(sep, theme.muted));
        spans.push(Span::styled(key.clone(), theme.overlay_key));
        spans.push(Span::styled(format!(" {what}"), theme.muted));
    }
    Line::from(spans)
}

/// The list body and the position marker (when the rows do not all fit).
fn list_lines(
    model: &DockModel,
    visible: &[&DockRow],
    capacity: usize,
    max_width: usize,
    theme: &Theme,
) -> (Vec<Line<'static>>, Option<String>) {
    if visible.is_empty() {
        let text = if model.rows.is_empty() {
            EMPTY_TEXT
        } else {
            EMPTY_VIEW_TEXT
        };
        return (
            vec![Line::styled(truncate_end(text, max_width), theme.muted)],
            None,
        );
    }
    let selected = model.selected.min(visible.len() - 1);
    // The window keeps the selection on screen, scrolling only as far as needed.
    let first = (selected + 1).saturating_sub(capacity.max(1));
    let lines = visible
        .iter()
        .enumerate()
        .skip(first)
        .take(capacity)
        .map(|(index, row)| list_row(row, index == selected, max_width, theme))
        .collect();
    let position = (visible.len() > capacity && capacity > 0).then(|| {
        let last = (first + capacity).min(visible.len());
        format!(" {}-{}/{} ", first + 1, last, visible.len())
    });
    (lines, position)
}

fn list_row(row: &DockRow, selected: bool, max_width: usize, theme: &Theme) -> Line<'static> {
    let status_style = row.status.style(theme);
    let marker = if selected { "› " } else { "  " };
    let unseen = if row.unseen { "● " } else { "  " };
    let status = status_text(row);
    // The name gets what is left after the id and the status, but never less than 12 columns;
    // the other facts are then added whole while they fit, so a narrow dock drops the wake
    // marker, the size and the runtime rather than cutting them.
    // The id goes first when even that does not fit: the detail view shows it.
    let mut id = format!(" {}", row.id);
    let mut fixed = width(marker) + width(unseen) + 2 + width(&id) + 3 + width(&status);
    if fixed + 12 > max_width {
        fixed -= width(&id);
        id.clear();
    }
    let wanted = max_width.saturating_sub(fixed).max(12);
    let name = truncate_end(&row.name, wanted.min(width(&row.name)));
    let mut spans = vec![
        Span::raw(marker),
        Span::styled(unseen, theme.accent),
        Span::styled(format!("{} ", row.status.icon()), status_style),
        Span::styled(name, theme.accent),
        Span::styled(id, theme.muted),
        Span::raw(" · "),
        Span::styled(status, status_style),
    ];
    let mut used: usize = spans.iter().map(Span::width).sum();
    let mut facts = vec![
        format_runtime(row.runtime_secs),
        format_size(row.output_bytes),
    ];
    if row.wakes_agent && row.status == TaskStatus::Running {
        facts.push(WAKES_MARKER.to_owned());
    }
    for fact in facts {
        let piece = format!(" · {fact}");
        if used + width(&piece) > max_width {
            break;
        }
        used += width(&piece);
        spans.push(Span::styled(piece, status_style));
    }
    if let (TaskStatus::Running, Some(last)) = (row.status, &row.last_line) {
        let room = max_width.saturating_sub(used + 3);
        let last = first_line(last);
        if room >= 8 && !last.is_empty() {
            spans.push(Span::styled(" │ ", theme.muted));
            spans.push(Span::styled(truncate_end(&last, room), theme.muted));
        }
    }
    let mut line = Line::from(spans);
    if selected {
        line = line.patch_style(Style::new().add_modifier(Modifier::REVERSED));
    }
    line
}

/// (label, value) rows of the detail header.
fn detail_fields(row: &DockRow) -> Vec<(&'static str, String)> {
    let mut runtime = format_runtime(row.runtime_secs);
    if let Some(pid) = row.pid {
        runtime.push_str(&format!(" · pid {pid}"));
    }
    let mut started = row.started_at.clone();
    if let Some(ended) = &row.ended_at {
        started.push_str(&format!(" · ended {ended}"));
    }
    let wakes = if row.wakes_agent {
        WAKES_MARKER.to_owned()
    } else {
        "no (notification only)".to_owned()
    };
    let mut fields = vec![
        ("Status", status_text(row)),
        ("Runtime", runtime),
        ("Started", started),
        ("Output", row.output_path.clone()),
        ("Wakes", wakes),
        ("Command", row.command.clone()),
    ];
    if let Some(error) = &row.error {
        fields.push(("Error", first_line(error)));
    }
    fields
}

/// The detail body (header fields, the tail's heading, the tail) and the tail's position marker.
fn detail_lines(
    row: &DockRow,
    scroll: usize,
    follow: bool,
    body_rows: usize,
    max_width: usize,
    theme: &Theme,
) -> (Vec<Line<'static>>, Option<String>) {
    let value_width = max_width.saturating_sub(LABEL_WIDTH);
    let mut lines: Vec<Line<'static>> = detail_fields(row)
        .into_iter()
        .map(|(label, value)| {
            let value = if label == "Output" {
                // The size stays whole; the path gives up middle directories instead.
                let size = format!(" ({})", format_size(row.output_bytes));
                let room = value_width.saturating_sub(width(&size));
                truncate_end(
                    &format!("{}{size}", shorten_path(&value, room)),
                    value_width,
                )
            } else {
                truncate_end(&value, value_width)
            };
            let style = match label {
                "Status" => row.status.style(theme),
                "Error" => theme.error,
                _ => Style::new(),
            };
            Line::from(vec![
                Span::styled(
                    format!("{:<LABEL_WIDTH$}", format!("{label}:")),
                    theme.muted,
                ),
                Span::styled(value, style),
            ])
        })
        .collect();
    let capacity = body_rows.saturating_sub(lines.len() + 1);
    let total = row.tail.len();
    let max_first = total.saturating_sub(capacity);
    let first = if follow {
        max_first
    } else {
        scroll.min(max_first)
    };
    let heading = if total == 0 {
        "Output tail: no output yet".to_owned()
    } else if follow {
        format!("Output tail: following · {total} lines")
    } else {
        let last = (first + capacity).min(total);
        format!(
            "Output tail: lines {}–{last} of {total} · End follows",
            first + 1
        )
    };
    lines.push(Line::styled(truncate_end(&heading, max_width), theme.muted));
    lines.extend(
        row.tail
            .iter()
            .skip(first)
            .take(capacity)
            .map(|text| Line::raw(truncate_end(&format!("  {}", first_line(text)), max_width))),
    );
    (lines, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::render_to_string;

    fn make_row(id: &str, name: &str, status: TaskStatus) -> DockRow {
        let finished = status.is_finished();
        DockRow {
            id: id.to_owned(),
            name: name.to_owned(),
            status,
            exit_code: match status {
                TaskStatus::Done => Some(0),
                TaskStatus::Failed => Some(101),
                _ => None,
            },
            runtime_secs: 75,
            output_bytes: 12_800,
            wakes_agent: true,
            last_line: Some("Compiling unipi-widgets v0.1.0".to_owned()),
            unseen: finished,
            cleared: false,
            command: "cargo test --workspace".to_owned(),
            output_path: "/tmp/unipi-bg-tasks/s1-4242-ab12/b1a2c3d4.output".to_owned(),
            kill_kind: (status == TaskStatus::Stopped).then(|| "user".to_owned()),
            error: None,
            pid: (!finished).then_some(4242),
            is_shell: true,
            started_at: "12:00:01".to_owned(),
            ended_at: finished.then(|| "12:01:16".to_owned()),
            tail: (1..=30).map(|n| format!("output line {n}")).collect(),
        }
    }

    fn make_dock_with(rows: Vec<DockRow>) -> DockModel {
        let mut rows = rows;
        sort_rows(&mut rows);
        DockModel {
            rows,
            keys: [
                ("↑↓", "select"),
                ("Enter", "details"),
                ("s", "stop"),
                ("Esc", "close"),
            ]
            .iter()
            .map(|(k, d)| ((*k).to_owned(), (*d).to_owned()))
            .collect(),
            ..DockModel::default()
        }
    }

    fn mixed() -> DockModel {
        make_dock_with(vec![
            make_row("b00000001", "unit tests", TaskStatus::Done),
            make_row("b00000002", "dev server", TaskStatus::Running),
            make_row("b00000003", "release build", TaskStatus::Failed),
            make_row("b00000004", "watch docs", TaskStatus::Stopped),
            DockRow {
                wakes_agent: false,
                last_line: None,
                ..make_row("b00000005", "lint", TaskStatus::Running)
            },
        ])
    }

    fn snapshot(model: &DockModel, width: u16, height: u16) -> String {
        render_to_string(width, height, |area, buf| {
            render(model, &Theme::plain(), dock_area(model, area), buf);
        })
    }

    #[test]
    fn sort_puts_running_then_failed_stopped_done_keeping_order_within() {
        let names: Vec<String> = mixed().rows.into_iter().map(|r| r.name).collect();
        assert_eq!(
            names,
            [
                "dev server",
                "lint",
                "release build",
                "watch docs",
                "unit tests"
            ]
        );
    }

    #[test]
    fn history_toggle_hides_cleared_finished_rows() {
        let mut model = mixed();
        model.rows[2].unseen = false; // release build, seen: still listed
        assert_eq!(visible_rows(&model).len(), 5);
        model.rows[2].cleared = true; // … until cleared
        let names = |m: &DockModel| -> Vec<String> {
            visible_rows(m).iter().map(|r| r.name.clone()).collect()
        };
        assert_eq!(
            names(&model),
            ["dev server", "lint", "watch docs", "unit tests"]
        );
        model.show_history = true;
        assert_eq!(names(&model).len(), 5);
    }

    #[test]
    fn format_table() {
        let runtimes = [
            (0, "0s"),
            (59, "59s"),
            (60, "1m00s"),
            (3599, "59m59s"),
            (7380, "2h03m"),
        ];
        for (secs, want) in runtimes {
            assert_eq!(format_runtime(secs), want, "{secs}");
        }
        let sizes = [
            (0, "0 B"),
            (1023, "1023 B"),
            (1024, "1.0 KiB"),
            (12_800, "12.5 KiB"),
            (5 * 1024 * 1024, "5.0 MiB"),
        ];
        for (bytes, want) in sizes {
            assert_eq!(format_size(bytes), want, "{bytes}");
        }
        let stopped = make_row("b1", "x", TaskStatus::Stopped);
        assert_eq!(status_text(&stopped), "stopped (user)");
        assert_eq!(
            status_text(&make_row("b1", "x", TaskStatus::Failed)),
            "failed exit 101"
        );
    }

    #[test]
    fn height_is_a_share_of_the_screen_with_a_minimum() {
        let mut model = DockModel::default();
        assert_eq!(dock_height(&model, 50), 20);
        assert_eq!(dock_height(&model, 10), MIN_HEIGHT);
        assert_eq!(dock_height(&model, 4), 4);
        model.mode = DockMode::Detail {
            scroll: 0,
            follow: true,
        };
        assert_eq!(dock_height(&model, 50), 25);
        let area = dock_area(&model, Rect::new(0, 2, 80, 50));
        assert_eq!(area, Rect::new(0, 27, 80, 25));
    }

    #[test]
    fn list_with_mixed_states() {
        let mut model = mixed();
        model.selected = 1;
        crate::assert_ui_snapshot!("dock_list_mixed", snapshot(&model, 100, 30));
    }

    #[test]
    fn empty_states() {
        crate::assert_ui_snapshot!("dock_empty", snapshot(&make_dock_with(vec![]), 80, 20));
        let mut seen = make_row("b1", "old build", TaskStatus::Done);
        seen.unseen = false;
        seen.cleared = true;
        crate::assert_ui_snapshot!(
            "dock_empty_history_hidden",
            snapshot(&make_dock_with(vec![seen]), 80, 20)
        );
    }

    #[test]
    fn many_rows_keep_the_selection_in_view() {
        let rows = (1..=40)
            .map(|n| {
                make_row(
                    &format!("b{n:08}"),
                    &format!("task number {n}"),
                    TaskStatus::Running,
                )
            })
            .collect();
        let mut model = make_dock_with(rows);
        model.selected = 25;
        crate::assert_ui_snapshot!("dock_many_rows", snapshot(&model, 90, 30));
    }

    #[test]
    fn detail_follows_and_scrolls() {
        let mut model = mixed();
        model.selected = 2; // release build, failed
        model.rows[2].error = Some("exit status 101".to_owned());
        model.mode = DockMode::Detail {
            scroll: 0,
            follow: true,
        };
        crate::assert_ui_snapshot!("dock_detail_following", snapshot(&model, 90, 40));
        model.mode = DockMode::Detail {
            scroll: 3,
            follow: false,
        };
        crate::assert_ui_snapshot!("dock_detail_scrolled", snapshot(&model, 90, 40));
        let area = dock_area(&model, Rect::new(0, 0, 90, 40));
        // 20 rows: 2 borders, subtitle, keys, 7 fields and the tail heading leave 8 tail rows.
        assert_eq!(detail_tail_capacity(&model, area), 8);
        assert_eq!(max_detail_scroll(&model, area), 30 - 8);
    }

    #[test]
    fn narrow_terminal_and_armed_notice() {
        let mut model = mixed();
        model.stop_all_armed = true;
        model.notice = Some("Press S again to stop all 2 running tasks.".to_owned());
        crate::assert_ui_snapshot!("dock_narrow_40_armed", snapshot(&model, 40, 20));
        model.stop_all_armed = false;
        model.notice = None;
        model.mode = DockMode::Detail {
            scroll: 0,
            follow: true,
        };
        crate::assert_ui_snapshot!("dock_narrow_40_detail", snapshot(&model, 40, 24));
    }

    #[test]
    fn never_panics_on_any_small_screen() {
        let mut model = mixed();
        model.notice = Some("notice".to_owned());
        for mode in [
            DockMode::List,
            DockMode::Detail {
                scroll: 5,
                follow: false,
            },
        ] {
            model.mode = mode;
            for width in 1..=30 {
                for height in 1..=14 {
                    let text = snapshot(&model, width, height);
                    assert_eq!(text.lines().count(), usize::from(height));
                }
            }
        }
    }
}

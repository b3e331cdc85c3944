//! Background tasks as the dock shows them: a [`TaskRow`] per task (status, exit code, runtime,
//! output size, whether its end wakes the agent, the last output line, the output tail for the
//! detail), turned into the dock's generic [`Section`] — rows in [`sort_rows`] order, running
//! first, then failed, stopped, done — and each row's detail (every field, the command, and a
//! live-following output tail).
//!
//! Like every dock widget this works on a plain model the app fills from the task service: it
//! knows nothing about processes or files, which is why the output tail arrives as lines in the
//! row.

use crate::dock::format_runtime;
use crate::dock::{Body, Detail, Field, Fit, Paragraph, Row, Section, Status, Summary, Value};
use crate::footer::{Piece, ProgramState, Role};
use crate::text::first_line;

/// The list's title.
pub const TITLE: &str = "bg tasks";
/// Shown when the session has no tasks at all.
pub const EMPTY_TEXT: &str = "No background tasks in this session.";
/// Shown when every task is finished and seen while history is hidden.
pub const EMPTY_VIEW_TEXT: &str = "No running background tasks. Press h to show history.";
/// The marker of tasks whose end will wake the agent.
pub const WAKES_MARKER: &str = "⏰ wakes agent";

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

    fn role(self) -> Role {
        match self {
            TaskStatus::Running => Role::Status(ProgramState::Working),
            TaskStatus::Failed => Role::Error,
            TaskStatus::Stopped => Role::Warning,
            TaskStatus::Done => Role::Status(ProgramState::Done),
        }
    }
}

/// One task as the dock shows it. Times are display strings so the widget stays free of clocks
/// and time zones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskRow {
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

/// Order rows for display: running, failed, stopped, done. Stable, so within a group the order
/// given (the task service's newest-first) is kept.
pub fn sort_rows(rows: &mut [TaskRow]) {
    rows.sort_by_key(|row| row.status);
}

/// The tasks' section of the dock, its rows in [`sort_rows`] order.
pub fn section(mut tasks: Vec<TaskRow>) -> Section {
    sort_rows(&mut tasks);
    Section {
        title: TITLE.to_owned(),
        label: "tasks".to_owned(),
        summary: Summary::Counts(&["running", "failed", "stopped", "done"]),
        empty: EMPTY_TEXT.to_owned(),
        hidden: EMPTY_VIEW_TEXT.to_owned(),
        rows: tasks.iter().map(row).collect(),
    }
}

/// One task as a row of the dock: name, id, status and exit code, then runtime, size and the
/// wake marker while they fit, then the last output line of a running task.
pub fn row(task: &TaskRow) -> Row {
    let role = task.status.role();
    let mut columns = vec![
        format_runtime(task.runtime_secs),
        format_size(task.output_bytes),
    ];
    if task.wakes_agent && task.status == TaskStatus::Running {
        columns.push(WAKES_MARKER.to_owned());
    }
    let running = task.status == TaskStatus::Running;
    Row {
        id: task.id.clone(),
        status: Status {
            glyph: task.status.icon(),
            label: task.status.label(),
            role,
        },
        status_text: status_text(task),
        name: task.name.clone(),
        tag: task.id.clone(),
        columns: columns
            .into_iter()
            .map(|text| Piece { text, role })
            .collect(),
        trailing: task
            .last_line
            .as_deref()
            .filter(|_| running)
            .map(first_line),
        finished: task.status.is_finished(),
        unseen: task.unseen,
        cleared: task.cleared,
        detail: detail(task),
        ..Row::default()
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
pub fn status_text(row: &TaskRow) -> String {
    let mut text = row.status.label().to_owned();
    if let Some(code) = row.exit_code {
        text.push_str(&format!(" exit {code}"));
    }
    if let (TaskStatus::Stopped, Some(kind)) = (row.status, &row.kill_kind) {
        text.push_str(&format!(" ({kind})"));
    }
    text
}

/// A task in detail: every field, the command, and the output tail.
fn detail(task: &TaskRow) -> Detail {
    let mut runtime = format_runtime(task.runtime_secs);
    if let Some(pid) = task.pid {
        runtime.push_str(&format!(" · pid {pid}"));
    }
    let mut started = task.started_at.clone();
    if let Some(ended) = &task.ended_at {
        started.push_str(&format!(" · ended {ended}"));
    }
    let wakes = if task.wakes_agent {
        WAKES_MARKER
    } else {
        "no (notification only)"
    };
    let mut fields = vec![
        Field::text("Status", status_text(task), task.status.role()),
        Field::text("Runtime", runtime, Role::Text),
        Field::text("Started", started, Role::Text),
        Field {
            label: "Output",
            // The size stays whole; the path gives up middle directories instead.
            value: Value::Path {
                path: task.output_path.clone(),
                suffix: format!(" ({})", format_size(task.output_bytes)),
            },
            role: Role::Text,
        },
        Field::text("Wakes", wakes, Role::Text),
        Field::text("Command", task.command.clone(), Role::Text),
    ];
    if let Some(error) = &task.error {
        fields.push(Field::text("Error", first_line(error), Role::Error));
    }
    let state = if task.status == TaskStatus::Running {
        "live tail"
    } else {
        "final output"
    };
    Detail {
        title: format!("bg: {}", task.name),
        subtitle: format!("{} · {state}", task.id),
        fields,
        body: Body {
            name: "Output tail",
            empty: "no output yet".to_owned(),
            paragraphs: task
                .tail
                .iter()
                .map(|line| Paragraph {
                    head: "  ",
                    text: first_line(line),
                    role: Role::Text,
                    fit: Fit::Cut,
                })
                .collect(),
        },
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use ratatui::layout::Rect;

    use super::*;
    use crate::dock::{
        DockMode, DockModel, detail_tail_capacity, dock_area, entries, max_detail_scroll, render,
    };
    use crate::test_support::render_to_string;
    use crate::theme::Theme;

    pub(crate) fn make_row(id: &str, name: &str, status: TaskStatus) -> TaskRow {
        let finished = status.is_finished();
        TaskRow {
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

    /// A dock listing `rows` (sorted as the dock shows them) with a few key hints.
    pub(crate) fn make_dock_with(rows: Vec<TaskRow>) -> DockModel {
        DockModel {
            sections: vec![section(rows)],
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

    /// Five tasks in every state, in display order.
    pub(crate) fn mixed_rows() -> Vec<TaskRow> {
        let mut rows = vec![
            make_row("b00000001", "unit tests", TaskStatus::Done),
            make_row("b00000002", "dev server", TaskStatus::Running),
            make_row("b00000003", "release build", TaskStatus::Failed),
            make_row("b00000004", "watch docs", TaskStatus::Stopped),
            TaskRow {
                wakes_agent: false,
                last_line: None,
                ..make_row("b00000005", "lint", TaskStatus::Running)
            },
        ];
        sort_rows(&mut rows);
        rows
    }

    fn mixed() -> DockModel {
        make_dock_with(mixed_rows())
    }

    pub(crate) fn snapshot(model: &DockModel, width: u16, height: u16) -> String {
        render_to_string(width, height, |area, buf| {
            render(model, &Theme::plain(), dock_area(model, area), buf);
        })
    }

    /// The names the list shows, in order.
    fn names(model: &DockModel) -> Vec<String> {
        entries(model)
            .iter()
            .map(|entry| entry.row.name.clone())
            .collect()
    }

    #[test]
    fn sort_puts_running_then_failed_stopped_done_keeping_order_within() {
        let names: Vec<String> = mixed_rows().into_iter().map(|r| r.name).collect();
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
        // The section lists them in that order.
        let listed: Vec<String> = section(mixed_rows())
            .rows
            .into_iter()
            .map(|row| row.name)
            .collect();
        assert_eq!(listed, names);
    }

    #[test]
    fn history_toggle_hides_cleared_finished_rows() {
        let mut rows = mixed_rows();
        rows[2].unseen = false; // release build, seen: still listed
        assert_eq!(entries(&make_dock_with(rows.clone())).len(), 5);
        rows[2].cleared = true; // … until cleared
        let mut model = make_dock_with(rows);
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
        let mut rows = mixed_rows();
        rows[2].error = Some("exit status 101".to_owned()); // release build, failed
        let mut model = make_dock_with(rows);
        model.selected = 2;
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
}

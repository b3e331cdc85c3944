//! The background-task dock: a bordered panel over the lower part of the screen that lists the
//! session's background tasks (status icon, name, id, status and exit code, runtime, output size,
//! whether the task will wake the agent, the last output line of running tasks) or shows one
//! task in detail (every field, the command, and a live-following output tail).
//!
//! The widget renders a plain [`DockModel`] the application fills from the task service: it
//! knows nothing about processes or files, which is why the output tail arrives as lines in the
//! row and why selection, mode and scroll live in the model (the view that owns the model
//! changes them on keys). Rows are shown in [`sort_rows`] order — running first, then failed,
//! stopped, done — and `selected` indexes the [`entries`] the list shows, so the view and the
//! widget always agree on what is selected.
//!
//! Agents — the main agent, helper runs and delegates ([`crate::agents`]) — are listed above the
//! tasks when the app hands any over: the list then selects among [`entries`] (visible agents,
//! then visible tasks), the detail of an agent shows its live transcript instead of an output
//! tail, and a one-line steer input ([`SteerInput`]) can sit above the key hints. With no agents
//! the dock is exactly the task dock it was.

use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Widget};

use crate::agents::{
    AgentKind, AgentRow, agent_detail_header, agent_list_row, agents_summary, transcript_heading,
    transcript_style, transcript_text, visible_agents,
};
use crate::text::{first_line, shorten_path, truncate_end, width};
use crate::theme::Theme;

/// The list's title.
pub const TITLE: &str = "bg tasks";
/// The list's title when agents are listed too.
pub const AGENTS_TITLE: &str = "agents & bg tasks";
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

/// The one-line message input that steers a running helper.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SteerInput {
    /// The run the message goes to.
    pub target: String,
    /// What the prompt calls it (`explore h1a2`).
    pub label: String,
    pub text: String,
    /// In characters from the start of `text`.
    pub cursor: usize,
    /// Why the last send failed; shown under the input until the next key.
    pub error: Option<String>,
}

/// Everything the dock draws.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DockModel {
    /// In [`sort_rows`] order.
    pub rows: Vec<DockRow>,
    /// In [`crate::agents::arrange_agents`] order, the main agent first; empty when the app has
    /// no helper board (the dock is then the plain task dock).
    pub agents: Vec<AgentRow>,
    /// Index into [`entries`].
    pub selected: usize,
    pub mode: DockMode,
    /// Show finished tasks that were already seen.
    pub show_history: bool,
    /// The first stop-all press happened; the next one stops everything.
    pub stop_all_armed: bool,
    /// The first stop press on this helper happened; the next one stops it.
    pub stop_armed: Option<String>,
    /// The steer input, while open.
    pub steer: Option<SteerInput>,
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

/// One line of the list: an agent or a task.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Entry<'a> {
    Agent(&'a AgentRow),
    Task(&'a DockRow),
}

impl Entry<'_> {
    pub fn id(&self) -> &str {
        match self {
            Entry::Agent(row) => &row.id,
            Entry::Task(row) => &row.id,
        }
    }

    pub fn is_agent(&self) -> bool {
        matches!(self, Entry::Agent(_))
    }
}

/// What the list shows, in order: the visible agents (tree order), then the visible tasks.
/// `selected` indexes this.
pub fn entries(model: &DockModel) -> Vec<Entry<'_>> {
    visible_agents(&model.agents, model.show_history)
        .into_iter()
        .map(Entry::Agent)
        .chain(visible_rows(model).into_iter().map(Entry::Task))
        .collect()
}

/// The selected entry, if any.
pub fn selected_entry(model: &DockModel) -> Option<Entry<'_>> {
    entries(model).get(model.selected).copied()
}

/// The selected task, if a task is selected.
pub fn selected_row(model: &DockModel) -> Option<&DockRow> {
    match selected_entry(model)? {
        Entry::Task(row) => Some(row),
        Entry::Agent(_) => None,
    }
}

/// The selected agent, if an agent is selected.
pub fn selected_agent(model: &DockModel) -> Option<&AgentRow> {
    match selected_entry(model)? {
        Entry::Agent(row) => Some(row),
        Entry::Task(_) => None,
    }
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

/// How many output-tail (or transcript) lines fit in a detail view drawn into `area`.
pub fn detail_tail_capacity(model: &DockModel, area: Rect) -> usize {
    let header = match selected_entry(model) {
        Some(Entry::Task(row)) => detail_fields(row).len() + 1,
        Some(Entry::Agent(row)) => crate::agents::agent_detail_fields(row).len() + 1,
        None => 0,
    };
    usize::from(area.height).saturating_sub(2 + chrome_rows(model) + header)
}

/// The largest useful detail `scroll` in `area` (0 when the whole tail fits).
pub fn max_detail_scroll(model: &DockModel, area: Rect) -> usize {
    let total = match selected_entry(model) {
        Some(Entry::Task(row)) => row.tail.len(),
        Some(Entry::Agent(row)) => transcript_text(&row.transcript, text_width(area)).len(),
        None => 0,
    };
    total.saturating_sub(detail_tail_capacity(model, area))
}

/// Where the terminal cursor goes while the steer input is open in a dock drawn into `area`
/// (`None` when it is closed or has no room).
pub fn steer_cursor(model: &DockModel, area: Rect) -> Option<Position> {
    let steer = model.steer.as_ref()?;
    if area.width < 3 || area.height < 3 {
        return None;
    }
    let inner_height = usize::from(area.height) - 2;
    // The input sits above the error, the notice and the keys, which fill the bottom rows.
    let below = 1 + usize::from(model.notice.is_some()) + usize::from(steer.error.is_some());
    let row = inner_height.checked_sub(below + 1)?;
    let (_, _, cursor_column) = steer_line_text(steer, text_width(area));
    if cursor_column > text_width(area) {
        return None;
    }
    Some(Position::new(
        area.x + 1 + PADDING as u16 + u16::try_from(cursor_column).ok()?,
        area.y + 1 + u16::try_from(row).ok()?,
    ))
}

/// Draw the dock into `area` (use [`dock_area`] to place it), over whatever is there.
pub fn render(model: &DockModel, theme: &Theme, area: Rect, buf: &mut Buffer) {
    // Below this there is no room for a border around one row; draw nothing rather than a
    // broken box.
    if area.width < 3 || area.height < 3 {
        return;
    }
    Clear.render(area, buf);
    let visible = entries(model);
    let detail = match (model.mode, visible.get(model.selected)) {
        (DockMode::Detail { scroll, follow }, Some(entry)) => Some((*entry, scroll, follow)),
        _ => None,
    };
    let title = match detail {
        Some((Entry::Task(row), ..)) => format!("bg: {}", row.name),
        Some((Entry::Agent(row), ..)) if row.kind == AgentKind::Main => "main agent".to_owned(),
        Some((Entry::Agent(row), ..)) => format!("{}: {}", row.kind.label(), row.label()),
        None if model.agents.is_empty() => TITLE.to_owned(),
        None => AGENTS_TITLE.to_owned(),
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
    let text_width = text_width(area);
    let (body, position) = match detail {
        Some((Entry::Task(row), scroll, follow)) => {
            detail_lines(row, scroll, follow, body_rows, text_width, theme)
        }
        Some((Entry::Agent(row), scroll, follow)) => {
            agent_detail_lines(row, scroll, follow, body_rows, text_width, theme)
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
        detail.map(|(entry, ..)| entry),
        text_width,
        theme,
    )];
    lines.extend(body.into_iter().take(body_rows));
    lines.resize(1 + body_rows, Line::default());
    if let Some(steer) = &model.steer {
        let (prompt, shown, _) = steer_line_text(steer, text_width);
        lines.push(Line::from(vec![
            Span::styled(prompt, theme.accent),
            Span::raw(shown),
        ]));
        if let Some(error) = &steer.error {
            lines.push(Line::styled(
                truncate_end(&format!("✗ {}", first_line(error)), text_width),
                theme.error,
            ));
        }
    }
    if let Some(notice) = &model.notice {
        let style = if model.stop_all_armed || model.stop_armed.is_some() {
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

/// Rows below the body: the steer input and its error, the notice (when any) and the keys
/// line; plus the subtitle above it.
fn chrome_rows(model: &DockModel) -> usize {
    let steer = model
        .steer
        .as_ref()
        .map_or(0, |steer| 1 + usize::from(steer.error.is_some()));
    2 + usize::from(model.notice.is_some()) + steer
}

/// Columns for text inside a dock drawn into `area`.
fn text_width(area: Rect) -> usize {
    usize::from(area.width).saturating_sub(2 + 2 * PADDING)
}

/// The steer line in `max_width` columns — its prompt, the part of the message shown — and the
/// cursor's column. A message longer than the room scrolls so the cursor stays in view; the
/// prompt gives up its end before the message gets less than 8 columns.
fn steer_line_text(steer: &SteerInput, max_width: usize) -> (String, String, usize) {
    let prompt = format!("steer {} › ", steer.label);
    let prompt = truncate_end(&prompt, max_width.saturating_sub(8).max(1));
    // The cursor may sit just after the last column of text (the padding column).
    let room = max_width.saturating_sub(width(&prompt)).max(1);
    let chars: Vec<char> = steer.text.chars().collect();
    let cursor = steer.cursor.min(chars.len());
    let mut start = 0;
    let column = |from: usize| -> usize {
        chars[from..cursor]
            .iter()
            .map(|ch| width(ch.encode_utf8(&mut [0u8; 4])))
            .sum()
    };
    while start < cursor && column(start) >= room {
        start += 1;
    }
    let mut shown = String::new();
    let mut used = 0;
    for ch in &chars[start..] {
        let w = width(ch.encode_utf8(&mut [0u8; 4]));
        if used + w > room {
            break;
        }
        used += w;
        shown.push(*ch);
    }
    let cursor_column = width(&prompt) + column(start);
    (prompt, shown, cursor_column)
}

fn subtitle(
    model: &DockModel,
    visible: &[Entry<'_>],
    detail: Option<Entry<'_>>,
    max_width: usize,
    theme: &Theme,
) -> Line<'static> {
    let text = match detail {
        Some(Entry::Agent(row)) if row.kind == AgentKind::Main => {
            "main agent · its conversation is Pi's pane".to_owned()
        }
        Some(Entry::Agent(row)) if row.status.is_finished() => {
            format!("{} · final transcript", row.id)
        }
        Some(Entry::Agent(row)) => format!("{} · live transcript", row.id),
        Some(Entry::Task(row)) if row.status == TaskStatus::Running => {
            format!("{} · live tail", row.id)
        }
        Some(Entry::Task(row)) => format!("{} · final output", row.id),
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
            let hidden = model.rows.len() + model.agents.len() - visible.len();
            if model.show_history {
                parts.push("history shown".to_owned());
            } else if hidden > 0 {
                parts.push(format!("{hidden} in history"));
            }
            if model.agents.is_empty() {
                parts.join(" · ")
            } else {
                format!(
                    "{} │ tasks {}",
                    agents_summary(&model.agents),
                    parts.join(" · ")
                )
            }
        }
    };
    Line::styled(truncate_end(&text, max_width), theme.muted)
}

/// The hints that fit, whole: the last one (how to leave: "Esc close" / "Esc back") always
/// stays, the ones before it as many as fit in order.
fn keys_line(keys: &[(String, String)], max_width: usize, theme: &Theme) -> Line<'static> {
    let piece = |index: usize, (key, what): &(String, String)| {
        let sep = if index == 0 { 0 } else { width(" · ") };
        sep + width(key) + 1 + width(what)
    };
    let Some((last, rest)) = keys.split_last() else {
        return Line::default();
    };
    let reserved = piece(usize::from(!rest.is_empty()), last);
    let mut shown: Vec<&(String, String)> = Vec::new();
    let mut used = 0;
    for (index, hint) in rest.iter().enumerate() {
        let needed = piece(index, hint);
        // Whole hints only: a hint cut in half reads as a different key.
        if used + needed + reserved > max_width {
            break;
        }
        used += needed;
        shown.push(hint);
    }
    if used + reserved <= max_width || shown.is_empty() {
        shown.push(last);
    }
    let mut spans = Vec::new();
    for (index, (key, what)) in shown.into_iter().enumerate() {
        if index > 0 {
            spans.push(Span::styled(" · ", theme.muted));
        }
        spans.push(Span::styled(key.clone(), theme.overlay_key));
        spans.push(Span::styled(format!(" {what}"), theme.muted));
    }
    Line::from(spans)
}

/// The list body and the position marker (when the rows do not all fit).
fn list_lines(
    model: &DockModel,
    visible: &[Entry<'_>],
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
        .map(|(index, entry)| match entry {
            Entry::Task(row) => list_row(row, index == selected, max_width, theme),
            Entry::Agent(row) => agent_list_row(row, index == selected, max_width, theme),
        })
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

/// An agent's detail body: the header fields, the transcript's heading, the transcript.
fn agent_detail_lines(
    row: &AgentRow,
    scroll: usize,
    follow: bool,
    body_rows: usize,
    max_width: usize,
    theme: &Theme,
) -> (Vec<Line<'static>>, Option<String>) {
    let mut lines = agent_detail_header(row, max_width, theme);
    let capacity = body_rows.saturating_sub(lines.len() + 1);
    let transcript = transcript_text(&row.transcript, max_width);
    let total = transcript.len();
    let max_first = total.saturating_sub(capacity);
    let first = if follow {
        max_first
    } else {
        scroll.min(max_first)
    };
    let heading = transcript_heading(row, first, capacity, total, follow);
    lines.push(Line::styled(truncate_end(&heading, max_width), theme.muted));
    lines.extend(
        transcript
            .into_iter()
            .skip(first)
            .take(capacity)
            .map(|(kind, text)| {
                Line::styled(
                    truncate_end(&text, max_width),
                    transcript_style(kind, theme),
                )
            }),
    );
    (lines, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::{AgentStatus, TranscriptItem};
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

    fn make_agent(
        id: &str,
        parent: Option<&str>,
        agent_type: &str,
        description: &str,
        status: AgentStatus,
    ) -> AgentRow {
        AgentRow {
            id: id.to_owned(),
            parent: parent.map(str::to_owned),
            kind: AgentKind::Helper,
            agent_type: agent_type.to_owned(),
            model: Some("anthropic/claude-haiku-4-5".to_owned()),
            description: description.to_owned(),
            status,
            turns: Some(3),
            tool_uses: Some(12),
            tokens: 20_100,
            tokens_in: 15_000,
            tokens_out: 5_100,
            cost: Some(0.04),
            context_percent: Some(12.0),
            elapsed_secs: Some(65),
            last_activity: "read src/pane/render.rs".to_owned(),
            started_at: "12:00:01 UTC".to_owned(),
            unseen: status.is_finished(),
            ..AgentRow::default()
        }
    }

    /// The main agent, a helper tree (h1 → h2, h3; h2 → h4), a failed and a stopped helper,
    /// and a delegate; arranged as the view does.
    fn make_agents() -> Vec<AgentRow> {
        let main = AgentRow {
            id: crate::agents::MAIN_ID.to_owned(),
            kind: AgentKind::Main,
            agent_type: "main".to_owned(),
            model: Some("claude-sonnet-4-5".to_owned()),
            description: "footer segments".to_owned(),
            status: AgentStatus::Running,
            tokens: 120_000,
            tokens_in: 100_000,
            tokens_out: 20_000,
            cost: Some(0.1234),
            context_percent: Some(45.0),
            last_activity: "working".to_owned(),
            ..AgentRow::default()
        };
        let failed = AgentRow {
            error: Some("model overloaded (529)".to_owned()),
            cost: Some(0.0021),
            tokens: 900,
            tokens_in: 700,
            tokens_out: 200,
            ..make_agent(
                "h5",
                None,
                "work",
                "fix the flaky resize test",
                AgentStatus::Failed,
            )
        };
        let stopped = AgentRow {
            error: Some("stopped by the user".to_owned()),
            ..make_agent(
                "h6",
                None,
                "explore",
                "survey MCP servers",
                AgentStatus::Stopped,
            )
        };
        let delegate = AgentRow {
            kind: AgentKind::Delegate,
            turns: None,
            ..make_agent(
                "b77",
                None,
                "delegate",
                "review the diff",
                AgentStatus::Running,
            )
        };
        crate::agents::arrange_agents(vec![
            make_agent(
                "h1",
                None,
                "explore",
                "map the pane module",
                AgentStatus::Running,
            ),
            make_agent(
                "h2",
                Some("h1"),
                "explore",
                "read the emulator",
                AgentStatus::Running,
            ),
            make_agent(
                "h3",
                Some("h1"),
                "explore",
                "read the encoder",
                AgentStatus::Done,
            ),
            make_agent(
                "h4",
                Some("h2"),
                "explore",
                "check vt100 scrollback",
                AgentStatus::Queued,
            ),
            failed,
            stopped,
            delegate,
            main,
        ])
    }

    fn with_agents() -> DockModel {
        DockModel {
            agents: make_agents(),
            ..mixed()
        }
    }

    fn make_transcript() -> Vec<TranscriptItem> {
        vec![
            TranscriptItem::User(
                "Map the pane module: who owns the PTY and the parser?".to_owned(),
            ),
            TranscriptItem::ToolCall {
                name: "bash".to_owned(),
                args: "ls src/pane".to_owned(),
            },
            TranscriptItem::ToolResult {
                name: "bash".to_owned(),
                text: "emulator.rs\nencode.rs\npty.rs\nrender.rs\nmod.rs\nhistory.rs".to_owned(),
                is_error: false,
            },
            TranscriptItem::ToolCall {
                name: "read".to_owned(),
                args: "src/pane/missing.rs".to_owned(),
            },
            TranscriptItem::ToolResult {
                name: "read".to_owned(),
                text: "ENOENT: no such file".to_owned(),
                is_error: true,
            },
            TranscriptItem::Note("steer sent: focus on resize handling".to_owned()),
            TranscriptItem::User("focus on resize handling".to_owned()),
            TranscriptItem::Assistant(
                "The PTY lives in pty.rs and is resized together with the vt100 parser in \
                 emulator.rs, from the size the frame is about to be drawn at."
                    .to_owned(),
            ),
        ]
    }

    #[test]
    fn agents_list_with_tree_spend_and_tasks() {
        let mut model = with_agents();
        model.selected = 1; // h1, running
        let text = snapshot(&model, 130, 40);
        crate::assert_ui_snapshot!("dock_agents_tree", text);
        // Everything the issue asks a row to show is there for a running helper.
        let h1 = text
            .lines()
            .find(|line| line.contains("map the pane module"))
            .unwrap_or_default();
        for fact in [
            "explore",
            "h1",
            "running",
            "$0.0400",
            "20.1k tok",
            "1m05s",
            "ctx 12%",
            "3 turns",
            "12 tools",
        ] {
            assert!(h1.contains(fact), "{fact} missing from {h1:?}");
        }
        // Agents come first, in tree order, then the tasks.
        let ids: Vec<String> = entries(&model)
            .iter()
            .map(|entry| entry.id().to_owned())
            .collect();
        assert_eq!(
            ids[..9],
            [
                "main",
                "h1",
                "h2",
                "h4",
                "h3",
                "h5",
                "h6",
                "b77",
                "b00000002"
            ]
        );
        assert_eq!(
            selected_agent(&model).map(|row| row.id.as_str()),
            Some("h1")
        );
        assert_eq!(selected_row(&model), None);
    }

    #[test]
    fn agents_narrow_keeps_status_and_cost() {
        let mut model = with_agents();
        model.selected = 5; // h5, failed
        crate::assert_ui_snapshot!("dock_agents_narrow_50", snapshot(&model, 50, 30));
    }

    #[test]
    fn agent_transcript_detail() {
        let mut model = with_agents();
        model.selected = 1;
        model.agents[1].transcript = make_transcript();
        model.mode = DockMode::Detail {
            scroll: 0,
            follow: true,
        };
        crate::assert_ui_snapshot!("dock_agent_transcript", snapshot(&model, 90, 50));
        let area = dock_area(&model, Rect::new(0, 0, 90, 24));
        assert!(max_detail_scroll(&model, area) > 0);
        model.mode = DockMode::Detail {
            scroll: 2,
            follow: false,
        };
        let text = snapshot(&model, 90, 24);
        assert!(text.contains("Transcript: lines 3–"), "{text}");
        // The failed helper's detail names the error.
        model.selected = 5;
        model.mode = DockMode::Detail {
            scroll: 0,
            follow: true,
        };
        crate::assert_ui_snapshot!("dock_agent_failed_detail", snapshot(&model, 90, 40));
    }

    #[test]
    fn steer_input_with_message_and_error() {
        let mut model = with_agents();
        model.selected = 1;
        model.steer = Some(SteerInput {
            target: "h1".to_owned(),
            label: "explore h1".to_owned(),
            text: "focus on resize handling".to_owned(),
            cursor: 24,
            error: None,
        });
        model.keys = vec![
            ("Enter".to_owned(), "send".to_owned()),
            ("Esc".to_owned(), "cancel".to_owned()),
        ];
        crate::assert_ui_snapshot!("dock_steer_input", snapshot(&model, 100, 30));
        let area = dock_area(&model, Rect::new(0, 0, 100, 30));
        // Bottom row is the keys line, the one above it the input; the cursor after the text.
        let cursor = steer_cursor(&model, area);
        let prompt = width("steer explore h1 › ");
        assert_eq!(
            cursor,
            Some(Position::new(2 + (prompt + 24) as u16, area.bottom() - 3))
        );
        if let Some(steer) = &mut model.steer {
            steer.error = Some("run h1 is not running".to_owned());
        }
        crate::assert_ui_snapshot!("dock_steer_error", snapshot(&model, 100, 30));
        assert_eq!(
            steer_cursor(&model, area).map(|p| p.y),
            Some(area.bottom() - 4)
        );
    }

    #[test]
    fn long_steer_text_scrolls_to_keep_the_cursor() {
        let steer = SteerInput {
            label: "explore h1".to_owned(),
            text: "x".repeat(100),
            cursor: 100,
            ..SteerInput::default()
        };
        let (prompt, shown, column) = steer_line_text(&steer, 40);
        assert_eq!(prompt, "steer explore h1 › ");
        assert_eq!(width(&prompt) + width(&shown), 39);
        assert_eq!(column, 39);
        let start = SteerInput { cursor: 0, ..steer };
        assert_eq!(steer_line_text(&start, 40).2, width("steer explore h1 › "));
    }

    #[test]
    fn never_panics_on_any_small_screen() {
        let mut model = with_agents();
        model.agents[1].transcript = make_transcript();
        model.notice = Some("notice".to_owned());
        model.steer = Some(SteerInput {
            label: "explore h1".to_owned(),
            text: "hurry".to_owned(),
            cursor: 5,
            error: Some("run ended".to_owned()),
            ..SteerInput::default()
        });
        for mode in [
            DockMode::List,
            DockMode::Detail {
                scroll: 5,
                follow: false,
            },
        ] {
            model.mode = mode;
            for selected in [1, 9] {
                model.selected = selected;
                for width in 1..=30 {
                    for height in 1..=14 {
                        let text = snapshot(&model, width, height);
                        assert_eq!(text.lines().count(), usize::from(height));
                        let area = dock_area(&model, Rect::new(0, 0, width, height));
                        if let Some(cursor) = steer_cursor(&model, area) {
                            assert!(area.contains(cursor), "{cursor:?} outside {area:?}");
                        }
                    }
                }
            }
        }
    }
}

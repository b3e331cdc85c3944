//! Agent rows for the dock and the helpers footer segment: the main agent, helper runs and
//! read-only delegates as the dock lists them (a parent → child tree with live status, spend per
//! row and in total), the detail of one run with its live transcript, the one-line steer input,
//! and the footer's `⧉ 2 helpers · 41k tok · $0.12`.
//!
//! Like the rest of the dock this renders plain view models the app fills: [`AgentRow`] carries
//! display-ready facts (the app turns its board rows and the footer's data into them), and the
//! transcript arrives as [`TranscriptItem`]s, so the widget knows nothing of processes, the
//! board or its controls. The tree is laid out here ([`arrange_agents`]) rather than by the app
//! so the guides the list draws and the order the view selects in come from one place. Spend is
//! shown on every row and summed in the dock's subtitle and the footer, because opaque helper
//! cost is what users of other agent hubs complain about most.

use std::collections::{HashMap, HashSet};

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::dock::format_runtime;
use crate::footer::{Align, Form, Role, Segment, format_cost, format_tokens, priority};
use crate::text::{first_line, truncate_end, width};
use crate::theme::Theme;

/// The id of the main agent's row (never a run id: those start with `h` or are task ids).
pub const MAIN_ID: &str = "main";
/// The helpers footer segment's id and config group (`groups.helpers.segments.running`).
pub const SEGMENT_ID: &str = "running";
pub const SEGMENT_GROUP: &str = "helpers";
/// The footer segment's and the list's glyph for helper runs.
pub const HELPERS_GLYPH: &str = "⧉";

/// Where a run is in its life. The main agent is `Running` while it works and `Idle` between
/// turns; helper runs go from `Queued` through `Running` to one of the finished states.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AgentStatus {
    #[default]
    Running,
    Queued,
    Idle,
    Done,
    Failed,
    Stopped,
    TimedOut,
}

impl AgentStatus {
    pub fn icon(self) -> &'static str {
        match self {
            AgentStatus::Running => "▶",
            AgentStatus::Queued => "◌",
            AgentStatus::Idle => "○",
            AgentStatus::Done => "✓",
            AgentStatus::Failed => "✗",
            AgentStatus::Stopped => "■",
            AgentStatus::TimedOut => "⌛",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            AgentStatus::Running => "running",
            AgentStatus::Queued => "queued",
            AgentStatus::Idle => "idle",
            AgentStatus::Done => "done",
            AgentStatus::Failed => "failed",
            AgentStatus::Stopped => "stopped",
            AgentStatus::TimedOut => "timed out",
        }
    }

    /// Ended for good: it can be neither steered nor stopped. (The main agent's `Idle` is not.)
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            AgentStatus::Done | AgentStatus::Failed | AgentStatus::Stopped | AgentStatus::TimedOut
        )
    }

    pub(crate) fn style(self, theme: &Theme) -> Style {
        match self {
            AgentStatus::Running | AgentStatus::Queued => theme.status_working,
            AgentStatus::Idle => theme.status_idle,
            AgentStatus::Done => theme.status_done,
            AgentStatus::Failed | AgentStatus::TimedOut => theme.error,
            AgentStatus::Stopped => theme.warning,
        }
    }
}

/// What kind of agent a row is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AgentKind {
    /// Pi itself, in the pane: always the first row, the root of the tree.
    Main,
    #[default]
    Helper,
    Delegate,
}

impl AgentKind {
    pub fn label(self) -> &'static str {
        match self {
            AgentKind::Main => "main agent",
            AgentKind::Helper => "helper",
            AgentKind::Delegate => "delegate",
        }
    }
}

/// One entry of a run's transcript, as the detail view shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TranscriptItem {
    /// The task, or a steering message.
    User(String),
    Assistant(String),
    ToolCall {
        name: String,
        args: String,
    },
    ToolResult {
        name: String,
        text: String,
        is_error: bool,
    },
    /// Something the workbench did (a steer it sent, a stop, a retry).
    Note(String),
}

/// One agent as the dock shows it. Facts the run does not know yet are `None` and are left out
/// rather than shown as zero (a helper that has not answered has not spent nothing).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentRow {
    /// [`MAIN_ID`] for the main agent, else the run id.
    pub id: String,
    /// The run that spawned this one; `None` when the main agent did.
    pub parent: Option<String>,
    pub kind: AgentKind,
    /// `explore`, `work`, a custom type, `delegate`; `main` for the main agent.
    pub agent_type: String,
    /// `provider/model` when known.
    pub model: Option<String>,
    /// The task (or, for the main agent, the session name).
    pub description: String,
    pub status: AgentStatus,
    pub turns: Option<u32>,
    pub tool_uses: Option<usize>,
    /// Tokens in and out (and through the cache), all turns.
    pub tokens: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// Dollars; `None` until the provider reports a cost.
    pub cost: Option<f64>,
    pub context_percent: Option<f64>,
    pub elapsed_secs: Option<u64>,
    /// The latest thing it did (`read src/main.rs`, the first words of a reply).
    pub last_activity: String,
    /// Why it failed or was stopped.
    pub error: Option<String>,
    /// A display string (`12:00:01 UTC`), so the widget stays free of clocks.
    pub started_at: String,
    /// Finished and not yet looked at.
    pub unseen: bool,
    /// Finished and cleared from the list: shown only with history on.
    pub cleared: bool,
    /// Tree depth (0 for the root), filled by [`arrange_agents`].
    pub depth: usize,
    /// The tree guide drawn before the row (`├─ `, `│  └─ `), filled by [`arrange_agents`].
    pub guide: String,
    /// Only for the row the detail shows (the app does not fetch the others').
    pub transcript: Vec<TranscriptItem>,
}

impl AgentRow {
    /// `explore h1a2` — what notices call the run.
    pub fn label(&self) -> String {
        match self.kind {
            AgentKind::Main => "the main agent".to_owned(),
            _ => format!("{} {}", self.agent_type, self.id),
        }
    }
}

/// Helper spend for the footer: runs still going, runs ended, and what all of them used.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HelperSpend {
    pub running: usize,
    pub finished: usize,
    pub tokens: u64,
    pub cost: f64,
}

/// The rows in tree order — the main agent first, each run under the run that spawned it, runs
/// the main agent spawned (or whose parent is unknown) under the main agent; siblings keep the
/// order given (start order) — with `depth` and `guide` filled in. Rows on a parent cycle are
/// kept, as roots at the end, rather than lost.
pub fn arrange_agents(rows: Vec<AgentRow>) -> Vec<AgentRow> {
    let ids: HashSet<&str> = rows.iter().map(|row| row.id.as_str()).collect();
    let main = rows.iter().position(|row| row.kind == AgentKind::Main);
    let main_id = main.map(|index| rows[index].id.clone());
    // Children by parent id, in the given order; `None` collects the roots.
    let mut children: HashMap<Option<String>, Vec<usize>> = HashMap::new();
    for (index, row) in rows.iter().enumerate() {
        if Some(index) == main {
            continue;
        }
        let parent = row
            .parent
            .clone()
            .filter(|parent| ids.contains(parent.as_str()) && *parent != row.id)
            .or_else(|| main_id.clone());
        children.entry(parent).or_default().push(index);
    }
    let mut order: Vec<(usize, usize, String)> = Vec::with_capacity(rows.len());
    let mut visited = vec![false; rows.len()];
    let mut roots: Vec<usize> = main.into_iter().collect();
    roots.extend(children.get(&None).into_iter().flatten().copied());
    for root in roots {
        visit(root, 0, "", "", &rows, &children, &mut visited, &mut order);
    }
    // A cycle of parents never hangs off a root: show its rows anyway.
    for index in 0..rows.len() {
        if !visited[index] {
            visit(index, 0, "", "", &rows, &children, &mut visited, &mut order);
        }
    }
    let mut slots: Vec<Option<AgentRow>> = rows.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|(index, depth, guide)| {
            let mut row = slots[index].take()?;
            row.depth = depth;
            row.guide = guide;
            Some(row)
        })
        .collect()
}

/// The agent rows the list shows: everything with history on; otherwise rows that are running,
/// not yet cleared, or have a shown row below them (a cleared parent stays while its children
/// show, so the tree never loses a branch's root). `agents` must be in [`arrange_agents`] order.
pub fn visible_agents(agents: &[AgentRow], show_history: bool) -> Vec<&AgentRow> {
    let mut shown = vec![false; agents.len()];
    // Walking backwards, `below[d]` says whether a shown row of depth d hangs under the row
    // about to be visited (at depth d - 1) — its subtree is exactly the rows already walked
    // since the last row at its depth or above.
    let mut below = vec![false; agents.iter().map(|row| row.depth).max().unwrap_or(0) + 2];
    for (index, row) in agents.iter().enumerate().rev() {
        let own = show_history || !row.status.is_finished() || !row.cleared;
        let visible = own || below[row.depth + 1];
        shown[index] = visible;
        for flag in &mut below[row.depth + 1..] {
            *flag = false;
        }
        below[row.depth] |= visible;
    }
    agents
        .iter()
        .zip(shown)
        .filter_map(|(row, shown)| shown.then_some(row))
        .collect()
}

/// Helper spend over the rows (the main agent's row is not a helper).
pub fn helper_spend(agents: &[AgentRow]) -> HelperSpend {
    let mut spend = HelperSpend::default();
    for row in agents.iter().filter(|row| row.kind != AgentKind::Main) {
        if row.status.is_finished() {
            spend.finished += 1;
        } else {
            spend.running += 1;
        }
        spend.tokens += row.tokens;
        spend.cost += row.cost.unwrap_or(0.0);
    }
    spend
}

/// The footer segment: `⧉ 2 helpers · 41k tok · $0.12` while helpers run, `⧉ 3 done · …` once
/// they all ended, nothing when none ran this session. It narrows to `⧉ 2 helpers · $0.12`
/// (cost is what users ask about), then `⧉ 2`.
pub fn helpers_segment(spend: &HelperSpend) -> Option<Segment> {
    if spend.running == 0 && spend.finished == 0 {
        return None;
    }
    let (count, role) = if spend.running > 0 {
        let noun = if spend.running == 1 {
            "helper"
        } else {
            "helpers"
        };
        (format!("{} {noun}", spend.running), Role::Accent)
    } else {
        (format!("{} done", spend.finished), Role::Muted)
    };
    let head = format!("{HELPERS_GLYPH} {count}");
    let tokens = format!(" · {} tok", format_tokens(spend.tokens));
    let cost = format!(" · {}", format_cost(spend.cost));
    let long = Form::new(head.clone(), role)
        .then(tokens, Role::Muted)
        .then(cost.clone(), Role::Muted);
    let shown = if spend.running > 0 {
        spend.running
    } else {
        spend.finished
    };
    let short = Form::new(format!("{HELPERS_GLYPH} {shown}"), role);
    Some(
        Segment::new(SEGMENT_ID, PRESENCE_PRIORITY, Align::Right, long)
            .in_group(SEGMENT_GROUP)
            .detail(DETAIL_PRIORITY)
            .or(Form::new(head, role).then(cost, Role::Muted))
            .or(short),
    )
}

/// Running helpers matter about as much as running tasks: just below them in the module range.
const PRESENCE_PRIORITY: u8 = priority::MODULE_HIGH - 3;
/// The spend is a detail, but one users ask for: above the workbench's cwd and git branch.
const DETAIL_PRIORITY: u8 = priority::CWD + 2;

/// Width of the detail labels (`Context: `).
const LABEL_WIDTH: usize = 9;
/// Lines of a tool result shown before the rest is summed up.
const RESULT_LINES: usize = 4;

/// One agent as a list row: marker, unseen dot, tree guide, status icon, type and task, id,
/// then status and spend, then the facts that still fit, then the last activity of a running
/// run. Cost stays with the status at any width; the rest goes from the end.
pub(crate) fn agent_list_row(
    row: &AgentRow,
    selected: bool,
    max_width: usize,
    theme: &Theme,
) -> Line<'static> {
    let status_style = row.status.style(theme);
    let marker = if selected { "› " } else { "  " };
    let unseen = if row.unseen { "● " } else { "  " };
    let status = row.status.label().to_owned();
    let mut cost = row.cost.map(|cost| format!(" · {}", format_cost(cost)));
    let name = match row.kind {
        AgentKind::Main => format!("main · {}", row.description),
        _ => format!("{} · {}", row.agent_type, row.description),
    };
    let mut id = match row.kind {
        AgentKind::Main => String::new(),
        _ => format!(" {}", row.id),
    };
    let cost_width = cost.as_deref().map_or(0, width);
    let mut fixed = width(marker)
        + width(unseen)
        + width(&row.guide)
        + 2
        + width(&id)
        + 3
        + width(&status)
        + cost_width;
    // On a narrow dock the id goes first (the detail shows it), then the cost (the subtitle
    // still sums it), so the name keeps at least 8 columns and nothing is cut mid-number.
    if fixed + 16 > max_width {
        fixed -= width(&id);
        id.clear();
    }
    if fixed + 8 > max_width {
        fixed -= cost_width;
        cost = None;
    }
    let wanted = max_width.saturating_sub(fixed).max(8);
    let name = truncate_end(&name, wanted.min(width(&name)));
    let mut spans = vec![
        Span::raw(marker),
        Span::styled(unseen, theme.accent),
        Span::styled(row.guide.clone(), theme.muted),
        Span::styled(format!("{} ", row.status.icon()), status_style),
        Span::styled(name, theme.accent),
        Span::styled(id, theme.muted),
        Span::raw(" · "),
        Span::styled(status, status_style),
    ];
    if let Some(cost) = cost {
        spans.push(Span::styled(cost, theme.accent));
    }
    let mut used: usize = spans.iter().map(Span::width).sum();
    for fact in list_facts(row) {
        let piece = format!(" · {fact}");
        if used + width(&piece) > max_width {
            break;
        }
        used += width(&piece);
        spans.push(Span::styled(piece, theme.muted));
    }
    let activity = first_line(&row.last_activity);
    if !row.status.is_finished() && !activity.is_empty() {
        let room = max_width.saturating_sub(used + 3);
        if room >= 8 {
            spans.push(Span::styled(" │ ", theme.muted));
            spans.push(Span::styled(truncate_end(&activity, room), theme.muted));
        }
    }
    let mut line = Line::from(spans);
    if selected {
        line = line.patch_style(Style::new().add_modifier(Modifier::REVERSED));
    }
    line
}

/// (label, value) rows of an agent's detail header.
pub(crate) fn agent_detail_fields(row: &AgentRow) -> Vec<(&'static str, String)> {
    let mut status = row.status.label().to_owned();
    match row.kind {
        AgentKind::Main => status.push_str(" · main agent"),
        kind => status.push_str(&format!(
            " · {} ({}) · {}",
            kind.label(),
            row.agent_type,
            row.id
        )),
    }
    let mut usage = Vec::new();
    if let Some(turns) = row.turns {
        usage.push(plural(u64::from(turns), "turn", "turns"));
    }
    if let Some(tools) = row.tool_uses {
        usage.push(plural(tools as u64, "tool use", "tool uses"));
    }
    usage.push(format!(
        "{} tok ({} in · {} out)",
        format_tokens(row.tokens),
        format_tokens(row.tokens_in),
        format_tokens(row.tokens_out)
    ));
    usage.push(row.cost.map_or("cost not reported".to_owned(), format_cost));
    let mut fields = vec![("Status", status)];
    if row.kind != AgentKind::Main {
        fields.push(("Task", first_line(&row.description)));
    }
    fields.push((
        "Model",
        row.model
            .clone()
            .unwrap_or_else(|| "not reported".to_owned()),
    ));
    fields.push(("Usage", usage.join(" · ")));
    if let Some(percent) = row.context_percent {
        fields.push(("Context", format!("{percent:.0}% of the window")));
    }
    if let Some(secs) = row.elapsed_secs {
        let mut elapsed = format_runtime(secs);
        if !row.started_at.is_empty() {
            elapsed.push_str(&format!(" · started {}", row.started_at));
        }
        fields.push(("Elapsed", elapsed));
    }
    if row.kind != AgentKind::Main {
        fields.push((
            "Parent",
            row.parent.clone().unwrap_or_else(|| MAIN_ID.to_owned()),
        ));
    }
    if let Some(error) = &row.error {
        fields.push(("Error", first_line(error)));
    }
    fields
}

/// The detail header as lines.
pub(crate) fn agent_detail_header(
    row: &AgentRow,
    max_width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let value_width = max_width.saturating_sub(LABEL_WIDTH);
    agent_detail_fields(row)
        .into_iter()
        .map(|(label, value)| {
            let style = match label {
                "Status" => row.status.style(theme),
                "Error" => theme.error,
                "Usage" => theme.accent,
                _ => Style::new(),
            };
            Line::from(vec![
                Span::styled(
                    format!("{:<LABEL_WIDTH$}", format!("{label}:")),
                    theme.muted,
                ),
                Span::styled(truncate_end(&value, value_width), style),
            ])
        })
        .collect()
}

/// The transcript heading: what is shown of how much.
pub(crate) fn transcript_heading(
    row: &AgentRow,
    first: usize,
    capacity: usize,
    total: usize,
    follow: bool,
) -> String {
    if row.kind == AgentKind::Main {
        "Transcript: the main agent's conversation is Pi's pane".to_owned()
    } else if total == 0 && row.status.is_finished() {
        "Transcript: none kept for this run".to_owned()
    } else if total == 0 {
        "Transcript: nothing yet".to_owned()
    } else if follow {
        format!("Transcript: following · {total} lines")
    } else {
        let last = (first + capacity).min(total);
        format!(
            "Transcript: lines {}–{last} of {total} · End follows",
            first + 1
        )
    }
}

/// What kind of transcript text a line is (its style).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LineKind {
    User,
    Assistant,
    Tool,
    Result,
    Error,
    Note,
}

/// The transcript as display lines `max_width` wide: each entry wrapped, with a marker on its
/// first line and its continuation indented; long tool results cut to a few lines. Counting
/// these is what scrolling works in.
pub(crate) fn transcript_text(
    items: &[TranscriptItem],
    max_width: usize,
) -> Vec<(LineKind, String)> {
    let mut out = Vec::new();
    for item in items {
        let (kind, head, text, limit) = match item {
            TranscriptItem::User(text) => (LineKind::User, "» ".to_owned(), text.clone(), None),
            TranscriptItem::Assistant(text) => {
                (LineKind::Assistant, "◆ ".to_owned(), text.clone(), None)
            }
            TranscriptItem::ToolCall { name, args } => (
                LineKind::Tool,
                "⚙ ".to_owned(),
                format!("{name} {}", first_line(args)),
                Some(1),
            ),
            TranscriptItem::ToolResult {
                name,
                text,
                is_error,
            } => {
                let kind = if *is_error {
                    LineKind::Error
                } else {
                    LineKind::Result
                };
                let mark = if *is_error { "  ✗ " } else { "  ↳ " };
                (
                    kind,
                    mark.to_owned(),
                    format!("{name}: {}", text.trim_end()),
                    Some(RESULT_LINES),
                )
            }
            TranscriptItem::Note(text) => (LineKind::Note, "• ".to_owned(), text.clone(), None),
        };
        let indent = " ".repeat(width(&head));
        let room = max_width.saturating_sub(width(&head)).max(1);
        let mut lines = wrap(&text, room);
        if let Some(limit) = limit
            && lines.len() > limit
        {
            let more = lines.len() - limit;
            lines.truncate(limit);
            lines.push(format!(
                "… {}",
                plural(more as u64, "more line", "more lines")
            ));
        }
        for (index, line) in lines.into_iter().enumerate() {
            let lead = if index == 0 { &head } else { &indent };
            out.push((kind, format!("{lead}{line}")));
        }
    }
    out
}

pub(crate) fn transcript_style(kind: LineKind, theme: &Theme) -> Style {
    match kind {
        LineKind::User => theme.accent,
        LineKind::Assistant => Style::new(),
        LineKind::Tool => theme.status_working,
        LineKind::Result => theme.muted,
        LineKind::Error => theme.error,
        LineKind::Note => theme.warning,
    }
}

/// The summary of the agent rows for the dock's subtitle: `helpers 2 running · 1 done · 41k tok
/// · $0.0434 · all agents $0.1634`.
pub(crate) fn agents_summary(agents: &[AgentRow]) -> String {
    let spend = helper_spend(agents);
    let mut parts = vec![format!("helpers {} running", spend.running)];
    if spend.finished > 0 {
        parts.push(format!("{} ended", spend.finished));
    }
    parts.push(format!("{} tok", format_tokens(spend.tokens)));
    parts.push(format_cost(spend.cost));
    let main_cost: f64 = agents
        .iter()
        .filter(|row| row.kind == AgentKind::Main)
        .filter_map(|row| row.cost)
        .sum();
    if main_cost > 0.0 {
        parts.push(format!(
            "all agents {}",
            format_cost(main_cost + spend.cost)
        ));
    }
    parts.join(" · ")
}

/// `text` wrapped at word boundaries into lines of at most `max` columns (a word longer than a
/// line is cut across lines); newlines are kept, control characters become spaces.
pub fn wrap(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut out = Vec::new();
    for raw in text.lines() {
        let clean: String = raw
            .chars()
            .map(|ch| if ch.is_control() { ' ' } else { ch })
            .collect();
        // Most lines fit whole; measuring once is much cheaper than word by word.
        if width(&clean) <= max {
            out.push(clean);
            continue;
        }
        let mut line = String::new();
        let mut used = 0;
        for word in clean.split(' ') {
            let word_width = width(word);
            let sep = usize::from(!line.is_empty());
            if used + sep + word_width <= max {
                if sep == 1 {
                    line.push(' ');
                }
                line.push_str(word);
                used += sep + word_width;
                continue;
            }
            if !line.is_empty() {
                out.push(std::mem::take(&mut line));
                used = 0;
            }
            // The word alone, cut into line-sized pieces when it is longer than a line.
            for ch in word.chars() {
                let mut utf8 = [0u8; 4];
                let ch_width = width(ch.encode_utf8(&mut utf8));
                if used + ch_width > max && !line.is_empty() {
                    out.push(std::mem::take(&mut line));
                    used = 0;
                }
                line.push(ch);
                used += ch_width;
            }
        }
        out.push(line);
    }
    if out.is_empty() {
        out.push(String::new());
    }
    out
}

/// The list row's facts after status and cost, most useful first: tokens, elapsed time,
/// context use, turns and tool uses, model.
fn list_facts(row: &AgentRow) -> Vec<String> {
    let mut facts = Vec::new();
    if row.tokens > 0 || row.cost.is_some() {
        facts.push(format!("{} tok", format_tokens(row.tokens)));
    }
    if let Some(secs) = row.elapsed_secs {
        facts.push(format_runtime(secs));
    }
    if let Some(percent) = row.context_percent {
        facts.push(format!("ctx {percent:.0}%"));
    }
    if let Some(turns) = row.turns {
        facts.push(plural(u64::from(turns), "turn", "turns"));
    }
    if let Some(tools) = row.tool_uses {
        facts.push(plural(tools as u64, "tool", "tools"));
    }
    if let Some(model) = &row.model {
        facts.push(model.clone());
    }
    facts
}

fn plural(count: u64, one: &str, many: &str) -> String {
    if count == 1 {
        format!("1 {one}")
    } else {
        format!("{count} {many}")
    }
}

/// Depth-first walk from `index`: records (row, depth, guide) and goes on to its children.
/// `lead` is the guide of the row's ancestors' columns; `own` the row's own connector.
#[allow(clippy::too_many_arguments)]
fn visit(
    index: usize,
    depth: usize,
    lead: &str,
    own: &str,
    rows: &[AgentRow],
    children: &HashMap<Option<String>, Vec<usize>>,
    visited: &mut [bool],
    order: &mut Vec<(usize, usize, String)>,
) {
    if visited[index] {
        return;
    }
    visited[index] = true;
    order.push((index, depth, format!("{lead}{own}")));
    let Some(kids) = children.get(&Some(rows[index].id.clone())) else {
        return;
    };
    // The root's children start the guides; below them each level adds a column that continues
    // (`│  `) while the parent has later siblings.
    let child_lead = if depth == 0 {
        String::new()
    } else if own.starts_with('├') {
        format!("{lead}│  ")
    } else {
        format!("{lead}   ")
    };
    let kids: Vec<usize> = kids.iter().copied().filter(|kid| !visited[*kid]).collect();
    for (position, kid) in kids.iter().enumerate() {
        let connector = if position + 1 == kids.len() {
            "└─ "
        } else {
            "├─ "
        };
        visit(
            *kid,
            depth + 1,
            &child_lead,
            connector,
            rows,
            children,
            visited,
            order,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::footer::render_segments;
    use crate::test_support::render_to_string;

    fn make_agent(id: &str, parent: Option<&str>, status: AgentStatus) -> AgentRow {
        AgentRow {
            id: id.to_owned(),
            parent: parent.map(str::to_owned),
            kind: AgentKind::Helper,
            agent_type: "explore".to_owned(),
            description: format!("task of {id}"),
            status,
            tokens: 1_000,
            cost: Some(0.01),
            ..AgentRow::default()
        }
    }

    fn main_row() -> AgentRow {
        AgentRow {
            id: MAIN_ID.to_owned(),
            kind: AgentKind::Main,
            agent_type: "main".to_owned(),
            description: "session".to_owned(),
            status: AgentStatus::Idle,
            ..AgentRow::default()
        }
    }

    #[test]
    fn arrange_builds_the_tree_under_the_main_agent() {
        let rows = vec![
            make_agent("h1", None, AgentStatus::Running),
            make_agent("h2", Some("h1"), AgentStatus::Running),
            make_agent("h3", None, AgentStatus::Done),
            make_agent("h4", Some("h1"), AgentStatus::Done),
            make_agent("h5", Some("h2"), AgentStatus::Running),
            main_row(),
            // Unknown parent: hangs under the main agent.
            make_agent("h6", Some("gone"), AgentStatus::Failed),
            // A cycle: kept, as roots at the end.
            make_agent("c1", Some("c2"), AgentStatus::Running),
            make_agent("c2", Some("c1"), AgentStatus::Running),
        ];
        let arranged: Vec<String> = arrange_agents(rows)
            .into_iter()
            .map(|row| format!("{}{} d{}", row.guide, row.id, row.depth))
            .collect();
        assert_eq!(
            arranged,
            [
                "main d0",
                "├─ h1 d1",
                "│  ├─ h2 d2",
                "│  │  └─ h5 d3",
                "│  └─ h4 d2",
                "├─ h3 d1",
                "└─ h6 d1",
                "c1 d0",
                "└─ c2 d1",
            ]
        );
    }

    #[test]
    fn cleared_rows_hide_unless_something_below_shows() {
        let mut rows = arrange_agents(vec![
            main_row(),
            make_agent("h1", None, AgentStatus::Done),
            make_agent("h2", Some("h1"), AgentStatus::Running),
            make_agent("h3", None, AgentStatus::Done),
            make_agent("h4", Some("h3"), AgentStatus::Done),
        ]);
        for row in &mut rows {
            row.cleared = row.status.is_finished();
        }
        let ids = |shown: Vec<&AgentRow>| -> Vec<String> {
            shown.into_iter().map(|row| row.id.clone()).collect()
        };
        assert_eq!(ids(visible_agents(&rows, false)), ["main", "h1", "h2"]);
        assert_eq!(visible_agents(&rows, true).len(), 5);
        rows[4].cleared = false; // h4 not cleared: its parent h3 comes back too
        assert_eq!(
            ids(visible_agents(&rows, false)),
            ["main", "h1", "h2", "h3", "h4"]
        );
    }

    #[test]
    fn spend_sums_helpers_only() {
        let mut main = main_row();
        main.cost = Some(5.0);
        main.tokens = 99_000;
        let rows = vec![
            main,
            make_agent("h1", None, AgentStatus::Running),
            make_agent("h2", None, AgentStatus::Done),
            AgentRow {
                cost: None,
                ..make_agent("h3", None, AgentStatus::Queued)
            },
        ];
        let spend = helper_spend(&rows);
        assert_eq!((spend.running, spend.finished, spend.tokens), (2, 1, 3_000));
        assert!((spend.cost - 0.02).abs() < 1e-9);
        assert_eq!(
            agents_summary(&rows),
            "helpers 2 running · 1 ended · 3k tok · $0.0200 · all agents $5.02"
        );
    }

    #[test]
    fn wrap_table() {
        let cases: [(&str, usize, &[&str]); 6] = [
            ("", 10, &[""]),
            ("short", 10, &["short"]),
            ("one two three four", 9, &["one two", "three", "four"]),
            ("abcdefghijkl", 5, &["abcde", "fghij", "kl"]),
            ("a\nb c", 3, &["a", "b c"]),
            ("tab\there", 20, &["tab here"]),
        ];
        for (text, max, want) in cases {
            assert_eq!(wrap(text, max), want, "{text:?} at {max}");
        }
    }

    #[test]
    fn transcript_lines_mark_wrap_and_cut_long_results() {
        let items = vec![
            TranscriptItem::User("find the parser".to_owned()),
            TranscriptItem::ToolCall {
                name: "grep".to_owned(),
                args: "parse src/".to_owned(),
            },
            TranscriptItem::ToolResult {
                name: "grep".to_owned(),
                text: (1..=6).map(|n| format!("hit {n}\n")).collect(),
                is_error: false,
            },
            TranscriptItem::Assistant("The parser lives in src/parse.rs".to_owned()),
        ];
        let lines: Vec<String> = transcript_text(&items, 20)
            .into_iter()
            .map(|(_, text)| text)
            .collect();
        assert_eq!(
            lines,
            [
                "» find the parser",
                "⚙ grep parse src/",
                "  ↳ grep: hit 1",
                "    hit 2",
                "    hit 3",
                "    hit 4",
                "    … 2 more lines",
                "◆ The parser lives",
                "  in src/parse.rs",
            ]
        );
    }

    /// The footer with only the helpers segment, one labelled row per width.
    fn segment_rows(spend: &HelperSpend, widths: &[u16]) -> String {
        let segments: Vec<Segment> = helpers_segment(spend).into_iter().collect();
        widths
            .iter()
            .map(|&w| {
                let row = render_to_string(w, 1, |area, buf| {
                    render_segments(&segments, &Theme::plain(), area, buf);
                });
                format!("{w:>3} {}", row.trim_end())
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn footer_segment_none_running_and_finished() {
        assert_eq!(helpers_segment(&HelperSpend::default()), None);
        let running = HelperSpend {
            running: 2,
            finished: 1,
            tokens: 41_200,
            cost: 0.1234,
        };
        let finished = HelperSpend {
            running: 0,
            finished: 3,
            ..running
        };
        let one = HelperSpend {
            running: 1,
            finished: 0,
            tokens: 800,
            cost: 0.0,
        };
        let text = [
            ("running", segment_rows(&running, &[60, 30, 22, 12])),
            ("finished", segment_rows(&finished, &[60, 22, 12])),
            ("one", segment_rows(&one, &[60])),
        ]
        .map(|(name, rows)| format!("{name}:\n{rows}"))
        .join("\n");
        crate::assert_ui_snapshot!("footer_helpers_segment", text);
        let segment = helpers_segment(&running).map(|s| (s.id, s.group));
        assert_eq!(
            segment,
            Some((SEGMENT_ID.to_owned(), SEGMENT_GROUP.to_owned()))
        );
    }
}

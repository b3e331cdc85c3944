//! Agents in the dock and the helpers footer segment: the main agent, helper runs and
//! read-only delegates as the dock lists them — the dock's generic [`Section`] of rows in a
//! parent → child tree with live status and spend per row and in total, each row's detail with
//! its live transcript — and the footer's `⧉ 2 helpers · 41k tok · $0.12`.
//!
//! Like every dock widget this works on plain view models the app fills: [`AgentRow`] carries
//! display-ready facts (the app turns its board rows and the footer's data into them), and the
//! transcript arrives as [`TranscriptItem`]s, so the widget knows nothing of processes, the
//! board or its controls. The tree is laid out here ([`arrange_agents`]) rather than by the app
//! so the guides the list draws and the order the view selects in come from one place. Spend is
//! shown on every row and summed in the dock's subtitle and the footer, because opaque helper
//! cost is what users of other agent hubs complain about most.

use std::collections::{HashMap, HashSet};

use crate::dock::{
    Body, Detail, Field, Fit, Paragraph, Row, RowFit, Section, Status, Summary, format_runtime,
    plural,
};
use crate::footer::{
    Activity, Align, BridgeLink, FooterData, Form, Piece, ProgramState, Role, Segment, format_cost,
    format_tokens, priority,
};
use crate::text::first_line;

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

    fn role(self) -> Role {
        match self {
            AgentStatus::Running | AgentStatus::Queued => Role::Status(ProgramState::Working),
            AgentStatus::Idle => Role::Status(ProgramState::Idle),
            AgentStatus::Done => Role::Status(ProgramState::Done),
            AgentStatus::Failed | AgentStatus::TimedOut => Role::Error,
            AgentStatus::Stopped => Role::Warning,
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

/// Lines of a tool result shown before the rest is summed up.
const RESULT_LINES: usize = 4;

/// The agents' section of the dock: `agents` (any order) in [`arrange_agents`] order, the main
/// agent first, its spend summed in the subtitle.
pub fn section(agents: Vec<AgentRow>) -> Section {
    let agents = arrange_agents(agents);
    Section {
        title: "agents".to_owned(),
        label: "helpers".to_owned(),
        summary: Summary::Text(agents_summary(&agents)),
        empty: "No agents in this session.".to_owned(),
        hidden: "No running agents. Press h to show history.".to_owned(),
        rows: agents.iter().map(row).collect(),
    }
}

/// The main agent's row from what the app knows of Pi (the footer's data): listed first, as
/// context for the helpers below it.
pub fn main_row(data: &FooterData) -> AgentRow {
    let (status, activity) = match (data.bridge, data.activity) {
        (BridgeLink::Disconnected, _) => (AgentStatus::Idle, "bridge disconnected"),
        (_, Some(Activity::Working)) => (
            AgentStatus::Running,
            data.doing.as_deref().unwrap_or("working"),
        ),
        (_, Some(Activity::Compacting)) => (AgentStatus::Running, "compacting"),
        (_, Some(Activity::Idle) | None) => (AgentStatus::Idle, "idle"),
    };
    let context_percent = data.context.as_ref().and_then(|context| {
        context.percent.or_else(|| {
            let tokens = context.tokens?;
            (context.window > 0).then(|| tokens as f64 * 100.0 / context.window as f64)
        })
    });
    AgentRow {
        id: MAIN_ID.to_owned(),
        kind: AgentKind::Main,
        agent_type: "main".to_owned(),
        model: data.model.clone(),
        description: data
            .session_name
            .clone()
            .unwrap_or_else(|| "this session".to_owned()),
        status,
        tokens: data.tokens_in + data.tokens_out,
        tokens_in: data.tokens_in,
        tokens_out: data.tokens_out,
        cost: data.cost,
        context_percent,
        last_activity: activity.to_owned(),
        ..AgentRow::default()
    }
}

/// One agent as a row of the dock: tree guide, status icon, type and task, id, then status and
/// spend, then the facts that still fit, then the last activity of a running run. Cost stays
/// with the status at any width but the narrowest; the rest goes from the end.
pub fn row(agent: &AgentRow) -> Row {
    let main = agent.kind == AgentKind::Main;
    let finished = agent.status.is_finished();
    let activity = first_line(&agent.last_activity);
    Row {
        id: agent.id.clone(),
        status: Status {
            glyph: agent.status.icon(),
            label: agent.status.label(),
            role: agent.status.role(),
        },
        status_text: agent.status.label().to_owned(),
        name: if main {
            format!("main · {}", agent.description)
        } else {
            format!("{} · {}", agent.agent_type, agent.description)
        },
        tag: if main {
            String::new()
        } else {
            agent.id.clone()
        },
        guide: agent.guide.clone(),
        depth: agent.depth,
        badge: agent.cost.map(|cost| Piece {
            text: format_cost(cost),
            role: Role::Accent,
        }),
        columns: list_facts(agent)
            .into_iter()
            .map(|text| Piece {
                text,
                role: Role::Muted,
            })
            .collect(),
        trailing: (!finished && !activity.is_empty()).then_some(activity),
        // On a narrow dock the id goes first (the detail shows it), then the cost (the
        // subtitle still sums it), so the name keeps at least 8 columns.
        fit: RowFit {
            tag_room: 16,
            name_min: 8,
        },
        finished,
        unseen: agent.unseen,
        cleared: agent.cleared,
        context: main,
        detail: detail(agent),
    }
}

/// An agent in detail: what it is, its spend and context, and its transcript.
fn detail(agent: &AgentRow) -> Detail {
    let main = agent.kind == AgentKind::Main;
    let (title, subtitle, empty) = if main {
        (
            "main agent".to_owned(),
            "main agent · its conversation is Pi's pane".to_owned(),
            "the main agent's conversation is Pi's pane",
        )
    } else if agent.status.is_finished() {
        (
            format!("{}: {}", agent.kind.label(), agent.label()),
            format!("{} · final transcript", agent.id),
            "none kept for this run",
        )
    } else {
        (
            format!("{}: {}", agent.kind.label(), agent.label()),
            format!("{} · live transcript", agent.id),
            "nothing yet",
        )
    };
    Detail {
        title,
        subtitle,
        fields: detail_fields(agent),
        body: Body {
            name: "Transcript",
            empty: empty.to_owned(),
            paragraphs: agent.transcript.iter().map(paragraph).collect(),
        },
    }
}

/// The labelled facts of an agent's detail.
fn detail_fields(row: &AgentRow) -> Vec<Field> {
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
    let mut fields = vec![Field::text("Status", status, row.status.role())];
    if row.kind != AgentKind::Main {
        fields.push(Field::text(
            "Task",
            first_line(&row.description),
            Role::Text,
        ));
    }
    let model = row.model.as_deref().unwrap_or("not reported");
    fields.push(Field::text("Model", model, Role::Text));
    fields.push(Field::text("Usage", usage.join(" · "), Role::Accent));
    if let Some(percent) = row.context_percent {
        let context = format!("{percent:.0}% of the window");
        fields.push(Field::text("Context", context, Role::Text));
    }
    if let Some(secs) = row.elapsed_secs {
        let mut elapsed = format_runtime(secs);
        if !row.started_at.is_empty() {
            elapsed.push_str(&format!(" · started {}", row.started_at));
        }
        fields.push(Field::text("Elapsed", elapsed, Role::Text));
    }
    if row.kind != AgentKind::Main {
        let parent = row.parent.as_deref().unwrap_or(MAIN_ID);
        fields.push(Field::text("Parent", parent, Role::Text));
    }
    if let Some(error) = &row.error {
        fields.push(Field::text("Error", first_line(error), Role::Error));
    }
    fields
}

/// One transcript entry as the detail shows it: a marker, the text wrapped, long tool calls and
/// results cut to a few lines.
fn paragraph(item: &TranscriptItem) -> Paragraph {
    let wrap = |limit| Fit::Wrap { limit };
    let (head, text, role, fit) = match item {
        TranscriptItem::User(text) => ("» ", text.clone(), Role::Accent, wrap(None)),
        TranscriptItem::Assistant(text) => ("◆ ", text.clone(), Role::Text, wrap(None)),
        TranscriptItem::ToolCall { name, args } => (
            "⚙ ",
            format!("{name} {}", first_line(args)),
            Role::Status(ProgramState::Working),
            wrap(Some(1)),
        ),
        TranscriptItem::ToolResult {
            name,
            text,
            is_error,
        } => {
            let (mark, role) = if *is_error {
                ("  ✗ ", Role::Error)
            } else {
                ("  ↳ ", Role::Muted)
            };
            let text = format!("{name}: {}", text.trim_end());
            (mark, text, role, wrap(Some(RESULT_LINES)))
        }
        TranscriptItem::Note(text) => ("• ", text.clone(), Role::Warning, wrap(None)),
    };
    Paragraph {
        head,
        text,
        role,
        fit,
    }
}

/// The summary of the agent rows for the dock's subtitle: `helpers 2 running · 1 done · 41k tok
/// · $0.0434 · all agents $0.1634`.
fn agents_summary(agents: &[AgentRow]) -> String {
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
    use ratatui::layout::{Position, Rect};

    use super::*;
    use crate::dock::{
        DockMode, DockModel, SteerInput, dock_area, entries, laid_out, max_detail_scroll,
        selected_entry, steer_cursor,
    };
    use crate::footer::{ContextUsage, render_segments};
    use crate::tasks::tests::{make_dock_with, mixed_rows, snapshot};
    use crate::test_support::render_to_string;
    use crate::text::width;
    use crate::theme::Theme;

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

    fn main_agent_row() -> AgentRow {
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
            main_agent_row(),
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
        let mut rows = vec![
            main_agent_row(),
            make_agent("h1", None, AgentStatus::Done),
            make_agent("h2", Some("h1"), AgentStatus::Running),
            make_agent("h3", None, AgentStatus::Done),
            make_agent("h4", Some("h3"), AgentStatus::Done),
        ];
        for row in &mut rows {
            row.cleared = row.status.is_finished();
        }
        let ids = |rows: &[AgentRow], show_history: bool| -> Vec<String> {
            let model = DockModel {
                sections: vec![section(rows.to_vec())],
                show_history,
                ..DockModel::default()
            };
            entries(&model)
                .into_iter()
                .map(|entry| entry.row.id.clone())
                .collect()
        };
        assert_eq!(ids(&rows, false), ["main", "h1", "h2"]);
        assert_eq!(ids(&rows, true).len(), 5);
        rows[4].cleared = false; // h4 not cleared: its parent h3 comes back too
        assert_eq!(ids(&rows, false), ["main", "h1", "h2", "h3", "h4"]);
    }

    #[test]
    fn spend_sums_helpers_only() {
        let mut main = main_agent_row();
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
    fn transcript_lines_mark_wrap_and_cut_long_results() {
        let items = [
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
        let paragraphs: Vec<Paragraph> = items.iter().map(paragraph).collect();
        assert_eq!(
            laid_out(&paragraphs, 20),
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

    #[test]
    fn main_row_from_footer_data() {
        let data = FooterData {
            bridge: BridgeLink::Connected,
            activity: Some(Activity::Working),
            model: Some("claude-sonnet-4-5".to_owned()),
            context: Some(ContextUsage {
                tokens: Some(50_000),
                window: 200_000,
                percent: None,
            }),
            tokens_in: 10_000,
            tokens_out: 2_000,
            cost: Some(0.3),
            session_name: Some("refactor".to_owned()),
            ..FooterData::default()
        };
        let row = main_row(&data);
        assert_eq!(row.id, MAIN_ID);
        assert_eq!(row.kind, AgentKind::Main);
        assert_eq!(row.status, AgentStatus::Running);
        assert_eq!(row.tokens, 12_000);
        assert_eq!(row.cost, Some(0.3));
        assert_eq!(row.context_percent, Some(25.0));
        assert_eq!(row.description, "refactor");
        let idle = main_row(&FooterData::default());
        assert_eq!(
            (idle.status, idle.last_activity.as_str()),
            (AgentStatus::Idle, "idle")
        );
        assert_eq!(idle.description, "this session");
    }

    // The dock with agents above the tasks.

    fn make_dock_agent(
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
    /// and a delegate; the section arranges them as the dock lists them.
    fn make_agents() -> Vec<AgentRow> {
        let main = AgentRow {
            id: MAIN_ID.to_owned(),
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
            ..make_dock_agent(
                "h5",
                None,
                "work",
                "fix the flaky resize test",
                AgentStatus::Failed,
            )
        };
        let stopped = AgentRow {
            error: Some("stopped by the user".to_owned()),
            ..make_dock_agent(
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
            ..make_dock_agent(
                "b77",
                None,
                "delegate",
                "review the diff",
                AgentStatus::Running,
            )
        };
        vec![
            make_dock_agent(
                "h1",
                None,
                "explore",
                "map the pane module",
                AgentStatus::Running,
            ),
            make_dock_agent(
                "h2",
                Some("h1"),
                "explore",
                "read the emulator",
                AgentStatus::Running,
            ),
            make_dock_agent(
                "h3",
                Some("h1"),
                "explore",
                "read the encoder",
                AgentStatus::Done,
            ),
            make_dock_agent(
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
        ]
    }

    /// The agents (in the order `arrange_agents` gives them; `h1` at 1) above the mixed tasks.
    fn with_agents(agents: Vec<AgentRow>) -> DockModel {
        let mut model = make_dock_with(mixed_rows());
        model.sections.insert(0, section(agents));
        model
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

    /// The agents with `transcript` on h1.
    fn with_transcript(transcript: Vec<TranscriptItem>) -> Vec<AgentRow> {
        let mut agents = make_agents();
        if let Some(h1) = agents.iter_mut().find(|row| row.id == "h1") {
            h1.transcript = transcript;
        }
        agents
    }

    #[test]
    fn agents_list_with_tree_spend_and_tasks() {
        let mut model = with_agents(make_agents());
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
            .map(|entry| entry.row.id.clone())
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
        // h1 is selected, and it is an agent (the first section), not a task.
        assert_eq!(
            selected_entry(&model).map(|entry| (entry.section, entry.row.id.as_str())),
            Some((0, "h1"))
        );
    }

    #[test]
    fn agents_narrow_keeps_status_and_cost() {
        let mut model = with_agents(make_agents());
        model.selected = 5; // h5, failed
        crate::assert_ui_snapshot!("dock_agents_narrow_50", snapshot(&model, 50, 30));
    }

    #[test]
    fn agent_transcript_detail() {
        let mut model = with_agents(with_transcript(make_transcript()));
        model.selected = 1;
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
        let mut model = with_agents(make_agents());
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
    fn never_panics_on_any_small_screen() {
        let mut model = with_agents(with_transcript(make_transcript()));
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

//! Helper runs and delegates in the dock: the board's rows as the dock's agent rows, the
//! footer's helper spend, and the dock's requests (steer, stop, seen, clear) carried out on the
//! board. The board ([`HelperBoard`]) is the contract with the helper and delegate modules: this
//! file only reads its rows and calls its controls, so it needs nothing from how runs are
//! launched. A run's transcript is kept for the run the dock's detail shows (the board forgets a
//! transcript when the run's process is gone, but a user opening a finished run wants to see how
//! it ended).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use unipi_widgets::agents::{AgentKind, AgentRow, AgentStatus, TranscriptItem};

use crate::bridge::Refusal;
use crate::capability::Changed;
use crate::helpers::board::{BoardRow, HelperBoard, RowKind, TranscriptEntry};
use crate::helpers::runner::RunStatus;
use crate::sys::lock;
use crate::views::RefreshContext;
use crate::views::dock::{
    DockAction, DockRequest, DockSection, DockSource, DockWords, HintTable, Hints, Marks, SCROLL,
    SELECT, Verb, Verbs,
};

/// The agents are listed first, above the tasks.
const RANK: u8 = 0;

/// What the agents' rows are called, and what the row keys do on them as F1 says it (after the
/// tasks' words on the keys both act on: the helpers are registered after them).
pub(super) static WORDS: DockWords = DockWords {
    lists: "helpers",
    keys: &[
        (DockAction::Stop, "(a helper: press twice)"),
        (DockAction::CopyPath, "(a helper's run id)"),
        (
            DockAction::Steer,
            "Type a message to the selected running helper",
        ),
        (
            DockAction::Transcript,
            "Open the selected helper's live transcript",
        ),
    ],
};

/// The list's hints while an agent (main, helper, delegate) is selected.
pub const LIST_HINTS: HintTable = &[
    SELECT,
    (&[DockAction::Transcript, DockAction::Open], "transcript"),
    (&[DockAction::Steer], "steer"),
    (&[DockAction::Stop], "stop"),
    (&[DockAction::History], "history"),
    (&[DockAction::CopyPath], "copy id"),
    (&[DockAction::Back], "close"),
];

/// An agent's detail's hints: its live transcript.
pub const DETAIL_HINTS: HintTable = &[
    SCROLL,
    (&[DockAction::Bottom], "follow"),
    (&[DockAction::Steer], "steer"),
    (&[DockAction::Stop], "stop"),
    (&[DockAction::Back], "back"),
];

/// The agents' part of the dock: `agents` (any order, the main agent's row among them) drawn as
/// their tree by the agents' widget, with what the row keys do on each.
pub fn section(agents: Vec<AgentRow>) -> DockSection {
    let verbs = agents
        .iter()
        .map(|row| (row.id.clone(), verbs(row)))
        .collect();
    DockSection {
        rank: RANK,
        view: unipi_widgets::agents::section(agents),
        verbs,
        hints: Hints {
            list: LIST_HINTS,
            detail: DETAIL_HINTS,
        },
        stop_all: None,
        idle: Verbs::default(),
    }
}

/// What the row keys do on `row`: a running helper is stopped on a second press (its work is
/// lost with it) and takes messages; its run id is copied. The main agent is steered and
/// stopped in Pi, and helpers are not rerun from the dock.
fn verbs(row: &AgentRow) -> Verbs {
    let main = row.kind == AgentKind::Main;
    let finished = row.status.is_finished();
    let label = row.label();
    let (id, status) = (&row.id, row.status.label());
    let stop = if main {
        Verb::Refuse("Stop the main agent in Pi (Esc in its editor).".to_owned())
    } else if finished {
        Verb::Refuse(format!("{label} is {status}; nothing to stop."))
    } else {
        Verb::Confirm {
            what: format!("stop {label}; its work so far is kept"),
            request: DockRequest::Stop(id.clone()),
            notice: format!("Stopping {label}…"),
        }
    };
    let steer = if main {
        Verb::Refuse("Steer the main agent by typing in Pi.".to_owned())
    } else if finished {
        Verb::Refuse(format!("{label} has ended; it cannot be steered."))
    } else {
        Verb::Message {
            label: label.clone(),
        }
    };
    let copy = if main {
        Verb::Refuse("The main agent has no run id to copy.".to_owned())
    } else {
        Verb::Copy {
            text: id.clone(),
            notice: format!("Copied the run id {id}."),
        }
    };
    Verbs::default()
        .on(DockAction::Stop, stop)
        .on(DockAction::Steer, steer)
        .on(
            DockAction::Rerun,
            Verb::Refuse(
                "Helpers are not rerun from the dock; ask the agent to run one again.".to_owned(),
            ),
        )
        .on(DockAction::CopyPath, copy)
}

/// The helpers' [`DockSource`].
pub(crate) struct HelperDock {
    board: HelperBoard,
    marks: Mutex<Marks>,
    /// The run the dock's detail shows.
    detail: Mutex<Option<String>>,
    /// The last non-empty transcript read per run.
    transcripts: Mutex<HashMap<String, Vec<TranscriptItem>>>,
    changed: Changed,
}

impl HelperDock {
    pub(crate) fn new(board: HelperBoard, changed: Changed) -> Self {
        HelperDock {
            board,
            marks: Mutex::new(Marks::default()),
            detail: Mutex::new(None),
            transcripts: Mutex::new(HashMap::new()),
            changed,
        }
    }

    /// Run `id`'s transcript: live while its controls are attached, else the last one read.
    pub(crate) fn transcript(&self, id: &str) -> Vec<TranscriptItem> {
        let live = transcript_items(&self.board.transcript(id));
        let mut kept = lock(&self.transcripts);
        if live.is_empty() {
            return kept.get(id).cloned().unwrap_or_default();
        }
        kept.insert(id.to_owned(), live.clone());
        live
    }

    /// The board's runs as agent rows, without transcripts (the footer's spend).
    pub(crate) fn spend(&self) -> unipi_widgets::agents::HelperSpend {
        let marks = lock(&self.marks).clone();
        let now = SystemTime::now();
        let rows: Vec<AgentRow> = self
            .board
            .rows()
            .iter()
            .map(|row| agent_row(row, &marks, now))
            .collect();
        unipi_widgets::agents::helper_spend(&rows)
    }

    /// The board's runs as agent rows (the transcript filled in for the run the detail shows).
    pub(crate) fn agent_rows(&self) -> Vec<AgentRow> {
        let now = SystemTime::now();
        let marks = lock(&self.marks).clone();
        let mut rows: Vec<AgentRow> = self
            .board
            .rows()
            .iter()
            .map(|row| agent_row(row, &marks, now))
            .collect();
        let detail = lock(&self.detail).clone();
        if let Some(target) = detail
            && let Some(row) = rows.iter_mut().find(|row| row.id == target)
        {
            row.transcript = self.transcript(&target);
        }
        rows
    }
}

impl DockSource for HelperDock {
    /// Nothing until the board has had a run; then the runs under the main agent's row, from
    /// what the app knows of Pi.
    fn section(&self, context: &RefreshContext<'_>) -> Option<DockSection> {
        let mut rows = self.agent_rows();
        if rows.is_empty() {
            return None;
        }
        rows.push(unipi_widgets::agents::main_row(context.pi));
        Some(section(rows))
    }

    fn request(&self, request: &DockRequest) -> Result<(), Refusal> {
        let listed = |id: &str| self.board.row(id).is_some();
        match request {
            DockRequest::Detail(target) => {
                *lock(&self.detail) = target.clone().filter(|id| listed(id));
            }
            DockRequest::MarkSeen(id) if listed(id) => {
                lock(&self.marks).seen.insert(id.clone());
                self.changed.bump();
            }
            // A steer is queued for the child's next model call, a stop signals the process
            // group: both return at once.
            DockRequest::Steer { id, message } if listed(id) => {
                let result = self.board.steer(id, message.clone());
                if let Err(err) = &result {
                    tracing::info!("steer {id}: {err}");
                }
                return result;
            }
            DockRequest::Stop(id) if listed(id) => {
                if !self.board.stop(id) {
                    return Err(format!("{id} has no live process to stop.").into());
                }
            }
            DockRequest::ClearFinished => {
                let mut marks = lock(&self.marks);
                for row in self.board.rows() {
                    if !row.is_running() {
                        marks.seen.insert(row.id.clone());
                        marks.cleared.insert(row.id);
                    }
                }
                drop(marks);
                self.changed.bump();
            }
            DockRequest::MarkSeen(_)
            | DockRequest::Steer { .. }
            | DockRequest::Stop(_)
            | DockRequest::StopAll
            | DockRequest::Rerun(_) => {}
        }
        Ok(())
    }
}

/// One board row as the dock shows it. `marks` says which finished runs were looked at or
/// cleared (the same marks as for tasks: ids do not collide).
pub(crate) fn agent_row(row: &BoardRow, marks: &Marks, now: SystemTime) -> AgentRow {
    let status = match row.status {
        RunStatus::Queued => AgentStatus::Queued,
        RunStatus::Running => AgentStatus::Running,
        RunStatus::Completed => AgentStatus::Done,
        RunStatus::Failed => AgentStatus::Failed,
        RunStatus::Stopped => AgentStatus::Stopped,
        RunStatus::TimedOut => AgentStatus::TimedOut,
    };
    let usage = &row.usage;
    // Pi's total counts the cache too; some providers leave it at zero.
    let tokens = if usage.total > 0 {
        usage.total
    } else {
        usage.input + usage.output + usage.cache_read + usage.cache_write
    };
    let finished = status.is_finished();
    AgentRow {
        id: row.id.clone(),
        parent: row.parent.clone(),
        kind: match row.kind {
            RowKind::Helper => AgentKind::Helper,
            RowKind::Delegate => AgentKind::Delegate,
        },
        agent_type: row.agent_type.clone(),
        model: row.model.clone(),
        description: row.description.clone(),
        status,
        turns: Some(row.turns),
        tool_uses: Some(row.tool_uses),
        tokens,
        tokens_in: usage.input,
        tokens_out: usage.output,
        // Nothing spent yet is not "no cost reported": a fresh run shows no cost at all.
        cost: (usage.cost > 0.0 || tokens > 0).then_some(usage.cost),
        context_percent: row.context_percent,
        elapsed_secs: Some(row.elapsed(now).as_secs()),
        last_activity: row.last_activity.clone(),
        error: row.error.clone(),
        started_at: crate::sys::utc_clock(
            row.started_at
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| since.as_millis() as u64),
        ),
        unseen: finished && !marks.seen.contains(&row.id),
        cleared: finished && marks.cleared.contains(&row.id),
        ..AgentRow::default()
    }
}

/// The board's transcript entries as the dock's items.
pub(crate) fn transcript_items(entries: &[TranscriptEntry]) -> Vec<TranscriptItem> {
    entries
        .iter()
        .map(|entry| match entry {
            TranscriptEntry::User(text) => TranscriptItem::User(text.clone()),
            TranscriptEntry::Assistant(text) => TranscriptItem::Assistant(text.clone()),
            TranscriptEntry::ToolCall { name, args } => TranscriptItem::ToolCall {
                name: name.clone(),
                args: args.clone(),
            },
            TranscriptEntry::ToolResult {
                name,
                text,
                is_error,
            } => TranscriptItem::ToolResult {
                name: name.clone(),
                text: text.clone(),
                is_error: *is_error,
            },
            TranscriptEntry::Note(text) => TranscriptItem::Note(text.clone()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use std::sync::Arc;

    use crossterm::event::{KeyCode, KeyEvent};
    use unipi_widgets::agents::{HelperSpend, MAIN_ID, helper_spend};
    use unipi_widgets::footer::FooterData;

    use super::*;
    use crate::config::keymap::Keymap;
    use crate::helpers::board::RunControl;
    use crate::helpers::events::Usage;
    use crate::views::dock::DockView;
    use crate::views::test_keys::key as press;
    use crate::views::{RefreshContext, View};

    /// A RunControl that records what the dock asked of it and answers steers with `answer`.
    struct Recorder {
        calls: Mutex<Vec<String>>,
        answer: Result<(), Refusal>,
    }

    impl Recorder {
        fn new(answer: Result<(), Refusal>) -> Arc<Self> {
            Arc::new(Recorder {
                calls: Mutex::new(Vec::new()),
                answer,
            })
        }

        fn calls(&self) -> Vec<String> {
            self.calls.lock().unwrap().clone()
        }
    }

    impl RunControl for Recorder {
        fn steer(&self, message: String) -> Result<(), Refusal> {
            self.calls.lock().unwrap().push(format!("steer {message}"));
            self.answer.clone()
        }
        fn stop(&self) {
            self.calls.lock().unwrap().push("stop".to_owned());
        }
        fn transcript(&self) -> Vec<TranscriptEntry> {
            vec![
                TranscriptEntry::User("look around".to_owned()),
                TranscriptEntry::ToolCall {
                    name: "read".to_owned(),
                    args: "src/lib.rs".to_owned(),
                },
            ]
        }
    }

    fn make_board_row(id: &str, parent: Option<&str>, status: RunStatus) -> BoardRow {
        let mut row = BoardRow::new(id, RowKind::Helper, "explore", format!("task {id}"));
        row.parent = parent.map(str::to_owned);
        row.status = status;
        row.turns = 2;
        row.tool_uses = 5;
        row.usage = Usage {
            input: 30_000,
            output: 2_000,
            total: 32_000,
            cost: 0.05,
            ..Usage::default()
        };
        row.started_at = UNIX_EPOCH + Duration::from_secs(3_600);
        row
    }

    /// A dock over a board with h1 running (controls attached) and h2, its child, done; opened
    /// on h1.
    fn make_board_dock(recorder: Arc<Recorder>) -> (HelperBoard, DockView) {
        let board = HelperBoard::new();
        board.upsert(make_board_row("h1", None, RunStatus::Running));
        board.upsert(make_board_row("h2", Some("h1"), RunStatus::Completed));
        board.attach_control("h1", recorder);
        let source = Arc::new(HelperDock::new(board.clone(), Changed::default()));
        let dock = DockView::open(
            vec![source],
            &Keymap::defaults(),
            &RefreshContext {
                pi: &FooterData::default(),
            },
        );
        assert_eq!(
            unipi_widgets::dock::entries(dock.model())
                .first()
                .map(|entry| entry.row.id.as_str()),
            Some(MAIN_ID)
        );
        (board, dock)
    }

    /// Feed `keys` to the dock (its requests reach the board through the source).
    fn drive(_board: &HelperBoard, dock: &mut DockView, keys: &[KeyEvent]) {
        for key in keys {
            dock.handle_key(key);
        }
    }

    /// `m`, `text` typed into the steer input, Enter.
    fn steer_keys(text: &str) -> Vec<KeyEvent> {
        let typed = text.chars().map(|c| press(KeyCode::Char(c)));
        std::iter::once(press(KeyCode::Char('m')))
            .chain(typed)
            .chain([press(KeyCode::Enter)])
            .collect()
    }

    #[test]
    fn enter_in_the_steer_input_reaches_the_run_control() {
        let recorder = Recorder::new(Ok(()));
        let (board, mut dock) = make_board_dock(Arc::clone(&recorder));
        drive(&board, &mut dock, &steer_keys("look at the tests"));
        assert_eq!(recorder.calls(), ["steer look at the tests"]);
        assert_eq!(dock.model().steer, None);
        assert_eq!(dock.model().notice.as_deref(), Some("Sent to explore h1."));
    }

    #[test]
    fn a_refused_steer_shows_the_boards_error_inline() {
        let recorder = Recorder::new(Err("the child has no steering channel".into()));
        let (board, mut dock) = make_board_dock(Arc::clone(&recorder));
        drive(&board, &mut dock, &steer_keys("hurry"));
        assert_eq!(recorder.calls(), ["steer hurry"]);
        let steer = dock.model().steer.clone().unwrap_or_default();
        assert_eq!(
            steer.error.as_deref(),
            Some("the child has no steering channel")
        );
        // A run whose controls are gone: the board's own error.
        board.detach_control("h1");
        drive(&board, &mut dock, &[press(KeyCode::Enter)]);
        let steer = dock.model().steer.clone().unwrap_or_default();
        assert_eq!(steer.error.as_deref(), Some("run h1 is not running"));
    }

    #[test]
    fn stop_reaches_the_run_only_after_the_confirming_press() {
        let recorder = Recorder::new(Ok(()));
        let (board, mut dock) = make_board_dock(Arc::clone(&recorder));
        drive(&board, &mut dock, &[press(KeyCode::Char('s'))]);
        assert!(recorder.calls().is_empty(), "one press only arms");
        drive(&board, &mut dock, &[press(KeyCode::Char('s'))]);
        assert_eq!(recorder.calls(), ["stop"]);
        // Esc backs out of the dock without touching the run.
        drive(&board, &mut dock, &[press(KeyCode::Esc)]);
        assert_eq!(recorder.calls(), ["stop"]);
    }

    #[test]
    fn board_rows_become_agent_rows() {
        let now = UNIX_EPOCH + Duration::from_secs(3_725);
        let mut marks = Marks::default();
        let running = agent_row(&make_board_row("h1", None, RunStatus::Running), &marks, now);
        assert_eq!(running.status, AgentStatus::Running);
        assert_eq!(
            (running.tokens, running.tokens_in, running.tokens_out),
            (32_000, 30_000, 2_000)
        );
        assert_eq!(running.cost, Some(0.05));
        assert_eq!(running.elapsed_secs, Some(125));
        assert_eq!(running.started_at, "01:00:00 UTC");
        assert_eq!((running.turns, running.tool_uses), (Some(2), Some(5)));
        assert!(!running.unseen);
        // A finished run is unseen until looked at, and cleared once cleared.
        let done = make_board_row("h2", Some("h1"), RunStatus::Completed);
        let row = agent_row(&done, &marks, now);
        assert!(row.unseen && !row.cleared);
        assert_eq!(row.parent.as_deref(), Some("h1"));
        marks.seen.insert("h2".to_owned());
        marks.cleared.insert("h2".to_owned());
        let row = agent_row(&done, &marks, now);
        assert!(!row.unseen && row.cleared);
        // Status table.
        let statuses = [
            (RunStatus::Queued, AgentStatus::Queued),
            (RunStatus::Failed, AgentStatus::Failed),
            (RunStatus::Stopped, AgentStatus::Stopped),
            (RunStatus::TimedOut, AgentStatus::TimedOut),
        ];
        for (run, want) in statuses {
            let row = agent_row(&make_board_row("x", None, run), &marks, now);
            assert_eq!(row.status, want, "{run:?}");
        }
        // No total from the provider: the parts are summed. Nothing spent: no cost shown.
        let mut fresh = make_board_row("h3", None, RunStatus::Queued);
        fresh.usage = Usage::default();
        assert_eq!(agent_row(&fresh, &marks, now).cost, None);
        fresh.usage = Usage {
            input: 10,
            output: 5,
            cache_read: 100,
            ..Usage::default()
        };
        assert_eq!(agent_row(&fresh, &marks, now).tokens, 115);
    }

    #[test]
    fn transcripts_outlive_the_runs_controls() {
        let recorder = Recorder::new(Ok(()));
        let board = HelperBoard::new();
        board.upsert(make_board_row("h1", None, RunStatus::Running));
        board.attach_control("h1", recorder);
        let helpers = HelperDock::new(board.clone(), Changed::default());
        assert_eq!(helpers.transcript("h1").len(), 2);
        board.detach_control("h1");
        assert_eq!(
            helpers.transcript("h1"),
            [
                TranscriptItem::User("look around".to_owned()),
                TranscriptItem::ToolCall {
                    name: "read".to_owned(),
                    args: "src/lib.rs".to_owned(),
                },
            ]
        );
        assert!(helpers.transcript("never-seen").is_empty());
    }

    #[test]
    fn spend_counts_running_and_finished_runs() {
        let rows = [
            make_board_row("h1", None, RunStatus::Running),
            make_board_row("h2", Some("h1"), RunStatus::Completed),
            make_board_row("h3", None, RunStatus::Failed),
        ];
        let spend_of = |rows: &[BoardRow]| {
            let agents: Vec<AgentRow> = rows
                .iter()
                .map(|row| agent_row(row, &Marks::default(), SystemTime::now()))
                .collect();
            helper_spend(&agents)
        };
        let spend = spend_of(&rows);
        assert_eq!((spend.running, spend.finished), (1, 2));
        assert_eq!(spend.tokens, 96_000);
        assert!((spend.cost - 0.15).abs() < 1e-9);
        assert_eq!(spend_of(&[]), HelperSpend::default());
    }
}

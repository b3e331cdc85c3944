//! The helper board: every helper run and read-only delegate this workbench knows, as rows the
//! dock and the footer read, plus the controls a row offers (live transcript, steer, stop).
//!
//! Producers (the helpers module, the delegate module) upsert rows and attach a [`RunControl`]
//! per run; consumers read [`HelperBoard::rows`] when [`HelperBoard::subscribe`] says something
//! changed. The board knows nothing of processes or widgets: it is the one place the two sides
//! meet, so neither imports the other.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;

use super::events::Usage;
use super::run_status::RunStatus;
use crate::bridge::Refusal;
use crate::sys::{Changed, lock};

/// What kind of child a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    /// A `spawn_helper` run.
    Helper,
    /// A read-only `bg_delegate` child.
    Delegate,
}

impl RowKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Helper => "helper",
            Self::Delegate => "delegate",
        }
    }
}

/// One run as the dock shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct BoardRow {
    /// The run id (`h…` for helpers, the task id for delegates).
    pub id: String,
    /// The run that spawned this one; `None` when the main agent did.
    pub parent: Option<String>,
    pub kind: RowKind,
    /// The agent type (`explore`, `work`, a custom type, `delegate`).
    pub agent_type: String,
    /// `provider/model` when known.
    pub model: Option<String>,
    pub description: String,
    pub status: RunStatus,
    pub turns: u32,
    pub tool_uses: usize,
    pub usage: Usage,
    /// The child's context use in percent of its window, when known.
    pub context_percent: Option<f64>,
    pub started_at: SystemTime,
    /// How long the run took, once it ended.
    pub duration: Option<Duration>,
    /// The latest activity (`read src/main.rs`, the first words of a reply, an error).
    pub last_activity: String,
    /// Why it failed or was stopped.
    pub error: Option<String>,
}

impl BoardRow {
    /// A fresh row for a run that is starting.
    pub fn new(
        id: impl Into<String>,
        kind: RowKind,
        agent_type: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            parent: None,
            kind,
            agent_type: agent_type.into(),
            model: None,
            description: description.into(),
            status: RunStatus::Queued,
            turns: 0,
            tool_uses: 0,
            usage: Usage::default(),
            context_percent: None,
            started_at: SystemTime::now(),
            duration: None,
            last_activity: String::new(),
            error: None,
        }
    }

    pub fn is_running(&self) -> bool {
        !self.status.is_terminal()
    }

    /// Elapsed time: the duration once ended, else time since the start.
    pub fn elapsed(&self, now: SystemTime) -> Duration {
        self.duration
            .unwrap_or_else(|| now.duration_since(self.started_at).unwrap_or_default())
    }
}

/// One entry of a run's live transcript.
#[derive(Debug, Clone, PartialEq)]
pub enum TranscriptEntry {
    /// The task or a steering message sent to the child.
    User(String),
    /// Assistant text (one message).
    Assistant(String),
    /// A tool call: name and a one-line summary of its arguments.
    ToolCall { name: String, args: String },
    /// A tool's result, bounded.
    ToolResult {
        name: String,
        text: String,
        is_error: bool,
    },
    /// Something the workbench did or noticed (budget steer, stop, retry).
    Note(String),
}

/// What a row's owner lets the dock do with a run.
pub trait RunControl: Send + Sync + 'static {
    /// Delivers `message` to the child before its next model call. An error says why it cannot
    /// (the run ended, the child has no steering channel).
    fn steer(&self, message: String) -> Result<(), Refusal>;
    /// Asks the run to stop (SIGTERM to its group, SIGKILL after the grace). Returns at once.
    fn stop(&self);
    /// [`RunControl::stop`] because the workbench is exiting (the run's result says so).
    fn stop_at_exit(&self) {
        self.stop();
    }
    /// The transcript so far.
    fn transcript(&self) -> Vec<TranscriptEntry>;
}

#[derive(Default)]
struct BoardState {
    /// Rows in insertion order (the dock sorts as it likes).
    order: Vec<String>,
    rows: HashMap<String, BoardRow>,
    controls: HashMap<String, Arc<dyn RunControl>>,
}

/// The board. Cheap to clone; all clones share one state.
#[derive(Clone)]
pub struct HelperBoard {
    state: Arc<Mutex<BoardState>>,
    version: Changed,
}

impl Default for HelperBoard {
    fn default() -> Self {
        Self::new()
    }
}

impl HelperBoard {
    pub fn new() -> Self {
        Self {
            state: Arc::new(Mutex::new(BoardState::default())),
            version: Changed::default(),
        }
    }

    /// Adds or replaces a row (matched by id).
    pub fn upsert(&self, row: BoardRow) {
        let mut state = self.lock();
        if !state.rows.contains_key(&row.id) {
            state.order.push(row.id.clone());
        }
        state.rows.insert(row.id.clone(), row);
        drop(state);
        self.bump();
    }

    /// Changes a row in place; false when there is no such row.
    pub fn update(&self, id: &str, change: impl FnOnce(&mut BoardRow)) -> bool {
        let mut state = self.lock();
        let Some(row) = state.rows.get_mut(id) else {
            return false;
        };
        change(row);
        drop(state);
        self.bump();
        true
    }

    /// Attaches the controls of a run (replacing earlier ones).
    pub fn attach_control(&self, id: &str, control: Arc<dyn RunControl>) {
        self.lock().controls.insert(id.to_string(), control);
    }

    /// Drops a run's controls (its process is gone); the row stays.
    pub fn detach_control(&self, id: &str) {
        self.lock().controls.remove(id);
    }

    /// All rows in the order they were first added.
    pub fn rows(&self) -> Vec<BoardRow> {
        let state = self.lock();
        state
            .order
            .iter()
            .filter_map(|id| state.rows.get(id).cloned())
            .collect()
    }

    pub fn row(&self, id: &str) -> Option<BoardRow> {
        self.lock().rows.get(id).cloned()
    }

    /// A receiver whose value changes on every change to the board.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// Steers run `id`; the error names why not.
    pub fn steer(&self, id: &str, message: String) -> Result<(), Refusal> {
        match self.control(id) {
            Some(control) => control.steer(message),
            None => Err(format!("run {id} is not running").into()),
        }
    }

    /// Stops run `id`; false when it has no live process.
    pub fn stop(&self, id: &str) -> bool {
        match self.control(id) {
            Some(control) => {
                control.stop();
                true
            }
            None => false,
        }
    }

    /// Run `id`'s transcript (empty when unknown or without one).
    pub fn transcript(&self, id: &str) -> Vec<TranscriptEntry> {
        self.control(id)
            .map(|control| control.transcript())
            .unwrap_or_default()
    }

    fn control(&self, id: &str) -> Option<Arc<dyn RunControl>> {
        self.lock().controls.get(id).cloned()
    }

    fn bump(&self) {
        self.version.bump();
    }

    /// A poisoned lock only means a producer panicked mid-update; the rows stay readable.
    fn lock(&self) -> MutexGuard<'_, BoardState> {
        lock(&self.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Recorder(Mutex<Vec<String>>);

    impl RunControl for Recorder {
        fn steer(&self, message: String) -> Result<(), Refusal> {
            self.0.lock().unwrap().push(format!("steer {message}"));
            Ok(())
        }
        fn stop(&self) {
            self.0.lock().unwrap().push("stop".to_string());
        }
        fn transcript(&self) -> Vec<TranscriptEntry> {
            vec![TranscriptEntry::User("task".into())]
        }
    }

    #[test]
    fn rows_keep_their_order_and_changes_are_signalled() {
        let board = HelperBoard::new();
        let mut changes = board.subscribe();
        board.upsert(BoardRow::new("a", RowKind::Helper, "explore", "look"));
        board.upsert(BoardRow::new("b", RowKind::Delegate, "delegate", "ask"));
        assert!(changes.has_changed().unwrap());
        changes.borrow_and_update();
        assert!(board.update("a", |row| row.turns = 3));
        assert!(!board.update("zz", |row| row.turns = 3));
        assert!(changes.has_changed().unwrap());
        let rows = board.rows();
        assert_eq!(
            rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(rows[0].turns, 3);
        board.upsert(BoardRow::new("a", RowKind::Helper, "explore", "again"));
        assert_eq!(board.rows().len(), 2);
        assert_eq!(board.rows()[0].description, "again");
    }

    #[test]
    fn controls_reach_the_run_and_vanish_when_detached() {
        let board = HelperBoard::new();
        let recorder = Arc::new(Recorder(Mutex::new(Vec::new())));
        board.upsert(BoardRow::new("a", RowKind::Helper, "work", "fix"));
        board.attach_control("a", recorder.clone());
        board.steer("a", "hurry".into()).unwrap();
        assert!(board.stop("a"));
        assert_eq!(board.transcript("a").len(), 1);
        board.detach_control("a");
        assert!(
            board
                .steer("a", "x".into())
                .unwrap_err()
                .contains("not running")
        );
        assert!(!board.stop("a"));
        assert!(board.transcript("a").is_empty());
        assert_eq!(
            *recorder.0.lock().unwrap(),
            ["steer hurry".to_string(), "stop".to_string()]
        );
    }
}

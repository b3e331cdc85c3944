//! The dock's contract with the capabilities that list entries in it. A [`DockSource`] gives its
//! [`DockSection`] from memory — the rows its widget made (`unipi_widgets::dock::Section`), what
//! each of the dock's row keys does on each row ([`Verb`]), its hint lines, whether stop-all
//! reaches it — and takes the dock's [`DockRequest`]s. The dock knows no capability and no kind
//! of row: it lists the sections it is given, runs the verbs, sends each request to the source
//! that listed the entry, and pulls fresh sections when the app tells it something changed.
//!
//! A source does no I/O in [`DockSource::section`] (it is called on the UI loop): whatever needs
//! reading — an output tail, a transcript — the source reads in the background when the dock asks
//! for that entry's detail ([`DockRequest::Detail`]) and signals a change when it has it.
//! [`DockSource::request`] answers at once; work that takes time shows up in the rows later.

use std::collections::{HashMap, HashSet};

use unipi_widgets::dock::Section;

use super::keys::{DockAction, HintTable};
use crate::bridge::Refusal;
use crate::views::RefreshContext;

/// A capability's entries in the dock.
pub trait DockSource: Send + Sync {
    /// Its section now, from memory; `None` when it has nothing to list (the dock leaves it
    /// out). `context` is what the app knows of Pi.
    fn section(&self, context: &RefreshContext<'_>) -> Option<DockSection>;

    /// Carries out `request`. `Err` is shown to the user (a refused message, a run that has no
    /// live process); requests about entries the source does not list are ignored.
    fn request(&self, request: &DockRequest) -> Result<(), Refusal>;
}

/// One capability's part of the dock.
#[derive(Clone, Debug, PartialEq)]
pub struct DockSection {
    /// Sections are listed by rank, lowest first; equal ranks keep the sources' order. An id a
    /// section lists hides the same id in the sections after it.
    pub rank: u8,
    /// What the widget draws.
    pub view: Section,
    /// What the row keys do, by row id; a key a row has no verb for does nothing on it.
    pub verbs: HashMap<String, Verbs>,
    /// The hint lines while one of its rows is selected.
    pub hints: Hints,
    /// Whether stop-all stops its running rows, and how its notices say so.
    pub stop_all: Option<StopAll>,
    /// What the row keys say while the list is empty, when this is the last section (only
    /// refusals apply: there is no row to act on).
    pub idle: Verbs,
}

/// What each of the dock's row keys (stop, rerun, copy, message) does on one row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verbs(Vec<(DockAction, Verb)>);

impl Verbs {
    /// These verbs, and `action` doing `verb`.
    pub fn on(mut self, action: DockAction, verb: Verb) -> Self {
        self.0.push((action, verb));
        self
    }

    pub fn get(&self, action: DockAction) -> Option<&Verb> {
        self.0
            .iter()
            .find(|(bound, _)| *bound == action)
            .map(|(_, verb)| verb)
    }
}

/// What a row key does on a row.
#[derive(Clone, Debug, PartialEq)]
pub enum Verb {
    /// Nothing; the notice says why.
    Refuse(String),
    /// Send `request` to the source and show `notice` (or the source's refusal).
    Ask {
        request: DockRequest,
        notice: String,
    },
    /// Like [`Verb::Ask`], on a second press of the same key on the same row; the first says
    /// "Press {key} again to {what}".
    Confirm {
        what: String,
        request: DockRequest,
        notice: String,
    },
    /// Copy `text` to the clipboard and show `notice`.
    Copy { text: String, notice: String },
    /// Open the message input for this row; `label` is what its prompt calls the row.
    Message { label: String },
}

/// A section's hint lines: (keys, what they do), in the order shown.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hints {
    /// In the list, with one of its rows selected.
    pub list: HintTable,
    /// In the detail of one of its rows.
    pub detail: HintTable,
}

/// How stop-all speaks of a section's rows: the noun for one and for many, and the notice when
/// none runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopAll {
    pub one: &'static str,
    pub many: &'static str,
    pub none: &'static str,
}

/// What a capability that lists rows in the dock says of them before there is any row to show,
/// declared once in its registration ([`crate::capability::Registration::dock`]): the dock
/// itself names no kind of row.
#[derive(Debug)]
pub struct DockWords {
    /// What it lists, in the plural: the notice when no capability that lists rows is running
    /// names each.
    pub lists: &'static str,
    /// What the dock's row keys do on its rows, as F1 says it. F1 joins the words of every
    /// registration for a key with a space, in registration order: the first says what the key
    /// does, a later one adds in parentheses what differs on its rows. A key no registration
    /// speaks of keeps its table's description.
    pub keys: &'static [(DockAction, &'static str)],
}

impl DockWords {
    /// What F1 says `action` does, from the words of `all` ([`DockWords::keys`]); `None` when
    /// none speaks of it.
    pub(crate) fn of_key(all: &[&DockWords], action: DockAction) -> Option<String> {
        let words: Vec<&str> = all
            .iter()
            .flat_map(|words| words.keys)
            .filter(|(bound, _)| *bound == action)
            .map(|(_, words)| *words)
            .collect();
        (!words.is_empty()).then(|| words.join(" "))
    }

    /// The notice when the dock would list nothing because no capability that lists rows runs:
    /// "Nothing to dock: a, b and c are off".
    pub fn nothing_to_dock(all: &[&DockWords]) -> String {
        let lists: Vec<&str> = all.iter().map(|words| words.lists).collect();
        match lists.split_last() {
            None => "Nothing to dock".to_owned(),
            Some((only, [])) => format!("Nothing to dock: {only} is off"),
            Some((last, rest)) => {
                format!("Nothing to dock: {} and {last} are off", rest.join(", "))
            }
        }
    }
}

/// What the dock asks of the source that listed an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DockRequest {
    /// The detail now shows this entry (`None`: back to the list). The source reads what the
    /// detail needs in the background.
    Detail(Option<String>),
    /// The user looked at this finished entry: it is no longer unseen.
    MarkSeen(String),
    /// Stop this entry (confirmed already where its verb asks for that).
    Stop(String),
    /// Stop every running entry of the source.
    StopAll,
    /// Start this finished entry again.
    Rerun(String),
    /// Deliver `message` to entry `id`.
    Steer { id: String, message: String },
    /// Mark every finished entry seen and cleared (`Ctrl+Alt+C`).
    ClearFinished,
}

/// What the user did with a source's finished entries; each source keeps its own.
#[derive(Debug, Default, Clone)]
pub struct Marks {
    /// Looked at (the "unseen" marker goes).
    pub seen: HashSet<String>,
    /// Cleared from the list (Ctrl+Alt+C): shown only with history on.
    pub cleared: HashSet<String>,
}

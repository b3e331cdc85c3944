//! The dock's contract with the capabilities that list entries in it: a [`DockSource`] gives its
//! rows from memory and takes the dock's [`DockRequest`]s on them. The dock knows no capability;
//! it holds the sources it was opened with, sends each request to the source that listed the
//! entry, and pulls fresh rows when the app tells it something changed.
//!
//! A source does no I/O in [`DockSource::rows`] (it is called on the UI loop): whatever needs
//! reading — a task's output tail, a helper's transcript — the source reads in the background
//! when the dock asks for that entry's detail ([`DockRequest::Detail`]) and signals a change
//! when it has it. [`DockSource::request`] answers at once; work that takes time shows up in the
//! rows later.

use std::collections::HashSet;

use unipi_widgets::agents::AgentRow;
use unipi_widgets::dock::DockRow;

/// What a source lists: background tasks, or agent runs (helpers, delegates).
#[derive(Clone, Debug, PartialEq)]
pub enum DockRows {
    Tasks(Vec<DockRow>),
    Agents(Vec<AgentRow>),
}

/// What the dock asks of the source that listed an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DockRequest {
    /// The detail now shows this entry (`None`: back to the list). The source reads what the
    /// detail needs (output tail, transcript) in the background.
    Detail(Option<String>),
    /// The user looked at this finished entry: it is no longer unseen.
    MarkSeen(String),
    /// Stop this entry (a helper's stop is confirmed already).
    Stop(String),
    /// Stop every running task of the source.
    StopAll,
    /// Start this finished shell task again (same command and settings; it does not wake the
    /// agent).
    Rerun(String),
    /// Deliver `message` to run `id` before its next model call.
    Steer { id: String, message: String },
    /// Mark every finished entry seen and cleared (`Ctrl+Alt+C`).
    ClearFinished,
}

/// A capability's entries in the dock.
pub trait DockSource: Send + Sync {
    /// Its rows now, from memory.
    fn rows(&self) -> DockRows;

    /// Carries out `request`. `Err` is shown to the user (a refused steer, a run that has no live
    /// process); requests about entries the source does not list are ignored.
    fn request(&self, request: &DockRequest) -> Result<(), String>;
}

/// What the user did with a source's finished entries; each source keeps its own.
#[derive(Debug, Default, Clone)]
pub struct Marks {
    /// Looked at (the "unseen" marker goes).
    pub seen: HashSet<String>,
    /// Cleared from the list (Ctrl+Alt+C): shown only with history on.
    pub cleared: HashSet<String>,
}

//! The helpers module's bookkeeping, behind one lock: the counters the caps look at (spawns,
//! running and background runs, spawns granted on top of the session cap, spawns per run
//! tree), the runs of this session in start order, the helpers' own Pis as callers, the agents'
//! session files (for `context: fork`) and the open supervisor questions. Everything else reads
//! and changes it through the methods here, so a count is never changed without its pair (a
//! spawn and its concurrency slot, a slot and its release).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::{oneshot, watch};

use super::board::RunControl;
use super::config::HelpersConfig;
use super::preflight::{Admission, Counters};
use super::results::HelperResult;
use super::runner::Progress;
use super::runs::{Caller, ChildAgent, RunInfo};
use crate::bridge::AgentId;
use crate::sys::lock;

#[derive(Default)]
pub(super) struct RunLedger {
    counters: Counters,
    /// Spawns granted on top of the config's session cap.
    granted: u32,
    runs: HashMap<String, RunEntry>,
    /// Run ids in start order.
    order: Vec<String>,
    /// The helpers' own Pis, by their bridge agent id.
    children: HashMap<AgentId, ChildAgent>,
    /// Spawns per top-level run tree.
    run_spawns: HashMap<String, u32>,
    /// Session files by agent (for `context: fork`).
    sessions: HashMap<AgentId, PathBuf>,
    /// Open supervisor questions by run id.
    questions: HashMap<String, oneshot::Sender<String>>,
}

impl RunLedger {
    /// The caller behind `agent`: a helper's own Pi when it is one of ours, else the root at
    /// `root_depth` (this process's depth).
    pub(super) fn caller(&self, agent: &AgentId, root_depth: u32) -> Caller {
        match self.children.get(agent) {
            Some(child) => Caller {
                agent: agent.clone(),
                depth: child.depth,
                run: Some(child.run.clone()),
                root: Some(child.root.clone()),
            },
            None => Caller {
                agent: agent.clone(),
                depth: root_depth,
                run: None,
                root: None,
            },
        }
    }

    /// What the caps see for a call from `caller`.
    pub(super) fn admission(&self, caller: &Caller, config: &HelpersConfig) -> Admission {
        Admission {
            depth: caller.depth,
            counters: self.counters,
            spawn_cap: self.spawn_cap(config),
            run_spawns: caller.root.as_ref().map(|root| self.run_spawns(root)),
        }
    }

    pub(super) fn counters(&self) -> Counters {
        self.counters
    }

    /// Spawns granted on top of the config's session cap.
    pub(super) fn granted(&self) -> u32 {
        self.granted
    }

    /// The session's spawn cap: the config's plus the grants.
    pub(super) fn spawn_cap(&self, config: &HelpersConfig) -> u32 {
        config.max_spawns_per_session.saturating_add(self.granted)
    }

    /// Spawns made so far by the run tree whose top-level run is `root`.
    pub(super) fn run_spawns(&self, root: &str) -> u32 {
        self.run_spawns.get(root).copied().unwrap_or(0)
    }

    /// Grants `amount` more spawns; returns the grants in total.
    pub(super) fn grant(&mut self, amount: u32) -> u32 {
        self.granted = self.granted.saturating_add(amount);
        self.granted
    }

    fn release(&mut self, background: bool) {
        self.counters.running = self.counters.running.saturating_sub(1);
        if background {
            self.counters.background = self.counters.background.saturating_sub(1);
        }
    }

    /// Records a helper's own Pi as a caller.
    pub(super) fn add_child(&mut self, agent: AgentId, child: ChildAgent) {
        self.children.insert(agent, child);
    }

    /// Records a started run (after the ones before it).
    pub(super) fn add_run(&mut self, entry: RunEntry) {
        let id = entry.info.id.clone();
        self.order.push(id.clone());
        self.runs.insert(id, entry);
    }

    pub(super) fn run(&self, id: &str) -> Option<&RunEntry> {
        self.runs.get(id)
    }

    /// The runs of this session in start order.
    pub(super) fn runs(&self) -> impl Iterator<Item = &RunEntry> {
        self.order.iter().filter_map(|id| self.runs.get(id))
    }

    /// `agent`'s session file, when its Pi reported one.
    pub(super) fn session_file(&self, agent: &AgentId) -> Option<PathBuf> {
        self.sessions.get(agent).cloned()
    }

    /// Records (or, with `None`, forgets) `agent`'s session file.
    pub(super) fn set_session_file(&mut self, agent: AgentId, file: Option<PathBuf>) {
        match file {
            Some(file) => self.sessions.insert(agent, file),
            None => self.sessions.remove(&agent),
        };
    }

    /// Opens run `run`'s question, answered through `answer`; refused (`false`) while one is
    /// already open.
    pub(super) fn open_question(&mut self, run: &str, answer: oneshot::Sender<String>) -> bool {
        if self.questions.contains_key(run) {
            return false;
        }
        self.questions.insert(run.to_string(), answer);
        true
    }

    /// Closes run `run`'s open question, returning where its answer goes.
    pub(super) fn take_question(&mut self, run: &str) -> Option<oneshot::Sender<String>> {
        self.questions.remove(run)
    }
}

/// One run of this session: what it is, its live progress and its result once it ended, and its
/// controls.
pub(super) struct RunEntry {
    info: RunInfo,
    progress: watch::Receiver<Progress>,
    result: watch::Receiver<Option<HelperResult>>,
    control: Arc<dyn RunControl>,
}

impl RunEntry {
    pub(super) fn new(
        info: RunInfo,
        progress: watch::Receiver<Progress>,
        result: watch::Receiver<Option<HelperResult>>,
        control: Arc<dyn RunControl>,
    ) -> Self {
        Self {
            info,
            progress,
            result,
            control,
        }
    }

    pub(super) fn info(&self) -> &RunInfo {
        &self.info
    }

    /// The latest progress.
    pub(super) fn progress(&self) -> Progress {
        self.progress.borrow().clone()
    }

    /// The result, once the run ended.
    pub(super) fn result(&self) -> Option<HelperResult> {
        self.result.borrow().clone()
    }

    pub(super) fn has_ended(&self) -> bool {
        self.result.borrow().is_some()
    }

    pub(super) fn control(&self) -> Arc<dyn RunControl> {
        self.control.clone()
    }

    /// Watches on the progress and the result, for a caller that waits outside the lock.
    pub(super) fn watches(
        &self,
    ) -> (
        watch::Receiver<Progress>,
        watch::Receiver<Option<HelperResult>>,
    ) {
        (self.progress.clone(), self.result.clone())
    }
}

/// One concurrency slot (and a background one) taken by [`SpawnPermit::take`], given back when
/// dropped: a cancelled or panicking call cannot leak it.
pub(super) struct SpawnPermit {
    ledger: Arc<Mutex<RunLedger>>,
    background: bool,
}

impl SpawnPermit {
    /// Counts one spawn by `caller` in `locked` (the guard of `ledger`) and takes a concurrency
    /// slot, and a background one, for it. The caller checked the caps under the same lock.
    pub(super) fn take(
        ledger: &Arc<Mutex<RunLedger>>,
        locked: &mut RunLedger,
        caller: &Caller,
        background: bool,
    ) -> Self {
        locked.counters.spawns += 1;
        locked.counters.running += 1;
        if background {
            locked.counters.background += 1;
        }
        if let Some(root) = &caller.root {
            *locked.run_spawns.entry(root.clone()).or_insert(0) += 1;
        }
        Self {
            ledger: ledger.clone(),
            background,
        }
    }
}

impl Drop for SpawnPermit {
    fn drop(&mut self) {
        lock(&self.ledger).release(self.background);
    }
}

//! Plain records of who calls and what runs: the caller of a tool call (the main Pi or a
//! helper's own Pi), a helper's Pi as a caller, and what a run is (its id, type, parent, output
//! limit, directory). No state and no processes.

use std::path::PathBuf;

use super::agents::AgentType;
use super::args::OutputLimit;
use crate::bridge::AgentId;

/// A helper's own Pi as a caller.
#[derive(Debug, Clone)]
pub(super) struct ChildAgent {
    pub(super) run: String,
    pub(super) depth: u32,
    /// The top-level run of its tree.
    pub(super) root: String,
}

/// Who is calling: the main Pi (or this process's root) or a helper's Pi.
#[derive(Debug, Clone)]
pub(super) struct Caller {
    pub(super) agent: AgentId,
    pub(super) depth: u32,
    /// The caller's own run, when it is a helper.
    pub(super) run: Option<String>,
    /// The top-level run of the caller's tree, when it is a helper.
    pub(super) root: Option<String>,
}

impl Caller {
    /// The main Pi: not a helper, and the agent the workbench itself launched.
    pub(super) fn is_root(&self) -> bool {
        self.run.is_none() && self.agent == AgentId::main()
    }
}

/// What a run is, as the tools and the board describe it.
#[derive(Debug, Clone)]
pub(super) struct RunInfo {
    pub(super) id: String,
    pub(super) agent_type: String,
    pub(super) description: String,
    pub(super) parent_agent: AgentId,
    pub(super) parent_run: Option<String>,
    pub(super) background: bool,
    pub(super) limit: OutputLimit,
    /// The type as the run used it (for resume).
    pub(super) agent: AgentType,
    pub(super) run_dir: PathBuf,
}

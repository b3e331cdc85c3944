//! What a helper run is: the program, the agent, the task, where the run keeps its files and
//! session, and its limits. The runner runs a [`RunSpec`] and the warm pool keys its prestarted
//! children by one; this file imports neither, so neither needs the other to say what a run is.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::agents::AgentType;
use super::budget::{Budget, budget_prompt};

/// Default run deadline.
pub(crate) const DEFAULT_DEADLINE: Duration = Duration::from_secs(30 * 60);
/// Default zero-activity limit at the start of an attempt.
pub(crate) const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(20);
/// Time between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(3);
/// Default time the child has to exit after its stdin is closed, and to end after a budget abort.
pub(crate) const END_GRACE: Duration = Duration::from_secs(5);
/// The default session directory inside a run directory.
pub(crate) const SESSION_DIR: &str = "session";

/// Where the child keeps its session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionMode {
    /// A new session stored in this directory (`--session-dir`); [`RunSpec::new`] uses
    /// `<run_dir>/session`.
    Dir(PathBuf),
    /// Continue this stored session file with the task as the next message (`--session`).
    Resume(PathBuf),
    /// A new session copied from this session file (`--fork`), stored in `<run_dir>/session`.
    Fork(PathBuf),
}

impl SessionMode {
    /// The Pi arguments for this mode; `run_dir` places a fork.
    pub fn pi_args(&self, run_dir: &Path) -> Vec<String> {
        let text = |path: &Path| path.display().to_string();
        match self {
            Self::Dir(dir) => vec!["--session-dir".to_string(), text(dir)],
            Self::Resume(file) => vec!["--session".to_string(), text(file)],
            Self::Fork(file) => vec![
                "--fork".to_string(),
                text(file),
                "--session-dir".to_string(),
                text(&run_dir.join(SESSION_DIR)),
            ],
        }
    }

    /// Where a new session file of this mode appears (`None` for a resume: it is the file).
    pub(super) fn new_session_dir(&self, run_dir: &Path) -> Option<PathBuf> {
        match self {
            Self::Dir(dir) => Some(dir.clone()),
            Self::Resume(_) => None,
            Self::Fork(_) => Some(run_dir.join(SESSION_DIR)),
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// The `pi` launcher (or a stand-in).
    pub program: PathBuf,
    /// Arguments before the type's own (`--offline`, extension flags). Session flags come from
    /// `session`; do not put `--no-session` here (Pi refuses it with `--fork`).
    pub leading_args: Vec<String>,
    pub agent: AgentType,
    pub prompt: String,
    pub env: Vec<(String, String)>,
    pub env_remove: Vec<String>,
    pub cwd: PathBuf,
    /// This run's directory (created if missing); holds the status, process and output files.
    pub run_dir: PathBuf,
    pub session: SessionMode,
    pub budget: Budget,
    pub deadline: Duration,
    pub idle_timeout: Duration,
    pub kill_grace: Duration,
    /// Time to exit after stdin is closed, and to end after a budget abort, before the kill.
    pub end_grace: Duration,
}

impl RunSpec {
    /// A spec with the default deadline, idle timeout and graces, a session in
    /// `<run_dir>/session`, no budget, no extra env or arguments.
    pub fn new(
        program: impl Into<PathBuf>,
        agent: AgentType,
        prompt: impl Into<String>,
        cwd: impl Into<PathBuf>,
        run_dir: impl Into<PathBuf>,
    ) -> Self {
        let run_dir = run_dir.into();
        Self {
            program: program.into(),
            leading_args: Vec::new(),
            agent,
            prompt: prompt.into(),
            env: Vec::new(),
            env_remove: Vec::new(),
            cwd: cwd.into(),
            session: SessionMode::Dir(run_dir.join(SESSION_DIR)),
            run_dir,
            budget: Budget::default(),
            deadline: DEFAULT_DEADLINE,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            kill_grace: KILL_GRACE,
            end_grace: END_GRACE,
        }
    }

    /// The agent with the budget sentences added to its system prompt.
    pub(super) fn budgeted_agent(&self) -> AgentType {
        match budget_prompt(&self.budget) {
            Some(extra) => self.agent.with_prompt_appended(&extra),
            None => self.agent.clone(),
        }
    }
}

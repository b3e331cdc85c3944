//! The checks a spawn passes before any process or run directory exists: the type, the depth
//! guard, the prompt, the context mode, the session and run-tree spawn budgets and the
//! concurrency caps, in the documented order. Pure: the caller takes the counters under its
//! lock and passes them in.

use super::agents::{AgentCatalog, AgentType};
use super::args::{ContextMode, SpawnArgs};
use super::config::HelpersConfig;

/// Why a spawn was refused before any process existed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    #[error("{0}")]
    BadArguments(String),
    #[error("{0}")]
    Agent(#[from] super::agents::AgentError),
    #[error(
        "helper depth limit reached: this session is at depth {depth} and maxSubagentDepth is \
         {max}; do the task yourself instead of delegating it"
    )]
    DepthExceeded { depth: u32, max: u32 },
    #[error("prompt is empty: give the helper the complete task")]
    EmptyPrompt,
    #[error(
        "context fork needs a background run (run_in_background: true): a forked helper \
         copies this conversation and runs beside it"
    )]
    ForkNeedsBackground,
    #[error(
        "context fork needs this session's file, and this session has none (in-memory or not \
         started yet); use context fresh and put what the helper needs in the prompt"
    )]
    ForkWithoutSession,
    #[error(
        "the session's helper spawn budget is used up ({max} spawns, \
         maxSubagentSpawnsPerSession); do the rest yourself. More budget can be granted only \
         from the interactive root session (spawn_helper action grant-spawn-budget)"
    )]
    SpawnCapReached { max: u32 },
    #[error(
        "this run's helper tree has used its spawn budget ({max} spawns, \
         maxSubagentSpawnsPerRun); do the rest yourself"
    )]
    RunSpawnCapReached { max: u32 },
    #[error(
        "the workflow needs {needed} spawns but only {left} are left ({why}); split it or \
         do part of it yourself"
    )]
    FanoutBudget {
        needed: usize,
        left: usize,
        why: &'static str,
    },
    /// A background run could not wake the caller with its result (a print or JSON run that
    /// cannot wait, or not that long); the text says what to do instead.
    #[error("{0}")]
    CannotWake(String),
    #[error("{running} helpers are already running (maxConcurrent {max}); wait for one to finish")]
    TooManyRunning { running: usize, max: usize },
    #[error(
        "{running} background helpers are already running (maxActiveAsyncRunsPerSession {max}); \
         wait for a <helper-result-notification> first"
    )]
    TooManyBackground { running: usize, max: usize },
}

/// The counters the caps look at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counters {
    pub spawns: u32,
    pub running: usize,
    pub background: usize,
}

/// What the caps see for one call: the caller's depth, the session counters, the session cap
/// (config plus grants) and, for a call from inside a run tree, that tree's spawns so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Admission {
    pub depth: u32,
    pub counters: Counters,
    pub spawn_cap: u32,
    pub run_spawns: Option<u32>,
}

impl Admission {
    /// A root caller at `depth` with `counters` and the config's session cap.
    #[cfg(test)]
    pub(crate) fn root(config: &HelpersConfig, depth: u32, counters: Counters) -> Self {
        Self {
            depth,
            counters,
            spawn_cap: config.max_spawns_per_session,
            run_spawns: None,
        }
    }
}

/// The preflight, in the documented order: type → enabled → depth → prompt → context → session
/// spawn cap → run spawn cap → concurrency. Returns the type with the call's overrides applied
/// and whether the run goes to the background.
pub(crate) fn preflight(
    catalog: &AgentCatalog,
    config: &HelpersConfig,
    admission: Admission,
    args: &SpawnArgs,
) -> Result<(AgentType, bool), Refusal> {
    let mut agent = catalog.resolve(&args.agent_type)?;
    if admission.depth >= config.max_depth {
        return Err(Refusal::DepthExceeded {
            depth: admission.depth,
            max: config.max_depth,
        });
    }
    if args.prompt.trim().is_empty() {
        return Err(Refusal::EmptyPrompt);
    }
    let background = args.background.unwrap_or(agent.run_in_background);
    // An explicit fork is never quietly turned into a fresh run.
    if args.context == Some(ContextMode::Fork) && !background {
        return Err(Refusal::ForkNeedsBackground);
    }
    check_caps(config, admission, 1, background)?;
    if let Some(model) = &args.model {
        agent.model = Some(model.clone());
    }
    if let Some(thinking) = &args.thinking {
        agent.thinking = Some(thinking.clone());
    }
    if let Some(turns) = args.max_turns {
        agent.max_turns = Some(turns);
    }
    Ok((agent, background))
}

/// The spawn caps and the concurrency caps for `spawns` more runs.
pub(super) fn check_caps(
    config: &HelpersConfig,
    admission: Admission,
    spawns: u32,
    background: bool,
) -> Result<(), Refusal> {
    let counters = admission.counters;
    if counters.spawns.saturating_add(spawns) > admission.spawn_cap {
        return Err(Refusal::SpawnCapReached {
            max: admission.spawn_cap,
        });
    }
    if let Some(used) = admission.run_spawns
        && used.saturating_add(spawns) > config.max_spawns_per_run
    {
        return Err(Refusal::RunSpawnCapReached {
            max: config.max_spawns_per_run,
        });
    }
    if counters.running >= config.max_concurrent {
        return Err(Refusal::TooManyRunning {
            running: counters.running,
            max: config.max_concurrent,
        });
    }
    if background && counters.background >= config.max_active_async {
        return Err(Refusal::TooManyBackground {
            running: counters.background,
            max: config.max_active_async,
        });
    }
    Ok(())
}

//! A helper's launch as a value ([`LaunchKey`]: program, arguments, environment, working
//! directory), and a helper Pi started ahead of its task ([`Prewarmed`]).
//!
//! A warm process is spawned exactly as the runner spawns a fresh one — `pi --mode rpc` with the
//! run's own directory, session directory, bridge token and agent type flags — only earlier,
//! without its task. The runner hands it the task as the first RPC `prompt`, as it would a fresh
//! child; since the task travels over stdin, not argv, nothing of the run differs. A warm
//! process only stands in for a run whose launch key is equal, byte for byte; anything else
//! starts cold. It is in a process group of its own from its spawn, and a [`GroupGuard`] kills
//! the group if it is dropped unused.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

use super::spec::RunSpec;
use crate::sys::{GroupGuard, ProcessGroup, Reach, SpawnGrouped as _, stop_group};

/// How long a discarded warm process has between SIGTERM and SIGKILL.
const DISCARD_GRACE: Duration = Duration::from_secs(2);

/// Everything a child is started with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LaunchKey {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub env_remove: Vec<String>,
    pub cwd: PathBuf,
}

/// A spawned child and its pipes (stdin when it was asked for).
pub(super) struct Started {
    pub(super) child: Child,
    pub(super) group: ProcessGroup,
    pub(super) pid: u32,
    pub(super) stdin: Option<ChildStdin>,
    pub(super) stdout: ChildStdout,
    pub(super) stderr: ChildStderr,
}

impl LaunchKey {
    /// `spec`'s launch with the type's arguments `args` after the leading and session ones.
    pub(crate) fn with_args(spec: &RunSpec, args: &[String]) -> Self {
        let mut all = spec.leading_args.clone();
        all.extend(spec.session.pi_args(&spec.run_dir));
        all.extend(args.iter().cloned());
        LaunchKey {
            program: spec.program.clone(),
            args: all,
            env: spec.env.clone(),
            env_remove: spec.env_remove.clone(),
            cwd: spec.cwd.clone(),
        }
    }

    /// `spec`'s launch in RPC mode (what the runner's first attempt runs).
    pub(crate) fn rpc(spec: &RunSpec) -> Self {
        Self::with_args(spec, &spec.budgeted_agent().pi_rpc_args())
    }

    /// Spawns it in a process group of its own; stdin is a pipe with `stdin`, else null.
    pub(super) fn spawn(&self, stdin: bool) -> anyhow::Result<Started> {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .current_dir(&self.cwd)
            .stdin(if stdin { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(false);
        for name in &self.env_remove {
            command.env_remove(name);
        }
        command.envs(self.env.iter().map(|(key, value)| (key, value)));
        command.envs(crate::pi::compile_cache::env_for(&self.cwd, &self.env));
        let (mut child, group) = command
            .spawn_grouped()
            .with_context(|| format!("spawn the helper {}", self.program.display()))?;
        let pid = group.raw().unsigned_abs();
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            Reach::Tree.signal(group, nix::sys::signal::Signal::SIGKILL);
            anyhow::bail!("the helper's pipes were not created");
        };
        Ok(Started {
            stdin: child.stdin.take(),
            child,
            group,
            pid,
            stdout,
            stderr,
        })
    }
}

/// A helper Pi started before its task, waiting on stdin.
pub struct Prewarmed {
    key: LaunchKey,
    started: Option<Started>,
    guard: GroupGuard,
    born: Instant,
}

impl Prewarmed {
    /// Spawns `spec`'s RPC launch now (its run and session directories are created first, as
    /// the runner does for a fresh run).
    pub fn spawn(spec: &RunSpec) -> anyhow::Result<Self> {
        std::fs::create_dir_all(&spec.run_dir)
            .with_context(|| format!("create the run directory {}", spec.run_dir.display()))?;
        if let Some(dir) = spec.session.new_session_dir(&spec.run_dir) {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("create the session directory {}", dir.display()))?;
        }
        let key = LaunchKey::rpc(spec);
        let started = key.spawn(true)?;
        let guard = GroupGuard::new(started.group, Reach::Tree);
        Ok(Prewarmed {
            key,
            started: Some(started),
            guard,
            born: Instant::now(),
        })
    }

    pub(crate) fn key(&self) -> &LaunchKey {
        &self.key
    }

    /// Since when it waits.
    pub(crate) fn born(&self) -> Instant {
        self.born
    }

    /// Its process group.
    pub fn group(&self) -> Option<ProcessGroup> {
        self.started.as_ref().map(|started| started.group)
    }

    /// Whether it still runs (a warm process that died is discarded, not used).
    pub fn alive(&mut self) -> bool {
        self.started
            .as_mut()
            .is_some_and(|started| matches!(started.child.try_wait(), Ok(None)))
    }

    /// Hands the process to the runner; the runner's own guard takes over.
    pub(super) fn into_started(mut self) -> Option<Started> {
        self.guard.disarm();
        self.started.take()
    }

    /// Stops it: stdin closed (Pi exits on EOF), SIGTERM to its group, SIGKILL after a grace.
    pub async fn discard(mut self) {
        let Some(Started {
            mut child,
            group,
            stdin,
            ..
        }) = self.started.take()
        else {
            return;
        };
        drop(stdin);
        let _ = tokio::join!(child.wait(), stop_group(group, DISCARD_GRACE));
        self.guard.disarm();
    }

    /// SIGKILL now (the panic path).
    pub fn kill_now(&self) {
        self.guard.kill_now();
    }
}

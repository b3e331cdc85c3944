//! The watchdog: no process the workbench started outlives it, however the workbench ends —
//! `kill -9` included, where no exit path of ours runs.
//!
//! At start the workbench re-executes its own binary as `unipi-tui __watchdog` ([`start`]): a
//! small process in a session of its own (no terminal signal reaches it, and no group stop of
//! the workbench names it) whose stdin is the read end of a pipe. The write end is held by the
//! workbench alone (close-on-exec, so no child inherits it); when the workbench dies by any
//! means the kernel closes it, the watchdog reads EOF and sweeps ([`super::sweep`]).
//!
//! What it kills is known two ways, because either alone misses something:
//! - **a registry of process groups**, kept current over the pipe: [`watch`] when a group is
//!   spawned (every [`SpawnGrouped`](super::SpawnGrouped) spawn and Pi's PTY), [`unwatch`] when its
//!   owner reaped it ([`CurrentGroup::clear`](super::CurrentGroup::clear),
//!   [`GroupGuard::disarm`](super::GroupGuard::disarm)). Each group is sent with its leader's start
//!   time, so a group id reused after a reap is never killed. A group reaches grandchildren that
//!   stayed in it (`sleep 600 &` in a task), and from it the sweep walks every descendant;
//! - **an environment tag**, [`TOKEN_ENV`]`=<random>`, that every spawn adds to its child's
//!   environment and children pass on: it finds what left its group and lost its parent link (Pi
//!   starts each `bash` tool call in a session of its own; once Pi dies those calls belong to PID
//!   1, and only the tag still says whose they are).
//!
//! `PR_SET_PDEATHSIG` is not used: it fires when the *thread* that spawned the child exits, and
//! children are spawned from runtime threads that come and go.

use std::io::Write as _;
use std::path::Path;
use std::process::Stdio;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context as _;
use nix::fcntl::{FcntlArg, OFlag, fcntl};

use super::group::ProcessGroup;
use super::procfs::ProcessId;
use super::random::random_u64;

/// The hidden subcommand that runs the watchdog.
pub const SUBCOMMAND: &str = "__watchdog";

/// The environment variable every child of the workbench carries; its value is this
/// workbench's token.
pub const TOKEN_ENV: &str = "UNIPI_TUI_WATCHDOG";

/// The workbench's end of the pipe.
struct Link {
    pipe: std::fs::File,
    token: String,
    /// A failed write was logged once (the watchdog is gone, or behind by a full pipe).
    warned: AtomicBool,
    /// The watchdog's handle: kept, never waited for (it outlives us by design).
    _child: std::process::Child,
}

static LINK: OnceLock<Link> = OnceLock::new();

/// Starts the watchdog for this process; `log` is where it reports what it had to kill. Call
/// once, before the first child is spawned; later calls do nothing.
pub fn start(log: &Path) -> anyhow::Result<()> {
    if LINK.get().is_some() {
        return Ok(());
    }
    // Both ends close-on-exec: the watchdog gets the read end as its stdin (dup'd, so open),
    // and no child ever holds the write end, whose close must mean that we are gone.
    let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).context("create the watchdog pipe")?;
    // A watchdog that stopped reading must never block a spawn: writes fail instead.
    fcntl(&write, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))
        .context("make the watchdog pipe non-blocking")?;
    let token = format!("{}-{:016x}", std::process::id(), random_u64());
    // `/proc/self/exe` is our binary even when its file was replaced or deleted since we started.
    let child = std::process::Command::new("/proc/self/exe")
        .arg(SUBCOMMAND)
        .arg(&token)
        .arg(log)
        // Nothing of ours to leak (API keys), and a test counting processes by their
        // environment sees the children, not their watchdog.
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::from(read))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("start the watchdog (unipi-tui __watchdog)")?;
    tracing::info!(pid = child.id(), "watchdog started");
    let link = Link {
        pipe: std::fs::File::from(write),
        token,
        warned: AtomicBool::new(false),
        _child: child,
    };
    // Lost only to a concurrent `start`, whose watchdog then serves; ours sees EOF and exits.
    let _ = LINK.set(link);
    Ok(())
}

/// The environment entry every child gets (`None` when no watchdog runs: tests, the delegate
/// child process).
pub fn token_env() -> Option<(&'static str, &'static str)> {
    LINK.get().map(|link| (TOKEN_ENV, link.token.as_str()))
}

/// Tells the watchdog that `group` was spawned (with its leader's start time, read now).
pub fn watch(group: ProcessGroup) {
    let Some(link) = LINK.get() else {
        return;
    };
    // A leader gone already (reaped before we looked) leaves nothing to name safely.
    if let Some(leader) = ProcessId::of(group.raw().unsigned_abs()) {
        link.send(&format!("+{}\n", leader.to_text()));
    }
}

/// Tells the watchdog that `group`'s leader is reaped: its id may be reused from now on.
pub fn unwatch(group: ProcessGroup) {
    if let Some(link) = LINK.get() {
        link.send(&format!("-{}\n", group.raw()));
    }
}

impl Link {
    /// One line, in one `write`: under `PIPE_BUF` bytes, so lines of different threads never
    /// interleave, and a full pipe refuses the whole line.
    fn send(&self, line: &str) {
        let written = (&self.pipe).write(line.as_bytes());
        if !matches!(written, Ok(n) if n == line.len()) && !self.warned.swap(true, Ordering::SeqCst)
        {
            tracing::warn!(
                "cannot tell the watchdog about a process group ({written:?}); processes started \
                 from now on may outlive a crash of the workbench"
            );
        }
    }
}

/// A message on the pipe, as the watchdog reads it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Message {
    Watch(ProcessId),
    Unwatch(i32),
}

impl Message {
    pub(crate) fn parse(line: &str) -> Option<Self> {
        match line.split_at_checked(1)? {
            ("+", rest) => ProcessId::from_text(rest).map(Self::Watch),
            ("-", rest) => rest.trim().parse().ok().map(Self::Unwatch),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_messages_parse() {
        assert_eq!(
            Message::parse("+42:1234"),
            Some(Message::Watch(ProcessId {
                pid: 42,
                start: 1234
            }))
        );
        assert_eq!(Message::parse("-42"), Some(Message::Unwatch(42)));
        assert_eq!(Message::parse("+42"), None);
        assert_eq!(Message::parse(""), None);
        assert_eq!(Message::parse("?1"), None);
    }
}

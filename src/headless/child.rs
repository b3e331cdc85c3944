//! Running Pi as a plain child the way a shell runs a job: inherited stdin, stdout and stderr, its
//! own process group, and the terminal's foreground handed to that group while it runs.
//!
//! Its own group lets a SIGTERM or SIGHUP sent to unipi-tui (by a supervisor, `timeout`, a closed
//! SSH session) reach Pi and every tool process Pi started, not Pi alone. A group of its own is
//! also a background group, though: reading the terminal would stop Pi with SIGTTIN. So, like a
//! shell, we make Pi's group the terminal's foreground group while it runs (Ctrl+C then reaches
//! Pi and its tools directly, exactly as with `pi`) and take the terminal back afterwards.

use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};

use anyhow::{Context, Result};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, killpg, pthread_sigmask};
use nix::unistd::{Pid, getpgrp, tcgetpgrp, tcsetpgrp};

use crate::sys::SpawnGrouped as _;
use crate::sys::signals::Signals;

/// Runs `program args` with `env` added, forwarding SIGINT, SIGTERM and SIGHUP to its process
/// group, and returns its exit code the way a shell reports it (128 + N for a signal).
pub(super) async fn run(
    program: &Path,
    args: &[OsString],
    env: &[(OsString, OsString)],
) -> Result<i32> {
    // Handlers first, so a signal that arrives while Pi starts is forwarded, not fatal to us.
    let mut signals = Signals::listen(&[Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP])?;

    let (mut child, group) = tokio::process::Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn_grouped()
        .with_context(|| format!("failed to start Pi ({})", program.display()))?;
    let pgid = group.pgid();
    tracing::info!(
        pid = pgid.as_raw(),
        "Pi started without a pane: {program:?} {args:?}"
    );
    let foreground = Foreground::hand_to(pgid);

    let status = loop {
        let forward = tokio::select! {
            status = child.wait() => break status.context("failed to wait for Pi")?,
            forward = signals.next() => forward,
        };
        tracing::info!("forwarding {forward} to Pi's process group");
        if let Err(err) = killpg(pgid, forward) {
            tracing::warn!("cannot forward {forward} to Pi's process group: {err}");
        }
    };
    drop(foreground);
    tracing::info!("Pi exited without a pane: {status}");
    Ok(exit_code(status))
}

/// The code a shell shows for `status`: the exit code, or 128 + the signal that ended it.
pub fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|sig| 128 + sig))
        .unwrap_or(1)
}

/// The terminal handed to Pi's process group; dropping it takes the terminal back.
struct Foreground {
    /// Our own process group, which had the terminal.
    ours: Pid,
}

impl Foreground {
    /// Makes `pgid` the foreground group of our controlling terminal when we are its foreground
    /// group now (not when started in the background with `&`, nor without a terminal).
    fn hand_to(pgid: Pid) -> Option<Foreground> {
        let ours = getpgrp();
        let handed = with_terminal(|fd| {
            if tcgetpgrp(fd).ok() != Some(ours) {
                return false;
            }
            match tcsetpgrp(fd, pgid) {
                Ok(()) => true,
                Err(err) => {
                    tracing::warn!("cannot give the terminal to Pi's process group: {err}");
                    false
                }
            }
        });
        if handed != Some(true) {
            return None;
        }
        // Pi may have touched the terminal before it was its own and been stopped for it.
        let _ = killpg(pgid, Signal::SIGCONT);
        Some(Foreground { ours })
    }
}

impl Drop for Foreground {
    fn drop(&mut self) {
        // A background group that sets the foreground gets SIGTTOU unless it blocks it; the
        // block is on this thread only and undone right after.
        let mut blocked = SigSet::empty();
        blocked.add(Signal::SIGTTOU);
        let mut previous = SigSet::empty();
        let masked =
            pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&blocked), Some(&mut previous)).is_ok();
        with_terminal(|fd| {
            if let Err(err) = tcsetpgrp(fd, self.ours) {
                tracing::warn!("cannot take the terminal back from Pi's process group: {err}");
            }
        });
        if masked {
            let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&previous), None);
        }
    }
}

/// Runs `f` on the first of stdin, stdout and stderr that is a terminal, if any is.
fn with_terminal<R>(f: impl FnOnce(BorrowedFd<'_>) -> R) -> Option<R> {
    let (stdin, stdout, stderr) = (std::io::stdin(), std::io::stdout(), std::io::stderr());
    [stdin.as_fd(), stdout.as_fd(), stderr.as_fd()]
        .into_iter()
        .find(|fd| nix::unistd::isatty(fd).unwrap_or(false))
        .map(f)
}

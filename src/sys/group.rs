//! A process group named by its id, and the two things every owner asks of one: is anything
//! still in it, and SIGKILL now. A leaf, so that the stop in `process` and the `watchdog` that
//! stops groups when the workbench dies both build on it without importing each other.

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// A process group, by id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProcessGroup(Pid);

impl ProcessGroup {
    /// The group led by `pid` (a child spawned with [`SpawnGrouped`](super::SpawnGrouped), or a PTY
    /// child that is a session leader). `None` for ids that `killpg` would read as something
    /// else: 0 is our own group, 1 is init, and ids past `i32::MAX` do not exist.
    pub fn of_leader(pid: u32) -> Option<Self> {
        i32::try_from(pid)
            .ok()
            .filter(|pid| *pid > 1)
            .map(|pid| Self(Pid::from_raw(pid)))
    }

    /// The group id.
    pub fn pgid(self) -> Pid {
        self.0
    }

    /// The group id as the plain number files and logs carry.
    pub fn raw(self) -> i32 {
        self.0.as_raw()
    }

    /// The group whose id [`raw`](Self::raw) gave; `None` for the ids
    /// [`of_leader`](Self::of_leader) refuses (0, which also stands for "none held", 1,
    /// negatives).
    pub fn from_raw(raw: i32) -> Option<Self> {
        u32::try_from(raw).ok().and_then(Self::of_leader)
    }

    /// See [`group_alive`].
    pub fn alive(self) -> bool {
        group_alive(self.0)
    }

    /// Sends `signal` to every process in the group.
    pub fn signal(self, signal: Signal) -> nix::Result<()> {
        killpg(self.0, signal)
    }

    /// SIGKILL to the group now, ignoring a group that is already gone.
    pub fn kill_now(self) {
        kill_group_now(self.0);
    }
}

/// True while any process is in group `pgid`: `kill(-pgid, 0)` succeeds, or fails with EPERM —
/// a member exists but we may not signal it (it changed its user id, say). Only ESRCH means the
/// group is empty. Counting EPERM as gone would end a stop, or drop a guard, while a member still
/// runs. A zombie member counts until it is reaped, so an owner reaps its child before it trusts
/// a `false` from here.
pub fn group_alive(pgid: Pid) -> bool {
    probe_says_alive(killpg(pgid, None))
}

/// What the answer to `kill(-pgid, 0)` says: only ESRCH is "no such group".
fn probe_says_alive(probe: nix::Result<()>) -> bool {
    !matches!(probe, Err(Errno::ESRCH))
}

/// SIGKILL to group `pgid` now, synchronously, ignoring errors: for exits that cannot await (a
/// panic hook, `Drop`).
pub(crate) fn kill_group_now(pgid: Pid) {
    if let Err(err) = killpg(pgid, Signal::SIGKILL)
        && err != Errno::ESRCH
    {
        tracing::debug!("SIGKILL to process group {pgid}: {err}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_would_signal_someone_else_name_no_group() {
        assert_eq!(ProcessGroup::of_leader(0), None);
        assert_eq!(ProcessGroup::of_leader(1), None);
        assert_eq!(ProcessGroup::of_leader(u32::MAX), None);
        assert_eq!(
            ProcessGroup::of_leader(4242).map(ProcessGroup::raw),
            Some(4242)
        );
    }

    #[test]
    fn only_esrch_means_a_group_is_gone() {
        assert!(probe_says_alive(Ok(())));
        // A member we may not signal (it changed its user id) still runs.
        assert!(probe_says_alive(Err(Errno::EPERM)));
        assert!(!probe_says_alive(Err(Errno::ESRCH)));
        assert!(group_alive(nix::unistd::getpgrp()));
    }
}

//! Signalling a child's whole tree of processes, found through `/proc`: its process group and
//! every descendant with the descendant's own group. Pi starts each `bash` tool call in a process
//! group of its own, so a signal to Pi's group alone would leave those commands running.

use nix::sys::signal::killpg;
use nix::unistd::Pid;

use super::procfs::{self, ProcStat};

/// Signals a child's whole tree: its own process group and, found through `/proc`, every
/// descendant's process group and the descendant itself. Pi starts its `bash` tool calls in
/// process groups of their own, so signalling Pi's group alone would leave them running; the
/// tree is walked before anything is signalled, while the parent links still exist.
/// Best effort: processes that are already gone are skipped.
pub(crate) fn signal_tree(root_pgid: Pid, signal: nix::sys::signal::Signal) {
    let own_group = nix::unistd::getpgrp();
    let members = group_members(root_pgid);
    let descendants = descendants_of(&members);
    let _ = killpg(root_pgid, signal);
    for pid in descendants {
        let pid = Pid::from_raw(pid);
        if let Ok(pgid) = nix::unistd::getpgid(Some(pid))
            && pgid != own_group
            && pgid != root_pgid
        {
            let _ = killpg(pgid, signal);
        }
        let _ = nix::sys::signal::kill(pid, signal);
    }
}

/// The pids whose process group is `pgid`.
fn group_members(pgid: Pid) -> Vec<i32> {
    procfs::table()
        .into_iter()
        .filter(|entry| entry.pgid == pgid.as_raw())
        .map(|entry| entry.pid)
        .collect()
}

/// Every descendant of `roots` (not the roots themselves), from one `/proc` snapshot.
fn descendants_of(roots: &[i32]) -> Vec<i32> {
    descendants_in(&procfs::table(), roots)
}

/// Every descendant of `roots` in `table` (not the roots themselves).
pub(crate) fn descendants_in(table: &[ProcStat], roots: &[i32]) -> Vec<i32> {
    let mut found = Vec::new();
    let mut frontier: Vec<i32> = roots.to_vec();
    while let Some(parent) = frontier.pop() {
        for entry in table.iter().filter(|entry| entry.ppid == parent) {
            if !found.contains(&entry.pid) && !roots.contains(&entry.pid) {
                found.push(entry.pid);
                frontier.push(entry.pid);
            }
        }
    }
    found
}

/// Whether `pid` has stopped running: it is gone, or a zombie (where PID 1 does not reap, a
/// killed orphan stays one). For tests that check a stop reached a process.
#[cfg(test)]
pub(crate) fn has_ended(pid: i32) -> bool {
    procfs::stat(pid).is_none_or(|stat| stat.zombie)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;
    use crate::test_wait::eventually_blocking;

    #[test]
    fn signal_tree_reaches_a_grandchild_in_its_own_group() {
        use std::os::unix::process::CommandExt as _;
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        // A child in its own group starts a grandchild in yet another group (as Pi's bash tool
        // does), then waits.
        let mut child = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(format!(
                "setsid sleep 317 & echo $! > '{}'; wait",
                pid_file.display()
            ))
            .process_group(0)
            .spawn()
            .unwrap();
        let two_seconds = std::time::Duration::from_secs(2);
        let mut grandchild = None;
        eventually_blocking("the grandchild's pid", two_seconds, || {
            grandchild = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|text| text.trim().parse::<i32>().ok());
            grandchild.is_some()
        });
        let grandchild = grandchild.unwrap();
        let leader = Pid::from_raw(i32::try_from(child.id()).unwrap());
        // `$!` is known before `setsid` has run: wait until the grandchild left the group.
        eventually_blocking("the grandchild to leave the group", two_seconds, || {
            nix::unistd::getpgid(Some(Pid::from_raw(grandchild))).is_ok_and(|g| g != leader)
        });
        assert_ne!(
            nix::unistd::getpgid(Some(Pid::from_raw(grandchild))).unwrap(),
            leader
        );
        signal_tree(leader, nix::sys::signal::Signal::SIGKILL);
        child.wait().unwrap();
        eventually_blocking(
            format!("the grandchild {grandchild} in its own group to end"),
            two_seconds,
            || has_ended(grandchild),
        );
    }
}

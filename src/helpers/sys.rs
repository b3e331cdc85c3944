//! Small process and file primitives shared by the helper runner and the background-task
//! service: crash-safe file replacement, random ids, and the process-group liveness probe. They
//! live here (not in `tasks`) because `tasks::service` is private to `tasks`, and both owners
//! need exactly the same guarantees — a metadata file is the old or the new, never torn; a group
//! counts as alive until its last member, zombie leader included, is reaped.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use nix::sys::signal::killpg;
use nix::unistd::Pid;

/// Temp file, fsync, rename, fsync of the directory: the file is the old or the new, never torn.
pub(crate) fn replace_file_durable(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().context("a metadata path has a directory")?;
    let base = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(
        ".{base}.{}.{:012x}.tmp",
        std::process::id(),
        random_u64() >> 16
    ));
    let write = || -> std::io::Result<()> {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)?;
        File::open(dir)?.sync_all()
    };
    write().map_err(|err| {
        let _ = std::fs::remove_file(&temp);
        anyhow::anyhow!(
            "Durable file operation failed: replace {}: {err}",
            path.display()
        )
    })
}

/// True while any process is in the group (a zombie leader counts until reaped).
pub(crate) fn group_alive(pgid: Pid) -> bool {
    !matches!(killpg(pgid, None), Err(nix::errno::Errno::ESRCH))
}

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
    proc_table()
        .into_iter()
        .filter(|entry| entry.pgid == pgid.as_raw())
        .map(|entry| entry.pid)
        .collect()
}

/// Every descendant of `roots` (not the roots themselves), from one `/proc` snapshot.
fn descendants_of(roots: &[i32]) -> Vec<i32> {
    let table = proc_table();
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

struct ProcEntry {
    pid: i32,
    ppid: i32,
    pgid: i32,
}

/// pid, ppid and pgid of every process, from `/proc/<pid>/stat` (fields 4 and 5 after the
/// parenthesised command name, which may itself contain spaces and parentheses).
fn proc_table() -> Vec<ProcEntry> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let rest = stat.get(stat.rfind(')')? + 1..)?;
            let mut fields = rest.split_whitespace();
            let _state = fields.next()?;
            let ppid = fields.next()?.parse().ok()?;
            let pgid = fields.next()?.parse().ok()?;
            Some(ProcEntry { pid, ppid, pgid })
        })
        .collect()
}

/// A random-enough 64-bit value for names (not for secrets).
pub(crate) fn random_u64() -> u64 {
    use std::hash::{BuildHasher as _, Hasher as _};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;

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
        let mut grandchild = None;
        for _ in 0..100 {
            if let Some(pid) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|text| text.trim().parse::<i32>().ok())
            {
                grandchild = Some(pid);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let grandchild = grandchild.unwrap();
        let leader = Pid::from_raw(i32::try_from(child.id()).unwrap());
        // `$!` is known before `setsid` has run: wait until the grandchild left the group.
        for _ in 0..100 {
            if nix::unistd::getpgid(Some(Pid::from_raw(grandchild))).is_ok_and(|g| g != leader) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_ne!(
            nix::unistd::getpgid(Some(Pid::from_raw(grandchild))).unwrap(),
            leader
        );
        signal_tree(leader, nix::sys::signal::Signal::SIGKILL);
        child.wait().unwrap();
        let mut gone = false;
        for _ in 0..100 {
            let zombie =
                std::fs::read_to_string(format!("/proc/{grandchild}/stat")).is_ok_and(|stat| {
                    stat.rsplit(')')
                        .next()
                        .is_some_and(|r| r.trim_start().starts_with('Z'))
                });
            if zombie || nix::sys::signal::kill(Pid::from_raw(grandchild), None).is_err() {
                gone = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(
            gone,
            "the grandchild {grandchild} in its own group survived"
        );
    }

    #[test]
    fn durable_replace_writes_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        replace_file_durable(&path, b"one").unwrap();
        replace_file_durable(&path, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 1, "no temp file left behind");
    }
}

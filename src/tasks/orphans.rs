//! Task records a dead workbench left `running`. Each workbench's run directory names its owner
//! by pid and start time; when the owner is gone (see [`crate::sys::private_dir::stale_dirs`]),
//! its tasks ended with it — the watchdog killed their groups — but nobody wrote so. The next
//! start writes each such record's final state, saying what happened. Should a task's group
//! still run (the watchdog was killed too), it is killed first, but only when its leader is
//! still the very process the record names (pid **and** start time): a reused pid is never
//! signalled.

use std::path::Path;

use super::model::{KillKind, TaskInfo, TaskStatus};
use crate::sys::private_dir::{OWNER_FILE, stale_dirs};
use crate::sys::{ProcessGroup, ProcessId, now_ms, write_atomic};

/// Settles every run directory under `root` whose workbench is gone: writes the final state of
/// each task it left running, then removes its owner file (the directory is settled; its
/// records stay for whoever reads them), and the directory itself if nothing else is in it.
/// Returns the ids of the tasks it finalized.
pub(super) fn finalize_orphans(root: &Path) -> Vec<String> {
    let mut finalized = Vec::new();
    for (dir, owner) in stale_dirs(root, "") {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for path in entries.flatten().map(|entry| entry.path()) {
            if path.extension().is_none_or(|ext| ext != "json") {
                continue;
            }
            let Some(mut info) = std::fs::read(&path)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<TaskInfo>(&bytes).ok())
            else {
                continue;
            };
            if !info.is_running() {
                continue;
            }
            let killed = kill_leftover(&info);
            settle(&mut info, owner, killed);
            let written = serde_json::to_vec_pretty(&info)
                .map_err(std::io::Error::other)
                .and_then(|bytes| write_atomic(&path, &bytes));
            match written {
                Ok(()) => finalized.push(info.id),
                Err(err) => tracing::warn!("cannot finalize {}: {err}", path.display()),
            }
        }
        if let Err(err) = std::fs::remove_file(dir.join(OWNER_FILE)) {
            tracing::warn!("cannot settle {}: {err}", dir.display());
        }
        // A workbench that died before any task ran left nothing else: nothing to keep. (Fails,
        // as it should, while records are in it.)
        let _ = std::fs::remove_dir(&dir);
    }
    if !finalized.is_empty() {
        tracing::info!("background tasks left running by a workbench that died: {finalized:?}");
    }
    finalized
}

/// Kills the task's group if its leader is still the process the record names; true if it did.
fn kill_leftover(info: &TaskInfo) -> bool {
    let (Some(pid), Some(start)) = (info.pid, info.leader_start) else {
        return false;
    };
    let leader = ProcessId { pid, start };
    if !leader.exists() {
        return false;
    }
    match ProcessGroup::of_leader(pid) {
        Some(group) => {
            tracing::warn!(
                "background task {} (group {pid}) outlived its workbench; killing it",
                info.id
            );
            group.kill_now();
            true
        }
        None => false,
    }
}

/// The final state of a task whose workbench `owner` died while it ran.
fn settle(info: &mut TaskInfo, owner: ProcessId, killed_now: bool) {
    info.status = TaskStatus::Stopped;
    info.kill_kind = Some(KillKind::Shutdown);
    info.end_time = Some(now_ms());
    info.error = Some(format!(
        "The workbench that ran it (pid {}) ended without stopping it (it was killed or \
         crashed); {}",
        owner.pid,
        if killed_now {
            "the task still ran and was killed at the next start"
        } else {
            "the task was stopped with it"
        }
    ));
    if let Ok(meta) = std::fs::metadata(&info.output_path) {
        info.bytes_written = meta.len();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;
    use crate::sys::SpawnGrouped as _;
    use crate::sys::private_dir::leave_owned_dir;

    fn record(dir: &Path, info: &TaskInfo) {
        std::fs::write(
            dir.join(format!("{}.json", info.id)),
            serde_json::to_vec(info).unwrap(),
        )
        .unwrap();
    }

    fn read(dir: &Path, id: &str) -> TaskInfo {
        serde_json::from_slice(&std::fs::read(dir.join(format!("{id}.json"))).unwrap()).unwrap()
    }

    #[test]
    fn a_dead_workbenchs_running_tasks_are_settled_and_a_leftover_group_is_killed() {
        let root = tempfile::tempdir().unwrap();
        let dead = ProcessId::ended();
        let dir = root.path().join("unipi-1-abc");
        leave_owned_dir(&dir, dead);
        // A task whose group outlived both the workbench and its watchdog.
        let (mut leftover, group) = std::process::Command::new("sleep")
            .arg("30")
            .spawn_grouped()
            .unwrap();
        let leader = ProcessId::of(leftover.id()).unwrap();
        let running = |id: &str, pid: Option<ProcessId>| TaskInfo {
            id: id.into(),
            output_path: dir.join(format!("{id}.log")).display().to_string(),
            pid: pid.map(|p| p.pid),
            leader_start: pid.map(|p| p.start),
            ..TaskInfo::default()
        };
        record(&dir, &running("bg-000001", Some(leader)));
        // A task whose pid is now someone else's (this test process, another start time).
        let reused = ProcessId {
            start: leader.start + 1,
            ..ProcessId::current().unwrap()
        };
        record(&dir, &running("bg-000002", Some(reused)));
        record(
            &dir,
            &TaskInfo {
                status: TaskStatus::Done,
                ..running("bg-000003", None)
            },
        );
        let mut finalized = finalize_orphans(root.path());
        finalized.sort();
        assert_eq!(finalized, ["bg-000001", "bg-000002"]);
        use std::os::unix::process::ExitStatusExt as _;
        assert_eq!(
            leftover.wait().unwrap().signal(),
            Some(9),
            "the leftover group was killed"
        );
        assert!(!group.alive());
        let killed = read(&dir, "bg-000001");
        assert_eq!(killed.status, TaskStatus::Stopped);
        let error = killed.error.unwrap();
        assert!(error.contains(&format!("pid {}", dead.pid)), "{error}");
        assert!(error.contains("killed at the next start"), "{error}");
        let stopped = read(&dir, "bg-000002").error.unwrap();
        assert!(stopped.contains("stopped with it"), "{stopped}");
        assert_eq!(read(&dir, "bg-000003").status, TaskStatus::Done);
        assert!(!dir.join(OWNER_FILE).exists(), "the directory is settled");
        assert!(
            finalize_orphans(root.path()).is_empty(),
            "and not settled twice"
        );
        assert!(dir.is_dir(), "its records stay");
    }

    #[test]
    fn a_dead_workbenchs_directory_without_tasks_is_removed() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("unipi-1-abc");
        leave_owned_dir(&dir, ProcessId::ended());
        let live = root.path().join("unipi-2-def");
        leave_owned_dir(&live, ProcessId::current().unwrap());
        assert!(finalize_orphans(root.path()).is_empty());
        assert!(!dir.exists(), "nothing was left to keep");
        assert!(
            live.join(OWNER_FILE).exists(),
            "a live workbench's is not touched"
        );
    }
}

//! Runs that an earlier workbench left unfinished on disk. A workbench that is killed (or
//! crashes) cannot write its runs' final state, so their `status.json` still says `running` (or
//! `queued`). Each status names the workbench that follows the run by pid and start time
//! (`owner`); when that process is gone — its pid free, or reused by a process with another
//! start time — the run ended with it (the watchdog killed its processes), and the next start
//! writes that as its final state ([`finalize_orphans`]). A run whose owner still runs belongs to
//! another live session and is left alone.

use std::path::Path;

use serde_json::{Value, json};

use super::run_status::RunStatus;
use super::runner::{OWNER_FIELD, STATUS_FILE, merge_status_file};
use crate::sys::{ProcessId, now_ms};

/// Who follows an unfinished run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Follower {
    /// A live workbench (this one or another session).
    Alive(ProcessId),
    /// Its workbench is gone.
    Gone(ProcessId),
    /// The status names no owner (written by an older version).
    Unknown,
}

/// Who follows the run whose `status.json` is `status`.
pub(super) fn follower(status: &Value) -> Follower {
    match status[OWNER_FIELD].as_str().and_then(ProcessId::from_text) {
        Some(owner) if owner.is_running() => Follower::Alive(owner),
        Some(owner) => Follower::Gone(owner),
        None => Follower::Unknown,
    }
}

/// Whether `status` says the run has not ended.
pub(super) fn unfinished(status: &Value) -> bool {
    matches!(
        status["status"].as_str(),
        Some(s) if s == RunStatus::Running.as_str() || s == RunStatus::Queued.as_str()
    )
}

/// The final state of a run whose workbench `owner` died while it ran.
pub(super) fn orphan_error(owner: ProcessId) -> String {
    format!(
        "the workbench that ran it (pid {}) ended without stopping it — it was killed or \
         crashed — so the run was stopped with it and no result was recorded",
        owner.pid
    )
}

/// Writes the final state of every unfinished run under `runs_root` whose workbench is gone;
/// returns their ids.
pub(super) fn finalize_orphans(runs_root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(runs_root) else {
        return Vec::new();
    };
    let mut finalized = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path().join(STATUS_FILE);
        let Some(status) = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        else {
            continue;
        };
        if !unfinished(&status) {
            continue;
        }
        let Follower::Gone(owner) = follower(&status) else {
            continue;
        };
        let fields = json!({
            "status": RunStatus::Failed.as_str(),
            "error": orphan_error(owner),
            "endedAt": now_ms(),
        });
        match merge_status_file(&path, &fields) {
            Ok(()) => finalized.push(entry.file_name().to_string_lossy().into_owned()),
            Err(err) => tracing::warn!("cannot finalize {}: {err:#}", path.display()),
        }
    }
    if !finalized.is_empty() {
        tracing::info!(
            "helper runs left running by a workbench that died, now failed: {finalized:?}"
        );
    }
    finalized
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;

    fn write_run(root: &Path, id: &str, status: &Value) {
        let dir = root.join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(STATUS_FILE), status.to_string()).unwrap();
    }

    fn read_run(root: &Path, id: &str) -> Value {
        serde_json::from_slice(&std::fs::read(root.join(id).join(STATUS_FILE)).unwrap()).unwrap()
    }

    #[test]
    fn only_unfinished_runs_of_a_dead_workbench_are_finalized() {
        let root = tempfile::tempdir().unwrap();
        let me = ProcessId::current().unwrap();
        let dead = ProcessId::ended();
        let reused = ProcessId {
            start: me.start + 3,
            ..me
        };
        let running = |owner: Option<ProcessId>| json!({"status": "running", "agent": "explore", OWNER_FIELD: owner.map(ProcessId::to_text)});
        write_run(root.path(), "h-dead", &running(Some(dead)));
        write_run(root.path(), "h-reused", &running(Some(reused)));
        write_run(root.path(), "h-alive", &running(Some(me)));
        write_run(root.path(), "h-old", &running(None));
        write_run(
            root.path(),
            "h-done",
            &json!({"status": "completed", OWNER_FIELD: dead.to_text()}),
        );
        let mut finalized = finalize_orphans(root.path());
        finalized.sort();
        assert_eq!(finalized, ["h-dead", "h-reused"]);
        let dead_run = read_run(root.path(), "h-dead");
        assert_eq!(dead_run["status"], "failed");
        assert_eq!(dead_run["agent"], "explore", "the other fields stay");
        assert!(
            dead_run["error"]
                .as_str()
                .unwrap()
                .contains(&format!("pid {}", dead.pid)),
            "{dead_run}"
        );
        assert_eq!(read_run(root.path(), "h-alive")["status"], "running");
        assert_eq!(read_run(root.path(), "h-old")["status"], "running");
        assert_eq!(read_run(root.path(), "h-done")["status"], "completed");
    }
}

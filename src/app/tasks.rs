//! The app's side of background tasks: the dock's rows from the task registry, the dock's
//! requests carried out on the service (as spawned tasks, never blocking the loop), and the
//! footer's tasks segment. The service itself (`crate::tasks`) owns processes and files; this
//! only reads its registry and calls its API.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use unipi_widgets::dock::{DockRow, TaskStatus as RowStatus};

use crate::bridge::AgentId;
use crate::tasks::{
    KillKind, RunRequest, TaskInfo, TaskOrigin, TaskRegistry, TaskService, TaskStatus, TasksModule,
};

/// Lines of output shown in the dock's detail view.
const DETAIL_TAIL_LINES: usize = 200;

/// The task service as the app holds it.
#[derive(Clone)]
pub struct Tasks {
    pub service: TaskService,
    pub module: Arc<TasksModule>,
}

impl Tasks {
    pub fn registry(&self) -> TaskRegistry {
        self.service.registry()
    }
}

/// What the user did with finished tasks in the dock.
#[derive(Debug, Default, Clone)]
pub struct Marks {
    /// Looked at (the "unseen" marker goes).
    pub seen: HashSet<String>,
    /// Cleared from the list (Ctrl+Alt+C): shown only with history on.
    pub cleared: HashSet<String>,
}

/// The dock's rows. `detail` is the task whose output tail is read (only the one shown in the
/// detail view: reading every log on every change would be wasted I/O).
pub fn dock_rows(tasks: &[TaskInfo], marks: &Marks, detail: Option<&str>) -> Vec<DockRow> {
    let now = crate::tasks::now_ms_for_lists();
    tasks
        .iter()
        .map(|task| DockRow {
            id: task.id.clone(),
            name: task.name.clone(),
            status: match task.status {
                TaskStatus::Running => RowStatus::Running,
                TaskStatus::Done => RowStatus::Done,
                TaskStatus::Failed => RowStatus::Failed,
                TaskStatus::Stopped => RowStatus::Stopped,
            },
            exit_code: task.exit_code,
            runtime_secs: task.runtime_ms(now) / 1000,
            output_bytes: task.bytes_written,
            wakes_agent: task.wakes_agent(),
            last_line: task.last_line.clone(),
            unseen: !task.is_running() && !marks.seen.contains(&task.id),
            cleared: !task.is_running() && marks.cleared.contains(&task.id),
            command: task.command.clone(),
            output_path: task.output_path.clone(),
            kill_kind: task.kill_kind.map(|kind| {
                match kind {
                    KillKind::User => "user",
                    KillKind::Timeout => "timeout",
                    KillKind::OutputCap => "output_cap",
                    KillKind::Shutdown => "shutdown",
                }
                .to_string()
            }),
            error: task.error.clone(),
            pid: task.pid,
            is_shell: !task.is_agent,
            started_at: clock(task.start_time),
            ended_at: task.end_time.map(clock),
            tail: if detail == Some(task.id.as_str()) {
                crate::tasks::last_lines(Path::new(&task.output_path), DETAIL_TAIL_LINES)
            } else {
                Vec::new()
            },
        })
        .collect()
}

/// `HH:MM:SS` (UTC) of a millisecond timestamp.
fn clock(ms: u64) -> String {
    let secs = ms / 1000;
    format!(
        "{:02}:{:02}:{:02} UTC",
        (secs / 3600) % 24,
        (secs / 60) % 60,
        secs % 60
    )
}

/// A rerun of a finished shell task: same command and settings, started by the user (so it
/// notifies without waking the agent).
pub fn rerun_request(task: &TaskInfo) -> RunRequest {
    RunRequest {
        name: task.name.clone(),
        command: task.command.clone(),
        description: task.description.clone(),
        timeout_seconds: task.timeout_seconds,
        notify_on_completion: true,
        trigger_on_completion: false,
        is_agent: false,
        origin: TaskOrigin::User,
        agent: AgentId::main(),
    }
}

/// OSC 52: put `text` on the outer terminal's clipboard (this is how copy works over SSH).
pub fn osc52(text: &str) -> Vec<u8> {
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    format!("\x1b]52;c;{encoded}\x07").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, status: TaskStatus) -> TaskInfo {
        serde_json::from_value(serde_json::json!({
            "id": id, "name": "build", "command": "make", "status": status, "cwd": "/w",
            "outputPath": "/nonexistent/out.log", "startTime": 3_600_000u64, "bytesWritten": 10,
            "isAgent": false, "notifyOnCompletion": true, "triggerOnCompletion": true,
            "notified": false, "origin": "agent", "agent": "main"
        }))
        .unwrap()
    }

    #[test]
    fn rows_mark_unseen_finished_tasks_and_waking_ones() {
        let tasks = vec![task("a", TaskStatus::Running), task("b", TaskStatus::Done)];
        let mut marks = Marks::default();
        let rows = dock_rows(&tasks, &marks, None);
        assert!(rows[0].wakes_agent && !rows[0].unseen);
        assert!(rows[1].unseen && !rows[1].cleared);
        assert_eq!(rows[1].started_at, "01:00:00 UTC");
        marks.seen.insert("b".to_string());
        let rows = dock_rows(&tasks, &marks, None);
        assert!(!rows[1].unseen && !rows[1].cleared);
        marks.cleared.insert("b".to_string());
        assert!(dock_rows(&tasks, &marks, None)[1].cleared);
    }

    #[test]
    fn a_rerun_notifies_without_waking() {
        let request = rerun_request(&task("a", TaskStatus::Failed));
        assert_eq!(request.command, "make");
        assert!(request.notify_on_completion && !request.trigger_on_completion);
    }

    #[test]
    fn osc52_carries_base64_text() {
        assert_eq!(osc52("hi"), b"\x1b]52;c;aGk=\x07".to_vec());
    }
}

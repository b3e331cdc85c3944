//! Background tasks in the dock: the rows from the task registry, and the dock's requests
//! carried out on the service (in spawned tasks, never on the UI loop). The output tail of the
//! task the dock's detail shows is read here in the background — when the detail opens and
//! whenever that task changes — and kept, so [`DockSource::section`] reads memory only. The
//! section says what the dock's row keys do on each task ([`verbs`]) and which hints it shows.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::bridge::Refusal;
use crate::sys::lock;

use tokio::sync::watch;
use unipi_widgets::tasks::{TaskRow, TaskStatus as RowStatus};

use crate::bridge::AgentId;
use crate::capability::Changed;
use crate::tasks::{KillKind, RunRequest, TaskInfo, TaskOrigin, TaskService, TaskStatus};
use crate::views::RefreshContext;
use crate::views::dock::{
    DockAction, DockRequest, DockSection, DockSource, DockWords, HintTable, Hints, Marks, SCROLL,
    SELECT, StopAll, Verb, Verbs,
};

/// Lines of output shown in the dock's detail view.
const DETAIL_TAIL_LINES: usize = 200;

/// The dock's rows. `tail` is the output tail of the task the detail shows (read only for that
/// one: reading every log on every change would be wasted I/O).
pub(crate) fn dock_rows(tasks: &[TaskInfo], marks: &Marks, tail: Option<&Tail>) -> Vec<TaskRow> {
    let now = crate::sys::now_ms();
    tasks
        .iter()
        .map(|task| TaskRow {
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
            started_at: crate::sys::utc_clock(task.start_time),
            ended_at: task.end_time.map(crate::sys::utc_clock),
            tail: tail
                .filter(|tail| tail.id == task.id)
                .map(|tail| tail.lines.clone())
                .unwrap_or_default(),
        })
        .collect()
}

/// Tasks are listed below the agents (a delegate, listed by both, shows as the agent).
const RANK: u8 = 1;

/// What the tasks' rows are called, and what the row keys do on them as F1 says it.
pub(super) static WORDS: DockWords = DockWords {
    lists: "background tasks",
    keys: &[
        (DockAction::Stop, "Stop the selected task"),
        (DockAction::StopAll, "Stop every running task (press twice)"),
        (DockAction::Rerun, "Rerun the selected shell task"),
        (DockAction::CopyPath, "Copy the output path"),
    ],
};

/// The list's hints while a task is selected.
pub const LIST_HINTS: HintTable = &[
    SELECT,
    (&[DockAction::Open], "details"),
    (&[DockAction::Stop], "stop"),
    (&[DockAction::StopAll], "stop all"),
    (&[DockAction::Rerun], "rerun"),
    (&[DockAction::CopyPath], "copy path"),
    (&[DockAction::History], "history"),
    (&[DockAction::ClearNotices], "clear notices"),
    (&[DockAction::Back], "close"),
];

/// A task's detail's hints.
pub const DETAIL_HINTS: HintTable = &[
    SCROLL,
    (&[DockAction::Bottom], "follow"),
    (&[DockAction::Stop], "stop"),
    (&[DockAction::Rerun], "rerun"),
    (&[DockAction::CopyPath], "copy path"),
    (&[DockAction::Back], "back"),
];

/// The tasks' part of the dock: `rows` (any order) drawn by the tasks' widget, with what the
/// row keys do on each.
pub fn section(rows: Vec<TaskRow>) -> DockSection {
    let verbs = rows
        .iter()
        .map(|row| (row.id.clone(), verbs(row)))
        .collect();
    DockSection {
        rank: RANK,
        view: unipi_widgets::tasks::section(rows),
        verbs,
        hints: Hints {
            list: LIST_HINTS,
            detail: DETAIL_HINTS,
        },
        stop_all: Some(StopAll {
            one: "task",
            many: "tasks",
            none: "No running background tasks to stop.",
        }),
        idle: Verbs::default().on(DockAction::Steer, not_steered()),
    }
}

/// What the row keys do on `row`: stop a running task, rerun a finished shell task, copy its
/// output path; a task takes no message.
fn verbs(row: &TaskRow) -> Verbs {
    let name = &row.name;
    let running = row.status == RowStatus::Running;
    let stop = if running {
        // The notice goes once the task has stopped.
        Verb::Ask {
            request: DockRequest::Stop(row.id.clone()),
            notice: format!("Stopping {name}…"),
        }
    } else {
        Verb::Refuse(format!(
            "{name} is {}; nothing to stop.",
            row.status.label()
        ))
    };
    let rerun = if !row.is_shell {
        Verb::Refuse("Only shell-command tasks can be rerun from the dock.".to_owned())
    } else if running {
        Verb::Refuse(format!("{name} is still running."))
    } else {
        Verb::Ask {
            request: DockRequest::Rerun(row.id.clone()),
            notice: format!("Rerunning {name}…"),
        }
    };
    Verbs::default()
        .on(DockAction::Stop, stop)
        .on(DockAction::Rerun, rerun)
        .on(
            DockAction::CopyPath,
            Verb::Copy {
                text: row.output_path.clone(),
                notice: format!("Copied the output path of {name}."),
            },
        )
        .on(DockAction::Steer, not_steered())
}

/// A task takes no message (even with no task listed, the key says so).
fn not_steered() -> Verb {
    Verb::Refuse("Only helpers can be steered.".to_owned())
}

/// A rerun of a finished shell task: same command and settings, started by the user (so it
/// notifies without waking the agent).
pub(crate) fn rerun_request(task: &TaskInfo) -> RunRequest {
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

/// The last output lines of one task, as last read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tail {
    pub id: String,
    pub lines: Vec<String>,
}

/// The tasks' [`DockSource`].
pub struct TaskDock {
    service: TaskService,
    marks: Mutex<Marks>,
    tail: Arc<Mutex<Option<Tail>>>,
    /// The task the dock's detail shows; the tail reader follows it.
    detail: watch::Sender<Option<String>>,
    changed: Changed,
}

impl TaskDock {
    /// A dock source over `service`; `changed` is the capability's signal (bumped when a tail
    /// was read or marks changed). Starts the tail reader (needs a runtime).
    pub fn new(service: TaskService, changed: Changed) -> Arc<Self> {
        let (detail, target) = watch::channel(None);
        let dock = Arc::new(TaskDock {
            service,
            marks: Mutex::new(Marks::default()),
            tail: Arc::new(Mutex::new(None)),
            detail,
            changed,
        });
        tokio::spawn(read_tails(
            dock.service.clone(),
            target,
            Arc::clone(&dock.tail),
            dock.changed.clone(),
        ));
        dock
    }

    fn marks(&self) -> std::sync::MutexGuard<'_, Marks> {
        lock(&self.marks)
    }

    /// The tasks as the dock lists them now, from memory.
    pub fn rows(&self) -> Vec<TaskRow> {
        let snapshot = self.service.registry().snapshot();
        let tail = lock(&self.tail);
        dock_rows(&snapshot, &self.marks(), tail.as_ref())
    }

    fn spawn_stop(&self, id: String) {
        let service = self.service.clone();
        tokio::spawn(async move {
            // The user stopped it: the model hears about it at its next turn, it is not woken.
            if let Err(err) = service.stop_by_user(&id).await {
                tracing::info!("stop {id}: {err}");
            }
        });
    }
}

impl DockSource for TaskDock {
    fn section(&self, _context: &RefreshContext<'_>) -> Option<DockSection> {
        Some(section(self.rows()))
    }

    fn request(&self, request: &DockRequest) -> Result<(), Refusal> {
        let registry = self.service.registry();
        let listed = |id: &str| registry.get(id).is_some();
        match request {
            DockRequest::Detail(target) => {
                let target = target.clone().filter(|id| listed(id));
                self.detail.send_if_modified(|current| {
                    let moved = *current != target;
                    *current = target;
                    moved
                });
            }
            DockRequest::MarkSeen(id) if listed(id) => {
                self.marks().seen.insert(id.clone());
                self.changed.bump();
            }
            DockRequest::Stop(id) if listed(id) => self.spawn_stop(id.clone()),
            DockRequest::StopAll => {
                for task in registry.snapshot() {
                    if task.is_running() {
                        self.spawn_stop(task.id);
                    }
                }
            }
            DockRequest::Rerun(id) => {
                if let Some(task) = registry.get(id) {
                    let request = rerun_request(&task);
                    let service = self.service.clone();
                    let id = id.clone();
                    tokio::spawn(async move {
                        if let Err(err) = service.start(request).await {
                            tracing::warn!("rerun {id}: {err}");
                        }
                    });
                }
            }
            DockRequest::ClearFinished => {
                let mut marks = self.marks();
                for task in registry.snapshot() {
                    if !task.is_running() {
                        marks.seen.insert(task.id.clone());
                        marks.cleared.insert(task.id);
                    }
                }
                drop(marks);
                self.changed.bump();
            }
            // Not a task of ours, or nothing a task does.
            DockRequest::MarkSeen(_) | DockRequest::Stop(_) | DockRequest::Steer { .. } => {}
        }
        Ok(())
    }
}

/// Reads the output tail of the task the detail shows: when the detail opens on it and again on
/// every change of the tasks while it stays open (its output grows), off the UI loop.
async fn read_tails(
    service: TaskService,
    mut target: watch::Receiver<Option<String>>,
    tail: Arc<Mutex<Option<Tail>>>,
    changed: Changed,
) {
    let mut tasks = service.registry().subscribe();
    loop {
        let id = target.borrow_and_update().clone();
        let path = id
            .as_deref()
            .and_then(|id| service.registry().get(id))
            .map(|task| PathBuf::from(task.output_path));
        let read = match (id, path) {
            (Some(id), Some(path)) => tokio::task::spawn_blocking(move || Tail {
                id,
                lines: crate::tasks::last_lines(&path, DETAIL_TAIL_LINES),
            })
            .await
            .ok(),
            _ => None,
        };
        let fresh = {
            let mut kept = lock(&tail);
            let fresh = *kept != read;
            *kept = read;
            fresh
        };
        if fresh {
            changed.bump();
        }
        tokio::select! {
            moved = target.changed() => if moved.is_err() { break },
            ended = tasks.changed() => if ended.is_err() { break },
        }
    }
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
        assert!(rows.iter().all(|row| row.tail.is_empty()));
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
    fn only_the_detail_tasks_tail_is_shown() {
        let tasks = vec![task("a", TaskStatus::Running), task("b", TaskStatus::Done)];
        let tail = Tail {
            id: "b".to_owned(),
            lines: vec!["done".to_owned()],
        };
        let rows = dock_rows(&tasks, &Marks::default(), Some(&tail));
        assert!(rows[0].tail.is_empty());
        assert_eq!(rows[1].tail, ["done"]);
    }
}

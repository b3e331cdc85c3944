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
    let now = crate::sys::now_ms();
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
pub(super) fn clock(ms: u64) -> String {
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

/// The app's handling of `/unipi:*` commands, the dock, task settings and the pending-wake line.
/// (An `impl App` block here keeps the task plumbing beside the task helpers above.)
impl super::App {
    pub(super) fn on_command(
        &mut self,
        agent: crate::bridge::AgentId,
        name: &str,
        args: &str,
        reply: tokio::sync::oneshot::Sender<crate::bridge::CommandReply>,
    ) {
        use crate::bridge::CommandReply;
        match (name, &self.tasks) {
            (crate::mcp::module::STATUS_COMMAND | crate::mcp::module::RELOAD_COMMAND, _) => {
                self.on_mcp_command(agent, name, args, reply)
            }
            (
                crate::compactor::module::COMPACT_COMMAND
                | crate::compactor::module::STATS_COMMAND
                | crate::compactor::module::VIEW_COMMAND,
                _,
            ) => self.on_compactor_command(agent, name, args, reply),
            ("unipi:bg", Some(tasks)) => {
                // Starting a task takes a moment; answer Pi from a task, not from the loop.
                let module = std::sync::Arc::clone(&tasks.module);
                let args = args.to_string();
                tokio::spawn(async move {
                    let _ = reply.send(module.run_user_command(agent, &args).await);
                });
            }
            ("unipi:bg-tasks", Some(_)) => {
                let _ = reply.send(CommandReply::Done);
                self.open_dock(Some(args.trim()).filter(|id| !id.is_empty()));
            }
            ("unipi:bg-settings", Some(_)) => {
                let _ = reply.send(CommandReply::Done);
                self.open_task_settings();
            }
            _ => {
                if super::bridge::answer_command(name, reply) {
                    let model = super::bridge::info_model(self.bridge.as_ref(), &self.log_path);
                    self.views
                        .push(Box::new(crate::views::info::InfoView::new(model)));
                }
            }
        }
        self.request_draw();
    }

    /// Opens the background-task settings overlay with the config as it is on disk now.
    pub(super) fn open_task_settings(&mut self) {
        use crate::views::settings::SettingsView;
        if self.views.find_mut::<SettingsView>().is_some() {
            return;
        }
        let workspace = std::env::current_dir().unwrap_or_default();
        let (config, _errors) =
            crate::tasks::load_tasks_config(dirs::home_dir().as_deref(), &workspace);
        self.views.push(Box::new(SettingsView::new(
            crate::tasks::TASKS_SETTINGS_MODULE,
            crate::tasks::TASKS_SETTINGS_TITLE,
            crate::tasks::settings_fields(&config),
            crate::tasks::apply_settings,
        )));
    }

    /// Writes a settings overlay's values to the user's config file and tells the overlay.
    pub(super) fn save_settings(&mut self, module: &str, values: &serde_json::Value) {
        let result = match (module, dirs::home_dir()) {
            (crate::tasks::TASKS_SETTINGS_MODULE, Some(home)) => {
                let path = home.join(crate::tasks::TASKS_CONFIG_FILE);
                crate::tasks::save_tasks_config(&path, values)
                    .map(|()| "Saved. Takes effect on next start.".to_owned())
                    .map_err(|err| format!("{err:#}"))
            }
            (crate::tasks::TASKS_SETTINGS_MODULE, None) => Err("no home directory".to_owned()),
            (other, _) => Err(format!("unknown settings module `{other}`")),
        };
        if let Err(err) = &result {
            tracing::warn!("saving {module} settings: {err}");
        }
        if let Some(view) = self
            .views
            .find_mut::<crate::views::settings::SettingsView>()
        {
            view.save_finished(result);
        }
        self.request_draw();
    }

    /// Opens the dock (or brings the open one to `detail`). It lists background tasks and,
    /// with the helper board, the main agent and its helpers; with neither there is nothing
    /// to dock.
    pub(super) fn open_dock(&mut self, detail: Option<&str>) {
        if self.tasks.is_none() && self.helpers.is_none() {
            self.footer
                .set_notice("Background tasks are disabled (background-tasks.json)");
            return;
        }
        if self
            .views
            .find_mut::<crate::views::dock::DockView>()
            .is_none()
        {
            let rows = self.tasks.as_ref().map_or_else(Vec::new, |tasks| {
                dock_rows(&tasks.registry().snapshot(), &self.task_marks, None)
            });
            self.views.push(Box::new(crate::views::dock::DockView::new(
                rows,
                &self.keymap,
            )));
            // The agent rows go in before `detail` is looked for: it may name a helper.
            self.refresh_helpers();
        }
        if let Some(id) = detail
            && let Some(dock) = self.views.find_mut::<crate::views::dock::DockView>()
        {
            dock.open_detail(id);
        }
        self.refresh_dock();
    }

    /// How often the loop should tick: the pending-wake line's spinner while it shows, else once
    /// a second while the dock shows running tasks or helpers (their runtimes), else never
    /// (idle is idle).
    pub(super) fn tick_every(&mut self) -> Option<std::time::Duration> {
        if self.pending_line.is_some() {
            Some(std::time::Duration::from_millis(250))
        } else if (self.footer.tasks.0 > 0 || self.helpers_running())
            && self
                .views
                .find_mut::<crate::views::dock::DockView>()
                .is_some()
        {
            Some(std::time::Duration::from_secs(1))
        } else {
            None
        }
    }

    /// A tick: advance the spinner, refresh runtimes.
    pub(super) fn on_tick(&mut self) {
        self.spinner = self.spinner.wrapping_add(1);
        self.refresh_dock();
    }

    /// Shows, updates or removes the pending-wake line above Pi's editor: while the agent is idle
    /// but a task that will wake it still runs, the user must not think the turn is over.
    pub(super) fn sync_pending_line(&mut self) {
        let (Some(tasks), Some(bridge)) = (&self.tasks, &self.bridge) else {
            return;
        };
        let idle = self.footer.data.activity == Some(unipi_widgets::footer::Activity::Idle)
            && self.footer.data.bridge == unipi_widgets::footer::BridgeLink::Connected;
        let now = crate::sys::now_ms();
        let mut waiting: Vec<(u64, unipi_widgets::pending::PendingTask)> = tasks
            .registry()
            .snapshot()
            .into_iter()
            .filter(|task| idle && task.is_running() && task.wakes_agent())
            .map(|task| {
                let runtime = task.runtime_ms(now) / 1000;
                let pending = unipi_widgets::pending::PendingTask {
                    name: task.name,
                    runtime_secs: runtime,
                };
                (runtime, pending)
            })
            .collect();
        // Longest-running first.
        waiting.sort_by_key(|(runtime, _)| std::cmp::Reverse(*runtime));
        let waiting: Vec<_> = waiting.into_iter().map(|(_, task)| task).collect();
        let width = usize::from(self.pane_area.width.max(20));
        let line = unipi_widgets::pending::pending_text(&waiting, self.spinner, width);
        if line == self.pending_line {
            return;
        }
        self.pending_line = line.clone();
        // One sender task, fed the latest line: calls never overtake each other, and a slow
        // Pi only ever gets the newest state.
        let sender = self.pending_tx.get_or_insert_with(|| {
            let (tx, mut rx) = tokio::sync::watch::channel(None::<String>);
            let host = bridge.host.clone();
            tokio::spawn(async move {
                while rx.changed().await.is_ok() {
                    let line = rx.borrow_and_update().clone();
                    let call = crate::bridge::HostCall::SetWidget {
                        key: "unipi-bg-pending".into(),
                        lines: line.map(|l| vec![l]),
                    };
                    if let Err(err) = host.call(&crate::bridge::AgentId::main(), call).await {
                        tracing::debug!("pending-wake line: {err}");
                    }
                }
            });
            tx
        });
        let _ = sender.send(line);
    }

    /// Gives an open dock the current rows (and the output tail of the task in its detail, or
    /// the transcript of the helper there).
    pub(super) fn refresh_dock(&mut self) {
        self.refresh_helpers();
        let Some(tasks) = &self.tasks else { return };
        let snapshot = tasks.registry().snapshot();
        self.footer.tasks = (
            tasks.registry().running_count(),
            tasks.registry().waking_count(),
        );
        if let Some(dock) = self.views.find_mut::<crate::views::dock::DockView>() {
            let model = dock.model();
            let detail = match model.mode {
                unipi_widgets::dock::DockMode::Detail { .. } => {
                    unipi_widgets::dock::selected_row(model).map(|row| row.id.clone())
                }
                unipi_widgets::dock::DockMode::List => None,
            };
            dock.set_rows(dock_rows(&snapshot, &self.task_marks, detail.as_deref()));
        }
        self.request_draw();
    }

    /// Carries out what a view asked for.
    pub(super) fn on_view_request(&mut self, request: crate::views::ViewRequest) {
        use crate::views::ViewRequest;
        match &request {
            ViewRequest::SaveSettings { module, values } => {
                self.save_settings(module, values);
                return;
            }
            // These concern helper runs as much as tasks: they need no task service.
            ViewRequest::CopyText(text) => {
                self.outer.extend(osc52(text));
                return;
            }
            ViewRequest::MarkSeen(id) => {
                self.task_marks.seen.insert(id.clone());
                self.refresh_dock();
                return;
            }
            ViewRequest::ClearFinishedNotices => {
                self.clear_finished_helpers();
                if self.tasks.is_none() {
                    self.refresh_dock();
                    return;
                }
            }
            _ => {}
        }
        let Some(tasks) = self.tasks.clone() else {
            return;
        };
        match request {
            ViewRequest::StopTask(id) => {
                tokio::spawn(async move {
                    if let Err(err) = tasks.service.stop(&id).await {
                        tracing::info!("stop {id}: {err}");
                    }
                });
            }
            ViewRequest::StopAllTasks => {
                for task in tasks.registry().snapshot() {
                    if task.is_running() {
                        let service = tasks.service.clone();
                        tokio::spawn(async move {
                            let _ = service.stop(&task.id).await;
                        });
                    }
                }
            }
            ViewRequest::RerunTask(id) => {
                if let Some(task) = tasks.registry().get(&id) {
                    let request = rerun_request(&task);
                    tokio::spawn(async move {
                        if let Err(err) = tasks.service.start(request).await {
                            tracing::warn!("rerun {id}: {err}");
                        }
                    });
                }
            }
            // Handled above, tasks or not.
            ViewRequest::SaveSettings { .. }
            | ViewRequest::CopyText(_)
            | ViewRequest::MarkSeen(_) => {}
            ViewRequest::ClearFinishedNotices => {
                for task in tasks.registry().snapshot() {
                    if !task.is_running() {
                        self.task_marks.seen.insert(task.id.clone());
                        self.task_marks.cleared.insert(task.id);
                    }
                }
                self.refresh_dock();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn task(id: &str, status: TaskStatus) -> TaskInfo {
        serde_json::from_value(serde_json::json!({
            "id": id, "name": "build", "command": "make", "status": status, "cwd": "/w",
            "outputPath": "/nonexistent/out.log", "startTime": 3_600_000u64, "bytesWritten": 10,
            "isAgent": false, "notifyOnCompletion": true, "triggerOnCompletion": true,
            "notified": false, "origin": "agent", "agent": "main"
        }))
        .unwrap()
    }

    #[test]
    pub(super) fn rows_mark_unseen_finished_tasks_and_waking_ones() {
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
    pub(super) fn a_rerun_notifies_without_waking() {
        let request = rerun_request(&task("a", TaskStatus::Failed));
        assert_eq!(request.command, "make");
        assert!(request.notify_on_completion && !request.trigger_on_completion);
    }

    #[test]
    pub(super) fn osc52_carries_base64_text() {
        assert_eq!(osc52("hi"), b"\x1b]52;c;aGk=\x07".to_vec());
    }
}

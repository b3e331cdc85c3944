//! The task service: starts shell commands as background tasks and watches them to the end.
//!
//! Each task is `<shell> -c <command>` in its own process group, stdin null, stdout and stderr
//! one pipe that a copier thread moves into the task's output file ([`super::capture`]): the
//! output cap is checked for every chunk before it is written, so the file never grows past it,
//! and the last lines the notification quotes are the ones the workbench captured. The file is
//! created exclusively, never through a link, in this session's private run directory. A task is
//! running until its shell has exited *and* its process group is empty, so `server &` inside a
//! task keeps the task alive and is stopped with it.
//!
//! One monitor future per task owns the child; the map under the lock holds only the snapshot
//! and a stop channel, so readers ([`TaskRegistry`]) never wait on a process. A guard in the
//! monitor SIGKILLs the group if the future is dropped before the group is known empty (runtime
//! shutdown, panic), and [`TaskService::shutdown`] stops and reaps every group: no orphan.

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use anyhow::Context as _;
use nix::sys::signal::Signal;
use tokio::process::{Child, Command};
use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::task::TaskTracker;

use super::capture::{Capture, CopyState};
use super::model::{KillKind, TaskInfo, TaskOrigin, TaskStatus, format_size, sort_tasks};
use super::notify::{self, SharedSink};
use crate::bridge::{AgentId, BridgeHost, HEADLESS_WAIT_LIMIT, NoticeSink, WakePromise, WakeReach};
use crate::sys::private_dir::{create_new_file, create_owned, ensure_private};
use crate::sys::{
    Changed, GroupGuard, GroupStop, ProcessGroup, ProcessId, Reach, SpawnGrouped as _, lock,
    now_ms, random_u64, write_atomic,
};

/// Default output cap: 20 MiB.
pub(crate) const DEFAULT_MAX_OUTPUT_BYTES: u64 = 20 * 1024 * 1024;
/// Time between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(3);
/// How long a stop waits for the task to end.
pub(crate) const STOP_WAIT: Duration = Duration::from_millis(4500);
/// Finished tasks kept in memory (their files stay on disk).
pub(crate) const MAX_RECENT_TASKS: usize = 100;

/// How tasks are run and where their files go.
#[derive(Debug, Clone)]
pub struct TaskSettings {
    /// The directory the per-session run directory is created in: `$UNIPI_BG_TMP_DIR`, else
    /// `tasks` in the user's private runtime directory ([`crate::sys::private_dir`]). It must be
    /// a directory of ours that nobody else can enter (it is made so, or refused).
    pub root_dir: PathBuf,
    /// Names the run directory (`<session>-<pid>-<nonce>`).
    pub session: String,
    pub shell: PathBuf,
    /// The working directory of every task.
    pub cwd: PathBuf,
    pub max_output_bytes: u64,
    pub kill_grace: Duration,
    pub stop_wait: Duration,
    /// How often a monitor looks at its task (size, timeout, group).
    pub poll_interval: Duration,
}

impl TaskSettings {
    /// Settings from the environment (`UNIPI_BG_TMP_DIR`, `UNIPI_BG_SHELL_PATH`,
    /// `UNIPI_BG_SHELL`, `SHELL`, `UNIPI_BG_MAX_OUTPUT_BYTES`); `max_output_bytes` is the
    /// configured cap, which the environment variable overrides.
    pub fn from_env(session: &str, cwd: PathBuf, max_output_bytes: Option<u64>) -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let root_dir = var("UNIPI_BG_TMP_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(default_root_dir);
        let env_cap = var("UNIPI_BG_MAX_OUTPUT_BYTES").and_then(|v| v.trim().parse::<u64>().ok());
        Self {
            root_dir,
            session: session.to_string(),
            shell: shell_from(
                var("UNIPI_BG_SHELL_PATH"),
                var("UNIPI_BG_SHELL"),
                var("SHELL"),
            ),
            cwd,
            max_output_bytes: env_cap
                .or(max_output_bytes)
                .filter(|cap| *cap > 0)
                .unwrap_or(DEFAULT_MAX_OUTPUT_BYTES),
            kill_grace: KILL_GRACE,
            stop_wait: STOP_WAIT,
            poll_interval: Duration::from_millis(100),
        }
    }
}

/// What to start.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub name: String,
    pub command: String,
    pub description: Option<String>,
    pub timeout_seconds: Option<u64>,
    pub notify_on_completion: bool,
    pub trigger_on_completion: bool,
    pub is_agent: bool,
    pub origin: TaskOrigin,
    /// Who gets the completion notification.
    pub agent: AgentId,
}

/// Why a task operation failed; the texts are the reference's, the model reads them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    #[error("Task ID is required")]
    IdRequired,
    #[error("Unknown background task ID: {0}")]
    Unknown(String),
    #[error("Ambiguous task ID prefix \"{prefix}\": {ids}")]
    Ambiguous { prefix: String, ids: String },
    #[error("Task {id} is {status}, not running")]
    NotRunning { id: String, status: &'static str },
    #[error("Task {id} did not exit within {waited} after cancellation")]
    StopTimeout { id: String, waited: String },
    #[error("Background command is empty")]
    EmptyCommand,
    #[error("Background tasks are shutting down")]
    ShuttingDown,
    #[error("Background task failed to start: {0}")]
    Spawn(String),
}

/// The service. Cheap to clone; every clone is the same set of tasks.
#[derive(Clone)]
pub struct TaskService {
    inner: Arc<TaskLedger>,
}

/// A read-only view of the tasks for other modules and the UI.
#[derive(Clone)]
pub struct TaskRegistry {
    inner: Arc<TaskLedger>,
}

impl TaskService {
    /// Makes sure the root is a private directory of ours (refusing one that is not), settles
    /// what a dead workbench left in it ([`super::orphans`]), and creates this session's run
    /// directory (`<root>/<session>-<pid>-<nonce>`: fresh, mode 0700, with its owner file).
    pub fn new(settings: TaskSettings) -> anyhow::Result<Self> {
        ensure_private(&settings.root_dir).with_context(|| {
            format!(
                "the background-task directory {} cannot be used",
                settings.root_dir.display()
            )
        })?;
        super::orphans::finalize_orphans(&settings.root_dir);
        let run_dir = create_owned(&settings.root_dir, &sanitize_segment(&settings.session))
            .with_context(|| {
                format!("create a task directory in {}", settings.root_dir.display())
            })?;
        Ok(Self {
            inner: Arc::new(TaskLedger {
                settings,
                run_dir,
                tasks: Mutex::new(HashMap::new()),
                changes: Changed::default(),
                sink: Mutex::new(None),
                shutting_down: AtomicBool::new(false),
                monitors: TaskTracker::new(),
            }),
        })
    }

    pub fn registry(&self) -> TaskRegistry {
        TaskRegistry {
            inner: self.inner.clone(),
        }
    }

    pub fn settings(&self) -> &TaskSettings {
        &self.inner.settings
    }

    /// Where this session's `<id>.json` and `<id>.log` files are.
    pub fn run_dir(&self) -> &Path {
        &self.inner.run_dir
    }

    /// Completion notifications go through the bridge from now on.
    pub fn attach_host(&self, host: BridgeHost) {
        self.attach_sink(Arc::new(host));
    }

    /// Completion notifications go to `sink` from now on.
    pub fn attach_sink(&self, sink: Arc<dyn NoticeSink>) {
        *lock(&self.inner.sink) = Some(sink);
    }

    /// Whether `agent` can still be woken once its current run ends (by the attached sink; with
    /// none attached, nothing is delivered anyway).
    pub fn wake_reach(&self, agent: &AgentId) -> WakeReach {
        lock(&self.inner.sink)
            .as_ref()
            .map_or(WakeReach::Anytime, |sink| sink.wake_reach(agent))
    }

    /// Starts a task. Must run inside the tokio runtime (the monitor is a task).
    pub async fn start(&self, request: RunRequest) -> Result<TaskInfo, TaskError> {
        if self.inner.shutting_down.load(Ordering::SeqCst) {
            return Err(TaskError::ShuttingDown);
        }
        let command = request.command.trim().to_string();
        if command.is_empty() {
            return Err(TaskError::EmptyCommand);
        }
        let id = self.inner.new_id();
        let output_path = self.inner.run_dir.join(format!("{id}.log"));
        let (child, group, capture) =
            spawn_shell(&self.inner.settings, &command, &id, &output_path)
                .map_err(|err| TaskError::Spawn(format!("{err:#}")))?;
        let info = TaskInfo {
            id: id.clone(),
            name: request.name,
            command,
            description: request.description,
            status: TaskStatus::Running,
            cwd: self.inner.settings.cwd.display().to_string(),
            output_path: output_path.display().to_string(),
            start_time: now_ms(),
            pid: Some(group.raw().unsigned_abs()),
            leader_start: ProcessId::of(group.raw().unsigned_abs()).map(|leader| leader.start),
            timeout_seconds: request.timeout_seconds.filter(|secs| *secs > 0),
            is_agent: request.is_agent,
            notify_on_completion: request.notify_on_completion,
            trigger_on_completion: request.trigger_on_completion,
            origin: request.origin,
            agent: request.agent.to_string(),
            ..TaskInfo::default()
        };
        // A task that will wake its agent is owed to it until the notice is delivered: a print
        // or JSON run waits for it (bounded by the task's timeout and its stop).
        let wake = info.wakes_agent().then(|| {
            let limit = info
                .timeout_seconds
                .map_or(HEADLESS_WAIT_LIMIT, Duration::from_secs)
                + self.inner.settings.kill_grace
                + self.inner.settings.stop_wait
                + WAKE_DELIVERY;
            let sink = lock(&self.inner.sink).clone();
            sink.and_then(|sink| {
                sink.promise_wake(
                    &request.agent,
                    format!("{} ({})", info.name, info.id),
                    limit,
                )
            })
        });
        let (stop_tx, stop_rx) = watch::channel(None);
        let (finished_tx, finished_rx) = watch::channel(false);
        lock(&self.inner.tasks).insert(
            id.clone(),
            Entry {
                info: info.clone(),
                stop: stop_tx,
                finished: finished_rx,
            },
        );
        self.inner.write_snapshot(&info).await;
        self.inner.changed();
        let monitor = Monitor {
            inner: Arc::downgrade(&self.inner),
            id,
            group,
            capture,
            timeout: info.timeout_seconds.map(Duration::from_secs),
            settings: self.inner.settings.clone(),
            wake: wake.flatten(),
        };
        // Armed before the monitor first runs: a future dropped unpolled still kills the group.
        let guard = GroupGuard::new(group, Reach::Group);
        self.inner
            .monitors
            .spawn(monitor.run(child, guard, stop_rx, finished_tx));
        Ok(info)
    }

    /// The task `query` names (an id or an unambiguous prefix).
    pub fn resolve(&self, query: &str) -> Result<TaskInfo, TaskError> {
        self.registry().resolve(query)
    }

    /// Stops a running task (SIGTERM to its group, SIGKILL after the grace) and waits for its
    /// end, at most [`TaskSettings::stop_wait`].
    pub async fn stop(&self, query: &str) -> Result<TaskInfo, TaskError> {
        let task = self.resolve(query)?;
        if !task.is_running() {
            return Err(TaskError::NotRunning {
                id: task.id,
                status: task.status.as_str(),
            });
        }
        self.request_stop(&task.id, KillKind::User);
        let wait = self.inner.settings.stop_wait;
        match self.wait(&task.id, wait).await {
            Some(info) => Ok(info),
            None => Err(TaskError::StopTimeout {
                id: task.id,
                waited: super::model::format_duration(wait.as_millis() as u64),
            }),
        }
    }

    /// Stops a running task for the user (the dock, `Ctrl+C` on a task): like
    /// [`TaskService::stop`], but its notification does not wake the agent — a turn the user did
    /// not ask for costs money; the model reads the notification with its next turn.
    pub(crate) async fn stop_by_user(&self, query: &str) -> Result<TaskInfo, TaskError> {
        let task = self.resolve(query)?;
        if task.is_running() {
            self.inner
                .update(&task.id, |info| info.trigger_on_completion = false);
        }
        self.stop(&task.id).await
    }

    /// Waits until the task has ended (its terminal state is written), at most `limit`.
    pub async fn wait(&self, id: &str, limit: Duration) -> Option<TaskInfo> {
        let mut finished = lock(&self.inner.tasks).get(id)?.finished.clone();
        let ended = tokio::time::timeout(limit, finished.wait_for(|done| *done)).await;
        match ended {
            Ok(Ok(_)) => self.registry().get(id),
            _ => None,
        }
    }

    /// Stops every running task (kill kind `shutdown`, no notification), waits for each group
    /// to be reaped, and SIGKILLs whatever is left after the stop wait. Further starts fail.
    pub async fn shutdown(&self) {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        let running: Vec<String> = self
            .registry()
            .snapshot()
            .into_iter()
            .filter(TaskInfo::is_running)
            .map(|task| task.id)
            .collect();
        for id in &running {
            self.request_stop(id, KillKind::Shutdown);
        }
        let wait = self.inner.settings.stop_wait;
        let waits = running.iter().map(|id| self.wait(id, wait));
        let ended = futures_util::future::join_all(waits).await;
        if ended.iter().any(Option::is_none) {
            tracing::warn!("background tasks still running after {wait:?}; killing them");
            self.kill_all_now();
            let waits = running
                .iter()
                .map(|id| self.wait(id, Duration::from_secs(1)));
            futures_util::future::join_all(waits).await;
        }
        // A monitor whose task ended just before writes its final state after `wait` returns
        // (the notification and the `notified` flag come last); no start can add one now.
        let monitors = &self.inner.monitors;
        monitors.close();
        if tokio::time::timeout(MONITORS_SETTLE, monitors.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                "{} background task monitors still busy after {MONITORS_SETTLE:?}",
                monitors.len()
            );
        }
        remove_if_unused(&self.inner.run_dir);
    }

    /// SIGKILLs every running task's group at once, without waiting: the last resort of the
    /// exit paths that cannot await (a panic, a second signal).
    pub fn kill_all_now(&self) {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        for entry in lock(&self.inner.tasks).values() {
            if let (true, Some(group)) = (
                entry.info.is_running(),
                entry.info.pid.and_then(ProcessGroup::of_leader),
            ) {
                group.kill_now();
            }
        }
    }

    fn request_stop(&self, id: &str, kind: KillKind) {
        if let Some(entry) = lock(&self.inner.tasks).get(id) {
            entry.stop.send_if_modified(|current| {
                let first = current.is_none();
                if first {
                    *current = Some(kind);
                }
                first
            });
        }
    }
}

impl TaskRegistry {
    /// Every task in memory, in display order (running, failed, stopped, done; newest first).
    pub fn snapshot(&self) -> Vec<TaskInfo> {
        let mut tasks: Vec<TaskInfo> = lock(&self.inner.tasks)
            .values()
            .map(|entry| entry.info.clone())
            .collect();
        sort_tasks(&mut tasks);
        tasks
    }

    pub fn get(&self, id: &str) -> Option<TaskInfo> {
        lock(&self.inner.tasks)
            .get(id)
            .map(|entry| entry.info.clone())
    }

    /// The task `query` names: an exact id, else a unique prefix (with or without `bg-`).
    pub fn resolve(&self, query: &str) -> Result<TaskInfo, TaskError> {
        let query = query.trim();
        if query.is_empty() {
            return Err(TaskError::IdRequired);
        }
        let tasks = lock(&self.inner.tasks);
        if let Some(entry) = tasks.get(query) {
            return Ok(entry.info.clone());
        }
        for prefix in [query.to_string(), format!("bg-{query}")] {
            let mut ids: Vec<&String> = tasks.keys().filter(|id| id.starts_with(&prefix)).collect();
            ids.sort();
            match ids.as_slice() {
                [] => continue,
                [id] => {
                    return tasks
                        .get(*id)
                        .map(|e| e.info.clone())
                        .ok_or(TaskError::IdRequired);
                }
                many => {
                    return Err(TaskError::Ambiguous {
                        prefix: query.to_string(),
                        ids: many
                            .iter()
                            .map(|id| id.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    });
                }
            }
        }
        Err(TaskError::Unknown(query.to_string()))
    }

    /// Bumps on every change; read [`TaskRegistry::snapshot`] after it fires.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    pub(crate) fn running_count(&self) -> usize {
        lock(&self.inner.tasks)
            .values()
            .filter(|e| e.info.is_running())
            .count()
    }

    /// Running tasks whose end will start an agent turn.
    pub(crate) fn waking_count(&self) -> usize {
        lock(&self.inner.tasks)
            .values()
            .filter(|e| e.info.is_running() && e.info.wakes_agent())
            .count()
    }
}

// --- internals ------------------------------------------------------------------------------

struct TaskLedger {
    settings: TaskSettings,
    run_dir: PathBuf,
    tasks: Mutex<HashMap<String, Entry>>,
    changes: Changed,
    sink: Mutex<Option<SharedSink>>,
    shutting_down: AtomicBool,
    /// Every task's monitor, so [`TaskService::shutdown`] can wait for the last ones to write
    /// their final state (a task that ended just before the shutdown may still be notifying).
    monitors: TaskTracker,
}

struct Entry {
    info: TaskInfo,
    stop: watch::Sender<Option<KillKind>>,
    finished: watch::Receiver<bool>,
}

impl TaskLedger {
    fn changed(&self) {
        self.changes.bump();
    }

    fn new_id(&self) -> String {
        let tasks = lock(&self.tasks);
        loop {
            let id = format!("bg-{:06x}", random_u64() & 0xff_ffff);
            if !tasks.contains_key(&id) {
                return id;
            }
        }
    }

    fn update(&self, id: &str, change: impl FnOnce(&mut TaskInfo)) -> Option<TaskInfo> {
        let info = {
            let mut tasks = lock(&self.tasks);
            let entry = tasks.get_mut(id)?;
            change(&mut entry.info);
            entry.info.clone()
        };
        self.changed();
        Some(info)
    }

    /// Writes `<id>.json` durably; a failure is logged (the task goes on).
    async fn write_snapshot(&self, info: &TaskInfo) {
        if let Err(err) = self.try_write_snapshot(info).await {
            tracing::warn!(
                "cannot write the metadata of background task {}: {err:#}",
                info.id
            );
        }
    }

    async fn try_write_snapshot(&self, info: &TaskInfo) -> anyhow::Result<()> {
        let path = self.run_dir.join(format!("{}.json", info.id));
        let mut text = serde_json::to_string_pretty(info)?;
        text.push('\n');
        tokio::task::spawn_blocking(move || write_atomic(&path, text.as_bytes()))
            .await
            .context("the metadata writer panicked")?
            .context("Durable file operation failed")
    }

    fn prune(&self) {
        let mut tasks = lock(&self.tasks);
        let mut finished: Vec<(u64, String)> = tasks
            .values()
            .filter(|e| !e.info.is_running())
            .map(|e| {
                (
                    e.info.end_time.unwrap_or(e.info.start_time),
                    e.info.id.clone(),
                )
            })
            .collect();
        if finished.len() <= MAX_RECENT_TASKS {
            return;
        }
        finished.sort();
        let excess = finished.len() - MAX_RECENT_TASKS;
        for (_, id) in finished.into_iter().take(excess) {
            tasks.remove(&id);
        }
    }
}

/// Owns one task's child until its group is gone, then finalizes it.
struct Monitor {
    inner: Weak<TaskLedger>,
    id: String,
    group: ProcessGroup,
    capture: Arc<Capture>,
    timeout: Option<Duration>,
    settings: TaskSettings,
    /// The wake owed to the task's agent, dropped once the notification went (or will not).
    wake: Option<WakePromise>,
}

/// What a wake promise allows beyond a task's end for its notification to reach Pi.
const WAKE_DELIVERY: Duration = Duration::from_secs(15);

/// How long a shutdown waits for the monitors of ended tasks to write their final state.
const MONITORS_SETTLE: Duration = Duration::from_secs(2);

/// How long a monitor waits for the copier to hand over the last output once the task ended.
const COPIER_FINISH: Duration = Duration::from_secs(1);

impl Monitor {
    async fn run(
        self,
        mut child: Child,
        guard: GroupGuard,
        mut stop: watch::Receiver<Option<KillKind>>,
        finished: watch::Sender<bool>,
    ) {
        let started = Instant::now();
        let mut exit: Option<std::io::Result<ExitStatus>> = None;
        let mut kill_kind: Option<KillKind> = None;
        let mut stopping = GroupStop::default();
        let mut stop_open = true;
        let mut last_size = 0;
        let mut copier = self.capture.state();
        // It may have ended before this monitor first ran: look once anyway.
        copier.mark_changed();
        let mut copier_open = true;
        let mut tick = tokio::time::interval(self.settings.poll_interval);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                status = child.wait(), if exit.is_none() => exit = Some(status),
                changed = stop.changed(), if stop_open => match changed {
                    Ok(()) => {
                        if let Some(kind) = *stop.borrow_and_update() {
                            self.begin_stop(kind, &mut kill_kind, &mut stopping);
                        }
                    }
                    Err(_) => stop_open = false,
                },
                changed = copier.changed(), if copier_open => {
                    if changed.is_err() || *copier.borrow_and_update() == CopyState::Ended {
                        copier_open = false;
                    }
                }
                _ = stopping.finished() => {}
                _ = tick.tick() => {}
            }
            if exit.is_some() && !self.group.alive() {
                break;
            }
            let Some(inner) = self.inner.upgrade() else {
                // The service is gone: nobody can stop this task any more. The guard kills it.
                return;
            };
            // Past the cap the copier has stopped writing; the task is stopped at once.
            if self.capture.cap_reached() && kill_kind.is_none() {
                self.begin_stop(KillKind::OutputCap, &mut kill_kind, &mut stopping);
            }
            if let Some(limit) = self.timeout
                && started.elapsed() >= limit
                && kill_kind.is_none()
            {
                self.capture.append_notice(&format!(
                    "\n[background task timeout: Timed out after {}s]\n",
                    limit.as_secs()
                ));
                self.begin_stop(KillKind::Timeout, &mut kill_kind, &mut stopping);
            }
            let size = self.capture.written();
            if size != last_size {
                last_size = size;
                let line = self.capture.last_lines(1).pop();
                inner.update(&self.id, |info| {
                    info.bytes_written = size;
                    info.last_line = line;
                });
            }
        }
        guard.disarm();
        // The group is empty: what it wrote is in the pipe. A process that left the group may
        // still hold the pipe open; the copier takes what is there and stops.
        self.capture.finish(COPIER_FINISH).await;
        // The last output (read after the task ended) may have been what went past the cap.
        if kill_kind.is_none() && self.capture.cap_reached() {
            kill_kind = Some(KillKind::OutputCap);
        }
        self.finalize(exit, kill_kind, finished).await;
    }

    /// Records why the task is stopped and starts the stop (SIGTERM, SIGKILL after the grace);
    /// the first reason stands.
    fn begin_stop(&self, kind: KillKind, current: &mut Option<KillKind>, stopping: &mut GroupStop) {
        if current.is_some() {
            return;
        }
        *current = Some(kind);
        if let Some(inner) = self.inner.upgrade() {
            inner.update(&self.id, |info| info.kill_kind = Some(kind));
        }
        stopping.start(self.group, self.settings.kill_grace, Reach::Group);
    }

    async fn finalize(
        mut self,
        exit: Option<std::io::Result<ExitStatus>>,
        kill_kind: Option<KillKind>,
        finished: watch::Sender<bool>,
    ) {
        let Some(inner) = self.inner.upgrade() else {
            return;
        };
        let cap = self.settings.max_output_bytes;
        if kill_kind == Some(KillKind::OutputCap) {
            // The copier wrote exactly up to the cap and nothing after it.
            self.capture.append_notice(&format!(
                "\n\n[background task error: Output exceeded cap of {}; terminating task]\n",
                format_size(cap)
            ));
        }
        let outcome = classify(exit.as_ref(), kill_kind, self.timeout, cap);
        let size = self.capture.written();
        let last_lines = self.capture.last_lines(NOTICE_LINES);
        let line = last_lines.last().cloned();
        let mut info = {
            let tasks = lock(&inner.tasks);
            match tasks.get(&self.id) {
                Some(entry) => entry.info.clone(),
                None => return,
            }
        };
        info.status = outcome.status;
        info.exit_code = outcome.exit_code;
        info.signal = outcome.signal;
        info.error = outcome.error;
        info.kill_kind = kill_kind;
        info.end_time = Some(now_ms());
        info.bytes_written = size;
        info.last_line = line;
        // Durable first: the notification promises the state is on disk.
        if let Err(err) = inner.try_write_snapshot(&info).await {
            tracing::warn!(
                "terminal metadata of {} not written: {err:#}; retrying",
                info.id
            );
            inner.write_snapshot(&info).await;
        }
        let info_now = info.clone();
        inner.update(&self.id, |current| *current = info_now);
        finished.send_replace(true);

        let quiet =
            inner.shutting_down.load(Ordering::SeqCst) || kill_kind == Some(KillKind::Shutdown);
        if info.notify_on_completion && !quiet {
            let sink = lock(&inner.sink).clone();
            match sink {
                Some(sink) => match sink.deliver(notify::build_notice(&info, &last_lines)).await {
                    Ok(()) => {
                        info.notified = true;
                        inner.update(&self.id, |current| current.notified = true);
                        inner.write_snapshot(&info).await;
                    }
                    Err(err) => tracing::warn!(
                        "Failed to send background task notification for {}: {err:#}",
                        info.id
                    ),
                },
                None => tracing::warn!(
                    "no bridge attached; background task notification for {} not sent",
                    info.id
                ),
            }
        }
        // Delivered (Pi queued the follow-up before answering) or never to be: the run may end.
        drop(self.wake.take());
        inner.prune();
        inner.changed();
    }
}

struct Outcome {
    status: TaskStatus,
    exit_code: Option<i32>,
    signal: Option<String>,
    error: Option<String>,
}

fn classify(
    exit: Option<&std::io::Result<ExitStatus>>,
    kill_kind: Option<KillKind>,
    timeout: Option<Duration>,
    cap: u64,
) -> Outcome {
    let (exit_code, signal) = match exit {
        Some(Ok(status)) => (
            status.code(),
            status
                .signal()
                .and_then(|sig| Signal::try_from(sig).ok())
                .map(|sig| sig.as_str().to_string()),
        ),
        _ => (None, None),
    };
    let (status, error) = match kill_kind {
        Some(KillKind::User) => (TaskStatus::Stopped, Some("Stopped by the user".to_string())),
        Some(KillKind::Shutdown) => (
            TaskStatus::Stopped,
            Some("Killed during workbench shutdown".to_string()),
        ),
        Some(KillKind::Timeout) => (
            TaskStatus::Failed,
            Some(format!(
                "Timed out after {}s",
                timeout.map_or(0, |limit| limit.as_secs())
            )),
        ),
        Some(KillKind::OutputCap) => (
            TaskStatus::Failed,
            Some(format!(
                "Output exceeded cap of {}; terminating task",
                format_size(cap)
            )),
        ),
        None => match (exit, exit_code, &signal) {
            (Some(Err(err)), _, _) => (
                TaskStatus::Failed,
                Some(format!("Could not wait for the process: {err}")),
            ),
            (_, Some(0), _) => (TaskStatus::Done, None),
            (_, Some(code), _) => (TaskStatus::Failed, Some(format!("Exited with code {code}"))),
            (_, None, Some(sig)) => (TaskStatus::Failed, Some(format!("Killed by signal {sig}"))),
            (_, None, None) => (
                TaskStatus::Failed,
                Some("Exited without a status".to_string()),
            ),
        },
    };
    Outcome {
        status,
        exit_code,
        signal,
        error,
    }
}

/// The output lines a completion notification quotes.
const NOTICE_LINES: usize = 3;

/// Starts the task's shell with its output going into a [`Capture`] of a new `output_path`.
fn spawn_shell(
    settings: &TaskSettings,
    command: &str,
    id: &str,
    output_path: &Path,
) -> anyhow::Result<(Child, ProcessGroup, Arc<Capture>)> {
    let file = create_new_file(output_path)
        .with_context(|| format!("create {}", output_path.display()))?;
    let (capture, output) = Capture::start(file, settings.max_output_bytes)?;
    let errors = output.try_clone().context("duplicate the output pipe")?;
    let mut cmd = Command::new(&settings.shell);
    cmd.arg("-c")
        .arg(command)
        .current_dir(&settings.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(output))
        .stderr(Stdio::from(errors))
        .env("UNIPI_BG_TASK_ID", id)
        // A task's own Pi must not speak for the workbench's Pi on the bridge.
        .env_remove(crate::bridge::env::SOCKET)
        .env_remove(crate::bridge::env::TOKEN)
        .env_remove(crate::bridge::env::AGENT)
        .kill_on_drop(false);
    let (child, group) = cmd
        .spawn_grouped()
        .with_context(|| format!("spawn {} -c", settings.shell.display()))?;
    // `cmd` goes with the parent's copies of the pipe's write end: only the task holds it now.
    drop(cmd);
    Ok((child, group, capture))
}

/// Removes this session's run directory if no task ever ran in it (it holds only its owner
/// file): a run without tasks leaves nothing behind. One with task records keeps them (the next
/// start settles it, [`super::orphans`]).
fn remove_if_unused(run_dir: &Path) {
    let only_owner = std::fs::read_dir(run_dir).is_ok_and(|entries| {
        entries
            .flatten()
            .all(|entry| entry.file_name() == crate::sys::private_dir::OWNER_FILE)
    });
    if !only_owner {
        return;
    }
    let removed = std::fs::remove_file(run_dir.join(crate::sys::private_dir::OWNER_FILE))
        .and_then(|()| std::fs::remove_dir(run_dir));
    match removed {
        Ok(()) => tracing::debug!("removed the unused {}", run_dir.display()),
        Err(err) => tracing::warn!("cannot remove the unused {}: {err}", run_dir.display()),
    }
}

/// `tasks` in the user's private runtime directory. Without one (no private directory could be
/// made) the usual place is named anyway, and [`TaskService::new`] says why it cannot be used.
fn default_root_dir() -> PathBuf {
    match crate::sys::private_dir::runtime_root() {
        Ok(root) => root.path.join("tasks"),
        Err(err) => {
            tracing::warn!("{err}");
            std::env::temp_dir()
                .join(format!("unipi-{}", nix::unistd::geteuid()))
                .join("tasks")
        }
    }
}

fn shell_from(path: Option<String>, name: Option<String>, user: Option<String>) -> PathBuf {
    path.or(name)
        .or(user)
        .map_or_else(|| PathBuf::from("/bin/sh"), PathBuf::from)
}

fn sanitize_segment(text: &str) -> String {
    let mut out = String::new();
    for ch in text.chars() {
        if ch.is_ascii_alphanumeric() || matches!(ch, '_' | '.' | '-') {
            out.push(ch);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let trimmed = out.trim_matches('-');
    if trimmed.is_empty() {
        "session".to_string()
    } else {
        trimmed.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_choice_order() {
        let s = |v: &str| Some(v.to_string());
        assert_eq!(
            shell_from(s("/x/bash"), s("zsh"), s("/bin/fish")),
            PathBuf::from("/x/bash")
        );
        assert_eq!(
            shell_from(None, s("zsh"), s("/bin/fish")),
            PathBuf::from("zsh")
        );
        assert_eq!(
            shell_from(None, None, s("/bin/fish")),
            PathBuf::from("/bin/fish")
        );
        assert_eq!(shell_from(None, None, None), PathBuf::from("/bin/sh"));
    }

    #[test]
    fn segments_are_sanitized() {
        assert_eq!(sanitize_segment("a b/c"), "a-b-c");
        assert_eq!(sanitize_segment("///"), "session");
        assert_eq!(sanitize_segment("ok_1.2"), "ok_1.2");
    }

    #[test]
    fn classification_table() {
        let exit = |code: i32| Some(Ok(ExitStatus::from_raw(code << 8)));
        let signalled = Some(Ok(ExitStatus::from_raw(9)));
        let t = Some(Duration::from_secs(5));
        type Case = (
            Option<std::io::Result<ExitStatus>>,
            Option<KillKind>,
            TaskStatus,
            Option<&'static str>,
        );
        let cases: Vec<Case> = vec![
            (exit(0), None, TaskStatus::Done, None),
            (
                exit(3),
                None,
                TaskStatus::Failed,
                Some("Exited with code 3"),
            ),
            (
                signalled,
                None,
                TaskStatus::Failed,
                Some("Killed by signal SIGKILL"),
            ),
            (
                exit(143),
                Some(KillKind::User),
                TaskStatus::Stopped,
                Some("Stopped by the user"),
            ),
            (
                exit(0),
                Some(KillKind::Timeout),
                TaskStatus::Failed,
                Some("Timed out after 5s"),
            ),
            (
                exit(1),
                Some(KillKind::OutputCap),
                TaskStatus::Failed,
                Some("Output exceeded cap of 1.0KB; terminating task"),
            ),
            (
                exit(1),
                Some(KillKind::Shutdown),
                TaskStatus::Stopped,
                Some("Killed during workbench shutdown"),
            ),
        ];
        for (exit, kind, status, error) in cases {
            let outcome = classify(exit.as_ref(), kind, t, 1024);
            assert_eq!(outcome.status, status, "{kind:?}");
            assert_eq!(outcome.error.as_deref(), error, "{kind:?}");
        }
    }
}

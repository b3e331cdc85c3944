//! The child's life after the launch: start `unipi-tui __delegate-child` in its own process group,
//! register its stop control and dock row, follow its progress lines to its exit (a stop gets
//! [`STOP_GRACE`] before the groups are killed), then adjudicate, update the row and deliver the
//! `delegate-result-notification`.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::sync::watch;

use super::adjudicate::record_outcome;
use super::artifacts::{CHILD_LOG_FILE, ErrorRecord, ManifestState, Outcome, TaskDir};
use super::child::{CHILD_SUBCOMMAND, PROGRESS_LINE, STARTED_LINE};
use super::errors::{DelegateError, DelegateErrorCode};
use super::host::DelegateSettings;
use super::report::{Launch, NOTIFICATION_TYPE, notification};
use super::service::{Control, DelegateService, TaskEntry, blocking};
use crate::bridge::AgentNotice;
use crate::helpers::board::{BoardRow, RowKind};
use crate::helpers::events::Usage;
use crate::helpers::runner::RunStatus;
use crate::sys::{GroupGuard, GroupStop, ProcessGroup, Reach, SpawnGrouped as _, lock};

/// How long a stopped child has to record its cancellation before its groups are killed: the
/// runner's own grace and slack, plus time to write.
pub const STOP_GRACE: Duration = Duration::from_secs(8);

impl DelegateService {
    /// Starts the child and its supervisor.
    pub(super) fn spawn_child(
        self: &Arc<Self>,
        launch: Launch,
        directive: String,
    ) -> Result<(), DelegateError> {
        let dir = launch.dir.clone();
        let spawned = spawn_child_process(&self.settings, &dir);
        let (mut child, group) = match spawned {
            Ok(spawned) => spawned,
            Err(err) => {
                let error = ErrorRecord {
                    code: DelegateErrorCode::ChildSpawnFailed.as_str().to_string(),
                    message: format!("{err:#}"),
                };
                let _ = dir.transition(ManifestState::Failed, Some(error), None);
                return Err(DelegateError::new(
                    DelegateErrorCode::ChildSpawnFailed,
                    format!("cannot start the delegate child: {err:#}"),
                )
                .with_artifacts(dir.dir.clone(), dir.preserved()));
            }
        };
        let pid = group.raw().unsigned_abs();
        if let Err(err) = dir.transition(ManifestState::Running, None, Some(pid)) {
            tracing::warn!("delegate {}: {err:#}", launch.manifest.task_id);
        }
        let (outcome_tx, outcome_rx) = watch::channel(None);
        let (stop_tx, stop_rx) = watch::channel(false);
        let control = Arc::new(Control {
            stop: stop_tx,
            outcome: outcome_rx.clone(),
            directive,
        });
        let task_id = launch.manifest.task_id.clone();
        lock(&self.tasks).insert(
            task_id.clone(),
            TaskEntry {
                dir: dir.clone(),
                outcome: outcome_rx,
                control: control.clone(),
            },
        );
        if let Some(board) = lock(&self.board).clone() {
            let mut row = BoardRow::new(&task_id, RowKind::Delegate, "delegate", &launch.name);
            row.model = Some(launch.manifest.route.qualified());
            row.status = RunStatus::Running;
            row.last_activity = "started".to_string();
            board.upsert(row);
            board.attach_control(&task_id, control);
        }
        let stdout = child.stdout.take();
        let inner = self.clone();
        tokio::spawn(async move {
            let groups = DelegateGroups {
                child: GroupGuard::new(group, Reach::Group),
                pi: GroupGuard::unarmed(Reach::Group),
            };
            let stopped = inner
                .supervise(&launch, child, stdout, stop_rx, &groups)
                .await;
            groups.disarm();
            inner.finish(launch, stopped, outcome_tx).await;
        });
        Ok(())
    }

    /// Follows the child to its exit; returns whether the parent stopped it.
    async fn supervise(
        &self,
        launch: &Launch,
        mut child: tokio::process::Child,
        stdout: Option<tokio::process::ChildStdout>,
        mut stop: watch::Receiver<bool>,
        groups: &DelegateGroups,
    ) -> bool {
        let task_id = &launch.manifest.task_id;
        let mut lines = stdout.map(|out| BufReader::new(out).lines());
        let mut stopped = false;
        let mut stop_open = true;
        let mut stopping = GroupStop::default();
        loop {
            tokio::select! {
                status = child.wait() => {
                    if let Err(err) = status {
                        tracing::warn!("delegate {task_id}: waiting for the child: {err}");
                    }
                    break;
                }
                line = next_line(&mut lines) => match line {
                    Some(line) => self.progress(task_id, &line, groups),
                    None => lines = None,
                },
                changed = stop.changed(), if !stopped && stop_open => match changed {
                    Ok(()) if *stop.borrow() => {
                        stopped = true;
                        if let Some(group) = groups.child.group() {
                            stopping.start(group, STOP_GRACE, Reach::Group);
                        }
                    }
                    Ok(()) => {}
                    // Nobody can stop it any more; it runs to its own deadline.
                    Err(_) => stop_open = false,
                },
                // Past the grace the child's group is killed; its exit above ends the loop.
                _ = stopping.finished() => {}
            }
        }
        // The child is reaped; a Pi it failed to stop goes too.
        groups.pi.kill_now();
        stopped
    }

    fn progress(&self, task_id: &str, line: &str, groups: &DelegateGroups) {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            return;
        };
        match value["type"].as_str() {
            Some(STARTED_LINE) => {
                if let Some(group) = value["piPid"]
                    .as_u64()
                    .and_then(|pid| u32::try_from(pid).ok())
                    .and_then(ProcessGroup::of_leader)
                {
                    groups.pi.arm(group);
                }
            }
            Some(PROGRESS_LINE) => {
                let Some(board) = lock(&self.board).clone() else {
                    return;
                };
                let usage: Usage =
                    serde_json::from_value(value["usage"].clone()).unwrap_or_default();
                board.update(task_id, |row| {
                    row.turns = u32::try_from(value["turns"].as_u64().unwrap_or(0)).unwrap_or(0);
                    row.tool_uses =
                        usize::try_from(value["toolUses"].as_u64().unwrap_or(0)).unwrap_or(0);
                    row.usage = usage;
                    if let Some(tool) = value["lastTool"].as_str() {
                        row.last_activity = tool.to_string();
                    }
                });
            }
            _ => {}
        }
    }

    /// Adjudicates the ended child, records the outcome and delivers the notification.
    async fn finish(
        &self,
        launch: Launch,
        stopped: bool,
        outcome_tx: watch::Sender<Option<Outcome>>,
    ) {
        let task_id = launch.manifest.task_id.clone();
        let decided = {
            let (dir, manifest) = (launch.dir.clone(), launch.manifest.clone());
            blocking(move || Ok(record_outcome(&dir, &manifest, stopped))).await
        };
        let (outcome, verified) = match decided {
            Ok(decided) => decided,
            Err(err) => {
                tracing::warn!("delegate {task_id}: {}", err.describe());
                return;
            }
        };
        if let Some(board) = lock(&self.board).clone() {
            board.update(&task_id, |row| {
                row.status = match outcome.status {
                    ManifestState::Committed => RunStatus::Completed,
                    ManifestState::Cancelled => RunStatus::Stopped,
                    _ => RunStatus::Failed,
                };
                row.duration = Some(launch.started.elapsed());
                row.turns = outcome.turns;
                row.tool_uses = outcome.tool_calls;
                row.error = outcome
                    .error
                    .as_ref()
                    .map(|e| format!("{}: {}", e.code, e.message));
            });
            board.detach_control(&task_id);
        }
        outcome_tx.send_replace(Some(outcome.clone()));
        if !launch.notify {
            return;
        }
        let host = lock(&self.host).clone();
        let Some(host) = host else {
            tracing::info!("delegate {task_id} ended with no host to notify");
            return;
        };
        let cap = launch.manifest.limits.inline_answer_bytes;
        let (content, details) = notification(&launch, &outcome, verified.as_ref(), cap);
        let notice = AgentNotice {
            agent: launch.agent.clone(),
            id: task_id.clone(),
            custom_type: NOTIFICATION_TYPE.to_owned(),
            content,
            details,
            trigger_turn: launch.trigger,
        };
        if let Err(err) = host.deliver(notice).await {
            tracing::warn!("delegate {task_id}: notification not delivered: {err:#}");
        }
    }
}

fn spawn_child_process(
    settings: &DelegateSettings,
    dir: &TaskDir,
) -> anyhow::Result<(tokio::process::Child, ProcessGroup)> {
    let log = std::fs::File::create(dir.file(CHILD_LOG_FILE))?;
    let mut command = tokio::process::Command::new(&settings.child_program);
    command
        .arg(CHILD_SUBCOMMAND)
        .arg(&dir.dir)
        .current_dir(&settings.workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .kill_on_drop(false)
        .envs(settings.env.iter().map(|(k, v)| (k, v)));
    for name in [
        crate::bridge::env::SOCKET,
        crate::bridge::env::TOKEN,
        crate::bridge::env::AGENT,
    ] {
        command.env_remove(name);
    }
    Ok(command.spawn_grouped()?)
}

/// The process groups of one delegate: the child's, and its Pi's once the child reports it.
/// Dropped armed (the runtime is going away), each guard kills its group, so nothing outlives
/// the workbench.
struct DelegateGroups {
    child: GroupGuard,
    pi: GroupGuard,
}

impl DelegateGroups {
    /// The child is reaped: its group id may be reused, so neither is signalled again.
    fn disarm(&self) {
        self.child.disarm();
        self.pi.disarm();
    }
}

async fn next_line(
    lines: &mut Option<tokio::io::Lines<BufReader<tokio::process::ChildStdout>>>,
) -> Option<String> {
    match lines {
        Some(lines) => lines.next_line().await.ok().flatten(),
        None => std::future::pending().await,
    }
}

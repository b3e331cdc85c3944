//! The delegate service: the state behind the module (sessions, tasks, the host and the board),
//! the stop control each running child registers, and `bg_result`. The launch is in
//! [`super::launch`], the child's supervision in [`super::supervise`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::watch;

use super::args::{ResultArgs, parse_result_args};
use super::artifacts::{OUTCOME_FILE, Outcome, TaskDir};
use super::errors::{DelegateError, DelegateErrorCode};
use super::host::{DelegateHost, DelegateSettings, ParentSession};
use super::report::{running_view, terminal_view};
use crate::bridge::{AgentId, CancelToken, ToolOutput};
use crate::helpers::board::{HelperBoard, RunControl, TranscriptEntry};
use crate::sys::lock;

/// The module's shared state: the settings, the host and board once attached, what is known of
/// each agent's session, and every task this process launched.
pub(super) struct DelegateService {
    pub(super) settings: DelegateSettings,
    pub(super) host: Mutex<Option<Arc<dyn DelegateHost>>>,
    pub(super) board: Mutex<Option<HelperBoard>>,
    pub(super) sessions: Mutex<HashMap<AgentId, ParentSession>>,
    pub(super) tasks: Mutex<HashMap<String, TaskEntry>>,
}

pub(super) struct TaskEntry {
    pub(super) dir: TaskDir,
    pub(super) outcome: watch::Receiver<Option<Outcome>>,
    pub(super) control: Arc<Control>,
}

/// The stop control of one running child (also the dock's [`RunControl`]).
pub(super) struct Control {
    pub(super) stop: watch::Sender<bool>,
    pub(super) outcome: watch::Receiver<Option<Outcome>>,
    pub(super) directive: String,
}

impl RunControl for Control {
    fn steer(&self, _message: String) -> Result<(), crate::bridge::Refusal> {
        Err("delegates cannot be steered".into())
    }

    fn stop(&self) {
        self.stop.send_replace(true);
    }

    fn transcript(&self) -> Vec<TranscriptEntry> {
        let mut entries = vec![TranscriptEntry::User(self.directive.clone())];
        if let Some(outcome) = self.outcome.borrow().as_ref() {
            entries.push(TranscriptEntry::Note(format!(
                "ended {}",
                outcome.status.as_str()
            )));
        }
        entries
    }
}

impl DelegateService {
    pub(super) async fn result(
        &self,
        args: &Value,
        cancel: &CancelToken,
    ) -> Result<ToolOutput, DelegateError> {
        let ResultArgs {
            task_id,
            delivery,
            wait,
        } = parse_result_args(args)?;
        let task_id = task_id.as_str();
        let known = lock(&self.tasks)
            .get(task_id)
            .map(|task| (task.dir.clone(), task.outcome.clone()));
        let dir = match known {
            Some((dir, mut outcome)) => {
                if wait {
                    tokio::select! {
                        _ = outcome.wait_for(Option::is_some) => {}
                        () = cancel.cancelled() => {}
                    }
                }
                if outcome.borrow().is_none() {
                    return Ok(running_view(task_id, &dir));
                }
                dir
            }
            None => self.find_on_disk(task_id)?,
        };
        blocking(move || terminal_view(&dir, delivery)).await
    }

    /// A task of an earlier run of this workspace, by its directory.
    fn find_on_disk(&self, task_id: &str) -> Result<TaskDir, DelegateError> {
        let unknown = |why: &str| {
            DelegateError::new(
                DelegateErrorCode::TaskUnknown,
                format!("bg_result does not know task {task_id}: {why}"),
            )
        };
        let well_formed = task_id.len() == 33
            && task_id.starts_with('d')
            && task_id[1..].chars().all(|c| c.is_ascii_hexdigit());
        if !well_formed {
            return Err(unknown("not a delegate task id"));
        }
        let root = self.settings.workspace.join(".unipi").join("delegate");
        let runs = std::fs::read_dir(&root).map_err(|_| unknown("no delegate artifacts here"))?;
        runs.flatten()
            .map(|run| TaskDir::at(run.path().join(task_id)))
            .find(|dir| dir.file(OUTCOME_FILE).exists())
            .ok_or_else(|| unknown("no finished task with that id in this workspace"))
    }
}

/// Runs file work off the async workers (session files and answers may be megabytes).
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, DelegateError> + Send + 'static,
) -> Result<T, DelegateError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|err| {
            Err(DelegateError::new(
                DelegateErrorCode::ArtifactError,
                format!("the delegate's file work failed: {err}"),
            ))
        })
}

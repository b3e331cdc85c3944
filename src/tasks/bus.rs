//! What the background tasks put on the bus, under Unipi's names: each task's start and end
//! (the end alerts the user unless the agent will hear of it anyway), the counts of running
//! tasks (which tell the notifications whether the agent's settling is its end), and every task
//! when a Pi connects. Each carries the task as Unipi's registry showed it ([`unipi_task`]):
//! the bridge extension keeps Unipi's shared task registry for other Pi extensions from them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::model::{TaskInfo, TaskStatus};
use crate::bridge::{AlertPriority, Alerting, BusMessage};

/// A task as Unipi's registry snapshot (`BgTaskSnapshot`) had it: our task's JSON with Unipi's
/// status words (`running`, `completed`, `failed`, `killed`), without what only the workbench
/// needs (the group leader's start time).
pub(crate) fn unipi_task(task: &TaskInfo) -> Value {
    let mut data = serde_json::to_value(task).unwrap_or(Value::Null);
    if let Value::Object(fields) = &mut data {
        fields.remove("leaderStart");
        fields.insert("status".into(), unipi_status(task.status.as_str()).into());
    }
    data
}

/// Unipi's word for one of our statuses (`done` was `completed`, `stopped` was `killed`).
fn unipi_status(status: &str) -> &str {
    match status {
        s if s == TaskStatus::Done.as_str() => "completed",
        s if s == TaskStatus::Stopped.as_str() => "killed",
        other => other,
    }
}

/// A background task started: `unipi:bg:task:started {id, name, command, task}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct BgTaskStarted {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) command: String,
    /// [`unipi_task`].
    pub(crate) task: Value,
}

/// Every task the workbench holds, sent when a Pi connects (a fresh bridge extension, after
/// Pi's `/reload` too, starts with an empty registry): `unipi:bg:tasks:snapshot {tasks}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct BgTasksSnapshot {
    /// Each as [`unipi_task`].
    pub(crate) tasks: Vec<Value>,
}

impl BusMessage for BgTaskStarted {
    const NAME: &'static str = "unipi:bg:task:started";
}

impl BusMessage for BgTasksSnapshot {
    const NAME: &'static str = "unipi:bg:tasks:snapshot";
}

/// A background task ended: `unipi:bg:task:finished {id, name, status, exitCode, wakesAgent}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BgTaskFinished {
    pub(crate) id: String,
    pub(crate) name: String,
    /// `done`, `failed` or `stopped`.
    pub(crate) status: String,
    pub(crate) exit_code: Option<i32>,
    /// Its end starts a turn of the agent.
    pub(crate) wakes_agent: bool,
    /// [`unipi_task`] at its end.
    #[serde(default)]
    pub(crate) task: Value,
}

/// The background tasks' counts changed: `unipi:bg:tasks:changed {running, waking}` (`waking`:
/// running tasks whose end will wake the agent).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct BgTasksChanged {
    pub(crate) running: usize,
    pub(crate) waking: usize,
}

impl BusMessage for BgTaskFinished {
    const NAME: &'static str = "unipi:bg:task:finished";

    /// The status in Unipi's words, as in the task beside it.
    fn pi_event(&self) -> Option<Value> {
        let mut data = serde_json::to_value(self).ok()?;
        data["status"] = unipi_status(&self.status).into();
        Some(data)
    }

    fn alerting(&self) -> Option<Alerting> {
        // A task that wakes the agent is reported by the agent's turn that follows.
        if self.wakes_agent {
            return None;
        }
        let exit = match self.exit_code {
            Some(code) => format!(" (exit {code})"),
            None => String::new(),
        };
        let priority = if self.status == "failed" {
            AlertPriority::Normal
        } else {
            AlertPriority::Low
        };
        Some(Alerting::alert(
            "bg_task_finished",
            "Background Task Done",
            format!("{}: {}{exit}", self.name, self.status),
            priority,
        ))
    }
}

impl BusMessage for BgTasksChanged {
    const NAME: &'static str = "unipi:bg:tasks:changed";

    fn alerting(&self) -> Option<Alerting> {
        Some(Alerting::PendingWakes(self.waking))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unipi's statuses were `running`, `completed`, `failed`, `killed`.
    #[test]
    fn a_task_reads_in_unipi_status_words() {
        for (ours, unipi) in [
            (TaskStatus::Running, "running"),
            (TaskStatus::Done, "completed"),
            (TaskStatus::Failed, "failed"),
            (TaskStatus::Stopped, "killed"),
        ] {
            let task = TaskInfo {
                id: "bg-1".into(),
                status: ours,
                leader_start: Some(7),
                ..TaskInfo::default()
            };
            let data = unipi_task(&task);
            assert_eq!(data["status"], unipi, "{ours:?}");
            assert!(data.get("leaderStart").is_none());
            let finished = BgTaskFinished {
                id: task.id.clone(),
                name: "n".into(),
                status: ours.as_str().into(),
                exit_code: None,
                wakes_agent: false,
                task: data,
            };
            assert_eq!(finished.pi_event().unwrap()["status"], unipi, "{ours:?}");
        }
    }
}

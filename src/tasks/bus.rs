//! What the background tasks put on the bus, under Unipi's names: each task's end (which alerts
//! the user unless the agent will hear of it anyway) and the counts of running tasks (which tell
//! the notifications whether the agent's settling is its end).

use serde::{Deserialize, Serialize};

use crate::bridge::{AlertPriority, Alerting, BusMessage};

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

//! What the helpers put on the bus, under Unipi's names: a background run's end (an alert the
//! user may turn on).

use serde::{Deserialize, Serialize};

use crate::bridge::{AlertPriority, Alerting, BusMessage};

/// A helper run in the background ended: `unipi:helper:finished {id, type, description, status,
/// error}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HelperFinished {
    pub(crate) id: String,
    /// The agent type (`explore`).
    #[serde(rename = "type")]
    pub(crate) agent_type: String,
    pub(crate) description: String,
    /// `completed`, `failed`, `stopped`, `timedOut`, …
    pub(crate) status: String,
    pub(crate) error: Option<String>,
}

impl BusMessage for HelperFinished {
    const NAME: &'static str = "unipi:helper:finished";

    fn alerting(&self) -> Option<Alerting> {
        Some(Alerting::alert(
            "helper_finished",
            "Helper Done",
            format!(
                "{} helper “{}” {}",
                self.agent_type, self.description, self.status
            ),
            AlertPriority::Low,
        ))
    }
}

//! What the workflow puts on the bus, under Unipi's names: each step's start and end, and the
//! ralph loop's start, iterations and end. A step's end and a loop's end alert the user, in the
//! original's words.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ralph::LoopStatus;
use crate::bridge::{AlertPriority, Alerting, BusMessage};

/// A step started: `unipi:workflow:start {command, level, args, tools, skill}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WorkflowStart {
    /// `unipi:plan`
    pub(crate) command: String,
    /// The tool level (`write-unipi`).
    pub(crate) level: String,
    pub(crate) args: String,
    /// The tools active during the step.
    pub(crate) tools: Vec<String>,
    /// Where the step's skill came from.
    pub(crate) skill: String,
}

/// A step ended: `unipi:workflow:end {command, level, success, durationMs}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WorkflowEnd {
    pub(crate) command: String,
    pub(crate) level: String,
    pub(crate) success: bool,
    pub(crate) duration_ms: u64,
}

/// A loop started: `unipi:ralph:loop:start {name, iteration, maxIterations}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RalphLoopStart {
    pub(crate) name: String,
    pub(crate) iteration: u32,
    pub(crate) max_iterations: u32,
}

/// One of the loop's iterations settled: `unipi:ralph:iteration:done {name, iteration, status}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RalphIterationDone {
    pub(crate) name: String,
    pub(crate) iteration: u32,
    pub(crate) status: LoopStatus,
}

/// A loop ended: `unipi:ralph:loop:end {name, iteration, maxIterations, status, reason}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RalphLoopEnd {
    pub(crate) name: String,
    pub(crate) iteration: u32,
    pub(crate) max_iterations: u32,
    pub(crate) status: LoopStatus,
    pub(crate) reason: Option<String>,
}

impl BusMessage for WorkflowStart {
    const NAME: &'static str = "unipi:workflow:start";
}

impl BusMessage for WorkflowEnd {
    const NAME: &'static str = "unipi:workflow:end";

    fn alerting(&self) -> Option<Alerting> {
        let outcome = if self.success { "completed" } else { "failed" };
        Some(Alerting::alert(
            "workflow_end",
            "Workflow Done",
            format!("Workflow {} {outcome}", self.command),
            AlertPriority::Low,
        ))
    }
}

impl BusMessage for RalphLoopStart {
    const NAME: &'static str = "unipi:ralph:loop:start";
}

impl BusMessage for RalphIterationDone {
    const NAME: &'static str = "unipi:ralph:iteration:done";
}

impl BusMessage for RalphLoopEnd {
    const NAME: &'static str = "unipi:ralph:loop:end";

    fn alerting(&self) -> Option<Alerting> {
        // The status in the words it has on the bus (`stopped`).
        let status = match serde_json::to_value(self.status) {
            Ok(Value::String(word)) => word,
            _ => "completed".to_owned(),
        };
        Some(Alerting::alert(
            "ralph_loop_end",
            "Ralph Complete",
            format!("Ralph loop \"{}\" {status}", self.name),
            AlertPriority::Low,
        ))
    }
}

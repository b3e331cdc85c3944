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

    /// Unipi's `{command, fullCommand, args}`, ours beside them.
    fn pi_event(&self) -> Option<Value> {
        let mut data = serde_json::to_value(self).ok()?;
        data["fullCommand"] = Value::String(full_command(&self.command, &self.args));
        Some(data)
    }
}

/// The command line as typed: `/unipi:plan the args`.
fn full_command(command: &str, args: &str) -> String {
    let args = args.trim();
    if args.is_empty() {
        format!("/{command}")
    } else {
        format!("/{command} {args}")
    }
}

impl BusMessage for WorkflowEnd {
    const NAME: &'static str = "unipi:workflow:end";

    /// Unipi's `{command, fullCommand, success, durationMs}` (the end does not repeat the
    /// arguments), ours beside them.
    fn pi_event(&self) -> Option<Value> {
        let mut data = serde_json::to_value(self).ok()?;
        data["fullCommand"] = Value::String(full_command(&self.command, ""));
        Some(data)
    }

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

    /// Unipi's start carried the loop's `status` (`active`).
    fn pi_event(&self) -> Option<Value> {
        let mut data = serde_json::to_value(self).ok()?;
        data["status"] = serde_json::to_value(LoopStatus::Active).ok()?;
        Some(data)
    }
}

impl BusMessage for RalphIterationDone {
    const NAME: &'static str = "unipi:ralph:iteration:done";

    /// Unipi's `{name, iteration, nextIteration}`, our `status` beside them.
    fn pi_event(&self) -> Option<Value> {
        let mut data = serde_json::to_value(self).ok()?;
        data["nextIteration"] = Value::from(self.iteration.saturating_add(1));
        Some(data)
    }
}

impl BusMessage for RalphLoopEnd {
    const NAME: &'static str = "unipi:ralph:loop:end";

    /// Unipi's statuses are `active`, `paused` and `completed`: a loop the user stopped ended
    /// `completed` with the reason `cancelled`.
    fn pi_event(&self) -> Option<Value> {
        let mut data = serde_json::to_value(self).ok()?;
        if self.status == LoopStatus::Stopped {
            data["status"] = serde_json::to_value(LoopStatus::Completed).ok()?;
            if self.reason.is_none() {
                data["reason"] = Value::from("cancelled");
            }
        }
        Some(data)
    }

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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// What other Pi extensions get on `pi.events`: Unipi's fields, ours beside them.
    #[test]
    fn pi_hears_the_workflow_and_ralph_events_in_unipi_fields() {
        let start = WorkflowStart {
            command: "unipi:plan".into(),
            level: "write-unipi".into(),
            args: " the parser ".into(),
            tools: vec!["read".into()],
            skill: "builtin".into(),
        };
        assert_eq!(
            start.pi_event().unwrap()["fullCommand"],
            "/unipi:plan the parser"
        );
        let end = WorkflowEnd {
            command: "unipi:plan".into(),
            level: "write-unipi".into(),
            success: true,
            duration_ms: 42,
        };
        let end = end.pi_event().unwrap();
        assert_eq!(
            (&end["fullCommand"], &end["success"], &end["durationMs"]),
            (&json!("/unipi:plan"), &json!(true), &json!(42))
        );
        let loop_start = RalphLoopStart {
            name: "fix".into(),
            iteration: 1,
            max_iterations: 0,
        };
        assert_eq!(
            loop_start.pi_event(),
            Some(json!({"name": "fix", "iteration": 1, "maxIterations": 0, "status": "active"}))
        );
        let done = RalphIterationDone {
            name: "fix".into(),
            iteration: 3,
            status: LoopStatus::Active,
        };
        assert_eq!(done.pi_event().unwrap()["nextIteration"], 4);
        let stopped = RalphLoopEnd {
            name: "fix".into(),
            iteration: 3,
            max_iterations: 5,
            status: LoopStatus::Stopped,
            reason: None,
        };
        let stopped = stopped.pi_event().unwrap();
        assert_eq!(
            (&stopped["status"], &stopped["reason"]),
            (&json!("completed"), &json!("cancelled"))
        );
        let completed = RalphLoopEnd {
            status: LoopStatus::Completed,
            reason: Some("max_reached".into()),
            ..serde_json::from_value(stopped).unwrap()
        };
        let completed = completed.pi_event().unwrap();
        assert_eq!(
            (&completed["status"], &completed["reason"]),
            (&json!("completed"), &json!("max_reached"))
        );
    }
}

//! Workflow scripts: a declared fan-out of helper steps (format in `args.rs`) run as one
//! `spawn_helper` call.
//!
//! Everything that can be refused is refused before the first step starts: every step's type,
//! the depth, every prompt, and the budgets — the whole script must fit in what is left of the
//! session's spawn budget and in `maxSubagentSpawnsPerRun`, so a script never dies half-way for
//! want of budget it could have been told about up front. Steps then start as soon as their
//! `after` steps have completed, at most `maxParallel` at once and never beyond the concurrency
//! cap (a step waits for a free slot rather than failing). A failed step skips the steps that
//! depend on it; independent steps go on. Steps are fan-out children: no boundary instructions.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::task::JoinSet;

use super::args::{WorkflowScript, fill_template};
use super::budget::Budget;
use super::names::NOTIFICATION_TYPE;
use super::preflight::{Refusal, preflight};
use super::results::{HelperResult, escape_xml, refusal_output, truncate_output, usage_json};
use super::runs::Caller;
use super::service::{HelperService, Launch, SessionStart, Started};
use crate::bridge::AgentNotice;
use crate::bridge::{CancelHandle, CancelToken, Card, CardTint, ToolCall, ToolOutput};
use crate::sys::now_ms;

/// How often a step waiting for a concurrency slot looks again.
const SLOT_RETRY: Duration = Duration::from_millis(200);

/// One step's end.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StepEnd {
    Done(Box<HelperResult>),
    /// Not run: a step it depends on did not complete.
    Skipped {
        because: String,
    },
    /// Could not start.
    Failed {
        reason: String,
    },
}

impl StepEnd {
    fn ok(&self) -> bool {
        matches!(self, Self::Done(result) if result.ok())
    }

    fn status(&self) -> &'static str {
        match self {
            Self::Done(result) if result.ok() => "completed",
            Self::Done(result) if result.accepted == Some(false) => "rejected",
            Self::Done(result) => result.status.as_str(),
            Self::Skipped { .. } => "skipped",
            Self::Failed { .. } => "failed",
        }
    }
}

/// The steps that may start now: not started, and every `after` step completed. Steps whose
/// `after` includes a step that ended without completing are returned separately (to skip).
pub(crate) fn ready_steps(
    script: &WorkflowScript,
    started: &HashSet<usize>,
    ends: &HashMap<String, StepEnd>,
) -> (Vec<usize>, Vec<(usize, String)>) {
    let mut ready = Vec::new();
    let mut skip = Vec::new();
    for (index, step) in script.steps.iter().enumerate() {
        if started.contains(&index) {
            continue;
        }
        if let Some(failed) = step
            .after
            .iter()
            .find(|dep| ends.get(*dep).is_some_and(|end| !end.ok()))
        {
            skip.push((index, failed.clone()));
        } else if step.after.iter().all(|dep| ends.contains_key(dep)) {
            ready.push(index);
        }
    }
    (ready, skip)
}

/// The combined answer of a script.
pub(crate) fn combined_text(script: &WorkflowScript, ends: &HashMap<String, StepEnd>) -> String {
    let completed = script
        .steps
        .iter()
        .filter(|step| ends.get(&step.id).is_some_and(StepEnd::ok))
        .count();
    let mut text = format!(
        "Workflow \"{}\": {completed} of {} steps completed.",
        script.description,
        script.steps.len()
    );
    for step in &script.steps {
        let end = ends.get(&step.id);
        text.push_str(&format!(
            "\n\n## {} ({} · {}) — {}\n",
            step.id,
            step.args.agent_type,
            step.args.description,
            end.map_or("not run", StepEnd::status)
        ));
        match end {
            Some(StepEnd::Done(result)) => text.push_str(&result.content()),
            Some(StepEnd::Skipped { because }) => {
                text.push_str(&format!("Skipped: step {because} did not complete."));
            }
            Some(StepEnd::Failed { reason }) => text.push_str(&format!("Failed: {reason}")),
            None => {}
        }
    }
    text
}

impl HelperService {
    pub(super) async fn workflow(
        self: Arc<Self>,
        caller: Caller,
        script: WorkflowScript,
        call: &ToolCall,
    ) -> ToolOutput {
        if let Err(refusal) = self.admit_workflow(&caller, &script) {
            return refusal_output(&refusal);
        }
        if script.background
            && let Some(refusal) = self.background_refusal(&caller.agent)
        {
            return refusal_output(&refusal);
        }
        if script.background {
            let id = format!("w{:x}-{}", now_ms(), std::process::id());
            let inner = self.clone();
            let parent = caller.agent.clone();
            let run_id = id.clone();
            let description = script.description.clone();
            let steps = script.steps.len();
            let card =
                Card::new(format!("● workflow · {description}"), CardTint::Info).footer(id.clone());
            let wake = self.promise_wake(&parent, &format!("workflow {id}"));
            tokio::spawn(async move {
                let (text, details) = inner
                    .clone()
                    .run_workflow(caller, &script, &CancelToken::never(), None)
                    .await;
                let status = details["status"].as_str().unwrap_or("error").to_string();
                let content = format!(
                    "<helper-result-notification>\n  <run-id>{run_id}</run-id>\n  \
                     <type>workflow</type>\n  <description>{}</description>\n  \
                     <status>{status}</status>\n  <result>{}</result>\n  <guidance>This result \
                     is final.</guidance>\n</helper-result-notification>",
                    escape_xml(&description),
                    escape_xml(&text)
                );
                inner
                    .notify(AgentNotice {
                        agent: parent,
                        id: run_id,
                        custom_type: NOTIFICATION_TYPE.to_string(),
                        content,
                        details,
                        trigger_turn: true,
                    })
                    .await;
                drop(wake);
            });
            return ToolOutput::text(format!(
                "Workflow {id} started in the background ({} steps). A \
                 <helper-result-notification> arrives when every step has ended.",
                steps
            ))
            .with_details(json!({"status": "running", "runId": id, "background": true}))
            .with_card(&card);
        }
        let (text, details) = self
            .run_workflow(caller, &script, &call.cancel, Some(call))
            .await;
        let ok = details["status"] == "completed";
        let card = Card::new(
            format!(
                "{} workflow · {} · {}",
                if ok { "✓" } else { "✗" },
                script.description,
                details["summary"].as_str().unwrap_or_default()
            ),
            if ok {
                CardTint::Success
            } else {
                CardTint::Error
            },
        );
        ToolOutput::text(text).with_details(card.attach(details))
    }

    /// The up-front checks: every step resolves and passes the depth and prompt checks, and
    /// the whole script fits the spawn budgets.
    fn admit_workflow(&self, caller: &Caller, script: &WorkflowScript) -> Result<(), Refusal> {
        let settings = self.settings();
        let mut admission = self.admission(&self.ledger(), caller);
        // Concurrency is waited for, not refused: only the budgets count here.
        admission.counters.running = 0;
        admission.counters.background = 0;
        for step in &script.steps {
            let mut args = step.args.clone();
            args.background = Some(false);
            preflight(&settings.catalog, &settings.config(), admission, &args).map_err(
                |refusal| {
                    Refusal::BadArguments(format!("workflowScript step {}: {refusal}", step.id))
                },
            )?;
        }
        let needed = script.steps.len();
        let session_left = admission
            .spawn_cap
            .saturating_sub(admission.counters.spawns) as usize;
        if needed > session_left {
            return Err(Refusal::FanoutBudget {
                needed,
                left: session_left,
                why: "maxSubagentSpawnsPerSession",
            });
        }
        let run_left = settings
            .config()
            .max_spawns_per_run
            .saturating_sub(admission.run_spawns.unwrap_or(0)) as usize;
        if needed > run_left {
            return Err(Refusal::FanoutBudget {
                needed,
                left: run_left,
                why: "maxSubagentSpawnsPerRun",
            });
        }
        Ok(())
    }

    /// Runs the steps to their ends; returns the combined text and details.
    async fn run_workflow(
        self: Arc<Self>,
        caller: Caller,
        script: &WorkflowScript,
        cancel: &CancelToken,
        call: Option<&ToolCall>,
    ) -> (String, Value) {
        let began = Instant::now();
        let mut ends: HashMap<String, StepEnd> = HashMap::new();
        let mut started: HashSet<usize> = HashSet::new();
        let mut running: JoinSet<(usize, StepEnd)> = JoinSet::new();
        // Each step's finish watches this token; the call's cancellation fires it.
        let (stop_all, step_cancel) = CancelHandle::pair();
        let mut cancelled = false;
        loop {
            let (ready, skip) = ready_steps(script, &started, &ends);
            for (index, because) in skip {
                started.insert(index);
                ends.insert(script.steps[index].id.clone(), StepEnd::Skipped { because });
            }
            let mut waiting_for_slot = false;
            if !cancelled {
                let mut steps = Steps {
                    script,
                    started: &mut started,
                    ends: &mut ends,
                    running: &mut running,
                };
                waiting_for_slot = self
                    .start_ready(&caller, &mut steps, ready, &step_cancel)
                    .await;
            }
            if running.is_empty() && !waiting_for_slot {
                let (ready, skip) = ready_steps(script, &started, &ends);
                if (ready.is_empty() || cancelled) && skip.is_empty() {
                    break;
                }
                continue;
            }
            let next = tokio::select! {
                joined = running.join_next(), if !running.is_empty() => joined,
                () = tokio::time::sleep(SLOT_RETRY), if waiting_for_slot || running.is_empty() => None,
                () = cancel.cancelled(), if !cancelled => {
                    cancelled = true;
                    stop_all.cancel();
                    None
                }
            };
            if let Some(joined) = next {
                record_end(script, &mut ends, joined, call);
            }
        }
        fail_unstarted(script, &mut ends, cancelled);
        workflow_report(script, &ends, began, cancelled)
    }

    /// Starts the ready steps while a parallel slot is free; true when one waits for a
    /// helper slot (retried after [`SLOT_RETRY`]).
    async fn start_ready(
        self: &Arc<Self>,
        caller: &Caller,
        steps: &mut Steps<'_>,
        ready: Vec<usize>,
        step_cancel: &CancelToken,
    ) -> bool {
        for index in ready {
            if steps.running.len() >= steps.script.max_parallel {
                break;
            }
            match self
                .clone()
                .start_step(caller, steps.script, index, steps.ends)
                .await
            {
                StepStart::Started(started_run) => {
                    steps.started.insert(index);
                    let inner = self.clone();
                    let token = step_cancel.clone();
                    steps.running.spawn(async move {
                        let result = inner.finish(*started_run, &token, None).await;
                        (index, StepEnd::Done(Box::new(result)))
                    });
                }
                StepStart::NoSlot => return true,
                StepStart::Failed(reason) => {
                    steps.started.insert(index);
                    let id = steps.script.steps[index].id.clone();
                    steps.ends.insert(id, StepEnd::Failed { reason });
                }
            }
        }
        false
    }

    async fn start_step(
        self: Arc<Self>,
        caller: &Caller,
        script: &WorkflowScript,
        index: usize,
        ends: &HashMap<String, StepEnd>,
    ) -> StepStart {
        let step = &script.steps[index];
        let prompt = fill_template(&step.args.prompt, |id| match ends.get(id) {
            Some(StepEnd::Done(result)) => Some(result.text.clone()),
            _ => None,
        });
        let mut args = step.args.clone();
        args.prompt = prompt;
        args.background = Some(false);
        let reserved = {
            let mut ledger = self.ledger();
            let admission = self.admission(&ledger, caller);
            let settings = self.settings();
            match preflight(&settings.catalog, &settings.config(), admission, &args) {
                Ok((agent, _)) => Ok((agent, self.take_permit(&mut ledger, caller, false))),
                Err(Refusal::TooManyRunning { .. }) => return StepStart::NoSlot,
                Err(refusal) => Err(refusal.to_string()),
            }
        };
        let (agent, permit) = match reserved {
            Ok(reserved) => reserved,
            Err(reason) => return StepStart::Failed(reason),
        };
        let launch = Launch {
            budget: Budget::of(&args, &agent),
            agent,
            prompt: args.prompt.clone(),
            description: args.description.clone(),
            background: false,
            caller: caller.clone(),
            fanout: true,
            session: SessionStart::Fresh,
            acceptance: args.acceptance.clone(),
            limit: args.max_output.unwrap_or_default(),
            permit,
        };
        match self.start(launch).await {
            Ok(started) => StepStart::Started(Box::new(started)),
            Err((reason, _)) => StepStart::Failed(reason),
        }
    }
}

/// The workflow's bookkeeping a step start touches.
struct Steps<'a> {
    script: &'a WorkflowScript,
    started: &'a mut HashSet<usize>,
    ends: &'a mut HashMap<String, StepEnd>,
    running: &'a mut JoinSet<(usize, StepEnd)>,
}

/// Records a step's end and tells the call how far the workflow is.
fn record_end(
    script: &WorkflowScript,
    ends: &mut HashMap<String, StepEnd>,
    joined: Result<(usize, StepEnd), tokio::task::JoinError>,
    call: Option<&ToolCall>,
) {
    match joined {
        Ok((index, end)) => {
            ends.insert(script.steps[index].id.clone(), end);
        }
        Err(err) => tracing::warn!("a workflow step task failed: {err}"),
    }
    if let Some(call) = call {
        call.updates.send(ToolOutput::text(format!(
            "workflow · {} of {} steps ended",
            ends.len(),
            script.steps.len()
        )));
    }
}

/// Gives every step that never ran its reason: cancelled, or never ready.
fn fail_unstarted(script: &WorkflowScript, ends: &mut HashMap<String, StepEnd>, cancelled: bool) {
    for (index, step) in script.steps.iter().enumerate() {
        if !ends.contains_key(&step.id) {
            ends.insert(
                step.id.clone(),
                StepEnd::Failed {
                    reason: if cancelled {
                        "cancelled before it started".to_string()
                    } else {
                        format!("step {} never became ready", index + 1)
                    },
                },
            );
        }
    }
}

/// The workflow's combined text (cut to its output limit) and details.
fn workflow_report(
    script: &WorkflowScript,
    ends: &HashMap<String, StepEnd>,
    began: Instant,
    cancelled: bool,
) -> (String, Value) {
    let limit = script.max_output.unwrap_or_default();
    let (text, truncated) = truncate_output(&combined_text(script, ends), limit.bytes, limit.lines);
    let completed = ends.values().filter(|end| end.ok()).count();
    let steps: Vec<Value> = script
        .steps
        .iter()
        .map(|step| {
            let end = &ends[&step.id];
            let mut row = json!({"id": step.id, "status": end.status()});
            if let StepEnd::Done(result) = end {
                row["runId"] = json!(result.run_id);
                row["usage"] = usage_json(&result.usage);
            }
            row
        })
        .collect();
    let details = json!({
        "status": if completed == script.steps.len() { "completed" } else { "error" },
        "summary": format!("{completed}/{} steps · {:.1}s", script.steps.len(), began.elapsed().as_secs_f64()),
        "steps": steps,
        "truncated": truncated,
        "cancelled": cancelled,
    });
    (text, details)
}

enum StepStart {
    Started(Box<Started>),
    NoSlot,
    Failed(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::helpers::args::{Request, parse_request};
    use crate::helpers::runner::RunStatus;

    fn script(value: Value) -> WorkflowScript {
        match parse_request(&json!({ "workflowScript": value })).unwrap() {
            Request::Workflow(script) => *script,
            other => panic!("{other:?}"),
        }
    }

    fn done(id: &str, ok: bool, text: &str) -> StepEnd {
        StepEnd::Done(Box::new(HelperResult {
            run_id: format!("run-{id}"),
            agent_type: "explore".into(),
            description: id.into(),
            status: if ok {
                RunStatus::Completed
            } else {
                RunStatus::Failed
            },
            text: text.into(),
            truncated: false,
            limit: Default::default(),
            tool_uses: vec![],
            turns: 1,
            usage: Default::default(),
            duration: Duration::from_secs(1),
            error: (!ok).then(|| "boom".to_string()),
            accepted: None,
        }))
    }

    #[test]
    fn steps_start_when_their_dependencies_completed() {
        let script = script(json!({"steps": [
            {"id": "a", "type": "explore", "prompt": "x"},
            {"id": "b", "type": "explore", "prompt": "y"},
            {"id": "c", "type": "explore", "prompt": "{{a}}", "after": ["a"]},
            {"id": "d", "type": "explore", "prompt": "{{b}}", "after": ["b", "c"]}
        ]}));
        let mut started = HashSet::new();
        let mut ends = HashMap::new();
        assert_eq!(ready_steps(&script, &started, &ends), (vec![0, 1], vec![]));
        started.extend([0, 1]);
        assert_eq!(ready_steps(&script, &started, &ends), (vec![], vec![]));
        ends.insert("a".to_string(), done("a", true, "A"));
        assert_eq!(ready_steps(&script, &started, &ends), (vec![2], vec![]));
        ends.insert("b".to_string(), done("b", false, ""));
        // d depends on b, which failed: skipped even though c has not ended.
        assert_eq!(
            ready_steps(&script, &started, &ends),
            (vec![2], vec![(3, "b".to_string())])
        );
    }

    #[test]
    fn combined_text_reports_every_step() {
        let script = script(json!({"steps": [
            {"id": "a", "type": "explore", "prompt": "x", "description": "look at a"},
            {"id": "b", "type": "explore", "prompt": "{{a}}", "after": ["a"]},
            {"id": "c", "type": "explore", "prompt": "z"}
        ]}));
        let ends = HashMap::from([
            ("a".to_string(), done("a", true, "A found")),
            (
                "b".to_string(),
                StepEnd::Skipped {
                    because: "x".into(),
                },
            ),
            (
                "c".to_string(),
                StepEnd::Failed {
                    reason: "no slot".into(),
                },
            ),
        ]);
        let text = combined_text(&script, &ends);
        assert!(
            text.starts_with("Workflow \"workflow of 3 steps\": 1 of 3 steps completed."),
            "{text}"
        );
        assert!(
            text.contains("## a (explore · look at a) — completed\nA found"),
            "{text}"
        );
        assert!(
            text.contains("## b (explore · {{a}}) — skipped\nSkipped: step x did not complete."),
            "{text}"
        );
        assert!(
            text.contains("## c (explore · z) — failed\nFailed: no slot"),
            "{text}"
        );
    }
}

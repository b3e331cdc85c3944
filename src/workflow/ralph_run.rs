//! The loop in the running workbench: `/unipi:ralph-start`, `-stop` and `-status`, and what
//! happens when one of the loop's iterations settles (the next one is sent, or the loop ends or
//! pauses). The decisions are `ralph.rs`'s; this file does the I/O and the host calls, and keeps
//! a stop that lands while a settled turn is being looked at from being undone.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::bus::{RalphIterationDone, RalphLoopEnd, RalphLoopStart};
use super::capability::Shared;
use super::docs::DOCS_DIR;
use super::ralph::{self, LoopStatus, Next, Running};
use crate::bridge::{CommandCall, CommandReply, DeliverAs, HostCall, NotifyLevel};
use crate::sys::{lock, now_ms};

/// Numbers the runs of loops, so a turn knows whether the loop it read is still the one running.
static RUNS: AtomicU64 = AtomicU64::new(1);

impl Shared {
    pub(super) async fn ralph_start(self: Arc<Self>, call: CommandCall) -> CommandReply {
        let link = match self.link() {
            Ok(link) => link.clone(),
            Err(reply) => return reply,
        };
        let (file, max) = match ralph::parse_args(&call.args) {
            Ok(parsed) => parsed,
            Err(refusal) => return refusal.into(),
        };
        let workspace = self.workspace.clone();
        let name = file.trim_end_matches(".md").to_owned();
        let plan_path = PathBuf::from(DOCS_DIR).join("plans").join(&file);
        let started =
            tokio::task::spawn_blocking(move || -> Result<(ralph::Loop, String), String> {
                let plan = ralph::read_plan(&workspace, &plan_path)?;
                let now = now_ms();
                let mut state = match ralph::load(&workspace, &name) {
                    Some(old) if old.status.resumable() => old,
                    _ => ralph::Loop {
                        name: name.clone(),
                        plan: plan_path.clone(),
                        iteration: 1,
                        max_iterations: max,
                        status: LoopStatus::Active,
                        started_at_ms: now,
                        updated_at_ms: now,
                        reason: None,
                    },
                };
                state.status = LoopStatus::Active;
                state.updated_at_ms = now;
                state.reason = None;
                ralph::save(&workspace, &state).map_err(|err| format!("{err:#}"))?;
                let prompt = ralph::prompt(&state, &plan);
                Ok((state, prompt))
            })
            .await;
        let (state, prompt) = match started {
            Ok(Ok(started)) => started,
            Ok(Err(message)) => return CommandReply::Failed { message },
            Err(_) => {
                return CommandReply::Failed {
                    message: "starting the loop failed".to_owned(),
                };
            }
        };
        link.bus().publish(
            "workflow",
            &RalphLoopStart {
                name: state.name.clone(),
                iteration: state.iteration,
                max_iterations: state.max_iterations,
            },
        );
        let reply = format!(
            "Ralph loop {} started at iteration {}/{} — /unipi:ralph-stop ends it",
            state.name, state.iteration, state.max_iterations
        );
        let id = RUNS.fetch_add(1, Ordering::Relaxed);
        // In place before the message goes out, so Pi's input event for it is recognised.
        *lock(&self.ralph) = Some(Running::new(state, call.agent.clone(), id));
        let send = HostCall::SendUserMessage {
            content: prompt,
            deliver_as: Some(DeliverAs::FollowUp),
        };
        if let Err(err) = link.host.call(&call.agent, send).await {
            lock(&self.ralph).take();
            return CommandReply::Failed {
                message: format!("the loop could not start: {err}"),
            };
        }
        CommandReply::Notify {
            message: reply,
            level: NotifyLevel::Info,
        }
    }

    pub(super) fn ralph_stop(&self) -> CommandReply {
        let Some(Running { mut state, .. }) = lock(&self.ralph).take() else {
            return CommandReply::Notify {
                message: "No ralph loop is running".to_owned(),
                level: NotifyLevel::Warning,
            };
        };
        state.status = LoopStatus::Stopped;
        state.reason = Some("stopped by the user".to_owned());
        state.updated_at_ms = now_ms();
        self.end_loop(&state);
        CommandReply::Notify {
            message: format!(
                "Stopped ralph loop {} (iteration {})",
                state.name, state.iteration
            ),
            level: NotifyLevel::Info,
        }
    }

    pub(super) async fn ralph_status(&self) -> CommandReply {
        let running = lock(&self.ralph).as_ref().map(|run| run.state.clone());
        let workspace = self.workspace.clone();
        let last = match running {
            Some(_) => None,
            None => tokio::task::spawn_blocking(move || ralph::last_loop(&workspace))
                .await
                .ok()
                .flatten(),
        };
        CommandReply::Notify {
            message: ralph::status_text(running.as_ref(), last.as_ref(), now_ms()),
            level: NotifyLevel::Info,
        }
    }

    /// Persists a finished loop and says so on the bus.
    fn end_loop(&self, state: &ralph::Loop) {
        if let Err(err) = ralph::save(&self.workspace, state) {
            tracing::warn!("ralph: {err:#}");
        }
        if let Some(link) = self.bridge.get() {
            link.bus().publish(
                "workflow",
                &RalphLoopEnd {
                    name: state.name.clone(),
                    iteration: state.iteration,
                    max_iterations: state.max_iterations,
                    status: state.status,
                    reason: state.reason.clone(),
                },
            );
        }
        tracing::info!(
            "ralph: loop {} ended at iteration {} ({:?}: {})",
            state.name,
            state.iteration,
            state.status,
            state.reason.as_deref().unwrap_or_default()
        );
    }

    /// One of the loop's iterations settled: the next iteration, the loop's end, or its pause.
    pub(super) async fn ralph_turn(&self, aborted: bool) {
        let Some(run) = lock(&self.ralph).clone() else {
            return;
        };
        let Some(link) = self.bridge.get() else {
            return;
        };
        let workspace = self.workspace.clone();
        let plan_path = run.state.plan.clone();
        let plan =
            tokio::task::spawn_blocking(move || ralph::read_plan(&workspace, &plan_path)).await;
        let mut state = run.state.clone();
        let next = match plan {
            Ok(Ok(plan)) => ralph::after_turn(&mut state, &plan, aborted, now_ms()),
            Ok(Err(message)) => {
                state.status = LoopStatus::Paused;
                self.ui
                    .notice(format!("Ralph loop {} paused: {message}", state.name));
                Next::Pause
            }
            Err(_) => {
                state.status = LoopStatus::Paused;
                Next::Pause
            }
        };
        {
            // The plan was read meanwhile: a `/unipi:ralph-stop` (or a new start) since then
            // has the last word.
            let mut slot = lock(&self.ralph);
            if slot.as_ref().map(|running| running.id) != Some(run.id) {
                return;
            }
            match (&next, slot.as_mut()) {
                (Next::Continue(_), Some(running)) => running.next(state.clone()),
                _ => {
                    slot.take();
                }
            }
        }
        link.bus().publish(
            "workflow",
            &RalphIterationDone {
                name: state.name.clone(),
                iteration: state.iteration,
                status: state.status,
            },
        );
        match next {
            Next::Continue(prompt) => {
                if let Err(err) = ralph::save(&self.workspace, &state) {
                    tracing::warn!("ralph: {err:#}");
                }
                let send = HostCall::SendUserMessage {
                    content: prompt,
                    deliver_as: Some(DeliverAs::FollowUp),
                };
                if let Err(err) = link.host.call(&run.agent, send).await {
                    tracing::warn!("ralph: the next iteration could not be sent: {err}");
                }
            }
            Next::Complete(reason) => {
                self.end_loop(&state);
                self.ui
                    .notice(format!("Ralph loop {} finished: {reason}", state.name));
            }
            Next::Pause => {
                if let Err(err) = ralph::save(&self.workspace, &state) {
                    tracing::warn!("ralph: {err:#}");
                }
                self.ui.notice(format!(
                    "Ralph loop {} paused — /unipi:ralph-start plan:{} resumes it",
                    state.name,
                    state
                        .plan
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                ));
            }
        }
    }
}

//! Which workflow step is running, and when it ends. A command restricts the tools and sends
//! its message; the step *runs* once Pi takes that message as input, and *ends* when Pi settles
//! afterwards (idle, not continuing by itself) — successfully unless it was aborted or the model's
//! last answer was an error. Then the tools active before the step are restored.
//!
//! Pure bookkeeping over Pi's events: the capability makes the host calls, so this is
//! table-testable without a Pi. [`Delivery`] — has Pi taken a message we sent, and which settle
//! ends what it started — is shared with the loop (`ralph.rs`).

use crate::bridge::PiEvent;

use super::levels::ToolLevel;

/// Where a message the workbench sent into Pi is: sent, queued behind a running turn, or taken
/// (its turn runs). Only the settle after it is taken ends what it started — a message sent
/// while Pi was busy must not take the end of the run that was going on for its own. Pi's input
/// event (recognised by how the message begins) says it was taken, or, when it came while Pi
/// was streaming (Pi 1.x names the `followUp` then), that it waits in Pi's queue until the
/// queue empties (`queue_update`). Pi 0.73 names no streaming behaviour, so a queued message
/// counts as taken at once there; that Pi (like 1.x) runs its queue in the same run, so no
/// settle comes between.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    marker: String,
    stage: Stage,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Sent,
    Queued,
    Taken,
}

impl Delivery {
    /// A message beginning with `marker` is on its way.
    pub fn new(marker: String) -> Self {
        Delivery {
            marker,
            stage: Stage::Sent,
        }
    }

    /// Pi took the message: its turn is running.
    pub fn taken(&self) -> bool {
        self.stage == Stage::Taken
    }

    /// Follows one of Pi's events; `Some(aborted)` when the turn that took the message settled.
    pub fn on_event(&mut self, event: &PiEvent) -> Option<bool> {
        match event {
            PiEvent::UserInput(input)
                if self.stage == Stage::Sent && input.text.starts_with(&self.marker) =>
            {
                self.stage = match input.streaming_behavior {
                    Some(_) => Stage::Queued,
                    None => Stage::Taken,
                };
                None
            }
            PiEvent::QueueUpdate { pending: false } if self.stage == Stage::Queued => {
                self.stage = Stage::Taken;
                None
            }
            PiEvent::AgentSettled { aborted, .. } if self.taken() => Some(*aborted),
            _ => None,
        }
    }
}

/// The step in force.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Active {
    /// `unipi:plan`.
    pub command: String,
    pub level: ToolLevel,
    /// The tools active before the first step of a chain (what the end restores).
    pub restore: Vec<String>,
    pub started_ms: u64,
    /// The step's message (how it begins): the settle after Pi took it ends the step.
    pub delivery: Delivery,
    /// The model's last answer ended in an error.
    pub errored: bool,
}

/// A step that ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ended {
    pub command: String,
    pub(crate) level: ToolLevel,
    pub restore: Vec<String>,
    pub success: bool,
    pub duration_ms: u64,
}

#[derive(Default, Debug)]
pub(crate) struct Tracker {
    active: Option<Active>,
}

impl Tracker {
    /// A step starts. A step started while another is in force replaces it, and the tools to
    /// restore stay the ones from before the first.
    pub(crate) fn begin(&mut self, mut step: Active) {
        if let Some(previous) = self.active.take() {
            step.restore = previous.restore;
        }
        self.active = Some(step);
    }

    /// The step in force, if one is.
    pub(crate) fn active(&self) -> Option<&Active> {
        self.active.as_ref()
    }

    /// The tools active before the step in force, if one is.
    pub(crate) fn restore_list(&self) -> Option<Vec<String>> {
        self.active.as_ref().map(|step| step.restore.clone())
    }

    /// Follows one of Pi's events; returns the step that ended with it.
    pub(crate) fn on_event(&mut self, event: &PiEvent, now_ms: u64) -> Option<Ended> {
        let step = self.active.as_mut()?;
        if let PiEvent::MessageEnd(end) = event
            && step.delivery.taken()
        {
            step.errored = end.stop_reason.as_deref() == Some("error");
        }
        match step.delivery.on_event(event) {
            None => None,
            Some(aborted) => {
                let step = self.active.take()?;
                Some(Ended {
                    success: !aborted && !step.errored,
                    duration_ms: now_ms.saturating_sub(step.started_ms),
                    command: step.command,
                    level: step.level,
                    restore: step.restore,
                })
            }
        }
    }

    /// Pi went away or replaced its session: the step is over, nothing to restore into.
    pub(crate) fn abandon(&mut self) -> Option<Active> {
        self.active.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::{MessageEnd, UserInput};

    fn step(command: &str, restore: &[&str]) -> Active {
        Active {
            command: command.to_owned(),
            level: ToolLevel::WriteUnipi,
            restore: restore.iter().map(|s| (*s).to_owned()).collect(),
            started_ms: 1_000,
            delivery: Delivery::new(format!("Execute the {command} workflow.")),
            errored: false,
        }
    }

    fn input(text: &str) -> PiEvent {
        PiEvent::UserInput(UserInput {
            text: text.to_owned(),
            source: Some("extension".to_owned()),
            streaming_behavior: None,
            truncated: false,
        })
    }

    #[test]
    fn a_step_queued_behind_a_turn_ends_with_the_settle_after_the_queue_emptied() {
        let mut tracker = Tracker::default();
        tracker.begin(step("plan", &["read", "bash"]));
        let queued = PiEvent::UserInput(UserInput {
            text: "Execute the plan workflow.".to_owned(),
            source: Some("extension".to_owned()),
            streaming_behavior: Some("followUp".to_owned()),
            truncated: false,
        });
        assert_eq!(tracker.on_event(&queued, 1_100), None);
        // The turn the message waited behind settles (it ended before taking it).
        assert_eq!(tracker.on_event(&settled(false), 1_200), None);
        assert_eq!(
            tracker.on_event(&PiEvent::QueueUpdate { pending: false }, 1_300),
            None
        );
        assert_eq!(
            tracker.on_event(&settled(false), 1_900).map(|e| e.success),
            Some(true)
        );
    }

    fn settled(aborted: bool) -> PiEvent {
        PiEvent::AgentSettled {
            aborted,
            synthetic: false,
        }
    }

    #[test]
    fn a_settle_before_the_message_is_taken_does_not_end_the_step() {
        let mut tracker = Tracker::default();
        tracker.begin(step("plan", &["read", "bash"]));
        // The run that was going when the command came settles first.
        assert_eq!(tracker.on_event(&settled(false), 2_000), None);
        assert_eq!(tracker.on_event(&input("something else"), 2_000), None);
        assert_eq!(
            tracker.on_event(&input("Execute the plan workflow.\n…"), 2_100),
            None
        );
        let ended = tracker.on_event(&settled(false), 5_000);
        assert_eq!(
            ended.map(|e| (e.command, e.success, e.duration_ms, e.restore)),
            Some((
                "plan".to_owned(),
                true,
                4_000,
                vec!["read".to_owned(), "bash".to_owned()]
            ))
        );
        assert!(tracker.active().is_none());
    }

    #[test]
    fn aborted_and_errored_steps_end_unsuccessfully_and_chains_restore_the_first_tools() {
        let mut tracker = Tracker::default();
        tracker.begin(step("plan", &["read", "bash", "edit", "write"]));
        tracker.begin(step("work", &["read", "write"]));
        tracker.on_event(&input("Execute the work workflow."), 1_500);
        let ended = tracker.on_event(&settled(true), 2_000);
        assert_eq!(
            ended.map(|e| (e.success, e.restore.len())),
            Some((false, 4))
        );

        tracker.begin(step("debug", &["read"]));
        tracker.on_event(&input("Execute the debug workflow."), 1_500);
        let error = MessageEnd {
            provider: None,
            model: None,
            usage: Default::default(),
            stop_reason: Some("error".to_owned()),
            error_message: Some("overloaded".to_owned()),
            text: None,
        };
        tracker.on_event(&PiEvent::MessageEnd(error), 1_600);
        assert_eq!(
            tracker.on_event(&settled(false), 2_000).map(|e| e.success),
            Some(false)
        );
    }
}

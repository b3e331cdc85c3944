//! Promised wake-ups: background work (a task, a helper, a delegate) that will start a turn of
//! an agent when it ends, and whether that agent's Pi will still be there to take the turn.
//!
//! Pi in its TUI or in RPC mode stays up between runs, so a wake can come any time. Pi in print
//! or JSON mode (`-p`, `--mode json`) ends the process as soon as its agent settles: a task's
//! follow-up turn would find nobody. So a module that starts such work takes a [`WakePromise`]
//! from [`Wakes`] and drops it once the notice is delivered (or the work was stopped without
//! one); and the bridge extension of a print or JSON run holds Pi's `agent_settled` — which Pi
//! 1.x awaits before its prompt returns, deferring the messages sent meanwhile into a new run —
//! until the host answers that nothing is owed to that agent any more ([`Wakes::kept`]). The
//! follow-up turn then belongs to the same run, its output is the run's output, and Pi exits with
//! its own code. Pi 0.7x does not await anything once the agent has stopped, so there
//! [`WakeReach::Never`] tells the modules to refuse such work, in words the model can act on.
//!
//! Every promise carries its own limit (a task's timeout plus its stop, a helper's deadline),
//! so a held run is bounded by the work it waits for; a promise past its limit is no longer
//! waited for (and the log says which). [`HEADLESS_WAIT_LIMIT`] is the longest a run waits for
//! one piece of work: work without a limit is given it, longer work is refused.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::AgentId;
use super::events::Capabilities;

/// The longest a print or JSON run waits for one piece of background work that will wake its
/// agent.
pub const HEADLESS_WAIT_LIMIT: Duration = Duration::from_secs(30 * 60);

/// Whether an agent can still be woken after its current run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeReach {
    /// Its Pi stays up between runs (the TUI, RPC mode): a wake can come any time.
    Anytime,
    /// Its Pi ends the run when the agent settles (print or JSON mode), and the bridge holds the
    /// settle until what was promised has woken it: work that finishes within
    /// [`HEADLESS_WAIT_LIMIT`] is waited for.
    WithinRun,
    /// Its Pi ends the run when the agent settles and cannot be held (Pi 0.7x in print or JSON
    /// mode): nothing started now can wake it.
    Never,
}

impl WakeReach {
    /// What a Pi with `capabilities` allows: a print or JSON run (Pi 1.x says its mode; Pi 0.7x
    /// says only that it has no UI, which among its modes is print and JSON alone) can be held
    /// where Pi awaits `agent_settled`.
    pub fn of(capabilities: &Capabilities) -> WakeReach {
        let ends_with_run = match capabilities.mode.as_deref() {
            Some(mode) => mode == "print" || mode == "json",
            None => capabilities.has_ui == Some(false),
        };
        if !ends_with_run {
            WakeReach::Anytime
        } else if capabilities.has_event("agent_settled") {
            WakeReach::WithinRun
        } else {
            WakeReach::Never
        }
    }

    /// Why work that would wake the agent cannot be started, for the model; `None` when it can.
    /// `what` names the work ("a background task"), `instead` says what to do instead.
    pub fn refusal(self, what: &str, instead: &str) -> Option<String> {
        (self == WakeReach::Never).then(|| {
            format!(
                "This is a print/JSON run of a Pi that ends as soon as you stop, so {what} could \
                 not wake you with its result: {instead}."
            )
        })
    }

    /// Why work that would wake the agent and may take `limit` (`None`: no limit) cannot be
    /// started, for the model; `None` when it can.
    pub fn refusal_for(self, what: &str, limit: Option<Duration>, instead: &str) -> Option<String> {
        if let Some(refused) = self.refusal(what, instead) {
            return Some(refused);
        }
        let max = HEADLESS_WAIT_LIMIT.as_secs();
        match (self, limit) {
            (WakeReach::WithinRun, Some(limit)) if limit > HEADLESS_WAIT_LIMIT => Some(format!(
                "In a print/JSON run, background work that wakes you must finish within {max} s \
                 (asked: {} s): {instead}.",
                limit.as_secs()
            )),
            _ => None,
        }
    }
}

/// The wakes owed, by agent. Cheap to clone; every clone is the same ledger.
#[derive(Debug, Clone, Default)]
pub struct Wakes {
    inner: Arc<Ledger>,
}

#[derive(Debug, Default)]
struct Ledger {
    owed: watch::Sender<HashMap<u64, Owed>>,
    next_id: AtomicU64,
}

#[derive(Debug, Clone)]
struct Owed {
    agent: AgentId,
    what: String,
    /// After this the promise is no longer waited for.
    until: Instant,
}

/// One wake owed to an agent; dropping it says the wake came (or never will).
#[derive(Debug)]
pub struct WakePromise {
    ledger: Arc<Ledger>,
    id: u64,
}

impl Drop for WakePromise {
    fn drop(&mut self) {
        self.ledger
            .owed
            .send_if_modified(|owed| owed.remove(&self.id).is_some());
    }
}

impl Wakes {
    /// `agent` is owed a wake by `what` (a task's name and id), within `limit`.
    pub fn promise(
        &self,
        agent: &AgentId,
        what: impl Into<String>,
        limit: Duration,
    ) -> WakePromise {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let owed = Owed {
            agent: agent.clone(),
            what: what.into(),
            until: Instant::now() + limit,
        };
        self.inner.owed.send_modify(|all| {
            all.insert(id, owed);
        });
        WakePromise {
            ledger: Arc::clone(&self.inner),
            id,
        }
    }

    /// What is owed to `agent` now (names), earliest limit first.
    pub fn owed_to(&self, agent: &AgentId) -> Vec<String> {
        let mut owed: Vec<(Instant, String)> = self
            .inner
            .owed
            .borrow()
            .values()
            .filter(|owed| &owed.agent == agent)
            .map(|owed| (owed.until, owed.what.clone()))
            .collect();
        owed.sort();
        owed.into_iter().map(|(_, what)| what).collect()
    }

    /// Returns once nothing is owed to `agent`: every promise was dropped, or is past its limit
    /// (logged; it is not waited for again).
    pub async fn kept(&self, agent: &AgentId) {
        let mut owed = self.inner.owed.subscribe();
        loop {
            let now = Instant::now();
            let (late, latest) = {
                let all = owed.borrow_and_update();
                let mine: Vec<&Owed> = all.values().filter(|o| &o.agent == agent).collect();
                let late: Vec<String> = mine
                    .iter()
                    .filter(|o| o.until <= now)
                    .map(|o| o.what.clone())
                    .collect();
                let latest = mine.iter().map(|o| o.until).filter(|u| *u > now).max();
                (late, latest)
            };
            let Some(latest) = latest else {
                if !late.is_empty() {
                    tracing::warn!(
                        "agent {agent}: no longer waiting for {} (past its limit)",
                        late.join(", ")
                    );
                }
                return;
            };
            tokio::select! {
                changed = owed.changed() => if changed.is_err() { return },
                () = tokio::time::sleep_until(latest) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(mode: Option<&str>, has_ui: Option<bool>, settled: bool) -> Capabilities {
        Capabilities {
            mode: mode.map(str::to_owned),
            has_ui,
            events: if settled {
                vec!["agent_settled".to_owned()]
            } else {
                vec![]
            },
            ..Capabilities::default()
        }
    }

    #[test]
    fn reach_follows_the_mode_and_whether_pi_awaits_the_settle() {
        let cases = [
            (caps(Some("tui"), Some(true), true), WakeReach::Anytime),
            (caps(Some("rpc"), Some(true), true), WakeReach::Anytime),
            (caps(Some("print"), Some(false), true), WakeReach::WithinRun),
            (caps(Some("json"), Some(false), true), WakeReach::WithinRun),
            // Pi 0.7x names no mode: no UI means print or JSON, and it cannot be held.
            (caps(None, Some(false), false), WakeReach::Never),
            (caps(None, Some(true), false), WakeReach::Anytime),
            (caps(None, None, false), WakeReach::Anytime),
        ];
        for (caps, want) in cases {
            assert_eq!(WakeReach::of(&caps), want, "{caps:?}");
        }
    }

    #[test]
    fn refusals_say_why_and_what_to_do() {
        let instead = "run it in the foreground";
        assert_eq!(
            WakeReach::Anytime.refusal_for("a task", None, instead),
            None
        );
        assert_eq!(
            WakeReach::WithinRun.refusal_for("a task", Some(HEADLESS_WAIT_LIMIT), instead),
            None
        );
        let long = WakeReach::WithinRun
            .refusal_for("a task", Some(HEADLESS_WAIT_LIMIT * 2), instead)
            .unwrap();
        assert!(long.contains("within 1800 s (asked: 3600 s)"), "{long}");
        assert!(long.ends_with("run it in the foreground."), "{long}");
        let never = WakeReach::Never
            .refusal("a background task", instead)
            .unwrap();
        assert!(never.contains("could not wake you"), "{never}");
    }

    #[tokio::test(start_paused = true)]
    async fn kept_waits_for_the_promises_of_that_agent_only() {
        let wakes = Wakes::default();
        let (main, other) = (AgentId::main(), AgentId::new("helper:1"));
        let build = wakes.promise(&main, "build (bg-1)", Duration::from_secs(60));
        let _elsewhere = wakes.promise(&other, "lint (bg-2)", Duration::from_secs(60));
        assert_eq!(wakes.owed_to(&main), ["build (bg-1)"]);
        let waiter = tokio::spawn({
            let wakes = wakes.clone();
            async move { wakes.kept(&main).await }
        });
        crate::test_wait::stays_quiet(
            "returned while the build was owed",
            Duration::from_millis(300),
            || waiter.is_finished(),
        )
        .await;
        drop(build);
        tokio::time::timeout(Duration::from_secs(20), waiter)
            .await
            .expect("kept once the promise was dropped")
            .unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_promise_past_its_limit_is_not_waited_for() {
        let wakes = Wakes::default();
        let main = AgentId::main();
        let limit = Duration::from_millis(300);
        let _stuck = wakes.promise(&main, "stuck (bg-1)", limit);
        let started = Instant::now();
        tokio::time::timeout(Duration::from_secs(20), wakes.kept(&main))
            .await
            .expect("kept once the limit passed");
        assert!(started.elapsed() >= limit, "{:?}", started.elapsed());
    }
}

//! The warm pool: idle sidekick Pi processes kept ready for helpers, so a helper served from it
//! does not pay Node's and Pi's start-up. It exists only while model fusion is on — the pool
//! follows fusion's status on the bus (`unipi:fusion:status`: the sidekick model and the pool's
//! size and idle limit) and is emptied when fusion goes off or the sidekick changes.
//!
//! Each warm process was started for one run template ([`Template`]: the agent type with its
//! model, the child's depth, the budget) with a run id, directory and bridge token of its own,
//! exactly as that run would start ([`super::warm`]); a helper whose template is equal takes it
//! and becomes that run. The pool wants the template of the last run it served (at first: the
//! `explore` type) and is refilled in the background after each take, up to its size. A process
//! idle past the limit is stopped. This file is the pool's bookkeeping (pure, behind one lock);
//! the service spawns and discards the processes.

use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::agents::AgentType;
use super::budget::Budget;
use super::warm::Prewarmed;
use crate::bridge::AgentId;
use crate::sys::lock;

/// The pool's limits, as fusion publishes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PoolSettings {
    pub(super) size: usize,
    pub(super) idle: Duration,
}

/// What a warm process was started for.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Template {
    pub(super) agent: AgentType,
    pub(super) child_depth: u32,
    pub(super) budget: Budget,
}

/// One idle process, and the run it will become.
pub(super) struct WarmSlot {
    pub(super) run_id: String,
    pub(super) child_agent: AgentId,
    /// The bridge's environment for the process (its token was issued for `child_agent`).
    pub(super) bridge_env: Vec<(String, String)>,
    pub(super) template: Template,
    pub(super) process: Prewarmed,
}

#[derive(Default)]
struct State {
    /// The sidekick model, while fusion is on.
    model: Option<String>,
    settings: Option<PoolSettings>,
    idle: Vec<WarmSlot>,
    /// The template refills start.
    wanted: Option<Template>,
    /// Spawns under way.
    spawning: usize,
    /// Drained for the workbench's end: fusion's later statuses start nothing more.
    closed: bool,
}

/// The pool's bookkeeping.
#[derive(Default)]
pub(super) struct WarmPool {
    state: std::sync::Mutex<State>,
    /// Wakes the idle reaper when a process joins or the limits change.
    changed: std::sync::Arc<Notify>,
}

impl WarmPool {
    /// The sidekick model, while fusion is on.
    pub(super) fn model(&self) -> Option<String> {
        lock(&self.state).model.clone()
    }

    /// Takes fusion's status: the sidekick (`None`: fusion is off) and the limits. Returns the
    /// processes that no longer fit (all of them when the sidekick changed or fusion went off;
    /// the oldest beyond a smaller size) for the caller to stop.
    pub(super) fn configure(
        &self,
        model: Option<String>,
        settings: Option<PoolSettings>,
    ) -> Vec<WarmSlot> {
        let mut state = lock(&self.state);
        let settings = settings.filter(|_| model.is_some() && !state.closed);
        let mut stale = Vec::new();
        if state.model != model {
            stale.append(&mut state.idle);
            state.wanted = None;
        }
        state.model = model;
        state.settings = settings;
        let size = settings.map_or(0, |settings| settings.size);
        while state.idle.len() > size {
            stale.push(state.idle.remove(0));
        }
        drop(state);
        self.changed.notify_one();
        stale
    }

    /// Remembers `template` as the one refills start.
    pub(super) fn want(&self, template: Template) {
        lock(&self.state).wanted = Some(template);
    }

    /// Whether no template is wanted yet.
    pub(super) fn wants_nothing(&self) -> bool {
        lock(&self.state).wanted.is_none()
    }

    /// An idle process started for `template` that still runs; dead ones met on the way are
    /// returned for stopping too.
    pub(super) fn take(&self, template: &Template) -> (Option<WarmSlot>, Vec<WarmSlot>) {
        let mut state = lock(&self.state);
        let mut dead = Vec::new();
        let mut found = None;
        let mut index = 0;
        while index < state.idle.len() {
            if state.idle[index].template != *template {
                index += 1;
                continue;
            }
            let mut slot = state.idle.remove(index);
            if slot.process.alive() {
                found = Some(slot);
                break;
            }
            dead.push(slot);
        }
        (found, dead)
    }

    /// How many processes of which template to start now (they are counted as under way).
    pub(super) fn to_spawn(&self) -> Option<(Template, usize)> {
        let mut state = lock(&self.state);
        let size = state.settings?.size;
        let wanted = state.wanted.clone()?;
        let have = state
            .idle
            .iter()
            .filter(|slot| slot.template == wanted)
            .count();
        let missing = size.saturating_sub(have + state.spawning);
        if missing == 0 {
            return None;
        }
        state.spawning += missing;
        Some((wanted, missing))
    }

    /// A spawn ended (`None`: it failed). A process that still fits joins the pool; one that
    /// does not (the sidekick or the template changed meanwhile, or the pool is full) is
    /// returned for stopping.
    pub(super) fn spawned(&self, slot: Option<WarmSlot>) -> Option<WarmSlot> {
        let mut state = lock(&self.state);
        state.spawning = state.spawning.saturating_sub(1);
        let slot = slot?;
        let fits = state.model.is_some()
            && slot.template.agent.model == state.model
            && state.wanted.as_ref() == Some(&slot.template)
            && state.idle.len() < state.settings.map_or(0, |settings| settings.size);
        if !fits {
            return Some(slot);
        }
        state.idle.push(slot);
        drop(state);
        self.changed.notify_one();
        None
    }

    /// When the next idle process reaches the idle limit.
    pub(super) fn next_expiry(&self) -> Option<Instant> {
        let state = lock(&self.state);
        let idle = state.settings?.idle;
        state
            .idle
            .iter()
            .map(|slot| slot.process.born() + idle)
            .min()
    }

    /// The processes idle past the limit at `now`, out of the pool.
    pub(super) fn expired(&self, now: Instant) -> Vec<WarmSlot> {
        let mut state = lock(&self.state);
        let Some(idle) = state.settings.map(|settings| settings.idle) else {
            return std::mem::take(&mut state.idle);
        };
        let (old, young): (Vec<WarmSlot>, Vec<WarmSlot>) = std::mem::take(&mut state.idle)
            .into_iter()
            .partition(|slot| slot.process.born() + idle <= now);
        state.idle = young;
        old
    }

    /// What is notified when a process joins or the limits change (held by the reaper, which
    /// must not keep the service alive while it waits).
    pub(super) fn notifier(&self) -> std::sync::Arc<Notify> {
        self.changed.clone()
    }

    /// Every idle process, out of the pool (shutting down); fusion's settings are forgotten and
    /// the pool stays closed: a status that arrives while the workbench ends (the active preset,
    /// applied at start, may finish only after a short headless run did) starts nothing that
    /// only the watchdog would stop.
    pub(super) fn drain(&self) -> Vec<WarmSlot> {
        let mut state = lock(&self.state);
        state.settings = None;
        state.closed = true;
        std::mem::take(&mut state.idle)
    }

    /// The idle processes' groups.
    #[cfg(test)]
    fn idle_groups(&self) -> Vec<crate::sys::ProcessGroup> {
        lock(&self.state)
            .idle
            .iter()
            .filter_map(|slot| slot.process.group())
            .collect()
    }

    /// SIGKILL to every idle process now (the panic path).
    pub(super) fn kill_now(&self) {
        for slot in &lock(&self.state).idle {
            slot.process.kill_now();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;
    use crate::helpers::agents::AgentCatalog;
    use crate::helpers::spec::RunSpec;

    fn template(model: &str) -> Template {
        let mut agent = AgentCatalog::builtin().resolve("explore").unwrap();
        agent.model = Some(model.to_owned());
        Template {
            agent,
            child_depth: 1,
            budget: Budget::default(),
        }
    }

    /// A warm "Pi" for `template` running `script` (`exec cat` waits on stdin).
    fn slot_running(
        dir: &std::path::Path,
        id: &str,
        template: &Template,
        script: &str,
    ) -> WarmSlot {
        let mut spec = RunSpec::new("/bin/sh", template.agent.clone(), "", dir, dir.join(id));
        spec.leading_args = vec!["-c".into(), script.into(), "sh".into()];
        WarmSlot {
            run_id: id.into(),
            child_agent: AgentId::new(format!("helper:{id}")),
            bridge_env: Vec::new(),
            template: template.clone(),
            process: Prewarmed::spawn(&spec).unwrap(),
        }
    }

    fn slot(dir: &std::path::Path, id: &str, template: &Template) -> WarmSlot {
        slot_running(dir, id, template, "exec cat >/dev/null")
    }

    fn run_ids(slots: &[WarmSlot]) -> Vec<&str> {
        slots.iter().map(|slot| slot.run_id.as_str()).collect()
    }

    fn settings(size: usize, idle_ms: u64) -> Option<PoolSettings> {
        Some(PoolSettings {
            size,
            idle: Duration::from_millis(idle_ms),
        })
    }

    #[tokio::test]
    async fn fills_to_its_size_serves_equal_templates_and_empties_when_the_sidekick_changes() {
        let dir = tempfile::tempdir().unwrap();
        let pool = WarmPool::default();
        let small = template("p/small");
        // Fusion off: nothing to start.
        assert!(pool.configure(None, settings(2, 60_000)).is_empty());
        pool.want(small.clone());
        assert!(pool.to_spawn().is_none());
        pool.configure(Some("p/small".into()), settings(2, 60_000));
        assert!(
            pool.wants_nothing(),
            "a new sidekick forgets the old template"
        );
        pool.want(small.clone());
        assert_eq!(
            pool.to_spawn().map(|(t, n)| (t == small, n)),
            Some((true, 2))
        );
        assert!(pool.to_spawn().is_none(), "both are under way");
        assert!(pool.spawned(Some(slot(dir.path(), "a", &small))).is_none());
        assert!(pool.spawned(Some(slot(dir.path(), "b", &small))).is_none());
        assert_eq!(pool.idle_groups().len(), 2);
        // Another template does not take them; an equal one does.
        let (none, _) = pool.take(&template("p/other"));
        assert!(none.is_none());
        let (taken, dead) = pool.take(&small);
        assert_eq!(taken.map(|slot| slot.run_id), Some("a".to_owned()));
        assert!(dead.is_empty());
        assert_eq!(
            pool.to_spawn().map(|(_, n)| n),
            Some(1),
            "refilled after a take"
        );
        // A spawn for a template no longer wanted is handed back.
        let stale = slot(dir.path(), "c", &template("p/old"));
        assert!(pool.spawned(Some(stale)).is_some());
        // Another sidekick: every idle process goes.
        let gone = pool.configure(Some("p/tiny".into()), settings(2, 60_000));
        assert_eq!(run_ids(&gone), ["b"]);
        for slot in gone {
            let group = slot.process.group().unwrap();
            slot.process.discard().await;
            assert!(!group.alive());
        }
        assert!(pool.wants_nothing());
        // Fusion off: the pool empties and starts nothing more.
        let tiny = template("p/tiny");
        pool.want(tiny.clone());
        assert_eq!(pool.to_spawn().map(|(_, n)| n), Some(2));
        assert!(pool.spawned(Some(slot(dir.path(), "e", &tiny))).is_none());
        let off = pool.configure(None, settings(2, 60_000));
        assert_eq!(run_ids(&off), ["e"]);
        pool.want(tiny.clone());
        assert!(
            pool.to_spawn().is_none(),
            "nothing is started while fusion is off"
        );
        assert!(pool.idle_groups().is_empty());
        for slot in off {
            slot.process.discard().await;
        }
    }

    #[tokio::test]
    async fn a_drained_pool_starts_nothing_more_whatever_fusion_says_next() {
        let dir = tempfile::tempdir().unwrap();
        let pool = WarmPool::default();
        let small = template("p/small");
        pool.configure(Some("p/small".into()), settings(2, 60_000));
        pool.want(small.clone());
        assert_eq!(pool.to_spawn().map(|(_, n)| n), Some(2));
        assert!(pool.spawned(Some(slot(dir.path(), "a", &small))).is_none());
        let drained = pool.drain();
        assert_eq!(run_ids(&drained), ["a"]);
        // The spawn still under way at the drain is handed back for stopping.
        let late = pool.spawned(Some(slot(dir.path(), "b", &small)));
        assert_eq!(late.as_ref().map(|slot| slot.run_id.as_str()), Some("b"));
        // Fusion's status arriving after the drain (as it stops) starts nothing.
        assert!(
            pool.configure(Some("p/small".into()), settings(2, 60_000))
                .is_empty()
        );
        pool.want(small.clone());
        assert!(pool.to_spawn().is_none(), "a drained pool refilled");
        for slot in drained.into_iter().chain(late) {
            slot.process.discard().await;
        }
    }

    #[tokio::test]
    async fn a_smaller_size_trims_dead_ones_are_not_served_and_idle_ones_expire() {
        let dir = tempfile::tempdir().unwrap();
        let pool = WarmPool::default();
        let small = template("p/small");
        pool.configure(Some("p/small".into()), settings(3, 50));
        pool.want(small.clone());
        let _ = pool.to_spawn();
        let exits = slot_running(dir.path(), "b", &small, "exit 0");
        let pid = exits.process.group().unwrap().raw();
        for warm in [
            slot(dir.path(), "a", &small),
            exits,
            slot(dir.path(), "c", &small),
        ] {
            assert!(pool.spawned(Some(warm)).is_none());
        }
        // A smaller size stops the oldest.
        let trimmed = pool.configure(Some("p/small".into()), settings(2, 50));
        assert_eq!(run_ids(&trimmed), ["a"]);
        // "b" exited by itself: once it is a zombie, a take hands it back as dead.
        let zombie = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
            })
        };
        crate::test_wait::eventually(
            "the exiting process to exit",
            crate::test_wait::WAIT,
            zombie,
        )
        .await;
        let (served, dead) = pool.take(&small);
        assert_eq!(run_ids(&dead), ["b"]);
        assert_eq!(served.as_ref().map(|slot| slot.run_id.as_str()), Some("c"));
        // An idle process expires once past the limit, not before.
        let _ = pool.to_spawn();
        assert!(pool.spawned(Some(slot(dir.path(), "d", &small))).is_none());
        let expiry = pool.next_expiry().unwrap();
        assert!(pool.expired(expiry - Duration::from_millis(1)).is_empty());
        let expired = pool.expired(expiry);
        assert_eq!(run_ids(&expired), ["d"]);
        assert!(pool.idle_groups().is_empty());
        for slot in trimmed.into_iter().chain(dead).chain(expired).chain(served) {
            slot.process.discard().await;
        }
    }
}

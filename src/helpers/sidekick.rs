//! Model fusion, as the helpers see it — through the event bus only, never fusion's code (only
//! its messages, `fusion::bus`): `unipi:fusion:status` says which model is the sidekick (the
//! model of every helper that names none) and how large the warm pool may be; the helpers ask
//! for it again when they start following (`unipi:fusion:status:query`), so the order the two
//! start in does not matter. This
//! file keeps the warm pool for the service: taking a warm process for a run that fits, refilling
//! in the background, stopping processes that no longer fit or were idle too long, and reporting
//! every finished run's model and usage (`unipi:model:usage`) so fusion can count its savings.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;

use super::budget::Budget;
use super::names::CHILD_AGENT_PREFIX;
use super::pool::{PoolSettings, Template, WarmSlot};
use super::service::{HelperService, Launch, SessionStart};
use super::warm::Prewarmed;
use crate::bridge::{AgentId, EventBus};
use crate::fusion::bus::{FusionStatus, FusionStatusQuery, ModelUsage, UsageCounts};

/// The helper type the pool warms before any helper ran.
const FIRST_TYPE: &str = "explore";

/// The sidekick and the pool's limits in a status event (`None`s while fusion is off).
fn read_status(status: &FusionStatus) -> (Option<String>, Option<PoolSettings>) {
    if !status.active {
        return (None, None);
    }
    let pool = status.pool.as_ref().map(|pool| PoolSettings {
        size: pool.size,
        idle: Duration::from_secs(pool.idle_seconds),
    });
    (status.sidekick.clone(), pool)
}

/// Follows fusion's status on `bus` for `service`, and stops idle processes past the limit,
/// until the bus closes or the service is gone.
pub(super) fn follow(service: &Arc<HelperService>, bus: &EventBus) {
    let mut events = bus.subscribe();
    bus.publish("helpers", &FusionStatusQuery);
    let weak = Arc::downgrade(service);
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(event) => {
                    let Some(status) = event.decode::<FusionStatus>() else {
                        continue;
                    };
                    let Some(service) = weak.upgrade() else {
                        return;
                    };
                    let (model, pool) = read_status(&status);
                    service.on_fusion_status(model, pool).await;
                }
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            }
        }
    });
    tokio::spawn(reap_idle(Arc::downgrade(service)));
}

/// Stops warm processes idle past the limit; sleeps while there are none.
async fn reap_idle(service: Weak<HelperService>) {
    let Some(notifier) = service.upgrade().map(|strong| strong.pool().notifier()) else {
        return;
    };
    loop {
        let changed = notifier.notified();
        tokio::pin!(changed);
        // Registered before the pool is read, so a change in between still wakes it.
        changed.as_mut().enable();
        let Some(next) = service.upgrade().map(|strong| strong.pool().next_expiry()) else {
            return;
        };
        match next {
            Some(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at.into()) => {
                        let Some(strong) = service.upgrade() else {
                            return;
                        };
                        for slot in strong.pool().expired(std::time::Instant::now()) {
                            tracing::info!("helpers: warm process {} idle too long; stopped", slot.run_id);
                            strong.discard(slot).await;
                        }
                    }
                    () = &mut changed => {}
                }
            }
            None => changed.await,
        }
    }
}

impl HelperService {
    /// Fusion's status changed: the pool follows (stale processes stop), and fills up.
    pub(super) async fn on_fusion_status(
        self: &Arc<Self>,
        model: Option<String>,
        pool: Option<PoolSettings>,
    ) {
        for slot in self.pool().configure(model.clone(), pool) {
            self.discard(slot).await;
        }
        if let Some(model) = model
            && self.pool().wants_nothing()
            && let Ok(mut agent) = self.settings().catalog.resolve(FIRST_TYPE)
        {
            if agent.model.is_none() {
                agent.model = Some(model);
            }
            self.pool().want(Template {
                budget: Budget {
                    max_turns: agent.max_turns,
                    ..Budget::default()
                },
                agent,
                child_depth: self.settings().depth + 1,
            });
        }
        self.refill();
    }

    /// A warm process for `launch`, when one fits: a fresh run on the sidekick, with the
    /// bridge up. The run's template becomes the one the pool keeps warm.
    pub(super) async fn warm_slot(
        &self,
        launch: &Launch,
        sidekick: Option<&str>,
    ) -> Option<WarmSlot> {
        let fits = launch.session == SessionStart::Fresh
            && sidekick.is_some()
            && launch.agent.model.as_deref() == sidekick
            && self.has_bridge();
        if !fits {
            return None;
        }
        let template = Template {
            agent: launch.agent.clone(),
            child_depth: launch.caller.depth + 1,
            budget: launch.budget,
        };
        self.pool().want(template.clone());
        let (slot, dead) = self.pool().take(&template);
        for slot in dead {
            self.discard(slot).await;
        }
        slot
    }

    /// Starts the processes the pool is missing, in the background.
    pub(super) fn refill(self: &Arc<Self>) {
        let Some((template, count)) = self.pool().to_spawn() else {
            return;
        };
        for _ in 0..count {
            let service = self.clone();
            let template = template.clone();
            tokio::spawn(async move {
                let slot = match service.prewarm(&template) {
                    Ok(slot) => Some(slot),
                    Err(err) => {
                        tracing::warn!("helpers: no warm process started: {err:#}");
                        None
                    }
                };
                if let Some(unwanted) = service.pool().spawned(slot) {
                    service.discard(unwanted).await;
                }
            });
        }
    }

    /// Starts one process for `template`, as its run would start (run id, directory, token).
    fn prewarm(&self, template: &Template) -> anyhow::Result<WarmSlot> {
        anyhow::ensure!(self.has_bridge(), "the bridge is not up");
        let run_id = self.new_run_id();
        let child_agent = AgentId::new(format!("{CHILD_AGENT_PREFIX}{run_id}"));
        let bridge_env = self.register_child(&child_agent)?;
        let run_dir = self.settings().runs_root.join(&run_id);
        let spec = self.spec_for(
            template,
            run_dir,
            &child_agent,
            Some(bridge_env.clone()),
            String::new(),
        )?;
        let process = Prewarmed::spawn(&spec)?;
        tracing::debug!("helpers: warm process for run {run_id} started");
        Ok(WarmSlot {
            run_id,
            child_agent,
            bridge_env,
            template: template.clone(),
            process,
        })
    }

    /// Stops an unused warm process and forgets its run (token, directory). The token is
    /// revoked only once the process is gone: a Pi stopped while it starts finishes starting
    /// first (stdin at its end, SIGTERM handled), and its bridge then says `hello` — with a
    /// token revoked before, the host refused it and logged `bad_token` after every headless
    /// run that ended while the pool was filling.
    pub(super) async fn discard(&self, slot: WarmSlot) {
        slot.process.discard().await;
        self.forget_child(&slot.child_agent);
        let run_dir = self.settings().runs_root.join(&slot.run_id);
        // Only what the spawn made: the directory and its empty session directory.
        let _ = std::fs::remove_dir(run_dir.join(super::spec::SESSION_DIR));
        let _ = std::fs::remove_dir(&run_dir);
    }

    /// Stops every warm process (the workbench ends).
    pub(super) async fn shutdown_pool(&self) {
        for slot in self.pool().drain() {
            self.discard(slot).await;
        }
    }

    /// Tells the bus what a finished run used, on which model.
    pub(super) fn report_usage(
        &self,
        run_id: &str,
        model: Option<&str>,
        usage: &super::events::Usage,
    ) {
        let Some(model) = model else {
            return;
        };
        if let Some(bus) = self.bus() {
            bus.publish(
                "helpers",
                &ModelUsage {
                    source: "helper".to_owned(),
                    id: run_id.to_owned(),
                    model: model.to_owned(),
                    usage: UsageCounts::from(usage),
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::test_table::check_table;

    #[test]
    fn status_table() {
        // The status as it is on the bus; what does not read as one is off.
        let read_status =
            |data: &Value| read_status(&serde_json::from_value(data.clone()).unwrap_or_default());
        let cases = [
            (json!({"active": false, "sidekick": null}), (None, None)),
            (
                json!({"active": true, "sidekick": "p/small", "pool": {"size": 2, "idleSeconds": 60}}),
                (
                    Some("p/small".to_owned()),
                    Some(PoolSettings {
                        size: 2,
                        idle: Duration::from_secs(60),
                    }),
                ),
            ),
            (
                json!({"active": true, "sidekick": "p/small", "pool": null}),
                (Some("p/small".to_owned()), None),
            ),
            (json!(null), (None, None)),
        ];
        check_table(cases, read_status);
    }
}

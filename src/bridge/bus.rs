//! The internal event bus: a broadcast channel that carries Pi's events (as the bridge host sees
//! them) and module events (under Unipi's event names, e.g. `unipi:module:ready`) to whoever
//! subscribes. Producers publish without knowing their consumers, and a consumer only needs a
//! clone of the bus: the footer, the info overlay and later modules never import each other.
//!
//! A broadcast channel keeps the last [`EventBus::DEFAULT_CAPACITY`] events; a subscriber that
//! falls further behind gets `RecvError::Lagged` and skips ahead, so a stuck consumer cannot stall
//! a producer.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::broadcast;

use super::AgentId;
use super::events::{DisconnectReason, PiEvent};

/// Unipi's event names (kept so Unipi users and ported modules recognise them).
pub mod names {
    /// A module is ready: `{name, version, commands[], tools[]}`.
    pub const MODULE_READY: &str = "unipi:module:ready";
    /// A module went away (disabled or failed): `{name, version, commands[], tools[]}`.
    pub const MODULE_GONE: &str = "unipi:module:gone";
    /// A notification went out: `{eventType, platforms[], success, timestamp, results[]}`.
    pub const NOTIFICATION_SENT: &str = "unipi:notify:sent";
    /// `ask_user` waits for the user: `{id, agent, question, context, optionCount,
    /// allowMultiple, allowFreeform}`.
    pub const ASK_USER_PROMPT: &str = "unipi:ask-user:prompt";
    /// An `ask_user` call was settled (answered, timed out, cancelled): `{id, agent, kind}`.
    pub const ASK_USER_ANSWERED: &str = "unipi:ask-user:answered";
    /// A background task ended: `{id, name, status, exitCode, wakesAgent}`.
    pub const BG_TASK_FINISHED: &str = "unipi:bg:task:finished";
    /// The background tasks' counts changed: `{running, waking}` (`waking`: running tasks whose
    /// end will wake the agent).
    pub const BG_TASKS_CHANGED: &str = "unipi:bg:tasks:changed";
    /// A helper run in the background ended: `{id, type, description, status, error}`.
    pub const HELPER_FINISHED: &str = "unipi:helper:finished";
    /// Model fusion's pair, fallback, warm pool and savings, whenever they change (and when
    /// asked): `{active, preset, primary, sidekick, fallback: {model, untilMs} | null,
    /// pool: {size, idleSeconds} | null, savings: {session, allTime}}` (each of `session` and
    /// `allTime`: `{calls, tokens, sidekickCost, primaryCost, saved}`). The one way other modules
    /// (helpers, delegates, the footer) learn the pair.
    pub const FUSION_STATUS: &str = "unipi:fusion:status";
    /// Asks model fusion to publish its status again: a module that subscribed after it did.
    pub const FUSION_STATUS_QUERY: &str = "unipi:fusion:status:query";
    /// A model call made by a Pi the workbench owns (a helper, a delegate): `{source, id,
    /// model: "provider/id", usage: {input, output, cacheRead, cacheWrite, cost}}`.
    pub const MODEL_USAGE: &str = "unipi:model:usage";
}

/// One event on the bus.
#[derive(Debug, Clone)]
pub enum BusEvent {
    AgentConnected {
        agent: AgentId,
        pi_version: String,
    },
    AgentDisconnected {
        agent: AgentId,
        reason: DisconnectReason,
    },
    /// A Pi event, shared (it is cloned to every subscriber).
    Pi {
        agent: AgentId,
        event: Arc<PiEvent>,
    },
    /// A module event under a Unipi name.
    Module {
        module: String,
        name: String,
        data: Value,
    },
}

impl BusEvent {
    /// A module event under a Unipi name.
    pub fn module(module: &str, name: &str, data: Value) -> Self {
        Self::Module {
            module: module.to_string(),
            name: name.to_string(),
            data,
        }
    }

    /// A Pi event of the main agent.
    #[cfg(test)]
    pub fn main_pi(event: PiEvent) -> Self {
        Self::Pi {
            agent: AgentId::main(),
            event: Arc::new(event),
        }
    }
}

/// The bus. Cheap to clone; all clones publish to the same subscribers.
#[derive(Debug, Clone)]
pub struct EventBus {
    sender: broadcast::Sender<BusEvent>,
}

impl EventBus {
    /// Events a slow subscriber may fall behind before it skips ahead.
    pub const DEFAULT_CAPACITY: usize = 1024;

    pub fn new() -> Self {
        Self::with_capacity(Self::DEFAULT_CAPACITY)
    }

    pub fn with_capacity(capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(capacity.max(1));
        Self { sender }
    }

    /// Publishes to every current subscriber; returns how many there were (none is fine).
    pub fn publish(&self, event: BusEvent) -> usize {
        self.sender.send(event).unwrap_or(0)
    }

    /// Publishes a module event.
    pub fn emit(&self, module: &str, name: &str, data: Value) -> usize {
        self.publish(BusEvent::module(module, name, data))
    }

    /// A receiver of every event published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<BusEvent> {
        self.sender.subscribe()
    }
}

impl Default for EventBus {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn every_subscriber_gets_every_event_and_none_is_fine() -> anyhow::Result<()> {
        let bus = EventBus::new();
        assert_eq!(bus.emit("tasks", "unipi:tasks:none", Value::Null), 0);
        let mut first = bus.subscribe();
        let mut second = bus.clone().subscribe();
        assert_eq!(
            bus.emit("info", names::MODULE_READY, json!({"name": "info"})),
            2
        );
        for receiver in [&mut first, &mut second] {
            match receiver.recv().await? {
                BusEvent::Module { module, name, data } => {
                    assert_eq!(
                        (module.as_str(), name.as_str()),
                        ("info", names::MODULE_READY)
                    );
                    assert_eq!(data["name"], "info");
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        Ok(())
    }

    #[tokio::test]
    async fn a_slow_subscriber_lags_instead_of_blocking() {
        let bus = EventBus::with_capacity(2);
        let mut slow = bus.subscribe();
        for n in 0..5 {
            bus.emit("m", "e", json!(n));
        }
        assert!(matches!(
            slow.recv().await,
            Err(broadcast::error::RecvError::Lagged(3))
        ));
        assert!(matches!(slow.recv().await, Ok(BusEvent::Module { data, .. }) if data == json!(3)));
    }
}

//! The internal event bus: a broadcast channel that carries Pi's events (as the bridge host sees
//! them) and module events (under Unipi's event names, e.g. `unipi:module:ready`) to whoever
//! subscribes. Producers publish without knowing their consumers, and a consumer only needs a
//! clone of the bus: the footer, the info overlay and later modules never import each other.
//!
//! A module event is a [`BusMessage`]: one serde type beside its Unipi name, defined by the
//! capability that publishes it ([`EventBus::publish`]) and read back by its consumers with
//! [`BusEvent::decode`] — so the schema lives in one place, and the JSON on the bus is the data
//! Unipi published under that name (same field names and casing), for other Pi extensions and
//! the tests. A message also says what the notifications should make of it
//! ([`BusMessage::alerting`]), so they need to know no producer.
//!
//! A broadcast channel keeps the last [`EventBus::DEFAULT_CAPACITY`] events; a subscriber that
//! falls further behind gets `RecvError::Lagged` and skips ahead, so a stuck consumer cannot stall
//! a producer.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::broadcast;

use super::AgentId;
use super::alert::Alerting;
use super::events::{DisconnectReason, PiEvent};

/// One kind of module event: its data as a serde type, under its Unipi name.
pub trait BusMessage: Serialize + DeserializeOwned {
    /// Unipi's event name (`unipi:bg:task:finished`).
    const NAME: &'static str;

    /// What the notifications make of it (nothing, for most messages): whether and how it
    /// alerts the user.
    fn alerting(&self) -> Option<Alerting> {
        None
    }

    /// What Pi's own event bus (`pi.events`, where other Pi extensions listen) gets of it: the
    /// payload Unipi emitted under [`Self::NAME`], or `None` for a message that stays inside
    /// the workbench (a request between capabilities). By default the message's own JSON,
    /// which is Unipi's wherever Unipi had the event; a message whose fields differ from
    /// Unipi's says here how they map.
    fn pi_event(&self) -> Option<Value> {
        serde_json::to_value(self).ok()
    }
}

/// A module is ready: `unipi:module:ready {name, version, commands[], tools[]}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(transparent)]
pub(super) struct ModuleReady(pub(super) ModuleAnnouncement);

/// A module went away (disabled or failed): `unipi:module:gone`, the same fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(transparent)]
pub(super) struct ModuleGone(pub(super) ModuleAnnouncement);

/// What the registry says of a module that came or went.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub(super) struct ModuleAnnouncement {
    pub(super) name: String,
    pub(super) version: String,
    pub(super) commands: Vec<String>,
    pub(super) tools: Vec<String>,
}

impl BusMessage for ModuleReady {
    const NAME: &'static str = "unipi:module:ready";

    fn pi_event(&self) -> Option<Value> {
        Some(self.0.unipi())
    }
}

impl BusMessage for ModuleGone {
    const NAME: &'static str = "unipi:module:gone";

    fn pi_event(&self) -> Option<Value> {
        Some(self.0.unipi())
    }
}

/// Our module names and the Unipi packages that did the same work, whose names other Pi
/// extensions compare `unipi:module:ready`'s `name` with (`@pi-unipi/ralph` lives on in our
/// workflow module, Unipi's subagents in our helpers).
const UNIPI_PACKAGES: [(&str, &str); 9] = [
    ("tasks", "@pi-unipi/background-tasks"),
    ("milestone", "@pi-unipi/milestone"),
    ("ask-user", "@pi-unipi/ask-user"),
    ("compactor", "@pi-unipi/compactor"),
    ("helpers", "@pi-unipi/subagents"),
    ("mcp", "@pi-unipi/mcp"),
    ("notify", "@pi-unipi/notify"),
    ("web", "@pi-unipi/web-api"),
    ("workflow", "@pi-unipi/workflow"),
];

impl ModuleAnnouncement {
    /// The announcement as Unipi's packages made it: the package's name where one of ours does
    /// a Unipi package's work (ours as `module`), the same version, commands and tools.
    fn unipi(&self) -> Value {
        let package = UNIPI_PACKAGES
            .iter()
            .find(|(ours, _)| *ours == self.name)
            .map_or(self.name.as_str(), |(_, package)| package);
        serde_json::json!({
            "name": package,
            "module": self.name,
            "version": self.version,
            "commands": self.commands,
            "tools": self.tools,
        })
    }
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
    /// A module event under a Unipi name: a [`BusMessage`]'s JSON, what it asks of the
    /// notifications, and what Pi's `pi.events` gets of it ([`BusMessage::pi_event`]).
    Module {
        module: String,
        name: String,
        data: Value,
        alerting: Option<Alerting>,
        pi_event: Option<Value>,
    },
}

impl BusEvent {
    /// `message`, published by `module`.
    pub fn message<T: BusMessage>(module: &str, message: &T) -> serde_json::Result<Self> {
        Ok(Self::Module {
            module: module.to_string(),
            name: T::NAME.to_string(),
            data: serde_json::to_value(message)?,
            alerting: message.alerting(),
            pi_event: message.pi_event(),
        })
    }

    /// The message of type `T`, when this is one (data under `T`'s name that does not read as
    /// `T` is logged and skipped).
    pub fn decode<T: BusMessage>(&self) -> Option<T> {
        let BusEvent::Module { name, data, .. } = self else {
            return None;
        };
        if name != T::NAME {
            return None;
        }
        T::deserialize(data)
            .map_err(|err| tracing::warn!("bus: {name} from another schema: {err}"))
            .ok()
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

    /// Sends to every current subscriber; returns how many there were (none is fine).
    pub fn send(&self, event: BusEvent) -> usize {
        self.sender.send(event).unwrap_or(0)
    }

    /// Publishes `module`'s message under its name.
    pub fn publish<T: BusMessage>(&self, module: &str, message: &T) -> usize {
        match BusEvent::message(module, message) {
            Ok(event) => self.send(event),
            Err(err) => {
                tracing::error!("bus: {} from {module} has no JSON form: {err}", T::NAME);
                0
            }
        }
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

    /// A message of the tests: a number.
    #[derive(Serialize, serde::Deserialize)]
    struct Count(u64);

    impl BusMessage for Count {
        const NAME: &'static str = "e";
    }

    fn ready(name: &str) -> ModuleReady {
        ModuleReady(ModuleAnnouncement {
            name: name.into(),
            version: "1".into(),
            commands: Vec::new(),
            tools: Vec::new(),
        })
    }

    #[tokio::test]
    async fn every_subscriber_gets_every_event_and_none_is_fine() -> anyhow::Result<()> {
        let bus = EventBus::new();
        assert_eq!(bus.publish("tasks", &Count(0)), 0);
        let mut first = bus.subscribe();
        let mut second = bus.clone().subscribe();
        assert_eq!(bus.publish("info", &ready("info")), 2);
        for receiver in [&mut first, &mut second] {
            match receiver.recv().await? {
                BusEvent::Module {
                    module, name, data, ..
                } => {
                    assert_eq!(
                        (module.as_str(), name.as_str()),
                        ("info", ModuleReady::NAME)
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
            bus.publish("m", &Count(n));
        }
        assert!(matches!(
            slow.recv().await,
            Err(broadcast::error::RecvError::Lagged(3))
        ));
        assert!(matches!(slow.recv().await, Ok(BusEvent::Module { data, .. }) if data == json!(3)));
    }

    /// Other Pi extensions compare the name with Unipi's package names.
    #[test]
    fn pi_hears_a_module_under_its_unipi_package_name() {
        let tasks = ready("tasks").pi_event().unwrap();
        assert_eq!(
            (&tasks["name"], &tasks["module"]),
            (&json!("@pi-unipi/background-tasks"), &json!("tasks"))
        );
        let gone = ModuleGone(ready("helpers").0).pi_event().unwrap();
        assert_eq!(gone["name"], "@pi-unipi/subagents");
        assert_eq!(ready("fusion").pi_event().unwrap()["name"], "fusion");
    }

    #[test]
    fn a_message_reads_back_under_its_own_name_only() {
        let event = BusEvent::message("info", &ready("info")).unwrap();
        assert_eq!(event.decode::<ModuleReady>(), Some(ready("info")));
        assert_eq!(event.decode::<ModuleGone>(), None);
        let other_schema = BusEvent::Module {
            module: "x".into(),
            name: ModuleReady::NAME.into(),
            data: json!({"name": 1}),
            alerting: None,
            pi_event: None,
        };
        assert_eq!(other_schema.decode::<ModuleReady>(), None);
    }
}

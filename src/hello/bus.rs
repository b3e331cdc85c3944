//! What hello publishes on the bus, and what the notifications make of it.

use serde::{Deserialize, Serialize};

use crate::bridge::{AlertPriority, Alerting, BusMessage};

/// Hello waved: `unipi:hello:waved {waves}` (how many times so far).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HelloWaved {
    pub waves: u64,
}

impl BusMessage for HelloWaved {
    const NAME: &'static str = "unipi:hello:waved";

    fn alerting(&self) -> Option<Alerting> {
        Some(Alerting::alert(
            "hello_waved",
            "Hello",
            format!("Hello waved ({} so far)", self.waves),
            AlertPriority::Low,
        ))
    }
}

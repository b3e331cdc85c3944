//! Fusion's messages on the bus, under Unipi's names: the status it publishes (the one way other
//! capabilities learn the pair), the request to publish it again, and the model usage others
//! report to it. The last two are published by others (the helpers), but they are fusion's
//! protocol, so they live here: the helpers import these messages, never fusion's code, and
//! fusion imports nothing of theirs.

use serde::{Deserialize, Serialize};

use crate::bridge::BusMessage;

/// Model fusion's pair, fallback, warm pool and savings, whenever they change (and when asked):
/// `unipi:fusion:status {active, preset, primary, sidekick, fallback, pool, savings}`. A field
/// left out reads as its default (off, none, zero), so a reader needs only what it uses.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct FusionStatus {
    /// A pair is in force.
    pub(crate) active: bool,
    pub(crate) preset: Option<String>,
    /// `provider/id`.
    pub(crate) primary: Option<String>,
    /// `provider/id`: the model of every helper that names none.
    pub(crate) sidekick: Option<String>,
    /// While the primary is rate-limited.
    pub(crate) fallback: Option<FusionFallback>,
    /// The warm pool's limits, while a pair is in force.
    pub(crate) pool: Option<FusionPool>,
    pub(crate) savings: FusionSavings,
}

/// `{model, untilMs}`
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FusionFallback {
    pub(crate) model: String,
    pub(crate) until_ms: u64,
}

/// `{size, idleSeconds}`
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FusionPool {
    pub(crate) size: usize,
    pub(crate) idle_seconds: u64,
}

/// `{session, allTime}`
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FusionSavings {
    pub(crate) session: SavingsTotals,
    pub(crate) all_time: SavingsTotals,
}

/// `{calls, tokens, sidekickCost, primaryCost, saved}`
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SavingsTotals {
    pub(crate) calls: u64,
    pub(crate) tokens: u64,
    pub(crate) sidekick_cost: f64,
    pub(crate) primary_cost: f64,
    pub(crate) saved: f64,
}

/// Asks fusion to publish its status again: `unipi:fusion:status:query` (no data), from a
/// module that subscribed after it did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FusionStatusQuery;

/// A model call made by a Pi the workbench owns (a helper, a delegate): `unipi:model:usage
/// {source, id, model, usage}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ModelUsage {
    /// `helper`, …
    pub(crate) source: String,
    /// The run's id.
    pub(crate) id: String,
    /// `provider/id`.
    pub(crate) model: String,
    pub(crate) usage: UsageCounts,
}

/// `{input, output, cacheRead, cacheWrite, cost}`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UsageCounts {
    pub(crate) input: u64,
    pub(crate) output: u64,
    pub(crate) cache_read: u64,
    pub(crate) cache_write: u64,
    /// What Pi reported the call cost, if it did.
    pub(crate) cost: Option<f64>,
}

impl From<&crate::helpers::events::Usage> for UsageCounts {
    /// A call's usage as a side Pi reported it (its cost always known).
    fn from(usage: &crate::helpers::events::Usage) -> Self {
        UsageCounts {
            input: usage.input,
            output: usage.output,
            cache_read: usage.cache_read,
            cache_write: usage.cache_write,
            cost: Some(usage.cost),
        }
    }
}

impl BusMessage for FusionStatus {
    const NAME: &'static str = "unipi:fusion:status";
}

impl BusMessage for FusionStatusQuery {
    const NAME: &'static str = "unipi:fusion:status:query";

    /// A request between capabilities: nothing for other Pi extensions.
    fn pi_event(&self) -> Option<serde_json::Value> {
        None
    }
}

impl BusMessage for ModelUsage {
    const NAME: &'static str = "unipi:model:usage";
}

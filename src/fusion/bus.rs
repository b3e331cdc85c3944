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
pub struct FusionStatus {
    /// A pair is in force.
    pub active: bool,
    pub preset: Option<String>,
    /// `provider/id`.
    pub primary: Option<String>,
    /// `provider/id`: the model of every helper that names none.
    pub sidekick: Option<String>,
    /// While the primary is rate-limited.
    pub fallback: Option<FusionFallback>,
    /// The warm pool's limits, while a pair is in force.
    pub pool: Option<FusionPool>,
    pub savings: FusionSavings,
}

/// `{model, untilMs}`
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FusionFallback {
    pub model: String,
    pub until_ms: u64,
}

/// `{size, idleSeconds}`
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FusionPool {
    pub size: usize,
    pub idle_seconds: u64,
}

/// `{session, allTime}`
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FusionSavings {
    pub session: SavingsTotals,
    pub all_time: SavingsTotals,
}

/// `{calls, tokens, sidekickCost, primaryCost, saved}`
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SavingsTotals {
    pub calls: u64,
    pub tokens: u64,
    pub sidekick_cost: f64,
    pub primary_cost: f64,
    pub saved: f64,
}

/// Asks fusion to publish its status again: `unipi:fusion:status:query` (no data), from a
/// module that subscribed after it did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FusionStatusQuery;

/// A model call made by a Pi the workbench owns (a helper, a delegate): `unipi:model:usage
/// {source, id, model, usage}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelUsage {
    /// `helper`, …
    pub source: String,
    /// The run's id.
    pub id: String,
    /// `provider/id`.
    pub model: String,
    pub usage: UsageCounts,
}

/// `{input, output, cacheRead, cacheWrite, cost}`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageCounts {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// What Pi reported the call cost, if it did.
    pub cost: Option<f64>,
}

impl BusMessage for FusionStatus {
    const NAME: &'static str = "unipi:fusion:status";
}

impl BusMessage for FusionStatusQuery {
    const NAME: &'static str = "unipi:fusion:status:query";
}

impl BusMessage for ModelUsage {
    const NAME: &'static str = "unipi:model:usage";
}

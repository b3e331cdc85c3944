//! What the notifications put on the bus: each notification's outcome, under Unipi's name.

use serde::{Deserialize, Serialize};

use crate::bridge::BusMessage;

/// A notification went out: `unipi:notify:sent {eventType, platforms[], success, timestamp,
/// results[]}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct NotificationSent {
    /// The key of the event's settings (`agent_end`).
    pub(super) event_type: String,
    pub(super) platforms: Vec<String>,
    /// Every platform took it.
    pub(super) success: bool,
    /// When it was sent, in milliseconds since the epoch.
    pub(super) timestamp: u64,
    pub(super) results: Vec<PlatformResult>,
}

/// One platform's outcome: `{platform, success}`, with `suppressed` (why it was deliberately not
/// shown) or `error`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct PlatformResult {
    pub(super) platform: String,
    pub(super) success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) suppressed: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) error: Option<String>,
}

impl BusMessage for NotificationSent {
    const NAME: &'static str = "unipi:notify:sent";
}

//! What the notifications put on the bus: each notification's outcome, under Unipi's name.

use serde::{Deserialize, Serialize};

use crate::bridge::BusMessage;

/// A notification went out: `unipi:notify:sent {eventType, platforms[], success, timestamp,
/// results[]}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotificationSent {
    /// The key of the event's settings (`agent_end`).
    pub event_type: String,
    pub platforms: Vec<String>,
    /// Every platform took it.
    pub success: bool,
    /// When it was sent, in milliseconds since the epoch.
    pub timestamp: u64,
    pub results: Vec<PlatformResult>,
}

/// One platform's outcome: `{platform, success}`, with `suppressed` (why it was deliberately not
/// shown) or `error`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformResult {
    pub platform: String,
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suppressed: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl BusMessage for NotificationSent {
    const NAME: &'static str = "unipi:notify:sent";
}

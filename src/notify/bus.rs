//! What the notifications put on the bus: each notification's outcome, under Unipi's name.

use serde::{Deserialize, Serialize};

use serde_json::Value;

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

    /// Unipi's `timestamp` was an ISO 8601 string (`new Date().toISOString()`).
    fn pi_event(&self) -> Option<Value> {
        let mut data = serde_json::to_value(self).ok()?;
        data["timestamp"] = Value::String(crate::sys::time::iso_utc(self.timestamp));
        Some(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unipi's `timestamp` was `new Date().toISOString()`; the rest is the same.
    #[test]
    fn pi_hears_the_sent_notification_with_an_iso_timestamp() {
        let sent = NotificationSent {
            event_type: "agent_end".into(),
            platforms: vec!["ntfy".into()],
            success: true,
            timestamp: 1_796_225_775_042,
            results: Vec::new(),
        };
        let data = sent.pi_event().unwrap();
        assert_eq!(data["timestamp"], "2026-12-02T15:36:15.042Z");
        assert_eq!(data["eventType"], "agent_end");
        assert_eq!(data["platforms"], serde_json::json!(["ntfy"]));
    }
}

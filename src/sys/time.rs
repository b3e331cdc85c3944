//! Wall-clock time as plain integers, for timestamps written to files and shown in lists.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch; 0 if the clock is before it, `u64::MAX` far after it.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

/// Whole seconds since the Unix epoch; 0 if the clock is before it.
pub fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// `HH:MM:SS UTC` of a millisecond timestamp (when a task or a run started, in lists).
pub fn utc_clock(ms: u64) -> String {
    let secs = ms / 1000;
    format!(
        "{:02}:{:02}:{:02} UTC",
        (secs / 3600) % 24,
        (secs / 60) % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_clock_is_the_time_of_day() {
        assert_eq!(utc_clock(3_600_000), "01:00:00 UTC");
        assert_eq!(utc_clock(86_399_999), "23:59:59 UTC");
        assert_eq!(utc_clock(86_400_000 + 61_000), "00:01:01 UTC");
    }

    #[test]
    fn milliseconds_and_seconds_agree() {
        let (ms, secs) = (now_ms(), unix_seconds());
        // Taken a moment apart: the seconds are the milliseconds' or the next second.
        assert!(
            secs == ms / 1000 || secs == ms / 1000 + 1,
            "{ms} ms, {secs} s"
        );
        assert!(ms > 1_600_000_000_000, "the clock reads {ms}");
    }
}

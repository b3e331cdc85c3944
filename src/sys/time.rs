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

#[cfg(test)]
mod tests {
    use super::*;

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

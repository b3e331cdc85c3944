//! Wall-clock time as plain integers, for timestamps written to files and shown in lists, and
//! the one optional timer a `select!` loop arms only while it has a deadline.

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

/// Sleeps until `at`; never completes for `None`. A `select!` arm over it fires only while a
/// deadline is set, so a loop keeps its timers as `Option<Instant>`s and arms none when idle.
/// Takes tokio's or std's `Instant`.
pub async fn sleep_until_some<I: Into<tokio::time::Instant>>(at: Option<I>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
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

    #[tokio::test]
    async fn an_unset_deadline_never_fires_and_a_passed_one_does() {
        use futures_util::FutureExt;
        let unset = sleep_until_some(None::<tokio::time::Instant>);
        assert!(unset.now_or_never().is_none(), "an unset deadline fired");
        let passed = std::time::Instant::now();
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            sleep_until_some(Some(passed)),
        )
        .await
        .unwrap();
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

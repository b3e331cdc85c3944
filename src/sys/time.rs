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

/// The local time of day at `unix_secs` as `(hours, minutes, seconds)`, in the zone the C
/// library reads from `TZ` and `/etc/localtime`; UTC when it cannot tell.
pub fn local_time_of_day(unix_secs: u64) -> (u8, u8, u8) {
    let utc = || {
        let day = unix_secs % 86_400;
        // In range: each part is below 60 or 24.
        (
            (day / 3600) as u8,
            ((day / 60) % 60) as u8,
            (day % 60) as u8,
        )
    };
    let Some(tm) = local_tm(unix_secs) else {
        return utc();
    };
    let part = |value: i32| u8::try_from(value).unwrap_or(0);
    (part(tm.tm_hour), part(tm.tm_min), part(tm.tm_sec))
}

/// The C library's broken-down local time at `unix_secs` (`TZ` and `/etc/localtime` apply);
/// `None` when the time is out of range or the zone cannot be read.
fn local_tm(unix_secs: u64) -> Option<nix::libc::tm> {
    let time = nix::libc::time_t::try_from(unix_secs).ok()?;
    // SAFETY: `tm` is plain old data (all-zero is a valid value) that `localtime_r` fills in;
    // both pointers are valid for the call, and `localtime_r` (unlike `localtime`) keeps no
    // shared state.
    let mut tm: nix::libc::tm = unsafe { std::mem::zeroed() };
    let filled = unsafe { nix::libc::localtime_r(&time, &mut tm) };
    (!filled.is_null()).then_some(tm)
}

/// A millisecond timestamp as JavaScript's `Date.prototype.toISOString` writes it
/// (`2026-12-02T15:36:15.042Z`), for payloads other Pi extensions read as Unipi wrote them.
pub fn iso_utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (year, month, day) = civil_date(i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2));
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        (secs / 3600) % 24,
        (secs / 60) % 60,
        secs % 60,
        ms % 1000
    )
}

/// The proleptic Gregorian `(year, month, day)` of a day number (days since 1970-01-01):
/// Howard Hinnant's `civil_from_days`.
pub fn civil_date(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

/// The day number (days since 1970-01-01) of a proleptic Gregorian date: the inverse of
/// [`civil_date`] (Howard Hinnant's `days_from_civil`).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let shifted_month = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Milliseconds since the epoch of an ISO 8601 UTC timestamp as JavaScript writes it
/// (`2026-12-02T15:36:15.042Z`, the fraction optional); `None` for anything else.
pub fn parse_iso_utc(text: &str) -> Option<u64> {
    let text = text.strip_suffix('Z')?;
    let (date, time) = text.split_once('T')?;
    let mut date = date.splitn(3, '-').map(str::parse::<i64>);
    let (year, month, day) = (date.next()?.ok()?, date.next()?.ok()?, date.next()?.ok()?);
    let (clock, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let mut clock = clock.splitn(3, ':').map(str::parse::<i64>);
    let (hour, minute, second) = (
        clock.next()?.ok()?,
        clock.next()?.ok()?,
        clock.next()?.ok()?,
    );
    let valid = (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && (0..24).contains(&hour)
        && (0..60).contains(&minute)
        && (0..=60).contains(&second);
    if !valid || fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Milliseconds: the first three digits of the fraction, padded.
    let millis: i64 = format!("{fraction:0<3}")[..3].parse().ok()?;
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    u64::try_from(seconds * 1000 + millis).ok()
}

/// The local time zone's offset from UTC, in seconds east, at `ms` since the epoch (the C
/// library's `localtime_r`, so `TZ` and `/etc/localtime` apply); 0 when it cannot tell.
pub fn local_offset_seconds(ms: u64) -> i64 {
    let Some(tm) = local_tm(ms / 1000) else {
        return 0;
    };
    // `c_long`: the same type as `i64` on 64-bit targets only.
    #[allow(clippy::useless_conversion)]
    i64::from(tm.tm_gmtoff)
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
    fn iso_utc_is_what_javascript_writes() {
        // `new Date(ms).toISOString()` for each.
        for (ms, iso) in [
            (0, "1970-01-01T00:00:00.000Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (1_796_225_775_042, "2026-12-02T15:36:15.042Z"),
            (4_107_542_399_999, "2100-02-28T23:59:59.999Z"),
        ] {
            assert_eq!(iso_utc(ms), iso, "{ms}");
        }
    }

    #[test]
    fn iso_timestamps_parse_back_and_bad_ones_do_not() {
        for ms in [0, 951_782_400_000, 1_796_225_775_042, 4_107_542_399_999] {
            assert_eq!(parse_iso_utc(&iso_utc(ms)), Some(ms), "{ms}");
        }
        assert_eq!(
            parse_iso_utc("2026-12-02T15:36:15Z"),
            Some(1_796_225_775_000)
        );
        assert_eq!(
            parse_iso_utc("2026-12-02T15:36:15.5Z"),
            Some(1_796_225_775_500)
        );
        for bad in [
            "",
            "2026-12-02",
            "2026-12-02T15:36:15",
            "2026-13-02T15:36:15Z",
            "x-1-2T3:4:5Z",
        ] {
            assert_eq!(parse_iso_utc(bad), None, "{bad:?}");
        }
        for days in [-800_000, -1, 0, 1, 20_000, 2_000_000] {
            let (year, month, day) = civil_date(days);
            assert_eq!(days_from_civil(year, month, day), days);
        }
    }

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

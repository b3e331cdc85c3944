use std::path::PathBuf;

use serde_json::json;

use super::*;
use crate::sys::time::parse_iso_utc;

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sessions");
    std::fs::read_to_string(path.join(name)).unwrap()
}

/// A clock at an ISO time, `offset_h` hours east of UTC.
fn clock(iso: &str, offset_h: i64) -> Clock {
    Clock {
        now_ms: parse_iso_utc(iso).unwrap(),
        utc_offset_s: offset_h * 3600,
    }
}

fn aggregate(clock: &Clock, files: &[&str]) -> UsageStats {
    let mut usage = Aggregate::new(clock);
    for text in files {
        usage.add_file(text);
    }
    usage.stats
}

/// One assistant message as both Pi lines write it, at `iso` (the message's own timestamp).
fn reply(iso: &str, model: &str, input: u64, output: u64, cost: f64) -> String {
    let at = parse_iso_utc(iso).unwrap();
    json!({
        "type": "message", "id": "x", "parentId": null, "timestamp": iso,
        "message": {
            "role": "assistant", "content": [], "provider": "p", "model": model,
            "usage": {
                "input": input, "output": output, "cacheRead": 7, "cacheWrite": 0,
                "totalTokens": input + output + 7,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost}
            },
            "stopReason": "stop", "timestamp": at
        }
    })
    .to_string()
}

/// The recorded Pi 1.6.0 session (eleven replies from the scripted model on 2026-11-30,
/// 10:34:41-10:34:44 UTC): every reply counted, in each period that holds the day.
#[test]
fn a_recorded_pi_1x_session_is_counted_in_its_day_week_and_month() {
    let text = fixture("pi-1.6.0-greet.jsonl");
    let stats = aggregate(&clock("2026-11-30T12:00:00.000Z", 0), &[&text]);
    let want = Totals {
        input: 13_771,
        output: 242,
        cache_read: 0,
        cache_write: 0,
        cost: 0.044_943,
        calls: 11,
    };
    for (name, period) in [
        ("today", &stats.today),
        ("week", &stats.week),
        ("month", &stats.month),
        ("all", &stats.all),
    ] {
        let totals = &period.totals;
        assert_eq!(
            (totals.input, totals.output, totals.calls),
            (want.input, want.output, want.calls),
            "{name}"
        );
        assert!((totals.cost - want.cost).abs() < 1e-9, "{name}: {totals:?}");
        assert_eq!(totals.tokens(), 14_013, "{name}");
        assert_eq!(
            period.top_model().map(|(model, _)| model),
            Some("scripted-record")
        );
    }
    assert_eq!(stats.sessions, 1);

    // The next day (a Tuesday): not today any more, still this week and this month.
    let tuesday = aggregate(&clock("2026-12-01T00:00:01.000Z", 0), &[&text]);
    assert_eq!(tuesday.today.totals.calls, 0);
    assert_eq!(tuesday.week.totals.calls, 11);
    // December has begun: not this month.
    assert_eq!(tuesday.month.totals.calls, 0);
    assert_eq!(tuesday.all.totals.calls, 11);
    assert_eq!(tuesday.today.top_model(), None);
}

/// One `hello` turn recorded with each Pi line (Pi 0.73.1 at 23:22:03 UTC and Pi 1.6.0 at
/// 23:22:07 UTC on Wednesday 2026-12-02, by `suite::info_pi`): both lines' files are counted the
/// same way, and whether the turns were "today" depends on the time zone.
#[test]
fn both_pi_lines_sessions_are_counted_and_today_follows_the_time_zone() {
    let legacy = fixture("pi-0.73.1-hello.jsonl");
    let current = fixture("pi-1.6.0-hello.jsonl");
    let files = [legacy.as_str(), current.as_str()];
    let stats = aggregate(&clock("2026-12-02T23:59:00.000Z", 0), &files);
    let today = &stats.today.totals;
    assert_eq!((today.input, today.output, today.calls), (595 + 581, 24, 2));
    assert_eq!(today.tokens(), 607 + 593);
    assert!(
        (today.cost - (0.001_965 + 0.001_923)).abs() < 1e-9,
        "{today:?}"
    );
    assert_eq!(stats.sessions, 2);
    // Each line alone.
    for (text, tokens) in [(&legacy, 607), (&current, 593)] {
        let one = aggregate(&clock("2026-12-02T23:59:00.000Z", 0), &[text]);
        assert_eq!(one.today.totals.tokens(), tokens);
    }
    // Half past midnight UTC: yesterday's turns, still this week and this month (December).
    let after = aggregate(&clock("2026-12-03T00:30:00.000Z", 0), &files);
    assert_eq!(
        (
            after.today.totals.calls,
            after.week.totals.calls,
            after.month.totals.calls
        ),
        (0, 2, 2)
    );
    // An hour west it is still the 2nd: today's.
    let west = aggregate(&clock("2026-12-03T00:30:00.000Z", -1), &files);
    assert_eq!(west.today.totals.calls, 2);
}

/// A session forked from another holds copies of its parent's entries: each call counts once.
#[test]
fn a_forked_session_does_not_count_its_parents_calls_twice() {
    let text = fixture("pi-1.6.0-greet.jsonl");
    let stats = aggregate(&clock("2026-11-30T12:00:00.000Z", 0), &[&text, &text]);
    assert_eq!(stats.all.totals.calls, 11);
    // The copy added nothing, so it is not a session with usage of its own.
    assert_eq!(stats.sessions, 1);
}

/// Where today, the week and the month begin, in the local time zone.
#[test]
fn periods_begin_at_local_midnight_on_monday_and_on_the_first() {
    // Monday 2026-11-30 00:30 at UTC+2 is Sunday 22:30 UTC.
    let monday = clock("2026-11-30T00:30:00.000Z", 2);
    let lines = [
        // Sunday 23:59:59.999 local: last week (still November).
        reply("2026-11-29T21:59:59.999Z", "a", 1, 0, 0.0),
        // Monday 00:00 local: today, this week, this month.
        reply("2026-11-29T22:00:00.000Z", "b", 10, 0, 0.0),
        // The 1st of November 00:00 local: this month only.
        reply("2026-10-31T22:00:00.000Z", "c", 100, 0, 0.0),
        // October 31st 23:59 local: last month.
        reply("2026-10-31T21:59:00.000Z", "d", 1000, 0, 0.0),
    ]
    .join("\n");
    let stats = aggregate(&monday, &[&lines]);
    assert_eq!(stats.today.totals.input, 10);
    assert_eq!(stats.week.totals.input, 10);
    assert_eq!(stats.month.totals.input, 111);
    assert_eq!(stats.all.totals.input, 1111);

    // West of UTC the same instants fall on other days: at UTC-5 it is Sunday 19:30, so
    // the week began on Monday the 23rd at 05:00 UTC and the month on the 1st at 05:00 UTC.
    let west = clock("2026-11-30T00:30:00.000Z", -5);
    let stats = aggregate(&west, &[&lines]);
    assert_eq!(stats.today.totals.input, 11, "Sunday local, from 05:00 UTC");
    assert_eq!(stats.week.totals.input, 11);
    assert_eq!(
        stats.month.totals.input, 11,
        "the 1st began at 05:00 UTC there"
    );
    assert_eq!(stats.all.totals.input, 1111);
}

/// What counts: replies with tokens or a cost, and (Pi 1.x) usage entries and summaries; not
/// user messages, empty replies, broken lines or usage-less entries.
#[test]
fn only_model_work_is_counted() {
    let now = clock("2026-12-02T12:00:00.000Z", 0);
    let usage_entry = json!({
        "type": "usage", "id": "u", "parentId": null, "timestamp": "2026-12-02T10:00:00.000Z",
        "kind": "cache_warm", "provider": "anthropic", "model": "warm",
        "usage": {"input": 0, "output": 0, "cacheRead": 500, "cacheWrite": 0, "totalTokens": 500,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0.015, "cacheWrite": 0, "total": 0.015}}
    });
    let compaction = json!({
        "type": "compaction", "id": "c", "parentId": null, "timestamp": "2026-12-02T10:01:00.000Z",
        "summary": "s", "firstKeptEntryId": "c", "tokensBefore": 9,
        "usage": {"input": 40, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 42,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    });
    let user = json!({"type": "message", "timestamp": "2026-12-02T10:02:00.000Z",
        "message": {"role": "user", "content": "hi", "usage": {"input": 5}, "timestamp": 1}});
    let lines = [
        usage_entry.to_string(),
        compaction.to_string(),
        user.to_string(),
        reply("2026-12-02T10:03:00.000Z", "m", 0, 0, 0.0),
        "{not json".to_owned(),
        json!({"type": "message", "timestamp": "2026-12-02T10:04:00.000Z",
               "message": {"role": "assistant", "timestamp": 5}})
        .to_string(),
        reply("2026-12-02T10:05:00.000Z", "m", 3, 4, 0.5),
    ]
    .join("\n");
    let stats = aggregate(&now, &[&lines]);
    let today = &stats.today;
    assert_eq!(today.totals.calls, 3, "{today:?}");
    assert_eq!(
        (today.totals.input, today.totals.output),
        (43, 6),
        "{today:?}"
    );
    assert_eq!(today.totals.cache_read, 507);
    assert_eq!(
        today.models.keys().collect::<Vec<_>>(),
        ["m", "summaries", "warm"]
    );
    assert_eq!(today.top_model().map(|(model, _)| model), Some("m"));
}

#[test]
fn usage_is_read_from_every_session_folder_and_a_missing_one_has_none() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("--home-ada-project--");
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::write(
        nested.join("a.jsonl"),
        reply("2026-12-02T10:00:00.000Z", "m", 5, 5, 0.0),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("b.jsonl"),
        reply("2026-12-02T11:00:00.000Z", "m", 1, 1, 0.0),
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a session").unwrap();
    let now = clock("2026-12-02T12:00:00.000Z", 0);
    let stats = read_usage(dir.path(), &now);
    assert_eq!((stats.today.totals.tokens(), stats.sessions), (12, 2));
    let none = read_usage(&dir.path().join("missing"), &now);
    assert_eq!(none, UsageStats::default());
}

#[test]
fn costs_are_shown_as_unipi_did() {
    let cases = [
        (0.0, "$0.00"),
        (0.004, "<$0.01"),
        (0.01, "$0.01"),
        (1.235, "$1.24"),
    ];
    crate::test_table::check_table(cases, |cost| format_cost(*cost));
}

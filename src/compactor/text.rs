//! What the user sees of a recorded compaction: the toast after it, the `/unipi:compact-stats`
//! text, the overlay's model, and the UTC times they show. Pure functions of database rows.

use unipi_widgets::compactor::{CompactionModel, ManifestRow};
use unipi_widgets::dashboard::{InfoGroup, InfoRow};
use unipi_widgets::footer::format_tokens;

use super::pipeline::ManifestEntry;
use crate::sessiondb::{CompactionRecord, CompactionTotals};

/// The toast after a compaction: `🗜 Compacted 52.3k → 6.1k tokens · 9 blocks kept, 31
/// dropped · 12 ms`.
pub(crate) fn toast_text(record: &CompactionRecord) -> String {
    format!(
        "🗜 Compacted {} → {} tokens · {} blocks kept, {} dropped · {} ms",
        format_tokens(record.tokens_before),
        format_tokens(record.tokens_after),
        record.blocks_kept,
        record.blocks_dropped,
        record.duration_ms
    )
}

/// `2026-11-30 10:12 UTC` for milliseconds since the epoch.
pub(crate) fn format_utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let of_day = secs.rem_euclid(86_400);
    let (year, month, day) = crate::sys::time::civil_date(days);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        of_day / 3600,
        (of_day / 60) % 60
    )
}

/// `/unipi:compact-stats`: this session's and this project's totals and the last compaction.
pub(crate) fn stats_text(
    session: &CompactionTotals,
    project: &CompactionTotals,
    last: Option<&CompactionRecord>,
) -> String {
    let mut text = format!(
        "🗜 Compactor\nThis session: {}\nThis project: {}",
        totals_text(session),
        totals_text(project)
    );
    if let Some(last) = last {
        text.push_str(&format!("\nLast: {}", last_text(last)));
    }
    text
}

/// `2 compactions · 41.2k tokens saved`.
fn totals_text(totals: &CompactionTotals) -> String {
    let noun = if totals.count == 1 {
        "compaction"
    } else {
        "compactions"
    };
    format!(
        "{} {noun} · {} tokens saved",
        totals.count,
        format_tokens(totals.tokens_saved)
    )
}

/// When and why, the tokens before and after, what was summarized and how long it took.
fn last_text(last: &CompactionRecord) -> String {
    format!(
        "{} ({}) · {} → {} tokens · {} messages summarized · {} ms",
        format_utc(last.at_ms),
        last.reason,
        format_tokens(last.tokens_before),
        format_tokens(last.tokens_after),
        last.messages_summarized,
        last.duration_ms
    )
}

/// The compactor's tab in `/unipi:info`: the same figures as `/unipi:compact-stats`, or why
/// there are none (no recall database).
pub(crate) fn info_group(
    totals: Result<(CompactionTotals, CompactionTotals, Option<CompactionRecord>), String>,
) -> InfoGroup {
    let rows = match totals {
        Ok((session, project, last)) => {
            let mut rows = vec![
                InfoRow::new("This session", totals_text(&session)),
                InfoRow::new("This project", totals_text(&project)),
            ];
            if let Some(last) = last {
                rows.push(InfoRow::new("Last", last_text(&last)));
            }
            rows
        }
        Err(why) => vec![InfoRow::new("Unavailable", why)],
    };
    InfoGroup {
        id: "compactor".to_owned(),
        title: "Compaction".to_owned(),
        rows,
    }
}

/// The overlay's model for a recorded compaction.
pub(crate) fn view_model(record: &CompactionRecord) -> CompactionModel {
    // The stored manifest is the pipeline's, serialized by `record_for`.
    let manifest: Vec<ManifestEntry> =
        serde_json::from_str(&record.manifest_json).unwrap_or_default();
    CompactionModel {
        when: format!("{} · {}", format_utc(record.at_ms), record.reason),
        tokens_before: record.tokens_before,
        tokens_after: record.tokens_after,
        messages_summarized: record.messages_summarized,
        blocks_kept: record.blocks_kept,
        blocks_dropped: record.blocks_dropped,
        duration_ms: record.duration_ms,
        first_kept_entry_id: record.first_kept_entry_id.clone(),
        summary: record.summary.clone(),
        manifest: manifest
            .into_iter()
            .map(|row| ManifestRow {
                id: row.id,
                role: row.role,
                chars: row.chars,
                tool: row.tool,
            })
            .collect(),
        scroll: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compactor::hook::record_for;
    use crate::compactor::pipeline::{self, Compaction};
    use serde_json::Value;

    #[test]
    fn utc_times_format() {
        let cases = [
            (0, "1970-01-01 00:00 UTC"),
            (1_796_032_801_000, "2026-11-30 10:00 UTC"),
            (951_868_800_000 - 60_000, "2000-02-29 23:59 UTC"),
        ];
        for (ms, want) in cases {
            assert_eq!(format_utc(ms), want);
        }
    }

    #[test]
    fn stats_and_toast_texts() {
        let totals = |count, saved| CompactionTotals {
            count,
            tokens_saved: saved,
            last_at_ms: None,
        };
        let record = record_for(
            &Compaction {
                summary: "S".into(),
                details: Value::Null,
                first_kept_entry_id: "u2".into(),
                tokens_before: 52_300,
                manifest: pipeline::Manifest::default(),
                stats: pipeline::CompactionStats {
                    tokens_before: 52_300,
                    tokens_after: 6_100,
                    messages_summarized: 14,
                    messages_kept: 3,
                    blocks_kept: 9,
                    blocks_dropped: 31,
                    kept_user_turns: 1,
                    chars_per_token: 4.0,
                    duration: std::time::Duration::from_millis(12),
                },
            },
            "s",
            "manual",
            0,
        );
        assert_eq!(
            toast_text(&record),
            "🗜 Compacted 52.3k → 6.1k tokens · 9 blocks kept, 31 dropped · 12 ms"
        );
        assert_eq!(
            stats_text(&totals(1, 46_200), &totals(3, 120_000), Some(&record)),
            "🗜 Compactor\nThis session: 1 compaction · 46.2k tokens saved\n\
             This project: 3 compactions · 120k tokens saved\n\
             Last: 1970-01-01 00:00 UTC (manual) · 52.3k → 6.1k tokens · 14 messages summarized · 12 ms"
        );
        // The dashboard's tab says the same, a row a figure.
        let group = info_group(Ok((totals(1, 46_200), totals(3, 120_000), Some(record))));
        let rows: Vec<(&str, &str)> = group
            .rows
            .iter()
            .map(|row| (row.label.as_str(), row.value.as_str()))
            .collect();
        assert_eq!(
            rows,
            [
                ("This session", "1 compaction · 46.2k tokens saved"),
                ("This project", "3 compactions · 120k tokens saved"),
                (
                    "Last",
                    "1970-01-01 00:00 UTC (manual) · 52.3k → 6.1k tokens · 14 messages summarized · 12 ms"
                ),
            ]
        );
        let without = info_group(Err("no recall database".to_owned()));
        assert_eq!(without.rows[0].value, "no recall database");
    }
}

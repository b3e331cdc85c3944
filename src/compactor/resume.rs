//! Restoring a summary Pi's session file lacks. When a session starts (startup, resume, fork)
//! and the database holds a summary of ours for it that the session's branch lacks — Pi crashed
//! after the hook answered but before it wrote the compaction — that summary is sent once as a
//! displayed `compactor-resume` message (appended to the session at once, so the model reads it
//! from the next turn on). When Pi's file has the compaction, Pi already puts the summary in the
//! context, so nothing is injected (it would only duplicate it).

use super::entries::{EntryKind, SessionEntry};
use super::ingest::iso_to_ms;
use crate::sessiondb::StoredCompaction;

/// The displayed message that re-injects a summary Pi's session file lacks.
pub(crate) const RESUME_TYPE: &str = "compactor-resume";

/// the branch lacks it (no compaction entry with that summary, no earlier re-injection of it,
/// no newer compaction) and the branch is the one it was made for (it holds the first kept
/// entry). See the module doc.
pub(crate) fn resume_summary(
    branch: &[SessionEntry],
    last: Option<&StoredCompaction>,
) -> Option<String> {
    let last = &last?.record;
    if last.summary.trim().is_empty()
        || !branch
            .iter()
            .any(|entry| entry.id == last.first_kept_entry_id)
    {
        return None;
    }
    let already_there = branch.iter().any(|entry| match &entry.kind {
        EntryKind::Compaction(compaction) => {
            compaction.summary == last.summary
                || entry
                    .timestamp
                    .as_deref()
                    .and_then(iso_to_ms)
                    .is_some_and(|at| at >= last.at_ms)
        }
        EntryKind::CustomMessage {
            custom_type, text, ..
        } => custom_type == RESUME_TYPE && *text == last.summary,
        _ => false,
    });
    (!already_there).then(|| last.summary.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compactor::entries;
    use crate::compactor::test_fixtures::{small_branch, small_branch_entries};
    use crate::sessiondb::CompactionRecord;
    use serde_json::{Value, json};

    fn stored(summary: &str, first_kept: &str, at_ms: i64) -> StoredCompaction {
        StoredCompaction {
            id: 1,
            record: CompactionRecord {
                session_id: "s".into(),
                at_ms,
                reason: "manual".into(),
                tokens_before: 10,
                tokens_after: 5,
                messages_summarized: 2,
                blocks_kept: 1,
                blocks_dropped: 1,
                duration_ms: 1,
                summary: summary.into(),
                first_kept_entry_id: first_kept.into(),
                manifest_json: "[]".into(),
            },
        }
    }

    #[test]
    fn resume_injects_only_a_summary_the_branch_lacks() {
        let branch = small_branch_entries();
        let with = |extra: Value| {
            let mut lines = small_branch();
            lines.push(extra);
            lines
                .iter()
                .filter_map(entries::parse_entry)
                .collect::<Vec<_>>()
        };
        let compaction = |summary: &str, timestamp: &str| {
            json!({"type": "compaction", "id": "k", "parentId": "a2", "timestamp": timestamp,
                   "summary": summary, "firstKeptEntryId": "u2", "tokensBefore": 9})
        };
        let resumed = json!({"type": "custom_message", "id": "r", "parentId": "a2",
                             "customType": RESUME_TYPE, "content": "S", "display": true});
        let late = 1_796_032_900_000;
        let cases = [
            ("no record", branch.clone(), None, None),
            (
                "crash before Pi wrote it",
                branch.clone(),
                Some(stored("S", "u2", late)),
                Some("S"),
            ),
            (
                "another branch",
                branch.clone(),
                Some(stored("S", "zz", late)),
                None,
            ),
            (
                "Pi wrote it",
                with(compaction("S", "2026-11-30T10:00:02.000Z")),
                Some(stored("S", "u2", late)),
                None,
            ),
            (
                "Pi compacted later itself",
                with(compaction("P", "2026-11-30T11:00:00.000Z")),
                Some(stored("S", "u2", late)),
                None,
            ),
            (
                "already re-injected",
                with(resumed),
                Some(stored("S", "u2", late)),
                None,
            ),
        ];
        for (name, branch, last, want) in cases {
            assert_eq!(
                resume_summary(&branch, last.as_ref()).as_deref(),
                want,
                "{name}"
            );
        }
    }
}

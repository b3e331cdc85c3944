//! What the compactor puts on the bus, under Unipi's name: a compaction Pi confirmed.

use serde::{Deserialize, Serialize};

use crate::bridge::BusMessage;
use crate::sessiondb::CompactionRecord;

/// A compaction the compactor's hook answered and Pi wrote: `unipi:compactor:compacted
/// {sessionId, summarized, kept, tokensSaved, compressionRatio}` (Unipi's fields: messages
/// summarized, blocks kept, `"56:1"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CompactorCompacted {
    session_id: String,
    summarized: u64,
    kept: u64,
    tokens_saved: u64,
    compression_ratio: String,
}

impl CompactorCompacted {
    /// What `record` says of the compaction.
    pub(crate) fn of(record: &CompactionRecord) -> Self {
        Self {
            session_id: record.session_id.clone(),
            summarized: record.messages_summarized,
            kept: record.blocks_kept,
            tokens_saved: record.tokens_before.saturating_sub(record.tokens_after),
            compression_ratio: Self::ratio(record.tokens_before, record.tokens_after),
        }
    }

    /// `before:after` as Unipi wrote it: tokens before per token after, rounded, `:1`.
    fn ratio(tokens_before: u64, tokens_after: u64) -> String {
        let after = tokens_after.max(1);
        format!("{}:1", tokens_before.saturating_add(after / 2) / after)
    }
}

impl BusMessage for CompactorCompacted {
    const NAME: &'static str = "unipi:compactor:compacted";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ratio_is_tokens_before_per_token_after() {
        assert_eq!(CompactorCompacted::ratio(56_000, 1_000), "56:1");
        assert_eq!(CompactorCompacted::ratio(1_500, 1_000), "2:1");
        assert_eq!(CompactorCompacted::ratio(10, 0), "10:1");
    }
}

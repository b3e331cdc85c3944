//! Why the pipeline compacts nothing. Its own file because the cut finds these and the pipeline,
//! the hook and the tests all name them: a leaf both sides import, so `cut` and `pipeline` do not
//! import each other.

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("compactor: Nothing to compact (no live messages).")]
    NoLiveMessages,
    #[error("compactor: Too few messages to compact.")]
    TooFewMessages,
    #[error("compactor: Cannot compact — no user message found.")]
    NoUserMessage,
    #[error("compactor: No valid cut — the turns to keep already cover the whole session.")]
    NoValidCut,
}

impl Refusal {
    /// An overflow must shrink the context, so Pi's own compaction gets its turn; a manual or
    /// threshold compaction is cancelled with the warning instead.
    pub(crate) fn lets_pi_retry(&self, overflow: bool) -> bool {
        overflow
    }
}

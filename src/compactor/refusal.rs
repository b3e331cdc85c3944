//! Why the compactor declines to compact. The cut finds most of these and the pipeline returns
//! them; they live in a file of their own so the two need not import each other.

/// A reason not to compact, worded for the user.
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
    pub fn lets_pi_retry(&self, overflow: bool) -> bool {
        overflow
    }
}

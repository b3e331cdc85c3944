//! Deterministic compaction: Pi's `session_before_compact` answered with a zero-LLM structured
//! summary (the pipeline), the auto-compaction decision, and the module that ties them to the
//! bridge, the session database and the workbench.

pub mod auto;
pub mod brief;
mod capability;
pub mod cut;
pub mod entries;
pub mod format;
pub mod ingest;
pub mod module;
pub mod normalize;
pub mod pipeline;
pub mod refusal;
pub mod reindex;
pub mod sections;
pub mod view;

pub use capability::REGISTRATION;

//! Deterministic compaction: Pi's `session_before_compact` answered with a zero-LLM structured
//! summary (the pipeline), the auto-compaction decision, and the module that ties them to the
//! bridge, the session database and the workbench.
//!
//! The pipeline, pure: `entries` → `cut` (with `refusal`) → `normalize` → `brief`, `sections` →
//! `format`, run end to end by `pipeline`. Around it: `config`, `command` (the marker), `hook`,
//! `recall`, `text`, `resume`, `auto`, `ingest` and `reindex` (the database side), all pure or
//! self-contained; `module` holds the state and the bridge `Module`; `capability` and `view` the
//! workbench side.

pub mod auto;
pub mod brief;
mod capability;
pub mod command;
pub mod config;
pub mod cut;
pub mod entries;
pub mod format;
pub mod hook;
pub mod ingest;
pub mod module;
pub mod normalize;
pub mod pipeline;
pub mod recall;
pub mod refusal;
pub mod reindex;
pub mod resume;
pub mod sections;
#[cfg(test)]
mod test_fixtures;
pub mod text;
pub mod view;

pub use capability::REGISTRATION;

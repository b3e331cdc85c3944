//! Structured workflow: the `/unipi:*` development steps (brainstorm → plan → work → review and
//! the rest), each handing the model a skill and restricting its tools while it runs; the
//! documents those steps write under `.unipi/docs/`; the kanban board that shows them as cards,
//! live; and the optional autonomous loop (ralph). See `docs/workflow.md`.

pub mod board;
pub mod bus;
mod capability;
pub mod commands;
pub mod docs;
mod footer;
pub mod levels;
pub mod milestone;
pub mod module;
pub mod ralph;
mod ralph_run;
pub mod refs;
pub mod run;
pub mod skills;

pub use capability::REGISTRATION;

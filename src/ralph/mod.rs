//! The model-driven loop (Unipi's ralph): the model starts a loop over a task with `ralph_start`
//! and ends each iteration with `ralph_done`; the workbench queues the next iteration (a
//! reflection turn every N), ends the loop when the model answers `<promise>COMPLETE</promise>`
//! or the limit is reached, and keeps each loop's state in `.unipi/ralph/` (crash-safe), so a
//! loop outlives the workbench. `/unipi:ralph start|stop|resume|status|list|cancel|archive|clean|
//! nuke` works on those files; the footer shows `rl:<name> i/max`. The plan loop of
//! `/unipi:ralph-start plan:<file>` is the workflow's (`crate::workflow::ralph`).

mod args;
mod capability;
mod commands;
mod engine;
mod prompt;
mod state;
mod tools;

pub use capability::REGISTRATION;

//! Helper agents: child `pi --mode rpc` processes that the primary agent fans work out to.
//! `agents` knows the agent types (built-in and user-defined) and turns one into Pi arguments;
//! `events` reads the child's JSON event stream into typed events and a run summary; `budget`
//! decides when a budget steers or aborts; `args` reads `spawn_helper`'s arguments. These are pure
//! (no processes, no tasks) so the runner, the tools and the dock share and table-test them.
//! `runner` launches one helper as a child process and watches it to the end (its process
//! groups, stops and durable writes come from [`crate::sys`], shared with every other owner of a
//! child).
//! `module` is the bridge module with the tools on top, with its management `actions`, workflow
//! scripts (`workflow`), the `supervisor` channel and the `acceptance` gate beside it. `board` is
//! where runs meet the dock: rows and per-run controls, owned by neither side. See
//! `docs/helpers.md`.

pub mod acceptance;
mod actions;
pub mod agents;
pub mod args;
pub mod board;
pub mod budget;
pub mod events;
pub mod module;
pub mod run_status;
pub mod runner;
pub mod supervisor;
pub mod workflow;

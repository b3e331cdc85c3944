//! Helper agents: child `pi --mode json -p …` processes that the primary agent fans work out to.
//! This module owns what a helper is made of, independent of how it is launched or shown:
//! `agents` knows the agent types (built-in and user-defined) and turns one into Pi arguments;
//! `events` reads the child's JSON event stream into typed events and a run summary. Both are
//! pure (no processes, no tasks) so the runner, the tools and the dock can share and test them.
//! `runner` launches one helper as a child process and watches it to the end; `sys` holds the
//! durable-write and process-group primitives it shares with the background-task service.
//! `module` is the bridge module with the `spawn_helper` / `get_helper_result` tools on top.

pub mod agents;
pub mod events;
pub mod module;
pub mod runner;
pub(crate) mod sys;

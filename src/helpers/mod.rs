//! Helper agents: child `pi --mode rpc` processes that the primary agent fans work out to.
//! `agents` knows the agent types (built-in and user-defined) and turns one into Pi arguments;
//! `events` reads the child's JSON event stream into typed events and a run summary; `budget`
//! decides when a budget steers or aborts; `args` reads `spawn_helper`'s arguments. These are pure
//! (no processes, no tasks) so the runner, the tools and the dock share and table-test them.
//! `spec` says what a run is (program, agent, task, run directory, session, limits) for both the
//! runner and the warm pool. `runner` launches one helper as a child process and watches it to
//! the end (its process groups, stops and durable writes come from [`crate::sys`], shared with
//! every other owner of a child).
//! `module` is the bridge module's tool surface. Behind it, `service` starts and finishes runs,
//! with its management `actions`, workflow scripts (`workflow`), the `supervisor` channel and the
//! `acceptance` gate beside it; `ledger` keeps the counters, runs and open questions behind one
//! lock (reached through its methods); `config`, `preflight`, `results`, `names`, `runs` and
//! `run_status` are the configuration, the checks before a spawn, what the model reads, the
//! names, and the plain records of callers and runs. `orphans` settles the runs an earlier
//! workbench left unfinished on disk.
//! Model fusion reaches the helpers over the bus only: `sidekick` follows its status, `pool`
//! keeps idle sidekick Pis ready while fusion is on, and `warm` is a launch as a value and a Pi
//! started ahead of its task. `bus` is what the helpers publish.
//! `board` is where runs meet the dock: rows and per-run controls, owned by neither side; `dock`
//! turns the board into the dock's section and carries out its requests. See `docs/helpers.md`.

pub mod acceptance;
mod actions;
pub mod agents;
pub mod args;
pub mod board;
pub mod budget;
pub mod bus;
mod capability;
pub mod config;
pub mod dock;
pub mod events;
mod ledger;
pub mod module;
mod names;
mod orphans;
mod pool;
mod preflight;
mod results;
pub mod run_status;
pub mod runner;
mod runs;
mod service;
mod sidekick;
pub mod spec;
pub mod supervisor;
pub mod warm;
pub mod workflow;

pub use capability::REGISTRATION;

//! unipi-tui: a terminal workbench that runs the Pi coding agent in a PTY pane and draws native
//! widgets around it. The binary (`src/main.rs`) is a thin wrapper over [`run`]; everything lives
//! in this library so integration tests and benchmarks can reach the pieces.

// A `pub` item must be reachable from the crate root; one used only inside the crate is
// `pub(crate)` (or narrower), so the compiler finds it when it becomes dead code.
#![warn(unreachable_pub)]

pub mod app;
pub mod askuser;
pub mod bridge;
pub mod btw;
pub mod capability;
pub mod cli;
pub mod compactor;
pub mod config;
pub mod delegate;
pub mod demo;
pub mod detach;
#[cfg(test)]
mod dock_tests;
pub mod doctor;
pub mod fusion;
pub mod headless;
#[cfg(test)]
pub mod hello;
pub mod helpers;
pub mod http;
pub mod info;
#[cfg(test)]
mod layering;
pub mod manual;
pub mod mcp;
pub mod migrate;
pub mod notify;
pub mod pane;
pub mod pi;
pub mod ralph;
pub mod scripted;
pub mod sessiondb;
pub mod sys;
pub mod tasks;
pub mod term;
#[cfg(test)]
pub(crate) mod test_table;
#[cfg(test)]
pub(crate) mod test_wait;
pub mod text;
pub mod views;
pub mod web;
pub mod workflow;

pub use cli::run;

/// Snapshot into the top-level `snapshots/` folder (one folder for the whole workspace; the
/// module path stays in the file name so names are unique). Only for tests.
#[cfg(test)]
#[macro_export]
macro_rules! assert_ui_snapshot {
    ($name:expr, $value:expr) => {{
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"));
        settings.bind(|| insta::assert_snapshot!($name, $value));
    }};
}

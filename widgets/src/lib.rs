//! Pure ratatui widgets for unipi-tui. Each widget renders a plain view-model struct into a
//! `Buffer`: no I/O, no tasks, no global state — which is what makes every one of them
//! snapshot-testable.

// A `pub` item must be reachable from the crate root; one used only inside the crate is
// `pub(crate)` (or narrower), so the compiler finds it when it becomes dead code.
#![warn(unreachable_pub)]

pub mod agents;
pub mod ask;
pub mod btw;
pub mod compactor;
pub mod dashboard;
pub mod dock;
pub mod doctor;
pub mod footer;
pub mod fusion;
pub mod hello;
pub mod help;
pub mod info;
pub mod kanban;
pub mod mcp;
pub mod notice;
pub mod overlay;
pub mod pending;
pub mod scrollback;
pub mod settings;
pub mod tasks;
pub mod text;
pub mod theme;

pub use theme::Theme;

#[cfg(test)]
mod test_support;

/// Snapshot into the workspace's top-level `snapshots/` folder. Only for tests.
#[cfg(test)]
#[macro_export]
macro_rules! assert_ui_snapshot {
    ($name:expr, $value:expr) => {{
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/../snapshots"));
        settings.bind(|| insta::assert_snapshot!($name, $value));
    }};
}

//! The system layer: child processes in process groups of their own and how they are stopped,
//! the watchdog that kills them when the workbench dies without stopping them, what `/proc` says
//! about a process (named by pid and start time), crash-safe file writes, writes kept inside one
//! directory (links followed, never out of it), listing a directory's files of one kind, the
//! clock, random names, the signals a foreground loop waits on, the poison-tolerant mutex
//! lock and the "something changed" signal.
//!
//! Every module that starts a process, replaces a file or stamps a time goes through here rather
//! than keeping its own copy, so each of these has one meaning: a group is alive until its last
//! member is reaped (a member we may not signal still counts), a stop is SIGTERM → grace →
//! SIGKILL → wait until the group is empty, and a replaced file is the old one or the new one,
//! never half of either. Nothing here knows about Pi, the bridge or the UI.

pub mod changed;
pub mod confine;
pub mod fs;
pub mod group;
pub mod listing;
pub mod path_trust;
pub mod private_dir;
pub mod process;
pub(crate) mod procfs;
pub mod random;
pub mod signals;
pub mod sweep;
pub mod sync;
pub mod time;
pub(crate) mod tree;
pub mod watchdog;

pub use changed::Changed;
pub use fs::{replace_if_unchanged, write_atomic, write_new_atomic};
pub use group::{ProcessGroup, group_alive};
pub use listing::files_with_extension;
pub use process::{
    CurrentGroup, GroupGuard, GroupStop, Reach, SpawnGrouped, StopOutcome, hang_up_group,
    stop_group,
};
pub use procfs::ProcessId;
pub use random::random_u64;
pub use sync::lock;
pub use time::{now_ms, sleep_until_some, unix_seconds, utc_clock};

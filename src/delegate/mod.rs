//! Read-only delegates: `bg_delegate` starts one child agent, seeded with a frozen projection of
//! the calling agent's conversation, that may only read, search and list; `bg_result` returns
//! its answer after verifying it against what was launched. The parent and the child share no
//! memory, only a task directory under `<workspace>/.unipi/delegate/<session>-<pid>/<task-id>/`,
//! so every claim the child makes (task, nonce, seed, route, answer hash) is checked from disk.
//!
//! `seed` builds the projection and its sha256; `artifacts` owns the files, the manifest's state
//! machine, verification and the inline-or-artifact delivery rule; `errors` the typed codes with
//! remediation; `child` is the `unipi-tui __delegate-child` process; `config` reads the
//! `delegate` defaults. `module` is the bridge module with both tools; `host` is what it needs
//! from the app (models, where notices go, settings); `args` reads the tools' arguments and
//! `route` pins the model. Behind the module, `service` holds the state and answers
//! `bg_result`, `launch` runs the preflight and writes the task directory, `supervise` follows
//! the child to its exit and `adjudicate` decides and records its outcome; `report` words what
//! the model reads (receipt, result views, the `delegate-result-notification`).

mod adjudicate;
mod args;
pub mod artifacts;
pub mod canonical;
pub mod child;
pub mod config;
pub mod errors;
mod host;
mod launch;
pub mod module;
mod report;
mod route;
pub mod seed;
mod service;
mod supervise;

pub use child::CHILD_SUBCOMMAND;
pub use config::DelegateConfig;
pub use errors::{DelegateError, DelegateErrorCode};
pub use module::{
    ChannelHost, DelegateHost, DelegateModule, DelegateSettings, NOTIFICATION_TYPE, ParentSession,
};

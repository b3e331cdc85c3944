//! Model fusion: the user pairs an expensive primary model with a cheaper sidekick; side work
//! goes to the sidekick and the footer shows what that saved.
//!
//! - `config.rs`: the presets file (`~/.unipi/config/fusion.json`, workspace override).
//! - `engine.rs`: applying a pair (the primary through the bridge, the sidekick runtime), the
//!   savings of every call the sidekick serves, the fallback while the primary is rate-limited,
//!   session naming, and the status published on the event bus (`unipi:fusion:status`) — which is
//!   how the helpers, the footer and later modules learn the pair, never by importing this.
//! - `bus.rs`: fusion's messages on the bus (the status, the query for it, the model usage others
//!   report).
//! - `runtime.rs`: the sidekick's own long-lived Pi in RPC mode (session names). `/btw`
//!   (`crate::btw`) runs one of its own on whichever model answers it; this and `bus.rs` are the
//!   parts of fusion other capabilities import.
//! - `savings.rs`, `fuzzy.rs`, `fallback.rs`: the pure parts (arithmetic, the picker's filter,
//!   which errors are rate limits).
//! - `picker.rs`, `presets_view.rs`: the views (the status is a read-only pager); `module.rs` the
//!   bridge module; `capability.rs` the registration and the commands; `side.rs` the naming prompt.
//!
//! `docs/fusion.md` describes it for users.

pub mod bus;
mod capability;
pub mod config;
pub mod engine;
pub mod fallback;
pub(crate) mod fuzzy;
pub mod ledger;
pub mod module;
pub mod picker;
pub(crate) mod presets_view;
pub mod runtime;
pub mod savings;
pub mod side;

pub use capability::REGISTRATION;

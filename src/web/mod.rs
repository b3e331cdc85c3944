//! Web smart-fetch: the agent reads web pages as clean markdown despite redirects, messy HTML
//! and non-HTML content, one URL at a time or many in a bounded pool, with a response cache on
//! disk. Failures are typed ([`error::FetchError`]: code, phase, retryable) so the agent knows
//! whether to try again. Private and loopback addresses are refused unless the user allows them
//! ([`guard`]). See `docs/web.md`.
//!
//! The flow: [`module`] (tools, arguments) → [`fetch`] (URL checks, requests, redirects, body)
//! → [`content`] and [`charset`] (what the body is, as text) → [`extract`] (HTML's main content
//! and metadata) → [`format`](mod@format) (truncation and what the model reads).

pub mod batch;
pub mod cache;
mod capability;
pub mod charset;
pub mod config;
pub mod content;
pub mod error;
pub mod extract;
pub mod fetch;
pub mod format;
pub mod guard;
pub mod module;
mod names;
pub mod page;
pub mod search;
#[cfg(test)]
mod search_tool_tests;
mod settings;

pub use capability::REGISTRATION;

//! Notifications that reach the user wherever they are: on the desktop, on a phone (ntfy,
//! Gotify, Telegram), or in the terminal they reached over SSH. The router (`routing`) follows
//! the event bus and the screen — the agent done, the agent needing input (an `ask_user`
//! question, or Pi's own `blocked` status), a background task or helper finished, an MCP server
//! failed, a compaction done, an error — and decides what to send and when (silence after recent
//! input; no "done" while a background task will wake the agent). The dispatcher (`dispatch`)
//! sends to the platforms (`platforms`) in parallel under a timeout and announces the outcome
//! (`unipi:notify:sent`). Settings are the original's files (`config`), edited by
//! `/unipi:notify-settings` (`settings`); `notify_user` and `/unipi:notify-test` are in `module`.

mod capability;
pub mod config;
pub mod dispatch;
pub mod module;
pub mod platforms;
pub mod routing;
pub mod settings;

#[cfg(test)]
mod tests;

pub use capability::REGISTRATION;

//! Notifications that reach the user wherever they are: on the desktop, on a phone (ntfy,
//! Gotify, Telegram), or in the terminal they reached over SSH. The router (`routing`) follows
//! the event bus and the screen — Pi's own events (the agent done, an error, a compaction done,
//! Pi's `blocked` status) and the alerts other capabilities attach to their bus messages (an
//! `ask_user` question, a background task or helper finished, an MCP server failed, …; see
//! [`crate::bridge::Alerting`]) — and decides what to send and when (silence after recent input;
//! no "done" while work will wake the agent). The dispatcher (`dispatch`) sends to the platforms
//! (`platforms`) in parallel under a timeout and announces the outcome (`bus`,
//! `unipi:notify:sent`). Settings are the original's files (`config`), edited by
//! `/unipi:notify-settings` (`settings`), or one platform at a time by `/unipi:notify-set-ntfy`,
//! `-set-gotify` and `-set-tg` (`setup`); `notify_user` and `/unipi:notify-test` are in `module`.

mod bus;
mod capability;
pub mod config;
pub mod dispatch;
mod footer;
mod info;
pub mod module;
pub mod platforms;
pub mod routing;
pub mod settings;
mod setup;

#[cfg(test)]
mod tests;

pub use capability::REGISTRATION;

/// The key of the needs-input event's settings (Unipi's name), under which Pi's own `blocked`
/// status alerts; a capability's question may alert under it too (it names the key it alerts
/// under).
const NEEDS_INPUT: &str = "ask_user_prompt";

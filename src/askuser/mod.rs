//! Ask-user: the agent blocks for a human decision instead of guessing. The `ask_user` tool
//! (`module`) validates a call (`params`), queues it (`queue`) and waits; the question appears as
//! a native modal over the pane (`view`, drawn by `unipi_widgets::ask`; its answering logic is
//! the pure `form`), and the answer goes back to the model in the original's words and shapes
//! (`response`). Settings live in `~/.unipi/config/ask-user.json` (`config`). The module
//! announces each question on the event bus (`bus`: `unipi:ask-user:prompt`, with the alert
//! that reaches a user who is away) and its settling.

pub mod bus;
mod capability;
pub mod config;
pub mod form;
pub mod module;
pub mod params;
pub mod queue;
pub mod response;
pub mod view;

pub use capability::REGISTRATION;

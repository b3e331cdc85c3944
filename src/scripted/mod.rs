//! The scripted model: an OpenAI-compatible chat-completions server that answers from a scenario
//! file instead of a real provider. It backs every end-to-end test (the real Pi talks to it) and
//! `unipi-tui demo` (a newcomer sees the workbench work with no API key). Scenarios say "when the
//! last message matches X, reply with text Y or tool calls Z" (`scenario.rs`, format documented
//! there and in `demo.toml`); the server (`server.rs`) speaks the wire protocol and records what
//! the client sent. Pair it with [`crate::pi::offline::write_agent_dir`] to point Pi at it.

mod scenario;
mod server;

pub use scenario::{Outcome, Price, Reply, Role, Scenario, Selection, ToolCall, message_text};
pub use server::{ServedModel, ServerHandle, start, start_on};

#[cfg(test)]
pub(crate) use scenario::undocumented_keys;

/// The built-in demo scenario, embedded so `unipi-tui demo` needs no files on disk.
pub(crate) const BUILTIN_DEMO_TOML: &str = include_str!("demo.toml");

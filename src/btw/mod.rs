//! `/btw`: a side conversation beside the main one, which it never enters unless asked. A thread
//! overlay you keep talking in (`/btw <question>`), a tangent without the main context
//! (`/btw:tangent`), a fresh thread (`/btw:new`), dropping it (`/btw:clear`), and bringing the
//! thread or its summary into the main conversation (`/btw:inject`, `/btw:summarize`);
//! `--save` keeps an exchange as a markdown note. The thread is kept next to Pi's session file
//! and comes back when the session is resumed.
//!
//! - `thread.rs`: the thread, its prompts and hand-off messages, its file (pure, tested).
//! - `context.rs`: the excerpt of the main conversation a contextual thread is given.
//! - `notes.rs`: `--save`'s notes under `.unipi/btw/notes/`.
//! - `service.rs`: who answers (fusion's sidekick when it is on, else the main model, in a side Pi
//!   of its own), the commands' effects, the thread's file.
//! - `view.rs`: the overlay; its widget is `unipi_widgets::btw`.
//! - `capability.rs`: the registration and the commands.
//!
//! `docs/btw.md` describes it for users.

mod capability;
mod context;
mod notes;
mod service;
mod thread;
mod view;

pub use capability::REGISTRATION;

//! The outer terminal: raw input decoding and the set-up/restore of terminal modes.

pub mod input;
pub mod stdin;
pub mod tui;

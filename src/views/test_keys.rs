//! Key presses and user keymaps for view tests: every view's tests press keys and load a
//! `keymap.toml` the same way, so they live here once.

use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::config::keymap::{Keymap, keymap_from_sources};

/// `code` pressed without modifiers.
pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// The character `c` typed.
pub fn ch(c: char) -> KeyEvent {
    key(KeyCode::Char(c))
}

/// The keymap with a user `keymap.toml` of `toml`, which must load without errors.
#[track_caller]
pub fn user_keymap(toml: &str) -> Keymap {
    let (keymap, errors) = keymap_from_sources(Some((Path::new("/cfg/keymap.toml"), toml)));
    assert!(errors.is_empty(), "{errors:?}");
    keymap
}

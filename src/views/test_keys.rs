//! Key presses and user keymaps for view tests: every view's tests press keys and load a
//! `keymap.toml` the same way, so they live here once.

use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::config::keymap::{Key, Keymap, KeymapResult, keymap_from_sources};

/// `code` pressed without modifiers.
pub(crate) fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// The character `c` typed.
pub(crate) fn ch(c: char) -> KeyEvent {
    key(KeyCode::Char(c))
}

/// A press event for one key in keymap notation (the tests' key language, like helix's
/// `<C-x>` notation).
pub(crate) fn press(text: &str) -> KeyEvent {
    let key = Key::parse(text).unwrap();
    KeyEvent::new(key.code, key.modifiers)
}

/// The keymap with a user `/cfg/keymap.toml` of `toml`, and its load errors as text.
pub(crate) fn with_user(toml: &str) -> (Keymap, Vec<String>) {
    let (keymap, errors) = keymap_from_sources(Some((Path::new("/cfg/keymap.toml"), toml)));
    (keymap, errors.iter().map(ToString::to_string).collect())
}

/// The keymap with a user `keymap.toml` of `toml`, which must load without errors.
#[track_caller]
pub(crate) fn user_keymap(toml: &str) -> Keymap {
    let (keymap, errors) = with_user(toml);
    assert!(errors.is_empty(), "{errors:?}");
    keymap
}

/// Each `(toml, want)` loads with exactly one error, starting with `want`, and the keymap it
/// leaves still passes `still_works` (a bad entry is skipped, the defaults stay).
#[track_caller]
pub(crate) fn assert_each_reports_one_error(cases: &[(&str, &str)], still_works: impl Fn(Keymap)) {
    for (toml, want) in cases {
        let (keymap, errors) = with_user(toml);
        assert_eq!(errors.len(), 1, "{toml:?}: {errors:?}");
        assert!(
            errors[0].starts_with(want),
            "{toml:?}:\n got  {}\n want {want}",
            errors[0]
        );
        still_works(keymap);
    }
}

/// Each of `keys`, pressed alone, is bound to nothing in `keymap`: it goes through to Pi.
#[track_caller]
pub(crate) fn assert_unbound(keymap: &mut Keymap, keys: &[&str]) {
    for key in keys {
        assert_eq!(
            keymap.feed(&press(key)),
            KeymapResult::NotFound(vec![press(key)]),
            "{key}"
        );
    }
}

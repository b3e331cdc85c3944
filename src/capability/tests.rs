//! The seam composed: every registration's global actions bound by the default keymap, beside
//! the app's own, in the order F1 lists them; and the app routing their keys to the capability
//! that takes them (the app's own tests drive it, see `app::tests`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::Capability;
use crate::app::tests::{add_capability, make_app, screen, send, to_pi, view_titles};
use crate::config::keymap::{Action, Keymap, KeymapResult, keymap_from_sources};
use crate::views::test_keys::press;

/// The action a keymap file names (every one of these is declared).
fn named(name: &str) -> Action {
    Action::from_name(name).unwrap_or_else(|| panic!("no action {name:?}"))
}

#[test]
fn defaults_load_cleanly_and_list_every_action() {
    let (keymap, errors) = keymap_from_sources(None);
    assert!(errors.is_empty(), "{errors:?}");
    let bindings: Vec<(String, &str)> = keymap
        .bindings()
        .into_iter()
        .map(|(keys, action)| (keys, action.name()))
        .collect();
    let want = [
        ("F1", "help"),
        ("Alt+?", "help"),
        ("Shift+PgUp", "scroll.page_up"),
        ("Shift+PgDn", "scroll.page_down"),
        ("Alt+Shift+Up", "scroll.line_up"),
        ("Alt+Shift+Down", "scroll.line_down"),
        ("Shift+End", "scroll.live"),
        ("Shift+Down", "dock"),
        ("Ctrl+Alt+C", "tasks.clear_notices"),
        ("Alt+K", "board"),
        ("Ctrl+Alt+D", "session.detach"),
        ("Alt+M", "fusion.picker"),
        ("Alt+/", "btw.open"),
    ];
    let want: Vec<(String, &str)> = want.iter().map(|(k, a)| ((*k).to_owned(), *a)).collect();
    assert_eq!(bindings, want);
    assert_eq!(keymap.keys_for(Action::Help), ["F1", "Alt+?"]);
}

#[test]
fn default_keys_match_their_actions() {
    let mut keymap = Keymap::defaults();
    let cases = [
        ("f1", Action::Help),
        ("shift+pageup", Action::ScrollPageUp),
        ("shift+pagedown", Action::ScrollPageDown),
        ("alt+shift+up", Action::ScrollLineUp),
        ("alt+shift+down", Action::ScrollLineDown),
        ("shift+end", Action::ScrollLive),
        ("shift+down", Action::Dock),
        ("ctrl+alt+c", named("tasks.clear_notices")),
        ("ctrl+alt+d", named("session.detach")),
        ("alt+/", named("btw.open")),
    ];
    for (key, action) in cases {
        assert_eq!(
            keymap.feed(&press(key)),
            KeymapResult::Matched(action),
            "{key}"
        );
        assert!(!keymap.is_pending());
    }
    // Alt+? arrives with SHIFT from some terminals.
    let alt_question = KeyEvent::new(KeyCode::Char('?'), KeyModifiers::ALT | KeyModifiers::SHIFT);
    assert_eq!(
        keymap.feed(&alt_question),
        KeymapResult::Matched(Action::Help)
    );
}

#[test]
fn every_declared_default_key_parses_and_binds_its_action() {
    let mut keymap = Keymap::defaults();
    for action in crate::capability::global_actions() {
        for key in action.keys {
            let keys = crate::config::keymap::parse_sequence(key)
                .unwrap_or_else(|err| panic!("{}: {key}: {err}", action.name));
            let mut last = KeymapResult::Pending;
            for key in &keys {
                last = keymap.feed(&KeyEvent::new(key.code, key.modifiers));
            }
            assert_eq!(last, KeymapResult::Matched(Action::Global(action)), "{key}");
        }
    }
}

#[test]
fn a_capabilitys_workbench_key_goes_to_the_capability_and_says_so_when_none_takes_it() {
    let (mut app, dock) = make_app(Vec::new());
    // Alt+M (the model picker) with no capability acting on it: a notice, nothing for Pi.
    assert!(to_pi(&send(&mut app, b"\x1b[109;3u")).is_empty());
    assert!(screen(&mut app).contains("Model fusion is off"));
    dock.takes_key_actions.store(true, Ordering::SeqCst);
    assert!(to_pi(&send(&mut app, b"\x1b[109;3u")).is_empty());
    assert_eq!(*dock.key_actions.lock().unwrap(), ["fusion.picker"]);
}

#[test]
fn the_detach_key_outside_a_session_is_pis() {
    let (mut app, _) = make_app(Vec::new());
    // Ctrl+Alt+D as xterm sends it.
    assert_eq!(to_pi(&send(&mut app, b"\x1b\x04")), b"\x1b\x04");
}

/// Stands in for `detach::inside` in a session: it takes the detach key and counts it.
#[derive(Default)]
struct InSession {
    detaches: AtomicUsize,
}

impl Capability for InSession {
    fn action(&self, name: &str) -> bool {
        let take = name == "session.detach";
        if take {
            self.detaches.fetch_add(1, Ordering::SeqCst);
        }
        take
    }
}

#[test]
fn in_a_session_the_detach_key_is_the_sessions_even_under_a_view() {
    let (mut app, _) = make_app(Vec::new());
    let session = Arc::new(InSession::default());
    add_capability(&mut app, session.clone());
    let detaches = || session.detaches.load(Ordering::SeqCst);
    assert!(to_pi(&send(&mut app, b"\x1b\x04")).is_empty());
    assert_eq!(detaches(), 1);
    // With the help open (a view that has no use for the key) it still detaches, and the help
    // stays for the next terminal.
    send(&mut app, b"\x1bOP");
    assert!(to_pi(&send(&mut app, b"\x1b\x04")).is_empty());
    assert_eq!(detaches(), 2);
    assert_eq!(view_titles(&app), ["the key help"]);
    assert!(!screen(&mut app).contains("does nothing in the key help"));
}

/// A capability's commands are listed under its first module, in their order; the bridge gets
/// every module once.
#[test]
fn a_capabilitys_commands_are_listed_under_its_first_module() {
    use crate::bridge::{Command, CommandReply, CommandSpec, Module};

    struct Named(&'static str);
    impl Module for Named {
        fn name(&self) -> &'static str {
            self.0
        }
    }
    struct Two;
    impl Capability for Two {
        fn modules(&self) -> Vec<Arc<dyn Module>> {
            vec![Arc::new(Named("first")), Arc::new(Named("second"))]
        }
        fn commands(&self) -> Vec<Command> {
            ["unipi:a", "unipi:b"]
                .into_iter()
                .map(|name| {
                    let spec = CommandSpec::new(name, "test command");
                    Command::new(spec, (), |(), _| async { CommandReply::Done })
                })
                .collect()
        }
    }
    let capabilities: Vec<Arc<dyn Capability>> = vec![Arc::new(Two)];
    let listed: Vec<(&str, Vec<String>)> = super::modules(&capabilities)
        .iter()
        .map(|(module, commands)| {
            let names = commands.iter().map(|c| c.spec.name.clone()).collect();
            (module.name(), names)
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("first", vec!["unipi:a".to_owned(), "unipi:b".to_owned()]),
            ("second", Vec::new())
        ]
    );
}

/// F1 says what the dock's row keys do in the words of the capabilities whose rows they act on
/// (their registrations' `DockWords`), and the notice when nothing can be docked names what they
/// list, whether they run or not.
#[test]
fn the_dock_speaks_of_rows_in_the_words_of_their_registrations() {
    use crate::views::dock::DockWords;
    use crate::views::help::HelpView;
    let view = HelpView::new(&Keymap::defaults(), String::new(), Vec::new());
    let dock = view
        .model()
        .sections
        .iter()
        .find(|section| section.title.contains("The dock"))
        .map(|section| section.rows.clone())
        .unwrap_or_default();
    let has = |keys: &str, what: &str| dock.iter().any(|(k, w)| k == keys && w.contains(what));
    assert!(has("s", "Stop the selected task"), "{dock:?}");
    assert!(has("S", "Stop every running task"), "{dock:?}");
    assert_eq!(
        DockWords::nothing_to_dock(&super::dock_words()),
        "Nothing to dock: background tasks and helpers are off"
    );
}

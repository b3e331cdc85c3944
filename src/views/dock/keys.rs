//! The dock's key table (`[dock]` in keymap files) and the pieces its hint lines are made of.
//! Defaults are in `keymaps/default.toml`; the keymap resolves the user's file over them
//! ([`KeyTable`]). The actions are the dock's verbs: moving and opening are the dock's own, the
//! row keys (stop, stop all, rerun, copy, message) mean what each section's [`super::Verb`]s say
//! on its rows, and each section gives the hint lines for its rows. The descriptions are what F1
//! shows, except the row keys': F1 says what those do in the words of the capabilities whose rows
//! they act on ([`super::DockWords`]), and the ones here stand when no capability speaks of a key.

use std::fmt;

use crate::config::keymap::{KeyTable, key_table};

key_table! {
    /// The `[dock]` table (its defaults are in `keymaps/default.toml`).
    pub(crate) static DOCK_KEYS,
    /// What a key does while the dock has focus.
    pub enum DockAction,
    table "dock", title "The dock",
    defaults [],
    actions {
        Up => "dock.up", "Select the entry above / scroll up a line";
        Down => "dock.down", "Select the entry below / scroll down a line";
        Open => "dock.open", "Open the selected entry's detail";
        /// Detail → list, list → close.
        Back => "dock.back", "Detail → list; list → close the dock";
        Close => "dock.close", "Close the dock (focus returns to Pi)";
        Stop => "dock.stop", "Stop the selected entry";
        StopAll => "dock.stop_all", "Stop every running entry (press twice)";
        Rerun => "dock.rerun", "Rerun the selected entry";
        CopyPath => "dock.copy_path", "Copy the selected entry's path";
        History => "dock.history", "Show or hide cleared finished entries";
        ClearNotices => "dock.clear_notices", "Clear finished notices";
        PageUp => "dock.page_up", "A page up";
        PageDown => "dock.page_down", "A page down";
        Top => "dock.top", "First entry / top of the output";
        /// The last row in the list; follow the output in the detail.
        Bottom => "dock.bottom", "Last entry / follow the output";
        /// Open the message input for the selected row.
        Steer => "dock.steer", "Type a message to the selected running entry";
        /// Open the selected row's detail, like `Open`.
        Transcript => "dock.transcript", "Open the selected entry's live transcript";
    }
}

impl fmt::Display for DockAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The dock's resolved keys.
pub type DockKeys = KeyTable<DockAction>;

/// A hint line: (the actions, what they do), in the order shown. A hint whose actions are all
/// unbound is left out.
pub type HintTable = &'static [(&'static [DockAction], &'static str)];

/// The hint every list shows first.
pub const SELECT: (&[DockAction], &str) = (&[DockAction::Up, DockAction::Down], "select");
/// The hint every detail shows first.
pub const SCROLL: (&[DockAction], &str) = (
    &[
        DockAction::Up,
        DockAction::Down,
        DockAction::PageUp,
        DockAction::PageDown,
    ],
    "scroll",
);

/// The list's hints when no section has given its own (nothing is listed).
pub(super) const PLAIN_LIST: HintTable = &[
    SELECT,
    (&[DockAction::Open], "details"),
    (&[DockAction::History], "history"),
    (&[DockAction::Back], "close"),
];

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::*;
    use crate::config::keymap::{Keymap, TableAction};
    use crate::views::test_keys::{
        assert_each_reports_one_error, assert_unbound, press, with_user,
    };

    fn keys(keymap: &Keymap) -> DockKeys {
        DockKeys::from_keymap(keymap)
    }

    #[test]
    fn default_dock_keys_match_their_actions() {
        let keymap = Keymap::defaults();
        let cases = [
            ("up", DockAction::Up),
            ("k", DockAction::Up),
            ("down", DockAction::Down),
            ("j", DockAction::Down),
            ("enter", DockAction::Open),
            ("right", DockAction::Open),
            ("esc", DockAction::Back),
            ("left", DockAction::Back),
            ("q", DockAction::Close),
            ("s", DockAction::Stop),
            ("S", DockAction::StopAll),
            ("r", DockAction::Rerun),
            ("y", DockAction::CopyPath),
            ("h", DockAction::History),
            ("ctrl+alt+c", DockAction::ClearNotices),
            ("pageup", DockAction::PageUp),
            ("pagedown", DockAction::PageDown),
            ("home", DockAction::Top),
            ("end", DockAction::Bottom),
            ("m", DockAction::Steer),
            ("t", DockAction::Transcript),
        ];
        for (key, action) in cases {
            assert_eq!(keys(&keymap).action(&press(key)), Some(action), "{key}");
        }
        // Shift+S arrives as `Char('S')` with or without SHIFT.
        let capital = KeyEvent::new(KeyCode::Char('S'), KeyModifiers::NONE);
        assert_eq!(keys(&keymap).action(&capital), Some(DockAction::StopAll));
        for key in ["x", "ctrl+s", "shift+up", "f1"] {
            assert_eq!(keys(&keymap).action(&press(key)), None, "{key}");
        }
        // Every dock action has a default key and a name that round-trips.
        for &(name, _) in DOCK_KEYS.actions {
            let action = <DockAction as TableAction>::from_name(name)
                .unwrap_or_else(|| panic!("{name} names no dock action"));
            assert_eq!(
                <DockAction as TableAction>::from_name(action.name()),
                Some(action)
            );
            assert!(keys(&keymap).hint_key(action).is_some(), "{action}");
        }
    }

    #[test]
    fn dock_keys_do_not_enter_the_main_trie() {
        assert_unbound(&mut Keymap::defaults(), &["s", "j", "esc", "enter"]);
    }

    #[test]
    fn bad_dock_entries_are_reported_at_their_line_and_skipped() {
        let cases: [(&str, &str); 5] = [
            (
                "[dock]\n\"x\" = \"dock.stpo\"\n",
                "/cfg/keymap.toml:2:7: unknown action \"dock.stpo\"; expected \"dock.up\", \"dock.down\"",
            ),
            (
                "[dock]\n\"x\" = \"help\"\n",
                "/cfg/keymap.toml:2:7: unknown action \"help\"; expected \"dock.up\"",
            ),
            (
                "\n[dock]\n  \"ctrl+pagee\" = \"dock.stop\"\n",
                "/cfg/keymap.toml:3:3: unknown key \"pagee\"",
            ),
            (
                "[dock]\n\"g g\" = \"dock.top\"\n",
                "/cfg/keymap.toml:2:1: g g: [dock] keys are single keys, not chords",
            ),
            (
                "[dock]\n\"X\" = \"dock.stop_all\"\n\"shift+x\" = \"dock.rerun\"\n",
                "/cfg/keymap.toml:3:1: Shift+X is bound twice; keeping the first",
            ),
        ];
        // The default dock keys still work.
        assert_each_reports_one_error(&cases, |keymap| {
            assert_eq!(keys(&keymap).action(&press("s")), Some(DockAction::Stop));
        });
        // `[dock]` action names are not `[bindings]` actions either.
        let (_, errors) = with_user("[bindings]\n\"f2\" = \"dock.stop\"\n");
        assert!(
            errors[0].starts_with(
                "/cfg/keymap.toml:2:8: unknown action \"dock.stop\"; expected \"help\""
            ),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn a_bad_dock_entry_leaves_its_good_neighbours() {
        let (keymap, errors) =
            with_user("[dock]\n\"x\" = \"nope\"\n\"z\" = \"dock.stop\"\n\"s\" = \"none\"\n");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(keys(&keymap).action(&press("z")), Some(DockAction::Stop));
        assert_eq!(keys(&keymap).action(&press("x")), None);
        assert_eq!(keys(&keymap).action(&press("s")), None);
    }
}

//! The preset editor view (`/unipi:fusion-preset`): the named pairs, with keys to apply one,
//! save the pair in force under a new name, rename, delete (pressed twice) and turn fusion off.
//! A name is typed in place with the `[fusion-name]` keys; everything else is the
//! `[fusion-presets]` table. Edits are the port's work ([`PresetsPort`]: the engine, which saves
//! the file crash-safe in the background); the view pulls the rows and the outcome's notice when
//! fusion signals a change.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use unipi_widgets::fusion::presets::{NameField, PresetRow, PresetsModel, cursor_position, render};
use unipi_widgets::theme::Theme;

use crate::bridge::Refusal;
use crate::config::keymap::{KeyTable, KeyTableSpec, Keymap, key_table};
use crate::views::line_edit::{EditAction, LineEdit};
use crate::views::{RefreshContext, View, ViewAction};

key_table! {
    /// The `[fusion-presets]` key table.
    pub(crate) static PRESETS_KEYS,
    pub(crate) enum PresetsAction,
    table "fusion-presets", title "The fusion presets (/unipi:fusion-preset)",
    defaults [
        ("up", "fusion-presets.up"),
        ("k", "fusion-presets.up"),
        ("down", "fusion-presets.down"),
        ("j", "fusion-presets.down"),
        ("enter", "fusion-presets.apply"),
        ("s", "fusion-presets.save"),
        ("r", "fusion-presets.rename"),
        ("d", "fusion-presets.delete"),
        ("o", "fusion-presets.off"),
        ("esc", "fusion-presets.close"),
        ("q", "fusion-presets.close"),
    ],
    actions {
        Up => "fusion-presets.up", "Select the preset above";
        Down => "fusion-presets.down", "Select the preset below";
        Apply => "fusion-presets.apply", "Apply the selected preset";
        Save => "fusion-presets.save", "Save the pair in force as a new preset";
        Rename => "fusion-presets.rename", "Rename the selected preset";
        Delete => "fusion-presets.delete", "Delete the selected preset (press twice)";
        Off => "fusion-presets.off", "Turn model fusion off";
        Close => "fusion-presets.close", "Close the editor";
    }
}

key_table! {
    /// The `[fusion-name]` key table: typing a preset's name.
    pub(crate) static NAME_KEYS,
    pub(crate) enum NameAction,
    table "fusion-name", title "Typing a fusion preset's name",
    defaults [
        ("enter", "fusion-name.confirm"),
        ("esc", "fusion-name.back"),
        ("backspace", "fusion-name.backspace"),
        ("delete", "fusion-name.delete"),
        ("left", "fusion-name.left"),
        ("right", "fusion-name.right"),
        ("home", "fusion-name.home"),
        ("end", "fusion-name.end"),
        ("ctrl+u", "fusion-name.clear"),
    ],
    actions {
        Confirm => "fusion-name.confirm", "Keep the name";
        Back => "fusion-name.back", "Leave the name without keeping it";
        Backspace => "fusion-name.backspace", "Delete the character before the cursor";
        Delete => "fusion-name.delete", "Delete the character under the cursor";
        Left => "fusion-name.left", "Cursor left";
        Right => "fusion-name.right", "Cursor right";
        Home => "fusion-name.home", "Cursor to the start";
        End => "fusion-name.end", "Cursor to the end";
        Clear => "fusion-name.clear", "Delete everything before the cursor";
    }
}

/// What the editor reads and asks for.
pub(crate) trait PresetsPort: Send + Sync {
    /// The presets and a line saying what is in force.
    fn rows(&self) -> (Vec<PresetRow>, String);
    /// Applies preset `name` in the background.
    fn apply(&self, name: &str);
    /// Saves the pair in force as `name`; the error says why not (no pair, a taken name).
    fn save_current(&self, name: &str) -> Result<(), Refusal>;
    fn rename(&self, from: &str, to: &str) -> Result<(), Refusal>;
    fn delete(&self, name: &str) -> Result<(), Refusal>;
    fn off(&self);
    /// What the last background edit did, taken once.
    fn take_notice(&self) -> Option<String>;
}

/// What a typed name is for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Naming {
    Save,
    Rename(String),
}

pub(crate) struct PresetsView {
    model: PresetsModel,
    keys: KeyTable<PresetsAction>,
    name_keys: KeyTable<NameAction>,
    naming: Option<(Naming, LineEdit)>,
    /// The preset a first delete press armed.
    delete_armed: Option<String>,
    port: Arc<dyn PresetsPort>,
}

impl PresetsView {
    pub(crate) fn new(port: Arc<dyn PresetsPort>, keymap: &Keymap) -> Self {
        let keys = KeyTable::<PresetsAction>::from_keymap(keymap);
        let hint = keys.hint_line(&[
            (&[PresetsAction::Up, PresetsAction::Down], "select"),
            (&[PresetsAction::Apply], "apply"),
            (&[PresetsAction::Save], "save current"),
            (&[PresetsAction::Rename], "rename"),
            (&[PresetsAction::Delete], "delete"),
            (&[PresetsAction::Off], "off"),
            (&[PresetsAction::Close], "close"),
        ]);
        let mut view = PresetsView {
            model: PresetsModel {
                keys: hint,
                ..PresetsModel::default()
            },
            keys,
            name_keys: KeyTable::from_keymap(keymap),
            naming: None,
            delete_armed: None,
            port,
        };
        view.pull();
        view
    }

    #[cfg(test)]
    pub(crate) fn model(&self) -> &PresetsModel {
        &self.model
    }

    fn pull(&mut self) {
        let (rows, current) = self.port.rows();
        let selected = self.selected_name().map(str::to_owned);
        self.model.selected = selected
            .and_then(|name| rows.iter().position(|row| row.name == name))
            .unwrap_or(self.model.selected)
            .min(rows.len().saturating_sub(1));
        self.model.rows = rows;
        self.model.current = current;
    }

    fn selected_name(&self) -> Option<&str> {
        self.model
            .rows
            .get(self.model.selected)
            .map(|row| row.name.as_str())
    }

    fn start_naming(&mut self, naming: Naming, text: &str) {
        let label = match &naming {
            Naming::Save => "Save the pair in force as".to_owned(),
            Naming::Rename(from) => format!("Rename {from} to"),
        };
        self.naming = Some((naming, LineEdit::new(text)));
        self.model.naming = Some(NameField {
            label,
            ..NameField::default()
        });
        self.sync_name();
    }

    fn sync_name(&mut self) {
        if let (Some((_, edit)), Some(field)) = (&self.naming, &mut self.model.naming) {
            field.text = edit.text().to_owned();
            field.cursor = edit.cursor();
        }
    }

    fn end_naming(&mut self) {
        self.naming = None;
        self.model.naming = None;
    }

    fn name_key(&mut self, key: &KeyEvent) -> ViewAction {
        let Some((naming, edit)) = self.naming.as_mut() else {
            return ViewAction::Unhandled;
        };
        let edit_action = match self.name_keys.action(key) {
            Some(NameAction::Back) => {
                self.end_naming();
                return ViewAction::Consumed;
            }
            Some(NameAction::Confirm) => {
                let name = edit.text().trim().to_owned();
                let naming = naming.clone();
                let outcome = match &naming {
                    Naming::Save => self.port.save_current(&name),
                    Naming::Rename(from) => self.port.rename(from, &name),
                };
                match outcome {
                    Ok(()) => {
                        self.model.notice = Some(format!("Saving {name}…"));
                        self.end_naming();
                    }
                    Err(reason) => self.model.notice = Some(reason.into_text()),
                }
                return ViewAction::Consumed;
            }
            Some(NameAction::Backspace) => EditAction::Backspace,
            Some(NameAction::Delete) => EditAction::Delete,
            Some(NameAction::Left) => EditAction::Left,
            Some(NameAction::Right) => EditAction::Right,
            Some(NameAction::Home) => EditAction::Home,
            Some(NameAction::End) => EditAction::End,
            Some(NameAction::Clear) => EditAction::KillToStart,
            None => match key.code {
                KeyCode::Char(ch) if key.modifiers.difference(KeyModifiers::SHIFT).is_empty() => {
                    edit.insert_char(ch);
                    self.sync_name();
                    return ViewAction::Consumed;
                }
                _ => return ViewAction::Unhandled,
            },
        };
        edit.apply(edit_action);
        self.sync_name();
        ViewAction::Consumed
    }
}

impl View for PresetsView {
    fn title(&self) -> &str {
        "the fusion presets"
    }

    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        render(&self.model, theme, area, buf);
    }

    fn cursor(&self, area: Rect) -> Option<Position> {
        cursor_position(&self.model, area)
    }

    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction {
        if self.naming.is_some() {
            return self.name_key(key);
        }
        let Some(action) = self.keys.action(key) else {
            return ViewAction::Unhandled;
        };
        if action != PresetsAction::Delete {
            self.delete_armed = None;
        }
        let last = self.model.rows.len().saturating_sub(1);
        let selected = self.selected_name().map(str::to_owned);
        match action {
            PresetsAction::Close => return ViewAction::Close,
            PresetsAction::Up => self.model.selected = self.model.selected.saturating_sub(1),
            PresetsAction::Down => self.model.selected = (self.model.selected + 1).min(last),
            PresetsAction::Save => self.start_naming(Naming::Save, ""),
            PresetsAction::Rename => match selected {
                Some(name) => self.start_naming(Naming::Rename(name.clone()), &name),
                None => self.model.notice = Some("No preset to rename".to_owned()),
            },
            PresetsAction::Apply => match selected {
                Some(name) => {
                    self.port.apply(&name);
                    self.model.notice = Some(format!("Applying {name}…"));
                }
                None => self.model.notice = Some("No preset to apply".to_owned()),
            },
            PresetsAction::Delete => match selected {
                Some(name) if self.delete_armed.as_deref() == Some(name.as_str()) => {
                    self.delete_armed = None;
                    self.model.notice = Some(match self.port.delete(&name) {
                        Ok(()) => format!("Deleting {name}…"),
                        Err(reason) => reason.into_text(),
                    });
                }
                Some(name) => {
                    let again = self
                        .keys
                        .hint_key(PresetsAction::Delete)
                        .unwrap_or_else(|| "delete".to_owned());
                    self.model.notice = Some(format!("Press {again} again to delete {name}"));
                    self.delete_armed = Some(name);
                }
                None => self.model.notice = Some("No preset to delete".to_owned()),
            },
            PresetsAction::Off => {
                self.port.off();
                self.model.notice = Some("Turning model fusion off…".to_owned());
            }
        }
        ViewAction::Consumed
    }

    fn handle_paste(&mut self, text: &str) -> bool {
        let Some((_, edit)) = self.naming.as_mut() else {
            return false;
        };
        edit.insert_str(text.lines().next().unwrap_or_default());
        self.sync_name();
        true
    }

    fn refresh(&mut self, _context: &RefreshContext<'_>) {
        self.pull();
        if let Some(notice) = self.port.take_notice() {
            self.model.notice = Some(notice);
        }
    }

    fn close_hint(&self) -> String {
        self.keys.close_key(PresetsAction::Close)
    }

    fn key_table(&self) -> Option<&'static KeyTableSpec> {
        Some(if self.naming.is_some() {
            &NAME_KEYS
        } else {
            &PRESETS_KEYS
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Recorder {
        rows: Mutex<Vec<PresetRow>>,
        asked: Mutex<Vec<String>>,
    }

    impl PresetsPort for Recorder {
        fn rows(&self) -> (Vec<PresetRow>, String) {
            (self.rows.lock().unwrap().clone(), "Now: a + b".into())
        }
        fn apply(&self, name: &str) {
            self.asked.lock().unwrap().push(format!("apply {name}"));
        }
        fn save_current(&self, name: &str) -> Result<(), Refusal> {
            if name.is_empty() {
                return Err("A preset needs a name".into());
            }
            self.asked.lock().unwrap().push(format!("save {name}"));
            Ok(())
        }
        fn rename(&self, from: &str, to: &str) -> Result<(), Refusal> {
            self.asked
                .lock()
                .unwrap()
                .push(format!("rename {from} {to}"));
            Ok(())
        }
        fn delete(&self, name: &str) -> Result<(), Refusal> {
            self.asked.lock().unwrap().push(format!("delete {name}"));
            Ok(())
        }
        fn off(&self) {
            self.asked.lock().unwrap().push("off".into());
        }
        fn take_notice(&self) -> Option<String> {
            None
        }
    }

    fn press(view: &mut PresetsView, code: KeyCode) -> ViewAction {
        view.handle_key(&KeyEvent::new(code, KeyModifiers::NONE))
    }

    #[test]
    fn save_rename_delete_apply_and_off_reach_the_port() {
        let port = Arc::new(Recorder::default());
        *port.rows.lock().unwrap() = ["daily", "thrifty"]
            .map(|name| PresetRow {
                name: name.into(),
                primary: "p/a".into(),
                sidekick: "p/b".into(),
                ..PresetRow::default()
            })
            .to_vec();
        let mut view = PresetsView::new(port.clone(), &Keymap::defaults());
        // Save: an empty name is refused and typing goes on.
        press(&mut view, KeyCode::Char('s'));
        press(&mut view, KeyCode::Enter);
        assert_eq!(
            view.model().notice.as_deref(),
            Some("A preset needs a name")
        );
        for ch in "weekend".chars() {
            press(&mut view, KeyCode::Char(ch));
        }
        press(&mut view, KeyCode::Enter);
        assert!(view.model().naming.is_none());
        // Rename the second: the field starts with its name.
        press(&mut view, KeyCode::Down);
        press(&mut view, KeyCode::Char('r'));
        assert_eq!(view.model().naming.as_ref().unwrap().text, "thrifty");
        let ctrl_u = KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL);
        view.handle_key(&ctrl_u);
        for ch in "cheap".chars() {
            press(&mut view, KeyCode::Char(ch));
        }
        press(&mut view, KeyCode::Enter);
        // Delete needs two presses in a row; another key disarms it.
        press(&mut view, KeyCode::Char('d'));
        press(&mut view, KeyCode::Up);
        press(&mut view, KeyCode::Char('d'));
        assert!(
            view.model()
                .notice
                .as_deref()
                .unwrap()
                .starts_with("Press d again")
        );
        press(&mut view, KeyCode::Char('d'));
        press(&mut view, KeyCode::Enter);
        press(&mut view, KeyCode::Char('o'));
        // Esc while naming leaves the name; Esc after closes.
        press(&mut view, KeyCode::Char('s'));
        assert_eq!(press(&mut view, KeyCode::Esc), ViewAction::Consumed);
        assert_eq!(press(&mut view, KeyCode::Esc), ViewAction::Close);
        assert_eq!(
            *port.asked.lock().unwrap(),
            [
                "save weekend",
                "rename thrifty cheap",
                "delete daily",
                "apply daily",
                "off"
            ]
        );
    }
}

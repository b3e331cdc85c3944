//! The settings overlay view (`/unipi:bg-settings`, and later other modules' settings pages):
//! owns a [`SettingsModel`] and turns keys into edits of it — select, toggle a flag, step a
//! number within its bounds — and hands a save to its [`SettingsStore`], the module's port that
//! writes the file off the UI loop, because views do no I/O.
//!
//! The view is generic over the module: it is given the module's fields, the module's function
//! from fields to config keys, and its store. It keeps the fields as last saved, so "dirty"
//! means "differs from the file" rather than "was touched"; a save only counts once the store
//! reports it done (pulled in [`View::refresh`], then [`SettingsView::save_finished`]). Closing
//! with unsaved changes takes a second Esc, with any other key in between calling the discard off,
//! so one stray Esc loses nothing.
//!
//! Text and secret fields are typed in place (Enter or Space starts, Enter keeps, Esc leaves it
//! as it was; Backspace on the row clears the value): a secret starts empty, shows dots while it
//! is typed, and an empty entry keeps the one it had. A choice steps through its names.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use serde_json::Value;
use unipi_widgets::settings::{SettingField, SettingValue, SettingsModel, cursor_position, render};
use unipi_widgets::theme::Theme;

use super::line_edit::{EditAction, LineEdit};
use super::{RefreshContext, View, ViewAction};
use crate::bridge::Refusal;

/// Shown after the first Esc with unsaved changes.
pub(crate) const DISCARD_NOTICE: &str = "Unsaved changes — Esc again to discard, s to save.";

/// Where a settings view saves: the module's config file, written off the UI loop.
pub trait SettingsStore: Send + Sync {
    /// Starts writing `values` (a JSON object of the module's config keys); returns at once.
    /// When done, the store signals its capability's change so the view pulls the outcome.
    fn save(&self, values: Value);
    /// The outcome of the last save once it is done, taken once: `Ok(notice)` or `Err(why)`.
    fn take_outcome(&self) -> Option<Result<String, Refusal>>;
}

/// Turns the edited fields into the module's config keys (its settings table does).
pub(crate) type ToValues = Box<dyn Fn(&[SettingField]) -> Value + Send + Sync>;

pub struct SettingsView {
    store: Arc<dyn SettingsStore>,
    model: SettingsModel,
    to_values: ToValues,
    /// The fields as loaded or last saved.
    saved: Vec<SettingField>,
    /// The fields sent with the save request still in flight.
    saving: Option<Vec<SettingField>>,
    /// The first Esc with unsaved changes happened; the next one closes.
    discard_armed: bool,
    /// The text being typed into the selected field.
    editing: Option<LineEdit>,
}

impl SettingsView {
    /// A settings overlay titled `title` showing `fields` as loaded, the first one selected,
    /// saving to `store`.
    pub fn new(
        title: impl Into<String>,
        fields: Vec<SettingField>,
        to_values: impl Fn(&[SettingField]) -> Value + Send + Sync + 'static,
        store: Arc<dyn SettingsStore>,
    ) -> Self {
        SettingsView {
            store,
            saved: fields.clone(),
            model: SettingsModel {
                title: title.into(),
                fields,
                keys: hints(),
                ..SettingsModel::default()
            },
            to_values: Box::new(to_values),
            saving: None,
            discard_armed: false,
            editing: None,
        }
    }

    pub fn model(&self) -> &SettingsModel {
        &self.model
    }

    /// The store's report on the last save: `Ok(notice)` (e.g. "Saved to ~/.unipi/…")
    /// makes the saved values the new baseline, `Err(message)` is shown and leaves them dirty.
    pub(crate) fn save_finished(&mut self, result: Result<String, Refusal>) {
        let saving = self.saving.take();
        match result {
            Ok(notice) => {
                if let Some(fields) = saving {
                    self.saved = fields;
                }
                self.model.notice = Some(notice);
            }
            Err(message) => self.model.notice = Some(format!("Not saved: {message}")),
        }
        self.update_dirty();
    }

    fn save(&mut self) -> ViewAction {
        if !self.model.dirty {
            self.model.notice = Some("No changes to save.".to_owned());
            return ViewAction::Consumed;
        }
        self.saving = Some(self.model.fields.clone());
        self.model.notice = Some("Saving…".to_owned());
        self.store.save((self.to_values)(&self.model.fields));
        ViewAction::Consumed
    }

    fn escape(&mut self) -> ViewAction {
        if !self.model.dirty || self.discard_armed {
            return ViewAction::Close;
        }
        self.discard_armed = true;
        self.model.notice = Some(DISCARD_NOTICE.to_owned());
        ViewAction::Consumed
    }

    fn move_selection(&mut self, delta: isize) {
        let last = self.model.fields.len().saturating_sub(1);
        self.model.selected = self.model.selected.saturating_add_signed(delta).min(last);
    }

    /// Change the selected value: a flag flips (or is set, for Left/Right), a number moves by
    /// `steps` of its step within its bounds.
    fn change(&mut self, steps: i64, toggle: bool) {
        let Some(field) = self.model.fields.get_mut(self.model.selected) else {
            return;
        };
        let typed = match &field.value {
            SettingValue::Text(text) if toggle => Some(LineEdit::new(text.clone())),
            SettingValue::Secret(_) if toggle => Some(LineEdit::default()),
            _ => None,
        };
        if typed.is_some() {
            self.editing = typed;
            self.show_editing();
            return;
        }
        match &mut field.value {
            SettingValue::Bool(flag) if toggle => *flag = !*flag,
            SettingValue::Bool(flag) if steps != 0 => *flag = steps > 0,
            SettingValue::Number {
                value,
                min,
                max,
                step,
                ..
            } if steps != 0 => {
                let delta = step.saturating_mul(steps.unsigned_abs());
                let moved = if steps > 0 {
                    value.saturating_add(delta)
                } else {
                    value.saturating_sub(delta)
                };
                *value = moved.clamp(*min, (*max).max(*min));
            }
            SettingValue::Choice { value, options } if toggle || steps != 0 => {
                let count = options.len().max(1);
                let at = options.iter().position(|o| o == value).unwrap_or(0);
                let next = if steps < 0 {
                    (at + count - 1) % count
                } else {
                    (at + 1) % count
                };
                if let Some(option) = options.get(next) {
                    *value = option.clone();
                }
            }
            _ => return,
        }
        self.model.notice = None;
        self.update_dirty();
    }

    fn update_dirty(&mut self) {
        self.model.dirty = self.model.fields != self.saved;
    }

    /// Backspace or Delete on a text or secret row: the value is cleared.
    fn clear_text(&mut self) -> ViewAction {
        let Some(field) = self.model.fields.get_mut(self.model.selected) else {
            return ViewAction::Unhandled;
        };
        match &mut field.value {
            SettingValue::Text(text) | SettingValue::Secret(text) => text.clear(),
            _ => return ViewAction::Unhandled,
        }
        self.model.notice = None;
        self.update_dirty();
        ViewAction::Consumed
    }

    /// Keys while a text is typed: editing, Enter keeps it, Esc leaves the value as it was.
    fn handle_edit_key(&mut self, key: &KeyEvent) -> ViewAction {
        let Some(edit) = self.editing.as_mut() else {
            return ViewAction::Unhandled;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let action = match key.code {
            KeyCode::Enter => return self.finish_editing(true),
            KeyCode::Esc => return self.finish_editing(false),
            KeyCode::Left => EditAction::Left,
            KeyCode::Right => EditAction::Right,
            KeyCode::Home => EditAction::Home,
            KeyCode::End => EditAction::End,
            KeyCode::Backspace => EditAction::Backspace,
            KeyCode::Delete => EditAction::Delete,
            KeyCode::Char('a') if ctrl => EditAction::Home,
            KeyCode::Char('e') if ctrl => EditAction::End,
            KeyCode::Char('u') if ctrl => EditAction::KillToStart,
            KeyCode::Char('k') if ctrl => EditAction::KillToEnd,
            KeyCode::Char('w') if ctrl => EditAction::DeleteWordBack,
            KeyCode::Char(ch) if !ctrl && !alt => {
                edit.insert_char(ch);
                self.show_editing();
                return ViewAction::Consumed;
            }
            _ => return ViewAction::Unhandled,
        };
        edit.apply(action);
        self.show_editing();
        ViewAction::Consumed
    }

    /// Ends typing; `keep` puts the text in the field (an empty secret keeps the old one).
    fn finish_editing(&mut self, keep: bool) -> ViewAction {
        let typed = self
            .editing
            .take()
            .map(|edit| edit.text().trim().to_owned());
        self.model.editing = None;
        self.model.keys = hints();
        if let (true, Some(typed), Some(field)) =
            (keep, typed, self.model.fields.get_mut(self.model.selected))
        {
            match &mut field.value {
                SettingValue::Secret(_) if typed.is_empty() => {}
                SettingValue::Text(text) | SettingValue::Secret(text) => *text = typed,
                _ => {}
            }
            self.model.notice = None;
            self.update_dirty();
        }
        ViewAction::Consumed
    }

    /// The model shows the text being typed and the keys that apply to it.
    fn show_editing(&mut self) {
        self.model.editing = self
            .editing
            .as_ref()
            .map(|edit| (edit.text().to_owned(), edit.cursor()));
        self.model.keys = [("Enter", "keep"), ("Esc", "cancel"), ("Ctrl+U", "clear")]
            .iter()
            .map(|(key, what)| ((*key).to_owned(), (*what).to_owned()))
            .collect();
    }
}

impl View for SettingsView {
    fn title(&self) -> &str {
        &self.model.title
    }

    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        render(&self.model, theme, area, buf);
    }

    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction {
        if self.editing.is_some() {
            return self.handle_edit_key(key);
        }
        if key.code != KeyCode::Esc && self.discard_armed {
            // Anything but the second Esc calls the discard off.
            self.discard_armed = false;
            self.model.notice = None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && matches!(key.code, KeyCode::Char('s' | 'S')) {
            return self.save();
        }
        if !key.modifiers.is_empty() && key.modifiers != KeyModifiers::SHIFT {
            return ViewAction::Unhandled;
        }
        match key.code {
            KeyCode::Esc => return self.escape(),
            KeyCode::Char('s') => return self.save(),
            KeyCode::Up | KeyCode::Char('k') => self.move_selection(-1),
            KeyCode::Down | KeyCode::Char('j') => self.move_selection(1),
            KeyCode::Home => self.model.selected = 0,
            KeyCode::End => self.move_selection(isize::MAX),
            KeyCode::Char(' ') | KeyCode::Enter => self.change(0, true),
            KeyCode::Left | KeyCode::Char('h' | '-') => self.change(-1, false),
            KeyCode::Right | KeyCode::Char('l' | '+' | '=') => self.change(1, false),
            KeyCode::PageDown => self.change(-10, false),
            KeyCode::PageUp => self.change(10, false),
            KeyCode::Backspace | KeyCode::Delete => return self.clear_text(),
            _ => return ViewAction::Unhandled,
        }
        ViewAction::Consumed
    }

    fn refresh(&mut self, _context: &RefreshContext<'_>) {
        if let Some(outcome) = self.store.take_outcome() {
            self.save_finished(outcome);
        }
    }

    fn handle_paste(&mut self, text: &str) -> bool {
        let Some(edit) = self.editing.as_mut() else {
            return false;
        };
        // Settings are one line (URLs, tokens): line breaks in a paste are dropped.
        edit.insert_str(&text.replace(['\r', '\n'], ""));
        self.show_editing();
        true
    }

    fn cursor(&self, area: Rect) -> Option<Position> {
        cursor_position(&self.model, area)
    }
}

/// The key hints, most needed first: a narrow box shows only the first few.
fn hints() -> Vec<(String, String)> {
    [
        ("s", "save"),
        ("Esc", "close"),
        ("↑↓", "select"),
        ("Space", "toggle"),
        ("←→", "change"),
    ]
    .iter()
    .map(|(key, what)| ((*key).to_owned(), (*what).to_owned()))
    .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;
    use unipi_widgets::footer::FooterData;

    use super::*;
    use crate::views::test_keys::{ch, key};
    use crate::views::{KeyOutcome, ViewStack};

    /// A store that records what it was asked to save and answers with `outcome` once.
    #[derive(Default)]
    struct Store {
        saved: Mutex<Vec<Value>>,
        outcome: Mutex<Option<Result<String, Refusal>>>,
    }

    impl SettingsStore for Store {
        fn save(&self, values: Value) {
            self.saved.lock().unwrap().push(values);
        }
        fn take_outcome(&self) -> Option<Result<String, Refusal>> {
            self.outcome.lock().unwrap().take()
        }
    }

    impl Store {
        fn answer(&self, outcome: Result<String, Refusal>) {
            *self.outcome.lock().unwrap() = Some(outcome);
        }
        fn take_saved(&self) -> Vec<Value> {
            std::mem::take(&mut *self.saved.lock().unwrap())
        }
    }

    fn refresh(view: &mut SettingsView) {
        view.refresh(&RefreshContext {
            pi: &FooterData::default(),
        });
    }

    fn field(key: &str, value: SettingValue) -> SettingField {
        SettingField {
            key: key.to_owned(),
            label: key.to_owned(),
            value,
            help: String::new(),
        }
    }

    /// Each field as `"key": value`, the way a module's mapping would.
    fn values_of(fields: &[SettingField]) -> Value {
        let object = fields
            .iter()
            .map(|field| {
                let value = match &field.value {
                    SettingValue::Bool(flag) => json!(flag),
                    SettingValue::Number { value, .. } => json!(value),
                    SettingValue::Text(text) | SettingValue::Secret(text) => json!(text),
                    SettingValue::Choice { value, .. } => json!(value),
                };
                (field.key.clone(), value)
            })
            .collect();
        Value::Object(object)
    }

    /// A flag, a number 10 in 0..=30 by 10, and a text.
    fn make_view() -> SettingsView {
        make_view_with(Arc::new(Store::default()))
    }

    fn make_view_with(store: Arc<Store>) -> SettingsView {
        SettingsView::new(
            "Demo settings",
            vec![
                field("flag", SettingValue::Bool(true)),
                field(
                    "count",
                    SettingValue::Number {
                        value: 10,
                        unit: "s".to_owned(),
                        min: 0,
                        max: 30,
                        step: 10,
                    },
                ),
                field("name", SettingValue::Text("x".to_owned())),
            ],
            values_of,
            store,
        )
    }

    fn value(view: &SettingsView, key: &str) -> Value {
        values_of(&view.model().fields)[key].clone()
    }

    #[test]
    fn keys_select_toggle_and_step_within_bounds() {
        let mut view = make_view();
        // (key, selected after, flag after, count after)
        let steps = [
            (ch(' '), 0, false, 10),
            (key(KeyCode::Enter), 0, true, 10),
            (key(KeyCode::Left), 0, false, 10),
            (key(KeyCode::Right), 0, true, 10),
            (key(KeyCode::Up), 0, true, 10),
            (key(KeyCode::Down), 1, true, 10),
            (key(KeyCode::Right), 1, true, 20),
            (ch('+'), 1, true, 30),
            (key(KeyCode::Right), 1, true, 30),
            (ch('-'), 1, true, 20),
            (key(KeyCode::PageDown), 1, true, 0),
            (key(KeyCode::Left), 1, true, 0),
            (key(KeyCode::PageUp), 1, true, 30),
            // Space does not change a number.
            (ch(' '), 1, true, 30),
            (ch('j'), 2, true, 30),
            (key(KeyCode::Down), 2, true, 30),
            (key(KeyCode::Home), 0, true, 30),
            (key(KeyCode::End), 2, true, 30),
        ];
        for (event, selected, flag, count) in steps {
            assert_eq!(view.handle_key(&event), ViewAction::Consumed);
            let what = format!("after {:?}", event.code);
            assert_eq!(view.model().selected, selected, "{what}");
            assert_eq!(value(&view, "flag"), json!(flag), "{what}");
            assert_eq!(value(&view, "count"), json!(count), "{what}");
        }
        // Space starts typing into a text; nothing changes until it is kept.
        view.handle_key(&ch(' '));
        assert_eq!(value(&view, "name"), json!("x"));
        assert_eq!(view.model().editing, Some(("x".to_owned(), 1)));
    }

    #[test]
    fn texts_and_secrets_are_typed_in_place_and_choices_step() {
        let mut view = SettingsView::new(
            "Demo settings",
            vec![
                field("url", SettingValue::Text("https://ntfy.sh".to_owned())),
                field("token", SettingValue::Secret("old-secret".to_owned())),
                field(
                    "method",
                    SettingValue::Choice {
                        value: "auto".to_owned(),
                        options: vec!["auto".to_owned(), "osc9".to_owned(), "bell".to_owned()],
                    },
                ),
            ],
            values_of,
            Arc::new(Store::default()),
        );
        // Enter types into the URL: Ctrl+U clears it, typing and a paste (line break dropped).
        view.handle_key(&key(KeyCode::Enter));
        view.handle_key(&KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        for c in "http://127.0.0.1".chars() {
            view.handle_key(&ch(c));
        }
        assert!(view.handle_paste(":8080\n"));
        assert_eq!(
            view.model().keys[0],
            ("Enter".to_owned(), "keep".to_owned()),
            "typing has its own keys"
        );
        assert!(view.cursor(Rect::new(0, 0, 80, 24)).is_some());
        assert_eq!(
            view.handle_key(&KeyEvent::new(KeyCode::F(5), KeyModifiers::NONE)),
            ViewAction::Unhandled
        );
        view.handle_key(&key(KeyCode::Enter));
        assert_eq!(value(&view, "url"), json!("http://127.0.0.1:8080"));
        assert!(view.model().dirty);
        assert_eq!(view.cursor(Rect::new(0, 0, 80, 24)), None);
        // A secret starts empty; an empty entry keeps the old one, Esc changes nothing.
        view.handle_key(&ch('j'));
        view.handle_key(&key(KeyCode::Enter));
        assert_eq!(view.model().editing, Some((String::new(), 0)));
        view.handle_key(&key(KeyCode::Enter));
        assert_eq!(value(&view, "token"), json!("old-secret"));
        view.handle_key(&key(KeyCode::Enter));
        view.handle_key(&ch('n'));
        view.handle_key(&key(KeyCode::Esc));
        assert_eq!(value(&view, "token"), json!("old-secret"));
        view.handle_key(&key(KeyCode::Enter));
        for c in "new".chars() {
            view.handle_key(&ch(c));
        }
        view.handle_key(&key(KeyCode::Enter));
        assert_eq!(value(&view, "token"), json!("new"));
        // Backspace on the row clears it.
        view.handle_key(&key(KeyCode::Backspace));
        assert_eq!(value(&view, "token"), json!(""));
        // A choice steps both ways and wraps.
        view.handle_key(&ch('j'));
        view.handle_key(&ch(' '));
        assert_eq!(value(&view, "method"), json!("osc9"));
        view.handle_key(&key(KeyCode::Left));
        view.handle_key(&key(KeyCode::Left));
        assert_eq!(value(&view, "method"), json!("bell"));
        assert_eq!(
            view.handle_key(&key(KeyCode::Backspace)),
            ViewAction::Unhandled
        );
    }

    #[test]
    fn dirty_means_different_from_what_was_saved() {
        let mut view = make_view();
        assert!(!view.model().dirty);
        view.handle_key(&ch(' '));
        assert!(view.model().dirty);
        view.handle_key(&ch(' '));
        assert!(!view.model().dirty, "toggled back: nothing to save");
    }

    #[test]
    fn save_hands_the_values_to_the_store_and_counts_once_confirmed() {
        let store = Arc::new(Store::default());
        let mut view = make_view_with(store.clone());
        assert_eq!(view.handle_key(&ch('s')), ViewAction::Consumed);
        assert_eq!(view.model().notice.as_deref(), Some("No changes to save."));
        assert!(store.take_saved().is_empty());
        view.handle_key(&ch(' '));
        let want = json!({"flag": false, "count": 10, "name": "x"});
        assert_eq!(view.handle_key(&ch('s')), ViewAction::Consumed);
        let ctrl_s = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(view.handle_key(&ctrl_s), ViewAction::Consumed);
        assert_eq!(store.take_saved(), [want.clone(), want]);
        refresh(&mut view);
        assert!(view.model().dirty, "not saved until the store says so");
        store.answer(Err("disk full".into()));
        refresh(&mut view);
        assert!(view.model().dirty);
        assert_eq!(view.model().notice.as_deref(), Some("Not saved: disk full"));
        view.handle_key(&ctrl_s);
        store.answer(Ok("Saved.".to_owned()));
        refresh(&mut view);
        assert!(!view.model().dirty);
        assert_eq!(view.model().notice.as_deref(), Some("Saved."));
        assert_eq!(view.handle_key(&key(KeyCode::Esc)), ViewAction::Close);
    }

    #[test]
    fn esc_with_unsaved_changes_needs_a_second_press() {
        let mut view = make_view();
        view.handle_key(&ch(' '));
        assert_eq!(view.handle_key(&key(KeyCode::Esc)), ViewAction::Consumed);
        assert_eq!(view.model().notice.as_deref(), Some(DISCARD_NOTICE));
        // Another key in between calls it off.
        view.handle_key(&key(KeyCode::Down));
        assert_eq!(view.model().notice, None);
        assert_eq!(view.handle_key(&key(KeyCode::Esc)), ViewAction::Consumed);
        assert_eq!(view.handle_key(&key(KeyCode::Esc)), ViewAction::Close);
        // Clean: one Esc closes.
        assert_eq!(
            make_view().handle_key(&key(KeyCode::Esc)),
            ViewAction::Close
        );
    }

    #[test]
    fn in_the_stack_the_save_reaches_the_store_and_stray_keys_are_named() {
        let store = Arc::new(Store::default());
        let mut stack = ViewStack::default();
        stack.push(Box::new(make_view_with(store.clone())));
        stack.handle_key(&ch(' '));
        assert_eq!(stack.handle_key(&ch('s')), KeyOutcome::Used(None));
        assert_eq!(store.take_saved().len(), 1);
        assert_eq!(
            stack.handle_key(&ch('z')),
            KeyOutcome::Unhandled {
                view: "Demo settings".to_owned(),
                close: "Esc".to_owned()
            }
        );
    }

    #[test]
    fn renders_the_overlay_with_the_dirty_marker() {
        let mut view = make_view();
        view.handle_key(&ch(' '));
        let mut buf = Buffer::empty(Rect::new(0, 0, 80, 24));
        view.render(buf.area, &mut buf, &Theme::plain());
        let text: String = buf.content().iter().map(|cell| cell.symbol()).collect();
        assert!(text.contains("Demo settings *"), "{text}");
        assert!(text.contains("[ ] off"), "{text}");
    }
}

//! The model picker view (`/unipi:model`, Alt+M): Pi's models, a fuzzy filter typed as plain
//! characters, and two slots filled in turn — Enter puts the selected model in the active slot
//! (primary, then sidekick), then on the confirm step applies the pair; Tab moves between the
//! slots; Esc closes it and nothing changes. A model Pi has no key for cannot be put in a slot:
//! the picker says why and stays open. Its keys are the `[fusion-picker]` table. Applying is the
//! port's work ([`PickerPort`]: the engine in the workbench, a recorder in tests); the view only
//! hands the pair over and closes.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use unipi_widgets::fusion::picker::{ModelRow, PickerModel, Slot, cursor_position, render};
use unipi_widgets::theme::Theme;

use super::config::ModelRef;
use super::engine::model_ref;
use super::fuzzy::rank_usable_first;
use super::savings::ratio_line;
use crate::bridge::ModelInfo;
use crate::config::keymap::{KeyTable, KeyTableSpec, Keymap, key_table};
use crate::views::{View, ViewAction};

key_table! {
    /// The `[fusion-picker]` key table.
    pub(crate) static PICKER_KEYS,
    pub(crate) enum PickerAction,
    table "fusion-picker", title "The model picker (/unipi:model, Alt+M)",
    defaults [
        ("up", "fusion-picker.up"),
        ("ctrl+p", "fusion-picker.up"),
        ("down", "fusion-picker.down"),
        ("ctrl+n", "fusion-picker.down"),
        ("pageup", "fusion-picker.page-up"),
        ("pagedown", "fusion-picker.page-down"),
        ("enter", "fusion-picker.choose"),
        ("tab", "fusion-picker.next-slot"),
        ("shift+tab", "fusion-picker.previous-slot"),
        ("ctrl+s", "fusion-picker.confirm"),
        ("backspace", "fusion-picker.backspace"),
        ("ctrl+u", "fusion-picker.clear"),
        ("esc", "fusion-picker.cancel"),
    ],
    actions {
        Up => "fusion-picker.up", "Select the model above";
        Down => "fusion-picker.down", "Select the model below";
        PageUp => "fusion-picker.page-up", "Up a page of models";
        PageDown => "fusion-picker.page-down", "Down a page of models";
        Choose => "fusion-picker.choose", "Put the model in the slot; on confirm, apply";
        NextSlot => "fusion-picker.next-slot", "Next slot (primary, sidekick, confirm)";
        PreviousSlot => "fusion-picker.previous-slot", "Previous slot";
        Confirm => "fusion-picker.confirm", "Apply the pair";
        Backspace => "fusion-picker.backspace", "Delete the filter's last character";
        Clear => "fusion-picker.clear", "Clear the filter";
        Cancel => "fusion-picker.cancel", "Close; nothing changes";
    }
}

/// Rows a page key moves.
const PAGE: usize = 10;

/// Where a confirmed pair goes.
pub(crate) trait PickerPort: Send + Sync {
    /// Applies the pair in the background (the outcome is a footer notice).
    fn apply(&self, primary: ModelRef, sidekick: ModelRef);
}

pub(crate) struct PickerView {
    models: Vec<ModelInfo>,
    /// Each model's filter text (`provider/id name`), in `models` order.
    haystacks: Vec<String>,
    /// Indices into `models` matching the filter: those with a key first, each group best first.
    matches: Vec<usize>,
    primary: Option<ModelInfo>,
    sidekick: Option<ModelInfo>,
    model: PickerModel,
    keys: KeyTable<PickerAction>,
    port: std::sync::Arc<dyn PickerPort>,
}

impl PickerView {
    /// The picker over `models` (those with a key first), with the current pair in its slots.
    pub(crate) fn new(
        mut models: Vec<ModelInfo>,
        current: Option<(ModelInfo, ModelInfo)>,
        port: std::sync::Arc<dyn PickerPort>,
        keymap: &Keymap,
    ) -> Self {
        // Stable: Pi's order within each group.
        models.sort_by_key(|model| model.has_auth == Some(false));
        let haystacks = models
            .iter()
            .map(|model| {
                format!(
                    "{} {}",
                    model.qualified(),
                    model.name.as_deref().unwrap_or("")
                )
            })
            .collect();
        let keys = KeyTable::<PickerAction>::from_keymap(keymap);
        let hint = keys.hint_line(&[
            (&[PickerAction::Up, PickerAction::Down], "select"),
            (&[PickerAction::Choose], "choose"),
            (&[PickerAction::NextSlot], "slot"),
            (&[PickerAction::Confirm], "confirm"),
            (&[PickerAction::Cancel], "cancel"),
        ]);
        let (primary, sidekick) = match current {
            Some((primary, sidekick)) => (Some(primary), Some(sidekick)),
            None => (None, None),
        };
        let mut view = PickerView {
            model: PickerModel {
                total: models.len(),
                keys: format!("type to filter · {hint}"),
                ..PickerModel::default()
            },
            models,
            haystacks,
            matches: Vec::new(),
            primary,
            sidekick,
            keys,
            port,
        };
        view.refilter();
        view.sync();
        view
    }

    #[cfg(test)]
    pub(crate) fn model(&self) -> &PickerModel {
        &self.model
    }

    fn refilter(&mut self) {
        let candidates = self
            .haystacks
            .iter()
            .zip(&self.models)
            .map(|(text, model)| (text.as_str(), model.has_auth != Some(false)));
        self.matches = rank_usable_first(&self.model.filter, candidates);
        self.model.selected = 0;
    }

    /// The widget model from the view's state.
    fn sync(&mut self) {
        self.model.rows = self
            .matches
            .iter()
            .map(|&index| row(&self.models[index]))
            .collect();
        self.model.primary = self.primary.as_ref().map(row);
        self.model.sidekick = self.sidekick.as_ref().map(row);
        self.model.cursor = self.model.filter.chars().count();
        self.model.preview = Some(match (&self.primary, &self.sidekick) {
            (Some(primary), Some(sidekick)) => {
                ratio_line(primary.cost.as_ref(), sidekick.cost.as_ref())
            }
            (Some(_), None) => {
                "Now a sidekick: a cheaper model for helpers, side questions and names".to_owned()
            }
            _ => "Pick the primary (the main agent's model), then a sidekick".to_owned(),
        });
    }

    fn selected_model(&self) -> Option<&ModelInfo> {
        self.matches
            .get(self.model.selected)
            .map(|&index| &self.models[index])
    }

    fn choose(&mut self) -> ViewAction {
        if self.model.slot == Slot::Confirm {
            return self.confirm();
        }
        let Some(chosen) = self.selected_model().cloned() else {
            self.model.notice = Some("No model matches the filter".to_owned());
            return ViewAction::Consumed;
        };
        if chosen.has_auth == Some(false) {
            self.model.notice = Some(format!(
                "No API key for {}: Pi has no credentials for `{}` (/login or its key)",
                chosen.qualified(),
                chosen.provider
            ));
            return ViewAction::Consumed;
        }
        self.model.notice = None;
        match self.model.slot {
            Slot::Primary => {
                self.primary = Some(chosen);
                self.model.slot = if self.sidekick.is_some() {
                    Slot::Confirm
                } else {
                    Slot::Sidekick
                };
            }
            Slot::Sidekick | Slot::Confirm => {
                self.sidekick = Some(chosen);
                self.model.slot = if self.primary.is_some() {
                    Slot::Confirm
                } else {
                    Slot::Primary
                };
            }
        }
        self.model.filter.clear();
        self.refilter();
        ViewAction::Consumed
    }

    fn confirm(&mut self) -> ViewAction {
        match (&self.primary, &self.sidekick) {
            (Some(primary), Some(sidekick)) => {
                self.port.apply(model_ref(primary), model_ref(sidekick));
                ViewAction::Close
            }
            (None, _) => {
                self.model.notice = Some("Pick a primary first".to_owned());
                self.model.slot = Slot::Primary;
                ViewAction::Consumed
            }
            (_, None) => {
                self.model.notice = Some("Pick a sidekick first".to_owned());
                self.model.slot = Slot::Sidekick;
                ViewAction::Consumed
            }
        }
    }

    fn move_by(&mut self, delta: isize) {
        let last = self.matches.len().saturating_sub(1);
        self.model.selected = self.model.selected.saturating_add_signed(delta).min(last);
    }
}

/// The slots in the order Tab walks them (Shift+Tab walks back; both wrap around).
const SLOT_ORDER: [Slot; 3] = [Slot::Primary, Slot::Sidekick, Slot::Confirm];

/// The slot `by` steps from `slot` in [`SLOT_ORDER`].
fn step_slot(slot: Slot, by: isize) -> Slot {
    // Every slot is in the order, so `position` finds it.
    let at = SLOT_ORDER.iter().position(|s| *s == slot).unwrap_or(0);
    SLOT_ORDER[(at as isize + by).rem_euclid(SLOT_ORDER.len() as isize) as usize]
}

/// A model as the picker's rows show it.
fn row(model: &ModelInfo) -> ModelRow {
    ModelRow {
        key: model.qualified(),
        name: model.name.clone(),
        context_window: model.context_window,
        price: model.cost.map(|cost| (cost.input, cost.output)),
        reasoning: model.reasoning,
        vision: model.vision,
        no_key: model.has_auth == Some(false),
    }
}

impl View for PickerView {
    fn title(&self) -> &str {
        "the model picker"
    }

    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        render(&self.model, theme, area, buf);
    }

    fn cursor(&self, area: Rect) -> Option<Position> {
        cursor_position(&self.model, area)
    }

    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction {
        let outcome = match self.keys.action(key) {
            Some(PickerAction::Cancel) => return ViewAction::Close,
            Some(PickerAction::Up) => {
                self.move_by(-1);
                ViewAction::Consumed
            }
            Some(PickerAction::Down) => {
                self.move_by(1);
                ViewAction::Consumed
            }
            Some(PickerAction::PageUp) => {
                self.move_by(-(PAGE as isize));
                ViewAction::Consumed
            }
            Some(PickerAction::PageDown) => {
                self.move_by(PAGE as isize);
                ViewAction::Consumed
            }
            Some(PickerAction::Choose) => self.choose(),
            Some(PickerAction::Confirm) => self.confirm(),
            Some(PickerAction::NextSlot) => {
                self.model.slot = step_slot(self.model.slot, 1);
                ViewAction::Consumed
            }
            Some(PickerAction::PreviousSlot) => {
                self.model.slot = step_slot(self.model.slot, -1);
                ViewAction::Consumed
            }
            Some(PickerAction::Backspace) => {
                self.model.filter.pop();
                self.refilter();
                ViewAction::Consumed
            }
            Some(PickerAction::Clear) => {
                self.model.filter.clear();
                self.refilter();
                ViewAction::Consumed
            }
            None => match key.code {
                KeyCode::Char(ch) if key.modifiers.difference(KeyModifiers::SHIFT).is_empty() => {
                    self.model.filter.push(ch);
                    self.refilter();
                    ViewAction::Consumed
                }
                _ => ViewAction::Unhandled,
            },
        };
        self.sync();
        outcome
    }

    fn handle_paste(&mut self, text: &str) -> bool {
        let line = text.lines().next().unwrap_or_default();
        self.model.filter.push_str(line.trim());
        self.refilter();
        self.sync();
        true
    }

    fn close_hint(&self) -> String {
        self.keys.close_key(PickerAction::Cancel)
    }

    fn key_table(&self) -> Option<&'static KeyTableSpec> {
        Some(&PICKER_KEYS)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::bridge::ModelCost;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<(String, String)>>);

    impl PickerPort for Recorder {
        fn apply(&self, primary: ModelRef, sidekick: ModelRef) {
            self.0
                .lock()
                .unwrap()
                .push((primary.to_string(), sidekick.to_string()));
        }
    }

    fn info(provider: &str, id: &str, price: (f64, f64), has_auth: bool) -> ModelInfo {
        ModelInfo {
            provider: provider.into(),
            id: id.into(),
            name: Some(format!("{id} model")),
            context_window: Some(128_000),
            has_auth: Some(has_auth),
            cost: Some(ModelCost {
                input: price.0,
                output: price.1,
                ..ModelCost::default()
            }),
            ..ModelInfo::default()
        }
    }

    fn models() -> Vec<ModelInfo> {
        vec![
            info("anthropic", "claude-opus", (15.0, 75.0), false),
            info("unipi-scripted", "big", (15.0, 75.0), true),
            info("unipi-scripted", "small", (0.25, 1.25), true),
        ]
    }

    fn press(view: &mut PickerView, code: KeyCode) -> ViewAction {
        view.handle_key(&KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn type_text(view: &mut PickerView, text: &str) {
        for ch in text.chars() {
            assert_eq!(press(view, KeyCode::Char(ch)), ViewAction::Consumed);
        }
    }

    #[test]
    fn filter_choose_both_slots_and_confirm_hands_the_pair_to_the_port() {
        let port = Arc::new(Recorder::default());
        let mut view = PickerView::new(models(), None, port.clone(), &Keymap::defaults());
        // Models with a key come first; the one without is last.
        let keys: Vec<&str> = view
            .model()
            .rows
            .iter()
            .map(|row| row.key.as_str())
            .collect();
        assert_eq!(
            keys,
            [
                "unipi-scripted/big",
                "unipi-scripted/small",
                "anthropic/claude-opus"
            ]
        );
        type_text(&mut view, "big");
        assert_eq!(view.model().rows.len(), 1);
        assert_eq!(press(&mut view, KeyCode::Enter), ViewAction::Consumed);
        assert_eq!(view.model().slot, Slot::Sidekick);
        assert_eq!(view.model().filter, "", "the filter clears after a choice");
        type_text(&mut view, "smal");
        press(&mut view, KeyCode::Enter);
        assert_eq!(view.model().slot, Slot::Confirm);
        assert_eq!(
            view.model().preview.as_deref(),
            Some("The sidekick is 60× cheaper (input 60×, output 60×)")
        );
        assert!(
            port.0.lock().unwrap().is_empty(),
            "nothing applied before the confirm"
        );
        assert_eq!(press(&mut view, KeyCode::Enter), ViewAction::Close);
        assert_eq!(
            *port.0.lock().unwrap(),
            [(
                "unipi-scripted/big".to_owned(),
                "unipi-scripted/small".to_owned()
            )]
        );
    }

    #[test]
    fn typing_a_filter_lists_the_usable_matches_before_those_without_a_key() {
        let port = Arc::new(Recorder::default());
        let models = vec![
            info("minimax", "MiniMax-M2", (0.3, 1.2), false),
            info("openai", "gpt-4o-mini", (0.15, 0.6), true),
        ];
        let mut view = PickerView::new(models, None, port, &Keymap::defaults());
        type_text(&mut view, "mini");
        let rows: Vec<(&str, bool)> = view
            .model()
            .rows
            .iter()
            .map(|row| (row.key.as_str(), row.no_key))
            .collect();
        assert_eq!(
            rows,
            [("openai/gpt-4o-mini", false), ("minimax/MiniMax-M2", true)]
        );
        // Enter on the first match fills the slot, with no "no API key" refusal.
        press(&mut view, KeyCode::Enter);
        assert_eq!(view.model().notice, None);
        assert_eq!(
            view.model().primary.as_ref().unwrap().key,
            "openai/gpt-4o-mini"
        );
    }

    #[test]
    fn a_model_without_a_key_is_refused_and_cancel_changes_nothing() {
        let port = Arc::new(Recorder::default());
        let mut view = PickerView::new(models(), None, port.clone(), &Keymap::defaults());
        type_text(&mut view, "opus");
        press(&mut view, KeyCode::Enter);
        assert_eq!(view.model().slot, Slot::Primary, "not put in the slot");
        assert!(view.model().primary.is_none());
        let notice = view.model().notice.clone().unwrap();
        assert!(
            notice.starts_with("No API key for anthropic/claude-opus"),
            "{notice}"
        );
        // Confirm without a pair says what is missing.
        let ctrl_s = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(view.handle_key(&ctrl_s), ViewAction::Consumed);
        assert_eq!(view.model().notice.as_deref(), Some("Pick a primary first"));
        // Editing the filter, moving, and closing.
        press(&mut view, KeyCode::Backspace);
        assert_eq!(view.model().filter, "opu");
        let ctrl_u = KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL);
        view.handle_key(&ctrl_u);
        assert_eq!(view.model().rows.len(), 3);
        press(&mut view, KeyCode::Down);
        press(&mut view, KeyCode::Down);
        press(&mut view, KeyCode::Down);
        assert_eq!(view.model().selected, 2);
        assert_eq!(press(&mut view, KeyCode::F(5)), ViewAction::Unhandled);
        assert_eq!(press(&mut view, KeyCode::Esc), ViewAction::Close);
        assert!(port.0.lock().unwrap().is_empty(), "cancel changes nothing");
    }

    #[test]
    fn tab_and_shift_tab_walk_the_slots_and_wrap_around() {
        let walks = [
            (Slot::Primary, Slot::Sidekick, Slot::Confirm),
            (Slot::Sidekick, Slot::Confirm, Slot::Primary),
            (Slot::Confirm, Slot::Primary, Slot::Sidekick),
        ];
        for (slot, next, previous) in walks {
            assert_eq!(step_slot(slot, 1), next, "Tab from {slot:?}");
            assert_eq!(step_slot(slot, -1), previous, "Shift+Tab from {slot:?}");
        }
    }

    #[test]
    fn the_current_pair_fills_the_slots_and_tab_moves_between_them() {
        let all = models();
        let port = Arc::new(Recorder::default());
        let current = Some((all[1].clone(), all[2].clone()));
        let mut view = PickerView::new(all, current, port.clone(), &Keymap::defaults());
        assert_eq!(
            view.model().sidekick.as_ref().unwrap().key,
            "unipi-scripted/small"
        );
        press(&mut view, KeyCode::Tab);
        assert_eq!(view.model().slot, Slot::Sidekick);
        view.handle_key(&KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT));
        assert_eq!(view.model().slot, Slot::Primary);
        // Choosing the primary again with a sidekick set goes straight to confirm.
        type_text(&mut view, "small");
        press(&mut view, KeyCode::Enter);
        assert_eq!(view.model().slot, Slot::Confirm);
        let ctrl_s = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(view.handle_key(&ctrl_s), ViewAction::Close);
        assert_eq!(port.0.lock().unwrap()[0].0, "unipi-scripted/small");
    }

    /// A picker over models as a user with an OpenAI and a Google key sees them.
    fn many_models() -> Vec<ModelInfo> {
        vec![
            info("minimax", "MiniMax-M2", (0.3, 1.2), false),
            info("minimax", "MiniMax-M2.1", (0.3, 1.2), false),
            info("anthropic", "claude-haiku-4-5", (1.0, 5.0), false),
            info("openai", "gpt-5", (1.25, 10.0), true),
            info("openai", "gpt-5-mini", (0.25, 2.0), true),
            info("openai", "gpt-4o-mini", (0.15, 0.6), true),
            info("google", "gemini-2.5-flash", (0.3, 2.5), true),
        ]
    }

    /// The view drawn on a `width` x `height` screen, one quoted line per row.
    fn draw(view: &PickerView, width: u16, height: u16) -> String {
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(width, height)).unwrap();
        terminal
            .draw(|frame| {
                let area = frame.area();
                view.render(area, frame.buffer_mut(), &Theme::plain());
            })
            .unwrap();
        terminal.backend().to_string()
    }

    /// The text inside the box's border on each row of `screen` (empty outside the box).
    fn box_rows(screen: &str) -> Vec<String> {
        screen
            .lines()
            .map(|line| match (line.find('│'), line.rfind('│')) {
                (Some(left), Some(right)) if left < right => {
                    line[left + '│'.len_utf8()..right].trim().to_owned()
                }
                _ => String::new(),
            })
            .collect()
    }

    #[test]
    fn the_keys_fit_at_80_columns_and_one_blank_row_separates_them_from_the_list() {
        for (width, height, name) in [
            (80, 24, "picker_mini_80x24"),
            (120, 40, "picker_mini_120x40"),
        ] {
            let port = Arc::new(Recorder::default());
            let mut view = PickerView::new(many_models(), None, port, &Keymap::defaults());
            type_text(&mut view, "mini");
            let screen = draw(&view, width, height);
            let rows = box_rows(&screen);
            // Every key of the hint is on screen, whole.
            let keys: Vec<&String> = rows
                .iter()
                .skip_while(|row| !row.starts_with("type to filter"))
                .take_while(|row| !row.is_empty())
                .collect();
            let keys = keys
                .iter()
                .map(|row| row.as_str())
                .collect::<Vec<_>>()
                .join(" · ");
            assert_eq!(
                keys,
                "type to filter · ↑↓ select · Enter choose · Tab slot · Ctrl+S confirm · Esc cancel",
                "{screen}"
            );
            // The last model, one blank row, the keys.
            let last_model = rows
                .iter()
                .rposition(|row| row.contains("minimax/MiniMax-M2.1"))
                .unwrap();
            assert_eq!(rows[last_model + 1], "", "{screen}");
            assert!(
                rows[last_model + 2].starts_with("type to filter"),
                "{screen}"
            );
            crate::assert_ui_snapshot!(name, screen);
        }
    }
}

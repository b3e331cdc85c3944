//! The help overlay view: lists the workbench's key bindings from the keymap, says every other
//! key goes to Pi, and shows the log file's path. Scrolls when the terminal is too small.

use std::cell::Cell;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use unipi_widgets::help::{HelpModel, max_scroll, render};
use unipi_widgets::theme::Theme;

use super::{View, ViewAction};
use crate::config::keymap::{Action, Key, Keymap};

pub struct HelpView {
    model: HelpModel,
    /// The keys bound to `help` close the overlay again (whatever the user bound them to).
    help_keys: Vec<Key>,
    /// The area of the last render, to clamp scrolling to what is visible.
    last_area: Cell<Rect>,
}

impl HelpView {
    pub fn new(keymap: &Keymap, log_path: String) -> Self {
        let mut bindings: Vec<(String, String)> = keymap
            .bindings()
            .into_iter()
            .map(|(keys, action)| (keys, action.description().to_string()))
            .collect();
        // The dock's own keys, which apply only while it has focus.
        bindings.extend(
            keymap
                .dock_hints(crate::config::keymap::DockPane::List)
                .into_iter()
                .chain(keymap.dock_hints(crate::config::keymap::DockPane::Detail))
                .map(|(keys, label)| (keys, format!("In the dock: {label}")))
                .fold(Vec::<(String, String)>::new(), |mut unique, hint| {
                    if !unique.contains(&hint) {
                        unique.push(hint);
                    }
                    unique
                }),
        );
        let help_keys = keymap
            .sequences_for(Action::Help)
            .into_iter()
            .filter_map(|keys| <[Key; 1]>::try_from(keys).ok().map(|[key]| key))
            .collect();
        HelpView {
            help_keys,
            model: HelpModel {
                bindings,
                log_path,
                scroll: 0,
            },
            last_area: Cell::new(Rect::default()),
        }
    }

    fn scroll_by(&mut self, delta: isize) {
        let max = max_scroll(&self.model, self.last_area.get());
        self.model.scroll = self.model.scroll.saturating_add_signed(delta).min(max);
    }
}

impl View for HelpView {
    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        self.last_area.set(area);
        render(&self.model, theme, area, buf);
    }

    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction {
        if self.help_keys.contains(&Key::from_event(key)) {
            return ViewAction::Close;
        }
        match key.code {
            KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q') => ViewAction::Close,
            KeyCode::Up | KeyCode::Char('k') => {
                self.scroll_by(-1);
                ViewAction::Consumed
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.scroll_by(1);
                ViewAction::Consumed
            }
            KeyCode::PageUp => {
                self.scroll_by(-10);
                ViewAction::Consumed
            }
            KeyCode::PageDown => {
                self.scroll_by(10);
                ViewAction::Consumed
            }
            _ => ViewAction::Consumed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_the_workbench_chords_and_the_dock_keys() {
        let view = HelpView::new(&Keymap::defaults(), "/tmp/unipi.log".into());
        let bindings = &view.model.bindings;
        assert!(bindings.contains(&("F1".into(), "Show these key bindings".into())));
        assert!(bindings.contains(&("s".into(), "In the dock: stop".into())));
        assert!(bindings.contains(&("S".into(), "In the dock: stop all".into())));
        // A key the list and the detail share is listed once.
        let stops = bindings
            .iter()
            .filter(|(_, d)| d == "In the dock: stop")
            .count();
        assert_eq!(stops, 1);
    }
}

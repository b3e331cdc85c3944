//! The help overlay view (F1): the workbench's own key bindings from the keymap, then the
//! `/unipi:*` commands the modules declared (from their declarations, never a hand list), then
//! every view's keys from its key table — each once — and the log file's path. It is far taller
//! than a terminal, so it scrolls with the pager keys (its border names them); opened over a view
//! ([`HelpView::at_table`]) it starts at that view's keys.

use std::cell::Cell;

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use unipi_widgets::help::{HelpModel, HelpSection, max_scroll, render};
use unipi_widgets::theme::Theme;

use super::dock::keys::DOCK_KEYS;
use super::dock::{DockAction, DockWords};
use super::pager::{Pager, PagerStep};
use super::{View, ViewAction};
use crate::config::keymap::{Action, Key, KeyTableSpec, Keymap, TableAction};

/// A `/unipi:*` command for the help overlay: its name (without the slash) and description.
pub type CommandHelp = (String, String);

pub struct HelpView {
    model: HelpModel,
    pager: Pager,
    /// The keys bound to `help` close the overlay again (whatever the user bound them to).
    help_keys: Vec<Key>,
    /// The area of the last render, to clamp scrolling to what is visible.
    last_area: Cell<Rect>,
}

impl HelpView {
    /// The overlay for `keymap`, listing `commands` (every module's `/unipi:*` commands).
    pub fn new(keymap: &Keymap, log_path: String, commands: Vec<CommandHelp>) -> Self {
        let bindings: Vec<(String, String)> = keymap
            .bindings()
            .into_iter()
            .map(|(keys, action)| (keys, action.description().to_string()))
            .collect();
        let mut sections = Vec::new();
        if !commands.is_empty() {
            let mut rows: Vec<(String, String)> = commands
                .into_iter()
                .map(|(name, description)| (format!("/{name}"), description))
                .collect();
            rows.sort();
            rows.dedup();
            sections.push(HelpSection {
                title: "Commands (type them in Pi's editor)".to_owned(),
                rows,
            });
        }
        let dock_words = crate::capability::dock_words();
        for view in keymap.views_help(&crate::capability::key_tables()) {
            if view.rows.is_empty() {
                continue;
            }
            // The dock's row keys in the words of the capabilities whose rows they act on.
            let words = |action: &str| {
                let action = (view.table == DOCK_KEYS.table)
                    .then(|| DockAction::from_name(action))
                    .flatten()?;
                DockWords::of_key(&dock_words, action)
            };
            sections.push(HelpSection {
                title: view.title.to_owned(),
                rows: view
                    .rows
                    .into_iter()
                    .map(|(keys, action, what)| {
                        (keys, words(action).unwrap_or_else(|| what.to_owned()))
                    })
                    .collect(),
            });
        }
        let help_keys = keymap
            .sequences_for(Action::Help)
            .into_iter()
            .filter_map(|keys| <[Key; 1]>::try_from(keys).ok().map(|[key]| key))
            .collect();
        let pager = Pager::new(keymap);
        HelpView {
            help_keys,
            model: HelpModel {
                bindings,
                sections,
                hint: format!("{} close", pager.close_key()),
                scroll_keys: pager.scroll_keys(),
                log_path,
                scroll: 0,
            },
            pager,
            last_area: Cell::new(Rect::default()),
        }
    }

    /// The same overlay, opened at the keys of `table` (the view F1 was pressed over); at the
    /// top when the help lists no keys for it.
    pub fn at_table(mut self, table: Option<&KeyTableSpec>) -> Self {
        self.model.scroll = table
            .and_then(|table| self.model.section_line(table.title))
            .unwrap_or(0);
        self
    }

    pub fn model(&self) -> &HelpModel {
        &self.model
    }
}

impl View for HelpView {
    fn title(&self) -> &str {
        "the key help"
    }

    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        self.last_area.set(area);
        render(&self.model, theme, area, buf);
    }

    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction {
        if self.help_keys.contains(&Key::from_event(key)) {
            return ViewAction::Close;
        }
        let page = usize::from(self.last_area.get().height.saturating_sub(2));
        match self.pager.step(key, page) {
            PagerStep::Close => ViewAction::Close,
            PagerStep::Scroll(delta) => {
                let max = max_scroll(&self.model, self.last_area.get());
                // Opened at a section near the end, `scroll` may be past the last page (drawn
                // as the last page): scroll from where the user sees it.
                let from = self.model.scroll.min(max);
                self.model.scroll = from.saturating_add_signed(delta).min(max);
                ViewAction::Consumed
            }
            PagerStep::Unbound => ViewAction::Unhandled,
        }
    }

    fn close_hint(&self) -> String {
        self.pager.close_key()
    }

    fn key_table(&self) -> Option<&'static KeyTableSpec> {
        Some(&super::pager::PAGER_KEYS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows_of<'m>(model: &'m HelpModel, title: &str) -> &'m [(String, String)] {
        model
            .sections
            .iter()
            .find(|s| s.title.contains(title))
            .map_or(&[][..], |s| &s.rows[..])
    }

    #[test]
    fn lists_the_chords_the_commands_and_every_views_keys_once() {
        let commands = vec![
            ("unipi:info".to_owned(), "Workbench info".to_owned()),
            ("unipi:bg".to_owned(), "Run in the background".to_owned()),
            ("unipi:info".to_owned(), "Workbench info".to_owned()),
        ];
        let view = HelpView::new(&Keymap::defaults(), "/tmp/unipi.log".into(), commands);
        let model = view.model();
        assert!(
            model
                .bindings
                .contains(&("F1".into(), "Show these key bindings".into()))
        );
        assert_eq!(
            rows_of(model, "Commands"),
            [
                ("/unipi:bg".to_owned(), "Run in the background".to_owned()),
                ("/unipi:info".to_owned(), "Workbench info".to_owned()),
            ]
        );
        // What the row keys do is the capabilities' words (`capability::tests`).
        let dock = rows_of(model, "The dock");
        let has = |keys: &str, what: &str| dock.iter().any(|(k, w)| k == keys && w.contains(what));
        assert!(has("t", "transcript"), "{dock:?}");
        assert!(has("m", "message"), "{dock:?}");
        // Each action once, with all its keys on one row.
        assert_eq!(
            dock.iter()
                .filter(|(_, w)| w.contains("Stop the selected"))
                .count(),
            1
        );
        assert!(has("↑ k", "above"), "{dock:?}");
        assert!(!rows_of(model, "Read-only overlays").is_empty());
        assert_eq!(model.hint, "Esc close");
    }

    #[test]
    fn opened_at_any_views_table_it_starts_at_that_tables_section() {
        let keymap = Keymap::defaults();
        let help = || HelpView::new(&keymap, String::new(), Vec::new());
        let tables = crate::capability::key_tables();
        assert!(tables.len() > 5, "{}", tables.len());
        for table in tables {
            let view = help().at_table(Some(table));
            let model = view.model();
            let section = model
                .sections
                .iter()
                .position(|section| section.title == table.title)
                .unwrap_or_else(|| panic!("no section for [{}]", table.table));
            assert_eq!(
                Some(model.scroll),
                model.section_line(&model.sections[section].title),
                "[{}]",
                table.table
            );
            assert!(model.scroll > 0, "[{}]", table.table);
        }
        assert_eq!(help().at_table(None).model().scroll, 0);
    }

    #[test]
    fn unbound_keys_are_unhandled_and_help_keys_close() {
        use crossterm::event::{KeyCode, KeyModifiers};
        let mut view = HelpView::new(&Keymap::defaults(), String::new(), Vec::new());
        let key = |code| KeyEvent::new(code, KeyModifiers::NONE);
        assert_eq!(
            view.handle_key(&key(KeyCode::Char('x'))),
            ViewAction::Unhandled
        );
        assert_eq!(view.handle_key(&key(KeyCode::Down)), ViewAction::Consumed);
        assert_eq!(view.handle_key(&key(KeyCode::F(1))), ViewAction::Close);
    }
}

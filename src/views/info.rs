//! The `/unipi:info` dashboard view: a tab per group (usage, each capability's figures,
//! extensions, skills, the workbench's own page), drawn by `unipi_widgets::dashboard`. Left/Right
//! (or h/l) and 1..9 switch tabs, the `[pager]` keys scroll and close, `r` refreshes: the view asks
//! its [`InfoSource`] to compute the groups again and pulls them in [`View::refresh`] when the
//! source signals its change, keeping the tab it was on. The view does no I/O: what it shows is
//! what the source computed.

use std::cell::Cell;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use unipi_widgets::dashboard::{
    DashboardModel, DashboardTab, dashboard_max_scroll, render_dashboard,
};
use unipi_widgets::theme::Theme;

use super::pager::Pager;
use super::{RefreshContext, View, ViewAction};
use crate::config::keymap::{KeyTable, KeyTableSpec, Keymap, key_table};

key_table! {
    /// The `[info]` table: the dashboard's tabs and refresh (scrolling and closing are the
    /// `[pager]`'s).
    pub(crate) static INFO_KEYS,
    pub(crate) enum InfoAction,
    table "info", title "The info dashboard (/unipi:info)",
    defaults [
        ("right", "info.next_tab"),
        ("l", "info.next_tab"),
        ("left", "info.previous_tab"),
        ("h", "info.previous_tab"),
        ("r", "info.refresh"),
    ],
    actions {
        NextTab => "info.next_tab", "Next tab";
        PreviousTab => "info.previous_tab", "Previous tab";
        Refresh => "info.refresh", "Compute the figures again";
    }
}

/// Where the dashboard's groups come from: computed again on request, off the UI loop.
pub trait InfoSource: Send + Sync {
    /// Starts computing every tab again; returns at once. When done, the source signals its
    /// change so the view pulls the tabs.
    fn refresh(&self);
    /// The tabs once computed, taken once.
    fn take(&self) -> Option<Vec<DashboardTab>>;
}

/// The `/unipi:info` dashboard.
pub struct DashboardView {
    model: DashboardModel,
    source: std::sync::Arc<dyn InfoSource>,
    keys: KeyTable<InfoAction>,
    pager: Pager,
    /// A refresh was asked for and has not arrived.
    refreshing: bool,
    /// The area of the last render, to clamp scrolling to what is visible.
    last_area: Cell<Rect>,
}

impl DashboardView {
    /// The dashboard over `model`'s tabs, on its first tab.
    pub fn new(
        model: DashboardModel,
        source: std::sync::Arc<dyn InfoSource>,
        keymap: &Keymap,
    ) -> Self {
        DashboardView {
            model: DashboardModel {
                active: 0,
                scroll: 0,
                ..model
            },
            source,
            keys: KeyTable::from_keymap(keymap),
            pager: Pager::new(keymap),
            refreshing: false,
            last_area: Cell::new(Rect::default()),
        }
    }

    pub fn model(&self) -> &DashboardModel {
        &self.model
    }

    /// Shows tab `index` from its top.
    fn show(&mut self, index: usize) {
        if index < self.model.tabs.len() {
            self.model.active = index;
            self.model.scroll = 0;
        }
    }

    fn hint(&self) -> String {
        let keys = self.keys.hints(&[
            (&[InfoAction::PreviousTab, InfoAction::NextTab], "tabs"),
            (&[InfoAction::Refresh], "refresh"),
        ]);
        let mut parts: Vec<String> = keys
            .into_iter()
            .map(|(keys, what)| format!("{keys} {what}"))
            .collect();
        if self.refreshing {
            parts.insert(0, "refreshing…".to_owned());
        }
        parts.push(self.pager.close_hint());
        parts.join(" · ")
    }
}

impl View for DashboardView {
    fn title(&self) -> &str {
        "/unipi:info"
    }

    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        self.last_area.set(area);
        render_dashboard(&self.model, &self.hint(), theme, area, buf);
    }

    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction {
        let count = self.model.tabs.len();
        match self.keys.action(key) {
            Some(InfoAction::NextTab) if count > 0 => {
                self.show((self.model.active + 1) % count);
                return ViewAction::Consumed;
            }
            Some(InfoAction::PreviousTab) if count > 0 => {
                self.show((self.model.active + count - 1) % count);
                return ViewAction::Consumed;
            }
            Some(InfoAction::Refresh) => {
                if !self.refreshing {
                    self.refreshing = true;
                    self.source.refresh();
                }
                return ViewAction::Consumed;
            }
            Some(_) | None => {}
        }
        if let KeyCode::Char(digit @ '1'..='9') = key.code
            && !key
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
        {
            self.show(digit as usize - '1' as usize);
            return ViewAction::Consumed;
        }
        let max = dashboard_max_scroll(&self.model, self.last_area.get());
        self.pager.handle(key, &mut self.model.scroll, max)
    }

    fn refresh(&mut self, _context: &RefreshContext<'_>) {
        let Some(tabs) = self.source.take() else {
            return;
        };
        self.refreshing = false;
        // The same tab, if it is still there (its title names it).
        let current = self
            .model
            .tabs
            .get(self.model.active)
            .map(|tab| tab.title().to_owned());
        let active = current
            .and_then(|title| tabs.iter().position(|tab| tab.title() == title))
            .unwrap_or(0);
        self.model.tabs = tabs;
        self.model.active = active;
    }

    fn close_hint(&self) -> String {
        self.pager.close_key()
    }

    fn key_table(&self) -> Option<&'static KeyTableSpec> {
        Some(&INFO_KEYS)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use unipi_widgets::dashboard::{InfoGroup, InfoRow};
    use unipi_widgets::footer::FooterData;

    use super::*;
    use crate::views::test_keys::key;

    /// A source that counts refreshes and hands back what a test put in.
    #[derive(Default)]
    struct FakeSource {
        asked: Mutex<usize>,
        ready: Mutex<Option<Vec<DashboardTab>>>,
    }

    impl InfoSource for FakeSource {
        fn refresh(&self) {
            *self.asked.lock().unwrap() += 1;
        }

        fn take(&self) -> Option<Vec<DashboardTab>> {
            self.ready.lock().unwrap().take()
        }
    }

    fn tab(title: &str, rows: usize) -> DashboardTab {
        DashboardTab::Group(InfoGroup {
            id: title.to_lowercase(),
            title: title.to_owned(),
            rows: (0..rows)
                .map(|i| InfoRow::new(format!("row {i}"), format!("{title} {i}")))
                .collect(),
        })
    }

    fn view(source: &Arc<FakeSource>) -> DashboardView {
        let model = DashboardModel {
            tabs: vec![tab("Usage", 40), tab("MCP", 2), tab("Skills", 1)],
            active: 2,
            scroll: 5,
        };
        let source: Arc<dyn InfoSource> = source.clone();
        DashboardView::new(model, source, &Keymap::defaults())
    }

    fn text(view: &DashboardView, width: u16, height: u16) -> String {
        let area = Rect::new(0, 0, width, height);
        let mut buf = Buffer::empty(area);
        view.render(area, &mut buf, &Theme::plain());
        buf.content().iter().map(|c| c.symbol()).collect()
    }

    #[test]
    fn tabs_switch_with_arrows_letters_and_digits_and_wrap() {
        let source = Arc::new(FakeSource::default());
        let mut view = view(&source);
        assert_eq!((view.model().active, view.model().scroll), (0, 0));
        let steps = [
            (KeyCode::Right, 1),
            (KeyCode::Char('l'), 2),
            (KeyCode::Right, 0),
            (KeyCode::Left, 2),
            (KeyCode::Char('h'), 1),
            (KeyCode::Char('1'), 0),
            (KeyCode::Char('3'), 2),
            // No ninth tab: stays.
            (KeyCode::Char('9'), 2),
        ];
        for (code, want) in steps {
            assert_eq!(view.handle_key(&key(code)), ViewAction::Consumed);
            assert_eq!(view.model().active, want, "after {code:?}");
        }
        assert_eq!(
            view.handle_key(&key(KeyCode::Char('x'))),
            ViewAction::Unhandled
        );
        assert_eq!(view.handle_key(&key(KeyCode::Esc)), ViewAction::Close);
    }

    #[test]
    fn scrolling_is_per_tab_and_a_switch_starts_at_the_top() {
        let source = Arc::new(FakeSource::default());
        let mut view = view(&source);
        let before = text(&view, 80, 24);
        assert!(before.contains("Usage 0"), "{before}");
        view.handle_key(&key(KeyCode::End));
        assert!(view.model().scroll > 0);
        let after = text(&view, 80, 24);
        assert!(
            after.contains("Usage 39") && !after.contains("Usage 0 "),
            "{after}"
        );
        view.handle_key(&key(KeyCode::Right));
        assert_eq!(view.model().scroll, 0);
        // MCP fits: nothing to scroll.
        view.handle_key(&key(KeyCode::Down));
        assert_eq!(view.model().scroll, 0);
    }

    #[test]
    fn a_refresh_is_asked_once_and_pulled_keeping_the_tab() {
        let source = Arc::new(FakeSource::default());
        let mut view = view(&source);
        view.handle_key(&key(KeyCode::Char('2')));
        view.handle_key(&key(KeyCode::Char('r')));
        view.handle_key(&key(KeyCode::Char('r')));
        assert_eq!(*source.asked.lock().unwrap(), 1, "one refresh in flight");
        assert!(text(&view, 100, 30).contains("refreshing…"));
        let pi = FooterData::default();
        let context = RefreshContext { pi: &pi };
        // Nothing computed yet: nothing changes.
        view.refresh(&context);
        assert_eq!(view.model().tabs.len(), 3);
        *source.ready.lock().unwrap() = Some(vec![tab("Web", 1), tab("MCP", 5)]);
        view.refresh(&context);
        assert_eq!(view.model().active, 1, "still on MCP");
        let shown = text(&view, 100, 30);
        assert!(
            shown.contains("MCP 4") && !shown.contains("refreshing…"),
            "{shown}"
        );
        view.handle_key(&key(KeyCode::Char('r')));
        assert_eq!(*source.asked.lock().unwrap(), 2);
    }
}

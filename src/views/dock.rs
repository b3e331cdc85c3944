//! The background-task dock view (Shift+Down, `/unipi:bg-tasks`): owns the dock's
//! [`DockModel`] — selection, list or detail, history toggle, the armed stop-all — and turns keys
//! into changes of it or into [`ViewRequest`]s (stop, stop all, rerun, copy the output path,
//! clear finished notices, mark seen) that the app carries out against the task service.
//!
//! The view never reads task state itself: the app pushes fresh rows with [`DockView::set_rows`]
//! whenever the service changes, and the selection follows the selected task by id across
//! updates. Stop-all is armed by the first press and fired by the second, with any other key in
//! between disarming it, so one stray key cannot kill every task. Esc steps back: from the detail
//! to the list, from the list out of the dock (focus returns to Pi).
//!
//! Keys are resolved through the keymap's `[dock]` table ([`DockKeys`]), never matched here, and
//! the hint line is built from the same table, so a key the user rebinds is the key the dock
//! shows. Keys the table does not bind are swallowed: the dock has focus, Pi must not see them.

use std::any::Any;
use std::cell::Cell;

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use unipi_widgets::dock::{
    DockMode, DockModel, DockRow, TaskStatus, dock_area, list_capacity, max_detail_scroll, render,
    selected_row, sort_rows, visible_rows,
};
use unipi_widgets::theme::Theme;

use super::{View, ViewAction, ViewRequest};
use crate::config::keymap::{DockAction, DockKeys, DockPane, Keymap};

pub struct DockView {
    model: DockModel,
    keys: DockKeys,
    /// The pane area of the last render, so paging matches what is visible.
    last_screen: Cell<Rect>,
}

impl DockView {
    /// A dock listing `rows` (any order), the first row selected, with the keymap's `[dock]`
    /// keys.
    pub fn new(rows: Vec<DockRow>, keymap: &Keymap) -> Self {
        let keys = keymap.dock_keys().clone();
        let mut view = DockView {
            model: DockModel {
                keys: keys.hints(DockPane::List),
                ..DockModel::default()
            },
            keys,
            last_screen: Cell::new(Rect::default()),
        };
        view.set_rows(rows);
        view
    }

    /// Replace the rows with the service's current state, keeping the selected task selected.
    /// When the task the detail shows is gone, the dock returns to the list.
    pub fn set_rows(&mut self, rows: Vec<DockRow>) {
        let selected_id = selected_row(&self.model).map(|row| row.id.clone());
        self.model.rows = rows;
        sort_rows(&mut self.model.rows);
        let position = selected_id.and_then(|id| {
            visible_rows(&self.model)
                .iter()
                .position(|row| row.id == id)
        });
        match position {
            Some(index) => self.model.selected = index,
            None => {
                if matches!(self.model.mode, DockMode::Detail { .. }) {
                    self.show_list();
                }
                self.clamp_selection();
            }
        }
    }

    /// One line of feedback (the outcome of a request the app carried out); `None` clears it.
    pub fn set_notice(&mut self, notice: Option<String>) {
        self.model.notice = notice;
    }

    /// Open the detail of the task `id` (`/unipi:bg-tasks <id>`); `false` when it is not listed.
    pub fn open_detail(&mut self, id: &str) -> bool {
        if !visible_rows(&self.model).iter().any(|row| row.id == id) {
            self.model.show_history = true;
        }
        let Some(index) = visible_rows(&self.model)
            .iter()
            .position(|row| row.id == id)
        else {
            return false;
        };
        self.model.selected = index;
        self.show_detail();
        true
    }

    pub fn model(&self) -> &DockModel {
        &self.model
    }

    /// Where the dock draws on a pane area `screen`: its lower part.
    pub fn area(&self, screen: Rect) -> Rect {
        dock_area(&self.model, screen)
    }

    fn handle_list_key(&mut self, action: DockAction) -> ViewAction {
        let page = list_capacity(&self.model, self.area(self.last_screen.get())).max(1);
        match action {
            DockAction::Back | DockAction::Close => return ViewAction::Close,
            DockAction::Up => self.move_selection(-1),
            DockAction::Down => self.move_selection(1),
            DockAction::PageUp => self.move_selection(-signed(page)),
            DockAction::PageDown => self.move_selection(signed(page)),
            DockAction::Top => self.model.selected = 0,
            DockAction::Bottom => self.move_selection(isize::MAX),
            DockAction::Open => {
                let Some(row) = selected_row(&self.model) else {
                    // Nothing to open: Enter on an empty list leaves the dock.
                    return ViewAction::Close;
                };
                let seen = (row.unseen).then(|| ViewRequest::MarkSeen(row.id.clone()));
                self.show_detail();
                return seen.map_or(ViewAction::Consumed, ViewAction::Request);
            }
            DockAction::History => {
                self.model.show_history = !self.model.show_history;
                self.clamp_selection();
            }
            _ => {}
        }
        ViewAction::Consumed
    }

    fn handle_detail_key(&mut self, action: DockAction) -> ViewAction {
        let page = unipi_widgets::dock::detail_tail_capacity(
            &self.model,
            self.area(self.last_screen.get()),
        )
        .max(1);
        match action {
            DockAction::Back => self.show_list(),
            DockAction::Close => return ViewAction::Close,
            DockAction::Up => self.scroll_detail(-1),
            DockAction::Down => self.scroll_detail(1),
            DockAction::PageUp => self.scroll_detail(-signed(page)),
            DockAction::PageDown => self.scroll_detail(signed(page)),
            DockAction::Top => {
                self.model.mode = DockMode::Detail {
                    scroll: 0,
                    follow: false,
                };
            }
            DockAction::Bottom => {
                self.model.mode = DockMode::Detail {
                    scroll: 0,
                    follow: true,
                };
            }
            _ => {}
        }
        ViewAction::Consumed
    }

    /// Actions on the selected task, the same in the list and the detail; `None` when `action`
    /// is not one of them.
    fn handle_task_action(&mut self, action: DockAction) -> Option<ViewAction> {
        let action = match action {
            DockAction::ClearNotices => {
                self.model.notice = Some("Finished notices cleared.".to_owned());
                ViewAction::Request(ViewRequest::ClearFinishedNotices)
            }
            DockAction::StopAll => self.stop_all(),
            DockAction::Stop => self.with_selected(|row| {
                if row.status == TaskStatus::Running {
                    (
                        format!("Stopping {}…", row.name),
                        Some(ViewRequest::StopTask(row.id.clone())),
                    )
                } else {
                    (
                        format!("{} is {}; nothing to stop.", row.name, row.status.label()),
                        None,
                    )
                }
            }),
            DockAction::Rerun => self.with_selected(|row| {
                if !row.is_shell {
                    (
                        "Only shell-command tasks can be rerun from the dock.".to_owned(),
                        None,
                    )
                } else if row.status == TaskStatus::Running {
                    (format!("{} is still running.", row.name), None)
                } else {
                    (
                        format!("Rerunning {}…", row.name),
                        Some(ViewRequest::RerunTask(row.id.clone())),
                    )
                }
            }),
            DockAction::CopyPath => self.with_selected(|row| {
                (
                    format!("Copied the output path of {}.", row.name),
                    Some(ViewRequest::CopyText(row.output_path.clone())),
                )
            }),
            _ => return None,
        };
        Some(action)
    }

    /// The first press arms, the second fires; only reached with running tasks.
    fn stop_all(&mut self) -> ViewAction {
        let running = self
            .model
            .rows
            .iter()
            .filter(|row| row.status == TaskStatus::Running)
            .count();
        if running == 0 {
            self.model.notice = Some("No running background tasks to stop.".to_owned());
            return ViewAction::Consumed;
        }
        let noun = if running == 1 { "task" } else { "tasks" };
        if self.model.stop_all_armed {
            self.model.stop_all_armed = false;
            self.model.notice = Some(format!("Stopping {running} running {noun}…"));
            return ViewAction::Request(ViewRequest::StopAllTasks);
        }
        self.model.stop_all_armed = true;
        // Armed means the key is bound, so the fallback never shows.
        let key = self
            .keys
            .hint_key(DockAction::StopAll)
            .unwrap_or_else(|| "it".to_owned());
        self.model.notice = Some(format!(
            "Press {key} again to stop all {running} running {noun}."
        ));
        ViewAction::Consumed
    }

    /// Run `act` on the selected row: it returns the notice to show and the request to make.
    fn with_selected(
        &mut self,
        act: impl FnOnce(&DockRow) -> (String, Option<ViewRequest>),
    ) -> ViewAction {
        let Some(row) = selected_row(&self.model) else {
            return ViewAction::Consumed;
        };
        let (notice, request) = act(row);
        self.model.notice = Some(notice);
        request.map_or(ViewAction::Consumed, ViewAction::Request)
    }

    fn move_selection(&mut self, delta: isize) {
        self.model.selected = self.model.selected.saturating_add_signed(delta);
        self.clamp_selection();
    }

    fn clamp_selection(&mut self) {
        let count = visible_rows(&self.model).len();
        self.model.selected = self.model.selected.min(count.saturating_sub(1));
    }

    /// Scroll the tail by `delta` lines: scrolling up pauses following, reaching the bottom
    /// going down resumes it.
    fn scroll_detail(&mut self, delta: isize) {
        let max = max_detail_scroll(&self.model, self.area(self.last_screen.get()));
        let DockMode::Detail { scroll, follow } = self.model.mode else {
            return;
        };
        let current = if follow { max } else { scroll.min(max) };
        let next = current.saturating_add_signed(delta).min(max);
        self.model.mode = DockMode::Detail {
            scroll: next,
            follow: (delta > 0 && next >= max) || (follow && delta >= 0),
        };
    }

    fn show_detail(&mut self) {
        self.model.mode = DockMode::Detail {
            scroll: 0,
            follow: true,
        };
        self.model.keys = self.keys.hints(DockPane::Detail);
    }

    fn show_list(&mut self) {
        self.model.mode = DockMode::List;
        self.model.keys = self.keys.hints(DockPane::List);
    }
}

impl View for DockView {
    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        self.last_screen.set(area);
        render(&self.model, theme, self.area(area), buf);
    }

    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction {
        let action = self.keys.action(key);
        if action != Some(DockAction::StopAll) && self.model.stop_all_armed {
            // Anything but the second press calls the stop-all off.
            self.model.stop_all_armed = false;
            self.model.notice = None;
        }
        let Some(action) = action else {
            return ViewAction::Consumed;
        };
        if let Some(done) = self.handle_task_action(action) {
            return done;
        }
        match self.model.mode {
            DockMode::List => self.handle_list_key(action),
            DockMode::Detail { .. } => self.handle_detail_key(action),
        }
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn Any> {
        Some(self)
    }
}

fn signed(n: usize) -> isize {
    isize::try_from(n).unwrap_or(isize::MAX)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crossterm::event::{KeyCode, KeyModifiers};

    use super::*;
    use crate::config::keymap::keymap_from_sources;
    use crate::views::ViewStack;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ch(c: char) -> KeyEvent {
        key(KeyCode::Char(c))
    }

    fn make_row(id: &str, status: TaskStatus) -> DockRow {
        DockRow {
            id: id.to_owned(),
            name: format!("task {id}"),
            status,
            unseen: status.is_finished(),
            is_shell: true,
            output_path: format!("/tmp/unipi-bg-tasks/s/{id}.output"),
            tail: (1..=50).map(|n| format!("line {n}")).collect(),
            ..DockRow::default()
        }
    }

    /// Two running tasks, one failed, one done (in that display order), drawn once on a
    /// 100x40 pane so paging knows the dock's size.
    fn make_dock() -> DockView {
        let view = DockView::new(
            vec![
                make_row("b4", TaskStatus::Done),
                make_row("b1", TaskStatus::Running),
                make_row("b3", TaskStatus::Failed),
                make_row("b2", TaskStatus::Running),
            ],
            &Keymap::defaults(),
        );
        let mut buf = Buffer::empty(Rect::new(0, 0, 100, 40));
        view.render(buf.area, &mut buf, &Theme::plain());
        view
    }

    fn hints(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(key, what)| ((*key).to_owned(), (*what).to_owned()))
            .collect()
    }

    /// The list hints with the built-in keys, as the dock showed them before keys came from
    /// the keymap.
    fn default_list_hints() -> Vec<(String, String)> {
        hints(&[
            ("↑↓", "select"),
            ("Enter", "details"),
            ("s", "stop"),
            ("S", "stop all"),
            ("r", "rerun"),
            ("y", "copy path"),
            ("h", "history"),
            ("Ctrl+Alt+C", "clear notices"),
            ("Esc", "close"),
        ])
    }

    fn selected_id(view: &DockView) -> String {
        selected_row(view.model()).map_or(String::new(), |row| row.id.clone())
    }

    #[test]
    fn selection_moves_and_clamps() {
        let mut view = make_dock();
        let steps = [
            (key(KeyCode::Up), "b1"),
            (key(KeyCode::Down), "b2"),
            (ch('j'), "b3"),
            (ch('j'), "b4"),
            (key(KeyCode::Down), "b4"),
            (ch('k'), "b3"),
            (key(KeyCode::Home), "b1"),
            (key(KeyCode::End), "b4"),
            (key(KeyCode::PageUp), "b1"),
        ];
        for (event, want) in steps {
            assert_eq!(view.handle_key(&event), ViewAction::Consumed);
            assert_eq!(selected_id(&view), want, "after {:?}", event.code);
        }
    }

    #[test]
    fn enter_opens_detail_and_esc_steps_back_then_closes() {
        let mut view = make_dock();
        view.handle_key(&ch('j'));
        view.handle_key(&ch('j')); // b3, failed and unseen
        assert_eq!(
            view.handle_key(&key(KeyCode::Enter)),
            ViewAction::Request(ViewRequest::MarkSeen("b3".to_owned()))
        );
        assert!(matches!(
            view.model().mode,
            DockMode::Detail { follow: true, .. }
        ));
        assert_eq!(
            view.model().keys,
            hints(&[
                ("↑↓ PgUp PgDn", "scroll"),
                ("End", "follow"),
                ("s", "stop"),
                ("r", "rerun"),
                ("y", "copy path"),
                ("Esc", "back"),
            ])
        );
        assert_eq!(view.handle_key(&key(KeyCode::Esc)), ViewAction::Consumed);
        assert_eq!(view.model().mode, DockMode::List);
        assert_eq!(view.model().keys, default_list_hints());
        assert_eq!(view.handle_key(&key(KeyCode::Esc)), ViewAction::Close);
        // A running task is never unseen: opening it asks for nothing.
        let mut view = make_dock();
        assert_eq!(view.handle_key(&key(KeyCode::Enter)), ViewAction::Consumed);
        // Enter on an empty dock leaves it.
        let mut empty = DockView::new(Vec::new(), &Keymap::defaults());
        assert_eq!(empty.handle_key(&key(KeyCode::Enter)), ViewAction::Close);
    }

    #[test]
    fn stop_all_needs_two_presses_in_a_row() {
        let mut view = make_dock();
        assert_eq!(view.handle_key(&ch('S')), ViewAction::Consumed);
        assert!(view.model().stop_all_armed);
        assert_eq!(
            view.model().notice.as_deref(),
            Some("Press S again to stop all 2 running tasks.")
        );
        // Another key in between disarms.
        view.handle_key(&key(KeyCode::Down));
        assert!(!view.model().stop_all_armed);
        assert_eq!(view.model().notice, None);
        assert_eq!(view.handle_key(&ch('S')), ViewAction::Consumed);
        assert_eq!(
            view.handle_key(&ch('S')),
            ViewAction::Request(ViewRequest::StopAllTasks)
        );
        assert!(!view.model().stop_all_armed);
        // Nothing running: nothing to arm.
        let mut idle = DockView::new(vec![make_row("b9", TaskStatus::Done)], &Keymap::defaults());
        assert_eq!(idle.handle_key(&ch('S')), ViewAction::Consumed);
        assert!(!idle.model().stop_all_armed);
    }

    #[test]
    fn task_keys_make_requests_for_the_selected_task() {
        let mut view = make_dock();
        let ctrl_alt_c = KeyEvent::new(
            KeyCode::Char('c'),
            KeyModifiers::CONTROL | KeyModifiers::ALT,
        );
        // (keys to press first, key, request expected)
        let cases: [(&[KeyEvent], KeyEvent, Option<ViewRequest>); 6] = [
            (&[], ch('s'), Some(ViewRequest::StopTask("b1".to_owned()))),
            // Running: nothing to rerun.
            (&[], ch('r'), None),
            (
                &[],
                ch('y'),
                Some(ViewRequest::CopyText(
                    "/tmp/unipi-bg-tasks/s/b1.output".to_owned(),
                )),
            ),
            (
                &[ctrl_alt_c],
                ctrl_alt_c,
                Some(ViewRequest::ClearFinishedNotices),
            ),
            // The done task: nothing to stop, but it can be rerun.
            (&[key(KeyCode::End)], ch('s'), None),
            (&[], ch('r'), Some(ViewRequest::RerunTask("b4".to_owned()))),
        ];
        for (before, event, want) in cases {
            for event in before {
                view.handle_key(event);
            }
            let got = view.handle_key(&event);
            let want = want.map_or(ViewAction::Consumed, ViewAction::Request);
            assert_eq!(got, want, "{:?} on {}", event.code, selected_id(&view));
            assert!(view.model().notice.is_some());
        }
    }

    #[test]
    fn agent_tasks_are_not_rerun() {
        let mut row = make_row("d1", TaskStatus::Done);
        row.is_shell = false;
        let mut view = DockView::new(vec![row], &Keymap::defaults());
        assert_eq!(view.handle_key(&ch('r')), ViewAction::Consumed);
    }

    #[test]
    fn history_toggle_shows_cleared_finished_tasks() {
        let mut seen = make_row("b5", TaskStatus::Done);
        seen.unseen = false;
        seen.cleared = true;
        let mut view = DockView::new(
            vec![seen, make_row("b1", TaskStatus::Running)],
            &Keymap::defaults(),
        );
        assert_eq!(visible_rows(view.model()).len(), 1);
        view.handle_key(&ch('h'));
        assert_eq!(visible_rows(view.model()).len(), 2);
        view.handle_key(&key(KeyCode::End));
        view.handle_key(&ch('h'));
        assert_eq!(selected_id(&view), "b1");
    }

    #[test]
    fn set_rows_keeps_the_selected_task_and_leaves_a_vanished_detail() {
        let mut view = make_dock();
        view.handle_key(&key(KeyCode::Down)); // b2
        view.set_rows(vec![
            make_row("b2", TaskStatus::Done),
            make_row("b1", TaskStatus::Running),
            make_row("b0", TaskStatus::Running),
        ]);
        assert_eq!(selected_id(&view), "b2");
        view.handle_key(&key(KeyCode::Enter));
        view.set_rows(vec![make_row("b1", TaskStatus::Running)]);
        assert_eq!(view.model().mode, DockMode::List);
        assert_eq!(selected_id(&view), "b1");
    }

    #[test]
    fn detail_scrolling_pauses_and_resumes_following() {
        let mut view = make_dock();
        view.handle_key(&key(KeyCode::Enter));
        let area = view.area(Rect::new(0, 0, 100, 40));
        let max = max_detail_scroll(view.model(), area);
        assert!(max > 0, "the 50-line tail must not fit");
        let mode = |view: &DockView| view.model().mode;
        view.handle_key(&key(KeyCode::Up));
        assert_eq!(
            mode(&view),
            DockMode::Detail {
                scroll: max - 1,
                follow: false
            }
        );
        view.handle_key(&key(KeyCode::PageUp));
        assert!(
            matches!(mode(&view), DockMode::Detail { follow: false, scroll } if scroll < max - 1)
        );
        view.handle_key(&key(KeyCode::Home));
        assert_eq!(
            mode(&view),
            DockMode::Detail {
                scroll: 0,
                follow: false
            }
        );
        view.handle_key(&key(KeyCode::PageDown));
        assert!(matches!(
            mode(&view),
            DockMode::Detail { follow: false, .. }
        ));
        for _ in 0..10 {
            view.handle_key(&key(KeyCode::PageDown));
        }
        assert_eq!(
            mode(&view),
            DockMode::Detail {
                scroll: max,
                follow: true
            }
        );
        view.handle_key(&key(KeyCode::Home));
        view.handle_key(&key(KeyCode::End));
        assert!(matches!(mode(&view), DockMode::Detail { follow: true, .. }));
    }

    #[test]
    fn open_detail_finds_tasks_in_history() {
        let mut seen = make_row("b7", TaskStatus::Done);
        seen.unseen = false;
        let mut view = DockView::new(
            vec![make_row("b1", TaskStatus::Running), seen],
            &Keymap::defaults(),
        );
        assert!(view.open_detail("b7"));
        assert_eq!(selected_id(&view), "b7");
        assert!(!view.open_detail("nope"));
    }

    #[test]
    fn the_stack_hands_requests_to_the_app_and_finds_the_dock() {
        let mut stack = ViewStack::default();
        assert_eq!(stack.handle_key(&ch('s')), None);
        stack.push(Box::new(make_dock()));
        assert_eq!(
            stack.handle_key(&ch('s')),
            Some(vec![ViewRequest::StopTask("b1".to_owned())])
        );
        assert_eq!(stack.handle_key(&ch('j')), Some(vec![]));
        let dock = stack.find_mut::<DockView>();
        assert_eq!(dock.map(|dock| selected_id(dock)), Some("b2".to_owned()));
        stack.handle_key(&key(KeyCode::Esc));
        assert!(stack.is_empty());
        assert!(stack.find_mut::<DockView>().is_none());
    }

    #[test]
    fn renders_over_the_lower_part_of_the_pane() {
        let view = make_dock();
        let mut buf = Buffer::empty(Rect::new(0, 0, 100, 40));
        view.render(buf.area, &mut buf, &Theme::plain());
        let area = view.area(buf.area);
        assert_eq!(area, Rect::new(0, 24, 100, 16));
        assert_eq!(buf[(0, 23)].symbol(), " ");
        assert_eq!(buf[(0, 24)].symbol(), "┌");
    }

    #[test]
    fn the_list_starts_with_the_default_hints() {
        assert_eq!(make_dock().model().keys, default_list_hints());
    }

    #[test]
    fn a_user_keymap_moves_stop_to_x() {
        let (keymap, errors) = keymap_from_sources(Some((
            Path::new("/cfg/keymap.toml"),
            "[dock]\n\"x\" = \"dock.stop\"\n\"s\" = \"none\"\n\"X\" = \"dock.stop_all\"\n",
        )));
        assert!(errors.is_empty(), "{errors:?}");
        let mut view = DockView::new(
            vec![
                make_row("b1", TaskStatus::Running),
                make_row("b2", TaskStatus::Running),
            ],
            &keymap,
        );
        // `s` is unbound: swallowed, no request, no notice.
        assert_eq!(view.handle_key(&ch('s')), ViewAction::Consumed);
        assert_eq!(view.model().notice, None);
        assert_eq!(
            view.handle_key(&ch('x')),
            ViewAction::Request(ViewRequest::StopTask("b1".to_owned()))
        );
        let hint = |view: &DockView, what: &str| {
            view.model()
                .keys
                .iter()
                .find(|(_, label)| label == what)
                .map(|(key, _)| key.clone())
        };
        assert_eq!(hint(&view, "stop").as_deref(), Some("x"));
        // The user's key comes first; the default S keeps working.
        assert_eq!(hint(&view, "stop all").as_deref(), Some("X"));
        assert_eq!(view.handle_key(&ch('X')), ViewAction::Consumed);
        assert_eq!(
            view.model().notice.as_deref(),
            Some("Press X again to stop all 2 running tasks.")
        );
        assert_eq!(
            view.handle_key(&ch('S')),
            ViewAction::Request(ViewRequest::StopAllTasks)
        );
        view.handle_key(&key(KeyCode::Enter));
        assert_eq!(hint(&view, "stop").as_deref(), Some("x"));
    }

    #[test]
    fn unbound_keys_are_swallowed_without_effect() {
        let mut view = make_dock();
        for event in [
            ch('z'),
            key(KeyCode::F(1)),
            KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL),
        ] {
            assert_eq!(view.handle_key(&event), ViewAction::Consumed);
            assert_eq!(selected_id(&view), "b1");
            assert_eq!(view.model().notice, None);
        }
    }
}

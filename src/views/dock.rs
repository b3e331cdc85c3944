//! The dock view (Shift+Down, `/unipi:bg-tasks`): owns the dock's [`DockModel`] — selection,
//! list or detail, history toggle, the armed stop-all and helper stop, the steer input — and
//! turns keys into changes of it, into [`ViewRequest`]s for the task service (stop, stop all,
//! rerun, copy, clear finished notices, mark seen), or into [`HelperRequest`]s for the helper
//! board (steer, stop), which the app drains with [`DockView::take_helper_requests`] and answers
//! with [`DockView::steer_finished`] / [`DockView::stop_finished`].
//!
//! The view never reads task or helper state itself: the app pushes fresh rows with
//! [`DockView::set_rows`] and [`DockView::set_agents`] whenever the service or the board
//! changes, and the selection follows the selected entry by id across updates. Stop-all — and
//! stopping a helper, whose work is lost with it — is armed by the first press and fired by the
//! second, with any other key in between disarming it, so one stray key cannot kill anything
//! expensive. Esc steps back: out of the steer input, from the detail to the list, from the list
//! out of the dock (focus returns to Pi).
//!
//! Keys are resolved through the keymap's `[dock]` table ([`DockKeys`]), never matched here, and
//! the hint line is built from the same table, so a key the user rebinds is the key the dock
//! shows. Keys the table does not bind are swallowed: the dock has focus, Pi must not see them.
//! The steer input is the exception: while it is open it takes every key as text (Enter sends,
//! Esc cancels), because a message must be able to contain `s` or `q`.

use std::any::Any;
use std::cell::Cell;
use std::collections::HashSet;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use unipi_widgets::agents::{AgentKind, AgentRow, arrange_agents};
use unipi_widgets::dock::{
    DockMode, DockModel, DockRow, Entry, SteerInput, TaskStatus, dock_area, entries, list_capacity,
    max_detail_scroll, render, selected_agent, selected_entry, selected_row, sort_rows,
    steer_cursor,
};
use unipi_widgets::theme::Theme;

use super::{View, ViewAction, ViewRequest};
use crate::config::keymap::{DockAction, DockKeys, DockPane, Keymap};

/// Work on the helper board the dock asks the app for (views do no I/O).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HelperRequest {
    /// Deliver `message` to run `id` before its next model call.
    Steer { id: String, message: String },
    /// Stop run `id` (armed and confirmed already).
    Stop(String),
}

pub struct DockView {
    model: DockModel,
    keys: DockKeys,
    /// The pane area of the last render, so paging matches what is visible.
    last_screen: Cell<Rect>,
    /// Asked of the helper board, not yet taken by the app.
    helper_requests: Vec<HelperRequest>,
}

/// Which entry is selected, to find it again after the rows change.
#[derive(Clone, Debug, PartialEq, Eq)]
struct EntryKey {
    agent: bool,
    id: String,
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
            helper_requests: Vec::new(),
        };
        view.set_rows(rows);
        view
    }

    /// Replace the task rows with the service's current state, keeping the selected entry
    /// selected. When the entry the detail shows is gone, the dock returns to the list.
    pub fn set_rows(&mut self, rows: Vec<DockRow>) {
        let selected = self.selected_key();
        self.model.rows = rows;
        self.drop_agent_tasks();
        sort_rows(&mut self.model.rows);
        self.reselect(selected);
    }

    /// Replace the agent rows (main agent and board runs, any order; they are arranged into
    /// their tree here), keeping the selected entry selected.
    pub fn set_agents(&mut self, agents: Vec<AgentRow>) {
        // The first agents to arrive come with a freshly opened dock: select the first entry
        // below the main agent (a helper, else a task). The main agent's row is context — it is
        // steered and stopped in Pi — so a fresh dock's keys act on what the dock is for.
        let fresh = self.model.agents.is_empty() && self.model.mode == DockMode::List;
        let selected = (!fresh).then(|| self.selected_key()).flatten();
        self.model.agents = arrange_agents(agents);
        self.drop_agent_tasks();
        if fresh {
            self.model.selected = entries(&self.model)
                .iter()
                .position(
                    |entry| !matches!(entry, Entry::Agent(row) if row.kind == AgentKind::Main),
                )
                .unwrap_or(0);
        }
        self.reselect(selected);
    }

    /// One line of feedback (the outcome of a request the app carried out); `None` clears it.
    pub fn set_notice(&mut self, notice: Option<String>) {
        self.model.notice = notice;
    }

    /// Open the detail of the task or agent `id` (`/unipi:bg-tasks <id>`); `false` when it is
    /// not listed.
    pub fn open_detail(&mut self, id: &str) -> bool {
        let position = |model: &DockModel| entries(model).iter().position(|e| e.id() == id);
        if position(&self.model).is_none() {
            self.model.show_history = true;
        }
        let Some(index) = position(&self.model) else {
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

    /// The run whose transcript the detail shows, if the detail shows a helper or delegate.
    pub fn transcript_target(&self) -> Option<String> {
        match self.model.mode {
            DockMode::Detail { .. } => selected_agent(&self.model)
                .filter(|row| row.kind != AgentKind::Main)
                .map(|row| row.id.clone()),
            DockMode::List => None,
        }
    }

    /// The requests for the helper board made since the last call.
    pub fn take_helper_requests(&mut self) -> Vec<HelperRequest> {
        std::mem::take(&mut self.helper_requests)
    }

    /// The board's answer to a steer of `id`: success closes the input and says so; an error is
    /// shown under the input, with the message kept for another try.
    pub fn steer_finished(&mut self, id: &str, result: Result<(), String>) {
        let Some(steer) = self.model.steer.as_mut().filter(|steer| steer.target == id) else {
            return;
        };
        match result {
            Ok(()) => {
                self.model.notice = Some(format!("Sent to {}.", steer.label));
                self.model.steer = None;
            }
            Err(err) => steer.error = Some(err),
        }
        self.sync_keys();
    }

    /// The board's answer to a stop of `id`: `false` when the run had no live process.
    pub fn stop_finished(&mut self, id: &str, stopped: bool) {
        if !stopped {
            self.model.notice = Some(format!("{id} has no live process to stop."));
        }
    }

    /// Pasted text goes into the steer input when it is open (as one line); `false` otherwise.
    pub fn paste(&mut self, text: &str) -> bool {
        let Some(steer) = self.model.steer.as_mut() else {
            return false;
        };
        for ch in text.chars() {
            let ch = if ch.is_control() { ' ' } else { ch };
            insert_char(steer, ch);
        }
        steer.error = None;
        true
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
            DockAction::Open | DockAction::Transcript => {
                let Some(entry) = selected_entry(&self.model) else {
                    // Nothing to open: Enter on an empty list leaves the dock.
                    return ViewAction::Close;
                };
                let unseen = match entry {
                    Entry::Agent(row) => row.unseen,
                    Entry::Task(row) => row.unseen,
                };
                let seen = unseen.then(|| ViewRequest::MarkSeen(entry.id().to_owned()));
                self.show_detail();
                return seen.map_or(ViewAction::Consumed, ViewAction::Request);
            }
            DockAction::History => {
                let selected = self.selected_key();
                self.model.show_history = !self.model.show_history;
                self.reselect(selected);
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

    /// Actions on the selected agent, the same in the list and the detail; `None` when an
    /// agent is not selected or `action` is not one of them.
    fn handle_agent_action(&mut self, action: DockAction) -> Option<ViewAction> {
        let row = selected_agent(&self.model)?;
        let main = row.kind == AgentKind::Main;
        let label = row.label();
        let (id, status) = (row.id.clone(), row.status);
        let notice = match action {
            DockAction::Stop if main => "Stop the main agent in Pi (Esc in its editor).".to_owned(),
            DockAction::Stop if status.is_finished() => {
                format!("{label} is {}; nothing to stop.", status.label())
            }
            DockAction::Stop if self.model.stop_armed.as_deref() == Some(id.as_str()) => {
                self.model.stop_armed = None;
                self.helper_requests.push(HelperRequest::Stop(id));
                format!("Stopping {label}…")
            }
            DockAction::Stop => {
                self.model.stop_armed = Some(id);
                // Armed means the key is bound, so the fallback never shows.
                let key = self
                    .keys
                    .hint_key(DockAction::Stop)
                    .unwrap_or_else(|| "it".to_owned());
                format!("Press {key} again to stop {label}; its work so far is kept.")
            }
            DockAction::Steer if main => "Steer the main agent by typing in Pi.".to_owned(),
            DockAction::Steer if status.is_finished() => {
                format!("{label} has ended; it cannot be steered.")
            }
            DockAction::Steer => {
                self.model.steer = Some(SteerInput {
                    target: id,
                    label,
                    ..SteerInput::default()
                });
                self.model.notice = None;
                return Some(ViewAction::Consumed);
            }
            DockAction::Rerun => {
                "Helpers are not rerun from the dock; ask the agent to run one again.".to_owned()
            }
            DockAction::CopyPath if main => "The main agent has no run id to copy.".to_owned(),
            DockAction::CopyPath => {
                self.model.notice = Some(format!("Copied the run id {id}."));
                return Some(ViewAction::Request(ViewRequest::CopyText(id)));
            }
            _ => return None,
        };
        self.model.notice = Some(notice);
        Some(ViewAction::Consumed)
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
            DockAction::Steer => {
                self.model.notice = Some("Only helpers can be steered.".to_owned());
                ViewAction::Consumed
            }
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

    /// Keys while the steer input is open: text editing, Enter sends, Esc cancels.
    fn handle_steer_key(&mut self, key: &KeyEvent) -> ViewAction {
        let Some(steer) = self.model.steer.as_mut() else {
            return ViewAction::Consumed;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let length = steer.text.chars().count();
        steer.error = None;
        match key.code {
            KeyCode::Esc => {
                self.model.steer = None;
                self.model.notice = Some("Steer cancelled.".to_owned());
            }
            KeyCode::Enter => {
                let message = steer.text.trim();
                if message.is_empty() {
                    steer.error = Some("Type a message first (Esc cancels).".to_owned());
                } else {
                    self.helper_requests.push(HelperRequest::Steer {
                        id: steer.target.clone(),
                        message: message.to_owned(),
                    });
                }
            }
            KeyCode::Backspace if steer.cursor > 0 => {
                steer.cursor -= 1;
                remove_char(steer, steer.cursor);
            }
            KeyCode::Delete if steer.cursor < length => remove_char(steer, steer.cursor),
            KeyCode::Left => steer.cursor = steer.cursor.saturating_sub(1),
            KeyCode::Right => steer.cursor = (steer.cursor + 1).min(length),
            KeyCode::Home => steer.cursor = 0,
            KeyCode::End => steer.cursor = length,
            KeyCode::Char('a') if ctrl => steer.cursor = 0,
            KeyCode::Char('e') if ctrl => steer.cursor = length,
            KeyCode::Char('u') if ctrl => {
                let rest: String = steer.text.chars().skip(steer.cursor).collect();
                steer.text = rest;
                steer.cursor = 0;
            }
            KeyCode::Char(ch) if !ctrl && !alt => insert_char(steer, ch),
            _ => {}
        }
        ViewAction::Consumed
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

    /// Run `act` on the selected task: it returns the notice to show and the request to make.
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

    /// A delegate is a background task too (same id): it is listed once, as the agent row,
    /// which knows more about it.
    fn drop_agent_tasks(&mut self) {
        if self.model.agents.is_empty() {
            return;
        }
        let agents: HashSet<&str> = self
            .model
            .agents
            .iter()
            .filter(|row| row.kind != AgentKind::Main)
            .map(|row| row.id.as_str())
            .collect();
        self.model
            .rows
            .retain(|row| !agents.contains(row.id.as_str()));
    }

    fn selected_key(&self) -> Option<EntryKey> {
        selected_entry(&self.model).map(|entry| EntryKey {
            agent: entry.is_agent(),
            id: entry.id().to_owned(),
        })
    }

    /// Select `key` again after the entries changed; when it is gone, leave a detail that
    /// showed it and keep the index in range.
    fn reselect(&mut self, key: Option<EntryKey>) {
        let position = key.and_then(|key| {
            entries(&self.model)
                .iter()
                .position(|entry| entry.is_agent() == key.agent && entry.id() == key.id)
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
        self.sync_keys();
    }

    fn move_selection(&mut self, delta: isize) {
        self.model.selected = self.model.selected.saturating_add_signed(delta);
        self.clamp_selection();
    }

    fn clamp_selection(&mut self) {
        let count = entries(&self.model).len();
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
        self.sync_keys();
    }

    fn show_list(&mut self) {
        self.model.mode = DockMode::List;
        self.sync_keys();
    }

    /// The hint line for what is on screen: the steer input's keys, or the keymap's hints for
    /// the list or detail of the selected kind of entry.
    fn sync_keys(&mut self) {
        if self.model.steer.is_some() {
            self.model.keys = [("Enter", "send"), ("Esc", "cancel"), ("Ctrl+U", "clear")]
                .iter()
                .map(|(key, what)| ((*key).to_owned(), (*what).to_owned()))
                .collect();
            return;
        }
        let agent = selected_entry(&self.model).is_some_and(|entry| entry.is_agent());
        let pane = match (self.model.mode, agent) {
            (DockMode::List, false) => DockPane::List,
            (DockMode::List, true) => DockPane::Agents,
            (DockMode::Detail { .. }, false) => DockPane::Detail,
            (DockMode::Detail { .. }, true) => DockPane::Transcript,
        };
        self.model.keys = self.keys.hints(pane);
    }
}

impl View for DockView {
    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        self.last_screen.set(area);
        render(&self.model, theme, self.area(area), buf);
    }

    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction {
        if self.model.steer.is_some() {
            let done = self.handle_steer_key(key);
            self.sync_keys();
            return done;
        }
        let action = self.keys.action(key);
        if action != Some(DockAction::StopAll) && self.model.stop_all_armed {
            // Anything but the second press calls the stop-all off.
            self.model.stop_all_armed = false;
            self.model.notice = None;
        }
        let armed_here = selected_agent(&self.model)
            .is_some_and(|row| self.model.stop_armed.as_ref() == Some(&row.id));
        if self.model.stop_armed.is_some() && (action != Some(DockAction::Stop) || !armed_here) {
            // Likewise for stopping a helper: only the same key on the same helper fires.
            self.model.stop_armed = None;
            self.model.notice = None;
        }
        let Some(action) = action else {
            return ViewAction::Consumed;
        };
        let done = if let Some(done) = self.handle_agent_action(action) {
            done
        } else if let Some(done) = self.handle_task_action(action) {
            done
        } else {
            match self.model.mode {
                DockMode::List => self.handle_list_key(action),
                DockMode::Detail { .. } => self.handle_detail_key(action),
            }
        };
        self.sync_keys();
        done
    }

    fn cursor(&self, area: Rect) -> Option<Position> {
        steer_cursor(&self.model, self.area(area))
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn Any> {
        Some(self)
    }
}

fn signed(n: usize) -> isize {
    isize::try_from(n).unwrap_or(isize::MAX)
}

fn insert_char(steer: &mut SteerInput, ch: char) {
    let at = byte_index(&steer.text, steer.cursor);
    steer.text.insert(at, ch);
    steer.cursor += 1;
}

fn remove_char(steer: &mut SteerInput, index: usize) {
    let at = byte_index(&steer.text, index);
    if at < steer.text.len() {
        steer.text.remove(at);
    }
}

/// The byte offset of character `index` in `text` (its end when past the last).
fn byte_index(text: &str, index: usize) -> usize {
    text.char_indices()
        .nth(index)
        .map_or(text.len(), |(at, _)| at)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crossterm::event::{KeyCode, KeyModifiers};

    use unipi_widgets::agents::AgentStatus;
    use unipi_widgets::dock::visible_rows;

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
        selected_entry(view.model()).map_or(String::new(), |entry| entry.id().to_owned())
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

    fn make_agent(id: &str, parent: Option<&str>, status: AgentStatus) -> AgentRow {
        AgentRow {
            id: id.to_owned(),
            parent: parent.map(str::to_owned),
            kind: AgentKind::Helper,
            agent_type: "explore".to_owned(),
            description: format!("task {id}"),
            status,
            unseen: status.is_finished(),
            cost: Some(0.01),
            ..AgentRow::default()
        }
    }

    fn main_agent() -> AgentRow {
        AgentRow {
            id: unipi_widgets::agents::MAIN_ID.to_owned(),
            kind: AgentKind::Main,
            agent_type: "main".to_owned(),
            status: AgentStatus::Running,
            ..AgentRow::default()
        }
    }

    /// The task dock plus the main agent and helpers: h1 (running) → h2 (running), h3 (done,
    /// unseen). Entries: main, h1, h2, h3, then the tasks; the main agent selected.
    fn make_agent_dock() -> DockView {
        let mut view = make_dock();
        view.set_agents(vec![
            make_agent("h1", None, AgentStatus::Running),
            make_agent("h3", None, AgentStatus::Done),
            make_agent("h2", Some("h1"), AgentStatus::Running),
            main_agent(),
        ]);
        // Opened on the first helper; the tests count rows from the top.
        assert_eq!(selected_id(&view), "h1");
        view.handle_key(&key(KeyCode::Home));
        view
    }

    fn type_text(view: &mut DockView, text: &str) {
        for c in text.chars() {
            assert_eq!(view.handle_key(&ch(c)), ViewAction::Consumed);
        }
    }

    #[test]
    fn agents_come_first_in_tree_order_and_keep_the_selection() {
        let mut view = make_agent_dock();
        let ids: Vec<String> = entries(view.model())
            .iter()
            .map(|entry| entry.id().to_owned())
            .collect();
        assert_eq!(ids, ["main", "h1", "h2", "h3", "b1", "b2", "b3", "b4"]);
        assert_eq!(selected_id(&view), "main");
        view.handle_key(&ch('j'));
        view.handle_key(&ch('j')); // h2
        assert_eq!(
            view.model().keys,
            Keymap::defaults().dock_hints(DockPane::Agents)
        );
        // A new helper above it: the selection stays on h2.
        view.set_agents(vec![
            main_agent(),
            make_agent("h0", None, AgentStatus::Running),
            make_agent("h1", None, AgentStatus::Running),
            make_agent("h2", Some("h1"), AgentStatus::Running),
        ]);
        assert_eq!(selected_id(&view), "h2");
        // Down into the tasks: the task hints come back.
        view.handle_key(&ch('j'));
        assert_eq!(selected_id(&view), "b1");
        assert_eq!(view.model().keys, default_list_hints());
    }

    #[test]
    fn t_opens_the_transcript_and_esc_backs_out() {
        let mut view = make_agent_dock();
        view.handle_key(&ch('j')); // h1
        assert_eq!(view.transcript_target(), None);
        assert_eq!(view.handle_key(&ch('t')), ViewAction::Consumed);
        assert!(matches!(
            view.model().mode,
            DockMode::Detail { follow: true, .. }
        ));
        assert_eq!(view.transcript_target().as_deref(), Some("h1"));
        assert_eq!(
            view.model().keys,
            Keymap::defaults().dock_hints(DockPane::Transcript)
        );
        assert_eq!(view.handle_key(&key(KeyCode::Esc)), ViewAction::Consumed);
        assert_eq!(view.model().mode, DockMode::List);
        assert_eq!(view.transcript_target(), None);
        // Enter on a finished, unseen helper opens it and marks it seen.
        view.handle_key(&key(KeyCode::Down));
        view.handle_key(&key(KeyCode::Down)); // h3
        assert_eq!(
            view.handle_key(&key(KeyCode::Enter)),
            ViewAction::Request(ViewRequest::MarkSeen("h3".to_owned()))
        );
        assert_eq!(view.transcript_target().as_deref(), Some("h3"));
        // The main agent's detail has no transcript to fetch.
        view.handle_key(&key(KeyCode::Esc));
        view.handle_key(&key(KeyCode::Home));
        view.handle_key(&ch('t'));
        assert!(matches!(view.model().mode, DockMode::Detail { .. }));
        assert_eq!(view.transcript_target(), None);
        view.handle_key(&key(KeyCode::Esc));
        assert_eq!(view.handle_key(&key(KeyCode::Esc)), ViewAction::Close);
    }

    #[test]
    fn escapes_arriving_in_one_read_each_step_back() {
        use crate::term::input::{InputDecoder, InputEvent};
        // `tmux send-keys Escape Escape Escape` on a task's detail: the three ESC bytes arrive
        // in one read. The first two must take the dock from the detail to the list and close
        // it (so letters typed next go to Pi, not to dock actions); the third is Pi's.
        let mut view = make_agent_dock();
        view.handle_key(&ch('t'));
        assert!(matches!(view.model().mode, DockMode::Detail { .. }));
        let mut decoder = InputDecoder::new();
        let mut events = decoder.feed(b"\x1b\x1b\x1b");
        events.extend(decoder.flush_pending());
        let mut keys = events.into_iter().map(|event| match event {
            InputEvent::Event(crossterm::event::Event::Key(key)) => key,
            other => panic!("not a key: {other:?}"),
        });
        let mut actions = Vec::new();
        for key in keys.by_ref() {
            let action = view.handle_key(&key);
            actions.push(action.clone());
            if action == ViewAction::Close {
                break;
            }
        }
        assert_eq!(actions, [ViewAction::Consumed, ViewAction::Close]);
        let left: Vec<_> = keys.map(|key| (key.code, key.modifiers)).collect();
        assert_eq!(left, [(KeyCode::Esc, KeyModifiers::NONE)]);
    }

    #[test]
    fn steer_input_sends_on_enter_and_shows_the_outcome() {
        let mut view = make_agent_dock();
        view.handle_key(&ch('j')); // h1
        assert_eq!(view.handle_key(&ch('m')), ViewAction::Consumed);
        assert!(view.model().steer.is_some());
        assert_eq!(
            view.model().keys,
            hints(&[("Enter", "send"), ("Esc", "cancel"), ("Ctrl+U", "clear")])
        );
        // Dock keys are text now: `s` and `q` neither stop nor close.
        type_text(&mut view, "stop reading; quit");
        assert!(view.take_helper_requests().is_empty());
        view.handle_key(&key(KeyCode::Left));
        view.handle_key(&key(KeyCode::Backspace));
        view.handle_key(&key(KeyCode::End));
        type_text(&mut view, "!");
        let mut area_buf = Buffer::empty(Rect::new(0, 0, 100, 40));
        view.render(area_buf.area, &mut area_buf, &Theme::plain());
        assert!(view.cursor(area_buf.area).is_some());
        assert_eq!(view.handle_key(&key(KeyCode::Enter)), ViewAction::Consumed);
        assert_eq!(
            view.take_helper_requests(),
            [HelperRequest::Steer {
                id: "h1".to_owned(),
                message: "stop reading; qut!".to_owned(),
            }]
        );
        // An error shows under the input and keeps the text for another try.
        view.steer_finished("h1", Err("run h1 is not running".to_owned()));
        let steer = view.model().steer.clone().unwrap_or_default();
        assert_eq!(steer.error.as_deref(), Some("run h1 is not running"));
        assert_eq!(steer.text, "stop reading; qut!");
        view.handle_key(&key(KeyCode::Enter));
        assert_eq!(view.take_helper_requests().len(), 1);
        view.steer_finished("h1", Ok(()));
        assert_eq!(view.model().steer, None);
        assert_eq!(view.model().notice.as_deref(), Some("Sent to explore h1."));
        assert_eq!(view.cursor(area_buf.area), None);
        // An empty message is not sent; Esc cancels without leaving the dock.
        view.handle_key(&ch('m'));
        view.handle_key(&key(KeyCode::Enter));
        assert!(view.take_helper_requests().is_empty());
        assert!(
            view.model()
                .steer
                .as_ref()
                .is_some_and(|s| s.error.is_some())
        );
        assert!(view.paste("line one\nline two"));
        assert_eq!(
            view.model().steer.as_ref().map(|s| s.text.as_str()),
            Some("line one line two")
        );
        assert_eq!(view.handle_key(&key(KeyCode::Esc)), ViewAction::Consumed);
        assert_eq!(view.model().steer, None);
        assert!(!view.paste("x"));
    }

    #[test]
    fn steer_is_refused_where_it_cannot_work() {
        let mut view = make_agent_dock();
        // (rows down from the top, notice expected)
        let cases = [
            (0, "Steer the main agent by typing in Pi."),
            (3, "explore h3 has ended; it cannot be steered."),
            (4, "Only helpers can be steered."),
        ];
        for (down, want) in cases {
            view.handle_key(&key(KeyCode::Home));
            for _ in 0..down {
                view.handle_key(&ch('j'));
            }
            assert_eq!(view.handle_key(&ch('m')), ViewAction::Consumed);
            assert_eq!(view.model().steer, None, "{want}");
            assert_eq!(view.model().notice.as_deref(), Some(want));
        }
    }

    #[test]
    fn stopping_a_helper_needs_two_presses_on_it() {
        let mut view = make_agent_dock();
        view.handle_key(&ch('j')); // h1
        assert_eq!(view.handle_key(&ch('s')), ViewAction::Consumed);
        assert!(view.take_helper_requests().is_empty());
        assert_eq!(view.model().stop_armed.as_deref(), Some("h1"));
        assert_eq!(
            view.model().notice.as_deref(),
            Some("Press s again to stop explore h1; its work so far is kept.")
        );
        // Another key disarms.
        view.handle_key(&ch('j'));
        assert_eq!(view.model().stop_armed, None);
        assert_eq!(view.model().notice, None);
        // Armed on h2, the press lands on h1 after the selection moved: it arms h1 instead.
        view.handle_key(&ch('s'));
        view.handle_key(&ch('k'));
        view.handle_key(&ch('s'));
        assert!(view.take_helper_requests().is_empty());
        assert_eq!(
            view.handle_key(&ch('s')),
            ViewAction::Consumed,
            "the second press on the same helper"
        );
        assert_eq!(
            view.take_helper_requests(),
            [HelperRequest::Stop("h1".to_owned())]
        );
        assert_eq!(view.model().notice.as_deref(), Some("Stopping explore h1…"));
        view.stop_finished("h1", false);
        assert_eq!(
            view.model().notice.as_deref(),
            Some("h1 has no live process to stop.")
        );
        // Finished helpers and the main agent are not stopped from here.
        for (down, want) in [
            (0, "Stop the main agent in Pi (Esc in its editor)."),
            (3, "explore h3 is done; nothing to stop."),
        ] {
            view.handle_key(&key(KeyCode::Home));
            for _ in 0..down {
                view.handle_key(&ch('j'));
            }
            view.handle_key(&ch('s'));
            view.handle_key(&ch('s'));
            assert!(view.take_helper_requests().is_empty());
            assert_eq!(view.model().notice.as_deref(), Some(want));
        }
    }

    #[test]
    fn a_fresh_dock_with_only_the_main_agent_selects_the_first_task() {
        let mut view = make_dock();
        view.set_agents(vec![main_agent()]);
        assert_eq!(selected_id(&view), "b1");
        assert_eq!(view.handle_key(&key(KeyCode::Enter)), ViewAction::Consumed);
        assert!(matches!(view.model().mode, DockMode::Detail { .. }));
        assert_eq!(
            selected_row(view.model()).map(|row| row.id.as_str()),
            Some("b1")
        );
        // Later updates keep the selection where the user put it.
        view.handle_key(&key(KeyCode::Esc));
        view.handle_key(&key(KeyCode::Home));
        view.set_agents(vec![
            main_agent(),
            make_agent("h1", None, AgentStatus::Running),
        ]);
        assert_eq!(selected_id(&view), "main");
    }

    #[test]
    fn a_delegate_is_listed_once_as_an_agent() {
        let mut view = make_agent_dock();
        let delegate = AgentRow {
            kind: AgentKind::Delegate,
            ..make_agent("b2", None, AgentStatus::Running)
        };
        view.set_agents(vec![main_agent(), delegate]);
        let ids = |view: &DockView| -> Vec<String> {
            entries(view.model())
                .iter()
                .map(|entry| {
                    format!(
                        "{}{}",
                        if entry.is_agent() { "a:" } else { "t:" },
                        entry.id()
                    )
                })
                .collect()
        };
        assert_eq!(ids(&view), ["a:main", "a:b2", "t:b1", "t:b3", "t:b4"]);
        // Fresh task rows from the service are filtered the same way.
        view.set_rows(vec![
            make_row("b1", TaskStatus::Running),
            make_row("b2", TaskStatus::Running),
        ]);
        assert_eq!(ids(&view), ["a:main", "a:b2", "t:b1"]);
    }

    #[test]
    fn copy_on_a_helper_copies_its_run_id() {
        let mut view = make_agent_dock();
        view.handle_key(&ch('j'));
        assert_eq!(
            view.handle_key(&ch('y')),
            ViewAction::Request(ViewRequest::CopyText("h1".to_owned()))
        );
        assert_eq!(view.handle_key(&ch('r')), ViewAction::Consumed);
        assert!(
            view.model()
                .notice
                .as_deref()
                .is_some_and(|n| n.contains("not rerun"))
        );
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

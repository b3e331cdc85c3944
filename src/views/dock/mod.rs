//! The dock view (Shift+Down, `/unipi:bg-tasks`): owns the dock's [`DockModel`] — selection,
//! list or detail, history toggle, the armed stop-all and helper stop, the steer input — and
//! turns keys into changes of it and into [`DockRequest`]s for the [`DockSource`] that listed the
//! entry (background tasks, helper runs; the dock knows neither by name).
//!
//! The view reads no task or helper state itself: it pulls rows from its sources in
//! [`View::refresh`], which the app calls whenever a capability signals a change, and the
//! selection follows the selected entry by id across updates. The main agent's row comes from
//! the app's knowledge of Pi ([`RefreshContext`]). Stop-all — and stopping a helper, whose work
//! is lost with it — is armed by the first press and fired by the second, with any other key in
//! between disarming it, so one stray key cannot kill anything expensive. Esc steps back: out of
//! the steer input, from the detail to the list, from the list out of the dock (focus returns to
//! Pi).
//!
//! Keys are resolved through the dock's key table ([`keys::DOCK_KEYS`], `[dock]` in keymap files),
//! never matched here, and the hint line is built from the same table, so a key the user rebinds
//! is the key the dock shows. A key the table does not bind is not Pi's while the dock has focus;
//! the footer says which key leaves the dock. The steer input is the exception: while it is open it
//! takes every key as text (Enter sends, Esc cancels), because a message must be able to contain
//! `s` or `q`.

pub mod keys;
mod main_row;
pub mod source;

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

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

use super::{RefreshContext, View, ViewAction, ViewEffect};
use crate::config::keymap::Keymap;
pub use keys::{DockAction, DockHints, DockKeys, DockPane};
pub use main_row::main_row;
pub use source::{DockRequest, DockRows, DockSource, Marks};

/// How often an open dock refreshes while something in it runs (runtimes move).
const RUNNING_TICK: Duration = Duration::from_secs(1);

pub struct DockView {
    model: DockModel,
    keys: DockKeys,
    /// The pane area of the last render, so paging matches what is visible.
    last_screen: Cell<Rect>,
    /// The capabilities whose entries it lists.
    sources: Vec<Arc<dyn DockSource>>,
    /// Which source listed each entry, by id.
    owners: HashMap<String, usize>,
    /// The entry whose detail the sources were last told about.
    detail_sent: Option<String>,
    /// Entries asked to stop whose "Stopping…" notice shows until they have stopped.
    stopping: Vec<String>,
}

/// Which entry is selected, to find it again after the rows change.
#[derive(Clone, Debug, PartialEq, Eq)]
struct EntryKey {
    agent: bool,
    id: String,
}

impl DockView {
    /// A dock over `sources`, filled from them now, with the keymap's `[dock]` keys.
    pub fn open(
        sources: Vec<Arc<dyn DockSource>>,
        keymap: &Keymap,
        context: &RefreshContext<'_>,
    ) -> Self {
        let mut view = DockView::new(Vec::new(), keymap);
        view.sources = sources;
        view.refresh(context);
        view
    }

    /// A dock listing `rows` (any order) and no source, the first row selected, with the
    /// keymap's `[dock]` keys.
    pub fn new(rows: Vec<DockRow>, keymap: &Keymap) -> Self {
        let keys = DockKeys::from_keymap(keymap);
        let mut view = DockView {
            model: DockModel {
                keys: keys.hints_for(DockPane::List),
                ..DockModel::default()
            },
            keys,
            last_screen: Cell::new(Rect::default()),
            sources: Vec::new(),
            owners: HashMap::new(),
            detail_sent: None,
            stopping: Vec::new(),
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
        self.sync_detail();
        true
    }

    pub fn model(&self) -> &DockModel {
        &self.model
    }

    /// Where the dock draws on a pane area `screen`: its lower part.
    pub fn area(&self, screen: Rect) -> Rect {
        dock_area(&self.model, screen)
    }

    /// Once everything asked to stop has stopped, its "Stopping…" notice goes.
    fn clear_stopped(&mut self) {
        if self.stopping.is_empty() {
            return;
        }
        let running = |id: &String| {
            self.model
                .rows
                .iter()
                .any(|row| &row.id == id && row.status == TaskStatus::Running)
                || self
                    .model
                    .agents
                    .iter()
                    .any(|row| &row.id == id && !row.status.is_finished())
        };
        if !self.stopping.iter().any(running) {
            self.stopping.clear();
            if self
                .model
                .notice
                .as_deref()
                .is_some_and(|notice| notice.starts_with("Stopping "))
            {
                self.model.notice = None;
            }
        }
    }

    /// The entry whose detail is shown (its output tail or transcript is wanted), if any; the
    /// main agent's row has no detail to read.
    pub fn detail_target(&self) -> Option<String> {
        match self.model.mode {
            DockMode::Detail { .. } => selected_entry(&self.model)
                .filter(|entry| !matches!(entry, Entry::Agent(row) if row.kind == AgentKind::Main))
                .map(|entry| entry.id().to_owned()),
            DockMode::List => None,
        }
    }

    /// Sends `request` about entry `id` to the source that listed it.
    fn send_to_owner(&self, id: &str, request: &DockRequest) -> Result<(), String> {
        match self
            .owners
            .get(id)
            .and_then(|index| self.sources.get(*index))
        {
            Some(source) => source.request(request),
            None => Ok(()),
        }
    }

    /// Sends `request` to every source (stop all, clear finished, the detail moved).
    fn broadcast(&self, request: &DockRequest) {
        for source in &self.sources {
            if let Err(err) = source.request(request) {
                tracing::info!("dock request {request:?}: {err}");
            }
        }
    }

    /// Tells the sources when the detail starts or stops showing an entry.
    fn sync_detail(&mut self) {
        let target = self.detail_target();
        if target != self.detail_sent {
            self.detail_sent = target.clone();
            self.broadcast(&DockRequest::Detail(target));
        }
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
    fn paste(&mut self, text: &str) -> bool {
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
                let id = entry.id().to_owned();
                self.show_detail();
                if unseen {
                    let _ = self.send_to_owner(&id, &DockRequest::MarkSeen(id.clone()));
                }
                return ViewAction::Consumed;
            }
            DockAction::History => {
                let selected = self.selected_key();
                self.model.show_history = !self.model.show_history;
                self.reselect(selected);
            }
            _ => return ViewAction::Unhandled,
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
            _ => return ViewAction::Unhandled,
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
                match self.send_to_owner(&id, &DockRequest::Stop(id.clone())) {
                    Ok(()) => {
                        self.stopping = vec![id];
                        format!("Stopping {label}…")
                    }
                    Err(err) => err,
                }
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
                return Some(ViewAction::Effect(ViewEffect::Copy(id)));
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
                self.broadcast(&DockRequest::ClearFinished);
                ViewAction::Consumed
            }
            DockAction::StopAll => self.stop_all(),
            DockAction::Steer => {
                self.model.notice = Some("Only helpers can be steered.".to_owned());
                ViewAction::Consumed
            }
            DockAction::Stop => self.with_selected(|row| {
                if row.status == TaskStatus::Running {
                    // The notice goes once the task has stopped (see `clear_stopped`).
                    (
                        format!("Stopping {}…", row.name),
                        Some(DockRequest::Stop(row.id.clone())),
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
                        Some(DockRequest::Rerun(row.id.clone())),
                    )
                }
            }),
            DockAction::CopyPath => match selected_row(&self.model) {
                Some(row) => {
                    let (name, path) = (row.name.clone(), row.output_path.clone());
                    self.model.notice = Some(format!("Copied the output path of {name}."));
                    ViewAction::Effect(ViewEffect::Copy(path))
                }
                None => ViewAction::Consumed,
            },
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
                    let id = steer.target.clone();
                    let request = DockRequest::Steer {
                        id: id.clone(),
                        message: message.to_owned(),
                    };
                    let result = self.send_to_owner(&id, &request);
                    self.steer_finished(&id, result);
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
            self.stopping = self
                .model
                .rows
                .iter()
                .filter(|row| row.status == TaskStatus::Running)
                .map(|row| row.id.clone())
                .collect();
            self.broadcast(&DockRequest::StopAll);
            return ViewAction::Consumed;
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

    /// Run `act` on the selected task: it returns the notice to show and the request to make,
    /// which goes to the source that listed the task.
    fn with_selected(
        &mut self,
        act: impl FnOnce(&DockRow) -> (String, Option<DockRequest>),
    ) -> ViewAction {
        let Some(row) = selected_row(&self.model) else {
            return ViewAction::Consumed;
        };
        let id = row.id.clone();
        let (mut notice, request) = act(row);
        if let Some(request) = request {
            match self.send_to_owner(&id, &request) {
                Err(err) => notice = err,
                Ok(()) if matches!(request, DockRequest::Stop(_)) => self.stopping = vec![id],
                Ok(()) => {}
            }
        }
        self.model.notice = Some(notice);
        ViewAction::Consumed
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
        self.model.keys = self.keys.hints_for(pane);
    }
}

impl View for DockView {
    fn title(&self) -> &str {
        "the dock"
    }

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
            return ViewAction::Unhandled;
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
        self.sync_detail();
        done
    }

    fn handle_paste(&mut self, text: &str) -> bool {
        self.paste(text)
    }

    fn cursor(&self, area: Rect) -> Option<Position> {
        steer_cursor(&self.model, self.area(area))
    }

    fn refresh(&mut self, context: &RefreshContext<'_>) {
        let mut tasks = Vec::new();
        let mut agents = Vec::new();
        self.owners.clear();
        for (index, source) in self.sources.iter().enumerate() {
            match source.rows() {
                DockRows::Tasks(rows) => {
                    self.owners
                        .extend(rows.iter().map(|row| (row.id.clone(), index)));
                    tasks.extend(rows);
                }
                DockRows::Agents(rows) => {
                    self.owners
                        .extend(rows.iter().map(|row| (row.id.clone(), index)));
                    agents.extend(rows);
                }
            }
        }
        self.set_rows(tasks);
        if !agents.is_empty() || !self.model.agents.is_empty() {
            agents.push(main_row(context.pi));
            self.set_agents(agents);
        }
        self.clear_stopped();
        self.sync_detail();
    }

    fn tick_every(&self) -> Option<Duration> {
        let running = self
            .model
            .rows
            .iter()
            .any(|row| row.status == TaskStatus::Running)
            || self
                .model
                .agents
                .iter()
                .any(|row| row.kind != AgentKind::Main && !row.status.is_finished());
        running.then_some(RUNNING_TICK)
    }

    fn close_hint(&self) -> String {
        self.keys
            .hint_key(DockAction::Close)
            .unwrap_or_else(|| self.keys.close_key(DockAction::Back))
    }

    fn key_table(&self) -> Option<&'static crate::config::keymap::KeyTableSpec> {
        Some(&keys::DOCK_KEYS)
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
    use crossterm::event::{KeyCode, KeyModifiers};

    use unipi_widgets::agents::AgentStatus;
    use unipi_widgets::dock::visible_rows;

    use std::sync::Mutex;

    use unipi_widgets::footer::FooterData;

    use super::*;
    use crate::views::test_keys::{ch, key, user_keymap};
    use crate::views::{KeyOutcome, ViewStack};

    /// A dock source that lists fixed rows and records the requests it gets; a steer or stop
    /// answers `refuse` when set.
    struct Recorder {
        rows: Mutex<DockRows>,
        requests: Mutex<Vec<DockRequest>>,
        details: Mutex<Vec<Option<String>>>,
        refuse: Mutex<Option<String>>,
    }

    impl Recorder {
        fn new(rows: DockRows) -> Arc<Self> {
            Arc::new(Recorder {
                rows: Mutex::new(rows),
                requests: Mutex::new(Vec::new()),
                details: Mutex::new(Vec::new()),
                refuse: Mutex::new(None),
            })
        }

        /// The requests since the last call, without the detail moves (kept on their own).
        fn take(&self) -> Vec<DockRequest> {
            std::mem::take(&mut *self.requests.lock().unwrap())
        }

        /// Every detail move so far.
        fn details(&self) -> Vec<Option<String>> {
            self.details.lock().unwrap().clone()
        }

        fn refuse_with(&self, message: Option<&str>) {
            *self.refuse.lock().unwrap() = message.map(str::to_owned);
        }
    }

    impl DockSource for Recorder {
        fn rows(&self) -> DockRows {
            self.rows.lock().unwrap().clone()
        }

        fn request(&self, request: &DockRequest) -> Result<(), String> {
            match request {
                DockRequest::Detail(target) => self.details.lock().unwrap().push(target.clone()),
                other => self.requests.lock().unwrap().push(other.clone()),
            }
            match (request, self.refuse.lock().unwrap().clone()) {
                (DockRequest::Steer { .. } | DockRequest::Stop(_), Some(message)) => Err(message),
                _ => Ok(()),
            }
        }
    }

    fn pi_data() -> FooterData {
        FooterData::default()
    }

    fn open_dock(sources: Vec<Arc<dyn DockSource>>, keymap: &Keymap) -> DockView {
        let view = DockView::open(sources, keymap, &RefreshContext { pi: &pi_data() });
        let mut buf = Buffer::empty(Rect::new(0, 0, 100, 40));
        view.render(buf.area, &mut buf, &Theme::plain());
        view
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

    fn four_tasks() -> Vec<DockRow> {
        vec![
            make_row("b4", TaskStatus::Done),
            make_row("b1", TaskStatus::Running),
            make_row("b3", TaskStatus::Failed),
            make_row("b2", TaskStatus::Running),
        ]
    }

    /// Two running tasks, one failed, one done (in that display order) from one source, drawn
    /// once on a 100x40 pane so paging knows the dock's size.
    fn make_dock() -> (DockView, Arc<Recorder>) {
        let tasks = Recorder::new(DockRows::Tasks(four_tasks()));
        let view = open_dock(vec![tasks.clone()], &Keymap::defaults());
        (view, tasks)
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
        let (mut view, _) = make_dock();
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
        let (mut view, tasks) = make_dock();
        view.handle_key(&ch('j'));
        view.handle_key(&ch('j')); // b3, failed and unseen
        assert_eq!(view.handle_key(&key(KeyCode::Enter)), ViewAction::Consumed);
        assert_eq!(tasks.take(), [DockRequest::MarkSeen("b3".to_owned())]);
        assert_eq!(tasks.details(), [Some("b3".to_owned())]);
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
        assert_eq!(tasks.details(), [Some("b3".to_owned()), None]);
        assert_eq!(view.handle_key(&key(KeyCode::Esc)), ViewAction::Close);
        // A running task is never unseen: opening it asks for nothing but its tail.
        let (mut view, tasks) = make_dock();
        assert_eq!(view.handle_key(&key(KeyCode::Enter)), ViewAction::Consumed);
        assert!(tasks.take().is_empty());
        // Enter on an empty dock leaves it.
        let mut empty = DockView::new(Vec::new(), &Keymap::defaults());
        assert_eq!(empty.handle_key(&key(KeyCode::Enter)), ViewAction::Close);
    }

    #[test]
    fn stop_all_needs_two_presses_in_a_row() {
        let (mut view, tasks) = make_dock();
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
        assert!(tasks.take().is_empty());
        assert_eq!(view.handle_key(&ch('S')), ViewAction::Consumed);
        assert_eq!(tasks.take(), [DockRequest::StopAll]);
        assert!(!view.model().stop_all_armed);
        // Nothing running: nothing to arm.
        let mut idle = DockView::new(vec![make_row("b9", TaskStatus::Done)], &Keymap::defaults());
        assert_eq!(idle.handle_key(&ch('S')), ViewAction::Consumed);
        assert!(!idle.model().stop_all_armed);
    }

    #[test]
    fn task_keys_make_requests_for_the_selected_task() {
        let (mut view, tasks) = make_dock();
        let ctrl_alt_c = KeyEvent::new(
            KeyCode::Char('c'),
            KeyModifiers::CONTROL | KeyModifiers::ALT,
        );
        // (keys to press first, key, what the view returns, the requests the source gets)
        let copy = ViewAction::Effect(ViewEffect::Copy(
            "/tmp/unipi-bg-tasks/s/b1.output".to_owned(),
        ));
        let cases: [(&[KeyEvent], KeyEvent, ViewAction, Vec<DockRequest>); 6] = [
            (
                &[],
                ch('s'),
                ViewAction::Consumed,
                vec![DockRequest::Stop("b1".to_owned())],
            ),
            // Running: nothing to rerun.
            (&[], ch('r'), ViewAction::Consumed, vec![]),
            (&[], ch('y'), copy, vec![]),
            (
                &[ctrl_alt_c],
                ctrl_alt_c,
                ViewAction::Consumed,
                vec![DockRequest::ClearFinished, DockRequest::ClearFinished],
            ),
            // The done task: nothing to stop, but it can be rerun.
            (&[key(KeyCode::End)], ch('s'), ViewAction::Consumed, vec![]),
            (
                &[],
                ch('r'),
                ViewAction::Consumed,
                vec![DockRequest::Rerun("b4".to_owned())],
            ),
        ];
        for (before, event, want, requests) in cases {
            for event in before {
                view.handle_key(event);
            }
            let got = view.handle_key(&event);
            assert_eq!(got, want, "{:?} on {}", event.code, selected_id(&view));
            assert_eq!(tasks.take(), requests, "{:?}", event.code);
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
        let (mut view, _) = make_dock();
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
        let (mut view, _) = make_dock();
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
    fn the_stack_gives_keys_to_the_dock_and_its_requests_reach_the_source() {
        let mut stack = ViewStack::default();
        assert_eq!(stack.handle_key(&ch('s')), KeyOutcome::NoView);
        let (view, tasks) = make_dock();
        stack.push(Box::new(view));
        assert_eq!(stack.handle_key(&ch('s')), KeyOutcome::Used(None));
        assert_eq!(tasks.take(), [DockRequest::Stop("b1".to_owned())]);
        assert_eq!(stack.handle_key(&ch('j')), KeyOutcome::Used(None));
        assert_eq!(
            stack.handle_key(&ch('z')),
            KeyOutcome::Unhandled {
                view: "the dock".to_owned(),
                close: "q".to_owned()
            }
        );
        stack.handle_key(&key(KeyCode::Esc));
        assert!(stack.is_empty());
    }

    #[test]
    fn the_stopping_notice_goes_once_the_task_has_stopped() {
        let (mut view, tasks) = make_dock();
        view.handle_key(&ch('s'));
        assert_eq!(view.model().notice.as_deref(), Some("Stopping task b1…"));
        // Still running at the next refresh: the notice stays.
        view.refresh(&RefreshContext { pi: &pi_data() });
        assert_eq!(view.model().notice.as_deref(), Some("Stopping task b1…"));
        let mut rows = four_tasks();
        rows[1].status = TaskStatus::Stopped;
        *tasks.rows.lock().unwrap() = DockRows::Tasks(rows);
        view.refresh(&RefreshContext { pi: &pi_data() });
        assert_eq!(view.model().notice, None);
        // Stop-all: gone once none of them runs.
        let (mut view, tasks) = make_dock();
        view.handle_key(&ch('S'));
        view.handle_key(&ch('S'));
        assert_eq!(
            view.model().notice.as_deref(),
            Some("Stopping 2 running tasks…")
        );
        let stopped: Vec<DockRow> = four_tasks()
            .into_iter()
            .map(|mut row| {
                if row.status == TaskStatus::Running {
                    row.status = TaskStatus::Stopped;
                }
                row
            })
            .collect();
        *tasks.rows.lock().unwrap() = DockRows::Tasks(stopped);
        view.refresh(&RefreshContext { pi: &pi_data() });
        assert_eq!(view.model().notice, None);
    }

    #[test]
    fn refresh_pulls_rows_from_every_source_and_ticks_while_something_runs() {
        let (mut view, tasks) = make_dock();
        assert_eq!(view.tick_every(), Some(RUNNING_TICK));
        *tasks.rows.lock().unwrap() = DockRows::Tasks(vec![make_row("b4", TaskStatus::Done)]);
        view.refresh(&RefreshContext { pi: &pi_data() });
        assert_eq!(selected_id(&view), "b4");
        assert_eq!(view.tick_every(), None);
        // A second source's agents arrive with the main agent's row from Pi's data.
        let agents = Recorder::new(DockRows::Agents(vec![make_agent(
            "h1",
            None,
            AgentStatus::Running,
        )]));
        let mut view = open_dock(vec![tasks.clone(), agents.clone()], &Keymap::defaults());
        let ids: Vec<String> = entries(view.model())
            .iter()
            .map(|entry| entry.id().to_owned())
            .collect();
        assert_eq!(ids, ["main", "h1", "b4"]);
        assert_eq!(view.tick_every(), Some(RUNNING_TICK));
        // Requests go to the source that listed the entry.
        view.handle_key(&key(KeyCode::End)); // b4
        view.handle_key(&ch('r'));
        assert_eq!(tasks.take(), [DockRequest::Rerun("b4".to_owned())]);
        assert!(agents.take().is_empty());
    }

    #[test]
    fn renders_over_the_lower_part_of_the_pane() {
        let (view, _) = make_dock();
        let mut buf = Buffer::empty(Rect::new(0, 0, 100, 40));
        view.render(buf.area, &mut buf, &Theme::plain());
        let area = view.area(buf.area);
        assert_eq!(area, Rect::new(0, 24, 100, 16));
        assert_eq!(buf[(0, 23)].symbol(), " ");
        assert_eq!(buf[(0, 24)].symbol(), "┌");
    }

    #[test]
    fn the_list_starts_with_the_default_hints() {
        assert_eq!(make_dock().0.model().keys, default_list_hints());
    }

    #[test]
    fn a_user_keymap_moves_stop_to_x() {
        let keymap = user_keymap(
            "[dock]\n\"x\" = \"dock.stop\"\n\"s\" = \"none\"\n\"X\" = \"dock.stop_all\"\n",
        );
        let tasks = Recorder::new(DockRows::Tasks(vec![
            make_row("b1", TaskStatus::Running),
            make_row("b2", TaskStatus::Running),
        ]));
        let mut view = open_dock(vec![tasks.clone()], &keymap);
        // `s` is unbound: not the dock's, no request, no notice.
        assert_eq!(view.handle_key(&ch('s')), ViewAction::Unhandled);
        assert_eq!(view.model().notice, None);
        assert!(tasks.take().is_empty());
        assert_eq!(view.handle_key(&ch('x')), ViewAction::Consumed);
        assert_eq!(tasks.take(), [DockRequest::Stop("b1".to_owned())]);
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
        assert_eq!(view.handle_key(&ch('S')), ViewAction::Consumed);
        assert_eq!(tasks.take(), [DockRequest::StopAll]);
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

    /// The task dock plus the main agent and helpers from a second source: h1 (running) → h2
    /// (running), h3 (done, unseen). Entries: main, h1, h2, h3, then the tasks; the main agent
    /// selected. Returns the view and the helpers' source.
    fn make_agent_dock() -> (DockView, Arc<Recorder>) {
        let tasks = Recorder::new(DockRows::Tasks(four_tasks()));
        let agents = Recorder::new(DockRows::Agents(vec![
            make_agent("h1", None, AgentStatus::Running),
            make_agent("h3", None, AgentStatus::Done),
            make_agent("h2", Some("h1"), AgentStatus::Running),
        ]));
        let mut view = open_dock(vec![tasks, agents.clone()], &Keymap::defaults());
        // Opened on the first helper; the tests count rows from the top.
        assert_eq!(selected_id(&view), "h1");
        view.handle_key(&key(KeyCode::Home));
        (view, agents)
    }

    fn type_text(view: &mut DockView, text: &str) {
        for c in text.chars() {
            assert_eq!(view.handle_key(&ch(c)), ViewAction::Consumed);
        }
    }

    #[test]
    fn agents_come_first_in_tree_order_and_keep_the_selection() {
        let (mut view, _) = make_agent_dock();
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
            DockKeys::from_keymap(&Keymap::defaults()).hints_for(DockPane::Agents)
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
        let (mut view, agents) = make_agent_dock();
        view.handle_key(&ch('j')); // h1
        assert_eq!(view.detail_target(), None);
        assert_eq!(view.handle_key(&ch('t')), ViewAction::Consumed);
        assert!(matches!(
            view.model().mode,
            DockMode::Detail { follow: true, .. }
        ));
        assert_eq!(view.detail_target().as_deref(), Some("h1"));
        assert_eq!(
            view.model().keys,
            DockKeys::from_keymap(&Keymap::defaults()).hints_for(DockPane::Transcript)
        );
        assert_eq!(view.handle_key(&key(KeyCode::Esc)), ViewAction::Consumed);
        assert_eq!(view.model().mode, DockMode::List);
        assert_eq!(view.detail_target(), None);
        // Enter on a finished, unseen helper opens it and marks it seen.
        view.handle_key(&key(KeyCode::Down));
        view.handle_key(&key(KeyCode::Down)); // h3
        assert_eq!(view.handle_key(&key(KeyCode::Enter)), ViewAction::Consumed);
        assert_eq!(agents.take(), [DockRequest::MarkSeen("h3".to_owned())]);
        assert_eq!(view.detail_target().as_deref(), Some("h3"));
        // The main agent's detail has no transcript to fetch.
        view.handle_key(&key(KeyCode::Esc));
        view.handle_key(&key(KeyCode::Home));
        view.handle_key(&ch('t'));
        assert!(matches!(view.model().mode, DockMode::Detail { .. }));
        assert_eq!(view.detail_target(), None);
        // Every source heard where the detail went, once per move.
        assert_eq!(
            agents.details(),
            [Some("h1".to_owned()), None, Some("h3".to_owned()), None]
        );
        view.handle_key(&key(KeyCode::Esc));
        assert_eq!(view.handle_key(&key(KeyCode::Esc)), ViewAction::Close);
    }

    #[test]
    fn escapes_arriving_in_one_read_each_step_back() {
        use crate::term::input::{InputDecoder, InputEvent};
        // `tmux send-keys Escape Escape Escape` on a task's detail: the three ESC bytes arrive
        // in one read. The first two must take the dock from the detail to the list and close
        // it (so letters typed next go to Pi, not to dock actions); the third is Pi's.
        let (mut view, _) = make_agent_dock();
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
            let closed = action == ViewAction::Close;
            actions.push(action);
            if closed {
                break;
            }
        }
        assert_eq!(actions, [ViewAction::Consumed, ViewAction::Close]);
        let left: Vec<_> = keys.map(|key| (key.code, key.modifiers)).collect();
        assert_eq!(left, [(KeyCode::Esc, KeyModifiers::NONE)]);
    }

    #[test]
    fn steer_input_sends_on_enter_and_shows_the_outcome() {
        let (mut view, agents) = make_agent_dock();
        view.handle_key(&ch('j')); // h1
        assert_eq!(view.handle_key(&ch('m')), ViewAction::Consumed);
        assert!(view.model().steer.is_some());
        assert_eq!(
            view.model().keys,
            hints(&[("Enter", "send"), ("Esc", "cancel"), ("Ctrl+U", "clear")])
        );
        // Dock keys are text now: `s` and `q` neither stop nor close.
        type_text(&mut view, "stop reading; quit");
        assert!(agents.take().is_empty());
        view.handle_key(&key(KeyCode::Left));
        view.handle_key(&key(KeyCode::Backspace));
        view.handle_key(&key(KeyCode::End));
        type_text(&mut view, "!");
        let mut area_buf = Buffer::empty(Rect::new(0, 0, 100, 40));
        view.render(area_buf.area, &mut area_buf, &Theme::plain());
        assert!(view.cursor(area_buf.area).is_some());
        // An error shows under the input and keeps the text for another try.
        agents.refuse_with(Some("run h1 is not running"));
        assert_eq!(view.handle_key(&key(KeyCode::Enter)), ViewAction::Consumed);
        assert_eq!(
            agents.take(),
            [DockRequest::Steer {
                id: "h1".to_owned(),
                message: "stop reading; qut!".to_owned(),
            }]
        );
        let steer = view.model().steer.clone().unwrap_or_default();
        assert_eq!(steer.error.as_deref(), Some("run h1 is not running"));
        assert_eq!(steer.text, "stop reading; qut!");
        agents.refuse_with(None);
        view.handle_key(&key(KeyCode::Enter));
        assert_eq!(agents.take().len(), 1);
        assert_eq!(view.model().steer, None);
        assert_eq!(view.model().notice.as_deref(), Some("Sent to explore h1."));
        assert_eq!(view.cursor(area_buf.area), None);
        // An empty message is not sent; Esc cancels without leaving the dock.
        view.handle_key(&ch('m'));
        view.handle_key(&key(KeyCode::Enter));
        assert!(agents.take().is_empty());
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
        let (mut view, _) = make_agent_dock();
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
        let (mut view, agents) = make_agent_dock();
        view.handle_key(&ch('j')); // h1
        assert_eq!(view.handle_key(&ch('s')), ViewAction::Consumed);
        assert!(agents.take().is_empty());
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
        assert!(agents.take().is_empty());
        assert_eq!(
            view.handle_key(&ch('s')),
            ViewAction::Consumed,
            "the second press on the same helper"
        );
        assert_eq!(agents.take(), [DockRequest::Stop("h1".to_owned())]);
        assert_eq!(view.model().notice.as_deref(), Some("Stopping explore h1…"));
        // A stop the source refuses says why.
        agents.refuse_with(Some("h1 has no live process to stop."));
        view.handle_key(&ch('s'));
        view.handle_key(&ch('s'));
        assert_eq!(
            view.model().notice.as_deref(),
            Some("h1 has no live process to stop.")
        );
        agents.refuse_with(None);
        agents.take();
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
            assert!(agents.take().is_empty());
            assert_eq!(view.model().notice.as_deref(), Some(want));
        }
    }

    #[test]
    fn a_fresh_dock_with_only_the_main_agent_selects_the_first_task() {
        let (mut view, _) = make_dock();
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
        let (mut view, _) = make_agent_dock();
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
        let (mut view, _) = make_agent_dock();
        view.handle_key(&ch('j'));
        assert_eq!(
            view.handle_key(&ch('y')),
            ViewAction::Effect(ViewEffect::Copy("h1".to_owned()))
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
    fn unbound_keys_are_unhandled_and_change_nothing() {
        let (mut view, tasks) = make_dock();
        for event in [
            ch('z'),
            key(KeyCode::F(1)),
            KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL),
        ] {
            assert_eq!(view.handle_key(&event), ViewAction::Unhandled);
            assert!(tasks.take().is_empty());
            assert_eq!(selected_id(&view), "b1");
            assert_eq!(view.model().notice, None);
        }
    }
}

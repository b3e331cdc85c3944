//! The dock view (Shift+Down): owns the dock's [`DockModel`] — selection,
//! list or detail, history toggle, the armed stop-all and row action, the message input — and
//! turns keys into changes of it and into [`DockRequest`]s for the [`DockSource`] that listed the
//! entry.
//!
//! The view knows no capability and no kind of row. Each source gives a [`DockSection`]: the
//! rows its own widget made, what each row key does on each of its rows ([`Verb`]), its hint
//! lines, whether stop-all reaches it. The view pulls the sections in [`View::refresh`], which
//! the app calls whenever a capability signals a change, and the selection follows the selected
//! entry by id across updates. A verb that needs confirming (stop-all, or a row's stop that would
//! lose work) is armed by the first press and fired by the second, with any other key in between
//! disarming it, so one stray key cannot kill anything expensive. Esc steps back: out of the
//! message input, from the detail to the list, from the list out of the dock (focus returns to
//! Pi).
//!
//! Keys are resolved through the dock's key table ([`keys::DOCK_KEYS`], `[dock]` in keymap files),
//! never matched here, and the hint line is built from the same table, so a key the user rebinds
//! is the key the dock shows. A key the table does not bind is not Pi's while the dock has focus;
//! the footer says which key leaves the dock. The message input is the exception: while it is
//! open it takes every key as text (Enter sends, Esc cancels), because a message must be able to
//! contain `s` or `q`.

pub mod keys;
pub mod source;

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use unipi_widgets::dock::{
    DockMode, DockModel, Row, SteerInput, dock_area, entries, list_capacity, max_detail_scroll,
    render, selected_entry, steer_cursor,
};
use unipi_widgets::theme::Theme;

use super::{RefreshContext, View, ViewAction, ViewEffect};
use crate::bridge::Refusal;
use crate::config::keymap::Keymap;
use keys::PLAIN_LIST;
pub use keys::{DockAction, DockKeys, HintTable, SCROLL, SELECT};
pub use source::{
    DockRequest, DockSection, DockSource, DockWords, Hints, Marks, StopAll, Verb, Verbs,
};

/// How often an open dock refreshes while something in it runs (runtimes move).
pub(crate) const RUNNING_TICK: Duration = Duration::from_secs(1);

pub struct DockView {
    model: DockModel,
    keys: DockKeys,
    /// The pane area of the last render, so paging matches what is visible.
    last_screen: Cell<Rect>,
    /// The capabilities whose entries it lists.
    sources: Vec<Arc<dyn DockSource>>,
    /// Beside each of the model's sections: its source, verbs and hints.
    parts: Vec<Part>,
    /// The entry whose detail the sources were last told about.
    detail_sent: Option<String>,
    /// Entries asked to stop whose "Stopping…" notice shows until they have stopped.
    stopping: Vec<String>,
    /// The row and key whose verb waits for a second press.
    armed: Option<(String, DockAction)>,
}

/// What the view keeps of a section besides what the widget draws.
struct Part {
    /// Index into the view's sources.
    source: usize,
    verbs: HashMap<String, Verbs>,
    hints: Hints,
    stop_all: Option<StopAll>,
    idle: Verbs,
}

impl DockView {
    /// A dock over `sources`, filled from them now, with the keymap's `[dock]` keys.
    pub fn open(
        sources: Vec<Arc<dyn DockSource>>,
        keymap: &Keymap,
        context: &RefreshContext<'_>,
    ) -> Self {
        let keys = DockKeys::from_keymap(keymap);
        let mut view = DockView {
            model: DockModel {
                keys: keys.hints(PLAIN_LIST),
                ..DockModel::default()
            },
            keys,
            last_screen: Cell::new(Rect::default()),
            sources,
            parts: Vec::new(),
            detail_sent: None,
            stopping: Vec::new(),
            armed: None,
        };
        view.refresh(context);
        view
    }

    /// Replace the sections (each with the index of the source that gave it), keeping the
    /// selected entry selected. When the entry the detail shows is gone, the dock returns to
    /// the list. The first time rows listed as context arrive in the list (a parent above the
    /// rows it started), the first row that is not context is selected: a fresh dock's keys act
    /// on what the dock is for.
    fn set_sections(&mut self, mut sections: Vec<(usize, DockSection)>) {
        // Listed by rank; an id listed already hides the same id further down (one entry, one
        // owner, the one that knows more about it).
        sections.sort_by_key(|(_, section)| section.rank);
        let mut listed: HashSet<String> = HashSet::new();
        for (_, section) in &mut sections {
            section.view.rows.retain(|row| !listed.contains(&row.id));
            listed.extend(section.view.rows.iter().map(|row| row.id.clone()));
        }
        let has_context = |model: &DockModel| {
            model
                .sections
                .iter()
                .any(|section| section.rows.iter().any(|row| row.context))
        };
        let had_context = has_context(&self.model);
        let selected = self.selected_id();
        let (views, parts) = sections
            .into_iter()
            .map(|(source, section)| {
                let part = Part {
                    source,
                    verbs: section.verbs,
                    hints: section.hints,
                    stop_all: section.stop_all,
                    idle: section.idle,
                };
                (section.view, part)
            })
            .unzip();
        self.model.sections = views;
        self.parts = parts;
        let fresh = !had_context && has_context(&self.model) && self.model.mode == DockMode::List;
        if fresh {
            self.model.selected = entries(&self.model)
                .iter()
                .position(|entry| !entry.row.context)
                .unwrap_or(0);
        }
        self.reselect((!fresh).then_some(selected).flatten());
    }

    /// One line of feedback (the outcome of a request the app carried out); `None` clears it.
    pub fn set_notice(&mut self, notice: Option<String>) {
        self.model.notice = notice;
    }

    /// Open the detail of entry `id` (a command named it); `false` when it is not listed.
    pub fn open_detail(&mut self, id: &str) -> bool {
        let position = |model: &DockModel| entries(model).iter().position(|e| e.row.id == id);
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

    /// Every row listed, in list order, with the index of its part.
    fn rows(&self) -> impl Iterator<Item = (usize, &Row)> {
        self.model
            .sections
            .iter()
            .enumerate()
            .flat_map(|(index, section)| section.rows.iter().map(move |row| (index, row)))
    }

    /// Once everything asked to stop has stopped, its "Stopping…" notice goes.
    fn clear_stopped(&mut self) {
        if self.stopping.is_empty() {
            return;
        }
        let running = |id: &String| self.rows().any(|(_, row)| &row.id == id && !row.finished);
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

    /// The entry whose detail is shown (its body is wanted), if any; a row listed as context
    /// has no detail to read.
    pub fn detail_target(&self) -> Option<String> {
        match self.model.mode {
            DockMode::Detail { .. } => selected_entry(&self.model)
                .filter(|entry| !entry.row.context)
                .map(|entry| entry.row.id.clone()),
            DockMode::List => None,
        }
    }

    /// Sends `request` about entry `id` to the source that listed it.
    fn send_to_owner(&self, id: &str, request: &DockRequest) -> Result<(), Refusal> {
        let owner = self
            .rows()
            .find(|(_, row)| row.id == id)
            .and_then(|(part, _)| self.parts.get(part))
            .and_then(|part| self.sources.get(part.source));
        match owner {
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

    /// The source's answer to a message for `id`: success closes the input and says so; an
    /// error is shown under the input, with the message kept for another try.
    fn message_sent(&mut self, id: &str, result: Result<(), Refusal>) {
        let Some(steer) = self.model.steer.as_mut().filter(|steer| steer.target == id) else {
            return;
        };
        match result {
            Ok(()) => {
                self.model.notice = Some(format!("Sent to {}.", steer.label));
                self.model.steer = None;
            }
            Err(err) => steer.error = Some(err.into_text()),
        }
        self.sync_keys();
    }

    /// Pasted text goes into the message input when it is open (as one line); `false`
    /// otherwise.
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
                let (id, unseen) = (entry.row.id.clone(), entry.row.unseen);
                self.show_detail();
                if unseen {
                    let _ = self.send_to_owner(&id, &DockRequest::MarkSeen(id.clone()));
                }
                return ViewAction::Consumed;
            }
            DockAction::History => {
                let selected = self.selected_id();
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

    /// A row key (stop, rerun, copy, message) on the selected row, in the list and the detail
    /// alike: what its section's verb for it says. `None` when `action` is no row key, or the
    /// selected row has no verb for it.
    fn handle_row_key(&mut self, action: DockAction) -> Option<ViewAction> {
        if !matches!(
            action,
            DockAction::Stop | DockAction::Rerun | DockAction::CopyPath | DockAction::Steer
        ) {
            return None;
        }
        let Some(entry) = selected_entry(&self.model) else {
            let idle = self.parts.last().and_then(|part| part.idle.get(action));
            if let Some(Verb::Refuse(notice)) = idle {
                self.model.notice = Some(notice.clone());
            }
            return Some(ViewAction::Consumed);
        };
        let id = entry.row.id.clone();
        let verb = self
            .parts
            .get(entry.section)
            .and_then(|part| part.verbs.get(&id))
            .and_then(|verbs| verbs.get(action))
            .cloned()?;
        let notice = match verb {
            Verb::Refuse(notice) => notice,
            Verb::Ask { request, notice } => self.ask(&id, &request, notice),
            Verb::Confirm {
                request, notice, ..
            } if self.armed == Some((id.clone(), action)) => {
                self.disarm();
                self.ask(&id, &request, notice)
            }
            Verb::Confirm { what, .. } => {
                self.model.armed = Some(id.clone());
                self.armed = Some((id, action));
                // Armed means the key is bound, so the fallback never shows.
                let key = self
                    .keys
                    .hint_key(action)
                    .unwrap_or_else(|| "it".to_owned());
                format!("Press {key} again to {what}.")
            }
            Verb::Copy { text, notice } => {
                self.model.notice = Some(notice);
                return Some(ViewAction::Effect(ViewEffect::Copy(text)));
            }
            Verb::Message { label } => {
                self.model.steer = Some(SteerInput {
                    target: id,
                    label,
                    ..SteerInput::default()
                });
                self.model.notice = None;
                return Some(ViewAction::Consumed);
            }
        };
        self.model.notice = Some(notice);
        Some(ViewAction::Consumed)
    }

    /// Sends `request` about `id` to its source: the notice to show is `notice`, or the
    /// source's refusal. A stop it takes shows its "Stopping…" notice until the row has stopped.
    fn ask(&mut self, id: &str, request: &DockRequest, notice: String) -> String {
        match self.send_to_owner(id, request) {
            Err(err) => err.into_text(),
            Ok(()) => {
                if matches!(request, DockRequest::Stop(_)) {
                    self.stopping = vec![id.to_owned()];
                }
                notice
            }
        }
    }

    fn disarm(&mut self) {
        self.armed = None;
        self.model.armed = None;
    }

    /// Keys while the message input is open: text editing, Enter sends, Esc cancels.
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
                    self.message_sent(&id, result);
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

    /// The first press arms, the second fires; only the running rows of the sections stop-all
    /// reaches count, and the first of those sections names them. `None` when it reaches none.
    fn stop_all(&mut self) -> Option<ViewAction> {
        let words = self.parts.iter().find_map(|part| part.stop_all)?;
        let running: Vec<String> = self
            .rows()
            .filter(|(part, row)| {
                self.parts[*part].stop_all.is_some() && !row.finished && !row.context
            })
            .map(|(_, row)| row.id.clone())
            .collect();
        if running.is_empty() {
            self.model.notice = Some(words.none.to_owned());
            return Some(ViewAction::Consumed);
        }
        let count = running.len();
        let noun = if count == 1 { words.one } else { words.many };
        if self.model.stop_all_armed {
            self.model.stop_all_armed = false;
            self.model.notice = Some(format!("Stopping {count} running {noun}…"));
            self.stopping = running;
            self.broadcast(&DockRequest::StopAll);
            return Some(ViewAction::Consumed);
        }
        self.model.stop_all_armed = true;
        // Armed means the key is bound, so the fallback never shows.
        let key = self
            .keys
            .hint_key(DockAction::StopAll)
            .unwrap_or_else(|| "it".to_owned());
        self.model.notice = Some(format!(
            "Press {key} again to stop all {count} running {noun}."
        ));
        Some(ViewAction::Consumed)
    }

    /// Keys that act on the whole dock, whatever is selected: stop-all, clear notices.
    fn handle_dock_key(&mut self, action: DockAction) -> Option<ViewAction> {
        match action {
            DockAction::ClearNotices => {
                self.model.notice = Some("Finished notices cleared.".to_owned());
                self.broadcast(&DockRequest::ClearFinished);
                Some(ViewAction::Consumed)
            }
            DockAction::StopAll => self.stop_all(),
            _ => None,
        }
    }

    fn selected_id(&self) -> Option<String> {
        selected_entry(&self.model).map(|entry| entry.row.id.clone())
    }

    /// Select `id` again after the entries changed; when it is gone, leave a detail that
    /// showed it and keep the index in range.
    fn reselect(&mut self, id: Option<String>) {
        let position = id.and_then(|id| entries(&self.model).iter().position(|e| e.row.id == id));
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

    /// Scroll the body by `delta` lines: scrolling up pauses following, reaching the bottom
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

    /// The hint line for what is on screen: the message input's keys, or the hints the
    /// selected row's section gives for the list or the detail (with nothing selected, the
    /// last section's list hints).
    fn sync_keys(&mut self) {
        if self.model.steer.is_some() {
            self.model.keys = [("Enter", "send"), ("Esc", "cancel"), ("Ctrl+U", "clear")]
                .iter()
                .map(|(key, what)| ((*key).to_owned(), (*what).to_owned()))
                .collect();
            return;
        }
        let table = match selected_entry(&self.model) {
            Some(entry) => self
                .parts
                .get(entry.section)
                .map(|part| match self.model.mode {
                    DockMode::List => part.hints.list,
                    DockMode::Detail { .. } => part.hints.detail,
                }),
            None => self.parts.last().map(|part| part.hints.list),
        };
        self.model.keys = self.keys.hints(table.unwrap_or(PLAIN_LIST));
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
        if let Some((id, armed)) = &self.armed
            && (action != Some(*armed) || self.selected_id().as_ref() != Some(id))
        {
            // Likewise for a row's verb: only the same key on the same row fires.
            self.disarm();
            self.model.notice = None;
        }
        let Some(action) = action else {
            return ViewAction::Unhandled;
        };
        let done = match self
            .handle_row_key(action)
            .or_else(|| self.handle_dock_key(action))
        {
            Some(done) => done,
            None => match self.model.mode {
                DockMode::List => self.handle_list_key(action),
                DockMode::Detail { .. } => self.handle_detail_key(action),
            },
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
        let sections = self
            .sources
            .iter()
            .enumerate()
            .filter_map(|(index, source)| Some((index, source.section(context)?)))
            .collect();
        self.set_sections(sections);
        self.clear_stopped();
        self.sync_detail();
    }

    fn tick_every(&self) -> Option<Duration> {
        let running = self.rows().any(|(_, row)| !row.finished && !row.context);
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
    use std::sync::{Arc, Mutex};

    use unipi_widgets::dock::{Body, Detail, Fit, Paragraph, Section, Status, Summary};
    use unipi_widgets::footer::{FooterData, ProgramState, Role};

    use super::*;
    use crate::views::test_keys::{ch, key};

    /// A test capability with a kind of rows no capability has — file watches — from its own
    /// rows, verbs and hints; it records what the dock asks of it.
    #[derive(Default)]
    struct Watches {
        requests: Mutex<Vec<DockRequest>>,
    }

    const WATCH_LIST: HintTable = &[
        SELECT,
        (&[DockAction::Open], "events"),
        (&[DockAction::Stop], "stop"),
        (&[DockAction::Back], "close"),
    ];
    const WATCH_DETAIL: HintTable = &[SCROLL, (&[DockAction::Back], "back")];

    impl DockSource for Watches {
        fn section(&self, _context: &RefreshContext<'_>) -> Option<DockSection> {
            let row = Row {
                id: "w1".to_owned(),
                status: Status {
                    glyph: "◉",
                    label: "firing",
                    role: Role::Status(ProgramState::Working),
                },
                status_text: "firing".to_owned(),
                name: "rebuild on save".to_owned(),
                tag: "w1".to_owned(),
                detail: Detail {
                    title: "watch: rebuild on save".to_owned(),
                    subtitle: "w1 · events".to_owned(),
                    fields: Vec::new(),
                    body: Body {
                        name: "Events",
                        empty: "none yet".to_owned(),
                        paragraphs: vec![Paragraph {
                            head: "• ",
                            text: "src/pane/pty.rs changed".to_owned(),
                            role: Role::Text,
                            fit: Fit::Cut,
                        }],
                    },
                },
                ..Row::default()
            };
            let verbs = Verbs::default()
                .on(
                    DockAction::Stop,
                    Verb::Ask {
                        request: DockRequest::Stop("w1".to_owned()),
                        notice: "Stopping the watch…".to_owned(),
                    },
                )
                .on(
                    DockAction::CopyPath,
                    Verb::Copy {
                        text: "src/**/*.rs".to_owned(),
                        notice: "Copied the pattern.".to_owned(),
                    },
                );
            Some(DockSection {
                rank: 0,
                view: Section {
                    title: "watches".to_owned(),
                    label: "watches".to_owned(),
                    summary: Summary::Counts(&["firing", "quiet"]),
                    empty: "No watches.".to_owned(),
                    hidden: "No firing watches.".to_owned(),
                    rows: vec![row],
                },
                verbs: HashMap::from([("w1".to_owned(), verbs)]),
                hints: Hints {
                    list: WATCH_LIST,
                    detail: WATCH_DETAIL,
                },
                stop_all: None,
                idle: Verbs::default(),
            })
        }

        fn request(&self, request: &DockRequest) -> Result<(), Refusal> {
            if !matches!(request, DockRequest::Detail(_)) {
                self.requests.lock().unwrap().push(request.clone());
            }
            Ok(())
        }
    }

    /// The dock drawn on a 60x20 pane, as text.
    fn screen(view: &DockView) -> String {
        let mut buf = Buffer::empty(Rect::new(0, 0, 60, 20));
        view.render(buf.area, &mut buf, &Theme::plain());
        (0..buf.area.height)
            .map(|y| {
                (0..buf.area.width)
                    .map(|x| buf[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn hints(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(key, what)| ((*key).to_owned(), (*what).to_owned()))
            .collect()
    }

    #[test]
    fn a_kind_of_rows_the_dock_never_heard_of_is_listed_opened_and_acted_on() {
        let watches = Arc::new(Watches::default());
        let mut view = DockView::open(
            vec![watches.clone()],
            &Keymap::defaults(),
            &RefreshContext {
                pi: &FooterData::default(),
            },
        );
        let text = screen(&view);
        assert!(text.contains("┌ watches "), "{text}");
        assert!(text.contains("1 firing"), "{text}");
        assert!(text.contains("›   ◉ rebuild on save w1 · firing"), "{text}");
        assert_eq!(
            view.model().keys,
            hints(&[
                ("↑↓", "select"),
                ("Enter", "events"),
                ("s", "stop"),
                ("Esc", "close")
            ])
        );
        assert_eq!(view.tick_every(), Some(RUNNING_TICK));
        // The row keys do what the section's verbs say; a key it gives no verb does nothing,
        // and stop-all reaches no section here.
        assert_eq!(view.handle_key(&ch('s')), ViewAction::Consumed);
        assert_eq!(
            *watches.requests.lock().unwrap(),
            [DockRequest::Stop("w1".to_owned())]
        );
        assert_eq!(view.model().notice.as_deref(), Some("Stopping the watch…"));
        assert_eq!(
            view.handle_key(&ch('y')),
            ViewAction::Effect(ViewEffect::Copy("src/**/*.rs".to_owned()))
        );
        assert_eq!(view.handle_key(&ch('r')), ViewAction::Unhandled);
        assert_eq!(view.handle_key(&ch('S')), ViewAction::Unhandled);
        // Its detail: the title, subtitle and body the section gave.
        assert_eq!(view.handle_key(&key(KeyCode::Enter)), ViewAction::Consumed);
        assert_eq!(view.detail_target().as_deref(), Some("w1"));
        let text = screen(&view);
        assert!(text.contains("┌ watch: rebuild on save "), "{text}");
        assert!(text.contains("w1 · events"), "{text}");
        assert!(text.contains("Events: following · 1 lines"), "{text}");
        assert!(text.contains("• src/pane/pty.rs changed"), "{text}");
        assert_eq!(
            view.model().keys,
            hints(&[("↑↓ PgUp PgDn", "scroll"), ("Esc", "back")])
        );
        assert_eq!(view.handle_key(&key(KeyCode::Esc)), ViewAction::Consumed);
        assert_eq!(view.handle_key(&key(KeyCode::Esc)), ViewAction::Close);
    }
}

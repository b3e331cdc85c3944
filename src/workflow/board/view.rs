//! The board view: a full-screen [`View`] over the documents its port holds, drawn by
//! `unipi_widgets::kanban`. It keeps the selection (on the same card across refreshes), the
//! filters (type, status, text) and the key table `[kanban]`; everything that touches files or
//! Pi — moving a card, opening a document, putting a command in Pi's editor — goes through its
//! [`BoardPort`], which does it in the background and leaves a notice the view pulls on refresh.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use unipi_widgets::kanban::{BoardModel, Card, Column, DocRow, MilestonesRow, PhaseRow, render};
use unipi_widgets::theme::Theme;

use crate::config::keymap::{KeyTable, KeyTableSpec, Keymap, key_table};
use crate::views::{RefreshContext, View, ViewAction, ViewEffect};
use crate::workflow::docs::{Doc, DocType, Item, ItemStatus, Marker};
use crate::workflow::milestone::Progress;

key_table! {
    /// The `[kanban]` key table.
    pub(crate) static KANBAN_KEYS,
    pub(crate) enum KanbanAction,
    table "kanban", title "The kanban board (/unipi:kanboard)",
    defaults [
        ("left", "kanban.left"),
        ("h", "kanban.left"),
        ("right", "kanban.right"),
        ("l", "kanban.right"),
        ("up", "kanban.up"),
        ("k", "kanban.up"),
        ("down", "kanban.down"),
        ("j", "kanban.down"),
        ("home", "kanban.top"),
        ("g", "kanban.top"),
        ("end", "kanban.bottom"),
        ("G", "kanban.bottom"),
        ("H", "kanban.move_left"),
        ("shift+left", "kanban.move_left"),
        ("L", "kanban.move_right"),
        ("shift+right", "kanban.move_right"),
        ("enter", "kanban.open"),
        ("c", "kanban.to_editor"),
        ("y", "kanban.copy"),
        ("t", "kanban.filter_type"),
        ("s", "kanban.filter_status"),
        ("/", "kanban.filter_text"),
        ("x", "kanban.clear_filters"),
        ("r", "kanban.rescan"),
        ("esc", "kanban.close"),
        ("q", "kanban.close"),
    ],
    actions {
        Left => "kanban.left", "Select the column to the left";
        Right => "kanban.right", "Select the column to the right";
        Up => "kanban.up", "Select the card above";
        Down => "kanban.down", "Select the card below";
        Top => "kanban.top", "Select the first card";
        Bottom => "kanban.bottom", "Select the last card";
        MoveLeft => "kanban.move_left", "Move the card one column left (rewrites its line)";
        MoveRight => "kanban.move_right", "Move the card one column right (rewrites its line)";
        Open => "kanban.open", "Open the card's document at its line";
        ToEditor => "kanban.to_editor", "Put the follow-up command in Pi's editor";
        Copy => "kanban.copy", "Copy the follow-up command to the clipboard";
        FilterType => "kanban.filter_type", "Filter by document type (cycles)";
        FilterStatus => "kanban.filter_status", "Filter by status (cycles)";
        FilterText => "kanban.filter_text", "Filter by text (type, Enter applies)";
        ClearFilters => "kanban.clear_filters", "Clear the filters";
        Rescan => "kanban.rescan", "Read the documents again";
        Close => "kanban.close", "Close the board";
    }
}

/// What the board reads and acts on.
pub(crate) trait BoardPort: Send + Sync {
    /// The documents as last scanned (memory).
    fn docs(&self) -> Arc<Vec<Doc>>;
    /// Moves a card in its file, in the background.
    fn move_card(&self, doc: &Doc, item: &Item, to: ItemStatus);
    /// Opens `doc` at `line` in a read-only viewer, in the background.
    fn open(&self, doc: &Doc, line: usize);
    /// Puts `text` in Pi's editor; `false` when Pi is not connected.
    fn to_editor(&self, text: &str) -> bool;
    /// Rescans the documents in the background.
    fn rescan(&self);
    /// What the last background action did, taken once.
    fn take_notice(&self) -> Option<String>;
}

pub(crate) struct BoardView {
    port: Arc<dyn BoardPort>,
    keys: KeyTable<KanbanAction>,
    docs: Arc<Vec<Doc>>,
    type_filter: Option<DocType>,
    status_filter: Option<ItemStatus>,
    text_filter: String,
    editing: Option<String>,
    /// Selected column (among those shown) and row.
    selected: (usize, usize),
    /// The selected card (document path, item line), to keep it across refreshes.
    anchor: Option<(std::path::PathBuf, usize)>,
    /// Per shown column: its status and its cards as (document, item) indexes.
    columns: Vec<(ItemStatus, Vec<(usize, usize)>)>,
    notice: Option<String>,
    hint: String,
}

impl BoardView {
    pub(crate) fn new(port: Arc<dyn BoardPort>, keymap: &Keymap) -> Self {
        let keys = KeyTable::<KanbanAction>::from_keymap(keymap);
        let hint = keys.hint_line(&[
            (
                &[
                    KanbanAction::Left,
                    KanbanAction::Up,
                    KanbanAction::Down,
                    KanbanAction::Right,
                ],
                "select",
            ),
            (&[KanbanAction::MoveLeft, KanbanAction::MoveRight], "move"),
            (&[KanbanAction::Open], "open"),
            (&[KanbanAction::ToEditor], "to Pi"),
            (&[KanbanAction::FilterType], "type"),
            (&[KanbanAction::FilterStatus], "status"),
            (&[KanbanAction::FilterText], "find"),
            (&[KanbanAction::Close], "close"),
        ]);
        let docs = port.docs();
        let mut view = BoardView {
            port,
            keys,
            docs,
            type_filter: None,
            status_filter: None,
            text_filter: String::new(),
            editing: None,
            selected: (0, 0),
            anchor: None,
            columns: Vec::new(),
            notice: None,
            hint,
        };
        view.regroup();
        view
    }

    /// Rebuilds the columns from the documents and filters, keeping the selected card.
    fn regroup(&mut self) {
        let text = self.text_filter.to_lowercase();
        let any_reviewed = self.docs.iter().any(|doc| {
            doc.items
                .iter()
                .any(|item| item.status == ItemStatus::Reviewed)
        });
        let statuses: Vec<ItemStatus> = match self.status_filter {
            Some(status) => vec![status],
            None => ItemStatus::ALL
                .into_iter()
                .filter(|status| *status != ItemStatus::Reviewed || any_reviewed)
                .collect(),
        };
        self.columns = statuses
            .into_iter()
            .map(|status| {
                let cards = self
                    .docs
                    .iter()
                    .enumerate()
                    .filter(|(_, doc)| self.type_filter.is_none_or(|kind| doc.kind == kind))
                    .flat_map(|(d, doc)| {
                        doc.items
                            .iter()
                            .enumerate()
                            .filter(|(_, item)| item.status == status)
                            .filter(|(_, item)| {
                                text.is_empty()
                                    || item.text.to_lowercase().contains(&text)
                                    || doc.title.to_lowercase().contains(&text)
                            })
                            .map(move |(i, _)| (d, i))
                    })
                    .collect();
                (status, cards)
            })
            .collect();
        // Back on the anchored card if it is still shown.
        if let Some((path, line)) = &self.anchor {
            for (c, (_, cards)) in self.columns.iter().enumerate() {
                if let Some(r) = cards.iter().position(|&(d, i)| {
                    self.docs[d].path == *path && self.docs[d].items[i].line == *line
                }) {
                    self.selected = (c, r);
                    return;
                }
            }
        }
        self.clamp();
    }

    fn clamp(&mut self) {
        let last_column = self.columns.len().saturating_sub(1);
        self.selected.0 = self.selected.0.min(last_column);
        let rows = self
            .columns
            .get(self.selected.0)
            .map_or(0, |(_, c)| c.len());
        self.selected.1 = self.selected.1.min(rows.saturating_sub(1));
        self.anchor = self
            .selected_card()
            .map(|(doc, item)| (doc.path.clone(), item.line));
    }

    /// The selected card's document and item.
    pub(crate) fn selected_card(&self) -> Option<(&Doc, &Item)> {
        let (_, cards) = self.columns.get(self.selected.0)?;
        let &(d, i) = cards.get(self.selected.1)?;
        Some((&self.docs[d], &self.docs[d].items[i]))
    }

    /// The widget's model.
    pub(crate) fn model(&self) -> BoardModel {
        let columns = self
            .columns
            .iter()
            .map(|(status, cards)| Column {
                title: status.title().to_owned(),
                cards: cards
                    .iter()
                    .map(|&(d, i)| {
                        let doc = &self.docs[d];
                        let item = &self.docs[d].items[i];
                        let text = match &item.phase {
                            Some(phase) => format!("[{phase}] {}", item.text),
                            None => item.text.clone(),
                        };
                        Card {
                            text,
                            source: format!("{}:{}", card_source(doc), item.line),
                            kind: doc.kind.name().to_owned(),
                        }
                    })
                    .collect(),
            })
            .collect();
        let shown_docs: Vec<&Doc> = self
            .docs
            .iter()
            .filter(|doc| self.type_filter.is_none_or(|kind| doc.kind == kind))
            .collect();
        let selected_path = self.selected_card().map(|(doc, _)| doc.path.clone());
        let selected_doc =
            selected_path.and_then(|path| shown_docs.iter().position(|doc| doc.path == path));
        let docs = shown_docs
            .iter()
            .map(|doc| {
                let (done, total) = doc.progress();
                DocRow {
                    kind: doc.kind.name().to_owned(),
                    title: doc.title.clone(),
                    path: doc.path.display().to_string(),
                    done,
                    total,
                    warnings: doc.warnings.iter().map(ToString::to_string).collect(),
                }
            })
            .collect();
        let mut filter = Vec::new();
        if let Some(kind) = self.type_filter {
            filter.push(format!("type {}", kind.name()));
        }
        if let Some(status) = self.status_filter {
            filter.push(format!("status {}", status.name()));
        }
        if !self.text_filter.is_empty() {
            filter.push(format!("{:?}", self.text_filter));
        }
        BoardModel {
            columns,
            milestones: self.milestones(),
            selected: self.selected,
            docs,
            selected_doc,
            filter: filter.join(" · "),
            editing: self.editing.clone(),
            notice: self.notice.clone(),
            hint: self.hint.clone(),
        }
    }

    /// The milestones' progress, when the project has a milestones document with items.
    fn milestones(&self) -> Option<MilestonesRow> {
        let doc = self
            .docs
            .iter()
            .find(|doc| doc.kind == DocType::Milestone)?;
        let progress = Progress::of(doc);
        if progress.total == 0 {
            return None;
        }
        let phases = progress
            .phases
            .iter()
            .map(|phase| PhaseRow {
                current: progress.current.as_ref() == Some(&phase.name),
                name: phase.name.clone(),
                done: phase.done,
                total: phase.total,
            })
            .collect();
        Some(MilestonesRow {
            done: progress.done,
            total: progress.total,
            phases,
        })
    }

    fn move_selected(&mut self, step: isize) {
        let Some((doc, item)) = self
            .selected_card()
            .map(|(doc, item)| (doc.clone(), item.clone()))
        else {
            return;
        };
        // A checkbox is to do or done: it moves between those two, over In Progress.
        let order: &[ItemStatus] = match item.marker {
            Marker::Checkbox { .. } => &[ItemStatus::Todo, ItemStatus::Done],
            Marker::Keyword(_) | Marker::Header => &ItemStatus::ALL,
        };
        let at = order.iter().position(|s| *s == item.status).unwrap_or(0);
        let Some(to) = at
            .checked_add_signed(step)
            .and_then(|i| order.get(i))
            .copied()
        else {
            self.notice = Some(format!(
                "The card is in the {} column already",
                item.status.title()
            ));
            return;
        };
        self.notice = Some(format!("Moving “{}” to {}…", item.text, to.title()));
        self.port.move_card(&doc, &item, to);
    }

    fn cycle_type(&mut self) {
        let present: Vec<DocType> = DocType::ALL
            .into_iter()
            .filter(|kind| self.docs.iter().any(|doc| doc.kind == *kind))
            .collect();
        self.type_filter = match self.type_filter {
            None => present.first().copied(),
            Some(kind) => present
                .iter()
                .position(|k| *k == kind)
                .and_then(|at| present.get(at + 1))
                .copied(),
        };
    }

    fn cycle_status(&mut self) {
        self.status_filter = match self.status_filter {
            None => Some(ItemStatus::Todo),
            Some(status) => ItemStatus::ALL
                .iter()
                .position(|s| *s == status)
                .and_then(|at| ItemStatus::ALL.get(at + 1))
                .copied(),
        };
    }

    fn edit_filter(&mut self, key: &KeyEvent) -> ViewAction {
        let Some(text) = self.editing.as_mut() else {
            return ViewAction::Unhandled;
        };
        match key.code {
            KeyCode::Enter => {
                self.text_filter = self.editing.take().unwrap_or_default();
                self.anchor = None;
                self.regroup();
            }
            KeyCode::Esc => self.editing = None,
            KeyCode::Backspace => {
                text.pop();
            }
            KeyCode::Char(c)
                if !key
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
            {
                text.push(c)
            }
            _ => return ViewAction::Unhandled,
        }
        ViewAction::Consumed
    }
}

/// Where a card comes from, short: the path inside its type's folder (`2026-01-02-auth-plan.md`
/// for `plans/2026-01-02-auth-plan.md`; the card says `plan` already).
fn card_source(doc: &Doc) -> String {
    let mut parts = doc.path.components();
    if doc.path.components().count() > 1 {
        parts.next();
    }
    parts.as_path().display().to_string()
}

impl View for BoardView {
    fn title(&self) -> &str {
        "the kanban board"
    }

    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        render(&self.model(), theme, area, buf);
    }

    fn handle_paste(&mut self, text: &str) -> bool {
        match self.editing.as_mut() {
            Some(editing) => {
                editing.push_str(text.lines().next().unwrap_or_default());
                true
            }
            None => false,
        }
    }

    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction {
        if self.editing.is_some() {
            return self.edit_filter(key);
        }
        let Some(action) = self.keys.action(key) else {
            return ViewAction::Unhandled;
        };
        let rows = self
            .columns
            .get(self.selected.0)
            .map_or(0, |(_, c)| c.len());
        match action {
            KanbanAction::Close => return ViewAction::Close,
            KanbanAction::Left => self.selected.0 = self.selected.0.saturating_sub(1),
            KanbanAction::Right => self.selected.0 += 1,
            KanbanAction::Up => self.selected.1 = self.selected.1.saturating_sub(1),
            KanbanAction::Down => {
                self.selected.1 = (self.selected.1 + 1).min(rows.saturating_sub(1))
            }
            KanbanAction::Top => self.selected.1 = 0,
            KanbanAction::Bottom => self.selected.1 = rows.saturating_sub(1),
            KanbanAction::MoveLeft => self.move_selected(-1),
            KanbanAction::MoveRight => self.move_selected(1),
            KanbanAction::Open => {
                if let Some((doc, item)) = self.selected_card() {
                    self.port.open(doc, item.line);
                }
            }
            KanbanAction::ToEditor | KanbanAction::Copy => {
                let Some(command) = self.selected_card().and_then(|(doc, _)| doc.follow_up())
                else {
                    self.notice = Some("No card selected".to_owned());
                    return ViewAction::Consumed;
                };
                if action == KanbanAction::ToEditor && self.port.to_editor(&command) {
                    return ViewAction::Close;
                }
                self.notice = Some(format!("Copied {command}"));
                return ViewAction::Effect(ViewEffect::Copy(command));
            }
            KanbanAction::FilterType => self.cycle_type(),
            KanbanAction::FilterStatus => self.cycle_status(),
            KanbanAction::FilterText => self.editing = Some(self.text_filter.clone()),
            KanbanAction::ClearFilters => {
                self.type_filter = None;
                self.status_filter = None;
                self.text_filter.clear();
            }
            KanbanAction::Rescan => {
                self.notice = Some("Reading the documents again…".to_owned());
                self.port.rescan();
            }
        }
        if matches!(
            action,
            KanbanAction::FilterType | KanbanAction::FilterStatus | KanbanAction::ClearFilters
        ) {
            self.regroup();
        } else {
            self.clamp();
        }
        ViewAction::Consumed
    }

    fn refresh(&mut self, _context: &RefreshContext<'_>) {
        let docs = self.port.docs();
        if !Arc::ptr_eq(&docs, &self.docs) {
            self.docs = docs;
            self.regroup();
        }
        if let Some(notice) = self.port.take_notice() {
            self.notice = Some(notice);
        }
    }

    fn close_hint(&self) -> String {
        self.keys.close_key(KanbanAction::Close)
    }

    fn key_table(&self) -> Option<&'static KeyTableSpec> {
        Some(&KANBAN_KEYS)
    }
}

//! The board view with a recording port: navigation, filters, moves and the follow-up command.

use std::path::Path;
use std::sync::{Arc, Mutex};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::view::{BoardPort, BoardView};
use crate::config::keymap::Keymap;
use crate::views::{View, ViewAction, ViewEffect};
use crate::workflow::docs::{Doc, DocType, Item, ItemStatus, parse};

#[derive(Default)]
struct Recorder {
    docs: Arc<Vec<Doc>>,
    moves: Mutex<Vec<(String, ItemStatus)>>,
    editor: Option<Mutex<Vec<String>>>,
}

impl BoardPort for Recorder {
    fn docs(&self) -> Arc<Vec<Doc>> {
        Arc::clone(&self.docs)
    }
    fn move_card(&self, _doc: &Doc, item: &Item, to: ItemStatus) {
        crate::sys::lock(&self.moves).push((item.text.clone(), to));
    }
    fn open(&self, _doc: &Doc, _line: usize) {}
    fn to_editor(&self, text: &str) -> bool {
        match &self.editor {
            Some(editor) => {
                crate::sys::lock(editor).push(text.to_owned());
                true
            }
            None => false,
        }
    }
    fn rescan(&self) {}
    fn take_notice(&self) -> Option<String> {
        None
    }
}

fn docs() -> Arc<Vec<Doc>> {
    Arc::new(vec![
        parse(
            DocType::Plan,
            Path::new("plans/p.md"),
            "- unstarted: Task 1 — One\n- in-progress: Task 2 — Two\n- completed: Task 3 — Three\n"
                .as_bytes(),
        ),
        parse(DocType::Spec, Path::new("specs/s.md"), b"- [ ] Alpha\n"),
    ])
}

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

fn selected(view: &BoardView) -> String {
    view.selected_card()
        .map(|(_, item)| item.text.clone())
        .unwrap_or_default()
}

#[test]
fn keys_select_move_filter_and_hand_the_command_to_pi() {
    let port = Arc::new(Recorder {
        docs: docs(),
        editor: Some(Mutex::new(Vec::new())),
        ..Recorder::default()
    });
    let mut view = BoardView::new(port.clone(), &Keymap::defaults());
    assert_eq!(selected(&view), "Task 1 — One");
    view.handle_key(&key('j'));
    assert_eq!(selected(&view), "Alpha");
    view.handle_key(&key('l'));
    assert_eq!(selected(&view), "Task 2 — Two");
    view.handle_key(&key('L'));
    assert_eq!(
        *crate::sys::lock(&port.moves),
        [("Task 2 — Two".to_owned(), ItemStatus::Done)]
    );
    // Type filter: the first type present (in type order) is spec.
    view.handle_key(&key('h'));
    view.handle_key(&key('t'));
    assert_eq!(view.model().filter, "type spec");
    assert_eq!(view.model().columns[0].cards.len(), 1);
    // Text filter, typed then applied.
    view.handle_key(&key('x'));
    view.handle_key(&key('/'));
    for c in "alp".chars() {
        view.handle_key(&key(c));
    }
    assert_eq!(view.model().editing.as_deref(), Some("alp"));
    view.handle_key(&KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert_eq!(selected(&view), "Alpha");
    // `c` puts the follow-up in Pi's editor and closes the board.
    assert_eq!(view.handle_key(&key('c')), ViewAction::Close);
    assert_eq!(
        port.editor.as_ref().map(|e| crate::sys::lock(e).clone()),
        Some(vec!["/unipi:plan specs:s.md".to_owned()])
    );
    assert_eq!(view.handle_key(&key('?')), ViewAction::Unhandled);
}

#[test]
fn without_pi_the_command_goes_to_the_clipboard_and_status_filters_show_one_column() {
    let port = Arc::new(Recorder {
        docs: docs(),
        ..Recorder::default()
    });
    let mut view = BoardView::new(port, &Keymap::defaults());
    assert_eq!(
        view.handle_key(&key('c')),
        ViewAction::Effect(ViewEffect::Copy("/unipi:work plan:p.md".to_owned()))
    );
    view.handle_key(&key('s'));
    let model = view.model();
    assert_eq!(model.columns.len(), 1);
    assert_eq!(model.columns[0].title, "To Do");
    assert_eq!(model.columns[0].cards.len(), 2);
}

#[test]
fn checkbox_cards_move_between_to_do_and_done() {
    let docs = Arc::new(vec![
        parse(DocType::Spec, Path::new("specs/s.md"), b"- [ ] Alpha\n"),
        parse(
            DocType::Milestone,
            Path::new("MILESTONES.md"),
            b"## Phase 1\n- [x] Shipped\n",
        ),
    ]);
    let port = Arc::new(Recorder {
        docs,
        ..Recorder::default()
    });
    let mut view = BoardView::new(port.clone(), &Keymap::defaults());
    assert_eq!(selected(&view), "Alpha");
    view.handle_key(&key('L'));
    // To the Done column (the third), not In Progress, which a checkbox cannot be.
    view.handle_key(&key('l'));
    view.handle_key(&key('l'));
    assert_eq!(selected(&view), "Shipped");
    view.handle_key(&key('H'));
    assert_eq!(
        *crate::sys::lock(&port.moves),
        [
            ("Alpha".to_owned(), ItemStatus::Done),
            ("Shipped".to_owned(), ItemStatus::Todo)
        ]
    );
    // Done is as far right as a checkbox goes.
    view.handle_key(&key('L'));
    assert_eq!(crate::sys::lock(&port.moves).len(), 2);
    assert_eq!(
        view.model().notice.as_deref(),
        Some("The card is in the Done column already")
    );
}

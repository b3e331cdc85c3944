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

/// The board view as the user sees it at `width`x`height`, with the default keys.
fn screen(view: &BoardView, width: u16, height: u16) -> String {
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(width, height))
        .unwrap_or_else(|err| panic!("{err}"));
    terminal
        .draw(|frame| {
            let area = frame.area();
            view.render(area, frame.buffer_mut(), &unipi_widgets::Theme::plain());
        })
        .unwrap_or_else(|err| panic!("{err}"));
    terminal.backend().to_string()
}

/// A port whose notice is the one a refused move leaves.
struct Noticing(Recorder, Mutex<Option<String>>);

impl BoardPort for Noticing {
    fn docs(&self) -> Arc<Vec<Doc>> {
        self.0.docs()
    }
    fn move_card(&self, doc: &Doc, item: &Item, to: ItemStatus) {
        self.0.move_card(doc, item, to);
    }
    fn open(&self, _doc: &Doc, _line: usize) {}
    fn to_editor(&self, _text: &str) -> bool {
        false
    }
    fn rescan(&self) {}
    fn take_notice(&self) -> Option<String> {
        crate::sys::lock(&self.1).take()
    }
}

#[test]
fn the_board_at_80x24_and_120x40_with_its_keys_and_a_long_notice() {
    let one = Arc::new(vec![parse(
        DocType::Plan,
        Path::new("plans/2026-12-01-tour-plan.md"),
        "# Tour plan\n- unstarted: Task 1 — Set up the tour\n- completed: Task 2 — Book the \
         rooms\n"
            .as_bytes(),
    )]);
    let port = Arc::new(Noticing(
        Recorder {
            docs: one,
            ..Recorder::default()
        },
        Mutex::new(Some(
            "Not moved: .unipi/docs/plans/2026-12-01-tour-plan.md:2 changed on disk since the \
             board read it (now \"- blocked: Task 1 — Set up the tour, waiting for the \
             venue\"); not overwritten"
                .to_owned(),
        )),
    ));
    let mut view = BoardView::new(port, &Keymap::defaults());
    let pi = unipi_widgets::footer::FooterData::default();
    view.refresh(&crate::views::RefreshContext { pi: &pi });
    crate::assert_ui_snapshot!("workflow_board_80x24", screen(&view, 80, 24));
    crate::assert_ui_snapshot!("workflow_board_120x40", screen(&view, 120, 40));
}

#[test]
fn the_board_shows_the_milestones_with_their_progress_at_80x24_and_120x40() {
    let docs = Arc::new(vec![
        parse(
            DocType::Plan,
            Path::new("plans/2026-12-01-tour-plan.md"),
            "# Tour plan\n- completed: Task 1 — Book the rooms\n- unstarted: Task 2 — Print \
             the maps\n"
                .as_bytes(),
        ),
        parse(
            DocType::Milestone,
            Path::new("MILESTONES.md"),
            "---\ntitle: \"Tour milestones\"\n---\n## Phase 1: Venue\n- [x] Book the \
             rooms\n- [x] Sign the contract\n## Phase 2: Guests\n- [ ] Print the maps\n- \
             [ ] Send the invitations\n## Phase 3: Day\n- [ ] Run the tour\n"
                .as_bytes(),
        ),
    ]);
    let port = Arc::new(Recorder {
        docs,
        ..Recorder::default()
    });
    let view = BoardView::new(port, &Keymap::defaults());
    let milestones = view.model().milestones.unwrap_or_default();
    assert_eq!((milestones.done, milestones.total), (2, 5));
    let current: Vec<&str> = milestones
        .phases
        .iter()
        .filter(|phase| phase.current)
        .map(|phase| phase.name.as_str())
        .collect();
    assert_eq!(current, ["Phase 2: Guests"]);
    crate::assert_ui_snapshot!("workflow_board_milestones_80x24", screen(&view, 80, 24));
    crate::assert_ui_snapshot!("workflow_board_milestones_120x40", screen(&view, 120, 40));
}

#[test]
fn the_footer_shows_the_editor_notice_whole_at_80_columns() {
    use unipi_widgets::footer::{FooterModel, PiRunState, render};
    let model = FooterModel {
        pi: PiRunState::Running,
        status: None,
        cwd: "/home/ada/src/tour-planner".to_owned(),
        home: Some("/home/ada".to_owned()),
        git_branch: Some("main".to_owned()),
        scrolled_back: None,
        hint: Some("F1 help".to_owned()),
        notice: Some(super::EDITOR_NOTICE.to_owned()),
        clock: None,
        session_secs: None,
    };
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(80, 1))
        .unwrap_or_else(|err| panic!("{err}"));
    terminal
        .draw(|frame| {
            let area = frame.area();
            render(
                &model,
                &unipi_widgets::Theme::plain(),
                area,
                frame.buffer_mut(),
            );
        })
        .unwrap_or_else(|err| panic!("{err}"));
    let row = terminal.backend().to_string();
    assert!(row.contains(super::EDITOR_NOTICE), "{row}");
}

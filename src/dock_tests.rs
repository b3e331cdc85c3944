//! The dock with the sections the capabilities give it — the tasks' and the helpers' — driven
//! by keys: selection, details, the row keys' verbs, stop-all, the message input. The dock
//! itself knows neither (`views::dock`); these tests were its own before the row kinds moved
//! into the capabilities, and check the same.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use unipi_widgets::agents::{AgentKind, AgentRow, AgentStatus};
use unipi_widgets::dock::{DockMode, entries, max_detail_scroll, selected_entry};
use unipi_widgets::footer::FooterData;
use unipi_widgets::tasks::{TaskRow, TaskStatus};
use unipi_widgets::theme::Theme;

use crate::config::keymap::Keymap;
use crate::views::dock::{
    DockAction, DockKeys, DockRequest, DockSection, DockSource, DockView, RUNNING_TICK,
};
use crate::views::test_keys::{ch, key, press, user_keymap, with_user};
use crate::views::{KeyOutcome, RefreshContext, View, ViewAction, ViewEffect, ViewStack};

/// What a [`Recorder`] lists: tasks, or agents (none: no section).
enum DockRows {
    Tasks(Vec<TaskRow>),
    Agents(Vec<AgentRow>),
}

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
    /// The tasks' section of its tasks, or the helpers' section of its agents under the main
    /// agent's row from Pi's data (unless they bring their own).
    fn section(&self, context: &RefreshContext<'_>) -> Option<DockSection> {
        match &*self.rows.lock().unwrap() {
            DockRows::Tasks(rows) => Some(crate::tasks::dock::section(rows.clone())),
            DockRows::Agents(rows) if rows.is_empty() => None,
            DockRows::Agents(rows) => {
                let mut rows = rows.clone();
                if !rows.iter().any(|row| row.kind == AgentKind::Main) {
                    rows.push(unipi_widgets::agents::main_row(context.pi));
                }
                Some(crate::helpers::dock::section(rows))
            }
        }
    }

    fn request(&self, request: &DockRequest) -> Result<(), crate::bridge::Refusal> {
        match request {
            DockRequest::Detail(target) => self.details.lock().unwrap().push(target.clone()),
            other => self.requests.lock().unwrap().push(other.clone()),
        }
        match (request, self.refuse.lock().unwrap().clone()) {
            (DockRequest::Steer { .. } | DockRequest::Stop(_), Some(message)) => {
                Err(message.into())
            }
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

/// A dock over a tasks source and a helpers source, whose rows the tests set.
struct TestDock {
    view: DockView,
    tasks: Arc<Recorder>,
    agents: Arc<Recorder>,
}

impl TestDock {
    /// Like [`TestDock::open`], not drawn yet.
    fn new(rows: Vec<TaskRow>, keymap: &Keymap) -> Self {
        let tasks = Recorder::new(DockRows::Tasks(rows));
        let agents = Recorder::new(DockRows::Agents(Vec::new()));
        let sources: Vec<Arc<dyn DockSource>> = vec![tasks.clone(), agents.clone()];
        let view = DockView::open(sources, keymap, &RefreshContext { pi: &pi_data() });
        TestDock {
            view,
            tasks,
            agents,
        }
    }

    /// Drawn once on a 100x40 pane, so paging knows the dock's size.
    fn open(tasks: Vec<TaskRow>, agents: Vec<AgentRow>) -> Self {
        let mut dock = TestDock::new(tasks, &Keymap::defaults());
        *dock.agents.rows.lock().unwrap() = DockRows::Agents(agents);
        dock.view.refresh(&RefreshContext { pi: &pi_data() });
        let mut buf = Buffer::empty(Rect::new(0, 0, 100, 40));
        dock.view.render(buf.area, &mut buf, &Theme::plain());
        dock
    }

    /// The tasks source's rows are now `rows` (any order).
    fn set_rows(&mut self, rows: Vec<TaskRow>) {
        *self.tasks.rows.lock().unwrap() = DockRows::Tasks(rows);
        self.view.refresh(&RefreshContext { pi: &pi_data() });
    }

    /// The helpers source's rows are now `agents` (any order, the main agent among them).
    fn set_agents(&mut self, agents: Vec<AgentRow>) {
        *self.agents.rows.lock().unwrap() = DockRows::Agents(agents);
        self.view.refresh(&RefreshContext { pi: &pi_data() });
    }
}

impl Deref for TestDock {
    type Target = DockView;
    fn deref(&self) -> &DockView {
        &self.view
    }
}

impl DerefMut for TestDock {
    fn deref_mut(&mut self) -> &mut DockView {
        &mut self.view
    }
}

fn make_row(id: &str, status: TaskStatus) -> TaskRow {
    TaskRow {
        id: id.to_owned(),
        name: format!("task {id}"),
        status,
        unseen: status.is_finished(),
        is_shell: true,
        output_path: format!("/tmp/unipi-bg-tasks/s/{id}.output"),
        tail: (1..=50).map(|n| format!("line {n}")).collect(),
        ..TaskRow::default()
    }
}

fn four_tasks() -> Vec<TaskRow> {
    vec![
        make_row("b4", TaskStatus::Done),
        make_row("b1", TaskStatus::Running),
        make_row("b3", TaskStatus::Failed),
        make_row("b2", TaskStatus::Running),
    ]
}

/// Two running tasks, one failed, one done (in that display order) from one source, drawn
/// once on a 100x40 pane so paging knows the dock's size.
fn make_dock() -> (TestDock, Arc<Recorder>) {
    let view = TestDock::open(four_tasks(), Vec::new());
    let tasks = view.tasks.clone();
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
    selected_entry(view.model()).map_or(String::new(), |entry| entry.row.id.clone())
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
    let mut empty = TestDock::new(Vec::new(), &Keymap::defaults());
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
    let mut idle = TestDock::new(vec![make_row("b9", TaskStatus::Done)], &Keymap::defaults());
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
    let mut view = TestDock::new(vec![row], &Keymap::defaults());
    assert_eq!(view.handle_key(&ch('r')), ViewAction::Consumed);
}

#[test]
fn history_toggle_shows_cleared_finished_tasks() {
    let mut seen = make_row("b5", TaskStatus::Done);
    seen.unseen = false;
    seen.cleared = true;
    let mut view = TestDock::new(
        vec![seen, make_row("b1", TaskStatus::Running)],
        &Keymap::defaults(),
    );
    assert_eq!(entries(view.model()).len(), 1);
    view.handle_key(&ch('h'));
    assert_eq!(entries(view.model()).len(), 2);
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
    assert!(matches!(mode(&view), DockMode::Detail { follow: false, scroll } if scroll < max - 1));
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
    let mut view = TestDock::new(
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
    stack.push(Box::new(view.view));
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
    let stopped: Vec<TaskRow> = four_tasks()
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
        .map(|entry| entry.row.id.clone())
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
    let keymap =
        user_keymap("[dock]\n\"x\" = \"dock.stop\"\n\"s\" = \"none\"\n\"X\" = \"dock.stop_all\"\n");
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
fn make_agent_dock() -> (TestDock, Arc<Recorder>) {
    let mut view = TestDock::open(
        four_tasks(),
        vec![
            make_agent("h1", None, AgentStatus::Running),
            make_agent("h3", None, AgentStatus::Done),
            make_agent("h2", Some("h1"), AgentStatus::Running),
        ],
    );
    let agents = view.agents.clone();
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
        .map(|entry| entry.row.id.clone())
        .collect();
    assert_eq!(ids, ["main", "h1", "h2", "h3", "b1", "b2", "b3", "b4"]);
    assert_eq!(selected_id(&view), "main");
    view.handle_key(&ch('j'));
    view.handle_key(&ch('j')); // h2
    assert_eq!(
        view.model().keys,
        DockKeys::from_keymap(&Keymap::defaults()).hints(crate::helpers::dock::LIST_HINTS)
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
        DockKeys::from_keymap(&Keymap::defaults()).hints(crate::helpers::dock::DETAIL_HINTS)
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
    assert!(view.handle_paste("line one\nline two"));
    assert_eq!(
        view.model().steer.as_ref().map(|s| s.text.as_str()),
        Some("line one line two")
    );
    assert_eq!(view.handle_key(&key(KeyCode::Esc)), ViewAction::Consumed);
    assert_eq!(view.model().steer, None);
    assert!(!view.handle_paste("x"));
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
    assert_eq!(view.model().armed.as_deref(), Some("h1"));
    assert_eq!(
        view.model().notice.as_deref(),
        Some("Press s again to stop explore h1; its work so far is kept.")
    );
    // Another key disarms.
    view.handle_key(&ch('j'));
    assert_eq!(view.model().armed, None);
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
        // A task: the tasks' section comes after the agents'.
        selected_entry(view.model())
            .filter(|entry| entry.section == 1)
            .map(|entry| entry.row.id.as_str()),
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
                    // The agents' section comes first.
                    if entry.section == 0 { "a:" } else { "t:" },
                    entry.row.id
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

/// The hint lines each kind of row gives, with the built-in keys and with rebound ones.
#[test]
fn dock_hints_table() {
    let keys = DockKeys::from_keymap;
    let pairs = |hints: Vec<(String, String)>| -> Vec<String> {
        hints.into_iter().map(|(k, w)| format!("{k} {w}")).collect()
    };
    let defaults = Keymap::defaults();
    assert_eq!(
        pairs(keys(&defaults).hints(crate::tasks::dock::LIST_HINTS)),
        [
            "↑↓ select",
            "Enter details",
            "s stop",
            "S stop all",
            "r rerun",
            "y copy path",
            "h history",
            "Ctrl+Alt+C clear notices",
            "Esc close",
        ]
    );
    assert_eq!(
        pairs(keys(&defaults).hints(crate::tasks::dock::DETAIL_HINTS)),
        [
            "↑↓ PgUp PgDn scroll",
            "End follow",
            "s stop",
            "r rerun",
            "y copy path",
            "Esc back",
        ]
    );
    assert_eq!(
        pairs(keys(&defaults).hints(crate::helpers::dock::LIST_HINTS)),
        [
            "↑↓ select",
            "t Enter transcript",
            "m steer",
            "s stop",
            "h history",
            "y copy id",
            "Esc close",
        ]
    );
    assert_eq!(
        pairs(keys(&defaults).hints(crate::helpers::dock::DETAIL_HINTS)),
        [
            "↑↓ PgUp PgDn scroll",
            "End follow",
            "m steer",
            "s stop",
            "Esc back",
        ]
    );
    // Rebound and unbound keys show through: the user's key first, an action with no key
    // left drops out of the line.
    let (keymap, errors) = with_user(
        "[dock]\n\"w\" = \"dock.up\"\n\"up\" = \"none\"\n\"pagedown\" = \"none\"\n\
         \"y\" = \"none\"\n\"q\" = \"dock.back\"\n",
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        pairs(keys(&keymap).hints(crate::tasks::dock::DETAIL_HINTS)),
        [
            "w ↓ PgUp scroll",
            "End follow",
            "s stop",
            "r rerun",
            "q back",
        ]
    );
    assert_eq!(keys(&keymap).action(&press("q")), Some(DockAction::Back));
    assert_eq!(keys(&keymap).action(&press("y")), None);
}

#[test]
fn steer_on_an_empty_task_dock_says_only_helpers_can_be_steered() {
    let mut empty = TestDock::new(Vec::new(), &Keymap::defaults());
    assert_eq!(empty.handle_key(&ch('m')), ViewAction::Consumed);
    assert_eq!(
        empty.model().notice.as_deref(),
        Some("Only helpers can be steered.")
    );
}

//! The app as a unit: built without a PTY or a Pi, driven with the bytes a terminal sends, and
//! checked through the effects it returns and the frame it draws (gitui's and codex-rs's way of
//! testing a TUI). A fake capability ([`crate::capability::fake`]) stands in for the real ones: it
//! shows a footer segment and lists entries in the dock, and records what the dock asks of it.

use std::path::PathBuf;
use std::sync::Arc;

use crossterm::event::{KeyModifiers, MouseButton};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::*;
use crate::capability::Capability;
use crate::capability::fake::{FakeCapability, FakeDock};
use crate::pane::emulator::HostInfo;
use crate::pi::{PiCommand, PiSource};
use crate::views::dock::DockRequest;
use crate::views::info::{DashboardView, InfoSource};

const WIDTH: u16 = 100;
const HEIGHT: u16 = 30;

/// An app over a 100x30 terminal with one fake capability listing two entries.
pub(crate) fn make_app(config_errors: Vec<String>) -> (App, Arc<FakeDock>) {
    make_app_with(
        config_errors,
        crate::config::footer::FooterConfig::default().into(),
    )
}

/// [`make_app`] with the footer config `footer` (a followed file, or a fixed config).
fn make_app_with(
    config_errors: Vec<String>,
    footer: crate::config::live::LiveConfig<crate::config::footer::FooterConfig>,
) -> (App, Arc<FakeDock>) {
    let dock = Arc::new(FakeDock::default());
    dock.list("bg-1", "build", true);
    dock.list("bg-2", "lint", false);
    let capability: Arc<dyn Capability> = Arc::new(FakeCapability::new(dock.clone()));
    let mut app = new_app(AppParts {
        keymap: Keymap::defaults(),
        capabilities: vec![capability],
        config_errors,
        footer,
        commands: vec![("unipi:bg".to_owned(), "Run in the background".to_owned())],
    });
    // Pi has drawn its first screen.
    app.update(AppEvent::Pty(PtyEvent::Output(
        b"\x1b[1mpi\x1b[0m v1.6.0\r\n\r\n> hello from the editor".to_vec(),
    )));
    (app, dock)
}

/// What differs between the tests' apps.
pub(crate) struct AppParts {
    pub keymap: Keymap,
    pub capabilities: Vec<Arc<dyn Capability>>,
    pub config_errors: Vec<String>,
    pub footer: crate::config::live::LiveConfig<crate::config::footer::FooterConfig>,
    pub commands: Vec<(String, String)>,
}

/// A real app over a 100x30 terminal, before Pi drew anything, running Pi 1.6.0 from `PATH`.
pub(crate) fn new_app(parts: AppParts) -> App {
    let keymap = Arc::new(parts.keymap);
    let (theme, _) = crate::config::theme::load_theme(None, true);
    let options = AppOptions {
        pi: PiCommand {
            program: PathBuf::from("pi"),
            args: Vec::new(),
            env: Vec::new(),
            source: PiSource::Path,
            version: Some("1.6.0".to_owned()),
        },
        pi_args: Vec::new(),
        pi_env: Vec::new(),
        keymap: Arc::clone(&keymap),
        theme: theme.clone(),
        footer: parts.footer,
        config_errors: parts.config_errors,
        welcome: None,
        log_path: PathBuf::from("/home/ada/.local/state/unipi-tui/unipi-tui.log"),
        workspace: PathBuf::from("/home/ada/project"),
        keyboard_enhancement: true,
        scrollback: 100,
        bridge: None,
        capabilities: parts.capabilities,
        ui: Ui::headless(keymap),
        ui_requests: None,
        commands: parts.commands,
    };
    let layout = Layout::new(Rect::new(0, 0, WIDTH, HEIGHT), 1);
    let emulator = Emulator::new(
        layout.pane.height,
        layout.pane.width,
        options.scrollback,
        theme.terminal.clone(),
        HostInfo { in_tmux: false },
    );
    let mut app = App::new(emulator, &options);
    // Screen snapshots show a clock that stands still.
    app.footer.fix_clock("12:00");
    app
}

/// The bytes a terminal sends for a key, as the app reads them.
pub(crate) fn send(app: &mut App, bytes: &[u8]) -> Vec<Effect> {
    app.update(AppEvent::Input(bytes.to_vec()))
}

pub(crate) fn to_pi(effects: &[Effect]) -> Vec<u8> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::ToPi(bytes) => Some(bytes.clone()),
            Effect::ToTerminal(_) => None,
        })
        .flatten()
        .collect()
}

pub(crate) fn screen(app: &mut App) -> String {
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).unwrap();
    terminal
        .draw(|frame| {
            let area = frame.area();
            app.render(area, frame.buffer_mut());
        })
        .unwrap();
    terminal.backend().to_string()
}

/// Adds a running capability after the fake one (one that takes a capability's key).
pub(crate) fn add_capability(app: &mut App, capability: Arc<dyn Capability>) {
    app.capabilities.push(capability);
}

/// The titles of the open views, bottom first.
pub(crate) fn view_titles(app: &App) -> Vec<String> {
    app.views.titles()
}

#[test]
fn keys_go_to_the_top_view_then_the_keymap_then_pi() {
    let (mut app, dock) = make_app(Vec::new());
    // No view: a letter is Pi's.
    assert_eq!(to_pi(&send(&mut app, b"a")), b"a");
    // F1 is the workbench's: the help opens, Pi gets nothing.
    assert!(to_pi(&send(&mut app, b"\x1bOP")).is_empty());
    assert_eq!(app.views.titles(), ["the key help"]);
    // A key the help has no use for is not Pi's either; the footer says how to leave.
    assert!(to_pi(&send(&mut app, b"x")).is_empty());
    assert!(screen(&mut app).contains("x does nothing in the key help · Esc closes it"));
    // Esc (flushed after its timeout) closes it; the next letter reaches Pi again.
    send(&mut app, b"\x1b");
    for event in app.decoder.flush_pending() {
        app.on_input(event);
    }
    assert!(to_pi(&app.take_effects()).is_empty());
    assert!(app.views.is_empty());
    assert_eq!(to_pi(&send(&mut app, b"b")), b"b");
    // Shift+Down opens the dock over the capability's entries; its keys go to the source.
    assert!(to_pi(&send(&mut app, b"\x1b[1;2B")).is_empty());
    assert_eq!(app.views.titles(), ["the dock"]);
    send(&mut app, b"s");
    assert_eq!(
        *dock.requests.lock().unwrap(),
        [DockRequest::Stop("bg-1".to_owned())]
    );
    // Ctrl+C closes any view, and reaches Pi once none is open.
    assert!(to_pi(&send(&mut app, b"\x03")).is_empty());
    assert!(app.views.is_empty());
    assert_eq!(to_pi(&send(&mut app, b"\x03")), b"\x03");
}

#[test]
fn a_view_asks_for_the_clipboard_with_an_effect() {
    let (mut app, _) = make_app(Vec::new());
    send(&mut app, b"\x1b[1;2B");
    let effects = send(&mut app, b"y");
    assert_eq!(
        effects,
        [Effect::ToTerminal(osc52("/tmp/unipi/bg-1.output"))]
    );
}

/// A source that never has new figures (the app's tests do not refresh).
struct NoRefresh;

impl InfoSource for NoRefresh {
    fn refresh(&self) {}

    fn take(&self) -> Option<Vec<unipi_widgets::dashboard::DashboardTab>> {
        None
    }
}

/// The info dashboard with the workbench's page alone, as it is without a bridge.
fn dashboard(app: &App) -> DashboardView {
    let page = crate::info::workbench::model(None, &app.log_path.clone());
    let model = unipi_widgets::dashboard::DashboardModel {
        tabs: vec![unipi_widgets::dashboard::DashboardTab::Workbench(page)],
        ..Default::default()
    };
    DashboardView::new(model, Arc::new(NoRefresh), &Keymap::defaults())
}

#[test]
fn capabilities_reach_the_screen_through_ui_requests_and_changes() {
    let (mut app, dock) = make_app(Vec::new());
    app.update(AppEvent::Ui(UiRequest::Open(Box::new(dashboard(&app)))));
    assert_eq!(app.views.titles(), ["/unipi:info"]);
    assert_eq!(
        app.update(AppEvent::Ui(UiRequest::Terminal(b"\x07".to_vec()))),
        [Effect::ToTerminal(b"\x07".to_vec())]
    );
    app.update(AppEvent::Ui(UiRequest::OpenDock {
        detail: Some("bg-2".to_owned()),
    }));
    assert_eq!(app.views.titles(), ["/unipi:info", "the dock"]);
    assert!(screen(&mut app).contains("lint"));
    // A change in the capability reaches the open dock without a key.
    dock.list("bg-3", "deploy", true);
    app.update(AppEvent::Changed);
    send(&mut app, b"\x1b");
    for event in app.decoder.flush_pending() {
        app.on_input(event);
    }
    assert!(screen(&mut app).contains("deploy"));
}

#[test]
fn the_whole_screen_with_footer_dock_and_overlay() {
    let (mut app, _) = make_app(Vec::new());
    send(&mut app, b"\x1b[1;2B");
    crate::assert_ui_snapshot!("app_pane_footer_and_dock", screen(&mut app));
    send(&mut app, b"\x1bOP");
    crate::assert_ui_snapshot!("app_help_over_the_dock", screen(&mut app));
}

/// The first row of text in the help box on `screen` (the row under its title).
fn help_first_row(screen: &str) -> String {
    let lines: Vec<&str> = screen.lines().collect();
    let title = lines
        .iter()
        .position(|line| line.contains("┌ unipi-tui keys"))
        .unwrap_or_else(|| panic!("no help on screen:\n{screen}"));
    lines[title + 1].to_owned()
}

/// A lone Esc: sent, then its wait for a longer sequence cut short.
fn send_esc(app: &mut App) {
    send(app, b"\x1b");
    for event in app.decoder.flush_pending() {
        app.on_input(event);
    }
}

#[test]
fn f1_opens_the_help_at_the_keys_of_the_overlay_on_top_and_its_border_names_the_scroll_keys() {
    let (mut app, _) = make_app(Vec::new());
    // Over the pane: the help from its top, far taller than the terminal, says how to scroll.
    send(&mut app, b"\x1bOP");
    let text = screen(&mut app);
    assert!(help_first_row(&text).contains("F1 "), "{text}");
    assert!(
        text.contains("└ ↑↓ PgUp PgDn Home End scroll · Esc close ─"),
        "{text}"
    );
    send_esc(&mut app);
    assert!(app.views.is_empty());

    // Over the dock: the dock's keys at the top of the help.
    send(&mut app, b"\x1b[1;2B");
    send(&mut app, b"\x1bOP");
    assert_eq!(app.views.titles(), ["the dock", "the key help"]);
    let text = screen(&mut app);
    assert!(help_first_row(&text).contains("│ The dock "), "{text}");
    // It scrolls from there: one line down shows the dock's first key.
    send(&mut app, b"\x1b[B");
    let text = screen(&mut app);
    assert!(
        help_first_row(&text).contains("Select the entry above"),
        "{text}"
    );
    // Closing the help goes back to the dock.
    send_esc(&mut app);
    assert_eq!(app.views.titles(), ["the dock"]);
    send_esc(&mut app);
    assert!(app.views.is_empty());

    // Over the info dashboard: its own keys.
    app.update(AppEvent::Ui(UiRequest::Open(Box::new(dashboard(&app)))));
    send(&mut app, b"\x1bOP");
    let text = screen(&mut app);
    assert!(
        help_first_row(&text).contains("│ The info dashboard (/unipi:info) "),
        "{text}"
    );
    crate::assert_ui_snapshot!("app_help_over_info", text);
}

#[test]
fn start_up_problems_show_first_and_let_typing_through() {
    let problems = vec![
        "/home/ada/.unipi/config/mcp.json:3:9: expected a string for `command`".to_owned(),
        "/home/ada/.config/unipi-tui/keymap.toml:2:1: unknown table `keys`".to_owned(),
    ];
    let (mut app, _) = make_app(problems);
    crate::assert_ui_snapshot!("app_start_up_problems", screen(&mut app));
    // The first letter closes the box and reaches Pi: nothing typed is lost.
    assert_eq!(to_pi(&send(&mut app, b"h")), b"h");
    assert!(app.views.is_empty());
}

fn mouse(kind: MouseEventKind, column: u16, row: u16) -> MouseEvent {
    MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }
}

#[test]
fn layout_reserves_the_last_row_for_the_footer() {
    let l = Layout::new(Rect::new(0, 0, 120, 40), 1);
    assert_eq!(l.pane, Rect::new(0, 0, 120, 39));
    assert_eq!(l.footer, Rect::new(0, 39, 120, 1));
    let two = Layout::new(Rect::new(0, 0, 120, 40), 2);
    assert_eq!(two.pane, Rect::new(0, 0, 120, 38));
    assert_eq!(two.footer, Rect::new(0, 38, 120, 2));
    let short = Layout::new(Rect::new(0, 0, 120, 2), 2);
    assert_eq!((short.pane.height, short.footer.height), (1, 1));
    let tiny = Layout::new(Rect::new(0, 0, 10, 1), 1);
    assert_eq!(tiny.pane.height, 1);
    assert_eq!(tiny.footer.height, 0);
    let off = Layout::new(Rect::new(0, 0, 120, 40), 0);
    assert_eq!(off.pane, Rect::new(0, 0, 120, 40));
    assert_eq!(off.footer.height, 0);
    assert_eq!(tiny.pane.height, 1);
    assert_eq!(tiny.footer.height, 0);
}

#[test]
fn mouse_is_translated_into_the_pane_and_clamped_when_dragging() {
    let pane = Rect::new(0, 2, 80, 20);
    let down = translate_mouse(&mouse(MouseEventKind::Down(MouseButton::Left), 5, 3), pane);
    assert_eq!(down.map(|m| (m.column, m.row)), Some((5, 1)));
    let outside = translate_mouse(&mouse(MouseEventKind::Down(MouseButton::Left), 5, 30), pane);
    assert!(outside.is_none(), "a click on the footer is not Pi's");
    let drag = translate_mouse(
        &mouse(MouseEventKind::Drag(MouseButton::Left), 90, 30),
        pane,
    );
    assert_eq!(drag.map(|m| (m.column, m.row)), Some((79, 19)));
}

#[test]
fn focus_typing_and_pis_program_status_reach_the_capabilities_screen_state() {
    let (mut app, _) = make_app(Vec::new());
    let screen = app.ui.clone();
    assert!(screen.screen().focused);
    assert_eq!(screen.screen().last_input, None);
    send(&mut app, b"\x1b[O");
    assert!(!screen.screen().focused);
    send(&mut app, b"\x1b[I");
    assert!(screen.screen().focused);
    send(&mut app, b"x");
    assert!(screen.screen().last_input.is_some());
    app.update(AppEvent::Pty(PtyEvent::Output(
        b"\x1b]7501;state=blocked:app=pi:kind=input\x1b\\".to_vec(),
    )));
    let status = screen.screen().pi_status;
    assert_eq!(
        status.map(|s| (s.state, s.kind)),
        Some((
            crate::pane::emulator::ProgramState::Blocked,
            Some("input".to_owned())
        ))
    );
}

#[test]
fn a_sessions_terminal_attaching_and_leaving_reaches_the_screen_state_and_the_loop() {
    let (mut app, _) = make_app(Vec::new());
    let screen = app.ui.clone();
    app.update(AppEvent::Ui(UiRequest::TerminalAttached(None)));
    assert!(!screen.screen().attached);
    assert!(!app.has_terminal(), "no frames for nobody");
    assert_eq!(app.take_reattached(), None);
    let new = crate::capability::NewTerminal {
        marker: b"\x1b]7796;unipi-tui-attached;2\x07".to_vec(),
        keyboard: crate::term::tui::KeyboardProtocol::ModifyOtherKeys,
    };
    send(&mut app, b"\x1b[O");
    app.update(AppEvent::Ui(UiRequest::TerminalAttached(Some(new.clone()))));
    assert!(screen.screen().attached && screen.screen().focused);
    assert!(app.has_terminal() && app.needs_draw);
    assert_eq!(
        app.take_reattached(),
        Some(new),
        "the loop sets it up, once"
    );
    assert_eq!(app.take_reattached(), None);
}

/// `footer.json` is followed: an edit shows when the terminal regains focus (the user comes
/// back from the editor), without a restart.
#[test]
fn an_edit_of_footer_json_shows_when_the_terminal_regains_focus() {
    use crate::config::footer::{FOOTER_FILE, FooterConfig};
    use crate::config::live::LiveConfig;
    use crate::config::module_file::{ModuleConfig, write_module_file};
    let (home, workspace) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (footer, errors) = LiveConfig::module(
        Some(home.path()),
        workspace.path(),
        &[FOOTER_FILE],
        FooterConfig::load,
    );
    assert!(errors.is_empty(), "{errors:?}");
    let (mut app, _) = make_app_with(Vec::new(), footer);
    let last_line = |app: &mut App| screen(app).lines().last().unwrap_or_default().to_owned();
    let before = last_line(&mut app);
    assert!(before.contains("F1 help"), "{before}");
    write_module_file(workspace.path(), FOOTER_FILE, r#"{"enabled": false}"#);
    assert_eq!(
        last_line(&mut app),
        before,
        "read when the user comes back, not per frame"
    );
    send(&mut app, b"\x1b[O");
    send(&mut app, b"\x1b[I");
    let after = last_line(&mut app);
    assert!(
        !after.contains("F1 help"),
        "the footer row is gone: {after}"
    );
}

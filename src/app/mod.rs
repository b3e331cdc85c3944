//! The application: one state ([`App`]), one channel of [`AppEvent`]s, one loop
//! (`event_loop.rs`). Every input — terminal bytes, Pi's output, signals — arrives as a message;
//! `App` updates its state and asks for a frame; frames are drawn by the loop, coalesced and
//! capped, never per event.
//!
//! Key routing: the top modal view gets keys first; with no view open the keymap sees them (a
//! workbench chord runs an action); everything else is encoded in the mode Pi negotiated and
//! written to Pi's PTY.

pub mod bridge;
mod compactor;
mod event_loop;
mod footer;
mod helpers;
mod mcp;
mod notice;
pub mod tasks;

use std::ffi::OsString;
use std::path::PathBuf;

use crossterm::event::{Event, KeyEvent, KeyEventKind, MouseEvent, MouseEventKind};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};

use crate::config::keymap::{Action, Keymap, KeymapResult};
use crate::config::theme::Theme;
use crate::pane::emulator::{Emulator, EmulatorEvent};
use crate::pane::encode::{encode_focus, encode_key, encode_mouse, encode_paste};
use crate::pane::pty::{ChildExit, Pty, PtyEvent};
use crate::pane::render::{PaneSource, render_pane};
use crate::pi::PiCommand;
use crate::term::input::{InputDecoder, InputEvent};
use crate::views::ViewStack;
use crate::views::help::HelpView;

pub use event_loop::run;

/// Everything the loop reacts to.
#[derive(Debug)]
pub enum AppEvent {
    /// Raw bytes from the outer terminal.
    Input(Vec<u8>),
    /// The outer terminal's input ended (the SSH connection dropped, or stdin closed).
    InputClosed,
    Pty(PtyEvent),
    Bridge(crate::bridge::BridgeEvent),
    /// The background tasks changed (started, output, ended).
    TasksChanged,
    /// The helper board changed (a run started, reported progress, ended).
    HelpersChanged,
    /// The MCP servers or what is declared from them changed.
    McpChanged,
}

/// What the workbench needs to start.
pub struct AppOptions {
    pub pi: PiCommand,
    /// The user's arguments for Pi, unchanged.
    pub pi_args: Vec<OsString>,
    /// Extra environment for Pi (the demo's offline agent dir, …).
    pub pi_env: Vec<(OsString, OsString)>,
    /// The directory the workbench was started in: Pi's working directory and every child's,
    /// and where project config is read. Read once at start and passed down, never re-read.
    pub workspace: PathBuf,
    pub keymap: Keymap,
    pub theme: Theme,
    pub footer: crate::config::footer::FooterConfig,
    /// Problems with the user's config files, shown once the screen is up.
    pub config_errors: Vec<String>,
    pub log_path: PathBuf,
    pub keyboard_enhancement: bool,
    /// Scrollback rows kept for Pi's inline output.
    pub scrollback: usize,
    /// The bridge to Pi's event stream, when it started (the workbench runs without it).
    pub bridge: Option<bridge::Started>,
    /// Background tasks, when enabled.
    pub tasks: Option<tasks::Tasks>,
    /// Helper runs and delegates, shown in the dock and the footer, when the modules run.
    pub helpers: Option<crate::helpers::board::HelperBoard>,
    /// The MCP bridge module, when the workbench owns MCP.
    pub mcp: Option<crate::mcp::module::McpModule>,
    /// The compactor (deterministic compaction, recall), when it started.
    pub compactor: Option<crate::compactor::module::CompactorModule>,
}

/// How the session ended.
#[derive(Debug)]
pub struct AppOutcome {
    /// The exit code to leave with: Pi's, or 128+N when a signal ended the workbench.
    pub code: i32,
    /// Pi's exit, when Pi ended by itself.
    pub pi_exit: Option<ChildExit>,
    /// Pi's last non-empty output lines (printed after the terminal is restored when Pi failed).
    pub last_lines: Vec<String>,
    /// Pi's inline output with colours, printed after the terminal is restored so the shell's
    /// scrollback holds what running Pi directly would have left there.
    pub transcript: Vec<u8>,
    /// The main Pi's session as it last reported it (for the resume command printed at exit).
    pub session: Option<crate::pi::resume::PiSession>,
}

/// Why the loop ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// Pi exited and its output is drained.
    PiExited,
    /// The terminal went away: stop Pi like on SIGHUP.
    InputClosed,
}

/// Lines of the wheel per notch when the workbench scrolls its own history.
const WHEEL_LINES: usize = 3;

/// The workbench state.
pub struct App {
    emulator: Emulator,
    pty: Pty,
    decoder: InputDecoder,
    keymap: Keymap,
    theme: Theme,
    views: ViewStack,
    footer: footer::FooterState,
    log_path: PathBuf,
    /// Where the workbench was started ([`AppOptions::workspace`]).
    workspace: PathBuf,
    /// Where the pane was last drawn (for mouse translation).
    pane_area: Rect,
    /// Rows scrolled back into history (0 = live). Only on Pi's main screen.
    scroll_back: usize,
    /// Outer-terminal focus, as last reported.
    focused: bool,
    pi_exit: Option<ChildExit>,
    /// The main Pi's session, from its last `session_start`.
    session: Option<crate::pi::resume::PiSession>,
    pty_closed: bool,
    /// The outer terminal's input ended (an SSH connection dropped).
    input_closed: bool,
    needs_draw: bool,
    /// Bytes for the outer terminal that are not part of a frame (OSC 52, notifications, BEL).
    outer: Vec<u8>,
    bridge: Option<bridge::Bridge>,
    /// Background tasks, when the module is enabled.
    tasks: Option<tasks::Tasks>,
    /// Helper runs and delegates, when the modules run.
    helpers: Option<helpers::Helpers>,
    /// The MCP servers, when the workbench owns them.
    mcp: Option<mcp::Mcp>,
    /// The compactor: its commands, overlay and footer segment.
    compactor: Option<crate::compactor::module::CompactorModule>,
    /// Finished tasks and helper runs the user looked at or cleared in the dock.
    task_marks: tasks::Marks,
    /// The pending-wake line last sent to Pi's widget area (`None`: none shown).
    pending_line: Option<String>,
    /// Spinner frame of the pending-wake line.
    spinner: usize,
    /// Feeds the task that sends the pending-wake line to Pi.
    pending_tx: Option<tokio::sync::watch::Sender<Option<String>>>,
    /// Debug builds only: panic on the key `!` (`UNIPI_TUI_TEST_PANIC_ON_KEY=1`), so tests can
    /// prove the panic path restores the terminal and stops Pi.
    #[cfg(debug_assertions)]
    panic_on_key: bool,
}

impl App {
    fn new(
        emulator: Emulator,
        pty: Pty,
        options: &AppOptions,
        bridge: Option<bridge::Bridge>,
        tasks: Option<tasks::Tasks>,
    ) -> Self {
        let mut views = ViewStack::default();
        if !options.config_errors.is_empty() {
            views.push(Box::new(notice::NoticeView::new(
                "Start-up problems (defaults used where a file was bad)",
                options.config_errors.clone(),
            )));
        }
        App {
            emulator,
            pty,
            decoder: InputDecoder::new(),
            keymap: options.keymap.clone(),
            theme: options.theme.clone(),
            views,
            footer: footer::FooterState::new(
                &options.keymap,
                options.footer.clone(),
                &options.workspace,
            ),
            log_path: options.log_path.clone(),
            workspace: options.workspace.clone(),
            pane_area: Rect::default(),
            scroll_back: 0,
            focused: true,
            pi_exit: None,
            session: None,
            pty_closed: false,
            input_closed: false,
            needs_draw: true,
            outer: Vec::new(),
            bridge,
            tasks,
            helpers: options.helpers.clone().map(helpers::Helpers::new),
            mcp: options.mcp.clone().map(mcp::Mcp::new),
            compactor: options.compactor.clone(),
            task_marks: tasks::Marks::default(),
            pending_line: None,
            spinner: 0,
            pending_tx: None,
            #[cfg(debug_assertions)]
            panic_on_key: std::env::var_os("UNIPI_TUI_TEST_PANIC_ON_KEY").is_some(),
        }
    }

    /// Handles one event; [`App::stop`] says whether the session is over.
    fn update(&mut self, event: AppEvent) {
        match event {
            AppEvent::Input(bytes) => {
                for ev in self.decoder.feed(&bytes) {
                    self.on_input(ev);
                }
            }
            AppEvent::InputClosed => {
                tracing::info!("terminal input closed; stopping Pi");
                self.input_closed = true;
            }
            AppEvent::Pty(PtyEvent::Output(bytes)) => self.on_pty_output(&bytes),
            AppEvent::Pty(PtyEvent::Closed) => self.pty_closed = true,
            AppEvent::Bridge(event) => self.on_bridge(event),
            AppEvent::TasksChanged => {
                self.refresh_dock();
                self.sync_pending_line();
            }
            AppEvent::HelpersChanged => self.refresh_helpers(),
            AppEvent::McpChanged => self.refresh_mcp(),
            AppEvent::Pty(PtyEvent::Exited(exit)) => {
                tracing::info!("Pi exited: {exit:?}");
                self.pi_exit = Some(exit);
                self.footer.pi_exited(exit);
                self.request_draw();
            }
        }
    }

    /// Why the session should end, if it should.
    fn stop(&self) -> Option<Stop> {
        if self.pi_exit.is_some() && self.pty_closed {
            Some(Stop::PiExited)
        } else if self.input_closed {
            Some(Stop::InputClosed)
        } else {
            None
        }
    }

    fn on_bridge(&mut self, event: crate::bridge::BridgeEvent) {
        use crate::bridge::BridgeEvent;
        if let Some(link) = bridge::link_after(&event) {
            self.footer.data.bridge = link;
            self.request_draw();
        }
        match event {
            BridgeEvent::Connected {
                agent, pi_version, ..
            } => {
                tracing::info!("bridge: {agent} connected (Pi {pi_version})");
                // A new extension instance (after /reload) starts without our widget. A helper's
                // Pi connecting is not the main Pi reloading.
                if agent == crate::bridge::AgentId::main() {
                    self.pending_line = None;
                    self.sync_pending_line();
                }
            }
            BridgeEvent::Disconnected { agent, reason } => {
                tracing::info!("bridge: {agent} disconnected ({reason:?})");
            }
            BridgeEvent::Pi { agent, event } => {
                if agent == crate::bridge::AgentId::main() {
                    if matches!(event, crate::bridge::PiEvent::SessionStart(_)) {
                        self.session = bridge::session_of(&event);
                    }
                    bridge::apply_pi_event(&mut self.footer.data, &event);
                    self.sync_pending_line();
                    if self
                        .views
                        .find_mut::<crate::views::dock::DockView>()
                        .is_some()
                    {
                        // The dock's main-agent row shows the same model, tokens and cost.
                        self.refresh_helpers();
                    }
                    self.request_draw();
                }
            }
            BridgeEvent::Command {
                agent,
                name,
                args,
                reply,
            } => self.on_command(agent, &name, &args, reply),
            BridgeEvent::Fault { agent, message } => {
                tracing::warn!("bridge fault ({agent:?}): {message}");
            }
        }
    }

    fn request_draw(&mut self) {
        self.needs_draw = true;
    }

    fn on_pty_output(&mut self, bytes: &[u8]) {
        let before = self.emulator.history().total_pushed();
        self.emulator.process(bytes);
        let replies = self.emulator.take_replies();
        self.pty.write(replies);
        self.outer.extend(self.emulator.take_passthrough());
        for event in self.emulator.take_events() {
            match event {
                EmulatorEvent::ProgramStatus(status) => self.footer.set_program_status(status),
                EmulatorEvent::ProgramStatusCleared => self.footer.clear_program_status(),
                EmulatorEvent::Title(_) | EmulatorEvent::Bell => {}
            }
        }
        if self.emulator.screen().alternate_screen() {
            self.scroll_back = 0;
        } else if self.scroll_back > 0 {
            // Keep the viewed rows still while new output pushes rows into history.
            let pushed = self.emulator.history().total_pushed() - before;
            self.scroll_back = (self.scroll_back + usize::try_from(pushed).unwrap_or(usize::MAX))
                .min(self.emulator.history().len());
        }
        self.footer.pi_output_seen();
        self.request_draw();
    }

    fn on_input(&mut self, event: InputEvent) {
        match event {
            InputEvent::Event(Event::Key(key)) => self.on_key(key),
            InputEvent::Event(Event::Paste(text)) => {
                if self.views.is_empty() {
                    let bytes = encode_paste(&text, self.emulator.screen().bracketed_paste());
                    self.send_to_pi(bytes);
                } else if let Some(dock) = self.views.find_mut::<crate::views::dock::DockView>()
                    && dock.paste(&text)
                {
                    self.request_draw();
                }
            }
            InputEvent::Event(Event::Mouse(mouse)) => self.on_mouse(mouse),
            InputEvent::Event(Event::FocusGained) => self.on_focus(true),
            InputEvent::Event(Event::FocusLost) => self.on_focus(false),
            InputEvent::Event(Event::Resize(..)) => self.request_draw(),
            InputEvent::Reply(reply) => tracing::debug!("terminal reply ignored: {reply:?}"),
        }
    }

    fn on_focus(&mut self, focused: bool) {
        self.focused = focused;
        if self.emulator.focus_reporting() {
            self.pty.write(encode_focus(focused).to_vec());
        }
        if focused {
            self.footer.refresh_git_branch();
            self.request_draw();
        }
    }

    fn on_key(&mut self, key: KeyEvent) {
        #[cfg(debug_assertions)]
        if self.panic_on_key && key.code == crossterm::event::KeyCode::Char('!') {
            panic!("test panic requested with UNIPI_TUI_TEST_PANIC_ON_KEY");
        }
        if key.kind == KeyEventKind::Release {
            // Releases only matter to Pi (and only when it asked for event types).
            if self.views.is_empty() {
                self.send_key_to_pi(&key);
            }
            return;
        }
        if let Some(requests) = self.views.handle_key(&key) {
            for request in requests {
                self.on_view_request(request);
            }
            self.carry_out_helper_requests();
            self.carry_out_mcp_requests();
            // The dock shows fresh data (e.g. the output tail) as soon as it changes mode.
            self.refresh_dock();
            self.request_draw();
            return;
        }
        match self.keymap.feed(&key) {
            KeymapResult::Matched(action) => self.run_action(action, &key),
            KeymapResult::Pending => {}
            KeymapResult::NotFound(keys) => {
                for key in keys {
                    self.send_key_to_pi(&key);
                }
            }
        }
    }

    fn run_action(&mut self, action: Action, key: &KeyEvent) {
        let page = usize::from(self.pane_area.height.max(2) - 1);
        match action {
            Action::Help => {
                self.views.push(Box::new(HelpView::new(
                    &self.keymap,
                    self.log_path.display().to_string(),
                )));
            }
            Action::ScrollPageUp => self.scroll_or_forward(key, page as isize),
            Action::ScrollPageDown => self.scroll_or_forward(key, -(page as isize)),
            Action::ScrollLineUp => self.scroll_or_forward(key, 1),
            Action::ScrollLineDown => self.scroll_or_forward(key, -1),
            Action::ScrollLive => {
                if self.scroll_back > 0 {
                    self.scroll_back = 0;
                } else {
                    self.send_key_to_pi(key);
                }
            }
            Action::Dock => self.open_dock(None),
            Action::ClearTaskNotices => {
                self.on_view_request(crate::views::ViewRequest::ClearFinishedNotices);
                self.footer
                    .set_notice("Finished background-task notices cleared");
            }
        }
        self.request_draw();
    }

    /// The workbench scrolls its own history only when there is one to browse (Pi's inline
    /// mode); in fullscreen mode Pi owns scrolling, so the key goes to Pi.
    fn can_scroll(&self) -> bool {
        !self.emulator.screen().alternate_screen() && !self.emulator.history().is_empty()
    }

    fn scroll_or_forward(&mut self, key: &KeyEvent, delta: isize) {
        if self.can_scroll() {
            self.scroll_by(delta);
        } else {
            self.send_key_to_pi(key);
        }
    }

    fn scroll_by(&mut self, delta: isize) {
        let max = self.emulator.history().len();
        self.scroll_back = self.scroll_back.saturating_add_signed(delta).min(max);
        self.request_draw();
    }

    fn send_key_to_pi(&mut self, key: &KeyEvent) {
        if let Some(bytes) = encode_key(key, self.emulator.keyboard_modes()) {
            if self.scroll_back > 0 && key.kind != KeyEventKind::Release {
                // Typing returns to live, like a terminal does.
                self.scroll_back = 0;
                self.request_draw();
            }
            self.send_to_pi(bytes);
        }
    }

    fn send_to_pi(&mut self, bytes: Vec<u8>) {
        self.pty.write(bytes);
    }

    fn on_mouse(&mut self, mouse: MouseEvent) {
        let screen = self.emulator.screen();
        let pi_wants_mouse = screen.mouse_protocol_mode() != vt100::MouseProtocolMode::None;
        if pi_wants_mouse && self.views.is_empty() {
            if let Some(local) = translate_mouse(&mouse, self.pane_area)
                && let Some(bytes) = encode_mouse(
                    &local,
                    screen.mouse_protocol_mode(),
                    screen.mouse_protocol_encoding(),
                )
            {
                self.send_to_pi(bytes);
            }
            return;
        }
        match mouse.kind {
            MouseEventKind::ScrollUp if self.can_scroll() => self.scroll_by(WHEEL_LINES as isize),
            MouseEventKind::ScrollDown if self.can_scroll() => {
                self.scroll_by(-(WHEEL_LINES as isize));
            }
            _ => {}
        }
    }

    /// Draws the whole frame into `buf`: pane, badges, footer, views. Returns the cursor.
    fn render(&mut self, area: Rect, buf: &mut Buffer) -> Option<Position> {
        let layout = Layout::new(area, self.footer.enabled());
        self.pane_area = layout.pane;
        let history_len = self.emulator.history().len();
        self.scroll_back = self.scroll_back.min(history_len);
        let pane_cursor = render_pane(
            &PaneSource {
                screen: self.emulator.screen(),
                history: self.emulator.history(),
                scrolled_back: self.scroll_back,
            },
            layout.pane,
            buf,
        );
        if self.scroll_back > 0 {
            let model = unipi_widgets::scrollback::ScrollbackModel {
                lines_back: self.scroll_back,
                return_keys: self.footer.return_keys(),
            };
            unipi_widgets::scrollback::render(&model, &self.theme.widgets, layout.pane, buf);
        }
        let (running, waking) = self.footer.tasks;
        let extra = unipi_widgets::pending::tasks_segment(running, waking)
            .into_iter()
            .chain(unipi_widgets::agents::helpers_segment(&self.footer.helpers))
            .chain(self.mcp_segment())
            .chain(self.compactor_segment());
        let segments = self.footer.segments(self.scroll_back, extra);
        unipi_widgets::footer::render_segments(&segments, &self.theme.widgets, layout.footer, buf);
        if self.views.is_empty() {
            pane_cursor
        } else {
            self.views.render(layout.pane, buf, &self.theme.widgets)
        }
    }
}

/// Where things go on screen. The pane keeps the full width and every row but the footer, so its
/// size only changes when the terminal's does (no flapping); overlays draw over the pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub pane: Rect,
    pub footer: Rect,
}

impl Layout {
    pub fn new(area: Rect, footer: bool) -> Self {
        let footer_height = u16::from(footer && area.height > 1);
        Layout {
            pane: Rect::new(area.x, area.y, area.width, area.height - footer_height),
            footer: Rect::new(
                area.x,
                area.y + area.height - footer_height,
                area.width,
                footer_height,
            ),
        }
    }
}

/// Translates a mouse event into pane coordinates. Presses outside the pane are dropped; drags
/// and releases are clamped to the pane edge so a selection that leaves the pane still ends.
fn translate_mouse(mouse: &MouseEvent, pane: Rect) -> Option<MouseEvent> {
    if pane.width == 0 || pane.height == 0 {
        return None;
    }
    let inside = pane.contains(Position::new(mouse.column, mouse.row));
    let clamp = matches!(
        mouse.kind,
        MouseEventKind::Drag(_) | MouseEventKind::Up(_) | MouseEventKind::Moved
    );
    if !inside && !clamp {
        return None;
    }
    let column = mouse.column.clamp(pane.x, pane.x + pane.width - 1) - pane.x;
    let row = mouse.row.clamp(pane.y, pane.y + pane.height - 1) - pane.y;
    Some(MouseEvent {
        column,
        row,
        ..*mouse
    })
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyModifiers, MouseButton};

    use super::*;

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
        let l = Layout::new(Rect::new(0, 0, 120, 40), true);
        assert_eq!(l.pane, Rect::new(0, 0, 120, 39));
        assert_eq!(l.footer, Rect::new(0, 39, 120, 1));
        let tiny = Layout::new(Rect::new(0, 0, 10, 1), true);
        assert_eq!(tiny.pane.height, 1);
        assert_eq!(tiny.footer.height, 0);
        let off = Layout::new(Rect::new(0, 0, 120, 40), false);
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
}

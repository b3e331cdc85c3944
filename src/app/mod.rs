//! The application: one state ([`App`]), one channel of [`AppEvent`]s, one loop
//! (`event_loop.rs`). Every input — terminal bytes, Pi's output, bridge events, a capability's
//! change signal, a capability's request for the screen — arrives as a message; `App::update`
//! changes state and returns [`Effect`]s (bytes for Pi, bytes for the outer terminal) that the
//! loop carries out; frames are drawn by the loop, coalesced and capped, never per event. The app
//! does no file I/O, spawns no process and never waits: that is what lets a test build it without
//! a PTY or a Pi and drive it with keys.
//!
//! Key routing: the top modal view gets keys first; with no view open the keymap sees them (a
//! workbench chord runs an action); everything else is encoded in the mode Pi negotiated and
//! returned as an effect for Pi's PTY.
//!
//! The app holds the capabilities as a list (`Arc<dyn Capability>`) and knows none by name: it
//! draws their footer segments, gives their dock sources to the dock, and refreshes open views
//! when any of them signals a change.

pub mod bridge;
mod event_loop;
mod footer;
pub(crate) mod footer_commands;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use crossterm::event::{Event, KeyEvent, KeyEventKind, MouseEvent, MouseEventKind};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};

use crate::capability::{Capability, GlobalAction, Otherwise, Ui, UiReceiver, UiRequest};
use crate::config::keymap::{Action, Keymap, KeymapResult};
use crate::config::theme::Theme;
use crate::pane::emulator::{Emulator, EmulatorEvent};
use crate::pane::encode::{encode_focus, encode_key, encode_mouse, encode_paste};
use crate::pane::pty::{ChildExit, PtyEvent};
use crate::pane::render::{PaneSource, render_pane};
use crate::pi::PiCommand;
use crate::term::input::{InputDecoder, InputEvent};
use crate::views::dock::{DockSource, DockView, DockWords};
use crate::views::help::{CommandHelp, HelpView};
use crate::views::notice::notice_view;
use crate::views::{KeyOutcome, RefreshContext, ViewEffect, ViewStack};

pub use event_loop::run;

#[cfg(test)]
pub(crate) mod tests;

/// Everything the loop reacts to.
#[derive(Debug)]
pub(crate) enum AppEvent {
    /// Raw bytes from the outer terminal.
    Input(Vec<u8>),
    /// The outer terminal's input ended (the SSH connection dropped, or stdin closed).
    InputClosed,
    Pty(PtyEvent),
    Bridge(crate::bridge::BridgeEvent),
    /// A capability signalled that something it shows changed.
    Changed,
    /// A capability asked for the screen (a view, the dock, a notice).
    Ui(UiRequest),
}

/// What the loop carries out for the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Bytes for Pi's PTY: keys, paste, focus reports, replies to Pi's terminal queries.
    ToPi(Vec<u8>),
    /// Bytes for the outer terminal outside a frame (OSC 52, notifications, BEL, title).
    ToTerminal(Vec<u8>),
}

/// What the workbench needs to start.
pub struct AppOptions {
    pub pi: PiCommand,
    /// The user's arguments for Pi, unchanged.
    pub pi_args: Vec<OsString>,
    /// Extra environment for Pi (the demo's offline agent dir, …).
    pub pi_env: Vec<(OsString, OsString)>,
    pub keymap: Arc<Keymap>,
    pub theme: Theme,
    /// `footer.json`, followed while the app runs.
    pub footer: crate::config::live::LiveConfig<crate::config::footer::FooterConfig>,
    /// Problems with the user's config files, shown once the screen is up.
    pub config_errors: Vec<String>,
    /// A first box of (title, lines) shown under the problems (the demo says what it is and
    /// what to try); typing closes it and goes to Pi.
    pub welcome: Option<(String, Vec<String>)>,
    pub log_path: PathBuf,
    /// The directory the workbench was started in: Pi and every child run there.
    pub workspace: PathBuf,
    pub keyboard_enhancement: bool,
    /// Scrollback rows kept for Pi's inline output.
    pub scrollback: usize,
    /// The bridge to Pi's event stream, when it started (the workbench runs without it).
    pub bridge: Option<bridge::Started>,
    /// Every capability that started, in registration order.
    pub capabilities: Vec<Arc<dyn Capability>>,
    /// The screen handle the capabilities hold, and the app's end of it.
    pub ui: Ui,
    pub ui_requests: Option<UiReceiver>,
    /// Every `/unipi:*` command, for the help overlay.
    pub commands: Vec<CommandHelp>,
}

impl AppOptions {
    /// Pi's arguments and environment: the launcher's (the script when Pi runs through a chosen
    /// Node), then the bridge's `-e <extension>` and socket, then the user's and the demo's, and
    /// last what keeps the caches of compiled code Pi starts from private (checked now, for a Pi
    /// about to start in the workspace: [`crate::pi::compile_cache`]).
    pub fn pi_launch(
        &self,
        bridge: Option<&bridge::Started>,
    ) -> (Vec<OsString>, Vec<(OsString, OsString)>) {
        let mut args = self.pi.args.clone();
        let mut env = self.pi.env.clone();
        if let Some(started) = bridge {
            args.extend(started.pi_args.iter().cloned());
            env.extend(started.pi_env.iter().cloned());
        }
        args.extend(self.pi_args.iter().cloned());
        env.extend(self.pi_env.iter().cloned());
        let cache = crate::pi::compile_cache::env_for(&self.workspace, &env);
        env.extend(cache);
        (args, env)
    }
}

/// How the session ended.
#[derive(Debug)]
pub struct AppOutcome {
    /// The exit code to leave with: Pi's, or 128+N when a signal ended the workbench.
    pub code: i32,
    /// Pi's exit, when Pi ended by itself in the pane (a run without the pane has none: Pi
    /// reported its own end on the inherited stderr).
    pub pi_exit: Option<ChildExit>,
    /// Pi's last non-empty output lines (printed after the terminal is restored when Pi failed).
    pub last_lines: Vec<String>,
    /// Pi's inline output with colours, printed after the terminal is restored so the shell's
    /// scrollback holds what running Pi directly would have left there.
    pub transcript: Vec<u8>,
    /// The main Pi's session as it last reported it (for the resume command printed at exit).
    pub session: Option<crate::pi::resume::PiSession>,
}

impl AppOutcome {
    /// A run without the pane: Pi's exit code and nothing to print after it (Pi wrote its own
    /// output and errors to the inherited stdout and stderr).
    pub fn plain(code: i32) -> Self {
        AppOutcome {
            code,
            pi_exit: None,
            last_lines: Vec::new(),
            transcript: Vec::new(),
            session: None,
        }
    }
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
    decoder: InputDecoder,
    /// The app's own copy: it carries the state of a half-typed chord.
    keymap: Keymap,
    theme: Theme,
    views: ViewStack,
    footer: footer::FooterState,
    capabilities: Vec<Arc<dyn Capability>>,
    /// The handle capabilities hold; the app records the pane's width on it.
    ui: Ui,
    commands: Vec<CommandHelp>,
    log_path: PathBuf,
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
    /// A detachable session's new terminal, for the loop to set up and repaint.
    reattached: Option<crate::capability::NewTerminal>,
    /// What `update` returns to the loop.
    effects: Vec<Effect>,
    /// Debug builds only: panic on the key `!` (`UNIPI_TUI_TEST_PANIC_ON_KEY=1`), so tests can
    /// prove the panic path restores the terminal and stops Pi.
    #[cfg(debug_assertions)]
    panic_on_key: bool,
}

impl App {
    /// The app over `emulator` (Pi's screen, sized to the pane). No PTY, no Pi: what it wants
    /// done comes back from [`App::update`] as effects.
    pub fn new(emulator: Emulator, options: &AppOptions) -> Self {
        let mut views = ViewStack::default();
        if let Some((title, lines)) = &options.welcome {
            views.push(Box::new(notice_view(title, lines.clone(), &options.keymap)));
        }
        if !options.config_errors.is_empty() {
            views.push(Box::new(notice_view(
                "Start-up problems (defaults used where a file was bad)",
                options.config_errors.clone(),
                &options.keymap,
            )));
        }
        App {
            emulator,
            decoder: InputDecoder::new(),
            keymap: Keymap::clone(&options.keymap),
            theme: options.theme.clone(),
            views,
            footer: footer::FooterState::new(
                &options.keymap,
                options.footer.clone(),
                &options.workspace,
            ),
            capabilities: options.capabilities.clone(),
            ui: options.ui.clone(),
            commands: options.commands.clone(),
            log_path: options.log_path.clone(),
            pane_area: Rect::default(),
            scroll_back: 0,
            focused: true,
            pi_exit: None,
            session: None,
            pty_closed: false,
            input_closed: false,
            needs_draw: true,
            reattached: None,
            effects: Vec::new(),
            #[cfg(debug_assertions)]
            panic_on_key: std::env::var_os("UNIPI_TUI_TEST_PANIC_ON_KEY").is_some(),
        }
    }

    /// Handles one event and returns what the loop must carry out. [`App::stop`] says whether
    /// the session is over.
    pub(crate) fn update(&mut self, event: AppEvent) -> Vec<Effect> {
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
            AppEvent::Changed => self.refresh_views(),
            AppEvent::Ui(request) => self.on_ui(request),
            AppEvent::Pty(PtyEvent::Exited(exit)) => {
                tracing::info!("Pi exited: {exit:?}");
                self.pi_exit = Some(exit);
                self.footer.pi_exited(exit);
                self.request_draw();
            }
        }
        std::mem::take(&mut self.effects)
    }

    /// Effects of calls the loop made directly (a flushed Esc, an abandoned chord, a tick).
    fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// A tick while a view has something moving: it pulls fresh data (runtimes).
    fn on_tick(&mut self) {
        self.refresh_views();
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
            } => tracing::info!("bridge: {agent} connected (Pi {pi_version})"),
            BridgeEvent::Disconnected { agent, reason } => {
                tracing::info!("bridge: {agent} disconnected ({reason:?})");
            }
            BridgeEvent::Pi { agent, event } => {
                if agent == crate::bridge::AgentId::main() {
                    if matches!(event, crate::bridge::PiEvent::SessionStart(_)) {
                        self.session = bridge::session_of(&event);
                    }
                    if matches!(event, crate::bridge::PiEvent::AgentSettled { .. }) {
                        self.footer.refresh_config();
                    }
                    self.footer.on_pi_event(&event);
                    // The dock's main-agent row shows the same model, tokens and cost.
                    self.refresh_views();
                }
            }
            BridgeEvent::Fault { agent, message } => {
                tracing::warn!("bridge fault ({agent:?}): {message}");
            }
            // Pi shows the answer itself.
            BridgeEvent::CommandAnswered { .. } => {}
        }
    }

    /// A capability asked for the screen.
    fn on_ui(&mut self, request: UiRequest) {
        match request {
            UiRequest::Open(mut view) => {
                view.refresh(&RefreshContext {
                    pi: &self.footer.data,
                });
                self.views.push(view);
            }
            UiRequest::OpenDock { detail } => self.open_dock(detail.as_deref()),
            UiRequest::Notice(text) => {
                // A command may have just changed footer.json (`/unipi:footer off`, its
                // settings): a notice is when the user looks, so the footer follows at once.
                self.footer.refresh_config();
                self.footer.set_notice(&text);
                self.refresh_views();
            }
            UiRequest::Terminal(bytes) => self.effects.push(Effect::ToTerminal(bytes)),
            UiRequest::TerminalAttached(terminal) => {
                self.ui.update_screen(|state| {
                    state.attached = terminal.is_some();
                    // A new terminal sends focus reports only when its focus changes.
                    state.focused = true;
                });
                self.focused = true;
                self.reattached = terminal;
            }
        }
        self.request_draw();
    }

    /// The terminal a detachable session just attached, once (the loop sets it up).
    fn take_reattached(&mut self) -> Option<crate::capability::NewTerminal> {
        self.reattached.take()
    }

    /// Whether frames reach anyone: not while a detachable session has no terminal attached
    /// (an attach repaints everything anyway).
    fn has_terminal(&self) -> bool {
        self.ui.screen().attached
    }

    /// Something changed in a capability (or in Pi's state): open views pull fresh data.
    fn refresh_views(&mut self) {
        self.views.refresh(&RefreshContext {
            pi: &self.footer.data,
        });
        self.request_draw();
    }

    /// Every capability's dock source.
    fn dock_sources(&self) -> Vec<Arc<dyn DockSource>> {
        self.capabilities.iter().filter_map(|c| c.dock()).collect()
    }

    /// Opens the dock (on `detail`'s entry when given). It lists what the capabilities' dock
    /// sources list; with none running there is nothing to dock, and the notice names what the
    /// registrations would list ([`DockWords`]).
    fn open_dock(&mut self, detail: Option<&str>) {
        let sources = self.dock_sources();
        if sources.is_empty() {
            let notice = DockWords::nothing_to_dock(&crate::capability::dock_words());
            self.footer.set_notice(&notice);
            return;
        }
        let mut dock = DockView::open(
            sources,
            &self.keymap,
            &RefreshContext {
                pi: &self.footer.data,
            },
        );
        if let Some(id) = detail {
            dock.open_detail(id);
        }
        self.views.push(Box::new(dock));
    }

    /// How often the loop should tick: while an open view has something moving (runtimes in the
    /// dock), else never (idle is idle).
    fn tick_every(&self) -> Option<std::time::Duration> {
        self.views.tick_every()
    }

    fn request_draw(&mut self) {
        self.needs_draw = true;
    }

    fn on_pty_output(&mut self, bytes: &[u8]) {
        let before = self.emulator.history().total_pushed();
        self.emulator.process(bytes);
        let replies = self.emulator.take_replies();
        if !replies.is_empty() {
            self.effects.push(Effect::ToPi(replies));
        }
        let passthrough = self.emulator.take_passthrough();
        if !passthrough.is_empty() {
            self.effects.push(Effect::ToTerminal(passthrough));
        }
        for event in self.emulator.take_events() {
            match event {
                EmulatorEvent::ProgramStatus(status) => {
                    self.ui
                        .update_screen(|state| state.pi_status = Some(status.clone()));
                    self.footer.set_program_status(status);
                }
                EmulatorEvent::ProgramStatusCleared => {
                    self.ui.update_screen(|state| state.pi_status = None);
                    self.footer.clear_program_status();
                }
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
        if matches!(event, InputEvent::Event(Event::Key(_) | Event::Paste(_))) {
            self.ui
                .update_screen(|state| state.last_input = Some(std::time::Instant::now()));
        }
        match event {
            InputEvent::Event(Event::Key(key)) => self.on_key(key),
            InputEvent::Event(Event::Paste(text)) => {
                if self.views.is_empty() {
                    let bytes = encode_paste(&text, self.emulator.screen().bracketed_paste());
                    self.send_to_pi(bytes);
                } else if self.views.handle_paste(&text) {
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
        self.ui.update_screen(|state| state.focused = focused);
        if self.emulator.focus_reporting() {
            self.send_to_pi(encode_focus(focused).to_vec());
        }
        if focused {
            self.footer.refresh_git_branch();
            self.footer.refresh_config();
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
        match self.views.handle_key(&key) {
            KeyOutcome::NoView | KeyOutcome::Passed => {}
            KeyOutcome::Used(effect) => {
                if let Some(effect) = effect {
                    self.on_view_effect(effect);
                }
                self.request_draw();
                return;
            }
            KeyOutcome::Unhandled { view, close } => {
                // The help opens over any view, and so does a capability's action declared for
                // use under views (when a capability takes it); anything else a view does not
                // use is named.
                match self.keymap.bound_alone(&key) {
                    Some(Action::Help) => {
                        self.run_action(Action::Help, &key);
                        return;
                    }
                    Some(Action::Global(action))
                        if action.under_views && self.offer_action(action) =>
                    {
                        return;
                    }
                    _ => {}
                }
                let key = crate::config::keymap::Key::from_event(&key).display();
                self.footer
                    .set_notice(&format!("{key} does nothing in {view} · {close} closes it"));
                self.request_draw();
                return;
            }
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

    /// Offers a capability's `action` to the capabilities, by name: `true` when one took it.
    fn offer_action(&self, action: &GlobalAction) -> bool {
        self.capabilities.iter().any(|c| c.action(action.name))
    }

    /// What a view asked of the app.
    fn on_view_effect(&mut self, effect: ViewEffect) {
        match effect {
            ViewEffect::Copy(text) => self.effects.push(Effect::ToTerminal(osc52(&text))),
            ViewEffect::Notice(text) => self.footer.set_notice(&text),
            ViewEffect::Open(view) => self.views.push(view),
        }
    }

    fn run_action(&mut self, action: Action, key: &KeyEvent) {
        let page = usize::from(self.pane_area.height.max(2) - 1);
        match action {
            Action::Help => {
                let help = HelpView::new(
                    &self.keymap,
                    self.log_path.display().to_string(),
                    self.commands.clone(),
                )
                .at_table(self.views.top_key_table());
                self.views.push(Box::new(help));
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
            Action::Global(action) => self.run_global(action, key),
        }
        self.request_draw();
    }

    /// A capability's action: the capability that takes it answers; when none does, what its
    /// declaration says.
    fn run_global(&mut self, action: &GlobalAction, key: &KeyEvent) {
        if self.offer_action(action) {
            return;
        }
        match &action.otherwise {
            Otherwise::ToPi => self.send_key_to_pi(key),
            Otherwise::Notice(text) => self.footer.set_notice(text),
            Otherwise::Dock { request, notice } => {
                for source in self.dock_sources() {
                    if let Err(err) = source.request(request) {
                        tracing::info!("{}: {err}", action.name);
                    }
                }
                self.refresh_views();
                self.footer.set_notice(notice);
            }
        }
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
        self.effects.push(Effect::ToPi(bytes));
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
    pub fn render(&mut self, area: Rect, buf: &mut Buffer) -> Option<Position> {
        let segments = self.footer_segments();
        let rows = self.footer.rows(area.width, &segments);
        let layout = Layout::new(area, rows);
        self.pane_area = layout.pane;
        self.ui.set_pane_width(layout.pane.width);
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
        unipi_widgets::footer::render_footer(
            &segments,
            self.footer.settings(),
            &self.theme.widgets,
            layout.footer,
            buf,
        );
        if self.views.is_empty() {
            pane_cursor
        } else {
            self.views.render(layout.pane, buf, &self.theme.widgets)
        }
    }
}

impl App {
    /// The footer's segments this frame: the workbench's own and every capability's.
    fn footer_segments(&mut self) -> Vec<unipi_widgets::footer::Segment> {
        let extra: Vec<_> = self
            .capabilities
            .iter()
            .flat_map(|capability| capability.footer_segments())
            .collect();
        self.footer.segments(self.scroll_back, extra)
    }

    /// The footer's rows at `width` (what the pane leaves it).
    pub(crate) fn footer_rows(&mut self, width: u16) -> u16 {
        let segments = self.footer_segments();
        self.footer.rows(width, &segments)
    }
}

/// Where things go on screen. The pane keeps the full width and every row but the footer's, so
/// its size only changes when the terminal's does, or the footer takes its second row (kept for
/// as long as the width stays: no flapping); overlays draw over the pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub pane: Rect,
    pub footer: Rect,
}

impl Layout {
    /// `footer` rows for the footer (0 when it is off), as many as the area leaves beside one
    /// row of pane.
    pub fn new(area: Rect, footer: u16) -> Self {
        let footer_height = footer.min(area.height.saturating_sub(1));
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

/// OSC 52: put `text` on the outer terminal's clipboard (this is how copy works over SSH).
pub(crate) fn osc52(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    format!("\x1b]52;c;{encoded}\x07").into_bytes()
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

//! The loop: spawn Pi, take the terminal, and turn events into state changes and frames until Pi
//! exits or a signal ends the session; then stop Pi's process group and give the terminal back.
//!
//! Frames are requested (`App::needs_draw`) and drawn here at most once per [`FRAME`]; a burst of
//! output becomes one frame. While Pi is inside a synchronized update (`CSI ? 2026 h`) drawing
//! waits for the block to end, so the half-drawn screen is never shown. With nothing happening
//! the loop sleeps in `select!` with no timer armed: an idle workbench uses no CPU.
//!
//! [`run`] sets the session up and takes it down; [`Driver`] is the loop itself: one `select!`
//! whose arms each hand their event to one method, then the checks every turn makes (the app
//! asked to stop, an Esc or a frame is due).

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use crossterm::cursor::SetCursorStyle;
use nix::sys::signal::Signal;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use tokio::sync::mpsc;

use super::{App, AppEvent, AppOptions, AppOutcome, Effect, Layout, Stop};
use crate::bridge::BridgeEvent;
use crate::capability::{Capability, UiReceiver, UiRequest};
use crate::pane::emulator::{Emulator, HostInfo};
use crate::pane::pty::{Pty, PtyEvent, SpawnSpec};
use crate::sys::signals::{Signals, exit_code};
use crate::sys::sleep_until_some;
use crate::term::input::ESC_TIMEOUT;
use crate::term::tui;

/// Minimum time between frames (~60 fps).
const FRAME: Duration = Duration::from_millis(16);
/// How long a half-typed workbench chord waits for its next key.
const CHORD_TIMEOUT: Duration = Duration::from_secs(1);
/// How long Pi gets to exit after SIGHUP/SIGTERM before its group is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// Events handled before the loop looks at its timers again (keeps input responsive under a
/// flood of output).
const EVENT_BUDGET: usize = 256;
/// Pi's output taken in one burst at most, for the same reason: the PTY reader hands over up to
/// 64 KiB at a time under a flood, so counting chunks alone would let a burst run for 16 MiB. A
/// burst also ends when a frame is due, so a flood is drawn at the frame rate.
const OUTPUT_BUDGET: usize = 1 << 20;

type Screen = Terminal<CrosstermBackend<std::io::BufWriter<std::io::Stdout>>>;

/// Room for a whole frame in the screen's write buffer. ratatui flushes at the end of each frame,
/// so a frame is one `write` to the terminal instead of one per KiB (stdout's own buffer): on a
/// flood that redraws the whole pane every frame, thousands of system calls fewer, each of which
/// wakes the terminal's reader.
const FRAME_BUFFER: usize = 64 * 1024;

/// Runs the workbench until Pi exits. The terminal is restored before this returns, on every
/// path, including errors.
pub async fn run(mut options: AppOptions) -> Result<AppOutcome> {
    // Input and control events have their own channel, polled before Pi's output, so a key is
    // handled within one chunk of output even while Pi floods the pane. The output channel is
    // short on purpose: it is the backpressure that slows a flooding child down to our speed.
    let (tx, rx) = mpsc::channel::<AppEvent>(256);
    let (pty_tx, pty_rx) = mpsc::channel::<PtyEvent>(4);
    let (cols, rows) = crossterm::terminal::size().unwrap_or((80, 24));
    let layout = Layout::new(
        Rect::new(0, 0, cols, rows),
        u16::from(options.footer.get().enabled),
    );

    let emulator = new_emulator(&options, &layout);
    let started = options.bridge.take();
    let pty = spawn_pi(&options, started.as_ref(), &layout, pty_tx)?;
    let (link, bridge_rx) = match started {
        Some(started) => (Some(started.link), Some(started.events)),
        None => (None, None),
    };
    // Signals are registered before the terminal changes, so none slips through unhandled.
    let signals = Signals::listen(&[
        Signal::SIGHUP,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGWINCH,
    ])?;
    follow_capabilities(&options.capabilities, &tx);
    let inputs = Inputs {
        rx,
        pty_rx,
        bridge_rx,
        ui_rx: options.ui_requests.take(),
        signals,
    };
    let mut app = App::new(emulator, &options);
    let mut session = Session {
        pty,
        outer: Vec::new(),
    };
    let result = match tui::enter(tui::TerminalOptions {
        keyboard_enhancement: options.keyboard_enhancement,
    }) {
        Ok(protocol) => {
            tracing::info!("outer keyboard protocol: {protocol:?}");
            spawn_stdin_reader(tx.clone())?;
            drive(&mut app, &mut session, inputs).await
        }
        Err(err) => Err(err),
    };
    let restored = tui::restore();
    if app.pi_exit.is_none() {
        session.pty.terminate(STOP_GRACE).await;
    }
    // Every capability stops what it started (process groups, servers), the last first.
    crate::capability::shutdown_all(&options.capabilities).await;
    if let Some(link) = link {
        // Removes the socket and the runtime directory.
        link.host.shutdown().await;
    }
    let mut outcome = result?;
    match restored {
        Ok(()) => {}
        // Closed window, `tmux kill-pane`: there is no terminal to restore or to complain to.
        Err(err @ tui::RestoreError::TerminalGone { .. }) => tracing::info!("{err}"),
        Err(err) => return Err(err).context("failed to restore the terminal"),
    }
    outcome.last_lines = last_lines(&app.emulator, 12);
    outcome.transcript = transcript(&app.emulator);
    Ok(outcome)
}

/// Pi's terminal, the size of the pane.
fn new_emulator(options: &AppOptions, layout: &Layout) -> Emulator {
    Emulator::new(
        layout.pane.height,
        layout.pane.width,
        options.scrollback,
        options.theme.terminal.clone(),
        HostInfo {
            in_tmux: std::env::var_os("TMUX").is_some_and(|v| !v.is_empty()),
        },
    )
}

/// Spawns Pi in a PTY the size of the pane; its output and exit go to `pty_tx`.
fn spawn_pi(
    options: &AppOptions,
    bridge: Option<&super::bridge::Started>,
    layout: &Layout,
    pty_tx: mpsc::Sender<PtyEvent>,
) -> Result<Pty> {
    let (args, env) = options.pi_launch(bridge);
    let spec = SpawnSpec {
        program: options.pi.program.clone().into_os_string(),
        args,
        env,
        cwd: options.workspace.clone(),
        rows: layout.pane.height,
        cols: layout.pane.width,
    };
    let pty = Pty::spawn(spec, move |event| {
        // A closed channel means the loop is gone; the event no longer matters.
        let _ = pty_tx.blocking_send(event);
    })?;
    tui::set_child_process_group(pty.pid());
    tracing::info!(pid = pty.pid(), "Pi started: {:?}", options.pi);
    Ok(pty)
}

/// One forwarder per capability turns its change signal into `AppEvent::Changed` (the watch
/// coalesces bursts; no polling); and the panic hook kills what each one started.
fn follow_capabilities(capabilities: &[Arc<dyn Capability>], tx: &mpsc::Sender<AppEvent>) {
    for capability in capabilities {
        if let Some(mut changes) = capability.changes() {
            let tx = tx.clone();
            tokio::spawn(async move {
                while changes.changed().await.is_ok() {
                    if tx.send(AppEvent::Changed).await.is_err() {
                        break;
                    }
                }
            });
        }
        let capability = Arc::clone(capability);
        tui::register_panic_cleanup(Box::new(move || capability.kill_now()));
    }
}

/// What the loop owns beside the app: Pi's PTY and the bytes waiting for the outer terminal.
struct Session {
    pty: Pty,
    outer: Vec<u8>,
}

impl Session {
    /// Carries out the app's effects.
    fn run(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::ToPi(bytes) => self.pty.write(bytes),
                Effect::ToTerminal(bytes) => self.outer.extend(bytes),
            }
        }
    }

    /// Writes out-of-band bytes (clipboard, notifications, bell, title) to the outer terminal.
    fn flush_outer(&mut self) {
        if self.outer.is_empty() {
            return;
        }
        let mut out = std::io::stdout().lock();
        if let Err(err) = out.write_all(&self.outer).and_then(|()| out.flush()) {
            tracing::debug!(
                "failed to forward {} bytes to the terminal: {err}",
                self.outer.len()
            );
        }
        self.outer.clear();
    }
}

/// Where the loop's events come from.
struct Inputs {
    /// The terminal's input and the capabilities' change signals.
    rx: mpsc::Receiver<AppEvent>,
    /// Pi's output and exit.
    pty_rx: mpsc::Receiver<PtyEvent>,
    /// Pi's events through the bridge, when it started.
    bridge_rx: Option<mpsc::Receiver<BridgeEvent>>,
    /// The capabilities' requests for the screen.
    ui_rx: Option<UiReceiver>,
    signals: Signals,
}

/// Why the loop ended.
#[derive(Debug, Clone, Copy)]
enum Ending {
    /// Pi exited (or the channel its output comes on closed): the workbench exits as Pi did.
    PiExited,
    /// A signal (or the terminal going away, taken as SIGHUP): the exit code it means.
    Signal(i32),
}

/// The timers the loop arms this turn; each is `None` when nothing waits on it.
struct Timers {
    /// When the next frame may be drawn (a draw is due).
    draw_at: Option<Instant>,
    /// When a half-typed chord gives up.
    chord_at: Option<Instant>,
    /// When a lone Esc (or a half-read sequence) is taken as typed.
    esc_at: Option<Instant>,
    /// When the footer changes by itself (its notice goes, the clock turns a minute).
    notice_at: Option<Instant>,
    /// When an open view's next tick is due.
    tick_at: Option<Instant>,
}

/// Runs the loop on the terminal `tui::enter` took, until Pi exits or a signal ends it.
async fn drive(app: &mut App, session: &mut Session, inputs: Inputs) -> Result<AppOutcome> {
    let mut driver = Driver::new(app, session, inputs)?;
    let ending = driver.run().await?;
    driver.finish(ending).await
}

/// The loop's state beside the app: the screen it draws on and the clocks its timers count from.
struct Driver<'a> {
    app: &'a mut App,
    session: &'a mut Session,
    inputs: Inputs,
    terminal: Screen,
    cursor_style: Option<vt100::CursorStyle>,
    last_draw: Instant,
    last_input: Instant,
    last_tick: Instant,
}

impl<'a> Driver<'a> {
    /// Clears the screen and sets ratatui up on it.
    fn new(app: &'a mut App, session: &'a mut Session, inputs: Inputs) -> Result<Self> {
        let mut stdout = std::io::stdout();
        // Not `Terminal::clear`: it asks the terminal for the cursor position, and the reply
        // would go to our input reader instead.
        crossterm::execute!(
            stdout,
            crossterm::terminal::Clear(crossterm::terminal::ClearType::All)
        )
        .context("failed to clear the screen")?;
        let out = std::io::BufWriter::with_capacity(FRAME_BUFFER, stdout);
        let terminal =
            Terminal::new(CrosstermBackend::new(out)).context("failed to set up the screen")?;
        let now = Instant::now();
        Ok(Self {
            app,
            session,
            inputs,
            terminal,
            cursor_style: None,
            last_draw: now - FRAME,
            last_input: now,
            last_tick: now,
        })
    }

    /// Turns until something ends the session.
    async fn run(&mut self) -> Result<Ending> {
        loop {
            if let Some(ending) = self.next().await {
                return Ok(ending);
            }
            self.session.flush_outer();
            if let Some(ending) = self.stopped() {
                return Ok(ending);
            }
            // Deadlines are also checked here rather than only in their timer arms: under a
            // continuous flood of output the event arm is always ready and a biased select
            // would never reach them (a lone Esc would wait for the flood to end).
            if self.app.decoder.has_pending() && Instant::now() >= self.last_input + ESC_TIMEOUT {
                self.flush_esc();
            }
            if let Some(ending) = self.draw_if_due()? {
                return Ok(ending);
            }
        }
    }

    /// Waits for the next event or timer and hands it to its method.
    async fn next(&mut self) -> Option<Ending> {
        let timers = self.timers();
        let inputs = &mut self.inputs;
        tokio::select! {
            biased;
            signal = inputs.signals.next() => self.on_signal(signal),
            event = inputs.rx.recv() => self.on_event(event),
            Some(event) = next_or_pending(&mut inputs.bridge_rx, async |rx| rx.recv().await) => {
                self.update(AppEvent::Bridge(event));
                None
            }
            Some(request) = next_or_pending(&mut inputs.ui_rx, async |rx| rx.recv().await) => {
                self.on_ui_request(request);
                None
            }
            event = inputs.pty_rx.recv() => self.on_pty(event),
            () = sleep_until_some(timers.esc_at) => {
                self.flush_esc();
                None
            }
            () = sleep_until_some(timers.chord_at) => {
                self.cancel_chord();
                None
            }
            () = sleep_until_some(timers.tick_at) => {
                self.last_tick = Instant::now();
                self.app.on_tick();
                None
            }
            () = sleep_until_some(timers.notice_at) => {
                self.app.request_draw();
                None
            }
            () = sleep_until_some(timers.draw_at) => None,
        }
    }

    fn timers(&self) -> Timers {
        let app = &self.app;
        let now = Instant::now();
        // No frames while a detachable session has no terminal: nobody would see them.
        let draw_at = (app.needs_draw && app.has_terminal()).then(|| {
            match app.emulator.synchronized_update_deadline() {
                // Inside Pi's synchronized update: the end of the block arrives as output (which
                // recomputes this); if it never does, draw once the emulator gives up on it.
                Some(deadline) if now < deadline => deadline,
                _ => (self.last_draw + FRAME).max(now),
            }
        });
        Timers {
            draw_at,
            chord_at: app
                .keymap
                .is_pending()
                .then(|| self.last_input + CHORD_TIMEOUT),
            esc_at: app
                .decoder
                .has_pending()
                .then(|| self.last_input + ESC_TIMEOUT),
            notice_at: app.footer.notice_deadline(),
            // Ticks only while something moves (runtimes in an open dock).
            tick_at: app.tick_every().map(|every| self.last_tick + every),
        }
    }

    fn update(&mut self, event: AppEvent) {
        if matches!(event, AppEvent::Input(_)) {
            self.last_input = Instant::now();
        }
        self.session.run(self.app.update(event));
    }

    fn on_signal(&mut self, signal: Signal) -> Option<Ending> {
        match signal {
            Signal::SIGWINCH => {
                self.app.request_draw();
                None
            }
            ending => Some(Ending::Signal(exit_code(ending))),
        }
    }

    fn on_event(&mut self, event: Option<AppEvent>) -> Option<Ending> {
        let Some(event) = event else {
            return Some(Ending::PiExited);
        };
        self.update(event);
        None
    }

    fn on_ui_request(&mut self, request: UiRequest) {
        self.update(AppEvent::Ui(request));
        if let Some(new) = self.app.take_reattached() {
            reattach(&mut self.terminal, &new, &mut self.cursor_style);
        }
    }

    /// Pi's output: takes what else is ready in one go (one frame for a burst), but lets
    /// waiting input in between chunks.
    fn on_pty(&mut self, event: Option<PtyEvent>) -> Option<Ending> {
        let Some(event) = event else {
            return Some(Ending::PiExited);
        };
        let output_len = |event: &PtyEvent| match event {
            PtyEvent::Output(bytes) => bytes.len(),
            PtyEvent::Closed | PtyEvent::Exited(_) => 0,
        };
        let mut taken = output_len(&event);
        self.update(AppEvent::Pty(event));
        for _ in 0..EVENT_BUDGET {
            if self.app.stop().is_some() || taken >= OUTPUT_BUDGET || self.frame_due(Instant::now())
            {
                break;
            }
            if let Ok(event) = self.inputs.rx.try_recv() {
                self.update(event);
            }
            match self.inputs.pty_rx.try_recv() {
                Ok(event) => {
                    taken += output_len(&event);
                    self.update(AppEvent::Pty(event));
                }
                Err(_) => break,
            }
        }
        None
    }

    /// The Esc timeout passed: what the decoder holds was typed as it is (a lone Esc).
    fn flush_esc(&mut self) {
        for event in self.app.decoder.flush_pending() {
            self.app.on_input(event);
        }
        self.session.run(self.app.take_effects());
    }

    /// A half-typed chord that went nowhere: the keys were meant for Pi.
    fn cancel_chord(&mut self) {
        for key in self.app.keymap.cancel() {
            self.app.send_key_to_pi(&key);
        }
        self.session.run(self.app.take_effects());
    }

    /// The app asked to stop: Pi exited, or the terminal's input ended.
    fn stopped(&self) -> Option<Ending> {
        match self.app.stop()? {
            Stop::PiExited => Some(Ending::PiExited),
            // The terminal is gone (an SSH connection dropped): like SIGHUP.
            Stop::InputClosed => Some(Ending::Signal(exit_code(Signal::SIGHUP))),
        }
    }

    /// A frame is asked for, the last one is [`FRAME`] old, Pi is not inside a synchronized
    /// update and there is a terminal to draw on.
    fn frame_due(&self, now: Instant) -> bool {
        self.app.needs_draw
            && now >= self.last_draw + FRAME
            && !self.app.emulator.synchronized_update_at(now)
            && self.app.has_terminal()
    }

    /// Draws when a frame is due ([`Self::frame_due`]).
    fn draw_if_due(&mut self) -> Result<Option<Ending>> {
        if !self.frame_due(Instant::now()) {
            return Ok(None);
        }
        match draw(
            self.app,
            &mut self.session.pty,
            &mut self.terminal,
            &mut self.cursor_style,
        ) {
            Ok(()) => {
                self.last_draw = Instant::now();
                Ok(None)
            }
            // The terminal vanished before its SIGHUP arrived: the same ending.
            Err(err) if tui::error_means_terminal_gone(&err) => {
                tracing::info!("the terminal is gone: {err:#}");
                Ok(Some(Ending::Signal(exit_code(Signal::SIGHUP))))
            }
            Err(err) => Err(err),
        }
    }

    /// Gives the cursor back and, after a signal, stops Pi; the outcome is Pi's exit or the
    /// signal's code.
    async fn finish(mut self, ending: Ending) -> Result<AppOutcome> {
        // ratatui shows the cursor when `terminal` drops and prints to stderr if it cannot: on a
        // terminal that is gone, release it first so that write goes nowhere.
        if let Err(err) = self.terminal.show_cursor()
            && tui::terminal_gone(&err)
        {
            tui::release_gone_terminal();
        }
        let code = match ending {
            Ending::Signal(code) => {
                tracing::info!("stopping Pi (workbench exit code {code})");
                self.session.pty.terminate(STOP_GRACE).await;
                wait_for_exit(self.app, &mut self.inputs.pty_rx).await;
                code
            }
            Ending::PiExited => self.app.pi_exit.map_or(1, |exit| exit.shell_code()),
        };
        Ok(AppOutcome {
            code,
            pi_exit: self.app.pi_exit,
            last_lines: vec![],
            transcript: vec![],
            session: self.app.session.clone(),
        })
    }
}

/// A detachable session's terminal attached: after the marker (the session forwards from there
/// on), every terminal mode is set up for it and the next frame repaints everything.
fn reattach(
    terminal: &mut Screen,
    new: &crate::capability::NewTerminal,
    cursor_style: &mut Option<vt100::CursorStyle>,
) {
    let out = terminal.backend_mut();
    let set_up = out
        .write_all(&new.marker)
        .map_err(anyhow::Error::new)
        .and_then(|()| tui::reenter(out, new.keyboard));
    if let Err(err) = set_up {
        tracing::warn!("setting up the attached terminal: {err:#}");
    }
    // Both buffers blank: the next frame is drawn whole, on the screen just cleared.
    terminal.swap_buffers();
    terminal.swap_buffers();
    if let Err(err) = terminal.hide_cursor() {
        tracing::debug!("hiding the cursor: {err}");
    }
    *cursor_style = None;
    tracing::info!(
        "a terminal attached: modes set up ({:?}), repainting",
        new.keyboard
    );
}

/// The next message `recv` takes from `rx` (the bridge's events, the capabilities' requests for
/// the screen); pending forever when there is no channel, or once it closed (then dropped).
async fn next_or_pending<R, T>(
    rx: &mut Option<R>,
    recv: impl AsyncFnOnce(&mut R) -> Option<T>,
) -> Option<T> {
    match rx {
        Some(receiver) => match recv(receiver).await {
            Some(message) => Some(message),
            None => {
                *rx = None;
                std::future::pending().await
            }
        },
        None => std::future::pending().await,
    }
}

/// After stopping Pi: collect its exit (bounded wait; `terminate` already escalated to SIGKILL).
async fn wait_for_exit(app: &mut App, pty_rx: &mut mpsc::Receiver<PtyEvent>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    while app.pi_exit.is_none() {
        match tokio::time::timeout_at(deadline, pty_rx.recv()).await {
            Ok(Some(PtyEvent::Exited(exit))) => app.pi_exit = Some(exit),
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
    }
}

fn draw(
    app: &mut App,
    pty: &mut Pty,
    terminal: &mut Screen,
    cursor_style: &mut Option<vt100::CursorStyle>,
) -> Result<()> {
    let size = terminal
        .size()
        .context("failed to read the terminal size")?;
    let rows = app.footer_rows(size.width);
    let layout = Layout::new(Rect::new(0, 0, size.width, size.height), rows);
    // Resize the PTY and the parser together, from the size we are about to draw.
    let (rows, cols) = app.emulator.size();
    if (rows, cols) != (layout.pane.height, layout.pane.width) && layout.pane.height > 0 {
        app.emulator.resize(layout.pane.height, layout.pane.width);
        if let Err(err) = pty.resize(layout.pane.height, layout.pane.width) {
            tracing::warn!("{err:#}");
        }
    }
    terminal
        .draw(|frame| {
            let area = frame.area();
            if let Some(cursor) = app.render(area, frame.buffer_mut()) {
                frame.set_cursor_position(cursor);
            }
        })
        .context("failed to draw")?;
    app.needs_draw = false;
    let style = app.emulator.screen().cursor_style();
    if *cursor_style != Some(style) {
        *cursor_style = Some(style);
        let command = match style {
            vt100::CursorStyle::Default => SetCursorStyle::DefaultUserShape,
            vt100::CursorStyle::BlinkBlock => SetCursorStyle::BlinkingBlock,
            vt100::CursorStyle::SteadyBlock => SetCursorStyle::SteadyBlock,
            vt100::CursorStyle::BlinkUnderline => SetCursorStyle::BlinkingUnderScore,
            vt100::CursorStyle::SteadyUnderline => SetCursorStyle::SteadyUnderScore,
            vt100::CursorStyle::BlinkVerticalBar => SetCursorStyle::BlinkingBar,
            vt100::CursorStyle::SteadyVerticalBar => SetCursorStyle::SteadyBar,
        };
        if let Err(err) = crossterm::execute!(terminal.backend_mut(), command) {
            tracing::debug!("failed to set the cursor style: {err}");
        }
    }
    Ok(())
}

/// Reads the outer terminal's input on a dedicated thread (reads block) and hands raw bytes to
/// the loop; the decoder runs in the loop, where the ESC timeout is.
fn spawn_stdin_reader(tx: mpsc::Sender<AppEvent>) -> Result<()> {
    crate::term::stdin::spawn_reader("stdin-reader", tx, AppEvent::Input, |error| {
        if let Some(err) = error {
            tracing::info!("terminal input ended: {err}");
        }
        AppEvent::InputClosed
    })
}

/// What running Pi directly would have left in the terminal: its inline output (history, then the
/// main screen, with colours). Empty when Pi ended on the alternate screen (it did not get to
/// print its exit output, e.g. it crashed); then [`last_lines`] explains instead.
fn transcript(emulator: &Emulator) -> Vec<u8> {
    let screen = emulator.screen();
    if screen.alternate_screen() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for row in emulator.history().formatted_rows() {
        out.extend_from_slice(row.as_bytes());
        out.extend_from_slice(b"\x1b[m\n");
    }
    let visible = screen.contents_formatted_basic();
    out.extend_from_slice(visible.trim_end().as_bytes());
    if !out.is_empty() {
        out.extend_from_slice(b"\x1b[m\n");
    }
    out
}

/// Pi's last non-empty lines on the screen it was using.
fn last_lines(emulator: &Emulator, count: usize) -> Vec<String> {
    let contents = emulator.screen().contents();
    let lines: Vec<String> = contents
        .lines()
        .map(|l| l.trim_end().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(count)..].to_vec()
}

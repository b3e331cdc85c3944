//! The loop: spawn Pi, take the terminal, and turn events into state changes and frames until Pi
//! exits or a signal ends the session; then stop Pi's process group and give the terminal back.
//!
//! Frames are requested (`App::needs_draw`) and drawn here at most once per [`FRAME`]; a burst of
//! output becomes one frame. While Pi is inside a synchronized update (`CSI ? 2026 h`) drawing
//! waits for the block to end, so the half-drawn screen is never shown. With nothing happening
//! the loop sleeps in `select!` with no timer armed: an idle workbench uses no CPU.

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use crossterm::cursor::SetCursorStyle;
use nix::sys::signal::Signal;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use tokio::sync::mpsc;
use tokio::time::sleep_until;

use super::{App, AppEvent, AppOptions, AppOutcome, Effect, Layout, Stop};
use crate::pane::emulator::{Emulator, HostInfo};
use crate::pane::pty::{Pty, PtyEvent, SpawnSpec};
use crate::sys::signals::{Signals, exit_code};
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

/// Runs the workbench until Pi exits. The terminal is restored before this returns, on every
/// path, including errors.
pub async fn run(mut options: AppOptions) -> Result<AppOutcome> {
    // Input and control events have their own channel, polled before Pi's output, so a key is
    // handled within one chunk of output even while Pi floods the pane. The output channel is
    // short on purpose: it is the backpressure that slows a flooding child down to our speed.
    let (tx, rx) = mpsc::channel::<AppEvent>(256);
    let (pty_tx, pty_rx) = mpsc::channel::<PtyEvent>(4);
    let (cols, rows) = crossterm::terminal::size().unwrap_or((80, 24));
    let layout = Layout::new(Rect::new(0, 0, cols, rows), options.footer.get().enabled);

    let emulator = Emulator::new(
        layout.pane.height,
        layout.pane.width,
        options.scrollback,
        options.theme.terminal.clone(),
        HostInfo {
            in_tmux: std::env::var_os("TMUX").is_some_and(|v| !v.is_empty()),
        },
    );
    let started = options.bridge.take();
    let (args, env) = options.pi_launch(started.as_ref());
    let (link, bridge_rx) = match started {
        Some(started) => (Some(started.link), Some(started.events)),
        None => (None, None),
    };
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

    // Signals are registered before the terminal changes, so none slips through unhandled.
    let signals = Signals::listen(&[
        Signal::SIGHUP,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGWINCH,
    ])?;
    // One forwarder per capability turns its change signal into `AppEvent::Changed` (the watch
    // coalesces bursts; no polling).
    for capability in &options.capabilities {
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
        let capability = std::sync::Arc::clone(capability);
        tui::register_panic_cleanup(Box::new(move || capability.kill_now()));
    }
    let ui_rx = options.ui_requests.take();
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
            drive(
                &mut app,
                &mut session,
                rx,
                pty_rx,
                bridge_rx,
                ui_rx,
                signals,
            )
            .await
        }
        Err(err) => Err(err),
    };
    let restored = tui::restore();
    if app.pi_exit.is_none() {
        session.pty.terminate(STOP_GRACE).await;
    }
    // Every capability stops what it started (task groups, MCP servers), the last first.
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

async fn drive(
    app: &mut App,
    session: &mut Session,
    mut rx: mpsc::Receiver<AppEvent>,
    mut pty_rx: mpsc::Receiver<PtyEvent>,
    mut bridge_rx: Option<mpsc::Receiver<crate::bridge::BridgeEvent>>,
    mut ui_rx: Option<crate::capability::UiReceiver>,
    mut signals: Signals,
) -> Result<AppOutcome> {
    let mut stdout = std::io::stdout();
    // Not `Terminal::clear`: it asks the terminal for the cursor position, and the reply would
    // go to our input reader instead.
    crossterm::execute!(
        stdout,
        crossterm::terminal::Clear(crossterm::terminal::ClearType::All)
    )
    .context("failed to clear the screen")?;
    let mut terminal =
        Terminal::new(CrosstermBackend::new(stdout)).context("failed to set up the screen")?;
    let mut last_draw = Instant::now() - FRAME;
    let mut last_input = Instant::now();
    let mut last_tick = Instant::now();
    let mut cursor_style = None;
    let far = || Instant::now() + Duration::from_secs(3600);

    let signal_code = loop {
        let now = Instant::now();
        // No frames while a detachable session has no terminal: nobody would see them.
        let draw_at = (app.needs_draw && app.has_terminal()).then(|| {
            match app.emulator.synchronized_update_deadline() {
                // Inside Pi's synchronized update: the end of the block arrives as output (which
                // recomputes this); if it never does, draw once the emulator gives up on it.
                Some(deadline) if now < deadline => deadline,
                _ => (last_draw + FRAME).max(now),
            }
        });
        let chord_at = app.keymap.is_pending().then(|| last_input + CHORD_TIMEOUT);
        let esc_at = app.decoder.has_pending().then(|| last_input + ESC_TIMEOUT);
        let notice_at = app.footer.notice_deadline();
        // Ticks only while something moves (runtimes in an open dock).
        let tick_at = app.tick_every().map(|every| last_tick + every);

        tokio::select! {
            biased;
            signal = signals.next() => match signal {
                Signal::SIGWINCH => app.request_draw(),
                ending => break Some(exit_code(ending)),
            },
            event = rx.recv() => {
                let Some(event) = event else { break None };
                if matches!(event, AppEvent::Input(_)) {
                    last_input = Instant::now();
                }
                session.run(app.update(event));
            }
            Some(event) = next_or_pending(&mut bridge_rx, async |rx| rx.recv().await) => {
                session.run(app.update(AppEvent::Bridge(event)));
            }
            Some(request) = next_or_pending(&mut ui_rx, async |rx| rx.recv().await) => {
                session.run(app.update(AppEvent::Ui(request)));
                if let Some(new) = app.take_reattached() {
                    reattach(&mut terminal, &new, &mut cursor_style);
                }
            }
            event = pty_rx.recv() => {
                let Some(event) = event else { break None };
                session.run(app.update(AppEvent::Pty(event)));
                // Take what else is ready in one go (one frame for a burst), but let waiting
                // input in between chunks.
                for _ in 0..EVENT_BUDGET {
                    if app.stop().is_some() {
                        break;
                    }
                    if let Ok(event) = rx.try_recv() {
                        if matches!(event, AppEvent::Input(_)) {
                            last_input = Instant::now();
                        }
                        session.run(app.update(event));
                    }
                    match pty_rx.try_recv() {
                        Ok(event) => session.run(app.update(AppEvent::Pty(event))),
                        Err(_) => break,
                    }
                }
            }
            _ = sleep_until(esc_at.unwrap_or_else(far).into()), if esc_at.is_some() => {
                for event in app.decoder.flush_pending() {
                    app.on_input(event);
                }
                session.run(app.take_effects());
            }
            _ = sleep_until(chord_at.unwrap_or_else(far).into()), if chord_at.is_some() => {
                // A half-typed chord that went nowhere: the keys were meant for Pi.
                for key in app.keymap.cancel() {
                    app.send_key_to_pi(&key);
                }
                session.run(app.take_effects());
            }
            _ = sleep_until(tick_at.unwrap_or_else(far).into()), if tick_at.is_some() => {
                last_tick = Instant::now();
                app.on_tick();
            }
            _ = sleep_until(notice_at.unwrap_or_else(far).into()), if notice_at.is_some() => {
                app.request_draw();
            }
            _ = sleep_until(draw_at.unwrap_or_else(far).into()), if draw_at.is_some() => {}
        }
        session.flush_outer();
        match app.stop() {
            Some(Stop::PiExited) => break None,
            // The terminal is gone (an SSH connection dropped): like SIGHUP.
            Some(Stop::InputClosed) => break Some(exit_code(Signal::SIGHUP)),
            None => {}
        }
        // Deadlines are also checked here rather than only in their timer arms: under a
        // continuous flood of output the event arm is always ready and a biased select would
        // never reach them (a lone Esc would wait for the flood to end).
        let now = Instant::now();
        if app.decoder.has_pending() && now >= last_input + ESC_TIMEOUT {
            for event in app.decoder.flush_pending() {
                app.on_input(event);
            }
            session.run(app.take_effects());
        }
        if app.needs_draw
            && now >= last_draw + FRAME
            && !app.emulator.synchronized_update_at(now)
            && app.has_terminal()
        {
            match draw(app, &mut session.pty, &mut terminal, &mut cursor_style) {
                Ok(()) => last_draw = Instant::now(),
                // The terminal vanished before its SIGHUP arrived: the same ending.
                Err(err) if tui::error_means_terminal_gone(&err) => {
                    tracing::info!("the terminal is gone: {err:#}");
                    break Some(exit_code(Signal::SIGHUP));
                }
                Err(err) => return Err(err),
            }
        }
    };
    // ratatui shows the cursor when `terminal` drops and prints to stderr if it cannot: on a
    // terminal that is gone, release it first so that write goes nowhere.
    if let Err(err) = terminal.show_cursor()
        && tui::terminal_gone(&err)
    {
        tui::release_gone_terminal();
    }

    if let Some(code) = signal_code {
        tracing::info!("stopping Pi (workbench exit code {code})");
        session.pty.terminate(STOP_GRACE).await;
        wait_for_exit(app, &mut pty_rx).await;
        return Ok(AppOutcome {
            code,
            pi_exit: app.pi_exit,
            last_lines: vec![],
            transcript: vec![],
            session: app.session.clone(),
        });
    }
    let pi_exit = app.pi_exit;
    Ok(AppOutcome {
        code: pi_exit.map_or(1, |exit| exit.shell_code()),
        pi_exit,
        last_lines: vec![],
        transcript: vec![],
        session: app.session.clone(),
    })
}

/// A detachable session's terminal attached: after the marker (the session forwards from there
/// on), every terminal mode is set up for it and the next frame repaints everything.
fn reattach(
    terminal: &mut Terminal<CrosstermBackend<std::io::Stdout>>,
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
    terminal: &mut Terminal<CrosstermBackend<std::io::Stdout>>,
    cursor_style: &mut Option<vt100::CursorStyle>,
) -> Result<()> {
    let size = terminal
        .size()
        .context("failed to read the terminal size")?;
    let layout = Layout::new(
        Rect::new(0, 0, size.width, size.height),
        app.footer.enabled(),
    );
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

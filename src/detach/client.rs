//! The client side of a session: `unipi-tui attach NAME` (also what `--detachable` runs once
//! the session listens), `unipi-tui ls` and `unipi-tui kill NAME`.
//!
//! Attached, the client is a thin relay: the terminal's input goes to the session as it comes
//! (a reader thread: reads block), the session's output to the terminal (a writer thread, which
//! also follows the modes it sets, [`super::terminal`]), SIGWINCH becomes a resize. It ends when
//! the session lets it go (detach key, takeover, a terminal too slow), when the session ends
//! (with the workbench's exit code), on SIGHUP/SIGTERM/SIGINT/SIGQUIT or when the terminal is
//! gone (the session then sees the connection close: a detach) — and on every one of those paths
//! the terminal is restored before the client says why it left.

use std::io::IsTerminal as _;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use nix::sys::signal::Signal;
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use super::protocol::{
    Control, Frame, FrameError, FrameReader, Role, Status, VERSION, write_frame,
};
use super::registry::{Entry, Registry};
use super::terminal;
use crate::sys::signals::{Signals, exit_code};
use crate::term::tui;

/// How long `ls` waits for one session's answer.
const STATUS_WITHIN: Duration = Duration::from_secs(2);
/// How long `kill` waits for the session to end (its workbench gets a grace to stop first).
const KILL_WITHIN: Duration = Duration::from_secs(30);

/// `unipi-tui attach NAME`: the exit code is the workbench's when the session ends while
/// attached, 0 after a detach.
pub fn attach(name: &str) -> Result<i32> {
    let entry = Registry::open()?.find(name)?;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        bail!("attaching needs a terminal on stdin and stdout");
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("failed to start the async runtime")?;
    let outcome = runtime.block_on(relay(&entry));
    // Every path gives the terminal back before anything is said on it.
    terminal::restore();
    runtime.shutdown_timeout(Duration::from_millis(100));
    let outcome = outcome?;
    tracing::info!(session = name, "client leaves: {outcome:?}");
    if let Some(message) = &outcome.message {
        eprintln!("{message}");
    }
    Ok(outcome.code)
}

/// How an attached client ended.
#[derive(Debug)]
struct Outcome {
    code: i32,
    /// The line to show once the terminal is restored.
    message: Option<String>,
}

/// What the loop hears from the reader and writer threads.
enum Local {
    Input(Vec<u8>),
    /// The terminal's input ended, or its output failed: it is gone.
    TerminalGone(String),
}

async fn relay(entry: &Entry) -> Result<Outcome> {
    let stream = connect(entry).await?;
    let keyboard = terminal::enter()?;
    let (cols, rows) = crossterm::terminal::size().unwrap_or((80, 24));
    let (read, mut write) = stream.into_split();
    let hello = Frame::Control(Control::Hello {
        version: VERSION,
        role: Role::Attach {
            rows,
            cols,
            keyboard,
            term: std::env::var("TERM").ok(),
        },
    });
    write_frame(&mut write, &hello)
        .await
        .with_context(|| format!("cannot talk to session {}", entry.name))?;
    let mut frames = FrameReader::new(read, format!("session {}", entry.name));

    // To the session, in order, by a task of its own (a full socket never holds up output).
    let (to_session, mut outgoing) = mpsc::channel::<Frame>(64);
    let sender = tokio::spawn(async move {
        while let Some(frame) = outgoing.recv().await {
            if write_frame(&mut write, &frame).await.is_err() {
                break;
            }
        }
    });
    let (local_tx, mut local) = mpsc::channel::<Local>(64);
    spawn_input_reader(local_tx.clone())?;
    let attached = Attached {
        entry,
        to_session,
        screen: OutputWriter::spawn(local_tx)?,
        // Debug builds only: panic on `!` (`UNIPI_TUI_TEST_PANIC_ON_KEY=1`, as the workbench
        // does), so tests can prove the panic path gives the terminal back.
        #[cfg(debug_assertions)]
        panic_on_key: std::env::var_os("UNIPI_TUI_TEST_PANIC_ON_KEY").is_some(),
    };
    let mut signals = Signals::listen(&[
        Signal::SIGHUP,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGQUIT,
        Signal::SIGWINCH,
    ])?;

    let outcome = loop {
        let ended = tokio::select! {
            biased;
            signal = signals.next() => attached.signal(signal).await,
            Some(local) = local.recv() => attached.local(local).await,
            frame = frames.next() => attached.frame(frame).await,
        };
        if let Some(outcome) = ended {
            break outcome;
        }
    };
    // What the session sent before it let us go is on the terminal before it is restored.
    attached.screen.drain().await;
    sender.abort();
    Ok(outcome)
}

/// An attached client's ends of the relay; each handler says how the client ends, if it does.
struct Attached<'a> {
    entry: &'a Entry,
    to_session: mpsc::Sender<Frame>,
    screen: OutputWriter,
    #[cfg(debug_assertions)]
    panic_on_key: bool,
}

impl Attached<'_> {
    /// SIGWINCH resizes the session's terminal; the others end the client.
    async fn signal(&self, signal: Signal) -> Option<Outcome> {
        match signal {
            Signal::SIGWINCH => {
                if let Ok((cols, rows)) = crossterm::terminal::size() {
                    let _ = self
                        .to_session
                        .send(Frame::Control(Control::Resize { rows, cols }))
                        .await;
                }
                None
            }
            ending => {
                tracing::info!("{ending} ends the client");
                Some(Outcome {
                    code: exit_code(ending),
                    message: None,
                })
            }
        }
    }

    /// The terminal's input goes to the session; a terminal gone detaches.
    async fn local(&self, local: Local) -> Option<Outcome> {
        match local {
            Local::Input(bytes) => {
                #[cfg(debug_assertions)]
                if self.panic_on_key && bytes.contains(&b'!') {
                    panic!("test panic requested with UNIPI_TUI_TEST_PANIC_ON_KEY");
                }
                if self.to_session.send(Frame::Input(bytes)).await.is_err() {
                    return Some(lost(self.entry, "it stopped reading"));
                }
                None
            }
            Local::TerminalGone(why) => {
                tracing::info!("the terminal is gone ({why}); detaching");
                Some(Outcome {
                    code: 129,
                    message: None,
                })
            }
        }
    }

    /// The session's output goes to the terminal; its detach, exit or refusal ends the client.
    async fn frame(&self, frame: Result<Option<Frame>, FrameError>) -> Option<Outcome> {
        match frame {
            Ok(Some(Frame::Output(bytes))) => self.screen.write(bytes).await,
            Ok(Some(Frame::Control(Control::Detached { message, .. }))) => {
                return Some(Outcome {
                    code: 0,
                    message: Some(message),
                });
            }
            Ok(Some(Frame::Control(Control::Exit { code, message }))) => {
                return Some(Outcome { code, message });
            }
            Ok(Some(Frame::Control(Control::Refused { message }))) => {
                return Some(Outcome {
                    code: 1,
                    message: Some(format!("unipi-tui: {message}")),
                });
            }
            Ok(Some(other)) => tracing::debug!("ignored from the session: {other:?}"),
            Ok(None) => return Some(lost(self.entry, "it closed the connection")),
            Err(err) => return Some(lost(self.entry, &err.to_string())),
        }
        None
    }
}

fn lost(entry: &Entry, why: &str) -> Outcome {
    Outcome {
        code: 1,
        message: Some(format!(
            "unipi-tui: lost session {} ({why}); its log is {}",
            entry.name,
            super::daemon::log_path().display()
        )),
    }
}

/// Connects to a session's socket and checks that its owner is us.
async fn connect(entry: &Entry) -> Result<UnixStream> {
    let socket = entry.socket();
    let stream = UnixStream::connect(&socket).await.with_context(|| {
        format!(
            "cannot connect to session {} ({})",
            entry.name,
            socket.display()
        )
    })?;
    let me = nix::unistd::geteuid().as_raw();
    let owner = stream
        .peer_cred()
        .with_context(|| format!("cannot check who serves {}", socket.display()))?
        .uid();
    if owner != me {
        bail!(
            "{} is served by uid {owner}, not by you (uid {me}); not attaching",
            socket.display()
        );
    }
    Ok(stream)
}

/// Asks one session a single question (`ls`, `kill`) and returns its first answer.
async fn ask(entry: &Entry, role: Role, within: Duration) -> Result<Control> {
    let stream = connect(entry).await?;
    let (read, mut write) = stream.into_split();
    let hello = Frame::Control(Control::Hello {
        version: VERSION,
        role,
    });
    write_frame(&mut write, &hello)
        .await
        .with_context(|| format!("cannot talk to session {}", entry.name))?;
    let mut frames = FrameReader::new(read, format!("session {}", entry.name));
    match tokio::time::timeout(within, frames.next()).await {
        Ok(Ok(Some(Frame::Control(control)))) => Ok(control),
        Ok(Ok(Some(other))) => bail!("session {} answered {other:?}", entry.name),
        Ok(Ok(None)) => bail!(
            "session {} closed the connection without an answer",
            entry.name
        ),
        Ok(Err(err)) => Err(err.into()),
        Err(_) => bail!(
            "session {} did not answer within {within:?} (its process is pid {})",
            entry.name,
            entry.owner.pid
        ),
    }
}

/// One line of `ls`: a session's status, or why it could not be had.
pub struct Listed {
    pub name: String,
    pub status: Result<Status, String>,
}

/// Every live session's status (the dead ones' directories are removed on the way).
pub fn list(registry: &Registry) -> Result<Vec<Listed>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("failed to start the async runtime")?;
    Ok(runtime.block_on(async {
        let mut listed = Vec::new();
        for entry in registry.list() {
            let status = match ask(&entry, Role::Status, STATUS_WITHIN).await {
                Ok(Control::Status(status)) => Ok(status),
                Ok(other) => Err(format!("answered {other:?}")),
                Err(err) => Err(format!("{err:#}")),
            };
            listed.push(Listed {
                name: entry.name,
                status,
            });
        }
        listed
    }))
}

/// `unipi-tui kill NAME`: ends the session and waits until it has; returns the workbench's
/// exit code.
pub fn kill(name: &str) -> Result<i32> {
    let entry = Registry::open()?.find(name)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("failed to start the async runtime")?;
    match runtime.block_on(ask(&entry, Role::Kill, KILL_WITHIN))? {
        Control::Exit { code, .. } => Ok(code),
        Control::Refused { message } => bail!("{message}"),
        other => bail!("session {name} answered {other:?}"),
    }
}

/// `ls`'s table: name, Pi's state, attached, started, session pid, working directory; a
/// session that did not answer gets its name and why.
pub(crate) fn format_list(listed: &[Listed], now_ms: u64) -> String {
    if listed.is_empty() {
        return "No sessions. Start one with `unipi-tui --detachable NAME`.\n".to_owned();
    }
    let header = ["NAME", "PI", "ATTACHED", "STARTED", "PID", "DIRECTORY"].map(String::from);
    let rows: Vec<Result<[String; 6], (String, String)>> = std::iter::once(Ok(header))
        .chain(listed.iter().map(|item| match &item.status {
            Ok(status) => Ok([
                item.name.clone(),
                status.pi.label().to_owned(),
                if status.attached { "yes" } else { "no" }.to_owned(),
                format!(
                    "{} ({} ago)",
                    crate::sys::utc_clock(status.started_ms),
                    age(now_ms.saturating_sub(status.started_ms))
                ),
                status.pid.to_string(),
                status.cwd.clone(),
            ]),
            Err(why) => Err((item.name.clone(), format!("not answering: {why}"))),
        }))
        .collect();
    let width = |col: usize| {
        rows.iter()
            .map(|row| match row {
                Ok(cells) => cells[col].chars().count(),
                Err((name, _)) if col == 0 => name.chars().count(),
                Err(_) => 0,
            })
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..5).map(width).collect();
    let pad = |cell: &str, col: usize| {
        format!(
            "{cell}{}",
            " ".repeat(widths[col] - cell.chars().count() + 2)
        )
    };
    let mut out = String::new();
    for row in &rows {
        let line = match row {
            Ok(cells) => {
                let mut line: String = (0..5).map(|col| pad(&cells[col], col)).collect();
                line.push_str(&cells[5]);
                line
            }
            Err((name, why)) => format!("{}{why}", pad(name, 0)),
        };
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `45s`, `12m`, `3h05m`, `2d04h`.
fn age(ms: u64) -> String {
    let secs = ms / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86_400 => format!("{}h{:02}m", secs / 3600, secs / 60 % 60),
        _ => format!("{}d{:02}h", secs / 86_400, secs / 3600 % 24),
    }
}

/// The terminal's input, read on a thread of its own (reads block).
fn spawn_input_reader(tx: mpsc::Sender<Local>) -> Result<()> {
    crate::term::stdin::spawn_reader("attach-input", tx, Local::Input, |error| {
        Local::TerminalGone(match error {
            None => "its input ended".to_owned(),
            Some(err) => format!("reading it: {err}"),
        })
    })
}

/// Output for the terminal, written on a thread of its own: a terminal that blocks (or is gone)
/// never keeps the loop from its signals.
struct OutputWriter {
    tx: mpsc::Sender<Chunk>,
}

enum Chunk {
    Bytes(Vec<u8>),
    /// Everything before it is written.
    Drained(tokio::sync::oneshot::Sender<()>),
}

impl OutputWriter {
    fn spawn(local: mpsc::Sender<Local>) -> Result<OutputWriter> {
        let (tx, mut rx) = mpsc::channel::<Chunk>(16);
        std::thread::Builder::new()
            .name("attach-output".into())
            .spawn(move || {
                let mut out = std::io::stdout();
                let mut gone = false;
                while let Some(chunk) = rx.blocking_recv() {
                    match chunk {
                        Chunk::Bytes(bytes) if !gone => {
                            if let Err(err) = terminal::write_output(&mut out, &bytes) {
                                gone = true;
                                if tui::terminal_gone(&err) {
                                    tui::release_gone_terminal();
                                }
                                let _ = local.blocking_send(Local::TerminalGone(format!(
                                    "writing to it: {err}"
                                )));
                            }
                        }
                        Chunk::Bytes(_) => {}
                        Chunk::Drained(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            })
            .context("failed to start the output thread")?;
        Ok(OutputWriter { tx })
    }

    /// Queues output; waits while the terminal is behind.
    async fn write(&self, bytes: Vec<u8>) {
        let _ = self.tx.send(Chunk::Bytes(bytes)).await;
    }

    /// Waits (bounded) until everything queued is on the terminal.
    async fn drain(&self) {
        let (done, written) = tokio::sync::oneshot::channel();
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            if self.tx.send(Chunk::Drained(done)).await.is_ok() {
                let _ = written.await;
            }
        })
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detach::protocol::PiState;

    #[test]
    fn ls_shows_name_state_attachment_start_pid_and_folder() {
        let status = |name: &str, pi, attached| Status {
            name: name.to_owned(),
            pid: 4242,
            cwd: format!("/home/me/{name}"),
            started_ms: 3_600_000,
            pi,
            attached,
        };
        let listed = vec![
            Listed {
                name: "api".into(),
                status: Ok(status("api", PiState::Working, true)),
            },
            Listed {
                name: "docs-site".into(),
                status: Ok(status("docs-site", PiState::Waiting, false)),
            },
            Listed {
                name: "stuck".into(),
                status: Err("session stuck did not answer within 2s".into()),
            },
        ];
        assert_eq!(
            format_list(&listed, 3_600_000 + 3_723_000),
            "\
NAME       PI                 ATTACHED  STARTED                   PID   DIRECTORY
api        working            yes       01:00:00 UTC (1h02m ago)  4242  /home/me/api
docs-site  waiting for input  no        01:00:00 UTC (1h02m ago)  4242  /home/me/docs-site
stuck      not answering: session stuck did not answer within 2s
"
        );
        assert_eq!(
            format_list(&[], 0),
            "No sessions. Start one with `unipi-tui --detachable NAME`.\n"
        );
        assert_eq!(age(59_000), "59s");
        assert_eq!(age(86_400_000 + 7_200_000), "1d02h");
    }
}

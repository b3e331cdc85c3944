//! The session process: `unipi-tui __session NAME LOG_LEVEL PROGRAM [ARGS…]`, started by
//! `unipi-tui --detachable NAME` ([`super::launch`]).
//!
//! It leaves the user's terminal session at once (`setsid`: no controlling terminal, so the
//! hangup of an SSH connection reaches nothing here; a stray SIGHUP is caught and ignored), has
//! `/dev/null` as stdin and its own log file (`unipi-tui-session.log`, also its stderr), and
//! starts its own watchdog, so whatever it started dies with it even after `kill -9`. It then
//! publishes the session in the registry (socket listening), says `ready` on its stdout — a
//! pipe the launcher reads, pointed at `/dev/null` right after — and serves
//! ([`super::server::serve`]) until its program exits: the ordinary workbench, told it runs in
//! a session by [`SESSION_ENV`]. The session's directory is removed when it ends.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, Result};
use tokio::signal::unix::{SignalKind, signal};

use super::protocol::{PiState, Status};
use super::registry::{Info, Published, Registry};
use super::server::{FirstAttach, Program, ServerOptions, serve};
use crate::pane::pty::SpawnSpec;

/// The hidden subcommand that runs the session process.
pub const SUBCOMMAND: &str = "__session";
/// Set for the workbench a session runs: the session's socket (its control link).
pub(crate) const SESSION_ENV: &str = "UNIPI_TUI_SESSION";
/// Set beside [`SESSION_ENV`]: the session process's pid. Only its direct child is the
/// session's workbench; anything it starts inherits the variables and must not take them.
pub(crate) const SESSION_PID_ENV: &str = "UNIPI_TUI_SESSION_PID";
/// Set beside [`SESSION_ENV`]: the session's name.
pub(crate) const SESSION_NAME_ENV: &str = "UNIPI_TUI_SESSION_NAME";
/// What the session process prints on its stdout once its socket listens.
pub const READY: &str = "ready";
/// Nobody attached this soon after start: the launcher died; the session ends.
const FIRST_ATTACH_WITHIN: Duration = Duration::from_secs(30);

/// The session processes' log file, beside the workbench's.
pub fn log_path() -> PathBuf {
    crate::cli::log_file_path().with_file_name("unipi-tui-session.log")
}

/// The session process's `main`.
pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(2).collect();
    let [name, level, program, rest @ ..] = args.as_slice() else {
        eprintln!("unipi-tui: {SUBCOMMAND} needs NAME LOG_LEVEL PROGRAM [ARGS…]");
        return ExitCode::from(2);
    };
    // Fails only for a group leader, which a freshly spawned child is not.
    let _ = nix::unistd::setsid();
    let name = name.to_string_lossy().into_owned();
    let log = log_path();
    let _log_guard = crate::cli::init_logging(&log, &level.to_string_lossy());
    tracing::info!(
        session = name,
        version = env!("CARGO_PKG_VERSION"),
        "session process starting"
    );
    if let Err(err) = crate::sys::watchdog::start(&log) {
        tracing::warn!("{err:#}; what the session started may outlive a crash of it");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            say(&format!("error: cannot start the async runtime: {err}"));
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(run(name.clone(), program.clone(), rest.to_vec()));
    runtime.shutdown_timeout(Duration::from_millis(200));
    match result {
        Ok(code) => {
            tracing::info!(session = name, code, "session process exiting");
            ExitCode::from(u8::try_from(code.clamp(0, 255)).unwrap_or(1))
        }
        Err(err) => {
            // Before `ready` the launcher shows this; after it, only the log has it.
            say(&format!("error: {err:#}"));
            tracing::error!(session = name, "session process exiting: {err:#}");
            ExitCode::from(1)
        }
    }
}

async fn run(name: String, program: OsString, args: Vec<OsString>) -> Result<i32> {
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let started_ms = crate::sys::now_ms();
    let registry = Registry::open()?;
    let info = Info {
        name: name.clone(),
        cwd: cwd.display().to_string(),
        started_ms,
        command: std::iter::once(&program)
            .chain(&args)
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect(),
    };
    let mut published = registry.publish(&info)?;
    let listener = listen(&mut published)?;
    let socket = published.socket();
    ignore_hangups()?;
    let mut sigterm = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut sigint = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    say(READY);
    release_stdout();
    tracing::info!(session = name, "listening on {}", socket.display());

    let session_pid = std::process::id();
    let program = session_program(&name, &cwd, socket, session_pid, program, args);
    let options = ServerOptions {
        status: Status {
            name,
            pid: session_pid,
            cwd: cwd.display().to_string(),
            started_ms,
            pi: PiState::Starting,
            attached: false,
        },
        listener,
        program,
        first_attach_within: FIRST_ATTACH_WITHIN,
    };
    let terminate = async move {
        tokio::select! {
            _ = sigterm.recv() => {}
            _ = sigint.recv() => {}
        }
    };
    let code = serve(options, terminate).await;
    // Removes the socket and the session's directory.
    drop(published);
    code
}

/// The session's socket, taken from its registry entry, for the async runtime.
fn listen(published: &mut Published) -> Result<tokio::net::UnixListener> {
    let listener = published
        .take_listener()
        .context("the session's socket is gone")?;
    listener
        .set_nonblocking(true)
        .context("cannot make the session's socket non-blocking")?;
    tokio::net::UnixListener::from_std(listener).context("cannot listen on the session's socket")
}

/// The session outlives terminals: SIGHUP is logged and ignored.
fn ignore_hangups() -> Result<()> {
    let mut hangup = signal(SignalKind::hangup()).context("cannot handle SIGHUP")?;
    tokio::spawn(async move {
        while hangup.recv().await.is_some() {
            tracing::info!("SIGHUP ignored: the session outlives terminals");
        }
    });
    Ok(())
}

/// What runs in the session's terminal once the first terminal attached: the workbench, told
/// its session (socket, pid, name) and the attaching terminal's `TERM` and size.
fn session_program(
    name: &str,
    cwd: &Path,
    socket: PathBuf,
    session_pid: u32,
    program: OsString,
    args: Vec<OsString>,
) -> Program {
    let spawn_name = name.to_owned();
    let spawn_cwd = cwd.to_path_buf();
    Box::new(move |first: &FirstAttach| SpawnSpec {
        program,
        args,
        env: vec![
            (SESSION_ENV.into(), socket.into_os_string()),
            (SESSION_PID_ENV.into(), session_pid.to_string().into()),
            (SESSION_NAME_ENV.into(), spawn_name.into()),
            (
                "TERM".into(),
                first
                    .term
                    .clone()
                    .unwrap_or_else(|| "xterm-256color".to_owned())
                    .into(),
            ),
        ],
        cwd: spawn_cwd,
        rows: first.rows,
        cols: first.cols,
    })
}

/// One line for the launcher (ignored when it is gone).
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

/// After `ready` stdout is the launcher's pipe no longer: `/dev/null` takes its place.
fn release_stdout() {
    let released = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .map_err(anyhow::Error::new)
        .and_then(|null| Ok(nix::unistd::dup2_stdout(&null)?));
    if let Err(err) = released {
        tracing::warn!("stdout still goes to the launcher's pipe: {err:#}");
    }
}

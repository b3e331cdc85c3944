//! Runs without the pane: Pi's non-interactive modes and runs without a terminal.
//!
//! `unipi-tui` must work wherever `pi` works, including in scripts and pipes, where there is no
//! terminal to draw on. [`mode::decide`] picks the way from Pi's arguments and the terminal;
//! this module runs the two pane-less ways:
//!
//! - [`run_direct`]: `--help`, `--version`, `--list-models`, `--export` and Pi's subcommands —
//!   Pi alone, nothing of the workbench around it.
//! - [`run`]: `-p`, `--mode json|rpc`, or no terminal — Pi as a plain child with the bridge
//!   extension loaded and the same modules as in the workbench behind it (background tasks,
//!   helpers, delegates, MCP, compactor and recall), so a script gets the workbench's tools. Its
//!   stdout is exactly Pi's: nothing of ours is printed there, logs go to the log file.
//!
//! Both inherit stdin, stdout and stderr, forward signals to Pi's process group and end with
//! Pi's exit code.

mod child;
pub mod mode;

use anyhow::Result;
use tokio::sync::mpsc;

use crate::app::{AppOptions, AppOutcome};
use crate::bridge::BridgeEvent;

pub use child::exit_code;
pub use mode::{RunMode, decide};

/// Runs Pi alone with the launcher's and the user's arguments (the demo's too) and returns its
/// exit code.
pub async fn run_direct(options: &AppOptions) -> Result<AppOutcome> {
    let (args, env) = options.pi_launch(None);
    let code = child::run(&options.pi.program, &args, &env).await?;
    Ok(AppOutcome::plain(code))
}

/// Runs Pi without a pane, connected to the workbench's capabilities through the bridge (when
/// it started), and shuts them down once Pi has exited.
pub async fn run(mut options: AppOptions) -> Result<AppOutcome> {
    for error in &options.config_errors {
        // Nothing of ours goes to the terminal in a headless run: Pi's output is the output.
        tracing::warn!("start-up problem: {error}");
    }
    let started = options.bridge.take();
    let (args, env) = options.pi_launch(started.as_ref());
    let (host, logging) = match started {
        Some(started) => (
            Some(started.link.host),
            Some(tokio::spawn(log_events(started.events))),
        ),
        None => (None, None),
    };
    let code = child::run(&options.pi.program, &args, &env).await;
    // Every capability stops what it started (task groups, MCP servers), the last first.
    crate::capability::shutdown_all(&options.capabilities).await;
    if let Some(host) = host {
        // Removes the socket and the runtime directory; the event channel closes with it.
        host.shutdown().await;
    }
    if let Some(logging) = logging {
        logging.abort();
    }
    Ok(AppOutcome::plain(code?))
}

/// Takes the bridge's events, which the pane would show, into the log. Commands need nothing
/// here: they run in their modules, which answer in words when there is no screen.
async fn log_events(mut events: mpsc::Receiver<BridgeEvent>) {
    while let Some(event) = events.recv().await {
        match event {
            BridgeEvent::Fault { agent, message } => {
                tracing::warn!("bridge fault ({agent:?}): {message}");
            }
            BridgeEvent::Connected {
                agent, pi_version, ..
            } => tracing::info!("bridge: {agent} connected (Pi {pi_version})"),
            BridgeEvent::Disconnected { agent, reason } => {
                tracing::info!("bridge: {agent} disconnected ({reason:?})");
            }
            BridgeEvent::Pi { .. } => {}
        }
    }
}

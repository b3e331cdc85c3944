//! Runs without the pane: Pi's non-interactive modes and runs without a terminal.
//!
//! `unipi-tui` must work wherever `pi` works, including in scripts and pipes, where there is no
//! terminal to draw on. [`mode::decide`] picks the way from Pi's arguments and the terminal;
//! this module runs the two pane-less ways:
//!
//! - [`run_direct`]: `--help`, `--version`, `--list-models`, `--export` and Pi's subcommands — Pi
//!   alone, nothing of the workbench around it.
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
use crate::bridge::{AgentId, BridgeEvent, CommandReply};

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
/// it started), and shuts them down once Pi has exited. Pi shows no notices here, so what a
/// `/unipi:*` command answered goes to stderr (stdout stays Pi's), and a run in which one was
/// refused ends non-zero even where Pi exits 0.
pub async fn run(mut options: AppOptions) -> Result<AppOutcome> {
    for error in &options.config_errors {
        // Nothing of ours goes to the terminal in a headless run: Pi's output is the output.
        tracing::warn!("start-up problem: {error}");
    }
    let started = options.bridge.take();
    let (args, env) = options.pi_launch(started.as_ref());
    let (host, mut events) = match started {
        Some(started) => (Some(started.link.host), Some(started.events)),
        None => (None, None),
    };
    let mut commands = Commands::default();
    let pi = child::run(&options.pi.program, &args, &env);
    tokio::pin!(pi);
    let code = loop {
        tokio::select! {
            code = &mut pi => break code,
            Some(event) = next_event(&mut events) => take_event(event, &mut commands),
        }
    };
    // A command's answer is queued before Pi gets it: whatever Pi acted on is here by now.
    if let Some(events) = events.as_mut() {
        while let Ok(event) = events.try_recv() {
            take_event(event, &mut commands);
        }
    }
    // Every capability stops what it started (task groups, MCP servers), the last first.
    crate::capability::shutdown_all(&options.capabilities).await;
    if let Some(host) = host {
        // Removes the socket and the runtime directory; the event channel closes with it.
        host.shutdown().await;
    }
    let code = code?;
    Ok(AppOutcome::plain(commands.exit_code(code)))
}

/// The `/unipi:*` commands of a headless run that were refused.
#[derive(Debug, Default)]
struct Commands {
    refused: Vec<String>,
    /// The main Pi has a UI that shows the answers itself (RPC mode sends them to its client).
    pi_shows_them: bool,
}

impl Commands {
    /// Pi's `code`, or 1 where Pi succeeded but a command was refused.
    fn exit_code(&self, code: i32) -> i32 {
        if code == 0 && !self.refused.is_empty() {
            tracing::info!("exit code 1: refused {}", self.refused.join(", "));
            1
        } else {
            code
        }
    }
}

async fn next_event(events: &mut Option<mpsc::Receiver<BridgeEvent>>) -> Option<BridgeEvent> {
    match events {
        Some(events) => events.recv().await,
        None => std::future::pending().await,
    }
}

/// Takes the bridge's events, which the pane would show, into the log, and the main Pi's
/// command answers to stderr (Pi shows no notices without a UI).
fn take_event(event: BridgeEvent, commands: &mut Commands) {
    match event {
        BridgeEvent::Fault { agent, message } => {
            tracing::warn!("bridge fault ({agent:?}): {message}");
        }
        BridgeEvent::Connected {
            agent,
            pi_version,
            capabilities,
            ..
        } => {
            tracing::info!("bridge: {agent} connected (Pi {pi_version})");
            if agent == AgentId::main() {
                commands.pi_shows_them = capabilities.has_ui == Some(true);
            }
        }
        BridgeEvent::Disconnected { agent, reason } => {
            tracing::info!("bridge: {agent} disconnected ({reason:?})");
        }
        BridgeEvent::CommandAnswered { agent, name, reply }
            if agent == AgentId::main() && !commands.pi_shows_them =>
        {
            tracing::info!("/{name} answered {reply:?}");
            if let Some(text) = command_text(&name, &reply) {
                eprintln!("{text}");
            }
            if matches!(reply, CommandReply::Failed { .. }) {
                commands.refused.push(format!("/{name}"));
            }
        }
        BridgeEvent::CommandAnswered { .. } | BridgeEvent::Pi { .. } => {}
    }
}

/// What stderr says of `/name`'s answer: the notice Pi would show, marked as ours.
fn command_text(name: &str, reply: &CommandReply) -> Option<String> {
    match reply {
        CommandReply::Done => None,
        CommandReply::Notify { message, .. } => Some(format!("unipi-tui: /{name}: {message}")),
        CommandReply::Failed { message } => Some(format!("unipi-tui: /{name} refused: {message}")),
    }
}

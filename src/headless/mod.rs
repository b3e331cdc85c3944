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
use crate::bridge::{BridgeEvent, CommandReply};

pub use child::exit_code;
pub use mode::{RunMode, decide};

/// Runs Pi alone with the launcher's and the user's arguments (the demo's too) and returns its
/// exit code.
pub async fn run_direct(options: &AppOptions) -> Result<AppOutcome> {
    let (args, env) = options.pi_launch(None);
    let code = child::run(&options.pi.program, &args, &env).await?;
    Ok(AppOutcome::plain(code))
}

/// Runs Pi without a pane, connected to the workbench's modules through the bridge (when it
/// started), and shuts the modules' processes down once Pi has exited.
pub async fn run(mut options: AppOptions) -> Result<AppOutcome> {
    for error in &options.config_errors {
        // Nothing of ours goes to the terminal in a headless run: Pi's output is the output.
        tracing::warn!("start-up problem: {error}");
    }
    let started = options.bridge.take();
    let (args, env) = options.pi_launch(started.as_ref());
    let tasks = options.tasks.take();
    let (host, answering) = match started {
        Some(started) => {
            let module = tasks
                .as_ref()
                .map(|tasks| std::sync::Arc::clone(&tasks.module));
            let answering = tokio::spawn(answer_events(started.events, module));
            (Some(started.bridge.host), Some(answering))
        }
        None => (None, None),
    };
    let code = child::run(&options.pi.program, &args, &env).await;
    if let Some(tasks) = tasks {
        // Every task's process group is stopped and reaped, as when the workbench closes.
        tasks.service.shutdown().await;
    }
    if let Some(host) = host {
        // Removes the socket and the runtime directory; the event channel closes with it.
        host.shutdown().await;
    }
    if let Some(answering) = answering {
        answering.abort();
    }
    Ok(AppOutcome::plain(code?))
}

/// Takes the bridge's events, which the pane would show: logs them and answers `/unipi:*`
/// commands (only starting a background task works without the workbench's screen).
async fn answer_events(
    mut events: mpsc::Receiver<BridgeEvent>,
    tasks: Option<std::sync::Arc<crate::tasks::TasksModule>>,
) {
    while let Some(event) = events.recv().await {
        match event {
            BridgeEvent::Command {
                agent,
                name,
                args,
                reply,
            } => match (&tasks, name.as_str()) {
                (Some(module), crate::tasks::TasksModule::COMMAND_BG) => {
                    let module = std::sync::Arc::clone(module);
                    tokio::spawn(async move {
                        let _ = reply.send(module.run_user_command(agent, &args).await);
                    });
                }
                _ => {
                    let _ = reply.send(CommandReply::Failed {
                        message: format!(
                            "/{name} needs the workbench's screen; this Pi runs without it \
                             (unipi-tui -p, --mode json|rpc, or no terminal)"
                        ),
                    });
                }
            },
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

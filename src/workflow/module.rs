//! The workflow's bridge module: it declares the `/unipi:*` commands (the twenty steps, the
//! board, the loop) and completes their arguments from the files on disk. Running them is the
//! capability's (`capability.rs`), which holds the screen and the bridge.

use std::path::PathBuf;

use crate::bridge::{CommandSpec, Completion, Module};

use super::commands::{COMMANDS, Refs, find};
use super::refs;

pub(crate) const KANBOARD: &str = "unipi:kanboard";
pub(crate) const RALPH_START: &str = "unipi:ralph-start";
pub(crate) const RALPH_STOP: &str = "unipi:ralph-stop";
pub(crate) const RALPH_STATUS: &str = "unipi:ralph-status";

pub(crate) struct WorkflowModule {
    pub workspace: PathBuf,
}

impl Module for WorkflowModule {
    fn name(&self) -> &'static str {
        "workflow"
    }

    fn commands(&self) -> Vec<CommandSpec> {
        let mut specs: Vec<CommandSpec> = COMMANDS
            .iter()
            .map(|command| {
                let hint = if command.arg_hint.is_empty() {
                    String::new()
                } else {
                    format!(" {}", command.arg_hint)
                };
                CommandSpec::new(
                    format!("unipi:{}", command.name),
                    format!(
                        "{}{hint} [{} tools]",
                        command.description,
                        command.level.name()
                    ),
                )
            })
            .collect();
        specs.push(CommandSpec::new(
            KANBOARD,
            "The kanban board of the workflow documents",
        ));
        specs.push(CommandSpec::new(
            RALPH_START,
            "Loop over a plan's tasks across turns: plan:<file> [--max-iterations N]",
        ));
        specs.push(CommandSpec::new(RALPH_STOP, "Stop the running loop"));
        specs.push(CommandSpec::new(
            RALPH_STATUS,
            "Show the running loop, or the last one and how it ended",
        ));
        specs
    }

    fn complete(&self, command: &str, prefix: &str) -> Vec<Completion> {
        let refs = if command == RALPH_START {
            Some(Refs::Plans)
        } else {
            find(command).and_then(|command| command.completes)
        };
        let items = refs
            .map(|refs| refs::complete(refs, prefix, &self.workspace))
            .unwrap_or_default();
        tracing::debug!(
            "workflow: /{command} {prefix:?} completes to {} items",
            items.len()
        );
        items
    }
}

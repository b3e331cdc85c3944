//! The fusion bridge module: it declares the commands — `/unipi:model` (the picker, or
//! `/unipi:model <primary> <sidekick>` to apply a pair directly), `/unipi:fusion-preset` (the
//! editor, or `/unipi:fusion-preset <name>` to apply one), `/unipi:fusion-status` and
//! `/btw <question>` — with the preset names as completions, and the card type of an injected
//! side exchange. The capability answers the commands (it holds the screen); the module has no
//! UI of its own.

use std::sync::Arc;

use crate::bridge::{CommandSpec, Completion, MessageTypeSpec, Module};

use super::engine::Engine;
use super::side::BTW_MESSAGE_TYPE;

pub(crate) const MODEL_COMMAND: &str = "unipi:model";
pub(crate) const PRESET_COMMAND: &str = "unipi:fusion-preset";
pub const STATUS_COMMAND: &str = "unipi:fusion-status";
pub(crate) const BTW_COMMAND: &str = "btw";

/// The module (cheap to clone).
#[derive(Clone)]
pub(crate) struct FusionModule {
    engine: Arc<Engine>,
}

impl FusionModule {
    pub fn new(engine: Arc<Engine>) -> Self {
        FusionModule { engine }
    }
}

impl Module for FusionModule {
    fn name(&self) -> &'static str {
        "fusion"
    }

    fn commands(&self) -> Vec<CommandSpec> {
        vec![
            CommandSpec::new(
                MODEL_COMMAND,
                "Pick the primary and sidekick models (or: /unipi:model <primary> <sidekick>)",
            ),
            CommandSpec::new(
                PRESET_COMMAND,
                "Edit the model-fusion presets (or: /unipi:fusion-preset <name> applies one)",
            ),
            CommandSpec::new(
                STATUS_COMMAND,
                "Model fusion: the pair, the fallback and what the sidekick saved",
            ),
            CommandSpec::new(
                BTW_COMMAND,
                "Ask the sidekick a side question, outside the conversation",
            ),
        ]
    }

    fn message_types(&self) -> Vec<MessageTypeSpec> {
        vec![MessageTypeSpec::new(BTW_MESSAGE_TYPE, "Side question")]
    }

    fn complete(&self, command: &str, prefix: &str) -> Vec<Completion> {
        if command != PRESET_COMMAND {
            return Vec::new();
        }
        let config = self.engine.config();
        config
            .presets
            .iter()
            .filter(|(name, _)| name.starts_with(prefix.trim()))
            .map(|(name, preset)| {
                Completion::new(name.clone())
                    .describe(format!("{} + {}", preset.primary, preset.sidekick))
            })
            .collect()
    }
}

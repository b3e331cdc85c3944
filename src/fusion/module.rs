//! The fusion bridge module: the card type of an injected side exchange. The commands —
//! `/unipi:model`, `/unipi:fusion-preset`, `/unipi:fusion-status` and `/btw` — are the
//! capability's, which holds the screen; the module has no UI of its own.

use crate::bridge::{MessageTypeSpec, Module};

use super::side::BTW_MESSAGE_TYPE;

/// The module.
#[derive(Clone, Copy, Default)]
pub(crate) struct FusionModule;

impl Module for FusionModule {
    fn name(&self) -> &'static str {
        "fusion"
    }

    fn message_types(&self) -> Vec<MessageTypeSpec> {
        vec![MessageTypeSpec::new(BTW_MESSAGE_TYPE, "Side question")]
    }
}

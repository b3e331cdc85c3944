//! The fusion bridge module. The commands — `/unipi:model`, `/unipi:fusion-preset` and
//! `/unipi:fusion-status` — are the capability's, which holds the screen; the module has no UI of
//! its own and is what they are listed under.

use crate::bridge::Module;

/// The module.
#[derive(Clone, Copy, Default)]
pub(crate) struct FusionModule;

impl Module for FusionModule {
    fn name(&self) -> &'static str {
        "fusion"
    }
}

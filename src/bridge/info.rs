//! The workbench's own module: it declares `/unipi:info`, the overlay that lists the modules,
//! their state and declarations, the bridge protocol, Pi's version and the workbench's paths.
//! The overlay is a view of the app; this module only makes the command exist in Pi, which
//! forwards each invocation to the app as [`BridgeEvent::Command`](super::BridgeEvent).

use super::module::{CommandSpec, Module};

/// Declares `/unipi:info`.
#[derive(Debug, Default, Clone, Copy)]
pub struct InfoModule;

impl InfoModule {
    /// The command's full name.
    pub const COMMAND: &'static str = "unipi:info";
}

impl Module for InfoModule {
    fn name(&self) -> &'static str {
        "info"
    }

    fn commands(&self) -> Vec<CommandSpec> {
        vec![CommandSpec::new(
            Self::COMMAND,
            "Workbench modules, their tools and commands, versions and paths",
        )]
    }
}

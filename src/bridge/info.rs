//! The workbench's own module: it declares `/unipi:info`, the overlay that lists the modules,
//! their state and declarations, the bridge protocol, Pi's version and the workbench's paths,
//! and the `unipi_info` tool, which tells the model which workbench it runs in. The overlay is a
//! view of the app; this module only makes the command exist in Pi, which forwards each
//! invocation to the app as [`BridgeEvent::Command`](super::BridgeEvent).

use futures_util::future::BoxFuture;
use serde_json::json;

use super::module::{CommandSpec, Module, ToolCall, ToolError, ToolOutput, ToolSpec};

/// Declares `/unipi:info` and `unipi_info`.
#[derive(Debug, Default, Clone, Copy)]
pub struct InfoModule;

impl InfoModule {
    /// The command's full name.
    pub const COMMAND: &'static str = "unipi:info";
    /// The tool's name.
    pub const TOOL: &'static str = "unipi_info";
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

    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec::new(
                Self::TOOL,
                "Workbench info",
                "Tells which workbench this Pi runs in (unipi-tui and its version) and which \
                 agent you are. Takes no arguments.",
            )
            .prompt_snippet("unipi_info: which workbench (unipi-tui) this session runs in"),
        ]
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let version = env!("CARGO_PKG_VERSION");
            Ok(ToolOutput::text(format!(
                "This Pi runs inside unipi-tui {version} as agent `{}`. The user sees Pi in a \
                 pane with the workbench's footer; /unipi:info lists the workbench's modules.",
                call.agent
            ))
            .with_details(json!({ "workbench": "unipi-tui", "version": version })))
        })
    }
}

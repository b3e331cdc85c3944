//! The workbench's own module: the `unipi_info` tool, which tells the model which workbench it
//! runs in. `/unipi:info` (the overlay that lists the modules, their state and declarations, the
//! bridge protocol, Pi's version and the workbench's paths) is listed under it; the app declares
//! it beside its handler (`app/bridge.rs`), since it opens a view.

use futures_util::future::BoxFuture;
use serde_json::json;

use super::module::{Module, ToolCall, ToolError, ToolOutput, ToolSpec};

/// Declares `unipi_info`.
#[derive(Debug, Default, Clone, Copy)]
pub struct InfoModule;

impl InfoModule {
    /// The tool's name.
    pub const TOOL: &'static str = "unipi_info";
}

impl Module for InfoModule {
    fn name(&self) -> &'static str {
        "info"
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

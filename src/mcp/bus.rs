//! What MCP puts on the bus, under Unipi's names: servers starting, stopping and failing (a
//! failure alerts the user), and the tools declared or withdrawn for a server.

use serde::{Deserialize, Serialize};

use crate::bridge::{AlertPriority, Alerting, BusMessage};

/// `unipi:mcp:server:started {name, toolCount, pid}`
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServerStarted {
    pub(crate) name: String,
    pub(crate) tool_count: usize,
    pub(crate) pid: Option<u32>,
}

/// `unipi:mcp:server:stopped {name}`
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ServerStopped {
    pub(crate) name: String,
}

/// `unipi:mcp:server:error {name, error}`: a failed start, an unexpected exit, or a tool-name
/// clash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ServerError {
    pub(crate) name: String,
    pub(crate) error: String,
}

/// `unipi:mcp:tools:registered {serverName, toolNames}`: the tools were declared to every
/// connected Pi.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolsRegistered {
    pub(crate) server_name: String,
    pub(crate) tool_names: Vec<String>,
}

/// `unipi:mcp:tools:unregistered {serverName, toolNames}`: the tools were withdrawn from every
/// Pi's active set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolsUnregistered {
    pub(crate) server_name: String,
    pub(crate) tool_names: Vec<String>,
}

impl BusMessage for ServerStarted {
    const NAME: &'static str = "unipi:mcp:server:started";
}

impl BusMessage for ServerStopped {
    const NAME: &'static str = "unipi:mcp:server:stopped";
}

impl BusMessage for ServerError {
    const NAME: &'static str = "unipi:mcp:server:error";

    fn alerting(&self) -> Option<Alerting> {
        Some(Alerting::alert(
            "mcp_server_error",
            "MCP Error",
            format!("Server \"{}\" error: {}", self.name, self.error),
            AlertPriority::Normal,
        ))
    }
}

impl BusMessage for ToolsRegistered {
    const NAME: &'static str = "unipi:mcp:tools:registered";
}

impl BusMessage for ToolsUnregistered {
    const NAME: &'static str = "unipi:mcp:tools:unregistered";
}

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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Unipi's payloads, field for field.
    #[test]
    fn pi_hears_the_servers_in_unipi_fields() {
        let started = ServerStarted {
            name: "files".into(),
            tool_count: 3,
            pid: Some(42),
        };
        assert_eq!(
            started.pi_event(),
            Some(json!({"name": "files", "toolCount": 3, "pid": 42}))
        );
        let error = ServerError {
            name: "files".into(),
            error: "exited".into(),
        };
        assert_eq!(
            error.pi_event(),
            Some(json!({"name": "files", "error": "exited"}))
        );
        let tools = ToolsRegistered {
            server_name: "files".into(),
            tool_names: vec!["read".into()],
        };
        assert_eq!(
            tools.pi_event(),
            Some(json!({"serverName": "files", "toolNames": ["read"]}))
        );
    }
}

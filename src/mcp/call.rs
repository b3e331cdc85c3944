//! What a tool call on an MCP server yields: the content pieces and flags of a finished call,
//! and the progress notifications of a running one. The client produces them and the manager
//! passes them on; they live in a file of their own so neither imports the other for them.

/// One piece of a tool result.
#[derive(Debug, Clone, PartialEq)]
pub enum McpContent {
    Text(String),
    Image { data: String, mime: String },
    Resource { uri: String, text: Option<String> },
    Other(serde_json::Value),
}

/// A finished tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    pub content: Vec<McpContent>,
    pub structured: Option<serde_json::Value>,
    pub is_error: bool,
}

/// A progress notification for a running call.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressUpdate {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

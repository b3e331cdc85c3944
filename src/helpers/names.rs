//! The names the helpers module speaks to Pi with: its tools, its custom message types, and
//! the bridge agent id prefix of a helper's own Pi. Kept apart so the tool surface, the service
//! that runs helpers and the supervisor channel all name them from one place.

/// The tool names.
pub const SPAWN_TOOL: &str = "spawn_helper";
pub const RESULT_TOOL: &str = "get_helper_result";
pub(crate) const SUPERVISOR_TOOL: &str = "contact_supervisor";
/// The custom message type of a background run's completion.
pub const NOTIFICATION_TYPE: &str = "helper-result-notification";
/// The custom message type of a helper's message to its parent.
pub(crate) const SUPERVISOR_MESSAGE_TYPE: &str = "helper-supervisor-message";
/// The bridge agent id prefix of a helper's own Pi.
pub(crate) const CHILD_AGENT_PREFIX: &str = "helper:";

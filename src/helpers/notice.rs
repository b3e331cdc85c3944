//! What the helpers module tells agents outside a tool call — a background run's result, a
//! helper's question or status note for its parent — and where those messages go: the bridge
//! host in the app, a channel in tests.

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::bridge::{AgentId, BridgeHost};

/// One message for an agent, ready to send as a follow-up.
#[derive(Debug, Clone, PartialEq)]
pub struct HelperNotice {
    /// The agent it is for.
    pub agent: AgentId,
    pub run_id: String,
    /// The custom message type ([`NOTIFICATION_TYPE`] or [`SUPERVISOR_MESSAGE_TYPE`]).
    pub custom_type: String,
    pub content: String,
    pub details: Value,
    /// Whether it starts a turn of an idle agent.
    pub trigger_turn: bool,
}

/// Where the module's notices go.
pub trait HelperNotificationSink: Send + Sync + 'static {
    fn deliver(&self, notice: HelperNotice) -> BoxFuture<'static, anyhow::Result<()>>;
}

impl HelperNotificationSink for BridgeHost {
    fn deliver(&self, notice: HelperNotice) -> BoxFuture<'static, anyhow::Result<()>> {
        self.follow_up(
            notice.agent,
            notice.custom_type,
            notice.content,
            notice.details,
            notice.trigger_turn,
        )
    }
}

/// A sink that hands notices to a channel (tests, embedders).
pub struct HelperChannelSink(pub mpsc::UnboundedSender<HelperNotice>);

impl HelperNotificationSink for HelperChannelSink {
    fn deliver(&self, notice: HelperNotice) -> BoxFuture<'static, anyhow::Result<()>> {
        let sent = self.0.send(notice);
        Box::pin(async move { sent.map_err(|_| anyhow::anyhow!("the notice channel is closed")) })
    }
}

//! A message for an agent outside a tool call — a finished background task, a delegate's or a
//! helper's result, a helper's question for its parent — and where such messages go: the
//! [`BridgeHost`] in the app (a Pi follow-up of the notice's custom message type, which Pi renders
//! as the declaring module's card), a channel in tests and embedders. Tasks, delegates and helpers
//! all send the same kind of message, so its shape and its two destinations live here once.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::mpsc;

use super::wakes::{WakePromise, WakeReach};
use super::{AgentId, BridgeHost};

/// One message for an agent, ready to send as a follow-up.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentNotice {
    /// The agent it is for.
    pub agent: AgentId,
    /// The task or run it is about.
    pub id: String,
    /// The custom message type (declared by the sending module so Pi renders its card).
    pub custom_type: String,
    pub content: String,
    pub details: Value,
    /// Whether it starts a turn of an idle agent (`triggerOnCompletion`).
    pub trigger_turn: bool,
}

/// Where notices go. A trait so a module does not depend on a live bridge: the app attaches the
/// [`BridgeHost`] once it has started, tests attach a [`ChannelSink`].
pub trait NoticeSink: Send + Sync + 'static {
    fn deliver(&self, notice: AgentNotice) -> BoxFuture<'static, anyhow::Result<()>>;

    /// Whether `agent` can still be woken once its current run ends ([`WakeReach`]).
    fn wake_reach(&self, _agent: &AgentId) -> WakeReach {
        WakeReach::Anytime
    }

    /// `agent` is owed a wake by `what` within `limit`: a print or JSON run waits for it until
    /// the promise is dropped (after the notice is delivered). `None` where nobody waits.
    fn promise_wake(
        &self,
        _agent: &AgentId,
        _what: String,
        _limit: Duration,
    ) -> Option<WakePromise> {
        None
    }
}

impl NoticeSink for BridgeHost {
    fn deliver(&self, notice: AgentNotice) -> BoxFuture<'static, anyhow::Result<()>> {
        let host = self.clone();
        Box::pin(async move {
            host.send_follow_up(
                &notice.agent,
                &notice.custom_type,
                notice.content,
                notice.details,
                notice.trigger_turn,
            )
            .await?;
            Ok(())
        })
    }

    fn wake_reach(&self, agent: &AgentId) -> WakeReach {
        BridgeHost::wake_reach(self, agent)
    }

    fn promise_wake(&self, agent: &AgentId, what: String, limit: Duration) -> Option<WakePromise> {
        Some(self.wakes().promise(agent, what, limit))
    }
}

/// A sink that hands notices to a channel (tests, or an app that routes notices itself).
#[derive(Debug, Clone)]
pub struct ChannelSink(pub mpsc::UnboundedSender<AgentNotice>);

impl NoticeSink for ChannelSink {
    fn deliver(&self, notice: AgentNotice) -> BoxFuture<'static, anyhow::Result<()>> {
        send_to(&self.0, notice)
    }
}

/// Hands `notice` to `channel`, as a sink's delivery: an error once the receiver is gone.
pub fn send_to(
    channel: &mpsc::UnboundedSender<AgentNotice>,
    notice: AgentNotice,
) -> BoxFuture<'static, anyhow::Result<()>> {
    let sent = channel.send(notice);
    Box::pin(async move { sent.map_err(|_| anyhow::anyhow!("notification channel closed")) })
}

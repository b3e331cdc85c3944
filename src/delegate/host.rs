//! What the delegate module needs from the app: the models an agent's Pi can use and where
//! notices go ([`DelegateHost`]: the [`BridgeHost`] in the app, a [`ChannelHost`] in tests), and
//! the settings it is started with.

use std::path::PathBuf;

use futures_util::future::BoxFuture;
use tokio::sync::mpsc;

use super::artifacts::PiCommand;
use super::config::DelegateConfig;
use crate::bridge::{AgentId, AgentNotice, BridgeHost, HostCall, ModelInfo, NoticeSink, send_to};
use crate::config::live::LiveConfig;

/// What the module needs from the app: the models an agent can use, and where completions go.
pub trait DelegateHost: NoticeSink {
    /// The models `agent`'s Pi can use right now (route pinning).
    fn models(&self, agent: &AgentId) -> BoxFuture<'static, anyhow::Result<Vec<ModelInfo>>>;
}

impl DelegateHost for BridgeHost {
    fn models(&self, agent: &AgentId) -> BoxFuture<'static, anyhow::Result<Vec<ModelInfo>>> {
        let host = self.clone();
        let agent = agent.clone();
        Box::pin(async move {
            let value = host.call(&agent, HostCall::ListModels).await?;
            Ok(serde_json::from_value(value)?)
        })
    }
}

/// A host with a fixed model list whose notices go into a channel (tests, or an app routing
/// notices itself).
#[derive(Debug, Clone)]
pub struct ChannelHost {
    pub models: Vec<ModelInfo>,
    pub notices: mpsc::UnboundedSender<AgentNotice>,
}

impl DelegateHost for ChannelHost {
    fn models(&self, _agent: &AgentId) -> BoxFuture<'static, anyhow::Result<Vec<ModelInfo>>> {
        let models = self.models.clone();
        Box::pin(async move { Ok(models) })
    }
}

impl NoticeSink for ChannelHost {
    fn deliver(&self, notice: AgentNotice) -> BoxFuture<'static, anyhow::Result<()>> {
        send_to(&self.notices, notice)
    }
}

/// What the module knows of one agent's session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParentSession {
    pub session_id: Option<String>,
    /// `None` for `--no-session`: no delegate can be seeded.
    pub session_file: Option<PathBuf>,
    /// The current `(provider, model)`.
    pub model: Option<(String, String)>,
}

/// Everything the module needs, given by the app.
#[derive(Debug, Clone)]
pub struct DelegateSettings {
    /// The workspace: the child's cwd and the artifacts' root.
    pub workspace: PathBuf,
    /// How the child runs Pi.
    pub pi: PiCommand,
    /// Environment for the child (and its Pi), on top of the inherited one.
    pub env: Vec<(String, String)>,
    /// The `unipi-tui` binary that has the `__delegate-child` subcommand.
    pub child_program: PathBuf,
    /// The `delegate` section of `background-tasks.json`, followed: an edit applies to the next
    /// launch (the tool's existence is fixed at start: `enabled` needs a restart).
    pub config: LiveConfig<DelegateConfig>,
}

impl DelegateSettings {
    /// Settings running the child from this very executable.
    pub fn new(
        workspace: PathBuf,
        pi: PiCommand,
        env: Vec<(String, String)>,
        config: LiveConfig<DelegateConfig>,
    ) -> anyhow::Result<Self> {
        let child_program = std::env::current_exe()
            .map_err(|err| anyhow::anyhow!("cannot locate the unipi-tui executable: {err}"))?;
        Ok(Self {
            workspace,
            pi,
            env,
            child_program,
            config,
        })
    }
}

//! `unipi-tui demo`: the workbench against the embedded scripted model, with no API key.
//!
//! Starts the scripted OpenAI-compatible server on loopback, writes a throwaway Pi agent
//! directory (`PI_CODING_AGENT_DIR`) whose `models.json` points at it, and adds the environment
//! and model selection to Pi's start. The user's `~/.pi` is never read or written. The returned
//! guard keeps the server and the directory alive for the session. The directory is one the
//! workbench owns in its private runtime directory (`demo-<pid>-<nonce>`), so the next demo
//! removes it should this one be killed before it could.

use std::ffi::OsString;
use std::path::Path;

use anyhow::{Context, Result};

use crate::app::AppOptions;
use crate::pi::offline::write_priced_agent_dir;
use crate::scripted::{self, Scenario, ServerHandle};
use crate::sys::private_dir::OwnedDir;

/// Extra Pi settings for the demo's agent directory, as a JSON object merged over the sealed
/// `settings.json` (end-to-end tests lower `compaction.keepRecentTokens` with it).
pub const PI_SETTINGS_ENV: &str = "UNIPI_DEMO_PI_SETTINGS";

/// Keeps the demo's server and agent directory for as long as it lives.
pub struct DemoSession {
    _server: ServerHandle,
    _agent_dir: OwnedDir,
    /// The demo's own Pi arguments (offline, the scripted model) — helpers need them too.
    pub pi_args: Vec<OsString>,
    /// The demo's environment for Pi (its agent directory …) — helpers need it too.
    pub env: Vec<(OsString, OsString)>,
}

impl DemoSession {
    /// The demo's throwaway Pi agent directory (where Pi's user files, `mcp.json` included, are
    /// looked for instead of `~/.pi/agent`).
    pub fn agent_dir(&self) -> &Path {
        self._agent_dir.path()
    }
}

/// Prepares the demo and adjusts `options` so Pi talks to the scripted server.
pub async fn prepare(options: &mut AppOptions, scenario: Option<&Path>) -> Result<DemoSession> {
    let scenario = match scenario {
        Some(path) => Scenario::from_file(path)?,
        None => Scenario::builtin_demo().context("the built-in demo scenario is broken")?,
    };
    let server = scripted::start(scenario)
        .await
        .context("failed to start the scripted model server")?;
    let runtime = crate::sys::private_dir::runtime_root().map_err(anyhow::Error::msg)?;
    let agent_dir = OwnedDir::create(&runtime.path, "demo")
        .context("failed to create the demo's Pi agent directory")?;
    let agent = write_priced_agent_dir(
        agent_dir.path(),
        &server.base_url(),
        &server.served_models(),
    )?;
    if let Some(extra) = std::env::var_os(PI_SETTINGS_ENV) {
        merge_pi_settings(&agent.dir.join("settings.json"), &extra.to_string_lossy())?;
    }
    tracing::info!(
        "demo: scripted server at {}, agent dir {}",
        server.base_url(),
        agent_dir.path().display()
    );
    let env: Vec<(OsString, OsString)> = agent
        .env
        .into_iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect();
    options.pi_env.extend(env.iter().cloned());
    options.welcome = Some((WELCOME_TITLE.to_owned(), welcome_lines()));
    // The demo's own Pi arguments come first; the user's may override them.
    let pi_args: Vec<OsString> = agent.pi_args.into_iter().map(OsString::from).collect();
    let mut args = pi_args.clone();
    args.append(&mut options.pi_args);
    options.pi_args = args;
    Ok(DemoSession {
        _server: server,
        _agent_dir: agent_dir,
        pi_args,
        env,
    })
}

/// The title of the demo's first box.
pub const WELCOME_TITLE: &str = "Welcome to the unipi-tui demo";

/// What the demo's first box says: what this is, and what to try — Pi's and the workbench's own.
fn welcome_lines() -> Vec<String> {
    [
        "Pi runs in this pane against a scripted model on this machine: no API key, nothing \
         leaves it. Around Pi the workbench draws its footer, the dock and overlays.",
        "Type one of: hello · list files · show me markdown · start a background task · ask a \
         helper · /unipi:info",
        "Keys: F1 every key and command · Shift+Down the dock (background tasks and helpers) · \
         Ctrl+D quits. Typing closes this box.",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// Merges the JSON object `extra` over the settings file at `path` (objects key by key, anything
/// else replaced).
pub fn merge_pi_settings(path: &Path, extra: &str) -> Result<()> {
    fn merge(base: &mut serde_json::Value, over: serde_json::Value) {
        match (base, over) {
            (serde_json::Value::Object(base), serde_json::Value::Object(over)) => {
                for (key, value) in over {
                    merge(base.entry(key).or_insert(serde_json::Value::Null), value);
                }
            }
            (base, over) => *base = over,
        }
    }
    let extra: serde_json::Value =
        serde_json::from_str(extra).with_context(|| format!("{PI_SETTINGS_ENV} is not JSON"))?;
    anyhow::ensure!(extra.is_object(), "{PI_SETTINGS_ENV} must be a JSON object");
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut settings: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    merge(&mut settings, extra);
    std::fs::write(path, format!("{settings:#}\n"))
        .with_context(|| format!("cannot write {}", path.display()))
}

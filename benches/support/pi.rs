//! The pinned Pi 1.6.0 from `.test-deps` against the scripted model (every answer "ok"), for the
//! benches that start helpers: the server, a throwaway agent directory and HOME, and the spec of
//! an `explore` helper run on it.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, bail};
use tempfile::TempDir;
use unipi_tui::helpers::agents::AgentCatalog;
use unipi_tui::helpers::spec::RunSpec;
use unipi_tui::pi::offline::{OfflineAgent, write_agent_dir};
use unipi_tui::scripted::{Scenario, ServerHandle, start};

const SCENARIO: &str = r#"
model = "bench"
[fallback]
reply = "ok"
"#;

pub struct ScriptedPi {
    pub pi: PathBuf,
    pub server: ServerHandle,
    /// HOME, the agent directory and the runs' directories.
    pub dir: TempDir,
    pub offline: OfflineAgent,
    /// The agent directory's environment, HOME, and Node on PATH.
    pub env: Vec<(String, String)>,
}

impl ScriptedPi {
    /// Starts the server and writes the agent directory; says so when `.test-deps` is missing.
    pub async fn start() -> Result<Self> {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".test-deps");
        let pi = root.join("pi-current/node_modules/.bin/pi");
        if !pi.exists() {
            bail!(
                "{} is missing: run scripts/test-deps.sh first",
                pi.display()
            );
        }
        let server = start(Scenario::from_toml_str(SCENARIO, "bench")?).await?;
        let dir = tempfile::tempdir()?;
        let offline = write_agent_dir(
            &dir.path().join("agent"),
            &server.base_url(),
            &server.models(),
        )?;
        let path = format!(
            "{}:{}",
            root.join("node/bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut env = offline.env.clone();
        env.push(("PATH".to_string(), path));
        env.push(("HOME".to_string(), dir.path().display().to_string()));
        Ok(ScriptedPi {
            pi,
            server,
            dir,
            offline,
            env,
        })
    }

    /// An `explore` helper on the scripted model asked "hi", in run directory `run`.
    pub fn spec(&self, run: &str) -> Result<RunSpec> {
        let mut agent = AgentCatalog::builtin().resolve("explore")?;
        agent.model = self.offline.pi_args.get(2).cloned();
        let mut spec = RunSpec::new(
            &self.pi,
            agent,
            "hi",
            self.dir.path(),
            self.dir.path().join(run),
        );
        spec.leading_args = vec!["--offline".to_string()];
        spec.env = self.env.clone();
        Ok(spec)
    }

    pub async fn shutdown(self) {
        self.server.shutdown().await;
    }
}

/// Prints `name` with the median and the minimum of `samples` (sorted here).
pub fn report(name: &str, samples: &mut [Duration]) {
    samples.sort();
    println!(
        "{name:<36} median {:>7.1} ms   min {:>7.1} ms   (n = {})",
        samples[samples.len() / 2].as_secs_f64() * 1e3,
        samples[0].as_secs_f64() * 1e3,
        samples.len()
    );
}

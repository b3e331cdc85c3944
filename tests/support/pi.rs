//! The pinned Pi binaries the integration tests run, installed by `scripts/test-deps.sh` into
//! `.test-deps/`. A missing or stale install fails the test with the command that fixes it: an
//! end-to-end test that silently skips proves nothing.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use unipi_tui::pi::offline::OfflineAgent;

use super::sandbox::Sandbox;

/// How long one `pi -p` run may take before the test gives up on it.
pub const PRINT_TIMEOUT: Duration = Duration::from_secs(90);

/// The two Pi lines unipi-tui supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PiLine {
    /// `@earendil-works/pi-coding-agent` 1.x, run with the Node in `.test-deps/node`.
    Current,
    /// `@mariozechner/pi-coding-agent` 0.7x, run with the system Node.
    Legacy,
}

/// A located, version-checked Pi install.
#[derive(Debug, Clone)]
pub struct PiInstall {
    pub version: String,
    /// The `pi` launcher script.
    pub bin: PathBuf,
    /// A directory to put first on `PATH` (the Node this line needs), if any.
    pub node_bin_dir: Option<PathBuf>,
}

/// What a finished `pi` run printed.
#[derive(Debug)]
pub struct PiOutput {
    pub success: bool,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// The repository's `.test-deps/` directory.
pub fn test_deps_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".test-deps")
}

/// An MCP server's binary from `.test-deps`, or a failure naming the script that installs it.
pub fn mcp_bin(name: &str) -> PathBuf {
    let bin = test_deps_dir().join("mcp/node_modules/.bin").join(name);
    assert!(
        bin.exists(),
        "{} is missing; run `scripts/test-deps.sh` from the repository root",
        bin.display()
    );
    bin
}

/// Finds the pinned Pi of `line`, or fails naming `scripts/test-deps.sh`.
pub fn pi_install(line: PiLine) -> anyhow::Result<PiInstall> {
    let deps = test_deps_dir();
    let (dir, package_key, version_key) = match line {
        PiLine::Current => ("pi-current", "PI_CURRENT_PACKAGE", "PI_CURRENT_VERSION"),
        PiLine::Legacy => ("pi-legacy", "PI_LEGACY_PACKAGE", "PI_LEGACY_VERSION"),
    };
    let package = pinned(package_key)?;
    let version = pinned(version_key)?;
    let install = deps.join(dir);
    let bin = install.join("node_modules/.bin/pi");
    let marker = std::fs::read_to_string(install.join(".installed")).unwrap_or_default();
    let expected = format!("{package}@{version}");
    if !bin.exists() || marker.trim() != expected {
        bail!(
            "{expected} is not installed in {} (found {:?}); run `scripts/test-deps.sh` from the \
             repository root to install the pinned Pi versions",
            install.display(),
            marker.trim()
        );
    }
    let node_bin_dir = match line {
        PiLine::Current => {
            let node_dir = deps.join("node/bin");
            if !node_dir.join("node").exists() {
                bail!(
                    "no Node for Pi {version} in {}; run `scripts/test-deps.sh`",
                    node_dir.display()
                );
            }
            Some(node_dir)
        }
        PiLine::Legacy => None,
    };
    Ok(PiInstall {
        version,
        bin,
        node_bin_dir,
    })
}

impl PiInstall {
    /// A command running this Pi with the right Node on `PATH`, stdin closed, output captured
    /// and the process killed if the test drops it.
    pub fn command(&self) -> tokio::process::Command {
        self.with_node(tokio::process::Command::new(&self.bin))
    }

    /// `unipi-tui --pi-bin <this Pi> <agent.pi_args> <args>` without a terminal (a headless run
    /// unless `args` say otherwise), started in the sandbox's project with the sandbox's HOME,
    /// XDG directories and TMPDIR and the offline agent's environment; the right Node on `PATH`,
    /// stdin closed, output captured, killed if the test drops it.
    pub fn workbench(
        &self,
        agent: &OfflineAgent,
        sandbox: &Sandbox,
        args: &[&str],
    ) -> tokio::process::Command {
        let mut command = self.with_node(tokio::process::Command::new(env!(
            "CARGO_BIN_EXE_unipi-tui"
        )));
        command
            .current_dir(&sandbox.project)
            .envs(sandbox.env())
            .envs(agent.env.iter().map(|(key, value)| (key, value)))
            .arg("--pi-bin")
            .arg(&self.bin)
            .args(&agent.pi_args)
            .args(args);
        command
    }

    /// `command` with this Pi's Node first on `PATH`, stdin closed, output captured, killed on
    /// drop.
    fn with_node(&self, mut command: tokio::process::Command) -> tokio::process::Command {
        if let Some(node_bin_dir) = &self.node_bin_dir {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let mut dirs = vec![node_bin_dir.clone()];
            dirs.extend(std::env::split_paths(&path));
            if let Ok(joined) = std::env::join_paths(dirs) {
                command.env("PATH", joined);
            }
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }

    /// Runs `pi <agent.pi_args> <args>` in the sandbox's project with the offline agent's
    /// environment, HOME and TMPDIR in the sandbox (so a stray write to `~/.pi` is visible to the
    /// test), waiting at most [`PRINT_TIMEOUT`].
    pub async fn run(
        &self,
        agent: &OfflineAgent,
        sandbox: &Sandbox,
        args: &[&str],
    ) -> anyhow::Result<PiOutput> {
        let mut command = self.command();
        command
            .current_dir(&sandbox.project)
            .env("HOME", &sandbox.home)
            .env("TMPDIR", &sandbox.tmp)
            .envs(agent.env.iter().map(|(key, value)| (key, value)))
            .args(&agent.pi_args)
            .args(args);
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {}", self.bin.display()))?;
        let output = tokio::time::timeout(PRINT_TIMEOUT, child.wait_with_output())
            .await
            .with_context(|| {
                format!(
                    "Pi {} did not finish within {PRINT_TIMEOUT:?}",
                    self.version
                )
            })?
            .context("waiting for Pi")?;
        Ok(PiOutput {
            success: output.status.success(),
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        })
    }
}

/// A value from `versions.env`, the one place Pi versions are pinned.
fn pinned(key: &str) -> anyhow::Result<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("versions.env");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .filter_map(|line| line.split_once('='))
        .find(|(name, _)| name.trim() == key)
        .map(|(_, value)| value.trim().to_string())
        .with_context(|| format!("{} does not pin {key}", path.display()))
}

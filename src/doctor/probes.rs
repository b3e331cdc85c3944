//! The checks that start something: Pi with the bridge extension (RPC mode, as a helper runs,
//! until the extension connects), and each configured MCP server (started, its tools listed,
//! stopped), each within a time limit.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt as _;
use tokio::sync::mpsc;

use super::{DoctorRow, DoctorStatus, row};
use crate::bridge::{AgentId, BridgeEvent, BridgeHost, Registry};
use crate::mcp::client::{Connection, StderrTail};
use crate::mcp::config::Transport;
use crate::pi::PiCommand;
use crate::sys::SpawnGrouped as _;

/// How long Pi may take to load the extension and connect (a cold Node start on a slow disk
/// takes a few seconds).
const BRIDGE_LIMIT: Duration = Duration::from_secs(30);
/// The most one MCP server may take to start and list its tools here (its own start-up
/// timeout, when shorter, applies).
const MCP_LIMIT: Duration = Duration::from_secs(20);

/// Starts the bridge host with nothing registered, then `pi --mode rpc -e <extension>` with the
/// bridge's environment, and waits for the extension to connect.
/// With the Node executable that ran Pi, when it was seen.
pub(super) async fn bridge(
    pi: &PiCommand,
    workspace: &Path,
    cache_dir: &Path,
) -> (DoctorRow, Option<PathBuf>) {
    match run_bridge(pi, workspace, cache_dir).await {
        Ok((detail, node)) => (row(DoctorStatus::Ok, "bridge", detail, None), node),
        Err(err) => (
            row(
                DoctorStatus::Broken,
                "bridge",
                format!("{err:#}"),
                Some(
                    "run `unipi-tui --log-level debug` once and read the log file; a Pi older than \
                 the pinned lines may not load the extension",
                ),
            ),
            None,
        ),
    }
}

async fn run_bridge(
    pi: &PiCommand,
    workspace: &Path,
    cache_dir: &Path,
) -> anyhow::Result<(String, Option<PathBuf>)> {
    use anyhow::{Context as _, bail};
    let (tx, mut events) = mpsc::channel(64);
    let host = BridgeHost::start(Arc::new(Registry::new()), tx)
        .await
        .context("the bridge host could not start")?;
    let extension = crate::bridge::extension_file(cache_dir)?;
    let env = host.register_agent(AgentId::main())?;
    let (mut child, group) = pi_with_bridge(pi, workspace, &extension, env)
        .spawn_grouped()
        .with_context(|| format!("cannot start {}", pi.program.display()))?;
    let mut stderr = child.stderr.take();
    let outcome = tokio::time::timeout(
        BRIDGE_LIMIT,
        connected(&mut events, &mut child, group, &extension),
    )
    .await;
    // Closing stdin ends an RPC-mode Pi; the group is killed in case it does not.
    drop(child.stdin.take());
    if tokio::time::timeout(Duration::from_secs(3), child.wait())
        .await
        .is_err()
    {
        group.kill_now();
    }
    let _ = child.wait().await;
    host.shutdown().await;
    let mut text = String::new();
    if let Some(stderr) = stderr.as_mut() {
        let _ = stderr.read_to_string(&mut text).await;
    }
    let tail = last_lines(&text);
    match outcome {
        Ok(Ok(found)) => Ok(found),
        Ok(Err(err)) if tail.is_empty() => Err(err),
        Ok(Err(err)) => bail!("{err:#}: {tail}"),
        Err(_) => bail!(
            "Pi did not load {} within {}s{}",
            extension.display(),
            BRIDGE_LIMIT.as_secs(),
            with_tail(&tail)
        ),
    }
}

/// `pi --mode rpc --no-session -e <extension>` as the workbench would start it, with the
/// bridge's environment; Pi 1.x also gets `--no-mcp`, as in the workbench.
fn pi_with_bridge(
    pi: &PiCommand,
    workspace: &Path,
    extension: &Path,
    bridge_env: Vec<(String, String)>,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(&pi.program);
    command
        .args(&pi.args)
        .args(["--mode", "rpc", "--no-session"])
        .arg("-e")
        .arg(extension)
        .current_dir(workspace)
        .envs(pi.env.iter().map(|(key, value)| (key, value)))
        .envs(crate::pi::compile_cache::env_for(workspace, &pi.env))
        .envs(bridge_env)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if pi
        .version
        .as_deref()
        .is_some_and(|version| crate::pi::version_at_least(version, "1.0.0"))
    {
        command.arg("--no-mcp");
    }
    command
}

/// Waits for the extension in `child` to connect: what it said, and the Node running Pi.
async fn connected(
    events: &mut mpsc::Receiver<BridgeEvent>,
    child: &mut tokio::process::Child,
    group: crate::sys::ProcessGroup,
    extension: &Path,
) -> anyhow::Result<(String, Option<PathBuf>)> {
    use anyhow::anyhow;
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Some(BridgeEvent::Connected { pi_version, protocol, .. }) => {
                    // Pi's own process, however it was launched (a wrapper, a shim).
                    let members = crate::sys::procfs::table()
                        .into_iter()
                        .filter(|stat| stat.pgid == group.raw())
                        .map(|stat| stat.pid);
                    let detail = format!(
                        "{} loaded in Pi {pi_version} (protocol {protocol})",
                        extension.display()
                    );
                    return Ok((detail, node_among(members)));
                }
                Some(BridgeEvent::Fault { message, .. }) => {
                    return Err(anyhow!("the extension was refused: {message}"));
                }
                Some(_) => {}
                None => return Err(anyhow!("the bridge host stopped")),
            },
            status = child.wait() => {
                let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
                return Err(anyhow!("Pi exited ({status}) before the extension connected"));
            }
        }
    }
}

/// The Node executable among `pids` (what `/proc/<pid>/exe` names `node…`).
pub(super) fn node_among(pids: impl IntoIterator<Item = i32>) -> Option<PathBuf> {
    pids.into_iter()
        .filter_map(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).ok())
        .find(|exe| {
            exe.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("node"))
        })
}

/// The Node running the workbench's main Pi: a process under this one whose environment names
/// it the main agent.
pub(super) fn main_pi_node() -> Option<PathBuf> {
    let table = crate::sys::procfs::table();
    let me = i32::try_from(std::process::id()).ok()?;
    let entry = format!("{}=main", crate::bridge::env::AGENT);
    let pids = crate::sys::tree::descendants_in(&table, &[me])
        .into_iter()
        .filter(|pid| crate::sys::procfs::environ_has(*pid, entry.as_bytes()));
    node_among(pids)
}

fn with_tail(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!(": {tail}")
    }
}

/// The last three non-empty lines of `text`, joined.
fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(3)..].join(" / ")
}

/// Each configured, enabled MCP server started and listed (none when the workbench leaves MCP
/// to Pi).
pub(super) async fn mcp_servers(home: Option<&Path>, workspace: &Path) -> Vec<DoctorRow> {
    let config = crate::mcp::config::load(home, workspace);
    if config.settings.owner == crate::mcp::config::Owner::Pi {
        return vec![row(
            DoctorStatus::Ok,
            "MCP",
            "left to Pi (`mcp.owner` is \"pi\" in workbench.json): the workbench starts none",
            None,
        )];
    }
    let checks = config.servers.iter().map(|server| async move {
        let name = format!("MCP {}", server.name);
        if !server.enabled {
            return row(
                DoctorStatus::Ok,
                name,
                format!("disabled in {}", server.source.display()),
                None,
            );
        }
        let mut server = server.clone();
        server.startup_timeout = server.startup_timeout.min(MCP_LIMIT);
        let stderr = StderrTail::new();
        match Connection::connect(&server, Arc::clone(&stderr)).await {
            Ok(connected) => {
                let tools = connected.tools.len();
                connected.connection.close().await;
                row(
                    DoctorStatus::Ok,
                    name,
                    format!("{} started, {tools} tools", server.target()),
                    None,
                )
            }
            Err(err) => {
                let fix = match &server.transport {
                    Transport::Stdio { .. } => format!(
                        "run `{}` by hand to see why, or set \"enabled\": false for it in {}",
                        server.target(),
                        server.source.display()
                    ),
                    Transport::Http { url, .. } => format!(
                        "check that {url} is up, or set \"enabled\": false for it in {}",
                        server.source.display()
                    ),
                };
                row(
                    DoctorStatus::Broken,
                    name,
                    format!("{} did not start: {err:#}", server.target()),
                    Some(&fix),
                )
            }
        }
    });
    futures_util::future::join_all(checks).await
}

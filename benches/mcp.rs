//! MCP benchmark, against the real `@modelcontextprotocol/server-everything` from `.test-deps/mcp`
//! (`scripts/test-deps.sh`):
//!
//! - **start-up**: `McpManager::start_all` of 5 server-everything processes until all are running
//!   (spawn, `initialize`, first `tools/list`), in parallel as the workbench does it; one server
//!   alone for comparison. Several rounds; each round's time is printed.
//! - **call**: N sequential `echo` calls, (a) straight through rmcp (`RunningService::call_tool` on
//!   a `TokioChildProcess`, nothing of ours in the path) and (b) through `McpManager::call_tool`
//!   (the manager's lookup, progress routing, timeout and cancellation `select!`). The bridged call
//!   (Pi → bridge → module → manager) is measured against (a) in the bridge work; its target is an
//!   overhead p50 under 3 ms.
//!
//! Figures are printed, never asserted (timing assertions flake on a busy machine). Run with
//! `cargo bench --bench mcp` (`UNIPI_BENCH_CALLS` overrides N = 1000). Under
//! `cargo test --all-targets` (no `--bench` argument) it does a short smoke pass instead.

mod support;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use support::{BridgeClient, Stats, ms};
use unipi_tui::mcp::config::{McpConfig, McpSettings, ServerConfig, Transport};
use unipi_tui::mcp::manager::{McpManager, ServerStatus};

fn main() -> ExitCode {
    // cargo passes `--bench` under `cargo bench`; `cargo test --all-targets` runs us without it.
    let full = std::env::args().any(|arg| arg == "--bench");
    let plan = if full {
        let calls = std::env::var("UNIPI_BENCH_CALLS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1000);
        Plan {
            calls,
            warmup: 100,
            startup_rounds: 5,
        }
    } else {
        Plan {
            calls: 20,
            warmup: 5,
            startup_rounds: 1,
        }
    };
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot build the tokio runtime")
        .and_then(|runtime| runtime.block_on(run(plan)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("mcp bench: {err:#}");
            ExitCode::FAILURE
        }
    }
}

struct Plan {
    calls: usize,
    warmup: usize,
    startup_rounds: usize,
}

async fn run(plan: Plan) -> Result<()> {
    let bin = everything_bin()?;
    println!(
        "MCP start-up (server-everything {}), {} rounds",
        version(),
        plan.startup_rounds
    );
    for servers in [1, 5] {
        let mut rounds = Vec::new();
        for _ in 0..plan.startup_rounds {
            rounds.push(startup(&bin, servers).await?);
        }
        let shown: Vec<String> = rounds.iter().map(|d| ms(*d)).collect();
        rounds.sort();
        println!(
            "  {servers} server(s): median {} ms (rounds: {} ms)",
            ms(rounds[rounds.len() / 2]),
            shown.join(", ")
        );
    }

    println!(
        "\nMCP echo call, {} sequential calls after {} warm-up",
        plan.calls, plan.warmup
    );
    let direct = direct_calls(&bin, &plan).await?;
    let managed = manager_calls(&bin, &plan).await?;
    let bridged = bridged_calls(&bin, &plan).await?;
    println!(
        "  {:<16} {:>8} {:>8} {:>8} {:>8}",
        "path", "p50", "p90", "p99", "max"
    );
    for (name, samples) in [
        ("rmcp direct", &direct),
        ("McpManager", &managed),
        ("bridged", &bridged),
    ] {
        let stats = Stats::of(samples);
        println!(
            "  {name:<16} {:>8} {:>8} {:>8} {:>8}   (ms)",
            ms(stats.p50),
            ms(stats.p90),
            ms(stats.p99),
            ms(stats.max)
        );
    }
    let overhead = Stats::of(&managed)
        .p50
        .saturating_sub(Stats::of(&direct).p50);
    println!("  manager overhead at p50: {} ms", ms(overhead));
    let bridged_overhead = Stats::of(&bridged)
        .p50
        .saturating_sub(Stats::of(&direct).p50);
    println!(
        "  bridged overhead at p50: {} ms (target < {} ms)",
        ms(bridged_overhead),
        ms(BRIDGED_TARGET_P50)
    );
    Ok(())
}

/// From `start_all` until every one of `count` servers runs; then they are shut down.
async fn startup(bin: &Path, count: usize) -> Result<Duration> {
    let servers = (0..count)
        .map(|i| server(&format!("everything-{i}"), bin))
        .collect();
    let manager = McpManager::new(McpConfig {
        servers,
        settings: McpSettings::default(),
        errors: Vec::new(),
        notices: Vec::new(),
    });
    let started = Instant::now();
    manager.start_all();
    if !manager.wait_settled(Duration::from_secs(120)).await {
        bail!("servers did not settle");
    }
    let elapsed = started.elapsed();
    for snapshot in manager.snapshot() {
        if snapshot.status != ServerStatus::Running {
            bail!("{} did not start: {:?}", snapshot.name, snapshot.error);
        }
    }
    manager.shutdown().await;
    Ok(elapsed)
}

async fn direct_calls(bin: &Path, plan: &Plan) -> Result<Vec<Duration>> {
    // The server's "Starting…" banner on stderr would land in the middle of the table.
    let (transport, _) = TokioChildProcess::builder(tokio::process::Command::new(bin))
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let client = ().serve(transport).await.context("rmcp could not connect")?;
    let mut samples = Vec::with_capacity(plan.calls);
    for i in 0..plan.warmup + plan.calls {
        let arguments = json!({"message": format!("call {i}")});
        let params = CallToolRequestParams::new("echo")
            .with_arguments(arguments.as_object().cloned().unwrap_or_default());
        let started = Instant::now();
        let result = client.call_tool(params).await?;
        let elapsed = started.elapsed();
        if result.is_error == Some(true) {
            bail!("echo failed: {result:?}");
        }
        if i >= plan.warmup {
            samples.push(elapsed);
        }
    }
    client.cancel().await?;
    Ok(samples)
}

async fn manager_calls(bin: &Path, plan: &Plan) -> Result<Vec<Duration>> {
    let manager = McpManager::new(McpConfig {
        servers: vec![server("everything", bin)],
        settings: McpSettings::default(),
        errors: Vec::new(),
        notices: Vec::new(),
    });
    manager.start_all();
    if !manager.wait_settled(Duration::from_secs(120)).await {
        bail!("server-everything did not settle");
    }
    let mut samples = Vec::with_capacity(plan.calls);
    for i in 0..plan.warmup + plan.calls {
        let arguments = json!({"message": format!("call {i}")});
        let started = Instant::now();
        let outcome = manager
            .call_tool(
                "everything",
                "echo",
                arguments,
                None,
                Box::pin(std::future::pending()),
            )
            .await?;
        let elapsed = started.elapsed();
        if outcome.is_error {
            bail!("echo failed: {outcome:?}");
        }
        if i >= plan.warmup {
            samples.push(elapsed);
        }
    }
    manager.shutdown().await;
    Ok(samples)
}

fn server(name: &str, bin: &Path) -> ServerConfig {
    ServerConfig {
        name: name.to_owned(),
        source: PathBuf::from("bench"),
        transport: Transport::Stdio {
            command: bin.display().to_string(),
            args: Vec::new(),
            env: Default::default(),
            cwd: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
        },
        enabled: true,
        timeout: Duration::from_secs(60),
        startup_timeout: Duration::from_secs(60),
        enabled_tools: None,
        disabled_tools: Vec::new(),
        tool_naming: Default::default(),
    }
}

fn everything_bin() -> Result<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".test-deps/mcp/node_modules/.bin/mcp-server-everything");
    if !bin.exists() {
        bail!("{} is missing: run `scripts/test-deps.sh`", bin.display());
    }
    Ok(bin)
}

fn version() -> String {
    let versions = include_str!("../versions.env");
    versions
        .lines()
        .find_map(|line| line.strip_prefix("MCP_EVERYTHING_VERSION="))
        .unwrap_or("?")
        .to_owned()
}

/// The target for the bridged call's overhead over a direct rmcp call, at p50.
const BRIDGED_TARGET_P50: Duration = Duration::from_millis(3);

/// A bridged `echo`: a Pi-like client on the bridge socket sends `tool_call` for
/// `mcp__everything__echo`; the host runs it on the `mcp` module (`McpModule`), which calls the
/// shared `McpManager`, whose rmcp client calls the server; the answer goes back the same way.
/// Everything of the workbench's MCP path is in it; Pi's own dispatch and Node are not (see
/// `benches/bridge.rs` for the extension's share).
async fn bridged_calls(bin: &Path, plan: &Plan) -> Result<Vec<Duration>> {
    use std::sync::Arc;

    use unipi_tui::bridge::{BridgeHost, HostOptions, Registry};
    use unipi_tui::mcp::module::McpModule;

    let manager = McpManager::new(McpConfig {
        servers: vec![server("everything", bin)],
        settings: McpSettings::default(),
        errors: Vec::new(),
        notices: Vec::new(),
    });
    manager.start_all();
    let module = McpModule::new(manager.clone());
    let registry = Arc::new(Registry::new());
    registry.register(Arc::new(module.clone()))?;
    let (events, mut drain) = tokio::sync::mpsc::channel(256);
    tokio::spawn(async move { while drain.recv().await.is_some() {} });
    let host = BridgeHost::start_with(registry.clone(), events, HostOptions::default()).await?;
    module.attach(registry.clone(), host.clone());
    let tool = "mcp__everything__echo";
    let declared = async {
        while !registry.tool_names().iter().any(|(_, name)| name == tool) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(120), declared)
        .await
        .context("the echo tool was never declared")?;

    let mut client = BridgeClient::connect(&host, "bench-mcp").await?;
    let mut samples = Vec::with_capacity(plan.calls);
    for id in 0..plan.warmup + plan.calls {
        let message = format!("call {id}");
        let started = Instant::now();
        let result = client.call(id, tool, json!({"message": message})).await?;
        let elapsed = started.elapsed();
        if result["content"][0]["text"] != format!("Echo: {message}") {
            bail!("unexpected answer: {result}");
        }
        if id >= plan.warmup {
            samples.push(elapsed);
        }
    }
    drop(client);
    host.shutdown().await;
    manager.shutdown().await;
    Ok(samples)
}

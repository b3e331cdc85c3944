//! Bridge benchmark: the round trip of a bridged tool call, bridge → host → bridge, on this
//! machine. Two paths are timed over N sequential calls (after a warm-up):
//!
//! - **extension**: the real `bridge/extension.ts`, loaded by Node 24 (type stripping, no bundler)
//!   with a stub `pi` object, calls the `execute` of the tool it registered from the host's
//!   `welcome`. That is everything Pi adds on top of its own tool dispatch: JSON encoding in Node,
//!   the socket, the host's parse, a tokio task per call, the module, the answer back.
//! - **rust client**: a tokio client in this process speaking the protocol by hand, which shows the
//!   host's share without Node.
//!
//! The issue's target is a p50 under 2 ms. Figures are printed, never asserted (a timing
//! assertion flakes on a busy machine); they live in `docs/benchmarks.md`. Run with
//! `cargo bench --bench bridge` (`UNIPI_BENCH_CALLS` overrides N = 2000). Under
//! `cargo test --all-targets` (no `--bench` argument) it does a short smoke pass instead.
//!
//! Needs the Node in `.test-deps/node` (`scripts/test-deps.sh`).

mod support;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use futures_util::future::BoxFuture;
use serde_json::json;
use support::{BridgeClient, Stats, ms};
use tokio::sync::mpsc;
use unipi_tui::bridge::{
    AgentId, BridgeHost, HostOptions, Module, Registry, ToolCall, ToolError, ToolOutput, ToolSpec,
    extension_file,
};

/// The issue's target for the median round trip.
const TARGET_P50: Duration = Duration::from_millis(2);

fn main() -> ExitCode {
    // cargo passes `--bench` under `cargo bench`; `cargo test --all-targets` runs us without it.
    let full = std::env::args().any(|arg| arg == "--bench");
    let plan = if full {
        let calls = std::env::var("UNIPI_BENCH_CALLS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(2000);
        Plan { calls, warmup: 200 }
    } else {
        Plan {
            calls: 50,
            warmup: 10,
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
            eprintln!("bridge bench: {err:#}");
            ExitCode::FAILURE
        }
    }
}

#[derive(Clone, Copy)]
struct Plan {
    calls: usize,
    warmup: usize,
}

/// A module whose one tool answers with its `text` argument.
struct Echo;

impl Module for Echo {
    fn name(&self) -> &'static str {
        "bench"
    }

    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec::new("bench_echo", "Echo", "Echoes `text`").string_param("text", "text", true),
        ]
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let text = call.args["text"].as_str().unwrap_or_default().to_string();
        Box::pin(async move { Ok(ToolOutput::text(text)) })
    }
}

async fn run(plan: Plan) -> Result<()> {
    let dir = tempfile::Builder::new()
        .prefix("unipi-bridge-bench-")
        .tempdir()?;
    let registry = Arc::new(Registry::new());
    registry.register(Arc::new(Echo))?;
    let (tx, mut events) = mpsc::channel(1024);
    // The app side: drain whatever the extension reports.
    tokio::spawn(async move { while events.recv().await.is_some() {} });
    let host = BridgeHost::start_with(
        registry,
        tx,
        HostOptions {
            runtime_base: Some(dir.path().to_path_buf()),
            ..HostOptions::default()
        },
    )
    .await?;

    let extension = extension_rounds(&host, dir.path(), plan).await?;
    let rust = rust_client_rounds(&host, plan).await?;
    host.shutdown().await;

    println!(
        "bridge tool round trip: {} sequential calls after {} warm-up",
        plan.calls, plan.warmup
    );
    println!(
        "  {:<34} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "path", "p50", "p90", "p99", "max", "mean"
    );
    for (name, samples) in [
        ("extension (Node 24) → host → ext.", &extension),
        ("rust client → host → rust client", &rust),
    ] {
        let stats = Stats::of(samples);
        println!(
            "  {name:<34} {:>9} {:>9} {:>9} {:>9} {:>9}   (ms)",
            ms(stats.p50),
            ms(stats.p90),
            ms(stats.p99),
            ms(stats.max),
            ms(stats.mean)
        );
    }
    let p50 = Stats::of(&extension).p50;
    println!(
        "target: extension p50 < {} ms — {}",
        ms(TARGET_P50),
        if p50 < TARGET_P50 { "met" } else { "MISSED" }
    );
    Ok(())
}

/// The real extension under Node with a stub `pi`: each sample is one `execute` of the tool it
/// registered, timed inside Node.
async fn extension_rounds(host: &BridgeHost, dir: &Path, plan: Plan) -> Result<Vec<Duration>> {
    let node = node_binary()?;
    let extension = extension_file(&dir.join("cache"))?;
    let driver = dir.join("driver.mjs");
    std::fs::write(&driver, DRIVER)?;
    let env = host.register_agent(AgentId::new("bench-node"))?;
    let output = tokio::time::timeout(
        Duration::from_secs(300),
        tokio::process::Command::new(&node)
            .arg(&driver)
            .arg(&extension)
            .arg(plan.calls.to_string())
            .arg(plan.warmup.to_string())
            .envs(env)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .context("the Node driver did not finish within 300 s")?
    .with_context(|| format!("cannot run {}", node.display()))?;
    if !output.status.success() {
        bail!(
            "the Node driver failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let micros: Vec<f64> = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "the Node driver printed no samples: {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })?;
    if micros.len() != plan.calls {
        bail!("expected {} samples, got {}", plan.calls, micros.len());
    }
    Ok(micros
        .into_iter()
        .map(|us| Duration::from_secs_f64(us / 1e6))
        .collect())
}

/// Drives the host with a hand-written client in this process.
async fn rust_client_rounds(host: &BridgeHost, plan: Plan) -> Result<Vec<Duration>> {
    let mut client = BridgeClient::connect(host, "bench-rust").await?;
    let mut samples = Vec::with_capacity(plan.calls);
    for id in 0..(plan.warmup + plan.calls) {
        let started = Instant::now();
        let result = client.call(id, "bench_echo", json!({"text": "x"})).await?;
        let elapsed = started.elapsed();
        if result["content"][0]["text"] != "x" {
            bail!("unexpected answer: {result}");
        }
        if id >= plan.warmup {
            samples.push(elapsed);
        }
    }
    Ok(samples)
}

/// Loads the extension with a stub `pi`, starts a session (which connects and registers the
/// host's tools), then times sequential `execute` calls of `bench_echo`.
const DRIVER: &str = r#"
const [extensionPath, calls, warmup] = process.argv.slice(2);
const handlers = new Map();
const tools = new Map();
const pi = {
  on(name, handler) { if (!handlers.has(name)) handlers.set(name, []); handlers.get(name).push(handler); },
  registerTool(definition) { tools.set(definition.name, definition); },
  registerCommand() {},
  registerMessageRenderer() {},
  getAllTools() { return []; },
  getSessionName() { return undefined; },
  getThinkingLevel() { return "off"; },
};
const ctx = {
  hasUI: false,
  cwd: process.cwd(),
  ui: { notify() {}, setFooter() {} },
  sessionManager: { getSessionId: () => "bench", getSessionFile: () => undefined },
  getContextUsage: () => ({ tokens: 0, contextWindow: 128000, percent: 0 }),
};
const fire = async (name, event) => { for (const handler of handlers.get(name) ?? []) await handler(event, ctx); };
const extension = await import(extensionPath);
extension.default(pi);
await fire("session_start", { type: "session_start", reason: "startup" });
const tool = tools.get("bench_echo");
if (!tool) { console.error("the extension did not register bench_echo"); process.exit(2); }
const samples = [];
const total = Number(calls) + Number(warmup);
for (let i = 0; i < total; i++) {
  const started = process.hrtime.bigint();
  const result = await tool.execute(`call-${i}`, { text: "x" }, undefined, undefined, ctx);
  const elapsed = process.hrtime.bigint() - started;
  if (result.content[0].text !== "x") { console.error("wrong result", JSON.stringify(result)); process.exit(3); }
  if (i >= Number(warmup)) samples.push(Number(elapsed) / 1000);
}
await fire("session_shutdown", { type: "session_shutdown", reason: "quit" });
process.stdout.write(JSON.stringify(samples));
"#;

fn node_binary() -> Result<PathBuf> {
    let node = Path::new(env!("CARGO_MANIFEST_DIR")).join(".test-deps/node/bin/node");
    if !node.exists() {
        bail!(
            "{} is missing: run `scripts/test-deps.sh` (the benchmark loads the TypeScript \
             extension with Node 24's type stripping)",
            node.display()
        );
    }
    Ok(node)
}

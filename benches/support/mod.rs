//! What the benchmarks share: the full-or-smoke `main`, percentile statistics, and a Pi-like client
//! on the bridge socket (hello, then tool calls answered by `tool_result`). Each bench binary
//! compiles this module on its own and uses only part of it, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod pi;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use unipi_tui::bridge::{AgentId, BridgeHost};

/// A bench's `main`: `run(true)` under `cargo bench` (cargo passes `--bench`), `run(false)` — a
/// smoke pass that only checks the harness — under `cargo test --all-targets`. An error is
/// printed under the bench's `name` and fails the run.
pub fn bench_main(name: &str, run: impl FnOnce(bool) -> Result<()>) -> ExitCode {
    let full = std::env::args().any(|arg| arg == "--bench");
    if !full {
        eprintln!(
            "{name} bench: smoke run (checks the harness; figures mean nothing here): run \
             `cargo bench --bench {name}` for the real ones"
        );
    }
    match run(full) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{name} bench: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// `(variable, dir/sub)` for each `(variable, sub)`, every directory made: the environment that
/// keeps a bench's processes away from the user's own config, state and cache.
pub fn env_dirs(dir: &Path, subs: &[(&'static str, &str)]) -> Result<Vec<(&'static str, PathBuf)>> {
    subs.iter()
        .map(|(key, sub)| {
            let path = dir.join(sub);
            std::fs::create_dir_all(&path)
                .with_context(|| format!("failed to create {}", path.display()))?;
            Ok((*key, path))
        })
        .collect()
}

/// Percentiles, maximum and mean of a set of samples.
pub struct Stats {
    pub p50: Duration,
    pub p90: Duration,
    pub p99: Duration,
    pub max: Duration,
    pub mean: Duration,
}

impl Stats {
    pub fn of(samples: &[Duration]) -> Stats {
        let mut sorted = samples.to_vec();
        sorted.sort();
        let at = |q: f64| {
            let index = ((sorted.len() as f64 - 1.0) * q).round() as usize;
            sorted.get(index).copied().unwrap_or_default()
        };
        let total: Duration = sorted.iter().sum();
        Stats {
            p50: at(0.50),
            p90: at(0.90),
            p99: at(0.99),
            max: sorted.last().copied().unwrap_or_default(),
            mean: total / u32::try_from(sorted.len().max(1)).unwrap_or(u32::MAX),
        }
    }
}

/// Milliseconds with three decimals, without the unit.
pub fn ms(duration: Duration) -> String {
    format!("{:.3}", duration.as_secs_f64() * 1e3)
}

/// A bridge client authenticated as `agent`, the way the extension connects.
pub struct BridgeClient {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    line: String,
}

impl BridgeClient {
    /// Registers `agent` with `host`, connects, says hello and reads the welcome.
    pub async fn connect(host: &BridgeHost, agent: &str) -> Result<BridgeClient> {
        let env = host.register_agent(AgentId::new(agent))?;
        let token = env
            .iter()
            .find(|(key, _)| key == "UNIPI_TUI_TOKEN")
            .map(|(_, value)| value.clone())
            .context("no token")?;
        let stream = UnixStream::connect(host.socket_path()).await?;
        let (read, writer) = stream.into_split();
        let mut client = BridgeClient {
            reader: BufReader::new(read),
            writer,
            line: String::new(),
        };
        let hello = json!({"type": "hello", "token": token, "protocol": 1, "pi_version": "bench"});
        client.send(&hello).await?;
        let welcome = client.next().await?;
        if welcome["type"] != "welcome" {
            bail!("no welcome: {welcome}");
        }
        Ok(client)
    }

    /// Sends a `tool_call` and returns its `tool_result`, skipping any other line (declarations,
    /// events) that comes first.
    pub async fn call(&mut self, id: usize, tool: &str, args: Value) -> Result<Value> {
        let call =
            json!({"type": "tool_call", "id": id, "tool": tool, "call_id": "c", "args": args});
        self.send(&call).await?;
        loop {
            let message = self.next().await?;
            if message["type"] == "tool_result" && message["id"] == id {
                return Ok(message);
            }
        }
    }

    async fn send(&mut self, message: &Value) -> Result<()> {
        self.writer
            .write_all(format!("{message}\n").as_bytes())
            .await?;
        Ok(())
    }

    async fn next(&mut self) -> Result<Value> {
        self.line.clear();
        if self.reader.read_line(&mut self.line).await? == 0 {
            bail!("the host closed the connection");
        }
        serde_json::from_str(&self.line).with_context(|| format!("not JSON: {:?}", self.line))
    }
}

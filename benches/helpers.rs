//! Helper launch overhead: the time from starting a helper to its first event, through the
//! workbench's runner (`HelperRunner::start` → first progress from Pi's RPC stream, task sent on
//! stdin) against launching `pi --mode json -p` by hand (spawn → first stdout byte), both with the
//! pinned Pi 1.6.0 from `.test-deps` against the scripted model server. Figures are printed
//! (median and min of N runs), never asserted.
//!
//! `scripts/test-deps.sh && cargo bench --bench helpers` (N = 7); under `cargo test
//! --all-targets` (no `--bench`) it does one run of each as a smoke pass, or says why it cannot.

mod support;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use support::pi::{ScriptedPi, report};
use tokio::io::AsyncReadExt as _;
use unipi_tui::helpers::runner::HelperRunner;

fn main() -> ExitCode {
    let full = std::env::args().any(|arg| arg == "--bench");
    match tokio::runtime::Runtime::new()
        .context("runtime")
        .and_then(|rt| rt.block_on(run(if full { 7 } else { 1 })))
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("helpers bench failed: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(n: usize) -> Result<()> {
    let bench = ScriptedPi::start().await?;
    let (pi, dir, offline, env) = (&bench.pi, &bench.dir, &bench.offline, &bench.env);

    let mut by_hand = Vec::new();
    let mut runner = Vec::new();
    for i in 0..n {
        // By hand: pi --mode json -p, spawn → first stdout byte.
        let began = Instant::now();
        let mut child = tokio::process::Command::new(pi)
            .args(["--offline", "--no-session", "--mode", "json"])
            .args(&offline.pi_args)
            .args(["-p", "hi"])
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(dir.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let mut stdout = child.stdout.take().context("stdout")?;
        let mut byte = [0u8; 1];
        stdout.read_exact(&mut byte).await?;
        by_hand.push(began.elapsed());
        let _ = child.wait().await;

        // Through the runner: start → first progress from the event stream.
        let spec = bench.spec(&format!("run-{i}"))?;
        let began = Instant::now();
        let mut handle = HelperRunner::start(spec).await?;
        let mut progress = handle.progress();
        tokio::time::timeout(Duration::from_secs(60), progress.changed())
            .await
            .context("no event within 60 s")??;
        runner.push(began.elapsed());
        let _ = handle.wait().await;
    }
    report("pi --mode json -p (first byte)", &mut by_hand);
    report("HelperRunner (first event)", &mut runner);
    bench.shutdown().await;
    Ok(())
}

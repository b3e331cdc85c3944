//! Background-task capture benchmark: a task writes as fast as it can (`head -c 1G /dev/zero`,
//! then `yes | head -c 1G`) and the service captures it into its output file. Printed: the
//! throughput (the target is ≥ 200 MB/s) and this process's peak resident memory
//! before and after (VmHWM), which must not grow with the output: the output passes through the
//! workbench's copier (a pipe, the cap checked on every chunk) in one fixed buffer. Figures are
//! printed, never asserted.
//! `cargo bench --bench tasks`; under `cargo test --all-targets` (no `--bench`) it captures
//! 16 MiB as a smoke pass.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use unipi_tui::bridge::AgentId;
use unipi_tui::tasks::{RunRequest, TaskOrigin, TaskService, TaskSettings, TaskStatus};

/// The throughput target, in MB/s (10^6 bytes).
const TARGET_MB_S: f64 = 200.0;

fn main() -> ExitCode {
    let full = std::env::args().any(|arg| arg == "--bench");
    let size = if full { "1G" } else { "16M" };
    match tokio::runtime::Runtime::new()
        .context("runtime")
        .and_then(|rt| rt.block_on(run(size)))
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("tasks bench failed: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(size: &str) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let service = TaskService::new(TaskSettings {
        root_dir: dir.path().to_path_buf(),
        session: "bench".into(),
        shell: PathBuf::from("/bin/sh"),
        cwd: dir.path().to_path_buf(),
        max_output_bytes: 4 << 30,
        ..TaskSettings::from_env("bench", dir.path().to_path_buf(), None)
    })?;
    println!(
        "background-task capture ({size}), peak RSS before: {} KiB",
        peak_rss_kib()
    );
    for command in [
        format!("head -c {size} /dev/zero"),
        format!("yes | head -c {size}"),
    ] {
        let started = Instant::now();
        let task = service
            .start(RunRequest {
                name: "bench".into(),
                command: command.clone(),
                description: None,
                timeout_seconds: None,
                notify_on_completion: false,
                trigger_on_completion: false,
                is_agent: false,
                origin: TaskOrigin::User,
                agent: AgentId::main(),
            })
            .await?;
        let done = service
            .wait(&task.id, Duration::from_secs(300))
            .await
            .context("the task did not finish in 5 minutes")?;
        let elapsed = started.elapsed();
        if done.status != TaskStatus::Done {
            bail!("{command}: {:?} {:?}", done.status, done.error);
        }
        let mb_s = done.bytes_written as f64 / 1e6 / elapsed.as_secs_f64();
        println!(
            "  {command:<28} {:>6} MB in {:>7.1?} = {mb_s:>7.0} MB/s (target ≥ {TARGET_MB_S:.0}) {}",
            done.bytes_written / 1_000_000,
            elapsed,
            if mb_s >= TARGET_MB_S {
                "ok"
            } else {
                "BELOW TARGET"
            },
        );
        std::fs::remove_file(&done.output_path)?;
    }
    println!("peak RSS after: {} KiB", peak_rss_kib());
    Ok(())
}

/// This process's peak resident set (VmHWM), in KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmHWM:"))
                .and_then(|line| line.split_whitespace().nth(1))
                .and_then(|kib| kib.parse().ok())
        })
        .unwrap_or(0)
}

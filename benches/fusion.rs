//! Model fusion's warm pool: how long a helper takes to its first event started cold
//! (`HelperRunner::start`, which pays Node's and Pi's start-up) against served by a warm process
//! (`HelperRunner::start_warm` with a `Prewarmed` Pi started exactly as the pool starts one, and
//! left until it is idle), and what the pool costs in memory (the resident set of an idle warm
//! Pi's process group, from `/proc`, times the default pool size). The pinned Pi 1.6.0 from
//! `.test-deps` runs against the scripted model server. Figures are printed (median and min of
//! N runs), never asserted; the target is a warm first event under 150 ms.
//!
//! "First event" is the first record Pi prints after it has the task (the runner's first
//! progress update); "answer" is the run's end with the scripted reply. A warm process counts as
//! loaded once its group's CPU time stops growing for half a second (Pi then waits on stdin).
//!
//! `scripts/test-deps.sh && cargo bench --bench fusion` (N = 7; `UNIPI_BENCH_RUNS=n` for
//! another N); under `cargo test --all-targets` (no `--bench`) it does one run of each as a
//! smoke pass, or says why it cannot. Figures: `docs/benchmarks.md`.

mod support;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use support::pi::{ScriptedPi, report};
use unipi_tui::fusion::config::DEFAULT_POOL_SIZE;
use unipi_tui::helpers::runner::{HelperRunner, RunHandle};
use unipi_tui::helpers::warm::Prewarmed;

/// How long a warm process's CPU time must stay still for it to count as loaded.
const QUIET: Duration = Duration::from_millis(500);
/// The longest a warm process is given to load.
const LOAD_LIMIT: Duration = Duration::from_secs(30);

fn main() -> ExitCode {
    let full = std::env::args().any(|arg| arg == "--bench");
    let runs = std::env::var("UNIPI_BENCH_RUNS")
        .ok()
        .and_then(|runs| runs.parse::<usize>().ok())
        .filter(|runs| *runs > 0)
        .unwrap_or(7);
    match tokio::runtime::Runtime::new()
        .context("runtime")
        .and_then(|rt| rt.block_on(run(if full { runs } else { 1 })))
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("fusion bench failed: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The first event and the end of a started run.
async fn follow(began: Instant, mut handle: RunHandle) -> Result<(Duration, Duration)> {
    let mut progress = handle.progress();
    tokio::time::timeout(Duration::from_secs(60), progress.changed())
        .await
        .context("no event within 60 s")??;
    let first = began.elapsed();
    let outcome = handle.wait().await;
    if outcome.summary.final_text.trim() != "ok" {
        bail!("the run did not answer: {outcome:#?}");
    }
    Ok((first, began.elapsed()))
}

/// The fields after the command name in `/proc/<pid>/stat` of every process in group `pgid`
/// (`[0]` is the state, `[2]` the group, `[11]`/`[12]` user/system CPU ticks).
fn group_stats(pgid: i32) -> Vec<(u32, Vec<String>)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let rest = stat.rsplit_once(')')?.1;
            let fields: Vec<String> = rest.split_whitespace().map(str::to_owned).collect();
            (fields.get(2).map(String::as_str) == Some(pgid.to_string().as_str()))
                .then_some((pid, fields))
        })
        .collect()
}

/// CPU ticks used so far by group `pgid`.
fn group_cpu_ticks(pgid: i32) -> u64 {
    group_stats(pgid)
        .iter()
        .map(|(_, fields)| {
            let tick = |index: usize| fields.get(index).and_then(|f| f.parse::<u64>().ok());
            tick(11).unwrap_or(0) + tick(12).unwrap_or(0)
        })
        .sum()
}

/// Resident memory of every process in group `pgid`, in KiB.
fn group_rss_kib(pgid: i32) -> u64 {
    group_stats(pgid)
        .iter()
        .filter_map(|(pid, _)| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .sum()
}

/// Waits until group `pgid` has loaded: its CPU time still for [`QUIET`]; how long that took.
async fn until_idle(pgid: i32) -> Result<Duration> {
    let began = Instant::now();
    let mut last = group_cpu_ticks(pgid);
    let mut still_since = Instant::now();
    while still_since.elapsed() < QUIET {
        if began.elapsed() > LOAD_LIMIT {
            bail!("the warm Pi was still busy after {LOAD_LIMIT:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = group_cpu_ticks(pgid);
        if now != last {
            last = now;
            still_since = Instant::now();
        }
    }
    Ok(began.elapsed() - QUIET)
}

async fn run(n: usize) -> Result<()> {
    let bench = ScriptedPi::start().await?;
    let (mut cold_first, mut cold_end, mut warm_first, mut warm_end, mut rss, mut load) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    for i in 0..n {
        let began = Instant::now();
        let handle = HelperRunner::start(bench.spec(&format!("cold-{i}"))?).await?;
        let (first, end) = follow(began, handle).await?;
        cold_first.push(first);
        cold_end.push(end);

        let warm_spec = bench.spec(&format!("warm-{i}"))?;
        let warm = Prewarmed::spawn(&warm_spec)?;
        let group = warm.group().context("the warm process has a group")?;
        load.push(until_idle(group.raw()).await?);
        rss.push(group_rss_kib(group.raw()));
        let began = Instant::now();
        let handle = HelperRunner::start_warm(warm_spec, warm).await?;
        if handle.pid() != Some(group.raw().unsigned_abs()) {
            bail!("the warm process did not run the task");
        }
        let (first, end) = follow(began, handle).await?;
        warm_first.push(first);
        warm_end.push(end);
    }
    report("cold helper: first event", &mut cold_first);
    report("warm helper: first event", &mut warm_first);
    report("cold helper: answer", &mut cold_end);
    report("warm helper: answer", &mut warm_end);
    report("warm Pi: spawn until idle (loaded)", &mut load);
    rss.sort_unstable();
    let mib = |kib: u64| kib as f64 / 1024.0;
    let median = rss[rss.len() / 2];
    println!(
        "{:<36} median {:>7.1} MiB  max {:>7.1} MiB (n = {})",
        "idle warm Pi (resident, per process)",
        mib(median),
        mib(rss[rss.len() - 1]),
        rss.len()
    );
    println!(
        "{:<36} {:>7.1} MiB at the default size of {DEFAULT_POOL_SIZE}",
        "warm pool (resident, median)",
        mib(median) * DEFAULT_POOL_SIZE as f64
    );
    bench.shutdown().await;
    Ok(())
}

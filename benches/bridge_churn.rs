//! Bridge socket churn: memory of the host while connections are opened and closed as fast as
//! another process can, the way a misbehaving reconnect loop would. The clients are OS threads
//! with blocking sockets (not tasks of the host's runtime), so the host always has another
//! connection to accept, as it does when the loop runs in a process of its own.
//!
//! Two floods, each of N connections from 16 threads: connections closed without a word, and
//! connections whose `hello` carries a token the host never issued (refused with an error line).
//! Printed: the process's resident memory before, during (every tenth), right after and after two
//! idle seconds, and the most connection tasks the host held at once. Figures, no assertions;
//! they live in `docs/benchmarks.md`. Run with `cargo bench --bench bridge_churn`
//! (`UNIPI_BENCH_CONNECTIONS` overrides N = 200,000); under `cargo test --all-targets` it does a
//! short smoke pass.

mod support;

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use tokio::sync::mpsc;
use unipi_tui::bridge::{BridgeHost, HostOptions, Registry};

const CLIENTS: usize = 16;

fn main() -> ExitCode {
    support::bench_main("bridge_churn", |full| {
        let connections = if full {
            std::env::var("UNIPI_BENCH_CONNECTIONS")
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(200_000)
        } else {
            4_000
        };
        // The workbench's runtime: two workers.
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("cannot build the tokio runtime")?
            .block_on(run(connections))
    })
}

#[derive(Clone, Copy)]
enum Flood {
    /// Connect, close.
    Silent,
    /// Connect, say `hello` with a token nobody issued, read the refusal, close.
    BadToken,
}

async fn run(connections: usize) -> Result<()> {
    let dir = tempfile::Builder::new()
        .prefix("unipi-bridge-churn-")
        .tempdir()?;
    let (tx, mut events) = mpsc::channel(256);
    // The app side: drain whatever the host reports.
    tokio::spawn(async move { while events.recv().await.is_some() {} });
    let host = BridgeHost::start_with(
        Arc::new(Registry::new()),
        tx,
        HostOptions {
            runtime_base: Some(dir.path().to_path_buf()),
            ..HostOptions::default()
        },
    )
    .await?;
    println!("bridge socket churn: {connections} connections per flood from {CLIENTS} threads");
    println!("  start: RSS {} KiB", rss_kib());
    for (name, flood) in [
        ("closed at once", Flood::Silent),
        ("hello with a bad token", Flood::BadToken),
    ] {
        churn(&host, name, flood, connections).await?;
    }
    host.shutdown().await;
    Ok(())
}

async fn churn(host: &BridgeHost, name: &str, flood: Flood, connections: usize) -> Result<()> {
    let socket = host.socket_path().to_path_buf();
    let made = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (socket, made) = (socket.clone(), made.clone());
            std::thread::spawn(move || {
                while made.fetch_add(1, Ordering::Relaxed) < connections {
                    connect_once(&socket, flood);
                }
            })
        })
        .collect();
    let started = Instant::now();
    let (mut most_tasks, mut most_rss, mut next_report) = (0, 0, connections / 10);
    while !clients.iter().all(std::thread::JoinHandle::is_finished) {
        most_tasks = most_tasks.max(host.connection_tasks());
        most_rss = most_rss.max(rss_kib());
        let done = made.load(Ordering::Relaxed).min(connections);
        if done >= next_report {
            println!(
                "  {name}: {done:>8} connections, {:>5.1} s, RSS {} KiB, {} tasks",
                started.elapsed().as_secs_f64(),
                rss_kib(),
                host.connection_tasks()
            );
            next_report += connections / 10;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for client in clients {
        client
            .join()
            .map_err(|_| anyhow::anyhow!("a client thread panicked"))?;
    }
    let after = rss_kib();
    tokio::time::sleep(Duration::from_secs(2)).await;
    println!(
        "  {name}: done in {:.1} s; RSS right after {after} KiB, peak {most_rss} KiB, after 2 s \
         idle {} KiB; at most {most_tasks} connection tasks held",
        started.elapsed().as_secs_f64(),
        rss_kib()
    );
    Ok(())
}

fn connect_once(socket: &Path, flood: Flood) {
    // A refused or reset connection is part of a flood too: errors are ignored.
    let Ok(mut stream) = UnixStream::connect(socket) else {
        return;
    };
    if let Flood::BadToken = flood {
        let hello = format!(
            "{{\"type\":\"hello\",\"token\":\"{}\",\"protocol\":1}}\n",
            "0".repeat(64)
        );
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        if stream.write_all(hello.as_bytes()).is_ok() {
            let mut answer = Vec::new();
            let _ = stream.read_to_end(&mut answer);
        }
    }
}

/// This process's resident memory, in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

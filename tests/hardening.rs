//! Hardening, end to end with the real `unipi-tui`, the real Pi 1.6.0 and the scripted model:
//! nothing the workbench started outlives it, even `kill -9`, and the next start cleans what a
//! dead workbench left (task records, helper runs, runtime directories).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use support::demo::spawn_demo;
use support::pi::{PiLine, test_deps_dir};
use support::procs::{cmdline, processes_running, processes_with_env, wait_until, watchdog_of};
use support::sandbox::Sandbox;
use support::term::{OuterOptions, Session};

const START: Duration = Duration::from_secs(90);
const REPLY: Duration = Duration::from_secs(60);
/// The promise: every process the workbench started is gone this soon after its death.
const AFTER_DEATH: Duration = Duration::from_secs(2);

fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios/e2e.toml")
}

/// An MCP server's binary from `.test-deps`, or a failure naming the script that installs it.
fn mcp_bin(name: &str) -> PathBuf {
    let bin = test_deps_dir().join("mcp/node_modules/.bin").join(name);
    assert!(
        bin.exists(),
        "{} is missing; run `scripts/test-deps.sh` from the repository root",
        bin.display()
    );
    bin
}

/// The workbench in `demo` mode with the `everything` MCP server configured.
fn start_with_mcp(sandbox: &Sandbox) -> Session {
    let config = json!({"mcpServers": {"everything": {
        "command": mcp_bin("mcp-server-everything").display().to_string(),
        "args": [],
    }}});
    sandbox.write(
        &sandbox.home.join(".unipi/config/mcp.json"),
        &serde_json::to_string_pretty(&config).unwrap(),
    );
    let session = spawn_demo(
        PiLine::Current,
        &scenario(),
        sandbox,
        &[],
        &[],
        OuterOptions::default(),
    );
    session
        .wait_for("Pi's prompt with the scripted model", START, |s| {
            let text = s.contents();
            text.contains("scripted-e2e")
                && (text.contains("pi running") || text.contains("○ idle"))
        })
        .unwrap_or_else(|err| panic!("{err:#}\n{}", sandbox.log_tail(40)));
    session
}

/// Every live process that carries this sandbox's HOME: whatever the workbench started, and
/// what those started in turn (the watchdog carries no environment, so it is not among them).
fn sandbox_processes(sandbox: &Sandbox) -> Vec<u32> {
    let home = format!("HOME={}", sandbox.home.display());
    processes_with_env(&[home.as_str()])
}

fn describe(pids: &[u32]) -> String {
    pids.iter()
        .map(|pid| format!("{pid}: {}", cmdline(*pid)))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn after_kill_9_of_the_workbench_nothing_it_started_runs_within_2_seconds() {
    let sandbox = Sandbox::new();
    let mut session = start_with_mcp(&sandbox);
    let home = format!("HOME={}", sandbox.home.display());
    wait_until("the MCP server runs", START, || {
        sandbox_processes(&sandbox)
            .iter()
            .any(|pid| cmdline(*pid).contains("mcp-server-everything"))
    });
    // The model starts a task whose shell has a grandchild, and a helper whose tool call sleeps.
    session.type_text("start the crash set-up");
    session.send(b"\r");
    for needle in ["sleep 617", "sleep 618", "sleep 619"] {
        wait_until(&format!("`{needle}` runs"), REPLY, || {
            !processes_running(needle).is_empty()
        });
    }
    let helper_pis = processes_with_env(&["UNIPI_HELPER_DEPTH=1", home.as_str()]);
    assert!(!helper_pis.is_empty(), "the helper's Pi runs");
    let workbench = session.pid().unwrap();
    let watchdog = watchdog_of(workbench).expect("the workbench started its watchdog");
    let before = sandbox_processes(&sandbox);
    assert!(
        before.len() >= 7,
        "the workbench, Pi, the MCP server, the task's shell and two sleeps, the helper's Pi \
         and its tool call run:\n{}",
        describe(&before)
    );

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(workbench).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let killed_at = Instant::now();
    assert_ne!(session.wait_exit(REPLY).unwrap(), 0, "killed, not exited");
    let (gone, left) = loop {
        let mut left = sandbox_processes(&sandbox);
        left.extend(processes_running("sleep 61"));
        if left.is_empty() {
            break (true, left);
        }
        if killed_at.elapsed() > AFTER_DEATH {
            break (false, left);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        gone,
        "still running {AFTER_DEATH:?} after kill -9 of the workbench:\n{}\nlog:\n{}",
        describe(&left),
        sandbox.log_tail(30)
    );
    eprintln!(
        "{} processes gone {:?} after kill -9",
        before.len() - 1,
        killed_at.elapsed()
    );
    // The watchdog ends too, once its sweep is done, and says what it killed.
    wait_until("the watchdog exits", AFTER_DEATH, || {
        !support::procs::alive(watchdog)
    });
    assert!(
        sandbox.log().contains("watchdog: the workbench"),
        "{}",
        sandbox.log_tail(10)
    );
}

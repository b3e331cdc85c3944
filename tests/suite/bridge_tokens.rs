//! The bridge's tokens at the end of a headless run, end to end: the real `unipi-tui -p`, the
//! real Pi 1.6.0 and the scripted model, with model fusion on (so the warm pool starts sidekick
//! Pis that the end of the run stops). Every Pi the workbench started says `hello` with a token
//! that is still good: the log has no refused connection; and none of them is left running when
//! the run ends (the pool does not refill while the workbench stops).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::Path;
use std::time::Duration;

use support::pi::{PiLine, pi_install};
use support::procs;
use support::sandbox::Sandbox;
use unipi_tui::pi::offline::write_agent_dir;
use unipi_tui::scripted::Scenario;

const RUN: Duration = Duration::from_secs(120);

/// A Pi extension (in the agent directory, so every Pi loads it) that takes `ms` to load and
/// keeps Pi from acting on SIGTERM: a warm Pi stopped while it starts does what Pi does when its
/// stdin ends, it finishes starting (its bridge says `hello`) and then exits. Without it, whether
/// the stop lands before or after Pi's own SIGTERM handler is a matter of timing.
fn slow_and_deaf_to_sigterm(ms: u64) -> String {
    format!(
        "export default function (_pi: any) {{\n  process.removeAllListeners(\"SIGTERM\");\n  \
         process.on(\"SIGTERM\", () => {{}});\n  const until = Date.now() + {ms};\n  \
         while (Date.now() < until) {{}}\n}}\n"
    )
}

#[tokio::test]
async fn a_headless_run_that_stops_warm_pis_refuses_no_connection() {
    let pi = pi_install(PiLine::Current).unwrap_or_else(|err| panic!("{err:#}"));
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios/warm-stop.toml");
    let server = unipi_tui::scripted::start(Scenario::from_file(&scenario).unwrap())
        .await
        .unwrap();
    let sandbox = Sandbox::new();
    let agent_dir = sandbox.dir("agent");
    let agent = write_agent_dir(&agent_dir, &server.base_url(), &server.models()).unwrap();
    sandbox.write(
        &agent_dir.join("extensions/slow-start.ts"),
        &slow_and_deaf_to_sigterm(5000),
    );
    sandbox.write(
        &sandbox.home.join(".unipi/config/fusion.json"),
        r#"{"active": "pair", "warmPool": {"size": 2}, "presets": {"pair": {
            "primary": "unipi-scripted/scripted-big",
            "sidekick": "unipi-scripted/scripted-small"}}}"#,
    );
    let child = pi
        .workbench(&agent, &sandbox, &["-p", "hello"])
        .env("UNIPI_LOG", "debug")
        .spawn()
        .unwrap();
    let output = tokio::time::timeout(RUN, child.wait_with_output())
        .await
        .expect("unipi-tui did not finish in time")
        .unwrap();
    // Looked at the moment the workbench is gone, before its watchdog could clean up: nothing it
    // started is left (a warm pool refilled while the run ended left two Pis for the watchdog).
    let home = format!("HOME={}", sandbox.home.display());
    let left: Vec<(u32, String)> = procs::processes_with_env(&[&home])
        .into_iter()
        .map(|pid| (pid, procs::cmdline(pid)))
        .filter(|(_, cmdline)| !cmdline.contains(unipi_tui::sys::watchdog::SUBCOMMAND))
        .collect();
    let log = sandbox.log();
    assert!(left.is_empty(), "left running: {left:#?}\n{log}");
    assert!(output.status.success(), "{output:?}\n{log}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("MAIN-HELLO-REPLY"),
        "{output:?}"
    );
    // The run did start warm Pis and stop them at its end.
    assert!(log.contains("warm process for run"), "{log}");
    let refusals: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("refused a connection"))
        .collect();
    assert!(refusals.is_empty(), "{refusals:#?}\n{log}");
}

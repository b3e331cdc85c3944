//! Pi's extension cache and another local user, end to end: the real `unipi-tui`, the real Pi
//! (1.6.0, and 0.73.1 headless) and the scripted model, with a TMPDIR as shared as `/tmp`. Pi compiles extensions with
//! jiti into `$TMPDIR/jiti`; when the user `nobody` made that directory first (mode 0777) and
//! planted a "compiled" bridge at the name jiti uses, neither the main Pi nor a headless run may
//! run it or write anything there. Without anyone else's directory the cache is ours alone.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

mod support;

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use support::demo::{START, spawn_demo};
use support::pi::{PiLine, pi_install, test_deps_dir};
use support::sandbox::Sandbox;
use support::term::{OuterOptions, Session};
use support::workbench::{KITTY_CTRL_D, exit_pi};
use unipi_tui::pi::offline::write_agent_dir;
use unipi_tui::scripted::Scenario;

const RUN: Duration = Duration::from_secs(90);

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/scenarios/{name}.toml"))
}

/// A sandbox whose TMPDIR anyone may create entries in (mode 1777, like `/tmp`).
fn shared_tmp_sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    let set_mode = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    set_mode(sandbox.root(), 0o711);
    set_mode(&sandbox.tmp, 0o1777);
    sandbox
}

/// Runs `command args…` as the user `nobody` through `setpriv`; fails loudly when it cannot.
fn as_nobody(command: &str, args: &[&str]) {
    let status = std::process::Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            command,
        ])
        .args(args)
        .status()
        .unwrap_or_else(|err| {
            panic!("`setpriv` (util-linux) is needed to act as a second user: {err}")
        });
    assert!(status.success(), "setpriv … {command} {args:?}: {status}");
}

/// What jiti (Pi 1.6.0's own) writes for `extension` into an empty `$TMPDIR/jiti`: the cache
/// file's name and content, compiled in a directory of the test's own.
fn compiled_by_jiti(sandbox: &Sandbox, extension: &Path) -> (String, String) {
    let scratch = sandbox.dir("jiti-scratch");
    let jiti = test_deps_dir().join("pi-current/node_modules/jiti/lib/jiti.mjs");
    // As Pi's loader does: `createJiti(import.meta.url, {moduleCache: false})`, then
    // `jiti.import(path, {default: true})`.
    let driver = format!(
        "const {{ createJiti }} = await import({jiti:?});\n\
         const jiti = createJiti(import.meta.url, {{ moduleCache: false }});\n\
         await jiti.import({extension:?}, {{ default: true }});\n",
        jiti = jiti.display().to_string(),
        extension = extension.display().to_string(),
    );
    let driver_path = scratch.join("driver.mjs");
    std::fs::write(&driver_path, driver).unwrap();
    let output = std::process::Command::new(test_deps_dir().join("node/bin/node"))
        .arg(&driver_path)
        .env("TMPDIR", &scratch)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let mut files: Vec<PathBuf> = std::fs::read_dir(scratch.join("jiti"))
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .collect();
    assert_eq!(files.len(), 1, "jiti wrote {files:?}");
    let file = files.remove(0);
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    (name, std::fs::read_to_string(&file).unwrap())
}

/// The attack: `nobody` creates `$TMPDIR/jiti` (mode 0777) before the workbench starts and
/// puts there, at the name jiti gives the bridge's compiled file, the real compiled bridge with
/// one line in front that writes `marker`. Returns the planted file's name and content.
fn plant_compiled_bridge(sandbox: &Sandbox, marker: &Path) -> (String, String) {
    // Where the workbench writes its bridge: an identical copy there is used as it is.
    let extension =
        unipi_tui::bridge::extension_file(&sandbox.home.join(".cache/unipi-tui")).unwrap();
    let (name, compiled) = compiled_by_jiti(sandbox, &extension);
    let jiti_dir = sandbox.tmp.join("jiti");
    as_nobody("mkdir", &["-m", "0777", &jiti_dir.display().to_string()]);
    assert_eq!(std::fs::metadata(&jiti_dir).unwrap().uid(), 65534);
    let planted = format!(
        "require(\"node:fs\").writeFileSync({:?}, \"the planted file ran\");\n{compiled}",
        marker.display().to_string()
    );
    let path = jiti_dir.join(&name);
    std::fs::write(&path, &planted).unwrap();
    nix::unistd::chown(&path, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
    (name, planted)
}

/// `$TMPDIR/jiti` holds exactly the planted file, unchanged.
fn assert_untouched(sandbox: &Sandbox, planted: &(String, String), marker: &Path) {
    assert!(
        !marker.exists(),
        "the file planted in the other user's jiti directory ran:\n{}",
        sandbox.log_tail(30)
    );
    let jiti_dir = sandbox.tmp.join("jiti");
    let names: Vec<String> = std::fs::read_dir(&jiti_dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        std::slice::from_ref(&planted.0),
        "something was written there"
    );
    assert_eq!(
        std::fs::read_to_string(jiti_dir.join(&planted.0)).unwrap(),
        planted.1
    );
    let meta = std::fs::metadata(&jiti_dir).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o7777), (65534, 0o777));
}

/// The workbench in `demo` mode, once Pi's prompt shows with the bridge connected.
fn start_demo(sandbox: &Sandbox) -> Session {
    let session = spawn_demo(
        PiLine::Current,
        &scenario("e2e"),
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

/// Waits until the log says the main agent's bridge connected (its extension was loaded).
fn wait_for_bridge(sandbox: &Sandbox) {
    support::procs::wait_until("the main Pi's bridge to connect", START, || {
        sandbox.log().contains("agent `main` connected")
    });
}

#[test]
fn the_main_pi_neither_runs_nor_writes_the_other_users_cache() {
    let sandbox = shared_tmp_sandbox();
    let marker = sandbox.root().join("PLANTED-CODE-RAN");
    let planted = plant_compiled_bridge(&sandbox, &marker);

    let mut session = start_demo(&sandbox);
    wait_for_bridge(&sandbox);
    assert_untouched(&sandbox, &planted, &marker);
    // Said, naming the directory and whose it is.
    let log = sandbox.log();
    let jiti_dir = sandbox.tmp.join("jiti").display().to_string();
    assert!(
        log.contains(&format!("{jiti_dir} belongs to another user (uid 65534")),
        "{}",
        sandbox.log_tail(30)
    );
    assert_eq!(exit_pi(&mut session, KITTY_CTRL_D, RUN), 0);
    assert_untouched(&sandbox, &planted, &marker);
}

#[tokio::test]
async fn a_headless_run_neither_runs_nor_writes_the_other_users_cache() {
    headless_run_with_a_planted_bridge(PiLine::Current).await;
}

#[tokio::test]
async fn a_headless_run_of_the_legacy_pi_neither_runs_nor_writes_the_other_users_cache() {
    headless_run_with_a_planted_bridge(PiLine::Legacy).await;
}

async fn headless_run_with_a_planted_bridge(line: PiLine) {
    let sandbox = shared_tmp_sandbox();
    let marker = sandbox.root().join("PLANTED-CODE-RAN");
    let planted = plant_compiled_bridge(&sandbox, &marker);

    let output = headless_run(&sandbox, line, &["-p", "start a headless task"]).await;
    assert!(output.status.success(), "{output:?}\n{}", sandbox.log());
    // The bridge was loaded (the workbench's tool answered) and nothing planted ran.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("HEADLESS-TOOL-OK"), "{stdout}");
    assert_untouched(&sandbox, &planted, &marker);
}

#[tokio::test]
async fn without_anyone_elses_directory_the_cache_is_ours_alone() {
    let sandbox = shared_tmp_sandbox();
    let output = headless_run(&sandbox, PiLine::Current, &["-p", "hello"]).await;
    assert!(output.status.success(), "{output:?}\n{}", sandbox.log());
    let jiti_dir = sandbox.tmp.join("jiti");
    let meta = std::fs::symlink_metadata(&jiti_dir).unwrap();
    assert!(meta.is_dir());
    assert_eq!(
        (meta.uid(), meta.mode() & 0o7777),
        (nix::unistd::geteuid().as_raw(), 0o700)
    );
    // The bridge was compiled into it: the cache works, privately.
    let names: Vec<String> = std::fs::read_dir(&jiti_dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().any(|name| name.contains("unipi-bridge")),
        "{names:?}"
    );
}

/// `unipi-tui --pi-bin <line's Pi> <args>` without a terminal, against the scripted model of
/// the headless scenario, in the sandbox.
async fn headless_run(sandbox: &Sandbox, line: PiLine, args: &[&str]) -> std::process::Output {
    let pi = pi_install(line).unwrap_or_else(|err| panic!("{err:#}"));
    let server = unipi_tui::scripted::start(Scenario::from_file(&scenario("headless")).unwrap())
        .await
        .unwrap();
    let agent =
        write_agent_dir(&sandbox.dir("agent"), &server.base_url(), &server.models()).unwrap();
    let mut path = std::env::var("PATH").unwrap_or_default();
    if let Some(node) = &pi.node_bin_dir {
        path = format!("{}:{path}", node.display());
    }
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_unipi-tui"))
        .current_dir(&sandbox.project)
        .env("PATH", path)
        .envs(sandbox.env())
        .envs(agent.env.iter().map(|(k, v)| (k, v)))
        .arg("--pi-bin")
        .arg(&pi.bin)
        .args(&agent.pi_args)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    tokio::time::timeout(RUN, child.wait_with_output())
        .await
        .expect("unipi-tui did not finish in time")
        .unwrap()
}

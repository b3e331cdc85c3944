//! Pi's caches of compiled code and another local user, end to end: the real `unipi-tui`, the
//! real Pi (1.6.0, and 0.73.1 headless) and the scripted model, with a TMPDIR as shared as `/tmp`.
//! Pi compiles extensions with jiti into `$TMPDIR/jiti`, and Pi 1.6.0 has Node keep V8's code
//! cache in `$TMPDIR/node-compile-cache`. When the user `nobody` made those directories first
//! (mode 0777) and planted what jiti and Node would read there, neither the main Pi nor a headless
//! run may read or run it, or write anything there. Without anyone else's directories the caches
//! are ours alone.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::fs::FileTimes;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use support::demo::{START, spawn_demo};
use support::nobody;
use support::pi::{PiLine, pi_install, test_deps_dir};
use support::procs::{children, has_env};
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
    nobody::share_tmp(&sandbox);
    sandbox
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
    nobody::mkdir(&jiti_dir, "0777");
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

/// What Node writes into an empty `$TMPDIR/node-compile-cache` for Pi 1.6.0 (`pi --version`,
/// run by the test in a directory of its own): the directory Node names after its version and
/// our uid, and the cache files in it (V8 checks them only against hashes anyone can compute).
fn node_cache_of_pi(sandbox: &Sandbox) -> (String, Vec<(String, Vec<u8>)>) {
    let pi = pi_install(PiLine::Current).unwrap_or_else(|err| panic!("{err:#}"));
    let scratch = sandbox.dir("node-cache-scratch");
    let node = pi
        .node_bin_dir
        .as_ref()
        .expect("Pi 1.6.0 runs on the test's Node");
    let path = format!(
        "{}:{}",
        node.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = std::process::Command::new(&pi.bin)
        .arg("--version")
        .env("PATH", path)
        .env("HOME", &scratch)
        .env("TMPDIR", &scratch)
        .env_remove("NODE_COMPILE_CACHE")
        .env_remove("NODE_DISABLE_COMPILE_CACHE")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let entries = |dir: &Path| -> Vec<PathBuf> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|entry| entry.path())
            .collect();
        entries.sort();
        entries
    };
    let tags = entries(&scratch.join("node-compile-cache"));
    assert_eq!(tags.len(), 1, "Node wrote {tags:?}");
    let files: Vec<(String, Vec<u8>)> = entries(&tags[0])
        .iter()
        .map(|file| {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(file).unwrap())
        })
        .collect();
    assert!(!files.is_empty(), "Node cached nothing for Pi");
    let tag = tags[0].file_name().unwrap().to_string_lossy().into_owned();
    (tag, files)
}

/// A time long past, given to the planted files as their last access: on a file system that
/// records reads (`relatime`: an access time older than the change time), any read moves it.
const LONG_AGO: Duration = Duration::from_secs(978_307_200);

/// Sets `path`'s last access to [`LONG_AGO`], leaving its modification time.
fn set_accessed_long_ago(path: &Path) {
    std::fs::File::open(path)
        .unwrap()
        .set_times(FileTimes::new().set_accessed(SystemTime::UNIX_EPOCH + LONG_AGO))
        .unwrap();
}

fn accessed(path: &Path) -> SystemTime {
    std::fs::metadata(path).unwrap().accessed().unwrap()
}

/// What `nobody` planted in `$TMPDIR/node-compile-cache`.
struct PlantedNodeCache {
    tag: String,
    files: Vec<(String, Vec<u8>)>,
}

/// The attack on Node's cache: `nobody` creates `$TMPDIR/node-compile-cache` (mode 0777) before
/// the workbench starts and in it the directory Node names for us, holding the cache files Node
/// would read for Pi 1.6.0, all theirs, their access times set back so that a read shows. (That
/// this file system records reads is checked first, so the check can fail.)
fn plant_node_cache(sandbox: &Sandbox) -> PlantedNodeCache {
    let probe = sandbox.tmp.join("atime-probe");
    std::fs::write(&probe, "probe").unwrap();
    set_accessed_long_ago(&probe);
    std::fs::read(&probe).unwrap();
    assert_ne!(
        accessed(&probe),
        SystemTime::UNIX_EPOCH + LONG_AGO,
        "this file system does not record reads (noatime?): the test cannot see one"
    );
    std::fs::remove_file(&probe).unwrap();

    let (tag, files) = node_cache_of_pi(sandbox);
    let root = sandbox.tmp.join("node-compile-cache");
    let tag_dir = root.join(&tag);
    for dir in [&root, &tag_dir] {
        nobody::mkdir(dir, "0777");
    }
    let theirs = Some(nix::unistd::Uid::from_raw(nobody::UID));
    for (name, content) in &files {
        let path = tag_dir.join(name);
        std::fs::write(&path, content).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        nix::unistd::chown(&path, theirs, None).unwrap();
        set_accessed_long_ago(&path);
    }
    PlantedNodeCache { tag, files }
}

/// `$TMPDIR/node-compile-cache` is exactly as `nobody` planted it: the same directories and
/// files, theirs, with the same modes and contents, and not one file read.
fn assert_node_cache_untouched(sandbox: &Sandbox, planted: &PlantedNodeCache) {
    let names = |dir: &Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let owner_and_mode = |path: &Path| {
        let meta = std::fs::symlink_metadata(path).unwrap();
        (meta.uid(), meta.mode() & 0o7777)
    };
    let root = sandbox.tmp.join("node-compile-cache");
    let tag_dir = root.join(&planted.tag);
    assert_eq!(
        names(&root),
        std::slice::from_ref(&planted.tag),
        "something was written there"
    );
    for dir in [&root, &tag_dir] {
        assert_eq!(owner_and_mode(dir), (65534, 0o777), "{}", dir.display());
    }
    let planted_names: Vec<String> = planted.files.iter().map(|(name, _)| name.clone()).collect();
    assert_eq!(
        names(&tag_dir),
        planted_names,
        "something was written there"
    );
    // Access times before the contents: reading them here is a read too.
    for (name, _) in &planted.files {
        let path = tag_dir.join(name);
        assert_eq!(
            accessed(&path),
            SystemTime::UNIX_EPOCH + LONG_AGO,
            "Node read {} from the other user's directory",
            path.display()
        );
        assert_eq!(owner_and_mode(&path), (65534, 0o644), "{}", path.display());
    }
    for (name, content) in &planted.files {
        let path = tag_dir.join(name);
        assert!(std::fs::read(&path).unwrap() == *content, "{name} changed");
        // Set back again, for the next look.
        set_accessed_long_ago(&path);
    }
}

/// The Pis the workbench `workbench` runs (its children whose program is Node: Pi names its
/// process `pi`) have Node's compile cache turned off in their environment.
fn assert_pis_run_without_nodes_cache(workbench: u32) {
    let runs_node = |pid: &u32| {
        std::fs::read_link(format!("/proc/{pid}/exe"))
            .is_ok_and(|exe| exe.file_name().is_some_and(|name| name == "node"))
    };
    let pis: Vec<u32> = children(workbench).into_iter().filter(runs_node).collect();
    assert!(!pis.is_empty(), "no Pi among the workbench's children");
    for pid in &pis {
        assert!(
            has_env(*pid, &["NODE_DISABLE_COMPILE_CACHE=1"]),
            "Pi ({pid}) may use Node's cache in the other user's directory"
        );
    }
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
    support::wait::eventually("the main Pi's bridge to connect", START, || {
        sandbox.log().contains("agent `main` connected")
    });
}

#[test]
fn the_main_pi_neither_runs_nor_writes_the_other_users_caches() {
    let sandbox = shared_tmp_sandbox();
    let marker = sandbox.root().join("PLANTED-CODE-RAN");
    let planted = plant_compiled_bridge(&sandbox, &marker);
    let planted_node = plant_node_cache(&sandbox);

    let mut session = start_demo(&sandbox);
    wait_for_bridge(&sandbox);
    assert_untouched(&sandbox, &planted, &marker);
    assert_node_cache_untouched(&sandbox, &planted_node);
    assert_pis_run_without_nodes_cache(session.pid().unwrap());
    // Said in the start-up box, and in the log naming each directory and whose it is.
    for notice in [
        "Pi compiles its extensions without a cache",
        "Node compiles Pi without its code cache",
    ] {
        session.wait_for_text(notice, START).unwrap();
    }
    let log = sandbox.log();
    for name in ["jiti", "node-compile-cache"] {
        let dir = sandbox.tmp.join(name).display().to_string();
        assert!(
            log.contains(&format!("{dir} belongs to another user (uid 65534")),
            "{name}: {}",
            sandbox.log_tail(30)
        );
    }
    // Node writes its cache when Pi exits.
    assert_eq!(exit_pi(&mut session, KITTY_CTRL_D, RUN), 0);
    assert_untouched(&sandbox, &planted, &marker);
    assert_node_cache_untouched(&sandbox, &planted_node);
}

#[tokio::test]
async fn a_headless_run_neither_runs_nor_writes_the_other_users_caches() {
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
    // Pi 0.73.1 does not turn Node's cache on.
    let planted_node = (line == PiLine::Current).then(|| plant_node_cache(&sandbox));

    let output = headless_run(&sandbox, line, &["-p", "start a headless task"]).await;
    assert!(output.status.success(), "{output:?}\n{}", sandbox.log());
    // The bridge was loaded (the workbench's tool answered) and nothing planted ran.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("HEADLESS-TOOL-OK"), "{stdout}");
    assert_untouched(&sandbox, &planted, &marker);
    if let Some(planted_node) = &planted_node {
        assert_node_cache_untouched(&sandbox, planted_node);
    }
}

#[tokio::test]
async fn without_anyone_elses_directories_the_caches_are_ours_alone() {
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
    // Node's too: ours alone, and Pi's code cached in it (in the directory Node names after its
    // version and our uid).
    let node_dir = sandbox.tmp.join("node-compile-cache");
    let meta = std::fs::symlink_metadata(&node_dir).unwrap();
    assert!(meta.is_dir());
    assert_eq!(
        (meta.uid(), meta.mode() & 0o7777),
        (nix::unistd::geteuid().as_raw(), 0o700)
    );
    let cached: Vec<PathBuf> = std::fs::read_dir(&node_dir)
        .unwrap()
        .flatten()
        .flat_map(|tag| std::fs::read_dir(tag.path()).unwrap().flatten())
        .map(|entry| entry.path())
        .collect();
    assert!(
        !cached.is_empty(),
        "Node cached nothing in {}",
        node_dir.display()
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
    let child = pi.workbench(&agent, sandbox, args).spawn().unwrap();
    tokio::time::timeout(RUN, child.wait_with_output())
        .await
        .expect("unipi-tui did not finish in time")
        .unwrap()
}

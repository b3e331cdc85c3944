//! Hardening, end to end with the real `unipi-tui`, the real Pi 1.6.0 and the scripted model:
//! nothing the workbench started outlives it, even `kill -9`, and the next start cleans what a
//! dead workbench left (task records, helper runs, runtime directories).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use support::demo::spawn_demo;
use support::nobody;
use support::pi::{PiLine, mcp_bin};
use support::procs::{cmdline, processes_running, processes_with_env, watchdog_of};
use support::sandbox::Sandbox;
use support::term::{OuterOptions, Session};
use support::wait::{eventually, eventually_or};
use support::workbench::{KITTY_CTRL_D, exit_pi};

const START: Duration = Duration::from_secs(90);
const REPLY: Duration = Duration::from_secs(60);
/// The promise: every process the workbench started is gone this soon after its death.
const AFTER_DEATH: Duration = Duration::from_secs(2);

fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios/e2e.toml")
}

/// The workbench in `demo` mode, once Pi's prompt shows.
fn start(sandbox: &Sandbox) -> Session {
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

/// Types `prompt`, submits it and waits for `expect` on the screen.
fn ask(session: &Session, sandbox: &Sandbox, prompt: &str, expect: &str) {
    session.type_text(prompt);
    session.send(b"\r");
    session.wait_for_text(expect, REPLY).unwrap_or_else(|err| {
        panic!(
            "{err:#}\n{}\n{}",
            session.screen_text(),
            sandbox.log_tail(40)
        )
    });
}

/// The `status.json` of a helper run directory.
fn run_status(run: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(run.join("status.json")).unwrap()).unwrap()
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
    start(sandbox)
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
fn after_kill_9_nothing_it_started_runs_within_2_seconds_and_the_next_start_cleans_up() {
    let sandbox = Sandbox::new();
    let mut session = start_with_mcp(&sandbox);
    let home = format!("HOME={}", sandbox.home.display());
    eventually("the MCP server runs", START, || {
        sandbox_processes(&sandbox)
            .iter()
            .any(|pid| cmdline(*pid).contains("mcp-server-everything"))
    });
    // The model starts a task whose shell has a grandchild, and a helper whose tool call sleeps.
    session.type_text("start the crash set-up");
    session.send(b"\r");
    for needle in ["sleep 617", "sleep 618", "sleep 619"] {
        eventually(format!("`{needle}` runs"), REPLY, || {
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
    let left = || {
        let mut left = sandbox_processes(&sandbox);
        left.extend(processes_running("sleep 61"));
        left
    };
    eventually_or(
        format!("every process to end within {AFTER_DEATH:?} of kill -9 of the workbench"),
        AFTER_DEATH.saturating_sub(killed_at.elapsed()),
        || left().is_empty(),
        || {
            format!(
                "still running:\n{}\nlog:\n{}",
                describe(&left()),
                sandbox.log_tail(30)
            )
        },
    );
    eprintln!(
        "{} processes gone {:?} after kill -9",
        before.len() - 1,
        killed_at.elapsed()
    );
    // The watchdog ends too, once its sweep is done, and says what it killed.
    eventually("the watchdog exits", AFTER_DEATH, || {
        !support::procs::alive(watchdog)
    });
    assert!(
        sandbox.log().contains("watchdog: the workbench"),
        "{}",
        sandbox.log_tail(10)
    );

    // What the dead workbench left: its bridge and demo directories, a task record and a
    // helper run that say `running`.
    let runtime = sandbox.runtime_root();
    let owned_dirs = |pid: u32| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&runtime)
            .unwrap()
            .flatten()
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| {
                name.starts_with(&format!("bridge-{pid}-"))
                    || name.starts_with(&format!("demo-{pid}-"))
            })
            .collect();
        names.sort();
        names
    };
    let left = owned_dirs(workbench);
    assert!(
        left.len() == 2 && left[0].starts_with("bridge-") && left[1].starts_with("demo-"),
        "the dead workbench's bridge and demo directories: {left:?}"
    );
    let task_records = || -> Vec<serde_json::Value> {
        std::fs::read_dir(runtime.join("tasks"))
            .unwrap()
            .flatten()
            .flat_map(|dir| std::fs::read_dir(dir.path()).unwrap().flatten())
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .map(|path| serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap())
            .collect()
    };
    let records = task_records();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["status"], "running");
    let runs = sandbox.helper_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(run_status(&runs[0])["status"], "running");

    // The next start settles all of it, and the model reads the helper run's fate.
    let mut next = start(&sandbox);
    assert_eq!(
        owned_dirs(workbench),
        Vec::<String>::new(),
        "the stale bridge and demo directories are removed"
    );
    let record = &task_records()[0];
    assert_eq!(record["status"], "stopped", "{record}");
    let error = record["error"].as_str().unwrap();
    assert!(
        error.contains(&format!("(pid {workbench}) ended without stopping it")),
        "{error}"
    );
    let status = run_status(&runs[0]);
    assert_eq!(status["status"], "failed", "{status}");
    let id = runs[0].file_name().unwrap().to_string_lossy().into_owned();
    ask(
        &next,
        &sandbox,
        &format!("read helper run {id}"),
        "GET-ORPHAN-OK",
    );
    assert_eq!(exit_pi(&mut next, KITTY_CTRL_D, REPLY), 0);
}

#[test]
fn a_helper_run_ends_with_a_final_state_on_ctrl_d_and_the_next_session_reads_and_resumes_it() {
    let sandbox = Sandbox::new();
    let mut first = start(&sandbox);
    ask(
        &first,
        &sandbox,
        "start a sleeping helper",
        "BGHELPER-STARTED",
    );
    eventually("the helper's tool call runs", REPLY, || {
        !processes_running("sleep 314").is_empty()
    });
    assert_eq!(exit_pi(&mut first, KITTY_CTRL_D, REPLY), 0);
    let runs = sandbox.helper_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let status = run_status(&runs[0]);
    assert_eq!(status["status"], "stopped", "{status}");
    assert_eq!(
        status["error"],
        unipi_tui::helpers::runner::STOPPED_AT_EXIT,
        "{status}"
    );

    // The next session: `get` reads the run's final state, `resume` continues its session.
    let mut second = start(&sandbox);
    let id = runs[0].file_name().unwrap().to_string_lossy().into_owned();
    ask(
        &second,
        &sandbox,
        &format!("read helper run {id}"),
        "GET-STOPPED-AT-EXIT-OK",
    );
    ask(
        &second,
        &sandbox,
        &format!("resume helper run {id}"),
        "RESUME-ACROSS-SESSIONS-OK",
    );
    assert_eq!(exit_pi(&mut second, KITTY_CTRL_D, REPLY), 0);
}

#[test]
fn a_runtime_directory_another_user_made_first_is_refused_and_tasks_still_work() {
    use std::os::unix::fs::MetadataExt as _;
    let sandbox = Sandbox::new();
    // TMPDIR as shared as /tmp: anyone may create entries in it.
    nobody::share_tmp(&sandbox);
    // Another local user creates the workbench's usual private directory before it starts,
    // and the shared task directory of earlier versions.
    let usual = sandbox.runtime_root();
    let old_shared = sandbox.tmp.join("unipi-bg-tasks");
    for dir in [&usual, &old_shared] {
        nobody::mkdir(dir, "0777");
    }

    let mut session = start(&sandbox);
    // Said at start, in words that name the directory and why.
    let log = sandbox.log();
    assert!(
        log.contains(&format!(
            "{} belongs to another user (uid 65534",
            usual.display()
        )),
        "{}",
        sandbox.log_tail(30)
    );
    // Tasks work, in a fresh private directory; the notification carries the real output.
    ask(&session, &sandbox, "start a background task", "BG-STARTED");
    session
        .wait_for_text("BG-WOKEN", REPLY)
        .unwrap_or_else(|err| panic!("{err:#}\n{}", session.screen_text()));
    for dir in [&usual, &old_shared] {
        assert_eq!(
            std::fs::read_dir(dir).unwrap().count(),
            0,
            "something of the workbench's went into the other user's {}",
            dir.display()
        );
    }
    let fresh: Vec<PathBuf> = std::fs::read_dir(&sandbox.tmp)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!(
                    "{}-",
                    usual.file_name().unwrap().to_string_lossy()
                ))
        })
        .collect();
    assert_eq!(fresh.len(), 1, "{fresh:?}");
    let meta = std::fs::metadata(&fresh[0]).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o700);
    assert_eq!(meta.uid(), nix::unistd::geteuid().as_raw());
    assert!(fresh[0].join("tasks").is_dir(), "the task went there");
    assert_eq!(exit_pi(&mut session, KITTY_CTRL_D, REPLY), 0);
}

#[test]
fn another_user_can_read_neither_the_session_database_nor_the_logs() {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let sandbox = Sandbox::new();
    let set_mode = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    let mode = |path: &Path| std::fs::metadata(path).unwrap().mode() & 0o777;
    // A machine where the other user may walk into HOME (0755, as many distributions make it),
    // and what an older version left there: open directories, a readable log and database.
    set_mode(sandbox.root(), 0o711);
    set_mode(&sandbox.home, 0o755);
    let logs = sandbox.log_path().parent().unwrap().to_path_buf();
    let db_dir = sandbox.home.join(".unipi/db");
    let old_db = db_dir.join("0123456789abcdef.sqlite");
    for (dir, file) in [(&logs, sandbox.log_path()), (&db_dir, old_db.clone())] {
        std::fs::create_dir_all(dir).unwrap();
        set_mode(dir, 0o755);
        std::fs::write(&file, "what was said before\n").unwrap();
        set_mode(&file, 0o644);
        assert!(nobody::can_read(&file), "the check can see a readable file");
    }

    let mut session = start(&sandbox);
    ask(&session, &sandbox, "hello there", "SCRIPTED-REPLY");
    // While it runs: the project's database with its write-ahead log and shared memory.
    let wal = |db: &Path| PathBuf::from(format!("{}-wal", db.display()));
    eventually("the project's database and its WAL", REPLY, || {
        std::fs::read_dir(&db_dir).unwrap().flatten().any(|entry| {
            let path = entry.path();
            path != old_db
                && path.extension().is_some_and(|ext| ext == "sqlite")
                && wal(&path).exists()
        })
    });
    let mut files: Vec<PathBuf> = std::fs::read_dir(&db_dir)
        .unwrap()
        .chain(std::fs::read_dir(&logs).unwrap())
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    for suffix in ["-wal", "-shm"] {
        assert!(
            files
                .iter()
                .any(|path| path.to_string_lossy().ends_with(suffix)),
            "no {suffix} in {files:?}"
        );
    }
    assert!(files.contains(&sandbox.log_path()) && files.contains(&old_db));
    for dir in [&logs, &db_dir] {
        assert_eq!(mode(dir), 0o700, "{}", dir.display());
    }
    for file in &files {
        assert_eq!(mode(file), 0o600, "{}", file.display());
        assert!(!nobody::can_read(file), "nobody read {}", file.display());
    }
    // Even were the directories opened again, the files alone keep the other user out.
    for dir in [&logs, &db_dir] {
        set_mode(dir, 0o755);
    }
    for file in &files {
        assert!(!nobody::can_read(file), "nobody read {}", file.display());
    }
    assert_eq!(exit_pi(&mut session, KITTY_CTRL_D, REPLY), 0);
    // A run that started no task leaves no task directory behind.
    let tasks = sandbox.runtime_root().join("tasks");
    let left: Vec<PathBuf> = std::fs::read_dir(&tasks)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .collect();
    assert!(left.is_empty(), "left in {}: {left:?}", tasks.display());
}

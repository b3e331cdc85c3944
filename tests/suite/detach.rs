//! Detachable sessions, end to end on this machine: the real `unipi-tui` (session process,
//! workbench, clients), the real Pi 1.6.0 and the scripted model, every terminal a PTY the test
//! reads like a terminal does. The same over a real SSH connection is `tests/suite/detach_ssh.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::io::BufRead as _;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use support::demo::{spawn_workbench, workbench_command};
use support::detach::{
    EndSessions, KITTY_CTRL_D, KITTY_DETACH, OTHER_TERMINAL, assert_workbench_modes, attach, bin,
    footer_on_last_row, ls, ls_line, reply_at_size, row, scenario, session_log_tail, session_pid,
    sessions_dir, unipi, wait_all_gone, wait_for_ls,
};
use support::nobody;
use support::ntfy::NtfyServer;
use support::pi::PiLine;
use support::procs::{alive, processes_running};
use support::sandbox::Sandbox;
use support::term::{OuterModes, OuterOptions, Session};
use support::wait::eventually;
use support::workbench::settled;

const START: Duration = Duration::from_secs(90);
const REPLY: Duration = Duration::from_secs(60);
/// Everything of an ended session is gone this soon.
const GONE: Duration = Duration::from_secs(5);

/// `unipi-tui --detachable name demo --scenario detach.toml` in a terminal, once Pi's prompt
/// shows.
fn start(sandbox: &Sandbox, name: &str, outer: OuterOptions) -> Session {
    let scenario = scenario().display().to_string();
    let session = spawn_workbench(
        PiLine::Current,
        &["--detachable", name, "demo", "--scenario", &scenario],
        &[],
        sandbox,
        &[],
        outer,
    );
    wait_for_prompt(&session, sandbox);
    session
}

fn wait_for_prompt(session: &Session, sandbox: &Sandbox) {
    session
        .wait_for("Pi's prompt with the scripted model", START, |s| {
            let text = s.contents();
            text.contains("scripted-detach")
                && (text.contains("pi running") || text.contains("○ idle"))
        })
        .unwrap_or_else(|err| {
            panic!(
                "{err:#}\nworkbench log:\n{}\nsession log:\n{}",
                sandbox.log_tail(30),
                session_log_tail(sandbox, 30)
            )
        });
}

#[test]
fn detach_key_then_attach_elsewhere_shows_the_turn_that_finished_meanwhile_at_the_new_size() {
    let sandbox = Sandbox::new();
    let _end = EndSessions(&sandbox);
    let mut first = start(&sandbox, "work", OuterOptions::default());
    assert_workbench_modes(&first.modes(), true);
    // A turn in flight: a background task and a slow bash call.
    first.type_text("detach test");
    first.send(b"\r");
    eventually("the bash call runs", REPLY, || {
        !processes_running("sleep 3.31").is_empty()
    });
    // The key detaches from under an overlay too (the help, here).
    first.send(b"\x1bOP");
    first.wait_for_text("unipi-tui keys", REPLY).unwrap();
    first.send(KITTY_DETACH);
    assert_eq!(
        first.wait_exit(REPLY).unwrap(),
        0,
        "a detach is not an error"
    );
    assert!(
        first
            .screen_text()
            .contains("[detached from session work; `unipi-tui attach work` re-attaches]"),
        "{}",
        first.screen_text()
    );
    assert_eq!(first.modes(), OuterModes::restored());
    let line = ls_line(&sandbox, "work").expect("ls lists the session");
    assert!(
        line.contains("working") && line.contains(" no "),
        "the turn runs on, nobody attached: {line}"
    );
    assert!(
        line.contains(&sandbox.project.display().to_string()),
        "{line}"
    );
    // It finishes while nobody is attached.
    wait_for_ls(&sandbox, "work", &["idle", "no"], REPLY);
    assert!(
        !processes_running("sleep 731").is_empty(),
        "the task runs on"
    );
    eventually("the helper's tool call runs on", REPLY, || {
        !processes_running("sleep 733").is_empty()
    });

    // Another terminal: no kitty protocol, another size. It sees the reply, drawn at its size,
    // and gets the workbench's modes for its kind of keyboard.
    let second = attach(&sandbox, "work", OTHER_TERMINAL);
    // The help is still open, as it was left; Esc closes it.
    second.wait_for_text("unipi-tui keys", REPLY).unwrap();
    second.send(b"\x1b");
    second
        .wait_for("the reply, at 120x40", REPLY, |s| {
            reply_at_size(s) && !s.contents().contains("unipi-tui keys")
        })
        .unwrap();
    assert_workbench_modes(&second.modes(), false);
    wait_for_ls(&sandbox, "work", &["idle", "yes"], REPLY);
    // SIGWINCH reaches the workbench through the session: the pane follows the new size.
    second.resize(35, 110).unwrap();
    second
        .wait_for("the footer on row 35, Pi's rules 110 wide", REPLY, |s| {
            footer_on_last_row(s)
                && (0..34).any(|r| row(s, r).chars().filter(|c| *c == '─').count() == 110)
        })
        .unwrap();

    // A third terminal takes over: the second is told, and given back as it was.
    let mut third = attach(&sandbox, "work", OuterOptions::default());
    let mut second = second;
    assert_eq!(second.wait_exit(REPLY).unwrap(), 0);
    assert!(
        second
            .screen_text()
            .contains("[session work was attached from another terminal; this one is detached]"),
        "{}",
        second.screen_text()
    );
    assert_eq!(second.modes(), OuterModes::restored());
    third
        .wait_for("the reply on the third terminal", REPLY, reply_at_size)
        .unwrap();
    assert_workbench_modes(&third.modes(), true);

    // Quitting Pi ends the session: the client leaves with Pi's exit code, the terminal
    // restored and Pi's transcript on it; nothing of the session is left.
    third.wait_for("Pi settled", REPLY, settled).unwrap();
    third.send(KITTY_CTRL_D);
    assert_eq!(third.wait_exit(REPLY).unwrap(), 0);
    assert_eq!(third.modes(), OuterModes::restored());
    assert!(
        third.screen_text().contains("DETACH-REPLY"),
        "the transcript: {}",
        third.screen_text()
    );
    wait_all_gone(&sandbox, GONE);
    assert!(processes_running("sleep 731").is_empty());
    assert!(processes_running("sleep 733").is_empty());
    assert_eq!(
        std::fs::read_dir(sessions_dir(&sandbox)).unwrap().count(),
        0
    );
    assert_eq!(
        ls(&sandbox),
        "No sessions. Start one with `unipi-tui --detachable NAME`.\n"
    );
}

#[test]
fn a_killed_session_process_leaves_nothing_and_never_blocks_its_name() {
    let sandbox = Sandbox::new();
    let _end = EndSessions(&sandbox);
    let mut first = start(&sandbox, "st", OuterOptions::default());
    let pid = session_pid(&sandbox, "st");
    // A name no session has: the error lists the ones there are.
    let missing = unipi(&sandbox, &["attach", "nope"]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr),
        "unipi-tui: no session is named \"nope\"; the sessions are: st\n"
    );
    // The same name twice: refused, with what to do instead.
    let mut twice = Session::spawn(
        &bin(),
        &["--detachable", "st", "demo"],
        &sandbox.env(),
        &sandbox.project,
        OuterOptions::default(),
    )
    .unwrap();
    assert_eq!(twice.wait_exit(REPLY).unwrap(), 1);
    assert!(
        twice.screen_text().contains(
            "a session named \"st\" is running already: `unipi-tui attach st` attaches to it"
        ),
        "{}",
        twice.screen_text()
    );

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // The client notices, gives the terminal back and says so.
    assert_eq!(first.wait_exit(REPLY).unwrap(), 1);
    assert_eq!(first.modes(), OuterModes::restored());
    assert!(
        first.screen_text().contains("unipi-tui: lost session st"),
        "{}",
        first.screen_text()
    );
    // Its watchdog takes everything it started down with it.
    wait_all_gone(&sandbox, GONE);
    assert!(sessions_dir(&sandbox).join("st").exists(), "left behind");

    // The name is free again: the dead session's directory is cleaned, not in the way.
    let mut second = start(&sandbox, "st", OuterOptions::default());
    let listed = ls(&sandbox);
    let lines: Vec<&str> = listed.lines().filter(|l| l.starts_with("st ")).collect();
    assert_eq!(lines.len(), 1, "{listed}");
    let new_pid = session_pid(&sandbox, "st");
    assert_ne!(new_pid, pid);
    assert!(lines[0].contains(&new_pid.to_string()), "{listed}");

    // `kill` ends it cleanly; the attached client hears why and leaves with the exit code.
    let killed = unipi(&sandbox, &["kill", "st"]);
    assert!(killed.status.success(), "{killed:?}");
    assert_eq!(
        String::from_utf8_lossy(&killed.stdout),
        "Session st ended (its workbench hung up).\n"
    );
    assert_eq!(second.wait_exit(REPLY).unwrap(), 129);
    assert_eq!(second.modes(), OuterModes::restored());
    assert!(
        second
            .screen_text()
            .contains("session st was ended by `unipi-tui kill`"),
        "{}",
        second.screen_text()
    );
    wait_all_gone(&sandbox, GONE);
    // A process in the middle of exiting has no environment left but is not a zombie yet.
    eventually("the session process gone", GONE, || !alive(new_pid));
    assert_eq!(
        std::fs::read_dir(sessions_dir(&sandbox)).unwrap().count(),
        0
    );
    let again = unipi(&sandbox, &["kill", "st"]);
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&again.stderr),
        "unipi-tui: no session is named \"st\"; no session runs (start one with `unipi-tui \
         --detachable NAME`)\n"
    );
}

/// A session process started directly (`__session`), running `sh -c script` instead of the
/// workbench; returns once it listens.
fn bare_session(sandbox: &Sandbox, name: &str, script: &str) -> Child {
    let mut child = Command::new(bin())
        .args(["__session", name, "debug", "sh", "-c", script])
        .envs(sandbox.env())
        .current_dir(&sandbox.project)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "ready\n", "{}", session_log_tail(sandbox, 20));
    child
}

#[test]
fn the_relay_passes_every_byte_both_ways_unchanged() {
    let sandbox = Sandbox::new();
    let _end = EndSessions(&sandbox);
    let received = sandbox.tmp.join("received");
    let mut sent: Vec<u8> = (0..=255u8).collect();
    sent.extend_from_slice(b"\x1b[200~a pasted\nblock\x1b[201~");
    sent.extend_from_slice(b"\x1b[97;5u\x1b[13;2u\x1b[57441;2u\x1b[100;7u");
    let script = format!(
        "stty raw -echo; printf 'READY\\r\\n'; head -c {} > '{}'; printf 'ECHO:'; cat '{}'; \
         printf ':DONE'; exec cat",
        sent.len(),
        received.display(),
        received.display()
    );
    let mut session = bare_session(&sandbox, "bytes", &script);
    let mut client = attach(&sandbox, "bytes", OuterOptions::default());
    client.wait_for_text("READY", REPLY).unwrap();
    for piece in sent.chunks(5) {
        client.send(piece);
    }
    eventually("the program got every byte", REPLY, || {
        std::fs::metadata(&received).is_ok_and(|meta| meta.len() == sent.len() as u64)
    });
    assert_eq!(std::fs::read(&received).unwrap(), sent, "client → program");
    let mut echoed = b"ECHO:".to_vec();
    echoed.extend_from_slice(&sent);
    echoed.extend_from_slice(b":DONE");
    eventually("the echo reached the terminal", REPLY, || {
        client
            .raw_output()
            .windows(echoed.len())
            .any(|w| w == echoed)
    });
    let killed = unipi(&sandbox, &["kill", "bytes"]);
    assert!(killed.status.success(), "{killed:?}");
    // Said in words: the program died of the SIGHUP `kill` sent it.
    assert_eq!(
        String::from_utf8_lossy(&killed.stdout),
        "Session bytes ended (its workbench hung up).\n"
    );
    assert_eq!(client.wait_exit(REPLY).unwrap(), 129);
    assert_eq!(client.modes(), OuterModes::restored());
    session.wait().unwrap();
}

/// Runs `node -e script socket` as the user `nobody`; returns what it printed.
fn as_nobody_connect(socket: &Path) -> String {
    let script = "const s = require('net').connect(process.argv[1]); let got = Buffer.alloc(0); \
                  s.on('data', (d) => { got = Buffer.concat([got, d]); }); \
                  s.on('error', (e) => { console.log('ERROR ' + e.code); }); \
                  s.on('close', () => { console.log('GOT ' + got.toString('latin1')); });";
    nobody::output("node", &["-e", script, &socket.display().to_string()])
}

#[test]
fn another_user_can_neither_reach_nor_use_a_session_socket() {
    let sandbox = Sandbox::new();
    let _end = EndSessions(&sandbox);
    // Let the second user walk down to TMPDIR, as on a real machine (/tmp is open to all).
    for dir in [sandbox.root(), sandbox.tmp.as_path()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711)).unwrap();
    }
    let mut session = bare_session(&sandbox, "mine", "exec cat");
    let sessions = sessions_dir(&sandbox);
    let dir = sessions.join("mine");
    let socket = dir.join("socket");
    let me = nix::unistd::geteuid().as_raw();
    for (path, mode) in [(&sessions, 0o700), (&dir, 0o700), (&socket, 0o600)] {
        let meta = std::fs::symlink_metadata(path).unwrap();
        assert_eq!(meta.mode() & 0o777, mode, "{}", path.display());
        assert_eq!(meta.uid(), me, "{}", path.display());
    }
    std::fs::set_permissions(
        sandbox.runtime_root(),
        std::fs::Permissions::from_mode(0o711),
    )
    .unwrap();
    // The directories keep the other user out…
    assert_eq!(as_nobody_connect(&socket).trim(), "ERROR EACCES\nGOT");
    // …and with them opened, the session itself refuses them (SO_PEERCRED), and goes on.
    for (path, mode) in [(&sessions, 0o711), (&dir, 0o711), (&socket, 0o777)] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let answer = as_nobody_connect(&socket);
    assert!(
        answer.contains(&format!(
            "refused: uid 65534 is not the owner of this session (uid {me})"
        )),
        "{answer}"
    );
    assert!(
        session_log_tail(&sandbox, 20).contains("refused client pid"),
        "{}",
        session_log_tail(&sandbox, 20)
    );
    assert!(ls(&sandbox).contains("mine "), "the session goes on");
    let killed = unipi(&sandbox, &["kill", "mine"]);
    assert!(killed.status.success(), "{killed:?}");
    session.wait().unwrap();
}

#[test]
fn the_client_gives_the_terminal_back_on_every_signal_a_panic_and_a_lost_terminal() {
    let sandbox = Sandbox::new();
    let _end = EndSessions(&sandbox);
    let mut session = bare_session(&sandbox, "modes", "stty raw -echo; exec cat");
    // The program's output sets the modes a workbench sets (`cat` echoes what is typed).
    let set_modes = b"\x1b[?1049h\x1b[?1000h\x1b[?1006h\x1b[?2004h\x1b[?1004h\x1b[?25l\x1b[>1uSET";
    let with_modes = |extra_env: &[(&str, String)]| {
        let mut env = sandbox.env();
        env.extend(extra_env.iter().cloned());
        let client = Session::spawn(
            &bin(),
            &["attach", "modes"],
            &env,
            &sandbox.project,
            OuterOptions::default(),
        )
        .unwrap();
        wait_for_ls(&sandbox, "modes", &["yes"], REPLY);
        client.send(set_modes);
        eventually("the modes are set", REPLY, || {
            let modes = client.modes();
            modes.alternate_screen && modes.kitty_stack_depth == 1 && modes.focus_reporting
        });
        client
    };
    let signal = |client: &Session, signal| {
        let pid = i32::try_from(client.pid().unwrap()).unwrap();
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).unwrap();
    };
    for (sig, code) in [
        (nix::sys::signal::Signal::SIGTERM, 143),
        (nix::sys::signal::Signal::SIGHUP, 129),
        (nix::sys::signal::Signal::SIGINT, 130),
        (nix::sys::signal::Signal::SIGQUIT, 131),
    ] {
        let mut client = with_modes(&[]);
        signal(&client, sig);
        assert_eq!(client.wait_exit(REPLY).unwrap(), code, "{sig}");
        assert_eq!(client.modes(), OuterModes::restored(), "{sig}");
        wait_for_ls(&sandbox, "modes", &["no"], REPLY);
    }
    let mut client = with_modes(&[("UNIPI_TUI_TEST_PANIC_ON_KEY", "1".to_owned())]);
    client.send(b"!");
    assert_eq!(client.wait_exit(REPLY).unwrap(), 101, "a panic");
    assert_eq!(client.modes(), OuterModes::restored());
    let told = String::from_utf8_lossy(&client.raw_output()).into_owned();
    let restored_at = told.find("\x1b[?1049l").expect("the alternate screen left");
    assert!(
        told[restored_at..].contains("test panic requested"),
        "the panic is told after the restore: {told:?}"
    );
    // The terminal itself goes (its window closed): the client leaves, the session stays.
    let mut client = with_modes(&[]);
    let pid = client.pid().unwrap();
    client.hang_up();
    eventually("the client leaves with its terminal", REPLY, || !alive(pid));
    wait_for_ls(&sandbox, "modes", &["no"], REPLY);
    let killed = unipi(&sandbox, &["kill", "modes"]);
    assert!(killed.status.success(), "{killed:?}");
    session.wait().unwrap();
}

#[test]
fn while_nobody_is_attached_the_agents_question_reaches_ntfy_at_once() {
    let sandbox = Sandbox::new();
    let _end = EndSessions(&sandbox);
    let ntfy = NtfyServer::start();
    // Only ntfy, and a silence after typing of an hour: were the user taken to be at the
    // keyboard (they typed the prompt a moment ago), the question would wait that hour.
    let write = |path: &Path, value: serde_json::Value| {
        sandbox.write(path, &serde_json::to_string_pretty(&value).unwrap());
    };
    write(
        &sandbox.home.join(".unipi/config/notify/ntfy.json"),
        serde_json::json!({"enabled": true, "serverUrl": ntfy.url, "topic": "away"}),
    );
    write(
        &sandbox.home.join(".unipi/config/notify/config.json"),
        serde_json::json!({
            "native": {"enabled": false},
            "terminal": {"enabled": false},
            "silenceAfterInputSeconds": 3600,
            "events": {"agent_end": {"enabled": false, "platforms": []}},
        }),
    );
    let mut first = start(&sandbox, "away", OuterOptions::default());
    first.type_text("ask me while away");
    first.send(b"\r");
    eventually("the turn runs", REPLY, || {
        !processes_running("sleep 2.47").is_empty()
    });
    first.send(KITTY_DETACH);
    assert_eq!(first.wait_exit(REPLY).unwrap(), 0);

    eventually("the question reached ntfy", REPLY, || {
        !ntfy.received().is_empty()
    });
    let (_, _, body) = &ntfy.received()[0];
    assert_eq!(body["message"], "Agent asks: Deploy to production now?");
    assert_eq!(body["priority"], 5);
    wait_for_ls(&sandbox, "away", &["waiting for input", "no"], REPLY);

    // Back at a terminal: the question waits there, and the answer goes to the agent.
    let mut back = attach(&sandbox, "away", OuterOptions::default());
    back.wait_for_text("Deploy to production now?", REPLY)
        .unwrap();
    back.send(b"\r");
    back.wait_for_text("AWAY-ANSWER: deploying", REPLY).unwrap();
    assert_eq!(ntfy.received().len(), 1, "one alert for one question");
    back.wait_for("Pi settled", REPLY, settled).unwrap();

    // A question already on screen when the terminal leaves goes out at once too, though the
    // user typed a moment ago (it would otherwise wait out the hour of silence).
    back.type_text("ask me before I go");
    back.send(b"\r");
    back.wait_for_text("Roll back the release?", REPLY).unwrap();
    back.send(KITTY_DETACH);
    assert_eq!(back.wait_exit(REPLY).unwrap(), 0);
    eventually("the open question reached ntfy", REPLY, || {
        ntfy.received().len() >= 2
    });
    assert_eq!(
        ntfy.received()[1].2["message"],
        "Agent asks: Roll back the release?"
    );
    let mut last = attach(&sandbox, "away", OuterOptions::default());
    last.wait_for_text("Roll back the release?", REPLY).unwrap();
    last.send(b"\r");
    last.wait_for_text("AWAY-ANSWER: rolling back", REPLY)
        .unwrap();
    last.wait_for("Pi settled", REPLY, settled).unwrap();
    assert_eq!(ntfy.received().len(), 2, "one alert for each question");
    last.send(KITTY_CTRL_D);
    assert_eq!(last.wait_exit(REPLY).unwrap(), 0);
    wait_all_gone(&sandbox, GONE);
}

#[test]
fn with_detach_enabled_in_the_config_every_run_is_a_session_named_after_its_folder() {
    let sandbox = Sandbox::new();
    let _end = EndSessions(&sandbox);
    sandbox.write(
        &sandbox.home.join(".unipi/config/workbench.json"),
        r#"{"detach": {"enabled": true}}"#,
    );
    let scenario = scenario().display().to_string();
    let plain = || {
        let session = spawn_workbench(
            PiLine::Current,
            &["demo", "--scenario", &scenario],
            &[],
            &sandbox,
            &[],
            OuterOptions::default(),
        );
        wait_for_prompt(&session, &sandbox);
        session
    };
    // The sandbox's project folder is called `project`; a second run there gets `project-2`.
    let mut first = plain();
    wait_for_ls(&sandbox, "project", &["yes"], REPLY);
    first.send(KITTY_DETACH);
    assert_eq!(first.wait_exit(REPLY).unwrap(), 0);
    let mut second = plain();
    wait_for_ls(&sandbox, "project-2", &["yes"], REPLY);
    wait_for_ls(&sandbox, "project", &["no"], REPLY);
    second.wait_for("Pi settled", REPLY, settled).unwrap();
    second.send(KITTY_CTRL_D);
    assert_eq!(second.wait_exit(REPLY).unwrap(), 0);
    assert!(ls_line(&sandbox, "project-2").is_none(), "{}", ls(&sandbox));
    let killed = unipi(&sandbox, &["kill", "project"]);
    assert!(killed.status.success(), "{killed:?}");
    wait_all_gone(&sandbox, GONE);
    // Print mode stays plain, config or not: Pi's own output, no session.
    let print = workbench_command(
        PiLine::Current,
        &["demo", "--scenario", &scenario],
        &["-p", "hello"],
        &sandbox,
        &[],
    );
    let printed = Command::new(&print.program)
        .args(&print.args)
        .envs(print.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&sandbox.project)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&printed.stdout).contains("SCRIPTED-REPLY"),
        "{printed:?}"
    );
    assert_eq!(
        ls(&sandbox),
        "No sessions. Start one with `unipi-tui --detachable NAME`.\n"
    );
}

/// The `$TMPDIR/unipi-<uid>-*` directories: fallback runtime roots.
fn fallback_roots(sandbox: &support::sandbox::Sandbox) -> Vec<std::path::PathBuf> {
    let stem = format!(
        "{}-",
        sandbox
            .runtime_root()
            .file_name()
            .unwrap()
            .to_string_lossy()
    );
    std::fs::read_dir(&sandbox.tmp)
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&stem))
        .map(|entry| entry.path())
        .collect()
}

#[test]
fn another_users_runtime_directory_blocks_no_session_and_each_try_leaves_nothing_new() {
    let sandbox = Sandbox::new();
    let _end = EndSessions(&sandbox);
    // TMPDIR as shared as /tmp, and another user made the usual private directory first.
    nobody::share_tmp(&sandbox);
    let usual = sandbox.runtime_root();
    nobody::mkdir(&usual, "0777");

    // `ls` works, and says where the sessions are and how to choose the place.
    let listed = unipi(&sandbox, &["ls"]);
    assert!(listed.status.success(), "{listed:?}");
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout),
        "No sessions. Start one with `unipi-tui --detachable NAME`.\n"
    );
    let note = String::from_utf8_lossy(&listed.stderr).into_owned();
    let fallbacks = fallback_roots(&sandbox);
    assert_eq!(fallbacks.len(), 1, "{fallbacks:?}");
    let fallback = &fallbacks[0];
    let record = sandbox.home.join(".local/state/unipi-tui/runtime-dir");
    for words in [
        format!("{} belongs to another user (uid 65534", usual.display()),
        format!(
            "kept in the private directory {} instead",
            fallback.display()
        ),
        format!("recorded in {}", record.display()),
        "set XDG_RUNTIME_DIR to a directory of yours".to_owned(),
    ] {
        assert!(note.contains(&words), "{words:?} in {note}");
    }
    assert_eq!(
        std::fs::read_to_string(&record).unwrap(),
        format!("{}\n", fallback.display())
    );

    // A session starts there; `ls`, `attach` and `kill` find it.
    let mut first = start(&sandbox, "blocked", OuterOptions::default());
    assert!(fallback.join("sessions/blocked/socket").exists());
    // Its workbench says so at start, in the start-up box.
    first
        .wait_for("the runtime directory in the start-up box", REPLY, |s| {
            let words = screen_words(s);
            words.contains("Start-up problems")
                && words.contains(&format!("{} belongs to another user", usual.display()))
                && words.contains("set XDG_RUNTIME_DIR to a directory of yours")
        })
        .unwrap_or_else(|err| panic!("{err:#}\n{}", first.screen_text()));
    wait_for_ls(&sandbox, "blocked", &["yes"], REPLY);
    first.send(KITTY_DETACH);
    assert_eq!(first.wait_exit(REPLY).unwrap(), 0);
    wait_for_ls(&sandbox, "blocked", &["no"], REPLY);
    let mut again = attach(&sandbox, "blocked", OTHER_TERMINAL);
    again
        .wait_for("the workbench again", REPLY, footer_on_last_row)
        .unwrap_or_else(|err| panic!("{err:#}\n{}", again.screen_text()));
    let killed = unipi(&sandbox, &["kill", "blocked"]);
    assert!(killed.status.success(), "{killed:?}");
    assert_eq!(again.wait_exit(REPLY).unwrap(), 129);
    wait_all_gone(&sandbox, GONE);

    // However many tries: one private fallback, nothing in the other user's directory.
    for _ in 0..3 {
        assert!(unipi(&sandbox, &["ls"]).status.success());
        assert_eq!(unipi(&sandbox, &["attach", "gone"]).status.code(), Some(1));
    }
    assert_eq!(fallback_roots(&sandbox), fallbacks);
    assert_eq!(std::fs::read_dir(&usual).unwrap().count(), 0);
    let meta = std::fs::metadata(fallback).unwrap();
    assert_eq!(
        (meta.mode() & 0o777, meta.uid()),
        (0o700, nix::unistd::geteuid().as_raw())
    );

    // An XDG_RUNTIME_DIR of another user's is refused, and said so.
    let theirs = sandbox.tmp.join("their-runtime-dir");
    nobody::mkdir(&theirs, "0700");
    let listed = Command::new(bin())
        .arg("ls")
        .envs(sandbox.env())
        .env("XDG_RUNTIME_DIR", &theirs)
        .current_dir(&sandbox.project)
        .output()
        .unwrap();
    assert!(listed.status.success(), "{listed:?}");
    let note = String::from_utf8_lossy(&listed.stderr).into_owned();
    assert!(
        note.contains(&format!(
            "XDG_RUNTIME_DIR ({0}) is not used: {0} belongs to another user (uid 65534",
            theirs.display()
        )),
        "{note}"
    );
    assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0);
}

/// The screen's words, box borders and bullets taken out and runs of blanks made one, so a
/// message the start-up box wrapped reads as one line.
fn screen_words(screen: &vt100::Screen) -> String {
    screen
        .contents()
        .replace(['│', '•'], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn bad_detach_settings_are_shown_in_the_start_up_box_and_logged() {
    let sandbox = Sandbox::new();
    let _end = EndSessions(&sandbox);
    let config = sandbox.home.join(".unipi/config/workbench.json");
    let scenario = scenario().display().to_string();
    let plain = || {
        let session = spawn_workbench(
            PiLine::Current,
            &["demo", "--scenario", &scenario],
            &[],
            &sandbox,
            &[],
            OuterOptions::default(),
        );
        session
            .wait_for_text("Start-up problems", START)
            .unwrap_or_else(|err| panic!("{err:#}\n{}", session.screen_text()));
        session
    };
    let shown_and_logged = |session: &Session, expected: &[&str]| {
        for message in expected {
            let line = format!("{}:{message}", config.display());
            session
                .wait_for(&format!("{line} in the box"), REPLY, |s| {
                    screen_words(s).contains(&line)
                })
                .unwrap_or_else(|err| panic!("{err:#}\n{}", session.screen_text()));
            eventually(format!("{line} in the log"), REPLY, || {
                sandbox
                    .log()
                    .lines()
                    .any(|l| l.contains("WARN") && l.contains(&line))
            });
        }
    };

    // Detach on, with a bad name and an unknown key: a session (named after the folder) whose
    // workbench shows them.
    sandbox.write(
        &config,
        r#"{"detach": {"enabled": true, "name": "a b", "color": 1}}"#,
    );
    let mut session = plain();
    shown_and_logged(
        &session,
        &[
            "1:30: \"a b\" is not a session name: use letters, digits, '.', '_' and '-', not \
             starting with '.' or '-'",
            "1:45: unknown key \"color\" in \"detach\" (known: enabled, name)",
        ],
    );
    wait_for_ls(&sandbox, "project", &["yes"], REPLY);
    session.send(KITTY_DETACH);
    assert_eq!(session.wait_exit(REPLY).unwrap(), 0);
    assert!(unipi(&sandbox, &["kill", "project"]).status.success());
    wait_all_gone(&sandbox, GONE);

    // A value of the wrong kind: detach stays off, the plain workbench shows it.
    sandbox.write(&config, r#"{"detach": {"enabled": "yes"}}"#);
    let mut session = plain();
    shown_and_logged(&session, &["1:13: \"enabled\" must be true or false"]);
    assert_eq!(
        ls(&sandbox),
        "No sessions. Start one with `unipi-tui --detachable NAME`.\n"
    );
    session.send(b"\x1b");
    session.wait_for("Pi settled", REPLY, settled).unwrap();
    session.send(KITTY_CTRL_D);
    assert_eq!(session.wait_exit(REPLY).unwrap(), 0);
}

//! `unipi-tui doctor`, the real binary, in a sandbox whose HOME, project and TMPDIR are apart:
//! a healthy set-up (the real pinned Pi behind a shell wrapper, a real MCP server from npm)
//! exits 0; a broken config file, a missing Pi and an MCP server that dies at start are reported
//! broken with their fix and exit 1. And the completions and the man page the binary prints.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::support::pi::{PiLine, mcp_bin, pi_install};
use crate::support::sandbox::Sandbox;

fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_unipi-tui")
}

/// A shell wrapper around the pinned Pi of `line` in `<sandbox>/bin/pi` that puts the Node it
/// needs on PATH first, as a version manager's shim does; the wrapper's directory.
fn wrapped_pi(sandbox: &Sandbox, line: PiLine) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let install = pi_install(line).unwrap();
    let dir = sandbox.dir("bin");
    let node = install
        .node_bin_dir
        .map(|dir| format!("PATH='{}':\"$PATH\" ", dir.display()))
        .unwrap_or_default();
    let script = format!("#!/bin/sh\n{node}exec '{}' \"$@\"\n", install.bin.display());
    let wrapper = dir.join("pi");
    std::fs::write(&wrapper, script).unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// `unipi-tui doctor --json ARGS` in the project, with the sandbox's environment and `path`
/// first on PATH; the parsed report and the raw output.
fn doctor(sandbox: &Sandbox, path_first: Option<&Path>, args: &[&str]) -> (Value, Output) {
    let mut command = std::process::Command::new(binary());
    command
        .arg("doctor")
        .args(args)
        .current_dir(&sandbox.project)
        .envs(sandbox.env())
        .env_remove("UNIPI_PI_BIN")
        .env("UNIPI_TUI_NO_INSTALL", "1")
        .stdin(std::process::Stdio::null());
    if let Some(dir) = path_first {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![dir.to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        command.env("PATH", std::env::join_paths(dirs).unwrap());
    }
    let output = command.output().unwrap();
    let report = if args.contains(&"--json") {
        serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
            panic!(
                "not JSON ({err}): {}\nstderr: {}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )
        })
    } else {
        Value::Null
    };
    (report, output)
}

/// The checks called `name`.
fn checks<'a>(report: &'a Value, name: &str) -> Vec<&'a Value> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|check| check["name"] == name)
        .collect()
}

fn one<'a>(report: &'a Value, name: &str) -> &'a Value {
    let found = checks(report, name);
    assert_eq!(found.len(), 1, "{name} in {report:#}");
    found[0]
}

#[test]
fn a_healthy_set_up_passes_with_the_real_pi_behind_a_wrapper() {
    let sandbox = Sandbox::new();
    let bin = wrapped_pi(&sandbox, PiLine::Current);
    let filesystem = mcp_bin("mcp-server-filesystem");
    sandbox.write(
        &sandbox.project.join(".unipi/config/mcp.json"),
        &json!({"mcpServers": {"files": {
            "command": filesystem,
            "args": [sandbox.project],
        }}})
        .to_string(),
    );
    sandbox.write(
        &sandbox.home.join(".unipi/config/background-tasks.json"),
        "{ \"maxOutputBytes\": 1048576 }\n",
    );
    let (report, output) = doctor(&sandbox, Some(&bin), &["--json"]);
    assert!(output.status.success(), "{report:#}");
    assert_eq!(report["broken"], 0, "{report:#}");
    // `pi` on PATH is the wrapper; its version came from running it.
    let pi = one(&report, "Pi");
    assert_eq!(pi["status"], "ok", "{pi}");
    let detail = pi["detail"].as_str().unwrap();
    assert!(
        detail.contains(&bin.join("pi").display().to_string()),
        "{detail}"
    );
    assert!(detail.contains("1.6.0, the current line (1.x)"), "{detail}");
    assert!(detail.contains("on PATH"), "{detail}");
    let node = one(&report, "Node");
    assert_eq!(node["status"], "ok", "{node}");
    let bridge = one(&report, "bridge");
    assert_eq!(bridge["status"], "ok", "{bridge}");
    assert!(
        bridge["detail"]
            .as_str()
            .unwrap()
            .contains("loaded in Pi 1.6.0"),
        "{bridge}"
    );
    // The extension was written under the sandbox's cache, not the machine's.
    assert!(
        bridge["detail"]
            .as_str()
            .unwrap()
            .contains(&sandbox.home.display().to_string()),
        "{bridge}"
    );
    let files = one(&report, "MCP files");
    assert_eq!(files["status"], "ok", "{files}");
    assert!(
        files["detail"].as_str().unwrap().contains("started, "),
        "{files}"
    );
    let configs: Vec<&str> = checks(&report, "config")
        .iter()
        .map(|check| check["detail"].as_str().unwrap())
        .collect();
    for file in [
        sandbox.home.join(".unipi/config/background-tasks.json"),
        sandbox.project.join(".unipi/config/mcp.json"),
    ] {
        let read = format!("{} read", file.display());
        assert!(configs.contains(&read.as_str()), "{configs:?}");
    }
    // No terminal here: skipped, a warning, not a failure.
    assert_eq!(one(&report, "keyboard")["status"], "warning");
    assert_eq!(
        one(&report, "keyboard")["detail"],
        "not a terminal, skipped"
    );
    for dir in ["runtime dir", "data dir", "log dir"] {
        assert_eq!(one(&report, dir)["status"], "ok", "{report:#}");
    }
    let runtime = one(&report, "runtime dir")["detail"].as_str().unwrap();
    assert!(
        runtime.contains(&sandbox.tmp.display().to_string()),
        "{runtime}"
    );
}

#[test]
fn the_legacy_pi_is_named_as_its_line() {
    let sandbox = Sandbox::new();
    let install = pi_install(PiLine::Legacy).unwrap();
    let pi_bin = install.bin.display().to_string();
    let (report, output) = doctor(&sandbox, None, &["--json", "--pi-bin", &pi_bin]);
    assert!(output.status.success(), "{report:#}");
    let pi = one(&report, "Pi");
    let detail = pi["detail"].as_str().unwrap();
    assert!(
        detail.contains("0.73.1, the legacy line (0.7x)"),
        "{detail}"
    );
    assert!(detail.contains("(--pi-bin)"), "{detail}");
    assert!(
        one(&report, "bridge")["detail"]
            .as_str()
            .unwrap()
            .contains("loaded in Pi 0.73.1"),
        "{report:#}"
    );
}

#[test]
fn a_broken_config_file_is_named_at_its_line_and_column_with_a_fix() {
    let sandbox = Sandbox::new();
    let bin = wrapped_pi(&sandbox, PiLine::Current);
    let file = sandbox.project.join(".unipi/config/background-tasks.json");
    sandbox.write(&file, "{\n  \"maxOutputBytes\": \"lots\"\n}\n");
    let (_, output) = doctor(&sandbox, Some(&bin), &[]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{text}");
    let at = format!("{}:2:", file.display());
    let line = text
        .lines()
        .find(|line| line.starts_with("broken") && line.contains(&at))
        .unwrap_or_else(|| panic!("no broken row at {at}:\n{text}"));
    assert!(line.contains("maxOutputBytes"), "{line}");
    let fix = text
        .lines()
        .skip_while(|l| *l != line)
        .nth(1)
        .unwrap_or_default();
    assert!(
        fix.trim_start().starts_with(&format!("fix: edit {at}")),
        "{text}"
    );
    assert!(text.trim_end().ends_with("ok"), "{text}");
    assert!(text.contains("1 broken"), "{text}");
}

#[test]
fn a_missing_pi_is_broken() {
    let sandbox = Sandbox::new();
    let (report, output) = doctor(&sandbox, None, &["--json", "--pi-bin", "/nonexistent"]);
    assert_eq!(output.status.code(), Some(1), "{report:#}");
    let pi = one(&report, "Pi");
    assert_eq!(pi["status"], "broken", "{pi}");
    assert!(
        pi["detail"].as_str().unwrap().contains("/nonexistent"),
        "{pi}"
    );
    assert!(pi["fix"].as_str().unwrap().contains("--pi-bin"), "{pi}");
    assert_eq!(one(&report, "bridge")["status"], "warning");
}

#[test]
fn an_mcp_server_that_dies_at_start_is_broken_with_its_words() {
    let sandbox = Sandbox::new();
    let bin = wrapped_pi(&sandbox, PiLine::Current);
    let config = sandbox.home.join(".unipi/config/mcp.json");
    sandbox.write(
        &config,
        &json!({"mcpServers": {"crashy": {
            "command": "sh",
            "args": ["-c", "echo 'crashy: GITHUB_TOKEN is not set' >&2; exit 3"],
        }}})
        .to_string(),
    );
    let (report, output) = doctor(&sandbox, Some(&bin), &["--json"]);
    assert_eq!(output.status.code(), Some(1), "{report:#}");
    let crashy = one(&report, "MCP crashy");
    assert_eq!(crashy["status"], "broken", "{crashy}");
    let detail = crashy["detail"].as_str().unwrap();
    assert!(detail.contains("GITHUB_TOKEN is not set"), "{detail}");
    let fix = crashy["fix"].as_str().unwrap();
    assert!(fix.contains(&config.display().to_string()), "{fix}");
    // Everything else is fine: only the server is broken.
    assert_eq!(report["broken"], 1, "{report:#}");
}

#[test]
fn completions_for_each_shell_name_our_flags_and_bash_accepts_its_script() {
    for shell in ["bash", "zsh", "fish"] {
        let output = std::process::Command::new(binary())
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(output.status.success(), "{shell}: {output:?}");
        let text = String::from_utf8(output.stdout).unwrap();
        // fish writes `-l pi-bin`, the others `--pi-bin`.
        for word in [
            "pi-bin",
            "log-level",
            "detachable",
            "doctor",
            "migrate",
            "attach",
        ] {
            assert!(text.contains(word), "{shell} lacks {word}");
        }
        if shell == "bash" {
            let dir = tempfile::tempdir().unwrap();
            let script = dir.path().join("unipi-tui.bash");
            std::fs::write(&script, &text).unwrap();
            let check = std::process::Command::new("bash")
                .arg("-n")
                .arg(&script)
                .output()
                .unwrap();
            assert!(check.status.success(), "bash -n: {check:?}");
        }
    }
    let wrong = std::process::Command::new(binary())
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(wrong.status.code(), Some(2), "{wrong:?}");
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("tcsh"));
}

#[test]
fn the_man_page_renders() {
    let output = std::process::Command::new(binary())
        .arg("man")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let page = String::from_utf8(output.stdout).unwrap();
    assert!(page.contains(".TH unipi-tui"), "{page}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("unipi-tui.1");
    std::fs::write(&file, &page).unwrap();
    let man = std::process::Command::new("man")
        .arg("-l")
        .arg(&file)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output();
    match man {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("pi-bin"), "{text}");
            assert!(text.contains("doctor"), "{text}");
        }
        // No `man` here: the roff's header was checked above.
        Ok(out) => panic!("man -l failed: {out:?}"),
        Err(err) => assert_eq!(err.kind(), std::io::ErrorKind::NotFound, "{err}"),
    }
}

/// `/unipi:doctor` in the workbench (the real binary in a PTY, the real Pi 1.6.0 on the scripted
/// model, a kitty-keyboard outer terminal): the report opens in the overlay — the bridge known
/// loaded, the keyboard protocol the one in use, the broken config file at its line and the
/// crashing MCP server — and Esc closes it.
#[test]
fn slash_doctor_shows_the_report_in_the_workbench() {
    use crate::support::demo::{OfflineModel, START, outer_40_rows, wait_for_idle_prompt};
    use crate::support::workbench::{KITTY_CTRL_D, exit_pi, slash};
    use std::time::Duration;

    let sandbox = Sandbox::new();
    let file = sandbox.project.join(".unipi/config/background-tasks.json");
    sandbox.write(&file, "{\n  \"maxOutputBytes\": \"lots\"\n}\n");
    sandbox.write(
        &sandbox.home.join(".unipi/config/mcp.json"),
        &json!({"mcpServers": {"crashy": {
            "command": "sh",
            "args": ["-c", "echo 'crashy: GITHUB_TOKEN is not set' >&2; exit 3"],
        }}})
        .to_string(),
    );
    let model = OfflineModel::scenario("e2e.toml", &sandbox);
    let mut session = model.spawn(PiLine::Current, &sandbox, &[], &[], outer_40_rows(120));
    wait_for_idle_prompt(&session, &sandbox, "scripted-e2e");
    slash(&session, "/unipi:doctor", START);
    let at = format!("{}:2:", file.display());
    session
        .wait_for("the doctor's overlay", START, |s| {
            let text = s.contents();
            text.contains("unipi-tui doctor")
                && text.contains("2 broken")
                && text.contains(&at)
                && text.contains("MCP crashy")
                && text.contains("GITHUB_TOKEN is not set")
                && text.contains("loaded in this Pi")
                && text.contains("1.6.0, the current")
        })
        .unwrap_or_else(|err| panic!("{err:#}\n{}", sandbox.log_tail(40)));
    // The end of the report: the terminal as the workbench set it up, and the directories.
    session.send(b"\x1b[F");
    session
        .wait_for("the end of the report", START, |s| {
            let text = s.contents();
            text.contains("the kitty keyboard protocol is in use") && text.contains("log dir")
        })
        .unwrap_or_else(|err| panic!("{err:#}\n{}", sandbox.log_tail(40)));
    session.send(b"\x1b");
    session
        .wait_for("the overlay closed", START, |s| {
            !s.contents().contains("unipi-tui doctor")
        })
        .unwrap();
    assert_eq!(
        exit_pi(&mut session, KITTY_CTRL_D, Duration::from_secs(30)),
        0
    );
}

/// `-p /unipi:doctor`: without the workbench's screen the report is the command's answer, on
/// stderr (stdout stays Pi's: empty), the broken config file at its line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_doctor_in_a_print_run_answers_with_the_report_on_stderr() {
    use std::time::Duration;
    use unipi_tui::pi::offline::write_agent_dir;
    use unipi_tui::scripted::Scenario;

    let pi = pi_install(PiLine::Current).unwrap();
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios/headless.toml");
    let server = unipi_tui::scripted::start(Scenario::from_file(&scenario).unwrap())
        .await
        .unwrap();
    let sandbox = Sandbox::new();
    let agent =
        write_agent_dir(&sandbox.dir("agent"), &server.base_url(), &server.models()).unwrap();
    let file = sandbox.project.join(".unipi/config/background-tasks.json");
    sandbox.write(&file, "{\n  \"maxOutputBytes\": \"lots\"\n}\n");
    let child = pi
        .workbench(&agent, &sandbox, &["-p", "/unipi:doctor"])
        .spawn()
        .unwrap();
    let output = tokio::time::timeout(Duration::from_secs(90), child.wait_with_output())
        .await
        .expect("unipi-tui did not finish in time")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        (output.status.code(), output.stdout.as_slice()),
        (Some(0), &b""[..]),
        "{stderr}"
    );
    assert!(stderr.contains("unipi-tui: /unipi:doctor: ok"), "{stderr}");
    assert!(
        stderr.contains(&format!("broken   config       {}:2:", file.display())),
        "{stderr}"
    );
    assert!(stderr.contains("loaded in this Pi"), "{stderr}");
    assert!(stderr.contains("1 broken"), "{stderr}");
}

/// In a terminal, `unipi-tui doctor` asks it for the kitty keyboard protocol: a terminal that
/// answers (kitty) is ok, one that answers only DA1 (xterm) is a warning with the fix; the
/// terminal is left as it was (no raw mode, nothing pushed).
#[test]
fn in_a_terminal_the_keyboard_protocol_is_asked_for() {
    use crate::support::term::{OuterModes, OuterOptions, Session};
    use std::time::Duration;

    for (kitty, expected) in [
        (
            true,
            "ok       keyboard     the terminal speaks the kitty keyboard protocol",
        ),
        (false, "warning  keyboard     no kitty keyboard protocol"),
    ] {
        let sandbox = Sandbox::new();
        let pi = pi_install(PiLine::Current).unwrap();
        let pi_bin = pi.bin.display().to_string();
        let mut env = sandbox.env();
        if let Some(node) = &pi.node_bin_dir {
            let path = std::env::var("PATH").unwrap_or_default();
            env.push(("PATH", format!("{}:{path}", node.display())));
        }
        env.push(("COLORTERM", "truecolor".to_owned()));
        let mut session = Session::spawn(
            Path::new(binary()),
            &["doctor", "--pi-bin", &pi_bin],
            &env,
            &sandbox.project,
            OuterOptions {
                rows: 40,
                cols: 160,
                kitty,
            },
        )
        .unwrap();
        let code = session.wait_exit(Duration::from_secs(90)).unwrap();
        let screen = session.screen_text();
        assert_eq!(code, 0, "{screen}");
        assert!(screen.contains(expected), "{screen}");
        assert!(
            screen.contains("ok       colour       24-bit colour (COLORTERM=truecolor)"),
            "{screen}"
        );
        assert!(
            screen.contains("ok       clipboard    copies go out as OSC 52 (TERM=xterm-256color)"),
            "{screen}"
        );
        assert_eq!(session.modes(), OuterModes::restored(), "{screen}");
    }
}

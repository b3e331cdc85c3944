//! Without the pane, end to end: the real `unipi-tui` binary and the real pinned Pi against the
//! scripted model server, run the way scripts run `pi` (`-p`, `--mode json`, `--help` into a
//! pipe, stdin closed). Each run is compared with the same run of `pi` itself: unipi-tui is a
//! drop-in, so stdout and the exit code must be Pi's. And it goes beyond Pi: the workbench's tools
//! answer a headless run through the bridge, and nothing they started outlives it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;
use support::ntfy::NtfyServer;
use support::pi::{PiInstall, PiLine, PiOutput, pi_install};
use support::procs::processes_running;
use support::sandbox::Sandbox;
use support::term::{OuterModes, OuterOptions, Session};
use unipi_tui::pi::offline::{OfflineAgent, write_agent_dir};
use unipi_tui::scripted::{Scenario, ServerHandle};

const RUN: Duration = Duration::from_secs(90);

/// A scripted server, an offline agent dir pointing at it, and a sandbox whose HOME, project
/// and TMPDIR are three different directories.
struct Setup {
    pi: PiInstall,
    agent: OfflineAgent,
    sandbox: Sandbox,
    home: PathBuf,
    project: PathBuf,
    server: ServerHandle,
}

async fn setup() -> Setup {
    setup_with(PiLine::Current).await
}

async fn setup_with(line: PiLine) -> Setup {
    let pi = pi_install(line).unwrap_or_else(|err| panic!("{err:#}"));
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios/headless.toml");
    let server = unipi_tui::scripted::start(Scenario::from_file(&scenario).unwrap())
        .await
        .unwrap();
    let sandbox = Sandbox::new();
    let agent_dir = sandbox.dir("agent");
    let agent = write_agent_dir(&agent_dir, &server.base_url(), &server.models()).unwrap();
    Setup {
        pi,
        agent,
        home: sandbox.home.clone(),
        project: sandbox.project.clone(),
        sandbox,
        server,
    }
}

impl Setup {
    /// `unipi-tui --pi-bin <pi> <agent args> <args>` with the same environment `pi.run` gives Pi,
    /// stdin closed, stdout and stderr captured.
    fn unipi(&self, args: &[&str]) -> tokio::process::Command {
        self.pi.workbench(&self.agent, &self.sandbox, args)
    }

    async fn run_unipi(&self, args: &[&str]) -> PiOutput {
        output_of(self.unipi(args)).await
    }

    async fn run_pi(&self, args: &[&str]) -> PiOutput {
        self.pi.run(&self.agent, &self.sandbox, args).await.unwrap()
    }

    fn log(&self) -> String {
        self.sandbox.log()
    }
}

/// Runs `command` to its end (within [`RUN`]) and returns what it printed.
async fn output_of(mut command: tokio::process::Command) -> PiOutput {
    let child = command.spawn().unwrap();
    let output = tokio::time::timeout(RUN, child.wait_with_output())
        .await
        .expect("unipi-tui did not finish in time")
        .unwrap();
    PiOutput {
        success: output.status.success(),
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[tokio::test]
async fn print_mode_prints_what_pi_prints_and_exits_with_its_code() {
    let s = setup().await;
    for prompt in ["hello", "fail please"] {
        let pi = s.run_pi(&["-p", prompt]).await;
        let ours = s.run_unipi(&["-p", prompt]).await;
        assert_eq!(
            (ours.code, &ours.stdout),
            (pi.code, &pi.stdout),
            "`-p {prompt}`: unipi-tui's stderr:\n{}\nPi's stderr:\n{}\nlog:\n{}",
            ours.stderr,
            pi.stderr,
            s.log()
        );
        assert_eq!(ours.stderr, pi.stderr, "`-p {prompt}`: stderr differs");
    }
    let hello = s.run_unipi(&["-p", "hello"]).await;
    assert_eq!(
        hello.stdout.trim(),
        "HEADLESS-REPLY: hello from the scripted model"
    );
    assert_eq!(hello.code, Some(0));
    let failed = s.run_unipi(&["-p", "fail please"]).await;
    assert_ne!(failed.code, Some(0), "a failing print run fails");
    // The run went through the workbench: the bridge connected, so the modules were there.
    assert!(
        s.log().contains("bridge: main connected"),
        "the bridge did not connect:\n{}",
        s.log()
    );
}

#[tokio::test]
async fn json_mode_is_pis_json_lines() {
    let s = setup().await;
    let ours = s.run_unipi(&["--mode", "json", "hello"]).await;
    assert_eq!(ours.code, Some(0), "stderr:\n{}", ours.stderr);
    let events: Vec<serde_json::Value> = ours
        .stdout
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|err| panic!("not JSON ({err}): {line:?}"))
        })
        .collect();
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types.first(), Some(&"session"), "{types:?}");
    assert!(types.contains(&"agent_end"), "{types:?}");
    assert!(ours.stdout.contains("HEADLESS-REPLY"), "{}", ours.stdout);
    // The same kinds of events, in the same order, as Pi's own JSON mode.
    let pi = s.run_pi(&["--mode", "json", "hello"]).await;
    let pi_types: Vec<String> = pi
        .stdout
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["type"].to_string())
        .collect();
    let our_types: Vec<String> = events.iter().map(|e| e["type"].to_string()).collect();
    assert_eq!(our_types, pi_types);
}

#[tokio::test]
async fn help_into_a_pipe_closed_after_one_line_exits_like_pi() {
    let s = setup().await;
    let first_line_then_close = |mut command: tokio::process::Command| async move {
        use tokio::io::AsyncBufReadExt;
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        tokio::io::BufReader::new(stdout)
            .read_line(&mut line)
            .await
            .unwrap();
        // `| head -1`: the reader goes away after one line.
        let status = tokio::time::timeout(RUN, child.wait())
            .await
            .expect("did not finish")
            .unwrap();
        (line, status.code())
    };
    let mut pi = s.pi.command();
    pi.arg("--help");
    let mut ours = s.unipi(&[]);
    ours.arg("--").arg("--help");
    let (pi_line, pi_code) = first_line_then_close(pi).await;
    let (our_line, our_code) = first_line_then_close(ours).await;
    assert!(pi_line.starts_with("pi "), "{pi_line:?}");
    assert_eq!((our_line, our_code), (pi_line, pi_code));

    let version = s.run_unipi(&["-v"]).await;
    assert_eq!(
        (version.code, version.stdout.trim()),
        (Some(0), s.pi.version.as_str())
    );
    // Pi alone: no bridge was started for it.
    assert!(!s.log().contains("bridge: main connected"), "{}", s.log());
}

/// The text of every request's last message, in order (what the model was shown last each time).
fn last_messages(server: &ServerHandle) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter_map(|request| request["messages"].as_array()?.last().cloned())
        .map(|message| message["content"].to_string())
        .collect()
}

/// `-p "start the build"`: the model starts a build in the background that will wake it, and the
/// run does not end before that follow-up turn — the turn's answer is what the run prints, and
/// the run exits with Pi's code. (Before, Pi exited right after the first answer and the
/// workbench killed the build.)
#[tokio::test]
async fn a_print_run_waits_for_a_task_that_will_wake_the_agent_and_prints_its_follow_up() {
    let s = setup().await;
    let tasks_dir = s.home.join("bg-tasks");
    let mut command = s.unipi(&["-p", "start the build"]);
    command.env("UNIPI_BG_TMP_DIR", &tasks_dir);
    let ours = output_of(command).await;
    let shown = last_messages(&s.server);
    assert_eq!(
        (ours.code, ours.stdout.trim()),
        (Some(0), "HEADLESS-FOLLOW-UP: the build is done"),
        "stderr:\n{}\nthe model was shown:\n{shown:#?}\nlog:\n{}",
        ours.stderr,
        s.log()
    );
    // The model was told the run waits (and for how long at most), then got the notification.
    assert!(
        shown
            .iter()
            .any(|text| text.contains("stopped after 1800 s")),
        "{shown:#?}"
    );
    assert!(
        shown
            .last()
            .is_some_and(|text| text.contains("<status>done</status>")),
        "{shown:#?}"
    );
    let output: String = walk(&tasks_dir)
        .into_iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "log"))
        .map(|path| std::fs::read_to_string(path).unwrap())
        .collect();
    assert!(output.contains("HEADLESS-BUILD-OUTPUT"), "{output:?}");
    assert!(
        s.log().contains("its run waits for headless build"),
        "{}",
        s.log()
    );
}

/// The same in `--mode json`: the follow-up turn's events (the notification, the answer) are in
/// the run's JSON stream, after the first turn's `agent_end`.
#[tokio::test]
async fn a_json_run_streams_the_follow_up_turn_of_a_background_task() {
    let s = setup().await;
    let ours = s.run_unipi(&["--mode", "json", "start the build"]).await;
    assert_eq!(
        ours.code,
        Some(0),
        "stderr:\n{}\nlog:\n{}",
        ours.stderr,
        s.log()
    );
    let events: Vec<serde_json::Value> = ours
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let ends: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["type"] == "agent_end")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(ends.len(), 2, "one run for the prompt, one for the wake-up");
    let after_first: Vec<&serde_json::Value> = events[ends[0]..].iter().collect();
    let notification = after_first.iter().any(|e| {
        e["type"] == "message_end" && e["message"]["customType"] == "background-task-notification"
    });
    assert!(
        notification,
        "no notification after the first run:\n{}",
        ours.stdout
    );
    let answer = after_first.iter().any(|e| {
        e["type"] == "message_end"
            && e["message"]["role"] == "assistant"
            && e["message"]["content"]
                .to_string()
                .contains("HEADLESS-FOLLOW-UP")
    });
    assert!(answer, "no follow-up answer:\n{}", ours.stdout);
}

/// Pi 0.73.1 ends a print run as soon as the agent stops and awaits nothing after it, so the run
/// cannot wait: `bg_run` of a task that would wake the agent is refused with what to do instead,
/// no task starts, and the model's answer to the refusal is the run's output.
#[tokio::test]
async fn a_pi_that_cannot_wait_refuses_a_waking_background_task_in_words() {
    let s = setup_with(PiLine::Legacy).await;
    let tasks_dir = s.home.join("bg-tasks");
    let mut command = s.unipi(&["-p", "start the build"]);
    command.env("UNIPI_BG_TMP_DIR", &tasks_dir);
    let ours = output_of(command).await;
    let shown = last_messages(&s.server);
    assert_eq!(
        (ours.code, ours.stdout.trim()),
        (
            Some(0),
            "HEADLESS-REFUSED: I will run the build in the foreground"
        ),
        "stderr:\n{}\nthe model was shown:\n{shown:#?}\nlog:\n{}",
        ours.stderr,
        s.log()
    );
    let logs: Vec<PathBuf> = walk(&tasks_dir)
        .into_iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "log"))
        .collect();
    // Nothing was started (the print-run test, running beside this one, starts the same command,
    // so the task directory says it, not the process list).
    assert_eq!(logs, Vec::<PathBuf>::new(), "a refused task started");
}

/// `/unipi:*` commands in a print run: Pi shows no notices there, so what the command answered
/// goes to the workbench's stderr (stdout stays exactly Pi's: empty), and a refused command ends
/// the run non-zero. (Before, both printed nothing and exited 0.)
#[tokio::test]
async fn unipi_commands_in_a_print_run_answer_on_stderr_and_a_refusal_fails_the_run() {
    let s = setup().await;
    let board = s.run_unipi(&["-p", "/unipi:kanboard"]).await;
    assert_eq!(
        (board.code, board.stdout.as_str()),
        (Some(0), ""),
        "stderr:\n{}",
        board.stderr
    );
    assert!(
        board
            .stderr
            .contains("unipi-tui: /unipi:kanboard: 0 workflow documents"),
        "{}",
        board.stderr
    );
    let settings = s.run_unipi(&["-p", "/unipi:bg-settings"]).await;
    assert_eq!(
        (settings.code, settings.stdout.as_str()),
        (Some(1), ""),
        "stderr:\n{}",
        settings.stderr
    );
    assert!(
        settings.stderr.contains(
            "unipi-tui: /unipi:bg-settings refused: the settings overlay needs the workbench's \
             screen; edit ~/.unipi/config/background-tasks.json"
        ),
        "{}",
        settings.stderr
    );
    // A task the user starts in a print run goes with the run, and stderr says so.
    let task = s
        .run_unipi(&["-p", "/unipi:bg --name quick -- echo hi"])
        .await;
    assert_eq!(task.code, Some(0), "{}", task.stderr);
    assert!(
        task.stderr
            .contains("unipi-tui: /unipi:bg: Started quick (bg-")
            && task
                .stderr
                .contains("This run ends now, and the task is stopped with it."),
        "{}",
        task.stderr
    );
}

/// The loopback ntfy stand-in, which owns a runtime of its own: started and dropped off the
/// test's runtime (a runtime may not be dropped inside another).
struct Ntfy(Option<NtfyServer>);

impl Ntfy {
    async fn start() -> Ntfy {
        Ntfy(Some(
            tokio::task::spawn_blocking(NtfyServer::start)
                .await
                .unwrap(),
        ))
    }

    fn server(&self) -> &NtfyServer {
        self.0.as_ref().unwrap()
    }
}

impl Drop for Ntfy {
    fn drop(&mut self) {
        if let Some(server) = self.0.take() {
            let _ = std::thread::spawn(move || drop(server)).join();
        }
    }
}

/// `unipi-tui -p` in a loop must not buzz a phone per call: a headless run sends no "Agent is
/// complete" (here to a loopback ntfy server) unless `headlessAgentEnd` in the notify config turns
/// it on. (Before, every run sent one.)
#[tokio::test]
async fn a_headless_run_sends_agent_complete_only_when_the_config_says_so() {
    let s = setup().await;
    let ntfy = Ntfy::start().await;
    let dir = s.home.join(".unipi/config/notify");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("ntfy.json"),
        serde_json::json!({"enabled": true, "serverUrl": ntfy.server().url, "topic": "pi-headless"})
            .to_string(),
    )
    .unwrap();
    let config = |extra: serde_json::Value| {
        let mut config = serde_json::json!({
            "native": {"enabled": false},
            "terminal": {"enabled": false},
        });
        config
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    };

    config(serde_json::json!({}));
    let quiet = s.run_unipi(&["-p", "hello"]).await;
    assert_eq!(quiet.code, Some(0), "{}", quiet.stderr);
    assert_eq!(
        ntfy.server().received().len(),
        0,
        "{:?}",
        ntfy.server().received()
    );

    config(serde_json::json!({"headlessAgentEnd": true}));
    let told = s.run_unipi(&["-p", "hello"]).await;
    assert_eq!(told.code, Some(0), "{}", told.stderr);
    let received = ntfy.server().received();
    let messages: Vec<&str> = received
        .iter()
        .filter_map(|(_, _, body)| body["message"].as_str())
        .collect();
    assert_eq!(
        messages,
        ["Agent is complete"],
        "{received:?}\nlog:\n{}",
        s.log()
    );
}

#[tokio::test]
async fn a_headless_run_gets_a_workbench_tools_real_result_and_leaves_no_process() {
    let s = setup().await;
    let tasks_dir = s.home.join("bg-tasks");
    let mut command = s.unipi(&["-p", "start a headless task"]);
    command.env("UNIPI_BG_TMP_DIR", &tasks_dir);
    let ours = output_of(command).await;
    assert_eq!(
        (ours.code, ours.stdout.trim()),
        (Some(0), "HEADLESS-TOOL-OK: the workbench started the task"),
        "stderr:\n{}\nlog:\n{}",
        ours.stderr,
        s.log()
    );
    // The task was really started (its output file is on disk), and it died with the run.
    let outputs: Vec<_> = walk(&tasks_dir)
        .into_iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "log"))
        .collect();
    assert!(
        !outputs.is_empty(),
        "no task output under {}",
        tasks_dir.display()
    );
    assert_eq!(processes_running("sleep 317"), Vec::<u32>::new());
}

#[tokio::test]
async fn sigterm_reaches_pi_and_the_run_ends_with_its_code() {
    let s = setup().await;
    let mut child = s.unipi(&["-p", "wait forever"]).spawn().unwrap();
    let pid = child.id().unwrap();
    // Pi is running once the scripted model has the request.
    support::wait::eventually_async("Pi to ask the model", RUN, async || {
        s.server
            .requests()
            .iter()
            .any(|r| r.to_string().contains("wait forever"))
    })
    .await;
    let pi_pids = support::procs::children(pid);
    assert!(!pi_pids.is_empty(), "Pi is not a child of unipi-tui");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = tokio::time::timeout(RUN, child.wait())
        .await
        .expect("unipi-tui did not end after SIGTERM")
        .unwrap();
    // Pi ended by the signal (or exited on it); either way the run did not succeed.
    assert!(!status.success(), "{status:?}");
    for pid in pi_pids {
        assert!(!support::procs::alive(pid), "Pi ({pid}) outlived unipi-tui");
    }
    assert!(s.log().contains("forwarding SIGTERM"), "{}", s.log());
}

/// `unipi-tui -p` typed in a terminal: Pi's answer appears, nothing of the workbench's screen
/// is set up, and the terminal is as it was. (Multi-threaded: the outer terminal's waits block
/// this thread while the scripted server answers on another.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn print_mode_in_a_terminal_prints_and_leaves_the_terminal_alone() {
    let s = setup().await;
    let mut path = std::env::var("PATH").unwrap_or_default();
    if let Some(node) = &s.pi.node_bin_dir {
        path = format!("{}:{path}", node.display());
    }
    let mut env: Vec<(&str, String)> = vec![("PATH", path)];
    env.extend(s.sandbox.env());
    env.extend(s.agent.env.iter().map(|(k, v)| (k.as_str(), v.clone())));
    let pi_bin = s.pi.bin.display().to_string();
    let mut args = vec!["--pi-bin", pi_bin.as_str()];
    args.extend(s.agent.pi_args.iter().map(String::as_str));
    args.extend(["-p", "hello"]);
    let mut session = Session::spawn(
        Path::new(env!("CARGO_BIN_EXE_unipi-tui")),
        &args,
        &env,
        &s.project,
        OuterOptions::default(),
    )
    .context("spawn")
    .unwrap();
    session
        .wait_for_text("HEADLESS-REPLY", RUN)
        .unwrap_or_else(|err| panic!("{err:#}\nlog:\n{}", s.log()));
    assert_eq!(session.wait_exit(RUN).unwrap(), 0);
    assert_eq!(session.modes(), OuterModes::restored());
    let raw = String::from_utf8_lossy(&session.raw_output()).into_owned();
    assert!(
        !raw.contains("\x1b[?1049h"),
        "the alternate screen was used: {raw:?}"
    );
}

/// `--list-models` and `--export` run Pi alone and print what Pi prints; `--mode rpc` is Pi's
/// RPC protocol on stdin/stdout (a prompt's response and events, in Pi's order), with the
/// workbench's bridge behind it.
#[tokio::test]
async fn list_models_export_and_rpc_mode_are_pis() {
    let s = setup().await;

    let pi = s.run_pi(&["--list-models"]).await;
    let ours = s.run_unipi(&["--list-models"]).await;
    assert_eq!(pi.code, Some(0), "{}", pi.stderr);
    assert!(pi.stdout.contains("scripted"), "{}", pi.stdout);
    assert_eq!((ours.code, &ours.stdout), (pi.code, &pi.stdout));

    // A session to export, saved by a print run.
    assert!(s.run_pi(&["-p", "hello"]).await.success);
    let session = walk(&s.sandbox.dir("agent").join("sessions"))
        .into_iter()
        .find(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .expect("the print run saved a session");
    let session = session.display().to_string();
    let pi_html = s.project.join("pi.html").display().to_string();
    let our_html = s.project.join("ours.html").display().to_string();
    let pi = s.run_pi(&["--export", &session, &pi_html]).await;
    let ours = s.run_unipi(&["--export", &session, &our_html]).await;
    assert_eq!(pi.code, Some(0), "{}", pi.stderr);
    assert_eq!(
        (ours.code, ours.stdout.replace(&our_html, "OUT")),
        (pi.code, pi.stdout.replace(&pi_html, "OUT")),
        "stderr:\n{}",
        ours.stderr
    );
    let exported = std::fs::read_to_string(&our_html).unwrap();
    assert!(exported.contains("<html"), "not HTML: {exported:.200}");

    // RPC: one prompt, read until Pi settles, then stdin closes and the run ends.
    let rpc = |mut command: tokio::process::Command| async move {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        command.stdin(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"{\"id\":\"p1\",\"type\":\"prompt\",\"message\":\"hello\"}\n")
            .await
            .unwrap();
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let mut types = Vec::new();
        let mut text = String::new();
        tokio::time::timeout(RUN, async {
            while let Some(line) = lines.next_line().await.unwrap() {
                let value: serde_json::Value = serde_json::from_str(&line)
                    .unwrap_or_else(|err| panic!("not JSON ({err}): {line:?}"));
                let kind = value["type"].as_str().unwrap_or_default().to_owned();
                text.push_str(&line);
                let end = kind == "agent_end";
                types.push(kind);
                if end {
                    break;
                }
            }
        })
        .await
        .expect("no agent_end on stdout");
        drop(stdin);
        let status = tokio::time::timeout(RUN, child.wait())
            .await
            .expect("the RPC run did not end when stdin closed")
            .unwrap();
        (types, text, status.code())
    };
    let mut pi = s.pi.command();
    pi.current_dir(&s.project)
        .env("HOME", &s.home)
        .env("TMPDIR", &s.sandbox.tmp)
        .envs(s.agent.env.iter().map(|(k, v)| (k, v)))
        .args(&s.agent.pi_args)
        .args(["--mode", "rpc", "--no-session"]);
    let (pi_types, _, pi_code) = rpc(pi).await;
    let (our_types, our_text, our_code) = rpc(s.unipi(&["--mode", "rpc", "--no-session"])).await;
    assert_eq!(pi_types.first().map(String::as_str), Some("response"));
    assert!(our_text.contains("HEADLESS-REPLY"), "{our_text}");
    assert_eq!((our_types, our_code), (pi_types, pi_code));
    assert!(
        s.log().contains("bridge: main connected"),
        "the RPC run had no bridge:\n{}",
        s.log()
    );
}

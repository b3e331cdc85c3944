//! Helper building blocks against the real, pinned Pi of both lines: a child launched with
//! `AgentType::pi_args` for the built-in `explore` type runs a read-only tool call and answers,
//! and its `--mode json` stdout, read by `helpers::events`, sums up to the expected run. This is
//! what proves the arguments mean the same to Pi 1.x and 0.7x, and that the parser reads what Pi
//! really prints. The runner (`helpers::runner`) then runs `explore` end to end, once directly
//! and once through a stand-in that stays silent until the task arrives as `@<file>`, which
//! proves the file-delivery retry means the same to both lines. Last, the `helpers` module's
//! `spawn_helper` tool runs `explore` on the real Pi and returns its answer as the tool result.
//! The runner drives Pi in `--mode rpc`, so the RPC features are proven here on both lines too:
//! a steer reaches the model's next request, a turn budget against a model that calls tools
//! forever is steered and then aborted (and the process group is gone), a resumed run continues
//! a stored session and a forked run starts from a copy of it (scenario
//! `tests/fixtures/scenarios/helpers-rpc.toml`). With `UNIPI_RECORD_PI_JSON=1` the print-mode
//! streams are also saved as the fixtures the parser's unit tests read (`tests/fixtures/pi-json/`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use support::pi::{PRINT_TIMEOUT, PiInstall, PiLine, pi_install};
use unipi_tui::bridge::{AgentId, CancelToken, ContentBlock, Module as _, ToolCall, UpdateSender};
use unipi_tui::helpers::agents::{AgentCatalog, AgentType};
use unipi_tui::helpers::board::TranscriptEntry;
use unipi_tui::helpers::budget::Budget;
use unipi_tui::helpers::events::{EventParser, PiEvent, RunSummary};
use unipi_tui::helpers::module::{
    HelperSettings, HelpersConfig, HelpersModule, PiLaunch, SPAWN_TOOL,
};
use unipi_tui::helpers::runner::{HelperRunner, RetryKind, RunHandle, RunOutcome, RunStatus};
use unipi_tui::helpers::spec::{RunSpec, SessionMode};
use unipi_tui::pi::offline::{OfflineAgent, PROVIDER_ID, write_agent_dir};
use unipi_tui::scripted::{Scenario, ServerHandle, start};

const SCENARIO: &str = r#"
model = ["scripted-test"]
chunk_chars = 8

[[rule]]
role = "user"
when = "(?i)summarize the notes"
reply = "Reading the notes."
tool_calls = [{ name = "read", arguments = { path = "notes.txt" } }]
usage = { prompt_tokens = 40, completion_tokens = 6 }

[[rule]]
role = "tool"
when = "helpers are read-only"
reply = "The notes say: helpers are read-only."
usage = { prompt_tokens = 60, completion_tokens = 9 }

[[rule]]
role = "user"
when = "(?i)hello"
reply = "Hello from the scripted model!"
usage = { prompt_tokens = 11, completion_tokens = 7 }

[fallback]
reply = "Nothing scripted for that."
"#;

/// The shared sandbox (HOME, project, TMPDIR apart) and the offline agent directory beside it.
struct Sandbox {
    dirs: support::sandbox::Sandbox,
    agent: PathBuf,
    cwd: PathBuf,
    home: PathBuf,
}

fn sandbox() -> anyhow::Result<Sandbox> {
    let dirs = support::sandbox::Sandbox::new();
    std::fs::write(dirs.project.join("notes.txt"), "helpers are read-only\n")?;
    Ok(Sandbox {
        agent: dirs.root().join("agent"),
        cwd: dirs.project.clone(),
        home: dirs.home.clone(),
        dirs,
    })
}

/// What one helper-like child printed, parsed.
struct Run {
    stdout: String,
    events: Vec<PiEvent>,
    summary: RunSummary,
}

/// Runs `pi --offline <agent_type.pi_args(prompt)>` like a helper runner would, with the
/// scripted model selected through the type's own `model`, and parses its stdout incrementally.
async fn run_helper(
    pi: &PiInstall,
    server: &ServerHandle,
    sandbox: &Sandbox,
    agent_type: &AgentType,
    prompt: &str,
) -> anyhow::Result<Run> {
    let offline: OfflineAgent =
        write_agent_dir(&sandbox.agent, &server.base_url(), &server.models())?;
    let agent_type = AgentType {
        model: Some(format!("{PROVIDER_ID}/{}", server.models()[0])),
        ..agent_type.clone()
    };
    let mut command = pi.command();
    command
        .current_dir(&sandbox.cwd)
        .env("HOME", &sandbox.home)
        .env("TMPDIR", &sandbox.dirs.tmp)
        .envs(offline.env.iter().map(|(key, value)| (key, value)))
        .arg("--offline")
        .args(agent_type.pi_args(prompt));
    let child = command
        .spawn()
        .with_context(|| format!("cannot start {}", pi.bin.display()))?;
    let output = tokio::time::timeout(PRINT_TIMEOUT, child.wait_with_output())
        .await
        .with_context(|| format!("Pi {} did not finish in {PRINT_TIMEOUT:?}", pi.version))??;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        bail!(
            "Pi {} exited with {:?}\nstdout:\n{stdout}\nstderr:\n{}",
            pi.version,
            output.status.code(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    assert!(
        !sandbox.home.join(".pi").exists(),
        "Pi {} wrote to ~/.pi despite the offline agent directory",
        pi.version
    );
    // Fed in odd-sized chunks, as a pipe would deliver them.
    let mut parser = EventParser::new();
    let mut events: Vec<_> = output
        .stdout
        .chunks(113)
        .flat_map(|chunk| parser.feed(chunk))
        .collect();
    events.extend(parser.finish());
    let mut summary = RunSummary::default();
    for event in &events {
        summary.apply(event);
    }
    Ok(Run {
        stdout,
        events,
        summary,
    })
}

/// With `UNIPI_RECORD_PI_JSON` set, saves `stdout` as
/// `tests/fixtures/pi-json/pi-<version>-<name>.jsonl`.
fn record(pi: &PiInstall, name: &str, stdout: &str) -> anyhow::Result<()> {
    if std::env::var_os("UNIPI_RECORD_PI_JSON").is_none() {
        return Ok(());
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pi-json");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("pi-{}-{name}.jsonl", pi.version));
    std::fs::write(&path, stdout).with_context(|| format!("cannot write {}", path.display()))
}

/// The tool names the model was offered in request `index`.
fn offered_tools(server: &ServerHandle, index: usize) -> Vec<String> {
    let requests = server.requests();
    requests[index]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn system_prompt(server: &ServerHandle, index: usize) -> String {
    let requests = server.requests();
    requests[index]["messages"]
        .as_array()
        .and_then(|messages| {
            messages
                .iter()
                .find(|m| m["role"] == "system" || m["role"] == "developer")
        })
        .map(unipi_tui::scripted::message_text)
        .unwrap_or_default()
}

async fn explore_helper_reads_and_answers(line: PiLine) -> anyhow::Result<()> {
    let pi = pi_install(line)?;
    let server = start(Scenario::from_toml_str(SCENARIO, "SCENARIO")?).await?;
    let sandbox = sandbox()?;
    let explore = AgentCatalog::builtin().resolve("explore")?;

    let run = run_helper(
        &pi,
        &server,
        &sandbox,
        &explore,
        "Summarize the notes, please.",
    )
    .await?;
    record(&pi, "explore", &run.stdout)?;
    let summary = &run.summary;
    let context = format!("Pi {}: {summary:#?}\nstdout:\n{}", pi.version, run.stdout);
    assert_eq!(summary.malformed_lines, 0, "{context}");
    assert_eq!(
        summary.final_text, "The notes say: helpers are read-only.",
        "{context}"
    );
    assert_eq!(summary.tool_uses.len(), 1, "{context}");
    let read = &summary.tool_uses[0];
    assert_eq!(
        (read.name.as_str(), read.args.as_str(), read.is_error),
        ("read", "notes.txt", Some(false)),
        "{context}"
    );
    assert_eq!(summary.turns, 2, "{context}");
    assert_eq!(summary.usage.input, 100, "{context}");
    assert_eq!(summary.usage.output, 15, "{context}");
    assert_eq!(summary.error, None, "{context}");
    assert!(summary.finished, "{context}");
    assert!(
        matches!(run.events.first(), Some(PiEvent::Session { id: Some(_) })),
        "{context}"
    );

    // The type's allow-list and prompt reached the model: explore is never offered edit/write.
    let mut tools = offered_tools(&server, 0);
    tools.sort();
    assert_eq!(
        tools,
        ["bash", "find", "grep", "ls", "read"],
        "Pi {}",
        pi.version
    );
    let prompt = system_prompt(&server, 0);
    assert!(
        prompt.contains("You are an explore agent.") && prompt.len() > explore.system_prompt.len(),
        "Pi {}: explore's prompt is appended to Pi's own: {prompt}",
        pi.version
    );
    Ok(())
}

async fn plain_print_is_read(line: PiLine) -> anyhow::Result<()> {
    let pi = pi_install(line)?;
    let server = start(Scenario::from_toml_str(SCENARIO, "SCENARIO")?).await?;
    let sandbox = sandbox()?;
    let work = AgentCatalog::builtin().resolve("work")?;

    let run = run_helper(&pi, &server, &sandbox, &work, "hello").await?;
    record(&pi, "hello", &run.stdout)?;
    let summary = &run.summary;
    let context = format!("Pi {}: {summary:#?}\nstdout:\n{}", pi.version, run.stdout);
    assert_eq!(
        summary.final_text, "Hello from the scripted model!",
        "{context}"
    );
    assert!(summary.tool_uses.is_empty(), "{context}");
    assert_eq!(summary.turns, 1, "{context}");
    assert_eq!(
        (summary.usage.input, summary.usage.output),
        (11, 7),
        "{context}"
    );
    assert!(summary.finished, "{context}");
    let mut tools = offered_tools(&server, 0);
    tools.sort();
    assert_eq!(
        tools,
        ["bash", "edit", "find", "grep", "ls", "read", "write"],
        "Pi {}",
        pi.version
    );
    Ok(())
}

#[tokio::test]
async fn pi_current_explore_helper_reads_and_answers() -> anyhow::Result<()> {
    explore_helper_reads_and_answers(PiLine::Current).await
}

#[tokio::test]
async fn pi_legacy_explore_helper_reads_and_answers() -> anyhow::Result<()> {
    explore_helper_reads_and_answers(PiLine::Legacy).await
}

#[tokio::test]
async fn pi_current_plain_print_is_read() -> anyhow::Result<()> {
    plain_print_is_read(PiLine::Current).await
}

#[tokio::test]
async fn pi_legacy_plain_print_is_read() -> anyhow::Result<()> {
    plain_print_is_read(PiLine::Legacy).await
}

/// The environment of a helper child: the offline agent directory, the sandbox's home, and
/// the pinned Node first on `PATH` when the install brings its own.
fn helper_env(
    pi: &PiInstall,
    offline: &OfflineAgent,
    sandbox: &Sandbox,
) -> anyhow::Result<Vec<(String, String)>> {
    let mut env = offline.env.clone();
    env.push(("HOME".to_string(), sandbox.home.display().to_string()));
    env.push(("TMPDIR".to_string(), sandbox.dirs.tmp.display().to_string()));
    if let Some(node_bin_dir) = &pi.node_bin_dir {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let dirs = std::iter::once(node_bin_dir.clone()).chain(std::env::split_paths(&path));
        let joined = std::env::join_paths(dirs)?;
        env.push(("PATH".to_string(), joined.to_string_lossy().into_owned()));
    }
    Ok(env)
}

/// Runs `explore` on the notes through [`HelperRunner`]; with `silent_first`, `pi` is wrapped
/// in a shell that prints nothing (so the runner's idle kill fires) unless the message is an
/// `@<file>`, in which case it hands over to the real Pi.
async fn run_with_runner(
    pi: &PiInstall,
    server: &ServerHandle,
    sandbox: &Sandbox,
    run_dir: &Path,
    silent_first: bool,
) -> anyhow::Result<RunOutcome> {
    let offline: OfflineAgent =
        write_agent_dir(&sandbox.agent, &server.base_url(), &server.models())?;
    let explore = AgentType {
        model: Some(format!("{PROVIDER_ID}/{}", server.models()[0])),
        ..AgentCatalog::builtin().resolve("explore")?
    };
    let mut spec = RunSpec::new(
        &pi.bin,
        explore,
        "Summarize the notes, please.",
        &sandbox.cwd,
        run_dir,
    );
    spec.leading_args = vec!["--offline".to_string()];
    spec.env = helper_env(pi, &offline, sandbox)?;
    if silent_first {
        spec.leading_args = vec![
            "-c".to_string(),
            r#"for last; do :; done
               case "$last" in @*) exec "$0" --offline "$@" ;; *) exec sleep 60 ;; esac"#
                .to_string(),
            pi.bin.display().to_string(),
        ];
        spec.program = PathBuf::from("/bin/sh");
        // Long enough for a cold Node start of the retried real Pi (the legacy line needs ~1 s
        // alone, several seconds on a loaded 2-core machine).
        spec.idle_timeout = std::time::Duration::from_secs(10);
    }
    let mut handle = HelperRunner::start(spec).await?;
    tokio::time::timeout(PRINT_TIMEOUT, handle.wait())
        .await
        .with_context(|| format!("Pi {} did not finish in {PRINT_TIMEOUT:?}", pi.version))
}

async fn runner_runs_explore(line: PiLine, silent_first: bool) -> anyhow::Result<()> {
    let pi = pi_install(line)?;
    let server = start(Scenario::from_toml_str(SCENARIO, "SCENARIO")?).await?;
    let sandbox = sandbox()?;
    let run_dir = sandbox.home.join("runs/run-1");

    let outcome = run_with_runner(&pi, &server, &sandbox, &run_dir, silent_first).await?;
    let context = format!("Pi {}: {outcome:#?}", pi.version);
    assert_eq!(outcome.status, RunStatus::Completed, "{context}");
    assert_eq!(outcome.error, None, "{context}");
    assert_eq!(
        outcome.summary.final_text, "The notes say: helpers are read-only.",
        "{context}"
    );
    assert_eq!(outcome.summary.tool_uses.len(), 1, "{context}");
    assert_eq!(outcome.summary.tool_uses[0].name, "read", "{context}");
    assert_eq!(
        (outcome.summary.usage.input, outcome.summary.usage.output),
        (100, 15),
        "{context}"
    );
    assert_eq!(outcome.exit.code, Some(0), "{context}");
    let want_retry = silent_first.then_some(RetryKind::FileDelivery);
    assert_eq!(outcome.retry, want_retry, "{context}");

    let status: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("status.json"))?)?;
    assert_eq!(status["status"], "completed", "{context}\n{status}");
    assert_eq!(status["pid"], outcome.exit.pid.unwrap(), "{status}");
    assert_eq!(
        status.get("retry").and_then(|r| r.as_str()),
        want_retry.map(RetryKind::as_str),
        "{status}"
    );
    assert_eq!(
        std::fs::read_to_string(run_dir.join("output.txt"))?,
        "The notes say: helpers are read-only."
    );
    // The session went to the run directory, not the user's (or the agent dir's) session list.
    let session = outcome.session_file.clone().expect("a session file");
    assert!(session.starts_with(run_dir.join("session")), "{context}");
    assert!(session.exists(), "{context}");
    assert_eq!(
        status["sessionFile"],
        session.display().to_string(),
        "{status}"
    );
    assert!(
        !sandbox.agent.join("sessions").exists(),
        "Pi {} wrote a session outside the run directory",
        pi.version
    );
    Ok(())
}

#[tokio::test]
async fn pi_current_runner_runs_explore() -> anyhow::Result<()> {
    runner_runs_explore(PiLine::Current, false).await
}

#[tokio::test]
async fn pi_legacy_runner_runs_explore() -> anyhow::Result<()> {
    runner_runs_explore(PiLine::Legacy, false).await
}

#[tokio::test]
async fn pi_current_runner_retries_a_silent_start_through_a_file() -> anyhow::Result<()> {
    runner_runs_explore(PiLine::Current, true).await
}

#[tokio::test]
async fn pi_legacy_runner_retries_a_silent_start_through_a_file() -> anyhow::Result<()> {
    runner_runs_explore(PiLine::Legacy, true).await
}

/// `spawn_helper` (foreground) through the `helpers` module, with the real Pi as the child.
async fn spawn_helper_runs_explore(line: PiLine) -> anyhow::Result<()> {
    let pi = pi_install(line)?;
    let server = start(Scenario::from_toml_str(SCENARIO, "SCENARIO")?).await?;
    let sandbox = sandbox()?;
    let offline: OfflineAgent =
        write_agent_dir(&sandbox.agent, &server.base_url(), &server.models())?;
    let mut catalog = AgentCatalog::builtin();
    catalog.insert(AgentType {
        model: Some(format!("{PROVIDER_ID}/{}", server.models()[0])),
        ..catalog.resolve("explore")?
    });
    let runs_root = sandbox.home.join("runs");
    let mut settings = HelperSettings::new(
        PiLaunch {
            program: pi.bin.clone(),
            leading_args: vec!["--offline".to_string()],
            env: helper_env(&pi, &offline, &sandbox)?,
        },
        sandbox.cwd.clone(),
        runs_root.clone(),
        catalog,
        HelpersConfig::default(),
    );
    settings.depth = 0; // whatever this test process inherited, it is the root here
    let module = HelpersModule::new(settings);
    let call = ToolCall {
        agent: AgentId::main(),
        tool: SPAWN_TOOL.to_string(),
        call_id: "call-1".to_string(),
        args: serde_json::json!({
            "type": "explore",
            "prompt": "Summarize the notes, please.",
            "description": "summarize the notes",
        }),
        updates: UpdateSender::detached(),
        cancel: CancelToken::never(),
    };
    let output = tokio::time::timeout(PRINT_TIMEOUT, module.call_tool(call))
        .await
        .with_context(|| format!("Pi {} did not finish in {PRINT_TIMEOUT:?}", pi.version))?
        .map_err(|err| anyhow::anyhow!("spawn_helper threw: {err}"))?;
    let context = format!("Pi {}: {:#}", pi.version, output.details);
    assert_eq!(output.details["status"], "completed", "{context}");
    assert_eq!(
        output.content,
        vec![ContentBlock::text("The notes say: helpers are read-only.")],
        "{context}"
    );
    assert_eq!(output.details["toolUses"][0]["name"], "read", "{context}");
    assert_eq!(output.details["usage"]["input"], 100, "{context}");
    let run_id = output.details["runId"].as_str().unwrap();
    let status: serde_json::Value =
        serde_json::from_slice(&std::fs::read(runs_root.join(run_id).join("status.json"))?)?;
    assert_eq!(status["status"], "completed", "{status}");
    Ok(())
}

#[tokio::test]
async fn pi_current_spawn_helper_runs_explore() -> anyhow::Result<()> {
    spawn_helper_runs_explore(PiLine::Current).await
}

#[tokio::test]
async fn pi_legacy_spawn_helper_runs_explore() -> anyhow::Result<()> {
    spawn_helper_runs_explore(PiLine::Legacy).await
}

/// The RPC scenario, served for one test.
async fn rpc_server() -> anyhow::Result<ServerHandle> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios/helpers-rpc.toml");
    start(Scenario::from_file(&path)?).await
}

/// A runner spec for the `work` type on the scripted model, with `prompt` and its own run dir.
fn work_spec(
    pi: &PiInstall,
    server: &ServerHandle,
    sandbox: &Sandbox,
    run_dir: &Path,
    prompt: &str,
) -> anyhow::Result<RunSpec> {
    let offline: OfflineAgent =
        write_agent_dir(&sandbox.agent, &server.base_url(), &server.models())?;
    let work = AgentType {
        model: Some(format!("{PROVIDER_ID}/{}", server.models()[0])),
        ..AgentCatalog::builtin().resolve("work")?
    };
    let mut spec = RunSpec::new(&pi.bin, work, prompt, &sandbox.cwd, run_dir);
    spec.leading_args = vec!["--offline".to_string()];
    spec.env = helper_env(pi, &offline, sandbox)?;
    Ok(spec)
}

async fn wait_with_timeout(pi: &PiInstall, handle: &mut RunHandle) -> anyhow::Result<RunOutcome> {
    tokio::time::timeout(PRINT_TIMEOUT, handle.wait())
        .await
        .with_context(|| format!("Pi {} did not finish in {PRINT_TIMEOUT:?}", pi.version))
}

/// The texts of a recorded request's messages, as `role: text`.
fn request_messages(request: &serde_json::Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .map(|m| {
                    format!(
                        "{}: {}",
                        m["role"].as_str().unwrap_or_default(),
                        unipi_tui::scripted::message_text(m)
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// No running process is left in group `pgid` (read from /proc: zombies do not count).
fn group_gone(pgid: u32) -> bool {
    let running_member = |stat: String| {
        let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = rest.split_whitespace().collect();
        fields.first() != Some(&"Z") && fields.get(2) == Some(&pgid.to_string().as_str())
    };
    !std::fs::read_dir("/proc")
        .map(|dir| {
            dir.flatten()
                .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
                .any(running_member)
        })
        .unwrap_or(false)
}

async fn steering_reaches_the_model(line: PiLine) -> anyhow::Result<()> {
    let pi = pi_install(line)?;
    let server = rpc_server().await?;
    let sandbox = sandbox()?;
    let run_dir = sandbox.home.join("runs/steer");
    let spec = work_spec(
        &pi,
        &server,
        &sandbox,
        &run_dir,
        "Do a slow survey of the repo.",
    )?;
    let mut handle = HelperRunner::start(spec).await?;
    // The slow tool call is running: the steer is delivered before the next model call.
    let mut progress = handle.progress();
    tokio::time::timeout(
        PRINT_TIMEOUT,
        progress.wait_for(|now| now.last_tool.is_some()),
    )
    .await
    .context("the tool call did not start")??;
    handle
        .steer("STEER-MARK: look at the README instead.".to_string())
        .map_err(anyhow::Error::msg)?;
    let outcome = wait_with_timeout(&pi, &mut handle).await?;
    let context = format!("Pi {}: {outcome:#?}", pi.version);
    assert_eq!(outcome.status, RunStatus::Completed, "{context}");
    assert_eq!(
        outcome.summary.final_text, "Steered: switching to the README.",
        "{context}"
    );
    let requests = server.requests();
    let last = request_messages(requests.last().unwrap());
    assert_eq!(
        last.last().map(String::as_str),
        Some("user: STEER-MARK: look at the README instead."),
        "{context}\n{last:#?}"
    );
    // The tool's result came before the steer: the steer waited for the running call.
    assert!(
        last.iter().any(|m| m.contains("survey-done")),
        "{context}\n{last:#?}"
    );
    assert!(
        handle.transcript().contains(&TranscriptEntry::User(
            "STEER-MARK: look at the README instead.".into()
        )),
        "{context}"
    );
    assert_eq!(
        handle.progress().borrow().model.as_deref(),
        Some(format!("{PROVIDER_ID}/scripted-test").as_str())
    );
    Ok(())
}

#[tokio::test]
async fn pi_current_steering_reaches_the_model() -> anyhow::Result<()> {
    steering_reaches_the_model(PiLine::Current).await
}

#[tokio::test]
async fn pi_legacy_steering_reaches_the_model() -> anyhow::Result<()> {
    steering_reaches_the_model(PiLine::Legacy).await
}

async fn turn_budget_is_enforced(line: PiLine) -> anyhow::Result<()> {
    let pi = pi_install(line)?;
    let server = rpc_server().await?;
    let sandbox = sandbox()?;
    let run_dir = sandbox.home.join("runs/budget");
    let mut spec = work_spec(&pi, &server, &sandbox, &run_dir, "Tick forever, please.")?;
    spec.budget = Budget::turns(2);
    let mut handle = HelperRunner::start(spec).await?;
    let pid = handle.pid().context("a running child")?;
    let outcome = wait_with_timeout(&pi, &mut handle).await?;
    let context = format!("Pi {}: {outcome:#?}", pi.version);
    let reason = "turn budget exceeded: 4 turns (limit 2)";
    assert_eq!(outcome.status, RunStatus::Failed, "{context}");
    assert_eq!(outcome.error.as_deref(), Some(reason), "{context}");
    assert_eq!(
        outcome.budget_exceeded.as_deref(),
        Some(reason),
        "{context}"
    );
    // It ended through the RPC abort and stdin EOF, not a kill; nothing of it is left.
    assert_eq!(outcome.exit.code, Some(0), "{context}");
    assert!(group_gone(pid), "{context}");
    assert!(
        !outcome.summary.final_text.is_empty(),
        "the partial answer is kept: {context}"
    );
    // The budget was stated in the system prompt, and the steer reached the model.
    let requests = server.requests();
    let first = request_messages(&requests[0]);
    assert!(
        first.iter().any(|m| m.contains("at most 2 turns")),
        "{context}\n{first:#?}"
    );
    let steered = requests.iter().any(|request| {
        request_messages(request)
            .iter()
            .any(|m| m.starts_with("user: Budget reached: you have used 2 of your 2 turns."))
    });
    assert!(steered, "{context}");
    let status: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("status.json"))?)?;
    assert_eq!(status["status"], "failed", "{status}");
    assert_eq!(status["budgetExceeded"], reason, "{status}");
    Ok(())
}

#[tokio::test]
async fn pi_current_turn_budget_is_enforced() -> anyhow::Result<()> {
    turn_budget_is_enforced(PiLine::Current).await
}

#[tokio::test]
async fn pi_legacy_turn_budget_is_enforced() -> anyhow::Result<()> {
    turn_budget_is_enforced(PiLine::Legacy).await
}

/// Runs a first helper that leaves a word in its session; returns its session file.
async fn first_session(
    pi: &PiInstall,
    server: &ServerHandle,
    sandbox: &Sandbox,
) -> anyhow::Result<PathBuf> {
    let run_dir = sandbox.home.join("runs/first");
    let spec = work_spec(pi, server, sandbox, &run_dir, "Remember the word PELICAN.")?;
    let mut handle = HelperRunner::start(spec).await?;
    let outcome = wait_with_timeout(pi, &mut handle).await?;
    assert_eq!(outcome.status, RunStatus::Completed, "{outcome:#?}");
    assert_eq!(outcome.summary.final_text, "Remembered: PELICAN.");
    let file = outcome
        .session_file
        .context("the first run names its session file")?;
    assert!(
        file.starts_with(run_dir.join("session")),
        "{}",
        file.display()
    );
    Ok(file)
}

/// The last request carries the first run's exchange before the new question.
fn assert_continues_first_run(server: &ServerHandle, version: &str) {
    let requests = server.requests();
    let last = request_messages(requests.last().unwrap());
    let context = format!("Pi {version}: {last:#?}");
    let position = |text: &str| last.iter().position(|m| m == text);
    let remember = position("user: Remember the word PELICAN.").expect(&context);
    let remembered = position("assistant: Remembered: PELICAN.").expect(&context);
    let question = position("user: Which word did I ask you to remember?").expect(&context);
    assert!(remember < remembered && remembered < question, "{context}");
}

async fn resume_continues_the_session(line: PiLine) -> anyhow::Result<()> {
    let pi = pi_install(line)?;
    let server = rpc_server().await?;
    let sandbox = sandbox()?;
    let parent = first_session(&pi, &server, &sandbox).await?;

    let run_dir = sandbox.home.join("runs/resume");
    let mut spec = work_spec(
        &pi,
        &server,
        &sandbox,
        &run_dir,
        "Which word did I ask you to remember?",
    )?;
    spec.session = SessionMode::Resume(parent.clone());
    let mut handle = HelperRunner::start(spec).await?;
    let outcome = wait_with_timeout(&pi, &mut handle).await?;
    assert_eq!(outcome.status, RunStatus::Completed, "{outcome:#?}");
    assert_eq!(outcome.session_file.as_deref(), Some(parent.as_path()));
    assert_continues_first_run(&server, &pi.version);
    // The stored session grew by the second exchange.
    let stored = std::fs::read_to_string(&parent)?;
    assert!(
        stored.contains("Which word did I ask you to remember?"),
        "{stored}"
    );
    Ok(())
}

#[tokio::test]
async fn pi_current_resume_continues_the_session() -> anyhow::Result<()> {
    resume_continues_the_session(PiLine::Current).await
}

#[tokio::test]
async fn pi_legacy_resume_continues_the_session() -> anyhow::Result<()> {
    resume_continues_the_session(PiLine::Legacy).await
}

async fn fork_copies_the_parent_session(line: PiLine) -> anyhow::Result<()> {
    let pi = pi_install(line)?;
    let server = rpc_server().await?;
    let sandbox = sandbox()?;
    let parent = first_session(&pi, &server, &sandbox).await?;
    let parent_before = std::fs::read_to_string(&parent)?;

    let run_dir = sandbox.home.join("runs/fork");
    let mut spec = work_spec(
        &pi,
        &server,
        &sandbox,
        &run_dir,
        "Which word did I ask you to remember?",
    )?;
    spec.session = SessionMode::Fork(parent.clone());
    let mut handle = HelperRunner::start(spec).await?;
    let outcome = wait_with_timeout(&pi, &mut handle).await?;
    let context = format!("Pi {}: {outcome:#?}", pi.version);
    assert_eq!(outcome.status, RunStatus::Completed, "{context}");
    assert_continues_first_run(&server, &pi.version);
    let fork = outcome
        .session_file
        .clone()
        .context("the fork's session file")?;
    assert!(fork.starts_with(run_dir.join("session")), "{context}");
    assert_ne!(fork, parent, "{context}");
    let forked = std::fs::read_to_string(&fork)?;
    assert!(
        forked.contains("PELICAN") && forked.contains("Which word did I ask you to remember?"),
        "{context}\n{forked}"
    );
    // The parent is untouched.
    assert_eq!(
        std::fs::read_to_string(&parent)?,
        parent_before,
        "{context}"
    );
    Ok(())
}

#[tokio::test]
async fn pi_current_fork_copies_the_parent_session() -> anyhow::Result<()> {
    fork_copies_the_parent_session(PiLine::Current).await
}

#[tokio::test]
async fn pi_legacy_fork_copies_the_parent_session() -> anyhow::Result<()> {
    fork_copies_the_parent_session(PiLine::Legacy).await
}

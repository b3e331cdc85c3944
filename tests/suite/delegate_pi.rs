//! Read-only delegates against the real, pinned Pi 1.x and the scripted model server. First the
//! child alone: the real `unipi-tui __delegate-child` binary, given a task directory made with
//! the library's own seed and manifest, runs a read-only Pi on the pinned route and commits a
//! `result.json` that verifies against the manifest; a tampered seed is refused before Pi
//! starts. Then the `delegate` module end to end with a channel host (no TUI): `bg_delegate`
//! → running → committed → `outcome.json` → the notification's content → `bg_result`; and a stop
//! that leaves no process behind and records `cancelled`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use support::pi::{PRINT_TIMEOUT, PiInstall, PiLine, pi_install};
use support::procs::{alive, cwd};
use tokio::sync::mpsc;
use unipi_tui::bridge::{
    AgentId, AgentNotice, CancelToken, ModelInfo, Module as _, ToolCall, UpdateSender,
};
use unipi_tui::delegate::artifacts::{
    self, Limits, MANIFEST_SCHEMA, Manifest, ManifestState, OUTCOME_FILE, Outcome, PiCommand,
    RESULT_FILE, Route, RouteOrigin, SEED_FILE, TERMINAL_FILE, TaskDir,
};
use unipi_tui::delegate::child::CHILD_SUBCOMMAND;
use unipi_tui::delegate::module::{DELEGATE_TOOL, RESULT_TOOL};
use unipi_tui::delegate::seed::{SeedInput, build_seed, sha256_hex};
use unipi_tui::delegate::{
    ChannelHost, DelegateConfig, DelegateModule, DelegateSettings, ParentSession,
};
use unipi_tui::helpers::board::{HelperBoard, RowKind};
use unipi_tui::helpers::runner::RunStatus;
use unipi_tui::pi::offline::{PROVIDER_ID, write_agent_dir};
use unipi_tui::scripted::{Scenario, ServerHandle, start};

const SCENARIO: &str = r#"
model = ["scripted-delegate"]
chunk_chars = 16

[[rule]]
role = "user"
when = "(?i)what do the notes say"
reply = "Reading the notes."
tool_calls = [{ name = "read", arguments = { path = "notes.txt" } }]
usage = { prompt_tokens = 40, completion_tokens = 6 }

[[rule]]
role = "tool"
when = "delegates are read-only"
reply = "The notes say: delegates are read-only."
usage = { prompt_tokens = 60, completion_tokens = 9 }

[[rule]]
role = "user"
when = "(?i)take your time"
delay_ms = 60000
reply = "Too late."

[fallback]
reply = "Nothing scripted for that."
"#;

const ANSWER: &str = "The notes say: delegates are read-only.";

struct Sandbox {
    _dirs: support::sandbox::Sandbox,
    pi: PiInstall,
    server: ServerHandle,
    cwd: PathBuf,
    env: Vec<(String, String)>,
    session_file: PathBuf,
}

impl Sandbox {
    fn model(&self) -> String {
        self.server.models()[0].clone()
    }

    fn route(&self) -> Route {
        Route {
            provider: PROVIDER_ID.to_string(),
            model: self.model(),
            context_window_tokens: 128_000,
            origin: RouteOrigin::Explicit,
        }
    }

    fn pi_command(&self) -> PiCommand {
        PiCommand {
            program: self.pi.bin.clone(),
            leading_args: vec!["--offline".to_string()],
        }
    }
}

async fn sandbox() -> anyhow::Result<Sandbox> {
    let pi = pi_install(PiLine::Current)?;
    let server = start(Scenario::from_toml_str(SCENARIO, "SCENARIO")?).await?;
    let dirs = support::sandbox::Sandbox::new();
    let cwd = dirs.project.clone();
    std::fs::write(cwd.join("notes.txt"), "delegates are read-only\n")?;
    let offline = write_agent_dir(&dirs.dir("agent"), &server.base_url(), &server.models())?;
    let mut env = offline.env.clone();
    env.extend(
        dirs.env()
            .into_iter()
            .map(|(key, value)| (key.to_string(), value)),
    );
    if let Some(node_bin_dir) = &pi.node_bin_dir {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let dirs = std::iter::once(node_bin_dir.clone()).chain(std::env::split_paths(&path));
        env.push((
            "PATH".to_string(),
            std::env::join_paths(dirs)?.to_string_lossy().into_owned(),
        ));
    }
    // The parent conversation, as Pi would have saved it.
    let session_file = dirs.root().join("parent-session.jsonl");
    let lines = [
        json!({"type": "session", "version": 3, "id": "parent-1", "cwd": cwd}),
        json!({"type": "message", "id": "u1", "parentId": null,
               "message": {"role": "user", "content": "We are reviewing the project notes."}}),
        json!({"type": "message", "id": "a1", "parentId": "u1",
               "message": {"role": "assistant", "content": [{"type": "text", "text": "Sure."}]}}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&session_file, text.join("\n") + "\n")?;
    Ok(Sandbox {
        _dirs: dirs,
        pi,
        server,
        cwd,
        env,
        session_file,
    })
}

/// A task directory as `bg_delegate` would leave it, made with the library's own pieces.
fn make_task(sandbox: &Sandbox, directive: &str) -> anyhow::Result<(TaskDir, Manifest)> {
    let route = sandbox.route();
    let limits = Limits {
        max_turns: 6,
        timeout_seconds: 60,
        allowed_input_tokens: route.allowed_input_tokens().unwrap(),
        ..Limits::default()
    };
    let (task_id, nonce) = ("d0123456789abcdef0123456789abcdef", "feedface");
    let seed = build_seed(&SeedInput {
        task_id,
        nonce,
        cwd: &sandbox.cwd,
        route: &route,
        directive,
        session_file: &sandbox.session_file,
        active_call_id: None,
        budget_bytes: 16 * 1024,
        limits,
    })?;
    let dir = TaskDir::new(&sandbox.cwd, "parent-1-1", task_id);
    dir.create()?;
    std::fs::write(dir.file(SEED_FILE), &seed.bytes)?;
    let manifest = Manifest {
        schema_version: MANIFEST_SCHEMA.to_string(),
        task_id: task_id.to_string(),
        launch_nonce: nonce.to_string(),
        name: "notes".to_string(),
        created_at: 0,
        updated_at: 0,
        cwd: sandbox.cwd.clone(),
        route,
        limits,
        seed_sha256: seed.sha256.clone(),
        seed_bytes: seed.bytes.len(),
        directive_sha256: sha256_hex(directive.as_bytes()),
        pi: sandbox.pi_command(),
        state: ManifestState::Launched,
        child_pid: None,
        error: None,
    };
    dir.create_manifest(&manifest)?;
    Ok((dir, manifest))
}

async fn run_child(sandbox: &Sandbox, dir: &TaskDir) -> anyhow::Result<std::process::Output> {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_unipi-tui"));
    command
        .arg(CHILD_SUBCOMMAND)
        .arg(&dir.dir)
        .current_dir(&sandbox.cwd)
        .envs(sandbox.env.iter().map(|(k, v)| (k, v)))
        .kill_on_drop(true);
    let output = tokio::time::timeout(PRINT_TIMEOUT, command.output()).await??;
    Ok(output)
}

#[tokio::test]
async fn delegate_child_commits_a_verified_answer_on_real_pi() -> anyhow::Result<()> {
    let sandbox = sandbox().await?;
    let (dir, manifest) = make_task(&sandbox, "What do the notes say?")?;
    let output = run_child(&sandbox, &dir).await?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let context = format!(
        "status {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{context}");
    assert!(!dir.file(TERMINAL_FILE).exists(), "{context}");

    let result = artifacts::verify_result(&manifest, &std::fs::read(dir.file(RESULT_FILE))?)
        .map_err(|err| anyhow::anyhow!("{}\n{context}", err.describe()))?;
    assert_eq!(result.answer.text, ANSWER, "{context}");
    assert_eq!(result.tool_calls, 1, "{context}");
    assert_eq!(
        (result.usage.input, result.usage.output),
        (100, 15),
        "{context}"
    );

    // Progress reached stdout as the child's own JSON lines.
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "delegate_started", "{context}");
    assert!(lines[0]["piPid"].as_u64().is_some(), "{context}");
    let last = lines
        .iter()
        .rfind(|l| l["type"] == "delegate_progress")
        .unwrap();
    assert_eq!(last["toolUses"], 1, "{context}");

    // The model saw the seed and the directive, and only the read-only tools.
    let requests = sandbox.server.requests();
    let mut tools: Vec<String> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_string())
        .collect();
    tools.sort();
    assert_eq!(tools, ["find", "grep", "ls", "read"]);
    let body = requests[0].to_string();
    assert!(
        body.contains("We are reviewing the project notes."),
        "{body}"
    );
    assert!(body.contains(&manifest.seed_sha256) || body.contains("conversation_projection"));
    // Its own Pi session, inside the task directory, never the user's.
    assert!(
        has_jsonl(&dir.file("child-run")),
        "no child session under {}",
        dir.dir.display()
    );
    Ok(())
}

#[tokio::test]
async fn delegate_child_refuses_a_tampered_seed() -> anyhow::Result<()> {
    let sandbox = sandbox().await?;
    let (dir, _) = make_task(&sandbox, "What do the notes say?")?;
    let mut seed = std::fs::read(dir.file(SEED_FILE))?;
    seed.push(b' ');
    std::fs::write(dir.file(SEED_FILE), seed)?;
    let output = run_child(&sandbox, &dir).await?;
    assert_eq!(output.status.code(), Some(1));
    let terminal: Value = serde_json::from_slice(&std::fs::read(dir.file(TERMINAL_FILE))?)?;
    assert_eq!(terminal["code"], "seed_hash_mismatch", "{terminal}");
    assert!(!dir.file(RESULT_FILE).exists());
    assert!(sandbox.server.requests().is_empty(), "Pi never ran");
    Ok(())
}

fn module_for(
    sandbox: &Sandbox,
) -> (
    DelegateModule,
    HelperBoard,
    mpsc::UnboundedReceiver<AgentNotice>,
) {
    let settings = DelegateSettings {
        workspace: sandbox.cwd.clone(),
        pi: sandbox.pi_command(),
        env: sandbox.env.clone(),
        child_program: PathBuf::from(env!("CARGO_BIN_EXE_unipi-tui")),
        config: DelegateConfig {
            inline_answer_bytes: ANSWER.len(),
            ..DelegateConfig::default()
        }
        .into(),
    };
    let module = DelegateModule::new(settings);
    let (tx, rx) = mpsc::unbounded_channel();
    let model = ModelInfo {
        provider: PROVIDER_ID.to_string(),
        id: sandbox.model(),
        context_window: Some(128_000),
        ..ModelInfo::default()
    };
    module.attach_host(Arc::new(ChannelHost {
        models: vec![model],
        notices: tx,
    }));
    let board = HelperBoard::new();
    module.attach_board(board.clone());
    module.set_session(
        &AgentId::main(),
        ParentSession {
            session_id: Some("parent-1".to_string()),
            session_file: Some(sandbox.session_file.clone()),
            model: Some((PROVIDER_ID.to_string(), sandbox.model())),
        },
    );
    (module, board, rx)
}

fn call(tool: &str, args: Value) -> ToolCall {
    ToolCall {
        agent: AgentId::main(),
        tool: tool.to_string(),
        call_id: "call-1".to_string(),
        args,
        updates: UpdateSender::detached(),
        cancel: CancelToken::never(),
    }
}

fn text_of(output: &unipi_tui::bridge::ToolOutput) -> String {
    output
        .content
        .iter()
        .map(|block| match block {
            unipi_tui::bridge::ContentBlock::Text { text } => text.clone(),
            _ => String::new(),
        })
        .collect()
}

async fn next_notice(rx: &mut mpsc::UnboundedReceiver<AgentNotice>) -> AgentNotice {
    tokio::time::timeout(PRINT_TIMEOUT, rx.recv())
        .await
        .expect("the delegate ended in time")
        .expect("a notice")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bg_delegate_runs_to_a_verified_notification_and_bg_result() -> anyhow::Result<()> {
    let sandbox = sandbox().await?;
    let (module, board, mut notices) = module_for(&sandbox);
    let receipt = module
        .call_tool(call(
            DELEGATE_TOOL,
            json!({"name": "notes", "prompt": "What do the notes say?"}),
        ))
        .await
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    let task_id = receipt.details["task_id"].as_str().unwrap().to_string();
    let dir = TaskDir::at(receipt.details["artifact_dir"].as_str().unwrap());
    let expected_root = sandbox
        .cwd
        .join(".unipi/delegate")
        .join(format!("parent-1-{}", std::process::id()));
    assert_eq!(dir.dir, expected_root.join(&task_id));
    assert!(
        text_of(&receipt).contains("Route pinned: unipi-scripted/"),
        "{}",
        text_of(&receipt)
    );
    let row = board.row(&task_id).unwrap();
    assert_eq!(
        (row.kind, row.status),
        (RowKind::Delegate, RunStatus::Running)
    );
    assert!(
        board
            .steer(&task_id, "hurry".into())
            .unwrap_err()
            .contains("cannot be steered")
    );

    let notice = next_notice(&mut notices).await;
    let context = format!("{}\n{:#}", notice.content, notice.details);
    assert_eq!(notice.id, task_id);
    assert!(notice.trigger_turn);
    assert!(
        notice.content.starts_with("<delegate-result-notification>"),
        "{context}"
    );
    assert!(
        notice.content.contains("<status>committed</status>"),
        "{context}"
    );
    // Exactly at the cap: inline, verbatim, after the block.
    assert!(
        notice
            .content
            .ends_with(&format!("</delegate-result-notification>\n\n{ANSWER}")),
        "{context}"
    );
    assert_eq!(notice.details["delivery"], "inline", "{context}");

    let outcome: Outcome = artifacts::read_json(&dir.file(OUTCOME_FILE))?;
    assert_eq!(outcome.status, ManifestState::Committed);
    assert_eq!(
        outcome.answer_sha256.as_deref(),
        Some(sha256_hex(ANSWER.as_bytes()).as_str())
    );
    assert_eq!(dir.read_manifest()?.state, ManifestState::Committed);
    assert_eq!(board.row(&task_id).unwrap().status, RunStatus::Completed);

    let inline = module
        .call_tool(call(RESULT_TOOL, json!({"taskId": task_id})))
        .await
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    assert!(
        text_of(&inline).ends_with(&format!("\n\n{ANSWER}")),
        "{}",
        text_of(&inline)
    );
    let artifact = module
        .call_tool(call(
            RESULT_TOOL,
            json!({"taskId": task_id, "delivery": "artifact"}),
        ))
        .await
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    assert!(
        !text_of(&artifact).contains(ANSWER),
        "{}",
        text_of(&artifact)
    );
    assert!(
        text_of(&artifact).contains("result.json"),
        "{}",
        text_of(&artifact)
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_a_delegate_leaves_no_process_and_records_cancelled() -> anyhow::Result<()> {
    let sandbox = sandbox().await?;
    let (module, board, mut notices) = module_for(&sandbox);
    let receipt = module
        .call_tool(call(
            DELEGATE_TOOL,
            json!({"name": "slow", "prompt": "Take your time."}),
        ))
        .await
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    let task_id = receipt.details["task_id"].as_str().unwrap().to_string();
    let dir = TaskDir::at(receipt.details["artifact_dir"].as_str().unwrap());
    let child_pid = dir.read_manifest()?.child_pid.unwrap();
    // Wait until the model was asked, so Pi is really running.
    support::wait::eventually_async("Pi to call the model", PRINT_TIMEOUT, async || {
        !sandbox.server.requests().is_empty()
    })
    .await;
    let pi_pid = pi_pid_of(&dir).expect("the runner recorded Pi's pid");
    // The delegate and its Pi run in the project (the workspace), not where the test runs.
    assert_ne!(std::env::current_dir()?, sandbox.cwd);
    assert_eq!(cwd(child_pid).as_deref(), Some(sandbox.cwd.as_path()));
    assert_eq!(cwd(pi_pid).as_deref(), Some(sandbox.cwd.as_path()));
    assert!(board.stop(&task_id));
    let notice = next_notice(&mut notices).await;
    assert!(
        notice.content.contains("<status>cancelled</status>"),
        "{}",
        notice.content
    );
    assert!(
        notice.content.contains("child_cancelled"),
        "{}",
        notice.content
    );
    assert!(!alive(child_pid), "the child process is gone");
    assert!(!alive(pi_pid), "Pi is gone");
    // The child itself recorded the cancellation (it handled SIGTERM, it was not killed).
    let terminal: Value = serde_json::from_slice(&std::fs::read(dir.file(TERMINAL_FILE))?)?;
    assert_eq!(terminal["code"], "child_cancelled", "{terminal}");
    let outcome: Outcome = artifacts::read_json(&dir.file(OUTCOME_FILE))?;
    assert_eq!(outcome.status, ManifestState::Cancelled);
    assert_eq!(dir.read_manifest()?.state, ManifestState::Cancelled);
    assert!(!dir.file(RESULT_FILE).exists());
    let err = module
        .call_tool(call(RESULT_TOOL, json!({"taskId": task_id})))
        .await
        .unwrap_err();
    assert!(
        err.message.starts_with("[child_cancelled]"),
        "{}",
        err.message
    );
    Ok(())
}

/// The delegate's Pi, from the runner's process record in the child's run directory.
fn pi_pid_of(dir: &TaskDir) -> Option<u32> {
    let path: &Path = &dir.file("child-run").join("process.json");
    let value: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    value["pid"]
        .as_u64()
        .and_then(|pid| u32::try_from(pid).ok())
}

/// Whether a `.jsonl` file is somewhere under `dir`.
fn has_jsonl(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|entry| {
            let path = entry.path();
            if path.is_dir() {
                has_jsonl(&path)
            } else {
                path.extension().is_some_and(|ext| ext == "jsonl")
            }
        })
}

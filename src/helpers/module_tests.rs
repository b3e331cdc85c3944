//! The helpers module's tests, through its tools with a fake or real Pi.

use std::path::Path;

use serde_json::Value;
use tokio::sync::mpsc;

use super::*;
use crate::bridge::{AgentId, CancelHandle, CancelToken, UpdateSender};
use crate::helpers::agents::{AgentCatalog, AgentError};
use crate::helpers::runner::RunStatus;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pi-json")
        .join(name)
}

/// Settings whose "Pi" is `sh -c <script> fake <pi args…>`.
fn settings(dir: &Path, script: &str) -> HelperSettings {
    HelperSettings {
        launch: PiLaunch {
            program: "/bin/sh".into(),
            leading_args: vec!["-c".into(), script.into(), "fake".into()],
            env: vec![],
        },
        cwd: dir.to_path_buf(),
        runs_root: dir.join("runs"),
        catalog: AgentCatalog::builtin(),
        config: HelpersConfig::default(),
        depth: 0,
        board: HelperBoard::new(),
    }
}

fn replay_script() -> String {
    format!("cat '{}'", fixture("pi-1.6.0-explore.jsonl").display())
}

fn call(tool: &str, args: Value) -> ToolCall {
    ToolCall {
        agent: AgentId::main(),
        tool: tool.into(),
        call_id: "call-1".into(),
        args,
        updates: UpdateSender::detached(),
        cancel: CancelToken::never(),
    }
}

fn args(agent_type: &str, prompt: &str) -> SpawnArgs {
    SpawnArgs {
        agent_type: agent_type.into(),
        prompt: prompt.into(),
        description: "read the notes".into(),
        ..SpawnArgs::default()
    }
}

fn text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .map(|block| match block {
            crate::bridge::ContentBlock::Text { text } => text.clone(),
            crate::bridge::ContentBlock::Image { .. } => String::new(),
        })
        .collect()
}

#[test]
fn config_merges_files_and_reports_bad_values() {
    let path = Path::new("/w/.unipi/config/subagents.json");
    let cases: [(&str, HelpersConfig, usize); 4] = [
        ("{}", HelpersConfig::default(), 0),
        (
            r#"{"maxSubagentDepth": 1, "maxSubagentSpawnsPerSession": 3, "maxConcurrent": 2,
                    "maxActiveAsyncRunsPerSession": 1, "defaultDeadlineMinutes": 5, "other": true}"#,
            HelpersConfig {
                max_depth: 1,
                max_spawns_per_session: 3,
                max_concurrent: 2,
                max_active_async: 1,
                deadline: Duration::from_secs(300),
                ..HelpersConfig::default()
            },
            0,
        ),
        (
            r#"{"maxConcurrent": 0, "maxSubagentDepth": "deep"}"#,
            HelpersConfig::default(),
            2,
        ),
        ("{not json", HelpersConfig::default(), 1),
    ];
    for (text, want, error_count) in cases {
        let mut config = HelpersConfig::default();
        let mut errors = Vec::new();
        config.merge(path, text, &mut errors);
        assert_eq!(config, want, "{text}");
        assert_eq!(errors.len(), error_count, "{text}: {errors:?}");
        assert!(errors.iter().all(|err| err.path() == path));
    }
}

#[test]
fn config_load_lets_the_workspace_win() {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    for (root, text) in [
        (
            home.path(),
            r#"{"maxConcurrent": 7, "maxSubagentDepth": 3}"#,
        ),
        (workspace.path(), r#"{"maxConcurrent": 2}"#),
    ] {
        let file = root.join(CONFIG_FILE);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    let (config, errors) = HelpersConfig::load(Some(home.path()), workspace.path());
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!((config.max_concurrent, config.max_depth), (2, 3));
}

#[test]
fn spawn_args_table() {
    let ok = parse_spawn_args(&json!({
        "type": " explore ", "prompt": "Summarize the notes", "async": true,
        "thinking": "low", "max_turns": 3, "model": "p/m"
    }))
    .unwrap();
    assert_eq!(ok.agent_type, "explore");
    assert_eq!(ok.description, "Summarize the notes");
    assert_eq!(ok.background, Some(true));
    assert_eq!(ok.thinking.as_deref(), Some("low"));
    assert_eq!(ok.max_turns, Some(3));
    assert_eq!(ok.model.as_deref(), Some("p/m"));
    let bad = [
        (json!([]), "must be an object"),
        (json!({"prompt": "x"}), "type is required"),
        (json!({"type": 3}), "type must be a string"),
        (
            json!({"type": "explore", "run_in_background": true, "async": false}),
            "disagree",
        ),
        (
            json!({"type": "explore", "thinking": "huge"}),
            "thinking must be one of",
        ),
        (
            json!({"type": "explore", "max_turns": 0}),
            "max_turns must be",
        ),
        (
            json!({"type": "explore", "async": "yes"}),
            "async must be true or false",
        ),
    ];
    for (value, want) in bad {
        let err = parse_spawn_args(&value).unwrap_err();
        assert!(err.contains(want), "{value}: {err}");
    }
}

#[test]
fn preflight_refusals_in_order() {
    let mut catalog = AgentCatalog::builtin();
    let mut off = catalog.resolve("work").unwrap();
    off.name = "off".into();
    off.enabled = false;
    catalog.insert(off);
    let config = HelpersConfig {
        max_spawns_per_session: 2,
        max_concurrent: 2,
        max_active_async: 1,
        ..HelpersConfig::default()
    };
    let fresh = Counters::default();
    let background = |mut spawn: SpawnArgs| {
        spawn.background = Some(true);
        spawn
    };
    let cases = [
        (args("nope", ""), 0, fresh, "unknown helper type \"nope\""),
        (args("off", "x"), 0, fresh, "is disabled"),
        (args("explore", "x"), 2, fresh, "depth limit reached"),
        (args("explore", "  "), 0, fresh, "prompt is empty"),
        (
            args("explore", "x"),
            0,
            Counters { spawns: 2, ..fresh },
            "spawn budget is used up",
        ),
        (
            args("explore", "x"),
            0,
            Counters {
                running: 2,
                ..fresh
            },
            "maxConcurrent 2",
        ),
        (
            background(args("explore", "x")),
            0,
            Counters {
                running: 1,
                background: 1,
                ..fresh
            },
            "maxActiveAsyncRunsPerSession 1",
        ),
    ];
    let at = |depth: u32, counters: Counters| Admission::root(&config, depth, counters);
    for (spawn, depth, counters, want) in cases {
        let refusal = preflight(&catalog, &config, at(depth, counters), &spawn).unwrap_err();
        assert!(refusal.to_string().contains(want), "{want}: {refusal}");
    }
    assert!(matches!(
        preflight(&catalog, &config, at(0, fresh), &args("nope", "x")),
        Err(Refusal::Agent(AgentError::Unknown { .. }))
    ));
    // An explicit fork is refused in the foreground, never downgraded.
    let mut fork = args("explore", "x");
    fork.context = Some(ContextMode::Fork);
    assert_eq!(
        preflight(&catalog, &config, at(0, fresh), &fork),
        Err(Refusal::ForkNeedsBackground)
    );
    fork.background = Some(true);
    assert!(preflight(&catalog, &config, at(0, fresh), &fork).is_ok());
    // Granted budget raises the session cap; a run tree has its own cap.
    let granted = Admission {
        spawn_cap: 3,
        ..at(0, Counters { spawns: 2, ..fresh })
    };
    assert!(preflight(&catalog, &config, granted, &args("explore", "x")).is_ok());
    let tree = Admission {
        run_spawns: Some(config.max_spawns_per_run),
        ..at(1, fresh)
    };
    assert_eq!(
        preflight(&catalog, &config, tree, &args("explore", "x")),
        Err(Refusal::RunSpawnCapReached { max: 64 })
    );
    let mut spawn = args("explore", "x");
    spawn.model = Some("p/m".into());
    spawn.max_turns = Some(4);
    let (agent, background) = preflight(&catalog, &config, at(1, fresh), &spawn).unwrap();
    assert!(!background);
    assert_eq!(agent.model.as_deref(), Some("p/m"));
    assert_eq!(agent.max_turns, Some(4));
}

#[test]
fn truncation_table() {
    let cases = [
        ("short", 10, 5, "short", false),
        ("a\nb\nc\nd", 100, 2, "a\nb", true),
        ("a\nb", 100, 2, "a\nb", false),
        ("abcdef", 4, 10, "abcd", true),
        ("ééé", 3, 10, "é", true),
    ];
    for (input, bytes, lines, want, cut) in cases {
        assert_eq!(
            truncate_output(input, bytes, lines),
            (want.to_string(), cut),
            "{input:?}"
        );
    }
}

#[tokio::test]
async fn refusals_are_error_results_and_start_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = settings(dir.path(), "exit 1");
    settings.config.max_spawns_per_session = 0;
    let module = HelpersModule::new(settings);
    let cases = [
        (
            json!({"type": "nope", "prompt": "x"}),
            "unknown helper type",
        ),
        (json!({"type": "explore", "prompt": ""}), "prompt is empty"),
        (
            json!({"type": "explore", "prompt": "x"}),
            "spawn budget is used up",
        ),
        (json!({"prompt": "x"}), "type is required"),
    ];
    for (value, want) in cases {
        let output = ask(&module, call(SPAWN_TOOL, value.clone())).await;
        assert_eq!(output.details["status"], "error", "{value}");
        assert!(text(&output).contains(want), "{value}: {}", text(&output));
        assert!(output.details["reason"].as_str().unwrap().contains(want));
    }
    assert!(!dir.path().join("runs").exists(), "a refusal created a run");
}

#[tokio::test]
async fn depth_guard_refuses_at_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = settings(dir.path(), "exit 1");
    settings.depth = 2;
    let module = HelpersModule::new(settings);
    let output = ask(
        &module,
        call(SPAWN_TOOL, json!({"type": "explore", "prompt": "x"})),
    )
    .await;
    assert_eq!(output.details["status"], "error");
    assert!(
        text(&output).contains("depth limit reached"),
        "{}",
        text(&output)
    );
}

#[tokio::test]
async fn foreground_run_returns_the_answer_and_streams_progress() {
    let dir = tempfile::tempdir().unwrap();
    let depth_file = dir.path().join("depth");
    let script = format!(
        "echo \"$UNIPI_HELPER_DEPTH\" > '{}'; {}",
        depth_file.display(),
        replay_script()
    );
    let mut settings = settings(dir.path(), &script);
    settings.depth = 1;
    let module = HelpersModule::new(settings);
    let (out, mut updates) = mpsc::channel(64);
    let mut tool_call = call(
        SPAWN_TOOL,
        json!({"type": "explore", "prompt": "Summarize the notes", "description": "read notes"}),
    );
    tool_call.updates = UpdateSender::new(out, 9);
    let output = module.call_tool(tool_call).await.unwrap();
    assert_eq!(text(&output), "The notes say: helpers are read-only.");
    let details = &output.details;
    assert_eq!(details["status"], "completed", "{details}");
    assert_eq!(details["toolUseCount"], 1);
    assert_eq!(details["toolUses"][0]["name"], "read");
    assert_eq!(details["truncated"], false);
    assert_eq!(details["description"], "read notes");
    assert!(details["usage"]["input"].as_u64().unwrap() > 0, "{details}");
    assert!(details["durationMs"].as_u64().is_some());
    assert!(
        details["card"]["title"]
            .as_str()
            .unwrap()
            .starts_with("✓ helper explore")
    );
    assert_eq!(std::fs::read_to_string(&depth_file).unwrap().trim(), "2");
    let update = updates.try_recv().expect("at least one progress update");
    assert!(update.contains("tool_update"), "{update}");
    let state = module.service.ledger().counters();
    assert_eq!((state.spawns, state.running, state.background), (1, 0, 0));
}

#[tokio::test]
async fn background_run_notifies_once_and_get_result_waits() {
    let dir = tempfile::tempdir().unwrap();
    // Holds the answer back until the test lets it go, so `wait` really waits.
    let gate = dir.path().join("go");
    let script = format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; {}",
        gate.display(),
        replay_script()
    );
    let module = HelpersModule::new(settings(dir.path(), &script));
    let (sink, mut notices) = mpsc::unbounded_channel();
    module.attach_sink(Arc::new(HelperChannelSink(sink)));
    let started = ask(
        &module,
        call(
            SPAWN_TOOL,
            json!({"type": "explore", "prompt": "Summarize the notes",
                       "description": "read notes", "run_in_background": true}),
        ),
    )
    .await;
    assert_eq!(started.details["status"], "running", "{}", started.details);
    let id = started.details["runId"].as_str().unwrap().to_string();
    assert_eq!(module.service.ledger().counters().background, 1);

    let pending = ask(&module, call(RESULT_TOOL, json!({"id": id}))).await;
    assert_eq!(pending.details["status"], "running");
    assert!(text(&pending).contains("still running"));

    let waiter = tokio::spawn({
        let module = module.clone();
        let id = id.clone();
        async move {
            module
                .call_tool(call(RESULT_TOOL, json!({"id": id, "wait": true})))
                .await
        }
    });
    std::fs::write(&gate, "").unwrap();
    let waited = tokio::time::timeout(Duration::from_secs(20), waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(text(&waited), "The notes say: helpers are read-only.");
    assert_eq!(waited.details["runId"], id.as_str());

    let notice = tokio::time::timeout(Duration::from_secs(5), notices.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(notice.run_id, id);
    assert_eq!(notice.agent, AgentId::main());
    assert!(notice.content.starts_with("<helper-result-notification>"));
    assert!(
        notice.content.contains("helpers are read-only"),
        "{}",
        notice.content
    );
    assert_eq!(notice.details["card"]["tint"], "success");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(notices.try_recv().is_err(), "a second notification");
    let counters = module.service.ledger().counters();
    assert_eq!((counters.running, counters.background), (0, 0));
}

#[tokio::test]
async fn cancel_stops_the_child() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = settings(dir.path(), "echo '{\"type\":\"agent_start\"}'; sleep 30");
    settings.launch.env.clear();
    let module = HelpersModule::new(settings);
    let (handle, token) = CancelHandle::pair();
    let mut tool_call = call(SPAWN_TOOL, json!({"type": "explore", "prompt": "x"}));
    tool_call.cancel = token;
    let running = tokio::spawn(module.call_tool(tool_call));
    tokio::time::sleep(Duration::from_millis(300)).await;
    handle.cancel();
    let output = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(output.details["status"], "error", "{}", output.details);
    assert_eq!(output.details["runStatus"], "stopped");
    assert!(text(&output).contains("cancelled"), "{}", text(&output));
    assert_eq!(module.service.ledger().counters().running, 0);
}

#[tokio::test]
async fn an_abandoned_foreground_run_reads_as_ended() {
    let dir = tempfile::tempdir().unwrap();
    let module = HelpersModule::new(settings(dir.path(), "sleep 30"));
    let spawn = module.call_tool(call(SPAWN_TOOL, json!({"type": "explore", "prompt": "x"})));
    // The host's timeout drops the call's future mid-run.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), spawn)
            .await
            .is_err()
    );
    let id = module
        .service
        .ledger()
        .runs()
        .map(|entry| entry.info().id.clone())
        .next()
        .unwrap();
    let output = ask(&module, call(RESULT_TOOL, json!({"id": id, "wait": true}))).await;
    assert_eq!(output.details["status"], "error", "{}", output.details);
    assert!(text(&output).contains("abandoned"), "{}", text(&output));
    assert_eq!(module.service.ledger().counters().running, 0);
}

#[tokio::test]
async fn unknown_run_id_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let module = HelpersModule::new(settings(dir.path(), "exit 1"));
    for id in ["h1-2-3", "../etc"] {
        let err = module
            .call_tool(call(RESULT_TOOL, json!({"id": id})))
            .await
            .unwrap_err();
        assert!(err.message.contains("no helper run with id"), "{err}");
    }
}

/// Settings whose "Pi" is the RPC stand-in in `mode`; it logs argv and stdin to `<dir>/log`.
fn rpc_settings(dir: &Path, mode: &str) -> HelperSettings {
    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bin/fake-pi-rpc.py");
    let mut settings = settings(dir, "");
    settings.launch = PiLaunch {
        program: fake,
        leading_args: vec![mode.to_string()],
        env: vec![(
            "FAKE_PI_LOG".to_string(),
            dir.join("log").display().to_string(),
        )],
    };
    settings
}

fn log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("log")).unwrap_or_default()
}

fn call_as(agent: &AgentId, tool: &str, args: Value) -> ToolCall {
    ToolCall {
        agent: agent.clone(),
        ..call(tool, args)
    }
}

fn child_of(id: &str) -> AgentId {
    AgentId::new(format!("{CHILD_AGENT_PREFIX}{id}"))
}

/// Calls one of `module`'s tools; the call itself must not fail (refusals are results).
async fn ask(module: &HelpersModule, call: ToolCall) -> ToolOutput {
    module.call_tool(call).await.unwrap()
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn a_single_helper_is_told_its_boundaries_and_a_workflow_step_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let module = HelpersModule::new(rpc_settings(dir.path(), "answer"));
    let output = ask(
        &module,
        call(
            SPAWN_TOOL,
            json!({"type": "explore", "prompt": "SINGLE-TASK"}),
        ),
    )
    .await;
    assert_eq!(output.details["status"], "completed", "{}", output.details);
    assert!(
        text(&output).starts_with("Done: SINGLE-TASK"),
        "{}",
        text(&output)
    );
    let script = json!({"workflowScript": {"steps": [
            {"id": "a", "type": "explore", "prompt": "STEP-A"},
            {"id": "b", "type": "explore", "prompt": "STEP-B"},
            {"id": "sum", "type": "explore", "after": ["a", "b"], "prompt": "JOIN [{{a}}] [{{b}}]"}
        ], "maxParallel": 2}});
    let output = ask(&module, call(SPAWN_TOOL, script)).await;
    let body = text(&output);
    assert_eq!(output.details["status"], "completed", "{body}");
    assert!(body.contains("3 of 3 steps completed"), "{body}");
    // The last step saw the earlier answers in its prompt.
    assert!(
        body.contains("Done: JOIN [Done: STEP-A] [Done: STEP-B]"),
        "{body}"
    );
    let log = log(dir.path());
    let prompts: Vec<&str> = log.lines().filter(|l| l.contains("\"prompt\"")).collect();
    assert_eq!(prompts.len(), 4, "{log}");
    assert!(prompts[0].contains("SINGLE-TASK") && prompts[0].contains("Boundaries:"));
    assert!(
        prompts[1..].iter().all(|p| !p.contains("Boundaries:")),
        "{prompts:?}"
    );
    let counters = module.service.ledger().counters();
    assert_eq!((counters.spawns, counters.running), (4, 0));
    // Every run is on the board, ended.
    let rows = module.board().rows();
    assert_eq!(rows.len(), 4);
    assert!(
        rows.iter().all(|row| row.status == RunStatus::Completed),
        "{rows:?}"
    );
    assert!(
        rows.iter()
            .all(|row| row.tool_uses == 1 && row.usage.total > 0)
    );
}

#[tokio::test]
async fn a_workflow_that_does_not_fit_the_budget_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = rpc_settings(dir.path(), "answer");
    settings.config.max_spawns_per_session = 2;
    let module = HelpersModule::new(settings);
    let script = json!({"workflowScript": {"steps": [
        {"id": "a", "type": "explore", "prompt": "x"},
        {"id": "b", "type": "explore", "prompt": "y"},
        {"id": "c", "type": "nope", "prompt": "z"}
    ]}});
    let output = ask(&module, call(SPAWN_TOOL, script.clone())).await;
    assert!(
        text(&output).contains("step c: unknown helper type"),
        "{}",
        text(&output)
    );
    let mut fits_not = script;
    fits_not["workflowScript"]["steps"][2]["type"] = json!("explore");
    let output = ask(&module, call(SPAWN_TOOL, fits_not)).await;
    assert_eq!(output.details["status"], "error");
    assert!(
        text(&output).contains("needs 3 spawns but only 2 are left"),
        "{}",
        text(&output)
    );
    assert!(
        !dir.path().join("runs").exists(),
        "a refused workflow created a run"
    );
    assert_eq!(module.service.ledger().counters().spawns, 0);
}

#[tokio::test]
async fn the_gate_decides_and_max_output_truncates() {
    let dir = tempfile::tempdir().unwrap();
    let module = HelpersModule::new(rpc_settings(dir.path(), "answer"));
    let rejected = ask(
        &module,
        call(
            SPAWN_TOOL,
            json!({"type": "work", "prompt": "fix", "gate": "echo nope; exit 4"}),
        ),
    )
    .await;
    assert_eq!(rejected.details["status"], "error", "{}", rejected.details);
    assert_eq!(rejected.details["accepted"], false);
    let body = text(&rejected);
    assert!(
        body.contains("rejected") && body.contains("exited with 4"),
        "{body}"
    );
    assert!(body.contains("nope"), "the gate's output is shown: {body}");
    let accepted = ask(
        &module,
        call(
            SPAWN_TOOL,
            json!({"type": "work", "prompt": "fix", "acceptance": {"commands": ["true"]},
                       "maxOutput": 5}),
        ),
    )
    .await;
    assert_eq!(
        accepted.details["status"], "completed",
        "{}",
        accepted.details
    );
    assert_eq!(accepted.details["accepted"], true);
    assert_eq!(accepted.details["truncated"], true);
    assert!(
        text(&accepted).starts_with("Done:\n\n[output truncated to"),
        "{}",
        text(&accepted)
    );
}

#[tokio::test]
async fn management_actions() {
    let dir = tempfile::tempdir().unwrap();
    let module = HelpersModule::new(rpc_settings(dir.path(), "answer"));
    let done = ask(
        &module,
        call(SPAWN_TOOL, json!({"type": "explore", "prompt": "first"})),
    )
    .await;
    let id = done.details["runId"].as_str().unwrap().to_string();
    let list = ask(&module, call(SPAWN_TOOL, json!({"action": "list"}))).await;
    assert!(
        text(&list).contains(&id) && text(&list).contains("completed"),
        "{}",
        text(&list)
    );
    let children = ask(
        &module,
        call(SPAWN_TOOL, json!({"action": "children.list", "id": id})),
    )
    .await;
    assert_eq!(text(&children), "No child runs.");
    let get = ask(
        &module,
        call(SPAWN_TOOL, json!({"action": "get", "id": id})),
    )
    .await;
    assert!(text(&get).starts_with("Done: first"), "{}", text(&get));
    let status = ask(&module, call(SPAWN_TOOL, json!({"action": "status"}))).await;
    assert_eq!(status.details["spawns"], 1);
    assert_eq!(status.details["spawnCap"], 20);
    // A helper cannot raise the budget; the root session can.
    let from_child = ask(
        &module,
        call_as(
            &child_of(&id),
            SPAWN_TOOL,
            json!({"action": "grant-spawn-budget"}),
        ),
    )
    .await;
    assert_eq!(from_child.details["status"], "error");
    assert!(text(&from_child).contains("only from the interactive root session"));
    let grant = ask(
        &module,
        call(
            SPAWN_TOOL,
            json!({"action": "grant-spawn-budget", "amount": 5}),
        ),
    )
    .await;
    assert_eq!(grant.details["spawnCap"], 25, "{}", grant.details);
    let guide = ask(&module, call(SPAWN_TOOL, json!({"action": "guide"}))).await;
    assert!(text(&guide).contains("workflowScript") && text(&guide).contains("reply"));
    let doctor = ask(&module, call(SPAWN_TOOL, json!({"action": "doctor"}))).await;
    assert_eq!(doctor.details["status"], "completed", "{}", text(&doctor));
    assert!(text(&doctor).contains("✓ Pi program"), "{}", text(&doctor));
    // Resume continues the run's stored session.
    let resumed = ask(
        &module,
        call(
            SPAWN_TOOL,
            json!({"action": "resume", "id": id, "message": "and then?"}),
        ),
    )
    .await;
    assert_eq!(
        resumed.details["status"], "completed",
        "{}",
        resumed.details
    );
    assert!(
        text(&resumed).starts_with("Done: and then?"),
        "{}",
        text(&resumed)
    );
    let session = dir
        .path()
        .join("runs")
        .join(&id)
        .join("session/fake-session.jsonl");
    assert!(
        log(dir.path()).contains(&format!("\"--session\", \"{}\"", session.display())),
        "{}",
        log(dir.path())
    );
    let unknown = ask(
        &module,
        call(SPAWN_TOOL, json!({"action": "stop", "id": "h0-0-0"})),
    )
    .await;
    assert!(
        text(&unknown).contains("no helper run with id"),
        "{}",
        text(&unknown)
    );
}

#[tokio::test]
async fn stop_ends_a_background_run_as_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let module = HelpersModule::new(rpc_settings(dir.path(), "forever"));
    let (sink, mut notices) = mpsc::unbounded_channel();
    module.attach_sink(Arc::new(HelperChannelSink(sink)));
    let started = ask(
        &module,
        call(
            SPAWN_TOOL,
            json!({"type": "explore", "prompt": "loop", "async": true}),
        ),
    )
    .await;
    let id = started.details["runId"].as_str().unwrap().to_string();
    let board = module.board();
    wait_until("turns on the board", || {
        board.row(&id).is_some_and(|row| row.turns >= 1)
    })
    .await;
    // Another helper may not stop it.
    let stranger = ask(
        &module,
        call_as(
            &child_of("h9-9-9"),
            SPAWN_TOOL,
            json!({"action": "stop", "id": id}),
        ),
    )
    .await;
    assert!(
        text(&stranger).contains("not spawned by you"),
        "{}",
        text(&stranger)
    );
    let stop = ask(
        &module,
        call(SPAWN_TOOL, json!({"action": "stop", "id": id})),
    )
    .await;
    assert_eq!(stop.details["stopped"], true, "{}", stop.details);
    let notice = tokio::time::timeout(Duration::from_secs(15), notices.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(
        notice.content.contains("<status>stopped</status>"),
        "{}",
        notice.content
    );
    assert_eq!(board.row(&id).unwrap().status, RunStatus::Stopped);
    let pid: i32 = serde_json::from_str::<Value>(
        &std::fs::read_to_string(dir.path().join("runs").join(&id).join("process.json")).unwrap(),
    )
    .unwrap()["pid"]
        .as_i64()
        .unwrap() as i32;
    assert!(
        !crate::sys::group_alive(nix::unistd::Pid::from_raw(pid)),
        "the helper's process group survived the stop"
    );
}

#[tokio::test]
async fn a_helper_asks_its_supervisor_and_only_the_parent_answers() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = rpc_settings(dir.path(), "forever");
    settings.config.supervisor_timeout = Duration::from_secs(20);
    let module = HelpersModule::new(settings);
    let (sink, mut notices) = mpsc::unbounded_channel();
    module.attach_sink(Arc::new(HelperChannelSink(sink)));
    let started = ask(
        &module,
        call(
            SPAWN_TOOL,
            json!({"type": "explore", "prompt": "loop", "async": true}),
        ),
    )
    .await;
    let id = started.details["runId"].as_str().unwrap().to_string();
    let child = child_of(&id);
    let asking = tokio::spawn(module.call_tool(call_as(
        &child,
        SUPERVISOR_TOOL,
        json!({"message": "A or B?"}),
    )));
    let notice = tokio::time::timeout(Duration::from_secs(5), notices.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(notice.custom_type, SUPERVISOR_MESSAGE_TYPE);
    assert_eq!(notice.agent, AgentId::main());
    assert!(notice.trigger_turn);
    assert!(
        notice.content.contains("<message>A or B?</message>"),
        "{}",
        notice.content
    );
    assert!(notice.content.contains(&format!("id \"{id}\"")));
    // Not the parent: refused, and the question stays open.
    let stranger = ask(
        &module,
        call_as(
            &AgentId::new("someone"),
            SPAWN_TOOL,
            json!({"action": "reply", "id": id, "message": "C"}),
        ),
    )
    .await;
    assert!(
        text(&stranger).contains("only the agent that spawned"),
        "{}",
        text(&stranger)
    );
    let reply = ask(
        &module,
        call(
            SPAWN_TOOL,
            json!({"action": "reply", "id": id, "message": "use B"}),
        ),
    )
    .await;
    assert_eq!(reply.details["status"], "completed", "{}", text(&reply));
    let answered = asking.await.unwrap().unwrap();
    assert_eq!(text(&answered), "Your supervisor answered:\nuse B");
    // No open question any more.
    let late = ask(
        &module,
        call(
            SPAWN_TOOL,
            json!({"action": "reply", "id": id, "message": "again"}),
        ),
    )
    .await;
    assert!(text(&late).contains("no open question"), "{}", text(&late));
    // A status note does not wait and does not start a turn.
    let note = ask(
        &module,
        call_as(
            &child,
            SUPERVISOR_TOOL,
            json!({"message": "half done", "kind": "status"}),
        ),
    )
    .await;
    assert_eq!(note.details["status"], "sent");
    let notice = notices.recv().await.unwrap();
    assert!(!notice.trigger_turn);
    // The root session has no supervisor.
    let root = ask(&module, call(SUPERVISOR_TOOL, json!({"message": "hello?"}))).await;
    assert!(
        text(&root).contains("not a helper agent"),
        "{}",
        text(&root)
    );
    // A helper's own spawns are checked at its depth.
    let nested = ask(
        &module,
        call_as(
            &child,
            SPAWN_TOOL,
            json!({"type": "explore", "prompt": "x", "async": true}),
        ),
    )
    .await;
    assert_eq!(nested.details["status"], "running", "{}", text(&nested));
    let grand = module
        .service
        .ledger()
        .runs()
        .find(|entry| entry.info().parent_run.as_deref() == Some(id.as_str()))
        .map(|entry| entry.info().id.clone())
        .expect("the nested run is recorded under its parent");
    let too_deep = ask(
        &module,
        call_as(
            &child_of(&grand),
            SPAWN_TOOL,
            json!({"type": "explore", "prompt": "x"}),
        ),
    )
    .await;
    assert!(
        text(&too_deep).contains("depth 2 and maxSubagentDepth is 2"),
        "{}",
        text(&too_deep)
    );
    // The nested run's parent may stop it; the root may stop anything.
    let stopped = ask(
        &module,
        call_as(&child, SPAWN_TOOL, json!({"action": "stop", "id": grand})),
    )
    .await;
    assert_eq!(stopped.details["stopped"], true, "{}", text(&stopped));
    ask(
        &module,
        call(SPAWN_TOOL, json!({"action": "stop", "id": id})),
    )
    .await;
}

#[tokio::test]
async fn an_unanswered_question_times_out_and_a_foreground_one_is_answered_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = rpc_settings(dir.path(), "forever");
    settings.config.supervisor_timeout = Duration::from_millis(300);
    let module = HelpersModule::new(settings);
    let started = ask(
        &module,
        call(
            SPAWN_TOOL,
            json!({"type": "explore", "prompt": "loop", "async": true}),
        ),
    )
    .await;
    let id = started.details["runId"].as_str().unwrap().to_string();
    let unanswered = ask(
        &module,
        call_as(&child_of(&id), SUPERVISOR_TOOL, json!({"message": "?"})),
    )
    .await;
    assert_eq!(
        unanswered.details["reason"],
        "timeout",
        "{}",
        text(&unanswered)
    );
    assert!(text(&unanswered).contains("No answer from your supervisor"));
    ask(
        &module,
        call(SPAWN_TOOL, json!({"action": "stop", "id": id})),
    )
    .await;

    let foreground = tokio::spawn(module.call_tool(call(
        SPAWN_TOOL,
        json!({"type": "explore", "prompt": "loop"}),
    )));
    let fg_id = {
        let module = module.clone();
        let mut found = None;
        wait_until("the foreground run", || {
            found = module
                .service
                .ledger()
                .runs()
                .find(|entry| !entry.info().background)
                .map(|entry| entry.info().id.clone());
            found.is_some()
        })
        .await;
        found.unwrap()
    };
    let at_once = ask(
        &module,
        call_as(&child_of(&fg_id), SUPERVISOR_TOOL, json!({"message": "?"})),
    )
    .await;
    assert_eq!(
        at_once.details["reason"],
        "foreground",
        "{}",
        text(&at_once)
    );
    ask(
        &module,
        call(SPAWN_TOOL, json!({"action": "stop", "id": fg_id})),
    )
    .await;
    let ended = tokio::time::timeout(Duration::from_secs(15), foreground)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(ended.details["runStatus"], "stopped", "{}", ended.details);
}

#[tokio::test]
async fn context_fork_copies_the_callers_session_or_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let module = HelpersModule::new(rpc_settings(dir.path(), "answer"));
    let (sink, mut notices) = mpsc::unbounded_channel();
    module.attach_sink(Arc::new(HelperChannelSink(sink)));
    let args = json!({"type": "explore", "prompt": "x", "context": "fork", "async": true});
    let refused = ask(&module, call(SPAWN_TOOL, args.clone())).await;
    assert!(
        text(&refused).contains("needs this session's file"),
        "{}",
        text(&refused)
    );
    let parent = dir.path().join("parent.jsonl");
    std::fs::write(&parent, "{\"type\":\"session\"}\n").unwrap();
    module.set_session_file(AgentId::main(), parent.clone());
    let started = ask(&module, call(SPAWN_TOOL, args)).await;
    assert_eq!(started.details["status"], "running", "{}", started.details);
    let notice = tokio::time::timeout(Duration::from_secs(15), notices.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(
        notice.content.contains("<status>completed</status>"),
        "{}",
        notice.content
    );
    assert!(
        log(dir.path()).contains(&format!("\"--fork\", \"{}\"", parent.display())),
        "{}",
        log(dir.path())
    );
}

#[tokio::test]
async fn a_background_run_announces_its_end_on_the_bus() {
    let dir = tempfile::tempdir().unwrap();
    let module = HelpersModule::new(settings(dir.path(), &replay_script()));
    let bus = crate::bridge::EventBus::new();
    let mut events = bus.subscribe();
    module.watch_sessions(&bus);
    let started = module
        .call_tool(call(
            SPAWN_TOOL,
            json!({"type": "explore", "prompt": "Summarize the notes",
                   "description": "read notes", "run_in_background": true}),
        ))
        .await
        .unwrap();
    let id = started.details["runId"].as_str().unwrap().to_string();
    let finished = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Ok(crate::bridge::BusEvent::Module { name, data, .. }) = events.recv().await
                && name == crate::bridge::names::HELPER_FINISHED
            {
                return data;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(
        finished,
        json!({"id": id, "type": "explore", "description": "read notes",
               "status": "completed", "error": null})
    );
}

#[tokio::test]
async fn get_and_resume_of_an_earlier_sessions_unfinished_run_say_plainly_why_not() {
    use crate::helpers::runner::{OWNER_FIELD, STATUS_FILE};
    use crate::sys::ProcessId;
    let dir = tempfile::tempdir().unwrap();
    let module = HelpersModule::new(settings(dir.path(), "true"));
    let me = ProcessId::current().unwrap();
    let gone = ProcessId {
        start: me.start + 1,
        ..me
    };
    // (run id, its owner, what `get` says, what `resume` says)
    let cases = [
        (
            "h1-1-1",
            Some(me),
            "belongs to another unipi-tui session",
            "still running in another unipi-tui session",
        ),
        (
            "h1-1-2",
            Some(gone),
            "ended without stopping it",
            "left no stored session to continue",
        ),
        (
            "h1-1-3",
            None,
            "did not record its end",
            "left no stored session to continue",
        ),
    ];
    for (id, owner, get, resume) in cases {
        let run = dir.path().join("runs").join(id);
        std::fs::create_dir_all(&run).unwrap();
        let status = json!({"status": "running", "agent": "explore",
            OWNER_FIELD: owner.map(ProcessId::to_text)});
        std::fs::write(run.join(STATUS_FILE), status.to_string()).unwrap();
        let got = ask(
            &module,
            call(SPAWN_TOOL, json!({"action": "get", "id": id})),
        )
        .await;
        assert!(text(&got).contains(get), "{id}: {}", text(&got));
        let resumed = ask(
            &module,
            call(
                SPAWN_TOOL,
                json!({"action": "resume", "id": id, "message": "go on"}),
            ),
        )
        .await;
        assert!(text(&resumed).contains(resume), "{id}: {}", text(&resumed));
    }
}

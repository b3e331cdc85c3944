//! The helpers module's tests, through its tools with a fake or real Pi.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tokio::sync::mpsc;

use super::*;
use crate::bridge::{
    AgentId, AgentNotice, BusMessage, CancelHandle, CancelToken, ChannelSink, UpdateSender,
};
use crate::config::module_file::{ModuleConfig, home_and_workspace};
use crate::helpers::agents::{AgentCatalog, AgentError};
use crate::helpers::bus::HelperFinished;
use crate::helpers::runner::RunStatus;
use crate::test_table::check_errors;
use crate::test_wait::{WAIT, eventually, stays_quiet};

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
        config: HelpersConfig::default().into(),
        depth: 0,
        board: HelperBoard::new(),
    }
}

fn replay_script() -> String {
    format!("cat '{}'", fixture("pi-1.6.0-explore.jsonl").display())
}

/// `shell`, then the replay.
fn then_replay(shell: &str) -> String {
    format!("{shell}; {}", replay_script())
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

/// Calls the spawn tool as the main agent.
async fn spawn(module: &HelpersModule, args: Value) -> ToolOutput {
    ask(module, call(SPAWN_TOOL, args)).await
}

/// Calls the spawn tool's `action` on the run `id` with `message` (resume, reply).
async fn act(module: &HelpersModule, action: &str, id: &str, message: &str) -> ToolOutput {
    spawn(
        module,
        json!({"action": action, "id": id, "message": message}),
    )
    .await
}

/// Calls the spawn tool as `agent`.
async fn spawn_as(module: &HelpersModule, agent: &AgentId, args: Value) -> ToolOutput {
    ask(module, call_as(agent, SPAWN_TOOL, args)).await
}

/// Starts a background helper that never ends by itself (the `forever` stand-in); its run id.
async fn start_forever(module: &HelpersModule) -> String {
    let args = json!({"type": "explore", "prompt": "loop", "async": true});
    run_id(&spawn(module, args).await)
}

/// What a spawned tool call answered, failing after `secs` seconds.
async fn finished(
    call: tokio::task::JoinHandle<Result<ToolOutput, ToolError>>,
    secs: u64,
) -> ToolOutput {
    tokio::time::timeout(Duration::from_secs(secs), call)
        .await
        .expect("timed out waiting for the tool call")
        .expect("the tool call panicked")
        .expect("the tool call failed")
}

/// A module whose helpers never end by themselves and whose questions wait `timeout` for their
/// supervisor.
fn supervised(dir: &Path, timeout: Duration) -> HelpersModule {
    with_config(
        rpc_settings(dir, "forever"),
        HelpersConfig {
            supervisor_timeout: timeout,
            ..HelpersConfig::default()
        },
    )
}

/// A module over `settings` with `config` for its config.
fn with_config(mut settings: HelperSettings, config: HelpersConfig) -> HelpersModule {
    settings.config = config.into();
    HelpersModule::new(settings)
}

/// A module whose helper waits for the file `go` in `dir` (the test lets it go), then replays
/// the fixture's answer.
fn gated(dir: &Path) -> (HelpersModule, PathBuf) {
    let gate = dir.join("go");
    let script = then_replay(&format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done",
        gate.display()
    ));
    (HelpersModule::new(settings(dir, &script)), gate)
}

#[track_caller]
fn assert_notice_status(notice: &AgentNotice, status: &str) {
    let tag = format!("<status>{status}</status>");
    assert!(
        notice.content.contains(&tag),
        "{tag} not in:\n{}",
        notice.content
    );
}

/// `output` is an error result saying `why`, and nothing is left running.
#[track_caller]
fn assert_ended_in_error(module: &HelpersModule, output: &ToolOutput, why: &str) {
    assert_detail(output, "status", "error");
    assert_says(output, why);
    assert_eq!(module.service.ledger().counters().running, 0);
}

/// The run id a spawn answered with.
fn run_id(output: &ToolOutput) -> String {
    output.details["runId"].as_str().unwrap().to_string()
}

/// Calls the supervisor tool as `agent`.
async fn supervise(module: &HelpersModule, agent: &AgentId, args: Value) -> ToolOutput {
    ask(module, call_as(agent, SUPERVISOR_TOOL, args)).await
}

/// Asserts one of `output`'s details, showing its text and details otherwise.
#[track_caller]
fn assert_detail(output: &ToolOutput, key: &str, want: impl Into<Value>) {
    let want = want.into();
    assert_eq!(
        output.details[key],
        want,
        "{key}: {}\n{}",
        text(output),
        output.details
    );
}

#[track_caller]
fn assert_says(output: &ToolOutput, needle: &str) {
    let body = text(output);
    assert!(body.contains(needle), "{needle:?} not in:\n{body}");
}

#[track_caller]
fn assert_starts(output: &ToolOutput, prefix: &str) {
    let body = text(output);
    assert!(
        body.starts_with(prefix),
        "{prefix:?} does not start:\n{body}"
    );
}

/// The notices `module` delivers from now on.
fn notices_of(module: &HelpersModule) -> mpsc::UnboundedReceiver<AgentNotice> {
    let (sink, notices) = mpsc::unbounded_channel();
    module.attach_sink(Arc::new(ChannelSink(sink)));
    notices
}

/// The next notice, failing after `secs` seconds.
async fn next_notice(notices: &mut mpsc::UnboundedReceiver<AgentNotice>, secs: u64) -> AgentNotice {
    tokio::time::timeout(Duration::from_secs(secs), notices.recv())
        .await
        .expect("timed out waiting for a notice")
        .expect("the notice channel closed")
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
        let (config, errors) = HelpersConfig::from_sources(&[(path, text)]);
        assert_eq!(config, want, "{text}");
        assert_eq!(errors.len(), error_count, "{text}: {errors:?}");
        assert!(errors.iter().all(|err| err.path() == path));
    }
}

#[test]
fn config_load_lets_the_workspace_win() {
    let (home, workspace) = home_and_workspace(
        CONFIG_FILE,
        r#"{"maxConcurrent": 7, "maxSubagentDepth": 3}"#,
        r#"{"maxConcurrent": 2}"#,
    );
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
    check_errors(bad, parse_spawn_args);
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
    let module = with_config(
        settings(dir.path(), "exit 1"),
        HelpersConfig {
            max_spawns_per_session: 0,
            ..HelpersConfig::default()
        },
    );
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
        let output = spawn(&module, value.clone()).await;
        assert_eq!(output.details["status"], "error", "{value}");
        assert!(text(&output).contains(want), "{value}: {}", text(&output));
        assert!(output.details["reason"].as_str().unwrap().contains(want));
    }
    assert!(!dir.path().join("runs").exists(), "a refusal created a run");
}

/// A helper's Pi (and so a warm one's and a delegate's: they start the same way) gets jiti's and
/// Node's caches made private, or off when its TMPDIR's `jiti` and `node-compile-cache` are not
/// ours.
#[tokio::test]
async fn a_helpers_pi_gets_the_private_cache_switch() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("env");
    let mut settings = settings(dir.path(), &format!("env > '{}'; exit 1", dump.display()));
    let tmp = crate::pi::compile_cache::foreign_tmpdir();
    settings
        .launch
        .env
        .push(("TMPDIR".into(), tmp.path().display().to_string()));
    let module = HelpersModule::new(settings);
    spawn(&module, json!({"type": "explore", "prompt": "x"})).await;
    let dump = std::fs::read_to_string(&dump).unwrap();
    assert!(crate::pi::compile_cache::caches_are_off_in(&dump), "{dump}");
}

#[tokio::test]
async fn depth_guard_refuses_at_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = settings(dir.path(), "exit 1");
    settings.depth = 2;
    let module = HelpersModule::new(settings);
    let output = spawn(&module, json!({"type": "explore", "prompt": "x"})).await;
    assert_eq!(output.details["status"], "error");
    assert_says(&output, "depth limit reached");
}

#[tokio::test]
async fn foreground_run_returns_the_answer_and_streams_progress() {
    let dir = tempfile::tempdir().unwrap();
    let depth_file = dir.path().join("depth");
    let script = then_replay(&format!(
        "echo \"$UNIPI_HELPER_DEPTH\" > '{}'",
        depth_file.display()
    ));
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
    let (module, gate) = gated(dir.path());
    let mut notices = notices_of(&module);
    let started = spawn(
        &module,
        json!({"type": "explore", "prompt": "Summarize the notes",
                       "description": "read notes", "run_in_background": true}),
    )
    .await;
    assert_detail(&started, "status", "running");
    let id = run_id(&started);
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
    let waited = finished(waiter, 20).await;
    assert_eq!(text(&waited), "The notes say: helpers are read-only.");
    assert_eq!(waited.details["runId"], id.as_str());

    let notice = next_notice(&mut notices, 5).await;
    assert_eq!(notice.id, id);
    assert_eq!(notice.agent, AgentId::main());
    assert!(notice.content.starts_with("<helper-result-notification>"));
    assert!(
        notice.content.contains("helpers are read-only"),
        "{}",
        notice.content
    );
    assert_eq!(notice.details["card"]["tint"], "success");
    stays_quiet("a second notification", Duration::from_millis(200), || {
        notices.try_recv().is_ok()
    })
    .await;
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
    let output = finished(running, 10).await;
    assert_eq!(output.details["runStatus"], "stopped");
    assert_ended_in_error(&module, &output, "cancelled");
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
    assert_ended_in_error(&module, &output, "abandoned");
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

#[tokio::test]
async fn a_single_helper_is_told_its_boundaries_and_a_workflow_step_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let module = HelpersModule::new(rpc_settings(dir.path(), "answer"));
    let output = spawn(&module, json!({"type": "explore", "prompt": "SINGLE-TASK"})).await;
    assert_detail(&output, "status", "completed");
    assert_starts(&output, "Done: SINGLE-TASK");
    let script = json!({"workflowScript": {"steps": [
            {"id": "a", "type": "explore", "prompt": "STEP-A"},
            {"id": "b", "type": "explore", "prompt": "STEP-B"},
            {"id": "sum", "type": "explore", "after": ["a", "b"], "prompt": "JOIN [{{a}}] [{{b}}]"}
        ], "maxParallel": 2}});
    let output = spawn(&module, script).await;
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
    let module = with_config(
        rpc_settings(dir.path(), "answer"),
        HelpersConfig {
            max_spawns_per_session: 2,
            ..HelpersConfig::default()
        },
    );
    let script = json!({"workflowScript": {"steps": [
        {"id": "a", "type": "explore", "prompt": "x"},
        {"id": "b", "type": "explore", "prompt": "y"},
        {"id": "c", "type": "nope", "prompt": "z"}
    ]}});
    let output = spawn(&module, script.clone()).await;
    assert_says(&output, "step c: unknown helper type");
    let mut fits_not = script;
    fits_not["workflowScript"]["steps"][2]["type"] = json!("explore");
    let output = spawn(&module, fits_not).await;
    assert_eq!(output.details["status"], "error");
    assert_says(&output, "needs 3 spawns but only 2 are left");
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
    let rejected = spawn(
        &module,
        json!({"type": "work", "prompt": "fix", "gate": "echo nope; exit 4"}),
    )
    .await;
    assert_detail(&rejected, "status", "error");
    assert_eq!(rejected.details["accepted"], false);
    let body = text(&rejected);
    assert!(
        body.contains("rejected") && body.contains("exited with 4"),
        "{body}"
    );
    assert!(body.contains("nope"), "the gate's output is shown: {body}");
    let accepted = spawn(
        &module,
        json!({"type": "work", "prompt": "fix", "acceptance": {"commands": ["true"]},
                       "maxOutput": 5}),
    )
    .await;
    assert_detail(&accepted, "status", "completed");
    assert_eq!(accepted.details["accepted"], true);
    assert_eq!(accepted.details["truncated"], true);
    assert_starts(&accepted, "Done:\n\n[output truncated to");
}

#[tokio::test]
async fn management_actions() {
    let dir = tempfile::tempdir().unwrap();
    let module = HelpersModule::new(rpc_settings(dir.path(), "answer"));
    let done = spawn(&module, json!({"type": "explore", "prompt": "first"})).await;
    let id = run_id(&done);
    let list = spawn(&module, json!({"action": "list"})).await;
    assert!(
        text(&list).contains(&id) && text(&list).contains("completed"),
        "{}",
        text(&list)
    );
    let children = spawn(&module, json!({"action": "children.list", "id": id})).await;
    assert_eq!(text(&children), "No child runs.");
    let get = spawn(&module, json!({"action": "get", "id": id})).await;
    assert_starts(&get, "Done: first");
    let status = spawn(&module, json!({"action": "status"})).await;
    assert_eq!(status.details["spawns"], 1);
    assert_eq!(status.details["spawnCap"], 20);
    // A helper cannot raise the budget; the root session can.
    let from_child = spawn_as(
        &module,
        &child_of(&id),
        json!({"action": "grant-spawn-budget"}),
    )
    .await;
    assert_eq!(from_child.details["status"], "error");
    assert!(text(&from_child).contains("only from the interactive root session"));
    let grant = spawn(
        &module,
        json!({"action": "grant-spawn-budget", "amount": 5}),
    )
    .await;
    assert_detail(&grant, "spawnCap", 25);
    let guide = spawn(&module, json!({"action": "guide"})).await;
    assert!(text(&guide).contains("workflowScript") && text(&guide).contains("reply"));
    let doctor = spawn(&module, json!({"action": "doctor"})).await;
    assert_detail(&doctor, "status", "completed");
    assert_says(&doctor, "✓ Pi program");
    // Resume continues the run's stored session.
    let resumed = act(&module, "resume", &id, "and then?").await;
    assert_detail(&resumed, "status", "completed");
    assert_starts(&resumed, "Done: and then?");
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
    let unknown = spawn(&module, json!({"action": "stop", "id": "h0-0-0"})).await;
    assert_says(&unknown, "no helper run with id");
}

#[tokio::test]
async fn stop_ends_a_background_run_as_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let module = HelpersModule::new(rpc_settings(dir.path(), "forever"));
    let mut notices = notices_of(&module);
    let id = start_forever(&module).await;
    let board = module.board();
    eventually("turns on the board", WAIT, || {
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
    assert_says(&stranger, "not spawned by you");
    let stop = spawn(&module, json!({"action": "stop", "id": id})).await;
    assert_detail(&stop, "stopped", true);
    let notice = next_notice(&mut notices, 15).await;
    assert_notice_status(&notice, "stopped");
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
    let module = supervised(dir.path(), Duration::from_secs(20));
    let mut notices = notices_of(&module);
    let id = start_forever(&module).await;
    let child = child_of(&id);
    let asking = tokio::spawn(module.call_tool(call_as(
        &child,
        SUPERVISOR_TOOL,
        json!({"message": "A or B?"}),
    )));
    let notice = next_notice(&mut notices, 5).await;
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
    let stranger = spawn_as(
        &module,
        &AgentId::new("someone"),
        json!({"action": "reply", "id": id, "message": "C"}),
    )
    .await;
    assert_says(&stranger, "only the agent that spawned");
    let reply = act(&module, "reply", &id, "use B").await;
    assert_detail(&reply, "status", "completed");
    let answered = asking.await.unwrap().unwrap();
    assert_eq!(text(&answered), "Your supervisor answered:\nuse B");
    // No open question any more.
    let late = act(&module, "reply", &id, "again").await;
    assert_says(&late, "no open question");
    // A status note does not wait and does not start a turn.
    let note = supervise(
        &module,
        &child,
        json!({"message": "half done", "kind": "status"}),
    )
    .await;
    assert_eq!(note.details["status"], "sent");
    let notice = notices.recv().await.unwrap();
    assert!(!notice.trigger_turn);
    // The root session has no supervisor.
    let root = ask(&module, call(SUPERVISOR_TOOL, json!({"message": "hello?"}))).await;
    assert_says(&root, "not a helper agent");
    // A helper's own spawns are checked at its depth.
    let nested = spawn_as(
        &module,
        &child,
        json!({"type": "explore", "prompt": "x", "async": true}),
    )
    .await;
    assert_detail(&nested, "status", "running");
    let grand = module
        .service
        .ledger()
        .runs()
        .find(|entry| entry.info().parent_run.as_deref() == Some(id.as_str()))
        .map(|entry| entry.info().id.clone())
        .expect("the nested run is recorded under its parent");
    let too_deep = spawn_as(
        &module,
        &child_of(&grand),
        json!({"type": "explore", "prompt": "x"}),
    )
    .await;
    assert_says(&too_deep, "depth 2 and maxSubagentDepth is 2");
    // The nested run's parent may stop it; the root may stop anything.
    let stopped = spawn_as(&module, &child, json!({"action": "stop", "id": grand})).await;
    assert_detail(&stopped, "stopped", true);
    spawn(&module, json!({"action": "stop", "id": id})).await;
}

#[tokio::test]
async fn an_unanswered_question_times_out_and_a_foreground_one_is_answered_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let module = supervised(dir.path(), Duration::from_millis(300));
    let id = start_forever(&module).await;
    let unanswered = supervise(&module, &child_of(&id), json!({"message": "?"})).await;
    assert_detail(&unanswered, "reason", "timeout");
    assert!(text(&unanswered).contains("No answer from your supervisor"));
    spawn(&module, json!({"action": "stop", "id": id})).await;

    let foreground = tokio::spawn(module.call_tool(call(
        SPAWN_TOOL,
        json!({"type": "explore", "prompt": "loop"}),
    )));
    let fg_id = {
        let module = module.clone();
        let mut found = None;
        eventually("the foreground run", WAIT, || {
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
    let at_once = supervise(&module, &child_of(&fg_id), json!({"message": "?"})).await;
    assert_detail(&at_once, "reason", "foreground");
    spawn(&module, json!({"action": "stop", "id": fg_id})).await;
    let ended = finished(foreground, 15).await;
    assert_detail(&ended, "runStatus", "stopped");
}

#[tokio::test]
async fn context_fork_copies_the_callers_session_or_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let module = HelpersModule::new(rpc_settings(dir.path(), "answer"));
    let mut notices = notices_of(&module);
    let args = json!({"type": "explore", "prompt": "x", "context": "fork", "async": true});
    let refused = spawn(&module, args.clone()).await;
    assert_says(&refused, "needs this session's file");
    let parent = dir.path().join("parent.jsonl");
    std::fs::write(&parent, "{\"type\":\"session\"}\n").unwrap();
    module.set_session_file(AgentId::main(), parent.clone());
    let started = spawn(&module, args).await;
    assert_detail(&started, "status", "running");
    let notice = next_notice(&mut notices, 15).await;
    assert_notice_status(&notice, "completed");
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
    let id = run_id(&started);
    let finished = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Ok(crate::bridge::BusEvent::Module { name, data, .. }) = events.recv().await
                && name == HelperFinished::NAME
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
        let got = spawn(&module, json!({"action": "get", "id": id})).await;
        assert!(text(&got).contains(get), "{id}: {}", text(&got));
        let resumed = act(&module, "resume", id, "go on").await;
        assert!(text(&resumed).contains(resume), "{id}: {}", text(&resumed));
    }
}

/// A sink standing for a print or JSON run's bridge: it says how far the agent can be woken,
/// keeps the wakes promised in `wakes`, and hands notices to a channel.
struct RunSink {
    reach: crate::bridge::WakeReach,
    wakes: crate::bridge::Wakes,
    notices: mpsc::UnboundedSender<AgentNotice>,
}

impl crate::bridge::NoticeSink for RunSink {
    fn deliver(
        &self,
        notice: AgentNotice,
    ) -> futures_util::future::BoxFuture<'static, anyhow::Result<()>> {
        crate::bridge::send_to(&self.notices, notice)
    }

    fn wake_reach(&self, _agent: &AgentId) -> crate::bridge::WakeReach {
        self.reach
    }

    fn promise_wake(
        &self,
        agent: &AgentId,
        what: String,
        limit: Duration,
    ) -> Option<crate::bridge::WakePromise> {
        Some(self.wakes.promise(agent, what, limit))
    }
}

/// `module` in a run that reaches its agent as `reach`: the promised wakes and the notices.
fn in_run(
    module: &HelpersModule,
    reach: crate::bridge::WakeReach,
) -> (crate::bridge::Wakes, mpsc::UnboundedReceiver<AgentNotice>) {
    let (notices, received) = mpsc::unbounded_channel();
    let wakes = crate::bridge::Wakes::default();
    module.attach_sink(Arc::new(RunSink {
        reach,
        wakes: wakes.clone(),
        notices,
    }));
    (wakes, received)
}

#[tokio::test]
async fn a_background_helper_is_refused_where_the_run_cannot_wait_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let module = HelpersModule::new(settings(dir.path(), &replay_script()));
    let (_wakes, _notices) = in_run(&module, crate::bridge::WakeReach::Never);
    let args = json!({"type": "explore", "prompt": "Summarize the notes",
                      "description": "read notes", "run_in_background": true});
    let refused = spawn(&module, args.clone()).await;
    assert_says(&refused, "could not wake you with its result");
    assert_says(
        &refused,
        "run it in the foreground (run_in_background: false)",
    );
    let counters = module.service.ledger().counters();
    assert_eq!((counters.running, counters.background), (0, 0));
    assert!(
        no_entries(&dir.path().join("runs")),
        "a refused run left files"
    );
    // In the foreground the same helper runs: the run waits for the tool call anyway.
    let mut foreground = args;
    foreground["run_in_background"] = json!(false);
    let answered = spawn(&module, foreground).await;
    assert_detail(&answered, "status", "completed");
}

/// Whether `dir` has no entries (or does not exist).
fn no_entries(dir: &Path) -> bool {
    std::fs::read_dir(dir).map_or(true, |mut entries| entries.next().is_none())
}

#[tokio::test]
async fn a_background_helper_keeps_its_callers_run_waiting_until_its_notice() {
    let dir = tempfile::tempdir().unwrap();
    let (module, gate) = gated(dir.path());
    let (wakes, mut notices) = in_run(&module, crate::bridge::WakeReach::WithinRun);
    let started = spawn(
        &module,
        json!({"type": "explore", "prompt": "Summarize the notes",
               "description": "read notes", "run_in_background": true}),
    )
    .await;
    let id = run_id(&started);
    // Owed from the moment the call answers: a run that settles now waits.
    assert_eq!(wakes.owed_to(&AgentId::main()), [format!("helper {id}")]);
    std::fs::write(&gate, "").unwrap();
    let notice = next_notice(&mut notices, 20).await;
    assert_eq!(notice.id, id);
    tokio::time::timeout(Duration::from_secs(20), wakes.kept(&AgentId::main()))
        .await
        .expect("the wake was kept once the notice went");
}

/// `subagents.json` is followed: a spawn budget of 0 written into the workspace's file while
/// the workbench runs refuses the next spawn, and taking it out lets the one after it start.
#[tokio::test]
async fn an_edit_of_subagents_json_applies_to_the_next_spawn() {
    use crate::config::live::LiveConfig;
    use crate::config::module_file::write_module_file;
    use crate::helpers::module::CONFIG_FILE;
    let dir = tempfile::tempdir().unwrap();
    let (home, workspace) = (dir.path().join("home"), dir.path().join("work"));
    for path in [&home, &workspace] {
        std::fs::create_dir_all(path).unwrap();
    }
    let mut settings = settings(dir.path(), "exit 1");
    let (config, errors) =
        LiveConfig::module(Some(&home), &workspace, &[CONFIG_FILE], HelpersConfig::load);
    assert!(errors.is_empty(), "{errors:?}");
    settings.config = config;
    let module = HelpersModule::new(settings);
    let refused_for_budget = |output: &ToolOutput| text(output).contains("spawn budget is used up");
    write_module_file(
        &workspace,
        CONFIG_FILE,
        r#"{"maxSubagentSpawnsPerSession": 0}"#,
    );
    let output = spawn(&module, json!({"type": "explore", "prompt": "x"})).await;
    assert!(refused_for_budget(&output), "{}", text(&output));
    assert!(!dir.path().join("runs").exists(), "a refusal created a run");
    write_module_file(&workspace, CONFIG_FILE, "{}");
    let output = spawn(&module, json!({"type": "explore", "prompt": "x"})).await;
    assert!(!refused_for_budget(&output), "{}", text(&output));
    assert!(dir.path().join("runs").exists(), "the spawn started a run");
}

/// Unipi's switches in `subagents.json`: `enabled` (the whole module) and `types.<name>.enabled`,
/// merged type by type (workspace over home); a bad one is named at its place.
#[test]
fn unipi_switches_are_read_type_by_type() {
    let (home, workspace) = home_and_workspace(
        CONFIG_FILE,
        r#"{"enabled": false, "maxConcurrent": 4, "types": {"explore": {"enabled": false},
            "work": {"enabled": false}}}"#,
        "{\"types\": {\"explore\": {\"enabled\": true},\n  \"work\": {\"enabled\": \"no\"}}}",
    );
    let (config, errors) = HelpersConfig::load(Some(home.path()), workspace.path());
    assert!(!config.enabled);
    let home_file = home.path().join(CONFIG_FILE);
    let workspace_file = workspace.path().join(CONFIG_FILE);
    assert_eq!(
        config.types,
        BTreeMap::from([
            ("explore".to_owned(), (true, workspace_file.clone())),
            ("work".to_owned(), (false, home_file.clone())),
        ])
    );
    let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        errors,
        [format!(
            "{}:2:12: types.work.enabled must be true or false, found \"no\"",
            workspace_file.display()
        )]
    );
}

/// A type switched off is not offered to the model, and a call naming it is refused, naming the
/// file that switched it off.
#[tokio::test]
async fn a_type_switched_off_is_not_offered_and_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("subagents.json");
    let mut settings = settings(dir.path(), "exit 1");
    let switches = BTreeMap::from([("work".to_owned(), (false, file.clone()))]);
    settings.catalog.switch(&switches);
    let module = HelpersModule::new(settings);
    let spawn_tool = module.tools().into_iter().next().unwrap();
    let offered = serde_json::to_string(&spawn_tool).unwrap();
    assert!(offered.contains("explore ("), "{offered}");
    assert!(!offered.contains("work ("), "{offered}");
    let output = spawn(&module, json!({"type": "work", "prompt": "x"})).await;
    assert_eq!(output.details["status"], "error");
    assert_eq!(
        text(&output),
        format!(
            "spawn_helper refused: helper type \"work\" is disabled (enabled: false in {})",
            file.display()
        ),
    );
    assert!(!dir.path().join("runs").exists(), "a refusal created a run");
}

/// The original Unipi's `agent_id` reads the same run as `id`; its `view` opens the dock on
/// the run's transcript (the main agent's call, with a screen) and says when it cannot.
#[tokio::test]
async fn agent_id_and_view_are_the_original_unipi_names() {
    use crate::capability::{Ui, UiRequest};
    use crate::config::keymap::Keymap;
    let dir = tempfile::tempdir().unwrap();
    let module = HelpersModule::new(settings(dir.path(), &replay_script()));
    let done = spawn(
        &module,
        json!({"type": "explore", "prompt": "Summarize the notes"}),
    )
    .await;
    let id = run_id(&done);
    let by_id = ask(&module, call(RESULT_TOOL, json!({"id": id}))).await;
    let by_agent_id = ask(&module, call(RESULT_TOOL, json!({"agent_id": id}))).await;
    assert_eq!(by_agent_id, by_id);
    assert_eq!(text(&by_id), "The notes say: helpers are read-only.");
    let both = ask(
        &module,
        call(RESULT_TOOL, json!({"id": id, "agent_id": id})),
    )
    .await;
    assert_eq!(both, by_id);

    // No screen attached yet: the result all the same, and why nothing was shown.
    let viewed = ask(
        &module,
        call(RESULT_TOOL, json!({"agent_id": id, "view": true})),
    )
    .await;
    assert!(text(&viewed).starts_with(&text(&by_id)));
    assert!(text(&viewed).ends_with("(view: no screen here, so the transcript was not shown)"));
    assert_eq!(viewed.details["viewed"], false);

    let (ui, mut requests) = Ui::channel(Arc::new(Keymap::defaults()));
    module.attach_ui(ui);
    let viewed = ask(
        &module,
        call(RESULT_TOOL, json!({"agent_id": id, "view": true})),
    )
    .await;
    assert_eq!(viewed.details["viewed"], true);
    assert!(
        text(&viewed).contains("the dock shows run"),
        "{}",
        text(&viewed)
    );
    match requests.try_recv() {
        Ok(UiRequest::OpenDock { detail }) => assert_eq!(detail.as_deref(), Some(id.as_str())),
        other => panic!("expected the dock on the run, got {other:?}"),
    }
    // A helper's call does not open the user's dock.
    let from_helper = ask(
        &module,
        call_as(&child_of("x"), RESULT_TOOL, json!({"id": id, "view": true})),
    )
    .await;
    assert_eq!(from_helper.details["viewed"], false);
    assert!(requests.try_recv().is_err());

    for (args, want) in [
        (json!({}), "get_helper_result needs id"),
        (
            json!({"id": "a", "agent_id": "b"}),
            "get_helper_result got two run ids",
        ),
        (
            json!({"id": id, "view": "yes"}),
            "view must be true or false",
        ),
    ] {
        let err = module
            .call_tool(call(RESULT_TOOL, args.clone()))
            .await
            .unwrap_err();
        assert!(err.message.contains(want), "{args}: {err}");
    }
}

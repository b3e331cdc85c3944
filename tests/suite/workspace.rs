//! The workbench is a drop-in for `pi`, so Pi and everything started for it run in the directory
//! `unipi-tui` was started in — the project — never in HOME: the real `unipi-tui` with the real,
//! pinned Pi 1.6.0 against the scripted model served from this test (its request log is what the
//! model saw). HOME, the project and TMPDIR are three different directories (`support::sandbox`),
//! so a child in the wrong one shows.
//!
//! Proven: Pi's working directory (`/proc/<pid>/cwd`) is the project; the project's `AGENTS.md`
//! reaches the model; `-e ./ext.ts` (relative to the project) loads; Pi's bash, the user's
//! `!command`, a helper's bash and an MCP server with a relative `cwd` (workbench-owned, and
//! Pi-owned) run where Pi 1.x runs them; the session is saved as the project's, so plain `pi -c` in
//! the project continues it; and the resume command printed at exit, `unipi-tui --session <id>`,
//! names a session Pi finds.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use support::demo::{OfflineModel, outer_40_rows, wait_for_idle_prompt};
use support::pi::{PiLine, pi_install};
use support::procs::{children, cwd, has_env, processes_with_env};
use support::sandbox::Sandbox;
use support::term::Session;
use support::wait::eventually;
use support::workbench::{KITTY_CTRL_D, exit_pi};
use unipi_tui::scripted::message_text;

const REPLY: Duration = Duration::from_secs(60);

/// What the project's `AGENTS.md` tells the model.
const AGENTS_MARKER: &str = "AGENTS-MD-MARKER-5521: this project's own instructions";

struct Workbench {
    session: Session,
    model: OfflineModel,
    sandbox: Sandbox,
    /// The value of `WS_E2E_TAG` in the MCP server's environment.
    tag: String,
}

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

/// The MCP server `where` (a `cwd` tool), tagged, with the relative working directory `tools`.
fn where_server(tag: &str) -> Value {
    json!({"mcpServers": {"where": {
        "command": "python3",
        "args": [fixture("mcp/fragile.py")],
        "cwd": "tools",
        "env": {"WS_E2E_TAG": tag},
    }}})
}

/// Starts `unipi-tui <pi_args>` in a sandbox's project that has an `AGENTS.md`, `ext.ts` and a
/// `tools` folder, against the workspace scenario; `setup` adds config before the start.
fn start(pi_args: &[&str], setup: impl FnOnce(&Sandbox, &str)) -> Workbench {
    let sandbox = Sandbox::new();
    let project = &sandbox.project;
    sandbox.write(
        &project.join("AGENTS.md"),
        &format!("# Notes\n\n{AGENTS_MARKER}\n"),
    );
    sandbox.write(
        &project.join("ext.ts"),
        &std::fs::read_to_string(fixture("workspace/ext.ts")).unwrap(),
    );
    std::fs::create_dir_all(project.join("tools")).unwrap();
    let tag = format!("{}-{}", std::process::id(), sandbox.home.display());
    setup(&sandbox, &tag);
    let model = OfflineModel::scenario("workspace.toml", &sandbox);
    let session = model.spawn(PiLine::Current, &sandbox, pi_args, &[], outer_40_rows(160));
    wait_for_idle_prompt(&session, &sandbox, "scripted-workspace");
    Workbench {
        session,
        model,
        sandbox,
        tag,
    }
}

impl Workbench {
    fn ask(&self, prompt: &str, expect: &str) {
        self.session.type_text(prompt);
        self.session.send(b"\r");
        self.session
            .wait_for_text(expect, REPLY)
            .unwrap_or_else(|err| panic!("{err:#}\n{}", self.sandbox.log_tail(40)));
    }

    /// The main Pi: the workbench's child with the main agent's bridge identity.
    fn pi_pid(&self) -> u32 {
        let workbench = self.session.pid().unwrap();
        children(workbench)
            .into_iter()
            .find(|pid| has_env(*pid, &["UNIPI_TUI_AGENT=main"]))
            .expect("the workbench runs Pi")
    }

    /// The text of the first tool result the model got that contains `marker`.
    fn tool_result(&self, marker: &str) -> String {
        self.model
            .server
            .requests()
            .iter()
            .filter_map(|request| request["messages"].as_array().cloned())
            .flatten()
            .filter(|message| message["role"] == "tool")
            .map(|message| message_text(&message))
            .find(|text| text.contains(marker))
            .unwrap_or_else(|| panic!("no tool result with {marker:?} reached the model"))
    }

    /// The directory named after `marker` in a tool result (`<marker> <path>`).
    fn reported_dir(&self, marker: &str) -> PathBuf {
        let text = self.tool_result(marker);
        let path = text
            .split_once(marker)
            .map(|(_, rest)| rest.trim().lines().next().unwrap_or_default().to_owned())
            .unwrap_or_default();
        PathBuf::from(path)
    }
}

/// Runs the pinned Pi in the project as a user would after the workbench exited: same HOME,
/// same agent directory (the scripted model), with `args`.
fn run_pi(wb: &Workbench, args: &[&str]) -> support::pi::PiOutput {
    let pi = pi_install(PiLine::Current).unwrap_or_else(|err| panic!("{err:#}"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime
        .block_on(pi.run(&wb.model.agent, &wb.sandbox, args))
        .unwrap()
}

/// The user prompts of the last request the model received.
fn last_request_prompts(wb: &Workbench) -> Vec<String> {
    let requests = wb.model.server.requests();
    let last = requests.last().expect("Pi asked the model");
    last["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "user")
        .map(message_text)
        .collect()
}

#[test]
fn pi_its_tools_a_helper_and_an_mcp_server_run_in_the_project_and_the_session_is_the_project_s() {
    let mut wb = start(&["-e", "./ext.ts"], |sandbox, tag| {
        sandbox.write(
            &sandbox.home.join(".unipi/config/mcp.json"),
            &where_server(tag).to_string(),
        );
    });
    let project = wb.sandbox.project.clone();

    // Pi itself, as the kernel sees it.
    assert_eq!(cwd(wb.pi_pid()).as_deref(), Some(project.as_path()));

    // The project's AGENTS.md is in what the model is told.
    wb.ask("where does bash run?", "BASH-PWD-SEEN");
    let requests = wb.model.server.requests();
    let system: String = requests[0]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "system")
        .map(message_text)
        .collect();
    assert!(
        system.contains(AGENTS_MARKER),
        "the project's AGENTS.md did not reach the model; system prompt:\n{system}"
    );
    // Pi's bash runs in the project.
    assert_eq!(wb.reported_dir("BASH-PWD"), project);

    // So does the user's own shell escape, `!command`, typed into Pi's editor.
    wb.session.type_text("!echo BANG-PWD=$(pwd)");
    wb.session.send(b"\r");
    let expected = format!("BANG-PWD={}", project.display());
    wb.session
        .wait_for_text(&expected, REPLY)
        .unwrap_or_else(|err| panic!("{err:#}\n{}", wb.session.screen_text()));

    // `-e ./ext.ts` is the project's extension: its tool is offered, and runs in the project.
    wb.ask("call the project extension", "EXT-ROUNDTRIP-OK");
    assert_eq!(wb.reported_dir("EXT-PROBE-OK"), project);

    // The MCP server with `"cwd": "tools"` (in a file under HOME) runs in the project's `tools`,
    // as Pi 1.x would run it.
    wb.ask("ask the mcp server where it runs", "MCP-CWD-SEEN");
    assert_eq!(wb.reported_dir("MCP-CWD"), project.join("tools"));
    let servers = processes_with_env(&[&format!("WS_E2E_TAG={}", wb.tag)]);
    assert_eq!(servers.len(), 1, "one `where` server: {servers:?}");
    assert_eq!(cwd(servers[0]), Some(project.join("tools")));

    // A helper's Pi runs its bash in the project too.
    wb.ask("ask a helper where it runs", "HELPER-WHERE-OK");
    assert_eq!(wb.reported_dir("HELPER-PWD"), project);

    // The exit names the workbench command that resumes the session.
    let code = exit_pi(&mut wb.session, KITTY_CTRL_D, REPLY);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
    wb.session
        .wait_for_text("To resume in the workbench: unipi-tui --session ", REPLY)
        .unwrap();
    let screen = wb.session.screen_text();
    let id = screen
        .lines()
        .find_map(|line| line.split("unipi-tui --session ").nth(1))
        .map(|rest| rest.trim().to_owned())
        .unwrap();

    // The session was saved as the project's: it records the project as its directory …
    let sessions = wb.model.agent.dir.join("sessions");
    let files: Vec<PathBuf> = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&files[0])
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["cwd"], json!(project.display().to_string()));
    assert_eq!(header["id"], json!(id), "the printed id is the session's");

    // … so plain `pi -c` in the project continues it (the model sees the earlier prompts) …
    let continued = run_pi(&wb, &["-c", "-p", "what came before?"]);
    assert!(continued.success, "{continued:?}");
    assert!(continued.stdout.contains("CONTINUED-OK"), "{continued:?}");
    let prompts = last_request_prompts(&wb);
    assert!(
        prompts.iter().any(|p| p.contains("where does bash run")),
        "`pi -c` in the project started afresh: {prompts:?}"
    );

    // … and the printed `--session <id>` is an argument Pi resolves (unipi-tui hands it to Pi
    // unchanged), from the project.
    let resumed = run_pi(&wb, &["--session", &id, "-p", "what came before, again?"]);
    assert!(resumed.success, "{resumed:?}");
    let prompts = last_request_prompts(&wb);
    assert!(
        prompts
            .iter()
            .any(|p| p.contains("ask a helper where it runs")),
        "`--session {id}` did not resume the session: {prompts:?}"
    );
}

/// With `mcp.owner: "pi"` the workbench starts no server and Pi 1.x starts its own: Pi resolves a
/// relative `cwd` against its working directory, so the server runs in the project's `tools`.
#[test]
fn a_server_pi_owns_resolves_its_relative_cwd_against_the_project() {
    let mut wb = start(&[], |sandbox, tag| {
        sandbox.write(
            &sandbox.home.join(".unipi/config/workbench.json"),
            r#"{"mcp": {"owner": "pi"}}"#,
        );
        // Pi's user file: the agent directory is `~/.pi/agent`.
        sandbox.write(
            &sandbox.home.join(".pi/agent/mcp.json"),
            &where_server(tag).to_string(),
        );
    });
    let tag = format!("WS_E2E_TAG={}", wb.tag);
    let mut servers = Vec::new();
    eventually("Pi started its `where` server", REPLY, || {
        servers = processes_with_env(&[&tag]);
        !servers.is_empty()
    });
    assert_eq!(cwd(servers[0]), Some(wb.sandbox.project.join("tools")));
    let code = exit_pi(&mut wb.session, KITTY_CTRL_D, REPLY);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
}

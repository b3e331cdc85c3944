//! The workflow end to end: the real `unipi-tui` binary in a PTY with the real Pi 1.6.0 and the
//! scripted model served from the test (its request log read here).
//!
//! Proven: `/unipi:plan` sends the plan skill as the user's message and restricts the tools —
//! the model's request lists exactly the write-unipi tools, no `bash`; the board (opened with
//! Alt+K while the model is still thinking) shows the plan's tasks once the model has written
//! the plan file with Pi's `write` tool, without being reopened (the watcher); when Pi settles
//! the step ends — the tools are restored (the next request lists `bash` again) and the end is
//! logged with its success.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::demo::{OfflineModel, spawn_workbench};
use support::pi::PiLine;
use support::sandbox::Sandbox;
use support::term::OuterOptions;
use support::workbench::{KITTY_CTRL_D, exit_pi, settled, slash};

const START: Duration = Duration::from_secs(90);
const REPLY: Duration = Duration::from_secs(60);
/// Kitty-protocol Alt+K (the workbench's board key).
const KITTY_ALT_K: &[u8] = b"\x1b[107;3u";

/// The tool names of one chat request.
fn tools(request: &Value) -> Vec<String> {
    let mut names: Vec<String> = request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    names
}

fn last_user_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|messages| messages.iter().rev().find(|m| m["role"] == "user"))
        .map(unipi_tui::scripted::message_text)
        .unwrap_or_default()
}

#[test]
fn plan_restricts_the_tools_and_the_board_shows_the_written_plan_live() {
    let sandbox = Sandbox::new();
    let model = OfflineModel::start(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios/workflow.toml"),
        &sandbox.home.join(".pi/agent"),
    );
    let outer = OuterOptions {
        rows: 40,
        cols: 120,
        kitty: true,
    };
    let mut session = spawn_workbench(
        PiLine::Current,
        &[],
        &model.pi_args(),
        &sandbox,
        &model.env(),
        outer,
    );
    session
        .wait_for("Pi's prompt with the scripted model", START, |s| {
            let text = s.contents();
            text.contains("scripted-workflow") && text.contains("○ idle")
        })
        .unwrap_or_else(|err| panic!("{err:#}\n{}", sandbox.log_tail(40)));

    slash(&session, "/unipi:plan build the search", REPLY);
    // The step's message reached the model: the plan skill, with the restricted tools.
    support::procs::wait_until("the plan step's request", REPLY, || {
        model
            .server
            .requests()
            .iter()
            .any(|r| last_user_text(r).starts_with("Execute the plan workflow."))
    });
    let requests = model.server.requests();
    let step = requests
        .iter()
        .find(|r| last_user_text(r).starts_with("Execute the plan workflow."))
        .unwrap();
    let text = last_user_text(step);
    assert!(text.contains("Arguments: build the search"), "{text}");
    assert!(text.contains("<skill_content>\n# Plan"), "{text}");
    let offered = tools(step);
    for tool in ["edit", "find", "grep", "ls", "read", "write"] {
        assert!(
            offered.contains(&tool.to_owned()),
            "{tool} missing from {offered:?}"
        );
    }
    for tool in ["bash", "bg_run"] {
        assert!(
            !offered.contains(&tool.to_owned()),
            "{tool} offered: {offered:?}"
        );
    }

    // The board opens on Alt+K while the model still thinks (the scenario waits 2.5 s).
    session.send(KITTY_ALT_K);
    session
        .wait_for("the board", REPLY, |s| s.contents().contains("Kanban"))
        .unwrap_or_else(|err| panic!("{err:#}\n{}", sandbox.log_tail(40)));
    assert!(
        !session.screen_text().contains("WATCHED-TASK-ONE"),
        "the plan is not written yet"
    );
    // The model writes the plan; the open board shows its tasks by itself.
    let plan = sandbox
        .project
        .join(".unipi/docs/plans/2026-05-02-e2e-plan.md");
    support::procs::wait_until("the plan file", REPLY, || plan.is_file());
    let written = Instant::now();
    session
        .wait_for(
            "the plan's tasks on the board",
            Duration::from_secs(10),
            |s| {
                let text = s.contents();
                text.contains("WATCHED-TASK-ONE") && text.contains("WATCHED-TASK-TWO")
            },
        )
        .unwrap_or_else(|err| panic!("{err:#}\n{}", sandbox.log_tail(40)));
    eprintln!(
        "board showed the plan {:?} after the file appeared",
        written.elapsed()
    );
    let screen = session.screen_text();
    assert!(
        screen.contains("To Do (1)") && screen.contains("Done (1)"),
        "{screen}"
    );

    // Close the board; once Pi settles the step has ended and the tools are back.
    session.send(b"q");
    session
        .wait_for("the step settled", REPLY, |s| {
            s.contents().contains("PLAN-WRITTEN") && settled(s)
        })
        .unwrap_or_else(|err| panic!("{err:#}\n{}", sandbox.log_tail(40)));
    support::procs::wait_until("the step's end in the log", REPLY, || {
        sandbox
            .log()
            .contains("workflow: /unipi:plan ended (success true)")
    });
    session.type_text("after the step");
    session
        .wait_for("the prompt typed", REPLY, |s| {
            s.contents().contains("after the step")
        })
        .unwrap();
    session.send(b"\r");
    session.wait_for_text("TOOLS-BACK", REPLY).unwrap();
    let requests = model.server.requests();
    let after = requests
        .iter()
        .rev()
        .find(|r| last_user_text(r).contains("after the step"))
        .unwrap();
    assert!(
        tools(after).contains(&"bash".to_owned()),
        "{:?}",
        tools(after)
    );
    assert_eq!(exit_pi(&mut session, KITTY_CTRL_D, REPLY), 0);
}

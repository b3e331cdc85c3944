//! The workflow end to end: the real `unipi-tui` binary in a PTY with the real Pi (1.6.0, and
//! 0.73.1 where said) and the scripted model served from the test (its request log read here).
//!
//! Proven:
//! - `/unipi:plan` sends the plan skill as the user's message and restricts the tools — the model's
//!   request lists exactly the write-unipi tools, no `bash`; the board (opened with Alt+K while the
//!   model is still thinking) shows the plan's tasks once the model has written the plan file with
//!   Pi's `write` tool, without being reopened (the watcher); when Pi settles the step ends — the
//!   tools are restored (the next request lists `bash` again) and the end is logged with its
//!   success.
//! - A call the step's tool level forbids gets a reason naming the step and the level, in the tool
//!   result the model reads and in Pi's pane: a tool the level hides (Pi itself would answer "Tool
//!   bash not found"), and a `write`/`edit` outside `.unipi/` (plain, through `..`) under
//!   write-unipi, which is refused with the file untouched; a write inside goes through. The same
//!   for `edit` under read-only `/unipi:research`; after the steps a write anywhere works. Both Pi
//!   lines.
//! - The loop (`/unipi:ralph-start`) on a two-task plan: one iteration per turn, the model marking
//!   a task done each time, the next iteration sent once Pi settles, the end when every task is
//!   done (state `completed`, and `/unipi:ralph-status` says so), no further turn;
//!   `/unipi:ralph-stop` during an iteration stops it (state `stopped`, no next iteration);
//!   `--max-iterations 1` ends it after one; started while Pi is busy, the busy turn's end does not
//!   count as its first iteration. Both Pi lines.
//! - A workflow command typed in full goes out on the first Enter, its words as typed, once Pi has
//!   had the completions for the whole argument: words after a `plan:` reference (`finish the
//!   tour`, though a plan's name has `tour`), `--max-iterations 2` (though the plan's name has a
//!   `2`), and a reference typed to its last letter. Both Pi lines.
//! - The board's `c` puts the card's follow-up command in Pi's editor and it is on the screen
//!   without another key (Pi is asked to draw); Enter then runs it. Both Pi lines.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::demo::{OfflineModel, outer_40_rows, wait_for_idle_prompt};
use support::pi::PiLine;
use support::sandbox::Sandbox;
use support::term::Session;
use support::workbench::{KITTY_CTRL_D, exit_pi, settled, slash};

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

/// The workbench with `line`'s Pi and the scripted model of `scenario`, at Pi's idle prompt;
/// `prepare` runs in the sandbox first (files the test needs in the project).
pub(crate) struct Bench {
    pub(crate) session: Session,
    pub(crate) model: OfflineModel,
    pub(crate) sandbox: Sandbox,
}

impl Bench {
    pub(crate) fn start(line: PiLine, scenario: &str, prepare: impl FnOnce(&Sandbox)) -> Bench {
        let sandbox = Sandbox::new();
        prepare(&sandbox);
        let model = OfflineModel::scenario(scenario, &sandbox);
        let session = model.spawn(line, &sandbox, &[], &[], outer_40_rows(120));
        wait_for_idle_prompt(&session, &sandbox, "scripted-workflow");
        Bench {
            session,
            model,
            sandbox,
        }
    }

    /// Waits for `what` on the screen, failing with the log's tail.
    pub(crate) fn wait_screen(&self, what: &str, check: impl Fn(&vt100::Screen) -> bool) {
        self.session
            .wait_for(what, REPLY, check)
            .unwrap_or_else(|err| panic!("{err:#}\n{}", self.sandbox.log_tail(60)));
    }

    /// Waits until Pi settled (the workbench's footer says so).
    pub(crate) fn wait_settled(&self) {
        self.wait_screen("Pi settled", settled);
    }

    /// Types a prompt and sends it once Pi's editor shows it.
    pub(crate) fn prompt(&self, text: &str) {
        self.session.type_text(text);
        self.wait_screen("the prompt typed", |s| s.contents().contains(text));
        self.session.send(b"\r");
    }

    /// How many requests asked the model about a user message beginning with `prefix` (the
    /// request's last message; the requests after a tool result are not counted).
    pub(crate) fn asked(&self, prefix: &str) -> usize {
        self.model
            .server
            .requests()
            .iter()
            .filter(|request| {
                request["messages"]
                    .as_array()
                    .and_then(|messages| messages.last())
                    .is_some_and(|last| {
                        last["role"] == "user"
                            && unipi_tui::scripted::message_text(last).starts_with(prefix)
                    })
            })
            .count()
    }

    /// Waits until loop `name`'s state file says `status`; returns the state.
    pub(crate) fn wait_loop(&self, name: &str, status: &str) -> Value {
        let path = self
            .sandbox
            .project
            .join(format!(".unipi/ralph/{name}.state.json"));
        let read = || {
            std::fs::read_to_string(&path)
                .ok()
                .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        };
        self.wait_until(&format!("loop {name} {status}"), || {
            read().is_some_and(|state| state["status"] == status)
        });
        read().unwrap()
    }

    /// Waits until `check` holds, failing with the screen and the log's tail.
    pub(crate) fn wait_until(&self, what: &str, check: impl Fn() -> bool) {
        support::wait::eventually_or(what, REPLY, check, || {
            format!(
                "{}\n{}",
                self.session.screen_text(),
                self.sandbox.log_tail(60)
            )
        });
    }

    pub(crate) fn project_file(&self, relative: &str) -> String {
        std::fs::read_to_string(self.sandbox.project.join(relative)).unwrap_or_default()
    }
}

#[test]
fn plan_restricts_the_tools_and_the_board_shows_the_written_plan_live() {
    let bench = Bench::start(PiLine::Current, "workflow.toml", |_| {});
    let Bench {
        mut session,
        model,
        sandbox,
    } = bench;

    slash(&session, "/unipi:plan build the search", REPLY);
    // The step's message reached the model: the plan skill, with the restricted tools.
    support::wait::eventually("the plan step's request", REPLY, || {
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
    support::wait::eventually("the plan file", REPLY, || plan.is_file());
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
    support::wait::eventually("the step's end in the log", REPLY, || {
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

/// The tool result Pi sent the model for call `id`.
fn tool_result(bench: &Bench, id: &str) -> String {
    bench
        .model
        .server
        .requests()
        .iter()
        .flat_map(|request| request["messages"].as_array().cloned().unwrap_or_default())
        .find(|message| message["role"] == "tool" && message["tool_call_id"] == id)
        .map(|message| unipi_tui::scripted::message_text(&message))
        .unwrap_or_else(|| panic!("no tool result for {id}\n{}", bench.sandbox.log_tail(40)))
}

fn blocked_calls_get_a_reason_naming_the_step_and_the_level(line: PiLine) {
    let mut bench = Bench::start(line, "workflow-policy.toml", |sandbox| {
        sandbox.write(&sandbox.project.join("README.md"), "original\n");
    });
    slash(&bench.session, "/unipi:plan try the fences", REPLY);
    bench.wait_screen("the plan step's answer", |s| {
        s.contents().contains("PLAN-STEP-DONE")
    });
    // Pi's pane shows the reasons too (the last ones; the first scrolled away).
    let screen = bench.session.screen_text();
    assert!(
        screen.contains("`edit` of README.md is refused during /unipi:plan"),
        "{screen}"
    );
    let level =
        "(tool level write-unipi: read and search anything; write and edit only under .unipi/)";
    let bash = tool_result(&bench, "call_bash");
    assert!(
        bash.starts_with(&format!(
            "`bash` is not available during /unipi:plan {level}. Available tools: read, write, \
             edit, grep, find, ls"
        )),
        "{bash}"
    );
    for (id, tool, path) in [
        ("call_out", "write", "ESCAPED.md"),
        ("call_dots", "write", ".unipi/../ESCAPED-DOTS.md"),
        ("call_edit", "edit", "README.md"),
    ] {
        let result = tool_result(&bench, id);
        assert!(
            result.starts_with(&format!(
                "`{tool}` of {path} is refused during /unipi:plan {level}."
            )),
            "{id}: {result}"
        );
    }
    let inside = tool_result(&bench, "call_in");
    assert!(
        inside.to_lowercase().contains("successfully wrote"),
        "{inside}"
    );
    let project = bench.sandbox.project.clone();
    assert!(
        project
            .join(".unipi/docs/plans/2026-05-03-policy-plan.md")
            .is_file()
    );
    for escaped in ["ESCAPED.md", "ESCAPED-DOTS.md", "BASH-RAN"] {
        assert!(!project.join(escaped).exists(), "{escaped} was written");
    }
    let readme = std::fs::read_to_string(project.join("README.md")).unwrap();
    assert_eq!(readme, "original\n");
    bench.wait_settled();
    support::wait::eventually("the plan step's end in the log", REPLY, || {
        bench.sandbox.log().contains("workflow: /unipi:plan ended")
    });

    // A read-only step: `edit` is hidden, and the reason says so, to the model and in the pane.
    slash(&bench.session, "/unipi:research look around", REPLY);
    bench.wait_screen("the reason in Pi's pane", |s| {
        s.contents()
            .contains("not available during /unipi:research")
    });
    bench.wait_screen("the research step's answer", |s| {
        s.contents().contains("RESEARCH-STEP-DONE")
    });
    let edit = tool_result(&bench, "call_research_edit");
    assert!(
        edit.starts_with(
            "`edit` is not available during /unipi:research (tool level read-only: read and \
             search only; nothing may change). Available tools: read, grep, find, ls"
        ),
        "{edit}"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("README.md")).unwrap(),
        "original\n"
    );
    bench.wait_settled();
    support::wait::eventually("the research step's end in the log", REPLY, || {
        bench
            .sandbox
            .log()
            .contains("workflow: /unipi:research ended")
    });

    // The steps are over: the policy is lifted, a write anywhere goes through.
    bench.prompt("write freely now");
    bench.wait_screen("the free write's answer", |s| {
        s.contents().contains("FREE-WRITE-DONE")
    });
    assert!(project.join("FREE.md").is_file());
    assert_eq!(exit_pi(&mut bench.session, KITTY_CTRL_D, REPLY), 0);
}

#[test]
fn blocked_calls_get_a_reason_naming_the_step_and_the_level_current() {
    blocked_calls_get_a_reason_naming_the_step_and_the_level(PiLine::Current);
}

#[test]
fn blocked_calls_get_a_reason_naming_the_step_and_the_level_legacy() {
    blocked_calls_get_a_reason_naming_the_step_and_the_level(PiLine::Legacy);
}

/// A plan `name` with two unstarted tasks.
fn two_task_plan(sandbox: &Sandbox, name: &str, one: &str, two: &str) {
    sandbox.write(
        &sandbox.project.join(format!(".unipi/docs/plans/{name}.md")),
        &format!("# Plan\n\n- unstarted: Task 1 — {one}\n- unstarted: Task 2 — {two}\n"),
    );
}

fn the_loop_runs_a_plan_stops_and_ends_at_its_limit(line: PiLine) {
    let mut bench = Bench::start(line, "workflow-ralph.toml", |sandbox| {
        two_task_plan(sandbox, "ralph-plan", "RALPH-ONE", "RALPH-TWO");
        two_task_plan(sandbox, "stop-plan", "STOP-ONE", "STOP-TWO");
        two_task_plan(sandbox, "max-plan", "MAX-ONE", "MAX-TWO");
        two_task_plan(sandbox, "busy-plan", "BUSY-ONE", "BUSY-TWO");
    });

    // One task per iteration; once both are done the loop ends by itself.
    slash(
        &bench.session,
        "/unipi:ralph-start plan:ralph-plan.md --max-iterations 5",
        REPLY,
    );
    let state = bench.wait_loop("ralph-plan", "completed");
    assert_eq!(state["iteration"], 2, "{state}");
    assert_eq!(state["reason"], "every task is done (2/2)", "{state}");
    assert_eq!(
        bench.project_file(".unipi/docs/plans/ralph-plan.md"),
        "# Ralph plan\n\n- completed: Task 1 — RALPH-ONE\n- completed: Task 2 — RALPH-TWO\n"
    );
    bench.wait_settled();
    // The status names the loop that just ended and how.
    slash(&bench.session, "/unipi:ralph-status", REPLY);
    bench.wait_screen("the last loop's status", |s| {
        let words = s.contents().split_whitespace().collect::<Vec<_>>().join(" ");
        words.contains("The last one, ralph-plan on .unipi/docs/plans/ralph-plan.md, completed at iteration 2/5")
            && words.contains("every task is done (2/2)")
    });
    // No further turn: the user's next prompt is the next thing the model is asked.
    bench.prompt("after the loop ended");
    bench.wait_screen("the reply after the loop", |s| {
        s.contents().contains("LOOP-ENDED-REPLY")
    });
    assert_eq!(bench.asked("RALPH LOOP ralph-plan — iteration 1/5"), 1);
    assert_eq!(bench.asked("RALPH LOOP ralph-plan — iteration 2/5"), 1);
    assert_eq!(bench.asked("RALPH LOOP ralph-plan — iteration 3/5"), 0);
    bench.wait_settled();

    // Stopped while the model works on the first iteration (it thinks for 4 s).
    slash(
        &bench.session,
        "/unipi:ralph-start plan:stop-plan.md --max-iterations 9",
        REPLY,
    );
    bench.wait_until("the stop-plan's first iteration asked", || {
        bench.asked("RALPH LOOP stop-plan — iteration 1/9") == 1
    });
    slash(&bench.session, "/unipi:ralph-stop", REPLY);
    let state = bench.wait_loop("stop-plan", "stopped");
    assert_eq!(state["iteration"], 1, "{state}");
    assert_eq!(state["reason"], "stopped by the user", "{state}");
    // The iteration in progress finishes; no next one is sent.
    bench.wait_until("the first task done", || {
        bench
            .project_file(".unipi/docs/plans/stop-plan.md")
            .contains("- completed: Task 1 — STOP-ONE")
    });
    bench.wait_settled();
    bench.prompt("after the loop stopped");
    bench.wait_screen("the reply after the stop", |s| {
        s.contents().contains("LOOP-STOPPED-REPLY")
    });
    assert_eq!(bench.asked("RALPH LOOP stop-plan — iteration 2/"), 0);
    assert_eq!(bench.wait_loop("stop-plan", "stopped")["iteration"], 1);
    bench.wait_settled();

    // The limit ends a loop whose plan still has open tasks.
    slash(
        &bench.session,
        "/unipi:ralph-start plan:max-plan.md --max-iterations 1",
        REPLY,
    );
    let state = bench.wait_loop("max-plan", "completed");
    assert_eq!(state["reason"], "stopped after 1 iterations", "{state}");
    bench.wait_settled();
    bench.prompt("after the limit");
    bench.wait_screen("the reply after the limit", |s| {
        s.contents().contains("LIMIT-REPLY")
    });
    assert_eq!(bench.asked("RALPH LOOP max-plan — iteration 2/"), 0);
    assert!(
        bench
            .project_file(".unipi/docs/plans/max-plan.md")
            .contains("- unstarted: Task 2 — MAX-TWO")
    );
    bench.wait_settled();

    // Started while Pi is busy (the model thinks for 3 s): the loop's message waits in Pi's
    // queue (Pi 1.6 says `followUp`), iteration 1 runs after the busy turn, iteration 2 after
    // iteration 1, and the loop ends at 2 with no third iteration. (Both Pi lines run the queue
    // within the busy run, so no settle comes between; a settle already on its way when the
    // loop starts is `ralph::tests::a_loop_started_while_pi_is_busy_…`'s case.)
    bench.prompt("a long busy turn");
    bench.wait_until("the busy turn asked", || {
        bench.asked("a long busy turn") == 1
    });
    slash(
        &bench.session,
        "/unipi:ralph-start plan:busy-plan.md --max-iterations 5",
        REPLY,
    );
    let state = bench.wait_loop("busy-plan", "completed");
    assert_eq!(state["iteration"], 2, "{state}");
    assert_eq!(state["reason"], "every task is done (2/2)", "{state}");
    bench.wait_settled();
    bench.prompt("after the busy loop");
    bench.wait_screen("the reply after the busy loop", |s| {
        s.contents().contains("BUSY-LOOP-REPLY")
    });
    assert_eq!(bench.asked("RALPH LOOP busy-plan — iteration 1/5"), 1);
    assert_eq!(bench.asked("RALPH LOOP busy-plan — iteration 2/5"), 1);
    assert_eq!(bench.asked("RALPH LOOP busy-plan — iteration 3/"), 0);
    assert_eq!(exit_pi(&mut bench.session, KITTY_CTRL_D, REPLY), 0);
}

#[test]
fn the_loop_runs_a_plan_stops_and_ends_at_its_limit_current() {
    the_loop_runs_a_plan_stops_and_ends_at_its_limit(PiLine::Current);
}

#[test]
fn the_loop_runs_a_plan_stops_and_ends_at_its_limit_legacy() {
    the_loop_runs_a_plan_stops_and_ends_at_its_limit(PiLine::Legacy);
}

/// Types `command` and presses Enter once, after the workbench answered Pi's completion request
/// for the whole argument and Pi had time to open the menu it would make of it (Enter with a
/// menu open picks its entry instead of sending).
fn type_and_enter(bench: &Bench, command: &str) {
    let (name, args) = command.split_once(' ').unwrap();
    bench.session.type_text(command);
    let answered = format!("workflow: {name} {args:?} completes to");
    bench.wait_until(&format!("the completions of {args:?}"), || {
        bench.sandbox.log().contains(&answered)
    });
    std::thread::sleep(Duration::from_millis(400));
    bench.session.send(b"\r");
}

/// The user message of the request that asked the model about a message beginning with `prefix`.
fn asked_text(bench: &Bench, prefix: &str) -> String {
    bench.wait_until(&format!("the model asked {prefix:?}"), || {
        bench.asked(prefix) > 0
    });
    bench
        .model
        .server
        .requests()
        .iter()
        .map(last_user_text)
        .find(|text| text.starts_with(prefix))
        .unwrap()
}

fn typed_commands_go_out_whole_on_the_first_enter(line: PiLine) {
    let mut bench = Bench::start(line, "workflow-complete.toml", |sandbox| {
        two_task_plan(sandbox, "2026-12-01-tour-plan", "TOUR-ONE", "TOUR-TWO");
        two_task_plan(sandbox, "2026-12-02-two-plan", "TWO-ONE", "TWO-TWO");
    });

    type_and_enter(
        &bench,
        "/unipi:work plan:2026-12-01-tour-plan.md finish the tour",
    );
    let work = asked_text(&bench, "Execute the work workflow.");
    assert!(
        work.contains("\n\nArguments: plan:2026-12-01-tour-plan.md finish the tour\n"),
        "{work}"
    );
    bench.wait_screen("the step's answer", |s| {
        s.contents().contains("WORK-STEP-DONE") && settled(s)
    });

    type_and_enter(
        &bench,
        "/unipi:ralph-start plan:2026-12-02-two-plan.md --max-iterations 2",
    );
    asked_text(&bench, "RALPH LOOP 2026-12-02-two-plan — iteration 1/2");
    let state = bench.wait_loop("2026-12-02-two-plan", "completed");
    assert_eq!(state["maxIterations"], 2, "{state}");
    assert_eq!(state["reason"], "stopped after 2 iterations", "{state}");
    bench.wait_settled();

    // The reference typed to its last letter is complete: no menu holds the Enter back.
    type_and_enter(&bench, "/unipi:work plan:2026-12-02-two-plan.md");
    bench.wait_until("the second work step asked", || {
        bench.asked("Execute the work workflow.") == 2
    });
    let texts: Vec<String> = bench
        .model
        .server
        .requests()
        .iter()
        .map(last_user_text)
        .filter(|text| text.starts_with("Execute the work workflow."))
        .collect();
    assert!(
        texts
            .iter()
            .any(|text| text.contains("\n\nArguments: plan:2026-12-02-two-plan.md\n")),
        "{texts:?}"
    );
    assert_eq!(exit_pi(&mut bench.session, KITTY_CTRL_D, REPLY), 0);
}

#[test]
fn typed_commands_go_out_whole_on_the_first_enter_current() {
    typed_commands_go_out_whole_on_the_first_enter(PiLine::Current);
}

#[test]
fn typed_commands_go_out_whole_on_the_first_enter_legacy() {
    typed_commands_go_out_whole_on_the_first_enter(PiLine::Legacy);
}

fn the_board_puts_the_follow_up_command_in_pi_s_editor_on_screen(line: PiLine) {
    let mut bench = Bench::start(line, "workflow-complete.toml", |sandbox| {
        sandbox.write(
            &sandbox.project.join(".unipi/docs/specs/s.md"),
            "# Spec\n\n- [ ] Alpha\n",
        );
    });
    bench.session.send(KITTY_ALT_K);
    bench.wait_screen("the board with the spec's card", |s| {
        let text = s.contents();
        text.contains("Kanban") && text.contains("▸ Alpha")
    });
    bench.session.send(b"c");
    // No other key: Pi draws its editor with the command by itself.
    let command = "/unipi:plan specs:s.md";
    bench.wait_screen("the command in Pi's editor", |s| {
        !s.contents().contains("Kanban")
            && s.contents()
                .lines()
                .any(|line| line.trim_end().ends_with(command))
    });
    bench.session.send(b"\r");
    let plan = asked_text(&bench, "Execute the plan workflow.");
    assert!(plan.contains("\n\nArguments: specs:s.md\n"), "{plan}");
    bench.wait_screen("the step's answer", |s| {
        s.contents().contains("PLAN-STEP-DONE") && settled(s)
    });
    assert_eq!(exit_pi(&mut bench.session, KITTY_CTRL_D, REPLY), 0);
}

#[test]
fn the_board_puts_the_follow_up_command_in_pi_s_editor_on_screen_current() {
    the_board_puts_the_follow_up_command_in_pi_s_editor_on_screen(PiLine::Current);
}

#[test]
fn the_board_puts_the_follow_up_command_in_pi_s_editor_on_screen_legacy() {
    the_board_puts_the_follow_up_command_in_pi_s_editor_on_screen(PiLine::Legacy);
}

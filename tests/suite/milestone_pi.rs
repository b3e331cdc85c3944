//! Milestones end to end: the real `unipi-tui` binary in a PTY with the real Pi (1.6.0 and
//! 0.73.1) and the scripted model served from the test (its request log read here).
//!
//! Proven, on both Pi lines: the progress of `.unipi/docs/MILESTONES.md` reaches the model at
//! the start of a run, in the system prompt of its request (`## Project Milestones`, overall and
//! per phase, the current focus); `/unipi:milestone-update <phase>` typed in full goes out on the
//! first Enter and hands the model its skill with the argument; and when the session ends (Pi
//! quits), the plan task the model finished during the session with Pi's `write` tool ticks the
//! milestone item of the same name — the other items and lines stay as they were, and the
//! front matter's `updated:` is today.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::demo::{OfflineModel, outer_40_rows, wait_for_idle_prompt};
use support::pi::PiLine;
use support::sandbox::Sandbox;
use support::term::Session;
use support::workbench::{KITTY_CTRL_D, exit_pi, settled};

const REPLY: Duration = Duration::from_secs(60);

const MILESTONES: &str = "---\ntitle: \"Project Milestones\"\ncreated: 2026-11-01\nupdated: \
                          2026-11-02\n---\n\n# Project Milestones\n\n## Phase 1: Board\n> The \
                          native board\n\n- [x] Parse the milestones\n- [ ] Show the milestones \
                          on the board\n\n## Phase 2: Docs\n\n- [ ] Write the docs\n";

const PLAN: &str = "---\ntitle: Board plan\ntype: plan\n---\n\n# Board plan\n\n- unstarted: Task \
                    1 — Show the milestones on the board\n- unstarted: Task 2 — Write the docs\n";

struct Bench {
    session: Session,
    model: OfflineModel,
    sandbox: Sandbox,
}

impl Bench {
    fn start(line: PiLine) -> Bench {
        let sandbox = Sandbox::new();
        let docs = sandbox.project.join(".unipi/docs");
        sandbox.write(&docs.join("MILESTONES.md"), MILESTONES);
        sandbox.write(&docs.join("plans/2026-12-01-board-plan.md"), PLAN);
        let model = OfflineModel::scenario("milestone.toml", &sandbox);
        let session = model.spawn(line, &sandbox, &[], &[], outer_40_rows(120));
        wait_for_idle_prompt(&session, &sandbox, "scripted-milestone");
        Bench {
            session,
            model,
            sandbox,
        }
    }

    fn wait_until(&self, what: &str, check: impl Fn() -> bool) {
        let deadline = Instant::now() + REPLY;
        while !check() {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}\n{}",
                self.sandbox.log_tail(60)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn wait_screen(&self, what: &str, check: impl Fn(&vt100::Screen) -> bool) {
        self.session
            .wait_for(what, REPLY, check)
            .unwrap_or_else(|err| panic!("{err:#}\n{}", self.sandbox.log_tail(60)));
    }

    /// Types a prompt, sends it once Pi's editor shows it, and waits for the reply `marker`
    /// with Pi settled.
    fn ask(&self, text: &str, marker: &str) {
        self.session.type_text(text);
        self.wait_screen("the prompt typed", |s| s.contents().contains(text));
        self.session.send(b"\r");
        self.wait_screen(marker, |s| s.contents().contains(marker) && settled(s));
    }

    /// The request whose last user message begins with `prefix`.
    fn request(&self, prefix: &str) -> Value {
        let find = || {
            self.model
                .server
                .requests()
                .into_iter()
                .find(|request| last_user_text(request).starts_with(prefix))
        };
        self.wait_until(&format!("a request about {prefix:?}"), || find().is_some());
        find().unwrap()
    }
}

fn last_user_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|messages| messages.iter().rev().find(|m| m["role"] == "user"))
        .map(unipi_tui::scripted::message_text)
        .unwrap_or_default()
}

/// The request's system prompt (its system or developer messages).
fn system_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "system" || m["role"] == "developer")
        .map(unipi_tui::scripted::message_text)
        .collect::<Vec<_>>()
        .join("\n")
}

fn the_progress_reaches_the_model_and_the_session_end_ticks_the_finished_task(line: PiLine) {
    let mut bench = Bench::start(line);

    bench.ask("where are we", "MILESTONES-READ");
    let system = system_text(&bench.request("where are we"));
    assert!(
        system.contains(
            "## Project Milestones\nOverall progress: 1/3 items (33%)\n  Phase 1: Board: 1/2 \
             done\n  Phase 2: Docs: 0/1 done\nCurrent focus: Phase 1: Board"
        ),
        "the system prompt:\n{system}"
    );

    // The milestone command typed in full: its argument named a phase exactly, so no menu holds
    // the Enter back once the workbench has answered Pi's completion request.
    let command = "/unipi:milestone-update Phase 1: Board";
    bench.session.type_text(command);
    bench.wait_until("the completions of the phase", || {
        bench
            .sandbox
            .log()
            .contains("workflow: /unipi:milestone-update \"Phase 1: Board\" completes to 0 items")
    });
    std::thread::sleep(Duration::from_millis(400));
    bench.session.send(b"\r");
    let update = last_user_text(&bench.request("Execute the milestone-update workflow."));
    assert!(
        update.contains("\n\nArguments: Phase 1: Board\n")
            && update.contains("<skill_content>\n# Milestone update"),
        "{update}"
    );
    bench.wait_screen("the update's answer", |s| {
        s.contents().contains("MILESTONE-UPDATE-RAN") && settled(s)
    });

    // The model finishes the plan's first task; the milestones file is not touched yet.
    bench.ask("finish the board task", "BOARD-TASK-DONE");
    let milestones = bench.sandbox.project.join(".unipi/docs/MILESTONES.md");
    assert_eq!(std::fs::read_to_string(&milestones).unwrap(), MILESTONES);

    // The session ends: the finished task ticks its milestone item, and nothing else changes.
    assert_eq!(exit_pi(&mut bench.session, KITTY_CTRL_D, REPLY), 0);
    let synced = std::fs::read_to_string(&milestones).unwrap();
    let today = synced
        .lines()
        .find_map(|line| line.strip_prefix("updated: "))
        .unwrap()
        .to_owned();
    assert_ne!(today, "2026-11-02", "{synced}");
    let expected = MILESTONES
        .replace(
            "- [ ] Show the milestones on the board",
            "- [x] Show the milestones on the board",
        )
        .replace("updated: 2026-11-02", &format!("updated: {today}"));
    assert_eq!(synced, expected, "log:\n{}", bench.sandbox.log_tail(40));
}

#[test]
fn the_progress_reaches_the_model_and_the_session_end_ticks_the_finished_task_current() {
    the_progress_reaches_the_model_and_the_session_end_ticks_the_finished_task(PiLine::Current);
}

#[test]
fn the_progress_reaches_the_model_and_the_session_end_ticks_the_finished_task_legacy() {
    the_progress_reaches_the_model_and_the_session_end_ticks_the_finished_task(PiLine::Legacy);
}

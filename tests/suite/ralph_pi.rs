//! The model-driven ralph loop end to end: the real `unipi-tui` binary in a PTY with the real Pi
//! (1.6.0) and the scripted model (`workflow-ralph-tools.toml`) calling the loop's tools.
//!
//! Proven:
//! - The model starts a loop with `ralph_start` (a reflection turn every 2): the task file and the
//!   state are written, the footer shows `rl:demo 2/5` while it runs, each `ralph_done` queues the
//!   next iteration, iteration 3 is a reflection turn, and the model's
//!   `<promise>COMPLETE</promise>` ends it (state `completed`, the footer segment gone, no fourth
//!   iteration); `/unipi:ralph status` lists it. `/unipi:ralph start capped --max-iterations 1`
//!   writes a task template and runs one iteration, whose `ralph_done` ends the loop at its limit.
//! - A loop running when the workbench is killed (kill -9, mid-iteration) is found at the next
//!   start: paused, on the footer, offered by `/unipi:ralph status`; `/unipi:ralph resume` sends
//!   the interrupted iteration again and the loop completes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use std::time::Duration;

use serde_json::Value;
use support::demo::{outer_40_rows, wait_for_idle_prompt};
use support::pi::PiLine;
use support::workbench::{KITTY_CTRL_D, exit_pi, slash};

use super::workflow_pi::Bench;
use crate::support;

const REPLY: Duration = Duration::from_secs(60);

/// How many requests asked the model about a user message containing `needle` (the request's
/// last message; requests after a tool result are not counted).
fn asked(bench: &Bench, needle: &str) -> usize {
    bench
        .model
        .server
        .requests()
        .iter()
        .filter(|request| {
            request["messages"]
                .as_array()
                .and_then(|messages| messages.last())
                .is_some_and(|last| {
                    last["role"] == "user"
                        && unipi_tui::scripted::message_text(last).contains(needle)
                })
        })
        .count()
}

/// The screen's text with runs of spaces made one (Pi wraps and pads notices).
fn words(screen: &vt100::Screen) -> String {
    screen
        .contents()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_model_drives_a_loop_to_completion_and_a_limit_ends_another() {
    let bench = Bench::start(PiLine::Current, "workflow-ralph-tools.toml", |_| {});
    bench.prompt("start the demo loop");
    // Iteration 2 thinks for 1.5 s: the footer shows the loop meanwhile.
    bench.wait_screen("the loop on the footer", |s| {
        s.contents().contains("rl:demo 2/5")
    });
    let state = bench.wait_loop("demo", "completed");
    assert_eq!(state["iteration"], 3, "{state}");
    assert_eq!(
        state["reason"], "the model answered <promise>COMPLETE</promise>",
        "{state}"
    );
    assert_eq!(state["reflectEvery"], 2, "{state}");
    assert_eq!(state["lastReflectionAt"], 3, "{state}");
    assert_eq!(state["active"], false, "{state}");
    assert_eq!(
        bench.project_file(".unipi/ralph/demo.md"),
        "# Demo\n\n- [ ] one\n- [ ] two\n"
    );
    bench.wait_screen("the footer without the loop", |s| {
        !s.contents().contains("rl:demo")
    });
    bench.wait_settled();
    for (iteration, times) in [
        ("RALPH LOOP: demo | Iteration 1/5\n", 1),
        ("RALPH LOOP: demo | Iteration 2/5\n", 1),
        ("RALPH LOOP: demo | Iteration 3/5 | 🪞 REFLECTION\n", 1),
        ("RALPH LOOP: demo | Iteration 4/5", 0),
    ] {
        assert_eq!(asked(&bench, iteration), times, "{iteration}");
    }
    let reflection = bench
        .model
        .server
        .requests()
        .iter()
        .filter_map(|r| r["messages"].as_array()?.last().cloned())
        .map(|m: Value| unipi_tui::scripted::message_text(&m))
        .find(|text| text.contains("🪞 REFLECTION"))
        .unwrap_or_default();
    assert!(
        reflection.contains("REFLECTION CHECKPOINT")
            && reflection.contains("## Current Task (from .unipi/ralph/demo.md)"),
        "{reflection}"
    );

    slash(&bench.session, "/unipi:ralph status", REPLY);
    bench.wait_screen("the status", |s| {
        let words = words(s);
        words.contains("No Ralph loop is running")
            && words.contains("demo: ✓ completed (iteration 3/5)")
    });

    // Started by the user, with no task file: a template, and its one iteration is the last.
    slash(
        &bench.session,
        "/unipi:ralph start capped --max-iterations 1",
        REPLY,
    );
    let state = bench.wait_loop("capped", "completed");
    assert_eq!(
        state["reason"], "reached its limit of 1 iterations",
        "{state}"
    );
    assert!(
        bench
            .project_file(".unipi/ralph/capped.md")
            .starts_with("# Task\n\nDescribe your task here.")
    );
    bench.wait_screen("the model's answer to the limit", |s| {
        s.contents().contains("CAPPED-END")
    });
    bench.wait_settled();
    bench.prompt("after the loops");
    bench.wait_screen("the reply after the loops", |s| {
        s.contents().contains("AFTER-LOOPS-REPLY")
    });
    assert_eq!(asked(&bench, "RALPH LOOP: capped | Iteration 1/1\n"), 1);
    assert_eq!(asked(&bench, "RALPH LOOP: capped | Iteration 2"), 0);
    let Bench { mut session, .. } = bench;
    assert_eq!(exit_pi(&mut session, KITTY_CTRL_D, REPLY), 0);
}

#[test]
fn a_loop_running_when_the_workbench_is_killed_is_resumed_after_a_restart() {
    let mut bench = Bench::start(PiLine::Current, "workflow-ralph-tools.toml", |_| {});
    bench.prompt("start the long loop");
    // Iteration 2 thinks for a minute: the workbench is killed during it.
    bench.wait_until("the second iteration asked", || {
        asked(&bench, "RALPH LOOP: long | Iteration 2/4\n") == 1
    });
    let state = bench.wait_loop("long", "active");
    assert_eq!(state["iteration"], 2, "{state}");
    let workbench = bench.session.pid().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(workbench).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert_ne!(
        bench.session.wait_exit(REPLY).unwrap(),
        0,
        "killed, not exited"
    );
    assert_eq!(bench.wait_loop("long", "active")["iteration"], 2);

    // A new workbench in the same project finds the loop, paused, and offers it.
    bench.session = bench.model.spawn(
        PiLine::Current,
        &bench.sandbox,
        &[],
        &[],
        outer_40_rows(120),
    );
    wait_for_idle_prompt(&bench.session, &bench.sandbox, "scripted-workflow");
    let state = bench.wait_loop("long", "paused");
    assert_eq!(
        state["reason"], "the workbench ended during iteration 2/4",
        "{state}"
    );
    bench.wait_screen("the paused loop on the footer", |s| {
        s.contents().contains("rl:long 2/4 ⏸")
    });
    slash(&bench.session, "/unipi:ralph status", REPLY);
    bench.wait_screen("the status offering the loop", |s| {
        words(s).contains(
            "Ralph loop long is paused at iteration 2/4 on .unipi/ralph/long.md — \
             /unipi:ralph resume long continues it",
        )
    });
    slash(&bench.session, "/unipi:ralph resume long", REPLY);
    let state = bench.wait_loop("long", "completed");
    assert_eq!(state["iteration"], 2, "{state}");
    assert_eq!(
        state["reason"], "the model answered <promise>COMPLETE</promise>",
        "{state}"
    );
    bench.wait_screen("the footer without the loop", |s| {
        !s.contents().contains("rl:long")
    });
    assert_eq!(asked(&bench, "RALPH LOOP: long | Iteration 2/4\n"), 2);
    assert_eq!(asked(&bench, "RALPH LOOP: long | Iteration 3/4"), 0);
    assert_eq!(exit_pi(&mut bench.session, KITTY_CTRL_D, REPLY), 0);
}

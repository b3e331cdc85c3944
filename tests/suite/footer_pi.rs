//! The footer with the real Pi against the scripted model: a live segment (the tool count) moves
//! after a scripted turn that calls a tool, `/unipi:footer off` hides the footer (and says so in
//! the home `footer.json`), `/unipi:footer on` brings it back, and `/unipi:footer-help` opens the
//! segment guide.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::Path;
use std::time::Duration;

use support::demo::spawn_demo;
use support::pi::PiLine;
use support::sandbox::Sandbox;
use support::term::OuterOptions;
use support::wait::eventually;
use support::workbench::{exit_pi, footer_row, slash};

const START: Duration = Duration::from_secs(90);
const REPLY: Duration = Duration::from_secs(60);
const EXIT: Duration = Duration::from_secs(30);
const KITTY_CTRL_D: &[u8] = b"\x1b[100;5u";

#[test]
fn the_tool_count_moves_after_a_turn_and_footer_off_hides_the_footer() {
    let sandbox = Sandbox::new();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios/e2e.toml");
    let outer = OuterOptions {
        cols: 140,
        ..OuterOptions::default()
    };
    let mut session = spawn_demo(PiLine::Current, &scenario, &sandbox, &[], &[], outer);
    session
        .wait_for("the workbench's footer with the model", START, |s| {
            let footer = footer_row(s);
            footer.contains("scripted-e2e") && footer.contains("○ idle")
        })
        .unwrap();
    let screen = session.screen_text();
    let footer = screen.lines().last().unwrap_or_default();
    assert!(!footer.contains(" tool"), "no tool ran yet:\n{screen}");

    // The scripted model calls the workbench's tool, then answers.
    session.type_text("which workbench is this?");
    session.send(b"\r");
    session.wait_for_text("ROUNDTRIP-1", REPLY).unwrap();
    session
        .wait_for("the footer counting the tool", REPLY, |s| {
            let footer = footer_row(s);
            footer.contains("1 tool") && footer.contains("api ok")
        })
        .unwrap();

    slash(&session, "/unipi:footer off", REPLY);
    session
        .wait_for("the footer gone", REPLY, |s| {
            !s.contents().contains("1 tool") && !s.contents().contains("F1 help")
        })
        .unwrap();
    let file = sandbox.home.join(".unipi/config/footer.json");
    eventually("footer.json says the footer is off", REPLY, || {
        std::fs::read_to_string(&file).is_ok_and(|text| text.contains("\"enabled\": false"))
    });

    slash(&session, "/unipi:footer on", REPLY);
    session
        .wait_for("the footer back, with the count", REPLY, |s| {
            footer_row(s).contains("1 tool")
        })
        .unwrap();

    // The guide lists what each segment means, in the workbench's overlay.
    slash(&session, "/unipi:footer-help", REPLY);
    session
        .wait_for("the segment guide", REPLY, |s| {
            let text = s.contents();
            text.contains("Footer segments") && text.contains("Tools Pi ran this session")
        })
        .unwrap();
    session.send(b"\x1b");
    session
        .wait_for("the guide closed", REPLY, |s| {
            !s.contents().contains("Tools Pi ran this session")
        })
        .unwrap();
    let code = exit_pi(&mut session, KITTY_CTRL_D, EXIT);
    assert_eq!(code, 0, "screen:\n{}", session.screen_text());
}

//! `/unipi:notify-set-ntfy` for real: the real `unipi-tui` with the real Pi 1.6.0 against the
//! scripted model, the command typed in Pi, the set-up overlay filled in with keys, and a
//! stand-in ntfy server on loopback that must receive the test before anything is saved.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::os::unix::fs::PermissionsExt as _;
use std::time::Duration;

use serde_json::Value;
use support::demo::{OfflineModel, wait_for_idle_prompt};
use support::ntfy::NtfyServer;
use support::pi::PiLine;
use support::sandbox::Sandbox;
use support::term::OuterOptions;
use support::wait::eventually;
use support::workbench::{KITTY_CTRL_D, exit_pi, slash};

const REPLY: Duration = Duration::from_secs(60);
const EXIT: Duration = Duration::from_secs(30);
const ENTER: &[u8] = b"\r";
const DOWN: &[u8] = b"\x1b[B";
const RIGHT: &[u8] = b"\x1b[C";
const BACKSPACE: &[u8] = b"\x7f";

/// Nothing configured: the user sets ntfy up for this project from Pi's editor — the scope
/// switched to the project, the server cleared and typed, the topic typed — and `s` sends the
/// test to the stand-in, then writes the project's `ntfy.json` (0600), which the next
/// notification uses.
#[test]
fn ntfy_is_set_up_from_its_command_without_editing_json() {
    let sandbox = Sandbox::new();
    let ntfy = NtfyServer::start();
    let model = OfflineModel::scenario("ask.toml", &sandbox);
    let mut session = model.spawn(PiLine::Current, &sandbox, &[], &[], OuterOptions::default());
    wait_for_idle_prompt(&session, &sandbox, "scripted-ask");
    slash(&session, "/unipi:notify-set-ntfy", REPLY);
    let wait_text = |text: &str| {
        session
            .wait_for_text(text, REPLY)
            .unwrap_or_else(|err| panic!("{err:#}\nlog:\n{}", sandbox.log_tail(40)));
    };
    // The overlay's own words: "Set up ntfy" is also the command's description, which Pi's
    // autocomplete shows under the typed command before Enter reaches the workbench.
    wait_text("Where ntfy.json goes");
    session.send(RIGHT);
    wait_text("◂ project ▸");
    // The server: cleared on its row, then typed in.
    session.send(DOWN);
    session.send(BACKSPACE);
    session.send(ENTER);
    session.type_text(&ntfy.url);
    session.send(ENTER);
    wait_text(&ntfy.url);
    session.send(DOWN);
    session.send(ENTER);
    session.type_text("pi-setup-e2e");
    session.send(ENTER);
    wait_text("pi-setup-e2e");
    session.send(b"s");
    wait_text("ntfy set up: the test reached topic pi-setup-e2e");

    let received = ntfy.received();
    assert_eq!(received.len(), 1, "{received:?}");
    let (path, _, body) = &received[0];
    assert_eq!(path, "/");
    assert_eq!(body["topic"], "pi-setup-e2e");
    assert_eq!(body["title"], "Pi — Setup Test");
    let file = sandbox.project.join(".unipi/config/notify/ntfy.json");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["enabled"], true);
    assert_eq!(saved["serverUrl"], ntfy.url.as_str());
    assert_eq!(saved["topic"], "pi-setup-e2e");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(
        !sandbox.home.join(".unipi/config/notify/ntfy.json").exists(),
        "saved for the project only"
    );

    // In force at once: the test command now reaches the stand-in too.
    session.send(b"\x1b");
    session
        .wait_for("the overlay closed", REPLY, |s| {
            !s.contents().contains("Set up ntfy")
        })
        .unwrap();
    slash(&session, "/unipi:notify-test", REPLY);
    eventually("the test notification at the stand-in", REPLY, || {
        ntfy.received()
            .iter()
            .any(|(_, _, body)| body["title"] == "Pi — Test Notification")
    });
    let code = exit_pi(&mut session, KITTY_CTRL_D, EXIT);
    assert_eq!(code, 0, "screen:\n{}", session.screen_text());
}

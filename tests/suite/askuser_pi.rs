//! Ask-user and notifications end to end: the real `unipi-tui` binary in a PTY with the real Pi
//! 1.6.0, the scripted model served from the test (so its request log can be read), and a
//! stand-in ntfy server on loopback (so the notification's request can be read).
//!
//! Proven: the scripted model calls `ask_user`; the question appears as the workbench's modal
//! over the pane; while it waits and the keyboard is quiet, the needs-input notification reaches
//! the ntfy server (JSON, topic, title, priority high) and the terminal (OSC 777); keys answer
//! (a note written on an option, then Enter); the model receives the answer as the tool's
//! result, and Pi's transcript shows it as a card. Typing answers in the user's own words from
//! the first key on (no letter is taken for a shortcut). A `new_session` option leads through the
//! launcher: "New session" hands the task to a new Pi session of Pi's own once the turn has ended
//! — its first request to the model holds the task and no earlier message (both Pi lines) —
//! and "Compact and run here" sends the new task as the user's next message in the same
//! session. One of Pi's own dialogs (an extension's `confirm`) is reported by Pi as `blocked`,
//! and that alerts too.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::demo::{OfflineModel, outer_40_rows, wait_for_idle_prompt};
use support::ntfy::NtfyServer;
use support::pi::PiLine;
use support::sandbox::Sandbox;
use support::term::Session;
use support::wait::eventually;
use support::workbench::{KITTY_CTRL_D, exit_pi};

const REPLY: Duration = Duration::from_secs(60);
const EXIT: Duration = Duration::from_secs(30);
const ENTER: &[u8] = b"\r";
const DOWN: &[u8] = b"\x1b[B";
const TAB: &[u8] = b"\t";

struct Workbench {
    session: Session,
    model: OfflineModel,
    sandbox: Sandbox,
    ntfy: NtfyServer,
}

fn write_json(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}

/// The workbench with the notify files in the sandbox's HOME: ntfy to the stand-in, the terminal
/// by OSC 777, no desktop, a silence of one second, and no "done" alerts (they would race the
/// question's own alert in the server's log).
fn start() -> Workbench {
    start_with(&[], |_| {})
}

/// [`start`] with more Pi arguments, after `setup` prepared the sandbox.
fn start_with(pi_args: &[&str], setup: impl FnOnce(&Sandbox)) -> Workbench {
    start_on(PiLine::Current, pi_args, setup)
}

/// [`start_with`] on `line`'s Pi.
fn start_on(line: PiLine, pi_args: &[&str], setup: impl FnOnce(&Sandbox)) -> Workbench {
    let sandbox = Sandbox::new();
    setup(&sandbox);
    let ntfy = NtfyServer::start();
    let model = OfflineModel::scenario("ask.toml", &sandbox);
    write_json(
        &sandbox.home.join(".unipi/config/notify/ntfy.json"),
        &json!({"enabled": true, "serverUrl": ntfy.url, "topic": "pi-e2e", "priority": 3}),
    );
    write_json(
        &sandbox.home.join(".unipi/config/notify/config.json"),
        &json!({
            "native": {"enabled": false},
            "terminal": {"enabled": true, "method": "osc777"},
            "silenceAfterInputSeconds": 1,
            "events": {"agent_end": {"enabled": false, "platforms": []}},
        }),
    );
    let session = model.spawn(line, &sandbox, pi_args, &[], outer_40_rows(120));
    wait_for_idle_prompt(&session, &sandbox, "scripted-ask");
    Workbench {
        session,
        model,
        sandbox,
        ntfy,
    }
}

impl Workbench {
    fn prompt(&self, text: &str) {
        self.session.type_text(text);
        self.session
            .wait_for(&format!("{text:?} in Pi's editor"), REPLY, |s| {
                s.contents().contains(text)
            })
            .unwrap();
        self.session.send(ENTER);
    }

    fn wait_text(&self, text: &str) {
        self.session
            .wait_for_text(text, REPLY)
            .unwrap_or_else(|err| panic!("{err:#}\nlog:\n{}", self.sandbox.log_tail(60)));
    }

    /// Every message the model was sent, as text, across all requests.
    fn last_messages(&self) -> Vec<String> {
        self.model
            .server
            .requests()
            .iter()
            .filter_map(|request| request["messages"].as_array()?.last().cloned())
            .map(|message| unipi_tui::scripted::message_text(&message))
            .collect()
    }
}

#[test]
fn the_model_asks_the_modal_answers_and_the_alert_reaches_ntfy_while_the_user_is_away() {
    let mut wb = start();
    wb.prompt("help me pick a database");
    // The question appears as the workbench's modal, over the pane.
    wb.wait_text("Question from the agent");
    wb.wait_text("Which database should the index use?");
    wb.wait_text("ASK-CONTEXT: sessions are JSON files today");
    wb.wait_text("PostgreSQL");

    // Nobody types: after the silence the needs-input alert goes out, once.
    eventually("the ntfy server got the question", REPLY, || {
        !wb.ntfy.received().is_empty()
    });
    let received = wb.ntfy.received();
    let (path, headers, body) = &received[0];
    assert_eq!(path, "/");
    assert_eq!(
        headers.get("content-type").unwrap().to_str().unwrap(),
        "application/json"
    );
    assert_eq!(
        body,
        &json!({
            "topic": "pi-e2e",
            "title": "Pi — Question Asked",
            "message": "Agent asks: Which database should the index use? — ASK-CONTEXT: sessions are JSON files today",
            "priority": 5,
        })
    );
    // The terminal channel wrote its OSC 777 notification to the outer terminal too.
    let raw = String::from_utf8_lossy(&wb.session.raw_output()).into_owned();
    assert!(
        raw.contains(
            "\x1b]777;notify;Pi — Question Asked;Agent asks: Which database should the index use? \
             — ASK-CONTEXT: sessions are JSON files today\x1b\\"
        ),
        "no OSC 777 notification in the output"
    );

    // Keys answer: down to PostgreSQL, a note on it (Tab), then Enter chooses.
    wb.session.send(DOWN);
    wb.session.send(TAB);
    wb.session.type_text("only for the index");
    wb.wait_text("only for the index");
    wb.session.send(ENTER); // keeps the note
    wb.wait_text("“only for the index”");
    wb.session.send(ENTER); // chooses
    wb.wait_text("ANSWER-RECEIVED: postgres with a note");
    let messages = wb.last_messages();
    let answer = messages
        .iter()
        .find(|m| m.contains("User selected:"))
        .expect("the tool result reached the model");
    assert_eq!(
        answer,
        "User selected: postgres and wrote: postgres: only for the index"
    );
    assert!(
        !wb.session.screen_text().contains("Question from the agent"),
        "the modal closed"
    );
    // Pi's transcript shows the answer as a card: the option, and the note on it.
    wb.wait_text("✓ postgres (“only for the index”)");
    assert_eq!(wb.ntfy.received().len(), 1, "one alert for one question");

    let code = exit_pi(&mut wb.session, KITTY_CTRL_D, EXIT);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
}

/// The bug this guards: typing `unipi doctor` gave the model `ipi doctor` (`u` did nothing, `n`
/// opened the note editor). In a question that takes the user's words, every letter is text.
#[test]
fn typing_answers_in_the_users_own_words_from_the_first_key() {
    let mut wb = start();
    wb.prompt("help me pick a database");
    wb.wait_text("Which database should the index use?");
    wb.session.type_text("unipi doctor");
    wb.wait_text("┃ unipi doctor");
    wb.session.send(ENTER);
    wb.wait_text("ANSWER-RECEIVED: own words");
    let messages = wb.last_messages();
    let answer = messages
        .iter()
        .find(|m| m.starts_with("User wrote:"))
        .expect("the tool result reached the model");
    assert_eq!(answer, "User wrote: unipi doctor");
    wb.wait_text("✓ “unipi doctor”");
    let code = exit_pi(&mut wb.session, KITTY_CTRL_D, EXIT);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
}

#[test]
fn a_new_session_answer_compacts_and_sends_the_new_task_after_the_turn() {
    let mut wb = start();
    wb.prompt("plan the next step");
    wb.wait_text("What next?");
    wb.wait_text("↗ new task");
    wb.session.send(ENTER);
    // The launcher: compact and run here (the second choice).
    wb.wait_text("Start a new task");
    wb.wait_text("New task: NEW-TASK: write the release notes");
    wb.wait_text("Compact and run here");
    wb.session.send(DOWN);
    wb.session.send(ENTER);
    wb.wait_text("TURN-ENDS-FOR-NEW-TASK");
    // Once the turn ended the session is compacted (Pi may refuse a session this short, and
    // says so) and the new task arrives as the user's next message.
    wb.wait_text("NEW-TASK-STARTED");
    let messages = wb.last_messages();
    let proceed = messages
        .iter()
        .find(|m| m.contains("User chose to proceed"))
        .expect("the launch reached the model");
    assert!(
        proceed.starts_with("User chose to proceed (compacted): NEW-TASK: write the release notes"),
        "{proceed}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m == "NEW-TASK: write the release notes"),
        "the prefill was sent as the user's message: {messages:#?}"
    );
    let code = exit_pi(&mut wb.session, KITTY_CTRL_D, EXIT);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
}

/// "New session": once the turn has ended Pi starts a session of its own (as `/new` does) and
/// the task is its first message — the request the model gets for it has the system prompt and
/// the task, nothing of the conversation before.
fn a_new_session_answer_hands_the_task_to_a_new_pi_session(line: PiLine) {
    let mut wb = start_on(line, &[], |_| {});
    wb.prompt("plan the next step");
    wb.wait_text("What next?");
    wb.session.send(ENTER);
    wb.wait_text("New task: NEW-TASK: write the release notes");
    wb.wait_text("New session");
    wb.session.send(ENTER);
    // The old session's last reply may be gone from the screen by now: the new one starts clean.
    wb.wait_text("NEW-TASK-STARTED");
    let requests = wb.model.server.requests();
    let proceed = requests
        .iter()
        .filter_map(|request| request["messages"].as_array()?.last().cloned())
        .map(|message| unipi_tui::scripted::message_text(&message))
        .find(|text| text.contains("User chose to proceed"))
        .expect("the answer reached the model");
    assert!(
        proceed
            .starts_with("User chose to proceed (new session): NEW-TASK: write the release notes"),
        "{proceed}"
    );
    let first = requests
        .iter()
        .find(|request| {
            request["messages"]
                .as_array()
                .and_then(|messages| messages.last())
                .is_some_and(|last| {
                    unipi_tui::scripted::message_text(last) == "NEW-TASK: write the release notes"
                })
        })
        .expect("the task reached the model");
    let roles: Vec<&str> = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|message| message["role"].as_str())
        .filter(|role| *role != "system" && *role != "developer")
        .collect();
    assert_eq!(roles, ["user"], "no earlier history: {first:#}");
    assert!(
        !first.to_string().contains("plan the next step"),
        "the old conversation stayed behind"
    );
    let code = exit_pi(&mut wb.session, KITTY_CTRL_D, EXIT);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
}

#[test]
fn a_new_session_answer_hands_the_task_to_a_new_pi_session_current() {
    a_new_session_answer_hands_the_task_to_a_new_pi_session(PiLine::Current);
}

#[test]
fn a_new_session_answer_hands_the_task_to_a_new_pi_session_legacy() {
    a_new_session_answer_hands_the_task_to_a_new_pi_session(PiLine::Legacy);
}

#[test]
fn a_dialog_pi_reports_as_blocked_alerts_once_the_keyboard_is_quiet() {
    let mut wb = start_with(&["-e", "./dialog-ext.ts"], |sandbox| {
        let extension =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/notify/dialog-ext.ts");
        sandbox.write(
            &sandbox.project.join("dialog-ext.ts"),
            &std::fs::read_to_string(extension).unwrap(),
        );
    });
    support::workbench::slash(&wb.session, "/confirm-deploy", REPLY);
    wb.wait_text("DIALOG-BODY: all checks passed");
    // Pi says it is blocked (the footer shows it); nobody types; the alert goes out.
    eventually("the ntfy server got Pi's dialog", REPLY, || {
        !wb.ntfy.received().is_empty()
    });
    let received = wb.ntfy.received();
    assert_eq!(
        received[0].2,
        json!({
            "topic": "pi-e2e",
            "title": "Pi — Input Needed",
            "message": "Pi is waiting for you: Deploy to production?",
            "priority": 5,
        })
    );
    // Answering Pi's dialog (Enter confirms) ends the blocked state.
    wb.session.send(ENTER);
    wb.wait_text("DIALOG-ANSWER-");
    assert_eq!(wb.ntfy.received().len(), 1);
    let code = exit_pi(&mut wb.session, KITTY_CTRL_D, EXIT);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
}

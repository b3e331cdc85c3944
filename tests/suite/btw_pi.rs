//! `/btw` end to end: the real `unipi-tui` with the real Pi 1.6.0 against the scripted model
//! (`btw.toml`), fusion off, so the side thread runs on the main model in a side Pi. The test
//! reads the model server's request log to see what each side question and each main turn was
//! given.
//!
//! Proven: `/btw --save <q>` opens the thread overlay and the side model answers, given the main
//! conversation as context; the exchange is kept as a markdown note; a follow-up typed in the
//! overlay is asked with the earlier exchange in its prompt; the main conversation's next request
//! holds nothing of the thread; the thread is written next to Pi's session file and comes back
//! when the session is continued (`-c`), opened with Alt+/; `/btw:inject` typed in the overlay
//! sends the thread to the main agent as a user message, and the thread starts afresh. A tangent
//! carries no main context, and `/btw:summarize` brings the side model's summary into the main
//! conversation. No Pi outlives the workbench.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use support::demo::{OfflineModel, outer_40_rows, wait_for_idle_prompt};
use support::pi::PiLine;
use support::procs::processes_with_env;
use support::sandbox::Sandbox;
use support::term::Session;
use support::wait::eventually;
use support::workbench::{KITTY_CTRL_D, exit_pi, slash};
use unipi_tui::scripted::message_text;

const REPLY: Duration = Duration::from_secs(60);
const EXIT: Duration = Duration::from_secs(30);
const ENTER: &[u8] = b"\r";
const ESC: &[u8] = b"\x1b";
/// Alt+/ in the kitty protocol (the workbench pushes "disambiguate").
const KITTY_ALT_SLASH: &[u8] = b"\x1b[47;3u";
/// The overlay's title (no command description has it).
const OVERLAY: &str = "a side thread outside the conversation";

struct Workbench {
    session: Session,
    model: OfflineModel,
    sandbox: Sandbox,
    sessions: PathBuf,
}

/// The workbench on `btw.toml` with Pi's sessions in the sandbox, plus `pi_args`.
fn start(sandbox: Sandbox, pi_args: &[&str]) -> Workbench {
    let sessions = sandbox.home.join("pi-sessions");
    let model = OfflineModel::scenario("btw.toml", &sandbox);
    let sessions_arg = sessions.display().to_string();
    let mut args = vec!["--session-dir", sessions_arg.as_str()];
    args.extend_from_slice(pi_args);
    let session = model.spawn(PiLine::Current, &sandbox, &args, &[], outer_40_rows(120));
    wait_for_idle_prompt(&session, &sandbox, "scripted-btw");
    Workbench {
        session,
        model,
        sandbox,
        sessions,
    }
}

impl Workbench {
    fn fail(&self, err: anyhow::Error) -> ! {
        let requests: Vec<String> = self
            .model
            .server
            .requests()
            .iter()
            .map(|request| format!("{:?}", last_text(request)))
            .collect();
        panic!(
            "{err:#}\nscreen:\n{}\nrequests (last message):\n{}\nlog:\n{}",
            self.session.screen_text(),
            requests.join("\n"),
            self.sandbox.log_tail(60)
        )
    }

    fn wait(&self, what: &str, check: impl Fn(&vt100::Screen) -> bool) {
        self.session
            .wait_for(what, REPLY, check)
            .unwrap_or_else(|err| self.fail(err));
    }

    fn wait_text(&self, text: &str) {
        self.wait(&format!("{text:?} on screen"), |s| {
            s.contents().contains(text)
        });
    }

    /// Types `text` into Pi's editor and submits it once it shows there.
    fn prompt(&self, text: &str) {
        self.session.type_text(text);
        self.wait_text(text);
        self.session.send(ENTER);
    }

    /// Types `text` into the overlay's input line and submits it once it shows there.
    fn type_in_overlay(&self, text: &str) {
        self.session.type_text(text);
        let shown = format!("› {text}");
        self.wait(&format!("{shown:?} in the overlay"), |s| {
            s.contents().contains(&shown)
        });
        self.session.send(ENTER);
    }

    fn close_overlay(&self) {
        self.session.send(ESC);
        self.wait("the overlay closed", |s| !s.contents().contains(OVERLAY));
    }

    /// The first request whose last message contains `needle`, once made.
    fn wait_request(&self, needle: &str) -> Value {
        let mut found = None;
        eventually(format!("a request ending with {needle:?}"), REPLY, || {
            found = self
                .model
                .server
                .requests()
                .into_iter()
                .find(|request| last_text(request).contains(needle));
            found.is_some()
        });
        found.unwrap()
    }

    /// The session's thread file (`<session>.btw.json` beside Pi's `.jsonl`), if there is one.
    fn thread_file(&self) -> Option<PathBuf> {
        files_under(&self.sessions)
            .into_iter()
            .find(|path| path.to_string_lossy().ends_with(".btw.json"))
    }

    /// Ctrl+D: the workbench exits with 0 and no Pi it started (main, side) is left.
    fn exit_leaving_no_pi(mut self) -> Sandbox {
        let code = exit_pi(&mut self.session, KITTY_CTRL_D, EXIT);
        assert_eq!(code, 0, "screen:\n{}", self.session.screen_text());
        let agent_dir = format!("PI_CODING_AGENT_DIR={}", self.model.agent.dir.display());
        eventually("no Pi of this workbench left", EXIT, || {
            processes_with_env(&[agent_dir.as_str()]).is_empty()
        });
        self.sandbox
    }
}

fn last_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .map(message_text)
        .unwrap_or_default()
}

fn all_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .map(message_text)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// The thread: asked, saved as a note, followed up, kept out of the main conversation, restored
/// on continue, injected.
#[test]
fn a_btw_thread_follows_up_stays_aside_survives_a_resume_and_is_injected() {
    let wb = start(Sandbox::new(), &[]);
    wb.prompt("remember the harbour code KESTREL");
    wb.wait_text("MAIN-NOTED");

    // Asked with --save: the overlay, the answer, the main conversation as context, a note.
    slash(&wb.session, "/btw --save what is the harbour code?", REPLY);
    wb.wait_text("BTW-ONE: the harbour code is KESTREL.");
    let first = wb.wait_request("Side question: what is the harbour code?");
    let first_text = all_text(&first);
    assert!(
        first_text.contains("user: remember the harbour code KESTREL"),
        "the side question carries the main conversation: {first_text}"
    );
    let notes = files_under(&wb.sandbox.project.join(".unipi/btw/notes"));
    assert_eq!(notes.len(), 1, "{notes:?}");
    let note = std::fs::read_to_string(&notes[0]).unwrap();
    assert!(
        note.contains("## Answer\n\nBTW-ONE: the harbour code is KESTREL."),
        "{note}"
    );

    // A follow-up in the overlay sees the earlier exchange.
    wb.type_in_overlay("and spelled backwards?");
    wb.wait_text("BTW-TWO: LERTSEK.");
    let follow_up = wb.wait_request("Side question: and spelled backwards?");
    let follow_text = all_text(&follow_up);
    assert!(
        follow_text.contains(
            "User: what is the harbour code?\nAssistant: BTW-ONE: the harbour code is KESTREL."
        ),
        "the follow-up carries the thread: {follow_text}"
    );
    wb.wait_text("2 exchanges");
    wb.close_overlay();

    // The main conversation holds nothing of the thread.
    wb.prompt("what were we doing");
    wb.wait_text("MAIN-SECOND");
    let main = all_text(&wb.wait_request("what were we doing"));
    assert!(
        !main.contains("BTW-ONE") && !main.contains("BTW-TWO") && !main.contains("Side question"),
        "the thread leaked into the main conversation: {main}"
    );
    let file = wb
        .thread_file()
        .expect("the thread beside Pi's session file");
    let kept = std::fs::read_to_string(&file).unwrap();
    assert!(kept.contains("BTW-TWO: LERTSEK."), "{kept}");
    let sandbox = wb.exit_leaving_no_pi();

    // Continued: Alt+/ opens the thread as it was; /btw:inject hands it to the main agent.
    let wb = start(sandbox, &["-c"]);
    wb.session.send(KITTY_ALT_SLASH);
    wb.wait("the restored thread", |s| {
        let text = s.contents();
        text.contains(OVERLAY) && text.contains("2 exchanges") && text.contains("BTW-TWO: LERTSEK.")
    });
    wb.type_in_overlay("/btw:inject");
    wb.wait_text("MAIN-GOT-THREAD");
    let injected = last_text(&wb.wait_request("Here is a side conversation I had"));
    assert!(
        injected.contains(
            "User: what is the harbour code?\nAssistant: BTW-ONE: the harbour code is KESTREL.\n\n\
             ---\n\nUser: and spelled backwards?\nAssistant: BTW-TWO: LERTSEK."
        ),
        "{injected}"
    );
    assert!(
        !wb.session.screen_text().contains(OVERLAY),
        "inject closes it"
    );
    eventually("a fresh thread after the inject", REPLY, || {
        wb.thread_file().is_none()
    });
    wb.exit_leaving_no_pi();
}

/// A tangent is asked without the main conversation; `/btw:summarize` brings the side model's
/// summary into the main conversation.
#[test]
fn a_tangent_has_no_main_context_and_its_summary_reaches_the_main_agent() {
    let wb = start(Sandbox::new(), &[]);
    wb.prompt("remember the harbour code KESTREL");
    wb.wait_text("MAIN-NOTED");

    slash(&wb.session, "/btw:tangent what is two and two?", REPLY);
    wb.wait_text("BTW-TANGENT: four.");
    wb.wait_text("BTW tangent");
    let tangent = all_text(&wb.wait_request("Side question: what is two and two?"));
    assert!(
        !tangent.contains("KESTREL"),
        "a tangent carries no main context: {tangent}"
    );

    wb.type_in_overlay("/btw:summarize");
    wb.wait_text("MAIN-GOT-SUMMARY");
    let summary_prompt = last_text(&wb.wait_request("Summarize the side conversation"));
    assert!(
        summary_prompt.contains("User: what is two and two?\nAssistant: BTW-TANGENT: four."),
        "{summary_prompt}"
    );
    let sent = last_text(&wb.wait_request("Here is a summary of a side conversation I had"));
    assert!(
        sent.contains("BTW-SUMMARY: two and two make four."),
        "{sent}"
    );
    wb.exit_leaving_no_pi();
}

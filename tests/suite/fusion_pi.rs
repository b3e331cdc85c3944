//! Model fusion end to end: the real `unipi-tui` with the real Pi 1.6.0 against the scripted
//! model server, which offers a dear model (`scripted-big`) and a cheap one (`scripted-small`),
//! each priced in Pi's `models.json`. The test reads the server's request log to see which model
//! every request went to.
//!
//! The pair is picked in the picker (`/unipi:model`); a model without a key is refused there;
//! Alt+M opens it again and Esc changes nothing. The main agent's next request goes to the
//! primary; a helper spawned without a model runs on the sidekick — served by a warm pool
//! process, and asked exactly what a fresh helper was asked before fusion was on (the same tools
//! and system prompt); the sidekick names the session; `/btw` is answered by the sidekick in an
//! overlay and stays out of the main conversation until the user injects it; the footer shows
//! non-zero savings, and `/unipi:fusion-status` the breakdown. No Pi outlives the workbench.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use support::demo::{OfflineModel, START, outer_40_rows};
use support::pi::PiLine;
use support::procs::processes_with_env;
use support::sandbox::Sandbox;
use support::term::Session;
use support::wait::eventually;
use support::workbench::{KITTY_CTRL_D, footer_row, settled, slash};
use unipi_tui::scripted::message_text;

const REPLY: Duration = Duration::from_secs(60);
const EXIT: Duration = Duration::from_secs(30);
const ENTER: &[u8] = b"\r";
const ESC: &[u8] = b"\x1b";
/// Alt+M in the kitty protocol (the workbench pushes "disambiguate").
const KITTY_ALT_M: &[u8] = b"\x1b[109;3u";

struct Workbench {
    session: Session,
    model: OfflineModel,
    sandbox: Sandbox,
}

fn start() -> Workbench {
    start_with("fusion.toml", Sandbox::new(), |s| {
        let text = s.contents();
        text.contains("scripted-big") && text.contains("○ idle")
    })
}

/// The workbench on `scenario` (in `tests/fixtures/scenarios/`) in `sandbox`, once `ready`.
fn start_with(
    scenario: &str,
    sandbox: Sandbox,
    ready: impl Fn(&vt100::Screen) -> bool,
) -> Workbench {
    let model = OfflineModel::scenario(scenario, &sandbox);
    let session = model.spawn(PiLine::Current, &sandbox, &[], &[], outer_40_rows(140));
    session
        .wait_for("the workbench ready", START, ready)
        .unwrap_or_else(|err| panic!("{err:#}\n{}", sandbox.log_tail(40)));
    Workbench {
        session,
        model,
        sandbox,
    }
}

impl Workbench {
    fn fail(&self, err: anyhow::Error) -> ! {
        let requests: Vec<String> = self
            .requests()
            .iter()
            .map(|request| format!("{}: {:?}", model_of(request), last_text(request)))
            .collect();
        panic!(
            "{err:#}\nscreen:\n{}\nrequests (model: last message):\n{}\nlog:\n{}",
            self.session.screen_text(),
            requests.join("\n"),
            self.sandbox.log_tail(60)
        )
    }

    fn wait_text(&self, text: &str) {
        self.session
            .wait_for_text(text, REPLY)
            .unwrap_or_else(|err| self.fail(err));
    }

    fn wait(&self, what: &str, check: impl Fn(&vt100::Screen) -> bool) {
        self.session
            .wait_for(what, REPLY, check)
            .unwrap_or_else(|err| self.fail(err));
    }

    /// Types `text` into Pi's editor and submits it once it shows there.
    fn prompt(&self, text: &str) {
        self.session.type_text(text);
        self.wait(&format!("{text:?} in Pi's editor"), |s| {
            s.contents().contains(text)
        });
        self.session.send(ENTER);
    }

    /// Closes the `/btw` thread overlay.
    fn close_side_answer(&self) {
        self.session.send(ESC);
        self.wait("the thread overlay closed", |s| {
            !s.contents()
                .contains("a side thread outside the conversation")
        });
    }

    /// Ctrl+D: the workbench exits with 0 and no Pi it started (main, sidekick, warm pool) is
    /// left.
    fn exit_leaving_no_pi(mut self) {
        self.session.send(KITTY_CTRL_D);
        let code = match self.session.wait_exit(EXIT) {
            Ok(code) => code,
            Err(err) => panic!("{err:#}\nlog:\n{}", self.sandbox.log_tail(40)),
        };
        assert_eq!(code, 0, "screen:\n{}", self.session.screen_text());
        let agent_dir = format!("PI_CODING_AGENT_DIR={}", self.model.agent.dir.display());
        eventually("no Pi of this workbench left", EXIT, || {
            processes_with_env(&[agent_dir.as_str()]).is_empty()
        });
    }

    fn requests(&self) -> Vec<Value> {
        self.model.server.requests()
    }

    /// The requests whose last message contains `needle`.
    fn requests_ending_with(&self, needle: &str) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|request| last_text(request).contains(needle))
            .collect()
    }

    /// Waits until a request whose last message contains `needle` has been made.
    fn wait_request(&self, needle: &str) -> Value {
        eventually(format!("a request ending with {needle:?}"), REPLY, || {
            !self.requests_ending_with(needle).is_empty()
        });
        self.requests_ending_with(needle).remove(0)
    }
}

/// `text` with its lines joined and every run of spaces made one: a sentence that Pi wrapped
/// reads as one line again.
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
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

/// Whether a Pi session file under `dir` (any depth) contains `needle`.
fn session_files_contain(dir: &Path, needle: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.filter_map(Result::ok).any(|entry| {
        let path = entry.path();
        if path.is_dir() {
            session_files_contain(&path, needle)
        } else {
            std::fs::read_to_string(&path).is_ok_and(|text| text.contains(needle))
        }
    })
}

fn model_of(request: &Value) -> &str {
    request["model"].as_str().unwrap_or_default()
}

fn tool_names(request: &Value) -> Vec<String> {
    let mut names: Vec<String> = request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn system_prompt(request: &Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|messages| {
            messages
                .iter()
                .find(|m| m["role"] == "system" || m["role"] == "developer")
        })
        .map(message_text)
        .unwrap_or_default()
}

#[test]
fn a_picked_pair_sends_side_work_to_the_sidekick_and_the_footer_shows_the_savings() {
    let wb = start();

    // Before fusion: a helper runs cold, on Pi's default model.
    wb.prompt("ask a helper for the code word");
    wb.wait_text("MAIN-GOT-PRIMARY-HELPER");
    let cold = wb.wait_request("Find the code word.");
    assert_eq!(model_of(&cold), "scripted-big");

    // The picker: a model without a key is refused, then the pair is picked and confirmed.
    slash(&wb.session, "/unipi:model", REPLY);
    wb.wait_text("Model fusion: primary + sidekick");
    wb.session.type_text("claude");
    wb.wait("a model without a key listed", |s| {
        s.contents().contains("no key")
    });
    wb.session.send(ENTER);
    wb.wait("the keyless model refused", |s| {
        let text = s.contents();
        text.contains("No API key for ") && text.contains("▶ Primary   — pick one")
    });
    for _ in 0.."claude".len() {
        wb.session.send(b"\x7f");
    }
    wb.session.type_text("big");
    wb.wait("the big model first", |s| {
        s.contents().contains("▶ unipi-scripted/scripted-big")
    });
    wb.session.send(ENTER);
    wb.wait("the sidekick slot active", |s| {
        s.contents().contains("▶ Sidekick")
    });
    wb.session.type_text("small");
    wb.wait("the small model first", |s| {
        s.contents().contains("▶ unipi-scripted/scripted-small")
    });
    wb.session.send(ENTER);
    wb.wait_text("The sidekick is 60× cheaper");
    wb.session.send(ENTER);
    wb.wait("the pair in the footer", |s| {
        footer_row(s).contains("⚭ scripted-big+scripted-small")
    });
    // The presets file is written after the pair is in force (in order, off the loop).
    let presets = wb.sandbox.home.join(".unipi/config/fusion.json");
    let mut saved = String::new();
    eventually("the pair saved in fusion.json", REPLY, || {
        saved = std::fs::read_to_string(&presets).unwrap_or_default();
        saved.contains("\"sidekick\": \"unipi-scripted/scripted-small\"")
    });

    // Alt+M opens the picker with the pair in its slots; another primary chosen and then Esc
    // changes nothing: the file, the footer, and (below) the model of the main agent's request.
    wb.session.send(KITTY_ALT_M);
    wb.wait("the picker again, with the pair", |s| {
        let text = s.contents();
        text.contains("Model fusion: primary + sidekick") && text.contains("✓ Confirm this pair")
    });
    wb.session.type_text("small");
    wb.wait("the small model first", |s| {
        s.contents().contains("▶ unipi-scripted/scripted-small")
    });
    wb.session.send(ENTER);
    wb.wait("the small model in the primary slot", |s| {
        s.contents()
            .contains("Primary   unipi-scripted/scripted-small")
    });
    wb.session.send(ESC);
    wb.wait("the picker closed", |s| {
        !s.contents().contains("Model fusion: primary")
    });
    wb.wait("the pair unchanged in the footer", |s| {
        footer_row(s).contains("⚭ scripted-big+scripted-small")
    });
    assert_eq!(
        std::fs::read_to_string(wb.sandbox.home.join(".unipi/config/fusion.json")).unwrap(),
        saved,
        "cancel changes nothing"
    );

    // The main agent's next request goes to the primary; after it the sidekick names the session.
    wb.prompt("hello");
    wb.wait_text("MAIN-HELLO-REPLY");
    let hello = wb.wait_request("hello");
    assert_eq!(model_of(&hello), "scripted-big");
    let naming = wb.wait_request("Reply with a short title");
    assert_eq!(model_of(&naming), "scripted-small");
    eventually("the session named in Pi's session file", REPLY, || {
        session_files_contain(&wb.model.agent.dir.join("sessions"), "Fusion end to end")
    });

    // A helper without a model runs on the sidekick, from the warm pool, asked what a fresh
    // helper was asked.
    wb.prompt("ask a helper for the code word");
    wb.wait_text("MAIN-GOT-SIDEKICK-HELPER");
    let helper_requests = wb.requests_ending_with("Find the code word.");
    let warm = helper_requests.last().unwrap();
    assert_eq!(model_of(warm), "scripted-small");
    assert!(
        wb.sandbox
            .log()
            .contains("served by a warm sidekick process"),
        "{}",
        wb.sandbox.log_tail(60)
    );
    assert_eq!(tool_names(warm), tool_names(&cold));
    assert_eq!(system_prompt(warm), system_prompt(&cold));
    assert_eq!(last_text(warm), last_text(&cold));

    // /btw: answered by the sidekick in the thread overlay; the main conversation never sees it.
    slash(&wb.session, "/btw what is the code word?", REPLY);
    wb.wait_text("BTW-ANSWER: the code word is PELICAN.");
    let side = wb.wait_request("Side question: what is the code word?");
    assert_eq!(model_of(&side), "scripted-small");
    assert!(
        all_text(&side).contains("user: hello"),
        "the side question carries the conversation so far: {}",
        all_text(&side)
    );
    wb.close_side_answer();
    wb.prompt("hello again");
    wb.wait_text("MAIN-SECOND-HELLO");
    let again = wb.wait_request("hello again");
    assert_eq!(model_of(&again), "scripted-big");
    let main_text = all_text(&again);
    assert!(
        !main_text.contains("BTW-ANSWER") && !main_text.contains("Side question"),
        "the side question leaked into the conversation: {main_text}"
    );

    // Asked again in the same thread and injected: the main agent gets the thread.
    slash(&wb.session, "/btw what is the code word?", REPLY);
    wb.wait_text("2 exchanges");
    wb.session.type_text("/btw:inject");
    wb.wait_text("› /btw:inject");
    wb.session.send(ENTER);
    wb.wait("the overlay closed by the inject", |s| {
        !s.contents()
            .contains("a side thread outside the conversation")
    });
    wb.wait_request("Here is a side conversation I had");
    wb.wait("Pi settled after the injected thread", settled);
    wb.prompt("hello for the third time");
    wb.wait_text("MAIN-THIRD-HELLO");
    let third = wb.wait_request("hello for the third time");
    assert!(
        all_text(&third).contains("BTW-ANSWER: the code word is PELICAN."),
        "{}",
        all_text(&third)
    );

    // The footer: the pair and non-zero savings (the helper alone saved about $1.55).
    wb.wait("non-zero savings in the footer", |s| {
        let footer = footer_row(s);
        footer.contains("⚭ scripted-big+scripted-small · saved $")
            && !footer.contains("saved $0.00")
    });
    slash(&wb.session, "/unipi:fusion-status", REPLY);
    wb.wait("the breakdown", |s| {
        let text = s.contents();
        text.contains("This session: 4 calls") && text.contains("btw:") && text.contains("helper:")
    });
    wb.session.send(ESC);
    wb.wait("the status closed", |s| {
        !s.contents().contains("This session:")
    });

    wb.wait("Pi settled before Ctrl+D", settled);
    wb.exit_leaving_no_pi();
}

/// The active preset of the workspace's presets file (which overrides the home file's) is
/// applied at start-up; when the primary answers HTTP 429 the pair moves the main agent to the
/// preset's fallback, the footer says so, a notice in Pi's conversation names both models, and
/// after the cooldown the primary is back.
#[test]
fn the_workspace_preset_applies_at_start_and_a_rate_limited_primary_falls_back_for_the_cooldown() {
    let sandbox = Sandbox::new();
    sandbox.write(
        &sandbox.home.join(".unipi/config/fusion.json"),
        r#"{"active": "home", "presets": {"home": {"primary": "unipi-scripted/scripted-small",
            "sidekick": "unipi-scripted/scripted-small"}}}"#,
    );
    sandbox.write(
        &sandbox.project.join(".unipi/config/fusion.json"),
        r#"{"active": "work", "nameSessions": false, "warmPool": {"size": 0},
            "presets": {"work": {"primary": "unipi-scripted/scripted-mid",
            "sidekick": "unipi-scripted/scripted-small",
            "fallback": "unipi-scripted/scripted-big", "cooldownSeconds": 15}}}"#,
    );
    // Pi starts on scripted-big; the pair in the footer is the workspace's, not the home's.
    let wb = start_with("fusion-fallback.toml", sandbox, |s| {
        settled(s) && footer_row(s).contains("⚭ scripted-mid+scripted-small")
    });

    wb.prompt("rate limit me");
    let limited = wb.wait_request("rate limit me");
    assert_eq!(model_of(&limited), "scripted-mid", "the preset's primary");
    // The segment says so at once; Pi's own model (in the footer too) once the switch is done.
    wb.wait("the error, the fallback in the footer and Pi on it", |s| {
        let footer = footer_row(s);
        footer.contains("✗ error")
            && footer.contains("⚭ fallback scripted-big (1m)+scripted-small")
            && footer.contains("│ scripted-big │")
    });

    // A notice names both models, in Pi's conversation under the error, where it stays.
    wb.wait("the fallback's notice naming both models", |s| {
        words(&s.contents()).contains(
            "Model fusion: unipi-scripted/scripted-mid is rate-limited; the main agent uses the \
             fallback unipi-scripted/scripted-big for 1 min",
        )
    });

    wb.prompt("while limited");
    wb.wait_text("ANSWERED-BY-FALLBACK");
    let during = wb.wait_request("while limited");
    assert_eq!(model_of(&during), "scripted-big", "the fallback");

    wb.wait("the primary back after the cooldown", |s| {
        footer_row(s).contains("⚭ scripted-mid+scripted-small")
    });
    wb.wait("Pi settled", settled);
    wb.prompt("after the cooldown");
    wb.wait_text("ANSWERED-BY-PRIMARY");
    let after = wb.wait_request("after the cooldown");
    assert_eq!(model_of(&after), "scripted-mid", "the primary again");
    assert!(
        wb.requests_ending_with("Reply with a short title")
            .is_empty(),
        "\"nameSessions\": false keeps the sidekick from naming the session"
    );

    wb.exit_leaving_no_pi();
}

/// The sidekick runtime on its own, on both Pi lines: each question in a fresh in-memory
/// session (the second request does not carry the first question), Pi's usage and model
/// reported, and the process group gone after the stop.
async fn the_sidekick_runtime_answers_each_question_afresh(line: PiLine) {
    use unipi_tui::capability::ChildPi;
    use unipi_tui::fusion::config::ModelRef;
    use unipi_tui::fusion::runtime::SidekickRuntime;
    use unipi_tui::pi::offline::write_priced_agent_dir;
    use unipi_tui::scripted::{Scenario, start};

    let pi = support::pi::pi_install(line).unwrap();
    let scenario = Scenario::from_toml_str(
        r#"
model = ["scripted-small"]
[[rule]]
when = "first question"
reply = "FIRST-ANSWER"
usage = { prompt_tokens = 500, completion_tokens = 5 }
[[rule]]
when = "second question"
reply = "SECOND-ANSWER"
"#,
        "runtime scenario",
    )
    .unwrap();
    let server = start(scenario).await.unwrap();
    let sandbox = Sandbox::new();
    let agent = write_priced_agent_dir(
        &sandbox.dir("agent"),
        &server.base_url(),
        &server.served_models(),
    )
    .unwrap();
    let mut env = agent.env.clone();
    env.extend(
        sandbox
            .env()
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value)),
    );
    if let Some(node) = &pi.node_bin_dir {
        env.push((
            "PATH".into(),
            format!(
                "{}:{}",
                node.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        ));
    }
    let runtime = SidekickRuntime::new(
        ChildPi {
            program: pi.bin.clone(),
            leading_args: vec!["--offline".into()],
            env,
        },
        sandbox.project.clone(),
    );
    runtime
        .restart(ModelRef::parse("unipi-scripted/scripted-small").unwrap())
        .await
        .unwrap();
    let first = runtime.ask("the first question", REPLY).await.unwrap();
    assert_eq!(first.text, "FIRST-ANSWER", "Pi {}", pi.version);
    assert_eq!(
        first.model.as_deref(),
        Some("unipi-scripted/scripted-small")
    );
    assert_eq!((first.usage.input, first.usage.output), (500, 5));
    let second = runtime.ask("the second question", REPLY).await.unwrap();
    assert_eq!(second.text, "SECOND-ANSWER");
    let requests = server.requests();
    let last = requests.last().unwrap();
    assert!(
        !all_text(last).contains("first question"),
        "the second question starts afresh: {}",
        all_text(last)
    );
    let group = runtime.group().unwrap();
    runtime.stop().await;
    assert!(
        !group.alive(),
        "the sidekick's group is gone after the stop"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_current_sidekick_runtime_answers_each_question_afresh() {
    the_sidekick_runtime_answers_each_question_afresh(PiLine::Current).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_legacy_sidekick_runtime_answers_each_question_afresh() {
    the_sidekick_runtime_answers_each_question_afresh(PiLine::Legacy).await;
}

//! The notifications against stand-ins for their real ends: HTTP servers on loopback playing
//! ntfy, Gotify and Telegram (recording every request exactly, answering with an error or not
//! at all when told), the screen's handle for the terminal channel, and a real event bus for the
//! router and the `unipi:notify:sent` announcement. The router is fed the messages the other
//! capabilities publish, with the alerts they attach.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::bus::NotificationSent;
use super::config::{NotifyConfig, Platform, Priority, TerminalMethod};
use super::dispatch::{Delivery, Dispatcher, Focus, Sent, test_report};
use super::platforms::Notice;
use super::routing::{Alert, Fired, Router, Waits};
use crate::askuser::bus::{AskUserAnswered, AskUserPrompt};
use crate::bridge::{AgentId, BusEvent, BusMessage, EventBus, PiEvent};
use crate::capability::{Ui, UiReceiver, UiRequest};
use crate::config::keymap::Keymap;
use crate::helpers::bus::HelperFinished;
use crate::mcp::bus::ServerError;
use crate::pane::emulator::{ProgramState, ProgramStatus};
use crate::tasks::bus::{BgTaskFinished, BgTasksChanged};

/// One request as the stand-in server saw it.
#[derive(Clone, Debug)]
struct Seen {
    method: Method,
    path: String,
    headers: HeaderMap,
    body: Value,
}

/// How the stand-in answers a path.
#[derive(Clone)]
enum Answer {
    Status(u16, &'static str),
    /// Never answers (a server that hangs).
    Hang,
}

/// An HTTP server on loopback that records requests and answers by path (200 `{}` otherwise).
struct Loopback {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Loopback {
    async fn start(answers: HashMap<&'static str, Answer>) -> Loopback {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let answers = Arc::new(answers);
        let handler = {
            let seen = Arc::clone(&seen);
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let seen = Arc::clone(&seen);
                let answers = Arc::clone(&answers);
                async move {
                    let path = uri.path().to_owned();
                    seen.lock().unwrap().push(Seen {
                        method,
                        path: path.clone(),
                        headers,
                        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                    });
                    match answers.get(path.as_str()).cloned() {
                        Some(Answer::Hang) => std::future::pending().await,
                        Some(Answer::Status(code, body)) => {
                            (StatusCode::from_u16(code).unwrap(), body.to_owned())
                        }
                        None => (StatusCode::OK, "{}".to_owned()),
                    }
                }
            }
        };
        let app = axum::Router::new().fallback(handler);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Loopback { url, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// Every HTTP platform pointed at `server`, with tokens; terminal and native off.
fn http_config(server: &str) -> NotifyConfig {
    let mut config = NotifyConfig {
        native: false,
        terminal: false,
        send_timeout: Duration::from_secs(1),
        ..NotifyConfig::default()
    };
    config.ntfy.enabled = true;
    config.ntfy.server_url = format!("{server}/");
    config.ntfy.topic = Some("pi-alerts".into());
    config.ntfy.token = Some("tk_ntfy".into());
    config.gotify.enabled = true;
    config.gotify.server_url = Some(format!("{server}/gotify/"));
    config.gotify.app_token = Some("gotify-app".into());
    config.telegram.enabled = true;
    config.telegram.bot_token = Some("123:SECRET".into());
    config.telegram.chat_id = Some("4242".into());
    config.telegram.api_url = format!("{server}/tg");
    config
}

fn dispatcher(config: NotifyConfig, in_tmux: bool) -> (Dispatcher, UiReceiver, Ui) {
    let (ui, rx) = Ui::channel(Arc::new(Keymap::defaults()));
    let dispatcher = Dispatcher::new(config, ui.clone(), in_tmux, TerminalMethod::Osc9);
    (dispatcher, rx, ui)
}

fn notice(priority: Priority) -> Notice {
    Notice::new(
        "Pi — Question Asked",
        "Agent asks: ship v1.2 (all tests pass)?",
        priority,
    )
}

/// Sends a short "Pi: done" through the terminal channel alone.
async fn send_done_to_terminal(dispatcher: &Dispatcher) -> Result<Sent, String> {
    dispatcher
        .send_one(
            Platform::Terminal,
            &Notice::new("Pi", "done", Priority::Low),
            Focus::Respect,
        )
        .await
}

fn outcome(results: &[Delivery], platform: Platform) -> Result<Sent, String> {
    results
        .iter()
        .find(|d| d.platform == platform)
        .map(|d| d.outcome.clone())
        .unwrap_or_else(|| Err(format!("{platform:?} not tried")))
}

#[tokio::test]
async fn each_service_gets_its_exact_request() {
    let server = Loopback::start(HashMap::new()).await;
    let (dispatcher, _rx, _ui) = dispatcher(http_config(&server.url), false);
    let platforms = [Platform::Ntfy, Platform::Gotify, Platform::Telegram];
    let results = dispatcher
        .send_all(&notice(Priority::High), &platforms, Focus::Respect)
        .await;
    for platform in platforms {
        assert_eq!(
            outcome(&results, platform),
            Ok(Sent::Delivered),
            "{platform:?}"
        );
    }
    let mut seen = server.seen();
    seen.sort_by(|a, b| a.path.cmp(&b.path));
    let summary: Vec<(String, String)> = seen
        .iter()
        .map(|s| (s.method.to_string(), s.path.clone()))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("POST".into(), "/".into()),
            ("POST".into(), "/gotify/message".into()),
            ("POST".into(), "/tg/bot123:SECRET/sendMessage".into()),
        ]
    );
    let header = |s: &Seen, name: &str| s.headers.get(name).map(|v| v.to_str().unwrap().to_owned());
    let (ntfy, gotify, telegram) = (&seen[0], &seen[1], &seen[2]);
    for request in [ntfy, gotify, telegram] {
        assert_eq!(
            header(request, "content-type").as_deref(),
            Some("application/json")
        );
    }
    assert_eq!(
        header(ntfy, "authorization").as_deref(),
        Some("Bearer tk_ntfy")
    );
    assert_eq!(
        ntfy.body,
        json!({"topic": "pi-alerts", "title": "Pi — Question Asked",
               "message": "Agent asks: ship v1.2 (all tests pass)?", "priority": 5})
    );
    assert_eq!(
        header(gotify, "x-gotify-key").as_deref(),
        Some("gotify-app")
    );
    assert_eq!(header(gotify, "authorization"), None);
    assert_eq!(
        gotify.body,
        json!({"title": "Pi — Question Asked",
               "message": "Agent asks: ship v1.2 (all tests pass)?", "priority": 8})
    );
    assert_eq!(
        telegram.body,
        json!({"chat_id": 4242,
               "text": "*Pi — Question Asked*\nAgent asks: ship v1\\.2 \\(all tests pass\\)?",
               "parse_mode": "MarkdownV2"})
    );
}

#[tokio::test]
async fn priorities_map_per_service() {
    let server = Loopback::start(HashMap::new()).await;
    let (dispatcher, _rx, _ui) = dispatcher(http_config(&server.url), false);
    for priority in [Priority::Low, Priority::Normal, Priority::High] {
        dispatcher
            .send_all(
                &notice(priority),
                &[Platform::Ntfy, Platform::Gotify],
                Focus::Respect,
            )
            .await;
    }
    let seen = server.seen();
    let priorities = |path: &str| -> Vec<Value> {
        seen.iter()
            .filter(|s| s.path == path)
            .map(|s| s.body["priority"].clone())
            .collect()
    };
    assert_eq!(priorities("/"), vec![json!(2), json!(3), json!(5)]);
    assert_eq!(
        priorities("/gotify/message"),
        vec![json!(2), json!(5), json!(8)]
    );
}

#[tokio::test]
async fn a_failing_or_silent_service_fails_alone_and_no_secret_shows() {
    let server = Loopback::start(HashMap::from([
        ("/", Answer::Status(500, "boom")),
        ("/gotify/message", Answer::Hang),
    ]))
    .await;
    let mut config = http_config(&server.url);
    // Nothing listens here: a refused connection, whose error must not show the bot token.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    config.telegram.api_url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let (dispatcher, _rx, _ui) = dispatcher(config, false);
    let platforms = [Platform::Ntfy, Platform::Gotify, Platform::Telegram];
    let results = dispatcher
        .send_all(&notice(Priority::High), &platforms, Focus::Respect)
        .await;
    assert_eq!(
        outcome(&results, Platform::Ntfy),
        Err("ntfy API error 500: boom".into())
    );
    assert_eq!(
        outcome(&results, Platform::Gotify),
        Err("no answer within 1 s".into())
    );
    let telegram = outcome(&results, Platform::Telegram).unwrap_err();
    assert!(telegram.starts_with("Telegram: "), "{telegram}");
    assert!(!telegram.contains("SECRET"), "the token leaked: {telegram}");
    // A platform without its settings says what is missing, without a request.
    let mut config = http_config(&server.url);
    config.gotify.app_token = None;
    let (dispatcher, _rx, _ui) = self::dispatcher(config, false);
    assert_eq!(
        dispatcher
            .send_one(Platform::Gotify, &notice(Priority::Low), Focus::Respect)
            .await,
        Err("Gotify serverUrl and appToken are required".into())
    );
}

#[tokio::test]
async fn the_terminal_channel_writes_its_bytes_inside_and_outside_tmux() {
    let mut config = NotifyConfig {
        native: false,
        ..NotifyConfig::default()
    };
    for (in_tmux, want) in [
        (false, b"\x1b]9;Pi: done\x1b\\".to_vec()),
        (
            true,
            b"\x1bPtmux;\x1b\x1b]9;Pi: done\x1b\x1b\\\x1b\\\x07".to_vec(),
        ),
    ] {
        let (dispatcher, mut rx, _ui) = dispatcher(config.clone(), in_tmux);
        let sent = send_done_to_terminal(&dispatcher).await;
        assert_eq!(sent, Ok(Sent::Delivered));
        match rx.try_recv() {
            Ok(UiRequest::Terminal(bytes)) => assert_eq!(bytes, want, "tmux={in_tmux}"),
            other => panic!("expected terminal bytes, got {other:?}"),
        }
    }
    // The method in the settings wins over what was detected.
    config.terminal_method = TerminalMethod::Bell;
    let (dispatcher, mut rx, _ui) = dispatcher(config, false);
    send_done_to_terminal(&dispatcher).await.unwrap();
    assert!(matches!(rx.try_recv(), Ok(UiRequest::Terminal(bytes)) if bytes == b"\x07"));
    // Without a terminal (a headless run) there is nobody to tell: not an error.
    let headless = Dispatcher::new(
        NotifyConfig::default(),
        Ui::headless(Arc::new(Keymap::defaults())),
        false,
        TerminalMethod::Bell,
    );
    let sent = send_done_to_terminal(&headless).await;
    assert_eq!(sent, Ok(Sent::Suppressed("no terminal is attached")));
    assert_eq!(
        test_report(&[Delivery {
            platform: Platform::Terminal,
            outcome: sent
        }]),
        "– Terminal: not sent (no terminal is attached)"
    );
}

#[tokio::test]
async fn the_desktop_is_left_alone_while_the_terminal_has_focus() {
    let (dispatcher, _rx, ui) = dispatcher(NotifyConfig::default(), false);
    assert!(ui.screen().focused && ui.screen().attached);
    assert_eq!(
        dispatcher
            .send_one(Platform::Native, &notice(Priority::High), Focus::Respect)
            .await,
        Ok(Sent::Suppressed("the terminal has focus"))
    );
}

#[tokio::test]
async fn dispatching_returns_at_once_and_announces_the_outcome() {
    let server = Loopback::start(HashMap::from([("/", Answer::Status(403, "denied"))])).await;
    let (dispatcher, _rx, _ui) = dispatcher(http_config(&server.url), false);
    let bus = EventBus::new();
    let mut events = bus.subscribe();
    dispatcher.attach(bus);
    dispatcher.dispatch(
        "agent_end",
        notice(Priority::Low),
        vec![Platform::Ntfy, Platform::Gotify],
    );
    let sent = next_module_event(&mut events, NotificationSent::NAME).await;
    assert_eq!(sent["eventType"], "agent_end");
    assert_eq!(sent["platforms"], json!(["ntfy", "gotify"]));
    assert_eq!(sent["success"], false);
    assert!(sent["timestamp"].as_u64().unwrap() > 0);
    assert_eq!(
        sent["results"],
        json!([{"platform": "ntfy", "success": false, "error": "ntfy API error 403: denied"},
               {"platform": "gotify", "success": true}])
    );
    // The dashboard's figures: one delivered, one failed.
    let tally = dispatcher.tally();
    assert_eq!((tally.delivered, tally.failed), (1, 1));
}

#[tokio::test]
async fn the_test_command_tries_each_enabled_platform() {
    let server = Loopback::start(HashMap::from([(
        "/gotify/message",
        Answer::Status(401, "bad key"),
    )]))
    .await;
    let mut config = http_config(&server.url);
    config.telegram.enabled = false;
    config.terminal = true;
    let (dispatcher, _rx, _ui) = dispatcher(config, false);
    let report = test_report(&dispatcher.test().await);
    assert_eq!(
        report,
        "✓ Terminal: sent\n✓ ntfy: sent\n✗ Gotify: Gotify API error 401: bad key"
    );
    let titles: Vec<Value> = server
        .seen()
        .iter()
        .map(|s| s.body["title"].clone())
        .collect();
    assert_eq!(
        titles,
        vec![
            json!("Pi — Test Notification"),
            json!("Pi — Test Notification")
        ]
    );
    let off = NotifyConfig {
        native: false,
        terminal: false,
        ..NotifyConfig::default()
    };
    let (dispatcher, _rx, _ui) = self::dispatcher(off, false);
    assert_eq!(
        test_report(&dispatcher.test().await),
        "No platforms enabled. Use /unipi:notify-settings first."
    );
}

/// `/unipi:notify-test` runs inside the bridge's budget for a command: tried one after another,
/// two platforms that never answer took their whole timeout each and the report was lost. Now
/// each platform has the same few seconds at once, and a silent one is reported as such.
#[tokio::test]
async fn the_test_command_reports_every_platform_within_the_command_budget() {
    let server = Loopback::start(HashMap::from([
        ("/", Answer::Hang),
        ("/gotify/message", Answer::Hang),
    ]))
    .await;
    let mut config = http_config(&server.url);
    config.terminal = true;
    config.send_timeout = Duration::from_secs(2);
    let (dispatcher, _rx, _ui) = dispatcher(config, false);
    // The stand-in for the bridge's budget: one platform's timeout and a half.
    let budget = Duration::from_secs(3);
    let results = tokio::time::timeout(budget, dispatcher.test())
        .await
        .expect("the report came back within the command's budget");
    assert_eq!(
        test_report(&results),
        "✓ Terminal: sent\n✗ ntfy: no answer within 2 s\n✗ Gotify: no answer within 2 s\n\
         ✓ Telegram: sent"
    );
    // The default timeout (10 s, the bridge's whole budget) is cut to fit inside the budget.
    let wait = super::dispatch::test_wait(&NotifyConfig::default());
    let command_budget = crate::bridge::HostOptions::default().command_timeout;
    assert!(
        wait + Duration::from_secs(1) < command_budget,
        "{wait:?} in {command_budget:?}"
    );
}

async fn next_module_event(events: &mut broadcast::Receiver<BusEvent>, name: &str) -> Value {
    let deadline = Duration::from_secs(10);
    tokio::time::timeout(deadline, async {
        loop {
            if let BusEvent::Module {
                name: got, data, ..
            } = events.recv().await.unwrap()
                && got == name
            {
                return data;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {name} within {deadline:?}"))
}

/// `message` as its capability publishes it.
fn message(message: impl BusMessage) -> BusEvent {
    BusEvent::message("test", &message).unwrap()
}

/// An `ask_user` question (`agent`'s first), as ask-user publishes it.
fn question(id: u64, agent: &str, question: &str, context: Option<&str>) -> BusEvent {
    message(AskUserPrompt {
        id,
        agent: agent.into(),
        question: question.into(),
        context: context.map(str::to_owned),
        option_count: 0,
        allow_multiple: false,
        allow_freeform: true,
        question_count: 1,
    })
}

fn answered(id: u64) -> BusEvent {
    message(AskUserAnswered {
        id,
        agent: "main".into(),
        kind: "selection".into(),
    })
}

fn task_finished(name: &str, status: &str, exit_code: i32, wakes_agent: bool) -> BusEvent {
    message(BgTaskFinished {
        id: format!("bg-{name}"),
        name: name.into(),
        status: status.into(),
        exit_code: Some(exit_code),
        wakes_agent,
        task: serde_json::Value::Null,
    })
}

fn messages(router: &Router, events: Vec<BusEvent>) -> Vec<(String, String, Priority)> {
    events
        .iter()
        .filter_map(|event| router.route(event))
        .map(|alert| {
            (
                alert.event.to_owned(),
                alert.notice.message,
                alert.notice.priority,
            )
        })
        .collect()
}

#[tokio::test]
async fn events_become_alerts_with_their_messages_and_priorities() {
    let (dispatcher, _rx, _ui) = dispatcher(NotifyConfig::default(), false);
    let router = Router::new(dispatcher);
    let settled = |aborted| PiEvent::AgentSettled {
        aborted,
        synthetic: false,
    };
    let error_end = PiEvent::MessageEnd(crate::bridge::MessageEnd {
        stop_reason: Some("error".into()),
        error_message: Some("429 rate limited".into()),
        ..Default::default()
    });
    let got = messages(
        &router,
        vec![
            BusEvent::main_pi(PiEvent::SessionName {
                name: Some("release".into()),
            }),
            BusEvent::main_pi(PiEvent::AgentStart),
            BusEvent::main_pi(settled(false)),
            // A background task that will wake the agent: its "done" is not the end.
            message(BgTasksChanged {
                running: 1,
                waking: 1,
            }),
            BusEvent::main_pi(settled(false)),
            message(BgTasksChanged {
                running: 0,
                waking: 0,
            }),
            // An error, then a run the user aborted: no alert for the latter.
            BusEvent::main_pi(PiEvent::AgentStart),
            BusEvent::main_pi(error_end.clone()),
            BusEvent::main_pi(settled(false)),
            BusEvent::main_pi(PiEvent::AgentStart),
            BusEvent::main_pi(error_end),
            BusEvent::main_pi(settled(true)),
            question(7, "main", "Deploy?", Some("tests pass")),
            question(8, "helper:h1", "Which file?", None),
            task_finished("build", "failed", 2, false),
            task_finished("watch", "done", 0, true),
            message(HelperFinished {
                id: "h1".into(),
                agent_type: "explore".into(),
                description: "map the repo".into(),
                status: "completed".into(),
                error: None,
            }),
            message(ServerError {
                name: "files".into(),
                error: "exited with status 1".into(),
            }),
            BusEvent::main_pi(PiEvent::CompactionEnd(crate::bridge::CompactionEnd {
                tokens_before: Some(9000),
                ..Default::default()
            })),
            BusEvent::main_pi(PiEvent::CompactionEnd(crate::bridge::CompactionEnd {
                aborted: true,
                ..Default::default()
            })),
            BusEvent::main_pi(PiEvent::CompactionEnd(crate::bridge::CompactionEnd {
                error: Some("Nothing to compact (session too small)".into()),
                ..Default::default()
            })),
            BusEvent::Pi {
                agent: AgentId::new("helper:h1"),
                event: Arc::new(settled(false)),
            },
        ],
    );
    let want: Vec<(&str, &str, Priority)> = vec![
        ("agent_end", "release - Agent is complete", Priority::Low),
        ("agent_error", "429 rate limited", Priority::Normal),
        (
            "ask_user_prompt",
            "Agent asks: Deploy? — tests pass",
            Priority::High,
        ),
        (
            "ask_user_prompt",
            "helper:h1 asks: Which file?",
            Priority::High,
        ),
        (
            "bg_task_finished",
            "build: failed (exit 2)",
            Priority::Normal,
        ),
        (
            "helper_finished",
            "explore helper “map the repo” completed",
            Priority::Low,
        ),
        (
            "mcp_server_error",
            "Server \"files\" error: exited with status 1",
            Priority::Normal,
        ),
        (
            "compaction_done",
            "Context compacted (was 9000 tokens)",
            Priority::Low,
        ),
    ];
    let want: Vec<(String, String, Priority)> = want
        .into_iter()
        .map(|(e, m, p)| (e.to_owned(), m.to_owned(), p))
        .collect();
    assert_eq!(got, want);
}

/// A router sending only to the terminal, with `silence`; its bus and the screen's handle.
/// The workflow capability's end events (its own names and fields) become Unipi's alerts.
#[tokio::test]
async fn a_workflow_step_and_a_ralph_loop_ending_alert_with_the_originals_words() {
    use crate::workflow::bus::{RalphLoopEnd, WorkflowEnd};
    use crate::workflow::ralph::LoopStatus;
    let (dispatcher, _rx, _ui) = dispatcher(NotifyConfig::default(), false);
    let router = Router::new(dispatcher);
    let step = |command: &str, level: &str, success, duration_ms| {
        message(WorkflowEnd {
            command: command.into(),
            level: level.into(),
            success,
            duration_ms,
        })
    };
    let got = messages(
        &router,
        vec![
            step("plan", "write-unipi", true, 5),
            step("work", "full", false, 9),
            message(RalphLoopEnd {
                name: "release".into(),
                iteration: 2,
                max_iterations: 5,
                status: LoopStatus::Stopped,
                reason: Some("ralph-stop".into()),
            }),
        ],
    );
    let low = |event: &str, message: &str| (event.to_owned(), message.to_owned(), Priority::Low);
    assert_eq!(
        got,
        vec![
            low("workflow_end", "Workflow plan completed"),
            low("workflow_end", "Workflow work failed"),
            low("ralph_loop_end", "Ralph loop \"release\" stopped"),
        ]
    );
}

fn terminal_router(silence: Duration) -> (Router, UiReceiver, Ui) {
    let config = NotifyConfig {
        native: false,
        silence_after_input: silence,
        ..NotifyConfig::default()
    };
    let (dispatcher, rx, ui) = dispatcher(config, false);
    (Router::new(dispatcher), rx, ui)
}

fn terminal_bytes(rx: &mut UiReceiver) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Ok(request) = rx.try_recv() {
        if let UiRequest::Terminal(bytes) = request {
            out.push(bytes);
        }
    }
    out
}

async fn waited(fired: Fired) -> bool {
    match fired {
        Fired::Waiting(task) => task.await.unwrap(),
        other => panic!("expected a waiting alert, got {other:?}"),
    }
}

#[tokio::test]
async fn a_question_alerts_only_if_still_unanswered_after_the_silence() {
    let silence = Duration::from_millis(300);
    let (router, mut rx, ui) = terminal_router(silence);
    // Answered within the silence: nothing is sent.
    let asked = router.route(&question(1, "main", "A?", None)).unwrap();
    assert_eq!(asked.waits, Waits::Question(1));
    let fired = router.fire(asked);
    router.route(&answered(1));
    assert!(!waited(fired).await);
    assert!(terminal_bytes(&mut rx).is_empty());
    // Unanswered, the user typing meanwhile: it waits for the keyboard to go quiet, then goes.
    let started = Instant::now();
    let asked = router.route(&question(2, "main", "B?", None)).unwrap();
    let fired = router.fire(asked);
    // The user types half a silence after the question: the quiet is counted from then.
    ui.update_screen(|state| state.last_input = Some(Instant::now() + silence / 2));
    assert!(waited(fired).await);
    assert!(
        started.elapsed() >= silence + silence / 2,
        "it waited for the quiet"
    );
    let bytes = wait_for_terminal(&mut rx).await;
    assert_eq!(
        bytes,
        b"\x1b]9;Pi \xe2\x80\x94 Question Asked: Agent asks: B?\x1b\\".to_vec()
    );
}

#[tokio::test]
async fn pi_blocked_alerts_while_it_stays_blocked() {
    let (router, mut rx, ui) = terminal_router(Duration::from_millis(100));
    let blocked = ProgramStatus {
        state: ProgramState::Blocked,
        app: Some("pi".into()),
        kind: Some("question".into()),
        message: Some("Allow rm -rf build?".into()),
    };
    ui.update_screen(|state| state.pi_status = Some(blocked.clone()));
    let alert = Alert {
        event: "ask_user_prompt",
        notice: Notice::new(
            "Pi — Input Needed",
            "Pi is waiting for you: Allow rm -rf build?",
            Priority::High,
        ),
        waits: Waits::Blocked,
    };
    assert!(waited(router.fire(alert.clone())).await);
    assert!(wait_for_terminal(&mut rx).await.starts_with(b"\x1b]9;Pi"));
    // No longer blocked by the time the silence is over: nothing.
    let fired = router.fire(alert);
    ui.update_screen(|state| state.pi_status = None);
    assert!(!waited(fired).await);
}

#[tokio::test]
async fn informational_alerts_go_at_once_unless_the_user_just_typed_or_the_event_is_off() {
    let (router, mut rx, ui) = terminal_router(Duration::from_secs(60));
    let done = Alert {
        event: "agent_end",
        notice: Notice::new("Pi — Agent Complete", "Agent is complete", Priority::Low),
        waits: Waits::No,
    };
    assert!(matches!(router.fire(done.clone()), Fired::Sent));
    assert!(!wait_for_terminal(&mut rx).await.is_empty());
    ui.update_screen(|state| state.last_input = Some(Instant::now()));
    assert!(matches!(router.fire(done.clone()), Fired::HeldBack));
    let off = Alert {
        event: "helper_finished",
        ..done
    };
    assert!(matches!(router.fire(off), Fired::Off), "off by default");
}

/// The next terminal notification the dispatcher wrote (it sends from its own task).
async fn wait_for_terminal(rx: &mut UiReceiver) -> Vec<u8> {
    let deadline = Duration::from_secs(10);
    tokio::time::timeout(deadline, async {
        loop {
            match rx.recv().await {
                Some(UiRequest::Terminal(bytes)) => return bytes,
                Some(_) => {}
                None => panic!("the screen's handle closed"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no terminal notification within {deadline:?}"))
}

/// A router that sends to ntfy at `server` alone and holds alerts back for an hour after the
/// user's last input.
fn ntfy_router(server: &str) -> (Router, UiReceiver, Ui) {
    let mut config = http_config(server);
    config.gotify.enabled = false;
    config.telegram.enabled = false;
    config.silence_after_input = Duration::from_secs(3600);
    let (dispatcher, rx, ui) = dispatcher(config, false);
    (Router::new(dispatcher), rx, ui)
}

/// A detachable session with no terminal attached: the user is away, whatever the keyboard
/// said last. The question reaches ntfy at once, not after the silence, and an informational
/// alert is not held back by typing done before the terminal left.
#[tokio::test]
async fn with_no_terminal_attached_a_question_reaches_the_phone_at_once() {
    let server = Loopback::start(HashMap::new()).await;
    let (router, _rx, ui) = ntfy_router(&server.url);
    ui.update_screen(|state| {
        state.last_input = Some(Instant::now());
        state.attached = false;
    });
    let asked = router
        .route(&question(9, "main", "Deploy now?", None))
        .unwrap();
    assert!(
        tokio::time::timeout(Duration::from_secs(10), waited(router.fire(asked)))
            .await
            .expect("sent at once, not after the hour of silence")
    );
    let loopback = &server;
    let seen = move |count: usize| async move {
        crate::test_wait::eventually(
            format!("{count} alerts at the server"),
            crate::test_wait::WAIT,
            || loopback.seen().len() >= count,
        )
        .await;
    };
    seen(1).await;
    let done = Alert {
        event: "agent_end",
        notice: Notice::new("Pi — Agent Complete", "Agent is complete", Priority::Low),
        waits: Waits::No,
    };
    assert!(matches!(router.fire(done.clone()), Fired::Sent));
    seen(2).await;
    let bodies: Vec<String> = server
        .seen()
        .iter()
        .map(|seen| seen.body["message"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(bodies, ["Agent asks: Deploy now?", "Agent is complete"]);
    // Attached again and typing: held back as before.
    ui.update_screen(|state| state.attached = true);
    assert!(matches!(router.fire(done), Fired::HeldBack));
}

/// A question asked while the user is at the terminal, which then detaches: the question is not
/// sat on for the rest of the silence — the terminal leaving makes the user away at once.
#[tokio::test]
async fn a_question_waiting_when_the_terminal_leaves_reaches_the_phone_at_once() {
    let server = Loopback::start(HashMap::new()).await;
    let (router, _rx, ui) = ntfy_router(&server.url);
    ui.update_screen(|state| state.last_input = Some(Instant::now()));
    let asked = router
        .route(&question(11, "main", "Ship it?", None))
        .unwrap();
    let Fired::Waiting(task) = router.fire(asked) else {
        panic!("a question waits for the user to be away");
    };
    // Still at the terminal: it waits.
    crate::test_wait::stays_quiet(
        "sent while the user was at the terminal",
        Duration::from_millis(200),
        || task.is_finished(),
    )
    .await;
    assert!(server.seen().is_empty());
    ui.update_screen(|state| state.attached = false);
    let sent = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("sent when the terminal left, not after the hour of silence")
        .unwrap();
    assert!(sent);
    crate::test_wait::eventually("an alert at ntfy", crate::test_wait::WAIT, || {
        !server.seen().is_empty()
    })
    .await;
    assert_eq!(server.seen()[0].body["message"], "Agent asks: Ship it?");
}

/// The notify files are followed: an ntfy topic written into the project's `ntfy.json` while
/// the workbench runs is used by the next notification, and taking it out again makes ntfy say
/// what is missing — no restart.
#[tokio::test]
async fn an_edit_of_the_notify_files_applies_to_the_next_notification() {
    use super::config::{CONFIG_FILE, NTFY_FILE, NotifyConfig};
    use crate::config::live::LiveConfig;
    use crate::config::module_file::ModuleConfig;
    use crate::config::module_file::write_module_file;
    let (home, workspace) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (live, errors) = LiveConfig::module(
        Some(home.path()),
        workspace.path(),
        &[CONFIG_FILE, NTFY_FILE],
        NotifyConfig::load,
    );
    assert!(errors.is_empty(), "{errors:?}");
    let (ui, _rx) = Ui::channel(Arc::new(Keymap::defaults()));
    let dispatcher = Dispatcher::new(live, ui, false, TerminalMethod::Osc9);
    let alert = notice(Priority::Normal);
    let to_ntfy = || dispatcher.send_one(Platform::Ntfy, &alert, Focus::Ignore);
    assert_eq!(
        to_ntfy().await,
        Err("ntfy serverUrl and topic are required".to_owned())
    );

    let server = Loopback::start(HashMap::new()).await;
    let url = &server.url;
    let ntfy = format!(r#"{{"enabled": true, "serverUrl": "{url}/", "topic": "live"}}"#);
    write_module_file(workspace.path(), NTFY_FILE, &ntfy);
    assert_eq!(to_ntfy().await, Ok(Sent::Delivered));
    assert!(dispatcher.config().enabled(Platform::Ntfy));
    let topics: Vec<Value> = server
        .seen()
        .iter()
        .map(|seen| seen.body["topic"].clone())
        .collect();
    assert_eq!(
        topics,
        [json!("live")],
        "one notification, to the topic in the file"
    );

    write_module_file(workspace.path(), NTFY_FILE, r#"{"enabled": false}"#);
    assert!(!dispatcher.config().enabled(Platform::Ntfy));
    assert_eq!(
        to_ntfy().await,
        Err("ntfy serverUrl and topic are required".to_owned())
    );
}

// --- `/unipi:notify-set-*`: one platform's set-up --------------------------------------------

mod setup {
    use std::os::unix::fs::PermissionsExt as _;
    use std::path::Path;

    use super::*;
    use crate::capability::settings::SettingsPage;
    use crate::config::module_file::ModuleConfig;
    use crate::notify::config::{CONFIG_FILE, NTFY_FILE, NtfySource};
    use crate::notify::setup::{GOTIFY_PAGE, NTFY_PAGE, SetUp, TELEGRAM_PAGE};

    /// A home and a project apart, and a dispatcher with nothing configured.
    fn place() -> (
        tempfile::TempDir,
        std::path::PathBuf,
        std::path::PathBuf,
        Dispatcher,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (home, work) = (dir.path().join("home"), dir.path().join("work"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        let (dispatcher, _rx, _ui) = dispatcher(
            NotifyConfig {
                send_timeout: Duration::from_secs(2),
                ..NotifyConfig::default()
            },
            false,
        );
        (dir, home, work, dispatcher)
    }

    /// Saves `values` as the overlay does: on a blocking thread of the runtime.
    async fn save(
        platform: SetUp,
        dispatcher: &Dispatcher,
        home: &Path,
        work: &Path,
        values: Value,
    ) -> anyhow::Result<String> {
        let save = platform.save(dispatcher.clone(), work.to_path_buf());
        let home = home.to_path_buf();
        tokio::task::spawn_blocking(move || save(&home, values))
            .await
            .unwrap()
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    fn read(path: &Path) -> Value {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn ntfy_is_tested_then_saved_private_at_the_scope_chosen_and_reads_back() {
        let server = Loopback::start(HashMap::new()).await;
        let (_dir, home, work, dispatcher) = place();
        let values = json!({"scope": "project",
            "ntfy": {"serverUrl": format!("{}/", server.url), "topic": "pi-setup",
                     "token": "tk_setup", "priority": 4}});
        let said = save(SetUp::Ntfy, &dispatcher, &home, &work, values)
            .await
            .unwrap();
        let seen = server.seen();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(
            (seen[0].method.as_str(), seen[0].path.as_str()),
            ("POST", "/")
        );
        assert_eq!(seen[0].body["topic"], "pi-setup");
        assert_eq!(seen[0].body["title"], "Pi — Setup Test");
        assert_eq!(seen[0].body["priority"], 4);
        assert_eq!(seen[0].headers["authorization"], "Bearer tk_setup");
        let file = work.join(NTFY_FILE);
        assert!(
            said.contains("pi-setup") && said.contains(&file.display().to_string()),
            "{said}"
        );
        assert_eq!(mode(&file), 0o600);
        assert!(
            !home.join(NTFY_FILE).exists(),
            "saved at the project's scope only"
        );
        let (config, errors) = NotifyConfig::load(Some(&home), &work);
        assert!(errors.is_empty(), "{errors:?}");
        assert!(config.ntfy.enabled);
        assert_eq!(config.ntfy.server_url, server.url);
        assert_eq!(config.ntfy.token.as_deref(), Some("tk_setup"));
        assert_eq!(config.ntfy_source, NtfySource::Project(file));
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_set_up_whose_test_fails_or_lacks_what_it_needs_saves_nothing() {
        let server = Loopback::start(HashMap::from([(
            "/",
            Answer::Status(403, r#"{"error":"forbidden"}"#),
        )]))
        .await;
        let (_dir, home, work, dispatcher) = place();
        let values = json!({"scope": "global",
            "ntfy": {"serverUrl": server.url, "topic": "pi-setup", "priority": 3}});
        let failed = save(SetUp::Ntfy, &dispatcher, &home, &work, values)
            .await
            .unwrap_err()
            .to_string();
        assert!(failed.contains("nothing was saved"), "{failed}");
        assert!(failed.contains("ntfy API error 403"), "{failed}");
        assert!(!home.join(NTFY_FILE).exists());
        let missing = save(
            SetUp::Gotify,
            &dispatcher,
            &home,
            &work,
            json!({"gotify": {}}),
        )
        .await
        .unwrap_err()
        .to_string();
        assert_eq!(missing, "Gotify needs a server and an app token");
        assert!(!home.join(CONFIG_FILE).exists());
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn gotify_keeps_the_files_other_keys_and_makes_it_private() {
        let server = Loopback::start(HashMap::new()).await;
        let (_dir, home, work, dispatcher) = place();
        let config = home.join(CONFIG_FILE);
        std::fs::create_dir_all(config.parent().unwrap()).unwrap();
        std::fs::write(
            &config,
            json!({"recap": {"enabled": true}, "gotify": {"enabled": false, "extra": 1}})
                .to_string(),
        )
        .unwrap();
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
        let values = json!({"gotify": {"serverUrl": format!("{}/gotify/", server.url),
                                       "appToken": "A.tok", "priority": 6}});
        save(SetUp::Gotify, &dispatcher, &home, &work, values)
            .await
            .unwrap();
        let seen = server.seen();
        assert_eq!(seen[0].path, "/gotify/message");
        assert_eq!(seen[0].headers["x-gotify-key"], "A.tok");
        assert_eq!(seen[0].body["priority"], 6);
        assert_eq!(mode(&config), 0o600);
        assert_eq!(
            read(&config),
            json!({"recap": {"enabled": true},
                   "gotify": {"enabled": true, "extra": 1, "appToken": "A.tok", "priority": 6,
                              "serverUrl": format!("{}/gotify", server.url)}})
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn telegram_finds_the_chat_from_the_bots_last_message_tests_and_saves() {
        let updates = r#"{"ok": true, "result": [
            {"update_id": 1, "message": {"chat": {"id": 1111}, "text": "old"}},
            {"update_id": 2, "callback_query": {"message": {"chat": {"id": -100777}}}}]}"#;
        let server = Loopback::start(HashMap::from([(
            "/tg/bot123:ABC/getUpdates",
            Answer::Status(200, updates),
        )]))
        .await;
        let (_dir, home, work, dispatcher) = place();
        let api = format!("{}/tg/", server.url);
        // A paste's stray characters are not part of a token.
        let values =
            json!({"telegram": {"botToken": "123:ABC\u{7}", "chatId": null, "apiUrl": api}});
        let said = save(SetUp::Telegram, &dispatcher, &home, &work, values)
            .await
            .unwrap();
        assert!(
            said.contains("chat -100777 (found from the bot's messages)"),
            "{said}"
        );
        let seen = server.seen();
        let paths: Vec<(&str, &str)> = seen
            .iter()
            .map(|seen| (seen.method.as_str(), seen.path.as_str()))
            .collect();
        assert_eq!(
            paths,
            [
                ("GET", "/tg/bot123:ABC/getUpdates"),
                ("POST", "/tg/bot123:ABC/sendMessage")
            ]
        );
        assert_eq!(seen[1].body["chat_id"], -100_777);
        let config = home.join(CONFIG_FILE);
        assert_eq!(mode(&config), 0o600);
        let (loaded, errors) = NotifyConfig::load(Some(&home), &work);
        assert!(errors.is_empty(), "{errors:?}");
        assert!(loaded.telegram.enabled);
        assert_eq!(loaded.telegram.bot_token.as_deref(), Some("123:ABC"));
        assert_eq!(loaded.telegram.chat_id.as_deref(), Some("-100777"));
        assert_eq!(loaded.telegram.api_url, format!("{}/tg", server.url));
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_wrong_bot_token_is_said_at_once() {
        let server = Loopback::start(HashMap::from([(
            "/bot9:NO/getUpdates",
            Answer::Status(401, r#"{"ok":false,"description":"Unauthorized"}"#),
        )]))
        .await;
        let (_dir, home, work, dispatcher) = place();
        let values = json!({"telegram": {"botToken": "9:NO", "apiUrl": server.url}});
        let started = Instant::now();
        let failed = save(SetUp::Telegram, &dispatcher, &home, &work, values)
            .await
            .unwrap_err()
            .to_string();
        assert!(failed.contains("Telegram API error 401"), "{failed}");
        assert!(
            !failed.contains("9:NO"),
            "the token stays out of messages: {failed}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(!home.join(CONFIG_FILE).exists());
    }

    /// Each set-up overlay as it opens at 80x24, with what is configured already (tokens
    /// masked).
    #[test]
    fn the_set_up_overlays() {
        use ratatui::buffer::Buffer;
        use ratatui::layout::Rect;
        use unipi_widgets::Theme;
        use unipi_widgets::settings::{SettingsModel, render};

        let mut config = NotifyConfig::default();
        config.ntfy.topic = Some("pi-alerts".into());
        config.gotify.app_token = Some("gotify-secret".into());
        config.telegram.bot_token = Some("123:SECRET".into());
        let pages: [(&str, &SettingsPage<NotifyConfig>); 3] = [
            ("notify_set_ntfy_80x24", &NTFY_PAGE),
            ("notify_set_gotify_80x24", &GOTIFY_PAGE),
            ("notify_set_tg_80x24", &TELEGRAM_PAGE),
        ];
        for (name, page) in pages {
            let model = SettingsModel {
                title: page.title.to_owned(),
                fields: page.fields(&config),
                keys: vec![
                    ("s".to_owned(), "save".to_owned()),
                    ("Esc".to_owned(), "close".to_owned()),
                ],
                ..SettingsModel::default()
            };
            let mut buf = Buffer::empty(Rect::new(0, 0, 80, 24));
            render(&model, &Theme::plain(), buf.area, &mut buf);
            let screen: Vec<String> = (0..buf.area.height)
                .map(|y| {
                    let row: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
                    row.trim_end().to_owned()
                })
                .collect();
            let screen = screen.join("\n");
            assert!(
                !screen.contains("SECRET") && !screen.contains("secret"),
                "{screen}"
            );
            crate::assert_ui_snapshot!(name, screen);
        }
    }
}

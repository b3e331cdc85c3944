//! The bridge host's socket protocol, driven by a fake bridge client (a tokio `UnixStream`
//! writing the documented JSON lines) against a real `BridgeHost` with a test module: the good
//! paths (hello/welcome, events, tool calls with errors, panics, timeouts, cancellation and
//! streaming, host calls, commands and completions, reconnects) and every kind of bad input,
//! each time checking the refusal AND that a good client still works afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;
use unipi_tui::bridge::{
    AgentId, BridgeError, BridgeEvent, BridgeHost, BusEvent, BusMessage, Command, CommandCall,
    CommandReply, CommandSpec, Completion, DisconnectReason, HookCall, HostCall, HostOptions,
    Module, NotifyLevel, PiEvent, Registry, ToolCall, ToolError, ToolOutput, ToolSpec,
};

use crate::support::wait::try_eventually_async;

/// How long any single expected thing may take before the test fails.
const WAIT: Duration = Duration::from_secs(5);

// --- the test module ------------------------------------------------------------------------

/// A module with one tool per behaviour under test; it records what it saw.
#[derive(Default)]
struct Probe {
    seen: Arc<Seen>,
}

#[derive(Default)]
struct Seen {
    args: Mutex<Vec<Value>>,
    cancellations: AtomicUsize,
    /// The `/unipi:probe` invocations: (agent, name, args).
    commands: Mutex<Vec<(String, String, String)>>,
}

impl Module for Probe {
    fn name(&self) -> &'static str {
        "probe"
    }

    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec::new("t_echo", "Echo", "Echoes `text`").string_param("text", "text", true),
            ToolSpec::new("t_fail", "Fail", "Always fails"),
            ToolSpec::new("t_panic", "Panic", "Always panics"),
            ToolSpec::new("t_slow", "Slow", "Outlives its timeout")
                .timeout(Duration::from_millis(300)),
            ToolSpec::new("t_wait_cancel", "Wait", "Runs until cancelled"),
            ToolSpec::new("t_stream", "Stream", "Three updates, then a result"),
        ]
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let seen = self.seen.clone();
        Box::pin(async move {
            seen.args.lock().unwrap().push(call.args.clone());
            match call.tool.as_str() {
                "t_echo" => {
                    let text = call.args["text"].as_str().unwrap_or_default();
                    Ok(ToolOutput::text(format!("echo:{text}")).with_details(
                        json!({"agent": call.agent.as_str(), "call_id": call.call_id}),
                    ))
                }
                "t_fail" => Err(ToolError::new("the probe failed on purpose")),
                "t_panic" => panic!("probe panic"),
                "t_slow" => {
                    call.cancel.cancelled().await;
                    seen.cancellations.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    Ok(ToolOutput::text("too late"))
                }
                "t_wait_cancel" => {
                    call.cancel.cancelled().await;
                    seen.cancellations.fetch_add(1, Ordering::SeqCst);
                    Err(ToolError::new("saw the cancellation"))
                }
                "t_stream" => {
                    for n in 1..=3 {
                        call.updates.send(ToolOutput::text(format!("step {n}")));
                    }
                    Ok(ToolOutput::text("streamed"))
                }
                other => Err(ToolError::new(format!("no {other}"))),
            }
        })
    }

    fn hook(&self, hook: HookCall) -> Option<BoxFuture<'static, Value>> {
        match hook.name.as_str() {
            "session_before_compact" => Some(Box::pin(async move {
                json!({"compaction": {"summary": format!("for {}", hook.agent.as_str()),
                    "tokensBefore": hook.data["tokens_before"].clone()}})
            })),
            "t_hook_panic" => Some(Box::pin(async move { panic!("hook panic") })),
            _ => None,
        }
    }
}

impl Probe {
    /// `/unipi:probe`: `now` answers with a warning notice, `panic` panics, `slow` never
    /// answers; it completes `alpha` and `beta` (fixed) and `gamma` (its completer).
    fn command(&self) -> Command {
        let spec = CommandSpec::new("unipi:probe", "Probe command")
            .completion(Completion::new("alpha"))
            .completion(Completion::new("beta").describe("the second"));
        Command::new(spec, self.seen.clone(), |seen, call: CommandCall| {
            seen.commands.lock().unwrap().push((
                call.agent.to_string(),
                call.name.clone(),
                call.args.clone(),
            ));
            async move {
                match call.args.as_str() {
                    "panic" => panic!("probe command panic"),
                    "slow" => {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        CommandReply::Done
                    }
                    _ => CommandReply::Notify {
                        message: "probed".into(),
                        level: NotifyLevel::Warning,
                    },
                }
            }
        })
        .completer(|prefix| {
            if "gamma".starts_with(prefix) {
                vec![Completion::new("gamma")]
            } else {
                vec![]
            }
        })
    }
}

/// A module added later, to test `declare`.
struct Late;

impl Module for Late {
    fn name(&self) -> &'static str {
        "late"
    }
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec::new("t_late", "Late", "Registered after connect")]
    }
}

// --- harness --------------------------------------------------------------------------------

struct Harness {
    host: BridgeHost,
    events: mpsc::Receiver<BridgeEvent>,
    registry: Arc<Registry>,
    seen: Arc<Seen>,
    /// Env for the main agent's Pi.
    token: String,
    _base: tempfile::TempDir,
}

async fn harness() -> anyhow::Result<Harness> {
    harness_with(HostOptions::default()).await
}

async fn harness_with(mut options: HostOptions) -> anyhow::Result<Harness> {
    let base = tempfile::tempdir()?;
    options.runtime_base = Some(base.path().to_path_buf());
    let registry = Arc::new(Registry::new());
    let probe = Probe::default();
    let seen = probe.seen.clone();
    let command = probe.command();
    registry.register_with_commands(Arc::new(probe), vec![command])?;
    let (tx, events) = mpsc::channel(256);
    let host = BridgeHost::start_with(registry.clone(), tx, options).await?;
    let token = token_of(&host.register_agent(AgentId::main())?)?;
    Ok(Harness {
        host,
        events,
        registry,
        seen,
        token,
        _base: base,
    })
}

fn token_of(env: &[(String, String)]) -> anyhow::Result<String> {
    env.iter()
        .find(|(key, _)| key == "UNIPI_TUI_TOKEN")
        .map(|(_, value)| value.clone())
        .context("no UNIPI_TUI_TOKEN in the agent's environment")
}

impl Harness {
    fn socket(&self) -> PathBuf {
        self.host.socket_path().to_path_buf()
    }

    /// The next event that is not a fault.
    async fn event(&mut self) -> anyhow::Result<BridgeEvent> {
        loop {
            match tokio::time::timeout(WAIT, self.events.recv()).await {
                Ok(Some(BridgeEvent::Fault { .. })) => continue,
                Ok(Some(event)) => return Ok(event),
                Ok(None) => bail!("the host's event channel closed"),
                Err(_) => bail!("no bridge event within {WAIT:?}"),
            }
        }
    }

    /// Waits for a fault whose message contains `fragment` (skipping other events).
    async fn fault(&mut self, fragment: &str) -> anyhow::Result<String> {
        let fault = async {
            loop {
                match self.events.recv().await {
                    Some(BridgeEvent::Fault { message, .. }) if message.contains(fragment) => {
                        return Some(message);
                    }
                    Some(_) => continue,
                    None => return None,
                }
            }
        };
        match tokio::time::timeout(WAIT, fault).await {
            Ok(Some(message)) => Ok(message),
            _ => bail!("no fault mentioning {fragment:?} within {WAIT:?}"),
        }
    }

    /// Connects, says hello and reads the welcome.
    async fn connect(&mut self) -> anyhow::Result<(FakeClient, Value)> {
        let mut client = FakeClient::connect(&self.socket()).await?;
        client.send(hello(&self.token)).await?;
        let welcome = client.recv().await?;
        assert_eq!(welcome["type"], "welcome", "{welcome}");
        match self.event().await? {
            BridgeEvent::Connected { agent, .. } => assert_eq!(agent, AgentId::main()),
            other => bail!("expected Connected, got {other:?}"),
        }
        Ok((client, welcome))
    }
}

fn hello(token: &str) -> Value {
    json!({
        "type": "hello", "token": token, "protocol": 1, "pi_version": "test-1.0",
        "agent": "main", "pid": std::process::id(),
        "capabilities": {"events": ["agent_settled"], "methods": ["registerTool"],
                         "ui": ["setFooter"], "tool_exposure": true, "mode": "print"},
    })
}

/// The client side of the protocol, by hand.
struct FakeClient {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    /// The modules' events for Pi's `pi.events` (`unipi_event`), in order: set aside by
    /// [`FakeClient::recv`], as the extension handles them apart from the conversation.
    unipi_events: Vec<Value>,
}

impl FakeClient {
    async fn connect(path: &Path) -> anyhow::Result<Self> {
        let stream = UnixStream::connect(path)
            .await
            .with_context(|| format!("cannot connect to {}", path.display()))?;
        let (read, write) = stream.into_split();
        Ok(Self {
            reader: BufReader::new(read),
            writer: write,
            unipi_events: Vec::new(),
        })
    }

    async fn send_raw(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        self.writer.write_all(bytes).await?;
        Ok(())
    }

    async fn send(&mut self, message: Value) -> anyhow::Result<()> {
        let mut line = message.to_string();
        line.push('\n');
        self.send_raw(line.as_bytes()).await
    }

    /// The next line as JSON but a `unipi_event` (kept in [`FakeClient::unipi_events`]); fails
    /// on EOF or after [`WAIT`].
    async fn recv(&mut self) -> anyhow::Result<Value> {
        loop {
            let line = self.recv_any().await?;
            if line["type"] != "unipi_event" {
                return Ok(line);
            }
            self.unipi_events.push(line);
        }
    }

    /// The next line as JSON, whatever it is; fails on EOF or after [`WAIT`].
    async fn recv_any(&mut self) -> anyhow::Result<Value> {
        let mut line = String::new();
        let read = tokio::time::timeout(WAIT, self.reader.read_line(&mut line))
            .await
            .context("no line from the host in time")??;
        if read == 0 {
            bail!("the host closed the connection");
        }
        serde_json::from_str(&line).with_context(|| format!("the host sent non-JSON: {line:?}"))
    }

    /// Reads until the host closes the connection; fails if it stays open.
    async fn expect_closed(&mut self) -> anyhow::Result<()> {
        let mut line = String::new();
        loop {
            line.clear();
            let read = tokio::time::timeout(WAIT, self.reader.read_line(&mut line))
                .await
                .context("the host kept the connection open")?;
            match read {
                Ok(0) | Err(_) => return Ok(()),
                Ok(_) => continue,
            }
        }
    }

    /// Calls a tool and returns every line up to and including its `tool_result`.
    async fn call_tool(&mut self, id: u64, tool: &str, args: Value) -> anyhow::Result<Vec<Value>> {
        self.send(json!({"type": "tool_call", "id": id, "tool": tool, "call_id": format!("call-{id}"), "args": args}))
            .await?;
        let mut lines = Vec::new();
        loop {
            let line = self.recv().await?;
            let done = line["type"] == "tool_result" && line["id"] == id;
            lines.push(line);
            if done {
                return Ok(lines);
            }
        }
    }

    async fn echo_works(&mut self, id: u64) -> anyhow::Result<()> {
        let lines = self
            .call_tool(id, "t_echo", json!({"text": "still here"}))
            .await?;
        let result = lines.last().context("no result")?;
        assert_eq!(result["is_error"], false, "{result}");
        assert_eq!(result["content"][0]["text"], "echo:still here");
        Ok(())
    }
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

// --- handshake and events -------------------------------------------------------------------

#[tokio::test]
async fn hello_gets_welcome_with_declarations_and_a_connected_event() -> anyhow::Result<()> {
    let mut h = harness().await?;
    let mut client = FakeClient::connect(&h.socket()).await?;
    client.send(hello(&h.token)).await?;
    let welcome = client.recv().await?;
    assert_eq!(welcome["type"], "welcome");
    assert_eq!(welcome["protocol"], 1);
    assert_eq!(welcome["agent"], "main");
    assert_eq!(welcome["options"]["hide_footer"], true);
    let tools = &welcome["declarations"]["tools"];
    let names: Vec<&str> = tools
        .as_array()
        .context("no tools")?
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "t_echo",
            "t_fail",
            "t_panic",
            "t_slow",
            "t_wait_cancel",
            "t_stream"
        ]
    );
    assert_eq!(tools[0]["parameters"]["required"], json!(["text"]));
    assert_eq!(tools[0]["timeout_ms"], 120_000, "the default tool timeout");
    assert_eq!(tools[3]["timeout_ms"], 300, "t_slow's own timeout");
    assert_eq!(
        welcome["declarations"]["commands"],
        json!([{"name": "unipi:probe", "description": "Probe command"}])
    );

    match h.event().await? {
        BridgeEvent::Connected {
            agent,
            pi_version,
            protocol,
            capabilities,
        } => {
            assert_eq!(agent, AgentId::main());
            assert_eq!(pi_version, "test-1.0");
            assert_eq!(protocol, 1);
            assert!(capabilities.has_event("agent_settled"));
            assert!(capabilities.has_ui("setFooter") && capabilities.tool_exposure);
            assert_eq!(capabilities.mode.as_deref(), Some("print"));
        }
        other => bail!("expected Connected, got {other:?}"),
    }
    let info = h
        .host
        .agent_info(&AgentId::main())
        .context("no agent info")?;
    assert!(info.connected);
    assert_eq!(info.pi_version, "test-1.0");
    Ok(())
}

/// A module event with a form for Pi's `pi.events` (its Unipi payload differs from ours).
#[derive(serde::Serialize, serde::Deserialize)]
struct Shout {
    loud: bool,
}

impl BusMessage for Shout {
    const NAME: &'static str = "unipi:test:shout";

    fn pi_event(&self) -> Option<Value> {
        Some(json!({"volume": if self.loud { 11 } else { 1 }}))
    }
}

/// A module event that stays inside the workbench.
#[derive(serde::Serialize, serde::Deserialize)]
struct Whisper;

impl BusMessage for Whisper {
    const NAME: &'static str = "unipi:test:whisper";

    fn pi_event(&self) -> Option<Value> {
        None
    }
}

/// Pi is told each ready module at connection (Unipi's packages announced themselves at every
/// session start), and every module event with a form for `pi.events` under its name and with
/// that form; an event without one never reaches Pi.
#[tokio::test]
async fn a_pi_hears_the_modules_ready_and_their_events_in_unipi_form() -> anyhow::Result<()> {
    let mut h = harness().await?;
    let (mut client, _) = h.connect().await?;
    // The announcements follow the welcome at once; the next line proves they all came.
    client
        .send(json!({"type": "complete", "id": 1, "command": "unipi:probe", "prefix": ""}))
        .await?;
    assert_eq!(client.recv().await?["type"], "complete_result");
    assert_eq!(
        client.unipi_events,
        [json!({"type": "unipi_event", "name": "unipi:module:ready",
                "data": {"name": "probe", "module": "probe", "version": env!("CARGO_PKG_VERSION"),
                         "commands": ["unipi:probe"],
                         "tools": ["t_echo", "t_fail", "t_panic", "t_slow", "t_wait_cancel", "t_stream"]}})]
    );
    let bus = h.registry.bus();
    bus.publish("probe", &Whisper);
    bus.publish("probe", &Shout { loud: true });
    assert_eq!(
        client.recv_any().await?,
        json!({"type": "unipi_event", "name": "unipi:test:shout", "data": {"volume": 11}})
    );
    client.echo_works(2).await?;
    Ok(())
}

#[tokio::test]
async fn events_reach_the_channel_and_the_bus_for_the_right_agent() -> anyhow::Result<()> {
    let mut h = harness().await?;
    let mut bus = h.registry.bus().subscribe();
    let (mut main, _) = h.connect().await?;
    let helper_token = token_of(&h.host.register_agent(AgentId::new("helper-1"))?)?;
    let mut helper = FakeClient::connect(&h.socket()).await?;
    helper.send(hello(&helper_token)).await?;
    assert_eq!(helper.recv().await?["type"], "welcome");
    assert!(
        matches!(h.event().await?, BridgeEvent::Connected { agent, .. } if agent.as_str() == "helper-1")
    );

    main.send(json!({"type": "event", "name": "turn_end", "data": {
        "turn_index": 1,
        "usage": {"input": 11, "output": 7, "cache_read": 0, "cache_write": 0, "total_tokens": 18, "cost": 0.25},
        "context_usage": {"tokens": 18, "context_window": 128000, "percent": 0.0140625}}}))
        .await?;
    helper
        .send(json!({"type": "event", "name": "message_end", "data": {
            "provider": "unipi-scripted", "model": "scripted-test", "stop_reason": "stop",
            "usage": {"input": 3, "output": 2, "cost": 0.5}}}))
        .await?;
    main.send(json!({"type": "event", "name": "turn_start", "data": {"turn_index": 2}}))
        .await?;
    // A known event with a payload that does not decode is kept, untyped.
    main.send(json!({"type": "event", "name": "queue_update", "data": {"pending": "yes"}}))
        .await?;

    let mut got = Vec::new();
    for _ in 0..4 {
        match h.event().await? {
            BridgeEvent::Pi { agent, event } => got.push((agent.to_string(), event)),
            other => bail!("expected a Pi event, got {other:?}"),
        }
    }
    got.sort_by_key(|(agent, event)| (agent.clone(), event.name().to_string()));
    let (agent, event) = &got[0];
    assert_eq!(agent, "helper-1");
    let PiEvent::MessageEnd(message) = event else {
        bail!("expected MessageEnd, got {event:?}");
    };
    assert_eq!(message.model.as_deref(), Some("scripted-test"));
    assert_eq!((message.usage.input, message.usage.output), (3, 2));
    assert!((message.usage.cost - 0.5).abs() < f64::EPSILON);

    assert!(got[1..].iter().all(|(agent, _)| agent == "main"), "{got:?}");
    let main_events: Vec<&PiEvent> = got[1..].iter().map(|(_, event)| event).collect();
    let turn_end = main_events
        .iter()
        .find_map(|event| match event {
            PiEvent::TurnEnd(turn) => Some(turn),
            _ => None,
        })
        .context("no TurnEnd")?;
    assert_eq!(turn_end.turn_index, 1);
    assert_eq!(turn_end.usage.map(|u| u.total_tokens), Some(18));
    let context = turn_end.context_usage.context("no context usage")?;
    assert_eq!(
        (context.tokens, context.context_window),
        (Some(18), 128_000)
    );
    assert!(main_events.iter().any(
        |event| matches!(event, PiEvent::Other { name, data } if name == "turn_start" && data["turn_index"] == 2)
    ));
    assert!(
        main_events
            .iter()
            .any(|event| matches!(event, PiEvent::Other { name, .. } if name == "queue_update"))
    );

    // The bus saw the connections and the same events.
    let mut bus_pi_events = 0;
    let mut bus_connects = 0;
    while let Ok(Ok(event)) = tokio::time::timeout(Duration::from_millis(200), bus.recv()).await {
        match event {
            BusEvent::Pi { .. } => bus_pi_events += 1,
            BusEvent::AgentConnected { pi_version, .. } => {
                assert_eq!(pi_version, "test-1.0");
                bus_connects += 1;
            }
            _ => {}
        }
    }
    assert_eq!((bus_connects, bus_pi_events), (2, 4));
    Ok(())
}

// --- tool calls -----------------------------------------------------------------------------

#[tokio::test]
async fn a_tool_call_round_trips_through_the_module() -> anyhow::Result<()> {
    let mut h = harness().await?;
    let (mut client, _) = h.connect().await?;
    let lines = client.call_tool(7, "t_echo", json!({"text": "hi"})).await?;
    assert_eq!(lines.len(), 1, "{lines:?}");
    let result = &lines[0];
    assert_eq!(result["is_error"], false);
    assert_eq!(text_of(result), "echo:hi");
    assert_eq!(
        result["details"],
        json!({"agent": "main", "call_id": "call-7"})
    );
    assert_eq!(*h.seen.args.lock().unwrap(), [json!({"text": "hi"})]);
    Ok(())
}

#[tokio::test]
async fn handler_errors_and_panics_become_error_results_and_the_session_goes_on()
-> anyhow::Result<()> {
    let mut h = harness().await?;
    let (mut client, _) = h.connect().await?;

    let failed = client.call_tool(1, "t_fail", json!({})).await?;
    assert_eq!(failed[0]["is_error"], true);
    assert_eq!(text_of(&failed[0]), "the probe failed on purpose");

    let panicked = client.call_tool(2, "t_panic", json!({})).await?;
    assert_eq!(panicked[0]["is_error"], true);
    let text = text_of(&panicked[0]);
    assert!(
        text.contains("panicked") && text.contains("probe panic") && text.contains("`probe`"),
        "{text}"
    );
    h.fault("panicked").await?;

    let unknown = client.call_tool(3, "t_nothing", json!({})).await?;
    assert_eq!(unknown[0]["is_error"], true);
    assert!(text_of(&unknown[0]).contains("no tool named `t_nothing`"));

    client.echo_works(4).await
}

#[tokio::test]
async fn a_call_past_its_timeout_is_failed_and_the_module_is_cancelled() -> anyhow::Result<()> {
    let mut h = harness().await?;
    let (mut client, _) = h.connect().await?;
    let started = Instant::now();
    let lines = client.call_tool(1, "t_slow", json!({})).await?;
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(3),
        "answered after {elapsed:?}"
    );
    assert_eq!(lines[0]["is_error"], true);
    assert!(
        text_of(&lines[0]).contains("did not finish within 0.3 s"),
        "{}",
        lines[0]
    );
    // The module saw its cancel token fire before it was dropped.
    try_eventually_async(
        "the module to see its cancel token fire",
        Duration::from_secs(5),
        async || h.seen.cancellations.load(Ordering::SeqCst) > 0,
    )
    .await?;
    assert_eq!(h.seen.cancellations.load(Ordering::SeqCst), 1);
    client.echo_works(2).await
}

#[tokio::test]
async fn tool_cancel_reaches_the_module() -> anyhow::Result<()> {
    let mut h = harness().await?;
    let (mut client, _) = h.connect().await?;
    client
        .send(json!({"type": "tool_call", "id": 5, "tool": "t_wait_cancel", "call_id": "c", "args": {}}))
        .await?;
    // Nothing comes back while the module waits.
    assert!(
        tokio::time::timeout(Duration::from_millis(200), client.recv())
            .await
            .is_err()
    );
    client.send(json!({"type": "tool_cancel", "id": 5})).await?;
    let result = client.recv().await?;
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["id"], 5);
    assert_eq!(result["is_error"], true);
    assert_eq!(text_of(&result), "saw the cancellation");
    assert_eq!(h.seen.cancellations.load(Ordering::SeqCst), 1);
    // A cancel for a finished call is harmless.
    client.send(json!({"type": "tool_cancel", "id": 5})).await?;
    client.echo_works(6).await
}

#[tokio::test]
async fn hooks_are_answered_by_the_module_that_takes_them_and_null_otherwise() -> anyhow::Result<()>
{
    let mut h = harness().await?;
    let (mut client, _) = h.connect().await?;
    client
        .send(json!({"type": "hook", "id": 3, "name": "session_before_compact", "data": {"tokens_before": 1234}}))
        .await?;
    let answer = client.recv().await?;
    assert_eq!(
        answer,
        json!({"type": "hook_result", "id": 3, "result": {"compaction": {"summary": "for main", "tokensBefore": 1234}}})
    );
    // No module takes it: Pi decides.
    client
        .send(json!({"type": "hook", "id": 4, "name": "session_before_tree", "data": {}}))
        .await?;
    assert_eq!(
        client.recv().await?,
        json!({"type": "hook_result", "id": 4, "result": null})
    );
    // A module that panics answers null, and says so.
    client
        .send(json!({"type": "hook", "id": 5, "name": "t_hook_panic", "data": {}}))
        .await?;
    assert_eq!(
        client.recv().await?,
        json!({"type": "hook_result", "id": 5, "result": null})
    );
    h.fault("failed answering Pi's `t_hook_panic` hook").await?;
    client.echo_works(6).await
}

#[tokio::test]
async fn streaming_updates_arrive_before_the_result() -> anyhow::Result<()> {
    let mut h = harness().await?;
    let (mut client, _) = h.connect().await?;
    let lines = client.call_tool(9, "t_stream", json!({})).await?;
    let kinds: Vec<(String, String)> = lines
        .iter()
        .map(|line| {
            (
                line["type"].as_str().unwrap_or_default().to_string(),
                text_of(line),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("tool_update".into(), "step 1".into()),
            ("tool_update".into(), "step 2".into()),
            ("tool_update".into(), "step 3".into()),
            ("tool_result".into(), "streamed".into()),
        ]
    );
    assert!(lines.iter().all(|line| line["id"] == 9));
    Ok(())
}

// --- host calls, commands, completions, declarations ----------------------------------------

#[tokio::test]
async fn host_calls_round_trip_time_out_and_report_remote_errors() -> anyhow::Result<()> {
    let mut h = harness().await?;
    let main = AgentId::main();
    assert_eq!(
        h.host.call(&main, HostCall::GetContextUsage).await,
        Err(BridgeError::NotConnected {
            agent: main.clone()
        })
    );
    let (mut client, _) = h.connect().await?;

    // Round trip.
    let host = h.host.clone();
    let pending = tokio::spawn({
        let main = main.clone();
        async move {
            host.call(
                &main,
                HostCall::SetModel {
                    provider: "unipi-scripted".into(),
                    id: "second".into(),
                },
            )
            .await
        }
    });
    let call = client.recv().await?;
    assert_eq!(call["type"], "call");
    assert_eq!(call["method"], "set_model");
    assert_eq!(
        call["params"],
        json!({"provider": "unipi-scripted", "id": "second"})
    );
    client
        .send(json!({"type": "call_result", "id": call["id"], "ok": true, "value": true}))
        .await?;
    assert_eq!(pending.await?, Ok(json!(true)));

    // A remote error.
    let host = h.host.clone();
    let pending = tokio::spawn({
        let main = main.clone();
        async move { host.call(&main, HostCall::SetFooter { hidden: true }).await }
    });
    let call = client.recv().await?;
    assert_eq!(call["params"], json!({"hidden": true}));
    client
        .send(json!({"type": "call_result", "id": call["id"], "ok": false,
                     "error": {"code": "unsupported", "message": "this Pi cannot replace its footer"}}))
        .await?;
    assert_eq!(
        pending.await?,
        Err(BridgeError::Remote {
            method: "set_footer",
            code: "unsupported".into(),
            message: "this Pi cannot replace its footer".into(),
        })
    );

    // A widget line above Pi's editor, then its removal (`lines: null`).
    for (lines, wire) in [
        (
            Some(vec!["⠋ waiting on 1 bg task".to_string()]),
            json!(["⠋ waiting on 1 bg task"]),
        ),
        (None, Value::Null),
    ] {
        let host = h.host.clone();
        let pending = tokio::spawn({
            let main = main.clone();
            async move {
                let call = HostCall::SetWidget {
                    key: "unipi-pending".into(),
                    lines,
                };
                host.call(&main, call).await
            }
        });
        let call = client.recv().await?;
        assert_eq!(call["method"], "set_widget");
        assert_eq!(
            call["params"],
            json!({"key": "unipi-pending", "lines": wire})
        );
        client
            .send(json!({"type": "call_result", "id": call["id"], "ok": true, "value": true}))
            .await?;
        assert_eq!(pending.await?, Ok(json!(true)));
    }

    // A timeout, then the late answer is refused as unknown.
    let timed_out = h
        .host
        .call_with_timeout(&main, HostCall::ListModels, Duration::from_millis(200))
        .await;
    assert!(
        matches!(
            timed_out,
            Err(BridgeError::Timeout {
                method: "list_models",
                ..
            })
        ),
        "{timed_out:?}"
    );
    let call = client.recv().await?;
    assert_eq!(call["method"], "list_models");
    client
        .send(json!({"type": "call_result", "id": call["id"], "ok": true, "value": []}))
        .await?;
    let refusal = client.recv().await?;
    assert_eq!(refusal["type"], "error");
    assert_eq!(refusal["code"], "unknown_id");

    // A disconnect fails the pending call.
    let host = h.host.clone();
    let pending = tokio::spawn({
        let main = main.clone();
        async move { host.call(&main, HostCall::GetActiveTools).await }
    });
    let _ = client.recv().await?;
    drop(client);
    assert!(matches!(
        pending.await?,
        Err(BridgeError::Disconnected {
            method: "get_active_tools",
            ..
        })
    ));
    Ok(())
}

#[tokio::test]
async fn commands_run_in_their_module_and_completions_come_from_it() -> anyhow::Result<()> {
    let mut h = harness_with(HostOptions {
        command_timeout: Duration::from_millis(500),
        ..HostOptions::default()
    })
    .await?;
    let (mut client, _) = h.connect().await?;

    client
        .send(json!({"type": "command", "id": 1, "name": "unipi:probe", "args": "now"}))
        .await?;
    assert_eq!(
        client.recv().await?,
        json!({"type": "command_result", "id": 1, "ok": true, "message": "probed", "level": "warning"})
    );
    assert_eq!(
        *h.seen.commands.lock().unwrap(),
        [(
            "main".to_owned(),
            "unipi:probe".to_owned(),
            "now".to_owned()
        )]
    );

    // A command that panics: Pi is told it failed, the connection goes on, a fault is raised.
    client
        .send(json!({"type": "command", "id": 2, "name": "unipi:probe", "args": "panic"}))
        .await?;
    let result = client.recv().await?;
    assert_eq!(result["ok"], false);
    assert!(
        result["message"]
            .as_str()
            .unwrap_or_default()
            .contains("failed running /unipi:probe"),
        "{result}"
    );
    h.fault("failed running /unipi:probe").await?;

    // One that never answers is answered for it after the command timeout.
    client
        .send(json!({"type": "command", "id": 4, "name": "unipi:probe", "args": "slow"}))
        .await?;
    let result = client.recv().await?;
    assert_eq!(result["ok"], false);
    assert!(
        result["message"]
            .as_str()
            .unwrap_or_default()
            .contains("did not answer"),
        "{result}"
    );

    // An undeclared command reaches no module.
    client
        .send(json!({"type": "command", "id": 3, "name": "unipi:nope", "args": ""}))
        .await?;
    let result = client.recv().await?;
    assert_eq!(
        (result["id"].clone(), result["ok"].clone()),
        (json!(3), json!(false))
    );

    // Completions: the static ones that match, then the module's.
    let cases = [
        ("", json!(["alpha", "beta", "gamma"])),
        ("b", json!(["beta"])),
        ("g", json!(["gamma"])),
        ("z", json!([])),
    ];
    for (n, (prefix, expected)) in cases.into_iter().enumerate() {
        client
            .send(json!({"type": "complete", "id": 10 + n, "command": "unipi:probe", "prefix": prefix}))
            .await?;
        let result = client.recv().await?;
        assert_eq!(result["type"], "complete_result");
        let values: Vec<Value> = result["items"]
            .as_array()
            .context("no items")?
            .iter()
            .map(|item| item["value"].clone())
            .collect();
        assert_eq!(json!(values), expected, "prefix {prefix:?}");
    }
    Ok(())
}

#[tokio::test]
async fn redeclare_reaches_connected_clients() -> anyhow::Result<()> {
    let mut h = harness().await?;
    let (mut client, _) = h.connect().await?;
    h.registry.register(Arc::new(Late))?;
    h.host.redeclare().await;
    let declare = client.recv().await?;
    assert_eq!(declare["type"], "declare");
    let tools = declare["declarations"]["tools"]
        .as_array()
        .context("no tools")?;
    assert!(
        tools.iter().any(|tool| tool["name"] == "t_late"),
        "{declare}"
    );
    Ok(())
}

// --- bad input ------------------------------------------------------------------------------

#[tokio::test]
async fn bad_input_before_hello_is_refused_and_the_host_goes_on() -> anyhow::Result<()> {
    let mut h = harness().await?;
    let good = h.token.clone();
    let mut oversize = vec![b'x'; 70 * 1024];
    oversize.push(b'\n');
    let with = |fields: Value| {
        let mut message = hello(&good);
        for (key, value) in fields.as_object().cloned().unwrap_or_default() {
            if value.is_null() {
                message.as_object_mut().map(|m| m.remove(&key));
            } else {
                message[key] = value;
            }
        }
        format!("{message}\n").into_bytes()
    };
    // (what, bytes sent, expected error code)
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "malformed JSON",
            b"{\"type\": \"hello\",\n".to_vec(),
            "malformed_json",
        ),
        (
            "invalid UTF-8",
            b"{\"type\":\"hello\",\"token\":\"\xff\xfe\"}\n".to_vec(),
            "invalid_utf8",
        ),
        (
            "unknown type",
            b"{\"type\":\"greetings\"}\n".to_vec(),
            "unknown_type",
        ),
        ("oversize line", oversize, "line_too_long"),
        (
            "message before hello",
            b"{\"type\":\"event\",\"name\":\"agent_start\"}\n".to_vec(),
            "not_authenticated",
        ),
        ("missing token", with(json!({"token": null})), "bad_token"),
        (
            "wrong token",
            with(json!({"token": "0".repeat(64)})),
            "bad_token",
        ),
        (
            "protocol mismatch",
            with(json!({"protocol": 99})),
            "protocol_mismatch",
        ),
        (
            "no protocol",
            with(json!({"protocol": null})),
            "protocol_mismatch",
        ),
        ("not an object", b"[\"hello\"]\n".to_vec(), "bad_message"),
    ];
    for (what, bytes, code) in cases {
        let mut client = FakeClient::connect(&h.socket()).await?;
        client.send_raw(&bytes).await?;
        let refusal = client.recv().await.with_context(|| what.to_string())?;
        assert_eq!(refusal["type"], "error", "{what}: {refusal}");
        assert_eq!(refusal["code"], code, "{what}: {refusal}");
        assert!(
            refusal["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{what}: {refusal}"
        );
        client
            .expect_closed()
            .await
            .with_context(|| what.to_string())?;
        if what == "protocol mismatch" {
            let message = refusal["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("speaks protocol 99") && message.contains("unipi-tui speaks 1"),
                "{message}"
            );
        }
    }
    h.fault("refused").await?;
    // A refused hello does not use up the token: a good client still gets in.
    let (mut client, _) = h.connect().await?;
    client.echo_works(1).await
}

#[tokio::test]
async fn a_silent_client_is_dropped_after_the_hello_timeout() -> anyhow::Result<()> {
    let mut h = harness_with(HostOptions {
        hello_timeout: Duration::from_millis(200),
        ..HostOptions::default()
    })
    .await?;
    let mut silent = FakeClient::connect(&h.socket()).await?;
    let refusal = silent.recv().await?;
    assert_eq!(refusal["code"], "hello_timeout");
    silent.expect_closed().await?;
    let (mut client, _) = h.connect().await?;
    client.echo_works(1).await
}

#[tokio::test]
async fn bad_lines_after_hello_are_answered_and_skipped() -> anyhow::Result<()> {
    let mut h = harness().await?;
    let (mut client, _) = h.connect().await?;
    let mut oversize = vec![b' '; unipi_tui::bridge::protocol::MAX_LINE_BYTES + 1];
    oversize.push(b'\n');
    // (what, bytes, expected code)
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("malformed JSON", b"{oops\n".to_vec(), "malformed_json"),
        ("invalid UTF-8", b"\xc3\x28\n".to_vec(), "invalid_utf8"),
        (
            "unknown type",
            b"{\"type\":\"dance\"}\n".to_vec(),
            "unknown_type",
        ),
        (
            "missing fields",
            b"{\"type\":\"tool_call\",\"tool\":\"t_echo\"}\n".to_vec(),
            "bad_message",
        ),
        (
            "second hello",
            format!("{}\n", hello(&h.token)).into_bytes(),
            "bad_message",
        ),
        ("oversize line", oversize, "line_too_long"),
    ];
    for (what, bytes, code) in cases {
        client.send_raw(&bytes).await?;
        let answer = client.recv().await.with_context(|| what.to_string())?;
        assert_eq!(answer["type"], "error", "{what}: {answer}");
        assert_eq!(answer["code"], code, "{what}: {answer}");
    }
    // Still connected, still working, and nothing was lost in between.
    client.echo_works(1).await?;
    assert!(
        h.host
            .agent_info(&AgentId::main())
            .is_some_and(|info| info.connected)
    );
    Ok(())
}

#[tokio::test]
async fn a_second_concurrent_connection_is_refused() -> anyhow::Result<()> {
    let mut h = harness().await?;
    let (mut first, _) = h.connect().await?;
    let mut second = FakeClient::connect(&h.socket()).await?;
    second.send(hello(&h.token)).await?;
    let refusal = second.recv().await?;
    assert_eq!(refusal["code"], "token_in_use", "{refusal}");
    second.expect_closed().await?;
    first.echo_works(1).await
}

#[tokio::test]
async fn the_same_process_reconnects_after_goodbye_or_a_crash() -> anyhow::Result<()> {
    let mut h = harness().await?;

    // `/reload`: goodbye, acknowledged, and the token is free again at once.
    let (mut first, _) = h.connect().await?;
    first
        .send(json!({"type": "goodbye", "reason": "reload"}))
        .await?;
    assert_eq!(
        first.recv().await?,
        json!({"type": "goodbye", "reason": "reload"})
    );
    // The app sees the old connection end before the new one starts.
    match h.event().await? {
        BridgeEvent::Disconnected { agent, reason } => {
            assert_eq!(agent, AgentId::main());
            assert_eq!(reason, DisconnectReason::Goodbye("reload".into()));
            assert!(reason.expects_reconnect());
        }
        other => bail!("expected Disconnected, got {other:?}"),
    }
    let (mut second, _) = h.connect().await?;
    second.echo_works(1).await?;

    // A crash: the socket just closes.
    drop(second);
    match h.event().await? {
        BridgeEvent::Disconnected { reason, .. } => assert_eq!(reason, DisconnectReason::Closed),
        other => bail!("expected Disconnected, got {other:?}"),
    }
    let (mut third, _) = h.connect().await?;
    third.echo_works(2).await
}

#[tokio::test]
async fn a_token_first_used_by_one_process_is_refused_to_another() -> anyhow::Result<()> {
    let mut h = harness().await?;
    // This process uses the token first, then closes.
    let (client, _) = h.connect().await?;
    drop(client);
    assert!(matches!(h.event().await?, BridgeEvent::Disconnected { .. }));

    // Another process presents the same token.
    let answer = hello_from_another_process(&h.socket(), &h.token).await?;
    assert_eq!(answer["type"], "error", "{answer}");
    assert_eq!(answer["code"], "token_reused", "{answer}");

    // The rightful process still gets in.
    let (mut client, _) = h.connect().await?;
    client.echo_works(1).await
}

#[tokio::test]
async fn unregistering_an_agent_closes_it_and_voids_its_token() -> anyhow::Result<()> {
    let mut h = harness().await?;
    let (mut client, _) = h.connect().await?;
    h.host.unregister_agent(&AgentId::main());
    client.expect_closed().await?;
    assert!(matches!(
        h.event().await?,
        BridgeEvent::Disconnected {
            reason: DisconnectReason::Revoked,
            ..
        }
    ));
    let mut again = FakeClient::connect(&h.socket()).await?;
    again.send(hello(&h.token)).await?;
    assert_eq!(again.recv().await?["code"], "bad_token");
    Ok(())
}

// --- runtime directory ----------------------------------------------------------------------

#[tokio::test]
async fn the_runtime_dir_is_private_and_removed_on_shutdown() -> anyhow::Result<()> {
    let mut h = harness().await?;
    let dir = h.host.runtime_dir().to_path_buf();
    assert_eq!(std::fs::metadata(&dir)?.mode() & 0o777, 0o700);
    assert_eq!(h.socket(), dir.join("bridge.sock"));
    assert!(h.socket().exists());
    let env = h.host.register_agent(AgentId::new("helper"))?;
    assert!(env.contains(&("UNIPI_TUI_SOCKET".into(), h.socket().display().to_string())));
    assert!(env.contains(&("UNIPI_TUI_AGENT".into(), "helper".into())));

    let (mut client, _) = h.connect().await?;
    let mut bus = h.registry.bus().subscribe();
    h.host.clone().shutdown().await;
    assert_eq!(client.recv().await?["type"], "goodbye");
    client.expect_closed().await?;
    assert!(matches!(
        h.event().await?,
        BridgeEvent::Disconnected {
            reason: DisconnectReason::HostShutdown,
            ..
        }
    ));
    assert!(matches!(
        bus.recv().await,
        Ok(BusEvent::AgentDisconnected {
            reason: DisconnectReason::HostShutdown,
            ..
        })
    ));
    assert!(!dir.exists(), "{} survived shutdown", dir.display());
    assert!(UnixStream::connect(h.socket()).await.is_err());
    Ok(())
}

#[tokio::test]
async fn dropping_the_last_handle_removes_the_runtime_dir() -> anyhow::Result<()> {
    let h = harness().await?;
    let dir = h.host.runtime_dir().to_path_buf();
    assert!(dir.exists());
    drop(h.host);
    assert!(!dir.exists(), "{} survived the drop", dir.display());
    Ok(())
}

// --- helpers --------------------------------------------------------------------------------

/// Sends a hello from a separate process (Node, which the Pi tests need anyway) and returns the
/// host's first answer.
async fn hello_from_another_process(socket: &Path, token: &str) -> anyhow::Result<Value> {
    const SCRIPT: &str = r#"
const net = require("net");
const socket = net.createConnection(process.argv[1]);
let buffered = "";
socket.setEncoding("utf8");
socket.on("connect", () => socket.write(JSON.stringify({type: "hello", token: process.argv[2], protocol: 1, pi_version: "intruder"}) + "\n"));
socket.on("data", (chunk) => { buffered += chunk; });
socket.on("close", () => { process.stdout.write(buffered.split("\n")[0]); });
"#;
    let output = tokio::time::timeout(
        WAIT,
        tokio::process::Command::new(node_binary())
            .arg("-e")
            .arg(SCRIPT)
            .arg(socket)
            .arg(token)
            .output(),
    )
    .await
    .context("the other process did not finish")??;
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(&stdout).with_context(|| {
        format!(
            "the other process printed {stdout:?} (stderr {:?})",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn node_binary() -> PathBuf {
    let pinned = Path::new(env!("CARGO_MANIFEST_DIR")).join(".test-deps/node/bin/node");
    if pinned.exists() {
        pinned
    } else {
        PathBuf::from("node")
    }
}

// --- floods and oversized input ---------------------------------------------------------------

/// Taken by the tests that open connections in bulk or count this process's descriptors, so
/// that neither counts the other's.
static BULK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The connections the host holds open on `socket`: the sockets of `/proc/net/unix` bound to its
/// path (an accepted connection carries the listener's path), less the listener itself. Other
/// tests share this process, so its own descriptor count would count their pipes and sockets too.
fn host_connections(socket: &std::path::Path) -> usize {
    let path = socket.to_string_lossy();
    let table = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
    let bound = table
        .lines()
        .skip(1)
        .filter(|line| line.split_whitespace().nth(7) == Some(path.as_ref()))
        .count();
    bound.saturating_sub(1)
}

/// This process's resident memory, in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Whether the host closed `stream` (read to its end without waiting: a refusal line, then EOF).
fn closed_by_host(stream: &UnixStream) -> bool {
    let mut buf = [0u8; 512];
    loop {
        match stream.try_read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(_) => return false,
        }
    }
}

#[tokio::test]
async fn connections_awaiting_hello_are_bounded_and_a_good_client_still_gets_in()
-> anyhow::Result<()> {
    let options = HostOptions {
        // Nobody is dropped for being slow during the test: only the bound closes connections.
        hello_timeout: Duration::from_secs(120),
        ..HostOptions::default()
    };
    let limit = options.max_unauthenticated;
    let _bulk = BULK.lock().await;
    let mut h = harness_with(options).await?;
    let rss_before = rss_kib();
    let mut silent = Vec::new();
    for _ in 0..1000 {
        silent.push(UnixStream::connect(h.socket()).await?);
    }
    // All but `limit` are closed by the host at once; the rest wait for their hello.
    let mut closed = vec![false; silent.len()];
    let mut open = silent.len();
    let within_limit =
        try_eventually_async("the host to close all but its limit", WAIT, async || {
            tokio::task::yield_now().await;
            for (stream, done) in silent.iter().zip(closed.iter_mut()) {
                *done = *done || closed_by_host(stream);
            }
            open = closed.iter().filter(|done| !**done).count();
            open <= limit
        })
        .await;
    if within_limit.is_err() {
        bail!("{open} connections are held open awaiting hello (limit {limit})");
    }
    assert_eq!(open, limit, "the host closed connections within its limit");
    // The test holds its 1,000 ends; the host holds only the ones it keeps.
    let host_fds = host_connections(&h.socket());
    eprintln!(
        "1000 silent connections: the host holds {host_fds} fds; RSS {rss_before} → {} KiB",
        rss_kib()
    );
    assert!(host_fds <= limit + 4, "the host holds {host_fds} fds");
    // Once the silent ones go, a good client gets in.
    drop(silent);
    let mut refused = None;
    let connected = try_eventually_async("a good client to get in", WAIT, async || {
        h.connect()
            .await
            .inspect_err(|err| tracing::debug!("not yet: {err:#}"))
            .map_err(|err| refused = Some(err))
            .ok()
    })
    .await;
    let (mut client, _) = match connected {
        Ok(connected) => connected,
        Err(timeout) => return Err(refused.unwrap_or(timeout)),
    };
    client.echo_works(1).await
}

/// Connections opened and closed as fast as a second process can (the clients are OS threads,
/// not tasks of the host's runtime, so the host always has one more to accept): whatever the
/// host keeps per connection must go with it, or memory grows with every connection ever made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_and_close_flood_leaves_no_connection_behind() -> anyhow::Result<()> {
    const CLIENTS: usize = 16;
    const EACH: usize = 2_000;
    let _bulk = BULK.lock().await;
    let mut h = harness().await?;
    let limit = HostOptions::default().max_unauthenticated;
    let socket = h.socket();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let socket = socket.clone();
            std::thread::spawn(move || {
                for _ in 0..EACH {
                    // Refused when too many wait: that is a close as well.
                    let _ = std::os::unix::net::UnixStream::connect(&socket);
                }
            })
        })
        .collect();
    let started = Instant::now();
    let mut most = 0;
    while !clients.iter().all(std::thread::JoinHandle::is_finished) {
        most = most.max(h.host.connection_tasks());
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    for client in clients {
        client.join().unwrap();
    }
    eprintln!(
        "{} connections opened and closed in {:?}: at most {most} connection tasks held",
        CLIENTS * EACH,
        started.elapsed()
    );
    // Only the connections that are open at a time: those awaiting hello (bounded), a few
    // closing.
    assert!(
        most <= limit + CLIENTS,
        "the host held {most} connection tasks (at most {limit} may await hello)"
    );
    crate::support::wait::eventually_async("no connection task left", WAIT, async || {
        h.host.connection_tasks() == 0
    })
    .await;
    let (mut client, _) = h.connect().await?;
    client.echo_works(1).await
}

/// Log lines, captured for one test (the runtime of a `#[tokio::test]` runs on its thread).
#[derive(Clone, Default)]
struct CapturedLog(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for CapturedLog {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl CapturedLog {
    fn install(&self) -> tracing::subscriber::DefaultGuard {
        let log = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .with_writer(move || log.clone())
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[tokio::test]
async fn a_flood_of_refused_connections_is_logged_in_a_few_lines() -> anyhow::Result<()> {
    let log = CapturedLog::default();
    let _guard = log.install();
    let mut h = harness().await?;
    let started = Instant::now();
    for _ in 0..2000 {
        let mut client = FakeClient::connect(&h.socket()).await?;
        client.send(hello(&"0".repeat(64))).await?;
        assert_eq!(client.recv().await?["code"], "bad_token");
    }
    let text = log.text();
    let refusals = text.matches("bridge refused a connection").count();
    eprintln!(
        "2000 refusals in {:?}: {refusals} log lines, {} bytes of log",
        started.elapsed(),
        text.len()
    );
    assert!(
        refusals <= 10,
        "{refusals} refusals logged:\n{}",
        &text[..text.len().min(2000)]
    );
    assert!(text.len() < 10_000, "{} bytes of log", text.len());
    let mut faults = 0;
    while let Ok(event) = h.events.try_recv() {
        faults += usize::from(matches!(event, BridgeEvent::Fault { .. }));
    }
    assert!(faults <= 10, "{faults} faults reached the app");
    // The host goes on.
    let (mut client, _) = h.connect().await?;
    client.echo_works(1).await
}

#[tokio::test]
async fn a_clients_oversized_text_is_cut_in_the_log() -> anyhow::Result<()> {
    let log = CapturedLog::default();
    let _guard = log.install();
    let mut h = harness().await?;
    // Before hello: a hello whose protocol is 60 KB of text (the refusal quotes it).
    let mut stranger = FakeClient::connect(&h.socket()).await?;
    let mut junk = hello(&h.token);
    junk["protocol"] = json!("P".repeat(60_000));
    stranger.send(junk).await?;
    let refusal = stranger.recv().await?;
    assert_eq!(refusal["type"], "error", "{refusal}");
    assert!(refusal.to_string().len() < 2_000, "the answer is cut too");
    // After hello: the extension reports an error of a megabyte.
    let (mut client, _) = h.connect().await?;
    client
        .send(json!({"type": "error", "code": "boom", "message": "M".repeat(1 << 20)}))
        .await?;
    h.fault("the bridge extension reported").await?;
    client.echo_works(1).await?;
    let text = log.text();
    let longest = text.lines().map(str::len).max().unwrap_or(0);
    assert!(
        text.contains("more bytes not shown"),
        "{}",
        &text[..text.len().min(2000)]
    );
    assert!(longest < 2_000, "a log line of {longest} bytes");
    Ok(())
}

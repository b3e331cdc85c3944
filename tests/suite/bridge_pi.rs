//! The bridge with the real, pinned Pi of both lines (1.6.0 and 0.73.1) in print mode, loading
//! the embedded extension with `-e`, against the scripted model server: a host-declared tool
//! reaches the model's tool list, the model's call round-trips through a Rust module and its
//! result goes back to the model; Pi's events arrive typed; the capabilities the extension
//! detects at run time differ between the lines; host calls and `/unipi:*` commands work.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use support::pi::{PiLine, PiOutput, pi_install};
use support::sandbox::Sandbox;
use support::wait::try_eventually_async;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use unipi_tui::bridge::{
    AgentId, BridgeEvent, BridgeHost, Capabilities, Card, CardTint, Command, CommandCall,
    CommandReply, CommandSpec, DisconnectReason, HostCall, HostOptions, ModelInfo, Module, PiEvent,
    Registry, ToolCall, ToolError, ToolOutput, ToolSpec, extension_file,
};
use unipi_tui::pi::offline::{OfflineAgent, write_agent_dir};
use unipi_tui::scripted::{Scenario, ServerHandle, start};

const SCENARIO: &str = r#"
model = ["scripted-test", "second-model"]

[[rule]]
role = "user"
when = "(?i)echo please"
reply = "Calling the bridge."
# The bash call shows whether Pi's children inherit the bridge token (they must not).
tool_calls = [
    { name = "unipi_echo", arguments = { text = "bridged" } },
    { name = "bash", arguments = { command = "echo token:${UNIPI_TUI_TOKEN:-none} socket:${UNIPI_TUI_SOCKET:-none}" } },
]
usage = { prompt_tokens = 40, completion_tokens = 9 }
# Keeps Pi busy long enough for the host calls made on Connected to be answered.
delay_ms = 400

[[rule]]
role = "tool"
when = "token:"
reply = "The bridge answered."
usage = { prompt_tokens = 60, completion_tokens = 4 }

[[rule]]
role = "user"
when = "(?i)wait please"
tool_calls = [{ name = "unipi_wait", arguments = {} }]

[fallback]
reply = "Nothing scripted for that."
"#;

/// The test module: a tool that echoes, one that runs until cancelled, and a command.
#[derive(Default)]
struct EchoModule {
    calls: Arc<Mutex<Vec<Value>>>,
    /// `unipi_wait` is running.
    waiting: Arc<AtomicBool>,
    /// `unipi_wait` saw its cancel token fire.
    cancelled: Arc<AtomicBool>,
    /// The `/unipi:probe` invocations: (agent, name, args).
    commands: Arc<Mutex<Vec<(String, String, String)>>>,
}

impl EchoModule {
    /// `/unipi:probe`: records the invocation and answers with a notice.
    fn probe(&self) -> Command {
        let spec = CommandSpec::new("unipi:probe", "Bridge test command");
        Command::new(
            spec,
            self.commands.clone(),
            |commands, call: CommandCall| {
                commands.lock().unwrap().push((
                    call.agent.to_string(),
                    call.name.clone(),
                    call.args.clone(),
                ));
                async move {
                    CommandReply::Notify {
                        message: "probe answered".into(),
                        level: unipi_tui::bridge::NotifyLevel::Info,
                    }
                }
            },
        )
    }
}

impl Module for EchoModule {
    fn name(&self) -> &'static str {
        "echo"
    }

    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec::new(
                "unipi_echo",
                "Echo",
                "Echoes `text` back, prefixed with `echo:`.",
            )
            .string_param("text", "The text to echo", true)
            .prompt_snippet("Echo text back through unipi-tui"),
            ToolSpec::new("unipi_wait", "Wait", "Waits until it is cancelled."),
        ]
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let calls = self.calls.clone();
        if call.tool == "unipi_wait" {
            let (waiting, cancelled) = (self.waiting.clone(), self.cancelled.clone());
            return Box::pin(async move {
                waiting.store(true, Ordering::SeqCst);
                call.cancel.cancelled().await;
                cancelled.store(true, Ordering::SeqCst);
                Err(ToolError::new("stopped by the user"))
            });
        }
        Box::pin(async move {
            calls.lock().unwrap().push(call.args.clone());
            call.updates.send(ToolOutput::text("echoing"));
            let text = call.args["text"].as_str().unwrap_or_default();
            // The card is display only: the model still reads `echo:<text>`.
            let card = Card::new(format!("◆ echo card {text}"), CardTint::Success)
                .line("first card line")
                .footer("card footer");
            Ok(ToolOutput::text(format!("echo:{text}")).with_card(&card))
        })
    }
}

/// Everything one Pi run produced on the bridge side.
struct Run {
    output: PiOutput,
    events: Vec<BridgeEvent>,
    /// Answers to the host calls made right after Connected.
    calls: Vec<(String, Result<Value, String>)>,
    tool_calls: Vec<Value>,
    /// `/unipi:probe` invocations the module ran: (agent, name, args).
    commands: Vec<(String, String, String)>,
    server: ServerHandle,
    version: String,
}

/// Runs `pi -p <prompt>` with the bridge extension, a host with [`EchoModule`], and a collector
/// that makes a few host calls once Pi connects.
async fn run_pi(line: PiLine, prompt: &str) -> anyhow::Result<Run> {
    let pi = pi_install(line)?;
    let server = start(Scenario::from_toml_str(SCENARIO, "SCENARIO")?).await?;
    let sandbox = Sandbox::new();
    let (agent_dir, cache) = (sandbox.dir("agent"), sandbox.dir("cache"));
    let home = &sandbox.home;
    let offline = write_agent_dir(&agent_dir, &server.base_url(), &server.models())?;

    let registry = Arc::new(Registry::new());
    let module = EchoModule::default();
    let tool_calls = module.calls.clone();
    let commands = module.commands.clone();
    let probe = module.probe();
    registry.register_with_commands(Arc::new(module), vec![probe])?;
    let (tx, rx) = mpsc::channel(256);
    let host = BridgeHost::start_with(
        registry,
        tx,
        HostOptions {
            runtime_base: Some(sandbox.tmp.clone()),
            ..HostOptions::default()
        },
    )
    .await?;
    let collector = collect(host.clone(), rx);

    let extension = extension_file(&cache)?;
    let mut agent: OfflineAgent = offline;
    agent.env.extend(host.register_agent(AgentId::main())?);
    agent.pi_args.push("-e".into());
    agent.pi_args.push(extension.display().to_string());
    let output = pi.run(&agent, &sandbox, &["-p", prompt]).await?;

    // Pi has exited; its goodbye is in. Shut down so the collector's channel closes.
    host.shutdown().await;
    let (events, calls) = tokio::time::timeout(Duration::from_secs(10), collector)
        .await
        .context("the collector did not finish")??;
    if !output.success {
        bail!(
            "Pi {} exited with {:?}\nstdout:\n{}\nstderr:\n{}\nbridge events: {events:#?}",
            pi.version,
            output.code,
            output.stdout,
            output.stderr
        );
    }
    assert!(
        !home.join(".pi").exists(),
        "Pi wrote to ~/.pi despite the offline agent directory"
    );
    Ok(Run {
        output,
        events,
        calls,
        tool_calls: tool_calls.lock().unwrap().clone(),
        commands: commands.lock().unwrap().clone(),
        server,
        version: pi.version,
    })
}

type Collected = (Vec<BridgeEvent>, Vec<(String, Result<Value, String>)>);

/// Collects every event until the host's channel closes. Holds a host handle only until the
/// calls are made, so that shutting the host down closes the channel.
fn collect(host: BridgeHost, mut rx: mpsc::Receiver<BridgeEvent>) -> JoinHandle<Collected> {
    tokio::spawn(async move {
        let mut host = Some(host);
        let mut events = Vec::new();
        let mut calls = Vec::new();
        while let Some(event) = rx.recv().await {
            match event {
                BridgeEvent::Connected { ref agent, .. } => {
                    let agent: AgentId = agent.clone();
                    events.push(event);
                    let Some(host) = host.take() else { continue };
                    let calls_made = [
                        HostCall::ListModels,
                        HostCall::ListAllModels,
                        HostCall::GetContextUsage,
                        HostCall::SetSessionName {
                            name: "named by the host".into(),
                        },
                    ];
                    for call in calls_made {
                        let method = match &call {
                            HostCall::ListAllModels => "list_models all".to_string(),
                            other => other.method().to_string(),
                        };
                        let answer = host.call(&agent, call).await.map_err(|err| err.to_string());
                        calls.push((method, answer));
                    }
                }
                other => events.push(other),
            }
        }
        (events, calls)
    })
}

fn pi_events(events: &[BridgeEvent]) -> Vec<&PiEvent> {
    events
        .iter()
        .filter_map(|event| match event {
            BridgeEvent::Pi { event, .. } => Some(event),
            _ => None,
        })
        .collect()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

async fn a_declared_tool_round_trips(line: PiLine) -> anyhow::Result<()> {
    let run = run_pi(line, "echo please").await?;
    let Run {
        output,
        events,
        calls,
        tool_calls,
        server,
        version,
        ..
    } = run;
    assert!(
        output.stdout.contains("The bridge answered."),
        "stdout: {}",
        output.stdout
    );

    // The module got the model's arguments.
    assert_eq!(tool_calls, [json!({"text": "bridged"})]);

    // The tool was offered to the model, and its result came back to it.
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let offered = tool_names(&requests[0]);
    assert!(
        offered.iter().any(|name| name == "unipi_echo"),
        "{offered:?}"
    );
    let messages = requests[1]["messages"].as_array().context("no messages")?;
    let call = messages
        .iter()
        .filter_map(|message| message["tool_calls"].as_array())
        .flatten()
        .find(|call| call["function"]["name"] == "unipi_echo")
        .context("the replayed history lacks the unipi_echo call")?;
    let result_of = |id: &Value| {
        messages
            .iter()
            .find(|message| message["role"] == "tool" && message["tool_call_id"] == *id)
            .map(unipi_tui::scripted::message_text)
    };
    assert_eq!(result_of(&call["id"]).as_deref(), Some("echo:bridged"));
    let bash = messages
        .iter()
        .filter_map(|message| message["tool_calls"].as_array())
        .flatten()
        .find(|call| call["function"]["name"] == "bash")
        .context("no bash call")?;
    let env_seen = result_of(&bash["id"]).unwrap_or_default();
    assert!(
        env_seen.contains("token:none socket:none"),
        "Pi's child processes inherit the bridge variables: {env_seen:?}"
    );

    // Connected carries Pi's version and what the extension found at run time.
    let (pi_version, capabilities) = events
        .iter()
        .find_map(|event| match event {
            BridgeEvent::Connected {
                pi_version,
                capabilities,
                ..
            } => Some((pi_version.clone(), capabilities.clone())),
            _ => None,
        })
        .context("no Connected event")?;
    assert_eq!(pi_version, version);
    check_capabilities(line, &capabilities);

    // Host calls made while Pi ran.
    let models = answer(&calls, "list_models")?;
    let models: Vec<ModelInfo> = serde_json::from_value(models)?;
    let ids: Vec<&str> = models.iter().map(|model| model.id.as_str()).collect();
    assert!(ids.contains(&"scripted-test"), "{models:?}");
    assert_eq!(models[0].provider, "unipi-scripted");
    assert_eq!(models[0].context_window, Some(128_000));
    // Every model Pi knows, each saying whether Pi has a key for it and whether it sees images.
    let all: Vec<ModelInfo> = serde_json::from_value(answer(&calls, "list_models all")?)?;
    let scripted = all
        .iter()
        .find(|model| model.id == "scripted-test")
        .context("the scripted model is among all models")?;
    assert_eq!(scripted.has_auth, Some(true), "{scripted:?}");
    assert!(!scripted.vision, "{scripted:?}");
    assert_eq!(answer(&calls, "set_session_name")?, Value::Bool(true));
    let usage = answer(&calls, "get_context_usage")?;
    assert_eq!(usage["context_window"], 128_000, "{usage}");

    check_events(line, &events)?;
    Ok(())
}

fn check_capabilities(line: PiLine, capabilities: &Capabilities) {
    assert!(capabilities.has_method("registerTool"), "{capabilities:?}");
    assert!(capabilities.has_ui("setFooter"), "{capabilities:?}");
    match line {
        PiLine::Current => {
            assert!(capabilities.has_event("agent_settled"), "{capabilities:?}");
            assert!(capabilities.has_event("session_compact_failed"));
            assert!(capabilities.tool_exposure);
            assert_eq!(capabilities.mode.as_deref(), Some("print"));
        }
        PiLine::Legacy => {
            assert!(!capabilities.has_event("agent_settled"), "{capabilities:?}");
            assert!(!capabilities.tool_exposure);
            assert_eq!(capabilities.mode, None);
        }
    }
}

fn answer(calls: &[(String, Result<Value, String>)], method: &str) -> anyhow::Result<Value> {
    match calls.iter().find(|(name, _)| name == method) {
        Some((_, Ok(value))) => Ok(value.clone()),
        Some((_, Err(err))) => bail!("{method} failed: {err}"),
        None => bail!("{method} was not called: {calls:?}"),
    }
}

fn check_events(line: PiLine, events: &[BridgeEvent]) -> anyhow::Result<()> {
    let pi = pi_events(events);
    let names: Vec<&str> = pi.iter().map(|event| event.name()).collect();

    let start = pi
        .iter()
        .find_map(|event| match event {
            PiEvent::SessionStart(start) => Some(start),
            _ => None,
        })
        .context("no SessionStart")?;
    assert_eq!(start.reason, "startup");
    let model = start
        .model
        .as_ref()
        .context("SessionStart without a model")?;
    assert_eq!(
        (model.provider.as_str(), model.id.as_str()),
        ("unipi-scripted", "scripted-test")
    );
    assert!(start.session_id.is_some(), "{start:?}");

    let input = pi
        .iter()
        .find_map(|event| match event {
            PiEvent::UserInput(input) => Some(input),
            _ => None,
        })
        .context("no UserInput")?;
    assert_eq!(input.text, "echo please");

    let messages: Vec<_> = pi
        .iter()
        .filter_map(|event| match event {
            PiEvent::MessageEnd(message) => Some(message),
            _ => None,
        })
        .collect();
    assert_eq!(messages.len(), 2, "one per model response: {names:?}");
    assert_eq!(messages[0].model.as_deref(), Some("scripted-test"));
    assert_eq!(messages[0].stop_reason.as_deref(), Some("toolUse"));
    assert_eq!((messages[0].usage.input, messages[0].usage.output), (40, 9));
    assert_eq!((messages[1].usage.input, messages[1].usage.output), (60, 4));

    let turns: Vec<_> = pi
        .iter()
        .filter_map(|event| match event {
            PiEvent::TurnEnd(turn) => Some(turn),
            _ => None,
        })
        .collect();
    assert_eq!(turns.len(), 2, "{names:?}");
    assert_eq!(turns[0].usage.map(|usage| usage.input), Some(40));
    let context = turns[1]
        .context_usage
        .context("TurnEnd without context usage")?;
    assert_eq!(context.context_window, 128_000);
    assert!(
        context.tokens.is_some_and(|tokens| tokens > 0),
        "{context:?}"
    );

    let tool_events: Vec<(&str, &str, bool)> = pi
        .iter()
        .filter_map(|event| match event {
            PiEvent::ToolExecutionStart(tool) => Some(("start", tool.tool.as_str(), tool.is_error)),
            PiEvent::ToolExecutionEnd(tool) => Some(("end", tool.tool.as_str(), tool.is_error)),
            _ => None,
        })
        .collect();
    let echo_events: Vec<_> = tool_events
        .iter()
        .filter(|(_, tool, _)| *tool == "unipi_echo")
        .collect();
    assert_eq!(
        echo_events,
        [
            &("start", "unipi_echo", false),
            &("end", "unipi_echo", false)
        ]
    );
    assert_eq!(tool_events.len(), 4, "unipi_echo and bash: {tool_events:?}");

    // Idle is reported the same way on both lines; only its origin differs.
    let settled: Vec<(bool, bool)> = pi
        .iter()
        .filter_map(|event| match event {
            PiEvent::AgentSettled { aborted, synthetic } => Some((*aborted, *synthetic)),
            _ => None,
        })
        .collect();
    let synthetic = line == PiLine::Legacy;
    assert_eq!(settled, [(false, synthetic)], "{names:?}");
    let order: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| ["agent_start", "agent_end", "agent_settled"].contains(name))
        .collect();
    assert_eq!(order, ["agent_start", "agent_end", "agent_settled"]);

    // Pi said goodbye on shutdown; the bridge closed cleanly.
    assert!(
        pi.iter()
            .any(|event| matches!(event, PiEvent::SessionShutdown(s) if s.reason == "quit")),
        "{names:?}"
    );
    let disconnects: Vec<&DisconnectReason> = events
        .iter()
        .filter_map(|event| match event {
            BridgeEvent::Disconnected { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(disconnects, [&DisconnectReason::Goodbye("quit".into())]);
    Ok(())
}

async fn a_unipi_command_reaches_its_module(line: PiLine) -> anyhow::Result<()> {
    let run = run_pi(line, "/unipi:probe some args").await?;
    let commands: Vec<(&str, &str, &str)> = run
        .commands
        .iter()
        .map(|(agent, name, args)| (agent.as_str(), name.as_str(), args.as_str()))
        .collect();
    assert_eq!(commands, [("main", "unipi:probe", "some args")]);
    assert!(
        run.server.requests().is_empty(),
        "a command must not reach the model"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_current_round_trips_a_declared_tool() -> anyhow::Result<()> {
    a_declared_tool_round_trips(PiLine::Current).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_legacy_round_trips_a_declared_tool() -> anyhow::Result<()> {
    a_declared_tool_round_trips(PiLine::Legacy).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_current_forwards_a_unipi_command() -> anyhow::Result<()> {
    a_unipi_command_reaches_its_module(PiLine::Current).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_legacy_forwards_a_unipi_command() -> anyhow::Result<()> {
    a_unipi_command_reaches_its_module(PiLine::Legacy).await
}

// --- interactive: /reload, the footer, a command --------------------------------------------

/// Pi's own footer shows the context fill as `0.0%/128k`; with the bridge it must be gone.
const PI_FOOTER_MARK: &str = "%/128k";

/// Real Pi in a terminal: the footer is replaced; `/reload` and `/new` re-instantiate the
/// extension and the host takes each new connection (the declared tool still works after them);
/// a `/unipi:*` command's answer is shown by Pi; Esc during a bridged tool cancels it in Rust;
/// a widget line appears above the editor and goes again; cards of a custom message and of a
/// tool result are drawn.
async fn survives_reload_interactively(line: PiLine) -> anyhow::Result<()> {
    use support::term::{OuterOptions, Session};

    let pi = pi_install(line)?;
    let server = start(Scenario::from_toml_str(SCENARIO, "SCENARIO")?).await?;
    let sandbox = Sandbox::new();
    let (agent_dir, cache) = (sandbox.dir("agent"), sandbox.dir("cache"));
    let (cwd, home) = (&sandbox.project, &sandbox.home);
    let offline = write_agent_dir(&agent_dir, &server.base_url(), &server.models())?;
    let registry = Arc::new(Registry::new());
    let module = EchoModule::default();
    let tool_calls = module.calls.clone();
    let commands = module.commands.clone();
    let (waiting, cancelled) = (module.waiting.clone(), module.cancelled.clone());
    let probe = module.probe();
    registry.register_with_commands(Arc::new(module), vec![probe])?;
    let (tx, mut rx) = mpsc::channel(256);
    let host = BridgeHost::start_with(
        registry,
        tx,
        HostOptions {
            runtime_base: Some(sandbox.tmp.clone()),
            ..HostOptions::default()
        },
    )
    .await?;

    let extension = extension_file(&cache)?.display().to_string();
    let mut env: Vec<(String, String)> = offline.env.clone();
    env.extend(host.register_agent(AgentId::main())?);
    env.push(("HOME".into(), home.display().to_string()));
    env.push(("TMPDIR".into(), sandbox.tmp.display().to_string()));
    if let Some(node_dir) = &pi.node_bin_dir {
        let path = std::env::var("PATH").unwrap_or_default();
        env.push(("PATH".into(), format!("{}:{path}", node_dir.display())));
    }
    let env: Vec<(&str, String)> = env.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let mut args: Vec<&str> = offline.pi_args.iter().map(String::as_str).collect();
    args.extend(["-e", extension.as_str()]);
    let session = Session::spawn(&pi.bin, &args, &env, cwd, OuterOptions::default())?;

    let connected = |event: &BridgeEvent| matches!(event, BridgeEvent::Connected { .. });
    expect_event(&mut rx, &session, "Connected", connected).await?;
    // Pi draws, and its footer is replaced by an empty one.
    wait_screen(&session, "Pi's editor", |screen| screen.contains("────")).await?;
    wait_screen(&session, "no Pi footer", |screen| {
        !screen.contains(PI_FOOTER_MARK)
    })
    .await?;

    // A widget line above the editor, through the bridge, and its removal.
    let main = AgentId::main();
    let set_widget = |lines: Option<Vec<String>>| {
        host.call(
            &main,
            HostCall::SetWidget {
                key: "unipi-test".into(),
                lines,
            },
        )
    };
    assert_eq!(
        set_widget(Some(vec!["widget line from unipi".into()])).await?,
        json!(true)
    );
    wait_screen(&session, "the widget line", |screen| {
        screen.contains("widget line from unipi")
    })
    .await?;
    assert_eq!(set_widget(None).await?, json!(true));
    wait_screen(&session, "the widget gone", |screen| {
        !screen.contains("widget line from unipi")
    })
    .await?;

    // A custom message with a card is drawn as the card.
    host.call(
        &AgentId::main(),
        HostCall::SendMessage {
            custom_type: "unipi-test-card".into(),
            content: "the model reads this".into(),
            display: true,
            details: Card::new("▲ message card title", CardTint::Warning)
                .line("message card line")
                .attach(Value::Null),
            deliver_as: None,
            trigger_turn: false,
        },
    )
    .await?;
    wait_screen(&session, "the message card", |screen| {
        screen.contains("▲ message card title") && screen.contains("message card line")
    })
    .await?;

    slash_command(&session, "/reload").await?;
    let goodbye = expect_event(&mut rx, &session, "Disconnected", |event| {
        matches!(event, BridgeEvent::Disconnected { .. })
    })
    .await?;
    assert!(
        matches!(&goodbye, BridgeEvent::Disconnected { reason: DisconnectReason::Goodbye(r), .. } if r == "reload"),
        "{goodbye:?}"
    );
    expect_event(&mut rx, &session, "Connected after /reload", connected).await?;
    // Keys typed before Pi has finished reloading are lost: wait for its notice.
    wait_screen(&session, "Pi's reload notice", |screen| {
        screen.contains("Reloaded keybindings")
    })
    .await?;

    slash_command(&session, "/new").await?;
    let goodbye = expect_event(&mut rx, &session, "Disconnected", |event| {
        matches!(event, BridgeEvent::Disconnected { .. })
    })
    .await?;
    assert!(
        matches!(&goodbye, BridgeEvent::Disconnected { reason: DisconnectReason::Goodbye(r), .. } if r == "new"),
        "{goodbye:?}"
    );
    let start = expect_event(&mut rx, &session, "SessionStart after /new", |event| {
        matches!(
            event,
            BridgeEvent::Pi {
                event: PiEvent::SessionStart(_),
                ..
            }
        )
    })
    .await?;
    assert!(
        matches!(&start, BridgeEvent::Pi { event: PiEvent::SessionStart(start), .. } if start.reason == "new"),
        "{start:?}"
    );

    wait_screen(&session, "Pi's new-session notice", |screen| {
        screen.contains("New session started")
    })
    .await?;

    type_keys(&session, "echo please\r").await;
    wait_screen(&session, "the model's answer", |screen| {
        screen.contains("The bridge answered.")
    })
    .await?;
    assert_eq!(*tool_calls.lock().unwrap(), [json!({"text": "bridged"})]);
    // The tool result is drawn as its card.
    wait_screen(&session, "the tool result's card", |screen| {
        screen.contains("◆ echo card bridged")
            && screen.contains("first card line")
            && screen.contains("card footer")
    })
    .await?;
    let requests = server.requests();
    assert!(
        tool_names(&requests[0])
            .iter()
            .any(|name| name == "unipi_echo"),
        "the tool is declared again after /reload"
    );

    slash_command(&session, "/unipi:probe now").await?;
    wait_screen(&session, "the command's notice", |screen| {
        screen.contains("probe answered")
    })
    .await?;
    assert_eq!(
        *commands.lock().unwrap(),
        [(
            "main".to_owned(),
            "unipi:probe".to_owned(),
            "now".to_owned()
        )]
    );
    assert!(
        !session.screen_text().contains(PI_FOOTER_MARK),
        "Pi's footer came back after /reload:\n{}",
        session.screen_text()
    );

    // Esc while a bridged tool runs: Pi's abort reaches the module as a cancellation.
    type_keys(&session, "wait please\r").await;
    wait_flag(&waiting, "unipi_wait to start", &session).await?;
    type_keys(&session, "\x1b").await;
    wait_flag(&cancelled, "unipi_wait to see the cancellation", &session).await?;

    // Ctrl+D on an empty editor quits Pi, which says goodbye.
    type_keys(&session, "\x04").await;
    let quit = expect_event(&mut rx, &session, "Disconnected on quit", |event| {
        matches!(event, BridgeEvent::Disconnected { .. })
    })
    .await?;
    assert!(
        matches!(&quit, BridgeEvent::Disconnected { reason: DisconnectReason::Goodbye(r), .. } if r == "quit"),
        "{quit:?}"
    );
    let mut session = session;
    tokio::task::spawn_blocking(move || session.wait_exit(Duration::from_secs(10))).await??;
    host.shutdown().await;
    Ok(())
}

/// The next event matching `wanted` (commands on the way are answered `Done`).
async fn expect_event(
    rx: &mut mpsc::Receiver<BridgeEvent>,
    session: &support::term::Session,
    what: &str,
    wanted: impl Fn(&BridgeEvent) -> bool,
) -> anyhow::Result<BridgeEvent> {
    let matching = async {
        while let Some(event) = rx.recv().await {
            if wanted(&event) {
                return Some(event);
            }
        }
        None
    };
    tokio::time::timeout(Duration::from_secs(30), matching)
        .await
        .with_context(|| {
            format!(
                "no {what} event in time; screen:\n{}",
                session.screen_text()
            )
        })?
        .context("the host's channel closed")
}

async fn wait_screen(
    session: &support::term::Session,
    what: &str,
    check: impl Fn(&str) -> bool,
) -> anyhow::Result<()> {
    try_eventually_async(what, Duration::from_secs(30), async || {
        check(&session.screen_text())
    })
    .await
    .map_err(|err| anyhow!("{err}; screen:\n{}", session.screen_text()))
}

async fn wait_flag(
    flag: &AtomicBool,
    what: &str,
    session: &support::term::Session,
) -> anyhow::Result<()> {
    try_eventually_async(what, Duration::from_secs(30), async || {
        flag.load(Ordering::SeqCst)
    })
    .await
    .map_err(|err| anyhow!("{err}; screen:\n{}", session.screen_text()))
}

/// Types a slash command and presses Enter only once Pi's editor shows it whole: Enter before
/// the last character arrived submits a prefix, or takes one of Pi's completions instead.
async fn slash_command(session: &support::term::Session, command: &str) -> anyhow::Result<()> {
    type_keys(session, command).await;
    wait_screen(session, &format!("{command:?} in Pi's editor"), |screen| {
        screen
            .lines()
            .any(|line| line.trim_end().ends_with(command))
    })
    .await?;
    session.send(b"\r");
    Ok(())
}

async fn type_keys(session: &support::term::Session, keys: &str) {
    for ch in keys.chars() {
        let mut buf = [0u8; 4];
        session.send(ch.encode_utf8(&mut buf).as_bytes());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_current_survives_reload_interactively() -> anyhow::Result<()> {
    survives_reload_interactively(PiLine::Current).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_legacy_survives_reload_interactively() -> anyhow::Result<()> {
    survives_reload_interactively(PiLine::Legacy).await
}

// --- declarations that change while Pi runs -------------------------------------------------

const DYNAMIC_SCENARIO: &str = r#"
model = ["scripted-test"]

[[rule]]
role = "user"
when = "(?i)dynamic please"
tool_calls = [{ name = "dyn_one", arguments = {} }]

# The steered notes follow the tool result, so the visible one is the last message.
[[rule]]
role = "user"
when = "visible-note"
reply = "Dynamic done."

[[rule]]
role = "user"
when = "(?i)after please"
reply = "After done."

[fallback]
reply = "Nothing scripted for that."
"#;

/// A module whose tools change at run time (as MCP servers come and go) and which sends one
/// message the model must see and one it must not.
#[derive(Default)]
struct DynamicModule {
    second: Arc<AtomicBool>,
    host: Arc<std::sync::OnceLock<(BridgeHost, Arc<Registry>)>>,
}

impl Module for DynamicModule {
    fn name(&self) -> &'static str {
        "dynamic"
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let name = if self.second.load(Ordering::SeqCst) {
            "dyn_two"
        } else {
            "dyn_one"
        };
        vec![ToolSpec::new(name, name, "A tool that comes and goes.")]
    }

    fn message_types(&self) -> Vec<unipi_tui::bridge::MessageTypeSpec> {
        vec![
            unipi_tui::bridge::MessageTypeSpec::new("dyn-hidden", "Hidden").hidden_from_model(),
            unipi_tui::bridge::MessageTypeSpec::new("dyn-visible", "Visible"),
        ]
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let (second, host) = (self.second.clone(), self.host.clone());
        Box::pin(async move {
            let (host, registry) = host
                .get()
                .cloned()
                .ok_or_else(|| ToolError::new("no host"))?;
            second.store(true, Ordering::SeqCst);
            registry
                .refresh("dynamic")
                .map_err(|err| ToolError::new(err.to_string()))?;
            host.redeclare().await;
            for (custom_type, text) in [
                ("dyn-hidden", "hidden-note"),
                ("dyn-visible", "visible-note"),
            ] {
                let message = HostCall::SendMessage {
                    custom_type: custom_type.into(),
                    content: text.into(),
                    display: true,
                    details: Value::Null,
                    deliver_as: Some(unipi_tui::bridge::DeliverAs::Steer),
                    trigger_turn: false,
                };
                host.call(&call.agent, message)
                    .await
                    .map_err(|err| ToolError::new(err.to_string()))?;
            }
            Ok(ToolOutput::text("one:done"))
        })
    }
}

/// Tools declared after Pi started reach the model's next request, tools no longer declared
/// leave it (Pi cannot unregister them: they leave the active set), and a message type hidden
/// from the model stays out of its context while a visible one gets in.
async fn declarations_change_while_pi_runs(line: PiLine) -> anyhow::Result<()> {
    let pi = pi_install(line)?;
    let server = start(Scenario::from_toml_str(DYNAMIC_SCENARIO, "DYNAMIC")?).await?;
    let sandbox = Sandbox::new();
    let (agent_dir, cache) = (sandbox.dir("agent"), sandbox.dir("cache"));
    let mut agent = write_agent_dir(&agent_dir, &server.base_url(), &server.models())?;
    let registry = Arc::new(Registry::new());
    let module = DynamicModule::default();
    let slot = module.host.clone();
    registry.register(Arc::new(module))?;
    let (tx, rx) = mpsc::channel(256);
    let host = BridgeHost::start_with(
        registry.clone(),
        tx,
        HostOptions {
            runtime_base: Some(sandbox.tmp.clone()),
            ..HostOptions::default()
        },
    )
    .await?;
    let _ = slot.set((host.clone(), registry));
    let collector = collect(host.clone(), rx);
    agent.env.extend(host.register_agent(AgentId::main())?);
    agent.pi_args.push("-e".into());
    agent
        .pi_args
        .push(extension_file(&cache)?.display().to_string());
    let output = pi
        .run(&agent, &sandbox, &["-p", "dynamic please", "after please"])
        .await?;
    host.shutdown().await;
    drop(tokio::time::timeout(Duration::from_secs(10), collector).await);
    assert!(
        output.success && output.stdout.contains("After done."),
        "Pi {} failed:\nstdout:\n{}\nstderr:\n{}",
        pi.version,
        output.stdout,
        output.stderr
    );
    let requests = server.requests();
    let first = tool_names(&requests[0]);
    assert!(first.iter().any(|name| name == "dyn_one"), "{first:?}");
    assert!(!first.iter().any(|name| name == "dyn_two"), "{first:?}");
    // Pi 1.x applies both in the very next request; 0.73.1 takes the tool changes from its next
    // prompt on (an agent run keeps the tools it started with).
    let noted = requests
        .iter()
        .position(|request| request["messages"].to_string().contains("visible-note"))
        .context("the visible note never reached the model")?;
    let changed = if line == PiLine::Current {
        assert_eq!(noted, 1, "{requests:#?}");
        &requests[1]
    } else {
        requests.last().context("no requests")?
    };
    let later = tool_names(changed);
    assert!(later.iter().any(|name| name == "dyn_two"), "{later:?}");
    assert!(!later.iter().any(|name| name == "dyn_one"), "{later:?}");
    for request in &requests {
        let context = request["messages"].to_string();
        assert!(!context.contains("hidden-note"), "{context}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_current_takes_declarations_that_change_while_it_runs() -> anyhow::Result<()> {
    declarations_change_while_pi_runs(PiLine::Current).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_legacy_takes_declarations_that_change_while_it_runs() -> anyhow::Result<()> {
    declarations_change_while_pi_runs(PiLine::Legacy).await
}

//! The MCP manager against real servers: `@modelcontextprotocol/server-everything` and
//! `server-filesystem` from npm (installed by `scripts/test-deps.sh` into `.test-deps/mcp`; a
//! missing install fails loudly, never skips), and the Python fixtures in `tests/fixtures/mcp`
//! for what real servers do not do on demand: exit at start, never answer `initialize`, die in
//! the middle of a call, log the cancellations they receive. Process checks read /proc: a stopped
//! server leaves no member of its process group behind. Waits poll with generous limits, so a
//! loaded machine slows the tests down rather than failing them.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use unipi_tui::mcp::config::{McpConfig, McpSettings, ServerConfig, Transport};
use unipi_tui::mcp::manager::{
    CallOutcome, McpCallError, McpContent, McpEvent, McpManager, ServerSnapshot, ServerStatus,
};

use crate::support::wait::try_eventually_async;

/// Generous: `npx`-free, but Node still takes a second or two to start on a busy machine.
const SETTLE: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// server-everything

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_lists_tools_and_maps_text_structured_and_image_results() -> Result<()> {
    let manager = started(vec![everything("everything")]).await?;
    let snapshot = snapshot_of(&manager, "everything")?;
    assert_eq!(snapshot.status, ServerStatus::Running, "{snapshot:?}");
    let names: Vec<&str> = snapshot.tools.iter().map(|t| t.name.as_str()).collect();
    for expected in [
        "echo",
        "get-structured-content",
        "get-sum",
        "get-tiny-image",
        "trigger-long-running-operation",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "tools are sorted by name");
    let sum = snapshot
        .tools
        .iter()
        .find(|t| t.name == "get-sum")
        .context("get-sum")?;
    assert_eq!(sum.bridged_name, "mcp__everything__get_sum");
    assert_eq!(sum.server, "everything");
    assert!(
        sum.input_schema["properties"].get("a").is_some(),
        "{:?}",
        sum.input_schema
    );
    assert!(!sum.description.is_empty());

    let echo = call(&manager, "everything", "echo", json!({"message": "hello"})).await?;
    assert_eq!(echo.content, [McpContent::Text("Echo: hello".into())]);
    assert!(!echo.is_error);

    let sum = call(&manager, "everything", "get-sum", json!({"a": 2, "b": 3})).await?;
    assert_eq!(text_of(&sum), "The sum of 2 and 3 is 5.");

    let weather = call(
        &manager,
        "everything",
        "get-structured-content",
        json!({"location": "Chicago"}),
    )
    .await?;
    let structured = weather.structured.context("structured content")?;
    assert!(structured["temperature"].is_number(), "{structured}");
    assert!(structured["conditions"].is_string(), "{structured}");

    let image = call(&manager, "everything", "get-tiny-image", json!({})).await?;
    let (data, mime) = image
        .content
        .iter()
        .find_map(|c| match c {
            McpContent::Image { data, mime } => Some((data.clone(), mime.clone())),
            _ => None,
        })
        .context("an image block")?;
    assert_eq!(mime, "image/png");
    use base64::Engine as _;
    let png = base64::engine::general_purpose::STANDARD.decode(data)?;
    assert_eq!(&png[..4], b"\x89PNG");

    let pid = snapshot.pid.context("a stdio server has a pid")?;
    assert!(!group_members(pid).is_empty());
    manager.shutdown().await;
    assert_eq!(
        group_members(pid),
        Vec::<u32>::new(),
        "shutdown leaves nothing"
    );
    assert_eq!(status_of(&manager, "everything")?, ServerStatus::Stopped);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enabled_and_disabled_tools_filter_the_list() -> Result<()> {
    let mut server = everything("everything");
    server.enabled_tools = Some(vec!["echo".into(), "get-sum".into(), "no-such-tool".into()]);
    server.disabled_tools = vec!["get-sum".into()];
    let manager = started(vec![server]).await?;
    let snapshot = snapshot_of(&manager, "everything")?;
    let names: Vec<&str> = snapshot.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo"]);
    manager.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_arrives_and_restarts_the_call_timeout() -> Result<()> {
    let mut server = everything("everything");
    // The operation takes 2.5 s, well over the timeout: only the progress resets let it finish.
    server.timeout = Duration::from_secs(1);
    let manager = started(vec![server]).await?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let outcome = manager
        .call_tool(
            "everything",
            "trigger-long-running-operation",
            json!({"duration": 2.5, "steps": 10}),
            Some(tx),
            never(),
        )
        .await?;
    assert!(
        text_of(&outcome).contains("Long running operation completed"),
        "{outcome:?}"
    );
    // The server sends the tenth notification right before the result, and the client hands
    // notifications and results on separately: under load the result can win, the call ends,
    // and the tenth is dropped with the call's channel (seen in a full run beside a release
    // build). The nine before it were sent 250 ms or more ahead of the result and arrive in
    // order; they are what reset the 1 s timeout of this 2.5 s operation.
    let mut updates = Vec::new();
    let ten = async {
        while updates.len() < 10
            && let Some(update) = rx.recv().await
        {
            updates.push(update);
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), ten).await;
    let steps: Vec<f64> = updates.iter().map(|u| u.progress).collect();
    assert!(steps.len() >= 9, "{steps:?}");
    assert_eq!(
        steps,
        (1..=steps.len()).map(|n| n as f64).collect::<Vec<_>>(),
        "progress in order from the first step"
    );
    assert!(updates.iter().all(|u| u.total == Some(10.0)), "{updates:?}");
    manager.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_long_operation_returns_at_once_and_the_session_lives_on() -> Result<()> {
    let manager = started(vec![everything("everything")]).await?;
    let (cancel, cancelled) = oneshot::channel::<()>();
    let call = {
        let manager = manager.clone();
        tokio::spawn(async move {
            manager
                .call_tool(
                    "everything",
                    "trigger-long-running-operation",
                    json!({"duration": 30, "steps": 30}),
                    None,
                    Box::pin(async move {
                        let _ = cancelled.await;
                    }),
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let at = Instant::now();
    let _ = cancel.send(());
    let result = call.await?;
    assert_eq!(result, Err(McpCallError::Cancelled));
    assert!(
        at.elapsed() < Duration::from_secs(1),
        "took {:?}",
        at.elapsed()
    );
    let echo = call_ok(
        &manager,
        "everything",
        "echo",
        json!({"message": "still here"}),
    )
    .await?;
    assert_eq!(text_of(&echo), "Echo: still here");
    manager.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_streamable_http() -> Result<()> {
    let port = free_port()?;
    let mut server = tokio::process::Command::new(deps_bin("mcp-server-everything")?)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    try_eventually_async(
        "server-everything to listen",
        Duration::from_secs(30),
        async || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
    )
    .await
    .context("server-everything did not listen")?;
    let config = ServerConfig {
        transport: Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: BTreeMap::from([("X-Test".into(), "1".into())]),
        },
        ..stdio("remote", "unused", &[])
    };
    let manager = started(vec![config]).await?;
    let snapshot = snapshot_of(&manager, "remote")?;
    assert_eq!(snapshot.status, ServerStatus::Running, "{snapshot:?}");
    assert_eq!(snapshot.pid, None);
    assert_eq!(snapshot.target, format!("http://127.0.0.1:{port}/mcp"));
    let echo = call(&manager, "remote", "echo", json!({"message": "over http"})).await?;
    assert_eq!(text_of(&echo), "Echo: over http");
    manager.shutdown().await;
    server.kill().await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// server-filesystem

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_lists_and_reads_a_directory() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    std::fs::write(root.join("notes.txt"), "first line\nsecond line\n")?;
    std::fs::create_dir(root.join("sub"))?;
    let server = stdio(
        "fs",
        &deps_bin("mcp-server-filesystem")?.display().to_string(),
        &[&root.display().to_string()],
    );
    let manager = started(vec![server]).await?;
    let snapshot = snapshot_of(&manager, "fs")?;
    assert_eq!(snapshot.status, ServerStatus::Running, "{snapshot:?}");
    let names: Vec<&str> = snapshot.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"list_directory") && names.contains(&"read_text_file"),
        "{names:?}"
    );

    let listing = call(&manager, "fs", "list_directory", json!({"path": root})).await?;
    let listing = text_of(&listing);
    assert!(listing.contains("[FILE] notes.txt"), "{listing}");
    assert!(listing.contains("[DIR] sub"), "{listing}");
    let file = call(
        &manager,
        "fs",
        "read_text_file",
        json!({"path": root.join("notes.txt")}),
    )
    .await?;
    assert_eq!(text_of(&file), "first line\nsecond line\n");
    // Outside the allowed directory: the server answers with an error result, not a failure.
    let denied = call(
        &manager,
        "fs",
        "read_text_file",
        json!({"path": "/etc/hostname"}),
    )
    .await?;
    assert!(denied.is_error, "{denied:?}");
    manager.shutdown().await;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// broken servers

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_servers_fail_alone_with_their_stderr() -> Result<()> {
    let marker = unique_marker("never");
    let mut silent = python("never", "never_initializes.py", &[&marker]);
    // Long enough for Python to start and say "answering none" on stderr even on a loaded
    // 2-core machine (a cold interpreter start took 0.9 s there), short enough to keep the test
    // quick: the point is that the timeout fires and names the last stderr line.
    silent.startup_timeout = Duration::from_secs(3);
    let manager = McpManager::new(config_of(vec![
        everything("everything"),
        python("exits", "exits_at_start.py", &[]),
        silent,
    ]));
    let mut events = manager.subscribe();
    let started_at = Instant::now();
    manager.start_all();
    assert!(
        manager.wait_settled(SETTLE).await,
        "{:?}",
        manager.snapshot()
    );

    let exits = snapshot_of(&manager, "exits")?;
    assert_eq!(exits.status, ServerStatus::Error);
    let error = exits.error.clone().unwrap_or_default();
    // Plain words: how it ended and its last stderr lines, none of rmcp's type names.
    assert_eq!(
        error,
        "exited with status 2 during start-up: starting broken server; fatal: \
         FIXTURE_API_KEY is not set"
    );
    assert!(
        exits
            .stderr_tail
            .contains("starting broken server\nfatal: FIXTURE_API_KEY is not set"),
        "{exits:?}"
    );
    assert!(exits.tools.is_empty());

    let stuck = snapshot_of(&manager, "never")?;
    assert_eq!(stuck.status, ServerStatus::Error);
    let error = stuck.error.clone().unwrap_or_default();
    assert!(error.contains("start-up timeout"), "{error}");
    assert!(stuck.stderr_tail.contains("answering none"), "{stuck:?}");
    // The stuck process is killed, not left waiting.
    try_eventually_async(
        "never_initializes.py to be killed",
        Duration::from_secs(10),
        async || processes_with(&marker).is_empty(),
    )
    .await
    .context("never_initializes.py still runs after its start-up timeout")?;

    let everything = snapshot_of(&manager, "everything")?;
    assert_eq!(everything.status, ServerStatus::Running, "{everything:?}");
    let echo = call(&manager, "everything", "echo", json!({"message": "fine"})).await?;
    assert_eq!(text_of(&echo), "Echo: fine");

    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        seen.push(event);
    }
    assert!(
        seen.contains(&McpEvent::ServerStarted {
            server: "everything".into(),
            tools: everything.tools.len()
        }),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|e| matches!(e, McpEvent::ServerError { server, .. } if server == "exits")),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|e| matches!(e, McpEvent::ServerError { server, .. } if server == "never")),
        "{seen:?}"
    );
    assert!(started_at.elapsed() < SETTLE);

    // Calls to failed servers say so; a restart of a server that cannot start says why.
    let refused = manager
        .call_tool("exits", "anything", json!({}), None, never())
        .await;
    assert_eq!(
        refused,
        Err(McpCallError::NotRunning {
            server: "exits".into(),
            status: ServerStatus::Error
        })
    );
    let unknown = manager
        .call_tool("nope", "x", json!({}), None, never())
        .await;
    assert_eq!(unknown, Err(McpCallError::UnknownServer("nope".into())));
    let restart = manager.restart("exits").await;
    let message = format!("{:#}", restart.err().context("restart must fail")?);
    assert!(message.contains("FIXTURE_API_KEY"), "{message}");
    assert_eq!(snapshot_of(&manager, "exits")?.restarts, 1);
    manager.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_dying_mid_call_fails_the_call_at_once_then_reconnects() -> Result<()> {
    let manager = started(vec![
        everything("everything"),
        python("fragile", "fragile.py", &[]),
    ])
    .await?;
    let first_pid = snapshot_of(&manager, "fragile")?.pid.context("pid")?;
    // A slow call in flight on the same server fails too, at once.
    let pending = {
        let manager = manager.clone();
        tokio::spawn(async move {
            manager
                .call_tool("fragile", "wait", json!({"seconds": 30}), None, never())
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let at = Instant::now();
    let died = manager
        .call_tool("fragile", "die", json!({}), None, never())
        .await;
    assert!(
        at.elapsed() < Duration::from_secs(2),
        "took {:?}",
        at.elapsed()
    );
    match &died {
        Err(McpCallError::ServerExited {
            server,
            stderr_tail,
        }) => {
            assert_eq!(server, "fragile");
            assert!(stderr_tail.contains("dying on purpose"), "{stderr_tail}");
        }
        other => bail!("expected ServerExited, got {other:?}"),
    }
    let pending = tokio::time::timeout(Duration::from_secs(2), pending).await??;
    assert!(
        matches!(pending, Err(McpCallError::ServerExited { .. })),
        "{pending:?}"
    );

    let fragile = snapshot_of(&manager, "fragile")?;
    assert_eq!(fragile.status, ServerStatus::Error, "{fragile:?}");
    assert!(
        fragile.error.clone().unwrap_or_default().contains("exited"),
        "{fragile:?}"
    );
    assert!(fragile.stderr_tail.contains("dying on purpose"));
    let echo = call(
        &manager,
        "everything",
        "echo",
        json!({"message": "unaffected"}),
    )
    .await?;
    assert_eq!(text_of(&echo), "Echo: unaffected");

    // It had been running, so it is reconnected after a backoff.
    try_eventually_async(
        "fragile to be reconnected",
        Duration::from_secs(15),
        async || status_of(&manager, "fragile").ok() == Some(ServerStatus::Running),
    )
    .await
    .context("fragile was not reconnected")?;
    let fragile = snapshot_of(&manager, "fragile")?;
    assert_eq!(fragile.restarts, 1);
    assert_ne!(fragile.pid, Some(first_pid));
    let pid = call(&manager, "fragile", "pid", json!({})).await?;
    assert_eq!(Some(text_of(&pid)), fragile.pid.map(|p| p.to_string()));
    manager.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_times_out_and_the_server_hears_the_cancellation() -> Result<()> {
    let mut server = python("fragile", "fragile.py", &[]);
    server.timeout = Duration::from_millis(300);
    let manager = started(vec![server]).await?;
    let at = Instant::now();
    let result = manager
        .call_tool("fragile", "wait", json!({"seconds": 10}), None, never())
        .await;
    assert_eq!(
        result,
        Err(McpCallError::Timeout {
            server: "fragile".into(),
            tool: "wait".into(),
            after: Duration::from_millis(300),
        })
    );
    assert!(
        at.elapsed() < Duration::from_secs(2),
        "took {:?}",
        at.elapsed()
    );
    try_eventually_async(
        "the timeout in fragile's stderr",
        Duration::from_secs(5),
        async || stderr_of(&manager, "fragile").contains(": timeout"),
    )
    .await
    .context("the server never logged the cancellation")?;
    // Progress restarts the same timeout: 1 s of work with a 300 ms timeout succeeds.
    let (tx, mut rx) = mpsc::unbounded_channel();
    let outcome = manager
        .call_tool(
            "fragile",
            "wait",
            json!({"seconds": 1, "progress": true}),
            Some(tx),
            never(),
        )
        .await?;
    assert_eq!(text_of(&outcome), "waited 1.0 s");
    let first = rx.try_recv()?;
    assert_eq!(
        (first.progress, first.message.as_deref()),
        (1.0, Some("step 1"))
    );
    manager.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_reaches_the_server() -> Result<()> {
    let manager = started(vec![python("fragile", "fragile.py", &[])]).await?;
    let (cancel, cancelled) = oneshot::channel::<()>();
    let call = {
        let manager = manager.clone();
        tokio::spawn(async move {
            manager
                .call_tool(
                    "fragile",
                    "wait",
                    json!({"seconds": 30}),
                    None,
                    Box::pin(async move {
                        let _ = cancelled.await;
                    }),
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let at = Instant::now();
    let _ = cancel.send(());
    assert_eq!(call.await?, Err(McpCallError::Cancelled));
    assert!(
        at.elapsed() < Duration::from_millis(500),
        "took {:?}",
        at.elapsed()
    );
    try_eventually_async(
        "the cancellation in fragile's stderr",
        Duration::from_secs(5),
        async || stderr_of(&manager, "fragile").contains(": cancelled by the user"),
    )
    .await
    .with_context(|| format!("no cancellation in {:?}", stderr_of(&manager, "fragile")))?;
    manager.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_changed_relists_and_broadcasts() -> Result<()> {
    let manager = started(vec![python("fragile", "fragile.py", &[])]).await?;
    let mut events = manager.subscribe();
    let before: Vec<String> = tool_names(&manager, "fragile")?;
    assert_eq!(before, ["add_tool", "cwd", "die", "pid", "wait"]);
    call(&manager, "fragile", "add_tool", json!({})).await?;
    let event = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match events.recv().await {
                Ok(McpEvent::ToolsChanged { server }) => return Ok(server),
                Ok(_) => {}
                Err(err) => return Err(err),
            }
        }
    })
    .await??;
    assert_eq!(event, "fragile");
    assert_eq!(
        tool_names(&manager, "fragile")?,
        ["add_tool", "cwd", "die", "extra", "pid", "wait"]
    );
    manager.shutdown().await;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// stopping

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_kills_the_whole_process_group_and_restart_brings_it_back() -> Result<()> {
    // A wrapper like npx: the server's group also holds a grandchild that ignores SIGTERM, so
    // only the SIGKILL after the grace period ends it.
    let script = format!(
        "(trap '' TERM; exec sleep 600) & exec python3 {}",
        fixture("fragile.py").display()
    );
    let manager = started(vec![stdio("wrapped", "sh", &["-c", &script])]).await?;
    let mut events = manager.subscribe();
    let pid = snapshot_of(&manager, "wrapped")?.pid.context("pid")?;
    try_eventually_async(
        format!("the wrapper and its child in group {pid}"),
        Duration::from_secs(5),
        async || group_members(pid).len() >= 2,
    )
    .await
    .with_context(|| format!("group {pid}: {:?}", group_members(pid)))?;

    manager.stop("wrapped").await?;
    assert_eq!(
        group_members(pid),
        Vec::<u32>::new(),
        "a member of the group survived stop"
    );
    let stopped = snapshot_of(&manager, "wrapped")?;
    assert_eq!((stopped.status, stopped.pid), (ServerStatus::Stopped, None));
    assert!(stopped.tools.is_empty());
    assert_eq!(
        events.try_recv()?,
        McpEvent::ServerStopped {
            server: "wrapped".into()
        }
    );
    let refused = manager
        .call_tool("wrapped", "pid", json!({}), None, never())
        .await;
    assert!(matches!(
        refused,
        Err(McpCallError::NotRunning {
            status: ServerStatus::Stopped,
            ..
        })
    ));

    manager.restart("wrapped").await?;
    let restarted = snapshot_of(&manager, "wrapped")?;
    assert_eq!(
        (restarted.status, restarted.restarts),
        (ServerStatus::Running, 1)
    );
    let new_pid = restarted.pid.context("pid")?;
    assert_ne!(new_pid, pid);
    let answer = call(&manager, "wrapped", "pid", json!({})).await?;
    assert_eq!(text_of(&answer), new_pid.to_string());
    manager.shutdown().await;
    assert_eq!(group_members(new_pid), Vec::<u32>::new());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_manager_without_shutdown_kills_its_servers() -> Result<()> {
    let manager = started(vec![python("fragile", "fragile.py", &[])]).await?;
    let pid = snapshot_of(&manager, "fragile")?.pid.context("pid")?;
    assert!(!group_members(pid).is_empty());
    drop(manager);
    try_eventually_async(
        format!("group {pid} to empty"),
        Duration::from_secs(5),
        async || group_members(pid).is_empty(),
    )
    .await
    .context("the server outlived its manager")?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_keeps_unchanged_servers_and_swaps_changed_ones() -> Result<()> {
    let manager = started(vec![
        python("keep", "fragile.py", &[]),
        python("change", "fragile.py", &[]),
        python("drop", "fragile.py", &[]),
    ])
    .await?;
    let pids: BTreeMap<String, u32> = manager
        .snapshot()
        .iter()
        .filter_map(|s| Some((s.name.clone(), s.pid?)))
        .collect();
    let mut changed = python("change", "fragile.py", &["--changed"]);
    changed.timeout = Duration::from_secs(5);
    let mut disabled = python("added-disabled", "fragile.py", &[]);
    disabled.enabled = false;
    manager
        .reload(config_of(vec![
            python("keep", "fragile.py", &[]),
            changed,
            python("new", "fragile.py", &[]),
            disabled,
        ]))
        .await;
    assert!(manager.wait_settled(SETTLE).await);
    let after: BTreeMap<String, (ServerStatus, Option<u32>)> = manager
        .snapshot()
        .iter()
        .map(|s| (s.name.clone(), (s.status, s.pid)))
        .collect();
    let names: Vec<&String> = after.keys().collect();
    assert_eq!(names, ["added-disabled", "change", "keep", "new"]);
    assert_eq!(after["keep"], (ServerStatus::Running, Some(pids["keep"])));
    assert_eq!(after["change"].0, ServerStatus::Running);
    assert_ne!(after["change"].1, Some(pids["change"]));
    assert_eq!(after["new"].0, ServerStatus::Running);
    assert_eq!(after["added-disabled"], (ServerStatus::Stopped, None));
    assert!(
        group_members(pids["drop"]).is_empty(),
        "a removed server keeps running"
    );
    assert_eq!(manager.config().servers.len(), 4);
    manager.shutdown().await;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// helpers

/// `.test-deps/mcp/node_modules/.bin/<name>`, or an error naming the set-up script.
fn deps_bin(name: &str) -> Result<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".test-deps/mcp/node_modules/.bin")
        .join(name);
    if !path.exists() {
        bail!(
            "{} is missing: run `scripts/test-deps.sh` from the repository root (it installs the \
             MCP servers pinned in versions.env)",
            path.display()
        );
    }
    Ok(path)
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp")
        .join(name)
}

fn stdio(name: &str, command: &str, args: &[&str]) -> ServerConfig {
    ServerConfig {
        name: name.to_owned(),
        source: PathBuf::from("/test/mcp.json"),
        transport: Transport::Stdio {
            command: command.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: BTreeMap::new(),
            cwd: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
        },
        enabled: true,
        timeout: Duration::from_secs(30),
        startup_timeout: SETTLE,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        tool_naming: Default::default(),
    }
}

fn everything(name: &str) -> ServerConfig {
    // The test fails (loudly) at the first start when the install is missing.
    let bin = deps_bin("mcp-server-everything").unwrap_or_else(|err| panic!("{err:#}"));
    stdio(name, &bin.display().to_string(), &[])
}

fn python(name: &str, script: &str, args: &[&str]) -> ServerConfig {
    let script = fixture(script).display().to_string();
    let mut all = vec!["-u", script.as_str()];
    all.extend_from_slice(args);
    stdio(name, "python3", &all)
}

fn config_of(mut servers: Vec<ServerConfig>) -> McpConfig {
    servers.sort_by(|a, b| a.name.cmp(&b.name));
    McpConfig {
        servers,
        settings: McpSettings::default(),
        errors: Vec::new(),
        notices: Vec::new(),
    }
}

/// A manager with `servers`, started and settled.
async fn started(servers: Vec<ServerConfig>) -> Result<McpManager> {
    let manager = McpManager::new(config_of(servers));
    manager.start_all();
    if !manager.wait_settled(SETTLE).await {
        bail!("servers did not settle: {:?}", manager.snapshot());
    }
    for snapshot in manager.snapshot() {
        if snapshot.status != ServerStatus::Running {
            bail!("{} did not start: {snapshot:?}", snapshot.name);
        }
    }
    Ok(manager)
}

fn never() -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(std::future::pending())
}

async fn call(
    manager: &McpManager,
    server: &str,
    tool: &str,
    arguments: Value,
) -> Result<CallOutcome> {
    Ok(manager
        .call_tool(server, tool, arguments, None, never())
        .await?)
}

/// A call whose result must not be an error result either.
async fn call_ok(
    manager: &McpManager,
    server: &str,
    tool: &str,
    arguments: Value,
) -> Result<CallOutcome> {
    let outcome = call(manager, server, tool, arguments).await?;
    if outcome.is_error {
        bail!("{tool} returned an error result: {outcome:?}");
    }
    Ok(outcome)
}

fn text_of(outcome: &CallOutcome) -> String {
    outcome
        .content
        .iter()
        .filter_map(|c| match c {
            McpContent::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn snapshot_of(manager: &McpManager, name: &str) -> Result<ServerSnapshot> {
    manager
        .snapshot()
        .into_iter()
        .find(|s| s.name == name)
        .with_context(|| format!("no server {name}"))
}

fn status_of(manager: &McpManager, name: &str) -> Result<ServerStatus> {
    Ok(snapshot_of(manager, name)?.status)
}

fn stderr_of(manager: &McpManager, name: &str) -> String {
    snapshot_of(manager, name)
        .map(|s| s.stderr_tail)
        .unwrap_or_default()
}

fn tool_names(manager: &McpManager, name: &str) -> Result<Vec<String>> {
    Ok(snapshot_of(manager, name)?
        .tools
        .into_iter()
        .map(|t| t.name)
        .collect())
}

/// Live (not zombie) processes whose process group is `pgid`.
fn group_members(pgid: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() != Some(&"Z") && fields.get(2) == Some(&pgid.to_string().as_str()) {
            members.push(pid);
        }
    }
    members
}

/// Live processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let alive = std::fs::read_to_string(entry.path().join("stat"))
            .map(|stat| !stat.contains(") Z"))
            .unwrap_or(false);
        if alive && String::from_utf8_lossy(&cmdline).contains(marker) {
            found.push(pid);
        }
    }
    found
}

fn unique_marker(label: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("--marker={label}-{}-{nanos}", std::process::id())
}

fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

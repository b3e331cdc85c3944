//! The `/unipi:info` dashboard end to end: the real `unipi-tui` binary in a PTY with the real
//! Pi 1.6.0 on the scripted model, with a real MCP server (`server-everything` from
//! `.test-deps/mcp`). After one turn, the dashboard's "Today" shows that turn's tokens — the
//! figure worked out here from the session file Pi wrote — and the MCP tab, a capability's group
//! through the seam, shows the server and its bridged tools. `r` refreshes, Esc closes.
//!
//! Also here: both Pi lines write their replies' usage where the dashboard reads it (the
//! session files under the agent directory); `UNIPI_RECORD_FIXTURES=1` records Pi 0.73.1's into
//! `tests/fixtures/sessions/pi-0.73.1-hello.jsonl`, which the unit tests count.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use support::demo::{OfflineModel, START, outer_40_rows, wait_for_idle_prompt};
use support::pi::{PiLine, mcp_bin, pi_install};
use support::sandbox::Sandbox;
use support::workbench::{KITTY_CTRL_D, exit_pi, footer_row, slash};
use unipi_widgets::footer::format_tokens;

const REPLY: Duration = Duration::from_secs(60);
const EXIT: Duration = Duration::from_secs(30);

/// Every `*.jsonl` below `dir`.
fn session_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(session_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "jsonl") {
            files.push(path);
        }
    }
    files
}

/// The assistant messages' usage objects in a session file.
fn reply_usages(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry["type"] == "message" && entry["message"]["role"] == "assistant")
        .map(|entry| entry["message"]["usage"].clone())
        .collect()
}

/// Tokens as the dashboard counts them: input + output + cache writes.
fn counted_tokens(usage: &Value) -> u64 {
    ["input", "output", "cacheWrite"]
        .iter()
        .map(|key| usage[key].as_u64().unwrap())
        .sum()
}

#[test]
fn the_dashboard_shows_todays_turn_and_the_mcp_servers_tools() {
    let sandbox = Sandbox::new();
    let model = OfflineModel::scenario("e2e.toml", &sandbox);
    let everything = mcp_bin("mcp-server-everything").display().to_string();
    let config = sandbox.home.join(".unipi/config/mcp.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let servers = json!({"mcpServers": {"everything": {"command": everything, "args": []}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let mut session = model.spawn(PiLine::Current, &sandbox, &[], &[], outer_40_rows(120));
    wait_for_idle_prompt(&session, &sandbox, "scripted-e2e");
    // The server is up and its tools are bridged: the footer counts them.
    session
        .wait_for("the MCP footer segment", START, |s| {
            footer_row(s).contains("MCP 1/1 ·")
        })
        .unwrap_or_else(|err| panic!("{err:#}\n{}", sandbox.log_tail(40)));
    let footer = session
        .screen_text()
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned();
    let tools: String = footer
        .split("MCP 1/1 · ")
        .nth(1)
        .unwrap()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    assert!(tools.parse::<u32>().unwrap_or(0) > 0, "{footer}");

    session.type_text("hello");
    session.send(b"\r");
    session
        .wait_for_text("SCRIPTED-REPLY: hello from the scripted model", REPLY)
        .unwrap();
    // What Pi wrote for the turn, counted here.
    let agent_dir = sandbox.home.join(".pi/agent");
    let files = session_files(&agent_dir.join("sessions"));
    assert_eq!(files.len(), 1, "{files:?}");
    let usages = reply_usages(&std::fs::read_to_string(&files[0]).unwrap());
    assert!(!usages.is_empty());
    let today = format!(
        "{} tokens",
        format_tokens(usages.iter().map(counted_tokens).sum())
    );

    slash(&session, "/unipi:info", REPLY);
    session.send(b"\r");
    session
        .wait_for("the dashboard's usage tab", REPLY, |s| {
            let text = s.contents();
            text.contains("unipi-tui info")
                && text
                    .lines()
                    .any(|line| line.contains("Today") && line.contains(&today))
        })
        .unwrap_or_else(|err| panic!("{err:#} (wanted {today:?})\n{}", sandbox.log_tail(40)));
    let text = session.screen_text();
    assert!(text.contains("2 MCP"), "the MCP tab is listed:\n{text}");
    assert!(text.contains("scripted-e2e"), "the top model:\n{text}");

    // The MCP tab: the server running with the tools the footer counted.
    session.send(b"\x1b[C");
    let servers = format!("everything  running · {tools} tools");
    session
        .wait_for("the MCP tab", REPLY, |s| {
            let text = s.contents();
            text.contains(&servers) && text.contains(&format!("{tools} bridged to Pi"))
        })
        .unwrap_or_else(|err| panic!("{err:#} (wanted {servers:?})"));
    // A refresh keeps the tab and comes back with the figures.
    session.send(b"r");
    session
        .wait_for("the refreshed MCP tab", REPLY, |s| {
            let text = s.contents();
            text.contains(&servers) && !text.contains("refreshing…")
        })
        .unwrap();
    session.send(b"\x1b");
    session
        .wait_for("the dashboard closed", REPLY, |s| {
            !s.contents().contains("unipi-tui info")
        })
        .unwrap();
    assert_eq!(exit_pi(&mut session, KITTY_CTRL_D, EXIT), 0);
}

/// `showOnBoot: true` in `info.json`: the dashboard opens by itself once Pi's session starts,
/// with the compaction, notifications and web tabs among the capabilities' groups; Esc gives the
/// keys back to Pi.
#[test]
fn show_on_boot_opens_the_dashboard_at_start() {
    let sandbox = Sandbox::new();
    let model = OfflineModel::scenario("e2e.toml", &sandbox);
    let config = sandbox.home.join(".unipi/config/info.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, r#"{"showOnBoot": true}"#).unwrap();
    let mut session = model.spawn(PiLine::Current, &sandbox, &[], &[], outer_40_rows(120));
    session
        .wait_for("the dashboard opened at start", START, |s| {
            s.contents().contains("unipi-tui info")
        })
        .unwrap_or_else(|err| panic!("{err:#}\n{}", sandbox.log_tail(40)));
    let text = session.screen_text();
    for tab in ["Compaction", "Notifications", "Web"] {
        assert!(text.contains(tab), "the {tab} tab is listed:\n{text}");
    }
    session.send(b"\x1b");
    session
        .wait_for("the dashboard closed", REPLY, |s| {
            !s.contents().contains("unipi-tui info")
        })
        .unwrap();
    wait_for_idle_prompt(&session, &sandbox, "scripted-e2e");
    assert_eq!(exit_pi(&mut session, KITTY_CTRL_D, EXIT), 0);
}

/// Both Pi lines write each reply's usage (tokens and priced cost) into their session files, the
/// form the dashboard counts; the legacy line's file is the unit tests' fixture.
#[tokio::test]
async fn both_pi_lines_write_reply_usage_into_their_session_files() {
    use unipi_tui::pi::offline::write_agent_dir;
    use unipi_tui::scripted::{Scenario, start};

    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios/e2e.toml");
    let server = start(Scenario::from_file(&scenario).unwrap())
        .await
        .unwrap();
    for line in [PiLine::Legacy, PiLine::Current] {
        let pi = pi_install(line).unwrap();
        let sandbox = Sandbox::new();
        let agent_dir = sandbox.dir("agent");
        let agent = write_agent_dir(&agent_dir, &server.base_url(), &server.models()).unwrap();
        let output = pi.run(&agent, &sandbox, &["-p", "hello"]).await.unwrap();
        assert!(output.success, "{line:?}: {output:#?}");
        let files = session_files(&agent_dir.join("sessions"));
        assert_eq!(files.len(), 1, "{line:?}: {files:?}");
        let text = std::fs::read_to_string(&files[0]).unwrap();
        let usages = reply_usages(&text);
        assert_eq!(usages.len(), 1, "{line:?}: {text}");
        assert!(counted_tokens(&usages[0]) > 0, "{line:?}: {text}");
        assert!(usages[0]["cost"]["total"].is_number(), "{line:?}: {text}");
        if std::env::var_os("UNIPI_RECORD_FIXTURES").is_some() {
            let text = text.replace(&sandbox.root().display().to_string(), "/tmp/unipi-record");
            let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sessions");
            std::fs::write(
                fixtures.join(format!("pi-{}-hello.jsonl", pi.version)),
                text,
            )
            .unwrap();
        }
    }
    server.shutdown().await;
}

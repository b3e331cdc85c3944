//! MCP end to end: the real `unipi-tui` binary in a PTY with the real Pi 1.6.0, the scripted
//! model server (run here, in the test, so its request log can be read) and the real
//! `@modelcontextprotocol/server-everything` / `server-filesystem` from `.test-deps/mcp`.
//!
//! The MCP config sits where Pi 1.x would read it too (`~/.pi/agent/mcp.json`, with the agent
//! directory there) plus the workbench's own file, so a Pi started without `--no-mcp` would start
//! its own copies and the process counts below would catch it. Every server carries a unique
//! environment tag, which is how its processes are counted. Proven: the model is offered the
//! bridged `mcp__everything__echo`, calls it and reads the server's answer; a helper calls the
//! same server through the same process; two servers whose names sanitise alike clash, the clash
//! is reported in `/unipi:mcp-status` and the footer while the others work; stop and restart from
//! the overlay; four helpers and the main agent share three server processes; after Ctrl+D no
//! server process is left.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use support::demo::{OfflineModel, START, outer_40_rows};
use support::pi::{PiLine, mcp_bin};
use support::procs::{cmdline, processes_with_env};
use support::sandbox::Sandbox;
use support::term::Session;
use support::wait::eventually;
use support::workbench::{KITTY_CTRL_D, exit_pi, footer_row, slash};

const REPLY: Duration = Duration::from_secs(60);
const EXIT: Duration = Duration::from_secs(30);
const ENTER: &[u8] = b"\r";

struct McpWorkbench {
    session: Session,
    model: OfflineModel,
    sandbox: Sandbox,
    /// The value of `MCP_E2E_TAG` in every configured server's environment.
    tag: String,
}

/// Starts the workbench (not `demo`: the scripted server runs here) against the MCP config:
/// `everything` in Pi's user file; `every-thing`, `every_thing` (which clash: both bridge as
/// `mcp__every_thing__*`) and `files` in the workbench's user file.
fn start_workbench() -> McpWorkbench {
    let sandbox = Sandbox::new();
    let home = &sandbox.home;
    let project = &sandbox.project;
    // Pi's agent directory is `~/.pi/agent`, so Pi would read the same `mcp.json`.
    let model = OfflineModel::scenario("mcp.toml", &sandbox);
    let tag = format!("{}-{}", std::process::id(), home.display());
    let everything = mcp_bin("mcp-server-everything").display().to_string();
    let filesystem = mcp_bin("mcp-server-filesystem").display().to_string();
    let stdio = |command: &str, args: Vec<String>| json!({"command": command, "args": args, "env": {"MCP_E2E_TAG": tag}});
    write_json(
        &home.join(".pi/agent/mcp.json"),
        &json!({"mcpServers": {"everything": stdio(&everything, vec![])}}),
    );
    write_json(
        &home.join(".unipi/config/mcp.json"),
        &json!({"mcpServers": {
            "every-thing": stdio(&everything, vec![]),
            "every_thing": stdio(&everything, vec![]),
            "files": stdio(&filesystem, vec![project.display().to_string()]),
        }}),
    );

    let session = model.spawn(PiLine::Current, &sandbox, &[], &[], outer_40_rows(120));
    McpWorkbench {
        session,
        model,
        sandbox,
        tag,
    }
}

fn write_json(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}

impl McpWorkbench {
    /// Pi is up and the servers settled: three running, one (the clash) not, four configured.
    fn wait_ready(&self) {
        self.session
            .wait_for("Pi's prompt with the scripted model", START, |s| {
                let text = s.contents();
                text.contains("scripted-mcp")
                    && (text.contains("pi running") || text.contains("○ idle"))
            })
            .unwrap();
        self.session
            .wait_for("the MCP footer segment", START, |s| {
                footer_row(s).contains("MCP 3/4 ·")
            })
            .unwrap_or_else(|err| panic!("{err:#}\n{}", self.log()));
    }

    fn ask(&self, prompt: &str, expect: &str) {
        self.session.type_text(prompt);
        self.session.send(ENTER);
        self.session
            .wait_for_text(expect, REPLY)
            .unwrap_or_else(|err| {
                let last: Vec<String> = self
                    .model
                    .server
                    .requests()
                    .iter()
                    .map(last_message)
                    .collect();
                panic!("{err:#}\n{}\nlast messages: {last:#?}", self.log_tail())
            });
    }

    fn slash(&self, command: &str) {
        slash(&self.session, command, REPLY);
    }

    /// Live processes of the configured servers (by their environment tag).
    fn server_processes(&self) -> Vec<u32> {
        processes_with_env(&[&format!("MCP_E2E_TAG={}", self.tag)])
    }

    /// Waits (up to 10 s) until exactly `count` server processes run.
    fn wait_server_processes(&self, count: usize) {
        let what = format!("{count} MCP server processes\n{}", self.log_tail());
        eventually(&what, Duration::from_secs(10), || {
            self.server_processes().len() == count
        });
    }

    fn exit(&mut self) -> u32 {
        exit_pi(&mut self.session, KITTY_CTRL_D, EXIT)
    }

    fn log(&self) -> String {
        self.sandbox.log()
    }

    fn log_tail(&self) -> String {
        self.sandbox.log_tail(40)
    }
}

/// The tool names offered in a chat request.
fn offered_tools(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The text of a request's last message.
fn last_message(request: &Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .map(unipi_tui::scripted::message_text)
        .unwrap_or_default()
}

#[test]
fn mcp_tools_reach_the_model_a_helper_shares_the_server_and_clashes_are_reported() {
    let mut wb = start_workbench();
    wb.wait_ready();
    // everything, every-thing and files; every_thing clashed and was disconnected.
    wb.wait_server_processes(3);

    // (1) The model is offered the bridged tool, calls it, and the answer reaches it.
    wb.ask("echo through mcp", "MCP-ECHO-OK");
    let requests = wb.model.server.requests();
    let answered = requests
        .iter()
        .position(|request| last_message(request).contains("Echo: MCP-PAYLOAD-31"))
        .unwrap_or_else(|| panic!("no request carried the echo result: {requests:#?}"));
    assert!(answered > 0);
    let offered = offered_tools(&requests[answered - 1]);
    for tool in [
        "mcp__everything__echo",
        "mcp__everything__get-sum",
        "mcp__every_thing__echo",
    ] {
        let sanitised = tool.replace('-', "_");
        assert_eq!(
            offered.iter().filter(|name| **name == sanitised).count(),
            1,
            "{sanitised} offered once: {offered:?}"
        );
    }
    assert!(
        offered.iter().any(|name| name.starts_with("mcp__files__")),
        "{offered:?}"
    );

    // (2) A helper calls the same server; no second server process starts meanwhile.
    let most = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (most, done, tag) = (most.clone(), done.clone(), wb.tag.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let count = processes_with_env(&[&format!("MCP_E2E_TAG={tag}")]).len();
                most.fetch_max(count, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(30));
            }
        })
    };
    wb.ask("ask a helper to echo", "MCP-HELPER-OK");
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    assert_eq!(
        most.load(Ordering::Relaxed),
        3,
        "server processes while the helper ran"
    );

    // (3) The clash is reported in the overlay, with who called what.
    wb.slash("/unipi:mcp-status");
    wb.session
        .wait_for("the MCP overlay with the clash", REPLY, |s| {
            let text = s.contents();
            text.contains("MCP servers")
                && text.contains("name clash")
                && text.contains("already bridged from MCP server `every-thing`")
                && text.contains("main (called)")
                && text.contains("helper")
        })
        .unwrap_or_else(|err| panic!("{err:#}\n{}", wb.log_tail()));
    // Stop the last server (`files`) and start it again from the overlay.
    wb.session.send(b"G");
    wb.session
        .wait_for("`files` selected", REPLY, |s| {
            s.contents()
                .lines()
                .any(|line| line.contains('▶') && line.contains("files"))
        })
        .unwrap_or_else(|err| panic!("{err:#}\n{}", wb.log_tail()));
    wb.session.send(b"s");
    wb.session
        .wait_for_text("Stopped `files`", REPLY)
        .unwrap_or_else(|err| panic!("{err:#}\n{}", wb.log_tail()));
    wb.wait_server_processes(2);
    wb.session.send(b"r");
    wb.session
        .wait_for_text("Restarted `files`", REPLY)
        .unwrap_or_else(|err| panic!("{err:#}\n{}", wb.log_tail()));
    wb.wait_server_processes(3);
    wb.session.send(b"\x1b");
    wb.session
        .wait_for("overlay closed", REPLY, |s| {
            !s.contents().contains("MCP servers")
        })
        .unwrap();

    // /unipi:mcp-reload applies an edited file: `files` is gone, the others keep running.
    let config = wb.sandbox.home.join(".unipi/config/mcp.json");
    let mut edited: Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    edited["mcpServers"]
        .as_object_mut()
        .unwrap()
        .remove("files");
    write_json(&config, &edited);
    wb.slash("/unipi:mcp-reload");
    wb.session
        .wait_for_text("MCP config reloaded: 3 enabled server(s)", REPLY)
        .unwrap_or_else(|err| panic!("{err:#}\n{}", wb.log_tail()));
    wb.wait_server_processes(2);
    wb.session
        .wait_for("the footer after the reload", REPLY, |s| {
            footer_row(s).contains("MCP 2/3")
        })
        .unwrap();

    // (4) No server outlives the workbench.
    let code = wb.exit();
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
    wb.wait_server_processes(0);
}

/// `"toolNaming": "unipi"` in the project's Unipi MCP file: the model is offered the server's
/// tools as `server__tool`, as the original Unipi named them (and not also as `mcp__…`), calls
/// one by that name and reads the real server's answer; so does a helper whose agent type has a
/// tool allow-list.
#[test]
fn unipi_tool_naming_offers_and_calls_unipi_style_names() {
    let sandbox = Sandbox::new();
    let model = OfflineModel::scenario("mcp.toml", &sandbox);
    let tag = format!("{}-{}-unipi", std::process::id(), sandbox.home.display());
    let everything = mcp_bin("mcp-server-everything").display().to_string();
    write_json(
        &sandbox.project.join(".unipi/config/mcp.json"),
        &json!({"toolNaming": "unipi", "mcpServers": {
            "everything": {"command": everything, "env": {"MCP_E2E_TAG": tag}},
        }}),
    );
    let session = model.spawn(PiLine::Current, &sandbox, &[], &[], outer_40_rows(120));
    let mut wb = McpWorkbench {
        session,
        model,
        sandbox,
        tag,
    };
    wb.session
        .wait_for("Pi's prompt and the MCP server running", START, |s| {
            let text = s.contents();
            text.contains("scripted-mcp") && footer_row(s).contains("MCP 1/1 ·")
        })
        .unwrap_or_else(|err| panic!("{err:#}\n{}", wb.log_tail()));
    wb.ask("echo the unipi way", "UNIPI-NAMING-OK");
    let requests = wb.model.server.requests();
    let offered = offered_tools(&requests[0]);
    assert!(
        offered.iter().any(|name| name == "everything__echo"),
        "{offered:?}"
    );
    assert!(
        !offered.iter().any(|name| name.starts_with("mcp__")),
        "{offered:?}"
    );
    // A helper whose type has a tool allow-list (explore) gets the same names.
    wb.ask("helper with unipi names", "UNIPI-HELPER-OK");
    assert_eq!(wb.exit(), 0);
    wb.wait_server_processes(0);
}

#[test]
fn four_helpers_and_the_main_agent_share_three_server_processes() {
    let mut wb = start_workbench();
    wb.wait_ready();
    wb.ask("start the helper fleet", "FLEET-STARTED");
    // Each helper sleeps only after its MCP echo answered, so four sleepers are four helpers
    // that used the shared server.
    let home = format!("HOME={}", wb.sandbox.home.display());
    let sleepers = || {
        processes_with_env(&[&home])
            .into_iter()
            .filter(|pid| cmdline(*pid).contains("sleep 316"))
            .count()
    };
    eventually(
        format!("four helpers sleeping\n{}", wb.log_tail()),
        Duration::from_secs(60),
        || sleepers() == 4,
    );
    assert_eq!(
        wb.server_processes().len(),
        3,
        "1 main agent + 4 helpers on 3 servers"
    );
    let code = wb.exit();
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
    wb.wait_server_processes(0);
    eventually(
        "no helper's tool call outlives the workbench",
        Duration::from_secs(10),
        || sleepers() == 0,
    );
}

/// An SSH drop (SIGHUP to the workbench) takes every MCP server with it, like Ctrl+D does.
#[test]
fn a_sighup_to_the_workbench_stops_every_mcp_server() {
    let mut wb = start_workbench();
    wb.wait_ready();
    wb.wait_server_processes(3);
    let workbench = wb.session.pid().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(workbench).unwrap()),
        nix::sys::signal::Signal::SIGHUP,
    )
    .unwrap();
    assert_eq!(wb.session.wait_exit(EXIT).unwrap(), 129);
    wb.wait_server_processes(0);
}

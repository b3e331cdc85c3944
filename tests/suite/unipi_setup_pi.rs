//! An existing Unipi setup under `unipi-tui`, end to end: the real workbench binary in a PTY with
//! the real Pi, the scripted model server run here, and the real MCP servers of
//! `.test-deps/mcp`. The home and the project (apart, the project not under HOME) are laid out
//! exactly as a Unipi user's, with none of our own files: Unipi's `~/.unipi/config/mcp/
//! mcp-config.json` and `mcp/config.json` (which switches one server off), and the project's
//! `.unipi/config/mcp/mcp-config.json`. Proven: the servers Unipi would start start (and the
//! switched-off one does not), their tools are offered to the model, and the model's call of one
//! reaches the server and its answer comes back.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::demo::{OfflineModel, START, outer_40_rows};
use support::pi::{PiLine, mcp_bin};
use support::procs::processes_with_env;
use support::sandbox::Sandbox;
use support::wait::eventually;
use support::workbench::{KITTY_CTRL_D, exit_pi, footer_row};

const REPLY: Duration = Duration::from_secs(60);

fn write_json(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}

#[test]
fn a_unipi_users_mcp_files_start_the_same_servers_and_their_tools_answer_the_model() {
    let sandbox = Sandbox::new();
    let (home, project) = (&sandbox.home, &sandbox.project);
    assert!(!project.starts_with(home), "the project is not under HOME");
    let model = OfflineModel::scenario("mcp.toml", &sandbox);
    let tag = format!("{}-{}", std::process::id(), home.display());
    let everything = mcp_bin("mcp-server-everything").display().to_string();
    let filesystem = mcp_bin("mcp-server-filesystem").display().to_string();
    // Unipi's shape: `command`, `args` (which Unipi required) and `env`.
    let stdio = |command: &str, args: Vec<String>| json!({"command": command, "args": args, "env": {"MCP_E2E_TAG": tag}});
    write_json(
        &home.join(".unipi/config/mcp/mcp-config.json"),
        &json!({"mcpServers": {
            "everything": stdio(&everything, vec![]),
            "stale": stdio(&everything, vec![]),
        }}),
    );
    write_json(
        &home.join(".unipi/config/mcp/config.json"),
        &json!({
            "servers": {
                "everything": {"enabled": true, "addedAt": "2026-03-01T10:00:00.000Z"},
                "stale": {"enabled": false, "addedAt": "2026-03-01T10:00:00.000Z"},
            },
            "sync": {"enabled": true, "lastSyncAt": null, "syncIntervalMs": 86_400_000},
        }),
    );
    write_json(
        &project.join(".unipi/config/mcp/mcp-config.json"),
        &json!({"mcpServers": {"files": stdio(&filesystem, vec![project.display().to_string()])}}),
    );
    for ours in [".unipi/config/mcp.json", ".pi/agent/mcp.json"] {
        assert!(!home.join(ours).exists(), "no file of ours: {ours}");
    }

    let mut session = model.spawn(PiLine::Current, &sandbox, &[], &[], outer_40_rows(120));
    session
        .wait_for("Pi's prompt and the MCP footer segment", START, |s| {
            s.contents().contains("scripted-mcp") && footer_row(s).contains("MCP 2/")
        })
        .unwrap_or_else(|err| panic!("{err:#}\n{}", sandbox.log_tail(40)));
    // `everything` and `files` run; `stale` (switched off in Unipi's config.json) does not.
    let servers = || processes_with_env(&[&format!("MCP_E2E_TAG={tag}")]).len();
    eventually("two MCP server processes", Duration::from_secs(10), || {
        servers() == 2
    });

    session.type_text("echo through mcp");
    session.send(b"\r");
    session
        .wait_for_text("MCP-ECHO-OK", REPLY)
        .unwrap_or_else(|err| panic!("{err:#}\n{}", sandbox.log_tail(40)));
    let requests = model.server.requests();
    let answered = requests
        .iter()
        .position(|request| {
            let last = request["messages"].as_array().and_then(|m| m.last());
            last.map(unipi_tui::scripted::message_text)
                .is_some_and(|text| text.contains("Echo: MCP-PAYLOAD-31"))
        })
        .unwrap_or_else(|| panic!("no request carried the echo result: {requests:#?}"));
    let offered: Vec<&str> = requests[answered - 1]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"mcp__everything__echo"), "{offered:?}");
    assert!(
        offered.iter().any(|name| name.starts_with("mcp__files__")),
        "the project's server: {offered:?}"
    );
    assert!(
        !offered.iter().any(|name| name.starts_with("mcp__stale__")),
        "the switched-off server: {offered:?}"
    );

    exit_pi(&mut session, KITTY_CTRL_D, Duration::from_secs(30));
    eventually("no MCP server left", Duration::from_secs(10), || {
        servers() == 0
    });
}

/// `unipi-tui migrate` as a user runs it: in the project, with HOME apart. The dry run writes
/// nothing; `--apply` writes our `mcp.json` (0600) and says so; Unipi's file stays as it was.
#[test]
fn migrate_from_the_command_line_dry_run_then_apply() {
    use std::os::unix::fs::PermissionsExt as _;
    let sandbox = Sandbox::new();
    let (home, project) = (&sandbox.home, &sandbox.project);
    let unipi = project.join(".unipi/config/mcp/mcp-config.json");
    write_json(
        &unipi,
        &json!({"mcpServers": {"db": {"command": "db-mcp", "args": [], "env": {"TOKEN": "t"}}}}),
    );
    let ours = project.join(".unipi/config/mcp.json");
    let migrate = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_unipi-tui"))
            .arg("migrate")
            .args(args)
            .current_dir(project)
            .env_clear()
            .envs(sandbox.env())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "{text}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        text
    };
    let dry = migrate(&[]);
    assert!(dry.contains("dry run, nothing is written"), "{dry}");
    let heading = format!("{} → {}", unipi.display(), ours.display());
    assert!(dry.contains(&heading), "{dry}");
    assert!(dry.contains("  mcpServers.db → mcpServers.db\n"), "{dry}");
    assert!(!ours.exists() && !home.join(".unipi").exists());

    let applied = migrate(&["--apply"]);
    assert!(
        applied.contains(&format!("wrote {}\n", ours.display())),
        "{applied}"
    );
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&ours).unwrap()).unwrap();
    assert_eq!(
        written,
        json!({"mcpServers": {"db": {"command": "db-mcp", "args": [], "env": {"TOKEN": "t"}}}})
    );
    let mode = std::fs::metadata(&ours).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(unipi.exists(), "Unipi's file stays");
}

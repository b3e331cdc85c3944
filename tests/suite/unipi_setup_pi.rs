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
use support::demo::{OfflineModel, START, outer_40_rows, wait_for_idle_prompt};
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

/// A Unipi user's whole setup, every file unipi-tui reads from Unipi, with real values and none of
/// our own files: the MCP files, Pi's `settings.json` with `unipi.askUser` and `unipi.footer`,
/// the compactor's `config.json` with `cooldownMs`, `subagents.json` switching the `work` type off,
/// the web-api `config.json`, and the old compactor's `session.db`. Proven through what the user
/// and the model see: no config problem at start; the MCP server's tool answers; the footer shows
/// the hostname `unipi.footer` switched on; `spawn_helper` is offered without `work` and a call
/// naming it is refused naming `subagents.json`; `vcc_recall` finds the old database's text.
#[test]
fn a_unipi_users_whole_setup_starts_without_a_problem_and_every_file_takes_effect() {
    let sandbox = Sandbox::new();
    let (home, project) = (&sandbox.home, &sandbox.project);
    assert!(!project.starts_with(home), "the project is not under HOME");
    let model = OfflineModel::scenario("unipi-setup.toml", &sandbox);
    let tag = format!("{}-{}", std::process::id(), home.display());
    let everything = mcp_bin("mcp-server-everything").display().to_string();
    write_json(
        &home.join(".unipi/config/mcp/mcp-config.json"),
        &json!({"mcpServers": {"everything": {"command": everything, "args": [], "env": {"MCP_E2E_TAG": tag}}}}),
    );
    write_json(
        &home.join(".unipi/config/mcp/config.json"),
        &json!({
            "servers": {"everything": {"enabled": true, "addedAt": "2026-03-01T10:00:00.000Z"}},
            "sync": {"enabled": true, "lastSyncAt": null, "syncIntervalMs": 86_400_000},
        }),
    );
    // Pi's settings.json (in the sandbox's PI_CODING_AGENT_DIR), as Unipi's extensions left it.
    let settings = model.agent.dir.join("settings.json");
    unipi_tui::demo::merge_pi_settings(
        &settings,
        &json!({"unipi": {
            "askUser": {"enabled": true, "notifyOnAsk": false,
                        "allowedFormats": {"freeform": true}},
            "footer": {"enabled": true, "preset": "default", "separator": " | ",
                       "iconStyle": "nerd", "showFullLabels": false,
                       "groups": {"core": {"show": true, "segments": {"hostname": true}}}},
        }})
        .to_string(),
    )
    .unwrap();
    write_json(
        &home.join(".unipi/config/compactor/config.json"),
        &json!({"overrideDefaultCompaction": true,
                "autoCompaction": {"enabled": true, "cooldownMs": 120_000}}),
    );
    let subagents = home.join(".unipi/config/subagents.json");
    write_json(
        &subagents,
        &json!({"enabled": true, "maxConcurrent": 4, "types": {"work": {"enabled": false}}}),
    );
    write_json(
        &home.join(".unipi/config/web-api/config.json"),
        &json!({
            "providers": {"duckduckgo": {"enabled": true}, "tavily": {"enabled": false}},
            "cache": {"enabled": true, "ttlMs": 3_600_000},
            "smartFetch": {"browser": "chrome_145", "maxChars": 50_000, "timeoutMs": 30_000,
                           "batchConcurrency": 3, "removeImages": true},
        }),
    );
    support::unipi::unipi_session_db(&sandbox);
    for ours in [
        ".unipi/config/mcp.json",
        ".unipi/config/footer.json",
        ".unipi/config/ask-user.json",
        ".unipi/config/compactor.json",
        ".unipi/config/web.json",
    ] {
        assert!(!home.join(ours).exists(), "no file of ours: {ours}");
    }

    let mut session = model.spawn(PiLine::Current, &sandbox, &[], &[], outer_40_rows(160));
    wait_for_idle_prompt(&session, &sandbox, "scripted-unipi");
    let host = nix::unistd::gethostname()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    session
        .wait_for(
            "the MCP segment and the hostname in the footer",
            START,
            |s| {
                let footer = footer_row(s);
                footer.contains("MCP 1/") && footer.contains(&format!("@{host}"))
            },
        )
        .unwrap_or_else(|err| panic!("{err:#}\n{}", sandbox.log_tail(40)));
    let log = sandbox.log();
    let problems: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("start-up:") && !line.contains("Imported the original Unipi"))
        .collect();
    assert!(problems.is_empty(), "a problem at start: {problems:#?}");
    assert!(
        !session.screen_text().contains(".unipi/config/"),
        "no config file named on screen:\n{}",
        session.screen_text()
    );

    let ask = |session: &support::term::Session, prompt: &str, marker: &str| {
        session.type_text(prompt);
        session.send(b"\r");
        session
            .wait_for_text(marker, REPLY)
            .unwrap_or_else(|err| panic!("{err:#}\n{}", sandbox.log_tail(40)));
        session
            .wait_for("Pi settled", REPLY, support::workbench::settled)
            .unwrap();
    };
    ask(&session, "echo through mcp", "MCP-ECHO-OK");
    ask(&session, "start a work helper", "WORK-REFUSED");
    ask(&session, "search the unipi history", "LEGACY-RECALL-FOUND");

    let requests = model.server.requests();
    let last_text = |request: &Value| {
        let last = request["messages"].as_array().and_then(|m| m.last());
        last.map(unipi_tui::scripted::message_text)
            .unwrap_or_default()
    };
    let refusal = format!(
        "helper type \"work\" is disabled (enabled: false in {})",
        subagents.display()
    );
    let refused = requests
        .iter()
        .position(|request| last_text(request).contains(&refusal))
        .unwrap_or_else(|| panic!("no request carried {refusal:?}: {requests:#?}"));
    let spawn_tool = requests[refused]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["function"]["name"] == "spawn_helper")
        .expect("spawn_helper is offered")
        .to_string();
    assert!(spawn_tool.contains("explore ("), "{spawn_tool}");
    assert!(!spawn_tool.contains("work ("), "{spawn_tool}");
    assert!(
        requests
            .iter()
            .any(|request| last_text(request).contains("codename AMBER-OWL-7 is already tagged")),
        "vcc_recall's result carries the old database's text"
    );
    let log = sandbox.log();
    assert!(
        log.contains("1 events and 1 resume snapshots of 1 sessions"),
        "the old database was imported"
    );

    exit_pi(&mut session, KITTY_CTRL_D, Duration::from_secs(30));
    let servers = || processes_with_env(&[&format!("MCP_E2E_TAG={tag}")]).len();
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

//! The desktop notification for real: a private session D-Bus (`dbus-daemon`) with a real
//! notification daemon on it (`dunst`, drawing on a virtual X server, `Xvfb`), and the real
//! `unipi-tui` with the real Pi 1.6.0 against the scripted model. What the daemon received is read
//! back from its own history (`dunstctl history`).
//!
//! Proven: `/unipi:notify-test` reaches the daemon; `notify_user` is held back while the terminal
//! has focus (the workbench learns it from the terminal's focus reports) and reaches the daemon,
//! as critical, once the terminal has lost focus. Without a session bus (the variable unset, or
//! pointing at nothing) the first notification says there is none, once, in Pi, with how to turn
//! the platform off, and later ones do not try again.
//!
//! The daemon's packages are installed by `scripts/test-deps.sh` (Debian: `dunst`, `xvfb`,
//! `dbus-daemon`); without them this test fails, naming them.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::demo::{OfflineModel, START, wait_for_idle_prompt};
use support::pi::PiLine;
use support::sandbox::Sandbox;
use support::term::OuterOptions;
use support::wait::eventually;
use support::workbench::{KITTY_CTRL_D, exit_pi, slash};

const REPLY: Duration = Duration::from_secs(60);
const EXIT: Duration = Duration::from_secs(30);

/// A virtual X server, a session bus and dunst on both; all stopped on drop.
struct Desktop {
    children: Vec<Child>,
    bus: String,
    display: String,
    _dir: tempfile::TempDir,
}

/// `program` on PATH, or a failure naming what to install.
fn require(program: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "`{program}` is not installed: the desktop-notification test needs a session \
                 D-Bus with a notification daemon. Run `scripts/test-deps.sh` (it installs the \
                 Debian packages dunst, xvfb and dbus-daemon)"
            )
        })
}

/// The first line `child` writes to stdout.
fn first_line(child: &mut Child, what: &str) -> String {
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .unwrap_or_else(|err| panic!("reading {what}: {err}"));
    let line = line.trim().to_owned();
    assert!(!line.is_empty(), "{what} printed nothing (did it start?)");
    line
}

impl Desktop {
    fn start() -> Desktop {
        let (xvfb, dbus, dunst) = (require("Xvfb"), require("dbus-daemon"), require("dunst"));
        require("dunstctl");
        let dir = tempfile::tempdir().unwrap();
        let mut children = Vec::new();
        // Xvfb picks a free display and writes its number to the given descriptor (stdout).
        let mut x = Command::new(xvfb)
            .args([
                "-displayfd",
                "1",
                "-screen",
                "0",
                "640x480x24",
                "-nolisten",
                "tcp",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let display = format!(":{}", first_line(&mut x, "Xvfb's display number"));
        children.push(x);
        let mut bus = Command::new(dbus)
            .args(["--session", "--nofork", "--print-address=1"])
            .arg(format!("--address=unix:dir={}", dir.path().display()))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let address = first_line(&mut bus, "dbus-daemon's address");
        children.push(bus);
        let config = dir.path().join("dunstrc");
        // Critical notifications are marked in what the daemon keeps (its history has no
        // urgency of its own).
        std::fs::write(
            &config,
            "[global]\n    timeout = 0\n[critical]\n    msg_urgency = critical\n    \
             format = \"CRITICAL %s\\n%b\"\n",
        )
        .unwrap();
        let daemon = Command::new(dunst)
            .arg("-config")
            .arg(&config)
            .env("DISPLAY", &display)
            .env("DBUS_SESSION_BUS_ADDRESS", &address)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        children.push(daemon);
        let desktop = Desktop {
            children,
            bus: address,
            display,
            _dir: dir,
        };
        eventually("dunst owns org.freedesktop.Notifications", START, || {
            desktop.dunstctl(&["is-paused"]).trim() == "false"
        });
        desktop
    }

    fn dunstctl(&self, args: &[&str]) -> String {
        let output = Command::new("dunstctl")
            .args(args)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.bus)
            .env("DISPLAY", &self.display)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Every notification the daemon received (shown ones are closed into its history first):
    /// (appname, summary, body, the message as the daemon formatted it).
    fn received(&self) -> Vec<(String, String, String, String)> {
        self.dunstctl(&["close-all"]);
        let history: Value =
            serde_json::from_str(&self.dunstctl(&["history"])).unwrap_or(Value::Null);
        let field = |entry: &Value, key: &str| {
            entry[key]["data"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_default()
        };
        history["data"][0]
            .as_array()
            .into_iter()
            .flatten()
            .map(|entry| {
                (
                    field(entry, "appname"),
                    field(entry, "summary"),
                    field(entry, "body"),
                    field(entry, "message"),
                )
            })
            .collect()
    }
}

impl Drop for Desktop {
    fn drop(&mut self) {
        for child in self.children.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn write_json(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}

#[test]
fn desktop_notifications_reach_a_real_daemon_and_wait_for_the_terminal_to_lose_focus() {
    let desktop = Desktop::start();
    let sandbox = Sandbox::new();
    let model = OfflineModel::scenario("ask.toml", &sandbox);
    write_json(
        &sandbox.home.join(".unipi/config/notify/config.json"),
        &json!({"native": {"enabled": true}, "terminal": {"enabled": false},
                "silenceAfterInputSeconds": 0,
                "events": {"agent_end": {"enabled": false, "platforms": []}}}),
    );
    let bus = [("DBUS_SESSION_BUS_ADDRESS", desktop.bus.as_str())];
    let mut session = model.spawn(
        PiLine::Current,
        &sandbox,
        &[],
        &bus,
        OuterOptions::default(),
    );
    wait_for_idle_prompt(&session, &sandbox, "scripted-ask");

    // The test command goes to the desktop whatever the focus.
    slash(&session, "/unipi:notify-test", REPLY);
    session.wait_for_text("✓ Native: sent", REPLY).unwrap();
    eventually("the daemon got the test notification", REPLY, || {
        desktop.received().iter().any(|(app, summary, body, _)| {
            app == "unipi-tui"
                && summary == "Pi — Test Notification"
                && body.starts_with("Test notification sent at ")
        })
    });

    // The terminal has focus (it has sent no focus-out): notify_user leaves the desktop alone.
    let ask = |session: &support::term::Session| {
        session.type_text("notify me please");
        session.send(b"\r");
    };
    ask(&session);
    session.wait_for_text("NOTIFY-CALLED", REPLY).unwrap();
    eventually("the dispatcher's outcome in the log", REPLY, || {
        sandbox
            .log()
            .contains("notify: agent_tool → native: Suppressed(\"the terminal has focus\")")
    });
    assert!(
        !desktop
            .received()
            .iter()
            .any(|(_, _, body, _)| body == "NATIVE-PAYLOAD"),
        "sent while the terminal had focus"
    );

    // The terminal reports it lost focus: now the notification reaches the desktop.
    session.send(b"\x1b[O");
    ask(&session);
    eventually("the daemon got the agent's notification", REPLY, || {
        desktop
            .received()
            .iter()
            .any(|(app, summary, body, shown)| {
                app == "unipi-tui"
                    && summary == "From the agent"
                    && body == "NATIVE-PAYLOAD"
                    && shown.starts_with("CRITICAL From the agent")
            })
    });
    session.send(b"\x1b[I");
    let code = exit_pi(&mut session, KITTY_CTRL_D, EXIT);
    assert_eq!(code, 0, "screen:\n{}", session.screen_text());
}

/// The workbench with only the desktop platform on, `env` added, the terminal out of focus (so
/// the desktop is tried); `notify_user` is called twice.
fn without_a_bus(env: &[(&str, &str)], told: &str) {
    let sandbox = Sandbox::new();
    let model = OfflineModel::scenario("ask.toml", &sandbox);
    write_json(
        &sandbox.home.join(".unipi/config/notify/config.json"),
        &json!({"native": {"enabled": true}, "terminal": {"enabled": false},
                "silenceAfterInputSeconds": 0,
                "events": {"agent_end": {"enabled": false, "platforms": []}}}),
    );
    let mut session = model.spawn(PiLine::Current, &sandbox, &[], env, OuterOptions::default());
    wait_for_idle_prompt(&session, &sandbox, "scripted-ask");
    session.send(b"\x1b[O");
    let ask = |session: &support::term::Session| {
        session.type_text("notify me please");
        session.send(b"\r");
    };
    ask(&session);
    // Pi shows the one notice: what is missing and how to turn the platform off.
    session
        .wait_for_text("Desktop notifications stopped: no D-Bus session bus", REPLY)
        .unwrap_or_else(|err| panic!("{err:#}\nlog:\n{}", sandbox.log_tail(30)));
    session
        .wait_for_text("/unipi:notify-settings", REPLY)
        .unwrap();
    let log = sandbox.log();
    assert!(log.contains(told), "{log}");
    assert!(
        log.contains(
            "Turn the native platform off with /unipi:notify-settings (or \"native\": \
             {\"enabled\": false} in ~/.unipi/config/notify/config.json)."
        ),
        "{log}"
    );
    assert!(
        log.contains("notify: agent_tool → native failed: no D-Bus session bus"),
        "{log}"
    );

    // The next notification does not try the desktop again, and says nothing more.
    ask(&session);
    eventually("the second notification skipped the desktop", REPLY, || {
        sandbox
            .log()
            .contains("notify: agent_tool → native: Suppressed(\"no D-Bus session bus\")")
    });
    let log = sandbox.log();
    assert_eq!(
        log.matches("Desktop notifications stopped").count(),
        1,
        "one notice: {log}"
    );
    assert_eq!(
        log.matches("native failed").count(),
        1,
        "one failure: {log}"
    );
    session.send(b"\x1b[I");
    let code = exit_pi(&mut session, KITTY_CTRL_D, EXIT);
    assert_eq!(code, 0, "screen:\n{}", session.screen_text());
}

#[test]
fn without_a_session_bus_the_desktop_is_tried_once_and_the_user_told() {
    without_a_bus(&[], "DBUS_SESSION_BUS_ADDRESS is not set");
}

#[test]
fn with_a_session_bus_address_that_leads_nowhere_the_desktop_is_tried_once() {
    let nowhere = tempfile::tempdir().unwrap();
    let address = format!("unix:path={}/no-bus", nowhere.path().display());
    without_a_bus(
        &[("DBUS_SESSION_BUS_ADDRESS", address.as_str())],
        &format!("no D-Bus session bus at \"{address}\""),
    );
}

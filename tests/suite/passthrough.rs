//! The pane's terminal protocol end to end, with a stand-in child
//! (`tests/fixtures/bin/echo-child.py`) instead of Pi: it sets modes the way Pi does and echoes
//! every byte it receives, so each test can check exactly what reaches the child (keys in its
//! negotiated mode, focus, paste) and what reaches the outer terminal (clipboard, notifications,
//! bell, title), plus exit codes, signals and terminal restoration on every exit path.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use support::procs::{alive, children};
use support::sandbox::Sandbox;
use support::term::{OuterModes, OuterOptions, Session};
use support::wait::eventually;

const WAIT: Duration = Duration::from_secs(20);

struct Child {
    session: Session,
    _sandbox: Sandbox,
}

fn echo_child() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bin/echo-child.py")
}

/// Starts the workbench with the echo child; `setup` are escape sequences the child writes first.
fn start(setup: &[&str], extra_env: &[(&str, String)], outer: OuterOptions) -> Child {
    start_in(Sandbox::new(), setup, extra_env, outer)
}

/// [`start`] in a prepared sandbox (config files already written).
fn start_in(
    sandbox: Sandbox,
    setup: &[&str],
    extra_env: &[(&str, String)],
    outer: OuterOptions,
) -> Child {
    let child = echo_child();
    let mut args = vec!["--pi-bin", child.to_str().unwrap(), "--"];
    args.extend_from_slice(setup);
    let mut env = sandbox.env();
    env.extend(extra_env.iter().map(|(k, v)| (*k, v.clone())));
    let session = Session::spawn(
        Path::new(env!("CARGO_BIN_EXE_unipi-tui")),
        &args,
        &env,
        &sandbox.project,
        outer,
    )
    .unwrap();
    session.wait_for_text("READY", WAIT).unwrap();
    Child {
        session,
        _sandbox: sandbox,
    }
}

impl Child {
    /// Sends `input` and waits until the child reports having received exactly `expected`.
    fn expect_received(&self, input: &[u8], expected: &str) {
        self.session.send(input);
        self.session
            .wait_for_text(&format!("GOT {expected}"), WAIT)
            .unwrap();
    }

    fn quit(&mut self) -> u32 {
        self.session.send(b"Q");
        self.session.wait_exit(WAIT).unwrap()
    }
}

#[test]
fn keys_reach_the_child_in_the_kitty_mode_it_pushed() {
    // The outer terminal speaks kitty; the child pushed "disambiguate | event types | alternate
    // keys" like Pi does.
    let mut child = start(&["\\e[>7u"], &[], OuterOptions::default());
    child.expect_received(b"\x1b[13;2u", r"b'\x1b[13;2u'"); // Shift+Enter
    child.expect_received(b"\x1b[1;5C", r"b'\x1b[1;5C'"); // Ctrl+Right
    child.expect_received(b"\x1b[Z", r"b'\x1b[9;2u'"); // Shift+Tab, sent by the terminal as CSI Z
    child.expect_received(b"\x1b[120;3u", r"b'\x1b[120;3u'"); // Alt+x
    child.expect_received(b"\x1b[15~", r"b'\x1b[15~'"); // F5
    child.expect_received("é".as_bytes(), r"b'\xc3\xa9'"); // text passes as text
    assert_eq!(child.quit(), 0);
    assert_eq!(child.session.modes(), OuterModes::restored());
}

#[test]
fn keys_reach_the_child_in_modify_other_keys_form_whatever_the_outer_terminal_sent() {
    let outer = OuterOptions {
        kitty: false,
        ..OuterOptions::default()
    };
    // The child asked for modifyOtherKeys level 2; the outer terminal sends xterm forms.
    let mut child = start(&["\\e[>4;2m"], &[], outer);
    child.expect_received(b"\x1b[27;2;13~", r"b'\x1b[27;2;13~'"); // Shift+Enter
    child.expect_received(b"\x1bx", r"b'\x1b[27;3;120~'"); // Alt+x, as xterm's level 2 sends it
    child.expect_received(b"\x1b[1;5D", r"b'\x1b[1;5D'"); // Ctrl+Left
    child.expect_received(b"\x1b[Z", r"b'\x1b[Z'"); // Shift+Tab
    child.expect_received(b"\x1b[15;5~", r"b'\x1b[15;5~'"); // Ctrl+F5
    assert_eq!(child.quit(), 0);
}

#[test]
fn f1_opens_the_help_overlay_instead_of_reaching_the_child() {
    let mut child = start(&[], &[], OuterOptions::default());
    child.session.send(b"\x1bOP");
    child.session.wait_for_text("unipi-tui keys", WAIT).unwrap();
    child
        .session
        .wait_for_text("Every other key goes to Pi", WAIT)
        .unwrap();
    child.session.send(b"\x1b");
    child
        .session
        .wait_for("overlay closed", WAIT, |s| {
            !s.contents().contains("unipi-tui keys")
        })
        .unwrap();
    // Esc closed the overlay and did not reach the child; the next key does.
    child.expect_received(b"a", "b'a'");
    assert!(!child.session.screen_text().contains(r"GOT b'\x1b'"));
    assert_eq!(child.quit(), 0);
}

#[test]
fn focus_and_bracketed_paste_are_forwarded_when_the_child_asked_for_them() {
    let mut child = start(&["\\e[?1004h\\e[?2004h"], &[], OuterOptions::default());
    child.expect_received(b"\x1b[I", r"b'\x1b[I'");
    child.expect_received(b"\x1b[O", r"b'\x1b[O'");
    child.expect_received(
        b"\x1b[200~two\nlines\x1b[201~",
        r"b'\x1b[200~two\nlines\x1b[201~'",
    );
    assert_eq!(child.quit(), 0);
}

#[test]
fn without_focus_mode_and_bracketed_paste_the_child_gets_plain_text_only() {
    let mut child = start(&[], &[], OuterOptions::default());
    // Focus events are not forwarded; the paste arrives unbracketed with CR line ends.
    child.session.send(b"\x1b[I");
    child.expect_received(b"\x1b[200~two\nlines\x1b[201~", r"b'two\rlines'");
    assert!(!child.session.screen_text().contains(r"\x1b[I"));
    assert_eq!(child.quit(), 0);
}

#[test]
fn clipboard_notifications_bell_and_title_reach_the_outer_terminal() {
    let setup =
        "\\e]52;c;aGVsbG8=\\a\\e]9;build done\\a\\e]777;notify;Pi;needs you\\a\\a\\e]2;pi title\\a";
    let mut child = start(&[setup], &[], OuterOptions::default());
    let raw = String::from_utf8_lossy(&child.session.raw_output()).into_owned();
    for needle in [
        "\x1b]52;c;aGVsbG8=",
        "\x1b]9;build done",
        "\x1b]777;notify;Pi;needs you",
        "\x07",
        "\x1b]2;pi title",
    ] {
        assert!(raw.contains(needle), "{needle:?} not forwarded in {raw:?}");
    }
    assert_eq!(child.quit(), 0);
}

#[test]
fn inside_tmux_notifications_are_wrapped_for_passthrough() {
    let setup = "\\e]9;build done\\a";
    let mut child = start(
        &[setup],
        &[("TMUX", "/tmp/tmux-0/default,1,0".into())],
        OuterOptions::default(),
    );
    let raw = String::from_utf8_lossy(&child.session.raw_output()).into_owned();
    assert!(
        raw.contains("\x1bPtmux;\x1b\x1b]9;build done"),
        "no tmux DCS passthrough in {raw:?}"
    );
    assert_eq!(child.quit(), 0);
}

#[test]
fn the_child_exit_status_is_the_workbench_exit_status_and_its_last_lines_are_shown() {
    let mut child = start(
        &[],
        &[("UNIPI_TEST_EXIT", "7".into())],
        OuterOptions::default(),
    );
    assert_eq!(child.quit(), 7);
    assert_eq!(child.session.modes(), OuterModes::restored());
    child
        .session
        .wait_for_text("Pi exited with status 7", WAIT)
        .unwrap();
    child
        .session
        .wait_for_text("error: something went wrong", WAIT)
        .unwrap();
}

#[test]
fn sighup_sigterm_and_sigint_stop_the_child_and_restore_the_terminal() {
    for (signal, code) in [
        (nix::sys::signal::Signal::SIGHUP, 129),
        (nix::sys::signal::Signal::SIGTERM, 143),
        (nix::sys::signal::Signal::SIGINT, 130),
    ] {
        let mut child = start(&["\\e[?1049h\\e[?1000h"], &[], OuterOptions::default());
        let workbench = child.session.pid().unwrap();
        let grandchild = children(workbench);
        assert!(!grandchild.is_empty(), "the child runs");
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(workbench).unwrap()),
            signal,
        )
        .unwrap();
        assert_eq!(child.session.wait_exit(WAIT).unwrap(), code, "{signal}");
        assert_eq!(child.session.modes(), OuterModes::restored(), "{signal}");
        for pid in grandchild {
            assert!(!alive(pid), "{signal}: child {pid} survived the workbench");
        }
    }
}

#[test]
fn a_panic_restores_the_terminal_and_stops_the_child() {
    let mut child = start(
        &["\\e[?1049h"],
        &[("UNIPI_TUI_TEST_PANIC_ON_KEY", "1".into())],
        OuterOptions::default(),
    );
    let workbench = child.session.pid().unwrap();
    let grandchild = children(workbench);
    child.session.send(b"!");
    let code = child.session.wait_exit(WAIT).unwrap();
    assert_ne!(code, 0);
    assert_eq!(child.session.modes(), OuterModes::restored());
    for pid in grandchild {
        eventually(format!("child {pid} gone after the panic"), WAIT, || {
            !alive(pid)
        });
    }
}

#[test]
fn a_broken_keymap_is_reported_with_file_and_line_and_the_defaults_still_work() {
    let sandbox = Sandbox::new();
    sandbox.write(
        &sandbox.home.join(".config/unipi-tui/keymap.toml"),
        "[bindings]\n\"f2\" = \"help\"\n\"f3\" = \"no.such.action\"\n",
    );
    let mut child = start_in(sandbox, &[], &[], OuterOptions::default());
    child
        .session
        .wait_for_text("Start-up problems", WAIT)
        .unwrap();
    child.session.wait_for_text("keymap.toml:3:", WAIT).unwrap();
    child.session.send(b"\x1b");
    child
        .session
        .wait_for("notice closed", WAIT, |s| {
            !s.contents().contains("Start-up problems")
        })
        .unwrap();
    // The good entry of the user file works, and so do the defaults.
    child.session.send(b"\x1bOQ"); // F2
    child.session.wait_for_text("unipi-tui keys", WAIT).unwrap();
    child.session.send(b"\x1b");
    child
        .session
        .wait_for("help closed", WAIT, |s| {
            !s.contents().contains("unipi-tui keys")
        })
        .unwrap();
    child.session.send(b"\x1bOP"); // F1
    child.session.wait_for_text("unipi-tui keys", WAIT).unwrap();
    child.session.send(b"\x1b");
    child
        .session
        .wait_for("help closed", WAIT, |s| {
            !s.contents().contains("unipi-tui keys")
        })
        .unwrap();
    assert_eq!(child.quit(), 0);
}

#[test]
fn help_and_version_describe_the_workbench_and_pass_through() {
    let bin = env!("CARGO_BIN_EXE_unipi-tui");
    let help = std::process::Command::new(bin)
        .arg("--help")
        .output()
        .unwrap();
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    for needle in [
        "--pi-bin",
        "--log-level",
        "UNIPI_PI_BIN",
        "Every other argument goes to Pi",
        "log file",
        "unipi-tui demo",
        "Scenario files (`demo --scenario FILE`): TOML",
        "[[rule]] matching: `when` = '<regex>'",
    ] {
        assert!(
            text.contains(needle),
            "{needle:?} missing from --help:\n{text}"
        );
    }
    let version = std::process::Command::new(bin)
        .arg("--version")
        .output()
        .unwrap();
    assert!(version.status.success());
    let text = String::from_utf8_lossy(&version.stdout);
    assert!(text.contains(env!("CARGO_PKG_VERSION")), "{text}");
    assert!(
        text.contains("@earendil-works/pi-coding-agent@1.6.0"),
        "{text}"
    );
    assert!(
        text.contains("@mariozechner/pi-coding-agent@0.73.1"),
        "{text}"
    );
}

#[test]
fn a_missing_pi_binary_is_a_clear_error_before_the_screen_changes() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_unipi-tui"))
        .args(["--pi-bin", "/nonexistent/pi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/pi"), "{err}");
    assert!(out.stdout.is_empty(), "nothing drawn: {:?}", out.stdout);
}

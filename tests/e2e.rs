//! End to end: the real `unipi-tui` binary in a PTY, running the real Pi (the pinned versions from
//! `scripts/test-deps.sh`) against the scripted model server (`unipi-tui demo --scenario …`), with
//! assertions on the screen the outer terminal shows and on the modes it is left in.
//!
//! The outer terminal is `support::term` — a vt100 screen that answers queries like a kitty-protocol
//! terminal, or like xterm (modifyOtherKeys) — so both ways a real terminal reports modified keys
//! are driven.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use support::demo::spawn_demo;
use support::pi::PiLine;
use support::term::{OuterModes, OuterOptions, Session};

const START: Duration = Duration::from_secs(90);
const REPLY: Duration = Duration::from_secs(60);
const EXIT: Duration = Duration::from_secs(30);

/// Keys as the outer terminal sends them.
mod keys {
    pub const ENTER: &[u8] = b"\r";
    /// Kitty protocol (the workbench pushed "disambiguate").
    pub const KITTY_SHIFT_ENTER: &[u8] = b"\x1b[13;2u";
    pub const KITTY_CTRL_D: &[u8] = b"\x1b[100;5u";
    pub const KITTY_CTRL_C: &[u8] = b"\x1b[99;5u";
    pub const KITTY_SHIFT_DOWN: &[u8] = b"\x1b[1;2B";
    /// xterm modifyOtherKeys level 2 (tmux with extended-keys sends these).
    pub const MOK_SHIFT_ENTER: &[u8] = b"\x1b[27;2;13~";
    pub const CTRL_D: &[u8] = b"\x04";
    pub const SHIFT_PGUP: &[u8] = b"\x1b[5;2~";
    pub const SHIFT_END: &[u8] = b"\x1b[1;2F";
    /// SGR mouse wheel up at column 10, row 5 (1-based).
    pub const WHEEL_UP: &[u8] = b"\x1b[<64;10;5M";
}

struct Workbench {
    session: Session,
    _home: tempfile::TempDir,
}

fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios/e2e.toml")
}

/// Starts `unipi-tui demo` with the given Pi and extra Pi arguments, in a throwaway HOME.
fn start(line: PiLine, pi_args: &[&str], outer: OuterOptions) -> Workbench {
    start_with(line, pi_args, outer, &[], |_| {})
}

/// [`start`] with extra environment, after `setup` prepared the throwaway HOME (also the cwd).
fn start_with(
    line: PiLine,
    pi_args: &[&str],
    outer: OuterOptions,
    extra_env: &[(&str, &str)],
    setup: impl FnOnce(&Path),
) -> Workbench {
    let home = tempfile::tempdir().unwrap();
    setup(home.path());
    let session = spawn_demo(line, &scenario(), home.path(), pi_args, extra_env, outer);
    Workbench {
        session,
        _home: home,
    }
}

impl Workbench {
    fn wait_ready(&self) {
        // Pi's own footer names the model; the workbench's footer says Pi runs.
        self.session
            .wait_for("Pi's prompt with the scripted model", START, |s| {
                let text = s.contents();
                text.contains("scripted-e2e")
                    && (text.contains("pi running") || text.contains("○ idle"))
            })
            .unwrap();
    }

    fn ask(&self, prompt: &str, expect: &str) {
        self.session.type_text(prompt);
        self.session.send(keys::ENTER);
        self.session.wait_for_text(expect, REPLY).unwrap();
    }

    fn exit_with(&mut self, ctrl_d: &[u8]) -> u32 {
        // Pi exits on Ctrl+D with an empty editor; give it a moment to settle first.
        std::thread::sleep(Duration::from_millis(300));
        self.session.send(ctrl_d);
        self.session.wait_exit(EXIT).unwrap()
    }

    /// Pi's process: the workbench's child.
    fn pi_pid(&self) -> u32 {
        let workbench = self.session.pid().unwrap();
        support::procs::children(workbench)
            .into_iter()
            .next()
            .expect("the workbench has a child process (Pi)")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(
            self._home
                .path()
                .join(".local/state/unipi-tui/unipi-tui.log"),
        )
        .unwrap_or_default()
    }
}

/// A row of the screen that is a horizontal rule exactly `width` cells wide (Pi's editor border).
fn has_rule_of_width(screen: &vt100::Screen, width: usize) -> bool {
    screen
        .contents()
        .lines()
        .any(|line| line.chars().filter(|c| *c == '─').count() == width)
}

#[test]
fn current_pi_fullscreen_reply_multiline_resize_wheel_and_clean_exit() {
    let mut wb = start(PiLine::Current, &[], OuterOptions::default());
    wb.wait_ready();
    assert!(
        wb.session.modes().alternate_screen,
        "the workbench owns the screen"
    );
    wb.session
        .wait_for("Pi's editor border at 100 columns", START, |s| {
            has_rule_of_width(s, 100)
        })
        .unwrap();

    wb.ask("hello", "SCRIPTED-REPLY: hello from the scripted model");

    // Shift+Enter (kitty form) inserts a newline in Pi's editor instead of submitting.
    wb.session.type_text("line one");
    wb.session.send(keys::KITTY_SHIFT_ENTER);
    wb.session.type_text("line two");
    wb.session.send(keys::ENTER);
    wb.session.wait_for_text("MULTILINE-OK", REPLY).unwrap();

    // A resize reaches Pi. Pi wraps the text in its editor at the width it believes it has:
    // 95 characters typed at 80 columns must wrap inside Pi's editor (no row holds 80 of them),
    // while a Pi still thinking it has 100 columns would write a 98-character row that the
    // terminal itself wraps at column 80.
    wb.session.resize(30, 80).unwrap();
    wb.session
        .wait_for("Pi's editor border at 80 columns", REPLY, |s| {
            has_rule_of_width(s, 80)
        })
        .unwrap();
    wb.session.type_text(&"x".repeat(95));
    wb.session
        .wait_for("95 x's wrapped by Pi at its new width", REPLY, |s| {
            let text = s.contents();
            let rows: Vec<usize> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && l.chars().all(|c| c == 'x'))
                .map(|l| l.chars().count())
                .collect();
            rows.iter().sum::<usize>() == 95 && rows.iter().all(|n| *n < 80)
        })
        .unwrap();
    wb.session.send(keys::KITTY_CTRL_C);
    wb.session
        .wait_for("editor cleared", REPLY, |s| {
            !s.contents().contains("xxxxxxxx")
        })
        .unwrap();

    // The wheel goes to Pi (it asked for mouse reporting) and scrolls its transcript.
    wb.ask("long please", "LONG-END");
    wb.session
        .wait_for("the reply's start scrolled out of view", REPLY, |s| {
            !s.contents().contains("LONG-START")
        })
        .unwrap();
    for _ in 0..60 {
        wb.session.send(keys::WHEEL_UP);
        std::thread::sleep(Duration::from_millis(10));
    }
    wb.session.wait_for_text("LONG-START", REPLY).unwrap();

    let code = wb.exit_with(keys::KITTY_CTRL_D);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
    assert_eq!(wb.session.modes(), OuterModes::restored());
    assert!(wb.log().contains("Pi exited"), "log:\n{}", wb.log());
    // Pi's exit output (its transcript) is left in the terminal, as running Pi directly does.
    wb.session.wait_for_text("LONG-END", EXIT).unwrap();
}

#[test]
fn current_pi_regular_mode_with_modify_other_keys_terminal_and_scrollback() {
    let outer = OuterOptions {
        kitty: false,
        ..OuterOptions::default()
    };
    let mut wb = start(PiLine::Current, &["--tui-mode", "regular"], outer);
    wb.wait_ready();
    assert_eq!(
        wb.session.modes().modify_other_keys,
        2,
        "a terminal without the kitty protocol gets modifyOtherKeys"
    );

    wb.ask("hello", "SCRIPTED-REPLY: hello from the scripted model");

    // Shift+Enter in xterm's modifyOtherKeys form.
    wb.session.type_text("line one");
    wb.session.send(keys::MOK_SHIFT_ENTER);
    wb.session.type_text("line two");
    wb.session.send(keys::ENTER);
    wb.session.wait_for_text("MULTILINE-OK", REPLY).unwrap();

    // Inline output goes to the workbench's scrollback; Shift+PgUp browses it.
    wb.ask("long please", "LONG-END");
    wb.session
        .wait_for("the reply's start scrolled off", REPLY, |s| {
            !s.contents().contains("LONG-START")
        })
        .unwrap();
    for _ in 0..6 {
        wb.session.send(keys::SHIFT_PGUP);
    }
    wb.session.wait_for_text("lines back", REPLY).unwrap();
    wb.session.wait_for_text("LONG-START", REPLY).unwrap();
    // One key back to live.
    wb.session.send(keys::SHIFT_END);
    wb.session
        .wait_for("back to live", REPLY, |s| {
            let text = s.contents();
            !text.contains("lines back") && text.contains("LONG-END")
        })
        .unwrap();
    // Pi did not ask for the mouse here, so the wheel scrolls the workbench's history.
    wb.session.send(keys::WHEEL_UP);
    wb.session.wait_for_text("3 lines back", REPLY).unwrap();
    wb.session.send(keys::SHIFT_END);
    wb.session
        .wait_for("back to live", REPLY, |s| {
            !s.contents().contains("lines back")
        })
        .unwrap();

    let code = wb.exit_with(keys::CTRL_D);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
    assert_eq!(wb.session.modes(), OuterModes::restored());
    // The inline conversation is left in the terminal, as running Pi directly does (its end is
    // on screen; the rest went to the terminal's scrollback).
    wb.session.wait_for_text("history row 80", EXIT).unwrap();
    wb.session.wait_for_text("LONG-END", EXIT).unwrap();
}

/// The last row of the outer screen: the workbench's footer.
fn footer_row(screen: &vt100::Screen) -> String {
    screen
        .contents()
        .lines()
        .last()
        .unwrap_or_default()
        .to_string()
}

impl Workbench {
    /// Runs a Pi slash command (typed, then Enter once Pi's completion menu settled).
    fn slash(&self, command: &str) {
        self.session.type_text(command);
        std::thread::sleep(Duration::from_millis(400));
        self.session.send(keys::ENTER);
    }

    /// `/unipi:info` opens the workbench's overlay naming this Pi's version; Esc closes it.
    fn check_info_overlay(&self, pi_version: &str) {
        self.slash("/unipi:info");
        self.session
            .wait_for("the info overlay with Pi's version", REPLY, |s| {
                let text = s.contents();
                text.contains("unipi-tui info")
                    && text
                        .lines()
                        .any(|l| l.contains("Pi ") && l.contains(pi_version))
                    && text.contains("unipi_info")
            })
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        self.session.send(b"\x1b");
        self.session
            .wait_for("overlay closed", REPLY, |s| {
                !s.contents().contains("unipi-tui info")
            })
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn bridge_footer_tool_round_trip_reload_and_info_with_current_pi() {
    let mut wb = start(PiLine::Current, &[], OuterOptions::default());
    wb.wait_ready();
    wb.ask("hello", "SCRIPTED-REPLY: hello from the scripted model");
    // The native footer shows the model, tokens and cost from the bridge's events; Pi's own
    // footer (its "(auto)" context line) is gone.
    wb.session
        .wait_for("model, tokens and cost in the footer", REPLY, |s| {
            let footer = footer_row(s);
            footer.contains("scripted-e2e")
                && footer.contains('↑')
                && footer.contains('↓')
                && footer.contains("$0.0")
        })
        .unwrap();
    assert!(
        !wb.session.screen_text().contains("(auto)"),
        "Pi's own footer is still drawn:\n{}",
        wb.session.screen_text()
    );

    // A tool declared by the workbench is offered to the model and its call round-trips.
    wb.ask("which workbench is this?", "ROUNDTRIP-1");
    // After /reload, Pi re-instantiates the extension; the tool still works.
    wb.slash("/reload");
    std::thread::sleep(Duration::from_millis(1500));
    wb.ask("which workbench now?", "ROUNDTRIP-2");
    assert!(!wb.session.screen_text().contains("TOOL-FAILED"));

    wb.check_info_overlay("1.6.0");
    let code = wb.exit_with(keys::KITTY_CTRL_D);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
}

/// The launch and completion cards as Pi draws them (through the bridge's generic card renderer),
/// with the task id, run directory and duration made stable.
fn snapshot_cards(screen: &str) {
    let lines: Vec<&str> = screen.lines().collect();
    let card = |title: &str, rows: usize| -> Vec<String> {
        let start = lines
            .iter()
            .position(|l| l.contains(title))
            .unwrap_or_else(|| panic!("no {title:?} card on screen:\n{screen}"));
        lines[start..(start + rows).min(lines.len())]
            .iter()
            .map(|l| l.trim_end().to_string())
            .collect()
    };
    let mut text = card("bg started", 4);
    text.push(String::new());
    text.extend(card("bg done", 2));
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"));
    settings.add_filter(r"bg-[0-9a-f]{6}", "bg-XXXXXX");
    settings.add_filter(r"\S*/unipi-bg-tasks/[^/]+/", "[TMP]/unipi-bg-tasks/[RUN]/");
    settings.add_filter(r"· \d+s ·", "· Ns ·");
    settings.bind(|| insta::assert_snapshot!("background_task_cards", text.join("\n")));
}

/// Processes whose command line contains `needle` and that are still running.
fn processes_running(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|raw| {
                    String::from_utf8_lossy(&raw)
                        .replace('\0', " ")
                        .contains(needle)
                })
                .unwrap_or(false)
                && support::procs::alive(*pid)
        })
        .collect()
}

#[test]
fn background_task_wakes_the_agent_shows_in_the_dock_and_dies_with_the_workbench() {
    let mut wb = start(PiLine::Current, &[], OuterOptions::default());
    wb.wait_ready();
    // The model starts a task with bg_run; its completion wakes the agent with the output
    // (the scripted server only answers BG-WOKEN when the notification carries it).
    wb.ask("start a background task", "BG-STARTED");
    // The launch card, and — while the agent is idle but the task will wake it — the
    // pending-wake line above Pi's editor.
    wb.session
        .wait_for_text("bg started e2e sleeper", REPLY)
        .unwrap();
    wb.session
        .wait_for_text("waiting on 1 bg task · e2e sleeper", REPLY)
        .unwrap();
    wb.session.wait_for_text("BG-WOKEN", REPLY).unwrap();
    // The completion card; the pending line is gone.
    wb.session
        .wait_for_text("bg done e2e sleeper", REPLY)
        .unwrap();
    snapshot_cards(&wb.session.screen_text());
    // The card's title is drawn in the workbench theme's colour for its tint (done = success).
    let (theme, _) = unipi_tui::config::theme::load_theme(None, false);
    let Some(ratatui::style::Color::Rgb(r, g, b)) = theme.widgets.status_done.fg else {
        panic!("the default theme's done colour is not truecolour");
    };
    wb.session
        .wait_for("the completion card in the theme's colour", REPLY, |s| {
            s.contents().lines().enumerate().any(|(row, line)| {
                line.find("bg done").is_some_and(|byte| {
                    let col = line[..byte].chars().count();
                    let cell = u16::try_from(row)
                        .ok()
                        .and_then(|row| s.cell(row, u16::try_from(col).ok()?));
                    cell.is_some_and(|cell| cell.fgcolor() == vt100::Color::Rgb(r, g, b))
                })
            })
        })
        .unwrap();
    wb.session
        .wait_for("the pending line removed", REPLY, |s| {
            !s.contents().contains("waiting on 1 bg task")
        })
        .unwrap();

    // Shift+Down moves focus into the dock, which lists the task; Esc gives focus back to Pi.
    wb.session.send(keys::KITTY_SHIFT_DOWN);
    wb.session
        .wait_for("the dock with the finished task", REPLY, |s| {
            let text = s.contents();
            text.contains("bg tasks")
                && text.contains("e2e sleeper")
                && text.contains("done exit 0")
        })
        .unwrap();
    wb.session.send(keys::ENTER);
    wb.session.wait_for_text("BG-OUTPUT-42", REPLY).unwrap();
    wb.session
        .wait_for("the task's detail with its command", REPLY, |s| {
            s.contents().contains("Command: sleep 4; echo BG-OUTPUT-42")
        })
        .unwrap();
    // Two Escapes in one write (`tmux send-keys Escape Escape`): detail -> list -> closed; the
    // pair must not be read as one Alt+Esc, which left the dock open for the next letters.
    wb.session.send(b"\x1b\x1b");
    wb.session
        .wait_for("the dock closed", REPLY, |s| {
            let text = s.contents();
            !text.contains("bg tasks") && !text.contains("bg: e2e sleeper")
        })
        .unwrap();
    wb.session.type_text("typed into Pi");
    wb.session.wait_for_text("typed into Pi", REPLY).unwrap();
    wb.session.send(keys::KITTY_CTRL_C);

    // A long task is running when the workbench exits: it must not survive it.
    wb.ask("start a slow task", "BG-STARTED");
    wb.session
        .wait_for("the footer counting the running task", REPLY, |s| {
            footer_row(s).contains("bg 1")
        })
        .unwrap();
    assert!(
        !processes_running("sleep 311").is_empty(),
        "the long task runs"
    );
    let code = wb.exit_with(keys::KITTY_CTRL_D);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        processes_running("sleep 311"),
        Vec::<u32>::new(),
        "a task outlived the workbench"
    );
}

#[test]
fn a_sighup_to_the_workbench_stops_running_background_tasks() {
    let mut wb = start(PiLine::Current, &[], OuterOptions::default());
    wb.wait_ready();
    wb.ask("start a hangup task", "BG-STARTED");
    wb.session
        .wait_for("the footer counting the running task", REPLY, |s| {
            footer_row(s).contains("bg 1")
        })
        .unwrap();
    assert!(!processes_running("sleep 312").is_empty(), "the task runs");
    // The SSH connection drops: the workbench gets SIGHUP.
    let workbench = wb.session.pid().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(workbench).unwrap()),
        nix::sys::signal::Signal::SIGHUP,
    )
    .unwrap();
    assert_eq!(wb.session.wait_exit(EXIT).unwrap(), 129);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        processes_running("sleep 312"),
        Vec::<u32>::new(),
        "a task outlived the workbench"
    );
}

#[test]
fn closing_the_terminal_ends_the_workbench_quietly_and_logs_its_exit() {
    // The workbench's stderr goes to a file (as `2>file` would), to see what it prints there
    // when the terminal it restores is gone.
    let home = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let stderr = outside.path().join("stderr");
    let scenario = scenario().display().to_string();
    let command = support::demo::workbench_command(
        PiLine::Current,
        &["demo", "--scenario", scenario.as_str()],
        &[],
        home.path(),
        &[],
    );
    let script = format!("exec \"$0\" \"$@\" 2>'{}'", stderr.display());
    let program = command.program.display().to_string();
    let mut args = vec!["-c", script.as_str(), program.as_str()];
    args.extend(command.args.iter().map(String::as_str));
    let session = Session::spawn(
        Path::new("/bin/sh"),
        &args,
        &command.env(),
        home.path(),
        OuterOptions::default(),
    )
    .unwrap();
    let mut wb = Workbench {
        session,
        _home: home,
    };
    wb.wait_ready();
    let pi = wb.pi_pid();

    // `tmux kill-pane`, a closed window: the terminal's master side goes away.
    wb.session.hang_up();
    assert_eq!(wb.session.wait_exit(EXIT).unwrap(), 129, "128 + SIGHUP");
    let printed = std::fs::read_to_string(&stderr).unwrap();
    assert!(
        printed.is_empty(),
        "nothing to print on a terminal that is gone, but stderr has:\n{printed}"
    );
    let log = wb.log();
    let last = log.lines().last().unwrap_or_default();
    assert!(
        last.contains("unipi-tui exiting"),
        "the log ends with the exit line, but its last line is {last:?}"
    );
    assert!(!support::procs::alive(pi), "Pi outlived the workbench");
}

#[test]
fn a_helper_agent_runs_as_a_second_pi_and_its_answer_returns_to_the_model() {
    let mut wb = start(PiLine::Current, &[], OuterOptions::default());
    wb.wait_ready();
    // The model calls spawn_helper; the workbench runs an `explore` helper (a child
    // `pi --mode json -p` against the same scripted server) and returns its final text.
    wb.ask("ask a helper for the code word", "HELPER-ROUNDTRIP-OK");
    let code = wb.exit_with(keys::KITTY_CTRL_D);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
}

#[test]
fn a_background_helper_wakes_the_agent_and_an_explore_helper_cannot_edit() {
    let mut wb = start(PiLine::Current, &[], OuterOptions::default());
    wb.wait_ready();
    // The helper's own Pi was never offered `edit`: its call comes back as an unknown tool.
    wb.ask("probe the explore tools", "EXPLORE-READONLY-OK");
    wb.ask("ask a background helper", "BGHELPER-STARTED");
    // Its completion arrives later as a follow-up that starts a turn by itself.
    wb.session
        .wait_for_text("BGHELPER-WOKEN", REPLY)
        .unwrap_or_else(|err| panic!("{err:#}\n{}", wb.session.screen_text()));
    let code = wb.exit_with(keys::KITTY_CTRL_D);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
}

#[test]
fn a_helper_asks_its_supervisor_and_gets_the_parents_answer() {
    let mut wb = start(PiLine::Current, &[], OuterOptions::default());
    wb.wait_ready();
    // The helper (its own Pi, connected to the bridge with its own token) calls
    // contact_supervisor; the question wakes the parent, which answers with `action: reply`; the
    // answer returns to the waiting helper, whose final result then wakes the parent again.
    wb.ask("ask a curious helper", "BGHELPER-STARTED");
    wb.session
        .wait_for_text("SUPERVISOR-ROUNDTRIP-OK", REPLY)
        .unwrap_or_else(|err| panic!("{err:#}\n{}\n{}", wb.session.screen_text(), wb.log()));
    let code = wb.exit_with(keys::KITTY_CTRL_D);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
}

#[test]
fn the_session_spawn_cap_refuses_the_second_helper() {
    let mut wb = start_with(PiLine::Current, &[], OuterOptions::default(), &[], |home| {
        let config = home.join(".unipi/config");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("subagents.json"),
            r#"{"maxSubagentSpawnsPerSession": 1}"#,
        )
        .unwrap();
    });
    wb.wait_ready();
    wb.ask("ask a helper for the code word", "HELPER-ROUNDTRIP-OK");
    wb.ask("ask a helper for the code word again", "CAP-REFUSED-OK");
    let code = wb.exit_with(keys::KITTY_CTRL_D);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
}

#[test]
fn the_depth_guard_refuses_inside_a_helper() {
    // A workbench started as a helper's child sees the depth in its environment.
    let mut wb = start_with(
        PiLine::Current,
        &[],
        OuterOptions::default(),
        &[("UNIPI_HELPER_DEPTH", "2")],
        |_| {},
    );
    wb.wait_ready();
    wb.ask("ask a helper for the code word", "DEPTH-REFUSED-OK");
    let code = wb.exit_with(keys::KITTY_CTRL_D);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
}

#[test]
fn no_helper_process_outlives_the_workbench() {
    let mut wb = start(PiLine::Current, &[], OuterOptions::default());
    wb.wait_ready();
    wb.ask("start a sleeping helper", "BGHELPER-STARTED");
    wait_for_process("sleep 314");
    // Pi renames its process, so the helper's Pi is found by its environment: this test's HOME
    // and the depth of a helper.
    let home = format!("HOME={}", wb._home.path().display());
    let helper_env = ["UNIPI_HELPER_DEPTH=1", home.as_str()];
    assert!(
        !processes_with_env(&helper_env).is_empty(),
        "the helper's Pi runs"
    );
    let code = wb.exit_with(keys::KITTY_CTRL_D);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        processes_running("sleep 314"),
        Vec::<u32>::new(),
        "the helper's tool call outlived the workbench"
    );
    assert_eq!(
        processes_with_env(&helper_env),
        Vec::<u32>::new(),
        "a helper Pi outlived the workbench"
    );
}

#[test]
fn a_helper_stopped_from_the_dock_leaves_no_process() {
    let mut wb = start(PiLine::Current, &[], OuterOptions::default());
    wb.wait_ready();
    wb.ask("start a sleeping helper", "BGHELPER-STARTED");
    wait_for_process("sleep 314");
    let home = format!("HOME={}", wb._home.path().display());
    let helper_env = ["UNIPI_HELPER_DEPTH=1", home.as_str()];
    // The dock lists the main agent, then the helper (selected), with its live activity.
    wb.session.send(keys::KITTY_SHIFT_DOWN);
    wb.session
        .wait_for("the helper in the dock", REPLY, |s| {
            let text = s.contents();
            text.contains("main") && text.contains("sleeping helper") && text.contains("running")
        })
        .unwrap_or_else(|err| panic!("{err:#}\n{}", wb.session.screen_text()));
    // Stop needs a second press on the same row.
    wb.session.send(b"s");
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !processes_running("sleep 314").is_empty(),
        "one press stopped it"
    );
    wb.session.send(b"s");
    wb.session
        .wait_for("the helper stopped", REPLY, |s| {
            s.contents().contains("stopped")
        })
        .unwrap_or_else(|err| panic!("{err:#}\n{}", wb.session.screen_text()));
    for _ in 0..100 {
        if processes_running("sleep 314").is_empty() && processes_with_env(&helper_env).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        processes_running("sleep 314"),
        Vec::<u32>::new(),
        "the helper's tool call survived the stop"
    );
    assert_eq!(
        processes_with_env(&helper_env),
        Vec::<u32>::new(),
        "the helper's Pi survived the stop"
    );
    // The stopped run's notification reaches the model too (its turn answers from the fallback).
    wb.session.send(b"\x1b");
    let code = wb.exit_with(keys::KITTY_CTRL_D);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
}

/// Live processes whose environment holds every one of `entries` (`NAME=value`).
fn processes_with_env(entries: &[&str]) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|dir| dir.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|raw| {
                    let vars: Vec<&[u8]> = raw.split(|b| *b == 0).collect();
                    entries.iter().all(|entry| vars.contains(&entry.as_bytes()))
                })
                .unwrap_or(false)
                && support::procs::alive(*pid)
        })
        .collect()
}

/// Waits until a process whose command line contains `needle` runs.
fn wait_for_process(needle: &str) {
    for _ in 0..300 {
        if !processes_running(needle).is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no process `{needle}` appeared");
}

#[test]
fn legacy_pi_smoke() {
    let mut wb = start(PiLine::Legacy, &[], OuterOptions::default());
    wb.wait_ready();
    wb.ask("hello", "SCRIPTED-REPLY: hello from the scripted model");
    wb.session
        .wait_for("model and tokens in the footer", REPLY, |s| {
            let footer = footer_row(s);
            footer.contains("scripted-e2e") && footer.contains('↑')
        })
        .unwrap();
    wb.ask("which workbench is this?", "ROUNDTRIP-1");
    wb.check_info_overlay("0.73.1");
    let code = wb.exit_with(keys::KITTY_CTRL_D);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
    assert_eq!(wb.session.modes(), OuterModes::restored());
}

#[test]
fn pi_killed_with_sigkill_ends_the_workbench_with_an_error_and_a_restored_terminal() {
    let mut wb = start(PiLine::Current, &[], OuterOptions::default());
    wb.wait_ready();
    let pi = wb.pi_pid();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pi).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let code = wb.session.wait_exit(EXIT).unwrap();
    assert_eq!(
        code,
        137,
        "128 + SIGKILL; screen:\n{}",
        wb.session.screen_text()
    );
    assert_eq!(wb.session.modes(), OuterModes::restored());
    // The failure is explained after the terminal is restored.
    wb.session
        .wait_for_text("Pi exited with SIGKILL", REPLY)
        .unwrap();
}

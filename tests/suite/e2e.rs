//! End to end: the real `unipi-tui` binary in a PTY, running the real Pi (the pinned versions from
//! `scripts/test-deps.sh`) against the scripted model server (`unipi-tui demo --scenario …`), with
//! assertions on the screen the outer terminal shows and on the modes it is left in.
//!
//! The outer terminal is `support::term` — a vt100 screen that answers queries like a
//! kitty-protocol terminal, or like xterm (modifyOtherKeys) — so both ways a real terminal reports
//! modified keys are driven.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use support::demo::spawn_demo;
use support::pi::PiLine;
use support::procs::{processes_running, processes_with_env, wait_for_process};
use support::sandbox::Sandbox;
use support::term::{OuterModes, OuterOptions, Session};
use support::wait::eventually;
use support::workbench::{exit_pi, footer_row, slash};

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
    sandbox: Sandbox,
}

fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios/e2e.toml")
}

/// Starts `unipi-tui demo` with the given Pi and extra Pi arguments, in a fresh sandbox.
fn start(line: PiLine, pi_args: &[&str], outer: OuterOptions) -> Workbench {
    start_with(line, pi_args, outer, &[], |_| {})
}

/// [`start`] with extra environment, after `setup` prepared the sandbox.
fn start_with(
    line: PiLine,
    pi_args: &[&str],
    outer: OuterOptions,
    extra_env: &[(&str, &str)],
    setup: impl FnOnce(&Sandbox),
) -> Workbench {
    let sandbox = Sandbox::new();
    setup(&sandbox);
    let session = spawn_demo(line, &scenario(), &sandbox, pi_args, extra_env, outer);
    Workbench { session, sandbox }
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
        exit_pi(&mut self.session, ctrl_d, EXIT)
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
        self.sandbox.log()
    }

    /// Runs a Pi slash command.
    fn slash(&self, command: &str) {
        slash(&self.session, command, REPLY);
    }

    /// Helper Pi processes of this workbench (Pi renames its process, so they are found by their
    /// environment: this sandbox's HOME and the depth of a helper).
    fn helper_pis(&self) -> Vec<u32> {
        let home = format!("HOME={}", self.sandbox.home.display());
        processes_with_env(&["UNIPI_HELPER_DEPTH=1", home.as_str()])
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
    // One notch at a time, each handled before the next, until the start is back in view.
    let mut notches = 0;
    while wb
        .session
        .wait_for_text("LONG-START", Duration::from_millis(100))
        .is_err()
    {
        assert!(
            notches < 200,
            "the wheel never scrolled back to the reply's start"
        );
        wb.session.send(keys::WHEEL_UP);
        notches += 1;
    }

    let code = wb.exit_with(keys::KITTY_CTRL_D);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
    assert_eq!(wb.session.modes(), OuterModes::restored());
    assert!(wb.log().contains("Pi exited"), "log:\n{}", wb.log());
    // Pi's exit output (its transcript) is left in the terminal, as running Pi directly does.
    wb.session.wait_for_text("LONG-END", EXIT).unwrap();
    // The demo's session was in its agent directory, deleted at exit: no resume command, neither
    // Pi's nor the workbench's.
    let screen = wb.session.screen_text();
    assert!(!screen.contains("To resume"), "{screen}");
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

impl Workbench {
    /// `/unipi:info` opens the dashboard; its last tab, the workbench's page, lists the modules
    /// and names this Pi's version; Esc closes it.
    fn check_info_overlay(&self, pi_version: &str) {
        self.slash("/unipi:info");
        self.session
            .wait_for("the info dashboard", REPLY, |s| {
                s.contents().contains("unipi-tui info")
            })
            .unwrap();
        // Left from the first tab wraps to the last: the workbench's page.
        self.session.send(b"\x1b[D");
        self.session
            .wait_for("the info overlay listing the modules", REPLY, |s| {
                let text = s.contents();
                text.contains("unipi-tui info") && text.contains("unipi_info")
            })
            .unwrap();
        // The versions come after every module's block: End scrolls to them.
        self.session.send(b"\x1b[F");
        self.session
            .wait_for("the info overlay with Pi's version", REPLY, |s| {
                s.contents()
                    .lines()
                    .any(|l| l.contains("Pi ") && l.contains(pi_version))
            })
            .unwrap();
        self.session.send(b"\x1b");
        self.session
            .wait_for("overlay closed", REPLY, |s| {
                !s.contents().contains("unipi-tui info")
            })
            .unwrap();
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
    // Pi's footer marker "(auto)" is now shown in the workbench's footer only (its last row).
    let screen = wb.session.screen_text();
    let rows: Vec<&str> = screen.lines().collect();
    let above_footer = &rows[..rows.len().saturating_sub(1)];
    assert!(
        !above_footer.iter().any(|row| row.contains("(auto)")),
        "Pi's own footer is still drawn:\n{}",
        screen
    );

    // A tool declared by the workbench is offered to the model and its call round-trips.
    wb.ask("which workbench is this?", "ROUNDTRIP-1");
    // After /reload, Pi re-instantiates the extension; the tool still works.
    wb.slash("/reload");
    // The reloaded extension connects again before the next prompt is worth sending.
    eventually("the bridge reconnected after /reload", REPLY, || {
        wb.log().matches("bridge: main connected").count() >= 2
    });
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
    settings.add_filter(r"\S*/unipi-\d+/tasks/[^/]+/", "[RUNTIME]/tasks/[RUN]/");
    settings.add_filter(r"· \d+s ·", "· Ns ·");
    // Named as when this suite was a test binary of its own.
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("e2e__background_task_cards", text.join("\n")));
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
    eventually("the task gone after the exit", EXIT, || {
        processes_running("sleep 311").is_empty()
    });
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
    eventually("the task gone after the hangup", EXIT, || {
        processes_running("sleep 312").is_empty()
    });
}

#[test]
fn closing_the_terminal_ends_the_workbench_quietly_and_logs_its_exit() {
    // The workbench's stderr goes to a file (as `2>file` would), to see what it prints there
    // when the terminal it restores is gone.
    let sandbox = Sandbox::new();
    let stderr = sandbox.dir("outside").join("stderr");
    let scenario = scenario().display().to_string();
    let command = support::demo::workbench_command(
        PiLine::Current,
        &["demo", "--scenario", scenario.as_str()],
        &[],
        &sandbox,
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
        &sandbox.project,
        OuterOptions::default(),
    )
    .unwrap();
    let mut wb = Workbench { session, sandbox };
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

/// The original Unipi's names: the model reads a background helper's result back with
/// `agent_id` (the run id its notification named) and `view: true`, which opens the dock on the
/// run's transcript for the user; closed, the model's answer shows the result came back.
#[test]
fn get_helper_result_takes_unipi_s_agent_id_and_view_opens_the_dock() {
    let mut wb = start(PiLine::Current, &[], OuterOptions::default());
    wb.wait_ready();
    wb.ask("ask an old-style helper", "BGHELPER-STARTED");
    wb.session
        .wait_for("the dock on the helper's transcript", REPLY, |s| {
            let text = s.contents();
            text.contains("final transcript")
                && text.contains("Task:    old names helper")
                && text.contains("◆ OLDNAME-ANSWER-31")
        })
        .unwrap_or_else(|err| panic!("{err:#}\n{}", wb.session.screen_text()));
    // Back from the transcript, then closed.
    for _ in 0..3 {
        let screen = wb.session.screen_text();
        if !(screen.contains("Esc back") || screen.contains("Esc close")) {
            break;
        }
        wb.session.send(b"\x1b");
        std::thread::sleep(Duration::from_millis(300));
    }
    wb.session
        .wait_for_text("OLDNAMES-OK", REPLY)
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
    let mut wb = start_with(
        PiLine::Current,
        &[],
        OuterOptions::default(),
        &[],
        |sandbox| {
            sandbox.write(
                &sandbox.home.join(".unipi/config/subagents.json"),
                r#"{"maxSubagentSpawnsPerSession": 1}"#,
            );
        },
    );
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
    let sleepers = wait_for_process("sleep 314", REPLY);
    let helpers = wb.helper_pis();
    assert!(!helpers.is_empty(), "the helper's Pi runs");
    // The helper's Pi and its tool call run in the project, like the main Pi.
    for pid in helpers.iter().chain(&sleepers) {
        assert_eq!(
            support::procs::cwd(*pid).as_deref(),
            Some(wb.sandbox.project.as_path()),
            "the working directory of {pid} ({})",
            support::procs::cmdline(*pid)
        );
    }
    let code = wb.exit_with(keys::KITTY_CTRL_D);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
    eventually(
        "the helper and its tool call gone after the exit",
        EXIT,
        || processes_running("sleep 314").is_empty() && wb.helper_pis().is_empty(),
    );
}

#[test]
fn a_helper_stopped_from_the_dock_leaves_no_process() {
    let mut wb = start(PiLine::Current, &[], OuterOptions::default());
    wb.wait_ready();
    wb.ask("start a sleeping helper", "BGHELPER-STARTED");
    wait_for_process("sleep 314", REPLY);
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
    wb.session
        .wait_for_text("Press s again to stop", REPLY)
        .unwrap_or_else(|err| panic!("{err:#}\n{}", wb.session.screen_text()));
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
    eventually(
        "the helper and its tool call gone after the stop",
        REPLY,
        || processes_running("sleep 314").is_empty() && wb.helper_pis().is_empty(),
    );
    // The stopped run's notification reaches the model too (its turn answers from the fallback).
    wb.session.send(b"\x1b");
    wb.session
        .wait_for("the dock closed", REPLY, |s| {
            !s.contents().contains("bg tasks")
        })
        .unwrap();
    wb.session.wait_for_text("FALLBACK-REPLY", REPLY).unwrap();
    let code = wb.exit_with(keys::KITTY_CTRL_D);
    assert_eq!(code, 0, "screen:\n{}", wb.session.screen_text());
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
    // Pi runs in the directory the workbench was started in, not in HOME.
    assert_eq!(
        support::procs::cwd(pi).as_deref(),
        Some(wb.sandbox.project.as_path())
    );
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

/// Pi's footer shows other extensions' `ctx.ui.setStatus` texts and its `(auto)` marker; the
/// workbench hides Pi's footer, so it must show them itself. And the footer says what Pi does
/// inside a run (running bash), not only "working".
#[test]
fn the_footer_shows_other_extensions_statuses_and_what_pi_is_doing() {
    let mut wb = start_with(
        PiLine::Current,
        &["-e", "./status-ext.ts"],
        OuterOptions {
            cols: 140,
            ..OuterOptions::default()
        },
        &[],
        |sandbox| {
            std::fs::write(
                sandbox.project.join("status-ext.ts"),
                r#"export default function (pi: any) {
    pi.on("session_start", (_event: any, ctx: any) => {
        ctx.ui.setStatus("b-other", "\x1b[32mOTHER-EXT ready\x1b[0m");
        ctx.ui.setStatus("a-first", "FIRST-EXT 3 items");
    });
}
"#,
            )
            .unwrap();
        },
    );
    wb.wait_ready();
    wb.session
        .wait_for("the other extensions' statuses in the footer", REPLY, |s| {
            footer_row(s).contains("FIRST-EXT 3 items · OTHER-EXT ready")
        })
        .unwrap();
    wb.session
        .wait_for("Pi's auto-compaction marker", REPLY, |s| {
            footer_row(s).contains("(auto)")
        })
        .unwrap();
    wb.session.type_text("run a slow command");
    wb.session.send(keys::ENTER);
    wb.session
        .wait_for("the footer naming the running tool", REPLY, |s| {
            footer_row(s).contains("● running bash")
        })
        .unwrap();
    wb.session.wait_for_text("SLOW-REPLY", REPLY).unwrap();
    assert_eq!(wb.exit_with(keys::KITTY_CTRL_D), 0);
}

/// The built-in demo says what it is and what to try — the workbench's own features too — and
/// they work: a background task started by the scripted model runs, shows in the dock, and its
/// end wakes the agent; typing closes the welcome box and reaches Pi.
#[test]
fn the_builtin_demo_welcomes_and_its_background_task_wakes_the_agent() {
    let sandbox = Sandbox::new();
    let mut session = support::demo::spawn_workbench(
        PiLine::Current,
        &["demo"],
        &[],
        &sandbox,
        &[],
        OuterOptions::default(),
    );
    session
        .wait_for_text("Welcome to the unipi-tui demo", START)
        .unwrap();
    session
        .wait_for("the workbench's features in the welcome", START, |s| {
            let text = s.contents();
            text.contains("start a background task") && text.contains("/unipi:info")
        })
        .unwrap();
    session
        .wait_for("Pi ready", START, |s| {
            s.contents().contains("scripted-demo") || footer_row(s).contains("○ idle")
        })
        .unwrap();
    session.type_text("start a background task");
    session
        .wait_for("the welcome closed by typing", REPLY, |s| {
            !s.contents().contains("Welcome to the unipi-tui demo")
        })
        .unwrap();
    session.send(keys::ENTER);
    session
        .wait_for_text("Press Shift+Down to watch it", REPLY)
        .unwrap();
    session
        .wait_for_text("its notification woke me up", REPLY)
        .unwrap();
    assert_eq!(exit_pi(&mut session, keys::KITTY_CTRL_D, EXIT), 0);
}

/// Every config error is logged with its file (not only keymap, theme and footer ones): the
/// tasks, compactor, MCP, subagents and workbench files of a capability too, and they are shown
/// in the start-up box.
#[test]
fn every_broken_config_file_is_logged_and_shown() {
    let files = [
        "background-tasks.json",
        "compactor.json",
        "mcp.json",
        "subagents.json",
        "workbench.json",
    ];
    let wb = start_with(
        PiLine::Current,
        &[],
        OuterOptions::default(),
        &[],
        |sandbox| {
            let dir = sandbox.home.join(".unipi/config");
            std::fs::create_dir_all(&dir).unwrap();
            for file in files {
                std::fs::write(dir.join(file), "{ \"broken\": ").unwrap();
            }
            let keymap = sandbox.home.join(".config/unipi-tui/keymap.toml");
            std::fs::create_dir_all(keymap.parent().unwrap()).unwrap();
            std::fs::write(keymap, "[bindings\n").unwrap();
        },
    );
    wb.session
        .wait_for_text("Start-up problems", START)
        .unwrap();
    // The keymap is read once, at start: the box says a fix needs a restart (the JSON files
    // are followed while the workbench runs).
    wb.session
        .wait_for_text("restart the workbench after fixing them", START)
        .unwrap();
    wb.session
        .wait_for("every broken file logged", START, |_| {
            let log = wb.log();
            files.iter().all(|file| {
                log.lines()
                    .any(|line| line.contains("WARN") && line.contains(file))
            }) && log.contains("keymap.toml")
        })
        .unwrap_or_else(|err| panic!("{err:#}\nlog:\n{}", wb.log()));
}

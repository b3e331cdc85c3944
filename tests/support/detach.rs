//! Detachable sessions from the outside, as a user drives them: `unipi-tui --detachable NAME`,
//! `ls`, `attach NAME` and `kill NAME` run as the real binary with the sandbox's environment,
//! and the session's files and processes read from the registry and `/proc`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use super::procs::{cmdline, processes_with_env};
use super::sandbox::Sandbox;
use super::term::{OuterModes, OuterOptions, Session};
use super::wait::{eventually, eventually_or};

/// The scenario with a turn that is in flight when the terminal goes.
pub fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios/detach.toml")
}

/// The binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_unipi-tui"))
}

/// Kitty-protocol Ctrl+Alt+D: the detach key.
pub const KITTY_DETACH: &[u8] = b"\x1b[100;7u";
/// Kitty-protocol Ctrl+D.
pub const KITTY_CTRL_D: &[u8] = b"\x1b[100;5u";

/// Runs `unipi-tui args…` in the sandbox's project with its environment (no terminal).
pub fn unipi(sandbox: &Sandbox, args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .envs(sandbox.env())
        .current_dir(&sandbox.project)
        .output()
        .expect("run unipi-tui")
}

/// `unipi-tui ls`'s output (it must succeed).
pub fn ls(sandbox: &Sandbox) -> String {
    let out = unipi(sandbox, &["ls"]);
    assert!(out.status.success(), "ls failed: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `ls`'s line of session `name`, if it lists one.
pub fn ls_line(sandbox: &Sandbox, name: &str) -> Option<String> {
    ls(sandbox)
        .lines()
        .find(|line| line.split_whitespace().next() == Some(name))
        .map(str::to_owned)
}

/// Waits until `ls` lists `name` with every one of `words` (e.g. "idle", "no").
pub fn wait_for_ls(sandbox: &Sandbox, name: &str, words: &[&str], timeout: Duration) {
    let mut last = String::new();
    let what = format!("`ls` shows {name} with {words:?}");
    eventually(&what, timeout, || {
        last = ls(sandbox);
        last.lines().any(|line| {
            let cells: Vec<&str> = line.split("  ").map(str::trim).collect();
            line.split_whitespace().next() == Some(name)
                && words.iter().all(|word| cells.contains(word))
        })
    });
}

/// The sessions directory in the sandbox's private runtime root.
pub fn sessions_dir(sandbox: &Sandbox) -> PathBuf {
    sandbox.runtime_root().join("sessions")
}

/// The session process of `name`, from its owner file.
pub fn session_pid(sandbox: &Sandbox, name: &str) -> u32 {
    let owner = std::fs::read_to_string(sessions_dir(sandbox).join(name).join("owner"))
        .unwrap_or_else(|err| panic!("session {name} has no owner file: {err}"));
    owner
        .trim()
        .split(':')
        .next()
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("a bad owner file: {owner:?}"))
}

/// Every live process carrying the sandbox's HOME: the session process, the workbench, Pi and
/// everything they started (the watchdogs carry no environment).
pub fn sandbox_processes(sandbox: &Sandbox) -> Vec<u32> {
    let home = format!("HOME={}", sandbox.home.display());
    processes_with_env(&[home.as_str()])
}

/// `pid: command line` for each of `pids`.
pub fn describe(pids: &[u32]) -> String {
    pids.iter()
        .map(|pid| format!("{pid}: {}", cmdline(*pid)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Waits until nothing of the sandbox runs any more.
pub fn wait_all_gone(sandbox: &Sandbox, timeout: Duration) {
    eventually_or(
        "nothing of the sandbox running",
        timeout,
        || sandbox_processes(sandbox).is_empty(),
        || {
            format!(
                "still running:\n{}\nsession log:\n{}",
                describe(&sandbox_processes(sandbox)),
                session_log_tail(sandbox, 30)
            )
        },
    );
}

/// The session processes' log.
pub fn session_log_tail(sandbox: &Sandbox, lines: usize) -> String {
    let path = sandbox
        .home
        .join(".local/state/unipi-tui/unipi-tui-session.log");
    let log = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = log.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// `unipi-tui attach name` in a new terminal.
pub fn attach(sandbox: &Sandbox, name: &str, outer: OuterOptions) -> Session {
    Session::spawn(
        &bin(),
        &["attach", name],
        &sandbox.env(),
        &sandbox.project,
        outer,
    )
    .unwrap()
}

/// Row `row` of the screen (0-based), trailing blanks trimmed.
pub fn row(screen: &vt100::Screen, row: u16) -> String {
    let (_, cols) = screen.size();
    screen
        .rows(0, cols.get())
        .nth(usize::from(row))
        .unwrap_or_default()
        .trim_end()
        .to_owned()
}

/// The workbench's footer is on the screen's last row (it was drawn at this size).
pub fn footer_on_last_row(screen: &vt100::Screen) -> bool {
    let (rows, _) = screen.size();
    let last = row(screen, rows.get() - 1);
    last.contains("scripted-detach") && last.contains("F1 help")
}

/// Another terminal than the first: another size, and no kitty keyboard protocol.
pub const OTHER_TERMINAL: OuterOptions = OuterOptions {
    rows: 40,
    cols: 120,
    kitty: false,
};

/// The detach scenario's reply is on the screen, drawn at the screen's size.
pub fn reply_at_size(screen: &vt100::Screen) -> bool {
    screen.contents().contains("DETACH-REPLY") && footer_on_last_row(screen)
}

/// The modes a workbench sets up on a terminal: the kitty protocol's flags pushed once for a
/// `kitty` terminal, modifyOtherKeys 2 for another.
pub fn assert_workbench_modes(modes: &OuterModes, kitty: bool) {
    assert!(
        modes.alternate_screen
            && modes.mouse_reporting
            && modes.bracketed_paste
            && modes.focus_reporting
            && !modes.cooked,
        "{modes:?}"
    );
    let keyboard = (modes.kitty_stack_depth, modes.modify_other_keys);
    assert_eq!(keyboard, if kitty { (1, 0) } else { (0, 2) }, "{modes:?}");
}

/// Ends every process of the sandbox when dropped: a detachable session outlives its terminal by
/// design, so a test that fails half way must not leave one running. Declare it right after the
/// sandbox, so it drops first.
pub struct EndSessions<'a>(pub &'a Sandbox);

impl Drop for EndSessions<'_> {
    fn drop(&mut self) {
        for pid in sandbox_processes(self.0) {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
}

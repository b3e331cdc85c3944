//! Driving Pi inside the workbench the way a person does, with every step waiting on what the
//! screen shows rather than on time: slash commands, the footer, a settled agent, the exit.

use std::time::Duration;

use super::term::Session;

/// Kitty-protocol Ctrl+D (the workbench pushes "disambiguate" to a kitty terminal).
pub const KITTY_CTRL_D: &[u8] = b"\x1b[100;5u";

/// The last row of the outer screen: the workbench's footer.
pub fn footer_row(screen: &vt100::Screen) -> String {
    screen
        .contents()
        .lines()
        .last()
        .unwrap_or_default()
        .to_string()
}

/// Pi is between turns: the footer says idle or done (not working or compacting).
pub fn settled(screen: &vt100::Screen) -> bool {
    let footer = footer_row(screen);
    footer.contains("○ idle") || footer.contains("✓ done")
}

/// Types a Pi slash command and submits it once Pi's editor shows it whole (typing goes through
/// the workbench to Pi, which redraws at its own pace; Enter before the last character arrived
/// would submit a prefix, or pick another completion).
pub fn slash(session: &Session, command: &str, timeout: Duration) {
    session.type_text(command);
    session
        .wait_for(&format!("{command:?} in Pi's editor"), timeout, |s| {
            s.contents()
                .lines()
                .any(|line| line.trim_end().ends_with(command))
        })
        .unwrap();
    session.send(b"\r");
}

/// Waits until Pi settled, sends `ctrl_d` (Pi exits on it with an empty editor) and returns the
/// workbench's exit code.
pub fn exit_pi(session: &mut Session, ctrl_d: &[u8], timeout: Duration) -> u32 {
    session
        .wait_for("Pi settled before Ctrl+D", timeout, settled)
        .unwrap();
    session.send(ctrl_d);
    session.wait_exit(timeout).unwrap()
}

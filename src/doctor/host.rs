//! What the machine and the outer terminal offer: the desktop bus for native notifications, the
//! keyboard protocol, the clipboard (OSC 52), colours, and the private directories.

use std::path::Path;
use std::time::Duration;

use super::{DoctorRow, DoctorStatus, TerminalProbe, row};
use crate::term::tui::KeyboardProtocol;

/// The D-Bus session bus that desktop notifications go through. Missing on a server: a warning.
pub(super) async fn session_bus() -> DoctorRow {
    #[cfg(all(unix, not(target_os = "macos")))]
    {
        let address = std::env::var("DBUS_SESSION_BUS_ADDRESS").ok();
        let connected =
            tokio::time::timeout(Duration::from_secs(3), zbus::Connection::session()).await;
        let error = match connected {
            Ok(Ok(_)) => {
                return row(
                    DoctorStatus::Ok,
                    "D-Bus",
                    "session bus reachable: desktop notifications can be shown",
                    None,
                );
            }
            Ok(Err(err)) => err.to_string(),
            Err(_) => "no answer within 3 s".to_owned(),
        };
        row(
            DoctorStatus::Warning,
            "D-Bus",
            crate::notify::platforms::native::no_bus(address.as_deref(), &error),
            Some(
                "desktop notifications need a desktop session (or `dbus-launch`); the \
                 terminal, ntfy, Gotify and Telegram work without it",
            ),
        )
    }
    #[cfg(not(all(unix, not(target_os = "macos"))))]
    {
        row(
            DoctorStatus::Ok,
            "D-Bus",
            "not used here: notifications go to the system's notification centre",
            None,
        )
    }
}

/// Keyboard protocol, clipboard and colours.
pub(super) fn terminal(probe: TerminalProbe) -> Vec<DoctorRow> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    vec![
        keyboard(probe, env("UNIPI_TUI_DISABLE_KEYBOARD_ENHANCEMENT")),
        clipboard(probe, env("TMUX").is_some(), env("TERM")),
        colour(env("NO_COLOR"), env("COLORTERM"), env("TERM")),
    ]
}

fn keyboard(probe: TerminalProbe, disabled: Option<String>) -> DoctorRow {
    const FIX: &str = "in tmux: `set -s extended-keys on`; or a terminal with the kitty keyboard \
                       protocol (kitty, WezTerm, foot, Ghostty, recent iTerm2)";
    let name = "keyboard";
    match probe {
        TerminalProbe::NotATerminal => row(
            DoctorStatus::Warning,
            name,
            "not a terminal, skipped",
            Some("run `unipi-tui doctor` in the terminal you use the workbench in"),
        ),
        _ if disabled.as_deref().is_some_and(|v| v != "0") => row(
            DoctorStatus::Warning,
            name,
            "UNIPI_TUI_DISABLE_KEYBOARD_ENHANCEMENT is set: legacy keys (Shift+Enter and some \
             Ctrl chords cannot be told apart)",
            Some("unset UNIPI_TUI_DISABLE_KEYBOARD_ENHANCEMENT"),
        ),
        TerminalProbe::Workbench(Some(KeyboardProtocol::Kitty)) => row(
            DoctorStatus::Ok,
            name,
            "the kitty keyboard protocol is in use",
            None,
        ),
        TerminalProbe::Workbench(Some(KeyboardProtocol::ModifyOtherKeys)) => row(
            DoctorStatus::Ok,
            name,
            "xterm modifyOtherKeys is in use (the terminal did not offer the kitty protocol)",
            None,
        ),
        TerminalProbe::Workbench(Some(KeyboardProtocol::Legacy)) => row(
            DoctorStatus::Warning,
            name,
            "legacy keys are in use",
            Some(FIX),
        ),
        TerminalProbe::Workbench(None) => row(
            DoctorStatus::Warning,
            name,
            "no terminal attached to the workbench, skipped",
            None,
        ),
        TerminalProbe::Query => match crossterm::terminal::supports_keyboard_enhancement() {
            Ok(true) => row(
                DoctorStatus::Ok,
                name,
                "the terminal speaks the kitty keyboard protocol",
                None,
            ),
            Ok(false) => row(
                DoctorStatus::Warning,
                name,
                "no kitty keyboard protocol: the workbench asks for xterm modifyOtherKeys, \
                 which some terminals ignore",
                Some(FIX),
            ),
            Err(err) => row(
                DoctorStatus::Warning,
                name,
                format!("the terminal did not answer the keyboard query ({err})"),
                Some(FIX),
            ),
        },
    }
}

fn clipboard(probe: TerminalProbe, in_tmux: bool, term: Option<String>) -> DoctorRow {
    let name = "clipboard";
    if probe == TerminalProbe::NotATerminal {
        return row(DoctorStatus::Warning, name, "not a terminal, skipped", None);
    }
    if in_tmux {
        let setting = std::process::Command::new("tmux")
            .args(["show-options", "-gsv", "set-clipboard"])
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned());
        return match setting.as_deref() {
            Some("off") => row(
                DoctorStatus::Warning,
                name,
                "inside tmux with set-clipboard off: copies (OSC 52) stop at tmux",
                Some(
                    "`tmux set -s set-clipboard on` (or `external`), and allow OSC 52 in the terminal",
                ),
            ),
            Some(value) => row(
                DoctorStatus::Ok,
                name,
                format!("copies go out as OSC 52 through tmux (set-clipboard {value})"),
                None,
            ),
            None => row(
                DoctorStatus::Warning,
                name,
                "inside tmux, whose set-clipboard could not be read",
                Some("`tmux set -s set-clipboard on`"),
            ),
        };
    }
    match term.as_deref() {
        Some(term) if term.starts_with("screen") => row(
            DoctorStatus::Warning,
            name,
            "inside GNU screen, which does not pass OSC 52 on",
            Some("use tmux with set-clipboard on, or run the workbench outside screen"),
        ),
        Some(term) => row(
            DoctorStatus::Ok,
            name,
            format!(
                "copies go out as OSC 52 (TERM={term}); also over SSH, where the terminal allows it"
            ),
            None,
        ),
        None => row(
            DoctorStatus::Warning,
            name,
            "TERM is not set",
            Some("set TERM to your terminal's name"),
        ),
    }
}

fn colour(no_color: Option<String>, colorterm: Option<String>, term: Option<String>) -> DoctorRow {
    let name = "colour";
    if no_color.is_some() {
        return row(
            DoctorStatus::Ok,
            name,
            "NO_COLOR is set: the workbench draws without colours",
            None,
        );
    }
    let colorterm = colorterm.unwrap_or_default();
    if colorterm == "truecolor" || colorterm == "24bit" {
        return row(
            DoctorStatus::Ok,
            name,
            format!("24-bit colour (COLORTERM={colorterm})"),
            None,
        );
    }
    match term.as_deref() {
        None | Some("dumb") => row(
            DoctorStatus::Warning,
            name,
            format!("TERM={}: no colours", term.as_deref().unwrap_or("(unset)")),
            Some("set TERM to your terminal's name, e.g. xterm-256color"),
        ),
        Some(term) if term.contains("256color") || term.contains("kitty") => row(
            DoctorStatus::Ok,
            name,
            format!("256 colours (TERM={term}); themes' RGB colours are approximated"),
            Some("set COLORTERM=truecolor if the terminal has 24-bit colour"),
        ),
        Some(term) => row(
            DoctorStatus::Warning,
            name,
            format!("TERM={term}: 16 colours at most"),
            Some("set TERM=xterm-256color (or COLORTERM=truecolor) if the terminal can do more"),
        ),
    }
}

/// The private runtime directory and the user's data directories: there (or made on first
/// use), owned by the user, mode 0700.
pub(super) fn directories(home: Option<&Path>) -> Vec<DoctorRow> {
    let mut rows = vec![match crate::sys::private_dir::runtime_root() {
        Ok(root) => match &root.notice {
            Some(notice) => row(
                DoctorStatus::Warning,
                "runtime dir",
                format!("{}: {notice}", root.path.display()),
                Some("set XDG_RUNTIME_DIR to a private directory of yours"),
            ),
            None => private("runtime dir", &root.path),
        },
        Err(err) => row(
            DoctorStatus::Broken,
            "runtime dir",
            format!("no private runtime directory: {err}"),
            Some("set XDG_RUNTIME_DIR to a private directory of yours (mode 0700)"),
        ),
    }];
    if let Some(home) = home {
        rows.push(private("data dir", &crate::sessiondb::default_db_dir(home)));
    }
    if let Some(logs) = crate::cli::log_file_path().parent() {
        rows.push(private("log dir", logs));
    }
    rows
}

/// A directory that must be the user's alone.
fn private(name: &str, dir: &Path) -> DoctorRow {
    use std::os::unix::fs::MetadataExt as _;
    let shown = dir.display();
    let meta = match std::fs::metadata(dir) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return row(
                DoctorStatus::Ok,
                name,
                format!("{shown} is made (mode 0700) on first use"),
                None,
            );
        }
        Err(err) => {
            return row(
                DoctorStatus::Broken,
                name,
                format!("{shown}: {err}"),
                Some(&format!(
                    "make {shown} a directory of yours: chmod 700 {shown}"
                )),
            );
        }
    };
    let uid = nix::unistd::getuid().as_raw();
    let mode = meta.mode() & 0o7777;
    if !meta.is_dir() {
        row(
            DoctorStatus::Broken,
            name,
            format!("{shown} is not a directory"),
            Some(&format!("move {shown} away")),
        )
    } else if meta.uid() != uid {
        row(
            DoctorStatus::Broken,
            name,
            format!(
                "{shown} belongs to uid {}, not to you (uid {uid})",
                meta.uid()
            ),
            Some(&format!("chown $USER {shown}, or remove it")),
        )
    } else if mode & 0o077 != 0 {
        row(
            DoctorStatus::Warning,
            name,
            format!("{shown} is mode {mode:04o}: others can look in"),
            Some(&format!(
                "chmod 700 {shown} (the workbench tightens it when it next writes there)"
            )),
        )
    } else {
        row(
            DoctorStatus::Ok,
            name,
            format!("{shown} · yours, mode {mode:04o}"),
            None,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_support_follows_no_color_colorterm_and_term() {
        let s = |v: &str| Some(v.to_owned());
        let table = [
            (s("1"), None, s("dumb"), DoctorStatus::Ok, "NO_COLOR"),
            (None, s("truecolor"), s("xterm"), DoctorStatus::Ok, "24-bit"),
            (None, None, s("xterm-256color"), DoctorStatus::Ok, "256"),
            (None, None, s("xterm"), DoctorStatus::Warning, "16 colours"),
            (None, None, s("dumb"), DoctorStatus::Warning, "no colours"),
            (None, None, None, DoctorStatus::Warning, "(unset)"),
        ];
        for (no_color, colorterm, term, status, words) in table {
            let got = colour(no_color, colorterm, term.clone());
            assert_eq!(got.status, status, "{term:?}: {got:?}");
            assert!(got.detail.contains(words), "{term:?}: {got:?}");
        }
    }

    #[test]
    fn without_a_terminal_the_terminal_checks_are_skipped_with_a_warning() {
        for check in terminal(TerminalProbe::NotATerminal).iter().take(2) {
            assert_eq!(check.status, DoctorStatus::Warning, "{check:?}");
            assert!(
                check.detail.contains("not a terminal, skipped"),
                "{check:?}"
            );
        }
    }

    #[test]
    fn a_directory_others_can_read_is_a_warning_and_a_private_one_is_ok() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        let check = private("data dir", &open);
        assert_eq!(check.status, DoctorStatus::Warning, "{check:?}");
        assert!(check.detail.contains("0755"), "{check:?}");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(private("data dir", &open).status, DoctorStatus::Ok);
        let missing = private("data dir", &dir.path().join("missing"));
        assert_eq!(missing.status, DoctorStatus::Ok, "{missing:?}");
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert_eq!(private("data dir", &file).status, DoctorStatus::Broken);
    }
}

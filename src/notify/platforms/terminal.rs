//! The terminal the workbench runs in as a notification channel — the one that reaches a user
//! over SSH with no set-up: the terminal's own desktop notification (OSC 9 for iTerm2, WezTerm
//! and Ghostty; OSC 777 for foot and urxvt; OSC 99 for kitty) or the bell. The bytes go out
//! through the screen's handle (`Ui::terminal`), between frames.
//!
//! Inside tmux an OSC notification is wrapped in tmux's DCS passthrough (the same wrapping the
//! pane uses for Pi's own notifications; it needs `allow-passthrough on`), and a bell follows
//! it: tmux marks the window and forwards the bell by its own `bell-action` even where
//! passthrough is off. Titles and messages lose their control characters, so nothing in them can
//! end the sequence early; OSC 777 separates fields with `;`, so its title has none.

use std::sync::atomic::{AtomicU64, Ordering};

use super::Notice;
use crate::notify::config::TerminalMethod;
use crate::pane::emulator::tmux_passthrough;

const ST: &str = "\x1b\\";
const BEL: u8 = 0x07;

/// The method `auto` stands for, from the environment the workbench was started in.
pub(crate) fn detect(env: impl Fn(&str) -> Option<String>) -> TerminalMethod {
    let term = env("TERM").unwrap_or_default();
    let program = env("TERM_PROGRAM").unwrap_or_default();
    // Under tmux, TERM_PROGRAM is tmux; iTerm2 also says who it is in LC_TERMINAL.
    let terminal = env("LC_TERMINAL").unwrap_or_default();
    if term == "xterm-kitty" || env("KITTY_WINDOW_ID").is_some() {
        TerminalMethod::Osc99
    } else if ["iTerm.app", "WezTerm", "ghostty"].contains(&program.as_str())
        || terminal == "iTerm2"
        || term == "xterm-ghostty"
        || env("WEZTERM_PANE").is_some()
    {
        TerminalMethod::Osc9
    } else if term.starts_with("foot") || term.starts_with("rxvt-unicode") {
        TerminalMethod::Osc777
    } else {
        TerminalMethod::Bell
    }
}

/// The bytes that notify with `method` (already resolved from `auto`), wrapped for tmux when
/// `in_tmux`.
pub fn bytes(method: TerminalMethod, in_tmux: bool, notice: &Notice) -> Vec<u8> {
    let title = clean(&notice.title);
    let message = clean(&notice.message);
    let sequences: Vec<String> = match method {
        TerminalMethod::Auto | TerminalMethod::Bell => return vec![BEL],
        TerminalMethod::Osc9 => vec![format!("\x1b]9;{title}: {message}{ST}")],
        TerminalMethod::Osc777 => vec![format!(
            "\x1b]777;notify;{};{message}{ST}",
            title.replace(';', ",")
        )],
        TerminalMethod::Osc99 => {
            // kitty: the title, then the body under the same id (`d=0`: more to come).
            static NEXT_ID: AtomicU64 = AtomicU64::new(1);
            let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
            vec![
                format!("\x1b]99;i=unipi{id}:d=0;{title}{ST}"),
                format!("\x1b]99;i=unipi{id}:p=body;{message}{ST}"),
            ]
        }
    };
    let mut out = Vec::new();
    for sequence in sequences {
        if in_tmux {
            out.extend(tmux_passthrough(sequence.as_bytes()));
        } else {
            out.extend_from_slice(sequence.as_bytes());
        }
    }
    if in_tmux {
        out.push(BEL);
    }
    out
}

/// `text` on one line without control characters.
fn clean(text: &str) -> String {
    text.chars()
        .map(|ch| if ch.is_control() { ' ' } else { ch })
        .collect::<String>()
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::config::Priority;

    fn notice() -> Notice {
        Notice::new(
            "Pi — Input; Needed",
            "Agent asks:\nwhich\x1b]0;db\x07?",
            Priority::High,
        )
    }

    fn shown(bytes: &[u8]) -> String {
        String::from_utf8(bytes.to_vec())
            .unwrap()
            .replace('\x1b', "␛")
            .replace('\x07', "␇")
    }

    #[test]
    fn each_method_inside_and_outside_tmux() {
        let cases = [
            (TerminalMethod::Bell, false, "␇"),
            (TerminalMethod::Bell, true, "␇"),
            (
                TerminalMethod::Osc9,
                false,
                "␛]9;Pi — Input; Needed: Agent asks: which ]0;db ?␛\\",
            ),
            (
                TerminalMethod::Osc9,
                true,
                "␛Ptmux;␛␛]9;Pi — Input; Needed: Agent asks: which ]0;db ?␛␛\\␛\\␇",
            ),
            (
                TerminalMethod::Osc777,
                false,
                "␛]777;notify;Pi — Input, Needed;Agent asks: which ]0;db ?␛\\",
            ),
            (
                TerminalMethod::Osc777,
                true,
                "␛Ptmux;␛␛]777;notify;Pi — Input, Needed;Agent asks: which ]0;db ?␛␛\\␛\\␇",
            ),
        ];
        for (method, tmux, want) in cases {
            assert_eq!(
                shown(&bytes(method, tmux, &notice())),
                want,
                "{method:?} tmux={tmux}"
            );
        }
    }

    #[test]
    fn kitty_gets_title_and_body_under_one_id() {
        let plain = shown(&bytes(TerminalMethod::Osc99, false, &notice()));
        let id = plain
            .split("i=")
            .nth(1)
            .and_then(|rest| rest.split(':').next())
            .unwrap()
            .to_owned();
        assert_eq!(
            plain,
            format!(
                "␛]99;i={id}:d=0;Pi — Input; Needed␛\\␛]99;i={id}:p=body;Agent asks: which ]0;db ?␛\\"
            )
        );
        let wrapped = shown(&bytes(TerminalMethod::Osc99, true, &notice()));
        assert!(wrapped.starts_with("␛Ptmux;␛␛]99;i=unipi"), "{wrapped}");
        assert_eq!(wrapped.matches("␛Ptmux;").count(), 2, "{wrapped}");
        assert!(wrapped.ends_with("␛\\␇"), "{wrapped}");
    }

    #[test]
    fn auto_is_decided_from_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |key: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let cases: [(&'static [(&str, &str)], TerminalMethod); 6] = [
            (&[("TERM", "xterm-kitty")], TerminalMethod::Osc99),
            (
                &[("KITTY_WINDOW_ID", "1"), ("TERM", "tmux-256color")],
                TerminalMethod::Osc99,
            ),
            (&[("TERM_PROGRAM", "WezTerm")], TerminalMethod::Osc9),
            (
                &[("TERM_PROGRAM", "tmux"), ("LC_TERMINAL", "iTerm2")],
                TerminalMethod::Osc9,
            ),
            (&[("TERM", "foot")], TerminalMethod::Osc777),
            (&[("TERM", "xterm-256color")], TerminalMethod::Bell),
        ];
        for (vars, method) in cases {
            assert_eq!(detect(env(vars)), method, "{vars:?}");
        }
    }
}

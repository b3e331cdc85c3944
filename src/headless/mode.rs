//! Which way a run goes, decided from Pi's own arguments and from whether a terminal is attached.
//!
//! unipi-tui is a drop-in for `pi`, so whatever Pi does without its TUI must work the same through
//! us: `pi --help | head`, `pi -p "…" </dev/null`, `pi --mode rpc` driven by another program. Only
//! a run that would show Pi's TUI on a terminal gets the workbench's pane. Pi's arguments are read
//! the way Pi reads them (a flag's value is not a flag, everything after Pi's own `--` is a
//! message), so `--name --help` or `-- -p` do not change the mode.

use std::ffi::OsString;

/// How unipi-tui runs Pi.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    /// Pi in the workbench's pane, with the widgets around it.
    Interactive,
    /// Pi as a plain child with inherited stdio and the workbench's modules behind the bridge
    /// (`-p`, `--mode json|rpc`, or no terminal on stdin or stdout).
    Headless,
    /// Pi alone, with inherited stdio: `--help`, `--version`, `--list-models`, `--export` and Pi's
    /// subcommands (`pi install …`, `pi config`, …) need nothing of the workbench.
    Direct,
}

/// Pi's options that take a value (the value may look like a flag and is skipped).
const VALUE_OPTIONS: &[&str] = &[
    "--provider",
    "--model",
    "--api-key",
    "--system-prompt",
    "--append-system-prompt",
    "--session",
    "--session-id",
    "--fork",
    "--session-dir",
    "--name",
    "-n",
    "--models",
    "--tools",
    "-t",
    "--exclude-tools",
    "-xt",
    "--thinking",
    "--extension",
    "-e",
    "--skill",
    "--prompt-template",
    "--theme",
    "--use-theme",
    "--tui-mode",
];

/// Pi's options after which Pi prints or writes something and exits.
const DIRECT_OPTIONS: &[&str] = &[
    "--help",
    "-h",
    "--version",
    "-v",
    "--list-models",
    "--export",
];

/// Pi's subcommands (its first positional argument).
const SUBCOMMANDS: &[&str] = &[
    "install",
    "remove",
    "uninstall",
    "update",
    "list",
    "config",
    "auth",
    "mcp",
];

/// Decides the mode for Pi's arguments `pi_args` with or without a terminal on stdin and stdout.
pub fn decide(pi_args: &[OsString], stdin_is_tty: bool, stdout_is_tty: bool) -> RunMode {
    let mut headless = !(stdin_is_tty && stdout_is_tty);
    let mut args = pi_args.iter().map(|arg| arg.to_string_lossy());
    let mut first_positional = true;
    while let Some(arg) = args.next() {
        let (name, inline_value) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, Some(value)),
            _ => (arg.as_ref(), None),
        };
        if name == "--" {
            break;
        }
        if DIRECT_OPTIONS.contains(&name) {
            return RunMode::Direct;
        }
        match name {
            "-p" | "--print" => headless = true,
            "--mode" => {
                let value = inline_value
                    .map(str::to_string)
                    .or_else(|| args.next().map(|value| value.into_owned()));
                if value.is_some_and(|mode| mode == "json" || mode == "rpc") {
                    headless = true;
                }
            }
            _ if VALUE_OPTIONS.contains(&name) => {
                if inline_value.is_none() {
                    args.next();
                }
            }
            _ if name.starts_with('-') => {}
            positional => {
                if first_positional && SUBCOMMANDS.contains(&positional) {
                    return RunMode::Direct;
                }
                first_positional = false;
            }
        }
    }
    if headless {
        RunMode::Headless
    } else {
        RunMode::Interactive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(args: &[&str], tty: bool) -> RunMode {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        decide(&args, tty, tty)
    }

    #[test]
    fn a_terminal_and_no_mode_flag_is_the_workbench() {
        assert_eq!(mode(&[], true), RunMode::Interactive);
        assert_eq!(mode(&["-c", "fix the bug"], true), RunMode::Interactive);
        assert_eq!(mode(&["--mode", "text"], true), RunMode::Interactive);
    }

    #[test]
    fn print_json_and_rpc_modes_are_headless() {
        for args in [
            &["-p"][..],
            &["-p", "hello"],
            &["--print", "hello"],
            &["--model", "x", "--mode", "json", "hi"],
            &["--mode=rpc"],
        ] {
            assert_eq!(mode(args, true), RunMode::Headless, "{args:?}");
        }
    }

    #[test]
    fn without_a_terminal_on_either_side_the_run_is_headless() {
        let args = vec![OsString::from("hello")];
        assert_eq!(decide(&args, false, true), RunMode::Headless);
        assert_eq!(decide(&args, true, false), RunMode::Headless);
    }

    #[test]
    fn help_version_list_export_and_subcommands_run_pi_alone() {
        for args in [
            &["--help"][..],
            &["-h"],
            &["-v"],
            &["--version"],
            &["--list-models"],
            &["--list-models", "sonnet"],
            &["--export", "s.jsonl", "out.html"],
            &["-p", "--help"],
            &["install", "npm:foo"],
            &["config"],
        ] {
            assert_eq!(mode(args, true), RunMode::Direct, "{args:?}");
            assert_eq!(mode(args, false), RunMode::Direct, "{args:?}");
        }
    }

    #[test]
    fn option_values_and_messages_are_not_read_as_flags() {
        assert_eq!(mode(&["--name", "--help"], true), RunMode::Interactive);
        assert_eq!(mode(&["-e", "-p"], true), RunMode::Interactive);
        assert_eq!(mode(&["--", "-p", "--help"], true), RunMode::Interactive);
        assert_eq!(mode(&["explain --help"], true), RunMode::Interactive);
        // A subcommand name later in the line is a message.
        assert_eq!(mode(&["-c", "list the files"], true), RunMode::Interactive);
        assert_eq!(mode(&["hello", "list"], true), RunMode::Interactive);
    }
}

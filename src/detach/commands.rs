//! `unipi-tui ls`, `unipi-tui attach NAME` and `unipi-tui kill NAME`: the subcommands that work
//! on detachable sessions. They are ours only in first position (like `demo`); `unipi-tui -- ls`
//! sends "ls" to Pi.

use std::ffi::OsString;
use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use super::client;
use super::registry::Registry;

/// The words that start one of these subcommands.
pub const WORDS: &[&str] = &["ls", "attach", "kill"];

/// Detachable sessions.
#[derive(Debug, Parser)]
#[command(name = "unipi-tui", disable_version_flag = true)]
enum Command {
    /// List the detachable sessions: name, what Pi does, attached or not, started, pid, folder.
    Ls,
    /// Attach this terminal to session NAME; a terminal attached elsewhere is detached.
    Attach { name: String },
    /// End session NAME: Pi, its helpers, tasks and MCP servers stop, its files are removed.
    Kill { name: String },
}

/// Runs the subcommand in `args` (the command line after the program name).
pub fn main(args: &[OsString]) -> ExitCode {
    let command = match Command::try_parse_from(
        std::iter::once(OsString::from("unipi-tui")).chain(args.iter().cloned()),
    ) {
        Ok(command) => command,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let level = std::env::var("UNIPI_LOG").unwrap_or_else(|_| "info".to_owned());
    let _log_guard = crate::cli::init_logging(&crate::cli::log_file_path(), &level);
    // Where the sessions are when the usual place was refused, and how to choose it.
    if let Ok(root) = crate::sys::private_dir::runtime_root()
        && let Some(notice) = &root.notice
    {
        eprintln!("unipi-tui: note: {notice}");
    }
    match run(command) {
        Ok(code) => ExitCode::from(u8::try_from(code.clamp(0, 255)).unwrap_or(1)),
        Err(err) => {
            tracing::warn!("{err:#}");
            eprintln!("unipi-tui: {err:#}");
            ExitCode::from(1)
        }
    }
}

fn run(command: Command) -> Result<i32> {
    match command {
        Command::Ls => {
            let listed = client::list(&Registry::open()?)?;
            print!("{}", client::format_list(&listed, crate::sys::now_ms()));
            Ok(0)
        }
        Command::Attach { name } => client::attach(&name),
        Command::Kill { name } => {
            let code = client::kill(&name)?;
            println!(
                "Session {name} ended (its workbench {}).",
                how_it_ended(code)
            );
            Ok(0)
        }
    }
}

/// How a session's workbench ended, in words, from its exit code. A workbench ended by a
/// signal exits with `128 + signal`, as a shell reports one (`kill` hangs it up: 129).
fn how_it_ended(code: i32) -> String {
    let signal = code
        .checked_sub(128)
        .and_then(|number| nix::sys::signal::Signal::try_from(number).ok());
    match signal {
        Some(nix::sys::signal::Signal::SIGHUP) => "hung up".to_owned(),
        Some(nix::sys::signal::Signal::SIGKILL) => "was killed (SIGKILL)".to_owned(),
        Some(nix::sys::signal::Signal::SIGTERM) => "was terminated (SIGTERM)".to_owned(),
        Some(nix::sys::signal::Signal::SIGINT) => "was interrupted (SIGINT)".to_owned(),
        Some(other) => format!("was ended by {}", other.as_str()),
        None => format!("exited with exit code {code}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sessions_ending_is_said_in_words() {
        for (code, words) in [
            (129, "hung up"),
            (137, "was killed (SIGKILL)"),
            (143, "was terminated (SIGTERM)"),
            (130, "was interrupted (SIGINT)"),
            (131, "was ended by SIGQUIT"),
            (0, "exited with exit code 0"),
            (3, "exited with exit code 3"),
            (200, "exited with exit code 200"),
            (-1, "exited with exit code -1"),
        ] {
            assert_eq!(how_it_ended(code), words, "{code}");
        }
    }
}

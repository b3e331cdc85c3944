//! `unipi-tui --detachable NAME [PI_ARGS…]` (or plain `unipi-tui` with detach enabled in
//! `workbench.json`): start the session process, wait until it listens, and attach to it.
//!
//! The workbench the session runs gets the same command line minus `--detachable NAME`, in the
//! same working directory and environment — minus the watchdog tag of a workbench this was
//! started from (a session outlives whatever started it) and tmux's variables (the session is
//! in no tmux; a terminal attaching from one says so itself).

use std::ffi::OsString;
use std::io::{BufRead as _, IsTerminal as _};
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context as _, Result, bail};

use super::daemon::{READY, SESSION_ENV, SUBCOMMAND, log_path};
use super::registry::{Registry, check_name, name_from_folder};
use crate::cli::SplitArgs;
use crate::config::module_file::ModuleConfig as _;
use crate::headless::RunMode;

/// A session to start.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    pub name: String,
    /// The workbench's command line (after the program name).
    pub args: Vec<OsString>,
}

/// Whether this run starts a session: `--detachable NAME`, or detach enabled in the config for
/// an interactive run that is not itself a session's workbench. `flag` is `--detachable`'s value.
pub fn plan(flag: Option<&str>, split: &SplitArgs) -> Result<Option<Plan>> {
    let interactive = crate::headless::decide(
        &split.pi,
        std::io::stdin().is_terminal(),
        std::io::stdout().is_terminal(),
    ) == RunMode::Interactive;
    let name = match flag {
        Some(name) => {
            check_name(name)?;
            if !interactive {
                bail!(
                    "--detachable needs an interactive run: a terminal on stdin and stdout, and \
                     none of Pi's -p, --mode, --help, --version, --list-models, --export or \
                     subcommands"
                );
            }
            name.to_owned()
        }
        None => {
            if !interactive || std::env::var_os(SESSION_ENV).is_some() {
                return Ok(None);
            }
            let workspace = std::env::current_dir().context("cannot read the working directory")?;
            // Its problems are the workbench's to show (start-up box and log), like every
            // config file's: it reads the file again at start.
            let (config, _) =
                super::config::DetachConfig::load(dirs::home_dir().as_deref(), &workspace);
            if !config.enabled {
                return Ok(None);
            }
            match config.name {
                Some(name) => name,
                None => Registry::open()?.free_name(&name_from_folder(&workspace)),
            }
        }
    };
    Ok(Some(Plan {
        name,
        args: workbench_args(split),
    }))
}

/// The command line without `--detachable NAME`: `[demo] OURS… -- PI_ARGS…` (the `--` keeps
/// Pi's arguments Pi's, whatever they look like).
fn workbench_args(split: &SplitArgs) -> Vec<OsString> {
    let mut args = Vec::new();
    if split.demo {
        args.push(OsString::from("demo"));
    }
    let mut ours = split.ours.iter();
    while let Some(arg) = ours.next() {
        let text = arg.to_string_lossy();
        if text == "--detachable" {
            ours.next();
        } else if !text.starts_with("--detachable=") {
            args.push(arg.clone());
        }
    }
    args.push(OsString::from("--"));
    args.extend(split.pi.iter().cloned());
    args
}

/// Starts the session process for `plan` and attaches to it; the exit code is the client's.
pub fn run(plan: &Plan, log_level: &str) -> Result<i32> {
    let registry = Registry::open()?;
    if registry.find(&plan.name).is_ok() {
        bail!(
            "a session named {0:?} is running already: `unipi-tui attach {0}` attaches to it, \
             `unipi-tui kill {0}` ends it",
            plan.name
        );
    }
    let exe = std::env::current_exe().context("cannot find the unipi-tui binary")?;
    let log = log_path();
    let stderr = open_log(&log)
        .map(Stdio::from)
        .unwrap_or_else(|_| Stdio::null());
    let mut child = Command::new(&exe)
        .arg(SUBCOMMAND)
        .arg(&plan.name)
        .arg(log_level)
        .arg(&exe)
        .args(&plan.args)
        .env_remove(crate::sys::watchdog::TOKEN_ENV)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .context("cannot start the session process")?;
    tracing::info!(
        session = plan.name,
        pid = child.id(),
        "session process started"
    );
    let mut line = String::new();
    if let Some(stdout) = child.stdout.take() {
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .context("cannot read from the session process")?;
    }
    let line = line.trim();
    if line != READY {
        let why = line.strip_prefix("error: ").unwrap_or(line);
        if why.is_empty() {
            bail!(
                "the session process ended before it was ready; its log is {}",
                log.display()
            );
        }
        bail!("{why}");
    }
    // Not waited for: the session outlives this process by design.
    drop(child);
    super::client::attach(&plan.name)
}

/// The session log, private like the workbench's ([`crate::cli::init_logging`]).
fn open_log(path: &Path) -> std::io::Result<std::fs::File> {
    crate::sys::private_dir::open_private_append(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_workbench_gets_the_command_line_without_detachable() {
        let split = SplitArgs {
            demo: true,
            ours: os(&["--detachable", "d1", "--log-level=debug", "--detachable=x"]),
            pi: os(&["--pi-bin", "-c", "hi"]),
        };
        assert_eq!(
            workbench_args(&split),
            os(&["demo", "--log-level=debug", "--", "--pi-bin", "-c", "hi"])
        );
    }
}

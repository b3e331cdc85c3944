//! Starting the real `unipi-tui` in a PTY for end-to-end tests: the pinned Pi of a line and a
//! throwaway HOME with the XDG directories inside it, so nothing of the machine's user is read or
//! written; `demo` runs it against a scenario of the scripted model.

use std::path::{Path, PathBuf};

use super::pi::{PiLine, pi_install};
use super::term::{OuterOptions, Session};

/// Spawns `unipi-tui demo --scenario <scenario>` with `line`'s Pi in `home` (also the working
/// directory), passing `pi_args` on to Pi and `extra_env` into the workbench's environment.
pub fn spawn_demo(
    line: PiLine,
    scenario: &Path,
    home: &Path,
    pi_args: &[&str],
    extra_env: &[(&str, &str)],
    outer: OuterOptions,
) -> Session {
    let scenario = scenario.display().to_string();
    let demo = ["demo", "--scenario", scenario.as_str()];
    spawn_workbench(line, &demo, pi_args, home, home, extra_env, outer)
}

/// Spawns `unipi-tui <before…> --pi-bin <line's Pi> --log-level debug <after…>` in `cwd` with
/// HOME (and the XDG directories) in `home` and `extra_env` added.
pub fn spawn_workbench(
    line: PiLine,
    before: &[&str],
    after: &[&str],
    home: &Path,
    cwd: &Path,
    extra_env: &[(&str, &str)],
    outer: OuterOptions,
) -> Session {
    let command = workbench_command(line, before, after, home, extra_env);
    let args: Vec<&str> = command.args.iter().map(String::as_str).collect();
    Session::spawn(&command.program, &args, &command.env(), cwd, outer).unwrap()
}

/// What [`spawn_workbench`] runs, for a test that wraps it (e.g. to keep its stderr).
pub struct WorkbenchCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl WorkbenchCommand {
    /// The environment in [`Session::spawn`]'s form.
    pub fn env(&self) -> Vec<(&str, String)> {
        self.env
            .iter()
            .map(|(key, value)| (key.as_str(), value.clone()))
            .collect()
    }
}

/// The command line and environment of [`spawn_workbench`].
pub fn workbench_command(
    line: PiLine,
    before: &[&str],
    after: &[&str],
    home: &Path,
    extra_env: &[(&str, &str)],
) -> WorkbenchCommand {
    let pi = pi_install(line).unwrap_or_else(|err| panic!("{err:#}"));
    let mut path = std::env::var("PATH").unwrap_or_default();
    if let Some(node) = &pi.node_bin_dir {
        path = format!("{}:{path}", node.display());
    }
    let pi_bin = pi.bin.display().to_string();
    let mut args: Vec<String> = before.iter().map(|arg| arg.to_string()).collect();
    args.extend([
        "--pi-bin".to_owned(),
        pi_bin,
        "--log-level".to_owned(),
        "debug".to_owned(),
    ]);
    args.extend(after.iter().map(|arg| arg.to_string()));
    let home_str = home.display().to_string();
    let mut env = vec![
        ("PATH".to_owned(), path),
        ("HOME".to_owned(), home_str.clone()),
        ("XDG_CONFIG_HOME".to_owned(), format!("{home_str}/.config")),
        (
            "XDG_STATE_HOME".to_owned(),
            format!("{home_str}/.local/state"),
        ),
        ("XDG_CACHE_HOME".to_owned(), format!("{home_str}/.cache")),
    ];
    env.extend(
        extra_env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    WorkbenchCommand {
        program: PathBuf::from(env!("CARGO_BIN_EXE_unipi-tui")),
        args,
        env,
    }
}

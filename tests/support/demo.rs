//! Starting the real `unipi-tui` in a PTY for end-to-end tests: the pinned Pi of a line and a
//! throwaway HOME with the XDG directories inside it, so nothing of the machine's user is read or
//! written; `demo` runs it against a scenario of the scripted model.

use std::path::Path;

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
    let pi = pi_install(line).unwrap_or_else(|err| panic!("{err:#}"));
    let mut path = std::env::var("PATH").unwrap_or_default();
    if let Some(node) = &pi.node_bin_dir {
        path = format!("{}:{path}", node.display());
    }
    let pi_bin = pi.bin.display().to_string();
    let mut args = before.to_vec();
    args.extend(["--pi-bin", pi_bin.as_str(), "--log-level", "debug"]);
    args.extend_from_slice(after);
    let home_str = home.display().to_string();
    let mut env = vec![
        ("PATH", path),
        ("HOME", home_str.clone()),
        ("XDG_CONFIG_HOME", format!("{home_str}/.config")),
        ("XDG_STATE_HOME", format!("{home_str}/.local/state")),
        ("XDG_CACHE_HOME", format!("{home_str}/.cache")),
    ];
    env.extend(extra_env.iter().map(|(k, v)| (*k, v.to_string())));
    Session::spawn(
        Path::new(env!("CARGO_BIN_EXE_unipi-tui")),
        &args,
        &env,
        cwd,
        outer,
    )
    .unwrap()
}

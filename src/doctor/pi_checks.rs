//! Pi (found as the workbench finds it, never installed from here) and the Node that runs it.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{DoctorRow, DoctorStatus, row};
use crate::pi::{self, InstallPolicy, PiCommand, PiSource};

/// Finds Pi the way the workbench does, without installing it; the row says what was found.
pub(super) fn locate_pi(explicit: Option<&Path>) -> (DoctorRow, Option<PiCommand>) {
    let policy = InstallPolicy::never(crate::cli::log_file_path());
    match pi::locate(explicit, &policy, &mut |_| {}) {
        Ok(pi) => (describe_pi(&pi), Some(pi)),
        Err(err) if explicit.is_some() => (
            row(
                DoctorStatus::Broken,
                "Pi",
                format!("{err:#}"),
                Some(
                    "point --pi-bin (or UNIPI_PI_BIN) at Pi's executable, or leave it out to use \
                     `pi` on PATH",
                ),
            ),
            None,
        ),
        Err(err) => {
            let refused = InstallPolicy::from_environment(crate::cli::log_file_path()).refuses();
            let hint = pi::install_hint();
            let cache = pi::cache_dir()
                .map_or_else(|| "the cache directory".into(), |d| d.display().to_string());
            let detail = if refused {
                format!("not found, and UNIPI_TUI_NO_INSTALL forbids installing it ({err:#})")
            } else {
                let v = pi::versions();
                format!(
                    "not installed yet: the first `unipi-tui` run installs {}@{} into {cache} \
                     (after asking)",
                    v.current_package, v.current_version
                )
            };
            let status = if refused {
                DoctorStatus::Broken
            } else {
                DoctorStatus::Warning
            };
            (row(status, "Pi", detail, Some(&hint)), None)
        }
    }
}

/// The row for a Pi that was found: where, which version, which line.
pub(super) fn describe_pi(pi: &PiCommand) -> DoctorRow {
    let from = match pi.source {
        PiSource::Explicit => "--pi-bin",
        PiSource::Path => "on PATH",
        PiSource::Cache => "pinned, in the cache",
    };
    let program = launcher(pi);
    match &pi.version {
        Some(version) => row(
            DoctorStatus::Ok,
            "Pi",
            format!(
                "{} ({from}) · {version}, {}",
                program.display(),
                line_of(version)
            ),
            None,
        ),
        None => row(
            DoctorStatus::Warning,
            "Pi",
            format!(
                "{} ({from}) · version unknown: neither its package.json nor `--version` said",
                program.display()
            ),
            Some("check that the program is Pi: `<it> --version` prints Pi's version"),
        ),
    }
}

/// The Pi line a version belongs to.
fn line_of(version: &str) -> &'static str {
    if pi::version_at_least(version, "1.0.0") {
        "the current line (1.x)"
    } else {
        "the legacy line (0.7x)"
    }
}

/// The Pi script itself (a pinned Pi runs as `node <script>`).
fn launcher(pi: &PiCommand) -> PathBuf {
    match (&pi.source, pi.args.first()) {
        (PiSource::Cache, Some(script)) => PathBuf::from(script),
        _ => pi.program.clone(),
    }
}

/// The Node that runs `pi` — `seen` running it when the bridge check saw it, else its own for a
/// pinned Pi, else the first on Pi's PATH — and whether it is new enough for Pi's line.
pub(super) fn node(pi: &PiCommand, seen: Option<PathBuf>) -> DoctorRow {
    let node = if seen.is_some() {
        seen
    } else if pi.source == PiSource::Cache {
        Some(pi.program.clone())
    } else {
        let path = pi
            .env
            .iter()
            .find(|(key, _)| key == "PATH")
            .map(|(_, value)| value.clone())
            .or_else(|| std::env::var_os("PATH"));
        path.and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("node"))
                .find(|candidate| candidate.is_file())
        })
    };
    let v = pi::versions();
    let need = match pi.version.as_deref() {
        Some(version) if !pi::version_at_least(version, "1.0.0") => "20.0.0".to_owned(),
        _ => v.current_min_node.clone(),
    };
    let Some(node) = node else {
        return row(
            DoctorStatus::Broken,
            "Node",
            "not found on PATH; Pi runs on Node.js",
            Some(&format!("install Node.js >= {need}")),
        );
    };
    let version = Command::new(&node)
        .args(["-p", "process.versions.node"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .filter(|version| !version.is_empty());
    let Some(version) = version else {
        return row(
            DoctorStatus::Broken,
            "Node",
            format!("{} does not run", node.display()),
            Some(&format!("reinstall Node.js >= {need}")),
        );
    };
    if pi::version_at_least(&version, &need) {
        row(
            DoctorStatus::Ok,
            "Node",
            format!("{} · {version} (this Pi needs >= {need})", node.display()),
            None,
        )
    } else {
        row(
            DoctorStatus::Broken,
            "Node",
            format!(
                "{} · {version}, older than the {need} this Pi needs",
                node.display()
            ),
            Some(&format!(
                "install Node.js >= {need}, or use the legacy Pi ({}@{}) on Node 20",
                v.legacy_package, v.legacy_version
            )),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_follows_the_major_version() {
        assert_eq!(line_of("1.6.0"), "the current line (1.x)");
        assert_eq!(line_of("0.73.1"), "the legacy line (0.7x)");
    }
}

//! Which version a Pi program is, even when the program is a wrapper.
//!
//! The version decides how Pi is started (Pi 1.x gets `--no-mcp` when the workbench owns the MCP
//! servers; without it every server would run twice) and is shown by `--version` and
//! `/unipi:info`. The package's `package.json` next to the resolved program answers at no cost.
//! Behind a wrapper (pnpm, volta, asdf or mise shims, a shell script that sets PATH) there is no
//! package nearby, so the program itself is asked (`pi --version`, about a second of Node
//! start-up) and the answer is kept in the cache directory, keyed by the program's path, size
//! and modification time: a changed or replaced wrapper is asked again.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How long `pi --version` may take before the version is left unknown.
const ASK_TIMEOUT: Duration = Duration::from_secs(20);
/// How much of `program --version`'s output is read: a version is one line; a program that
/// prints more (one that ignores its arguments and streams) is stopped, not read to its end.
const ASK_OUTPUT_LIMIT: u64 = 64 * 1024;
/// The cache file of versions asked from programs, in the cache directory.
const CACHE_FILE: &str = "pi-versions.json";

/// The version of the Pi that `program` runs: from its package when one is near the resolved
/// file, else by running `program --version` with `env` added (cached in `cache_dir`).
pub(crate) fn version_of(
    program: &Path,
    env: &[(OsString, OsString)],
    cache_dir: Option<&Path>,
) -> Option<String> {
    package_version_near(program).or_else(|| asked_version(program, env, cache_dir))
}

/// Reads the version of the Pi package that `program` belongs to (a `.bin/pi` symlink or the
/// CLI script), by walking up from the resolved file to the package.json naming a Pi package.
pub(crate) fn package_version_near(program: &Path) -> Option<String> {
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

/// One program's answer, valid while the file keeps its size and modification time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Asked {
    size: u64,
    mtime_ns: i128,
    /// `None`: the program answers `--version` without a version (or does not end).
    version: Option<String>,
}

/// What identifies a program's file for the cache.
fn stamp(program: &Path) -> Option<(String, u64, i128)> {
    let meta = std::fs::metadata(program).ok()?;
    let mtime_ns = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
    Some((program.display().to_string(), meta.len(), mtime_ns))
}

fn asked_version(
    program: &Path,
    env: &[(OsString, OsString)],
    cache_dir: Option<&Path>,
) -> Option<String> {
    let (key, size, mtime_ns) = stamp(program)?;
    let cache_path = cache_dir.map(|dir| dir.join(CACHE_FILE));
    let mut cache: BTreeMap<String, Asked> = cache_path
        .as_deref()
        .and_then(|path| std::fs::read_to_string(path).ok())
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    if let Some(entry) = cache.get(&key)
        && entry.size == size
        && entry.mtime_ns == mtime_ns
    {
        return entry.version.clone();
    }
    let version = match ask(program, env) {
        Asking::Answered(version) => version,
        Asking::NoAnswer => return None,
    };
    match &version {
        Some(version) => tracing::info!("{} --version says {version}", program.display()),
        None => tracing::warn!(
            "{} --version printed no version; its version is unknown",
            program.display()
        ),
    }
    if let Some(path) = cache_path {
        cache.insert(
            key,
            Asked {
                size,
                mtime_ns,
                version: version.clone(),
            },
        );
        let written = cache_dir
            .map_or(Ok(()), std::fs::create_dir_all)
            .map_err(anyhow::Error::from)
            .and_then(|()| Ok(serde_json::to_value(&cache)?))
            .and_then(|value| super::offline::write_json_atomic(&path, &value));
        if let Err(err) = written {
            tracing::warn!("cannot cache Pi's version: {err:#}");
        }
    }
    version
}

/// Runs `program --version` (stdin closed, in its own process group so a wrapper's children
/// go with it) and reads its output a line at a time until the first version-looking word.
///
/// The answer counts from the line that holds it: a program that prints its version and then
/// lingers (a shim that keeps running, a wrapper that ignores its arguments and waits) is
/// stopped then, not waited for. `Answered(None)` when the program ended, or printed the limit,
/// without a version.
fn ask(program: &Path, env: &[(OsString, OsString)]) -> Asking {
    use crate::sys::SpawnGrouped as _;
    // `pi --version` loads no extension, but what a wrapper runs is its own business.
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let spawned = Command::new(program)
        .arg("--version")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .envs(super::compile_cache::env_for(&cwd, env))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn_grouped();
    let (mut child, group) = match spawned {
        Ok(spawned) => spawned,
        Err(err) => {
            tracing::warn!("cannot run {} --version: {err}", program.display());
            return Asking::NoAnswer;
        }
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take();
    std::thread::spawn(move || {
        use std::io::{BufRead as _, BufReader, Read as _};
        let mut found = None;
        if let Some(out) = stdout {
            let mut lines = BufReader::new(out.take(ASK_OUTPUT_LIMIT));
            let mut line = Vec::new();
            while lines.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                found = parse_version(&String::from_utf8_lossy(&line));
                if found.is_some() {
                    break;
                }
                line.clear();
            }
        }
        let _ = tx.send(found);
    });
    let asking = match rx.recv_timeout(ASK_TIMEOUT) {
        Ok(found) => Asking::Answered(found),
        Err(_) => {
            tracing::warn!(
                "{} --version printed no version within {ASK_TIMEOUT:?}; its version is unknown",
                program.display()
            );
            Asking::NoAnswer
        }
    };
    // The answer is in (or the output ended, hit the limit, or the time ran out): whatever still
    // runs of the program goes. Only this thread reaps the child, so until then its id still
    // names its group.
    let _ = group.signal(nix::sys::signal::Signal::SIGKILL);
    let _ = child.wait();
    asking
}

/// What asking a program for its version came to.
#[derive(Debug, PartialEq, Eq)]
enum Asking {
    /// The program answered, or showed it will not (it ended or printed the limit without a
    /// version): kept in the cache either way.
    Answered(Option<String>),
    /// It could not be run, or printed no version in time: asked again at the next start.
    NoAnswer,
}

/// The first word shaped like `1.6.0` or `v0.73.1` in `text`.
fn parse_version(text: &str) -> Option<String> {
    text.split_whitespace()
        .map(|word| word.trim_start_matches('v'))
        .find(|word| {
            let parts: Vec<&str> = word.split('.').collect();
            parts.len() >= 2
                && parts
                    .iter()
                    .take(2)
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_version_word() {
        assert_eq!(parse_version("1.6.0\n").as_deref(), Some("1.6.0"));
        assert_eq!(parse_version("pi v0.73.1").as_deref(), Some("0.73.1"));
        assert_eq!(
            parse_version("1.7.0-beta.2").as_deref(),
            Some("1.7.0-beta.2")
        );
        assert_eq!(parse_version("no version here"), None);
        assert_eq!(parse_version("a.b.c"), None);
    }

    /// A wrapper script that prints `version` and counts its runs in `count`.
    fn wrapper(dir: &Path, version: &str, count: &Path) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let script = dir.join("pi");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\necho run >> '{}'\necho {version}\n",
                count.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        script
    }

    fn runs(count: &Path) -> usize {
        std::fs::read_to_string(count)
            .unwrap_or_default()
            .lines()
            .count()
    }

    #[test]
    fn a_wrapper_is_asked_once_and_again_when_it_changes() {
        let temp = tempfile::tempdir().unwrap();
        // The cache directory does not exist yet: the first answer creates it.
        let (bin, cache) = (temp.path().join("bin"), temp.path().join("cache/unipi-tui"));
        std::fs::create_dir_all(&bin).unwrap();
        let count = temp.path().join("count");
        let script = wrapper(&bin, "1.6.0", &count);
        assert_eq!(
            version_of(&script, &[], Some(&cache)).as_deref(),
            Some("1.6.0")
        );
        assert_eq!(
            version_of(&script, &[], Some(&cache)).as_deref(),
            Some("1.6.0")
        );
        assert_eq!(runs(&count), 1, "the cached answer was not used");
        // A different wrapper at the same path (another size) is asked again.
        let script = wrapper(&bin, "1.10.0", &count);
        assert_eq!(
            version_of(&script, &[], Some(&cache)).as_deref(),
            Some("1.10.0")
        );
        assert_eq!(runs(&count), 2);
    }

    fn script(dir: &Path, body: &str) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let script = dir.join("pi");
        std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        script
    }

    /// `pi --version` is started like every Pi: with jiti's and Node's caches made private, or
    /// off when its TMPDIR's `jiti` and `node-compile-cache` are not ours.
    #[test]
    fn the_version_probe_gets_the_private_cache_switch() {
        let temp = tempfile::tempdir().unwrap();
        let dump = temp.path().join("env");
        let script = script(
            temp.path(),
            &format!("env > '{}'\necho 1.6.0", dump.display()),
        );
        let tmp = super::super::compile_cache::foreign_tmpdir();
        let env = [(OsString::from("TMPDIR"), tmp.path().as_os_str().to_owned())];
        assert_eq!(ask(&script, &env), Asking::Answered(Some("1.6.0".into())));
        let dump = std::fs::read_to_string(dump).unwrap();
        assert!(
            super::super::compile_cache::caches_are_off_in(&dump),
            "{dump}"
        );
    }

    /// A program that ignores `--version` and streams: its version word is read from the
    /// first bytes and the program is stopped, not read to its end (or until the timeout).
    #[test]
    fn a_program_that_streams_is_read_only_at_its_start_and_stopped() {
        let temp = tempfile::tempdir().unwrap();
        let script = script(temp.path(), "echo 9.8.7\nexec yes streaming");
        assert_eq!(ask(&script, &[]), Asking::Answered(Some("9.8.7".into())));
    }

    /// A program that prints its version and then lingers (here until the test lets it go,
    /// which it never does) is answered from that line and stopped: neither waited for to the
    /// timeout (the old probe returned no version then) nor left running.
    #[test]
    fn a_program_that_lingers_after_its_version_is_answered_and_stopped() {
        let temp = tempfile::tempdir().unwrap();
        let (pid_file, go) = (temp.path().join("pid"), temp.path().join("go"));
        let body = format!(
            "echo $$ > '{pid}'\necho 2.0.1\nwhile [ ! -e '{go}' ]; do sleep 0.05; done",
            pid = pid_file.display(),
            go = go.display()
        );
        let script = script(temp.path(), &body);
        assert_eq!(ask(&script, &[]), Asking::Answered(Some("2.0.1".into())));
        // The pid was written before the version line, so it is there now.
        let pid: u32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let group = crate::sys::ProcessGroup::of_leader(pid).unwrap();
        crate::test_wait::eventually_blocking(
            format!("the lingering program ({pid}) to end"),
            crate::test_wait::WAIT,
            || !group.alive(),
        );
    }

    /// A program without a version is asked once: its answer is kept like a version.
    #[test]
    fn a_program_that_prints_no_version_has_none_and_is_asked_once() {
        let temp = tempfile::tempdir().unwrap();
        let count = temp.path().join("count");
        let script = wrapper(temp.path(), "unknown", &count);
        let cache = temp.path().join("cache");
        assert_eq!(version_of(&script, &[], Some(&cache)), None);
        assert_eq!(version_of(&script, &[], Some(&cache)), None);
        assert_eq!(runs(&count), 1, "the kept answer was not used");
    }
}

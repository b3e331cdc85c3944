//! Where sessions live: `<private runtime root>/sessions/<name>/`, one directory per session,
//! made by its session process and removed by it when the session ends.
//!
//! The `sessions` directory is private (0700, ours, not a link: [`ensure_private`]), and so is
//! each session's directory, which holds the listening `socket`, `info.json` (what the session
//! runs, where, since when) and the `owner` file naming the session process by pid and start
//! time ([`crate::sys::private_dir`]). A name is taken atomically: the session process builds
//! its directory under a temporary name — owner file, socket already listening, info — and
//! renames it into place, which fails if the name is taken; so a name never shows a half-made
//! session, and `attach` never finds a socket nobody listens on yet.
//!
//! A session process killed with `kill -9` leaves its directory behind. Its owner is then gone
//! (or its pid names another process), so every look at the registry — `ls`, `attach`, a new
//! session — removes it first ([`remove_stale`]): a crashed session never blocks its name.

use std::io;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};

use crate::sys::ProcessId;
use crate::sys::private_dir::{create_owned, ensure_private, owner_of, remove_stale};

/// The session's listening socket, in its directory.
pub(crate) const SOCKET_FILE: &str = "socket";
/// What the session runs (written once, when it starts).
pub(crate) const INFO_FILE: &str = "info.json";
/// The prefix of a directory still being built (see the module doc).
const BUILDING_PREFIX: &str = ".new";
/// The longest name; with the runtime root it must fit a socket path (108 bytes on Linux).
pub(crate) const MAX_NAME: usize = 48;
/// `sun_path` is 108 bytes with its terminating NUL.
const MAX_SOCKET_PATH: usize = 107;

/// What a session says about itself in `info.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Info {
    pub name: String,
    pub cwd: String,
    pub started_ms: u64,
    /// The program the session runs and its arguments, for the log and `ls`.
    pub command: Vec<String>,
}

/// One live session, as found in the registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub dir: PathBuf,
    pub owner: ProcessId,
}

impl Entry {
    pub fn socket(&self) -> PathBuf {
        self.dir.join(SOCKET_FILE)
    }

    pub fn info(&self) -> Option<Info> {
        let text = std::fs::read(self.dir.join(INFO_FILE)).ok()?;
        serde_json::from_slice(&text).ok()
    }
}

/// `attach` or `kill` of a name no session has.
#[derive(Debug, thiserror::Error)]
#[error("no session is named {name:?}; {}", existing_sessions(existing))]
pub struct NotFound {
    pub name: String,
    pub existing: Vec<String>,
}

fn existing_sessions(names: &[String]) -> String {
    if names.is_empty() {
        "no session runs (start one with `unipi-tui --detachable NAME`)".to_owned()
    } else {
        format!("the sessions are: {}", names.join(", "))
    }
}

/// Checks a session name: 1 to [`MAX_NAME`] letters, digits, `.`, `_` or `-`, not starting with
/// `.` or `-` (it names a directory and is typed on command lines).
pub fn check_name(name: &str) -> Result<()> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if name.is_empty() || name.len() > MAX_NAME {
        bail!(
            "a session name has 1 to {MAX_NAME} characters; {name:?} has {}",
            name.len()
        );
    }
    if name.starts_with(['.', '-']) || !name.chars().all(ok_char) {
        bail!(
            "{name:?} is not a session name: use letters, digits, '.', '_' and '-', not starting \
             with '.' or '-'"
        );
    }
    Ok(())
}

/// A name made of a folder's name: the characters a name may hold, the rest as `-`.
pub(crate) fn name_from_folder(folder: &Path) -> String {
    let base = folder
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut name: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(MAX_NAME - 4)
        .collect();
    name = name.trim_start_matches(['.', '-']).to_owned();
    if name.is_empty() {
        "session".to_owned()
    } else {
        name
    }
}

/// The sessions directory.
#[derive(Clone, Debug)]
pub struct Registry {
    dir: PathBuf,
}

impl Registry {
    /// `<private runtime root>/sessions`, made private if needed. When the usual root was
    /// refused, the root is the recorded fallback ([`crate::sys::private_dir`]), the same for
    /// every process of the user, so sessions there are found again; the root's notice is
    /// logged (and the caller shows it where the user sees it).
    pub fn open() -> Result<Registry> {
        let root = crate::sys::private_dir::runtime_root()
            .map_err(|err| anyhow::anyhow!("no private runtime directory: {err}"))?;
        if let Some(notice) = &root.notice {
            tracing::warn!("runtime directory: {notice}");
        }
        Registry::at(root.path.join("sessions"))
    }

    /// The sessions directory `dir` (tests: one in a temporary directory).
    pub fn at(dir: PathBuf) -> Result<Registry> {
        ensure_private(&dir)
            .with_context(|| format!("the sessions directory {}", dir.display()))?;
        Ok(Registry { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every live session, by name; the directories of dead ones are removed first.
    pub fn list(&self) -> Vec<Entry> {
        remove_stale(&self.dir, "");
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut found: Vec<Entry> = entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().to_str()?.to_owned();
                if name.starts_with('.') || !entry.file_type().ok()?.is_dir() {
                    return None;
                }
                let dir = entry.path();
                let owner = owner_of(&dir)?;
                owner.is_running().then_some(Entry { name, dir, owner })
            })
            .collect();
        found.sort_by(|a, b| a.name.cmp(&b.name));
        found
    }

    /// The live session `name`, or an error listing the ones there are.
    pub fn find(&self, name: &str) -> Result<Entry, NotFound> {
        let all = self.list();
        match all.iter().find(|entry| entry.name == name) {
            Some(entry) => Ok(entry.clone()),
            None => Err(NotFound {
                name: name.to_owned(),
                existing: all.into_iter().map(|entry| entry.name).collect(),
            }),
        }
    }

    /// `base`, or `base-2`, `base-3`, … : the first name no live session has.
    pub(crate) fn free_name(&self, base: &str) -> String {
        let taken: Vec<String> = self.list().into_iter().map(|entry| entry.name).collect();
        std::iter::once(base.to_owned())
            .chain((2..).map(|n| format!("{base}-{n}")))
            .find(|name| !taken.contains(name))
            .unwrap_or_else(|| base.to_owned())
    }

    /// Makes this process's session `name`: the directory with its owner file, the socket
    /// listening in it, `info.json`, renamed into place (see the module doc). Fails when a live
    /// session has the name.
    pub fn publish(&self, info: &Info) -> Result<Published> {
        check_name(&info.name)?;
        let final_dir = self.dir.join(&info.name);
        let socket_len = final_dir.join(SOCKET_FILE).as_os_str().len();
        if socket_len > MAX_SOCKET_PATH {
            bail!(
                "the session's socket path {} is {socket_len} bytes, more than a Unix socket \
                 allows ({MAX_SOCKET_PATH}); use a shorter name, or a shorter TMPDIR or \
                 XDG_RUNTIME_DIR",
                final_dir.join(SOCKET_FILE).display()
            );
        }
        remove_stale(&self.dir, "");
        let building = create_owned(&self.dir, BUILDING_PREFIX).with_context(|| {
            format!("cannot make a session directory in {}", self.dir.display())
        })?;
        let built = Self::build(&building, info).and_then(|listener| {
            match std::fs::rename(&building, &final_dir) {
                Ok(()) => Ok(listener),
                Err(err)
                    if matches!(err.raw_os_error(), Some(code)
                        if code == nix::libc::ENOTEMPTY || code == nix::libc::EEXIST) =>
                {
                    bail!(
                        "a session named {:?} is running already (attach to it with `unipi-tui \
                         attach {}`, or end it with `unipi-tui kill {}`)",
                        info.name,
                        info.name,
                        info.name
                    )
                }
                Err(err) => Err(err).with_context(|| {
                    format!("cannot move the session into {}", final_dir.display())
                }),
            }
        });
        match built {
            Ok(listener) => Ok(Published {
                dir: final_dir,
                listener: Some(listener),
            }),
            Err(err) => {
                let _ = std::fs::remove_dir_all(&building);
                Err(err)
            }
        }
    }

    fn build(dir: &Path, info: &Info) -> Result<std::os::unix::net::UnixListener> {
        use std::os::unix::fs::PermissionsExt as _;
        let socket = dir.join(SOCKET_FILE);
        let listener = std::os::unix::net::UnixListener::bind(&socket)
            .with_context(|| format!("cannot listen on {}", socket.display()))?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("cannot make {} private", socket.display()))?;
        let text = serde_json::to_vec_pretty(info).context("cannot describe the session")?;
        crate::sys::write_new_atomic(&dir.join(INFO_FILE), &text)
            .with_context(|| format!("cannot write {}", dir.join(INFO_FILE).display()))?;
        Ok(listener)
    }
}

/// A session's directory, made by [`Registry::publish`]; removed with everything in it when
/// dropped (the session ended).
#[derive(Debug)]
pub struct Published {
    dir: PathBuf,
    listener: Option<std::os::unix::net::UnixListener>,
}

impl Published {
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.join(SOCKET_FILE)
    }

    /// The listening socket (once).
    pub(crate) fn take_listener(&mut self) -> Option<std::os::unix::net::UnixListener> {
        self.listener.take()
    }
}

impl Drop for Published {
    fn drop(&mut self) {
        match std::fs::remove_dir_all(&self.dir) {
            Ok(()) => tracing::info!("removed {}", self.dir.display()),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => tracing::warn!("cannot remove {}: {err}", self.dir.display()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};

    use super::*;
    use crate::sys::private_dir::leave_owned_dir;

    fn info(name: &str) -> Info {
        Info {
            name: name.to_owned(),
            cwd: "/w".to_owned(),
            started_ms: 1,
            command: vec!["unipi-tui".to_owned()],
        }
    }

    #[test]
    fn names_are_checked_and_made_from_folders() {
        for good in ["a", "demo1", "my.project_2-x", &"x".repeat(MAX_NAME)] {
            check_name(good).unwrap();
        }
        for bad in [
            "",
            ".hidden",
            "-x",
            "a b",
            "a/b",
            "é",
            &"x".repeat(MAX_NAME + 1),
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            name_from_folder(Path::new("/home/me/my project")),
            "my-project"
        );
        assert_eq!(name_from_folder(Path::new("/home/me/.dots")), "dots");
        assert_eq!(name_from_folder(Path::new("/")), "session");
        check_name(&name_from_folder(Path::new(&"/x".repeat(100)))).unwrap();
    }

    #[test]
    fn a_published_session_is_listed_private_and_removed_when_dropped() {
        let tmp = tempfile::tempdir().unwrap();
        let registry = Registry::at(tmp.path().join("sessions")).unwrap();
        assert_eq!(
            std::fs::metadata(registry.dir()).unwrap().mode() & 0o777,
            0o700
        );
        let published = registry.publish(&info("alpha")).unwrap();
        let meta = std::fs::metadata(published.dir()).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o700);
        assert_eq!(meta.uid(), nix::unistd::geteuid().as_raw());
        let socket = std::fs::symlink_metadata(published.socket()).unwrap();
        assert_eq!(socket.mode() & 0o777, 0o600);
        let listed = registry.list();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].name, "alpha");
        assert_eq!(Some(listed[0].owner), ProcessId::current());
        assert_eq!(listed[0].info(), Some(info("alpha")));
        assert_eq!(registry.find("alpha").unwrap().name, "alpha");
        let dir = published.dir().to_path_buf();
        drop(published);
        assert!(!dir.exists());
        assert!(registry.list().is_empty());
    }

    #[test]
    fn a_taken_name_is_refused_and_a_free_one_suggested() {
        let tmp = tempfile::tempdir().unwrap();
        let registry = Registry::at(tmp.path().join("sessions")).unwrap();
        let _first = registry.publish(&info("proj")).unwrap();
        let err = registry.publish(&info("proj")).unwrap_err().to_string();
        assert!(
            err.contains("a session named \"proj\" is running already"),
            "{err}"
        );
        // The failed attempt left nothing behind.
        let names: Vec<String> = std::fs::read_dir(registry.dir())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["proj"]);
        assert_eq!(registry.free_name("proj"), "proj-2");
        assert_eq!(registry.free_name("other"), "other");
    }

    #[test]
    fn a_dead_sessions_directory_is_removed_and_never_blocks_its_name() {
        let tmp = tempfile::tempdir().unwrap();
        let registry = Registry::at(tmp.path().join("sessions")).unwrap();
        // What `kill -9` of a session process leaves: its directory, socket file and all.
        let left = registry.dir().join("crashed");
        leave_owned_dir(&left, ProcessId::ended());
        drop(std::os::unix::net::UnixListener::bind(left.join(SOCKET_FILE)).unwrap());
        let err = registry.find("crashed").unwrap_err();
        assert_eq!(
            err.to_string(),
            "no session is named \"crashed\"; no session runs (start one with `unipi-tui \
             --detachable NAME`)"
        );
        assert!(!left.exists(), "the dead session's directory is removed");
        let again = registry.publish(&info("crashed")).unwrap();
        assert_eq!(registry.list()[0].name, "crashed");
        drop(again);
    }

    #[test]
    fn a_pid_reused_by_another_process_does_not_keep_a_dead_sessions_name() {
        let tmp = tempfile::tempdir().unwrap();
        let registry = Registry::at(tmp.path().join("sessions")).unwrap();
        // The dead session's pid now belongs to a live process (this one) that started at
        // another time: the start time tells them apart.
        let me = ProcessId::current().unwrap();
        let reused = ProcessId {
            pid: me.pid,
            start: me.start + 1,
        };
        let left = registry.dir().join("reused");
        leave_owned_dir(&left, reused);
        assert!(registry.list().is_empty());
        assert!(!left.exists(), "the dead session's directory is removed");
        drop(registry.publish(&info("reused")).unwrap());
    }

    #[test]
    fn a_missing_name_lists_the_sessions_there_are() {
        let tmp = tempfile::tempdir().unwrap();
        let registry = Registry::at(tmp.path().join("sessions")).unwrap();
        let _a = registry.publish(&info("beta")).unwrap();
        let _b = registry.publish(&info("alpha")).unwrap();
        assert_eq!(
            registry.find("gamma").unwrap_err().to_string(),
            "no session is named \"gamma\"; the sessions are: alpha, beta"
        );
    }

    #[test]
    fn a_loose_sessions_directory_of_ours_is_tightened() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("sessions");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        Registry::at(dir.clone()).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
    }

    #[test]
    fn a_socket_path_too_long_for_unix_sockets_is_refused_before_anything_is_made() {
        let tmp = tempfile::tempdir().unwrap();
        let deep = tmp.path().join("d".repeat(80)).join("sessions");
        std::fs::create_dir_all(deep.parent().unwrap()).unwrap();
        let registry = Registry::at(deep).unwrap();
        let err = registry.publish(&info(&"n".repeat(40))).unwrap_err();
        assert!(
            err.to_string().contains("more than a Unix socket allows"),
            "{err}"
        );
        assert_eq!(std::fs::read_dir(registry.dir()).unwrap().count(), 0);
    }
}

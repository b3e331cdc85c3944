//! The user's private runtime directory, the directories a workbench owns in it, and private
//! files of the user's own elsewhere (logs, the session database).
//!
//! What the workbench keeps while it runs — the bridge's socket, background tasks' output and
//! records — must be out of reach of other local users: a directory another user created first
//! (or can write to) would let them swap a task's log, and so put their words into the agent's
//! context, or deny service. So the root is per user and private ([`runtime_root`]):
//! `$XDG_RUNTIME_DIR/unipi-tui` when `XDG_RUNTIME_DIR` is set (and is a private directory of ours),
//! else `$TMPDIR/unipi-<uid>`. It is created mode 0700, and one that exists already is used only
//! if it is a real directory (not a link) owned by us; a mode of ours that lets others in is
//! tightened. Anything else is not used: this session gets a fresh private directory instead,
//! and the notice says why.
//!
//! Inside, each workbench creates its own directories with [`create_owned`]: a fresh name
//! (`<prefix>-<pid>-<nonce>`, created exclusively), mode 0700, and an `owner` file naming the
//! workbench by pid **and** start time, so the next start can tell a directory whose owner died
//! ([`stale_dirs`]) from one whose pid was merely reused.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{
    DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _,
};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::fs::write_new_atomic;
use super::procfs::ProcessId;
use super::random::random_u64;

/// The file in an owned directory that names its owner (`<pid>:<start>`).
pub const OWNER_FILE: &str = "owner";

/// The per-user root and, when the usual place could not be used, why.
#[derive(Debug, Clone)]
pub struct RuntimeRoot {
    pub path: PathBuf,
    /// Said to the user once: the usual directory was refused and a fresh one is used.
    pub notice: Option<String>,
}

/// The root for this process, resolved once (from `XDG_RUNTIME_DIR` and `TMPDIR`); the error
/// says why no private directory could be had at all.
pub fn runtime_root() -> Result<&'static RuntimeRoot, String> {
    static ROOT: OnceLock<Result<RuntimeRoot, String>> = OnceLock::new();
    ROOT.get_or_init(|| {
        let xdg = std::env::var_os("XDG_RUNTIME_DIR")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from);
        choose_root(xdg.as_deref(), &std::env::temp_dir()).map_err(|err| format!("{err:#}"))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Picks the root: `<xdg>/unipi-tui` if `xdg` is a private directory of ours, else
/// `<tmp>/unipi-<uid>`, else a fresh `<tmp>/unipi-<uid>-<random>`.
pub fn choose_root(xdg: Option<&Path>, tmp: &Path) -> anyhow::Result<RuntimeRoot> {
    let mut notes = Vec::new();
    if let Some(xdg) = xdg {
        let root = xdg.join("unipi-tui");
        match check_private(xdg).and_then(|()| ensure_private(&root)) {
            Ok(()) => {
                return Ok(RuntimeRoot {
                    path: root,
                    notice: None,
                });
            }
            Err(err) => notes.push(format!("XDG_RUNTIME_DIR is not used: {err}")),
        }
    }
    let uid = nix::unistd::geteuid();
    let usual = tmp.join(format!("unipi-{uid}"));
    match ensure_private(&usual) {
        Ok(()) => Ok(RuntimeRoot {
            path: usual,
            notice: None,
        }),
        Err(err) => {
            let fresh = create_fresh(tmp, &format!("unipi-{uid}"))?;
            notes.push(format!(
                "{err}; it is not used. This session keeps its runtime files (bridge socket, \
                 background tasks) in the fresh private directory {} instead; remove the other \
                 one to get the usual place back",
                fresh.display()
            ));
            Ok(RuntimeRoot {
                path: fresh,
                notice: Some(notes.join("; ")),
            })
        }
    }
}

/// Makes `path` a private directory of ours: creates it (mode 0700) if missing; an existing
/// one must be a real directory (not a link) owned by us, and loses any group or other bits.
/// The error names the directory and what is wrong with it (kind `PermissionDenied`).
pub fn ensure_private(path: &Path) -> io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
        Err(err) => {
            return Err(io::Error::new(
                err.kind(),
                format!(
                    "cannot create the private directory {}: {err}",
                    path.display()
                ),
            ));
        }
    }
    let meta = std::fs::symlink_metadata(path)?;
    check_owned_dir(path, &meta)?;
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Makes `path` a private directory of the user's files under HOME (the log directory, the
/// session database's): created mode 0700 (missing ancestors too), and an existing one loses its
/// group and other bits (0755 → 0700, a read-only 0555 → 0500). Unlike [`ensure_private`], a
/// link is followed: nobody else can create entries in HOME, so a link there is the user's own
/// choice of place. A mode that cannot be changed (an immutable directory) is logged, not fatal:
/// the files in it are private themselves.
pub fn make_private_dir(path: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|err| {
            io::Error::new(
                err.kind(),
                format!("cannot create {}: {err}", path.display()),
            )
        })?;
    let meta = std::fs::metadata(path)?;
    if meta.mode() & 0o077 != 0 {
        let mode = meta.mode() & 0o700;
        if let Err(err) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)) {
            tracing::warn!("cannot make {} private: {err}", path.display());
        }
    }
    Ok(())
}

/// Takes the group and other bits off the regular file of ours at `path` (not a link), as an
/// older version may have left it; `Ok(false)` when there was nothing to change or no file.
pub fn tighten_file(path: &Path) -> io::Result<bool> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err),
    };
    let ours = meta.uid() == nix::unistd::geteuid().as_raw();
    if !meta.is_file() || !ours || meta.mode() & 0o077 == 0 {
        return Ok(false);
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(meta.mode() & 0o700))?;
    Ok(true)
}

/// [`tighten_file`] for every file directly in `dir`; returns how many were tightened. Errors
/// are logged, never fatal.
pub fn tighten_files(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|entry| match tighten_file(&entry.path()) {
            Ok(tightened) => tightened,
            Err(err) => {
                tracing::warn!("cannot make {} private: {err}", entry.path().display());
                false
            }
        })
        .count()
}

/// Opens `path` for appending, as a private file: created mode 0600 in a directory made private
/// ([`make_private_dir`]); an existing file loses its group and other bits. A link in its place
/// is not followed (the open fails): a mode is never changed through one.
pub fn open_private_append(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        make_private_dir(dir)?;
    }
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)?;
    let meta = file.metadata()?;
    if meta.is_file() && meta.mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o700))?;
    }
    Ok(file)
}

/// `path` is a private directory of ours as it is (nothing is changed).
fn check_private(path: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    check_owned_dir(path, &meta)?;
    if meta.mode() & 0o077 != 0 {
        return Err(refused(format!(
            "{} has mode {:o}: others can reach into it",
            path.display(),
            meta.mode() & 0o777
        )));
    }
    Ok(())
}

fn check_owned_dir(path: &Path, meta: &std::fs::Metadata) -> io::Result<()> {
    let uid = nix::unistd::geteuid().as_raw();
    if meta.file_type().is_symlink() {
        return Err(refused(format!(
            "{} is a symbolic link, not a directory",
            path.display()
        )));
    }
    if !meta.is_dir() {
        return Err(refused(format!("{} is not a directory", path.display())));
    }
    if meta.uid() != uid {
        return Err(refused(format!(
            "{} belongs to another user (uid {}, not {uid})",
            path.display(),
            meta.uid()
        )));
    }
    Ok(())
}

fn refused(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, message)
}

/// Creates `<parent>/<stem>-<random>` exclusively, mode 0700 (a new name on a collision).
fn create_fresh(parent: &Path, stem: &str) -> io::Result<PathBuf> {
    for _ in 0..16 {
        let path = parent.join(format!("{stem}-{:012x}", random_u64() >> 16));
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))?;
                return Ok(path);
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(err) => {
                return Err(io::Error::new(
                    err.kind(),
                    format!(
                        "cannot create a private directory in {}: {err}",
                        parent.display()
                    ),
                ));
            }
        }
    }
    Err(io::Error::other(format!(
        "cannot find a free name for a private directory in {}",
        parent.display()
    )))
}

/// Creates this workbench's own directory `<parent>/<prefix>-<pid>-<nonce>` (exclusively, mode
/// 0700) with its [`OWNER_FILE`]. `parent` is the caller's to choose and check: the runtime
/// root, or a directory made private with [`ensure_private`].
pub fn create_owned(parent: &Path, prefix: &str) -> io::Result<PathBuf> {
    let owner = ProcessId::current()
        .ok_or_else(|| io::Error::other("cannot read this process's start time from /proc"))?;
    let dir = create_fresh(parent, &format!("{prefix}-{}", owner.pid))?;
    write_new_atomic(
        &dir.join(OWNER_FILE),
        format!("{}\n", owner.to_text()).as_bytes(),
    )?;
    Ok(dir)
}

/// The owner an owned directory names, if its owner file is readable.
pub fn owner_of(dir: &Path) -> Option<ProcessId> {
    let text = std::fs::read_to_string(dir.join(OWNER_FILE)).ok()?;
    ProcessId::from_text(&text)
}

/// Creates `dir` with an owner file naming `owner`, as a workbench that ended left it.
#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
pub fn leave_owned_dir(dir: &Path, owner: ProcessId) {
    std::fs::create_dir(dir).unwrap();
    std::fs::write(dir.join(OWNER_FILE), owner.to_text()).unwrap();
}

/// The directories `<parent>/<prefix>-*` (any, for an empty prefix) whose owner has ended (its pid is gone, or now
/// names a process with another start time), with that owner. Directories without an owner
/// file are left alone: nobody can say whose they are.
pub fn stale_dirs(parent: &Path, prefix: &str) -> Vec<(PathBuf, ProcessId)> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let lead = if prefix.is_empty() {
        String::new()
    } else {
        format!("{prefix}-")
    };
    let me = ProcessId::current();
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&lead))
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .filter_map(|entry| {
            let dir = entry.path();
            let owner = owner_of(&dir)?;
            (Some(owner) != me && !owner.is_running()).then_some((dir, owner))
        })
        .collect()
}

/// A directory this workbench owns ([`create_owned`]), removed with everything in it on
/// [`OwnedDir::remove`] or drop. Creating one first removes the directories with the same prefix
/// that a workbench which died left behind ([`remove_stale`]).
#[derive(Debug)]
pub struct OwnedDir {
    path: PathBuf,
    removed: std::sync::atomic::AtomicBool,
}

impl OwnedDir {
    /// Removes the stale `<parent>/<prefix>-*` directories, then creates this workbench's own.
    pub fn create(parent: &Path, prefix: &str) -> io::Result<Self> {
        remove_stale(parent, prefix);
        Ok(Self {
            path: create_owned(parent, prefix)?,
            removed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the directory and everything in it; later calls do nothing.
    pub fn remove(&self) {
        if self.removed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        match std::fs::remove_dir_all(&self.path) {
            Ok(()) => tracing::debug!("removed {}", self.path.display()),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => tracing::warn!("cannot remove {}: {err}", self.path.display()),
        }
    }
}

impl Drop for OwnedDir {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Removes the `<parent>/<prefix>-*` directories whose owner died ([`stale_dirs`]).
pub fn remove_stale(parent: &Path, prefix: &str) {
    for (dir, owner) in stale_dirs(parent, prefix) {
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => tracing::info!(
                "removed {}, left by a workbench (pid {}) that died",
                dir.display(),
                owner.pid
            ),
            Err(err) => tracing::warn!("cannot remove the stale {}: {err}", dir.display()),
        }
    }
}

/// Creates `path` for appending, exclusively and without following a link in its place: a
/// file (or link) someone put there first is an error, never written through.
pub fn create_new_file(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
}

/// Opens `path` to read, refusing a symbolic link in its place.
pub fn open_no_follow(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().mode() & 0o777
    }

    #[test]
    fn the_usual_root_is_created_private_and_a_loose_one_of_ours_is_tightened() {
        let tmp = tempfile::tempdir().unwrap();
        let root = choose_root(None, tmp.path()).unwrap();
        let uid = nix::unistd::geteuid();
        assert_eq!(root.path, tmp.path().join(format!("unipi-{uid}")));
        assert_eq!(root.notice, None);
        assert_eq!(mode(&root.path), 0o700);
        std::fs::set_permissions(&root.path, std::fs::Permissions::from_mode(0o777)).unwrap();
        let again = choose_root(None, tmp.path()).unwrap();
        assert_eq!(again.path, root.path);
        assert_eq!(mode(&again.path), 0o700);
    }

    #[test]
    fn a_link_in_the_usual_place_is_refused_and_a_fresh_root_used() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let uid = nix::unistd::geteuid();
        let usual = tmp.path().join(format!("unipi-{uid}"));
        std::os::unix::fs::symlink(&elsewhere, &usual).unwrap();
        let root = choose_root(None, tmp.path()).unwrap();
        assert_ne!(root.path, usual);
        assert!(
            root.path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("unipi-{uid}-")),
            "{}",
            root.path.display()
        );
        assert_eq!(mode(&root.path), 0o700);
        let notice = root.notice.unwrap();
        assert!(notice.contains("is a symbolic link"), "{notice}");
        assert!(
            notice.contains(&root.path.display().to_string()),
            "{notice}"
        );
    }

    #[test]
    fn xdg_runtime_dir_is_used_only_when_private() {
        let tmp = tempfile::tempdir().unwrap();
        let xdg = tmp.path().join("xdg");
        std::fs::DirBuilder::new().mode(0o700).create(&xdg).unwrap();
        let root = choose_root(Some(&xdg), tmp.path()).unwrap();
        assert_eq!(root.path, xdg.join("unipi-tui"));
        std::fs::set_permissions(&xdg, std::fs::Permissions::from_mode(0o755)).unwrap();
        let root = choose_root(Some(&xdg), tmp.path()).unwrap();
        let uid = nix::unistd::geteuid();
        assert_eq!(root.path, tmp.path().join(format!("unipi-{uid}")));
    }

    #[test]
    fn private_appends_and_tightening_fix_what_older_versions_left_open() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state/unipi-tui");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let old = dir.join("old.log");
        std::fs::write(&old, "said before\n").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut file = open_private_append(&old).unwrap();
        std::io::Write::write_all(&mut file, b"said now\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&old).unwrap(),
            "said before\nsaid now\n"
        );
        assert_eq!((mode(&dir), mode(&old)), (0o700, 0o600));
        let new = tmp.path().join("elsewhere/deep/new.log");
        open_private_append(&new).unwrap();
        assert_eq!((mode(new.parent().unwrap()), mode(&new)), (0o700, 0o600));
        // A link in the log's place is not written through, nor its target's mode changed.
        let target = tmp.path().join("target");
        std::fs::write(&target, "").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
        let link = dir.join("link.log");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(open_private_append(&link).is_err());
        assert_eq!(mode(&target), 0o644);
        for (name, file_mode) in [("a", 0o644), ("b", 0o600), ("c", 0o664)] {
            std::fs::write(dir.join(name), "").unwrap();
            std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(file_mode))
                .unwrap();
        }
        assert_eq!(tighten_files(&dir), 2);
        for name in ["a", "b", "c"] {
            assert_eq!(mode(&dir.join(name)), 0o600, "{name}");
        }
        assert_eq!(mode(&target), 0o644, "a link's target is left alone");
    }

    #[test]
    fn owned_dirs_name_their_owner_and_only_dead_owners_are_stale() {
        let parent = tempfile::tempdir().unwrap();
        let mine = create_owned(parent.path(), "tasks").unwrap();
        assert_eq!(mode(&mine), 0o700);
        assert_eq!(owner_of(&mine), ProcessId::current());
        // A directory whose owner ended (a reaped child), one whose pid now names another
        // process (this one, with another start time), and one without an owner file.
        let dead = ProcessId::ended();
        let reused = ProcessId {
            start: ProcessId::current().unwrap().start + 7,
            ..ProcessId::current().unwrap()
        };
        for (name, owner) in [
            ("tasks-dead", Some(dead)),
            ("tasks-reused", Some(reused)),
            ("tasks-none", None),
        ] {
            let dir = parent.path().join(name);
            match owner {
                Some(owner) => leave_owned_dir(&dir, owner),
                None => std::fs::create_dir(&dir).unwrap(),
            }
        }
        let mut stale: Vec<String> = stale_dirs(parent.path(), "tasks")
            .into_iter()
            .map(|(dir, _)| dir.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        stale.sort();
        assert_eq!(stale, ["tasks-dead", "tasks-reused"]);
    }

    #[test]
    fn new_files_are_exclusive_and_links_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "theirs").unwrap();
        let link = dir.path().join("task.log");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(create_new_file(&link).is_err());
        assert!(open_no_follow(&link).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "theirs");
        let fresh = dir.path().join("fresh.log");
        create_new_file(&fresh).unwrap();
        assert_eq!(mode(&fresh), 0o600);
        assert_eq!(
            create_new_file(&fresh).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        open_no_follow(&fresh).unwrap();
    }
}

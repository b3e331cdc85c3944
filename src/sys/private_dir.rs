//! The user's private runtime directory, the directories a workbench owns in it, and private
//! files of the user's own elsewhere (logs, the session database).
//!
//! What the workbench keeps while it runs — the bridge's socket, background tasks' output and
//! records, detachable sessions — must be out of reach of other local users: a directory another
//! user created first (or can write to) would let them swap a task's log, and so put their words
//! into the agent's context, or deny service. So the root is per user and private
//! ([`runtime_root`]): `$XDG_RUNTIME_DIR/unipi-tui` when `XDG_RUNTIME_DIR` is set (and is a
//! private directory of ours), else `$TMPDIR/unipi-<uid>`. It is created mode 0700, and one that
//! exists already is used only if it is a real directory (not a link) owned by us; a mode of ours
//! that lets others in is tightened. Anything else is not used, and the notice says why and that
//! `XDG_RUNTIME_DIR` chooses the place.
//!
//! When `$TMPDIR/unipi-<uid>` is refused (another user made it first), the root is a fresh
//! private `$TMPDIR/unipi-<uid>-<random>` whose name nobody can guess, so nobody can block it.
//! Its path is recorded in the user's state directory ([`record_file`], under HOME, where only
//! the user writes), and every later process — the next workbench, `unipi-tui ls`, `attach` —
//! reads the record and uses the same directory while it is still a private directory of ours:
//! sessions are found again, and tries leave no new directories behind.
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
pub(crate) struct RuntimeRoot {
    pub path: PathBuf,
    /// Said to the user once: the usual directory was refused and a fresh one is used.
    pub notice: Option<String>,
}

/// The file in the user's state directory that records the fallback root.
pub(crate) const RECORD_FILE: &str = "runtime-dir";

/// The root for this process, resolved once (from `XDG_RUNTIME_DIR`, `TMPDIR` and the
/// [`record_file`]); the error says why no private directory could be had at all.
pub(crate) fn runtime_root() -> Result<&'static RuntimeRoot, String> {
    static ROOT: OnceLock<Result<RuntimeRoot, String>> = OnceLock::new();
    ROOT.get_or_init(|| {
        let xdg = std::env::var_os("XDG_RUNTIME_DIR")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from);
        choose_root(
            xdg.as_deref(),
            &std::env::temp_dir(),
            record_file().as_deref(),
        )
        .map_err(|err| format!("{err:#}"))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Where the fallback root is recorded: `unipi-tui/runtime-dir` in the user's state directory
/// (else the cache directory), both under HOME; never in a shared temporary directory.
pub(crate) fn record_file() -> Option<PathBuf> {
    dirs::state_dir()
        .or_else(dirs::cache_dir)
        .map(|dir| dir.join("unipi-tui").join(RECORD_FILE))
}

/// Picks the root: `<xdg>/unipi-tui` if `xdg` is a private directory of ours, else
/// `<tmp>/unipi-<uid>`, else the fallback `<tmp>/unipi-<uid>-<random>` that `record` names (made
/// and recorded if there is none). The notice says what was refused and where the files are.
pub(crate) fn choose_root(
    xdg: Option<&Path>,
    tmp: &Path,
    record: Option<&Path>,
) -> anyhow::Result<RuntimeRoot> {
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
            Err(err) => notes.push(format!(
                "XDG_RUNTIME_DIR ({}) is not used: {err}",
                xdg.display()
            )),
        }
    }
    let stem = format!("unipi-{}", nix::unistd::geteuid());
    let usual = tmp.join(&stem);
    let path = match ensure_private(&usual) {
        Ok(()) if notes.is_empty() => {
            return Ok(RuntimeRoot {
                path: usual,
                notice: None,
            });
        }
        Ok(()) => {
            notes.push(format!(
                "runtime files are kept in {} instead",
                usual.display()
            ));
            usual
        }
        Err(err) => {
            let (fallback, found_again) = fallback_root(tmp, &stem, record)?;
            notes.push(format!(
                "{err}; it is not used. Runtime files (bridge socket, background tasks, \
                 detachable sessions) are kept in the private directory {} instead, {found_again}",
                fallback.display()
            ));
            fallback
        }
    };
    let notice = format!(
        "{}. To choose the place, set XDG_RUNTIME_DIR to a directory of yours that only you can \
         enter (mode 0700)",
        notes.join("; ")
    );
    Ok(RuntimeRoot {
        path,
        notice: Some(notice),
    })
}

/// The fallback root: the one `record` names if it is still a private directory of ours, else a
/// fresh one, recorded. The text says how other processes find it.
fn fallback_root(tmp: &Path, stem: &str, record: Option<&Path>) -> io::Result<(PathBuf, String)> {
    let Some(record) = record else {
        let fresh = create_fresh(tmp, stem)?;
        return Ok((
            fresh,
            "but without a state directory to record it in, `unipi-tui ls` and `attach` run \
             elsewhere will not find the sessions in it"
                .to_owned(),
        ));
    };
    let found_again = format!(
        "recorded in {}, where `unipi-tui ls` and `attach` find it",
        record.display()
    );
    if let Some(dir) = read_record(record, stem) {
        return Ok((dir, found_again));
    }
    let fresh = create_fresh(tmp, stem)?;
    match write_record(record, &fresh, stem) {
        Ok(dir) => {
            if dir != fresh {
                // Another process recorded its own at the same time: use that one.
                let _ = std::fs::remove_dir(&fresh);
            }
            Ok((dir, found_again))
        }
        Err(err) => {
            tracing::warn!(
                "cannot record the runtime directory in {}: {err}",
                record.display()
            );
            Ok((
                fresh,
                format!(
                    "but it could not be recorded in {} ({err}), so `unipi-tui ls` and `attach` \
                     run elsewhere will not find the sessions in it",
                    record.display()
                ),
            ))
        }
    }
}

/// The fallback root `record` names, if the record is a private file of ours and names a
/// private directory of ours called `<stem>-…`.
fn read_record(record: &Path, stem: &str) -> Option<PathBuf> {
    use std::io::Read as _;
    use std::os::unix::ffi::OsStrExt as _;
    let file = open_no_follow(record).ok()?;
    let meta = file.metadata().ok()?;
    let uid = nix::unistd::geteuid().as_raw();
    if !meta.is_file() || meta.uid() != uid || meta.mode() & 0o022 != 0 {
        tracing::warn!(
            "{} is not a private file of ours; it is not read",
            record.display()
        );
        return None;
    }
    let mut bytes = Vec::new();
    file.take(4096).read_to_end(&mut bytes).ok()?;
    let text = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    let dir = PathBuf::from(std::ffi::OsStr::from_bytes(text));
    let named_ours = dir.is_absolute()
        && dir
            .file_name()
            .is_some_and(|name| name.as_bytes().starts_with(format!("{stem}-").as_bytes()));
    match named_ours.then(|| check_private(&dir)) {
        Some(Ok(())) => Some(dir),
        Some(Err(err)) => {
            tracing::info!("the recorded runtime directory is not used: {err}");
            None
        }
        None => {
            tracing::warn!("{} names no runtime directory of ours", record.display());
            None
        }
    }
}

/// Records `fresh` in `record` (a private file in a private directory). A valid record written
/// meanwhile by another process wins: its directory is returned instead.
fn write_record(record: &Path, fresh: &Path, stem: &str) -> io::Result<PathBuf> {
    use std::os::unix::ffi::OsStrExt as _;
    if let Some(dir) = record.parent() {
        make_private_dir(dir)?;
    }
    let mut text = fresh.as_os_str().as_bytes().to_vec();
    text.push(b'\n');
    for _ in 0..2 {
        match write_new_atomic(record, &text) {
            Ok(()) => return Ok(fresh.to_path_buf()),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(err),
        }
        if let Some(dir) = read_record(record, stem) {
            return Ok(dir);
        }
        // A record of a directory that is gone (or not ours): replaced.
        std::fs::remove_file(record)?;
    }
    Err(io::Error::other(format!(
        "{} keeps being replaced",
        record.display()
    )))
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
    let meta = std::fs::symlink_metadata(path)
        .map_err(|err| io::Error::new(err.kind(), format!("{}: {err}", path.display())))?;
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

/// The directories `<parent>/<prefix>-*` (any, for an empty prefix) whose owner has ended (its pid
/// is gone, or now names a process with another start time), with that owner. Directories without
/// an owner file are left alone: nobody can say whose they are.
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
        let root = choose_root(None, tmp.path(), None).unwrap();
        let uid = nix::unistd::geteuid();
        assert_eq!(root.path, tmp.path().join(format!("unipi-{uid}")));
        assert_eq!(root.notice, None);
        assert_eq!(mode(&root.path), 0o700);
        std::fs::set_permissions(&root.path, std::fs::Permissions::from_mode(0o777)).unwrap();
        let again = choose_root(None, tmp.path(), None).unwrap();
        assert_eq!(again.path, root.path);
        assert_eq!(mode(&again.path), 0o700);
    }

    /// The `unipi-<uid>-*` directories in `tmp`.
    fn fallbacks(tmp: &Path) -> Vec<PathBuf> {
        let stem = format!("unipi-{}-", nix::unistd::geteuid());
        let mut found: Vec<PathBuf> = std::fs::read_dir(tmp)
            .unwrap()
            .flatten()
            .filter(|entry| entry.file_name().to_string_lossy().starts_with(&stem))
            .map(|entry| entry.path())
            .collect();
        found.sort();
        found
    }

    #[test]
    fn a_link_in_the_usual_place_is_refused_and_one_recorded_fallback_serves_every_process() {
        let tmp = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let record = state.path().join("unipi-tui").join(RECORD_FILE);
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let uid = nix::unistd::geteuid();
        let usual = tmp.path().join(format!("unipi-{uid}"));
        std::os::unix::fs::symlink(&elsewhere, &usual).unwrap();
        let root = choose_root(None, tmp.path(), Some(&record)).unwrap();
        assert_eq!(fallbacks(tmp.path()), std::slice::from_ref(&root.path));
        assert_eq!(mode(&root.path), 0o700);
        let notice = root.notice.unwrap();
        for words in [
            "is a symbolic link",
            &root.path.display().to_string(),
            &format!("recorded in {}", record.display()),
            "set XDG_RUNTIME_DIR to a directory of yours",
        ] {
            assert!(notice.contains(words), "{words:?} in {notice}");
        }
        // The record is private, in a private directory.
        assert_eq!(mode(&record), 0o600);
        assert_eq!(mode(record.parent().unwrap()), 0o700);
        // Every later process (`ls`, `attach`, the next workbench) finds the same directory,
        // and makes no other.
        for _ in 0..3 {
            assert_eq!(
                choose_root(None, tmp.path(), Some(&record)).unwrap().path,
                root.path
            );
        }
        assert_eq!(fallbacks(tmp.path()), std::slice::from_ref(&root.path));
        // Gone (a cleaner removed it): a fresh one takes its place in the record.
        std::fs::remove_dir(&root.path).unwrap();
        let next = choose_root(None, tmp.path(), Some(&record)).unwrap();
        assert_ne!(next.path, root.path);
        assert_eq!(fallbacks(tmp.path()), std::slice::from_ref(&next.path));
        assert_eq!(
            choose_root(None, tmp.path(), Some(&record)).unwrap().path,
            next.path
        );
    }

    #[test]
    fn a_record_is_trusted_only_when_private_and_naming_a_private_fallback_of_ours() {
        let tmp = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let record = state.path().join("unipi-tui").join(RECORD_FILE);
        let uid = nix::unistd::geteuid();
        std::os::unix::fs::symlink("/", tmp.path().join(format!("unipi-{uid}"))).unwrap();
        let first = choose_root(None, tmp.path(), Some(&record)).unwrap().path;
        let write_record = |text: &str, file_mode: u32| {
            std::fs::remove_file(&record).unwrap();
            std::fs::write(&record, text).unwrap();
            std::fs::set_permissions(&record, std::fs::Permissions::from_mode(file_mode)).unwrap();
        };
        // A private directory of ours with another name (~/.ssh, say), a loose directory of
        // ours with the right name, and a record others may write: none is used.
        let other = tmp.path().join("not-a-runtime-dir");
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&other)
            .unwrap();
        let loose = tmp.path().join(format!("unipi-{uid}-loose"));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&loose)
            .unwrap();
        std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o755)).unwrap();
        for (text, file_mode) in [
            (other.display().to_string(), 0o600),
            (loose.display().to_string(), 0o600),
            (first.display().to_string(), 0o666),
        ] {
            write_record(&text, file_mode);
            let chosen = choose_root(None, tmp.path(), Some(&record)).unwrap().path;
            assert!(
                chosen != other && chosen != loose && chosen != first,
                "{text} ({file_mode:o}) was used"
            );
            assert_eq!(mode(&chosen), 0o700);
            assert_eq!(mode(&record), 0o600, "the record was rewritten private");
            std::fs::remove_dir(&chosen).unwrap();
        }
    }

    #[test]
    fn without_a_record_file_the_fallback_is_fresh_and_says_it_cannot_be_found_again() {
        let tmp = tempfile::tempdir().unwrap();
        let uid = nix::unistd::geteuid();
        std::os::unix::fs::symlink("/", tmp.path().join(format!("unipi-{uid}"))).unwrap();
        let root = choose_root(None, tmp.path(), None).unwrap();
        assert_eq!(fallbacks(tmp.path()), std::slice::from_ref(&root.path));
        let notice = root.notice.unwrap();
        assert!(notice.contains("will not find the sessions"), "{notice}");
    }

    #[test]
    fn xdg_runtime_dir_is_used_only_when_private_and_a_refusal_is_said() {
        let tmp = tempfile::tempdir().unwrap();
        let xdg = tmp.path().join("xdg");
        std::fs::DirBuilder::new().mode(0o700).create(&xdg).unwrap();
        let root = choose_root(Some(&xdg), tmp.path(), None).unwrap();
        assert_eq!(root.path, xdg.join("unipi-tui"));
        assert_eq!(root.notice, None);
        std::fs::set_permissions(&xdg, std::fs::Permissions::from_mode(0o755)).unwrap();
        let root = choose_root(Some(&xdg), tmp.path(), None).unwrap();
        let uid = nix::unistd::geteuid();
        let usual = tmp.path().join(format!("unipi-{uid}"));
        assert_eq!(root.path, usual);
        let notice = root.notice.unwrap();
        assert_eq!(
            notice,
            format!(
                "XDG_RUNTIME_DIR ({0}) is not used: {0} has mode 755: others can reach into it; \
                 runtime files are kept in {1} instead. To choose the place, set \
                 XDG_RUNTIME_DIR to a directory of yours that only you can enter (mode 0700)",
                xdg.display(),
                usual.display()
            )
        );
        let missing = tmp.path().join("missing");
        let notice = choose_root(Some(&missing), tmp.path(), None)
            .unwrap()
            .notice
            .unwrap();
        assert!(
            notice.contains(&format!("{}: No such file", missing.display())),
            "{notice}"
        );
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

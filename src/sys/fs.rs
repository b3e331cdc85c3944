//! Crash-safe file writes, and the stamp that tells a file changed without reading it. The bytes go
//! to a temp file in the target's own directory (a rename is only atomic within one file system),
//! which is fsynced before it takes the final name and the directory is fsynced after, so after a
//! crash the path holds the old file or the new one, never a torn one, and a successful return
//! means the new one survives a power cut. Errors are the failing step's `io::Error` (its kind
//! intact, for callers that branch on it); the caller names the file in its context.
//!
//! A [`FileStamp`] (size, modification and change times, inode) moves with every write: an
//! in-place edit changes the size or the times, a crash-safe replace the inode.

use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use super::random::random_u64;

/// What identifies one version of a file without reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStamp {
    len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
}

impl FileStamp {
    /// No file's stamp (a document that was not read).
    pub const NONE: FileStamp = FileStamp {
        len: 0,
        mtime_ns: 0,
        ctime_ns: 0,
        ino: 0,
    };

    pub fn of(meta: &std::fs::Metadata) -> FileStamp {
        FileStamp {
            len: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
            ino: meta.ino(),
        }
    }

    /// The stamp of the file at `path` (through symlinks); `None` when there is none to stat.
    pub fn of_path(path: &Path) -> Option<FileStamp> {
        std::fs::metadata(path)
            .ok()
            .map(|meta| FileStamp::of(&meta))
    }
}

/// The mode of a newly created file: these files are the user's own state, for nobody else.
const NEW_FILE_MODE: u32 = 0o600;

/// Replaces `path` with `bytes`: temp file in the same directory, fsync, rename over `path`,
/// fsync of the directory. A file that is already there keeps its permission bits.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mode = std::fs::metadata(path).map_or(NEW_FILE_MODE, |meta| meta.permissions().mode());
    with_temp(path, bytes, mode, |temp| std::fs::rename(temp, path))
}

/// [`write_atomic`] for a caller that read `path` and changed it: `unchanged` runs once the new
/// bytes are durable in the temp file, right before the rename, and the rename happens only if it
/// says the file is still as the caller read it. Returns whether `path` was replaced (`false`:
/// left as it is, temp removed). A change landing between that check and the rename is still
/// overwritten: the window is one `rename` call, not the write and fsync before it.
pub fn replace_if_unchanged(
    path: &Path,
    bytes: &[u8],
    unchanged: impl FnOnce() -> io::Result<bool>,
) -> io::Result<bool> {
    let mode = std::fs::metadata(path).map_or(NEW_FILE_MODE, |meta| meta.permissions().mode());
    let mut replaced = false;
    with_temp(path, bytes, mode, |temp| {
        if unchanged()? {
            std::fs::rename(temp, path)?;
            replaced = true;
        }
        Ok(())
    })?;
    Ok(replaced)
}

/// Creates `path` with `bytes` only if nothing is there yet (`ErrorKind::AlreadyExists`
/// otherwise), durably: temp file, fsync, hard link to the final name — the link fails if the
/// name exists, which is the exclusive part — and fsync of the directory. A reader sees no file
/// or the whole file, never a partly written one, which `O_EXCL` on the final name would show.
pub fn write_new_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    with_temp(path, bytes, NEW_FILE_MODE, |temp| {
        std::fs::hard_link(temp, path)
    })
}

/// Writes `bytes` to a fresh temp file beside `path`, fsyncs it, lets `publish` give it the
/// final name, fsyncs the directory, and removes the temp name whatever happened (after a
/// rename it is gone already; after a hard link it is the second name).
fn with_temp(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    publish: impl FnOnce(&Path) -> io::Result<()>,
) -> io::Result<()> {
    let dir = parent_dir(path);
    let temp = temp_path(&dir, path);
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&temp)?;
        // `mode` is filtered by the umask at creation; an existing file's bits are kept exactly.
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        file.write_all(bytes)?;
        file.sync_all()?;
        publish(&temp)?;
        File::open(&dir)?.sync_all()
    })();
    let _ = std::fs::remove_file(&temp);
    result
}

/// The directory `path` is in (`.` for a bare file name).
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// `.<name>.<pid>.<random>.tmp` in `dir`: hidden, and unique across processes and threads that
/// write the same file at once.
fn temp_path(dir: &Path, path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    dir.join(format!(
        ".{name}.{}.{:012x}.tmp",
        std::process::id(),
        random_u64() >> 16
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replace_writes_the_whole_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        assert_eq!(names(dir.path()), vec!["a.json"]);
    }

    #[test]
    fn a_new_file_is_private_and_a_replaced_one_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        write_atomic(&path, b"{}").unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_atomic(&path, b"{\"a\":1}").unwrap();
        assert_eq!(mode(&path), 0o644);
    }

    #[test]
    fn exclusive_writes_refuse_an_existing_file_and_leave_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("result.json");
        write_new_atomic(&path, b"one").unwrap();
        let err = write_new_atomic(&path, b"two").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"one");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_checked_replace_leaves_a_changed_file_and_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.md");
        std::fs::write(&path, "one").unwrap();
        assert!(!replace_if_unchanged(&path, b"mine", || Ok(false)).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one");
        assert!(replace_if_unchanged(&path, b"mine", || Ok(true)).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "mine");
        assert_eq!(names(dir.path()), vec!["plan.md"]);
    }

    #[test]
    fn a_missing_directory_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("a.json");
        let err = write_atomic(&path, b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}

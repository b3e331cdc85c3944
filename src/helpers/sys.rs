//! Small process and file primitives shared by the helper runner and the background-task
//! service: crash-safe file replacement, random ids, and the process-group liveness probe. They
//! live here (not in `tasks`) because `tasks::service` is private to `tasks`, and both owners
//! need exactly the same guarantees — a metadata file is the old or the new, never torn; a group
//! counts as alive until its last member, zombie leader included, is reaped.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use nix::sys::signal::killpg;
use nix::unistd::Pid;

/// Temp file, fsync, rename, fsync of the directory: the file is the old or the new, never torn.
pub(crate) fn replace_file_durable(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().context("a metadata path has a directory")?;
    let base = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(
        ".{base}.{}.{:012x}.tmp",
        std::process::id(),
        random_u64() >> 16
    ));
    let write = || -> std::io::Result<()> {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)?;
        File::open(dir)?.sync_all()
    };
    write().map_err(|err| {
        let _ = std::fs::remove_file(&temp);
        anyhow::anyhow!(
            "Durable file operation failed: replace {}: {err}",
            path.display()
        )
    })
}

/// True while any process is in the group (a zombie leader counts until reaped).
pub(crate) fn group_alive(pgid: Pid) -> bool {
    !matches!(killpg(pgid, None), Err(nix::errno::Errno::ESRCH))
}

/// A random-enough 64-bit value for names (not for secrets).
pub(crate) fn random_u64() -> u64 {
    use std::hash::{BuildHasher as _, Hasher as _};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;

    #[test]
    fn durable_replace_writes_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        replace_file_durable(&path, b"one").unwrap();
        replace_file_durable(&path, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 1, "no temp file left behind");
    }
}

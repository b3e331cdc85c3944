//! Keeping other users out of the cache Pi compiles extensions into.
//!
//! Pi loads every extension — our bridge, the user's `-e` files, the ones it discovers — with
//! jiti, which compiles a TypeScript file once and keeps the result in `<tmp>/jiti/` (`<tmp>`
//! being Node's `os.tmpdir()`), under a name made from the file's path and stamped with a hash of
//! its source. Both are predictable, and jiti runs what it finds there. Another local user who
//! creates `/tmp/jiti` first (mode 0777) can put a "compiled" bridge in it, and Pi runs it as us,
//! with the bridge's socket and token in its environment.
//!
//! jiti reads no cache path from the environment (`JITI_FS_CACHE` is read as a boolean), and
//! moving `TMPDIR` for Pi would move it for every command the agent runs. So right before each
//! Pi starts, [`env_for`] makes jiti's directory ours: created mode 0700, or an existing one used
//! only when it is a real directory of ours that nobody else can swap (every directory above it
//! ours or root's, the shared ones sticky: [`crate::sys::path_trust`]); one of ours that others
//! could write to is emptied first. Anything else turns jiti's cache off for that Pi
//! (`JITI_FS_CACHE=false`): its extensions are compiled at every start (about 0.4 s of CPU more),
//! and nothing is read from or written to that directory. The check runs at every start, not
//! once: a session lives for days, and a cleaned `/tmp` may meanwhile lose our directory to
//! someone else's.
//!
//! The environment passes through a wrapper (a version manager's shim, a script around `pi`);
//! a wrapper that sets its own `TMPDIR` moves jiti's cache to its own choice, out of this check.

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::sys::lock;

/// What jiti compiles into for one Pi.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TranspileCache {
    /// A directory only we can write to, at the place jiti picks by itself.
    Private(PathBuf),
    /// No cache: the usual place could not be made ours, for the reason given.
    Off { dir: PathBuf, reason: String },
}

impl TranspileCache {
    /// What Pi's environment gets: nothing for a private cache, jiti's switches (jiti 2's and
    /// jiti 1's) turned off otherwise.
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        match self {
            Self::Private(_) => Vec::new(),
            Self::Off { .. } => ["JITI_FS_CACHE", "JITI_CACHE"]
                .into_iter()
                .map(|name| (OsString::from(name), OsString::from("false")))
                .collect(),
        }
    }

    /// The start-up notice when the cache is off.
    pub fn notice(&self) -> Option<String> {
        match self {
            Self::Private(_) => None,
            Self::Off { dir, reason } => Some(format!(
                "Pi compiles its extensions without a cache (each start takes longer): {reason}. \
                 Remove {} if it is not yours, or set TMPDIR to a directory of your own",
                dir.display()
            )),
        }
    }
}

/// Makes jiti's cache directory for a Pi started in `cwd` with `child_env` added to ours
/// private, and returns the environment that Pi gets for it ([`TranspileCache::env`]). A cache
/// turned off is logged (once while the reason stays the same).
pub fn env_for<K, V>(cwd: &Path, child_env: &[(K, V)]) -> Vec<(OsString, OsString)>
where
    K: AsRef<std::ffi::OsStr>,
    V: AsRef<std::ffi::OsStr>,
{
    let cache = prepare_for(cwd, child_env);
    if let TranspileCache::Off { reason, .. } = &cache {
        static LAST: Mutex<Option<String>> = Mutex::new(None);
        let mut last = lock(&LAST);
        if last.as_deref() != Some(reason.as_str()) {
            tracing::warn!("Pi's extension cache is off: {reason}");
            *last = Some(reason.clone());
        }
    }
    cache.env()
}

/// [`env_for`] without the log: what jiti would use for a Pi started in `cwd` with `child_env`.
pub fn prepare_for<K, V>(cwd: &Path, child_env: &[(K, V)]) -> TranspileCache
where
    K: AsRef<std::ffi::OsStr>,
    V: AsRef<std::ffi::OsStr>,
{
    let var = |name: &str| {
        child_env
            .iter()
            .rev()
            .find(|(key, _)| key.as_ref() == name)
            .map(|(_, value)| value.as_ref().to_os_string())
            .or_else(|| std::env::var_os(name))
    };
    prepare(&jiti_dir(var, cwd))
}

/// The directory jiti 2 caches in for a Pi started in `cwd` whose environment `var` reads:
/// `<os.tmpdir()>/jiti`, Node's `os.tmpdir()` being the first non-empty of `TMPDIR`, `TMP`,
/// `TEMP`, else `/tmp`, without a trailing `/`. jiti passes over a `TMPDIR` equal to the working
/// directory, unless `JITI_RESPECT_TMPDIR_ENV` is set. (jiti prefers a `node_modules/.cache`
/// beside its caller when there is one; Pi's loader has none.)
pub fn jiti_dir(var: impl Fn(&str) -> Option<OsString>, cwd: &Path) -> PathBuf {
    let set = |name: &str| var(name).filter(|value| !value.is_empty());
    let tmpdir = |names: &[&str]| {
        names
            .iter()
            .find_map(|name| set(name))
            .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
    };
    let mut dir = tmpdir(&["TMPDIR", "TMP", "TEMP"]);
    let real_cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    // (A trailing `/`, which Node drops, makes no difference to a `Path`.)
    if dir == real_cwd && set("JITI_RESPECT_TMPDIR_ENV").is_none() {
        dir = tmpdir(&["TMP", "TEMP"]);
    }
    // A relative one is relative to Pi's working directory.
    cwd.join(dir).join("jiti")
}

/// Makes `dir` a cache only we can write to, or says why it cannot be one.
pub fn prepare(dir: &Path) -> TranspileCache {
    let off = |reason: String| TranspileCache::Off {
        dir: dir.to_path_buf(),
        reason,
    };
    let Some(parent) = dir.parent() else {
        return off(format!("{} has no parent directory", dir.display()));
    };
    if let Some(why) = crate::sys::path_trust::others_can_replace(parent) {
        return off(why);
    }
    // One of ours that others could write to may hold their files: start it afresh.
    if let Ok(meta) = std::fs::symlink_metadata(dir)
        && meta.is_dir()
        && meta.uid() == nix::unistd::geteuid().as_raw()
        && meta.mode() & 0o022 != 0
    {
        if let Err(err) = std::fs::remove_dir_all(dir) {
            return off(format!(
                "{} was open to others and cannot be emptied: {err}",
                dir.display()
            ));
        }
        tracing::info!(
            "emptied {}: others could write to it (mode {:o})",
            dir.display(),
            meta.mode() & 0o777
        );
    }
    match crate::sys::private_dir::ensure_private(dir) {
        Ok(()) => TranspileCache::Private(dir.to_path_buf()),
        Err(err) => off(err.to_string()),
    }
}

/// For the tests of each place that starts a Pi: a TMPDIR whose `jiti` is not ours (a link),
/// so a Pi started with it in its environment must get the cache turned off.
#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
pub fn foreign_tmpdir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/", tmp.path().join("jiti")).unwrap();
    tmp
}

/// Whether an environment dump (`env` output) has jiti's cache turned off.
#[cfg(test)]
pub fn cache_is_off_in(env_dump: &str) -> bool {
    env_dump.lines().any(|line| line == "JITI_FS_CACHE=false")
        && env_dump.lines().any(|line| line == "JITI_CACHE=false")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    fn env_of(cache: &TranspileCache) -> Vec<(String, String)> {
        cache
            .env()
            .into_iter()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn jiti_dir_follows_node_and_jiti() {
        let cwd = tempfile::tempdir().unwrap();
        let real_cwd = std::fs::canonicalize(cwd.path()).unwrap();
        let cwd_text = real_cwd.display().to_string();
        let owned = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect()
        };
        let cases = [
            (owned(&[]), PathBuf::from("/tmp/jiti")),
            (owned(&[("TMPDIR", "/scratch")]), "/scratch/jiti".into()),
            (owned(&[("TMPDIR", "/scratch/")]), "/scratch/jiti".into()),
            (owned(&[("TMPDIR", ""), ("TMP", "/t")]), "/t/jiti".into()),
            (owned(&[("TEMP", "/e")]), "/e/jiti".into()),
            // jiti passes over a TMPDIR equal to the working directory…
            (
                owned(&[("TMPDIR", &cwd_text), ("TMP", "/t")]),
                "/t/jiti".into(),
            ),
            // … unless told not to.
            (
                owned(&[("TMPDIR", &cwd_text), ("JITI_RESPECT_TMPDIR_ENV", "1")]),
                real_cwd.join("jiti"),
            ),
            (owned(&[("TMPDIR", "rel")]), cwd.path().join("rel/jiti")),
        ];
        crate::test_table::check_table(cases, |vars| {
            let var = |name: &str| {
                vars.iter()
                    .find(|(key, _)| key == name)
                    .map(|(_, value)| OsString::from(value))
            };
            jiti_dir(var, cwd.path())
        });
    }

    #[test]
    fn a_missing_cache_is_created_ours_and_private() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("jiti");
        assert_eq!(prepare(&dir), TranspileCache::Private(dir.clone()));
        assert_eq!(mode(&dir), 0o700);
        assert!(env_of(&prepare(&dir)).is_empty());
    }

    #[test]
    fn one_of_ours_open_to_others_is_emptied_and_closed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("jiti");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        std::fs::write(dir.join("planted.mjs"), "theirs").unwrap();
        assert_eq!(prepare(&dir), TranspileCache::Private(dir.clone()));
        assert_eq!(mode(&dir), 0o700);
        assert!(!dir.join("planted.mjs").exists());
        // A closed one of ours keeps what it holds (the cache is the point).
        std::fs::write(dir.join("ours.mjs"), "ours").unwrap();
        assert_eq!(prepare(&dir), TranspileCache::Private(dir.clone()));
        assert!(dir.join("ours.mjs").exists());
    }

    #[test]
    fn another_users_cache_turns_the_cache_off_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("jiti");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        std::fs::write(dir.join("planted.mjs"), "theirs").unwrap();
        nix::unistd::chown(&dir, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        let cache = prepare(&dir);
        let TranspileCache::Off { reason, .. } = &cache else {
            panic!("{cache:?}");
        };
        assert!(reason.contains("uid 65534"), "{reason}");
        assert_eq!(
            env_of(&cache),
            [
                ("JITI_FS_CACHE".to_string(), "false".to_string()),
                ("JITI_CACHE".to_string(), "false".to_string())
            ]
        );
        let notice = cache.notice().unwrap();
        assert!(notice.contains(&dir.display().to_string()), "{notice}");
        assert_eq!(mode(&dir), 0o777);
        assert!(dir.join("planted.mjs").exists());
    }

    #[test]
    fn a_link_or_a_swappable_parent_turns_the_cache_off() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let link = tmp.path().join("jiti");
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        assert!(matches!(prepare(&link), TranspileCache::Off { .. }));
        // A parent anyone may write to, without the sticky bit: the directory could be swapped.
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let cache = prepare(&open.join("jiti"));
        assert!(
            matches!(&cache, TranspileCache::Off { reason, .. } if reason.contains("not sticky")),
            "{cache:?}"
        );
        assert!(!open.join("jiti").exists(), "nothing is created there");
    }

    #[test]
    fn the_childs_own_tmpdir_decides() {
        let tmp = foreign_tmpdir();
        let cwd = tempfile::tempdir().unwrap();
        let env = env_for(cwd.path(), &[("TMPDIR", tmp.path())]);
        assert!(
            env.contains(&("JITI_FS_CACHE".into(), "false".into())),
            "{env:?}"
        );
    }
}

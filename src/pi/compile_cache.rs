//! Keeping other users out of the caches of compiled code that Pi starts from.
//!
//! Two caches hold code a Pi runs without compiling it again ([`CacheKind`]), both by default in
//! the shared temporary directory (`<tmp>`, Node's `os.tmpdir()`) at names anyone can predict:
//! - jiti's: Pi loads every extension — our bridge, the user's `-e` files, the ones it discovers —
//!   with jiti, which compiles a TypeScript file once and keeps the result in `<tmp>/jiti/`, under
//!   a name made from the file's path and stamped with a hash of its source;
//! - Node's: Pi 1.6 calls `module.enableCompileCache()`, so Node keeps V8's code cache of every
//!   module Pi loads in `<tmp>/node-compile-cache/<Node's version and our uid>/<hash of the path>`
//!   (in `$NODE_COMPILE_CACHE` instead when that is set), checked only against hashes anyone can
//!   compute.
//!
//! Another local user who creates either directory first (mode 0777) owns what lands in it: they
//! can swap in their own code, and Pi runs it as us, with the bridge's socket and token in its
//! environment. jiti reads no cache path from the environment (`JITI_FS_CACHE` is read as a
//! boolean), and moving `TMPDIR` for Pi would move it for every command the agent runs. So right
//! before each Pi starts, [`env_for`] makes each cache's directory ours: created mode 0700, or an
//! existing one used only when it is a real directory of ours that nobody else can swap (every
//! directory above it ours or root's, the shared ones sticky: [`crate::sys::path_trust`]); one
//! of ours in `<tmp>` that others could write to is emptied first. A directory the user named in
//! `NODE_COMPILE_CACHE` is theirs to keep: it is created when missing, but never emptied nor
//! changed; one others could write to turns the cache off instead. Anything else turns that cache
//! off for that Pi (`JITI_FS_CACHE=false`, `NODE_DISABLE_COMPILE_CACHE=1`): it compiles at every
//! start (about 0.4 s of CPU more for jiti, 0.1 s for Node), and nothing is read from or written
//! to that directory. The check runs at every start, not once: a session lives for days, and a
//! cleaned `/tmp` may meanwhile lose our directory to someone else's. Node's directory is made
//! ours for a Pi of the older line too (which does not turn the cache on): the place is held
//! before anyone else takes it.
//!
//! The environment passes through a wrapper (a version manager's shim, a script around `pi`);
//! a wrapper that sets its own `TMPDIR` or `NODE_COMPILE_CACHE` moves the caches to its own
//! choice, out of this check.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::sys::lock;

/// A cache of compiled code a Pi reads at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CacheKind {
    /// jiti's, of the extensions it compiled from TypeScript.
    Jiti,
    /// Node's, of V8's code for the modules Pi loads.
    Node,
}

/// Where a cache is for one Pi.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Place {
    pub dir: PathBuf,
    /// The variable that names `dir` itself (`NODE_COMPILE_CACHE`): the user's own directory,
    /// never emptied nor changed. `None`: the cache's own directory in the temporary directory.
    pub named_by: Option<&'static str>,
}

/// One cache of one Pi, after [`prepare`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CompileCache {
    pub kind: CacheKind,
    pub place: Place,
    /// Why it is off: its directory could not be made ours. `None`: only we can write to it.
    pub off: Option<String>,
}

impl CacheKind {
    pub(crate) const ALL: [Self; 2] = [Self::Jiti, Self::Node];

    /// Where this cache is for a Pi started in `cwd` whose environment `var` reads, or `None`
    /// when that environment has it off already.
    ///
    /// Both start from Node's `os.tmpdir()`: the first non-empty of `TMPDIR`, `TMP`, `TEMP`,
    /// else `/tmp`, a relative one relative to Pi's working directory (a trailing `/`, which Node
    /// drops, makes no difference to a `Path`).
    /// - jiti 2: `<tmpdir>/jiti`, passing over a `TMPDIR` equal to the working directory unless
    ///   `JITI_RESPECT_TMPDIR_ENV` is set. (jiti prefers a `node_modules/.cache` beside its caller
    ///   when there is one; Pi's loader has none.)
    /// - Node: a non-empty `NODE_COMPILE_CACHE` (relative to the working directory), else
    ///   `<tmpdir>/node-compile-cache`; none when `NODE_DISABLE_COMPILE_CACHE` is set, to anything
    ///   (Node only asks whether it is there).
    pub(crate) fn place(self, var: impl Fn(&str) -> Option<OsString>, cwd: &Path) -> Option<Place> {
        let set = |name: &str| var(name).filter(|value| !value.is_empty());
        let tmpdir = |names: &[&str]| {
            names
                .iter()
                .find_map(|name| set(name))
                .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
        };
        let in_tmp = |dir: PathBuf, name: &str| Place {
            dir: cwd.join(dir).join(name),
            named_by: None,
        };
        match self {
            Self::Jiti => {
                let mut dir = tmpdir(&["TMPDIR", "TMP", "TEMP"]);
                let real_cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
                if dir == real_cwd && set("JITI_RESPECT_TMPDIR_ENV").is_none() {
                    dir = tmpdir(&["TMP", "TEMP"]);
                }
                Some(in_tmp(dir, "jiti"))
            }
            Self::Node if var("NODE_DISABLE_COMPILE_CACHE").is_some() => None,
            Self::Node => Some(match set("NODE_COMPILE_CACHE") {
                Some(dir) => Place {
                    dir: cwd.join(dir),
                    named_by: Some("NODE_COMPILE_CACHE"),
                },
                None => in_tmp(tmpdir(&["TMPDIR", "TMP", "TEMP"]), "node-compile-cache"),
            }),
        }
    }

    /// What turns this cache off in Pi's environment (for jiti, jiti 2's and jiti 1's switch).
    pub(crate) fn off_env(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Jiti => &[("JITI_FS_CACHE", "false"), ("JITI_CACHE", "false")],
            Self::Node => &[("NODE_DISABLE_COMPILE_CACHE", "1")],
        }
    }

    /// The cache, for the log.
    fn name(self) -> &'static str {
        match self {
            Self::Jiti => "jiti's extension cache",
            Self::Node => "Node's compile cache",
        }
    }

    /// What the user sees when it is off.
    fn without(self) -> &'static str {
        match self {
            Self::Jiti => "Pi compiles its extensions without a cache",
            Self::Node => "Node compiles Pi without its code cache",
        }
    }
}

impl CompileCache {
    /// What Pi's environment gets: nothing for a private cache, the cache's switch turned off
    /// otherwise.
    pub(crate) fn env(&self) -> Vec<(OsString, OsString)> {
        let off = if self.off.is_some() {
            self.kind.off_env()
        } else {
            &[]
        };
        off.iter()
            .map(|(name, value)| (OsString::from(name), OsString::from(value)))
            .collect()
    }

    /// The start-up notice when the cache is off.
    pub(crate) fn notice(&self) -> Option<String> {
        let reason = self.off.as_ref()?;
        Some(format!(
            "{} (each start takes longer): {reason}. Remove {} if it is not yours, or set {} to \
             a directory of your own",
            self.kind.without(),
            self.place.dir.display(),
            self.place.named_by.unwrap_or("TMPDIR"),
        ))
    }
}

/// Makes the directory of each cache of a Pi started in `cwd` with `child_env` added to ours
/// private, and returns the environment that Pi gets for them ([`CompileCache::env`]). A cache
/// turned off is logged (once while the reason stays the same).
pub fn env_for<K, V>(cwd: &Path, child_env: &[(K, V)]) -> Vec<(OsString, OsString)>
where
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    static LAST: Mutex<[Option<String>; CacheKind::ALL.len()]> = Mutex::new([None, None]);
    let caches = prepare_for(cwd, child_env);
    for cache in &caches {
        if let Some(reason) = &cache.off {
            let mut last = lock(&LAST);
            let last = &mut last[cache.kind as usize];
            if last.as_deref() != Some(reason.as_str()) {
                tracing::warn!("{} is off for Pi: {reason}", cache.kind.name());
                *last = Some(reason.clone());
            }
        }
    }
    caches.iter().flat_map(CompileCache::env).collect()
}

/// [`env_for`] without the log: the caches a Pi started in `cwd` with `child_env` would use.
pub(crate) fn prepare_for<K, V>(cwd: &Path, child_env: &[(K, V)]) -> Vec<CompileCache>
where
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    let var = |name: &str| {
        child_env
            .iter()
            .rev()
            .find(|(key, _)| key.as_ref() == name)
            .map(|(_, value)| value.as_ref().to_os_string())
            .or_else(|| std::env::var_os(name))
    };
    CacheKind::ALL
        .into_iter()
        .filter_map(|kind| {
            let place = kind.place(var, cwd)?;
            let off = prepare(&place).err();
            Some(CompileCache { kind, place, off })
        })
        .collect()
}

/// Makes `place` a cache only we can write to, or says why it cannot be one.
pub(crate) fn prepare(place: &Place) -> Result<(), String> {
    let dir = &place.dir;
    let Some(parent) = dir.parent() else {
        return Err(format!("{} has no parent directory", dir.display()));
    };
    if let Some(why) = crate::sys::path_trust::others_can_replace(parent) {
        return Err(why);
    }
    let existing = std::fs::symlink_metadata(dir).ok();
    // One of ours that others could write to may hold their files.
    if let Some(meta) = &existing
        && meta.is_dir()
        && meta.uid() == nix::unistd::geteuid().as_raw()
        && meta.mode() & 0o022 != 0
    {
        let mode = meta.mode() & 0o7777;
        if let Some(var) = place.named_by {
            // The user's own directory may hold anything: not ours to empty.
            return Err(format!(
                "others can write to {} (mode {mode:o}), which {var} names",
                dir.display()
            ));
        }
        // The cache's own directory: start it afresh.
        std::fs::remove_dir_all(dir).map_err(|err| {
            format!(
                "{} was open to others and cannot be emptied: {err}",
                dir.display()
            )
        })?;
        tracing::info!(
            "emptied {}: others could write to it (mode {mode:o})",
            dir.display()
        );
    } else if let Some(meta) = &existing
        && place.named_by.is_some()
    {
        // The user's own directory is used as it is, if it is a real one of ours.
        if meta.file_type().is_symlink() || !meta.is_dir() {
            return Err(format!("{} is not a directory", dir.display()));
        }
        if meta.uid() != nix::unistd::geteuid().as_raw() {
            return Err(format!(
                "{} belongs to another user (uid {})",
                dir.display(),
                meta.uid()
            ));
        }
        return Ok(());
    }
    crate::sys::private_dir::ensure_private(dir).map_err(|err| err.to_string())
}

/// For the tests of each place that starts a Pi: a TMPDIR whose `jiti` and `node-compile-cache`
/// are not ours (links), so a Pi started with it in its environment must get both caches
/// turned off.
#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
pub fn foreign_tmpdir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["jiti", "node-compile-cache"] {
        std::os::unix::fs::symlink("/", tmp.path().join(name)).unwrap();
    }
    tmp
}

/// Whether an environment dump (`env` output) has every cache turned off.
#[cfg(test)]
pub fn caches_are_off_in(env_dump: &str) -> bool {
    CacheKind::ALL
        .iter()
        .flat_map(|kind| kind.off_env())
        .all(|(name, value)| {
            env_dump
                .lines()
                .any(|line| line == format!("{name}={value}"))
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn in_tmp(dir: &Path) -> Place {
        Place {
            dir: dir.to_path_buf(),
            named_by: None,
        }
    }

    fn named(dir: &Path) -> Place {
        Place {
            dir: dir.to_path_buf(),
            named_by: Some("NODE_COMPILE_CACHE"),
        }
    }

    fn env_of(cache: &CompileCache) -> Vec<(String, String)> {
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

    /// A directory holding a planted file, made the user `nobody`'s and open to all.
    fn theirs(dir: &Path) {
        std::fs::create_dir(dir).unwrap();
        chmod(dir, 0o777);
        std::fs::write(dir.join("planted"), "theirs").unwrap();
        nix::unistd::chown(dir, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
    }

    #[test]
    fn each_cache_is_where_node_and_jiti_put_it() {
        let cwd = tempfile::tempdir().unwrap();
        let real_cwd = std::fs::canonicalize(cwd.path()).unwrap();
        let cwd_text = real_cwd.display().to_string();
        let owned = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect()
        };
        let tmp = |dir: &str| {
            Some(Place {
                dir: dir.into(),
                named_by: None,
            })
        };
        let named = |dir: PathBuf| {
            Some(Place {
                dir,
                named_by: Some("NODE_COMPILE_CACHE"),
            })
        };
        use CacheKind::{Jiti, Node};
        let cases = [
            ((Jiti, owned(&[])), tmp("/tmp/jiti")),
            (
                (Jiti, owned(&[("TMPDIR", "/scratch")])),
                tmp("/scratch/jiti"),
            ),
            (
                (Jiti, owned(&[("TMPDIR", "/scratch/")])),
                tmp("/scratch/jiti"),
            ),
            (
                (Jiti, owned(&[("TMPDIR", ""), ("TMP", "/t")])),
                tmp("/t/jiti"),
            ),
            ((Jiti, owned(&[("TEMP", "/e")])), tmp("/e/jiti")),
            // jiti passes over a TMPDIR equal to the working directory…
            (
                (Jiti, owned(&[("TMPDIR", &cwd_text), ("TMP", "/t")])),
                tmp("/t/jiti"),
            ),
            // … unless told not to.
            (
                (
                    Jiti,
                    owned(&[("TMPDIR", &cwd_text), ("JITI_RESPECT_TMPDIR_ENV", "1")]),
                ),
                tmp(&format!("{cwd_text}/jiti")),
            ),
            (
                (Jiti, owned(&[("TMPDIR", "rel")])),
                Some(in_tmp(&cwd.path().join("rel/jiti"))),
            ),
            // Node's: in os.tmpdir(), with no exception for the working directory.
            ((Node, owned(&[])), tmp("/tmp/node-compile-cache")),
            (
                (Node, owned(&[("TMPDIR", "/scratch/")])),
                tmp("/scratch/node-compile-cache"),
            ),
            (
                (Node, owned(&[("TMPDIR", ""), ("TMP", "/t")])),
                tmp("/t/node-compile-cache"),
            ),
            (
                (Node, owned(&[("TMPDIR", &cwd_text)])),
                tmp(&format!("{cwd_text}/node-compile-cache")),
            ),
            (
                (Node, owned(&[("TMPDIR", "rel")])),
                Some(in_tmp(&cwd.path().join("rel/node-compile-cache"))),
            ),
            // NODE_COMPILE_CACHE names the directory itself; empty is unset.
            (
                (
                    Node,
                    owned(&[("NODE_COMPILE_CACHE", "/c"), ("TMPDIR", "/s")]),
                ),
                named("/c".into()),
            ),
            (
                (Node, owned(&[("NODE_COMPILE_CACHE", "rel")])),
                named(cwd.path().join("rel")),
            ),
            (
                (Node, owned(&[("NODE_COMPILE_CACHE", ""), ("TMPDIR", "/s")])),
                tmp("/s/node-compile-cache"),
            ),
            // Turned off already, by any value: nothing to do.
            ((Node, owned(&[("NODE_DISABLE_COMPILE_CACHE", "")])), None),
            (
                (
                    Node,
                    owned(&[
                        ("NODE_DISABLE_COMPILE_CACHE", "0"),
                        ("NODE_COMPILE_CACHE", "/c"),
                    ]),
                ),
                None,
            ),
        ];
        crate::test_table::check_table(cases, |(kind, vars)| {
            let var = |name: &str| {
                vars.iter()
                    .find(|(key, _)| key == name)
                    .map(|(_, value)| OsString::from(value))
            };
            kind.place(var, cwd.path())
        });
    }

    #[test]
    fn a_missing_cache_is_created_ours_and_private() {
        let tmp = tempfile::tempdir().unwrap();
        for place in [
            in_tmp(&tmp.path().join("jiti")),
            named(&tmp.path().join("c")),
        ] {
            assert_eq!(prepare(&place), Ok(()));
            assert_eq!(mode(&place.dir), 0o700);
        }
    }

    #[test]
    fn one_of_ours_open_to_others_is_emptied_and_closed() {
        let tmp = tempfile::tempdir().unwrap();
        for name in ["jiti", "node-compile-cache"] {
            let dir = tmp.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            chmod(&dir, 0o777);
            std::fs::write(dir.join("planted"), "theirs").unwrap();
            assert_eq!(prepare(&in_tmp(&dir)), Ok(()));
            assert_eq!(mode(&dir), 0o700);
            assert!(!dir.join("planted").exists());
            // A closed one of ours keeps what it holds (the cache is the point).
            std::fs::write(dir.join("ours"), "ours").unwrap();
            assert_eq!(prepare(&in_tmp(&dir)), Ok(()));
            assert!(dir.join("ours").exists());
        }
    }

    /// What NODE_COMPILE_CACHE names is the user's: used as it is, never emptied nor changed;
    /// open to others, it turns the cache off.
    #[test]
    fn a_named_directory_is_never_emptied_nor_changed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("mine");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("keep"), "mine").unwrap();
        chmod(&dir, 0o755);
        assert_eq!(prepare(&named(&dir)), Ok(()));
        assert_eq!(mode(&dir), 0o755);
        chmod(&dir, 0o775);
        let why = prepare(&named(&dir)).unwrap_err();
        assert!(
            why.contains("others can write") && why.contains("NODE_COMPILE_CACHE"),
            "{why}"
        );
        assert_eq!(mode(&dir), 0o775);
        assert!(dir.join("keep").exists());
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(prepare(&named(&link)).is_err());
    }

    #[test]
    fn another_users_cache_turns_the_cache_off_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        for (kind, place) in [
            (CacheKind::Jiti, in_tmp(&tmp.path().join("jiti"))),
            (
                CacheKind::Node,
                in_tmp(&tmp.path().join("node-compile-cache")),
            ),
            (CacheKind::Node, named(&tmp.path().join("named"))),
        ] {
            theirs(&place.dir);
            let off = prepare(&place).err();
            let cache = CompileCache { kind, place, off };
            let reason = cache.off.as_deref().unwrap_or_else(|| panic!("{cache:?}"));
            assert!(reason.contains("uid 65534"), "{reason}");
            let want: Vec<(String, String)> = kind
                .off_env()
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect();
            assert_eq!(env_of(&cache), want);
            let notice = cache.notice().unwrap();
            let dir = &cache.place.dir;
            assert!(notice.contains(&dir.display().to_string()), "{notice}");
            let var = cache.place.named_by.unwrap_or("TMPDIR");
            assert!(notice.contains(&format!("set {var} to")), "{notice}");
            assert_eq!(mode(dir), 0o777);
            assert!(dir.join("planted").exists());
        }
        assert_eq!(
            CacheKind::Node.off_env(),
            [("NODE_DISABLE_COMPILE_CACHE", "1")]
        );
    }

    #[test]
    fn a_link_or_a_swappable_parent_turns_the_cache_off() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let link = tmp.path().join("jiti");
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        assert!(prepare(&in_tmp(&link)).is_err());
        // A parent anyone may write to, without the sticky bit: the directory could be swapped.
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        for place in [in_tmp(&open.join("jiti")), named(&open.join("named"))] {
            let why = prepare(&place).unwrap_err();
            assert!(why.contains("not sticky"), "{why}");
            assert!(!place.dir.exists(), "nothing is created there");
        }
    }

    #[test]
    fn the_childs_own_environment_decides() {
        let tmp = foreign_tmpdir();
        let cwd = tempfile::tempdir().unwrap();
        let env = env_for(cwd.path(), &[("TMPDIR", tmp.path())]);
        let dump: String = env
            .iter()
            .map(|(k, v)| format!("{}={}\n", k.display(), v.display()))
            .collect();
        assert!(caches_are_off_in(&dump), "{dump}");
        // Node's cache named elsewhere, in a place of ours: only jiti's is off.
        let named = cwd.path().join("node-cache");
        let env = env_for(
            cwd.path(),
            &[
                ("TMPDIR", tmp.path()),
                ("NODE_COMPILE_CACHE", named.as_path()),
            ],
        );
        assert!(
            env.contains(&("JITI_FS_CACHE".into(), "false".into()))
                && !env.iter().any(|(k, _)| k == "NODE_DISABLE_COMPILE_CACHE"),
            "{env:?}"
        );
        assert_eq!(mode(&named), 0o700);
        // Turned off already: left so, nothing added.
        let env = env_for(
            cwd.path(),
            &[
                ("TMPDIR", tmp.path().as_os_str()),
                ("NODE_DISABLE_COMPILE_CACHE", OsStr::new("yes")),
            ],
        );
        assert!(
            !env.iter().any(|(k, _)| k == "NODE_DISABLE_COMPILE_CACHE"),
            "{env:?}"
        );
    }
}

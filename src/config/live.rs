//! A config that follows its files: the one way a module's settings take effect without a
//! restart. [`LiveConfig::get`] stats the config's files (the home and the workspace copy of
//! each) and reads them again only when a stamp moved since the last look — an edit in an
//! editor, a `sed -i`, a settings save — so the next use sees the file as it is now, and a use
//! with nothing changed costs a few `stat` calls. A file is stamped before it is read, so a write
//! landing during the read is seen by the next look, never lost. (The one edit a stamp cannot
//! see is a second one within the same clock tick that keeps the file's size: not a hand edit.)
//!
//! A file that turns bad while the workbench runs is reported like one that was bad at start
//! (path, line, column: logged, and handed to the capability's report, a notice on the screen),
//! once per change, and what could not be read keeps its default — as at start.
//!
//! What is fixed when the workbench starts (the keymap of the running loop, which process owns
//! MCP, a detachable session) is not read through here; those keys say in their messages and
//! docs that a restart applies them.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::ConfigError;
use crate::sys::fs::FileStamp;

/// Reads the files into a config (defaults, then the home file, then the workspace file).
type Load<C> = dyn Fn() -> (C, Vec<ConfigError>) + Send + Sync;
/// Where the problems found by a read after start go.
type Report = dyn Fn(&[ConfigError]) + Send + Sync;

/// A config read again when its files change. Cheap to clone; clones share the config.
pub struct LiveConfig<C> {
    inner: Arc<Inner<C>>,
}

impl<C> Clone for LiveConfig<C> {
    fn clone(&self) -> Self {
        LiveConfig {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<C: std::fmt::Debug> std::fmt::Debug for LiveConfig<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveConfig")
            .field("files", &self.inner.files)
            .field("config", &crate::sys::lock(&self.inner.current).config)
            .finish()
    }
}

struct Inner<C> {
    /// The files followed, home copies first; empty for a fixed config.
    files: Vec<PathBuf>,
    load: Option<Box<Load<C>>>,
    report: Box<Report>,
    current: Mutex<Current<C>>,
}

struct Current<C> {
    stamps: Vec<Option<FileStamp>>,
    config: Arc<C>,
}

impl<C: Send + Sync + 'static> LiveConfig<C> {
    /// The module config file(s) `relative` (each below the home directory and the workspace) as
    /// `load` reads them, read now: the config and the problems found, for the caller to report
    /// at start.
    pub fn module(
        home: Option<&Path>,
        workspace: &Path,
        relative: &[&str],
        load: fn(Option<&Path>, &Path) -> (C, Vec<ConfigError>),
    ) -> (Self, Vec<ConfigError>) {
        let mut files = Vec::new();
        for relative in relative {
            files.extend(home.map(|home| home.join(relative)));
            files.push(workspace.join(relative));
        }
        let (home, workspace) = (home.map(Path::to_path_buf), workspace.to_path_buf());
        Self::following(files, move || load(home.as_deref(), &workspace))
    }

    /// A config that `load` reads from `files`, read now.
    pub fn following(
        files: Vec<PathBuf>,
        load: impl Fn() -> (C, Vec<ConfigError>) + Send + Sync + 'static,
    ) -> (Self, Vec<ConfigError>) {
        let stamps = stamps(&files);
        let (config, errors) = load();
        let live = LiveConfig {
            inner: Arc::new(Inner {
                files,
                load: Some(Box::new(load)),
                report: Box::new(|_| {}),
                current: Mutex::new(Current {
                    stamps,
                    config: Arc::new(config),
                }),
            }),
        };
        (live, errors)
    }

    /// A config that never changes (a module built in a test, a headless tool with its own).
    pub fn fixed(config: C) -> Self {
        LiveConfig {
            inner: Arc::new(Inner {
                files: Vec::new(),
                load: None,
                report: Box::new(|_| {}),
                current: Mutex::new(Current {
                    stamps: Vec::new(),
                    config: Arc::new(config),
                }),
            }),
        }
    }

    /// Hands the problems of each read after start to `report` (they are logged either way).
    /// Set before the first clone is made.
    pub fn reporting(self, report: impl Fn(&[ConfigError]) + Send + Sync + 'static) -> Self {
        match Arc::try_unwrap(self.inner) {
            Ok(mut inner) => {
                inner.report = Box::new(report);
                LiveConfig {
                    inner: Arc::new(inner),
                }
            }
            Err(inner) => {
                tracing::warn!("a live config's report was set after it was shared; not set");
                LiveConfig { inner }
            }
        }
    }

    /// The config as its files are now: read again first if any of them changed (or appeared, or
    /// went) since the last look.
    pub fn get(&self) -> Arc<C> {
        self.read(false)
    }

    /// Reads the files again now, changed or not (a settings save that just wrote one: in force
    /// at once, whatever the clock's resolution).
    pub fn reload(&self) -> Arc<C> {
        self.read(true)
    }

    fn read(&self, always: bool) -> Arc<C> {
        let Some(load) = &self.inner.load else {
            return Arc::clone(&crate::sys::lock(&self.inner.current).config);
        };
        // Reads are rare and small; holding the lock through one keeps two callers from reading
        // the same change twice.
        let mut current = crate::sys::lock(&self.inner.current);
        let now = stamps(&self.inner.files);
        if always || now != current.stamps {
            let (config, errors) = load();
            for error in &errors {
                tracing::warn!("config changed: {error}");
            }
            if !errors.is_empty() {
                (self.inner.report)(&errors);
            }
            tracing::info!(
                "config read again: {}",
                self.inner
                    .files
                    .iter()
                    .map(|file| file.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            *current = Current {
                stamps: now,
                config: Arc::new(config),
            };
        }
        Arc::clone(&current.config)
    }
}

impl<C: Send + Sync + 'static> From<C> for LiveConfig<C> {
    fn from(config: C) -> Self {
        LiveConfig::fixed(config)
    }
}

fn stamps(files: &[PathBuf]) -> Vec<Option<FileStamp>> {
    files.iter().map(|file| FileStamp::of_path(file)).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::config::module_file::{ModuleConfig, Object, write_module_file};

    const FILE: &str = ".unipi/config/live-test.json";

    /// A config of one number, `n` (default 0).
    #[derive(Default)]
    struct N(u64);

    impl ModuleConfig for N {
        const FILE: &'static str = FILE;
        fn read(&mut self, file: &mut Object<'_>) {
            match file.value("n").map(serde_json::Value::as_u64) {
                Some(Some(n)) => self.0 = n,
                Some(None) => file.report("n", "`n` is not `n` as a number"),
                None => {}
            }
            file.warn_unknown_with(|key, _| format!("`{key}` is not `n` as a number"));
        }
    }

    fn load(home: Option<&Path>, workspace: &Path) -> (u64, Vec<ConfigError>) {
        let (N(n), errors) = N::load(home, workspace);
        (n, errors)
    }

    #[test]
    fn an_edit_is_seen_by_the_next_use_and_nothing_is_read_while_nothing_changed() {
        let (home, workspace) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let reads = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&reads);
        let (h, w) = (home.path().to_path_buf(), workspace.path().to_path_buf());
        let files = vec![h.join(FILE), w.join(FILE)];
        let (live, errors) = LiveConfig::following(files, move || {
            counted.fetch_add(1, Ordering::SeqCst);
            load(Some(&h), &w)
        });
        assert_eq!((*live.get(), errors), (0, vec![]));
        assert_eq!(*live.get(), 0);
        assert_eq!(
            reads.load(Ordering::SeqCst),
            1,
            "read again with nothing changed"
        );

        // Created in the home directory, then overridden by the workspace, edited in place, and
        // removed: each is seen at the next use.
        write_module_file(home.path(), FILE, r#"{"n": 1}"#);
        assert_eq!(*live.get(), 1);
        write_module_file(workspace.path(), FILE, r#"{"n": 2}"#);
        assert_eq!(*live.get(), 2);
        let clone = live.clone();
        write_module_file(workspace.path(), FILE, r#"{"n": 30}"#);
        assert_eq!(*clone.get(), 30, "a clone follows the same files");
        std::fs::remove_file(workspace.path().join(FILE)).unwrap();
        assert_eq!(*live.get(), 1);
        assert_eq!(reads.load(Ordering::SeqCst), 5);
        assert_eq!(*live.reload(), 1);
        assert_eq!(
            reads.load(Ordering::SeqCst),
            6,
            "a reload reads whatever the stamps say"
        );
    }

    #[test]
    fn a_file_that_turns_bad_is_reported_once_and_keeps_the_default() {
        let (home, workspace) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (live, _) = LiveConfig::module(Some(home.path()), workspace.path(), &[FILE], load);
        let reported = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&reported);
        let live = live.reporting(move |errors| {
            let shown = errors.iter().map(ToString::to_string);
            crate::sys::lock(&sink).extend(shown);
        });
        write_module_file(workspace.path(), FILE, "{\n  \"n\": \"four\"\n}");
        assert_eq!(*live.get(), 0);
        assert_eq!(*live.get(), 0);
        let reported = crate::sys::lock(&reported).clone();
        let file = workspace.path().join(FILE);
        assert_eq!(
            reported,
            [format!(
                "{}:2:3: `n` is not `n` as a number",
                file.display()
            )],
            "reported once, with path, line and column"
        );
    }

    #[test]
    fn a_fixed_config_reads_nothing() {
        let live = LiveConfig::from(7_u64);
        assert_eq!(*live.get(), 7);
    }
}

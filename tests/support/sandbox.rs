//! The directories of an end-to-end run, apart as they are on a real machine: HOME, the project
//! the workbench is started in (with files of its own), and TMPDIR are three different
//! directories, so a child that runs in, reads from or writes to the wrong one is caught. All
//! three live under one temporary root, removed when the sandbox drops.

use std::path::{Path, PathBuf};

pub struct Sandbox {
    _root: tempfile::TempDir,
    /// The root, canonical.
    base: PathBuf,
    /// HOME, with the XDG directories inside it.
    pub home: PathBuf,
    /// The working directory the workbench is started in.
    pub project: PathBuf,
    /// TMPDIR.
    pub tmp: PathBuf,
}

/// A file every project holds, so a listing of the working directory shows whose it is.
pub const PROJECT_MARKER: &str = "PROJECT-MARKER.txt";

impl Sandbox {
    pub fn new() -> Sandbox {
        let root = tempfile::tempdir().expect("a temporary directory");
        // Canonical, so paths compare equal to what the kernel reports (`/proc/<pid>/cwd`).
        let base = std::fs::canonicalize(root.path()).expect("the temporary directory exists");
        let [home, project, tmp] = ["home", "project", "tmp"].map(|name| base.join(name));
        for dir in [&home, &project, &tmp] {
            std::fs::create_dir_all(dir).expect("create a sandbox directory");
        }
        std::fs::write(project.join(PROJECT_MARKER), "the project's own file\n")
            .expect("write the project marker");
        Sandbox {
            _root: root,
            base,
            home,
            project,
            tmp,
        }
    }

    /// The directory holding the three (canonical).
    pub fn root(&self) -> &Path {
        &self.base
    }

    /// A further directory `name` beside the three (a Pi agent directory, a cache), created.
    pub fn dir(&self, name: &str) -> PathBuf {
        let dir = self.base.join(name);
        std::fs::create_dir_all(&dir).expect("create a sandbox directory");
        dir
    }

    /// HOME, the XDG directories inside it and TMPDIR, for the workbench's environment. No
    /// `XDG_RUNTIME_DIR` (empty counts as unset), so the workbench's private runtime directory
    /// is [`Sandbox::runtime_root`], inside the sandbox, whatever the machine has.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let home = self.home.display().to_string();
        vec![
            ("HOME", home.clone()),
            ("XDG_CONFIG_HOME", format!("{home}/.config")),
            ("XDG_STATE_HOME", format!("{home}/.local/state")),
            ("XDG_CACHE_HOME", format!("{home}/.cache")),
            ("XDG_RUNTIME_DIR", String::new()),
            ("TMPDIR", self.tmp.display().to_string()),
        ]
    }

    /// The workbench's private runtime directory: `$TMPDIR/unipi-<uid>`.
    pub fn runtime_root(&self) -> PathBuf {
        self.tmp.join(format!("unipi-{}", nix::unistd::geteuid()))
    }

    /// The helper runs' directories (under the XDG state directory), one per run.
    pub fn helper_runs(&self) -> Vec<PathBuf> {
        let root = self.home.join(".local/state/unipi-tui/helper-runs");
        let mut runs: Vec<PathBuf> = std::fs::read_dir(root)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .collect();
        runs.sort();
        runs
    }

    /// The workbench's log file (under the sandbox's XDG state directory).
    pub fn log_path(&self) -> PathBuf {
        self.home.join(".local/state/unipi-tui/unipi-tui.log")
    }

    /// The workbench's log so far (empty before it exists).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// The last `lines` lines of the log, for failure messages.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = self.log();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Writes `text` to `path` (a file in `home` or `project`), creating its directory.
    pub fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("a file path has a parent"))
            .expect("create the file's directory");
        std::fs::write(path, text).expect("write a sandbox file");
    }
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox::new()
    }
}

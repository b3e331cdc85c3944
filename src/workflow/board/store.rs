//! The board's data: the parsed documents of `.unipi/docs/`, kept in memory for the view and
//! rescanned (only changed files re-parsed, see `docs::scan`) when the watcher reports a change.
//! The watcher is inotify through `notify`, debounced here: the first event of a burst starts a
//! short wait, the rest of the burst is drained, then one rescan runs on a blocking thread. No
//! timer runs while nothing changes.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::capability::Changed;
use crate::sys::lock;
use crate::workflow::docs::edit::{MoveError, move_item};
use crate::workflow::docs::scan::DocCache;
use crate::workflow::docs::{DOCS_DIR, Doc, Item, ItemStatus};

/// How long a burst of file events is collected before one rescan.
const DEBOUNCE: Duration = Duration::from_millis(120);

/// The folders the workflow steps write into, made when a step first runs.
pub(crate) const DOC_FOLDERS: &[&str] = &[
    "specs",
    "plans",
    "quick-work",
    "debug",
    "fix",
    "chore",
    "reviews",
    "generated",
];

pub(crate) struct BoardStore {
    /// The project: what a move may write into (links followed) and what a scan follows links
    /// within.
    workspace: PathBuf,
    docs_dir: PathBuf,
    state: Mutex<State>,
    changed: Changed,
    watcher: Mutex<Option<notify::RecommendedWatcher>>,
}

#[derive(Default)]
struct State {
    cache: DocCache,
    docs: Arc<Vec<Doc>>,
    scanned: bool,
}

impl BoardStore {
    /// The board of the project `workspace` (its documents under `.unipi/docs`).
    pub(crate) fn new(workspace: PathBuf, changed: Changed) -> Arc<BoardStore> {
        Arc::new(BoardStore {
            docs_dir: workspace.join(DOCS_DIR),
            workspace,
            state: Mutex::new(State::default()),
            changed,
            watcher: Mutex::new(None),
        })
    }

    pub(crate) fn docs_dir(&self) -> &Path {
        &self.docs_dir
    }

    /// The documents as last scanned (memory only).
    pub(crate) fn docs(&self) -> Arc<Vec<Doc>> {
        Arc::clone(&lock(&self.state).docs)
    }

    /// Rescans the tree (blocking I/O); signals a change when the documents differ.
    pub(crate) fn rescan(&self) -> bool {
        let mut state = lock(&self.state);
        let docs = state.cache.scan(&self.docs_dir, &self.workspace);
        let different = !state.scanned || *state.docs != docs;
        state.scanned = true;
        if different {
            state.docs = Arc::new(docs);
            drop(state);
            self.changed.bump();
        }
        different
    }

    /// Signals a change (a notice for the view).
    pub(crate) fn changed_now(&self) {
        self.changed.bump();
    }

    /// How many files were parsed so far.
    #[cfg(test)]
    pub(crate) fn parsed(&self) -> usize {
        lock(&self.state).cache.parsed()
    }

    /// Makes the docs folders (a step is about to write) — blocking I/O. None is made outside
    /// the project (a `.unipi` or `.unipi/docs` that links out is refused).
    pub(crate) fn create_folders(&self) -> std::io::Result<()> {
        for folder in DOC_FOLDERS {
            let dir = Path::new(DOCS_DIR).join(folder);
            crate::sys::confine::create_dir_all(&self.workspace, &dir).map_err(|err| {
                std::io::Error::new(
                    err.kind(),
                    format!("cannot create {}: {err}", dir.display()),
                )
            })?;
        }
        Ok(())
    }

    /// Starts watching the docs folder if it exists and is not watched yet (needs a Tokio
    /// runtime). Returns whether it is watched now.
    pub(crate) fn watch(self: &Arc<Self>) -> bool {
        let mut slot = lock(&self.watcher);
        if slot.is_some() {
            return true;
        }
        if !self.docs_dir.is_dir() {
            return false;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if event.is_ok_and(|event| !event.kind.is_access()) {
                let _ = tx.send(());
            }
        })
        .and_then(|mut watcher| {
            watcher.watch(&self.docs_dir, RecursiveMode::Recursive)?;
            Ok(watcher)
        });
        match watcher {
            Ok(watcher) => {
                *slot = Some(watcher);
                tokio::spawn(debounced_rescans(Arc::downgrade(self), rx));
                tracing::info!("board: watching {}", self.docs_dir.display());
                true
            }
            Err(err) => {
                tracing::warn!("board: cannot watch {}: {err}", self.docs_dir.display());
                false
            }
        }
    }

    /// Stops watching (shutdown).
    pub(crate) fn unwatch(&self) {
        lock(&self.watcher).take();
    }

    /// Moves `item` of `doc` to column `to`, in the file (blocking I/O), then rescans. Errors
    /// name the file relative to the project (`.unipi/docs/plans/x.md`).
    pub(crate) fn move_card(
        &self,
        doc: &Doc,
        item: &Item,
        to: ItemStatus,
    ) -> Result<(), MoveError> {
        let file = Path::new(DOCS_DIR).join(&doc.path);
        let moved = move_item(&self.workspace, &file, item, to);
        self.rescan();
        moved
    }
}

async fn debounced_rescans(
    store: std::sync::Weak<BoardStore>,
    mut events: mpsc::UnboundedReceiver<()>,
) {
    while events.recv().await.is_some() {
        tokio::time::sleep(DEBOUNCE).await;
        while events.try_recv().is_ok() {}
        let Some(store) = store.upgrade() else {
            return;
        };
        if tokio::task::spawn_blocking(move || store.rescan())
            .await
            .is_err()
        {
            tracing::warn!("board: a rescan panicked");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_file_written_after_watching_starts_is_on_the_board_and_signals() {
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let changed = Changed::default();
        let mut signal = changed.subscribe();
        let store = BoardStore::new(dir.path().to_path_buf(), changed);
        assert!(!store.watch(), "no folder yet");
        store.create_folders().unwrap_or_else(|err| panic!("{err}"));
        assert!(store.watch());
        store.rescan();
        let _ = signal.borrow_and_update();
        std::fs::write(
            dir.path().join(".unipi/docs/plans/p.md"),
            "- unstarted: Task 1 — One\n- completed: Task 2 — Two\n",
        )
        .unwrap_or_default();
        let waited = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if signal.changed().await.is_err() {
                    return false;
                }
                if store.docs().iter().any(|doc| doc.items.len() == 2) {
                    return true;
                }
            }
        })
        .await;
        assert_eq!(waited, Ok(true));
        let parsed = store.parsed();
        assert!(!store.rescan(), "nothing changed");
        assert_eq!(
            store.parsed(),
            parsed,
            "unchanged files are not parsed again"
        );
    }
}

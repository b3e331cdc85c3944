//! The kanban board: its store (documents, watcher, moves), the full-screen view and the
//! read-only document viewer, and the port that joins the view to the store, the screen and Pi.

pub mod store;
pub mod view;
pub mod viewer;

use std::sync::{Arc, Mutex, OnceLock};

use crate::bridge::{AgentId, HostCall};
use crate::capability::{BridgeLink, Ui};
use crate::sys::lock;
use crate::workflow::docs::{Doc, Item, ItemStatus};
pub(crate) use store::BoardStore;
pub(crate) use view::{BoardPort, BoardView, KANBAN_KEYS};

/// What the footer says once the board put a follow-up command in Pi's editor.
pub(crate) const EDITOR_NOTICE: &str = "The command is in Pi's editor: Enter runs it";

/// The board's port in the workbench: moves and reads run on blocking threads, and their
/// outcome is a notice the view pulls when the store signals a change.
pub(crate) struct WorkbenchBoard {
    pub store: Arc<BoardStore>,
    pub ui: Ui,
    pub bridge: Arc<OnceLock<BridgeLink>>,
    notice: Arc<Mutex<Option<String>>>,
}

impl WorkbenchBoard {
    pub(crate) fn new(store: Arc<BoardStore>, ui: Ui, bridge: Arc<OnceLock<BridgeLink>>) -> Self {
        WorkbenchBoard {
            store,
            ui,
            bridge,
            notice: Arc::new(Mutex::new(None)),
        }
    }

    fn say(notice: &Mutex<Option<String>>, text: String) {
        *lock(notice) = Some(text);
    }
}

impl BoardPort for WorkbenchBoard {
    fn docs(&self) -> Arc<Vec<Doc>> {
        self.store.docs()
    }

    fn move_card(&self, doc: &Doc, item: &Item, to: ItemStatus) {
        let (store, notice) = (Arc::clone(&self.store), Arc::clone(&self.notice));
        let (doc, item) = (doc.clone(), item.clone());
        tokio::task::spawn_blocking(move || {
            let text = match store.move_card(&doc, &item, to) {
                Ok(()) => format!(
                    "Moved “{}” to {} ({}:{})",
                    item.text,
                    to.title(),
                    doc.path.display(),
                    item.marker_line
                ),
                Err(err) => format!("Not moved: {err}"),
            };
            Self::say(&notice, text);
            store.changed_now();
        });
    }

    fn open(&self, doc: &Doc, line: usize) {
        let path = self.store.docs_dir().join(&doc.path);
        let shown = doc.path.display().to_string();
        let (ui, notice, store) = (
            self.ui.clone(),
            Arc::clone(&self.notice),
            Arc::clone(&self.store),
        );
        tokio::task::spawn_blocking(move || match std::fs::read(&path) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                ui.open(viewer::doc_viewer(&shown, &text, line, ui.keymap()));
            }
            Err(err) => {
                Self::say(&notice, format!("Cannot open {}: {err}", path.display()));
                store.changed_now();
            }
        });
    }

    fn to_editor(&self, text: &str) -> bool {
        let Some(bridge) = self.bridge.get() else {
            return false;
        };
        if bridge
            .host
            .agent_info(&AgentId::main())
            .is_none_or(|info| !info.connected)
        {
            return false;
        }
        let (host, ui, text) = (bridge.host.clone(), self.ui.clone(), text.to_owned());
        tokio::spawn(async move {
            // Footer notices share one row with Pi's state: short, since the editor shows the
            // command itself and the log the whole error.
            let call = HostCall::SetEditorText { text: text.clone() };
            match host.call(&AgentId::main(), call).await {
                Ok(_) => ui.notice(EDITOR_NOTICE),
                Err(err) => {
                    tracing::warn!("board: cannot put {text} in Pi's editor: {err}");
                    ui.notice(format!("Pi's editor refused the command: {err}"))
                }
            };
        });
        true
    }

    fn rescan(&self) {
        let store = Arc::clone(&self.store);
        tokio::task::spawn_blocking(move || {
            store.rescan();
        });
    }

    fn take_notice(&self) -> Option<String> {
        lock(&self.notice).take()
    }
}

#[cfg(test)]
mod view_tests;

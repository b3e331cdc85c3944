//! A stand-in capability for the app's own tests (`app::tests`, which name no capability): a
//! footer segment and entries in the dock as the background tasks' widget draws them (the app's
//! snapshots show them), and a record of what the dock and the workbench keys asked of it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use unipi_widgets::footer::Segment;
use unipi_widgets::tasks::{TaskRow, TaskStatus};

use super::{Capability, Changed};
use crate::bridge::Refusal;
use crate::views::RefreshContext;
use crate::views::dock::{DockRequest, DockSection, DockSource};

/// The fake capability's dock source (and the record of the workbench keys it took).
#[derive(Default)]
pub(crate) struct FakeDock {
    rows: Mutex<Vec<TaskRow>>,
    /// What the dock asked of it, but the details it showed.
    pub(crate) requests: Mutex<Vec<DockRequest>>,
    /// Whether the capability acts on workbench keys, and the ones it got.
    pub(crate) takes_key_actions: AtomicBool,
    pub(crate) key_actions: Mutex<Vec<String>>,
}

impl FakeDock {
    /// Lists entry `id`: the shell command `name --all`, running or done.
    pub(crate) fn list(&self, id: &str, name: &str, running: bool) {
        let row = TaskRow {
            id: id.to_owned(),
            name: name.to_owned(),
            command: format!("{name} --all"),
            status: if running {
                TaskStatus::Running
            } else {
                TaskStatus::Done
            },
            is_shell: true,
            output_path: format!("/tmp/unipi/{id}.output"),
            ..TaskRow::default()
        };
        self.rows.lock().unwrap().push(row);
    }
}

impl DockSource for FakeDock {
    fn section(&self, _context: &RefreshContext<'_>) -> Option<DockSection> {
        Some(crate::tasks::dock::section(
            self.rows.lock().unwrap().clone(),
        ))
    }

    fn request(&self, request: &DockRequest) -> Result<(), Refusal> {
        if !matches!(request, DockRequest::Detail(_)) {
            self.requests.lock().unwrap().push(request.clone());
        }
        Ok(())
    }
}

/// The fake capability: its footer segment, its dock source, the workbench keys it takes.
pub(crate) struct FakeCapability {
    dock: Arc<FakeDock>,
    changed: Changed,
}

impl FakeCapability {
    pub(crate) fn new(dock: Arc<FakeDock>) -> Self {
        FakeCapability {
            dock,
            changed: Changed::default(),
        }
    }
}

impl Capability for FakeCapability {
    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.changed.subscribe())
    }

    fn footer_segments(&self) -> Vec<Segment> {
        unipi_widgets::pending::tasks_segment(1, 1)
            .into_iter()
            .collect()
    }

    fn dock(&self) -> Option<Arc<dyn DockSource>> {
        Some(self.dock.clone())
    }

    fn action(&self, name: &str) -> bool {
        let takes = self.dock.takes_key_actions.load(Ordering::SeqCst);
        if takes {
            self.dock.key_actions.lock().unwrap().push(name.to_owned());
        }
        takes
    }
}

//! Hello's rows in the dock: the waves so far, drawn by its widget (`unipi_widgets::hello`).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::bridge::Refusal;
use crate::views::RefreshContext;
use crate::views::dock::{
    DockAction, DockRequest, DockSection, DockSource, HintTable, Hints, SCROLL, SELECT, Verbs,
};

/// Listed after the agents and the tasks.
const RANK: u8 = 2;

const LIST_HINTS: HintTable = &[
    SELECT,
    (&[DockAction::Open], "details"),
    (&[DockAction::Back], "close"),
];

const DETAIL_HINTS: HintTable = &[SCROLL, (&[DockAction::Back], "back")];

/// Hello's [`DockSource`]: its waves, read from memory.
pub(crate) struct HelloDock {
    pub waves: Arc<AtomicU64>,
}

impl DockSource for HelloDock {
    fn section(&self, _context: &RefreshContext<'_>) -> Option<DockSection> {
        let waves = self.waves.load(Ordering::SeqCst);
        Some(DockSection {
            rank: RANK,
            view: unipi_widgets::hello::section(waves),
            // A wave has nothing to stop, rerun, copy or steer: no verbs.
            verbs: HashMap::new(),
            hints: Hints {
                list: LIST_HINTS,
                detail: DETAIL_HINTS,
            },
            stop_all: None,
            idle: Verbs::default(),
        })
    }

    fn request(&self, _request: &DockRequest) -> Result<(), Refusal> {
        Ok(())
    }
}

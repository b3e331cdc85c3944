//! Milestones (the seed's W6): `.unipi/docs/MILESTONES.md`, phases (`## Phase 1: Foundation`)
//! of checkbox items, read with the same parser the board uses, so the board, the agent and the
//! commands see the same items. What this folder adds to the documents:
//!
//! - the progress: overall, per phase, and the current focus (the first phase not finished), as the
//!   board shows it and as the agent gets it at the start of each run ([`hook`]: the text appended
//!   to Pi's system prompt, in Unipi's words);
//! - ticking items in the file: only the checkbox of each item named is rewritten (and the front
//!   matter's `updated:` set to today), every other byte is kept, and the file is replaced
//!   crash-safe and only if it did not change since it was read ([`tick`]);
//! - the sync at session end ([`sync`]): the tasks and checkboxes the session finished in the
//!   plans, specs and quick-work documents tick the milestone items of the same name;
//! - the phase completions of `/unipi:milestone-update` (`all` and each phase with `done/total`).

pub(crate) mod hook;
pub(crate) mod sync;

use std::path::{Path, PathBuf};

use super::docs::{self, DOCS_DIR, Doc, DocType, Item, ItemStatus, MILESTONES_FILE};
use crate::bridge::Completion;

/// The milestones file relative to the workspace.
pub(crate) fn milestones_path(workspace: &Path) -> PathBuf {
    workspace.join(DOCS_DIR).join(MILESTONES_FILE)
}

/// One phase's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PhaseProgress {
    pub name: String,
    pub done: usize,
    pub total: usize,
}

/// The progress of a milestones document.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Progress {
    pub done: usize,
    pub total: usize,
    /// The phases with at least one item, in the file's order.
    pub phases: Vec<PhaseProgress>,
    /// The first phase not finished (else the first phase); `None` without phases.
    pub current: Option<String>,
}

impl Progress {
    /// The progress of `doc` (a parsed milestones document): its items grouped by phase, in the
    /// order the phases first appear. Items before any phase are counted in no phase (the
    /// parser warns about them).
    pub(crate) fn of(doc: &Doc) -> Progress {
        let mut phases: Vec<PhaseProgress> = Vec::new();
        for item in &doc.items {
            let Some(name) = &item.phase else { continue };
            let at = match phases.iter().position(|phase| &phase.name == name) {
                Some(at) => at,
                None => {
                    phases.push(PhaseProgress {
                        name: name.clone(),
                        done: 0,
                        total: 0,
                    });
                    phases.len() - 1
                }
            };
            phases[at].total += 1;
            phases[at].done += usize::from(item.status.is_finished());
        }
        let done = phases.iter().map(|phase| phase.done).sum();
        let total = phases.iter().map(|phase| phase.total).sum();
        let current = phases
            .iter()
            .find(|phase| phase.done < phase.total)
            .or(phases.first())
            .map(|phase| phase.name.clone());
        Progress {
            done,
            total,
            phases,
            current,
        }
    }

    /// Rounded percentage done (0 without items).
    pub(crate) fn percent(&self) -> usize {
        (self.done * 100 + self.total / 2)
            .checked_div(self.total)
            .unwrap_or(0)
    }

    /// What the agent is told at the start of a run (Unipi's section, appended to the system
    /// prompt); `None` when there is nothing to tell.
    pub(crate) fn prompt_section(&self) -> Option<String> {
        if self.total == 0 {
            return None;
        }
        let mut text = format!(
            "## Project Milestones\nOverall progress: {}/{} items ({}%)",
            self.done,
            self.total,
            self.percent()
        );
        for phase in &self.phases {
            text.push_str(&format!(
                "\n  {}: {}/{} done",
                phase.name, phase.done, phase.total
            ));
        }
        if let Some(current) = &self.current {
            text.push_str(&format!("\nCurrent focus: {current}"));
        }
        Some(text)
    }
}

/// The milestones document of `workspace` as it is on disk; `None` when there is none (or it
/// cannot be read: the board shows why).
pub(crate) fn read(workspace: &Path) -> Option<Doc> {
    let bytes = std::fs::read(milestones_path(workspace)).ok()?;
    Some(docs::parse(
        DocType::Milestone,
        Path::new(MILESTONES_FILE),
        &bytes,
    ))
}

/// Completions of `/unipi:milestone-update`'s argument: `all`, then each phase (with how far it
/// is), those containing what is typed. None once the argument names one exactly, so a command
/// typed in full goes out on the first Enter.
pub(crate) fn complete_phases(typed: &str, workspace: &Path) -> Vec<Completion> {
    let progress = read(workspace)
        .map(|doc| Progress::of(&doc))
        .unwrap_or_default();
    let typed_lower = typed.trim().to_lowercase();
    let mut items = vec![Completion {
        value: "all".to_owned(),
        label: "all".to_owned(),
        description: Some(format!(
            "Every phase ({}/{} done)",
            progress.done, progress.total
        )),
    }];
    items.extend(progress.phases.iter().map(|phase| Completion {
        value: phase.name.clone(),
        label: phase.name.clone(),
        description: Some(format!("{}/{} done", phase.done, phase.total)),
    }));
    if items
        .iter()
        .any(|item| item.value.to_lowercase() == typed_lower)
    {
        return Vec::new();
    }
    items.retain(|item| item.value.to_lowercase().contains(&typed_lower));
    items
}

/// Today as `YYYY-MM-DD` (UTC), for the front matter's `updated:`.
pub(crate) fn today() -> String {
    let days = i64::try_from(crate::sys::unix_seconds() / 86_400).unwrap_or(0);
    let (year, month, day) = crate::sys::time::civil_date(days);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Why milestone items were not ticked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TickError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} kept changing while its items were ticked; not overwritten")]
    Busy { path: PathBuf },
}

/// `text` (a milestones document) with `items` ticked — each item's checkbox set, its line
/// otherwise kept — and the front matter's `updated:` set to `today` when anything changed.
/// Items already ticked, or whose line no longer reads as it did, are left alone. Returns the
/// new text and how many items were ticked.
pub(crate) fn tick_text(text: &str, items: &[Item], today: &str) -> (String, usize) {
    let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    let mut ticked = 0;
    for item in items {
        if item.status.is_finished() {
            continue;
        }
        let Some(line) = lines.get_mut(item.marker_line - 1) else {
            continue;
        };
        if line.trim_end_matches('\r') != item.marker_source {
            continue;
        }
        if let Ok(new) = docs::edit::rewrite_line(item, ItemStatus::Done) {
            let ending = if line.ends_with('\r') { "\r" } else { "" };
            *line = format!("{new}{ending}");
            ticked += 1;
        }
    }
    if ticked > 0 {
        set_updated(&mut lines, today);
    }
    (lines.join("\n"), ticked)
}

/// Sets `updated: <today>` in the front matter, if the file has one with that key.
fn set_updated(lines: &mut [String], today: &str) {
    if lines.first().map(|line| line.trim_end()) != Some("---") {
        return;
    }
    for line in lines.iter_mut().skip(1) {
        if line.trim_end() == "---" {
            return;
        }
        if line.starts_with("updated:") {
            *line = format!("updated: {today}");
            return;
        }
    }
}

/// Ticks the items of the milestones file of `workspace` that `choose` picks from its current
/// items; the file is replaced crash-safe, and only if it is still what was read (else read
/// again, a few times). Returns the texts of the items ticked.
pub(crate) fn tick(
    workspace: &Path,
    choose: impl Fn(&Doc) -> Vec<Item>,
) -> Result<Vec<String>, TickError> {
    let shown = milestones_path(workspace);
    // Written only as a regular file inside the project, links followed (as card moves are).
    let relative = Path::new(DOCS_DIR).join(MILESTONES_FILE);
    let path = match crate::sys::confine::existing_file(workspace, &relative) {
        Ok(real) => real,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(TickError::Read {
                path: shown,
                source,
            });
        }
    };
    for _ in 0..3 {
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(TickError::Read {
                    path: shown,
                    source,
                });
            }
        };
        let doc = docs::parse(DocType::Milestone, Path::new(MILESTONES_FILE), &bytes);
        let chosen = choose(&doc);
        if chosen.is_empty() {
            return Ok(Vec::new());
        }
        let (text, ticked) = tick_text(&String::from_utf8_lossy(&bytes), &chosen, &today());
        if ticked == 0 {
            return Ok(Vec::new());
        }
        let unchanged = || std::fs::read(&path).map(|now| now == bytes);
        match crate::sys::replace_if_unchanged(&path, text.as_bytes(), unchanged) {
            Ok(true) => return Ok(chosen.into_iter().map(|item| item.text).collect()),
            Ok(false) => continue,
            Err(source) => {
                return Err(TickError::Write {
                    path: shown,
                    source,
                });
            }
        }
    }
    Err(TickError::Busy { path: shown })
}

/// The session-end sync in a running workbench: the baseline of the session in force, behind
/// an async lock held through the sync, so the workbench's shutdown waits for a sync that Pi's
/// `session_shutdown` started, and the two never both run.
#[derive(Default)]
pub(crate) struct SessionSync {
    baseline: tokio::sync::Mutex<Option<sync::Baseline>>,
}

impl SessionSync {
    /// A session started: what its documents say now is what its end is compared with.
    pub(crate) async fn begin(&self, workspace: PathBuf) {
        let mut baseline = self.baseline.lock().await;
        match tokio::task::spawn_blocking(move || sync::Baseline::take(&workspace)).await {
            Ok(taken) => *baseline = Some(taken),
            Err(err) => tracing::warn!("milestone sync: reading the documents failed: {err}"),
        }
    }

    /// The session ended: ticks the milestone items its finished work names (once per
    /// session: the baseline is used up). Returns the items ticked.
    pub(crate) async fn end(&self, workspace: PathBuf) -> Vec<String> {
        let mut baseline = self.baseline.lock().await;
        let Some(taken) = baseline.take() else {
            return Vec::new();
        };
        let synced = tokio::task::spawn_blocking(move || {
            let finished = taken.finished_since(&workspace);
            if finished.is_empty() {
                return Ok(Vec::new());
            }
            tick(&workspace, |doc| sync::matches(doc, &finished))
        })
        .await;
        match synced {
            Ok(Ok(ticked)) => {
                if !ticked.is_empty() {
                    tracing::info!("milestone sync: ticked {ticked:?}");
                }
                ticked
            }
            Ok(Err(err)) => {
                tracing::warn!("milestone sync: {err}");
                Vec::new()
            }
            Err(err) => {
                tracing::warn!("milestone sync failed: {err}");
                Vec::new()
            }
        }
    }
}

#[cfg(test)]
mod tests;

//! The checkbox sync at session end: what the session finished in the plans, specs and
//! quick-work documents ticks the milestone items of the same name.
//!
//! At session start the documents' texts are kept ([`Baseline::take`]); at session end each
//! document is read again and every item finished now that was not finished then (a checkbox
//! ticked, a plan task `completed` or `reviewed`; every finished item of a document written
//! during the session) is a candidate. A candidate ticks the unticked milestone item with the
//! same text (case and surrounding space aside; a plan task's `Task 3 — ` is not part of its
//! name): in the phase named by the candidate's `## ` section when there is one — Unipi's only
//! rule, which synced nothing for plans written by its own skill — else the one such item
//! across the phases, never a guess between several.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use super::super::docs::{self, DOCS_DIR, Doc, DocType, Item};

/// The folders whose documents feed the sync (Unipi's: specs, plans, quick-work).
const FOLDERS: [&str; 3] = ["specs", "plans", "quick-work"];

/// `Task 3 — ` (any dash, or a colon) before a plan task's name.
static TASK_PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    #[allow(clippy::expect_used)] // a literal pattern, covered by the tests
    Regex::new(r"(?i)^task\s+\d+\s*[—–:-]\s*").expect("a valid pattern")
});

/// The documents' texts at session start, by path relative to the docs directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Baseline {
    texts: HashMap<PathBuf, Vec<u8>>,
}

/// One item the session finished: its text and the `## ` section it is under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Finished {
    pub text: String,
    pub section: Option<String>,
}

impl Baseline {
    /// The documents of `workspace` as they are now.
    pub(crate) fn take(workspace: &Path) -> Baseline {
        Baseline {
            texts: read_docs(workspace),
        }
    }

    /// The items finished in `workspace`'s documents since this baseline was taken.
    pub(crate) fn finished_since(&self, workspace: &Path) -> Vec<Finished> {
        let mut finished = Vec::new();
        let mut now: Vec<(PathBuf, Vec<u8>)> = read_docs(workspace).into_iter().collect();
        now.sort();
        for (path, bytes) in now {
            if self.texts.get(&path) == Some(&bytes) {
                continue;
            }
            let Some(kind) = DocType::of(&path) else {
                continue;
            };
            let before = self
                .texts
                .get(&path)
                .map(|bytes| docs::parse(kind, &path, bytes));
            let after = docs::parse(kind, &path, &bytes);
            finished.extend(newly_finished(before.as_ref(), &after, &bytes));
        }
        finished
    }
}

/// The items of `after` finished now and not in `before` (a document with no `before` was
/// written during the session: all its finished items count).
fn newly_finished(before: Option<&Doc>, after: &Doc, bytes: &[u8]) -> Vec<Finished> {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    after
        .items
        .iter()
        .filter(|item| item.status.is_finished())
        .filter(|item| {
            before.is_none_or(|before| {
                !before
                    .items
                    .iter()
                    .any(|old| old.status.is_finished() && old.text == item.text)
            })
        })
        .map(|item| Finished {
            text: item.text.clone(),
            section: section_of(&lines, item.line),
        })
        .collect()
}

/// The `## ` heading above the 1-based `line`, if any.
fn section_of(lines: &[&str], line: usize) -> Option<String> {
    lines
        .iter()
        .take(line.saturating_sub(1))
        .rev()
        .find_map(|text| text.strip_prefix("## "))
        .map(|name| name.trim().to_owned())
}

/// An item's name for matching: a plan task's `Task N — ` dropped, trimmed, lower case.
pub(crate) fn name_of(text: &str) -> String {
    TASK_PREFIX.replace(text.trim(), "").trim().to_lowercase()
}

/// The milestone items of `milestones` that `finished` ticks (each once).
pub(crate) fn matches(milestones: &Doc, finished: &[Finished]) -> Vec<Item> {
    let open: Vec<&Item> = milestones
        .items
        .iter()
        .filter(|item| !item.status.is_finished() && item.phase.is_some())
        .collect();
    let mut chosen: Vec<Item> = Vec::new();
    for done in finished {
        let name = name_of(&done.text);
        let same: Vec<&&Item> = open
            .iter()
            .filter(|item| name_of(&item.text) == name)
            .collect();
        let in_section = done.section.as_ref().and_then(|section| {
            same.iter().find(|item| {
                item.phase
                    .as_deref()
                    .is_some_and(|phase| phase.trim().eq_ignore_ascii_case(section.trim()))
            })
        });
        let pick = match (in_section, same.as_slice()) {
            (Some(item), _) => Some(item),
            (None, [only]) => Some(only),
            _ => None,
        };
        if let Some(item) = pick
            && !chosen.iter().any(|taken| taken.line == item.line)
        {
            chosen.push((**item).clone());
        }
    }
    chosen
}

/// The documents of the sync's folders (their `.md` files, not below), by path relative to
/// the docs directory. Unreadable files are left out.
fn read_docs(workspace: &Path) -> HashMap<PathBuf, Vec<u8>> {
    let docs_dir = workspace.join(DOCS_DIR);
    let mut texts = HashMap::new();
    for folder in FOLDERS {
        let files = crate::sys::files_with_extension(&docs_dir.join(folder), "md");
        for file in files.unwrap_or_default() {
            let Some(name) = file.file_name() else {
                continue;
            };
            let relative = Path::new(folder).join(name);
            match std::fs::read(&file) {
                Ok(bytes) => {
                    texts.insert(relative, bytes);
                }
                Err(err) => tracing::debug!("milestone sync: {}: {err}", file.display()),
            }
        }
    }
    texts
}

//! The workflow's documents under `.unipi/docs/` — specs, plans, milestones, quick work, debug
//! reports, fixes, chores, reviews — read into one model the board shows as cards: a document
//! with its items, each item's status, the 1-based line it is on and the marker on that line
//! (a checkbox or a task-status keyword) that a card move rewrites.
//!
//! Parsing never fails: a file that cannot be read, a front matter that never closes, a task
//! without a status or an unknown status keyword becomes a [`Warning`] on the document (with the
//! line), and the rest of the file is still read. Plans are read in both styles — the one our
//! plan skill writes (`- unstarted: Task 1 — Name`) and the older headed one (`### Task 1 —
//! Name` followed by `- **Status:** unstarted`); the original board read only the second, so
//! plans written by its own skill showed no tasks.

mod frontmatter;
mod parse;

pub mod edit;
pub mod scan;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub(crate) use parse::parse;

/// Where the workflow's documents live, relative to the workspace.
pub(crate) const DOCS_DIR: &str = ".unipi/docs";

/// The milestones file, relative to the docs directory.
pub(crate) const MILESTONES_FILE: &str = "MILESTONES.md";

/// What kind of document a file is, from where it lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum DocType {
    Spec,
    Plan,
    Milestone,
    QuickWork,
    Debug,
    Fix,
    Chore,
    Review,
}

impl DocType {
    pub(crate) const ALL: [DocType; 8] = [
        DocType::Spec,
        DocType::Plan,
        DocType::Milestone,
        DocType::QuickWork,
        DocType::Debug,
        DocType::Fix,
        DocType::Chore,
        DocType::Review,
    ];

    /// The type of the document at `relative` (a path under the docs directory), or `None` for
    /// files the board does not read (`generated/`, `context-gathered/`, anything not `.md`).
    pub(crate) fn of(relative: &Path) -> Option<DocType> {
        if relative.extension().and_then(|e| e.to_str()) != Some("md") {
            return None;
        }
        let name = relative.file_name()?.to_str()?;
        if name.eq_ignore_ascii_case(MILESTONES_FILE) {
            return Some(DocType::Milestone);
        }
        let folder = relative.components().next()?.as_os_str().to_str()?;
        if relative.components().count() < 2 {
            return None;
        }
        match folder {
            "specs" => Some(DocType::Spec),
            "plans" => Some(DocType::Plan),
            "quick-work" => Some(DocType::QuickWork),
            "debug" => Some(DocType::Debug),
            "fix" => Some(DocType::Fix),
            "chore" => Some(DocType::Chore),
            "reviews" => Some(DocType::Review),
            _ => None,
        }
    }

    /// The name used in filters and labels.
    pub(crate) fn name(self) -> &'static str {
        match self {
            DocType::Spec => "spec",
            DocType::Plan => "plan",
            DocType::Milestone => "milestone",
            DocType::QuickWork => "quick-work",
            DocType::Debug => "debug",
            DocType::Fix => "fix",
            DocType::Chore => "chore",
            DocType::Review => "review",
        }
    }

    /// The follow-up command for a document of this type (`None`: there is none).
    pub(crate) fn follow_up(self, file_name: &str) -> Option<String> {
        match self {
            DocType::Spec => Some(format!("/unipi:plan specs:{file_name}")),
            DocType::Plan => Some(format!("/unipi:work plan:{file_name}")),
            DocType::QuickWork => Some("/unipi:quick-work".to_owned()),
            DocType::Debug => Some(format!("/unipi:fix debug:{file_name}")),
            DocType::Fix => Some("/unipi:review-work".to_owned()),
            DocType::Chore => Some(format!("/unipi:chore-execute chore:{file_name}")),
            DocType::Review => Some("/unipi:review-work".to_owned()),
            DocType::Milestone => Some("/unipi:plan".to_owned()),
        }
    }
}

/// The board's columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum ItemStatus {
    Todo,
    InProgress,
    Done,
    Reviewed,
}

impl ItemStatus {
    pub(crate) const ALL: [ItemStatus; 4] = [
        ItemStatus::Todo,
        ItemStatus::InProgress,
        ItemStatus::Done,
        ItemStatus::Reviewed,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            ItemStatus::Todo => "todo",
            ItemStatus::InProgress => "in-progress",
            ItemStatus::Done => "done",
            ItemStatus::Reviewed => "reviewed",
        }
    }

    /// The column's title on the board (`In Progress`).
    pub(crate) fn title(self) -> &'static str {
        match self {
            ItemStatus::Todo => "To Do",
            ItemStatus::InProgress => "In Progress",
            ItemStatus::Done => "Done",
            ItemStatus::Reviewed => "Reviewed",
        }
    }

    /// Done or reviewed: counts as finished in progress figures.
    pub(crate) fn is_finished(self) -> bool {
        matches!(self, ItemStatus::Done | ItemStatus::Reviewed)
    }
}

/// A plan task's status keyword, as written in the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskStatus {
    Unstarted,
    InProgress,
    Completed,
    Failed,
    AwaitingUser,
    Blocked,
    Skipped,
    Reviewed,
}

impl TaskStatus {
    pub const ALL: [TaskStatus; 8] = [
        TaskStatus::Unstarted,
        TaskStatus::InProgress,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::AwaitingUser,
        TaskStatus::Blocked,
        TaskStatus::Skipped,
        TaskStatus::Reviewed,
    ];

    pub(crate) fn keyword(self) -> &'static str {
        match self {
            TaskStatus::Unstarted => "unstarted",
            TaskStatus::InProgress => "in-progress",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::AwaitingUser => "awaiting_user",
            TaskStatus::Blocked => "blocked",
            TaskStatus::Skipped => "skipped",
            TaskStatus::Reviewed => "reviewed",
        }
    }

    pub(crate) fn from_keyword(word: &str) -> Option<TaskStatus> {
        TaskStatus::ALL
            .into_iter()
            .find(|status| status.keyword() == word)
    }

    /// The column a task with this status is shown in.
    pub(crate) fn column(self) -> ItemStatus {
        match self {
            TaskStatus::Unstarted | TaskStatus::Failed => ItemStatus::Todo,
            TaskStatus::InProgress | TaskStatus::AwaitingUser | TaskStatus::Blocked => {
                ItemStatus::InProgress
            }
            TaskStatus::Completed | TaskStatus::Skipped => ItemStatus::Done,
            TaskStatus::Reviewed => ItemStatus::Reviewed,
        }
    }

    /// The keyword a card moved into `column` gets.
    pub(crate) fn for_column(column: ItemStatus) -> TaskStatus {
        match column {
            ItemStatus::Todo => TaskStatus::Unstarted,
            ItemStatus::InProgress => TaskStatus::InProgress,
            ItemStatus::Done => TaskStatus::Completed,
            ItemStatus::Reviewed => TaskStatus::Reviewed,
        }
    }
}

/// What on an item's line says its status: what a card move rewrites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// `- [ ]` / `- [x]`.
    Checkbox { checked: bool },
    /// A plan task's status keyword.
    Keyword(TaskStatus),
    /// A section header (debug and fix reports): its status is fixed by the document type.
    Header,
}

/// One card: an item of a document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub text: String,
    pub(crate) status: ItemStatus,
    /// The 1-based line the item is on (what Enter opens).
    pub line: usize,
    /// The 1-based line of its marker (a headed plan task's `**Status:**` line; else `line`).
    pub marker_line: usize,
    pub marker: Marker,
    /// The milestone phase it belongs to.
    pub phase: Option<String>,
    /// The marker line as read (a move refuses when the file no longer has it there).
    pub marker_source: String,
}

/// A problem in a document, with the 1-based line when there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub line: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// One parsed document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Doc {
    pub(crate) kind: DocType,
    pub title: String,
    /// Path relative to the docs directory (`plans/2026-01-02-auth-plan.md`).
    pub path: PathBuf,
    pub items: Vec<Item>,
    /// Front matter keys and values (quotes stripped).
    pub metadata: BTreeMap<String, String>,
    pub warnings: Vec<Warning>,
}

impl Doc {
    /// The file's name (`2026-01-02-auth-plan.md`).
    pub fn file_name(&self) -> String {
        self.path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Finished and total items.
    pub fn progress(&self) -> (usize, usize) {
        let done = self
            .items
            .iter()
            .filter(|item| item.status.is_finished())
            .count();
        (done, self.items.len())
    }

    /// The follow-up command for this document.
    pub fn follow_up(&self) -> Option<String> {
        self.kind.follow_up(&self.file_name())
    }
}

#[cfg(test)]
mod tests;

//! Reading one document's text into a [`Doc`]: the items of its type (checkboxes, plan tasks in
//! either style, milestone phases, report sections) and the warnings for what could not be read.
//! Lines inside fenced code blocks are examples, not items, and are skipped.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::frontmatter;
use super::{Doc, DocType, Item, ItemStatus, Marker, TaskStatus, Warning};

macro_rules! pattern {
    ($name:ident, $re:literal) => {
        static $name: LazyLock<Regex> = LazyLock::new(|| {
            #[allow(clippy::expect_used)] // a literal pattern, covered by the tests
            Regex::new($re).expect("a valid pattern")
        });
    };
}

pattern!(CHECKBOX, r"^\s*[-*+]\s*\[([ xX])\]\s*(.*?)\s*$");
// `- unstarted: Task 1 — Name` (the style our plan skill writes), at most one space indented
// so a task's own sub-bullets (`  - Dependencies: …`) are never read as tasks.
pattern!(KEYWORD_TASK, r"^ ?[-*+]\s+([a-z][a-z_-]*):\s*(.*?)\s*$");
pattern!(TASK_TEXT, r"^(?i)task\s+\d+");
// `### Task 1 — Name` then, later, `- **Status:** unstarted` (the older style).
pattern!(HEADED_TASK, r"^#{2,4}\s+(Task\s+\d+\s*[—–-]\s*.+?)\s*$");
pattern!(STATUS_LINE, r"^\s*[-*+]\s*\*\*Status:?\*\*:?\s*(\S*)\s*$");
pattern!(SECTION, r"^##\s+(.+?)\s*$");
pattern!(TITLE, r"^#\s+(.+?)\s*$");
pattern!(QUOTE, r"^>\s?(.*)$");

/// Parses `bytes`, the content of the `kind` document at `path` (relative to the docs
/// directory). Never fails: problems are warnings on the document.
pub(crate) fn parse(kind: DocType, path: &Path, bytes: &[u8]) -> Doc {
    let mut warnings = Vec::new();
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(err) => {
            warnings.push(Warning {
                line: None,
                message: format!(
                    "not valid UTF-8 (from byte {}); read as far as it goes",
                    err.valid_up_to()
                ),
            });
            String::from_utf8_lossy(bytes)
        }
    };
    let lines: Vec<&str> = text.lines().collect();
    let front = frontmatter::read(&lines);
    warnings.extend(front.warning);
    let mut doc = Doc {
        kind,
        title: String::new(),
        path: path.to_path_buf(),
        items: Vec::new(),
        metadata: front.metadata,
        warnings,
    };
    let body = Body::new(&lines, front.body_start);
    match kind {
        DocType::Plan => plan(&body, &mut doc),
        DocType::Milestone => milestones(&body, &mut doc),
        DocType::Debug => sections_and_checkboxes(&body, &mut doc, ItemStatus::Todo),
        DocType::Fix => {
            sections_and_checkboxes(&body, &mut doc, ItemStatus::Done);
            let related = ["related_debug", "debug", "debug-report"]
                .iter()
                .find_map(|key| doc.metadata.get(*key).filter(|v| !v.is_empty()).cloned());
            if let Some(related) = related {
                doc.metadata.insert("related_debug".to_owned(), related);
            }
        }
        DocType::Spec | DocType::QuickWork | DocType::Chore | DocType::Review => {
            checkboxes(&body, &mut doc)
        }
    }
    doc.title = title(&doc, &body);
    doc
}

/// The body's lines with their 1-based numbers, fenced code left out.
struct Body<'a> {
    lines: Vec<(usize, &'a str)>,
}

impl<'a> Body<'a> {
    fn new(lines: &[&'a str], start: usize) -> Self {
        let mut fenced = false;
        let mut kept = Vec::new();
        for (index, line) in lines.iter().enumerate().skip(start) {
            let trimmed = line.trim_start();
            if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                fenced = !fenced;
                continue;
            }
            if !fenced {
                kept.push((index + 1, *line));
            }
        }
        Body { lines: kept }
    }
}

fn title(doc: &Doc, body: &Body<'_>) -> String {
    let from_meta = |key: &str| doc.metadata.get(key).filter(|v| !v.is_empty()).cloned();
    from_meta("title")
        .or_else(|| {
            (doc.kind == DocType::Chore)
                .then(|| from_meta("name"))
                .flatten()
        })
        .or_else(|| {
            body.lines
                .iter()
                .find_map(|(_, line)| TITLE.captures(line).map(|c| c[1].to_owned()))
        })
        .unwrap_or_else(|| {
            if doc.kind == DocType::Milestone {
                "Project Milestones".to_owned()
            } else {
                doc.path
                    .file_stem()
                    .map(|stem| stem.to_string_lossy().into_owned())
                    .unwrap_or_default()
            }
        })
}

/// A checkbox item on `line`, or `None` (with a warning when its text is empty).
fn checkbox(number: usize, line: &str, warnings: &mut Vec<Warning>) -> Option<Item> {
    let found = CHECKBOX.captures(line)?;
    let checked = &found[1] != " ";
    let text = found[2].to_owned();
    if text.is_empty() {
        warnings.push(Warning {
            line: Some(number),
            message: "a checkbox without text".to_owned(),
        });
        return None;
    }
    Some(Item {
        text,
        status: if checked {
            ItemStatus::Done
        } else {
            ItemStatus::Todo
        },
        line: number,
        marker_line: number,
        marker: Marker::Checkbox { checked },
        phase: None,
        marker_source: line.to_owned(),
    })
}

fn checkboxes(body: &Body<'_>, doc: &mut Doc) {
    for &(number, line) in &body.lines {
        if let Some(item) = checkbox(number, line, &mut doc.warnings) {
            doc.items.push(item);
        }
    }
}

/// Debug and fix reports: each `## ` section is an item in `section_status`, and checkboxes are
/// items too.
fn sections_and_checkboxes(body: &Body<'_>, doc: &mut Doc, section_status: ItemStatus) {
    for &(number, line) in &body.lines {
        if let Some(found) = SECTION.captures(line) {
            doc.items.push(Item {
                text: found[1].to_owned(),
                status: section_status,
                line: number,
                marker_line: number,
                marker: Marker::Header,
                phase: None,
                marker_source: line.to_owned(),
            });
        } else if let Some(item) = checkbox(number, line, &mut doc.warnings) {
            doc.items.push(item);
        }
    }
}

/// Milestones: `## Phase` sections with `> description` lines and checkbox items.
fn milestones(body: &Body<'_>, doc: &mut Doc) {
    let mut phase: Option<String> = None;
    for &(number, line) in &body.lines {
        if let Some(found) = SECTION.captures(line) {
            phase = Some(found[1].to_owned());
        } else if let Some(found) = QUOTE.captures(line) {
            if let Some(name) = &phase {
                let key = format!("phase:{name}");
                let description = doc.metadata.entry(key).or_default();
                if !description.is_empty() {
                    description.push(' ');
                }
                description.push_str(found[1].trim());
            }
        } else if let Some(mut item) = checkbox(number, line, &mut doc.warnings) {
            if phase.is_none() {
                doc.warnings.push(Warning {
                    line: Some(number),
                    message: "a milestone item before any `## Phase` heading".to_owned(),
                });
            }
            item.phase = phase.clone();
            doc.items.push(item);
        }
    }
}

/// A headed task still waiting for its `**Status:**` line.
struct Pending {
    text: String,
    line: usize,
    source: String,
}

fn plan(body: &Body<'_>, doc: &mut Doc) {
    let mut pending: Option<Pending> = None;
    for &(number, line) in &body.lines {
        if let Some(found) = HEADED_TASK.captures(line) {
            if let Some(previous) = pending.take() {
                unfinished(previous, doc);
            }
            pending = Some(Pending {
                text: found[1].to_owned(),
                line: number,
                source: line.to_owned(),
            });
        } else if let Some(found) = STATUS_LINE.captures(line) {
            status_line(number, line, &found[1], &mut pending, doc);
        } else if let Some(found) = KEYWORD_TASK.captures(line) {
            keyword_task(number, line, &found[1], &found[2], doc);
        } else if let Some(remark) = line.trim().strip_prefix("REVIEWER-REMARK:") {
            doc.metadata
                .insert("reviewer-remark".to_owned(), remark.trim().to_owned());
        }
    }
    if let Some(previous) = pending.take() {
        unfinished(previous, doc);
    }
    if doc.items.is_empty() {
        doc.warnings.push(Warning {
            line: None,
            message:
                "no tasks found (expected `- unstarted: Task 1 — …` lines, or `### Task 1 — …` \
                      headings each with a `- **Status:** …` line)"
                    .to_owned(),
        });
    }
}

/// A headed task that never got its status: a to-do, with a warning.
fn unfinished(pending: Pending, doc: &mut Doc) {
    doc.warnings.push(Warning {
        line: Some(pending.line),
        message: format!("`{}` has no `- **Status:** …` line", pending.text),
    });
    doc.items.push(Item {
        text: pending.text,
        status: ItemStatus::Todo,
        line: pending.line,
        marker_line: pending.line,
        marker: Marker::Header,
        phase: None,
        marker_source: pending.source,
    });
}

/// A `- **Status:** word` line: it settles the pending headed task (an unknown word leaves it
/// pending, with a warning).
fn status_line(
    number: usize,
    line: &str,
    word: &str,
    pending: &mut Option<Pending>,
    doc: &mut Doc,
) {
    let Some(task) = pending.take() else {
        doc.warnings.push(Warning {
            line: Some(number),
            message: "a `**Status:**` line outside any `### Task N — …` heading".to_owned(),
        });
        return;
    };
    match TaskStatus::from_keyword(word) {
        Some(status) => doc.items.push(Item {
            text: task.text,
            status: status.column(),
            line: task.line,
            marker_line: number,
            marker: Marker::Keyword(status),
            phase: None,
            marker_source: line.to_owned(),
        }),
        None => {
            doc.warnings.push(unknown_status(number, word));
            *pending = Some(task);
        }
    }
}

/// A `- word: Task …` line: a task with its status on the same line.
fn keyword_task(number: usize, line: &str, word: &str, text: &str, doc: &mut Doc) {
    match TaskStatus::from_keyword(word) {
        Some(status) if !text.is_empty() => doc.items.push(Item {
            text: text.to_owned(),
            status: status.column(),
            line: number,
            marker_line: number,
            marker: Marker::Keyword(status),
            phase: None,
            marker_source: line.to_owned(),
        }),
        Some(_) => doc.warnings.push(Warning {
            line: Some(number),
            message: "a task status without a task".to_owned(),
        }),
        // `- Description: …` is a task's detail; only a line that names a task is one
        // with a misspelt status.
        None if TASK_TEXT.is_match(text) => doc.warnings.push(unknown_status(number, word)),
        None => {}
    }
}

fn unknown_status(line: usize, word: &str) -> Warning {
    let known: Vec<&str> = TaskStatus::ALL.iter().map(|s| s.keyword()).collect();
    Warning {
        line: Some(line),
        message: format!(
            "unknown task status `{word}` (expected one of {})",
            known.join(", ")
        ),
    }
}

//! Stages 5 and 6: the summary text and the merge with the previous summary. A summary is
//! `[Title]` sections of `- ` items, an optional `[Latest User Request]` holding the user's last
//! request verbatim, a `---` rule and the brief. The same text is parsed back when the next
//! compaction merges it, so the format is the only state between compactions; the recall note
//! is stripped before parsing so it appears exactly once however often a session is compacted.

use super::brief::cap_brief;
use super::sections::{FileActivity, MAX_COMMITS, MAX_FILES_PER_CATEGORY, Sections};

pub(crate) const SESSION_GOAL: &str = "Session Goal";
pub(crate) const FILES_AND_CHANGES: &str = "Files And Changes";
pub(crate) const COMMITS: &str = "Commits";
pub(crate) const OUTSTANDING_CONTEXT: &str = "Outstanding Context";
pub(crate) const USER_PREFERENCES: &str = "User Preferences";
pub(crate) const LATEST_USER_REQUEST: &str = "Latest User Request";

/// Merge caps: goals and preferences accumulate over compactions, a bit beyond one compaction's.
pub(crate) const MERGED_GOALS: usize = 8;
pub(crate) const MERGED_PREFERENCES: usize = 15;

/// Separates the sections from the brief; always present, so parsing needs no guessing.
pub(crate) const BRIEF_RULE: &str = "\n\n---\n\n";

/// A summary in parts.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SummaryParts {
    /// `(title, items)` in output order; empty sections are left out when formatting.
    pub sections: Vec<(String, Vec<String>)>,
    /// The user's latest request, verbatim, when the cut summarized it away.
    pub latest_user_request: Option<String>,
    pub brief: String,
}

impl SummaryParts {
    /// The parts of a fresh summary.
    pub(crate) fn from_sections(
        sections: &Sections,
        latest_user_request: Option<String>,
        brief: String,
    ) -> Self {
        let files = sections.files.lines();
        Self {
            sections: vec![
                (SESSION_GOAL.into(), sections.goals.clone()),
                (FILES_AND_CHANGES.into(), files),
                (COMMITS.into(), sections.commits.clone()),
                (OUTSTANDING_CONTEXT.into(), sections.outstanding.clone()),
                (USER_PREFERENCES.into(), sections.preferences.clone()),
            ],
            latest_user_request,
            brief,
        }
    }

    /// The titles of the non-empty sections, in order (for the compaction details).
    pub(crate) fn titles(&self) -> Vec<String> {
        let mut titles: Vec<String> = self
            .sections
            .iter()
            .filter(|(_, items)| !items.is_empty())
            .map(|(title, _)| title.clone())
            .collect();
        if self.latest_user_request.is_some() {
            titles.push(LATEST_USER_REQUEST.into());
        }
        titles
    }

    fn section(&self, title: &str) -> &[String] {
        self.sections
            .iter()
            .find(|(name, _)| name == title)
            .map_or(&[], |(_, items)| items.as_slice())
    }
}

/// The summary text (without the recall note).
pub(crate) fn format_summary(parts: &SummaryParts) -> String {
    let mut out = String::new();
    for (title, items) in &parts.sections {
        if items.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&format!("[{title}]"));
        for item in items {
            out.push_str("\n- ");
            out.push_str(item);
        }
    }
    if let Some(request) = &parts.latest_user_request {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&format!("[{LATEST_USER_REQUEST}]\n{request}"));
    }
    out.push_str(BRIEF_RULE);
    out.push_str(if parts.brief.is_empty() {
        "(no transcript)"
    } else {
        &parts.brief
    });
    out
}

/// `summary` without a trailing recall note (and the rule before it), however many were stacked.
pub(crate) fn strip_recall_note<'a>(summary: &'a str, recall_note: &str) -> &'a str {
    let mut text = summary.trim_end();
    while let Some(rest) = text.strip_suffix(recall_note) {
        text = rest.trim_end();
        text = text.strip_suffix("---").unwrap_or(text).trim_end();
    }
    text
}

/// Parses a summary made by [`format_summary`]. Text in another format (Pi's own LLM summary)
/// has no sections and becomes the brief, so it is carried on rather than lost.
pub(crate) fn parse_summary(summary: &str) -> SummaryParts {
    let Some(rule) = summary.rfind(BRIEF_RULE) else {
        return SummaryParts {
            brief: summary.trim().to_string(),
            ..SummaryParts::default()
        };
    };
    let head = &summary[..rule];
    let brief = summary[rule + BRIEF_RULE.len()..].trim();
    let brief = if brief == "(no transcript)" {
        ""
    } else {
        brief
    };
    let mut parts = SummaryParts {
        brief: brief.to_string(),
        ..SummaryParts::default()
    };
    // The verbatim request is last and may contain anything, so it is cut off first.
    let marker = format!("[{LATEST_USER_REQUEST}]\n");
    let (head, request) = match head.find(&marker) {
        Some(at) if at == 0 || head[..at].ends_with('\n') => {
            (&head[..at], Some(head[at + marker.len()..].to_string()))
        }
        _ => (head, None),
    };
    parts.latest_user_request = request;
    for line in head.lines() {
        if let Some(title) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            parts.sections.push((title.to_string(), Vec::new()));
        } else if let (Some(item), Some((_, items))) =
            (line.strip_prefix("- "), parts.sections.last_mut())
        {
            items.push(item.to_string());
        }
    }
    parts
}

/// Merges the previous summary's parts into the fresh ones: Outstanding Context and the latest
/// request are the fresh ones only; files are unioned per category; other sections unioned and
/// the most recent kept. The fresh brief is kept whole and the previous brief gets what is left
/// of `max_brief_chars`.
pub(crate) fn merge_previous(
    previous: &SummaryParts,
    fresh: SummaryParts,
    max_brief_chars: usize,
) -> SummaryParts {
    let mut sections = Vec::new();
    for (title, items) in &fresh.sections {
        let old = previous.section(title);
        let merged = match title.as_str() {
            OUTSTANDING_CONTEXT => items.clone(),
            FILES_AND_CHANGES => merge_files(old, items),
            SESSION_GOAL => union_last(old, items, MERGED_GOALS),
            COMMITS => union_last(old, items, MAX_COMMITS),
            USER_PREFERENCES => union_last(old, items, MERGED_PREFERENCES),
            _ => union_last(old, items, usize::MAX),
        };
        sections.push((title.clone(), merged));
    }
    // Sections only the previous summary had (a newer or older format) are carried on.
    for (title, items) in &previous.sections {
        if title != OUTSTANDING_CONTEXT && !sections.iter().any(|(name, _)| name == title) {
            sections.push((title.clone(), items.clone()));
        }
    }
    let room = max_brief_chars.saturating_sub(fresh.brief.len() + 2);
    let brief = match (previous.brief.is_empty(), fresh.brief.is_empty()) {
        (true, _) => fresh.brief,
        (false, true) => cap_brief(&previous.brief, max_brief_chars),
        (false, false) if room < 40 => fresh.brief,
        (false, false) => format!("{}\n\n{}", cap_brief(&previous.brief, room), fresh.brief),
    };
    SummaryParts {
        sections,
        latest_user_request: fresh.latest_user_request,
        brief,
    }
}

// --- helpers -------------------------------------------------------------------------------

/// Old then new, deduplicated (a repeat counts as recent), skill markup dropped, the last `cap`.
fn union_last(old: &[String], new: &[String], cap: usize) -> Vec<String> {
    let mut merged: Vec<String> = Vec::with_capacity(old.len() + new.len());
    for item in old.iter().chain(new) {
        if item.contains("<skill") {
            continue;
        }
        merged.retain(|existing| existing != item);
        merged.push(item.clone());
    }
    let skip = merged.len().saturating_sub(cap);
    merged.split_off(skip)
}

fn merge_files(old: &[String], new: &[String]) -> Vec<String> {
    let mut activity = FileActivity::default();
    for line in old.iter().chain(new) {
        let Some((label, list)) = line.split_once(": ") else {
            continue;
        };
        let list = match list.rfind(" (+") {
            Some(at) if list.ends_with(" more)") => &list[..at],
            _ => list,
        };
        let target = match label {
            "Modified" => &mut activity.modified,
            "Created" => &mut activity.created,
            "Read" => &mut activity.read,
            _ => continue,
        };
        for path in list.split(", ").filter(|path| !path.is_empty()) {
            target.retain(|existing| existing != path);
            target.push(path.to_string());
        }
    }
    activity.settle();
    for list in [
        &mut activity.modified,
        &mut activity.created,
        &mut activity.read,
    ] {
        let skip = list.len().saturating_sub(MAX_FILES_PER_CATEGORY);
        list.drain(..skip);
    }
    activity.lines()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTE: &str = "Use `session_recall` …";

    fn parts(sections: &[(&str, &[&str])], request: Option<&str>, brief: &str) -> SummaryParts {
        SummaryParts {
            sections: sections
                .iter()
                .map(|(t, items)| (t.to_string(), items.iter().map(|i| i.to_string()).collect()))
                .collect(),
            latest_user_request: request.map(str::to_string),
            brief: brief.into(),
        }
    }

    #[test]
    fn formats_and_parses_back() {
        let original = parts(
            &[
                (SESSION_GOAL, &["Build it"]),
                (FILES_AND_CHANGES, &[]),
                (COMMITS, &["abc12345 — Init"]),
            ],
            Some("Now deploy.\n\n---\n\n[Weird] text\n- not an item"),
            "[user]\nBuild it (#0)",
        );
        let text = format_summary(&original);
        assert_eq!(
            text,
            "[Session Goal]\n- Build it\n\n[Commits]\n- abc12345 — Init\n\n[Latest User Request]\n\
             Now deploy.\n\n---\n\n[Weird] text\n- not an item\n\n---\n\n[user]\nBuild it (#0)"
        );
        let parsed = parse_summary(&text);
        assert_eq!(
            parsed,
            parts(
                &[
                    (SESSION_GOAL, &["Build it"]),
                    (COMMITS, &["abc12345 — Init"])
                ],
                original.latest_user_request.as_deref(),
                "[user]\nBuild it (#0)"
            )
        );
        assert_eq!(
            parsed.titles(),
            [SESSION_GOAL, COMMITS, LATEST_USER_REQUEST]
        );
    }

    #[test]
    fn empty_parts_still_have_a_brief_marker() {
        let text = format_summary(&SummaryParts::default());
        assert_eq!(text, "\n\n---\n\n(no transcript)");
        assert_eq!(parse_summary(&text), SummaryParts::default());
    }

    #[test]
    fn foreign_summary_becomes_the_brief() {
        let parsed = parse_summary("The user wanted X. We did Y.");
        assert!(parsed.sections.is_empty());
        assert_eq!(parsed.brief, "The user wanted X. We did Y.");
    }

    #[test]
    fn recall_note_is_stripped_even_when_stacked() {
        let cases = [
            (format!("body\n\n---\n\n{NOTE}"), "body"),
            (format!("body\n\n---\n\n{NOTE}\n\n---\n\n{NOTE}\n"), "body"),
            ("body".to_string(), "body"),
            (
                format!("{NOTE} in the middle\n\nend"),
                "Use `session_recall` … in the middle\n\nend",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(strip_recall_note(&input, NOTE), expected, "{input:?}");
        }
    }

    #[test]
    fn merge_follows_the_per_section_rules() {
        let previous = parts(
            &[
                (SESSION_GOAL, &["Old goal", "Shared goal"]),
                (
                    FILES_AND_CHANGES,
                    &["Modified: a.rs (+3 more)", "Created: b.rs, c.rs"],
                ),
                (OUTSTANDING_CONTEXT, &["[bash] old failure"]),
                (USER_PREFERENCES, &["Use tabs", "<skill x> junk"]),
                ("Legacy Section", &["kept"]),
            ],
            Some("old request"),
            "[user]\nold words (#0)",
        );
        let fresh = parts(
            &[
                (SESSION_GOAL, &["Shared goal", "New goal"]),
                (FILES_AND_CHANGES, &["Modified: c.rs", "Read: d.rs"]),
                (COMMITS, &[]),
                (OUTSTANDING_CONTEXT, &[]),
                (USER_PREFERENCES, &["Use tabs"]),
            ],
            None,
            "[user]\nnew words (#0)",
        );
        let merged = merge_previous(&previous, fresh, 10_000);
        assert_eq!(
            merged,
            parts(
                &[
                    (SESSION_GOAL, &["Old goal", "Shared goal", "New goal"]),
                    (
                        FILES_AND_CHANGES,
                        &["Modified: a.rs, c.rs", "Created: b.rs", "Read: d.rs"]
                    ),
                    (COMMITS, &[]),
                    (OUTSTANDING_CONTEXT, &[]),
                    (USER_PREFERENCES, &["Use tabs"]),
                    ("Legacy Section", &["kept"]),
                ],
                None,
                "[user]\nold words (#0)\n\n[user]\nnew words (#0)"
            )
        );
    }

    #[test]
    fn merged_goals_are_capped_to_the_most_recent() {
        let old: Vec<String> = (0..8).map(|i| format!("old {i}")).collect();
        let new: Vec<String> = (0..3).map(|i| format!("new {i}")).collect();
        let merged = union_last(&old, &new, MERGED_GOALS);
        assert_eq!(merged.len(), MERGED_GOALS);
        assert_eq!(merged.first().map(String::as_str), Some("old 3"));
        assert_eq!(merged.last().map(String::as_str), Some("new 2"));
    }

    #[test]
    fn merged_brief_keeps_the_fresh_one_whole() {
        let previous = parts(&[], None, &"[user]\nold line\n\n".repeat(50));
        let fresh = parts(&[], None, "[user]\nfresh (#0)");
        let merged = merge_previous(&previous, fresh.clone(), 100);
        assert!(merged.brief.ends_with("[user]\nfresh (#0)"));
        assert!(merged.brief.len() <= 100 + 40, "{}", merged.brief);
        assert!(merged.brief.starts_with("...("));
        let tight = merge_previous(&previous, fresh, 20);
        assert_eq!(tight.brief, "[user]\nfresh (#0)");
    }
}

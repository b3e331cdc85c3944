//! `/btw --save`: an exchange kept as a markdown note the user can read, grep and commit —
//! `<workspace>/.unipi/btw/notes/<date>-<time>-<slug>.md`, one file per saved exchange, written
//! crash-safe and never over an existing note.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::thread::Turn;
use crate::sys::time::civil_date;

/// The notes folder under the workspace.
pub(crate) const NOTES_DIR: &str = ".unipi/btw/notes";
/// Characters of the question a note's file name keeps.
const SLUG_CHARS: usize = 40;

/// Writes `turn` as a new note under `workspace` and returns its path.
pub(crate) fn save_note(workspace: &Path, turn: &Turn) -> anyhow::Result<PathBuf> {
    let dir = workspace.join(NOTES_DIR);
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    let stem = format!("{}-{}", stamp(turn.at_ms), slug(&turn.question));
    let text = note_text(turn);
    for attempt in 0..100 {
        let name = if attempt == 0 {
            format!("{stem}.md")
        } else {
            format!("{stem}-{attempt}.md")
        };
        let path = dir.join(name);
        match crate::sys::write_new_atomic(&path, text.as_bytes()) {
            Ok(()) => return Ok(path),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(err).with_context(|| format!("write {}", path.display())),
        }
    }
    anyhow::bail!("{}: 100 notes named {stem} already", dir.display())
}

/// The note's markdown.
fn note_text(turn: &Turn) -> String {
    let (date, time) = date_time(turn.at_ms);
    format!(
        "# BTW: {}\n\n_{date} {time} UTC · answered by {}_\n\n## Question\n\n{}\n\n## Answer\n\n{}\n",
        first_line(&turn.question),
        turn.model,
        turn.question.trim(),
        turn.answer.trim()
    )
}

fn first_line(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or_default();
    unipi_widgets::text::truncate_chars(line, 80)
}

/// `YYYY-MM-DD` and `HH:MM:SS` of a timestamp.
fn date_time(ms: u64) -> (String, String) {
    let secs = ms / 1000;
    let (year, month, day) = civil_date(i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2));
    (
        format!("{year:04}-{month:02}-{day:02}"),
        format!(
            "{:02}:{:02}:{:02}",
            (secs / 3600) % 24,
            (secs / 60) % 60,
            secs % 60
        ),
    )
}

/// `YYYYMMDD-HHMMSS` for a file name.
fn stamp(ms: u64) -> String {
    let (date, time) = date_time(ms);
    format!("{}-{}", date.replace('-', ""), time.replace(':', ""))
}

/// The question's words in lower case joined by `-`, at most [`SLUG_CHARS`]; `note` if none.
fn slug(question: &str) -> String {
    let mut slug = String::new();
    for word in question
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
    {
        let word = word.to_lowercase();
        if slug.chars().count() + word.chars().count() + 1 > SLUG_CHARS {
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.push_str(&word);
    }
    if slug.is_empty() {
        "note".to_owned()
    } else {
        slug
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;

    #[test]
    fn a_saved_exchange_is_a_new_markdown_note_each_time() {
        let dir = tempfile::tempdir().unwrap();
        let turn = Turn {
            question: "What does the --retry flag do?".into(),
            answer: "It retries once.".into(),
            model: "p/small".into(),
            // 2026-12-02 15:36:15 UTC
            at_ms: 1_796_225_775_000,
        };
        let first = save_note(dir.path(), &turn).unwrap();
        let second = save_note(dir.path(), &turn).unwrap();
        assert_eq!(
            first,
            dir.path()
                .join(NOTES_DIR)
                .join("20261202-153615-what-does-the-retry-flag-do.md")
        );
        assert_eq!(
            second.file_name().unwrap(),
            "20261202-153615-what-does-the-retry-flag-do-1.md"
        );
        assert_eq!(
            std::fs::read_to_string(&first).unwrap(),
            "# BTW: What does the --retry flag do?\n\n_2026-12-02 15:36:15 UTC · answered by \
             p/small_\n\n## Question\n\nWhat does the --retry flag do?\n\n## Answer\n\nIt \
             retries once.\n"
        );
        assert_eq!(slug("?!"), "note");
    }
}

//! Bounded reads of a task's output file: the model and the dock read the head or the tail of a
//! file that may be gigabytes long, so a read seeks and takes at most `max_bytes`, never the
//! whole file, and never through a symbolic link. The `bg_logs` text (content plus a notice naming
//! what was left out and where the full output is) is built here too.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

use anyhow::Context as _;

use super::model::format_size;

/// The most `bg_logs` returns (and its default): 50 KiB.
pub(crate) const MAX_LOG_BYTES: u64 = 50 * 1024;

/// What one bounded read got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogRead {
    /// UTF-8 (lossy: a cut may split a character).
    pub content: String,
    pub bytes_read: u64,
    pub total_bytes: u64,
    pub truncated: bool,
}

/// Reads at most `max_bytes` from the start (`tail == false`) or the end of `path`.
pub(crate) fn bounded_read(path: &Path, max_bytes: u64, tail: bool) -> anyhow::Result<LogRead> {
    // Not through a link someone put in the file's place.
    let mut file = crate::sys::private_dir::open_no_follow(path)
        .with_context(|| format!("open {}", path.display()))?;
    let total_bytes = file
        .metadata()
        .with_context(|| format!("stat {}", path.display()))?
        .len();
    let want = total_bytes.min(max_bytes);
    if tail {
        file.seek(SeekFrom::Start(total_bytes - want))
            .with_context(|| format!("seek {}", path.display()))?;
    }
    let mut bytes = Vec::with_capacity(usize::try_from(want).unwrap_or(0));
    file.take(want)
        .read_to_end(&mut bytes)
        .with_context(|| format!("read {}", path.display()))?;
    let bytes_read = bytes.len() as u64;
    Ok(LogRead {
        content: String::from_utf8_lossy(&bytes).into_owned(),
        bytes_read,
        total_bytes,
        truncated: total_bytes > bytes_read,
    })
}

/// `maxBytes` as the model gave it: absent or not a positive number → 50 KiB; else floored and
/// clamped to `1..=50 KiB`.
pub(crate) fn normalize_max_bytes(value: Option<f64>) -> u64 {
    match value {
        Some(v) if v.is_finite() => (v.floor().max(1.0) as u64).min(MAX_LOG_BYTES),
        _ => MAX_LOG_BYTES,
    }
}

/// The `bg_logs` text: the content with a notice. A truncated tail read puts the notice first
/// (the model reads what it skipped before the end), a head read puts it last.
pub(crate) fn format_log_text(read: &LogRead, tail: bool, output_path: &str) -> String {
    if read.content.is_empty() && read.total_bytes == 0 {
        return format!("(no output yet)\n\n[Full output: {output_path}]");
    }
    if !read.truncated {
        return format!("{}\n\n[Full output: {output_path}]", read.content);
    }
    let notice = format!(
        "[Showing {} {} of {}; {} omitted. Full output: {output_path}]",
        if tail { "tail" } else { "head" },
        format_size(read.bytes_read),
        format_size(read.total_bytes),
        format_size(read.total_bytes - read.bytes_read),
    );
    if tail {
        format!("{notice}\n\n{}", read.content)
    } else {
        format!("{}\n\n{notice}", read.content)
    }
}

/// The last non-empty line of the output (from its last 4 KiB), for lists and cards.
pub fn last_line(path: &Path) -> Option<String> {
    last_lines(path, 1).pop()
}

/// Up to `count` last non-empty lines of the output (from its last 4 KiB).
pub fn last_lines(path: &Path, count: usize) -> Vec<String> {
    match bounded_read(path, 4096, true) {
        Ok(read) => last_lines_of(&read.content, count),
        Err(_) => Vec::new(),
    }
}

/// Up to `count` last non-empty lines of `text`, each cut to 200 characters.
pub(crate) fn last_lines_of(text: &str, count: usize) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .rev()
        .map(str::trim_end)
        .filter(|line| !line.trim().is_empty())
        .take(count)
        .map(|line| super::model::truncate_chars(line, 200))
        .collect();
    lines.reverse();
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_table::check_table;

    fn file_with(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.log");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn head_and_tail_reads_are_bounded() {
        let (_dir, path) = file_with("0123456789");
        let cases = [
            (4, true, "6789", true),
            (4, false, "0123", true),
            (50, true, "0123456789", false),
            (10, false, "0123456789", false),
        ];
        for (max, tail, content, truncated) in cases {
            let read = bounded_read(&path, max, tail).unwrap();
            assert_eq!(read.content, content, "max {max} tail {tail}");
            assert_eq!(read.truncated, truncated);
            assert_eq!(read.total_bytes, 10);
        }
    }

    #[test]
    fn max_bytes_is_clamped() {
        let cases = [
            (None, MAX_LOG_BYTES),
            (Some(f64::NAN), MAX_LOG_BYTES),
            (Some(0.0), 1),
            (Some(-5.0), 1),
            (Some(10.7), 10),
            (Some(1e12), MAX_LOG_BYTES),
        ];
        check_table(cases, |value| normalize_max_bytes(*value));
    }

    #[test]
    fn notices_say_what_was_omitted_and_where_the_output_is() {
        let (_dir, path) = file_with(&"x".repeat(3000));
        let tail = bounded_read(&path, 1024, true).unwrap();
        assert_eq!(
            format_log_text(&tail, true, "/o.log"),
            format!(
                "[Showing tail 1.0KB of 2.9KB; 1.9KB omitted. Full output: /o.log]\n\n{}",
                "x".repeat(1024)
            )
        );
        let head = bounded_read(&path, 1024, false).unwrap();
        assert!(
            format_log_text(&head, false, "/o.log")
                .ends_with("\n\n[Showing head 1.0KB of 2.9KB; 1.9KB omitted. Full output: /o.log]")
        );
        let (_d, short) = file_with("hi\n");
        let read = bounded_read(&short, 1024, true).unwrap();
        assert_eq!(
            format_log_text(&read, true, "/s"),
            "hi\n\n\n[Full output: /s]"
        );
        let (_e, empty) = file_with("");
        let read = bounded_read(&empty, 1024, true).unwrap();
        assert_eq!(
            format_log_text(&read, true, "/e"),
            "(no output yet)\n\n[Full output: /e]"
        );
    }

    #[test]
    fn last_lines_skip_blank_lines() {
        let (_dir, path) = file_with("one\ntwo\n\nthree\n\n");
        assert_eq!(last_lines(&path, 2), ["two", "three"]);
        assert_eq!(last_line(&path).as_deref(), Some("three"));
        assert_eq!(last_line(Path::new("/nonexistent/x")), None);
    }
}

//! What the sidekick is asked when it names a session, and what is kept of its answer: the
//! naming prompt and the cleaning of a title. (`/btw` is a capability of its own, `crate::btw`.)

use unipi_widgets::text::truncate_chars;

/// Characters of the first request a title is made from.
const NAMING_INPUT_CHARS: usize = 2_000;
/// The longest title kept.
const TITLE_CHARS: usize = 60;

/// The naming prompt for a session whose first request was `first_request`.
pub(crate) fn naming_prompt(first_request: &str) -> String {
    format!(
        "Reply with a short title (at most six words) for a coding session that begins with the \
         request below. Reply with the title only: no quotes, no punctuation at the end.\n\n\
         Request:\n{}",
        truncate_chars(first_request.trim(), NAMING_INPUT_CHARS)
    )
}

/// The title in a model's reply: its first non-empty line without quotes, markdown marks or a
/// `Title:` label, at most [`TITLE_CHARS`]; `None` when nothing is left.
pub(crate) fn clean_title(reply: &str) -> Option<String> {
    let line = reply.lines().map(str::trim).find(|line| !line.is_empty())?;
    let line = line
        .strip_prefix("Title:")
        .or_else(|| line.strip_prefix("title:"))
        .unwrap_or(line);
    let title = line
        .trim_matches(|c: char| {
            matches!(c, '"' | '\'' | '`' | '*' | '#' | '_') || c.is_whitespace()
        })
        .trim_end_matches(['.', '!', ':'])
        .trim();
    (!title.is_empty()).then(|| truncate_chars(title, TITLE_CHARS))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;

    #[test]
    fn titles_are_cleaned_table() {
        let cases = [
            ("Fix the flaky retry test", Some("Fix the flaky retry test")),
            (
                "\n  \"Refactor auth module.\"  \nmore",
                Some("Refactor auth module"),
            ),
            ("Title: **Port the footer**", Some("Port the footer")),
            ("# Model fusion!", Some("Model fusion")),
            ("   \n  ", None),
            ("\"\"", None),
        ];
        for (reply, want) in cases {
            assert_eq!(clean_title(reply).as_deref(), want, "{reply:?}");
        }
        assert_eq!(
            clean_title(&"word ".repeat(40)).unwrap().chars().count(),
            TITLE_CHARS
        );
    }
}

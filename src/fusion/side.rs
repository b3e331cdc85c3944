//! What the sidekick is asked for side work, and what is kept of its answer: the `/btw` prompt
//! (the question after a bounded excerpt of the main conversation, read from the main session's
//! file, so the answer knows what "this" refers to without the question entering the
//! conversation), the naming prompt and the cleaning of a title, and the message that injects a
//! side exchange into the conversation when the user asks for it.

use std::path::Path;

use crate::compactor::entries::{EntryKind, Role, branch, read_session_file};
use unipi_widgets::text::truncate_chars;

/// Messages of the main conversation given as context, at most.
const CONTEXT_MESSAGES: usize = 12;
/// Characters of one context message, at most.
const CONTEXT_MESSAGE_CHARS: usize = 1_200;
/// Characters of the whole context, at most (the latest messages are kept).
const CONTEXT_CHARS: usize = 8_000;
/// Characters of the first request a title is made from.
const NAMING_INPUT_CHARS: usize = 2_000;
/// The longest title kept.
const TITLE_CHARS: usize = 60;

/// The custom message type of an injected side exchange.
pub(crate) const BTW_MESSAGE_TYPE: &str = "fusion-btw";

/// The main conversation's last user and assistant texts, oldest first, as `role: text` blocks
/// within the limits; empty when the file cannot be read (a side question still gets answered).
pub(crate) fn conversation_excerpt(session_file: &Path) -> String {
    let entries = match read_session_file(session_file) {
        Ok(entries) => entries,
        Err(err) => {
            tracing::debug!("fusion: no context for /btw: {err:#}");
            return String::new();
        }
    };
    let mut blocks: Vec<String> = Vec::new();
    let mut used = 0;
    for entry in branch(&entries, None).iter().rev() {
        let EntryKind::Message(message) = &entry.kind else {
            continue;
        };
        let who = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
            _ => continue,
        };
        let text = message.text();
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let block = format!("{who}: {}", truncate_chars(text, CONTEXT_MESSAGE_CHARS));
        used += block.chars().count();
        if used > CONTEXT_CHARS || blocks.len() == CONTEXT_MESSAGES {
            break;
        }
        blocks.push(block);
    }
    blocks.reverse();
    blocks.join("\n\n")
}

/// The `/btw` prompt: the question, after the conversation excerpt when there is one.
pub(crate) fn btw_prompt(question: &str, excerpt: &str) -> String {
    let mut prompt = String::from(
        "You answer a side question about an ongoing coding session, briefly and directly. \
         Your answer is shown to the user beside the session; it is not part of it.\n\n",
    );
    if !excerpt.trim().is_empty() {
        prompt.push_str("The session so far (latest last):\n<session>\n");
        prompt.push_str(excerpt);
        prompt.push_str("\n</session>\n\n");
    }
    prompt.push_str("Side question: ");
    prompt.push_str(question.trim());
    prompt
}

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

/// The text an injected side exchange carries into the conversation.
pub(crate) fn injected_text(question: &str, answer: &str, sidekick: &str) -> String {
    format!(
        "Side question the user asked (answered by the sidekick model {sidekick}, outside this \
         conversation):\n{}\n\nIts answer:\n{}",
        question.trim(),
        answer.trim()
    )
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

    #[test]
    fn the_excerpt_keeps_the_latest_user_and_assistant_texts_of_the_branch() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.jsonl");
        let line = |id: &str, parent: Option<&str>, role: &str, text: &str| {
            serde_json::json!({"type": "message", "id": id, "parentId": parent,
                "message": {"role": role, "content": [{"type": "text", "text": text}]}})
            .to_string()
        };
        let lines = [
            serde_json::json!({"type": "session", "id": "sess"}).to_string(),
            line("a", None, "user", "what is in notes.txt?"),
            line("b", Some("a"), "assistant", "It lists the release steps."),
            line("c", Some("b"), "toolResult", "ignored"),
            line("d", Some("c"), "user", "and the second step?"),
        ];
        std::fs::write(&file, lines.join("\n")).unwrap();
        let excerpt = conversation_excerpt(&file);
        assert_eq!(
            excerpt,
            "user: what is in notes.txt?\n\nassistant: It lists the release steps.\n\nuser: and \
             the second step?"
        );
        let prompt = btw_prompt(" why? ", &excerpt);
        assert!(
            prompt.contains("<session>\nuser: what is in notes.txt?"),
            "{prompt}"
        );
        assert!(prompt.ends_with("Side question: why?"), "{prompt}");
        assert!(!btw_prompt("why?", "").contains("<session>"));
        assert_eq!(conversation_excerpt(&dir.path().join("missing.jsonl")), "");
    }
}

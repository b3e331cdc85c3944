//! The main conversation as a contextual `/btw` thread sees it: a bounded excerpt of its latest
//! user and assistant texts, read from the main session's file, so the answer knows what "this"
//! refers to without the question entering the conversation.

use std::path::Path;

use crate::compactor::entries::{EntryKind, Role, branch, read_session_file};
use unipi_widgets::text::truncate_chars;

/// Messages of the main conversation given as context, at most.
const CONTEXT_MESSAGES: usize = 12;
/// Characters of one context message, at most.
const CONTEXT_MESSAGE_CHARS: usize = 1_200;
/// Characters of the whole context, at most (the latest messages are kept).
const CONTEXT_CHARS: usize = 8_000;

/// The main conversation's last user and assistant texts, oldest first, as `role: text` blocks
/// within the limits; empty when the file cannot be read (a side question still gets answered).
pub(crate) fn conversation_excerpt(session_file: &Path) -> String {
    let entries = match read_session_file(session_file) {
        Ok(entries) => entries,
        Err(err) => {
            tracing::debug!("btw: no context from the main session: {err:#}");
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

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;

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
        assert_eq!(conversation_excerpt(&dir.path().join("missing.jsonl")), "");
    }
}

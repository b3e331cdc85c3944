//! Pi session entries, typed: the JSONL lines of a Pi session file and the `branchEntries` of
//! Pi's `session_before_compact` event share one shape, so one parser serves the compactor hook,
//! the golden tests and ingestion. Only what compaction reads is kept (roles, content blocks,
//! tool names, compaction fields); image bytes are dropped on parse because nothing downstream
//! may copy them into a summary, and unknown entry or block types survive as `Other` so a newer
//! Pi never makes a session unreadable.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Context as _;
use serde_json::Value;

/// One entry of a Pi session tree (the header line is not an entry).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEntry {
    pub id: String,
    pub parent_id: Option<String>,
    pub timestamp: Option<String>,
    pub kind: EntryKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum EntryKind {
    Message(Message),
    Compaction(CompactionEntry),
    /// An extension's context message (`custom_message`); it reaches the model as user text.
    CustomMessage {
        custom_type: String,
        text: String,
        display: bool,
    },
    /// Model changes, labels, usage, custom state …: not part of the conversation.
    Other {
        entry_type: String,
    },
}

/// An `AgentMessage` as stored in a `message` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Block>,
    /// The tool of a tool result; for [`Role::Custom`] the message's `customType` (the contract
    /// has no separate field and a custom message never has a tool).
    pub tool_name: Option<String>,
    pub tool_call_id: Option<String>,
    /// A failed tool result, or a shell execution with a non-zero exit code.
    pub is_error: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    ToolResult,
    /// A `!command` the user ran; its content is `$ command` then the output, as text.
    BashExecution,
    Custom,
    /// `system`, `branchSummary`, `compactionSummary`, or a role a newer Pi adds.
    Other(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Text(String),
    Thinking(String),
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
    },
    /// The image data is not kept: a summary must never carry it.
    Image {
        mime: String,
    },
    /// A block type this parser does not know, by its `type`.
    Other(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct CompactionEntry {
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: u64,
    pub details: Value,
}

/// Parses one session line. `None` for the header (`type: "session"`), for lines without an id,
/// and for anything that is not an object.
pub fn parse_entry(value: &Value) -> Option<SessionEntry> {
    let object = value.as_object()?;
    let entry_type = object.get("type")?.as_str()?;
    if entry_type == "session" {
        return None;
    }
    let id = object.get("id")?.as_str()?.to_string();
    let parent_id = object
        .get("parentId")
        .and_then(Value::as_str)
        .map(str::to_string);
    let timestamp = object
        .get("timestamp")
        .and_then(Value::as_str)
        .map(str::to_string);
    let kind = match entry_type {
        "message" => EntryKind::Message(parse_message(object.get("message")?)?),
        "compaction" => EntryKind::Compaction(CompactionEntry {
            summary: str_field(value, "summary"),
            first_kept_entry_id: str_field(value, "firstKeptEntryId"),
            tokens_before: value
                .get("tokensBefore")
                .and_then(Value::as_f64)
                .map_or(0, |tokens| tokens.max(0.0) as u64),
            details: value.get("details").cloned().unwrap_or(Value::Null),
        }),
        "custom_message" => EntryKind::CustomMessage {
            custom_type: str_field(value, "customType"),
            text: content_text(value.get("content")),
            display: value
                .get("display")
                .and_then(Value::as_bool)
                .unwrap_or(true),
        },
        other => EntryKind::Other {
            entry_type: other.to_string(),
        },
    };
    Some(SessionEntry {
        id,
        parent_id,
        timestamp,
        kind,
    })
}

/// Reads a Pi session file. Lines that are not JSON or not entries are skipped (bad ones
/// logged): a half-written last line must not make a session unusable.
pub fn read_session_file(path: &Path) -> anyhow::Result<Vec<SessionEntry>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the Pi session file {}", path.display()))?;
    let mut entries = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(value) => entries.extend(parse_entry(&value)),
            Err(error) => tracing::warn!(
                "skipping line {} of {}: {error}",
                number + 1,
                path.display()
            ),
        }
    }
    Ok(entries)
}

/// The path from the root to `leaf_id` (the last entry when `None`), root first. An unknown leaf
/// gives an empty branch; a parent cycle (a corrupt file) stops the walk.
pub fn branch(entries: &[SessionEntry], leaf_id: Option<&str>) -> Vec<SessionEntry> {
    let by_id: HashMap<&str, usize> = entries
        .iter()
        .enumerate()
        .map(|(index, entry)| (entry.id.as_str(), index))
        .collect();
    let start = match leaf_id {
        Some(id) => by_id.get(id).copied(),
        None => entries.len().checked_sub(1),
    };
    let mut path = Vec::new();
    let mut next = start;
    while let Some(index) = next {
        if path.len() > entries.len() {
            break;
        }
        path.push(index);
        next = entries[index]
            .parent_id
            .as_deref()
            .and_then(|parent| by_id.get(parent).copied());
    }
    path.iter()
        .rev()
        .map(|&index| entries[index].clone())
        .collect()
}

impl Message {
    /// The text blocks joined with `"\n"` (thinking, tool calls and images left out).
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|block| match block {
                Block::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }
}

// --- helpers -------------------------------------------------------------------------------

fn parse_message(message: &Value) -> Option<Message> {
    let role_name = message.get("role")?.as_str()?;
    let role = match role_name {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "toolResult" => Role::ToolResult,
        "bashExecution" => Role::BashExecution,
        "custom" => Role::Custom,
        other => Role::Other(other.to_string()),
    };
    let is_error = match role {
        Role::BashExecution => message
            .get("exitCode")
            .and_then(Value::as_i64)
            .is_some_and(|code| code != 0),
        _ => message
            .get("isError")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    };
    let content = match role {
        Role::BashExecution => vec![Block::Text(format!(
            "$ {}\n{}",
            str_field(message, "command"),
            str_field(message, "output")
        ))],
        _ => parse_blocks(message.get("content")),
    };
    let tool_name = match role {
        Role::Custom => message.get("customType"),
        _ => message.get("toolName"),
    }
    .and_then(Value::as_str)
    .map(str::to_string);
    Some(Message {
        role,
        content,
        tool_name,
        tool_call_id: message
            .get("toolCallId")
            .and_then(Value::as_str)
            .map(str::to_string),
        is_error,
    })
}

/// Content is a string or an array of typed blocks (Pi accepts both for user and custom messages).
fn parse_blocks(content: Option<&Value>) -> Vec<Block> {
    match content {
        Some(Value::String(text)) => vec![Block::Text(text.clone())],
        Some(Value::Array(blocks)) => blocks.iter().map(parse_block).collect(),
        _ => Vec::new(),
    }
}

fn parse_block(block: &Value) -> Block {
    let block_type = block.get("type").and_then(Value::as_str).unwrap_or("");
    match block_type {
        "text" => Block::Text(str_field(block, "text")),
        "thinking" => Block::Thinking(str_field(block, "thinking")),
        "toolCall" => Block::ToolCall {
            id: str_field(block, "id"),
            name: str_field(block, "name"),
            arguments: block.get("arguments").cloned().unwrap_or(Value::Null),
        },
        "image" => Block::Image {
            mime: str_field(block, "mimeType"),
        },
        other => Block::Other(other.to_string()),
    }
}

/// A custom message's content as text; images become `[image: mime]` placeholders.
fn content_text(content: Option<&Value>) -> String {
    let parts: Vec<String> = parse_blocks(content)
        .into_iter()
        .filter_map(|block| match block {
            Block::Text(text) => Some(text),
            Block::Image { mime } => Some(format!("[image: {mime}]")),
            _ => None,
        })
        .collect();
    parts.join("\n")
}

fn str_field(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parses_each_entry_shape() {
        let cases = [
            (
                json!({"type":"session","version":3,"id":"uuid","cwd":"/p"}),
                None,
            ),
            (
                json!({"type":"message","id":"a","parentId":null,"timestamp":"t",
                       "message":{"role":"user","content":"Hello"}}),
                Some(EntryKind::Message(Message {
                    role: Role::User,
                    content: vec![Block::Text("Hello".into())],
                    tool_name: None,
                    tool_call_id: None,
                    is_error: false,
                })),
            ),
            (
                json!({"type":"message","id":"b","parentId":"a","message":{"role":"assistant",
                       "content":[{"type":"thinking","thinking":"hm"},
                                  {"type":"toolCall","id":"c1","name":"read","arguments":{"path":"x"}},
                                  {"type":"future"}]}}),
                Some(EntryKind::Message(Message {
                    role: Role::Assistant,
                    content: vec![
                        Block::Thinking("hm".into()),
                        Block::ToolCall {
                            id: "c1".into(),
                            name: "read".into(),
                            arguments: json!({"path":"x"}),
                        },
                        Block::Other("future".into()),
                    ],
                    tool_name: None,
                    tool_call_id: None,
                    is_error: false,
                })),
            ),
            (
                json!({"type":"message","id":"c","parentId":"b","message":{"role":"toolResult",
                       "toolCallId":"c1","toolName":"read","isError":true,
                       "content":[{"type":"text","text":"no"},{"type":"image","mimeType":"image/png","data":"AAAA"}]}}),
                Some(EntryKind::Message(Message {
                    role: Role::ToolResult,
                    content: vec![
                        Block::Text("no".into()),
                        Block::Image {
                            mime: "image/png".into(),
                        },
                    ],
                    tool_name: Some("read".into()),
                    tool_call_id: Some("c1".into()),
                    is_error: true,
                })),
            ),
            (
                json!({"type":"message","id":"d","parentId":"c","message":{"role":"bashExecution",
                       "command":"ls","output":"a\nb","exitCode":2}}),
                Some(EntryKind::Message(Message {
                    role: Role::BashExecution,
                    content: vec![Block::Text("$ ls\na\nb".into())],
                    tool_name: None,
                    tool_call_id: None,
                    is_error: true,
                })),
            ),
            (
                json!({"type":"compaction","id":"e","parentId":"d","summary":"S",
                       "firstKeptEntryId":"c","tokensBefore":5000,"details":{"k":1}}),
                Some(EntryKind::Compaction(CompactionEntry {
                    summary: "S".into(),
                    first_kept_entry_id: "c".into(),
                    tokens_before: 5000,
                    details: json!({"k":1}),
                })),
            ),
            (
                json!({"type":"custom_message","id":"f","parentId":"e","customType":"compactor-auto-continue",
                       "content":[{"type":"text","text":"go on"}],"display":false}),
                Some(EntryKind::CustomMessage {
                    custom_type: "compactor-auto-continue".into(),
                    text: "go on".into(),
                    display: false,
                }),
            ),
            (
                json!({"type":"model_change","id":"g","parentId":"f","provider":"p","modelId":"m"}),
                Some(EntryKind::Other {
                    entry_type: "model_change".into(),
                }),
            ),
            (json!({"type":"message","message":{"role":"user"}}), None),
            (json!([1, 2]), None),
        ];
        for (line, expected) in cases {
            assert_eq!(
                parse_entry(&line).map(|entry| entry.kind),
                expected,
                "{line}"
            );
        }
    }

    fn entry(id: &str, parent: Option<&str>) -> SessionEntry {
        SessionEntry {
            id: id.into(),
            parent_id: parent.map(str::to_string),
            timestamp: None,
            kind: EntryKind::Other {
                entry_type: "label".into(),
            },
        }
    }

    #[test]
    fn branch_follows_parents_from_the_leaf() {
        // a ─ b ─ c
        //      └─ d
        let entries = [
            entry("a", None),
            entry("b", Some("a")),
            entry("c", Some("b")),
            entry("d", Some("b")),
        ];
        let ids = |leaf: Option<&str>| -> Vec<String> {
            branch(&entries, leaf).into_iter().map(|e| e.id).collect()
        };
        assert_eq!(ids(None), ["a", "b", "d"]);
        assert_eq!(ids(Some("c")), ["a", "b", "c"]);
        assert_eq!(ids(Some("a")), ["a"]);
        assert!(ids(Some("zz")).is_empty());
        assert!(branch(&[], None).is_empty());
        // A cycle stops instead of looping forever.
        let cyclic = [entry("x", Some("y")), entry("y", Some("x"))];
        assert!(branch(&cyclic, None).len() <= 3);
    }

    #[test]
    fn reading_a_file_skips_the_header_and_bad_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(
            &path,
            "{\"type\":\"session\",\"version\":3,\"id\":\"x\"}\n\
             {\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n\
             {not json\n\
             \n\
             {\"type\":\"label\",\"id\":\"b\",\"parentId\":\"a\"}\n\
             {\"type\":\"message\",\"id\":\"c\",\"parentId\":\"b\",\"mess",
        )
        .unwrap();
        let ids: Vec<String> = read_session_file(&path)
            .unwrap()
            .into_iter()
            .map(|entry| entry.id)
            .collect();
        assert_eq!(ids, ["a", "b"]);
        let missing = read_session_file(&dir.path().join("none.jsonl")).unwrap_err();
        assert!(missing.to_string().contains("none.jsonl"), "{missing}");
    }

    #[test]
    fn text_joins_text_blocks_only() {
        let message = Message {
            role: Role::Assistant,
            content: vec![
                Block::Text("one".into()),
                Block::Thinking("hidden".into()),
                Block::Text("two".into()),
            ],
            tool_name: None,
            tool_call_id: None,
            is_error: false,
        };
        assert_eq!(message.text(), "one\ntwo");
    }
}

//! Stages 1 and 2 of the compile pipeline: session entries become flat, single-line
//! [`NormBlock`]s (one per text, tool call, tool result, thinking part or image), then noise is
//! filtered out. Every later stage (ranked brief, sections) reads only these blocks, so the
//! rules about what a message *means* live here once. Text is sanitized to one line because the
//! brief and the sections are line-based; tool outputs are clipped before sanitizing so a
//! megabyte of `cat` output costs no more than a page.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::entries::{Block, EntryKind, Message, Role, SessionEntry};

/// The custom message type of the invisible "continue" nudge sent after an automatic
/// compaction; it carries no information, so it never reaches a summary.
pub(crate) const AUTO_CONTINUE_TYPE: &str = "compactor-auto-continue";

/// How much of one tool result is looked at (sections scan it for errors and commits).
pub(crate) const MAX_TOOL_TEXT_CHARS: usize = 2_000;

/// The tool-call arguments later stages read (paths, commands, search terms); the rest (a
/// written file's content, an edit's text) is not copied.
pub(crate) const KEPT_ARGUMENTS: [&str; 8] = [
    "file_path",
    "path",
    "filePath",
    "filepath",
    "file",
    "command",
    "pattern",
    "query",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    User,
    Assistant,
    Thinking,
    ToolCall,
    ToolResult,
    /// An extension's context message (its type in `tool`).
    Custom,
}

/// One normalized piece of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct NormBlock {
    pub kind: BlockKind,
    /// Sanitized, single line. Empty for thinking, which is never kept.
    pub text: String,
    /// Tool name (tool calls and results) or custom message type.
    pub tool: Option<String>,
    /// Tool call arguments, only the [`KEPT_ARGUMENTS`].
    pub arguments: Option<Value>,
    pub is_error: bool,
    /// For failed tool results: the first non-empty line of the output, sanitized (the only
    /// part of a result that reaches a summary).
    pub head: String,
    /// Index of the source entry among the entries given to [`normalize`]; the brief turns it
    /// into the entry id (`#id`).
    pub source: usize,
}

/// Normalizes conversation entries (message and custom-message entries; others are skipped).
pub fn normalize(entries: &[&SessionEntry]) -> Vec<NormBlock> {
    let mut blocks = Vec::with_capacity(entries.len() * 2);
    for (source, entry) in entries.iter().enumerate() {
        match &entry.kind {
            EntryKind::CustomMessage {
                custom_type, text, ..
            } => {
                let mut block = NormBlock::new(BlockKind::Custom, sanitize(text), source);
                block.tool = Some(custom_type.clone());
                blocks.push(block);
            }
            EntryKind::Message(message) => match message.role {
                Role::User => push_user(&mut blocks, message, source),
                Role::Assistant => push_assistant(&mut blocks, message, source),
                Role::ToolResult => {
                    let raw = tool_text(&message.content, MAX_TOOL_TEXT_CHARS);
                    let mut result = NormBlock::new(BlockKind::ToolResult, String::new(), source);
                    if message.is_error {
                        // The whole output: a compiler's error line often comes after a page
                        // of progress lines.
                        result.head = error_line(&message.text());
                    }
                    result.text = sanitize(&raw);
                    result.tool = message.tool_name.clone();
                    result.is_error = message.is_error;
                    blocks.push(result);
                }
                Role::BashExecution => push_bash(&mut blocks, message, source),
                Role::Custom => {
                    let mut block =
                        NormBlock::new(BlockKind::Custom, sanitize(&message.text()), source);
                    block.tool = message.tool_name.clone();
                    blocks.push(block);
                }
                Role::Other(_) => {}
            },
            EntryKind::Compaction(_) | EntryKind::Other { .. } => {}
        }
    }
    blocks
}

/// A user message: its text (even empty: it marks a turn, unless images stand for it), then one
/// block per image.
fn push_user(blocks: &mut Vec<NormBlock>, message: &Message, source: usize) {
    let text = message.text();
    let images = message.content.iter().filter_map(|block| match block {
        Block::Image { mime } => Some(format!("[image: {mime}]")),
        _ => None,
    });
    let images: Vec<String> = images.collect();
    // An empty user message still yields a block (it marks a turn).
    if !text.is_empty() || images.is_empty() {
        blocks.push(NormBlock::new(BlockKind::User, sanitize(&text), source));
    }
    for image in images {
        blocks.push(NormBlock::new(BlockKind::User, image, source));
    }
}

/// An assistant message: one block per text, thinking part, tool call or image.
fn push_assistant(blocks: &mut Vec<NormBlock>, message: &Message, source: usize) {
    for block in &message.content {
        match block {
            Block::Text(text) => {
                blocks.push(NormBlock::new(BlockKind::Assistant, sanitize(text), source));
            }
            Block::Thinking(_) => {
                blocks.push(NormBlock::new(BlockKind::Thinking, String::new(), source));
            }
            Block::ToolCall {
                name, arguments, ..
            } => {
                let mut call = NormBlock::new(BlockKind::ToolCall, String::new(), source);
                call.text = name.clone();
                call.tool = Some(name.clone());
                call.arguments = Some(kept_arguments(arguments));
                blocks.push(call);
            }
            Block::Image { mime } => {
                let text = format!("[image: {mime}]");
                blocks.push(NormBlock::new(BlockKind::Assistant, text, source));
            }
            Block::Other(_) => {}
        }
    }
}

/// A `!command` the user ran, stored as "$ command\noutput": a call and its result, like a bash
/// tool.
fn push_bash(blocks: &mut Vec<NormBlock>, message: &Message, source: usize) {
    let raw = message.text();
    let (command_line, output) = raw.split_once('\n').unwrap_or((&raw, ""));
    let command = command_line.strip_prefix("$ ").unwrap_or(command_line);
    let mut call = NormBlock::new(BlockKind::ToolCall, "bash".into(), source);
    call.tool = Some("bash".into());
    call.arguments = Some(serde_json::json!({ "command": command }));
    blocks.push(call);
    let mut result = NormBlock::new(BlockKind::ToolResult, String::new(), source);
    if message.is_error {
        result.head = error_line(output);
    }
    result.text = sanitize(clip_chars(output, MAX_TOOL_TEXT_CHARS));
    result.tool = Some("bash".into());
    result.is_error = message.is_error;
    blocks.push(result);
}

/// Stage 2: drops thinking, bookkeeping tools, harness boilerplate, wrapper-only user text and
/// the auto-continue nudge. `custom_patterns` are plain substrings that mark a user block as noise.
pub fn filter_noise(blocks: Vec<NormBlock>, custom_patterns: &[String]) -> Vec<NormBlock> {
    blocks
        .into_iter()
        .filter_map(|mut block| match block.kind {
            BlockKind::Thinking => None,
            BlockKind::ToolCall | BlockKind::ToolResult => (!block
                .tool
                .as_deref()
                .is_some_and(|tool| is_noise_tool(tool) || is_recall_tool(tool)))
            .then_some(block),
            BlockKind::Custom if block.tool.as_deref() == Some(AUTO_CONTINUE_TYPE) => None,
            BlockKind::User | BlockKind::Custom => {
                if NOISE_TEXTS.iter().any(|noise| block.text.contains(noise))
                    || custom_patterns
                        .iter()
                        .any(|pattern| !pattern.is_empty() && block.text.contains(pattern.as_str()))
                {
                    return None;
                }
                if block.text.contains('<') {
                    let stripped = WRAPPER_RE.replace_all(&block.text, "");
                    let stripped = stripped.trim();
                    if stripped.is_empty() {
                        return None;
                    }
                    if stripped.len() != block.text.len() {
                        block.text = stripped.to_string();
                    }
                }
                Some(block)
            }
            BlockKind::Assistant => Some(block),
        })
        .collect()
}

/// Control characters out, every whitespace run (newlines included) to one space, trimmed.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(1 << 16));
    for word in text.split_whitespace() {
        // ASCII controls are below 0x20 or 0x7f; C1 controls start with 0xc2 in UTF-8 (so do a
        // few printable characters, which the slow path keeps).
        let has_control = word.bytes().any(|b| b < 0x20 || b == 0x7f || b == 0xc2);
        let start = out.len();
        if start > 0 {
            out.push(' ');
        }
        if has_control {
            out.extend(word.chars().filter(|c| !c.is_control()));
        } else {
            out.push_str(word);
        }
        if out.len() == start + usize::from(start > 0) {
            out.truncate(start); // the word was all control characters
        }
    }
    out
}

/// At most `max` characters of `text`, cut on a character boundary.
pub(crate) fn clip_chars(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text; // bytes ≥ characters
    }
    match text.char_indices().nth(max) {
        Some((index, _)) => &text[..index],
        None => text,
    }
}

/// `text` cut to about `max` characters, preferring a sentence or word end, with `…` when cut.
pub(crate) fn clip_sentence(text: &str, max: usize) -> String {
    let clipped = clip_chars(text, max);
    if clipped.len() == text.len() {
        return text.to_string();
    }
    let floor = clipped.len() / 2;
    let end = clipped
        .rfind(". ")
        .map(|index| index + 1)
        .filter(|&index| index > floor)
        .or_else(|| clipped.rfind(' ').filter(|&index| index > floor))
        .unwrap_or(clipped.len());
    format!("{}…", clipped[..end].trim_end())
}

// --- helpers -------------------------------------------------------------------------------

/// Tools whose calls are bookkeeping rather than work (compared without case or `_`).
const NOISE_TOOLS: [&str; 7] = [
    "todowrite",
    "todoread",
    "toolsearch",
    "websearch",
    "askuser",
    "exitspecmode",
    "generatedroid",
];

const NOISE_TEXTS: [&str; 3] = [
    "Continue from where you left off.",
    "No response requested.",
    "IMPORTANT: TodoWrite was not called yet.",
];

/// The compactor's fixed patterns, compiled once each (in a `LazyLock`). Each is a literal the
/// tests exercise, so a bad one fails them rather than a user's session.
pub(crate) fn literal_regex(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|err| panic!("invalid literal pattern {pattern:?}: {err}"))
}

static WRAPPER_RE: LazyLock<Regex> = LazyLock::new(|| {
    // Four alternatives because the regex crate has no back-references.
    literal_regex(
        r"(?s)<system-reminder\b[^>]*>.*?</system-reminder>|<ide_opened_file\b[^>]*>.*?</ide_opened_file>|<command-message\b[^>]*>.*?</command-message>|<context-window-usage\b[^>]*>.*?</context-window-usage>",
    )
});

fn is_noise_tool(name: &str) -> bool {
    let folded: String = name
        .chars()
        .filter(|character| *character != '_' && *character != '-')
        .flat_map(char::to_lowercase)
        .collect();
    NOISE_TOOLS.contains(&folded.as_str())
}

/// The text and image placeholders of a tool result, at most about `max` characters: a huge
/// output is never copied whole.
fn tool_text(content: &[Block], max: usize) -> String {
    let mut out = String::new();
    let mut left = max;
    for block in content {
        if left == 0 {
            break;
        }
        let placeholder;
        let part = match block {
            Block::Text(text) => clip_chars(text, left),
            Block::Image { mime } => {
                placeholder = format!("[image: {mime}]");
                placeholder.as_str()
            }
            _ => continue,
        };
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(part);
        left = left.saturating_sub(part.len() + 1);
    }
    out
}

/// The [`KEPT_ARGUMENTS`], plus `todo`: the `TODO`/`FIXME` lines of a written file or an edit's
/// new text (an open item left in the code), when there are any.
fn kept_arguments(arguments: &Value) -> Value {
    let Value::Object(map) = arguments else {
        return Value::Null;
    };
    let mut kept: serde_json::Map<String, Value> = KEPT_ARGUMENTS
        .iter()
        .filter_map(|key| {
            map.get(*key)
                .map(|value| ((*key).to_string(), value.clone()))
        })
        .collect();
    let todos: Vec<Value> = WRITTEN_TEXT_ARGUMENTS
        .iter()
        .filter_map(|key| map.get(*key).and_then(Value::as_str))
        .flat_map(str::lines)
        .filter_map(todo_line)
        .take(MAX_TODO_LINES)
        .map(Value::String)
        .collect();
    if !todos.is_empty() {
        kept.insert("todo".into(), Value::Array(todos));
    }
    Value::Object(kept)
}

/// The arguments holding text a tool writes into a file.
const WRITTEN_TEXT_ARGUMENTS: [&str; 4] = ["content", "newText", "new_string", "new_str"];
const MAX_TODO_LINES: usize = 3;

static TODO_MARK_RE: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"(?-u:\b)(?:TODO|FIXME)(?-u:\b)(?:\([^)]*\))?:?\s*"));

/// `x handling` of a `// TODO: x handling` line.
fn todo_line(line: &str) -> Option<String> {
    let found = TODO_MARK_RE.find(line)?;
    let rest = sanitize(clip_chars(&line[found.end()..], 200));
    (rest.chars().count() >= 3).then_some(rest)
}

/// A line that says what went wrong: a compiler's `error[E0502]: …`, a panic, an exception, a
/// failed assertion or test.
static ERROR_LINE_RE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"(?i)^\s*(?:error(?:\[\w+\])?:|fatal:|thread '[^']*' panicked|panicked at|assertion|traceback|npm err!|fail(?:ed)?:|[\w.]*(?:error|exception)(?-u:\b)\s*:)",
    )
});

/// What a failed tool's output says went wrong: its first [`ERROR_LINE_RE`] line, else its first
/// non-empty line (sanitized, clipped).
pub(crate) fn error_line(raw: &str) -> String {
    let line = raw
        .lines()
        .find(|line| ERROR_LINE_RE.is_match(line))
        .or_else(|| raw.lines().find(|line| !line.trim().is_empty()))
        .unwrap_or("");
    sanitize(clip_chars(line, 300))
}

/// Whether `name` is `session_recall`, under its own or the original Unipi's name: its answers
/// are copies of older content, so they are neither summarized nor indexed again.
pub(crate) fn is_recall_tool(name: &str) -> bool {
    name == "session_recall" || name == "vcc_recall"
}

impl NormBlock {
    pub(super) fn new(kind: BlockKind, text: String, source: usize) -> Self {
        Self {
            kind,
            text,
            tool: None,
            arguments: None,
            is_error: false,
            head: String::new(),
            source,
        }
    }
}

#[cfg(test)]
impl NormBlock {
    /// A call of tool `name` with `arguments`, from entry `source`.
    pub(super) fn tool_call(name: &str, arguments: Value, source: usize) -> Self {
        NormBlock {
            tool: Some(name.into()),
            arguments: Some(arguments),
            ..NormBlock::new(BlockKind::ToolCall, name.into(), source)
        }
    }

    /// A failed result of `tool` whose first line is `head`, from entry `source`.
    pub(super) fn tool_error(tool: &str, head: &str, source: usize) -> Self {
        NormBlock {
            tool: Some(tool.into()),
            is_error: true,
            head: head.into(),
            ..NormBlock::new(BlockKind::ToolResult, head.into(), source)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::compactor::entries::parse_entry;
    use crate::test_table::check_table;

    fn entries(lines: &[serde_json::Value]) -> Vec<SessionEntry> {
        lines.iter().filter_map(parse_entry).collect()
    }

    fn message(id: &str, message: serde_json::Value) -> serde_json::Value {
        json!({"type":"message","id":id,"parentId":null,"message":message})
    }

    fn kinds_and_texts(blocks: &[NormBlock]) -> Vec<(BlockKind, String)> {
        blocks.iter().map(|b| (b.kind, b.text.clone())).collect()
    }

    #[test]
    fn normalizes_each_role() {
        let all = entries(&[
            message("1", json!({"role":"user","content":"Fix  the\r\nbug\u{7}"})),
            message(
                "2",
                json!({"role":"assistant","content":[
                {"type":"thinking","thinking":"let me think"},
                {"type":"text","text":"On it."},
                {"type":"toolCall","id":"c","name":"read","arguments":{"path":"src/a.rs","offset":3}}]}),
            ),
            message(
                "3",
                json!({"role":"toolResult","toolName":"read","toolCallId":"c","isError":true,
                "content":[{"type":"text","text":"\n\nENOENT: no such file\nmore"}]}),
            ),
            message(
                "4",
                json!({"role":"user","content":[{"type":"image","mimeType":"image/png","data":"AA"}]}),
            ),
            message("5", json!({"role":"user","content":""})),
            message(
                "6",
                json!({"role":"bashExecution","command":"ls","output":"a","exitCode":0}),
            ),
            json!({"type":"custom_message","id":"7","parentId":"6","customType":"note","content":"hi","display":true}),
            message("8", json!({"role":"system","content":"prompt"})),
        ]);
        let refs: Vec<&SessionEntry> = all.iter().collect();
        let blocks = normalize(&refs);
        assert_eq!(
            kinds_and_texts(&blocks),
            [
                (BlockKind::User, "Fix the bug".into()),
                (BlockKind::Thinking, String::new()),
                (BlockKind::Assistant, "On it.".into()),
                (BlockKind::ToolCall, "read".into()),
                (BlockKind::ToolResult, "ENOENT: no such file more".into()),
                (BlockKind::User, "[image: image/png]".into()),
                (BlockKind::User, String::new()),
                (BlockKind::ToolCall, "bash".into()),
                (BlockKind::ToolResult, "a".into()),
                (BlockKind::Custom, "hi".into()),
            ]
        );
        assert_eq!(blocks[4].head, "ENOENT: no such file");
        assert!(blocks[4].is_error);
        assert_eq!(blocks[4].source, 2);
        assert_eq!(blocks[3].arguments, Some(json!({"path":"src/a.rs"})));
        assert_eq!(blocks[7].arguments, Some(json!({"command":"ls"})));
    }

    #[test]
    fn normalize_of_nothing_is_nothing() {
        assert!(normalize(&[]).is_empty());
        assert!(filter_noise(Vec::new(), &[]).is_empty());
    }

    #[test]
    fn huge_tool_output_is_clipped() {
        let big = "x".repeat(MAX_TOOL_TEXT_CHARS * 10);
        let all = entries(&[message(
            "1",
            json!({"role":"toolResult","toolName":"bash","isError":true,"content":[{"type":"text","text":big}]}),
        )]);
        let refs: Vec<&SessionEntry> = all.iter().collect();
        let blocks = normalize(&refs);
        assert_eq!(blocks[0].text.len(), MAX_TOOL_TEXT_CHARS);
        assert_eq!(blocks[0].head.len(), 300);
    }

    fn block(kind: BlockKind, text: &str, tool: Option<&str>) -> NormBlock {
        let mut block = NormBlock::new(kind, text.into(), 0);
        block.tool = tool.map(str::to_string);
        block
    }

    #[test]
    fn filter_drops_noise() {
        let cases: [(NormBlock, Option<&str>); 12] = [
            (block(BlockKind::Thinking, "hm", None), None),
            (
                block(BlockKind::ToolCall, "TodoWrite", Some("TodoWrite")),
                None,
            ),
            (block(BlockKind::ToolResult, "ok", Some("ask_user")), None),
            (
                block(BlockKind::ToolCall, "read", Some("read")),
                Some("read"),
            ),
            (
                block(BlockKind::User, "Continue from where you left off.", None),
                None,
            ),
            (block(BlockKind::User, "No response requested.", None), None),
            (
                block(
                    BlockKind::User,
                    "<system-reminder>be nice</system-reminder> ",
                    None,
                ),
                None,
            ),
            (
                block(
                    BlockKind::User,
                    "<ide_opened_file>x</ide_opened_file> Fix it",
                    None,
                ),
                Some("Fix it"),
            ),
            (block(BlockKind::User, "please SKIPME now", None), None),
            (
                block(BlockKind::Custom, "go on", Some(AUTO_CONTINUE_TYPE)),
                None,
            ),
            (
                block(BlockKind::Custom, "note", Some("other")),
                Some("note"),
            ),
            (block(BlockKind::Assistant, "Done.", None), Some("Done.")),
        ];
        for (input, expected) in cases {
            let label = format!("{input:?}");
            let kept = filter_noise(vec![input], &["SKIPME".to_string()]);
            assert_eq!(kept.first().map(|b| b.text.as_str()), expected, "{label}");
        }
    }

    #[test]
    fn sanitize_and_clip() {
        let cases = [
            ("  a\r\n\tb  ", "a b"),
            ("\u{0}x\u{1b}y", "xy"),
            ("", ""),
            ("one\n\ntwo", "one two"),
        ];
        check_table(cases, |input| sanitize(input));
        assert_eq!(clip_chars("héllo", 2), "hé");
        assert_eq!(clip_chars("hi", 5), "hi");
        assert_eq!(clip_sentence("short", 10), "short");
        assert_eq!(
            clip_sentence("First part. Second part is long", 20),
            "First part.…"
        );
        assert_eq!(clip_sentence("aaaa bbbb cccc dddd", 12), "aaaa bbbb…");
    }
}

//! The seed: a frozen, deterministic projection of the parent conversation that the delegate
//! child starts from, serialized as canonical JSON (`seed.json`) whose sha256 the manifest, the
//! child and the result all carry.
//!
//! The conversation is read from the parent's Pi session file (JSONL, a tree of entries linked by
//! `id`/`parentId`), not from the live process: the file is what Pi itself rebuilds context from,
//! it needs no round trip through the bridge, and the same bytes give the same seed in any
//! process. The active branch is the path from the last entry to the root, with the latest
//! compaction and `context_edit`s applied as Pi does. When the last entry is the assistant
//! message that is calling `bg_delegate` right now, its parent is used instead, so sibling
//! delegates of one batch see identical history.
//!
//! User and assistant text is kept verbatim; tool calls keep their canonical arguments; tool
//! results keep a preview of at most [`TOOL_RESULT_PREVIEW_BYTES`] with their full length and
//! sha256; thinking, images and unknown roles become counted `omitted_activity` entries. When
//! the entries exceed the seed budget the oldest are dropped into one leading `omitted_earlier`
//! entry that counts them — a recorded omission, never a silent one.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde_json::{Map, Value, json};

use super::artifacts::{Limits, Route};
pub(crate) use super::canonical::canonical_json;
pub use super::canonical::sha256_hex;
use super::errors::{DelegateError, DelegateErrorCode};

/// The seed's schema name.
pub(crate) const SEED_SCHEMA: &str = "unipi.delegate-seed.v1";
/// The projection policy's name (what is kept verbatim, what only counted).
pub(crate) const PROJECTION_POLICY: &str = "unipi-visible-conversation-v1";
/// The most of one tool result's text the seed carries.
pub(crate) const TOOL_RESULT_PREVIEW_BYTES: usize = 4096;
/// The tool whose active call is excluded from the seed.
pub const DELEGATE_TOOL: &str = "bg_delegate";

/// What a seed is built from.
#[derive(Debug, Clone)]
pub struct SeedInput<'a> {
    pub task_id: &'a str,
    pub nonce: &'a str,
    pub cwd: &'a Path,
    pub route: &'a Route,
    /// The question, verbatim.
    pub directive: &'a str,
    /// The parent's session file.
    pub session_file: &'a Path,
    /// The `bg_delegate` tool call id, to exclude the message making it.
    pub active_call_id: Option<&'a str>,
    /// The most bytes the projected entries may take.
    pub budget_bytes: usize,
    pub limits: Limits,
}

/// A serialized seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Seed {
    /// Canonical JSON, no trailing newline: exactly what `seed.json` holds.
    pub bytes: Vec<u8>,
    pub sha256: String,
    pub accounting: Accounting,
}

/// What the projection kept and dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Accounting {
    /// Messages on the active branch.
    pub messages: usize,
    /// Entries in the seed (after the budget).
    pub entries: usize,
    /// Entries dropped, oldest first, to fit the budget.
    pub dropped_entries: usize,
    pub dropped_bytes: usize,
    /// Lines of the session file that were not JSON (a line being written is one).
    pub malformed_lines: usize,
    /// The entry the branch was taken from.
    pub leaf_id: Option<String>,
}

/// Reads the parent's session file and builds the seed.
pub fn build_seed(input: &SeedInput<'_>) -> Result<Seed, DelegateError> {
    let text = std::fs::read_to_string(input.session_file).map_err(|err| {
        DelegateError::new(
            DelegateErrorCode::SeedProjectionFailed,
            format!(
                "cannot read the parent session file {}: {err}",
                input.session_file.display()
            ),
        )
    })?;
    let (records, malformed) = parse_session(&text);
    let branch = active_branch(&records, input.active_call_id);
    let mut entries = project(&branch.messages);
    let (dropped_entries, dropped_bytes) = bound(&mut entries, input.budget_bytes);
    let accounting = Accounting {
        messages: branch.messages.len(),
        entries: entries.len(),
        dropped_entries,
        dropped_bytes,
        malformed_lines: malformed,
        leaf_id: branch.leaf_id.clone(),
    };
    let value = json!({
        "schema_version": SEED_SCHEMA,
        "task_id": input.task_id,
        "launch_nonce": input.nonce,
        "cwd": input.cwd.display().to_string(),
        "route": input.route.to_json(),
        "parent_session_file": input.session_file.display().to_string(),
        "parent_leaf_id": branch.leaf_id,
        "directive": {
            "text": input.directive,
            "sha256": sha256_hex(input.directive.as_bytes()),
            "authority": "explicit_text",
        },
        "conversation_projection": {
            "policy": PROJECTION_POLICY,
            "tool_result_preview_bytes": TOOL_RESULT_PREVIEW_BYTES,
            "budget_bytes": input.budget_bytes,
            "entries": entries,
            "accounting": {
                "messages": accounting.messages,
                "entries": accounting.entries,
                "dropped_entries": accounting.dropped_entries,
                "dropped_bytes": accounting.dropped_bytes,
                "malformed_lines": accounting.malformed_lines,
            },
        },
        "limits": input.limits.to_json(),
    });
    let bytes = canonical_json(&value).into_bytes();
    let sha256 = sha256_hex(&bytes);
    Ok(Seed {
        bytes,
        sha256,
        accounting,
    })
}

// --- helpers -----------------------------------------------------------------------------------

/// The session's records (header excluded) and how many lines were not JSON objects.
fn parse_session(text: &str) -> (Vec<Map<String, Value>>, usize) {
    let mut records = Vec::new();
    let mut malformed = 0;
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(record)) => {
                if record.get("type").and_then(Value::as_str) != Some("session") {
                    records.push(record);
                }
            }
            _ => malformed += 1,
        }
    }
    (records, malformed)
}

/// The messages of the active branch, in order, as `(role, message)` pairs ready to project.
struct Branch {
    leaf_id: Option<String>,
    messages: Vec<Map<String, Value>>,
}

fn active_branch(records: &[Map<String, Value>], active_call_id: Option<&str>) -> Branch {
    fn id_of(record: &Map<String, Value>) -> Option<&str> {
        record.get("id").and_then(Value::as_str)
    }
    fn parent_of(record: &Map<String, Value>) -> Option<&str> {
        record.get("parentId").and_then(Value::as_str)
    }
    let by_id: HashMap<&str, usize> = records
        .iter()
        .enumerate()
        .filter_map(|(index, record)| id_of(record).map(|id| (id, index)))
        .collect();
    // Version-1 sessions have no tree: the file order is the branch.
    let path: Vec<usize> = if by_id.is_empty() {
        (0..records.len()).collect()
    } else {
        let mut leaf = records.iter().rposition(|record| id_of(record).is_some());
        if let Some(index) = leaf
            && is_active_delegate_call(&records[index], active_call_id)
        {
            leaf = parent_of(&records[index]).and_then(|id| by_id.get(id).copied());
        }
        let mut path = Vec::new();
        let mut seen = std::collections::HashSet::new();
        while let Some(index) = leaf {
            // A cycle would be a corrupt file; stop rather than loop.
            if !seen.insert(index) {
                break;
            }
            path.push(index);
            leaf = parent_of(&records[index]).and_then(|id| by_id.get(id).copied());
        }
        path.reverse();
        path
    };
    let leaf_id = path
        .last()
        .and_then(|&index| id_of(&records[index]))
        .map(str::to_string);
    let selected = apply_compaction(records, &path);
    let edits = latest_edits(records, &path);
    let mut messages = Vec::new();
    for index in selected {
        let record = &records[index];
        let kind = record.get("type").and_then(Value::as_str).unwrap_or("");
        let message = match kind {
            "message" => record.get("message").and_then(Value::as_object).cloned(),
            "compaction" => Some(summary_message("compaction", record.get("summary"))),
            "branch_summary" => Some(summary_message("branch_summary", record.get("summary"))),
            "custom_message" => {
                let mut message = Map::new();
                message.insert("role".into(), json!("custom"));
                message.insert(
                    "content".into(),
                    record.get("content").cloned().unwrap_or(Value::Null),
                );
                Some(message)
            }
            _ => None,
        };
        let Some(mut message) = message else {
            continue;
        };
        if let Some(edit) = id_of(record).and_then(|id| edits.get(id)) {
            match edit {
                Value::Null => continue,
                replacement => {
                    message.insert("content".into(), replacement.clone());
                }
            }
        }
        messages.push(message);
    }
    Branch { leaf_id, messages }
}

fn is_active_delegate_call(record: &Map<String, Value>, active_call_id: Option<&str>) -> bool {
    let Some(message) = record.get("message") else {
        return false;
    };
    if message.get("role").and_then(Value::as_str) != Some("assistant") {
        return false;
    }
    let blocks = message.get("content").and_then(Value::as_array);
    blocks.into_iter().flatten().any(|block| {
        block.get("type").and_then(Value::as_str) == Some("toolCall")
            && match active_call_id {
                Some(id) => block.get("id").and_then(Value::as_str) == Some(id),
                None => block.get("name").and_then(Value::as_str) == Some(DELEGATE_TOOL),
            }
    })
}

fn summary_message(source: &str, summary: Option<&Value>) -> Map<String, Value> {
    let mut message = Map::new();
    message.insert("role".into(), json!(source));
    message.insert(
        "content".into(),
        json!(summary.and_then(Value::as_str).unwrap_or("")),
    );
    message
}

/// The indices of `path` Pi would build context from: with a compaction on the path, the
/// compaction itself, the non-system entries it kept, then everything after it.
fn apply_compaction(records: &[Map<String, Value>], path: &[usize]) -> Vec<usize> {
    let is_compaction =
        |index: usize| records[index].get("type").and_then(Value::as_str) == Some("compaction");
    let Some(at) = path.iter().rposition(|&index| is_compaction(index)) else {
        return path.to_vec();
    };
    let compaction = path[at];
    let first_kept = records[compaction]
        .get("firstKeptEntryId")
        .and_then(Value::as_str);
    let kept_from = path[..at].iter().position(|&index| {
        records[index].get("id").and_then(Value::as_str) == first_kept && first_kept.is_some()
    });
    let mut selected = vec![compaction];
    if let Some(from) = kept_from {
        selected.extend(path[from..at].iter().copied().filter(|&index| {
            let role = records[index]
                .get("message")
                .and_then(|m| m.get("role"))
                .and_then(Value::as_str);
            role != Some("system")
        }));
    }
    selected.extend_from_slice(&path[at + 1..]);
    selected
}

/// The latest `context_edit` replacement per target on the path (`Null` omits the target).
fn latest_edits(records: &[Map<String, Value>], path: &[usize]) -> HashMap<String, Value> {
    let mut edits = HashMap::new();
    for &index in path {
        let record = &records[index];
        if record.get("type").and_then(Value::as_str) != Some("context_edit") {
            continue;
        }
        if let Some(target) = record.get("targetId").and_then(Value::as_str) {
            let replacement = record.get("replacement").cloned().unwrap_or(Value::Null);
            edits.insert(target.to_string(), replacement);
        }
    }
    edits
}

/// An omission being accumulated: consecutive omitted blocks become one entry.
#[derive(Default)]
struct OmittedRun {
    first: Option<usize>,
    last: usize,
    bytes: usize,
    counts: BTreeMap<String, usize>,
}

impl OmittedRun {
    fn add(&mut self, ordinal: usize, what: &str, bytes: usize) {
        self.first.get_or_insert(ordinal);
        self.last = ordinal;
        self.bytes += bytes;
        *self.counts.entry(what.to_string()).or_default() += 1;
    }

    fn flush(&mut self, entries: &mut Vec<Value>) {
        if let Some(first) = self.first.take() {
            entries.push(json!({
                "kind": "omitted_activity",
                "at": [first, self.last],
                "bytes": self.bytes,
                "counts": std::mem::take(&mut self.counts),
            }));
            self.bytes = 0;
        }
    }
}

/// The seed entries of the branch's messages.
fn project(messages: &[Map<String, Value>]) -> Vec<Value> {
    let mut entries = Vec::new();
    let mut omitted = OmittedRun::default();
    for (ordinal, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let content = message.get("content").cloned().unwrap_or(Value::Null);
        match role {
            "user" | "assistant" | "custom" | "compaction" | "branch_summary" => {
                for block in blocks(&content) {
                    project_block(role, ordinal, &block, &mut entries, &mut omitted);
                }
            }
            "toolResult" => {
                let text = text_of(&content);
                let preview = cut_to(&text, TOOL_RESULT_PREVIEW_BYTES);
                omitted.flush(&mut entries);
                entries.push(json!({
                    "kind": "tool_result",
                    "ordinal": ordinal,
                    "tool_name": message.get("toolName").cloned().unwrap_or(Value::Null),
                    "tool_call_id": message.get("toolCallId").cloned().unwrap_or(Value::Null),
                    "is_error": message.get("isError").and_then(Value::as_bool).unwrap_or(false),
                    "bytes": text.len(),
                    "sha256": sha256_hex(text.as_bytes()),
                    "complete": preview.len() == text.len(),
                    "text": preview,
                }));
            }
            // The system prompt is the child's own; anything else Pi adds is counted, not kept.
            "system" => {}
            other => {
                let bytes = canonical_json(&content).len();
                omitted.add(ordinal, &format!("role:{other}"), bytes);
            }
        }
    }
    omitted.flush(&mut entries);
    entries
}

fn project_block(
    role: &str,
    ordinal: usize,
    block: &Value,
    entries: &mut Vec<Value>,
    omitted: &mut OmittedRun,
) {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "text" => {
            let text = block.get("text").and_then(Value::as_str).unwrap_or("");
            if text.is_empty() {
                return;
            }
            omitted.flush(entries);
            entries.push(json!({"kind": "text", "ordinal": ordinal, "role": role, "text": text}));
        }
        "toolCall" => {
            omitted.flush(entries);
            let arguments = block.get("arguments").cloned().unwrap_or(json!({}));
            entries.push(json!({
                "kind": "tool_call",
                "ordinal": ordinal,
                "tool_name": block.get("name").cloned().unwrap_or(Value::Null),
                "tool_call_id": block.get("id").cloned().unwrap_or(Value::Null),
                "arguments": canonical_json(&arguments),
            }));
        }
        // Left out, counted by the size of the field that holds them.
        "thinking" => omitted.add(ordinal, "assistant_thinking", str_len(block, "thinking")),
        "image" => omitted.add(ordinal, "image", str_len(block, "data")),
        other => {
            let bytes = canonical_json(block).len();
            omitted.add(ordinal, &format!("block:{other}"), bytes);
        }
    }
}

/// The length of `block`'s string field `field`; 0 when there is none.
fn str_len(block: &Value, field: &str) -> usize {
    block.get(field).and_then(Value::as_str).map_or(0, str::len)
}

/// Content as blocks: a plain string is one text block.
fn blocks(content: &Value) -> Vec<Value> {
    match content {
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        Value::Array(items) => items.clone(),
        _ => Vec::new(),
    }
}

/// The text blocks of `content`, joined with newlines.
fn text_of(content: &Value) -> String {
    blocks(content)
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// At most `max` bytes of `text`, cut on a character boundary.
fn cut_to(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// Drops the oldest entries until the rest fit `budget` bytes (canonical size), replacing them
/// with one `omitted_earlier` entry that counts them. Returns what was dropped.
fn bound(entries: &mut Vec<Value>, budget: usize) -> (usize, usize) {
    let sizes: Vec<usize> = entries
        .iter()
        .map(|e| canonical_json(e).len() + 1)
        .collect();
    let total: usize = sizes.iter().sum();
    if total <= budget {
        return (0, 0);
    }
    // Room for the marker itself.
    let marker_room = 160;
    let mut kept = total;
    let mut cut = 0;
    while cut < entries.len() && kept + marker_room > budget {
        kept -= sizes[cut];
        cut += 1;
    }
    let dropped_bytes = total - kept;
    entries.drain(..cut);
    entries.insert(
        0,
        json!({"kind": "omitted_earlier", "entries": cut, "bytes": dropped_bytes}),
    );
    (cut, dropped_bytes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;
    use crate::delegate::artifacts::RouteOrigin;

    fn route() -> Route {
        Route {
            provider: "p".into(),
            model: "m".into(),
            context_window_tokens: 128_000,
            origin: RouteOrigin::ParentCurrent,
        }
    }

    /// A session file: header, then `entries` chained by parentId.
    fn session(entries: &[Value]) -> String {
        let mut lines = vec![json!({"type": "session", "version": 3, "id": "s"}).to_string()];
        let mut parent = Value::Null;
        for (index, entry) in entries.iter().enumerate() {
            let mut entry = entry.clone();
            let id = format!("e{index}");
            entry["id"] = json!(id);
            if entry.get("parentId").is_none() {
                entry["parentId"] = parent.clone();
            }
            parent = json!(id);
            lines.push(entry.to_string());
        }
        lines.join("\n") + "\n"
    }

    fn user(text: &str) -> Value {
        json!({"type": "message", "message": {"role": "user", "content": text}})
    }

    fn assistant(blocks: Value) -> Value {
        json!({"type": "message", "message": {"role": "assistant", "content": blocks}})
    }

    fn tool_result(id: &str, text: &str) -> Value {
        json!({"type": "message", "message": {"role": "toolResult", "toolCallId": id,
               "toolName": "read", "content": [{"type": "text", "text": text}], "isError": false}})
    }

    fn seed_of(text: &str, call: Option<&str>, budget: usize) -> (Seed, Value) {
        let dir = tempfile::tempdir().unwrap();
        seed_in(dir.path(), text, call, budget)
    }

    /// Task `d1` in `/w` asking "why?" about `session_file`.
    fn input<'a>(
        route: &'a Route,
        session_file: &'a Path,
        call: Option<&'a str>,
        budget: usize,
    ) -> SeedInput<'a> {
        SeedInput {
            task_id: "d1",
            nonce: "n1",
            cwd: Path::new("/w"),
            route,
            directive: "why?",
            session_file,
            active_call_id: call,
            budget_bytes: budget,
            limits: Limits::default(),
        }
    }

    /// The seed of `text` saved as `<dir>/s.jsonl`.
    fn seed_in(dir: &Path, text: &str, call: Option<&str>, budget: usize) -> (Seed, Value) {
        let file = dir.join("s.jsonl");
        std::fs::write(&file, text).unwrap();
        let route = route();
        let seed = build_seed(&input(&route, &file, call, budget)).unwrap();
        let value = serde_json::from_slice(&seed.bytes).unwrap();
        (seed, value)
    }

    fn kinds(value: &Value) -> Vec<String> {
        value["conversation_projection"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| match e["kind"].as_str().unwrap() {
                "text" => format!(
                    "{}:{}",
                    e["role"].as_str().unwrap(),
                    e["text"].as_str().unwrap()
                ),
                "tool_call" => format!("call:{}", e["tool_name"].as_str().unwrap()),
                "tool_result" => format!("result:{}", e["bytes"]),
                other => other.to_string(),
            })
            .collect()
    }

    #[test]
    fn projection_table() {
        let big = "x".repeat(TOOL_RESULT_PREVIEW_BYTES + 10);
        // (name, session entries, active call id, projected kinds)
        type Case<'a> = (&'a str, Vec<Value>, Option<&'a str>, Vec<&'a str>);
        let cases: Vec<Case> = vec![
            (
                "text is verbatim, thinking counted",
                vec![
                    user("hi"),
                    assistant(json!([{"type": "thinking", "thinking": "hmm"},
                                     {"type": "text", "text": "hello"}])),
                ],
                None,
                vec!["user:hi", "omitted_activity", "assistant:hello"],
            ),
            (
                "tool calls and results kept",
                vec![
                    user("read it"),
                    assistant(json!([{"type": "toolCall", "id": "c1", "name": "read",
                                     "arguments": {"path": "a"}}])),
                    tool_result("c1", "abc"),
                    assistant(json!([{"type": "text", "text": "done"}])),
                ],
                None,
                vec!["user:read it", "call:read", "result:3", "assistant:done"],
            ),
            (
                "the active bg_delegate call is excluded",
                vec![
                    user("ask a delegate"),
                    assistant(json!([{"type": "text", "text": "delegating"},
                                     {"type": "toolCall", "id": "c9", "name": "bg_delegate",
                                      "arguments": {}}])),
                ],
                Some("c9"),
                vec!["user:ask a delegate"],
            ),
            (
                "without a call id, a bg_delegate leaf is excluded",
                vec![
                    user("q"),
                    assistant(
                        json!([{"type": "toolCall", "id": "c9", "name": "bg_delegate",
                                      "arguments": {}}]),
                    ),
                ],
                None,
                vec!["user:q"],
            ),
            (
                "a large tool result is previewed with its full size",
                vec![tool_result("c1", &big)],
                None,
                vec!["result:4106"],
            ),
            (
                "compaction keeps its summary and what follows",
                vec![
                    user("old"),
                    json!({"type": "compaction", "summary": "sum", "firstKeptEntryId": "e2"}),
                    user("new"),
                ],
                None,
                vec!["compaction:sum", "user:new"],
            ),
            (
                "a context edit omits its target",
                vec![
                    user("secret"),
                    user("kept"),
                    json!({"type": "context_edit", "targetId": "e0", "replacement": null}),
                ],
                None,
                vec!["user:kept"],
            ),
        ];
        for (name, entries, call, want) in cases {
            let (_, value) = seed_of(&session(&entries), call, 1 << 20);
            assert_eq!(kinds(&value), want, "{name}");
        }
    }

    #[test]
    fn only_the_latest_branch_is_projected() {
        let text = session(&[
            user("root"),
            assistant(json!([{"type": "text", "text": "abandoned"}])),
            json!({"type": "message", "parentId": "e0",
                   "message": {"role": "assistant",
                               "content": [{"type": "text", "text": "taken"}]}}),
        ]);
        let (seed, value) = seed_of(&text, None, 1 << 20);
        assert_eq!(kinds(&value), ["user:root", "assistant:taken"]);
        assert_eq!(seed.accounting.leaf_id.as_deref(), Some("e2"));
    }

    #[test]
    fn the_budget_drops_the_oldest_entries_and_says_so() {
        let entries: Vec<Value> = (0..50)
            .map(|i| user(&format!("message {i:02} {}", "y".repeat(100))))
            .collect();
        let text = session(&entries);
        let (full, _) = seed_of(&text, None, 1 << 20);
        assert_eq!(full.accounting.dropped_entries, 0);
        let budget = 2000;
        let (bounded, value) = seed_of(&text, None, budget);
        let list = value["conversation_projection"]["entries"]
            .as_array()
            .unwrap();
        let size: usize = list.iter().map(|e| canonical_json(e).len() + 1).sum();
        assert!(size <= budget, "{size} > {budget}");
        assert_eq!(list[0]["kind"], "omitted_earlier");
        assert_eq!(list[0]["entries"], bounded.accounting.dropped_entries);
        assert!(bounded.accounting.dropped_entries > 0);
        // The newest message survives.
        assert!(
            list.last().unwrap()["text"]
                .as_str()
                .unwrap()
                .starts_with("message 49")
        );
    }

    #[test]
    fn the_same_session_gives_the_same_bytes_and_sha() {
        let text = session(&[user("a"), assistant(json!([{"type": "text", "text": "b"}]))]);
        let dir = tempfile::tempdir().unwrap();
        let (one, _) = seed_in(dir.path(), &text, None, 1 << 20);
        let (two, _) = seed_in(dir.path(), &text, None, 1 << 20);
        assert_eq!(one.bytes, two.bytes);
        assert_eq!(one.sha256, two.sha256);
        assert_eq!(one.sha256, sha256_hex(&one.bytes));
        assert!(!one.bytes.ends_with(b"\n"));
        let (other, _) = seed_in(dir.path(), &session(&[user("a!")]), None, 1 << 20);
        assert_ne!(other.sha256, one.sha256);
    }

    #[test]
    fn a_missing_session_file_is_a_projection_failure() {
        let route = route();
        let err = build_seed(&SeedInput {
            directive: "q",
            ..input(&route, Path::new("/nonexistent/s.jsonl"), None, 100)
        })
        .unwrap_err();
        assert_eq!(err.code, DelegateErrorCode::SeedProjectionFailed);
    }
}

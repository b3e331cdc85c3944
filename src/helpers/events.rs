//! Pi's `--mode json` event stream, read from a helper's stdout: one JSON object per LF-terminated
//! line (Pi's documented framing; a CR before the LF is dropped). [`EventParser`] is fed raw bytes
//! as they arrive, so a line may be split anywhere, even inside a UTF-8 character, and it never
//! fails: a line that is not a JSON object becomes [`PiEvent::Malformed`] so the runner can log it
//! and carry on (a helper must not die because one line was cut or an extension printed junk to
//! stdout). Only the events a helper's owner needs are typed; the rest are [`PiEvent::Other`].
//! [`RunSummary`] folds events into what the tools and the dock report: turns, tool uses, final
//! text, usage and cost, error. Both Pi lines are read: 1.x and 0.7x share the event shapes, and
//! usage is accepted in either naming (`input/output/totalTokens` from Pi, `inputTokens/…` from
//! other producers) as the TypeScript original did. `--mode rpc` prints the same events (without
//! the session header) plus `response` records answering the commands written to stdin; they are
//! typed as [`PiEvent::Response`] so the runner can read them from the same stream.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use unipi_widgets::text::truncate_chars;

/// The longest line kept; a longer one is reported as malformed and skipped up to its LF, so a
/// runaway child cannot grow the buffer without bound. `agent_end` repeats every message of the
/// run, so this is generous.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// The longest tool-argument summary kept for the dock and the tool result, in characters.
pub(crate) const ARGS_SUMMARY_CHARS: usize = 80;

/// One event from the stream.
#[derive(Debug, Clone, PartialEq)]
pub enum PiEvent {
    /// The session header, the first record in JSON mode.
    Session {
        id: Option<String>,
    },
    AgentStart,
    /// One low-level agent run ended; Pi may still retry when `will_retry`.
    AgentEnd {
        will_retry: bool,
    },
    /// Pi has no automatic work left (1.x only; 0.7x ends with `agent_end`).
    AgentSettled {
        aborted: bool,
    },
    TurnStart,
    TurnEnd,
    /// A message completed; for assistant messages `usage` and `stop_reason` are set.
    MessageEnd(MessageEnd),
    ToolStart {
        call_id: String,
        tool: String,
        /// A short, one-line summary of the arguments (see [`summarize_args`]).
        args: String,
    },
    ToolEnd {
        call_id: String,
        tool: String,
        is_error: bool,
        /// The text parts of the result, concatenated (unbounded; the transcript shortens it).
        result: String,
    },
    /// An RPC command's answer (`--mode rpc` only).
    Response(Response),
    /// Something failed outside a message: a final retry failure, an extension error, a failed
    /// compaction.
    Error {
        message: String,
    },
    /// A well-formed event this module does not interpret (`message_update`, queue updates, …).
    Other {
        kind: String,
    },
    /// Line `line` (1-based) was not a JSON object with a `type`.
    Malformed {
        line: usize,
        error: String,
    },
}

/// A completed message.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageEnd {
    /// `user`, `assistant`, `toolResult`, … as Pi names it.
    pub role: String,
    /// The text parts, concatenated.
    pub text: String,
    pub usage: Option<Usage>,
    /// `stop`, `toolUse`, `error`, `aborted`, … (assistant messages).
    pub stop_reason: Option<String>,
    pub error: Option<String>,
    /// `provider/model` of an assistant message, when Pi names them.
    pub model: Option<String>,
}

/// The answer to one RPC command.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The command's `id`, when it had one.
    pub id: Option<String>,
    /// The command's `type` (`prompt`, `steer`, `get_state`, …; `parse` for unparsable input).
    pub command: String,
    pub success: bool,
    pub error: Option<String>,
    /// `data`, or `Null`.
    pub data: Value,
}

/// Token counts and cost of one or more model calls; as JSON (the delegate's records) in
/// camelCase with `totalTokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    #[serde(rename = "totalTokens")]
    pub total: u64,
    /// In the provider's currency units as Pi reports them (USD for the built-in models).
    pub cost: f64,
}

impl Usage {
    /// Adds `other` to `self`.
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total += other.total;
        self.cost += other.cost;
    }
}

/// One tool call the helper made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolUse {
    pub call_id: String,
    pub name: String,
    pub args: String,
    /// `None` while it runs.
    pub is_error: Option<bool>,
}

/// What a helper run amounts to so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSummary {
    pub session_id: Option<String>,
    pub turns: u32,
    pub tool_uses: Vec<ToolUse>,
    /// The text of the last assistant message that had any.
    pub final_text: String,
    pub usage: Usage,
    /// The latest unrecovered error; a later successful assistant message clears it (Pi retried).
    pub error: Option<String>,
    /// `agent_end` without a pending retry, or `agent_settled`, was seen.
    pub finished: bool,
    pub malformed_lines: usize,
}

impl RunSummary {
    /// Folds one event in.
    pub fn apply(&mut self, event: &PiEvent) {
        match event {
            PiEvent::Session { id } => self.session_id.clone_from(id),
            PiEvent::TurnEnd => self.turns += 1,
            PiEvent::MessageEnd(message) if message.role == "assistant" => {
                if let Some(usage) = &message.usage {
                    self.usage.add(usage);
                }
                if !message.text.trim().is_empty() {
                    self.final_text.clone_from(&message.text);
                }
                let failed = matches!(message.stop_reason.as_deref(), Some("error" | "aborted"));
                if failed {
                    self.error = Some(
                        message
                            .error
                            .clone()
                            .unwrap_or_else(|| "the model call failed".to_string()),
                    );
                } else {
                    self.error = None;
                }
            }
            PiEvent::ToolStart {
                call_id,
                tool,
                args,
            } => self.tool_uses.push(ToolUse {
                call_id: call_id.clone(),
                name: tool.clone(),
                args: args.clone(),
                is_error: None,
            }),
            PiEvent::ToolEnd {
                call_id, is_error, ..
            } => {
                if let Some(tool_use) = self
                    .tool_uses
                    .iter_mut()
                    .rev()
                    .find(|tool_use| &tool_use.call_id == call_id)
                {
                    tool_use.is_error = Some(*is_error);
                }
            }
            PiEvent::Error { message } => self.error = Some(message.clone()),
            PiEvent::AgentEnd { will_retry } => self.finished |= !will_retry,
            PiEvent::AgentSettled { .. } => self.finished = true,
            PiEvent::Malformed { .. } => self.malformed_lines += 1,
            PiEvent::MessageEnd(_)
            | PiEvent::AgentStart
            | PiEvent::TurnStart
            | PiEvent::Response(_)
            | PiEvent::Other { .. } => {}
        }
    }
}

/// The request id of the task's `prompt` command; its response says whether Pi took the task.
pub const PROMPT_ID: &str = "task";

/// What [`SettleWatch`] asks of the runner after an event.
#[derive(Debug, Clone, PartialEq)]
pub enum SettleStep {
    Nothing,
    /// Write this `get_state` command (it carries `id`) and feed its response back.
    Probe {
        id: String,
        command: String,
    },
    /// The state said busy without new work since: probe again a little later.
    ProbeLater,
    /// The run is over: Pi has nothing left to do automatically.
    Settled,
    /// Pi refused the task (its `prompt` response failed); the text is Pi's error.
    PromptFailed(String),
}

/// Which end marker the child's Pi line has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum EndMarker {
    /// Not known yet (the prompt response has not arrived).
    #[default]
    Unknown,
    /// Pi 1.x: `agent_settled` ends the run (its prompt response carries `data.disposition`).
    Settled,
    /// Pi 0.7x: no `agent_settled`. `agent_end` is printed before Pi decides on an automatic
    /// retry or compaction (`auto_retry_start` / `compaction_start` follow it synchronously), so
    /// an end is confirmed by a `get_state` probe written after it: its response comes after
    /// those follow-ups, and says whether Pi is still streaming or compacting.
    IdleProbe,
}

/// Recognises the end of an RPC run on both Pi lines. Pure: fed every event (responses
/// included), it answers what to do; the runner writes the probes and acts on the end.
#[derive(Debug, Default)]
pub struct SettleWatch {
    marker: EndMarker,
    /// The probe in flight and whether work was seen since it went out.
    probe: Option<(String, bool)>,
    probes_sent: u32,
    /// An end-like event (`agent_end` without retry, …) was seen before the marker was known.
    end_pending: bool,
    settled: bool,
    /// `sessionFile` from the latest `get_state` response.
    session_file: Option<String>,
}

impl SettleWatch {
    pub fn new() -> Self {
        Self::default()
    }

    #[cfg(test)]
    pub(crate) fn marker(&self) -> EndMarker {
        self.marker
    }

    pub(crate) fn is_settled(&self) -> bool {
        self.settled
    }

    /// The session file Pi reported in a `get_state` response, if any.
    pub fn session_file(&self) -> Option<&str> {
        self.session_file.as_deref()
    }

    /// Feeds one event.
    pub fn on_event(&mut self, event: &PiEvent) -> SettleStep {
        if self.settled {
            if let PiEvent::Response(response) = event {
                self.note_state(response);
            }
            return SettleStep::Nothing;
        }
        match event {
            PiEvent::Response(response) => self.on_response(response),
            PiEvent::AgentSettled { .. } => self.settle(),
            PiEvent::AgentEnd { will_retry: false } => self.end_like(),
            PiEvent::AgentEnd { will_retry: true } => {
                self.work();
                SettleStep::Nothing
            }
            // A final retry failure or a compaction that ended: Pi 0.7x may now be idle.
            PiEvent::Error { .. } => self.end_like(),
            PiEvent::Other { kind } if kind == "compaction_end" => self.end_like(),
            PiEvent::AgentStart
            | PiEvent::TurnStart
            | PiEvent::TurnEnd
            | PiEvent::MessageEnd(_)
            | PiEvent::ToolStart { .. }
            | PiEvent::ToolEnd { .. } => {
                self.end_pending = false;
                self.work();
                SettleStep::Nothing
            }
            PiEvent::Other { kind } if is_work(kind) => {
                self.end_pending = false;
                self.work();
                SettleStep::Nothing
            }
            PiEvent::Session { .. } | PiEvent::Other { .. } | PiEvent::Malformed { .. } => {
                SettleStep::Nothing
            }
        }
    }

    /// A new `get_state` probe (after [`SettleStep::ProbeLater`]'s pause).
    pub fn probe(&mut self) -> SettleStep {
        if self.settled {
            return SettleStep::Nothing;
        }
        self.probes_sent += 1;
        let id = format!("settle-{}", self.probes_sent);
        self.probe = Some((id.clone(), false));
        let command = serde_json::json!({ "id": id, "type": "get_state" }).to_string();
        SettleStep::Probe { id, command }
    }

    fn on_response(&mut self, response: &Response) -> SettleStep {
        if response.command == "prompt" && response.id.as_deref() == Some(PROMPT_ID) {
            if !response.success {
                return SettleStep::PromptFailed(
                    response
                        .error
                        .clone()
                        .unwrap_or_else(|| "Pi refused the task".to_string()),
                );
            }
            let disposition = response.data.get("disposition").and_then(Value::as_str);
            self.marker = match disposition {
                Some(_) => EndMarker::Settled,
                None => EndMarker::IdleProbe,
            };
            // An extension command or input handler consumed the prompt: no run follows.
            if disposition == Some("handled") {
                return self.settle();
            }
            if self.end_pending && self.marker == EndMarker::IdleProbe {
                return self.probe();
            }
            return SettleStep::Nothing;
        }
        if response.command != "get_state" {
            return SettleStep::Nothing;
        }
        self.note_state(response);
        let Some((id, work_seen)) = self.probe.take() else {
            return SettleStep::Nothing;
        };
        if response.id.as_deref() != Some(id.as_str()) {
            self.probe = Some((id, work_seen));
            return SettleStep::Nothing;
        }
        if work_seen || self.marker == EndMarker::Settled {
            // New work started after the end-like event; its own end will probe again.
            return SettleStep::Nothing;
        }
        let data = &response.data;
        let flag = |name: &str| data.get(name).and_then(Value::as_bool).unwrap_or(false);
        let pending = data
            .get("pendingMessageCount")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if !response.success || flag("isStreaming") || flag("isCompacting") || pending > 0 {
            SettleStep::ProbeLater
        } else {
            self.settle()
        }
    }

    fn end_like(&mut self) -> SettleStep {
        match self.marker {
            EndMarker::Settled => SettleStep::Nothing,
            EndMarker::IdleProbe => self.probe(),
            EndMarker::Unknown => {
                self.end_pending = true;
                SettleStep::Nothing
            }
        }
    }

    fn work(&mut self) {
        if let Some((_, work_seen)) = &mut self.probe {
            *work_seen = true;
        }
    }

    fn settle(&mut self) -> SettleStep {
        self.settled = true;
        self.probe = None;
        SettleStep::Settled
    }

    fn note_state(&mut self, response: &Response) {
        if response.command == "get_state"
            && let Some(file) = response.data.get("sessionFile").and_then(Value::as_str)
        {
            self.session_file = Some(file.to_string());
        }
    }
}

/// Events that mean Pi is (still, again) working.
fn is_work(kind: &str) -> bool {
    matches!(
        kind,
        "auto_retry_start" | "compaction_start" | "message_start" | "message_update"
    )
}

/// Splits a byte stream into lines and parses each one.
#[derive(Debug, Default)]
pub struct EventParser {
    buffer: Vec<u8>,
    /// Lines seen so far, for [`PiEvent::Malformed`].
    lines: usize,
    /// Inside a line longer than [`MAX_LINE_BYTES`]: drop bytes up to the next LF.
    skipping: bool,
}

impl EventParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the events of every line they complete.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Vec<PiEvent> {
        let mut events = Vec::new();
        while let Some(newline) = bytes.iter().position(|&byte| byte == b'\n') {
            let (head, rest) = bytes.split_at(newline);
            self.push(head, &mut events);
            self.end_line(&mut events);
            bytes = &rest[1..];
        }
        self.push(bytes, &mut events);
        events
    }

    /// Ends the stream: a last line without an LF is parsed too.
    pub fn finish(&mut self) -> Vec<PiEvent> {
        let mut events = Vec::new();
        if !self.buffer.is_empty() || self.skipping {
            self.end_line(&mut events);
        }
        events
    }

    fn push(&mut self, bytes: &[u8], events: &mut Vec<PiEvent>) {
        if self.skipping {
            return;
        }
        if self.buffer.len() + bytes.len() > MAX_LINE_BYTES {
            self.buffer = Vec::new();
            self.skipping = true;
            events.push(PiEvent::Malformed {
                line: self.lines + 1,
                error: format!("line longer than {MAX_LINE_BYTES} bytes; skipped"),
            });
            return;
        }
        self.buffer.extend_from_slice(bytes);
    }

    fn end_line(&mut self, events: &mut Vec<PiEvent>) {
        self.lines += 1;
        let line = std::mem::take(&mut self.buffer);
        if std::mem::take(&mut self.skipping) {
            return;
        }
        let text = String::from_utf8_lossy(&line);
        if let Some(event) = parse_line(self.lines, text.strip_suffix('\r').unwrap_or(&text)) {
            events.push(event);
        }
    }
}

/// Parses line number `line` of the stream; `None` for a blank line.
pub(crate) fn parse_line(line: usize, text: &str) -> Option<PiEvent> {
    if text.trim().is_empty() {
        return None;
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(err) => {
            return Some(PiEvent::Malformed {
                line,
                error: format!("not JSON ({err}): {}", preview(text)),
            });
        }
    };
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        return Some(PiEvent::Malformed {
            line,
            error: format!("not an event object with a \"type\": {}", preview(text)),
        });
    };
    Some(event_from(kind, &value))
}

/// A one-line summary of tool arguments: the argument that says what the call does (the command,
/// the pattern, the path) when there is one, else the compact JSON; at most
/// [`ARGS_SUMMARY_CHARS`] characters.
pub(crate) fn summarize_args(args: &Value) -> String {
    const TELLING_KEYS: [&str; 6] = ["command", "pattern", "query", "url", "path", "file_path"];
    let telling = TELLING_KEYS
        .iter()
        .find_map(|key| args.get(key).and_then(Value::as_str));
    let text = match (telling, args) {
        (Some(text), _) => text.to_string(),
        (None, Value::Null) => String::new(),
        (None, Value::Object(map)) if map.is_empty() => String::new(),
        (None, other) => other.to_string(),
    };
    truncate_chars(
        &text.split_whitespace().collect::<Vec<_>>().join(" "),
        ARGS_SUMMARY_CHARS,
    )
}

/// Reads usage from a Pi `usage` object in either naming; `None` when it has no counts at all.
pub(crate) fn usage_from(value: &Value) -> Option<Usage> {
    let count = |names: &[&str]| {
        names
            .iter()
            .find_map(|name| value.get(name).and_then(Value::as_u64))
    };
    let input = count(&["input", "inputTokens"]);
    let output = count(&["output", "outputTokens"]);
    let total = count(&["totalTokens", "total"]);
    if input.is_none() && output.is_none() && total.is_none() {
        return None;
    }
    let cache_read = count(&["cacheRead", "cacheReadTokens"]).unwrap_or(0);
    let cache_write = count(&["cacheWrite", "cacheWriteTokens"]).unwrap_or(0);
    let (input, output) = (input.unwrap_or(0), output.unwrap_or(0));
    // Pi's `cost` is an object with a `total`; other producers give a plain number.
    let cost = match value.get("cost") {
        Some(Value::Object(cost)) => cost.get("total").and_then(Value::as_f64).unwrap_or(0.0),
        Some(other) => other.as_f64().unwrap_or(0.0),
        None => 0.0,
    };
    Some(Usage {
        input,
        output,
        cache_read,
        cache_write,
        total: total.unwrap_or(input + output + cache_read + cache_write),
        cost,
    })
}

fn event_from(kind: &str, value: &Value) -> PiEvent {
    let text_field = |name: &str| value.get(name).and_then(Value::as_str).map(str::to_string);
    let flag = |name: &str| value.get(name).and_then(Value::as_bool).unwrap_or(false);
    match kind {
        "session" => PiEvent::Session {
            id: text_field("id"),
        },
        "agent_start" => PiEvent::AgentStart,
        "agent_end" => PiEvent::AgentEnd {
            will_retry: flag("willRetry"),
        },
        "agent_settled" => PiEvent::AgentSettled {
            aborted: flag("aborted"),
        },
        "turn_start" => PiEvent::TurnStart,
        "turn_end" => PiEvent::TurnEnd,
        "message_end" => PiEvent::MessageEnd(message_end(value.get("message"))),
        "tool_execution_start" => PiEvent::ToolStart {
            call_id: text_field("toolCallId").unwrap_or_default(),
            tool: text_field("toolName").unwrap_or_default(),
            args: summarize_args(value.get("args").unwrap_or(&Value::Null)),
        },
        "tool_execution_end" => PiEvent::ToolEnd {
            call_id: text_field("toolCallId").unwrap_or_default(),
            tool: text_field("toolName").unwrap_or_default(),
            is_error: flag("isError"),
            result: value
                .get("result")
                .and_then(|result| result.get("content"))
                .map(message_text)
                .unwrap_or_default(),
        },
        "response" => PiEvent::Response(Response {
            id: text_field("id"),
            command: text_field("command").unwrap_or_default(),
            success: flag("success"),
            error: text_field("error"),
            data: value.get("data").cloned().unwrap_or(Value::Null),
        }),
        "auto_retry_end" if !flag("success") => PiEvent::Error {
            message: text_field("finalError")
                .unwrap_or_else(|| "the model call failed after retries".to_string()),
        },
        "extension_error" => PiEvent::Error {
            message: format!(
                "extension {} failed in {}: {}",
                text_field("extensionPath").unwrap_or_default(),
                text_field("event").unwrap_or_default(),
                text_field("error").unwrap_or_default()
            ),
        },
        "compaction_end" if text_field("errorMessage").is_some() => PiEvent::Error {
            message: format!(
                "compaction failed: {}",
                text_field("errorMessage").unwrap_or_default()
            ),
        },
        other => PiEvent::Other {
            kind: other.to_string(),
        },
    }
}

fn message_end(message: Option<&Value>) -> MessageEnd {
    let message = message.unwrap_or(&Value::Null);
    let text_field = |name: &str| {
        message
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let model = match (text_field("provider"), text_field("model")) {
        (Some(provider), Some(model)) => Some(format!("{provider}/{model}")),
        (None, Some(model)) => Some(model),
        _ => None,
    };
    MessageEnd {
        role: text_field("role").unwrap_or_default(),
        text: message_text(message.get("content").unwrap_or(&Value::Null)),
        usage: message.get("usage").and_then(usage_from),
        stop_reason: text_field("stopReason"),
        error: text_field("errorMessage"),
        model,
    }
}

/// The text of a message's `content`: a plain string (user messages) or the concatenated `text`
/// parts of a part list (thinking and tool calls are not text).
fn message_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

fn preview(text: &str) -> String {
    truncate_chars(text, 120)
}

#[cfg(test)]
// A panic is how a test reports failure; the workspace denies unwrap for non-test code.
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::test_table::check_table;

    fn parse_all(bytes: &[u8]) -> Vec<PiEvent> {
        let mut parser = EventParser::new();
        let mut events = parser.feed(bytes);
        events.extend(parser.finish());
        events
    }

    fn summarize(events: &[PiEvent]) -> RunSummary {
        let mut summary = RunSummary::default();
        for event in events {
            summary.apply(event);
        }
        summary
    }

    fn read_fixture(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/pi-json")
            .join(name);
        std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
    }

    #[test]
    fn usage_as_json_is_camel_case_with_total_tokens() {
        let usage = Usage {
            input: 1,
            output: 2,
            cache_read: 3,
            cache_write: 4,
            total: 10,
            cost: 0.5,
        };
        let value = serde_json::to_value(usage).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4,
                               "totalTokens": 10, "cost": 0.5})
        );
        assert_eq!(serde_json::from_value::<Usage>(value).unwrap(), usage);
    }

    #[test]
    fn line_table() {
        let cases: [(&str, Option<PiEvent>); 16] = [
            ("", None),
            ("   ", None),
            (
                r#"{"type":"session","version":3,"id":"abc","cwd":"/x"}"#,
                Some(PiEvent::Session {
                    id: Some("abc".into()),
                }),
            ),
            (r#"{"type":"agent_start"}"#, Some(PiEvent::AgentStart)),
            (
                r#"{"type":"agent_end","messages":[],"willRetry":true}"#,
                Some(PiEvent::AgentEnd { will_retry: true }),
            ),
            (
                r#"{"type":"agent_settled","aborted":false}"#,
                Some(PiEvent::AgentSettled { aborted: false }),
            ),
            (
                r#"{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{"command":"ls   -la\n/tmp"}}"#,
                Some(PiEvent::ToolStart {
                    call_id: "c1".into(),
                    tool: "bash".into(),
                    args: "ls -la /tmp".into(),
                }),
            ),
            (
                r#"{"type":"tool_execution_end","toolCallId":"c1","toolName":"bash","result":{},"isError":true}"#,
                Some(PiEvent::ToolEnd {
                    call_id: "c1".into(),
                    tool: "bash".into(),
                    is_error: true,
                    result: String::new(),
                }),
            ),
            (
                r#"{"type":"tool_execution_end","toolCallId":"c2","toolName":"read","result":{"content":[{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}]},"isError":false}"#,
                Some(PiEvent::ToolEnd {
                    call_id: "c2".into(),
                    tool: "read".into(),
                    is_error: false,
                    result: "ab".into(),
                }),
            ),
            (
                r#"{"id":"p1","type":"response","command":"prompt","success":true,"data":{"disposition":"started"}}"#,
                Some(PiEvent::Response(Response {
                    id: Some("p1".into()),
                    command: "prompt".into(),
                    success: true,
                    error: None,
                    data: json!({"disposition": "started"}),
                })),
            ),
            (
                r#"{"type":"response","command":"parse","success":false,"error":"Failed to parse command"}"#,
                Some(PiEvent::Response(Response {
                    id: None,
                    command: "parse".into(),
                    success: false,
                    error: Some("Failed to parse command".into()),
                    data: Value::Null,
                })),
            ),
            (
                r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"p","model":"m","stopReason":"stop"}}"#,
                Some(PiEvent::MessageEnd(MessageEnd {
                    role: "assistant".into(),
                    text: "ok".into(),
                    usage: None,
                    stop_reason: Some("stop".into()),
                    error: None,
                    model: Some("p/m".into()),
                })),
            ),
            (
                r#"{"type":"auto_retry_end","success":false,"attempt":3,"finalError":"529 overloaded"}"#,
                Some(PiEvent::Error {
                    message: "529 overloaded".into(),
                }),
            ),
            (
                r#"{"type":"auto_retry_end","success":true,"attempt":2}"#,
                Some(PiEvent::Other {
                    kind: "auto_retry_end".into(),
                }),
            ),
            (
                r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"x"}}"#,
                Some(PiEvent::Other {
                    kind: "message_update".into(),
                }),
            ),
            (
                r#"{"type":"message_end","message":{"role":"user","content":"hi"}}"#,
                Some(PiEvent::MessageEnd(MessageEnd {
                    role: "user".into(),
                    text: "hi".into(),
                    usage: None,
                    stop_reason: None,
                    error: None,
                    model: None,
                })),
            ),
        ];
        check_table(cases, |text| parse_line(7, text));
    }

    #[test]
    fn malformed_lines_are_events_not_panics() {
        let cases = [
            ("{not json", "not JSON"),
            ("[1,2]", "\"type\""),
            (r#"{"kind":"agent_start"}"#, "\"type\""),
            ("Warning: extension printed to stdout", "not JSON"),
        ];
        for (text, want) in cases {
            match parse_line(4, text) {
                Some(PiEvent::Malformed { line: 4, error }) => {
                    assert!(error.contains(want), "{text}: {error}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn usage_naming_table() {
        let cases = [
            (
                json!({"input": 10, "output": 5, "cacheRead": 2, "cacheWrite": 1, "totalTokens": 18,
                       "cost": {"input": 0.1, "output": 0.2, "total": 0.3}}),
                Some(Usage {
                    input: 10,
                    output: 5,
                    cache_read: 2,
                    cache_write: 1,
                    total: 18,
                    cost: 0.3,
                }),
            ),
            (
                json!({"inputTokens": 4, "outputTokens": 6, "totalTokens": 10, "cost": 0.5}),
                Some(Usage {
                    input: 4,
                    output: 6,
                    total: 10,
                    cost: 0.5,
                    ..Usage::default()
                }),
            ),
            (
                json!({"input": 3, "output": 4, "total": 7}),
                Some(Usage {
                    input: 3,
                    output: 4,
                    total: 7,
                    ..Usage::default()
                }),
            ),
            // No total: the sum of the parts.
            (
                json!({"inputTokens": 3, "outputTokens": 4, "cacheReadTokens": 1}),
                Some(Usage {
                    input: 3,
                    output: 4,
                    cache_read: 1,
                    total: 8,
                    ..Usage::default()
                }),
            ),
            (json!({"cost": 1.0}), None),
            (json!("lots"), None),
        ];
        check_table(cases, usage_from);
    }

    #[test]
    fn args_summary_table() {
        let long = "x".repeat(200);
        let cases = [
            (
                json!({"path": "src/main.rs", "offset": 3}),
                "src/main.rs".to_string(),
            ),
            (
                json!({"pattern": "fn main", "path": "src"}),
                "fn main".to_string(),
            ),
            (
                json!({"command": "cargo  test\n--lib"}),
                "cargo test --lib".to_string(),
            ),
            (json!({"limit": 3}), r#"{"limit":3}"#.to_string()),
            (json!({}), String::new()),
            (Value::Null, String::new()),
            (json!({"command": long}), format!("{}…", "x".repeat(79))),
        ];
        check_table(cases, summarize_args);
    }

    #[test]
    fn lines_split_anywhere_give_the_same_events() {
        let stream = "{\"type\":\"agent_start\"}\r\n\n{\"type\":\"message_end\",\"message\":\
                      {\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"héllo ✓\"}]}}\n\
                      {\"type\":\"turn_end\"}"
            .as_bytes();
        let whole = parse_all(stream);
        assert_eq!(whole.len(), 3, "{whole:?}");
        assert!(
            matches!(&whole[1], PiEvent::MessageEnd(m) if m.text == "héllo ✓"),
            "{whole:?}"
        );
        // Every split point, including inside the multi-byte characters.
        for split in 0..=stream.len() {
            let mut parser = EventParser::new();
            let mut events = parser.feed(&stream[..split]);
            events.extend(parser.feed(&stream[split..]));
            events.extend(parser.finish());
            assert_eq!(events, whole, "split at {split}");
        }
        // And byte by byte.
        let mut parser = EventParser::new();
        let mut events: Vec<_> = stream.iter().flat_map(|b| parser.feed(&[*b])).collect();
        events.extend(parser.finish());
        assert_eq!(events, whole);
    }

    #[test]
    fn malformed_lines_are_numbered_and_parsing_continues() {
        let events =
            parse_all(b"{\"type\":\"agent_start\"}\nnope\n\xff\xfe\n{\"type\":\"turn_end\"}\n");
        assert_eq!(events.len(), 4, "{events:?}");
        assert!(matches!(events[1], PiEvent::Malformed { line: 2, .. }));
        assert!(matches!(events[2], PiEvent::Malformed { line: 3, .. }));
        assert_eq!(events[3], PiEvent::TurnEnd);
        assert_eq!(summarize(&events).malformed_lines, 2);
    }

    #[test]
    fn summary_keeps_last_text_sums_usage_and_clears_recovered_errors() {
        let lines = [
            r#"{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"503 overloaded","usage":{"input":1,"output":0,"totalTokens":1}}}"#,
            r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Looking."},{"type":"toolCall","id":"c","name":"read"}],"stopReason":"toolUse","usage":{"input":10,"output":2,"totalTokens":12,"cost":{"total":0.25}}}}"#,
            r#"{"type":"turn_end"}"#,
            r#"{"type":"message_end","message":{"role":"toolResult","content":[{"type":"text","text":"file body"}]}}"#,
            r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"Done: "},{"type":"text","text":"42"}],"stopReason":"stop","usage":{"inputTokens":20,"outputTokens":3,"totalTokens":23,"cost":0.5}}}"#,
            r#"{"type":"turn_end"}"#,
            r#"{"type":"agent_end","messages":[],"willRetry":false}"#,
        ];
        let events: Vec<_> = lines
            .iter()
            .enumerate()
            .filter_map(|(i, line)| parse_line(i + 1, line))
            .collect();
        let summary = summarize(&events[..1]);
        assert_eq!(summary.error.as_deref(), Some("503 overloaded"));
        let summary = summarize(&events);
        assert_eq!(summary.error, None);
        assert_eq!(summary.final_text, "Done: 42");
        assert_eq!(summary.turns, 2);
        assert_eq!((summary.usage.input, summary.usage.output), (31, 5));
        assert_eq!(summary.usage.total, 36);
        assert!((summary.usage.cost - 0.75).abs() < 1e-9);
        assert!(summary.finished);
    }

    #[test]
    fn tool_end_marks_the_matching_use() {
        let events = [
            PiEvent::ToolStart {
                call_id: "a".into(),
                tool: "read".into(),
                args: "x".into(),
            },
            PiEvent::ToolStart {
                call_id: "b".into(),
                tool: "bash".into(),
                args: "false".into(),
            },
            PiEvent::ToolEnd {
                call_id: "b".into(),
                tool: "bash".into(),
                is_error: true,
                result: "exit 1".into(),
            },
        ];
        let summary = summarize(&events);
        let flags: Vec<_> = summary.tool_uses.iter().map(|t| t.is_error).collect();
        assert_eq!(flags, [None, Some(true)]);
    }

    #[test]
    fn overlong_line_is_reported_once_and_skipped() {
        let mut parser = EventParser::new();
        let chunk = vec![b'x'; MAX_LINE_BYTES / 2 + 1];
        let mut events = parser.feed(&chunk);
        events.extend(parser.feed(&chunk));
        events.extend(parser.feed(&chunk));
        events.extend(parser.feed(b"\n{\"type\":\"turn_end\"}\n"));
        assert_eq!(events.len(), 2, "{events:?}");
        assert!(matches!(events[0], PiEvent::Malformed { line: 1, .. }));
        assert_eq!(events[1], PiEvent::TurnEnd);
    }

    /// Feeds `lines` (JSON records) to a fresh watch; returns each step as a short string.
    fn settle_steps(lines: &[&str]) -> Vec<String> {
        let mut watch = SettleWatch::new();
        lines
            .iter()
            .enumerate()
            .map(|(i, line)| {
                let event = parse_line(i + 1, line).unwrap();
                match watch.on_event(&event) {
                    SettleStep::Nothing => "-".to_string(),
                    SettleStep::Probe { id, command } => {
                        let command: Value = serde_json::from_str(&command).unwrap();
                        assert_eq!(command, json!({"id": id, "type": "get_state"}));
                        format!("probe {id}")
                    }
                    SettleStep::ProbeLater => "later".to_string(),
                    SettleStep::Settled => "settled".to_string(),
                    SettleStep::PromptFailed(error) => format!("failed: {error}"),
                }
            })
            .collect()
    }

    #[test]
    fn settle_table() {
        const STARTED: &str = r#"{"id":"task","type":"response","command":"prompt","success":true,"data":{"disposition":"started"}}"#;
        const ACCEPTED_LEGACY: &str =
            r#"{"id":"task","type":"response","command":"prompt","success":true}"#;
        const END: &str = r#"{"type":"agent_end","messages":[],"willRetry":false}"#;
        const IDLE_1: &str = r#"{"id":"settle-1","type":"response","command":"get_state","success":true,"data":{"isStreaming":false,"isCompacting":false,"pendingMessageCount":0,"sessionFile":"/s/a.jsonl"}}"#;
        const BUSY_1: &str = r#"{"id":"settle-1","type":"response","command":"get_state","success":true,"data":{"isStreaming":true,"isCompacting":false}}"#;
        const IDLE_2: &str = r#"{"id":"settle-2","type":"response","command":"get_state","success":true,"data":{"isStreaming":false,"isCompacting":false}}"#;
        let cases: Vec<(&str, Vec<&str>, Vec<&str>)> = vec![
            (
                "1.x ends at agent_settled, not agent_end",
                vec![
                    STARTED,
                    r#"{"type":"agent_start"}"#,
                    END,
                    r#"{"type":"agent_settled","aborted":false}"#,
                ],
                vec!["-", "-", "-", "settled"],
            ),
            (
                "1.x: a retrying agent_end is not the end either",
                vec![
                    STARTED,
                    r#"{"type":"agent_end","willRetry":true}"#,
                    r#"{"type":"agent_settled"}"#,
                ],
                vec!["-", "-", "settled"],
            ),
            (
                "a handled prompt starts no run",
                vec![
                    r#"{"id":"task","type":"response","command":"prompt","success":true,"data":{"disposition":"handled"}}"#,
                ],
                vec!["settled"],
            ),
            (
                "a refused prompt",
                vec![
                    r#"{"id":"task","type":"response","command":"prompt","success":false,"error":"No model"}"#,
                ],
                vec!["failed: No model"],
            ),
            (
                "another command's failure is not the prompt's",
                vec![r#"{"type":"response","command":"parse","success":false,"error":"bad"}"#],
                vec!["-"],
            ),
            (
                "0.7x: agent_end, then an idle probe",
                vec![ACCEPTED_LEGACY, r#"{"type":"agent_start"}"#, END, IDLE_1],
                vec!["-", "-", "probe settle-1", "settled"],
            ),
            (
                "0.7x: an auto-retry after agent_end voids the probe",
                vec![
                    ACCEPTED_LEGACY,
                    END,
                    r#"{"type":"auto_retry_start","attempt":1}"#,
                    IDLE_1,
                    r#"{"type":"agent_start"}"#,
                    END,
                    IDLE_2,
                ],
                vec![
                    "-",
                    "probe settle-1",
                    "-",
                    "-",
                    "-",
                    "probe settle-2",
                    "settled",
                ],
            ),
            (
                "0.7x: compaction after agent_end, then its end probes again",
                vec![
                    ACCEPTED_LEGACY,
                    END,
                    r#"{"type":"compaction_start","reason":"threshold"}"#,
                    IDLE_1,
                    r#"{"type":"compaction_end","reason":"threshold","willRetry":false}"#,
                    IDLE_2,
                ],
                vec!["-", "probe settle-1", "-", "-", "probe settle-2", "settled"],
            ),
            (
                "0.7x: still streaming without news: probe again later",
                vec![ACCEPTED_LEGACY, END, BUSY_1],
                vec!["-", "probe settle-1", "later"],
            ),
            (
                "0.7x: a final retry failure ends it",
                vec![
                    ACCEPTED_LEGACY,
                    r#"{"type":"auto_retry_end","success":false,"finalError":"529"}"#,
                    IDLE_1,
                ],
                vec!["-", "probe settle-1", "settled"],
            ),
            (
                "an end before the prompt's answer waits for the line to be known",
                vec![END, ACCEPTED_LEGACY, IDLE_1],
                vec!["-", "probe settle-1", "settled"],
            ),
            (
                "a stale probe answer is ignored",
                vec![ACCEPTED_LEGACY, END, IDLE_2],
                vec!["-", "probe settle-1", "-"],
            ),
        ];
        for (name, lines, want) in cases {
            assert_eq!(settle_steps(&lines), want, "{name}");
        }
    }

    #[test]
    fn settle_watch_keeps_the_session_file_and_the_marker() {
        let mut watch = SettleWatch::new();
        assert_eq!(watch.marker(), EndMarker::Unknown);
        let events = [
            r#"{"id":"task","type":"response","command":"prompt","success":true}"#,
            r#"{"type":"agent_end","willRetry":false}"#,
            r#"{"id":"settle-1","type":"response","command":"get_state","success":true,"data":{"sessionFile":"/s/a.jsonl"}}"#,
        ];
        for (i, line) in events.iter().enumerate() {
            watch.on_event(&parse_line(i + 1, line).unwrap());
        }
        assert_eq!(watch.marker(), EndMarker::IdleProbe);
        assert!(watch.is_settled());
        assert_eq!(watch.session_file(), Some("/s/a.jsonl"));
        // After the end nothing more is asked, but a later state answer still updates the file.
        assert_eq!(watch.probe(), SettleStep::Nothing);
        let later = r#"{"id":"session","type":"response","command":"get_state","success":true,"data":{"sessionFile":"/s/b.jsonl"}}"#;
        assert_eq!(
            watch.on_event(&parse_line(9, later).unwrap()),
            SettleStep::Nothing
        );
        assert_eq!(watch.session_file(), Some("/s/b.jsonl"));
    }

    /// Streams recorded from the real Pi of both lines against the scripted server
    /// (`UNIPI_RECORD_PI_JSON=1 cargo test --test all suite::helpers_pi` rewrites them).
    #[test]
    fn recorded_streams_table() {
        struct Case {
            fixture: &'static str,
            final_text: &'static str,
            tools: &'static [&'static str],
            turns: u32,
        }
        let cases = [
            Case {
                fixture: "pi-1.6.0-hello.jsonl",
                final_text: "Hello from the scripted model!",
                tools: &[],
                turns: 1,
            },
            Case {
                fixture: "pi-0.73.1-hello.jsonl",
                final_text: "Hello from the scripted model!",
                tools: &[],
                turns: 1,
            },
            Case {
                fixture: "pi-1.6.0-explore.jsonl",
                final_text: "The notes say: helpers are read-only.",
                tools: &["read notes.txt"],
                turns: 2,
            },
            Case {
                fixture: "pi-0.73.1-explore.jsonl",
                final_text: "The notes say: helpers are read-only.",
                tools: &["read notes.txt"],
                turns: 2,
            },
        ];
        for case in cases {
            let bytes = read_fixture(case.fixture);
            let events = parse_all(&bytes);
            // Fed in 7-byte chunks the stream reads the same.
            let mut parser = EventParser::new();
            let mut chunked: Vec<_> = bytes.chunks(7).flat_map(|c| parser.feed(c)).collect();
            chunked.extend(parser.finish());
            assert_eq!(chunked, events, "{}", case.fixture);

            let summary = summarize(&events);
            assert_eq!(summary.malformed_lines, 0, "{}", case.fixture);
            assert!(summary.session_id.is_some(), "{}", case.fixture);
            assert_eq!(summary.final_text, case.final_text, "{}", case.fixture);
            let tools: Vec<_> = summary
                .tool_uses
                .iter()
                .map(|t| format!("{} {}", t.name, t.args))
                .collect();
            assert_eq!(tools, case.tools, "{}", case.fixture);
            assert!(
                summary.tool_uses.iter().all(|t| t.is_error == Some(false)),
                "{}: {:?}",
                case.fixture,
                summary.tool_uses
            );
            assert_eq!(summary.turns, case.turns, "{}", case.fixture);
            assert!(
                summary.usage.input > 0 && summary.usage.output > 0,
                "{}",
                case.fixture
            );
            assert_eq!(summary.error, None, "{}", case.fixture);
            assert!(summary.finished, "{}", case.fixture);
        }
    }
}

//! The wire format between the bridge extension and the host: one JSON object per line (`\n`
//! terminated, UTF-8), each with a `type`. This file owns the constants both sides agree on, the
//! typed messages, the two-step parse that tells a malformed line from an unknown type from a
//! known type with bad fields (each gets its own error code), and the size-limited line reader.
//! `docs/bridge-protocol.md` is the reference; the extension is the other implementation.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _};

use super::events::NotifyLevel;
use super::specs::{CommandSpec, Completion, MessageTypeSpec, ToolSpec};

/// The protocol version this host speaks. Bumped on any incompatible change; the extension
/// states its own in `hello` and a mismatch is refused with [`ErrorCode::ProtocolMismatch`].
pub const PROTOCOL_VERSION: u32 = 1;

/// The longest line (without its `\n`) either side accepts once authenticated: 8 MiB.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// The longest `hello` line accepted from a client that has not authenticated yet: 64 KiB, so a
/// stranger cannot make the host buffer megabytes.
pub(crate) const MAX_HELLO_BYTES: usize = 64 * 1024;

/// One block of tool output, in Pi's content shape (`{"type":"text","text":…}`,
/// `{"type":"image","data":…,"mimeType":…}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    Image {
        /// Base64 image data.
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }
}

/// Why a line or a connection was refused. Sent as `{"type":"error","code":...}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// A line longer than [`MAX_LINE_BYTES`] (or [`MAX_HELLO_BYTES`] before `hello`).
    LineTooLong,
    /// A line that is not UTF-8.
    InvalidUtf8,
    /// A line that is not one JSON object.
    MalformedJson,
    /// A JSON object whose `type` this host does not know.
    UnknownType,
    /// A known `type` with missing or mistyped fields, or a message out of place.
    BadMessage,
    /// Anything but `hello` before authentication.
    NotAuthenticated,
    /// `hello` without a token, or with one the host never issued.
    BadToken,
    /// The token's Pi process already has a live connection.
    TokenInUse,
    /// The token was issued to (and first used by) another process.
    TokenReused,
    /// `hello` stated another protocol version (or none).
    ProtocolMismatch,
    /// No `hello` within the host's hello timeout.
    HelloTimeout,
    /// A tool call or command for a name no module declares.
    UnknownName,
    /// A reply for a call id that is not pending.
    UnknownId,
    /// The Pi line lacks what a host call needs (reported by the extension).
    Unsupported,
    /// Something failed on the answering side.
    Internal,
}

impl ErrorCode {
    /// The code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LineTooLong => "line_too_long",
            Self::InvalidUtf8 => "invalid_utf8",
            Self::MalformedJson => "malformed_json",
            Self::UnknownType => "unknown_type",
            Self::BadMessage => "bad_message",
            Self::NotAuthenticated => "not_authenticated",
            Self::BadToken => "bad_token",
            Self::TokenInUse => "token_in_use",
            Self::TokenReused => "token_reused",
            Self::ProtocolMismatch => "protocol_mismatch",
            Self::HelloTimeout => "hello_timeout",
            Self::UnknownName => "unknown_name",
            Self::UnknownId => "unknown_id",
            Self::Unsupported => "unsupported",
            Self::Internal => "internal",
        }
    }
}

/// A refusal: what is sent back as an `error` line and logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WireError {
    pub code: ErrorCode,
    pub message: String,
}

impl WireError {
    pub(crate) fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

// --- extension → host -----------------------------------------------------------------------

/// A message from the extension, parsed and typed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ClientMessage {
    Hello(Hello),
    Event(EventMsg),
    ToolCall(ToolCallMsg),
    ToolCancel(IdMsg),
    Command(CommandMsg),
    Complete(CompleteMsg),
    CallResult(CallResultMsg),
    Hook(HookMsg),
    Goodbye(GoodbyeMsg),
    Error(ErrorMsg),
}

/// The first message of every connection. `token` and `protocol` are optional here so that
/// their absence is refused with the precise code instead of a generic `bad_message`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Hello {
    #[serde(default)]
    pub token: Option<String>,
    #[serde(default)]
    pub protocol: Option<u32>,
    #[serde(default)]
    pub pi_version: Option<String>,
    /// The agent id from `UNIPI_TUI_AGENT`, informational (the token decides).
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub capabilities: Value,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct EventMsg {
    pub name: String,
    #[serde(default)]
    pub data: Value,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct ToolCallMsg {
    /// The bridge's correlation id (unique per connection while in flight).
    pub id: u64,
    pub tool: String,
    /// Pi's tool call id (the model's), for modules that log or key on it.
    #[serde(default)]
    pub call_id: String,
    #[serde(default)]
    pub args: Value,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct IdMsg {
    pub id: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct CommandMsg {
    pub id: u64,
    /// The full command name, e.g. `unipi:info`.
    pub name: String,
    #[serde(default)]
    pub args: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct CompleteMsg {
    pub id: u64,
    pub command: String,
    #[serde(default)]
    pub prefix: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct CallResultMsg {
    pub id: u64,
    pub ok: bool,
    #[serde(default)]
    pub value: Value,
    #[serde(default)]
    pub error: Option<ErrorMsg>,
}

/// One of Pi's hooks, waiting for the host's answer (`hook_result` with the same id).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct HookMsg {
    pub id: u64,
    pub name: String,
    #[serde(default)]
    pub data: Value,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct GoodbyeMsg {
    #[serde(default)]
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ErrorMsg {
    pub code: String,
    pub message: String,
}

/// Parses one line (without its `\n`). Each failure carries the code the host answers with.
pub(crate) fn parse_client_line(line: &[u8]) -> Result<ClientMessage, WireError> {
    let text = std::str::from_utf8(line).map_err(|err| {
        WireError::new(
            ErrorCode::InvalidUtf8,
            format!(
                "the line is not UTF-8 (invalid byte at offset {})",
                err.valid_up_to()
            ),
        )
    })?;
    let value: Value = serde_json::from_str(text).map_err(|err| {
        WireError::new(
            ErrorCode::MalformedJson,
            format!("the line is not valid JSON: {err}"),
        )
    })?;
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        return Err(WireError::new(
            ErrorCode::BadMessage,
            "a message must be a JSON object with a string `type`",
        ));
    };
    let kind = kind.to_string();
    Ok(match kind.as_str() {
        "hello" => ClientMessage::Hello(decode(&kind, value)?),
        "event" => ClientMessage::Event(decode(&kind, value)?),
        "tool_call" => ClientMessage::ToolCall(decode(&kind, value)?),
        "tool_cancel" => ClientMessage::ToolCancel(decode(&kind, value)?),
        "command" => ClientMessage::Command(decode(&kind, value)?),
        "complete" => ClientMessage::Complete(decode(&kind, value)?),
        "call_result" => ClientMessage::CallResult(decode(&kind, value)?),
        "hook" => ClientMessage::Hook(decode(&kind, value)?),
        "goodbye" => ClientMessage::Goodbye(decode(&kind, value)?),
        "error" => ClientMessage::Error(decode(&kind, value)?),
        other => {
            return Err(WireError::new(
                ErrorCode::UnknownType,
                format!("unknown message type {other:?}"),
            ));
        }
    })
}

fn decode<T: serde::de::DeserializeOwned>(kind: &str, value: Value) -> Result<T, WireError> {
    serde_json::from_value(value).map_err(|err| {
        WireError::new(
            ErrorCode::BadMessage,
            format!("bad `{kind}` message: {err}"),
        )
    })
}

// --- host → extension -----------------------------------------------------------------------

/// What the host declares to a Pi: sent in `welcome` and again in `declare` when it changes.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Declarations {
    pub tools: Vec<ToolDecl>,
    pub commands: Vec<CommandSpec>,
    pub message_types: Vec<MessageTypeSpec>,
}

/// A tool as declared on the wire: the module's spec plus the effective timeout, which the
/// extension uses only as a backstop should the host stop answering.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ToolDecl {
    #[serde(flatten)]
    pub spec: ToolSpec,
    pub timeout_ms: u64,
}

/// Options for the extension, sent in `welcome`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct WelcomeOptions {
    /// Replace Pi's built-in footer with an empty one (the workbench draws its own).
    pub hide_footer: bool,
    /// The workbench theme's colour for each card tint (`info`, `success`, `warning`, `error`)
    /// as `#rrggbb`; a tint without one uses Pi's theme colour. Empty under `NO_COLOR`.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub card_colors: std::collections::BTreeMap<String, String>,
}

/// A message from the host.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum HostMessage {
    Welcome {
        protocol: u32,
        agent: String,
        host_version: String,
        declarations: Declarations,
        options: WelcomeOptions,
    },
    Declare {
        declarations: Declarations,
    },
    ToolUpdate {
        id: u64,
        content: Vec<ContentBlock>,
        details: Value,
    },
    ToolResult {
        id: u64,
        content: Vec<ContentBlock>,
        details: Value,
        is_error: bool,
    },
    CommandResult {
        id: u64,
        ok: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        level: Option<NotifyLevel>,
    },
    CompleteResult {
        id: u64,
        items: Vec<Completion>,
    },
    Call {
        id: u64,
        method: String,
        params: Value,
    },
    /// A module event for Pi's `pi.events` under its Unipi name, with Unipi's payload (one
    /// way: the extension emits it and answers nothing).
    UnipiEvent {
        name: String,
        data: Value,
    },
    /// The answer to a `hook` (`null`: no module had an opinion).
    HookResult {
        id: u64,
        result: Value,
    },
    Goodbye {
        reason: String,
    },
    Error {
        code: ErrorCode,
        message: String,
    },
}

impl HostMessage {
    /// The message as one wire line, `\n` included.
    pub(crate) fn to_line(&self) -> String {
        // Serializing these types cannot fail: every map key is a string and every value is
        // plain data. Should it ever, an `internal` error line keeps the stream well-formed.
        let mut line = serde_json::to_string(self).unwrap_or_else(|err| {
            tracing::error!("cannot encode a bridge message: {err}");
            r#"{"type":"error","code":"internal","message":"the host could not encode a message"}"#
                .to_string()
        });
        line.push('\n');
        line
    }

    pub(crate) fn error(err: &WireError) -> Self {
        Self::Error {
            code: err.code,
            message: err.message.clone(),
        }
    }
}

// --- reading lines --------------------------------------------------------------------------

/// One read from [`read_line`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineRead {
    /// A complete line is in the buffer (without its `\n`).
    Line,
    /// The line was longer than the limit; it has been consumed and dropped.
    TooLong,
    /// The peer closed the stream (a trailing partial line is dropped).
    Eof,
}

/// A line being read by [`read_line`]: what was read of it so far lives here, not in the
/// future, so a read cancelled in a `select!` (by another branch's event) loses nothing and
/// the next read goes on where it stopped.
#[derive(Debug, Default)]
pub(crate) struct LineBuf {
    /// The line [`read_line`] last returned (without its `\n`), or the part read so far.
    pub(crate) line: Vec<u8>,
    /// The line being read is over the limit: the rest of it is skipped.
    too_long: bool,
    /// `line` holds a whole line already returned: the next read starts a new one.
    returned: bool,
}

/// Reads one `\n`-terminated line into `buf.line`, never holding more than `max` bytes: an
/// over-long line is skipped to its end and reported, so the stream stays in step.
/// Cancel-safe: every byte consumed from `reader` is kept in `buf` before the next await.
pub(crate) async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut LineBuf,
    max: usize,
) -> std::io::Result<LineRead> {
    if std::mem::take(&mut buf.returned) {
        buf.line.clear();
        buf.too_long = false;
    }
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            buf.line.clear();
            buf.too_long = false;
            return Ok(LineRead::Eof);
        }
        let (chunk, found_end) = match available.iter().position(|&byte| byte == b'\n') {
            Some(end) => (&available[..end], true),
            None => (available, false),
        };
        if !buf.too_long {
            if buf.line.len() + chunk.len() > max {
                buf.too_long = true;
                buf.line.clear();
            } else {
                buf.line.extend_from_slice(chunk);
            }
        }
        let used = chunk.len() + usize::from(found_end);
        reader.consume(used);
        if found_end {
            buf.returned = true;
            return Ok(if buf.too_long {
                LineRead::TooLong
            } else {
                LineRead::Line
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parse_sorts_failures_by_code() {
        // (line, expected code, fragment of the message)
        let cases: &[(&[u8], ErrorCode, &str)] = &[
            (b"\xff\xfe{}", ErrorCode::InvalidUtf8, "offset 0"),
            (b"{\"type\":", ErrorCode::MalformedJson, "not valid JSON"),
            (b"[1,2]", ErrorCode::BadMessage, "string `type`"),
            (b"{\"type\":7}", ErrorCode::BadMessage, "string `type`"),
            (b"{\"type\":\"dance\"}", ErrorCode::UnknownType, "\"dance\""),
            (
                b"{\"type\":\"tool_call\",\"tool\":\"x\"}",
                ErrorCode::BadMessage,
                "missing field `id`",
            ),
            (
                b"{\"type\":\"event\",\"name\":3}",
                ErrorCode::BadMessage,
                "bad `event` message",
            ),
        ];
        for (line, code, fragment) in cases {
            let err = parse_client_line(line).err();
            let shown = String::from_utf8_lossy(line);
            let Some(err) = err else {
                panic!("{shown} parsed");
            };
            assert_eq!(err.code, *code, "{shown}: {}", err.message);
            assert!(
                err.message.contains(fragment),
                "{shown}: {:?} lacks {fragment:?}",
                err.message
            );
        }
    }

    #[test]
    fn parse_reads_each_known_type() -> Result<(), WireError> {
        let hello = parse_client_line(
            br#"{"type":"hello","token":"t","protocol":1,"pi_version":"1.6.0","capabilities":{"events":["agent_settled"]}}"#,
        )?;
        let ClientMessage::Hello(hello) = hello else {
            panic!("not a hello: {hello:?}");
        };
        assert_eq!(hello.token.as_deref(), Some("t"));
        assert_eq!(hello.protocol, Some(1));
        assert_eq!(hello.capabilities["events"][0], "agent_settled");

        // A hello without token or protocol still parses: the host refuses it precisely.
        assert!(matches!(
            parse_client_line(br#"{"type":"hello"}"#)?,
            ClientMessage::Hello(Hello {
                token: None,
                protocol: None,
                ..
            })
        ));
        assert_eq!(
            parse_client_line(
                br#"{"type":"tool_call","id":4,"tool":"t","call_id":"c","args":{"a":1}}"#
            )?,
            ClientMessage::ToolCall(ToolCallMsg {
                id: 4,
                tool: "t".into(),
                call_id: "c".into(),
                args: json!({"a": 1}),
            })
        );
        assert_eq!(
            parse_client_line(br#"{"type":"tool_cancel","id":4}"#)?,
            ClientMessage::ToolCancel(IdMsg { id: 4 })
        );
        assert_eq!(
            parse_client_line(br#"{"type":"call_result","id":9,"ok":false,"error":{"code":"unsupported","message":"no"}}"#)?,
            ClientMessage::CallResult(CallResultMsg {
                id: 9,
                ok: false,
                value: Value::Null,
                error: Some(ErrorMsg {
                    code: "unsupported".into(),
                    message: "no".into()
                }),
            })
        );
        assert_eq!(
            parse_client_line(br#"{"type":"goodbye","reason":"reload"}"#)?,
            ClientMessage::Goodbye(GoodbyeMsg {
                reason: "reload".into()
            })
        );
        Ok(())
    }

    #[test]
    fn host_messages_are_one_tagged_line() -> anyhow::Result<()> {
        let line = HostMessage::ToolResult {
            id: 3,
            content: vec![ContentBlock::text("done")],
            details: Value::Null,
            is_error: false,
        }
        .to_line();
        assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
        let value: Value = serde_json::from_str(&line)?;
        assert_eq!(
            value,
            json!({"type": "tool_result", "id": 3, "content": [{"type": "text", "text": "done"}],
                   "details": null, "is_error": false})
        );
        let error: Value = serde_json::from_str(
            &HostMessage::error(&WireError::new(ErrorCode::TokenInUse, "busy")).to_line(),
        )?;
        assert_eq!(
            error,
            json!({"type": "error", "code": "token_in_use", "message": "busy"})
        );
        Ok(())
    }

    #[tokio::test]
    async fn read_line_splits_limits_and_resynchronises() -> std::io::Result<()> {
        // A tiny buffer capacity forces lines to arrive in pieces.
        let input: &[u8] = b"short\nthis-line-is-too-long\nok\npartial";
        let mut reader = tokio::io::BufReader::with_capacity(4, input);
        let mut buf = LineBuf::default();
        let mut seen = Vec::new();
        loop {
            let read = read_line(&mut reader, &mut buf, 10).await?;
            seen.push((read, String::from_utf8_lossy(&buf.line).into_owned()));
            if read == LineRead::Eof {
                break;
            }
        }
        assert_eq!(
            seen,
            [
                (LineRead::Line, "short".to_string()),
                (LineRead::TooLong, String::new()),
                (LineRead::Line, "ok".to_string()),
                (LineRead::Eof, String::new()),
            ]
        );
        Ok(())
    }

    /// A read cancelled mid-line (another `select!` branch won) loses nothing: the next read
    /// returns the whole line.
    #[tokio::test]
    async fn a_read_cancelled_mid_line_goes_on_where_it_stopped() -> std::io::Result<()> {
        let (client, server) = tokio::io::duplex(64);
        let (mut reader, mut writer) = (tokio::io::BufReader::new(server), client);
        let mut buf = LineBuf::default();
        tokio::io::AsyncWriteExt::write_all(&mut writer, b"{\"type\":").await?;
        let cancelled = tokio::time::timeout(
            std::time::Duration::from_millis(20),
            read_line(&mut reader, &mut buf, 100),
        )
        .await;
        assert!(cancelled.is_err(), "no whole line yet");
        tokio::io::AsyncWriteExt::write_all(&mut writer, b"\"ping\"}\nnext\n").await?;
        assert_eq!(read_line(&mut reader, &mut buf, 100).await?, LineRead::Line);
        assert_eq!(buf.line, b"{\"type\":\"ping\"}");
        assert_eq!(read_line(&mut reader, &mut buf, 100).await?, LineRead::Line);
        assert_eq!(buf.line, b"next");
        Ok(())
    }

    #[test]
    fn error_codes_match_their_serde_names() -> anyhow::Result<()> {
        for code in [
            ErrorCode::LineTooLong,
            ErrorCode::InvalidUtf8,
            ErrorCode::MalformedJson,
            ErrorCode::UnknownType,
            ErrorCode::BadMessage,
            ErrorCode::NotAuthenticated,
            ErrorCode::BadToken,
            ErrorCode::TokenInUse,
            ErrorCode::TokenReused,
            ErrorCode::ProtocolMismatch,
            ErrorCode::HelloTimeout,
            ErrorCode::UnknownName,
            ErrorCode::UnknownId,
            ErrorCode::Unsupported,
            ErrorCode::Internal,
        ] {
            assert_eq!(serde_json::to_value(code)?, json!(code.as_str()));
        }
        Ok(())
    }
}

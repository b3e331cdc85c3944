//! The one interface every workbench capability implements to reach Pi: a [`Module`] names
//! itself, declares tools (JSON Schema parameters) and custom message types, and handles its tool
//! calls and hooks; the `/unipi:*` commands listed under it are [`Command`](super::Command)s,
//! registered beside it, each with its handler. It is deliberately small — the bridge does the
//! plumbing (correlation ids, timeouts, cancellation, panic isolation, streaming) — so a module is
//! its feature logic and nothing else.
//!
//! A tool call runs as its own task with a [`ToolCall`]: the arguments, an [`UpdateSender`] for
//! progress that reaches Pi's `onUpdate`, and a [`CancelToken`] that fires when Pi aborts the call
//! or the host gives up on it.

use std::fmt;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use super::AgentId;
use super::events::CommandReply;
pub use super::protocol::ContentBlock;
use super::protocol::HostMessage;
pub use super::specs::{CommandSpec, Completion, MessageTypeSpec, ToolSpec};

/// A workbench capability as the bridge sees it.
pub trait Module: Send + Sync + 'static {
    /// A short, stable name (shown in `/unipi:info`, used in logs).
    fn name(&self) -> &'static str;

    /// The tools this module offers the model. Read when the module is registered.
    fn tools(&self) -> Vec<ToolSpec> {
        vec![]
    }

    /// Custom message types this module sends into the session (rendered as generic cards).
    fn message_types(&self) -> Vec<MessageTypeSpec> {
        vec![]
    }

    /// Runs one call of one of this module's tools. The future runs in its own task: a panic
    /// becomes an error result, and it is dropped when the call times out.
    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let message = format!("module `{}` declares no tool `{}`", self.name(), call.tool);
        Box::pin(async move { Err(ToolError::new(message)) })
    }

    /// Answers one of Pi's hooks, or `None` to leave it to the next module (and, when no module
    /// answers, to Pi). The future runs in its own task under the host's hook timeout; its value
    /// is returned from Pi's handler as is (`null`: no opinion).
    fn hook(&self, _hook: HookCall) -> Option<BoxFuture<'static, Value>> {
        None
    }
}

/// One of Pi's hooks that a module may answer (`session_before_compact`): Pi waits for the
/// answer, so the extension forwards the event and returns what the host says.
#[derive(Debug, Clone, PartialEq)]
pub struct HookCall {
    /// The Pi whose hook fired.
    pub agent: AgentId,
    /// Pi's event name.
    pub name: String,
    /// The event's data, as the extension forwards it (see docs/bridge-protocol.md).
    pub data: Value,
}

/// A tool's answer (or one streaming update): what the model reads, plus `details` for
/// renderers and state.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    pub content: Vec<ContentBlock>,
    pub details: Value,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![ContentBlock::text(text)],
            details: Value::Null,
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }
}

impl ToolOutput {
    /// Attaches a display card as `details.card` (see [`Card`]); the model's content is unchanged.
    pub fn with_card(mut self, card: &Card) -> Self {
        self.details = card.attach(std::mem::take(&mut self.details));
        self
    }
}

/// A generic display card: the extension renders `details.card` of a tool result or custom
/// message as a tinted title, body lines and an optional footer, in Pi's theme colours. It is
/// display only — the model reads the content, never the card — so a module words it for the
/// user and the extension needs no feature logic to draw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Card {
    pub title: String,
    pub tint: CardTint,
    #[serde(default)]
    pub lines: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub footer: Option<String>,
}

/// A card's colour, mapped by the extension to Pi's theme (`accent`, `success`, `warning`,
/// `error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CardTint {
    Info,
    Success,
    Warning,
    Error,
}

impl Card {
    pub fn new(title: impl Into<String>, tint: CardTint) -> Self {
        Self {
            title: title.into(),
            tint,
            lines: Vec::new(),
            footer: None,
        }
    }

    pub fn line(mut self, line: impl Into<String>) -> Self {
        self.lines.push(line.into());
        self
    }

    pub fn footer(mut self, footer: impl Into<String>) -> Self {
        self.footer = Some(footer.into());
        self
    }

    /// `details` with this card as its `card` field. An object gains the field, null becomes
    /// `{"card": …}`, and any other value is kept under `value` so nothing is lost.
    pub fn attach(&self, details: Value) -> Value {
        let card = serde_json::to_value(self).unwrap_or(Value::Null);
        match details {
            Value::Object(mut object) => {
                object.insert("card".into(), card);
                Value::Object(object)
            }
            Value::Null => json!({ "card": card }),
            other => json!({ "value": other, "card": card }),
        }
    }
}

/// Text meant for the user or the model, read as is: why a request was refused or failed, worded
/// where it was found (`"the bridge to Pi is not up"`). The one error type of the functions whose
/// error a person or the model reads; a caller that branches on the kind gets a named enum
/// instead, and internal failures stay `anyhow` with context until they become a refusal
/// (`From<anyhow::Error>` keeps the whole chain, `{:#}`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Refusal(String);

impl Refusal {
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// The text, exactly as it is shown.
    pub fn text(&self) -> &str {
        &self.0
    }

    pub fn into_text(self) -> String {
        self.0
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

/// Read as the text it is: `refusal.starts_with(…)`, `&refusal[..]`.
impl std::ops::Deref for Refusal {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for Refusal {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Refusal {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for Refusal {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl From<String> for Refusal {
    fn from(text: String) -> Self {
        Self(text)
    }
}

impl From<&str> for Refusal {
    fn from(text: &str) -> Self {
        Self(text.to_owned())
    }
}

impl From<anyhow::Error> for Refusal {
    fn from(err: anyhow::Error) -> Self {
        // `{:#}` keeps the context chain: the reader sees why, not just the last step.
        Self(format!("{err:#}"))
    }
}

impl From<Refusal> for ToolError {
    fn from(refusal: Refusal) -> Self {
        Self::new(refusal.0)
    }
}

/// A refused command answers Pi with the refusal's text.
impl From<Refusal> for CommandReply {
    fn from(refusal: Refusal) -> Self {
        CommandReply::Failed { message: refusal.0 }
    }
}

impl From<Refusal> for String {
    fn from(refusal: Refusal) -> Self {
        refusal.0
    }
}

/// A failed tool call: becomes an error result (`isError`) whose text is `message`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    pub message: String,
    pub details: Value,
}

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            details: Value::Null,
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<anyhow::Error> for ToolError {
    fn from(err: anyhow::Error) -> Self {
        // `{:#}` keeps the context chain: the model sees why, not just the last step.
        Self::new(format!("{err:#}"))
    }
}

/// One invocation of a tool, handed to [`Module::call_tool`].
#[derive(Debug)]
pub struct ToolCall {
    /// The Pi process that called.
    pub agent: AgentId,
    pub tool: String,
    /// Pi's tool call id.
    pub call_id: String,
    pub args: Value,
    /// Progress updates for Pi's `onUpdate`.
    pub updates: UpdateSender,
    /// Fires when Pi aborts the call or the host stops waiting for it.
    pub cancel: CancelToken,
}

/// Sends streaming updates of one tool call to Pi. Updates are progress: when the connection's
/// queue is full or gone, an update is dropped rather than waited for.
#[derive(Debug, Clone)]
pub struct UpdateSender {
    target: Option<(mpsc::Sender<String>, u64)>,
}

impl UpdateSender {
    pub(crate) fn new(out: mpsc::Sender<String>, id: u64) -> Self {
        Self {
            target: Some((out, id)),
        }
    }

    /// A sender that goes nowhere (for calling a module outside the bridge, e.g. in tests).
    pub fn detached() -> Self {
        Self { target: None }
    }

    /// Sends one partial result; `false` when it was dropped.
    pub fn send(&self, update: ToolOutput) -> bool {
        let Some((out, id)) = &self.target else {
            return false;
        };
        let line = HostMessage::ToolUpdate {
            id: *id,
            content: update.content,
            details: update.details,
        }
        .to_line();
        out.try_send(line).is_ok()
    }
}

/// The receiving side of a cancellation: cheap to clone, checked or awaited by a module.
#[derive(Debug, Clone)]
pub struct CancelToken {
    fired: watch::Receiver<bool>,
}

/// The firing side of a cancellation.
#[derive(Debug, Clone)]
pub struct CancelHandle {
    fire: Arc<watch::Sender<bool>>,
}

impl CancelHandle {
    /// A fresh, unfired pair.
    pub fn pair() -> (CancelHandle, CancelToken) {
        let (fire, fired) = watch::channel(false);
        (
            CancelHandle {
                fire: Arc::new(fire),
            },
            CancelToken { fired },
        )
    }

    pub fn cancel(&self) {
        self.fire.send_replace(true);
    }

    #[cfg(test)]
    pub(crate) fn is_cancelled(&self) -> bool {
        *self.fire.borrow()
    }
}

impl CancelToken {
    /// A token that never fires.
    pub fn never() -> Self {
        CancelHandle::pair().1
    }

    #[cfg(test)]
    pub(crate) fn is_cancelled(&self) -> bool {
        *self.fired.borrow()
    }

    /// Completes when the call is cancelled; never completes otherwise.
    pub async fn cancelled(&self) {
        let mut fired = self.fired.clone();
        if fired.wait_for(|fired| *fired).await.is_err() {
            // The handle is gone without firing: nobody can cancel any more.
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_table::check_table;
    use std::time::Duration;

    #[test]
    fn tool_spec_builds_an_object_schema() {
        let spec = ToolSpec::new("unipi_echo", "Echo", "Echoes text")
            .string_param("text", "what to echo", true)
            .integer_param("times", "how often", false)
            .boolean_param("loud", "upper case", true)
            .prompt_snippet("echo text back")
            .guideline("Use unipi_echo to test the bridge.");
        assert_eq!(
            spec.parameters,
            json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "what to echo"},
                    "times": {"type": "integer", "description": "how often"},
                    "loud": {"type": "boolean", "description": "upper case"},
                },
                "required": ["text", "loud"],
                "additionalProperties": false,
            })
        );
        let wire = serde_json::to_value(&spec).unwrap_or_default();
        assert_eq!(wire["prompt_snippet"], "echo text back");
        assert_eq!(
            wire["prompt_guidelines"][0],
            "Use unipi_echo to test the bridge."
        );
        assert!(wire.get("timeout").is_none(), "{wire}");
    }

    #[test]
    fn content_blocks_use_pi_shapes() -> anyhow::Result<()> {
        let blocks = vec![
            ContentBlock::text("hi"),
            ContentBlock::Image {
                data: "AAAA".into(),
                mime_type: "image/png".into(),
            },
        ];
        assert_eq!(
            serde_json::to_value(&blocks)?,
            json!([{"type": "text", "text": "hi"},
                   {"type": "image", "data": "AAAA", "mimeType": "image/png"}])
        );
        Ok(())
    }

    #[test]
    fn cards_attach_to_any_details() {
        let card = Card::new("● started", CardTint::Info)
            .line("$ make")
            .footer("bg-1");
        let wire =
            json!({"title": "● started", "tint": "info", "lines": ["$ make"], "footer": "bg-1"});
        let cases = [
            (Value::Null, json!({ "card": wire })),
            (json!({"task": 1}), json!({"task": 1, "card": wire})),
            (json!([1]), json!({"value": [1], "card": wire})),
        ];
        check_table(cases, |details| card.attach(details.clone()));
        let output = ToolOutput::text("hi").with_card(&Card::new("t", CardTint::Error));
        assert_eq!(
            output.details,
            json!({"card": {"title": "t", "tint": "error", "lines": []}})
        );
        assert_eq!(output.content, vec![ContentBlock::text("hi")]);
    }

    #[test]
    fn tool_error_keeps_the_context_chain() {
        let err = anyhow::anyhow!("file missing").context("cannot load the board");
        assert_eq!(
            ToolError::from(err).message,
            "cannot load the board: file missing"
        );
    }

    #[tokio::test]
    async fn cancel_token_fires_once_and_a_dropped_handle_never_fires() {
        let (handle, token) = CancelHandle::pair();
        assert!(!token.is_cancelled());
        let waiter = tokio::spawn({
            let token = token.clone();
            async move { token.cancelled().await }
        });
        handle.cancel();
        assert!(
            tokio::time::timeout(Duration::from_secs(5), waiter)
                .await
                .is_ok()
        );
        assert!(token.is_cancelled() && handle.is_cancelled());

        let (handle, token) = CancelHandle::pair();
        drop(handle);
        let waited = tokio::time::timeout(Duration::from_millis(50), token.cancelled()).await;
        assert!(
            waited.is_err(),
            "a dropped handle must not look like a cancel"
        );
    }

    #[test]
    fn update_sender_drops_when_full_or_detached() {
        assert!(!UpdateSender::detached().send(ToolOutput::text("x")));
        let (out, mut rx) = mpsc::channel(1);
        let sender = UpdateSender::new(out, 7);
        assert!(sender.send(ToolOutput::text("first")));
        assert!(!sender.send(ToolOutput::text("second")), "queue full");
        let line = rx.try_recv().unwrap_or_default();
        let value: Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(value["type"], "tool_update");
        assert_eq!(value["id"], 7);
        assert_eq!(value["content"][0]["text"], "first");
    }
}

//! The bridge face of the notifications: the `notify_user` tool (title, message, priority and
//! platforms honoured; it answers at once and the sending goes on in the background).

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::config::{Platform, Priority};
use super::dispatch::Dispatcher;
use super::platforms::Notice;
use crate::bridge::{Module, Refusal, ToolCall, ToolError, ToolOutput, ToolSpec};

pub const MODULE_NAME: &str = "notify";
pub const TOOL: &str = "notify_user";
/// The event type of the tool's notifications (the original's).
pub(crate) const TOOL_EVENT: &str = "agent_tool";

#[derive(Clone)]
pub(crate) struct NotifyModule {
    dispatcher: Dispatcher,
}

/// `notify_user`'s arguments, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NotifyArgs {
    pub notice: Notice,
    pub platforms: Vec<Platform>,
}

pub(crate) fn parse_args(args: &Value) -> Result<NotifyArgs, Refusal> {
    let message = match args.get("message") {
        Some(Value::String(text)) if !text.trim().is_empty() => text.trim().to_owned(),
        _ => return Err("notify_user needs `message` (a non-empty string)".into()),
    };
    let title = match args.get("title") {
        None | Some(Value::Null) => "Pi Notification".to_owned(),
        Some(Value::String(text)) if !text.trim().is_empty() => text.trim().to_owned(),
        Some(_) => return Err("`title` must be a non-empty string".into()),
    };
    let priority = match args.get("priority") {
        None | Some(Value::Null) => Priority::Normal,
        Some(Value::String(text)) => Priority::parse(text)
            .ok_or_else(|| format!("`priority` must be low, normal or high, not {text:?}"))?,
        Some(_) => return Err("`priority` must be low, normal or high".into()),
    };
    let platforms = match args.get("platforms") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str().and_then(Platform::parse).ok_or_else(|| {
                    format!(
                        "`platforms` lists native, terminal, ntfy, gotify or telegram, not {item}"
                    )
                })
            })
            .collect::<Result<Vec<_>, String>>()?,
        Some(_) => return Err("`platforms` must be a list".into()),
    };
    Ok(NotifyArgs {
        notice: Notice::new(title, message, priority),
        platforms,
    })
}

impl NotifyModule {
    pub(crate) fn new(dispatcher: Dispatcher) -> Self {
        NotifyModule { dispatcher }
    }

    /// One `notify_user` call: resolved, handed to the dispatcher, answered at once.
    pub(crate) fn notify(&self, args: &Value) -> Result<ToolOutput, ToolError> {
        let args = parse_args(args)?;
        let platforms = self.dispatcher.config().platforms_for(&args.platforms);
        let names: Vec<&str> = platforms.iter().map(|p| p.key()).collect();
        if platforms.is_empty() {
            return Ok(ToolOutput::text(
                "No notification platform is enabled; the user can turn one on with \
                 /unipi:notify-settings.",
            )
            .with_details(json!({"platforms": names})));
        }
        let text = format!(
            "Notification sending to {} platform(s): {}",
            platforms.len(),
            names.join(", ")
        );
        self.dispatcher
            .dispatch(TOOL_EVENT, args.notice, platforms.clone());
        Ok(ToolOutput::text(text).with_details(json!({"platforms": names})))
    }
}

impl Module for NotifyModule {
    fn name(&self) -> &'static str {
        MODULE_NAME
    }

    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec::new(
                TOOL,
                "Notify User",
                "Send the user a notification (desktop, phone via ntfy/Gotify/Telegram, or the \
                 terminal) when they should know something now: a long job finished, something \
                 needs their attention. Returns at once.",
            )
            .string_param("message", "What to tell the user.", true)
            .string_param("title", "A short title (default \"Pi Notification\").", false)
            .param(
                "priority",
                json!({"type": "string", "enum": ["low", "normal", "high"],
                       "description": "How urgent (default normal)."}),
                false,
            )
            .param(
                "platforms",
                json!({"type": "array",
                       "items": {"type": "string", "enum": ["native", "terminal", "ntfy", "gotify", "telegram"]},
                       "description": "Where to send (default: every enabled platform)."}),
                false,
            )
            .prompt_snippet("Send the user a notification.")
            .guideline(
                "Use notify_user sparingly, for what the user must learn while away; do not \
                 use notify_user to ask a question (ask_user does that and notifies by itself).",
            ),
        ]
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let result = if call.tool == TOOL {
            self.notify(&call.args)
        } else {
            Err(ToolError::new(format!(
                "module `{MODULE_NAME}` declares no tool `{}`",
                call.tool
            )))
        };
        Box::pin(async move { result })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_and_defaulted() {
        let parsed = parse_args(&json!({"message": " done "})).unwrap();
        assert_eq!(
            parsed.notice,
            Notice::new("Pi Notification", "done", Priority::Normal)
        );
        assert!(parsed.platforms.is_empty());
        let parsed = parse_args(
            &json!({"message": "m", "title": "T", "priority": "high", "platforms": ["ntfy", "terminal"]}),
        )
        .unwrap();
        assert_eq!(parsed.notice.priority, Priority::High);
        assert_eq!(parsed.platforms, vec![Platform::Ntfy, Platform::Terminal]);
        let errors = [
            (
                json!({}),
                "notify_user needs `message` (a non-empty string)",
            ),
            (
                json!({"message": "m", "priority": "urgent"}),
                "`priority` must be low, normal or high, not \"urgent\"",
            ),
            (
                json!({"message": "m", "platforms": ["pager"]}),
                "`platforms` lists native, terminal, ntfy, gotify or telegram, not \"pager\"",
            ),
        ];
        for (args, want) in errors {
            assert_eq!(parse_args(&args), Err(want.into()), "{args}");
        }
    }
}

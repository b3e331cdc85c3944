//! The supervisor channel: a helper reaches the agent that spawned it with
//! `contact_supervisor` (a question, or a status note), and that agent answers with
//! `spawn_helper` `action: "reply"`.
//!
//! The message goes to the parent as a `helper-supervisor-message` follow-up naming the helper;
//! a question starts the parent's turn and the helper's tool call waits for the reply (at most
//! `supervisorTimeoutSeconds`, after which it proceeds with a clear note), a status note just
//! lands in the parent's transcript. Only the parent of that helper can answer, and one
//! question per helper is open at a time.
//!
//! A foreground helper's parent is itself blocked inside the `spawn_helper` call that waits for
//! the helper, so it cannot read anything before the helper ends: waiting would only burn the
//! timeout. Such a question is answered at once with that explanation.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::names::SUPERVISOR_MESSAGE_TYPE;
use super::results::{error_output, escape_xml};
use super::runs::{Caller, RunInfo};
use super::service::HelperService;
use crate::bridge::AgentNotice;
use crate::bridge::{Refusal, ToolCall, ToolError, ToolOutput};

/// What a helper wants from its supervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Question,
    Status,
}

impl Kind {
    fn parse(args: &Value) -> Result<Self, Refusal> {
        match args.get("kind").and_then(Value::as_str) {
            None | Some("question") => Ok(Self::Question),
            Some("status") => Ok(Self::Status),
            Some(other) => Err(format!("kind must be question or status, found {other:?}").into()),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Question => "question",
            Self::Status => "status",
        }
    }
}

/// The follow-up the parent reads.
pub(crate) fn message_content(
    run_id: &str,
    agent_type: &str,
    description: &str,
    kind: Kind,
    message: &str,
    timeout_secs: u64,
) -> String {
    let mut lines = vec![
        "<helper-supervisor-message>".to_string(),
        format!("  <run-id>{run_id}</run-id>"),
        format!("  <type>{}</type>", escape_xml(agent_type)),
        format!("  <description>{}</description>", escape_xml(description)),
        format!("  <kind>{}</kind>", kind.as_str()),
        format!("  <message>{}</message>", escape_xml(message)),
    ];
    if kind == Kind::Question {
        lines.push(format!(
            "  <guidance>The helper waits for your answer: call spawn_helper with action \
             \"reply\", id \"{run_id}\" and your answer as message. Unanswered, it proceeds on \
             its own after {timeout_secs} s.</guidance>"
        ));
    }
    lines.push("</helper-supervisor-message>".to_string());
    lines.join("\n")
}

/// The `<helper-supervisor-message>` that brings a helper's question or note to its parent (a
/// question starts a turn).
fn supervisor_notice(
    run_id: &str,
    info: &RunInfo,
    kind: Kind,
    message: &str,
    timeout: Duration,
) -> AgentNotice {
    AgentNotice {
        agent: info.parent_agent.clone(),
        id: run_id.to_string(),
        custom_type: SUPERVISOR_MESSAGE_TYPE.to_string(),
        content: message_content(
            run_id,
            &info.agent_type,
            &info.description,
            kind,
            message,
            timeout.as_secs(),
        ),
        details: json!({
            "runId": run_id,
            "type": info.agent_type,
            "description": info.description,
            "kind": kind.as_str(),
            "message": message,
        }),
        trigger_turn: kind == Kind::Question,
    }
}

/// What the helper reads back: the parent's answer, or that none came in time.
fn answered(reply: Option<String>, timeout: Duration) -> ToolOutput {
    match reply {
        Some(reply) => ToolOutput::text(format!("Your supervisor answered:\n{reply}"))
            .with_details(json!({"status": "answered", "reply": reply})),
        None => ToolOutput::text(format!(
            "No answer from your supervisor within {} s. Proceed with your best judgement \
             and state your assumptions in your final answer.",
            timeout.as_secs()
        ))
        .with_details(json!({"status": "unanswered", "reason": "timeout"})),
    }
}

impl HelperService {
    pub(super) async fn contact_supervisor(
        self: Arc<Self>,
        call: ToolCall,
    ) -> Result<ToolOutput, ToolError> {
        let caller = self.caller(&call.agent);
        let Some(run_id) = caller.run.clone() else {
            return Ok(refused(
                "you are not a helper agent: there is no supervisor to contact",
            ));
        };
        let message = call
            .args
            .get("message")
            .and_then(Value::as_str)
            .filter(|message| !message.trim().is_empty())
            .ok_or_else(|| ToolError::new("contact_supervisor needs message"))?
            .to_string();
        let kind = Kind::parse(&call.args).map_err(ToolError::new)?;
        let info = match self.ledger().run(&run_id) {
            Some(entry) => entry.info().clone(),
            None => return Ok(refused("your run is not known to the workbench")),
        };
        let timeout = self.settings().config().supervisor_timeout;
        if kind == Kind::Question && !info.background {
            return Ok(ToolOutput::text(
                "Your supervisor is waiting for your result and cannot answer while you run. \
                 Proceed with your best judgement and state your assumptions in your final answer.",
            )
            .with_details(json!({"status": "unanswered", "reason": "foreground"})));
        }
        let answer = if kind == Kind::Question {
            let (tx, rx) = oneshot::channel();
            if !self.ledger().open_question(&run_id, tx) {
                return Ok(refused(
                    "you already have a question open; wait for its answer first",
                ));
            }
            Some(rx)
        } else {
            None
        };
        self.notify(supervisor_notice(&run_id, &info, kind, &message, timeout))
            .await;
        let Some(rx) = answer else {
            return Ok(ToolOutput::text("Status note sent to your supervisor.")
                .with_details(json!({"status": "sent"})));
        };
        let reply = tokio::select! {
            reply = tokio::time::timeout(timeout, rx) => reply.ok().and_then(Result::ok),
            () = call.cancel.cancelled() => None,
        };
        self.ledger().take_question(&run_id);
        Ok(answered(reply, timeout))
    }

    /// `spawn_helper` `action: "reply"`: the parent answers run `id`'s open question.
    pub(super) fn reply(&self, caller: &Caller, id: &str, message: String) -> ToolOutput {
        let mut ledger = self.ledger();
        let Some(entry) = ledger.run(id) else {
            return error_output(&format!("no helper run with id {id:?}"), id);
        };
        if entry.info().parent_agent != caller.agent {
            return error_output(
                &format!("only the agent that spawned run {id} can answer its question"),
                id,
            );
        }
        let Some(waiting) = ledger.take_question(id) else {
            return error_output(
                &format!(
                    "run {id} has no open question (it may have timed out and gone on without \
                     an answer)"
                ),
                id,
            );
        };
        drop(ledger);
        if waiting.send(message).is_err() {
            return error_output("the helper stopped waiting for the answer", id);
        }
        ToolOutput::text(format!("Answer delivered to helper run {id}."))
            .with_details(json!({"status": "completed", "runId": id}))
    }
}

fn refused(reason: &str) -> ToolOutput {
    ToolOutput::text(format!("contact_supervisor: {reason}"))
        .with_details(json!({"status": "error", "reason": reason}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_content_names_the_helper_and_how_to_answer() {
        let text = message_content(
            "h1",
            "explore",
            "scan <api>",
            Kind::Question,
            "A or B?",
            300,
        );
        assert!(text.contains("<run-id>h1</run-id>"));
        assert!(text.contains("<description>scan &lt;api&gt;</description>"));
        assert!(text.contains("<kind>question</kind>"));
        assert!(text.contains("action \"reply\", id \"h1\""));
        assert!(text.contains("after 300 s"));
        let status = message_content("h1", "explore", "scan", Kind::Status, "half done", 300);
        assert!(status.contains("<kind>status</kind>"));
        assert!(!status.contains("guidance"));
    }

    #[test]
    fn kinds_parse() {
        assert_eq!(Kind::parse(&json!({})), Ok(Kind::Question));
        assert_eq!(Kind::parse(&json!({"kind": "status"})), Ok(Kind::Status));
        assert!(Kind::parse(&json!({"kind": "shout"})).is_err());
    }
}

//! What ask-user puts on the bus, under Unipi's names: a question waiting for the user (which
//! alerts them, once they are away) and its settling (which stands that alert down).

use serde::{Deserialize, Serialize};

use crate::bridge::{AgentId, AlertPriority, Alerting, BusMessage};

/// The key of the question's settings in the notifications' config (Unipi's name).
const NOTIFY_EVENT: &str = "ask_user_prompt";

/// `ask_user` waits for the user: `unipi:ask-user:prompt {id, agent, question, context,
/// optionCount, allowMultiple, allowFreeform, questionCount}` (the first question's).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AskUserPrompt {
    pub(crate) id: u64,
    pub(crate) agent: String,
    pub(crate) question: String,
    pub(crate) context: Option<String>,
    pub(crate) option_count: usize,
    pub(crate) allow_multiple: bool,
    pub(crate) allow_freeform: bool,
    pub(crate) question_count: usize,
}

/// An `ask_user` call was settled (answered, timed out, cancelled): `unipi:ask-user:answered
/// {id, agent, kind}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AskUserAnswered {
    pub(crate) id: u64,
    pub(crate) agent: String,
    /// How it was settled (`selection`, `cancelled`, …).
    pub(crate) kind: String,
}

impl BusMessage for AskUserPrompt {
    const NAME: &'static str = "unipi:ask-user:prompt";

    /// Unipi's `context` was optional (absent when there is none, never `null`).
    fn pi_event(&self) -> Option<serde_json::Value> {
        let mut data = serde_json::to_value(self).ok()?;
        if let Some(fields) = data.as_object_mut()
            && fields
                .get("context")
                .is_some_and(serde_json::Value::is_null)
        {
            fields.remove("context");
        }
        Some(data)
    }

    fn alerting(&self) -> Option<Alerting> {
        let who = if self.agent == AgentId::main().as_str() {
            "Agent asks".to_owned()
        } else {
            format!("{} asks", self.agent)
        };
        let body = match &self.context {
            Some(context) => format!("{who}: {} — {context}", self.question),
            None => format!("{who}: {}", self.question),
        };
        Some(Alerting::Alert {
            event: NOTIFY_EVENT,
            title: "Question Asked",
            body,
            priority: AlertPriority::High,
            question: Some(self.id),
        })
    }
}

impl BusMessage for AskUserAnswered {
    const NAME: &'static str = "unipi:ask-user:answered";

    fn alerting(&self) -> Option<Alerting> {
        Some(Alerting::Answered(self.id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unipi's payload: `{question, context?, optionCount, allowMultiple, allowFreeform}`.
    #[test]
    fn pi_hears_a_question_in_unipi_fields() {
        let mut prompt = AskUserPrompt {
            id: 1,
            agent: "main".into(),
            question: "Ship it?".into(),
            context: None,
            option_count: 2,
            allow_multiple: false,
            allow_freeform: true,
            question_count: 1,
        };
        let data = prompt.pi_event().unwrap();
        assert_eq!(data["question"], "Ship it?");
        assert_eq!(data["optionCount"], 2);
        assert_eq!(data["allowMultiple"], false);
        assert_eq!(data["allowFreeform"], true);
        assert!(data.get("context").is_none(), "{data}");
        prompt.context = Some("all tests pass".into());
        assert_eq!(prompt.pi_event().unwrap()["context"], "all tests pass");
    }
}

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

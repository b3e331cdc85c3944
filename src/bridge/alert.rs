//! What a bus message asks of the notifications, said by the capability that publishes it: the
//! router (`notify::routing`) reads only this, so it knows no producer, and a capability whose
//! event should reach the user says so on the event (its [`BusMessage::alerting`]) without
//! touching the notifications.
//!
//! Three things are said: alert the user (with the key of the event's settings, its words and
//! priority, and whether it is a question that waits for an answer); a question was settled;
//! and how much of the producer's running work will wake the agent when it ends (the agent's
//! settling is no "agent done" while any will).
//!
//! [`BusMessage::alerting`]: super::BusMessage::alerting

/// How urgent an alert is; the notifications map it onto each platform's levels, and the
/// user's settings may override it per event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlertPriority {
    Low,
    Normal,
    High,
}

/// What a bus message means to the notifications.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Alerting {
    /// Alert the user.
    Alert {
        /// The key of its settings in the notifications' config (`events.<key>`: enabled,
        /// platforms, priority — Unipi's names, `bg_task_finished`).
        event: &'static str,
        /// What happened, in a word or two (`Background Task Done`).
        title: &'static str,
        body: String,
        priority: AlertPriority,
        /// A question waiting for the user: the alert waits out the silence after typing and
        /// goes only if the question is still open then ([`Alerting::Answered`] with the same id
        /// closes it). Ids are unique among the questions on the bus. `None`: it goes at once,
        /// unless the user is typing.
        question: Option<u64>,
    },
    /// The question alerted with this id was settled (answered, timed out, cancelled).
    Answered(u64),
    /// How many running pieces of the publisher's work will wake the main agent when they end;
    /// while any will, the agent's settling is not "agent done".
    PendingWakes(usize),
}

impl Alerting {
    /// An alert that is not a question.
    pub fn alert(
        event: &'static str,
        title: &'static str,
        body: String,
        priority: AlertPriority,
    ) -> Self {
        Alerting::Alert {
            event,
            title,
            body,
            priority,
            question: None,
        }
    }
}

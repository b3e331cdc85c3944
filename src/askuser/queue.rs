//! The questions waiting for the user, oldest first: every `ask_user` call (from the main agent
//! or a helper) adds one entry with all its questions, and the modal shows the head. Whoever
//! settles an entry first — the user's last answer, its timeout, Pi aborting the call, the modal
//! closed without an answer — takes it out under the one lock, so a call is answered exactly
//! once; its answers go to the waiting tool call through a oneshot channel.
//!
//! An entry's timeout runs from when it becomes the head (a question queued behind another does
//! not lose its time unseen): the queue publishes the head's deadline on the entry's watch, and
//! the tool call waits on it. The queue opens the modal when the first question arrives and
//! again when the modal was closed while questions still wait; every change bumps the
//! capability's change signal, so the open modal pulls the new head.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use tokio::sync::{oneshot, watch};

use super::form::Form;
use super::params::AskRequest;
use super::response::Answer;
use crate::bridge::AgentId;
use crate::capability::Changed;

/// The head as the modal shows it.
#[derive(Clone, Debug)]
pub struct Shown {
    pub id: u64,
    pub agent: AgentId,
    pub(crate) request: Arc<AskRequest>,
    /// The question to answer now (earlier ones are answered).
    pub index: usize,
    pub deadline: Option<Instant>,
    /// Calls waiting behind this one.
    pub waiting: usize,
}

/// A new entry: its id, the answers when it is settled, and its deadline once it is shown.
pub struct Pending {
    pub id: u64,
    pub answers: oneshot::Receiver<Vec<Answer>>,
    pub deadline: watch::Receiver<Option<Instant>>,
}

struct Entry {
    id: u64,
    agent: AgentId,
    request: Arc<AskRequest>,
    answers: Vec<Answer>,
    deadline: watch::Sender<Option<Instant>>,
    done: Option<oneshot::Sender<Vec<Answer>>>,
}

#[derive(Default)]
struct State {
    entries: VecDeque<Entry>,
    next_id: u64,
    view_open: bool,
}

/// Opens the modal over the queue; `false` when there is no screen to open it on.
pub(crate) type Opener = Arc<dyn Fn(AskQueue) -> bool + Send + Sync>;

/// The queue. Cheap to clone.
#[derive(Clone)]
pub(crate) struct AskQueue {
    state: Arc<Mutex<State>>,
    changed: Changed,
    opener: Opener,
}

impl AskQueue {
    pub(crate) fn new(changed: Changed, opener: Opener) -> Self {
        AskQueue {
            state: Arc::new(Mutex::new(State::default())),
            changed,
            opener,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a call's questions behind the others, opening the modal if it is not open.
    pub(crate) fn push(&self, agent: AgentId, request: AskRequest) -> Pending {
        let (done, answers) = oneshot::channel();
        let (deadline_tx, deadline) = watch::channel(None);
        let id = {
            let mut state = self.lock();
            state.next_id += 1;
            let id = state.next_id;
            state.entries.push_back(Entry {
                id,
                agent,
                request: Arc::new(request),
                answers: Vec::new(),
                deadline: deadline_tx,
                done: Some(done),
            });
            start_head_clock(&mut state);
            id
        };
        self.changed.bump();
        self.ensure_view();
        Pending {
            id,
            answers,
            deadline,
        }
    }

    /// The head, if a question waits.
    pub(crate) fn head(&self) -> Option<Shown> {
        let state = self.lock();
        let entry = state.entries.front()?;
        Some(Shown {
            id: entry.id,
            agent: entry.agent.clone(),
            request: Arc::clone(&entry.request),
            index: entry.answers.len(),
            deadline: *entry.deadline.borrow(),
            waiting: state.entries.len() - 1,
        })
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().entries.len()
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The user answered question `index` of call `id`; the call is settled once every question
    /// is answered or the answer ends it. An answer to a question no longer shown is ignored.
    pub(crate) fn answer(&self, id: u64, index: usize, answer: Answer) {
        self.settle(id, |entry| {
            if entry.answers.len() != index {
                return false;
            }
            let ends = answer.ends_call();
            entry.answers.push(answer);
            ends || entry.answers.len() == entry.request.questions.len()
        });
    }

    /// The call was withdrawn (Pi aborted it, the modal closed without an answer): the questions
    /// answered so far, then `answer`. `false` when it was settled already.
    pub(crate) fn withdraw(&self, id: u64, answer: Answer) -> bool {
        self.settle(id, |entry| {
            entry.answers.push(answer);
            true
        })
    }

    /// The call's time ran out: each open question takes its recommended options, and the first
    /// without any times out (which ends the call).
    pub(crate) fn expire(&self, id: u64, after_ms: u128) -> bool {
        self.settle(id, |entry| {
            let request = Arc::clone(&entry.request);
            for question in &request.questions[entry.answers.len()..] {
                let answer = Form::timeout_answer(question, after_ms);
                let ends = answer.ends_call();
                entry.answers.push(answer);
                if ends {
                    break;
                }
            }
            true
        })
    }

    /// Applies `change` to entry `id`; when it says the entry is settled, sends its answers and
    /// shows the next one. Returns whether `id` was still waiting.
    fn settle(&self, id: u64, change: impl FnOnce(&mut Entry) -> bool) -> bool {
        let found = {
            let mut state = self.lock();
            match state.entries.iter().position(|entry| entry.id == id) {
                None => false,
                Some(position) => {
                    let settled = change(&mut state.entries[position]);
                    if settled && let Some(mut entry) = state.entries.remove(position) {
                        if let Some(done) = entry.done.take() {
                            // The call may be gone already (Pi aborted it): nothing to tell.
                            let _ = done.send(std::mem::take(&mut entry.answers));
                        }
                        start_head_clock(&mut state);
                    }
                    true
                }
            }
        };
        if found {
            self.changed.bump();
        }
        found
    }

    /// The modal closed; `shown` is the call it showed, if it was not answered. That call is
    /// cancelled (a question must not wait with nothing on screen), and the modal opens again
    /// for whatever else waits.
    pub(crate) fn view_closed(&self, shown: Option<u64>) {
        self.lock().view_open = false;
        if let Some(id) = shown {
            self.withdraw(
                id,
                Answer::Cancelled {
                    comment: "The question was closed without an answer".to_owned(),
                },
            );
        }
        self.ensure_view();
    }

    /// Opens the modal when questions wait and it is not open. Without a screen every waiting
    /// call is cancelled, saying why.
    fn ensure_view(&self) {
        {
            let mut state = self.lock();
            if state.view_open || state.entries.is_empty() {
                return;
            }
            state.view_open = true;
        }
        if (self.opener)(self.clone()) {
            return;
        }
        self.lock().view_open = false;
        let waiting: Vec<u64> = self.lock().entries.iter().map(|entry| entry.id).collect();
        for id in waiting {
            self.withdraw(
                id,
                Answer::Cancelled {
                    comment: "The workbench has no screen to ask on".to_owned(),
                },
            );
        }
    }
}

/// The head's timeout starts when it is first shown.
fn start_head_clock(state: &mut State) {
    if let Some(head) = state.entries.front()
        && let Some(timeout) = head.request.timeout
        && head.deadline.borrow().is_none()
    {
        head.deadline.send_replace(Some(Instant::now() + timeout));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::askuser::config::AskUserConfig;
    use crate::askuser::params::parse;

    fn request(args: serde_json::Value) -> AskRequest {
        parse(&args, &AskUserConfig::default(), true).unwrap()
    }

    /// A call asking "one", then "two".
    fn two_questions() -> AskRequest {
        request(json!({"questions": [{"question": "one"}, {"question": "two"}]}))
    }

    /// A queue whose modal "opens" by counting (or fails to, when `screen` is false).
    fn queue(screen: bool) -> (AskQueue, Arc<AtomicUsize>) {
        let opened = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&opened);
        let opener: Opener = Arc::new(move |queue: AskQueue| {
            count.fetch_add(1, Ordering::Relaxed);
            drop(queue);
            screen
        });
        (AskQueue::new(Changed::default(), opener), opened)
    }

    fn chosen(value: &str) -> Answer {
        Answer::chosen(&[value], &[], None)
    }

    #[test]
    fn calls_are_answered_in_order_once_each() {
        let (queue, opened) = queue(true);
        let mut first = queue.push(AgentId::main(), two_questions());
        let mut second = queue.push(
            AgentId::new("helper:h1"),
            request(json!({"question": "three"})),
        );
        assert_eq!(opened.load(Ordering::Relaxed), 1, "one modal for both");
        let head = queue.head().unwrap();
        assert_eq!((head.id, head.index, head.waiting), (first.id, 0, 1));
        queue.answer(first.id, 0, chosen("a"));
        assert_eq!(queue.head().unwrap().index, 1);
        // A stale answer (question 0 again) is ignored.
        queue.answer(first.id, 0, chosen("stale"));
        queue.answer(first.id, 1, chosen("b"));
        assert_eq!(
            first.answers.try_recv().unwrap(),
            vec![chosen("a"), chosen("b")]
        );
        assert!(!queue.withdraw(first.id, Answer::EndTurn), "settled once");
        let head = queue.head().unwrap();
        assert_eq!(
            (head.id, head.agent.to_string(), head.waiting),
            (second.id, "helper:h1".into(), 0)
        );
        queue.answer(second.id, 0, Answer::EndTurn);
        assert_eq!(second.answers.try_recv().unwrap(), vec![Answer::EndTurn]);
        assert!(queue.is_empty());
    }

    #[test]
    fn an_answer_that_ends_the_call_skips_the_rest() {
        let (queue, _) = queue(true);
        let mut call = queue.push(AgentId::main(), two_questions());
        queue.answer(call.id, 0, Answer::EndTurn);
        assert_eq!(call.answers.try_recv().unwrap(), vec![Answer::EndTurn]);
    }

    #[test]
    fn the_timeout_starts_when_shown_and_takes_the_recommended_options() {
        let (queue, _) = queue(true);
        let first = queue.push(AgentId::main(), request(json!({"question": "one"})));
        let mut second = queue.push(
            AgentId::main(),
            request(json!({"questions": [
            {"question": "two", "options": [{"label": "A", "recommended": true}]},
            {"question": "three"}, {"question": "four"}], "timeout": 5000})),
        );
        assert_eq!(*second.deadline.borrow(), None, "not shown yet");
        let before = Instant::now();
        queue.answer(first.id, 0, chosen("x"));
        let deadline = second.deadline.borrow().unwrap();
        assert!(deadline >= before + Duration::from_millis(5000));
        assert!(queue.expire(second.id, 5000));
        let answers = second.answers.try_recv().unwrap();
        assert_eq!(
            answers.len(),
            2,
            "the first without a recommendation ends it: {answers:?}"
        );
        assert_eq!(answers[0].kind(), "selection");
        assert_eq!(answers[1].kind(), "timed_out");
        assert!(!queue.expire(second.id, 5000));
    }

    #[test]
    fn closing_the_modal_cancels_the_shown_call_and_reopens_for_the_rest() {
        let (queue, opened) = queue(true);
        let mut first = queue.push(AgentId::main(), request(json!({"question": "one"})));
        let second = queue.push(AgentId::main(), request(json!({"question": "two"})));
        queue.view_closed(Some(first.id));
        assert_eq!(first.answers.try_recv().unwrap()[0].kind(), "cancelled");
        assert_eq!(
            opened.load(Ordering::Relaxed),
            2,
            "opened again for the second"
        );
        assert_eq!(queue.head().unwrap().id, second.id);
    }

    #[test]
    fn without_a_screen_waiting_calls_are_cancelled() {
        let (queue, _) = queue(false);
        let mut call = queue.push(AgentId::main(), request(json!({"question": "one"})));
        let answers = call.answers.try_recv().unwrap();
        assert_eq!(
            answers,
            vec![Answer::Cancelled {
                comment: "The workbench has no screen to ask on".into()
            }]
        );
        assert!(queue.is_empty());
    }
}

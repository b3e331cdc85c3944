//! The bridge face of ask-user: the `ask_user` tool. A call is validated ([`parse`]), announced on
//! the bus ([`AskUserPrompt`], when the settings say to notify), queued for the modal, and waited
//! for: the user's answers, its timeout, or Pi aborting it — whichever comes first settles it in
//! the queue. The answer's settling is announced too ([`AskUserAnswered`]), so a waiting
//! notification can stand down. A `new_session` answer is carried out after the call returns: once
//! the agent's turn has ended, Pi starts a new session of its own whose first message is the
//! prefill (the seed's hand-off), or — if the user chose to run it here — the session is
//! compacted if the user chose so, then the prefill is sent as the user's next message; the
//! original promised these and did neither.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::broadcast;

use super::bus::{AskUserAnswered, AskUserPrompt};
use super::config::AskUserConfig;
use super::params::{AskRequest, LONGEST_WAIT, parse, schema};
use super::queue::{AskQueue, Pending};
use super::response::{Answer, Launch, output, refusal};
use crate::bridge::{
    AgentId, BusEvent, CancelToken, DeliverAs, HostCall, Module, PiEvent, ToolCall, ToolError,
    ToolOutput, ToolSpec,
};
use crate::capability::BridgeLink;
use crate::config::live::LiveConfig;
use crate::sys::sleep_until_some;

pub const MODULE_NAME: &str = "ask-user";
pub const TOOL: &str = "ask_user";

/// How long a new-session launch waits for the agent to end its turn, and for the compaction.
const LAUNCH_WAIT: Duration = Duration::from_secs(600);

/// The instructions of a new-session compaction (the original's words).
fn compaction_instructions(prefill: &str) -> String {
    format!(
        "Preparing for new task. Summarize previous work concisely, preserving only what's \
         essential for: {prefill}"
    )
}

/// Whether a screen can show the modal now.
pub(crate) type HasScreen = Arc<dyn Fn() -> bool + Send + Sync>;

#[derive(Clone)]
pub(crate) struct AskUserModule {
    inner: Arc<Inner>,
}

struct Inner {
    /// `ask-user.json`, followed: an edit applies to the next question.
    config: LiveConfig<AskUserConfig>,
    queue: AskQueue,
    has_screen: HasScreen,
    link: OnceLock<BridgeLink>,
}

impl AskUserModule {
    pub(crate) fn new(
        config: impl Into<LiveConfig<AskUserConfig>>,
        queue: AskQueue,
        has_screen: HasScreen,
    ) -> Self {
        AskUserModule {
            inner: Arc::new(Inner {
                config: config.into(),
                queue,
                has_screen,
                link: OnceLock::new(),
            }),
        }
    }

    pub(crate) fn attach(&self, link: BridgeLink) {
        // A second attach (never done by the app) keeps the first link.
        let _ = self.inner.link.set(link);
    }

    /// The settings as the files are now.
    pub(crate) fn config(&self) -> AskUserConfig {
        *self.inner.config.get()
    }

    /// The settings overlay saved: later calls follow the new settings at once.
    pub(crate) fn reload_config(&self) {
        self.inner.config.reload();
    }

    #[cfg(test)]
    pub(crate) fn queue(&self) -> &AskQueue {
        &self.inner.queue
    }

    fn publish<T: crate::bridge::BusMessage>(&self, message: &T) {
        if let Some(link) = self.inner.link.get() {
            link.bus().publish(MODULE_NAME, message);
        }
    }

    /// One `ask_user` call, start to end.
    pub(crate) async fn ask(
        &self,
        agent: AgentId,
        args: serde_json::Value,
        cancel: CancelToken,
    ) -> ToolOutput {
        let config = self.config();
        let request = match parse(&args, &config, (self.inner.has_screen)()) {
            Ok(request) => request,
            Err(message) => return refusal(&message),
        };
        let pending = self.inner.queue.push(agent.clone(), request.clone());
        let id = pending.id;
        if config.notify_on_ask {
            let first = &request.questions[0];
            self.publish(&AskUserPrompt {
                id,
                agent: agent.to_string(),
                question: first.question.clone(),
                context: first.context.clone(),
                option_count: first.options.len(),
                allow_multiple: first.allow_multiple,
                allow_freeform: first.allow_freeform,
                question_count: request.questions.len(),
            });
        }
        let answers = wait(&self.inner.queue, pending, &request, &cancel).await;
        let kind = answers.last().map_or("cancelled", Answer::kind);
        self.publish(&AskUserAnswered {
            id,
            agent: agent.to_string(),
            kind: kind.to_owned(),
        });
        if let Some(Answer::NewSession { prefill, launch }) = answers.last()
            && let Some(link) = self.inner.link.get()
        {
            // Subscribed before the call returns, so the turn's end cannot be missed.
            let events = link.bus().subscribe();
            tokio::spawn(carry_out_launch(
                link.clone(),
                events,
                agent,
                prefill.clone(),
                *launch,
            ));
        }
        output(&request, &answers)
    }
}

/// Waits until the call is settled, settling it itself on its timeout or Pi's abort.
async fn wait(
    queue: &AskQueue,
    mut pending: Pending,
    request: &AskRequest,
    cancel: &CancelToken,
) -> Vec<Answer> {
    let mut withdrawn = false;
    let mut expired = false;
    let mut deadline_open = true;
    loop {
        let deadline = *pending.deadline.borrow_and_update();
        tokio::select! {
            biased;
            answers = &mut pending.answers => {
                return answers.unwrap_or_else(|_| vec![Answer::Cancelled {
                    comment: "The question was dropped".to_owned(),
                }]);
            }
            () = cancel.cancelled(), if !withdrawn => {
                withdrawn = true;
                queue.withdraw(pending.id, Answer::Cancelled {
                    comment: "Pi aborted the call".to_owned(),
                });
            }
            () = sleep_until_some(deadline), if !expired => {
                expired = true;
                let after = request.timeout.unwrap_or_default().as_millis();
                queue.expire(pending.id, after);
            }
            changed = pending.deadline.changed(), if deadline_open => {
                deadline_open = changed.is_ok();
            }
        }
    }
}

/// After a `new_session` answer: once `agent`'s turn has ended, start Pi's new session with the
/// prefill as its first message; or compact (if chosen), then send the prefill as the user's
/// next message. A compaction that fails or is refused still sends the prompt (the user asked
/// for the task; a warning from Pi says why it was not compacted).
async fn carry_out_launch(
    link: BridgeLink,
    mut events: broadcast::Receiver<BusEvent>,
    agent: AgentId,
    prefill: String,
    launch: Launch,
) {
    let settled = wait_for(&mut events, &agent, |event| {
        matches!(event, PiEvent::AgentSettled { .. })
    })
    .await;
    if !settled {
        tracing::warn!("ask_user: {agent} did not end its turn; the new task was not sent");
        return;
    }
    if launch == Launch::NewSession {
        let call = HostCall::NewSession {
            first_message: prefill,
        };
        if let Err(err) = link.host.call(&agent, call).await {
            tracing::warn!("ask_user: could not start a new session of {agent}: {err}");
        }
        return;
    }
    if launch == Launch::Compact {
        let call = HostCall::Compact {
            instructions: Some(compaction_instructions(&prefill)),
        };
        match link.host.call(&agent, call).await {
            Ok(_) => {
                if !wait_for(&mut events, &agent, |event| {
                    matches!(event, PiEvent::CompactionEnd(_))
                })
                .await
                {
                    tracing::warn!("ask_user: {agent}'s compaction did not end; sending anyway");
                }
            }
            Err(err) => tracing::warn!("ask_user: could not compact {agent}: {err}"),
        }
    }
    let send = HostCall::SendUserMessage {
        content: prefill,
        deliver_as: Some(DeliverAs::FollowUp),
    };
    if let Err(err) = link.host.call(&agent, send).await {
        tracing::warn!("ask_user: could not send the new task to {agent}: {err}");
    }
}

/// Waits (at most [`LAUNCH_WAIT`]) for an event of `agent` that `matches`; `false` when it did
/// not come.
async fn wait_for(
    events: &mut broadcast::Receiver<BusEvent>,
    agent: &AgentId,
    matches: impl Fn(&PiEvent) -> bool,
) -> bool {
    let found = async {
        loop {
            match events.recv().await {
                Ok(BusEvent::Pi { agent: from, event }) if &from == agent && matches(&event) => {
                    return true;
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return false,
            }
        }
    };
    tokio::time::timeout(LAUNCH_WAIT, found)
        .await
        .unwrap_or(false)
}

impl Module for AskUserModule {
    fn name(&self) -> &'static str {
        MODULE_NAME
    }

    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec::new(
                TOOL,
                "Ask User",
                "Ask the user a structured question and wait for the answer: options to pick \
                 (one, or several with allowMultiple), the user's own words (allowFreeform, on \
                 by default), notes on options, or several questions in one call (questions). \
                 The question appears over the terminal and the user is notified when away. \
                 Use it when a decision is the user's to make rather than guessing.",
            )
            .parameters(schema())
            .prompt_snippet("Ask the user a structured question with options.")
            .guideline(
                "Use ask_user when a decision belongs to the user (a preference, a risky or \
                 irreversible step, an unclear requirement) instead of guessing.",
            )
            .guideline(
                "Give ask_user a short question, `context` with what the user needs to decide, \
                 and 2-5 options with one-line descriptions; mark the one you would choose with \
                 `recommended: true`.",
            )
            .guideline(
                "Set allowMultiple on ask_user when several options may apply; set \
                 allowFreeform: false only when an answer outside the options makes no sense.",
            )
            .guideline(
                "An ask_user option with action \"input\" (or allowCustom) lets the user add \
                 text; \"end_turn\" lets the user stop you; \"new_session\" with a `prefill` \
                 starts that task afresh — end your turn when the user picks it.",
            )
            .guideline(
                "ask_user's `timeout` (milliseconds) is for questions that must not block: on \
                 expiry the recommended option is taken, else the answer is `timed_out`.",
            )
            .timeout(LONGEST_WAIT),
        ]
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let this = self.clone();
        Box::pin(async move {
            if call.tool != TOOL {
                return Err(ToolError::new(format!(
                    "module `{MODULE_NAME}` declares no tool `{}`",
                    call.tool
                )));
            }
            Ok(this.ask(call.agent, call.args, call.cancel).await)
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::bridge::{BusMessage, CancelHandle, ContentBlock};
    use crate::capability::Changed;

    fn module(config: AskUserConfig, screen: bool) -> AskUserModule {
        module_with(config.into(), screen)
    }

    fn module_with(config: LiveConfig<AskUserConfig>, screen: bool) -> AskUserModule {
        let opener: super::super::queue::Opener = Arc::new(move |_queue| screen);
        let queue = AskQueue::new(Changed::default(), opener);
        AskUserModule::new(config, queue, Arc::new(move || screen))
    }

    fn text(output: &ToolOutput) -> String {
        match &output.content[0] {
            ContentBlock::Text { text } => text.clone(),
            other => panic!("not text: {other:?}"),
        }
    }

    /// The next module event named `name` on the bus.
    async fn next_event(events: &mut broadcast::Receiver<BusEvent>, name: &str) -> Value {
        loop {
            match events.recv().await.unwrap() {
                BusEvent::Module {
                    name: got, data, ..
                } if got == name => return data,
                _ => {}
            }
        }
    }

    #[tokio::test]
    async fn a_call_is_announced_waits_for_the_answer_and_says_it_was_answered() {
        let dir = tempfile::tempdir().unwrap();
        let (link, _rx) = BridgeLink::idle(dir.path()).await;
        let mut events = link.bus().subscribe();
        let module = module(AskUserConfig::default(), true);
        module.attach(link);
        let args = serde_json::json!({"question": "Colour?", "context": "for the logo",
                                      "options": [{"label": "Red"}, {"label": "Blue"}]});
        let call = tokio::spawn({
            let module = module.clone();
            async move {
                module
                    .ask(AgentId::main(), args, CancelToken::never())
                    .await
            }
        });
        let prompt = next_event(&mut events, AskUserPrompt::NAME).await;
        assert_eq!(prompt["question"], "Colour?");
        assert_eq!(prompt["context"], "for the logo");
        assert_eq!(prompt["optionCount"], 2);
        assert_eq!(prompt["allowFreeform"], true);
        let id = prompt["id"].as_u64().unwrap();
        module
            .queue()
            .answer(id, 0, Answer::chosen(&["Blue"], &[], None));
        let output = call.await.unwrap();
        assert_eq!(text(&output), "User selected: Blue");
        let answered = next_event(&mut events, AskUserAnswered::NAME).await;
        assert_eq!(answered["id"], id);
        assert_eq!(answered["kind"], "selection");
    }

    #[tokio::test]
    async fn pi_aborting_the_call_cancels_it_and_no_prompt_when_notify_is_off() {
        let dir = tempfile::tempdir().unwrap();
        let (link, _rx) = BridgeLink::idle(dir.path()).await;
        let mut events = link.bus().subscribe();
        let config = AskUserConfig {
            notify_on_ask: false,
            ..AskUserConfig::default()
        };
        let module = module(config, true);
        module.attach(link);
        let (handle, token) = CancelHandle::pair();
        let call = tokio::spawn({
            let module = module.clone();
            async move {
                module
                    .ask(
                        AgentId::main(),
                        serde_json::json!({"question": "Go?"}),
                        token,
                    )
                    .await
            }
        });
        // The first event is the answer, after the abort: no prompt was published.
        while module.queue().is_empty() {
            tokio::task::yield_now().await;
        }
        handle.cancel();
        let output = call.await.unwrap();
        assert_eq!(text(&output), "User cancelled the selection");
        assert_eq!(output.details["response"]["comment"], "Pi aborted the call");
        let first = loop {
            if let BusEvent::Module { name, .. } = events.recv().await.unwrap() {
                break name;
            }
        };
        assert_eq!(first, AskUserAnswered::NAME);
        assert!(module.queue().is_empty());
    }

    #[tokio::test]
    async fn a_timeout_takes_the_recommended_option_or_times_out() {
        let module = module(AskUserConfig::default(), true);
        let args = serde_json::json!({"question": "Size?", "timeout": 40,
            "options": [{"label": "S"}, {"label": "M", "recommended": true}]});
        let output = module
            .ask(AgentId::main(), args, CancelToken::never())
            .await;
        assert_eq!(
            text(&output),
            "Timed out after 40ms; the recommended option was taken. User selected: M"
        );
        let args = serde_json::json!({"question": "Size?", "timeout": 40});
        let output = module
            .ask(AgentId::main(), args, CancelToken::never())
            .await;
        assert_eq!(text(&output), "User did not respond (timed out)");
        assert_eq!(
            output.details["response"]["comment"],
            "Timed out after 40ms"
        );
    }

    #[tokio::test]
    async fn refusals_come_back_as_text_without_queueing() {
        let off = AskUserConfig {
            enabled: false,
            ..AskUserConfig::default()
        };
        let cases = [
            (off, true, "Error: ask_user tool is disabled in settings."),
            (
                AskUserConfig::default(),
                false,
                "Error: UI not available (running in non-interactive mode)",
            ),
        ];
        for (config, has_screen, refusal) in cases {
            let refusing = module(config, has_screen);
            let output = refusing
                .ask(
                    AgentId::main(),
                    serde_json::json!({"question": "q"}),
                    CancelToken::never(),
                )
                .await;
            assert_eq!(text(&output), refusal);
            assert!(refusing.queue().is_empty(), "{refusal}");
        }
    }

    /// `ask-user.json` is followed: switching the tool off in the workspace's file refuses the
    /// next question, and removing the line lets the one after that through — no restart.
    #[tokio::test]
    async fn an_edit_of_the_file_applies_to_the_next_question() {
        use crate::askuser::config::{ASK_USER_CONFIG_FILE, AskUserConfig};
        use crate::config::module_file::ModuleConfig;
        use crate::config::module_file::write_module_file;
        let (home, workspace) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (live, errors) = LiveConfig::module(
            Some(home.path()),
            workspace.path(),
            &[ASK_USER_CONFIG_FILE],
            AskUserConfig::load,
        );
        assert!(errors.is_empty(), "{errors:?}");
        // Without a screen the tool answers at once; which refusal it gives shows the config.
        let module = module_with(live, false);
        let ask = || async {
            let args = serde_json::json!({"question": "q"});
            text(
                &module
                    .ask(AgentId::main(), args, CancelToken::never())
                    .await,
            )
        };
        let no_screen = "Error: UI not available (running in non-interactive mode)";
        assert_eq!(ask().await, no_screen);
        write_module_file(
            workspace.path(),
            ASK_USER_CONFIG_FILE,
            r#"{"enabled": false}"#,
        );
        assert_eq!(ask().await, "Error: ask_user tool is disabled in settings.");
        write_module_file(workspace.path(), ASK_USER_CONFIG_FILE, "{}");
        assert_eq!(ask().await, no_screen);
    }
}

//! The `/btw` service: the thread, who answers it, and what each command does to it.
//!
//! Questions go to a side Pi of the workbench's own (the same RPC runtime fusion keeps for its
//! sidekick: `pi --mode rpc --no-session --no-tools`), one at a time, each in a fresh session
//! with the whole thread in its prompt. Which model it runs: the sidekick while fusion is on
//! (learnt from fusion's status on the bus, never from fusion's code), else the main agent's
//! model (learnt from the main Pi's `session_start` and `model_select`); a change of model
//! restarts it at the next question. Every call's usage goes on the bus as `unipi:model:usage`
//! (`source: btw`), so fusion counts what the sidekick saved.
//!
//! The thread follows the main session: it is written next to Pi's session file after every
//! change and read back when a session starts (a resume finds its thread; `/new` starts with
//! none). Nothing of it reaches the main conversation but through `/btw:inject` and
//! `/btw:summarize`, which send it as a user message.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context as _;

use super::context::conversation_excerpt;
use super::notes::save_note;
use super::thread::{self, Mode, Thread, Turn, summary_message};
use crate::bridge::{AgentId, BridgeHost, BusEvent, DeliverAs, EventBus, HostCall, PiEvent};
use crate::capability::{Changed, Ui};
use crate::fusion::bus::{FusionStatus, FusionStatusQuery, ModelUsage, UsageCounts};
use crate::fusion::config::ModelRef;
use crate::fusion::runtime::{Answer, SidekickRuntime};
use crate::sys::{lock, now_ms};

/// How long one answer may take.
const ANSWER_LIMIT: Duration = Duration::from_secs(180);
/// The bus name this module publishes under.
const MODULE: &str = "btw";

/// What the overlay shows besides the thread.
#[derive(Clone, Debug, Default)]
pub(crate) struct Progress {
    /// The question on its way.
    pub(crate) asking: Option<String>,
    pub(crate) status: Option<String>,
    pub(crate) failed: bool,
}

/// What the service knows.
#[derive(Default)]
struct State {
    thread: Thread,
    progress: Progress,
    /// The main session's file (the thread is kept next to it).
    session_file: Option<PathBuf>,
    /// The main agent's model, `provider/id`.
    main_model: Option<String>,
    /// Fusion's sidekick while fusion is on.
    sidekick: Option<String>,
}

pub(crate) struct BtwService {
    runtime: SidekickRuntime,
    state: std::sync::Mutex<State>,
    /// One question (or summary) at a time.
    turn: tokio::sync::Mutex<()>,
    changed: Changed,
    ui: Ui,
    workspace: PathBuf,
    host: std::sync::Mutex<Option<BridgeHost>>,
    bus: std::sync::Mutex<Option<EventBus>>,
    /// The main agent is running (an injected thread then waits as a follow-up).
    main_busy: AtomicBool,
    /// Bumped when the overlay should close (`/btw:clear`, an inject).
    dismissals: AtomicU64,
}

impl BtwService {
    pub(crate) fn new(runtime: SidekickRuntime, ui: Ui, workspace: PathBuf) -> Self {
        BtwService {
            runtime,
            state: std::sync::Mutex::new(State::default()),
            turn: tokio::sync::Mutex::new(()),
            changed: Changed::default(),
            ui,
            workspace,
            host: std::sync::Mutex::new(None),
            bus: std::sync::Mutex::new(None),
            main_busy: AtomicBool::new(false),
            dismissals: AtomicU64::new(0),
        }
    }

    pub(crate) fn changed(&self) -> &Changed {
        &self.changed
    }

    pub(crate) fn ui(&self) -> &Ui {
        &self.ui
    }

    pub(crate) fn runtime(&self) -> &SidekickRuntime {
        &self.runtime
    }

    pub(crate) fn thread(&self) -> Thread {
        lock(&self.state).thread.clone()
    }

    pub(crate) fn progress(&self) -> Progress {
        lock(&self.state).progress.clone()
    }

    pub(crate) fn dismissals(&self) -> u64 {
        self.dismissals.load(Ordering::SeqCst)
    }

    /// Who answers, as the overlay says it: `provider/id (sidekick)` or `… (main model)`.
    pub(crate) fn answerer(&self) -> String {
        match self.answering_model() {
            Some((model, role)) => format!("{model} ({role})"),
            None => "no model yet".to_owned(),
        }
    }

    fn answering_model(&self) -> Option<(ModelRef, &'static str)> {
        let state = lock(&self.state);
        let sidekick = state.sidekick.as_deref().and_then(ModelRef::parse);
        let main = state.main_model.as_deref().and_then(ModelRef::parse);
        sidekick
            .map(|model| (model, "sidekick"))
            .or_else(|| main.map(|model| (model, "main model")))
    }

    /// Keeps the running bridge and follows the bus: the main session, its model, fusion.
    pub(crate) fn attach(self: &Arc<Self>, host: BridgeHost, bus: EventBus) {
        *lock(&self.host) = Some(host);
        *lock(&self.bus) = Some(bus.clone());
        let mut events = bus.subscribe();
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                match events.recv().await {
                    Ok(event) => match weak.upgrade() {
                        Some(service) => service.on_bus(&event),
                        None => return,
                    },
                    Err(RecvError::Lagged(missed)) => {
                        tracing::debug!("btw: {missed} bus events missed");
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        });
        // Fusion answers with its status, whichever of the two started first.
        bus.publish(MODULE, &FusionStatusQuery);
    }

    fn on_bus(&self, event: &BusEvent) {
        match event {
            BusEvent::Pi { agent, event } if *agent == AgentId::main() => self.on_main(event),
            BusEvent::Module { .. } => {
                if let Some(status) = event.decode::<FusionStatus>() {
                    let sidekick = status.sidekick.filter(|_| status.active);
                    lock(&self.state).sidekick = sidekick;
                    self.changed.bump();
                }
            }
            _ => {}
        }
    }

    fn on_main(&self, event: &PiEvent) {
        match event {
            PiEvent::SessionStart(start) => {
                let file = start.session_file.as_ref().map(PathBuf::from);
                let thread = file.as_deref().map_or_else(
                    || Ok(Thread::default()),
                    |file| thread::load(&thread::thread_path(file)),
                );
                let thread = thread.unwrap_or_else(|err| {
                    tracing::warn!("btw: the thread is not restored: {err:#}");
                    self.ui.notice(format!("/btw thread not restored: {err:#}"));
                    Thread::default()
                });
                let mut state = lock(&self.state);
                if let Some(model) = &start.model {
                    state.main_model = Some(format!("{}/{}", model.provider, model.id));
                }
                if state.session_file != file {
                    if !thread.is_empty() {
                        tracing::info!("btw: {} exchanges restored", thread.turns.len());
                    }
                    state.thread = thread;
                    state.session_file = file;
                }
                drop(state);
                self.changed.bump();
            }
            PiEvent::ModelSelect(select) => {
                let model = format!("{}/{}", select.model.provider, select.model.id);
                lock(&self.state).main_model = Some(model);
                self.changed.bump();
            }
            PiEvent::AgentStart => self.main_busy.store(true, Ordering::SeqCst),
            PiEvent::AgentSettled { .. } => self.main_busy.store(false, Ordering::SeqCst),
            _ => {}
        }
    }

    fn set_progress(&self, progress: Progress) {
        lock(&self.state).progress = progress;
        self.changed.bump();
    }

    pub(crate) fn set_status(&self, status: impl Into<String>, failed: bool) {
        self.set_progress(Progress {
            asking: None,
            status: Some(status.into()),
            failed,
        });
    }

    /// Starts a new thread in `mode` (`/btw:new`, `/btw:tangent`, a mode change).
    pub(crate) fn reset(&self, mode: Mode) {
        {
            let mut state = lock(&self.state);
            state.thread = Thread {
                mode,
                turns: Vec::new(),
            };
        }
        self.persist();
    }

    /// `/btw:clear`: the thread is dropped and the overlay closes.
    pub(crate) fn clear(&self) {
        let mode = lock(&self.state).thread.mode;
        self.reset(mode);
        self.set_progress(Progress::default());
        self.dismissals.fetch_add(1, Ordering::SeqCst);
        self.changed.bump();
    }

    /// Switches to `mode` for the next question: a thread of the other mode starts afresh.
    pub(crate) fn enter_mode(&self, mode: Mode) {
        if lock(&self.state).thread.mode != mode {
            self.reset(mode);
        }
    }

    /// Asks `question` in the thread; `save` also writes the exchange as a note. Returns the
    /// answer, or why there is none (also in the overlay's status).
    pub(crate) async fn ask(&self, question: &str, save: bool) -> anyhow::Result<Turn> {
        let _turn = self.turn.lock().await;
        self.set_progress(Progress {
            asking: Some(question.to_owned()),
            status: Some(format!("Asking {}…", self.answerer())),
            failed: false,
        });
        match self.answer(question).await {
            Ok(turn) => {
                lock(&self.state).thread.turns.push(turn.clone());
                self.persist();
                let mut status = "Ready for a follow-up. The side thread is updated.".to_owned();
                if save {
                    match save_note(&self.workspace, &turn) {
                        Ok(path) => status = format!("Saved as a note: {}", path.display()),
                        Err(err) => status = format!("The note was not saved: {err:#}"),
                    }
                }
                self.set_status(status, false);
                Ok(turn)
            }
            Err(err) => {
                self.set_status(
                    format!("Request failed: {err:#}. The thread is kept for a retry."),
                    true,
                );
                Err(err)
            }
        }
    }

    async fn answer(&self, question: &str) -> anyhow::Result<Turn> {
        let (thread, file) = {
            let state = lock(&self.state);
            (state.thread.clone(), state.session_file.clone())
        };
        let excerpt = match (thread.mode, file) {
            (Mode::Contextual, Some(file)) => {
                tokio::task::spawn_blocking(move || conversation_excerpt(&file))
                    .await
                    .unwrap_or_default()
            }
            _ => String::new(),
        };
        let answer = self.ask_side_pi(&thread.prompt(question, &excerpt)).await?;
        Ok(Turn {
            question: question.trim().to_owned(),
            answer: answer.text.trim().to_owned(),
            model: answer.model.unwrap_or_default(),
            at_ms: now_ms(),
        })
    }

    /// One prompt to the side Pi on the answering model (restarted on a change of model).
    async fn ask_side_pi(&self, prompt: &str) -> anyhow::Result<Answer> {
        let (model, _) = self.answering_model().context(
            "no model to answer with yet (the main agent has not said which model it runs)",
        )?;
        if self.runtime.model().as_ref() != Some(&model) {
            self.runtime
                .restart(model.clone())
                .await
                .with_context(|| format!("start a side Pi on {model}"))?;
        }
        let mut answer = self
            .runtime
            .ask(prompt, ANSWER_LIMIT)
            .await
            .map_err(|refusal| anyhow::anyhow!(refusal.into_text()))?;
        let answered_by = answer
            .model
            .get_or_insert_with(|| model.to_string())
            .clone();
        self.report_usage(&answered_by, &answer);
        Ok(answer)
    }

    /// `unipi:model:usage` for fusion's savings.
    fn report_usage(&self, model: &str, answer: &Answer) {
        let Some(bus) = lock(&self.bus).clone() else {
            return;
        };
        let usage = answer.usage;
        bus.publish(
            MODULE,
            &ModelUsage {
                source: "btw".to_owned(),
                id: format!("btw-{}", now_ms()),
                model: model.to_owned(),
                usage: UsageCounts::from(&usage),
            },
        );
    }

    /// `/btw:inject [instructions]`: the thread goes to the main agent as a user message, then
    /// a fresh thread starts.
    pub(crate) async fn inject(&self, instructions: &str) -> anyhow::Result<String> {
        let thread = self.thread();
        anyhow::ensure!(!thread.is_empty(), "No BTW thread to inject.");
        self.set_status("Injecting into the main session…", false);
        let sent = self.send_to_main(thread.inject_message(instructions)).await;
        self.after_handoff(sent, &thread, "thread")
    }

    /// `/btw:summarize [instructions]`: the side Pi summarizes the thread and the summary goes to
    /// the main agent, then a fresh thread starts.
    pub(crate) async fn summarize(&self, instructions: &str) -> anyhow::Result<String> {
        let thread = self.thread();
        anyhow::ensure!(!thread.is_empty(), "No BTW thread to summarize.");
        let _turn = self.turn.lock().await;
        self.set_status("Summarizing…", false);
        let sent = match self.ask_side_pi(&thread.summarize_prompt()).await {
            Ok(summary) => {
                self.send_to_main(summary_message(&summary.text, instructions))
                    .await
            }
            Err(err) => Err(err.context("summarize the thread")),
        };
        self.after_handoff(sent, &thread, "summary")
    }

    fn after_handoff(
        &self,
        sent: anyhow::Result<()>,
        thread: &Thread,
        what: &str,
    ) -> anyhow::Result<String> {
        if let Err(err) = sent {
            self.set_status(
                format!("Sending the {what} failed: {err:#}. The thread is kept."),
                true,
            );
            return Err(err);
        }
        let count = thread.turns.len();
        let message = format!(
            "Injected BTW {what} ({count} exchange{}).",
            if count == 1 { "" } else { "s" }
        );
        self.reset(thread.mode);
        self.set_status(message.clone(), false);
        self.dismissals.fetch_add(1, Ordering::SeqCst);
        self.changed.bump();
        Ok(message)
    }

    async fn send_to_main(&self, content: String) -> anyhow::Result<()> {
        let host = lock(&self.host)
            .clone()
            .context("the bridge to Pi is not running")?;
        let deliver_as = self
            .main_busy
            .load(Ordering::SeqCst)
            .then_some(DeliverAs::FollowUp);
        host.call(
            &AgentId::main(),
            HostCall::SendUserMessage {
                content,
                deliver_as,
            },
        )
        .await
        .context("send the message to the main agent")?;
        Ok(())
    }

    /// Writes the thread next to the main session's file (nothing without one).
    fn persist(&self) {
        let (file, thread) = {
            let state = lock(&self.state);
            (state.session_file.clone(), state.thread.clone())
        };
        let Some(file) = file else {
            return;
        };
        let path = thread::thread_path(&file);
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .with_context(|| format!("create the folder of {}", path.display()))
            .and_then(|()| thread::save(&path, &thread));
        if let Err(err) = written {
            tracing::warn!("btw: the thread is not kept: {err:#}");
            self.ui.notice(format!("/btw thread not kept: {err:#}"));
        }
    }
}

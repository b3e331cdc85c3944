//! The fusion engine: the pair in force and everything that follows from it.
//!
//! - **Applying a pair** ([`Engine::apply`]): the models Pi knows are listed (with whether Pi has a
//!   key for each); a model Pi does not know, or one without a key, is refused in words and nothing
//!   changes. Then the primary becomes the main Pi's model (`set_model` through the bridge), the
//!   previous sidekick runtime stops and one starts on the sidekick, and the pair is published. The
//!   active preset is applied when the main Pi first connects.
//! - **Savings** ([`Engine::record`]): every call the sidekick serves — a helper's run reported on
//!   the bus (`unipi:model:usage`), a side question, a session name — is priced on the sidekick
//!   (Pi's own figure when it gave one) and on the primary at the prices Pi lists, added to the
//!   session's and the all-time totals in memory (the footer reads them every frame) and appended
//!   to the session database.
//! - **Fallback**: a rate-limit or quota error from the main Pi's model moves it to the preset's
//!   fallback, and a timer brings it back after the cooldown (`fallback.rs`). Each move is told in
//!   Pi's conversation, naming both models, and in short in the footer (`Engine::tell`): a footer
//!   notice alone lasts a few seconds and has no room for two `provider/id` names.
//! - **Session names**: after the first turn of a session without a name, the sidekick names it.
//! - **Status**: [`Engine::publish`] puts the pair, the fallback, the warm pool's size and the
//!   savings on the event bus as `unipi:fusion:status`, and again whenever a module asks.
//!
//! The main Pi is reached through [`MainPi`] (the bridge host in the workbench, a fake in tests),
//! so the engine runs without a Pi in unit tests.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures_util::future::BoxFuture;
use serde_json::Value;
use unipi_widgets::footer::Segment;
use unipi_widgets::fusion::{FusionSegment, fusion_segment};

use super::bus::{
    FusionFallback, FusionPool, FusionSavings, FusionStatus, FusionStatusQuery, ModelUsage,
    SavingsTotals,
};
use super::config::{FusionConfig, ModelRef, Preset};
use super::fallback::{FallbackState, Step};
use super::ledger::{Breakdown, Ledger};
use super::runtime::{Answer, SidekickRuntime};
use super::savings::{CallCost, Tokens, call_cost};
use super::side;
use crate::bridge::{
    AgentId, BridgeHost, BusEvent, EventBus, HostCall, ModelInfo, NotifyLevel, PiEvent, Refusal,
};
use crate::capability::{Changed, Ui};
use crate::config::live::LiveConfig;
use crate::sessiondb::{SidekickCall, SidekickTotals};
use crate::sys::{lock, now_ms};

/// How long naming a session may take.
const NAMING_LIMIT: Duration = Duration::from_secs(60);
/// The module name fusion's bus events carry.
pub(crate) const MODULE: &str = "fusion";

/// The main Pi, as the engine reaches it.
pub(crate) trait MainPi: Send + Sync {
    /// A host call to the main agent; the error says why it failed.
    fn call(&self, call: HostCall) -> BoxFuture<'static, Result<Value, Refusal>>;
}

/// The main Pi through the bridge host.
pub(crate) struct BridgeMainPi(pub BridgeHost);

impl MainPi for BridgeMainPi {
    fn call(&self, call: HostCall) -> BoxFuture<'static, Result<Value, Refusal>> {
        let host = self.0.clone();
        Box::pin(async move { Ok(host.call(&AgentId::main(), call).await?) })
    }
}

/// The pair in force and what the engine knows of the main session.
#[derive(Debug, Clone, Default)]
pub(crate) struct PairState {
    /// The preset it came from (a pair from the picker is saved as the active preset).
    pub preset: Option<String>,
    pub primary: Option<ModelInfo>,
    pub sidekick: Option<ModelInfo>,
    /// The preset's fallback and cooldown.
    pub fallback: Option<ModelRef>,
    pub cooldown: Duration,
    pub session_id: Option<String>,
    pub session_file: Option<PathBuf>,
    /// The session has a name, or naming it was tried.
    pub session_named: bool,
    /// The session's first request, for its name.
    pub first_request: Option<String>,
    /// The totals the database held when the session started (read in order after every call
    /// recorded before), and the calls recorded since: together, every call once.
    pub session_stored: SidekickTotals,
    pub session_since: SidekickTotals,
    pub all_stored: SidekickTotals,
    pub all_since: SidekickTotals,
}

impl PairState {
    pub(crate) fn is_on(&self) -> bool {
        self.primary.is_some() && self.sidekick.is_some()
    }

    /// What the sidekick served this session.
    pub(crate) fn session_totals(&self) -> SidekickTotals {
        self.session_stored.plus(self.session_since)
    }

    /// What it served in this project, ever.
    pub(crate) fn all_totals(&self) -> SidekickTotals {
        self.all_stored.plus(self.all_since)
    }
}

/// The engine. Shared as `Arc<Engine>` by the capability, its views' ports and its tasks.
pub struct Engine {
    ui: Ui,
    /// The config in force: the file's, with the edits made here ahead of their writes.
    config: Mutex<FusionConfig>,
    /// `fusion.json`, followed: an edit by hand is taken at the next use ([`Engine::config`])
    /// once no edit of ours is still being written.
    file: LiveConfig<FusionConfig>,
    /// The file's version the config was last taken from.
    file_seen: Mutex<Arc<FusionConfig>>,
    state: Mutex<PairState>,
    fallback: Mutex<FallbackState>,
    runtime: SidekickRuntime,
    ledger: Ledger,
    main: Mutex<Option<Arc<dyn MainPi>>>,
    bus: Mutex<Option<EventBus>>,
    changed: Changed,
    /// The active preset was applied (or tried) at the main Pi's first connection.
    started: AtomicBool,
    /// Edits of the config so far, and the last one written to the file.
    config_edits: AtomicU64,
    config_written: Arc<Mutex<u64>>,
}

/// An edit of the presets file, made in memory, to be written (crash-safe).
#[must_use = "the edit is not on disk until finished"]
pub(crate) struct ConfigWrite {
    config: FusionConfig,
    generation: u64,
    written: Arc<Mutex<u64>>,
}

impl ConfigWrite {
    /// Writes the file, unless a later edit was written already (writes may finish in any
    /// order; the file ends as the last edit left it).
    pub(crate) async fn finish(self) -> Result<(), Refusal> {
        let saved = tokio::task::spawn_blocking(move || {
            let mut written = lock(&self.written);
            if *written > self.generation {
                return Ok(());
            }
            self.config.save()?;
            *written = self.generation;
            anyhow::Ok(())
        })
        .await
        .context("the config writer panicked")?;
        Ok(saved.context("could not save the presets")?)
    }
}

impl Engine {
    pub(crate) fn new(
        ui: Ui,
        config: impl Into<LiveConfig<FusionConfig>>,
        runtime: SidekickRuntime,
        ledger: Ledger,
    ) -> Self {
        let file = config.into();
        let seen = file.get();
        Engine {
            ui,
            config: Mutex::new((*seen).clone()),
            file,
            file_seen: Mutex::new(seen),
            state: Mutex::new(PairState::default()),
            fallback: Mutex::new(FallbackState::default()),
            runtime,
            ledger,
            main: Mutex::new(None),
            bus: Mutex::new(None),
            changed: Changed::default(),
            started: AtomicBool::new(false),
            config_edits: AtomicU64::new(0),
            config_written: Arc::new(Mutex::new(0)),
        }
    }

    pub fn changed(&self) -> &Changed {
        &self.changed
    }

    pub fn ui(&self) -> &Ui {
        &self.ui
    }

    pub(crate) fn state(&self) -> PairState {
        lock(&self.state).clone()
    }

    /// The config in force; a file edited by hand since the last look is taken first.
    pub(crate) fn config(&self) -> FusionConfig {
        let mut config = lock(&self.config);
        self.take_file_edits(&mut config);
        config.clone()
    }

    /// Replaces `config` with the file's when the file changed and every edit made here is on
    /// disk (one still being written would overwrite the file anyway: the last edit wins).
    fn take_file_edits(&self, config: &mut FusionConfig) {
        let settled = *lock(&self.config_written) == self.config_edits.load(Ordering::SeqCst);
        if !settled {
            return;
        }
        let file = self.file.get();
        let mut seen = lock(&self.file_seen);
        if !Arc::ptr_eq(&file, &seen) {
            *config = (*file).clone();
            *seen = file;
        }
    }

    pub fn runtime(&self) -> &SidekickRuntime {
        &self.runtime
    }

    /// The fallback standing in for the primary, and when it returns.
    pub(crate) fn active_fallback(&self) -> Option<(ModelRef, Instant)> {
        lock(&self.fallback)
            .active()
            .map(|active| (active.model.clone(), active.until))
    }

    /// The bridge is up: the main Pi and the bus.
    pub(crate) fn connect(&self, main: Arc<dyn MainPi>, bus: EventBus) {
        *lock(&self.main) = Some(main);
        *lock(&self.bus) = Some(bus);
    }

    fn main_pi(&self) -> Result<Arc<dyn MainPi>, Refusal> {
        lock(&self.main)
            .clone()
            .ok_or_else(|| "the bridge to Pi is not up".into())
    }

    /// Every model Pi knows, with whether it has a key for each.
    pub async fn models(&self) -> Result<Vec<ModelInfo>, Refusal> {
        let value = self.main_pi()?.call(HostCall::ListAllModels).await?;
        Ok(serde_json::from_value(value).context("Pi's model list did not decode")?)
    }

    /// Applies `preset` (named `name`): the primary becomes Pi's model, the sidekick runtime
    /// starts. Refused with the reason, and nothing changed, when Pi does not know a model or
    /// has no key for it. With `persist`, the config file records it as the active preset.
    pub async fn apply(
        &self,
        name: &str,
        preset: Preset,
        persist: bool,
    ) -> Result<String, Refusal> {
        let models = self.models().await?;
        let primary = usable(&models, &preset.primary, "primary")?;
        let sidekick = usable(&models, &preset.sidekick, "sidekick")?;
        if let Some(fallback) = &preset.fallback {
            usable(&models, fallback, "fallback")?;
        }
        self.set_main_model(&preset.primary).await?;
        let started = self.runtime.restart(preset.sidekick.clone()).await;
        lock(&self.fallback).reset();
        {
            let mut state = lock(&self.state);
            state.preset = Some(name.to_owned());
            state.primary = Some(primary);
            state.sidekick = Some(sidekick);
            state.fallback = preset.fallback.clone();
            state.cooldown = preset.cooldown;
        }
        if persist {
            self.edit_config(|config| {
                config.presets.insert(name.to_owned(), preset.clone());
                config.active = Some(name.to_owned());
                Ok(())
            })?
            .finish()
            .await?;
        }
        self.publish();
        match started {
            Ok(()) => Ok(format!(
                "Model fusion: {} is the primary, {} the sidekick (preset {name})",
                preset.primary, preset.sidekick
            )),
            Err(err) => Err(format!(
                "{} is the primary, but the sidekick {} could not start: {err:#}",
                preset.primary, preset.sidekick
            )
            .into()),
        }
    }

    /// Fusion off: the sidekick stops, no preset is active (Pi keeps its model).
    pub(crate) async fn turn_off(&self) -> Result<String, Refusal> {
        self.runtime.stop().await;
        lock(&self.fallback).reset();
        {
            let mut state = lock(&self.state);
            state.preset = None;
            state.primary = None;
            state.sidekick = None;
            state.fallback = None;
        }
        self.edit_config(|config| {
            config.active = None;
            Ok(())
        })?
        .finish()
        .await?;
        self.publish();
        Ok("Model fusion is off: helpers use their own model, no sidekick runs".to_owned())
    }

    /// The active preset was renamed.
    pub(crate) fn renamed_preset(&self, from: &str, to: &str) {
        let mut state = lock(&self.state);
        if state.preset.as_deref() == Some(from) {
            state.preset = Some(to.to_owned());
        }
    }

    /// Changes the config at once, under its lock — so the next edit starts from this one, even
    /// before this one is on disk — and returns the file write to finish. `edit` refusing
    /// changes nothing.
    pub(crate) fn edit_config(
        &self,
        edit: impl FnOnce(&mut FusionConfig) -> Result<(), Refusal>,
    ) -> Result<ConfigWrite, Refusal> {
        let mut config = lock(&self.config);
        self.take_file_edits(&mut config);
        let mut next = config.clone();
        edit(&mut next)?;
        *config = next.clone();
        let generation = self.config_edits.fetch_add(1, Ordering::SeqCst) + 1;
        drop(config);
        self.changed.bump();
        Ok(ConfigWrite {
            config: next,
            generation,
            written: self.config_written.clone(),
        })
    }

    async fn set_main_model(&self, model: &ModelRef) -> Result<(), Refusal> {
        let call = HostCall::SetModel {
            provider: model.provider.clone(),
            id: model.id.clone(),
        };
        match self.main_pi()?.call(call).await? {
            Value::Bool(true) => Ok(()),
            _ => Err(format!(
                "Pi did not switch to {model}: it has no credentials for provider `{}`; nothing \
                 changed",
                model.provider
            )
            .into()),
        }
    }

    /// Prices a call the sidekick served and adds it to the totals and the database. Calls on
    /// another model (a helper with a model of its own) are not the sidekick's and are skipped.
    pub(crate) fn record(
        &self,
        source: &str,
        model: &str,
        tokens: Tokens,
        reported: Option<f64>,
    ) -> Option<CallCost> {
        let (call, cost) = {
            let mut state = lock(&self.state);
            let sidekick = state.sidekick.as_ref()?;
            if !same_model(model, sidekick) {
                return None;
            }
            let primary = state.primary.as_ref()?;
            let cost = call_cost(
                &tokens,
                reported,
                sidekick.cost.as_ref(),
                primary.cost.as_ref(),
            );
            let call = SidekickCall {
                session_id: state
                    .session_id
                    .clone()
                    .unwrap_or_else(|| "unknown".to_owned()),
                at_ms: i64::try_from(now_ms()).unwrap_or(i64::MAX),
                source: source.to_owned(),
                sidekick_model: sidekick.qualified(),
                primary_model: primary.qualified(),
                input_tokens: tokens.input,
                output_tokens: tokens.output,
                cache_read_tokens: tokens.cache_read,
                cache_write_tokens: tokens.cache_write,
                sidekick_cost: cost.sidekick,
                primary_cost: cost.primary,
            };
            state.session_since.add(&call);
            state.all_since.add(&call);
            (call, cost)
        };
        tracing::info!(
            "fusion: {source} on the sidekick: {} tokens, ${:.6} (the primary: ${:.6})",
            tokens.total(),
            cost.sidekick,
            cost.primary
        );
        let ledger = self.ledger.clone();
        tokio::spawn(async move {
            if let Err(err) = ledger.record(call).await {
                tracing::warn!("fusion: savings not stored: {err:#}");
            }
        });
        self.publish();
        Some(cost)
    }

    fn record_answer(&self, source: &str, answer: &Answer) -> Option<CallCost> {
        let model = answer
            .model
            .clone()
            .or_else(|| self.runtime.model().map(|model| model.to_string()))?;
        let usage = answer.usage;
        let tokens = Tokens {
            input: usage.input,
            output: usage.output,
            cache_read: usage.cache_read,
            cache_write: usage.cache_write,
        };
        self.record(source, &model, tokens, Some(usage.cost))
    }

    /// The status as published on the bus.
    pub(super) fn status(&self) -> FusionStatus {
        let state = self.state();
        let totals = |totals: &SidekickTotals| SavingsTotals {
            calls: totals.calls,
            tokens: totals.tokens,
            sidekick_cost: totals.sidekick_cost,
            primary_cost: totals.primary_cost,
            saved: totals.saved(),
        };
        let fallback = self.active_fallback().map(|(model, until)| {
            let left = until.saturating_duration_since(Instant::now());
            let until_ms =
                now_ms().saturating_add(u64::try_from(left.as_millis()).unwrap_or(u64::MAX));
            FusionFallback {
                model: model.to_string(),
                until_ms,
            }
        });
        let pool = self.config().pool;
        let on = state.is_on();
        FusionStatus {
            active: on,
            preset: state.preset.clone(),
            primary: state.primary.as_ref().map(ModelInfo::qualified),
            sidekick: state.sidekick.as_ref().map(ModelInfo::qualified),
            fallback,
            pool: on.then_some(FusionPool {
                size: pool.size,
                idle_seconds: pool.idle.as_secs(),
            }),
            savings: FusionSavings {
                session: totals(&state.session_totals()),
                all_time: totals(&state.all_totals()),
            },
        }
    }

    /// Puts the status on the bus and redraws what shows it.
    pub fn publish(&self) {
        if let Some(bus) = lock(&self.bus).clone() {
            bus.publish(MODULE, &self.status());
        }
        self.changed.bump();
    }

    /// The footer segment, while a pair is in force.
    pub fn segment(&self) -> Option<Segment> {
        let state = lock(&self.state);
        let (primary, sidekick) = (state.primary.as_ref()?, state.sidekick.as_ref()?);
        let fallback = lock(&self.fallback).active().map(|active| {
            let left = active.until.saturating_duration_since(Instant::now());
            (active.model.id.clone(), minutes(left))
        });
        Some(fusion_segment(&FusionSegment {
            primary: primary.id.clone(),
            sidekick: sidekick.id.clone(),
            saved_session: state.session_totals().saved(),
            fallback,
        }))
    }

    /// Per-source totals for the session and all time, from the database.
    pub async fn breakdown(&self) -> Result<Breakdown, Refusal> {
        let session = lock(&self.state).session_id.clone();
        Ok(self.ledger.breakdown(session).await?)
    }

    /// One event from the bus.
    pub(crate) fn on_bus(self: &Arc<Self>, event: BusEvent) {
        match event {
            BusEvent::AgentConnected { agent, .. } if agent == AgentId::main() => {
                if !self.started.swap(true, Ordering::SeqCst) {
                    let engine = self.clone();
                    tokio::spawn(async move { engine.apply_active_preset().await });
                } else {
                    self.publish();
                }
            }
            BusEvent::Pi { agent, event } if agent == AgentId::main() => self.on_main_event(&event),
            BusEvent::Module { .. } => {
                if let Some(used) = event.decode::<ModelUsage>() {
                    let tokens = Tokens {
                        input: used.usage.input,
                        output: used.usage.output,
                        cache_read: used.usage.cache_read,
                        cache_write: used.usage.cache_write,
                    };
                    self.record(&used.source, &used.model, tokens, used.usage.cost);
                } else if event.decode::<FusionStatusQuery>().is_some() {
                    self.publish();
                }
            }
            _ => {}
        }
    }

    async fn apply_active_preset(self: Arc<Self>) {
        let active = self
            .config()
            .active_preset()
            .map(|(name, preset)| (name.to_owned(), preset.clone()));
        let Some((name, preset)) = active else {
            self.publish();
            return;
        };
        match self.apply(&name, preset, false).await {
            Ok(message) => {
                tracing::info!("fusion: {message}");
            }
            Err(err) => {
                tracing::warn!("fusion: preset {name} not applied: {err}");
                self.ui
                    .notice(format!("Fusion preset {name} not applied: {err}"));
            }
        }
    }

    fn on_main_event(self: &Arc<Self>, event: &PiEvent) {
        match event {
            PiEvent::SessionStart(start) => {
                {
                    let mut state = lock(&self.state);
                    state.session_id.clone_from(&start.session_id);
                    state.session_file = start.session_file.as_ref().map(PathBuf::from);
                    state.session_named = start.session_name.is_some();
                    state.first_request = None;
                    state.session_stored = SidekickTotals::default();
                    state.session_since = SidekickTotals::default();
                    state.all_since = SidekickTotals::default();
                }
                let engine = self.clone();
                let session = start.session_id.clone();
                tokio::spawn(async move {
                    match engine.ledger.totals(session).await {
                        Ok((session_totals, all_totals)) => {
                            let mut state = lock(&engine.state);
                            state.session_stored = session_totals;
                            state.all_stored = all_totals;
                        }
                        Err(err) => tracing::debug!("fusion: totals not read: {err:#}"),
                    }
                    engine.publish();
                });
            }
            PiEvent::SessionName { name } => {
                lock(&self.state).session_named |= name.is_some();
            }
            PiEvent::UserInput(input) => {
                let mut state = lock(&self.state);
                let text = input.text.trim();
                if state.first_request.is_none() && !text.is_empty() && !text.starts_with('/') {
                    state.first_request = Some(text.to_owned());
                }
            }
            PiEvent::AgentSettled { .. } => self.maybe_name_session(),
            PiEvent::MessageEnd(message) if message.stop_reason.as_deref() == Some("error") => {
                let error = message.error_message.clone().unwrap_or_default();
                self.on_primary_error(&error);
            }
            _ => {}
        }
    }

    /// After a session's first turn: the sidekick names it, unless it has a name.
    fn maybe_name_session(self: &Arc<Self>) {
        let request = {
            let mut state = lock(&self.state);
            if !state.is_on() || state.session_named || !self.config().name_sessions {
                return;
            }
            let Some(request) = state.first_request.clone() else {
                return;
            };
            state.session_named = true;
            request
        };
        let engine = self.clone();
        tokio::spawn(async move {
            let answer = match engine
                .runtime
                .ask(&side::naming_prompt(&request), NAMING_LIMIT)
                .await
            {
                Ok(answer) => answer,
                Err(err) => {
                    tracing::info!("fusion: the session was not named: {err}");
                    return;
                }
            };
            engine.record_answer("naming", &answer);
            let Some(title) = side::clean_title(&answer.text) else {
                return;
            };
            let named = match engine.main_pi() {
                Ok(main) => {
                    main.call(HostCall::SetSessionName {
                        name: title.clone(),
                    })
                    .await
                }
                Err(err) => Err(err),
            };
            match named {
                Ok(_) => tracing::info!("fusion: the sidekick named the session {title:?}"),
                Err(err) => tracing::info!("fusion: the session was not named: {err}"),
            }
        });
    }

    fn on_primary_error(self: &Arc<Self>, error: &str) {
        let (fallback, cooldown, primary) = {
            let state = lock(&self.state);
            let Some(primary) = state.primary.as_ref() else {
                return;
            };
            (state.fallback.clone(), state.cooldown, model_ref(primary))
        };
        let step =
            lock(&self.fallback).on_error(error, fallback.as_ref(), cooldown, Instant::now());
        let Step::SwitchTo {
            to: fallback,
            until,
            generation,
        } = step
        else {
            return;
        };
        let engine = self.clone();
        tokio::spawn(async move {
            let minutes = minutes(cooldown);
            match engine.set_main_model(&fallback).await {
                Ok(()) => {
                    let full = format!(
                        "Model fusion: {primary} is rate-limited; the main agent uses the \
                         fallback {fallback} for {minutes} min"
                    );
                    let short = format!("{} rate-limited: on {}", primary.id, fallback.id);
                    engine.tell(NotifyLevel::Warning, full, short).await;
                }
                Err(err) => {
                    let full = format!(
                        "Model fusion: {primary} is rate-limited, and the fallback {fallback} \
                         could not take over: {err}"
                    );
                    let short = format!("Fallback to {} failed", fallback.id);
                    engine.tell(NotifyLevel::Error, full, short).await;
                }
            };
            engine.publish();
            tokio::time::sleep_until(until.into()).await;
            let back = lock(&engine.fallback).on_cooldown_over(generation, &primary);
            if let Step::Return { to } = back {
                match engine.set_main_model(&to).await {
                    Ok(()) => {
                        let full = format!(
                            "Model fusion: the main agent is back on the primary {to} after \
                             {minutes} min on the fallback {fallback}"
                        );
                        let short = format!("Back on the primary {}", to.id);
                        engine.tell(NotifyLevel::Info, full, short).await;
                    }
                    Err(err) => {
                        let full =
                            format!("Model fusion: the return to the primary {to} failed: {err}");
                        let short = format!("Return to {} failed", to.id);
                        engine.tell(NotifyLevel::Error, full, short).await;
                    }
                };
                engine.publish();
            }
        });
    }

    /// Tells the user what happened to the main agent's model: `full` in Pi's own conversation
    /// view (a notice there stays in the scrollback, under the error that caused it; Pi does not
    /// send it to the model), and `short` in the footer for a few seconds.
    async fn tell(&self, level: NotifyLevel, full: String, short: String) {
        tracing::info!("fusion: {full}");
        self.ui.notice(short);
        let notify = HostCall::Notify {
            message: full,
            level,
        };
        let told = match self.main_pi() {
            Ok(main) => main.call(notify).await.map(|_| ()),
            Err(err) => Err(err),
        };
        if let Err(err) = told {
            tracing::warn!("fusion: the notice did not reach Pi: {err}");
        }
    }

    /// Stops the sidekick runtime.
    pub async fn shutdown(&self) {
        self.runtime.stop().await;
    }
}

/// Whole minutes, a started one counted.
pub fn minutes(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .div_ceil(60_000)
}

/// `model` as a preset names it.
pub(crate) fn model_ref(model: &ModelInfo) -> ModelRef {
    ModelRef {
        provider: model.provider.clone(),
        id: model.id.clone(),
    }
}

/// Whether `reported` (`provider/id` from Pi's events, or a bare id) names `model`.
fn same_model(reported: &str, model: &ModelInfo) -> bool {
    reported == model.qualified() || reported == model.id
}

/// The model `wanted` among `models`, or why it cannot be used for `role`.
fn usable(models: &[ModelInfo], wanted: &ModelRef, role: &str) -> Result<ModelInfo, Refusal> {
    let model = models
        .iter()
        .find(|model| model.provider == wanted.provider && model.id == wanted.id)
        .ok_or_else(|| format!("Pi knows no model {wanted} (the {role}); nothing changed"))?;
    if model.has_auth == Some(false) {
        return Err(format!(
            "No API key for {wanted} (the {role}): Pi has no credentials for provider `{}` — \
             log in with /login or set its key, then pick again; nothing changed",
            wanted.provider
        )
        .into());
    }
    Ok(model.clone())
}

/// Where a preset file's path shows in notices: `~/…` under the home directory.
pub(crate) fn shown_path(path: &Path) -> String {
    match dirs::home_dir().and_then(|home| path.strip_prefix(home).ok().map(Path::to_path_buf)) {
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
pub(crate) mod tests;

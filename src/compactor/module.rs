//! The `compactor` module: ties the zero-LLM pipeline to Pi, the session database and the
//! workbench. It answers Pi's `session_before_compact` hook with a deterministic summary (for
//! `/compact`, `/unipi:compact` and Pi's own threshold/overflow compactions while
//! `overrideDefaultCompaction` is on), records each compaction's statistics and manifest, and
//! after Pi reports the compaction done, shows a toast, sends the follow-up prompt or the
//! invisible auto-continue nudge. It watches the main Pi's events on the bus to feed the
//! auto-compaction decision ([`super::auto::decide`]) and to ingest the session file into the
//! database ([`super::ingest`]), re-injects a summary Pi's file lacks ([`super::resume`]), and
//! serves `session_recall` ([`super::recall`]) from that database.
//!
//! Shape: the pure parts live beside it — the config ([`super::config`]), the marker and the
//! arguments of `/unipi:compact` ([`super::command`]), the hook's plan and answer
//! ([`super::hook`]), recall ([`super::recall`]), the texts ([`super::text`]), the resume check
//! ([`super::resume`]), each with table tests. This file holds the only state: [`CompactorModule`]
//! is a cheap handle to one [`Compactor`], which moves data between those functions, the bridge and
//! the database thread. What it tracks of the main session is behind one mutex that is never held
//! across an await, and only this file touches it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use unipi_widgets::compactor::{CompactionModel, CompactorTally};

use super::auto::{self, AutoState, UsageSample};
use super::bus::CompactorCompacted;
use super::command::Marker;
#[cfg(test)]
use super::config::CONFIG_FILE;
use super::config::CompactorConfig;
use super::entries;
use super::hook::{
    BEFORE_COMPACT_HOOK, BeforeCompact, HookAnswer, Plan, after_unfinished, answer, branch_entries,
    plan, record_for,
};
use super::ingest::{DbWorker, ingest_session_file};
use super::normalize::AUTO_CONTINUE_TYPE;
use super::pipeline::{self, CompactRequest, Compaction, PipelineSettings};
use super::recall::{
    LEGACY_RECALL_TOOL, RECALL_TOOL, RecallSources, legacy_recall_tool_spec, recall_tool_spec,
    run_recall,
};
use super::reindex::{self, Progress};
use super::resume::{RESUME_TYPE, resume_summary};
use super::text::{stats_text, toast_text, view_model};
use crate::bridge::{
    AgentId, BridgeHost, BusEvent, DeliverAs, EventBus, HookCall, HostCall, MessageTypeSpec,
    Module, NotifyLevel, PiEvent, Refusal, ToolCall, ToolError, ToolOutput, ToolSpec,
};
use crate::config::live::LiveConfig;
#[cfg(test)]
use crate::config::module_file::ModuleConfig;
use crate::sessiondb::{CompactionRecord, CompactionTotals, SessionMeta};
use crate::sys::{Changed, now_ms};

/// The module's name (bridge, logs, footer group).
pub const MODULE_NAME: &str = "compactor";
/// The text of the invisible auto-continue message (the model never sees it: it is filtered out
/// of the context; it only starts the turn).
const AUTO_CONTINUE_TEXT: &str = "Continue from the compaction summary.";
/// How long after Pi's report the toast and the follow-up go out.
const AFTER_COMPACTION_DELAY: std::time::Duration = std::time::Duration::from_millis(500);
/// An auto-compaction that Pi never reported back is given up on after this long.
const AUTO_STUCK_MS: u64 = 5 * 60 * 1000;

/// The compactor module: a cheap handle to the one [`Compactor`] (clones share it).
#[derive(Clone)]
pub(crate) struct CompactorModule {
    compactor: Arc<Compactor>,
}

/// The compactor's config, its connections (the database thread, the bridge) and what it tracks
/// of the main session and of the index rebuild.
struct Compactor {
    /// `compactor.json`, followed: an edit applies to the next compaction, sample or recall.
    config: LiveConfig<CompactorConfig>,
    settings: PipelineSettings,
    workspace: PathBuf,
    /// The database, or why there is none (recall then answers with that reason).
    db: Result<DbWorker, Refusal>,
    /// Where every project's database lives (the `all` recall scope).
    db_dir: Option<PathBuf>,
    host: OnceLock<BridgeHost>,
    /// Where a confirmed compaction is announced ([`CompactorCompacted`]).
    bus: OnceLock<EventBus>,
    /// Read and changed only through [`Compactor::lock`].
    session_state: Mutex<SessionState>,
    /// Bumped when what the footer shows changed (the app redraws).
    changes: Changed,
    /// A rebuild of the index from Pi's session files is running.
    rebuilding: AtomicBool,
    /// The database's replacement count the last rebuild started from.
    replacements_seen: AtomicU64,
}

/// What the compactor tracks of the main Pi's session: which session it is, its compactions,
/// the requests and follow-ups in flight, and the index rebuild the footer shows beside them.
#[derive(Default)]
struct SessionState {
    /// A rebuild of the index from Pi's session files, while it runs.
    indexing: Option<Progress>,
    /// The main Pi's session.
    session: Option<SessionMeta>,
    tally: CompactorTally,
    last: Option<CompactionRecord>,
    /// Set by the hook, done when Pi reports the compaction.
    pending: Option<PendingAfter>,
    /// The last `/unipi:compact` asked of Pi, until Pi reports how it ended.
    requested: Option<Marker>,
    auto: AutoState,
}

/// What happens once Pi has written the compaction the hook answered.
#[derive(Debug, Clone)]
struct PendingAfter {
    /// Counted in the footer once Pi confirms (an aborted compaction is not one).
    tokens_saved: u64,
    toast: String,
    follow_up: Option<String>,
    auto_continue: bool,
    /// Pi retries the failed request by itself: nothing to show or send.
    will_retry: bool,
    /// Announced once Pi confirms.
    announced: CompactorCompacted,
}

/// What starting the module produced besides the module: problems worth a notice.
pub(crate) struct Started {
    pub module: CompactorModule,
    pub notices: Vec<String>,
}

impl CompactorModule {
    pub(crate) fn new(
        config: impl Into<LiveConfig<CompactorConfig>>,
        workspace: PathBuf,
        db: Result<DbWorker, Refusal>,
        db_dir: Option<PathBuf>,
    ) -> Self {
        CompactorModule {
            compactor: Arc::new(Compactor {
                config: config.into(),
                settings: PipelineSettings::default(),
                workspace,
                db,
                db_dir,
                host: OnceLock::new(),
                bus: OnceLock::new(),
                session_state: Mutex::new(SessionState::default()),
                changes: Changed::default(),
                rebuilding: AtomicBool::new(false),
                replacements_seen: AtomicU64::new(0),
            }),
        }
    }

    /// Changes of what the footer shows (indexing progress, compaction counts); the app redraws.
    pub(crate) fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.compactor.changes.subscribe()
    }

    /// How far a running rebuild of the index got (the footer shows it until done).
    pub(crate) fn indexing(&self) -> Option<Progress> {
        self.compactor.lock().indexing
    }

    /// Loads the config (followed from now on) and opens the project's database
    /// (`<home>/.unipi/db/…`). Never fails: a bad config keeps the defaults, a database that
    /// cannot open leaves recall off; both come back as notices.
    #[cfg(test)]
    pub(crate) fn start(home: Option<&Path>, workspace: &Path) -> Started {
        let (config, errors) =
            LiveConfig::module(home, workspace, &[CONFIG_FILE], CompactorConfig::load);
        Self::start_with(config, errors, home, workspace)
    }

    /// Starts the module with the config already loaded (and the problems found in it).
    pub(crate) fn start_with(
        config: LiveConfig<CompactorConfig>,
        errors: Vec<crate::config::ConfigError>,
        home: Option<&Path>,
        workspace: &Path,
    ) -> Started {
        let mut notices: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let db_dir = home.map(crate::sessiondb::default_db_dir);
        let db = match &db_dir {
            Some(dir) => {
                let path = crate::sessiondb::project_db_path(dir, workspace);
                match DbWorker::open(&path) {
                    Ok((worker, recovered)) => {
                        if let Some(recovered) = recovered {
                            notices.push(format!(
                                "The session database {} was damaged ({}); it was moved to {} \
                                 and a fresh one started.",
                                path.display(),
                                recovered.reason,
                                recovered.moved_to.display()
                            ));
                        }
                        notices.extend(import_legacy(&worker, home, workspace));
                        Ok(worker)
                    }
                    Err(err) => {
                        let message = format!(
                            "The session database {} could not open: {err:#}. Compaction works; \
                             recall and statistics are off.",
                            path.display()
                        );
                        notices.push(message.clone());
                        Err(message.into())
                    }
                }
            }
            None => Err("no home directory, so no session database".into()),
        };
        Started {
            module: CompactorModule::new(config, workspace.to_path_buf(), db, db_dir),
            notices,
        }
    }

    /// Gives the module the bridge: toasts, follow-ups and compaction requests go through it.
    pub(crate) fn attach_host(&self, host: BridgeHost) {
        let _ = self.compactor.host.set(host);
    }

    /// Follows the main Pi's events on `bus` (session start, turns, compactions) until the bus
    /// closes. Events are handled in order, so ingestion passes never overlap.
    pub(crate) fn watch(&self, bus: &EventBus) {
        // Watched once; a second watch would be the same bus.
        let _ = self.compactor.bus.set(bus.clone());
        let mut events = bus.subscribe();
        let compactor = Arc::downgrade(&self.compactor);
        tokio::spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                match events.recv().await {
                    Ok(BusEvent::Pi { agent, event }) if agent == AgentId::main() => {
                        let Some(compactor) = compactor.upgrade() else {
                            return;
                        };
                        compactor.on_pi_event(&event).await;
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(skipped)) => {
                        tracing::warn!("compactor: skipped {skipped} bus events");
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        });
    }

    /// This session's compactions and tokens saved (the footer segment).
    pub(crate) fn tally(&self) -> CompactorTally {
        self.compactor.lock().tally
    }

    /// The last compaction of this session, as the overlay shows it.
    pub(crate) fn last_view(&self) -> Option<CompactionModel> {
        self.compactor.lock().last.as_ref().map(view_model)
    }

    /// Asks Pi to compact with `marker` (the outcome arrives as `compaction_end`). A failure is
    /// also shown in Pi, since the command has already been answered.
    pub(crate) async fn request_compaction(&self, marker: &Marker) -> Result<(), Refusal> {
        let host = self.compactor.host()?;
        self.compactor.lock().requested = Some(marker.clone());
        let call = HostCall::Compact {
            instructions: Some(marker.to_instructions()),
        };
        let result = host.call(&AgentId::main(), call).await;
        result.map(|_| ()).map_err(|err| {
            let message = format!("compactor: could not start the compaction: {err}");
            self.compactor.notify(message.clone(), NotifyLevel::Warning);
            message.into()
        })
    }

    /// `/unipi:compact-stats`'s text.
    pub(crate) async fn stats(&self) -> Result<String, Refusal> {
        let (session, project, last) = self.totals().await?;
        Ok(stats_text(&session, &project, last.as_ref()))
    }

    /// This session's and this project's compaction totals, and the session's last compaction
    /// (`/unipi:compact-stats` and the dashboard's tab).
    pub(crate) async fn totals(
        &self,
    ) -> Result<(CompactionTotals, CompactionTotals, Option<CompactionRecord>), Refusal> {
        let db = self.compactor.db.clone()?;
        let (session_id, last) = {
            let state = self.compactor.lock();
            (
                state.session.as_ref().map(|s| s.session_id.clone()),
                state.last.clone(),
            )
        };
        let (session, project) = db
            .run(move |db| -> Result<_, crate::sessiondb::DbError> {
                let session = match &session_id {
                    Some(id) => db.compaction_totals(Some(id))?,
                    None => CompactionTotals::default(),
                };
                Ok((session, db.compaction_totals(None)?))
            })
            .await?
            .map_err(|err| err.to_string())?;
        Ok((session, project, last))
    }

    /// Answers `session_before_compact` (the whole hook, for tests and the bridge).
    #[cfg(test)]
    pub(crate) async fn before_compact(&self, data: Value) -> Value {
        self.compactor.clone().before_compact(data).await
    }
}

impl Compactor {
    /// The session state. Never held across an await.
    fn lock(&self) -> MutexGuard<'_, SessionState> {
        self.session_state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Records how far the index rebuild got (`None`: not running) and tells the app.
    fn set_indexing(&self, progress: Option<Progress>) {
        self.lock().indexing = progress;
        self.changed();
    }

    fn host(&self) -> anyhow::Result<&BridgeHost> {
        self.host
            .get()
            .ok_or_else(|| anyhow::anyhow!("the compactor is not connected to the bridge"))
    }

    /// Sends `call` to the main Pi without waiting (toasts, follow-ups); failures are logged.
    fn send(&self, call: HostCall) {
        let Ok(host) = self.host() else { return };
        let host = host.clone();
        tokio::spawn(async move {
            let method = call.method();
            if let Err(err) = host.call(&AgentId::main(), call).await {
                tracing::warn!("compactor: {method} failed: {err}");
            }
        });
    }

    fn notify(&self, message: String, level: NotifyLevel) {
        self.send(HostCall::Notify { message, level });
    }

    async fn before_compact(self: Arc<Self>, data: Value) -> Value {
        let input: BeforeCompact = match serde_json::from_value(data) {
            Ok(input) => input,
            Err(err) => {
                tracing::warn!("compactor: cannot read session_before_compact: {err}");
                return Value::Null;
            }
        };
        let config = self.config.get();
        let Plan::Compact { marker } = plan(&config, &input) else {
            return Value::Null;
        };
        let overflow = input.overflow();
        let keep = marker.as_ref().and_then(|m| m.keep);
        let settings = self.settings.clone();
        let tokens_before = input.tokens_before.unwrap_or(0.0).max(0.0) as u64;
        let job_input = input.clone();
        let result = tokio::task::spawn_blocking(move || {
            let branch = branch_entries(&job_input)?;
            Ok::<_, anyhow::Error>(pipeline::compact(&CompactRequest {
                entries: &branch,
                tokens_before,
                keep_user_turns: keep,
                overflow,
                settings: &settings,
            }))
        })
        .await;
        let result = match result {
            Ok(Ok(result)) => result,
            Ok(Err(err)) => {
                // Without the branch there is nothing to summarize; Pi's own compaction still can.
                tracing::warn!("compactor: cannot read the branch: {err:#}");
                return Value::Null;
            }
            Err(err) => {
                tracing::error!("compactor: the pipeline failed: {err}");
                return Value::Null;
            }
        };
        let answer = answer(result, overflow, marker.is_some());
        match &answer {
            HookAnswer::Compacted(compaction) => {
                let reason = match &marker {
                    Some(m) if m.auto => "threshold".to_owned(),
                    _ => input.reason.clone().unwrap_or_else(|| "manual".to_owned()),
                };
                self.compacted(compaction, &input, &reason, marker.as_ref())
                    .await;
            }
            HookAnswer::LetPiRetry => {}
            HookAnswer::Cancel { warning } => {
                if marker.as_ref().is_some_and(|m| m.auto) {
                    let mut state = self.lock();
                    state.auto = auto::mark_error(&state.auto);
                }
                self.notify(warning.clone(), NotifyLevel::Warning);
            }
        }
        answer.to_json()
    }

    /// Records a compaction the hook is about to return and prepares what follows it.
    async fn compacted(
        &self,
        compaction: &Compaction,
        input: &BeforeCompact,
        reason: &str,
        marker: Option<&Marker>,
    ) {
        let session_id = input
            .session_id
            .clone()
            .or_else(|| self.lock().session.as_ref().map(|s| s.session_id.clone()))
            .unwrap_or_else(|| "unknown".to_owned());
        let record = record_for(compaction, &session_id, reason, now_ms() as i64);
        let follow_up = marker.and_then(|m| m.follow_up.clone());
        let automatic = matches!(reason, "threshold" | "overflow");
        {
            let mut state = self.lock();
            state.pending = Some(PendingAfter {
                announced: CompactorCompacted::of(&record),
                tokens_saved: record.tokens_before.saturating_sub(record.tokens_after),
                toast: toast_text(&record),
                auto_continue: follow_up.is_none()
                    && automatic
                    && self.config.get().auto.continue_after_threshold_compact,
                follow_up,
                will_retry: input.will_retry,
            });
            state.last = Some(record.clone());
        }
        if let Ok(db) = &self.db {
            let meta = SessionMeta {
                session_id: session_id.clone(),
                session_file: input.session_file.clone(),
                project_dir: self.workspace.display().to_string(),
            };
            let stored = db
                .run(move |db| {
                    db.upsert_session(&meta)?;
                    db.record_compaction(&record)
                })
                .await;
            match stored {
                Ok(Ok(_)) => {}
                Ok(Err(err)) => tracing::warn!("compactor: cannot record the compaction: {err}"),
                Err(err) => tracing::warn!("compactor: cannot record the compaction: {err:#}"),
            }
        }
    }

    async fn on_pi_event(self: &Arc<Self>, event: &PiEvent) {
        match event {
            PiEvent::SessionStart(start) => self.on_session_start(start).await,
            PiEvent::TurnEnd(turn) => {
                self.auto_sample(turn.context_usage.as_ref());
                self.ingest().await;
            }
            PiEvent::AgentSettled { .. } => self.ingest().await,
            PiEvent::CompactionEnd(end) => {
                self.on_compaction_end(end);
                self.ingest().await;
            }
            _ => {}
        }
    }

    async fn on_session_start(self: &Arc<Self>, start: &crate::bridge::SessionStart) {
        let Some(session_id) = start.session_id.clone() else {
            return;
        };
        let meta = SessionMeta {
            session_id: session_id.clone(),
            session_file: start.session_file.clone(),
            project_dir: start
                .cwd
                .clone()
                .unwrap_or_else(|| self.workspace.display().to_string()),
        };
        {
            let mut state = self.lock();
            let same = state
                .session
                .as_ref()
                .is_some_and(|s| s.session_id == session_id);
            if !same {
                state.tally = CompactorTally::default();
                state.last = None;
                state.pending = None;
                state.auto = AutoState::default();
            }
            state.session = Some(meta.clone());
        }
        let Ok(db) = &self.db else { return };
        let loaded = db
            .run(move |db| -> anyhow::Result<_> {
                db.upsert_session(&meta)?;
                let totals = db.compaction_totals(Some(&meta.session_id))?;
                let last = db.last_compaction(&meta.session_id)?;
                let branch = match meta.session_file.as_deref().map(Path::new) {
                    Some(file) if file.exists() => {
                        let all = entries::read_session_file(file)?;
                        entries::branch(&all, None)
                    }
                    _ => Vec::new(),
                };
                let resume = resume_summary(&branch, last.as_ref());
                if let Err(err) = ingest_session_file(db, &meta) {
                    tracing::warn!("compactor: ingesting {:?}: {err:#}", meta.session_file);
                }
                Ok((totals, last, resume))
            })
            .await;
        let (totals, last, resume) = match loaded {
            Ok(Ok(loaded)) => loaded,
            Ok(Err(err)) | Err(err) => {
                tracing::warn!("compactor: loading session {session_id}: {err:#}");
                return;
            }
        };
        {
            let mut state = self.lock();
            state.tally = CompactorTally {
                compactions: totals.count,
                tokens_saved: totals.tokens_saved,
            };
            state.last = last.clone().map(|stored| stored.record);
        }
        self.changed();
        self.start_rebuild();
        if start.reason != "reload"
            && let Some(summary) = resume
        {
            tracing::info!("compactor: re-injecting the last summary of {session_id}");
            self.send(HostCall::SendMessage {
                custom_type: RESUME_TYPE.to_owned(),
                content: summary,
                display: true,
                details: json!({"compactionId": last.map(|l| l.id)}),
                // Appended now (at the end of the turn if one runs): in the session file at
                // once, so it is never injected twice, and in the model's context from the
                // next turn on.
                deliver_as: None,
                trigger_turn: false,
            });
        }
    }

    fn on_compaction_end(&self, end: &crate::bridge::CompactionEnd) {
        let failed = end.error.is_some() || end.aborted;
        let pending = {
            let mut state = self.lock();
            if state.auto.in_flight {
                state.auto = if failed {
                    auto::mark_error(&state.auto)
                } else {
                    auto::mark_complete(&state.auto)
                };
            }
            let pending = state
                .pending
                .take()
                .filter(|_| !failed && end.from_extension);
            if let Some(pending) = &pending {
                state.tally.compactions += 1;
                state.tally.tokens_saved += pending.tokens_saved;
            }
            let unfinished = state.requested.take().filter(|_| pending.is_none());
            (pending, unfinished)
        };
        let (pending, unfinished) = pending;
        self.changed();
        if let Some(marker) = unfinished {
            // Pi reports the hook's own cancel as aborted (with "aborted" as the error text);
            // the hook warned already then.
            let refused = end.error.as_deref().filter(|_| !end.aborted);
            self.send_after(after_unfinished(&marker, refused));
            return;
        }
        let Some(pending) = pending else {
            return;
        };
        if let Some(bus) = self.bus.get() {
            bus.publish(MODULE_NAME, &pending.announced);
        }
        if pending.will_retry {
            return;
        }
        let mut calls = vec![HostCall::Notify {
            message: pending.toast,
            level: NotifyLevel::Info,
        }];
        if let Some(follow_up) = pending.follow_up {
            calls.push(HostCall::SendUserMessage {
                content: follow_up,
                deliver_as: Some(DeliverAs::FollowUp),
            });
        } else if pending.auto_continue {
            calls.push(HostCall::SendMessage {
                custom_type: AUTO_CONTINUE_TYPE.to_owned(),
                content: AUTO_CONTINUE_TEXT.to_owned(),
                display: false,
                details: Value::Null,
                deliver_as: Some(DeliverAs::FollowUp),
                trigger_turn: true,
            });
        }
        self.send_after(calls);
    }

    /// Sends `calls` to the main Pi in order, shortly after a compaction ended.
    fn send_after(&self, calls: Vec<HostCall>) {
        let Ok(host) = self.host() else { return };
        let host = host.clone();
        tokio::spawn(async move {
            // Pi reports the compaction before it leaves its compacting state; a prompt sent
            // at once could meet a busy session (the original waits the same half second).
            tokio::time::sleep(AFTER_COMPACTION_DELAY).await;
            for call in calls {
                let method = call.method();
                if let Err(err) = host.call(&AgentId::main(), call).await {
                    tracing::warn!("compactor: {method} after the compaction failed: {err}");
                }
            }
        });
    }

    /// Feeds one context-usage sample to the auto-compaction decision; triggers when it says so.
    fn auto_sample(self: &Arc<Self>, usage: Option<&crate::bridge::ContextUsage>) {
        let config = &self.config.get().auto;
        if !config.enabled {
            return;
        }
        let sample = UsageSample {
            tokens: usage.and_then(|u| u.tokens).map(|t| t as f64),
            percent: usage.and_then(|u| u.percent),
        };
        let now = now_ms();
        let decision = {
            let mut state = self.lock();
            let stuck = state.auto.in_flight
                && state
                    .auto
                    .last_trigger_at_ms
                    .is_some_and(|at| now.saturating_sub(at) > AUTO_STUCK_MS);
            if stuck {
                tracing::warn!("compactor: Pi never reported the auto-compaction; giving up on it");
                state.auto = auto::mark_error(&state.auto);
            }
            let decision = auto::decide(config, &sample, &state.auto, now);
            state.auto = decision.state.clone();
            decision
        };
        tracing::debug!("compactor: auto-compaction {}", decision.reason.code());
        if !decision.trigger {
            return;
        }
        if config.notify {
            self.notify(
                format!(
                    "🗜 Context at {:.0}% (threshold {:.0}%): compacting",
                    sample.percent.unwrap_or_default(),
                    config.threshold_percent
                ),
                NotifyLevel::Info,
            );
        }
        let Ok(host) = self.host() else { return };
        let host = host.clone();
        let marker = Marker {
            auto: true,
            ..Marker::default()
        };
        let compactor = Arc::clone(self);
        tokio::spawn(async move {
            let call = HostCall::Compact {
                instructions: Some(marker.to_instructions()),
            };
            if let Err(err) = host.call(&AgentId::main(), call).await {
                tracing::warn!("compactor: auto-compaction could not start: {err}");
                let mut state = compactor.lock();
                state.auto = auto::mark_error(&state.auto);
            }
        });
    }

    /// Tells the app that what the footer shows changed.
    fn changed(&self) {
        self.changes.bump();
    }

    /// Catches the index up with this project's session files in the background (see
    /// [`reindex`]): every session start does, and a database replaced while open does at once.
    /// One rebuild at a time; the footer shows its progress.
    fn start_rebuild(self: &Arc<Self>) {
        let Ok(db) = &self.db else { return };
        let Some(dir) = self
            .lock()
            .session
            .as_ref()
            .and_then(|s| s.session_file.as_deref())
            .and_then(|file| Path::new(file).parent())
            .map(Path::to_path_buf)
        else {
            return;
        };
        if self.rebuilding.swap(true, Ordering::AcqRel) {
            return;
        }
        self.replacements_seen
            .store(db.replacements(), Ordering::Relaxed);
        let db = db.clone();
        let compactor = Arc::clone(self);
        tokio::spawn(async move {
            let progress = |progress: Progress| {
                compactor.set_indexing((progress.done < progress.total).then_some(progress));
            };
            let result = reindex::rebuild(&db, dir, compactor.workspace.clone(), progress).await;
            match result {
                Ok(rebuilt) if rebuilt.ingested + rebuilt.failed > 0 => tracing::info!(
                    "compactor: indexed {} of this project's Pi session files ({} failed)",
                    rebuilt.ingested,
                    rebuilt.failed
                ),
                Ok(_) => {}
                Err(err) => tracing::warn!("compactor: rebuilding the index: {err:#}"),
            }
            compactor.set_indexing(None);
            compactor.rebuilding.store(false, Ordering::Release);
        });
    }

    /// Reads what Pi appended to the session file since the last pass.
    async fn ingest(self: &Arc<Self>) {
        let Ok(db) = &self.db else { return };
        if db.replacements() != self.replacements_seen.load(Ordering::Relaxed) {
            // A damaged file was replaced by an empty one: the live session alone would leave
            // every other session out of recall.
            self.start_rebuild();
        }
        let Some(meta) = self.lock().session.clone() else {
            return;
        };
        match db.run(move |db| ingest_session_file(db, &meta)).await {
            Ok(Ok(report)) => {
                if report.entries > 0 {
                    tracing::debug!("compactor: ingested {report:?}");
                }
            }
            Ok(Err(err)) => tracing::warn!("compactor: ingestion failed: {err:#}"),
            Err(err) => tracing::warn!("compactor: ingestion failed: {err:#}"),
        }
    }
}

/// The original Unipi compactor's database under `home`, imported once into this project's
/// ([`super::legacy`]); the notice about it, if any.
fn import_legacy(worker: &DbWorker, home: Option<&Path>, workspace: &Path) -> Option<String> {
    let legacy = super::legacy::legacy_path(home?);
    if !legacy.exists() {
        return None;
    }
    let (path, workspace) = (legacy.clone(), workspace.to_path_buf());
    let outcome = worker
        .run_blocking(move |db| super::legacy::import_once(db, &path, &workspace))
        .unwrap_or_else(|err| super::legacy::Outcome::Failed {
            reason: format!("{err:#}"),
            again: true,
        });
    outcome.notice(&legacy)
}

impl Compactor {
    /// Runs one `session_recall` call on this module's database and the main session.
    async fn recall(self: Arc<Self>, args: Value) -> Result<ToolOutput, ToolError> {
        let sources = RecallSources {
            db: self.db.clone(),
            db_dir: self.db_dir.clone(),
            session_id: self.lock().session.as_ref().map(|s| s.session_id.clone()),
        };
        let config = self.config.get();
        run_recall(args, &config.recall, sources).await
    }
}

impl Module for CompactorModule {
    fn name(&self) -> &'static str {
        MODULE_NAME
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let limits = &self.compactor.config.get().recall;
        vec![recall_tool_spec(limits), legacy_recall_tool_spec(limits)]
    }

    fn message_types(&self) -> Vec<MessageTypeSpec> {
        vec![
            MessageTypeSpec::new(AUTO_CONTINUE_TYPE, "Continue").hidden_from_model(),
            MessageTypeSpec::new(RESUME_TYPE, "Compaction summary (restored)"),
        ]
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let compactor = Arc::clone(&self.compactor);
        Box::pin(async move {
            match call.tool.as_str() {
                RECALL_TOOL | LEGACY_RECALL_TOOL => compactor.recall(call.args).await,
                other => Err(ToolError::new(format!(
                    "module `{MODULE_NAME}` declares no tool `{other}`"
                ))),
            }
        })
    }

    fn hook(&self, hook: HookCall) -> Option<BoxFuture<'static, Value>> {
        // Helpers' Pi processes keep Pi's own compaction: the toast, follow-ups and statistics
        // here are the main session's.
        if hook.name != BEFORE_COMPACT_HOOK || hook.agent != AgentId::main() {
            return None;
        }
        let compactor = Arc::clone(&self.compactor);
        Some(Box::pin(compactor.before_compact(hook.data)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compactor::auto::AutoConfig;
    use crate::compactor::hook::hook_input;
    use crate::compactor::test_fixtures::small_branch;
    use crate::sessiondb::SessionDb;
    use anyhow::Context as _;

    fn module_with_db() -> anyhow::Result<CompactorModule> {
        let db = DbWorker::from_db(SessionDb::open_in_memory()?)?;
        Ok(CompactorModule::new(
            CompactorConfig::default(),
            PathBuf::from("/w"),
            Ok(db),
            None,
        ))
    }

    #[tokio::test]
    async fn the_hook_records_the_compaction_and_recall_finds_its_summary() -> anyhow::Result<()> {
        let module = module_with_db()?;
        let marker = Marker {
            keep: Some(1),
            auto: false,
            follow_up: Some("go on".into()),
        };
        let input = hook_input("manual", Some(&marker.to_instructions()), small_branch());
        let wire = module
            .before_compact(serde_json::to_value(RawInput::from(&input))?)
            .await;
        assert_eq!(wire["compaction"]["firstKeptEntryId"], "u2", "{wire}");
        assert_eq!(module.tally().compactions, 0, "counted once Pi confirms");
        let pending = module.compactor.lock().pending.clone();
        assert_eq!(pending.and_then(|p| p.follow_up), Some("go on".to_owned()));
        let bus = EventBus::new();
        let mut events = bus.subscribe();
        assert!(module.compactor.bus.set(bus).is_ok());
        let done = PiEvent::CompactionEnd(crate::bridge::CompactionEnd {
            from_extension: true,
            ..crate::bridge::CompactionEnd::default()
        });
        module.compactor.on_pi_event(&done).await;
        assert_eq!(module.tally().compactions, 1);
        // Announced as Unipi did, once Pi confirmed.
        let event = events.try_recv()?;
        let record = module.compactor.lock().last.clone().context("the record")?;
        assert_eq!(
            event.decode::<CompactorCompacted>(),
            Some(CompactorCompacted::of(&record))
        );
        let BusEvent::Module { data, .. } = event else {
            anyhow::bail!("not a module event");
        };
        assert_eq!(
            data["tokensSaved"],
            record.tokens_before - record.tokens_after
        );
        assert_eq!(data["kept"], record.blocks_kept);
        assert!(module.compactor.lock().pending.is_none());
        let view = module.last_view().map(|v| {
            (
                v.first_kept_entry_id,
                v.manifest.len(),
                v.when.ends_with("manual"),
            )
        });
        assert_eq!(view, Some(("u2".to_owned(), 4, true)));
        let stats = module.stats().await.unwrap_or_else(Refusal::into_text);
        assert!(stats.contains("This project: 1 compaction"), "{stats}");

        let call = |args: Value| ToolCall {
            agent: AgentId::main(),
            tool: RECALL_TOOL.to_owned(),
            call_id: "c".to_owned(),
            args,
            updates: crate::bridge::UpdateSender::detached(),
            cancel: crate::bridge::CancelToken::never(),
        };
        let found = module
            .call_tool(call(json!({"query": "ZETA-0", "scope": "project"})))
            .await;
        let text = found
            .map(|o| format!("{:?}", o.content))
            .unwrap_or_else(|e| e.message);
        assert!(text.contains("compaction summary"), "{text}");
        let none = module
            .call_tool(call(
                json!({"query": "nothing-like-this", "scope": "project"}),
            ))
            .await;
        let text = none
            .map(|o| format!("{:?}", o.content))
            .unwrap_or_else(|e| e.message);
        assert!(
            text.contains("No results for \\\"nothing-like-this\\\" in this project"),
            "{text}"
        );
        let bad = module.call_tool(call(json!({"scope": "project"}))).await;
        assert!(bad.is_err());
        Ok(())
    }

    #[tokio::test]
    async fn the_hook_leaves_pi_alone_when_not_asked_and_refuses_visibly() -> anyhow::Result<()> {
        let off = CompactorModule::new(
            CompactorConfig {
                override_default_compaction: false,
                ..CompactorConfig::default()
            },
            PathBuf::from("/w"),
            Err("no db".into()),
            None,
        );
        let input = hook_input("threshold", None, small_branch());
        assert_eq!(
            off.before_compact(serde_json::to_value(RawInput::from(&input))?)
                .await,
            Value::Null
        );

        let module = module_with_db()?;
        // Nothing live to summarize: the pipeline refuses.
        let manual = hook_input("manual", None, Vec::new());
        assert_eq!(
            module
                .before_compact(serde_json::to_value(RawInput::from(&manual))?)
                .await,
            json!({"cancel": true})
        );
        let overflow = hook_input("overflow", None, Vec::new());
        assert_eq!(
            module
                .before_compact(serde_json::to_value(RawInput::from(&overflow))?)
                .await,
            Value::Null
        );
        assert_eq!(module.tally().compactions, 0);
        Ok(())
    }

    #[tokio::test]
    async fn turn_usage_drives_auto_compaction_and_pi_reports_release_it() {
        let config = CompactorConfig {
            auto: AutoConfig {
                enabled: true,
                threshold_percent: 50.0,
                ..AutoConfig::default()
            },
            ..CompactorConfig::default()
        };
        let module = CompactorModule::new(config, PathBuf::from("/w"), Err("none".into()), None);
        let turn = |percent: f64| {
            PiEvent::TurnEnd(crate::bridge::TurnEnd {
                turn_index: 1,
                usage: None,
                context_usage: Some(crate::bridge::ContextUsage {
                    tokens: Some((percent * 1000.0) as u64),
                    context_window: 100_000,
                    percent: Some(percent),
                }),
            })
        };
        let end = |error: Option<&str>| {
            PiEvent::CompactionEnd(crate::bridge::CompactionEnd {
                reason: Some("manual".into()),
                error: error.map(str::to_owned),
                from_extension: true,
                ..crate::bridge::CompactionEnd::default()
            })
        };
        let auto_state = || module.compactor.lock().auto.clone();
        module.compactor.on_pi_event(&turn(30.0)).await;
        assert!(!auto_state().in_flight, "below the threshold");
        module.compactor.on_pi_event(&turn(60.0)).await;
        assert!(auto_state().in_flight, "crossed: triggered");
        module.compactor.on_pi_event(&turn(65.0)).await;
        assert!(auto_state().in_flight, "no second trigger while in flight");
        module.compactor.on_pi_event(&end(None)).await;
        let state = auto_state();
        assert!(!state.in_flight && state.awaiting_post_compaction_sample);

        let triggered = |state: &AutoState| state.last_trigger_at_ms;
        let first = triggered(&auto_state());
        module.compactor.lock().auto = AutoState {
            in_flight: true,
            last_trigger_at_ms: first,
            ..AutoState::default()
        };
        module
            .compactor
            .on_pi_event(&end(Some("Compaction failed: boom")))
            .await;
        let state = auto_state();
        assert!(!state.in_flight && !state.awaiting_post_compaction_sample);
        assert_eq!(triggered(&state), first, "an error keeps the cooldown");
    }

    #[tokio::test]
    async fn recall_without_a_database_says_why() {
        let module = CompactorModule::new(
            CompactorConfig::default(),
            PathBuf::from("/w"),
            Err("it is broken".into()),
            None,
        );
        let result = module
            .call_tool(ToolCall {
                agent: AgentId::main(),
                tool: RECALL_TOOL.to_owned(),
                call_id: "c".to_owned(),
                args: json!({"query": "x"}),
                updates: crate::bridge::UpdateSender::detached(),
                cancel: crate::bridge::CancelToken::never(),
            })
            .await;
        let message = result.err().map(|e| e.message).unwrap_or_default();
        assert_eq!(message, "session_recall is unavailable: it is broken");
    }

    /// A database that cannot be written: a notice at start, and recall says it is unavailable
    /// and why instead of answering "No results".
    #[tokio::test]
    async fn an_unwritable_database_is_a_notice_and_recall_says_why() -> anyhow::Result<()> {
        for what in ["file", "directory"] {
            unwritable_database_case(what).await?;
        }
        Ok(())
    }

    async fn unwritable_database_case(what: &str) -> anyhow::Result<()> {
        let home = tempfile::tempdir()?;
        let workspace = tempfile::tempdir()?;
        let db_dir = crate::sessiondb::default_db_dir(home.path());
        let path = crate::sessiondb::project_db_path(&db_dir, workspace.path());
        // An existing database with content: a read-only one would still answer, from stale
        // content.
        SessionDb::open(&path)?.db.upsert_session(&SessionMeta {
            session_id: "s".into(),
            session_file: None,
            project_dir: "/w".into(),
        })?;
        let _guard = crate::sessiondb::test_support::Unwritable::new(if what == "file" {
            &path
        } else {
            &db_dir
        });
        let started = CompactorModule::start(Some(home.path()), workspace.path());
        assert!(
            started
                .notices
                .iter()
                .any(|notice| notice.contains("cannot be written")),
            "{what}: {:?}",
            started.notices
        );
        let result = started
            .module
            .call_tool(ToolCall {
                agent: AgentId::main(),
                tool: RECALL_TOOL.to_owned(),
                call_id: "c".to_owned(),
                args: json!({"query": "anything", "scope": "project"}),
                updates: crate::bridge::UpdateSender::detached(),
                cancel: crate::bridge::CancelToken::never(),
            })
            .await;
        let message = result.err().map(|e| e.message).unwrap_or_default();
        assert!(
            message.starts_with("session_recall is unavailable")
                && message.contains("cannot be written"),
            "{what}: {message}"
        );
        Ok(())
    }

    /// The hook's wire shape (the extension's field names) for a [`BeforeCompact`].
    #[derive(serde::Serialize)]
    struct RawInput {
        reason: Option<String>,
        custom_instructions: Option<String>,
        will_retry: bool,
        tokens_before: Option<f64>,
        branch_entries: Option<Vec<Value>>,
        session_file: Option<String>,
        session_id: Option<String>,
        leaf_id: Option<String>,
    }

    impl From<&BeforeCompact> for RawInput {
        fn from(input: &BeforeCompact) -> Self {
            RawInput {
                reason: input.reason.clone(),
                custom_instructions: input.custom_instructions.clone(),
                will_retry: input.will_retry,
                tokens_before: input.tokens_before,
                branch_entries: input.branch_entries.clone(),
                session_file: input.session_file.clone(),
                session_id: input.session_id.clone(),
                leaf_id: input.leaf_id.clone(),
            }
        }
    }
    /// `compactor.json` is followed: switching `overrideDefaultCompaction` off while the
    /// workbench runs leaves the next compaction to Pi, without a restart.
    #[tokio::test]
    async fn an_edit_of_the_file_applies_to_the_next_compaction() -> anyhow::Result<()> {
        use crate::config::module_file::write_module_file;
        let (home, workspace) = (tempfile::tempdir()?, tempfile::tempdir()?);
        let (config, errors) = LiveConfig::module(
            Some(home.path()),
            workspace.path(),
            &[CONFIG_FILE],
            CompactorConfig::load,
        );
        assert!(errors.is_empty(), "{errors:?}");
        let module = CompactorModule::new(config, PathBuf::from("/w"), Err("no db".into()), None);
        let input = serde_json::to_value(RawInput::from(&hook_input("manual", None, Vec::new())))?;
        // Ours by default: nothing live to summarize, so the pipeline refuses visibly.
        assert_eq!(
            module.before_compact(input.clone()).await,
            json!({"cancel": true})
        );
        write_module_file(
            workspace.path(),
            CONFIG_FILE,
            r#"{"overrideDefaultCompaction": false}"#,
        );
        assert_eq!(
            module.before_compact(input).await,
            Value::Null,
            "left to Pi"
        );
        Ok(())
    }
}

//! The service behind the helpers module's tools: it starts runs (after the preflight, with the
//! caps' slots taken under the ledger's lock), follows them to the end, applies the acceptance
//! gate, records the result, sends a background run's notification and reads results back,
//! from memory or from an earlier session's run directory. The management actions
//! (`actions.rs`), workflow scripts (`workflow.rs`) and the supervisor channel
//! (`supervisor.rs`) are `impl HelperService` blocks beside it; they reach the bookkeeping only
//! through [`RunLedger`]'s methods.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::watch;

use super::acceptance;
use super::agents::AgentType;
use super::args::{
    Acceptance, ContextMode, MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES, OutputLimit, Request, SpawnArgs,
    parse_request,
};
use super::board::{BoardRow, RowKind, RunControl};
use super::budget::Budget;
use super::bus::HelperFinished;
use super::config::{DEPTH_ENV, HelperSettings};
use super::ledger::{RunEntry, RunLedger, SpawnPermit};
use super::names::{
    CHILD_AGENT_PREFIX, NOTIFICATION_TYPE, RESULT_TOOL, SPAWN_TOOL, SUPERVISOR_TOOL,
};
use super::orphans;
use super::pool::{Template, WarmPool};
use super::preflight::{Admission, Refusal, preflight};
use super::results::{
    HelperResult, background_output, error_output, progress_update, refusal_output, truncate_output,
};
use super::runner::{
    HelperRunner, OUTPUT_FILE, Progress, RunHandle, RunStatus, STATUS_FILE, STOPPED_AT_EXIT,
    merge_status_file,
};
use super::runs::{Caller, ChildAgent, RunInfo};
use super::spec::RunSpec;
use crate::bridge::{
    AgentId, BridgeHost, CancelToken, ToolCall, ToolError, ToolOutput, UpdateSender,
};
use crate::bridge::{AgentNotice, NoticeSink, WakePromise, WakeReach};
use crate::sys::{lock, now_ms};
use crate::text::non_blank_str;

/// What a helper that is not a workflow step is told about its place, after its task.
pub(crate) const BOUNDARY_INSTRUCTIONS: &str = "\n\n---\nBoundaries: you are a helper agent working \
for another agent, not for the user directly. Do this task and nothing beyond it. You cannot \
ask the user anything: when you are blocked and contact_supervisor is available, ask your \
supervisor with it; otherwise say in your answer what blocked you. Finish with a concise final \
answer (findings or changes, with file paths): it is all your supervisor will read.";

/// The bridge, as helpers load it.
pub(super) struct ChildBridge {
    pub(super) host: BridgeHost,
    pub(super) extension: PathBuf,
}

/// The settings, the bookkeeping and where notices go: what every tool call of the module
/// shares.
pub(super) struct HelperService {
    settings: HelperSettings,
    ledger: Arc<Mutex<RunLedger>>,
    sink: Mutex<Option<Arc<dyn NoticeSink>>>,
    bridge: Mutex<Option<ChildBridge>>,
    /// The event bus, once the bridge is up: background runs announce their end on it.
    bus: Mutex<Option<crate::bridge::EventBus>>,
    next_id: AtomicU64,
    /// Model fusion's sidekick (the default model) and the warm processes kept for it.
    pool: WarmPool,
    /// The screen, for `get_helper_result`'s `view` (the dock on the run's transcript).
    ui: Mutex<Option<crate::capability::Ui>>,
}

/// Where a run's conversation starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum SessionStart {
    Fresh,
    Fork(PathBuf),
    Resume(PathBuf),
}

/// What a background run's wake promise allows past its deadline: the stop, the gate and the
/// notification.
const WAKE_DELIVERY: Duration = Duration::from_secs(60);

/// One run about to start, after its preflight.
pub(super) struct Launch {
    pub(super) agent: AgentType,
    pub(super) prompt: String,
    pub(super) description: String,
    pub(super) background: bool,
    pub(super) caller: Caller,
    /// A workflow step: no boundary instructions.
    pub(super) fanout: bool,
    pub(super) session: SessionStart,
    pub(super) acceptance: Option<Acceptance>,
    pub(super) limit: OutputLimit,
    pub(super) budget: Budget,
    pub(super) permit: SpawnPermit,
}

/// A started run: what the waiting side needs.
pub(super) struct Started {
    pub(super) info: RunInfo,
    handle: RunHandle,
    result_tx: watch::Sender<Option<HelperResult>>,
    acceptance: Option<Acceptance>,
    permit: SpawnPermit,
    started: Instant,
}

impl HelperService {
    pub(super) fn new(settings: HelperSettings) -> Self {
        Self {
            settings,
            ledger: Arc::new(Mutex::new(RunLedger::default())),
            sink: Mutex::new(None),
            bridge: Mutex::new(None),
            bus: Mutex::new(None),
            next_id: AtomicU64::new(1),
            pool: WarmPool::default(),
            ui: Mutex::new(None),
        }
    }

    pub(super) fn set_ui(&self, ui: crate::capability::Ui) {
        *lock(&self.ui) = Some(ui);
    }

    pub(super) fn pool(&self) -> &WarmPool {
        &self.pool
    }

    /// Where background runs announce their end (`unipi:helper:finished`).
    pub(super) fn set_bus(&self, bus: crate::bridge::EventBus) {
        *crate::sys::lock(&self.bus) = Some(bus);
    }

    pub(super) fn settings(&self) -> &HelperSettings {
        &self.settings
    }

    /// The bookkeeping, locked.
    pub(super) fn ledger(&self) -> MutexGuard<'_, RunLedger> {
        lock(&self.ledger)
    }

    /// Counts a spawn by `caller` in `locked` (this service's ledger, locked) and takes its
    /// concurrency slot; the caller checked the caps under the same lock.
    pub(super) fn take_permit(
        &self,
        locked: &mut RunLedger,
        caller: &Caller,
        background: bool,
    ) -> SpawnPermit {
        SpawnPermit::take(&self.ledger, locked, caller, background)
    }

    /// Where background completions and supervisor messages go from now on.
    pub(super) fn set_sink(&self, sink: Arc<dyn NoticeSink>) {
        *lock(&self.sink) = Some(sink);
    }

    /// The bridge helpers load from now on.
    pub(super) fn set_bridge(&self, bridge: ChildBridge) {
        *lock(&self.bridge) = Some(bridge);
    }

    /// The caller of `agent`: a helper's own Pi when it is one of ours, else the root.
    pub(super) fn caller(&self, agent: &AgentId) -> Caller {
        self.ledger().caller(agent, self.settings.depth)
    }

    /// What the caps see for a call from `caller`, in the locked ledger.
    pub(super) fn admission(&self, ledger: &RunLedger, caller: &Caller) -> Admission {
        ledger.admission(caller, &self.settings.config())
    }

    pub(super) async fn spawn_helper(self: Arc<Self>, call: ToolCall) -> ToolOutput {
        let request = match parse_request(&call.args) {
            Ok(request) => request,
            Err(reason) => return refusal_output(&Refusal::BadArguments(reason.into_text())),
        };
        let caller = self.caller(&call.agent);
        match request {
            Request::Action(action) => self.action(&caller, action, &call).await,
            Request::Workflow(script) => self.workflow(caller, *script, &call).await,
            Request::Single(args) => self.single(caller, *args, &call).await,
        }
    }

    async fn single(
        self: Arc<Self>,
        caller: Caller,
        args: SpawnArgs,
        call: &ToolCall,
    ) -> ToolOutput {
        let (agent, background, permit) = match self.reserve(&caller, &args) {
            Ok(reserved) => reserved,
            Err(refusal) => return self.refused(&refusal),
        };
        if background && let Some(refusal) = self.background_refusal(&caller.agent) {
            return self.refused(&refusal);
        }
        let session = match args.context {
            Some(ContextMode::Fork) => {
                let file = self.ledger().session_file(&caller.agent);
                match file {
                    Some(file) => SessionStart::Fork(file),
                    None => return self.refused(&Refusal::ForkWithoutSession),
                }
            }
            _ => SessionStart::Fresh,
        };
        let launch = Launch {
            budget: Budget::of(&args, &agent),
            agent,
            prompt: args.prompt.clone(),
            description: args.description.clone(),
            background,
            caller,
            fanout: false,
            session,
            acceptance: args.acceptance.clone(),
            limit: args.max_output.unwrap_or_default(),
            permit,
        };
        self.start_and_report(launch, call).await
    }

    /// Starts a launch and answers the call: at once for a background run, at the end for a
    /// foreground one.
    pub(super) async fn start_and_report(
        self: Arc<Self>,
        launch: Launch,
        call: &ToolCall,
    ) -> ToolOutput {
        let started = match self.start(launch).await {
            Ok(started) => started,
            Err((reason, id)) => return error_output(&reason, &id),
        };
        if started.info.background {
            let info = started.info.clone();
            // Owed before the answer goes back, so a print run that settles next waits for it.
            let wake = self.promise_wake(&info.parent_agent, &format!("helper {}", info.id));
            tokio::spawn(self.clone().finish_in_background(started, wake));
            return background_output(&info);
        }
        let result = self
            .finish(started, &call.cancel, Some(&call.updates))
            .await;
        result.output()
    }

    /// Runs a background run to its end and delivers its notification.
    pub(super) async fn finish_in_background(
        self: Arc<Self>,
        started: Started,
        wake: Option<WakePromise>,
    ) {
        let agent = started.info.parent_agent.clone();
        let (agent_type, description) = (
            started.info.agent_type.clone(),
            started.info.description.clone(),
        );
        let result = self
            .clone()
            .finish(started, &CancelToken::never(), None)
            .await;
        let bus = crate::sys::lock(&self.bus).clone();
        if let Some(bus) = bus {
            bus.publish(
                "helpers",
                &HelperFinished {
                    id: result.run_id.clone(),
                    agent_type,
                    description,
                    status: result.status.as_str().to_owned(),
                    error: result.error.clone(),
                },
            );
        }
        self.notify(AgentNotice {
            agent,
            id: result.run_id.clone(),
            custom_type: NOTIFICATION_TYPE.to_string(),
            content: result.notification_content(),
            details: result.details(),
            trigger_turn: true,
        })
        .await;
        drop(wake);
    }

    /// Why a background run could not wake `agent` with its result ([`WakeReach`]), if so.
    pub(super) fn background_refusal(&self, agent: &AgentId) -> Option<Refusal> {
        let reach = lock(&self.sink)
            .as_ref()
            .map_or(WakeReach::Anytime, |sink| sink.wake_reach(agent));
        reach
            .refusal_for(
                "a background helper",
                Some(self.settings.config().deadline),
                "run it in the foreground (run_in_background: false)",
            )
            .map(Refusal::CannotWake)
    }

    /// The wake a background run owes `agent` until its notice is delivered (bounded by the
    /// run's deadline).
    pub(super) fn promise_wake(&self, agent: &AgentId, what: &str) -> Option<WakePromise> {
        let sink = lock(&self.sink).clone()?;
        let limit = self.settings.config().deadline + WAKE_DELIVERY;
        sink.promise_wake(agent, what.to_owned(), limit)
    }

    /// Preflight and reserve the caps under one lock, so two calls cannot both take the last slot.
    fn reserve(
        self: &Arc<Self>,
        caller: &Caller,
        args: &SpawnArgs,
    ) -> Result<(AgentType, bool, SpawnPermit), Refusal> {
        let mut ledger = self.ledger();
        let admission = self.admission(&ledger, caller);
        let (agent, background) = preflight(
            &self.settings.catalog,
            &self.settings.config(),
            admission,
            args,
        )?;
        let permit = self.take_permit(&mut ledger, caller, background);
        Ok((agent, background, permit))
    }

    /// Launches the process, registers the run and its board row. The error carries the reason
    /// and the run id.
    pub(super) async fn start(
        self: &Arc<Self>,
        mut launch: Launch,
    ) -> Result<Started, (String, String)> {
        // Model fusion's sidekick is the model of a helper that names none.
        let sidekick = self.pool.model();
        if launch.agent.model.is_none() {
            launch.agent.model.clone_from(&sidekick);
        }
        let warm = self.warm_slot(&launch, sidekick.as_deref()).await;
        let id = match &warm {
            Some(slot) => slot.run_id.clone(),
            None => self.new_run_id(),
        };
        let info = RunInfo {
            id: id.clone(),
            agent_type: launch.agent.name.clone(),
            description: launch.description.clone(),
            parent_agent: launch.caller.agent.clone(),
            parent_run: launch.caller.run.clone(),
            background: launch.background,
            limit: launch.limit,
            agent: launch.agent.clone(),
            run_dir: self.settings.runs_root.join(&id),
        };
        let child_agent = AgentId::new(format!("{CHILD_AGENT_PREFIX}{id}"));
        let bridge_env = warm.as_ref().map(|slot| slot.bridge_env.clone());
        let spec = match self.run_spec(&launch, &info, &child_agent, bridge_env) {
            Ok(spec) => spec,
            Err(err) => return Err((format!("could not prepare the helper: {err:#}"), id)),
        };
        self.ledger().add_child(
            child_agent.clone(),
            ChildAgent {
                run: id.clone(),
                depth: launch.caller.depth + 1,
                root: launch.caller.root.clone().unwrap_or_else(|| id.clone()),
            },
        );
        let started = match warm {
            Some(slot) => {
                tracing::info!("helper {id}: served by a warm sidekick process");
                HelperRunner::start_warm(spec, slot.process).await
            }
            None => HelperRunner::start(spec).await,
        };
        if sidekick.is_some() {
            self.refill();
        }
        let handle = match started {
            Ok(handle) => handle,
            Err(err) => {
                self.forget_child(&child_agent);
                return Err((format!("could not start the helper: {err:#}"), id));
            }
        };
        let (result_tx, result_rx) = watch::channel(None);
        let control: Arc<dyn RunControl> = handle.control();
        let mut row = BoardRow::new(&id, RowKind::Helper, &info.agent_type, &info.description);
        row.parent = info.parent_run.clone();
        row.model = info.agent.model.clone();
        row.status = RunStatus::Running;
        self.settings.board.upsert(row);
        self.settings.board.attach_control(&id, control.clone());
        self.ledger().add_run(RunEntry::new(
            info.clone(),
            handle.progress(),
            result_rx,
            control,
        ));
        Ok(Started {
            info,
            handle,
            result_tx,
            acceptance: launch.acceptance,
            permit: launch.permit,
            started: Instant::now(),
        })
    }

    /// Waits for a run to end (streaming progress to `updates`, stopping it when `cancel`
    /// fires), applies the gate, records and returns the result.
    pub(super) async fn finish(
        self: Arc<Self>,
        started: Started,
        cancel: &CancelToken,
        updates: Option<&UpdateSender>,
    ) -> HelperResult {
        let Started {
            info,
            mut handle,
            result_tx,
            acceptance,
            permit,
            started,
        } = started;
        let mut progress = handle.progress();
        let mut progress_open = true;
        let mut cancelled = false;
        let outcome = loop {
            tokio::select! {
                outcome = handle.wait() => break outcome,
                () = cancel.cancelled(), if !cancelled => {
                    cancelled = true;
                    handle.request_stop();
                }
                changed = progress.changed(), if progress_open => match changed {
                    Ok(()) => {
                        let now = progress.borrow_and_update().clone();
                        self.settings.board.update(&info.id, |row| apply_progress(row, &now));
                        if let Some(updates) = updates {
                            updates.send(progress_update(&info, &now, started.elapsed()));
                        }
                    }
                    Err(_) => progress_open = false,
                },
            }
        };
        let mut outcome = outcome;
        let model = progress
            .borrow()
            .model
            .clone()
            .or_else(|| info.agent.model.clone());
        self.report_usage(&info.id, model.as_deref(), &outcome.summary.usage);
        if cancelled {
            outcome.status = RunStatus::Stopped;
            outcome.error = Some("cancelled: the call was aborted".to_string());
        }
        let mut result = HelperResult::from_outcome(&info, outcome, started.elapsed());
        if result.status == RunStatus::Completed
            && let Some(acceptance) = &acceptance
        {
            match acceptance::evaluate(acceptance, &self.settings.cwd, cancel).await {
                Ok(()) => result.accepted = Some(true),
                Err(rejection) => {
                    result.accepted = Some(false);
                    result.error = Some(rejection.to_string());
                }
            }
        }
        result.duration = started.elapsed();
        drop(permit);
        self.settings.board.update(&info.id, |row| {
            row.status = result.status;
            row.turns = result.turns;
            row.tool_uses = result.tool_uses.len();
            row.usage = result.usage;
            row.duration = Some(result.duration);
            row.error = result.error.clone().filter(|_| !result.ok());
            if result.accepted == Some(false) {
                row.status = RunStatus::Failed;
            }
        });
        self.forget_child(&AgentId::new(format!("{CHILD_AGENT_PREFIX}{}", info.id)));
        result_tx.send_replace(Some(result.clone()));
        result
    }

    pub(super) fn has_bridge(&self) -> bool {
        lock(&self.bridge).is_some()
    }

    /// Issues the bridge token of a child about to start.
    pub(super) fn register_child(&self, agent: &AgentId) -> anyhow::Result<Vec<(String, String)>> {
        match lock(&self.bridge).as_ref() {
            Some(bridge) => bridge.host.register_agent(agent.clone()),
            None => anyhow::bail!("the bridge is not up"),
        }
    }

    /// The event bus, once the bridge is up.
    pub(super) fn bus(&self) -> Option<crate::bridge::EventBus> {
        lock(&self.bus).clone()
    }

    /// The child's bridge token stops working; its open question (if any) is dropped.
    pub(super) fn forget_child(&self, agent: &AgentId) {
        let bridge = lock(&self.bridge).as_ref().map(|b| b.host.clone());
        if let Some(host) = bridge {
            host.unregister_agent(agent);
        }
        // The child agent record stays: a late call from it still resolves to its depth.
    }

    /// The run's spec. The child's bridge token is issued here, unless `bridge_env` brings the
    /// one a warm process was started with.
    fn run_spec(
        &self,
        launch: &Launch,
        info: &RunInfo,
        child_agent: &AgentId,
        bridge_env: Option<Vec<(String, String)>>,
    ) -> anyhow::Result<RunSpec> {
        let mut prompt = launch.prompt.clone();
        if !launch.fanout {
            prompt.push_str(BOUNDARY_INSTRUCTIONS);
        }
        let template = Template {
            agent: launch.agent.clone(),
            child_depth: launch.caller.depth + 1,
            budget: launch.budget,
        };
        let mut spec = self.spec_for(
            &template,
            info.run_dir.clone(),
            child_agent,
            bridge_env,
            prompt,
        )?;
        apply_launch_extras(&mut spec, launch);
        Ok(spec)
    }

    /// The spec of a run of `template` in `run_dir` (its session is a fresh one there).
    pub(super) fn spec_for(
        &self,
        template: &Template,
        run_dir: PathBuf,
        child_agent: &AgentId,
        bridge_env: Option<Vec<(String, String)>>,
        prompt: String,
    ) -> anyhow::Result<RunSpec> {
        let settings = &self.settings;
        let mut agent = template.agent.clone();
        let child_depth = template.child_depth;
        let mut leading_args = settings.launch.leading_args.clone();
        let mut env = settings.launch.env.clone();
        if let Some(bridge) = lock(&self.bridge).as_ref() {
            match bridge_env {
                Some(issued) => env.extend(issued),
                None => env.extend(bridge.host.register_agent(child_agent.clone())?),
            }
            leading_args.extend(["-e".to_string(), bridge.extension.display().to_string()]);
            // The workbench's tools the child is offered: the supervisor channel always,
            // helpers of its own only while the depth limit allows.
            if !agent.tools.is_empty() {
                agent.tools.push(SUPERVISOR_TOOL.to_string());
                // Bridged MCP tools, as Pi 1.x keeps its own MCP tools under `--tools`; under
                // the original Unipi's naming (`server__tool`) by their names, as declared now.
                agent
                    .tools
                    .push(crate::mcp::module::HELPER_TOOLS_PATTERN.to_string());
                agent.tools.extend(unipi_named_mcp_tools(&bridge.host));
                if child_depth < settings.config().max_depth {
                    agent.tools.push(SPAWN_TOOL.to_string());
                    agent.tools.push(RESULT_TOOL.to_string());
                }
            }
        }
        let mut spec = RunSpec::new(
            &settings.launch.program,
            agent,
            prompt,
            &settings.cwd,
            run_dir,
        );
        spec.leading_args = leading_args;
        spec.env = env;
        spec.env
            .push((DEPTH_ENV.to_string(), child_depth.to_string()));
        spec.deadline = settings.config().deadline;
        spec.budget = template.budget;
        Ok(spec)
    }

    pub(super) fn new_run_id(&self) -> String {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let ms = now_ms();
        // The runs root may be shared by several workbenches: time and pid keep ids apart.
        format!("h{ms:x}-{}-{n}", std::process::id())
    }

    pub(super) async fn notify(&self, notice: AgentNotice) {
        let sink = lock(&self.sink).clone();
        let Some(sink) = sink else {
            tracing::info!(run = %notice.id, "helper notice with no sink: {}", notice.custom_type);
            return;
        };
        let run = notice.id.clone();
        if let Err(err) = sink.deliver(notice).await {
            tracing::warn!(run = %run, "helper notice not delivered: {err:#}");
        }
    }

    /// A refusal: shown on the board as a failed row too, so the user sees it.
    pub(super) fn refused(&self, refusal: &Refusal) -> ToolOutput {
        tracing::info!("spawn_helper refused: {refusal}");
        refusal_output(refusal)
    }

    /// `get_helper_result`: the run's result (`wait` for a running one); `view` (the original
    /// Unipi's, which opened the run's conversation over the screen) opens the dock on the
    /// run's transcript when `agent` is the main agent and there is a screen.
    pub(super) async fn result(
        &self,
        agent: &AgentId,
        args: &Value,
        cancel: &CancelToken,
    ) -> Result<ToolOutput, ToolError> {
        let id = result_id(args)?;
        let wait = flag(args, "wait")?;
        let view = flag(args, "view")?;
        let mut output = self.result_of(id, wait, cancel).await?;
        if view {
            let (shown, note) = self.view(agent, id);
            output.content.push(crate::bridge::ContentBlock::text(note));
            if let Value::Object(details) = &mut output.details {
                details.insert("viewed".to_owned(), Value::Bool(shown));
            }
        }
        Ok(output)
    }

    /// Opens the dock on run `id`'s transcript for `view`: whether it did, and the line that
    /// says so (or why not).
    fn view(&self, agent: &AgentId, id: &str) -> (bool, String) {
        if *agent != AgentId::main() {
            return (
                false,
                "(view: only the main agent's calls open the user's dock; not opened)".to_owned(),
            );
        }
        let ui = lock(&self.ui).clone();
        if self.ledger().run(id).is_none() {
            return (
                false,
                format!(
                    "(view: run {id} is from an earlier session; the dock shows this session's runs)"
                ),
            );
        }
        match ui {
            Some(ui) if ui.open_dock(Some(id.to_owned())) => (
                true,
                format!("(view: the dock shows run {id}'s transcript to the user)"),
            ),
            _ => (
                false,
                "(view: no screen here, so the transcript was not shown)".to_owned(),
            ),
        }
    }

    async fn result_of(
        &self,
        id: &str,
        wait: bool,
        cancel: &CancelToken,
    ) -> Result<ToolOutput, ToolError> {
        let entry = self.ledger().run(id).map(|entry| {
            let (progress, result) = entry.watches();
            (entry.info().clone(), progress, result)
        });
        let Some((info, progress, mut result)) = entry else {
            return self.result_from_disk(id);
        };
        if wait {
            tokio::select! {
                _ = result.wait_for(Option::is_some) => {}
                () = cancel.cancelled() => {}
            }
        }
        let finished = result.borrow().clone();
        // The sender is gone without a result when a foreground call was dropped mid-run (the
        // host's timeout): its child was killed with it.
        let abandoned = result.has_changed().is_err();
        match finished {
            Some(result) => Ok(result.output()),
            None if abandoned => Ok(error_output(
                "the run ended without a result (its call was abandoned and the helper killed)",
                id,
            )),
            None => {
                let now = progress.borrow().clone();
                Ok(ToolOutput::text(format!(
                    "Helper run {id} is still running ({} turns, {} tool uses so far). Its \
                     result arrives as a <helper-result-notification>; wait: true waits for it.",
                    now.turns, now.tool_uses
                ))
                .with_details(json!({
                    "status": "running",
                    "runId": id,
                    "type": info.agent_type,
                    "description": info.description,
                })))
            }
        }
    }

    /// A run of an earlier session, read back from its directory (status and output files).
    pub(super) fn result_from_disk(&self, id: &str) -> Result<ToolOutput, ToolError> {
        let unknown = || {
            ToolError::new(format!(
                "no helper run with id {id:?}; use the run id spawn_helper returned \
                 (spawn_helper action list shows them)"
            ))
        };
        let status = self.status_on_disk(id).ok_or_else(unknown)?;
        if orphans::unfinished(&status) {
            return Ok(unfinished_on_disk(id, &status));
        }
        let dir = self.settings.runs_root.join(id);
        let output = std::fs::read_to_string(dir.join(OUTPUT_FILE)).unwrap_or_default();
        let (text, truncated) = truncate_output(&output, MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES);
        let run_status = status["status"].as_str().unwrap_or("unknown");
        let body = if run_status == RunStatus::Completed.as_str() {
            text
        } else {
            format!(
                "Helper run {id} {run_status}: {}",
                status["error"].as_str().unwrap_or("no result recorded")
            )
        };
        Ok(ToolOutput::text(body).with_details(json!({
            "status": if run_status == "completed" { "completed" } else { "error" },
            "runStatus": run_status,
            "runId": id,
            "truncated": truncated,
            "fromDisk": true,
        })))
    }

    /// Stops every run that has not ended (its result says the workbench exited) and waits
    /// until each has written its final state, at most the stop's grace and slack; a run
    /// still not ended by then gets its final state written here. Runs on every exit path.
    pub(super) async fn shutdown(&self) {
        let live: Vec<(RunInfo, watch::Receiver<Option<HelperResult>>)> = self
            .ledger()
            .runs()
            .filter(|entry| !entry.has_ended())
            .map(|entry| {
                entry.control().stop_at_exit();
                (entry.info().clone(), entry.watches().1)
            })
            .collect();
        let limit = super::spec::KILL_GRACE + super::runner::STOP_SLACK + EXIT_WRITE_SLACK;
        let waits = live.iter().map(|(info, result)| {
            let mut result = result.clone();
            async move {
                let ended = tokio::time::timeout(limit, result.wait_for(Option::is_some)).await;
                if !matches!(ended, Ok(Ok(_))) {
                    write_exit_state(info, STOPPED_AT_EXIT);
                }
            }
        });
        futures_util::future::join_all(waits).await;
    }

    /// The panic path: asks every live run to stop and writes its final state now (the
    /// runtime may not get to it; the watchdog kills the processes).
    pub(super) fn kill_now(&self) {
        let ledger = self.ledger();
        for entry in ledger.runs().filter(|entry| !entry.has_ended()) {
            entry.control().stop_at_exit();
            write_exit_state(
                entry.info(),
                "stopped: the workbench ended abruptly (it panicked) before the run ended",
            );
        }
    }

    /// A run directory's `status.json`, for ids that are safe path components.
    pub(super) fn status_on_disk(&self, id: &str) -> Option<Value> {
        let safe = !id.is_empty()
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !safe {
            return None;
        }
        let dir = self.settings.runs_root.join(id);
        std::fs::read(dir.join(STATUS_FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
    }
}

/// How long a stopped run may take, beyond its grace, to write its final state.
const EXIT_WRITE_SLACK: std::time::Duration = std::time::Duration::from_secs(1);

/// Writes `error` as the final (stopped) state of a run that did not write one itself.
fn write_exit_state(info: &RunInfo, error: &str) {
    let path = info.run_dir.join(STATUS_FILE);
    let fields = json!({
        "status": RunStatus::Stopped.as_str(),
        "error": error,
        "endedAt": now_ms(),
    });
    if let Err(err) = merge_status_file(&path, &fields) {
        tracing::warn!(
            "cannot write the final state of helper run {}: {err:#}",
            info.id
        );
    }
}

/// What `get` says of a run an earlier (or another) session left unfinished on disk.
fn unfinished_on_disk(id: &str, status: &Value) -> ToolOutput {
    let (text, owner) = match orphans::follower(status) {
        orphans::Follower::Alive(owner) => (
            format!(
                "Helper run {id} belongs to another unipi-tui session (pid {}) that is still \
                 running it; its result is recorded there when it ends — ask again later.",
                owner.pid
            ),
            Some(owner.pid),
        ),
        orphans::Follower::Gone(owner) => (
            format!("Helper run {id} failed: {}.", orphans::orphan_error(owner)),
            Some(owner.pid),
        ),
        orphans::Follower::Unknown => (
            format!(
                "Helper run {id} was left unfinished by an earlier unipi-tui that did not record \
                 its end (it was killed, or is an older version); no result was recorded."
            ),
            None,
        ),
    };
    ToolOutput::text(text).with_details(json!({
        "status": "error",
        "runStatus": status["status"],
        "runId": id,
        "owner": owner,
        "fromDisk": true,
    }))
}

/// Where a launch's conversation starts (the budgets are the template's).
fn apply_launch_extras(spec: &mut RunSpec, launch: &Launch) {
    use super::spec::SessionMode;
    match &launch.session {
        SessionStart::Fresh => {}
        SessionStart::Fork(file) => spec.session = SessionMode::Fork(file.clone()),
        SessionStart::Resume(file) => spec.session = SessionMode::Resume(file.clone()),
    }
}

/// A board row brought up to date with a run's progress.
fn apply_progress(row: &mut BoardRow, progress: &Progress) {
    row.turns = progress.turns;
    row.tool_uses = progress.tool_uses;
    row.usage = progress.usage;
    if let Some(model) = &progress.model {
        row.model = Some(model.clone());
    }
    if let Some(activity) = progress
        .last_activity_text
        .as_ref()
        .or(progress.last_tool.as_ref())
    {
        row.last_activity = activity.clone();
    }
}

/// `get_helper_result`'s run id: `id`, or `agent_id` as the original Unipi named it (both given
/// must agree).
fn result_id(args: &Value) -> Result<&str, ToolError> {
    match (
        non_blank_str(args.get("id")),
        non_blank_str(args.get("agent_id")),
    ) {
        (Some(id), Some(other)) if id != other => Err(ToolError::new(format!(
            "get_helper_result got two run ids, id {id:?} and agent_id {other:?}; give one"
        ))),
        (Some(id), _) | (None, Some(id)) => Ok(id),
        (None, None) => Err(ToolError::new(
            "get_helper_result needs id (the run id spawn_helper returned; agent_id is \
             accepted too)",
        )),
    }
}

/// The bridged MCP tools declared now whose names [`crate::mcp::module::HELPER_TOOLS_PATTERN`]
/// does not cover (`"toolNaming": "unipi"`).
fn unipi_named_mcp_tools(host: &BridgeHost) -> Vec<String> {
    host.tool_names()
        .into_iter()
        .filter(|(module, tool)| {
            module == crate::mcp::module::MODULE_NAME && !tool.starts_with("mcp__")
        })
        .map(|(_, tool)| tool)
        .collect()
}

/// A boolean argument, false when absent.
fn flag(args: &Value, key: &str) -> Result<bool, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(value)) => Ok(*value),
        Some(other) => Err(ToolError::new(format!(
            "{key} must be true or false, found {other}"
        ))),
    }
}

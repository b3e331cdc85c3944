//! The workflow as a workbench capability: the commands (each step restricts the tools through
//! the bridge, sends its skill, and ends with restored tools when Pi settles), the board
//! (`/unipi:kanboard` and the global key), the documents watcher, and the loop.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use futures_util::future::BoxFuture;
use serde_json::json;
use tokio::sync::{broadcast, watch};

use super::board::{BoardStore, BoardView, KANBAN_KEYS, WorkbenchBoard};
use super::commands::{self, WorkflowCommand};
use super::docs::DOCS_DIR;
use super::module::{KANBOARD, RALPH_START, RALPH_STATUS, RALPH_STOP, WorkflowModule};
use super::ralph::{self, LoopStatus, Next};
use super::run::{Active, Tracker};
use super::skills;
use crate::bridge::{
    AgentId, BridgeError, BusEvent, CommandCall, CommandReply, DeliverAs, HostCall, Module,
    NotifyLevel, PiEvent,
};
use crate::capability::{
    BridgeLink, Capability, Changed, Registration, StartContext, Ui, WithCommands,
};
use crate::config::keymap::Action;
use crate::sys::{lock, now_ms};

pub const REGISTRATION: Registration = Registration {
    name: "workflow",
    start,
    key_tables: &[&KANBAN_KEYS],
};

/// Unipi's event names for the workflow and the loop.
pub mod events {
    pub const WORKFLOW_START: &str = "unipi:workflow:start";
    pub const WORKFLOW_END: &str = "unipi:workflow:end";
    pub const RALPH_LOOP_START: &str = "unipi:ralph:loop:start";
    pub const RALPH_ITERATION_DONE: &str = "unipi:ralph:iteration:done";
    pub const RALPH_LOOP_END: &str = "unipi:ralph:loop:end";
}

fn start(context: &mut StartContext<'_>) -> Option<Arc<dyn Capability>> {
    let changed = Changed::default();
    let workspace = context.workspace.to_path_buf();
    let store = BoardStore::new(workspace.join(DOCS_DIR), changed.clone());
    Some(Arc::new(Workflow {
        shared: Arc::new(Shared {
            home: context.home.map(PathBuf::from),
            workspace,
            ui: context.ui.clone(),
            store,
            changed,
            bridge: Arc::new(OnceLock::new()),
            tracker: Mutex::new(Tracker::default()),
            ralph: Mutex::new(None),
        }),
    }))
}

struct Workflow {
    shared: Arc<Shared>,
}

struct Shared {
    home: Option<PathBuf>,
    workspace: PathBuf,
    ui: Ui,
    store: Arc<BoardStore>,
    changed: Changed,
    bridge: Arc<OnceLock<BridgeLink>>,
    tracker: Mutex<Tracker>,
    /// The running loop (one at a time) and the agent it runs in.
    ralph: Mutex<Option<(ralph::Loop, AgentId)>>,
}

impl Capability for Workflow {
    fn name(&self) -> &'static str {
        "workflow"
    }

    fn modules(&self) -> Vec<Arc<dyn Module>> {
        let shared = Arc::clone(&self.shared);
        let handler = Arc::new(
            move |call: CommandCall| -> BoxFuture<'static, CommandReply> {
                let shared = Arc::clone(&shared);
                Box::pin(async move { shared.run(call).await })
            },
        );
        let module = WorkflowModule {
            workspace: self.shared.workspace.clone(),
        };
        vec![WithCommands::wrap(Arc::new(module), handler)]
    }

    fn attach(&self, bridge: &BridgeLink) {
        let _ = self.shared.bridge.set(bridge.clone());
        tokio::spawn(follow(Arc::clone(&self.shared), bridge.bus().subscribe()));
        // A project that has documents already gets a live board from the start.
        self.shared.store.watch();
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.shared.changed.subscribe())
    }

    fn action(&self, action: Action) -> bool {
        if action != Action::Board {
            return false;
        }
        let shared = Arc::clone(&self.shared);
        tokio::spawn(async move { shared.open_board().await });
        true
    }

    fn shutdown(&self) -> BoxFuture<'static, ()> {
        self.shared.store.unwatch();
        Box::pin(async {})
    }
}

impl Shared {
    async fn run(self: Arc<Self>, call: CommandCall) -> CommandReply {
        match call.name.as_str() {
            KANBOARD => self.open_board().await,
            RALPH_START => self.ralph_start(call).await,
            RALPH_STOP => self.ralph_stop(),
            RALPH_STATUS => self.ralph_status(),
            name => match commands::find(name) {
                Some(command) => self.run_step(command, call).await,
                None => CommandReply::Failed {
                    message: format!("unipi-tui has no command /{name}"),
                },
            },
        }
    }

    /// Scans the documents and opens the board (or says what it would show, headless).
    async fn open_board(self: Arc<Self>) -> CommandReply {
        let store = Arc::clone(&self.store);
        let scanned = tokio::task::spawn_blocking(move || {
            store.rescan();
        })
        .await;
        if scanned.is_err() {
            return CommandReply::Failed {
                message: "reading the workflow documents failed".to_owned(),
            };
        }
        self.store.watch();
        let port = WorkbenchBoard::new(
            Arc::clone(&self.store),
            self.ui.clone(),
            Arc::clone(&self.bridge),
        );
        if self
            .ui
            .open(BoardView::new(Arc::new(port), self.ui.keymap()))
        {
            return CommandReply::Done;
        }
        let docs = self.store.docs();
        let (done, total) = docs.iter().fold((0, 0), |(d, t), doc| {
            let (dd, tt) = doc.progress();
            (d + dd, t + tt)
        });
        CommandReply::Notify {
            message: format!(
                "{} workflow documents, {done}/{total} items done",
                docs.len()
            ),
            level: NotifyLevel::Info,
        }
    }

    fn link(&self) -> Result<&BridgeLink, CommandReply> {
        self.bridge.get().ok_or_else(|| CommandReply::Failed {
            message: "the workbench's bridge is not running".to_owned(),
        })
    }

    /// Runs a workflow step: restrict the tools, then send the skill as the user's message.
    async fn run_step(
        self: Arc<Self>,
        command: &'static WorkflowCommand,
        call: CommandCall,
    ) -> CommandReply {
        let link = match self.link() {
            Ok(link) => link.clone(),
            Err(reply) => return reply,
        };
        let (workspace, home, store) = (
            self.workspace.clone(),
            self.home.clone(),
            Arc::clone(&self.store),
        );
        let args = call.args.clone();
        let prepared = tokio::task::spawn_blocking(move || {
            let skill = skills::load(command.name, home.as_deref(), &workspace);
            let refs = commands::referenced_docs(&args, &workspace);
            let folders = store.create_folders();
            (skill, refs, folders)
        })
        .await;
        let Ok((skill, (docs, missing), folders)) = prepared else {
            return CommandReply::Failed {
                message: "preparing the step failed".to_owned(),
            };
        };
        if !missing.is_empty() {
            return CommandReply::Failed {
                message: format!("/unipi:{}: {}", command.name, missing.join("; ")),
            };
        }
        if let Err(err) = folders {
            return CommandReply::Failed {
                message: format!("cannot create {}: {err}", self.store.docs_dir().display()),
            };
        }
        let Some(skill) = skill else {
            return CommandReply::Failed {
                message: format!("no skill for {}", command.name),
            };
        };
        self.store.watch();
        let host = &link.host;
        let agent = call.agent.clone();
        let before = match host.call(&agent, HostCall::GetActiveTools).await {
            Ok(value) => serde_json::from_value::<Vec<String>>(value).unwrap_or_default(),
            Err(err) => return failed(command, err),
        };
        let restore = lock(&self.tracker).restore_list().unwrap_or(before);
        let allowed = command.level.allowed(&restore);
        let tools = allowed.clone().unwrap_or_else(|| restore.clone());
        let full_name = format!("unipi:{}", command.name);
        let policy = HostCall::SetToolPolicy {
            reason: command.level.block_reason(&full_name, &tools),
            allowed: allowed.clone(),
        };
        for call in [
            HostCall::SetActiveTools {
                names: tools.clone(),
            },
            policy,
        ] {
            if let Err(err) = host.call(&agent, call).await {
                return failed(command, err);
            }
        }
        let marker = format!("Execute the {} workflow.", command.name);
        lock(&self.tracker).begin(Active {
            command: full_name.clone(),
            level: command.level,
            restore,
            started_ms: now_ms(),
            marker,
            running: false,
            errored: false,
        });
        link.bus().emit(
            "workflow",
            events::WORKFLOW_START,
            json!({"command": full_name, "level": command.level.name(), "args": call.args,
                   "tools": tools, "skill": skill.source}),
        );
        let message = commands::message(command, &call.args, &skill.text, &docs);
        let send = HostCall::SendUserMessage {
            content: message,
            deliver_as: Some(DeliverAs::FollowUp),
        };
        if let Err(err) = host.call(&agent, send).await {
            return failed(command, err);
        }
        CommandReply::Notify {
            message: format!(
                "Running /{full_name} — {} tools: {}",
                command.level.name(),
                tools.join(", ")
            ),
            level: NotifyLevel::Info,
        }
    }

    async fn ralph_start(self: Arc<Self>, call: CommandCall) -> CommandReply {
        let link = match self.link() {
            Ok(link) => link.clone(),
            Err(reply) => return reply,
        };
        let (file, max) = match ralph::parse_args(&call.args) {
            Ok(parsed) => parsed,
            Err(message) => return CommandReply::Failed { message },
        };
        let workspace = self.workspace.clone();
        let name = file.trim_end_matches(".md").to_owned();
        let plan_path = PathBuf::from(DOCS_DIR).join("plans").join(&file);
        let started =
            tokio::task::spawn_blocking(move || -> Result<(ralph::Loop, String), String> {
                let plan = ralph::read_plan(&workspace, &plan_path)?;
                let now = now_ms();
                let mut state = match ralph::load(&workspace, &name) {
                    Some(old) if old.status != LoopStatus::Completed => old,
                    _ => ralph::Loop {
                        name: name.clone(),
                        plan: plan_path.clone(),
                        iteration: 1,
                        max_iterations: max,
                        status: LoopStatus::Active,
                        started_at_ms: now,
                        updated_at_ms: now,
                        reason: None,
                    },
                };
                state.status = LoopStatus::Active;
                state.updated_at_ms = now;
                ralph::save(&workspace, &state).map_err(|err| format!("{err:#}"))?;
                let prompt = ralph::prompt(&state, &plan);
                Ok((state, prompt))
            })
            .await;
        let (state, prompt) = match started {
            Ok(Ok(started)) => started,
            Ok(Err(message)) => return CommandReply::Failed { message },
            Err(_) => {
                return CommandReply::Failed {
                    message: "starting the loop failed".to_owned(),
                };
            }
        };
        link.bus().emit(
            "workflow",
            events::RALPH_LOOP_START,
            json!({"name": state.name, "iteration": state.iteration, "maxIterations": state.max_iterations}),
        );
        let reply = format!(
            "Ralph loop {} started at iteration {}/{} — /unipi:ralph-stop ends it",
            state.name, state.iteration, state.max_iterations
        );
        *lock(&self.ralph) = Some((state, call.agent.clone()));
        let send = HostCall::SendUserMessage {
            content: prompt,
            deliver_as: Some(DeliverAs::FollowUp),
        };
        if let Err(err) = link.host.call(&call.agent, send).await {
            lock(&self.ralph).take();
            return CommandReply::Failed {
                message: format!("the loop could not start: {err}"),
            };
        }
        CommandReply::Notify {
            message: reply,
            level: NotifyLevel::Info,
        }
    }

    fn ralph_stop(&self) -> CommandReply {
        let Some((mut state, _)) = lock(&self.ralph).take() else {
            return CommandReply::Notify {
                message: "No ralph loop is running".to_owned(),
                level: NotifyLevel::Warning,
            };
        };
        state.status = LoopStatus::Completed;
        state.reason = Some("stopped by the user".to_owned());
        self.end_loop(&state);
        CommandReply::Notify {
            message: format!(
                "Stopped ralph loop {} (iteration {})",
                state.name, state.iteration
            ),
            level: NotifyLevel::Info,
        }
    }

    fn ralph_status(&self) -> CommandReply {
        let message = match &*lock(&self.ralph) {
            Some((state, _)) => format!(
                "Ralph loop {}: iteration {}/{} on {}",
                state.name,
                state.iteration,
                state.max_iterations,
                state.plan.display()
            ),
            None => "No ralph loop is running".to_owned(),
        };
        CommandReply::Notify {
            message,
            level: NotifyLevel::Info,
        }
    }

    /// Persists a finished loop and says so on the bus.
    fn end_loop(&self, state: &ralph::Loop) {
        if let Err(err) = ralph::save(&self.workspace, state) {
            tracing::warn!("ralph: {err:#}");
        }
        if let Some(link) = self.bridge.get() {
            link.bus().emit(
                "workflow",
                events::RALPH_LOOP_END,
                json!({"name": state.name, "iteration": state.iteration,
                       "maxIterations": state.max_iterations, "status": state.status,
                       "reason": state.reason}),
            );
        }
    }

    /// A step ended: restore the tools and lift the policy, then say so on the bus.
    async fn end_step(&self, agent: &AgentId, ended: super::run::Ended) {
        let Some(link) = self.bridge.get() else {
            return;
        };
        let calls = [
            HostCall::SetActiveTools {
                names: ended.restore.clone(),
            },
            HostCall::SetToolPolicy {
                allowed: None,
                reason: String::new(),
            },
        ];
        for call in calls {
            if let Err(err) = link.host.call(agent, call).await {
                tracing::warn!(
                    "workflow: restoring the tools after /{}: {err}",
                    ended.command
                );
            }
        }
        link.bus().emit(
            "workflow",
            events::WORKFLOW_END,
            json!({"command": ended.command, "level": ended.level.name(),
                   "success": ended.success, "durationMs": ended.duration_ms}),
        );
        tracing::info!(
            "workflow: /{} ended (success {})",
            ended.command,
            ended.success
        );
    }

    /// After a settled turn: the loop's next iteration, its end, or its pause.
    async fn ralph_turn(&self, agent: &AgentId, aborted: bool) {
        let Some((mut state, owner)) = lock(&self.ralph).clone() else {
            return;
        };
        if owner != *agent {
            return;
        }
        let Some(link) = self.bridge.get() else {
            return;
        };
        let workspace = self.workspace.clone();
        let plan_path = state.plan.clone();
        let plan =
            tokio::task::spawn_blocking(move || ralph::read_plan(&workspace, &plan_path)).await;
        let next = match plan {
            Ok(Ok(plan)) => ralph::after_turn(&mut state, &plan, aborted, now_ms()),
            Ok(Err(message)) => {
                state.status = LoopStatus::Paused;
                self.ui
                    .notice(format!("Ralph loop {} paused: {message}", state.name));
                Next::Pause
            }
            Err(_) => Next::Pause,
        };
        link.bus().emit(
            "workflow",
            events::RALPH_ITERATION_DONE,
            json!({"name": state.name, "iteration": state.iteration, "status": state.status}),
        );
        match next {
            Next::Continue(prompt) => {
                if let Err(err) = ralph::save(&self.workspace, &state) {
                    tracing::warn!("ralph: {err:#}");
                }
                *lock(&self.ralph) = Some((state, owner));
                let send = HostCall::SendUserMessage {
                    content: prompt,
                    deliver_as: Some(DeliverAs::FollowUp),
                };
                if let Err(err) = link.host.call(agent, send).await {
                    tracing::warn!("ralph: the next iteration could not be sent: {err}");
                }
            }
            Next::Complete(reason) => {
                lock(&self.ralph).take();
                self.end_loop(&state);
                self.ui
                    .notice(format!("Ralph loop {} finished: {reason}", state.name));
            }
            Next::Pause => {
                lock(&self.ralph).take();
                if let Err(err) = ralph::save(&self.workspace, &state) {
                    tracing::warn!("ralph: {err:#}");
                }
                self.ui.notice(format!(
                    "Ralph loop {} paused — /unipi:ralph-start plan:{} resumes it",
                    state.name,
                    state
                        .plan
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                ));
            }
        }
    }
}

fn failed(command: &WorkflowCommand, err: BridgeError) -> CommandReply {
    CommandReply::Failed {
        message: format!("/unipi:{} could not start: {err}", command.name),
    }
}

/// Follows Pi's events: ends workflow steps (restoring the tools) and drives the loop.
async fn follow(shared: Arc<Shared>, mut bus: broadcast::Receiver<BusEvent>) {
    loop {
        let event = match bus.recv().await {
            Ok(event) => event,
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        match event {
            BusEvent::Pi { agent, event } => {
                let ended = lock(&shared.tracker).on_event(&event, now_ms());
                if let Some(ended) = ended {
                    shared.end_step(&agent, ended).await;
                }
                if let PiEvent::AgentSettled { aborted, .. } = *event {
                    shared.ralph_turn(&agent, aborted).await;
                }
            }
            BusEvent::AgentDisconnected { .. } => {
                if let Some(step) = lock(&shared.tracker).abandon() {
                    tracing::info!("workflow: {} abandoned, Pi disconnected", step.command);
                }
            }
            _ => {}
        }
    }
}

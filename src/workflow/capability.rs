//! The workflow as a workbench capability: the commands, declared here with their completions
//! (each step restricts the tools through the bridge, sends its skill, and ends with restored
//! tools when Pi settles), the board
//! (`/unipi:kanboard` and the global key), the documents watcher, and the loop (its commands and
//! turns are `ralph_run.rs`'s).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use futures_util::future::BoxFuture;
use tokio::sync::{broadcast, watch};

use super::board::{BoardStore, BoardView, KANBAN_KEYS, WorkbenchBoard};
use super::bus::{WorkflowEnd, WorkflowStart};
use super::commands::{self, COMMANDS, Refs, WorkflowCommand};
use super::levels::WRITE_ROOT;
use super::milestone::SessionSync;
use super::milestone::hook::MilestoneModule;
use super::module::WorkflowModule;
use super::ralph;
use super::refs;
use super::run::{Active, Delivery, Tracker};
use super::skills;
use crate::bridge::{
    AgentId, BridgeError, BridgeHost, BusEvent, Command, CommandCall, CommandReply, CommandSpec,
    Completion, DeliverAs, HostCall, Module, NotifyLevel, PathRule, PiEvent,
};
use crate::capability::{
    BridgeLink, Capability, Changed, GlobalAction, Otherwise, Registration, StartContext, Ui,
};
use crate::sys::{lock, now_ms};

pub const REGISTRATION: Registration = Registration {
    name: "workflow",
    start,
    key_tables: &[&KANBAN_KEYS],
    actions: &[&BOARD],
    dock: None,
};

/// Alt+K: the board, as `/unipi:kanboard` opens it.
static BOARD: GlobalAction = GlobalAction {
    name: "board",
    description: "Open the kanban board of the workflow documents",
    keys: &["alt+k"],
    under_views: false,
    otherwise: Otherwise::Notice("No capability offers the board"),
    help_order: 20,
};

fn start(context: &mut StartContext<'_>) -> Option<Arc<dyn Capability>> {
    let changed = Changed::default();
    let workspace = context.workspace.to_path_buf();
    let store = BoardStore::new(workspace.clone(), changed.clone());
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
            milestones: SessionSync::default(),
        }),
    }))
}

struct Workflow {
    shared: Arc<Shared>,
}

pub(super) struct Shared {
    home: Option<PathBuf>,
    pub(super) workspace: PathBuf,
    pub(super) ui: Ui,
    store: Arc<BoardStore>,
    changed: Changed,
    pub(super) bridge: Arc<OnceLock<BridgeLink>>,
    tracker: Mutex<Tracker>,
    /// The running loop (one at a time).
    pub(super) ralph: Mutex<Option<ralph::Running>>,
    /// The milestones' session-end sync.
    milestones: SessionSync,
}

impl Capability for Workflow {
    fn modules(&self) -> Vec<Arc<dyn Module>> {
        vec![
            Arc::new(WorkflowModule),
            Arc::new(MilestoneModule {
                workspace: self.shared.workspace.clone(),
            }),
        ]
    }

    /// The twenty-two steps in `/unipi:`'s order, then the board and the loop; each completes its
    /// argument from the documents (or worktrees) it refers to.
    fn commands(&self) -> Vec<Command> {
        let shared = &self.shared;
        let workspace = &shared.workspace;
        let mut commands: Vec<Command> = COMMANDS
            .iter()
            .map(|command| {
                let step = Command::new(
                    step_spec(command),
                    (Arc::clone(shared), command),
                    |(shared, command), call| shared.run_step(command, call),
                );
                completing(step, command.completes, workspace)
            })
            .collect();
        commands.push(completing(
            Command::new(
                CommandSpec::new(
                    "unipi:kanboard",
                    "The kanban board of the workflow documents",
                ),
                Arc::clone(shared),
                |shared, _| shared.open_board(),
            ),
            None,
            workspace,
        ));
        commands.push(completing(
            Command::new(
                CommandSpec::new(
                    "unipi:ralph-start",
                    "Loop over a plan's tasks across turns: plan:<file> [--max-iterations N]",
                ),
                Arc::clone(shared),
                Shared::ralph_start,
            ),
            Some(Refs::Plans),
            workspace,
        ));
        commands.push(completing(
            Command::new(
                CommandSpec::new("unipi:ralph-stop", "Stop the running loop"),
                Arc::clone(shared),
                |shared, _| async move { shared.ralph_stop() },
            ),
            None,
            workspace,
        ));
        commands.push(completing(
            Command::new(
                CommandSpec::new(
                    "unipi:ralph-status",
                    "Show the running loop, or the last one and how it ended",
                ),
                Arc::clone(shared),
                |shared, _| async move { shared.ralph_status().await },
            ),
            None,
            workspace,
        ));
        commands
    }

    fn attach(&self, bridge: &BridgeLink) {
        let _ = self.shared.bridge.set(bridge.clone());
        let shared = Arc::clone(&self.shared);
        let events = bridge.bus().subscribe();
        tokio::spawn(async move {
            // Until Pi says its session started, the documents as they are at start-up.
            shared.milestones.begin(shared.workspace.clone()).await;
            follow(shared, events).await;
        });
        // A project that has documents already gets a live board from the start.
        self.shared.store.watch();
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.shared.changed.subscribe())
    }

    /// The step running and the board's progress (`workflow` and `kanboard` groups).
    fn footer_segments(&self) -> Vec<unipi_widgets::footer::Segment> {
        let active = lock(&self.shared.tracker).active().cloned();
        super::footer::segments(active.as_ref(), &self.shared.store.docs(), now_ms())
    }

    fn action(&self, name: &str) -> bool {
        if name != BOARD.name {
            return false;
        }
        let shared = Arc::clone(&self.shared);
        tokio::spawn(async move { shared.open_board().await });
        true
    }

    /// Stops the watcher and syncs the milestones (or waits for the sync Pi's session end
    /// started).
    fn shutdown(&self) -> BoxFuture<'static, ()> {
        self.shared.store.unwatch();
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            shared.milestones.end(shared.workspace.clone()).await;
        })
    }
}

/// A step's command: `/unipi:<step>`, described with its argument and its tool level.
fn step_spec(command: &WorkflowCommand) -> CommandSpec {
    let hint = if command.arg_hint.is_empty() {
        String::new()
    } else {
        format!(" {}", command.arg_hint)
    };
    CommandSpec::new(
        format!("unipi:{}", command.name),
        format!(
            "{}{hint} [{} tools]",
            command.description,
            command.level.name()
        ),
    )
}

/// `command`, completing its argument from the documents (or worktrees) `refs` names (nothing
/// without), and logging what it offered.
fn completing(command: Command, refs: Option<Refs>, workspace: &std::path::Path) -> Command {
    let name = command.spec.name.clone();
    let workspace = workspace.to_path_buf();
    command.completer(move |prefix: &str| -> Vec<Completion> {
        let items = refs
            .map(|refs| refs::complete(refs, prefix, &workspace))
            .unwrap_or_default();
        tracing::debug!(
            "workflow: /{name} {prefix:?} completes to {} items",
            items.len()
        );
        items
    })
}

impl Shared {
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

    pub(super) fn link(&self) -> Result<&BridgeLink, CommandReply> {
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
        let (skill, docs) = match self.prepare_step(command, &call).await {
            Ok(prepared) => prepared,
            Err(reply) => return reply,
        };
        self.store.watch();
        let host = &link.host;
        let agent = call.agent.clone();
        let full_name = format!("unipi:{}", command.name);
        let (restore, tools) = match self.restrict_tools(command, host, &agent, &full_name).await {
            Ok(restricted) => restricted,
            Err(reply) => return reply,
        };
        let marker = format!("Execute the {} workflow.", command.name);
        lock(&self.tracker).begin(Active {
            command: full_name.clone(),
            level: command.level,
            restore,
            started_ms: now_ms(),
            delivery: Delivery::new(marker),
            errored: false,
        });
        link.bus().publish(
            "workflow",
            &WorkflowStart {
                command: full_name.clone(),
                level: command.level.name().to_owned(),
                args: call.args.clone(),
                tools: tools.clone(),
                skill: skill.source.clone(),
            },
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

    /// Off the async workers: loads the step's skill, reads the docs its arguments name and
    /// creates the board's folders; a reply when any of it fails.
    async fn prepare_step(
        &self,
        command: &'static WorkflowCommand,
        call: &CommandCall,
    ) -> Result<(skills::Skill, Vec<(String, PathBuf)>), CommandReply> {
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
            return Err(CommandReply::Failed {
                message: "preparing the step failed".to_owned(),
            });
        };
        if !missing.is_empty() {
            return Err(CommandReply::Failed {
                message: format!("/unipi:{}: {}", command.name, missing.join("; ")),
            });
        }
        if let Err(err) = folders {
            return Err(CommandReply::Failed {
                message: format!("cannot create {}: {err}", self.store.docs_dir().display()),
            });
        }
        let Some(skill) = skill else {
            return Err(CommandReply::Failed {
                message: format!("no skill for {}", command.name),
            });
        };
        Ok((skill, docs))
    }

    /// Restricts the agent's tools to what the step's level allows (and, for a level that
    /// writes only under `.unipi`, its paths); returns the tools to restore and the step's.
    async fn restrict_tools(
        &self,
        command: &'static WorkflowCommand,
        host: &BridgeHost,
        agent: &AgentId,
        full_name: &str,
    ) -> Result<(Vec<String>, Vec<String>), CommandReply> {
        let before = match host.call(agent, HostCall::GetActiveTools).await {
            Ok(value) => serde_json::from_value::<Vec<String>>(value).unwrap_or_default(),
            Err(err) => return Err(failed(command, err)),
        };
        let restore = lock(&self.tracker).restore_list().unwrap_or(before);
        let allowed = command.level.allowed(&restore);
        let tools = allowed.clone().unwrap_or_else(|| restore.clone());
        let paths = command.level.writes_under_unipi_only().then(|| PathRule {
            tools: vec!["write".to_owned(), "edit".to_owned()],
            root: self.workspace.join(WRITE_ROOT),
            reason: command.level.path_reason(full_name),
        });
        let policy = HostCall::SetToolPolicy {
            reason: command.level.block_reason(full_name, &tools),
            allowed: allowed.clone(),
            paths,
        };
        for call in [
            HostCall::SetActiveTools {
                names: tools.clone(),
            },
            policy,
        ] {
            if let Err(err) = host.call(agent, call).await {
                return Err(failed(command, err));
            }
        }
        Ok((restore, tools))
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
                paths: None,
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
        link.bus().publish(
            "workflow",
            &WorkflowEnd {
                command: ended.command.clone(),
                level: ended.level.name().to_owned(),
                success: ended.success,
                duration_ms: ended.duration_ms,
            },
        );
        tracing::info!(
            "workflow: /{} ended (success {})",
            ended.command,
            ended.success
        );
    }
}

fn failed(command: &WorkflowCommand, err: BridgeError) -> CommandReply {
    CommandReply::Failed {
        message: format!("/unipi:{} could not start: {err}", command.name),
    }
}

/// The main Pi's session started or ended: the milestones' baseline is taken, or the sync runs.
async fn session_edge(shared: &Shared, event: &PiEvent) {
    let workspace = shared.workspace.clone();
    match event {
        PiEvent::SessionStart(_) => shared.milestones.begin(workspace).await,
        PiEvent::SessionShutdown(_) => {
            let ticked = shared.milestones.end(workspace).await;
            if !ticked.is_empty() {
                shared.ui.notice(format!(
                    "Milestones: ticked {} ({})",
                    ticked.len(),
                    ticked.join(", ")
                ));
            }
        }
        _ => {}
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
                if agent == AgentId::main() {
                    session_edge(&shared, &event).await;
                }
                let ended = lock(&shared.tracker).on_event(&event, now_ms());
                if let Some(ended) = ended {
                    shared.end_step(&agent, ended).await;
                }
                let turn = lock(&shared.ralph)
                    .as_mut()
                    .and_then(|run| run.on_event(&agent, &event));
                if let Some(aborted) = turn {
                    shared.ralph_turn(aborted).await;
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

//! Background tasks as a workbench capability: started from `background-tasks.json` (off when it
//! says so), its bridge module, the footer segment (`⚙ 2 bg`), its rows in the dock, the
//! `/unipi:bg*` commands, the settings overlay, and the pending-wake line — a line in Pi's own
//! widget area, above its editor, that says the turn is not over while a task that will wake the
//! agent still runs. The tasks' counts and ends go on the event bus for other capabilities (the
//! notifications). Every task's process group is stopped and reaped on every exit path.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::{broadcast, watch};
use unipi_widgets::footer::Segment;
use unipi_widgets::pending::{PendingTask, pending_text, tasks_segment};

use super::bus::{BgTaskFinished, BgTaskStarted, BgTasksChanged, BgTasksSnapshot, unipi_task};
use super::config::SETTINGS_PAGE;
use super::dock::TaskDock;
use super::model::truncate_chars;
use super::{
    TASKS_CONFIG_FILE, TaskService, TaskSettings, TasksConfig, TasksModule, format_task_list,
};
use crate::bridge::{
    AgentId, BusEvent, Command, CommandCall, CommandReply, CommandSpec, Completion, EventBus,
    HostCall, Module, NotifyLevel, PiEvent,
};
use crate::capability::settings::{Save, SettingsHome, live_reporting};
use crate::capability::{
    BridgeLink, Capability, Changed, GlobalAction, Otherwise, Registration, StartContext, Ui,
};
use crate::config::module_file::ModuleConfig;
use crate::views::dock::{DockRequest, DockSource};

pub const REGISTRATION: Registration = Registration {
    name: "tasks",
    start,
    key_tables: &[],
    actions: &[&CLEAR_NOTICES],
    dock: Some(&super::dock::WORDS),
};

/// Ctrl+Alt+C: the dock's "clear finished notices" without opening it. No capability takes it:
/// the app sends the clear to every dock source (the helpers' finished runs too), whether the
/// tasks run or not.
static CLEAR_NOTICES: GlobalAction = GlobalAction {
    name: "tasks.clear_notices",
    description: "Clear finished background-task notices",
    keys: &["ctrl+alt+c"],
    under_views: false,
    otherwise: Otherwise::Dock {
        request: DockRequest::ClearFinished,
        notice: "Finished background-task notices cleared",
    },
    help_order: 10,
};

/// The key of the pending-wake line in Pi's widget area.
const PENDING_WIDGET: &str = "unipi-bg-pending";
/// How often the pending-wake line's spinner moves while it shows.
const SPINNER_EVERY: Duration = Duration::from_millis(250);

fn start(context: &mut StartContext<'_>) -> Option<Arc<dyn Capability>> {
    // Followed: the task defaults apply to the next task; `enabled` and the output cap are
    // fixed with the service, at start.
    let live = live_reporting(context, &[TASKS_CONFIG_FILE], TasksConfig::load);
    let config = live.get();
    if !config.enabled {
        tracing::info!("tasks: disabled in background-tasks.json");
        return None;
    }
    let settings = TaskSettings::from_env(
        "unipi",
        context.workspace.to_path_buf(),
        config.max_output_bytes,
    );
    let service = match TaskService::new(settings) {
        Ok(service) => service,
        Err(err) => {
            context.report(format!("Background tasks could not start: {err:#}"));
            return None;
        }
    };
    let changed = Changed::default();
    changed.follow(service.registry().subscribe());
    Some(Arc::new(TasksCapability {
        module: Arc::new(TasksModule::new(service.clone(), live)),
        dock: TaskDock::new(service.clone(), changed.clone()),
        service,
        settings: SettingsHome::new(context, changed),
    }))
}

struct TasksCapability {
    service: TaskService,
    module: Arc<TasksModule>,
    dock: Arc<TaskDock>,
    settings: SettingsHome,
}

impl Capability for TasksCapability {
    fn modules(&self) -> Vec<Arc<dyn Module>> {
        vec![self.module.clone()]
    }

    fn commands(&self) -> Vec<Command> {
        commands(Arc::clone(&self.module), self.settings.clone())
    }

    fn attach(&self, bridge: &BridgeLink) {
        self.service.attach_host(bridge.host.clone());
        tokio::spawn(pending_line(
            self.service.clone(),
            bridge.clone(),
            self.settings.ui.clone(),
        ));
        tokio::spawn(publish_task_events(self.service.clone(), bridge.bus()));
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.settings.changed.subscribe())
    }

    fn footer_segments(&self) -> Vec<Segment> {
        let registry = self.service.registry();
        tasks_segment(registry.running_count(), registry.waking_count())
            .into_iter()
            .collect()
    }

    fn dock(&self) -> Option<Arc<dyn DockSource>> {
        Some(self.dock.clone())
    }

    fn shutdown(&self) -> BoxFuture<'static, ()> {
        let service = self.service.clone();
        // Every task's process group is stopped and reaped; no notification is sent for these.
        Box::pin(async move { service.shutdown().await })
    }

    fn kill_now(&self) {
        self.service.kill_all_now();
    }
}

/// The `/unipi:bg*` commands over the tasks' `module`, with the screen and the settings'
/// home in `settings`.
pub fn commands(module: Arc<TasksModule>, settings: SettingsHome) -> Vec<Command> {
    let service = module.service().clone();
    let commands = Commands { module, settings };
    vec![
        Command::new(
            CommandSpec::new(
                "unipi:bg",
                "Start a background shell task: /unipi:bg [--name NAME] [--] <command>",
            ),
            commands.clone(),
            Commands::bg,
        ),
        Command::new(
            CommandSpec::new("unipi:bg-tasks", "Open the background task dock"),
            commands.clone(),
            Commands::tasks,
        )
        .completer(move |prefix| task_ids(&service, prefix)),
        Command::new(
            CommandSpec::new("unipi:bg-settings", "Background task settings"),
            commands,
            Commands::edit_settings,
        ),
    ]
}

/// What the `/unipi:bg*` commands need.
#[derive(Clone)]
struct Commands {
    module: Arc<TasksModule>,
    settings: SettingsHome,
}

impl Commands {
    /// `/unipi:bg <command>`: start a task from the user (notification only, no wake).
    async fn bg(self, call: CommandCall) -> CommandReply {
        self.module.run_user_command(call.agent, &call.args).await
    }

    /// `/unipi:bg-tasks [id]`: the dock (at that task's detail), or the list in words headless.
    async fn tasks(self, call: CommandCall) -> CommandReply {
        let detail = Some(call.args.trim().to_owned()).filter(|id| !id.is_empty());
        if self.settings.ui.open_dock(detail) {
            CommandReply::Done
        } else {
            let tasks = self.module.service().registry().snapshot();
            CommandReply::Notify {
                message: format_task_list(&tasks, crate::sys::now_ms()),
                level: NotifyLevel::Info,
            }
        }
    }

    /// `/unipi:bg-settings`: the settings overlay.
    async fn edit_settings(self, _call: CommandCall) -> CommandReply {
        // The user's `background-tasks.json`, written crash-safe.
        let save: Save = Arc::new(|home, values| {
            crate::config::merge_json_file(&home.join(TASKS_CONFIG_FILE), &values)?;
            Ok(
                "Saved. The task defaults apply to the next task; on/off and the \
                output cap at the next start."
                    .to_owned(),
            )
        });
        self.settings.open_settings(&SETTINGS_PAGE, |_| save).await
    }
}

/// `/unipi:bg-tasks <id>` opens that task's detail: offer the ids (up to 20).
fn task_ids(service: &TaskService, prefix: &str) -> Vec<Completion> {
    let prefix = prefix.trim();
    service
        .registry()
        .snapshot()
        .into_iter()
        .filter(|task| task.id.starts_with(prefix))
        .take(20)
        .map(|task| Completion {
            label: format!("{} {}", task.id, task.name),
            description: Some(format!(
                "{} — {}",
                task.status.as_str(),
                truncate_chars(&task.command, 60)
            )),
            value: task.id,
        })
        .collect()
}

/// Keeps the pending-wake line in Pi's widget area true: shown while the main agent is idle but
/// a task that will wake it still runs, with a spinner; removed otherwise. One task owns it, so
/// calls never overtake each other and a slow Pi only ever gets the newest state.
async fn pending_line(service: TaskService, bridge: BridgeLink, ui: Ui) {
    let mut events = bridge.bus().subscribe();
    let mut tasks = service.registry().subscribe();
    let main = AgentId::main();
    let mut idle = false;
    let mut connected = bridge.host.agent_info(&main).is_some();
    let mut shown: Option<String> = None;
    let mut frame = 0usize;
    loop {
        let line = if idle && connected {
            waiting_line(&service, frame, usize::from(ui.pane_width().max(20)))
        } else {
            None
        };
        if line != shown {
            let call = HostCall::SetWidget {
                key: PENDING_WIDGET.into(),
                lines: line.clone().map(|l| vec![l]),
            };
            if let Err(err) = bridge.host.call(&main, call).await {
                tracing::debug!("pending-wake line: {err}");
            }
            shown = line;
        }
        let spin = shown.is_some();
        tokio::select! {
            event = events.recv() => match event {
                Ok(BusEvent::Pi { agent, event }) if agent == main => {
                    match &*event {
                        PiEvent::SessionStart(_) | PiEvent::AgentSettled { .. } => idle = true,
                        PiEvent::AgentStart | PiEvent::CompactionStart { .. } => idle = false,
                        PiEvent::CompactionEnd(_) => idle = true,
                        _ => {}
                    }
                }
                Ok(BusEvent::AgentConnected { agent, .. }) if agent == main => {
                    // A new extension instance (after /reload) starts without our widget.
                    connected = true;
                    shown = None;
                }
                Ok(BusEvent::AgentDisconnected { agent, .. }) if agent == main => {
                    connected = false;
                    shown = None;
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => break,
            },
            changed = tasks.changed() => if changed.is_err() { break },
            _ = tokio::time::sleep(SPINNER_EVERY), if spin => frame = frame.wrapping_add(1),
        }
    }
}

/// Publishes the tasks' counts when they change ([`BgTasksChanged`]), each task's start
/// ([`BgTaskStarted`]) and end ([`BgTaskFinished`]), and every task when a Pi connects
/// ([`BgTasksSnapshot`]), for whoever follows them on the bus (the notifications: a task's end,
/// and whether the agent will be woken anyway; the bridge: Unipi's shared task registry).
async fn publish_task_events(service: TaskService, bus: EventBus) {
    let registry = service.registry();
    let mut changes = registry.subscribe();
    let mut connections = bus.subscribe();
    let known = registry.snapshot();
    let mut started: HashSet<String> = known.iter().map(|task| task.id.clone()).collect();
    let mut ended: HashSet<String> = known
        .into_iter()
        .filter(|task| !task.is_running())
        .map(|task| task.id)
        .collect();
    let mut counts = None;
    loop {
        let now = (registry.running_count(), registry.waking_count());
        if counts != Some(now) {
            counts = Some(now);
            bus.publish(
                "tasks",
                &BgTasksChanged {
                    running: now.0,
                    waking: now.1,
                },
            );
        }
        for task in registry.snapshot() {
            if started.insert(task.id.clone()) {
                bus.publish(
                    "tasks",
                    &BgTaskStarted {
                        task: unipi_task(&task),
                        id: task.id.clone(),
                        name: task.name.clone(),
                        command: task.command.clone(),
                    },
                );
            }
            if !task.is_running() && ended.insert(task.id.clone()) {
                bus.publish(
                    "tasks",
                    &BgTaskFinished {
                        task: unipi_task(&task),
                        wakes_agent: task.wakes_agent(),
                        id: task.id,
                        name: task.name,
                        status: task.status.as_str().to_owned(),
                        exit_code: task.exit_code,
                    },
                );
            }
        }
        loop {
            tokio::select! {
                changed = changes.changed() => match changed {
                    Ok(()) => break,
                    Err(_) => return,
                },
                event = connections.recv() => match event {
                    Ok(BusEvent::AgentConnected { .. }) => {
                        let tasks = registry.snapshot().iter().map(unipi_task).collect();
                        bus.publish("tasks", &BgTasksSnapshot { tasks });
                    }
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                },
            }
        }
    }
}

/// The line for the tasks that will wake the agent, longest-running first.
fn waiting_line(service: &TaskService, frame: usize, width: usize) -> Option<String> {
    let now = crate::sys::now_ms();
    let mut waiting: Vec<(u64, PendingTask)> = service
        .registry()
        .snapshot()
        .into_iter()
        .filter(|task| task.is_running() && task.wakes_agent())
        .map(|task| {
            let runtime = task.runtime_ms(now) / 1000;
            let pending = PendingTask {
                name: task.name,
                runtime_secs: runtime,
            };
            (runtime, pending)
        })
        .collect();
    waiting.sort_by_key(|(runtime, _)| std::cmp::Reverse(*runtime));
    let waiting: Vec<PendingTask> = waiting.into_iter().map(|(_, task)| task).collect();
    pending_text(&waiting, frame, width)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::*;
    use crate::bridge::BusMessage;
    use crate::tasks::{RunRequest, TaskOrigin};

    /// The next `unipi:bg:*` event on the bus.
    async fn next(events: &mut broadcast::Receiver<BusEvent>) -> (String, Value) {
        let wait = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                if let Ok(BusEvent::Module { name, data, .. }) = events.recv().await {
                    return (name, data);
                }
            }
        });
        wait.await.expect("a tasks event within 20 s")
    }

    #[tokio::test]
    async fn task_counts_and_ends_go_on_the_bus() {
        let dir = tempfile::tempdir().unwrap();
        let service = TaskService::new(TaskSettings {
            root_dir: dir.path().join("runs"),
            shell: PathBuf::from("/bin/sh"),
            ..TaskSettings::from_env("bus test", dir.path().to_path_buf(), None)
        })
        .unwrap();
        let bus = EventBus::new();
        let mut events = bus.subscribe();
        tokio::spawn(publish_task_events(service.clone(), bus.clone()));
        assert_eq!(
            next(&mut events).await,
            (
                BgTasksChanged::NAME.to_owned(),
                json!({"running": 0, "waking": 0})
            )
        );
        // A task that wakes the agent, held running until the test lets it go.
        let go = dir.path().join("go");
        let command = format!(
            "while [ ! -e '{}' ]; do sleep 0.05; done; exit 3",
            go.display()
        );
        service
            .start(RunRequest {
                name: "gated".into(),
                command,
                description: None,
                timeout_seconds: None,
                notify_on_completion: true,
                trigger_on_completion: true,
                is_agent: false,
                origin: TaskOrigin::Agent,
                agent: AgentId::main(),
            })
            .await
            .unwrap();
        let (mut counted, mut announced) = (None, None);
        while counted.is_none() || announced.is_none() {
            match next(&mut events).await {
                (name, data) if name == BgTasksChanged::NAME => counted = Some(data),
                (name, data) if name == BgTaskStarted::NAME => announced = Some(data),
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(counted, Some(json!({"running": 1, "waking": 1})));
        // The start carries the task as Unipi's registry showed it.
        let announced = announced.unwrap();
        assert_eq!(announced["name"], "gated");
        let task = &announced["task"];
        assert_eq!(task["id"], announced["id"]);
        assert_eq!(task["status"], "running");
        assert_eq!(task["triggerOnCompletion"], true);
        assert!(task["startTime"].as_u64().is_some_and(|ms| ms > 0));
        assert!(task.get("leaderStart").is_none());
        std::fs::write(&go, "").unwrap();
        let (name, ended) = next(&mut events).await;
        let (name, ended) = if name == BgTasksChanged::NAME {
            // The counts may change before the end is seen; the end follows.
            assert_eq!(ended, json!({"running": 0, "waking": 0}));
            next(&mut events).await
        } else {
            (name, ended)
        };
        assert_eq!(name, BgTaskFinished::NAME);
        assert_eq!(ended["name"], "gated");
        assert_eq!(ended["status"], "failed");
        assert_eq!(ended["exitCode"], 3);
        assert_eq!(ended["wakesAgent"], true);
        assert_eq!(ended["task"]["status"], "failed");
        assert_eq!(ended["task"]["exitCode"], 3);
        // A Pi that connects now gets every task.
        bus.send(BusEvent::AgentConnected {
            agent: AgentId::main(),
            pi_version: "1.6.0".into(),
        });
        let (name, snapshot) = next(&mut events).await;
        assert_eq!(name, BgTasksSnapshot::NAME);
        assert_eq!(snapshot["tasks"].as_array().map(Vec::len), Some(1));
        assert_eq!(snapshot["tasks"][0]["name"], "gated");
        assert_eq!(snapshot["tasks"][0]["status"], "failed");
        service.shutdown().await;
    }
}

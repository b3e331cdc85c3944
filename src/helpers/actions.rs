//! `spawn_helper`'s management actions: list, get, status, children.list, resume, stop,
//! grant-spawn-budget, doctor, guide and reply. Each answers with text the model reads and
//! `details` a renderer can use; like a spawn, none of them throws — a refused action is an
//! error result with the reason.
//!
//! Who may do what: any caller may look (list, get, status, children.list, doctor, guide); a
//! run may be stopped or resumed by the agent that spawned it or by the root session; only the
//! root session may grant spawn budget (the budget exists to stop helpers from spawning without
//! end, so a helper cannot raise its own ceiling); only a run's parent may answer its question.

use serde_json::{Value, json};

use super::args::{Action, ContextMode, OutputLimit, SpawnArgs};
use super::budget::Budget;
use super::preflight::check_caps;
use super::results::{error_output, refusal_output, spend, usage_json};
use super::runs::Caller;
use super::service::{HelperService, Launch, SessionStart};
use crate::bridge::{Refusal, ToolCall, ToolOutput};

/// What `action: "guide"` answers.
pub(crate) const GUIDE: &str = "\
spawn_helper — delegate work to helper agents (separate Pi processes with their own context).

Single helper: {type, prompt, description}. type: explore (read-only) or work (may edit), or a
custom type. The prompt must be complete: the helper sees nothing of your conversation, unless
context: \"fork\" (background only) gives it a copy. Foreground waits and returns the answer;
run_in_background: true returns a run id and a <helper-result-notification> arrives later — do not
poll. Budgets: max_turns (steered to answer at the limit, stopped after a grace), max_tool_uses,
max_tokens, max_cost (USD). gate: \"<command>\" (or acceptance: {commands, timeoutSeconds}) must
exit 0 for the answer to be accepted. maxOutput: bytes or {bytes, lines} bounds the answer.

Workflow: workflowScript: {steps: [{id, type, prompt, description?, after?: [ids]}],
maxParallel?}. Steps run as soon as the steps in `after` are done; {{id}} in a prompt is replaced
by that step's answer. The whole script counts against the spawn budgets before anything starts.

Actions (action + id/message/amount): list, get, status, children.list, resume (id, message:
continue a finished run's session), stop (id), grant-spawn-budget (amount; root session only),
doctor (check the set-up), guide, reply (id, message: answer a helper's question).

Helpers can reach you with contact_supervisor: a <helper-supervisor-message> of kind question
waits for your reply (spawn_helper action reply).";

impl HelperService {
    pub(super) async fn action(
        self: std::sync::Arc<Self>,
        caller: &Caller,
        action: Action,
        call: &ToolCall,
    ) -> ToolOutput {
        match action {
            Action::List => self.list(None),
            Action::ChildrenList { id } => {
                let parent = id.or_else(|| caller.run.clone());
                self.list(Some(parent))
            }
            Action::Get { id } => self.get(&id),
            Action::Status => self.status(caller),
            Action::Stop { id } => self.stop(caller, &id),
            Action::GrantSpawnBudget { amount } => self.grant(caller, amount),
            Action::Doctor => self.doctor(),
            Action::Guide => ToolOutput::text(GUIDE)
                .with_details(json!({"status": "completed", "action": "guide"})),
            Action::Resume {
                id,
                message,
                background,
            } => {
                self.resume(caller.clone(), &id, message, background, call)
                    .await
            }
            Action::Reply { id, message } => self.reply(caller, &id, message),
        }
    }

    /// Every run, or (with `Some(parent)`) the runs spawned by run `parent` (`None` = the root).
    fn list(&self, children_of: Option<Option<String>>) -> ToolOutput {
        let ledger = self.ledger();
        let mut lines = Vec::new();
        let mut rows = Vec::new();
        for entry in ledger.runs() {
            let info = entry.info();
            let id = &info.id;
            if let Some(parent) = &children_of
                && info.parent_run != *parent
            {
                continue;
            }
            let (status, turns, tools, usage) = match entry.result().as_ref() {
                Some(result) => (
                    if result.ok() {
                        "completed"
                    } else {
                        result.status.as_str()
                    }
                    .to_string(),
                    result.turns,
                    result.tool_uses.len(),
                    result.usage,
                ),
                None => {
                    let progress = entry.progress();
                    (
                        "running".to_string(),
                        progress.turns,
                        progress.tool_uses,
                        progress.usage,
                    )
                }
            };
            lines.push(format!(
                "{id}  {status:<9} {} · {} · {turns} turns · {tools} tools · {}{}",
                info.agent_type,
                info.description,
                spend(&usage),
                info.parent_run
                    .as_ref()
                    .map(|parent| format!(" · parent {parent}"))
                    .unwrap_or_default()
            ));
            rows.push(json!({
                "runId": id,
                "status": status,
                "type": info.agent_type,
                "description": info.description,
                "parent": info.parent_run,
                "background": info.background,
                "turns": turns,
                "toolUseCount": tools,
                "usage": usage_json(&usage),
            }));
        }
        let text = if lines.is_empty() {
            match &children_of {
                Some(_) => "No child runs.".to_string(),
                None => "No helper runs in this session.".to_string(),
            }
        } else {
            lines.join("\n")
        };
        ToolOutput::text(text).with_details(json!({"status": "completed", "runs": rows}))
    }

    fn get(&self, id: &str) -> ToolOutput {
        let entry = self
            .ledger()
            .run(id)
            .map(|entry| (entry.info().clone(), entry.result(), entry.progress()));
        match entry {
            Some((_, Some(result), _)) => {
                let mut details = result.details();
                details["action"] = json!("get");
                ToolOutput::text(result.content()).with_details(details)
            }
            Some((info, None, progress)) => ToolOutput::text(format!(
                "Helper run {id} ({} · {}) is running: {} turns, {} tool uses, {}.",
                info.agent_type,
                info.description,
                progress.turns,
                progress.tool_uses,
                spend(&progress.usage)
            ))
            .with_details(json!({"status": "running", "runId": id, "type": info.agent_type})),
            None => match self.result_from_disk(id) {
                Ok(output) => output,
                Err(err) => error_output(&err.message, id),
            },
        }
    }

    fn status(&self, caller: &Caller) -> ToolOutput {
        let config = self.settings().config();
        let ledger = self.ledger();
        let (counters, granted) = (ledger.counters(), ledger.granted());
        let cap = ledger.spawn_cap(&config);
        let run_spawns = caller.root.as_ref().map(|root| ledger.run_spawns(root));
        let mut text = format!(
            "Spawns this session: {} of {cap}{}\nRunning: {} of {} (background {} of {})\n\
             Depth: {} of {} (maxSubagentDepth)\nRun deadline: {} min",
            counters.spawns,
            if granted > 0 {
                format!(" (incl. {} granted)", granted)
            } else {
                String::new()
            },
            counters.running,
            config.max_concurrent,
            counters.background,
            config.max_active_async,
            caller.depth,
            config.max_depth,
            config.deadline.as_secs() / 60,
        );
        if let Some(used) = run_spawns {
            text.push_str(&format!(
                "\nThis run tree: {used} of {} spawns (maxSubagentSpawnsPerRun)",
                config.max_spawns_per_run
            ));
        }
        ToolOutput::text(text).with_details(json!({
            "status": "completed",
            "spawns": counters.spawns,
            "spawnCap": cap,
            "granted": granted,
            "running": counters.running,
            "maxConcurrent": config.max_concurrent,
            "background": counters.background,
            "maxActiveAsync": config.max_active_async,
            "depth": caller.depth,
            "maxDepth": config.max_depth,
            "runSpawns": run_spawns,
            "maxSpawnsPerRun": config.max_spawns_per_run,
        }))
    }

    /// Whether `caller` may act on run `id` (its parent, or the root session).
    fn may_manage(&self, caller: &Caller, id: &str) -> Result<(), Refusal> {
        let ledger = self.ledger();
        let Some(entry) = ledger.run(id) else {
            return Err(format!(
                "no helper run with id {id:?} in this session (spawn_helper action list shows them)"
            )
            .into());
        };
        if caller.is_root() || entry.info().parent_agent == caller.agent {
            Ok(())
        } else {
            Err(format!(
                "run {id} was not spawned by you; only its parent or the root session may manage it"
            )
            .into())
        }
    }

    fn stop(&self, caller: &Caller, id: &str) -> ToolOutput {
        if let Err(reason) = self.may_manage(caller, id) {
            return error_output(&reason, id);
        }
        let (control, finished) = {
            let ledger = self.ledger();
            let entry = ledger.run(id);
            (
                entry.map(|entry| entry.control()),
                entry.is_some_and(|entry| entry.has_ended()),
            )
        };
        match control {
            Some(_) if finished => ToolOutput::text(format!("Helper run {id} has already ended."))
                .with_details(json!({"status": "completed", "runId": id, "stopped": false})),
            Some(control) => {
                control.stop();
                ToolOutput::text(format!(
                    "Stopping helper run {id} (SIGTERM to its process group, SIGKILL after 3 s). \
                     Its result reads as stopped."
                ))
                .with_details(json!({"status": "completed", "runId": id, "stopped": true}))
            }
            None => error_output("no such run", id),
        }
    }

    fn grant(&self, caller: &Caller, amount: u32) -> ToolOutput {
        if !caller.is_root() || caller.depth > 0 {
            return error_output(
                "grant-spawn-budget works only from the interactive root session; a helper \
                 cannot raise its own spawn budget",
                "",
            );
        }
        let mut ledger = self.ledger();
        let granted = ledger.grant(amount);
        let cap = ledger.spawn_cap(&self.settings().config());
        ToolOutput::text(format!(
            "Granted {amount} more helper spawns: {} of {cap} used.",
            ledger.counters().spawns
        ))
        .with_details(json!({"status": "completed", "granted": granted, "spawnCap": cap}))
    }

    fn doctor(&self) -> ToolOutput {
        let settings = self.settings();
        let mut checks: Vec<(bool, String)> = Vec::new();
        let program = &settings.launch.program;
        let runnable = std::fs::metadata(program)
            .map(|meta| {
                use std::os::unix::fs::PermissionsExt as _;
                meta.is_file() && meta.permissions().mode() & 0o111 != 0
            })
            .unwrap_or(false);
        checks.push((
            runnable,
            format!(
                "Pi program {} {}",
                program.display(),
                if runnable {
                    "is executable"
                } else {
                    "is missing or not executable"
                }
            ),
        ));
        let writable = std::fs::create_dir_all(&settings.runs_root)
            .and_then(|()| tempfile::tempfile_in(&settings.runs_root).map(drop));
        checks.push((
            writable.is_ok(),
            match &writable {
                Ok(()) => format!("run directory {} is writable", settings.runs_root.display()),
                Err(err) => format!(
                    "run directory {} is not writable: {err}",
                    settings.runs_root.display()
                ),
            },
        ));
        let types: Vec<String> = settings
            .catalog
            .iter()
            .map(|agent| {
                format!(
                    "{}{}",
                    agent.name,
                    if agent.enabled { "" } else { " (disabled)" }
                )
            })
            .collect();
        checks.push((
            !types.is_empty(),
            format!("agent types: {}", types.join(", ")),
        ));
        checks.push((
            settings.depth < settings.config().max_depth,
            format!(
                "depth {} of maxSubagentDepth {}",
                settings.depth,
                settings.config().max_depth
            ),
        ));
        let bridged = self.has_bridge();
        checks.push((
            true,
            if bridged {
                "helpers load the workbench bridge (contact_supervisor, nested helpers)".to_string()
            } else {
                "helpers run without the workbench bridge (no contact_supervisor)".to_string()
            },
        ));
        let ok = checks.iter().all(|(ok, _)| *ok);
        let text = checks
            .iter()
            .map(|(ok, line)| format!("{} {line}", if *ok { "✓" } else { "✗" }))
            .collect::<Vec<_>>()
            .join("\n");
        ToolOutput::text(text).with_details(json!({
            "status": if ok { "completed" } else { "error" },
            "checks": checks.iter().map(|(ok, line)| json!({"ok": ok, "check": line})).collect::<Vec<Value>>(),
        }))
    }

    async fn resume(
        self: std::sync::Arc<Self>,
        caller: Caller,
        id: &str,
        message: String,
        background: Option<bool>,
        call: &ToolCall,
    ) -> ToolOutput {
        let known = self
            .ledger()
            .run(id)
            .map(|entry| (entry.info().clone(), entry.has_ended()));
        let (agent, description, default_background) = match known {
            Some((info, finished)) => {
                if let Err(reason) = self.may_manage(&caller, id) {
                    return error_output(&reason, id);
                }
                if !finished {
                    return error_output(
                        &format!(
                            "run {id} is still running; resume continues a run that has ended"
                        ),
                        id,
                    );
                }
                (info.agent, info.description, info.background)
            }
            None => match self.earlier_run(&caller, id) {
                Ok(earlier) => earlier,
                Err(reason) => return error_output(&reason, id),
            },
        };
        let Some(session) = self.stored_session(id) else {
            return error_output(&format!("run {id} left no stored session to continue"), id);
        };
        let args = SpawnArgs {
            agent_type: agent.name.clone(),
            prompt: message.clone(),
            description: format!("resume {description}"),
            background,
            context: Some(ContextMode::Fresh),
            ..SpawnArgs::default()
        };
        let reserved = {
            let mut ledger = self.ledger();
            let admission = self.admission(&ledger, &caller);
            let background = background.unwrap_or(default_background);
            check_caps(&self.settings().config(), admission, 1, background).map(|()| {
                (
                    background,
                    self.take_permit(&mut ledger, &caller, background),
                )
            })
        };
        let (background, permit) = match reserved {
            Ok(reserved) => reserved,
            Err(refusal) => return refusal_output(&refusal),
        };
        if background && let Some(refusal) = self.background_refusal(&caller.agent) {
            return refusal_output(&refusal);
        }
        let launch = Launch {
            budget: Budget::default(),
            agent,
            prompt: args.prompt,
            description: args.description,
            background,
            caller,
            fanout: true,
            session: SessionStart::Resume(session),
            acceptance: None,
            limit: OutputLimit::default(),
            permit,
        };
        self.start_and_report(launch, call).await
    }

    /// A run of an earlier session, to resume: its type (still defined), a description and
    /// whether it ran in the background. Only the root session may resume one; the error says
    /// plainly why a run cannot be resumed.
    fn earlier_run(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<(super::agents::AgentType, String, bool), Refusal> {
        let Some(status) = self.status_on_disk(id) else {
            return Err(format!(
                "no helper run with id {id:?} in this session or an earlier one (spawn_helper \
                 action list shows this session's runs)"
            )
            .into());
        };
        if !caller.is_root() {
            return Err(format!(
                "run {id} is from an earlier session; only the root session may resume it"
            )
            .into());
        }
        if let super::orphans::Follower::Alive(owner) = super::orphans::follower(&status)
            && super::orphans::unfinished(&status)
        {
            return Err(format!(
                "run {id} is still running in another unipi-tui session (pid {}); resume \
                 continues a run that has ended",
                owner.pid
            )
            .into());
        }
        let name = status["agent"].as_str().unwrap_or_default();
        let agent = self
            .settings()
            .catalog
            .iter()
            .find(|agent| agent.name == name && agent.enabled)
            .cloned()
            .ok_or_else(|| {
                format!("run {id} used the agent type {name:?}, which is not available any more")
            })?;
        Ok((agent, format!("run {id} of an earlier session"), false))
    }

    /// The session a run stored: the one its status names, else the newest in its session
    /// directory (a run whose workbench died never wrote its status's `sessionFile`).
    fn stored_session(&self, id: &str) -> Option<std::path::PathBuf> {
        let named = self
            .status_on_disk(id)
            .and_then(|status| status["sessionFile"].as_str().map(std::path::PathBuf::from))
            .filter(|file| file.is_file());
        named.or_else(|| {
            let dir = self
                .settings()
                .runs_root
                .join(id)
                .join(super::spec::SESSION_DIR);
            std::fs::read_dir(dir)
                .ok()?
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
                .filter_map(|path| Some((path.metadata().ok()?.modified().ok()?, path)))
                .max()
                .map(|(_, path)| path)
        })
    }
}

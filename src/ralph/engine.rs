//! The model-driven loop in the running workbench: one loop at a time, tied to the Pi that
//! started it. `ralph_start` (or `/unipi:ralph start`) writes the task and the state and queues
//! the first iteration; `ralph_done` queues the next (a reflection turn every N), or ends the
//! loop at its limit; an answer with `<promise>COMPLETE</promise>` ends it; Esc pauses it;
//! `/unipi:ralph resume` goes on where it was. Every change is written to the loop's state file
//! before anything is sent, so a workbench killed mid-loop finds it at the next start
//! ([`Engine::rehydrate`]) and offers to resume it.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use unipi_widgets::footer::{Align, Form, Role, Segment, priority};

use super::prompt;
use super::state::{self, Advance, COMPLETE_MARKER, LoopStatus, Options, TaskLoop};
use crate::bridge::{AgentId, DeliverAs, HostCall, Refusal};
use crate::capability::{BridgeLink, Changed, Ui};
use crate::sys::{lock, now_ms};
use crate::workflow::bus::{RalphLoopEnd, RalphLoopStart};

/// The footer segment's id and config group.
pub(crate) const SEGMENT_ID: &str = "ralph";

/// The loop running (or paused) in this workbench, and the Pi it runs in.
#[derive(Clone, Debug)]
pub(crate) struct Current {
    pub state: TaskLoop,
    pub agent: AgentId,
}

/// Where a new loop's task comes from.
pub(crate) enum Task {
    /// `ralph_start`'s `taskContent`: written to the loop's task file.
    Content(String),
    /// `/unipi:ralph start`: this file (relative to the workspace), a template when missing.
    File(PathBuf),
}

pub(crate) struct Engine {
    pub(crate) workspace: PathBuf,
    ui: Ui,
    changed: Changed,
    bridge: OnceLock<BridgeLink>,
    current: Mutex<Option<Current>>,
}

/// Runs file work off the async workers.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> Result<T, Refusal> {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(Refusal::new(format!("{err:#}"))),
        Err(err) => Err(Refusal::new(format!("the loop's file work failed: {err}"))),
    }
}

impl Engine {
    pub(crate) fn new(workspace: PathBuf, ui: Ui, changed: Changed) -> Engine {
        Engine {
            workspace,
            ui,
            changed,
            bridge: OnceLock::new(),
            current: Mutex::new(None),
        }
    }

    pub(crate) fn attach(&self, link: &BridgeLink) {
        // Attached once; a second attach would be the same bridge.
        let _ = self.bridge.set(link.clone());
    }

    pub(crate) fn current(&self) -> Option<Current> {
        lock(&self.current).clone()
    }

    /// The footer's `rl:<name> 2/50` (`⏸` when paused), from memory.
    pub(crate) fn segment(&self) -> Option<Segment> {
        let current = lock(&self.current);
        let state = &current.as_ref()?.state;
        let name = format!("rl:{}", state.name);
        let progress = state.progress();
        let paused = state.status != LoopStatus::Active;
        let mut long = Form::new(name, Role::Accent).then(format!(" {progress}"), Role::Muted);
        if paused {
            long = long.then(" ⏸", Role::Warning);
        }
        let short = Form::new(format!("rl {progress}"), Role::Accent);
        Some(
            Segment::new(SEGMENT_ID, priority::MODULE_HIGH - 4, Align::Right, long)
                .in_group(SEGMENT_ID)
                .detail(priority::MODULE_LOW + 10)
                .or(short),
        )
    }

    fn set_current(&self, current: Option<Current>) {
        *lock(&self.current) = current;
        self.changed.bump();
    }

    /// Starts loop `name` in `agent`'s Pi: writes its task and state, then queues its first
    /// iteration. Returns the state and whether a task template was written.
    pub(crate) async fn start(
        &self,
        agent: &AgentId,
        name: &str,
        task: Task,
        options: Options,
    ) -> Result<(TaskLoop, bool), Refusal> {
        if let Some(current) = self.current()
            && current.state.status == LoopStatus::Active
        {
            return Err(Refusal::new(format!(
                "Loop \"{}\" already active (iteration {}): finish it first, or /unipi:ralph \
                 stop",
                current.state.name,
                current.state.progress()
            )));
        }
        let (workspace, name) = (self.workspace.clone(), name.to_owned());
        let (state, text, templated) =
            blocking(move || begin(&workspace, &name, task, options, now_ms())).await?;
        self.set_current(Some(Current {
            state: state.clone(),
            agent: agent.clone(),
        }));
        if let Some(link) = self.bridge.get() {
            link.bus().publish(
                "ralph",
                &RalphLoopStart {
                    name: state.name.clone(),
                    iteration: state.iteration,
                    max_iterations: state.max_iterations,
                },
            );
        }
        self.send(agent, prompt::prompt(&state, &text, false))
            .await?;
        Ok((state, templated))
    }

    /// `ralph_done`: the next iteration queued, or the loop's end; what the model reads.
    pub(crate) async fn done(&self, agent: &AgentId) -> String {
        let Some(mut current) = self.current() else {
            return "No active Ralph loop.".to_owned();
        };
        if current.agent != *agent || current.state.status != LoopStatus::Active {
            return "No active Ralph loop.".to_owned();
        }
        let finished = current.state.iteration;
        let reflect = match current.state.advance(now_ms()) {
            Advance::Finished(reason) => {
                self.end(current.state, LoopStatus::Completed, reason.clone())
                    .await;
                return format!("Ralph loop completed: it {reason}. Stop here.");
            }
            Advance::Next { reflect } => reflect,
        };
        let (workspace, next) = (self.workspace.clone(), current.state.clone());
        let read = blocking(move || {
            state::save(&workspace, &next)?;
            state::read_task(&workspace, &next.task_file)
        })
        .await;
        let text = match read {
            Ok(text) => text,
            Err(refusal) => {
                self.pause(current.state, refusal.text().to_owned()).await;
                return format!("Error: {refusal}. The loop is paused.");
            }
        };
        let message = prompt::prompt(&current.state, &text, reflect);
        let next = current.state.progress();
        self.set_current(Some(current.clone()));
        if let Err(refusal) = self.send(agent, message).await {
            return format!("Error: the next iteration could not be queued: {refusal}");
        }
        format!("Iteration {finished} complete. Next iteration ({next}) queued.")
    }

    /// `/unipi:ralph resume <name>`: the loop goes on at the iteration it was at (an interrupted
    /// iteration was not done), in `agent`'s Pi; a loop paused beside it stays paused.
    pub(crate) async fn resume(&self, agent: &AgentId, name: &str) -> Result<TaskLoop, Refusal> {
        if let Some(current) = self.current()
            && current.state.status == LoopStatus::Active
            && current.state.name != name
        {
            self.pause(current.state, format!("paused to resume {name}"))
                .await;
        }
        let (workspace, name) = (self.workspace.clone(), name.to_owned());
        let (state, text) = blocking(move || {
            let mut found = state::load(&workspace, &name)?.ok_or_else(|| {
                anyhow::anyhow!("no loop named \"{name}\" (see /unipi:ralph list)")
            })?;
            if !found.status.resumable() {
                anyhow::bail!(
                    "loop \"{name}\" is {} — /unipi:ralph start {name} starts it again",
                    status_word(found.status)
                );
            }
            found.set_status(LoopStatus::Active, None, now_ms());
            state::save(&workspace, &found)?;
            let text = state::read_task(&workspace, &found.task_file)?;
            Ok((found, text))
        })
        .await?;
        self.set_current(Some(Current {
            state: state.clone(),
            agent: agent.clone(),
        }));
        let reflect = state.reflects_now();
        self.send(agent, prompt::prompt(&state, &text, reflect))
            .await?;
        Ok(state)
    }

    /// `/unipi:ralph stop`: the loop in this workbench ends (an iteration under way finishes,
    /// and its `ralph_done` finds no loop).
    pub(crate) async fn stop(&self) -> Option<TaskLoop> {
        let current = self.current()?;
        let state = current.state.clone();
        self.end(
            current.state,
            LoopStatus::Stopped,
            "stopped by the user".to_owned(),
        )
        .await;
        Some(state)
    }

    /// Forgets the loop in this workbench if it is `name` (its files were removed).
    pub(crate) fn forget(&self, name: Option<&str>) {
        let mut current = lock(&self.current);
        if current
            .as_ref()
            .is_some_and(|c| name.is_none_or(|name| c.state.name == name))
        {
            *current = None;
            drop(current);
            self.changed.bump();
        }
    }

    /// An assistant message of `agent` ended: the completion marker ends its loop.
    pub(crate) async fn on_message(&self, agent: &AgentId, text: &str) {
        if !text.contains(COMPLETE_MARKER) {
            return;
        }
        let Some(current) = self.current() else {
            return;
        };
        if current.agent == *agent && current.state.status == LoopStatus::Active {
            let reason = format!("the model answered {COMPLETE_MARKER}");
            self.end(current.state, LoopStatus::Completed, reason).await;
        }
    }

    /// `agent`'s Pi settled; Esc (an aborted run) pauses its loop.
    pub(crate) async fn on_settled(&self, agent: &AgentId, aborted: bool) {
        let Some(current) = self.current() else {
            return;
        };
        if aborted && current.agent == *agent && current.state.status == LoopStatus::Active {
            let name = current.state.name.clone();
            self.pause(current.state, "paused by the user (Esc)".to_owned())
                .await;
            self.ui.notice(format!(
                "Ralph loop {name} paused — /unipi:ralph resume {name} continues it"
            ));
        }
    }

    /// At start: the loop that was running when the workbench last ended (the newest active
    /// state) becomes this workbench's, paused, and the user is told how to resume it.
    pub(crate) async fn rehydrate(&self) {
        let workspace = self.workspace.clone();
        let found = blocking(move || {
            let Some(newest) = state::list(&workspace, state::RALPH_DIR)
                .into_iter()
                .find(|s| s.status == LoopStatus::Active && s.plan.is_none())
            else {
                return Ok(None);
            };
            let Some(mut found) = state::load(&workspace, &newest.name)? else {
                return Ok(None);
            };
            let reason = format!("the workbench ended during iteration {}", found.progress());
            found.set_status(LoopStatus::Paused, Some(reason), now_ms());
            state::save(&workspace, &found)?;
            Ok(Some(found))
        })
        .await;
        match found {
            Ok(Some(state)) => {
                let notice = format!(
                    "Ralph loop {name} was running when the workbench ended (iteration {}) — \
                     /unipi:ralph resume {name} continues it",
                    state.progress(),
                    name = state.name
                );
                tracing::info!("ralph: {notice}");
                self.set_current(Some(Current {
                    state,
                    agent: AgentId::main(),
                }));
                self.ui.notice(notice);
            }
            Ok(None) => {}
            Err(refusal) => tracing::warn!("ralph: looking for a loop to resume: {refusal}"),
        }
    }

    async fn pause(&self, mut state: TaskLoop, reason: String) {
        state.set_status(LoopStatus::Paused, Some(reason), now_ms());
        self.save(&state).await;
        self.set_current(Some(Current {
            state,
            agent: self.current().map_or_else(AgentId::main, |c| c.agent),
        }));
    }

    /// The loop is over: saved, off the footer, said on the bus and on screen.
    async fn end(&self, mut state: TaskLoop, status: LoopStatus, reason: String) {
        state.set_status(status, Some(reason.clone()), now_ms());
        self.save(&state).await;
        self.forget(Some(state.name.as_str()));
        if let Some(link) = self.bridge.get() {
            link.bus().publish(
                "ralph",
                &RalphLoopEnd {
                    name: state.name.clone(),
                    iteration: state.iteration,
                    max_iterations: state.max_iterations,
                    status,
                    reason: Some(reason.clone()),
                },
            );
        }
        tracing::info!(
            "ralph: loop {} ended at iteration {}: {reason}",
            state.name,
            state.iteration
        );
        self.ui.notice(format!(
            "Ralph loop {} {}: {reason}",
            state.name,
            status_word(status)
        ));
    }

    async fn save(&self, state: &TaskLoop) {
        let (workspace, state) = (self.workspace.clone(), state.clone());
        if let Err(refusal) = blocking(move || state::save(&workspace, &state)).await {
            tracing::warn!("ralph: {refusal}");
            self.ui.notice(format!("Ralph: {refusal}"));
        }
    }

    /// Queues `message` as the user's next message in `agent`'s Pi.
    async fn send(&self, agent: &AgentId, message: String) -> Result<(), Refusal> {
        let link = self
            .bridge
            .get()
            .ok_or_else(|| Refusal::new("the workbench's bridge is not running"))?;
        let send = HostCall::SendUserMessage {
            content: message,
            deliver_as: Some(DeliverAs::FollowUp),
        };
        link.host
            .call(agent, send)
            .await
            .map(drop)
            .map_err(|err| Refusal::new(format!("the iteration could not be sent: {err}")))
    }
}

/// `active`, `paused`, `completed`, `stopped`.
pub(crate) fn status_word(status: LoopStatus) -> &'static str {
    match status {
        LoopStatus::Active => "active",
        LoopStatus::Paused => "paused",
        LoopStatus::Completed => "completed",
        LoopStatus::Stopped => "stopped",
    }
}

/// A new loop's files: its task (written, or a template where the named file is missing) and
/// its state at iteration 1. Refused when a loop of that name is active or paused.
fn begin(
    workspace: &Path,
    name: &str,
    task: Task,
    options: Options,
    now: u64,
) -> anyhow::Result<(TaskLoop, String, bool)> {
    if name.is_empty() {
        anyhow::bail!("a loop needs a name of letters, digits, `_` or `-`");
    }
    if let Some(old) = state::load(workspace, name)?
        && old.status.resumable()
    {
        anyhow::bail!(
            "loop \"{name}\" is {} at iteration {}: /unipi:ralph resume {name} continues it, or \
             pick another name",
            status_word(old.status),
            old.progress()
        );
    }
    let (task_file, text, templated) = match task {
        Task::Content(text) => {
            let file = state::default_task_file(name);
            state::write_inside(workspace, &file, text.as_bytes())?;
            (file, text, false)
        }
        Task::File(file) => match state::read_task(workspace, &file) {
            Ok(text) => (file, text, false),
            Err(_) if !workspace.join(&file).exists() => {
                state::write_inside(workspace, &file, state::TASK_TEMPLATE.as_bytes())?;
                (file, state::TASK_TEMPLATE.to_owned(), true)
            }
            Err(err) => return Err(err),
        },
    };
    let state = TaskLoop::new(name, task_file, options, now);
    state::save(workspace, &state)?;
    Ok((state, text, templated))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::keymap::Keymap;
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use std::sync::Arc;
    use unipi_widgets::theme::Theme;

    fn row(segments: &[Segment], width: u16) -> String {
        let area = Rect::new(0, 0, width, 1);
        let mut buf = Buffer::empty(area);
        unipi_widgets::footer::render_segments(segments, &Theme::plain(), area, &mut buf);
        (0..width)
            .map(|x| buf[(x, 0)].symbol().to_owned())
            .collect::<String>()
    }

    #[test]
    fn the_footer_shows_the_loop_its_iteration_and_a_pause() {
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let ui = Ui::headless(Arc::new(Keymap::defaults()));
        let engine = Engine::new(dir.path().to_path_buf(), ui, Changed::default());
        assert!(engine.segment().is_none());
        let options = Options {
            max_iterations: 50,
            ..Options::default()
        };
        let mut state = TaskLoop::new("refactor", state::default_task_file("refactor"), options, 0);
        state.iteration = 3;
        engine.set_current(Some(Current {
            state: state.clone(),
            agent: AgentId::main(),
        }));
        let active: Vec<Segment> = engine.segment().into_iter().collect();
        state.set_status(LoopStatus::Paused, None, 1);
        engine.set_current(Some(Current {
            state,
            agent: AgentId::main(),
        }));
        let paused: Vec<Segment> = engine.segment().into_iter().collect();
        let text: Vec<String> = [40, 12]
            .into_iter()
            .flat_map(|width| [row(&active, width), row(&paused, width)])
            .collect();
        crate::assert_ui_snapshot!("ralph_footer_segment", text.join("\n"));
        engine.forget(Some("other"));
        assert!(
            engine.segment().is_some(),
            "another loop's name forgets nothing"
        );
        engine.forget(Some("refactor"));
        assert!(engine.segment().is_none());
    }
}

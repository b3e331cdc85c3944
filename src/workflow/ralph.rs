//! The autonomous loop (the original's "ralph"), off unless started: `/unipi:ralph-start
//! plan:<file>` hands the model the plan's next open tasks, and every time Pi settles after a
//! turn the plan is read again — every task completed or skipped ends the loop, otherwise the
//! next iteration is sent, up to a limit. Esc (an aborted turn) pauses it; `/unipi:ralph-stop`
//! ends it; `/unipi:ralph-start` on the same plan resumes a paused one. Only the settle after Pi
//! took the iteration's message counts ([`Running`]). Its state is a JSON file
//! per loop under `.unipi/ralph/`, written crash-safe, so a restarted workbench can resume.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::docs::{self, Doc, DocType, ItemStatus, Marker};
use super::run::Delivery;
use crate::bridge::{AgentId, PiEvent, Refusal};

/// Iterations a loop may run unless `--max-iterations` says otherwise.
pub(crate) const DEFAULT_MAX_ITERATIONS: u32 = 50;

/// Where loop states live, relative to the workspace.
pub(crate) const RALPH_DIR: &str = ".unipi/ralph";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoopStatus {
    Active,
    Paused,
    Completed,
    /// Ended by `/unipi:ralph-stop`.
    Stopped,
}

impl LoopStatus {
    /// Whether `/unipi:ralph-start` picks the loop up where it was (rather than anew).
    pub(crate) fn resumable(self) -> bool {
        matches!(self, LoopStatus::Active | LoopStatus::Paused)
    }
}

/// One loop, as persisted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Loop {
    pub name: String,
    /// The plan, relative to the workspace.
    pub plan: PathBuf,
    pub iteration: u32,
    pub max_iterations: u32,
    pub status: LoopStatus,
    pub started_at_ms: u64,
    pub updated_at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A loop as it runs in the workbench: its state, the Pi it runs in, and which of Pi's settles
/// ends its current iteration — the one after Pi took the iteration's message, so a loop started
/// (or continued) while Pi was busy counts from the first turn it started itself.
#[derive(Clone, Debug)]
pub struct Running {
    pub(crate) state: Loop,
    pub agent: AgentId,
    /// Tells this run of the loop from a later one (stopped and started again while a settled
    /// turn was being looked at).
    pub id: u64,
    delivery: Delivery,
}

impl Running {
    /// The loop at `state`, whose message is about to be sent to `agent`.
    pub(crate) fn new(state: Loop, agent: AgentId, id: u64) -> Self {
        let delivery = Delivery::new(heading(&state));
        Running {
            state,
            agent,
            id,
            delivery,
        }
    }

    /// Follows one of `agent`'s events; `Some(aborted)` when the loop's iteration settled. Esc
    /// before Pi took the iteration (its message waiting behind the user's turn) pauses the loop
    /// too: the user interrupted.
    pub fn on_event(&mut self, agent: &AgentId, event: &PiEvent) -> Option<bool> {
        if *agent != self.agent {
            return None;
        }
        match (self.delivery.on_event(event), event) {
            (Some(aborted), _) => Some(aborted),
            (None, PiEvent::AgentSettled { aborted: true, .. }) if !self.delivery.taken() => {
                Some(true)
            }
            _ => None,
        }
    }

    /// The next iteration, as `state` says, is about to be sent.
    pub(crate) fn next(&mut self, state: Loop) {
        self.delivery = Delivery::new(heading(&state));
        self.state = state;
    }
}

/// What happens after a turn of the loop settled.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// Send this message as the next iteration.
    Continue(String),
    /// The loop is over, for this reason.
    Complete(String),
    /// The user interrupted: wait for `/unipi:ralph-start` to resume.
    Pause,
}

/// The state file of loop `name`.
pub(crate) fn state_file(workspace: &Path, name: &str) -> PathBuf {
    workspace.join(RALPH_DIR).join(format!("{name}.state.json"))
}

/// Parses `/unipi:ralph-start`'s arguments: `plan:<file> [--max-iterations N]`.
pub fn parse_args(args: &str) -> Result<(String, u32), Refusal> {
    let mut plan = None;
    let mut max = DEFAULT_MAX_ITERATIONS;
    let mut words = args.split_whitespace();
    while let Some(word) = words.next() {
        if word == "--max-iterations" {
            let value = words.next().unwrap_or_default();
            max = value.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                format!("--max-iterations needs a positive number, not {value:?}")
            })?;
        } else if let Some(file) = word.strip_prefix("plan:") {
            plan = Some(file.to_owned());
        } else {
            return Err(format!(
                "unexpected {word:?}: use /unipi:ralph-start plan:<file> [--max-iterations N]"
            )
            .into());
        }
    }
    let plan = plan.ok_or("name the plan: /unipi:ralph-start plan:<file>")?;
    if plan.is_empty() || plan.contains("..") || plan.contains('/') {
        return Err(format!("{plan:?} is not a plan file name").into());
    }
    Ok((plan, max))
}

/// Reads the plan at `relative` (to the workspace).
pub(crate) fn read_plan(workspace: &Path, relative: &Path) -> Result<Doc, Refusal> {
    let bytes = std::fs::read(workspace.join(relative))
        .map_err(|err| format!("cannot read {}: {err}", relative.display()))?;
    let inside = relative.strip_prefix(docs::DOCS_DIR).unwrap_or(relative);
    Ok(docs::parse(DocType::Plan, inside, &bytes))
}

/// The tasks still to do: not completed, skipped or reviewed.
fn open_tasks(plan: &Doc) -> Vec<&docs::Item> {
    plan.items
        .iter()
        .filter(|item| matches!(item.marker, Marker::Keyword(_) | Marker::Header))
        .filter(|item| !item.status.is_finished())
        .collect()
}

/// The message of the loop's current iteration.
pub(crate) fn prompt(state: &Loop, plan: &Doc) -> String {
    let open: Vec<String> = open_tasks(plan)
        .iter()
        .map(|item| {
            let status = match item.marker {
                Marker::Keyword(status) => status.keyword(),
                _ => "unstarted",
            };
            format!("- {status}: {} (line {})", item.text, item.line)
        })
        .collect();
    format!(
        "{}\n\nContinue the plan {}. Take the first open task \
         below, do it completely, and set its status word in the plan (`in-progress` while you \
         work, then `completed`, or `failed`/`blocked` with a note). Do one task per iteration; \
         the loop sends the next iteration when you stop. /unipi:ralph-stop ends the loop.\n\n\
         Open tasks:\n{}",
        heading(state),
        state.plan.display(),
        open.join("\n")
    )
}

/// How the message of the loop's current iteration begins (recognised in Pi's input event).
fn heading(state: &Loop) -> String {
    format!(
        "RALPH LOOP {} — iteration {}/{}",
        state.name, state.iteration, state.max_iterations
    )
}

/// What follows a settled turn, given the plan as it is now; advances `state`.
pub(crate) fn after_turn(state: &mut Loop, plan: &Doc, aborted: bool, now_ms: u64) -> Next {
    state.updated_at_ms = now_ms;
    if aborted {
        state.status = LoopStatus::Paused;
        return Next::Pause;
    }
    let finished = plan
        .items
        .iter()
        .filter(|item| item.status.is_finished())
        .count();
    if !plan.items.is_empty() && open_tasks(plan).is_empty() {
        state.status = LoopStatus::Completed;
        let reason = format!("every task is done ({finished}/{})", plan.items.len());
        state.reason = Some(reason.clone());
        return Next::Complete(reason);
    }
    if state.iteration >= state.max_iterations {
        state.status = LoopStatus::Completed;
        let reason = format!("stopped after {} iterations", state.iteration);
        state.reason = Some(reason.clone());
        return Next::Complete(reason);
    }
    state.iteration += 1;
    Next::Continue(prompt(state, plan))
}

/// Reads loop `name`'s state, if there is one.
pub(crate) fn load(workspace: &Path, name: &str) -> Option<Loop> {
    let text = std::fs::read_to_string(state_file(workspace, name)).ok()?;
    serde_json::from_str(&text)
        .map_err(|err| tracing::warn!("ralph state {name}: {err}"))
        .ok()
}

/// Writes the state crash-safe, inside the project only (a `.unipi/ralph` or a state file that
/// links out of it is refused, see [`crate::sys::confine`]).
pub(crate) fn save(workspace: &Path, state: &Loop) -> anyhow::Result<()> {
    use crate::sys::confine;
    use anyhow::Context as _;
    let path = state_file(workspace, &state.name);
    confine::create_dir_all(workspace, Path::new(RALPH_DIR))
        .with_context(|| format!("cannot create {RALPH_DIR}"))?;
    let json = serde_json::to_vec_pretty(state)?;
    confine::file_to_write(workspace, &path)
        .and_then(|real| crate::sys::write_atomic(&real, &json))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// The loop of this project that changed last (running, paused or over), from its state files.
pub(crate) fn last_loop(workspace: &Path) -> Option<Loop> {
    let files = crate::sys::files_with_extension(&workspace.join(RALPH_DIR), "json").ok()?;
    files
        .iter()
        .filter_map(|file| {
            let name = file.file_name()?.to_str()?.strip_suffix(".state.json")?;
            load(workspace, name)
        })
        .max_by_key(|state| state.updated_at_ms)
}

/// What `/unipi:ralph-status` says: the running loop, else the last one and how it ended (or
/// what resumes it), else how to start one.
pub(crate) fn status_text(running: Option<&Loop>, last: Option<&Loop>, now_ms: u64) -> String {
    if let Some(state) = running {
        return format!(
            "Ralph loop {} is running: iteration {}/{} on {} — /unipi:ralph-stop ends it",
            state.name,
            state.iteration,
            state.max_iterations,
            state.plan.display()
        );
    }
    let Some(state) = last else {
        return "No ralph loop has run in this project — /unipi:ralph-start plan:<file> starts one"
            .to_owned();
    };
    let at = format!(
        "iteration {}/{}, {}",
        state.iteration,
        state.max_iterations,
        ago(now_ms.saturating_sub(state.updated_at_ms))
    );
    let resume = format!(
        "/unipi:ralph-start plan:{} resumes it",
        state
            .plan
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
    let how = match state.status {
        LoopStatus::Completed => format!(
            "completed at {at}: {}",
            state.reason.as_deref().unwrap_or("finished")
        ),
        LoopStatus::Stopped => format!(
            "stopped at {at}: {}",
            state.reason.as_deref().unwrap_or("stopped by the user")
        ),
        LoopStatus::Paused => format!("paused at {at} — {resume}"),
        LoopStatus::Active => {
            format!("was running at {at} when its workbench ended — {resume}")
        }
    };
    format!(
        "No ralph loop is running. The last one, {} on {}, {how}",
        state.name,
        state.plan.display()
    )
}

/// `just now`, `5 min ago`, `3 h ago`, `2 days ago`.
fn ago(ms: u64) -> String {
    let minutes = ms / 60_000;
    match minutes {
        0 => "just now".to_owned(),
        1..60 => format!("{minutes} min ago"),
        60..2880 => format!("{} h ago", minutes / 60),
        _ => format!("{} days ago", minutes / 1440),
    }
}

/// Whether any item counts as in the Done column (for summaries).
pub fn progress(plan: &Doc) -> (usize, usize) {
    let done = plan
        .items
        .iter()
        .filter(|item| item.status == ItemStatus::Done || item.status == ItemStatus::Reviewed)
        .count();
    (done, plan.items.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Doc {
        docs::parse(DocType::Plan, Path::new("plans/p.md"), text.as_bytes())
    }

    fn state() -> Loop {
        Loop {
            name: "p".into(),
            plan: PathBuf::from(".unipi/docs/plans/p.md"),
            iteration: 1,
            max_iterations: 3,
            status: LoopStatus::Active,
            started_at_ms: 0,
            updated_at_ms: 0,
            reason: None,
        }
    }

    #[test]
    fn the_loop_continues_until_every_task_is_done_or_the_limit() {
        let mut state = state();
        let half = plan("- completed: Task 1 — A\n- unstarted: Task 2 — B\n");
        match after_turn(&mut state, &half, false, 5) {
            Next::Continue(message) => {
                assert!(message.contains("iteration 2/3"), "{message}");
                assert!(
                    message.contains("- unstarted: Task 2 — B (line 2)"),
                    "{message}"
                );
                assert!(!message.contains("Task 1"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(after_turn(&mut state, &half, true, 6), Next::Pause);
        assert_eq!(state.status, LoopStatus::Paused);
        state.status = LoopStatus::Active;
        let _ = after_turn(&mut state, &half, false, 7);
        assert_eq!(state.iteration, 3);
        assert!(
            matches!(after_turn(&mut state, &half, false, 8), Next::Complete(r) if r.contains("3 iterations"))
        );
        let mut state = self::state();
        let done = plan("- completed: Task 1 — A\n- skipped: Task 2 — B\n");
        assert!(
            matches!(after_turn(&mut state, &done, false, 9), Next::Complete(r) if r.contains("2/2"))
        );
    }

    fn input(text: &str, queued: bool) -> PiEvent {
        PiEvent::UserInput(crate::bridge::UserInput {
            text: text.to_owned(),
            source: Some("extension".to_owned()),
            streaming_behavior: queued.then(|| "followUp".to_owned()),
            truncated: false,
        })
    }

    fn settled(aborted: bool) -> PiEvent {
        PiEvent::AgentSettled {
            aborted,
            synthetic: false,
        }
    }

    #[test]
    fn a_loop_started_while_pi_is_busy_counts_from_its_own_first_turn() {
        let main = AgentId::main();
        let mut run = Running::new(state(), main.clone(), 1);
        // The run that was going when the loop started settles before Pi took the loop's
        // message: that is not the loop's first iteration.
        assert_eq!(run.on_event(&main, &settled(false)), None);
        assert_eq!(run.on_event(&main, &input("something else", false)), None);
        assert_eq!(run.on_event(&main, &settled(false)), None);
        // Another Pi's events are not the loop's.
        let helper = AgentId::new("helper-1");
        assert_eq!(run.on_event(&helper, &input(&prompt_of(1), false)), None);
        assert_eq!(run.on_event(&helper, &settled(false)), None);
        // Pi takes the first iteration's message; the settle after it ends the iteration.
        assert_eq!(run.on_event(&main, &input(&prompt_of(1), false)), None);
        assert_eq!(run.on_event(&main, &settled(false)), Some(false));

        // The second iteration is queued behind a turn (Pi 1.x says `followUp`): a settle
        // before Pi's queue empties is that turn's, not the iteration's.
        let mut second = state();
        second.iteration = 2;
        run.next(second);
        assert_eq!(run.on_event(&main, &settled(false)), None);
        assert_eq!(run.on_event(&main, &input(&prompt_of(1), false)), None);
        assert_eq!(run.on_event(&main, &input(&prompt_of(2), true)), None);
        assert_eq!(run.on_event(&main, &settled(false)), None);
        assert_eq!(
            run.on_event(&main, &PiEvent::QueueUpdate { pending: false }),
            None
        );
        assert_eq!(run.on_event(&main, &settled(true)), Some(true));

        // Esc before the loop's message ran still pauses the loop.
        let mut fresh = Running::new(state(), main.clone(), 2);
        assert_eq!(fresh.on_event(&main, &settled(true)), Some(true));
    }

    /// The beginning of iteration `n`'s message, as [`prompt`] writes it.
    fn prompt_of(n: u32) -> String {
        let mut state = state();
        state.iteration = n;
        prompt(&state, &plan("- unstarted: Task 1 — A\n"))
    }

    #[test]
    fn arguments_and_state_round_trip() {
        assert_eq!(
            parse_args("plan:p.md --max-iterations 7"),
            Ok(("p.md".to_owned(), 7))
        );
        assert!(parse_args("").is_err());
        assert!(parse_args("plan:../x.md").is_err());
        assert!(parse_args("plan:p.md --max-iterations 0").is_err());
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        save(dir.path(), &state()).unwrap_or_else(|err| panic!("{err:#}"));
        assert_eq!(load(dir.path(), "p"), Some(state()));
    }

    #[test]
    fn the_state_is_not_written_through_a_link_out_of_the_project() {
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let (project, outside) = (dir.path().join("project"), dir.path().join("outside"));
        for folder in [project.join(".unipi"), outside.clone()] {
            std::fs::create_dir_all(folder).unwrap_or_else(|err| panic!("{err}"));
        }
        std::os::unix::fs::symlink(&outside, project.join(RALPH_DIR))
            .unwrap_or_else(|err| panic!("{err}"));
        let err = save(&project, &state()).map_err(|err| format!("{err:#}"));
        assert!(
            err.as_ref().is_err_and(|err| err
                .starts_with("cannot create .unipi/ralph: it leads to")
                && err.contains("outside the project")),
            "{err:?}"
        );
        assert_eq!(
            std::fs::read_dir(&outside).map(Iterator::count).ok(),
            Some(0)
        );
        // A state file that links out, in a real folder of the project.
        std::fs::remove_file(project.join(RALPH_DIR)).unwrap_or_else(|err| panic!("{err}"));
        std::fs::create_dir_all(project.join(RALPH_DIR)).unwrap_or_else(|err| panic!("{err}"));
        std::fs::write(outside.join("x"), "theirs").unwrap_or_else(|err| panic!("{err}"));
        std::os::unix::fs::symlink(outside.join("x"), state_file(&project, "p"))
            .unwrap_or_else(|err| panic!("{err}"));
        let err = save(&project, &state()).map_err(|err| format!("{err:#}"));
        assert!(err.is_err_and(|err| err.contains("outside the project")));
        assert_eq!(
            std::fs::read_to_string(outside.join("x")).unwrap_or_default(),
            "theirs"
        );
    }

    #[test]
    fn the_status_names_the_running_loop_else_the_last_and_how_it_ended() {
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let project = dir.path();
        assert_eq!(last_loop(project), None);
        assert_eq!(
            status_text(None, None, 0),
            "No ralph loop has run in this project — /unipi:ralph-start plan:<file> starts one"
        );
        let minute = 60_000;
        let mut done = state();
        done.iteration = 2;
        done.status = LoopStatus::Completed;
        done.reason = Some("every task is done (2/2)".to_owned());
        done.updated_at_ms = 10 * minute;
        let mut older = state();
        older.name = "older".to_owned();
        older.status = LoopStatus::Stopped;
        older.updated_at_ms = 5 * minute;
        for state in [&done, &older] {
            save(project, state).unwrap_or_else(|err| panic!("{err:#}"));
        }
        // Not a loop's state: left alone.
        std::fs::write(project.join(RALPH_DIR).join("notes.json"), "{}").unwrap_or_default();
        let last = last_loop(project);
        assert_eq!(last.as_ref(), Some(&done));
        assert_eq!(
            status_text(None, last.as_ref(), 13 * minute),
            "No ralph loop is running. The last one, p on .unipi/docs/plans/p.md, completed at \
             iteration 2/3, 3 min ago: every task is done (2/2)"
        );
        let mut paused = done.clone();
        paused.status = LoopStatus::Paused;
        paused.reason = None;
        assert_eq!(
            status_text(None, Some(&paused), 10 * minute),
            "No ralph loop is running. The last one, p on .unipi/docs/plans/p.md, paused at \
             iteration 2/3, just now — /unipi:ralph-start plan:p.md resumes it"
        );
        assert_eq!(
            status_text(Some(&state()), last.as_ref(), 0),
            "Ralph loop p is running: iteration 1/3 on .unipi/docs/plans/p.md — \
             /unipi:ralph-stop ends it"
        );
    }
}

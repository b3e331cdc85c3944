//! A model-driven loop's state and its files: `.unipi/ralph/<name>.state.json` (Unipi's fields,
//! so a project coming from Unipi keeps its loops, plus when it last changed and why it ended)
//! beside its task file `<name>.md`, written crash-safe inside the project; the state machine
//! (an iteration done, the limit, the reflection turns) as pure functions over it; and the
//! listing and removal `/unipi:ralph list|cancel|archive|clean|nuke` work on.
//!
//! The plan loops of `/unipi:ralph-start plan:<file>` keep their own state files in the same
//! folder (`crate::workflow::ralph`); they are listed here ([`Summary`]) but not driven.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::sys::confine;
pub(crate) use crate::workflow::ralph::LoopStatus;

/// Where loops live, relative to the workspace (the plan loops' folder too).
pub(crate) const RALPH_DIR: &str = crate::workflow::ralph::RALPH_DIR;
/// Where `/unipi:ralph archive` moves a loop's files.
pub(crate) const ARCHIVE_DIR: &str = ".unipi/ralph/archive";
/// Unipi's defaults: 50 iterations, no item count, no reflection.
pub(crate) const DEFAULT_MAX_ITERATIONS: u32 = 50;

/// What the model answers when the whole task is done.
pub(crate) const COMPLETE_MARKER: &str = "<promise>COMPLETE</promise>";

/// The template a `/unipi:ralph start` with no task file writes (Unipi's).
pub(crate) const TASK_TEMPLATE: &str = "# Task\n\nDescribe your task here.\n\n## Goals\n- Goal 1\n\n\
     ## Checklist\n- [ ] Item 1\n\n## Notes\n(Update this as you work)\n";

/// How a loop runs, as `ralph_start` or `/unipi:ralph start` set it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Options {
    /// 0: no limit.
    pub max_iterations: u32,
    /// 0: as many as the model takes on.
    pub items_per_iteration: u32,
    /// 0: never.
    pub reflect_every: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_iterations: DEFAULT_MAX_ITERATIONS,
            items_per_iteration: 0,
            reflect_every: 0,
        }
    }
}

/// One loop, as persisted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskLoop {
    pub name: String,
    /// The task file, relative to the workspace.
    pub task_file: PathBuf,
    pub iteration: u32,
    pub max_iterations: u32,
    #[serde(default)]
    pub items_per_iteration: u32,
    #[serde(default)]
    pub reflect_every: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reflect_instructions: Option<String>,
    /// Unipi's flag, kept equal to `status == active`.
    #[serde(default)]
    pub active: bool,
    pub status: LoopStatus,
    /// ISO 8601, UTC.
    #[serde(default)]
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    /// The iteration of the last reflection turn (0: none yet).
    #[serde(default)]
    pub last_reflection_at: u32,
    /// When it last changed (milliseconds since the epoch; 0 in Unipi's files).
    #[serde(default)]
    pub updated_at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What `ralph_done` leads to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Advance {
    /// Send the next iteration (`reflect`: as a reflection turn).
    Next { reflect: bool },
    /// The limit is reached: the loop is over, for this reason.
    Finished(String),
}

impl TaskLoop {
    /// A new loop at its first iteration.
    pub(crate) fn new(name: &str, task_file: PathBuf, options: Options, now_ms: u64) -> TaskLoop {
        TaskLoop {
            name: name.to_owned(),
            task_file,
            iteration: 1,
            max_iterations: options.max_iterations,
            items_per_iteration: options.items_per_iteration,
            reflect_every: options.reflect_every,
            reflect_instructions: None,
            active: true,
            status: LoopStatus::Active,
            started_at: crate::sys::time::iso_utc(now_ms),
            completed_at: None,
            last_reflection_at: 0,
            updated_at_ms: now_ms,
            reason: None,
        }
    }

    pub(crate) fn set_status(&mut self, status: LoopStatus, reason: Option<String>, now_ms: u64) {
        self.status = status;
        self.active = status == LoopStatus::Active;
        self.reason = reason;
        self.updated_at_ms = now_ms;
        if matches!(status, LoopStatus::Completed | LoopStatus::Stopped) {
            self.completed_at = Some(crate::sys::time::iso_utc(now_ms));
        }
    }

    /// The model finished an iteration (`ralph_done`): the next one, or the end at the limit.
    pub(crate) fn advance(&mut self, now_ms: u64) -> Advance {
        if self.max_iterations > 0 && self.iteration >= self.max_iterations {
            let reason = format!("reached its limit of {} iterations", self.max_iterations);
            self.set_status(LoopStatus::Completed, Some(reason.clone()), now_ms);
            return Advance::Finished(reason);
        }
        self.iteration += 1;
        self.updated_at_ms = now_ms;
        let reflect = self.reflects_now();
        if reflect {
            self.last_reflection_at = self.iteration;
        }
        Advance::Next { reflect }
    }

    /// Whether the current iteration is a reflection turn: every `reflect_every` iterations
    /// after the first (Unipi's `(iteration - 1) % reflectEvery == 0`).
    pub(crate) fn reflects_now(&self) -> bool {
        self.reflect_every > 0
            && self.iteration > 1
            && (self.iteration - 1) % self.reflect_every == 0
    }

    /// `i/max`, or `i` with no limit.
    pub(crate) fn progress(&self) -> String {
        if self.max_iterations > 0 {
            format!("{}/{}", self.iteration, self.max_iterations)
        } else {
            self.iteration.to_string()
        }
    }
}

/// Unipi's `sanitize`: anything but letters, digits, `_` and `-` becomes `_`, runs collapsed.
pub(crate) fn sanitize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            c
        } else {
            '_'
        };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    out
}

/// The state file of loop `name` (relative to the workspace, or under `dir`).
pub(crate) fn state_file(dir: &str, name: &str) -> PathBuf {
    Path::new(dir).join(format!("{name}.state.json"))
}

/// The task file a loop called `name` gets when none is named.
pub(crate) fn default_task_file(name: &str) -> PathBuf {
    Path::new(RALPH_DIR).join(format!("{name}.md"))
}

/// Reads loop `name`'s state; `Ok(None)` when it has none, an error naming the file when it
/// cannot be read or is not a model-driven loop's.
pub(crate) fn load(workspace: &Path, name: &str) -> anyhow::Result<Option<TaskLoop>> {
    let relative = state_file(RALPH_DIR, name);
    let text = match std::fs::read_to_string(workspace.join(&relative)) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", relative.display())),
    };
    parse(&text)
        .map(Some)
        .with_context(|| format!("{} is not a ralph loop's state", relative.display()))
}

/// A state file's text; Unipi's files without `status` get it from `active`.
fn parse(text: &str) -> anyhow::Result<TaskLoop> {
    let mut value: Value = serde_json::from_str(text)?;
    if value.get("plan").is_some() {
        anyhow::bail!("it is a plan loop's (/unipi:ralph-start plan:<file>)");
    }
    if let Some(object) = value.as_object_mut()
        && !object.contains_key("status")
    {
        let active = object.get("active").and_then(Value::as_bool) == Some(true);
        object.insert(
            "status".to_owned(),
            Value::from(if active { "active" } else { "paused" }),
        );
    }
    Ok(serde_json::from_value(value)?)
}

/// Writes the state crash-safe, inside the project only.
pub(crate) fn save(workspace: &Path, state: &TaskLoop) -> anyhow::Result<()> {
    let json = serde_json::to_vec_pretty(state)?;
    write_inside(workspace, &state_file(RALPH_DIR, &state.name), &json)
}

/// Writes `relative` (to the workspace) crash-safe, creating its folder; refused when the file
/// or a folder on the way leads out of the project.
pub(crate) fn write_inside(workspace: &Path, relative: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(parent) = relative.parent().filter(|p| !p.as_os_str().is_empty()) {
        confine::create_dir_all(workspace, parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    confine::file_to_write(workspace, &workspace.join(relative))
        .and_then(|real| crate::sys::write_atomic(&real, bytes))
        .with_context(|| format!("cannot write {}", relative.display()))
}

/// Reads a loop's task file, inside the project only.
pub(crate) fn read_task(workspace: &Path, task_file: &Path) -> anyhow::Result<String> {
    confine::existing_file(workspace, &workspace.join(task_file))
        .and_then(std::fs::read_to_string)
        .with_context(|| format!("cannot read the task file {}", task_file.display()))
}

/// One loop of the folder as listed: model-driven or a plan's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Summary {
    pub name: String,
    pub status: LoopStatus,
    pub iteration: u64,
    pub max_iterations: u64,
    /// The plan of a plan loop.
    pub plan: Option<String>,
    pub updated_at_ms: u64,
}

impl Summary {
    fn of(name: &str, text: &str) -> Option<Summary> {
        let value: Value = serde_json::from_str(text).ok()?;
        let number = |key: &str| value.get(key).and_then(Value::as_u64).unwrap_or_default();
        let status = match value.get("status") {
            Some(status) => serde_json::from_value(status.clone()).ok()?,
            None if value.get("active").and_then(Value::as_bool) == Some(true) => {
                LoopStatus::Active
            }
            None => LoopStatus::Paused,
        };
        Some(Summary {
            name: name.to_owned(),
            status,
            iteration: number("iteration"),
            max_iterations: number("maxIterations"),
            plan: value.get("plan").and_then(Value::as_str).map(str::to_owned),
            updated_at_ms: number("updatedAtMs").max(number("startedAtMs")),
        })
    }

    /// `name: ▶ active (iteration 2/50)`, Unipi's line, with the plan of a plan loop.
    pub(crate) fn line(&self) -> String {
        let icon = match self.status {
            LoopStatus::Active => "▶",
            LoopStatus::Paused => "⏸",
            LoopStatus::Completed | LoopStatus::Stopped => "✓",
        };
        let status = serde_json::to_value(self.status)
            .ok()
            .and_then(|value| value.as_str().map(str::to_owned))
            .unwrap_or_default();
        let of = match self.max_iterations {
            0 => self.iteration.to_string(),
            max => format!("{}/{max}", self.iteration),
        };
        let plan = self
            .plan
            .as_deref()
            .map(|plan| format!(" — plan {plan}"))
            .unwrap_or_default();
        format!("{}: {icon} {status} (iteration {of}){plan}", self.name)
    }
}

/// The loops in `dir` (relative to the workspace), newest change first; files that are not a
/// loop's state are skipped (logged).
pub(crate) fn list(workspace: &Path, dir: &str) -> Vec<Summary> {
    let files = crate::sys::files_with_extension(&workspace.join(dir), "json").unwrap_or_default();
    let mut loops: Vec<Summary> = files
        .iter()
        .filter_map(|file| {
            let name = file.file_name()?.to_str()?.strip_suffix(".state.json")?;
            let text = std::fs::read_to_string(file).ok()?;
            let summary = Summary::of(name, &text);
            if summary.is_none() {
                tracing::warn!("ralph: {} is not a loop's state", file.display());
            }
            summary
        })
        .collect();
    loops.sort_by(|a, b| {
        b.updated_at_ms
            .cmp(&a.updated_at_ms)
            .then_with(|| a.name.cmp(&b.name))
    });
    loops
}

/// Removes a file of the folder; a missing one is not an error. (`remove_file` removes a link,
/// never what it points at.)
pub(crate) fn remove(workspace: &Path, relative: &Path) -> anyhow::Result<bool> {
    match std::fs::remove_file(workspace.join(relative)) {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(err).with_context(|| format!("cannot delete {}", relative.display())),
    }
}

/// Moves loop `name`'s state, and its task file when it lives in the loops' folder, into the
/// archive; returns what was moved.
pub(crate) fn archive(workspace: &Path, state: &TaskLoop) -> anyhow::Result<Vec<PathBuf>> {
    confine::create_dir_all(workspace, Path::new(ARCHIVE_DIR))
        .with_context(|| format!("cannot create {ARCHIVE_DIR}"))?;
    let mut moves = vec![(
        state_file(RALPH_DIR, &state.name),
        state_file(ARCHIVE_DIR, &state.name),
    )];
    if state.task_file.parent() == Some(Path::new(RALPH_DIR))
        && let Some(file) = state.task_file.file_name()
    {
        moves.push((state.task_file.clone(), Path::new(ARCHIVE_DIR).join(file)));
    }
    let mut moved = Vec::new();
    for (from, to) in moves {
        if !workspace.join(&from).exists() {
            continue;
        }
        std::fs::rename(workspace.join(&from), workspace.join(&to))
            .with_context(|| format!("cannot move {} to {}", from.display(), to.display()))?;
        moved.push(to);
    }
    Ok(moved)
}

/// Deletes the whole loops' folder (a link in its place is removed, not followed).
pub(crate) fn nuke(workspace: &Path) -> anyhow::Result<bool> {
    let dir = workspace.join(RALPH_DIR);
    let meta = match std::fs::symlink_metadata(&dir) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err).with_context(|| format!("cannot read {RALPH_DIR}")),
    };
    let removed = if meta.is_dir() {
        std::fs::remove_dir_all(&dir)
    } else {
        std::fs::remove_file(&dir)
    };
    removed.with_context(|| format!("cannot delete {RALPH_DIR}"))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(max: u32, reflect: u32) -> Options {
        Options {
            max_iterations: max,
            items_per_iteration: 0,
            reflect_every: reflect,
        }
    }

    #[test]
    fn iterations_advance_to_the_limit_with_a_reflection_every_n() {
        let mut state = TaskLoop::new("l", default_task_file("l"), options(4, 2), 1_000);
        assert_eq!((state.iteration, state.progress()), (1, "1/4".to_owned()));
        assert!(!state.reflects_now());
        // 2 = 1 + 2·0: not yet; 3 = 1 + 2·1: a reflection turn; 4: not.
        assert_eq!(state.advance(2_000), Advance::Next { reflect: false });
        assert_eq!(state.advance(3_000), Advance::Next { reflect: true });
        assert_eq!(state.last_reflection_at, 3);
        assert_eq!(state.advance(4_000), Advance::Next { reflect: false });
        assert_eq!((state.iteration, state.updated_at_ms), (4, 4_000));
        assert_eq!(
            state.advance(5_000),
            Advance::Finished("reached its limit of 4 iterations".to_owned())
        );
        assert_eq!(
            (state.status, state.active, state.iteration),
            (LoopStatus::Completed, false, 4)
        );
        assert!(state.completed_at.is_some());
        // No limit, no reflection: it goes on.
        let mut endless = TaskLoop::new("e", default_task_file("e"), options(0, 0), 0);
        for _ in 0..100 {
            assert_eq!(endless.advance(1), Advance::Next { reflect: false });
        }
        assert_eq!(endless.progress(), "101");
    }

    #[test]
    fn names_are_sanitized_as_unipi_did() {
        assert_eq!(sanitize("my loop/v2.md"), "my_loop_v2_md");
        assert_eq!(sanitize("a  -b__c"), "a_-b_c");
    }

    #[test]
    fn state_files_round_trip_and_unipis_files_are_read() {
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let project = dir.path();
        assert!(load(project, "none").is_ok_and(|state| state.is_none()));
        let state = TaskLoop::new("demo", default_task_file("demo"), options(5, 0), 7);
        save(project, &state).unwrap_or_else(|err| panic!("{err:#}"));
        assert_eq!(load(project, "demo").ok().flatten(), Some(state));
        // Unipi's file: no status (active decides), ISO times, no updatedAtMs.
        let unipi = r#"{"name":"old","taskFile":".unipi/ralph/old.md","iteration":3,
            "maxIterations":50,"itemsPerIteration":0,"reflectEvery":0,"active":true,
            "startedAt":"2026-01-01T00:00:00.000Z","lastReflectionAt":0}"#;
        std::fs::write(project.join(state_file(RALPH_DIR, "old")), unipi)
            .unwrap_or_else(|err| panic!("{err}"));
        let old = load(project, "old").ok().flatten();
        assert_eq!(
            old.map(|s| (s.status, s.iteration)),
            Some((LoopStatus::Active, 3))
        );
        // A plan loop's file is listed, not loaded as a model-driven loop; a broken one says where.
        std::fs::write(
            project.join(state_file(RALPH_DIR, "plan")),
            r#"{"name":"plan","plan":".unipi/docs/plans/p.md","iteration":2,"maxIterations":9,
               "status":"stopped","startedAtMs":1,"updatedAtMs":99}"#,
        )
        .unwrap_or_else(|err| panic!("{err}"));
        std::fs::write(project.join(state_file(RALPH_DIR, "torn")), "{\"na")
            .unwrap_or_else(|err| panic!("{err}"));
        let err = load(project, "plan").map_err(|err| format!("{err:#}"));
        assert_eq!(
            err.err().as_deref(),
            Some(
                ".unipi/ralph/plan.state.json is not a ralph loop's state: it is a plan loop's \
                 (/unipi:ralph-start plan:<file>)"
            )
        );
        assert!(
            load(project, "torn")
                .map_err(|err| format!("{err:#}"))
                .is_err_and(|err| err.starts_with(".unipi/ralph/torn.state.json is not"))
        );
        let lines: Vec<String> = list(project, RALPH_DIR).iter().map(Summary::line).collect();
        assert_eq!(
            lines,
            [
                "plan: ✓ stopped (iteration 2/9) — plan .unipi/docs/plans/p.md",
                "demo: ▶ active (iteration 1/5)",
                "old: ▶ active (iteration 3/50)",
            ]
        );
    }

    #[test]
    fn archive_clean_and_nuke_stay_inside_the_project() {
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let (project, outside) = (dir.path().join("p"), dir.path().join("outside"));
        for folder in [&project, &outside] {
            std::fs::create_dir_all(folder).unwrap_or_else(|err| panic!("{err}"));
        }
        let mut state = TaskLoop::new("a", default_task_file("a"), options(5, 0), 1);
        write_inside(&project, &state.task_file, b"# A").unwrap_or_else(|err| panic!("{err:#}"));
        state.set_status(LoopStatus::Completed, None, 2);
        save(&project, &state).unwrap_or_else(|err| panic!("{err:#}"));
        let moved = archive(&project, &state).unwrap_or_else(|err| panic!("{err:#}"));
        assert_eq!(
            moved,
            [
                PathBuf::from(".unipi/ralph/archive/a.state.json"),
                PathBuf::from(".unipi/ralph/archive/a.md")
            ]
        );
        assert!(list(&project, RALPH_DIR).is_empty());
        assert_eq!(list(&project, ARCHIVE_DIR).len(), 1);
        // A task file that links out is neither read nor written through.
        std::fs::write(outside.join("x.md"), "theirs").unwrap_or_else(|err| panic!("{err}"));
        std::os::unix::fs::symlink(outside.join("x.md"), project.join(RALPH_DIR).join("x.md"))
            .unwrap_or_else(|err| panic!("{err}"));
        let x = default_task_file("x");
        assert!(read_task(&project, &x).is_err());
        assert!(write_inside(&project, &x, b"mine").is_err());
        assert_eq!(
            std::fs::read_to_string(outside.join("x.md")).unwrap_or_default(),
            "theirs"
        );
        assert!(nuke(&project).is_ok_and(|removed| removed));
        assert!(!project.join(RALPH_DIR).exists());
        assert!(outside.join("x.md").exists(), "nuke does not follow links");
        assert!(nuke(&project).is_ok_and(|removed| !removed));
    }
}

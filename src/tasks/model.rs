//! The task data every other part reads: [`TaskInfo`] (one task's state, which is also its
//! durable JSON snapshot and the `details` of every tool result), its status and kill kind, and
//! the pure text the tools and the notification are made of — names, durations, sizes, the
//! delivery guidance, the status list. Kept free of I/O so all of it is table-tested.

use serde::{Deserialize, Serialize};

use crate::text::unquote;
pub(super) use unipi_widgets::text::truncate_chars;

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Where every task starts.
    #[default]
    Running,
    /// Exited with code 0.
    Done,
    /// Exited non-zero, by a signal it did not get from us, timed out, or hit the output cap.
    Failed,
    /// Stopped by the user or at shutdown.
    Stopped,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
        }
    }

    /// The list icon (▶ running, ✓ done, ■ stopped, ✗ failed).
    pub fn icon(self) -> &'static str {
        match self {
            Self::Running => "▶",
            Self::Done => "✓",
            Self::Stopped => "■",
            Self::Failed => "✗",
        }
    }

    /// Sort rank for lists: running first, then failed, stopped, done.
    pub fn rank(self) -> u8 {
        match self {
            Self::Running => 0,
            Self::Failed => 1,
            Self::Stopped => 2,
            Self::Done => 3,
        }
    }
}

/// Why the workbench ended a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KillKind {
    User,
    Timeout,
    OutputCap,
    Shutdown,
}

/// Who started a task; decides nothing by itself but is shown and kept for reruns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskOrigin {
    /// The model, through `bg_run`.
    #[default]
    Agent,
    /// The user, through `/unipi:bg` or the dock.
    User,
}

/// One task's state. Serialized (camelCase) as `<id>.json` and as tool `details`. The default
/// is a running task that has ended nothing, written nothing and sent nothing yet: what a start
/// fills in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskInfo {
    pub id: String,
    pub name: String,
    pub command: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub description: Option<String>,
    pub status: TaskStatus,
    pub cwd: String,
    pub output_path: String,
    /// Milliseconds since the epoch.
    pub start_time: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub end_time: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pid: Option<u32>,
    /// The start time of the process `pid` (clock ticks after boot): with the pid it names the
    /// group's leader so that a later start never signals a reused pid.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub leader_start: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub exit_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub signal: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub kill_kind: Option<KillKind>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
    /// Size of the output file, notices included.
    pub bytes_written: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub last_line: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub timeout_seconds: Option<u64>,
    pub is_agent: bool,
    pub notify_on_completion: bool,
    pub trigger_on_completion: bool,
    /// The completion notification was sent.
    pub notified: bool,
    pub origin: TaskOrigin,
    /// The agent (Pi process) the notification goes to.
    pub agent: String,
}

impl TaskInfo {
    pub fn is_running(&self) -> bool {
        self.status == TaskStatus::Running
    }

    /// Runtime so far (running) or in total, in milliseconds.
    pub(crate) fn runtime_ms(&self, now_ms: u64) -> u64 {
        self.end_time
            .unwrap_or(now_ms)
            .saturating_sub(self.start_time)
    }

    /// True when this task's end will start an agent turn.
    pub fn wakes_agent(&self) -> bool {
        self.notify_on_completion && self.trigger_on_completion
    }
}

/// Orders tasks for lists: running first, then failed, stopped, done; newest first within each.
pub(crate) fn sort_tasks(tasks: &mut [TaskInfo]) {
    tasks.sort_by(|a, b| {
        a.status
            .rank()
            .cmp(&b.status.rank())
            .then(b.start_time.cmp(&a.start_time))
            .then(a.id.cmp(&b.id))
    });
}

/// How a task's end is delivered (the seed's delivery table).
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeliveryMode {
    NotificationAndWake,
    NotificationOnly,
    ManualMonitoring,
}

#[cfg(test)]
impl DeliveryMode {
    pub(super) fn of(notify: bool, trigger: bool) -> Self {
        match (notify, trigger) {
            (true, true) => Self::NotificationAndWake,
            (true, false) => Self::NotificationOnly,
            (false, _) => Self::ManualMonitoring,
        }
    }
}

/// The three guidance lines `bg_run` returns, worded as the reference's.
pub(crate) fn delivery_guidance(notify: bool, trigger: bool) -> [&'static str; 3] {
    match (notify, trigger) {
        (true, true) => [
            "Terminal notification: enabled.",
            "Automatic follow-up turn: enabled.",
            "Next action: do not poll or sleep merely to wait; continue only independent useful \
             work, otherwise end this turn and wait for <background-task-notification>.",
        ],
        (true, false) => [
            "Terminal notification: enabled.",
            "Automatic follow-up turn: disabled. The terminal notification will be delivered, \
             but it will not start an agent turn.",
            "Next action: automatic wake-up was explicitly disabled; use bg_status/bg_logs only \
             when deliberate monitoring is required, without tight polling.",
        ],
        (false, trigger) => [
            "Terminal notification: disabled.",
            if trigger {
                "Automatic follow-up turn: disabled because terminal notifications are disabled. \
                 triggerOnCompletion has no effect while notifyOnCompletion is false."
            } else {
                "Automatic follow-up turn: disabled."
            },
            "Next action: completion delivery was explicitly disabled; use bg_status/bg_logs \
             only for deliberate manual monitoring, without tight polling.",
        ],
    }
}

/// A user-given name: outer quotes stripped, whitespace compacted, at most 80 characters.
/// `None` when nothing is left.
pub(crate) fn normalize_task_name(name: &str) -> Option<String> {
    let trimmed = name.trim();
    let unquoted = unquote(trimmed);
    let compact = unquoted.split_whitespace().collect::<Vec<_>>().join(" ");
    (!compact.is_empty()).then(|| truncate_chars(&compact, 80))
}

/// A name for a task started without one: `npm run build` → `npm run build`, otherwise the
/// command's first five words, at most 48 characters.
pub(crate) fn derive_task_name_from_command(command: &str) -> String {
    let words: Vec<&str> = command.split_whitespace().collect();
    let name = runner_script_name(&words)
        .unwrap_or_else(|| words.iter().take(5).copied().collect::<Vec<_>>().join(" "));
    if name.is_empty() {
        "Background task".to_string()
    } else {
        truncate_chars(&name, 48)
    }
}

/// `<runner>[ run] <script>` for npm, pnpm, yarn and bun.
fn runner_script_name(words: &[&str]) -> Option<String> {
    let (runner, rest) = words.split_first()?;
    if !matches!(*runner, "npm" | "pnpm" | "yarn" | "bun") {
        return None;
    }
    let (run, rest) = match rest.split_first() {
        Some((&"run", rest)) => (" run", rest),
        _ => ("", rest),
    };
    let script = rest.first()?.split([';', '&', '|']).next()?;
    (!script.is_empty()).then(|| format!("{runner}{run} {script}"))
}

/// The task's name: the given one, else from the description, else from the command.
pub(crate) fn resolve_task_name(
    name: Option<&str>,
    description: Option<&str>,
    command: &str,
) -> String {
    name.and_then(normalize_task_name)
        .or_else(|| description.and_then(normalize_task_name))
        .unwrap_or_else(|| derive_task_name_from_command(command))
}

/// `<1000` → `Nms`; `<60s` → `Ns`; `<60m` → `Nm[Ss]`; else `Nh[Mm]`.
pub(crate) fn format_duration(ms: u64) -> String {
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs = ms / 1000;
    if secs < 60 {
        return format!("{secs}s");
    }
    let mins = secs / 60;
    if mins < 60 {
        let rest = secs % 60;
        return if rest == 0 {
            format!("{mins}m")
        } else {
            format!("{mins}m{rest}s")
        };
    }
    let hours = mins / 60;
    let rest = mins % 60;
    if rest == 0 {
        format!("{hours}h")
    } else {
        format!("{hours}h{rest}m")
    }
}

/// Pi's `formatSize`: `<1024` → `NB`; `<1 MiB` → `x.yKB`; else `x.yMB`.
pub fn format_size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    if bytes < KIB {
        format!("{bytes}B")
    } else if bytes < KIB * KIB {
        format!("{:.1}KB", bytes as f64 / KIB as f64)
    } else {
        format!("{:.1}MB", bytes as f64 / (KIB * KIB) as f64)
    }
}

/// One task as `bg_status` lists it (two lines: summary and output path).
pub(crate) fn format_task_line(task: &TaskInfo, now_ms: u64) -> String {
    let mut line = format!(
        "{} {} {} {}",
        task.status.icon(),
        task.id,
        task.status.as_str(),
        format_duration(task.runtime_ms(now_ms))
    );
    if let Some(code) = task.exit_code {
        line.push_str(&format!(" exit={code}"));
    }
    if let Some(pid) = task.pid {
        line.push_str(&format!(" pid={pid}"));
    }
    line.push_str(&format!(" — {}", truncate_chars(&task.name, 90)));
    if let Some(error) = &task.error {
        line.push_str(&format!(" error={}", truncate_chars(error, 80)));
    }
    line.push_str(&format!("\n    output: {}", task.output_path));
    line
}

/// The `bg_status` text for a list of tasks (already in display order).
pub(crate) fn format_task_list(tasks: &[TaskInfo], now_ms: u64) -> String {
    if tasks.is_empty() {
        return "No background tasks in this workbench session.".to_string();
    }
    tasks
        .iter()
        .map(|task| format_task_line(task, now_ms))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, status: TaskStatus, start_time: u64) -> TaskInfo {
        TaskInfo {
            id: id.into(),
            name: "build it".into(),
            command: "make".into(),
            description: None,
            status,
            cwd: "/w".into(),
            output_path: format!("/tmp/{id}.log"),
            start_time,
            pid: Some(42),
            notify_on_completion: true,
            trigger_on_completion: true,
            agent: "main".into(),
            ..TaskInfo::default()
        }
    }

    #[test]
    fn name_derivation_table() {
        let cases = [
            (Some("  \"run   the tests\" "), None, "x", "run the tests"),
            (Some("   "), Some("watch the build"), "x", "watch the build"),
            (None, None, "npm run build -- --watch", "npm run build"),
            (None, None, "pnpm test;echo", "pnpm test"),
            (None, None, "bun run dev&&x", "bun run dev"),
            (None, None, "npm", "npm"),
            (
                None,
                None,
                "cargo test -p a --lib x y",
                "cargo test -p a --lib",
            ),
            (None, None, "   ", "Background task"),
        ];
        for (name, description, command, want) in cases {
            assert_eq!(
                resolve_task_name(name, description, command),
                want,
                "{command}"
            );
        }
        let long = "a".repeat(100);
        assert_eq!(derive_task_name_from_command(&long).chars().count(), 48);
        assert_eq!(
            normalize_task_name(&long).map(|n| n.chars().count()),
            Some(80)
        );
    }

    #[test]
    fn delivery_guidance_follows_the_table() {
        assert_eq!(
            DeliveryMode::of(true, true),
            DeliveryMode::NotificationAndWake
        );
        assert_eq!(
            DeliveryMode::of(true, false),
            DeliveryMode::NotificationOnly
        );
        assert_eq!(
            DeliveryMode::of(false, true),
            DeliveryMode::ManualMonitoring
        );
        assert_eq!(
            delivery_guidance(true, true)[1],
            "Automatic follow-up turn: enabled."
        );
        assert!(delivery_guidance(true, true)[2].contains("<background-task-notification>"));
        assert!(delivery_guidance(true, false)[1].contains("will not start an agent turn"));
        assert!(delivery_guidance(false, true)[1].contains("has no effect"));
        assert_eq!(
            delivery_guidance(false, false)[1],
            "Automatic follow-up turn: disabled."
        );
        assert_eq!(
            delivery_guidance(false, false)[0],
            "Terminal notification: disabled."
        );
    }

    #[test]
    fn durations_and_sizes_table() {
        let durations = [
            (0, "0ms"),
            (999, "999ms"),
            (1000, "1s"),
            (59_999, "59s"),
            (60_000, "1m"),
            (61_000, "1m1s"),
            (3_600_000, "1h"),
            (3_660_000, "1h1m"),
        ];
        for (ms, want) in durations {
            assert_eq!(format_duration(ms), want);
        }
        let sizes = [
            (0, "0B"),
            (1023, "1023B"),
            (1024, "1.0KB"),
            (1536, "1.5KB"),
            (20 << 20, "20.0MB"),
        ];
        for (bytes, want) in sizes {
            assert_eq!(format_size(bytes), want);
        }
    }

    #[test]
    fn status_lines_and_empty_list() {
        let mut failed = task("bg-a1b2c3", TaskStatus::Failed, 1_000);
        failed.end_time = Some(3_500);
        failed.exit_code = Some(2);
        failed.pid = None;
        failed.error = Some("Exited with code 2".into());
        assert_eq!(
            format_task_line(&failed, 99_000),
            "✗ bg-a1b2c3 failed 2s exit=2 — build it error=Exited with code 2\n    output: /tmp/bg-a1b2c3.log"
        );
        let running = task("bg-000001", TaskStatus::Running, 0);
        assert_eq!(
            format_task_line(&running, 61_000),
            "▶ bg-000001 running 1m1s pid=42 — build it\n    output: /tmp/bg-000001.log"
        );
        assert_eq!(
            format_task_list(&[], 0),
            "No background tasks in this workbench session."
        );
    }

    #[test]
    fn sorting_puts_running_first_then_failed_stopped_done_newest_first() {
        let mut tasks = vec![
            task("d1", TaskStatus::Done, 5),
            task("s1", TaskStatus::Stopped, 1),
            task("r1", TaskStatus::Running, 1),
            task("f1", TaskStatus::Failed, 1),
            task("r2", TaskStatus::Running, 9),
        ];
        sort_tasks(&mut tasks);
        let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["r2", "r1", "f1", "s1", "d1"]);
    }

    #[test]
    fn snapshot_json_is_camel_case_and_omits_absent_fields() -> anyhow::Result<()> {
        let value = serde_json::to_value(task("bg-1", TaskStatus::Running, 7))?;
        assert_eq!(value["outputPath"], "/tmp/bg-1.log");
        assert_eq!(value["status"], "running");
        assert!(value.get("exitCode").is_none(), "{value}");
        let back: TaskInfo = serde_json::from_value(value)?;
        assert_eq!(back.id, "bg-1");
        Ok(())
    }
}

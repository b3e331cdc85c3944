//! Runs one helper as a real child `pi --mode json -p …` and watches it to the end.
//!
//! The child is its own process group (Pi's tools start their own children; a stop must reach
//! them all), stdin null, stdout read incrementally by [`EventParser`] into a [`RunSummary`] with
//! live [`Progress`] on a `watch`, stderr kept as a bounded tail. One supervisor task per run owns
//! the child; the [`RunHandle`] only holds channels, so waiting, stopping and dropping are all
//! cheap and cancellation-safe. A guard in the supervisor and the handle's `Drop` both SIGKILL
//! the group, so neither a dropped handle nor a runtime shutdown leaves an orphan.
//!
//! The run directory records the run for readers that are not this process (the
//! `get_helper_result` tool after a restart, the dock): `status.json` (merged, crash-safe writes
//! with `updatedAt`), `process.json` (pid, start), `output.txt` (the final text).
//!
//! The zero-activity rule only looks at the start of an attempt: a child that prints nothing at
//! all for `idle_timeout` is stuck before its first event (in practice, on its argv), so it is
//! killed and retried once with the task in a file passed as `@<file>` — both Pi lines accept
//! `[@files...]` as the message. Once events flow, silence is normal (a long `bash` tool call
//! prints nothing) and only the run deadline applies.

use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Map, Value, json};
use tokio::io::AsyncReadExt as _;
use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio::sync::watch;
use tokio::time::Instant;

use super::agents::AgentType;
use super::events::{EventParser, RunSummary, Usage};
use super::sys::{group_alive, replace_file_durable};

/// Default run deadline.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(30 * 60);
/// Default zero-activity limit at the start of an attempt.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(20);
/// Time between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(3);
/// How long [`RunHandle::stop`] waits beyond the grace for the run to end.
pub const STOP_SLACK: Duration = Duration::from_millis(1500);
/// How long the pipes are still read after the child exited.
pub const PIPE_DRAIN: Duration = Duration::from_secs(2);
/// The most characters of stderr error lines kept as a failed run's error.
pub const STDERR_ERROR_CHARS: usize = 500;

/// The file names inside a run directory.
pub const STATUS_FILE: &str = "status.json";
pub const PROCESS_FILE: &str = "process.json";
pub const OUTPUT_FILE: &str = "output.txt";
pub const PROMPT_FILE: &str = "prompt.md";

/// What to run.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// The `pi` launcher (or a stand-in).
    pub program: PathBuf,
    /// Arguments before the type's own (`--offline`, extension and session flags).
    pub leading_args: Vec<String>,
    pub agent: AgentType,
    pub prompt: String,
    pub env: Vec<(String, String)>,
    pub env_remove: Vec<String>,
    pub cwd: PathBuf,
    /// This run's directory (created if missing); holds the status, process and output files.
    pub run_dir: PathBuf,
    pub deadline: Duration,
    pub idle_timeout: Duration,
    pub kill_grace: Duration,
}

impl RunSpec {
    /// A spec with the default deadline, idle timeout and grace, no extra env or arguments.
    pub fn new(
        program: impl Into<PathBuf>,
        agent: AgentType,
        prompt: impl Into<String>,
        cwd: impl Into<PathBuf>,
        run_dir: impl Into<PathBuf>,
    ) -> Self {
        Self {
            program: program.into(),
            leading_args: Vec::new(),
            agent,
            prompt: prompt.into(),
            env: Vec::new(),
            env_remove: Vec::new(),
            cwd: cwd.into(),
            run_dir: run_dir.into(),
            deadline: DEFAULT_DEADLINE,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            kill_grace: KILL_GRACE,
        }
    }
}

/// A run's state as `status.json` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Queued,
    Running,
    Completed,
    Failed,
    Stopped,
    TimedOut,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
            Self::TimedOut => "timedOut",
        }
    }

    pub fn is_terminal(self) -> bool {
        !matches!(self, Self::Queued | Self::Running)
    }
}

/// Why a run was retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryKind {
    /// The first attempt printed nothing; the task went through `@<file>` the second time.
    FileDelivery,
}

impl RetryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FileDelivery => "file-delivery",
        }
    }
}

/// How the (last) child ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExitInfo {
    pub pid: Option<u32>,
    pub code: Option<i32>,
    /// `SIGKILL`, `SIGTERM`, … when a signal ended it.
    pub signal: Option<String>,
}

/// Live progress for the dock and the tool's progress updates.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    pub turns: u32,
    pub tool_uses: usize,
    /// `name args` of the latest tool call.
    pub last_tool: Option<String>,
    pub usage: Usage,
    /// When the child last printed anything on stdout.
    pub last_activity: Option<std::time::Instant>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub status: RunStatus,
    pub summary: RunSummary,
    pub error: Option<String>,
    pub exit: ExitInfo,
    pub retry: Option<RetryKind>,
}

/// Starts helper runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct HelperRunner;

/// One run in flight (or ended). Dropping it before the end kills the child's group.
pub struct RunHandle {
    run_dir: PathBuf,
    progress: watch::Receiver<Progress>,
    outcome: watch::Receiver<Option<RunOutcome>>,
    stop: watch::Sender<Option<StopKind>>,
    /// The live group's id, 0 once reaped: what `Drop` kills.
    pgid: Arc<AtomicI32>,
    kill_grace: Duration,
}

impl HelperRunner {
    /// Writes `status.json` (queued), spawns the child and returns at once; the run continues
    /// in a supervisor task (so this must be called inside the tokio runtime). Errors only when
    /// the run directory cannot be written or the child cannot be spawned.
    pub async fn start(spec: RunSpec) -> anyhow::Result<RunHandle> {
        std::fs::create_dir_all(&spec.run_dir)
            .with_context(|| format!("create the run directory {}", spec.run_dir.display()))?;
        let mut record = Record::new(&spec.run_dir);
        record
            .merge(&json!({
                "status": RunStatus::Queued.as_str(),
                "agent": spec.agent.name,
                "createdAt": now_ms(),
            }))
            .await?;
        let args = spec.agent.pi_args(&spec.prompt);
        let child = spawn(&spec, &args)?;
        let pgid = Arc::new(AtomicI32::new(child.pid as i32));
        // Armed before the supervisor first runs: a future dropped unpolled still kills it.
        let guard = GroupGuard(pgid.clone());
        let (progress_tx, progress) = watch::channel(Progress::default());
        let (outcome_tx, outcome) = watch::channel(None);
        let (stop, stop_rx) = watch::channel(None);
        let handle = RunHandle {
            run_dir: spec.run_dir.clone(),
            progress,
            outcome,
            stop,
            pgid: pgid.clone(),
            kill_grace: spec.kill_grace,
        };
        let supervisor = Supervisor {
            spec,
            record,
            pgid,
            progress: progress_tx,
            stop: stop_rx,
            started: Instant::now(),
        };
        tokio::spawn(async move {
            let outcome = supervisor.run(child, guard).await;
            outcome_tx.send_replace(Some(outcome));
        });
        Ok(handle)
    }
}

impl RunHandle {
    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// Live progress; `changed()` fires on every event that moves it.
    pub fn progress(&self) -> watch::Receiver<Progress> {
        self.progress.clone()
    }

    /// The group id of the live child, `None` once it is reaped.
    pub fn pid(&self) -> Option<u32> {
        match self.pgid.load(Ordering::SeqCst) {
            0 => None,
            pid => Some(pid as u32),
        }
    }

    /// Waits for the end (status files written). Cancellation-safe: dropping the future leaves
    /// the run going.
    pub async fn wait(&mut self) -> RunOutcome {
        let ended = self.outcome.wait_for(Option::is_some).await;
        match ended.as_deref() {
            Ok(Some(outcome)) => outcome.clone(),
            // The supervisor went away without an outcome: only a runtime shutdown does that.
            _ => RunOutcome {
                status: RunStatus::Failed,
                summary: RunSummary::default(),
                error: Some("the run's supervisor ended without an outcome".to_string()),
                exit: ExitInfo::default(),
                retry: None,
            },
        }
    }

    /// Asks the run to stop (SIGTERM to the group, SIGKILL after the grace) without waiting.
    pub fn request_stop(&self) {
        request(&self.stop, StopKind::User);
    }

    /// Stops the run and waits for its end, at most the grace plus [`STOP_SLACK`].
    pub async fn stop(&mut self) -> anyhow::Result<RunOutcome> {
        self.request_stop();
        let limit = self.kill_grace + STOP_SLACK;
        tokio::time::timeout(limit, self.wait())
            .await
            .map_err(|_| anyhow::anyhow!("the helper did not end within {limit:?} of its stop"))
    }
}

impl Drop for RunHandle {
    fn drop(&mut self) {
        if self.outcome.borrow().is_some() {
            return;
        }
        request(&self.stop, StopKind::Dropped);
        let pgid = self.pgid.load(Ordering::SeqCst);
        if pgid > 0 {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }
}

/// Who asked for the stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopKind {
    User,
    Dropped,
    Deadline,
}

fn request(stop: &watch::Sender<Option<StopKind>>, kind: StopKind) {
    stop.send_if_modified(|current| {
        let first = current.is_none();
        if first {
            *current = Some(kind);
        }
        first
    });
}

/// A spawned child and its pipes.
struct Spawned {
    child: Child,
    pid: u32,
    stdout: ChildStdout,
    stderr: ChildStderr,
}

struct Supervisor {
    spec: RunSpec,
    record: Record,
    pgid: Arc<AtomicI32>,
    progress: watch::Sender<Progress>,
    stop: watch::Receiver<Option<StopKind>>,
    started: Instant,
}

/// How one attempt ended.
struct Attempt {
    summary: RunSummary,
    exit: ExitInfo,
    wait_error: Option<String>,
    stderr_tail: String,
    stop: Option<StopKind>,
    /// It printed nothing for the idle timeout and was killed.
    idle: bool,
}

impl Supervisor {
    async fn run(mut self, first: Spawned, guard: GroupGuard) -> RunOutcome {
        let mut retry = None;
        let mut spawned = first;
        let attempt = loop {
            self.running(spawned.pid, retry).await;
            let attempt = self.attempt(spawned).await;
            if !attempt.idle || retry.is_some() || attempt.stop.is_some() {
                break attempt;
            }
            retry = Some(RetryKind::FileDelivery);
            match self.file_delivery() {
                Ok(next) => spawned = next,
                Err(err) => {
                    break Attempt {
                        wait_error: Some(format!("{err:#}")),
                        ..attempt
                    };
                }
            }
        };
        drop(guard);
        let outcome = outcome_of(attempt, retry, self.spec.idle_timeout);
        self.finish(&outcome).await;
        outcome
    }

    async fn running(&mut self, pid: u32, retry: Option<RetryKind>) {
        self.pgid.store(pid as i32, Ordering::SeqCst);
        let started = now_ms();
        let process = json!({ "pid": pid, "started": started });
        let path = self.spec.run_dir.join(PROCESS_FILE);
        if let Err(err) = write_durable(path, process.to_string().into_bytes()).await {
            tracing::warn!("{err:#}");
        }
        let mut fields = json!({
            "status": RunStatus::Running.as_str(),
            "pid": pid,
            "startedAt": started,
        });
        if let Some(retry) = retry {
            fields["retry"] = json!(retry.as_str());
        }
        if let Err(err) = self.record.merge(&fields).await {
            tracing::warn!("{err:#}");
        }
    }

    /// Writes the prompt to the run directory and respawns with `@<file>` as the message.
    fn file_delivery(&self) -> anyhow::Result<Spawned> {
        let path = self.spec.run_dir.join(PROMPT_FILE);
        std::fs::write(&path, &self.spec.prompt)
            .with_context(|| format!("write the task file {}", path.display()))?;
        let mut args = self.spec.agent.pi_args("");
        // `pi_args` ends with the message; the file takes its place.
        args.pop();
        args.push(format!("@{}", path.display()));
        spawn(&self.spec, &args)
    }

    async fn attempt(&mut self, spawned: Spawned) -> Attempt {
        let Spawned {
            mut child,
            pid,
            mut stdout,
            mut stderr,
        } = spawned;
        let pgid = Pid::from_raw(pid as i32);
        let mut parser = EventParser::new();
        let mut summary = RunSummary::default();
        let mut stderr_tail = StderrTail::default();
        let mut out_buf = vec![0u8; 64 * 1024];
        let mut err_buf = vec![0u8; 8 * 1024];
        let (mut stdout_open, mut stderr_open) = (true, true);
        let mut exit = None;
        let mut seen_output = false;
        let mut idle = false;
        let mut stop = *self.stop.borrow();
        let mut kill_at = stop.map(|_| self.begin_stop(pgid));
        let idle_at = Instant::now() + self.spec.idle_timeout;
        let deadline = self.started + self.spec.deadline;
        let far = Instant::now() + Duration::from_secs(86_400 * 365);
        let mut drain_until = None;
        while exit.is_none() || stdout_open || stderr_open {
            tokio::select! {
                read = stdout.read(&mut out_buf), if stdout_open => match read {
                    Ok(0) | Err(_) => {
                        stdout_open = false;
                        for event in parser.finish() {
                            summary.apply(&event);
                        }
                    }
                    Ok(n) => {
                        seen_output = true;
                        for event in parser.feed(&out_buf[..n]) {
                            summary.apply(&event);
                        }
                        self.publish(&summary);
                    }
                },
                read = stderr.read(&mut err_buf), if stderr_open => match read {
                    Ok(0) | Err(_) => stderr_open = false,
                    Ok(n) => stderr_tail.push(&err_buf[..n]),
                },
                status = child.wait(), if exit.is_none() => {
                    exit = Some(status);
                    // The leader is gone; whatever it left in its group goes too, which also
                    // closes the pipes those processes held.
                    if group_alive(pgid) {
                        let _ = killpg(pgid, Signal::SIGKILL);
                    }
                    // Nothing of the group runs any more: `Drop` must not signal a reused id.
                    self.pgid.store(0, Ordering::SeqCst);
                    drain_until = Some(Instant::now() + PIPE_DRAIN);
                },
                // A process that left the group (`setsid`) may hold the pipes open forever.
                _ = tokio::time::sleep_until(drain_until.unwrap_or(far)),
                    if drain_until.is_some() =>
                {
                    if stdout_open {
                        tracing::debug!("helper {pid}: stdout still open after exit; not read");
                        for event in parser.finish() {
                            summary.apply(&event);
                        }
                    }
                    (stdout_open, stderr_open) = (false, false);
                },
                _ = tokio::time::sleep_until(idle_at),
                    if !seen_output && !idle && exit.is_none() =>
                {
                    idle = true;
                    let _ = killpg(pgid, Signal::SIGKILL);
                },
                _ = tokio::time::sleep_until(deadline), if stop.is_none() && exit.is_none() => {
                    stop = Some(StopKind::Deadline);
                    kill_at = Some(self.begin_stop(pgid));
                },
                _ = tokio::time::sleep_until(kill_at.unwrap_or(far)), if kill_at.is_some() => {
                    let _ = killpg(pgid, Signal::SIGKILL);
                    kill_at = None;
                },
                changed = self.stop.changed(), if stop.is_none() => {
                    if changed.is_err() {
                        // The handle is gone without a request: treat it as dropped.
                        stop = Some(StopKind::Dropped);
                    } else {
                        stop = *self.stop.borrow_and_update();
                    }
                    if stop == Some(StopKind::Dropped) {
                        let _ = killpg(pgid, Signal::SIGKILL);
                    } else if stop.is_some() {
                        kill_at = Some(self.begin_stop(pgid));
                    }
                },
            }
        }
        self.pgid.store(0, Ordering::SeqCst);
        let (exit, wait_error) = match exit {
            Some(Ok(status)) => (
                ExitInfo {
                    pid: Some(pid),
                    code: status.code(),
                    signal: status
                        .signal()
                        .and_then(|sig| Signal::try_from(sig).ok())
                        .map(|sig| sig.as_str().to_string()),
                },
                None,
            ),
            Some(Err(err)) => (
                ExitInfo {
                    pid: Some(pid),
                    ..ExitInfo::default()
                },
                Some(format!("could not wait for the helper: {err}")),
            ),
            None => (ExitInfo::default(), None),
        };
        Attempt {
            summary,
            exit,
            wait_error,
            stderr_tail: stderr_tail.text(),
            stop,
            idle,
        }
    }

    /// SIGTERM to the group; returns when SIGKILL is due.
    fn begin_stop(&self, pgid: Pid) -> Instant {
        if let Err(err) = killpg(pgid, Signal::SIGTERM) {
            tracing::debug!("SIGTERM to helper group {pgid}: {err}");
        }
        Instant::now() + self.spec.kill_grace
    }

    fn publish(&self, summary: &RunSummary) {
        let last_tool = summary
            .tool_uses
            .last()
            .map(|tool| format!("{} {}", tool.name, tool.args).trim().to_string());
        self.progress.send_replace(Progress {
            turns: summary.turns,
            tool_uses: summary.tool_uses.len(),
            last_tool,
            usage: summary.usage,
            last_activity: Some(std::time::Instant::now()),
        });
    }

    async fn finish(&mut self, outcome: &RunOutcome) {
        let output = self.spec.run_dir.join(OUTPUT_FILE);
        let text = outcome.summary.final_text.clone().into_bytes();
        if let Err(err) = write_durable(output, text).await {
            tracing::warn!("{err:#}");
        }
        let usage = &outcome.summary.usage;
        let mut fields = json!({
            "status": outcome.status.as_str(),
            "endedAt": now_ms(),
            "exitCode": outcome.exit.code,
            "signal": outcome.exit.signal,
            "error": outcome.error,
            "turns": outcome.summary.turns,
            "toolUses": outcome.summary.tool_uses.len(),
            "usage": {
                "input": usage.input,
                "output": usage.output,
                "cacheRead": usage.cache_read,
                "cacheWrite": usage.cache_write,
                "totalTokens": usage.total,
                "cost": usage.cost,
            },
        });
        if let Some(pid) = outcome.exit.pid {
            fields["pid"] = json!(pid);
        }
        if let Err(err) = self.record.merge(&fields).await {
            // The outcome still reaches the waiter; a reader of the directory sees the last
            // state that made it to disk.
            tracing::warn!("{err:#}");
        }
    }
}

/// Classifies an attempt.
fn outcome_of(attempt: Attempt, retry: Option<RetryKind>, idle_timeout: Duration) -> RunOutcome {
    let Attempt {
        summary,
        exit,
        wait_error,
        stderr_tail,
        stop,
        idle,
    } = attempt;
    let stderr_error = error_lines(&stderr_tail);
    let (status, error) = match stop {
        Some(StopKind::User) => (RunStatus::Stopped, Some("stopped".to_string())),
        Some(StopKind::Dropped) => (
            RunStatus::Stopped,
            Some("stopped: the run's owner went away".to_string()),
        ),
        Some(StopKind::Deadline) => (
            RunStatus::TimedOut,
            Some("run deadline reached".to_string()),
        ),
        None if wait_error.is_some() => (RunStatus::Failed, wait_error),
        None if idle => (
            RunStatus::Failed,
            Some(format!(
                "no output for {idle_timeout:?}{}",
                if retry.is_some() {
                    ", also with the task delivered through a file"
                } else {
                    ""
                }
            )),
        ),
        None if exit.code == Some(0) && summary.error.is_none() => (RunStatus::Completed, None),
        None => {
            let reason = stderr_error.or_else(|| summary.error.clone()).or_else(|| {
                Some(match (&exit.code, &exit.signal) {
                    (Some(code), _) => format!("exited with code {code}"),
                    (None, Some(signal)) => format!("killed by {signal}"),
                    (None, None) => "ended without an exit status".to_string(),
                })
            });
            (RunStatus::Failed, reason)
        }
    };
    RunOutcome {
        status,
        summary,
        error,
        exit,
        retry,
    }
}

/// The error lines of a stderr tail (lines naming an error, else every non-blank line), at most
/// the last [`STDERR_ERROR_CHARS`] characters; `None` when there is nothing.
fn error_lines(stderr: &str) -> Option<String> {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let erroring: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|line| {
            let lower = line.to_lowercase();
            ["error", "fail", "fatal", "exception", "panic"]
                .iter()
                .any(|word| lower.contains(word))
        })
        .collect();
    let chosen = if erroring.is_empty() { lines } else { erroring };
    let text = chosen.join("\n");
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let count = text.chars().count();
    Some(
        text.chars()
            .skip(count.saturating_sub(STDERR_ERROR_CHARS))
            .collect(),
    )
}

/// The last [`StderrTail::KEEP`] bytes of stderr.
#[derive(Default)]
struct StderrTail(Vec<u8>);

impl StderrTail {
    const KEEP: usize = 16 * 1024;

    fn push(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
        if self.0.len() > Self::KEEP {
            let cut = self.0.len() - Self::KEEP;
            self.0.drain(..cut);
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }
}

/// `status.json`: the fields this run has written, merged onto what is on disk (another owner
/// may add its own, e.g. `notified`).
struct Record {
    path: PathBuf,
}

impl Record {
    fn new(run_dir: &Path) -> Self {
        Self {
            path: run_dir.join(STATUS_FILE),
        }
    }

    async fn merge(&mut self, fields: &Value) -> anyhow::Result<()> {
        let path = self.path.clone();
        let fields = fields.clone();
        tokio::task::spawn_blocking(move || {
            let mut current: Map<String, Value> = std::fs::read(&path)
                .ok()
                .and_then(|bytes| serde_json::from_slice(&bytes).ok())
                .unwrap_or_default();
            if let Value::Object(fields) = fields {
                current.extend(fields);
            }
            current.insert("updatedAt".to_string(), json!(now_ms()));
            let bytes = serde_json::to_vec_pretty(&Value::Object(current))
                .context("serialize status.json")?;
            replace_file_durable(&path, &bytes)
        })
        .await
        .context("the status writer panicked")?
    }
}

async fn write_durable(path: PathBuf, bytes: Vec<u8>) -> anyhow::Result<()> {
    tokio::task::spawn_blocking(move || replace_file_durable(&path, &bytes))
        .await
        .context("the file writer panicked")?
}

fn spawn(spec: &RunSpec, args: &[String]) -> anyhow::Result<Spawned> {
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.leading_args)
        .args(args)
        .current_dir(&spec.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(false);
    for name in &spec.env_remove {
        command.env_remove(name);
    }
    command.envs(spec.env.iter().map(|(key, value)| (key, value)));
    let mut child = command
        .spawn()
        .with_context(|| format!("spawn the helper {}", spec.program.display()))?;
    let pid = child
        .id()
        .context("the helper exited before its pid was read")?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
        anyhow::bail!("the helper's pipes were not created");
    };
    Ok(Spawned {
        child,
        pid,
        stdout,
        stderr,
    })
}

/// SIGKILLs the live group when dropped: the supervisor was dropped mid-run. Once the last
/// attempt is reaped the shared pgid is 0 and dropping it does nothing.
struct GroupGuard(Arc<AtomicI32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        let pgid = self.0.load(Ordering::SeqCst);
        if pgid > 0 {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
// A panic is how a test reports failure; the workspace denies unwrap for non-test code.
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::helpers::agents::AgentCatalog;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/pi-json")
            .join(name)
    }

    /// A spec running `sh -c <script> fake <pi args…>` with short timings.
    fn fake(dir: &Path, script: &str) -> RunSpec {
        let explore = AgentCatalog::builtin().resolve("explore").unwrap();
        let mut spec = RunSpec::new(
            "/bin/sh",
            explore,
            "Summarize the notes, please.",
            dir,
            dir.join("run"),
        );
        spec.leading_args = vec!["-c".into(), script.into(), "fake".into()];
        spec.idle_timeout = Duration::from_secs(5);
        spec.kill_grace = Duration::from_millis(300);
        spec
    }

    fn status_json(spec: &RunSpec) -> Value {
        let bytes = std::fs::read(spec.run_dir.join(STATUS_FILE)).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    /// No process of group `pgid` is left running. Read from /proc rather than `killpg(0)`:
    /// under a PID 1 that does not reap, killed grandchildren stay zombies in the group.
    fn group_gone(pgid: u32) -> bool {
        let running_member = |stat: String| {
            // `pid (comm) state ppid pgrp …`; comm may hold spaces, so split after the last ')'.
            let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.first() != Some(&"Z") && fields.get(2) == Some(&pgid.to_string().as_str())
        };
        !std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
            .any(running_member)
    }

    #[tokio::test]
    async fn recorded_stream_completes_and_is_written_down() {
        let dir = tempfile::tempdir().unwrap();
        let script = format!(
            "cat '{}'; echo 'Warning: noise' >&2",
            fixture("pi-1.6.0-explore.jsonl").display()
        );
        let spec = fake(dir.path(), &script);
        let mut handle = HelperRunner::start(spec.clone()).await.unwrap();
        let mut progress = handle.progress();
        let outcome = handle.wait().await;
        assert_eq!(outcome.status, RunStatus::Completed, "{outcome:#?}");
        assert_eq!(outcome.error, None);
        assert_eq!(
            outcome.summary.final_text,
            "The notes say: helpers are read-only."
        );
        assert_eq!(outcome.summary.tool_uses.len(), 1);
        assert_eq!(outcome.exit.code, Some(0));
        assert_eq!(outcome.retry, None);
        let live = progress.borrow_and_update().clone();
        assert_eq!(live.tool_uses, 1);
        assert_eq!(live.last_tool.as_deref(), Some("read notes.txt"));
        assert_eq!(live.turns, 2);
        assert!(live.usage.input > 0 && live.last_activity.is_some());

        let status = status_json(&spec);
        assert_eq!(status["status"], "completed", "{status}");
        assert_eq!(status["toolUses"], 1);
        assert!(status["updatedAt"].as_u64().unwrap() >= status["createdAt"].as_u64().unwrap());
        let pid = outcome.exit.pid.unwrap();
        assert_eq!(status["pid"], pid);
        let process: Value =
            serde_json::from_slice(&std::fs::read(spec.run_dir.join(PROCESS_FILE)).unwrap())
                .unwrap();
        assert_eq!(process["pid"], pid);
        assert!(process["started"].as_u64().is_some());
        assert_eq!(
            std::fs::read_to_string(spec.run_dir.join(OUTPUT_FILE)).unwrap(),
            "The notes say: helpers are read-only."
        );
        assert!(handle.pid().is_none());
    }

    #[tokio::test]
    async fn silent_child_is_killed_and_retried_with_the_task_in_a_file() {
        let dir = tempfile::tempdir().unwrap();
        // Silent unless its last argument is `@<file>`; then it proves it got the prompt.
        let script = format!(
            r#"for last; do :; done
            case "$last" in
              @*) grep -q 'Summarize the notes' "${{last#@}}" && cat '{}' ;;
              *) sleep 30 ;;
            esac"#,
            fixture("pi-0.73.1-explore.jsonl").display()
        );
        let mut spec = fake(dir.path(), &script);
        spec.idle_timeout = Duration::from_millis(400);
        let mut handle = HelperRunner::start(spec.clone()).await.unwrap();
        let first_pid = handle.pid().unwrap();
        let outcome = handle.wait().await;
        assert_eq!(outcome.status, RunStatus::Completed, "{outcome:#?}");
        assert_eq!(outcome.retry, Some(RetryKind::FileDelivery));
        assert_eq!(
            outcome.summary.final_text,
            "The notes say: helpers are read-only."
        );
        assert_ne!(outcome.exit.pid, Some(first_pid), "a second child ran");
        assert!(group_gone(first_pid), "the silent child was killed");
        let status = status_json(&spec);
        assert_eq!(status["retry"], "file-delivery", "{status}");
        assert_eq!(status["status"], "completed", "{status}");
        assert_eq!(
            std::fs::read_to_string(spec.run_dir.join(PROMPT_FILE)).unwrap(),
            "Summarize the notes, please."
        );
    }

    #[tokio::test]
    async fn child_silent_after_the_retry_fails() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = fake(dir.path(), "sleep 30");
        spec.idle_timeout = Duration::from_millis(300);
        let outcome = HelperRunner::start(spec.clone())
            .await
            .unwrap()
            .wait()
            .await;
        assert_eq!(outcome.status, RunStatus::Failed, "{outcome:#?}");
        assert_eq!(outcome.retry, Some(RetryKind::FileDelivery));
        assert!(
            outcome.error.as_deref().unwrap().contains("through a file"),
            "{outcome:#?}"
        );
        assert_eq!(outcome.exit.signal.as_deref(), Some("SIGKILL"));
        assert_eq!(status_json(&spec)["status"], "failed");
    }

    #[tokio::test]
    async fn stop_escalates_to_sigkill_when_sigterm_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        // The ignored disposition is inherited: the `sleep` in the group ignores SIGTERM too.
        let spec = fake(
            dir.path(),
            "trap '' TERM; echo '{\"type\":\"agent_start\"}'; sleep 30 & sleep 30; wait",
        );
        let mut handle = HelperRunner::start(spec.clone()).await.unwrap();
        let pid = handle.pid().unwrap();
        let mut progress = handle.progress();
        progress.changed().await.unwrap();
        let started = Instant::now();
        let outcome = handle.stop().await.unwrap();
        assert!(
            started.elapsed() >= spec.kill_grace,
            "SIGTERM was not enough"
        );
        assert_eq!(outcome.status, RunStatus::Stopped, "{outcome:#?}");
        assert_eq!(outcome.exit.signal.as_deref(), Some("SIGKILL"));
        assert!(group_gone(pid), "the whole group is dead");
        assert_eq!(status_json(&spec)["status"], "stopped");
        assert_eq!(status_json(&spec)["signal"], "SIGKILL");
    }

    #[tokio::test]
    async fn non_zero_exit_keeps_the_stderr_error_lines() {
        let dir = tempfile::tempdir().unwrap();
        let spec = fake(
            dir.path(),
            "echo '{\"type\":\"agent_start\"}'; echo 'Warning: deprecated' >&2; \
             echo 'Error: No API key found for scripted' >&2; exit 3",
        );
        let outcome = HelperRunner::start(spec.clone())
            .await
            .unwrap()
            .wait()
            .await;
        assert_eq!(outcome.status, RunStatus::Failed, "{outcome:#?}");
        assert_eq!(outcome.exit.code, Some(3));
        assert_eq!(
            outcome.error.as_deref(),
            Some("Error: No API key found for scripted")
        );
        let status = status_json(&spec);
        assert_eq!(status["exitCode"], 3);
        assert_eq!(status["error"], "Error: No API key found for scripted");
    }

    #[tokio::test]
    async fn deadline_times_the_run_out() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = fake(
            dir.path(),
            "echo '{\"type\":\"agent_start\"}'; exec sleep 30",
        );
        spec.deadline = Duration::from_millis(500);
        let outcome = HelperRunner::start(spec.clone())
            .await
            .unwrap()
            .wait()
            .await;
        assert_eq!(outcome.status, RunStatus::TimedOut, "{outcome:#?}");
        assert_eq!(outcome.exit.signal.as_deref(), Some("SIGTERM"));
        assert_eq!(status_json(&spec)["status"], "timedOut");
    }

    #[tokio::test]
    async fn a_detached_process_holding_stdout_does_not_hang_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let script = format!(
            "cat '{}'; setsid sleep 5 & exit 0",
            fixture("pi-1.6.0-hello.jsonl").display()
        );
        let spec = fake(dir.path(), &script);
        let started = Instant::now();
        let outcome = HelperRunner::start(spec).await.unwrap().wait().await;
        assert!(started.elapsed() < Duration::from_secs(4), "{outcome:#?}");
        assert_eq!(outcome.status, RunStatus::Completed, "{outcome:#?}");
        assert_eq!(outcome.summary.final_text, "Hello from the scripted model!");
    }

    #[tokio::test]
    async fn dropping_the_handle_kills_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let spec = fake(dir.path(), "sleep 30 & sleep 30; wait");
        let handle = HelperRunner::start(spec).await.unwrap();
        let pid = handle.pid().unwrap();
        drop(handle);
        let limit = Instant::now() + Duration::from_secs(3);
        while !group_gone(pid) && Instant::now() < limit {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(group_gone(pid), "no orphan after the handle is dropped");
    }

    #[test]
    fn error_lines_table() {
        let long = format!("Error: {}", "x".repeat(600));
        let cases: [(&str, Option<String>); 5] = [
            ("", None),
            ("  \n\n", None),
            (
                "just noise\nmore noise\n",
                Some("just noise\nmore noise".into()),
            ),
            (
                "Warning: a\nError: b\ninfo\nFATAL c\n",
                Some("Error: b\nFATAL c".into()),
            ),
            (&long, Some("x".repeat(500))),
        ];
        for (stderr, want) in cases {
            assert_eq!(error_lines(stderr), want, "{stderr:?}");
        }
    }

    #[test]
    fn status_names_table() {
        let cases = [
            (RunStatus::Queued, "queued", false),
            (RunStatus::Running, "running", false),
            (RunStatus::Completed, "completed", true),
            (RunStatus::Failed, "failed", true),
            (RunStatus::Stopped, "stopped", true),
            (RunStatus::TimedOut, "timedOut", true),
        ];
        for (status, name, terminal) in cases {
            assert_eq!((status.as_str(), status.is_terminal()), (name, terminal));
        }
        assert_eq!(RetryKind::FileDelivery.as_str(), "file-delivery");
    }
}

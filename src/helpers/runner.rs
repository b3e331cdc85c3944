//! Runs one helper as a real child `pi --mode rpc …` and watches it to the end.
//!
//! The child is its own process group (Pi's tools start their own children; a stop must reach
//! them all). Its stdin carries RPC commands — the task as a `prompt`, steering messages, budget
//! aborts, `get_state` probes — written by one writer task fed through a channel, so a slow child
//! never blocks the supervisor. Its stdout is read incrementally by [`EventParser`] into a
//! [`RunSummary`] with live [`Progress`] on a `watch` and a bounded live transcript; stderr is
//! kept as a bounded tail. The run is over when [`SettleWatch`] says Pi has no work left
//! (`agent_settled` on 1.x, a `get_state` probe after `agent_end` on 0.7x); then the runner asks
//! for the session file, closes stdin (both lines exit on EOF) and kills the group if it does not
//! exit within the end grace. One supervisor task per run owns the child; the [`RunHandle`] only
//! holds channels and the shared control state, so waiting, stopping, steering and dropping are
//! all cheap and cancellation-safe. A guard in the supervisor and the handle's `Drop` both SIGKILL
//! the group, so neither a dropped handle nor a runtime shutdown leaves an orphan.
//!
//! The run directory records the run for readers that are not this process (the
//! `get_helper_result` tool after a restart, the dock): `status.json` (merged, crash-safe writes
//! with `updatedAt`), `process.json` (pid, start), `output.txt` (the final text), and by default
//! `session/` (the child's session, so helpers never land in the user's session list).
//!
//! The zero-activity rule only looks at the start of an attempt: a child that prints nothing at
//! all for `idle_timeout` is stuck before its first event, so it is killed and retried once in
//! `--mode json` print mode with the task in a file passed as `@<file>` (RPC mode rejects
//! `@file` arguments; both lines' print modes accept `[@files...]` as the message). That attempt
//! has no stdin channel, so it cannot be steered and a budget abort kills its group. Once events
//! flow, silence is normal (a long `bash` tool call prints nothing) and only the deadline applies.
//!
//! Budgets ([`Budget`](super::budget::Budget)) are stated in the child's system prompt and enforced
//! here: the [`BudgetWatch`] is fed the totals after every event; its steer goes out as an RPC
//! `steer`, its abort as an RPC `abort` (then the normal end, or a kill after the end grace).

use std::collections::VecDeque;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::Context as _;
use nix::sys::signal::Signal;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, sleep_until};
use unipi_widgets::text::truncate_chars;

use super::board::{RunControl, TranscriptEntry};
use super::budget::{BudgetAction, BudgetWatch, Totals};
use super::events::{EventParser, PROMPT_ID, PiEvent, RunSummary, SettleStep, SettleWatch, Usage};
pub use super::run_status::RunStatus;
use super::spec::{RunSpec, SessionMode};
use super::warm::{LaunchKey, Prewarmed, Started};
use crate::bridge::Refusal;
use crate::sys::{
    CurrentGroup, GroupGuard, GroupStop, ProcessGroup, ProcessId, Reach, lock, now_ms,
    sleep_until_some, write_atomic,
};

/// How far the runner's signals go: Pi runs each `bash` tool call in a process group of its
/// own, so a stop must reach the whole tree.
const REACH: Reach = Reach::Tree;

/// How long [`RunHandle::stop`] waits beyond the grace for the run to end.
pub(crate) const STOP_SLACK: Duration = Duration::from_millis(1500);
/// How long the pipes are still read after the child exited.
pub(crate) const PIPE_DRAIN: Duration = Duration::from_secs(2);
/// How long the settled run waits for the `get_state` answer naming its session file.
pub(crate) const SESSION_QUERY_WAIT: Duration = Duration::from_secs(2);
/// The pause before a `get_state` probe is repeated while Pi 0.7x still reports work.
pub const PROBE_PAUSE: Duration = Duration::from_millis(300);
/// The most characters of stderr error lines kept as a failed run's error.
pub(crate) const STDERR_ERROR_CHARS: usize = 500;
/// The most transcript entries kept (the oldest go first).
pub(crate) const TRANSCRIPT_ENTRIES: usize = 2000;
/// The most characters of one tool result in the transcript.
pub(crate) const TRANSCRIPT_RESULT_CHARS: usize = 2000;
/// The most characters of one assistant text in the transcript.
pub(crate) const TRANSCRIPT_TEXT_CHARS: usize = 8000;

/// The file names inside a run directory.
pub(crate) const STATUS_FILE: &str = "status.json";
pub(crate) const PROCESS_FILE: &str = "process.json";
pub(crate) const OUTPUT_FILE: &str = "output.txt";
pub(crate) const PROMPT_FILE: &str = "prompt.md";
/// The `status.json` field naming the workbench that follows the run (`<pid>:<start time>`).
pub(crate) const OWNER_FIELD: &str = "owner";
/// The error of a run stopped because the workbench exited.
pub const STOPPED_AT_EXIT: &str = "stopped: the workbench exited before the run ended";

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
    /// `provider/model` of the latest assistant message.
    pub model: Option<String>,
    /// The latest tool call (`read notes.txt`) or the first words of the latest assistant text.
    pub last_activity_text: Option<String>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub status: RunStatus,
    pub summary: RunSummary,
    pub error: Option<String>,
    pub exit: ExitInfo,
    pub retry: Option<RetryKind>,
    /// The child's session file, when it wrote one.
    pub session_file: Option<PathBuf>,
    /// Why a budget ended the run (`turn budget exceeded: 7 turns (limit 5)`); also the error.
    pub budget_exceeded: Option<String>,
}

/// Starts helper runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct HelperRunner;

/// One run in flight (or ended). Dropping it before the end kills the child's group.
pub struct RunHandle {
    run_dir: PathBuf,
    progress: watch::Receiver<Progress>,
    outcome: watch::Receiver<Option<RunOutcome>>,
    stop: Arc<watch::Sender<Option<StopKind>>>,
    shared: Arc<Conversation>,
    /// The live child's group, cleared once it is reaped: what `Drop` kills.
    group: Arc<CurrentGroup>,
    kill_grace: Duration,
}

impl HelperRunner {
    /// Writes `status.json` (queued), spawns the child, queues the task as its first RPC
    /// command and returns at once; the run continues in a supervisor task (so this must be
    /// called inside the tokio runtime). Errors only when the run directory cannot be written
    /// or the child cannot be spawned.
    pub async fn start(spec: RunSpec) -> anyhow::Result<RunHandle> {
        Self::launch(spec, None).await
    }

    /// [`HelperRunner::start`] with a process started ahead of the task (see [`Prewarmed`]):
    /// the task goes to it as the first RPC command, as to a fresh child. It must have been
    /// started with `spec`'s launch; one that was not, or that died meanwhile, is discarded
    /// and the run starts cold.
    pub async fn start_warm(spec: RunSpec, mut warm: Prewarmed) -> anyhow::Result<RunHandle> {
        if warm.key() != &LaunchKey::rpc(&spec) || !warm.alive() {
            tracing::info!("helper: the warm process does not fit this run; starting cold");
            warm.discard().await;
            return Self::start(spec).await;
        }
        Self::launch(spec, Some(warm)).await
    }

    async fn launch(spec: RunSpec, warm: Option<Prewarmed>) -> anyhow::Result<RunHandle> {
        std::fs::create_dir_all(&spec.run_dir)
            .with_context(|| format!("create the run directory {}", spec.run_dir.display()))?;
        if let Some(dir) = spec.session.new_session_dir(&spec.run_dir) {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("create the session directory {}", dir.display()))?;
        }
        let mut record = Record::new(&spec.run_dir);
        record
            .merge(&json!({
                "status": RunStatus::Queued.as_str(),
                "agent": spec.agent.name,
                "createdAt": now_ms(),
                // The workbench that follows the run: a later session tells a run whose owner
                // died (and left it `running`) from one another live session still follows.
                OWNER_FIELD: ProcessId::current().map(ProcessId::to_text),
            }))
            .await?;
        let started = match warm.and_then(Prewarmed::into_started) {
            Some(started) => started,
            None => LaunchKey::rpc(&spec).spawn(true)?,
        };
        let child = with_task(started, &spec);
        let group = Arc::new(CurrentGroup::new(Some(child.group), REACH));
        // Armed before the supervisor first runs: a future dropped unpolled still kills it.
        let guard = GroupGuard::over(group.clone());
        let shared = Arc::new(Conversation::default());
        shared.push(TranscriptEntry::User(spec.prompt.clone()));
        if let Some(commands) = &child.commands {
            shared.open_steering(commands.clone());
        }
        let (progress_tx, progress) = watch::channel(Progress::default());
        let (outcome_tx, outcome) = watch::channel(None);
        let (stop, stop_rx) = watch::channel(None);
        let stop = Arc::new(stop);
        let handle = RunHandle {
            run_dir: spec.run_dir.clone(),
            progress,
            outcome,
            stop,
            shared: shared.clone(),
            group: group.clone(),
            kill_grace: spec.kill_grace,
        };
        let supervisor = Supervisor {
            spec,
            record,
            group,
            shared,
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
        self.group.get().map(|group| group.raw().unsigned_abs())
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
                session_file: None,
                budget_exceeded: None,
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

    /// Sends `message` to the child as an RPC `steer`: Pi delivers it before its next model
    /// call. The error says why it cannot (the run ended, the attempt runs in print mode).
    pub fn steer(&self, message: String) -> Result<(), Refusal> {
        self.shared.steer(message)
    }

    /// The transcript so far (bounded to the last [`TRANSCRIPT_ENTRIES`] entries).
    pub fn transcript(&self) -> Vec<TranscriptEntry> {
        self.shared.transcript()
    }

    /// The run's controls for the helper board. They stay valid after the run ends: steering
    /// then errors, stopping does nothing, the transcript stays readable.
    pub fn control(&self) -> Arc<dyn RunControl> {
        Arc::new(Control {
            shared: self.shared.clone(),
            stop: self.stop.clone(),
        })
    }
}

impl Drop for RunHandle {
    fn drop(&mut self) {
        if self.outcome.borrow().is_some() {
            return;
        }
        request(&self.stop, StopKind::Dropped);
        self.group.kill_now();
    }
}

/// [`RunControl`] over a run's shared state; holds no process.
struct Control {
    shared: Arc<Conversation>,
    stop: Arc<watch::Sender<Option<StopKind>>>,
}

impl RunControl for Control {
    fn steer(&self, message: String) -> Result<(), Refusal> {
        self.shared.steer(message)
    }

    fn stop(&self) {
        request(&self.stop, StopKind::User);
    }

    fn stop_at_exit(&self) {
        request(&self.stop, StopKind::Exit);
    }

    fn transcript(&self) -> Vec<TranscriptEntry> {
        self.shared.transcript()
    }
}

/// Who asked for the stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopKind {
    User,
    Dropped,
    Deadline,
    /// The workbench is exiting.
    Exit,
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

/// What the writer task does with the child's stdin.
enum StdinCommand {
    /// Write this line (an LF is added).
    Line(String),
    /// Close stdin: both Pi lines shut down on EOF.
    Close,
}

/// The state the handle, the board's control and the supervisor share.
#[derive(Default)]
struct Conversation {
    state: Mutex<ConversationLog>,
}

#[derive(Default)]
struct ConversationLog {
    /// The live attempt's stdin channel; `None` when steering is not possible.
    commands: Option<mpsc::UnboundedSender<StdinCommand>>,
    /// Why steering is not possible when `commands` is `None`.
    no_steering: Option<String>,
    transcript: VecDeque<TranscriptEntry>,
}

impl Conversation {
    fn steer(&self, message: String) -> Result<(), Refusal> {
        let mut state = self.lock();
        let Some(commands) = &state.commands else {
            return Err(state
                .no_steering
                .clone()
                .unwrap_or_else(|| "the helper is not running".to_string())
                .into());
        };
        let line = json!({ "type": "steer", "message": message }).to_string();
        commands
            .send(StdinCommand::Line(line))
            .map_err(|_| "the helper's input is closed".to_string())?;
        push_bounded(&mut state.transcript, TranscriptEntry::User(message));
        Ok(())
    }

    fn transcript(&self) -> Vec<TranscriptEntry> {
        self.lock().transcript.iter().cloned().collect()
    }

    fn push(&self, entry: TranscriptEntry) {
        push_bounded(&mut self.lock().transcript, entry);
    }

    fn open_steering(&self, commands: mpsc::UnboundedSender<StdinCommand>) {
        let mut state = self.lock();
        state.commands = Some(commands);
        state.no_steering = None;
    }

    fn close_steering(&self, why: &str) {
        let mut state = self.lock();
        state.commands = None;
        state.no_steering = Some(why.to_string());
    }

    fn lock(&self) -> MutexGuard<'_, ConversationLog> {
        lock(&self.state)
    }
}

fn push_bounded(transcript: &mut VecDeque<TranscriptEntry>, entry: TranscriptEntry) {
    if transcript.len() >= TRANSCRIPT_ENTRIES {
        transcript.pop_front();
    }
    transcript.push_back(entry);
}

/// A spawned child and its pipes.
struct Spawned {
    child: Child,
    group: ProcessGroup,
    pid: u32,
    /// The stdin channel of an RPC child (the task is already queued on it).
    commands: Option<mpsc::UnboundedSender<StdinCommand>>,
    stdout: ChildStdout,
    stderr: ChildStderr,
}

struct Supervisor {
    spec: RunSpec,
    record: Record,
    group: Arc<CurrentGroup>,
    shared: Arc<Conversation>,
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
    /// It ran in RPC mode (not the print-mode retry).
    rpc: bool,
    /// Pi said the run is over (RPC mode).
    settled: bool,
    /// Pi refused the task.
    prompt_error: Option<String>,
    /// A budget abort ended it.
    budget_exceeded: Option<String>,
    session_file: Option<PathBuf>,
}

/// Why the print-mode retry cannot be steered.
const NO_STEERING_IN_PRINT_MODE: &str = "steering is unavailable: this attempt runs in print \
                                         mode (the task was delivered through a file after a \
                                         silent start)";

/// The child and the pipes an attempt's loop reads; apart from [`RunningAttempt`], so the
/// `select!`'s reads borrow these while its arms change the state.
struct Pipes {
    child: Child,
    stdout: ChildStdout,
    stderr: ChildStderr,
    out_buf: Vec<u8>,
    err_buf: Vec<u8>,
}

/// One attempt's state: what its events said so far, its timers and how far it has ended.
struct RunningAttempt {
    group: ProcessGroup,
    pid: u32,
    /// The stdin channel (RPC mode); `None` in print mode and once stdin is closed.
    commands: Option<mpsc::UnboundedSender<StdinCommand>>,
    rpc: bool,
    parser: EventParser,
    summary: RunSummary,
    settle: SettleWatch,
    budget: BudgetWatch,
    model: Option<String>,
    activity_text: Option<String>,
    prompt_error: Option<String>,
    budget_exceeded: Option<String>,
    stderr_tail: StderrTail,
    stdout_open: bool,
    stderr_open: bool,
    /// The leader's exit, once reaped.
    exit: Option<std::io::Result<ExitStatus>>,
    /// It printed something on stdout (the zero-activity rule no longer applies).
    seen_output: bool,
    /// It printed nothing for the idle timeout and was killed.
    idle: bool,
    /// Who asked it to stop, if anyone did.
    stop: Option<StopKind>,
    /// The SIGTERM → grace → SIGKILL stop under way, if any.
    stopping: GroupStop,
    /// When a child that printed nothing yet is taken for stuck.
    idle_at: Instant,
    /// The run's deadline (counted from the run's start, not the attempt's).
    deadline: Instant,
    /// When to stop reading the pipes after the leader exited.
    drain_until: Option<Instant>,
    /// When to repeat a `get_state` probe.
    probe_at: Option<Instant>,
    /// When to close stdin even without the session file's answer.
    close_at: Option<Instant>,
    /// When to kill the group: it did not exit after EOF, or did not end after an abort.
    end_kill_at: Option<Instant>,
}

impl RunningAttempt {
    /// The leader has not been reaped, or a pipe is still open.
    fn running(&self) -> bool {
        self.exit.is_none() || self.stdout_open || self.stderr_open
    }

    fn send(&self, line: String) {
        if let Some(commands) = &self.commands {
            // A closed channel means the writer hit a dead pipe; the exit tells the rest.
            let _ = commands.send(StdinCommand::Line(line));
        }
    }

    /// Closes stdin and gives the child `grace` to exit.
    fn close(&mut self, grace: Duration) {
        if let Some(commands) = self.commands.take() {
            let _ = commands.send(StdinCommand::Close);
            self.end_kill_at = Some(Instant::now() + grace);
        }
        self.close_at = None;
    }

    fn kill(&self) {
        REACH.signal(self.group, Signal::SIGKILL);
    }

    fn totals(&self) -> Totals {
        Totals {
            turns: self.summary.turns,
            tool_uses: u32::try_from(self.summary.tool_uses.len()).unwrap_or(u32::MAX),
            tokens: self.summary.usage.total,
            cost: self.summary.usage.cost,
        }
    }

    /// The zero-activity rule: only a child that printed nothing yet and still runs.
    fn may_go_idle(&self) -> bool {
        !self.seen_output && !self.idle && self.exit.is_none()
    }

    fn on_stderr(&mut self, bytes: Option<&[u8]>) {
        match bytes {
            Some(bytes) => self.stderr_tail.push(bytes),
            None => self.stderr_open = false,
        }
    }

    fn on_idle(&mut self) {
        self.idle = true;
        self.kill();
    }

    fn on_probe_due(&mut self) {
        self.probe_at = None;
        if let SettleStep::Probe { command, .. } = self.settle.probe() {
            self.send(command);
        }
    }

    fn on_end_grace_over(&mut self) {
        self.end_kill_at = None;
        tracing::debug!(
            "helper {}: did not end within the end grace; killed",
            self.pid
        );
        self.kill();
    }

    /// How the attempt ended, once the loop is over.
    fn ended(self) -> Attempt {
        let (exit, wait_error) = exit_info(self.pid, self.exit);
        Attempt {
            exit,
            wait_error,
            stderr_tail: self.stderr_tail.text(),
            stop: self.stop,
            idle: self.idle,
            rpc: self.rpc,
            settled: self.settle.is_settled(),
            session_file: self.settle.session_file().map(PathBuf::from),
            summary: self.summary,
            prompt_error: self.prompt_error,
            budget_exceeded: self.budget_exceeded,
        }
    }
}

/// The exit of a reaped leader (or the error waiting for it); nothing when it was not reaped.
fn exit_info(pid: u32, exit: Option<std::io::Result<ExitStatus>>) -> (ExitInfo, Option<String>) {
    match exit {
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
    }
}

impl Supervisor {
    async fn run(mut self, first: Spawned, guard: GroupGuard) -> RunOutcome {
        let mut retry = None;
        let mut spawned = first;
        let attempt = loop {
            self.group.set(spawned.group);
            self.running(spawned.pid, retry).await;
            let attempt = self.attempt(spawned).await;
            if !attempt.idle || retry.is_some() || attempt.stop.is_some() {
                break attempt;
            }
            retry = Some(RetryKind::FileDelivery);
            self.shared.push(TranscriptEntry::Note(format!(
                "no output for {:?}; retrying with the task delivered through a file",
                self.spec.idle_timeout
            )));
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
        self.shared.close_steering("the run has ended");
        let mut outcome = outcome_of(attempt, retry, self.spec.idle_timeout);
        if outcome.session_file.is_none() {
            outcome.session_file = self.find_session_file();
        }
        self.finish(&outcome).await;
        outcome
    }

    async fn running(&mut self, pid: u32, retry: Option<RetryKind>) {
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

    /// Writes the prompt to the run directory and respawns in print mode with `@<file>` as the
    /// message (RPC mode rejects `@file` arguments).
    fn file_delivery(&self) -> anyhow::Result<Spawned> {
        let path = self.spec.run_dir.join(PROMPT_FILE);
        std::fs::write(&path, &self.spec.prompt)
            .with_context(|| format!("write the task file {}", path.display()))?;
        let mut args = self.spec.budgeted_agent().pi_args("");
        // `pi_args` ends with the message; the file takes its place.
        args.pop();
        args.push(format!("@{}", path.display()));
        self.shared.close_steering(NO_STEERING_IN_PRINT_MODE);
        spawn(&self.spec, &args, false)
    }

    /// Runs one child to its end: reads its pipes, keeps its timers and carries out stops. Each
    /// arm hands what happened to one method.
    async fn attempt(&mut self, spawned: Spawned) -> Attempt {
        let (mut pipes, mut live) = self.begin_attempt(spawned);
        while live.running() {
            tokio::select! {
                read = pipes.stdout.read(&mut pipes.out_buf), if live.stdout_open => {
                    self.on_stdout(&mut live, read_bytes(read, &pipes.out_buf));
                }
                read = pipes.stderr.read(&mut pipes.err_buf), if live.stderr_open => {
                    live.on_stderr(read_bytes(read, &pipes.err_buf));
                }
                status = pipes.child.wait(), if live.exit.is_none() => self.on_exit(&mut live, status),
                // A process that left the group (`setsid`) may hold the pipes open forever.
                () = sleep_until_some(live.drain_until) => self.on_drain_over(&mut live),
                () = sleep_until(live.idle_at), if live.may_go_idle() => live.on_idle(),
                () = sleep_until_some(live.probe_at) => live.on_probe_due(),
                () = sleep_until_some(live.close_at) => live.close(self.spec.end_grace),
                () = sleep_until_some(live.end_kill_at), if live.exit.is_none() => {
                    live.on_end_grace_over();
                }
                () = sleep_until(live.deadline), if live.stop.is_none() && live.exit.is_none() => {
                    self.on_deadline(&mut live);
                }
                _ = live.stopping.finished() => {}
                changed = self.stop.changed(), if live.stop.is_none() => {
                    self.on_stop_request(&mut live, changed.is_ok());
                }
            }
        }
        self.group.clear();
        live.ended()
    }

    /// The attempt's state at its start; a stop asked for before it starts begins at once.
    fn begin_attempt(&self, spawned: Spawned) -> (Pipes, RunningAttempt) {
        let Spawned {
            child,
            group,
            pid,
            commands,
            stdout,
            stderr,
        } = spawned;
        let pipes = Pipes {
            child,
            stdout,
            stderr,
            out_buf: vec![0u8; 64 * 1024],
            err_buf: vec![0u8; 8 * 1024],
        };
        let mut live = RunningAttempt {
            group,
            pid,
            rpc: commands.is_some(),
            commands,
            parser: EventParser::new(),
            summary: RunSummary::default(),
            settle: SettleWatch::new(),
            budget: BudgetWatch::new(self.spec.budget),
            model: None,
            activity_text: None,
            prompt_error: None,
            budget_exceeded: None,
            stderr_tail: StderrTail::default(),
            stdout_open: true,
            stderr_open: true,
            exit: None,
            seen_output: false,
            idle: false,
            stop: *self.stop.borrow(),
            stopping: GroupStop::default(),
            idle_at: Instant::now() + self.spec.idle_timeout,
            deadline: self.started + self.spec.deadline,
            drain_until: None,
            probe_at: None,
            close_at: None,
            end_kill_at: None,
        };
        if live.stop.is_some() {
            self.begin_stop(&mut live);
        }
        (pipes, live)
    }

    /// Output (`Some`) or the end of stdout (`None`).
    fn on_stdout(&self, live: &mut RunningAttempt, bytes: Option<&[u8]>) {
        match bytes {
            Some(bytes) => {
                live.seen_output = true;
                let events = live.parser.feed(bytes);
                self.on_events(live, events);
                self.publish(live);
            }
            None => {
                live.stdout_open = false;
                let events = live.parser.finish();
                self.on_events(live, events);
            }
        }
    }

    fn on_exit(&self, live: &mut RunningAttempt, status: std::io::Result<ExitStatus>) {
        live.exit = Some(status);
        // The leader is gone; whatever it left in its group goes too, which also closes the
        // pipes those processes held.
        if live.group.alive() {
            live.kill();
        }
        // Nothing of the group runs any more: `Drop` must not signal a reused id.
        self.group.clear();
        live.commands = None;
        self.shared.close_steering("the run has ended");
        live.drain_until = Some(Instant::now() + PIPE_DRAIN);
    }

    /// The pipes stayed open [`PIPE_DRAIN`] after the exit: stop reading them.
    fn on_drain_over(&self, live: &mut RunningAttempt) {
        if live.stdout_open {
            tracing::debug!(
                "helper {}: stdout still open after exit; not read",
                live.pid
            );
            let events = live.parser.finish();
            self.on_events(live, events);
        }
        (live.stdout_open, live.stderr_open) = (false, false);
    }

    fn on_deadline(&self, live: &mut RunningAttempt) {
        live.stop = Some(StopKind::Deadline);
        self.shared.push(TranscriptEntry::Note(
            "run deadline reached; stopping".into(),
        ));
        self.begin_stop(live);
    }

    /// The handle or the board asked for a stop (`open` false: every sender is gone).
    fn on_stop_request(&mut self, live: &mut RunningAttempt, open: bool) {
        live.stop = if open {
            *self.stop.borrow_and_update()
        } else {
            // Every sender is gone without a request: treat it as dropped.
            Some(StopKind::Dropped)
        };
        if live.stop == Some(StopKind::Dropped) {
            live.kill();
        } else if live.stop.is_some() {
            self.shared
                .push(TranscriptEntry::Note("stop requested".into()));
            self.begin_stop(live);
        }
    }

    /// Folds events into the summary, the transcript and the end and budget watches, and
    /// carries out what they ask.
    fn on_events(&self, live: &mut RunningAttempt, events: Vec<PiEvent>) {
        for event in events {
            live.summary.apply(&event);
            self.note_activity(live, &event);
            if live.rpc {
                self.on_settle_step(live, &event);
            }
            if !live.settle.is_settled() && live.budget_exceeded.is_none() {
                let totals = live.totals();
                if let Some(action) = live.budget.observe(&totals) {
                    self.on_budget(live, action);
                }
            }
        }
    }

    fn on_settle_step(&self, live: &mut RunningAttempt, event: &PiEvent) {
        let was_settled = live.settle.is_settled();
        match live.settle.on_event(event) {
            SettleStep::Nothing => {}
            SettleStep::Probe { command, .. } => live.send(command),
            SettleStep::ProbeLater => live.probe_at = Some(Instant::now() + PROBE_PAUSE),
            SettleStep::Settled => {
                self.shared.close_steering("the run has ended");
                live.probe_at = None;
                if live.settle.session_file().is_some() {
                    live.close(self.spec.end_grace);
                } else {
                    let query = json!({ "id": "session", "type": "get_state" }).to_string();
                    live.send(query);
                    live.close_at = Some(Instant::now() + SESSION_QUERY_WAIT);
                }
            }
            SettleStep::PromptFailed(error) => {
                self.shared.push(TranscriptEntry::Note(format!(
                    "Pi refused the task: {error}"
                )));
                self.shared.close_steering("the helper refused the task");
                live.prompt_error = Some(error);
                live.close(self.spec.end_grace);
            }
        }
        // The answer to the settled run's session query: nothing more to ask.
        if was_settled && matches!(event, PiEvent::Response(r) if r.command == "get_state") {
            live.close(self.spec.end_grace);
        }
    }

    fn on_budget(&self, live: &mut RunningAttempt, action: BudgetAction) {
        match action {
            BudgetAction::Steer(message) => {
                self.shared.push(TranscriptEntry::Note(
                    "budget reached; asking the helper for its final answer".to_string(),
                ));
                if live.commands.is_some() {
                    live.send(json!({ "type": "steer", "message": message }).to_string());
                    self.shared.push(TranscriptEntry::User(message));
                } else {
                    self.shared.push(TranscriptEntry::Note(
                        "the print-mode attempt cannot be steered".to_string(),
                    ));
                }
            }
            BudgetAction::Abort(reason) => {
                self.shared.push(TranscriptEntry::Note(format!(
                    "{reason}; aborting the helper"
                )));
                if live.commands.is_some() {
                    live.send(json!({ "type": "abort" }).to_string());
                    live.end_kill_at = Some(Instant::now() + self.spec.end_grace);
                } else {
                    live.kill();
                }
                live.budget_exceeded = Some(reason);
            }
        }
    }

    /// The transcript and the activity shown in progress.
    fn note_activity(&self, live: &mut RunningAttempt, event: &PiEvent) {
        match event {
            PiEvent::MessageEnd(message) if message.role == "assistant" => {
                if message.model.is_some() {
                    live.model.clone_from(&message.model);
                }
                let text = message.text.trim();
                if !text.is_empty() {
                    live.activity_text = Some(first_words(text));
                    self.shared.push(TranscriptEntry::Assistant(truncate_chars(
                        text,
                        TRANSCRIPT_TEXT_CHARS,
                    )));
                }
            }
            PiEvent::ToolStart { tool, args, .. } => {
                live.activity_text = Some(format!("{tool} {args}").trim().to_string());
                self.shared.push(TranscriptEntry::ToolCall {
                    name: tool.clone(),
                    args: args.clone(),
                });
            }
            PiEvent::ToolEnd {
                tool,
                is_error,
                result,
                ..
            } => self.shared.push(TranscriptEntry::ToolResult {
                name: tool.clone(),
                text: truncate_chars(result, TRANSCRIPT_RESULT_CHARS),
                is_error: *is_error,
            }),
            PiEvent::Response(response) if !response.success && response.command == "steer" => {
                self.shared.push(TranscriptEntry::Note(format!(
                    "steering failed: {}",
                    response.error.as_deref().unwrap_or("no reason given")
                )));
            }
            _ => {}
        }
    }

    /// SIGTERM to the tree, SIGKILL after the kill grace, beside the attempt's other work.
    fn begin_stop(&self, live: &mut RunningAttempt) {
        live.stopping.start(live.group, self.spec.kill_grace, REACH);
    }

    fn publish(&self, live: &RunningAttempt) {
        let summary = &live.summary;
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
            model: live.model.clone(),
            last_activity_text: live.activity_text.clone(),
        });
    }

    /// The newest `.jsonl` in the directory where this run's new session lands, or the resumed
    /// file: for the print-mode retry, and when Pi did not answer `get_state`.
    fn find_session_file(&self) -> Option<PathBuf> {
        let dir = match &self.spec.session {
            SessionMode::Resume(file) => return file.exists().then(|| file.clone()),
            other => other.new_session_dir(&self.spec.run_dir)?,
        };
        std::fs::read_dir(dir)
            .ok()?
            .filter_map(Result::ok)
            .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "jsonl"))
            .filter_map(|entry| Some((entry.metadata().ok()?.modified().ok()?, entry.path())))
            .max()
            .map(|(_, path)| path)
    }

    async fn finish(&mut self, outcome: &RunOutcome) {
        let output = self.spec.run_dir.join(OUTPUT_FILE);
        let text = outcome.summary.final_text.clone().into_bytes();
        if let Err(err) = write_durable(output, text).await {
            tracing::warn!("{err:#}");
        }
        let mut fields = json!({
            "status": outcome.status.as_str(),
            "endedAt": now_ms(),
            "exitCode": outcome.exit.code,
            "signal": outcome.exit.signal,
            "error": outcome.error,
            "turns": outcome.summary.turns,
            "toolUses": outcome.summary.tool_uses.len(),
            "usage": outcome.summary.usage,
            "sessionFile": outcome.session_file.as_ref().map(|path| path.display().to_string()),
            "budgetExceeded": outcome.budget_exceeded,
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
        rpc,
        settled,
        prompt_error,
        budget_exceeded,
        session_file,
    } = attempt;
    let stderr_error = error_lines(&stderr_tail);
    // A settled RPC run is over whatever the exit (a kill after EOF changes nothing); a child
    // that exits by itself is over only when its events said so.
    let ended = settled || (exit.code == Some(0) && (!rpc || summary.finished));
    let (status, error) = match stop {
        Some(StopKind::User) => (RunStatus::Stopped, Some("stopped".to_string())),
        Some(StopKind::Exit) => (RunStatus::Stopped, Some(STOPPED_AT_EXIT.to_string())),
        Some(StopKind::Dropped) => (
            RunStatus::Stopped,
            Some("stopped: the run's owner went away".to_string()),
        ),
        Some(StopKind::Deadline) => (
            RunStatus::TimedOut,
            Some("run deadline reached".to_string()),
        ),
        None if budget_exceeded.is_some() => (RunStatus::Failed, budget_exceeded.clone()),
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
        None if prompt_error.is_some() => (RunStatus::Failed, prompt_error),
        None if ended && summary.error.is_none() => (RunStatus::Completed, None),
        None if settled => (RunStatus::Failed, summary.error.clone()),
        None if rpc && exit.code == Some(0) && summary.error.is_none() => (
            RunStatus::Failed,
            Some(
                stderr_error
                    .unwrap_or_else(|| "the helper exited before its run ended".to_string()),
            ),
        ),
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
        session_file,
        budget_exceeded,
    }
}

/// The first words of an assistant text for the activity line: at most 8 words and 60 chars.
fn first_words(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().take(8).collect();
    let more = text.split_whitespace().count() > words.len();
    let joined = words.join(" ");
    let short = truncate_chars(&joined, 60);
    if more && short == joined {
        format!("{joined}…")
    } else {
        short
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

/// The bytes a pipe read gave; `None` at its end (or a read error, which ends it as well).
fn read_bytes(read: std::io::Result<usize>, buf: &[u8]) -> Option<&[u8]> {
    match read {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(&buf[..n]),
    }
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
        tokio::task::spawn_blocking(move || merge_status_file(&path, &fields))
            .await
            .context("the status writer panicked")?
    }
}

/// Merges `fields` onto the `status.json` at `path` (what is there stays unless overwritten),
/// stamps `updatedAt` and writes it crash-safely.
pub(crate) fn merge_status_file(path: &Path, fields: &Value) -> anyhow::Result<()> {
    let mut current: Map<String, Value> = std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    if let Value::Object(fields) = fields {
        current.extend(fields.clone());
    }
    current.insert("updatedAt".to_string(), json!(now_ms()));
    let bytes =
        serde_json::to_vec_pretty(&Value::Object(current)).context("serialize status.json")?;
    write_atomic(path, &bytes).context("Durable file operation failed")
}

async fn write_durable(path: PathBuf, bytes: Vec<u8>) -> anyhow::Result<()> {
    tokio::task::spawn_blocking(move || write_atomic(&path, &bytes))
        .await
        .context("the file writer panicked")?
        .context("Durable file operation failed")
}

/// Spawns `program leading_args session_args args` in its own group; with `rpc`, stdin is a
/// pipe whose writer task gets the task as the first command.
fn spawn(spec: &RunSpec, args: &[String], rpc: bool) -> anyhow::Result<Spawned> {
    let started = LaunchKey::with_args(spec, args).spawn(rpc)?;
    Ok(with_task(started, spec))
}

/// A spawned child with its stdin (if it has one) taken over by a writer task that has the task
/// queued as the first RPC command.
fn with_task(started: Started, spec: &RunSpec) -> Spawned {
    let commands = started.stdin.map(|stdin| {
        let commands = start_writer(stdin);
        let prompt = json!({ "id": PROMPT_ID, "type": "prompt", "message": spec.prompt });
        let _ = commands.send(StdinCommand::Line(prompt.to_string()));
        commands
    });
    Spawned {
        child: started.child,
        group: started.group,
        pid: started.pid,
        commands,
        stdout: started.stdout,
        stderr: started.stderr,
    }
}

/// The task that owns the child's stdin and writes the commands it is sent, in order. It ends
/// (closing stdin) on [`StdinCommand::Close`], when every sender is gone, or on a dead pipe.
fn start_writer(mut stdin: ChildStdin) -> mpsc::UnboundedSender<StdinCommand> {
    let (commands, mut queue) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(command) = queue.recv().await {
            let StdinCommand::Line(mut line) = command else {
                break;
            };
            line.push('\n');
            if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
                break;
            }
        }
    });
    commands
}

#[cfg(test)]
// A panic is how a test reports failure; the workspace denies unwrap for non-test code.
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::helpers::agents::AgentCatalog;
    use crate::helpers::budget::Budget;
    use crate::test_table::check_table;

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

    /// A fresh temporary directory (kept for as long as the test holds it) and a [`fake`] spec
    /// in it.
    fn temp_fake(script: &str) -> (tempfile::TempDir, RunSpec) {
        let dir = tempfile::tempdir().unwrap();
        let spec = fake(dir.path(), script);
        (dir, spec)
    }

    /// Like [`temp_fake`], with a [`fake_rpc`] spec.
    fn temp_fake_rpc(mode: &str, legacy: bool) -> (tempfile::TempDir, RunSpec) {
        let dir = tempfile::tempdir().unwrap();
        let spec = fake_rpc(dir.path(), mode, legacy);
        (dir, spec)
    }

    /// A script that replays the fixture `name` (Pi's JSON stream), then runs `then`.
    fn replay(name: &str, then: &str) -> String {
        format!("cat '{}'; {then}", fixture(name).display())
    }

    /// Starts the run of `spec`.
    async fn start(spec: &RunSpec) -> RunHandle {
        HelperRunner::start(spec.clone()).await.unwrap()
    }

    /// Starts the run of `spec` and waits for its outcome.
    async fn run(spec: &RunSpec) -> RunOutcome {
        start(spec).await.wait().await
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
        let (_dir, spec) = temp_fake(&replay(
            "pi-1.6.0-explore.jsonl",
            "echo 'Warning: noise' >&2",
        ));
        let mut handle = start(&spec).await;
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
        let mut handle = start(&spec).await;
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
        let (_dir, mut spec) = temp_fake("sleep 30");
        spec.idle_timeout = Duration::from_millis(300);
        let outcome = run(&spec).await;
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
        // The ignored disposition is inherited: the `sleep` in the group ignores SIGTERM too.
        let (_dir, spec) =
            temp_fake("trap '' TERM; echo '{\"type\":\"agent_start\"}'; sleep 30 & sleep 30; wait");
        let mut handle = start(&spec).await;
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
        let (_dir, spec) = temp_fake(
            "echo '{\"type\":\"agent_start\"}'; echo 'Warning: deprecated' >&2; \
             echo 'Error: No API key found for scripted' >&2; exit 3",
        );
        let outcome = run(&spec).await;
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
        let (_dir, mut spec) = temp_fake("echo '{\"type\":\"agent_start\"}'; exec sleep 30");
        spec.deadline = Duration::from_millis(500);
        let outcome = run(&spec).await;
        assert_eq!(outcome.status, RunStatus::TimedOut, "{outcome:#?}");
        assert_eq!(outcome.exit.signal.as_deref(), Some("SIGTERM"));
        assert_eq!(status_json(&spec)["status"], "timedOut");
    }

    #[tokio::test]
    async fn a_detached_process_holding_stdout_does_not_hang_the_run() {
        let (_dir, spec) = temp_fake(&replay("pi-1.6.0-hello.jsonl", "setsid sleep 5 & exit 0"));
        let started = Instant::now();
        let outcome = run(&spec).await;
        assert!(started.elapsed() < Duration::from_secs(4), "{outcome:#?}");
        assert_eq!(outcome.status, RunStatus::Completed, "{outcome:#?}");
        assert_eq!(outcome.summary.final_text, "Hello from the scripted model!");
    }

    #[tokio::test]
    async fn dropping_the_handle_kills_the_group() {
        let (_dir, spec) = temp_fake("sleep 30 & sleep 30; wait");
        let handle = start(&spec).await;
        let pid = handle.pid().unwrap();
        drop(handle);
        crate::test_wait::eventually(
            "no orphan after the handle is dropped",
            Duration::from_secs(3),
            || group_gone(pid),
        )
        .await;
        assert!(group_gone(pid), "no orphan after the handle is dropped");
    }

    /// A spec running the Python fake RPC child in `mode` (see `tests/fixtures/bin/`), its
    /// stdin log at `<dir>/stdin.log`, with short timings.
    fn fake_rpc(dir: &Path, mode: &str, legacy: bool) -> RunSpec {
        let explore = AgentCatalog::builtin().resolve("explore").unwrap();
        let mut spec = RunSpec::new(
            "python3",
            explore,
            "Summarize the notes, please.",
            dir,
            dir.join("run"),
        );
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bin/fake-pi-rpc.py");
        spec.leading_args = vec![script.display().to_string(), mode.to_string()];
        if legacy {
            spec.leading_args.push("--legacy".to_string());
        }
        spec.env = vec![(
            "FAKE_PI_LOG".to_string(),
            dir.join("stdin.log").display().to_string(),
        )];
        spec.idle_timeout = Duration::from_secs(10);
        spec.kill_grace = Duration::from_millis(500);
        spec.end_grace = Duration::from_secs(2);
        spec
    }

    /// What the fake child logged: its arguments, then every stdin line as JSON.
    fn child_log(dir: &Path) -> (Vec<String>, Vec<Value>) {
        let text = std::fs::read_to_string(dir.join("stdin.log")).unwrap_or_default();
        let mut argv = Vec::new();
        let mut lines = Vec::new();
        for line in text.lines() {
            match line.strip_prefix("ARGV ") {
                Some(json) => argv = serde_json::from_str(json).unwrap(),
                None => lines.push(serde_json::from_str(line).unwrap()),
            }
        }
        (argv, lines)
    }

    async fn wait_for_turns(handle: &RunHandle, turns: u32) {
        let mut progress = handle.progress();
        tokio::time::timeout(
            Duration::from_secs(10),
            progress.wait_for(|now| now.turns >= turns),
        )
        .await
        .expect("the fake took turns in time")
        .unwrap();
    }

    #[tokio::test]
    async fn rpc_prompt_events_settle_on_both_lines() {
        for legacy in [false, true] {
            let (dir, spec) = temp_fake_rpc("answer", legacy);
            let mut handle = start(&spec).await;
            let progress = handle.progress();
            let outcome = handle.wait().await;
            let context = format!("legacy {legacy}: {outcome:#?}");
            assert_eq!(outcome.status, RunStatus::Completed, "{context}");
            assert_eq!(outcome.error, None, "{context}");
            assert_eq!(
                outcome.summary.final_text, "Done: Summarize the notes, please.",
                "{context}"
            );
            // It exited on stdin EOF, not by a kill.
            assert_eq!(outcome.exit.code, Some(0), "{context}");
            let session = spec.run_dir.join("session/fake-session.jsonl");
            assert_eq!(outcome.session_file.as_deref(), Some(session.as_path()));
            let status = status_json(&spec);
            assert_eq!(status["status"], "completed", "{status}");
            assert_eq!(status["sessionFile"], session.display().to_string());

            let (argv, stdin) = child_log(dir.path());
            assert_eq!(
                argv[..2],
                [
                    "--session-dir".to_string(),
                    spec.run_dir.join("session").display().to_string()
                ]
            );
            assert!(
                argv.contains(&"rpc".to_string()) && !argv.contains(&"-p".to_string()),
                "{argv:?}"
            );
            assert_eq!(
                stdin[0],
                json!({"id": "task", "type": "prompt", "message": "Summarize the notes, please."})
            );
            assert!(
                stdin[1..]
                    .iter()
                    .all(|command| command["type"] == "get_state"),
                "only state queries follow the task: {stdin:?}"
            );

            let live = progress.borrow().clone();
            assert_eq!(live.model.as_deref(), Some("fake/fake-model"), "{context}");
            assert_eq!(
                live.last_activity_text.as_deref(),
                Some("Done: Summarize the notes, please."),
                "{context}"
            );
            assert_eq!(
                handle.transcript(),
                [
                    TranscriptEntry::User("Summarize the notes, please.".into()),
                    TranscriptEntry::Assistant("Turn 1.".into()),
                    TranscriptEntry::ToolCall {
                        name: "bash".into(),
                        args: "echo 1".into()
                    },
                    TranscriptEntry::ToolResult {
                        name: "bash".into(),
                        text: "out 1".into(),
                        is_error: false
                    },
                    TranscriptEntry::Assistant("Done: Summarize the notes, please.".into()),
                ],
                "{context}"
            );
            let late = handle.steer("too late".into()).unwrap_err();
            assert!(late.contains("ended"), "{late}");
        }
    }

    #[tokio::test]
    async fn a_refused_prompt_fails_the_run_with_pis_error() {
        let (_dir, spec) = temp_fake_rpc("reject", false);
        let started = Instant::now();
        let outcome = run(&spec).await;
        assert_eq!(outcome.status, RunStatus::Failed, "{outcome:#?}");
        assert_eq!(
            outcome.error.as_deref(),
            Some("No API key found for scripted")
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "it did not wait for a run"
        );
        assert_eq!(status_json(&spec)["error"], "No API key found for scripted");
    }

    #[tokio::test]
    async fn steering_reaches_the_child_and_its_control_outlives_the_run() {
        for legacy in [false, true] {
            let (dir, spec) = temp_fake_rpc("echo-steer", legacy);
            let mut handle = start(&spec).await;
            let control = handle.control();
            wait_for_turns(&handle, 2).await;
            control.steer("Focus on the README".into()).unwrap();
            let outcome = handle.wait().await;
            assert_eq!(outcome.status, RunStatus::Completed, "{outcome:#?}");
            assert_eq!(outcome.summary.final_text, "Got: Focus on the README");
            let (_, stdin) = child_log(dir.path());
            assert!(
                stdin.contains(&json!({"type": "steer", "message": "Focus on the README"})),
                "{stdin:?}"
            );
            let transcript = control.transcript();
            assert!(
                transcript.contains(&TranscriptEntry::User("Focus on the README".into())),
                "{transcript:?}"
            );
            assert_eq!(transcript, handle.transcript());
            // After the end: steering says why not, stopping is harmless.
            let err = control.steer("again".into()).unwrap_err();
            assert!(err.contains("ended"), "{err}");
            control.stop();
            assert_eq!(handle.wait().await.status, RunStatus::Completed);
        }
    }

    #[tokio::test]
    async fn a_turn_budget_steers_then_aborts() {
        for legacy in [false, true] {
            let (dir, mut spec) = temp_fake_rpc("forever", legacy);
            spec.budget = Budget::turns(3);
            let mut handle = start(&spec).await;
            let pid = handle.pid().unwrap();
            let outcome = handle.wait().await;
            let context = format!("legacy {legacy}: {outcome:#?}");
            let reason = "turn budget exceeded: 5 turns (limit 3)";
            assert_eq!(outcome.status, RunStatus::Failed, "{context}");
            assert_eq!(outcome.error.as_deref(), Some(reason), "{context}");
            assert_eq!(
                outcome.budget_exceeded.as_deref(),
                Some(reason),
                "{context}"
            );
            // The partial answer is kept.
            assert!(outcome.summary.final_text.starts_with("Turn "), "{context}");
            // It ended through the abort, not a kill.
            assert_eq!(outcome.exit.code, Some(0), "{context}");
            assert!(group_gone(pid));
            let status = status_json(&spec);
            assert_eq!(status["status"], "failed");
            assert_eq!(status["budgetExceeded"], reason);

            let (argv, stdin) = child_log(dir.path());
            let prompt_at = argv
                .iter()
                .position(|a| a == "--append-system-prompt")
                .unwrap();
            assert!(argv[prompt_at + 1].contains("at most 3 turns"), "{argv:?}");
            let kinds: Vec<&str> = stdin
                .iter()
                .map(|c| c["type"].as_str().unwrap())
                .filter(|kind| *kind != "get_state")
                .collect();
            assert_eq!(kinds, ["prompt", "steer", "abort"], "{stdin:?}");
            let steer = stdin.iter().find(|c| c["type"] == "steer").unwrap();
            assert!(
                steer["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("Budget reached: you have used 3 of your 3 turns."),
                "{steer}"
            );
            let transcript = handle.transcript();
            let notes: Vec<&TranscriptEntry> = transcript
                .iter()
                .filter(|entry| matches!(entry, TranscriptEntry::Note(_)))
                .collect();
            assert_eq!(
                notes,
                [
                    &TranscriptEntry::Note(
                        "budget reached; asking the helper for its final answer".into()
                    ),
                    &TranscriptEntry::Note(format!("{reason}; aborting the helper")),
                ],
                "{context}"
            );
        }
    }

    #[tokio::test]
    async fn a_budget_in_the_print_mode_retry_kills_and_cannot_steer() {
        let dir = tempfile::tempdir().unwrap();
        // Silent in RPC mode; in the print-mode retry it takes turns forever.
        let script = r#"for last; do :; done
            case "$last" in
              @*) while :; do echo '{"type":"turn_end"}'; sleep 0.3; done ;;
              *) sleep 30 ;;
            esac"#;
        let mut spec = fake(dir.path(), script);
        spec.idle_timeout = Duration::from_millis(400);
        spec.budget = Budget {
            grace_turns: 1,
            ..Budget::turns(2)
        };
        let mut handle = start(&spec).await;
        wait_for_turns(&handle, 1).await;
        let err = handle.steer("hurry".into()).unwrap_err();
        assert!(err.contains("print mode"), "{err}");
        let pid = handle.pid();
        let outcome = handle.wait().await;
        assert_eq!(outcome.status, RunStatus::Failed, "{outcome:#?}");
        assert_eq!(outcome.retry, Some(RetryKind::FileDelivery));
        assert_eq!(
            outcome.budget_exceeded.as_deref(),
            Some("turn budget exceeded: 3 turns (limit 2)")
        );
        assert_eq!(outcome.exit.signal.as_deref(), Some("SIGKILL"));
        if let Some(pid) = pid {
            assert!(group_gone(pid));
        }
        assert!(handle.transcript().contains(&TranscriptEntry::Note(
            "the print-mode attempt cannot be steered".into()
        )));
    }

    #[tokio::test]
    async fn stop_ends_an_rpc_run() {
        let (_dir, spec) = temp_fake_rpc("forever", false);
        let mut handle = start(&spec).await;
        let pid = handle.pid().unwrap();
        wait_for_turns(&handle, 1).await;
        handle.control().stop();
        let outcome = handle.wait().await;
        assert_eq!(outcome.status, RunStatus::Stopped, "{outcome:#?}");
        assert!(group_gone(pid));
        assert_eq!(status_json(&spec)["status"], "stopped");
        assert!(
            handle
                .transcript()
                .contains(&TranscriptEntry::Note("stop requested".into()))
        );
    }

    #[tokio::test]
    async fn a_child_that_ignores_eof_is_killed_after_the_end_grace() {
        let (_dir, mut spec) = temp_fake_rpc("linger", false);
        spec.end_grace = Duration::from_millis(500);
        let started = Instant::now();
        let outcome = run(&spec).await;
        assert!(started.elapsed() < Duration::from_secs(8), "{outcome:#?}");
        assert_eq!(outcome.status, RunStatus::Completed, "{outcome:#?}");
        assert_eq!(outcome.exit.signal.as_deref(), Some("SIGKILL"));
    }

    #[tokio::test]
    async fn a_warm_process_runs_the_task_exactly_as_a_fresh_child_and_a_misfit_starts_cold() {
        let (dir, spec) = temp_fake_rpc("answer", false);
        let cold = run(&spec).await;
        let cold_log = child_log(dir.path());
        std::fs::remove_file(dir.path().join("stdin.log")).unwrap();
        std::fs::remove_dir_all(&spec.run_dir).unwrap();

        // Started ahead of the task; it waits on stdin meanwhile.
        let warm = Prewarmed::spawn(&spec).unwrap();
        let warm_group = warm.group().unwrap();
        let mut handle = HelperRunner::start_warm(spec.clone(), warm).await.unwrap();
        assert_eq!(
            handle.pid(),
            Some(warm_group.raw().unsigned_abs()),
            "the warm process ran it"
        );
        let served = handle.wait().await;
        assert_eq!(served.status, cold.status, "{served:#?}");
        assert_eq!(served.summary.final_text, cold.summary.final_text);
        assert_eq!(served.summary.usage, cold.summary.usage);
        assert_eq!(child_log(dir.path()), cold_log, "same argv, same stdin");
        assert_eq!(status_json(&spec)["status"], "completed");

        // Started for another launch: discarded, and the run starts cold.
        let mut other = spec.clone();
        other.env.push(("EXTRA".into(), "1".into()));
        let misfit = Prewarmed::spawn(&other).unwrap();
        let misfit_group = misfit.group().unwrap();
        let mut handle = HelperRunner::start_warm(spec.clone(), misfit)
            .await
            .unwrap();
        assert_ne!(handle.pid(), Some(misfit_group.raw().unsigned_abs()));
        assert!(group_gone(misfit_group.raw().unsigned_abs()));
        assert_eq!(handle.wait().await.status, RunStatus::Completed);
    }

    #[tokio::test]
    async fn resume_and_fork_reach_the_child() {
        let dir = tempfile::tempdir().unwrap();
        let parent = dir.path().join("parent.jsonl");
        std::fs::write(&parent, "{}\n").unwrap();

        let mut spec = fake_rpc(dir.path(), "answer", false);
        spec.session = SessionMode::Resume(parent.clone());
        let outcome = run(&spec).await;
        assert_eq!(outcome.status, RunStatus::Completed, "{outcome:#?}");
        assert_eq!(outcome.session_file.as_deref(), Some(parent.as_path()));
        let (argv, _) = child_log(dir.path());
        assert_eq!(
            argv[..2],
            ["--session".to_string(), parent.display().to_string()]
        );
    }

    #[test]
    fn session_args_table() {
        let run_dir = Path::new("/runs/h1");
        let cases = [
            (
                SessionMode::Dir("/runs/h1/session".into()),
                vec!["--session-dir", "/runs/h1/session"],
            ),
            (
                SessionMode::Resume("/s/a.jsonl".into()),
                vec!["--session", "/s/a.jsonl"],
            ),
            (
                SessionMode::Fork("/s/a.jsonl".into()),
                vec!["--fork", "/s/a.jsonl", "--session-dir", "/runs/h1/session"],
            ),
        ];
        check_table(cases, |mode| mode.pi_args(run_dir));
        let spec = RunSpec::new(
            "pi",
            AgentCatalog::builtin().resolve("work").unwrap(),
            "x",
            "/",
            run_dir,
        );
        assert_eq!(spec.session, SessionMode::Dir(run_dir.join("session")));
        assert!(spec.budget.is_unlimited());
    }

    #[test]
    fn transcript_is_bounded() {
        let shared = Conversation::default();
        for n in 0..TRANSCRIPT_ENTRIES + 5 {
            shared.push(TranscriptEntry::Note(n.to_string()));
        }
        let transcript = shared.transcript();
        assert_eq!(transcript.len(), TRANSCRIPT_ENTRIES);
        assert_eq!(transcript[0], TranscriptEntry::Note("5".into()));
        assert_eq!(
            shared.steer("x".into()).unwrap_err(),
            "the helper is not running"
        );
    }

    #[test]
    fn first_words_table() {
        let cases = [
            ("Done.", "Done."),
            (
                "one two three four five six seven eight nine",
                "one two three four five six seven eight…",
            ),
            ("a\n\nb", "a b"),
            (&"x".repeat(80), &format!("{}…", "x".repeat(59))),
        ];
        check_table(cases, |text| first_words(text));
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
        check_table(cases, |stderr| error_lines(stderr));
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

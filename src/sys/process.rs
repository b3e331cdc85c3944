//! Child processes in process groups of their own, and stopping them.
//!
//! Every child the workbench starts (Pi in the pane, helpers, delegates, background tasks, MCP
//! servers, acceptance commands) is put in a new process group, so that a stop reaches what it
//! started in turn (`npx` and its server, a shell and its pipeline) with one `killpg`. A group is
//! named by its id, the pid of the child that made it ([`SpawnGrouped`]).
//!
//! A stop is [`stop_group`]: SIGTERM to the group, up to a grace for it to empty, SIGKILL, then
//! a bounded wait until it is empty. It polls with async sleeps (never a blocking sleep on the
//! runtime) and holds a [`GroupGuard`] while it waits, so a stop that is cancelled half way still
//! kills the group. Synchronous exits (a panic hook, `Drop`) use
//! [`kill_group_now`](super::group::kill_group_now).
//!
//! Group ids are reused by the kernel once a group is empty and its leader reaped, so an owner
//! signals a group only while it knows it is there: it clears its [`CurrentGroup`] or disarms its
//! guard when it has reaped the leader.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::Signal;
use tokio::time::Instant;

use super::group::ProcessGroup;
use super::tree::signal_tree;

/// How often a stop looks whether the group is empty yet.
const EMPTY_POLL: Duration = Duration::from_millis(20);
/// After SIGKILL, how long a stop waits for the group to be empty. Bounded: a killed member
/// whose parent died too is a zombie until PID 1 reaps it, and some PID 1s (in containers)
/// never do, so the group can stay non-empty with nothing left running.
pub(crate) const KILL_WAIT: Duration = Duration::from_secs(1);

/// Which processes a signal reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The group.
    Group,
    /// The group, and every descendant and its own group (see [`signal_tree`]): for Pi, whose
    /// `bash` tool starts each command in a process group of its own.
    Tree,
}

impl Reach {
    /// Sends `signal` to `group` as far as this reach goes; best effort.
    pub fn signal(self, group: ProcessGroup, signal: Signal) {
        match self {
            Reach::Group => {
                if let Err(err) = group.signal(signal)
                    && err != Errno::ESRCH
                {
                    tracing::debug!("{signal} to process group {}: {err}", group.raw());
                }
            }
            Reach::Tree => signal_tree(group.pgid(), signal),
        }
    }
}

/// How a stop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopOutcome {
    /// The group was empty within the grace (or already).
    Ended,
    /// It needed SIGKILL, and was empty after it.
    Killed,
    /// Something of it was still there [`KILL_WAIT`] after SIGKILL (an unreaped zombie, or a
    /// member we may not signal).
    Survived,
}

/// How long a hang-up waits for the group to leave before [`stop_group`]'s SIGTERM follows.
pub(crate) const HANGUP_WAIT: Duration = Duration::from_secs(1);

/// Hangs up on `group` (SIGHUP, as a closed terminal does) and, if it is not empty within
/// [`HANGUP_WAIT`], stops it ([`stop_group`]). The pause keeps the two requests apart: sent
/// together, a program that handles both sees whichever its handlers run first, and the
/// workbench's exit code (129 for a hang-up, 143 for SIGTERM) would depend on thread timing.
pub async fn hang_up_group(group: ProcessGroup, grace: Duration) -> StopOutcome {
    hang_up_waiting(group, HANGUP_WAIT, grace).await
}

/// [`hang_up_group`] with the pause before SIGTERM given.
async fn hang_up_waiting(group: ProcessGroup, pause: Duration, grace: Duration) -> StopOutcome {
    if let Err(err) = group.signal(Signal::SIGHUP) {
        tracing::debug!("killpg({}, SIGHUP) failed: {err}", group.raw());
    }
    if wait_empty(group, pause).await {
        return StopOutcome::Ended;
    }
    stop_group(group, grace).await
}

/// Stops `group`: SIGTERM, up to `grace` for it to be empty, SIGKILL, up to [`KILL_WAIT`] more.
/// Someone must be reaping the group's leader meanwhile (its `wait` task, a reaper thread), or
/// the leader's zombie keeps the group alive. Dropped half way, the stop kills the group.
pub async fn stop_group(group: ProcessGroup, grace: Duration) -> StopOutcome {
    stop_reaching(group, grace, Reach::Group).await
}

/// [`stop_group`] with each signal going as far as `reach`.
pub(crate) async fn stop_reaching(
    group: ProcessGroup,
    grace: Duration,
    reach: Reach,
) -> StopOutcome {
    if !group.alive() {
        return StopOutcome::Ended;
    }
    let guard = GroupGuard::new(group, reach);
    reach.signal(group, Signal::SIGTERM);
    let outcome = if wait_empty(group, grace).await {
        StopOutcome::Ended
    } else {
        reach.signal(group, Signal::SIGKILL);
        if wait_empty(group, KILL_WAIT).await {
            StopOutcome::Killed
        } else {
            StopOutcome::Survived
        }
    };
    guard.disarm();
    outcome
}

/// A stop that runs beside other work. An owner that follows its child in a `select!` loop
/// (reading its output, waiting for its exit) starts the stop when one is asked for and polls
/// [`GroupStop::finished`] as one more branch; the stop keeps its progress between polls.
/// Dropped while running, it kills the group (see [`stop_reaching`]).
#[derive(Default)]
pub struct GroupStop(Option<Pin<Box<dyn Future<Output = StopOutcome> + Send>>>);

impl GroupStop {
    /// Starts [`stop_reaching`] unless a stop already runs (the first one's grace stands).
    pub fn start(&mut self, group: ProcessGroup, grace: Duration, reach: Reach) {
        if self.0.is_none() {
            self.0 = Some(Box::pin(stop_reaching(group, grace, reach)));
        }
    }

    /// Whether a stop is under way.
    pub fn is_running(&self) -> bool {
        self.0.is_some()
    }

    /// Completes when the running stop does (after which none runs); pending while none runs.
    /// Cancel-safe: dropping this future leaves the stop where it was.
    pub async fn finished(&mut self) -> StopOutcome {
        match self.0.as_mut() {
            Some(stop) => {
                let outcome = stop.await;
                self.0 = None;
                outcome
            }
            None => std::future::pending().await,
        }
    }
}

/// Waits until `group` is empty, at most `limit`; true when it is.
async fn wait_empty(group: ProcessGroup, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if !group.alive() {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        tokio::time::sleep(EMPTY_POLL.min(deadline - now)).await;
    }
}

/// The process group a child currently runs in, shared between its owner and its handles;
/// empty before it starts and once its leader is reaped (the id may be reused after that).
#[derive(Debug)]
pub struct CurrentGroup {
    pgid: AtomicI32,
    reach: Reach,
}

impl CurrentGroup {
    /// Holds `group` (or nothing); kills reach as far as `reach`.
    pub fn new(group: Option<ProcessGroup>, reach: Reach) -> Self {
        Self {
            pgid: AtomicI32::new(group.map_or(0, ProcessGroup::raw)),
            reach,
        }
    }

    /// The group, while one is held.
    pub fn get(&self) -> Option<ProcessGroup> {
        ProcessGroup::from_raw(self.pgid.load(Ordering::SeqCst))
    }

    /// Holds `group` from now on.
    pub fn set(&self, group: ProcessGroup) {
        self.pgid.store(group.raw(), Ordering::SeqCst);
    }

    /// Holds nothing from now on: the leader is reaped, so the id must not be signalled again
    /// (the watchdog forgets it too).
    pub fn clear(&self) {
        let held = self.pgid.swap(0, Ordering::SeqCst);
        if let Some(group) = ProcessGroup::from_raw(held) {
            super::watchdog::unwatch(group);
        }
    }

    /// SIGKILL to the held group (as far as the reach goes), if there is one.
    pub fn kill_now(&self) {
        if let Some(group) = self.get() {
            self.reach.signal(group, Signal::SIGKILL);
        }
    }
}

/// SIGKILLs a group when dropped armed: the last resort of a path that ends early (a panic, a
/// dropped future, a runtime shutting down) while the group may still run. Disarm it once the
/// group is known empty or its leader reaped.
#[derive(Debug)]
pub struct GroupGuard(Arc<CurrentGroup>);

impl GroupGuard {
    /// Armed for `group`.
    pub fn new(group: ProcessGroup, reach: Reach) -> Self {
        Self(Arc::new(CurrentGroup::new(Some(group), reach)))
    }

    /// Armed for nothing yet; [`GroupGuard::arm`] names the group once it is known.
    pub fn unarmed(reach: Reach) -> Self {
        Self(Arc::new(CurrentGroup::new(None, reach)))
    }

    /// Armed for whatever group `current` holds when it is dropped (an owner that respawns
    /// its child moves the group there; handles share it).
    pub fn over(current: Arc<CurrentGroup>) -> Self {
        Self(current)
    }

    /// Kills `group` on drop (instead of any earlier one).
    pub fn arm(&self, group: ProcessGroup) {
        self.0.set(group);
    }

    /// Kills nothing on drop.
    pub fn disarm(&self) {
        self.0.clear();
    }

    /// The group it would kill.
    pub fn group(&self) -> Option<ProcessGroup> {
        self.0.get()
    }

    /// SIGKILL to the armed group now; it stays armed.
    pub fn kill_now(&self) {
        self.0.kill_now();
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.0.kill_now();
    }
}

/// Spawning a command as the leader of a new process group, with the group it made. The child
/// carries the watchdog's token in its environment and its group is registered with the
/// watchdog ([`super::watchdog`]), so it dies with the workbench whatever kills the workbench.
pub trait SpawnGrouped {
    type Child;

    /// Spawns the command in a process group of its own.
    fn spawn_grouped(&mut self) -> std::io::Result<(Self::Child, ProcessGroup)>;
}

impl SpawnGrouped for tokio::process::Command {
    type Child = tokio::process::Child;

    fn spawn_grouped(&mut self) -> std::io::Result<(Self::Child, ProcessGroup)> {
        in_own_group(self.as_std_mut());
        let child = self.spawn()?;
        // Only `None` once the child has been waited for, which nothing has done yet.
        let group = child.id().and_then(ProcessGroup::of_leader);
        grouped(child, group)
    }
}

impl SpawnGrouped for std::process::Command {
    type Child = std::process::Child;

    fn spawn_grouped(&mut self) -> std::io::Result<(Self::Child, ProcessGroup)> {
        in_own_group(self);
        let child = self.spawn()?;
        let group = ProcessGroup::of_leader(child.id());
        grouped(child, group)
    }
}

/// Sets `command` up to start a group of its own, tagged with the watchdog's token.
fn in_own_group(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt as _;
    if let Some((name, token)) = super::watchdog::token_env() {
        command.env(name, token);
    }
    command.process_group(0);
}

/// The spawned child with its group, which the watchdog now knows.
fn grouped<C>(child: C, group: Option<ProcessGroup>) -> std::io::Result<(C, ProcessGroup)> {
    match group {
        Some(group) => {
            super::watchdog::watch(group);
            Ok((child, group))
        }
        None => Err(std::io::Error::other(
            "the child's pid cannot name a process group",
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use tokio::io::AsyncBufReadExt as _;

    use super::*;

    /// `sh -c <script>` in its own group, once it printed `ready`. SIGHUP starts at its default:
    /// a shell cannot trap a signal that was ignored when it started, and the tests may run
    /// under `nohup`.
    async fn spawn_ready(script: &str) -> (tokio::process::Child, ProcessGroup) {
        let mut command = tokio::process::Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(script)
            .stdout(std::process::Stdio::piped());
        // SAFETY: only `signal(2)`, which is async-signal-safe, runs between fork and exec.
        unsafe {
            command.pre_exec(|| {
                nix::sys::signal::signal(Signal::SIGHUP, nix::sys::signal::SigHandler::SigDfl)
                    .map(drop)
                    .map_err(std::io::Error::from)
            });
        }
        let (mut child, group) = command.spawn_grouped().unwrap();
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("ready"));
        (child, group)
    }

    /// [`spawn_ready`], with a task that reaps the child (as every owner does).
    async fn spawn_reaped(script: &str) -> ProcessGroup {
        let (mut child, group) = spawn_ready(script).await;
        tokio::spawn(async move { child.wait().await });
        group
    }

    /// A child that ignores SIGTERM (the ignored disposition survives the `exec`).
    const STUBBORN: &str = "trap '' TERM; echo ready; exec sleep 30";

    async fn wait_gone(group: ProcessGroup) {
        crate::test_wait::eventually(
            format!("group {} to end", group.raw()),
            crate::test_wait::WAIT,
            || !group.alive(),
        )
        .await;
    }

    #[tokio::test]
    async fn a_group_that_obeys_sigterm_ends_within_the_grace() {
        let group = spawn_reaped("echo ready; exec sleep 30").await;
        assert!(group.alive());
        assert_eq!(
            stop_group(group, Duration::from_secs(10)).await,
            StopOutcome::Ended
        );
        assert!(!group.alive());
    }

    #[tokio::test]
    async fn a_group_that_ignores_sigterm_is_killed_after_the_grace() {
        let group = spawn_reaped(STUBBORN).await;
        let started = Instant::now();
        assert_eq!(
            stop_group(group, Duration::from_millis(300)).await,
            StopOutcome::Killed
        );
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert!(!group.alive());
    }

    /// A program that handles the hang-up (it writes a line and exits) is not sent SIGTERM
    /// meanwhile: sent together, this shell's default SIGTERM would end it before its trap ran.
    #[tokio::test]
    async fn a_hang_up_handled_in_time_is_not_followed_by_sigterm() {
        let dir = tempfile::tempdir().unwrap();
        let done = dir.path().join("done");
        let group = spawn_reaped(&format!(
            "trap 'echo hup >> {}; exit 0' HUP; echo ready; \
             while :; do sleep 0.02; done",
            done.display()
        ))
        .await;
        // A long pause, so a loaded machine has all the time it needs to run the trap; without
        // the pause SIGTERM comes at once.
        let started = Instant::now();
        assert_eq!(
            hang_up_waiting(group, Duration::from_secs(30), Duration::from_secs(10)).await,
            StopOutcome::Ended
        );
        let written = std::fs::read_to_string(&done);
        assert_eq!(
            written.as_deref().ok(),
            Some("hup\n"),
            "{written:?} after {:?}",
            started.elapsed()
        );
    }

    /// A program that ignores the hang-up gets the usual stop after [`HANGUP_WAIT`].
    #[tokio::test]
    async fn a_hang_up_ignored_is_followed_by_the_stop() {
        let group = spawn_reaped("trap '' HUP; echo ready; exec sleep 30").await;
        let started = Instant::now();
        assert_eq!(
            hang_up_group(group, Duration::from_secs(10)).await,
            StopOutcome::Ended
        );
        assert!(started.elapsed() >= HANGUP_WAIT);
        assert!(!group.alive());
    }

    #[tokio::test]
    async fn a_stop_dropped_during_the_grace_still_kills_the_group() {
        let group = spawn_reaped(STUBBORN).await;
        let stop = stop_group(group, Duration::from_secs(60));
        assert!(
            tokio::time::timeout(Duration::from_millis(100), stop)
                .await
                .is_err()
        );
        wait_gone(group).await;
    }

    #[tokio::test]
    async fn a_group_stop_in_a_select_loop_keeps_its_progress_between_rounds() {
        use std::os::unix::process::ExitStatusExt as _;
        let (mut child, group) = spawn_ready(STUBBORN).await;
        let mut stopping = GroupStop::default();
        stopping.start(group, Duration::from_millis(200), Reach::Group);
        assert!(stopping.is_running());
        let mut rounds = 0;
        // Each timer round drops the `finished()` future; the stop must go on regardless.
        let rounds_until_exit = async {
            loop {
                tokio::select! {
                    status = child.wait() => break status.unwrap(),
                    _ = stopping.finished() => {}
                    () = tokio::time::sleep(Duration::from_millis(10)) => rounds += 1,
                }
            }
        };
        let status = tokio::time::timeout(Duration::from_secs(10), rounds_until_exit)
            .await
            .expect("the stop never reached SIGKILL");
        assert_eq!(status.signal(), Some(Signal::SIGKILL as i32));
        assert!(rounds > 0);
    }

    #[test]
    fn a_guard_kills_when_dropped_armed_and_not_once_disarmed() {
        use std::os::unix::process::ExitStatusExt as _;
        let (mut child, group) = std::process::Command::new("sleep")
            .arg("30")
            .spawn_grouped()
            .unwrap();
        let guard = GroupGuard::new(group, Reach::Group);
        assert_eq!(guard.group(), Some(group));
        drop(guard);
        assert_eq!(child.wait().unwrap().signal(), Some(Signal::SIGKILL as i32));

        let (mut child, group) = std::process::Command::new("sleep")
            .arg("0.2")
            .spawn_grouped()
            .unwrap();
        let guard = GroupGuard::new(group, Reach::Group);
        guard.disarm();
        drop(guard);
        assert_eq!(child.wait().unwrap().code(), Some(0));
    }
}

//! Pi's pseudo-terminal: spawning the child in its own session, the blocking reader thread, the
//! writer task, the reaper thread, resizing, and stopping the whole process group.
//!
//! The PTY master blocks on read, so it is read on a dedicated OS thread (never on the async
//! runtime), which hands chunks to the app through a callback. Writes go through an unbounded
//! channel to a second thread, so a child that stops reading cannot stall the event loop. The
//! child is reaped with `waitpid` on a third thread; we wait ourselves (rather than through
//! portable-pty) because its exit status folds signals into a string and we need the signal
//! number to exit with `128 + N` like a shell.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use anyhow::{Context, Result};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;
use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};

use crate::sys::{ProcessGroup, StopOutcome, hang_up_group};

/// What to run in the PTY.
#[derive(Clone, Debug)]
pub struct SpawnSpec {
    pub program: OsString,
    pub args: Vec<OsString>,
    /// Added to (or overriding) the inherited environment.
    pub env: Vec<(OsString, OsString)>,
    /// The child's working directory. Required: left unset, portable-pty starts the child in
    /// the home directory, not in ours.
    pub cwd: PathBuf,
    pub rows: u16,
    pub cols: u16,
}

/// What the PTY reports to its owner.
#[derive(Debug)]
pub enum PtyEvent {
    /// Bytes the child wrote. Order is preserved.
    Output(Vec<u8>),
    /// The child's output reached EOF (it exited or closed the terminal).
    Closed,
    /// The child was reaped.
    Exited(ChildExit),
}

/// How the child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChildExit {
    Code(i32),
    Signal(i32),
}

impl ChildExit {
    /// The exit code a shell would report for this child: the code, or `128 + signal`.
    pub fn shell_code(self) -> i32 {
        match self {
            ChildExit::Code(code) => code,
            ChildExit::Signal(sig) => 128 + sig,
        }
    }

    pub fn success(self) -> bool {
        self == ChildExit::Code(0)
    }
}

/// A running child in a PTY.
pub struct Pty {
    master: Box<dyn MasterPty + Send>,
    writer: std_mpsc::Sender<Vec<u8>>,
    pid: Pid,
    /// The child's process group: portable-pty makes the child a session leader, so its pid
    /// is its group id, and descendants such as shells Pi started are in it too.
    group: ProcessGroup,
}

impl Pty {
    /// Spawns the child and starts the reader, writer and reaper threads. `on_event` is called from
    /// those threads; it must be cheap and never block for long (it typically sends on a channel).
    pub fn spawn<F>(spec: SpawnSpec, on_event: F) -> Result<Pty>
    where
        F: Fn(PtyEvent) + Send + Sync + 'static,
    {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: spec.rows.max(1),
                cols: spec.cols.max(1),
                pixel_width: 0,
                pixel_height: 0,
            })
            .context("failed to open a pseudo-terminal")?;

        let mut cmd = CommandBuilder::new(&spec.program);
        cmd.args(&spec.args);
        cmd.cwd(&spec.cwd);
        cmd.env("TERM", "xterm-256color");
        cmd.env("COLORTERM", "truecolor");
        for (key, value) in &spec.env {
            cmd.env(key, value);
        }
        if let Some((name, token)) = crate::sys::watchdog::token_env() {
            cmd.env(name, token);
        }
        let child = pair
            .slave
            .spawn_command(cmd)
            .with_context(|| format!("failed to start {}", spec.program.to_string_lossy()))?;
        // The slave must not stay open in the parent, or the reader never sees EOF.
        drop(pair.slave);
        let raw_pid = child
            .process_id()
            .context("the spawned child has no process id")?;
        let group = ProcessGroup::of_leader(raw_pid)
            .with_context(|| format!("the child's process id {raw_pid} names no process group"))?;
        let pid = group.pgid();
        crate::sys::watchdog::watch(group);
        // We reap with waitpid ourselves; the portable-pty handle is not needed beyond this point
        // (dropping a std Child neither kills nor waits).
        drop(child);

        let on_event = std::sync::Arc::new(on_event);
        let reader = clone_master(&*pair.master)?;
        let writer = pair
            .master
            .take_writer()
            .context("failed to take the PTY writer")?;

        spawn_reader(reader, on_event.clone())?;
        let writer = spawn_writer(writer)?;
        spawn_reaper(pid, on_event)?;

        Ok(Pty {
            master: pair.master,
            writer,
            pid,
            group,
        })
    }

    /// Queues bytes for the child. Never blocks.
    pub fn write(&self, bytes: Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        if self.writer.send(bytes).is_err() {
            tracing::debug!("PTY writer is gone; dropping input");
        }
    }

    /// Resizes the PTY (the child gets SIGWINCH). The caller resizes its parser at the same time.
    pub fn resize(&self, rows: u16, cols: u16) -> Result<()> {
        self.master
            .resize(PtySize {
                rows: rows.max(1),
                cols: cols.max(1),
                pixel_width: 0,
                pixel_height: 0,
            })
            .context("failed to resize the PTY")
    }

    pub fn pid(&self) -> u32 {
        self.pid.as_raw().unsigned_abs()
    }

    /// Asks the child to stop (SIGHUP; if it is still there a moment later, the shared stop:
    /// SIGTERM, SIGKILL after `grace`)
    /// and returns when the group is empty or the stop gave up on it. Async: the waits are
    /// timer sleeps, so the runtime's workers stay free meanwhile. The reaper thread reaps the
    /// child, which lets the group empty.
    pub async fn terminate(&self, grace: Duration) {
        terminate_group(self.group, grace).await;
    }

    /// The child's process group (to stop it from a task that does not own the PTY).
    pub fn group(&self) -> ProcessGroup {
        self.group
    }
}

/// [`Pty::terminate`] for a PTY child's `group`: SIGHUP, then (if it is still there a moment
/// later) SIGTERM, SIGKILL after `grace` ([`hang_up_group`]).
pub async fn terminate_group(group: ProcessGroup, grace: Duration) {
    match hang_up_group(group, grace).await {
        StopOutcome::Ended => {}
        StopOutcome::Killed => {
            tracing::warn!(
                "the PTY's child did not stop within {grace:?}; killed its process group"
            );
        }
        StopOutcome::Survived => tracing::warn!(
            "the PTY's process group {} is still there after SIGKILL",
            group.raw()
        ),
    }
}

/// The PTY master's reading end for the reader thread: a file of its own (a `dup` of the master),
/// so the thread can also ask whether more output is waiting ([`more_waiting`]).
fn clone_master(master: &dyn MasterPty) -> Result<std::fs::File> {
    let fd = master
        .as_raw_fd()
        .context("the PTY master has no file descriptor")?;
    // SAFETY: `fd` is the master's descriptor, open for as long as `master` lives, which
    // outlives this call; the borrow ends with it (`dup` returns a descriptor of our own).
    let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let owned = nix::unistd::dup(borrowed).context("failed to clone the PTY reader")?;
    Ok(std::fs::File::from(owned))
}

/// Whether more of the child's output can be read at once.
fn more_waiting(file: &std::fs::File) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd as _;
    let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLIN)];
    matches!(poll(&mut fds, PollTimeout::ZERO), Ok(1))
        && fds[0]
            .revents()
            .is_some_and(|events| events.contains(PollFlags::POLLIN))
}

/// The most one read of a PTY master returns (the line discipline's buffer).
const PTY_READ: usize = 4096;

fn spawn_reader<F>(mut reader: std::fs::File, on_event: std::sync::Arc<F>) -> Result<()>
where
    F: Fn(PtyEvent) + Send + Sync + 'static,
{
    std::thread::Builder::new()
        .name("pty-reader".into())
        .spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) => break,
                    Ok(mut n) => {
                        // A PTY read returns at most ~4 KiB. While the child writes faster than
                        // that, take what is already waiting too, so the loop gets one chunk
                        // (one wake-up, one pass through the app) per 64 KiB instead of per
                        // read. Output that trickles in goes out at once, as before.
                        while n + PTY_READ <= buf.len() && more_waiting(&reader) {
                            match reader.read(&mut buf[n..]) {
                                Ok(0) | Err(_) => break,
                                Ok(more) => n += more,
                            }
                        }
                        on_event(PtyEvent::Output(buf[..n].to_vec()));
                    }
                    Err(err)
                        if matches!(
                            err.kind(),
                            std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
                        ) => {}
                    // Linux reports EIO once the child side is gone: that is EOF.
                    Err(err) => {
                        tracing::debug!("PTY read ended: {err}");
                        break;
                    }
                }
            }
            on_event(PtyEvent::Closed);
        })
        .context("failed to start the PTY reader thread")?;
    Ok(())
}

fn spawn_writer(mut writer: Box<dyn Write + Send>) -> Result<std_mpsc::Sender<Vec<u8>>> {
    let (tx, rx) = std_mpsc::channel::<Vec<u8>>();
    std::thread::Builder::new()
        .name("pty-writer".into())
        .spawn(move || {
            while let Ok(bytes) = rx.recv() {
                if let Err(err) = writer.write_all(&bytes).and_then(|()| writer.flush()) {
                    tracing::debug!("PTY write failed: {err}");
                    break;
                }
            }
        })
        .context("failed to start the PTY writer thread")?;
    Ok(tx)
}

fn spawn_reaper<F>(pid: Pid, on_event: std::sync::Arc<F>) -> Result<()>
where
    F: Fn(PtyEvent) + Send + Sync + 'static,
{
    std::thread::Builder::new()
        .name("pty-reaper".into())
        .spawn(move || {
            let exit = loop {
                match waitpid(pid, None) {
                    Ok(WaitStatus::Exited(_, code)) => break ChildExit::Code(code),
                    Ok(WaitStatus::Signaled(_, sig, _)) => break ChildExit::Signal(sig as i32),
                    Ok(_) => continue,
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(err) => {
                        tracing::error!("waitpid({pid}) failed: {err}");
                        break ChildExit::Code(1);
                    }
                }
            };
            // Reaped: the id may be reused from now on.
            if let Some(group) = ProcessGroup::of_leader(pid.as_raw().unsigned_abs()) {
                crate::sys::watchdog::unwatch(group);
            }
            on_event(PtyEvent::Exited(exit));
        })
        .context("failed to start the PTY reaper thread")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(spec: SpawnSpec) -> (Vec<u8>, ChildExit) {
        let (tx, rx) = std_mpsc::channel();
        let _pty = Pty::spawn(spec, move |ev| {
            let _ = tx.send(ev);
        })
        .unwrap();
        let mut out = Vec::new();
        let mut exit = None;
        let mut closed = false;
        while exit.is_none() || !closed {
            match rx.recv_timeout(Duration::from_secs(10)).unwrap() {
                PtyEvent::Output(b) => out.extend(b),
                PtyEvent::Closed => closed = true,
                PtyEvent::Exited(e) => exit = Some(e),
            }
        }
        (out, exit.unwrap())
    }

    fn sh(script: &str) -> SpawnSpec {
        SpawnSpec {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![],
            cwd: std::env::current_dir().unwrap(),
            rows: 24,
            cols: 80,
        }
    }

    #[test]
    fn child_sees_a_terminal_with_our_term_and_size() {
        let (out, exit) = collect(sh("echo $TERM $COLORTERM; stty size; exit 3"));
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains("xterm-256color truecolor"), "{text}");
        assert!(text.contains("24 80"), "{text}");
        assert_eq!(exit, ChildExit::Code(3));
        assert_eq!(exit.shell_code(), 3);
    }

    /// A flood arrives whole and in order, however the reader gathers its reads into chunks.
    #[test]
    fn a_flood_arrives_whole_and_in_order() {
        let (out, exit) = collect(sh("seq 1 60000"));
        let text = String::from_utf8_lossy(&out).replace("\r\n", "\n");
        let expected: String = (1..=60_000).map(|n| format!("{n}\n")).collect();
        assert_eq!(text.len(), expected.len());
        assert!(text == expected, "the output differs from seq's");
        assert_eq!(exit, ChildExit::Code(0));
    }

    #[test]
    fn the_child_starts_in_the_given_directory_not_in_home() {
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let mut spec = sh("pwd -P");
        spec.cwd = dir.path().to_path_buf();
        spec.env.push(("HOME".into(), home.path().into()));
        let (out, exit) = collect(spec);
        let text = String::from_utf8_lossy(&out);
        let expected = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(text.trim(), expected.display().to_string());
        assert_eq!(exit, ChildExit::Code(0));
    }

    #[test]
    fn signal_death_maps_to_128_plus_signal() {
        let (_, exit) = collect(sh("kill -9 $$"));
        assert_eq!(exit, ChildExit::Signal(9));
        assert_eq!(exit.shell_code(), 137);
    }

    /// Spawns `script` and returns once it printed `started` (its traps are installed then).
    fn spawn_started(script: &str) -> (Pty, std_mpsc::Receiver<PtyEvent>) {
        let (tx, rx) = std_mpsc::channel();
        let pty = Pty::spawn(sh(script), move |ev| {
            let _ = tx.send(ev);
        })
        .unwrap();
        let mut seen = String::new();
        while !seen.contains("started") {
            if let PtyEvent::Output(b) = rx.recv_timeout(Duration::from_secs(10)).unwrap() {
                seen.push_str(&String::from_utf8_lossy(&b));
            }
        }
        (pty, rx)
    }

    /// On a current-thread runtime, as the tests run: a stop that blocked the thread while it
    /// waited for the grace would starve every other task of the runtime.
    #[tokio::test]
    async fn terminate_leaves_the_runtime_free_while_it_waits() {
        let (pty, _rx) = spawn_started("trap '' TERM HUP; echo started; exec sleep 30");
        let ticks = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = ticks.clone();
        let ticker = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(10)).await;
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        });
        pty.terminate(Duration::from_millis(300)).await;
        let ticked = ticks.load(std::sync::atomic::Ordering::SeqCst);
        ticker.abort();
        assert!(ticked > 0, "no other task ran while terminate waited");
    }

    #[tokio::test]
    async fn terminate_kills_the_whole_group() {
        let (tx, rx) = std_mpsc::channel();
        let pty = Pty::spawn(
            sh("trap '' TERM HUP; sleep 30 & echo started $!; wait"),
            move |ev| {
                let _ = tx.send(ev);
            },
        )
        .unwrap();
        // Wait until the script runs, so its traps are installed; it prints the sleep's pid.
        let mut seen = String::new();
        let sleep_pid = loop {
            if let PtyEvent::Output(b) = rx.recv_timeout(Duration::from_secs(10)).unwrap() {
                seen.push_str(&String::from_utf8_lossy(&b));
                if let Some(rest) = seen.split("started ").nth(1)
                    && rest.contains('\n')
                {
                    break rest.trim().to_string();
                }
            }
        };
        pty.terminate(Duration::from_millis(300)).await;
        let exit = loop {
            if let PtyEvent::Exited(e) = rx.recv_timeout(Duration::from_secs(10)).unwrap() {
                break e;
            }
        };
        assert_eq!(exit, ChildExit::Signal(9));
        // The background sleep ignored SIGTERM/SIGHUP too; it must be dead (gone, or a zombie
        // waiting for a reaper that is not us).
        let sleep_pid: i32 = sleep_pid.parse().unwrap();
        crate::test_wait::eventually_blocking(
            format!("sleep {sleep_pid} to end"),
            Duration::from_secs(10),
            || crate::sys::tree::has_ended(sleep_pid),
        );
    }
}

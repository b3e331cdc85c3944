//! A task's output, captured by the workbench: the task's stdout and stderr are one pipe, and a
//! copier thread moves what comes out of it into the task's log file.
//!
//! Copying (instead of handing the task the file) is what lets the cap hold *while* the task
//! writes: each chunk is checked against the cap before it is written, the part past the cap is
//! never written, and at the cap the copier closes its end of the pipe (a writer then gets
//! EPIPE, as under `| head`) and tells the monitor, which stops the task at once. The
//! workbench's own notices (the cap, a timeout) fit in the cap too: the output's end makes room. It
//! also keeps the last bytes in memory ([`Capture::last_lines`]), so the completion notification
//! quotes what the workbench itself captured, never a re-read of a file.
//!
//! The copier is an OS thread (blocking reads and writes, never on the runtime). It ends at EOF
//! — every writer is gone — or when the monitor asks ([`Capture::finish`]): a process that left
//! the task's group may hold the pipe open forever, so once the group is empty the copier drains
//! what is readable and stops.

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::fd::{AsFd as _, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use tokio::sync::watch;

use crate::sys::lock;

/// The most bytes moved per read.
const CHUNK: usize = 256 * 1024;
/// The pipe's capacity asked for (the default 64 KiB means four times the wake-ups).
const PIPE_CAPACITY: i32 = 1024 * 1024;
/// How often a copier waiting on a silent pipe looks whether it was asked to finish.
const FINISH_POLL: Duration = Duration::from_millis(50);
/// How many trailing bytes are kept in memory for the last lines.
const TAIL_BYTES: usize = 4096;

/// Where a copier is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CopyState {
    Copying,
    /// It ended (EOF, a finish request, the cap, or an error); nothing more is written by it.
    Ended,
}

/// The log file, what was written to it and the last bytes of it.
struct Sink {
    file: File,
    written: u64,
    tail: Vec<u8>,
}

impl Sink {
    /// Writes `bytes` and keeps them in the tail.
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.file.write_all(bytes)?;
        self.written += bytes.len() as u64;
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > TAIL_BYTES {
            let cut = self.tail.len() - TAIL_BYTES;
            self.tail.drain(..cut);
        }
        Ok(())
    }

    /// Writes `notice` so that the file stays within `cap`: when it does not fit after what is
    /// written, the end of the output is cut to make room (the notice says why the output stops
    /// there); a notice longer than the cap is cut itself.
    fn write_within(&mut self, notice: &[u8], cap: u64) -> std::io::Result<()> {
        let notice =
            &notice[..usize::try_from(cap).map_or(notice.len(), |cap| cap.min(notice.len()))];
        let keep = cap.saturating_sub(notice.len() as u64).min(self.written);
        if keep < self.written {
            // The file is opened for appending: the next write lands at the new end.
            self.file.set_len(keep)?;
            let cut = usize::try_from(self.written - keep).unwrap_or(usize::MAX);
            self.tail.truncate(self.tail.len().saturating_sub(cut));
            self.written = keep;
        }
        self.write(notice)
    }
}

/// One task's capture, shared by its copier thread and its monitor.
pub(super) struct Capture {
    sink: Mutex<Sink>,
    cap: u64,
    /// The output went past the cap: the rest was not written, and the pipe is closed.
    cap_reached: AtomicBool,
    finish: AtomicBool,
    state: watch::Sender<CopyState>,
}

impl Capture {
    /// A pipe for the task's output (the write end, for its stdout and stderr) and its copier
    /// into `file`, which stops at `cap` bytes.
    pub(super) fn start(file: File, cap: u64) -> anyhow::Result<(Arc<Capture>, OwnedFd)> {
        let (read, write) =
            nix::unistd::pipe2(OFlag::O_CLOEXEC).context("create the task's output pipe")?;
        // Best effort: a smaller pipe works, with more wake-ups.
        let _ = fcntl(&read, FcntlArg::F_SETPIPE_SZ(PIPE_CAPACITY));
        let (state, _) = watch::channel(CopyState::Copying);
        let capture = Arc::new(Capture {
            sink: Mutex::new(Sink {
                file,
                written: 0,
                tail: Vec::new(),
            }),
            cap,
            cap_reached: AtomicBool::new(false),
            finish: AtomicBool::new(false),
            state,
        });
        let copier = capture.clone();
        std::thread::Builder::new()
            .name("task-output".into())
            .spawn(move || copier.copy(read))
            .context("start the task's output copier")?;
        Ok((capture, write))
    }

    /// Whether the output went past the cap (then the copier has ended).
    pub(super) fn cap_reached(&self) -> bool {
        self.cap_reached.load(Ordering::SeqCst)
    }

    /// Follows the copier: `changed()` fires when it ends (see [`Capture::cap_reached`]).
    pub(super) fn state(&self) -> watch::Receiver<CopyState> {
        self.state.subscribe()
    }

    /// Bytes in the log file so far (notices included).
    pub(super) fn written(&self) -> u64 {
        lock(&self.sink).written
    }

    /// Up to `count` last non-empty lines of what was written (from the last 4 KiB), each cut
    /// to 200 characters.
    pub(super) fn last_lines(&self, count: usize) -> Vec<String> {
        let tail = String::from_utf8_lossy(&lock(&self.sink).tail).into_owned();
        super::logs::last_lines_of(&tail, count)
    }

    /// Appends a notice of the workbench's own (a timeout, the cap) to the log, within the cap:
    /// the file never grows past it, notice included.
    pub(super) fn append_notice(&self, notice: &str) {
        if let Err(err) = lock(&self.sink).write_within(notice.as_bytes(), self.cap) {
            tracing::warn!("cannot append a notice to a task's output: {err}");
        }
    }

    /// Asks the copier to stop once the pipe has nothing more to read now, and waits (at most
    /// `limit`) until it has.
    pub(super) async fn finish(&self, limit: Duration) {
        self.finish.store(true, Ordering::SeqCst);
        let mut state = self.state();
        let ended =
            tokio::time::timeout(limit, state.wait_for(|state| *state == CopyState::Ended)).await;
        if ended.is_err() {
            tracing::warn!("a task's output copier did not end within {limit:?}");
        }
    }

    /// The copier thread.
    fn copy(&self, read: OwnedFd) {
        let mut pipe = File::from(read);
        let mut buf = vec![0u8; CHUNK];
        loop {
            let finishing = self.finish.load(Ordering::SeqCst);
            // Without a finish request, wait for data (waking now and then to look for one);
            // with one, take only what is there already.
            let wait = if finishing {
                PollTimeout::ZERO
            } else {
                PollTimeout::try_from(FINISH_POLL).unwrap_or(PollTimeout::MAX)
            };
            let mut fds = [PollFd::new(pipe.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, wait) {
                Ok(0) if finishing => break,
                Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
                Ok(_) => {}
                Err(err) => {
                    tracing::warn!("polling a task's output failed: {err}");
                    break;
                }
            }
            let n = match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(err) => {
                    tracing::warn!("reading a task's output failed: {err}");
                    break;
                }
            };
            match self.write_capped(&buf[..n]) {
                Ok(true) => {}
                Ok(false) => {
                    self.cap_reached.store(true, Ordering::SeqCst);
                    break;
                }
                Err(err) => {
                    tracing::warn!("writing a task's output failed: {err}");
                    break;
                }
            }
        }
        // Dropping the read end here: a writer past the cap gets EPIPE instead of blocking.
        drop(pipe);
        self.state.send_replace(CopyState::Ended);
    }

    /// Writes what fits under the cap; false when `bytes` did not all fit (the rest is
    /// dropped). Output of exactly the cap is within it.
    fn write_capped(&self, bytes: &[u8]) -> std::io::Result<bool> {
        let mut sink = lock(&self.sink);
        let room = self.cap.saturating_sub(sink.written);
        let fits = usize::try_from(room).map_or(bytes.len(), |room| room.min(bytes.len()));
        sink.write(&bytes[..fits])?;
        Ok(fits == bytes.len())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;

    fn capture_into(cap: u64) -> (tempfile::TempDir, std::path::PathBuf, Arc<Capture>, File) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.log");
        let file = crate::sys::private_dir::create_new_file(&path).unwrap();
        let (capture, write) = Capture::start(file, cap).unwrap();
        (dir, path, capture, File::from(write))
    }

    #[tokio::test]
    async fn everything_under_the_cap_is_written_and_its_last_lines_kept() {
        let (_dir, path, capture, mut writer) = capture_into(1 << 20);
        writer.write_all(b"one\n\ntwo\nthree\n").unwrap();
        drop(writer);
        let mut state = capture.state();
        state.wait_for(|s| *s == CopyState::Ended).await.unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "one\n\ntwo\nthree\n"
        );
        assert_eq!(capture.written(), 15);
        assert_eq!(capture.last_lines(2), ["two", "three"]);
        capture.append_notice("\n[note]\n");
        assert_eq!(capture.last_lines(1), ["[note]"]);
        assert_eq!(capture.written(), 23);
    }

    #[tokio::test]
    async fn the_cap_holds_while_writing_and_the_writer_then_gets_epipe() {
        let (_dir, path, capture, mut writer) = capture_into(10_000);
        let written = std::thread::spawn(move || {
            let block = vec![b'x'; 4096];
            loop {
                if let Err(err) = writer.write_all(&block) {
                    return err.kind();
                }
            }
        });
        let mut state = capture.state();
        state.wait_for(|s| *s == CopyState::Ended).await.unwrap();
        assert!(capture.cap_reached());
        assert_eq!(written.join().unwrap(), std::io::ErrorKind::BrokenPipe);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 10_000);
        assert_eq!(capture.written(), 10_000);
    }

    #[tokio::test]
    async fn a_notice_at_the_cap_takes_the_outputs_end_and_the_file_stays_at_the_cap() {
        let (_dir, path, capture, mut writer) = capture_into(100);
        writer.write_all(&[b'x'; 150]).unwrap();
        let mut state = capture.state();
        state.wait_for(|s| *s == CopyState::Ended).await.unwrap();
        assert!(capture.cap_reached());
        capture.append_notice("\n[cap reached]\n");
        let mut want = vec![b'x'; 100 - 15];
        want.extend_from_slice(b"\n[cap reached]\n");
        assert_eq!(std::fs::read(&path).unwrap(), want);
        assert_eq!(capture.written(), 100);
        assert_eq!(
            capture.last_lines(2),
            ["x".repeat(85), "[cap reached]".into()]
        );
        // Under the cap a notice goes after the output; one longer than the cap is cut to it.
        let (_dir, path, capture, writer) = capture_into(40);
        drop(writer);
        capture.finish(Duration::from_secs(5)).await;
        capture.append_notice("short\n");
        capture.append_notice(&"n".repeat(50));
        assert_eq!(std::fs::read(&path).unwrap(), b"n".repeat(40));
        assert_eq!(capture.written(), 40);
    }

    #[tokio::test]
    async fn a_finish_request_ends_a_copier_whose_pipe_stays_open() {
        let (_dir, path, capture, mut writer) = capture_into(1 << 20);
        writer.write_all(b"before\n").unwrap();
        // `writer` stays open, as a process that left the task's group would keep it.
        capture.finish(Duration::from_secs(5)).await;
        assert_eq!(*capture.state().borrow(), CopyState::Ended);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "before\n");
        drop(writer);
    }
}

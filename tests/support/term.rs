//! An outer terminal for end-to-end tests: runs a program (the real `unipi-tui` binary) in a PTY,
//! parses what it draws with vt100, answers the queries a real terminal answers (DA1, kitty
//! keyboard, cursor position), and tracks the modes the program sets, so a test can assert both
//! on the screen and on "was the terminal restored?".
//!
//! It is written independently of the workbench's own emulator on purpose: the workbench's code
//! is what is under test here.

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::os::fd::BorrowedFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};

use super::wait::try_eventually;

/// How the fake terminal behaves.
#[derive(Debug, Clone, Copy)]
pub struct OuterOptions {
    pub rows: u16,
    pub cols: u16,
    /// Answer the kitty keyboard query (a kitty-protocol terminal); otherwise behave like xterm
    /// (only DA1 answered), so the program falls back to modifyOtherKeys.
    pub kitty: bool,
}

impl Default for OuterOptions {
    fn default() -> Self {
        OuterOptions {
            rows: 30,
            cols: 100,
            kitty: true,
        }
    }
}

/// Modes the program left set (or not) in the terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OuterModes {
    pub alternate_screen: bool,
    pub mouse_reporting: bool,
    pub bracketed_paste: bool,
    pub cursor_hidden: bool,
    pub focus_reporting: bool,
    pub kitty_stack_depth: usize,
    pub modify_other_keys: u16,
    /// The PTY's line discipline is canonical with echo (raw mode was left).
    pub cooked: bool,
}

impl OuterModes {
    /// What a shell expects to find after a program exits.
    pub fn restored() -> Self {
        OuterModes {
            alternate_screen: false,
            mouse_reporting: false,
            bracketed_paste: false,
            cursor_hidden: false,
            focus_reporting: false,
            kitty_stack_depth: 0,
            modify_other_keys: 0,
            cooked: true,
        }
    }
}

#[derive(Default)]
struct Answers {
    kitty: bool,
    replies: Vec<u8>,
    kitty_stack: Vec<u16>,
    modify_other_keys: u16,
    focus_reporting: bool,
    /// Every byte the program wrote, for tests that look for out-of-band sequences.
    raw: Vec<u8>,
}

impl vt100::Callbacks for Answers {
    fn unhandled_csi(
        &mut self,
        screen: &mut vt100::Screen,
        i1: Option<u8>,
        i2: Option<u8>,
        params: &[&[u16]],
        c: char,
    ) {
        let first = params.first().and_then(|p| p.first()).copied();
        match (i1, i2, c) {
            (None, None, 'c') => self.replies.extend_from_slice(b"\x1b[?62;22c"),
            (None, None, 'n') if first == Some(6) => {
                let (row, col) = screen.cursor_position();
                self.replies
                    .extend(format!("\x1b[{};{}R", row + 1, col + 1).into_bytes());
            }
            (Some(b'?'), None, 'u') if self.kitty => {
                let flags = self.kitty_stack.last().copied().unwrap_or(0);
                self.replies.extend(format!("\x1b[?{flags}u").into_bytes());
            }
            (Some(b'>'), None, 'u') if self.kitty => self.kitty_stack.push(first.unwrap_or(0)),
            (Some(b'<'), None, 'u') => {
                for _ in 0..first.unwrap_or(1).max(1) {
                    self.kitty_stack.pop();
                }
            }
            (Some(b'>'), None, 'm') if first == Some(4) => {
                self.modify_other_keys =
                    params.get(1).and_then(|p| p.first()).copied().unwrap_or(0);
            }
            (Some(b'?'), None, 'h') if params.iter().any(|p| p == &[1004]) => {
                self.focus_reporting = true;
            }
            (Some(b'?'), None, 'l') if params.iter().any(|p| p == &[1004]) => {
                self.focus_reporting = false;
            }
            _ => {}
        }
    }
}

/// The typed-input side of the PTY master; `None` once the terminal hung up.
type Writer = Arc<Mutex<Option<Box<dyn Write + Send>>>>;

/// A program running in the fake terminal.
pub struct Session {
    /// `None` once the terminal hung up ([`Session::hang_up`]).
    master: Option<Box<dyn MasterPty + Send>>,
    writer: Writer,
    child: Box<dyn Child + Send + Sync>,
    parser: Arc<Mutex<vt100::Parser<Answers>>>,
    /// The thread reading the program's output; it holds its own copy of the master.
    reader: Option<JoinHandle<()>>,
    stop_reading: Arc<AtomicBool>,
    /// Set once the reader saw the end of the program's output.
    output_ended: Arc<AtomicBool>,
}

impl Session {
    /// Starts `program` with `args` and `env` (added to a minimal inherited environment).
    pub fn spawn(
        program: &Path,
        args: &[&str],
        env: &[(&str, String)],
        cwd: &Path,
        options: OuterOptions,
    ) -> Result<Session> {
        let pair = native_pty_system()
            .openpty(size(options.rows, options.cols))
            .context("openpty")?;
        let mut cmd = CommandBuilder::new(program);
        cmd.args(args);
        cmd.cwd(cwd);
        cmd.env("TERM", "xterm-256color");
        cmd.env_remove("TMUX");
        cmd.env_remove("NO_COLOR");
        // No desktop of the machine running the tests: a test that wants a session bus starts
        // its own and passes its address (tests/suite/notify_native.rs).
        cmd.env_remove("DBUS_SESSION_BUS_ADDRESS");
        for (key, value) in env {
            cmd.env(key, value);
        }
        let child = pair.slave.spawn_command(cmd).context("spawn under test")?;
        drop(pair.slave);
        let parser = Arc::new(Mutex::new(vt100::Parser::new_with_callbacks(
            nz(options.rows),
            nz(options.cols),
            0,
            Answers {
                kitty: options.kitty,
                ..Answers::default()
            },
        )));
        let mut reader = pair.master.try_clone_reader().context("pty reader")?;
        let master_fd = pair.master.as_raw_fd().context("pty master fd")?;
        let writer: Writer = Arc::new(Mutex::new(Some(
            pair.master.take_writer().context("pty writer")?,
        )));
        let parser_for_reader = Arc::clone(&parser);
        // Replies to the program's queries go through the same writer as typed input.
        let reply_out = Arc::clone(&writer);
        let stop_reading = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&stop_reading);
        let output_ended = Arc::new(AtomicBool::new(false));
        let ended = Arc::clone(&output_ended);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            while !stop.load(Ordering::SeqCst) {
                // Wait for output a bounded time, so `hang_up` can stop this thread and close
                // its copy of the master.
                // SAFETY: the fd is the session's master, which `hang_up` and `Drop` close only
                // after joining this thread.
                let fd = unsafe { BorrowedFd::borrow_raw(master_fd) };
                let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
                match poll(&mut fds, PollTimeout::from(50u16)) {
                    Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
                    Ok(_) => {}
                    Err(_) => break,
                }
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let replies = {
                            let Ok(mut parser) = parser_for_reader.lock() else {
                                break;
                            };
                            parser.process(&buf[..n]);
                            parser.callbacks_mut().raw.extend_from_slice(&buf[..n]);
                            std::mem::take(&mut parser.callbacks_mut().replies)
                        };
                        if !replies.is_empty()
                            && let Ok(mut out) = reply_out.lock()
                            && let Some(out) = out.as_mut()
                        {
                            let _ = out.write_all(&replies);
                            let _ = out.flush();
                        }
                    }
                }
            }
            ended.store(true, Ordering::Release);
        });
        Ok(Session {
            master: Some(pair.master),
            writer,
            child,
            parser,
            reader: Some(reader),
            stop_reading,
            output_ended,
        })
    }

    /// Sends bytes as if typed.
    pub fn send(&self, bytes: &[u8]) {
        let mut writer = self.writer.lock().expect("writer lock");
        let writer = writer.as_mut().expect("the terminal hung up");
        writer.write_all(bytes).expect("write to pty");
        writer.flush().expect("flush pty");
    }

    /// The terminal goes away, as when its window closes or `tmux kill-pane` runs: every copy
    /// of the PTY master is closed, so the kernel hangs up the program's terminal (SIGHUP to
    /// it, and its reads and writes on the terminal fail from then on).
    pub fn hang_up(&mut self) {
        self.stop_reading.store(true, Ordering::SeqCst);
        if let Some(reader) = self.reader.take() {
            reader.join().expect("the output reader panicked");
        }
        self.writer.lock().expect("writer lock").take();
        self.master.take();
    }

    /// Types text one character at a time, as a person would (with a small pause).
    pub fn type_text(&self, text: &str) {
        for ch in text.chars() {
            let mut buf = [0u8; 4];
            self.send(ch.encode_utf8(&mut buf).as_bytes());
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn screen_text(&self) -> String {
        self.parser.lock().expect("parser lock").screen().contents()
    }

    /// Every byte the program wrote so far.
    pub fn raw_output(&self) -> Vec<u8> {
        self.parser
            .lock()
            .expect("parser lock")
            .callbacks()
            .raw
            .clone()
    }

    /// Runs `check` on the screen until it holds or `timeout` passes; the error shows the screen.
    pub fn wait_for(
        &self,
        what: &str,
        timeout: Duration,
        check: impl Fn(&vt100::Screen) -> bool,
    ) -> Result<()> {
        try_eventually(what, timeout, || {
            check(self.parser.lock().expect("parser lock").screen())
        })
        .map_err(|err| anyhow!("{err}; screen:\n{}", self.screen_text()))
    }

    pub fn wait_for_text(&self, needle: &str, timeout: Duration) -> Result<()> {
        self.wait_for(&format!("{needle:?} on screen"), timeout, |s| {
            s.contents().contains(needle)
        })
    }

    /// Resizes the terminal (the program gets SIGWINCH).
    pub fn resize(&self, rows: u16, cols: u16) -> Result<()> {
        self.parser
            .lock()
            .expect("parser lock")
            .screen_mut()
            .set_size(nz(rows), nz(cols));
        self.master
            .as_ref()
            .context("the terminal hung up")?
            .resize(size(rows, cols))
            .context("resize pty")
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.process_id()
    }

    /// Waits for the program to exit and returns its exit code (signals map to 128 + N).
    pub fn wait_exit(&mut self, timeout: Duration) -> Result<u32> {
        let started = Instant::now();
        let exited = try_eventually("the program's exit", timeout, || {
            self.child.try_wait().transpose()
        });
        let Ok(status) = exited else {
            let _ = self.child.kill();
            bail!(
                "program did not exit within {timeout:?}; screen:\n{}",
                self.screen_text()
            );
        };
        let status = status.context("try_wait")?;
        // What was written last (the restore sequences, Pi's transcript) is parsed once the
        // reader reached the end of the output: the PTY closes when the program and everything
        // that inherited the terminal are gone.
        let remaining = timeout.saturating_sub(started.elapsed());
        try_eventually("the end of its output", remaining, || {
            self.output_ended.load(Ordering::Acquire) || self.reader.is_none()
        })
        .map_err(|_| {
            anyhow!(
                "the program exited but its terminal stayed open for {timeout:?} (a process \
                 outlived it holding the terminal); screen:\n{}",
                self.screen_text()
            )
        })?;
        Ok(status.exit_code())
    }

    /// The terminal modes as the program left them.
    pub fn modes(&self) -> OuterModes {
        let parser = self.parser.lock().expect("parser lock");
        let screen = parser.screen();
        let answers = parser.callbacks();
        let cooked = self
            .master
            .as_ref()
            .and_then(|master| master.as_raw_fd())
            .and_then(|fd| {
                // SAFETY-free: the fd belongs to `self.master`, alive for this borrow.
                let fd = unsafe { BorrowedFd::borrow_raw(fd) };
                nix::sys::termios::tcgetattr(fd).ok()
            })
            .is_some_and(|t| {
                use nix::sys::termios::LocalFlags;
                t.local_flags
                    .contains(LocalFlags::ICANON | LocalFlags::ECHO)
            });
        OuterModes {
            alternate_screen: screen.alternate_screen(),
            mouse_reporting: screen.mouse_protocol_mode() != vt100::MouseProtocolMode::None,
            bracketed_paste: screen.bracketed_paste(),
            cursor_hidden: screen.hide_cursor(),
            focus_reporting: answers.focus_reporting,
            kitty_stack_depth: answers.kitty_stack.len(),
            modify_other_keys: answers.modify_other_keys,
            cooked,
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        // The reader polls the master's fd: stop it before the master closes.
        self.stop_reading.store(true, Ordering::SeqCst);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

fn size(rows: u16, cols: u16) -> PtySize {
    PtySize {
        rows,
        cols,
        pixel_width: 0,
        pixel_height: 0,
    }
}

fn nz(n: u16) -> NonZeroU16 {
    NonZeroU16::new(n.max(1)).expect("max(1) is non-zero")
}

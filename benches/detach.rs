//! What a detachable session's relay costs, against the plain way (a program in a PTY the
//! terminal reads directly): the added keystroke-to-echo latency and the throughput of a large
//! output. The program is `cat`-like on purpose — the relay is measured, not the workbench.
//!
//! - **direct**: `sh -c 'stty raw -echo; …'` in a PTY this benchmark reads, as a terminal would
//!   read a program in plain mode;
//! - **relay**: the same script run by a real session process (`unipi-tui __session`), with the
//!   real `unipi-tui attach` in a PTY this benchmark reads: every byte goes terminal → client →
//!   socket → session process → PTY → program, and back the same way.
//!
//! Latency: one byte written, the time until `cat` echoed it back (raw mode: no line
//! discipline in the way), many times over. Throughput: one byte triggers `cat FILE` (64 MiB of
//! text lines), the time until the last byte arrived. Figures are printed, never asserted (see
//! `docs/benchmarks.md`). Run with `cargo bench --bench detach`; under `cargo test
//! --all-targets` (no `--bench`) it does a short smoke pass. `UNIPI_BENCH_BIN` measures another
//! build.

mod support;

use std::io::{BufRead as _, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};
use support::{Stats, ms};

fn main() -> ExitCode {
    support::bench_main("detach", |full| {
        run(if full { Plan::FULL } else { Plan::SMOKE })
    })
}

#[derive(Clone, Copy)]
struct Plan {
    keystrokes: usize,
    bytes: usize,
    runs: usize,
}

impl Plan {
    const FULL: Plan = Plan {
        keystrokes: 2000,
        bytes: 64 << 20,
        runs: 5,
    };
    const SMOKE: Plan = Plan {
        keystrokes: 20,
        bytes: 1 << 20,
        runs: 1,
    };
}

/// `$UNIPI_BENCH_BIN`, else the binary cargo built for this benchmark, else
/// `target/release/unipi-tui`.
fn binary() -> Result<PathBuf> {
    let chosen = std::env::var_os("UNIPI_BENCH_BIN").map(PathBuf::from);
    let built = option_env!("CARGO_BIN_EXE_unipi-tui").map(PathBuf::from);
    let fallback = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/unipi-tui");
    let bin = chosen.or(built).unwrap_or(fallback);
    if !bin.is_file() {
        bail!(
            "{} is missing: run `cargo bench --bench detach` (it builds it)",
            bin.display()
        );
    }
    Ok(bin)
}

fn run(plan: Plan) -> Result<()> {
    let bin = binary()?;
    let dir = tempfile::tempdir().context("a temporary directory")?;
    let env = Env::new(dir.path())?;
    let stream = dir.path().join("stream");
    write_stream(&stream, plan.bytes)?;
    let flood = format!(
        "stty raw -echo; printf READY; while head -c 1 >/dev/null; do cat '{}'; printf END; done",
        stream.display()
    );
    let echo = "stty raw -echo; printf READY; exec cat";

    let mut direct_echo = Pty::spawn(Path::new("sh"), &["-c", echo], &env)?;
    let mut direct_flood = Pty::spawn(Path::new("sh"), &["-c", &flood], &env)?;
    let relay_echo_session = start_session(&bin, &env, "bench-echo", echo)?;
    let relay_flood_session = start_session(&bin, &env, "bench-flood", &flood)?;
    let mut relay_echo = Pty::spawn(&bin, &["attach", "bench-echo"], &env)?;
    let mut relay_flood = Pty::spawn(&bin, &["attach", "bench-flood"], &env)?;
    for pty in [
        &mut direct_echo,
        &mut direct_flood,
        &mut relay_echo,
        &mut relay_flood,
    ] {
        pty.read_until(b"READY", Duration::from_secs(30))?;
    }

    // Interleaved, so both see the same background load.
    let (mut direct, mut relay) = (Vec::new(), Vec::new());
    for i in 0..plan.keystrokes {
        let byte = b'a' + (i % 26) as u8;
        direct.push(direct_echo.echo(byte)?);
        relay.push(relay_echo.echo(byte)?);
    }
    let (direct, relay) = (Stats::of(&direct), Stats::of(&relay));
    println!(
        "keystroke → echo, {} samples (ms):     p50     p90     p99     max",
        plan.keystrokes
    );
    for (what, stats) in [("direct PTY", &direct), ("through the relay", &relay)] {
        println!(
            "  {what:<36}{:>8}{:>8}{:>8}{:>8}",
            ms(stats.p50),
            ms(stats.p90),
            ms(stats.p99),
            ms(stats.max)
        );
    }
    println!(
        "  added by the relay (p50 / p99): {} / {} ms",
        ms(relay.p50.saturating_sub(direct.p50)),
        ms(relay.p99.saturating_sub(direct.p99))
    );

    let expected = plan.bytes + b"END".len();
    let (mut direct, mut relay) = (Vec::new(), Vec::new());
    for _ in 0..plan.runs {
        direct.push(direct_flood.flood(expected)?);
        relay.push(relay_flood.flood(expected)?);
    }
    let (direct, relay) = (Stats::of(&direct).p50, Stats::of(&relay).p50);
    let rate = |took: Duration| plan.bytes as f64 / 1e6 / took.as_secs_f64();
    println!(
        "throughput, {:.1} MB of text lines, median of {} runs:",
        plan.bytes as f64 / 1e6,
        plan.runs
    );
    println!(
        "  direct PTY                          {:>8.1} MB/s ({:.3} s)",
        rate(direct),
        direct.as_secs_f64()
    );
    println!(
        "  through the relay                   {:>8.1} MB/s ({:.3} s, {:.0}% of direct)",
        rate(relay),
        relay.as_secs_f64(),
        100.0 * direct.as_secs_f64() / relay.as_secs_f64()
    );

    for name in ["bench-echo", "bench-flood"] {
        let status = env
            .command(&bin)
            .args(["kill", name])
            .stdout(Stdio::null())
            .status()?;
        if !status.success() {
            bail!("`unipi-tui kill {name}` failed: {status}");
        }
    }
    for mut session in [relay_echo_session, relay_flood_session] {
        session.wait()?;
    }
    for mut pty in [relay_echo, relay_flood] {
        pty.wait_exit()?;
    }
    Ok(())
}

/// The environment of every process here: HOME, XDG directories and TMPDIR in the temporary
/// directory, so no session or log of the user's is touched.
struct Env {
    vars: Vec<(&'static str, PathBuf)>,
    dir: PathBuf,
}

impl Env {
    fn new(dir: &Path) -> Result<Env> {
        let vars = support::env_dirs(
            dir,
            &[
                ("HOME", "home"),
                ("XDG_CONFIG_HOME", "home/.config"),
                ("XDG_STATE_HOME", "home/.local/state"),
                ("XDG_CACHE_HOME", "home/.cache"),
                ("TMPDIR", "tmp"),
            ],
        )?;
        Ok(Env {
            vars,
            dir: dir.to_path_buf(),
        })
    }

    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command.current_dir(&self.dir).env("XDG_RUNTIME_DIR", "");
        for (key, value) in &self.vars {
            command.env(key, value);
        }
        command
    }
}

/// `unipi-tui __session name info sh -c script`, once it listens.
fn start_session(bin: &Path, env: &Env, name: &str, script: &str) -> Result<std::process::Child> {
    let mut child = env
        .command(bin)
        .args(["__session", name, "info", "sh", "-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("start a session process")?;
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        std::io::BufReader::new(out).read_line(&mut line)?;
    }
    if line.trim() != "ready" {
        bail!("session {name} did not start: {line:?}");
    }
    Ok(child)
}

/// Lines of printable text, `bytes` long.
fn write_stream(path: &Path, bytes: usize) -> Result<()> {
    let line = b"the quick brown fox jumps over the lazy dog, 0123456789 and again\n";
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut left = bytes;
    while left > 0 {
        let n = left.min(line.len());
        out.write_all(&line[..n])?;
        left -= n;
    }
    out.flush()?;
    Ok(())
}

/// A program in a PTY this benchmark reads like a terminal (answering DA1, so the client's
/// keyboard probe never waits for its timeout).
struct Pty {
    _master: Box<dyn MasterPty + Send>,
    writer: Arc<Mutex<Box<dyn std::io::Write + Send>>>,
    output: mpsc::Receiver<Vec<u8>>,
    child: Box<dyn Child + Send + Sync>,
    /// Output read but not consumed yet.
    pending: Vec<u8>,
}

impl Pty {
    fn spawn(program: &Path, args: &[&str], env: &Env) -> Result<Pty> {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: 40,
                cols: 120,
                pixel_width: 0,
                pixel_height: 0,
            })
            .context("openpty")?;
        let mut cmd = CommandBuilder::new(program);
        cmd.args(args);
        cmd.cwd(&env.dir);
        cmd.env("TERM", "xterm-256color");
        cmd.env("XDG_RUNTIME_DIR", "");
        for (key, value) in &env.vars {
            cmd.env(key, value);
        }
        let child = pair.slave.spawn_command(cmd).context("spawn in a PTY")?;
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader()?;
        // Keystrokes and the answers to the probe share the one writer portable-pty hands out.
        let writer = Arc::new(Mutex::new(pair.master.take_writer()?));
        let answers = Arc::clone(&writer);
        let (tx, output) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let chunk = &buf[..n];
                        // The client's keyboard probe: answer like xterm (DA1, no kitty).
                        if chunk.windows(3).any(|w| w == b"\x1b[c")
                            && let Ok(mut out) = answers.lock()
                        {
                            let _ = out.write_all(b"\x1b[?62;22c");
                            let _ = out.flush();
                        }
                        if tx.send(chunk.to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Ok(Pty {
            _master: pair.master,
            writer,
            output,
            child,
            pending: Vec::new(),
        })
    }

    fn read_until(&mut self, needle: &[u8], within: Duration) -> Result<()> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(at) = self.pending.windows(needle.len()).position(|w| w == needle) {
                self.pending.drain(..at + needle.len());
                return Ok(());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(chunk) => self.pending.extend(chunk),
                Err(_) => bail!(
                    "no {:?} within {within:?}; got {:?}",
                    String::from_utf8_lossy(needle),
                    String::from_utf8_lossy(&self.pending)
                ),
            }
        }
    }

    fn send(&self, bytes: &[u8]) -> Result<()> {
        let mut out = self
            .writer
            .lock()
            .map_err(|_| anyhow::anyhow!("the PTY's writer lock is poisoned"))?;
        out.write_all(bytes)?;
        out.flush()?;
        Ok(())
    }

    /// Writes `byte`; the time until it came back.
    fn echo(&mut self, byte: u8) -> Result<Duration> {
        let start = Instant::now();
        self.send(&[byte])?;
        self.read_until(&[byte], Duration::from_secs(10))?;
        Ok(start.elapsed())
    }

    /// Triggers one flood; the time until all `expected` bytes (and the end mark) arrived.
    fn flood(&mut self, expected: usize) -> Result<Duration> {
        self.pending.clear();
        let start = Instant::now();
        self.send(b"x")?;
        let mut got = 0usize;
        while got < expected {
            let chunk = self
                .output
                .recv_timeout(Duration::from_secs(120))
                .context("the flood stopped")?;
            got += chunk.len();
        }
        let took = start.elapsed();
        if got != expected {
            bail!("expected {expected} bytes, got {got}");
        }
        Ok(took)
    }

    fn wait_exit(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait()?.is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                bail!("a client did not exit after its session ended");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
    }
}

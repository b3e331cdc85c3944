//! Pane benchmarks, end to end: the real release `unipi-tui` runs in an outer PTY that this
//! program drains and answers like a terminal would, with a tiny stand-in for Pi (a shell script
//! that `cat`s a prepared ANSI stream) as the pane's child. Out come the figures the pane issue
//! asks for: throughput compared with tmux consuming the same stream, CPU while the child is
//! idle, and resident memory with a full 10,000-row scrollback; plus the emulator alone, which
//! is where throughput is won or lost.
//!
//! Figures are printed, never asserted: a timing assertion flakes on a busy machine, so the
//! numbers live in `docs/benchmarks.md`. Run with `cargo bench --bench pane`; cargo builds the
//! release binary for benchmarks and hands its path over in `CARGO_BIN_EXE_unipi-tui`. Under
//! `cargo test --all-targets` (no `--bench` argument) it does a short smoke pass instead, so the
//! harness itself stays tested without slowing the suite down.
//!
//! Everything written goes to one temp dir, and the workbench's config, state and cache
//! directories point into it, so nothing of the user's is read or written.
//!
//! `UNIPI_BENCH_BIN=<binary>` measures another build; `UNIPI_BENCH_ONLY=memory` takes the idle
//! and memory figures alone (seconds, not minutes), so two builds can be run in turns on one
//! machine state. Reading the memory figures:
//! - Most of VmRSS is the executable's code, which the table prints apart from the anonymous memory
//!   (heap, stacks). Code pages are clean file pages shared by every run of the binary, and each
//!   fault maps up to 64 KiB of the pages around it, so resident code follows the layout of the
//!   text segment: a change to functions the bench never runs can move it by a few tenths of a MiB
//!   in a `--release` build (16 codegen units, no LTO).
//! - Compare the profile users get, `--profile dist` (fat LTO, one codegen unit; about 2 MiB less
//!   code resident than `--release`), and compare two builds in turns, not against a figure from
//!   another day: the same binary's resident code differed by more than 1 MiB between machine
//!   states.
//! - The workbench runs without `TMUX` whatever the bench's environment (see `Outer::spawn`); in
//!   it, `TMUX` only chooses how notifications are wrapped, which none of these runs sends.

mod support;

use std::ffi::OsString;
use std::io::{BufWriter, Read, Write};
use std::num::NonZeroU16;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};
use unipi_tui::config::theme::Theme;
use unipi_tui::pane::emulator::{Emulator, HostInfo};
use unipi_tui::pane::history::DEFAULT_CAPACITY;

/// The outer terminal; the pane gets every row but the workbench's footer, like tmux's pane gets
/// every row but its status line, so both parse into a 120x39 screen.
const OUTER_ROWS: u16 = 40;
const OUTER_COLS: u16 = 120;
const PANE_ROWS: NonZeroU16 = non_zero(OUTER_ROWS - 1);
const PANE_COLS: NonZeroU16 = non_zero(OUTER_COLS);
/// Lines the memory run prints: more than the scrollback keeps, so it ends full.
const SCROLLBACK_FILL_LINES: usize = 12_000;
/// How the emulator is fed in the parser-alone figure (the PTY reader's buffer size).
const PARSER_CHUNK: usize = 64 * 1024;
/// Printed by the child once its output is written; seeing it drawn means the workbench has
/// parsed everything before it. No byte after the first is a `B`, which `Matcher` relies on.
const READY_MARKER: &[u8] = b"BENCH_READY_7Q";
const IDLE_WINDOW: Duration = Duration::from_secs(5);

fn main() -> ExitCode {
    // Run as the pane's child for the latency figures (see `echo_child`).
    if let Some(mode) = std::env::var_os(ECHO_CHILD_ENV) {
        return match echo_child(mode == "flood") {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("pane bench's echo child: {err:#}");
                ExitCode::FAILURE
            }
        };
    }
    support::bench_main("pane", |full| {
        let only_memory = std::env::var_os("UNIPI_BENCH_ONLY").is_some_and(|v| v == "memory");
        run(match (full, only_memory) {
            (true, false) => Plan::FULL,
            (true, true) => Plan::MEMORY,
            (false, _) => Plan::SMOKE,
        })
    })
}

/// How much to measure.
#[derive(Clone, Copy)]
struct Plan {
    /// The stream's size; none skips the throughput figures (the emulator's included).
    stream_bytes: Option<usize>,
    runs: usize,
    tmux: bool,
    idle_and_memory: bool,
    /// Keystrokes timed with the pane idle and during a flood.
    keystrokes: (usize, usize),
}

impl Plan {
    const FULL: Plan = Plan {
        stream_bytes: Some(64_000_000),
        runs: 5,
        tmux: true,
        idle_and_memory: true,
        keystrokes: (200, 100),
    };
    /// `UNIPI_BENCH_ONLY=memory`: the idle and memory runs alone, in seconds rather than minutes.
    const MEMORY: Plan = Plan {
        stream_bytes: None,
        runs: 0,
        tmux: false,
        idle_and_memory: true,
        keystrokes: (0, 0),
    };
    const SMOKE: Plan = Plan {
        stream_bytes: Some(1_000_000),
        runs: 1,
        tmux: false,
        idle_and_memory: false,
        keystrokes: (3, 3),
    };
}

fn run(plan: Plan) -> Result<()> {
    let bin = workbench_binary()?;
    let mut dir = tempfile::Builder::new()
        .prefix("unipi-pane-bench-")
        .tempdir()
        .context("failed to create a temp dir")?;
    // The workbench's log lands in there too: keep it when asked, to look at a failed run.
    if std::env::var_os("UNIPI_BENCH_KEEP").is_some_and(|v| !v.is_empty()) {
        dir.disable_cleanup(true);
        eprintln!("keeping {}", dir.path().display());
    }
    let bench = Bench::new(bin, dir.path())?;
    let load_before = load_average();
    let speed = match plan.stream_bytes {
        Some(bytes) => Some(speed(&bench, dir.path(), bytes, plan)?),
        None => None,
    };
    let latency = match plan.keystrokes {
        (0, 0) => None,
        (idle, flood) => Some(Latency {
            idle: bench.keystroke_latency(idle, false)?,
            flood: bench.keystroke_latency(flood, true)?,
        }),
    };
    let (idle, memory) = if plan.idle_and_memory {
        (
            Some(bench.idle_cpu()?),
            Some(bench.memory_with_full_scrollback()?),
        )
    } else {
        (None, None)
    };

    print_table(&Figures {
        load: (load_before, load_average()),
        speed: speed.as_ref(),
        latency: latency.as_ref(),
        idle: idle.as_ref(),
        memory: memory.as_ref(),
    });
    Ok(())
}

/// The stream through the emulator alone, bare vt100, the workbench and tmux.
fn speed(bench: &Bench, dir: &Path, bytes: usize, plan: Plan) -> Result<Speed> {
    let stream_path = dir.join("stream.ans");
    let stream_len = write_file(&stream_path, |out| write_stream(out, bytes))?;
    let mb = stream_len as f64 / 1e6;
    eprintln!(
        "stream: {mb:.1} MB of truecolour text, cursor movement and redraws ({})",
        stream_path.display()
    );

    let stream = std::fs::read(&stream_path).context("failed to read the stream back")?;
    let tmux_version = if plan.tmux { tmux_version() } else { None };
    if plan.tmux && tmux_version.is_none() {
        eprintln!("tmux not found: no comparison");
    }
    let throughput = bench.throughput(&stream_path, &stream, plan.runs, tmux_version)?;
    Ok(Speed { mb, throughput })
}

/// `$UNIPI_BENCH_BIN`, else the release binary cargo built for this benchmark, else
/// `target/release/unipi-tui`.
fn workbench_binary() -> Result<PathBuf> {
    // `UNIPI_BENCH_BIN` points at another build, to compare two versions on one machine.
    let chosen = std::env::var_os("UNIPI_BENCH_BIN").map(PathBuf::from);
    let built = option_env!("CARGO_BIN_EXE_unipi-tui").map(PathBuf::from);
    let fallback = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/unipi-tui");
    let bin = chosen.or(built).unwrap_or(fallback);
    if !bin.is_file() {
        bail!(
            "{} is missing: run `cargo build --release` (or `cargo bench --bench pane`, which \
             builds it) first",
            bin.display()
        );
    }
    Ok(bin)
}

// ---------------------------------------------------------------------------------------------
// The measurements.

/// The median runs and the median ratios of the interleaved rounds.
struct Throughput {
    workbench: WorkbenchRun,
    /// tmux's version and median run.
    tmux: Option<(String, TmuxRun)>,
    ratio: Option<Ratio>,
    /// `Emulator::process` over the stream, in the bench process: the median.
    emulator: Duration,
    /// Bare vt100 over the stream: the median.
    bare: Duration,
    /// End-to-end throughput over the bare parser's, each round's own pair: the median.
    of_bare: f64,
    /// The bare parser's CPU time over the workbench's (all its threads), each round's own pair:
    /// the median. Steadier than the wall-time figure on a machine busy with other work.
    of_bare_cpu: f64,
}

struct WorkbenchRun {
    wall: Duration,
    /// User + system time of the workbench alone: our children's accumulated times once it is
    /// reaped, less what its child (the script and its `cat`) reported.
    cpu_secs: f64,
    /// User + system time of the `cat` writing the stream into the PTY (the kernel's side of
    /// the PTY is charged to the writer).
    writer_cpu_secs: f64,
    /// Bytes the workbench drew into the outer terminal.
    drawn_bytes: u64,
    /// Frames it drew (see [`Seen::frames`]), the last one (with the transcript) included.
    frames: u64,
    /// VmHWM as last read before the workbench exited: what a flood costs in memory (output
    /// queued between the PTY reader and the loop included).
    peak_rss_kb: u64,
}

struct TmuxRun {
    wall: Duration,
    /// User + system time of the tmux server.
    cpu_secs: f64,
    writer_cpu_secs: f64,
}

/// unipi-tui over tmux in one interleaved pair of runs.
#[derive(Clone, Copy)]
struct Ratio {
    wall: f64,
    cpu: f64,
}

/// Keystroke to echo drawn, with the pane idle and while it parses a flood.
struct Latency {
    idle: support::Stats,
    flood: support::Stats,
}

struct IdleFigure {
    cpu_percent: f64,
    /// Context switches of all the workbench's threads in the window: each is a wake-up.
    wakeups: u64,
    rss_kb: u64,
    parts: RssParts,
}

struct MemoryFigure {
    rss_kb: u64,
    hwm_kb: u64,
    parts: RssParts,
    /// Bytes of the coloured lines the child printed, for scale.
    printed_bytes: u64,
}

/// Runs of the workbench share the binary, the temp dir and the environment.
struct Bench {
    bin: PathBuf,
    dir: PathBuf,
    env: Vec<(&'static str, PathBuf)>,
}

impl Bench {
    fn new(bin: PathBuf, dir: &Path) -> Result<Bench> {
        let env = support::env_dirs(
            dir,
            &[
                // The workbench keeps a session database per project under HOME: a HOME of its
                // own keeps the user's free of one per bench run (and the figures free of what
                // the user's configs start).
                ("HOME", "home"),
                ("XDG_CONFIG_HOME", "config"),
                ("XDG_STATE_HOME", "state"),
                ("XDG_CACHE_HOME", "cache"),
            ],
        )?;
        Ok(Bench {
            bin,
            dir: dir.to_path_buf(),
            env,
        })
    }

    /// Writes an executable `sh` script for the workbench's `--pi-bin`. Like Pi, it answers
    /// `--version` (the workbench asks a program with no Pi package beside it); otherwise the
    /// workbench would wait for the body to end, or read its stream, before starting.
    fn script(&self, name: &str, body: &str) -> Result<PathBuf> {
        let path = self.dir.join(name);
        let answer = "if [ \"$1\" = --version ]; then echo 0.73.1; exit 0; fi";
        std::fs::write(&path, format!("#!/bin/sh\n{answer}\n{body}\n"))
            .with_context(|| format!("failed to write {}", path.display()))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("failed to make {} executable", path.display()))?;
        Ok(path)
    }

    fn spawn(&self, pi: &Path) -> Result<Outer> {
        let args = [OsString::from("--pi-bin"), pi.as_os_str().to_owned()];
        Outer::spawn(&self.bin, &args, &self.env, &self.dir)
    }

    /// The stream through bare vt100, the emulator, the workbench and (when `tmux` names a
    /// version) tmux, `runs` rounds of the four: interleaved, so all see the same background
    /// load on a shared machine, and each round's end-to-end time is compared with the bare
    /// parser's of the same round.
    fn throughput(
        &self,
        stream: &Path,
        bytes: &[u8],
        runs: usize,
        tmux: Option<String>,
    ) -> Result<Throughput> {
        let workbench_times = self.dir.join("writer-times-unipi");
        let tmux_times = self.dir.join("writer-times-tmux");
        let cat = self.script(
            "cat-stream",
            &format!("cat {}\ntimes > {}", quote(stream), quote(&workbench_times)),
        )?;
        let mut workbench_runs = Vec::new();
        let mut tmux_runs = Vec::new();
        let mut ratios = Vec::new();
        let (mut bare_times, mut emulator_times) = (Vec::new(), Vec::new());
        let (mut of_bare, mut of_bare_cpu) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let cpu_before = thread_cpu_secs()?;
            let bare = time_bare_vt100(bytes);
            let bare_cpu = thread_cpu_secs()? - cpu_before;
            let emulator = time_emulator(bytes);
            let run = self.time_workbench(&cat, &workbench_times)?;
            of_bare.push(bare.as_secs_f64() / run.wall.as_secs_f64());
            of_bare_cpu.push(bare_cpu / run.cpu_secs.max(f64::EPSILON));
            bare_times.push(bare);
            emulator_times.push(emulator);
            eprintln!(
                "  bare vt100 {:.2} s (CPU {:.2} s), emulator {:.2} s; unipi-tui: {:.2} s wall \
                 ({:.0} % of the bare parser's throughput), CPU {:.2} s (cat {:.2} s), {} bytes \
                 drawn in {} frames ({:.0} a second), peak RSS {:.1} MiB",
                bare.as_secs_f64(),
                bare_cpu,
                emulator.as_secs_f64(),
                run.wall.as_secs_f64(),
                bare.as_secs_f64() / run.wall.as_secs_f64() * 100.0,
                run.cpu_secs,
                run.writer_cpu_secs,
                run.drawn_bytes,
                run.frames,
                run.frames as f64 / run.wall.as_secs_f64(),
                run.peak_rss_kb as f64 / 1024.0
            );
            if let Some(version) = &tmux {
                let other = time_tmux(stream, &tmux_times)?;
                eprintln!(
                    "  {version}: {:.2} s wall, CPU {:.2} s (cat {:.2} s)",
                    other.wall.as_secs_f64(),
                    other.cpu_secs,
                    other.writer_cpu_secs
                );
                ratios.push(Ratio {
                    wall: run.wall.as_secs_f64() / other.wall.as_secs_f64(),
                    cpu: run.cpu_secs / other.cpu_secs.max(f64::EPSILON),
                });
                tmux_runs.push(other);
            }
            workbench_runs.push(run);
        }
        Ok(Throughput {
            workbench: median_by_wall(workbench_runs, |run| run.wall)
                .context("no unipi-tui run was made")?,
            tmux: tmux.zip(median_by_wall(tmux_runs, |run| run.wall)),
            ratio: median_ratio(&ratios),
            emulator: median(emulator_times).context("no emulator run was made")?,
            bare: median(bare_times).context("no bare parser run was made")?,
            of_bare: median(of_bare).context("no round was made")?,
            of_bare_cpu: median(of_bare_cpu).context("no round was made")?,
        })
    }

    /// Wall time from spawning the workbench to its exit, the child printing the stream and
    /// leaving the shell's `times` in `writer_times`.
    fn time_workbench(&self, script: &Path, writer_times: &Path) -> Result<WorkbenchRun> {
        // A run that never got to write its times must not read the last run's.
        let _ = std::fs::remove_file(writer_times);
        let cpu_before = children_cpu_secs()?;
        let start = Instant::now();
        let mut outer = self.spawn(script)?;
        let status = outer.wait_exit(Duration::from_secs(300))?;
        let wall = start.elapsed();
        if !status.success() {
            bail!(
                "unipi-tui exited with status {} (its log is under {})",
                status.exit_code(),
                self.dir.join("state").display()
            );
        }
        let writer_cpu_secs = shell_children_cpu_secs(writer_times)?;
        Ok(WorkbenchRun {
            wall,
            cpu_secs: children_cpu_secs()? - cpu_before - writer_cpu_secs,
            writer_cpu_secs,
            drawn_bytes: outer.drawn_bytes(),
            frames: outer.frames(),
            peak_rss_kb: outer.peak_rss_kb,
        })
    }

    /// Time from a key written to the outer terminal until the outer terminal shows the child's
    /// echo of it, `keystrokes` times: the stdin reader, the key decoder, the PTY, the child, the
    /// PTY reader, the emulator and the next frame. The child is this program (`echo_child`),
    /// which draws each key it reads as `¤k¤` on the pane's last row, below a scroll region, so
    /// the echo stays on screen while a flood (`flood`) scrolls the rows above it. A random pause
    /// of 20–50 ms before each key (a fast typist's pace) keeps the keys off the frame clock's
    /// beat; idle, it also lets the last frame age past the 16 ms between frames, so what is
    /// measured is the path, not the wait for the next frame.
    fn keystroke_latency(&self, keystrokes: usize, flood: bool) -> Result<support::Stats> {
        let exe = std::env::current_exe().context("failed to find the bench's own executable")?;
        let mode = if flood { "flood" } else { "idle" };
        let script = self.script(
            &format!("echo-{mode}"),
            &format!(
                "stty raw -echo\n{ECHO_CHILD_ENV}={mode} exec {}",
                quote(&exe)
            ),
        )?;
        let args = [OsString::from("--pi-bin"), script.into_os_string()];
        let mut outer = Outer::spawn_watching(&self.bin, &args, &self.env, &self.dir)?;
        outer.wait_for_marker(Duration::from_secs(30))?;
        // Let the first frames go out and, with a flood, the flood get going.
        std::thread::sleep(Duration::from_millis(500));
        let mut pauses = LineMaker::new(17);
        let mut samples = Vec::with_capacity(keystrokes);
        for i in 0..keystrokes {
            std::thread::sleep(Duration::from_micros(20_000 + pauses.below(30_000)));
            let key = b'a' + u8::try_from(i % 26).unwrap_or(0);
            let sent = Instant::now();
            outer.type_key(key)?;
            let shown = outer.wait_for_echo(key, sent, Duration::from_secs(10))?;
            samples.push(shown.saturating_duration_since(sent));
        }
        outer.stop()?;
        eprintln!(
            "  keystroke latency, pane {mode}: {} keys, p50 {} ms",
            samples.len(),
            support::ms(support::Stats::of(&samples).p50)
        );
        Ok(support::Stats::of(&samples))
    }

    /// CPU use over [`IDLE_WINDOW`] once the child has printed a screenful and gone quiet.
    fn idle_cpu(&self) -> Result<IdleFigure> {
        let screen = self.dir.join("screen.ans");
        write_file(&screen, |out| {
            write_lines(out, usize::from(PANE_ROWS.get()), 7)
        })?;
        let script = self.script("print-and-idle", &print_then_sleep(&screen))?;
        let mut outer = self.spawn(&script)?;
        outer.wait_for_marker(Duration::from_secs(30))?;
        // Let the last frame go out and any short timer (a footer notice) run out first.
        std::thread::sleep(Duration::from_secs(1));
        let pid = outer.pid()?;
        let ticks_before = process_cpu_ticks(pid)?;
        let switches_before = context_switches(pid)?;
        let start = Instant::now();
        std::thread::sleep(IDLE_WINDOW);
        let ticks = process_cpu_ticks(pid)? - ticks_before;
        let elapsed = start.elapsed().as_secs_f64();
        let wakeups = context_switches(pid)?.saturating_sub(switches_before);
        let rss_kb = status_kb(pid, "VmRSS")?;
        let parts = rss_parts(pid, &self.bin)?;
        outer.stop()?;
        Ok(IdleFigure {
            cpu_percent: ticks as f64 / clock_ticks_per_sec() / elapsed * 100.0,
            wakeups,
            rss_kb,
            parts,
        })
    }

    /// Resident memory after the child printed more inline lines than the scrollback keeps.
    fn memory_with_full_scrollback(&self) -> Result<MemoryFigure> {
        let lines = self.dir.join("lines.ans");
        let printed_bytes = write_file(&lines, |out| write_lines(out, SCROLLBACK_FILL_LINES, 11))?;
        let script = self.script("fill-scrollback", &print_then_sleep(&lines))?;
        let mut outer = self.spawn(&script)?;
        outer.wait_for_marker(Duration::from_secs(60))?;
        std::thread::sleep(Duration::from_millis(500));
        let pid = outer.pid()?;
        let figure = MemoryFigure {
            rss_kb: status_kb(pid, "VmRSS")?,
            hwm_kb: status_kb(pid, "VmHWM")?,
            parts: rss_parts(pid, &self.bin)?,
            printed_bytes,
        };
        outer.stop()?;
        Ok(figure)
    }
}

/// The child's script for the idle and memory runs: print, then the marker (in its own write, a
/// moment later, so it is drawn whole), then stay alive until the workbench is stopped.
fn print_then_sleep(file: &Path) -> String {
    format!(
        "cat {}\nsleep 0.3\nprintf '%s' '{}'\nexec sleep 120",
        quote(file),
        String::from_utf8_lossy(READY_MARKER)
    )
}

/// Set (to `idle` or `flood`) when this program runs as the pane's child for the latency figures.
const ECHO_CHILD_ENV: &str = "UNIPI_BENCH_ECHO_CHILD";
/// Around the echoed key; the stream never prints it.
const ECHO_SIDE: char = '¤';

/// The pane's child in the latency runs (its terminal is raw, without echo). It keeps the pane's
/// last row out of the scroll region, prints the ready marker there, then draws each byte it
/// reads as `¤k¤` at the start of that row. With `flood` a thread prints coloured lines as fast
/// as the pane takes them meanwhile, in ~4 KB writes; one lock orders the two writers, so an
/// echo never lands inside an escape sequence.
fn echo_child(flood: bool) -> Result<()> {
    let last_row = PANE_ROWS.get();
    let out = Arc::new(Mutex::new(std::io::stdout()));
    {
        let mut out = out
            .lock()
            .map_err(|_| anyhow::anyhow!("stdout lock poisoned"))?;
        write!(
            out,
            "\x1b[1;{}r\x1b7\x1b[{last_row};1H{}\x1b8",
            last_row - 1,
            String::from_utf8_lossy(READY_MARKER)
        )?;
        out.flush()?;
    }
    if flood {
        let out = Arc::clone(&out);
        std::thread::spawn(move || {
            let mut lines = LineMaker::new(5);
            let batches: Vec<Vec<u8>> = (0..64)
                .map(|_| {
                    let mut batch = Vec::new();
                    while batch.len() < 4096 {
                        lines.full_width_line(&mut batch);
                    }
                    batch
                })
                .collect();
            for batch in batches.iter().cycle() {
                let Ok(mut out) = out.lock() else { return };
                if out.write_all(batch).and_then(|()| out.flush()).is_err() {
                    return;
                }
            }
        });
    }
    let mut stdin = std::io::stdin().lock();
    let mut byte = [0u8; 1];
    // Until the workbench hangs the terminal up.
    while let Ok(1) = stdin.read(&mut byte) {
        let mut out = out
            .lock()
            .map_err(|_| anyhow::anyhow!("stdout lock poisoned"))?;
        write!(
            out,
            "\x1b7\x1b[{last_row};1H\x1b[m{ECHO_SIDE}{}{ECHO_SIDE}\x1b8",
            char::from(byte[0])
        )?;
        out.flush()?;
    }
    Ok(())
}

fn time_emulator(stream: &[u8]) -> Duration {
    let mut emulator = Emulator::new(
        PANE_ROWS.get(),
        PANE_COLS.get(),
        DEFAULT_CAPACITY,
        Theme::default().terminal,
        HostInfo::default(),
    );
    let start = Instant::now();
    for chunk in stream.chunks(PARSER_CHUNK) {
        emulator.process(chunk);
        // What the app does after each chunk; all empty for this stream.
        std::hint::black_box(emulator.take_replies());
        std::hint::black_box(emulator.take_passthrough());
        std::hint::black_box(emulator.take_events());
    }
    std::hint::black_box(emulator.screen());
    start.elapsed()
}

/// vt100 with no scrollback and no callbacks: the floor under [`time_emulator`].
fn time_bare_vt100(stream: &[u8]) -> Duration {
    let mut parser = vt100::Parser::new(PANE_ROWS, PANE_COLS, 0);
    let start = Instant::now();
    for chunk in stream.chunks(PARSER_CHUNK) {
        parser.process(chunk);
    }
    std::hint::black_box(parser.screen());
    start.elapsed()
}

/// tmux consuming the same stream in a detached 120x40 session: from starting the server to the
/// shell signalling that `cat` is done.
fn time_tmux(stream: &Path, writer_times: &Path) -> Result<TmuxRun> {
    let _ = std::fs::remove_file(writer_times);
    // A fresh server per run: the last one may still be shutting down on its socket.
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let socket = format!("unipi-pane-bench-{}-{run}", std::process::id());
    // The shell stays alive after signalling, so the server is still there to ask for its CPU
    // time; `kill-server` ends it.
    let command = format!(
        "cat {}; times > {}; tmux -L {socket} wait-for -S done; exec sleep 120",
        quote(stream),
        quote(writer_times)
    );
    let start = Instant::now();
    let started = tmux(
        &socket,
        &[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "120",
            "-y",
            "40",
            &command,
        ],
    );
    let waited = started.and_then(|_| tmux(&socket, &["wait-for", "done"]));
    let wall = start.elapsed();
    let server_cpu = waited
        .and_then(|_| tmux(&socket, &["display-message", "-p", "#{pid}"]))
        .and_then(|pid| {
            let pid = pid.trim().parse().context("tmux printed no server pid")?;
            Ok(process_cpu_ticks(pid)? as f64 / clock_ticks_per_sec())
        });
    // Always stop the server, even when a step failed.
    let _ = tmux(&socket, &["kill-server"]);
    Ok(TmuxRun {
        wall,
        cpu_secs: server_cpu?,
        writer_cpu_secs: shell_children_cpu_secs(writer_times)?,
    })
}

fn tmux_version() -> Option<String> {
    let output = Command::new("tmux").arg("-V").output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

fn tmux(socket: &str, args: &[&str]) -> Result<String> {
    let output = Command::new("tmux")
        .arg("-L")
        .arg(socket)
        .args(args)
        .env_remove("TMUX")
        .env("SHELL", "/bin/sh")
        .output()
        .context("failed to run tmux")?;
    if !output.status.success() {
        bail!(
            "tmux {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The middle value (the upper one of an even count); `None` for no values.
fn median<T: PartialOrd + Copy>(mut values: Vec<T>) -> Option<T> {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    values.get(values.len() / 2).copied()
}

/// The median of each ratio over the pairs (`None` without tmux runs).
fn median_ratio(ratios: &[Ratio]) -> Option<Ratio> {
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied()
    };
    Some(Ratio {
        wall: median(ratios.iter().map(|r| r.wall).collect())?,
        cpu: median(ratios.iter().map(|r| r.cpu).collect())?,
    })
}

/// The run with the median wall time.
fn median_by_wall<T>(mut runs: Vec<T>, wall: impl Fn(&T) -> Duration) -> Option<T> {
    runs.sort_by_key(|run| wall(run));
    let middle = runs.len() / 2;
    (middle < runs.len()).then(|| runs.swap_remove(middle))
}

// ---------------------------------------------------------------------------------------------
// The table.

struct Figures<'a> {
    /// The load average before and after: figures taken on a busy machine say so.
    load: (String, String),
    speed: Option<&'a Speed>,
    latency: Option<&'a Latency>,
    idle: Option<&'a IdleFigure>,
    memory: Option<&'a MemoryFigure>,
}

/// The throughput figures, over a stream of `mb` megabytes.
struct Speed {
    mb: f64,
    throughput: Throughput,
}

fn row(name: &str, value: String, target: String) {
    println!("{name:<36} {value:<36} {target}");
}

fn mib(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

fn print_table(f: &Figures<'_>) {
    println!();
    println!(
        "pane benchmarks: {}, {OUTER_COLS}x{OUTER_ROWS} outer terminal, {} CPUs",
        f.speed.map_or_else(
            || "memory only".to_string(),
            |speed| format!("{:.1} MB stream", speed.mb)
        ),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("load average {} before, {} after", f.load.0, f.load.1);
    row("figure", "value".into(), "target".into());
    if let Some(speed) = f.speed {
        print_speed(speed);
    }
    if let Some(latency) = f.latency {
        for (name, stats) in [("idle", &latency.idle), ("during a flood", &latency.flood)] {
            row(
                &format!("keystroke -> echo, pane {name}"),
                format!(
                    "p50 {} / p99 {} ms (max {})",
                    support::ms(stats.p50),
                    support::ms(stats.p99),
                    support::ms(stats.max)
                ),
                String::new(),
            );
        }
    }
    if let Some(idle) = f.idle {
        row(
            &format!("idle CPU over {} s", IDLE_WINDOW.as_secs()),
            format!("{:.2} % ({} wake-ups)", idle.cpu_percent, idle.wakeups),
            verdict(idle.cpu_percent < 0.5, "~0 %"),
        );
        row(
            "memory, one screenful",
            format!("VmRSS {:.1} MiB", mib(idle.rss_kb)),
            String::new(),
        );
        print_parts(&idle.parts);
    }
    if let Some(memory) = f.memory {
        row(
            "memory, full 10,000-row scrollback",
            format!(
                "VmRSS {:.1} MiB, VmHWM {:.1} MiB",
                mib(memory.rss_kb),
                mib(memory.hwm_kb)
            ),
            verdict(mib(memory.hwm_kb) < 30.0, "< 30 MiB"),
        );
        print_parts(&memory.parts);
        row(
            "  (lines printed)",
            format!(
                "{SCROLLBACK_FILL_LINES} lines, {:.1} MB",
                memory.printed_bytes as f64 / 1e6
            ),
            String::new(),
        );
    }
}

fn print_parts(parts: &RssParts) {
    row(
        "  of which code / anonymous",
        format!(
            "{:.1} / {:.1} MiB",
            mib(parts.code_kb),
            mib(parts.anonymous_kb)
        ),
        String::new(),
    );
}

fn print_speed(f: &Speed) {
    let rate = |d: Duration| f.mb / d.as_secs_f64();
    row(
        "throughput, unipi-tui end to end",
        format!(
            "{:.1} MB/s ({:.2} s, CPU {:.2} s)",
            rate(f.throughput.workbench.wall),
            f.throughput.workbench.wall.as_secs_f64(),
            f.throughput.workbench.cpu_secs
        ),
        String::new(),
    );
    if let Some((version, tmux)) = &f.throughput.tmux {
        row(
            &format!("throughput, {version}"),
            format!(
                "{:.1} MB/s ({:.2} s, CPU {:.2} s)",
                rate(tmux.wall),
                tmux.wall.as_secs_f64(),
                tmux.cpu_secs
            ),
            String::new(),
        );
    }
    if let Some(ratio) = f.throughput.ratio {
        row(
            "  unipi-tui / tmux, wall time",
            format!("{:.2} (median of the pairs)", ratio.wall),
            verdict(ratio.wall <= 0.5, "<= 0.50"),
        );
        row(
            "  unipi-tui / tmux, CPU time",
            format!("{:.2}", ratio.cpu),
            String::new(),
        );
    }
    row(
        "  frames drawn during the flood",
        format!(
            "{} ({:.0} a second)",
            f.throughput.workbench.frames,
            f.throughput.workbench.frames as f64 / f.throughput.workbench.wall.as_secs_f64()
        ),
        verdict(
            f.throughput.workbench.frames as f64 / f.throughput.workbench.wall.as_secs_f64()
                <= 61.0,
            "<= 60/s",
        ),
    );
    row(
        "  peak memory during the flood",
        format!("VmHWM {:.1} MiB", mib(f.throughput.workbench.peak_rss_kb)),
        String::new(),
    );
    row(
        "emulator alone (Emulator::process)",
        format!("{:.1} MB/s", rate(f.throughput.emulator)),
        "(reference)".into(),
    );
    row(
        "bare vt100 (no scrollback)",
        format!("{:.1} MB/s", rate(f.throughput.bare)),
        String::new(),
    );
    row(
        "  end to end / bare vt100",
        format!(
            "{:.0} % (median of the rounds' own pairs)",
            f.throughput.of_bare * 100.0
        ),
        verdict(f.throughput.of_bare >= 0.75, ">= 75 %"),
    );
    row(
        "  the same in CPU time",
        format!("{:.0} %", f.throughput.of_bare_cpu * 100.0),
        String::new(),
    );
}

fn verdict(met: bool, target: &str) -> String {
    format!("{target:<8} {}", if met { "met" } else { "MISSED" })
}

// ---------------------------------------------------------------------------------------------
// The outer terminal.

/// The workbench in a PTY whose output is drained on a thread that answers the start-up probes
/// (kitty keyboard `CSI ? u` and DA1 `CSI c`) at once, so start-up never waits on a timeout.
struct Outer {
    child: Box<dyn Child + Send + Sync>,
    // Kept open: closing the master would hang the workbench up.
    _master: Box<dyn MasterPty + Send>,
    /// The outer terminal's input (the workbench's stdin); the reader thread answers probes on it.
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    seen: Arc<Seen>,
    peak_rss_kb: u64,
}

#[derive(Default)]
struct Seen {
    marker: AtomicBool,
    bytes: AtomicU64,
    /// Frames drawn: ratatui ends each by showing or hiding the cursor (`CSI ? 25 h` / `l`).
    frames: AtomicU64,
    /// The key last shown as `¤k¤` on the pane's last row and when it appeared (latency runs).
    echo: Mutex<Option<(u8, Instant)>>,
    echoed: Condvar,
}

impl Outer {
    fn spawn(
        bin: &Path,
        args: &[OsString],
        env: &[(&'static str, PathBuf)],
        cwd: &Path,
    ) -> Result<Outer> {
        Outer::spawn_with(bin, args, env, cwd, false)
    }

    /// [`Outer::spawn`] with the drawn output parsed into a screen, to see echoes on it (which
    /// costs the bench CPU, so the throughput runs do without).
    fn spawn_watching(
        bin: &Path,
        args: &[OsString],
        env: &[(&'static str, PathBuf)],
        cwd: &Path,
    ) -> Result<Outer> {
        Outer::spawn_with(bin, args, env, cwd, true)
    }

    fn spawn_with(
        bin: &Path,
        args: &[OsString],
        env: &[(&'static str, PathBuf)],
        cwd: &Path,
        watch_screen: bool,
    ) -> Result<Outer> {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: OUTER_ROWS,
                cols: OUTER_COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .context("failed to open the outer PTY")?;
        let mut cmd = CommandBuilder::new(bin);
        cmd.args(args);
        cmd.cwd(cwd);
        cmd.env("TERM", "xterm-256color");
        for key in [
            "TMUX",
            "NO_COLOR",
            "UNIPI_PI_BIN",
            "UNIPI_LOG",
            "UNIPI_TUI_DISABLE_KEYBOARD_ENHANCEMENT",
        ] {
            cmd.env_remove(key);
        }
        for (key, value) in env {
            cmd.env(key, value);
        }
        let child = pair
            .slave
            .spawn_command(cmd)
            .with_context(|| format!("failed to start {}", bin.display()))?;
        drop(pair.slave);
        let reader = pair
            .master
            .try_clone_reader()
            .context("failed to clone the outer PTY reader")?;
        let writer = pair
            .master
            .take_writer()
            .context("failed to take the outer PTY writer")?;
        let seen = Arc::new(Seen::default());
        let seen_by_reader = Arc::clone(&seen);
        let writer = Arc::new(Mutex::new(writer));
        let replies = Arc::clone(&writer);
        let screen =
            watch_screen.then(|| vt100::Parser::new(non_zero(OUTER_ROWS), non_zero(OUTER_COLS), 0));
        std::thread::Builder::new()
            .name("outer-terminal".into())
            .spawn(move || drain(reader, &replies, &seen_by_reader, screen))
            .context("failed to start the outer terminal's reader")?;
        Ok(Outer {
            child,
            _master: pair.master,
            writer,
            seen,
            peak_rss_kb: 0,
        })
    }

    /// Types one key into the outer terminal.
    fn type_key(&self, key: u8) -> Result<()> {
        let mut writer = self
            .writer
            .lock()
            .map_err(|_| anyhow::anyhow!("the outer writer's lock is poisoned"))?;
        writer
            .write_all(&[key])
            .and_then(|()| writer.flush())
            .context("failed to type into the outer terminal")
    }

    /// When the screen (see [`Outer::spawn_watching`]) first showed `key` echoed after `since`.
    fn wait_for_echo(&self, key: u8, since: Instant, timeout: Duration) -> Result<Instant> {
        let deadline = Instant::now() + timeout;
        let mut echo = self
            .seen
            .echo
            .lock()
            .map_err(|_| anyhow::anyhow!("the echo lock is poisoned"))?;
        loop {
            if let Some((shown, at)) = *echo
                && shown == key
                && at >= since
            {
                return Ok(at);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!(
                    "the echo of {:?} was not drawn within {timeout:?}",
                    char::from(key)
                );
            }
            echo = self
                .seen
                .echoed
                .wait_timeout(echo, left)
                .map_err(|_| anyhow::anyhow!("the echo lock is poisoned"))?
                .0;
        }
    }

    fn pid(&self) -> Result<i32> {
        let pid = self
            .child
            .process_id()
            .context("the workbench has no pid")?;
        i32::try_from(pid).context("pid out of range")
    }

    fn drawn_bytes(&self) -> u64 {
        self.seen.bytes.load(Ordering::Relaxed)
    }

    fn frames(&self) -> u64 {
        self.seen.frames.load(Ordering::Relaxed)
    }

    fn wait_for_marker(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        while !self.seen.marker.load(Ordering::Acquire) {
            if Instant::now() > deadline {
                bail!("the workbench did not draw the child's output within {timeout:?}");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    /// Polls (every millisecond, so the wall time is exact enough) until the workbench exits,
    /// noting its peak resident memory on the way.
    fn wait_exit(&mut self, timeout: Duration) -> Result<portable_pty::ExitStatus> {
        let deadline = Instant::now() + timeout;
        let pid = self.pid()?;
        let mut polls = 0u64;
        loop {
            polls += 1;
            if let Some(status) = self.child.try_wait().context("failed to wait")? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                bail!("the workbench did not exit within {timeout:?}");
            }
            if polls % 10 == 0
                && let Ok(kb) = status_kb(pid, "VmHWM")
            {
                self.peak_rss_kb = self.peak_rss_kb.max(kb);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// SIGTERM, as a user's `kill` would: the workbench stops its child and exits.
    fn stop(&mut self) -> Result<()> {
        let pid = nix::unistd::Pid::from_raw(self.pid()?);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM)
            .context("failed to signal the workbench")?;
        self.wait_exit(Duration::from_secs(10))?;
        Ok(())
    }
}

impl Drop for Outer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The outer terminal's reader: counts bytes, answers probes, watches for the ready marker and,
/// with a `screen`, for an echo on the pane's last row.
fn drain(
    mut reader: Box<dyn Read + Send>,
    writer: &Mutex<Box<dyn Write + Send>>,
    seen: &Seen,
    mut screen: Option<vt100::Parser>,
) {
    let mut kitty_query = Matcher::new(b"\x1b[?u");
    let mut primary_attributes = Matcher::new(b"\x1b[c");
    let mut marker = Matcher::new(READY_MARKER);
    let mut cursor_shown = Matcher::new(b"\x1b[?25h");
    let mut cursor_hidden = Matcher::new(b"\x1b[?25l");
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        seen.bytes.fetch_add(n as u64, Ordering::Relaxed);
        let mut reply = Vec::new();
        for &byte in &buf[..n] {
            if kitty_query.feed(byte) {
                reply.extend_from_slice(b"\x1b[?0u");
            }
            if primary_attributes.feed(byte) {
                reply.extend_from_slice(b"\x1b[?62;22c");
            }
            if marker.feed(byte) {
                seen.marker.store(true, Ordering::Release);
            }
            // Both fed every byte: `|` does not short-circuit.
            if cursor_shown.feed(byte) | cursor_hidden.feed(byte) {
                seen.frames.fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Some(screen) = &mut screen {
            screen.process(&buf[..n]);
            note_echo(screen.screen(), seen, Instant::now());
        }
        if reply.is_empty() {
            continue;
        }
        let Ok(mut writer) = writer.lock() else {
            return;
        };
        if writer
            .write_all(&reply)
            .and_then(|()| writer.flush())
            .is_err()
        {
            return;
        }
    }
}

/// Notes a new `¤k¤` at the start of the pane's last row (outer row `PANE_ROWS - 1`).
fn note_echo(screen: &vt100::Screen, seen: &Seen, now: Instant) {
    let row = PANE_ROWS.get() - 1;
    let text = |col| {
        screen
            .cell(row, col)
            .map(|cell| cell.contents().to_string())
    };
    let side = ECHO_SIDE.to_string();
    if text(0).as_deref() != Some(&side) || text(2).as_deref() != Some(&side) {
        return;
    }
    let Some(&[key]) = text(1).as_deref().map(str::as_bytes) else {
        return;
    };
    let Ok(mut echo) = seen.echo.lock() else {
        return;
    };
    if echo.is_none_or(|(last, _)| last != key) {
        *echo = Some((key, now));
        seen.echoed.notify_all();
    }
}

/// Finds a byte pattern in a stream that arrives in pieces. Restarting on a mismatch is exact
/// only because no pattern repeats its first byte later on (true for all of ours).
struct Matcher {
    pattern: &'static [u8],
    matched: usize,
}

impl Matcher {
    fn new(pattern: &'static [u8]) -> Matcher {
        Matcher {
            pattern,
            matched: 0,
        }
    }

    /// True when `byte` completes the pattern.
    fn feed(&mut self, byte: u8) -> bool {
        if self.pattern.get(self.matched) == Some(&byte) {
            self.matched += 1;
        } else {
            self.matched = usize::from(self.pattern.first() == Some(&byte));
        }
        if self.matched == self.pattern.len() {
            self.matched = 0;
            return true;
        }
        false
    }
}

// ---------------------------------------------------------------------------------------------
// /proc readings.

/// User + system ticks of all of a process's threads (`/proc/<pid>/stat` fields 14 and 15).
fn process_cpu_ticks(pid: i32) -> Result<u64> {
    let fields = stat_fields(&format!("/proc/{pid}/stat"))?;
    Ok(fields.0 + fields.1)
}

/// User + system time of a shell's children, from what its `times` builtin wrote to `path`: the
/// second line, `<m>m<s>s <m>m<s>s`.
fn shell_children_cpu_secs(path: &Path) -> Result<f64> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("the stream writer left no times in {}", path.display()))?;
    let parse = |field: &str| -> Option<f64> {
        let (minutes, seconds) = field.strip_suffix('s')?.split_once('m')?;
        Some(minutes.parse::<f64>().ok()? * 60.0 + seconds.parse::<f64>().ok()?)
    };
    text.lines()
        .nth(1)
        .and_then(|line| line.split_whitespace().map(parse).sum::<Option<f64>>())
        .with_context(|| format!("unexpected `times` output in {}: {text:?}", path.display()))
}

/// User + system time of the calling thread, in seconds (10 ms ticks).
fn thread_cpu_secs() -> Result<f64> {
    let fields = stat_fields("/proc/thread-self/stat")?;
    Ok((fields.0 + fields.1) as f64 / clock_ticks_per_sec())
}

/// User + system time of our reaped children and their reaped descendants (fields 16 and 17 of
/// `/proc/self/stat`).
fn children_cpu_secs() -> Result<f64> {
    let fields = stat_fields("/proc/self/stat")?;
    Ok((fields.2 + fields.3) as f64 / clock_ticks_per_sec())
}

/// `(utime, stime, cutime, cstime)` in clock ticks.
fn stat_fields(path: &str) -> Result<(u64, u64, u64, u64)> {
    let text = std::fs::read_to_string(path).with_context(|| format!("failed to read {path}"))?;
    // The command name (field 2) may hold spaces and parentheses; the fields after it do not.
    let after_name = text
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .with_context(|| format!("unexpected {path}: {text}"))?;
    let fields: Vec<u64> = after_name
        .split_whitespace()
        .skip(11) // fields 3..=13: state .. cmajflt
        .take(4)
        .map(|field| field.parse().unwrap_or(0))
        .collect();
    match fields[..] {
        [utime, stime, cutime, cstime] => Ok((utime, stime, cutime, cstime)),
        _ => bail!("unexpected {path}: {text}"),
    }
}

/// Voluntary + involuntary context switches summed over the process's threads.
fn context_switches(pid: i32) -> Result<u64> {
    let tasks = format!("/proc/{pid}/task");
    let mut total = 0;
    for entry in std::fs::read_dir(&tasks).with_context(|| format!("failed to list {tasks}"))? {
        let status = entry
            .context("failed to list a task")?
            .path()
            .join("status");
        // A thread that ended between listing and reading counts nothing.
        let Ok(text) = std::fs::read_to_string(&status) else {
            continue;
        };
        total += text
            .lines()
            .filter(|line| line.contains("ctxt_switches:"))
            .filter_map(|line| line.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum::<u64>();
    }
    Ok(total)
}

/// The 1, 5 and 15 minute load averages.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "unknown".into(),
        |text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        },
    )
}

/// A `kB` line of `/proc/<pid>/status`.
fn status_kb(pid: i32, key: &str) -> Result<u64> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path).with_context(|| format!("failed to read {path}"))?;
    text.lines()
        .find_map(|line| {
            let value = line.strip_prefix(key)?.strip_prefix(':')?;
            value.split_whitespace().next()?.parse().ok()
        })
        .with_context(|| format!("no {key} in {path}"))
}

/// Where VmRSS is, from `/proc/<pid>/smaps`.
struct RssParts {
    /// The executable's code mapping: clean file pages, shared with any other run of the binary,
    /// and each fault maps up to 64 KiB of the pages around it that are in the page cache, so it
    /// moves with the code's layout and with what of the binary the page cache holds.
    code_kb: u64,
    /// Mappings without a file: heap, stacks.
    anonymous_kb: u64,
}

fn rss_parts(pid: i32, bin: &Path) -> Result<RssParts> {
    let path = format!("/proc/{pid}/smaps");
    let text = std::fs::read_to_string(&path).with_context(|| format!("failed to read {path}"))?;
    let bin = std::fs::canonicalize(bin).with_context(|| format!("no {}", bin.display()))?;
    let (mut code_kb, mut anonymous_kb) = (0, 0);
    // Which of the two the current mapping's `Rss:` line adds to: (code, anonymous).
    let mut counts = (false, false);
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields[..] {
            ["Rss:", kb, ..] => {
                let kb = kb.parse::<u64>().unwrap_or(0);
                code_kb += if counts.0 { kb } else { 0 };
                anonymous_kb += if counts.1 { kb } else { 0 };
            }
            // A mapping's header: `start-end perms offset dev inode [path]`.
            [range, perms, _, _, _, ref rest @ ..] if range.contains('-') => {
                let file = rest.first().copied().unwrap_or("");
                counts = (
                    file == bin.as_os_str() && perms.contains('x'),
                    file.is_empty() || file == "[heap]" || file.starts_with("[stack"),
                );
            }
            _ => {}
        }
    }
    Ok(RssParts {
        code_kb,
        anonymous_kb,
    })
}

/// `/proc` counts CPU time in USER_HZ ticks, 100 a second on every Linux ABI we run on (nix's
/// `sysconf` needs a feature this crate does not enable, and the value cannot differ here).
fn clock_ticks_per_sec() -> f64 {
    100.0
}

// ---------------------------------------------------------------------------------------------
// The streams.

/// Writes a file through `fill` and returns its size.
fn write_file(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<u64> {
    let file = std::fs::File::create(path)
        .with_context(|| format!("failed to create {}", path.display()))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    fill(&mut out)
        .and_then(|()| out.flush())
        .with_context(|| format!("failed to write {}", path.display()))?;
    Ok(std::fs::metadata(path)
        .with_context(|| format!("failed to stat {}", path.display()))?
        .len())
}

/// At least `min_bytes` of what an agent's terminal output looks like: prose with coloured and
/// bold spans, syntax-highlighted code on a background, box-drawing panels, and every few lines
/// a synchronized redraw of the lines above (cursor up, erase line, rewrite) or a status written
/// at an absolute position under save/restore cursor.
fn write_stream(out: &mut dyn Write, min_bytes: usize) -> std::io::Result<()> {
    let mut lines = LineMaker::new(3);
    let mut written = 0;
    let mut buf = Vec::with_capacity(64 * 1024);
    while written < min_bytes {
        buf.clear();
        for _ in 0..200 {
            lines.stream_piece(&mut buf);
        }
        out.write_all(&buf)?;
        written += buf.len();
    }
    Ok(())
}

/// `count` coloured lines that fill the pane's width exactly, ending in CR LF.
fn write_lines(out: &mut dyn Write, count: usize, seed: u64) -> std::io::Result<()> {
    let mut lines = LineMaker::new(seed);
    let mut buf = Vec::with_capacity(512);
    for _ in 0..count {
        buf.clear();
        lines.full_width_line(&mut buf);
        out.write_all(&buf)?;
    }
    Ok(())
}

const WORDS: &[&str] = &[
    "the",
    "agent",
    "reads",
    "file",
    "and",
    "then",
    "runs",
    "tests",
    "on",
    "workspace",
    "build",
    "passed",
    "error",
    "warning",
    "module",
    "function",
    "returns",
    "value",
    "config",
    "update",
    "terminal",
    "output",
    "a",
    "of",
    "to",
    "in",
    "with",
    "for",
    "is",
    "résumé",
    "naïve",
    "→",
    "✓",
];
const CODE_TOKENS: &[&str] = &[
    "fn",
    "let",
    "mut",
    "pub",
    "struct",
    "impl",
    "match",
    "Some(x)",
    "None",
    "=>",
    "self.rows",
    "Vec::new()",
    "&mut",
    "buf",
    "return",
    "Ok(())",
    "?;",
    "{",
    "}",
    "if",
    "else",
    "for",
    "in",
    "0..n",
    "\"text\"",
    "// why",
    "u16",
    "String",
];
const WIDE: &str = "中文字";

/// Deterministic line generator (xorshift), so every run and every machine sees the same bytes.
struct LineMaker {
    state: u64,
}

impl LineMaker {
    fn new(seed: u64) -> LineMaker {
        LineMaker {
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
        }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        let index = usize::try_from(self.below(items.len() as u64)).unwrap_or(0);
        items.get(index).copied().unwrap_or("")
    }

    fn rgb(&mut self, out: &mut Vec<u8>, layer: u8) {
        let (r, g, b) = (self.below(256), self.below(256), self.below(256));
        let _ = write!(out, "\x1b[{layer};2;{r};{g};{b}m");
    }

    /// One piece of the throughput stream: mostly lines, now and then a redraw.
    fn stream_piece(&mut self, out: &mut Vec<u8>) {
        match self.below(100) {
            0..=49 => {
                let width = 40 + self.below(75) as usize;
                self.prose(out, width);
            }
            50..=74 => {
                let width = 20 + self.below(90) as usize;
                self.code(out, width);
            }
            75..=84 => self.panel(out),
            85..=94 => self.redraw(out),
            _ => self.status(out),
        }
    }

    /// A line exactly as wide as the pane (for the scrollback fill).
    fn full_width_line(&mut self, out: &mut Vec<u8>) {
        let width = usize::from(PANE_COLS.get());
        if self.below(3) == 0 {
            self.code(out, width);
        } else {
            self.prose(out, width);
        }
    }

    /// Words, some in a truecolour, some bold; `width` visible columns, then CR LF.
    fn prose(&mut self, out: &mut Vec<u8>, width: usize) {
        let mut col = 0;
        while col < width {
            let word = if self.below(100) == 0 {
                WIDE
            } else {
                self.pick(WORDS)
            };
            let styled = self.below(4);
            match styled {
                0 => self.rgb(out, 38),
                1 => out.extend_from_slice(b"\x1b[1m"),
                _ => {}
            }
            col += push_clipped(out, word, width - col);
            match styled {
                0 => out.extend_from_slice(b"\x1b[39m"),
                1 => out.extend_from_slice(b"\x1b[22m"),
                _ => {}
            }
            if col < width {
                out.push(b' ');
                col += 1;
            }
        }
        out.extend_from_slice(b"\x1b[0m\r\n");
    }

    /// Highlighted code on a background colour: every token its own foreground.
    fn code(&mut self, out: &mut Vec<u8>, width: usize) {
        out.extend_from_slice(b"\x1b[48;2;30;32;40m");
        let indent = (self.below(4) * 4) as usize;
        let mut col = push_clipped(out, &" ".repeat(indent), width);
        while col < width {
            self.rgb(out, 38);
            col += push_clipped(out, self.pick(CODE_TOKENS), width - col);
            if col < width {
                out.push(b' ');
                col += 1;
            }
        }
        out.extend_from_slice(b"\x1b[0m\r\n");
    }

    /// A three-line box-drawing panel, like a tool call's frame.
    fn panel(&mut self, out: &mut Vec<u8>) {
        let inner = 20 + self.below(80) as usize;
        self.rgb(out, 38);
        let _ = write!(out, "╭{}╮\x1b[0m\r\n", "─".repeat(inner));
        self.rgb(out, 38);
        out.extend_from_slice("│\x1b[0m ✓ \x1b[1m".as_bytes());
        let mut col = 3;
        while col < inner {
            col += push_clipped(out, self.pick(WORDS), inner - col);
            if col < inner {
                out.push(b' ');
                col += 1;
            }
        }
        out.extend_from_slice(b"\x1b[22m");
        self.rgb(out, 38);
        let _ = write!(out, "│\x1b[0m\r\n");
        self.rgb(out, 38);
        let _ = write!(out, "╰{}╯\x1b[0m\r\n", "─".repeat(inner));
    }

    /// A synchronized rewrite of the last few lines, the way a TUI's differential renderer
    /// updates a spinner or a streaming message: up N, then erase and rewrite each line.
    fn redraw(&mut self, out: &mut Vec<u8>) {
        let n = 1 + self.below(8);
        let _ = write!(out, "\x1b[?2026h\x1b[?25l\x1b[{n}A");
        for _ in 0..n {
            out.extend_from_slice(b"\r\x1b[2K");
            let width = 30 + self.below(80) as usize;
            self.prose(out, width);
        }
        out.extend_from_slice(b"\x1b[?25h\x1b[?2026l");
    }

    /// A status written at an absolute position, cursor saved and restored around it.
    fn status(&mut self, out: &mut Vec<u8>) {
        let row = 1 + self.below(u64::from(PANE_ROWS.get()));
        let _ = write!(out, "\x1b7\x1b[{row};1H\x1b[7m ");
        let mut col = 1;
        while col < 50 {
            col += push_clipped(out, self.pick(WORDS), 50 - col) + 1;
            out.push(b' ');
        }
        out.extend_from_slice(b"\x1b[27m\x1b[K\x1b8");
    }
}

/// Appends `text` if it fits in `room` columns, else as many ASCII fill columns as fit; returns
/// the columns used. Wide characters count two.
fn push_clipped(out: &mut Vec<u8>, text: &str, room: usize) -> usize {
    let width: usize = text
        .chars()
        .map(|c| {
            if ('\u{4e00}'..='\u{9fff}').contains(&c) {
                2
            } else {
                1
            }
        })
        .sum();
    if width <= room {
        out.extend_from_slice(text.as_bytes());
        width
    } else {
        out.extend(std::iter::repeat_n(b'.', room));
        room
    }
}

/// Single-quotes a path for `sh`.
fn quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

const fn non_zero(n: u16) -> NonZeroU16 {
    match NonZeroU16::new(n) {
        Some(n) => n,
        None => panic!("a pane dimension must not be zero"),
    }
}

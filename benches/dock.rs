//! Dock render benchmark: the background-task dock with 100 tasks (running, failed, stopped and
//! done, long names, last output lines, wake markers) drawn into a 120x40 buffer with the
//! built-in colour theme, once as the list and once as the detail of a task with a 1,000-line
//! tail. Then the dock a helper-heavy session sees: the main agent, 100 helper runs in a tree
//! (running ones with spend and last activity, failed, stopped, done) above 20 tasks, as the
//! list and as the transcript of one helper (200 entries, wrapped). Printed per frame: mean,
//! p50, p99 and max render time. The dock redraws on every task update and every helper-board
//! change while it is open, so this is the cost a busy session pays per frame.
//!
//! Figures are printed, never asserted (a timing assertion flakes on a busy machine); they live
//! in `docs/benchmarks.md`. `cargo bench --bench dock` renders 5,000 frames per case (override
//! with `UNIPI_BENCH_FRAMES`); under `cargo test --all-targets` (no `--bench`) it renders 20 as a
//! smoke pass.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use unipi_tui::config::theme::Theme;
use unipi_widgets::agents::{
    AgentKind, AgentRow, AgentStatus, MAIN_ID, TranscriptItem, arrange_agents,
};
use unipi_widgets::dock::{DockMode, DockModel, dock_area, render};
use unipi_widgets::tasks::{TaskRow, TaskStatus};

const TASKS: usize = 100;
const HELPERS: usize = 100;
/// Tasks listed under the helpers.
const HELPER_TASKS: usize = 20;
const SCREEN: Rect = Rect {
    x: 0,
    y: 0,
    width: 120,
    height: 40,
};
const FULL_FRAMES: usize = 5_000;
const SMOKE_FRAMES: usize = 20;
/// Frames drawn before timing, so caches and the allocator are warm.
const WARM_UP_FRAMES: usize = 100;

fn main() -> ExitCode {
    let full = std::env::args().any(|arg| arg == "--bench");
    let frames = std::env::var("UNIPI_BENCH_FRAMES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(if full { FULL_FRAMES } else { SMOKE_FRAMES });
    let theme = Theme::default().widgets;
    let list = make_model(DockMode::List);
    let detail = make_model(DockMode::Detail {
        scroll: 0,
        follow: true,
    });
    println!(
        "dock render, {TASKS} tasks, {}x{} screen, {frames} frames",
        SCREEN.width, SCREEN.height
    );
    println!(
        "  {:<8} {:>9} {:>9} {:>9} {:>9}",
        "view", "mean", "p50", "p99", "max"
    );
    for (name, model) in [("list", &list), ("detail", &detail)] {
        print_row(name, &time_frames(model, &theme, frames));
    }
    let agents_list = make_agents_model(DockMode::List);
    let transcript = make_agents_model(DockMode::Detail {
        scroll: 0,
        follow: true,
    });
    println!(
        "dock render, main agent + {HELPERS} helper runs + {HELPER_TASKS} tasks, {frames} frames"
    );
    for (name, model) in [("agents", &agents_list), ("transcr.", &transcript)] {
        print_row(name, &time_frames(model, &theme, frames));
    }
    ExitCode::SUCCESS
}

fn print_row(name: &str, samples: &[Duration]) {
    let stats = Stats::of(samples);
    println!(
        "  {name:<8} {:>9} {:>9} {:>9} {:>9}",
        us(stats.mean),
        us(stats.p50),
        us(stats.p99),
        us(stats.max)
    );
}

/// Render `model` `frames` times into a fresh-looking buffer and return each frame's time.
fn time_frames(model: &DockModel, theme: &unipi_widgets::Theme, frames: usize) -> Vec<Duration> {
    let mut buf = Buffer::empty(SCREEN);
    let area = dock_area(model, SCREEN);
    let mut samples = Vec::with_capacity(frames);
    for frame in 0..WARM_UP_FRAMES.min(frames) + frames {
        // The app draws into a cleared buffer every frame; clearing is ratatui's cost, not ours.
        buf.reset();
        let started = Instant::now();
        render(black_box(model), theme, area, &mut buf);
        let elapsed = started.elapsed();
        black_box(&buf);
        if frame >= WARM_UP_FRAMES.min(frames) {
            samples.push(elapsed);
        }
    }
    samples
}

/// 100 tasks, a quarter in each state, with what makes rows expensive: long names that need
/// cutting, last output lines, exit codes, sizes, wake markers, unseen markers.
fn make_model(mode: DockMode) -> DockModel {
    make_tasks_model(mode, TASKS)
}

/// The first `count` of [`make_model`]'s tasks in display order.
fn make_tasks_model(mode: DockMode, count: usize) -> DockModel {
    let statuses = [
        TaskStatus::Running,
        TaskStatus::Failed,
        TaskStatus::Stopped,
        TaskStatus::Done,
    ];
    let mut rows: Vec<TaskRow> = (0..TASKS)
        .map(|n| {
            let status = statuses[n % statuses.len()];
            TaskRow {
                id: format!("bg-{n:04x}a9f3"),
                name: format!("cargo test --workspace run number {n} with a long name"),
                status,
                exit_code: status.is_finished().then_some((n % 3) as i32),
                runtime_secs: (n as u64) * 37,
                output_bytes: (n as u64) << 14,
                wakes_agent: n % 2 == 0,
                last_line: Some(format!(
                    "test tasks::service::tests::case_{n} ... ok (compiling unipi-tui v0.1.0)"
                )),
                unseen: status.is_finished() && n % 3 == 0,
                cleared: false,
                command: format!("cargo test --workspace -- --test-threads=2 case_{n}"),
                output_path: format!("/tmp/unipi-bg-tasks/bench-1234-abcd/bg-{n:04x}.output"),
                kill_kind: (status == TaskStatus::Stopped).then(|| "user".to_owned()),
                error: None,
                pid: Some(10_000 + n as u32),
                is_shell: true,
                started_at: "2026-11-30 08:00:00".to_owned(),
                ended_at: status
                    .is_finished()
                    .then(|| "2026-11-30 08:05:00".to_owned()),
                tail: (0..1_000)
                    .map(|line| format!("line {line}: compiling crate number {line} of 1000"))
                    .collect(),
            }
        })
        .collect();
    unipi_widgets::tasks::sort_rows(&mut rows);
    rows.truncate(count);
    DockModel {
        sections: vec![unipi_widgets::tasks::section(rows)],
        // Mid-list, so the list window scrolls.
        selected: TASKS / 2,
        mode,
        show_history: true,
        stop_all_armed: false,
        keys: [
            ("↑↓", "select"),
            ("Enter", "details"),
            ("s", "stop"),
            ("S", "stop all"),
            ("r", "rerun"),
            ("y", "copy path"),
            ("h", "history"),
            ("Ctrl+Alt+C", "clear notices"),
            ("Esc", "close"),
        ]
        .iter()
        .map(|(key, what)| ((*key).to_owned(), (*what).to_owned()))
        .collect(),
        notice: Some("Stopping cargo test…".to_owned()),
        ..DockModel::default()
    }
}

/// The main agent, 100 helper runs — ten roots with nine children each, some of those with
/// their own child — in every state, with spend, context use and last activity; 20 tasks
/// below. The transcript case selects a running helper with a 200-entry transcript.
fn make_agents_model(mode: DockMode) -> DockModel {
    let statuses = [
        AgentStatus::Running,
        AgentStatus::Running,
        AgentStatus::Done,
        AgentStatus::Failed,
        AgentStatus::Stopped,
        AgentStatus::Queued,
    ];
    let mut agents: Vec<AgentRow> = (0..HELPERS)
        .map(|n| {
            let status = statuses[n % statuses.len()];
            let parent = match n % 10 {
                0 => None,
                9 => Some(format!("h{:04}", n - 1)),
                _ => Some(format!("h{:04}", n - n % 10)),
            };
            AgentRow {
                id: format!("h{n:04}"),
                parent,
                kind: if n % 7 == 0 {
                    AgentKind::Delegate
                } else {
                    AgentKind::Helper
                },
                agent_type: ["explore", "work", "review"][n % 3].to_owned(),
                model: Some("anthropic/claude-haiku-4-5".to_owned()),
                description: format!("survey module number {n} and report what owns the state"),
                status,
                turns: Some((n % 9) as u32),
                tool_uses: Some(n % 23),
                tokens: 1_000 * n as u64 + 517,
                tokens_in: 800 * n as u64,
                tokens_out: 200 * n as u64,
                cost: Some(0.0013 * n as f64),
                context_percent: Some((n % 100) as f64),
                elapsed_secs: Some(n as u64 * 13),
                last_activity: format!("read src/module_{n}/state.rs (lines 1-400)"),
                error: (status == AgentStatus::Failed).then(|| "model overloaded".to_owned()),
                started_at: "08:00:00 UTC".to_owned(),
                unseen: status.is_finished() && n % 2 == 0,
                ..AgentRow::default()
            }
        })
        .collect();
    agents[1].transcript = (0..200)
        .map(|n| match n % 4 {
            0 => TranscriptItem::ToolCall {
                name: "read".to_owned(),
                args: format!("src/module_{n}.rs"),
            },
            1 => TranscriptItem::ToolResult {
                name: "read".to_owned(),
                text: (0..8).map(|line| format!("line {line} of {n}\n")).collect(),
                is_error: n % 20 == 1,
            },
            2 => TranscriptItem::Assistant(format!(
                "Step {n}: the state of this module is owned by the service, which hands out \
                 read-only views; nothing else mutates it, so the dock can render from a clone."
            )),
            _ => TranscriptItem::Note(format!("budget check {n}: within limits")),
        })
        .collect();
    agents.push(AgentRow {
        id: MAIN_ID.to_owned(),
        kind: AgentKind::Main,
        agent_type: "main".to_owned(),
        model: Some("claude-sonnet-4-5".to_owned()),
        description: "bench session".to_owned(),
        status: AgentStatus::Running,
        tokens: 250_000,
        cost: Some(1.25),
        context_percent: Some(61.0),
        last_activity: "working".to_owned(),
        ..AgentRow::default()
    });
    let agents = arrange_agents(agents);
    let selected = agents.iter().position(|row| row.id == "h0001").unwrap_or(0);
    let mut model = make_tasks_model(mode, HELPER_TASKS);
    model
        .sections
        .insert(0, unipi_widgets::agents::section(agents));
    model.selected = selected;
    model
}

struct Stats {
    mean: Duration,
    p50: Duration,
    p99: Duration,
    max: Duration,
}

impl Stats {
    fn of(samples: &[Duration]) -> Stats {
        let mut sorted = samples.to_vec();
        sorted.sort();
        let at = |q: f64| {
            let index = ((sorted.len() as f64 - 1.0) * q).round() as usize;
            sorted.get(index).copied().unwrap_or_default()
        };
        let total: Duration = sorted.iter().sum();
        let count = u32::try_from(sorted.len().max(1)).unwrap_or(u32::MAX);
        Stats {
            mean: total / count,
            p50: at(0.5),
            p99: at(0.99),
            max: sorted.last().copied().unwrap_or_default(),
        }
    }
}

/// Microseconds with one decimal.
fn us(duration: Duration) -> String {
    format!("{:.1} µs", duration.as_secs_f64() * 1e6)
}

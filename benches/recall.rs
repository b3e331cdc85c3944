//! Recall benchmark: 100,000 realistic short session texts (user prompts, assistant replies,
//! tool output, a few summaries) indexed into a temp-file session database, then 200 recall
//! queries of every kind the model sends (one common word, one rare word, two and three words,
//! a path, words that only match with the any-word fallback, nothing at all), timed one by one.
//! The target is under 20 ms per query.
//!
//! Figures are printed, never asserted (a timing assertion flakes on a busy machine). Run with
//! `cargo bench --bench recall`; without `--bench` (under `cargo test --all-targets`) it does a
//! small smoke pass so the harness stays tested.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use unipi_tui::sessiondb::{
    DocKind, IndexDoc, RecallQuery, RecallScope, SessionDb, SessionMeta, recall_all_projects,
};

struct Plan {
    docs: usize,
    sessions: usize,
    queries: usize,
}

const FULL: Plan = Plan {
    docs: 100_000,
    sessions: 50,
    queries: 200,
};
const SMOKE: Plan = Plan {
    docs: 2_000,
    sessions: 4,
    queries: 20,
};

const COMMON: &[&str] = &[
    "the",
    "and",
    "to",
    "of",
    "in",
    "for",
    "is",
    "with",
    "error",
    "test",
    "build",
    "file",
    "function",
    "module",
    "cargo",
    "run",
    "fix",
    "add",
    "update",
    "check",
    "type",
    "return",
    "value",
    "struct",
    "impl",
    "use",
    "crate",
    "src",
    "line",
    "failed",
    "passed",
    "warning",
    "config",
    "path",
    "read",
    "write",
    "edit",
    "output",
    "input",
    "parser",
    "render",
    "widget",
    "session",
    "query",
    "index",
    "database",
    "migration",
    "schema",
    "thread",
    "async",
    "tokio",
    "channel",
    "buffer",
    "terminal",
    "screen",
    "cursor",
    "key",
    "event",
    "message",
    "tool",
    "model",
    "token",
    "context",
    "summary",
];
const RARE: &[&str] = &[
    "flux",
    "capacitor",
    "zebra",
    "quokka",
    "nebula",
    "tangerine",
    "obsidian",
    "kaleidoscope",
    "marmalade",
    "gondola",
    "paprika",
    "sextant",
    "trombone",
    "walrus",
    "yodel",
    "zeppelin",
];
const TOOLS: &[&str] = &["bash", "read", "edit", "write", "grep", "find"];

fn main() -> ExitCode {
    let full = std::env::args().any(|arg| arg == "--bench");
    if !full {
        eprintln!(
            "recall bench: smoke run (checks the harness; figures mean nothing here): run \
             `cargo bench --bench recall` for the real ones"
        );
    }
    match run(if full { &FULL } else { &SMOKE }) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("recall bench: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(plan: &Plan) -> Result<()> {
    let tmp = tempfile::tempdir().context("temp dir")?;
    let db_dir = tmp.path().join("db");
    let path = db_dir.join("bench.sqlite");
    let db = SessionDb::open(&path).context("open")?.db;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);

    let started = Instant::now();
    let per_session = plan.docs / plan.sessions;
    for session in 0..plan.sessions {
        let session_id = format!("session-{session:03}");
        db.upsert_session(&SessionMeta {
            session_id: session_id.clone(),
            session_file: Some(format!("/home/u/.pi/sessions/{session_id}.jsonl")),
            project_dir: "/home/u/src/project".to_string(),
        })?;
        let docs: Vec<IndexDoc> = (0..per_session)
            .map(|i| make_doc(&mut rng, session * per_session + i))
            .collect();
        db.index_many(&session_id, &docs)?;
    }
    let index_time = started.elapsed();
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0)
        + std::fs::metadata(db_dir.join("bench.sqlite-wal")).map_or(0, |m| m.len());
    println!(
        "indexed {} docs in {:.2} s ({:.0} docs/s), database {:.1} MB",
        plan.docs,
        index_time.as_secs_f64(),
        plan.docs as f64 / index_time.as_secs_f64(),
        size as f64 / 1e6
    );

    let queries: Vec<(&str, String)> = (0..plan.queries).map(|i| make_query(&mut rng, i)).collect();
    // One untimed pass warms the page cache and the prepared statements.
    for (_, text) in queries.iter().take(10) {
        db.recall(&query(text, RecallScope::Project))?;
    }

    let mut hits = 0usize;
    let project = time_queries(&queries, |text| {
        let result = db.recall(&query(text, RecallScope::Project))?;
        hits += result.hits.len();
        Ok(())
    })?;
    report("project scope", &project);
    let session = time_queries(&queries, |text| {
        db.recall(&query(
            text,
            RecallScope::Session(format!("session-{:03}", plan.sessions / 2)),
        ))?;
        Ok(())
    })?;
    report("session scope", &session);
    let all = time_queries(&queries, |text| {
        recall_all_projects(&db_dir, &query(text, RecallScope::AllProjects))?;
        Ok(())
    })?;
    report("all projects (1 file, opened per query)", &all);
    for kind in [
        "common",
        "rare",
        "two words",
        "three words",
        "path",
        "fallback",
        "none",
    ] {
        let subset: Vec<Duration> = queries
            .iter()
            .zip(&project)
            .filter(|((k, _), _)| *k == kind)
            .map(|(_, d)| *d)
            .collect();
        report(&format!("  project, {kind}"), &subset);
    }
    println!(
        "average hits per project query: {:.1}",
        hits as f64 / queries.len() as f64
    );
    Ok(())
}

fn query(text: &str, scope: RecallScope) -> RecallQuery {
    RecallQuery {
        text: text.to_string(),
        scope,
        limit: 10,
        offset: 0,
        mode: unipi_tui::sessiondb::RecallMode::Words,
        expand: false,
    }
}

fn time_queries(
    queries: &[(&str, String)],
    mut run: impl FnMut(&str) -> Result<()>,
) -> Result<Vec<Duration>> {
    queries
        .iter()
        .map(|(_, text)| {
            let started = Instant::now();
            run(text)?;
            Ok(started.elapsed())
        })
        .collect()
}

fn report(label: &str, times: &[Duration]) {
    if times.is_empty() {
        return;
    }
    let mut sorted = times.to_vec();
    sorted.sort();
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{label}: {} queries, median {:.2} ms, p95 {:.2} ms, max {:.2} ms",
        sorted.len(),
        ms(at(0.5)),
        ms(at(0.95)),
        ms(at(1.0))
    );
}

fn make_doc(rng: &mut Rng, n: usize) -> IndexDoc {
    let (kind, tool, text) = match rng.below(10) {
        0..=2 => (DocKind::User, None, sentence(rng, 6, 25)),
        3..=5 => (DocKind::Assistant, None, sentence(rng, 15, 60)),
        6..=8 => {
            let tool = TOOLS[rng.below(TOOLS.len())];
            let text = format!(
                "{}: {}\n{}\n  --> src/{}/{}.rs:{}:{}",
                if rng.below(3) == 0 {
                    "error"
                } else {
                    "warning"
                },
                sentence(rng, 4, 12),
                sentence(rng, 4, 20),
                word(rng),
                word(rng),
                rng.below(900) + 1,
                rng.below(80) + 1
            );
            (DocKind::ToolResult, Some(tool.to_string()), text)
        }
        _ => (DocKind::Summary, None, sentence(rng, 40, 120)),
    };
    IndexDoc {
        entry_id: format!("e{n:06x}"),
        kind,
        tool,
        text,
        at_ms: Some(1_700_000_000_000 + n as i64 * 1_000),
    }
}

fn make_query(rng: &mut Rng, i: usize) -> (&'static str, String) {
    match i % 7 {
        0 => ("common", common(rng).to_string()),
        1 => ("rare", RARE[rng.below(RARE.len())].to_string()),
        2 => ("two words", format!("{} {}", word(rng), word(rng))),
        3 => (
            "three words",
            format!("{} {} {}", word(rng), word(rng), word(rng)),
        ),
        4 => ("path", format!("src/{}/{}.rs", word(rng), word(rng))),
        5 => (
            "fallback",
            format!("{} unmatchedterm{i}", RARE[rng.below(RARE.len())]),
        ),
        _ => ("none", format!("nothingmatches{i}")),
    }
}

fn sentence(rng: &mut Rng, min: usize, max: usize) -> String {
    let len = min + rng.below(max - min + 1);
    (0..len).map(|_| word(rng)).collect::<Vec<_>>().join(" ")
}

/// Mostly common words, some identifiers from a long skewed tail, now and then a rare word.
fn word(rng: &mut Rng) -> String {
    match rng.below(100) {
        0..=59 => common(rng).to_string(),
        60..=97 => {
            let u = rng.unit();
            format!("ident{}", (u * u * u * 20_000.0) as usize)
        }
        _ => RARE[rng.below(RARE.len())].to_string(),
    }
}

fn common(rng: &mut Rng) -> &'static str {
    let u = rng.unit();
    COMMON[((u * u) * COMMON.len() as f64) as usize % COMMON.len()]
}

/// xorshift64*: deterministic, so every run indexes the same corpus.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

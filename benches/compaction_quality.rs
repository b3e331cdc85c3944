//! Compaction retention: how much of what the next turn needs survives a compaction, measured
//! on generated coding sessions with planted facts (issue 31).
//!
//! **The sessions.** A seeded generator writes Pi session entries — user requests, assistant
//! replies, `read`/`edit`/`write`/`bash` calls with realistic results (source files, cargo and
//! git output, passing and failing test runs, pasted specs) — about a dozen components of one
//! project, at three sizes (~150k, ~400k, ~1M characters). Facts of the kinds are planted
//! at random points: user preferences and constraints, decisions with their reason, files changed,
//! errors met and their fix, identifiers and numbers (a port, a version, a ticket, a commit, a
//! host), open to-dos and the latest request. Every kind has several phrasings and several places
//! it can live in (user text, assistant text, tool-call arguments, tool output), chosen by the
//! generator, so no rule is tuned to one wording. Each fact has the answer (its tokens, all must
//! be present) and the keywords a model would send to `session_recall` when it needs it.
//!
//! **The measure.** The real pipeline (`compactor::pipeline::compact`, what `/unipi:compact` and
//! Pi's own compaction run) compacts the whole branch; the real ingestion (`ingest::extract` into
//! a real SQLite session database, plus the recorded summary) feeds the real recall
//! (`SessionDb::recall`, what `session_recall` runs, default limit, its 8 KiB answer budget).
//! Per kind and in total: *seen* (the answer is in the summary or the kept tail), *seen or
//! recalled* (or the recall answer for the keywords holds it), *recalled again* (the same queries
//! asked a second time after the first answers went into the session as tool results, as they do
//! in Pi) and a *tail only* baseline: the session's last characters, as many as the summary plus
//! the kept tail. Reduction is the branch's characters over the summary's plus the kept tail's;
//! the compaction's time is the fastest of three runs.
//!
//! Run `cargo bench --bench compaction_quality`. Under `cargo test --all-targets` (no `--bench`
//! argument) only the smallest session is measured, as a smoke pass. Figures are printed, never
//! asserted.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{Value, json};
use unipi_tui::compactor::cut::entry_chars;
use unipi_tui::compactor::entries::{SessionEntry, parse_entry};
use unipi_tui::compactor::ingest::extract;
use unipi_tui::compactor::pipeline::{CompactRequest, Compaction, PipelineSettings, compact};
use unipi_tui::sessiondb::{
    CompactionRecord, RecallMode, RecallQuery, RecallScope, SessionDb, SessionMeta,
};

const SIZES: [(&str, usize); 3] = [
    ("~150k chars", 150_000),
    ("~400k chars", 400_000),
    ("~1M chars", 1_000_000),
];
/// `session_recall`'s defaults: 8 hits, an 8 KiB answer.
const RECALL_LIMIT: usize = 8;
const RECALL_BYTES: usize = 8 * 1024;
const SESSION_ID: &str = "bench-session";
/// One planted fact per this many characters of session.
const CHARS_PER_FACT: usize = 9_000;

fn main() -> ExitCode {
    let full = std::env::args().any(|arg| arg == "--bench");
    if !full {
        eprintln!(
            "compaction_quality: smoke run (the smallest session only): run \
             `cargo bench --bench compaction_quality` for every size"
        );
    }
    let sizes = if full { &SIZES[..] } else { &SIZES[..1] };
    let mut rows = Vec::new();
    for (index, (label, chars)) in sizes.iter().enumerate() {
        match measure(label, *chars, 0x5EED_0000 + index as u64) {
            Ok(row) => rows.push(row),
            Err(err) => {
                eprintln!("compaction_quality: {label}: {err:#}");
                return ExitCode::FAILURE;
            }
        }
    }
    println!();
    println!(
        "| session | chars | facts | reduction | seen | seen or recalled | recalled again | tail only (baseline) | compact |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for row in &rows {
        println!(
            "| {} | {} | {} | {:.1}× | {} | {} | {} | {} | {:.1} ms |",
            row.label,
            row.chars,
            row.total.facts,
            row.reduction,
            pct(row.total.seen, row.total.facts),
            pct(row.total.seen_or_recalled, row.total.facts),
            pct(row.total.recalled_again, row.total.facts),
            pct(row.total.baseline, row.total.facts),
            row.duration.as_secs_f64() * 1e3,
        );
    }
    ExitCode::SUCCESS
}

fn pct(part: usize, whole: usize) -> String {
    format!("{:.0} %", 100.0 * part as f64 / whole.max(1) as f64)
}

// --- measuring
// ------------------------------------------------------------------------------------

#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    facts: usize,
    seen: usize,
    seen_or_recalled: usize,
    recalled_again: usize,
    baseline: usize,
}

struct Row {
    label: String,
    chars: usize,
    reduction: f64,
    duration: Duration,
    total: Tally,
}

fn measure(label: &str, target_chars: usize, seed: u64) -> Result<Row> {
    let session = generate(target_chars, seed);
    let entries: Vec<SessionEntry> = session.lines.iter().filter_map(parse_entry).collect();
    let chars: usize = entries.iter().map(entry_chars).sum();
    let (compaction, duration) = compact_timed(&entries, chars)?;
    let first_kept = entries
        .iter()
        .position(|entry| entry.id == compaction.first_kept_entry_id)
        .unwrap_or(entries.len());
    let kept_chars: usize = entries[first_kept..].iter().map(entry_chars).sum();
    let tail_text = session.texts[first_kept..].join("\n");
    let seen_text = format!("{}\n{tail_text}", compaction.summary).to_lowercase();
    let after_chars = compaction.summary.len() + kept_chars;
    let all_text = session.texts.join("\n");
    let baseline_text = last_chars(&all_text, after_chars).to_lowercase();

    let tmp = tempfile::tempdir().context("temp dir")?;
    let db = indexed(&tmp.path().join("bench.sqlite"), &entries, &compaction)?;
    let first_answers = session
        .facts
        .iter()
        .map(|fact| recall(&db, &fact.query))
        .collect::<Result<Vec<_>>>()?;
    let asked = asked_entries(&session, &first_answers);
    db.index_many(SESSION_ID, &extract(&asked).docs)?;

    let mut per_kind: BTreeMap<&'static str, Tally> = BTreeMap::new();
    let mut total = Tally::default();
    for (fact, first) in session.facts.iter().zip(&first_answers) {
        let again = recall(&db, &fact.query)?;
        let seen = holds(&seen_text, &fact.answer);
        let tally = per_kind.entry(fact.kind).or_default();
        for tally in [tally, &mut total] {
            tally.facts += 1;
            tally.seen += usize::from(seen);
            tally.seen_or_recalled += usize::from(seen || holds(first, &fact.answer));
            tally.recalled_again += usize::from(seen || holds(&again, &fact.answer));
            tally.baseline += usize::from(holds(&baseline_text, &fact.answer));
        }
        if std::env::var_os("UNIPI_QUALITY_MISSES").is_some() && !seen {
            println!(
                "  miss [{}] {:?} answer {:?} recalled {}",
                fact.kind,
                fact.query,
                fact.answer,
                holds(first, &fact.answer)
            );
        }
    }
    let reduction = chars as f64 / after_chars.max(1) as f64;
    println!(
        "\n{label}: {} entries, {chars} chars → summary {} + kept tail {kept_chars} chars \
         ({reduction:.1}×), compacted in {:.1} ms",
        entries.len(),
        compaction.summary.len(),
        duration.as_secs_f64() * 1e3
    );
    print_kinds(&per_kind, &total);
    if std::env::var_os("UNIPI_QUALITY_SUMMARY").is_some() {
        println!("{}", compaction.summary);
    }
    Ok(Row {
        label: label.to_string(),
        chars,
        reduction,
        duration,
        total,
    })
}

/// The pipeline over the whole branch, and the fastest of three runs (the first also compiles
/// the pipeline's patterns).
fn compact_timed(entries: &[SessionEntry], chars: usize) -> Result<(Compaction, Duration)> {
    let settings = PipelineSettings::default();
    let request = CompactRequest {
        entries,
        tokens_before: (chars / 4) as u64,
        keep_user_turns: None,
        overflow: false,
        settings: &settings,
    };
    let mut duration = Duration::MAX;
    let mut compacted = None;
    for _ in 0..3 {
        let started = Instant::now();
        let compaction = compact(&request).map_err(|refusal| anyhow::anyhow!("{refusal}"))?;
        duration = duration.min(started.elapsed());
        compacted = Some(compaction);
    }
    Ok((compacted.context("no compaction ran")?, duration))
}

/// A session database at `path` holding the session as ingestion stores it and the compaction
/// as the module records it.
fn indexed(path: &Path, entries: &[SessionEntry], compaction: &Compaction) -> Result<SessionDb> {
    let db = SessionDb::open(path)
        .context("open the session database")?
        .db;
    db.upsert_session(&SessionMeta {
        session_id: SESSION_ID.into(),
        session_file: None,
        project_dir: "/home/dev/src/atlas".into(),
    })?;
    db.index_many(SESSION_ID, &extract(entries).docs)?;
    db.record_compaction(&CompactionRecord {
        session_id: SESSION_ID.into(),
        at_ms: 0,
        reason: "manual".into(),
        tokens_before: compaction.stats.tokens_before,
        tokens_after: compaction.stats.tokens_after,
        messages_summarized: compaction.stats.messages_summarized as u64,
        blocks_kept: compaction.stats.blocks_kept as u64,
        blocks_dropped: compaction.stats.blocks_dropped as u64,
        duration_ms: compaction.stats.duration.as_millis() as u64,
        summary: compaction.summary.clone(),
        first_kept_entry_id: compaction.first_kept_entry_id.clone(),
        manifest_json: "{}".into(),
    })?;
    Ok(db)
}

/// The model's `session_recall` calls and their answers as the session entries Pi writes.
fn asked_entries(session: &Session, answers: &[String]) -> Vec<SessionEntry> {
    let mut asked = Vec::new();
    let mut next_id = session.lines.len();
    for (fact, answer) in session.facts.iter().zip(answers) {
        next_id += 1;
        let call_id = format!("recall-{next_id}");
        asked.push(entry_value(
            next_id,
            json!({"role": "assistant", "content": [
                {"type": "text", "text": "Let me look that up."},
                {"type": "toolCall", "id": call_id, "name": "session_recall",
                 "arguments": {"query": fact.query}}]}),
        ));
        next_id += 1;
        asked.push(entry_value(
            next_id,
            json!({"role": "toolResult", "toolCallId": call_id, "toolName": "session_recall",
                   "content": [{"type": "text", "text": answer}], "isError": false}),
        ));
    }
    asked.iter().filter_map(parse_entry).collect()
}

fn print_kinds(per_kind: &BTreeMap<&'static str, Tally>, total: &Tally) {
    println!("| kind | facts | seen | seen or recalled | recalled again | tail only |");
    println!("|---|---|---|---|---|---|");
    for (kind, tally) in per_kind.iter().chain([(&"total", total)]) {
        println!(
            "| {kind} | {} | {} | {} | {} | {} |",
            tally.facts,
            pct(tally.seen, tally.facts),
            pct(tally.seen_or_recalled, tally.facts),
            pct(tally.recalled_again, tally.facts),
            pct(tally.baseline, tally.facts),
        );
    }
}

/// What `session_recall` would show the model for `query`: the hits' snippets, numbered, within
/// the tool's answer budget.
fn recall(db: &SessionDb, query: &str) -> Result<String> {
    let result = db.recall(&RecallQuery {
        text: query.to_string(),
        scope: RecallScope::Session(SESSION_ID.into()),
        limit: RECALL_LIMIT,
        offset: 0,
        mode: RecallMode::Words,
        expand: false,
    })?;
    let mut out = format!("Found {} results for \"{query}\":\n", result.total);
    for (index, hit) in result.hits.iter().enumerate() {
        let block = format!(
            "\n[{}] {} · entry {}\n{}\n",
            index + 1,
            hit.kind.as_str(),
            hit.entry_id,
            hit.snippet
        );
        if out.len() + block.len() > RECALL_BYTES {
            break;
        }
        out.push_str(&block);
    }
    Ok(out)
}

fn holds(text: &str, answer: &[String]) -> bool {
    let text = text.to_lowercase();
    answer
        .iter()
        .all(|token| text.contains(&token.to_lowercase()))
}

fn last_chars(text: &str, chars: usize) -> &str {
    let mut start = text.len().saturating_sub(chars);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

// --- the generated session
// ------------------------------------------------------------------------

struct Fact {
    kind: &'static str,
    /// All of these must be present.
    answer: Vec<String>,
    /// The keywords a model would search for.
    query: String,
}

struct Session {
    lines: Vec<Value>,
    /// Per entry: what a reader of it sees (texts, tool-call arguments, outputs).
    texts: Vec<String>,
    facts: Vec<Fact>,
}

struct Component {
    name: &'static str,
    module: &'static str,
}

const COMPONENTS: [Component; 12] = [
    Component {
        name: "station index",
        module: "stations",
    },
    Component {
        name: "tile cache",
        module: "tiles",
    },
    Component {
        name: "upload queue",
        module: "upload",
    },
    Component {
        name: "auth middleware",
        module: "auth",
    },
    Component {
        name: "billing export",
        module: "billing",
    },
    Component {
        name: "search ranker",
        module: "search",
    },
    Component {
        name: "map renderer",
        module: "render",
    },
    Component {
        name: "sync worker",
        module: "sync",
    },
    Component {
        name: "rate limiter",
        module: "limits",
    },
    Component {
        name: "audit log",
        module: "audit",
    },
    Component {
        name: "config loader",
        module: "config",
    },
    Component {
        name: "metrics exporter",
        module: "metrics",
    },
];

const SYLLABLES: [&str; 24] = [
    "var", "kel", "dor", "mip", "zan", "tor", "lux", "bre", "qui", "sol", "fen", "gar", "hol",
    "jun", "pex", "rin", "tav", "ul", "wex", "yor", "cad", "nim", "osk", "pel",
];

struct Gen {
    rng: Rng,
    lines: Vec<Value>,
    texts: Vec<String>,
    facts: Vec<Fact>,
    calls: usize,
}

fn generate(target_chars: usize, seed: u64) -> Session {
    let mut g = Gen {
        rng: Rng(seed | 1),
        lines: Vec::new(),
        texts: Vec::new(),
        facts: Vec::new(),
        calls: 0,
    };
    let fact_count = target_chars / CHARS_PER_FACT;
    let mut chars = 0usize;
    let mut planted = 0usize;
    while chars < target_chars {
        let before = g.texts.len();
        g.episode();
        // Facts spread evenly over the session's length.
        while planted < fact_count && chars * fact_count >= planted * target_chars {
            g.plant(planted);
            planted += 1;
        }
        chars += g.texts[before..].iter().map(String::len).sum::<usize>();
    }
    g.latest_request();
    Session {
        lines: g.lines,
        texts: g.texts,
        facts: g.facts,
    }
}

fn entry_value(index: usize, message: Value) -> Value {
    json!({
        "type": "message",
        "id": format!("e{index:05}"),
        "parentId": if index == 0 { Value::Null } else { json!(format!("e{:05}", index - 1)) },
        "timestamp": format!("2026-11-30T{:02}:{:02}:{:02}.000Z", (index / 3600) % 24, (index / 60) % 60, index % 60),
        "message": message,
    })
}

impl Gen {
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.rng.below(items.len())]
    }

    fn word(&mut self) -> String {
        let mut word = String::new();
        for _ in 0..2 + self.rng.below(2) {
            word.push_str(self.pick(&SYLLABLES));
        }
        word
    }

    fn component(&mut self) -> &'static Component {
        &COMPONENTS[self.rng.below(COMPONENTS.len())]
    }

    fn push(&mut self, message: Value, text: String) {
        let index = self.lines.len();
        self.lines.push(entry_value(index, message));
        self.texts.push(text);
    }

    fn user(&mut self, text: &str) {
        self.push(json!({"role": "user", "content": text}), text.to_string());
    }

    fn assistant(&mut self, text: &str) {
        self.push(
            json!({"role": "assistant", "content": [{"type": "text", "text": text}]}),
            text.to_string(),
        );
    }

    /// An assistant message with `text` calling `tool`, then its result.
    fn call(&mut self, text: &str, tool: &str, arguments: Value, output: &str, is_error: bool) {
        self.calls += 1;
        let id = format!("call_{}", self.calls);
        let argument_text: Vec<String> = arguments
            .as_object()
            .map(|object| {
                object
                    .values()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        self.push(
            json!({"role": "assistant", "content": [
                {"type": "text", "text": text},
                {"type": "toolCall", "id": id, "name": tool, "arguments": arguments}]}),
            format!("{text}\n{}", argument_text.join("\n")),
        );
        self.push(
            json!({"role": "toolResult", "toolCallId": id, "toolName": tool,
                   "content": [{"type": "text", "text": output}], "isError": is_error}),
            output.to_string(),
        );
    }

    fn fact(&mut self, kind: &'static str, answer: &[&str], query: String) {
        self.facts.push(Fact {
            kind,
            answer: answer.iter().map(|token| token.to_string()).collect(),
            query,
        });
    }

    // --- filler ---------------------------------------------------------------------------------

    /// One unit of ordinary work on a component: a request, reading, editing, testing.
    fn episode(&mut self) {
        let c = self.component();
        let verb = self
            .pick(&[
                "Refactor",
                "Add tests for",
                "Clean up",
                "Speed up",
                "Document",
                "Tidy the error handling in",
            ])
            .to_string();
        let request = match self.rng.below(4) {
            0 => format!("{verb} the {} please.", c.name),
            1 => format!(
                "Next: {} the {}. Keep the public API as it is and run the tests after.",
                verb.to_lowercase(),
                c.name
            ),
            2 => format!(
                "Can you look at the {}? {verb} it where it makes sense; the code in src/{}/ grew \
                 over the last weeks and nobody reviewed the newer parts.",
                c.name, c.module
            ),
            _ => self.pasted_spec(c),
        };
        self.user(&request);
        let file = format!(
            "src/{}/{}.rs",
            c.module,
            self.pick(&["mod", "core", "state", "io"])
        );
        let source = self.source_file(c);
        self.call(
            &format!("Let me read the {} first.", c.name),
            "read",
            json!({"path": file}),
            &source,
            false,
        );
        let old = format!("fn {}_{}(", c.module, self.word());
        self.call(
            "I'll make the change.",
            "edit",
            json!({"path": file, "oldText": old, "newText": format!("pub(crate) {old}")}),
            &format!("Successfully replaced text in {file}."),
            false,
        );
        for _ in 0..1 + self.rng.below(2) {
            let output = self.test_output(c, None);
            self.call(
                "Running the tests.",
                "bash",
                json!({"command": format!("cargo test -p atlas {}", c.module)}),
                &output,
                false,
            );
        }
        let reply = self.done_reply(c);
        self.assistant(&reply);
    }

    /// The assistant's closing words on an episode.
    fn done_reply(&mut self, c: &Component) -> String {
        let words = self.word();
        format!(
            "Done: the {} is {}. I kept the public functions, moved the helper `{words}` next to \
             its only caller and the tests pass. {}",
            c.name,
            self.pick(&[
                "tidier now",
                "smaller",
                "covered by tests",
                "faster on large inputs"
            ]),
            self.pick(&[
                "Nothing else changed.",
                "The docs mention the new behaviour.",
                "Clippy is clean."
            ])
        )
    }

    /// A user message pasting a specification: many "must" sentences, none a fact we probe.
    fn pasted_spec(&mut self, c: &Component) -> String {
        let mut spec = format!(
            "Here is the spec for the {} from the design doc, implement what is missing:\n\n",
            c.name
        );
        for i in 0..8 + self.rng.below(10) {
            let word = self.word();
            spec.push_str(&format!(
                "{}. The {} must {} `{word}` {}.\n",
                i + 1,
                c.name,
                self.pick(&["accept", "reject", "log", "retry", "validate", "cache"]),
                self.pick(&[
                    "within one second",
                    "before any write",
                    "for every tenant",
                    "only when enabled",
                    "and report a metric",
                ])
            ));
        }
        spec
    }

    fn source_file(&mut self, c: &Component) -> String {
        let mut out = format!(
            "//! The {} (module `{}`).\n\nuse std::collections::HashMap;\n\n",
            c.name, c.module
        );
        for _ in 0..6 + self.rng.below(14) {
            let name = self.word();
            out.push_str(&format!(
                "/// Handles `{name}` for the {}.\npub fn {name}(input: &str) -> Result<usize, Error> {{\n    \
                 let mut seen = HashMap::new();\n    for (i, part) in input.split(',').enumerate() {{\n        \
                 seen.insert(part.trim(), i);\n    }}\n    Ok(seen.len())\n}}\n\n",
                c.name
            ));
        }
        out
    }

    /// `cargo test` output; with `failure`, the given lines stand among the passing ones and the
    /// run fails.
    fn test_output(&mut self, c: &Component, failure: Option<&str>) -> String {
        let mut out = String::from(
            "   Compiling atlas-core v0.4.2 (/home/dev/src/atlas/core)\n   Compiling atlas v0.4.2 (/home/dev/src/atlas)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 7.42s\n     Running unittests src/lib.rs (target/debug/deps/atlas-3f1c2b7a9e)\n\n",
        );
        let tests = 10 + self.rng.below(30);
        out.push_str(&format!("running {tests} tests\n"));
        for _ in 0..tests {
            out.push_str(&format!(
                "test {}::tests::{} ... ok\n",
                c.module,
                self.word()
            ));
        }
        match failure {
            Some(lines) => out.push_str(&format!(
                "\nfailures:\n\n{lines}\n\ntest result: FAILED. {} passed; 1 failed; 0 ignored\n",
                tests
            )),
            None => out.push_str(&format!(
                "\ntest result: ok. {tests} passed; 0 failed; 0 ignored; finished in 0.{}s\n",
                self.rng.below(90) + 10
            )),
        }
        out
    }

    // --- facts ----------------------------------------------------------------------------------

    fn plant(&mut self, index: usize) {
        match index % 11 {
            0 | 6 => self.preference(),
            1 | 9 => self.decision(),
            2 => self.file_changed(),
            3 | 10 => self.error_fixed(),
            4 => self.identifier(),
            5 => self.todo(),
            7 => self.identifier(),
            _ => self.identifier(),
        }
    }

    fn preference(&mut self) {
        let c = self.component();
        let good = self.word();
        let bad = self.word();
        let flag = self.word();
        match self.rng.below(4) {
            0 => {
                self.user(&format!(
                    "One rule for this repo: always run the linter with `--{flag}` before you \
                     commit anything in the {}.",
                    c.name
                ));
                self.fact(
                    "preference",
                    &[&format!("--{flag}")],
                    format!("linter flag before commit {}", c.name),
                );
            }
            1 => {
                self.user(&format!(
                    "Please never use {bad} in the {} code; we use {good} there, it is what the \
                     other services expect.",
                    c.name
                ));
                self.fact(
                    "preference",
                    &[&good],
                    format!("{} code use instead of {bad}", c.name),
                );
            }
            2 => {
                let spec = self.pasted_spec(c);
                self.user(&format!(
                    "{spec}\nAnd independent of the spec: I prefer {good} over {bad} for the {}, \
                     keep it that way.",
                    c.name
                ));
                self.fact(
                    "preference",
                    &[&good],
                    format!("prefer {} over {bad}", c.name),
                );
            }
            _ => {
                self.user(&format!(
                    "Constraint from ops: the {} must only write under /var/lib/{good}, nowhere \
                     else.",
                    c.name
                ));
                self.fact(
                    "preference",
                    &[&format!("/var/lib/{good}")],
                    format!("{} write directory constraint", c.name),
                );
            }
        }
        self.assistant("Understood, I will follow that.");
    }

    fn decision(&mut self) {
        let c = self.component();
        let choice = self.word();
        let alt = self.word();
        let reasons = [
            ("it keeps working offline", "offline"),
            (
                "the vendor caps us at 40 requests per minute",
                "40 requests per minute",
            ),
            (
                "it halves the memory on the big tenants",
                "halves the memory",
            ),
            (
                "the old one is unmaintained since 2023",
                "unmaintained since 2023",
            ),
        ];
        let (reason, key) = self.pick(&reasons);
        match self.rng.below(4) {
            0 => self.assistant(&format!(
                "We'll go with {choice} for the {} because {reason}.",
                c.name
            )),
            1 => self.assistant(&format!(
                "After comparing both I picked {choice} over {alt} for the {}, since {reason}. \
                 The benchmark numbers are close enough either way.",
                c.name
            )),
            2 => self.user(&format!(
                "Let's use {choice} for the {} instead of {alt} — {reason}.",
                c.name
            )),
            _ => {
                self.user(&format!(
                    "Which should the {} use, {choice} or {alt}?",
                    c.name
                ));
                self.assistant(&format!(
                    "Decision: {choice}. Reason: {reason}; {alt} would need a rewrite of the \
                     {} glue code.",
                    c.name
                ));
            }
        }
        self.fact(
            "decision",
            &[&choice, key],
            format!("decided {} {choice} {alt} why", c.name),
        );
    }

    fn file_changed(&mut self) {
        let c = self.component();
        let feature = self.word();
        let path = format!("src/{}/{feature}.rs", c.module);
        match self.rng.below(3) {
            0 => self.call(
                &format!("I'll add the {feature} support to the {} in a new file.", c.name),
                "write",
                json!({"path": path, "content": format!("//! {feature} support for the {}.\n\npub fn {feature}() {{}}\n", c.name)}),
                &format!("Successfully wrote 64 bytes to {path}"),
                false,
            ),
            1 => self.call(
                "Wiring it in.",
                "edit",
                json!({"path": path, "oldText": "pub fn run() {}", "newText": format!("pub fn run() {{ {feature}::start(); }}")}),
                &format!("Successfully replaced text in {path}."),
                false,
            ),
            _ => self.assistant(&format!(
                "The {feature} handling of the {} now lives in {path}; I moved it out of mod.rs.",
                c.name
            )),
        }
        self.fact(
            "file changed",
            &[&path],
            format!("{feature} file {}", c.name),
        );
    }

    fn error_fixed(&mut self) {
        let c = self.component();
        let field = self.word();
        let fix = self.word();
        let (code, lines) = match self.rng.below(3) {
            0 => {
                let code = format!("E0{}", 300 + self.rng.below(400));
                let lines = format!(
                    "error[{code}]: cannot borrow `self.{field}` as mutable because it is also \
                     borrowed as immutable\n  --> src/{}/core.rs:{}:9",
                    c.module,
                    40 + self.rng.below(400)
                );
                (code, lines)
            }
            1 => {
                let test = format!("{}_{field}", c.module);
                let lines = format!(
                    "---- {}::tests::{test} stdout ----\nthread '{}::tests::{test}' panicked at \
                     src/{}/core.rs:{}:5:\nassertion `left == right` failed\n  left: 3\n right: 4",
                    c.module,
                    c.module,
                    c.module,
                    100 + self.rng.below(300)
                );
                (test, lines)
            }
            _ => {
                let code = format!("E0{}", 300 + self.rng.below(400));
                let lines = format!(
                    "error[{code}]: mismatched types: expected `{field}::Id`, found `u64`\n  --> \
                     src/{}/io.rs:{}:17",
                    c.module,
                    10 + self.rng.below(200)
                );
                (code, lines)
            }
        };
        let output = self.test_output(c, Some(&lines));
        self.call(
            "Running the tests.",
            "bash",
            json!({"command": format!("cargo test -p atlas {}", c.module)}),
            &output,
            true,
        );
        let explanation = match self.rng.below(3) {
            0 => format!(
                "The failure came from the {} holding a borrow across the loop; fixed it by \
                 {fix}-ing the key before the insert.",
                c.name
            ),
            1 => format!(
                "Found it: {code} was caused by the stale {field} handle. The fix: use \
                 `{fix}` instead of reusing it."
            ),
            _ => format!(
                "Fixed. {code} is gone — the {} now calls {fix} first, so the types line up.",
                c.name
            ),
        };
        self.assistant(&explanation);
        let passing = self.test_output(c, None);
        self.call(
            "Running the tests again.",
            "bash",
            json!({"command": format!("cargo test -p atlas {}", c.module)}),
            &passing,
            false,
        );
        self.fact(
            "error and fix",
            &[&code, &fix],
            format!("{} {code} error fix", c.name),
        );
    }

    fn identifier(&mut self) {
        let c = self.component();
        match self.rng.below(5) {
            0 => self.port(c),
            1 => self.version(c),
            2 => self.ticket(c),
            3 => self.commit(c),
            _ => self.host(c),
        }
    }

    /// A port, said by the user, passed to a command or written in a config file.
    fn port(&mut self, c: &Component) {
        let port = 10_000 + self.rng.below(50_000);
        let port = port.to_string();
        match self.rng.below(3) {
            0 => self.user(&format!(
                "The {} listens on port {port} in staging, use that.",
                c.name
            )),
            1 => self.call(
                "Starting it locally.",
                "bash",
                json!({"command": format!("cargo run -p atlas -- {} --port {port}", c.module)}),
                &format!("INFO {}: listening on 127.0.0.1:{port}\n", c.module),
                false,
            ),
            _ => self.call(
                "Adding the setting.",
                "write",
                json!({"path": format!("config/{}.toml", c.module), "content": format!("[{}]\nport = {port}\nworkers = 4\n", c.module)}),
                &format!("Successfully wrote 40 bytes to config/{}.toml", c.module),
                false,
            ),
        }
        self.fact("identifier", &[&port], format!("{} port", c.name));
    }

    /// A pinned version, by `cargo add` or said by the user.
    fn version(&mut self, c: &Component) {
        let krate = self.word();
        let version = format!(
            "{}.{}.{}",
            self.rng.below(4),
            self.rng.below(30),
            self.rng.below(20)
        );
        match self.rng.below(2) {
            0 => self.call(
                &format!("Pinning {krate} for the {}.", c.name),
                "bash",
                json!({"command": format!("cargo add {krate}@={version}")}),
                &format!(
                    "    Updating crates.io index\n      Adding {krate} v{version} to dependencies\n    Locking 1 package to latest compatible version\n"
                ),
                false,
            ),
            _ => self.user(&format!(
                "Pin {krate} at {version} for the {}, the next release breaks our build.",
                c.name
            )),
        }
        self.fact("identifier", &[&version], format!("{krate} version pinned"));
    }

    /// A ticket, said by the user or the assistant.
    fn ticket(&mut self, c: &Component) {
        let ticket = format!(
            "{}-{}",
            self.pick(&["OPS", "PLAT", "MAP", "BILL"]),
            1000 + self.rng.below(9000)
        );
        match self.rng.below(2) {
            0 => self.user(&format!(
                "This work on the {} is tracked as {ticket}, mention it in the commit.",
                c.name
            )),
            _ => self.assistant(&format!(
                "I linked the {} change to ticket {ticket} in the changelog.",
                c.name
            )),
        }
        self.fact("identifier", &[&ticket], format!("{} ticket", c.name));
    }

    /// A commit, only in git's own output.
    fn commit(&mut self, c: &Component) {
        let hash = format!("{:07x}", self.rng.next() & 0xfff_ffff);
        let message = format!("{} {}", self.pick(&["add", "fix", "split"]), c.name);
        self.call(
            "Committing.",
            "bash",
            json!({"command": format!("git add -A && git commit -m \"{message}\"")}),
            &format!(
                "[main {hash}] {message}\n 3 files changed, 120 insertions(+), 14 deletions(-)\n"
            ),
            false,
        );
        self.fact("identifier", &[&hash], format!("commit {message} hash"));
    }

    /// A deploy host, said by the user or in an `ssh` command.
    fn host(&mut self, c: &Component) {
        let host = format!(
            "{}-{}.{}.internal",
            self.word(),
            self.rng.below(9) + 1,
            self.pick(&["eu", "us", "staging"])
        );
        match self.rng.below(2) {
            0 => self.user(&format!(
                "Deploy the {} to {host} when it is ready, not to the old box.",
                c.name
            )),
            _ => self.call(
                "Checking the deploy host.",
                "bash",
                json!({"command": format!("ssh deploy@{host} systemctl status atlas-{}", c.module)}),
                &format!("● atlas-{}.service - Atlas {}\n   Active: active (running)\n", c.module, c.name),
                false,
            ),
        }
        self.fact("identifier", &[&host], format!("{} deploy host", c.name));
    }

    fn todo(&mut self) {
        let c = self.component();
        let item = self.word();
        match self.rng.below(3) {
            0 => self.user(&format!(
                "Later we still need to add {item} retries to the {}, do not forget.",
                c.name
            )),
            1 => self.assistant(&format!(
                "Remaining for the {}: the {item} fallback is not written yet; I'll do it after \
                 the current change.",
                c.name
            )),
            _ => self.call(
                "Leaving a marker for the rest.",
                "edit",
                json!({"path": format!("src/{}/core.rs", c.module), "oldText": "fn run() {", "newText": format!("fn run() {{\n    // TODO: {item} handling for the {}\n", c.name)}),
                &format!("Successfully replaced text in src/{}/core.rs.", c.module),
                false,
            ),
        }
        self.fact("open to-do", &[&item], format!("{} still to do", c.name));
    }

    fn latest_request(&mut self) {
        let c = self.component();
        let word = self.word();
        let request = format!(
            "Last thing for today: make the {} report `{word}` in its status line, then stop.",
            c.name
        );
        self.user(&request);
        self.fact(
            "latest request",
            &[&request],
            format!("{} status line", c.name),
        );
        let source = self.source_file(c);
        self.call(
            "Reading the status code.",
            "read",
            json!({"path": format!("src/{}/status.rs", c.module)}),
            &source,
            false,
        );
    }
}

/// xorshift64*: deterministic, so every run generates the same sessions.
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
}

//! Compaction benchmark: compile a synthetic 10,000-message session (user turns, assistant text
//! with tool calls, tool results some of them large or failing, a previous summary) with the
//! zero-LLM pipeline. Target: under 50 ms. A plain `main` timing several iterations with
//! `Instant`; prints the median and the minimum. Run: `cargo bench --bench compactor`.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use unipi_tui::compactor::entries::{SessionEntry, parse_entry};
use unipi_tui::compactor::pipeline::{CompactRequest, PipelineSettings, compact};

const MESSAGES: usize = 10_000;
const ITERATIONS: usize = 15;
const TARGET: Duration = Duration::from_millis(50);

fn main() {
    let entries = synthetic_session(MESSAGES);
    let chars: usize = entries
        .iter()
        .map(unipi_tui::compactor::cut::entry_chars)
        .sum();
    let settings = PipelineSettings::default();
    let request = CompactRequest {
        entries: &entries,
        tokens_before: (chars / 4) as u64,
        keep_user_turns: None,
        overflow: false,
        settings: &settings,
    };
    let mut times = Vec::with_capacity(ITERATIONS);
    let mut last = None;
    for _ in 0..ITERATIONS {
        let started = Instant::now();
        let compaction = compact(&request);
        times.push(started.elapsed());
        last = Some(compaction);
    }
    times.sort();
    let median = times[times.len() / 2];
    let min = times[0];
    match last {
        Some(Ok(compaction)) => {
            let stats = &compaction.stats;
            println!(
                "compactor: {} entries ({} chars) → summary {} chars; tokens {} → {} \
                 ({:.2} %); {} summarized, {} kept; blocks kept {}, dropped {}",
                entries.len(),
                chars,
                compaction.summary.len(),
                stats.tokens_before,
                stats.tokens_after,
                100.0 * stats.tokens_after as f64 / stats.tokens_before.max(1) as f64,
                stats.messages_summarized,
                stats.messages_kept,
                stats.blocks_kept,
                stats.blocks_dropped,
            );
        }
        Some(Err(refusal)) => println!("compactor: refused: {refusal}"),
        None => {}
    }
    stage_breakdown(&entries);
    println!(
        "compile {MESSAGES}-message session: median {median:?}, min {min:?} over {ITERATIONS} \
         runs (target < {TARGET:?}) {}",
        if median < TARGET { "OK" } else { "SLOW" }
    );
}

/// Where the time goes: each stage once over the whole session (the minimum of a few runs).
fn stage_breakdown(entries: &[SessionEntry]) {
    use unipi_tui::compactor::brief::compile_ranked;
    use unipi_tui::compactor::normalize::{filter_noise, normalize};
    use unipi_tui::compactor::sections::build_sections;

    let refs: Vec<&SessionEntry> = entries.iter().collect();
    let ids: Vec<String> = entries.iter().map(|entry| entry.id.clone()).collect();
    let time = |f: &mut dyn FnMut()| {
        (0..5)
            .map(|_| {
                let started = Instant::now();
                f();
                started.elapsed()
            })
            .min()
            .unwrap_or_default()
    };
    let blocks = filter_noise(normalize(&refs), &[]);
    let normalize_time = time(&mut || {
        std::hint::black_box(normalize(&refs));
    });
    let filter_time = time(&mut || {
        std::hint::black_box(filter_noise(normalize(&refs), &[]));
    })
    .saturating_sub(normalize_time);
    let brief_time = time(&mut || {
        std::hint::black_box(compile_ranked(&blocks, &ids, 8_000));
    });
    let sections_time = time(&mut || {
        std::hint::black_box(build_sections(&blocks));
    });
    println!(
        "stages: normalize {normalize_time:?}, filter {filter_time:?}, brief {brief_time:?}, \
         sections {sections_time:?} ({} blocks)",
        blocks.len()
    );
}

/// `count` conversation entries in turns of user → assistant(text + tool call) → tool result →
/// assistant text, with a compaction entry a tenth of the way in.
fn synthetic_session(count: usize) -> Vec<SessionEntry> {
    let mut lines: Vec<Value> = Vec::with_capacity(count + 1);
    let mut parent: Option<String> = None;
    let mut push = |lines: &mut Vec<Value>, mut entry: Value| {
        let id = format!("e{:07}", lines.len());
        entry["id"] = json!(id);
        entry["parentId"] = json!(parent.replace(id.clone()));
        entry["timestamp"] = json!("2026-11-30T10:00:00.000Z");
        lines.push(entry);
        id
    };
    let message = |message: Value| json!({"type": "message", "message": message});
    let mut turn = 0;
    let mut first_kept = None;
    while lines.len() < count {
        turn += 1;
        let file = format!("src/module_{}/file_{}.rs", turn % 37, turn % 11);
        let id = push(
            &mut lines,
            message(json!({"role": "user", "content": format!(
                "Please fix the failing test in {file} and make sure the build passes. \
                 Don't change the public API of module {turn}."
            )})),
        );
        if turn == 2 {
            first_kept = Some(id);
        }
        push(
            &mut lines,
            message(json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Let me think about the approach for this turn."},
                {"type": "text", "text": format!("I'll read {file} first and then run the tests.")},
                {"type": "toolCall", "id": format!("c{turn}"), "name": if turn % 3 == 0 { "edit" } else { "read" },
                 "arguments": {"path": file}},
            ]})),
        );
        let output = if turn % 10 == 0 {
            "line of a long build log with warnings\n".repeat(400)
        } else {
            format!("fn test_{turn}() {{ assert_eq!(compute({turn}), {turn}); }}\n").repeat(8)
        };
        push(
            &mut lines,
            message(
                json!({"role": "toolResult", "toolCallId": format!("c{turn}"),
                "toolName": if turn % 3 == 0 { "edit" } else { "read" }, "isError": turn % 7 == 0,
                "content": [{"type": "text", "text": if turn % 7 == 0 {
                    format!("error[E0308]: mismatched types in {file}\n{output}")
                } else { output }}]}),
            ),
        );
        push(
            &mut lines,
            message(
                json!({"role": "assistant", "content": [{"type": "text", "text": format!(
                    "Fixed the test in {file}; committed a1b2c{turn:03x} as \"Fix module {turn}\"."
                )}]}),
            ),
        );
        if turn == 3
            && let Some(first_kept) = &first_kept
        {
            push(
                &mut lines,
                json!({"type": "compaction", "summary": "[Session Goal]\n- Fix every module\n\n---\n\n(no transcript)",
                       "firstKeptEntryId": first_kept, "tokensBefore": 100_000}),
            );
        }
    }
    lines.iter().filter_map(parse_entry).collect()
}

//! Golden tests of the zero-LLM compaction pipeline on Pi session files
//! (`tests/fixtures/sessions/`): one recorded with the real Pi 1.6.0 against the scripted model
//! server (`a_fresh_pi_session_compacts`, which records a new one every run and re-records the
//! fixture with `UNIPI_RECORD_FIXTURES=1`), and hand-built ones
//! (`make-hand-built.py`) for empty input, huge tool outputs, images, thinking blocks, a previous
//! summary (ours and Pi's own), an orphaned compaction. The summaries are insta snapshots in
//! `snapshots/`; the invariants the issue promises are asserted on every fixture: the latest user
//! request survives verbatim, the recall note appears once, the manifest names exactly the
//! summarized entries. The token reduction on the recorded session is printed.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::json;
use unipi_tui::compactor::cut::live_entries;
use unipi_tui::compactor::entries::{
    Block, CompactionEntry, EntryKind, Message, Role, SessionEntry, branch, parse_entry,
    read_session_file,
};
use unipi_tui::compactor::pipeline::{
    CompactRequest, Compaction, PipelineSettings, RECALL_NOTE, compact,
};
use unipi_tui::compactor::refusal::Refusal;

const RECORDED: &str = "pi-1.6.0-greet";
const HAND_BUILT: [&str; 6] = [
    "huge-tool-output",
    "images",
    "thinking",
    "merge-previous",
    "foreign-summary",
    "orphan",
];

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sessions")
}

/// The branch of a fixture session (root to its last entry).
fn read_fixture(name: &str) -> Vec<SessionEntry> {
    let entries = read_session_file(&fixture_dir().join(format!("{name}.jsonl"))).unwrap();
    branch(&entries, None)
}

/// Pi's `tokensBefore` stand-in: Pi estimates about four characters per token.
fn estimated_tokens(entries: &[SessionEntry]) -> u64 {
    let live = live_entries(entries);
    let chars: usize = live
        .entries
        .iter()
        .map(|entry| unipi_tui::compactor::cut::entry_chars(entry))
        .sum::<usize>()
        + live.previous_summary.map_or(0, str::len);
    (chars / 4) as u64
}

fn run_with(
    entries: &[SessionEntry],
    keep: Option<usize>,
    settings: &PipelineSettings,
) -> Result<Compaction, Refusal> {
    compact(&CompactRequest {
        entries,
        tokens_before: estimated_tokens(entries),
        keep_user_turns: keep,
        overflow: false,
        settings,
    })
}

fn run(entries: &[SessionEntry]) -> Compaction {
    run_with(entries, None, &PipelineSettings::default()).unwrap()
}

/// What the snapshot shows: the cut, the manifest in short, then the summary.
fn golden_text(compaction: &Compaction) -> String {
    let manifest: Vec<String> = compaction
        .manifest
        .entries
        .iter()
        .map(|entry| {
            format!(
                "{} {} {}{}",
                entry.id,
                entry.role,
                entry.chars,
                entry
                    .tool
                    .as_deref()
                    .map(|t| format!(" {t}"))
                    .unwrap_or_default()
            )
        })
        .collect();
    format!(
        "first kept: {:?}\nsections: {}\nmanifest:\n  {}\n==== summary ====\n{}",
        compaction.first_kept_entry_id,
        compaction.details["sections"],
        manifest.join("\n  "),
        compaction.summary
    )
}

fn assert_golden(name: &str, text: String) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"));
    // Named as when this suite was a test binary of its own.
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(format!("compactor_golden__{name}"), text));
}

/// The invariants every compaction keeps, checked against the branch it compacted.
fn assert_invariants(entries: &[SessionEntry], compaction: &Compaction, label: &str) {
    // The recall note exactly once, at the end.
    assert!(compaction.summary.ends_with(RECALL_NOTE), "{label}");
    assert_eq!(
        compaction.summary.matches(RECALL_NOTE).count(),
        1,
        "{label}"
    );
    // The manifest is exactly the live entries before the first kept one.
    let live = live_entries(entries);
    let kept_at = live
        .entries
        .iter()
        .position(|entry| entry.id == compaction.first_kept_entry_id)
        .unwrap_or(live.entries.len());
    assert!(
        compaction.first_kept_entry_id.is_empty() || kept_at < live.entries.len(),
        "{label}: the first kept entry is live"
    );
    let expected: Vec<&str> = live.entries[..kept_at]
        .iter()
        .map(|entry| entry.id.as_str())
        .collect();
    let manifest: Vec<&str> = compaction
        .manifest
        .entries
        .iter()
        .map(|entry| entry.id.as_str())
        .collect();
    assert_eq!(manifest, expected, "{label}: manifest");
    // The latest user request survives verbatim: kept, or in the summary.
    let latest = live.entries.iter().rposition(|entry| is_user(entry));
    if let Some(at) = latest
        && at < kept_at
    {
        let EntryKind::Message(message) = &live.entries[at].kind else {
            unreachable!()
        };
        let text = message.text();
        assert!(
            compaction
                .summary
                .contains(&format!("[Latest User Request]\n{text}")),
            "{label}: the latest request {text:?} is not verbatim in\n{}",
            compaction.summary
        );
    }
    // No image data, no thinking text.
    assert!(!compaction.summary.contains("iVBORw0KGgo"), "{label}");
    assert!(!compaction.summary.contains("SECRET-THOUGHT"), "{label}");
    assert_eq!(
        compaction.stats.messages_summarized,
        compaction.manifest.entries.len()
    );
}

fn is_user(entry: &SessionEntry) -> bool {
    matches!(&entry.kind, EntryKind::Message(m) if m.role == Role::User)
}

// --- the recorded session ---------------------------------------------------------------------

#[test]
fn recorded_pi_session_is_read() {
    let entries = read_fixture(RECORDED);
    let messages: Vec<&Message> = entries
        .iter()
        .filter_map(|entry| match &entry.kind {
            EntryKind::Message(message) => Some(message),
            _ => None,
        })
        .collect();
    let users = messages.iter().filter(|m| m.role == Role::User).count();
    assert_eq!(users, 5, "five recorded turns");
    let tools: Vec<&str> = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|block| match block {
            Block::ToolCall { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    for tool in ["read", "write", "edit", "bash"] {
        assert!(tools.contains(&tool), "{tool} in {tools:?}");
    }
    assert!(
        messages
            .iter()
            .any(|m| m.role == Role::ToolResult && m.is_error),
        "the failing command is an error result"
    );
}

#[test]
fn recorded_pi_session_golden() {
    let entries = read_fixture(RECORDED);
    let compaction = run(&entries);
    assert_invariants(&entries, &compaction, RECORDED);
    let stats = &compaction.stats;
    let ratio = stats.tokens_after as f64 / stats.tokens_before as f64;
    println!(
        "token reduction on {RECORDED}: {} → {} tokens ({:.1} % of before, {:.1}x smaller); \
         {} messages summarized, {} kept; blocks kept {}, dropped {}; {:?}",
        stats.tokens_before,
        stats.tokens_after,
        ratio * 100.0,
        1.0 / ratio,
        stats.messages_summarized,
        stats.messages_kept,
        stats.blocks_kept,
        stats.blocks_dropped,
        stats.duration
    );
    assert!(
        ratio < 0.5,
        "compaction at least halves the context: {ratio}"
    );
    assert!(compaction.summary.contains("src/greet.rs"));
    assert_golden(RECORDED, golden_text(&compaction));
    // Everything summarized: the latest request moves into the summary verbatim.
    let all = run_with(&entries, Some(0), &PipelineSettings::default()).unwrap();
    assert_eq!(all.first_kept_entry_id, "");
    assert_invariants(&entries, &all, "compact all");
    let total = (all.stats.tokens_after as f64) / (all.stats.tokens_before as f64);
    println!(
        "token reduction on {RECORDED}, everything summarized: {} → {} tokens ({:.1} %)",
        all.stats.tokens_before,
        all.stats.tokens_after,
        total * 100.0
    );
    assert_golden(&format!("{RECORDED}-compact-all"), golden_text(&all));
}

// --- hand-built sessions ----------------------------------------------------------------------

#[test]
fn empty_session_is_refused() {
    let entries = read_fixture("empty");
    assert!(entries.is_empty());
    assert_eq!(
        run_with(&entries, None, &PipelineSettings::default()),
        Err(Refusal::NoLiveMessages)
    );
}

#[test]
fn hand_built_goldens() {
    for name in HAND_BUILT {
        let entries = read_fixture(name);
        let compaction = run(&entries);
        assert_invariants(&entries, &compaction, name);
        assert_golden(name, golden_text(&compaction));
    }
}

#[test]
fn huge_tool_outputs_stay_out_of_the_summary() {
    let entries = read_fixture("huge-tool-output");
    let settings = PipelineSettings::default();
    let compaction = run(&entries);
    let ceiling_chars =
        (settings.brief_ceiling_tokens as f64 * compaction.stats.chars_per_token) as usize;
    assert!(
        compaction.summary.len() < ceiling_chars + 2_000,
        "{}",
        compaction.summary.len()
    );
    assert!(!compaction.summary.contains("row7999"));
    assert!(
        compaction
            .summary
            .contains("[bash] Error: perf: command not found")
    );
    // A tail budget smaller than the last turn: the tail is rescued, the request kept verbatim.
    let tight = PipelineSettings {
        max_smart_tail_tokens: 10,
        ..PipelineSettings::default()
    };
    let rescued = run_with(&entries, None, &tight).unwrap();
    assert_eq!(rescued.details["tailRescued"], true);
    assert_invariants(&entries, &rescued, "tail rescue");
    assert!(rescued.summary.contains(
        "[Latest User Request]\nThen fix the double parse in src/importer.rs, and don't touch the CSV format."
    ));
}

#[test]
fn merge_keeps_previous_facts_and_one_recall_note() {
    let entries = read_fixture("merge-previous");
    let compaction = run(&entries);
    let summary = &compaction.summary;
    assert_eq!(compaction.details["previousSummaryUsed"], true);
    assert!(summary.contains("- port the CLI parser to clap. Always keep the old flag names."));
    assert!(summary.contains("Always keep the old flag names"));
    assert!(summary.contains("3f9a2c1d — Port quiet flag"), "{summary}");
    assert!(
        !summary.contains("Continue from the summary."),
        "auto-continue is noise"
    );
    assert!(!summary.contains("TodoWrite"), "todo bookkeeping is noise");
    assert_eq!(summary.matches(RECALL_NOTE).count(), 1);
}

#[test]
fn foreign_previous_summary_is_carried_on() {
    let entries = read_fixture("foreign-summary");
    let compaction = run(&entries);
    assert!(
        compaction
            .summary
            .contains("## Goal\nThe user wants a README.")
    );
}

#[test]
fn orphaned_compaction_only_summarizes_what_follows_it() {
    let entries = read_fixture("orphan");
    let compaction = run(&entries);
    assert_eq!(compaction.details["orphanRecovered"], true);
    assert!(
        compaction
            .manifest
            .entries
            .iter()
            .all(|entry| !entry.id.starts_with("orp0000") || entry.id.as_str() > "orp00003")
    );
    assert!(compaction.summary.contains("- Old goal"));
}

#[test]
fn latest_request_survives_every_cut() {
    let tight = PipelineSettings {
        max_smart_tail_tokens: 1,
        ..PipelineSettings::default()
    };
    let default = PipelineSettings::default();
    for name in HAND_BUILT.iter().chain([&RECORDED]) {
        let entries = read_fixture(name);
        for (keep, settings) in [
            (None, &default),
            (None, &tight),
            (Some(0), &default),
            (Some(1), &default),
            (Some(2), &default),
        ] {
            let label = format!(
                "{name} keep {keep:?} tail {}",
                settings.max_smart_tail_tokens
            );
            match run_with(&entries, keep, settings) {
                Ok(compaction) => assert_invariants(&entries, &compaction, &label),
                Err(refusal) => assert_eq!(refusal, Refusal::NoValidCut, "{label}"),
            }
        }
    }
}

// --- repeated compaction ----------------------------------------------------------------------

/// Appends the compaction Pi would store for `compaction`, then `turns` more user/assistant
/// pairs, as children of the branch's leaf.
fn continue_after(
    entries: &[SessionEntry],
    compaction: &Compaction,
    round: usize,
    turns: &[(&str, &str)],
) -> Vec<SessionEntry> {
    let mut branch = entries.to_vec();
    let mut parent = branch.last().map(|entry| entry.id.clone());
    let mut push = |branch: &mut Vec<SessionEntry>, id: String, kind: EntryKind| {
        branch.push(SessionEntry {
            id: id.clone(),
            parent_id: parent.replace(id),
            timestamp: None,
            kind,
        });
    };
    push(
        &mut branch,
        format!("cmp{round}"),
        EntryKind::Compaction(CompactionEntry {
            summary: compaction.summary.clone(),
            first_kept_entry_id: compaction.first_kept_entry_id.clone(),
            tokens_before: compaction.tokens_before,
            details: compaction.details.clone(),
        }),
    );
    for (index, (user, assistant)) in turns.iter().enumerate() {
        for (suffix, role, text) in [("u", Role::User, user), ("a", Role::Assistant, assistant)] {
            push(
                &mut branch,
                format!("r{round}{suffix}{index}"),
                EntryKind::Message(Message {
                    role,
                    content: vec![Block::Text(text.to_string())],
                    tool_name: None,
                    tool_call_id: None,
                    is_error: false,
                }),
            );
        }
    }
    branch
}

#[test]
fn repeated_compaction_stays_bounded_and_keeps_one_note() {
    let mut entries = read_fixture(RECORDED);
    let mut compaction = run(&entries);
    let mut lengths = vec![compaction.summary.len()];
    for round in 1..=4 {
        let turns = [
            (
                format!("Round {round}: add a test for greet in tests/greet_{round}.rs"),
                format!("I created tests/greet_{round}.rs with the test."),
            ),
            (
                format!("Round {round}: rename farewell to goodbye"),
                "Renamed it.".to_string(),
            ),
            (
                format!("Round {round}: which tests exist now?"),
                "There are several.".to_string(),
            ),
        ];
        let turns: Vec<(&str, &str)> = turns
            .iter()
            .map(|(u, a)| (u.as_str(), a.as_str()))
            .collect();
        entries = continue_after(&entries, &compaction, round, &turns);
        compaction = run(&entries);
        assert_invariants(&entries, &compaction, &format!("round {round}"));
        assert_eq!(compaction.details["previousSummaryUsed"], true);
        // Facts from the first compaction are still there.
        assert!(compaction.summary.contains("src/greet.rs"), "round {round}");
        lengths.push(compaction.summary.len());
        if round == 2 {
            assert_golden(&format!("{RECORDED}-round-2"), golden_text(&compaction));
        }
    }
    let settings = PipelineSettings::default();
    let bound = (settings.brief_ceiling_tokens as f64 * 8.0) as usize + 4_000;
    assert!(
        lengths.iter().all(|&length| length < bound),
        "summary lengths {lengths:?} stay under {bound}"
    );
}

// --- recording --------------------------------------------------------------------------------

/// Records `pi-1.6.0-greet.jsonl`: five `pi -p` runs (the first new, the rest `--continue`) of
/// the real, pinned Pi against the scripted model (`record-greet.toml`) in a sandbox with real
/// tools; the session file is copied into the fixtures with the sandbox path replaced.
#[tokio::test]
async fn a_fresh_pi_session_compacts() -> anyhow::Result<()> {
    use support::pi::{PiLine, pi_install};
    use unipi_tui::pi::offline::write_agent_dir;
    use unipi_tui::scripted::{Scenario, start};

    let pi = pi_install(PiLine::Current)?;
    let scenario = Scenario::from_file(&fixture_dir().join("record-greet.toml"))?;
    let server = start(scenario).await?;
    let sandbox = support::sandbox::Sandbox::new();
    let (agent_dir, cwd) = (sandbox.dir("agent"), sandbox.project.clone());
    std::fs::write(cwd.join("notes.md"), "# Notes\n\ngreet must say hello.\n")?;
    std::fs::create_dir_all(cwd.join("src"))?;
    let agent = write_agent_dir(&agent_dir, &server.base_url(), &server.models())?;
    let prompts = [
        "Goal: implement a greeting module in src/greet.rs. Always keep functions small.",
        "Now add a farewell function and run the tests.",
        "Commit the work with message 'Add greeting module'.",
        "Show me a long listing of numbers.",
        "Which file did we create? Please answer briefly.",
    ];
    for (index, prompt) in prompts.iter().enumerate() {
        let mut args = Vec::new();
        if index > 0 {
            args.push("--continue");
        }
        args.extend(["-p", prompt]);
        let output = pi.run(&agent, &sandbox, &args).await?;
        assert!(output.success, "{prompt}: {output:#?}");
    }
    let sessions: Vec<PathBuf> = walk(&agent_dir.join("sessions"));
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let text = std::fs::read_to_string(&sessions[0])?;
    let text = text.replace(&sandbox.root().display().to_string(), "/tmp/unipi-record");
    // Every line is an entry or the header.
    for line in text.lines() {
        let value: serde_json::Value = serde_json::from_str(line)?;
        assert!(parse_entry(&value).is_some() || value["type"] == json!("session"));
    }
    // The session this Pi writes today compacts with the promised invariants, at every cut.
    let entries: Vec<SessionEntry> = text
        .lines()
        .filter_map(|line| parse_entry(&serde_json::from_str(line).ok()?))
        .collect();
    let entries = branch(&entries, None);
    for keep in [None, Some(1), Some(2)] {
        let compaction = run_with(&entries, keep, &PipelineSettings::default())
            .unwrap_or_else(|refusal| panic!("keep {keep:?}: {refusal}"));
        assert_invariants(&entries, &compaction, &format!("fresh, keep {keep:?}"));
    }
    if std::env::var_os("UNIPI_RECORD_FIXTURES").is_some() {
        std::fs::write(
            fixture_dir().join(format!("pi-{}-greet.jsonl", pi.version)),
            text,
        )?;
    }
    server.shutdown().await;
    Ok(())
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else if path.extension().is_some_and(|ext| ext == "jsonl") {
            files.push(path);
        }
    }
    files
}

//! The zero-LLM compaction of a branch, end to end: calibrate characters per token from Pi's own
//! `tokensBefore`, choose the kept user turns (an explicit `keep:N` as given, otherwise the most
//! recent turns that fit the tail budget), cut, rescue an oversized tail, then compile the
//! summarized range — normalize, filter noise, rank the brief, build sections, format, merge with
//! the previous summary — and append the recall note. Beyond the TypeScript original the user's
//! latest request always survives verbatim (in the kept tail or in `[Latest User Request]`), and
//! every compaction reports a manifest of what it summarized away and its statistics.
//! Pure: entries in, summary out; the hook, the database and the toasts live elsewhere.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::brief::{budget_tokens, compile_ranked};
use super::cut::{Cut, KeepTurns, LiveBranch, choose_cut, is_user, live_entries, smart_keep_turns};
use super::entries::{Block, EntryKind, Message, Role, SessionEntry};
use super::format::{
    SummaryParts, format_summary, merge_previous, parse_summary, strip_recall_note,
};
use super::normalize::{filter_noise, normalize};
pub use super::refusal::Refusal;
use super::sections::build_sections;

/// Ends every summary: the model is told where the summarized details are.
pub const RECALL_NOTE: &str = "Use `session_recall` to search for prior work, decisions, and context from before this summary. Do not redo work already completed.";

/// How many recent user turns a smart cut keeps at most.
pub(crate) const SMART_MAX_KEEP_USER_TURNS: usize = 2;
/// More than one turn is kept only while the kept tail is at most this fraction (1/n) of the
/// live context.
pub(crate) const SMART_TAIL_SHARE: usize = 4;
/// The brief may take up to this fraction (1/n) of the summarized characters when that is more
/// than its ceiling.
pub(crate) const BRIEF_SHARE: usize = 40;
/// Characters per token when Pi gives no usable figure.
pub(crate) const DEFAULT_CHARS_PER_TOKEN: f64 = 4.0;
/// Calibration is clamped: Pi's `tokensBefore` also counts the system prompt and tools, which
/// the branch does not show.
pub(crate) const MIN_CHARS_PER_TOKEN: f64 = 1.5;
pub(crate) const MAX_CHARS_PER_TOKEN: f64 = 8.0;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineSettings {
    pub brief_target_tokens: u64,
    pub brief_ceiling_tokens: u64,
    pub tokens_per_block: u64,
    /// The kept tail's budget when the cut is not an explicit `keep:N`.
    pub max_smart_tail_tokens: u64,
    /// Substrings marking a user message as noise.
    pub custom_noise_patterns: Vec<String>,
}

impl Default for PipelineSettings {
    fn default() -> Self {
        Self {
            brief_target_tokens: 1_100,
            brief_ceiling_tokens: 2_000,
            tokens_per_block: 15,
            // Pi's own `keepRecentTokens` default.
            max_smart_tail_tokens: 20_000,
            custom_noise_patterns: Vec::new(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct CompactRequest<'a> {
    /// The branch, root → leaf.
    pub entries: &'a [SessionEntry],
    /// Pi's real figure (calibrates chars per token).
    pub tokens_before: u64,
    /// Explicit `keep:N` (respected, no tail rescue).
    pub keep_user_turns: Option<usize>,
    /// Pi compacts because the context overflowed.
    pub overflow: bool,
    pub settings: &'a PipelineSettings,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Compaction {
    /// Ends with [`RECALL_NOTE`].
    pub summary: String,
    /// `{"compactor":"unipi-tui","version":1,"sections":[...],...}`
    pub details: Value,
    /// Empty when nothing is kept.
    pub first_kept_entry_id: String,
    pub tokens_before: u64,
    pub manifest: Manifest,
    pub stats: CompactionStats,
}

/// What was summarized away.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub entries: Vec<ManifestEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    pub id: String,
    /// `user`, `assistant`, `toolResult`, `bashExecution`, `custom` or Pi's role name.
    pub role: String,
    pub chars: usize,
    /// The tool of a result, the tools an assistant message called (comma-separated), or the
    /// custom message type.
    pub tool: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionStats {
    pub tokens_before: u64,
    /// Estimate: summary plus kept tail.
    pub tokens_after: u64,
    pub messages_summarized: usize,
    pub messages_kept: usize,
    pub blocks_kept: usize,
    pub blocks_dropped: usize,
    pub kept_user_turns: usize,
    pub chars_per_token: f64,
    pub duration: Duration,
}

pub fn compact(request: &CompactRequest) -> Result<Compaction, Refusal> {
    let started = Instant::now();
    let live = live_entries(request.entries);
    let context_chars = live.suffix_chars[0] + live.previous_summary.map_or(0, str::len);
    let chars_per_token = calibrate(context_chars, request.tokens_before);
    let cut = cut_branch(request, &live, context_chars, chars_per_token)?;
    let (summarized, kept) = live.entries.split_at(cut.index);
    let latest_user_request = latest_user_request(summarized, kept);
    let summarized_chars = live.suffix_chars[0] - live.suffix_chars[cut.index];
    let compiled = compile(
        Range {
            entries: summarized,
            chars: summarized_chars,
        },
        live.previous_summary,
        latest_user_request.clone(),
        request.settings,
        chars_per_token,
    );
    let summary = format!(
        "{}\n\n---\n\n{RECALL_NOTE}",
        format_summary(&compiled.parts)
    );
    let manifest = manifest(&live, summarized);
    let kept_chars = live.suffix_chars[cut.index];
    let tokens_after = ((summary.len() + kept_chars) as f64 / chars_per_token).ceil() as u64;
    let stats = CompactionStats {
        tokens_before: request.tokens_before,
        tokens_after,
        messages_summarized: summarized.len(),
        messages_kept: kept.len(),
        blocks_kept: compiled.blocks_kept,
        blocks_dropped: compiled.blocks_dropped,
        kept_user_turns: kept.iter().filter(|entry| is_user(entry)).count(),
        chars_per_token,
        duration: started.elapsed(),
    };
    let details = details(
        &compiled.parts,
        &live,
        &cut,
        latest_user_request.is_some(),
        &stats,
    );
    Ok(Compaction {
        summary,
        details,
        first_kept_entry_id: cut.first_kept_entry_id,
        tokens_before: request.tokens_before,
        manifest,
        stats,
    })
}

/// Where the branch is cut: an explicit `keep:N` as given, otherwise the most recent user turns
/// (one on overflow) whose tail is cheap, with the tail budget applied.
fn cut_branch(
    request: &CompactRequest,
    live: &LiveBranch,
    context_chars: usize,
    chars_per_token: f64,
) -> Result<Cut, Refusal> {
    let tail_budget_chars =
        (request.settings.max_smart_tail_tokens as f64 * chars_per_token) as usize;
    let keep = match request.keep_user_turns {
        Some(turns) => KeepTurns::Explicit(turns),
        None => {
            let max_turns = if request.overflow {
                1
            } else {
                SMART_MAX_KEEP_USER_TURNS
            };
            // A second kept turn only when it is cheap: a kept tail that dominates the context
            // would make the compaction pointless.
            let cheap_tail = tail_budget_chars.min(context_chars / SMART_TAIL_SHARE);
            KeepTurns::Smart(smart_keep_turns(live, max_turns, cheap_tail))
        }
    };
    let budget = matches!(keep, KeepTurns::Smart(_)).then_some(tail_budget_chars);
    choose_cut(live, keep, budget)
}

/// The user's latest request, verbatim, when the cut summarizes it away (no user turn is kept).
fn latest_user_request(summarized: &[&SessionEntry], kept: &[&SessionEntry]) -> Option<String> {
    summarized
        .iter()
        .rposition(|entry| is_user(entry))
        .filter(|_| !kept.iter().any(|entry| is_user(entry)))
        .map(|at| verbatim_request(summarized[at]))
}

/// The summarized range compiled into summary parts, with how many blocks the brief kept.
struct Compiled {
    parts: SummaryParts,
    blocks_kept: usize,
    blocks_dropped: usize,
}

/// The entries a compaction summarizes and their characters.
struct Range<'a, 'b> {
    entries: &'a [&'b SessionEntry],
    chars: usize,
}

/// Normalizes the summarized range, filters noise, ranks the brief within its budget, builds
/// the sections and merges them with the previous summary. The brief may grow past the
/// ceiling to a [`BRIEF_SHARE`]th of what it summarizes: a long session has more worth keeping
/// than a short one, and the reduction stays at that share.
fn compile(
    summarized: Range,
    previous_summary: Option<&str>,
    latest_user_request: Option<String>,
    settings: &PipelineSettings,
    chars_per_token: f64,
) -> Compiled {
    let blocks = normalize(summarized.entries);
    let total_blocks = blocks.len();
    let blocks = filter_noise(blocks, &settings.custom_noise_patterns);
    let brief_tokens = budget_tokens(
        blocks.len(),
        settings.brief_target_tokens,
        settings.brief_ceiling_tokens,
        settings.tokens_per_block,
    );
    let max_brief_chars =
        ((brief_tokens as f64 * chars_per_token) as usize).max(summarized.chars / BRIEF_SHARE);
    let refs: Vec<String> = summarized
        .entries
        .iter()
        .map(|entry| entry.id.clone())
        .collect();
    let brief = compile_ranked(&blocks, &refs, max_brief_chars);
    let sections = build_sections(&blocks);
    let fresh = SummaryParts::from_sections(&sections, latest_user_request, brief.text);
    let ceiling_chars =
        ((settings.brief_ceiling_tokens as f64 * chars_per_token) as usize).max(max_brief_chars);
    let parts = match previous_summary {
        Some(previous) => {
            let previous = parse_summary(strip_recall_note(previous, RECALL_NOTE));
            merge_previous(&previous, fresh, ceiling_chars)
        }
        None => fresh,
    };
    Compiled {
        parts,
        blocks_kept: brief.blocks_kept,
        blocks_dropped: total_blocks - brief.blocks_kept,
    }
}

/// One manifest entry per summarized entry, with its characters.
fn manifest(live: &LiveBranch, summarized: &[&SessionEntry]) -> Manifest {
    Manifest {
        entries: summarized
            .iter()
            .enumerate()
            .map(|(index, entry)| {
                let chars = live.suffix_chars[index] - live.suffix_chars[index + 1];
                manifest_entry(entry, chars)
            })
            .collect(),
    }
}

/// The compaction's `details` as Pi stores them.
fn details(
    parts: &SummaryParts,
    live: &LiveBranch,
    cut: &Cut,
    latest_user_request_verbatim: bool,
    stats: &CompactionStats,
) -> Value {
    json!({
        "compactor": "unipi-tui",
        "version": 1,
        "sections": parts.titles(),
        "sourceMessageCount": stats.messages_summarized,
        "previousSummaryUsed": live.previous_summary.is_some(),
        "orphanRecovered": live.orphan && live.previous_summary.is_some(),
        "compactAll": cut.compact_all,
        "tailRescued": cut.tail_rescued,
        "latestUserRequestVerbatim": latest_user_request_verbatim,
        "stats": {
            "tokensBefore": stats.tokens_before,
            "tokensAfter": stats.tokens_after,
            "messagesSummarized": stats.messages_summarized,
            "messagesKept": stats.messages_kept,
            "blocksKept": stats.blocks_kept,
            "blocksDropped": stats.blocks_dropped,
            "keptUserTurns": stats.kept_user_turns,
            "charsPerToken": stats.chars_per_token,
        },
    })
}

/// Characters per token of this session: the live context's characters over Pi's token count,
/// clamped; the default when either is missing.
pub(crate) fn calibrate(context_chars: usize, tokens_before: u64) -> f64 {
    if context_chars == 0 || tokens_before == 0 {
        return DEFAULT_CHARS_PER_TOKEN;
    }
    (context_chars as f64 / tokens_before as f64).clamp(MIN_CHARS_PER_TOKEN, MAX_CHARS_PER_TOKEN)
}

// --- helpers -------------------------------------------------------------------------------

/// The user's words exactly as sent; image-only requests name their images.
fn verbatim_request(entry: &SessionEntry) -> String {
    let EntryKind::Message(message) = &entry.kind else {
        return String::new();
    };
    let text = message.text();
    let images: Vec<String> = message
        .content
        .iter()
        .filter_map(|block| match block {
            Block::Image { mime } => Some(format!("[image: {mime}]")),
            _ => None,
        })
        .collect();
    match (text.is_empty(), images.is_empty()) {
        (_, true) => text,
        (true, false) => images.join(" "),
        (false, false) => format!("{text}\n{}", images.join(" ")),
    }
}

fn manifest_entry(entry: &SessionEntry, chars: usize) -> ManifestEntry {
    let (role, tool) = match &entry.kind {
        EntryKind::Message(message) => (role_name(&message.role), manifest_tool(message)),
        EntryKind::CustomMessage { custom_type, .. } => {
            ("custom".to_string(), Some(custom_type.clone()))
        }
        EntryKind::Compaction(_) => ("compaction".to_string(), None),
        EntryKind::Other { entry_type } => (entry_type.clone(), None),
    };
    ManifestEntry {
        id: entry.id.clone(),
        role,
        chars,
        tool,
    }
}

fn manifest_tool(message: &Message) -> Option<String> {
    match message.role {
        Role::ToolResult | Role::Custom => message.tool_name.clone(),
        Role::BashExecution => Some("bash".into()),
        Role::Assistant => {
            let names: Vec<&str> = message
                .content
                .iter()
                .filter_map(|block| match block {
                    Block::ToolCall { name, .. } => Some(name.as_str()),
                    _ => None,
                })
                .collect();
            (!names.is_empty()).then(|| names.join(","))
        }
        _ => None,
    }
}

fn role_name(role: &Role) -> String {
    match role {
        Role::User => "user".into(),
        Role::Assistant => "assistant".into(),
        Role::ToolResult => "toolResult".into(),
        Role::BashExecution => "bashExecution".into(),
        Role::Custom => "custom".into(),
        Role::Other(name) => name.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::compactor::entries::parse_entry;

    fn session(lines: &[Value]) -> Vec<SessionEntry> {
        lines.iter().filter_map(parse_entry).collect()
    }

    fn msg(id: &str, message: Value) -> Value {
        json!({"type":"message","id":id,"parentId":null,"message":message})
    }

    fn user(id: &str, text: &str) -> Value {
        msg(id, json!({"role":"user","content":text}))
    }

    fn assistant(id: &str, text: &str) -> Value {
        msg(
            id,
            json!({"role":"assistant","content":[{"type":"text","text":text}]}),
        )
    }

    fn run(entries: &[SessionEntry], keep: Option<usize>) -> Result<Compaction, Refusal> {
        let settings = PipelineSettings::default();
        compact(&CompactRequest {
            entries,
            tokens_before: 0,
            keep_user_turns: keep,
            overflow: false,
            settings: &settings,
        })
    }

    #[test]
    fn refusals_and_retry() {
        assert_eq!(run(&[], None), Err(Refusal::NoLiveMessages));
        assert_eq!(
            run(&session(&[user("1", "hi")]), None),
            Err(Refusal::TooFewMessages)
        );
        let no_user = session(&[assistant("1", "a"), assistant("2", "b")]);
        assert_eq!(run(&no_user, None), Err(Refusal::NoUserMessage));
        assert!(Refusal::NoValidCut.to_string().starts_with("compactor: "));
        for refusal in [
            Refusal::NoLiveMessages,
            Refusal::TooFewMessages,
            Refusal::NoUserMessage,
            Refusal::NoValidCut,
        ] {
            assert!(refusal.lets_pi_retry(true));
            assert!(!refusal.lets_pi_retry(false));
        }
    }

    #[test]
    fn summary_has_sections_manifest_and_one_recall_note() {
        let entries = session(&[
            user("1", "Implement the config loader in src/config.rs"),
            assistant(
                "2",
                &format!(
                    "I created src/config.rs with the loader. {}",
                    "Details. ".repeat(40)
                ),
            ),
            user("3", "Now add tests. Always run clippy."),
            assistant("4", "Done."),
            user("5", "Ship it"),
        ]);
        let compaction = run(&entries, None).unwrap();
        assert!(
            compaction
                .summary
                .contains("[Session Goal]\n- Implement the config loader")
        );
        assert!(compaction.summary.ends_with(RECALL_NOTE));
        assert_eq!(compaction.summary.matches(RECALL_NOTE).count(), 1);
        // Smart keep: two turns kept (their tail is cheap), the first summarized.
        assert_eq!(compaction.first_kept_entry_id, "3");
        let ids: Vec<&str> = compaction
            .manifest
            .entries
            .iter()
            .map(|e| e.id.as_str())
            .collect();
        assert_eq!(ids, ["1", "2"]);
        assert_eq!(compaction.stats.kept_user_turns, 2);
        assert_eq!(compaction.stats.chars_per_token, DEFAULT_CHARS_PER_TOKEN);
        assert_eq!(compaction.details["compactor"], "unipi-tui");
        assert_eq!(compaction.details["latestUserRequestVerbatim"], false);
        // A tail that would dominate the context keeps one turn only.
        let heavy_tail = session(&[
            user("1", "Implement the config loader"),
            assistant("2", "Done."),
            user("3", "Now add tests."),
            assistant("4", &"Long answer. ".repeat(40)),
            user("5", "Ship it"),
        ]);
        assert_eq!(run(&heavy_tail, None).unwrap().first_kept_entry_id, "5");
        // An overflow keeps one turn even when two would be cheap.
        let settings = PipelineSettings::default();
        let overflow = compact(&CompactRequest {
            entries: &entries,
            tokens_before: 0,
            keep_user_turns: None,
            overflow: true,
            settings: &settings,
        });
        assert_eq!(overflow.unwrap().first_kept_entry_id, "5");
        assert!(RECALL_NOTE.contains("`session_recall`"));
    }

    #[test]
    fn compact_all_keeps_the_latest_request_verbatim() {
        let request = "Refactor   the\n  parser\n\nkeeping the API";
        let entries = session(&[
            user("1", request),
            assistant("2", "Working on it."),
            assistant("3", "Still working."),
        ]);
        let compaction = run(&entries, None).unwrap();
        assert_eq!(compaction.first_kept_entry_id, "");
        assert!(
            compaction
                .summary
                .contains(&format!("[Latest User Request]\n{request}\n\n---\n\n")),
            "{}",
            compaction.summary
        );
        assert_eq!(compaction.details["compactAll"], true);
        assert_eq!(compaction.manifest.entries.len(), 3);
    }

    #[test]
    fn calibration_is_clamped() {
        let cases = [
            (0, 100, 4.0),
            (400, 0, 4.0),
            (400, 100, 4.0),
            (1000, 100, 8.0),
            (100, 100, 1.5),
            (500, 200, 2.5),
        ];
        for (chars, tokens, expected) in cases {
            assert_eq!(calibrate(chars, tokens), expected, "{chars}/{tokens}");
        }
    }
}

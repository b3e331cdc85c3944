//! The `compactor` module: ties the zero-LLM pipeline to Pi, the session database and the
//! workbench. It answers Pi's `session_before_compact` hook with a deterministic summary (for
//! `/compact`, `/unipi:compact` and Pi's own threshold/overflow compactions while
//! `overrideDefaultCompaction` is on), records each compaction's statistics and manifest, and
//! after Pi reports the compaction done, shows a toast, sends the follow-up prompt or the
//! invisible auto-continue nudge. It watches the main Pi's events on the bus to feed the
//! auto-compaction decision ([`super::auto::decide`]) and to ingest the session file into the
//! database ([`super::ingest`]), and serves `session_recall` from that database.
//!
//! Shape: the pure parts — config, the marker that tags our own compaction requests, the hook's
//! plan and answer, recall and stats formatting, the resume check — are free functions with
//! table tests; [`CompactorModule`] only moves data between them, the bridge and the database
//! thread. Its state is small and behind one mutex that is never held across an await.
//!
//! Resume (what was chosen): when a session starts (startup, resume, fork) and the database
//! holds a summary of ours for it that the session's branch lacks — Pi crashed after the hook
//! answered but before it wrote the compaction — that summary is sent once as a displayed
//! `compactor-resume` message (appended to the session at once, so the model reads it from the
//! next turn on). When Pi's file has the compaction, Pi already
//! puts the summary in the context, so nothing is injected (it would only duplicate it).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use unipi_widgets::compactor::{CompactionModel, CompactorTally, ManifestRow};
use unipi_widgets::footer::format_tokens;

use super::auto::{self, AutoConfig, AutoState, UsageSample};
use super::entries::{self, EntryKind, SessionEntry};
use super::ingest::{DbWorker, ingest_session_file, iso_to_ms};
use super::normalize::AUTO_CONTINUE_TYPE;
use super::pipeline::{self, CompactRequest, Compaction, PipelineSettings};
use super::refusal::Refusal;
use super::reindex::{self, Progress};
use crate::bridge::{
    AgentId, BridgeHost, BusEvent, CommandSpec, Completion, DeliverAs, EventBus, HookCall,
    HostCall, MessageTypeSpec, Module, NotifyLevel, PiEvent, ToolCall, ToolError, ToolOutput,
    ToolSpec,
};
use crate::config::ConfigError;
use crate::config::error::key_offset;
use crate::sessiondb::{
    CompactionRecord, CompactionTotals, DocKind, RecallQuery, RecallResult, RecallScope,
    SessionMeta, StoredCompaction,
};

/// The module's name (bridge, logs, footer group).
pub const MODULE_NAME: &str = "compactor";
/// The config file, under the home directory and the workspace.
pub const CONFIG_FILE: &str = ".unipi/config/compactor.json";
pub const RECALL_TOOL: &str = "session_recall";
pub const COMPACT_COMMAND: &str = "unipi:compact";
pub const STATS_COMMAND: &str = "unipi:compact-stats";
pub const VIEW_COMMAND: &str = "unipi:compact-view";
/// The displayed message that re-injects a summary Pi's session file lacks.
pub const RESUME_TYPE: &str = "compactor-resume";
/// Starts the instructions of every compaction this module asks Pi for.
pub const MARKER: &str = "__unipi_compact__";
/// The hook this module answers.
pub const BEFORE_COMPACT_HOOK: &str = "session_before_compact";
/// The text of the invisible auto-continue message (the model never sees it: it is filtered out
/// of the context; it only starts the turn).
const AUTO_CONTINUE_TEXT: &str = "Continue from the compaction summary.";
/// How long after Pi's report the toast and the follow-up go out.
const AFTER_COMPACTION_DELAY: std::time::Duration = std::time::Duration::from_millis(500);
/// An auto-compaction that Pi never reported back is given up on after this long.
const AUTO_STUCK_MS: u64 = 5 * 60 * 1000;

// --- config --------------------------------------------------------------------------------

/// Limits of `session_recall`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallLimits {
    pub default_limit: usize,
    pub max_limit: usize,
    /// The most text one recall answer returns.
    pub max_output_bytes: usize,
}

impl Default for RecallLimits {
    fn default() -> Self {
        RecallLimits {
            default_limit: 8,
            max_limit: 20,
            max_output_bytes: 8 * 1024,
        }
    }
}

/// `compactor.json`, as this module reads it. Unipi's other compactor keys (strategies,
/// presets, sandbox) are accepted and ignored, so a Unipi config file works unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactorConfig {
    pub override_default_compaction: bool,
    pub auto: AutoConfig,
    pub recall: RecallLimits,
}

impl Default for CompactorConfig {
    fn default() -> Self {
        CompactorConfig {
            override_default_compaction: true,
            auto: AutoConfig::default(),
            recall: RecallLimits::default(),
        }
    }
}

/// Reads `compactor.json` from the home directory, then the workspace (which wins key by key).
pub fn load_config(home: Option<&Path>, workspace: &Path) -> (CompactorConfig, Vec<ConfigError>) {
    let (sources, mut errors) = crate::config::read_module_config(home, workspace, CONFIG_FILE);
    let (config, more) = config_from_sources(&sources);
    errors.extend(more);
    (config, errors)
}

/// The config from (path, text) pairs, lowest precedence first. A bad value is reported with
/// its file and key and the earlier value (or the default) kept.
pub fn config_from_sources(sources: &[(PathBuf, String)]) -> (CompactorConfig, Vec<ConfigError>) {
    let mut config = CompactorConfig::default();
    let mut errors = Vec::new();
    for (path, text) in sources {
        let object = match crate::config::error::json_object(path, text) {
            Ok(object) => object,
            Err(err) => {
                errors.push(err);
                continue;
            }
        };
        let mut report = |key: &str, message: String| {
            errors.push(ConfigError::at(path, text, key_offset(text, key), message));
        };
        if let Some(value) = object.get("overrideDefaultCompaction") {
            match value.as_bool() {
                Some(flag) => config.override_default_compaction = flag,
                None => report(
                    "overrideDefaultCompaction",
                    "`overrideDefaultCompaction` must be true or false".into(),
                ),
            }
        }
        if let Some(value) = object.get("autoCompaction") {
            apply_auto(&mut config.auto, value, &mut report);
        }
        if let Some(value) = object.get("recall") {
            apply_recall(&mut config.recall, value, &mut report);
        }
    }
    config.auto = config.auto.clamped();
    (config, errors)
}

fn apply_auto(auto: &mut AutoConfig, value: &Value, report: &mut impl FnMut(&str, String)) {
    let Some(object) = value.as_object() else {
        report(
            "autoCompaction",
            "`autoCompaction` must be an object".into(),
        );
        return;
    };
    for (key, value) in object {
        let bad = |what: &str| format!("`autoCompaction.{key}` must be {what}");
        match key.as_str() {
            "enabled" | "notify" | "continueAfterThresholdCompact" => match value.as_bool() {
                Some(flag) => match key.as_str() {
                    "enabled" => auto.enabled = flag,
                    "notify" => auto.notify = flag,
                    _ => auto.continue_after_threshold_compact = flag,
                },
                None => report(key, bad("true or false")),
            },
            "thresholdPercent" => match value.as_f64().filter(|p| (1.0..=99.0).contains(p)) {
                Some(percent) => auto.threshold_percent = percent,
                None => report(key, bad("a number from 1 to 99")),
            },
            "cooldownSeconds" => match value.as_u64() {
                Some(seconds) => auto.cooldown_ms = seconds.saturating_mul(1000),
                None => report(key, bad("a whole number of seconds")),
            },
            "repeatMinGrowthTokens" => match value.as_u64() {
                Some(tokens) => auto.repeat_min_growth_tokens = tokens,
                None => report(key, bad("a whole number of tokens")),
            },
            _ => report(
                key,
                format!(
                    "unknown key `autoCompaction.{key}` (expected enabled, thresholdPercent, \
                     cooldownSeconds, repeatMinGrowthTokens, notify, continueAfterThresholdCompact)"
                ),
            ),
        }
    }
}

fn apply_recall(recall: &mut RecallLimits, value: &Value, report: &mut impl FnMut(&str, String)) {
    let Some(object) = value.as_object() else {
        report("recall", "`recall` must be an object".into());
        return;
    };
    for (key, value) in object {
        let number = value.as_u64().filter(|n| *n > 0).map(|n| n as usize);
        let slot = match key.as_str() {
            "defaultLimit" => &mut recall.default_limit,
            "maxLimit" => &mut recall.max_limit,
            "maxOutputBytes" => &mut recall.max_output_bytes,
            _ => {
                report(
                    key,
                    format!(
                        "unknown key `recall.{key}` (expected defaultLimit, maxLimit, maxOutputBytes)"
                    ),
                );
                continue;
            }
        };
        match number {
            Some(number) => *slot = number,
            None => report(key, format!("`recall.{key}` must be a positive integer")),
        }
    }
    recall.max_limit = recall.max_limit.min(crate::sessiondb::recall::MAX_LIMIT);
    recall.default_limit = recall.default_limit.min(recall.max_limit);
}

// --- the marker ----------------------------------------------------------------------------

/// What this module asked for when it started a compaction, carried through Pi in the
/// compaction's custom instructions: `__unipi_compact__ [auto] [keep:N] [-- follow-up]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Marker {
    /// Keep exactly this many user turns (`keep:N`).
    pub keep: Option<usize>,
    /// Started by auto-compaction (treated like Pi's threshold compaction afterwards).
    pub auto: bool,
    /// Sent as a user message once the compaction is done.
    pub follow_up: Option<String>,
}

/// The most user turns `keep:N` may ask for.
pub const MAX_KEEP: usize = 50;

impl Marker {
    /// The custom instructions that carry this marker.
    pub fn to_instructions(&self) -> String {
        let mut text = MARKER.to_owned();
        if self.auto {
            text.push_str(" auto");
        }
        if let Some(keep) = self.keep {
            text.push_str(&format!(" keep:{keep}"));
        }
        if let Some(follow_up) = &self.follow_up {
            text.push_str(" -- ");
            text.push_str(follow_up);
        }
        text
    }

    /// The marker in Pi's custom instructions; `None` when they are not ours.
    pub fn parse(instructions: &str) -> Option<Marker> {
        let rest = instructions.trim_start().strip_prefix(MARKER)?;
        if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
            return None;
        }
        let (options, follow_up) = match rest.split_once(" -- ") {
            Some((options, follow_up)) => (options, Some(follow_up)),
            None => (rest.strip_suffix(" --").unwrap_or(rest), None),
        };
        let mut marker = Marker {
            follow_up: follow_up
                .map(str::trim)
                .filter(|text| !text.is_empty())
                .map(str::to_owned),
            ..Marker::default()
        };
        for token in options.split_whitespace() {
            if token == "auto" {
                marker.auto = true;
            } else if let Some(keep) = token.strip_prefix("keep:").and_then(|n| n.parse().ok()) {
                marker.keep = Some(keep);
            }
        }
        Some(marker)
    }
}

/// `/unipi:compact [keep:N] [instructions]`: the marker for the request, or why not.
pub fn parse_command_args(args: &str) -> Result<Marker, String> {
    let args = args.trim();
    let (first, rest) = args
        .split_once(char::is_whitespace)
        .map_or((args, ""), |(first, rest)| (first, rest.trim()));
    let (keep, follow_up) = match first.strip_prefix("keep:") {
        Some(number) => match number.parse::<usize>() {
            Ok(keep) if (1..=MAX_KEEP).contains(&keep) => (Some(keep), rest),
            _ => {
                return Err(format!(
                    "keep:N takes a number of user turns from 1 to {MAX_KEEP}, got `{first}`"
                ));
            }
        },
        None => (None, args),
    };
    Ok(Marker {
        keep,
        auto: false,
        follow_up: (!follow_up.is_empty()).then(|| follow_up.to_owned()),
    })
}

// --- the hook ------------------------------------------------------------------------------

/// `session_before_compact` as the extension forwards it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct BeforeCompact {
    /// manual, threshold, overflow (Pi 1.x; null in 0.7x).
    pub reason: Option<String>,
    pub custom_instructions: Option<String>,
    pub will_retry: bool,
    pub tokens_before: Option<f64>,
    pub first_kept_entry_id: Option<String>,
    pub previous_summary: Option<String>,
    /// Pi's raw entries; null when they did not fit one line (read the session file then).
    pub branch_entries: Option<Vec<Value>>,
    pub session_file: Option<String>,
    pub session_id: Option<String>,
    pub leaf_id: Option<String>,
}

impl BeforeCompact {
    pub fn overflow(&self) -> bool {
        self.reason.as_deref() == Some("overflow")
    }
}

/// What to do with a `session_before_compact`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Not ours: Pi runs its own (LLM) compaction.
    LeaveToPi,
    /// Summarize deterministically; `marker` when this module asked for the compaction.
    Compact { marker: Option<Marker> },
}

/// Ours when the instructions carry the marker, or when `overrideDefaultCompaction` is on.
pub fn plan(config: &CompactorConfig, input: &BeforeCompact) -> Plan {
    let marker = input.custom_instructions.as_deref().and_then(Marker::parse);
    if marker.is_none() && !config.override_default_compaction {
        return Plan::LeaveToPi;
    }
    Plan::Compact { marker }
}

/// The hook's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum HookAnswer {
    Compacted(Box<Compaction>),
    /// No valid cut on an overflow: Pi's own compaction gets its turn (`null`).
    LetPiRetry,
    /// No valid cut otherwise: cancel, and show the warning.
    Cancel {
        warning: String,
    },
}

/// The answer for the pipeline's `result`.
pub fn answer(result: Result<Compaction, Refusal>, overflow: bool, ours: bool) -> HookAnswer {
    match result {
        Ok(compaction) => HookAnswer::Compacted(Box::new(compaction)),
        Err(refusal) if overflow && !ours && refusal.lets_pi_retry(overflow) => {
            HookAnswer::LetPiRetry
        }
        Err(refusal) => HookAnswer::Cancel {
            warning: refusal.to_string(),
        },
    }
}

impl HookAnswer {
    /// What the extension returns from Pi's handler.
    pub fn to_json(&self) -> Value {
        match self {
            HookAnswer::Compacted(compaction) => json!({"compaction": {
                "summary": compaction.summary,
                "details": compaction.details,
                "tokensBefore": compaction.tokens_before,
                "firstKeptEntryId": compaction.first_kept_entry_id,
            }}),
            HookAnswer::LetPiRetry => Value::Null,
            HookAnswer::Cancel { .. } => json!({"cancel": true}),
        }
    }
}

/// The branch to compact: Pi's entries when it sent them, else the session file's branch.
pub fn branch_entries(input: &BeforeCompact) -> anyhow::Result<Vec<SessionEntry>> {
    if let Some(raw) = &input.branch_entries {
        return Ok(raw.iter().filter_map(entries::parse_entry).collect());
    }
    let Some(file) = input.session_file.as_deref() else {
        anyhow::bail!("Pi sent no branch entries and the session has no file");
    };
    let all = entries::read_session_file(Path::new(file))?;
    Ok(entries::branch(&all, input.leaf_id.as_deref()))
}

/// The database row for a compaction.
pub fn record_for(
    compaction: &Compaction,
    session_id: &str,
    reason: &str,
    at_ms: i64,
) -> CompactionRecord {
    let stats = &compaction.stats;
    CompactionRecord {
        session_id: session_id.to_owned(),
        at_ms,
        reason: reason.to_owned(),
        tokens_before: stats.tokens_before,
        tokens_after: stats.tokens_after,
        messages_summarized: stats.messages_summarized as u64,
        blocks_kept: stats.blocks_kept as u64,
        blocks_dropped: stats.blocks_dropped as u64,
        duration_ms: u64::try_from(stats.duration.as_millis()).unwrap_or(u64::MAX),
        summary: compaction.summary.clone(),
        first_kept_entry_id: compaction.first_kept_entry_id.clone(),
        manifest_json: serde_json::to_string(&compaction.manifest.entries)
            .unwrap_or_else(|_| "[]".to_owned()),
    }
}

/// The toast after a compaction: `🗜 Compacted 52.3k → 6.1k tokens · 9 blocks kept, 31
/// dropped · 12 ms`.
pub fn toast_text(record: &CompactionRecord) -> String {
    format!(
        "🗜 Compacted {} → {} tokens · {} blocks kept, {} dropped · {} ms",
        format_tokens(record.tokens_before),
        format_tokens(record.tokens_after),
        record.blocks_kept,
        record.blocks_dropped,
        record.duration_ms
    )
}

/// What follows a `/unipi:compact` that did not end in a compaction: Pi refused before asking the
/// hook (a session smaller than Pi's `compaction.keepRecentTokens` is never compacted by Pi,
/// whatever an extension would answer), or the hook cancelled it (its warning was shown then).
/// A short warning for Pi's refusal, and the follow-up prompt is sent all the same: the user
/// asked for it either way.
pub fn after_unfinished(marker: &Marker, error: Option<&str>) -> Vec<HostCall> {
    let mut calls = Vec::new();
    if let Some(error) = error {
        let reason = if error.contains("session too small") {
            "the session is still smaller than what Pi always keeps \
             (compaction.keepRecentTokens, 20k tokens by default)"
                .to_owned()
        } else {
            error.trim_start_matches("Compaction failed: ").to_owned()
        };
        let then = if marker.follow_up.is_some() {
            " Sending your prompt."
        } else {
            ""
        };
        calls.push(HostCall::Notify {
            message: format!("🗜 Not compacted: {reason}.{then}"),
            level: NotifyLevel::Warning,
        });
    }
    if let Some(follow_up) = &marker.follow_up {
        calls.push(HostCall::SendUserMessage {
            content: follow_up.clone(),
            deliver_as: Some(DeliverAs::FollowUp),
        });
    }
    calls
}

// --- recall, stats and resume formatting ---------------------------------------------------

/// `session_recall`'s `scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeArg {
    Session,
    Project,
    All,
}

/// The arguments of one `session_recall` call, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallArgs {
    pub query: String,
    pub scope: ScopeArg,
    pub limit: usize,
    pub offset: usize,
}

pub fn parse_recall_args(args: &Value, limits: &RecallLimits) -> Result<RecallArgs, String> {
    let query = args
        .get("query")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .ok_or("`query` is required: the words to look for")?
        .to_owned();
    let scope = match args.get("scope").and_then(Value::as_str) {
        None | Some("session") => ScopeArg::Session,
        Some("project") => ScopeArg::Project,
        Some("all") => ScopeArg::All,
        Some(other) => {
            return Err(format!(
                "`scope` must be session, project or all, got `{other}`"
            ));
        }
    };
    let number = |key: &str| args.get(key).and_then(Value::as_u64).map(|n| n as usize);
    Ok(RecallArgs {
        query,
        scope,
        limit: number("limit")
            .unwrap_or(limits.default_limit)
            .clamp(1, limits.max_limit),
        offset: number("offset").unwrap_or(0),
    })
}

/// The model's view of a recall result: numbered hits with where each came from, cut to
/// `max_bytes`, or a clear "nothing found".
pub fn format_recall(
    args: &RecallArgs,
    scope_label: &str,
    result: &RecallResult,
    max_bytes: usize,
) -> String {
    if result.hits.is_empty() {
        let hint = match args.scope {
            ScopeArg::Session => " Try scope \"project\" or \"all\", or other words.",
            ScopeArg::Project => " Try scope \"all\", or other words.",
            ScopeArg::All => " Try other words.",
        };
        return if args.offset > 0 && result.total > 0 {
            format!(
                "No more results for \"{}\" in {scope_label}: {} in all, offset {} is past them.",
                args.query, result.total, args.offset
            )
        } else {
            format!("No results for \"{}\" in {scope_label}.{hint}", args.query)
        };
    }
    let mut blocks = String::new();
    let mut shown = 0;
    for (index, hit) in result.hits.iter().enumerate() {
        let tool = hit
            .tool
            .as_deref()
            .map(|t| format!(" ({t})"))
            .unwrap_or_default();
        let when = hit
            .at_ms
            .map(|ms| format!(" · {}", format_utc(ms)))
            .unwrap_or_default();
        let project = if args.scope == ScopeArg::All {
            format!(" · project {}", hit.project_dir)
        } else {
            String::new()
        };
        let block = format!(
            "\n[{}] {}{tool} · session {} · entry {}{when}{project}\n{}\n",
            args.offset + index + 1,
            kind_label(hit.kind),
            short_id(&hit.session_id),
            hit.entry_id,
            hit.snippet.trim()
        );
        // Room is kept for the header and the paging line.
        if blocks.len() + block.len() + 160 > max_bytes && shown > 0 {
            break;
        }
        blocks.push_str(&block);
        shown += 1;
    }
    let mut out = format!(
        "Found {} results for \"{}\" in {scope_label} (showing {}-{}):\n{blocks}",
        result.total,
        args.query,
        args.offset + 1,
        args.offset + shown
    );
    let next = args.offset + shown;
    if next < result.total {
        out.push_str(&format!(
            "\n({} more: call session_recall again with offset {next})",
            result.total - next
        ));
    }
    if out.len() > max_bytes {
        let mut cut = max_bytes;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push('…');
    }
    out
}

fn kind_label(kind: DocKind) -> &'static str {
    match kind {
        DocKind::User => "user message",
        DocKind::Assistant => "assistant message",
        DocKind::ToolResult => "tool result",
        DocKind::Summary => "compaction summary",
    }
}

fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// `2026-11-30 10:12 UTC` for milliseconds since the epoch.
pub fn format_utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let of_day = secs.rem_euclid(86_400);
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        of_day / 3600,
        (of_day / 60) % 60
    )
}

/// `/unipi:compact-stats`: this session's and this project's totals and the last compaction.
pub fn stats_text(
    session: &CompactionTotals,
    project: &CompactionTotals,
    last: Option<&CompactionRecord>,
) -> String {
    let line = |label: &str, totals: &CompactionTotals| {
        let noun = if totals.count == 1 {
            "compaction"
        } else {
            "compactions"
        };
        format!(
            "{label}: {} {noun} · {} tokens saved",
            totals.count,
            format_tokens(totals.tokens_saved)
        )
    };
    let mut text = format!(
        "🗜 Compactor\n{}\n{}",
        line("This session", session),
        line("This project", project)
    );
    if let Some(last) = last {
        text.push_str(&format!(
            "\nLast: {} ({}) · {} → {} tokens · {} messages summarized · {} ms",
            format_utc(last.at_ms),
            last.reason,
            format_tokens(last.tokens_before),
            format_tokens(last.tokens_after),
            last.messages_summarized,
            last.duration_ms
        ));
    }
    text
}

/// The overlay's model for a recorded compaction.
pub fn view_model(record: &CompactionRecord) -> CompactionModel {
    #[derive(Deserialize)]
    struct Row {
        id: String,
        role: String,
        chars: usize,
        tool: Option<String>,
    }
    let manifest: Vec<Row> = serde_json::from_str(&record.manifest_json).unwrap_or_default();
    CompactionModel {
        when: format!("{} · {}", format_utc(record.at_ms), record.reason),
        tokens_before: record.tokens_before,
        tokens_after: record.tokens_after,
        messages_summarized: record.messages_summarized,
        blocks_kept: record.blocks_kept,
        blocks_dropped: record.blocks_dropped,
        duration_ms: record.duration_ms,
        first_kept_entry_id: record.first_kept_entry_id.clone(),
        summary: record.summary.clone(),
        manifest: manifest
            .into_iter()
            .map(|row| ManifestRow {
                id: row.id,
                role: row.role,
                chars: row.chars,
                tool: row.tool,
            })
            .collect(),
        scroll: 0,
    }
}

/// The summary to re-inject when a session starts: the database's last summary for it, when
/// the branch lacks it (no compaction entry with that summary, no earlier re-injection of it,
/// no newer compaction) and the branch is the one it was made for (it holds the first kept
/// entry). See the module doc.
pub fn resume_summary(branch: &[SessionEntry], last: Option<&StoredCompaction>) -> Option<String> {
    let last = &last?.record;
    if last.summary.trim().is_empty()
        || !branch
            .iter()
            .any(|entry| entry.id == last.first_kept_entry_id)
    {
        return None;
    }
    let already_there = branch.iter().any(|entry| match &entry.kind {
        EntryKind::Compaction(compaction) => {
            compaction.summary == last.summary
                || entry
                    .timestamp
                    .as_deref()
                    .and_then(iso_to_ms)
                    .is_some_and(|at| at >= last.at_ms)
        }
        EntryKind::CustomMessage {
            custom_type, text, ..
        } => custom_type == RESUME_TYPE && *text == last.summary,
        _ => false,
    });
    (!already_there).then(|| last.summary.clone())
}

// --- the module ----------------------------------------------------------------------------

/// The compactor module. Cheap to clone (shared state).
#[derive(Clone)]
pub struct CompactorModule {
    inner: Arc<Inner>,
}

struct Inner {
    config: CompactorConfig,
    settings: PipelineSettings,
    workspace: PathBuf,
    /// The database, or why there is none (recall then answers with that reason).
    db: Result<DbWorker, String>,
    /// Where every project's database lives (the `all` recall scope).
    db_dir: Option<PathBuf>,
    host: OnceLock<BridgeHost>,
    state: Mutex<State>,
    /// Bumped when what the footer shows changed (the app redraws).
    changes: tokio::sync::watch::Sender<u64>,
    /// A rebuild of the index from Pi's session files is running.
    rebuilding: AtomicBool,
    /// The database's replacement count the last rebuild started from.
    replacements_seen: AtomicU64,
}

#[derive(Default)]
struct State {
    /// A rebuild of the index from Pi's session files, while it runs.
    indexing: Option<Progress>,
    /// The main Pi's session.
    session: Option<SessionMeta>,
    tally: CompactorTally,
    last: Option<CompactionRecord>,
    /// Set by the hook, done when Pi reports the compaction.
    pending: Option<PendingAfter>,
    /// The last `/unipi:compact` asked of Pi, until Pi reports how it ended.
    requested: Option<Marker>,
    auto: AutoState,
}

/// What happens once Pi has written the compaction the hook answered.
#[derive(Debug, Clone)]
struct PendingAfter {
    /// Counted in the footer once Pi confirms (an aborted compaction is not one).
    tokens_saved: u64,
    toast: String,
    follow_up: Option<String>,
    auto_continue: bool,
    /// Pi retries the failed request by itself: nothing to show or send.
    will_retry: bool,
}

/// What starting the module produced besides the module: problems worth a notice.
pub struct Started {
    pub module: CompactorModule,
    pub notices: Vec<String>,
}

impl CompactorModule {
    pub fn new(
        config: CompactorConfig,
        workspace: PathBuf,
        db: Result<DbWorker, String>,
        db_dir: Option<PathBuf>,
    ) -> Self {
        CompactorModule {
            inner: Arc::new(Inner {
                config,
                settings: PipelineSettings::default(),
                workspace,
                db,
                db_dir,
                host: OnceLock::new(),
                state: Mutex::new(State::default()),
                changes: tokio::sync::watch::Sender::new(0),
                rebuilding: AtomicBool::new(false),
                replacements_seen: AtomicU64::new(0),
            }),
        }
    }

    /// Changes of what the footer shows (indexing progress, compaction counts); the app redraws.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// How far a running rebuild of the index got (the footer shows it until done).
    pub fn indexing(&self) -> Option<Progress> {
        self.inner.lock().indexing
    }

    /// Loads the config and opens the project's database (`<home>/.unipi/db/…`). Never fails:
    /// a bad config keeps the defaults, a database that cannot open leaves recall off; both
    /// come back as notices.
    pub fn start(home: Option<&Path>, workspace: &Path) -> Started {
        let (config, errors) = load_config(home, workspace);
        let mut notices: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let db_dir = home.map(crate::sessiondb::default_db_dir);
        let db = match &db_dir {
            Some(dir) => {
                let path = crate::sessiondb::project_db_path(dir, workspace);
                match DbWorker::open(&path) {
                    Ok((worker, recovered)) => {
                        if let Some(recovered) = recovered {
                            notices.push(format!(
                                "The session database {} was damaged ({}); it was moved to {} \
                                 and a fresh one started.",
                                path.display(),
                                recovered.reason,
                                recovered.moved_to.display()
                            ));
                        }
                        Ok(worker)
                    }
                    Err(err) => {
                        let message = format!(
                            "The session database {} could not open: {err:#}. Compaction works; \
                             recall and statistics are off.",
                            path.display()
                        );
                        notices.push(message.clone());
                        Err(message)
                    }
                }
            }
            None => Err("no home directory, so no session database".to_owned()),
        };
        Started {
            module: CompactorModule::new(config, workspace.to_path_buf(), db, db_dir),
            notices,
        }
    }

    /// Gives the module the bridge: toasts, follow-ups and compaction requests go through it.
    pub fn attach_host(&self, host: BridgeHost) {
        let _ = self.inner.host.set(host);
    }

    /// Follows the main Pi's events on `bus` (session start, turns, compactions) until the bus
    /// closes. Events are handled in order, so ingestion passes never overlap.
    pub fn watch(&self, bus: &EventBus) {
        let mut events = bus.subscribe();
        let inner = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                match events.recv().await {
                    Ok(BusEvent::Pi { agent, event }) if agent == AgentId::main() => {
                        let Some(inner) = inner.upgrade() else { return };
                        inner.on_pi_event(&event).await;
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(skipped)) => {
                        tracing::warn!("compactor: skipped {skipped} bus events");
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        });
    }

    pub fn config(&self) -> &CompactorConfig {
        &self.inner.config
    }

    /// This session's compactions and tokens saved (the footer segment).
    pub fn tally(&self) -> CompactorTally {
        self.inner.lock().tally
    }

    /// The last compaction of this session, as the overlay shows it.
    pub fn last_view(&self) -> Option<CompactionModel> {
        self.inner.lock().last.as_ref().map(view_model)
    }

    /// Asks Pi to compact with `marker` (the outcome arrives as `compaction_end`). A failure is
    /// also shown in Pi, since the command has already been answered.
    pub async fn request_compaction(&self, marker: &Marker) -> Result<(), String> {
        let host = self.inner.host().map_err(|err| err.to_string())?;
        self.inner.lock().requested = Some(marker.clone());
        let call = HostCall::Compact {
            instructions: Some(marker.to_instructions()),
        };
        let result = host.call(&AgentId::main(), call).await;
        result.map(|_| ()).map_err(|err| {
            let message = format!("compactor: could not start the compaction: {err}");
            self.inner.notify(message.clone(), NotifyLevel::Warning);
            message
        })
    }

    /// `/unipi:compact-stats`'s text.
    pub async fn stats(&self) -> Result<String, String> {
        let db = self.inner.db.clone()?;
        let (session_id, last) = {
            let state = self.inner.lock();
            (
                state.session.as_ref().map(|s| s.session_id.clone()),
                state.last.clone(),
            )
        };
        let (session, project) = db
            .run(move |db| -> Result<_, crate::sessiondb::DbError> {
                let session = match &session_id {
                    Some(id) => db.compaction_totals(Some(id))?,
                    None => CompactionTotals::default(),
                };
                Ok((session, db.compaction_totals(None)?))
            })
            .await
            .map_err(|err| format!("{err:#}"))?
            .map_err(|err| err.to_string())?;
        Ok(stats_text(&session, &project, last.as_ref()))
    }

    /// Answers `session_before_compact` (the whole hook, for tests and the bridge).
    pub async fn before_compact(&self, data: Value) -> Value {
        self.inner.clone().before_compact(data).await
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn host(&self) -> anyhow::Result<&BridgeHost> {
        self.host
            .get()
            .ok_or_else(|| anyhow::anyhow!("the compactor is not connected to the bridge"))
    }

    /// Sends `call` to the main Pi without waiting (toasts, follow-ups); failures are logged.
    fn send(&self, call: HostCall) {
        let Ok(host) = self.host() else { return };
        let host = host.clone();
        tokio::spawn(async move {
            let method = call.method();
            if let Err(err) = host.call(&AgentId::main(), call).await {
                tracing::warn!("compactor: {method} failed: {err}");
            }
        });
    }

    fn notify(&self, message: String, level: NotifyLevel) {
        self.send(HostCall::Notify { message, level });
    }

    async fn before_compact(self: Arc<Self>, data: Value) -> Value {
        let input: BeforeCompact = match serde_json::from_value(data) {
            Ok(input) => input,
            Err(err) => {
                tracing::warn!("compactor: cannot read session_before_compact: {err}");
                return Value::Null;
            }
        };
        let Plan::Compact { marker } = plan(&self.config, &input) else {
            return Value::Null;
        };
        let overflow = input.overflow();
        let keep = marker.as_ref().and_then(|m| m.keep);
        let settings = self.settings.clone();
        let tokens_before = input.tokens_before.unwrap_or(0.0).max(0.0) as u64;
        let job_input = input.clone();
        let result = tokio::task::spawn_blocking(move || {
            let branch = branch_entries(&job_input)?;
            Ok::<_, anyhow::Error>(pipeline::compact(&CompactRequest {
                entries: &branch,
                tokens_before,
                keep_user_turns: keep,
                overflow,
                settings: &settings,
            }))
        })
        .await;
        let result = match result {
            Ok(Ok(result)) => result,
            Ok(Err(err)) => {
                // Without the branch there is nothing to summarize; Pi's own compaction still can.
                tracing::warn!("compactor: cannot read the branch: {err:#}");
                return Value::Null;
            }
            Err(err) => {
                tracing::error!("compactor: the pipeline failed: {err}");
                return Value::Null;
            }
        };
        let answer = answer(result, overflow, marker.is_some());
        match &answer {
            HookAnswer::Compacted(compaction) => {
                let reason = match &marker {
                    Some(m) if m.auto => "threshold".to_owned(),
                    _ => input.reason.clone().unwrap_or_else(|| "manual".to_owned()),
                };
                self.compacted(compaction, &input, &reason, marker.as_ref())
                    .await;
            }
            HookAnswer::LetPiRetry => {}
            HookAnswer::Cancel { warning } => {
                if marker.as_ref().is_some_and(|m| m.auto) {
                    let mut state = self.lock();
                    state.auto = auto::mark_error(&state.auto);
                }
                self.notify(warning.clone(), NotifyLevel::Warning);
            }
        }
        answer.to_json()
    }

    /// Records a compaction the hook is about to return and prepares what follows it.
    async fn compacted(
        &self,
        compaction: &Compaction,
        input: &BeforeCompact,
        reason: &str,
        marker: Option<&Marker>,
    ) {
        let session_id = input
            .session_id
            .clone()
            .or_else(|| self.lock().session.as_ref().map(|s| s.session_id.clone()))
            .unwrap_or_else(|| "unknown".to_owned());
        let record = record_for(compaction, &session_id, reason, now_ms() as i64);
        let follow_up = marker.and_then(|m| m.follow_up.clone());
        let automatic = matches!(reason, "threshold" | "overflow");
        {
            let mut state = self.lock();
            state.pending = Some(PendingAfter {
                tokens_saved: record.tokens_before.saturating_sub(record.tokens_after),
                toast: toast_text(&record),
                auto_continue: follow_up.is_none()
                    && automatic
                    && self.config.auto.continue_after_threshold_compact,
                follow_up,
                will_retry: input.will_retry,
            });
            state.last = Some(record.clone());
        }
        if let Ok(db) = &self.db {
            let meta = SessionMeta {
                session_id: session_id.clone(),
                session_file: input.session_file.clone(),
                project_dir: self.workspace.display().to_string(),
            };
            let stored = db
                .run(move |db| {
                    db.upsert_session(&meta)?;
                    db.record_compaction(&record)
                })
                .await;
            match stored {
                Ok(Ok(_)) => {}
                Ok(Err(err)) => tracing::warn!("compactor: cannot record the compaction: {err}"),
                Err(err) => tracing::warn!("compactor: cannot record the compaction: {err:#}"),
            }
        }
    }

    async fn on_pi_event(self: &Arc<Self>, event: &PiEvent) {
        match event {
            PiEvent::SessionStart(start) => self.on_session_start(start).await,
            PiEvent::TurnEnd(turn) => {
                self.auto_sample(turn.context_usage.as_ref());
                self.ingest().await;
            }
            PiEvent::AgentSettled { .. } => self.ingest().await,
            PiEvent::CompactionEnd(end) => {
                self.on_compaction_end(end);
                self.ingest().await;
            }
            _ => {}
        }
    }

    async fn on_session_start(self: &Arc<Self>, start: &crate::bridge::SessionStart) {
        let Some(session_id) = start.session_id.clone() else {
            return;
        };
        let meta = SessionMeta {
            session_id: session_id.clone(),
            session_file: start.session_file.clone(),
            project_dir: start
                .cwd
                .clone()
                .unwrap_or_else(|| self.workspace.display().to_string()),
        };
        {
            let mut state = self.lock();
            let same = state
                .session
                .as_ref()
                .is_some_and(|s| s.session_id == session_id);
            if !same {
                state.tally = CompactorTally::default();
                state.last = None;
                state.pending = None;
                state.auto = AutoState::default();
            }
            state.session = Some(meta.clone());
        }
        let Ok(db) = &self.db else { return };
        let loaded = db
            .run(move |db| -> anyhow::Result<_> {
                db.upsert_session(&meta)?;
                let totals = db.compaction_totals(Some(&meta.session_id))?;
                let last = db.last_compaction(&meta.session_id)?;
                let branch = match meta.session_file.as_deref().map(Path::new) {
                    Some(file) if file.exists() => {
                        let all = entries::read_session_file(file)?;
                        entries::branch(&all, None)
                    }
                    _ => Vec::new(),
                };
                let resume = resume_summary(&branch, last.as_ref());
                if let Err(err) = ingest_session_file(db, &meta) {
                    tracing::warn!("compactor: ingesting {:?}: {err:#}", meta.session_file);
                }
                Ok((totals, last, resume))
            })
            .await;
        let (totals, last, resume) = match loaded {
            Ok(Ok(loaded)) => loaded,
            Ok(Err(err)) | Err(err) => {
                tracing::warn!("compactor: loading session {session_id}: {err:#}");
                return;
            }
        };
        {
            let mut state = self.lock();
            state.tally = CompactorTally {
                compactions: totals.count,
                tokens_saved: totals.tokens_saved,
            };
            state.last = last.clone().map(|stored| stored.record);
        }
        self.changed();
        self.start_rebuild();
        if start.reason != "reload"
            && let Some(summary) = resume
        {
            tracing::info!("compactor: re-injecting the last summary of {session_id}");
            self.send(HostCall::SendMessage {
                custom_type: RESUME_TYPE.to_owned(),
                content: summary,
                display: true,
                details: json!({"compactionId": last.map(|l| l.id)}),
                // Appended now (at the end of the turn if one runs): in the session file at
                // once, so it is never injected twice, and in the model's context from the
                // next turn on.
                deliver_as: None,
                trigger_turn: false,
            });
        }
    }

    fn on_compaction_end(&self, end: &crate::bridge::CompactionEnd) {
        let failed = end.error.is_some() || end.aborted;
        let pending = {
            let mut state = self.lock();
            if state.auto.in_flight {
                state.auto = if failed {
                    auto::mark_error(&state.auto)
                } else {
                    auto::mark_complete(&state.auto)
                };
            }
            let pending = state
                .pending
                .take()
                .filter(|_| !failed && end.from_extension);
            if let Some(pending) = &pending {
                state.tally.compactions += 1;
                state.tally.tokens_saved += pending.tokens_saved;
            }
            let unfinished = state.requested.take().filter(|_| pending.is_none());
            (pending, unfinished)
        };
        let (pending, unfinished) = pending;
        self.changed();
        if let Some(marker) = unfinished {
            // Pi reports the hook's own cancel as aborted (with "aborted" as the error text);
            // the hook warned already then.
            let refused = end.error.as_deref().filter(|_| !end.aborted);
            self.send_after(after_unfinished(&marker, refused));
            return;
        }
        let Some(pending) = pending else {
            return;
        };
        if pending.will_retry {
            return;
        }
        let mut calls = vec![HostCall::Notify {
            message: pending.toast,
            level: NotifyLevel::Info,
        }];
        if let Some(follow_up) = pending.follow_up {
            calls.push(HostCall::SendUserMessage {
                content: follow_up,
                deliver_as: Some(DeliverAs::FollowUp),
            });
        } else if pending.auto_continue {
            calls.push(HostCall::SendMessage {
                custom_type: AUTO_CONTINUE_TYPE.to_owned(),
                content: AUTO_CONTINUE_TEXT.to_owned(),
                display: false,
                details: Value::Null,
                deliver_as: Some(DeliverAs::FollowUp),
                trigger_turn: true,
            });
        }
        self.send_after(calls);
    }

    /// Sends `calls` to the main Pi in order, shortly after a compaction ended.
    fn send_after(&self, calls: Vec<HostCall>) {
        let Ok(host) = self.host() else { return };
        let host = host.clone();
        tokio::spawn(async move {
            // Pi reports the compaction before it leaves its compacting state; a prompt sent
            // at once could meet a busy session (the original waits the same half second).
            tokio::time::sleep(AFTER_COMPACTION_DELAY).await;
            for call in calls {
                let method = call.method();
                if let Err(err) = host.call(&AgentId::main(), call).await {
                    tracing::warn!("compactor: {method} after the compaction failed: {err}");
                }
            }
        });
    }

    /// Feeds one context-usage sample to the auto-compaction decision; triggers when it says so.
    fn auto_sample(self: &Arc<Self>, usage: Option<&crate::bridge::ContextUsage>) {
        let config = &self.config.auto;
        if !config.enabled {
            return;
        }
        let sample = UsageSample {
            tokens: usage.and_then(|u| u.tokens).map(|t| t as f64),
            percent: usage.and_then(|u| u.percent),
        };
        let now = now_ms();
        let decision = {
            let mut state = self.lock();
            let stuck = state.auto.in_flight
                && state
                    .auto
                    .last_trigger_at_ms
                    .is_some_and(|at| now.saturating_sub(at) > AUTO_STUCK_MS);
            if stuck {
                tracing::warn!("compactor: Pi never reported the auto-compaction; giving up on it");
                state.auto = auto::mark_error(&state.auto);
            }
            let decision = auto::decide(config, &sample, &state.auto, now);
            state.auto = decision.state.clone();
            decision
        };
        tracing::debug!("compactor: auto-compaction {}", decision.reason.code());
        if !decision.trigger {
            return;
        }
        if config.notify {
            self.notify(
                format!(
                    "🗜 Context at {:.0}% (threshold {:.0}%): compacting",
                    sample.percent.unwrap_or_default(),
                    config.threshold_percent
                ),
                NotifyLevel::Info,
            );
        }
        let Ok(host) = self.host() else { return };
        let host = host.clone();
        let marker = Marker {
            auto: true,
            ..Marker::default()
        };
        let inner = Arc::clone(self);
        tokio::spawn(async move {
            let call = HostCall::Compact {
                instructions: Some(marker.to_instructions()),
            };
            if let Err(err) = host.call(&AgentId::main(), call).await {
                tracing::warn!("compactor: auto-compaction could not start: {err}");
                let mut state = inner.lock();
                state.auto = auto::mark_error(&state.auto);
            }
        });
    }

    /// Tells the app that what the footer shows changed.
    fn changed(&self) {
        self.changes
            .send_modify(|version| *version = version.wrapping_add(1));
    }

    /// Catches the index up with this project's session files in the background (see
    /// [`reindex`]): every session start does, and a database replaced while open does at once.
    /// One rebuild at a time; the footer shows its progress.
    fn start_rebuild(self: &Arc<Self>) {
        let Ok(db) = &self.db else { return };
        let Some(dir) = self
            .lock()
            .session
            .as_ref()
            .and_then(|s| s.session_file.as_deref())
            .and_then(|file| Path::new(file).parent())
            .map(Path::to_path_buf)
        else {
            return;
        };
        if self.rebuilding.swap(true, Ordering::AcqRel) {
            return;
        }
        self.replacements_seen
            .store(db.replacements(), Ordering::Relaxed);
        let db = db.clone();
        let inner = Arc::clone(self);
        tokio::spawn(async move {
            let progress = |progress: Progress| {
                inner.lock().indexing = (progress.done < progress.total).then_some(progress);
                inner.changed();
            };
            let result = reindex::rebuild(&db, dir, inner.workspace.clone(), progress).await;
            match result {
                Ok(rebuilt) if rebuilt.ingested + rebuilt.failed > 0 => tracing::info!(
                    "compactor: indexed {} of this project's Pi session files ({} failed)",
                    rebuilt.ingested,
                    rebuilt.failed
                ),
                Ok(_) => {}
                Err(err) => tracing::warn!("compactor: rebuilding the index: {err:#}"),
            }
            inner.lock().indexing = None;
            inner.rebuilding.store(false, Ordering::Release);
            inner.changed();
        });
    }

    /// Reads what Pi appended to the session file since the last pass.
    async fn ingest(self: &Arc<Self>) {
        let Ok(db) = &self.db else { return };
        if db.replacements() != self.replacements_seen.load(Ordering::Relaxed) {
            // A damaged file was replaced by an empty one: the live session alone would leave
            // every other session out of recall.
            self.start_rebuild();
        }
        let Some(meta) = self.lock().session.clone() else {
            return;
        };
        match db.run(move |db| ingest_session_file(db, &meta)).await {
            Ok(Ok(report)) => {
                if report.entries > 0 {
                    tracing::debug!("compactor: ingested {report:?}");
                }
            }
            Ok(Err(err)) => tracing::warn!("compactor: ingestion failed: {err:#}"),
            Err(err) => tracing::warn!("compactor: ingestion failed: {err:#}"),
        }
    }
}

impl Inner {
    async fn recall(self: Arc<Self>, args: Value) -> Result<ToolOutput, ToolError> {
        let args = parse_recall_args(&args, &self.config.recall).map_err(ToolError::new)?;
        let db = self
            .db
            .clone()
            .map_err(|reason| ToolError::new(format!("session_recall is unavailable: {reason}")))?;
        if let Some(reason) = db.unwritable() {
            // Nothing new reaches the index: an empty answer would claim there is nothing.
            return Err(ToolError::new(format!(
                "session_recall is unavailable: the session database cannot be written, so it \
                 misses what happened since ({reason})"
            )));
        }
        let session_id = self.lock().session.as_ref().map(|s| s.session_id.clone());
        let (scope, label) = match (args.scope, session_id) {
            (ScopeArg::Session, Some(id)) => (RecallScope::Session(id), "this session"),
            (ScopeArg::Session, None) => (RecallScope::Project, "this project"),
            (ScopeArg::Project, _) => (RecallScope::Project, "this project"),
            (ScopeArg::All, _) => (RecallScope::AllProjects, "all projects"),
        };
        let query = RecallQuery {
            text: args.query.clone(),
            scope,
            limit: args.limit,
            offset: args.offset,
        };
        let result: anyhow::Result<RecallResult> = match (&query.scope, &self.db_dir) {
            (RecallScope::AllProjects, Some(dir)) => {
                let dir = dir.clone();
                tokio::task::spawn_blocking(move || {
                    crate::sessiondb::recall_all_projects(&dir, &query)
                })
                .await
                .map_err(anyhow::Error::from)
                .and_then(|result| result.map_err(anyhow::Error::from))
            }
            _ => db
                .run(move |db| db.recall(&query))
                .await
                .and_then(|result| result.map_err(anyhow::Error::from)),
        };
        let result =
            result.map_err(|err| ToolError::new(format!("session_recall failed: {err:#}")))?;
        let text = format_recall(&args, label, &result, self.config.recall.max_output_bytes);
        Ok(ToolOutput::text(text).with_details(json!({
            "query": args.query,
            "scope": label,
            "total": result.total,
            "returned": result.hits.len(),
        })))
    }
}

impl Module for CompactorModule {
    fn name(&self) -> &'static str {
        MODULE_NAME
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let limits = &self.inner.config.recall;
        vec![
            ToolSpec::new(
                RECALL_TOOL,
                "Session recall",
                format!(
                    "Search what was said and done earlier — including what a compaction took out \
                     of the context: user and assistant messages, tool results and summaries. \
                     Returns ranked snippets with the session, entry and time each came from. \
                     scope: session (default), project (every session in this project) or all \
                     (every project). limit ≤ {} (default {}), offset pages.",
                    limits.max_limit, limits.default_limit
                ),
            )
            .string_param("query", "The words to look for", true)
            .param(
                "scope",
                json!({"type": "string", "enum": ["session", "project", "all"],
                       "description": "Where to search (default session)"}),
                false,
            )
            .integer_param("limit", "How many results (default 8, at most 20)", false)
            .integer_param("offset", "Skip this many results (paging)", false)
            .prompt_snippet(
                "search earlier work, decisions and context, also from before a compaction",
            )
            .guideline(
                "Use session_recall before redoing work or asking the user again about something \
                 a compaction summary mentions only briefly.",
            ),
        ]
    }

    fn commands(&self) -> Vec<CommandSpec> {
        vec![
            CommandSpec::new(
                COMPACT_COMMAND,
                "Compact now without a model call: [keep:N] user turns to keep, then an optional prompt to send afterwards",
            )
            .completion(Completion::new("keep:1").describe("keep only the latest user turn"))
            .completion(Completion::new("keep:2").describe("keep the last two user turns")),
            CommandSpec::new(
                STATS_COMMAND,
                "Compaction statistics: this session and this project",
            ),
            CommandSpec::new(
                VIEW_COMMAND,
                "Show the last compaction: its summary and what was summarized away",
            ),
        ]
    }

    fn message_types(&self) -> Vec<MessageTypeSpec> {
        vec![
            MessageTypeSpec::new(AUTO_CONTINUE_TYPE, "Continue").hidden_from_model(),
            MessageTypeSpec::new(RESUME_TYPE, "Compaction summary (restored)"),
        ]
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            match call.tool.as_str() {
                RECALL_TOOL => inner.recall(call.args).await,
                other => Err(ToolError::new(format!(
                    "module `{MODULE_NAME}` declares no tool `{other}`"
                ))),
            }
        })
    }

    fn hook(&self, hook: HookCall) -> Option<BoxFuture<'static, Value>> {
        // Helpers' Pi processes keep Pi's own compaction: the toast, follow-ups and statistics
        // here are the main session's.
        if hook.name != BEFORE_COMPACT_HOOK || hook.agent != AgentId::main() {
            return None;
        }
        let inner = Arc::clone(&self.inner);
        Some(Box::pin(inner.before_compact(hook.data)))
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessiondb::{RecallHit, SessionDb};

    #[test]
    fn markers_round_trip_and_foreign_instructions_are_not_ours() {
        let cases = [
            (Marker::default(), "__unipi_compact__"),
            (
                Marker {
                    keep: Some(3),
                    auto: false,
                    follow_up: Some("now run the tests -- all of them".into()),
                },
                "__unipi_compact__ keep:3 -- now run the tests -- all of them",
            ),
            (
                Marker {
                    auto: true,
                    ..Marker::default()
                },
                "__unipi_compact__ auto",
            ),
        ];
        for (marker, text) in cases {
            assert_eq!(marker.to_instructions(), text);
            assert_eq!(Marker::parse(text), Some(marker), "{text}");
        }
        for foreign in ["focus on the parser", "__unipi_compact__x", ""] {
            assert_eq!(Marker::parse(foreign), None, "{foreign:?}");
        }
        assert_eq!(
            Marker::parse("  __unipi_compact__ keep:x bogus --"),
            Some(Marker::default())
        );
    }

    #[test]
    fn command_arguments() {
        let ok = |keep: Option<usize>, follow_up: Option<&str>| {
            Ok(Marker {
                keep,
                auto: false,
                follow_up: follow_up.map(str::to_owned),
            })
        };
        let cases = [
            ("", ok(None, None)),
            ("keep:2", ok(Some(2), None)),
            (
                "keep:1   then fix the bug",
                ok(Some(1), Some("then fix the bug")),
            ),
            ("fix the bug", ok(None, Some("fix the bug"))),
            ("  keep:50 ", ok(Some(50), None)),
        ];
        for (args, want) in cases {
            assert_eq!(parse_command_args(args), want, "{args:?}");
        }
        for bad in ["keep:0", "keep:51", "keep:two go"] {
            let err = parse_command_args(bad).err().unwrap_or_default();
            assert!(err.contains("keep:N"), "{bad}: {err}");
        }
    }

    fn sources(texts: &[&str]) -> Vec<(PathBuf, String)> {
        texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                (
                    PathBuf::from(format!("/cfg{i}/compactor.json")),
                    (*text).to_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn config_defaults_overrides_and_errors() {
        let (config, errors) = config_from_sources(&[]);
        assert_eq!(config, CompactorConfig::default());
        assert!(config.override_default_compaction && !config.auto.enabled);
        assert!(errors.is_empty());

        let (config, errors) = config_from_sources(&sources(&[
            r#"{"overrideDefaultCompaction": false, "autoCompaction": {"enabled": true, "cooldownSeconds": 5},
                "sessionGoals": {"enabled": true}}"#,
            r#"{"autoCompaction": {"thresholdPercent": 70}, "recall": {"defaultLimit": 5}}"#,
        ]));
        assert!(errors.is_empty(), "{errors:?}");
        assert!(!config.override_default_compaction);
        assert!(config.auto.enabled);
        assert_eq!(config.auto.cooldown_ms, 5_000);
        assert_eq!(config.auto.threshold_percent, 70.0);
        assert_eq!(config.recall.default_limit, 5);

        let (config, errors) = config_from_sources(&sources(&[
            "{\n  \"autoCompaction\": {\"thresholdPercent\": 150, \"enabled\": \"yes\"},\n  \"overrideDefaultCompaction\": 1\n}",
            "not json",
        ]));
        assert_eq!(
            config,
            CompactorConfig::default(),
            "bad values keep the defaults"
        );
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(messages.len(), 4, "{messages:?}");
        assert!(
            messages[0].starts_with("/cfg0/compactor.json:3:3:")
                && messages[0].contains("overrideDefaultCompaction"),
            "{messages:?}"
        );
        assert!(
            messages
                .iter()
                .any(|m| m.contains("autoCompaction.thresholdPercent")),
            "{messages:?}"
        );
        assert!(
            messages
                .iter()
                .any(|m| m.contains("autoCompaction.enabled")),
            "{messages:?}"
        );
        assert!(
            messages[3].starts_with("/cfg1/compactor.json:1:"),
            "{messages:?}"
        );
    }

    /// A small branch: three user turns with answers, the first one with an early fact.
    fn small_branch() -> Vec<Value> {
        let mut entries = Vec::new();
        let mut parent = Value::Null;
        for turn in 0..3 {
            let user = format!("u{turn}");
            let assistant = format!("a{turn}");
            entries.push(json!({"type": "message", "id": user, "parentId": parent,
                "timestamp": "2026-11-30T10:00:00.000Z",
                "message": {"role": "user", "content": [{"type": "text",
                    "text": format!("Request {turn}: the build flag is ZETA-{turn}. {}", "Details. ".repeat(40))}]}}));
            entries.push(json!({"type": "message", "id": assistant, "parentId": user,
                "timestamp": "2026-11-30T10:00:01.000Z",
                "message": {"role": "assistant", "content": [{"type": "text",
                    "text": format!("Done with request {turn}. {}", "Explanation. ".repeat(40))}]}}));
            parent = json!(assistant);
        }
        entries
    }

    fn hook_input(reason: &str, instructions: Option<&str>, branch: Vec<Value>) -> BeforeCompact {
        BeforeCompact {
            reason: Some(reason.to_owned()),
            custom_instructions: instructions.map(str::to_owned),
            tokens_before: Some(2_000.0),
            branch_entries: Some(branch),
            session_id: Some("sess-1".to_owned()),
            ..BeforeCompact::default()
        }
    }

    #[test]
    fn the_plan_follows_the_override_and_the_marker() {
        let on = CompactorConfig::default();
        let off = CompactorConfig {
            override_default_compaction: false,
            ..CompactorConfig::default()
        };
        let marker = Marker {
            keep: Some(1),
            ..Marker::default()
        };
        let ours = marker.to_instructions();
        let cases = [
            (&on, None, Plan::Compact { marker: None }),
            (&on, Some("focus on X"), Plan::Compact { marker: None }),
            (&off, None, Plan::LeaveToPi),
            (&off, Some("focus on X"), Plan::LeaveToPi),
            (
                &off,
                Some(ours.as_str()),
                Plan::Compact {
                    marker: Some(marker.clone()),
                },
            ),
        ];
        for (config, instructions, want) in cases {
            let input = hook_input("manual", instructions, Vec::new());
            assert_eq!(plan(config, &input), want, "{instructions:?}");
        }
    }

    #[test]
    fn hook_answers_for_results_and_refusals() {
        let branch: Vec<SessionEntry> = small_branch()
            .iter()
            .filter_map(entries::parse_entry)
            .collect();
        let settings = PipelineSettings::default();
        let compacted = pipeline::compact(&CompactRequest {
            entries: &branch,
            tokens_before: 2_000,
            keep_user_turns: Some(1),
            overflow: false,
            settings: &settings,
        });
        let Ok(compaction) = compacted.clone() else {
            panic!("the small branch compacts: {compacted:?}");
        };
        let wire = answer(Ok(compaction.clone()), false, true).to_json();
        assert_eq!(wire["compaction"]["firstKeptEntryId"], "u2");
        assert_eq!(wire["compaction"]["tokensBefore"], 2_000);
        assert!(
            wire["compaction"]["summary"]
                .as_str()
                .is_some_and(|s| s.contains("session_recall"))
        );
        assert_eq!(wire["compaction"]["details"]["compactor"], "unipi-tui");

        let refusal = Refusal::NoValidCut;
        // (overflow, ours) → answer
        let cases = [
            (true, false, Value::Null),
            (true, true, json!({"cancel": true})),
            (false, false, json!({"cancel": true})),
            (false, true, json!({"cancel": true})),
        ];
        for (overflow, ours, want) in cases {
            assert_eq!(
                answer(Err(refusal), overflow, ours).to_json(),
                want,
                "{overflow} {ours}"
            );
        }
        assert_eq!(
            answer(Err(refusal), false, false),
            HookAnswer::Cancel {
                warning: refusal.to_string()
            }
        );
    }

    fn module_with_db() -> anyhow::Result<CompactorModule> {
        let db = DbWorker::from_db(SessionDb::open_in_memory()?)?;
        Ok(CompactorModule::new(
            CompactorConfig::default(),
            PathBuf::from("/w"),
            Ok(db),
            None,
        ))
    }

    #[tokio::test]
    async fn the_hook_records_the_compaction_and_recall_finds_its_summary() -> anyhow::Result<()> {
        let module = module_with_db()?;
        let marker = Marker {
            keep: Some(1),
            auto: false,
            follow_up: Some("go on".into()),
        };
        let input = hook_input("manual", Some(&marker.to_instructions()), small_branch());
        let wire = module
            .before_compact(serde_json::to_value(RawInput::from(&input))?)
            .await;
        assert_eq!(wire["compaction"]["firstKeptEntryId"], "u2", "{wire}");
        assert_eq!(module.tally().compactions, 0, "counted once Pi confirms");
        let pending = module.inner.lock().pending.clone();
        assert_eq!(pending.and_then(|p| p.follow_up), Some("go on".to_owned()));
        let done = PiEvent::CompactionEnd(crate::bridge::CompactionEnd {
            from_extension: true,
            ..crate::bridge::CompactionEnd::default()
        });
        module.inner.on_pi_event(&done).await;
        assert_eq!(module.tally().compactions, 1);
        assert!(module.inner.lock().pending.is_none());
        let view = module.last_view().map(|v| {
            (
                v.first_kept_entry_id,
                v.manifest.len(),
                v.when.ends_with("manual"),
            )
        });
        assert_eq!(view, Some(("u2".to_owned(), 4, true)));
        let stats = module.stats().await.unwrap_or_else(|err| err);
        assert!(stats.contains("This project: 1 compaction"), "{stats}");

        let call = |args: Value| ToolCall {
            agent: AgentId::main(),
            tool: RECALL_TOOL.to_owned(),
            call_id: "c".to_owned(),
            args,
            updates: crate::bridge::UpdateSender::detached(),
            cancel: crate::bridge::CancelToken::never(),
        };
        let found = module
            .call_tool(call(json!({"query": "ZETA-0", "scope": "project"})))
            .await;
        let text = found
            .map(|o| format!("{:?}", o.content))
            .unwrap_or_else(|e| e.message);
        assert!(text.contains("compaction summary"), "{text}");
        let none = module
            .call_tool(call(
                json!({"query": "nothing-like-this", "scope": "project"}),
            ))
            .await;
        let text = none
            .map(|o| format!("{:?}", o.content))
            .unwrap_or_else(|e| e.message);
        assert!(
            text.contains("No results for \\\"nothing-like-this\\\" in this project"),
            "{text}"
        );
        let bad = module.call_tool(call(json!({"scope": "project"}))).await;
        assert!(bad.is_err());
        Ok(())
    }

    #[tokio::test]
    async fn the_hook_leaves_pi_alone_when_not_asked_and_refuses_visibly() -> anyhow::Result<()> {
        let off = CompactorModule::new(
            CompactorConfig {
                override_default_compaction: false,
                ..CompactorConfig::default()
            },
            PathBuf::from("/w"),
            Err("no db".into()),
            None,
        );
        let input = hook_input("threshold", None, small_branch());
        assert_eq!(
            off.before_compact(serde_json::to_value(RawInput::from(&input))?)
                .await,
            Value::Null
        );

        let module = module_with_db()?;
        // Nothing live to summarize: the pipeline refuses.
        let manual = hook_input("manual", None, Vec::new());
        assert_eq!(
            module
                .before_compact(serde_json::to_value(RawInput::from(&manual))?)
                .await,
            json!({"cancel": true})
        );
        let overflow = hook_input("overflow", None, Vec::new());
        assert_eq!(
            module
                .before_compact(serde_json::to_value(RawInput::from(&overflow))?)
                .await,
            Value::Null
        );
        assert_eq!(module.tally().compactions, 0);
        Ok(())
    }

    #[tokio::test]
    async fn turn_usage_drives_auto_compaction_and_pi_reports_release_it() {
        let config = CompactorConfig {
            auto: AutoConfig {
                enabled: true,
                threshold_percent: 50.0,
                ..AutoConfig::default()
            },
            ..CompactorConfig::default()
        };
        let module = CompactorModule::new(config, PathBuf::from("/w"), Err("none".into()), None);
        let turn = |percent: f64| {
            PiEvent::TurnEnd(crate::bridge::TurnEnd {
                turn_index: 1,
                usage: None,
                context_usage: Some(crate::bridge::ContextUsage {
                    tokens: Some((percent * 1000.0) as u64),
                    context_window: 100_000,
                    percent: Some(percent),
                }),
            })
        };
        let end = |error: Option<&str>| {
            PiEvent::CompactionEnd(crate::bridge::CompactionEnd {
                reason: Some("manual".into()),
                error: error.map(str::to_owned),
                from_extension: true,
                ..crate::bridge::CompactionEnd::default()
            })
        };
        let auto_state = || module.inner.lock().auto.clone();
        module.inner.on_pi_event(&turn(30.0)).await;
        assert!(!auto_state().in_flight, "below the threshold");
        module.inner.on_pi_event(&turn(60.0)).await;
        assert!(auto_state().in_flight, "crossed: triggered");
        module.inner.on_pi_event(&turn(65.0)).await;
        assert!(auto_state().in_flight, "no second trigger while in flight");
        module.inner.on_pi_event(&end(None)).await;
        let state = auto_state();
        assert!(!state.in_flight && state.awaiting_post_compaction_sample);

        let triggered = |state: &AutoState| state.last_trigger_at_ms;
        let first = triggered(&auto_state());
        module.inner.lock().auto = AutoState {
            in_flight: true,
            last_trigger_at_ms: first,
            ..AutoState::default()
        };
        module
            .inner
            .on_pi_event(&end(Some("Compaction failed: boom")))
            .await;
        let state = auto_state();
        assert!(!state.in_flight && !state.awaiting_post_compaction_sample);
        assert_eq!(triggered(&state), first, "an error keeps the cooldown");
    }

    #[test]
    fn without_branch_entries_the_branch_comes_from_the_session_file() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("s.jsonl");
        let mut lines = vec![json!({"type": "session", "id": "s", "version": 3})];
        lines.extend(small_branch());
        // A sibling of a2 on another branch: not part of the leaf's path.
        lines.push(json!({"type": "message", "id": "x", "parentId": "u2",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "other"}]}}));
        std::fs::write(
            &file,
            lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
        )?;
        let input = BeforeCompact {
            session_file: Some(file.display().to_string()),
            leaf_id: Some("a2".into()),
            ..BeforeCompact::default()
        };
        let ids: Vec<String> = branch_entries(&input)?.into_iter().map(|e| e.id).collect();
        assert_eq!(ids, ["u0", "a0", "u1", "a1", "u2", "a2"]);
        assert!(branch_entries(&BeforeCompact::default()).is_err());
        Ok(())
    }

    #[tokio::test]
    async fn recall_without_a_database_says_why() {
        let module = CompactorModule::new(
            CompactorConfig::default(),
            PathBuf::from("/w"),
            Err("it is broken".into()),
            None,
        );
        let result = module
            .call_tool(ToolCall {
                agent: AgentId::main(),
                tool: RECALL_TOOL.to_owned(),
                call_id: "c".to_owned(),
                args: json!({"query": "x"}),
                updates: crate::bridge::UpdateSender::detached(),
                cancel: crate::bridge::CancelToken::never(),
            })
            .await;
        let message = result.err().map(|e| e.message).unwrap_or_default();
        assert_eq!(message, "session_recall is unavailable: it is broken");
    }

    /// A database that cannot be written: a notice at start, and recall says it is unavailable
    /// and why instead of answering "No results".
    #[tokio::test]
    async fn an_unwritable_database_is_a_notice_and_recall_says_why() -> anyhow::Result<()> {
        for what in ["file", "directory"] {
            unwritable_database_case(what).await?;
        }
        Ok(())
    }

    async fn unwritable_database_case(what: &str) -> anyhow::Result<()> {
        let home = tempfile::tempdir()?;
        let workspace = tempfile::tempdir()?;
        let db_dir = crate::sessiondb::default_db_dir(home.path());
        let path = crate::sessiondb::project_db_path(&db_dir, workspace.path());
        // An existing database with content: a read-only one would still answer, from stale
        // content.
        SessionDb::open(&path)?.db.upsert_session(&SessionMeta {
            session_id: "s".into(),
            session_file: None,
            project_dir: "/w".into(),
        })?;
        let _guard = crate::sessiondb::test_support::Unwritable::new(if what == "file" {
            &path
        } else {
            &db_dir
        });
        let started = CompactorModule::start(Some(home.path()), workspace.path());
        assert!(
            started
                .notices
                .iter()
                .any(|notice| notice.contains("cannot be written")),
            "{what}: {:?}",
            started.notices
        );
        let result = started
            .module
            .call_tool(ToolCall {
                agent: AgentId::main(),
                tool: RECALL_TOOL.to_owned(),
                call_id: "c".to_owned(),
                args: json!({"query": "anything", "scope": "project"}),
                updates: crate::bridge::UpdateSender::detached(),
                cancel: crate::bridge::CancelToken::never(),
            })
            .await;
        let message = result.err().map(|e| e.message).unwrap_or_default();
        assert!(
            message.starts_with("session_recall is unavailable")
                && message.contains("cannot be written"),
            "{what}: {message}"
        );
        Ok(())
    }

    /// The hook's wire shape (the extension's field names) for a [`BeforeCompact`].
    #[derive(serde::Serialize)]
    struct RawInput {
        reason: Option<String>,
        custom_instructions: Option<String>,
        will_retry: bool,
        tokens_before: Option<f64>,
        branch_entries: Option<Vec<Value>>,
        session_file: Option<String>,
        session_id: Option<String>,
        leaf_id: Option<String>,
    }

    impl From<&BeforeCompact> for RawInput {
        fn from(input: &BeforeCompact) -> Self {
            RawInput {
                reason: input.reason.clone(),
                custom_instructions: input.custom_instructions.clone(),
                will_retry: input.will_retry,
                tokens_before: input.tokens_before,
                branch_entries: input.branch_entries.clone(),
                session_file: input.session_file.clone(),
                session_id: input.session_id.clone(),
                leaf_id: input.leaf_id.clone(),
            }
        }
    }

    fn hit(entry: &str, snippet: &str) -> RecallHit {
        RecallHit {
            session_id: "0123456789abcdef".into(),
            entry_id: entry.into(),
            kind: DocKind::ToolResult,
            tool: Some("bash".into()),
            snippet: snippet.into(),
            score: 1.0,
            at_ms: Some(0),
            project_dir: "/w".into(),
        }
    }

    #[test]
    fn recall_text_is_numbered_bounded_and_says_when_empty() {
        let limits = RecallLimits::default();
        let args = parse_recall_args(&json!({"query": " flag ", "limit": 99}), &limits);
        assert_eq!(
            args,
            Ok(RecallArgs {
                query: "flag".into(),
                scope: ScopeArg::Session,
                limit: 20,
                offset: 0
            })
        );
        assert!(parse_recall_args(&json!({"query": "x", "scope": "galaxy"}), &limits).is_err());
        let Ok(args) = args else { return };

        let result = RecallResult {
            hits: vec![hit("e1", "the flag is ZETA")],
            total: 1,
        };
        assert_eq!(
            format_recall(&args, "this session", &result, 8192),
            "Found 1 results for \"flag\" in this session (showing 1-1):\n\n\
             [1] tool result (bash) · session 01234567 · entry e1 · 1970-01-01 00:00 UTC\nthe flag is ZETA\n"
        );
        let many = RecallResult {
            hits: (0..20)
                .map(|i| hit(&format!("e{i}"), &"x".repeat(300)))
                .collect(),
            total: 40,
        };
        let text = format_recall(&args, "this session", &many, 2_000);
        assert!(text.len() <= 2_000 + 3, "{}", text.len());
        assert!(
            text.contains("more: call session_recall again with offset"),
            "{text}"
        );
        let empty = format_recall(&args, "this session", &RecallResult::default(), 8192);
        assert_eq!(
            empty,
            "No results for \"flag\" in this session. Try scope \"project\" or \"all\", or other words."
        );
    }

    #[test]
    fn an_unfinished_compaction_warns_for_pi_s_refusal_and_still_sends_the_prompt() {
        let with_prompt = Marker {
            keep: Some(1),
            auto: false,
            follow_up: Some("go on".into()),
        };
        let refused = Some("Compaction failed: Nothing to compact (session too small)");
        let texts = |calls: Vec<HostCall>| -> Vec<String> {
            calls
                .into_iter()
                .map(|call| match call {
                    HostCall::Notify { message, level } => format!("{level:?}: {message}"),
                    HostCall::SendUserMessage { content, .. } => format!("prompt: {content}"),
                    other => other.method().to_string(),
                })
                .collect()
        };
        assert_eq!(
            texts(after_unfinished(&with_prompt, refused)),
            [
                "Warning: 🗜 Not compacted: the session is still smaller than what Pi always keeps \
                 (compaction.keepRecentTokens, 20k tokens by default). Sending your prompt.",
                "prompt: go on"
            ]
        );
        // The hook cancelled (it warned already): only the prompt.
        assert_eq!(
            texts(after_unfinished(&with_prompt, None)),
            ["prompt: go on"]
        );
        let bare = Marker {
            keep: Some(1),
            ..Marker::default()
        };
        assert_eq!(
            texts(after_unfinished(&bare, Some("Compaction failed: no model"))),
            ["Warning: 🗜 Not compacted: no model."]
        );
        assert!(after_unfinished(&bare, None).is_empty());
    }

    #[test]
    fn utc_times_format() {
        let cases = [
            (0, "1970-01-01 00:00 UTC"),
            (1_796_032_801_000, "2026-11-30 10:00 UTC"),
            (951_868_800_000 - 60_000, "2000-02-29 23:59 UTC"),
        ];
        for (ms, want) in cases {
            assert_eq!(format_utc(ms), want);
        }
    }

    fn stored(summary: &str, first_kept: &str, at_ms: i64) -> StoredCompaction {
        StoredCompaction {
            id: 1,
            record: CompactionRecord {
                session_id: "s".into(),
                at_ms,
                reason: "manual".into(),
                tokens_before: 10,
                tokens_after: 5,
                messages_summarized: 2,
                blocks_kept: 1,
                blocks_dropped: 1,
                duration_ms: 1,
                summary: summary.into(),
                first_kept_entry_id: first_kept.into(),
                manifest_json: "[]".into(),
            },
        }
    }

    #[test]
    fn resume_injects_only_a_summary_the_branch_lacks() {
        let branch: Vec<SessionEntry> = small_branch()
            .iter()
            .filter_map(entries::parse_entry)
            .collect();
        let with = |extra: Value| {
            let mut lines = small_branch();
            lines.push(extra);
            lines
                .iter()
                .filter_map(entries::parse_entry)
                .collect::<Vec<_>>()
        };
        let compaction = |summary: &str, timestamp: &str| {
            json!({"type": "compaction", "id": "k", "parentId": "a2", "timestamp": timestamp,
                   "summary": summary, "firstKeptEntryId": "u2", "tokensBefore": 9})
        };
        let resumed = json!({"type": "custom_message", "id": "r", "parentId": "a2",
                             "customType": RESUME_TYPE, "content": "S", "display": true});
        let late = 1_796_032_900_000;
        let cases = [
            ("no record", branch.clone(), None, None),
            (
                "crash before Pi wrote it",
                branch.clone(),
                Some(stored("S", "u2", late)),
                Some("S"),
            ),
            (
                "another branch",
                branch.clone(),
                Some(stored("S", "zz", late)),
                None,
            ),
            (
                "Pi wrote it",
                with(compaction("S", "2026-11-30T10:00:02.000Z")),
                Some(stored("S", "u2", late)),
                None,
            ),
            (
                "Pi compacted later itself",
                with(compaction("P", "2026-11-30T11:00:00.000Z")),
                Some(stored("S", "u2", late)),
                None,
            ),
            (
                "already re-injected",
                with(resumed),
                Some(stored("S", "u2", late)),
                None,
            ),
        ];
        for (name, branch, last, want) in cases {
            assert_eq!(
                resume_summary(&branch, last.as_ref()).as_deref(),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn stats_and_toast_texts() {
        let totals = |count, saved| CompactionTotals {
            count,
            tokens_saved: saved,
            last_at_ms: None,
        };
        let record = record_for(
            &Compaction {
                summary: "S".into(),
                details: Value::Null,
                first_kept_entry_id: "u2".into(),
                tokens_before: 52_300,
                manifest: pipeline::Manifest::default(),
                stats: pipeline::CompactionStats {
                    tokens_before: 52_300,
                    tokens_after: 6_100,
                    messages_summarized: 14,
                    messages_kept: 3,
                    blocks_kept: 9,
                    blocks_dropped: 31,
                    kept_user_turns: 1,
                    chars_per_token: 4.0,
                    duration: std::time::Duration::from_millis(12),
                },
            },
            "s",
            "manual",
            0,
        );
        assert_eq!(
            toast_text(&record),
            "🗜 Compacted 52.3k → 6.1k tokens · 9 blocks kept, 31 dropped · 12 ms"
        );
        assert_eq!(
            stats_text(&totals(1, 46_200), &totals(3, 120_000), Some(&record)),
            "🗜 Compactor\nThis session: 1 compaction · 46.2k tokens saved\n\
             This project: 3 compactions · 120k tokens saved\n\
             Last: 1970-01-01 00:00 UTC (manual) · 52.3k → 6.1k tokens · 14 messages summarized · 12 ms"
        );
    }
}

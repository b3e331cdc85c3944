//! The `session_recall` tool: its declaration, its arguments checked against the configured
//! limits, the search in the session database (this session, this project, or every project's
//! database), and the answer the model reads — numbered hits with where each came from, cut to
//! a byte budget, or a clear "nothing found" with a hint where else to look.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::config::RecallLimits;
use super::ingest::DbWorker;
use super::text::format_utc;
use crate::bridge::{Refusal, ToolError, ToolOutput, ToolSpec};
use crate::sessiondb::{DocKind, RecallMode, RecallQuery, RecallResult, RecallScope};
use crate::text::non_blank_str;

pub(crate) const RECALL_TOOL: &str = "session_recall";
/// The original Unipi's name of the same tool, kept so prompts, skills and AGENTS.md rules
/// written for it keep working: the same schema and the same executor.
pub(crate) const LEGACY_RECALL_TOOL: &str = "vcc_recall";

/// `session_recall`'s `scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScopeArg {
    Session,
    Project,
    All,
}

/// The arguments of one `session_recall` call, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecallArgs {
    pub query: String,
    pub scope: ScopeArg,
    pub limit: usize,
    pub offset: usize,
    pub mode: RecallMode,
    pub expand: bool,
}

pub(crate) fn parse_recall_args(
    args: &Value,
    limits: &RecallLimits,
) -> Result<RecallArgs, Refusal> {
    let query = non_blank_str(args.get("query"))
        .ok_or("`query` is required: the words to look for")?
        .to_owned();
    let scope = match args.get("scope").and_then(Value::as_str) {
        None | Some("session") => ScopeArg::Session,
        Some("project") => ScopeArg::Project,
        Some("all") => ScopeArg::All,
        Some(other) => {
            return Err(format!("`scope` must be session, project or all, got `{other}`").into());
        }
    };
    // The original's names: bm25 (its ranked word search, ours too) and regex.
    let mode = match args.get("mode") {
        None | Some(Value::Null) => RecallMode::Words,
        Some(Value::String(mode)) if mode == "bm25" => RecallMode::Words,
        Some(Value::String(mode)) if mode == "regex" => RecallMode::Regex,
        Some(other) => {
            return Err(format!("`mode` must be bm25 or regex, got {other}").into());
        }
    };
    if mode == RecallMode::Regex
        && let Err(err) = crate::sessiondb::recall::build_regex(&query)
    {
        return Err(
            format!("`query` is not a valid regular expression for mode regex: {err}").into(),
        );
    }
    let expand = match args.get("expand") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(expand)) => *expand,
        Some(other) => return Err(format!("`expand` must be true or false, got {other}").into()),
    };
    let number = |key: &str| args.get(key).and_then(Value::as_u64).map(|n| n as usize);
    Ok(RecallArgs {
        query,
        scope,
        limit: number("limit")
            .unwrap_or(limits.default_limit)
            .clamp(1, limits.max_limit),
        offset: number("offset").unwrap_or(0),
        mode,
        expand,
    })
}

/// The model's view of a recall result: numbered hits with where each came from, cut to
/// `max_bytes`, or a clear "nothing found".
pub(crate) fn format_recall(
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

/// The tool's declaration, with the configured limits in its description.
pub(crate) fn recall_tool_spec(limits: &RecallLimits) -> ToolSpec {
    ToolSpec::new(
        RECALL_TOOL,
        "Session recall",
        format!(
            "Search what was said and done earlier — including what a compaction took out \
             of the context: user and assistant messages, tool results and summaries. \
             Returns ranked snippets with the session, entry and time each came from. \
             scope: session (default), project (every session in this project) or all \
             (every project). limit ≤ {} (default {}), offset pages. mode regex takes \
             query as a case-insensitive regular expression (newest first); expand: true \
             gives each hit's whole text instead of a snippet.",
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
    .param(
        "mode",
        json!({"type": "string", "enum": ["bm25", "regex"],
               "description": "bm25 (default): ranked word search; regex: query is a \
                               case-insensitive regular expression, newest hits first"}),
        false,
    )
    .boolean_param(
        "expand",
        "Each hit's whole text instead of a snippet around the match (default false)",
        false,
    )
    .prompt_snippet("search earlier work, decisions and context, also from before a compaction")
    .guideline(
        "Use session_recall before redoing work or asking the user again about something \
         a compaction summary mentions only briefly.",
    )
}

/// `vcc_recall`: [`recall_tool_spec`] under the original Unipi's name, without the system
/// prompt's lines (the model is told of `session_recall` once; old prompts still reach it).
pub(crate) fn legacy_recall_tool_spec(limits: &RecallLimits) -> ToolSpec {
    let spec = recall_tool_spec(limits);
    ToolSpec {
        name: LEGACY_RECALL_TOOL.to_owned(),
        label: "Session recall (vcc_recall)".to_owned(),
        description: format!(
            "The original Unipi's name of session_recall, the same tool. {}",
            spec.description
        ),
        prompt_snippet: None,
        prompt_guidelines: Vec::new(),
        ..spec
    }
}

/// Where one recall looks: the database (or why there is none), the folder of every project's
/// database (the `all` scope), and the main Pi's session (the `session` scope; the project when
/// there is none yet).
pub(crate) struct RecallSources {
    pub db: Result<DbWorker, Refusal>,
    pub db_dir: Option<PathBuf>,
    pub session_id: Option<String>,
}

/// Runs one `session_recall` call: checks `args`, searches, and formats the answer.
pub(crate) async fn run_recall(
    args: Value,
    limits: &RecallLimits,
    sources: RecallSources,
) -> Result<ToolOutput, ToolError> {
    let args = parse_recall_args(&args, limits).map_err(ToolError::new)?;
    let db = sources
        .db
        .map_err(|reason| ToolError::new(format!("session_recall is unavailable: {reason}")))?;
    if let Some(reason) = db.unwritable() {
        // Nothing new reaches the index: an empty answer would claim there is nothing.
        return Err(ToolError::new(format!(
            "session_recall is unavailable: the session database cannot be written, so it \
             misses what happened since ({reason})"
        )));
    }
    let (scope, label) = match (args.scope, sources.session_id) {
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
        mode: args.mode,
        expand: args.expand,
    };
    let result: anyhow::Result<RecallResult> = match (&query.scope, sources.db_dir) {
        (RecallScope::AllProjects, Some(dir)) => {
            tokio::task::spawn_blocking(move || crate::sessiondb::recall_all_projects(&dir, &query))
                .await
                .map_err(anyhow::Error::from)
                .and_then(|result| result.map_err(anyhow::Error::from))
        }
        _ => db
            .run(move |db| db.recall(&query))
            .await
            .and_then(|result| result.map_err(anyhow::Error::from)),
    };
    let result = result.map_err(|err| ToolError::new(format!("session_recall failed: {err:#}")))?;
    let text = format_recall(&args, label, &result, limits.max_output_bytes);
    Ok(ToolOutput::text(text).with_details(json!({
        "query": args.query,
        "mode": match args.mode {
            RecallMode::Words => "bm25",
            RecallMode::Regex => "regex",
        },
        "expand": args.expand,
        "scope": label,
        "total": result.total,
        "returned": result.hits.len(),
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessiondb::RecallHit;

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
                offset: 0,
                mode: RecallMode::Words,
                expand: false,
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
    /// The original Unipi's parameters: `mode` bm25 or regex (checked before any search),
    /// `expand` a boolean; anything else is refused naming the parameter.
    #[test]
    fn unipi_mode_and_expand_are_accepted_and_checked() {
        let limits = RecallLimits::default();
        let parsed = |args: Value| parse_recall_args(&args, &limits);
        let args = parsed(json!({"query": "e\\d+", "mode": "regex", "expand": true})).unwrap();
        assert_eq!((args.mode, args.expand), (RecallMode::Regex, true));
        let args = parsed(json!({"query": "x", "mode": "bm25", "expand": null})).unwrap();
        assert_eq!((args.mode, args.expand), (RecallMode::Words, false));
        for (args, want) in [
            (
                json!({"query": "(oops", "mode": "regex"}),
                "`query` is not a valid regular expression for mode regex: regex parse error",
            ),
            (
                json!({"query": "x", "mode": "fuzzy"}),
                "`mode` must be bm25 or regex, got \"fuzzy\"",
            ),
            (
                json!({"query": "x", "expand": "yes"}),
                "`expand` must be true or false, got \"yes\"",
            ),
        ] {
            let err = parsed(args.clone()).unwrap_err();
            assert!(err.starts_with(want), "{args}: {err}");
        }
        // A pattern too big to compile is refused, not run.
        assert!(parsed(json!({"query": "(a{1000}){1000}", "mode": "regex"})).is_err());
    }

    /// `vcc_recall` is `session_recall` under the old name: the same schema, no second line
    /// in the system prompt.
    #[test]
    fn the_legacy_name_has_the_same_schema() {
        let limits = RecallLimits::default();
        let (ours, legacy) = (recall_tool_spec(&limits), legacy_recall_tool_spec(&limits));
        assert_eq!(legacy.name, "vcc_recall");
        assert_eq!(legacy.parameters, ours.parameters);
        assert_eq!(legacy.timeout, ours.timeout);
        assert!(legacy.prompt_snippet.is_none() && legacy.prompt_guidelines.is_empty());
        assert!(legacy.description.contains("session_recall"));
        let mode = &ours.parameters["properties"]["mode"];
        assert_eq!(mode["enum"], json!(["bm25", "regex"]));
        assert_eq!(ours.parameters["properties"]["expand"]["type"], "boolean");
    }
}

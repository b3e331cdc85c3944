//! Stage 4: the brief — a compact transcript of the summarized range (`[user]`, `[assistant]`
//! with `* Tool "arg"` lines, `[tool_error]`), so the model keeps the thread of the conversation
//! and not just the extracted facts. The brief has a size-relative budget (15 tokens per
//! candidate block, at least the target and at most the ceiling, in characters through the
//! calibrated chars-per-token; a long session's may grow to a share of what it summarizes, see
//! the pipeline); when the candidates do not fit, blocks are *ranked* by what they are worth —
//! their kind (user words and errors before narration), their content (a decision and its
//! reason, a rule, a fix, an open item, identifiers such as a port, a version or a hash) and, by
//! less than any of those, their recency — and the best are kept in their original order. A long
//! text is shown by its sentences that carry something.
//! Selection is one sort, rendering one pass: a 10,000-message session costs milliseconds.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

use super::normalize::{BlockKind, NormBlock, clip_chars, clip_sentence, literal_regex};
use super::sections::path_argument;

/// Word limits (non-stopwords) for one user or assistant text.
pub(crate) const USER_WORD_LIMIT: usize = 256;
pub(crate) const ASSISTANT_WORD_LIMIT: usize = 200;
/// At most this many tool lines per assistant section; older ones are counted instead.
pub(crate) const MAX_TOOL_LINES_PER_SECTION: usize = 8;

/// The rendered brief and what the budget did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Brief {
    pub text: String,
    /// Candidate blocks rendered.
    pub blocks_kept: usize,
    /// Candidate blocks left out for the budget.
    pub blocks_dropped: usize,
}

/// The brief budget in tokens for `candidates` blocks: `tokens_per_block` each, clamped to
/// `[target, ceiling]`.
pub(crate) fn budget_tokens(
    candidates: usize,
    target: u64,
    ceiling: u64,
    tokens_per_block: u64,
) -> u64 {
    (candidates as u64)
        .saturating_mul(tokens_per_block)
        .clamp(target.min(ceiling), ceiling)
}

/// Selects the best candidates within `max_chars` and renders them in their original order.
/// `refs[i]` names source message `i` in the brief (`(#ref)`; the entry id, so recall can find
/// it); a missing one falls back to the index.
pub fn compile_ranked(blocks: &[NormBlock], refs: &[String], max_chars: usize) -> Brief {
    let candidates: Vec<(usize, String)> = blocks
        .iter()
        .enumerate()
        .filter_map(|(index, block)| body(block, refs).map(|body| (index, body)))
        .collect();
    let total = candidates.len().max(1) as f64;
    let mut ranked: Vec<(usize, f64, usize)> = candidates
        .iter()
        .enumerate()
        .map(|(position, (index, body))| {
            let block = &blocks[*index];
            let recency = RECENCY_WEIGHT * (position + 1) as f64 / total;
            let cost = cost(block, body, refs);
            // What a block takes from the budget counts against it: a pasted spec is worth
            // less than the three facts its room would hold.
            let score = base_score(block) + worth(block) + recency - COST_WEIGHT * cost as f64;
            (position, score, cost)
        })
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    let mut used = 0usize;
    let mut chosen = vec![false; candidates.len()];
    for (position, _, cost) in ranked {
        if used + cost <= max_chars {
            used += cost;
            chosen[position] = true;
        }
    }
    let kept: Vec<(&NormBlock, &str)> = candidates
        .iter()
        .zip(&chosen)
        .filter(|(_, chosen)| **chosen)
        .map(|((index, body), _)| (&blocks[*index], body.as_str()))
        .collect();
    let blocks_kept = kept.len();
    Brief {
        text: cap_brief(&render(&kept, refs), max_chars),
        blocks_kept,
        blocks_dropped: candidates.len() - blocks_kept,
    }
}

/// Keeps the end of `brief` within `max_chars`, starting at a section header, with a note of
/// what was cut. Also used when merging a previous brief.
pub(crate) fn cap_brief(brief: &str, max_chars: usize) -> String {
    if brief.len() <= max_chars {
        return brief.to_string();
    }
    let lines: Vec<&str> = brief.lines().collect();
    let mut start = lines.len();
    let mut used = 0;
    while start > 0 && used + lines[start - 1].len() < max_chars {
        start -= 1;
        used += lines[start].len() + 1;
    }
    // Begin at a header so no section is shown without its role.
    while start < lines.len() && !is_header(lines[start]) {
        start += 1;
    }
    let omitted = lines[..start]
        .iter()
        .filter(|line| !line.is_empty())
        .count();
    let rest = lines[start..].join("\n");
    if rest.is_empty() {
        return format!("...({omitted} earlier lines omitted)");
    }
    format!("...({omitted} earlier lines omitted)\n\n{rest}")
}

/// A brief section header line (`[user]`, `[assistant]`, `[tool_error] …`, `[custom: …]`).
pub(crate) fn is_header(line: &str) -> bool {
    line.starts_with('[') && line.contains(']') && !line.starts_with("[image:")
}

// --- ranking ----------------------------------------------------------------------------------

/// How much being recent adds at most (the newest candidate gets all of it): less than what a
/// decision or an identifier is worth, so an early fact outranks late narration.
const RECENCY_WEIGHT: f64 = 300.0;
/// Score lost per character a block costs.
const COST_WEIGHT: f64 = 0.5;

/// Markers of what a sentence is worth keeping, with their weights: a decision and its reason,
/// a rule the user set, a fix, an open item.
static WORTH_RES: LazyLock<[(Regex, f64); 4]> = LazyLock::new(|| {
    [
        (
            literal_regex(
                r"(?i)(?-u:\b)(?:decid\w*|decision|chose|chosen|picked|go(?:ing)? with|because|reason|instead of|rather than|trade-?off)(?-u:\b)",
            ),
            400.0,
        ),
        (
            literal_regex(
                r"(?i)(?-u:\b)(?:always|never|prefer\w*|must|don't|do not|avoid|constraint|rule|make sure)(?-u:\b)",
            ),
            350.0,
        ),
        (
            literal_regex(
                r"(?i)(?-u:\b)(?:fix(?:ed|es)?|the fix|caused by|came from|root cause|resolved|works now|workaround)(?-u:\b)",
            ),
            350.0,
        ),
        (
            literal_regex(
                r"(?i)(?-u:\b)(?:todo|fixme|still (?:need|have) to|remaining|later|not (?:done|written|implemented) yet|follow[- ]up|forget)(?-u:\b)",
            ),
            350.0,
        ),
    ]
});

/// Identifiers a later turn may need exactly: numbers of four digits and more (a port, a
/// ticket), commit hashes, versions, `ABC-123` tickets, `--flags`, host names, paths, error codes.
static IDENTIFIER_RE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"(?-u:\b)(?:\d{4,}|[0-9a-f]*\d[0-9a-f]*[a-f][0-9a-f]{5,}|[0-9a-f]*[a-f][0-9a-f]*\d[0-9a-f]{5,}|v?\d+\.\d+\.\d+|[A-Z][A-Z0-9]+-\d+|E\d{4}|[\w-]+(?:\.[\w-]+)*\.(?:internal|local|com|net|org|io|dev))(?-u:\b)|--[a-z][\w-]{2,}|(?:[\w.-]+/)+[\w-]+\.\w+",
    )
});
const IDENTIFIER_WORTH: f64 = 250.0;
const MAX_IDENTIFIERS_COUNTED: usize = 2;

/// What a block's content is worth beyond its kind: its markers and identifiers. A call is
/// worth its command's or path's identifiers only (reading a file is routine; running a
/// command with a port or a host is not).
fn worth(block: &NormBlock) -> f64 {
    let text: &str = match block.kind {
        BlockKind::User | BlockKind::Assistant | BlockKind::Custom => &block.text,
        BlockKind::ToolResult if block.is_error => &block.head,
        BlockKind::ToolCall => {
            return block
                .arguments
                .as_ref()
                .and_then(|arguments| arguments.get("command"))
                .and_then(serde_json::Value::as_str)
                .map_or(0.0, identifier_worth);
        }
        _ => return 0.0,
    };
    // A long text is judged by its first part: a pasted log is not a list of decisions.
    let text = clip_chars(text, 1_200);
    let markers: f64 = WORTH_RES
        .iter()
        .filter(|(re, _)| re.is_match(text))
        .map(|(_, weight)| weight)
        .sum();
    markers + identifier_worth(text)
}

fn identifier_worth(text: &str) -> f64 {
    IDENTIFIER_RE
        .find_iter(text)
        .take(MAX_IDENTIFIERS_COUNTED)
        .count() as f64
        * IDENTIFIER_WORTH
}

fn base_score(block: &NormBlock) -> f64 {
    match block.kind {
        BlockKind::User => 600.0,
        BlockKind::ToolResult => 450.0,
        BlockKind::Assistant => 300.0,
        BlockKind::Custom => 200.0,
        BlockKind::ToolCall | BlockKind::Thinking => 150.0,
    }
}

/// Characters a block adds to the brief, its header included (an upper bound: tool lines under
/// one header share it).
fn cost(block: &NormBlock, body: &str, refs: &[String]) -> usize {
    match block.kind {
        BlockKind::ToolCall => body.len() + 1,
        _ => header(block, refs).len() + body.len() + 3,
    }
}

/// The block's line in the brief, or `None` when it is not a brief candidate.
fn body(block: &NormBlock, refs: &[String]) -> Option<String> {
    let reference = format!(" (#{})", reference(refs, block.source));
    match block.kind {
        BlockKind::User => Some(format!(
            "{}{reference}",
            limit_words(&digest(&block.text, USER_DIGEST_CHARS), USER_WORD_LIMIT)
        )),
        BlockKind::Assistant if !block.text.is_empty() => {
            let text = strip_self_talk(&block.text);
            (!text.is_empty()).then(|| {
                format!(
                    "{}{reference}",
                    limit_words(&digest(text, ASSISTANT_DIGEST_CHARS), ASSISTANT_WORD_LIMIT)
                )
            })
        }
        BlockKind::Custom if !block.text.is_empty() => Some(format!(
            "{}{reference}",
            limit_words(&block.text, ASSISTANT_WORD_LIMIT)
        )),
        BlockKind::ToolCall => Some(tool_line(block)),
        BlockKind::ToolResult
            if block.is_error && !block.head.is_empty() && block.head != "(no output)" =>
        {
            Some(clip_sentence(&block.head, 150))
        }
        _ => None,
    }
}

fn header(block: &NormBlock, refs: &[String]) -> String {
    match block.kind {
        BlockKind::User => "[user]".into(),
        BlockKind::Custom => format!("[custom: {}]", block.tool.as_deref().unwrap_or("")),
        BlockKind::ToolResult => format!(
            "[tool_error] {} (#{})",
            block.tool.as_deref().unwrap_or("tool"),
            reference(refs, block.source)
        ),
        _ => "[assistant]".into(),
    }
}

// --- rendering --------------------------------------------------------------------------------

struct BriefSection {
    header: String,
    lines: Vec<String>,
    /// For assistant sections: the message the section began with.
    source: usize,
    assistant: bool,
    /// For `[tool_error]`: the tool and the refs collapsed into it.
    error: Option<(String, Vec<usize>)>,
}

fn render(kept: &[(&NormBlock, &str)], refs: &[String]) -> String {
    let mut sections: Vec<BriefSection> = Vec::new();
    for (block, body) in kept {
        match block.kind {
            BlockKind::ToolCall => match sections.last_mut() {
                Some(section) if section.assistant => section.lines.push((*body).to_string()),
                _ => sections.push(BriefSection::assistant(block.source, body)),
            },
            BlockKind::Assistant => match sections.last_mut() {
                Some(section)
                    if section.assistant
                        && section.source == block.source
                        && !section.lines.iter().any(|line| line.starts_with("* ")) =>
                {
                    section.lines.push((*body).to_string());
                }
                _ => sections.push(BriefSection::assistant(block.source, body)),
            },
            BlockKind::ToolResult => {
                let tool = block.tool.clone().unwrap_or_else(|| "tool".into());
                if let Some(BriefSection {
                    error: Some((last_tool, sources)),
                    lines,
                    ..
                }) = sections.last_mut()
                    && *last_tool == tool
                    && lines.first().map(String::as_str) == Some(*body)
                {
                    sources.push(block.source);
                    continue;
                }
                sections.push(BriefSection {
                    header: String::new(),
                    lines: vec![(*body).to_string()],
                    source: block.source,
                    assistant: false,
                    error: Some((tool, vec![block.source])),
                });
            }
            _ => sections.push(BriefSection {
                header: header(block, refs),
                lines: vec![(*body).to_string()],
                source: block.source,
                assistant: false,
                error: None,
            }),
        }
    }
    let mut out = String::new();
    for section in sections {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        match &section.error {
            Some((tool, sources)) => {
                out.push_str(&format!(
                    "[tool_error] {tool} {}",
                    refs_label(sources, refs)
                ));
            }
            None => out.push_str(&section.header),
        }
        for line in finish_tool_lines(section.lines) {
            out.push('\n');
            out.push_str(&line);
        }
    }
    out
}

impl BriefSection {
    fn assistant(source: usize, line: &str) -> Self {
        Self {
            header: "[assistant]".into(),
            lines: vec![line.to_string()],
            source,
            assistant: true,
            error: None,
        }
    }
}

/// `(#3)` for one ref, `(#3, #5) x2` for a collapsed run (at most three refs listed).
fn refs_label(sources: &[usize], refs: &[String]) -> String {
    let listed: Vec<String> = sources
        .iter()
        .take(3)
        .map(|&source| format!("#{}", reference(refs, source)))
        .collect();
    let more = if sources.len() > 3 { ", …" } else { "" };
    if sources.len() == 1 {
        format!("({})", listed.join(", "))
    } else {
        format!("({}{more}) x{}", listed.join(", "), sources.len())
    }
}

fn reference(refs: &[String], source: usize) -> String {
    refs.get(source)
        .cloned()
        .unwrap_or_else(|| source.to_string())
}

/// Collapses runs of identical tool lines and keeps the last few of a section's tool lines.
fn finish_tool_lines(lines: Vec<String>) -> Vec<String> {
    let mut collapsed: Vec<(String, usize)> = Vec::with_capacity(lines.len());
    for line in lines {
        match collapsed.last_mut() {
            Some((last, count)) if line.starts_with("* ") && *last == line => *count += 1,
            _ => collapsed.push((line, 1)),
        }
    }
    let tool_lines = collapsed
        .iter()
        .filter(|(line, _)| line.starts_with("* "))
        .count();
    let mut omit = tool_lines.saturating_sub(MAX_TOOL_LINES_PER_SECTION);
    let mut out = Vec::with_capacity(collapsed.len() + 1);
    let mut omitted_entries = 0;
    for (line, count) in collapsed {
        if omit > 0 && line.starts_with("* ") {
            omit -= 1;
            omitted_entries += count;
            continue;
        }
        if omitted_entries > 0 {
            out.push(format!(
                "* ({omitted_entries} earlier tool-call entries omitted)"
            ));
            omitted_entries = 0;
        }
        out.push(if count > 1 {
            format!("{line} x{count}")
        } else {
            line
        });
    }
    out
}

// --- text shaping -----------------------------------------------------------------------------

/// A longer user or assistant text is shown by its sentences that carry something (see
/// [`worth`]) after its first, so a pasted spec or log does not eat the brief.
pub(crate) const USER_DIGEST_CHARS: usize = 700;
pub(crate) const ASSISTANT_DIGEST_CHARS: usize = 500;

static SENTENCE_RE: LazyLock<Regex> = LazyLock::new(|| literal_regex(r"[^.!?]+(?:[.!?]+|$)"));

/// `text` when it fits `max` characters; else its first sentence and then its sentences with
/// a marker or an identifier, in order, while they fit, joined by `…`.
fn digest(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut out = String::new();
    let mut skipped = false;
    for (index, sentence) in SENTENCE_RE.find_iter(text).enumerate() {
        let sentence = sentence.as_str().trim();
        let valuable = index == 0
            || WORTH_RES.iter().any(|(re, _)| re.is_match(sentence))
            || IDENTIFIER_RE.is_match(sentence);
        if !valuable || out.len() + sentence.len() + 3 > max {
            skipped = true;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if skipped { " … " } else { " " });
        }
        skipped = false;
        out.push_str(sentence);
    }
    if out.is_empty() {
        return clip_sentence(text, max);
    }
    if skipped {
        out.push_str(" …");
    }
    out
}

static SELF_TALK_RE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(r"(?i)^(?:hmm+|wait|actually|oh|okay|ok|well|so)(?-u:\b)[,.!:;]*\s*")
});

static BASH_TAIL_RE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"\s*\|\s*(?:head|tail|sort|wc|column|tr|cut|awk|uniq|python3|node|bun)(?-u:\b)[^|]*$",
    )
});

static CD_PREFIX_RE: LazyLock<Regex> = LazyLock::new(|| literal_regex(r"^cd\s+\S+\s*&&\s*"));

const STOPWORDS: [&str; 90] = [
    "a", "about", "above", "after", "again", "all", "am", "an", "and", "any", "are", "as", "at",
    "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can",
    "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from",
    "further", "had", "has", "have", "having", "he", "her", "here", "him", "his", "how", "i", "if",
    "in", "into", "is", "it", "its", "just", "me", "more", "most", "my", "no", "nor", "not", "of",
    "off", "on", "once", "only", "or", "other", "our", "out", "over", "own", "same", "she", "so",
    "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they",
    "this", "to", "was", "we",
];

/// `text` up to its `limit`-th non-stopword word, with `...(truncated)` when cut.
fn limit_words(text: &str, limit: usize) -> String {
    static STOPWORD_SET: LazyLock<HashSet<&'static str>> =
        LazyLock::new(|| STOPWORDS.into_iter().collect());
    // Most texts are short: no word needs looking at.
    if text.split(' ').nth(limit).is_none() {
        return text.to_string();
    }
    let mut counted = 0;
    for (index, word) in text.split(' ').enumerate() {
        let folded = word
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        if folded.is_empty() || STOPWORD_SET.contains(folded.as_str()) {
            continue;
        }
        counted += 1;
        if counted > limit {
            let words: Vec<&str> = text.split(' ').take(index).collect();
            return format!("{} ...(truncated)", words.join(" "));
        }
    }
    text.to_string()
}

fn strip_self_talk(text: &str) -> &str {
    let mut rest = text;
    for _ in 0..2 {
        match SELF_TALK_RE.find(rest) {
            Some(found) if found.end() > 0 => rest = &rest[found.end()..],
            _ => break,
        }
    }
    rest
}

/// `* Name "<the argument that says what the call did>"`.
fn tool_line(block: &NormBlock) -> String {
    let name = block.tool.as_deref().unwrap_or("tool");
    let Some(arguments) = &block.arguments else {
        return format!("* {name}");
    };
    let folded = name.to_ascii_lowercase();
    let get = |key: &str| arguments.get(key).and_then(serde_json::Value::as_str);
    let argument = match folded.as_str() {
        "glob" | "grep" | "find" => get("pattern").map(|p| clip_chars(p, 120).to_string()),
        _ => None,
    }
    .or_else(|| path_argument(arguments).map(str::to_string))
    .or_else(|| get("command").map(shorten_command))
    .or_else(|| get("query").map(|q| clip_chars(q, 60).to_string()))
    .or_else(|| get("pattern").map(|p| clip_chars(p, 120).to_string()));
    match argument {
        Some(argument) => format!("* {name} \"{argument}\""),
        None => format!("* {name}"),
    }
}

/// The first line of a shell command without a leading `cd X &&` and trailing formatting pipes.
fn shorten_command(command: &str) -> String {
    let first = command
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let mut short = CD_PREFIX_RE.replace(first, "").into_owned();
    for _ in 0..3 {
        let trimmed = BASH_TAIL_RE.replace(&short, "").into_owned();
        if trimmed.len() == short.len() || trimmed.is_empty() {
            break;
        }
        short = trimmed;
    }
    let clipped = clip_chars(&short, 120);
    if clipped.len() < short.len() {
        format!("{clipped}…")
    } else {
        short
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn block(kind: BlockKind, text: &str, source: usize) -> NormBlock {
        NormBlock::new(kind, text.into(), source)
    }

    #[test]
    fn budget_is_size_relative() {
        let cases = [(0, 1100), (10, 1100), (100, 1500), (1000, 2000)];
        for (candidates, expected) in cases {
            assert_eq!(
                budget_tokens(candidates, 1100, 2000, 15),
                expected,
                "{candidates}"
            );
        }
    }

    #[test]
    fn renders_the_transcript() {
        let blocks = [
            block(BlockKind::User, "Please fix the build", 0),
            block(BlockKind::Assistant, "Okay, so I will look.", 1),
            NormBlock::tool_call("read", json!({"path": "src/a.rs"}), 1),
            NormBlock::tool_call("read", json!({"path": "src/a.rs"}), 1),
            NormBlock::tool_call(
                "bash",
                json!({"command": "cd /x && cargo test 2>&1 | tail -20 | head -5"}),
                1,
            ),
            NormBlock::tool_error("bash", "error: build failed", 2),
            NormBlock::tool_error("bash", "error: build failed", 4),
            block(BlockKind::ToolResult, "fine", 5),
            NormBlock::tool_call("grep", json!({"pattern": "fn main"}), 6),
            NormBlock::tool_call("web_fetch", json!({"query": "rust docs"}), 6),
            NormBlock::tool_call("noargs", json!({}), 6),
        ];
        let brief = compile_ranked(&blocks, &[], 10_000);
        assert_eq!(
            brief.text,
            "[user]\nPlease fix the build (#0)\n\n\
             [assistant]\nI will look. (#1)\n* read \"src/a.rs\" x2\n* bash \"cargo test 2>&1\"\n\n\
             [tool_error] bash (#2, #4) x2\nerror: build failed\n\n\
             [assistant]\n* grep \"fn main\"\n* web_fetch \"rust docs\"\n* noargs"
        );
        assert_eq!(brief.blocks_kept, 10);
        assert_eq!(brief.blocks_dropped, 0);
    }

    #[test]
    fn tool_lines_are_capped_per_section() {
        let blocks: Vec<NormBlock> = (0..12)
            .map(|i| NormBlock::tool_call("read", json!({"path": format!("f{i}")}), 0))
            .collect();
        let text = compile_ranked(&blocks, &[], 10_000).text;
        assert!(
            text.contains("* (4 earlier tool-call entries omitted)\n* read \"f4\""),
            "{text}"
        );
        assert_eq!(text.lines().count(), 1 + 1 + MAX_TOOL_LINES_PER_SECTION);
    }

    #[test]
    fn ranking_keeps_recent_user_words_within_budget() {
        let blocks: Vec<NormBlock> = (0..200)
            .map(|i| {
                if i % 2 == 0 {
                    block(BlockKind::User, &format!("user request number {i}"), i)
                } else {
                    block(
                        BlockKind::Assistant,
                        &format!("assistant narration number {i}"),
                        i,
                    )
                }
            })
            .collect();
        let brief = compile_ranked(&blocks, &[], 600);
        assert!(brief.text.len() <= 600, "{}", brief.text.len());
        assert!(brief.text.contains("user request number 198"));
        assert!(!brief.text.contains("number 0 "));
        assert_eq!(brief.blocks_kept + brief.blocks_dropped, 200);
        assert!(brief.blocks_dropped > 150);
    }

    /// Issue 31: what a block is worth counts, not only how recent it is — an early decision
    /// with its reason and an identifier the user typed outlast later narration.
    #[test]
    fn ranking_weighs_what_a_block_is_worth() {
        let mut blocks = vec![
            block(
                BlockKind::Assistant,
                "We'll go with sqlite for the cache because it keeps working offline.",
                0,
            ),
            block(BlockKind::User, "The tile server listens on port 48213.", 1),
        ];
        blocks.extend((2..80).map(|i| {
            block(
                BlockKind::Assistant,
                &format!("Looking at the next part of the module, step {i}."),
                i,
            )
        }));
        let brief = compile_ranked(&blocks, &[], 1_200);
        assert!(
            brief.text.contains("because it keeps working offline"),
            "{}",
            brief.text
        );
        assert!(brief.text.contains("port 48213"), "{}", brief.text);
        assert!(brief.text.contains("step 79"), "{}", brief.text);
        assert!(!brief.text.contains("step 2 "), "{}", brief.text);
    }

    /// Issue 31: a long message shows its first sentence and the sentences that carry something,
    /// so a pasted spec does not eat the brief.
    #[test]
    fn long_texts_are_digested_to_what_they_carry() {
        let filler = "The page looks fine on the laptop screen. ".repeat(30);
        let text = format!(
            "Here is what I saw today. {filler}We decided to keep the old parser because the new \
             one drops comments. {filler}Ticket PLAT-4821 tracks it."
        );
        let digested = digest(&text, USER_DIGEST_CHARS);
        assert!(digested.len() <= USER_DIGEST_CHARS, "{}", digested.len());
        assert_eq!(
            digested,
            "Here is what I saw today. … We decided to keep the old parser because the new one \
             drops comments. … Ticket PLAT-4821 tracks it."
        );
        assert_eq!(digest("short", 10), "short");
    }

    #[test]
    fn words_are_limited_without_counting_stopwords() {
        let text = format!(
            "{} {}",
            "the ".repeat(300).trim(),
            "word ".repeat(300).trim()
        );
        let limited = limit_words(&text, 256);
        assert!(limited.ends_with("...(truncated)"));
        assert_eq!(limited.matches("word").count(), 256);
        assert_eq!(limit_words("short text", 256), "short text");
    }

    #[test]
    fn cap_brief_keeps_the_end_from_a_header() {
        let brief = "[user]\naaaa\n\n[assistant]\nbbbb\n\n[user]\ncccc";
        assert_eq!(cap_brief(brief, 100), brief);
        assert_eq!(
            cap_brief(brief, 20),
            "...(4 earlier lines omitted)\n\n[user]\ncccc"
        );
    }

    #[test]
    fn self_talk_is_stripped_twice_at_most() {
        assert_eq!(strip_self_talk("Okay, so the fix works"), "the fix works");
        assert_eq!(strip_self_talk("well well well done"), "well done");
        assert_eq!(strip_self_talk("Sorted."), "Sorted.");
    }
}

//! Full-text recall over the content index. The model types the query, so the query is never
//! handed to FTS5 as syntax: it is cut into words, operators and punctuation are dropped, and
//! every whitespace-separated token becomes one quoted phrase (`src/main.rs` → `"src main rs"`,
//! which keeps its words adjacent), so no input can produce an FTS5 or SQL error. All phrases
//! must match (bm25-ranked); when that finds fewer than asked for and there were several, the
//! chunks matching any of them follow (bm25-ranked). Results are chunks, with a snippet of at
//! most [`SNIPPET_MAX_CHARS`] where the query's words are densest.
//! Stop words are dropped from queries that have other words. Two bounds keep a query fast
//! whatever it matches (under 20 ms over 100,000 chunks): only the newest [`RANK_WINDOW`]
//! matches are ranked, and the total is counted up to [`TOTAL_CAP`].
//!
//! A regular expression ([`RecallMode::Regex`], as the original Unipi's `mode: "regex"`) is
//! matched case-insensitively against the newest [`REGEX_SCAN_CHUNKS`] chunks in scope, newest
//! first (a regex cannot use the full-text index; the bound keeps a search under a second).
//!
//! The all-projects scope opens every `*.sqlite` in the database directory read-only and merges
//! the hits by score. bm25 depends on each file's own statistics, so the merge is approximate,
//! which is fine for "where did I see this before". A file that cannot be read is skipped with a
//! warning rather than failing the whole search.

use std::path::Path;

use regex::{Regex, RegexBuilder};
use rusqlite::{Connection, params};

use super::{
    DbError, DocKind, RecallHit, RecallMode, RecallQuery, RecallResult, RecallScope, SessionDb,
    session_token,
};

/// The longest snippet returned, in characters, ellipses included.
pub(crate) const SNIPPET_MAX_CHARS: usize = 500;
/// The most hits one query returns, whatever limit is asked for.
pub const MAX_LIMIT: usize = 50;
/// Phrases kept from one query; more only slows the search without sharpening it.
const MAX_PHRASES: usize = 16;
/// Words kept per phrase, and characters per word.
const MAX_PHRASE_WORDS: usize = 8;
const MAX_WORD_CHARS: usize = 64;
/// Matches counted at most: counting a word in every chunk costs more than the number is worth.
pub(crate) const TOTAL_CAP: i64 = 10_000;
/// English function words dropped from a query that has other words.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "does", "for", "from",
    "had", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of",
    "on", "or", "our", "so", "that", "the", "their", "then", "there", "this", "to", "was", "we",
    "were", "what", "when", "where", "which", "who", "why", "will", "with", "you", "your",
];
/// Matches ranked per query at most (the newest ones); see `search`.
pub(crate) const RANK_WINDOW: i64 = 2_000;
/// Chunks a regex query looks at per database, the newest (about 40 MB of text at most).
pub(crate) const REGEX_SCAN_CHUNKS: i64 = 20_000;
/// The most memory a compiled regex may take: a pattern past it is refused, not run.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A regex query's pattern compiled as the original did (`new RegExp(query, "i")`):
/// case-insensitive; an invalid or oversized pattern is the error to show.
pub fn build_regex(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .case_insensitive(true)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
}

/// The FTS5 phrases of a free-text query, each quoted; empty when nothing searchable is left.
pub(crate) fn sanitize_query(text: &str) -> Vec<String> {
    let mut phrases: Vec<String> = Vec::new();
    for token in text.split_whitespace() {
        if ["AND", "OR", "NOT", "NEAR"]
            .iter()
            .any(|op| token.eq_ignore_ascii_case(op))
        {
            continue;
        }
        let words: Vec<String> = token
            .split(|c: char| !c.is_alphanumeric())
            .filter(|word| !word.is_empty())
            .take(MAX_PHRASE_WORDS)
            .map(|word| word.chars().take(MAX_WORD_CHARS).collect::<String>())
            .collect();
        if words.is_empty() {
            continue;
        }
        // Only alphanumerics and spaces remain, so the quotes cannot be escaped from.
        let phrase = format!("\"{}\"", words.join(" ").to_lowercase());
        if !phrases.contains(&phrase) {
            phrases.push(phrase);
        }
        if phrases.len() == MAX_PHRASES {
            break;
        }
    }
    // "the" and friends sharpen nothing and match almost every chunk, which makes ranking slow;
    // they stay only when the query has nothing else.
    let is_stopword = |phrase: &String| STOPWORDS.contains(&phrase.trim_matches('"'));
    if !phrases.iter().all(is_stopword) {
        phrases.retain(|phrase| !is_stopword(phrase));
    }
    phrases
}

/// Recall across every project database in `db_dir` (read-only), merged by score.
pub fn recall_all_projects(db_dir: &Path, query: &RecallQuery) -> Result<RecallResult, DbError> {
    let phrases = sanitize_query(&query.text);
    if phrases.is_empty() && query.mode == RecallMode::Words {
        return Ok(RecallResult::default());
    }
    let files = match crate::sys::files_with_extension(db_dir, "sqlite") {
        Ok(files) => files,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Ok(RecallResult::default());
        }
        Err(source) => {
            return Err(DbError::Io {
                path: db_dir.to_path_buf(),
                action: "list the database directory",
                source,
            });
        }
    };
    let dbs: Vec<SessionDb> = files
        .iter()
        .filter_map(|path| match SessionDb::open_read_only(path) {
            Ok(db) => Some(db),
            Err(err) => {
                tracing::warn!("recall: skipping {}: {err}", path.display());
                None
            }
        })
        .collect();
    let page = Page::of(query);
    let fetch = page.through();
    if query.mode == RecallMode::Regex {
        let regex = compiled(db_dir, &query.text)?;
        let mut merged = merge_over(&dbs, |db| {
            regex_search(db, &regex, None, fetch, query.expand)
        });
        merged.hits.sort_by_key(|hit| std::cmp::Reverse(hit.at_ms));
        return Ok(page.of_merged(merged));
    }
    let terms = query_terms(&phrases);
    let merged = words_search(&phrases, fetch, |expression, fetch| {
        let mut merged = merge_over(&dbs, |db| {
            search(db, expression, None, fetch, query.expand, &terms)
        });
        merged.hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| b.at_ms.cmp(&a.at_ms))
        });
        Ok(merged)
    })?;
    Ok(page.of_merged(merged))
}

/// One search over every database, the hits and totals put together (unsorted); a database
/// that fails is skipped with a warning.
fn merge_over(
    dbs: &[SessionDb],
    mut search: impl FnMut(&SessionDb) -> Result<RecallResult, DbError>,
) -> RecallResult {
    let mut merged = RecallResult::default();
    for db in dbs {
        match search(db) {
            Ok(found) => {
                merged.total += found.total;
                merged.hits.extend(found.hits);
            }
            Err(err) => tracing::warn!("recall: skipping {}: {err}", db.path().display()),
        }
    }
    merged
}

/// A word query: the chunks matching every phrase, best first, then — when they are fewer than
/// `fetch` asks for — those matching any of them, best first, so the chunk that answers is
/// reached even when the question's words all occur in some other text (a failing test's
/// output) and not together in the answer. `run` does one MATCH expression.
fn words_search(
    phrases: &[String],
    fetch: Page,
    mut run: impl FnMut(&str, Page) -> Result<RecallResult, DbError>,
) -> Result<RecallResult, DbError> {
    let mut result = RecallResult::default();
    for expression in modes(phrases) {
        let found = run(&expression, fetch)?;
        result.total = result.total.max(found.total);
        for hit in found.hits {
            let duplicate = result.hits.iter().any(|known| {
                known.session_id == hit.session_id
                    && known.entry_id == hit.entry_id
                    && known.kind == hit.kind
                    && known.snippet == hit.snippet
            });
            if !duplicate {
                result.hits.push(hit);
            }
        }
        if result.hits.len() >= fetch.limit {
            break;
        }
    }
    Ok(result)
}

/// [`SessionDb::recall`]: Session or (for `Project` and `AllProjects`) the whole file.
pub(crate) fn recall_in(db: &SessionDb, query: &RecallQuery) -> Result<RecallResult, DbError> {
    let session = match &query.scope {
        RecallScope::Session(id) => Some(id.as_str()),
        RecallScope::Project | RecallScope::AllProjects => None,
    };
    if query.mode == RecallMode::Regex {
        let regex = compiled(db.path(), &query.text)?;
        return regex_search(db, &regex, session, Page::of(query), query.expand);
    }
    let phrases = sanitize_query(&query.text);
    let terms = query_terms(&phrases);
    let page = Page::of(query);
    let found = words_search(&phrases, page.through(), |expression, fetch| {
        search(db, expression, session, fetch, query.expand, &terms)
    })?;
    Ok(page.of_merged(found))
}

#[derive(Debug, Clone, Copy)]
struct Page {
    limit: usize,
    offset: usize,
}

impl Page {
    fn of(query: &RecallQuery) -> Self {
        Page {
            limit: query.limit.clamp(1, MAX_LIMIT),
            offset: query.offset,
        }
    }

    /// Everything up to the end of this page, from the first hit.
    fn through(self) -> Page {
        Page {
            limit: self.offset + self.limit,
            offset: 0,
        }
    }

    /// This page of `result`'s hits (fetched [`Page::through`] it).
    fn of_merged(self, mut result: RecallResult) -> RecallResult {
        result.hits = result
            .hits
            .into_iter()
            .skip(self.offset)
            .take(self.limit)
            .collect();
        result
    }
}

/// The lower-case words of a query's phrases, for placing snippets.
fn query_terms(phrases: &[String]) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in phrases
        .iter()
        .flat_map(|phrase| phrase.trim_matches('"').split(' '))
    {
        if !word.is_empty() && !terms.iter().any(|known| known == word) {
            terms.push(word.to_owned());
        }
    }
    terms
}

/// The MATCH expressions to try in order: all phrases, then (with several) any of them.
fn modes(phrases: &[String]) -> Vec<String> {
    match phrases.len() {
        0 => Vec::new(),
        1 => vec![phrases[0].clone()],
        _ => vec![phrases.join(" "), phrases.join(" OR ")],
    }
}

/// One MATCH over one database. The session scope is part of the MATCH (the chunk's `session`
/// token), so FTS5 intersects instead of filtering every match. `content_fts` stays the outer
/// loop (CROSS JOIN), so FTS5 sorts by rank itself and snippet() runs only for the page. With
/// more than [`RANK_WINDOW`] matches only the newest that many are ranked: bm25 costs about a
/// microsecond per match, and for a word that common, recent content is the better answer.
fn search(
    db: &SessionDb,
    expression: &str,
    session: Option<&str>,
    page: Page,
    expand: bool,
    terms: &[String],
) -> Result<RecallResult, DbError> {
    // The query's words look only at the text column, never at the session tokens.
    let expression = match session {
        None => format!("text : ({expression})"),
        Some(id) => format!(
            "text : ({expression}) AND session : \"{}\"",
            session_token(id)
        ),
    };
    let (total, rows) = (|| -> rusqlite::Result<(usize, Vec<(RecallHit, String)>)> {
        let conn = db.conn();
        let (total, oldest_ranked) = count_matches(conn, &expression)?;
        if total == 0 {
            return Ok((0, Vec::new()));
        }
        let hits = ranked_page(conn, &expression, oldest_ranked, page, expand, terms)?;
        Ok((usize::try_from(total).unwrap_or(0), hits))
    })()
    .map_err(|e| db.sqlite(e))?;
    let hits = rows
        .into_iter()
        .map(|(hit, kind)| {
            let kind = DocKind::parse(&kind)
                .ok_or_else(|| db.bad_data(format!("unknown content kind {kind:?}")))?;
            Ok(RecallHit { kind, ..hit })
        })
        .collect::<Result<Vec<_>, DbError>>()?;
    Ok(RecallResult { hits, total })
}

/// How many chunks match (capped at [`TOTAL_CAP`]) and the oldest rowid ranked: the newest
/// window of matches, newest first, gives the total when it is not full, and its last rowid
/// bounds the ranking when it is.
fn count_matches(conn: &Connection, expression: &str) -> rusqlite::Result<(i64, i64)> {
    let newest: Vec<i64> = conn
        .prepare_cached(
            "SELECT rowid FROM content_fts WHERE content_fts MATCH ?1
             ORDER BY rowid DESC LIMIT ?2",
        )?
        .query_map(params![expression, RANK_WINDOW], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let window_full = newest.len() == usize::try_from(RANK_WINDOW).unwrap_or(usize::MAX);
    match newest.last() {
        Some(&oldest) if window_full => {
            let total: i64 = conn
                .prepare_cached(
                    "SELECT count(*) FROM (
                         SELECT 1 FROM content_fts WHERE content_fts MATCH ?1 LIMIT ?2)",
                )?
                .query_row(params![expression, TOTAL_CAP], |row| row.get(0))?;
            Ok((total, oldest))
        }
        _ => Ok((super::to_i64(newest.len()), i64::MIN)),
    }
}

/// One page of the matches from rowid `oldest_ranked` on, best first, each with its snippet and
/// its kind as stored (parsed by the caller).
fn ranked_page(
    conn: &Connection,
    expression: &str,
    oldest_ranked: i64,
    page: Page,
    expand: bool,
    terms: &[String],
) -> rusqlite::Result<Vec<(RecallHit, String)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT d.session_id, d.entry_id, d.kind, d.tool, d.at_ms,
             COALESCE(s.project_dir, ''), c.text, content_fts.rank
         FROM content_fts
         CROSS JOIN content_chunks c ON c.id = content_fts.rowid
         CROSS JOIN content_docs d ON d.id = c.doc_id
         LEFT JOIN sessions s ON s.session_id = d.session_id
         WHERE content_fts MATCH ?1 AND content_fts.rowid >= ?2
         ORDER BY content_fts.rank
         LIMIT ?3 OFFSET ?4",
    )?;
    stmt.query_map(
        params![
            expression,
            oldest_ranked,
            super::to_i64(page.limit),
            super::to_i64(page.offset),
        ],
        |row| {
            let rank: f64 = row.get(7)?;
            let text: String = row.get(6)?;
            let hit = RecallHit {
                session_id: row.get(0)?,
                entry_id: row.get(1)?,
                kind: DocKind::Summary,
                tool: row.get(3)?,
                snippet: if expand {
                    text.trim().to_owned()
                } else {
                    answer_snippet(&text, terms)
                },
                score: -rank,
                at_ms: row.get(4)?,
                project_dir: row.get(5)?,
            };
            Ok((hit, row.get::<_, String>(2)?))
        },
    )?
    .collect()
}

/// `pattern` compiled for a search in the database at `path` (validated by the tool already; a
/// pattern that still fails is bad input, not a database fault).
fn compiled(path: &Path, pattern: &str) -> Result<Regex, DbError> {
    build_regex(pattern).map_err(|err| DbError::BadData {
        path: path.to_path_buf(),
        detail: format!("invalid regular expression: {err}"),
    })
}

/// One regex query over one database: the newest [`REGEX_SCAN_CHUNKS`] chunks in scope, newest
/// first, each matching chunk a hit (its score the number of matches in it).
fn regex_search(
    db: &SessionDb,
    regex: &Regex,
    session: Option<&str>,
    page: Page,
    expand: bool,
) -> Result<RecallResult, DbError> {
    let token = session.map(session_token);
    let rows = (|| -> rusqlite::Result<Vec<(RecallHit, String)>> {
        let mut stmt = db.conn().prepare_cached(
            "SELECT d.session_id, d.entry_id, d.kind, d.tool, d.at_ms,
                 COALESCE(s.project_dir, ''), c.text
             FROM content_chunks c
             JOIN content_docs d ON d.id = c.doc_id
             LEFT JOIN sessions s ON s.session_id = d.session_id
             WHERE ?1 IS NULL OR c.session = ?1
             ORDER BY c.id DESC LIMIT ?2",
        )?;
        let mut rows = stmt.query(params![token, REGEX_SCAN_CHUNKS])?;
        let mut found = Vec::new();
        while let Some(row) = rows.next()? {
            let text: String = row.get(6)?;
            let Some(first) = regex.find(&text) else {
                continue;
            };
            let snippet = if expand {
                text.trim().to_owned()
            } else {
                let marked = format!(
                    "{}{MATCH_START}{}{MATCH_END}{}",
                    &text[..first.start()],
                    first.as_str(),
                    &text[first.end()..]
                );
                bound_snippet(&marked)
            };
            let hit = RecallHit {
                session_id: row.get(0)?,
                entry_id: row.get(1)?,
                kind: DocKind::Summary,
                tool: row.get(3)?,
                snippet,
                score: regex.find_iter(&text).count() as f64,
                at_ms: row.get(4)?,
                project_dir: row.get(5)?,
            };
            found.push((hit, row.get::<_, String>(2)?));
        }
        Ok(found)
    })()
    .map_err(|e| db.sqlite(e))?;
    let total = rows.len();
    let hits = rows
        .into_iter()
        .skip(page.offset)
        .take(page.limit)
        .map(|(hit, kind)| {
            let kind = DocKind::parse(&kind)
                .ok_or_else(|| db.bad_data(format!("unknown content kind {kind:?}")))?;
            Ok(RecallHit { kind, ..hit })
        })
        .collect::<Result<Vec<_>, DbError>>()?;
    Ok(RecallResult { hits, total })
}

/// The [`SNIPPET_MAX_CHARS`] of a chunk that hold the most of the query's `terms`, whitespace
/// collapsed, with ellipses where it was cut: the window starts a little before the first term
/// of the densest run, so the sentence that answers (usually right after the words it was asked
/// with) is shown, not only the words. A term matches a word it begins (`fix` → `fixed`), as the
/// porter-stemmed index does.
fn answer_snippet(text: &str, terms: &[String]) -> String {
    let collapsed: Vec<char> = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .collect();
    if collapsed.len() <= SNIPPET_MAX_CHARS {
        return collapsed.into_iter().collect();
    }
    let lower: String = collapsed
        .iter()
        .map(|c| c.to_lowercase().next().unwrap_or(*c))
        .collect();
    let lower: Vec<char> = lower.chars().collect();
    let lower = if lower.len() == collapsed.len() {
        lower
    } else {
        collapsed.clone() // a case mapping changed the length: match as written
    };
    let found = term_positions(&lower, terms);
    let reach = SNIPPET_MAX_CHARS * 2 / 3;
    // Most distinct terms within reach, then the tightest run, then the earliest.
    let best = found
        .iter()
        .map(|&(at, _)| {
            let mut distinct: Vec<usize> = Vec::new();
            let mut span = 0;
            for &(other, term) in found
                .iter()
                .filter(|(other, _)| (at..at + reach).contains(other))
            {
                if !distinct.contains(&term) {
                    distinct.push(term);
                    span = other - at;
                }
            }
            (
                distinct.len(),
                std::cmp::Reverse(span),
                std::cmp::Reverse(at),
            )
        })
        .max()
        .map(|(_, _, std::cmp::Reverse(at))| at);
    let marked = match best {
        Some(at) => {
            let mut marked: String = collapsed[..at].iter().collect();
            marked.push(MATCH_START);
            marked.extend(&collapsed[at..]);
            marked
        }
        None => collapsed.iter().collect(),
    };
    bound_snippet_at(&marked, 5)
}

/// Where each term starts a word in `text` (char offsets), with the term's index.
fn term_positions(text: &[char], terms: &[String]) -> Vec<(usize, usize)> {
    let terms: Vec<Vec<char>> = terms.iter().map(|term| term.chars().collect()).collect();
    let mut found = Vec::new();
    for at in 0..text.len() {
        if at > 0 && text[at - 1].is_alphanumeric() {
            continue;
        }
        for (index, term) in terms.iter().enumerate() {
            if !term.is_empty() && text[at..].starts_with(term) {
                found.push((at, index));
            }
        }
    }
    found
}

/// Marks the match in snippet() output (private-use characters, removed again here) so the
/// bounded snippet can be centred on it.
const MATCH_START: char = '\u{E000}';
const MATCH_END: char = '\u{E001}';

/// Whitespace collapsed to single spaces, then, if longer than [`SNIPPET_MAX_CHARS`], a window
/// that starts a third of the budget before the first match, with ellipses where it was cut.
fn bound_snippet(raw: &str) -> String {
    bound_snippet_at(raw, 3)
}

/// [`bound_snippet`] with the window starting `1/lead` of the budget before the match.
fn bound_snippet_at(raw: &str, lead: usize) -> String {
    let collapsed = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    let match_at = collapsed
        .chars()
        .filter(|c| *c != MATCH_END)
        .position(|c| c == MATCH_START);
    let visible: Vec<char> = collapsed
        .chars()
        .filter(|c| *c != MATCH_START && *c != MATCH_END)
        .collect();
    if visible.len() <= SNIPPET_MAX_CHARS {
        return visible.into_iter().collect();
    }
    let budget = SNIPPET_MAX_CHARS - 2;
    let start = match_at
        .map_or(0, |at| at.saturating_sub(budget / lead))
        .min(visible.len() - budget);
    let end = start + budget;
    let mut out = String::with_capacity(SNIPPET_MAX_CHARS * 2);
    if start > 0 {
        out.push('…');
    }
    out.extend(&visible[start..end]);
    if end < visible.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(before: &str, word: &str, after: &str) -> String {
        format!("{before}{MATCH_START}{word}{MATCH_END}{after}")
    }

    #[test]
    fn snippet_window_follows_the_match() {
        let long = "x ".repeat(400);
        let table = [
            // (raw, starts with ellipsis, ends with ellipsis)
            (marked("a\n\tb ", "hit", " c"), false, false),
            (marked("", "hit", &long), false, true),
            (marked(&long, "hit", ""), true, false),
            (marked(&long, "hit", &long), true, true),
            (long.clone(), false, true),
        ];
        for (raw, leading, trailing) in table {
            let snippet = bound_snippet(&raw);
            assert!(snippet.chars().count() <= SNIPPET_MAX_CHARS, "{snippet}");
            assert_eq!(snippet.starts_with('…'), leading, "{snippet}");
            assert_eq!(snippet.ends_with('…'), trailing, "{snippet}");
            assert!(!snippet.contains([MATCH_START, MATCH_END, '\n', '\t']));
            if raw.contains(MATCH_START) {
                assert!(snippet.contains("hit"), "{snippet}");
            }
        }
        assert_eq!(bound_snippet(&marked("a\n\tb ", "hit", " c")), "a b hit c");
        // The match sits a third into the window, not at its edge.
        let centred = bound_snippet(&marked(&long, "hit", &long));
        let at = centred.find("hit").unwrap_or_default();
        let third = SNIPPET_MAX_CHARS / 3;
        assert!((third - 20..third + 20).contains(&at), "{at}");
    }
}

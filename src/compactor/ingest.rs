//! Ingestion: the main Pi's session file, read incrementally into the session database, so
//! `session_recall` finds what was said and done even after a compaction took it out of the
//! context. After each turn the file is read from the byte offset the database remembers (only
//! complete lines; a file that shrank was replaced or truncated and is read again from the start,
//! which the index tolerates because documents are idempotent per entry), its entries become
//! [`IndexDoc`]s (user and assistant text, tool results, Pi's own compaction summaries) and
//! [`NewEvent`]s (tool calls, files read, edited and written, errors, the user's decisions).
//!
//! The database connection is `Send` but not `Sync`, and SQLite calls block, so one dedicated
//! thread owns it ([`DbWorker`]): the async side sends it closures and awaits their answers, and
//! nothing blocking ever runs on the runtime's workers.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use anyhow::{Context as _, anyhow};
use regex::Regex;
use serde_json::Value;

use super::entries::{Block, EntryKind, Message, Role, SessionEntry, parse_entry};
use super::normalize::{error_line, is_recall_tool, literal_regex};
use crate::sessiondb::{DocKind, EventKind, IndexDoc, NewEvent, Recovered, SessionDb, SessionMeta};

/// The `details.compactor` value of summaries this workbench made: they are indexed when they
/// are recorded, so ingestion skips them.
pub(crate) const OWN_COMPACTOR: &str = "unipi-tui";
/// The most of one tool result that is indexed (a 5 MB `cat` is not worth 5 MB of index).
pub(crate) const MAX_DOC_CHARS: usize = 64 * 1024;
/// The most of one event's data (a path, a command, an error line).
const MAX_EVENT_CHARS: usize = 300;

/// A closure run on the database thread.
type DbJob = Box<dyn FnOnce(&SessionDb) + Send>;

/// The thread that owns the session database. Cheap to clone; the thread ends when the last
/// clone is dropped.
#[derive(Clone, Debug)]
pub(crate) struct DbWorker {
    jobs: std::sync::mpsc::Sender<DbJob>,
    health: Arc<FileHealth>,
}

/// What the database thread learned about the file while serving jobs.
#[derive(Debug, Default)]
struct FileHealth {
    /// Bumped each time a damaged file was replaced by a fresh (empty) one.
    replaced: AtomicU64,
    /// Why the file cannot be written, once a write failed for that reason.
    unwritable: Mutex<Option<String>>,
}

impl DbWorker {
    /// Opens (or creates, or recovers) the database at `path` on a new thread. `recovered` says
    /// when a corrupt file was moved aside.
    pub(crate) fn open(path: &Path) -> anyhow::Result<(DbWorker, Option<Recovered>)> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (jobs, queue) = std::sync::mpsc::channel::<DbJob>();
        let db_path = path.to_path_buf();
        let health = Arc::new(FileHealth::default());
        let served = Arc::clone(&health);
        std::thread::Builder::new()
            .name("unipi-sessiondb".into())
            .spawn(move || match SessionDb::open(&db_path) {
                Ok(opened) => {
                    let _ = ready_tx.send(Ok(opened.recovered));
                    serve(opened.db, &queue, Some(&db_path), &served);
                }
                Err(err) => {
                    let _ = ready_tx.send(Err(err.to_string()));
                }
            })
            .context("cannot start the session database thread")?;
        let recovered = ready_rx
            .recv()
            .map_err(|_| anyhow!("the session database thread stopped while opening"))?
            .map_err(|err| anyhow!(err))?;
        Ok((DbWorker { jobs, health }, recovered))
    }

    /// A worker around an already open database (tests use an in-memory one).
    #[cfg(test)]
    pub(crate) fn from_db(db: SessionDb) -> anyhow::Result<DbWorker> {
        let (jobs, queue) = std::sync::mpsc::channel::<DbJob>();
        let health = Arc::new(FileHealth::default());
        let served = Arc::clone(&health);
        std::thread::Builder::new()
            .name("unipi-sessiondb".into())
            .spawn(move || serve(db, &queue, None, &served))
            .context("cannot start the session database thread")?;
        Ok(DbWorker { jobs, health })
    }

    /// How many times a file found damaged while open was replaced by a fresh, empty one: the
    /// owner rebuilds the index when it changes.
    pub(crate) fn replacements(&self) -> u64 {
        self.health.replaced.load(Ordering::Relaxed)
    }

    /// Why the file cannot be written, once a write failed for that reason (recall would only
    /// search stale content then).
    pub(crate) fn unwritable(&self) -> Option<String> {
        self.health
            .unwritable
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Runs `job` on the database thread and waits for its value, blocking this thread (at
    /// start-up, before the runtime's work begins).
    pub(crate) fn run_blocking<T: Send + 'static>(
        &self,
        job: impl FnOnce(&SessionDb) -> T + Send + 'static,
    ) -> anyhow::Result<T> {
        let (answer, answered) = std::sync::mpsc::channel();
        self.jobs
            .send(Box::new(move |db| {
                let _ = answer.send(job(db));
            }))
            .map_err(|_| anyhow!("the session database thread has stopped"))?;
        answered
            .recv()
            .map_err(|_| anyhow!("the session database job failed (see the log)"))
    }

    /// Runs `job` on the database thread and returns its value.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce(&SessionDb) -> T + Send + 'static,
    ) -> anyhow::Result<T> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        self.jobs
            .send(Box::new(move |db| {
                let _ = answer.send(job(db));
            }))
            .map_err(|_| anyhow!("the session database thread has stopped"))?;
        answered
            .await
            .map_err(|_| anyhow!("the session database job failed (see the log)"))
    }
}

/// Runs jobs until every sender is gone. A panicking job loses its answer, not the thread.
/// Runs the jobs in order. When one finds the file damaged (it opened, but a page deeper in is
/// not readable), the connection is closed, the file moved aside and a fresh database takes its
/// place for the jobs that follow — the damaged file is kept for inspection.
fn serve(
    db: SessionDb,
    queue: &std::sync::mpsc::Receiver<DbJob>,
    path: Option<&Path>,
    health: &FileHealth,
) {
    let mut db = Some(db);
    while let Ok(job) = queue.recv() {
        let Some(current) = db.as_ref() else {
            // No database (replacing it failed): the job's answer channel closes unanswered.
            drop(job);
            continue;
        };
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(current)));
        if outcome.is_err() {
            tracing::error!("a session database job panicked");
        }
        if let Some(reason) = current.unwritable() {
            let mut unwritable = health
                .unwritable
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if unwritable.is_none() {
                tracing::warn!("the session database cannot be written any more: {reason}");
                *unwritable = Some(reason);
            }
        }
        let (Some(reason), Some(path)) = (current.take_damage(), path) else {
            continue;
        };
        // Closed first, so no connection writes to the file while it moves.
        drop(db.take());
        match SessionDb::replace_corrupt(path, &reason) {
            Ok(opened) => {
                db = Some(opened.db);
                health.replaced.fetch_add(1, Ordering::Relaxed);
            }
            Err(err) => tracing::error!("cannot replace the damaged session database: {err}"),
        }
    }
}

/// What one ingestion pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct IngestReport {
    pub entries: usize,
    pub events: usize,
    pub chunks: usize,
    /// The file was shorter than the stored offset and was read again from the start.
    pub restarted: bool,
    pub offset: u64,
}

/// Reads what was appended to `meta`'s session file since the last pass and stores it. Runs on
/// the database thread (it blocks). A file that does not exist yet (Pi writes it with the first
/// reply) has nothing to read.
pub(crate) fn ingest_session_file(
    db: &SessionDb,
    meta: &SessionMeta,
) -> anyhow::Result<IngestReport> {
    let Some(file) = meta.session_file.as_deref() else {
        return Ok(IngestReport::default());
    };
    if !Path::new(file).exists() {
        return Ok(IngestReport::default());
    }
    let offset = db.ingest_offset(file)?;
    let appended = read_appended(Path::new(file), offset)?;
    let entries: Vec<SessionEntry> = appended
        .lines
        .iter()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|value| parse_entry(&value))
        .collect();
    let extracted = extract(&entries);
    db.upsert_session(meta)?;
    let mut events = 0;
    for event in &extracted.events {
        if db.insert_event(&meta.session_id, event)? {
            events += 1;
        }
    }
    let chunks = db.index_many(&meta.session_id, &extracted.docs)?;
    db.set_ingest_offset(file, appended.next_offset)?;
    Ok(IngestReport {
        entries: entries.len(),
        events,
        chunks,
        restarted: appended.restarted,
        offset: appended.next_offset,
    })
}

/// The complete lines appended to a file after `offset`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Appended {
    pub lines: Vec<String>,
    /// Where the next pass starts: just after the last complete line.
    pub next_offset: u64,
    /// The file was shorter than `offset` (replaced or truncated) and was read from the start.
    pub restarted: bool,
}

/// Reads the complete lines of `path` after byte `offset`. A half-written last line is left for
/// the next pass; a file shorter than `offset` is read from the start.
pub(crate) fn read_appended(path: &Path, offset: u64) -> anyhow::Result<Appended> {
    let mut file = std::fs::File::open(path)
        .with_context(|| format!("cannot open the Pi session file {}", path.display()))?;
    let len = file
        .metadata()
        .with_context(|| format!("cannot stat {}", path.display()))?
        .len();
    let restarted = len < offset;
    let start = if restarted { 0 } else { offset };
    file.seek(SeekFrom::Start(start))
        .with_context(|| format!("cannot seek in {}", path.display()))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let lines = String::from_utf8_lossy(&bytes[..complete])
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(str::to_owned)
        .collect();
    Ok(Appended {
        lines,
        next_offset: start + complete as u64,
        restarted,
    })
}

/// What a run of entries contributes to the database.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extracted {
    pub events: Vec<NewEvent>,
    pub docs: Vec<IndexDoc>,
}

/// Events and index documents from session entries (pure: the table tests' subject).
pub fn extract(entries: &[SessionEntry]) -> Extracted {
    let mut out = Extracted::default();
    for entry in entries {
        let origin = Origin {
            entry_id: &entry.id,
            at_ms: entry.timestamp.as_deref().and_then(iso_to_ms),
        };
        match &entry.kind {
            EntryKind::Message(message) => extract_message(message, &origin, &mut out),
            EntryKind::Compaction(compaction) => {
                let ours = compaction.details.get("compactor").and_then(Value::as_str)
                    == Some(OWN_COMPACTOR);
                if !ours && !compaction.summary.trim().is_empty() {
                    out.docs
                        .push(origin.doc(DocKind::Summary, None, compaction.summary.clone()));
                }
            }
            EntryKind::CustomMessage { .. } | EntryKind::Other { .. } => {}
        }
    }
    out
}

/// The entry a document or an event comes from.
struct Origin<'a> {
    entry_id: &'a str,
    at_ms: Option<i64>,
}

impl Origin<'_> {
    fn doc(&self, kind: DocKind, tool: Option<String>, text: String) -> IndexDoc {
        IndexDoc {
            entry_id: self.entry_id.to_owned(),
            kind,
            tool,
            text: clip(&text, MAX_DOC_CHARS),
            at_ms: self.at_ms,
        }
    }

    fn event(&self, kind: EventKind, priority: u8, data: String) -> NewEvent {
        NewEvent {
            kind,
            priority,
            data: clip(data.trim(), MAX_EVENT_CHARS),
            entry_id: Some(self.entry_id.to_owned()),
        }
    }
}

/// One message's events (decisions, tool calls, errors, commands) and its document.
fn extract_message(message: &Message, origin: &Origin, out: &mut Extracted) {
    let text = message.text();
    match &message.role {
        Role::User => {
            for line in decision_lines(&text) {
                out.events.push(origin.event(EventKind::Decision, 3, line));
            }
            if !text.trim().is_empty() {
                out.docs.push(origin.doc(DocKind::User, None, text));
            }
        }
        Role::Assistant => {
            let mut searchable = text;
            for block in &message.content {
                if let Block::ToolCall {
                    name, arguments, ..
                } = block
                {
                    out.events.extend(
                        tool_call_events(name, arguments)
                            .into_iter()
                            .map(|(kind, priority, data)| origin.event(kind, priority, data)),
                    );
                    push_call_text(&mut searchable, name, arguments);
                }
            }
            if !searchable.trim().is_empty() {
                out.docs
                    .push(origin.doc(DocKind::Assistant, None, searchable));
            }
        }
        // Recall's own answers are copies of older content: indexed, every later search would
        // find them again (and more of them each time), so they are never indexed.
        Role::ToolResult if message.tool_name.as_deref().is_some_and(is_recall_tool) => {}
        Role::ToolResult => {
            let tool = message.tool_name.clone();
            if message.is_error {
                let name = tool.as_deref().unwrap_or("tool");
                let line = error_line(&text);
                out.events
                    .push(origin.event(EventKind::Error, 4, format!("{name}: {line}")));
            }
            if !text.trim().is_empty() {
                out.docs.push(origin.doc(DocKind::ToolResult, tool, text));
            }
        }
        Role::BashExecution => {
            let command = text.lines().next().unwrap_or("").trim_start_matches("$ ");
            out.events
                .push(origin.event(EventKind::Bash, 2, command.to_owned()));
            if message.is_error {
                out.events
                    .push(origin.event(EventKind::Error, 4, format!("$ {command} failed")));
            }
            out.docs
                .push(origin.doc(DocKind::ToolResult, Some("bash".to_owned()), text));
        }
        Role::Custom | Role::Other(_) => {}
    }
}

/// Appends what a tool call did to its message's searchable text — `name:` and every string
/// argument (the command, the path, a written file's content, an edit's texts) — so recall
/// finds a fact that lives only in a call. A recall call's query is left out: it is no fact.
fn push_call_text(searchable: &mut String, name: &str, arguments: &Value) {
    if is_recall_tool(name) {
        return;
    }
    let mut values = Vec::new();
    collect_strings(arguments, &mut values);
    if !searchable.is_empty() {
        searchable.push_str("\n\n");
    }
    searchable.push_str(name);
    searchable.push(':');
    for value in values {
        searchable.push('\n');
        searchable.push_str(value);
    }
}

/// Every string in `value`, depth first (an edit's `edits` list holds objects of texts).
fn collect_strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => items.iter().for_each(|item| collect_strings(item, out)),
        Value::Object(map) => map.values().for_each(|item| collect_strings(item, out)),
        _ => {}
    }
}

/// The events one tool call stands for: always the call itself, plus the file or command it
/// touches when the tool is one of Pi's built-ins.
fn tool_call_events(name: &str, arguments: &Value) -> Vec<(EventKind, u8, String)> {
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|key| arguments.get(*key).and_then(Value::as_str))
            .map(str::to_owned)
    };
    let path = text(&["path", "file_path", "filePath"]);
    let mut events = vec![(EventKind::ToolCall, 1, tool_call_label(name, arguments))];
    match (name, path) {
        ("read", Some(path)) => events.push((EventKind::FileRead, 2, path)),
        ("edit", Some(path)) => events.push((EventKind::FileEdit, 3, path)),
        ("write", Some(path)) => events.push((EventKind::FileWrite, 3, path)),
        ("bash", _) => {
            if let Some(command) = text(&["command"]) {
                if GIT_CHANGE.is_match(&command) {
                    events.push((EventKind::Git, 3, command.clone()));
                }
                events.push((EventKind::Bash, 2, command));
            }
        }
        _ => {}
    }
    events
}

/// `name arg=value …` with short values, for the tool-call event.
fn tool_call_label(name: &str, arguments: &Value) -> String {
    let mut label = name.to_owned();
    if let Some(object) = arguments.as_object() {
        for (key, value) in object.iter().take(3) {
            let value = match value {
                Value::String(text) => text.lines().next().unwrap_or("").to_owned(),
                other => other.to_string(),
            };
            label.push_str(&format!(" {key}={}", clip(&value, 80)));
        }
    }
    label
}

/// Git commands that change history (worth remembering), not the ones that only look.
static GIT_CHANGE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"\bgit\s+(commit|merge|rebase|reset|checkout|switch|push|cherry-pick|revert|tag)\b",
    )
});

/// Lines of a user message that read like a decision or a standing instruction.
static DECISION: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"(?i)\b(let's|let us|we will|we'll|decided?|instead of|don't|do not|never|always|prefer|must|should not|shouldn't|make sure|use \w+ (for|instead))\b",
    )
});

fn decision_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| line.len() >= 8 && DECISION.is_match(line))
        .take(5)
        .map(str::to_owned)
        .collect()
}

/// `text` cut to at most `max` characters (at a character boundary), marked when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Milliseconds since the epoch of an RFC 3339 UTC time as Pi writes it
/// (`2026-11-30T10:12:03.456Z`); `None` for anything else.
pub(crate) fn iso_to_ms(text: &str) -> Option<i64> {
    let (date, time) = text.split_once('T')?;
    let mut date_parts = date.splitn(3, '-');
    let year: i64 = date_parts.next()?.parse().ok()?;
    let month: i64 = date_parts.next()?.parse().ok()?;
    let day: i64 = date_parts.next()?.parse().ok()?;
    let time = time
        .strip_suffix('Z')
        .or_else(|| time.strip_suffix("+00:00"))?;
    let (hms, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let mut hms_parts = hms.splitn(3, ':');
    let hour: i64 = hms_parts.next()?.parse().ok()?;
    let minute: i64 = hms_parts.next()?.parse().ok()?;
    let second: i64 = hms_parts.next()?.parse().ok()?;
    let millis: i64 = format!("{:0<3}", &fraction[..fraction.len().min(3)])
        .parse()
        .ok()?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    // Howard Hinnant's days-from-civil.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_table::check_table;
    use serde_json::json;

    /// A small Pi session: header, a user turn with a decision, a read, an edit, a failing bash,
    /// a bash-execution line, one of our summaries and one of Pi's.
    fn session_lines() -> Vec<Value> {
        vec![
            json!({"type": "session", "version": 3, "id": "s1", "timestamp": "2026-11-30T10:00:00.000Z", "cwd": "/w"}),
            json!({"type": "message", "id": "u1", "parentId": null, "timestamp": "2026-11-30T10:00:01.000Z",
                   "message": {"role": "user", "content": [{"type": "text", "text": "Fix the parser.\nDon't touch the lexer, it is shared."}]}}),
            json!({"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-11-30T10:00:02.500Z",
                   "message": {"role": "assistant", "content": [
                       {"type": "text", "text": "Reading it first."},
                       {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "src/parse.rs"}},
                       {"type": "toolCall", "id": "c2", "name": "edit", "arguments": {"path": "src/parse.rs", "oldText": "a", "newText": "b"}},
                       {"type": "toolCall", "id": "c3", "name": "bash", "arguments": {"command": "git commit -am fix"}}]}}),
            json!({"type": "message", "id": "t1", "parentId": "a1", "timestamp": "2026-11-30T10:00:03.000Z",
                   "message": {"role": "toolResult", "toolCallId": "c3", "toolName": "bash", "isError": true,
                               "content": [{"type": "text", "text": "\nfatal: not a git repository"}]}}),
            json!({"type": "message", "id": "b1", "parentId": "t1",
                   "message": {"role": "bashExecution", "command": "ls", "output": "a\nb", "exitCode": 0}}),
            json!({"type": "compaction", "id": "k1", "parentId": "b1", "summary": "ours", "firstKeptEntryId": "u1",
                   "tokensBefore": 10, "details": {"compactor": "unipi-tui"}}),
            json!({"type": "compaction", "id": "k2", "parentId": "k1", "summary": "Pi's summary", "firstKeptEntryId": "u1",
                   "tokensBefore": 10}),
        ]
    }

    fn entries() -> Vec<SessionEntry> {
        session_lines().iter().filter_map(parse_entry).collect()
    }

    #[test]
    fn extraction_finds_docs_and_events() {
        let extracted = extract(&entries());
        let docs: Vec<(String, DocKind, Option<String>)> = extracted
            .docs
            .iter()
            .map(|d| (d.entry_id.clone(), d.kind, d.tool.clone()))
            .collect();
        assert_eq!(
            docs,
            [
                ("u1".to_owned(), DocKind::User, None),
                ("a1".to_owned(), DocKind::Assistant, None),
                (
                    "t1".to_owned(),
                    DocKind::ToolResult,
                    Some("bash".to_owned())
                ),
                (
                    "b1".to_owned(),
                    DocKind::ToolResult,
                    Some("bash".to_owned())
                ),
                ("k2".to_owned(), DocKind::Summary, None),
            ]
        );
        assert_eq!(extracted.docs[0].at_ms, Some(1_796_032_801_000));
        let events: Vec<(EventKind, String)> = extracted
            .events
            .iter()
            .map(|e| (e.kind, e.data.clone()))
            .collect();
        let want = [
            (EventKind::Decision, "Don't touch the lexer, it is shared."),
            (EventKind::ToolCall, "read path=src/parse.rs"),
            (EventKind::FileRead, "src/parse.rs"),
            (
                EventKind::ToolCall,
                "edit newText=b oldText=a path=src/parse.rs",
            ),
            (EventKind::FileEdit, "src/parse.rs"),
            (EventKind::ToolCall, "bash command=git commit -am fix"),
            (EventKind::Git, "git commit -am fix"),
            (EventKind::Bash, "git commit -am fix"),
            (EventKind::Error, "bash: fatal: not a git repository"),
            (EventKind::Bash, "ls"),
        ];
        let want: Vec<(EventKind, String)> =
            want.iter().map(|(k, d)| (*k, (*d).to_owned())).collect();
        assert_eq!(events, want);
    }

    #[test]
    fn iso_times_parse_and_bad_ones_do_not() {
        let cases = [
            ("1970-01-01T00:00:00Z", Some(0)),
            ("1970-01-01T00:00:01.5Z", Some(1_500)),
            ("2000-03-01T00:00:00.000Z", Some(951_868_800_000)),
            ("2026-11-30T10:00:01.000Z", Some(1_796_032_801_000)),
            ("2026-11-30 10:00:01", None),
            ("2026-13-30T10:00:01Z", None),
            ("", None),
        ];
        check_table(cases, |text| iso_to_ms(text));
    }

    #[test]
    fn reading_appended_lines_keeps_partial_lines_and_restarts_after_truncation()
    -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, "one\ntwo\nthr")?;
        let first = read_appended(&path, 0)?;
        assert_eq!(first.lines, ["one", "two"]);
        assert_eq!(first.next_offset, 8);
        std::fs::write(&path, "one\ntwo\nthree\n")?;
        let second = read_appended(&path, first.next_offset)?;
        assert_eq!(
            (second.lines, second.restarted),
            (vec!["three".into()], false)
        );
        std::fs::write(&path, "new\n")?;
        let third = read_appended(&path, 14)?;
        assert_eq!((third.lines, third.restarted), (vec!["new".into()], true));
        assert_eq!(third.next_offset, 4);
        Ok(())
    }

    /// A file damaged after it opened: the job that meets the damage fails, the file is moved
    /// aside (kept), and the jobs after it run on a fresh database.
    #[tokio::test]
    async fn a_database_damaged_while_open_is_replaced_for_the_next_jobs() -> anyhow::Result<()> {
        use crate::sessiondb::{RecallQuery, RecallScope};
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("p.sqlite");
        let (worker, recovered) = DbWorker::open(&path)?;
        assert!(recovered.is_none());
        fn query() -> RecallQuery {
            RecallQuery {
                text: "payload".into(),
                scope: RecallScope::Project,
                limit: 5,
                offset: 0,
                mode: crate::sessiondb::RecallMode::Words,
                expand: false,
            }
        }
        worker
            .run(|db| -> anyhow::Result<()> {
                let text = "payload words ".repeat(2_000);
                for i in 0..20 {
                    let doc = IndexDoc {
                        entry_id: format!("e{i}"),
                        kind: DocKind::ToolResult,
                        tool: None,
                        text: text.clone(),
                        at_ms: None,
                    };
                    db.index_content("s", &doc)?;
                }
                Ok(())
            })
            .await??;
        // Checkpoint through a second connection, then wreck every page after the first.
        rusqlite::Connection::open(&path)?.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
        let mut bytes = std::fs::read(&path)?;
        assert!(bytes.len() > 64 * 1024);
        for byte in &mut bytes[4096..] {
            *byte = 0x5A;
        }
        std::fs::write(&path, &bytes)?;
        let damaged = worker.run(|db| db.recall(&query())).await?;
        let err = damaged.expect_err("the damage is met");
        assert!(err.is_corruption(), "{err}");
        // The next job runs on a fresh database; the damaged file was kept beside it.
        let fresh = worker.run(|db| db.recall(&query())).await??;
        assert_eq!(fresh.total, 0);
        let mut kept: Vec<String> = std::fs::read_dir(dir.path())?
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|name| name.contains(".corrupt-"))
            .map(|name| {
                name.split_once(".corrupt-")
                    .map_or(name.clone(), |(_, at)| at.to_owned())
            })
            .map(|at| at.trim_start_matches(char::is_numeric).to_owned())
            .collect();
        kept.sort();
        // The file and its WAL and shared-memory companions, as they were.
        assert_eq!(kept, ["", "-shm", "-wal"], "{kept:?}");
        assert_eq!(worker.replacements(), 1);
        Ok(())
    }

    /// Pi writes the session file with the first reply: before that there is nothing to read,
    /// and nothing is wrong.
    #[test]
    fn a_session_file_that_does_not_exist_yet_is_not_an_error() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let db = SessionDb::open_in_memory()?;
        let meta = SessionMeta {
            session_id: "new".into(),
            session_file: Some(dir.path().join("not-yet.jsonl").display().to_string()),
            project_dir: "/w".into(),
        };
        let report = ingest_session_file(&db, &meta)?;
        assert_eq!(report, IngestReport::default());
        Ok(())
    }

    #[tokio::test]
    async fn ingestion_is_incremental_and_recall_finds_the_text() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("s.jsonl");
        let lines = session_lines();
        let text = |values: &[Value]| values.iter().map(|v| format!("{v}\n")).collect::<String>();
        std::fs::write(&path, text(&lines[..3]))?;
        let worker = DbWorker::from_db(SessionDb::open_in_memory()?)?;
        let meta = SessionMeta {
            session_id: "s1".into(),
            session_file: Some(path.display().to_string()),
            project_dir: "/w".into(),
        };
        let first = {
            let meta = meta.clone();
            worker
                .run(move |db| ingest_session_file(db, &meta))
                .await??
        };
        assert_eq!(first.entries, 2);
        std::fs::write(&path, text(&lines))?;
        let second = {
            let meta = meta.clone();
            worker
                .run(move |db| ingest_session_file(db, &meta))
                .await??
        };
        assert_eq!(second.entries, 4, "only the appended entries are read");
        let hits = worker
            .run(|db| {
                db.recall(&crate::sessiondb::RecallQuery {
                    text: "lexer".into(),
                    scope: crate::sessiondb::RecallScope::Session("s1".into()),
                    limit: 5,
                    offset: 0,
                    mode: crate::sessiondb::RecallMode::Words,
                    expand: false,
                })
            })
            .await??;
        assert_eq!(hits.hits.first().map(|h| h.entry_id.as_str()), Some("u1"));
        let events = worker.run(|db| db.events("s1", 50)).await??;
        assert!(events.iter().any(|e| e.kind == EventKind::FileEdit));
        Ok(())
    }
    fn words(text: &str) -> crate::sessiondb::RecallQuery {
        crate::sessiondb::RecallQuery {
            text: text.into(),
            scope: crate::sessiondb::RecallScope::Session("s1".into()),
            limit: 8,
            offset: 0,
            mode: crate::sessiondb::RecallMode::Words,
            expand: false,
        }
    }

    fn message(id: &str, message: Value) -> SessionEntry {
        parse_entry(&json!({"type": "message", "id": id, "parentId": null, "message": message}))
            .unwrap_or_else(|| panic!("entry {id}"))
    }

    /// Issue 31: `session_recall`'s answers (and its queries) are never indexed, so asking the
    /// same question again gives the same answer however often it was asked — while what a tool
    /// call carried (a command, a written file's content, an edit's text) is found.
    #[test]
    fn recall_never_finds_its_own_answers_and_finds_tool_call_arguments() -> anyhow::Result<()> {
        let db = SessionDb::open_in_memory()?;
        let work = [
            message(
                "a1",
                json!({"role": "assistant", "content": [
                    {"type": "text", "text": "Adding the setting."},
                    {"type": "toolCall", "id": "c1", "name": "write", "arguments":
                        {"path": "config/tiles.toml", "content": "[tiles]\nport = 48213\n"}},
                    {"type": "toolCall", "id": "c2", "name": "bash", "arguments":
                        {"command": "ssh deploy@quokka-3.eu.internal uptime"}}]}),
            ),
            message(
                "t1",
                json!({"role": "toolResult", "toolCallId": "c1", "toolName": "write",
                       "content": [{"type": "text", "text": "Successfully wrote 24 bytes"}]}),
            ),
        ];
        db.index_many("s1", &extract(&work).docs)?;
        let first = db.recall(&words("tiles port"))?;
        assert_eq!(first.total, 1, "{first:?}");
        assert!(first.hits[0].snippet.contains("port = 48213"), "{first:?}");
        assert_eq!(db.recall(&words("quokka deploy"))?.total, 1);

        // The model asks, gets its answer, and the call and the answer land in the session.
        for round in 0..3 {
            let asked = [
                message(
                    &format!("r{round}"),
                    json!({"role": "assistant", "content": [
                        {"type": "toolCall", "id": format!("q{round}"), "name": "session_recall",
                         "arguments": {"query": "tiles port"}},
                        {"type": "toolCall", "id": format!("v{round}"), "name": "vcc_recall",
                         "arguments": {"query": "tiles port"}}]}),
                ),
                message(
                    &format!("a{round}"),
                    json!({"role": "toolResult", "toolCallId": format!("q{round}"),
                           "toolName": "session_recall", "content": [{"type": "text",
                           "text": format!("Found 1 results for \"tiles port\": {}", first.hits[0].snippet)}]}),
                ),
                message(
                    &format!("b{round}"),
                    json!({"role": "toolResult", "toolCallId": format!("v{round}"),
                           "toolName": "vcc_recall", "content": [{"type": "text",
                           "text": "tiles port = 48213"}]}),
                ),
            ];
            let extracted = extract(&asked);
            assert!(extracted.docs.is_empty(), "{:?}", extracted.docs);
            db.index_many("s1", &extracted.docs)?;
            assert_eq!(db.recall(&words("tiles port"))?, first, "round {round}");
        }
        Ok(())
    }
}

//! The project-scoped session database: one SQLite file per project (see [`project_db_path`])
//! holding session metadata, the event log (tool calls, files touched, errors, decisions), the
//! compaction records with their manifests, the ingest offsets of Pi's session files and an FTS5
//! index over session content that `session_recall` searches ([`recall`]). One file per project
//! keeps recall local by default and lets "all projects" be a merge over files
//! ([`recall_all_projects`]) rather than a shared database every workbench writes to.
//!
//! A [`SessionDb`] is one connection (WAL, busy timeout, statements from the connection's prepared
//! statement cache); it is `Send` but not `Sync`, so its owner keeps it on one task or behind a
//! mutex. Opening never fails on a damaged file: it is moved aside and a fresh one created, and
//! the caller learns about it through [`Opened::recovered`] to tell the user.

mod chunk;
mod paths;
pub mod recall;
pub mod schema;
mod sidekick;
#[cfg(test)]
pub(crate) mod test_support;

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::sys::now_ms;
pub(crate) use chunk::{CHUNK_BYTES, chunk_text};
pub use paths::{default_db_dir, project_db_path};
pub use recall::recall_all_projects;
use schema::OpenFailure;
pub use sidekick::{SidekickCall, SidekickTotals};

/// Events kept per session; past it the lowest-priority, oldest one is evicted.
pub(crate) const MAX_EVENTS_PER_SESSION: i64 = 1_000;
/// An event equal (kind and data) to one of this many latest events of its session is skipped.
pub(crate) const DEDUP_WINDOW: i64 = 5;

/// An open session database.
#[derive(Debug)]
pub struct SessionDb {
    conn: Connection,
    path: PathBuf,
    /// The first "the file is damaged" error met while open (see [`SessionDb::take_damage`]).
    damage: std::cell::RefCell<Option<String>>,
    /// The first "cannot write" error met while open (see [`SessionDb::unwritable`]).
    unwritable: std::cell::RefCell<Option<String>>,
}

/// The result of [`SessionDb::open`]: the database, and whether a corrupt file was replaced.
#[derive(Debug)]
pub struct Opened {
    pub db: SessionDb,
    pub recovered: Option<Recovered>,
}

/// A corrupt database file moved aside so a fresh one could be created.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovered {
    pub moved_to: PathBuf,
    pub reason: String,
}

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("session database {}: cannot {action}: {source}", .path.display())]
    Io {
        path: PathBuf,
        action: &'static str,
        source: std::io::Error,
    },
    #[error("session database {}: {source}", .path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("session database {}: migration to schema version {version} failed: {source}", .path.display())]
    Migration {
        path: PathBuf,
        version: i64,
        source: rusqlite::Error,
    },
    #[error(
        "session database {}: schema version {found} is newer than this build knows \
         ({supported}); left untouched",
        .path.display()
    )]
    NewerSchema {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error(
        "session database {} cannot be written (a read-only file or directory, or a read-only \
         file system?): {reason}",
        .path.display()
    )]
    ReadOnly { path: PathBuf, reason: String },
    #[error("session database {}: still unusable after replacing a corrupt file: {reason}", .path.display())]
    StillCorrupt { path: PathBuf, reason: String },
    #[error("session database {}: bad row: {detail}", .path.display())]
    BadData { path: PathBuf, detail: String },
}

impl DbError {
    /// Whether the file is damaged (a malformed page found by a later query; opening only reads
    /// the first page): the owner drops the connection and calls [`SessionDb::replace_corrupt`].
    pub fn is_corruption(&self) -> bool {
        match self {
            DbError::Sqlite { source, .. } | DbError::Migration { source, .. } => {
                schema::is_corruption(source)
            }
            DbError::StillCorrupt { .. } => true,
            DbError::Io { .. }
            | DbError::ReadOnly { .. }
            | DbError::NewerSchema { .. }
            | DbError::BadData { .. } => false,
        }
    }

    /// Whether the file cannot be written: recall would only ever search stale content.
    pub(crate) fn is_read_only(&self) -> bool {
        match self {
            DbError::ReadOnly { .. } => true,
            DbError::Sqlite { source, .. } | DbError::Migration { source, .. } => {
                schema::is_read_only(source)
            }
            _ => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMeta {
    pub session_id: String,
    pub session_file: Option<String>,
    pub project_dir: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    ToolCall,
    FileRead,
    FileEdit,
    FileWrite,
    Error,
    Decision,
    Bash,
    Git,
}

impl EventKind {
    pub const ALL: [EventKind; 8] = [
        EventKind::ToolCall,
        EventKind::FileRead,
        EventKind::FileEdit,
        EventKind::FileWrite,
        EventKind::Error,
        EventKind::Decision,
        EventKind::Bash,
        EventKind::Git,
    ];

    /// The name stored in the database (and shown to the model).
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::ToolCall => "tool_call",
            EventKind::FileRead => "file_read",
            EventKind::FileEdit => "file_edit",
            EventKind::FileWrite => "file_write",
            EventKind::Error => "error",
            EventKind::Decision => "decision",
            EventKind::Bash => "bash",
            EventKind::Git => "git",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewEvent {
    pub kind: EventKind,
    pub priority: u8,
    pub data: String,
    pub entry_id: Option<String>,
}

#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredEvent {
    pub id: i64,
    pub session_id: String,
    pub kind: EventKind,
    pub priority: u8,
    pub data: String,
    pub entry_id: Option<String>,
    pub at_ms: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocKind {
    User,
    Assistant,
    ToolResult,
    Summary,
}

impl DocKind {
    pub const ALL: [DocKind; 4] = [
        DocKind::User,
        DocKind::Assistant,
        DocKind::ToolResult,
        DocKind::Summary,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DocKind::User => "user",
            DocKind::Assistant => "assistant",
            DocKind::ToolResult => "tool_result",
            DocKind::Summary => "summary",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

/// One piece of session content to index (a message, a tool result, a summary).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexDoc {
    pub entry_id: String,
    pub kind: DocKind,
    pub tool: Option<String>,
    pub text: String,
    pub at_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionRecord {
    pub session_id: String,
    pub at_ms: i64,
    pub reason: String,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub messages_summarized: u64,
    pub blocks_kept: u64,
    pub blocks_dropped: u64,
    pub duration_ms: u64,
    pub summary: String,
    pub first_kept_entry_id: String,
    pub manifest_json: String,
}

/// A compaction as the database holds it: its row id and what was recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredCompaction {
    pub id: i64,
    #[serde(flatten)]
    pub record: CompactionRecord,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CompactionTotals {
    pub count: u64,
    /// Sum of `tokens_before − tokens_after` (a compaction that grew counts as zero).
    pub tokens_saved: u64,
    pub last_at_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RecallScope {
    Session(String),
    Project,
    AllProjects,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecallQuery {
    pub text: String,
    pub scope: RecallScope,
    pub limit: usize,
    pub offset: usize,
    /// How `text` is matched.
    pub mode: RecallMode,
    /// Each hit's whole chunk instead of a snippet around the match.
    pub expand: bool,
}

/// How a recall query's text is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum RecallMode {
    /// Its words, bm25-ranked (see [`recall`]).
    #[default]
    Words,
    /// A regular expression, case-insensitive, over the newest chunks, newest first
    /// ([`recall::build_regex`]).
    Regex,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecallHit {
    pub session_id: String,
    pub entry_id: String,
    pub kind: DocKind,
    pub tool: Option<String>,
    pub snippet: String,
    /// Higher is better (bm25, negated).
    pub score: f64,
    pub at_ms: Option<i64>,
    pub project_dir: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RecallResult {
    pub hits: Vec<RecallHit>,
    /// Every matching chunk in scope, not only the page returned, counted up to
    /// [`recall::TOTAL_CAP`] (summed over files for all projects).
    pub total: usize,
}

impl SessionDb {
    /// A write transaction that takes the write lock at once (`BEGIN IMMEDIATE`): a deferred one
    /// that reads first cannot wait for another writer — under WAL its upgrade fails with
    /// `SQLITE_BUSY_SNAPSHOT`, which the busy timeout does not cover.
    fn write_transaction(&self) -> rusqlite::Result<rusqlite::Transaction<'_>> {
        rusqlite::Transaction::new_unchecked(&self.conn, rusqlite::TransactionBehavior::Immediate)
    }

    /// Opens `path` (creating it and its directory), in WAL mode, migrated to the current schema.
    /// A file that is not a database or is malformed is moved to `<name>.corrupt-<unix time>`
    /// and replaced by a fresh one; [`Opened::recovered`] says so.
    ///
    /// The database holds the user's conversations: its directory is made private (0700) and
    /// the files older versions left readable in it (0644) are tightened, and the file is
    /// created 0600 ([`schema::open_writable`]).
    pub fn open(path: &Path) -> Result<Opened, DbError> {
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            crate::sys::private_dir::make_private_dir(dir).map_err(|source| DbError::Io {
                path: path.to_path_buf(),
                action: "create its directory",
                source,
            })?;
            crate::sys::private_dir::tighten_files(dir);
        }
        let reason = match schema::open_writable(path) {
            Ok(conn) => {
                let db = SessionDb::from_conn(conn, path);
                return Ok(Opened {
                    db,
                    recovered: None,
                });
            }
            Err(OpenFailure::Corrupt(reason)) => reason,
            Err(other) => return Err(open_error(path, other)),
        };
        SessionDb::replace_corrupt(path, &reason)
    }

    /// Moves a database found corrupt while open (see [`DbError::is_corruption`]; drop the old
    /// connection first) to `<name>.corrupt-<unix time>` and opens a fresh one in its place.
    pub fn replace_corrupt(path: &Path, reason: &str) -> Result<Opened, DbError> {
        let moved_to = schema::move_aside(path).map_err(|source| DbError::Io {
            path: path.to_path_buf(),
            action: "move the corrupt file aside",
            source,
        })?;
        tracing::warn!(
            "session database {} is corrupt ({reason}); moved to {} and started a fresh one",
            path.display(),
            moved_to.display()
        );
        let conn = schema::open_writable(path).map_err(|failure| match failure {
            OpenFailure::Corrupt(reason) => DbError::StillCorrupt {
                path: path.to_path_buf(),
                reason,
            },
            other => open_error(path, other),
        })?;
        let reason = reason.to_string();
        Ok(Opened {
            db: SessionDb::from_conn(conn, path),
            recovered: Some(Recovered { moved_to, reason }),
        })
    }

    pub fn open_in_memory() -> Result<SessionDb, DbError> {
        let path = Path::new(":memory:");
        let conn = schema::open_memory().map_err(|failure| open_error(path, failure))?;
        Ok(SessionDb::from_conn(conn, path))
    }

    /// The file this database lives in (`:memory:` for an in-memory one).
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn schema_version(&self) -> Result<i64, DbError> {
        schema::user_version(&self.conn).map_err(|e| self.sqlite(e))
    }

    /// Creates the session's row or updates its file and directory (the start time stays).
    pub fn upsert_session(&self, meta: &SessionMeta) -> Result<(), DbError> {
        self.conn
            .prepare_cached(
                "INSERT INTO sessions (session_id, project_dir, started_at_ms, session_file)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (session_id) DO UPDATE SET
                     project_dir = excluded.project_dir,
                     session_file = COALESCE(excluded.session_file, sessions.session_file)",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    meta.session_id,
                    meta.project_dir,
                    to_i64(now_ms()),
                    meta.session_file
                ])
            })
            .map_err(|e| self.sqlite(e))?;
        Ok(())
    }

    /// Appends an event; `false` when it repeats one of the session's last [`DEDUP_WINDOW`]
    /// events (same kind and data). At [`MAX_EVENTS_PER_SESSION`] the lowest-priority, oldest
    /// event makes room.
    pub fn insert_event(&self, session_id: &str, event: &NewEvent) -> Result<bool, DbError> {
        let hash = data_hash(&event.data);
        let kind = event.kind.as_str();
        let inserted = (|| -> rusqlite::Result<bool> {
            let tx = self.write_transaction()?;
            let repeated: bool = tx
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM (
                         SELECT kind, data_hash FROM events WHERE session_id = ?1
                         ORDER BY id DESC LIMIT ?2
                     ) WHERE kind = ?3 AND data_hash = ?4)",
                )?
                .query_row(params![session_id, DEDUP_WINDOW, kind, hash], |row| {
                    row.get(0)
                })?;
            if repeated {
                return Ok(false);
            }
            let count: i64 = tx
                .prepare_cached("SELECT count(*) FROM events WHERE session_id = ?1")?
                .query_row([session_id], |row| row.get(0))?;
            if count >= MAX_EVENTS_PER_SESSION {
                tx.prepare_cached(
                    "DELETE FROM events WHERE id IN (
                         SELECT id FROM events WHERE session_id = ?1
                         ORDER BY priority ASC, id ASC LIMIT ?2)",
                )?
                .execute(params![session_id, count - MAX_EVENTS_PER_SESSION + 1])?;
            }
            let at = to_i64(now_ms());
            tx.prepare_cached(
                "INSERT INTO events (session_id, kind, priority, data, data_hash, at_ms, entry_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                session_id,
                kind,
                event.priority,
                event.data,
                hash,
                at,
                event.entry_id
            ])?;
            tx.prepare_cached("UPDATE sessions SET last_event_at_ms = ?2 WHERE session_id = ?1")?
                .execute(params![session_id, at])?;
            tx.commit()?;
            Ok(true)
        })()
        .map_err(|e| self.sqlite(e))?;
        Ok(inserted)
    }

    /// The session's latest `limit` events, oldest first.
    #[cfg(test)]
    pub(crate) fn events(
        &self,
        session_id: &str,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, DbError> {
        let rows = (|| -> rusqlite::Result<Vec<(StoredEvent, String)>> {
            let mut stmt = self.conn.prepare_cached(
                "SELECT * FROM (
                     SELECT id, session_id, kind, priority, data, entry_id, at_ms FROM events
                     WHERE session_id = ?1 ORDER BY id DESC LIMIT ?2
                 ) ORDER BY id ASC",
            )?;
            let rows = stmt.query_map(params![session_id, to_i64(limit)], |row| {
                let event = StoredEvent {
                    id: row.get(0)?,
                    session_id: row.get(1)?,
                    kind: EventKind::ToolCall,
                    priority: row.get(3)?,
                    data: row.get(4)?,
                    entry_id: row.get(5)?,
                    at_ms: row.get(6)?,
                };
                Ok((event, row.get::<_, String>(2)?))
            })?;
            rows.collect()
        })()
        .map_err(|e| self.sqlite(e))?;
        rows.into_iter()
            .map(|(event, kind)| {
                let kind = EventKind::parse(&kind)
                    .ok_or_else(|| self.bad_data(format!("unknown event kind {kind:?}")))?;
                Ok(StoredEvent { kind, ..event })
            })
            .collect()
    }

    /// Indexes one document for recall, split into chunks of about [`CHUNK_BYTES`]; returns the
    /// number of chunks. Indexing the same (session, entry id, kind) again replaces the earlier
    /// chunks, and costs nothing when the text is unchanged.
    pub fn index_content(&self, session_id: &str, doc: &IndexDoc) -> Result<usize, DbError> {
        self.index_many(session_id, std::slice::from_ref(doc))
    }

    /// [`SessionDb::index_content`] for many documents in one transaction (ingesting a session
    /// file); returns the total number of chunks.
    pub fn index_many(&self, session_id: &str, docs: &[IndexDoc]) -> Result<usize, DbError> {
        (|| -> rusqlite::Result<usize> {
            let tx = self.write_transaction()?;
            let mut chunks = 0;
            for doc in docs {
                chunks += index_doc(&tx, session_id, doc)?;
            }
            tx.commit()?;
            Ok(chunks)
        })()
        .map_err(|e| self.sqlite(e))
    }

    /// How far `session_file` has been ingested (bytes); 0 when never.
    pub fn ingest_offset(&self, session_file: &str) -> Result<u64, DbError> {
        let offset: Option<i64> = self
            .conn
            .prepare_cached("SELECT byte_offset FROM ingest_offsets WHERE session_file = ?1")
            .and_then(|mut stmt| stmt.query_row([session_file], |row| row.get(0)).optional())
            .map_err(|e| self.sqlite(e))?;
        Ok(offset.map_or(0, |o| u64::try_from(o).unwrap_or(0)))
    }

    pub fn set_ingest_offset(&self, session_file: &str, offset: u64) -> Result<(), DbError> {
        self.conn
            .prepare_cached(
                "INSERT INTO ingest_offsets (session_file, byte_offset, updated_at_ms)
                 VALUES (?1, ?2, ?3)
                 ON CONFLICT (session_file) DO UPDATE SET
                     byte_offset = excluded.byte_offset, updated_at_ms = excluded.updated_at_ms",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![session_file, to_i64(offset), to_i64(now_ms())])
            })
            .map_err(|e| self.sqlite(e))?;
        Ok(())
    }

    /// Stores a compaction's statistics, summary and manifest, and indexes the summary for
    /// recall (entry id `compaction:<id>`); returns the record's id.
    pub fn record_compaction(&self, record: &CompactionRecord) -> Result<i64, DbError> {
        (|| -> rusqlite::Result<i64> {
            let tx = self.write_transaction()?;
            tx.prepare_cached(
                "INSERT INTO compactions (session_id, at_ms, reason, tokens_before, tokens_after,
                     messages_summarized, blocks_kept, blocks_dropped, duration_ms, summary,
                     first_kept_entry_id, manifest_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )?
            .execute(params![
                record.session_id,
                record.at_ms,
                record.reason,
                to_i64(record.tokens_before),
                to_i64(record.tokens_after),
                to_i64(record.messages_summarized),
                to_i64(record.blocks_kept),
                to_i64(record.blocks_dropped),
                to_i64(record.duration_ms),
                record.summary,
                record.first_kept_entry_id,
                record.manifest_json,
            ])?;
            let id = tx.last_insert_rowid();
            let summary = IndexDoc {
                entry_id: format!("compaction:{id}"),
                kind: DocKind::Summary,
                tool: None,
                text: record.summary.clone(),
                at_ms: Some(record.at_ms),
            };
            index_doc(&tx, &record.session_id, &summary)?;
            tx.commit()?;
            Ok(id)
        })()
        .map_err(|e| self.sqlite(e))
    }

    pub fn last_compaction(&self, session_id: &str) -> Result<Option<StoredCompaction>, DbError> {
        self.conn
            .prepare_cached(
                "SELECT id, session_id, at_ms, reason, tokens_before, tokens_after,
                     messages_summarized, blocks_kept, blocks_dropped, duration_ms, summary,
                     first_kept_entry_id, manifest_json
                 FROM compactions WHERE session_id = ?1 ORDER BY id DESC LIMIT 1",
            )
            .and_then(|mut stmt| {
                stmt.query_row([session_id], |row| {
                    Ok(StoredCompaction {
                        id: row.get(0)?,
                        record: CompactionRecord {
                            session_id: row.get(1)?,
                            at_ms: row.get(2)?,
                            reason: row.get(3)?,
                            tokens_before: to_u64(row.get(4)?),
                            tokens_after: to_u64(row.get(5)?),
                            messages_summarized: to_u64(row.get(6)?),
                            blocks_kept: to_u64(row.get(7)?),
                            blocks_dropped: to_u64(row.get(8)?),
                            duration_ms: to_u64(row.get(9)?),
                            summary: row.get(10)?,
                            first_kept_entry_id: row.get(11)?,
                            manifest_json: row.get(12)?,
                        },
                    })
                })
                .optional()
            })
            .map_err(|e| self.sqlite(e))
    }

    /// Count, tokens saved and the latest time, for one session or (`None`) the whole project.
    pub fn compaction_totals(&self, session_id: Option<&str>) -> Result<CompactionTotals, DbError> {
        self.conn
            .prepare_cached(
                "SELECT count(*), COALESCE(SUM(MAX(tokens_before - tokens_after, 0)), 0),
                     MAX(at_ms)
                 FROM compactions WHERE ?1 IS NULL OR session_id = ?1",
            )
            .and_then(|mut stmt| {
                stmt.query_row([session_id], |row| {
                    Ok(CompactionTotals {
                        count: to_u64(row.get(0)?),
                        tokens_saved: to_u64(row.get(1)?),
                        last_at_ms: row.get(2)?,
                    })
                })
            })
            .map_err(|e| self.sqlite(e))
    }

    /// When `source` (an old database) was imported into this file, if it was.
    pub(crate) fn legacy_imported_at(&self, source: &str) -> Result<Option<i64>, DbError> {
        self.conn
            .prepare_cached("SELECT imported_at_ms FROM legacy_imports WHERE source = ?1")
            .and_then(|mut stmt| stmt.query_row([source], |row| row.get(0)).optional())
            .map_err(|e| self.sqlite(e))
    }

    /// Records that `source` was imported (`imported` rows, `skipped` unreadable ones), so it
    /// is not imported again.
    pub(crate) fn record_legacy_import(
        &self,
        source: &str,
        imported: usize,
        skipped: usize,
        note: &str,
    ) -> Result<(), DbError> {
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO legacy_imports
                     (source, imported_at_ms, imported, skipped, note)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    source,
                    to_i64(now_ms()),
                    to_i64(imported),
                    to_i64(skipped),
                    note
                ])
            })
            .map_err(|e| self.sqlite(e))?;
        Ok(())
    }

    /// Full-text recall in this database. `Session` searches one session, `Project` (and
    /// `AllProjects`, which only [`recall_all_projects`] can widen) the whole file.
    pub fn recall(&self, query: &RecallQuery) -> Result<RecallResult, DbError> {
        recall::recall_in(self, query)
    }
}

impl SessionDb {
    fn from_conn(conn: Connection, path: &Path) -> Self {
        SessionDb {
            conn,
            path: path.to_path_buf(),
            damage: std::cell::RefCell::new(None),
            unwritable: std::cell::RefCell::new(None),
        }
    }

    /// Why the file turned out to be damaged after it opened (an error that
    /// [`DbError::is_corruption`] says so of), once: the owner then closes this connection and
    /// calls [`SessionDb::replace_corrupt`].
    pub fn take_damage(&self) -> Option<String> {
        self.damage.borrow_mut().take()
    }

    /// Why writing to the file failed (it became read-only while open), once one write did.
    pub fn unwritable(&self) -> Option<String> {
        self.unwritable.borrow().clone()
    }

    /// A read-only connection for searching another project's file: no migration, no writes;
    /// a version newer than this build, or older than the content index, is refused (its tables
    /// may differ). Later versions only added tables recall does not read.
    pub(crate) fn open_read_only(path: &Path) -> Result<SessionDb, DbError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let sqlite = |source| DbError::Sqlite {
            path: path.to_path_buf(),
            source,
        };
        let conn = Connection::open_with_flags(path, flags).map_err(sqlite)?;
        conn.busy_timeout(schema::BUSY_TIMEOUT).map_err(sqlite)?;
        let found = schema::user_version(&conn).map_err(sqlite)?;
        if found > schema::CURRENT_VERSION {
            return Err(DbError::NewerSchema {
                path: path.to_path_buf(),
                found,
                supported: schema::CURRENT_VERSION,
            });
        }
        if found < schema::RECALL_SINCE_VERSION {
            return Err(DbError::BadData {
                path: path.to_path_buf(),
                detail: format!(
                    "schema version {found} predates recall (its own project's workbench \
                     migrates it on the next start)"
                ),
            });
        }
        Ok(SessionDb::from_conn(conn, path))
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    pub(crate) fn sqlite(&self, source: rusqlite::Error) -> DbError {
        let err = DbError::Sqlite {
            path: self.path.clone(),
            source,
        };
        if err.is_corruption() {
            // Closing must not checkpoint the WAL into the damaged file (nor delete it): the
            // owner moves all three files aside as they are.
            schema::keep_wal_on_close(&self.conn, true);
            self.damage
                .borrow_mut()
                .get_or_insert_with(|| err.to_string());
        } else if err.is_read_only() {
            self.unwritable
                .borrow_mut()
                .get_or_insert_with(|| err.to_string());
        }
        err
    }

    pub(crate) fn bad_data(&self, detail: String) -> DbError {
        DbError::BadData {
            path: self.path.clone(),
            detail,
        }
    }
}

/// Replaces the chunks of one document unless its text is unchanged; returns its chunk count.
fn index_doc(conn: &Connection, session_id: &str, doc: &IndexDoc) -> rusqlite::Result<usize> {
    let kind = doc.kind.as_str();
    let hash = data_hash(&doc.text);
    let existing: Option<(i64, String, i64)> = conn
        .prepare_cached(
            "SELECT id, text_hash, chunk_count FROM content_docs
             WHERE session_id = ?1 AND entry_id = ?2 AND kind = ?3",
        )?
        .query_row(params![session_id, doc.entry_id, kind], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .optional()?;
    if let Some((_, old_hash, count)) = &existing
        && *old_hash == hash
    {
        return Ok(usize::try_from(*count).unwrap_or(0));
    }
    let chunks = chunk_text(&doc.text, CHUNK_BYTES);
    let doc_id = match existing {
        Some((id, _, _)) => {
            conn.prepare_cached("DELETE FROM content_chunks WHERE doc_id = ?1")?
                .execute([id])?;
            conn.prepare_cached(
                "UPDATE content_docs SET tool = ?2, at_ms = ?3, text_hash = ?4, chunk_count = ?5
                 WHERE id = ?1",
            )?
            .execute(params![id, doc.tool, doc.at_ms, hash, to_i64(chunks.len())])?;
            id
        }
        None => {
            conn.prepare_cached(
                "INSERT INTO content_docs
                     (session_id, entry_id, kind, tool, at_ms, text_hash, chunk_count)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                session_id,
                doc.entry_id,
                kind,
                doc.tool,
                doc.at_ms,
                hash,
                to_i64(chunks.len())
            ])?;
            conn.last_insert_rowid()
        }
    };
    let mut insert = conn.prepare_cached(
        "INSERT INTO content_chunks (doc_id, seq, text, session) VALUES (?1, ?2, ?3, ?4)",
    )?;
    let session = session_token(session_id);
    for (seq, chunk) in chunks.iter().enumerate() {
        insert.execute(params![doc_id, to_i64(seq), chunk, session])?;
    }
    Ok(chunks.len())
}

fn open_error(path: &Path, failure: OpenFailure) -> DbError {
    let path = path.to_path_buf();
    match failure {
        OpenFailure::Sqlite(source) => DbError::Sqlite { path, source },
        OpenFailure::Migration { version, source } => DbError::Migration {
            path,
            version,
            source,
        },
        OpenFailure::Newer { found } => DbError::NewerSchema {
            path,
            found,
            supported: schema::CURRENT_VERSION,
        },
        OpenFailure::Corrupt(reason) => DbError::StillCorrupt { path, reason },
        OpenFailure::ReadOnly(reason) => DbError::ReadOnly { path, reason },
    }
}

/// The one token of a chunk's `session` column: `s` and the id's bytes in hex, the same as
/// SQL's `'s' || lower(hex(session_id))` that the version 2 migration uses.
pub(crate) fn session_token(session_id: &str) -> String {
    let mut token = String::with_capacity(1 + session_id.len() * 2);
    token.push('s');
    for byte in session_id.as_bytes() {
        token.push_str(&format!("{byte:02x}"));
    }
    token
}

/// sha256 of the data, first 16 hex digits: enough to tell events apart within a window of 5.
fn data_hash(data: &str) -> String {
    Sha256::digest(data.as_bytes())
        .iter()
        .take(8)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// SQLite integers are signed; counts and token figures never get near the limit, but saturate.
fn to_i64<T: TryInto<i64>>(value: T) -> i64 {
    value.try_into().unwrap_or(i64::MAX)
}

fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

#[cfg(test)]
mod tests;

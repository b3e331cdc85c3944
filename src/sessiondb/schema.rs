//! The database's schema, its migrations and the connection set-up. The version lives in
//! `PRAGMA user_version` (one header field, written in the same transaction as the step, so a
//! crash mid-migration leaves the old version and the old tables). [`MIGRATIONS`] is
//! append-only: step N turns a version N−1 database into version N and is never edited once
//! shipped, because users' files were made by it. Version 1 was the first layout (sessions,
//! events, compaction counters); version 2 adds the content index, ingest offsets and the
//! compaction manifest, and indexes the summaries version 1 already held; version 3 adds the
//! calls model fusion's sidekick served and what they saved (`sidekick_calls`); version 4 adds
//! the record of old databases imported once (`legacy_imports`: the original Unipi compactor's).
//!
//! The content index is an external-content FTS5 table over `content_chunks` (the text is stored
//! once), kept in step by triggers. Its second column holds one token per chunk naming the
//! session (`s` + the id in hex, computable in SQL), so a session-scoped search is an FTS5
//! intersection instead of a filter over every match; the rank ignores that column.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, Transaction, TransactionBehavior};

/// The schema version this build reads and writes.
pub(crate) const CURRENT_VERSION: i64 = 4;
/// The first version with the content index: a file this new can be searched read-only.
pub(crate) const RECALL_SINCE_VERSION: i64 = 2;

/// How long a writer waits for another process's lock before failing with "database is busy".
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// One migration step: the SQL that brings a database to `version`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    pub version: i64,
    pub sql: &'static str,
}

pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sql: V1_SQL,
    },
    Migration {
        version: 2,
        sql: V2_SQL,
    },
    Migration {
        version: 3,
        sql: V3_SQL,
    },
    Migration {
        version: 4,
        sql: V4_SQL,
    },
];

const V1_SQL: &str = "
CREATE TABLE sessions (
    session_id TEXT PRIMARY KEY,
    project_dir TEXT NOT NULL,
    started_at_ms INTEGER NOT NULL
);
CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    priority INTEGER NOT NULL,
    data TEXT NOT NULL,
    data_hash TEXT NOT NULL,
    at_ms INTEGER NOT NULL
);
CREATE INDEX events_by_session ON events(session_id, id);
CREATE TABLE compactions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    tokens_before INTEGER NOT NULL,
    tokens_after INTEGER NOT NULL,
    summary TEXT NOT NULL
);
CREATE INDEX compactions_by_session ON compactions(session_id, id);
";

const V2_SQL: &str = "
ALTER TABLE sessions ADD COLUMN session_file TEXT;
ALTER TABLE sessions ADD COLUMN last_event_at_ms INTEGER;
ALTER TABLE events ADD COLUMN entry_id TEXT;
CREATE INDEX events_by_priority ON events(session_id, priority, id);
ALTER TABLE compactions ADD COLUMN reason TEXT NOT NULL DEFAULT '';
ALTER TABLE compactions ADD COLUMN messages_summarized INTEGER NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN blocks_kept INTEGER NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN blocks_dropped INTEGER NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN duration_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN first_kept_entry_id TEXT NOT NULL DEFAULT '';
ALTER TABLE compactions ADD COLUMN manifest_json TEXT NOT NULL DEFAULT '[]';
CREATE TABLE ingest_offsets (
    session_file TEXT PRIMARY KEY,
    byte_offset INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
CREATE TABLE content_docs (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    tool TEXT,
    at_ms INTEGER,
    text_hash TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    UNIQUE (session_id, entry_id, kind)
);
CREATE TABLE content_chunks (
    id INTEGER PRIMARY KEY,
    doc_id INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    text TEXT NOT NULL,
    session TEXT NOT NULL
);
CREATE INDEX content_chunks_by_doc ON content_chunks(doc_id);
CREATE VIRTUAL TABLE content_fts USING fts5(
    text, session, content = 'content_chunks', content_rowid = 'id',
    tokenize = 'porter unicode61'
);
INSERT INTO content_fts(content_fts, rank) VALUES ('rank', 'bm25(1.0, 0.0)');
CREATE TRIGGER content_chunks_indexed AFTER INSERT ON content_chunks BEGIN
    INSERT INTO content_fts(rowid, text, session) VALUES (new.id, new.text, new.session);
END;
CREATE TRIGGER content_chunks_unindexed AFTER DELETE ON content_chunks BEGIN
    INSERT INTO content_fts(content_fts, rowid, text, session)
        VALUES ('delete', old.id, old.text, old.session);
END;
INSERT INTO content_docs (session_id, entry_id, kind, tool, at_ms, text_hash, chunk_count)
    SELECT session_id, 'compaction:' || id, 'summary', NULL, at_ms, '', 1 FROM compactions;
INSERT INTO content_chunks (doc_id, seq, text, session)
    SELECT d.id, 0, c.summary, 's' || lower(hex(c.session_id)) FROM compactions c
    JOIN content_docs d ON d.session_id = c.session_id AND d.kind = 'summary'
        AND d.entry_id = 'compaction:' || c.id;
";

/// One row per model call the sidekick served: its tokens, what it cost on the sidekick and what
/// the same tokens would have cost on the primary (dollars, at the prices Pi listed then).
const V3_SQL: &str = "
CREATE TABLE sidekick_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    source TEXT NOT NULL,
    sidekick_model TEXT NOT NULL,
    primary_model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    sidekick_cost REAL NOT NULL,
    primary_cost REAL NOT NULL
);
CREATE INDEX sidekick_calls_by_session ON sidekick_calls(session_id, source);
";

/// One row per old database imported into this project's file (the original Unipi compactor's
/// `session.db`), so it is imported once: what was read and what could not be.
const V4_SQL: &str = "
CREATE TABLE legacy_imports (
    source TEXT PRIMARY KEY,
    imported_at_ms INTEGER NOT NULL,
    imported INTEGER NOT NULL,
    skipped INTEGER NOT NULL,
    note TEXT NOT NULL
);
";

/// Why opening failed: a corrupt file is recoverable (moved aside), anything else is not.
#[derive(Debug)]
pub(crate) enum OpenFailure {
    Corrupt(String),
    /// The file or its directory cannot be written (permissions, a read-only file system).
    ReadOnly(String),
    Sqlite(rusqlite::Error),
    Migration {
        version: i64,
        source: rusqlite::Error,
    },
    Newer {
        found: i64,
    },
}

/// Opens (creating) a read-write database, sets WAL and the busy timeout, and migrates it.
/// Until the file proved readable, closing the connection leaves its WAL alone: SQLite would
/// otherwise checkpoint the WAL into a damaged file and delete it, losing both.
pub(crate) fn open_writable(path: &Path) -> Result<Connection, OpenFailure> {
    create_private(path);
    let conn = Connection::open(path).map_err(classify)?;
    keep_wal_on_close(&conn, true);
    configure(&conn)?;
    // SQLite falls back to a read-only connection when the file cannot be opened for writing.
    if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
        return Err(OpenFailure::ReadOnly(
            "the file cannot be opened for writing".to_owned(),
        ));
    }
    migrate(&conn)?;
    keep_wal_on_close(&conn, false);
    Ok(conn)
}

/// Creates the database file empty with mode 0600 (an empty file is an empty database to
/// SQLite) unless it exists, and tightens an existing one and its `-wal`, `-shm` and `-journal`
/// to 0600. SQLite would create the file 0644 (less the umask), and it gives the `-wal` and
/// `-shm` it creates the main file's mode: so the conversation never lands in a file others can
/// read. Failures are logged; SQLite's own open then says what is wrong.
fn create_private(path: &Path) {
    use std::os::unix::fs::OpenOptionsExt as _;
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path);
    match created {
        Ok(_) => return,
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(err) => {
            tracing::warn!(
                "session database {}: cannot create it: {err}",
                path.display()
            );
            return;
        }
    }
    for file in std::iter::once(path.to_path_buf())
        .chain(["-wal", "-shm", "-journal"].map(|suffix| sibling(path, suffix)))
    {
        if let Err(err) = crate::sys::private_dir::tighten_file(&file) {
            tracing::warn!("cannot make {} private: {err}", file.display());
        }
    }
}

/// Whether closing `conn` skips the final checkpoint (which also deletes the WAL and the
/// shared-memory file). Set on a connection to a file that may be damaged, so the file and its
/// WAL can be moved aside as they were.
pub(crate) fn keep_wal_on_close(conn: &Connection, keep: bool) {
    if let Err(err) = conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        keep,
    ) {
        tracing::warn!("session database: cannot set the close-time checkpoint: {err}");
    }
}

pub(crate) fn open_memory() -> Result<Connection, OpenFailure> {
    let conn = Connection::open_in_memory().map_err(classify)?;
    configure(&conn)?;
    migrate(&conn)?;
    Ok(conn)
}

/// Brings `conn` to [`CURRENT_VERSION`]; returns the version it found.
pub(crate) fn migrate(conn: &Connection) -> Result<i64, OpenFailure> {
    let found = user_version(conn).map_err(classify)?;
    if found > CURRENT_VERSION {
        return Err(OpenFailure::Newer { found });
    }
    for step in MIGRATIONS.iter().filter(|step| step.version > found) {
        let failed = |source: rusqlite::Error| match classify(source) {
            OpenFailure::Sqlite(source) => OpenFailure::Migration {
                version: step.version,
                source,
            },
            other => other,
        };
        // IMMEDIATE takes the write lock up front, and the version is read again under it:
        // two workbenches opening a new project at once must not both run a step.
        let tx =
            Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(failed)?;
        if user_version(&tx).map_err(failed)? >= step.version {
            continue;
        }
        tx.execute_batch(step.sql).map_err(failed)?;
        tx.pragma_update(None, "user_version", step.version)
            .map_err(failed)?;
        tx.commit().map_err(failed)?;
    }
    Ok(found)
}

pub(crate) fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
}

/// Moves a corrupt database (and its `-wal`/`-shm` companions, which would otherwise be replayed
/// into the fresh file) to `<name>.corrupt-<unix seconds>`; returns the new path.
pub(crate) fn move_aside(path: &Path) -> std::io::Result<PathBuf> {
    let seconds = crate::sys::unix_seconds();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session.sqlite".to_string());
    let mut target = path.with_file_name(format!("{name}.corrupt-{seconds}"));
    let mut attempt = 1;
    while target.exists() {
        target = path.with_file_name(format!("{name}.corrupt-{seconds}-{attempt}"));
        attempt += 1;
    }
    fs::rename(path, &target)?;
    for suffix in ["-wal", "-shm"] {
        let companion = sibling(path, suffix);
        if companion.exists() {
            fs::rename(&companion, sibling(&target, suffix))?;
        }
    }
    Ok(target)
}

/// Whether an error means the file's content is unusable (as opposed to busy, full, missing).
pub(crate) fn is_corruption(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    )
}

/// Whether an error means the file (or the WAL beside it) cannot be written.
pub(crate) fn is_read_only(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied)
    )
}

fn configure(conn: &Connection) -> Result<(), OpenFailure> {
    conn.busy_timeout(BUSY_TIMEOUT).map_err(classify)?;
    // The first statement that reads the header: a file that is not a database fails here.
    // Switching a fresh file to WAL needs an exclusive lock and SQLite answers "busy" at once,
    // without its busy handler, while another connection opens the same new file: retry.
    let started = std::time::Instant::now();
    let _mode: String = loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)) {
            Err(err)
                if err.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && started.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => break other.map_err(classify)?,
        }
    };
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(classify)?;
    // Reading the schema catches a damaged first page before any migration writes to it.
    let _tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0))
        .map_err(classify)?;
    conn.set_prepared_statement_cache_capacity(32);
    Ok(())
}

fn classify(err: rusqlite::Error) -> OpenFailure {
    if is_corruption(&err) {
        OpenFailure::Corrupt(err.to_string())
    } else if is_read_only(&err) {
        OpenFailure::ReadOnly(err.to_string())
    } else {
        OpenFailure::Sqlite(err)
    }
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

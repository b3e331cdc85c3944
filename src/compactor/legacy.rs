//! The original Unipi compactor's session database (`~/.unipi/db/compactor/session.db`, schema
//! in `docs/coming-from-unipi.md`), imported once into this project's session index, so recall
//! does not start empty for someone coming from Unipi. What it holds is the events Unipi
//! extracted from tool results (files read and edited, commands, errors, git operations) and
//! its resume snapshots; they become recall documents of their sessions (entry ids
//! `unipi-event:<id>` and `unipi-resume`), under the same session ids, which are Pi's.
//!
//! Only the rows of this project are taken (the event's `project_dir`, or its session's when
//! the event has none); another project takes its own on its first start. The old file is
//! opened read-only and never changed. A row that cannot be read is skipped and counted; a
//! file that is not Unipi's database (another schema, not SQLite) is reported once and marked
//! done; a locked or unreadable one is reported and tried again on the next start. The mark
//! (`legacy_imports`) lives in the project's database, so the import runs once per project.
//!
//! Unipi's `content.db` is not imported: it holds documents indexed on request (`ctx_index`,
//! fetched pages), not session history, and none of it is tied to a project.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::sessiondb::{DocKind, IndexDoc, SessionDb, SessionMeta};

/// Where the original Unipi kept the compactor's session database, under the home directory.
pub(crate) const LEGACY_SESSION_DB: &str = ".unipi/db/compactor/session.db";
/// How long to wait for Unipi (still running somewhere) to release a lock.
const BUSY_WAIT: Duration = Duration::from_millis(500);
/// The columns of `session_events` the import reads.
const EVENT_COLUMNS: [&str; 5] = ["id", "session_id", "type", "data", "created_at"];

/// What one start found of the old database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// There is no such file: nothing to say.
    Absent,
    /// Imported by an earlier start.
    AlreadyDone,
    Imported(Imported),
    /// Not imported; `again` when the next start tries again (a lock, a permission).
    Failed {
        reason: String,
        again: bool,
    },
}

/// Counts of one import.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Imported {
    pub sessions: usize,
    pub events: usize,
    pub snapshots: usize,
    /// Rows of this project that could not be read.
    pub skipped: usize,
}

impl Outcome {
    /// The start-up notice, if this is worth one (nothing for an absent file, an earlier
    /// import, or an import that found nothing of this project).
    pub(crate) fn notice(&self, path: &Path) -> Option<String> {
        let path = path.display();
        match self {
            Outcome::Absent | Outcome::AlreadyDone => None,
            Outcome::Imported(counts) if counts.events + counts.snapshots + counts.skipped == 0 => {
                None
            }
            Outcome::Imported(counts) => {
                let skipped = match counts.skipped {
                    0 => String::new(),
                    n => format!(" {n} unreadable rows were skipped."),
                };
                Some(format!(
                    "Imported the original Unipi compactor's history of this project from \
                     {path}: {} events and {} resume snapshots of {} sessions, now found by \
                     session_recall.{skipped} The old file was left as it was.",
                    counts.events, counts.snapshots, counts.sessions
                ))
            }
            Outcome::Failed { reason, again } => Some(format!(
                "The original Unipi compactor's database {path} was not imported: {reason}. It \
                 was left as it was{}.",
                if *again {
                    "; the next start tries again"
                } else {
                    " and will not be tried again"
                }
            )),
        }
    }
}

/// The old database under `home`.
pub(crate) fn legacy_path(home: &Path) -> PathBuf {
    home.join(LEGACY_SESSION_DB)
}

/// Imports the old database at `legacy` into `db` (this project's, for `workspace`) unless an
/// earlier start did. Never fails: what went wrong is the outcome.
pub(crate) fn import_once(db: &SessionDb, legacy: &Path, workspace: &Path) -> Outcome {
    if !legacy.exists() {
        return Outcome::Absent;
    }
    let source = legacy.display().to_string();
    match db.legacy_imported_at(&source) {
        Ok(Some(_)) => return Outcome::AlreadyDone,
        Ok(None) => {}
        Err(err) => {
            return Outcome::Failed {
                reason: format!("the session database cannot record it: {err}"),
                again: true,
            };
        }
    }
    let read = read_legacy(legacy, workspace);
    let (rows, note) = match read {
        Ok(rows) => (rows, String::new()),
        Err(failure) => {
            if !failure.again {
                // Never importable: say so once, not at every start.
                let _ = db.record_legacy_import(&source, 0, 0, &failure.reason);
            }
            return Outcome::Failed {
                reason: failure.reason,
                again: failure.again,
            };
        }
    };
    let counts = match store(db, &rows, workspace) {
        Ok(counts) => counts,
        Err(err) => {
            return Outcome::Failed {
                reason: format!("writing the session database failed: {err}"),
                again: true,
            };
        }
    };
    let imported = counts.events + counts.snapshots;
    if let Err(err) = db.record_legacy_import(&source, imported, counts.skipped, &note) {
        // Indexing again is harmless (same entry ids, same text): the next start retries.
        tracing::warn!("compactor: the import of {source} is not recorded: {err}");
    }
    tracing::info!(
        "compactor: imported {} events and {} snapshots of {} sessions from {source} ({} \
         rows skipped)",
        counts.events,
        counts.snapshots,
        counts.sessions,
        counts.skipped
    );
    Outcome::Imported(counts)
}

/// Why the old file could not be read, and whether a later start may do better.
struct ReadFailure {
    reason: String,
    again: bool,
}

/// This project's rows of the old database.
#[derive(Default)]
struct LegacyRows {
    /// (session id, document) in the old file's order.
    docs: Vec<(String, IndexDoc)>,
    skipped: usize,
}

fn read_legacy(path: &Path, workspace: &Path) -> Result<LegacyRows, ReadFailure> {
    let sqlite = |err: rusqlite::Error| {
        let again = matches!(
            err.sqlite_error_code(),
            Some(
                ErrorCode::DatabaseBusy
                    | ErrorCode::DatabaseLocked
                    | ErrorCode::CannotOpen
                    | ErrorCode::PermissionDenied
            )
        );
        let reason = match err.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
                format!("it is not a readable SQLite database ({err})")
            }
            _ => format!("it cannot be read ({err})"),
        };
        ReadFailure { reason, again }
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(sqlite)?;
    conn.busy_timeout(BUSY_WAIT).map_err(sqlite)?;
    let columns = table_columns(&conn, "session_events").map_err(sqlite)?;
    let missing: Vec<&str> = EVENT_COLUMNS
        .iter()
        .copied()
        .filter(|column| !columns.iter().any(|have| have == column))
        .collect();
    if columns.is_empty() || !missing.is_empty() {
        return Err(ReadFailure {
            reason: format!(
                "it is not the Unipi compactor's session database (no table session_events \
                 with the columns {})",
                EVENT_COLUMNS.join(", ")
            ),
            again: false,
        });
    }
    let has = |column: &str| columns.iter().any(|have| have == column);
    let meta = !table_columns(&conn, "session_meta")
        .map_err(sqlite)?
        .is_empty();
    let project_dirs = project_dirs(workspace);
    let mut rows = LegacyRows::default();
    // The event's own directory, else its session's.
    let event_dir = match (has("project_dir"), meta) {
        (true, true) => {
            "COALESCE(NULLIF(e.project_dir, ''), (SELECT m.project_dir FROM session_meta m \
             WHERE m.session_id = e.session_id), '')"
        }
        (true, false) => "COALESCE(e.project_dir, '')",
        (false, true) => {
            "COALESCE((SELECT m.project_dir FROM session_meta m WHERE m.session_id = \
             e.session_id), '')"
        }
        (false, false) => "''",
    };
    let sql = format!(
        "SELECT e.id, e.session_id, e.type, e.data,
             CAST(strftime('%s', e.created_at) AS INTEGER) * 1000, {event_dir}
         FROM session_events e ORDER BY e.id"
    );
    let mut stmt = conn.prepare(&sql).map_err(sqlite)?;
    let mut query = stmt.query([]).map_err(sqlite)?;
    while let Some(row) = query.next().map_err(sqlite)? {
        let dir: Option<String> = row.get(5).ok();
        if !dir.is_some_and(|dir| project_dirs.contains(&dir)) {
            continue;
        }
        let read = || -> rusqlite::Result<(String, IndexDoc)> {
            let id: i64 = row.get(0)?;
            let kind: String = row.get(2)?;
            Ok((
                row.get(1)?,
                IndexDoc {
                    entry_id: format!("unipi-event:{id}"),
                    kind: DocKind::ToolResult,
                    tool: Some(kind),
                    text: row.get(3)?,
                    at_ms: row.get(4)?,
                },
            ))
        };
        match read() {
            Ok((session, doc)) if !session.is_empty() && !doc.text.trim().is_empty() => {
                rows.docs.push((session, doc));
            }
            Ok(_) | Err(_) => rows.skipped += 1,
        }
    }
    drop(query);
    drop(stmt);
    read_snapshots(&conn, &mut rows, meta, &project_dirs).map_err(sqlite)?;
    Ok(rows)
}

/// The resume snapshots of this project's sessions (those with events here, or whose
/// `session_meta` says this project), as summaries.
fn read_snapshots(
    conn: &Connection,
    rows: &mut LegacyRows,
    meta: bool,
    project_dirs: &[String],
) -> rusqlite::Result<()> {
    let columns = table_columns(conn, "session_resume")?;
    if !["session_id", "snapshot"]
        .iter()
        .all(|column| columns.iter().any(|have| have == column))
    {
        return Ok(());
    }
    let mut ours: std::collections::BTreeSet<String> = rows
        .docs
        .iter()
        .map(|(session, _)| session.clone())
        .collect();
    if meta {
        let mut stmt = conn.prepare("SELECT session_id, project_dir FROM session_meta")?;
        let mut query = stmt.query([])?;
        while let Some(row) = query.next()? {
            if let (Ok(session), Ok(dir)) = (row.get::<_, String>(0), row.get::<_, String>(1))
                && project_dirs.contains(&dir)
            {
                ours.insert(session);
            }
        }
    }
    let when = if columns.iter().any(|have| have == "created_at") {
        "CAST(strftime('%s', created_at) AS INTEGER) * 1000"
    } else {
        "NULL"
    };
    let mut stmt = conn.prepare(&format!(
        "SELECT session_id, snapshot, {when} FROM session_resume ORDER BY rowid"
    ))?;
    let mut query = stmt.query([])?;
    while let Some(row) = query.next()? {
        let Ok(session) = row.get::<_, String>(0) else {
            rows.skipped += 1;
            continue;
        };
        if !ours.contains(&session) {
            continue;
        }
        match row.get::<_, String>(1) {
            Ok(snapshot) if !snapshot.trim().is_empty() => rows.docs.push((
                session,
                IndexDoc {
                    entry_id: "unipi-resume".to_owned(),
                    kind: DocKind::Summary,
                    tool: None,
                    text: snapshot,
                    at_ms: row.get(2).ok().flatten(),
                },
            )),
            Ok(_) => {}
            Err(_) => rows.skipped += 1,
        }
    }
    Ok(())
}

/// The names of `table`'s columns; empty when there is no such table.
fn table_columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let names = stmt.query_map([table], |row| row.get(0))?;
    names.collect()
}

/// The ways Unipi may have written this project's directory: as given and canonical.
fn project_dirs(workspace: &Path) -> Vec<String> {
    let mut dirs = vec![workspace.display().to_string()];
    if let Ok(canonical) = std::fs::canonicalize(workspace) {
        let canonical = canonical.display().to_string();
        if !dirs.contains(&canonical) {
            dirs.push(canonical);
        }
    }
    dirs
}

/// Indexes the rows, one transaction per session.
fn store(
    db: &SessionDb,
    rows: &LegacyRows,
    workspace: &Path,
) -> Result<Imported, crate::sessiondb::DbError> {
    let mut counts = Imported {
        skipped: rows.skipped,
        ..Imported::default()
    };
    let mut sessions: std::collections::BTreeMap<&str, Vec<IndexDoc>> = Default::default();
    for (session, doc) in &rows.docs {
        sessions.entry(session).or_default().push(doc.clone());
    }
    for (session, docs) in sessions {
        db.upsert_session(&SessionMeta {
            session_id: session.to_owned(),
            session_file: None,
            project_dir: workspace.display().to_string(),
        })?;
        db.index_many(session, &docs)?;
        counts.sessions += 1;
        for doc in &docs {
            match doc.kind {
                DocKind::Summary => counts.snapshots += 1,
                _ => counts.events += 1,
            }
        }
    }
    Ok(counts)
}

#[cfg(test)]
#[path = "legacy_tests.rs"]
mod tests;

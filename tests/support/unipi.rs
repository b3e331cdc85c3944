//! The original Unipi's files, as a Unipi user's home holds them, for the suites that check
//! unipi-tui reads them.

use std::path::PathBuf;

use super::sandbox::Sandbox;

/// `~/.unipi/db/compactor/session.db` as the original Unipi's compactor left it (schema version
/// 1, WAL), with one event and a resume snapshot of a session in the sandbox's project and one
/// event of another project; its path.
pub fn unipi_session_db(sandbox: &Sandbox) -> PathBuf {
    let path = sandbox.home.join(".unipi/db/compactor/session.db");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode=WAL;
         CREATE TABLE session_events (id INTEGER PRIMARY KEY AUTOINCREMENT,
             session_id TEXT NOT NULL, type TEXT NOT NULL, category TEXT NOT NULL,
             priority INTEGER NOT NULL DEFAULT 2, data TEXT NOT NULL,
             project_dir TEXT NOT NULL DEFAULT '', source_hook TEXT NOT NULL,
             created_at TEXT NOT NULL DEFAULT (datetime('now')),
             attribution_source TEXT NOT NULL DEFAULT 'unknown',
             attribution_confidence REAL NOT NULL DEFAULT 0,
             data_hash TEXT NOT NULL DEFAULT '');
         CREATE TABLE session_meta (session_id TEXT PRIMARY KEY, project_dir TEXT NOT NULL,
             started_at TEXT NOT NULL DEFAULT (datetime('now')), last_event_at TEXT,
             event_count INTEGER NOT NULL DEFAULT 0, compact_count INTEGER NOT NULL DEFAULT 0,
             total_chars_before INTEGER NOT NULL DEFAULT 0,
             total_chars_kept INTEGER NOT NULL DEFAULT 0,
             total_messages_summarized INTEGER NOT NULL DEFAULT 0);
         CREATE TABLE session_resume (id INTEGER PRIMARY KEY AUTOINCREMENT,
             session_id TEXT NOT NULL UNIQUE, snapshot TEXT NOT NULL,
             event_count INTEGER NOT NULL, created_at TEXT NOT NULL DEFAULT (datetime('now')),
             consumed INTEGER NOT NULL DEFAULT 0);
         PRAGMA user_version = 1;",
    )
    .unwrap();
    let project = sandbox.project.display().to_string();
    conn.execute(
        "INSERT INTO session_events (session_id, type, category, priority, data, project_dir,
             source_hook)
         VALUES ('unipi-old-session', 'tool_error', 'error', 3,
                 '[bash] release failed: codename AMBER-OWL-7 is already tagged', ?1,
                 'PostToolUse'),
                ('unipi-elsewhere', 'file_read', 'file', 2, 'notes.md', '/somewhere/else',
                 'PostToolUse')",
        [&project],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO session_meta (session_id, project_dir) VALUES ('unipi-old-session', ?1)",
        [&project],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO session_resume (session_id, snapshot, event_count)
         VALUES ('unipi-old-session', '<session_resume events=\"1\"><errors count=\"1\">\
                  release failed</errors></session_resume>', 1)",
        [],
    )
    .unwrap();
    path
}

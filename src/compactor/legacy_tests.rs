//! The import of the original Unipi compactor's database, against real SQLite files built with
//! the schema the reference gives (`src/session/db.ts`, version 1).

use std::path::Path;

use rusqlite::{Connection, params};

use super::*;
use crate::sessiondb::{RecallMode, RecallQuery, RecallScope};

/// Unipi's `session.db` as its `SessionDB` creates it: version 0 tables, then the version 1
/// columns, WAL.
const UNIPI_SCHEMA: &str = "
PRAGMA journal_mode=WAL;
CREATE TABLE session_events (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
    type TEXT NOT NULL, category TEXT NOT NULL, priority INTEGER NOT NULL DEFAULT 2,
    data TEXT NOT NULL, project_dir TEXT NOT NULL DEFAULT '', source_hook TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE INDEX idx_session_events_session ON session_events(session_id);
CREATE INDEX idx_session_events_type ON session_events(session_id, type);
CREATE INDEX idx_session_events_priority ON session_events(session_id, priority);
CREATE TABLE session_meta (session_id TEXT PRIMARY KEY, project_dir TEXT NOT NULL,
    started_at TEXT NOT NULL DEFAULT (datetime('now')), last_event_at TEXT,
    event_count INTEGER NOT NULL DEFAULT 0, compact_count INTEGER NOT NULL DEFAULT 0);
CREATE TABLE session_resume (id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL UNIQUE, snapshot TEXT NOT NULL, event_count INTEGER NOT NULL,
    created_at TEXT NOT NULL DEFAULT (datetime('now')), consumed INTEGER NOT NULL DEFAULT 0);
ALTER TABLE session_events ADD COLUMN attribution_source TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE session_events ADD COLUMN attribution_confidence REAL NOT NULL DEFAULT 0;
ALTER TABLE session_events ADD COLUMN data_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE session_meta ADD COLUMN total_chars_before INTEGER NOT NULL DEFAULT 0;
ALTER TABLE session_meta ADD COLUMN total_chars_kept INTEGER NOT NULL DEFAULT 0;
ALTER TABLE session_meta ADD COLUMN total_messages_summarized INTEGER NOT NULL DEFAULT 0;
PRAGMA user_version = 1;
";

/// A Unipi database at `path` with events of this project (`workspace`) and another, one
/// unreadable row (not UTF-8) and a resume snapshot.
fn unipi_db(path: &Path, workspace: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(UNIPI_SCHEMA).unwrap();
    let ours = workspace.display().to_string();
    let event = |session: &str, kind: &str, data: &str, dir: &str| {
        conn.execute(
            "INSERT INTO session_events (session_id, type, category, priority, data,
                 project_dir, source_hook, created_at)
             VALUES (?1, ?2, 'file', 2, ?3, ?4, 'PostToolUse', '2026-03-01 10:20:30')",
            params![session, kind, data, dir],
        )
        .unwrap();
    };
    event("s-ours", "file_edit", "src/flux_capacitor.rs", &ours);
    event(
        "s-ours",
        "tool_error",
        "[bash] cargo: error E0599 on flux",
        &ours,
    );
    // No directory on the event: its session's says this project.
    event("s-meta", "bash_executed", "make flux-release", "");
    event(
        "s-other",
        "file_read",
        "/elsewhere/flux_notes.md",
        "/elsewhere",
    );
    conn.execute(
        "INSERT INTO session_meta (session_id, project_dir) VALUES ('s-meta', ?1),
             ('s-other', '/elsewhere')",
        [&ours],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO session_events (session_id, type, category, data, project_dir, source_hook)
         VALUES ('s-ours', 'file_read', 'file', X'FF00FE', ?1, 'PostToolUse')",
        [&ours],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO session_resume (session_id, snapshot, event_count)
         VALUES ('s-ours', '<session_resume events=\"2\"><files count=\"1\">flux_capacitor.rs \
                  (edit×1)</files></session_resume>', 2),
                ('s-other', '<session_resume>elsewhere flux</session_resume>', 1)",
        [],
    )
    .unwrap();
}

fn recall(db: &SessionDb, text: &str) -> Vec<(String, String)> {
    let found = db
        .recall(&RecallQuery {
            text: text.to_owned(),
            scope: RecallScope::Project,
            limit: 20,
            offset: 0,
            mode: RecallMode::Words,
            expand: false,
        })
        .unwrap();
    found
        .hits
        .into_iter()
        .map(|hit| (hit.session_id, hit.entry_id))
        .collect()
}

fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

#[test]
fn this_projects_rows_are_imported_once_and_the_old_file_is_untouched() {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let legacy = legacy_path(home.path());
    unipi_db(&legacy, workspace.path());
    let before = bytes(&legacy);
    let db = SessionDb::open_in_memory().unwrap();

    let outcome = import_once(&db, &legacy, workspace.path());
    assert_eq!(
        outcome,
        Outcome::Imported(Imported {
            sessions: 2,
            events: 3,
            snapshots: 1,
            skipped: 1,
        })
    );
    let mut found = recall(&db, "flux");
    found.sort();
    assert_eq!(
        found,
        [
            ("s-meta".to_owned(), "unipi-event:3".to_owned()),
            ("s-ours".to_owned(), "unipi-event:1".to_owned()),
            ("s-ours".to_owned(), "unipi-event:2".to_owned()),
            ("s-ours".to_owned(), "unipi-resume".to_owned()),
        ],
        "this project's events and snapshot, nothing of /elsewhere"
    );
    let hit = db
        .recall(&RecallQuery {
            text: "E0599".to_owned(),
            scope: RecallScope::Session("s-ours".to_owned()),
            limit: 5,
            offset: 0,
            mode: RecallMode::Words,
            expand: false,
        })
        .unwrap();
    assert_eq!(hit.hits[0].tool.as_deref(), Some("tool_error"));
    // 2026-03-01 10:20:30 UTC.
    assert_eq!(hit.hits[0].at_ms, Some(1_772_360_430_000));

    let notice = outcome.notice(&legacy).unwrap();
    assert!(
        notice.contains("3 events and 1 resume snapshots of 2 sessions"),
        "{notice}"
    );
    assert!(
        notice.contains("1 unreadable rows were skipped"),
        "{notice}"
    );
    assert!(notice.contains(&legacy.display().to_string()), "{notice}");

    // Once: a second start imports nothing and says nothing.
    assert_eq!(
        import_once(&db, &legacy, workspace.path()),
        Outcome::AlreadyDone
    );
    assert_eq!(Outcome::AlreadyDone.notice(&legacy), None);
    assert_eq!(bytes(&legacy), before, "the old file is never written");

    // Another project takes its own rows on its own first start.
    let other = SessionDb::open_in_memory().unwrap();
    let elsewhere = import_once(&other, &legacy, Path::new("/elsewhere"));
    assert_eq!(
        elsewhere,
        Outcome::Imported(Imported {
            sessions: 1,
            events: 1,
            snapshots: 1,
            skipped: 0,
        })
    );
}

#[test]
fn no_file_is_nothing_and_a_project_without_rows_is_quiet() {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let legacy = legacy_path(home.path());
    let db = SessionDb::open_in_memory().unwrap();
    assert_eq!(import_once(&db, &legacy, workspace.path()), Outcome::Absent);
    unipi_db(&legacy, Path::new("/somewhere/else"));
    let outcome = import_once(&db, &legacy, workspace.path());
    assert_eq!(outcome, Outcome::Imported(Imported::default()));
    assert_eq!(outcome.notice(&legacy), None);
    assert_eq!(
        import_once(&db, &legacy, workspace.path()),
        Outcome::AlreadyDone
    );
}

/// A file that is not Unipi's database is one clear notice, then left alone; a locked one is
/// tried again; neither is changed.
#[test]
fn foreign_corrupt_and_locked_files_are_notices_never_changes() {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let legacy = legacy_path(home.path());
    std::fs::create_dir_all(legacy.parent().unwrap()).unwrap();

    for (content, want) in [
        (
            "garbage",
            "it is not a readable SQLite database (file is not a database)",
        ),
        (
            "foreign",
            "it is not the Unipi compactor's session database (no table session_events with \
             the columns id, session_id, type, data, created_at)",
        ),
    ] {
        let _ = std::fs::remove_file(&legacy);
        if content == "garbage" {
            std::fs::write(&legacy, "not a database at all, just text ".repeat(200)).unwrap();
        } else {
            let conn = Connection::open(&legacy).unwrap();
            conn.execute_batch("CREATE TABLE session_events (id INTEGER, what TEXT);")
                .unwrap();
        }
        let before = bytes(&legacy);
        let db = SessionDb::open_in_memory().unwrap();
        let outcome = import_once(&db, &legacy, workspace.path());
        assert_eq!(
            outcome,
            Outcome::Failed {
                reason: want.to_owned(),
                again: false,
            },
            "{content}"
        );
        let notice = outcome.notice(&legacy).unwrap();
        assert!(notice.ends_with("will not be tried again."), "{notice}");
        assert_eq!(
            import_once(&db, &legacy, workspace.path()),
            Outcome::AlreadyDone,
            "{content}: said once"
        );
        assert_eq!(bytes(&legacy), before, "{content}");
    }

    // Locked by a Unipi still writing (a rollback journal, so readers wait too).
    std::fs::remove_file(&legacy).unwrap();
    unipi_db(&legacy, workspace.path());
    let writer = Connection::open(&legacy).unwrap();
    writer
        .execute_batch("PRAGMA journal_mode=DELETE; BEGIN EXCLUSIVE;")
        .unwrap();
    let db = SessionDb::open_in_memory().unwrap();
    let outcome = import_once(&db, &legacy, workspace.path());
    let Outcome::Failed { reason, again } = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(*again && reason.contains("locked"), "{reason}");
    assert!(
        outcome
            .notice(&legacy)
            .unwrap()
            .ends_with("the next start tries again.")
    );
    writer.execute_batch("COMMIT;").unwrap();
    drop(writer);
    assert!(matches!(
        import_once(&db, &legacy, workspace.path()),
        Outcome::Imported(Imported { events: 3, .. })
    ));
}

/// Through the module's start: the first start says what it imported, the next says nothing,
/// and recall over the project's file finds the old history.
#[test]
fn the_first_start_imports_and_says_so() {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    unipi_db(&legacy_path(home.path()), workspace.path());
    let start =
        || super::super::module::CompactorModule::start(Some(home.path()), workspace.path());
    let first = start();
    assert_eq!(first.notices.len(), 1, "{:?}", first.notices);
    assert!(first.notices[0].starts_with("Imported the original Unipi compactor's history"));
    drop(first);
    let second = start();
    assert_eq!(second.notices, Vec::<String>::new());
    let path = crate::sessiondb::project_db_path(
        &crate::sessiondb::default_db_dir(home.path()),
        workspace.path(),
    );
    drop(second);
    let db = SessionDb::open(&path).unwrap().db;
    assert_eq!(recall(&db, "capacitor").len(), 2);
}

use std::fs;

use super::recall::{SNIPPET_MAX_CHARS, sanitize_query};
use super::test_support::Unwritable;
use super::*;

/// The version 1 layout as it shipped, written out by hand so the migration test does not
/// depend on `schema::MIGRATIONS` staying honest.
const V1_BY_HAND: &str = "
CREATE TABLE sessions (session_id TEXT PRIMARY KEY, project_dir TEXT NOT NULL,
    started_at_ms INTEGER NOT NULL);
CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
    kind TEXT NOT NULL, priority INTEGER NOT NULL, data TEXT NOT NULL, data_hash TEXT NOT NULL,
    at_ms INTEGER NOT NULL);
CREATE INDEX events_by_session ON events(session_id, id);
CREATE TABLE compactions (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
    at_ms INTEGER NOT NULL, tokens_before INTEGER NOT NULL, tokens_after INTEGER NOT NULL,
    summary TEXT NOT NULL);
CREATE INDEX compactions_by_session ON compactions(session_id, id);
INSERT INTO sessions VALUES ('old-session', '/src/old', 1000);
INSERT INTO events (session_id, kind, priority, data, data_hash, at_ms)
    VALUES ('old-session', 'file_edit', 2, 'src/legacy.rs', 'x', 1001);
INSERT INTO compactions (session_id, at_ms, tokens_before, tokens_after, summary)
    VALUES ('old-session', 1002, 90000, 12000, 'Goal: port the flux capacitor to Rust.');
PRAGMA user_version = 1;
";

fn mem() -> SessionDb {
    SessionDb::open_in_memory().unwrap()
}

fn event(kind: EventKind, priority: u8, data: &str) -> NewEvent {
    NewEvent {
        kind,
        priority,
        data: data.to_string(),
        entry_id: None,
    }
}

fn doc(entry_id: &str, kind: DocKind, text: &str) -> IndexDoc {
    IndexDoc {
        entry_id: entry_id.to_string(),
        kind,
        tool: (kind == DocKind::ToolResult).then(|| "bash".to_string()),
        text: text.to_string(),
        at_ms: Some(1),
    }
}

fn query(text: &str, scope: RecallScope) -> RecallQuery {
    RecallQuery {
        text: text.to_string(),
        scope,
        limit: 10,
        offset: 0,
        mode: RecallMode::Words,
        expand: false,
    }
}

/// How many documents match `text` in this project.
fn project_total(db: &SessionDb, text: &str) -> usize {
    db.recall(&query(text, RecallScope::Project)).unwrap().total
}

/// A database file written straight through SQLite, bypassing `SessionDb` (old or foreign layouts).
fn raw_sqlite_file(path: impl AsRef<std::path::Path>, sql: &str) {
    Connection::open(path).unwrap().execute_batch(sql).unwrap();
}

fn record(session: &str, at_ms: i64, before: u64, after: u64, summary: &str) -> CompactionRecord {
    CompactionRecord {
        session_id: session.to_string(),
        at_ms,
        reason: "threshold".to_string(),
        tokens_before: before,
        tokens_after: after,
        messages_summarized: 40,
        blocks_kept: 12,
        blocks_dropped: 30,
        duration_ms: 3,
        summary: summary.to_string(),
        first_kept_entry_id: "e41".to_string(),
        manifest_json: r#"[{"id":"e1","role":"user","chars":10}]"#.to_string(),
    }
}

fn entry_ids(result: &RecallResult) -> Vec<&str> {
    result.hits.iter().map(|h| h.entry_id.as_str()).collect()
}

fn table_names(db: &SessionDb) -> Vec<String> {
    let mut stmt = db
        .conn()
        .prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger') ORDER BY name")
        .unwrap();
    stmt.query_map([], |row| row.get(0))
        .unwrap()
        .collect::<rusqlite::Result<Vec<String>>>()
        .unwrap()
}

#[test]
fn fresh_file_is_created_migrated_and_in_wal_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("nested/db/p.sqlite");
    let opened = SessionDb::open(&path).unwrap();
    assert!(opened.recovered.is_none());
    let db = opened.db;
    assert_eq!(db.schema_version().unwrap(), schema::CURRENT_VERSION);
    assert_eq!(db.path(), path);
    let mode: String = db
        .conn()
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let tables = table_names(&db);
    for table in [
        "compactions",
        "content_chunks",
        "content_docs",
        "content_fts",
        "events",
        "ingest_offsets",
        "sessions",
    ] {
        assert!(tables.iter().any(|t| t == table), "{table} in {tables:?}");
    }
    drop(db);
    // Reopening an up-to-date file runs no step again.
    let again = SessionDb::open(&path).unwrap();
    assert!(again.recovered.is_none());
    assert_eq!(again.db.schema_version().unwrap(), schema::CURRENT_VERSION);
}

#[test]
fn version_one_file_is_migrated_with_its_data() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("old.sqlite");
    raw_sqlite_file(&path, V1_BY_HAND);

    let opened = SessionDb::open(&path).unwrap();
    assert!(opened.recovered.is_none());
    let db = opened.db;
    assert_eq!(db.schema_version().unwrap(), schema::CURRENT_VERSION);

    let events = db.events("old-session", 10).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, EventKind::FileEdit);
    assert_eq!(events[0].data, "src/legacy.rs");
    assert_eq!(events[0].entry_id, None);

    let last = db.last_compaction("old-session").unwrap().unwrap();
    assert_eq!(
        (last.record.tokens_before, last.record.tokens_after),
        (90_000, 12_000)
    );
    assert_eq!(last.record.manifest_json, "[]");
    assert_eq!(last.record.reason, "");

    // The summary version 1 held is searchable, and the new tables work.
    let found = db
        .recall(&query("flux capacitor", RecallScope::Project))
        .unwrap();
    assert_eq!(entry_ids(&found), [format!("compaction:{}", last.id)]);
    assert_eq!(found.hits[0].project_dir, "/src/old");
    db.set_ingest_offset("/s.jsonl", 77).unwrap();
    assert_eq!(db.ingest_offset("/s.jsonl").unwrap(), 77);
    // Version 3's sidekick ledger is there too.
    assert_eq!(db.sidekick_totals(None).unwrap().calls, 0);
    db.upsert_session(&SessionMeta {
        session_id: "old-session".to_string(),
        session_file: Some("/s.jsonl".to_string()),
        project_dir: "/src/old".to_string(),
    })
    .unwrap();
    assert!(
        db.insert_event("old-session", &event(EventKind::Git, 2, "git: commit"))
            .unwrap()
    );
}

#[test]
fn concurrent_first_opens_all_succeed() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("race.sqlite");
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let path = path.clone();
            std::thread::spawn(move || {
                let db = SessionDb::open(&path).map(|opened| opened.db)?;
                db.index_content("s", &doc(&format!("e{i}"), DocKind::User, "race"))?;
                db.schema_version()
            })
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.join().unwrap().unwrap(), schema::CURRENT_VERSION);
    }
    let db = SessionDb::open(&path).unwrap().db;
    assert_eq!(project_total(&db, "race"), 4);
}

#[test]
fn newer_schema_is_refused_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("future.sqlite");
    raw_sqlite_file(&path, "CREATE TABLE x (y); PRAGMA user_version = 99;");
    let err = SessionDb::open(&path).unwrap_err();
    assert!(
        matches!(err, DbError::NewerSchema { found: 99, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("future.sqlite"), "{err}");
    assert!(path.exists());
}

#[test]
fn garbage_file_is_moved_aside_and_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("p.sqlite");
    let garbage =
        b"this is certainly not an sqlite database, just some bytes \x00\xff\x13".repeat(80);
    fs::write(&path, &garbage).unwrap();
    fs::write(tmp.path().join("p.sqlite-wal"), b"stale wal").unwrap();

    let opened = SessionDb::open(&path).unwrap();
    let recovered = opened.recovered.clone().unwrap();
    assert!(recovered.reason.contains("not a database"), "{recovered:?}");
    let moved_name = recovered.moved_to.file_name().unwrap().to_string_lossy();
    assert!(moved_name.starts_with("p.sqlite.corrupt-"), "{moved_name}");
    assert_eq!(fs::read(&recovered.moved_to).unwrap(), garbage);
    // The stale WAL went aside with the file; it must not have been replayed into the fresh one.
    let mut moved_wal = recovered.moved_to.as_os_str().to_os_string();
    moved_wal.push("-wal");
    assert_eq!(fs::read(moved_wal).unwrap(), b"stale wal");
    assert!(
        !fs::read(&path)
            .unwrap()
            .windows(9)
            .any(|w| w == b"stale wal")
    );

    let db = opened.db;
    assert_eq!(db.schema_version().unwrap(), schema::CURRENT_VERSION);
    assert!(
        db.insert_event("s", &event(EventKind::Error, 3, "boom"))
            .unwrap()
    );
    assert_eq!(db.events("s", 10).unwrap().len(), 1);
}

/// A damaged main file beside its real WAL (frames not yet checkpointed into it): SQLite would
/// checkpoint the WAL into the damaged file and delete it when the failed connection closes. All
/// three files move aside together, byte for byte.
#[test]
fn damaged_file_moves_aside_with_its_real_wal_and_shm() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("p.sqlite");
    let wal_path = tmp.path().join("p.sqlite-wal");
    let shm_path = tmp.path().join("p.sqlite-shm");
    let (wal, shm) = {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE t (x TEXT); INSERT INTO t VALUES ('checkpointed');
             PRAGMA wal_checkpoint(TRUNCATE);
             INSERT INTO t VALUES ('only in the wal');",
        )
        .unwrap();
        // Copied while the connection is open: closing it would checkpoint and delete the WAL.
        (fs::read(&wal_path).unwrap(), fs::read(&shm_path).unwrap())
    };
    assert!(!wal.is_empty());
    let garbage = b"not a database at all \x00\xff".repeat(300);
    fs::write(&path, &garbage).unwrap();
    fs::write(&wal_path, &wal).unwrap();
    fs::write(&shm_path, &shm).unwrap();

    let opened = SessionDb::open(&path).unwrap();
    let recovered = opened.recovered.clone().unwrap();
    let moved = &recovered.moved_to;
    let companion = |suffix: &str| {
        let mut name = moved.as_os_str().to_os_string();
        name.push(suffix);
        PathBuf::from(name)
    };
    // Compared without printing: a failure would dump kilobytes.
    assert!(
        fs::read(moved).unwrap() == garbage,
        "the main file is untouched"
    );
    assert!(
        fs::read(companion("-wal")).ok() == Some(wal),
        "the WAL moved aside intact"
    );
    assert!(
        companion("-shm").exists(),
        "the shared-memory file moved aside"
    );
    assert_eq!(opened.db.schema_version().unwrap(), schema::CURRENT_VERSION);
}

#[test]
fn malformed_database_is_moved_aside_and_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("m.sqlite");
    {
        let db = SessionDb::open(&path).unwrap().db;
        db.index_content("s", &doc("e1", DocKind::User, "hello"))
            .unwrap();
    }
    // Keep the 100-byte header (so it still looks like SQLite) and wreck the schema page.
    let mut bytes = fs::read(&path).unwrap();
    assert!(bytes.len() > 4096, "{}", bytes.len());
    for byte in &mut bytes[100..4096] {
        *byte = 0xA5;
    }
    fs::write(&path, &bytes).unwrap();

    let opened = SessionDb::open(&path).unwrap();
    let recovered = opened.recovered.clone().unwrap();
    assert!(recovered.reason.contains("malformed"), "{recovered:?}");
    assert!(recovered.moved_to.exists());
    let fresh = opened.db;
    assert_eq!(project_total(&fresh, "hello"), 0);
}

#[test]
fn repeated_events_within_the_window_are_skipped() {
    let db = mem();
    let edit = event(EventKind::FileEdit, 2, "src/a.rs");
    assert!(db.insert_event("s", &edit).unwrap());
    assert!(!db.insert_event("s", &edit).unwrap());
    // Same data under another kind, or in another session, is not a repeat.
    assert!(
        db.insert_event("s", &event(EventKind::FileRead, 2, "src/a.rs"))
            .unwrap()
    );
    assert!(db.insert_event("other", &edit).unwrap());
    for i in 0..4 {
        assert!(
            db.insert_event("s", &event(EventKind::Bash, 1, &format!("ls {i}")))
                .unwrap()
        );
    }
    // Now 5 newer events sit between: the edit may be recorded again.
    assert!(db.insert_event("s", &edit).unwrap());
    let kinds: Vec<EventKind> = db
        .events("s", 100)
        .unwrap()
        .iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds.len(), 7);
    assert_eq!(kinds.first(), Some(&EventKind::FileEdit));
    assert_eq!(kinds.last(), Some(&EventKind::FileEdit));
    // `limit` keeps the latest, oldest first.
    let latest = db.events("s", 2).unwrap();
    assert_eq!(latest[0].data, "ls 3");
    assert_eq!(latest[1].data, "src/a.rs");
}

#[test]
fn cap_evicts_lowest_priority_then_oldest() {
    let db = mem();
    db.upsert_session(&SessionMeta {
        session_id: "s".to_string(),
        session_file: None,
        project_dir: "/p".to_string(),
    })
    .unwrap();
    assert!(
        db.insert_event("s", &event(EventKind::Error, 3, "first error"))
            .unwrap()
    );
    let total = usize::try_from(MAX_EVENTS_PER_SESSION).unwrap() + 10;
    for i in 0..total {
        let kind = if i % 2 == 0 {
            EventKind::Bash
        } else {
            EventKind::ToolCall
        };
        assert!(
            db.insert_event("s", &event(kind, 1, &format!("cmd {i}")))
                .unwrap()
        );
    }
    let events = db.events("s", 5_000).unwrap();
    assert_eq!(events.len(), 1_000);
    assert_eq!(events[0].data, "first error", "high priority survives");
    // 1,011 low-priority ones were offered, 999 fit: the 12 oldest went.
    assert_eq!(events[1].data, "cmd 11");
    assert_eq!(events.last().unwrap().data, format!("cmd {}", total - 1));
    let last_event_at: Option<i64> = db
        .conn()
        .query_row(
            "SELECT last_event_at_ms FROM sessions WHERE session_id = 's'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert!(last_event_at.is_some());
}

#[test]
fn recall_ranks_by_relevance_and_respects_scopes() {
    let db = mem();
    db.upsert_session(&SessionMeta {
        session_id: "a".to_string(),
        session_file: Some("/a.jsonl".to_string()),
        project_dir: "/work/proj".to_string(),
    })
    .unwrap();
    let filler = "The weather was mild and the build went on quietly for a while. ".repeat(12);
    db.index_many(
        "a",
        &[
            doc(
                "e1",
                DocKind::User,
                "Please fix the tokenizer: the tokenizer drops tokenizer state.",
            ),
            doc(
                "e2",
                DocKind::Assistant,
                &format!("{filler} Also the tokenizer. {filler}"),
            ),
            doc("e3", DocKind::ToolResult, "unrelated output of ls"),
        ],
    )
    .unwrap();
    db.index_content(
        "b",
        &doc(
            "e9",
            DocKind::User,
            "tokenizer question from another session",
        ),
    )
    .unwrap();

    let project = db
        .recall(&query("tokenizer", RecallScope::Project))
        .unwrap();
    assert_eq!(project.total, 3);
    assert_eq!(entry_ids(&project)[0], "e1");
    assert_eq!(*entry_ids(&project).last().unwrap(), "e2");
    assert!(project.hits.windows(2).all(|w| w[0].score >= w[1].score));
    assert_eq!(project.hits[0].kind, DocKind::User);
    assert_eq!(project.hits[0].project_dir, "/work/proj");
    assert_eq!(project.hits[0].at_ms, Some(1));

    let session = db
        .recall(&query("tokenizer", RecallScope::Session("b".to_string())))
        .unwrap();
    assert_eq!(entry_ids(&session), ["e9"]);
    assert_eq!(session.total, 1);
    assert_eq!(session.hits[0].project_dir, "", "session b has no meta row");

    // Porter stemming: "outputs" finds "output"; the tool name is carried.
    let stemmed = db.recall(&query("outputs", RecallScope::Project)).unwrap();
    assert_eq!(entry_ids(&stemmed), ["e3"]);
    assert_eq!(stemmed.hits[0].tool.as_deref(), Some("bash"));

    // Paging: the total stays, the page moves.
    let page = db
        .recall(&RecallQuery {
            limit: 1,
            offset: 1,
            ..query("tokenizer", RecallScope::Project)
        })
        .unwrap();
    assert_eq!(page.total, 3);
    assert_eq!(page.hits.len(), 1);
    assert_eq!(page.hits[0].entry_id, project.hits[1].entry_id);
}

#[test]
fn recall_falls_back_to_any_word_when_all_words_find_nothing() {
    let db = mem();
    db.index_content("s", &doc("e1", DocKind::User, "the parser panics on tabs"))
        .unwrap();
    db.index_content("s", &doc("e2", DocKind::User, "the renderer flickers"))
        .unwrap();
    let both = db
        .recall(&query("parser tabs", RecallScope::Project))
        .unwrap();
    assert_eq!(entry_ids(&both), ["e1"]);
    let any = db
        .recall(&query(
            "parser flickers nonexistentword",
            RecallScope::Project,
        ))
        .unwrap();
    let mut ids = entry_ids(&any);
    ids.sort();
    assert_eq!(ids, ["e1", "e2"]);
    // A path token is one phrase: its words must be adjacent.
    db.index_content(
        "s",
        &doc("e3", DocKind::ToolResult, "edited src/main.rs and lib"),
    )
    .unwrap();
    let path = db
        .recall(&query("src/main.rs", RecallScope::Project))
        .unwrap();
    assert_eq!(entry_ids(&path), ["e3"]);
}

#[test]
fn session_scope_works_for_any_session_id() {
    let db = mem();
    let odd = ["a b\"c", "日本-セッション", "", "s6162", "NEAR(x)"];
    for (i, id) in odd.iter().enumerate() {
        db.index_content(
            id,
            &doc(&format!("e{i}"), DocKind::User, "shared words here"),
        )
        .unwrap();
    }
    for (i, id) in odd.iter().enumerate() {
        let found = db
            .recall(&query(
                "shared missingword",
                RecallScope::Session(id.to_string()),
            ))
            .unwrap();
        assert_eq!(entry_ids(&found), [format!("e{i}")], "{id:?}");
    }
    // The session token is not searchable as text.
    let token = session_token("s6162");
    assert_eq!(project_total(&db, &token), 0);
}

#[test]
fn very_common_words_rank_only_the_newest_matches_and_count_to_a_cap() {
    let db = mem();
    let window = usize::try_from(recall::RANK_WINDOW).unwrap();
    // The oldest document is by far the best match, but more than a window of newer ones follow.
    let mut docs = vec![doc("best", DocKind::User, &"deploy ".repeat(20))];
    let newer = usize::try_from(recall::TOTAL_CAP).unwrap() + 10;
    assert!(newer > window);
    docs.extend((0..newer).map(|i| {
        doc(
            &format!("e{i}"),
            DocKind::ToolResult,
            &format!("deploy step {i} of a long pipeline with many other words in it"),
        )
    }));
    db.index_many("s", &docs).unwrap();
    let found = db.recall(&query("deploy", RecallScope::Project)).unwrap();
    assert_eq!(
        found.total,
        usize::try_from(recall::TOTAL_CAP).unwrap(),
        "the total is counted up to the cap"
    );
    assert_eq!(found.hits.len(), 10);
    assert!(!entry_ids(&found).contains(&"best"));
    // A rarer word is ranked over all its matches.
    db.index_content("s", &doc("late", DocKind::User, "rollback once"))
        .unwrap();
    db.index_content(
        "s",
        &doc("best", DocKind::User, "rollback rollback rollback deploy"),
    )
    .unwrap();
    let rare = db.recall(&query("rollback", RecallScope::Project)).unwrap();
    assert_eq!(entry_ids(&rare), ["best", "late"]);
}

#[test]
fn nasty_queries_never_error() {
    let db = mem();
    db.index_content(
        "s",
        &doc("e1", DocKind::User, "AND OR NOT near star quote paren"),
    )
    .unwrap();
    let nasty = [
        "",
        "   ",
        "\"",
        "\"\"",
        "*",
        "AND",
        "OR NOT",
        "-",
        "(",
        ")",
        "a\"b",
        "NEAR(a b)",
        "text:star",
        "^quote",
        "star*",
        "'; DROP TABLE events; --",
        "{col1 col2}: x",
        "\u{0}\u{1}\u{7f}",
        "日本語 ✓ émoji 🎉",
        "- - - ( ( ( \" \" \"",
        &"x".repeat(10_000),
        &"word ".repeat(500),
    ];
    for text in nasty {
        for scope in [RecallScope::Project, RecallScope::Session("s".to_string())] {
            let result = db.recall(&query(text, scope));
            assert!(result.is_ok(), "{text:?}: {result:?}");
        }
    }
    // Operators are dropped, not searched for; words next to punctuation still are.
    assert_eq!(project_total(&db, "AND"), 0);
    assert_eq!(project_total(&db, "star*"), 1);
    assert_eq!(
        project_total(&db, "text:star"),
        0,
        "`text star` is a phrase that does not occur"
    );
}

#[test]
fn sanitized_queries_are_quoted_phrases() {
    let table: &[(&str, &[&str])] = &[
        ("", &[]),
        ("\" * - ( AND or Not near", &[]),
        ("Tokenizer", &["\"tokenizer\""]),
        ("foo bar foo", &["\"foo\"", "\"bar\""]),
        ("src/main.rs", &["\"src main rs\""]),
        ("a\"b OR c*", &["\"a b\"", "\"c\""]),
        ("naïve café", &["\"naïve\"", "\"café\""]),
        ("where is the parser", &["\"parser\""]),
        ("the AND a", &["\"the\"", "\"a\""]),
        ("the/parser", &["\"the parser\""]),
    ];
    for (input, want) in table {
        assert_eq!(sanitize_query(input), *want, "{input:?}");
    }
    assert_eq!(sanitize_query(&"w ".repeat(100)).len(), 1);
    let many: String = (0..40).map(|i| format!("word{i} ")).collect();
    assert_eq!(sanitize_query(&many).len(), 16);
}

/// Issue 31: every word of "tiles E0502 error fix" occurs in a failing test's output, so the
/// all-words search finds only that; the assistant's explanation, which says the fix, follows it
/// from the any-word search instead of never being reached.
#[test]
fn any_word_hits_follow_when_all_words_find_fewer_than_asked() {
    let db = mem();
    let output = "error[E0502]: cannot borrow in tiles; no fix applied";
    db.index_content("s", &doc("t1", DocKind::ToolResult, output))
        .unwrap();
    let explanation = "The E0502 came from holding the borrow; fixed by cloning the key first.";
    db.index_content("s", &doc("a1", DocKind::Assistant, explanation))
        .unwrap();
    db.index_content("s", &doc("u1", DocKind::User, "the renderer flickers"))
        .unwrap();
    let found = db
        .recall(&query("tiles E0502 error fix", RecallScope::Project))
        .unwrap();
    assert_eq!(entry_ids(&found), ["t1", "a1"]);
    assert_eq!(found.total, 2);
    // Paging goes on through the any-word hits.
    let second = db
        .recall(&RecallQuery {
            limit: 1,
            offset: 1,
            ..query("tiles E0502 error fix", RecallScope::Project)
        })
        .unwrap();
    assert_eq!(entry_ids(&second), ["a1"]);
}

/// Issue 31: the snippet is where the query's words are densest and reaches past them to the
/// answer, not a window around the first word that happens to match.
#[test]
fn snippets_reach_the_answer_after_the_words_asked_with() {
    let db = mem();
    let filler = "The tiles module was reviewed and nothing changed in it today. ".repeat(12);
    let text = format!(
        "{filler}We decided the tile cache uses quokkadb because it keeps working offline. {filler}"
    );
    db.index_content("s", &doc("a1", DocKind::Assistant, &text))
        .unwrap();
    let found = db
        .recall(&query("decided tile cache", RecallScope::Project))
        .unwrap();
    let snippet = &found.hits[0].snippet;
    assert!(snippet.chars().count() <= SNIPPET_MAX_CHARS, "{snippet}");
    assert!(
        snippet.contains("uses quokkadb because it keeps working offline"),
        "{snippet}"
    );
}

#[test]
fn snippets_are_bounded_and_around_the_match() {
    let db = mem();
    let long_words = (0..400)
        .map(|i| format!("filler{i:03}abcdefghijklmnopqrstuvwxyz"))
        .collect::<Vec<_>>();
    let text = format!(
        "{}\n\nneedle\tin the  middle {}",
        long_words[..200].join(" "),
        long_words[200..].join(" ")
    );
    db.index_content("s", &doc("e1", DocKind::ToolResult, &text))
        .unwrap();
    let found = db.recall(&query("needle", RecallScope::Project)).unwrap();
    assert_eq!(found.total, 1);
    let snippet = &found.hits[0].snippet;
    assert!(snippet.chars().count() <= SNIPPET_MAX_CHARS, "{snippet}");
    assert!(snippet.contains("needle in the middle"), "{snippet}");
    assert!(!snippet.contains('\n'));
    assert!(snippet.chars().count() > SNIPPET_MAX_CHARS / 2, "{snippet}");
    assert!(!snippet.contains('\u{E000}') && !snippet.contains('\u{E001}'));

    db.index_content("s", &doc("e2", DocKind::User, "short answer: 42"))
        .unwrap();
    let short = db.recall(&query("answer", RecallScope::Project)).unwrap();
    assert_eq!(short.hits[0].snippet, "short answer: 42");
}

#[test]
fn reindexing_replaces_chunks_and_long_texts_are_chunked() {
    let db = mem();
    let first = doc("e1", DocKind::ToolResult, "alpha beta");
    assert_eq!(db.index_content("s", &first).unwrap(), 1);
    assert_eq!(db.index_content("s", &first).unwrap(), 1);
    assert_eq!(project_total(&db, "alpha"), 1);
    // Same entry, new text: the old words are gone.
    db.index_content("s", &doc("e1", DocKind::ToolResult, "gamma"))
        .unwrap();
    assert_eq!(project_total(&db, "alpha"), 0);
    assert_eq!(project_total(&db, "gamma"), 1);
    // The same entry id under another kind is another document.
    db.index_content("s", &doc("e1", DocKind::Assistant, "gamma"))
        .unwrap();
    assert_eq!(project_total(&db, "gamma"), 2);

    let long = (0..300)
        .map(|i| format!("line {i} of a long build log"))
        .collect::<Vec<_>>()
        .join("\n");
    let chunks = db
        .index_content("s", &doc("e2", DocKind::ToolResult, &long))
        .unwrap();
    assert!(chunks >= 4, "{chunks}");
    let rows: i64 = db
        .conn()
        .query_row("SELECT count(*) FROM content_chunks", [], |row| row.get(0))
        .unwrap();
    assert_eq!(rows, 2 + i64::try_from(chunks).unwrap());
    assert_eq!(project_total(&db, "build log"), chunks);
    // Blank text indexes nothing and removes what was there.
    assert_eq!(
        db.index_content("s", &doc("e2", DocKind::ToolResult, "  "))
            .unwrap(),
        0
    );
    assert_eq!(project_total(&db, "build"), 0);
}

#[test]
fn compactions_are_recorded_totalled_and_searchable() {
    let db = mem();
    assert_eq!(
        db.compaction_totals(None).unwrap(),
        CompactionTotals::default()
    );
    assert!(db.last_compaction("s").unwrap().is_none());
    let first = db
        .record_compaction(&record(
            "s",
            100,
            100_000,
            20_000,
            "Goal: refactor the pager.",
        ))
        .unwrap();
    let second = db
        .record_compaction(&record(
            "s",
            200,
            60_000,
            15_000,
            "Goal: benchmark the pager.",
        ))
        .unwrap();
    db.record_compaction(&record("t", 300, 10_000, 12_000, "Grew."))
        .unwrap();
    assert!(second > first);

    let last = db.last_compaction("s").unwrap().unwrap();
    assert_eq!(last.id, second);
    let stored = record("s", 200, 60_000, 15_000, "Goal: benchmark the pager.");
    assert_eq!(
        (
            last.record.at_ms,
            last.record.reason.as_str(),
            last.record.messages_summarized,
            last.record.blocks_kept,
            last.record.blocks_dropped,
            last.record.duration_ms,
            last.record.first_kept_entry_id.as_str(),
            last.record.manifest_json.as_str(),
        ),
        (
            stored.at_ms,
            stored.reason.as_str(),
            stored.messages_summarized,
            stored.blocks_kept,
            stored.blocks_dropped,
            stored.duration_ms,
            stored.first_kept_entry_id.as_str(),
            stored.manifest_json.as_str(),
        )
    );

    assert_eq!(
        db.compaction_totals(Some("s")).unwrap(),
        CompactionTotals {
            count: 2,
            tokens_saved: 125_000,
            last_at_ms: Some(200),
        }
    );
    assert_eq!(
        db.compaction_totals(None).unwrap(),
        CompactionTotals {
            count: 3,
            tokens_saved: 125_000,
            last_at_ms: Some(300),
        }
    );

    let found = db
        .recall(&query("benchmark", RecallScope::Session("s".to_string())))
        .unwrap();
    assert_eq!(entry_ids(&found), [format!("compaction:{second}")]);
    assert_eq!(found.hits[0].kind, DocKind::Summary);
    assert_eq!(found.hits[0].at_ms, Some(200));
}

#[test]
fn ingest_offsets_start_at_zero_and_move() {
    let db = mem();
    assert_eq!(db.ingest_offset("/s/a.jsonl").unwrap(), 0);
    db.set_ingest_offset("/s/a.jsonl", 4_096).unwrap();
    db.set_ingest_offset("/s/b.jsonl", 1).unwrap();
    db.set_ingest_offset("/s/a.jsonl", 8_192).unwrap();
    assert_eq!(db.ingest_offset("/s/a.jsonl").unwrap(), 8_192);
    assert_eq!(db.ingest_offset("/s/b.jsonl").unwrap(), 1);
}

#[test]
fn upsert_keeps_the_start_and_a_known_file() {
    let db = mem();
    let meta = SessionMeta {
        session_id: "s".to_string(),
        session_file: Some("/f.jsonl".to_string()),
        project_dir: "/p".to_string(),
    };
    db.upsert_session(&meta).unwrap();
    db.upsert_session(&SessionMeta {
        session_file: None,
        project_dir: "/q".to_string(),
        ..meta
    })
    .unwrap();
    let (file, dir, count): (Option<String>, String, i64) = db
        .conn()
        .query_row(
            "SELECT session_file, project_dir, (SELECT count(*) FROM sessions) FROM sessions",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        (file.as_deref(), dir.as_str(), count),
        (Some("/f.jsonl"), "/q", 1)
    );
}

#[test]
fn all_projects_merges_files_and_skips_bad_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = default_db_dir(tmp.path());
    let ws_a = tmp.path().join("a");
    let ws_b = tmp.path().join("b");
    fs::create_dir_all(&ws_a).unwrap();
    fs::create_dir_all(&ws_b).unwrap();
    for (ws, text) in [
        (&ws_a, "the migration to postgres failed twice"),
        (&ws_b, "postgres postgres postgres tuning notes"),
    ] {
        let db = SessionDb::open(&project_db_path(&dir, ws)).unwrap().db;
        db.upsert_session(&SessionMeta {
            session_id: "s".to_string(),
            session_file: None,
            project_dir: ws.display().to_string(),
        })
        .unwrap();
        db.index_content("s", &doc("e1", DocKind::User, text))
            .unwrap();
    }
    // Kept open while searching: WAL readers and a live writer coexist.
    let live = SessionDb::open(&project_db_path(&dir, &ws_a)).unwrap().db;
    fs::write(dir.join("garbage.sqlite"), b"not a database at all, really").unwrap();
    raw_sqlite_file(dir.join("v1.sqlite"), V1_BY_HAND);
    fs::write(dir.join("notes.txt"), b"postgres").unwrap();

    let found = recall_all_projects(&dir, &query("postgres", RecallScope::AllProjects)).unwrap();
    assert_eq!(found.total, 2);
    let dirs: Vec<&str> = found.hits.iter().map(|h| h.project_dir.as_str()).collect();
    assert_eq!(
        dirs,
        [ws_b.display().to_string(), ws_a.display().to_string()]
    );
    // The skipped files were left as they were.
    assert_eq!(
        fs::read(dir.join("garbage.sqlite")).unwrap(),
        b"not a database at all, really"
    );

    let second = recall_all_projects(
        &dir,
        &RecallQuery {
            limit: 1,
            offset: 1,
            ..query("postgres", RecallScope::AllProjects)
        },
    )
    .unwrap();
    assert_eq!(second.total, 2);
    assert_eq!(second.hits[0].project_dir, ws_a.display().to_string());

    let fallback =
        recall_all_projects(&dir, &query("tuning migration", RecallScope::AllProjects)).unwrap();
    assert_eq!(fallback.total, 2, "neither file has both words");
    // The project's own connection still sees only its own file.
    assert_eq!(
        live.recall(&query("postgres", RecallScope::AllProjects))
            .unwrap()
            .total,
        1
    );

    let missing = recall_all_projects(
        &tmp.path().join("nope"),
        &query("x", RecallScope::AllProjects),
    );
    assert_eq!(missing.unwrap(), RecallResult::default());
}

#[test]
fn corruption_found_while_open_is_reported_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("late.sqlite");
    let db = SessionDb::open(&path).unwrap().db;
    let text = "payload words ".repeat(2_000);
    for i in 0..20 {
        db.index_content("s", &doc(&format!("e{i}"), DocKind::ToolResult, &text))
            .unwrap();
    }
    db.conn()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    let mut bytes = fs::read(&path).unwrap();
    let len = bytes.len();
    assert!(len > 64 * 1024, "{len}");
    // Wreck everything after the first page: the schema still reads, the data does not.
    for byte in &mut bytes[4096..] {
        *byte = 0x5A;
    }
    fs::write(&path, &bytes).unwrap();
    let reopened = Connection::open(&path).unwrap();
    let db = SessionDb::from_conn(reopened, &path);
    let err = db
        .recall(&query("payload", RecallScope::Project))
        .unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains("late.sqlite"), "{err}");
    drop(db);
    let opened = SessionDb::replace_corrupt(&path, &err.to_string()).unwrap();
    let recovered = opened.recovered.unwrap();
    assert_eq!(fs::read(&recovered.moved_to).unwrap(), bytes);
    assert_eq!(recovered.reason, err.to_string());
    assert_eq!(project_total(&opened.db, "payload"), 0);
    assert_eq!(opened.db.schema_version().unwrap(), schema::CURRENT_VERSION);
}

#[test]
fn errors_name_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let blocker = tmp.path().join("file");
    fs::write(&blocker, b"").unwrap();
    // A directory cannot be created under a regular file.
    let err = SessionDb::open(&blocker.join("db/p.sqlite")).unwrap_err();
    assert!(matches!(err, DbError::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("file/db/p.sqlite"), "{err}");
}

#[test]
fn kinds_round_trip_through_their_names() {
    for kind in EventKind::ALL {
        assert_eq!(EventKind::parse(kind.as_str()), Some(kind));
    }
    for kind in DocKind::ALL {
        assert_eq!(DocKind::parse(kind.as_str()), Some(kind));
    }
    assert_eq!(EventKind::parse("nope"), None);
}

#[test]
fn an_unwritable_file_or_directory_is_refused_as_read_only() {
    for what in ["file", "directory"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("db");
        let path = dir.join("ro.sqlite");
        {
            let db = SessionDb::open(&path).unwrap().db;
            db.index_content("s", &doc("e1", DocKind::User, "hello"))
                .unwrap();
        }
        let _guard = Unwritable::new(if what == "file" { &path } else { &dir });
        let err = SessionDb::open(&path).unwrap_err();
        assert!(err.is_read_only(), "{what}: {err}");
        let text = err.to_string();
        assert!(
            text.contains("ro.sqlite") && text.contains("cannot be written"),
            "{what}: {text}"
        );
    }
}

#[test]
fn the_database_and_its_wal_and_shm_are_private_and_older_open_ones_are_tightened() {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |path: &std::path::Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(".unipi/db");
    let path = dir.join("p.sqlite");
    {
        let db = SessionDb::open(&path).unwrap().db;
        db.index_content("s", &doc("e1", DocKind::User, "the user's words"))
            .unwrap();
        // While it is open, SQLite keeps the write-ahead log and the shared memory beside it.
        let wal = schema_sibling(&path, "-wal");
        let shm = schema_sibling(&path, "-shm");
        assert!(wal.exists() && shm.exists());
        for file in [&path, &wal, &shm] {
            assert_eq!(mode(file), 0o600, "{}", file.display());
        }
        assert_eq!(mode(&dir), 0o700);
    }
    // What an older version left: a 0755 directory, 0644 files (another project's too).
    let other = dir.join("other.sqlite");
    raw_sqlite_file(&other, "CREATE TABLE t (x);");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    for file in [&path, &other] {
        fs::set_permissions(file, fs::Permissions::from_mode(0o644)).unwrap();
    }
    let db = SessionDb::open(&path).unwrap().db;
    db.index_content("s", &doc("e2", DocKind::User, "more words"))
        .unwrap();
    assert_eq!(mode(&dir), 0o700);
    for file in [&path, &other, &schema_sibling(&path, "-wal")] {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
}

fn schema_sibling(path: &std::path::Path, suffix: &str) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    std::path::PathBuf::from(name)
}

/// `mode: regex` (the original Unipi's): a case-insensitive regular expression over the chunks
/// in scope, newest first, with a snippet around the first match; paging and scopes as for
/// words; `expand` gives the whole chunk in both modes.
#[test]
fn regex_mode_matches_patterns_newest_first_and_expand_gives_whole_chunks() {
    let db = mem();
    let filler = "filler words about nothing much at all ".repeat(20);
    db.index_many(
        "a",
        &[
            doc("e1", DocKind::User, "error E1042 in parser.rs line 10"),
            doc("e2", DocKind::ToolResult, "no code here, only prose"),
            doc(
                "e3",
                DocKind::Assistant,
                &format!("{filler} saw ERROR e2077 near the end {filler}"),
            ),
        ],
    )
    .unwrap();
    db.index_content("b", &doc("e9", DocKind::User, "error E0001 elsewhere"))
        .unwrap();
    let regex = |pattern: &str, scope: RecallScope| RecallQuery {
        mode: RecallMode::Regex,
        ..query(pattern, scope)
    };

    // Words cannot express "E, then four digits"; the regex can, case-insensitively.
    let found = db
        .recall(&regex(r"e\d{4}", RecallScope::Session("a".into())))
        .unwrap();
    assert_eq!(entry_ids(&found), ["e3", "e1"], "newest first");
    assert_eq!(found.total, 2);
    let long = &found.hits[0].snippet;
    assert!(long.contains("ERROR e2077"), "{long}");
    assert!(long.chars().count() <= SNIPPET_MAX_CHARS, "{long}");
    assert!(long.starts_with('…') && long.ends_with('…'), "{long}");
    assert_eq!(found.hits[0].kind, DocKind::Assistant);

    let project = db.recall(&regex(r"e\d{4}", RecallScope::Project)).unwrap();
    assert_eq!(entry_ids(&project), ["e9", "e3", "e1"]);
    let page = db
        .recall(&RecallQuery {
            limit: 1,
            offset: 1,
            ..regex(r"e\d{4}", RecallScope::Project)
        })
        .unwrap();
    assert_eq!((entry_ids(&page), page.total), (vec!["e3"], 3));
    assert_eq!(
        db.recall(&regex("^no code", RecallScope::Project))
            .unwrap()
            .hits[0]
            .entry_id,
        "e2"
    );
    assert_eq!(
        db.recall(&regex("zzz+top", RecallScope::Project))
            .unwrap()
            .total,
        0
    );
    // FTS5 syntax means nothing to a regex, and the reverse.
    assert_eq!(
        db.recall(&regex("\"parser\" OR", RecallScope::Project))
            .unwrap()
            .total,
        0
    );

    // expand: the whole chunk, in regex mode and in words mode.
    for mode in [RecallMode::Regex, RecallMode::Words] {
        let expanded = db
            .recall(&RecallQuery {
                mode,
                expand: true,
                ..query("e2077", RecallScope::Project)
            })
            .unwrap();
        let whole = &expanded.hits[0].snippet;
        assert!(whole.chars().count() > SNIPPET_MAX_CHARS, "{mode:?}");
        assert!(whole.starts_with("filler words") && whole.ends_with("at all"));
    }

    // An invalid pattern is an error naming it, never a panic.
    let err = db
        .recall(&regex("(unclosed", RecallScope::Project))
        .unwrap_err();
    assert!(
        err.to_string().contains("invalid regular expression"),
        "{err}"
    );
}

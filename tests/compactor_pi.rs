//! Deterministic compaction end to end: the real `unipi-tui` binary in a PTY running the real,
//! pinned Pi 1.6.0 against the scripted model (`demo --scenario
//! tests/fixtures/scenarios/compactor.toml`). Three scripted turns put a fact in the session;
//! `/compact` typed into Pi is answered by the compactor's hook — no model request is made for
//! the summary (the scripted server logs every request it answers) — Pi shows the compacted
//! state, the project database under the test's HOME holds the statistics, and then the model
//! calls `session_recall` and gets the early fact back from before the compaction. Then
//! `/unipi:compact keep:1 <prompt>` compacts again and sends the prompt afterwards, and
//! `/unipi:compact-view` shows the last compaction. A control run with `overrideDefaultCompaction`
//! off shows Pi's own compaction does reach the model (so the request count means something).
//! Auto-compaction triggers when a reply leaves the context above the configured threshold, and
//! its invisible auto-continue message starts a turn without reaching the model's context. A
//! summary the database holds but Pi's session file lacks is restored once on `-c`.
//!
//! Pi refuses to compact a session smaller than its `compaction.keepRecentTokens`, so the demo's
//! Pi settings lower it (`UNIPI_DEMO_PI_SETTINGS`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::demo::spawn_demo;
use support::pi::PiLine;
use support::term::{OuterOptions, Session};
use unipi_tui::sessiondb::{SessionDb, default_db_dir, project_db_path};

const START: Duration = Duration::from_secs(90);
const REPLY: Duration = Duration::from_secs(60);

struct Workbench {
    session: Session,
    home: tempfile::TempDir,
}

fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios/compactor.toml")
}

/// Starts `unipi-tui demo` in a throwaway HOME (also the workspace), after `setup` prepared it.
fn start(setup: impl FnOnce(&Path)) -> Workbench {
    let home = tempfile::tempdir().unwrap();
    setup(home.path());
    start_in(home, &[])
}

/// Starts `unipi-tui demo` in `home` with extra Pi arguments.
fn start_in(home: tempfile::TempDir, pi_args: &[&str]) -> Workbench {
    // Pi refuses to compact a session smaller than `compaction.keepRecentTokens`.
    start_with_settings(home, pi_args, r#"{"compaction": {"keepRecentTokens": 40}}"#)
}

/// Starts `unipi-tui demo` in `home`, merging `settings` into the demo's Pi `settings.json`.
fn start_with_settings(home: tempfile::TempDir, pi_args: &[&str], settings: &str) -> Workbench {
    let outer = OuterOptions {
        rows: 40,
        cols: 120,
        kitty: true,
    };
    let session = spawn_demo(
        PiLine::Current,
        &scenario(),
        home.path(),
        pi_args,
        &[("UNIPI_DEMO_PI_SETTINGS", settings)],
        outer,
    );
    Workbench { session, home }
}

impl Workbench {
    fn wait_ready(&self) {
        self.session
            .wait_for("Pi's prompt with the scripted model", START, |s| {
                let text = s.contents();
                text.contains("scripted-compactor")
                    && (text.contains("pi running") || text.contains("○ idle"))
            })
            .unwrap();
    }

    fn ask(&self, prompt: &str, expect: &str) {
        self.session.type_text(prompt);
        self.session.send(b"\r");
        self.session.wait_for_text(expect, REPLY).unwrap();
    }

    fn log(&self) -> String {
        std::fs::read_to_string(
            self.home
                .path()
                .join(".local/state/unipi-tui/unipi-tui.log"),
        )
        .unwrap_or_default()
    }

    /// Requests the scripted server answered so far (it logs each one at debug level).
    fn model_requests(&self) -> usize {
        self.log().matches("scripted reply chosen").count()
    }

    /// Waits until the request count stops changing (the log is written asynchronously).
    fn settled_requests(&self) -> usize {
        let mut last = self.model_requests();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            std::thread::sleep(Duration::from_millis(700));
            let now = self.model_requests();
            if now == last || Instant::now() > deadline {
                return now;
            }
            last = now;
        }
    }

    fn database(&self) -> SessionDb {
        let workspace = std::fs::canonicalize(self.home.path()).unwrap();
        let path = project_db_path(&default_db_dir(self.home.path()), &workspace);
        assert!(path.exists(), "no project database at {}", path.display());
        SessionDb::open(&path).unwrap().db
    }
}

#[test]
fn compact_answers_without_the_model_and_recall_finds_what_was_compacted() {
    let mut wb = start(|_| {});
    wb.wait_ready();
    wb.ask(
        "Remember the codename BLUE-HERON-42 for later.",
        "NOTED-ONE",
    );
    wb.ask("Now the second step, please.", "STEP-TWO-DONE");
    wb.ask("And the third step.", "STEP-THREE-DONE");

    let before = wb.settled_requests();
    assert!(before >= 3, "three turns, three requests: {before}");
    wb.session.type_text("/compact");
    // Let Pi's command autocomplete settle before submitting.
    std::thread::sleep(Duration::from_millis(500));
    wb.session.send(b"\r");
    wb.session.wait_for_text("Compacted from", REPLY).unwrap();
    wb.session.wait_for_text("🗜 Compacted", REPLY).unwrap();
    assert_eq!(
        wb.settled_requests(),
        before,
        "the summary was made without a model request"
    );

    let db = wb.database();
    let totals = db.compaction_totals(None).unwrap();
    assert_eq!(totals.count, 1, "{totals:?}");
    // The footer counts it, and its context figure is Pi's after the compaction (the tokens
    // are unknown until the next reply), not the one from before.
    wb.session
        .wait_for("the footer's compaction segment", REPLY, |s| {
            s.contents().contains("🗜 1")
        })
        .unwrap();
    wb.session
        .wait_for("the context figure after the compaction", REPLY, |s| {
            footer_row(&s.contents()).contains("ctx ?/")
        })
        .unwrap();

    wb.ask("Please recall the codename.", "RECALL-FOUND-IT");
    assert!(
        !wb.session.screen_text().contains("RECALL-MISSED"),
        "{}",
        wb.session.screen_text()
    );

    // The statistics command reads the same database.
    wb.session.type_text("/unipi:compact-stats");
    std::thread::sleep(Duration::from_millis(500));
    wb.session.send(b"\r");
    wb.session
        .wait_for_text("This project: 1 compaction", REPLY)
        .unwrap();

    // `/unipi:compact keep:1 <prompt>`: our own request, then the prompt as a follow-up.
    wb.session
        .type_text("/unipi:compact keep:1 Go on with the fourth step.");
    std::thread::sleep(Duration::from_millis(500));
    wb.session.send(b"\r");
    wb.session.wait_for_text("STEP-FOUR-DONE", REPLY).unwrap();
    wb.session
        .wait_for("two compactions in the footer", REPLY, |s| {
            s.contents().contains("🗜 2")
        })
        .unwrap();
    assert_eq!(wb.database().compaction_totals(None).unwrap().count, 2);

    // The overlay shows the last one; Esc closes it.
    wb.session.type_text("/unipi:compact-view");
    std::thread::sleep(Duration::from_millis(500));
    wb.session.send(b"\r");
    wb.session.wait_for_text("Last compaction", REPLY).unwrap();
    assert!(wb.session.screen_text().contains("history kept from entry"));
    // The manifest is below the summary: scroll to the end.
    wb.session.send(b"G");
    wb.session.wait_for_text("Summarized away", REPLY).unwrap();
    wb.session.send(b"\x1b");
    wb.session
        .wait_for("the overlay closed", REPLY, |s| {
            !s.contents().contains("Last compaction")
        })
        .unwrap();

    std::thread::sleep(Duration::from_millis(300));
    wb.session.send(b"\x1b[100;5u");
    let _ = wb.session.wait_exit(Duration::from_secs(30));
}

/// The control: with `overrideDefaultCompaction` off, `/compact` is Pi's own LLM compaction, and
/// the request log shows it — so the count staying put above means something.
#[test]
fn with_the_override_off_pi_asks_the_model_for_the_summary() {
    let mut wb = start(|home| {
        let dir = home.join(".unipi/config");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("compactor.json"),
            r#"{"overrideDefaultCompaction": false}"#,
        )
        .unwrap();
    });
    wb.wait_ready();
    wb.ask(
        "Remember the codename BLUE-HERON-42 for later.",
        "NOTED-ONE",
    );
    wb.ask("Now the second step, please.", "STEP-TWO-DONE");
    let before = wb.settled_requests();
    wb.session.type_text("/compact");
    std::thread::sleep(Duration::from_millis(500));
    wb.session.send(b"\r");
    wb.session.wait_for_text("Compacted from", REPLY).unwrap();
    assert!(
        wb.settled_requests() > before,
        "Pi's own compaction asks the model"
    );
    assert!(!wb.session.screen_text().contains("🗜 Compacted"));
    assert_eq!(wb.database().compaction_totals(None).unwrap().count, 0);
    std::thread::sleep(Duration::from_millis(300));
    wb.session.send(b"\x1b[100;5u");
    let _ = wb.session.wait_exit(Duration::from_secs(30));
}

/// Auto-compaction: a reply that leaves the context at 70 % crosses the configured 60 %
/// threshold, the workbench asks Pi to compact, answers the hook itself, and the invisible
/// auto-continue message starts a turn the model sees without that message.
#[test]
fn auto_compaction_triggers_at_the_threshold_and_continues_invisibly() {
    let mut wb = start(|home| {
        let dir = home.join(".unipi/config");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("compactor.json"),
            r#"{"autoCompaction": {"enabled": true, "thresholdPercent": 60}}"#,
        )
        .unwrap();
    });
    wb.wait_ready();
    wb.ask(
        "Remember the codename BLUE-HERON-42 for later.",
        "NOTED-ONE",
    );
    wb.ask("Now the second step, please.", "STEP-TWO-DONE");
    wb.ask("Please fill the context.", "CONTEXT-FILLED");
    wb.session.wait_for_text("🗜 Compacted", REPLY).unwrap();
    wb.session.wait_for_text("AUTO-CONTINUED", REPLY).unwrap();
    let screen = wb.session.screen_text();
    assert!(!screen.contains("AUTO-CONTINUE-LEAKED"), "{screen}");
    assert!(
        !screen.contains("Continue from the compaction summary"),
        "the nudge is not displayed: {screen}"
    );
    assert_eq!(wb.database().compaction_totals(None).unwrap().count, 1);
    std::thread::sleep(Duration::from_millis(300));
    wb.session.send(b"\x1b[100;5u");
    let _ = wb.session.wait_exit(Duration::from_secs(30));
}

/// Pi's own threshold compaction (the workbench's auto-compaction is off): Pi decides to compact
/// after a turn that filled the context, the hook answers it without a model request, and the
/// invisible auto-continue lets the model carry on.
#[test]
fn pi_s_own_threshold_compaction_is_answered_and_continues_invisibly() {
    // 128k window − 40k reserve: the 90k-token reply crosses Pi's threshold.
    let settings =
        r#"{"compaction": {"enabled": true, "reserveTokens": 40000, "keepRecentTokens": 40}}"#;
    let mut wb = start_with_settings(tempfile::tempdir().unwrap(), &[], settings);
    wb.wait_ready();
    wb.ask(
        "Remember the codename BLUE-HERON-42 for later.",
        "NOTED-ONE",
    );
    wb.ask("Now the second step, please.", "STEP-TWO-DONE");
    let before = wb.settled_requests();
    wb.ask("Please fill the context.", "CONTEXT-FILLED");
    wb.session.wait_for_text("🗜 Compacted", REPLY).unwrap();
    wb.session.wait_for_text("AUTO-CONTINUED", REPLY).unwrap();
    // The turn itself and the auto-continued one; a model summary would be a third.
    assert_eq!(
        wb.settled_requests(),
        before + 2,
        "{}",
        wb.session.screen_text()
    );
    let screen = wb.session.screen_text();
    assert!(!screen.contains("AUTO-CONTINUE-LEAKED"), "{screen}");
    let db = wb.database();
    assert_eq!(db.compaction_totals(None).unwrap().count, 1);
    // The session's id, from where the early fact was indexed.
    let session_id = db
        .recall(&unipi_tui::sessiondb::RecallQuery {
            text: "codename".into(),
            scope: unipi_tui::sessiondb::RecallScope::Project,
            limit: 5,
            offset: 0,
        })
        .unwrap()
        .hits
        .first()
        .map(|hit| hit.session_id.clone())
        .expect("the early fact is indexed");
    let last = db.last_compaction(&session_id).unwrap().expect("recorded");
    assert_eq!(last.record.reason, "threshold");
    std::thread::sleep(Duration::from_millis(300));
    wb.session.send(b"\x1b[100;5u");
    let _ = wb.session.wait_exit(Duration::from_secs(30));
}

/// Resume: the database holds a compaction whose entry Pi's session file lacks (as when Pi died
/// after the hook answered but before it wrote the compaction). Continuing the session adds the
/// summary back, once, as a displayed `compactor-resume` message.
#[test]
fn a_summary_missing_from_the_session_file_is_restored_on_continue() {
    let home = tempfile::tempdir().unwrap();
    let sessions = home.path().join("pi-sessions");
    let sessions_arg = sessions.display().to_string();
    let session_args = ["--session-dir", sessions_arg.as_str()];
    let mut wb = start_in(home, &session_args);
    wb.wait_ready();
    wb.ask(
        "Remember the codename BLUE-HERON-42 for later.",
        "NOTED-ONE",
    );
    wb.ask("Now the second step, please.", "STEP-TWO-DONE");
    wb.ask("And the third step.", "STEP-THREE-DONE");
    wb.session.type_text("/compact");
    std::thread::sleep(Duration::from_millis(500));
    wb.session.send(b"\r");
    wb.session.wait_for_text("🗜 Compacted", REPLY).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    wb.session.send(b"\x1b[100;5u");
    wb.session.wait_exit(Duration::from_secs(30)).unwrap();
    let Workbench { session, home } = wb;
    drop(session);

    // Take the compaction out of Pi's file, as if Pi had never written it.
    let file = session_files(&sessions).pop().expect("Pi's session file");
    let text = std::fs::read_to_string(&file).unwrap();
    let kept: String = text
        .lines()
        .filter(|line| !line.contains(r#""type":"compaction""#))
        .map(|line| format!("{line}\n"))
        .collect();
    assert!(kept.len() < text.len(), "the file had the compaction");
    std::fs::write(&file, kept).unwrap();

    let continue_args = ["--session-dir", sessions_arg.as_str(), "-c"];
    let mut wb = start_in(home, &continue_args);
    wb.wait_ready();
    wb.session
        .wait_for_text("Compaction summary (restored)", REPLY)
        .unwrap();
    let restored = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        restored
            .matches(r#""customType":"compactor-resume""#)
            .count(),
        1,
        "added to the session once"
    );
    std::thread::sleep(Duration::from_millis(500));
    wb.session.send(b"\x1b[100;5u");
    let _ = wb.session.wait_exit(Duration::from_secs(30));
}

/// The footer: the screen's last non-empty row.
fn footer_row(screen: &str) -> String {
    screen
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default()
        .to_owned()
}

/// `/unipi:compact keep:1` on a session smaller than Pi's `compaction.keepRecentTokens` (the
/// default 20k): Pi refuses before asking any extension. A short warning says why, the footer
/// keeps the folder and the token counts next to Pi's error, and a follow-up prompt is still
/// sent.
#[test]
fn a_compaction_pi_refuses_warns_keeps_the_footer_and_still_sends_the_prompt() {
    let mut wb = start_with_settings(tempfile::tempdir().unwrap(), &[], "{}");
    wb.wait_ready();
    wb.ask(
        "Remember the codename BLUE-HERON-42 for later.",
        "NOTED-ONE",
    );
    wb.ask("Now the second step, please.", "STEP-TWO-DONE");
    wb.ask("And the third step.", "STEP-THREE-DONE");

    wb.session.type_text("/unipi:compact keep:1");
    std::thread::sleep(Duration::from_millis(500));
    // The first Enter takes the `keep:1` completion, the second submits (an empty editor
    // ignores an extra one).
    wb.session.send(b"\r");
    std::thread::sleep(Duration::from_millis(500));
    wb.session.send(b"\r");
    wb.session.wait_for_text("Not compacted", REPLY).unwrap();
    let footer = footer_row(&wb.session.screen_text());
    assert!(
        footer.contains("✗ error") && footer.contains('↑') && footer.contains('↓'),
        "the tokens stay beside the error: {footer}"
    );

    wb.session
        .type_text("/unipi:compact keep:1 Go on with the fourth step.");
    std::thread::sleep(Duration::from_millis(500));
    wb.session.send(b"\r");
    wb.session.wait_for_text("STEP-FOUR-DONE", REPLY).unwrap();
    assert!(
        wb.session.screen_text().contains("Sending your prompt"),
        "{}",
        wb.session.screen_text()
    );
    assert_eq!(
        wb.database().compaction_totals(None).unwrap().count,
        0,
        "nothing was compacted"
    );
    std::thread::sleep(Duration::from_millis(300));
    wb.session.send(b"\x1b[100;5u");
    let _ = wb.session.wait_exit(Duration::from_secs(30));
}

/// Every `*.jsonl` under `dir`, oldest name first.
fn session_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "jsonl") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The database is an index of Pi's session files: a damaged one (garbage bytes beside a real
/// WAL) is moved aside with its WAL and shared-memory file, a notice says so, and the index is
/// rebuilt in the background from this project's session files, so recall finds what an older
/// session (recorded with the real Pi 1.6.0) said.
#[test]
fn a_damaged_database_is_moved_aside_and_rebuilt_from_pi_s_session_files() {
    let home = tempfile::tempdir().unwrap();
    let workspace = std::fs::canonicalize(home.path()).unwrap();
    let sessions = home.path().join("pi-sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    // An older session of this project, as Pi stored it (the recording's sandbox cwd replaced).
    let recorded = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sessions/pi-1.6.0-greet.jsonl"),
    )
    .unwrap();
    let older = recorded.replace(
        "/tmp/unipi-record/project",
        &workspace.display().to_string(),
    );
    std::fs::write(
        sessions.join("2026-11-30T10-34-41-082Z_01a22c05-6639-7130-b7df-62b825d26c2d.jsonl"),
        older,
    )
    .unwrap();
    // The project's database, damaged: garbage where the file was, its real WAL beside it.
    let db_path = project_db_path(&default_db_dir(home.path()), &workspace);
    std::fs::create_dir_all(db_path.parent().unwrap()).unwrap();
    let companion = |path: &Path, suffix: &str| {
        let mut name = path.as_os_str().to_os_string();
        name.push(suffix);
        PathBuf::from(name)
    };
    let wal = {
        let conn = rusqlite::Connection::open(&db_path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE t (x TEXT); INSERT INTO t VALUES ('a');
             PRAGMA wal_checkpoint(TRUNCATE); INSERT INTO t VALUES ('in the wal');",
        )
        .unwrap();
        std::fs::read(companion(&db_path, "-wal")).unwrap()
    };
    std::fs::write(&db_path, b"garbage, not a database ".repeat(200)).unwrap();
    std::fs::write(companion(&db_path, "-wal"), &wal).unwrap();
    std::fs::write(companion(&db_path, "-shm"), vec![0u8; 32 * 1024]).unwrap();

    let sessions_arg = sessions.display().to_string();
    let mut wb = start_in(home, &["--session-dir", sessions_arg.as_str()]);
    wb.session.wait_for_text("was damaged", START).unwrap();
    wb.session.send(b"\x1b");
    wb.wait_ready();
    let moved: Vec<PathBuf> = std::fs::read_dir(db_path.parent().unwrap())
        .unwrap()
        .filter_map(|entry| Some(entry.ok()?.path()))
        .filter(|path| path.display().to_string().contains(".corrupt-"))
        .collect();
    assert_eq!(moved.len(), 3, "the file, its WAL and its shm: {moved:?}");
    let moved_wal = moved
        .iter()
        .find(|path| path.display().to_string().ends_with("-wal"))
        .expect("the WAL was moved aside");
    assert!(
        std::fs::read(moved_wal).unwrap() == wal,
        "the WAL is intact"
    );

    wb.ask("Please recall the old note.", "OLD-NOTE-FOUND");
    assert!(
        !wb.session.screen_text().contains("RECALL-MISSED"),
        "{}",
        wb.session.screen_text()
    );
    assert!(
        wb.log()
            .contains("indexed 1 of this project's Pi session files"),
        "{}",
        wb.log()
    );
    std::thread::sleep(Duration::from_millis(300));
    wb.session.send(b"\x1b[100;5u");
    let _ = wb.session.wait_exit(Duration::from_secs(30));
}

//! Deterministic compaction end to end: the real `unipi-tui` binary in a PTY running the real,
//! pinned Pi 1.6.0 against the scripted model (`tests/fixtures/scenarios/compactor.toml`, served
//! from the test so its request log is read directly). Three scripted turns put a fact in the
//! session; `/compact` typed into Pi is answered by the compactor's hook — no model request is
//! made for the summary (the scripted server records every request before answering, and Pi
//! shows a compaction only after its summary arrived, so the log is complete by then) — Pi shows
//! the compacted state, the project database under the test's HOME holds the statistics, and then
//! the model calls `session_recall` and gets the early fact back from before the compaction. Then
//! `/unipi:compact keep:1 <prompt>` compacts again and sends the prompt afterwards, and
//! `/unipi:compact-view` shows the last compaction. A control run with `overrideDefaultCompaction`
//! off shows Pi's own compaction does reach the model (so the request count means something).
//! Auto-compaction triggers when a reply leaves the context above the configured threshold, and
//! its invisible auto-continue message starts a turn without reaching the model's context. A
//! summary the database holds but Pi's session file lacks is restored once on `-c`.
//!
//! Pi refuses to compact a session smaller than its `compaction.keepRecentTokens`, so the test's
//! Pi settings lower it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use support::demo::{OfflineModel, START, outer_40_rows};
use support::pi::PiLine;
use support::sandbox::Sandbox;
use support::term::Session;
use support::wait::eventually;
use support::workbench::{KITTY_CTRL_D, exit_pi, footer_row, slash};
use unipi_tui::sessiondb::{
    RecallMode, RecallQuery, RecallScope, SessionDb, default_db_dir, project_db_path,
};

const REPLY: Duration = Duration::from_secs(60);

struct Workbench {
    session: Session,
    model: OfflineModel,
    sandbox: Sandbox,
}

/// Starts the workbench in a fresh sandbox, after `setup` prepared it.
fn start(setup: impl FnOnce(&Sandbox)) -> Workbench {
    let sandbox = Sandbox::new();
    setup(&sandbox);
    start_in(sandbox, &[])
}

/// Starts the workbench in `sandbox` with extra Pi arguments.
fn start_in(sandbox: Sandbox, pi_args: &[&str]) -> Workbench {
    // Pi refuses to compact a session smaller than `compaction.keepRecentTokens`.
    start_with_settings(
        sandbox,
        pi_args,
        r#"{"compaction": {"keepRecentTokens": 40}}"#,
    )
}

/// Starts the workbench in `sandbox` against a scripted model served from the test (Pi's agent
/// directory in the sandbox's HOME), merging `settings` into Pi's `settings.json`.
fn start_with_settings(sandbox: Sandbox, pi_args: &[&str], settings: &str) -> Workbench {
    let model = OfflineModel::scenario("compactor.toml", &sandbox);
    unipi_tui::demo::merge_pi_settings(&model.agent.dir.join("settings.json"), settings).unwrap();
    let session = model.spawn(PiLine::Current, &sandbox, pi_args, &[], outer_40_rows(120));
    Workbench {
        session,
        model,
        sandbox,
    }
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

    /// Requests the scripted model received so far. A request is recorded when it arrives,
    /// before it is answered, so everything Pi showed an answer to is counted.
    fn model_requests(&self) -> usize {
        self.model.server.requests().len()
    }

    fn slash(&self, command: &str) {
        slash(&self.session, command, REPLY);
    }

    /// Quits Pi and checks the workbench exited cleanly.
    fn exit(&mut self) {
        let code = exit_pi(&mut self.session, KITTY_CTRL_D, REPLY);
        assert_eq!(code, 0, "screen:\n{}", self.session.screen_text());
    }

    /// The workbench's log file in the sandbox's HOME.
    fn log(&self) -> String {
        std::fs::read_to_string(
            self.sandbox
                .home
                .join(".local/state/unipi-tui/unipi-tui.log"),
        )
        .unwrap_or_default()
    }

    fn database(&self) -> SessionDb {
        let path = project_db_path(&default_db_dir(&self.sandbox.home), &self.sandbox.project);
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

    let before = wb.model_requests();
    assert_eq!(before, 3, "three turns, three requests");
    wb.slash("/compact");
    wb.session.wait_for_text("Compacted from", REPLY).unwrap();
    wb.session.wait_for_text("🗜 Compacted", REPLY).unwrap();
    assert_eq!(
        wb.model_requests(),
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
            footer_row(s).contains("ctx ?/")
        })
        .unwrap();

    wb.ask("Please recall the codename.", "RECALL-FOUND-IT");
    assert!(
        !wb.session.screen_text().contains("RECALL-MISSED"),
        "{}",
        wb.session.screen_text()
    );

    // The statistics command reads the same database.
    wb.slash("/unipi:compact-stats");
    wb.session
        .wait_for_text("This project: 1 compaction", REPLY)
        .unwrap();

    // `/unipi:compact keep:1 <prompt>`: our own request, then the prompt as a follow-up.
    wb.slash("/unipi:compact keep:1 Go on with the fourth step.");
    wb.session.wait_for_text("STEP-FOUR-DONE", REPLY).unwrap();
    wb.session
        .wait_for("two compactions in the footer", REPLY, |s| {
            s.contents().contains("🗜 2")
        })
        .unwrap();
    assert_eq!(wb.database().compaction_totals(None).unwrap().count, 2);

    // The overlay shows the last one; Esc closes it.
    wb.slash("/unipi:compact-view");
    // The overlay may be drawn over more than one frame: wait for its body, not only its title.
    wb.session
        .wait_for("the overlay with its body", REPLY, |s| {
            let text = s.contents();
            text.contains("Last compaction") && text.contains("history kept from entry")
        })
        .unwrap_or_else(|err| panic!("{err:#}\n{}", wb.session.screen_text()));
    // The manifest is below the summary: scroll to the end.
    wb.session.send(b"G");
    wb.session.wait_for_text("Summarized away", REPLY).unwrap();
    wb.session.send(b"\x1b");
    wb.session
        .wait_for("the overlay closed", REPLY, |s| {
            !s.contents().contains("Last compaction")
        })
        .unwrap();
    wb.exit();
}

/// Issue 31: recall never finds its own answers. After a compaction the scripted model calls
/// `session_recall` with the same query in two turns; the first turn — its call, its answer and
/// the reply — is ingested into the project database before the second (the reply is searchable
/// there), and the second answer is the first, word for word, and holds the compacted fact.
#[test]
fn recall_after_a_compaction_answers_the_same_query_the_same_way_twice() {
    let mut wb = start(|_| {});
    wb.wait_ready();
    wb.ask(
        "Remember the codename BLUE-HERON-42 for later.",
        "NOTED-ONE",
    );
    wb.ask("Now the second step, please.", "STEP-TWO-DONE");
    wb.ask("And the third step.", "STEP-THREE-DONE");
    wb.slash("/compact");
    wb.session.wait_for_text("Compacted from", REPLY).unwrap();
    wb.session
        .wait_for("the footer's compaction segment", REPLY, |s| {
            s.contents().contains("🗜 1")
        })
        .unwrap();

    let answers = |wb: &Workbench| -> Vec<String> {
        wb.model
            .server
            .requests()
            .iter()
            .filter_map(|request| request["messages"].as_array()?.last().cloned())
            .map(|message| unipi_tui::scripted::message_text(&message))
            .filter(|text| text.contains("results for \"heron\""))
            .collect()
    };
    let searchable = |wb: &Workbench, words: &str| {
        let query = RecallQuery {
            text: words.into(),
            scope: RecallScope::Project,
            limit: 5,
            offset: 0,
            mode: RecallMode::Words,
            expand: false,
        };
        wb.database().recall(&query).unwrap().total > 0
    };
    wb.ask("Look the name up.", "LOOKUP-DONE");
    assert_eq!(answers(&wb).len(), 1);
    eventually("the first lookup's turn in the database", REPLY, || {
        searchable(&wb, "LOOKUP-DONE")
    });
    wb.session.type_text("Look the name up once more.");
    wb.session.send(b"\r");
    let answers = eventually("the second lookup's answer", REPLY, || {
        let answers = answers(&wb);
        (answers.len() == 2).then_some(answers)
    });
    assert!(answers[0].contains("BLUE-HERON-42"), "{}", answers[0]);
    assert_eq!(answers[1], answers[0]);
    // Neither the answers nor the query became searchable.
    assert!(
        !searchable(&wb, "showing results"),
        "a recall answer was indexed"
    );
    wb.session
        .wait_for("the second reply", REPLY, |s| {
            s.contents().matches("LOOKUP-DONE").count() >= 2
        })
        .unwrap();
    wb.exit();
}

/// Coming from Unipi: its compactor's `session.db` under HOME (built here with the schema the
/// reference gives) is imported on the first start, which says so; the scripted model then calls
/// `vcc_recall`, the old name, with `mode: "regex"` and a lower-case pattern, and gets the old
/// history back (upper case: the regex is case-insensitive, as Unipi's was). The old file is not
/// changed, and the second start imports nothing again.
#[test]
fn the_original_unipi_history_is_imported_once_and_vcc_recall_finds_it_by_regex() {
    let mut legacy = PathBuf::new();
    let mut wb = start(|sandbox| legacy = support::unipi::unipi_session_db(sandbox));
    let before = std::fs::read(&legacy).unwrap();
    wb.wait_ready();
    wb.ask(
        "Search the Unipi history for the codename.",
        "LEGACY-RECALL-FOUND",
    );
    let log = wb.log();
    assert!(
        log.contains("start-up: Imported the original Unipi compactor's history of this project")
            && log.contains("1 events and 1 resume snapshots of 1 sessions"),
        "{log}"
    );
    wb.exit();
    let Workbench { sandbox, .. } = wb;
    let mut again = start_in(sandbox, &[]);
    again.wait_ready();
    again.ask(
        "Search the Unipi history for the codename.",
        "LEGACY-RECALL-FOUND",
    );
    again.exit();
    let imports = again
        .log()
        .matches("start-up: Imported the original Unipi")
        .count();
    assert_eq!(imports, 1, "imported once, not at every start");
    assert_eq!(
        std::fs::read(&legacy).unwrap(),
        before,
        "the old file is unchanged"
    );
}

/// The control: with `overrideDefaultCompaction` off, `/compact` is Pi's own LLM compaction, and
/// the request log shows it — so the count staying put above means something.
#[test]
fn with_the_override_off_pi_asks_the_model_for_the_summary() {
    let mut wb = start(|sandbox| {
        sandbox.write(
            &sandbox.home.join(".unipi/config/compactor.json"),
            r#"{"overrideDefaultCompaction": false}"#,
        );
    });
    wb.wait_ready();
    wb.ask(
        "Remember the codename BLUE-HERON-42 for later.",
        "NOTED-ONE",
    );
    wb.ask("Now the second step, please.", "STEP-TWO-DONE");
    let before = wb.model_requests();
    wb.slash("/compact");
    wb.session.wait_for_text("Compacted from", REPLY).unwrap();
    assert!(
        wb.model_requests() > before,
        "Pi's own compaction asks the model"
    );
    assert!(!wb.session.screen_text().contains("🗜 Compacted"));
    assert_eq!(wb.database().compaction_totals(None).unwrap().count, 0);
    wb.exit();
}

/// Auto-compaction: a reply that leaves the context at 70 % crosses the configured 60 %
/// threshold, the workbench asks Pi to compact, answers the hook itself, and the invisible
/// auto-continue message starts a turn the model sees without that message.
#[test]
fn auto_compaction_triggers_at_the_threshold_and_continues_invisibly() {
    let mut wb = start(|sandbox| {
        sandbox.write(
            &sandbox.home.join(".unipi/config/compactor.json"),
            r#"{"autoCompaction": {"enabled": true, "thresholdPercent": 60}}"#,
        );
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
    wb.exit();
}

/// Pi's own threshold compaction (the workbench's auto-compaction is off): Pi decides to compact
/// after a turn that filled the context, the hook answers it without a model request, and the
/// invisible auto-continue lets the model carry on.
#[test]
fn pi_s_own_threshold_compaction_is_answered_and_continues_invisibly() {
    // 128k window − 40k reserve: the 90k-token reply crosses Pi's threshold.
    let settings =
        r#"{"compaction": {"enabled": true, "reserveTokens": 40000, "keepRecentTokens": 40}}"#;
    let mut wb = start_with_settings(Sandbox::new(), &[], settings);
    wb.wait_ready();
    wb.ask(
        "Remember the codename BLUE-HERON-42 for later.",
        "NOTED-ONE",
    );
    wb.ask("Now the second step, please.", "STEP-TWO-DONE");
    let before = wb.model_requests();
    wb.ask("Please fill the context.", "CONTEXT-FILLED");
    wb.session.wait_for_text("🗜 Compacted", REPLY).unwrap();
    wb.session.wait_for_text("AUTO-CONTINUED", REPLY).unwrap();
    // The turn itself and the auto-continued one; a model summary would be a third.
    assert_eq!(
        wb.model_requests(),
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
            mode: unipi_tui::sessiondb::RecallMode::Words,
            expand: false,
        })
        .unwrap()
        .hits
        .first()
        .map(|hit| hit.session_id.clone())
        .expect("the early fact is indexed");
    let last = db.last_compaction(&session_id).unwrap().expect("recorded");
    assert_eq!(last.record.reason, "threshold");
    wb.exit();
}

/// Resume: the database holds a compaction whose entry Pi's session file lacks (as when Pi died
/// after the hook answered but before it wrote the compaction). Continuing the session adds the
/// summary back, once, as a displayed `compactor-resume` message.
#[test]
fn a_summary_missing_from_the_session_file_is_restored_on_continue() {
    let sandbox = Sandbox::new();
    let sessions = sandbox.home.join("pi-sessions");
    let sessions_arg = sessions.display().to_string();
    let session_args = ["--session-dir", sessions_arg.as_str()];
    let mut wb = start_in(sandbox, &session_args);
    wb.wait_ready();
    wb.ask(
        "Remember the codename BLUE-HERON-42 for later.",
        "NOTED-ONE",
    );
    wb.ask("Now the second step, please.", "STEP-TWO-DONE");
    wb.ask("And the third step.", "STEP-THREE-DONE");
    wb.slash("/compact");
    wb.session.wait_for_text("🗜 Compacted", REPLY).unwrap();
    wb.exit();
    let Workbench {
        session,
        model,
        sandbox,
    } = wb;
    drop((session, model));

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
    let mut wb = start_in(sandbox, &continue_args);
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
    wb.exit();
}

/// `/unipi:compact keep:1` on a session smaller than Pi's `compaction.keepRecentTokens` (the
/// default 20k): Pi refuses before asking any extension. A short warning says why, the footer
/// keeps the folder and the token counts next to Pi's error, and a follow-up prompt is still
/// sent.
#[test]
fn a_compaction_pi_refuses_warns_keeps_the_footer_and_still_sends_the_prompt() {
    let mut wb = start_with_settings(Sandbox::new(), &[], "{}");
    wb.wait_ready();
    wb.ask(
        "Remember the codename BLUE-HERON-42 for later.",
        "NOTED-ONE",
    );
    wb.ask("Now the second step, please.", "STEP-TWO-DONE");
    wb.ask("And the third step.", "STEP-THREE-DONE");

    // The first Enter takes the `keep:1` completion, the second submits (an empty editor
    // ignores an extra one).
    wb.slash("/unipi:compact keep:1");
    wb.session
        .wait_for("the completion taken", REPLY, |s| {
            s.contents().contains("Not compacted")
                || s.contents()
                    .lines()
                    .any(|line| line.trim_end().ends_with("/unipi:compact keep:1"))
        })
        .unwrap();
    if !wb.session.screen_text().contains("Not compacted") {
        wb.session.send(b"\r");
    }
    wb.session.wait_for_text("Not compacted", REPLY).unwrap();
    // The error's text gives way to the folder and the tokens (wait_for fails naming the
    // screen when it never does).
    wb.session
        .wait_for("the tokens beside the error in the footer", REPLY, |s| {
            let footer = footer_row(s);
            footer.contains("✗ error") && footer.contains('↑') && footer.contains('↓')
        })
        .unwrap();

    wb.slash("/unipi:compact keep:1 Go on with the fourth step.");
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
    wb.exit();
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
    let sandbox = Sandbox::new();
    let workspace = sandbox.project.clone();
    let sessions = sandbox.home.join("pi-sessions");
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
    let db_path = project_db_path(&default_db_dir(&sandbox.home), &workspace);
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
    let mut wb = start_in(sandbox, &["--session-dir", sessions_arg.as_str()]);
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
    wb.exit();
}

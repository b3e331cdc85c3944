//! Rebuilding the recall index from Pi's session files. Pi's files are the source of truth and
//! the database only indexes them, so a database that was replaced (damaged, deleted) or never
//! saw some sessions (Pi run without the workbench) is caught up from the files themselves:
//! every session file of this project whose content the database has not read to the end is
//! ingested, oldest first, in the background.
//!
//! "This project's session files" are the `*.jsonl` files in the directory of the current
//! session's file (Pi groups sessions by working directory under its agent directory's
//! `sessions/`; `--session-dir`, `PI_CODING_AGENT_SESSION_DIR` or the `sessionDir` setting
//! move them, and the current file's directory follows all of them) whose header names this
//! project's directory as `cwd` (a shared session directory may hold other projects' files).
//!
//! The scan reads directories and header lines on a blocking thread; each file is one job on
//! the database thread, so recall and the live session's ingestion are never held up by more
//! than one file.

use std::io::{BufRead as _, Read as _};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::ingest::{DbWorker, ingest_session_file};
use crate::sessiondb::SessionMeta;

/// The most of a header line read: Pi's header is a short JSON object.
const MAX_HEADER_BYTES: u64 = 64 * 1024;

/// One of the project's session files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionFile {
    pub path: PathBuf,
    /// The session id from the file's header.
    pub session_id: String,
}

/// The session files in `dir` whose header says they belong to `project`, oldest name first (Pi
/// names them `<timestamp>_<id>.jsonl`). A missing directory has none; unreadable files and
/// headers are skipped.
pub(crate) fn project_session_files(dir: &Path, project: &Path) -> Vec<SessionFile> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let project = canonical(project);
    let mut files: Vec<SessionFile> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl") && path.is_file())
        .filter_map(|path| {
            let (session_id, cwd) = read_header(&path)?;
            (canonical(Path::new(&cwd)) == project).then_some(SessionFile { path, session_id })
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// A session file's id and working directory, from its first line.
pub(crate) fn read_header(path: &Path) -> Option<(String, String)> {
    let file = std::fs::File::open(path).ok()?;
    let mut line = String::new();
    std::io::BufReader::new(file.take(MAX_HEADER_BYTES))
        .read_line(&mut line)
        .ok()?;
    let header: Value = serde_json::from_str(line.trim()).ok()?;
    if header.get("type").and_then(Value::as_str) != Some("session") {
        return None;
    }
    let id = header.get("id").and_then(Value::as_str)?;
    let cwd = header.get("cwd").and_then(Value::as_str)?;
    Some((id.to_owned(), cwd.to_owned()))
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// How far a rebuild got: `done` of `total` files ingested.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Progress {
    pub done: usize,
    pub total: usize,
}

/// What a rebuild did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Rebuilt {
    /// Files that needed ingesting (the others were read to their end already).
    pub ingested: usize,
    /// Files whose ingestion failed (logged; they are tried again at the next rebuild).
    pub failed: usize,
}

/// Ingests every session file of `project` in `dir` that the database has not read to its end,
/// oldest first, reporting progress after each file (and once at the start when there is work).
pub(crate) async fn rebuild(
    db: &DbWorker,
    dir: PathBuf,
    project: PathBuf,
    mut progress: impl FnMut(Progress),
) -> anyhow::Result<Rebuilt> {
    let scan_project = project.clone();
    let files = tokio::task::spawn_blocking(move || {
        project_session_files(&dir, &scan_project)
            .into_iter()
            .filter_map(|file| {
                let len = std::fs::metadata(&file.path).ok()?.len();
                Some((file, len))
            })
            .collect::<Vec<_>>()
    })
    .await?;
    let pending = db
        .run(move |db| {
            files
                .into_iter()
                .filter(|(file, len)| {
                    db.ingest_offset(&file.path.display().to_string())
                        .is_ok_and(|offset| offset < *len)
                })
                .map(|(file, _)| file)
                .collect::<Vec<_>>()
        })
        .await?;
    let total = pending.len();
    let mut rebuilt = Rebuilt::default();
    if total == 0 {
        return Ok(rebuilt);
    }
    progress(Progress { done: 0, total });
    let project_dir = project.display().to_string();
    for (index, file) in pending.into_iter().enumerate() {
        let meta = SessionMeta {
            session_id: file.session_id,
            session_file: Some(file.path.display().to_string()),
            project_dir: project_dir.clone(),
        };
        let shown = file.path.display().to_string();
        match db.run(move |db| ingest_session_file(db, &meta)).await {
            Ok(Ok(_)) => rebuilt.ingested += 1,
            Ok(Err(err)) | Err(err) => {
                tracing::warn!("compactor: indexing {shown}: {err:#}");
                rebuilt.failed += 1;
            }
        }
        progress(Progress {
            done: index + 1,
            total,
        });
    }
    Ok(rebuilt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessiondb::{RecallMode, RecallQuery, RecallScope, SessionDb};

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sessions")
            .join(name)
    }

    /// A copy of a recorded session file as Pi would have stored it for `cwd` (the recording's
    /// sandbox path replaced), under a new id.
    fn copy_session(from: &Path, to: &Path, cwd: &Path, id: &str) {
        let text = std::fs::read_to_string(from).unwrap();
        let mut lines = text.lines();
        let mut header: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
        header["cwd"] = Value::String(cwd.display().to_string());
        header["id"] = Value::String(id.to_owned());
        let mut out = format!("{header}\n");
        for line in lines {
            out.push_str(line);
            out.push('\n');
        }
        std::fs::write(to, out).unwrap();
    }

    #[test]
    fn only_this_projects_session_files_oldest_first() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("project");
        let other = tmp.path().join("other");
        let sessions = tmp.path().join("sessions");
        for dir in [&project, &other, &sessions] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let greet = fixture("pi-1.6.0-greet.jsonl");
        copy_session(&greet, &sessions.join("2026-01-02_b.jsonl"), &project, "b");
        copy_session(&greet, &sessions.join("2026-01-01_a.jsonl"), &project, "a");
        copy_session(&greet, &sessions.join("2026-01-03_c.jsonl"), &other, "c");
        std::fs::write(sessions.join("notes.txt"), "not a session").unwrap();
        std::fs::write(sessions.join("broken.jsonl"), "{not json\n").unwrap();
        let ids: Vec<String> = project_session_files(&sessions, &project)
            .into_iter()
            .map(|file| file.session_id)
            .collect();
        assert_eq!(ids, ["a", "b"]);
        assert!(project_session_files(&tmp.path().join("missing"), &project).is_empty());
    }

    /// The real recorded session is indexed once, with progress after each file; a second
    /// rebuild finds nothing left to read.
    #[tokio::test]
    async fn a_rebuild_ingests_what_was_never_read_and_recall_finds_it() -> anyhow::Result<()> {
        let tmp = tempfile::tempdir()?;
        let project = tmp.path().join("project");
        let sessions = tmp.path().join("sessions");
        std::fs::create_dir_all(&project)?;
        std::fs::create_dir_all(&sessions)?;
        let greet = fixture("pi-1.6.0-greet.jsonl");
        copy_session(&greet, &sessions.join("1_old.jsonl"), &project, "old");
        copy_session(&greet, &sessions.join("2_older.jsonl"), &project, "older");
        let db = DbWorker::from_db(SessionDb::open_in_memory()?)?;
        let mut seen = Vec::new();
        let rebuilt = rebuild(&db, sessions.clone(), project.clone(), |p| seen.push(p)).await?;
        assert_eq!(
            rebuilt,
            Rebuilt {
                ingested: 2,
                failed: 0
            }
        );
        let step = |done| Progress { done, total: 2 };
        assert_eq!(seen, [step(0), step(1), step(2)]);
        let found = db
            .run(|db| {
                db.recall(&RecallQuery {
                    text: "greet must say hello".into(),
                    scope: RecallScope::Project,
                    limit: 5,
                    offset: 0,
                    mode: RecallMode::Words,
                    expand: false,
                })
            })
            .await??;
        assert!(found.total >= 1, "{found:?}");
        let mut again = Vec::new();
        let rebuilt = rebuild(&db, sessions, project, |p| again.push(p)).await?;
        assert_eq!(rebuilt, Rebuilt::default());
        assert!(again.is_empty(), "{again:?}");
        Ok(())
    }
}

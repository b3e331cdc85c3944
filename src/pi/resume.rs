//! Resuming a session after the workbench exits. Pi 1.x ends an interactive session with "To
//! resume this session:" and a `pi …` command; after a workbench session the user also gets the
//! `unipi-tui` command that resumes it in the workbench, built from the session id and file the
//! bridge reported. When the session file is gone by then — the demo deletes its throwaway agent
//! directory, sessions included — nothing is offered, and Pi's own command is taken out of the
//! transcript too: it would name a folder that no longer exists.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// Pi's label before its resume command (1.x; 0.7x prints none).
const PI_RESUME_LABEL: &str = "To resume this session:";
/// Our label, printed after Pi's transcript.
pub(crate) const WORKBENCH_RESUME_LABEL: &str = "To resume in the workbench:";

/// The main Pi's session, as its last `session_start` reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PiSession {
    pub id: String,
    pub file: PathBuf,
}

/// What the workbench prints when it ends: Pi's transcript, then the resume line if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExitOutput {
    pub transcript: Vec<u8>,
    pub resume: Option<String>,
}

/// The exit output for `transcript` and the session Pi last reported, for a workbench started in
/// `workspace` with the process environment (where Pi's agent and session directories come from).
pub(crate) fn exit_output(
    transcript: Vec<u8>,
    session: Option<&PiSession>,
    workspace: &Path,
) -> ExitOutput {
    exit_output_with(transcript, session, workspace, &|name| {
        std::env::var(name).ok().filter(|value| !value.is_empty())
    })
}

/// [`exit_output`] with the environment given.
pub(crate) fn exit_output_with(
    transcript: Vec<u8>,
    session: Option<&PiSession>,
    workspace: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> ExitOutput {
    match session {
        Some(session) if session.file.is_file() => ExitOutput {
            transcript,
            resume: Some(format!(
                "{WORKBENCH_RESUME_LABEL} {}",
                workbench_command(session, workspace, env)
            )),
        },
        // Gone since Pi wrote it: Pi's command would name a folder that no longer exists.
        Some(_) => ExitOutput {
            transcript: without_pi_resume_hint(&transcript),
            resume: None,
        },
        // Nothing reported (`--no-session`, Pi 0.7x without a file, no bridge): Pi knows best.
        None => ExitOutput {
            transcript,
            resume: None,
        },
    }
}

/// `unipi-tui --session <id>` when Pi, started the same way in `workspace`, looks for sessions
/// where the file is (its default folder for the workspace, or `PI_CODING_AGENT_SESSION_DIR`);
/// otherwise the file's path, which Pi's `--session` opens from anywhere.
fn workbench_command(
    session: &PiSession,
    workspace: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> String {
    let in_searched_dir = session
        .file
        .parent()
        .zip(searched_session_dir(workspace, env))
        .is_some_and(|(dir, searched)| same_dir(dir, &searched));
    let target = if in_searched_dir && !needs_quoting(&session.id) {
        Cow::Borrowed(session.id.as_str())
    } else {
        let path = session.file.to_string_lossy();
        match shlex::try_quote(&path) {
            Ok(quoted) => Cow::Owned(quoted.into_owned()),
            // Only a NUL byte fails, and a path cannot hold one.
            Err(_) => Cow::Owned(path.into_owned()),
        }
    };
    format!("unipi-tui --session {target}")
}

fn needs_quoting(text: &str) -> bool {
    shlex::try_quote(text).map_or(true, |quoted| quoted != text)
}

/// Where Pi looks up `--session <id>` in `workspace`: `PI_CODING_AGENT_SESSION_DIR`, else its
/// default folder for the workspace under the agent directory.
fn searched_session_dir(workspace: &Path, env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if let Some(dir) = env("PI_CODING_AGENT_SESSION_DIR") {
        return Some(expand_home(&dir, env));
    }
    let agent_dir = match env("PI_CODING_AGENT_DIR") {
        Some(dir) => expand_home(&dir, env),
        None => PathBuf::from(env("HOME")?).join(".pi/agent"),
    };
    Some(default_session_dir(&agent_dir, workspace))
}

/// Pi's default session folder for `cwd`: `<agent dir>/sessions/--<cwd with / as ->--`.
pub(crate) fn default_session_dir(agent_dir: &Path, cwd: &Path) -> PathBuf {
    let cwd = cwd.to_string_lossy();
    let safe: String = cwd
        .strip_prefix('/')
        .unwrap_or(&cwd)
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    agent_dir.join("sessions").join(format!("--{safe}--"))
}

fn expand_home(path: &str, env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    match (path, path.strip_prefix("~/"), env("HOME")) {
        ("~", _, Some(home)) => PathBuf::from(home),
        (_, Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(path),
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// `transcript` without Pi's resume label and the command after it (its last lines: Pi prints
/// them just before it exits). Unchanged when they are not there.
fn without_pi_resume_hint(transcript: &[u8]) -> Vec<u8> {
    let mut start = 0;
    let mut label_at = None;
    for line in transcript.split_inclusive(|b| *b == b'\n') {
        if visible_text(line).trim() == PI_RESUME_LABEL {
            label_at = Some(start);
        }
        start += line.len();
    }
    let Some(at) = label_at else {
        return transcript.to_vec();
    };
    let rest = visible_text(&transcript[at..]);
    if !rest.contains("--session") {
        return transcript.to_vec();
    }
    let mut kept = transcript[..at].to_vec();
    // The transcript ends with attributes reset, as the removed last line did.
    kept.extend_from_slice(b"\x1b[m");
    kept
}

/// `bytes` as text without escape sequences (the transcript holds SGR sequences only).
fn visible_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            if chars.next() == Some('[') {
                // Parameters and intermediates, up to the final byte.
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PI_TAIL: &[u8] = b"\x1b[1mbye\x1b[m\n\x1b[2mTo resume this session:\x1b[22m\npi --session-dir /tmp/unipi-demo-x/sessions --session 019a\x1b[m\n";

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_string())
        }
    }

    fn session_in(dir: &Path, id: &str) -> PiSession {
        std::fs::create_dir_all(dir).unwrap();
        let file = dir.join(format!("2025_{id}.jsonl"));
        std::fs::write(&file, "{}\n").unwrap();
        PiSession {
            id: id.into(),
            file,
        }
    }

    #[test]
    fn pi_s_default_session_folder_encodes_the_working_directory() {
        assert_eq!(
            default_session_dir(Path::new("/h/.pi/agent"), Path::new("/home/u/my project")),
            Path::new("/h/.pi/agent/sessions/--home-u-my project--")
        );
    }

    #[test]
    fn a_session_in_the_workspace_s_default_folder_resumes_by_id() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let workspace = root.path().join("project");
        let dir = default_session_dir(&home.join(".pi/agent"), &workspace);
        let session = session_in(&dir, "019a-77");
        let home_text = home.display().to_string();
        let out = exit_output_with(
            PI_TAIL.to_vec(),
            Some(&session),
            &workspace,
            &env(&[("HOME", &home_text)]),
        );
        assert_eq!(
            out.resume.as_deref(),
            Some("To resume in the workbench: unipi-tui --session 019a-77")
        );
        assert_eq!(out.transcript, PI_TAIL, "Pi's own line stays");
    }

    #[test]
    fn the_session_dir_from_the_environment_is_searched_too() {
        let root = tempfile::tempdir().unwrap();
        let sessions = root.path().join("sessions");
        let session = session_in(&sessions, "abc");
        let sessions_text = sessions.display().to_string();
        let out = exit_output_with(
            Vec::new(),
            Some(&session),
            root.path(),
            &env(&[
                ("HOME", "/nowhere"),
                ("PI_CODING_AGENT_SESSION_DIR", &sessions_text),
            ]),
        );
        assert_eq!(
            out.resume.as_deref(),
            Some("To resume in the workbench: unipi-tui --session abc")
        );
    }

    #[test]
    fn a_session_elsewhere_resumes_by_its_quoted_path() {
        let root = tempfile::tempdir().unwrap();
        let session = session_in(&root.path().join("my sessions"), "abc");
        let out = exit_output_with(
            Vec::new(),
            Some(&session),
            root.path(),
            &env(&[("HOME", "/nowhere")]),
        );
        assert_eq!(
            out.resume,
            Some(format!(
                "To resume in the workbench: unipi-tui --session '{}'",
                session.file.display()
            ))
        );
    }

    #[test]
    fn a_deleted_session_gets_no_command_and_loses_pi_s_own() {
        let root = tempfile::tempdir().unwrap();
        let session = PiSession {
            id: "019a".into(),
            file: root.path().join("gone/019a.jsonl"),
        };
        let out = exit_output_with(PI_TAIL.to_vec(), Some(&session), root.path(), &env(&[]));
        assert_eq!(out.resume, None);
        assert_eq!(out.transcript, b"\x1b[1mbye\x1b[m\n\x1b[m");
    }

    #[test]
    fn without_a_reported_session_pi_s_output_is_left_alone() {
        let out = exit_output_with(PI_TAIL.to_vec(), None, Path::new("/w"), &env(&[]));
        assert_eq!(out.resume, None);
        assert_eq!(out.transcript, PI_TAIL);
    }

    #[test]
    fn a_transcript_that_only_mentions_the_label_is_kept() {
        let text = b"To resume this session:\nis what Pi says\n".to_vec();
        let gone = PiSession {
            id: "x".into(),
            file: PathBuf::from("/nonexistent/x.jsonl"),
        };
        let out = exit_output_with(text.clone(), Some(&gone), Path::new("/w"), &env(&[]));
        assert_eq!(out.transcript, text);
    }
}

//! The `/btw` thread: the side conversation's exchanges and its mode, what the model is asked
//! for the next one, what `/btw:inject` and `/btw:summarize` bring into the main conversation, and
//! the thread file kept next to Pi's session file (so a resumed session finds its thread).
//!
//! Each question is asked in a fresh one-shot session of the side Pi, so the prompt carries the
//! whole thread: a follow-up sees the earlier exchanges as the model sees a conversation. A
//! contextual thread (`/btw`) also carries an excerpt of the main conversation, read at each
//! question; a tangent (`/btw:tangent`) carries none, as in Unipi.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

/// What the side conversation is given besides its own exchanges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Mode {
    /// `/btw`: the main conversation's latest messages, as context only.
    #[default]
    Contextual,
    /// `/btw:tangent`: nothing of the main conversation.
    Tangent,
}

/// One question and its answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Turn {
    pub(crate) question: String,
    pub(crate) answer: String,
    /// `provider/id` of the model that answered.
    pub(crate) model: String,
    /// When it was answered (ms since the epoch).
    pub(crate) at_ms: u64,
}

/// The side conversation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Thread {
    pub(crate) mode: Mode,
    pub(crate) turns: Vec<Turn>,
}

/// The version written in a thread file; a file of another version is refused, not guessed at.
const FILE_VERSION: u32 = 1;

/// A thread file's content.
#[derive(Serialize, Deserialize)]
struct ThreadFile {
    version: u32,
    #[serde(flatten)]
    thread: Thread,
}

/// What the side model is told before the thread.
const SYSTEM: &str = "You are having an aside conversation with the user, separate from their \
main coding session. The main session's messages, when given, are context only: do not continue \
its work unless asked. Without them this is a contextless tangent. Answer the side question \
briefly and directly.";

impl Thread {
    pub(crate) fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }

    /// The prompt for `question`: the instructions, the main conversation's `excerpt` (a
    /// contextual thread, when there is one), the thread so far, and the question.
    pub(crate) fn prompt(&self, question: &str, excerpt: &str) -> String {
        let mut prompt = format!("{SYSTEM}\n\n");
        if self.mode == Mode::Contextual && !excerpt.trim().is_empty() {
            prompt.push_str("The main session so far (latest last):\n<session>\n");
            prompt.push_str(excerpt.trim());
            prompt.push_str("\n</session>\n\n");
        }
        if !self.turns.is_empty() {
            prompt.push_str("Our side conversation so far:\n<side-conversation>\n");
            prompt.push_str(&self.transcript());
            prompt.push_str("\n</side-conversation>\n\n");
        }
        prompt.push_str("Side question: ");
        prompt.push_str(question.trim());
        prompt
    }

    /// The exchanges as `User: …` / `Assistant: …` blocks, separated by `---` (Unipi's
    /// `formatThread`).
    pub(crate) fn transcript(&self) -> String {
        self.turns
            .iter()
            .map(|turn| {
                format!(
                    "User: {}\nAssistant: {}",
                    turn.question.trim(),
                    turn.answer.trim()
                )
            })
            .collect::<Vec<_>>()
            .join("\n\n---\n\n")
    }

    /// The user message `/btw:inject [instructions]` sends to the main agent.
    pub(crate) fn inject_message(&self, instructions: &str) -> String {
        let instructions = instructions.trim();
        if instructions.is_empty() {
            format!(
                "Here is a side conversation I had for additional context:\n\n{}",
                self.transcript()
            )
        } else {
            format!(
                "Here is a side conversation I had. {instructions}\n\n{}",
                self.transcript()
            )
        }
    }

    /// The one-shot prompt that summarizes the thread (`/btw:summarize`).
    pub(crate) fn summarize_prompt(&self) -> String {
        format!(
            "Summarize the side conversation below concisely. Preserve key decisions, plans, \
             insights, risks, and action items. Output only the summary.\n\n\
             <side-conversation>\n{}\n</side-conversation>",
            self.transcript()
        )
    }
}

/// The user message `/btw:summarize [instructions]` sends with the thread's `summary`.
pub(crate) fn summary_message(summary: &str, instructions: &str) -> String {
    let instructions = instructions.trim();
    if instructions.is_empty() {
        format!(
            "Here is a summary of a side conversation I had:\n\n{}",
            summary.trim()
        )
    } else {
        format!(
            "Here is a summary of a side conversation I had. {instructions}\n\n{}",
            summary.trim()
        )
    }
}

/// Takes the `--save` / `-s` flag out of a command's arguments: whether it was there, and the
/// rest (Unipi's `(?:^|\s)(?:--save|-s)(?=\s|$)`).
pub(crate) fn take_save_flag(args: &str) -> (bool, String) {
    let mut save = false;
    let rest: Vec<&str> = args
        .split_whitespace()
        .filter(|word| {
            let flag = matches!(*word, "--save" | "-s");
            save |= flag;
            !flag
        })
        .collect();
    (save, rest.join(" "))
}

/// The thread file of the Pi session in `session_file`: beside it, `<name>.btw.json` (Pi lists
/// only `*.jsonl` files as sessions, so it does not take this one for a session).
pub(crate) fn thread_path(session_file: &Path) -> PathBuf {
    let name = session_file
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".to_owned());
    session_file.with_file_name(format!("{name}.btw.json"))
}

/// The thread kept in `path`; an empty one when there is no file.
pub(crate) fn load(path: &Path) -> anyhow::Result<Thread> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Thread::default()),
        Err(err) => return Err(err).with_context(|| format!("read {}", path.display())),
    };
    let file: ThreadFile = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a /btw thread file", path.display()))?;
    anyhow::ensure!(
        file.version == FILE_VERSION,
        "{}: thread file version {} (this workbench reads version {FILE_VERSION})",
        path.display(),
        file.version
    );
    Ok(file.thread)
}

/// Writes `thread` to `path`, crash-safe (an empty thread removes the file).
pub(crate) fn save(path: &Path, thread: &Thread) -> anyhow::Result<()> {
    if thread.is_empty() {
        return match std::fs::remove_file(path) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                Err(err).with_context(|| format!("remove {}", path.display()))
            }
            _ => Ok(()),
        };
    }
    let file = ThreadFile {
        version: FILE_VERSION,
        thread: thread.clone(),
    };
    let bytes = serde_json::to_vec_pretty(&file).context("encode the /btw thread")?;
    crate::sys::write_atomic(path, &bytes).with_context(|| format!("write {}", path.display()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;

    fn turn(question: &str, answer: &str) -> Turn {
        Turn {
            question: question.into(),
            answer: answer.into(),
            model: "p/m".into(),
            at_ms: 1,
        }
    }

    #[test]
    fn the_prompt_carries_the_excerpt_the_thread_and_the_question() {
        let mut thread = Thread::default();
        let first = thread.prompt(" what is X? ", "user: hello");
        assert!(
            first.contains("<session>\nuser: hello\n</session>"),
            "{first}"
        );
        assert!(!first.contains("<side-conversation>"), "{first}");
        assert!(first.ends_with("Side question: what is X?"), "{first}");

        thread.turns.push(turn("what is X?", "X is a flag."));
        let follow_up = thread.prompt("and Y?", "");
        assert!(!follow_up.contains("<session>"), "{follow_up}");
        assert!(
            follow_up.contains(
                "<side-conversation>\nUser: what is X?\nAssistant: X is a flag.\n</side-conversation>"
            ),
            "{follow_up}"
        );
        assert!(follow_up.ends_with("Side question: and Y?"), "{follow_up}");

        thread.mode = Mode::Tangent;
        assert!(!thread.prompt("z?", "user: hello").contains("user: hello"));
    }

    #[test]
    fn inject_and_summary_messages_table() {
        let thread = Thread {
            mode: Mode::Contextual,
            turns: vec![turn("q1", "a1"), turn("q2", "a2")],
        };
        let cases = [
            (
                thread.inject_message(""),
                "Here is a side conversation I had for additional context:\n\nUser: q1\n\
                 Assistant: a1\n\n---\n\nUser: q2\nAssistant: a2",
            ),
            (
                thread.inject_message(" use it "),
                "Here is a side conversation I had. use it\n\nUser: q1\nAssistant: a1\n\n---\n\n\
                 User: q2\nAssistant: a2",
            ),
            (
                summary_message(" S ", ""),
                "Here is a summary of a side conversation I had:\n\nS",
            ),
            (
                summary_message("S", "fix it"),
                "Here is a summary of a side conversation I had. fix it\n\nS",
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
        assert!(
            thread
                .summarize_prompt()
                .contains("User: q2\nAssistant: a2")
        );
    }

    #[test]
    fn the_save_flag_table() {
        let cases = [
            ("--save what is X?", (true, "what is X?")),
            ("what is X? -s", (true, "what is X?")),
            ("what --saved X", (false, "what --saved X")),
            ("  plain question ", (false, "plain question")),
            ("--save", (true, "")),
        ];
        for (args, (save, rest)) in cases {
            assert_eq!(take_save_flag(args), (save, rest.to_owned()), "{args:?}");
        }
    }

    #[test]
    fn a_thread_file_round_trips_and_bad_files_say_where() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("2026_abc.jsonl");
        let path = thread_path(&session);
        assert_eq!(path, dir.path().join("2026_abc.btw.json"));
        assert_eq!(load(&path).unwrap(), Thread::default());

        let thread = Thread {
            mode: Mode::Tangent,
            turns: vec![turn("q", "a")],
        };
        save(&path, &thread).unwrap();
        assert_eq!(load(&path).unwrap(), thread);
        save(&path, &Thread::default()).unwrap();
        assert!(!path.exists(), "an empty thread leaves no file");

        std::fs::write(&path, "{not json").unwrap();
        let err = format!("{:#}", load(&path).unwrap_err());
        assert!(err.contains("2026_abc.btw.json"), "{err}");
        std::fs::write(&path, r#"{"version": 9, "mode": "tangent", "turns": []}"#).unwrap();
        let err = format!("{:#}", load(&path).unwrap_err());
        assert!(err.contains("version 9"), "{err}");
    }
}

//! The delegate's files on disk and the rules around them: the directory layout
//! (`<workspace>/.unipi/delegate/<session>-<pid>/<task-id>/`), exclusive durable creation, the
//! manifest's state machine, the child's result and terminal records, the parent's outcome, the
//! verification of a result against its manifest, and the choice between inline and artifact
//! delivery of a verified answer.
//!
//! Ownership is split by file so no file has two writers: the parent owns `manifest.json`
//! (launched → running → committed | failed | cancelled) and `outcome.json`; the child owns
//! `result.json` — its single commit point, created exclusively as its last act — or
//! `child-terminal.json` when it fails. The parent trusts nothing the child wrote until
//! [`verify_result`] has checked it against the manifest.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::canonical::{canonical_json, sha256_hex};
use super::errors::{DelegateError, DelegateErrorCode};
use crate::helpers::events::Usage;
use crate::sys::{now_ms, write_atomic, write_new_atomic};

/// Schemas of the files.
pub const MANIFEST_SCHEMA: &str = "unipi.delegate-manifest.v1";
pub(crate) const RESULT_SCHEMA: &str = "unipi.delegate-result.v1";
pub(crate) const TERMINAL_SCHEMA: &str = "unipi.delegate-child-terminal.v1";
pub(crate) const OUTCOME_SCHEMA: &str = "unipi.delegate-outcome.v1";

/// File names inside a task directory.
pub(crate) const MANIFEST_FILE: &str = "manifest.json";
pub const SEED_FILE: &str = "seed.json";
pub const RESULT_FILE: &str = "result.json";
pub const TERMINAL_FILE: &str = "child-terminal.json";
pub const OUTCOME_FILE: &str = "outcome.json";
pub(crate) const CHILD_LOG_FILE: &str = "child-stderr.log";
/// The child's helper-run directory (the runner keeps Pi's session inside it).
pub(crate) const CHILD_RUN_DIR: &str = "child-run";

/// The inline answer cap (`DELEGATE_INLINE_ANSWER_BYTES`).
pub(crate) const INLINE_ANSWER_BYTES: usize = 49_152;
/// The largest answer the child commits (answer capture cap).
pub(crate) const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;
/// Reserves subtracted from the route's window (output, framing, safety) and the least usable
/// input that is left.
pub(crate) const RESERVED_OUTPUT_TOKENS: u64 = 16_384;
pub(crate) const RESERVED_FRAMING_TOKENS: u64 = 8_192;
pub(crate) const RESERVED_SAFETY_TOKENS: u64 = 4_096;
pub(crate) const MIN_INPUT_TOKENS: u64 = 8_192;

/// The pinned model of a delegate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    pub provider: String,
    pub model: String,
    pub context_window_tokens: u64,
    pub origin: RouteOrigin,
}

/// Where the route came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteOrigin {
    Explicit,
    ParentCurrent,
}

impl Route {
    /// `provider/model`, as Pi's `--model` takes it.
    pub fn qualified(&self) -> String {
        format!("{}/{}", self.provider, self.model)
    }

    pub fn to_json(&self) -> Value {
        json!({
            "provider": self.provider,
            "model": self.model,
            "qualified_id": self.qualified(),
            "context_window_tokens": self.context_window_tokens,
            "origin": self.origin,
        })
    }

    /// `window − reserves`, or `None` when that leaves less than [`MIN_INPUT_TOKENS`].
    pub fn allowed_input_tokens(&self) -> Option<u64> {
        self.context_window_tokens
            .checked_sub(RESERVED_OUTPUT_TOKENS + RESERVED_FRAMING_TOKENS + RESERVED_SAFETY_TOKENS)
            .filter(|allowed| *allowed >= MIN_INPUT_TOKENS)
    }
}

/// The child's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub max_turns: u32,
    pub timeout_seconds: u64,
    pub max_answer_bytes: usize,
    pub inline_answer_bytes: usize,
    pub allowed_input_tokens: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_turns: 24,
            timeout_seconds: 1200,
            max_answer_bytes: MAX_ANSWER_BYTES,
            inline_answer_bytes: INLINE_ANSWER_BYTES,
            allowed_input_tokens: 0,
        }
    }
}

impl Limits {
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The manifest's lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ManifestState {
    Launched,
    Running,
    Committed,
    Failed,
    Cancelled,
}

impl ManifestState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Launched => "launched",
            Self::Running => "running",
            Self::Committed => "committed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Committed | Self::Failed | Self::Cancelled)
    }

    /// The legal moves: launched → running; running → committed | failed | cancelled; a launch
    /// that never ran may fail or be cancelled. Nothing leaves a terminal state, and only a run
    /// can commit.
    pub(crate) fn can_become(self, next: ManifestState) -> bool {
        use ManifestState::*;
        matches!(
            (self, next),
            (Launched, Running | Failed | Cancelled) | (Running, Committed | Failed | Cancelled)
        )
    }
}

/// How the child runs Pi (the app's own launch).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PiCommand {
    pub program: PathBuf,
    pub leading_args: Vec<String>,
}

/// `manifest.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub schema_version: String,
    pub task_id: String,
    pub launch_nonce: String,
    pub name: String,
    pub created_at: u64,
    pub updated_at: u64,
    pub cwd: PathBuf,
    pub route: Route,
    pub limits: Limits,
    pub seed_sha256: String,
    pub seed_bytes: usize,
    pub directive_sha256: String,
    pub pi: PiCommand,
    pub state: ManifestState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorRecord>,
}

/// A code and message, as recorded in the manifest and outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorRecord {
    pub code: String,
    pub message: String,
}

/// The answer inside `result.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub encoding: String,
    pub byte_length: usize,
    pub sha256: String,
    pub text: String,
}

impl Answer {
    pub fn new(text: String) -> Self {
        Self {
            encoding: "utf-8".to_string(),
            byte_length: text.len(),
            sha256: sha256_hex(text.as_bytes()),
            text,
        }
    }
}

/// `result.json`: the child's commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildResult {
    pub schema_version: String,
    pub task_id: String,
    pub launch_nonce: String,
    pub seed_sha256: String,
    pub route: RoutePin,
    pub turns: u32,
    pub tool_calls: usize,
    pub usage: Usage,
    pub answer: Answer,
}

/// The route as the child ran it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutePin {
    pub provider: String,
    pub model: String,
}

/// `child-terminal.json`: the child's failure record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ChildTerminal {
    pub schema_version: String,
    pub task_id: String,
    pub launch_nonce: String,
    pub code: String,
    pub message: String,
    pub turns: u32,
    pub tool_calls: usize,
}

/// `outcome.json`: the parent's adjudication.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub schema_version: String,
    pub task_id: String,
    pub launch_nonce: String,
    pub status: ManifestState,
    pub error: Option<ErrorRecord>,
    pub answer_bytes: Option<usize>,
    pub answer_sha256: Option<String>,
    pub turns: u32,
    pub tool_calls: usize,
    pub usage: Option<Usage>,
    pub decided_at: u64,
}

/// The paths of one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskDir {
    pub dir: PathBuf,
}

impl TaskDir {
    /// `<workspace>/.unipi/delegate/<run>/<task-id>`.
    pub fn new(workspace: &Path, run: &str, task_id: &str) -> Self {
        Self {
            dir: run_root(workspace, run).join(task_id),
        }
    }

    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Creates the directory, failing when it exists (a task id is never reused).
    pub fn create(&self) -> Result<(), DelegateError> {
        if let Some(parent) = self.dir.parent() {
            std::fs::create_dir_all(parent).map_err(|err| artifact_error(parent, &err))?;
        }
        std::fs::create_dir(&self.dir).map_err(|err| artifact_error(&self.dir, &err))
    }

    pub fn read_manifest(&self) -> anyhow::Result<Manifest> {
        read_json(&self.file(MANIFEST_FILE))
    }

    /// Writes the first manifest (exclusive).
    pub fn create_manifest(&self, manifest: &Manifest) -> Result<(), DelegateError> {
        let path = self.file(MANIFEST_FILE);
        write_new_atomic(&path, &canonical_line(manifest))
            .map_err(|err| artifact_error(&path, &err))
    }

    /// Moves the manifest to `next` (with an error record for a failure), refusing an illegal
    /// transition. Returns the manifest as written.
    pub(crate) fn transition(
        &self,
        next: ManifestState,
        error: Option<ErrorRecord>,
        child_pid: Option<u32>,
    ) -> anyhow::Result<Manifest> {
        let mut manifest = self.read_manifest()?;
        if !manifest.state.can_become(next) {
            anyhow::bail!(
                "delegate {}: illegal manifest transition {} → {}",
                manifest.task_id,
                manifest.state.as_str(),
                next.as_str()
            );
        }
        manifest.state = next;
        manifest.updated_at = now_ms();
        if error.is_some() {
            manifest.error = error;
        }
        if child_pid.is_some() {
            manifest.child_pid = child_pid;
        }
        let path = self.file(MANIFEST_FILE);
        write_atomic(&path, &canonical_line(&manifest))
            .with_context(|| format!("replace {}", path.display()))?;
        Ok(manifest)
    }

    /// The files present, for "Preserved: …".
    pub fn preserved(&self) -> Vec<String> {
        [
            SEED_FILE,
            MANIFEST_FILE,
            TERMINAL_FILE,
            RESULT_FILE,
            OUTCOME_FILE,
            CHILD_LOG_FILE,
        ]
        .into_iter()
        .filter(|name| self.file(name).exists())
        .map(str::to_string)
        .collect()
    }
}

/// `<workspace>/.unipi/delegate/<run>`.
pub(crate) fn run_root(workspace: &Path, run: &str) -> PathBuf {
    workspace.join(".unipi").join("delegate").join(run)
}

/// Canonical JSON of `value` plus a newline.
pub(crate) fn canonical_line(value: &impl Serialize) -> Vec<u8> {
    let value = serde_json::to_value(value).unwrap_or(Value::Null);
    let mut text = canonical_json(&value);
    text.push('\n');
    text.into_bytes()
}

/// Checks a child's `result.json` bytes against the manifest, in order: JSON and schema, task
/// id and nonce, seed sha, route, answer length and sha. Any failure names its code.
pub fn verify_result(manifest: &Manifest, bytes: &[u8]) -> Result<ChildResult, DelegateError> {
    use DelegateErrorCode as Code;
    let fail = |code, message: String| Err(DelegateError::new(code, message));
    let result: ChildResult = match serde_json::from_slice(bytes) {
        Ok(result) => result,
        Err(err) => {
            return fail(
                Code::ChildResultInvalid,
                format!("result.json is not a delegate result: {err}"),
            );
        }
    };
    if result.schema_version != RESULT_SCHEMA {
        return fail(
            Code::ChildResultInvalid,
            format!("result.json has schema {:?}", result.schema_version),
        );
    }
    if result.task_id != manifest.task_id || result.launch_nonce != manifest.launch_nonce {
        return fail(
            Code::ChildResultInvalid,
            format!(
                "result.json belongs to task {} (nonce {}), not this launch",
                result.task_id, result.launch_nonce
            ),
        );
    }
    if result.seed_sha256 != manifest.seed_sha256 {
        return fail(
            Code::SeedHashMismatch,
            format!(
                "the child answered from seed {}, but the launch froze seed {}",
                result.seed_sha256, manifest.seed_sha256
            ),
        );
    }
    if result.route.provider != manifest.route.provider
        || result.route.model != manifest.route.model
    {
        return fail(
            Code::RouteMismatch,
            format!(
                "the child ran {}/{}, but the route was pinned to {}",
                result.route.provider,
                result.route.model,
                manifest.route.qualified()
            ),
        );
    }
    let answer = &result.answer;
    if answer.encoding != "utf-8"
        || answer.byte_length != answer.text.len()
        || answer.sha256 != sha256_hex(answer.text.as_bytes())
    {
        return fail(
            Code::AnswerHashMismatch,
            format!(
                "the answer's recorded length/sha ({} bytes, {}) do not match its text ({} \
                 bytes, {})",
                answer.byte_length,
                answer.sha256,
                answer.text.len(),
                sha256_hex(answer.text.as_bytes())
            ),
        );
    }
    Ok(result)
}

/// How a verified answer reaches the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Inline,
    Artifact,
}

impl Delivery {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Inline => "inline",
            Self::Artifact => "artifact",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "inline" => Some(Self::Inline),
            "artifact" => Some(Self::Artifact),
            _ => None,
        }
    }
}

/// Inline when the exact answer fits `cap` bytes, else an artifact reference — never shortened.
/// Asking for inline when it does not fit is `result_too_large_for_inline`.
pub(crate) fn decide_delivery(
    answer_bytes: usize,
    requested: Option<Delivery>,
    cap: usize,
    result_path: &Path,
) -> Result<Delivery, DelegateError> {
    match requested {
        Some(Delivery::Artifact) => Ok(Delivery::Artifact),
        _ if answer_bytes <= cap => Ok(Delivery::Inline),
        Some(Delivery::Inline) => Err(DelegateError::new(
            DelegateErrorCode::ResultTooLargeForInline,
            format!(
                "bg_result cannot return this answer inline: it is {answer_bytes} bytes, over \
                 the {cap}-byte inline cap. The complete verified answer is preserved at {}. It \
                 is not truncated to fit.",
                result_path.display()
            ),
        )),
        None => Ok(Delivery::Artifact),
    }
}

pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let bytes = std::fs::read(path).with_context(|| format!("read {}", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("parse {}", path.display()))
}

fn artifact_error(path: &Path, err: &std::io::Error) -> DelegateError {
    DelegateError::new(
        DelegateErrorCode::ArtifactError,
        format!("cannot create {}: {err}", path.display()),
    )
}

/// Fixtures shared by the delegate's unit tests.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    pub(crate) fn manifest() -> Manifest {
        Manifest {
            schema_version: MANIFEST_SCHEMA.into(),
            task_id: "d1".into(),
            launch_nonce: "n1".into(),
            name: "ask".into(),
            created_at: 1,
            updated_at: 1,
            cwd: "/w".into(),
            route: Route {
                provider: "p".into(),
                model: "m".into(),
                context_window_tokens: 128_000,
                origin: RouteOrigin::Explicit,
            },
            limits: Limits::default(),
            seed_sha256: "s1".into(),
            seed_bytes: 10,
            directive_sha256: "q".into(),
            pi: PiCommand::default(),
            state: ManifestState::Launched,
            child_pid: None,
            error: None,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::tests_support::manifest;
    use super::*;

    fn result() -> ChildResult {
        ChildResult {
            schema_version: RESULT_SCHEMA.into(),
            task_id: "d1".into(),
            launch_nonce: "n1".into(),
            seed_sha256: "s1".into(),
            route: RoutePin {
                provider: "p".into(),
                model: "m".into(),
            },
            turns: 1,
            tool_calls: 0,
            usage: Usage::default(),
            answer: Answer::new("forty-two".into()),
        }
    }

    #[test]
    fn manifest_transitions_table() {
        use ManifestState::*;
        let all = [Launched, Running, Committed, Failed, Cancelled];
        let legal = [
            (Launched, Running),
            (Launched, Failed),
            (Launched, Cancelled),
            (Running, Committed),
            (Running, Failed),
            (Running, Cancelled),
        ];
        for from in all {
            for to in all {
                assert_eq!(
                    from.can_become(to),
                    legal.contains(&(from, to)),
                    "{from:?} → {to:?}"
                );
            }
        }
    }

    #[test]
    fn the_manifest_file_follows_the_state_machine() {
        let dir = tempfile::tempdir().unwrap();
        let task = TaskDir::at(dir.path().join("d1"));
        task.create().unwrap();
        assert!(task.create().is_err(), "a task directory is created once");
        task.create_manifest(&manifest()).unwrap();
        assert!(task.create_manifest(&manifest()).is_err(), "exclusive");
        assert!(
            task.transition(ManifestState::Committed, None, None)
                .is_err()
        );
        let running = task
            .transition(ManifestState::Running, None, Some(7))
            .unwrap();
        assert_eq!(
            (running.state, running.child_pid),
            (ManifestState::Running, Some(7))
        );
        task.transition(ManifestState::Committed, None, None)
            .unwrap();
        assert!(task.transition(ManifestState::Failed, None, None).is_err());
        let text = std::fs::read_to_string(task.file(MANIFEST_FILE)).unwrap();
        assert!(
            text.ends_with("}\n") && text.contains(r#""state":"committed""#),
            "{text}"
        );
    }

    #[test]
    fn verification_table() {
        type Tamper = fn(&mut ChildResult);
        let cases: [(&str, Tamper, Option<DelegateErrorCode>); 7] = [
            ("intact", |_| {}, None),
            (
                "wrong task",
                |r| r.task_id = "d2".into(),
                Some(DelegateErrorCode::ChildResultInvalid),
            ),
            (
                "wrong nonce",
                |r| r.launch_nonce = "n2".into(),
                Some(DelegateErrorCode::ChildResultInvalid),
            ),
            (
                "wrong seed",
                |r| r.seed_sha256 = "s2".into(),
                Some(DelegateErrorCode::SeedHashMismatch),
            ),
            (
                "wrong route",
                |r| r.route.model = "other".into(),
                Some(DelegateErrorCode::RouteMismatch),
            ),
            (
                "wrong sha",
                |r| r.answer.text.push('!'),
                Some(DelegateErrorCode::AnswerHashMismatch),
            ),
            (
                "wrong schema",
                |r| r.schema_version = "x".into(),
                Some(DelegateErrorCode::ChildResultInvalid),
            ),
        ];
        let manifest = manifest();
        for (name, tamper, want) in cases {
            let mut result = result();
            tamper(&mut result);
            let bytes = canonical_line(&result);
            let got = verify_result(&manifest, &bytes)
                .map(|_| ())
                .map_err(|e| e.code);
            assert_eq!(got.err(), want, "{name}");
        }
        let garbage = verify_result(&manifest, b"{not json").unwrap_err();
        assert_eq!(garbage.code, DelegateErrorCode::ChildResultInvalid);
    }

    #[test]
    fn delivery_table() {
        let path = Path::new("/w/d1/result.json");
        let cap = INLINE_ANSWER_BYTES;
        let cases = [
            (cap, None, Ok(Delivery::Inline)),
            (cap + 1, None, Ok(Delivery::Artifact)),
            (cap, Some(Delivery::Inline), Ok(Delivery::Inline)),
            (
                cap + 1,
                Some(Delivery::Inline),
                Err(DelegateErrorCode::ResultTooLargeForInline),
            ),
            (1, Some(Delivery::Artifact), Ok(Delivery::Artifact)),
            (0, None, Ok(Delivery::Inline)),
        ];
        for (bytes, requested, want) in cases {
            let got = decide_delivery(bytes, requested, cap, path).map_err(|e| e.code);
            assert_eq!(got, want, "{bytes} bytes, {requested:?}");
        }
        let err = decide_delivery(cap + 1, Some(Delivery::Inline), cap, path).unwrap_err();
        let text = err.describe();
        assert!(
            text.contains("49153 bytes") && text.contains("/w/d1/result.json"),
            "{text}"
        );
        assert!(
            text.contains("Remediation: Call bg_result with delivery:\"artifact\""),
            "{text}"
        );
    }

    #[test]
    fn routes_reserve_room_and_need_a_minimum_window() {
        let route = |window| Route {
            provider: "p".into(),
            model: "m".into(),
            context_window_tokens: window,
            origin: RouteOrigin::Explicit,
        };
        assert_eq!(route(36_864).allowed_input_tokens(), Some(8_192));
        assert_eq!(route(36_863).allowed_input_tokens(), None);
        assert_eq!(route(1_000).allowed_input_tokens(), None);
        assert_eq!(
            route(128_000).allowed_input_tokens(),
            Some(128_000 - 28_672)
        );
    }
}

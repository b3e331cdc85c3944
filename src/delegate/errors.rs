//! The delegate's typed failures: a [`DelegateErrorCode`] the model can branch on, a message
//! saying what happened, and remediation lines saying what to do instead. The codes and their
//! wording follow the original's `DELEGATE_ERROR_CODES` so Unipi users recognise them; every
//! refusal and every failed verification is one of these, never a free-form string, so the model
//! reads the same shape whether the route was unknown or the child's answer failed its hash.

use std::fmt;
use std::path::PathBuf;

/// Every code a delegate tool can answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DelegateErrorCode {
    InvalidArguments,
    RouteUnresolved,
    RouteCapacityUnknown,
    SeedProjectionFailed,
    SeedBudgetExceeded,
    SeedPersistFailed,
    SeedHashMismatch,
    ArtifactError,
    ChildSpawnFailed,
    ChildCancelled,
    ChildTimeout,
    ChildExitedWithoutCommit,
    ChildResultInvalid,
    RouteMismatch,
    AnswerHashMismatch,
    ResultTooLargeForInline,
    TaskUnknown,
}

impl DelegateErrorCode {
    /// Every code, for tables and tests.
    pub const ALL: [DelegateErrorCode; 17] = [
        Self::InvalidArguments,
        Self::RouteUnresolved,
        Self::RouteCapacityUnknown,
        Self::SeedProjectionFailed,
        Self::SeedBudgetExceeded,
        Self::SeedPersistFailed,
        Self::SeedHashMismatch,
        Self::ArtifactError,
        Self::ChildSpawnFailed,
        Self::ChildCancelled,
        Self::ChildTimeout,
        Self::ChildExitedWithoutCommit,
        Self::ChildResultInvalid,
        Self::RouteMismatch,
        Self::AnswerHashMismatch,
        Self::ResultTooLargeForInline,
        Self::TaskUnknown,
    ];

    /// The wire name (snake_case, as in the original).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArguments => "invalid_arguments",
            Self::RouteUnresolved => "route_unresolved",
            Self::RouteCapacityUnknown => "route_capacity_unknown",
            Self::SeedProjectionFailed => "seed_projection_failed",
            Self::SeedBudgetExceeded => "seed_budget_exceeded",
            Self::SeedPersistFailed => "seed_persist_failed",
            Self::SeedHashMismatch => "seed_hash_mismatch",
            Self::ArtifactError => "artifact_error",
            Self::ChildSpawnFailed => "child_spawn_failed",
            Self::ChildCancelled => "child_cancelled",
            Self::ChildTimeout => "child_timeout",
            Self::ChildExitedWithoutCommit => "child_exited_without_commit",
            Self::ChildResultInvalid => "child_result_invalid",
            Self::RouteMismatch => "route_mismatch",
            Self::AnswerHashMismatch => "answer_hash_mismatch",
            Self::ResultTooLargeForInline => "result_too_large_for_inline",
            Self::TaskUnknown => "task_unknown",
        }
    }

    /// The code named `name`, if any (reading `child-terminal.json`).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|code| code.as_str() == name)
    }

    /// What the model should do about it. Empty for codes whose message already says it.
    pub(crate) fn remediation(self) -> &'static [&'static str] {
        match self {
            Self::RouteUnresolved => &[
                "Name a provider/model pair that appears in the current model registry.",
                "Omit the route argument to use the parent session's current model.",
            ],
            Self::RouteCapacityUnknown => &[
                "Pin a route whose catalogue entry declares a context window of at least 36864 \
                 tokens.",
            ],
            Self::SeedProjectionFailed => &[
                "The delegate is seeded from this session's saved conversation; it needs a \
                 session file (not --no-session) that Pi has written.",
                "Nothing was dropped or guessed: no child was started.",
            ],
            Self::SeedBudgetExceeded => &[
                "Pin a larger-context route with the route argument.",
                "Restate only the required findings in a shorter prompt.",
            ],
            Self::SeedPersistFailed | Self::ArtifactError => &[
                "The delegate artifacts could not be written. Check free disk space and \
                 directory permissions.",
            ],
            Self::ChildSpawnFailed => &[
                "The child process could not start; check that the workbench binary and Pi \
                 are installed and executable.",
            ],
            Self::ChildCancelled | Self::ChildExitedWithoutCommit | Self::ChildTimeout => &[
                "Inspect the preserved diagnostic evidence in the artifact directory.",
                "No partial answer is returned; nothing was truncated to look like success.",
            ],
            Self::ResultTooLargeForInline => &[
                "Call bg_result with delivery:\"artifact\" to get the artifact reference.",
                "Read the answer from the artifact path directly; it is complete and verified.",
            ],
            Self::TaskUnknown => &["Use the task id bg_delegate returned (d followed by 32 hex)."],
            Self::InvalidArguments
            | Self::SeedHashMismatch
            | Self::ChildResultInvalid
            | Self::RouteMismatch
            | Self::AnswerHashMismatch => &[],
        }
    }
}

impl fmt::Display for DelegateErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A delegate failure as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("[{code}] {message}")]
pub struct DelegateError {
    pub code: DelegateErrorCode,
    pub message: String,
    /// Whether a child process had been started (a preflight refusal never starts one).
    pub child_created: bool,
    /// The task's artifact directory, when one exists.
    pub artifact_dir: Option<PathBuf>,
    /// The artifact files kept for inspection.
    pub preserved: Vec<String>,
}

impl DelegateError {
    /// A failure before any process or directory exists.
    pub fn new(code: DelegateErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            child_created: false,
            artifact_dir: None,
            preserved: Vec::new(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(DelegateErrorCode::InvalidArguments, message)
    }

    /// The same failure, about a task whose child existed and whose artifacts are at `dir`.
    pub(crate) fn with_artifacts(mut self, dir: PathBuf, preserved: Vec<String>) -> Self {
        self.child_created = true;
        self.artifact_dir = Some(dir);
        self.preserved = preserved;
        self
    }

    /// The full text the model reads: code and message, whether a child existed, where the
    /// evidence is, and the remediation lines.
    pub fn describe(&self) -> String {
        let mut text = format!("[{}] {}", self.code, self.message);
        let created = if self.child_created { "yes" } else { "no" };
        text.push_str(&format!("\nChild process created: {created}"));
        if let Some(dir) = &self.artifact_dir {
            text.push_str(&format!("\nArtifacts: {}", dir.display()));
        }
        if self.preserved.is_empty() {
            text.push_str("\nPreserved: nothing was written for this failure");
        } else {
            text.push_str(&format!("\nPreserved: {}", self.preserved.join(", ")));
        }
        for line in self.code.remediation() {
            text.push_str(&format!("\nRemediation: {line}"));
        }
        text
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_through_their_names() {
        for code in DelegateErrorCode::ALL {
            assert_eq!(DelegateErrorCode::parse(code.as_str()), Some(code));
        }
        assert_eq!(DelegateErrorCode::parse("nope"), None);
    }

    #[test]
    fn describe_names_the_code_the_evidence_and_the_remedy() {
        let refusal = DelegateError::new(DelegateErrorCode::RouteUnresolved, "no such route");
        let text = refusal.describe();
        assert!(
            text.starts_with("[route_unresolved] no such route\n"),
            "{text}"
        );
        assert!(text.contains("Child process created: no"), "{text}");
        assert!(text.contains("Preserved: nothing was written"), "{text}");
        assert!(
            text.contains("Remediation: Name a provider/model pair"),
            "{text}"
        );

        let failed = DelegateError::new(DelegateErrorCode::ChildCancelled, "stopped")
            .with_artifacts(PathBuf::from("/w/d1"), vec!["seed.json".into()]);
        let text = failed.describe();
        assert!(text.contains("Child process created: yes"), "{text}");
        assert!(text.contains("Artifacts: /w/d1"), "{text}");
        assert!(text.contains("Preserved: seed.json"), "{text}");
    }
}

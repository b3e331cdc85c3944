//! Pi's `session_before_compact`, decided without state: whether the compaction is ours
//! ([`plan`]), the branch to summarize ([`branch_entries`]), the answer Pi gets for the
//! pipeline's result ([`answer`]), the database row that records it ([`record_for`]), and what
//! follows a `/unipi:compact` that did not end in a compaction ([`after_unfinished`]). The
//! module runs these in order and keeps what they return.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::command::Marker;
use super::config::CompactorConfig;
use super::entries::{self, SessionEntry};
use super::pipeline::Compaction;
use super::refusal::Refusal;
use crate::bridge::{DeliverAs, HostCall, NotifyLevel};
use crate::sessiondb::CompactionRecord;

/// The hook this module answers.
pub(crate) const BEFORE_COMPACT_HOOK: &str = "session_before_compact";

/// `session_before_compact` as the extension forwards it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct BeforeCompact {
    /// manual, threshold, overflow (Pi 1.x; null in 0.7x).
    pub reason: Option<String>,
    pub custom_instructions: Option<String>,
    pub will_retry: bool,
    pub tokens_before: Option<f64>,
    pub first_kept_entry_id: Option<String>,
    pub previous_summary: Option<String>,
    /// Pi's raw entries; null when they did not fit one line (read the session file then).
    pub branch_entries: Option<Vec<Value>>,
    pub session_file: Option<String>,
    pub session_id: Option<String>,
    pub leaf_id: Option<String>,
}

impl BeforeCompact {
    pub(crate) fn overflow(&self) -> bool {
        self.reason.as_deref() == Some("overflow")
    }
}

/// What to do with a `session_before_compact`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Not ours: Pi runs its own (LLM) compaction.
    LeaveToPi,
    /// Summarize deterministically; `marker` when this module asked for the compaction.
    Compact { marker: Option<Marker> },
}

/// Ours when the instructions carry the marker, or when `overrideDefaultCompaction` is on.
pub(crate) fn plan(config: &CompactorConfig, input: &BeforeCompact) -> Plan {
    let marker = input.custom_instructions.as_deref().and_then(Marker::parse);
    if marker.is_none() && !config.override_default_compaction {
        return Plan::LeaveToPi;
    }
    Plan::Compact { marker }
}

/// The hook's answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HookAnswer {
    Compacted(Box<Compaction>),
    /// No valid cut on an overflow: Pi's own compaction gets its turn (`null`).
    LetPiRetry,
    /// No valid cut otherwise: cancel, and show the warning.
    Cancel {
        warning: String,
    },
}

/// The answer for the pipeline's `result`.
pub(crate) fn answer(
    result: Result<Compaction, Refusal>,
    overflow: bool,
    ours: bool,
) -> HookAnswer {
    match result {
        Ok(compaction) => HookAnswer::Compacted(Box::new(compaction)),
        Err(refusal) if overflow && !ours && refusal.lets_pi_retry(overflow) => {
            HookAnswer::LetPiRetry
        }
        Err(refusal) => HookAnswer::Cancel {
            warning: refusal.to_string(),
        },
    }
}

impl HookAnswer {
    /// What the extension returns from Pi's handler.
    pub(crate) fn to_json(&self) -> Value {
        match self {
            HookAnswer::Compacted(compaction) => json!({"compaction": {
                "summary": compaction.summary,
                "details": compaction.details,
                "tokensBefore": compaction.tokens_before,
                "firstKeptEntryId": compaction.first_kept_entry_id,
            }}),
            HookAnswer::LetPiRetry => Value::Null,
            HookAnswer::Cancel { .. } => json!({"cancel": true}),
        }
    }
}

/// The branch to compact: Pi's entries when it sent them, else the session file's branch.
pub(crate) fn branch_entries(input: &BeforeCompact) -> anyhow::Result<Vec<SessionEntry>> {
    if let Some(raw) = &input.branch_entries {
        return Ok(raw.iter().filter_map(entries::parse_entry).collect());
    }
    let Some(file) = input.session_file.as_deref() else {
        anyhow::bail!("Pi sent no branch entries and the session has no file");
    };
    let all = entries::read_session_file(Path::new(file))?;
    Ok(entries::branch(&all, input.leaf_id.as_deref()))
}

/// The database row for a compaction.
pub(crate) fn record_for(
    compaction: &Compaction,
    session_id: &str,
    reason: &str,
    at_ms: i64,
) -> CompactionRecord {
    let stats = &compaction.stats;
    CompactionRecord {
        session_id: session_id.to_owned(),
        at_ms,
        reason: reason.to_owned(),
        tokens_before: stats.tokens_before,
        tokens_after: stats.tokens_after,
        messages_summarized: stats.messages_summarized as u64,
        blocks_kept: stats.blocks_kept as u64,
        blocks_dropped: stats.blocks_dropped as u64,
        duration_ms: u64::try_from(stats.duration.as_millis()).unwrap_or(u64::MAX),
        summary: compaction.summary.clone(),
        first_kept_entry_id: compaction.first_kept_entry_id.clone(),
        manifest_json: serde_json::to_string(&compaction.manifest.entries)
            .unwrap_or_else(|_| "[]".to_owned()),
    }
}

/// What follows a `/unipi:compact` that did not end in a compaction: Pi refused before asking the
/// hook (a session smaller than Pi's `compaction.keepRecentTokens` is never compacted by Pi,
/// whatever an extension would answer), or the hook cancelled it (its warning was shown then).
/// A short warning for Pi's refusal, and the follow-up prompt is sent all the same: the user
/// asked for it either way.
pub(crate) fn after_unfinished(marker: &Marker, error: Option<&str>) -> Vec<HostCall> {
    let mut calls = Vec::new();
    if let Some(error) = error {
        let reason = if error.contains("session too small") {
            "the session is still smaller than what Pi always keeps \
             (compaction.keepRecentTokens, 20k tokens by default)"
                .to_owned()
        } else {
            error.trim_start_matches("Compaction failed: ").to_owned()
        };
        let then = if marker.follow_up.is_some() {
            " Sending your prompt."
        } else {
            ""
        };
        calls.push(HostCall::Notify {
            message: format!("🗜 Not compacted: {reason}.{then}"),
            level: NotifyLevel::Warning,
        });
    }
    if let Some(follow_up) = &marker.follow_up {
        calls.push(HostCall::SendUserMessage {
            content: follow_up.clone(),
            deliver_as: Some(DeliverAs::FollowUp),
        });
    }
    calls
}

/// A hook input with Pi's figures for `branch` (tests of the hook and the module).
#[cfg(test)]
pub(crate) fn hook_input(
    reason: &str,
    instructions: Option<&str>,
    branch: Vec<Value>,
) -> BeforeCompact {
    BeforeCompact {
        reason: Some(reason.to_owned()),
        custom_instructions: instructions.map(str::to_owned),
        tokens_before: Some(2_000.0),
        branch_entries: Some(branch),
        session_id: Some("sess-1".to_owned()),
        ..BeforeCompact::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compactor::pipeline::{self, CompactRequest, PipelineSettings};
    use crate::compactor::test_fixtures::{small_branch, small_branch_entries};

    #[test]
    fn the_plan_follows_the_override_and_the_marker() {
        let on = CompactorConfig::default();
        let off = CompactorConfig {
            override_default_compaction: false,
            ..CompactorConfig::default()
        };
        let marker = Marker {
            keep: Some(1),
            ..Marker::default()
        };
        let ours = marker.to_instructions();
        let cases = [
            (&on, None, Plan::Compact { marker: None }),
            (&on, Some("focus on X"), Plan::Compact { marker: None }),
            (&off, None, Plan::LeaveToPi),
            (&off, Some("focus on X"), Plan::LeaveToPi),
            (
                &off,
                Some(ours.as_str()),
                Plan::Compact {
                    marker: Some(marker.clone()),
                },
            ),
        ];
        for (config, instructions, want) in cases {
            let input = hook_input("manual", instructions, Vec::new());
            assert_eq!(plan(config, &input), want, "{instructions:?}");
        }
    }

    #[test]
    fn hook_answers_for_results_and_refusals() {
        let branch = small_branch_entries();
        let settings = PipelineSettings::default();
        let compacted = pipeline::compact(&CompactRequest {
            entries: &branch,
            tokens_before: 2_000,
            keep_user_turns: Some(1),
            overflow: false,
            settings: &settings,
        });
        let Ok(compaction) = compacted.clone() else {
            panic!("the small branch compacts: {compacted:?}");
        };
        let wire = answer(Ok(compaction.clone()), false, true).to_json();
        assert_eq!(wire["compaction"]["firstKeptEntryId"], "u2");
        assert_eq!(wire["compaction"]["tokensBefore"], 2_000);
        assert!(
            wire["compaction"]["summary"]
                .as_str()
                .is_some_and(|s| s.contains("session_recall"))
        );
        assert_eq!(wire["compaction"]["details"]["compactor"], "unipi-tui");

        let refusal = Refusal::NoValidCut;
        // (overflow, ours) → answer
        let cases = [
            (true, false, Value::Null),
            (true, true, json!({"cancel": true})),
            (false, false, json!({"cancel": true})),
            (false, true, json!({"cancel": true})),
        ];
        for (overflow, ours, want) in cases {
            assert_eq!(
                answer(Err(refusal), overflow, ours).to_json(),
                want,
                "{overflow} {ours}"
            );
        }
        assert_eq!(
            answer(Err(refusal), false, false),
            HookAnswer::Cancel {
                warning: refusal.to_string()
            }
        );
    }

    #[test]
    fn without_branch_entries_the_branch_comes_from_the_session_file() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("s.jsonl");
        let mut lines = vec![json!({"type": "session", "id": "s", "version": 3})];
        lines.extend(small_branch());
        // A sibling of a2 on another branch: not part of the leaf's path.
        lines.push(json!({"type": "message", "id": "x", "parentId": "u2",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "other"}]}}));
        std::fs::write(
            &file,
            lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
        )?;
        let input = BeforeCompact {
            session_file: Some(file.display().to_string()),
            leaf_id: Some("a2".into()),
            ..BeforeCompact::default()
        };
        let ids: Vec<String> = branch_entries(&input)?.into_iter().map(|e| e.id).collect();
        assert_eq!(ids, ["u0", "a0", "u1", "a1", "u2", "a2"]);
        assert!(branch_entries(&BeforeCompact::default()).is_err());
        Ok(())
    }

    #[test]
    fn an_unfinished_compaction_warns_for_pi_s_refusal_and_still_sends_the_prompt() {
        let with_prompt = Marker {
            keep: Some(1),
            auto: false,
            follow_up: Some("go on".into()),
        };
        let refused = Some("Compaction failed: Nothing to compact (session too small)");
        let texts = |calls: Vec<HostCall>| -> Vec<String> {
            calls
                .into_iter()
                .map(|call| match call {
                    HostCall::Notify { message, level } => format!("{level:?}: {message}"),
                    HostCall::SendUserMessage { content, .. } => format!("prompt: {content}"),
                    other => other.method().to_string(),
                })
                .collect()
        };
        assert_eq!(
            texts(after_unfinished(&with_prompt, refused)),
            [
                "Warning: 🗜 Not compacted: the session is still smaller than what Pi always keeps \
                 (compaction.keepRecentTokens, 20k tokens by default). Sending your prompt.",
                "prompt: go on"
            ]
        );
        // The hook cancelled (it warned already): only the prompt.
        assert_eq!(
            texts(after_unfinished(&with_prompt, None)),
            ["prompt: go on"]
        );
        let bare = Marker {
            keep: Some(1),
            ..Marker::default()
        };
        assert_eq!(
            texts(after_unfinished(&bare, Some("Compaction failed: no model"))),
            ["Warning: 🗜 Not compacted: no model."]
        );
        assert!(after_unfinished(&bare, None).is_empty());
    }
}

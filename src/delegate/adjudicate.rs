//! Adjudication: when the child has ended, what it left on disk decides the outcome (a verified
//! `result.json` commits; a terminal record or nothing fails, or is cancelled when the parent
//! stopped it), which is recorded as `outcome.json` and the manifest's terminal state.

use super::artifacts::{
    self, ChildResult, ChildTerminal, ErrorRecord, Manifest, ManifestState, OUTCOME_FILE,
    OUTCOME_SCHEMA, Outcome, RESULT_FILE, TERMINAL_FILE, TaskDir,
};
use super::errors::DelegateErrorCode;
use crate::sys::{now_ms, write_new_atomic};

/// Adjudicates the ended child and records it: `outcome.json`, then the manifest's terminal
/// state. A failed write is logged; the outcome still reaches the agent.
pub(super) fn record_outcome(
    dir: &TaskDir,
    manifest: &Manifest,
    stopped: bool,
) -> (Outcome, Option<ChildResult>) {
    let (outcome, verified) = adjudicate(dir, manifest, stopped);
    let task_id = &manifest.task_id;
    if let Err(err) = write_new_atomic(
        &dir.file(OUTCOME_FILE),
        &artifacts::canonical_line(&outcome),
    ) {
        tracing::warn!("delegate {task_id}: cannot write outcome.json: {err}");
    }
    if let Err(err) = dir.transition(outcome.status, outcome.error.clone(), None) {
        tracing::warn!("delegate {task_id}: {err:#}");
    }
    (outcome, verified)
}

/// Reads what the child left and decides: a verified result commits; a terminal record or no
/// record fails (or is cancelled).
fn adjudicate(dir: &TaskDir, manifest: &Manifest, stopped: bool) -> (Outcome, Option<ChildResult>) {
    let mut outcome = Outcome {
        schema_version: OUTCOME_SCHEMA.to_string(),
        task_id: manifest.task_id.clone(),
        launch_nonce: manifest.launch_nonce.clone(),
        status: ManifestState::Failed,
        error: None,
        answer_bytes: None,
        answer_sha256: None,
        turns: 0,
        tool_calls: 0,
        usage: None,
        decided_at: now_ms(),
    };
    let record = |code: DelegateErrorCode, message: String| {
        Some(ErrorRecord {
            code: code.as_str().to_string(),
            message,
        })
    };
    if let Ok(bytes) = std::fs::read(dir.file(RESULT_FILE)) {
        match artifacts::verify_result(manifest, &bytes) {
            Ok(result) => {
                outcome.status = ManifestState::Committed;
                outcome.answer_bytes = Some(result.answer.byte_length);
                outcome.answer_sha256 = Some(result.answer.sha256.clone());
                outcome.turns = result.turns;
                outcome.tool_calls = result.tool_calls;
                outcome.usage = Some(result.usage);
                return (outcome, Some(result));
            }
            Err(err) => {
                outcome.error = record(err.code, err.message);
                return (outcome, None);
            }
        }
    }
    let terminal: Option<ChildTerminal> = artifacts::read_json(&dir.file(TERMINAL_FILE)).ok();
    match terminal {
        Some(terminal)
            if terminal.task_id == manifest.task_id
                && terminal.launch_nonce == manifest.launch_nonce =>
        {
            let code = DelegateErrorCode::parse(&terminal.code)
                .unwrap_or(DelegateErrorCode::ChildExitedWithoutCommit);
            outcome.status = if code == DelegateErrorCode::ChildCancelled {
                ManifestState::Cancelled
            } else {
                ManifestState::Failed
            };
            outcome.turns = terminal.turns;
            outcome.tool_calls = terminal.tool_calls;
            outcome.error = record(code, terminal.message);
        }
        _ if stopped => {
            outcome.status = ManifestState::Cancelled;
            outcome.error = record(
                DelegateErrorCode::ChildCancelled,
                "the delegate was stopped before it committed an answer".to_string(),
            );
        }
        _ => {
            outcome.error = record(
                DelegateErrorCode::ChildExitedWithoutCommit,
                "the child exited without committing result.json".to_string(),
            );
        }
    }
    (outcome, None)
}

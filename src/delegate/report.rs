//! What the model reads about a delegate: the launch receipt, the `bg_result` views (running,
//! committed inline or by reference, or the typed failure) and the
//! `<delegate-result-notification>`. Kept apart from the module's process and file work so the
//! wording — the part the model depends on — is pure and tested on its own: an answer is either
//! the exact verified text or a reference to it, never a shortened copy.

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};

use super::artifacts::{
    self, ChildResult, Delivery, Manifest, ManifestState, OUTCOME_FILE, Outcome, RESULT_FILE,
    RouteOrigin, TaskDir, decide_delivery,
};
use super::errors::{DelegateError, DelegateErrorCode};
use super::seed::Accounting;
use crate::bridge::{AgentId, Card, CardTint, ToolOutput, WakePromise};

/// The custom message type of a delegate's completion.
pub const NOTIFICATION_TYPE: &str = "delegate-result-notification";
/// Schemas of the tool details.
pub(crate) const LAUNCH_SCHEMA: &str = "unipi.delegate-launch.v1";
pub(crate) const RESULT_VIEW_SCHEMA: &str = "unipi.delegate-result-view.v1";

/// Everything a launch decided: what the supervisor follows and the receipt describes.
pub(super) struct Launch {
    pub(super) agent: AgentId,
    pub(super) name: String,
    pub(super) dir: TaskDir,
    pub(super) manifest: Manifest,
    pub(super) notify: bool,
    pub(super) trigger: bool,
    pub(super) started: Instant,
    /// The wake owed to `agent` (a notice that starts a turn), dropped with the launch once the
    /// notice went (held, never read: the drop is what counts).
    pub(super) _wake: Option<WakePromise>,
}

/// `bg_result` on a task that has ended: re-verify and deliver, or explain the failure.
pub(super) fn terminal_view(
    dir: &TaskDir,
    requested: Option<Delivery>,
) -> Result<ToolOutput, DelegateError> {
    let manifest = dir.read_manifest().map_err(|err| {
        DelegateError::new(DelegateErrorCode::ArtifactError, format!("{err:#}"))
            .with_artifacts(dir.dir.clone(), dir.preserved())
    })?;
    let outcome: Option<Outcome> = artifacts::read_json(&dir.file(OUTCOME_FILE)).ok();
    if let Some(Outcome {
        error: Some(error), ..
    }) = &outcome
    {
        let code = DelegateErrorCode::parse(&error.code)
            .unwrap_or(DelegateErrorCode::ChildExitedWithoutCommit);
        return Err(DelegateError::new(
            code,
            format!(
                "delegate {} did not commit an answer: {}",
                manifest.task_id, error.message
            ),
        )
        .with_artifacts(dir.dir.clone(), dir.preserved()));
    }
    let bytes = std::fs::read(dir.file(RESULT_FILE)).map_err(|err| {
        DelegateError::new(
            DelegateErrorCode::ChildExitedWithoutCommit,
            format!("delegate {} has no result.json: {err}", manifest.task_id),
        )
        .with_artifacts(dir.dir.clone(), dir.preserved())
    })?;
    let result = artifacts::verify_result(&manifest, &bytes)
        .map_err(|err| err.with_artifacts(dir.dir.clone(), dir.preserved()))?;
    let result_path = dir.file(RESULT_FILE);
    let cap = manifest.limits.inline_answer_bytes;
    let delivery = decide_delivery(result.answer.byte_length, requested, cap, &result_path)
        .map_err(|err| err.with_artifacts(dir.dir.clone(), dir.preserved()))?;
    let text = answer_text(&manifest, &result, delivery, requested, cap, &dir.dir);
    let details = json!({
        "schema_version": RESULT_VIEW_SCHEMA,
        "task_id": manifest.task_id,
        "state": "committed",
        "delivery": delivery.as_str(),
        "route": {"provider": manifest.route.provider, "model": manifest.route.model},
        "answer_bytes": result.answer.byte_length,
        "answer_sha256": result.answer.sha256,
        "turns": result.turns,
        "tool_calls": result.tool_calls,
        "artifact_dir": dir.dir.display().to_string(),
    });
    Ok(ToolOutput::text(text).with_details(details))
}

/// The verified answer as the model reads it, inline or by reference.
fn answer_text(
    manifest: &Manifest,
    result: &ChildResult,
    delivery: Delivery,
    requested: Option<Delivery>,
    cap: usize,
    dir: &Path,
) -> String {
    let mut text = format!(
        "Delegate {} completed on {}.\nAnswer: {} bytes, sha256 {} (verified).\nTurns: {} · tool \
         calls: {}\nArtifacts: {}",
        manifest.task_id,
        manifest.route.qualified(),
        result.answer.byte_length,
        result.answer.sha256,
        result.turns,
        result.tool_calls,
        dir.display()
    );
    match delivery {
        Delivery::Inline => {
            text.push_str("\n\n");
            text.push_str(&result.answer.text);
        }
        Delivery::Artifact => {
            let reason = if requested == Some(Delivery::Artifact) {
                "artifact delivery was requested explicitly".to_string()
            } else {
                format!(
                    "the answer is {} bytes, over the {cap}-byte inline cap",
                    result.answer.byte_length
                )
            };
            text.push_str(&format!(
                "\nDelivery: artifact ({reason}). The complete verified answer is the \
                 answer.text field of {}. It was not truncated.",
                dir.join(RESULT_FILE).display()
            ));
        }
    }
    text
}

pub(super) fn running_view(task_id: &str, dir: &TaskDir) -> ToolOutput {
    ToolOutput::text(format!(
        "Delegate {task_id} is still running. This is not an error. End this turn; the \
         <delegate-result-notification> will wake you (or call bg_result with wait: true)."
    ))
    .with_details(json!({
        "schema_version": RESULT_VIEW_SCHEMA,
        "task_id": task_id,
        "state": "running",
        "delivery": "none",
        "artifact_dir": dir.dir.display().to_string(),
    }))
}

/// The launch receipt.
pub(super) fn receipt(launch: &Launch, accounting: &Accounting) -> ToolOutput {
    let manifest = &launch.manifest;
    let origin = match manifest.route.origin {
        RouteOrigin::Explicit => "explicit",
        RouteOrigin::ParentCurrent => "parent_current",
    };
    let notification = match (launch.notify, launch.trigger) {
        (true, true) => "Terminal notification: enabled. It will start a follow-up turn.",
        (true, false) => "Terminal notification: enabled. It will not start a turn.",
        (false, _) => "Terminal notification: disabled.",
    };
    let omitted = if accounting.dropped_entries > 0 {
        format!(
            "; {} earlier entries ({} bytes) left out for the seed budget, recorded in the seed",
            accounting.dropped_entries, accounting.dropped_bytes
        )
    } else {
        String::new()
    };
    let text = [
        format!("Started delegate {} ({})", launch.name, manifest.task_id),
        format!(
            "Route pinned: {} ({origin}); it is never substituted.",
            manifest.route.qualified()
        ),
        format!("Artifacts: {}", launch.dir.dir.display()),
        format!(
            "Seed: {} bytes, sha256 {} ({} entries{omitted})",
            manifest.seed_bytes, manifest.seed_sha256, accounting.entries
        ),
        "Capability: inspect (read/search/list only)".to_string(),
        format!(
            "Limits: {} turns, {}s",
            manifest.limits.max_turns, manifest.limits.timeout_seconds
        ),
        notification.to_string(),
        format!(
            "Retrieve the verified answer with bg_result({{taskId:\"{}\"}}). Do not poll.",
            manifest.task_id
        ),
    ]
    .join("\n");
    let card = Card::new(
        format!(
            "● delegate {} · {} · started",
            launch.name,
            manifest.route.qualified()
        ),
        CardTint::Info,
    )
    .footer(manifest.task_id.clone());
    ToolOutput::text(text)
        .with_details(json!({
            "schema_version": LAUNCH_SCHEMA,
            "task_id": manifest.task_id,
            "name": launch.name,
            "route": manifest.route.to_json(),
            "artifact_dir": launch.dir.dir.display().to_string(),
            "seed_sha256": manifest.seed_sha256,
            "seed_utf8_bytes": manifest.seed_bytes,
            "notify_on_completion": launch.notify,
            "trigger_on_completion": launch.trigger,
        }))
        .with_card(&card)
}

/// The `<delegate-result-notification>` and its details. A committed answer follows the block
/// verbatim when it fits the inline cap; otherwise the block names the artifact.
pub(super) fn notification(
    launch: &Launch,
    outcome: &Outcome,
    verified: Option<&ChildResult>,
    cap: usize,
) -> (String, Value) {
    let manifest = &launch.manifest;
    let mut lines = vec![
        "<delegate-result-notification>".to_string(),
        format!("  <task-id>{}</task-id>", manifest.task_id),
        format!("  <name>{}</name>", escape_xml(&launch.name)),
        format!("  <status>{}</status>", outcome.status.as_str()),
        format!(
            "  <route>{}</route>",
            escape_xml(&manifest.route.qualified())
        ),
    ];
    let mut delivery = None;
    if let Some(result) = verified {
        delivery = Some(answer_lines(launch, result, cap, &mut lines));
    } else if let Some(error) = &outcome.error {
        lines.push(format!("  <error-code>{}</error-code>", error.code));
        lines.push(format!("  <error>{}</error>", escape_xml(&error.message)));
        lines.push(format!(
            "  <artifacts>{}</artifacts>",
            escape_xml(&launch.dir.dir.display().to_string())
        ));
        lines.push(
            "  <guidance>No partial answer is returned; nothing was truncated to look like \
             success.</guidance>"
                .to_string(),
        );
    }
    lines.push("</delegate-result-notification>".to_string());
    let mut content = lines.join("\n");
    if let (Some(Delivery::Inline), Some(result)) = (delivery, verified) {
        content.push_str("\n\n");
        content.push_str(&result.answer.text);
    }
    let card = notification_card(launch, outcome, verified);
    let details = json!({
        "schema_version": RESULT_VIEW_SCHEMA,
        "task_id": manifest.task_id,
        "name": launch.name,
        "state": outcome.status.as_str(),
        "delivery": delivery.map_or("none", Delivery::as_str),
        "error_code": outcome.error.as_ref().map(|e| e.code.clone()),
        "answer_bytes": outcome.answer_bytes,
        "answer_sha256": outcome.answer_sha256,
        "artifact_dir": launch.dir.dir.display().to_string(),
    });
    (content, card.attach(details))
}

/// The notification's lines about a committed answer, and how it is delivered (`None`
/// requested never errors: over the cap is an artifact reference).
fn answer_lines(
    launch: &Launch,
    result: &ChildResult,
    cap: usize,
    lines: &mut Vec<String>,
) -> Delivery {
    let result_path = launch.dir.file(RESULT_FILE);
    let chosen = decide_delivery(result.answer.byte_length, None, cap, &result_path)
        .unwrap_or(Delivery::Artifact);
    lines.push(format!(
        "  <answer-bytes>{}</answer-bytes>",
        result.answer.byte_length
    ));
    lines.push(format!(
        "  <answer-sha256>{}</answer-sha256>",
        result.answer.sha256
    ));
    lines.push(format!("  <delivery>{}</delivery>", chosen.as_str()));
    match chosen {
        Delivery::Inline => lines.push(
            "  <guidance>The verified answer follows this block, complete; bg_result is \
             not needed.</guidance>"
                .to_string(),
        ),
        Delivery::Artifact => {
            lines.push(format!(
                "  <artifact>{}</artifact>",
                escape_xml(&result_path.display().to_string())
            ));
            lines.push(format!(
                "  <guidance>The answer is {} bytes, over the {cap}-byte inline cap. It is \
                 complete and verified in the artifact (answer.text); read it there. It \
                 was not truncated.</guidance>",
                result.answer.byte_length
            ));
        }
    }
    chosen
}

/// The card the notification shows: the status, then the answer's first lines or the error.
fn notification_card(launch: &Launch, outcome: &Outcome, verified: Option<&ChildResult>) -> Card {
    let (icon, tint) = match outcome.status {
        ManifestState::Committed => ("✓", CardTint::Success),
        ManifestState::Cancelled => ("■", CardTint::Warning),
        _ => ("✗", CardTint::Error),
    };
    let manifest = &launch.manifest;
    let mut card = Card::new(
        format!(
            "{icon} delegate {} · {} · {}",
            launch.name,
            outcome.status.as_str(),
            manifest.route.qualified()
        ),
        tint,
    )
    .footer(manifest.task_id.clone());
    if let Some(result) = verified {
        for line in result
            .answer
            .text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .take(3)
        {
            card = card.line(line.chars().take(200).collect::<String>());
        }
    } else if let Some(error) = &outcome.error {
        card = card.line(format!("{}: {}", error.code, error.message));
    }
    card
}

fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;
    use crate::delegate::artifacts::OUTCOME_SCHEMA;
    use crate::helpers::events::Usage;

    #[test]
    fn notification_inlines_a_fitting_answer_verbatim_and_references_a_large_one() {
        let manifest = crate::delegate::artifacts::tests_support::manifest();
        let launch = Launch {
            agent: AgentId::main(),
            name: "ask".into(),
            dir: TaskDir::at("/w/d1"),
            manifest,
            notify: true,
            trigger: true,
            started: Instant::now(),
            _wake: None,
        };
        let result = |text: &str| ChildResult {
            schema_version: artifacts::RESULT_SCHEMA.into(),
            task_id: "d1".into(),
            launch_nonce: "n1".into(),
            seed_sha256: "s1".into(),
            route: artifacts::RoutePin {
                provider: "p".into(),
                model: "m".into(),
            },
            turns: 1,
            tool_calls: 0,
            usage: Usage::default(),
            answer: artifacts::Answer::new(text.to_string()),
        };
        let outcome = Outcome {
            schema_version: OUTCOME_SCHEMA.into(),
            task_id: "d1".into(),
            launch_nonce: "n1".into(),
            status: ManifestState::Committed,
            error: None,
            answer_bytes: None,
            answer_sha256: None,
            turns: 1,
            tool_calls: 0,
            usage: None,
            decided_at: 0,
        };
        let exact = "a <b> & c".to_string() + &"x".repeat(91);
        let (content, details) = notification(&launch, &outcome, Some(&result(&exact)), 100);
        assert!(
            content.ends_with(&format!("</delegate-result-notification>\n\n{exact}")),
            "{content}"
        );
        assert_eq!(details["delivery"], "inline");
        let over = exact.clone() + "y";
        let (content, details) = notification(&launch, &outcome, Some(&result(&over)), 100);
        assert!(!content.contains(&over), "{content}");
        assert!(
            content.contains("<artifact>/w/d1/result.json</artifact>"),
            "{content}"
        );
        assert!(
            content.contains("101 bytes, over the 100-byte inline cap"),
            "{content}"
        );
        assert_eq!(details["delivery"], "artifact");
    }
}

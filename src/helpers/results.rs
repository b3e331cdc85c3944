//! What the model reads about a run: the result of a finished run (its text, `details`, card
//! and `<helper-result-notification>`), a background run's receipt, a running run's progress
//! line, refusals and failures, and the truncation of long answers.

use std::time::Duration;

use serde_json::{Value, json};

use super::args::OutputLimit;
use super::events::{ToolUse, Usage};
use super::preflight::Refusal;
use super::runner::{Progress, RunOutcome, RunStatus};
use super::runs::RunInfo;
use crate::bridge::{Card, CardTint, ToolOutput};

/// `text` cut to `max_lines` lines and then `max_bytes` bytes (on a character boundary), and
/// whether anything was cut.
pub(crate) fn truncate_output(text: &str, max_bytes: usize, max_lines: usize) -> (String, bool) {
    let mut end = text.len();
    if let Some((index, _)) = text.match_indices('\n').nth(max_lines.saturating_sub(1)) {
        end = index;
    }
    let mut cut = end < text.len();
    if end > max_bytes {
        end = max_bytes;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        cut = true;
    }
    (text[..end].to_string(), cut)
}

/// A run's end as the tools report it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HelperResult {
    pub run_id: String,
    pub agent_type: String,
    pub description: String,
    pub status: RunStatus,
    pub text: String,
    pub truncated: bool,
    pub limit: OutputLimit,
    pub tool_uses: Vec<ToolUse>,
    pub turns: u32,
    pub usage: Usage,
    pub duration: Duration,
    pub error: Option<String>,
    /// The acceptance gate's verdict when there was one: `Some(true)` accepted.
    pub accepted: Option<bool>,
}

impl HelperResult {
    pub(super) fn from_outcome(run: &RunInfo, outcome: RunOutcome, duration: Duration) -> Self {
        let (text, truncated) = truncate_output(
            &outcome.summary.final_text,
            run.limit.bytes,
            run.limit.lines,
        );
        Self {
            run_id: run.id.clone(),
            agent_type: run.agent_type.clone(),
            description: run.description.clone(),
            status: outcome.status,
            text,
            truncated,
            limit: run.limit,
            tool_uses: outcome.summary.tool_uses,
            turns: outcome.summary.turns,
            usage: outcome.summary.usage,
            duration,
            error: outcome.error,
            accepted: None,
        }
    }

    pub(crate) fn ok(&self) -> bool {
        self.status == RunStatus::Completed && self.accepted != Some(false)
    }

    /// What the model reads.
    pub(crate) fn content(&self) -> String {
        let mut text = if self.ok() {
            self.text.clone()
        } else if self.accepted == Some(false) {
            format!(
                "Helper run {} finished but its answer was rejected: {}\n\nThe helper's \
                 answer:\n{}",
                self.run_id,
                self.error.as_deref().unwrap_or("the gate failed"),
                self.text
            )
        } else {
            format!(
                "Helper run {} {}: {}",
                self.run_id,
                self.status.as_str(),
                self.error.as_deref().unwrap_or("no reason recorded")
            )
        };
        if self.truncated {
            text.push_str(&format!(
                "\n\n[output truncated to {} lines / {} bytes; the full answer is in the run's \
                 output.txt]",
                self.limit.lines, self.limit.bytes
            ));
        }
        text
    }

    /// `details` for renderers and state, with a card.
    pub(crate) fn details(&self) -> Value {
        let tool_uses: Vec<Value> = self
            .tool_uses
            .iter()
            .map(|tool| json!({"name": tool.name, "args": tool.args, "isError": tool.is_error}))
            .collect();
        let details = json!({
            "status": if self.ok() { "completed" } else { "error" },
            "runStatus": self.status.as_str(),
            "reason": self.error,
            "runId": self.run_id,
            "type": self.agent_type,
            "description": self.description,
            "toolUses": tool_uses,
            "toolUseCount": self.tool_uses.len(),
            "turns": self.turns,
            "durationMs": duration_ms(self.duration),
            "usage": usage_json(&self.usage),
            "truncated": self.truncated,
            "accepted": self.accepted,
        });
        self.card().attach(details)
    }

    /// `✓ helper explore · <description> · 2 tools · 3s`, with the answer's first lines.
    pub(crate) fn card(&self) -> Card {
        let (icon, tint) = match self.status {
            _ if self.accepted == Some(false) => ("✗", CardTint::Error),
            RunStatus::Completed => ("✓", CardTint::Success),
            RunStatus::Queued | RunStatus::Running => ("●", CardTint::Info),
            _ => ("✗", CardTint::Error),
        };
        let mut title = format!(
            "{icon} helper {} · {} · {} tools · {:.1}s",
            self.agent_type,
            self.description,
            self.tool_uses.len(),
            self.duration.as_secs_f64()
        );
        if self.usage.total > 0 {
            title.push_str(&format!(" · {}", spend(&self.usage)));
        }
        let mut card = Card::new(title, tint);
        for line in self
            .text
            .lines()
            .filter(|line| !line.trim().is_empty())
            .take(3)
        {
            card = card.line(line.chars().take(200).collect::<String>());
        }
        let footer = match &self.error {
            Some(error) if !self.ok() => {
                let first = error.lines().next().unwrap_or_default();
                format!("{} · {first}", self.run_id)
            }
            _ => self.run_id.clone(),
        };
        card.footer(footer)
    }

    pub(super) fn output(&self) -> ToolOutput {
        ToolOutput::text(self.content()).with_details(self.details())
    }

    /// The `<helper-result-notification>` block of a background run.
    pub(crate) fn notification_content(&self) -> String {
        let mut lines = vec![
            "<helper-result-notification>".to_string(),
            format!("  <run-id>{}</run-id>", self.run_id),
            format!("  <type>{}</type>", escape_xml(&self.agent_type)),
            format!(
                "  <description>{}</description>",
                escape_xml(&self.description)
            ),
            format!(
                "  <status>{}</status>",
                if self.accepted == Some(false) {
                    "rejected"
                } else {
                    self.status.as_str()
                }
            ),
        ];
        if let Some(error) = self.error.as_ref().filter(|_| !self.ok()) {
            lines.push(format!("  <error>{}</error>", escape_xml(error)));
        }
        lines.push(format!(
            "  <usage>{} turns, {} tool uses, {}</usage>",
            self.turns,
            self.tool_uses.len(),
            spend(&self.usage)
        ));
        lines.push(format!(
            "  <result>{}</result>",
            escape_xml(&self.content())
        ));
        lines.push(
            "  <guidance>This result is final; do not call get_helper_result for it.</guidance>"
                .to_string(),
        );
        lines.push("</helper-result-notification>".to_string());
        lines.join("\n")
    }
}

/// `12.3k tok · $0.0123`, in the footer's number formats.
pub fn spend(usage: &Usage) -> String {
    use unipi_widgets::footer::{format_cost, format_tokens};
    let tokens = format!("{} tok", format_tokens(usage.total));
    if usage.cost > 0.0 {
        format!("{tokens} · {}", format_cost(usage.cost))
    } else {
        tokens
    }
}

/// The answer to a background spawn: the run id, and that a notification follows.
pub(super) fn background_output(info: &RunInfo) -> ToolOutput {
    let card = Card::new(
        format!(
            "● helper {} · {} · started",
            info.agent_type, info.description
        ),
        CardTint::Info,
    )
    .footer(info.id.clone());
    ToolOutput::text(format!(
        "Helper run {} started in the background ({}). A <helper-result-notification> \
         arrives when it ends; continue with other work meanwhile.",
        info.id, info.agent_type
    ))
    .with_details(json!({
        "status": "running",
        "runId": info.id,
        "type": info.agent_type,
        "description": info.description,
        "background": true,
    }))
    .with_card(&card)
}

/// One streaming update of a foreground run.
pub(super) fn progress_update(
    info: &RunInfo,
    progress: &Progress,
    elapsed: Duration,
) -> ToolOutput {
    let mut line = format!(
        "helper {} · {} · turn {} · {} tools · {:.0}s",
        info.agent_type,
        info.description,
        progress.turns,
        progress.tool_uses,
        elapsed.as_secs_f64()
    );
    if progress.usage.total > 0 {
        line.push_str(&format!(" · {}", spend(&progress.usage)));
    }
    if let Some(tool) = &progress.last_tool {
        line.push_str(&format!(" · {tool}"));
    }
    ToolOutput::text(line.clone()).with_details(json!({
        "status": "running",
        "runId": info.id,
        "turns": progress.turns,
        "toolUseCount": progress.tool_uses,
        "lastTool": progress.last_tool,
        "usage": usage_json(&progress.usage),
        "card": Card::new(format!("● {line}"), CardTint::Info),
    }))
}

pub(super) fn refusal_output(refusal: &Refusal) -> ToolOutput {
    ToolOutput::text(format!("spawn_helper refused: {refusal}"))
        .with_details(json!({"status": "error", "reason": refusal.to_string()}))
        .with_card(&Card::new("✗ helper refused", CardTint::Error).line(refusal.to_string()))
}

pub(super) fn error_output(reason: &str, run_id: &str) -> ToolOutput {
    ToolOutput::text(format!("spawn_helper failed: {reason}"))
        .with_details(json!({"status": "error", "reason": reason, "runId": run_id}))
        .with_card(&Card::new("✗ helper failed", CardTint::Error).line(reason))
}

pub(super) fn usage_json(usage: &Usage) -> Value {
    json!({
        "input": usage.input,
        "output": usage.output,
        "cacheRead": usage.cache_read,
        "cacheWrite": usage.cache_write,
        "total": usage.total,
        "cost": usage.cost,
    })
}

pub(super) fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

pub(super) fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

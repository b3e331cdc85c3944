//! The completion notification: the `<background-task-notification>` block the model reads and
//! the details the card renders, as an [`AgentNotice`] for the [`NoticeSink`] the app attaches
//! (the bridge host; tests attach a channel).

use std::sync::Arc;

use serde_json::{Value, json};

use super::model::{TaskInfo, TaskStatus, format_duration, truncate_chars};
use crate::bridge::{AgentId, AgentNotice, Card, CardTint, NoticeSink};

/// The custom message type of the notification (declared by the module so Pi renders a card).
pub const NOTIFICATION_TYPE: &str = "background-task-notification";

/// What the model is told to do with a notification.
pub(crate) const NOTIFICATION_GUIDANCE: &str = "Terminal state and output metadata are durable. Do not \
     call bg_status to reconfirm; use bg_logs only if output is needed.";

pub(crate) type SharedSink = Arc<dyn NoticeSink>;

/// The notification for a finished task (its status is terminal), quoting `last_lines`: the
/// output as the workbench captured it, never a re-read of the file.
pub(crate) fn build_notice(task: &TaskInfo, last_lines: &[String]) -> AgentNotice {
    AgentNotice {
        agent: AgentId::new(task.agent.clone()),
        id: task.id.clone(),
        custom_type: NOTIFICATION_TYPE.to_owned(),
        content: notification_content(task, last_lines),
        details: notification_details(task, last_lines),
        trigger_turn: task.trigger_on_completion,
    }
}

/// The `<background-task-notification>` block; a blank line precedes the exit code and the
/// error, as in the reference.
pub fn notification_content(task: &TaskInfo, last_lines: &[String]) -> String {
    let status = task.status.as_str();
    let exit = task
        .exit_code
        .map_or_else(|| "null".to_string(), |code| code.to_string());
    let mut lines = vec![
        "<background-task-notification>".to_string(),
        format!("  <task-id>{}</task-id>", task.id),
        format!("  <task-name>{}</task-name>", escape_xml(&task.name)),
        format!("  <status>{status}</status>"),
        format!("\n  <exit-code>{exit}</exit-code>"),
    ];
    if let Some(error) = &task.error {
        lines.push(format!("\n  <error>{}</error>", escape_xml(error)));
    }
    lines.push(format!(
        "  <output-file>{}</output-file>",
        escape_xml(&task.output_path)
    ));
    let mut summary = format!("Background task {} {status}", json!(task.name));
    if !last_lines.is_empty() {
        summary.push_str(&format!("; last output:\n{}", last_lines.join("\n")));
    }
    lines.push(format!("  <summary>{}</summary>", escape_xml(&summary)));
    lines.push(format!(
        "  <guidance>{}</guidance>",
        escape_xml(NOTIFICATION_GUIDANCE)
    ));
    lines.push("</background-task-notification>".to_string());
    lines.join("\n")
}

/// The card's fields: the snapshot plus duration, whether the agent is woken, last lines, and
/// the rendered [`completion_card`] as `card`.
pub(crate) fn notification_details(task: &TaskInfo, last_lines: &[String]) -> Value {
    let runtime = runtime_ms(task);
    json!({
        "card": completion_card(task, last_lines),
        "task": task,
        "status": task.status.as_str(),
        "name": task.name,
        "exitCode": task.exit_code,
        "duration": format_duration(runtime),
        "durationMs": runtime,
        "agentWoken": task.trigger_on_completion,
        "lastLines": last_lines,
    })
}

/// The completion card: `✓ bg done <name> · exit 0 · 25s · agent woken` and the last output
/// lines; failed and stopped tasks get the error tint, and the error (if any) as the footer.
pub(crate) fn completion_card(task: &TaskInfo, last_lines: &[String]) -> Card {
    let tint = match task.status {
        TaskStatus::Done => CardTint::Success,
        TaskStatus::Running => CardTint::Info,
        TaskStatus::Failed | TaskStatus::Stopped => CardTint::Error,
    };
    let mut title = format!(
        "{} bg {} {}",
        task.status.icon(),
        task.status.as_str(),
        task.name
    );
    match (&task.exit_code, &task.signal) {
        (Some(code), _) => title.push_str(&format!(" · exit {code}")),
        (None, Some(signal)) => title.push_str(&format!(" · {signal}")),
        (None, None) => {}
    }
    title.push_str(&format!(" · {}", format_duration(runtime_ms(task))));
    if task.trigger_on_completion {
        title.push_str(" · agent woken");
    }
    let mut card = Card::new(title, tint);
    for line in last_lines {
        card = card.line(truncate_chars(line, CARD_LINE_CHARS));
    }
    match &task.error {
        Some(error) => card.footer(error.clone()),
        None => card,
    }
}

/// Output lines are cut so one long line cannot fill the transcript.
const CARD_LINE_CHARS: usize = 200;

fn runtime_ms(task: &TaskInfo) -> u64 {
    task.end_time
        .unwrap_or(task.start_time)
        .saturating_sub(task.start_time)
}

/// Escapes `&`, `<` and `>` (the reference escapes only these).
pub(super) fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::model::{TaskOrigin, TaskStatus};

    fn finished(status: TaskStatus, exit_code: Option<i32>, error: Option<&str>) -> TaskInfo {
        TaskInfo {
            id: "bg-abc123".into(),
            name: "build <core> & test".into(),
            command: "make".into(),
            description: None,
            status,
            cwd: "/w".into(),
            output_path: "/tmp/bg-abc123.log".into(),
            start_time: 1_000,
            end_time: Some(26_000),
            pid: Some(7),
            leader_start: None,
            exit_code,
            signal: None,
            kill_kind: None,
            error: error.map(str::to_string),
            bytes_written: 10,
            last_line: None,
            timeout_seconds: None,
            is_agent: false,
            notify_on_completion: true,
            trigger_on_completion: false,
            notified: false,
            origin: TaskOrigin::User,
            agent: "main".into(),
        }
    }

    #[test]
    fn content_matches_the_reference_block() {
        let task = finished(TaskStatus::Failed, Some(2), Some("Exited with code 2"));
        let content = notification_content(&task, &["boom".to_string()]);
        assert_eq!(
            content,
            "<background-task-notification>\n  <task-id>bg-abc123</task-id>\n  \
             <task-name>build &lt;core&gt; &amp; test</task-name>\n  <status>failed</status>\n\n  \
             <exit-code>2</exit-code>\n\n  <error>Exited with code 2</error>\n  \
             <output-file>/tmp/bg-abc123.log</output-file>\n  \
             <summary>Background task \"build &lt;core&gt; &amp; test\" failed; last output:\nboom</summary>\n  \
             <guidance>Terminal state and output metadata are durable. Do not call bg_status to \
             reconfirm; use bg_logs only if output is needed.</guidance>\n\
             </background-task-notification>"
        );
        let done = notification_content(&finished(TaskStatus::Stopped, None, None), &[]);
        assert!(done.contains("<exit-code>null</exit-code>"), "{done}");
        assert!(!done.contains("<error>"), "{done}");
    }

    #[test]
    fn completion_card_table() {
        let woken = |mut task: TaskInfo| {
            task.trigger_on_completion = true;
            task
        };
        let signalled = {
            let mut task = finished(TaskStatus::Stopped, None, Some("Stopped by the user"));
            task.signal = Some("SIGTERM".into());
            task
        };
        let cases = [
            (
                woken(finished(TaskStatus::Done, Some(0), None)),
                "✓ bg done build <core> & test · exit 0 · 25s · agent woken",
                CardTint::Success,
                None,
            ),
            (
                finished(TaskStatus::Failed, Some(2), Some("Exited with code 2")),
                "✗ bg failed build <core> & test · exit 2 · 25s",
                CardTint::Error,
                Some("Exited with code 2"),
            ),
            (
                signalled,
                "■ bg stopped build <core> & test · SIGTERM · 25s",
                CardTint::Error,
                Some("Stopped by the user"),
            ),
        ];
        let last = ["one".to_string(), "two".into(), "three".into()];
        for (task, title, tint, footer) in cases {
            let card = completion_card(&task, &last);
            assert_eq!(card.title, title);
            assert_eq!(card.tint, tint, "{title}");
            assert_eq!(card.lines, last, "{title}");
            assert_eq!(card.footer.as_deref(), footer, "{title}");
        }
        let long = completion_card(
            &finished(TaskStatus::Done, Some(0), None),
            &["x".repeat(500)],
        );
        assert_eq!(long.lines[0].chars().count(), CARD_LINE_CHARS, "{long:?}");
    }

    #[test]
    fn details_carry_the_card_fields() {
        let task = finished(TaskStatus::Done, Some(0), None);
        let details = notification_details(&task, &["a".into(), "b".into()]);
        assert_eq!(details["duration"], "25s");
        assert_eq!(details["agentWoken"], false);
        assert_eq!(details["lastLines"], json!(["a", "b"]));
        assert_eq!(details["task"]["id"], "bg-abc123");
        assert_eq!(
            details["card"]["title"],
            "✓ bg done build <core> & test · exit 0 · 25s"
        );
        assert_eq!(details["card"]["tint"], "success");
        assert_eq!(details["card"]["lines"], json!(["a", "b"]));
        let notice = build_notice(&task, &[]);
        assert!(!notice.trigger_turn);
        assert_eq!(notice.agent, AgentId::main());
    }
}

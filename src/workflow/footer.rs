//! The workflow's footer segments: the step running (its command, its tool level, how long it
//! has run) and the board's progress (tasks done of all, and the documents). Built from memory
//! every frame.

use unipi_widgets::footer::{Align, Form, Icon, Preset, Role, Segment, format_duration, priority};

use super::docs::Doc;
use super::run::Active;

/// The config group of the step's segments (Unipi's `groups.workflow`).
const WORKFLOW: &str = "workflow";
/// The board's group (Unipi's `groups.kanboard`).
const BOARD: &str = "kanboard";

/// The segments for the step `active` (if one runs) and the board's `docs`, at `now_ms`.
pub(super) fn segments(active: Option<&Active>, docs: &[Doc], now_ms: u64) -> Vec<Segment> {
    let mut segments = Vec::new();
    if let Some(step) = active {
        let name = step.command.strip_prefix("unipi:").unwrap_or(&step.command);
        segments.push(
            Segment::new(
                "current_command",
                priority::MODULE_HIGH,
                Align::Left,
                Form::new(name, Role::Accent),
            )
            .in_group(WORKFLOW)
            .with_icon(Icon::Command)
            .described("The workflow step running (/unipi:<step>)"),
        );
        segments.push(
            Segment::new(
                "sandbox_level",
                priority::MODULE_LOW,
                Align::Left,
                Form::new(format!("{} tools", step.level.name()), Role::Muted),
            )
            .in_group(WORKFLOW)
            .with_icon(Icon::SandboxLevel)
            .described("The tools the running step allows"),
        );
        let secs = now_ms.saturating_sub(step.started_ms) / 1000;
        segments.push(
            Segment::new(
                "command_duration",
                priority::MODULE_LOW,
                Align::Right,
                Form::new(format_duration(secs), Role::Muted),
            )
            .in_group(WORKFLOW)
            .with_icon(Icon::CommandDuration)
            .described("How long the running step has run"),
        );
    }
    let (done, total) = docs.iter().fold((0, 0), |(d, t), doc| {
        let (dd, tt) = doc.progress();
        (d + dd, t + tt)
    });
    if let Some(percent) = (done * 100).checked_div(total) {
        segments.push(
            Segment::new(
                "tasks_done",
                priority::MODULE_LOW,
                Align::Right,
                Form::new(format!("kb {done}/{total} ({percent}%)"), Role::Text),
            )
            .in_group(BOARD)
            .with_icon(Icon::Board)
            .described("The board: tasks checked off of all in the workflow documents")
            .or(Form::new(format!("kb {done}/{total}"), Role::Text)),
        );
    }
    if !docs.is_empty() {
        let count = docs.len();
        segments.push(
            Segment::new(
                "docs_count",
                priority::MODULE_LOW,
                Align::Right,
                Form::new(format!("{count} docs"), Role::Muted),
            )
            .in_group(BOARD)
            .from_preset(Preset::Full)
            .with_icon(Icon::Board)
            .described("Workflow documents on the board"),
        );
    }
    segments
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::workflow::docs::{DocType, parse};
    use crate::workflow::levels::ToolLevel;
    use crate::workflow::run::Delivery;

    fn texts(segments: &[Segment]) -> Vec<(String, String)> {
        segments
            .iter()
            .map(|s| (format!("{}.{}", s.group, s.id), s.forms[0].text()))
            .collect()
    }

    #[test]
    fn the_running_step_and_the_boards_progress() {
        assert!(
            segments(None, &[], 0).is_empty(),
            "nothing runs, no documents"
        );
        let step = Active {
            command: "unipi:plan".into(),
            level: ToolLevel::WriteUnipi,
            restore: Vec::new(),
            started_ms: 1_000,
            delivery: Delivery::new("m".into()),
            errored: false,
        };
        let docs = [
            parse(
                DocType::Spec,
                Path::new("specs/p.md"),
                b"- [x] One\n- [ ] Two\n",
            ),
            parse(
                DocType::Spec,
                Path::new("specs/s.md"),
                b"- [x] Alpha\n- [x] Beta\n",
            ),
        ];
        let all = segments(Some(&step), &docs, 1_000 + 125_000);
        assert_eq!(
            texts(&all),
            [
                ("workflow.current_command".into(), "plan".into()),
                ("workflow.sandbox_level".into(), "write-unipi tools".into()),
                ("workflow.command_duration".into(), "2m".into()),
                ("kanboard.tasks_done".into(), "kb 3/4 (75%)".into()),
                ("kanboard.docs_count".into(), "2 docs".into()),
            ]
        );
        assert!(
            all.iter().all(|s| !s.help.is_empty()),
            "each says what it means"
        );
    }
}

//! The pending-wake line and the tasks footer segment: the two small signs that background tasks
//! are still running. The line sits above Pi's editor while the agent is idle but a task that will
//! wake it still runs — without it the turn looks over and users assume nothing more will happen.
//! The segment counts running tasks (and how many will wake the agent) in the footer.
//!
//! Both are text that must survive any width: the line offers shorter and shorter forms (dropping
//! the explanation, then the task's name) rather than cutting mid-word, and the segment hands the
//! footer its own fallback forms, so the footer's layout decides as for every other segment.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::dock::format_runtime;
use crate::footer::priority;
use crate::footer::{Align, Form, Role, Segment};
use crate::text::{truncate_end, width};
use crate::theme::Theme;

/// Braille spinner frames; the caller advances the index on its own timer.
pub const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// The footer segment's id and config group.
pub const SEGMENT_ID: &str = "running";
pub const SEGMENT_GROUP: &str = "tasks";

/// One task the agent waits on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PendingTask {
    pub name: String,
    pub runtime_secs: u64,
}

/// The pending-wake line's text for `tasks` (longest-running first) in at most `max_width`
/// columns; `None` when nothing is pending or not even the shortest form fits.
pub fn pending_text(tasks: &[PendingTask], frame: usize, max_width: usize) -> Option<String> {
    let first = tasks.first()?;
    let spinner = SPINNER[frame % SPINNER.len()];
    let count = tasks.len();
    let noun = if count == 1 { "task" } else { "tasks" };
    let head = format!("{spinner} waiting on {count} bg {noun}");
    let mut who = format!("{} {}", first.name, format_runtime(first.runtime_secs));
    if count > 1 {
        who.push_str(&format!(" +{} more", count - 1));
    }
    let forms = [
        format!("{head} · {who} — agent resumes automatically when done"),
        format!("{head} · {who} — agent resumes when done"),
        format!("{head} · {who}"),
    ];
    if let Some(form) = forms.into_iter().find(|form| width(form) <= max_width) {
        return Some(form);
    }
    // The name is what the user recognises: cut it before giving it up entirely.
    let room = max_width.saturating_sub(width(&head) + 3);
    if room >= 8 {
        return Some(format!("{head} · {}", truncate_end(&who, room)));
    }
    [head, format!("{spinner} {count} bg")]
        .into_iter()
        .find(|form| width(form) <= max_width)
}

/// Draw the pending-wake line into the first row of `area` (nothing when nothing is pending).
pub fn render(tasks: &[PendingTask], frame: usize, theme: &Theme, area: Rect, buf: &mut Buffer) {
    if area.is_empty() {
        return;
    }
    let Some(text) = pending_text(tasks, frame, usize::from(area.width)) else {
        return;
    };
    let line = Line::from(Span::styled(text, theme.status_working));
    buf.set_line(area.x, area.y, &line, area.width);
}

/// The footer segment for `running` tasks of which `waking` will wake the agent; `None` when
/// nothing runs. Forms: `bg 2 running · 1 wakes agent`, `bg 2 running ⏰1`, `bg 2`.
pub fn tasks_segment(running: usize, waking: usize) -> Option<Segment> {
    if running == 0 {
        return None;
    }
    let count = format!("bg {running}");
    let long = if waking > 0 {
        Form::new(format!("{count} running"), Role::Accent)
            .then(format!(" · {waking} wakes agent"), Role::Muted)
    } else {
        Form::new(format!("{count} running"), Role::Accent)
    };
    let mut segment = Segment::new(SEGMENT_ID, PRESENCE_PRIORITY, Align::Right, long)
        .in_group(SEGMENT_GROUP)
        .detail(DETAIL_PRIORITY);
    if waking > 0 {
        segment = segment.or(Form::new(format!("{count} running"), Role::Accent)
            .then(format!(" ⏰{waking}"), Role::Muted));
    }
    Some(segment.or(Form::new(count, Role::Accent)))
}

/// Running tasks are the module's most important fact: near the top of the module range.
const PRESENCE_PRIORITY: u8 = priority::MODULE_HIGH - 2;
/// The wake count is a detail: it yields to the workbench's cwd and git branch.
const DETAIL_PRIORITY: u8 = priority::MODULE_LOW + 5;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::footer::render_segments;
    use crate::test_support::render_to_string;

    fn make_tasks(count: usize) -> Vec<PendingTask> {
        (0..count)
            .map(|n| PendingTask {
                name: if n == 0 {
                    "cargo build".to_owned()
                } else {
                    format!("task {n}")
                },
                runtime_secs: 12,
            })
            .collect()
    }

    #[test]
    fn pending_forms_by_width() {
        let one = make_tasks(1);
        let three = make_tasks(3);
        let cases: [(&[PendingTask], usize, usize, Option<&str>); 10] = [
            (
                &one,
                0,
                100,
                Some(
                    "⠋ waiting on 1 bg task · cargo build 12s — agent resumes automatically when done",
                ),
            ),
            (
                &one,
                1,
                66,
                Some("⠙ waiting on 1 bg task · cargo build 12s — agent resumes when done"),
            ),
            (
                &one,
                10,
                40,
                Some("⠋ waiting on 1 bg task · cargo build 12s"),
            ),
            (&one, 0, 34, Some("⠋ waiting on 1 bg task · cargo bu…")),
            (&one, 0, 24, Some("⠋ waiting on 1 bg task")),
            (&one, 0, 10, Some("⠋ 1 bg")),
            (&one, 0, 3, None),
            (
                &three,
                2,
                100,
                Some(
                    "⠹ waiting on 3 bg tasks · cargo build 12s +2 more — agent resumes automatically when done",
                ),
            ),
            (
                &three,
                0,
                50,
                Some("⠋ waiting on 3 bg tasks · cargo build 12s +2 more"),
            ),
            (&[], 0, 100, None),
        ];
        for (tasks, frame, max, want) in cases {
            let got = pending_text(tasks, frame, max);
            assert_eq!(got.as_deref(), want, "{} tasks, width {max}", tasks.len());
            assert!(got.is_none_or(|text| width(&text) <= max));
        }
    }

    #[test]
    fn pending_line_at_several_widths() {
        let tasks = make_tasks(2);
        let text: Vec<String> = [90, 50, 30, 12]
            .into_iter()
            .map(|w| {
                render_to_string(w, 1, |area, buf| {
                    render(&tasks, 3, &Theme::plain(), area, buf)
                })
            })
            .collect();
        crate::assert_ui_snapshot!("pending_line_widths", text.join("\n"));
    }

    #[test]
    fn tasks_segment_forms() {
        assert_eq!(tasks_segment(0, 0), None);
        let forms =
            |segment: Segment| -> Vec<String> { segment.forms.iter().map(Form::text).collect() };
        assert_eq!(
            tasks_segment(2, 1).map(forms),
            Some(vec![
                "bg 2 running · 1 wakes agent".to_owned(),
                "bg 2 running ⏰1".to_owned(),
                "bg 2".to_owned()
            ])
        );
        assert_eq!(
            tasks_segment(1, 0).map(forms),
            Some(vec!["bg 1 running".to_owned(), "bg 1".to_owned()])
        );
        let segment = tasks_segment(1, 1);
        assert!(segment.is_some_and(|s| {
            (priority::MODULE_LOW..=priority::MODULE_HIGH).contains(&s.priority)
                && (priority::MODULE_LOW..=priority::MODULE_HIGH).contains(&s.detail_priority)
                && s.group == SEGMENT_GROUP
        }));
    }

    #[test]
    fn tasks_segment_in_the_footer() {
        let segments: Vec<Segment> = tasks_segment(3, 2).into_iter().collect();
        let text: Vec<String> = [40, 20, 8]
            .into_iter()
            .map(|w| {
                render_to_string(w, 1, |area, buf| {
                    render_segments(&segments, &Theme::plain(), area, buf);
                })
            })
            .collect();
        crate::assert_ui_snapshot!("footer_tasks_segment", text.join("\n"));
    }
}

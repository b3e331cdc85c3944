//! What each footer segment means (`/unipi:footer-help`): the workbench's own segments from a
//! table here, the modules' from the description their segment carries
//! ([`super::Segment::described`]).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::settings::{FooterSettings, Preset};
use super::{CORE_GROUP, Segment};
use crate::overlay::{BORDER, centred_box, render_scrolled, text_width};
use crate::text::{width, wrap};
use crate::theme::Theme;

/// The guide's title.
pub const HELP_TITLE: &str = "Footer segments";
/// The widest the guide's box gets.
const MAX_WIDTH: u16 = 100;
/// Columns of the segment id column.
const ID_COLUMN: usize = 20;

/// The `/unipi:footer-help` overlay: the preset in force and every segment, what it means, and
/// whether it shows now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FooterHelp {
    /// The first line: the preset, icons and separator in force.
    pub summary: String,
    pub lines: Vec<SegmentHelp>,
    pub scroll: usize,
}

impl FooterHelp {
    /// The guide's rows at `text_width` columns.
    pub fn content_lines(&self, text_width: usize, theme: &Theme) -> Vec<Line<'static>> {
        let legend = "● shown now  ○ not in this preset or toggled off (/unipi:footer-settings)";
        let mut rows: Vec<Line<'static>> = [self.summary.as_str(), legend]
            .into_iter()
            .flat_map(|text| wrap(text, text_width.max(10)))
            .map(|text| Line::from(Span::styled(text, theme.muted)))
            .collect();
        let mut group = "";
        let indent = 4 + ID_COLUMN;
        for line in &self.lines {
            if line.group != group {
                group = &line.group;
                rows.push(Line::default());
                rows.push(Line::from(Span::styled(group.to_owned(), theme.accent)));
            }
            let mark = if line.shown { "● " } else { "○ " };
            let id = format!("{:<ID_COLUMN$}", line.id);
            let description = if line.description.is_empty() {
                format!("(from the {} preset)", line.from.name())
            } else {
                line.description.clone()
            };
            let room = text_width.saturating_sub(indent).max(10);
            for (i, part) in wrap(&description, room).into_iter().enumerate() {
                rows.push(if i == 0 {
                    Line::from(vec![
                        Span::raw("  "),
                        Span::styled(
                            mark,
                            if line.shown {
                                theme.accent
                            } else {
                                theme.muted
                            },
                        ),
                        Span::raw(id.clone()),
                        Span::raw(part),
                    ])
                } else {
                    Line::from(format!("{:indent$}{part}", ""))
                });
            }
        }
        rows
    }

    fn area(&self, screen: Rect) -> Rect {
        let widest = self
            .content_lines(usize::from(MAX_WIDTH), &Theme::plain())
            .iter()
            .map(Line::width)
            .max()
            .unwrap_or(0)
            .max(width(HELP_TITLE) + 4);
        let max = u16::try_from(widest + 4)
            .unwrap_or(MAX_WIDTH)
            .min(MAX_WIDTH);
        centred_box(screen, max, |w| {
            self.content_lines(text_width(w), &Theme::plain()).len()
        })
    }

    /// The largest useful scroll on `screen`.
    pub fn max_scroll(&self, screen: Rect) -> usize {
        let area = self.area(screen);
        let visible = usize::from(area.height).saturating_sub(2 * BORDER);
        self.content_lines(text_width(area.width), &Theme::plain())
            .len()
            .saturating_sub(visible)
    }

    /// Draws the guide centred on `screen`, with `hint` on its border.
    pub fn render(&self, hint: &str, theme: &Theme, screen: Rect, buf: &mut Buffer) {
        let area = self.area(screen);
        let lines = self.content_lines(text_width(area.width), theme);
        render_scrolled(HELP_TITLE, hint, &lines, self.scroll, theme, area, buf);
    }
}

/// One line of the guide.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentHelp {
    pub group: String,
    pub id: String,
    /// The leanest preset that shows it.
    pub from: Preset,
    pub description: String,
    /// Whether the user's preset and toggles show it now.
    pub shown: bool,
}

/// The workbench's own segments: (id, leanest preset, description).
const CORE: &[(&str, Preset, &str)] = &[
    (
        "state",
        Preset::Minimal,
        "What Pi does: starting, idle, working (and on what), blocked on a dialog, an error, exited",
    ),
    (
        "model",
        Preset::Minimal,
        "The model in use, with its thinking level when the toggle allows",
    ),
    (
        "thinking_level",
        Preset::Default,
        "The thinking level after the model's name",
    ),
    (
        "api_state",
        Preset::Default,
        "The model API: waiting for an answer, streaming, ok, or the last error",
    ),
    ("tool_count", Preset::Default, "Tools Pi ran this session"),
    ("session", Preset::Default, "The session's name (/name)"),
    (
        "cwd",
        Preset::Default,
        "The working directory, shortened a folder at a time",
    ),
    ("git", Preset::Minimal, "The git branch checked out"),
    ("hostname", Preset::Full, "This machine's name"),
    (
        "scrollback",
        Preset::Minimal,
        "How far back you browse the pane's history",
    ),
    (
        "tps",
        Preset::Compact,
        "Output tokens per second of the last answer (colour by speed: red slow, yellow moderate, green fast) and the session's average",
    ),
    (
        "context_pct",
        Preset::Minimal,
        "Context window used; yellow and red past the thresholds; (auto) when Pi compacts by itself",
    ),
    (
        "tokens",
        Preset::Default,
        "Tokens sent ↑ and received ↓ this session",
    ),
    ("tokens_in", Preset::Full, "Tokens sent this session"),
    ("tokens_out", Preset::Full, "Tokens received this session"),
    ("cost", Preset::Compact, "What the session has cost"),
    (
        "extension_statuses",
        Preset::Default,
        "Other extensions' statuses",
    ),
    ("clock", Preset::Compact, "The local time"),
    ("duration", Preset::Compact, "How long the session has run"),
    (
        "hint",
        Preset::Minimal,
        "The help key, or a passing notice in its place",
    ),
];

/// The guide for `settings`, with the modules' `segments`.
pub fn footer_help(settings: &FooterSettings, segments: &[Segment]) -> FooterHelp {
    let separator = settings.separator().trim();
    FooterHelp {
        summary: format!(
            "Preset {} · icons {} · separator {} · second row {}",
            settings.preset.name(),
            settings.icons().name(),
            if separator.is_empty() {
                "space"
            } else {
                separator
            },
            if settings.overflow_row() { "on" } else { "off" },
        ),
        lines: segment_help(settings, segments),
        scroll: 0,
    }
}

/// The guide: the workbench's segments, then the modules' `segments` (one line per id), each
/// saying whether `settings` show it now.
pub fn segment_help(settings: &FooterSettings, segments: &[Segment]) -> Vec<SegmentHelp> {
    let core = CORE.iter().map(|(id, from, description)| SegmentHelp {
        group: CORE_GROUP.to_owned(),
        id: (*id).to_owned(),
        from: *from,
        description: (*description).to_owned(),
        shown: settings.shows_id(CORE_GROUP, id, *from),
    });
    let mut lines: Vec<SegmentHelp> = core.collect();
    for segment in segments.iter().filter(|s| s.group != CORE_GROUP) {
        if lines
            .iter()
            .any(|line| line.group == segment.group && line.id == segment.id)
        {
            continue;
        }
        lines.push(SegmentHelp {
            group: segment.group.clone(),
            id: segment.id.clone(),
            from: segment.min_preset,
            description: segment.help.to_owned(),
            shown: settings.shows(segment),
        });
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::footer::{Align, Form, Role};

    #[test]
    fn the_guide_says_what_the_preset_shows_and_lists_module_segments_once() {
        let settings = FooterSettings {
            preset: Preset::Minimal,
            ..FooterSettings::default()
        };
        let step = Segment::new(
            "current_command",
            30,
            Align::Left,
            Form::new("x", Role::Text),
        )
        .in_group("workflow")
        .described("The workflow step running");
        let lines = segment_help(&settings, &[step.clone(), step]);
        let shown = |id: &str| lines.iter().find(|l| l.id == id).map(|l| l.shown);
        assert_eq!(shown("model"), Some(true));
        assert_eq!(shown("tps"), Some(false));
        assert_eq!(shown("current_command"), Some(false));
        assert_eq!(lines.iter().filter(|l| l.group == "workflow").count(), 1);
        assert_eq!(
            lines.last().map(|l| l.description.as_str()),
            Some("The workflow step running")
        );
    }

    #[test]
    fn the_guide_at_80x24_and_120x40() {
        let step = Segment::new(
            "current_command",
            30,
            Align::Left,
            Form::new("x", Role::Text),
        )
        .in_group("workflow")
        .described("The workflow step running: its command, tool level and time");
        let help = footer_help(&FooterSettings::default(), &[step]);
        for (w, h) in [(80, 24), (120, 40)] {
            let text = crate::test_support::render_to_string(w, h, |area, buf| {
                help.render("Esc close", &Theme::plain(), area, buf);
            });
            crate::assert_ui_snapshot!(format!("footer_help_{w}x{h}"), text);
        }
        assert!(help.max_scroll(Rect::new(0, 0, 80, 24)) > 0);
        assert_eq!(help.max_scroll(Rect::new(0, 0, 200, 200)), 0);
    }
}

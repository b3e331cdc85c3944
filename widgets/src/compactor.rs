//! The compactor's two faces in the workbench: the footer segment (`🗜 2 · 41.2k saved`: this
//! session's compactions and the tokens they took out of the context; `🗜 indexing 12/40
//! sessions` while the index is rebuilt from Pi's session files) and the overlay that shows
//! the last compaction — its statistics, the summary Pi now carries instead of the history, and
//! the manifest of what was summarized away. Both are pure renders of plain models the app builds
//! from the compactor module, so every state a user can see is a snapshot.
//!
//! The overlay wraps long summary lines at the box width (a summary is prose and paths; cutting
//! them would hide exactly what a user opens the view to check) and scrolls like the info
//! overlay: `scroll` is the first content row, the frame shows the position when it does not fit.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

use crate::footer::priority;
use crate::footer::{Align, Form, Role, Segment, format_tokens};
use crate::overlay::{BORDER, PADDING, text_width};
use crate::text::{truncate_end, width};
use crate::theme::Theme;

/// The footer segment's id and config group.
pub const SEGMENT_ID: &str = "compactions";
pub const SEGMENT_GROUP: &str = "compactor";
/// The compactor's glyph (Unipi's).
pub const GLYPH: &str = "🗜";
/// The overlay's title.
pub const TITLE: &str = "Last compaction";

/// What the footer shows: this session's compactions and the tokens they saved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactorTally {
    pub compactions: u64,
    pub tokens_saved: u64,
}

/// A rebuild of the recall index from Pi's session files: `done` of `total` files read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Indexing {
    pub done: usize,
    pub total: usize,
}

/// The footer segment: `🗜 2 · 41.2k saved`, narrowing to `🗜 2`; nothing before the first
/// compaction of the session. While the index is rebuilt, its progress instead: `🗜 indexing
/// 12/40 sessions`, narrowing to `🗜 12/40`.
pub fn compactor_segment(tally: &CompactorTally, indexing: Option<Indexing>) -> Option<Segment> {
    if let Some(Indexing { done, total }) = indexing {
        let count = format!("{done}/{total}");
        let long = Form::new(format!("{GLYPH} indexing "), Role::Muted)
            .then(count.clone(), Role::Text)
            .then(" sessions", Role::Muted);
        return Some(
            Segment::new(SEGMENT_ID, PRIORITY, Align::Right, long)
                .in_group(SEGMENT_GROUP)
                .or(Form::new(format!("{GLYPH} "), Role::Muted).then(count, Role::Text)),
        );
    }
    if tally.compactions == 0 {
        return None;
    }
    let head = format!("{GLYPH} {}", tally.compactions);
    let long = Form::new(head.clone(), Role::Muted).then(
        format!(" · {} saved", format_tokens(tally.tokens_saved)),
        Role::Muted,
    );
    Some(
        Segment::new(SEGMENT_ID, PRIORITY, Align::Right, long)
            .in_group(SEGMENT_GROUP)
            .or(Form::new(head, Role::Muted)),
    )
}

/// A record, not an activity: below running tasks and helpers, above the host name.
const PRIORITY: u8 = priority::MODULE_LOW + 5;

/// One summarized-away entry, as the manifest lists it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManifestRow {
    pub id: String,
    pub role: String,
    pub chars: usize,
    pub tool: Option<String>,
}

/// What the last-compaction overlay shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactionModel {
    /// When and why, e.g. `2026-11-30 10:12 UTC · manual`.
    pub when: String,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub messages_summarized: u64,
    pub blocks_kept: u64,
    pub blocks_dropped: u64,
    pub duration_ms: u64,
    pub first_kept_entry_id: String,
    pub summary: String,
    pub manifest: Vec<ManifestRow>,
    /// First content row shown.
    pub scroll: usize,
}

/// Widest the box gets; the summary wraps inside it.
const MAX_TEXT_WIDTH: usize = 96;
/// Indent of rows inside a section.
const INDENT: &str = "  ";

impl CompactionModel {
    /// The content rows for text `text_width` columns wide.
    pub fn lines(&self, text_width: usize, theme: &Theme) -> Vec<Line<'static>> {
        let text_width = text_width.max(8);
        let mut lines = Vec::new();
        let heading =
            |text: &str| Line::styled(truncate_end(text, text_width), theme.overlay_title);
        let plain = |text: String| Line::styled(text, theme.overlay_text);
        let saved = self.tokens_before.saturating_sub(self.tokens_after);
        for row in [
            self.when.clone(),
            format!(
                "{} → {} tokens ({} saved) · {} ms",
                format_tokens(self.tokens_before),
                format_tokens(self.tokens_after),
                format_tokens(saved),
                self.duration_ms
            ),
            format!(
                "{} messages summarized · {} blocks kept, {} dropped",
                self.messages_summarized, self.blocks_kept, self.blocks_dropped
            ),
            format!("history kept from entry {}", self.first_kept_entry_id),
        ] {
            for piece in wrap(&row, text_width) {
                lines.push(plain(piece));
            }
        }
        lines.push(Line::default());
        lines.push(heading("Summary"));
        for source in self.summary.lines() {
            for piece in wrap(source, text_width.saturating_sub(INDENT.len())) {
                lines.push(plain(format!("{INDENT}{piece}")));
            }
        }
        lines.push(Line::default());
        lines.push(heading(&format!(
            "Summarized away ({} entries)",
            self.manifest.len()
        )));
        if self.manifest.is_empty() {
            lines.push(Line::styled(format!("{INDENT}(none)"), theme.muted));
        }
        for row in &self.manifest {
            let tool = row
                .tool
                .as_deref()
                .map(|tool| format!(" · {tool}"))
                .unwrap_or_default();
            let text = format!(
                "{INDENT}{:<10} {:<11} {:>7} chars{tool}",
                row.id, row.role, row.chars
            );
            lines.push(plain(truncate_end(&text, text_width)));
        }
        lines
    }

    /// The box on `screen`: centred, as wide as the text wants (up to a limit), as tall as the
    /// content or the screen.
    pub fn area(&self, screen: Rect) -> Rect {
        let frame = 2 * (BORDER + PADDING);
        let want = self
            .lines(MAX_TEXT_WIDTH, &Theme::plain())
            .iter()
            .map(Line::width)
            .max()
            .unwrap_or(0)
            .max(width(TITLE) + 2)
            .min(MAX_TEXT_WIDTH)
            + frame;
        let w = clamp_u16(want).min(screen.width);
        let rows = self.lines(text_width(w), &Theme::plain()).len() + 2 * BORDER;
        let h = clamp_u16(rows).min(screen.height);
        Rect {
            x: screen.x + (screen.width - w) / 2,
            y: screen.y + (screen.height - h) / 2,
            width: w,
            height: h,
        }
    }

    /// The largest useful `scroll` on `screen`.
    pub fn max_scroll(&self, screen: Rect) -> usize {
        let area = self.area(screen);
        let visible = usize::from(area.height).saturating_sub(2 * BORDER);
        self.lines(text_width(area.width), &Theme::plain())
            .len()
            .saturating_sub(visible)
    }
}

/// Draws the overlay centred on `screen`.
pub fn render_compaction(
    model: &CompactionModel,
    hint: &str,
    theme: &Theme,
    screen: Rect,
    buf: &mut Buffer,
) {
    let area = model.area(screen);
    let lines = model.lines(text_width(area.width), theme);
    crate::overlay::render_scrolled(TITLE, hint, &lines, model.scroll, theme, area, buf);
}

fn clamp_u16(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// `text` in rows of at most `max` columns, broken at spaces where a row has one, else inside
/// the word. An empty text is one empty row (a blank summary line stays blank).
fn wrap(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut rows = Vec::new();
    let mut rest = text.trim_end();
    while width(rest) > max {
        let mut cut = 0;
        let mut used = 0;
        let mut last_space = None;
        for (index, ch) in rest.char_indices() {
            let w = width(ch.encode_utf8(&mut [0; 4]));
            if used + w > max {
                break;
            }
            used += w;
            cut = index + ch.len_utf8();
            if ch == ' ' {
                last_space = Some(index);
            }
        }
        let ends_at_word = rest[cut..].starts_with(' ');
        let cut = match last_space {
            _ if ends_at_word => cut,
            Some(space) if space > 0 => space,
            _ => cut.max(rest.chars().next().map_or(1, char::len_utf8)),
        };
        rows.push(rest[..cut].trim_end().to_owned());
        rest = rest[cut..].trim_start();
    }
    rows.push(rest.to_owned());
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::footer::render_segments;
    use crate::test_support::render_to_string;

    fn segment_rows(tally: &CompactorTally, indexing: Option<Indexing>, widths: &[u16]) -> String {
        let segments: Vec<Segment> = compactor_segment(tally, indexing).into_iter().collect();
        widths
            .iter()
            .map(|&w| {
                let row = render_to_string(w, 1, |area, buf| {
                    render_segments(&segments, &Theme::plain(), area, buf);
                });
                format!("{w:>3} {}", row.trim_end())
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn footer_segment_hidden_before_the_first_compaction_then_narrows() {
        assert_eq!(compactor_segment(&CompactorTally::default(), None), None);
        let tally = CompactorTally {
            compactions: 2,
            tokens_saved: 41_200,
        };
        let segment = compactor_segment(&tally, None).map(|s| (s.id, s.group));
        assert_eq!(
            segment,
            Some((SEGMENT_ID.to_owned(), SEGMENT_GROUP.to_owned()))
        );
        crate::assert_ui_snapshot!(
            "footer_compactor_segment",
            segment_rows(&tally, None, &[40, 12, 6])
        );
    }

    #[test]
    fn footer_segment_shows_indexing_progress_while_the_index_is_rebuilt() {
        let indexing = Some(Indexing {
            done: 12,
            total: 40,
        });
        for tally in [
            CompactorTally::default(),
            CompactorTally {
                compactions: 2,
                tokens_saved: 41_200,
            },
        ] {
            crate::assert_ui_snapshot!(
                "footer_compactor_segment_indexing",
                segment_rows(&tally, indexing, &[40, 12, 6])
            );
        }
    }

    fn make_model() -> CompactionModel {
        CompactionModel {
            when: "2026-11-30 10:12 UTC · manual".to_owned(),
            tokens_before: 52_300,
            tokens_after: 6_100,
            messages_summarized: 14,
            blocks_kept: 9,
            blocks_dropped: 31,
            duration_ms: 12,
            first_kept_entry_id: "a1b2c3d4".to_owned(),
            summary: "## Goals\n- Make the parser accept trailing commas in every list, including \
                      the nested ones in src/parse.rs\n\n## Files\n- src/parse.rs (edited)"
                .to_owned(),
            manifest: vec![
                ManifestRow {
                    id: "e1".to_owned(),
                    role: "user".to_owned(),
                    chars: 120,
                    tool: None,
                },
                ManifestRow {
                    id: "e2".to_owned(),
                    role: "toolResult".to_owned(),
                    chars: 48_000,
                    tool: Some("bash".to_owned()),
                },
            ],
            scroll: 0,
        }
    }

    #[test]
    fn overlay_shows_stats_summary_and_manifest() {
        let model = make_model();
        let text = render_to_string(70, 24, |area, buf| {
            render_compaction(&model, "Esc close", &Theme::plain(), area, buf);
        });
        crate::assert_ui_snapshot!("compaction_overlay", text);
    }

    #[test]
    fn overlay_scrolls_when_short() {
        let mut model = make_model();
        let screen = Rect::new(0, 0, 50, 10);
        let max = model.max_scroll(screen);
        assert!(max > 5, "max {max}");
        model.scroll = max;
        let text = render_to_string(50, 10, |area, buf| {
            render_compaction(&model, "Esc close", &Theme::plain(), area, buf);
        });
        assert!(text.contains("bash"), "{text}");
        assert!(!text.contains("manual"), "{text}");
        crate::assert_ui_snapshot!("compaction_overlay_scrolled_end", text);
    }

    #[test]
    fn wrap_breaks_at_spaces_and_inside_long_words() {
        let cases: [(&str, usize, &[&str]); 4] = [
            ("short", 10, &["short"]),
            ("one two three", 7, &["one two", "three"]),
            ("abcdefghij", 4, &["abcd", "efgh", "ij"]),
            ("", 5, &[""]),
        ];
        for (text, max, want) in cases {
            assert_eq!(wrap(text, max), want, "{text:?} at {max}");
        }
    }
}

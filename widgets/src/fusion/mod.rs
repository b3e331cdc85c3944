//! Model fusion in the workbench's own widgets: the picker (`picker`), the preset editor
//! (`presets`) and the footer segment, `⚭ big+small · saved $1.48`
//! — the pair, and what the sidekick saved this session — which says so in the warning colour
//! while the primary is on its fallback (`⚭ fallback other (4m)+small`).

pub mod picker;
pub mod presets;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;

use crate::footer::{Align, Form, Role, Segment, format_cost, priority};
use crate::text::{truncate_end, width};
use crate::theme::Theme;

/// A box for `text_width` columns of text (plus border and padding) and `height` rows, in the
/// middle of `screen` (which the caller checked it fits).
fn centred_box(screen: Rect, text_width: usize, height: usize) -> Rect {
    let (width, height) = ((text_width + 4) as u16, height as u16);
    Rect {
        x: screen.x + (screen.width - width) / 2,
        y: screen.y + (screen.height - height) / 2,
        width,
        height,
    }
}

/// The keys line `keys` (hints joined by ` · `, as the views' key tables make it) in rows of at
/// most `max` columns: as many whole hints on a row as fit, so a narrow box wraps the line
/// instead of cutting its last keys off; only a hint wider than a row on its own is cut.
pub fn key_rows(keys: &str, max: usize) -> Vec<String> {
    const SEPARATOR: &str = " · ";
    let mut rows: Vec<String> = Vec::new();
    let mut row = String::new();
    for hint in keys.split(SEPARATOR).filter(|hint| !hint.is_empty()) {
        if !row.is_empty() && width(&row) + width(SEPARATOR) + width(hint) <= max {
            row.push_str(SEPARATOR);
            row.push_str(hint);
            continue;
        }
        if !row.is_empty() {
            rows.push(std::mem::take(&mut row));
        }
        row = truncate_end(hint, max);
    }
    if !row.is_empty() {
        rows.push(row);
    }
    rows
}

/// The last rows of a box's text area `text`: the notice row — the notice, if any, in `style`,
/// else blank (the one gap between the box's content and its keys) — then the keys, wrapped by
/// [`key_rows`] (a box's layout reserves `1 + key_rows(keys, max).len()` rows for them).
fn notice_and_keys(
    buf: &mut Buffer,
    text: Rect,
    max: usize,
    notice: Option<(&str, Style)>,
    keys: &str,
    theme: &Theme,
) {
    let rows = key_rows(keys, max);
    let bottom = text.y + text.height;
    let first_key_row = bottom.saturating_sub(rows.len() as u16);
    if let Some((notice, style)) = notice {
        let line = Line::styled(truncate_end(notice, max), style);
        buf.set_line(text.x, first_key_row.saturating_sub(1), &line, text.width);
    }
    for (offset, row) in rows.into_iter().enumerate() {
        let line = Line::styled(row, theme.overlay_key);
        buf.set_line(text.x, first_key_row + offset as u16, &line, text.width);
    }
}

/// The footer segment's id and config group (`{"groups": {"fusion": {"show": false}}}` hides it).
pub const SEGMENT_ID: &str = "fusion";
pub const SEGMENT_GROUP: &str = "fusion";
/// The pair's glyph.
pub const GLYPH: &str = "⚭";

/// What the segment shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FusionSegment {
    /// Short names of the primary and the sidekick.
    pub primary: String,
    pub sidekick: String,
    /// What the sidekick saved this session (dollars; negative when it cost more).
    pub saved_session: f64,
    /// The fallback standing in for the primary, and the minutes until it returns.
    pub fallback: Option<(String, u64)>,
}

/// Above the helpers' spend: the pair is what the user chose to pay for, and its names and
/// savings outrank the token counts and the directory.
const PRESENCE_PRIORITY: u8 = priority::MODULE_HIGH - 2;
const DETAIL_PRIORITY: u8 = priority::COST - 1;

/// The segment: `⚭ big+small · saved $1.48`, narrowing to `⚭ big+small` and `⚭ $1.48`.
pub fn fusion_segment(model: &FusionSegment) -> Segment {
    let (head, role) = match &model.fallback {
        Some((fallback, minutes)) => (
            format!(
                "{GLYPH} fallback {fallback} ({minutes}m)+{}",
                model.sidekick
            ),
            Role::Warning,
        ),
        None => (
            format!("{GLYPH} {}+{}", model.primary, model.sidekick),
            Role::Accent,
        ),
    };
    let saved = saved_text(model.saved_session);
    let long = Form::new(head.clone(), role).then(format!(" · {saved}"), Role::Muted);
    Segment::new(SEGMENT_ID, PRESENCE_PRIORITY, Align::Right, long)
        .in_group(SEGMENT_GROUP)
        .detail(DETAIL_PRIORITY)
        .or(Form::new(head, role))
        .or(Form::new(
            format!("{GLYPH} {}", format_cost(model.saved_session.max(0.0))),
            role,
        ))
}

/// `saved $1.48`, or `cost $0.02 more` when the sidekick was the dearer one.
pub fn saved_text(saved: f64) -> String {
    if saved < 0.0 {
        format!("cost {} more", format_cost(-saved))
    } else {
        format!("saved {}", format_cost(saved))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::footer::render_segments;
    use crate::test_support::render_to_string;
    use crate::theme::Theme;

    #[test]
    fn segment_forms_and_the_fallback() {
        let theme = Theme::plain();
        let pair = FusionSegment {
            primary: "big".into(),
            sidekick: "small".into(),
            saved_session: 1.4753,
            fallback: None,
        };
        let on_fallback = FusionSegment {
            fallback: Some(("spare".into(), 4)),
            ..pair.clone()
        };
        let row = |model: &FusionSegment, cols: u16| {
            render_to_string(cols, 1, |area, buf| {
                render_segments(&[fusion_segment(model)], &theme, area, buf);
            })
        };
        let wide = row(&pair, 40);
        assert!(wide.contains("⚭ big+small · saved $1.48"), "{wide}");
        assert!(row(&pair, 14).contains("⚭ big+small"));
        assert!(row(&pair, 9).contains("⚭ $1.48"));
        let fallback = row(&on_fallback, 48);
        assert!(
            fallback.contains("⚭ fallback spare (4m)+small"),
            "{fallback}"
        );
        assert_eq!(
            fusion_segment(&on_fallback).forms[0].pieces[0].role,
            Role::Warning
        );
        crate::assert_ui_snapshot!("fusion_segment", format!("{wide}\n{fallback}"));
        assert_eq!(saved_text(-0.02), "cost $0.0200 more");
        assert_eq!(saved_text(0.0), "saved $0.00");
    }

    #[test]
    fn key_rows_wrap_whole_hints() {
        let keys = "type to filter · ↑↓ select · Enter choose · Esc cancel";
        // (width, rows)
        let cases: [(usize, &[&str]); 5] = [
            (
                80,
                &["type to filter · ↑↓ select · Enter choose · Esc cancel"],
            ),
            (
                40,
                &["type to filter · ↑↓ select", "Enter choose · Esc cancel"],
            ),
            (
                26,
                &["type to filter · ↑↓ select", "Enter choose · Esc cancel"],
            ),
            (
                14,
                &["type to filter", "↑↓ select", "Enter choose", "Esc cancel"],
            ),
            (8, &["type to…", "↑↓ sele…", "Enter c…", "Esc can…"]),
        ];
        for (max, rows) in cases {
            assert_eq!(key_rows(keys, max), rows, "{max} columns");
        }
        assert!(key_rows("", 10).is_empty());
    }
}

//! The model picker (`/unipi:model`, Alt+M): a centred box with the two slots on top — the
//! primary and the sidekick, the active one marked, then the "confirm" step — the price ratio of
//! the pair as it stands, the filter the user types, and the models that match it, one row each:
//! `provider/id`, the name, the context window, the input/output price per million tokens and
//! flags (thinking, vision, no key). A notice line and the keys close it. On a narrow screen the
//! window, price and flag columns go first; the model's id never does.

use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

use crate::text::{truncate_end, width};
use crate::theme::Theme;

/// The box's title.
pub const TITLE: &str = "Model fusion: primary + sidekick";
/// The widest the text gets.
const MAX_TEXT_WIDTH: usize = 96;
/// Rows of models shown at most (the list scrolls past it).
const MAX_LIST_ROWS: usize = 12;
/// Below this text width the window, price and flag columns are left out.
const NARROW: usize = 64;
/// The filter's prompt.
const FILTER_PROMPT: &str = "Filter › ";

/// One model as the picker lists it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelRow {
    /// `provider/id`.
    pub key: String,
    pub name: Option<String>,
    pub context_window: Option<u64>,
    /// Input and output price, dollars per million tokens.
    pub price: Option<(f64, f64)>,
    pub reasoning: bool,
    pub vision: bool,
    /// Pi has no credentials for its provider.
    pub no_key: bool,
}

/// Which step the picker is at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Slot {
    #[default]
    Primary,
    Sidekick,
    /// Both are set: Enter applies the pair.
    Confirm,
}

/// What the picker shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PickerModel {
    /// The models matching the filter, best first.
    pub rows: Vec<ModelRow>,
    /// How many models Pi listed in all.
    pub total: usize,
    pub selected: usize,
    pub filter: String,
    /// The filter's cursor, in characters.
    pub cursor: usize,
    pub slot: Slot,
    pub primary: Option<ModelRow>,
    pub sidekick: Option<ModelRow>,
    /// The price ratio of the pair (or why there is none).
    pub preview: Option<String>,
    /// What the last key did, or why it could not.
    pub notice: Option<String>,
    /// The keys line, from the picker's key table.
    pub keys: String,
}

/// Where the box goes and how its rows are laid out.
struct Layout {
    area: Rect,
    text: Rect,
    /// The first model row shown.
    first: usize,
    /// Model rows shown.
    visible: usize,
}

fn layout(model: &PickerModel, screen: Rect) -> Option<Layout> {
    let text_width = MAX_TEXT_WIDTH.min(usize::from(screen.width).saturating_sub(4));
    // slots (3) + preview + blank + filter + column header, the rows, the notice row (blank
    // without one) and the keys (wrapped to the width).
    let fixed = 7 + 1 + super::key_rows(&model.keys, text_width).len();
    let wanted_rows = model.rows.len().clamp(1, MAX_LIST_ROWS);
    let height = (fixed + wanted_rows + 2).min(usize::from(screen.height));
    if text_width < 24 || height < fixed + 3 {
        return None;
    }
    let visible = height - fixed - 2;
    let area = super::centred_box(screen, text_width, height);
    let first = model
        .selected
        .saturating_sub(visible.saturating_sub(1))
        .min(model.rows.len().saturating_sub(visible));
    Some(Layout {
        area,
        text: Rect {
            x: area.x + 2,
            y: area.y + 1,
            width: text_width as u16,
            height: area.height - 2,
        },
        first,
        visible,
    })
}

/// Draws the picker centred on `screen` (nothing when the screen is too small for it).
pub fn render(model: &PickerModel, theme: &Theme, screen: Rect, buf: &mut Buffer) {
    let Some(layout) = layout(model, screen) else {
        return;
    };
    render_frame(model, &layout, theme, buf);
    let max = usize::from(layout.text.width);
    let columns = Columns::for_width(max);
    let mut lines = vec![
        slot_line(
            "Primary",
            model.primary.as_ref(),
            model.slot == Slot::Primary,
            max,
            theme,
        ),
        slot_line(
            "Sidekick",
            model.sidekick.as_ref(),
            model.slot == Slot::Sidekick,
            max,
            theme,
        ),
        confirm_line(model, max, theme),
        Line::styled(
            truncate_end(model.preview.as_deref().unwrap_or(""), max),
            theme.accent,
        ),
        Line::default(),
        filter_line(model, max, theme),
    ];
    lines.push(Line::styled(columns.header(), theme.muted));
    for (row, line) in lines.iter().enumerate() {
        buf.set_line(
            layout.text.x,
            layout.text.y + row as u16,
            line,
            layout.text.width,
        );
    }
    render_rows(model, &layout, &columns, lines.len(), theme, buf);
    let notice = model
        .notice
        .as_deref()
        .map(|notice| (notice, theme.warning));
    super::notice_and_keys(buf, layout.text, max, notice, &model.keys, theme);
}

/// Clears the box and draws its frame, with the rows shown (`first-last/all`) on the bottom
/// border when the list scrolls.
fn render_frame(model: &PickerModel, layout: &Layout, theme: &Theme, buf: &mut Buffer) {
    Clear.render(layout.area, buf);
    crate::overlay::frame(TITLE, "", 0, 0, theme, layout.area, buf);
    if model.rows.len() > layout.visible {
        let position = format!(
            " {}-{}/{} ",
            layout.first + 1,
            (layout.first + layout.visible).min(model.rows.len()),
            model.rows.len()
        );
        let x = (layout.area.x + layout.area.width).saturating_sub(width(&position) as u16 + 1);
        buf.set_string(
            x,
            layout.area.y + layout.area.height - 1,
            position,
            theme.overlay_border,
        );
    }
}

/// The "confirm" step, marked when it is the active one, muted until both slots are set.
fn confirm_line(model: &PickerModel, max: usize, theme: &Theme) -> Line<'static> {
    let confirm_ready = model.primary.is_some() && model.sidekick.is_some();
    let (text, style) = if confirm_ready {
        ("✓ Confirm this pair", theme.status_done)
    } else {
        ("✓ Confirm (once both are set)", theme.muted)
    };
    let marker = if model.slot == Slot::Confirm {
        "▶ "
    } else {
        "  "
    };
    Line::from(vec![
        Span::styled(marker, theme.accent),
        Span::styled(truncate_end(text, max.saturating_sub(2)), style),
    ])
}

/// The filter the user types, with the count of matching models flush right.
fn filter_line(model: &PickerModel, max: usize, theme: &Theme) -> Line<'static> {
    let count = format!("{} of {} models", model.rows.len(), model.total);
    let filter_room = max.saturating_sub(width(&count) + 1 + width(FILTER_PROMPT));
    let filter = truncate_end(&model.filter, filter_room);
    let pad = max.saturating_sub(width(FILTER_PROMPT) + width(&filter) + width(&count));
    Line::from(vec![
        Span::styled(FILTER_PROMPT, theme.overlay_key),
        Span::raw(filter),
        Span::raw(" ".repeat(pad)),
        Span::styled(count, theme.muted),
    ])
}

/// The model rows in view from text row `top` on (or a line saying none matches).
fn render_rows(
    model: &PickerModel,
    layout: &Layout,
    columns: &Columns,
    top: usize,
    theme: &Theme,
    buf: &mut Buffer,
) {
    let max = usize::from(layout.text.width);
    if model.rows.is_empty() {
        buf.set_line(
            layout.text.x,
            layout.text.y + top as u16,
            &Line::styled(
                truncate_end("No model matches the filter.", max),
                theme.muted,
            ),
            layout.text.width,
        );
    }
    let shown = model
        .rows
        .iter()
        .enumerate()
        .skip(layout.first)
        .take(layout.visible);
    for (offset, (index, row)) in shown.enumerate() {
        let line = columns.row(row, index == model.selected, theme);
        buf.set_line(
            layout.text.x,
            layout.text.y + (top + offset) as u16,
            &line,
            layout.text.width,
        );
    }
}

/// Where the terminal cursor goes: in the filter, at its cursor.
pub fn cursor_position(model: &PickerModel, screen: Rect) -> Option<Position> {
    let layout = layout(model, screen)?;
    let before: String = model.filter.chars().take(model.cursor).collect();
    let x = usize::from(layout.text.x) + width(FILTER_PROMPT) + width(&before);
    let x = x.min(usize::from(layout.text.x + layout.text.width).saturating_sub(1));
    Some(Position::new(x as u16, layout.text.y + 5))
}

fn slot_line(
    label: &str,
    chosen: Option<&ModelRow>,
    active: bool,
    max: usize,
    theme: &Theme,
) -> Line<'static> {
    let marker = if active { "▶ " } else { "  " };
    let label_style = if active {
        theme.overlay_title.add_modifier(Modifier::REVERSED)
    } else {
        theme.overlay_title
    };
    let mut spans = vec![
        Span::styled(marker, theme.accent),
        Span::styled(format!("{label:<8}"), label_style),
        Span::raw("  "),
    ];
    let room = max.saturating_sub(12);
    match chosen {
        Some(row) => {
            let price = row
                .price
                .map(|(input, output)| {
                    format!(" · {} in · {} out per M", dollars(input), dollars(output))
                })
                .unwrap_or_default();
            let text = truncate_end(&format!("{}{price}", row.key), room);
            spans.push(Span::raw(text));
        }
        None => spans.push(Span::styled(
            truncate_end("— pick one from the list —", room),
            theme.muted,
        )),
    }
    Line::from(spans)
}

/// `$0.25`, `$15`, `$1.50`.
fn dollars(value: f64) -> String {
    if value.fract() == 0.0 && value >= 1.0 {
        format!("${value:.0}")
    } else {
        format!("${value:.2}")
    }
}

/// `128k`, `1.0M`, `—`.
fn window(tokens: Option<u64>) -> String {
    match tokens {
        Some(tokens) if tokens >= 1_000_000 => format!("{:.1}M", tokens as f64 / 1e6),
        Some(tokens) if tokens >= 1_000 => format!("{}k", tokens / 1_000),
        Some(tokens) => tokens.to_string(),
        None => "—".to_owned(),
    }
}

/// The list's columns for a text width.
struct Columns {
    /// The model column's width (marker included).
    model: usize,
    details: bool,
}

const CTX_WIDTH: usize = 6;
const PRICE_WIDTH: usize = 14;
const FLAGS_WIDTH: usize = 19;

impl Columns {
    fn for_width(max: usize) -> Self {
        let details = max >= NARROW;
        let model = if details {
            max - CTX_WIDTH - PRICE_WIDTH - FLAGS_WIDTH - 3
        } else {
            max
        };
        Columns { model, details }
    }

    fn header(&self) -> String {
        let mut text = format!("  {:<width$}", "model", width = self.model - 2);
        if self.details {
            text.push_str(&format!(
                " {:>CTX_WIDTH$} {:>PRICE_WIDTH$} {:<FLAGS_WIDTH$}",
                "window", "$/M in/out", "flags"
            ));
        }
        text
    }

    fn row(&self, row: &ModelRow, selected: bool, theme: &Theme) -> Line<'static> {
        let marker = if selected { "▶ " } else { "  " };
        let key_style = if row.no_key {
            theme.muted
        } else if selected {
            Style::new().add_modifier(Modifier::REVERSED)
        } else {
            Style::new()
        };
        let room = self.model - 2;
        let key = truncate_end(&row.key, room);
        let name_room = room.saturating_sub(width(&key) + 2);
        let name = match &row.name {
            Some(name) if name_room > 3 && name != &row.key => truncate_end(name, name_room),
            _ => String::new(),
        };
        let pad =
            room.saturating_sub(width(&key) + if name.is_empty() { 0 } else { width(&name) + 2 });
        let mut spans = vec![
            Span::styled(marker, theme.accent),
            Span::styled(key, key_style),
        ];
        if !name.is_empty() {
            spans.push(Span::raw("  "));
            spans.push(Span::styled(name, theme.muted));
        }
        spans.push(Span::raw(" ".repeat(pad)));
        if self.details {
            let price = row
                .price
                .map(|(input, output)| format!("{}/{}", plain(input), plain(output)))
                .unwrap_or_else(|| "—".to_owned());
            let mut flags = Vec::new();
            if row.reasoning {
                flags.push("think");
            }
            if row.vision {
                flags.push("vision");
            }
            if row.no_key {
                flags.push("no key");
            }
            spans.push(Span::styled(
                format!(
                    " {:>CTX_WIDTH$} {:>PRICE_WIDTH$} ",
                    window(row.context_window),
                    price
                ),
                theme.muted,
            ));
            let flags_style = if row.no_key {
                theme.warning
            } else {
                theme.muted
            };
            spans.push(Span::styled(
                truncate_end(&flags.join(" "), FLAGS_WIDTH),
                flags_style,
            ));
        }
        Line::from(spans)
    }
}

/// A price without the dollar sign: `0.25`, `15`.
fn plain(value: f64) -> String {
    dollars(value).trim_start_matches('$').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::render_to_string;

    fn row(key: &str, name: &str, price: (f64, f64), flags: (bool, bool, bool)) -> ModelRow {
        ModelRow {
            key: key.into(),
            name: Some(name.into()),
            context_window: Some(200_000),
            price: Some(price),
            reasoning: flags.0,
            vision: flags.1,
            no_key: flags.2,
        }
    }

    fn models() -> Vec<ModelRow> {
        vec![
            row(
                "anthropic/claude-opus-4-1",
                "Claude Opus 4.1",
                (15.0, 75.0),
                (true, true, false),
            ),
            row(
                "anthropic/claude-haiku-4-5",
                "Claude Haiku 4.5",
                (1.0, 5.0),
                (true, true, false),
            ),
            row("openai/gpt-5", "GPT-5", (1.25, 10.0), (true, true, true)),
            row(
                "openai/gpt-5-mini",
                "GPT-5 mini",
                (0.25, 2.0),
                (true, false, true),
            ),
            ModelRow {
                key: "unipi-scripted/small".into(),
                name: Some("small (scripted)".into()),
                context_window: Some(128_000),
                price: Some((0.25, 1.25)),
                ..ModelRow::default()
            },
        ]
    }

    /// The keys line the picker view makes from the default keymap.
    const KEYS: &str =
        "type to filter · ↑↓ select · Enter choose · Tab slot · Ctrl+S confirm · Esc cancel";

    fn draw(model: &PickerModel, width: u16, height: u16) -> String {
        render_to_string(width, height, |area, buf| {
            render(model, &Theme::plain(), area, buf)
        })
    }

    #[test]
    fn empty_filter_lists_every_model_with_the_primary_slot_active() {
        let rows = models();
        let model = PickerModel {
            total: rows.len(),
            rows,
            keys: KEYS.into(),
            preview: Some("Pick a primary, then a sidekick".into()),
            ..PickerModel::default()
        };
        let screen = draw(&model, 100, 24);
        assert!(screen.contains("▶ Primary"), "{screen}");
        assert!(screen.contains("no key"), "{screen}");
        crate::assert_ui_snapshot!("fusion_picker_empty_filter", screen);
    }

    #[test]
    fn a_filter_narrows_the_list_and_says_how_many_match() {
        let all = models();
        let model = PickerModel {
            total: all.len(),
            rows: vec![all[1].clone(), all[3].clone()],
            filter: "haiku".into(),
            cursor: 5,
            selected: 0,
            slot: Slot::Sidekick,
            primary: Some(all[0].clone()),
            keys: KEYS.into(),
            ..PickerModel::default()
        };
        let screen = draw(&model, 100, 24);
        assert!(screen.contains("Filter › haiku"), "{screen}");
        assert!(screen.contains("2 of 5 models"), "{screen}");
        crate::assert_ui_snapshot!("fusion_picker_filtered", screen);
        let cursor = cursor_position(&model, Rect::new(0, 0, 100, 24)).unwrap();
        let filter_row: String = screen
            .lines()
            .nth(usize::from(cursor.y))
            .unwrap()
            .to_owned();
        assert!(filter_row.contains("Filter › haiku"), "{filter_row}");
    }

    #[test]
    fn both_slots_set_show_the_ratio_and_the_confirm_step() {
        let all = models();
        let model = PickerModel {
            total: all.len(),
            rows: all.clone(),
            selected: 4,
            slot: Slot::Confirm,
            primary: Some(all[0].clone()),
            sidekick: Some(all[4].clone()),
            preview: Some("The sidekick is 60× cheaper (input 60×, output 60×)".into()),
            notice: Some("Enter applies the pair; Tab goes back to a slot".into()),
            keys: KEYS.into(),
            ..PickerModel::default()
        };
        let screen = draw(&model, 100, 24);
        assert!(screen.contains("▶ ✓ Confirm this pair"), "{screen}");
        crate::assert_ui_snapshot!("fusion_picker_both_slots", screen);
    }

    #[test]
    fn a_narrow_screen_keeps_the_ids_and_drops_the_details() {
        let all = models();
        let model = PickerModel {
            total: all.len(),
            rows: all.clone(),
            selected: 1,
            primary: Some(all[0].clone()),
            keys: KEYS.into(),
            ..PickerModel::default()
        };
        let screen = draw(&model, 50, 16);
        assert!(screen.contains("anthropic/claude-haiku-4-5"), "{screen}");
        assert!(!screen.contains("$/M"), "{screen}");
        crate::assert_ui_snapshot!("fusion_picker_narrow", screen);
        // Too small for the box: nothing drawn rather than a broken one.
        assert!(
            draw(&model, 20, 6)
                .trim_matches(|c: char| c == ' ' || c == '"' || c == '\n')
                .is_empty()
        );
    }
}

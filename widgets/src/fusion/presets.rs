//! The preset editor (`/unipi:fusion-preset`): the named pairs, the active one marked `●`, each
//! with its primary, sidekick and fallback; the current pair; the name being typed when a preset
//! is saved or renamed; a notice and the keys.

use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

use crate::text::{truncate_end, width};
use crate::theme::Theme;

/// The box's title.
pub const TITLE: &str = "Model fusion presets";
const MAX_TEXT_WIDTH: usize = 90;
/// The name field's prompt.
const NAME_PROMPT: &str = "Name › ";

/// One preset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PresetRow {
    pub name: String,
    pub primary: String,
    pub sidekick: String,
    pub fallback: Option<String>,
    pub active: bool,
}

/// A name being typed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NameField {
    /// What the name is for: "Save the current pair as", "Rename daily to".
    pub label: String,
    pub text: String,
    /// In characters.
    pub cursor: usize,
}

/// What the editor shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PresetsModel {
    pub rows: Vec<PresetRow>,
    pub selected: usize,
    /// `big + small (preset daily)`, or that fusion is off.
    pub current: String,
    pub naming: Option<NameField>,
    pub notice: Option<String>,
    pub keys: String,
}

fn area(model: &PresetsModel, screen: Rect) -> Option<(Rect, usize)> {
    let text_width = MAX_TEXT_WIDTH.min(usize::from(screen.width).saturating_sub(4));
    // current, blank, rows, [blank, name], the notice row (blank without one), the keys
    let rows = model.rows.len().max(1);
    let keys = super::key_rows(&model.keys, text_width).len();
    let height = (2 + rows + 2 * usize::from(model.naming.is_some()) + 1 + keys + 2)
        .min(usize::from(screen.height));
    if text_width < 20 || height < 8 {
        return None;
    }
    Some((super::centred_box(screen, text_width, height), text_width))
}

/// The name field's row on the box `area`: above the notice row and the keys.
fn name_row(model: &PresetsModel, area: Rect, text_width: usize) -> u16 {
    let keys = super::key_rows(&model.keys, text_width).len() as u16;
    (area.y + area.height - 1).saturating_sub(keys + 2)
}

/// Draws the editor centred on `screen`.
pub fn render(model: &PresetsModel, theme: &Theme, screen: Rect, buf: &mut Buffer) {
    let Some((area, max)) = area(model, screen) else {
        return;
    };
    Clear.render(area, buf);
    let text = crate::overlay::frame(TITLE, "", 0, 0, theme, area, buf);
    let mut lines = vec![
        Line::styled(truncate_end(&model.current, max), theme.accent),
        Line::default(),
    ];
    if model.rows.is_empty() {
        lines.push(Line::styled(
            truncate_end("No presets yet: s saves the current pair as one.", max),
            theme.muted,
        ));
    }
    let name_width = model
        .rows
        .iter()
        .map(|row| width(&row.name))
        .max()
        .unwrap_or(0)
        .min(max / 4);
    for (index, row) in model.rows.iter().enumerate() {
        let selected = index == model.selected && model.naming.is_none();
        let marker = if index == model.selected {
            "▶ "
        } else {
            "  "
        };
        let dot = if row.active { "● " } else { "  " };
        let name = truncate_end(&row.name, name_width);
        let pad = " ".repeat(name_width.saturating_sub(width(&name)));
        let name_style = if selected {
            theme.overlay_title.add_modifier(Modifier::REVERSED)
        } else {
            theme.overlay_title
        };
        let mut pair = format!("{} + {}", row.primary, row.sidekick);
        if let Some(fallback) = &row.fallback {
            pair.push_str(&format!(" · fallback {fallback}"));
        }
        let room = max.saturating_sub(name_width + 6);
        lines.push(Line::from(vec![
            Span::styled(marker, theme.accent),
            Span::styled(dot, theme.status_done),
            Span::styled(format!("{name}{pad}"), name_style),
            Span::raw("  "),
            Span::raw(truncate_end(&pair, room)),
        ]));
    }
    for (row, line) in lines.iter().enumerate() {
        buf.set_line(text.x, text.y + row as u16, line, text.width);
    }
    if let Some(field) = &model.naming {
        let label = format!("{}: ", field.label);
        let line = Line::from(vec![
            Span::styled(label, theme.muted),
            Span::styled(NAME_PROMPT, theme.overlay_key),
            Span::raw(field.text.clone()),
        ]);
        buf.set_line(text.x, name_row(model, area, max), &line, text.width);
    }
    let notice = model
        .notice
        .as_deref()
        .map(|notice| (notice, theme.warning));
    super::notice_and_keys(buf, text, max, notice, &model.keys, theme);
}

/// The cursor in the name field, while one is typed.
pub fn cursor_position(model: &PresetsModel, screen: Rect) -> Option<Position> {
    let field = model.naming.as_ref()?;
    let (area, text_width) = area(model, screen)?;
    let before: String = field.text.chars().take(field.cursor).collect();
    let x = area.x + 2 + (width(&field.label) + 2 + width(NAME_PROMPT) + width(&before)) as u16;
    Some(Position::new(
        x.min(area.x + area.width - 3),
        name_row(model, area, text_width),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::render_to_string;

    #[test]
    fn presets_the_active_one_and_a_name_being_typed() {
        let mut model = PresetsModel {
            rows: vec![
                PresetRow {
                    name: "daily".into(),
                    primary: "anthropic/claude-opus-4-1".into(),
                    sidekick: "anthropic/claude-haiku-4-5".into(),
                    fallback: Some("openai/gpt-5".into()),
                    active: true,
                },
                PresetRow {
                    name: "thrifty".into(),
                    primary: "openai/gpt-5".into(),
                    sidekick: "openai/gpt-5-mini".into(),
                    fallback: None,
                    active: false,
                },
            ],
            selected: 1,
            current: "Now: anthropic/claude-opus-4-1 + anthropic/claude-haiku-4-5 (preset daily)"
                .into(),
            keys:
                "↑↓ select · Enter apply · s save current · r rename · d delete · o off · Esc close"
                    .into(),
            ..PresetsModel::default()
        };
        let draw = |model: &PresetsModel| {
            render_to_string(100, 14, |area, buf| {
                render(model, &Theme::plain(), area, buf)
            })
        };
        crate::assert_ui_snapshot!("fusion_presets", draw(&model));
        // At 80 columns the keys wrap rather than lose `Esc close`.
        let narrow = render_to_string(80, 14, |area, buf| {
            render(&model, &Theme::plain(), area, buf)
        });
        assert!(narrow.contains("│ Esc close "), "{narrow}");
        model.naming = Some(NameField {
            label: "Rename thrifty to".into(),
            text: "cheap".into(),
            cursor: 5,
        });
        let screen = draw(&model);
        assert!(
            screen.contains("Rename thrifty to: Name › cheap"),
            "{screen}"
        );
        let cursor = cursor_position(&model, Rect::new(0, 0, 100, 14)).unwrap();
        let row = screen.lines().nth(usize::from(cursor.y)).unwrap();
        assert!(row.contains("Name › cheap"), "{row}");
    }
}

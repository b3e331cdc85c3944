//! The settings overlay: a centred, bordered box listing one module's settings (label and value,
//! the selected one highlighted), the selected setting's help, one line of feedback (saved, or
//! the "unsaved changes" warning) and the key hints. The model is generic — booleans, bounded
//! numbers with a unit, text, secrets (never shown once entered), a choice among names — so
//! every module's settings page is the same widget; the module maps its config to
//! [`SettingField`]s and back by `key`. A text being typed shows in place of the selected value,
//! [`cursor_position`] says where the terminal cursor goes.
//!
//! On a small terminal the bottom block (notice, keys, help) keeps its rows first and the fields
//! become a window that follows the selection, with a position marker in the bottom border; the
//! notice row is always reserved so the box does not jump when a notice appears.

use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

use crate::overlay::{BORDER, PADDING};
use crate::text::{truncate_end, width, word_forms};
use crate::theme::Theme;

/// The value of one setting, with what the view needs to change it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SettingValue {
    Bool(bool),
    /// A whole number kept within `min..=max`, changed by `step`; `unit` is shown after it. A
    /// duration of 0 seconds reads "none" (a timeout of zero is no timeout).
    Number {
        value: u64,
        unit: String,
        min: u64,
        max: u64,
        step: u64,
    },
    Text(String),
    /// A token or password: shown as set or not set, never its characters.
    Secret(String),
    /// One of `options`, stepped through.
    Choice {
        value: String,
        options: Vec<String>,
    },
}

impl SettingValue {
    /// The value as shown in the box: `[x] on`, `20 MiB`, the text.
    pub fn display(&self) -> String {
        match self {
            SettingValue::Bool(true) => "[x] on".to_owned(),
            SettingValue::Bool(false) => "[ ] off".to_owned(),
            SettingValue::Number { value: 0, unit, .. } if unit == "s" => "none".to_owned(),
            SettingValue::Number { value, unit, .. } if unit.is_empty() => value.to_string(),
            SettingValue::Number { value, unit, .. } => format!("{value} {unit}"),
            SettingValue::Text(text) if text.is_empty() => "(not set)".to_owned(),
            SettingValue::Text(text) => text.clone(),
            SettingValue::Secret(secret) if secret.is_empty() => "(not set)".to_owned(),
            SettingValue::Secret(_) => SECRET_SHOWN.to_owned(),
            SettingValue::Choice { value, .. } => value.clone(),
        }
    }
}

/// What a set secret looks like.
pub const SECRET_SHOWN: &str = "•••••••• (set)";

/// One setting. `key` is the module's name for it (e.g. the config key), so the module can map
/// the edited fields back without relying on their order or labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingField {
    pub key: String,
    pub label: String,
    pub value: SettingValue,
    /// One or two sentences shown under the list while the field is selected.
    pub help: String,
}

/// Everything the settings overlay draws.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SettingsModel {
    pub title: String,
    pub fields: Vec<SettingField>,
    /// Index into `fields`.
    pub selected: usize,
    /// Some value differs from what was loaded or last saved.
    pub dirty: bool,
    /// One line of feedback ("Saved.", the unsaved-changes warning, a save error).
    pub notice: Option<String>,
    /// Key hints (key, what it does) for the bottom line.
    pub keys: Vec<(String, String)>,
    /// The text being typed into the selected field, and the cursor in it (characters).
    pub editing: Option<(String, usize)>,
}

/// Rows below the fields: a blank, two of help, the notice, the keys.
const FOOTER_ROWS: usize = 5;
/// Help text wraps to at most this many rows.
const HELP_ROWS: usize = 2;
/// The box is never narrower than this (when the screen allows): room for the help text.
const MIN_CONTENT_WIDTH: usize = 48;
/// The most fields shown when the screen is short, before the help rows give way.
const MIN_FIELD_ROWS: usize = 3;
/// Between the label column and the value.
const COLUMN_GAP: usize = 2;
/// In front of the selected field.
const SELECTED_MARKER: &str = "› ";
/// Marks a model with unsaved changes in the title.
const DIRTY_MARKER: &str = " *";

impl SettingsModel {
    /// Width and height the box wants, borders included, before clamping to the screen.
    pub fn desired_size(&self) -> (u16, u16) {
        let fields = self
            .fields
            .iter()
            .map(|field| {
                width(SELECTED_MARKER) + self.label_width() + COLUMN_GAP + value_width(field)
            })
            .max()
            .unwrap_or(0);
        let keys = width(&hint_text(&self.keys));
        let title = width(&self.title) + width(DIRTY_MARKER) + 2;
        let content = fields.max(keys).max(title).max(MIN_CONTENT_WIDTH);
        let w = content + 2 * (BORDER + PADDING);
        let h = self.fields.len() + FOOTER_ROWS + 2 * BORDER;
        (clamp_u16(w), clamp_u16(h))
    }

    /// The selected field, if any.
    pub fn selected_field(&self) -> Option<&SettingField> {
        self.fields.get(self.selected)
    }

    fn label_width(&self) -> usize {
        self.fields
            .iter()
            .map(|field| width(&field.label))
            .max()
            .unwrap_or(0)
    }
}

/// Where the box goes on a `screen`: centred, no larger than the screen.
pub fn overlay_area(model: &SettingsModel, screen: Rect) -> Rect {
    let (want_w, want_h) = model.desired_size();
    let w = want_w.min(screen.width);
    let h = want_h.min(screen.height);
    Rect {
        x: screen.x + (screen.width - w) / 2,
        y: screen.y + (screen.height - h) / 2,
        width: w,
        height: h,
    }
}

/// Draw the overlay centred on `screen`, over whatever is there.
pub fn render(model: &SettingsModel, theme: &Theme, screen: Rect, buf: &mut Buffer) {
    let area = overlay_area(model, screen);
    // Below this there is no room for a border and one row of text; draw nothing rather than
    // a broken box.
    if area.width < 2 * (BORDER + PADDING) as u16 + 1 || area.height < 2 * BORDER as u16 + 1 {
        return;
    }
    Clear.render(area, buf);
    let title = if model.dirty {
        format!("{}{DIRTY_MARKER}", model.title)
    } else {
        model.title.clone()
    };
    // The frame's own marker counts every content row; ours counts fields only, drawn below.
    let text_area = crate::overlay::frame(&title, "", 0, 0, theme, area, buf);
    let max_width = usize::from(text_area.width);
    let (footer, field_rows, first, selected, label_width) = rows_layout(model, text_area, theme);
    for (row, (index, field)) in model
        .fields
        .iter()
        .enumerate()
        .skip(first)
        .take(field_rows)
        .enumerate()
    {
        let editing = model.editing.as_ref().filter(|_| index == selected);
        let line = field_line(
            field,
            index == selected,
            editing,
            label_width,
            max_width,
            theme,
        );
        buf.set_line(
            text_area.x,
            text_area.y + row as u16,
            &line,
            text_area.width,
        );
    }
    for (row, line) in footer.iter().enumerate() {
        let y = text_area.y + (field_rows + row) as u16;
        buf.set_line(text_area.x, y, line, text_area.width);
    }
    if model.fields.len() > field_rows && field_rows > 0 {
        let last = (first + field_rows).min(model.fields.len());
        let marker = format!(" {}-{}/{} ", first + 1, last, model.fields.len());
        let marker_width = width(&marker) as u16;
        if marker_width + 2 <= area.width {
            let x = area.x + area.width - 1 - marker_width;
            buf.set_string(x, area.y + area.height - 1, marker, theme.overlay_border);
        }
    }
}

/// The rows of the box: the footer lines, how many field rows fit, the first field shown, the
/// selected field, and the label column's width.
fn rows_layout(
    model: &SettingsModel,
    text_area: Rect,
    theme: &Theme,
) -> (Vec<Line<'static>>, usize, usize, usize, usize) {
    let rows = usize::from(text_area.height);
    let max_width = usize::from(text_area.width);
    let footer = footer_lines(model, rows, max_width, theme);
    let field_rows = rows - footer.len();
    let selected = model.selected.min(model.fields.len().saturating_sub(1));
    let first = (selected + 1).saturating_sub(field_rows.max(1));
    let label_width = model.label_width().min(max_width / 2);
    (footer, field_rows, first, selected, label_width)
}

/// Where the terminal cursor goes while a text is typed into the selected field.
pub fn cursor_position(model: &SettingsModel, screen: Rect) -> Option<Position> {
    let (text, cursor) = model.editing.as_ref()?;
    let area = overlay_area(model, screen);
    if area.width < 2 * (BORDER + PADDING) as u16 + 1 || area.height < 2 * BORDER as u16 + 1 {
        return None;
    }
    let inset = (BORDER + PADDING) as u16;
    let text_area = Rect {
        x: area.x + inset,
        y: area.y + BORDER as u16,
        width: area.width.saturating_sub(2 * inset),
        height: area.height.saturating_sub(2 * BORDER as u16),
    };
    let (_, field_rows, first, selected, label_width) =
        rows_layout(model, text_area, &Theme::plain());
    let row = selected
        .checked_sub(first)
        .filter(|row| *row < field_rows)?;
    let room = usize::from(text_area.width)
        .saturating_sub(width(SELECTED_MARKER) + label_width + COLUMN_GAP);
    let (_, column) = edit_window(text, *cursor, room);
    let x = width(SELECTED_MARKER) + label_width + COLUMN_GAP + column;
    Some(Position {
        x: text_area.x + u16::try_from(x).unwrap_or(u16::MAX),
        y: text_area.y + row as u16,
    })
}

/// The part of a typed text that fits `room` columns with the cursor in view, and the cursor's
/// column in it.
fn edit_window(text: &str, cursor: usize, room: usize) -> (String, usize) {
    let chars: Vec<char> = text.chars().collect();
    let room = room.max(1);
    let start = (cursor + 1).saturating_sub(room);
    let shown: String = chars.iter().skip(start).take(room).collect();
    (shown, cursor - start)
}

fn field_line(
    field: &SettingField,
    selected: bool,
    editing: Option<&(String, usize)>,
    label_width: usize,
    max_width: usize,
    theme: &Theme,
) -> Line<'static> {
    let marker = if selected { SELECTED_MARKER } else { "  " };
    let label = truncate_end(&field.label, label_width);
    let pad = " ".repeat(label_width - width(&label) + COLUMN_GAP);
    let room = max_width.saturating_sub(width(marker) + label_width + COLUMN_GAP);
    if let Some((text, cursor)) = editing {
        // A secret being typed shows one dot per character.
        let text = match field.value {
            SettingValue::Secret(_) => "•".repeat(text.chars().count()),
            _ => text.clone(),
        };
        let (shown, _) = edit_window(&text, *cursor, room);
        return Line::from(vec![
            Span::raw(marker),
            Span::raw(label),
            Span::raw(pad),
            Span::styled(shown, theme.overlay_text.add_modifier(Modifier::UNDERLINED)),
        ]);
    }
    let value = match &field.value {
        // The arrows say the number can be changed, only where it can be.
        SettingValue::Number {
            value, min, max, ..
        } if selected => {
            let left = if value > min { "◂ " } else { "  " };
            let right = if value < max { " ▸" } else { "" };
            format!("{left}{}{right}", field.value.display())
        }
        SettingValue::Number { .. } => format!("  {}", field.value.display()),
        SettingValue::Choice { .. } if selected => format!("◂ {} ▸", field.value.display()),
        _ => field.value.display(),
    };
    let line = Line::from(vec![
        Span::raw(marker),
        Span::raw(label),
        Span::raw(pad),
        Span::styled(truncate_end(&value, room), theme.accent),
    ]);
    if selected {
        line.patch_style(Style::new().add_modifier(Modifier::REVERSED))
    } else {
        line
    }
}

/// Width of a field's value column, arrows included.
fn value_width(field: &SettingField) -> usize {
    let arrows = match field.value {
        SettingValue::Number { .. } | SettingValue::Choice { .. } => 4,
        _ => 0,
    };
    width(&field.value.display()) + arrows
}

/// The rows under the fields, top to bottom, fitted to `rows` content rows: the keys and the
/// notice row stay longest, then the help, then the blank separator; the fields keep at least
/// [`MIN_FIELD_ROWS`] (or all of them, when fewer) wherever the screen allows.
fn footer_lines(
    model: &SettingsModel,
    rows: usize,
    max_width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let keep_fields = model
        .fields
        .len()
        .min(MIN_FIELD_ROWS)
        .min(rows.saturating_sub(1))
        .max(1);
    let mut budget = rows.saturating_sub(keep_fields);
    let mut take = |n: usize| {
        let got = n.min(budget);
        budget -= got;
        got
    };
    let keys_rows = take(1);
    let notice_rows = take(1);
    let help_rows = take(HELP_ROWS);
    let help = model
        .selected_field()
        .map(|field| wrap(&field.help, max_width, help_rows))
        .unwrap_or_default();
    let blank_rows = take(1);

    let mut lines = Vec::with_capacity(FOOTER_ROWS);
    lines.extend(std::iter::repeat_n(Line::default(), blank_rows));
    for index in 0..help_rows {
        let text = help.get(index).cloned().unwrap_or_default();
        lines.push(Line::styled(text, theme.muted));
    }
    if notice_rows > 0 {
        let notice = model.notice.as_deref().unwrap_or("");
        lines.push(Line::styled(truncate_end(notice, max_width), theme.warning));
    }
    if keys_rows > 0 {
        lines.push(hint_line(&model.keys, max_width, theme));
    }
    lines
}

/// The key hints as one line: whole pairs only, as many as fit.
fn hint_line(keys: &[(String, String)], max_width: usize, theme: &Theme) -> Line<'static> {
    let mut spans = Vec::new();
    let mut used = 0;
    for (key, what) in keys {
        let gap = if spans.is_empty() { 0 } else { 2 };
        let pair = width(key) + 1 + width(what);
        if used + gap + pair > max_width {
            break;
        }
        if gap > 0 {
            spans.push(Span::raw("  "));
        }
        spans.push(Span::styled(key.clone(), theme.overlay_key));
        spans.push(Span::styled(format!(" {what}"), theme.muted));
        used += gap + pair;
    }
    Line::from(spans)
}

fn hint_text(keys: &[(String, String)]) -> String {
    keys.iter()
        .map(|(key, what)| format!("{key} {what}"))
        .collect::<Vec<_>>()
        .join("  ")
}

/// Word-wrap `text` into at most `max_rows` rows of `max_width` columns; the last row ends in
/// `…` when text is left over.
fn wrap(text: &str, max_width: usize, max_rows: usize) -> Vec<String> {
    let mut rows: Vec<String> = Vec::new();
    let mut current = String::new();
    for word in text.split_whitespace() {
        let candidate = if current.is_empty() {
            word.to_owned()
        } else {
            format!("{current} {word}")
        };
        if width(&candidate) <= max_width || current.is_empty() {
            current = candidate;
            continue;
        }
        rows.push(std::mem::take(&mut current));
        current = word.to_owned();
        if rows.len() == max_rows {
            break;
        }
    }
    if rows.len() < max_rows && !current.is_empty() {
        rows.push(current);
        current = String::new();
    }
    if !current.is_empty()
        && let Some(last) = rows.last_mut()
    {
        // Something did not fit: say so on the last row.
        let rest = format!("{last} {current}");
        *last = word_forms(&rest, max_width)
            .into_iter()
            .next()
            .unwrap_or_else(|| truncate_end(&rest, max_width));
    }
    rows.into_iter()
        .map(|row| truncate_end(&row, max_width))
        .collect()
}

fn clamp_u16(value: usize) -> u16 {
    u16::try_from(value).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    #[test]
    fn values_display_as_the_box_shows_them() {
        let number = |value: u64, unit: &str| SettingValue::Number {
            value,
            unit: unit.to_owned(),
            min: 0,
            max: 100,
            step: 1,
        };
        let cases = [
            (SettingValue::Bool(true), "[x] on"),
            (SettingValue::Bool(false), "[ ] off"),
            (number(0, "s"), "none"),
            (number(30, "s"), "30 s"),
            (number(0, "MiB"), "0 MiB"),
            (number(7, ""), "7"),
            (SettingValue::Text("x".to_owned()), "x"),
            (SettingValue::Text(String::new()), "(not set)"),
            (
                SettingValue::Secret("tk_secret".to_owned()),
                "•••••••• (set)",
            ),
            (SettingValue::Secret(String::new()), "(not set)"),
            (
                SettingValue::Choice {
                    value: "osc9".to_owned(),
                    options: vec!["auto".to_owned(), "osc9".to_owned()],
                },
                "osc9",
            ),
        ];
        for (value, want) in cases {
            assert_eq!(value.display(), want, "{value:?}");
        }
    }

    use ratatui::style::Color;

    use super::*;
    use crate::test_support::render_to_string;

    fn number(value: u64, unit: &str, min: u64, max: u64, step: u64) -> SettingValue {
        SettingValue::Number {
            value,
            unit: unit.to_owned(),
            min,
            max,
            step,
        }
    }

    fn field(key: &str, label: &str, value: SettingValue, help: &str) -> SettingField {
        SettingField {
            key: key.to_owned(),
            label: label.to_owned(),
            value,
            help: help.to_owned(),
        }
    }

    fn make_model() -> SettingsModel {
        SettingsModel {
            title: "Background tasks".to_owned(),
            fields: vec![
                field(
                    "enabled",
                    "Enabled",
                    SettingValue::Bool(true),
                    "Turns background tasks on or off. Takes effect on next start.",
                ),
                field(
                    "notifyOnCompletion",
                    "Notify on completion",
                    SettingValue::Bool(true),
                    "Default for bg_run: tell the agent when a task ends.",
                ),
                field(
                    "triggerOnCompletion",
                    "Wake agent on completion",
                    SettingValue::Bool(false),
                    "Default for bg_run: a task's end starts a turn of the agent.",
                ),
                field(
                    "defaultTimeoutSeconds",
                    "Default timeout",
                    number(0, "s", 0, 86_400, 30),
                    "Seconds before a task without its own timeout is stopped; 0 = none.",
                ),
                field(
                    "maxOutputBytes",
                    "Max output",
                    number(20, "MiB", 1, 4096, 1),
                    "A task writing more than this is stopped.",
                ),
            ],
            selected: 0,
            dirty: false,
            notice: None,
            keys: [
                ("s", "save"),
                ("Esc", "close"),
                ("↑↓", "select"),
                ("Space", "toggle"),
                ("←→", "change"),
            ]
            .iter()
            .map(|(k, w)| ((*k).to_owned(), (*w).to_owned()))
            .collect(),
            editing: None,
        }
    }

    fn snapshot(model: &SettingsModel, width: u16, height: u16) -> String {
        render_to_string(width, height, |area, buf| {
            render(model, &Theme::plain(), area, buf);
        })
    }

    #[test]
    fn fits_a_normal_terminal() {
        crate::assert_ui_snapshot!("settings_80x24", snapshot(&make_model(), 80, 24));
    }

    #[test]
    fn dirty_model_shows_marker_and_notice() {
        let model = SettingsModel {
            selected: 3,
            dirty: true,
            notice: Some("Unsaved changes — Esc again to discard.".to_owned()),
            ..make_model()
        };
        let text = snapshot(&model, 80, 24);
        assert!(text.contains("Background tasks * "), "{text}");
        assert!(text.contains("Unsaved changes"), "{text}");
        crate::assert_ui_snapshot!("settings_80x24_dirty", text);
    }

    #[test]
    fn narrow_terminal_keeps_notice_and_keys_and_follows_selection() {
        let model = SettingsModel {
            selected: 4,
            notice: Some("Saved.".to_owned()),
            ..make_model()
        };
        let text = snapshot(&model, 40, 12);
        assert!(
            text.contains("Max output"),
            "the selection stays visible: {text}"
        );
        assert!(text.contains("Saved."), "{text}");
        assert!(
            text.contains("Esc close") || text.contains("s save"),
            "{text}"
        );
        crate::assert_ui_snapshot!("settings_40x12", text);
    }

    #[test]
    fn short_terminal_windows_the_fields_with_a_position_marker() {
        let model = SettingsModel {
            selected: 4,
            ..make_model()
        };
        let text = snapshot(&model, 40, 8);
        // 6 content rows: keys, notice, two of help, then the fields keep the minimum of 3.
        assert!(text.contains(" 3-5/5 "), "{text}");
        assert!(text.contains("› Max output"), "{text}");
        assert!(!text.contains("Enabled"), "{text}");
        assert!(text.contains("A task writing more than this is…"), "{text}");
        crate::assert_ui_snapshot!("settings_40x8", text);
    }

    #[test]
    fn number_arrows_show_only_where_the_value_can_move() {
        let cases = [
            (number(0, "s", 0, 10, 1), "  none ▸"),
            (number(5, "s", 0, 10, 1), "◂ 5 s ▸"),
            (number(10, "", 0, 10, 1), "◂ 10"),
        ];
        for (value, want) in cases {
            let field = field("k", "K", value, "");
            let line = field_line(&field, true, None, 1, 40, &Theme::plain());
            let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
            assert!(text.ends_with(want), "{text:?} should end with {want:?}");
        }
    }

    #[test]
    fn text_secret_and_choice_fields_and_typing_into_one() {
        let mut model = SettingsModel {
            title: "Notifications".to_owned(),
            fields: vec![
                field(
                    "ntfy.serverUrl",
                    "ntfy server",
                    SettingValue::Text("https://ntfy.sh".into()),
                    "Where ntfy notifications go.",
                ),
                field(
                    "ntfy.token",
                    "ntfy token",
                    SettingValue::Secret("tk_live_123".into()),
                    "Sent as a bearer token.",
                ),
                field(
                    "gotify.appToken",
                    "Gotify app token",
                    SettingValue::Secret(String::new()),
                    "X-Gotify-Key.",
                ),
                field(
                    "terminal.method",
                    "Terminal method",
                    SettingValue::Choice {
                        value: "auto".into(),
                        options: vec!["auto".into(), "osc9".into()],
                    },
                    "How the terminal is told.",
                ),
            ],
            selected: 3,
            ..make_model()
        };
        let text = snapshot(&model, 80, 16);
        assert!(!text.contains("tk_live"), "a secret is never shown: {text}");
        crate::assert_ui_snapshot!("settings_text_secret_choice", text);
        // Typing a secret shows dots; the cursor sits after the typed text.
        model.selected = 1;
        model.editing = Some(("abc".into(), 3));
        let text = snapshot(&model, 80, 16);
        assert!(
            text.contains("›") && text.contains("•••") && !text.contains("abc"),
            "{text}"
        );
        let position = cursor_position(&model, Rect::new(0, 0, 80, 16)).unwrap();
        let row: Vec<char> = text
            .lines()
            .nth(usize::from(position.y))
            .unwrap()
            .chars()
            .collect();
        // The test backend quotes each row: cell x is character x + 1.
        assert_eq!(row[usize::from(position.x)], '•');
        assert_eq!(row[usize::from(position.x) + 1], ' ');
        // A long text keeps the cursor in view.
        assert_eq!(edit_window("abcdefgh", 8, 4), ("fgh".to_owned(), 3));
        assert_eq!(edit_window("abcdefgh", 2, 4), ("abcd".to_owned(), 2));
        assert_eq!(
            cursor_position(
                &SettingsModel {
                    editing: None,
                    ..model
                },
                Rect::new(0, 0, 80, 16)
            ),
            None
        );
    }

    #[test]
    fn wrap_table() {
        let cases: [(&str, usize, usize, &[&str]); 4] = [
            ("", 10, 2, &[]),
            ("one two three", 20, 2, &["one two three"]),
            ("one two three", 8, 2, &["one two", "three"]),
            ("one two three four", 8, 2, &["one two", "three…"]),
        ];
        for (text, width, rows, want) in cases {
            assert_eq!(wrap(text, width, rows), want, "{text:?} in {width}x{rows}");
        }
    }

    #[test]
    fn selected_row_is_reversed_and_values_use_the_accent() {
        let theme = Theme {
            accent: Style::new().fg(Color::Cyan),
            ..Theme::plain()
        };
        let model = SettingsModel {
            selected: 1,
            ..make_model()
        };
        let mut buf = Buffer::empty(Rect::new(0, 0, 80, 24));
        render(&model, &theme, buf.area, &mut buf);
        let area = overlay_area(&model, buf.area);
        let selected = &buf[(area.x + 2, area.y + 2)];
        assert_eq!(selected.symbol(), "›");
        assert!(selected.modifier.contains(Modifier::REVERSED));
        assert!(
            !buf[(area.x + 2, area.y + 1)]
                .modifier
                .contains(Modifier::REVERSED)
        );
        // "[x] on" of the first field, after marker, label column and gap.
        let label_width = model.label_width();
        let value_x = area.x + 2 + 2 + (label_width + COLUMN_GAP) as u16;
        assert_eq!(buf[(value_x, area.y + 1)].symbol(), "[");
        assert_eq!(buf[(value_x, area.y + 1)].fg, Color::Cyan);
    }

    #[test]
    fn never_panics_on_any_small_screen() {
        let model = SettingsModel {
            selected: 2,
            notice: Some("a notice".to_owned()),
            ..make_model()
        };
        for width in 1..=40 {
            for height in 1..=14 {
                let text = snapshot(&model, width, height);
                assert_eq!(text.lines().count(), usize::from(height));
            }
        }
        snapshot(&SettingsModel::default(), 20, 6);
    }
}

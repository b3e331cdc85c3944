//! The dock: a bordered panel over the lower part of the screen that lists what the workbench's
//! capabilities contribute, one [`Section`] each, or shows one row in detail (labelled fields
//! above a scrollable body: an output tail, a transcript).
//!
//! The widget knows no kind of row. Each capability's own widget turns its model into a section
//! of generic [`Row`]s — status glyph, name, tag, status, a badge kept beside the status, the
//! columns that still fit, a trailing line — each with its [`Detail`], and this file lays them
//! out. So a new kind of rows is a new widget beside this one, never a change here. The model is
//! plain data the view fills: selection, mode and scroll live in it (the view changes them on
//! keys), and `selected` indexes the [`entries`] the list shows, so the view and the widget always
//! agree on what is selected. Sections come in the order the view lists them; rows in the order
//! their section gives (a section sorts its own rows, and lays out its own tree).

use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Widget};

use crate::footer::{Piece, Role};
use crate::text::{first_line, shorten_path, truncate_end, width};
use crate::theme::Theme;

/// Fewest rows the dock takes (border, subtitle, one row, keys).
pub const MIN_HEIGHT: u16 = 6;

/// What the dock's body shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DockMode {
    #[default]
    List,
    /// The selected row. `scroll` is the first body line shown when not `follow`ing; following
    /// shows the newest lines as they arrive.
    Detail { scroll: usize, follow: bool },
}

/// The one-line message input that sits above the key hints while open.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SteerInput {
    /// The row the message goes to.
    pub target: String,
    /// What the prompt calls it (`explore h1a2`).
    pub label: String,
    pub text: String,
    /// In characters from the start of `text`.
    pub cursor: usize,
    /// Why the last send failed; shown under the input until the next key.
    pub error: Option<String>,
}

/// Everything the dock draws.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DockModel {
    /// In display order.
    pub sections: Vec<Section>,
    /// Index into [`entries`].
    pub selected: usize,
    pub mode: DockMode,
    /// Show finished rows that were cleared.
    pub show_history: bool,
    /// The first stop-all press happened; the next one stops everything.
    pub stop_all_armed: bool,
    /// The row whose action waits for a confirming second press.
    pub armed: Option<String>,
    /// The message input, while open.
    pub steer: Option<SteerInput>,
    /// Key hints (key, what it does) for the bottom line, from the keymap.
    pub keys: Vec<(String, String)>,
    /// One line of feedback above the keys ("Stopped build.", the stop-all warning).
    pub notice: Option<String>,
}

/// One capability's part of the list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Section {
    /// What the list's title calls it; the titles of every section are joined.
    pub title: String,
    /// What the subtitle calls its counts when other sections share the dock.
    pub label: String,
    pub summary: Summary,
    /// The list's line when the section has no rows at all.
    pub empty: String,
    /// The list's line when all its rows are hidden (history off).
    pub hidden: String,
    /// In display order.
    pub rows: Vec<Row>,
}

/// What a section adds to the list's subtitle.
#[derive(Clone, Debug, PartialEq)]
pub enum Summary {
    /// How many rows have each status label, in this order (the first even when none, the
    /// others when some), then how many are unseen: `2 running · 1 failed · 1 unseen`.
    Counts(&'static [&'static str]),
    /// Text the section makes itself (sums of what its rows carry).
    Text(String),
}

impl Default for Summary {
    fn default() -> Self {
        Summary::Text(String::new())
    }
}

/// Where a row is in its life, as the list shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// One column, in front of the name.
    pub glyph: &'static str,
    /// What [`Summary::Counts`] counts by (`running`).
    pub label: &'static str,
    /// The style of the glyph and the status text.
    pub role: Role,
}

impl Default for Status {
    fn default() -> Self {
        Status {
            glyph: " ",
            label: "",
            role: Role::Text,
        }
    }
}

/// One row of the list, and its detail. Times and sizes are display strings, so the widget
/// stays free of clocks and units.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    /// Unique in the dock; what the selection follows.
    pub id: String,
    pub status: Status,
    /// The status as the row says it (`failed exit 2`).
    pub status_text: String,
    pub name: String,
    /// Shown muted after the name (an id); the first thing a narrow dock leaves out. Empty for
    /// none.
    pub tag: String,
    /// The tree guide drawn before the glyph (`├─ `); empty for a flat list.
    pub guide: String,
    /// Tree depth (0 for a flat list): a cleared row stays while a row below it shows.
    pub depth: usize,
    /// Kept beside the status at any width but the narrowest (a cost).
    pub badge: Option<Piece>,
    /// Facts after the status, each added whole while it fits, most useful first.
    pub columns: Vec<Piece>,
    /// What it is doing now (a last output line), after a bar when at least 8 columns are left.
    pub trailing: Option<String>,
    pub fit: RowFit,
    /// Ended for good: it counts as not running, and once cleared it is history.
    pub finished: bool,
    /// Finished and not yet looked at.
    pub unseen: bool,
    /// Finished and cleared from the list: shown only with history on.
    pub cleared: bool,
    /// Listed as context for the rows below it (a parent above the rows it started): a dock
    /// opening selects past it, it never ticks, and its detail has nothing to read.
    pub context: bool,
    pub detail: Detail,
}

/// How a row gives way on a narrow dock: its tag goes first, when the name would get fewer than
/// `tag_room` columns; then its badge, when the name would get fewer than `name_min`; the name
/// keeps at least `name_min`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowFit {
    pub tag_room: usize,
    pub name_min: usize,
}

impl Default for RowFit {
    fn default() -> Self {
        RowFit {
            tag_room: 12,
            name_min: 12,
        }
    }
}

/// One row shown in detail.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Detail {
    /// The dock's title while it shows the row (`bg: build`).
    pub title: String,
    /// The line under the title (`b1 · live tail`).
    pub subtitle: String,
    /// Labelled facts above the body.
    pub fields: Vec<Field>,
    pub body: Body,
}

/// One labelled fact of a detail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub label: &'static str,
    pub value: Value,
    pub role: Role,
}

impl Field {
    pub fn text(label: &'static str, value: impl Into<String>, role: Role) -> Self {
        Field {
            label,
            value: Value::Text(value.into()),
            role,
        }
    }
}

/// A field's value, and how it gives way when it does not fit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// Cut at the end.
    Text(String),
    /// A path that gives up middle directories, with `suffix` (a size) kept whole.
    Path { path: String, suffix: String },
}

/// The scrollable part of a detail: an output tail, a transcript.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Body {
    /// What its heading calls it (`Output tail`).
    pub name: &'static str,
    /// The heading's words when there is nothing (`no output yet`).
    pub empty: String,
    /// Oldest first.
    pub paragraphs: Vec<Paragraph>,
}

/// One entry of a detail's body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paragraph {
    /// Put before its first line (a marker); the lines after it are indented as wide.
    pub head: &'static str,
    pub text: String,
    pub role: Role,
    pub fit: Fit,
}

/// How a paragraph fills the body's width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    /// One line, cut at the end (an output line).
    Cut,
    /// Wrapped at word boundaries; with a limit, the lines past it are summed up.
    Wrap { limit: Option<usize> },
}

/// One line of the list: a row, and the section it belongs to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Entry<'a> {
    /// Index into [`DockModel::sections`].
    pub section: usize,
    pub row: &'a Row,
}

/// What the list shows, in order: each section's visible rows. `selected` indexes this.
pub fn entries(model: &DockModel) -> Vec<Entry<'_>> {
    model
        .sections
        .iter()
        .enumerate()
        .flat_map(|(index, section)| {
            visible_rows(&section.rows, model.show_history)
                .into_iter()
                .map(move |row| Entry {
                    section: index,
                    row,
                })
        })
        .collect()
}

/// The selected entry, if any.
pub fn selected_entry(model: &DockModel) -> Option<Entry<'_>> {
    entries(model).get(model.selected).copied()
}

/// The rows of a section the list shows: everything with history on; otherwise rows that are
/// not finished, not yet cleared, or have a shown row below them (a cleared parent stays while
/// its children show, so a tree never loses a branch's root).
pub fn visible_rows(rows: &[Row], show_history: bool) -> Vec<&Row> {
    let mut shown = vec![false; rows.len()];
    // Walking backwards, `below[d]` says whether a shown row of depth d hangs under the row
    // about to be visited (at depth d - 1) — its subtree is exactly the rows already walked
    // since the last row at its depth or above.
    let mut below = vec![false; rows.iter().map(|row| row.depth).max().unwrap_or(0) + 2];
    for (index, row) in rows.iter().enumerate().rev() {
        let own = show_history || !row.finished || !row.cleared;
        let visible = own || below[row.depth + 1];
        shown[index] = visible;
        for flag in &mut below[row.depth + 1..] {
            *flag = false;
        }
        below[row.depth] |= visible;
    }
    rows.iter()
        .zip(shown)
        .filter_map(|(row, shown)| shown.then_some(row))
        .collect()
}

/// Rows the dock wants on a screen `screen_height` rows tall: about 40 % (half in detail, where
/// the body needs the room), at least [`MIN_HEIGHT`], never more than the screen.
pub fn dock_height(model: &DockModel, screen_height: u16) -> u16 {
    let share = match model.mode {
        DockMode::List => u32::from(screen_height) * 2 / 5,
        DockMode::Detail { .. } => u32::from(screen_height) / 2,
    };
    u16::try_from(share)
        .unwrap_or(u16::MAX)
        .max(MIN_HEIGHT)
        .min(screen_height)
}

/// The dock's area: the lower [`dock_height`] rows of `screen`, full width.
pub fn dock_area(model: &DockModel, screen: Rect) -> Rect {
    let height = dock_height(model, screen.height);
    Rect {
        y: screen.bottom() - height,
        height,
        ..screen
    }
}

/// How many list rows fit in a dock drawn into `area`.
pub fn list_capacity(model: &DockModel, area: Rect) -> usize {
    usize::from(area.height).saturating_sub(2 + chrome_rows(model))
}

/// How many body lines fit in a detail view drawn into `area`.
pub fn detail_tail_capacity(model: &DockModel, area: Rect) -> usize {
    let header = selected_entry(model).map_or(0, |entry| entry.row.detail.fields.len() + 1);
    usize::from(area.height).saturating_sub(2 + chrome_rows(model) + header)
}

/// The largest useful detail `scroll` in `area` (0 when the whole body fits).
pub fn max_detail_scroll(model: &DockModel, area: Rect) -> usize {
    let total = selected_entry(model).map_or(0, |entry| {
        lay_out(&entry.row.detail.body.paragraphs, text_width(area)).len()
    });
    total.saturating_sub(detail_tail_capacity(model, area))
}

/// Where the terminal cursor goes while the message input is open in a dock drawn into `area`
/// (`None` when it is closed or has no room).
pub fn steer_cursor(model: &DockModel, area: Rect) -> Option<Position> {
    let steer = model.steer.as_ref()?;
    if area.width < 3 || area.height < 3 {
        return None;
    }
    let inner_height = usize::from(area.height) - 2;
    // The input sits above the error, the notice and the keys, which fill the bottom rows.
    let below = 1 + usize::from(model.notice.is_some()) + usize::from(steer.error.is_some());
    let row = inner_height.checked_sub(below + 1)?;
    let (_, _, cursor_column) = steer_line_text(steer, text_width(area));
    if cursor_column > text_width(area) {
        return None;
    }
    Some(Position::new(
        area.x + 1 + PADDING as u16 + u16::try_from(cursor_column).ok()?,
        area.y + 1 + u16::try_from(row).ok()?,
    ))
}

/// Draw the dock into `area` (use [`dock_area`] to place it), over whatever is there.
pub fn render(model: &DockModel, theme: &Theme, area: Rect, buf: &mut Buffer) {
    // Below this there is no room for a border around one row; draw nothing rather than a
    // broken box.
    if area.width < 3 || area.height < 3 {
        return;
    }
    Clear.render(area, buf);
    let visible = entries(model);
    let detail = match (model.mode, visible.get(model.selected)) {
        (DockMode::Detail { scroll, follow }, Some(entry)) => {
            Some((&entry.row.detail, scroll, follow))
        }
        _ => None,
    };
    let inner_height = usize::from(area.height) - 2;
    let body_rows = inner_height.saturating_sub(chrome_rows(model));
    let text_width = text_width(area);
    let (title, subtitle, body, position) = match detail {
        Some((detail, scroll, follow)) => (
            detail.title.clone(),
            detail.subtitle.clone(),
            detail_lines(detail, scroll, follow, body_rows, text_width, theme),
            None,
        ),
        None => {
            let (body, position) = list_lines(model, &visible, body_rows, text_width, theme);
            (
                list_title(model),
                list_subtitle(model, visible.len()),
                body,
                position,
            )
        }
    };
    let mut block = Block::bordered()
        .border_style(theme.overlay_border)
        .style(theme.overlay_text)
        .title(Line::from(Span::styled(
            format!(
                " {} ",
                truncate_end(&title, usize::from(area.width).saturating_sub(4))
            ),
            theme.overlay_title,
        )));
    if let Some(position) = position {
        block = block.title_bottom(Line::from(position).right_aligned());
    }
    let inner = block.inner(area);
    block.render(area, buf);
    let text_area = Rect {
        x: inner.x + PADDING as u16,
        width: inner.width.saturating_sub(2 * PADDING as u16),
        ..inner
    };
    let mut lines = vec![Line::styled(
        truncate_end(&subtitle, text_width),
        theme.muted,
    )];
    lines.extend(body.into_iter().take(body_rows));
    lines.resize(1 + body_rows, Line::default());
    lines.extend(bottom_lines(model, text_width, theme));
    // On a very short dock the keys and the notice matter more than the subtitle and body.
    let skip = lines.len().saturating_sub(inner_height);
    for (offset, line) in lines.iter().skip(skip).enumerate() {
        buf.set_line(
            text_area.x,
            text_area.y + offset as u16,
            line,
            text_area.width,
        );
    }
}

/// Duration as the dock shows it: `12s`, `1m05s`, `2h03m`.
pub fn format_runtime(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
    }
}

/// `text` wrapped at word boundaries into lines of at most `max` columns (a word longer than a
/// line is cut across lines); newlines are kept, control characters become spaces.
pub fn wrap(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut out = Vec::new();
    for raw in text.lines() {
        let clean: String = raw
            .chars()
            .map(|ch| if ch.is_control() { ' ' } else { ch })
            .collect();
        // Most lines fit whole; measuring once is much cheaper than word by word.
        if width(&clean) <= max {
            out.push(clean);
            continue;
        }
        let mut line = String::new();
        let mut used = 0;
        for word in clean.split(' ') {
            let word_width = width(word);
            let sep = usize::from(!line.is_empty());
            if used + sep + word_width <= max {
                if sep == 1 {
                    line.push(' ');
                }
                line.push_str(word);
                used += sep + word_width;
                continue;
            }
            if !line.is_empty() {
                out.push(std::mem::take(&mut line));
                used = 0;
            }
            // The word alone, cut into line-sized pieces when it is longer than a line.
            for ch in word.chars() {
                let mut utf8 = [0u8; 4];
                let ch_width = width(ch.encode_utf8(&mut utf8));
                if used + ch_width > max && !line.is_empty() {
                    out.push(std::mem::take(&mut line));
                    used = 0;
                }
                line.push(ch);
                used += ch_width;
            }
        }
        out.push(line);
    }
    if out.is_empty() {
        out.push(String::new());
    }
    out
}

/// `1 turn`, `3 turns`.
pub fn plural(count: u64, one: &str, many: &str) -> String {
    if count == 1 {
        format!("1 {one}")
    } else {
        format!("{count} {many}")
    }
}

const PADDING: usize = 1;
/// Column label width in the detail view.
const LABEL_WIDTH: usize = 9;

/// Rows below the body: the message input and its error, the notice (when any) and the keys
/// line; plus the subtitle above it.
fn chrome_rows(model: &DockModel) -> usize {
    let steer = model
        .steer
        .as_ref()
        .map_or(0, |steer| 1 + usize::from(steer.error.is_some()));
    2 + usize::from(model.notice.is_some()) + steer
}

/// Columns for text inside a dock drawn into `area`.
fn text_width(area: Rect) -> usize {
    usize::from(area.width).saturating_sub(2 + 2 * PADDING)
}

/// The message line in `max_width` columns — its prompt, the part of the message shown — and
/// the cursor's column. A message longer than the room scrolls so the cursor stays in view; the
/// prompt gives up its end before the message gets less than 8 columns.
fn steer_line_text(steer: &SteerInput, max_width: usize) -> (String, String, usize) {
    let prompt = format!("steer {} › ", steer.label);
    let prompt = truncate_end(&prompt, max_width.saturating_sub(8).max(1));
    // The cursor may sit just after the last column of text (the padding column).
    let room = max_width.saturating_sub(width(&prompt)).max(1);
    let chars: Vec<char> = steer.text.chars().collect();
    let cursor = steer.cursor.min(chars.len());
    let mut start = 0;
    let column = |from: usize| -> usize {
        chars[from..cursor]
            .iter()
            .map(|ch| width(ch.encode_utf8(&mut [0u8; 4])))
            .sum()
    };
    while start < cursor && column(start) >= room {
        start += 1;
    }
    let mut shown = String::new();
    let mut used = 0;
    for ch in &chars[start..] {
        let w = width(ch.encode_utf8(&mut [0u8; 4]));
        if used + w > room {
            break;
        }
        used += w;
        shown.push(*ch);
    }
    let cursor_column = width(&prompt) + column(start);
    (prompt, shown, cursor_column)
}

/// The list's title: every section's, joined with `&`.
fn list_title(model: &DockModel) -> String {
    let titles: Vec<&str> = model.sections.iter().map(|s| s.title.as_str()).collect();
    titles.join(" & ")
}

/// The list's subtitle: each section's summary (its counts named after it when other sections
/// share the dock), then how much of the list is history.
fn list_subtitle(model: &DockModel, visible: usize) -> String {
    let shared = model.sections.len() > 1;
    let summaries: Vec<String> = model
        .sections
        .iter()
        .map(|section| section_summary(section, shared))
        .collect();
    let mut text = summaries.join(" │ ");
    let total: usize = model.sections.iter().map(|s| s.rows.len()).sum();
    let hidden = total.saturating_sub(visible);
    let history = if model.show_history {
        Some("history shown".to_owned())
    } else {
        (hidden > 0).then(|| format!("{hidden} in history"))
    };
    if let Some(history) = history {
        if !text.is_empty() {
            text.push_str(" · ");
        }
        text.push_str(&history);
    }
    text
}

fn section_summary(section: &Section, shared: bool) -> String {
    let labels = match &section.summary {
        Summary::Text(text) => return text.clone(),
        Summary::Counts(labels) => labels,
    };
    let count = |label: &str| {
        section
            .rows
            .iter()
            .filter(|row| row.status.label == label)
            .count()
    };
    let mut parts = Vec::new();
    for (index, label) in labels.iter().enumerate() {
        let n = count(label);
        if index == 0 || n > 0 {
            parts.push(format!("{n} {label}"));
        }
    }
    let unseen = section.rows.iter().filter(|row| row.unseen).count();
    if unseen > 0 {
        parts.push(format!("{unseen} unseen"));
    }
    let counts = parts.join(" · ");
    if shared {
        format!("{} {counts}", section.label)
    } else {
        counts
    }
}

/// The lines under the body: the message input and its error, the notice, the key hints.
fn bottom_lines(model: &DockModel, text_width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    if let Some(steer) = &model.steer {
        let (prompt, shown, _) = steer_line_text(steer, text_width);
        lines.push(Line::from(vec![
            Span::styled(prompt, theme.accent),
            Span::raw(shown),
        ]));
        if let Some(error) = &steer.error {
            lines.push(Line::styled(
                truncate_end(&format!("✗ {}", first_line(error)), text_width),
                theme.error,
            ));
        }
    }
    if let Some(notice) = &model.notice {
        let style = if model.stop_all_armed || model.armed.is_some() {
            theme.warning
        } else {
            theme.accent
        };
        lines.push(Line::styled(
            truncate_end(&first_line(notice), text_width),
            style,
        ));
    }
    lines.push(keys_line(&model.keys, text_width, theme));
    lines
}

/// The hints that fit, whole: the last one (how to leave: "Esc close" / "Esc back") always
/// stays, the ones before it as many as fit in order.
fn keys_line(keys: &[(String, String)], max_width: usize, theme: &Theme) -> Line<'static> {
    let piece = |index: usize, (key, what): &(String, String)| {
        let sep = if index == 0 { 0 } else { width(" · ") };
        sep + width(key) + 1 + width(what)
    };
    let Some((last, rest)) = keys.split_last() else {
        return Line::default();
    };
    let reserved = piece(usize::from(!rest.is_empty()), last);
    let mut shown: Vec<&(String, String)> = Vec::new();
    let mut used = 0;
    for (index, hint) in rest.iter().enumerate() {
        let needed = piece(index, hint);
        // Whole hints only: a hint cut in half reads as a different key.
        if used + needed + reserved > max_width {
            break;
        }
        used += needed;
        shown.push(hint);
    }
    if used + reserved <= max_width || shown.is_empty() {
        shown.push(last);
    }
    let mut spans = Vec::new();
    for (index, (key, what)) in shown.into_iter().enumerate() {
        if index > 0 {
            spans.push(Span::styled(" · ", theme.muted));
        }
        spans.push(Span::styled(key.clone(), theme.overlay_key));
        spans.push(Span::styled(format!(" {what}"), theme.muted));
    }
    Line::from(spans)
}

/// The list body and the position marker (when the rows do not all fit).
fn list_lines(
    model: &DockModel,
    visible: &[Entry<'_>],
    capacity: usize,
    max_width: usize,
    theme: &Theme,
) -> (Vec<Line<'static>>, Option<String>) {
    if visible.is_empty() {
        let lines = model
            .sections
            .iter()
            .map(|section| {
                let text = if section.rows.is_empty() {
                    &section.empty
                } else {
                    &section.hidden
                };
                Line::styled(truncate_end(text, max_width), theme.muted)
            })
            .collect();
        return (lines, None);
    }
    let selected = model.selected.min(visible.len() - 1);
    // The window keeps the selection on screen, scrolling only as far as needed.
    let first = (selected + 1).saturating_sub(capacity.max(1));
    let lines = visible
        .iter()
        .enumerate()
        .skip(first)
        .take(capacity)
        .map(|(index, entry)| list_row(entry.row, index == selected, max_width, theme))
        .collect();
    let position = (visible.len() > capacity && capacity > 0).then(|| {
        let last = (first + capacity).min(visible.len());
        format!(" {}-{}/{} ", first + 1, last, visible.len())
    });
    (lines, position)
}

/// One row of the list: marker, unseen dot, tree guide, glyph, name, tag, status and badge, then
/// the columns that still fit, then the trailing line. The name gets what is left after the
/// fixed parts, but never less than its minimum: the tag goes first, then the badge, and the
/// columns are added whole, so a narrow dock drops facts rather than cutting them.
fn list_row(row: &Row, selected: bool, max_width: usize, theme: &Theme) -> Line<'static> {
    let status_style = row.status.role.style(theme);
    let marker = if selected { "› " } else { "  " };
    let unseen = if row.unseen { "● " } else { "  " };
    let mut tag = if row.tag.is_empty() {
        String::new()
    } else {
        format!(" {}", row.tag)
    };
    let mut badge = row
        .badge
        .as_ref()
        .map(|badge| (format!(" · {}", badge.text), badge.role));
    let badge_width = badge.as_ref().map_or(0, |(text, _)| width(text));
    let mut fixed = width(marker)
        + width(unseen)
        + width(&row.guide)
        + 2
        + width(&tag)
        + 3
        + width(&row.status_text)
        + badge_width;
    if fixed + row.fit.tag_room > max_width {
        fixed -= width(&tag);
        tag.clear();
    }
    if fixed + row.fit.name_min > max_width {
        fixed -= badge_width;
        badge = None;
    }
    let wanted = max_width.saturating_sub(fixed).max(row.fit.name_min);
    let name = truncate_end(&row.name, wanted.min(width(&row.name)));
    let mut spans = vec![
        Span::raw(marker),
        Span::styled(unseen, theme.accent),
        Span::styled(row.guide.clone(), theme.muted),
        Span::styled(format!("{} ", row.status.glyph), status_style),
        Span::styled(name, theme.accent),
        Span::styled(tag, theme.muted),
        Span::raw(" · "),
        Span::styled(row.status_text.clone(), status_style),
    ];
    if let Some((badge, role)) = badge {
        spans.push(Span::styled(badge, role.style(theme)));
    }
    let mut used: usize = spans.iter().map(Span::width).sum();
    for column in &row.columns {
        let piece = format!(" · {}", column.text);
        if used + width(&piece) > max_width {
            break;
        }
        used += width(&piece);
        spans.push(Span::styled(piece, column.role.style(theme)));
    }
    if let Some(trailing) = row.trailing.as_deref().filter(|text| !text.is_empty()) {
        let room = max_width.saturating_sub(used + 3);
        if room >= 8 {
            spans.push(Span::styled(" │ ", theme.muted));
            spans.push(Span::styled(truncate_end(trailing, room), theme.muted));
        }
    }
    let mut line = Line::from(spans);
    if selected {
        line = line.patch_style(Style::new().add_modifier(Modifier::REVERSED));
    }
    line
}

/// The detail body: the fields, the body's heading, the part of the body that fits.
fn detail_lines(
    detail: &Detail,
    scroll: usize,
    follow: bool,
    body_rows: usize,
    max_width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let value_width = max_width.saturating_sub(LABEL_WIDTH);
    let mut lines: Vec<Line<'static>> = detail
        .fields
        .iter()
        .map(|field| {
            let value = match &field.value {
                Value::Text(text) => truncate_end(text, value_width),
                Value::Path { path, suffix } => {
                    let room = value_width.saturating_sub(width(suffix));
                    truncate_end(
                        &format!("{}{suffix}", shorten_path(path, room)),
                        value_width,
                    )
                }
            };
            Line::from(vec![
                Span::styled(
                    format!("{:<LABEL_WIDTH$}", format!("{}:", field.label)),
                    theme.muted,
                ),
                Span::styled(value, field.role.style(theme)),
            ])
        })
        .collect();
    let capacity = body_rows.saturating_sub(lines.len() + 1);
    let shown = lay_out(&detail.body.paragraphs, max_width);
    let total = shown.len();
    let max_first = total.saturating_sub(capacity);
    let first = if follow {
        max_first
    } else {
        scroll.min(max_first)
    };
    let heading = body_heading(&detail.body, first, capacity, total, follow);
    lines.push(Line::styled(truncate_end(&heading, max_width), theme.muted));
    lines.extend(shown.into_iter().skip(first).take(capacity).map(|line| {
        let (text, role) = match line {
            Shown::Whole(paragraph) => (
                format!("{}{}", paragraph.head, paragraph.text),
                paragraph.role,
            ),
            Shown::Part(role, text) => (text, role),
        };
        Line::styled(truncate_end(&text, max_width), role.style(theme))
    }));
    lines
}

/// The body's heading: what is shown of how much.
fn body_heading(body: &Body, first: usize, capacity: usize, total: usize, follow: bool) -> String {
    let name = body.name;
    if total == 0 {
        format!("{name}: {}", body.empty)
    } else if follow {
        format!("{name}: following · {total} lines")
    } else {
        let last = (first + capacity).min(total);
        format!(
            "{name}: lines {}–{last} of {total} · End follows",
            first + 1
        )
    }
}

/// One display line of a detail's body.
enum Shown<'a> {
    /// A paragraph that is one line (made only when it is on screen).
    Whole(&'a Paragraph),
    /// One line of a wrapped paragraph.
    Part(Role, String),
}

/// The body as display lines `max_width` wide: each paragraph cut or wrapped, with its head on
/// its first line and its continuation indented; a limited one summed up past its limit.
/// Counting these is what scrolling works in.
fn lay_out(paragraphs: &[Paragraph], max_width: usize) -> Vec<Shown<'_>> {
    let mut out = Vec::new();
    for paragraph in paragraphs {
        let limit = match paragraph.fit {
            Fit::Cut => {
                out.push(Shown::Whole(paragraph));
                continue;
            }
            Fit::Wrap { limit } => limit,
        };
        let head = paragraph.head;
        let indent = " ".repeat(width(head));
        let room = max_width.saturating_sub(width(head)).max(1);
        let mut lines = wrap(&paragraph.text, room);
        if let Some(limit) = limit
            && lines.len() > limit
        {
            let more = lines.len() - limit;
            lines.truncate(limit);
            lines.push(format!(
                "… {}",
                plural(more as u64, "more line", "more lines")
            ));
        }
        for (index, line) in lines.into_iter().enumerate() {
            let lead = if index == 0 { head } else { &indent };
            out.push(Shown::Part(paragraph.role, format!("{lead}{line}")));
        }
    }
    out
}

/// The body's display lines as text (what scrolling counts).
#[cfg(test)]
pub(crate) fn laid_out(paragraphs: &[Paragraph], max_width: usize) -> Vec<String> {
    lay_out(paragraphs, max_width)
        .into_iter()
        .map(|line| match line {
            Shown::Whole(paragraph) => format!("{}{}", paragraph.head, paragraph.text),
            Shown::Part(_, text) => text,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::footer::ProgramState;
    use crate::test_support::render_to_string;

    /// A kind of rows the dock has never heard of: file watches, one section of its own, with
    /// a badge, columns and a wrapped body.
    fn watch(id: &str, name: &str, firing: bool) -> Row {
        let (glyph, label, role) = if firing {
            ("◉", "firing", Role::Status(ProgramState::Working))
        } else {
            ("○", "quiet", Role::Status(ProgramState::Idle))
        };
        Row {
            id: id.to_owned(),
            status: Status { glyph, label, role },
            status_text: label.to_owned(),
            name: name.to_owned(),
            tag: id.to_owned(),
            badge: Some(Piece {
                text: "3 hits".to_owned(),
                role: Role::Accent,
            }),
            columns: vec![Piece {
                text: "src/**/*.rs".to_owned(),
                role: Role::Muted,
            }],
            trailing: firing.then(|| "src/pane/pty.rs changed".to_owned()),
            finished: !firing,
            unseen: !firing,
            detail: Detail {
                title: format!("watch: {name}"),
                subtitle: format!("{id} · events"),
                fields: vec![
                    Field::text("Status", label, role),
                    Field {
                        label: "Root",
                        value: Value::Path {
                            path: "/home/ada/project/src/pane".to_owned(),
                            suffix: " (4 files)".to_owned(),
                        },
                        role: Role::Text,
                    },
                ],
                body: Body {
                    name: "Events",
                    empty: "none yet".to_owned(),
                    paragraphs: (1..=4)
                        .map(|n| Paragraph {
                            head: "• ",
                            text: format!(
                                "event {n}: a file changed and the watch ran its command"
                            ),
                            role: Role::Text,
                            fit: Fit::Wrap { limit: Some(1) },
                        })
                        .collect(),
                },
            },
            ..Row::default()
        }
    }

    fn watches() -> Section {
        Section {
            title: "watches".to_owned(),
            label: "watches".to_owned(),
            summary: Summary::Counts(&["firing", "quiet"]),
            empty: "No watches.".to_owned(),
            hidden: "No firing watches.".to_owned(),
            rows: vec![
                watch("w1", "rebuild on save", true),
                watch("w2", "docs", false),
            ],
        }
    }

    /// A second kind, flat and plain, to share the dock with.
    fn notes() -> Section {
        Section {
            title: "notes".to_owned(),
            label: "notes".to_owned(),
            summary: Summary::Text("1 note".to_owned()),
            rows: vec![Row {
                id: "n1".to_owned(),
                status_text: "kept".to_owned(),
                name: "remember the resize".to_owned(),
                ..Row::default()
            }],
            ..Section::default()
        }
    }

    fn snapshot(model: &DockModel, width: u16, height: u16) -> String {
        render_to_string(width, height, |area, buf| {
            render(model, &Theme::plain(), dock_area(model, area), buf);
        })
    }

    #[test]
    fn a_new_kind_of_rows_is_drawn_without_the_dock_knowing_it() {
        let mut model = DockModel {
            sections: vec![watches(), notes()],
            keys: vec![("Esc".to_owned(), "close".to_owned())],
            ..DockModel::default()
        };
        let text = snapshot(&model, 80, 20);
        crate::assert_ui_snapshot!("dock_third_kind_list", text);
        assert!(text.contains("┌ watches & notes "), "{text}");
        assert!(
            text.contains("watches 1 firing · 1 quiet · 1 unseen │ 1 note"),
            "{text}"
        );
        let first = entries(&model)
            .iter()
            .map(|entry| (entry.section, entry.row.id.as_str()))
            .collect::<Vec<_>>()
            .first()
            .copied();
        assert_eq!(first, Some((0, "w1")));
        model.mode = DockMode::Detail {
            scroll: 0,
            follow: true,
        };
        let text = snapshot(&model, 44, 30);
        crate::assert_ui_snapshot!("dock_third_kind_detail", text);
        assert!(text.contains("Events: following · 8 lines"), "{text}");
        // Header (2 fields) and heading above the body, as for any kind.
        let area = dock_area(&model, Rect::new(0, 0, 44, 30));
        assert_eq!(detail_tail_capacity(&model, area), 15 - 2 - 2 - 3);
    }

    #[test]
    fn narrow_rows_give_up_the_tag_then_the_badge() {
        let row = watch("w1", "rebuild on save", true);
        let text = |max_width: usize| -> String {
            list_row(&row, false, max_width, &Theme::plain())
                .spans
                .iter()
                .map(|span| span.content.as_ref())
                .collect()
        };
        // (width, the row): the columns and trailing line go first, then the name shortens
        // down to what leaves its minimum; then the tag goes, then the badge.
        let cases = [
            (
                84,
                "    ◉ rebuild on save w1 · firing · 3 hits · src/**/*.rs │ src/pane/pty.rs changed",
            ),
            (44, "    ◉ rebuild on save w1 · firing · 3 hits"),
            (40, "    ◉ rebuild on s… w1 · firing · 3 hits"),
            (36, "    ◉ rebuild on … · firing · 3 hits"),
            (34, "    ◉ rebuild on save · firing"),
            (20, "    ◉ rebuild on … · firing"),
        ];
        for (max_width, want) in cases {
            assert_eq!(text(max_width), want, "at {max_width}");
        }
    }

    #[test]
    fn height_is_a_share_of_the_screen_with_a_minimum() {
        let mut model = DockModel::default();
        assert_eq!(dock_height(&model, 50), 20);
        assert_eq!(dock_height(&model, 10), MIN_HEIGHT);
        assert_eq!(dock_height(&model, 4), 4);
        model.mode = DockMode::Detail {
            scroll: 0,
            follow: true,
        };
        assert_eq!(dock_height(&model, 50), 25);
        let area = dock_area(&model, Rect::new(0, 2, 80, 50));
        assert_eq!(area, Rect::new(0, 27, 80, 25));
    }

    #[test]
    fn long_steer_text_scrolls_to_keep_the_cursor() {
        let steer = SteerInput {
            label: "explore h1".to_owned(),
            text: "x".repeat(100),
            cursor: 100,
            ..SteerInput::default()
        };
        let (prompt, shown, column) = steer_line_text(&steer, 40);
        assert_eq!(prompt, "steer explore h1 › ");
        assert_eq!(width(&prompt) + width(&shown), 39);
        assert_eq!(column, 39);
        let start = SteerInput { cursor: 0, ..steer };
        assert_eq!(steer_line_text(&start, 40).2, width("steer explore h1 › "));
    }

    #[test]
    fn wrap_table() {
        let cases: [(&str, usize, &[&str]); 6] = [
            ("", 10, &[""]),
            ("short", 10, &["short"]),
            ("one two three four", 9, &["one two", "three", "four"]),
            ("abcdefghijkl", 5, &["abcde", "fghij", "kl"]),
            ("a\nb c", 3, &["a", "b c"]),
            ("tab\there", 20, &["tab here"]),
        ];
        for (text, max, want) in cases {
            assert_eq!(wrap(text, max), want, "{text:?} at {max}");
        }
    }
}

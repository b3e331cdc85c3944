//! The `/unipi:info` dashboard: the box of [`crate::info`] with a tab per group — the
//! workbench's own page (modules, versions, paths), usage and cost, each capability's figures,
//! Pi's extensions and skills — and a tab bar on top that scrolls sideways to keep the active tab
//! in sight. A group is a title and rows (a label, a value, and detail lines under the value),
//! so a capability says what it has to say without drawing anything.
//!
//! The box keeps one size whatever the tab (the widest the screen allows up to 100 columns, as
//! tall as the longest tab), so switching tabs never makes it jump; the active tab's rows scroll
//! under the tab bar.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

use crate::info::{InfoModel, TITLE, wrap};
use crate::overlay::{BORDER, centred_box, frame, text_width};
use crate::text::{truncate_end, width};
use crate::theme::Theme;

/// One figure of a group: `label  value`, then detail lines under the value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InfoRow {
    pub label: String,
    pub value: String,
    pub detail: Vec<String>,
}

impl InfoRow {
    pub fn new(label: impl Into<String>, value: impl Into<String>) -> Self {
        InfoRow {
            label: label.into(),
            value: value.into(),
            detail: Vec::new(),
        }
    }

    /// The row with one more detail line.
    pub fn detail(mut self, line: impl Into<String>) -> Self {
        self.detail.push(line.into());
        self
    }
}

/// A tab of the dashboard: an id (settings name it), a title and its rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InfoGroup {
    pub id: String,
    pub title: String,
    pub rows: Vec<InfoRow>,
}

/// What a tab shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DashboardTab {
    /// The workbench's own page (modules, versions, paths).
    Workbench(InfoModel),
    Group(InfoGroup),
}

impl DashboardTab {
    pub fn title(&self) -> &str {
        match self {
            DashboardTab::Workbench(_) => "Workbench",
            DashboardTab::Group(group) => &group.title,
        }
    }

    /// Its content rows at `text_width` columns.
    fn lines(&self, text_width: usize, theme: &Theme) -> Vec<Line<'static>> {
        match self {
            DashboardTab::Workbench(model) => model.content_lines(text_width, theme),
            DashboardTab::Group(group) => group_lines(group, text_width, theme),
        }
    }
}

/// What the dashboard shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DashboardModel {
    pub tabs: Vec<DashboardTab>,
    /// The tab shown (clamped to the tabs).
    pub active: usize,
    /// First content row of the active tab shown.
    pub scroll: usize,
}

/// The widest the box gets.
const MAX_WIDTH: u16 = 100;
/// Rows above a tab's content: the tab bar and a rule.
const HEAD_ROWS: usize = 2;
/// Indent of a group's rows.
const INDENT: usize = 2;
/// Gap between a label and its value.
const GAP: usize = 2;

/// Where the box goes on `screen`.
pub fn dashboard_area(model: &DashboardModel, screen: Rect) -> Rect {
    centred_box(screen, MAX_WIDTH, |box_width| {
        let text = text_width(box_width);
        let theme = Theme::plain();
        let longest = model
            .tabs
            .iter()
            .map(|tab| tab.lines(text, &theme).len())
            .max()
            .unwrap_or(1);
        longest.max(1) + HEAD_ROWS
    })
}

/// The largest useful `scroll` of the active tab on `screen`.
pub fn dashboard_max_scroll(model: &DashboardModel, screen: Rect) -> usize {
    let area = dashboard_area(model, screen);
    let Some(tab) = model.tabs.get(active(model)) else {
        return 0;
    };
    let rows = tab.lines(text_width(area.width), &Theme::plain()).len();
    rows.saturating_sub(visible_rows(area))
}

/// Draws the dashboard centred on `screen` with `hint` on its bottom border.
pub fn render_dashboard(
    model: &DashboardModel,
    hint: &str,
    theme: &Theme,
    screen: Rect,
    buf: &mut Buffer,
) {
    let area = dashboard_area(model, screen);
    if area.width < 2 * (BORDER as u16 + 1) + 1 || area.height < 2 * BORDER as u16 + 1 {
        return;
    }
    Clear.render(area, buf);
    let inner = frame(TITLE, hint, 0, 0, theme, area, buf);
    let text = usize::from(inner.width);
    let bar = tab_bar(model, text, theme);
    buf.set_line(inner.x, inner.y, &bar, inner.width);
    if inner.height > 1 {
        let rule = Line::styled("─".repeat(text), theme.overlay_border);
        buf.set_line(inner.x, inner.y + 1, &rule, inner.width);
    }
    let Some(tab) = model.tabs.get(active(model)) else {
        if inner.height > 2 {
            let none = Line::styled("  No groups to show.", theme.muted);
            buf.set_line(inner.x, inner.y + 2, &none, inner.width);
        }
        return;
    };
    let lines = tab.lines(text, theme);
    let visible = visible_rows(area);
    let first = model.scroll.min(lines.len().saturating_sub(visible));
    for (row, line) in lines.iter().skip(first).take(visible).enumerate() {
        let y = inner.y + (HEAD_ROWS + row) as u16;
        buf.set_line(inner.x, y, line, inner.width);
    }
    if lines.len() > visible {
        let last = (first + visible).min(lines.len());
        let marker = format!(" {}-{}/{} ", first + 1, last, lines.len());
        let x = (area.right().saturating_sub(1 + width(&marker) as u16)).max(area.x);
        buf.set_string(x, area.bottom() - 1, marker, theme.overlay_border);
    }
}

fn active(model: &DashboardModel) -> usize {
    model.active.min(model.tabs.len().saturating_sub(1))
}

fn visible_rows(area: Rect) -> usize {
    usize::from(area.height).saturating_sub(2 * BORDER + HEAD_ROWS)
}

/// The tab bar: ` 1 Usage │ 2 MCP …`, scrolled so the active tab shows, with `◀`/`▶` where tabs
/// are cut off.
fn tab_bar(model: &DashboardModel, max: usize, theme: &Theme) -> Line<'static> {
    let labels: Vec<String> = model
        .tabs
        .iter()
        .enumerate()
        .map(|(i, tab)| match i {
            0..9 => format!(" {} {} ", i + 1, tab.title()),
            _ => format!(" {} ", tab.title()),
        })
        .collect();
    let active = active(model);
    // From the active tab leftwards while it fits (room kept for the arrows), then rightwards.
    let room = max.saturating_sub(4);
    let (mut first, mut used) = (active, labels.get(active).map_or(0, |l| width(l)));
    while first > 0 && used + 1 + width(&labels[first - 1]) <= room {
        first -= 1;
        used += 1 + width(&labels[first]);
    }
    let mut last = active;
    while last + 1 < labels.len() && used + 1 + width(&labels[last + 1]) <= room {
        last += 1;
        used += 1 + width(&labels[last]);
    }
    let mut spans = Vec::new();
    if first > 0 {
        spans.push(Span::styled("◀ ", theme.muted));
    }
    for (i, label) in labels.iter().enumerate().take(last + 1).skip(first) {
        if i > first {
            spans.push(Span::styled("│", theme.overlay_border));
        }
        let style = if i == active {
            theme.overlay_title.add_modifier(Modifier::REVERSED)
        } else {
            theme.muted
        };
        spans.push(Span::styled(truncate_end(label, max), style));
    }
    if last + 1 < labels.len() {
        spans.push(Span::styled(" ▶", theme.muted));
    }
    Line::from(spans)
}

/// A group's rows: labels in a column (at most a third of the row), values wrapped beside them,
/// detail lines wrapped under the value in the muted style.
fn group_lines(group: &InfoGroup, max: usize, theme: &Theme) -> Vec<Line<'static>> {
    if group.rows.is_empty() {
        return vec![Line::styled("  Nothing to show.", theme.muted)];
    }
    let label_width = group
        .rows
        .iter()
        .map(|row| width(&row.label))
        .max()
        .unwrap_or(0)
        .min(max / 3);
    let column = INDENT + label_width + GAP;
    let room = max.saturating_sub(column);
    let mut lines = Vec::new();
    for row in &group.rows {
        let label = truncate_end(&row.label, label_width);
        let pad = " ".repeat(label_width - width(&label) + GAP);
        for (i, part) in wrap(&row.value, room).into_iter().enumerate() {
            let head = if i == 0 {
                format!("{}{label}{pad}", " ".repeat(INDENT))
            } else {
                " ".repeat(column)
            };
            lines.push(Line::from(vec![
                Span::styled(head, theme.overlay_key),
                Span::styled(part, Style::new().add_modifier(Modifier::BOLD)),
            ]));
        }
        for detail in &row.detail {
            for part in wrap(detail, room) {
                lines.push(Line::from(vec![
                    Span::raw(" ".repeat(column)),
                    Span::styled(part, theme.muted),
                ]));
            }
        }
    }
    lines
}

#[cfg(test)]
#[path = "dashboard_tests.rs"]
mod tests;

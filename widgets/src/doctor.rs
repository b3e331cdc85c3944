//! The `/unipi:doctor` overlay: one row per check — its status (ok, warning, broken), what was
//! checked, what was found, and the one-line fix under it — with the totals on top. The same rows
//! `unipi-tui doctor` prints; the box scrolls when they do not fit.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::overlay::{BORDER, centred_box, render_scrolled, text_width};
use crate::text::{truncate_end, width, wrap};
use crate::theme::Theme;

/// The widest the box gets.
const MAX_WIDTH: u16 = 120;
/// The status column (`broken` and a space).
const STATUS_WIDTH: usize = 9;
/// The widest the name column gets.
const NAME_MAX: usize = 16;

/// How one check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DoctorStatus {
    Ok,
    /// Unavailable here or worth a look; the workbench runs all the same.
    Warning,
    /// Something the user configured or needs does not work.
    Broken,
}

impl DoctorStatus {
    /// `ok`, `warning` or `broken`.
    pub fn word(self) -> &'static str {
        match self {
            DoctorStatus::Ok => "ok",
            DoctorStatus::Warning => "warning",
            DoctorStatus::Broken => "broken",
        }
    }
}

/// One check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DoctorRow {
    pub status: DoctorStatus,
    /// What was checked (`Pi`, `Node`, `config`, `MCP github` …).
    pub name: String,
    /// What was found.
    pub detail: String,
    /// What to do about it, one line; `None` when nothing needs doing.
    pub fix: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DoctorModel {
    pub rows: Vec<DoctorRow>,
    /// First content row shown.
    pub scroll: usize,
}

impl DoctorModel {
    /// How many rows have `status`.
    pub fn count(&self, status: DoctorStatus) -> usize {
        self.rows.iter().filter(|row| row.status == status).count()
    }

    /// `1 broken · 2 warnings · 9 ok`.
    pub fn totals(&self) -> String {
        let warnings = self.count(DoctorStatus::Warning);
        format!(
            "{} broken · {} warning{} · {} ok",
            self.count(DoctorStatus::Broken),
            warnings,
            if warnings == 1 { "" } else { "s" },
            self.count(DoctorStatus::Ok)
        )
    }
}

/// Where the box goes on `screen`: centred, as wide as the screen allows up to 120 columns, as
/// tall as its rows.
pub fn doctor_area(model: &DoctorModel, screen: Rect) -> Rect {
    centred_box(screen, MAX_WIDTH, |width| {
        lines(model, text_width(width), &Theme::plain()).len()
    })
}

/// The largest useful `scroll` on `screen`.
pub fn max_scroll(model: &DoctorModel, screen: Rect) -> usize {
    let area = doctor_area(model, screen);
    let visible = usize::from(area.height).saturating_sub(2 * BORDER);
    lines(model, text_width(area.width), &Theme::plain())
        .len()
        .saturating_sub(visible)
}

/// Draws the box; `hint` (the key that closes it) goes on its bottom border.
pub fn render(model: &DoctorModel, hint: &str, theme: &Theme, screen: Rect, buf: &mut Buffer) {
    let area = doctor_area(model, screen);
    let lines = lines(model, text_width(area.width), theme);
    render_scrolled(
        "unipi-tui doctor",
        hint,
        &lines,
        model.scroll,
        theme,
        area,
        buf,
    );
}

/// The totals, a blank row, then each check: status, name and the detail wrapped beside them,
/// the fix (if any) under the detail.
fn lines(model: &DoctorModel, max: usize, theme: &Theme) -> Vec<Line<'static>> {
    let name_width = model
        .rows
        .iter()
        .map(|row| width(&row.name))
        .max()
        .unwrap_or(0)
        .min(NAME_MAX)
        + 1;
    let indent = STATUS_WIDTH + name_width;
    let room = max.saturating_sub(indent).max(10);
    let mut out = vec![Line::from(Span::styled(
        model.totals(),
        theme.overlay_title,
    ))];
    out.push(Line::default());
    for row in &model.rows {
        let style = status_style(row.status, theme);
        for (index, text) in wrap(&row.detail, room).into_iter().enumerate() {
            let lead = if index == 0 {
                vec![
                    Span::styled(format!("{:<STATUS_WIDTH$}", row.status.word()), style),
                    Span::styled(
                        format!(
                            "{:<name_width$}",
                            truncate_end(&row.name, name_width.saturating_sub(1))
                        ),
                        theme.overlay_key,
                    ),
                ]
            } else {
                vec![Span::raw(" ".repeat(indent))]
            };
            let mut spans = lead;
            spans.push(Span::styled(text, theme.overlay_text));
            out.push(Line::from(spans));
        }
        if let Some(fix) = &row.fix {
            let lead = "fix: ";
            for (index, text) in wrap(fix, room.saturating_sub(lead.len()))
                .into_iter()
                .enumerate()
            {
                let mark = if index == 0 { lead } else { "     " };
                out.push(Line::from(vec![
                    Span::raw(" ".repeat(indent)),
                    Span::styled(mark, theme.muted),
                    Span::styled(text, theme.overlay_text),
                ]));
            }
        }
    }
    out
}

fn status_style(status: DoctorStatus, theme: &Theme) -> Style {
    match status {
        DoctorStatus::Ok => theme.status_done,
        DoctorStatus::Warning => theme.warning,
        DoctorStatus::Broken => theme.error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::render_to_string;

    fn row(status: DoctorStatus, name: &str, detail: &str, fix: Option<&str>) -> DoctorRow {
        DoctorRow {
            status,
            name: name.to_owned(),
            detail: detail.to_owned(),
            fix: fix.map(str::to_owned),
        }
    }

    #[test]
    fn totals_count_each_status() {
        let model = DoctorModel {
            rows: vec![
                row(DoctorStatus::Ok, "Pi", "found", None),
                row(DoctorStatus::Warning, "D-Bus", "none", Some("start one")),
                row(DoctorStatus::Broken, "config", "bad", Some("fix it")),
                row(DoctorStatus::Ok, "Node", "22", None),
            ],
            ..DoctorModel::default()
        };
        assert_eq!(model.totals(), "1 broken · 1 warning · 2 ok");
    }

    #[test]
    fn a_long_detail_wraps_under_itself_and_the_fix_follows() {
        let model = DoctorModel {
            rows: vec![row(
                DoctorStatus::Broken,
                "config",
                "/home/ada/.unipi/config/tasks.json:3:14: expected a number for `maxOutputBytes`, \
                 found a string",
                Some("correct /home/ada/.unipi/config/tasks.json:3:14"),
            )],
            scroll: 0,
        };
        let screen = render_to_string(60, 12, |area, buf| {
            render(&model, "Esc close", &Theme::plain(), area, buf);
        });
        assert!(screen.contains("broken   config"), "{screen}");
        assert!(screen.contains("fix: correct"), "{screen}");
        assert!(screen.contains("1 broken · 0 warnings · 0 ok"), "{screen}");
    }
}

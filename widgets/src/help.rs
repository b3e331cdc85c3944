//! The help overlay: a centred, bordered box that lists the workbench's key bindings (key →
//! what it does), says that every other key goes to Pi, and shows where the log file is. It
//! sizes itself to its content and shrinks to whatever the terminal offers; when the rows do not
//! fit it shows a window starting at `scroll`, a position marker and the scroll keys in the bottom
//! border, so the view that owns it can page through (the full list is far taller than a
//! terminal). A section can be found by its title ([`HelpModel::section_line`]), so the help can
//! open at the keys of the view the user was in.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

use crate::text::{shorten_path, truncate_end, width};
use crate::theme::Theme;

/// The box's title.
pub const TITLE: &str = "unipi-tui keys";
/// The line that tells the user where all the other keys go.
pub const PASS_THROUGH_NOTE: &str = "Every other key goes to Pi.";

/// What the help overlay lists. `bindings` are display strings, e.g. ("Shift+PgUp", "Scroll the
/// pane up one page"), in the order to show them; `sections` follow them under their titles (the
/// `/unipi:*` commands, each view's keys).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HelpModel {
    pub bindings: Vec<(String, String)>,
    pub sections: Vec<HelpSection>,
    /// The key that closes the overlay, shown on its bottom border ("Esc close").
    pub hint: String,
    /// The keys that scroll it, most useful first (`↑↓`, `PgUp`, `PgDn`, `Home`, `End`): when
    /// the rows do not all fit, the border shows as many as it has room for before `hint`
    /// ("↑↓ PgUp PgDn Home End scroll · Esc close").
    pub scroll_keys: Vec<String>,
    /// The log file the workbench writes; shown so a user can find it when reporting a problem.
    pub log_path: String,
    /// First content row shown when the box is shorter than its content.
    pub scroll: usize,
}

/// A titled group of rows after the workbench's own bindings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HelpSection {
    pub title: String,
    /// (keys or command, what it does).
    pub rows: Vec<(String, String)>,
}

impl HelpModel {
    /// Width and height the box wants, borders included, before clamping to the screen.
    pub fn desired_size(&self) -> (u16, u16) {
        let content_width = self
            .content_lines(usize::MAX)
            .iter()
            .map(Line::width)
            .max()
            .unwrap_or(0)
            .max(width(TITLE) + 2);
        let width = content_width + 2 * (BORDER + PADDING);
        let height = self.line_count() + 2 * BORDER;
        (clamp_u16(width), clamp_u16(height))
    }

    /// Number of content rows (bindings; a blank and the note; per section a blank, its title
    /// and its rows; a blank before the log line when there were sections; the log line).
    pub fn line_count(&self) -> usize {
        let sections: usize = self.sections.iter().map(|s| s.rows.len() + 2).sum();
        let gap = usize::from(!self.sections.is_empty());
        self.bindings.len() + sections + gap + 3
    }

    /// The content row of the title of the first section titled `title`, if there is one: the
    /// `scroll` that shows that section at the top.
    pub fn section_line(&self, title: &str) -> Option<usize> {
        // The bindings, a blank and the note; then per section a blank, its title, its rows.
        let mut line = self.bindings.len() + 2;
        for section in &self.sections {
            if section.title == title {
                return Some(line + 1);
            }
            line += section.rows.len() + 2;
        }
        None
    }

    /// The bottom border's hint for a box `box_width` wide that shows `visible` rows: when the
    /// rows do not all fit, as many scroll keys as there is room for and the close key, else
    /// the close key alone.
    fn border_hint(&self, box_width: u16, visible: usize) -> String {
        if self.line_count() > visible {
            let room = crate::overlay::hint_room(box_width);
            for shown in (1..=self.scroll_keys.len()).rev() {
                let hint = format!(
                    "{} scroll · {}",
                    self.scroll_keys[..shown].join(" "),
                    self.hint
                );
                if width(&hint) <= room {
                    return hint;
                }
            }
        }
        self.hint.clone()
    }
}

/// Where the box goes on a `screen`: centred, no larger than the screen.
pub fn overlay_area(model: &HelpModel, screen: Rect) -> Rect {
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

/// The largest useful `scroll` on this `screen` (0 when everything fits).
pub fn max_scroll(model: &HelpModel, screen: Rect) -> usize {
    let visible = usize::from(overlay_area(model, screen).height).saturating_sub(2 * BORDER);
    model.line_count().saturating_sub(visible)
}

/// Draw the overlay centred on `screen`, over whatever is there.
pub fn render(model: &HelpModel, theme: &Theme, screen: Rect, buf: &mut Buffer) {
    let area = overlay_area(model, screen);
    // Below this there is no room for a border and one row of text; draw nothing rather than
    // a broken box.
    if area.width < 2 * (BORDER + PADDING) as u16 + 1 || area.height < 2 * BORDER as u16 + 1 {
        return;
    }
    Clear.render(area, buf);

    let visible = usize::from(area.height) - 2 * BORDER;
    let first = model.scroll.min(max_scroll(model, screen));
    let hint = model.border_hint(area.width, visible);
    let text_area =
        crate::overlay::frame(TITLE, &hint, first, model.line_count(), theme, area, buf);
    let lines = model.content_lines_styled(usize::from(text_area.width), theme);
    for (row, line) in lines.iter().skip(first).take(visible).enumerate() {
        buf.set_line(text_area.x, text_area.y + row as u16, line, text_area.width);
    }
}

use crate::overlay::{BORDER, PADDING};
/// Gap between the key column and the description.
const COLUMN_GAP: usize = 2;

impl HelpModel {
    /// Content rows fitted to `max_width` columns, unstyled (for measuring).
    fn content_lines(&self, max_width: usize) -> Vec<Line<'static>> {
        self.content_lines_styled(max_width, &Theme::plain())
    }

    fn content_lines_styled(&self, max_width: usize, theme: &Theme) -> Vec<Line<'static>> {
        let key_width = self
            .bindings
            .iter()
            .chain(self.sections.iter().flat_map(|s| s.rows.iter()))
            .map(|(key, _)| width(key))
            .max()
            .unwrap_or(0)
            // The key column may take at most half the box: descriptions matter as much.
            .min(max_width / 2);
        let mut lines = Vec::with_capacity(self.line_count());
        let row = |key: &str, description: &str| {
            let key = truncate_end(key, key_width);
            let pad = " ".repeat(key_width - width(&key) + COLUMN_GAP);
            let room = max_width.saturating_sub(key_width + COLUMN_GAP);
            Line::from(vec![
                Span::styled(key, theme.overlay_key),
                Span::raw(pad),
                Span::raw(truncate_end(description, room)),
            ])
        };
        for (key, description) in &self.bindings {
            lines.push(row(key, description));
        }
        lines.push(Line::default());
        lines.push(Line::styled(
            truncate_end(PASS_THROUGH_NOTE, max_width),
            theme.muted,
        ));
        for section in &self.sections {
            lines.push(Line::default());
            lines.push(Line::styled(
                truncate_end(&section.title, max_width),
                theme.overlay_title,
            ));
            for (key, description) in &section.rows {
                lines.push(row(key, description));
            }
        }
        if !self.sections.is_empty() {
            lines.push(Line::default());
        }
        let label = "Log: ";
        let path = shorten_path(&self.log_path, max_width.saturating_sub(width(label)));
        lines.push(Line::from(vec![
            Span::styled(label, theme.muted),
            Span::raw(path),
        ]));
        lines
    }
}

fn clamp_u16(value: usize) -> u16 {
    u16::try_from(value).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use ratatui::style::{Color, Style};

    use super::*;
    use crate::test_support::render_to_string;

    fn model() -> HelpModel {
        let bindings = [
            ("F1", "Show the key bindings"),
            ("Shift+PgUp", "Scroll the pane up one page"),
            ("Shift+PgDn", "Scroll the pane down one page"),
            ("Alt+Shift+Up", "Scroll the pane up one line"),
            ("Alt+Shift+Down", "Scroll the pane down one line"),
            ("Shift+End", "Back to live output"),
            ("Shift+Down", "Open the task dock"),
        ];
        HelpModel {
            bindings: bindings
                .iter()
                .map(|(k, d)| ((*k).to_owned(), (*d).to_owned()))
                .collect(),
            log_path: "/home/ada/.local/state/unipi-tui/unipi-tui.log".to_owned(),
            scroll: 0,
            hint: "Esc close".to_owned(),
            scroll_keys: ["↑↓", "PgUp", "PgDn", "Home", "End"]
                .map(str::to_owned)
                .to_vec(),
            ..HelpModel::default()
        }
    }

    /// The text on the bottom border row of `screen` (the last row of the box).
    fn bottom_border(screen: &str) -> String {
        screen
            .lines()
            .rfind(|line| line.contains('└'))
            .unwrap_or_default()
            .to_owned()
    }

    fn snapshot(model: &HelpModel, width: u16, height: u16) -> String {
        render_to_string(width, height, |area, buf| {
            render(model, &Theme::plain(), area, buf);
        })
    }

    #[test]
    fn fits_a_normal_terminal() {
        crate::assert_ui_snapshot!("help_80x24", snapshot(&model(), 80, 24));
    }

    #[test]
    fn shrinks_and_scrolls_on_a_small_terminal() {
        crate::assert_ui_snapshot!("help_40x12", snapshot(&model(), 40, 12));
        crate::assert_ui_snapshot!("help_40x8", snapshot(&model(), 40, 8));
        let scrolled = HelpModel {
            scroll: 99,
            ..model()
        };
        crate::assert_ui_snapshot!("help_40x8_scrolled_to_end", snapshot(&scrolled, 40, 8));
    }

    #[test]
    fn lists_commands_and_view_keys_under_their_titles() {
        let with_sections = HelpModel {
            sections: vec![
                HelpSection {
                    title: "Commands (type them in Pi's editor)".to_owned(),
                    rows: vec![
                        (
                            "/unipi:bg".to_owned(),
                            "Run a command in the background".to_owned(),
                        ),
                        ("/unipi:info".to_owned(), "Workbench info".to_owned()),
                    ],
                },
                HelpSection {
                    title: "In the dock".to_owned(),
                    rows: vec![
                        ("s".to_owned(), "Stop the selected task".to_owned()),
                        ("m".to_owned(), "Steer the selected helper".to_owned()),
                    ],
                },
            ],
            hint: "Esc close".to_owned(),
            ..model()
        };
        assert_eq!(with_sections.line_count(), 7 + 2 + 4 + 4 + 1 + 1);
        crate::assert_ui_snapshot!("help_with_sections_80x30", snapshot(&with_sections, 80, 30));
    }

    #[test]
    fn the_border_shows_the_scroll_keys_that_fit_when_the_rows_do_not() {
        // A box as wide as its longest line: 55 columns for `model()`, 63 for `wide`.
        let wide = HelpModel {
            log_path: "/home/ada-lovelace/.local/state/unipi-tui/unipi-tui.log".to_owned(),
            ..model()
        };
        // (model, screen width, height, the hint on the border)
        let cases = [
            // Everything fits: only the close key.
            (&wide, 80, 24, " Esc close "),
            // Scrolls: as many scroll keys as fit, the arrows first.
            (&wide, 80, 8, " ↑↓ PgUp PgDn Home End scroll · Esc close "),
            (&model(), 80, 8, " ↑↓ PgUp PgDn Home scroll · Esc close "),
            (&model(), 40, 8, " ↑↓ scroll · Esc close "),
        ];
        for (model, width, height, hint) in cases {
            let screen = snapshot(model, width, height);
            assert!(
                bottom_border(&screen).contains(hint),
                "{width}x{height}: {screen}"
            );
        }
        // Fewer rows than lines: the border says how to scroll.
        crate::assert_ui_snapshot!("help_80x8_scroll_keys", snapshot(&wide, 80, 8));
    }

    #[test]
    fn a_section_found_by_its_title_opens_at_the_top() {
        let model = HelpModel {
            sections: ["Commands", "The dock", "The model picker"]
                .iter()
                .map(|title| HelpSection {
                    title: (*title).to_owned(),
                    rows: (0..6)
                        .map(|n| (format!("k{n}"), format!("{title} key {n}")))
                        .collect(),
                })
                .collect(),
            ..model()
        };
        // 7 bindings, a blank and the note; then per section a blank, the title, 6 rows.
        assert_eq!(model.section_line("Commands"), Some(10));
        assert_eq!(model.section_line("The dock"), Some(18));
        assert_eq!(model.section_line("The model picker"), Some(26));
        assert_eq!(model.section_line("Nothing"), None);
        let at_dock = HelpModel {
            scroll: model.section_line("The dock").unwrap(),
            ..model.clone()
        };
        let screen = snapshot(&at_dock, 80, 12);
        let first_row = screen.lines().nth(1).unwrap();
        assert!(first_row.contains("│ The dock "), "{screen}");
        // The last section cannot reach the top: the last page shows it whole.
        let at_picker = HelpModel {
            scroll: model.section_line("The model picker").unwrap(),
            ..model
        };
        let screen = snapshot(&at_picker, 80, 12);
        assert!(screen.contains("│ The model picker "), "{screen}");
        assert!(screen.contains("The model picker key 5"), "{screen}");
    }

    #[test]
    fn scroll_limits_follow_the_screen() {
        let model = model();
        assert_eq!(model.line_count(), 10);
        assert_eq!(max_scroll(&model, Rect::new(0, 0, 80, 24)), 0);
        // 12 rows minus 2 borders show 10 of 10 lines; 8 rows show 6.
        assert_eq!(max_scroll(&model, Rect::new(0, 0, 40, 12)), 0);
        assert_eq!(max_scroll(&model, Rect::new(0, 0, 40, 8)), 4);
    }

    #[test]
    fn never_panics_on_any_small_screen() {
        let model = model();
        for width in 1..=30 {
            for height in 1..=14 {
                let text = snapshot(&model, width, height);
                assert_eq!(text.lines().count(), usize::from(height));
            }
        }
        let empty = HelpModel::default();
        snapshot(&empty, 20, 6);
    }

    #[test]
    fn key_column_uses_the_key_style() {
        let theme = Theme {
            overlay_key: Style::new().fg(Color::Cyan),
            ..Theme::plain()
        };
        let mut buf = Buffer::empty(Rect::new(0, 0, 80, 24));
        render(&model(), &theme, buf.area, &mut buf);
        let area = overlay_area(&model(), buf.area);
        // First binding row: border, padding, then the key "F1".
        let key_cell = &buf[(area.x + 2, area.y + 1)];
        assert_eq!(key_cell.symbol(), "F");
        assert_eq!(key_cell.fg, Color::Cyan);
        let description_cell = &buf[(area.x + 2 + 16, area.y + 1)];
        assert_ne!(description_cell.fg, Color::Cyan);
    }
}

//! The `/unipi:info` overlay: a centred, bordered box that says what the workbench is made of —
//! each module and its state (ready, disabled, or the error that stopped it), the tools and
//! commands each one registered with Pi, the versions on both sides of the bridge (Pi's, the
//! bridge protocol's, the workbench's), and where its files are (config, database, logs, runtime
//! directory). It is what a user reads, and pastes into a bug report, when something is missing.
//!
//! Like the help overlay it sizes itself to its content, shrinks to the screen, and shows a
//! window starting at `scroll` with a position marker when the rows do not fit. Unlike help, its
//! rows depend on the width: tool lists, error messages and paths wrap (at words where there are
//! any) so nothing is lost.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::text::{truncate_end, width};
use crate::theme::Theme;

/// The box's title.
pub const TITLE: &str = "unipi-tui info";

/// Whether a module runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModuleState {
    Ready,
    /// Turned off by configuration.
    Disabled,
    /// Failed to start; the message says why.
    Error(String),
}

/// One workbench module and what it registered with Pi.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleInfo {
    pub name: String,
    pub state: ModuleState,
    /// Tool names, as the model sees them.
    pub tools: Vec<String>,
    /// Commands, as typed in Pi (`/unipi:info`).
    pub commands: Vec<String>,
}

/// Where the workbench keeps its files; `None` when unknown (e.g. no home directory).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InfoPaths {
    pub config: Option<String>,
    pub database: Option<String>,
    pub logs: Option<String>,
    pub runtime: Option<String>,
}

/// What the info overlay shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InfoModel {
    pub modules: Vec<ModuleInfo>,
    /// Pi's version as its bridge reported it; `None` while no bridge is connected.
    pub pi_version: Option<String>,
    /// The bridge protocol version the workbench speaks.
    pub bridge_protocol: String,
    pub workbench_version: String,
    pub paths: InfoPaths,
    /// First content row shown when the box is shorter than its content.
    pub scroll: usize,
}

impl InfoModel {
    /// Width and height the box wants, borders included, before clamping to the screen.
    pub fn desired_size(&self) -> (u16, u16) {
        let content_width = self
            .content_lines(MAX_TEXT_WIDTH, &Theme::plain())
            .iter()
            .map(Line::width)
            .max()
            .unwrap_or(0)
            .max(width(TITLE) + 2);
        let width = content_width + 2 * (BORDER + PADDING);
        let height = self.line_count(content_width) + 2 * BORDER;
        (clamp_u16(width), clamp_u16(height))
    }

    /// Number of content rows when the text is `text_width` columns wide.
    pub fn line_count(&self, text_width: usize) -> usize {
        self.content_lines(text_width, &Theme::plain()).len()
    }
}

/// Where the box goes on a `screen`: centred, no larger than the screen.
pub fn overlay_area(model: &InfoModel, screen: Rect) -> Rect {
    let (want_w, _) = model.desired_size();
    let w = want_w.min(screen.width);
    // Narrower than wanted means more wrapped rows: measure at the width it gets.
    let rows = model.line_count(text_width(w)) + 2 * BORDER;
    let h = clamp_u16(rows).min(screen.height);
    Rect {
        x: screen.x + (screen.width - w) / 2,
        y: screen.y + (screen.height - h) / 2,
        width: w,
        height: h,
    }
}

/// The largest useful `scroll` on this `screen` (0 when everything fits).
pub fn max_scroll(model: &InfoModel, screen: Rect) -> usize {
    let area = overlay_area(model, screen);
    let visible = usize::from(area.height).saturating_sub(2 * BORDER);
    model
        .line_count(text_width(area.width))
        .saturating_sub(visible)
}

/// Draw the overlay centred on `screen`, over whatever is there.
pub fn render(model: &InfoModel, hint: &str, theme: &Theme, screen: Rect, buf: &mut Buffer) {
    let area = overlay_area(model, screen);
    let lines = model.content_lines(text_width(area.width), theme);
    crate::overlay::render_scrolled(TITLE, hint, &lines, model.scroll, theme, area, buf);
}

use crate::overlay::{BORDER, PADDING, text_width};
/// Widest the text gets: long error messages and tool lists wrap rather than widen the box.
const MAX_TEXT_WIDTH: usize = 88;
/// Indent of rows inside a section.
const INDENT: usize = 2;
/// Gap between a label column and its values.
const COLUMN_GAP: usize = 2;

impl InfoModel {
    /// Content rows for text `max_width` columns wide.
    pub(crate) fn content_lines(&self, max_width: usize, theme: &Theme) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        let heading = |text: &str| Line::styled(truncate_end(text, max_width), theme.overlay_title);

        lines.push(heading("Modules"));
        if self.modules.is_empty() {
            lines.push(Line::styled(
                truncate_end("  (none)", max_width),
                theme.muted,
            ));
        }
        let name_width = self
            .modules
            .iter()
            .map(|module| width(&module.name))
            .max()
            .unwrap_or(0)
            // Names may take at most a third of the row: the state matters as much.
            .min(max_width / 3);
        for module in &self.modules {
            Self::module_lines(module, name_width, max_width, theme, &mut lines);
        }

        lines.push(Line::default());
        lines.push(heading("Versions"));
        let pi = match &self.pi_version {
            Some(version) => (version.clone(), Style::new()),
            None => ("not connected".to_owned(), theme.muted),
        };
        let versions = [
            ("Pi", pi),
            (
                "bridge protocol",
                (self.bridge_protocol.clone(), Style::new()),
            ),
            ("unipi-tui", (self.workbench_version.clone(), Style::new())),
        ];
        table(&versions, max_width, theme, &mut lines);

        lines.push(Line::default());
        lines.push(heading("Paths"));
        let path = |path: &Option<String>| match path {
            Some(path) => (path.clone(), Style::new()),
            None => ("unknown".to_owned(), theme.muted),
        };
        let paths = [
            ("config", path(&self.paths.config)),
            ("database", path(&self.paths.database)),
            ("logs", path(&self.paths.logs)),
            ("runtime", path(&self.paths.runtime)),
        ];
        table(&paths, max_width, theme, &mut lines);
        lines
    }

    /// A module's row ("✓ name  ready"), then its commands and tools, wrapped at words.
    fn module_lines(
        module: &ModuleInfo,
        name_width: usize,
        max_width: usize,
        theme: &Theme,
        lines: &mut Vec<Line<'static>>,
    ) {
        let (glyph, state, style) = match &module.state {
            ModuleState::Ready => ("✓", "ready".to_owned(), theme.status_done),
            ModuleState::Disabled => ("○", "disabled".to_owned(), theme.muted),
            ModuleState::Error(message) => ("✗", format!("error: {message}"), theme.error),
        };
        let name = truncate_end(&module.name, name_width);
        let pad = name_width - width(&name) + COLUMN_GAP;
        let value_column = INDENT + width(glyph) + 1 + name_width + COLUMN_GAP;
        let mut rows = wrap(&state, max_width.saturating_sub(value_column)).into_iter();
        lines.push(Line::from(vec![
            Span::raw(" ".repeat(INDENT)),
            Span::styled(glyph, style),
            Span::raw(" "),
            Span::styled(name, theme.overlay_key),
            Span::raw(" ".repeat(pad)),
            Span::styled(rows.next().unwrap_or_default(), style),
        ]));
        for row in rows {
            lines.push(Line::from(vec![
                Span::raw(" ".repeat(value_column)),
                Span::styled(row, style),
            ]));
        }

        let lists = [("commands", &module.commands), ("tools", &module.tools)];
        let label_indent = INDENT + 2;
        let label_width = lists
            .iter()
            .map(|(label, _)| width(label))
            .max()
            .unwrap_or(0);
        for (label, items) in lists {
            if items.is_empty() {
                continue;
            }
            let value_column = label_indent + label_width + COLUMN_GAP;
            let rows = wrap(&items.join(", "), max_width.saturating_sub(value_column));
            for (i, row) in rows.into_iter().enumerate() {
                let label = if i == 0 { label } else { "" };
                lines.push(Line::from(vec![
                    Span::raw(" ".repeat(label_indent)),
                    Span::styled(
                        format!("{label:<label_width$}{}", " ".repeat(COLUMN_GAP)),
                        theme.muted,
                    ),
                    Span::raw(row),
                ]));
            }
        }
    }
}

/// Label/value rows under a heading, values aligned and wrapped (never shortened: these are
/// the paths and versions a user copies into a bug report).
fn table(
    rows: &[(&str, (String, Style))],
    max_width: usize,
    theme: &Theme,
    lines: &mut Vec<Line<'static>>,
) {
    let label_width = rows
        .iter()
        .map(|(label, _)| width(label))
        .max()
        .unwrap_or(0);
    let value_column = INDENT + label_width + COLUMN_GAP;
    for (label, (value, style)) in rows {
        let wrapped = wrap(value, max_width.saturating_sub(value_column));
        for (i, row) in wrapped.into_iter().enumerate() {
            let label = if i == 0 { *label } else { "" };
            lines.push(Line::from(vec![
                Span::raw(" ".repeat(INDENT)),
                Span::styled(
                    format!("{label:<label_width$}{}", " ".repeat(COLUMN_GAP)),
                    theme.overlay_key,
                ),
                Span::styled(row, *style),
            ]));
        }
    }
}

/// `text` in rows of at most `max` columns, broken at spaces; a word longer than a row is cut
/// over several rows (a path in an error message must still be readable whole).
pub(crate) fn wrap(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut rows = Vec::new();
    let mut row = String::new();
    for word in text.split_whitespace() {
        let needed = if row.is_empty() { 0 } else { 1 } + width(word);
        if !row.is_empty() && width(&row) + needed > max {
            rows.push(std::mem::take(&mut row));
        }
        if !row.is_empty() {
            row.push(' ');
        }
        for ch in word.chars() {
            let mut utf8 = [0u8; 4];
            let ch_width = width(ch.encode_utf8(&mut utf8));
            if width(&row) + ch_width > max && !row.is_empty() {
                rows.push(std::mem::take(&mut row));
            }
            row.push(ch);
        }
    }
    if !row.is_empty() || rows.is_empty() {
        rows.push(row);
    }
    rows
}

fn clamp_u16(value: usize) -> u16 {
    u16::try_from(value).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use ratatui::style::Color;

    use super::*;
    use crate::test_support::render_to_string;

    fn module(name: &str, state: ModuleState, tools: &[&str], commands: &[&str]) -> ModuleInfo {
        ModuleInfo {
            name: name.to_owned(),
            state,
            tools: tools.iter().map(|t| (*t).to_owned()).collect(),
            commands: commands.iter().map(|c| (*c).to_owned()).collect(),
        }
    }

    fn model() -> InfoModel {
        InfoModel {
            modules: vec![
                module("info", ModuleState::Ready, &[], &["/unipi:info"]),
                module(
                    "tasks",
                    ModuleState::Ready,
                    &[
                        "task_start",
                        "task_status",
                        "task_output",
                        "task_stop",
                        "task_list",
                    ],
                    &["/unipi:tasks", "/unipi:task-kill"],
                ),
                module("helpers", ModuleState::Disabled, &[], &[]),
                module(
                    "mcp",
                    ModuleState::Error(
                        "cannot read /home/ada/.unipi/config/mcp/mcp-config.json: expected `,` \
                         or `}` at line 4 column 3"
                            .to_owned(),
                    ),
                    &[],
                    &[],
                ),
            ],
            pi_version: Some("1.6.0".to_owned()),
            bridge_protocol: "1".to_owned(),
            workbench_version: "0.1.0".to_owned(),
            paths: InfoPaths {
                config: Some("/home/ada/.unipi/config".to_owned()),
                database: Some("/home/ada/.unipi/db/unipi.sqlite".to_owned()),
                logs: Some("/home/ada/.local/state/unipi-tui/unipi-tui.log".to_owned()),
                runtime: Some("/run/user/1000/unipi-tui-4f2a9c".to_owned()),
            },
            scroll: 0,
        }
    }

    fn snapshot(model: &InfoModel, width: u16, height: u16) -> String {
        render_to_string(width, height, |area, buf| {
            render(model, "Esc close", &Theme::plain(), area, buf);
        })
    }

    #[test]
    fn fits_a_large_terminal() {
        crate::assert_ui_snapshot!("info_100x30", snapshot(&model(), 100, 30));
    }

    #[test]
    fn wraps_and_scrolls_on_a_small_terminal() {
        crate::assert_ui_snapshot!("info_60x15", snapshot(&model(), 60, 15));
        let scrolled = InfoModel {
            scroll: 8,
            ..model()
        };
        crate::assert_ui_snapshot!("info_60x15_scrolled", snapshot(&scrolled, 60, 15));
        let to_end = InfoModel {
            scroll: 999,
            ..model()
        };
        crate::assert_ui_snapshot!("info_60x15_scrolled_to_end", snapshot(&to_end, 60, 15));
    }

    #[test]
    fn scroll_limits_follow_the_screen() {
        let model = model();
        assert_eq!(max_scroll(&model, Rect::new(0, 0, 100, 30)), 0);
        let small = Rect::new(0, 0, 60, 15);
        let area = overlay_area(&model, small);
        let rows = model.line_count(text_width(area.width));
        assert_eq!(area.height, 15);
        assert_eq!(max_scroll(&model, small), rows - 13);
        // Narrower means more wrapped rows, so more to scroll.
        assert!(max_scroll(&model, Rect::new(0, 0, 40, 15)) > max_scroll(&model, small));
    }

    #[test]
    fn without_pi_and_modules() {
        let empty = InfoModel {
            bridge_protocol: "1".to_owned(),
            workbench_version: "0.1.0".to_owned(),
            ..InfoModel::default()
        };
        let text = snapshot(&empty, 60, 20);
        assert!(text.contains("(none)"), "{text}");
        assert!(text.contains("Pi               not connected"), "{text}");
        assert!(text.contains("runtime   unknown"), "{text}");
    }

    #[test]
    fn never_panics_on_any_small_screen() {
        let model = model();
        for width in 1..=40 {
            for height in 1..=14 {
                let text = snapshot(&model, width, height);
                assert_eq!(text.lines().count(), usize::from(height));
            }
        }
    }

    #[test]
    fn module_states_use_their_styles() {
        let theme = Theme {
            status_done: Style::new().fg(Color::Green),
            error: Style::new().fg(Color::Red),
            muted: Style::new().fg(Color::DarkGray),
            ..Theme::plain()
        };
        let model = model();
        let mut buf = Buffer::empty(Rect::new(0, 0, 100, 30));
        render(&model, "Esc close", &theme, buf.area, &mut buf);
        let area = overlay_area(&model, buf.area);
        let cell_of = |glyph: &str| {
            (area.top()..area.bottom())
                .flat_map(|y| (area.left()..area.right()).map(move |x| (x, y)))
                .find(|&(x, y)| buf[(x, y)].symbol() == glyph)
                .map(|(x, y)| buf[(x, y)].fg)
        };
        assert_eq!(cell_of("✓"), Some(Color::Green));
        assert_eq!(cell_of("○"), Some(Color::DarkGray));
        assert_eq!(cell_of("✗"), Some(Color::Red));
    }

    #[test]
    fn wrap_table() {
        let cases: [(&str, usize, &[&str]); 5] = [
            ("a, b, c", 20, &["a, b, c"]),
            (
                "task_start, task_status, task_output",
                14,
                &["task_start,", "task_status,", "task_output"],
            ),
            (
                "see /a/very/long/path",
                8,
                &["see", "/a/very/", "long/pat", "h"],
            ),
            ("", 5, &[""]),
            ("x", 0, &["x"]),
        ];
        for (text, max, want) in cases {
            assert_eq!(wrap(text, max), want, "wrap({text:?}, {max})");
        }
    }
}

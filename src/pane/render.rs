//! Copies Pi's screen (and, when the user scrolled back, rows of history) into a ratatui buffer.
//!
//! This is the whole-frame copy ratatui expects; ratatui then diffs against the previous frame
//! and writes only changed cells, so an unchanged screen costs nothing on the wire. Colours pass
//! through unchanged (truecolour and indexed): they are Pi's, not the workbench's theme.

use ratatui::buffer::{Buffer, Cell as BufCell};
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier};

use super::history::History;

/// What the pane shows.
pub struct PaneSource<'a> {
    pub screen: &'a vt100::Screen,
    pub history: &'a History,
    /// Rows scrolled back from live (0 = live). Clamped to the history length.
    pub scrolled_back: usize,
}

/// Renders the pane into `area` and returns where the terminal cursor belongs (absolute
/// position), or `None` when it should be hidden (Pi hid it, or the view is scrolled back).
pub fn render_pane(source: &PaneSource<'_>, area: Rect, buf: &mut Buffer) -> Option<Position> {
    let offset = source.scrolled_back.min(source.history.len());
    let history_start = source.history.len() - offset;
    for y in 0..area.height {
        let row = usize::from(y);
        let target_y = area.y + y;
        clear_row(buf, area, target_y);
        if row < offset {
            source
                .history
                .with_row_cells(history_start + row, area.width, |col, cell| {
                    apply_cell(cell, &mut buf[(area.x + col, target_y)]);
                });
        } else {
            let screen_row = u16::try_from(row - offset).unwrap_or(u16::MAX);
            for col in 0..area.width {
                if let Some(cell) = source.screen.cell(screen_row, col) {
                    apply_cell(cell, &mut buf[(area.x + col, target_y)]);
                }
            }
        }
    }
    if offset > 0 || source.screen.hide_cursor() {
        return None;
    }
    let (row, col) = source.screen.cursor_position();
    let row = row.checked_add(u16::try_from(offset).ok()?)?;
    (row < area.height && col < area.width).then(|| Position::new(area.x + col, area.y + row))
}

fn clear_row(buf: &mut Buffer, area: Rect, y: u16) {
    for x in area.x..area.x + area.width {
        buf[(x, y)].reset();
    }
}

/// Converts one vt100 cell into a ratatui cell.
pub(crate) fn apply_cell(cell: &vt100::Cell, out: &mut BufCell) {
    if cell.is_wide_continuation() {
        // The wide glyph to the left covers this cell; ratatui skips it when diffing.
        out.set_symbol("");
    } else if cell.has_contents() {
        out.set_symbol(cell.contents());
    } else {
        out.set_symbol(" ");
    }
    let mut modifier = Modifier::empty();
    for (on, bit) in [
        (cell.bold(), Modifier::BOLD),
        (cell.dim(), Modifier::DIM),
        (cell.italic(), Modifier::ITALIC),
        (cell.underline(), Modifier::UNDERLINED),
        // SGR 7 is passed on as SGR 7: the outer terminal reverses exactly as Pi's would.
        (cell.inverse(), Modifier::REVERSED),
    ] {
        if on {
            modifier |= bit;
        }
    }
    out.fg = convert_color(cell.fgcolor());
    out.bg = convert_color(cell.bgcolor());
    out.modifier = modifier;
}

fn convert_color(color: vt100::Color) -> Color {
    match color {
        vt100::Color::Default => Color::Reset,
        vt100::Color::Idx(i) => Color::Indexed(i),
        vt100::Color::Rgb(r, g, b) => Color::Rgb(r, g, b),
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU16;

    use super::*;

    fn parser(rows: u16, cols: u16) -> vt100::Parser {
        vt100::Parser::new(
            NonZeroU16::new(rows).unwrap(),
            NonZeroU16::new(cols).unwrap(),
            0,
        )
    }

    fn render(
        screen: &vt100::Screen,
        history: &History,
        back: usize,
        w: u16,
        h: u16,
    ) -> (Buffer, Option<Position>) {
        let area = Rect::new(0, 0, w, h);
        let mut buf = Buffer::empty(area);
        let cursor = render_pane(
            &PaneSource {
                screen,
                history,
                scrolled_back: back,
            },
            area,
            &mut buf,
        );
        (buf, cursor)
    }

    /// `bytes` fed to a fresh `rows`x`cols` screen without history, rendered at its size.
    fn rendered(rows: u16, cols: u16, bytes: &[u8]) -> (Buffer, Option<Position>) {
        let mut p = parser(rows, cols);
        p.process(bytes);
        render(p.screen(), &History::new(0), 0, cols, rows)
    }

    #[test]
    fn copies_text_colours_attributes_and_cursor() {
        let (buf, cursor) = rendered(
            3,
            10,
            b"\x1b[1;3;4;38;2;1;2;3;48;5;17mAb\x1b[m\x1b[7mR\x1b[m\r\nx",
        );
        let a = &buf[(0, 0)];
        assert_eq!(a.symbol(), "A");
        assert_eq!(a.fg, Color::Rgb(1, 2, 3));
        assert_eq!(a.bg, Color::Indexed(17));
        assert!(
            a.modifier
                .contains(Modifier::BOLD | Modifier::ITALIC | Modifier::UNDERLINED)
        );
        assert!(buf[(2, 0)].modifier.contains(Modifier::REVERSED));
        assert_eq!(buf[(0, 1)].symbol(), "x");
        assert_eq!(cursor, Some(Position::new(1, 1)));
    }

    #[test]
    fn inverse_keeps_colours_and_reverses() {
        let (buf, _) = rendered(1, 4, b"\x1b[31;42;7mX");
        assert_eq!(buf[(0, 0)].fg, Color::Indexed(1));
        assert_eq!(buf[(0, 0)].bg, Color::Indexed(2));
        assert!(buf[(0, 0)].modifier.contains(Modifier::REVERSED));
    }

    #[test]
    fn wide_characters_occupy_two_cells() {
        let (buf, _) = rendered(1, 6, "日本x".as_bytes());
        assert_eq!(buf[(0, 0)].symbol(), "日");
        assert_eq!(buf[(2, 0)].symbol(), "本");
        assert_eq!(buf[(4, 0)].symbol(), "x");
        let line: String = (0..6).map(|x| buf[(x, 0)].symbol().to_string()).collect();
        assert_eq!(line, "日本x ");
    }

    #[test]
    fn hidden_cursor_is_not_placed() {
        let (_, cursor) = rendered(2, 4, b"\x1b[?25l");
        assert_eq!(cursor, None);
    }

    #[test]
    fn scrolled_back_view_shows_history_above_the_screen() {
        let mut p = parser(2, 8);
        p.process(b"live1\r\nlive2");
        let mut history = History::new(10);
        for i in 0..3 {
            history.push_formatted(format!("old{i}"));
        }
        let (buf, cursor) = render(p.screen(), &history, 1, 8, 2);
        let row = |buf: &Buffer, y| {
            (0..8)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
        };
        assert_eq!(row(&buf, 0).trim_end(), "old2");
        assert_eq!(row(&buf, 1).trim_end(), "live1");
        assert_eq!(cursor, None, "no cursor while scrolled back");
        // Offsets past the history clamp to its top.
        let (buf, _) = render(p.screen(), &history, 99, 8, 2);
        assert_eq!(row(&buf, 0).trim_end(), "old0");
        assert_eq!(row(&buf, 1).trim_end(), "old1");
    }

    /// Feeds a recorded Pi start-up (30x100) through the emulator and renders the pane.
    fn render_fixture(name: &str) -> (ratatui::Terminal<ratatui::backend::TestBackend>, Buffer) {
        use crate::pane::emulator::{Emulator, HostInfo};
        use crate::pane::{Rgb, TerminalColors};
        let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        let stream = std::fs::read(&path).unwrap();
        let colors = TerminalColors {
            foreground: Rgb(220, 220, 220),
            background: Rgb(20, 20, 20),
            palette: [Rgb(0, 0, 0); 16],
        };
        let mut emulator = Emulator::new(30, 100, 100, colors, HostInfo::default());
        emulator.process(&stream);
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 30)).unwrap();
        terminal
            .draw(|frame| {
                let area = frame.area();
                render_pane(
                    &PaneSource {
                        screen: emulator.screen(),
                        history: emulator.history(),
                        scrolled_back: 0,
                    },
                    area,
                    frame.buffer_mut(),
                );
            })
            .unwrap();
        let buffer = terminal.backend().buffer().clone();
        (terminal, buffer)
    }

    #[test]
    fn recorded_pi_startups_render_into_the_pane() {
        for (fixture, snapshot) in [
            (
                "pi-1.6.0-fullscreen-answered.startup",
                "pane_pi_1_6_0_fullscreen",
            ),
            ("pi-1.6.0-regular.startup", "pane_pi_1_6_0_regular"),
            ("pi-0.73.1.startup", "pane_pi_0_73_1"),
        ] {
            let (terminal, buffer) = render_fixture(fixture);
            crate::assert_ui_snapshot!(snapshot, terminal.backend());
            // Pi's colours come through as Pi wrote them (truecolour or indexed), not as the
            // workbench's theme.
            let coloured = buffer
                .content()
                .iter()
                .filter(|c| matches!(c.fg, Color::Rgb(..) | Color::Indexed(_)))
                .count();
            assert!(coloured > 0, "{fixture}: no colour survived rendering");
        }
    }
}

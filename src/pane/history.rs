//! The pane's scrollback: rows Pi scrolled off the top of its (main) screen, kept compactly.
//!
//! vt100 can keep scrollback itself, but as full-width rows of 32-byte cells: 10,000 rows of a
//! 120-column pane would be ~38 MB. We run the parser without scrollback and capture each row as
//! it leaves the screen (`Callbacks::on_scroll`) in vt100's "basic formatted" form — the row's
//! text with SGR codes, trailing blanks trimmed — which is typically 30–100 bytes a row. Rows are
//! decoded back into cells only when they are on screen (a scrolled-back view shows at most one
//! screenful), through a small reusable one-row parser.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::num::NonZeroU16;

use vt100::capture::{BasicFormattedCaptureState, RowContents};

/// Default number of rows kept.
pub const DEFAULT_CAPACITY: usize = 10_000;

/// Widest row we can decode; wider rows are cut (a terminal this wide is not a real concern).
const DECODE_WIDTH: NonZeroU16 = match NonZeroU16::new(1024) {
    Some(n) => n,
    None => unreachable!(),
};
const ONE_ROW: NonZeroU16 = NonZeroU16::MIN;

pub struct History {
    rows: VecDeque<Box<str>>,
    capacity: usize,
    bytes: usize,
    /// Rows ever pushed (not capped): lets a scrolled-back view stay still as rows arrive.
    total_pushed: u64,
    decoder: RefCell<vt100::Parser>,
    /// Reused formatting buffer: a row is formatted here, then copied out at its exact size, so
    /// a flood of scrolled rows costs one allocation a row instead of a growing string's several.
    scratch: String,
}

impl History {
    pub fn new(capacity: usize) -> Self {
        History {
            rows: VecDeque::new(),
            capacity,
            bytes: 0,
            total_pushed: 0,
            decoder: RefCell::new(vt100::Parser::new(ONE_ROW, DECODE_WIDTH, 0)),
            scratch: String::new(),
        }
    }

    /// Stores a row that scrolled off the main screen.
    pub fn push(&mut self, row: RowContents<'_>) {
        if self.capacity == 0 {
            return;
        }
        self.scratch.clear();
        // Each row gets a fresh capture state so it decodes on its own.
        let mut state = BasicFormattedCaptureState::new();
        if row
            .write_formatted_basic(&mut self.scratch, &mut state)
            .is_err()
        {
            return;
        }
        let text = Box::<str>::from(self.scratch.as_str());
        self.push_boxed(text);
    }

    /// Stores an already formatted row (text with SGR codes, no newline).
    #[cfg(test)]
    pub(crate) fn push_formatted(&mut self, text: String) {
        if self.capacity == 0 {
            return;
        }
        self.push_boxed(text.into_boxed_str());
    }

    fn push_boxed(&mut self, text: Box<str>) {
        if self.rows.len() == self.capacity
            && let Some(old) = self.rows.pop_front()
        {
            self.bytes -= old.len();
        }
        self.bytes += text.len();
        self.total_pushed += 1;
        self.rows.push_back(text);
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Rows pushed since the start, including those since dropped for capacity.
    pub fn total_pushed(&self) -> u64 {
        self.total_pushed
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes of row text held (for the memory benchmark and logs).
    #[cfg(test)]
    pub(crate) fn text_bytes(&self) -> usize {
        self.bytes
    }

    pub fn clear(&mut self) {
        self.rows.clear();
        self.bytes = 0;
    }

    /// Decodes row `index` (0 = oldest) and calls `each(col, cell)` for its first `cols` cells.
    pub(crate) fn with_row_cells(
        &self,
        index: usize,
        cols: u16,
        mut each: impl FnMut(u16, &vt100::Cell),
    ) {
        let Some(text) = self.rows.get(index) else {
            return;
        };
        let mut decoder = self.decoder.borrow_mut();
        // Home, clear the row, reset attributes, then the row's own text and SGR codes.
        decoder.process(b"\x1b[H\x1b[2K\x1b[m");
        decoder.process(text.as_bytes());
        let screen = decoder.screen();
        for col in 0..cols.min(DECODE_WIDTH.get()) {
            if let Some(cell) = screen.cell(0, col) {
                each(col, cell);
            }
        }
    }

    /// Every row as stored: text with SGR codes, oldest first.
    pub fn formatted_rows(&self) -> impl Iterator<Item = &str> {
        self.rows.iter().map(|row| &**row)
    }

    /// The plain text of row `index` (tests, search later).
    #[cfg(test)]
    pub(crate) fn row_text(&self, index: usize) -> Option<String> {
        let mut out = String::new();
        self.with_row_cells(index, DECODE_WIDTH.get(), |_, cell| {
            if !cell.is_wide_continuation() {
                out.push_str(if cell.has_contents() {
                    cell.contents()
                } else {
                    " "
                });
            }
        });
        self.rows.get(index)?;
        Some(out.trim_end().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_rows_up_to_capacity() {
        let mut h = History::new(3);
        for i in 0..5 {
            h.push_formatted(format!("row {i}"));
        }
        assert_eq!(h.len(), 3);
        assert_eq!(h.row_text(0).unwrap(), "row 2");
        assert_eq!(h.row_text(2).unwrap(), "row 4");
        assert_eq!(h.text_bytes(), 15);
    }

    #[test]
    fn decodes_colours_and_attributes() {
        let mut h = History::new(10);
        h.push_formatted("\x1b[1;38;2;255;0;0mred\x1b[m plain".into());
        let mut cells = Vec::new();
        h.with_row_cells(0, 9, |col, cell| cells.push((col, cell.clone())));
        assert_eq!(cells.len(), 9);
        assert_eq!(cells[0].1.contents(), "r");
        assert!(cells[0].1.bold());
        assert_eq!(cells[0].1.fgcolor(), vt100::Color::Rgb(255, 0, 0));
        assert_eq!(cells[4].1.contents(), "p");
        assert!(!cells[4].1.bold());
        assert_eq!(cells[4].1.fgcolor(), vt100::Color::Default);
    }

    #[test]
    fn captures_rows_scrolled_off_a_parser_without_scrollback() {
        struct Capture(History);
        impl vt100::Callbacks for Capture {
            fn on_scroll(&mut self, row: RowContents<'_>, alternate: bool) {
                if !alternate {
                    self.0.push(row);
                }
            }
        }
        let mut parser = vt100::Parser::new_with_callbacks(
            NonZeroU16::new(2).unwrap(),
            NonZeroU16::new(20).unwrap(),
            0,
            Capture(History::new(100)),
        );
        parser.process(b"one\r\n\x1b[32mtwo\x1b[m\r\nthree\r\nfour");
        let history = &parser.callbacks().0;
        assert_eq!(history.len(), 2);
        assert_eq!(history.row_text(0).unwrap(), "one");
        assert_eq!(history.row_text(1).unwrap(), "two");
        let mut fg = None;
        history.with_row_cells(1, 1, |_, cell| fg = Some(cell.fgcolor()));
        assert_eq!(fg, Some(vt100::Color::Idx(2)));
    }
}

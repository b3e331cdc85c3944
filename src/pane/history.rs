//! The pane's scrollback: rows Pi scrolled off the top of its (main) screen, kept compactly.
//!
//! vt100 can keep scrollback itself, but as full-width rows of 32-byte cells: 10,000 rows of a
//! 120-column pane would be ~38 MB. We run the parser without scrollback and capture each row as
//! it leaves the screen (`Callbacks::on_scroll`) in vt100's "basic formatted" form — the row's
//! text with SGR codes, trailing blanks trimmed — which is typically 30–100 bytes a row. Rows are
//! decoded back into cells only when they are on screen (a scrolled-back view shows at most one
//! screenful), through a small reusable one-row parser.
//!
//! A flood scrolls hundreds of thousands of rows through the history, so a row's cost counts:
//! the text is written by our vt100 patch's fast path (`push_formatted_basic`, no `core::fmt`)
//! and stored back to back in blocks of [`BLOCK`] bytes rather than in an allocation of its own;
//! a block is freed when the last row in it is dropped.

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

/// Size of a block of row texts (a longer row gets a block of its own size). At most one block is
/// partly dead (the oldest, whose first rows were dropped): 64 KiB against the ~1 MB of text a
/// full history of typical rows holds.
const BLOCK: usize = 64 * 1024;

/// Where a row's text is: block `block` (counted from the first block ever made), bytes
/// `start..start + len`.
#[derive(Clone, Copy)]
struct RowRef {
    block: u64,
    start: u32,
    len: u32,
}

pub struct History {
    /// Blocks of row texts (UTF-8: whole rows of text from vt100's cells, which are encoded from
    /// chars), oldest first; `blocks[0]` is block number `first_block`.
    blocks: VecDeque<Vec<u8>>,
    first_block: u64,
    rows: VecDeque<RowRef>,
    capacity: usize,
    bytes: usize,
    /// Rows ever pushed (not capped): lets a scrolled-back view stay still as rows arrive.
    total_pushed: u64,
    decoder: RefCell<vt100::Parser>,
    /// Reused formatting buffer: a row is formatted here, then copied out at its exact size, so
    /// a flood of scrolled rows costs one allocation a row instead of a growing string's several.
    scratch: Vec<u8>,
}

impl History {
    pub fn new(capacity: usize) -> Self {
        History {
            blocks: VecDeque::new(),
            first_block: 0,
            rows: VecDeque::new(),
            capacity,
            bytes: 0,
            total_pushed: 0,
            decoder: RefCell::new(vt100::Parser::new(ONE_ROW, DECODE_WIDTH, 0)),
            scratch: Vec::new(),
        }
    }

    /// Stores a row that scrolled off the main screen.
    pub fn push(&mut self, row: RowContents<'_>) {
        if self.capacity == 0 {
            return;
        }
        self.scratch.clear();
        // Each row gets a fresh capture state so it decodes on its own. `push_formatted_basic`
        // (our vt100 patch) writes what `write_formatted_basic` would, without `core::fmt`.
        let mut state = BasicFormattedCaptureState::new();
        row.push_formatted_basic(&mut self.scratch, &mut state);
        let text = std::mem::take(&mut self.scratch);
        self.push_text(&text);
        self.scratch = text;
    }

    /// Stores an already formatted row (text with SGR codes, no newline).
    #[cfg(test)]
    pub(crate) fn push_formatted(&mut self, text: String) {
        if self.capacity == 0 {
            return;
        }
        self.push_text(text.as_bytes());
    }

    fn push_text(&mut self, text: &[u8]) {
        if self.rows.len() == self.capacity {
            self.drop_oldest();
        }
        // A row is at most a few KiB (every cell with its own colours), far from 4 GiB.
        let Ok(len) = u32::try_from(text.len()) else {
            return;
        };
        let fits = self
            .blocks
            .back()
            .is_some_and(|block| block.capacity() - block.len() >= text.len());
        if !fits {
            self.blocks
                .push_back(Vec::with_capacity(BLOCK.max(text.len())));
        }
        let block = self.first_block + self.blocks.len() as u64 - 1;
        let Some(last) = self.blocks.back_mut() else {
            return;
        };
        let Ok(start) = u32::try_from(last.len()) else {
            return;
        };
        last.extend_from_slice(text);
        self.bytes += text.len();
        self.total_pushed += 1;
        self.rows.push_back(RowRef { block, start, len });
    }

    /// Drops the oldest row, and the blocks no row is in any more (but the newest, which the
    /// next rows go to).
    fn drop_oldest(&mut self) {
        let Some(old) = self.rows.pop_front() else {
            return;
        };
        self.bytes -= old.len as usize;
        let oldest_kept = self.rows.front().map_or(u64::MAX, |row| row.block);
        while self.first_block < oldest_kept && self.blocks.len() > 1 {
            self.blocks.pop_front();
            self.first_block += 1;
        }
    }

    /// Row `index`'s text (0 = oldest). Checked as UTF-8 here, when read (a screenful at a time,
    /// or the transcript once), rather than for every row a flood scrolls through.
    fn text(&self, index: usize) -> Option<&str> {
        let row = self.rows.get(index)?;
        let block = self
            .blocks
            .get(usize::try_from(row.block - self.first_block).ok()?)?;
        let start = row.start as usize;
        std::str::from_utf8(block.get(start..start + row.len as usize)?).ok()
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
        self.first_block += self.blocks.len() as u64;
        self.blocks.clear();
        self.bytes = 0;
    }

    /// Decodes row `index` (0 = oldest) and calls `each(col, cell)` for its first `cols` cells.
    pub(crate) fn with_row_cells(
        &self,
        index: usize,
        cols: u16,
        mut each: impl FnMut(u16, &vt100::Cell),
    ) {
        let Some(text) = self.text(index) else {
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
        (0..self.rows.len()).filter_map(|index| self.text(index))
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

    /// Rows live in shared blocks: a block goes when its last row does, rows never mix up across
    /// blocks, and clearing starts afresh.
    #[test]
    fn rows_in_blocks_are_freed_with_the_last_row_in_them() {
        let mut h = History::new(1_000);
        let row = |i: usize| format!("{i:05} {}", "x".repeat(i % 300));
        for i in 0..20_000 {
            h.push_formatted(row(i));
        }
        assert_eq!(h.len(), 1_000);
        for index in [0, 1, 499, 998, 999] {
            assert_eq!(
                h.text(index),
                Some(row(19_000 + index).as_str()),
                "row {index}"
            );
        }
        let bytes: usize = (19_000..20_000).map(|i| row(i).len()).sum();
        assert_eq!(h.text_bytes(), bytes);
        // The text kept, rounded up to blocks, plus the oldest block's dead start.
        assert!(
            h.blocks.len() <= bytes / BLOCK + 2,
            "{} blocks",
            h.blocks.len()
        );
        assert_eq!(h.formatted_rows().count(), 1_000);

        let long = "y".repeat(BLOCK + 10);
        h.push_formatted(long.clone());
        assert_eq!(h.text(999), Some(long.as_str()));
        assert_eq!(h.text(998), Some(row(19_999).as_str()));

        h.clear();
        assert!(h.is_empty());
        assert_eq!(h.text(0), None);
        h.push_formatted("after".into());
        assert_eq!(h.row_text(0).as_deref(), Some("after"));
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

    /// The capture's fast path (`push_formatted_basic`, our vt100 patch) writes exactly what
    /// vt100's own formatter does, row by row, over output with every kind of cell: colours of
    /// all three kinds, each attribute on and off, wide and combining characters, blanks with and
    /// without a background, wrapped rows and rows ending in blanks.
    #[test]
    fn the_fast_capture_writes_what_vt100s_formatter_writes() {
        struct Both {
            fast: Vec<String>,
            slow: Vec<String>,
        }
        impl vt100::Callbacks for Both {
            fn on_scroll(&mut self, row: RowContents<'_>, _alternate: bool) {
                let mut fast = Vec::new();
                row.push_formatted_basic(&mut fast, &mut BasicFormattedCaptureState::new());
                let fast = String::from_utf8(fast).unwrap();
                let mut slow = String::new();
                row.write_formatted_basic(&mut slow, &mut BasicFormattedCaptureState::new())
                    .unwrap();
                self.fast.push(fast);
                self.slow.push(slow);
            }
        }
        const PIECES: &[&str] = &[
            "plain",
            " ",
            "  ",
            "é",
            "→",
            "中",
            "文",
            "e\u{301}",
            "\u{2764}\u{fe0f}",
            "\t",
            "x",
            "\x1b[m",
            "\x1b[1m",
            "\x1b[2m",
            "\x1b[22m",
            "\x1b[3m",
            "\x1b[23m",
            "\x1b[4m",
            "\x1b[24m",
            "\x1b[7m",
            "\x1b[27m",
            "\x1b[31m",
            "\x1b[92m",
            "\x1b[38;5;200m",
            "\x1b[38;2;1;2;3m",
            "\x1b[39m",
            "\x1b[44m",
            "\x1b[103m",
            "\x1b[48;5;17m",
            "\x1b[48;2;250;0;9m",
            "\x1b[49m",
            "\x1b[K",
            "\x1b[5C",
            "\x1b[3D",
            "\r\n",
            "\r\n",
            "\x1b[2K",
        ];
        let mut parser = vt100::Parser::new_with_callbacks(
            NonZeroU16::new(3).unwrap(),
            NonZeroU16::new(17).unwrap(),
            0,
            Both {
                fast: Vec::new(),
                slow: Vec::new(),
            },
        );
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            parser.process(PIECES[(state % PIECES.len() as u64) as usize].as_bytes());
        }
        let both = parser.callbacks();
        assert!(both.slow.len() > 1_000, "{} rows", both.slow.len());
        assert!(both.slow.iter().any(|row| row.contains("\x1b[38;2;1;2;3m")));
        for (index, (fast, slow)) in both.fast.iter().zip(&both.slow).enumerate() {
            assert_eq!(fast, slow, "row {index}");
        }
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

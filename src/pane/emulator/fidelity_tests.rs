//! Table tests for the VT100/xterm behaviours our vt100 patch adds (`vendor/README.md`): bytes
//! in, screen rows and cursor out. Each expectation is xterm's behaviour; tmux 3.3a shows the
//! same except where a case says otherwise (checked by printing each input in a `tmux
//! new-session -d -x 10 -y 4` pane and reading `capture-pane -p`, and `-e` for line drawing,
//! which tmux keeps as the letter and marks with SO/SI).

use super::*;
use crate::pane::{Rgb, TerminalColors};

const ROWS: u16 = 4;
const COLS: u16 = 10;

struct Case {
    name: &'static str,
    input: &'static [u8],
    /// The rows, trailing blanks trimmed; rows not listed are blank.
    rows: &'static [&'static str],
    /// `(row, col)`, 0-based.
    cursor: (u16, u16),
}

fn shown(input: &[u8]) -> (Vec<String>, (u16, u16)) {
    let colors = TerminalColors {
        foreground: Rgb(255, 255, 255),
        background: Rgb(0, 0, 0),
        palette: [Rgb(0, 0, 0); 16],
    };
    let mut emulator = Emulator::new(ROWS, COLS, 0, colors, HostInfo::default());
    emulator.process(input);
    let screen = emulator.screen();
    let mut rows: Vec<String> = screen
        .rows(0, COLS)
        .map(|row| row.trim_end().to_owned())
        .collect();
    while rows.last().is_some_and(String::is_empty) {
        rows.pop();
    }
    (rows, screen.cursor_position())
}

fn check(cases: &[Case]) {
    for case in cases {
        let (rows, cursor) = shown(case.input);
        assert_eq!(rows, case.rows, "{}: rows", case.name);
        assert_eq!(cursor, case.cursor, "{}: cursor", case.name);
    }
}

#[test]
fn character_sets_translate_each_printed_character() {
    check(&[
        Case {
            name: "DEC special graphics in G0",
            input: b"\x1b(0lqqk\x1b(Bq",
            rows: &["┌──┐q"],
            cursor: (0, 5),
        },
        Case {
            name: "the whole line-drawing range",
            input: b"\x1b(0`afgjklm\r\nnqtuvwx~\x1b(B",
            rows: &["◆▒°±┘┐┌└", "┼─├┤┴┬│·"],
            cursor: (1, 8),
        },
        Case {
            name: "letters outside 0x5f..0x7e stay",
            input: b"\x1b(0AZ09",
            rows: &["AZ09"],
            cursor: (0, 4),
        },
        Case {
            name: "SO invokes G1, SI goes back to G0",
            input: b"\x1b)0q\x0eq\x0fq",
            rows: &["q─q"],
            cursor: (0, 3),
        },
        Case {
            // tmux 3.3a ignores the British set and shows `#`.
            name: "British set shows # as a pound sign",
            input: b"\x1b(A#3\x1b(B#",
            rows: &["£3#"],
            cursor: (0, 3),
        },
        // tmux 3.3a has no G2 and G3: it shows `q` for these two.
        Case {
            name: "SS2 shifts G2 for one character",
            input: b"\x1b*0\x1bNqq",
            rows: &["─q"],
            cursor: (0, 2),
        },
        Case {
            name: "LS3 locks G3 into GL",
            input: b"\x1b+0\x1boqq\x0fq",
            rows: &["──q"],
            cursor: (0, 3),
        },
        Case {
            name: "an unknown set leaves the designation",
            input: b"\x1b(0\x1b(Kq",
            rows: &["─"],
            cursor: (0, 1),
        },
        Case {
            name: "DECSC saves the character sets, DECRC restores them",
            input: b"\x1b(0\x1b7\x1b(Bq\x1b8q",
            rows: &["─"],
            cursor: (0, 1),
        },
        Case {
            name: "RIS goes back to ASCII",
            input: b"\x1b(0\x1bcq",
            rows: &["q"],
            cursor: (0, 1),
        },
        // tmux 3.3a repeats only right after a printed character, so shows `q` alone.
        Case {
            name: "REP translates the repeated character again, as xterm",
            input: b"q\x1b(0\x1b[2b\x1b(B\x1b[b",
            rows: &["q──q"],
            cursor: (0, 4),
        },
    ]);
}

#[test]
fn decaln_fills_the_screen_resets_margins_and_homes() {
    check(&[
        Case {
            name: "DECALN",
            input: b"ab\r\n\x1b[31mcd\x1b[2;3r\x1b[3;4H\x1b#8",
            rows: &["EEEEEEEEEE"; 4],
            cursor: (0, 0),
        },
        Case {
            // The margins are the whole screen again: a line feed at the bottom scrolls it all.
            name: "DECALN then scrolling",
            input: b"\x1b[2;3r\x1b#8\x1b[4;1H\nX",
            rows: &["EEEEEEEEEE", "EEEEEEEEEE", "EEEEEEEEEE", "X"],
            cursor: (3, 1),
        },
    ]);
}

#[test]
fn tab_stops_can_be_set_and_cleared() {
    check(&[
        Case {
            name: "default stop every eight columns",
            input: b"\ta",
            rows: &["        a"],
            cursor: (0, 9),
        },
        Case {
            name: "no stop left: the last column",
            input: b"\t\t\ta",
            rows: &["         a"],
            cursor: (0, 10),
        },
        Case {
            name: "HTS sets a stop",
            input: b"\x1b[4G\x1bH\r\ta",
            rows: &["   a"],
            cursor: (0, 4),
        },
        Case {
            name: "TBC 0 clears the stop at the cursor",
            input: b"\x1b[9G\x1b[g\r\ta",
            rows: &["         a"],
            cursor: (0, 10),
        },
        Case {
            name: "TBC 3 clears them all",
            input: b"\x1b[3G\x1bH\x1b[3g\r\ta",
            rows: &["         a"],
            cursor: (0, 10),
        },
        // tmux 3.3a ignores CHT.
        Case {
            name: "CHT moves forward over stops",
            input: b"\x1b[3G\x1bH\x1b[6G\x1bH\r\x1b[2Ia",
            rows: &["     a"],
            cursor: (0, 6),
        },
        Case {
            name: "CBT moves back over stops, to the first column at most",
            input: b"\x1b[3G\x1bH\x1b[10G\x1b[Za\x1b[2Zb\x1b[5Zc",
            rows: &["c b     a"],
            cursor: (0, 1),
        },
        Case {
            name: "RIS restores the default stops",
            input: b"\x1b[3g\x1bc\ta",
            rows: &["        a"],
            cursor: (0, 9),
        },
    ]);
}

#[test]
fn insert_mode_shifts_the_line_as_characters_arrive() {
    check(&[
        Case {
            name: "IRM inserts",
            input: b"abc\r\x1b[4hXY",
            rows: &["XYabc"],
            cursor: (0, 2),
        },
        Case {
            name: "characters pushed past the margin are lost",
            input: b"0123456789\r\x1b[4hX",
            rows: &["X012345678"],
            cursor: (0, 1),
        },
        Case {
            name: "IRM reset replaces again",
            input: b"abc\r\x1b[4h\x1b[4lX",
            rows: &["Xbc"],
            cursor: (0, 1),
        },
        Case {
            name: "a wide character inserts two cells",
            input: "abc\r\x1b[4h中".as_bytes(),
            rows: &["中abc"],
            cursor: (0, 2),
        },
    ]);
}

#[test]
fn autowrap_off_overwrites_the_last_column() {
    check(&[
        Case {
            name: "DECAWM reset",
            input: b"\x1b[?7l0123456789AB",
            rows: &["012345678B"],
            cursor: (0, 9),
        },
        Case {
            name: "DECAWM set again wraps",
            input: b"\x1b[?7l0123456789AB\x1b[?7hCD",
            rows: &["012345678C", "D"],
            cursor: (1, 1),
        },
        // Written over the last columns like a narrow one; tmux 3.3a drops it.
        Case {
            name: "a wide character takes the last two columns",
            input: "\x1b[?7l0123456789中".as_bytes(),
            rows: &["01234567中"],
            cursor: (0, 9),
        },
        Case {
            name: "autowrap on by default",
            input: b"0123456789AB",
            rows: &["0123456789", "AB"],
            cursor: (1, 2),
        },
        Case {
            // The cursor waits on the last column to wrap; BS leaves it for the one before
            // (vttest 1.3, "backspace at right margin"). tmux 3.3a lands on the last column,
            // writes over it and wraps the next character.
            name: "BS at the pending wrap",
            input: b"\x1b[1;10HN\x08 n",
            rows: &["         n"],
            cursor: (0, 10),
        },
    ]);
}

#[test]
fn origin_mode_addresses_the_scroll_region() {
    check(&[
        Case {
            name: "CUP is relative to the region",
            input: b"\x1b[2;3r\x1b[?6h\x1b[1;1HA",
            rows: &["", "A"],
            cursor: (1, 1),
        },
        Case {
            name: "CUP is clamped to the region",
            input: b"\x1b[2;3r\x1b[?6h\x1b[9;1HA",
            rows: &["", "", "A"],
            cursor: (2, 1),
        },
        Case {
            // tmux 3.3a homes to the screen's top left (vttest 2.11 then fails).
            name: "DECSTBM homes to the region's top in origin mode",
            input: b"\x1b[?6h\x1b[3;4rA",
            rows: &["", "", "A"],
            cursor: (2, 1),
        },
        Case {
            name: "DECSTBM homes to the screen's top left otherwise",
            input: b"\x1b[4;5H\x1b[3;4rA",
            rows: &["A"],
            cursor: (0, 1),
        },
        Case {
            name: "VPA is relative to the region",
            input: b"\x1b[2;3r\x1b[?6h\x1b[3G\x1b[2dA",
            rows: &["", "", "  A"],
            cursor: (2, 3),
        },
        Case {
            name: "a one-row region is ignored",
            input: b"\x1b[2;3r\x1b[4;4r\x1b[?6hA",
            rows: &["", "A"],
            cursor: (1, 1),
        },
        Case {
            name: "DECOM reset homes to the screen",
            input: b"\x1b[2;3r\x1b[?6h\x1b[?6lA",
            rows: &["A"],
            cursor: (0, 1),
        },
    ]);
}

#[test]
fn index_next_line_and_deccolm() {
    check(&[
        Case {
            name: "IND moves down in the same column",
            input: b"ab\x1bDc",
            rows: &["ab", "  c"],
            cursor: (1, 3),
        },
        Case {
            name: "IND at the bottom scrolls",
            input: b"a\x1b[4;1Hb\x1bDc",
            rows: &["", "", "b", " c"],
            cursor: (3, 2),
        },
        Case {
            name: "NEL is CR LF",
            input: b"ab\x1bEc",
            rows: &["ab", "c"],
            cursor: (1, 1),
        },
        // tmux 3.3a keeps the margins, so the line feed does not scroll and X stays.
        Case {
            name: "DECCOLM clears, resets the margins and homes",
            input: b"ab\r\ncd\x1b[2;3r\x1b[?3hX\x1b[4;1H\nY",
            // The line feed on the last row scrolled the whole screen, X with it.
            rows: &["", "", "", "Y"],
            cursor: (3, 1),
        },
    ]);
}

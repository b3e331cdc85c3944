//! Conformance against a peer's suite: vttest 2.7's screens for cursor movements, screen
//! features, character sets and VT102 insert/delete, replayed from a recording
//! (`tests/fixtures/vttest/`, made by `scripts/record-vttest-fixtures.sh`: vttest's output
//! bytes as tmux received them, and what tmux showed at each screen, corrected to xterm's
//! behaviour where tmux differs — the fixture's README says where). The pane must show what
//! the reference terminal showed, screen by screen.

use super::*;
use crate::pane::{Rgb, TerminalColors};

const ROWS: u16 = 24;
const COLS: u16 = 80;

fn fixture_dir() -> String {
    format!("{}/tests/fixtures/vttest", env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|error| panic!("reading {path}: {error}"))
}

/// The screen as `tmux capture-pane -p` prints it: one line per row, trailing blanks trimmed.
fn screen_text(emulator: &Emulator) -> String {
    let mut text: String = emulator
        .screen()
        .rows(0, COLS)
        .map(|row| row.trim_end().to_owned() + "\n")
        .collect();
    text.truncate(text.trim_end_matches('\n').len());
    text
}

/// `(screen name, bytes of the stream written when vttest showed it)` from `offsets`.
fn offsets() -> Vec<(String, usize)> {
    let path = format!("{}/offsets", fixture_dir());
    let text = String::from_utf8(read(&path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .map(|line| {
            let (name, offset) = line
                .split_once(' ')
                .unwrap_or_else(|| panic!("{path}: no offset in {line:?}"));
            let offset = offset
                .parse()
                .unwrap_or_else(|e| panic!("{path}: bad offset in {line:?}: {e}"));
            (name.to_owned(), offset)
        })
        .collect()
}

#[test]
fn vttest_screens_match_the_reference_terminal() {
    let stream = read(&format!("{}/stream.bin", fixture_dir()));
    let colors = TerminalColors {
        foreground: Rgb(255, 255, 255),
        background: Rgb(0, 0, 0),
        palette: [Rgb(0, 0, 0); 16],
    };
    let mut emulator = Emulator::new(ROWS, COLS, 0, colors, HostInfo::default());
    let mut fed = 0;
    let mut mismatches = Vec::new();
    let screens = offsets();
    assert!(
        screens.len() >= 20,
        "the recording lists {} screens",
        screens.len()
    );
    for (name, offset) in &screens {
        emulator.process(&stream[fed..*offset]);
        fed = *offset;
        let expected = String::from_utf8(read(&format!("{}/screens/{name}", fixture_dir())))
            .unwrap_or_else(|e| panic!("screen {name}: {e}"));
        let expected = expected.trim_end_matches('\n');
        let shown = screen_text(&emulator);
        if shown != expected {
            mismatches.push(format!(
                "vttest screen {name}\n--- expected\n{expected}\n--- the pane shows\n{shown}\n"
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} screens differ:\n{}",
        mismatches.len(),
        screens.len(),
        mismatches.join("\n")
    );
}

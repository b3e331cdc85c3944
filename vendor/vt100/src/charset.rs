// unipi-tui patch: character sets (ISO 2022 designations and shifts as a
// VT100/VT220 and xterm implement them), translated per printed character.

/// A 94-character set that can be designated into G0..G3.
#[derive(Copy, Clone, Debug, Default, Eq, PartialEq)]
pub enum Charset {
    /// `ESC ( B`: US ASCII, the default.
    #[default]
    Ascii,
    /// `ESC ( A`: the British set, ASCII with `#` shown as `£`.
    Uk,
    /// `ESC ( 0`: DEC Special Graphics (line drawing).
    DecSpecialGraphics,
}

impl Charset {
    /// The set an SCS final byte designates, or `None` for sets we do not
    /// implement (the designation is then ignored, as tmux does). `1` and `2`
    /// are the VT100's alternate character ROM (standard and graphics), which
    /// xterm and tmux show as ASCII.
    pub fn from_final(b: u8) -> Option<Self> {
        match b {
            b'B' | b'1' | b'2' => Some(Self::Ascii),
            b'A' => Some(Self::Uk),
            b'0' => Some(Self::DecSpecialGraphics),
            _ => None,
        }
    }

    fn translate(self, c: char) -> char {
        match self {
            Self::Ascii => c,
            Self::Uk => {
                if c == '#' {
                    '£'
                } else {
                    c
                }
            }
            Self::DecSpecialGraphics => dec_special_graphics(c),
        }
    }
}

/// The Unicode characters xterm uses for DEC Special Graphics 0x5f..=0x7e.
fn dec_special_graphics(c: char) -> char {
    match c {
        '_' => ' ',
        '`' => '◆',
        'a' => '▒',
        'b' => '␉',
        'c' => '␌',
        'd' => '␍',
        'e' => '␊',
        'f' => '°',
        'g' => '±',
        'h' => '␤',
        'i' => '␋',
        'j' => '┘',
        'k' => '┐',
        'l' => '┌',
        'm' => '└',
        'n' => '┼',
        'o' => '⎺',
        'p' => '⎻',
        'q' => '─',
        'r' => '⎼',
        's' => '⎽',
        't' => '├',
        'u' => '┤',
        'v' => '┴',
        'w' => '┬',
        'x' => '│',
        'y' => '≤',
        'z' => '≥',
        '{' => 'π',
        '|' => '≠',
        '}' => '£',
        '~' => '·',
        _ => c,
    }
}

/// G0..G3, which of them is invoked into GL (SI/SO, LS2/LS3), and a pending
/// single shift (SS2/SS3). Saved and restored by DECSC/DECRC, as in xterm.
#[derive(Copy, Clone, Debug, Eq, PartialEq)]
pub struct CharsetState {
    designated: [Charset; 4],
    gl: usize,
    single_shift: Option<usize>,
    /// No translation at all (ASCII in GL, no single shift): the state of
    /// nearly every printed character, checked with one load.
    plain: bool,
}

impl Default for CharsetState {
    fn default() -> Self {
        Self {
            designated: [Charset::Ascii; 4],
            gl: 0,
            single_shift: None,
            plain: true,
        }
    }
}

impl CharsetState {
    /// `ESC ( F` (G0), `ESC ) F` (G1), `ESC * F` (G2), `ESC + F` (G3).
    pub fn designate(&mut self, slot: usize, charset: Charset) {
        if let Some(designated) = self.designated.get_mut(slot) {
            *designated = charset;
        }
        self.update_plain();
    }

    /// SI (G0), SO (G1), LS2 (G2), LS3 (G3).
    pub fn invoke_gl(&mut self, slot: usize) {
        self.gl = slot.min(3);
        self.update_plain();
    }

    /// SS2 (G2) and SS3 (G3): the next printed character only.
    pub fn single_shift(&mut self, slot: usize) {
        self.single_shift = Some(slot.min(3));
        self.update_plain();
    }

    /// The character to store for printed character `c`.
    #[inline]
    pub fn translate(&mut self, c: char) -> char {
        if self.plain {
            c
        } else {
            self.translate_shifted(c)
        }
    }

    fn translate_shifted(&mut self, c: char) -> char {
        let slot = self.single_shift.take().unwrap_or(self.gl);
        self.update_plain();
        self.designated[slot].translate(c)
    }

    fn update_plain(&mut self) {
        self.plain = self.single_shift.is_none()
            && self.designated[self.gl] == Charset::Ascii;
    }
}

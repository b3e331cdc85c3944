//! A byte scanner that runs beside vt100's parser and finds what vt100 cannot tell us: where each
//! OSC string ends and with which terminator (BEL or ST), where a full reset (`ESC c`) happens,
//! and where the scrollback is erased (`CSI 3 J`). vt100 drops the OSC terminator (xterm answers a
//! query with the terminator the query used) and, through vte, caps an OSC at 16 `;`-fields (one
//! `OSC 4` may ask for any number of colours); it resets its screen on RIS and erases scrollback
//! without telling its callbacks, so the modes and the history we keep beside it would go stale.
//!
//! The scanner mirrors vte 0.15's state machine only as far as needed: from every state but an
//! OSC string, ESC enters the escape state; `ESC ]` starts an OSC, which BEL ends, ESC ends (vte
//! dispatches on the ESC of `ESC \`) and CAN/SUB abort; `ESC [` starts a CSI, which a byte in
//! `@..~` ends. The caller splits its input right after each event, so vt100 has processed
//! exactly the bytes up to the event when it is handled, and replies stay in stream order.

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;
const CAN: u8 = 0x18;
const SUB: u8 = 0x1a;

/// Longest OSC payload we keep. OSC 52 carries base64 clipboard text, so this is generous; a
/// longer string is dropped whole rather than acted on truncated.
const MAX_OSC_PAYLOAD: usize = 1 << 20;

/// What the scanner saw complete at one byte of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ScanEvent {
    /// An OSC string ended. `payload` is everything between `ESC ]` and the terminator, with the
    /// C0 controls vte ignores inside OSC strings removed.
    Osc {
        payload: Vec<u8>,
        terminator: OscTerminator,
    },
    /// `ESC c` (RIS): vt100 has just reset its screen.
    FullReset,
    /// `CSI 3 J` (or `CSI ? 3 J`): erase the scrollback.
    EraseScrollback,
}

/// How an OSC string was terminated; replies to queries use the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OscTerminator {
    Bel,
    St,
}

impl OscTerminator {
    pub(super) fn bytes(self) -> &'static [u8] {
        match self {
            Self::Bel => b"\x07",
            Self::St => b"\x1b\\",
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct EscapeScanner {
    state: Sequence,
    payload: Vec<u8>,
    overflowed: bool,
    csi_params: Vec<u8>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Sequence {
    /// Any vte state other than Escape and OscString: only ESC matters here.
    #[default]
    Other,
    Escape,
    Osc,
    Csi,
}

impl EscapeScanner {
    /// Scans `bytes` up to and including the first byte that completes an event, and returns that
    /// byte's index with the event; `None` when the whole slice was consumed without one.
    pub(super) fn next_event(&mut self, bytes: &[u8]) -> Option<(usize, ScanEvent)> {
        let mut index = 0;
        while index < bytes.len() {
            if self.state == Sequence::Other {
                // Fast path: outside escapes nothing but ESC can change our state.
                match bytes[index..].iter().position(|&b| b == ESC) {
                    Some(offset) => index += offset,
                    None => return None,
                }
                // Most escapes are a CSI that is not `3 J` or one we ignore (`ESC 7`, `ESC (
                // B`, …): decided from the next two bytes when they are here, without stepping
                // through the states.
                if let Some(skip) = Self::uneventful_escape(&bytes[index..]) {
                    index += skip;
                    continue;
                }
            }
            if let Some(event) = self.advance(bytes[index]) {
                return Some((index, event));
            }
            index += 1;
        }
        None
    }

    /// For `rest` starting with ESC, outside any sequence: how many bytes can be skipped in the
    /// `Other` state because they can start no event, as [`Self::advance`] would decide byte by
    /// byte; `None` when it takes the state machine (an OSC, RIS, a CSI that may be `3 J`, a
    /// control or the end of the chunk after the ESC).
    fn uneventful_escape(rest: &[u8]) -> Option<usize> {
        match *rest {
            // A CSI whose first byte is a parameter other than `3` and `?`, or its final byte
            // (no parameters: not `3 J`). Its other bytes only matter if one is ESC, which the
            // search for the next ESC finds.
            [ESC, b'[', first, ..]
                if matches!(first, 0x20..=0x7e) && !matches!(first, b'3' | b'?') =>
            {
                Some(3)
            }
            // `3` or `?` then anything but what makes `3 J` or `? 3 J` (the most common CSI of
            // all, SGR `38;2;…` and `39`, starts with `3`).
            [ESC, b'[', b'3', second, ..] if matches!(second, 0x20..=0x7e) && second != b'J' => {
                Some(4)
            }
            [ESC, b'[', b'?', second, ..] if matches!(second, 0x20..=0x7e) && second != b'3' => {
                Some(4)
            }
            // Any other escape that is not an OSC, RIS or CSI ends at its second byte.
            [ESC, second, ..]
                if matches!(second, 0x20..=0x7e) && !matches!(second, b']' | b'[' | b'c') =>
            {
                Some(2)
            }
            _ => None,
        }
    }

    fn advance(&mut self, byte: u8) -> Option<ScanEvent> {
        match self.state {
            Sequence::Other => {
                if byte == ESC {
                    self.state = Sequence::Escape;
                }
                None
            }
            Sequence::Escape => {
                self.state = match byte {
                    b']' => {
                        self.payload.clear();
                        self.overflowed = false;
                        Sequence::Osc
                    }
                    b'[' => {
                        self.csi_params.clear();
                        Sequence::Csi
                    }
                    b'c' => {
                        self.state = Sequence::Other;
                        return Some(ScanEvent::FullReset);
                    }
                    CAN | SUB => Sequence::Other,
                    // vte executes other C0 controls and ignores DEL and high bytes without
                    // leaving the escape state.
                    ESC | 0x00..=0x1f | 0x7f..=0xff => Sequence::Escape,
                    _ => Sequence::Other,
                };
                None
            }
            Sequence::Csi => self.advance_csi(byte),
            Sequence::Osc => match byte {
                BEL => {
                    self.state = Sequence::Other;
                    self.finish_osc(OscTerminator::Bel)
                }
                ESC => {
                    self.state = Sequence::Escape;
                    self.finish_osc(OscTerminator::St)
                }
                CAN | SUB => {
                    // Cancelled: vte would still dispatch the half string, but acting on a cut
                    // clipboard payload or notification is worse than dropping it.
                    self.state = Sequence::Other;
                    tracing::debug!("OSC string cancelled by CAN/SUB");
                    None
                }
                0x00..=0x1f => None,
                _ => {
                    if self.payload.len() < MAX_OSC_PAYLOAD {
                        self.payload.push(byte);
                    } else {
                        self.overflowed = true;
                    }
                    None
                }
            },
        }
    }

    fn advance_csi(&mut self, byte: u8) -> Option<ScanEvent> {
        match byte {
            ESC => self.state = Sequence::Escape,
            CAN | SUB => self.state = Sequence::Other,
            // Parameters, private markers and intermediates. Only `3` and `?3` matter: once the
            // sequence cannot be one of them, the rest is skipped like plain output (the fast
            // path jumps to the next ESC). That changes nothing we report, since inside a CSI,
            // as outside escapes, only ESC (and CAN/SUB, which we ignore outside) moves us on.
            0x20..=0x3f => {
                self.csi_params.push(byte);
                if !matches!(self.csi_params.as_slice(), b"3" | b"?" | b"?3") {
                    self.state = Sequence::Other;
                }
            }
            0x40..=0x7e => {
                self.state = Sequence::Other;
                if byte == b'J' && matches!(self.csi_params.as_slice(), b"3" | b"?3") {
                    return Some(ScanEvent::EraseScrollback);
                }
            }
            // vte executes C0 controls inside a CSI and ignores DEL and high bytes.
            _ => {}
        }
        None
    }

    fn finish_osc(&mut self, terminator: OscTerminator) -> Option<ScanEvent> {
        let payload = std::mem::take(&mut self.payload);
        if std::mem::take(&mut self.overflowed) {
            tracing::debug!(limit = MAX_OSC_PAYLOAD, "dropping oversized OSC string");
            return None;
        }
        Some(ScanEvent::Osc {
            payload,
            terminator,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events with the index of the byte that completed each.
    type Events = Vec<(usize, ScanEvent)>;

    /// Every event in `bytes`.
    fn scan_all(bytes: &[u8]) -> Events {
        let mut scanner = EscapeScanner::default();
        let mut events = Vec::new();
        let mut start = 0;
        while let Some((index, event)) = scanner.next_event(&bytes[start..]) {
            events.push((start + index, event));
            start += index + 1;
        }
        events
    }

    fn osc(payload: &str, terminator: OscTerminator) -> ScanEvent {
        ScanEvent::Osc {
            payload: payload.as_bytes().to_vec(),
            terminator,
        }
    }

    #[test]
    fn finds_osc_ends_and_resets_where_vte_dispatches_them() {
        use OscTerminator::{Bel, St};
        let cases: &[(&str, &[u8], Events)] = &[
            ("plain text", b"hello \x1b[1mworld", vec![]),
            (
                "BEL terminated",
                b"\x1b]10;?\x07",
                vec![(6, osc("10;?", Bel))],
            ),
            // vte dispatches on the ESC of `ESC \`, so the event is at the ESC.
            (
                "ST terminated",
                b"a\x1b]7501;?\x1b\\b",
                vec![(9, osc("7501;?", St))],
            ),
            (
                "two in a row",
                b"\x1b]0;t\x07\x1b]2;u\x1b\\",
                vec![(5, osc("0;t", Bel)), (11, osc("2;u", St))],
            ),
            (
                "OSC ended by the next OSC's ESC",
                b"\x1b]1;a\x1b]2;b\x07",
                vec![(5, osc("1;a", St)), (10, osc("2;b", Bel))],
            ),
            (
                "C0 controls inside are dropped",
                b"\x1b]0;a\x01b\x07",
                vec![(7, osc("0;ab", Bel))],
            ),
            ("CAN cancels", b"\x1b]52;c;QQ\x18\x07", vec![]),
            ("RIS", b"x\x1bc", vec![(2, ScanEvent::FullReset)]),
            (
                "controls between ESC and c",
                b"\x1b\x07c",
                vec![(2, ScanEvent::FullReset)],
            ),
            ("ESC SP c is not RIS", b"\x1b c", vec![]),
            ("CSI c is DA1, not RIS", b"\x1b[c", vec![]),
            (
                "erase scrollback",
                b"\x1b[2J\x1b[H\x1b[3J",
                vec![(10, ScanEvent::EraseScrollback)],
            ),
            (
                "DECSED erase scrollback",
                b"\x1b[?3J",
                vec![(4, ScanEvent::EraseScrollback)],
            ),
            (
                "erase below is not",
                b"\x1b[J\x1b[0J\x1b[13J\x1b[>3J",
                vec![],
            ),
            (
                "controls inside a CSI",
                b"\x1b[3\x07J",
                vec![(4, ScanEvent::EraseScrollback)],
            ),
            (
                "ESC inside a CSI",
                b"\x1b[3\x1bc",
                vec![(4, ScanEvent::FullReset)],
            ),
            (
                "ESC inside a CSI restarts",
                b"\x1b[1\x1b]0;t\x07",
                vec![(8, osc("0;t", Bel))],
            ),
            (
                "ESC inside DCS restarts",
                b"\x1bPq\x1b]0;t\x07",
                vec![(8, osc("0;t", Bel))],
            ),
            ("BEL outside OSC is not an event", b"\x07\x1b\x07", vec![]),
        ];
        for (name, input, expected) in cases {
            assert_eq!(&scan_all(input), expected, "{name}");
        }
    }

    #[test]
    fn state_survives_chunk_boundaries() {
        let mut scanner = EscapeScanner::default();
        assert_eq!(scanner.next_event(b"\x1b]11"), None);
        assert_eq!(
            scanner.next_event(b";?\x1b"),
            Some((2, osc("11;?", OscTerminator::St)))
        );
        assert_eq!(scanner.next_event(b"\\"), None);
        assert_eq!(scanner.next_event(b"\x1b"), None);
        assert_eq!(scanner.next_event(b"c"), Some((0, ScanEvent::FullReset)));
    }

    /// The fast path over whole escapes finds what the state machine finds byte by byte (fed one
    /// byte at a time, the scanner never has the bytes after an ESC in hand).
    #[test]
    fn skipping_escapes_whole_finds_what_stepping_finds() {
        const PIECES: &[&[u8]] = &[
            b"text",
            b"\x1b",
            b"[",
            b"]",
            b"c",
            b"3",
            b"?",
            b"J",
            b"m",
            b";",
            b"1",
            b"\x07",
            b"\x18",
            b"\x1b\\",
            b" ",
            b"(",
            b"7",
            b"\x7f",
            b"\xc3\xa9",
            b"\x1b[3J",
            b"\x1b]0;t\x07",
            b"\x1b[38;2;1;2;3m",
            b"\x1b[?2026h",
            b"\x1bc",
            b">",
        ];
        let mut state = 0x2545_F491_4F6C_DD1D_u64;
        for _ in 0..200 {
            let mut input = Vec::new();
            for _ in 0..400 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                input.extend_from_slice(PIECES[(state % PIECES.len() as u64) as usize]);
            }
            let mut stepping = EscapeScanner::default();
            let mut stepped = Vec::new();
            for (index, byte) in input.iter().enumerate() {
                if let Some((_, event)) = stepping.next_event(std::slice::from_ref(byte)) {
                    stepped.push((index, event));
                }
            }
            assert_eq!(
                scan_all(&input),
                stepped,
                "{:?}",
                String::from_utf8_lossy(&input)
            );
        }
    }

    #[test]
    fn oversized_osc_is_dropped_and_the_scanner_recovers() {
        let mut input = b"\x1b]52;c;".to_vec();
        input.extend(std::iter::repeat_n(b'A', MAX_OSC_PAYLOAD + 10));
        input.extend_from_slice(b"\x07\x1b]0;t\x07");
        let events = scan_all(&input);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].1, osc("0;t", OscTerminator::Bel));
    }
}

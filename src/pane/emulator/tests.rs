//! Emulator-level tests: recorded Pi start-ups (replies and screen snapshotted, as zellij does),
//! and a table per query family, mode and passthrough rule.

use std::time::{Duration, Instant};

use super::*;
use crate::pane::Rgb;

const XTERM_PALETTE: [Rgb; 16] = [
    Rgb(0, 0, 0),
    Rgb(205, 0, 0),
    Rgb(0, 205, 0),
    Rgb(205, 205, 0),
    Rgb(0, 0, 238),
    Rgb(205, 0, 205),
    Rgb(0, 205, 205),
    Rgb(229, 229, 229),
    Rgb(127, 127, 127),
    Rgb(255, 0, 0),
    Rgb(0, 255, 0),
    Rgb(255, 255, 0),
    Rgb(92, 92, 255),
    Rgb(255, 0, 255),
    Rgb(0, 255, 255),
    Rgb(255, 255, 255),
];

fn dark_colors() -> TerminalColors {
    TerminalColors {
        foreground: Rgb(0xc0, 0xca, 0xf5),
        background: Rgb(0x1a, 0x1b, 0x26),
        palette: XTERM_PALETTE,
    }
}

fn light_colors() -> TerminalColors {
    TerminalColors {
        foreground: Rgb(0x34, 0x3b, 0x58),
        background: Rgb(0xe1, 0xe2, 0xe7),
        palette: XTERM_PALETTE,
    }
}

fn make_emulator() -> Emulator {
    Emulator::new(24, 80, 100, dark_colors(), HostInfo::default())
}

fn make_emulator_in(host: HostInfo) -> Emulator {
    Emulator::new(24, 80, 100, dark_colors(), host)
}

fn replies_to(input: &[u8]) -> String {
    let mut emulator = make_emulator();
    emulator.process(input);
    escaped(&emulator.take_replies())
}

fn escaped(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

fn read_fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|error| panic!("reading {path}: {error}"))
}

/// Everything observable after feeding `input` in `chunk`-sized pieces.
fn observe(input: &[u8], rows: u16, cols: u16, chunk: usize) -> String {
    let mut emulator = Emulator::new(rows, cols, 100, dark_colors(), HostInfo::default());
    for piece in input.chunks(chunk) {
        emulator.process(piece);
    }
    let replies = escaped(&emulator.take_replies());
    let passthrough = escaped(&emulator.take_passthrough());
    let events = emulator.take_events();
    let screen = emulator.screen();
    format!(
        "replies: {}\npassthrough: {}\nevents: {:?}\nkeyboard modes: {:?}\nfocus reporting: {}\n\
         in synchronized block: {}\nalternate screen: {}\nbracketed paste: {}\nmouse: {:?} {:?}\n\
         cursor: {:?} hidden: {}\nscreen:\n{}\n",
        replies,
        passthrough,
        events,
        emulator.keyboard_modes(),
        emulator.focus_reporting(),
        emulator.synchronized_update_deadline().is_some(),
        screen.alternate_screen(),
        screen.bracketed_paste(),
        screen.mouse_protocol_mode(),
        screen.mouse_protocol_encoding(),
        screen.cursor_position(),
        screen.hide_cursor(),
        screen.contents(),
    )
}

#[test]
fn recorded_pi_startups() {
    // Recorded at 30x100. The first three ran inside tmux, which answered DA1 but not the kitty
    // query (hence the `CSI > 4 ; 2 m` fallback); `-answered` ran with this emulator answering,
    // so Pi took the kitty protocol and reported its Program Status.
    for (fixture, snapshot) in [
        (
            "pi-1.6.0-fullscreen.startup",
            "emulator_pi_1_6_0_fullscreen_startup",
        ),
        (
            "pi-1.6.0-fullscreen-answered.startup",
            "emulator_pi_1_6_0_fullscreen_answered_startup",
        ),
        (
            "pi-1.6.0-regular.startup",
            "emulator_pi_1_6_0_regular_startup",
        ),
        ("pi-0.73.1.startup", "emulator_pi_0_73_1_startup"),
    ] {
        let stream = read_fixture(fixture);
        let whole = observe(&stream, 30, 100, stream.len());
        // Chunk boundaries must not change anything, down to one byte at a time.
        for chunk in [1, 7, 64] {
            assert_eq!(
                observe(&stream, 30, 100, chunk),
                whole,
                "{fixture} in {chunk}-byte chunks"
            );
        }
        crate::assert_ui_snapshot!(snapshot, whole);
    }
}

#[test]
fn answers_queries_like_a_terminal() {
    let version = concat!(
        "\\x1bP>|unipi-tui(",
        env!("CARGO_PKG_VERSION"),
        ")\\x1b\\\\"
    );
    let cases: &[(&str, &[u8], &str)] = &[
        (
            "output is not a query",
            b"hello \x1b[1mworld\x1b[0m\r\n",
            "",
        ),
        ("DA1", b"\x1b[c", r"\x1b[?62;22;52c"),
        ("DA1 with 0", b"\x1b[0c", r"\x1b[?62;22;52c"),
        ("DECID", b"\x1bZ", r"\x1b[?62;22;52c"),
        ("DA2", b"\x1b[>c", r"\x1b[>1;277;0c"),
        ("XTVERSION", b"\x1b[>q", version),
        ("DSR", b"\x1b[5n", r"\x1b[0n"),
        ("CPR at home", b"\x1b[6n", r"\x1b[1;1R"),
        ("CPR after CUP", b"\x1b[3;7H\x1b[6n", r"\x1b[3;7R"),
        (
            "CPR at its point of the stream",
            b"\x1b[6nab\x1b[6n\r\n\x1b[6n",
            r"\x1b[1;1R\x1b[1;3R\x1b[2;1R",
        ),
        ("DECXCPR", b"\x1b[2;5H\x1b[?6n", r"\x1b[?2;5R"),
        (
            "CPR in origin mode counts from the scroll region",
            b"\x1b[5;10r\x1b[?6h\x1b[2;3H\x1b[6n",
            r"\x1b[2;3R",
        ),
        (
            "CPR at the pending wrap is the last column",
            b"\x1b[1;80HX\x1b[6n",
            r"\x1b[1;80R",
        ),
        ("text area in cells", b"\x1b[18t", r"\x1b[8;24;80t"),
        ("screen in cells", b"\x1b[19t", r"\x1b[9;24;80t"),
        ("text area in pixels", b"\x1b[14t", r"\x1b[4;384;640t"),
        ("cell in pixels", b"\x1b[16t", r"\x1b[6;16;8t"),
        ("resize request is not answered", b"\x1b[8;10;10t", ""),
        (
            "DECREQTPARM",
            b"\x1b[x\x1b[1x",
            r"\x1b[2;1;1;128;128;1;0x\x1b[3;1;1;128;128;1;0x",
        ),
        ("kitty query, nothing pushed", b"\x1b[?u", r"\x1b[?0u"),
        ("kitty push then query", b"\x1b[>7u\x1b[?u", r"\x1b[?7u"),
        ("XTQMODKEYS", b"\x1b[>4;2m\x1b[?4m", r"\x1b[>4;2m"),
        ("colour scheme, dark", b"\x1b[?996n", r"\x1b[?997;1n"),
        (
            "OSC 10, BEL",
            b"\x1b]10;?\x07",
            r"\x1b]10;rgb:c0c0/caca/f5f5\x07",
        ),
        (
            "OSC 11, ST",
            b"\x1b]11;?\x1b\\",
            r"\x1b]11;rgb:1a1a/1b1b/2626\x1b\\",
        ),
        (
            "OSC 10 going on to 11",
            b"\x1b]10;?;?\x07",
            r"\x1b]10;rgb:c0c0/caca/f5f5\x07\x1b]11;rgb:1a1a/1b1b/2626\x07",
        ),
        ("OSC 10 set is ignored", b"\x1b]10;#ffffff\x07", ""),
        (
            "OSC 4, several indices",
            b"\x1b]4;1;?;196;?;255;?\x07",
            concat!(
                r"\x1b]4;1;rgb:cdcd/0000/0000\x07",
                r"\x1b]4;196;rgb:ffff/0000/0000\x07",
                r"\x1b]4;255;rgb:eeee/eeee/eeee\x07",
            ),
        ),
        (
            "OSC 4 set and bad index ignored",
            b"\x1b]4;1;#ff0000;300;?\x1b\\",
            "",
        ),
        (
            "OSC 7501 support query, ST",
            b"\x1b]7501;?\x1b\\",
            r"\x1b]7501;?\x1b\\",
        ),
        (
            "OSC 7501 support query, BEL",
            b"\x1b]7501;?\x07",
            r"\x1b]7501;?\x07",
        ),
        ("OSC 52 read is not answered", b"\x1b]52;c;?\x07", ""),
        (
            "Pi 1.6 keyboard negotiation, in order",
            b"\x1b[>7u\x1b[?u\x1b]7501;?\x1b\\\x1b[c",
            r"\x1b[?7u\x1b]7501;?\x1b\\\x1b[?62;22;52c",
        ),
        ("queries after RIS", b"\x1b[>7u\x1bc\x1b[?u", r"\x1b[?0u"),
    ];
    for (name, input, expected) in cases {
        assert_eq!(replies_to(input), *expected, "{name}");
    }
}

#[test]
fn reports_mode_states_for_decrqm() {
    let cases: &[(&str, &[u8], &str)] = &[
        ("2026 off", b"\x1b[?2026$p", r"\x1b[?2026;2$y"),
        ("2026 on", b"\x1b[?2026h\x1b[?2026$p", r"\x1b[?2026;1$y"),
        (
            "2026 on and off",
            b"\x1b[?2026h\x1b[?2026l\x1b[?2026$p",
            r"\x1b[?2026;2$y",
        ),
        ("2004", b"\x1b[?2004h\x1b[?2004$p", r"\x1b[?2004;1$y"),
        ("1004", b"\x1b[?1004h\x1b[?1004$p", r"\x1b[?1004;1$y"),
        ("2031", b"\x1b[?2031h\x1b[?2031$p", r"\x1b[?2031;1$y"),
        ("1049 off", b"\x1b[?1049$p", r"\x1b[?1049;2$y"),
        ("1049 on", b"\x1b[?1049h\x1b[?1049$p", r"\x1b[?1049;1$y"),
        ("25 visible", b"\x1b[?25$p", r"\x1b[?25;1$y"),
        ("25 hidden", b"\x1b[?25l\x1b[?25$p", r"\x1b[?25;2$y"),
        ("DECCKM", b"\x1b[?1h\x1b[?1$p", r"\x1b[?1;1$y"),
        (
            "1000",
            b"\x1b[?1000h\x1b[?1000$p\x1b[?1003$p",
            r"\x1b[?1000;1$y\x1b[?1003;2$y",
        ),
        ("1002", b"\x1b[?1002h\x1b[?1002$p", r"\x1b[?1002;1$y"),
        ("1003", b"\x1b[?1003h\x1b[?1003$p", r"\x1b[?1003;1$y"),
        ("1006", b"\x1b[?1006h\x1b[?1006$p", r"\x1b[?1006;1$y"),
        ("unknown private mode", b"\x1b[?12345$p", r"\x1b[?12345;0$y"),
        ("DECOM off", b"\x1b[?6$p", r"\x1b[?6;2$y"),
        ("DECOM on", b"\x1b[?6h\x1b[?6$p", r"\x1b[?6;1$y"),
        ("DECAWM on by default", b"\x1b[?7$p", r"\x1b[?7;1$y"),
        ("DECAWM off", b"\x1b[?7l\x1b[?7$p", r"\x1b[?7;2$y"),
        ("IRM off", b"\x1b[4$p", r"\x1b[4;2$y"),
        ("IRM on", b"\x1b[4h\x1b[4$p", r"\x1b[4;1$y"),
        ("unknown ANSI mode", b"\x1b[12$p", r"\x1b[12;0$y"),
    ];
    for (name, input, expected) in cases {
        assert_eq!(replies_to(input), *expected, "{name}");
    }
}

#[test]
fn kitty_keyboard_stacks_are_per_screen() {
    let mut emulator = make_emulator();
    // (input, kitty flags in force afterwards, reply)
    let steps: &[(&[u8], u8, &str)] = &[
        (b"\x1b[>1u", 1, ""),
        (b"\x1b[?1049h", 0, ""),
        (b"\x1b[>7u\x1b[?u", 7, r"\x1b[?7u"),
        (b"\x1b[?1049l\x1b[?u", 1, r"\x1b[?1u"),
        (b"\x1b[<u", 0, ""),
        (b"\x1b[?1049h", 7, ""),
        (b"\x1b[=8;2u", 15, ""),
        (b"\x1b[=1;3u", 14, ""),
        (b"\x1b[=3u", 3, ""),
        (b"\x1b[>31u\x1b[<2u", 0, ""),
        (b"\x1b[>255u", 31, ""),
    ];
    for (index, (input, flags, reply)) in steps.iter().enumerate() {
        emulator.process(input);
        assert_eq!(
            emulator.keyboard_modes().kitty_flags,
            *flags,
            "step {index}"
        );
        assert_eq!(escaped(&emulator.take_replies()), *reply, "step {index}");
    }
}

#[test]
fn tracks_modify_other_keys_and_cursor_keys() {
    let cases: &[(&[u8], KeyboardModes)] = &[
        (b"", KeyboardModes::default()),
        (
            b"\x1b[>4;2m",
            KeyboardModes {
                modify_other_keys: 2,
                ..KeyboardModes::default()
            },
        ),
        (
            b"\x1b[>4;1m",
            KeyboardModes {
                modify_other_keys: 1,
                ..KeyboardModes::default()
            },
        ),
        (b"\x1b[>4;2m\x1b[>4m", KeyboardModes::default()),
        (b"\x1b[>4;2m\x1b[>4;0m", KeyboardModes::default()),
        (
            b"\x1b[>4;2m\x1b[>4;9m",
            KeyboardModes {
                modify_other_keys: 2,
                ..KeyboardModes::default()
            },
        ),
        (b"\x1b[>1;2m", KeyboardModes::default()),
        (
            b"\x1b[?1h",
            KeyboardModes {
                application_cursor: true,
                ..KeyboardModes::default()
            },
        ),
        (b"\x1b[?1h\x1b[?1l", KeyboardModes::default()),
        (
            b"\x1b[>4;2m\x1b[>5u\x1b[?1h",
            KeyboardModes {
                kitty_flags: 5,
                modify_other_keys: 2,
                application_cursor: true,
            },
        ),
        (b"\x1b[>4;2m\x1b[>5u\x1bc", KeyboardModes::default()),
    ];
    for (input, expected) in cases {
        let mut emulator = make_emulator();
        emulator.process(input);
        assert_eq!(emulator.keyboard_modes(), *expected, "{}", escaped(input));
    }
}

#[test]
fn tracks_focus_reporting() {
    let mut emulator = make_emulator();
    assert!(!emulator.focus_reporting());
    emulator.process(b"\x1b[?1000h\x1b[?1004h");
    assert!(emulator.focus_reporting());
    // vt100 hands over combined lists too.
    emulator.process(b"\x1b[?1006;1004l");
    assert!(!emulator.focus_reporting());
}

#[test]
fn synchronized_update_times_out() {
    let mut emulator = make_emulator();
    assert!(!emulator.synchronized_update());
    let before = Instant::now();
    emulator.process(b"\x1b[?2026h");
    let after = Instant::now();
    assert!(emulator.synchronized_update());
    assert!(emulator.synchronized_update_at(before + Duration::from_millis(999)));
    assert!(!emulator.synchronized_update_at(after + SYNCHRONIZED_UPDATE_TIMEOUT));

    // A second begin without an end does not push the deadline out.
    let deadline = emulator.synchronized_update_deadline();
    std::thread::sleep(Duration::from_millis(5));
    emulator.process(b"\x1b[?2026h");
    assert_eq!(emulator.synchronized_update_deadline(), deadline);

    emulator.process(b"\x1b[?2026l");
    assert!(!emulator.synchronized_update_at(after));
    assert_eq!(emulator.synchronized_update_deadline(), None);

    // Combined with a mode vt100 knows.
    emulator.process(b"\x1b[?1049;2026h");
    assert!(emulator.screen().alternate_screen());
    assert!(emulator.synchronized_update());
}

#[test]
fn program_status_reports_update_state_and_emit_events() {
    let working = ProgramStatus {
        state: ProgramState::Working,
        app: Some("pi".into()),
        kind: None,
        message: Some("Reading files".into()),
    };
    let mut emulator = make_emulator();
    emulator.process(b"\x1b]7501;state=working:app=pi:msg=UmVhZGluZyBmaWxlcw==\x1b\\");
    assert_eq!(emulator.program_status(), Some(&working));
    assert_eq!(
        emulator.take_events(),
        vec![EmulatorEvent::ProgramStatus(working.clone())]
    );

    // Malformed reports change nothing.
    emulator.process(b"\x1b]7501;state=sleeping:app=pi\x1b\\\x1b]7501;state=idle:msg=***\x07");
    assert_eq!(emulator.program_status(), Some(&working));
    assert_eq!(emulator.take_events(), vec![]);
    assert_eq!(emulator.take_replies(), Vec::<u8>::new());

    emulator.process(b"\x1b]7501;state=clear\x1b\\");
    assert_eq!(emulator.program_status(), None);
    assert_eq!(
        emulator.take_events(),
        vec![EmulatorEvent::ProgramStatusCleared]
    );
}

#[test]
fn forwards_out_of_band_sequences() {
    let plain = HostInfo { in_tmux: false };
    let tmux = HostInfo { in_tmux: true };
    let title = |text: &str| vec![EmulatorEvent::Title(text.into())];
    // (name, host, child output, passthrough, events)
    type Case<'a> = (&'a str, HostInfo, &'a [u8], &'a str, Vec<EmulatorEvent>);
    let cases: Vec<Case> = vec![
        ("bell", plain, b"a\x07b", r"\x07", vec![EmulatorEvent::Bell]),
        (
            "bell in tmux is plain",
            tmux,
            b"\x07",
            r"\x07",
            vec![EmulatorEvent::Bell],
        ),
        (
            "title OSC 0",
            plain,
            "\x1b]0;π - rec\x07".as_bytes(),
            r"\x1b]0;\xcf\x80 - rec\x07",
            title("π - rec"),
        ),
        (
            "title OSC 2 in tmux is plain",
            tmux,
            b"\x1b]2;pi\x1b\\",
            r"\x1b]2;pi\x1b\\",
            title("pi"),
        ),
        (
            "clipboard, BEL becomes ST",
            plain,
            b"\x1b]52;c;aGk=\x07",
            r"\x1b]52;c;aGk=\x1b\\",
            vec![],
        ),
        (
            "clipboard in tmux is plain",
            tmux,
            b"\x1b]52;c;aGk=\x1b\\",
            r"\x1b]52;c;aGk=\x1b\\",
            vec![],
        ),
        (
            "clipboard read is dropped",
            plain,
            b"\x1b]52;c;?\x07",
            "",
            vec![],
        ),
        (
            "clipboard with non-base64 is dropped",
            plain,
            b"\x1b]52;c;a b\x07",
            "",
            vec![],
        ),
        (
            "clipboard with a bad selection is dropped",
            plain,
            b"\x1b]52;z;aGk=\x07",
            "",
            vec![],
        ),
        (
            "OSC 9",
            plain,
            b"\x1b]9;done\x07",
            r"\x1b]9;done\x07",
            vec![],
        ),
        (
            "OSC 9 in tmux",
            tmux,
            b"\x1b]9;done\x07",
            r"\x1bPtmux;\x1b\x1b]9;done\x07\x1b\\",
            vec![],
        ),
        (
            "OSC 9;4 progress",
            plain,
            b"\x1b]9;4;3\x07",
            r"\x1b]9;4;3\x07",
            vec![],
        ),
        (
            "OSC 777",
            plain,
            b"\x1b]777;notify;Pi;done\x1b\\",
            r"\x1b]777;notify;Pi;done\x1b\\",
            vec![],
        ),
        (
            "OSC 777 in tmux",
            tmux,
            b"\x1b]777;notify;Pi;done\x1b\\",
            r"\x1bPtmux;\x1b\x1b]777;notify;Pi;done\x1b\x1b\\\x1b\\",
            vec![],
        ),
        (
            "OSC 99",
            plain,
            b"\x1b]99;i=1:d=0;Hello\x1b\\",
            r"\x1b]99;i=1:d=0;Hello\x1b\\",
            vec![],
        ),
        (
            "OSC 99 in tmux",
            tmux,
            b"\x1b]99;i=1:d=0;Hello\x1b\\",
            r"\x1bPtmux;\x1b\x1b]99;i=1:d=0;Hello\x1b\x1b\\\x1b\\",
            vec![],
        ),
        (
            "hyperlinks stay in-band",
            plain,
            b"\x1b]8;;https://x\x07a\x1b]8;;\x07",
            "",
            vec![],
        ),
        (
            "colour replies are not passthrough",
            plain,
            b"\x1b]11;?\x07",
            "",
            vec![],
        ),
    ];
    for (name, host, input, expected, events) in cases {
        let mut emulator = make_emulator_in(host);
        emulator.process(input);
        assert_eq!(escaped(&emulator.take_passthrough()), expected, "{name}");
        assert_eq!(emulator.take_events(), events, "{name}");
    }
}

#[test]
fn theme_changes_are_reported_only_when_asked_for() {
    let mut emulator = make_emulator();
    emulator.set_colors(light_colors());
    assert_eq!(escaped(&emulator.take_replies()), "", "2031 off");

    emulator.process(b"\x1b[?2031h");
    emulator.set_colors(dark_colors());
    assert_eq!(
        escaped(&emulator.take_replies()),
        r"\x1b[?997;1n",
        "to dark"
    );
    emulator.set_colors(dark_colors());
    assert_eq!(escaped(&emulator.take_replies()), "", "unchanged");
    emulator.set_colors(light_colors());
    assert_eq!(
        escaped(&emulator.take_replies()),
        r"\x1b[?997;2n",
        "to light"
    );

    // Queries see the new theme.
    emulator.process(b"\x1b]11;?\x07\x1b[?996n");
    assert_eq!(
        escaped(&emulator.take_replies()),
        r"\x1b]11;rgb:e1e1/e2e2/e7e7\x07\x1b[?997;2n"
    );

    emulator.process(b"\x1b[?2031l");
    emulator.set_colors(dark_colors());
    assert_eq!(escaped(&emulator.take_replies()), "", "2031 off again");
}

#[test]
fn pixel_replies_use_the_host_cell_size() {
    let mut emulator = make_emulator();
    emulator.set_cell_pixel_size(10, 20);
    emulator.set_cell_pixel_size(0, 0); // unknown: keep the last known size
    emulator.process(b"\x1b[16t\x1b[14t");
    assert_eq!(
        escaped(&emulator.take_replies()),
        r"\x1b[6;20;10t\x1b[4;480;800t"
    );
}

#[test]
fn resize_changes_size_replies() {
    let mut emulator = make_emulator();
    emulator.resize(40, 120);
    emulator.process(b"\x1b[18t");
    assert_eq!(escaped(&emulator.take_replies()), r"\x1b[8;40;120t");
    emulator.resize(0, 0);
    assert_eq!(emulator.screen().size().0.get(), 1);
}

#[test]
fn rows_leaving_the_main_screen_go_to_history() {
    let mut emulator = Emulator::new(3, 20, 100, dark_colors(), HostInfo::default());
    emulator.process(b"one\r\ntwo\r\nthree\r\nfour\r\nfive");
    let history = emulator.history();
    assert_eq!(
        (history.len(), history.row_text(0), history.row_text(1)),
        (2, Some("one".into()), Some("two".into()))
    );

    // The alternate screen keeps no history.
    emulator.process(b"\x1b[?1049h\r\n\r\n\r\n\r\n\x1b[?1049l");
    assert_eq!(emulator.history().len(), 2);

    // A shorter screen pushes rows above the cursor into history.
    emulator.resize(2, 20);
    assert_eq!(emulator.history().len(), 3);
    assert_eq!(emulator.size(), (2, 20));

    // Pi's regular mode redraws with `CSI 2 J CSI H CSI 3 J`: the old transcript must go.
    emulator.process(b"\x1b[2J\x1b[H\x1b[3J");
    assert!(emulator.history().is_empty());
}

//! The footer: one row under Pi's pane that says what Pi is doing and what it works with — its
//! state (process, OSC 7501 program status, bridge), model and thinking level, context use,
//! tokens, cost, session, directory, git branch — plus the scrollback marker and the help key.
//!
//! It is a list of [`Segment`]s (see [`segment`]) that the app builds every frame: the
//! workbench's own come from [`build_segments`] over two plain models — [`FooterModel`], what the
//! app itself knows (Pi's process, the terminal status, the directory), and [`FooterData`], what
//! the bridge reports — and modules append theirs. The user's preset and toggles
//! ([`FooterSettings`]) choose which are shown; the layout then fits them to the width by
//! priority, never wrapping and never cutting a segment.

mod builtin;
mod help;
pub mod icons;
pub mod segment;
pub mod settings;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

pub use builtin::{format_cost, format_duration, format_tokens};
pub use help::{FooterHelp, HELP_TITLE, SegmentHelp, footer_help, segment_help};
pub use icons::Icon;
pub use segment::{
    Align, CORE_GROUP, Form, Piece, Role, Segment, render_footer, render_segments, rows_needed,
};
pub use settings::{
    ContextThresholds, FooterSettings, GroupToggles, IconStyle, Look, Preset, SeparatorStyle,
    detect_nerd_font,
};

use crate::theme::Theme;

/// Whether the Pi process is up, as the workbench sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PiRunState {
    Starting,
    Running,
    /// Pi's process ended; `code` is `None` when a signal ended it.
    Exited {
        code: Option<i32>,
    },
}

/// Pi's own report of what it is doing (OSC 7501 `state=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgramState {
    Idle,
    Working,
    /// A dialog or login waits for the user.
    Blocked,
    Done,
    Error,
}

/// The program-status segment: Pi's state and the message that came with it (OSC 7501 `msg=`:
/// the dialog title when blocked, the first line of the error on error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusSegment {
    pub state: ProgramState,
    pub message: Option<String>,
}

/// What the app itself knows for the footer; it fills this from its state on every frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FooterModel {
    pub pi: PiRunState,
    /// `None` until Pi reports a program status (Pi 0.7x and tmux never do).
    pub status: Option<StatusSegment>,
    /// Pi's working directory, as an absolute path.
    pub cwd: String,
    /// The user's home directory; a `cwd` under it is shown as `~/…`.
    pub home: Option<String>,
    pub git_branch: Option<String>,
    /// `Some(lines)` while the user browses the pane's history.
    pub scrolled_back: Option<usize>,
    /// The key hint drawn at the right end, e.g. "F1 help"; the keymap decides the key.
    pub hint: Option<String>,
    /// A passing notice, drawn in the key hint's place for a few seconds. It says something the
    /// user just caused or must know, so while it shows it comes before everything but Pi's
    /// state: the model, the context and the rest give way to it rather than cut it.
    pub notice: Option<String>,
    /// The local time of day, `HH:MM` (the app fills it in; `None` in tests of other things).
    pub clock: Option<String>,
    /// Seconds since the session started (`None` before Pi reports one).
    pub session_secs: Option<u64>,
}

/// The bridge connection to Pi's extension, as the footer shows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BridgeLink {
    /// Not connected yet (or not in use): the footer claims nothing.
    #[default]
    Absent,
    Connected,
    /// It was connected and went away (Pi crashed or is reloading): what the bridge said last
    /// is stale, and the footer says so.
    Disconnected,
}

/// What Pi's agent is doing, from the bridge's events (agent start/end, compaction start/end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    Idle,
    Working,
    Compacting,
}

/// Pi's `ctx.getContextUsage()`: tokens in the context and the model's window. Pi does not know
/// the tokens (nor the percentage) right after a compaction until the next response.
#[derive(Clone, Debug, PartialEq)]
pub struct ContextUsage {
    pub tokens: Option<u64>,
    pub window: u64,
    /// Worked out from `tokens` when absent.
    pub percent: Option<f64>,
}

/// What the bridge reports for the footer; the app updates it from bridge events (no polling).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FooterData {
    pub bridge: BridgeLink,
    /// `None` until the bridge reports one.
    pub activity: Option<Activity>,
    /// The model's name (or id) as Pi reports it, e.g. "claude-sonnet-4-5".
    pub model: Option<String>,
    /// Pi's thinking level ("off", "minimal", "low", "medium", "high", "xhigh").
    pub thinking_level: Option<String>,
    pub context: Option<ContextUsage>,
    /// Input tokens sent this session.
    pub tokens_in: u64,
    /// Output tokens received this session.
    pub tokens_out: u64,
    /// The session's cost in dollars; `None` until Pi reports a cost.
    pub cost: Option<f64>,
    pub session_name: Option<String>,
    pub hostname: Option<String>,
    /// What Pi is doing inside a run: "waiting for the model", "thinking", "writing",
    /// "running bash" (`None` between runs).
    pub doing: Option<String>,
    /// Other extensions' footer statuses (`ctx.ui.setStatus`), in Pi's order (by key), plain text.
    pub extension_statuses: Vec<String>,
    /// Pi compacts by itself when the context fills (Pi's `(auto)` marker); `None`: unknown.
    pub auto_compaction: Option<bool>,
    /// Tools Pi ran this session.
    pub tool_calls: u64,
    /// The model's output speed, once a response finished.
    pub rate: Option<TokenRate>,
    /// How the model's API answered last (`None` before the first request).
    pub api: Option<ApiState>,
}

/// Output tokens per second: the last response's and the session's average (Σ tokens over
/// Σ streaming time).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TokenRate {
    pub last: f64,
    pub average: f64,
}

/// The model API's state, as the responses tell it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiState {
    /// A request is out; nothing streamed back yet.
    Waiting,
    /// The model is streaming its answer.
    Streaming,
    /// The last response ended well.
    Ok,
    /// The last response ended in an error (its first line).
    Error(String),
}

/// The priorities of the workbench's own segments (higher survives longer) and of their longer
/// forms (`*_DETAIL`; a segment without one keeps its detail as long as itself). Modules place
/// theirs between [`priority::MODULE_LOW`] and [`priority::MODULE_HIGH`]: above the host name,
/// below the model and context, so the footer's core meaning survives any number of modules.
pub mod priority {
    pub const STATE: u8 = 100;
    pub const SCROLLBACK: u8 = 90;
    /// A blocked dialog's title or an error's text: above the model.
    pub const STATE_DETAIL: u8 = 85;
    /// A passing notice in the key hint's place: whole before the model and the context.
    pub const NOTICE: u8 = 84;
    pub const MODEL: u8 = 80;
    pub const CONTEXT: u8 = 75;
    pub const HINT: u8 = 70;
    /// "ctx 45% 90k/200k" over "45%": above cost and tokens.
    pub const CONTEXT_DETAIL: u8 = 65;
    /// "scrolled ↑ 120" over "↑ 120".
    pub const SCROLLBACK_DETAIL: u8 = 60;
    pub const MODULE_HIGH: u8 = 60;
    pub const COST: u8 = 55;
    pub const TOKENS: u8 = 50;
    /// The thinking level and the provider prefix after the model's name.
    pub const MODEL_DETAIL: u8 = 45;
    pub const CWD: u8 = 40;
    /// An error's text after "✗ error": below the folder, the tokens and the cost, which an
    /// error (Pi keeps it until the next run) must not push out of the footer.
    pub const ERROR_DETAIL: u8 = 38;
    pub const SESSION: u8 = 35;
    pub const GIT: u8 = 30;
    /// Directories between `~` and the last one: below the git branch.
    pub const CWD_DETAIL: u8 = 25;
    /// The model's speed: below what a capability records (a compaction: `MODULE_LOW + 5`).
    pub const TPS: u8 = 24;
    /// An API error is said by Pi's state; the segment's other states are detail.
    pub const API: u8 = 23;
    pub const MODULE_LOW: u8 = 20;
    /// Ambient figures (tools run, the clock, the session's age): what a capability records
    /// (a compaction, a notification) says more, so they give way first.
    pub const TOOL_COUNT: u8 = 19;
    pub const CLOCK: u8 = 18;
    pub const DURATION: u8 = 17;
    /// Other extensions' statuses: theirs, so below everything of the workbench's own.
    pub const EXTENSION_STATUSES: u8 = 15;
    pub const HOSTNAME: u8 = 10;
    /// Input and output tokens apart (the full preset): the combined figure says it first.
    pub const TOKENS_APART: u8 = 8;
}

/// The workbench's segments from `model` and `data`, with the modules' `extra` segments after the
/// workbench's own and before the key hint (which stays at the right end), keeping only what
/// `settings` shows. Pass the result to [`render_segments`].
pub fn build_segments(
    model: &FooterModel,
    data: &FooterData,
    settings: &FooterSettings,
    extra: impl IntoIterator<Item = Segment>,
) -> Vec<Segment> {
    let own = [
        Some(builtin::state(model, data)),
        builtin::model(data, settings),
        builtin::api_state(data),
        builtin::tool_count(data),
        builtin::session(data),
        builtin::cwd(model),
        builtin::git(model),
        builtin::hostname(data),
        builtin::scrollback(model),
        builtin::tps(data),
        builtin::context(data, settings.context),
        builtin::tokens(data),
        builtin::tokens_in(data),
        builtin::tokens_out(data),
        builtin::cost(data),
        builtin::extension_statuses(data),
        builtin::clock(model),
        builtin::duration(model),
    ];
    let icons = settings.icons();
    let ascii = settings.preset == Preset::Ascii;
    own.into_iter()
        .flatten()
        .chain(extra)
        .chain(builtin::hint(model))
        .filter(|segment| settings.shows(segment))
        .map(|segment| match segment.icon {
            Some(icon) => segment.put_icon(icon.glyph(icons)),
            None => segment,
        })
        .map(|segment| if ascii { to_ascii(segment) } else { segment })
        .collect()
}

/// `segment` in plain ASCII (the `ascii` preset): each symbol the footer uses becomes one ASCII
/// character of the same meaning (`●` `*`, `↑` `^`, `…` `.`), anything else outside ASCII `?`.
fn to_ascii(mut segment: Segment) -> Segment {
    let fold = |c: char| match c {
        c if c.is_ascii() => c,
        '●' => '*',
        '○' => 'o',
        '◆' | '⚠' => '!',
        '✗' => 'x',
        '✓' => '+',
        '◐' => '~',
        '↑' => '^',
        '↓' => 'v',
        '…' => '.',
        '“' | '”' => '"',
        '·' => '-',
        '▶' => '>',
        '│' => '|',
        _ => '?',
    };
    for form in &mut segment.forms {
        for piece in &mut form.pieces {
            piece.text = piece.text.chars().map(fold).collect();
        }
    }
    segment
}

/// Draw the footer from the app's `model` alone (no bridge data, default settings) into the first
/// row of `area`.
pub fn render(model: &FooterModel, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let segments = build_segments(
        model,
        &FooterData::default(),
        &FooterSettings::default(),
        [],
    );
    render_segments(&segments, theme, area, buf);
}

/// `cwd` with the home directory replaced by `~` (only on a path-component boundary).
pub fn tilde_path(cwd: &str, home: Option<&str>) -> String {
    let Some(home) = home
        .map(|h| h.trim_end_matches('/'))
        .filter(|h| !h.is_empty())
    else {
        return cwd.to_owned();
    };
    match cwd.strip_prefix(home) {
        Some("") => "~".to_owned(),
        Some(rest) if rest.starts_with('/') => format!("~{rest}"),
        _ => cwd.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use ratatui::style::{Color, Style};

    use super::*;
    use crate::test_support::render_to_string;

    fn model() -> FooterModel {
        FooterModel {
            pi: PiRunState::Running,
            status: None,
            cwd: "/home/ada/src/unipi-tui".to_owned(),
            home: Some("/home/ada".to_owned()),
            git_branch: Some("main".to_owned()),
            scrolled_back: None,
            hint: Some("F1 help".to_owned()),
            notice: None,
            clock: None,
            session_secs: None,
        }
    }

    fn with_status(state: ProgramState, message: Option<&str>) -> FooterModel {
        FooterModel {
            status: Some(StatusSegment {
                state,
                message: message.map(str::to_owned),
            }),
            ..model()
        }
    }

    fn snapshot(model: &FooterModel, width: u16) -> String {
        render_to_string(width, 1, |area, buf| {
            render(model, &Theme::plain(), area, buf);
        })
    }

    #[test]
    fn pi_run_states() {
        let cases = [
            ("starting", PiRunState::Starting),
            ("running", PiRunState::Running),
            ("exited_1", PiRunState::Exited { code: Some(1) }),
            ("exited_signal", PiRunState::Exited { code: None }),
        ];
        for (name, pi) in cases {
            let model = FooterModel { pi, ..model() };
            crate::assert_ui_snapshot!(format!("footer_pi_{name}_80"), snapshot(&model, 80));
        }
    }

    #[test]
    fn program_statuses() {
        let cases = [
            ("idle", ProgramState::Idle, None),
            ("working", ProgramState::Working, Some("my session")),
            ("blocked", ProgramState::Blocked, None),
            (
                "blocked_titled",
                ProgramState::Blocked,
                Some("Allow rm -rf?"),
            ),
            ("done", ProgramState::Done, Some("my session")),
            (
                "error",
                ProgramState::Error,
                Some("429 rate limited\nretry later"),
            ),
        ];
        for (name, state, message) in cases {
            let model = with_status(state, message);
            crate::assert_ui_snapshot!(format!("footer_status_{name}_80"), snapshot(&model, 80));
        }
    }

    #[test]
    fn narrow_widths_drop_low_priority_segments_first() {
        let full = FooterModel {
            scrolled_back: Some(120),
            cwd: "/home/ada/src/some/deeply/nested/project/unipi-tui".to_owned(),
            ..with_status(ProgramState::Working, None)
        };
        for width in [80, 60, 40, 30, 20] {
            crate::assert_ui_snapshot!(format!("footer_working_{width}"), snapshot(&full, width));
        }
        let blocked = with_status(ProgramState::Blocked, Some("Sign in to continue"));
        for width in [40, 20] {
            crate::assert_ui_snapshot!(
                format!("footer_blocked_{width}"),
                snapshot(&blocked, width)
            );
        }
        let exited = FooterModel {
            pi: PiRunState::Exited { code: Some(137) },
            ..with_status(ProgramState::Error, Some("model overloaded"))
        };
        crate::assert_ui_snapshot!("footer_exited_error_20", snapshot(&exited, 20));
    }

    /// A passing notice longer than the key hint's usual room is shown whole while it lasts:
    /// the model and the context give way; only a row too narrow for it cuts it, at a word.
    #[test]
    fn a_passing_notice_is_shown_whole_before_the_model_and_the_context() {
        let notice = "Ralph loop tour paused — /unipi:ralph-start plan:2026-12-01-tour-plan.md \
                      resumes it";
        let model = FooterModel {
            notice: Some(notice.to_owned()),
            ..with_status(ProgramState::Idle, None)
        };
        for width in [120, 100, 80] {
            crate::assert_ui_snapshot!(format!("footer_notice_{width}"), snapshot(&model, width));
        }
        assert!(snapshot(&model, 100).contains(notice), "cut at 100 columns");
        let narrow = snapshot(&model, 80);
        assert!(
            narrow.contains("Ralph loop tour paused — /unipi:ralph-start…"),
            "{narrow}"
        );
        // Gone, the key hint is back in its place and the model with it.
        let after = snapshot(&with_status(ProgramState::Idle, None), 100);
        assert!(
            after.contains("F1 help") && !after.contains("Ralph"),
            "{after}"
        );
    }

    #[test]
    fn never_panics_on_tiny_areas() {
        let model = with_status(ProgramState::Blocked, Some("Sign in"));
        for width in 0..=20 {
            let text = snapshot(&model, width.max(1));
            assert_eq!(text.lines().count(), 1);
        }
        let mut buf = Buffer::empty(Rect::new(0, 0, 10, 1));
        render(&model, &Theme::plain(), Rect::new(0, 0, 0, 0), &mut buf);
    }

    #[test]
    fn tilde_path_table() {
        let cases = [
            ("/home/ada/src", Some("/home/ada"), "~/src"),
            ("/home/ada", Some("/home/ada/"), "~"),
            ("/home/adam/src", Some("/home/ada"), "/home/adam/src"),
            ("/srv/app", Some("/home/ada"), "/srv/app"),
            ("/srv/app", None, "/srv/app"),
            ("/srv/app", Some(""), "/srv/app"),
        ];
        for (cwd, home, want) in cases {
            assert_eq!(tilde_path(cwd, home), want, "tilde_path({cwd:?}, {home:?})");
        }
    }

    #[test]
    fn status_segment_style_differs_by_state() {
        let theme = Theme {
            status_working: Style::new().fg(Color::Blue),
            status_blocked: Style::new().fg(Color::Yellow),
            status_done: Style::new().fg(Color::Green),
            status_error: Style::new().fg(Color::Red),
            status_idle: Style::new().fg(Color::Gray),
            ..Theme::plain()
        };
        let cases = [
            (ProgramState::Working, Color::Blue),
            (ProgramState::Blocked, Color::Yellow),
            (ProgramState::Done, Color::Green),
            (ProgramState::Error, Color::Red),
            (ProgramState::Idle, Color::Gray),
        ];
        for (state, colour) in cases {
            let model = with_status(state, None);
            let mut buf = Buffer::empty(Rect::new(0, 0, 80, 1));
            render(&model, &theme, buf.area, &mut buf);
            // The status glyph opens the row, after the 1-column padding.
            assert_eq!(buf[(1, 0)].fg, colour, "{state:?}");
        }
    }

    #[test]
    fn plain_theme_draws_no_colour() {
        let model = FooterModel {
            scrolled_back: Some(3),
            ..with_status(ProgramState::Error, Some("boom"))
        };
        let mut buf = Buffer::empty(Rect::new(0, 0, 100, 1));
        render(&model, &Theme::plain(), buf.area, &mut buf);
        for cell in buf.content() {
            assert_eq!((cell.fg, cell.bg), (Color::Reset, Color::Reset));
        }
        // …but the bar still stands out.
        assert!(
            buf[(0, 0)]
                .modifier
                .contains(ratatui::style::Modifier::REVERSED)
        );
    }

    /// A footer with everything the bridge can report.
    fn bridged() -> (FooterModel, FooterData) {
        let model = FooterModel {
            status: Some(StatusSegment {
                state: ProgramState::Working,
                message: None,
            }),
            git_branch: Some("feature/footer".to_owned()),
            ..model()
        };
        let data = FooterData {
            bridge: BridgeLink::Connected,
            activity: Some(Activity::Working),
            model: Some("claude-sonnet-4-5".to_owned()),
            thinking_level: Some("high".to_owned()),
            context: Some(ContextUsage {
                tokens: Some(90_000),
                window: 200_000,
                percent: Some(45.0),
            }),
            tokens_in: 12_345,
            tokens_out: 4_100,
            cost: Some(0.0123),
            session_name: Some("footer segments".to_owned()),
            hostname: Some("devbox".to_owned()),
            ..FooterData::default()
        };
        (model, data)
    }

    /// The footer at each width, one labelled row per width, in one snapshot.
    fn widths_snapshot(segments: &[Segment], widths: &[u16]) -> String {
        widths
            .iter()
            .map(|&w| {
                let row = render_to_string(w, 1, |area, buf| {
                    render_segments(segments, &Theme::plain(), area, buf);
                });
                format!("{w:>3} {}", row.trim_end())
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The widths the issue asks for, plus one wide enough for the full preset's extra segment.
    const WIDTHS: [u16; 7] = [160, 120, 80, 60, 40, 30, 20];

    #[test]
    fn presets_at_every_width() {
        let (model, data) = bridged();
        for preset in Preset::ALL {
            let settings = FooterSettings {
                preset,
                ..FooterSettings::default()
            };
            let segments = build_segments(&model, &data, &settings, []);
            let rows = WIDTHS.iter().map(|&w| {
                let row = render_to_string(w, 1, |area, buf| {
                    render_footer(&segments, &settings, &Theme::plain(), area, buf);
                });
                format!("{w:>3} {}", row.trim_end())
            });
            crate::assert_ui_snapshot!(
                format!("footer_preset_{}", preset.name()),
                rows.collect::<Vec<_>>().join("\n")
            );
        }
    }

    /// Everything the footer can show: the bridged footer with the new core segments and two
    /// module segments.
    fn everything() -> (FooterModel, FooterData, Vec<Segment>) {
        let (mut model, mut data) = bridged();
        model.clock = Some("14:05".to_owned());
        model.session_secs = Some(754);
        data.tool_calls = 7;
        data.rate = Some(TokenRate {
            last: 42.4,
            average: 38.0,
        });
        data.api = Some(ApiState::Ok);
        let step = Segment::new(
            "current_command",
            priority::MODULE_HIGH,
            Align::Left,
            Form::new("▶ unipi:plan", Role::Accent),
        )
        .in_group("workflow");
        let board = Segment::new(
            "tasks_done",
            priority::MODULE_LOW,
            Align::Right,
            Form::new("kb 3/10", Role::Text),
        )
        .in_group("kanboard")
        .with_icon(Icon::Board);
        (model, data, vec![step, board])
    }

    /// The footer as the bottom rows of a `width`×`height` screen (the rest left blank), with as
    /// many rows as it needs.
    fn screen(segments: &[Segment], settings: &FooterSettings, width: u16, height: u16) -> String {
        render_to_string(width, height, |_, buf| {
            let rows = rows_needed(segments, settings, width);
            let footer = Rect::new(0, height - rows, width, rows);
            render_footer(segments, settings, &Theme::plain(), footer, buf);
        })
    }

    #[test]
    fn each_preset_at_80x24_and_120x40() {
        let (model, data, extra) = everything();
        for preset in Preset::ALL {
            let settings = FooterSettings {
                preset,
                ..FooterSettings::default()
            };
            let segments = build_segments(&model, &data, &settings, extra.clone());
            for (width, height) in [(80, 24), (120, 40)] {
                crate::assert_ui_snapshot!(
                    format!("footer_screen_{}_{width}x{height}", preset.name()),
                    screen(&segments, &settings, width, height)
                );
            }
        }
    }

    /// With the overflow row, what does not fit goes to a second row whole; nothing is cut, and
    /// nothing but what the second row cannot hold either is lost.
    #[test]
    fn the_overflow_row_takes_what_does_not_fit() {
        let (model, data, extra) = everything();
        let full = FooterSettings {
            preset: Preset::Full,
            ..FooterSettings::default()
        };
        let segments = build_segments(&model, &data, &full, extra);
        assert_eq!(rows_needed(&segments, &full, 120), 2);
        assert_eq!(rows_needed(&segments, &full, 400), 1);
        let text = screen(&segments, &full, 120, 3);
        let rows: Vec<&str> = text.lines().collect();
        for needle in [
            "● working",
            "claude-sonnet-4-5",
            "F1 help",
            "14:05",
            "7 tools",
            "42 t/s",
        ] {
            assert!(text.contains(needle), "{needle} in\n{text}");
        }
        // The first row keeps the most important, the second takes what did not fit.
        assert!(
            rows[1].contains("● working") && rows[2].contains("7 tools"),
            "{text}"
        );
        assert!(!rows[1].contains("7 tools"), "{text}");
        // Every segment is on screen whole, in one of its forms — but input and output tokens
        // apart, the lowest of all, which only a third row would hold.
        for segment in segments
            .iter()
            .filter(|s| s.priority > priority::TOKENS_APART)
        {
            assert!(
                segment.forms.iter().any(|form| text.contains(&form.text())),
                "{} missing or cut in\n{text}",
                segment.id
            );
        }
        // Off: one row, the low ones dropped as before.
        let off = FooterSettings {
            look: Look {
                overflow_row: Some(false),
                ..Look::default()
            },
            ..full.clone()
        };
        assert_eq!(rows_needed(&segments, &off, 120), 1);
        let one = screen(&segments, &off, 120, 3);
        assert_eq!(
            one.lines().filter(|row| row.contains('│')).count(),
            1,
            "{one}"
        );
        assert!(!one.contains("7 tools"), "{one}");
    }

    #[test]
    fn separators_and_icons_follow_the_settings() {
        let (model, data, extra) = everything();
        let row = |settings: &FooterSettings| {
            let segments = build_segments(&model, &data, settings, extra.clone());
            render_to_string(300, 1, |area, buf| {
                render_footer(&segments, settings, &Theme::plain(), area, buf);
            })
        };
        let ascii = row(&FooterSettings {
            preset: Preset::Ascii,
            ..FooterSettings::default()
        });
        assert!(
            ascii.contains(" | ") && ascii.trim_matches('"').is_ascii(),
            "{ascii}"
        );
        assert!(
            ascii.contains("GIT feature/footer") && ascii.contains("TPS 42 t/s"),
            "{ascii}"
        );
        let slash = row(&FooterSettings {
            look: Look {
                separator: Some(SeparatorStyle::Slash),
                icons: Some(IconStyle::Text),
                ..Look::default()
            },
            ..FooterSettings::default()
        });
        assert!(
            slash.contains(" / ") && slash.contains("TLS 7 tools"),
            "{slash}"
        );
        assert!(slash.contains("KB kb 3/10"), "module icons too: {slash}");
    }

    #[test]
    fn tps_tiers() {
        let cases = [
            (250.0, Role::Accent),
            (150.0, Role::Status(ProgramState::Done)),
            (60.0, Role::Text),
            (40.0, Role::Warning),
            (12.0, Role::Error),
        ];
        for (rate, role) in cases {
            assert_eq!(builtin::tps_role(rate), role, "{rate}");
        }
    }

    /// Pi keeps a failed manual compaction's error as its status until the next run: the
    /// error's text shortens or goes before the folder, the tokens and the cost do.
    #[test]
    fn an_error_keeps_the_folder_and_the_tokens() {
        let (mut model, mut data) = bridged();
        model.status = Some(StatusSegment {
            state: ProgramState::Error,
            message: Some("Compaction failed: Nothing to compact (session too small)".to_owned()),
        });
        data.activity = Some(Activity::Idle);
        let segments = build_segments(&model, &data, &FooterSettings::default(), []);
        let row = |width: u16| {
            render_to_string(width, 1, |area, buf| {
                render_segments(&segments, &Theme::plain(), area, buf);
            })
        };
        for width in [160, 120] {
            let text = row(width);
            assert!(
                text.contains("✗ error") && text.contains("unipi-tui") && text.contains("12.3k↑"),
                "{width}: {text}"
            );
        }
        crate::assert_ui_snapshot!(
            "footer_error_keeps_folder_and_tokens",
            widths_snapshot(&segments, &WIDTHS)
        );
    }

    /// Inside a run the state says what Pi does ("● running bash", shortened to "● working");
    /// other extensions' statuses sit at the low end, the later ones going first; Pi's
    /// auto-compaction marker follows the context figure.
    #[test]
    fn what_pi_does_other_extensions_statuses_and_the_auto_marker() {
        let (model, mut data) = bridged();
        data.activity = Some(Activity::Working);
        data.doing = Some("running bash".to_owned());
        data.extension_statuses =
            vec!["FIRST-EXT 3 items".to_owned(), "OTHER-EXT ready".to_owned()];
        data.auto_compaction = Some(true);
        let segments = build_segments(&model, &data, &FooterSettings::default(), []);
        let wide = render_to_string(200, 1, |area, buf| {
            render_segments(&segments, &Theme::plain(), area, buf);
        });
        assert!(wide.contains("● running bash"), "{wide}");
        assert!(
            wide.contains("FIRST-EXT 3 items · OTHER-EXT ready"),
            "{wide}"
        );
        assert!(wide.contains("(auto)"), "{wide}");
        crate::assert_ui_snapshot!(
            "footer_doing_statuses_auto",
            widths_snapshot(&segments, &[200, 160, 120, 80, 40])
        );
    }

    #[test]
    fn presets_choose_the_segments() {
        let (model, data) = bridged();
        let ids = |preset| {
            let settings = FooterSettings {
                preset,
                ..FooterSettings::default()
            };
            build_segments(&model, &data, &settings, [])
                .into_iter()
                .map(|segment| segment.id)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ids(Preset::Minimal),
            ["state", "model", "git", "context_pct", "hint"]
        );
        assert_eq!(
            ids(Preset::Default),
            [
                "state",
                "model",
                "session",
                "cwd",
                "git",
                "context_pct",
                "tokens",
                "cost",
                "hint"
            ]
        );
        assert_eq!(
            ids(Preset::Full),
            [
                "state",
                "model",
                "session",
                "cwd",
                "git",
                "hostname",
                "context_pct",
                "tokens",
                "tokens_in",
                "tokens_out",
                "cost",
                "hint"
            ]
        );
    }

    #[test]
    fn toggles_and_module_segments() {
        let (model, data) = bridged();
        let mut settings = FooterSettings {
            preset: Preset::Minimal,
            ..FooterSettings::default()
        };
        settings.groups.insert(
            CORE_GROUP.to_owned(),
            GroupToggles {
                show: None,
                segments: [("cost".to_owned(), true), ("git".to_owned(), false)].into(),
            },
        );
        let tasks = Segment::new(
            "running",
            priority::MODULE_HIGH,
            Align::Right,
            Form::new("2 tasks", Role::Text),
        )
        .in_group("tasks");
        let mcp = Segment::new(
            "servers_active",
            priority::MODULE_LOW,
            Align::Left,
            Form::new("mcp 3/4", Role::Text),
        )
        .in_group("mcp")
        .from_preset(Preset::Minimal);
        let notify = Segment::new(
            "last_sent",
            priority::MODULE_LOW,
            Align::Left,
            Form::new("sent 2m ago", Role::Text),
        )
        .in_group("notify")
        .from_preset(Preset::Minimal);
        let segments = build_segments(&model, &data, &settings, [tasks, mcp, notify]);
        let ids: Vec<&str> = segments.iter().map(|s| s.id.as_str()).collect();
        // tasks is shown from the default preset up, notify's group is hidden by default, and the
        // hint stays last.
        assert_eq!(
            ids,
            [
                "state",
                "model",
                "context_pct",
                "cost",
                "servers_active",
                "hint"
            ]
        );
        let row = render_to_string(80, 1, |area, buf| {
            render_segments(&segments, &Theme::plain(), area, buf);
        });
        assert_eq!(
            row.trim_end(),
            "\" ● working │ claude-sonnet-4-5 │ mcp 3/4   ctx 45% 90k/200k │ $0.0123 │ F1 help \""
        );
    }

    /// Runs of equal foreground colour in a one-row buffer, as "text=colour" items.
    fn colour_runs(buf: &Buffer) -> String {
        let mut runs: Vec<(String, Color)> = Vec::new();
        for cell in buf.content() {
            match runs.last_mut() {
                Some((text, fg)) if *fg == cell.fg => text.push_str(cell.symbol()),
                _ => runs.push((cell.symbol().to_owned(), cell.fg)),
            }
        }
        runs.iter()
            .filter(|(text, _)| !text.trim().is_empty())
            .map(|(text, fg)| format!("{:?}={fg:?}", text.trim()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn colour_theme() -> Theme {
        Theme {
            warning: Style::new().fg(Color::Yellow),
            error: Style::new().fg(Color::Red),
            muted: Style::new().fg(Color::DarkGray),
            accent: Style::new().fg(Color::Magenta),
            status_working: Style::new().fg(Color::Blue),
            key_hint: Style::new().fg(Color::Cyan),
            ..Theme::plain()
        }
    }

    #[test]
    fn context_colour_follows_the_thresholds() {
        let (model, mut data) = bridged();
        let theme = colour_theme();
        let settings = FooterSettings::default();
        let cases = [
            ("normal", 45.0, Color::Reset),
            ("warning", 72.0, Color::Yellow),
            ("error", 91.0, Color::Red),
        ];
        for (name, percent, colour) in cases {
            data.context = Some(ContextUsage {
                tokens: Some((percent * 2_000.0) as u64),
                window: 200_000,
                percent: Some(percent),
            });
            let segments = build_segments(&model, &data, &settings, []);
            let mut buf = Buffer::empty(Rect::new(0, 0, 120, 1));
            render_segments(&segments, &theme, buf.area, &mut buf);
            // "ctx " is a muted label; the figures carry the threshold's colour.
            let row: String = buf.content().iter().map(|c| c.symbol()).collect();
            let label = row.find("ctx ").map(|byte| row[..byte].chars().count());
            let Some(label) = label else {
                panic!("no context segment in {row:?}");
            };
            let x = u16::try_from(label).unwrap();
            assert_eq!(buf[(x, 0)].fg, Color::DarkGray, "{name}: label");
            assert_eq!(buf[(x + 4, 0)].fg, colour, "{name}: percentage");
            if name != "normal" {
                crate::assert_ui_snapshot!(
                    format!("footer_context_{name}_colours"),
                    colour_runs(&buf)
                );
            }
        }
        // Thresholds come from the settings.
        let strict = FooterSettings {
            context: ContextThresholds {
                warning: 30,
                error: 40,
            },
            ..FooterSettings::default()
        };
        data.context = Some(ContextUsage {
            tokens: None,
            window: 200_000,
            percent: Some(45.0),
        });
        let segments = build_segments(&model, &data, &strict, []);
        let context = segments.iter().find(|s| s.id == "context_pct");
        let roles: Vec<Role> = context
            .map(|s| {
                s.forms
                    .iter()
                    .filter_map(|f| f.pieces.last())
                    .map(|p| p.role)
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(roles, [Role::Error, Role::Error]);
    }

    #[test]
    fn disconnected_bridge() {
        let (model, data) = bridged();
        let data = FooterData {
            bridge: BridgeLink::Disconnected,
            ..data
        };
        let segments = build_segments(&model, &data, &FooterSettings::default(), []);
        crate::assert_ui_snapshot!(
            "footer_disconnected",
            widths_snapshot(&segments, &[120, 80, 40, 20])
        );
        let mut buf = Buffer::empty(Rect::new(0, 0, 80, 1));
        render_segments(&segments, &colour_theme(), buf.area, &mut buf);
        assert_eq!(buf[(1, 0)].symbol(), "⚠");
        assert_eq!(buf[(1, 0)].fg, Color::Yellow);
    }
}

//! The footer: one row under Pi's pane that says whether Pi runs, what it is doing (its OSC 7501
//! program status), where it works (directory, git branch), whether the user is browsing
//! history, and which key opens help. The footer must fit any width down to 20 columns, so every
//! segment carries a priority: when the row is too narrow the lowest-priority segments go first
//! (the directory loses its middle directories before it goes), and what is left is cut with `…`.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use crate::text::{first_line, shorten_path, truncate_end, width};
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

/// Everything the footer shows; the app fills it from its state on every frame.
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
}

/// Draw the footer into the first row of `area`.
pub fn render(model: &FooterModel, theme: &Theme, area: Rect, buf: &mut Buffer) {
    if area.is_empty() {
        return;
    }
    let row = Rect { height: 1, ..area };
    buf.set_style(row, theme.footer);

    // One column of padding on each side, when there is room for it.
    let padding = usize::from(row.width >= 10);
    let avail = usize::from(row.width).saturating_sub(2 * padding);
    let (left, hint) = fit(segments(model, theme), avail);

    let mut x = row.x + padding as u16;
    let right = row.right() - padding as u16;
    for (i, segment) in left.iter().enumerate() {
        if i > 0 {
            x = put(
                buf,
                x,
                row.y,
                SEPARATOR,
                theme.footer.patch(theme.muted),
                right,
            );
        }
        x = put(
            buf,
            x,
            row.y,
            &segment.text,
            theme.footer.patch(segment.style),
            right,
        );
    }
    if let Some(hint) = hint {
        let hint_x = right.saturating_sub(width(&hint.text) as u16).max(x);
        put(
            buf,
            hint_x,
            row.y,
            &hint.text,
            theme.footer.patch(hint.style),
            right,
        );
    }
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

const SEPARATOR: &str = " │ ";
/// Columns kept free between the left segments and the right-aligned hint.
const HINT_GAP: usize = 2;
/// Longest status message shown before the rest of the row is even considered.
const MAX_MESSAGE: usize = 48;
/// The directory is shortened to no less than this before it is dropped.
const MIN_CWD: usize = 12;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Run,
    Status,
    Cwd,
    Branch,
    Scrolled,
    Hint,
}

#[derive(Clone, Debug)]
struct Segment {
    kind: Kind,
    text: String,
    style: Style,
    /// Higher survives longer.
    priority: u8,
}

/// The segments in display order (hint last), before fitting.
fn segments(model: &FooterModel, theme: &Theme) -> Vec<Segment> {
    let mut out = Vec::new();
    let (run_text, run_style, run_priority) = match model.pi {
        PiRunState::Starting => ("pi starting".to_owned(), theme.muted, 6),
        PiRunState::Running => ("pi running".to_owned(), theme.muted, 2),
        PiRunState::Exited { code: Some(code) } => (format!("pi exited {code}"), theme.error, 8),
        PiRunState::Exited { code: None } => ("pi exited (signal)".to_owned(), theme.error, 8),
    };
    out.push(Segment {
        kind: Kind::Run,
        text: run_text,
        style: run_style,
        priority: run_priority,
    });
    if let Some(status) = &model.status {
        out.push(Segment {
            kind: Kind::Status,
            text: status_text(status),
            style: status_style(status.state, theme),
            priority: 7,
        });
    }
    let cwd = tilde_path(&model.cwd, model.home.as_deref());
    if !cwd.is_empty() {
        out.push(Segment {
            kind: Kind::Cwd,
            text: cwd,
            style: Style::new(),
            priority: 3,
        });
    }
    if let Some(branch) = model.git_branch.as_deref().filter(|b| !b.is_empty()) {
        out.push(Segment {
            kind: Kind::Branch,
            text: format!("⎇ {branch}"),
            style: theme.accent,
            priority: 1,
        });
    }
    if let Some(lines) = model.scrolled_back {
        out.push(Segment {
            kind: Kind::Scrolled,
            text: format!("scrolled ↑ {lines}"),
            style: theme.scrollback_badge,
            priority: 5,
        });
    }
    if let Some(hint) = model.hint.as_deref().filter(|h| !h.is_empty()) {
        out.push(Segment {
            kind: Kind::Hint,
            text: hint.to_owned(),
            style: theme.key_hint,
            priority: 4,
        });
    }
    out
}

fn status_text(status: &StatusSegment) -> String {
    let message = status
        .message
        .as_deref()
        .map(first_line)
        .filter(|m| !m.is_empty())
        .map(|m| truncate_end(&m, MAX_MESSAGE));
    match (status.state, message) {
        (ProgramState::Idle, _) => "○ idle".to_owned(),
        (ProgramState::Working, _) => "● working".to_owned(),
        (ProgramState::Blocked, None) => "◆ blocked — waiting for you".to_owned(),
        (ProgramState::Blocked, Some(title)) => format!("◆ blocked — waiting for you: {title}"),
        (ProgramState::Done, _) => "✓ done".to_owned(),
        (ProgramState::Error, None) => "✗ error".to_owned(),
        (ProgramState::Error, Some(line)) => format!("✗ error: {line}"),
    }
}

fn status_style(state: ProgramState, theme: &Theme) -> Style {
    match state {
        ProgramState::Idle => theme.status_idle,
        ProgramState::Working => theme.status_working,
        ProgramState::Blocked => theme.status_blocked,
        ProgramState::Done => theme.status_done,
        ProgramState::Error => theme.status_error,
    }
}

/// Fit the segments into `avail` columns: shorten the directory, drop segments from the lowest
/// priority up, and cut the last one standing. Returns the left segments and the hint.
fn fit(mut segments: Vec<Segment>, avail: usize) -> (Vec<Segment>, Option<Segment>) {
    while total_width(&segments) > avail {
        let overflow = total_width(&segments) - avail;
        if segments.len() == 1 {
            let only = &mut segments[0];
            only.text = match only.kind {
                Kind::Cwd => shorten_path(&only.text, avail),
                _ => truncate_end(&only.text, avail),
            };
            break;
        }
        let Some(lowest) = (0..segments.len()).min_by_key(|&i| segments[i].priority) else {
            break;
        };
        let segment = &mut segments[lowest];
        let current = width(&segment.text);
        if segment.kind == Kind::Cwd && current > MIN_CWD {
            let target = current.saturating_sub(overflow).max(MIN_CWD);
            segment.text = shorten_path(&segment.text, target);
        } else {
            segments.remove(lowest);
        }
    }
    let hint = segments
        .iter()
        .position(|s| s.kind == Kind::Hint)
        .map(|i| segments.remove(i));
    (segments, hint)
}

fn total_width(segments: &[Segment]) -> usize {
    let mut left = 0;
    let mut left_count: usize = 0;
    let mut hint = None;
    for segment in segments {
        if segment.kind == Kind::Hint {
            hint = Some(width(&segment.text));
        } else {
            left += width(&segment.text);
            left_count += 1;
        }
    }
    let separators = left_count.saturating_sub(1) * width(SEPARATOR);
    let hint = match hint {
        Some(w) if left_count > 0 => w + HINT_GAP,
        Some(w) => w,
        None => 0,
    };
    left + separators + hint
}

/// Write `text` at (x, y) without passing `right`; returns the column after it.
fn put(buf: &mut Buffer, x: u16, y: u16, text: &str, style: Style, right: u16) -> u16 {
    if x >= right {
        return x;
    }
    let (end, _) = buf.set_stringn(x, y, text, usize::from(right - x), style);
    end
}

#[cfg(test)]
mod tests {
    use ratatui::style::Color;

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
            // The status glyph sits right after "pi running │ " and the 1-column padding.
            let x = 1 + width("pi running") + width(SEPARATOR);
            assert_eq!(buf[(x as u16, 0)].fg, colour, "{state:?}");
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
}

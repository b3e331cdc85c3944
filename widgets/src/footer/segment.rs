//! The footer's segment API and its responsive layout. Anything that wants a place in the footer
//! — the workbench's own state, and later the task, helper, MCP, compactor, fusion and notify
//! modules — hands over [`Segment`]s: an id, a side, one or more [`Form`]s from longest to
//! shortest, and two priorities: `priority` for being shown at all (in the shortest form) and
//! `detail_priority` for each longer form. The layout never wraps and never cuts text; it grants
//! these wishes in priority order, each one only if it still fits. So, as the width shrinks,
//! lower-priority segments and details go first, a segment is always drawn whole, and a detail
//! ("ctx 45% 90k/200k" rather than "45%") never costs a more important segment its place.
//! Styles are named by [`Role`], not given as colours, so the theme (and `NO_COLOR`) stays in
//! charge.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use super::ProgramState;
use super::icons::Icon;
use super::settings::{FooterSettings, Preset};
use crate::text::width;
use crate::theme::Theme;

/// The config group of the workbench's own segments (Unipi's `groups.core`).
pub const CORE_GROUP: &str = "core";

/// Which end of the row a segment sits at. Left segments are drawn in order from the left edge;
/// right segments in order, flush against the right edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// The theme role a piece of footer text is drawn with (patched over the footer bar's style).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The bar's own text style.
    Text,
    Muted,
    Accent,
    KeyHint,
    Scrollback,
    Warning,
    Error,
    /// The style of one of Pi's program states (idle, working, blocked, done, error).
    Status(ProgramState),
}

impl Role {
    /// The style this role has in `theme`.
    pub fn style(self, theme: &Theme) -> Style {
        match self {
            Role::Text => Style::new(),
            Role::Muted => theme.muted,
            Role::Accent => theme.accent,
            Role::KeyHint => theme.key_hint,
            Role::Scrollback => theme.scrollback_badge,
            Role::Warning => theme.warning,
            Role::Error => theme.error,
            Role::Status(ProgramState::Idle) => theme.status_idle,
            Role::Status(ProgramState::Working) => theme.status_working,
            Role::Status(ProgramState::Blocked) => theme.status_blocked,
            Role::Status(ProgramState::Done) => theme.status_done,
            Role::Status(ProgramState::Error) => theme.status_error,
        }
    }
}

/// One run of text in one role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub text: String,
    pub role: Role,
}

/// One way to draw a segment: a few styled pieces, drawn side by side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Form {
    pub pieces: Vec<Piece>,
}

impl Form {
    /// A form of one piece.
    pub fn new(text: impl Into<String>, role: Role) -> Self {
        Form::default().then(text, role)
    }

    /// This form with one more piece after the others.
    pub fn then(mut self, text: impl Into<String>, role: Role) -> Self {
        self.pieces.push(Piece {
            text: text.into(),
            role,
        });
        self
    }

    /// Columns the form takes.
    pub fn width(&self) -> usize {
        self.pieces.iter().map(|piece| width(&piece.text)).sum()
    }

    /// The form's text without styles.
    pub fn text(&self) -> String {
        self.pieces
            .iter()
            .map(|piece| piece.text.as_str())
            .collect()
    }
}

/// One item of the footer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Unique in the footer; the key of its toggle in the footer config (Unipi's segment ids,
    /// e.g. `model`, `git`, `context_pct`, where Unipi had one).
    pub id: String,
    /// The config group its toggle lives in: [`CORE_GROUP`] or the owning module's name.
    pub group: String,
    /// Higher survives longer when the row is narrow. The workbench's own segments use the
    /// values in [`super::priority`]; modules should stay within its `MODULE_*` range.
    pub priority: u8,
    /// The priority of the longer forms (at most `priority`, which is what it means when
    /// higher): how long the segment keeps its detail. Lower than another segment's `priority`
    /// means that segment is placed before this one grows.
    pub detail_priority: u8,
    pub align: Align,
    /// The leanest preset that shows the segment (`Minimal`: every preset shows it).
    pub min_preset: Preset,
    /// Longest first; never empty for a segment built with [`Segment::new`].
    pub forms: Vec<Form>,
    /// Drawn before every form in the user's icon style ([`super::build_segments`] puts it in).
    pub icon: Option<Icon>,
    /// What it means, for the footer's guide (`/unipi:footer-help`); modules set it.
    pub help: &'static str,
}

impl Segment {
    /// A core segment shown from the default preset up, with one form; its detail as important
    /// as its presence.
    pub fn new(id: impl Into<String>, priority: u8, align: Align, form: Form) -> Self {
        Segment {
            id: id.into(),
            group: CORE_GROUP.to_owned(),
            priority,
            detail_priority: priority,
            align,
            min_preset: Preset::Default,
            forms: vec![form],
            icon: None,
            help: "",
        }
    }

    /// The same segment with what it means, for the footer's guide.
    pub fn described(mut self, help: &'static str) -> Self {
        self.help = help;
        self
    }

    /// The same segment with `icon` before it.
    pub fn with_icon(mut self, icon: Icon) -> Self {
        self.icon = Some(icon);
        self
    }

    /// Its icon drawn in front of every form, as `glyph` (nothing when empty), in the role of
    /// the form's first piece.
    pub(super) fn put_icon(mut self, glyph: &str) -> Self {
        if glyph.is_empty() {
            return self;
        }
        for form in &mut self.forms {
            let role = form.pieces.first().map_or(Role::Text, |piece| piece.role);
            form.pieces.insert(
                0,
                Piece {
                    text: format!("{glyph} "),
                    role,
                },
            );
        }
        self
    }

    /// The same segment in config group `group`.
    pub fn in_group(mut self, group: impl Into<String>) -> Self {
        self.group = group.into();
        self
    }

    /// The same segment shown from `preset` up.
    pub fn from_preset(mut self, preset: Preset) -> Self {
        self.min_preset = preset;
        self
    }

    /// The same segment with its longer forms at `priority`.
    pub fn detail(mut self, priority: u8) -> Self {
        self.detail_priority = priority;
        self
    }

    /// The same segment with `shorter` as its next fallback form. A form that is not narrower
    /// than the current shortest one would never help and is ignored.
    pub fn or(mut self, shorter: Form) -> Self {
        let narrower = self
            .forms
            .last()
            .is_none_or(|last| shorter.width() < last.width());
        if narrower && shorter.width() > 0 {
            self.forms.push(shorter);
        }
        self
    }
}

/// Draw `segments` into the first row of `area`: fitted, left ones from the left edge, right ones
/// against the right edge, separated by a muted `│`.
pub fn render_segments(segments: &[Segment], theme: &Theme, area: Rect, buf: &mut Buffer) {
    render_footer(segments, &FooterSettings::default(), theme, area, buf);
}

/// Draw `segments` into `area` with the separator `settings` choose. With the overflow row on
/// and a second row in `area`, what does not fit the first row goes to the second (fitted the
/// same way) rather than away; never is a segment cut.
pub fn render_footer(
    segments: &[Segment],
    settings: &FooterSettings,
    theme: &Theme,
    area: Rect,
    buf: &mut Buffer,
) {
    if area.is_empty() {
        return;
    }
    let separator = settings.separator();
    let second = area.height >= 2 && settings.overflow_row();
    let row = Rect { height: 1, ..area };
    let choice = draw_row(segments, separator, theme, row, buf);
    if !second {
        return;
    }
    let rest: Vec<Segment> = segments
        .iter()
        .zip(&choice)
        .filter(|(_, form)| form.is_none())
        .map(|(segment, _)| segment.clone())
        .collect();
    draw_row(
        &rest,
        separator,
        theme,
        Rect {
            y: area.y + 1,
            ..row
        },
        buf,
    );
}

/// How many rows `segments` take at `columns`: 2 when the overflow row is on and some do
/// not fit one row even in their shortest forms, else 1.
pub fn rows_needed(segments: &[Segment], settings: &FooterSettings, columns: u16) -> u16 {
    if !settings.overflow_row() {
        return 1;
    }
    let avail = usize::from(columns.saturating_sub(2 * u16::from(columns >= 10)));
    let all = fit_with(segments, avail, width(settings.separator()));
    if all.iter().all(Option::is_some) {
        1
    } else {
        2
    }
}

/// One fitted row in `row`; returns which form of each segment it drew.
fn draw_row(
    segments: &[Segment],
    separator: &str,
    theme: &Theme,
    row: Rect,
    buf: &mut Buffer,
) -> Vec<Option<usize>> {
    buf.set_style(row, theme.footer);
    // One column of padding on each side, when there is room for it.
    let padding = u16::from(row.width >= 10);
    let avail = usize::from(row.width - 2 * padding);
    let choice = fit_with(segments, avail, width(separator));
    let shown = |align: Align| -> Vec<&Form> {
        segments
            .iter()
            .zip(&choice)
            .filter(|(segment, _)| segment.align == align)
            .filter_map(|(segment, form)| form.map(|index| &segment.forms[index]))
            .collect()
    };
    let left = shown(Align::Left);
    let right = shown(Align::Right);
    let right_edge = row.right() - padding;
    let zone = Zone {
        separator,
        theme,
        y: row.y,
        right: right_edge,
    };
    let mut x = row.x + padding;
    zone.draw(&left, &mut x, buf);
    let right_width = zone_width(right.iter().map(|form| form.width()), width(separator));
    let right_width = u16::try_from(right_width).unwrap_or(u16::MAX);
    let mut x = right_edge.saturating_sub(right_width).max(x);
    zone.draw(&right, &mut x, buf);
    choice
}

/// The separator between two segments on the same side, by default.
pub const SEPARATOR: &str = " │ ";
/// Columns kept free between the left and the right side.
pub const ZONE_GAP: usize = 2;

/// [`fit_with`] the default separator.
pub fn fit(segments: &[Segment], avail: usize) -> Vec<Option<usize>> {
    fit_with(segments, avail, width(SEPARATOR))
}

/// Which form of each segment to draw (`None`: not drawn) so the row fits `avail` columns, with
/// `separator` columns between two segments.
///
/// Each segment wishes to be shown in its shortest form (at its `priority`) and then to grow one
/// form at a time (at its `detail_priority`). Wishes are granted from the highest priority down
/// — on a tie, being shown before growing, then in display order — each one only if the row
/// still fits; a wish that does not fit is skipped, and smaller ones after it may still fit.
pub fn fit_with(segments: &[Segment], avail: usize, separator: usize) -> Vec<Option<usize>> {
    struct Wish {
        priority: u8,
        grows: bool,
        segment: usize,
        form: usize,
    }
    let mut wishes = Vec::new();
    for (index, segment) in segments.iter().enumerate() {
        let Some(shortest) = segment.forms.len().checked_sub(1) else {
            continue;
        };
        wishes.push(Wish {
            priority: segment.priority,
            grows: false,
            segment: index,
            form: shortest,
        });
        let detail = segment.detail_priority.min(segment.priority);
        wishes.extend((0..shortest).rev().map(|form| Wish {
            priority: detail,
            grows: true,
            segment: index,
            form,
        }));
    }
    wishes.sort_by_key(|wish| {
        (
            std::cmp::Reverse(wish.priority),
            wish.grows,
            wish.segment,
            std::cmp::Reverse(wish.form),
        )
    });

    let mut choice: Vec<Option<usize>> = vec![None; segments.len()];
    for wish in wishes {
        // Growing starts from the next shorter form; a segment that was not shown, or stopped
        // growing because the last step did not fit, cannot grow further.
        let from = wish.grows.then_some(wish.form + 1);
        if choice[wish.segment] != from {
            continue;
        }
        choice[wish.segment] = Some(wish.form);
        if row_width(segments, &choice, separator) > avail {
            choice[wish.segment] = from;
        }
    }
    choice
}

/// Width of the row with `choice`: both sides, their separators, and the gap between them.
fn row_width(segments: &[Segment], choice: &[Option<usize>], separator: usize) -> usize {
    let side = |align: Align| {
        zone_width(
            segments
                .iter()
                .zip(choice)
                .filter(|(segment, _)| segment.align == align)
                .filter_map(|(segment, form)| form.map(|index| segment.forms[index].width())),
            separator,
        )
    };
    let (left, right) = (side(Align::Left), side(Align::Right));
    let gap = if left > 0 && right > 0 { ZONE_GAP } else { 0 };
    left + gap + right
}

/// Width of one side's forms joined by separators.
fn zone_width(widths: impl Iterator<Item = usize>, separator: usize) -> usize {
    let (total, count) = widths.fold((0, 0_usize), |(total, count), w| (total + w, count + 1));
    total + separator * count.saturating_sub(1)
}

/// Where one side of a row is drawn, and with what between its segments.
struct Zone<'a> {
    separator: &'a str,
    theme: &'a Theme,
    y: u16,
    right: u16,
}

impl Zone<'_> {
    fn draw(&self, forms: &[&Form], x: &mut u16, buf: &mut Buffer) {
        let (theme, y, right) = (self.theme, self.y, self.right);
        for (i, form) in forms.iter().enumerate() {
            if i > 0 {
                let style = theme.footer.patch(theme.muted);
                *x = put(buf, *x, y, self.separator, style, right);
            }
            for piece in &form.pieces {
                let style = theme.footer.patch(piece.role.style(theme));
                *x = put(buf, *x, y, &piece.text, style, right);
            }
        }
    }
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
    use super::*;
    use crate::test_support::render_to_string;

    /// A segment `id` with forms of the given widths (filled with the id's first letter) and
    /// priorities (presence, detail).
    fn make_segment(
        id: &str,
        (priority, detail): (u8, u8),
        align: Align,
        widths: &[usize],
    ) -> Segment {
        let letter = id.chars().next().unwrap_or('x');
        let mut forms = widths
            .iter()
            .map(|&w| Form::new(letter.to_string().repeat(w), Role::Text));
        let first = forms.next().unwrap();
        forms
            .fold(Segment::new(id, priority, align, first), Segment::or)
            .detail(detail)
    }

    /// The shown segments as "id:form" (form 0 is the longest), in input order.
    fn fitted(segments: &[Segment], avail: usize) -> String {
        segments
            .iter()
            .zip(fit(segments, avail))
            .filter_map(|(segment, form)| form.map(|form| format!("{}:{form}", segment.id)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn drop_order_table() {
        use Align::{Left, Right};
        // Left: state(9) │ model(20|10) │ cwd(30|12) │ git(6); right: ctx(16|3) │ hint(7).
        let segments = vec![
            make_segment("state", (100, 100), Left, &[9]),
            make_segment("model", (80, 45), Left, &[20, 10]),
            make_segment("cwd", (40, 25), Left, &[30, 12]),
            make_segment("git", (30, 30), Left, &[6]),
            make_segment("ctx", (75, 65), Right, &[16, 3]),
            make_segment("hint", (70, 70), Right, &[7]),
        ];
        // Wishes in order, with the row's width once granted: state 9, model short 22, ctx short
        // 27, hint 37, ctx long 50, model long 60, cwd short 75, git 84, cwd long 102.
        let cases = [
            (200, "state:0 model:0 cwd:0 git:0 ctx:0 hint:0"),
            (102, "state:0 model:0 cwd:0 git:0 ctx:0 hint:0"),
            (101, "state:0 model:0 cwd:1 git:0 ctx:0 hint:0"),
            (84, "state:0 model:0 cwd:1 git:0 ctx:0 hint:0"),
            (83, "state:0 model:0 cwd:1 ctx:0 hint:0"),
            (75, "state:0 model:0 cwd:1 ctx:0 hint:0"),
            // No room for cwd: git, narrower and next in line, fits instead.
            (74, "state:0 model:0 git:0 ctx:0 hint:0"),
            (69, "state:0 model:0 git:0 ctx:0 hint:0"),
            (68, "state:0 model:0 ctx:0 hint:0"),
            (60, "state:0 model:0 ctx:0 hint:0"),
            // The model's detail (45) goes before the context's (65)…
            (59, "state:0 model:1 git:0 ctx:0 hint:0"),
            (58, "state:0 model:1 ctx:0 hint:0"),
            (50, "state:0 model:1 ctx:0 hint:0"),
            // …unless the context cannot grow anyway, and the model still can.
            (49, "state:0 model:0 ctx:1 hint:0"),
            (47, "state:0 model:0 ctx:1 hint:0"),
            (46, "state:0 model:1 git:0 ctx:1 hint:0"),
            (45, "state:0 model:1 ctx:1 hint:0"),
            (37, "state:0 model:1 ctx:1 hint:0"),
            // The hint (70) goes before the context (75) or the model (80).
            (36, "state:0 model:1 git:0 ctx:1"),
            (35, "state:0 model:1 ctx:1"),
            (27, "state:0 model:1 ctx:1"),
            (26, "state:0 model:1"),
            (22, "state:0 model:1"),
            (21, "state:0 ctx:1"),
            (14, "state:0 ctx:1"),
            (13, "state:0"),
            (9, "state:0"),
            // Too narrow for the state at all: what still fits is shown.
            (8, "ctx:1"),
            (3, "ctx:1"),
            (2, ""),
            (0, ""),
        ];
        for (avail, want) in cases {
            assert_eq!(fitted(&segments, avail), want, "avail {avail}");
            let choice = fit(&segments, avail);
            assert!(
                row_width(&segments, &choice, width(SEPARATOR)) <= avail,
                "avail {avail}"
            );
        }
    }

    #[test]
    fn ties_go_to_the_earlier_segment() {
        let segments = vec![
            make_segment("a", (10, 10), Align::Left, &[4]),
            make_segment("b", (10, 10), Align::Left, &[4]),
            make_segment("c", (10, 10), Align::Right, &[4]),
        ];
        assert_eq!(fitted(&segments, 17), "a:0 b:0 c:0");
        assert_eq!(fitted(&segments, 16), "a:0 b:0");
        // b does not fit; c, alone on its side, still does.
        assert_eq!(fitted(&segments, 10), "a:0 c:0");
        assert_eq!(fitted(&segments, 9), "a:0");
    }

    #[test]
    fn a_segment_is_drawn_whole_or_not_at_all() {
        let segments = vec![
            Segment::new(
                "notice",
                50,
                Align::Left,
                Form::new("a long notice", Role::Text),
            )
            .or(Form::new("notice", Role::Text)),
        ];
        let cases = [
            (30, " a long notice                "),
            (12, " notice     "),
            (8, "notice  "),
            // No room for either form: nothing, not "noti…".
            (5, "     "),
        ];
        for (w, want) in cases {
            let text = render_to_string(w, 1, |area, buf| {
                render_segments(&segments, &Theme::plain(), area, buf);
            });
            assert_eq!(text.trim_end(), format!("\"{want}\""), "width {w}");
        }
    }

    #[test]
    fn or_ignores_forms_that_are_not_shorter() {
        let segment = Segment::new("x", 1, Align::Left, Form::new("abc", Role::Text))
            .or(Form::new("abd", Role::Text))
            .or(Form::new("", Role::Text))
            .or(Form::new("ab", Role::Text))
            .or(Form::new("a", Role::Text));
        let forms: Vec<String> = segment.forms.iter().map(Form::text).collect();
        assert_eq!(forms, ["abc", "ab", "a"]);
    }

    #[test]
    fn right_side_is_flush_right_and_left_side_flush_left() {
        let segments = vec![
            Segment::new("l", 1, Align::Left, Form::new("left", Role::Text)),
            Segment::new("r1", 1, Align::Right, Form::new("r1", Role::Text)),
            Segment::new("r2", 1, Align::Right, Form::new("r2", Role::Text)),
        ];
        let text = render_to_string(20, 1, |area, buf| {
            render_segments(&segments, &Theme::plain(), area, buf);
        });
        assert_eq!(text.trim_end(), "\" left       r1 │ r2 \"");
        let only_right = &segments[1..];
        let text = render_to_string(20, 1, |area, buf| {
            render_segments(only_right, &Theme::plain(), area, buf);
        });
        assert_eq!(text.trim_end(), "\"            r1 │ r2 \"");
    }
}

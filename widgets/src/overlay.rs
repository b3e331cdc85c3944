//! The frame every centred overlay shares (help, info, the last compaction, settings, MCP): a
//! bordered box with the title on top, the key that closes it at the bottom left (every overlay
//! says how to leave it), a "first-last/total" position marker at the bottom right when the
//! content scrolls, and one column of padding inside. Returns where the content goes.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Widget};

use crate::text::truncate_end;
use crate::theme::Theme;

/// Border rows/columns on each side of an overlay.
pub const BORDER: usize = 1;
/// Blank columns between the border and the content.
pub const PADDING: usize = 1;

/// Draws the frame of an overlay titled `title` into `area` and returns the content area.
/// `hint` (e.g. "Esc close"; empty for none) goes on the bottom border. `first` is the first
/// content row shown and `total` the number of content rows; the position marker appears when
/// they do not all fit.
pub fn frame(
    title: &str,
    hint: &str,
    first: usize,
    total: usize,
    theme: &Theme,
    area: Rect,
    buf: &mut Buffer,
) -> Rect {
    let visible = usize::from(area.height).saturating_sub(2 * BORDER);
    let title = Line::from(Span::styled(
        format!(
            " {} ",
            truncate_end(title, usize::from(area.width).saturating_sub(4))
        ),
        theme.overlay_title,
    ));
    let mut block = Block::bordered()
        .border_style(theme.overlay_border)
        .style(theme.overlay_text)
        .title(title);
    if !hint.is_empty() {
        let room = hint_room(area.width);
        block = block.title_bottom(Line::from(Span::styled(
            format!(" {} ", truncate_end(hint, room)),
            theme.muted,
        )));
    }
    if total > visible {
        let last = (first + visible).min(total);
        let position = format!(" {}-{}/{} ", first + 1, last, total);
        block = block.title_bottom(Line::from(position).right_aligned());
    }
    let inner = block.inner(area);
    block.render(area, buf);
    Rect {
        x: inner.x + PADDING as u16,
        width: inner.width.saturating_sub(2 * PADDING as u16),
        ..inner
    }
}

/// A box centred on `screen`: as wide as the screen allows (two columns kept free on each side)
/// up to `max_width`, and tall enough for the content rows `rows(width)` gives at that width
/// (borders included), up to the screen's height.
pub fn centred_box(screen: Rect, max_width: u16, rows: impl FnOnce(u16) -> usize) -> Rect {
    let width = screen
        .width
        .saturating_sub(4)
        .clamp(1, max_width)
        .min(screen.width);
    let wanted = u16::try_from(rows(width) + 2 * BORDER).unwrap_or(u16::MAX);
    let height = wanted.min(screen.height);
    Rect::new(
        screen.x + (screen.width - width) / 2,
        screen.y + (screen.height - height) / 2,
        width,
        height,
    )
}

/// The columns a hint on the bottom border of a box `box_width` wide may take (the corners and
/// the position marker keep the rest); a longer one is cut.
pub fn hint_room(box_width: u16) -> usize {
    usize::from(box_width).saturating_sub(16)
}

/// The content width of an overlay box `box_width` columns wide (borders and padding taken off).
pub fn text_width(box_width: u16) -> usize {
    usize::from(box_width).saturating_sub(2 * (BORDER + PADDING))
}

/// Draws a read-only overlay of `lines` into `area` (cleared first) with `hint` on its bottom
/// border, scrolled to `scroll`
/// (clamped so the last page stays full). Too small for a border and one row of text, it draws
/// nothing rather than a broken box.
pub fn render_scrolled(
    title: &str,
    hint: &str,
    lines: &[Line<'_>],
    scroll: usize,
    theme: &Theme,
    area: Rect,
    buf: &mut Buffer,
) {
    if area.width < 2 * (BORDER + PADDING) as u16 + 1 || area.height < 2 * BORDER as u16 + 1 {
        return;
    }
    Clear.render(area, buf);
    let visible = usize::from(area.height) - 2 * BORDER;
    let first = scroll.min(lines.len().saturating_sub(visible));
    let text_area = frame(title, hint, first, lines.len(), theme, area, buf);
    for (row, line) in lines.iter().skip(first).take(visible).enumerate() {
        buf.set_line(text_area.x, text_area.y + row as u16, line, text_area.width);
    }
}

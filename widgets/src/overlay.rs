//! The frame every centred overlay shares (help, info): a bordered box with the title on top,
//! a "first-last/total" position marker at the bottom when the content scrolls, and one column of
//! padding inside. Returns where the content goes.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Widget};

use crate::text::truncate_end;
use crate::theme::Theme;

/// Border rows/columns on each side of an overlay.
pub const BORDER: usize = 1;
/// Blank columns between the border and the content.
pub const PADDING: usize = 1;

/// Draws the frame of an overlay titled `title` into `area` and returns the content area.
/// `first` is the first content row shown and `total` the number of content rows; the position
/// marker appears when they do not all fit.
pub fn frame(
    title: &str,
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

//! The read-only document viewer the board opens on Enter: the file's lines numbered, the card's
//! line marked, opened scrolled to it, scrolled with the `[pager]` keys.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use unipi_widgets::overlay::render_scrolled;
use unipi_widgets::theme::Theme;

use crate::config::keymap::Keymap;
use crate::views::pager::{PagedModel, PagedView};

/// Lines shown above the card's line when the viewer opens.
const CONTEXT_ABOVE: usize = 3;

pub(crate) struct DocViewer {
    title: String,
    lines: Vec<String>,
    /// The card's line (1-based).
    target: usize,
    scroll: usize,
}

/// The viewer of `text` (the document at `path`), opened at 1-based `line`.
pub(crate) fn doc_viewer(
    path: &str,
    text: &str,
    line: usize,
    keymap: &Keymap,
) -> PagedView<DocViewer> {
    let model = DocViewer {
        title: format!("{path}:{line} (read-only)"),
        lines: text.lines().map(str::to_owned).collect(),
        target: line,
        scroll: 0,
    };
    PagedView::new(model, keymap).scrolled_to(line.saturating_sub(1 + CONTEXT_ABOVE))
}

impl DocViewer {
    fn rendered(&self, theme: &Theme) -> Vec<Line<'_>> {
        let digits = self.lines.len().max(1).to_string().len();
        self.lines
            .iter()
            .enumerate()
            .map(|(index, text)| {
                let number = index + 1;
                let (mark, style) = if number == self.target {
                    ("▸", theme.accent)
                } else {
                    (" ", ratatui::style::Style::new())
                };
                Line::from(vec![
                    Span::styled(format!("{mark}{number:>digits$} │ "), theme.muted),
                    Span::styled(text.replace('\t', "    "), style),
                ])
            })
            .collect()
    }
}

impl PagedModel for DocViewer {
    fn title(&self) -> &str {
        &self.title
    }

    fn scroll_mut(&mut self) -> &mut usize {
        &mut self.scroll
    }

    fn max_scroll(&self, screen: Rect) -> usize {
        self.lines
            .len()
            .saturating_sub(usize::from(screen.height.saturating_sub(2)))
    }

    fn render(&self, hint: &str, theme: &Theme, screen: Rect, buf: &mut Buffer) {
        render_scrolled(
            &self.title,
            hint,
            &self.rendered(theme),
            self.scroll,
            theme,
            screen,
            buf,
        );
    }
}

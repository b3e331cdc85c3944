//! The `/unipi:doctor` overlay: the report's rows as `unipi_widgets::doctor` draws them,
//! scrolled and closed with the `[pager]` keys like every read-only overlay.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use unipi_widgets::doctor::{DoctorModel, DoctorRow, max_scroll, render};
use unipi_widgets::theme::Theme;

use crate::config::keymap::Keymap;
use crate::views::pager::{PagedModel, PagedView};

/// The `/unipi:doctor` overlay.
pub(crate) type DoctorView = PagedView<DoctorModel>;

/// The overlay over `rows`.
pub(crate) fn doctor_view(rows: Vec<DoctorRow>, keymap: &Keymap) -> DoctorView {
    PagedView::new(
        DoctorModel {
            rows,
            ..DoctorModel::default()
        },
        keymap,
    )
}

impl PagedModel for DoctorModel {
    fn title(&self) -> &str {
        "the doctor's report"
    }

    fn scroll_mut(&mut self) -> &mut usize {
        &mut self.scroll
    }

    fn max_scroll(&self, screen: Rect) -> usize {
        max_scroll(self, screen)
    }

    fn render(&self, hint: &str, theme: &Theme, screen: Rect, buf: &mut Buffer) {
        render(self, hint, theme, screen, buf);
    }
}

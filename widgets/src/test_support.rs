//! Test helpers shared by the widget tests: draw through ratatui's `TestBackend` and hand back
//! its text view (one quoted line per row), the form every widget snapshot is stored in.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// Render with `draw` into a `width` x `height` test terminal and return the screen as text.
pub(crate) fn render_to_string(
    width: u16,
    height: u16,
    draw: impl FnOnce(Rect, &mut Buffer),
) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| {
            let area = frame.area();
            draw(area, frame.buffer_mut());
        })
        .unwrap();
    terminal.backend().to_string()
}

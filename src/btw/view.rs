//! The thread overlay: the side conversation over the pane, with an input line to keep talking.
//! Enter asks what was typed in the thread; typed `/btw:new|tangent|clear|inject|summarize
//! [args]` runs that command instead (as in Unipi's overlay). Esc closes the overlay and keeps the
//! thread; `/btw:clear` and an inject close it too.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use unipi_widgets::btw::{BtwThreadModel, BtwTurn, cursor_position, render, transcript_rows};
use unipi_widgets::theme::Theme;

use super::thread::Mode;
use crate::config::keymap::{KeyTable, KeyTableSpec, Keymap, key_table};
use crate::views::line_edit::{EditAction, LineEdit};
use crate::views::{RefreshContext, View, ViewAction};

key_table! {
    /// The `[btw]` key table: the `/btw` thread overlay.
    pub(crate) static BTW_KEYS,
    pub(crate) enum BtwAction,
    table "btw", title "The /btw side thread",
    defaults [
        ("enter", "btw.ask"),
        ("esc", "btw.close"),
        ("pageup", "btw.page-up"),
        ("pagedown", "btw.page-down"),
        ("backspace", "btw.backspace"),
        ("delete", "btw.delete"),
        ("left", "btw.left"),
        ("right", "btw.right"),
        ("home", "btw.home"),
        ("end", "btw.end"),
        ("ctrl+u", "btw.clear-input"),
    ],
    actions {
        Ask => "btw.ask", "Ask what was typed, or run a /btw: command";
        Close => "btw.close", "Close; the thread is kept";
        PageUp => "btw.page-up", "Scroll the thread up a page";
        PageDown => "btw.page-down", "Scroll the thread down a page";
        Backspace => "btw.backspace", "Delete the character before the cursor";
        Delete => "btw.delete", "Delete the character under the cursor";
        Left => "btw.left", "Move the cursor left";
        Right => "btw.right", "Move the cursor right";
        Home => "btw.home", "Move the cursor to the start";
        End => "btw.end", "Move the cursor to the end";
        ClearInput => "btw.clear-input", "Delete everything before the cursor";
    }
}

/// What the overlay reads and asks for.
pub(crate) trait ThreadPort: Send + Sync {
    /// The overlay's content (without the input, the scroll and the keys, which are the view's).
    fn snapshot(&self) -> BtwThreadModel;
    /// Bumped when the overlay should close.
    fn dismissals(&self) -> u64;
    /// Runs what was typed (a question, or a `/btw:` command), in the background.
    fn submit(&self, text: &str);
}

pub(crate) struct ThreadView {
    model: BtwThreadModel,
    keys: KeyTable<BtwAction>,
    edit: LineEdit,
    port: Arc<dyn ThreadPort>,
    dismissals: u64,
    done: bool,
    last_area: std::cell::Cell<Rect>,
}

impl ThreadView {
    pub(crate) fn new(port: Arc<dyn ThreadPort>, keymap: &Keymap) -> Self {
        let keys = KeyTable::<BtwAction>::from_keymap(keymap);
        let hint = keys.hint_line(&[
            (&[BtwAction::Ask], "ask"),
            (&[BtwAction::PageUp, BtwAction::PageDown], "scroll"),
            (&[BtwAction::Close], "close (the thread is kept)"),
        ]);
        let mut view = ThreadView {
            model: BtwThreadModel {
                keys: format!("{hint} · /btw:inject /btw:summarize /btw:new /btw:clear"),
                ..BtwThreadModel::default()
            },
            keys,
            edit: LineEdit::default(),
            dismissals: port.dismissals(),
            port,
            done: false,
            last_area: std::cell::Cell::new(Rect::default()),
        };
        view.pull();
        view
    }

    fn pull(&mut self) {
        let fresh = self.port.snapshot();
        let keys = std::mem::take(&mut self.model.keys);
        let scroll = self.model.scroll;
        self.model = BtwThreadModel {
            input: self.edit.text().to_owned(),
            cursor: self.edit.cursor(),
            scroll,
            keys,
            ..fresh
        };
        if self.port.dismissals() != self.dismissals {
            self.done = true;
        }
    }

    fn scroll_by(&mut self, pages: isize) {
        let (total, visible) = transcript_rows(&self.model, self.last_area.get());
        let last_page = total.saturating_sub(visible);
        let from = self.model.scroll.unwrap_or(last_page).min(last_page);
        let step = visible.saturating_sub(1).max(1) as isize;
        let to = from.saturating_add_signed(pages * step).min(last_page);
        // At the bottom it follows the latest again.
        self.model.scroll = (to < last_page).then_some(to);
    }

    fn submit(&mut self) {
        let text = self.edit.text().trim().to_owned();
        if text.is_empty() {
            return;
        }
        self.edit = LineEdit::default();
        self.model.scroll = None;
        self.port.submit(&text);
        self.pull();
    }
}

impl View for ThreadView {
    fn title(&self) -> &str {
        "the /btw side thread"
    }

    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        self.last_area.set(area);
        render(&self.model, theme, area, buf);
    }

    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction {
        let edit = match self.keys.action(key) {
            Some(BtwAction::Close) => return ViewAction::Close,
            Some(BtwAction::Ask) => {
                self.submit();
                return ViewAction::Consumed;
            }
            Some(BtwAction::PageUp) => {
                self.scroll_by(-1);
                return ViewAction::Consumed;
            }
            Some(BtwAction::PageDown) => {
                self.scroll_by(1);
                return ViewAction::Consumed;
            }
            Some(BtwAction::Backspace) => EditAction::Backspace,
            Some(BtwAction::Delete) => EditAction::Delete,
            Some(BtwAction::Left) => EditAction::Left,
            Some(BtwAction::Right) => EditAction::Right,
            Some(BtwAction::Home) => EditAction::Home,
            Some(BtwAction::End) => EditAction::End,
            Some(BtwAction::ClearInput) => EditAction::KillToStart,
            None => match key.code {
                KeyCode::Char(ch) if key.modifiers.difference(KeyModifiers::SHIFT).is_empty() => {
                    self.edit.insert_char(ch);
                    self.pull();
                    return ViewAction::Consumed;
                }
                _ => return ViewAction::Unhandled,
            },
        };
        self.edit.apply(edit);
        self.pull();
        ViewAction::Consumed
    }

    fn handle_paste(&mut self, text: &str) -> bool {
        self.edit.insert_str(&text.replace('\n', " "));
        self.pull();
        true
    }

    fn cursor(&self, area: Rect) -> Option<Position> {
        cursor_position(&self.model, area)
    }

    fn refresh(&mut self, _context: &RefreshContext<'_>) {
        self.pull();
    }

    fn close_hint(&self) -> String {
        self.keys.close_key(BtwAction::Close)
    }

    fn key_table(&self) -> Option<&'static KeyTableSpec> {
        Some(&BTW_KEYS)
    }

    fn finished(&self) -> bool {
        self.done
    }
}

/// The overlay's content from the thread and the progress.
pub(crate) fn thread_model(
    thread: &super::thread::Thread,
    progress: &super::service::Progress,
    answerer: String,
) -> BtwThreadModel {
    BtwThreadModel {
        tangent: thread.mode == Mode::Tangent,
        answerer,
        turns: thread
            .turns
            .iter()
            .map(|turn| BtwTurn {
                question: turn.question.clone(),
                answer: turn.answer.clone(),
            })
            .collect(),
        asking: progress.asking.clone(),
        status: progress
            .status
            .clone()
            .unwrap_or_else(|| "Ready. Enter asks; Esc closes and keeps the thread.".to_owned()),
        failed: progress.failed,
        ..BtwThreadModel::default()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;
    use crate::views::test_keys::key;
    use std::sync::Mutex;

    #[derive(Default)]
    struct FakePort {
        submitted: Mutex<Vec<String>>,
        dismissals: std::sync::atomic::AtomicU64,
    }

    impl ThreadPort for FakePort {
        fn snapshot(&self) -> BtwThreadModel {
            BtwThreadModel {
                answerer: "p/m (main model)".into(),
                turns: (0..30)
                    .map(|n| BtwTurn {
                        question: format!("q{n}"),
                        answer: format!("a{n}"),
                    })
                    .collect(),
                ..BtwThreadModel::default()
            }
        }
        fn dismissals(&self) -> u64 {
            self.dismissals.load(std::sync::atomic::Ordering::SeqCst)
        }
        fn submit(&self, text: &str) {
            self.submitted.lock().unwrap().push(text.to_owned());
        }
    }

    #[test]
    fn typing_submits_scrolls_and_a_dismissal_closes() {
        let port = Arc::new(FakePort::default());
        let mut view = ThreadView::new(port.clone(), &Keymap::defaults());
        let area = Rect::new(0, 0, 80, 24);
        let mut buf = Buffer::empty(area);
        view.render(area, &mut buf, &Theme::plain());
        for ch in "and y?".chars() {
            view.handle_key(&key(KeyCode::Char(ch)));
        }
        view.handle_key(&key(KeyCode::Backspace));
        assert_eq!(view.model.input, "and y");
        assert_eq!(view.handle_key(&key(KeyCode::Enter)), ViewAction::Consumed);
        assert_eq!(*port.submitted.lock().unwrap(), vec!["and y".to_owned()]);
        assert_eq!(view.model.input, "");

        assert_eq!(view.model.scroll, None, "follows the latest");
        view.handle_key(&key(KeyCode::PageUp));
        let up = view.model.scroll.unwrap();
        view.handle_key(&key(KeyCode::PageDown));
        assert_eq!(
            view.model.scroll, None,
            "back at the bottom it follows again"
        );
        assert!(up > 0);

        assert!(!view.finished());
        port.dismissals
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        view.pull();
        assert!(view.finished());
        assert_eq!(view.handle_key(&key(KeyCode::Esc)), ViewAction::Close);
    }
}

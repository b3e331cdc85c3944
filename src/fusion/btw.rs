//! `/btw <question>`: a side question the sidekick answers outside the main conversation, in a
//! box over the pane. [`SideExchange`] asks in the background (the command returns at once) and
//! holds the answer; the [`BtwView`] pulls it when fusion signals a change. Nothing reaches the
//! main conversation unless the user presses the `[fusion-btw]` table's inject key, which adds
//! the question and the answer as one message (shown, in the model's context from its next turn,
//! starting no turn).

use std::sync::{Arc, Mutex};

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use unipi_widgets::footer::format_cost;
use unipi_widgets::fusion::btw::{BtwAnswer, BtwModel, max_scroll, render};
use unipi_widgets::fusion::saved_text;
use unipi_widgets::theme::Theme;

use super::engine::Engine;
use crate::config::keymap::{KeyTable, KeyTableSpec, Keymap, key_table};
use crate::sys::lock;
use crate::views::{RefreshContext, View, ViewAction, ViewEffect};

key_table! {
    /// The `[fusion-btw]` key table.
    pub(crate) static BTW_KEYS,
    pub(crate) enum BtwAction,
    table "fusion-btw", title "A side question's answer (/btw)",
    defaults [
        ("i", "fusion-btw.inject"),
        ("y", "fusion-btw.copy"),
        ("up", "fusion-btw.up"),
        ("k", "fusion-btw.up"),
        ("down", "fusion-btw.down"),
        ("j", "fusion-btw.down"),
        ("pageup", "fusion-btw.page-up"),
        ("pagedown", "fusion-btw.page-down"),
        ("esc", "fusion-btw.close"),
        ("q", "fusion-btw.close"),
    ],
    actions {
        Inject => "fusion-btw.inject", "Add the exchange to the conversation";
        Copy => "fusion-btw.copy", "Copy the answer";
        Up => "fusion-btw.up", "Scroll up a line";
        Down => "fusion-btw.down", "Scroll down a line";
        PageUp => "fusion-btw.page-up", "Scroll up a page";
        PageDown => "fusion-btw.page-down", "Scroll down a page";
        Close => "fusion-btw.close", "Close; the conversation is untouched";
    }
}

/// Rows a page key scrolls.
const PAGE: usize = 10;

/// What the view reads and asks for.
pub(crate) trait BtwPort: Send + Sync {
    /// The answer as it stands, and the notice of the last action.
    fn answer(&self) -> (BtwAnswer, Option<String>);
    /// Adds the exchange to the conversation, in the background.
    fn inject(&self);
}

/// One side question on its way to the sidekick and back.
pub(crate) struct SideExchange {
    engine: Arc<Engine>,
    question: String,
    /// The answer and the notice of the last action (shared with the tasks that write them).
    state: Arc<Mutex<(BtwAnswer, Option<String>)>>,
    injected: std::sync::atomic::AtomicBool,
}

impl SideExchange {
    /// Starts asking `question`; the answer arrives with a change signal.
    pub(crate) fn start(engine: Arc<Engine>, question: String) -> Arc<Self> {
        let exchange = Arc::new(SideExchange {
            engine,
            question,
            state: Arc::new(Mutex::new((BtwAnswer::Asking, None))),
            injected: std::sync::atomic::AtomicBool::new(false),
        });
        let asking = exchange.clone();
        tokio::spawn(async move {
            let outcome = asking.engine.ask_side_question(&asking.question).await;
            let answer = match outcome {
                Ok((answer, cost)) => {
                    let tokens = answer.usage.input
                        + answer.usage.output
                        + answer.usage.cache_read
                        + answer.usage.cache_write;
                    let usage = match cost {
                        Some(cost) => format!(
                            "{tokens} tokens · {} · {} against the primary",
                            format_cost(cost.sidekick),
                            saved_text(cost.saved())
                        ),
                        None => format!("{tokens} tokens"),
                    };
                    BtwAnswer::Answered {
                        text: answer.text,
                        usage,
                    }
                }
                Err(error) => BtwAnswer::Failed(error.into_text()),
            };
            lock(&asking.state).0 = answer;
            asking.engine.changed().bump();
        });
        exchange
    }
}

impl BtwPort for SideExchange {
    fn answer(&self) -> (BtwAnswer, Option<String>) {
        lock(&self.state).clone()
    }

    fn inject(&self) {
        let BtwAnswer::Answered { text, .. } = lock(&self.state).0.clone() else {
            lock(&self.state).1 = Some("No answer to add yet".to_owned());
            return;
        };
        if self
            .injected
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            lock(&self.state).1 = Some("Already added to the conversation".to_owned());
            return;
        }
        let (engine, question) = (self.engine.clone(), self.question.clone());
        lock(&self.state).1 = Some("Adding it to the conversation…".to_owned());
        let exchange = self.state.clone();
        tokio::spawn(async move {
            let notice = match engine.inject(&question, &text).await {
                Ok(()) => {
                    "Added to the conversation (the agent sees it from its next turn)".to_owned()
                }
                Err(err) => format!("Could not add it to the conversation: {err}"),
            };
            lock(&exchange).1 = Some(notice);
            engine.changed().bump();
        });
    }
}

pub(crate) struct BtwView {
    model: BtwModel,
    keys: KeyTable<BtwAction>,
    port: Arc<dyn BtwPort>,
    last_area: std::cell::Cell<Rect>,
}

impl BtwView {
    pub(crate) fn new(
        port: Arc<dyn BtwPort>,
        question: &str,
        sidekick: &str,
        keymap: &Keymap,
    ) -> Self {
        let keys = KeyTable::<BtwAction>::from_keymap(keymap);
        let hint = keys.hint_line(&[
            (&[BtwAction::Inject], "add to the conversation"),
            (&[BtwAction::Copy], "copy"),
            (&[BtwAction::Up, BtwAction::Down], "scroll"),
            (&[BtwAction::Close], "close"),
        ]);
        let mut view = BtwView {
            model: BtwModel {
                question: question.to_owned(),
                sidekick: sidekick.to_owned(),
                keys: hint,
                ..BtwModel::default()
            },
            keys,
            port,
            last_area: std::cell::Cell::new(Rect::default()),
        };
        view.pull();
        view
    }

    fn pull(&mut self) {
        let (answer, notice) = self.port.answer();
        self.model.answer = answer;
        if notice.is_some() {
            self.model.notice = notice;
        }
    }

    fn scroll_by(&mut self, delta: isize) {
        let max = max_scroll(&self.model, self.last_area.get());
        self.model.scroll = self.model.scroll.saturating_add_signed(delta).min(max);
    }
}

impl View for BtwView {
    fn title(&self) -> &str {
        "the side question"
    }

    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        self.last_area.set(area);
        render(&self.model, theme, area, buf);
    }

    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction {
        let Some(action) = self.keys.action(key) else {
            return ViewAction::Unhandled;
        };
        match action {
            BtwAction::Close => return ViewAction::Close,
            BtwAction::Up => self.scroll_by(-1),
            BtwAction::Down => self.scroll_by(1),
            BtwAction::PageUp => self.scroll_by(-(PAGE as isize)),
            BtwAction::PageDown => self.scroll_by(PAGE as isize),
            BtwAction::Inject => {
                self.port.inject();
                self.pull();
            }
            BtwAction::Copy => {
                if let BtwAnswer::Answered { text, .. } = &self.model.answer {
                    self.model.notice = Some("Answer copied".to_owned());
                    return ViewAction::Effect(ViewEffect::Copy(text.clone()));
                }
                self.model.notice = Some("No answer to copy yet".to_owned());
            }
        }
        ViewAction::Consumed
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
}

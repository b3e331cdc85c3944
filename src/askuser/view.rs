//! The question modal: a view over the [`AskQueue`]'s head, drawn by `unipi_widgets::ask`. It
//! keeps the [`Form`] of the question on screen, turns keys into the form's inputs through two
//! key tables of its own — `[ask]` while choosing, `[ask-input]` while typing (plain characters
//! are typed, every other key comes from the table) — builds its hints from them, and hands each
//! answer to the queue, then shows the next question or closes when none waits.
//!
//! In a question that takes the user's own words, a plain character starts the answer: there the
//! `[ask]` table loses its plain-character keys (`j`, `k`, the digits, a user's `t`), which type
//! instead, and the hints show only the keys left (arrows, Enter, Tab, Esc). Space keeps its
//! binding: an answer never starts with a space.
//!
//! The queue may settle the shown call without the view (its timeout, Pi aborting it): the view
//! pulls the head on every refresh and reports itself finished when nothing waits. Closed
//! without an answer (Ctrl+C), it cancels the call it showed — a question must not wait with
//! nothing on screen — and the queue opens a new modal for any other waiting call.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use unipi_widgets::ask::{AskEditor, AskModel, AskRow, RowMark, cursor_position, render};
use unipi_widgets::theme::Theme;

use super::form::{Form, FormView, Input, LAUNCH_CHOICES, Step};
use super::params::{OptionAction, Question};
use super::queue::{AskQueue, Shown};
use crate::config::keymap::{Key, KeyTable, KeyTableSpec, Keymap, TableAction};
use crate::views::line_edit::EditAction;
use crate::views::{RefreshContext, View, ViewAction};

/// The `[ask]` key table: choosing.
pub(crate) static ASK_KEYS: KeyTableSpec = KeyTableSpec {
    table: "ask",
    title: "A question from the agent (ask_user)",
    actions: &[
        ("ask.up", "Move to the option above"),
        ("ask.down", "Move to the option below"),
        ("ask.toggle", "Tick or untick the option (multi-select)"),
        ("ask.submit", "Choose the option, or send the ticked ones"),
        ("ask.note", "Write a note on the option"),
        ("ask.cancel", "Cancel the question"),
        ("ask.pick-1", "Pick option 1 (tick it, in multi-select)"),
        ("ask.pick-2", "Pick option 2"),
        ("ask.pick-3", "Pick option 3"),
        ("ask.pick-4", "Pick option 4"),
        ("ask.pick-5", "Pick option 5"),
        ("ask.pick-6", "Pick option 6"),
        ("ask.pick-7", "Pick option 7"),
        ("ask.pick-8", "Pick option 8"),
        ("ask.pick-9", "Pick option 9"),
    ],
    defaults: &[
        ("up", "ask.up"),
        ("k", "ask.up"),
        ("down", "ask.down"),
        ("j", "ask.down"),
        ("space", "ask.toggle"),
        ("enter", "ask.submit"),
        ("tab", "ask.note"),
        ("esc", "ask.cancel"),
        ("1", "ask.pick-1"),
        ("2", "ask.pick-2"),
        ("3", "ask.pick-3"),
        ("4", "ask.pick-4"),
        ("5", "ask.pick-5"),
        ("6", "ask.pick-6"),
        ("7", "ask.pick-7"),
        ("8", "ask.pick-8"),
        ("9", "ask.pick-9"),
    ],
};

/// The `[ask-input]` key table: typing an answer or a note.
pub(crate) static ASK_INPUT_KEYS: KeyTableSpec = KeyTableSpec {
    table: "ask-input",
    title: "Typing an answer to the agent's question",
    actions: &[
        (
            "ask-input.confirm",
            "Done typing (answers, or keeps the note)",
        ),
        ("ask-input.back", "Leave the text without keeping it"),
        ("ask-input.left", "Cursor left"),
        ("ask-input.right", "Cursor right"),
        ("ask-input.word-left", "Cursor to the previous word"),
        ("ask-input.word-right", "Cursor past the next word"),
        ("ask-input.home", "Cursor to the start"),
        ("ask-input.end", "Cursor to the end"),
        (
            "ask-input.backspace",
            "Delete the character before the cursor",
        ),
        ("ask-input.delete", "Delete the character under the cursor"),
        ("ask-input.delete-word", "Delete the word before the cursor"),
        (
            "ask-input.clear-before",
            "Delete everything before the cursor",
        ),
        (
            "ask-input.clear-after",
            "Delete everything after the cursor",
        ),
    ],
    defaults: &[
        ("enter", "ask-input.confirm"),
        ("esc", "ask-input.back"),
        ("left", "ask-input.left"),
        ("ctrl+b", "ask-input.left"),
        ("right", "ask-input.right"),
        ("ctrl+f", "ask-input.right"),
        ("alt+left", "ask-input.word-left"),
        ("alt+b", "ask-input.word-left"),
        ("alt+right", "ask-input.word-right"),
        ("alt+f", "ask-input.word-right"),
        ("home", "ask-input.home"),
        ("ctrl+a", "ask-input.home"),
        ("end", "ask-input.end"),
        ("ctrl+e", "ask-input.end"),
        ("backspace", "ask-input.backspace"),
        ("delete", "ask-input.delete"),
        ("ctrl+d", "ask-input.delete"),
        ("ctrl+w", "ask-input.delete-word"),
        ("ctrl+u", "ask-input.clear-before"),
        ("ctrl+k", "ask-input.clear-after"),
    ],
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AskAction {
    Up,
    Down,
    Toggle,
    Submit,
    Note,
    Cancel,
    Pick(u8),
}

impl TableAction for AskAction {
    const SPEC: &'static KeyTableSpec = &ASK_KEYS;

    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "ask.up" => AskAction::Up,
            "ask.down" => AskAction::Down,
            "ask.toggle" => AskAction::Toggle,
            "ask.submit" => AskAction::Submit,
            "ask.note" => AskAction::Note,
            "ask.cancel" => AskAction::Cancel,
            _ => {
                let n = name.strip_prefix("ask.pick-")?.parse::<u8>().ok()?;
                return (1..=9).contains(&n).then_some(AskAction::Pick(n));
            }
        })
    }

    fn name(self) -> &'static str {
        const PICKS: [&str; 9] = [
            "ask.pick-1",
            "ask.pick-2",
            "ask.pick-3",
            "ask.pick-4",
            "ask.pick-5",
            "ask.pick-6",
            "ask.pick-7",
            "ask.pick-8",
            "ask.pick-9",
        ];
        match self {
            AskAction::Up => "ask.up",
            AskAction::Down => "ask.down",
            AskAction::Toggle => "ask.toggle",
            AskAction::Submit => "ask.submit",
            AskAction::Note => "ask.note",
            AskAction::Cancel => "ask.cancel",
            AskAction::Pick(n) => PICKS[usize::from(n.clamp(1, 9)) - 1],
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InputAction {
    Confirm,
    Back,
    Edit(EditAction),
}

impl TableAction for InputAction {
    const SPEC: &'static KeyTableSpec = &ASK_INPUT_KEYS;

    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "ask-input.confirm" => InputAction::Confirm,
            "ask-input.back" => InputAction::Back,
            "ask-input.left" => InputAction::Edit(EditAction::Left),
            "ask-input.right" => InputAction::Edit(EditAction::Right),
            "ask-input.word-left" => InputAction::Edit(EditAction::WordLeft),
            "ask-input.word-right" => InputAction::Edit(EditAction::WordRight),
            "ask-input.home" => InputAction::Edit(EditAction::Home),
            "ask-input.end" => InputAction::Edit(EditAction::End),
            "ask-input.backspace" => InputAction::Edit(EditAction::Backspace),
            "ask-input.delete" => InputAction::Edit(EditAction::Delete),
            "ask-input.delete-word" => InputAction::Edit(EditAction::DeleteWordBack),
            "ask-input.clear-before" => InputAction::Edit(EditAction::KillToStart),
            "ask-input.clear-after" => InputAction::Edit(EditAction::KillToEnd),
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            InputAction::Confirm => "ask-input.confirm",
            InputAction::Back => "ask-input.back",
            InputAction::Edit(action) => match action {
                EditAction::Left => "ask-input.left",
                EditAction::Right => "ask-input.right",
                EditAction::WordLeft => "ask-input.word-left",
                EditAction::WordRight => "ask-input.word-right",
                EditAction::Home => "ask-input.home",
                EditAction::End => "ask-input.end",
                EditAction::Backspace => "ask-input.backspace",
                EditAction::Delete => "ask-input.delete",
                EditAction::DeleteWordBack => "ask-input.delete-word",
                EditAction::KillToStart => "ask-input.clear-before",
                EditAction::KillToEnd => "ask-input.clear-after",
            },
        }
    }
}

/// How often the countdown moves.
const COUNTDOWN_TICK: Duration = Duration::from_millis(500);
/// The own-answer row's label.
pub(crate) const OWN_ANSWER: &str = "Type your own answer";

struct Current {
    shown: Shown,
    form: Form,
}

pub(crate) struct AskView {
    queue: AskQueue,
    keys: KeyTable<AskAction>,
    /// `keys` without the keys that type: the table of a question that takes the user's words.
    typing_keys: KeyTable<AskAction>,
    input_keys: KeyTable<InputAction>,
    current: Option<Current>,
    /// The app refreshed it before showing it: from then on, closing it settles its call.
    live: bool,
}

impl AskView {
    pub(crate) fn new(queue: AskQueue, keymap: &Keymap) -> Self {
        let keys = KeyTable::from_keymap(keymap);
        let mut view = AskView {
            queue,
            typing_keys: keys.without(Key::types_text),
            keys,
            input_keys: KeyTable::from_keymap(keymap),
            current: None,
            live: false,
        };
        view.load();
        view
    }

    /// Pulls the queue's head; a new call or question starts a fresh form.
    fn load(&mut self) {
        let Some(shown) = self.queue.head() else {
            self.current = None;
            return;
        };
        match &mut self.current {
            Some(current) if current.shown.id == shown.id && current.shown.index == shown.index => {
                current.shown = shown;
            }
            _ => {
                let question = shown.request.questions[shown.index].clone();
                self.current = Some(Current {
                    shown,
                    form: Form::new(question),
                });
            }
        }
    }

    /// What the widget draws at `now`, if a question is shown.
    pub(crate) fn model(&self, now: Instant) -> Option<AskModel> {
        let current = self.current.as_ref()?;
        let form = current.form.view();
        let shown = &current.shown;
        let countdown = countdown(shown, form.question, now);
        if let Some((prefill, cursor)) = form.launcher {
            return Some(AskModel {
                title: "Start a new task".to_owned(),
                question: format!("New task: {prefill}"),
                rows: LAUNCH_CHOICES
                    .iter()
                    .map(|label| plain_row(label))
                    .collect(),
                cursor,
                countdown,
                notice: form.notice.map(str::to_owned),
                keys: self.list_hints(false, true),
                close: self.close_hint_text(),
                ..AskModel::default()
            });
        }
        let multi = form.question.allow_multiple;
        let editing = form.editing.is_some();
        Some(AskModel {
            title: title(shown),
            context: form.question.context.clone(),
            question: form.question.question.clone(),
            rows: option_rows(&form),
            cursor: form.cursor,
            editor: form.editing.map(|(row, text, cursor)| AskEditor {
                row,
                text: text.to_owned(),
                cursor,
            }),
            countdown,
            notice: form.notice.map(str::to_owned),
            keys: if editing {
                self.input_hints()
            } else {
                self.list_hints(multi, false)
            },
            close: self.close_hint_text(),
        })
    }

    fn list_hints(&self, multi: bool, launcher: bool) -> Vec<(String, String)> {
        let choose = if multi { "send" } else { "choose" };
        let typing = self.typing_answers();
        let keys = self.list_keys();
        let mut table: Vec<(&[AskAction], &str)> =
            vec![(&[AskAction::Up, AskAction::Down], "move")];
        if multi {
            table.push((&[AskAction::Toggle], "tick"));
        }
        table.push((&[AskAction::Submit], choose));
        let mut hints = keys.hints(&table);
        if typing {
            hints.push(("type".to_owned(), "to answer".to_owned()));
        }
        if !launcher {
            if let (Some(first), Some(last)) = (
                keys.hint_key(AskAction::Pick(1)),
                keys.hint_key(AskAction::Pick(9)),
            ) {
                hints.push((format!("{first}-{last}"), "pick".to_owned()));
            }
            hints.extend(keys.hints(&[(&[AskAction::Note], "note")]));
        }
        hints.extend(keys.hints(&[(&[AskAction::Cancel], "cancel")]));
        hints
    }

    /// Typed characters start the own answer (the question takes the user's words).
    fn typing_answers(&self) -> bool {
        self.current
            .as_ref()
            .is_some_and(|current| current.form.typing_answers())
    }

    /// The `[ask]` keys in force: without the keys that type while typing answers.
    fn list_keys(&self) -> &KeyTable<AskAction> {
        if self.typing_answers() {
            &self.typing_keys
        } else {
            &self.keys
        }
    }

    fn input_hints(&self) -> Vec<(String, String)> {
        self.input_keys.hints(&[
            (&[InputAction::Confirm], "done"),
            (&[InputAction::Back], "back"),
            (&[InputAction::Edit(EditAction::KillToStart)], "clear"),
        ])
    }

    fn close_hint_text(&self) -> String {
        format!("{} cancel", self.close_hint())
    }

    /// Gives `input` to the form and the answer, if it makes one, to the queue.
    fn step(&mut self, input: Input) -> ViewAction {
        let Some(current) = self.current.as_mut() else {
            return ViewAction::Close;
        };
        match current.form.handle(input) {
            Step::Stay => ViewAction::Consumed,
            Step::Unhandled => ViewAction::Unhandled,
            Step::Done(answer) => {
                let (id, index) = (current.shown.id, current.shown.index);
                self.queue.answer(id, index, answer);
                self.load();
                if self.current.is_some() {
                    ViewAction::Consumed
                } else {
                    ViewAction::Close
                }
            }
        }
    }

    fn editing(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.form.editing())
    }
}

/// The box's title: who asks, which of several questions, how many more wait.
fn title(shown: &Shown) -> String {
    let mut title = if shown.agent == crate::bridge::AgentId::main() {
        "Question from the agent".to_owned()
    } else {
        format!("Question from {}", shown.agent)
    };
    let total = shown.request.questions.len();
    if total > 1 {
        title.push_str(&format!(" · {} of {total}", shown.index + 1));
    }
    if shown.waiting > 0 {
        title.push_str(&format!(" · {} more waiting", shown.waiting));
    }
    title
}

/// The seconds left before the question times out, and what is answered then (the recommended
/// options), when it has a deadline.
fn countdown(shown: &Shown, question: &Question, now: Instant) -> Option<String> {
    shown.deadline.map(|deadline| {
        let left = deadline.saturating_duration_since(now).as_secs_f64().ceil() as u64;
        let recommended: Vec<String> = question
            .options
            .iter()
            .filter(|option| option.recommended && !option.is_final())
            .map(|option| option.label.clone())
            .collect();
        if recommended.is_empty() {
            format!("⏱ {left}s left · then it times out")
        } else {
            format!("⏱ {left}s left · then: {}", recommended.join(", "))
        }
    })
}

/// One row per option, then the own-answer row when the question takes free text.
fn option_rows(form: &FormView) -> Vec<AskRow> {
    let multi = form.question.allow_multiple;
    let mut rows: Vec<AskRow> = form
        .question
        .options
        .iter()
        .enumerate()
        .map(|(index, option)| AskRow {
            label: option.label.clone(),
            description: option.description.clone(),
            tick: multi.then(|| form.ticked[index]),
            note: form.notes[index].clone(),
            mark: match option.action {
                OptionAction::Select => RowMark::None,
                OptionAction::Input => RowMark::TakesText,
                OptionAction::EndTurn => RowMark::EndsTurn,
                OptionAction::NewSession => RowMark::NewTask,
            },
            recommended: option.recommended && !option.is_final(),
        })
        .collect();
    if form.question.allow_freeform {
        let last = rows.len();
        rows.push(AskRow {
            tick: multi.then(|| form.ticked[last]),
            note: form.notes[last].clone(),
            mark: RowMark::TakesText,
            ..plain_row(OWN_ANSWER)
        });
    }
    rows
}

fn plain_row(label: &str) -> AskRow {
    AskRow {
        label: label.to_owned(),
        description: None,
        tick: None,
        note: None,
        mark: RowMark::None,
        recommended: false,
    }
}

impl View for AskView {
    fn title(&self) -> &str {
        "the agent's question"
    }

    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        if let Some(model) = self.model(Instant::now()) {
            render(&model, theme, area, buf);
        }
    }

    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction {
        let input = if self.editing() {
            match self.input_keys.action(key) {
                Some(InputAction::Confirm) => Input::Submit,
                Some(InputAction::Back) => Input::Cancel,
                Some(InputAction::Edit(action)) => Input::Edit(action),
                None => match key.code {
                    KeyCode::Char(ch) if (key.modifiers - KeyModifiers::SHIFT).is_empty() => {
                        Input::Type(ch)
                    }
                    _ => return ViewAction::Unhandled,
                },
            }
        } else {
            match self.list_keys().action(key) {
                Some(AskAction::Up) => Input::Up,
                Some(AskAction::Down) => Input::Down,
                Some(AskAction::Toggle) => Input::Toggle,
                Some(AskAction::Submit) => Input::Submit,
                Some(AskAction::Note) => Input::Note,
                Some(AskAction::Cancel) => Input::Cancel,
                Some(AskAction::Pick(n)) => Input::Pick(usize::from(n)),
                None => match key.code {
                    KeyCode::Char(ch)
                        if self.typing_answers() && Key::from_event(key).types_text() =>
                    {
                        Input::Type(ch)
                    }
                    _ => return ViewAction::Unhandled,
                },
            }
        };
        self.step(input)
    }

    fn handle_paste(&mut self, text: &str) -> bool {
        matches!(
            self.step(Input::Paste(text.to_owned())),
            ViewAction::Consumed
        )
    }

    fn cursor(&self, area: Rect) -> Option<Position> {
        let model = self.model(Instant::now())?;
        cursor_position(&model, &Theme::plain(), area)
    }

    fn refresh(&mut self, _context: &RefreshContext<'_>) {
        self.live = true;
        self.load();
    }

    fn tick_every(&self) -> Option<Duration> {
        self.current
            .as_ref()
            .and_then(|current| current.shown.deadline)
            .map(|_| COUNTDOWN_TICK)
    }

    fn close_hint(&self) -> String {
        self.keys.close_key(AskAction::Cancel)
    }

    fn key_table(&self) -> Option<&'static KeyTableSpec> {
        Some(if self.editing() {
            &ASK_INPUT_KEYS
        } else {
            &ASK_KEYS
        })
    }

    fn finished(&self) -> bool {
        self.current.is_none()
    }
}

impl Drop for AskView {
    fn drop(&mut self) {
        if self.live {
            self.queue
                .view_closed(self.current.as_ref().map(|current| current.shown.id));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::{Arc, Mutex};

    use serde_json::json;
    use tokio::sync::oneshot::error::TryRecvError;

    use super::*;
    use crate::askuser::config::AskUserConfig;
    use crate::askuser::params::parse;
    use crate::askuser::queue::{Opener, Pending};
    use crate::askuser::response::Answer;
    use crate::bridge::AgentId;
    use crate::capability::Changed;
    use crate::config::keymap::keymap_from_sources;
    use crate::views::{KeyOutcome, ViewStack};

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ctrl(ch: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(ch), KeyModifiers::CONTROL)
    }

    /// A queue whose modal opens on a stack the test holds (as the app's does).
    struct Screen {
        queue: AskQueue,
        stack: Arc<Mutex<ViewStack>>,
    }

    fn screen(keymap: Keymap) -> Screen {
        let stack = Arc::new(Mutex::new(ViewStack::default()));
        let opened = Arc::clone(&stack);
        let keymap = Arc::new(keymap);
        let opener: Opener = Arc::new(move |queue: AskQueue| {
            let mut view = AskView::new(queue, &keymap);
            view.refresh(&RefreshContext {
                pi: &unipi_widgets::footer::FooterData::default(),
            });
            opened.lock().unwrap().push(Box::new(view));
            true
        });
        Screen {
            queue: AskQueue::new(Changed::default(), opener),
            stack,
        }
    }

    impl Screen {
        fn ask(&self, args: serde_json::Value) -> Pending {
            let request = parse(&args, &AskUserConfig::default(), true).unwrap();
            self.queue.push(AgentId::main(), request)
        }

        fn press(&self, key: KeyEvent) -> KeyOutcome {
            // The stack is released before a closing view reopens the next one.
            let mut stack = std::mem::take(&mut *self.stack.lock().unwrap());
            let outcome = stack.handle_key(&key);
            let mut shared = self.stack.lock().unwrap();
            let reopened = std::mem::replace(&mut *shared, stack);
            drop(shared);
            for title in reopened.titles() {
                assert_eq!(title, "the agent's question");
            }
            if !reopened.is_empty() {
                *self.stack.lock().unwrap() = reopened;
            }
            outcome
        }

        fn typed(&self, text: &str) {
            for ch in text.chars() {
                self.press(key(KeyCode::Char(ch)));
            }
        }

        fn open(&self) -> usize {
            self.stack.lock().unwrap().len()
        }
    }

    fn answers(pending: &mut Pending) -> Vec<Answer> {
        pending.answers.try_recv().expect("the call is settled")
    }

    #[test]
    fn keys_answer_one_question_after_another_then_the_modal_closes() {
        let screen = screen(Keymap::defaults());
        // No free text: the letter and digit shortcuts are in force.
        let mut call = screen.ask(json!({"questions": [
            {"question": "Colour?", "allowFreeform": false,
             "options": [{"label": "Red"}, {"label": "Blue"}]},
            {"question": "Sizes?", "allowMultiple": true, "allowFreeform": false,
             "options": [{"label": "S"}, {"label": "M"}, {"label": "L", "allowCustom": true}]},
        ]}));
        assert_eq!(screen.open(), 1, "the modal opened");
        // j moves, Enter chooses; the second question follows in the same modal.
        screen.press(key(KeyCode::Char('j')));
        assert_eq!(screen.press(key(KeyCode::Enter)), KeyOutcome::Used(None));
        assert_eq!(call.answers.try_recv(), Err(TryRecvError::Empty));
        // Multi-select: Enter with nothing ticked sends nothing; Space and numbers tick.
        screen.press(key(KeyCode::Enter));
        assert_eq!(call.answers.try_recv(), Err(TryRecvError::Empty));
        screen.press(key(KeyCode::Char(' ')));
        screen.press(key(KeyCode::Char('3')));
        screen.typed("with pockets");
        screen.press(key(KeyCode::Enter)); // keeps the note and ticks L
        assert_eq!(screen.press(key(KeyCode::Enter)), KeyOutcome::Used(None));
        assert_eq!(
            answers(&mut call),
            vec![
                Answer::chosen(&["Blue"], &[], None),
                Answer::chosen(&["S", "L"], &[("L", "with pockets")], None)
            ]
        );
        assert_eq!(screen.open(), 0, "nothing waits: the modal closed");
    }

    #[test]
    fn unused_keys_are_named_and_esc_cancels() {
        let screen = screen(Keymap::defaults());
        let mut call = screen
            .ask(json!({"question": "Go?", "allowFreeform": false, "options": [{"label": "Yes"}]}));
        assert_eq!(
            screen.press(key(KeyCode::Char('x'))),
            KeyOutcome::Unhandled {
                view: "the agent's question".into(),
                close: "Esc".into()
            }
        );
        assert_eq!(
            screen.press(key(KeyCode::Char(' '))),
            KeyOutcome::Unhandled {
                view: "the agent's question".into(),
                close: "Esc".into()
            },
            "Space ticks nothing in a single-select question"
        );
        screen.press(key(KeyCode::Esc));
        assert_eq!(answers(&mut call)[0].kind(), "cancelled");
        assert_eq!(screen.open(), 0);
    }

    #[test]
    fn typing_answers_in_a_question_that_takes_the_users_words() {
        let screen = screen(Keymap::defaults());
        let mut call = screen.ask(json!({"question": "Which command?", "options": [
            {"label": "unipi-tui kill"}, {"label": "unipi-tui ls"}, {"label": "Stop", "action": "end_turn"},
        ]}));
        // `u` and `n` (the note key of old), `j`, `k`, digits: all text, from the first key on.
        let typed = |text: &str| {
            for ch in text.chars() {
                let code = KeyCode::Char(ch);
                let shifted = ch.is_uppercase();
                let modifiers = if shifted {
                    KeyModifiers::SHIFT
                } else {
                    KeyModifiers::NONE
                };
                assert_eq!(
                    screen.press(KeyEvent::new(code, modifiers)),
                    KeyOutcome::Used(None),
                    "{ch:?}"
                );
            }
        };
        typed("unipi doctor 3 --jk N");
        screen.press(key(KeyCode::Enter));
        assert_eq!(
            answers(&mut call),
            vec![Answer::chosen(&[], &[], Some("unipi doctor 3 --jk N"))]
        );
        // Arrows, Enter, Tab (a note) and Esc keep their meaning.
        let mut call = screen.ask(json!({"question": "Which?", "options": [
            {"label": "A"}, {"label": "B"},
        ]}));
        screen.press(key(KeyCode::Down));
        screen.press(key(KeyCode::Tab));
        screen.typed("if cheap");
        screen.press(key(KeyCode::Enter)); // keeps the note
        screen.press(key(KeyCode::Enter)); // chooses B
        assert_eq!(
            answers(&mut call),
            vec![Answer::chosen(&["B"], &[("B", "if cheap")], None)]
        );
        // A modified key is no text: Alt+u is named, not typed.
        let _call = screen.ask(json!({"question": "Again?"}));
        assert!(matches!(
            screen.press(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::ALT)),
            KeyOutcome::Unhandled { .. }
        ));
    }

    #[test]
    fn the_editor_takes_text_editing_keys_and_paste() {
        let screen = screen(Keymap::defaults());
        let mut call = screen.ask(json!({"question": "Why?"}));
        screen.press(key(KeyCode::Enter)); // the own-answer row: opens the editor
        screen.typed("because reasons");
        screen.press(ctrl('w'));
        screen.press(key(KeyCode::Home));
        screen.typed("Just ");
        screen.press(key(KeyCode::End));
        {
            let mut stack = screen.stack.lock().unwrap();
            assert!(stack.handle_paste("it\nworks"));
        }
        // A control key the editor has no use for is named, not typed.
        assert!(matches!(
            screen.press(ctrl('g')),
            KeyOutcome::Unhandled { .. }
        ));
        screen.press(key(KeyCode::Enter));
        assert_eq!(
            answers(&mut call),
            vec![Answer::chosen(&[], &[], Some("Just because it\nworks"))]
        );
    }

    #[test]
    fn ctrl_c_closes_the_modal_and_cancels_only_the_shown_call() {
        let screen = screen(Keymap::defaults());
        let mut first = screen.ask(json!({"question": "One?"}));
        let mut second = screen.ask(json!({"question": "Two?", "options": [{"label": "A"}]}));
        screen.press(ctrl('c'));
        assert_eq!(
            answers(&mut first),
            vec![Answer::Cancelled {
                comment: "The question was closed without an answer".into()
            }]
        );
        assert_eq!(screen.open(), 1, "the next question opened a new modal");
        screen.press(key(KeyCode::Enter));
        assert_eq!(
            answers(&mut second),
            vec![Answer::chosen(&["A"], &[], None)]
        );
    }

    #[test]
    fn a_call_settled_elsewhere_leaves_the_screen_at_the_next_refresh() {
        let screen = screen(Keymap::defaults());
        let call = screen.ask(json!({"question": "One?"}));
        screen.queue.withdraw(
            call.id,
            Answer::Cancelled {
                comment: "Pi aborted the call".into(),
            },
        );
        let mut stack = screen.stack.lock().unwrap();
        stack.refresh(&RefreshContext {
            pi: &unipi_widgets::footer::FooterData::default(),
        });
        assert!(stack.is_empty());
    }

    #[test]
    fn the_model_shows_the_countdown_queue_and_hints_from_the_key_tables() {
        // `t` types in a question that takes the user's words: there `ctrl+t` is the hint.
        let user = "[ask]\nt = \"ask.toggle\"\n\"ctrl+t\" = \"ask.toggle\"\n\
                    \"ctrl+x\" = \"ask.cancel\"\n";
        let (keymap, errors) = keymap_from_sources(Some((Path::new("keymap.toml"), user)));
        assert!(errors.is_empty(), "{errors:?}");
        let screen = screen(keymap);
        let _first = screen.ask(json!({
            "question": "Sizes?", "allowMultiple": true, "timeout": 30000,
            "options": [{"label": "S", "recommended": true}, {"label": "M"}],
        }));
        let _second = screen.ask(json!({"question": "Later?"}));
        // A second view over the same queue, not shown: the model as the modal draws it.
        let view = AskView::new(
            screen.queue.clone(),
            &keymap_from_sources(Some((Path::new("k"), user))).0,
        );
        let deadline = view.current.as_ref().unwrap().shown.deadline.unwrap();
        let model = view
            .model(deadline - Duration::from_millis(24_200))
            .unwrap();
        assert_eq!(model.title, "Question from the agent · 1 more waiting");
        assert_eq!(model.countdown.as_deref(), Some("⏱ 25s left · then: S"));
        assert_eq!(
            model.rows.iter().map(|r| r.tick).collect::<Vec<_>>(),
            vec![Some(true), Some(false), Some(false)]
        );
        let hints: Vec<String> = model.keys.iter().map(|(k, w)| format!("{k} {w}")).collect();
        assert_eq!(
            hints,
            vec![
                "↑↓ move",
                "Ctrl+T tick",
                "Enter send",
                "type to answer",
                "Tab note",
                "Ctrl+X cancel"
            ],
            "the user's keys first, and no key that types"
        );
        assert_eq!(model.close, "Ctrl+X cancel");
        assert_eq!(view.tick_every(), Some(COUNTDOWN_TICK));
        // Without free text, the keys that type are shortcuts again, and their hints show.
        let screen = self::screen(keymap_from_sources(Some((Path::new("k"), user))).0);
        let _call = screen.ask(json!({
            "question": "Sizes?", "allowMultiple": true, "allowFreeform": false,
            "options": [{"label": "S"}, {"label": "M"}],
        }));
        let view = AskView::new(
            screen.queue.clone(),
            &keymap_from_sources(Some((Path::new("k"), user))).0,
        );
        let hints: Vec<String> = view
            .model(Instant::now())
            .unwrap()
            .keys
            .iter()
            .map(|(k, w)| format!("{k} {w}"))
            .collect();
        assert_eq!(
            hints,
            vec![
                "↑↓ move",
                "t tick",
                "Enter send",
                "1-9 pick",
                "Tab note",
                "Ctrl+X cancel"
            ]
        );
    }
}

//! Answering one question, as pure state: the cursor over the options (and the "type your own
//! answer" row when freeform is allowed), the ticks of a multi-select question, the notes the
//! user wrote on options, the open text editor, and the launcher a `new_session` option leads to
//! ("compact and run" / "run directly" / cancel). The view turns keys into [`Input`]s; the form
//! says whether that answered the question ([`Step::Done`]).
//!
//! The rules, chosen so no key does two things by surprise:
//! - Single-select: Enter (or a number) chooses the option under the cursor. An option taking text,
//!   or the own-answer row, opens the editor first; Enter in the editor then answers.
//! - Multi-select: Space (or a number) ticks and unticks; Enter sends what is ticked and never
//!   ticks. With nothing ticked, Enter says so instead of sending an empty answer (except on an
//!   option that ends the question, which it runs). Ticking an option that takes text opens the
//!   editor; an empty text leaves it unticked.
//! - A question that takes the user's own words takes them as soon as they type: a plain character
//!   (or a paste) starts — or goes on with — the own answer, whatever row the cursor is on, so no
//!   option or note shortcut can eat the first letters of an answer. The view sends only such keys
//!   as [`Input::Type`] ([`Form::typing_answers`] says when).
//! - The note key (Tab) writes a note on any option (shown under it, and sent with it).
//! - End-turn and new-session options act at once, in both modes.
//! - A recommended option starts under the cursor (ticked, in multi-select) and is what a timeout
//!   chooses.

use super::params::{OptionAction, Question};
use super::response::{Answer, Chosen, LAUNCH_CANCELLED, Launch};
use crate::views::line_edit::{EditAction, LineEdit};

/// What the user did, as the view decoded it from keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    Up,
    Down,
    Toggle,
    Submit,
    /// Number key `n` (1-based).
    Pick(usize),
    Note,
    Cancel,
    /// In the editor.
    Edit(EditAction),
    Type(char),
    Paste(String),
}

/// What an input did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// The form changed (or said why not); the question is still open.
    Stay,
    /// The key means nothing here (the app names it in the footer).
    Unhandled,
    Done(Answer),
}

/// The launcher's choices, in order.
pub(crate) const LAUNCH_CHOICES: [&str; 4] =
    ["New session", "Compact and run here", "Run here", "Cancel"];

#[derive(Clone, Debug, PartialEq, Eq)]
struct Editing {
    row: usize,
    edit: LineEdit,
    /// Confirming answers the question (single-select on an option taking text).
    answers: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Form {
    question: Question,
    cursor: usize,
    /// Per row (the own-answer row last): ticked.
    ticked: Vec<bool>,
    /// Per row: the note written on it (the own-answer row: the answer).
    notes: Vec<Option<String>>,
    editing: Option<Editing>,
    /// The launcher of a `new_session` option: its prefill and the launcher's cursor.
    launcher: Option<(String, usize)>,
    notice: Option<String>,
}

/// What the view draws: the rows and the state around them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FormView<'a> {
    pub question: &'a Question,
    pub cursor: usize,
    pub ticked: &'a [bool],
    pub notes: &'a [Option<String>],
    /// (row being edited, text, cursor in characters).
    pub editing: Option<(usize, &'a str, usize)>,
    pub launcher: Option<(&'a str, usize)>,
    pub notice: Option<&'a str>,
}

impl Form {
    pub fn new(question: Question) -> Self {
        let rows = question.options.len() + usize::from(question.allow_freeform);
        let recommended: Vec<bool> = question
            .options
            .iter()
            .map(|option| option.recommended && !option.is_final())
            .chain(std::iter::repeat(false))
            .take(rows)
            .collect();
        let cursor = recommended.iter().position(|r| *r).unwrap_or(0);
        let ticked = if question.allow_multiple {
            recommended
        } else {
            vec![false; rows]
        };
        Form {
            question,
            cursor,
            ticked,
            notes: vec![None; rows],
            editing: None,
            launcher: None,
            notice: None,
        }
    }

    /// The editor is open (keys are text).
    pub fn editing(&self) -> bool {
        self.editing.is_some()
    }

    /// Typed characters start (or go on with) the own answer: the question takes the user's
    /// own words and neither the editor nor the launcher is open.
    pub(crate) fn typing_answers(&self) -> bool {
        self.question.allow_freeform && self.editing.is_none() && self.launcher.is_none()
    }

    /// The launcher of a new-session option is showing.
    pub fn launching(&self) -> bool {
        self.launcher.is_some()
    }

    pub fn question(&self) -> &Question {
        &self.question
    }

    pub(crate) fn view(&self) -> FormView<'_> {
        FormView {
            question: &self.question,
            cursor: self.cursor,
            ticked: &self.ticked,
            notes: &self.notes,
            editing: self
                .editing
                .as_ref()
                .map(|e| (e.row, e.edit.text(), e.edit.cursor())),
            launcher: self
                .launcher
                .as_ref()
                .map(|(prefill, cursor)| (prefill.as_str(), *cursor)),
            notice: self.notice.as_deref(),
        }
    }

    /// What a timeout answers: the recommended options, else `timed_out`.
    pub(crate) fn timeout_answer(question: &Question, after_ms: u128) -> Answer {
        let recommended = question.recommended();
        if recommended.is_empty() {
            Answer::TimedOut {
                comment: format!("Timed out after {after_ms}ms"),
            }
        } else {
            Answer::Chosen(Chosen {
                selections: recommended,
                comment: Some(format!(
                    "Timed out after {after_ms}ms; the recommended option was taken"
                )),
                ..Chosen::default()
            })
        }
    }

    fn rows(&self) -> usize {
        self.ticked.len()
    }

    fn is_own_answer_row(&self, row: usize) -> bool {
        row == self.question.options.len()
    }

    pub fn handle(&mut self, input: Input) -> Step {
        self.notice = None;
        if self.launcher.is_some() {
            return self.handle_launcher(input);
        }
        if self.editing.is_some() {
            return self.handle_editor(input);
        }
        let multi = self.question.allow_multiple;
        match input {
            Input::Up => self.cursor = self.cursor.saturating_sub(1),
            Input::Down => self.cursor = (self.cursor + 1).min(self.rows().saturating_sub(1)),
            Input::Pick(n) if n == 0 || n > self.rows() => {
                self.notice = Some(format!("There is no option {n}."));
            }
            Input::Pick(n) => {
                self.cursor = n - 1;
                return if multi { self.toggle() } else { self.choose() };
            }
            Input::Toggle if multi => return self.toggle(),
            Input::Submit if multi => return self.send_ticked(),
            Input::Submit => return self.choose(),
            Input::Note => return self.note(),
            Input::Cancel => {
                return Step::Done(Answer::Cancelled {
                    comment: "Cancelled by the user".to_owned(),
                });
            }
            Input::Paste(text) if self.question.allow_freeform => self.own_answer_with(&text),
            Input::Type(ch) if self.question.allow_freeform => {
                self.own_answer_with(ch.encode_utf8(&mut [0; 4]));
            }
            Input::Toggle | Input::Edit(_) | Input::Type(_) | Input::Paste(_) => {
                return Step::Unhandled;
            }
        }
        Step::Stay
    }

    /// Typing or pasting outside the editor: the own answer opens (with what it had) and takes
    /// `text`; in a single-select question, Enter then answers with it.
    fn own_answer_with(&mut self, text: &str) {
        let row = self.question.options.len();
        self.cursor = row;
        let mut edit = LineEdit::new(self.notes[row].clone().unwrap_or_default());
        edit.insert_str(text);
        self.editing = Some(Editing {
            row,
            edit,
            answers: !self.question.allow_multiple,
        });
    }

    /// Single-select: the option under the cursor answers (after its text, if it takes some).
    fn choose(&mut self) -> Step {
        let row = self.cursor;
        if let Some(step) = self.final_option(row) {
            return step;
        }
        let note = self.notes[row].clone();
        if self.is_own_answer_row(row) {
            return match note {
                Some(text) => Step::Done(own_answer(text)),
                None => self.open_editor(row, true),
            };
        }
        let option = &self.question.options[row];
        match (option.takes_text(), note) {
            (true, None) => self.open_editor(row, true),
            (_, note) => Step::Done(Answer::Chosen(Chosen {
                selections: vec![option.value.clone()],
                notes: note
                    .map(|n| (option.value.clone(), n))
                    .into_iter()
                    .collect(),
                ..Chosen::default()
            })),
        }
    }

    /// Multi-select: tick or untick the row under the cursor.
    fn toggle(&mut self) -> Step {
        let row = self.cursor;
        if let Some(step) = self.final_option(row) {
            return step;
        }
        let takes_text = self.is_own_answer_row(row) || self.question.options[row].takes_text();
        if !self.ticked[row] && takes_text && self.notes[row].is_none() {
            return self.open_editor(row, false);
        }
        self.ticked[row] = !self.ticked[row];
        Step::Stay
    }

    /// Multi-select: send what is ticked; never an empty answer.
    fn send_ticked(&mut self) -> Step {
        if !self.ticked.iter().any(|t| *t) {
            if let Some(step) = self.final_option(self.cursor) {
                return step;
            }
            self.notice = Some(
                "Nothing ticked yet: Space ticks an option, Enter sends the ticked ones.".into(),
            );
            return Step::Stay;
        }
        let mut selections = Vec::new();
        let mut notes = Vec::new();
        let mut text = None;
        for row in (0..self.rows()).filter(|row| self.ticked[*row]) {
            if self.is_own_answer_row(row) {
                text = self.notes[row].clone();
                continue;
            }
            let value = self.question.options[row].value.clone();
            if let Some(note) = &self.notes[row] {
                notes.push((value.clone(), note.clone()));
            }
            selections.push(value);
        }
        Step::Done(Answer::Chosen(Chosen {
            selections,
            notes,
            text,
            comment: None,
        }))
    }

    /// The note key: write (or change) the note on the row under the cursor.
    fn note(&mut self) -> Step {
        let row = self.cursor;
        if !self.is_own_answer_row(row) && self.question.options[row].is_final() {
            self.notice = Some("This option takes no note.".to_owned());
            return Step::Stay;
        }
        self.open_editor(row, false)
    }

    /// An end-turn or new-session option under `row` acts at once.
    fn final_option(&mut self, row: usize) -> Option<Step> {
        let option = self.question.options.get(row)?;
        match option.action {
            OptionAction::EndTurn => Some(Step::Done(Answer::EndTurn)),
            OptionAction::NewSession => {
                self.launcher = Some((option.prefill.clone().unwrap_or_default(), 0));
                Some(Step::Stay)
            }
            OptionAction::Select | OptionAction::Input => None,
        }
    }

    fn open_editor(&mut self, row: usize, answers: bool) -> Step {
        self.editing = Some(Editing {
            row,
            edit: LineEdit::new(self.notes[row].clone().unwrap_or_default()),
            answers,
        });
        Step::Stay
    }

    fn handle_editor(&mut self, input: Input) -> Step {
        let Some(editing) = self.editing.as_mut() else {
            return Step::Unhandled;
        };
        match input {
            Input::Edit(action) => editing.edit.apply(action),
            Input::Type(ch) => editing.edit.insert_char(ch),
            Input::Paste(text) => editing.edit.insert_str(&text),
            Input::Cancel => self.editing = None,
            Input::Submit => return self.confirm_editor(),
            _ => return Step::Unhandled,
        }
        Step::Stay
    }

    /// Enter in the editor: an empty text cancels it (unticking a row that has no text); a text
    /// becomes the row's note, ticks it, and answers when the editor was opened to answer.
    fn confirm_editor(&mut self) -> Step {
        let Some(editing) = self.editing.take() else {
            return Step::Stay;
        };
        let row = editing.row;
        let text = editing.edit.text().trim().to_owned();
        if text.is_empty() {
            self.notes[row] = None;
            self.ticked[row] = false;
            return Step::Stay;
        }
        self.notes[row] = Some(text.clone());
        if self.question.allow_multiple {
            self.ticked[row] = true;
        }
        if !editing.answers {
            return Step::Stay;
        }
        if self.is_own_answer_row(row) {
            return Step::Done(own_answer(text));
        }
        let value = self.question.options[row].value.clone();
        Step::Done(Answer::Chosen(Chosen {
            selections: vec![value.clone()],
            notes: vec![(value, text)],
            ..Chosen::default()
        }))
    }

    fn handle_launcher(&mut self, input: Input) -> Step {
        let Some((prefill, cursor)) = self.launcher.as_mut() else {
            return Step::Unhandled;
        };
        let last = LAUNCH_CHOICES.len() - 1;
        let choice = match input {
            Input::Up => {
                *cursor = cursor.saturating_sub(1);
                return Step::Stay;
            }
            Input::Down => {
                *cursor = (*cursor + 1).min(last);
                return Step::Stay;
            }
            Input::Pick(n) if (1..=LAUNCH_CHOICES.len()).contains(&n) => n - 1,
            Input::Submit => *cursor,
            Input::Cancel => last,
            _ => return Step::Unhandled,
        };
        let prefill = prefill.clone();
        Step::Done(match choice {
            0 => Answer::NewSession {
                prefill,
                launch: Launch::NewSession,
            },
            1 => Answer::NewSession {
                prefill,
                launch: Launch::Compact,
            },
            2 => Answer::NewSession {
                prefill,
                launch: Launch::Direct,
            },
            _ => Answer::Cancelled {
                comment: LAUNCH_CANCELLED.to_owned(),
            },
        })
    }
}

fn own_answer(text: String) -> Answer {
    Answer::Chosen(Chosen {
        text: Some(text),
        ..Chosen::default()
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::askuser::config::AskUserConfig;
    use crate::askuser::params::parse;

    fn question(args: serde_json::Value) -> Question {
        parse(&args, &AskUserConfig::default(), true)
            .unwrap()
            .questions
            .remove(0)
    }

    fn three(multi: bool) -> Question {
        question(json!({
            "question": "Which?",
            "allowMultiple": multi,
            "options": [
                {"label": "A", "value": "a"},
                {"label": "B", "value": "b", "allowCustom": true},
                {"label": "Stop", "action": "end_turn"},
            ],
        }))
    }

    fn run(form: &mut Form, inputs: Vec<Input>) -> Vec<Step> {
        inputs.into_iter().map(|input| form.handle(input)).collect()
    }

    fn chosen(selections: &[&str], notes: &[(&str, &str)], text: Option<&str>) -> Step {
        Step::Done(Answer::chosen(selections, notes, text))
    }

    fn typed(text: &str) -> Vec<Input> {
        text.chars().map(Input::Type).collect()
    }

    #[test]
    fn single_select_enter_and_numbers_choose() {
        let mut form = Form::new(three(false));
        assert_eq!(form.handle(Input::Submit), chosen(&["a"], &[], None));
        let mut form = Form::new(three(false));
        assert_eq!(form.handle(Input::Pick(3)), Step::Done(Answer::EndTurn));
        let mut form = Form::new(three(false));
        assert_eq!(form.handle(Input::Pick(9)), Step::Stay);
        assert_eq!(form.view().notice, Some("There is no option 9."));
        assert_eq!(
            form.handle(Input::Toggle),
            Step::Unhandled,
            "nothing to tick"
        );
        assert_eq!(
            form.handle(Input::Cancel),
            Step::Done(Answer::Cancelled {
                comment: "Cancelled by the user".into()
            })
        );
    }

    #[test]
    fn single_select_text_options_and_the_own_answer_ask_for_text_first() {
        let mut form = Form::new(three(false));
        let mut inputs = vec![Input::Down, Input::Submit];
        inputs.extend(typed("only if cheap"));
        inputs.push(Input::Submit);
        let steps = run(&mut form, inputs);
        assert_eq!(
            steps.last(),
            Some(&chosen(&["b"], &[("b", "only if cheap")], None))
        );

        let mut form = Form::new(three(false));
        let mut inputs = vec![Input::Pick(4)];
        assert!(form.clone().handle(Input::Pick(4)) == Step::Stay);
        inputs.extend(typed("something else"));
        inputs.push(Input::Edit(EditAction::DeleteWordBack));
        inputs.extend(typed("entirely"));
        inputs.push(Input::Submit);
        let steps = run(&mut form, inputs);
        assert_eq!(
            steps.last(),
            Some(&chosen(&[], &[], Some("something entirely")))
        );

        // An empty text cancels the editor; Esc in the editor closes it, not the question.
        let mut form = Form::new(three(false));
        let steps = run(&mut form, vec![Input::Pick(4), Input::Submit]);
        assert_eq!(steps, vec![Step::Stay, Step::Stay]);
        assert!(!form.editing());
        let steps = run(&mut form, vec![Input::Pick(4), Input::Cancel]);
        assert_eq!(steps, vec![Step::Stay, Step::Stay]);
        assert!(!form.editing());
        // Keys the editor has no use for are named, not swallowed.
        form.handle(Input::Pick(4));
        assert_eq!(form.handle(Input::Toggle), Step::Unhandled);
    }

    #[test]
    fn multi_select_space_ticks_enter_sends_and_never_both() {
        let mut form = Form::new(three(true));
        // Enter with nothing ticked sends nothing.
        assert_eq!(form.handle(Input::Submit), Step::Stay);
        assert_eq!(
            form.view().notice,
            Some("Nothing ticked yet: Space ticks an option, Enter sends the ticked ones.")
        );
        assert_eq!(form.view().ticked, &[false, false, false, false]);
        // Space ticks A; Space on B (takes text) opens the editor; its note ticks it.
        let mut inputs = vec![Input::Toggle, Input::Down, Input::Toggle];
        inputs.extend(typed("blue"));
        inputs.push(Input::Submit);
        run(&mut form, inputs);
        assert_eq!(form.view().ticked, &[true, true, false, false]);
        // A number ticks too; unticking keeps the note for later.
        run(&mut form, vec![Input::Pick(2), Input::Pick(2)]);
        assert_eq!(form.view().ticked, &[true, true, false, false]);
        assert_eq!(form.view().notes[1].as_deref(), Some("blue"));
        // The own answer, then Enter sends everything ticked.
        let mut inputs = vec![Input::Pick(4)];
        inputs.extend(typed("and green"));
        inputs.push(Input::Submit);
        run(&mut form, inputs);
        assert_eq!(
            form.handle(Input::Submit),
            chosen(&["a", "b"], &[("b", "blue")], Some("and green"))
        );
        // With nothing ticked, Enter on an option that ends the question runs it.
        let mut form = Form::new(three(true));
        run(&mut form, vec![Input::Down, Input::Down]);
        assert_eq!(form.handle(Input::Submit), Step::Done(Answer::EndTurn));
    }

    #[test]
    fn notes_attach_to_any_option() {
        let mut form = Form::new(three(false));
        let mut inputs = vec![Input::Note];
        inputs.extend(typed("first choice"));
        inputs.push(Input::Submit);
        let steps = run(&mut form, inputs);
        assert_eq!(steps.last(), Some(&Step::Stay), "a note does not answer");
        assert_eq!(
            form.handle(Input::Submit),
            chosen(&["a"], &[("a", "first choice")], None)
        );
        let mut form = Form::new(three(false));
        run(&mut form, vec![Input::Down, Input::Down, Input::Note]);
        assert_eq!(form.view().notice, Some("This option takes no note."));
    }

    #[test]
    fn recommended_options_start_chosen_and_answer_a_timeout() {
        let q = question(json!({
            "question": "Which?", "allowMultiple": true,
            "options": [{"label": "A"}, {"label": "B", "recommended": true}],
        }));
        let form = Form::new(q.clone());
        assert_eq!(form.view().cursor, 1);
        assert_eq!(form.view().ticked, &[false, true, false]);
        assert_eq!(
            Form::timeout_answer(&q, 500),
            Answer::Chosen(Chosen {
                selections: vec!["B".into()],
                notes: vec![],
                text: None,
                comment: Some("Timed out after 500ms; the recommended option was taken".into()),
            })
        );
        assert_eq!(
            Form::timeout_answer(&three(false), 500),
            Answer::TimedOut {
                comment: "Timed out after 500ms".into()
            }
        );
    }

    #[test]
    fn a_new_session_option_leads_to_the_launcher() {
        let q = question(json!({
            "question": "Next?",
            "options": [{"label": "Docs", "action": "new_session", "prefill": "write the docs"}],
        }));
        let cases = [
            (vec![Input::Submit, Input::Submit], Launch::NewSession),
            (
                vec![Input::Submit, Input::Down, Input::Submit],
                Launch::Compact,
            ),
            (
                vec![Input::Submit, Input::Down, Input::Down, Input::Submit],
                Launch::Direct,
            ),
            (vec![Input::Pick(1), Input::Pick(3)], Launch::Direct),
        ];
        for (inputs, launch) in cases {
            let mut form = Form::new(q.clone());
            let steps = run(&mut form, inputs.clone());
            assert_eq!(
                steps.last(),
                Some(&Step::Done(Answer::NewSession {
                    prefill: "write the docs".into(),
                    launch
                })),
                "{inputs:?}"
            );
        }
        for inputs in [
            vec![Input::Submit, Input::Cancel],
            vec![Input::Submit, Input::Pick(4)],
        ] {
            let mut form = Form::new(q.clone());
            assert!(form.clone().handle(Input::Submit) == Step::Stay);
            let steps = run(&mut form, inputs);
            assert_eq!(
                steps.last(),
                Some(&Step::Done(Answer::Cancelled {
                    comment: LAUNCH_CANCELLED.into()
                }))
            );
        }
        let mut form = Form::new(q);
        form.handle(Input::Submit);
        assert!(form.launching());
        assert_eq!(form.handle(Input::Toggle), Step::Unhandled);
    }

    #[test]
    fn typing_starts_the_own_answer_wherever_the_cursor_is() {
        // The cursor on option 1: the first letter opens the own answer, the rest follow it.
        let mut form = Form::new(three(false));
        assert!(form.typing_answers());
        let steps = run(&mut form, typed("unipi doctor"));
        assert!(steps.iter().all(|step| *step == Step::Stay), "{steps:?}");
        assert_eq!(form.view().editing, Some((3, "unipi doctor", 12)));
        assert!(!form.typing_answers(), "the editor has the keys now");
        assert_eq!(
            form.handle(Input::Submit),
            chosen(&[], &[], Some("unipi doctor"))
        );
        // Multi-select: the typed answer is ticked beside the options, and Enter sends both.
        let mut form = Form::new(three(true));
        let mut inputs = vec![Input::Toggle];
        inputs.extend(typed("2 more"));
        inputs.push(Input::Submit);
        run(&mut form, inputs);
        assert_eq!(form.view().ticked, &[true, false, false, true]);
        assert_eq!(
            form.handle(Input::Submit),
            chosen(&["a"], &[], Some("2 more"))
        );
        // Typing again goes on with the answer written so far.
        let mut form = Form::new(three(true));
        let mut inputs = typed("red");
        inputs.push(Input::Submit);
        inputs.push(Input::Up);
        inputs.extend(typed(", blue"));
        run(&mut form, inputs);
        assert_eq!(form.view().editing, Some((3, "red, blue", 9)));
        // Without a free-text answer, a character means nothing; nor in the launcher.
        let mut form = Form::new(question(json!({
            "question": "q", "allowFreeform": false,
            "options": [{"label": "A"}]
        })));
        assert!(!form.typing_answers());
        assert_eq!(form.handle(Input::Type('u')), Step::Unhandled);
        let mut form = Form::new(question(json!({
            "question": "q",
            "options": [{"label": "Docs", "action": "new_session", "prefill": "write them"}]
        })));
        form.handle(Input::Submit);
        assert!(form.launching() && !form.typing_answers());
        assert_eq!(form.handle(Input::Type('u')), Step::Unhandled);
    }

    #[test]
    fn pasting_starts_the_own_answer() {
        let mut form = Form::new(three(false));
        assert_eq!(
            form.handle(Input::Paste("line 1\nline 2".into())),
            Step::Stay
        );
        assert!(form.editing());
        assert_eq!(
            form.handle(Input::Submit),
            chosen(&[], &[], Some("line 1\nline 2"))
        );
        let mut form = Form::new(question(json!({
            "question": "q", "allowFreeform": false, "options": [{"label": "A"}]
        })));
        assert_eq!(form.handle(Input::Paste("x".into())), Step::Unhandled);
    }
}

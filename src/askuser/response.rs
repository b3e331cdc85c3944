//! What the user answered, and how the model reads it: the original's response kinds
//! (`selection`, `freeform`, `combined`, `end_turn`, `new_session`, `timed_out`, `cancelled`) with
//! its sentences (`User selected: a, b`, `User wrote: …`), and the structured `details`
//! (`{question, options, response: {kind, selections?, text?, prefill?, comment?}}`, one entry
//! per question when a call carried several). A display card goes with it for Pi's transcript.

use serde_json::{Value, json};

use super::params::{AskRequest, Question};
use crate::bridge::{Card, CardTint, ToolOutput};

/// How a `new_session` option goes ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launch {
    /// Pi's own new session (the seed's hand-off), with the prefill as its first message.
    NewSession,
    /// Compact the session first, then send the prefill here.
    Compact,
    /// Send the prefill here as it is.
    Direct,
}

impl Launch {
    fn word(self) -> &'static str {
        match self {
            Launch::NewSession => "new session",
            Launch::Compact => "compacted",
            Launch::Direct => "running",
        }
    }

    /// `launchedWith` in the structured response.
    fn wire(self) -> &'static str {
        match self {
            Launch::NewSession => "new_session",
            Launch::Compact => "compact",
            Launch::Direct => "direct",
        }
    }
}

/// The answer to one question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    Chosen(Chosen),
    EndTurn,
    NewSession { prefill: String, launch: Launch },
    TimedOut { comment: String },
    Cancelled { comment: String },
}

/// Options picked; `notes` are (value, text) for options the user wrote on; `text` is the user's
/// own answer; `comment` says why when the workbench chose (a timeout).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chosen {
    pub selections: Vec<String>,
    pub notes: Vec<(String, String)>,
    pub text: Option<String>,
    pub comment: Option<String>,
}

impl Chosen {
    fn kind(&self) -> &'static str {
        let wrote = self.text.is_some() || !self.notes.is_empty();
        match (self.selections.is_empty(), wrote) {
            (true, true) => "freeform",
            (false, true) => "combined",
            _ => "selection",
        }
    }

    /// The sentence the model reads.
    fn text(&self) -> String {
        let mut written: Vec<String> = self
            .notes
            .iter()
            .map(|(value, note)| format!("{value}: {note}"))
            .collect();
        written.extend(self.text.iter().cloned());
        let written = written.join("\n");
        let selected = self.selections.join(", ");
        let sentence = match (self.selections.is_empty(), written.is_empty()) {
            (true, false) => format!("User wrote: {written}"),
            (false, false) => format!("User selected: {selected} and wrote: {written}"),
            _ => format!("User selected: {selected}"),
        };
        match &self.comment {
            Some(comment) => format!("{comment}. {sentence}"),
            None => sentence,
        }
    }

    /// Its fields of the structured response.
    fn details(&self, response: &mut Value) {
        if !self.selections.is_empty() {
            response["selections"] = json!(self.selections);
        }
        if let Some(text) = &self.text {
            response["text"] = json!(text);
        }
        if !self.notes.is_empty() {
            response["notes"] = self
                .notes
                .iter()
                .map(|(value, note)| json!({"value": value, "note": note}))
                .collect();
        }
        if let Some(comment) = &self.comment {
            response["comment"] = json!(comment);
        }
    }

    /// Each chosen option with the note written on it, then the user's own words.
    fn brief(&self) -> String {
        let noted = |value: &String| self.notes.iter().find(|(v, _)| v == value);
        let mut items: Vec<String> = self
            .selections
            .iter()
            .map(|value| match noted(value) {
                Some((_, note)) => format!("{value} (“{}”)", one_line(note)),
                None => value.clone(),
            })
            .collect();
        // A note on an option not chosen (never made by the form) still shows.
        items.extend(
            self.notes
                .iter()
                .filter(|(value, _)| !self.selections.contains(value))
                .map(|(value, note)| format!("{value} (“{}”)", one_line(note))),
        );
        items.extend(self.text.iter().map(|text| format!("“{}”", one_line(text))));
        items.join(", ")
    }
}

impl Answer {
    /// The original's kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Answer::Chosen(chosen) => chosen.kind(),
            Answer::EndTurn => "end_turn",
            Answer::NewSession { .. } => "new_session",
            Answer::TimedOut { .. } => "timed_out",
            Answer::Cancelled { .. } => "cancelled",
        }
    }

    /// Ends the call: no further question is asked after it.
    pub(crate) fn ends_call(&self) -> bool {
        !matches!(self, Answer::Chosen(_))
    }

    /// The sentence the model reads.
    pub fn text(&self) -> String {
        match self {
            Answer::Chosen(chosen) => chosen.text(),
            Answer::EndTurn => "User chose to end the turn.".to_owned(),
            Answer::NewSession { prefill, launch } => {
                let then = match launch {
                    Launch::NewSession => "starts a new session with this as its first message",
                    Launch::Compact => {
                        "compacts the session and then sends this as the user's next message"
                    }
                    Launch::Direct => "sends this as the user's next message",
                };
                format!(
                    "User chose to proceed ({}): {prefill}\nThe workbench {then} once your turn \
                     ends; end your turn now without further tool calls.",
                    launch.word()
                )
            }
            Answer::TimedOut { .. } => "User did not respond (timed out)".to_owned(),
            Answer::Cancelled { comment } if comment == LAUNCH_CANCELLED => {
                "User cancelled the session launch".to_owned()
            }
            Answer::Cancelled { .. } => "User cancelled the selection".to_owned(),
        }
    }

    /// The structured response (`details.response`).
    pub fn details(&self) -> Value {
        let mut response = json!({"kind": self.kind()});
        match self {
            Answer::Chosen(chosen) => chosen.details(&mut response),
            Answer::NewSession { prefill, launch } => {
                response["prefill"] = json!(prefill);
                response["launchedWith"] = json!(launch.wire());
            }
            Answer::TimedOut { comment } | Answer::Cancelled { comment } => {
                response["comment"] = json!(comment);
            }
            Answer::EndTurn => {}
        }
        response
    }

    /// The answer in a few words for Pi's transcript (the original's `renderResult`), and
    /// whether it went through: each chosen option with the note written on it in quotes
    /// (`postgres (“only if cheap”)`), the user's own words in quotes, `end turn`, `compacted →
    /// the new task`, `Timed out`, `Cancelled`.
    fn brief(&self) -> (String, CardTint) {
        match self {
            Answer::Chosen(chosen) => (chosen.brief(), CardTint::Success),
            Answer::EndTurn => ("end turn".to_owned(), CardTint::Success),
            Answer::NewSession { prefill, launch } => (
                format!("{} → {}", launch.word(), one_line(prefill)),
                CardTint::Success,
            ),
            Answer::TimedOut { .. } => ("Timed out".to_owned(), CardTint::Warning),
            Answer::Cancelled { .. } => ("Cancelled".to_owned(), CardTint::Warning),
        }
    }
}

/// Text on one card line: line breaks shown as `↵`.
fn one_line(text: &str) -> String {
    text.trim().replace('\n', " ↵ ")
}

/// The longest a question gets on a card line, so the line fits a narrow transcript unwrapped.
const CARD_QUESTION_CHARS: usize = 40;

/// The transcript's card: one question's answer as its title (`✓ postgres (“only if cheap”)`);
/// several questions under a title that counts them, one line each (`Which index? — sqlite`), so
/// every answer sits at the same indent.
fn card(request: &AskRequest, answers: &[Answer]) -> Option<Card> {
    let (first, _) = answers.first()?.brief();
    let warned = answers
        .iter()
        .rev()
        .map(Answer::brief)
        .find(|(_, tint)| *tint == CardTint::Warning);
    if request.questions.len() == 1 {
        return Some(match warned {
            Some((line, tint)) => Card::new(line, tint),
            None => Card::new(format!("✓ {first}"), CardTint::Success),
        });
    }
    let total = request.questions.len();
    let answered = answers
        .iter()
        .filter(|answer| answer.brief().1 == CardTint::Success)
        .count();
    let mut card = match warned {
        Some((word, tint)) => Card::new(format!("{word} · {answered} of {total} answered"), tint),
        None if answered == total => Card::new(format!("✓ {total} answers"), CardTint::Success),
        None => Card::new(
            format!("✓ {answered} of {total} answered"),
            CardTint::Success,
        ),
    };
    for (index, question) in request.questions.iter().enumerate() {
        let answer = answers
            .get(index)
            .map_or_else(|| "not asked".to_owned(), |answer| answer.brief().0);
        let question = unipi_widgets::text::truncate_end(&question.question, CARD_QUESTION_CHARS);
        card.lines.push(format!("{question} — {answer}"));
    }
    Some(card)
}

/// The comment of a cancelled session launch.
pub(crate) const LAUNCH_CANCELLED: &str = "Session launcher cancelled";

/// A failed validation: the text, and `details.response = {kind: cancelled, comment}` (not an
/// error result, as in the original).
pub fn refusal(message: &str) -> ToolOutput {
    ToolOutput::text(message).with_details(json!({
        "response": {"kind": "cancelled", "comment": message}
    }))
}

/// The tool's result for `request` answered with `answers` (one per question asked; a call
/// ended early has fewer).
pub(crate) fn output(request: &AskRequest, answers: &[Answer]) -> ToolOutput {
    let single = request.questions.len() == 1;
    let one = |question: &Question, answer: &Answer| {
        json!({
            "question": question.question,
            "options": question.labels(),
            "response": answer.details(),
        })
    };
    let (text, details) = if single {
        let answer = answers.first().cloned().unwrap_or(Answer::Cancelled {
            comment: "No answer".to_owned(),
        });
        (answer.text(), one(&request.questions[0], &answer))
    } else {
        let mut lines = Vec::new();
        let mut entries = Vec::new();
        for (index, question) in request.questions.iter().enumerate() {
            let line = match answers.get(index) {
                Some(answer) => {
                    entries.push(one(question, answer));
                    answer.text()
                }
                None => "Not asked (an earlier answer ended the questions)".to_owned(),
            };
            lines.push(format!("Q{}: {}\n{line}", index + 1, question.question));
        }
        (lines.join("\n\n"), json!({ "questions": entries }))
    };
    let output = ToolOutput::text(text).with_details(details);
    match card(request, answers) {
        Some(card) => output.with_card(&card),
        None => output,
    }
}

#[cfg(test)]
impl Answer {
    /// The options `selections` picked, with `notes` as (value, note) and the user's own `text`,
    /// as the user gave them (no comment): the answer tests expect.
    pub fn chosen(selections: &[&str], notes: &[(&str, &str)], text: Option<&str>) -> Answer {
        Answer::Chosen(Chosen {
            selections: selections.iter().map(|s| (*s).to_owned()).collect(),
            notes: notes
                .iter()
                .map(|(v, n)| ((*v).to_owned(), (*n).to_owned()))
                .collect(),
            text: text.map(str::to_owned),
            comment: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::askuser::params::{AskOption, OptionAction};

    #[test]
    fn every_kind_reads_as_the_original_says() {
        let cases = vec![
            (
                Answer::chosen(&["a"], &[], None),
                "selection",
                "User selected: a",
            ),
            (
                Answer::chosen(&["a", "b"], &[], None),
                "selection",
                "User selected: a, b",
            ),
            (
                Answer::chosen(&[], &[], Some("mine")),
                "freeform",
                "User wrote: mine",
            ),
            (
                Answer::chosen(&["a"], &[], Some("mine")),
                "combined",
                "User selected: a and wrote: mine",
            ),
            (
                Answer::chosen(&["a", "b"], &[("b", "only on Fridays")], None),
                "combined",
                "User selected: a, b and wrote: b: only on Fridays",
            ),
            (Answer::EndTurn, "end_turn", "User chose to end the turn."),
            (
                Answer::TimedOut {
                    comment: "Timed out after 500ms".into(),
                },
                "timed_out",
                "User did not respond (timed out)",
            ),
            (
                Answer::Cancelled {
                    comment: "Esc".into(),
                },
                "cancelled",
                "User cancelled the selection",
            ),
            (
                Answer::Cancelled {
                    comment: LAUNCH_CANCELLED.into(),
                },
                "cancelled",
                "User cancelled the session launch",
            ),
        ];
        for (answer, kind, text) in cases {
            assert_eq!(answer.kind(), kind, "{answer:?}");
            assert_eq!(answer.text(), text, "{answer:?}");
        }
        let launched = Answer::NewSession {
            prefill: "write the docs".into(),
            launch: Launch::Compact,
        };
        assert!(launched.text().starts_with(
            "User chose to proceed (compacted): write the docs\nThe workbench compacts"
        ));
        assert_eq!(
            launched.details(),
            json!({"kind": "new_session", "prefill": "write the docs", "launchedWith": "compact"})
        );
        let direct = Answer::NewSession {
            prefill: "x".into(),
            launch: Launch::Direct,
        };
        assert!(
            direct.text().contains("The workbench sends this"),
            "{}",
            direct.text()
        );
        let fresh = Answer::NewSession {
            prefill: "x".into(),
            launch: Launch::NewSession,
        };
        assert_eq!(
            fresh.text(),
            "User chose to proceed (new session): x\nThe workbench starts a new session with \
             this as its first message once your turn ends; end your turn now without further \
             tool calls."
        );
        assert_eq!(fresh.details()["launchedWith"], "new_session");
        assert_eq!(fresh.brief().0, "new session → x");
    }

    fn question(text: &str) -> Question {
        Question {
            question: text.into(),
            context: None,
            options: vec![AskOption {
                label: "A".into(),
                description: None,
                value: "a".into(),
                action: OptionAction::Select,
                prefill: None,
                recommended: false,
            }],
            allow_multiple: false,
            allow_freeform: true,
        }
    }

    #[test]
    fn one_question_keeps_the_original_details_and_several_list_each() {
        let request = AskRequest {
            questions: vec![question("Which?")],
            timeout: None,
        };
        let output = output(&request, &[Answer::chosen(&["a"], &[], Some("and more"))]);
        assert_eq!(
            output.content,
            vec![crate::bridge::ContentBlock::text(
                "User selected: a and wrote: and more"
            )]
        );
        assert_eq!(output.details["question"], "Which?");
        assert_eq!(output.details["options"], json!(["A"]));
        assert_eq!(
            output.details["response"],
            json!({"kind": "combined", "selections": ["a"], "text": "and more"})
        );
        assert_eq!(output.details["card"]["title"], "✓ a, “and more”");

        let request = AskRequest {
            questions: vec![question("One?"), question("Two?"), question("Three?")],
            timeout: None,
        };
        let answers = [Answer::chosen(&["a"], &[], None), Answer::EndTurn];
        let output = super::output(&request, &answers);
        let crate::bridge::ContentBlock::Text { text } = &output.content[0] else {
            panic!("text");
        };
        assert_eq!(
            text,
            "Q1: One?\nUser selected: a\n\nQ2: Two?\nUser chose to end the turn.\n\n\
             Q3: Three?\nNot asked (an earlier answer ended the questions)"
        );
        assert_eq!(output.details["questions"].as_array().unwrap().len(), 2);
        assert_eq!(output.details["card"]["title"], "✓ 2 of 3 answered");
        assert_eq!(
            output.details["card"]["lines"],
            json!(["One? — a", "Two? — end turn", "Three? — not asked"])
        );
    }

    /// A card as the bridge extension draws it in Pi's transcript: the title, then each line
    /// two spaces in.
    fn drawn(output: &ToolOutput) -> String {
        let card = &output.details["card"];
        let mut text = format!(
            "[{}] {}",
            card["tint"].as_str().unwrap(),
            card["title"].as_str().unwrap()
        );
        for line in card["lines"].as_array().into_iter().flatten() {
            text.push_str(&format!("\n  {}", line.as_str().unwrap()));
        }
        text
    }

    #[test]
    fn the_transcript_card_reads_as_a_sentence_at_one_indent() {
        let one = AskRequest {
            questions: vec![question("Which database?")],
            timeout: None,
        };
        let several = AskRequest {
            questions: vec![
                question("Which database should the session index use?"),
                question("Sizes?"),
                question("Deploy?"),
            ],
            timeout: None,
        };
        let cases: Vec<(&AskRequest, Vec<Answer>)> = vec![
            (&one, vec![Answer::chosen(&["Postgres"], &[], None)]),
            // The note belongs to the option it was written on.
            (
                &one,
                vec![Answer::chosen(
                    &["Postgres"],
                    &[("Postgres", "only if cheap")],
                    None,
                )],
            ),
            (&one, vec![Answer::chosen(&[], &[], Some("unipi doctor"))]),
            (
                &one,
                vec![Answer::chosen(
                    &["SQLite", "Postgres"],
                    &[("Postgres", "for the index")],
                    Some("and Redis\nfor the cache"),
                )],
            ),
            (
                &one,
                vec![Answer::NewSession {
                    prefill: "write the docs".into(),
                    launch: Launch::Compact,
                }],
            ),
            (
                &one,
                vec![Answer::Cancelled {
                    comment: "Esc".into(),
                }],
            ),
            (
                &several,
                vec![
                    Answer::chosen(&["Postgres"], &[("Postgres", "only if cheap")], None),
                    Answer::chosen(&["S", "L"], &[], Some("XL too")),
                    Answer::EndTurn,
                ],
            ),
            (
                &several,
                vec![
                    Answer::chosen(&["SQLite"], &[], None),
                    Answer::TimedOut {
                        comment: "Timed out after 500ms".into(),
                    },
                ],
            ),
        ];
        let drawn: Vec<String> = cases
            .into_iter()
            .map(|(request, answers)| drawn(&output(request, &answers)))
            .collect();
        crate::assert_ui_snapshot!("ask_user_transcript_cards", drawn.join("\n\n"));
    }

    #[test]
    fn a_refusal_is_a_cancelled_response_not_an_error() {
        let output = refusal("Error: nope");
        assert_eq!(
            output.details,
            json!({"response": {"kind": "cancelled", "comment": "Error: nope"}})
        );
    }
}

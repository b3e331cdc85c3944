//! The `ask_user` tool's arguments: their JSON Schema (what the model is offered), and parsing
//! plus validation into an [`AskRequest`] — one question or several (`questions`, answered one
//! after another), each with its options normalised (a value defaults to the label, an option
//! taking text is one with `allowCustom` or the `input` action).
//!
//! Validation follows the original's order and words, so a model that learnt them reads the same
//! errors: the tool is disabled → multi-select disallowed → single-select disallowed → freeform
//! disallowed → no screen → no options and no freeform. One deliberate change: `allowFreeform`
//! defaults to true, so the original rejected every call that did not pass `false` while freeform
//! was disallowed in settings; here an unstated `allowFreeform` follows the settings, and only an
//! explicit `true` is refused.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::config::AskUserConfig;
use crate::bridge::Refusal;

/// The longest a question may wait: the bridge's backstop on the call (a JavaScript timer holds
/// at most 2^31 ms, about 24 days; a week is plenty for a question).
pub(crate) const LONGEST_WAIT: Duration = Duration::from_secs(7 * 24 * 3600);

/// What choosing an option does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OptionAction {
    /// Picks it (ticks it, in a multi-select question).
    Select,
    /// Picks it with text the user types (a note on the option).
    Input,
    /// Ends the agent's turn.
    EndTurn,
    /// Starts a new task with the option's `prefill` (compacting first if the user says so).
    NewSession,
}

impl OptionAction {
    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "select" => OptionAction::Select,
            "input" => OptionAction::Input,
            "end_turn" => OptionAction::EndTurn,
            "new_session" => OptionAction::NewSession,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AskOption {
    pub label: String,
    pub description: Option<String>,
    /// What the model gets back (the label when not given).
    pub value: String,
    pub action: OptionAction,
    pub prefill: Option<String>,
    /// Preselected (the cursor starts on it; ticked in a multi-select question) and chosen when
    /// the question times out.
    pub recommended: bool,
}

impl AskOption {
    /// Choosing it asks for text (a note).
    pub(crate) fn takes_text(&self) -> bool {
        self.action == OptionAction::Input
    }

    /// Choosing it ends the question at once (it is not ticked).
    pub(crate) fn is_final(&self) -> bool {
        matches!(
            self.action,
            OptionAction::EndTurn | OptionAction::NewSession
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Question {
    pub question: String,
    pub context: Option<String>,
    pub(crate) options: Vec<AskOption>,
    pub allow_multiple: bool,
    pub allow_freeform: bool,
}

impl Question {
    /// The values of the recommended options.
    pub fn recommended(&self) -> Vec<String> {
        self.options
            .iter()
            .filter(|option| option.recommended && !option.is_final())
            .map(|option| option.value.clone())
            .collect()
    }

    pub fn labels(&self) -> Vec<String> {
        self.options.iter().map(|o| o.label.clone()).collect()
    }
}

/// One validated call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AskRequest {
    pub questions: Vec<Question>,
    /// How long the user has, from when the question is shown; `None` waits for them.
    pub timeout: Option<Duration>,
}

/// The parameter schema declared to Pi.
pub fn schema() -> Value {
    let option = json!({
        "type": "object",
        "properties": {
            "label": {"type": "string", "description": "What the user sees."},
            "description": {"type": "string", "description": "A line under the label."},
            "value": {"type": "string", "description": "What you get back (default: the label)."},
            "allowCustom": {"type": "boolean", "description": "The user adds text to this option (same as action \"input\")."},
            "action": {"type": "string", "enum": ["select", "input", "end_turn", "new_session"],
                       "description": "select (default); input: the user adds text; end_turn: ends your turn; new_session: starts a new task with `prefill`."},
            "prefill": {"type": "string", "description": "For new_session: the next task's prompt."},
            "recommended": {"type": "boolean", "description": "Preselected, and chosen if the question times out."}
        },
        "required": ["label"],
        "additionalProperties": false
    });
    let question = |required: bool| {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question."},
                "context": {"type": "string", "description": "Background shown above the question."},
                "options": {"type": "array", "items": option.clone()},
                "allowMultiple": {"type": "boolean", "description": "The user may pick several options (default false)."},
                "allowFreeform": {"type": "boolean", "description": "The user may answer in their own words (default true)."}
            },
            "additionalProperties": false
        });
        if required {
            schema["required"] = json!(["question"]);
        }
        schema
    };
    let mut top = question(false);
    if let Some(properties) = top["properties"].as_object_mut() {
        properties.insert(
            "timeout".into(),
            json!({"type": "number", "description": "Milliseconds the user has to answer; on expiry the recommended option is taken, else the answer is `timed_out`."}),
        );
        properties.insert(
            "questions".into(),
            json!({"type": "array", "items": question(true),
                   "description": "Several questions, asked one after another (instead of `question`)."}),
        );
    }
    top
}

/// Parses and validates the arguments of one call against the settings; `has_screen` says
/// whether a modal can be shown. The error is the text the model reads.
pub(crate) fn parse(
    args: &Value,
    config: &AskUserConfig,
    has_screen: bool,
) -> Result<AskRequest, Refusal> {
    let Some(args) = args.as_object() else {
        return Err("Error: ask_user needs an object of arguments".into());
    };
    let timeout = parse_timeout(args.get("timeout"))?;
    let raw: Vec<(&Map<String, Value>, String)> =
        match (args.get("question"), args.get("questions")) {
            (Some(_), Some(_)) => {
                return Err("Error: give either `question` or `questions`, not both".into());
            }
            (None, None) => return Err("Error: `question` is required".into()),
            (Some(_), None) => vec![(args, String::new())],
            (None, Some(Value::Array(items))) if !items.is_empty() => {
                let mut raw = Vec::new();
                for (index, item) in items.iter().enumerate() {
                    let Some(item) = item.as_object() else {
                        return Err(format!("Error: questions[{index}] must be an object").into());
                    };
                    raw.push((item, format!("questions[{index}].")));
                }
                raw
            }
            (None, Some(_)) => {
                return Err("Error: `questions` must be a non-empty array of questions".into());
            }
        };
    let mut questions = Vec::new();
    let mut freeform_stated = Vec::new();
    for (item, at) in raw {
        let (question, stated) = parse_question(item, &at, config)?;
        questions.push(question);
        freeform_stated.push(stated);
    }
    // The original's order, over every question.
    let several = questions.len() > 1;
    let which = |index: usize| {
        if several {
            format!("Question {}: ", index + 1)
        } else {
            String::new()
        }
    };
    if !config.enabled {
        return Err("Error: ask_user tool is disabled in settings.".into());
    }
    for (index, question) in questions.iter().enumerate() {
        if question.allow_multiple && !config.multi_select {
            return Err(format!(
                "Error: {}Multi-select questions are disabled in settings.",
                which(index)
            )
            .into());
        }
        if !question.allow_multiple && !config.single_select {
            return Err(format!(
                "Error: {}Single-select questions are disabled in settings.",
                which(index)
            )
            .into());
        }
        if question.allow_freeform && freeform_stated[index] && !config.freeform {
            return Err(format!(
                "Error: {}Freeform questions are disabled in settings.",
                which(index)
            )
            .into());
        }
    }
    if !has_screen {
        return Err("Error: UI not available (running in non-interactive mode)".into());
    }
    for (index, question) in questions.iter().enumerate() {
        if question.options.is_empty() && !question.allow_freeform {
            return Err(format!(
                "Error: {}No options provided and allowFreeform is false. Provide options or \
                 enable freeform.",
                which(index)
            )
            .into());
        }
    }
    Ok(AskRequest { questions, timeout })
}

/// One question; the flag says whether `allowFreeform` was given (true) explicitly.
fn parse_question(
    item: &Map<String, Value>,
    at: &str,
    config: &AskUserConfig,
) -> Result<(Question, bool), Refusal> {
    let question = match item.get("question") {
        Some(Value::String(text)) if !text.trim().is_empty() => text.trim().to_owned(),
        _ => return Err(format!("Error: `{at}question` must be a non-empty string").into()),
    };
    let context = optional_text(item.get("context"), &format!("{at}context"))?;
    let allow_multiple =
        optional_flag(item.get("allowMultiple"), &format!("{at}allowMultiple"))?.unwrap_or(false);
    let freeform = optional_flag(item.get("allowFreeform"), &format!("{at}allowFreeform"))?;
    let allow_freeform = freeform.unwrap_or(config.freeform);
    let options = match item.get("options") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, option)| parse_option(option, &format!("{at}options[{index}]")))
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(format!("Error: `{at}options` must be an array").into()),
    };
    Ok((
        Question {
            question,
            context,
            options,
            allow_multiple,
            allow_freeform,
        },
        freeform == Some(true),
    ))
}

fn parse_option(option: &Value, at: &str) -> Result<AskOption, Refusal> {
    let Some(option) = option.as_object() else {
        return Err(format!("Error: `{at}` must be an object with a label").into());
    };
    let label = match option.get("label") {
        Some(Value::String(text)) if !text.trim().is_empty() => text.trim().to_owned(),
        _ => return Err(format!("Error: `{at}.label` must be a non-empty string").into()),
    };
    let value = optional_text(option.get("value"), &format!("{at}.value"))?
        .unwrap_or_else(|| label.clone());
    let allow_custom =
        optional_flag(option.get("allowCustom"), &format!("{at}.allowCustom"))?.unwrap_or(false);
    let action = match option.get("action") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(OptionAction::parse(text).ok_or_else(|| {
            format!(
                "Error: `{at}.action` must be select, input, end_turn or new_session, not \
                 {text:?}"
            )
        })?),
        Some(_) => return Err(format!("Error: `{at}.action` must be a string").into()),
    };
    // The explicit non-select action wins; else `allowCustom` makes it an input option.
    let action = match action {
        Some(action) if action != OptionAction::Select => action,
        _ if allow_custom => OptionAction::Input,
        _ => OptionAction::Select,
    };
    let prefill = optional_text(option.get("prefill"), &format!("{at}.prefill"))?;
    if action == OptionAction::NewSession && prefill.is_none() {
        return Err(format!(
            "Error: `{at}` starts a new session but has no `prefill` (the new task's prompt)"
        )
        .into());
    }
    Ok(AskOption {
        label,
        description: optional_text(option.get("description"), &format!("{at}.description"))?,
        value,
        action,
        prefill,
        recommended: optional_flag(option.get("recommended"), &format!("{at}.recommended"))?
            .unwrap_or(false),
    })
}

fn optional_text(value: Option<&Value>, at: &str) -> Result<Option<String>, Refusal> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.trim().to_owned())),
        Some(_) => Err(format!("Error: `{at}` must be a string").into()),
    }
}

fn optional_flag(value: Option<&Value>, at: &str) -> Result<Option<bool>, Refusal> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(flag)) => Ok(Some(*flag)),
        Some(_) => Err(format!("Error: `{at}` must be true or false").into()),
    }
}

fn parse_timeout(value: Option<&Value>) -> Result<Option<Duration>, Refusal> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(ms)) => match ms.as_f64() {
            Some(0.0) => Ok(None),
            Some(ms) if ms > 0.0 && ms.is_finite() => {
                Ok(Some(Duration::from_millis(ms as u64).min(LONGEST_WAIT)))
            }
            _ => Err("Error: `timeout` must be a positive number of milliseconds".into()),
        },
        Some(_) => Err("Error: `timeout` must be a number of milliseconds".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> AskUserConfig {
        AskUserConfig::default()
    }

    #[test]
    fn options_are_normalised() {
        let args = json!({
            "question": "  Which? ",
            "context": "",
            "options": [
                {"label": "A"},
                {"label": "B", "value": "b", "allowCustom": true, "description": "more"},
                {"label": "Stop", "action": "end_turn"},
                {"label": "New", "action": "new_session", "prefill": "do X", "recommended": true},
                {"label": "C", "action": "select", "allowCustom": true},
            ],
            "timeout": 1500,
        });
        let request = parse(&args, &config(), true).unwrap();
        assert_eq!(request.timeout, Some(Duration::from_millis(1500)));
        let question = &request.questions[0];
        assert_eq!(question.question, "Which?");
        assert_eq!(question.context, None);
        assert!(question.allow_freeform && !question.allow_multiple);
        let summary: Vec<(&str, &str, OptionAction)> = question
            .options
            .iter()
            .map(|o| (o.label.as_str(), o.value.as_str(), o.action))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("A", "A", OptionAction::Select),
                ("B", "b", OptionAction::Input),
                ("Stop", "Stop", OptionAction::EndTurn),
                ("New", "New", OptionAction::NewSession),
                ("C", "C", OptionAction::Input),
            ]
        );
        // A final option is never "recommended" for a timeout.
        assert!(question.recommended().is_empty());
    }

    #[test]
    fn validation_follows_the_original_order_and_words() {
        let off = |change: fn(&mut AskUserConfig)| {
            let mut config = config();
            change(&mut config);
            config
        };
        let multi = json!({"question": "q", "allowMultiple": true, "allowFreeform": true});
        let bare = json!({"question": "q", "allowFreeform": false});
        let cases: Vec<(&str, Value, AskUserConfig, bool, &str)> = vec![
            (
                "disabled first",
                multi.clone(),
                off(|c| c.enabled = false),
                false,
                "Error: ask_user tool is disabled in settings.",
            ),
            (
                "multi before the screen",
                multi.clone(),
                off(|c| c.multi_select = false),
                false,
                "Error: Multi-select questions are disabled in settings.",
            ),
            (
                "single",
                json!({"question": "q"}),
                off(|c| c.single_select = false),
                true,
                "Error: Single-select questions are disabled in settings.",
            ),
            (
                "freeform asked for explicitly",
                multi.clone(),
                off(|c| c.freeform = false),
                true,
                "Error: Freeform questions are disabled in settings.",
            ),
            (
                "no screen",
                multi.clone(),
                config(),
                false,
                "Error: UI not available (running in non-interactive mode)",
            ),
            (
                "nothing to answer with",
                bare,
                config(),
                true,
                "Error: No options provided and allowFreeform is false. Provide options or enable freeform.",
            ),
            (
                "unstated freeform follows the settings",
                json!({"question": "q"}),
                off(|c| c.freeform = false),
                true,
                "Error: No options provided and allowFreeform is false. Provide options or enable freeform.",
            ),
            (
                "both forms",
                json!({"question": "q", "questions": []}),
                config(),
                true,
                "Error: give either `question` or `questions`, not both",
            ),
            (
                "no question",
                json!({"options": []}),
                config(),
                true,
                "Error: `question` is required",
            ),
            (
                "bad option",
                json!({"question": "q", "options": [{"label": ""}]}),
                config(),
                true,
                "Error: `options[0].label` must be a non-empty string",
            ),
            (
                "bad action",
                json!({"question": "q", "options": [{"label": "a", "action": "go"}]}),
                config(),
                true,
                "Error: `options[0].action` must be select, input, end_turn or new_session, not \"go\"",
            ),
            (
                "new session without prefill",
                json!({"question": "q", "options": [{"label": "a", "action": "new_session"}]}),
                config(),
                true,
                "Error: `options[0]` starts a new session but has no `prefill` (the new task's prompt)",
            ),
            (
                "bad timeout",
                json!({"question": "q", "timeout": -5}),
                config(),
                true,
                "Error: `timeout` must be a positive number of milliseconds",
            ),
            (
                "several, one at fault",
                json!({"questions": [{"question": "a"}, {"question": "b", "allowMultiple": true}]}),
                off(|c| c.multi_select = false),
                true,
                "Error: Question 2: Multi-select questions are disabled in settings.",
            ),
            (
                "several, one malformed",
                json!({"questions": [{"question": "a"}, {"options": []}]}),
                config(),
                true,
                "Error: `questions[1].question` must be a non-empty string",
            ),
        ];
        for (name, args, config, screen, want) in cases {
            assert_eq!(parse(&args, &config, screen), Err(want.into()), "{name}");
        }
    }

    #[test]
    fn several_questions_keep_their_own_settings() {
        let args = json!({"questions": [
            {"question": "a", "options": [{"label": "x"}], "allowFreeform": false},
            {"question": "b", "allowMultiple": true, "options": [{"label": "y", "recommended": true}]},
        ]});
        let request = parse(&args, &config(), true).unwrap();
        assert_eq!(request.questions.len(), 2);
        assert!(!request.questions[0].allow_freeform);
        assert!(request.questions[1].allow_multiple && request.questions[1].allow_freeform);
        assert_eq!(request.questions[1].recommended(), vec!["y".to_owned()]);
        assert_eq!(request.timeout, None);
    }

    #[test]
    fn the_schema_offers_every_parameter() {
        let schema = schema();
        let properties = schema["properties"].as_object().unwrap();
        let names: Vec<&str> = properties.keys().map(String::as_str).collect();
        for name in [
            "question",
            "context",
            "options",
            "allowMultiple",
            "allowFreeform",
            "timeout",
            "questions",
        ] {
            assert!(names.contains(&name), "{name} in {names:?}");
        }
        assert_eq!(
            schema["properties"]["questions"]["items"]["required"],
            json!(["question"])
        );
    }
}

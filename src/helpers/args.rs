//! `spawn_helper`'s arguments: one call is a management action, a workflow script or a single
//! helper, in that routing order (a call naming both an action and a script is an action). This
//! file only reads and checks arguments — no state, no processes — so every rule about what a
//! call may say is a table test away, and the error names the argument at fault.
//!
//! The workflow script format (documented in `docs/helpers.md`):
//!
//! ```json
//! {"steps": [
//!    {"id": "api", "type": "explore", "description": "map the API", "prompt": "…"},
//!    {"id": "db",  "type": "explore", "prompt": "…"},
//!    {"id": "sum", "type": "explore", "after": ["api", "db"],
//!     "prompt": "Combine these findings:\n{{api}}\n{{db}}"}
//!  ],
//!  "maxParallel": 2}
//! ```
//!
//! A step runs once the steps it names in `after` have completed; `after` may only name earlier
//! steps, so a script is acyclic by construction. `{{id}}` in a prompt is replaced by that
//! step's answer (only for ids in `after`, so a template never reads a result that may not exist).

use std::collections::HashSet;
use std::time::Duration;

use serde_json::Value;

use super::agents::THINKING_LEVELS;
use crate::bridge::Refusal;
use crate::config::module_file::to_usize;
use crate::config::references::replace_references;

/// Default truncation of a result the model reads.
pub(crate) const MAX_OUTPUT_BYTES: usize = 200 * 1024;
pub(crate) const MAX_OUTPUT_LINES: usize = 5_000;
/// Default time an acceptance command may take.
pub(crate) const DEFAULT_ACCEPTANCE_TIMEOUT: Duration = Duration::from_secs(300);
/// The most steps one workflow script may declare, whatever the budgets say.
pub(crate) const MAX_WORKFLOW_STEPS: usize = 64;

/// What one `spawn_helper` call asks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Request {
    Action(Action),
    Workflow(Box<WorkflowScript>),
    Single(Box<SpawnArgs>),
}

/// A management action.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Every run this session knows.
    List,
    /// One run's record and result.
    Get {
        id: String,
    },
    /// Caps, counters and budgets.
    Status,
    /// The runs a run (or, without an id, the caller) spawned.
    ChildrenList {
        id: Option<String>,
    },
    /// Continue a finished run's stored session with a new message.
    Resume {
        id: String,
        message: String,
        background: Option<bool>,
    },
    Stop {
        id: String,
    },
    /// More session spawn budget (root session only).
    GrantSpawnBudget {
        amount: u32,
    },
    /// Checks of the set-up: Pi, run directory, agent types, config.
    Doctor,
    /// How to use spawn_helper.
    Guide,
    /// The answer to a helper's `contact_supervisor` question.
    Reply {
        id: String,
        message: String,
    },
}

/// The action names, in the order the guide lists them.
pub(crate) const ACTIONS: [&str; 10] = [
    "list",
    "get",
    "status",
    "children.list",
    "resume",
    "stop",
    "grant-spawn-budget",
    "doctor",
    "guide",
    "reply",
];

/// Where a helper's conversation starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ContextMode {
    /// An empty conversation: the prompt is all it knows.
    Fresh,
    /// A copy of the caller's conversation so far.
    Fork,
}

/// How much of a result the model reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OutputLimit {
    pub bytes: usize,
    pub lines: usize,
}

impl Default for OutputLimit {
    fn default() -> Self {
        Self {
            bytes: MAX_OUTPUT_BYTES,
            lines: MAX_OUTPUT_LINES,
        }
    }
}

/// Commands that must pass for a run's answer to be accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Acceptance {
    /// Shell commands, run in order in the workspace; the first non-zero exit rejects.
    pub commands: Vec<String>,
    pub timeout: Duration,
}

/// A single helper's arguments after normalization.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct SpawnArgs {
    pub agent_type: String,
    pub prompt: String,
    pub description: String,
    pub background: Option<bool>,
    pub context: Option<ContextMode>,
    pub model: Option<String>,
    pub thinking: Option<String>,
    pub max_turns: Option<u32>,
    pub max_tool_uses: Option<u32>,
    pub max_tokens: Option<u64>,
    pub max_cost: Option<f64>,
    pub acceptance: Option<Acceptance>,
    pub max_output: Option<OutputLimit>,
}

/// One step of a workflow script.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WorkflowStep {
    pub id: String,
    /// The step's helper, as a single spawn would take it (prompt still with `{{id}}` marks).
    pub args: SpawnArgs,
    pub after: Vec<String>,
}

/// A declared fan-out.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WorkflowScript {
    pub steps: Vec<WorkflowStep>,
    /// How many steps may run at once (also bounded by the concurrency cap).
    pub max_parallel: usize,
    pub background: bool,
    pub description: String,
    pub max_output: Option<OutputLimit>,
}

/// Reads a call's arguments into a [`Request`]; the error says which argument is wrong.
pub(crate) fn parse_request(args: &Value) -> Result<Request, Refusal> {
    if !args.is_object() {
        return Err("spawn_helper arguments must be an object".into());
    }
    if let Some(action) = text(args, "action")? {
        return parse_action(args, action.trim()).map(Request::Action);
    }
    match args.get("workflowScript") {
        None | Some(Value::Null) => parse_spawn_args(args).map(|a| Request::Single(Box::new(a))),
        Some(script) => {
            parse_workflow(args, script).map(|script| Request::Workflow(Box::new(script)))
        }
    }
}

/// Reads a single helper's arguments.
pub(crate) fn parse_spawn_args(args: &Value) -> Result<SpawnArgs, Refusal> {
    if !args.is_object() {
        return Err("spawn_helper arguments must be an object".into());
    }
    let agent_type = text(args, "type")?
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .ok_or("type is required (a helper type such as explore or work)")?;
    let prompt = text(args, "prompt")?.unwrap_or_default();
    let description = text(args, "description")?
        .map(|text| text.trim().to_string())
        .filter(|text| !text.is_empty())
        .unwrap_or_else(|| default_description(&prompt));
    let thinking = text(args, "thinking")?;
    if let Some(level) = &thinking
        && !THINKING_LEVELS.contains(&level.as_str())
    {
        return Err(format!(
            "thinking must be one of {}, found {level:?}",
            THINKING_LEVELS.join(", ")
        )
        .into());
    }
    let context = match text(args, "context")?.as_deref().map(str::trim) {
        None => None,
        Some("fresh") => Some(ContextMode::Fresh),
        Some("fork") => Some(ContextMode::Fork),
        Some(other) => return Err(format!("context must be fresh or fork, found {other:?}").into()),
    };
    let acceptance = match (args.get("gate"), args.get("acceptance")) {
        (Some(gate), Some(acceptance)) if !gate.is_null() && !acceptance.is_null() => {
            return Err(
                "gate and acceptance are mutually exclusive: gate is the shorthand for one \
                 verify command, acceptance the full form; give one"
                    .into(),
            );
        }
        (Some(gate), _) if !gate.is_null() => Some(parse_gate(gate)?),
        (_, Some(acceptance)) if !acceptance.is_null() => Some(parse_acceptance(acceptance)?),
        _ => None,
    };
    Ok(SpawnArgs {
        agent_type,
        prompt,
        description,
        background: background(args)?,
        context,
        model: text(args, "model")?.filter(|model| !model.trim().is_empty()),
        thinking,
        max_turns: positive(args, "max_turns")?.map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
        max_tool_uses: positive(args, "max_tool_uses")?
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
        max_tokens: positive(args, "max_tokens")?,
        max_cost: match args.get("max_cost") {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                value
                    .as_f64()
                    .filter(|cost| *cost > 0.0 && cost.is_finite())
                    .ok_or_else(|| format!("max_cost must be a positive number, found {value}"))?,
            ),
        },
        acceptance,
        max_output: parse_max_output(args)?,
    })
}

fn parse_action(args: &Value, name: &str) -> Result<Action, Refusal> {
    let id = || -> Result<String, Refusal> {
        text(args, "id")?
            .map(|id| id.trim().to_string())
            .filter(|id| !id.is_empty())
            .ok_or_else(|| format!("action {name} needs id (a run id)").into())
    };
    let message = || -> Result<String, Refusal> {
        text(args, "message")?
            .filter(|message| !message.trim().is_empty())
            .ok_or_else(|| format!("action {name} needs message").into())
    };
    Ok(match name {
        "list" => Action::List,
        "get" => Action::Get { id: id()? },
        "status" => Action::Status,
        "children.list" => Action::ChildrenList {
            id: text(args, "id")?.filter(|id| !id.trim().is_empty()),
        },
        "resume" => Action::Resume {
            id: id()?,
            message: message()?,
            background: background(args)?,
        },
        "stop" => Action::Stop { id: id()? },
        "grant-spawn-budget" => Action::GrantSpawnBudget {
            amount: match positive(args, "amount")? {
                Some(n) => u32::try_from(n).unwrap_or(u32::MAX),
                None => 10,
            },
        },
        "doctor" => Action::Doctor,
        "guide" => Action::Guide,
        "reply" => Action::Reply {
            id: id()?,
            message: message()?,
        },
        other => {
            return Err(format!(
                "unknown action {other:?}; actions are {}",
                ACTIONS.join(", ")
            )
            .into());
        }
    })
}

fn parse_workflow(args: &Value, script: &Value) -> Result<WorkflowScript, Refusal> {
    // Models often send the script as a JSON string; both are the same script.
    let script = match script {
        Value::String(source) => &serde_json::from_str::<Value>(source)
            .map_err(|err| format!("workflowScript is not valid JSON: {err}"))?,
        other => other,
    };
    let steps = script
        .get("steps")
        .and_then(Value::as_array)
        .filter(|steps| !steps.is_empty())
        .ok_or("workflowScript needs steps: a non-empty array of {id, type, prompt}")?;
    let count = steps.len();
    if count > MAX_WORKFLOW_STEPS {
        let message = format!("workflowScript has {count} steps; at most {MAX_WORKFLOW_STEPS}");
        return Err(message.into());
    }
    let mut seen = HashSet::new();
    let mut parsed_steps = Vec::with_capacity(steps.len());
    for (index, step) in steps.iter().enumerate() {
        let step = parse_step(step, &seen)
            .map_err(|refusal| format!("workflowScript step {}: {refusal}", index + 1))?;
        seen.insert(step.id.clone());
        parsed_steps.push(step);
    }
    let max_parallel = match script.get("maxParallel") {
        None | Some(Value::Null) => 4,
        Some(value) => (value.as_u64().filter(|n| *n >= 1).map(to_usize))
            .ok_or_else(|| format!("maxParallel must be a positive integer, found {value}"))?,
    };
    Ok(WorkflowScript {
        description: text(args, "description")?
            .filter(|text| !text.trim().is_empty())
            .unwrap_or_else(|| format!("workflow of {} steps", parsed_steps.len())),
        steps: parsed_steps,
        max_parallel,
        background: background(args)?.unwrap_or(false),
        max_output: parse_max_output(args)?,
    })
}

/// One step of a workflow script; `seen` holds the ids of the steps before it.
fn parse_step(step: &Value, seen: &HashSet<String>) -> Result<WorkflowStep, Refusal> {
    let id = step
        .get("id")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|id| {
            !id.is_empty()
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
        .ok_or_else(|| "id must be letters, digits, - or _".to_string())?
        .to_string();
    let args = parse_spawn_args(step)?;
    if args.background == Some(true) {
        return Err(
            "a step cannot run in the background; set run_in_background on the script".into(),
        );
    }
    if args.context == Some(ContextMode::Fork) {
        return Err("workflow steps start fresh; context fork is for single helpers".into());
    }
    let after: Vec<String> = match step.get("after") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(ids)) => ids
            .iter()
            .map(|id| {
                id.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("after must list step ids, found {id}"))
            })
            .collect::<Result<_, String>>()?,
        Some(other) => return Err(format!("after must be an array, found {other}").into()),
    };
    for dep in &after {
        if !seen.contains(dep) {
            return Err(format!("after names {dep:?}, which is not an earlier step").into());
        }
    }
    for mark in template_marks(&args.prompt) {
        if !after.contains(&mark) {
            return Err(
                format!("the prompt uses {{{{{mark}}}}} but {mark:?} is not in after").into(),
            );
        }
    }
    if seen.contains(&id) {
        return Err(format!("id {id:?} is used twice").into());
    }
    Ok(WorkflowStep { id, args, after })
}

/// The `{{id}}` marks of a prompt, in order.
pub(crate) fn template_marks(prompt: &str) -> Vec<String> {
    let mut marks = Vec::new();
    let mut rest = prompt;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        let mark = after[..end].trim();
        if !mark.is_empty()
            && mark
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            marks.push(mark.to_string());
        }
        rest = &after[end + 2..];
    }
    marks
}

/// `prompt` with each `{{id}}` replaced by `answer(id)`.
pub(crate) fn fill_template(prompt: &str, answer: impl Fn(&str) -> Option<String>) -> String {
    let filled = replace_references(prompt, "{{", "}}", |id| {
        Ok::<_, std::convert::Infallible>(answer(id.trim()))
    });
    let Ok(filled) = filled;
    filled
}

fn parse_gate(gate: &Value) -> Result<Acceptance, Refusal> {
    match gate {
        Value::String(command) if !command.trim().is_empty() => Ok(Acceptance {
            commands: vec![command.clone()],
            timeout: DEFAULT_ACCEPTANCE_TIMEOUT,
        }),
        other => Err(format!(
            "gate must be one verify command (a non-empty string), found {other}"
        )
        .into()),
    }
}

fn parse_acceptance(acceptance: &Value) -> Result<Acceptance, Refusal> {
    let commands: Vec<String> = acceptance
        .get("commands")
        .and_then(Value::as_array)
        .map(|commands| {
            commands
                .iter()
                .filter_map(Value::as_str)
                .filter(|command| !command.trim().is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if commands.is_empty() {
        return Err(
            "acceptance needs commands: a non-empty array of shell commands that must exit 0"
                .into(),
        );
    }
    let timeout = match acceptance.get("timeoutSeconds") {
        None | Some(Value::Null) => DEFAULT_ACCEPTANCE_TIMEOUT,
        Some(value) => {
            Duration::from_secs(value.as_u64().filter(|n| *n >= 1).ok_or_else(|| {
                format!("acceptance.timeoutSeconds must be a positive integer, found {value}")
            })?)
        }
    };
    Ok(Acceptance { commands, timeout })
}

fn parse_max_output(args: &Value) -> Result<Option<OutputLimit>, Refusal> {
    let bad = |value: &Value| {
        format!(
            "maxOutput must be a byte count or {{\"bytes\": n, \"lines\": n}} with positive \
             integers, found {value}"
        )
    };
    let count = |value: Option<&Value>, default: usize| -> Option<usize> {
        match value {
            None | Some(Value::Null) => Some(default),
            Some(value) => value
                .as_u64()
                .filter(|n| *n >= 1)
                .and_then(|n| usize::try_from(n).ok()),
        }
    };
    match args.get("maxOutput") {
        None | Some(Value::Null) => Ok(None),
        Some(value @ Value::Number(_)) => Ok(Some(OutputLimit {
            bytes: count(Some(value), 0).ok_or_else(|| bad(value))?,
            lines: MAX_OUTPUT_LINES,
        })),
        Some(value @ Value::Object(limit)) => Ok(Some(OutputLimit {
            bytes: count(limit.get("bytes"), MAX_OUTPUT_BYTES).ok_or_else(|| bad(value))?,
            lines: count(limit.get("lines"), MAX_OUTPUT_LINES).ok_or_else(|| bad(value))?,
        })),
        Some(value) => Err(bad(value).into()),
    }
}

fn text(args: &Value, key: &str) -> Result<Option<String>, Refusal> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(format!("{key} must be a string, found {other}").into()),
    }
}

fn flag(args: &Value, key: &str) -> Result<Option<bool>, Refusal> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(flag)) => Ok(Some(*flag)),
        Some(other) => Err(format!("{key} must be true or false, found {other}").into()),
    }
}

fn positive(args: &Value, key: &str) -> Result<Option<u64>, Refusal> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .filter(|n| *n >= 1)
            .map(Some)
            .ok_or_else(|| format!("{key} must be a positive integer, found {value}").into()),
    }
}

fn background(args: &Value) -> Result<Option<bool>, Refusal> {
    match (flag(args, "run_in_background")?, flag(args, "async")?) {
        (Some(a), Some(b)) if a != b => {
            Err("run_in_background and async disagree; give one".into())
        }
        (a, b) => Ok(a.or(b)),
    }
}

/// The first five words of the prompt, when no description was given.
fn default_description(prompt: &str) -> String {
    prompt
        .split_whitespace()
        .take(5)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_table::check_errors;
    use serde_json::json;

    fn single(args: Value) -> SpawnArgs {
        match parse_request(&args).unwrap() {
            Request::Single(args) => *args,
            other => panic!("not a single helper: {other:?}"),
        }
    }

    #[test]
    fn routing_order_is_action_then_script_then_single() {
        let both = json!({"action": "list", "workflowScript": {"steps": []}, "type": "explore"});
        assert_eq!(parse_request(&both).unwrap(), Request::Action(Action::List));
        let script = json!({"workflowScript": {"steps": [{"id": "a", "type": "explore",
                            "prompt": "p"}]}, "type": "explore", "prompt": "x"});
        assert!(matches!(
            parse_request(&script).unwrap(),
            Request::Workflow(_)
        ));
        let plain = json!({"type": "explore", "prompt": "x"});
        assert!(matches!(parse_request(&plain).unwrap(), Request::Single(_)));
    }

    #[test]
    fn actions_table() {
        let cases = [
            (json!({"action": "status"}), Ok(Action::Status)),
            (
                json!({"action": "get", "id": " h1 "}),
                Ok(Action::Get { id: "h1".into() }),
            ),
            (
                json!({"action": "get"}),
                Err("action get needs id (a run id)"),
            ),
            (
                json!({"action": "children.list"}),
                Ok(Action::ChildrenList { id: None }),
            ),
            (
                json!({"action": "resume", "id": "h1", "message": "go on", "async": true}),
                Ok(Action::Resume {
                    id: "h1".into(),
                    message: "go on".into(),
                    background: Some(true),
                }),
            ),
            (
                json!({"action": "resume", "id": "h1"}),
                Err("action resume needs message"),
            ),
            (
                json!({"action": "grant-spawn-budget"}),
                Ok(Action::GrantSpawnBudget { amount: 10 }),
            ),
            (
                json!({"action": "grant-spawn-budget", "amount": 3}),
                Ok(Action::GrantSpawnBudget { amount: 3 }),
            ),
            (
                json!({"action": "reply", "id": "h1", "message": "yes"}),
                Ok(Action::Reply {
                    id: "h1".into(),
                    message: "yes".into(),
                }),
            ),
        ];
        for (args, expected) in cases {
            let got = parse_request(&args);
            match expected {
                Ok(action) => assert_eq!(got, Ok(Request::Action(action)), "{args}"),
                Err(message) => assert_eq!(got, Err(message.into()), "{args}"),
            }
        }
        let unknown = parse_request(&json!({"action": "explode"})).unwrap_err();
        assert!(
            unknown.contains("unknown action") && unknown.contains("grant-spawn-budget"),
            "{unknown}"
        );
    }

    #[test]
    fn single_helper_arguments_table() {
        let args = single(json!({
            "type": " work ", "prompt": "fix it", "description": "fix the bug",
            "async": true, "context": "fork", "model": "p/m", "thinking": "low",
            "max_turns": 5, "max_tool_uses": 20, "max_tokens": 100000, "max_cost": 0.5,
            "gate": "cargo test", "maxOutput": {"bytes": 1000}
        }));
        assert_eq!(args.agent_type, "work");
        assert_eq!(args.background, Some(true));
        assert_eq!(args.context, Some(ContextMode::Fork));
        assert_eq!(args.max_turns, Some(5));
        assert_eq!(args.max_tool_uses, Some(20));
        assert_eq!(args.max_tokens, Some(100_000));
        assert_eq!(args.max_cost, Some(0.5));
        assert_eq!(
            args.acceptance,
            Some(Acceptance {
                commands: vec!["cargo test".into()],
                timeout: DEFAULT_ACCEPTANCE_TIMEOUT
            })
        );
        assert_eq!(
            args.max_output,
            Some(OutputLimit {
                bytes: 1000,
                lines: MAX_OUTPUT_LINES
            })
        );
        let defaults = single(json!({"type": "explore", "prompt": "one two three four five six"}));
        assert_eq!(defaults.description, "one two three four five");
        assert_eq!(defaults.max_output, None);
        assert_eq!(defaults.context, None);

        let errors = [
            (json!({"prompt": "x"}), "type is required"),
            (
                json!({"type": "explore", "context": "copy"}),
                "context must be",
            ),
            (
                json!({"type": "explore", "gate": "a", "acceptance": {"commands": ["b"]}}),
                "mutually exclusive",
            ),
            (json!({"type": "explore", "gate": ""}), "gate must be"),
            (
                json!({"type": "explore", "acceptance": {"commands": []}}),
                "acceptance needs commands",
            ),
            (
                json!({"type": "explore", "max_turns": 0}),
                "max_turns must be",
            ),
            (
                json!({"type": "explore", "max_cost": -1}),
                "max_cost must be",
            ),
            (
                json!({"type": "explore", "maxOutput": "big"}),
                "maxOutput must be",
            ),
            (
                json!({"type": "explore", "maxOutput": {"lines": 0}}),
                "maxOutput must be",
            ),
            (
                json!({"type": "explore", "async": true, "run_in_background": false}),
                "disagree",
            ),
            (
                json!({"type": "explore", "thinking": "max"}),
                "thinking must be",
            ),
        ];
        check_errors(errors, parse_request);
    }

    #[test]
    fn acceptance_full_form() {
        let args = single(json!({"type": "work", "prompt": "x",
            "acceptance": {"commands": ["make", "make test"], "timeoutSeconds": 9}}));
        assert_eq!(
            args.acceptance,
            Some(Acceptance {
                commands: vec!["make".into(), "make test".into()],
                timeout: Duration::from_secs(9)
            })
        );
    }

    #[test]
    fn workflow_scripts_table() {
        let ok = json!({"workflowScript": {"steps": [
            {"id": "a", "type": "explore", "prompt": "look at a"},
            {"id": "b", "type": "explore", "prompt": "look at b"},
            {"id": "sum", "type": "explore", "after": ["a", "b"], "prompt": "join {{a}} and {{ b }}"}
        ], "maxParallel": 2}, "async": true});
        let Request::Workflow(script) = parse_request(&ok).unwrap() else {
            panic!("not a workflow")
        };
        assert_eq!(script.steps.len(), 3);
        assert_eq!(script.max_parallel, 2);
        assert!(script.background);
        assert_eq!(script.steps[2].after, ["a", "b"]);
        assert_eq!(script.description, "workflow of 3 steps");

        // A script sent as a string is the same script.
        let as_string = json!({"workflowScript": ok["workflowScript"].to_string(), "async": true});
        assert_eq!(
            parse_request(&as_string).unwrap(),
            parse_request(&ok).unwrap()
        );

        let errors = [
            (json!({"workflowScript": {"steps": []}}), "non-empty array"),
            (json!({"workflowScript": "{not json"}), "not valid JSON"),
            (
                json!({"workflowScript": {"steps": [{"id": "a b", "type": "explore", "prompt": "x"}]}}),
                "step 1: id must be",
            ),
            (
                json!({"workflowScript": {"steps": [
                    {"id": "a", "type": "explore", "prompt": "x"},
                    {"id": "a", "type": "explore", "prompt": "y"}]}}),
                "used twice",
            ),
            (
                json!({"workflowScript": {"steps": [
                    {"id": "a", "type": "explore", "prompt": "x", "after": ["b"]},
                    {"id": "b", "type": "explore", "prompt": "y"}]}}),
                "not an earlier step",
            ),
            (
                json!({"workflowScript": {"steps": [
                    {"id": "a", "type": "explore", "prompt": "x"},
                    {"id": "b", "type": "explore", "prompt": "use {{a}}"}]}}),
                "not in after",
            ),
            (
                json!({"workflowScript": {"steps": [
                    {"id": "a", "type": "explore", "prompt": "x", "async": true}]}}),
                "cannot run in the background",
            ),
            (
                json!({"workflowScript": {"steps": [
                    {"id": "a", "type": "explore", "prompt": "x", "context": "fork"}]}}),
                "start fresh",
            ),
            (
                json!({"workflowScript": {"steps": [{"id": "a", "prompt": "x"}]}}),
                "step 1: type is required",
            ),
        ];
        check_errors(errors, parse_request);
        let too_many: Vec<Value> = (0..=MAX_WORKFLOW_STEPS)
            .map(|i| json!({"id": format!("s{i}"), "type": "explore", "prompt": "x"}))
            .collect();
        let err = parse_request(&json!({"workflowScript": {"steps": too_many}})).unwrap_err();
        assert!(err.contains("at most 64"), "{err}");
    }

    #[test]
    fn templates_fill_known_marks_only() {
        assert_eq!(
            template_marks("a {{x}} b {{ y-2 }} {{bad mark}} {{"),
            ["x", "y-2"]
        );
        let filled = fill_template("A={{a}}, B={{ b }}, C={{c}}, open {{", |id| match id {
            "a" => Some("1".into()),
            "b" => Some("2".into()),
            _ => None,
        });
        assert_eq!(filled, "A=1, B=2, C={{c}}, open {{");
    }
}

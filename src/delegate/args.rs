//! The tools' arguments, read against closed schemas: `bg_delegate`'s ([`DelegateArgs`]) and
//! `bg_result`'s ([`ResultArgs`]). Pure, so the refusals are table-tested.

use serde_json::{Map, Value};

use super::artifacts::Delivery;
use super::errors::DelegateError;
use crate::text::non_blank_str;

/// The keys `bg_delegate` accepts.
const DELEGATE_KEYS: [&str; 7] = [
    "name",
    "prompt",
    "route",
    "maxTurns",
    "timeoutSeconds",
    "notifyOnCompletion",
    "triggerOnCompletion",
];

/// `bg_delegate`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DelegateArgs {
    pub name: String,
    pub prompt: String,
    pub route: Option<(String, String)>,
    pub max_turns: Option<u32>,
    pub timeout_seconds: Option<u64>,
    pub notify: bool,
    pub trigger: bool,
}

/// Reads `bg_delegate`'s arguments (a closed schema).
pub(crate) fn parse_delegate_args(args: &Value) -> Result<DelegateArgs, DelegateError> {
    let Some(object) = args.as_object() else {
        return Err(DelegateError::invalid(
            "bg_delegate arguments must be an object",
        ));
    };
    refuse_unknown_keys(object)?;
    // Fields are read in this order, so the first refusal is always the same one.
    Ok(DelegateArgs {
        name: name(object)?,
        prompt: prompt(object)?,
        route: route(object)?,
        max_turns: positive(object, "maxTurns")?.map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
        timeout_seconds: positive(object, "timeoutSeconds")?,
        notify: flag(object, "notifyOnCompletion")?,
        trigger: flag(object, "triggerOnCompletion")?,
    })
}

fn refuse_unknown_keys(object: &Map<String, Value>) -> Result<(), DelegateError> {
    let unknown: Vec<&str> = object
        .keys()
        .map(String::as_str)
        .filter(|key| !DELEGATE_KEYS.contains(key))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(DelegateError::invalid(format!(
        "bg_delegate contains unsupported key(s): {}",
        unknown.join(", ")
    )))
}

fn text<'a>(object: &'a Map<String, Value>, key: &str) -> &'a str {
    object.get(key).and_then(Value::as_str).unwrap_or("")
}

fn name(object: &Map<String, Value>) -> Result<String, DelegateError> {
    let name = text(object, "name").trim().to_string();
    if name.is_empty() {
        return Err(DelegateError::invalid(
            "bg_delegate requires a non-empty name",
        ));
    }
    Ok(name)
}

fn prompt(object: &Map<String, Value>) -> Result<String, DelegateError> {
    let prompt = text(object, "prompt").to_string();
    if prompt.trim().is_empty() {
        return Err(DelegateError::invalid(
            "bg_delegate requires a non-blank prompt",
        ));
    }
    Ok(prompt)
}

fn route(object: &Map<String, Value>) -> Result<Option<(String, String)>, DelegateError> {
    let route = match object.get("route") {
        None | Some(Value::Null) => return Ok(None),
        Some(route) => route,
    };
    let part = |key: &str| {
        non_blank_str(route.get(key))
            .map(str::to_string)
            .ok_or_else(|| {
                DelegateError::invalid(format!(
                    "bg_delegate route.{key} must be a non-empty string"
                ))
            })
    };
    Ok(Some((part("provider")?, part("model")?)))
}

fn positive(object: &Map<String, Value>, key: &str) -> Result<Option<u64>, DelegateError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value.as_u64().filter(|n| *n >= 1).map(Some).ok_or_else(|| {
            DelegateError::invalid(format!("bg_delegate {key} must be a positive integer"))
        }),
    }
}

fn flag(object: &Map<String, Value>, key: &str) -> Result<bool, DelegateError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(true),
        Some(Value::Bool(flag)) => Ok(*flag),
        Some(_) => Err(DelegateError::invalid(format!(
            "bg_delegate {key} must be true or false"
        ))),
    }
}

/// `bg_result`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ResultArgs {
    pub(super) task_id: String,
    pub(super) delivery: Option<Delivery>,
    pub(super) wait: bool,
}

/// Reads `bg_result`'s arguments (a closed schema).
pub(super) fn parse_result_args(args: &Value) -> Result<ResultArgs, DelegateError> {
    let Some(object) = args.as_object() else {
        return Err(DelegateError::invalid(
            "bg_result arguments must be an object",
        ));
    };
    if let Some(key) = object
        .keys()
        .find(|key| !["taskId", "delivery", "wait"].contains(&key.as_str()))
    {
        return Err(DelegateError::invalid(format!(
            "bg_result contains unsupported key(s): {key}"
        )));
    }
    let task_id = non_blank_str(object.get("taskId"))
        .ok_or_else(|| DelegateError::invalid("bg_result requires taskId"))?;
    let delivery = match object.get("delivery") {
        None | Some(Value::Null) => None,
        Some(value) => Some(value.as_str().and_then(Delivery::parse).ok_or_else(|| {
            DelegateError::invalid("bg_result delivery must be inline or artifact")
        })?),
    };
    let wait = match object.get("wait") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(wait)) => *wait,
        Some(_) => {
            return Err(DelegateError::invalid(
                "bg_result wait must be true or false",
            ));
        }
    };
    Ok(ResultArgs {
        task_id: task_id.to_string(),
        delivery,
        wait,
    })
}

//! What a module declares to Pi: its tools (with JSON Schema parameters and prompt text), its
//! `/unipi:*` commands and their completions, and its custom message types. Plain data with
//! builders, in a file of its own because both the [`Module`](super::Module) interface and the
//! wire format (`protocol`) speak of them.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// A tool as declared to Pi.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// The name the model calls (`[a-z0-9_]`, unique across modules).
    pub name: String,
    /// A human label for Pi's transcript.
    pub label: String,
    /// What the model reads.
    pub description: String,
    /// JSON Schema for the arguments (an `object` schema).
    pub parameters: Value,
    /// A one-line entry for the `<tools>` section of Pi's system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_snippet: Option<String>,
    /// Bullets for the `<rules>` section; each must name the tool.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prompt_guidelines: Vec<String>,
    /// How long a call may run before it is failed (default: the host's tool timeout).
    #[serde(skip)]
    pub timeout: Option<Duration>,
}

impl ToolSpec {
    /// A tool taking no arguments; add them with [`ToolSpec::param`] and friends.
    pub fn new(
        name: impl Into<String>,
        label: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            label: label.into(),
            description: description.into(),
            parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
            prompt_snippet: None,
            prompt_guidelines: Vec::new(),
            timeout: None,
        }
    }

    /// Adds one property with the given JSON Schema to the (object) parameter schema.
    pub fn param(mut self, name: &str, schema: Value, required: bool) -> Self {
        let Some(object) = self.parameters.as_object_mut() else {
            return self;
        };
        if let Some(Value::Object(properties)) = object.get_mut("properties") {
            properties.insert(name.to_string(), schema);
        } else {
            let mut properties = Map::new();
            properties.insert(name.to_string(), schema);
            object.insert("properties".into(), Value::Object(properties));
        }
        if required {
            match object.get_mut("required") {
                Some(Value::Array(list)) => list.push(json!(name)),
                _ => {
                    object.insert("required".into(), json!([name]));
                }
            }
        }
        self
    }

    /// Adds a parameter of JSON type `kind` that has only a description.
    fn typed_param(self, kind: &str, name: &str, description: &str, required: bool) -> Self {
        self.param(
            name,
            json!({"type": kind, "description": description}),
            required,
        )
    }

    pub fn string_param(self, name: &str, description: &str, required: bool) -> Self {
        self.typed_param("string", name, description, required)
    }

    pub fn integer_param(self, name: &str, description: &str, required: bool) -> Self {
        self.typed_param("integer", name, description, required)
    }

    pub fn number_param(self, name: &str, description: &str, required: bool) -> Self {
        self.typed_param("number", name, description, required)
    }

    pub fn boolean_param(self, name: &str, description: &str, required: bool) -> Self {
        self.typed_param("boolean", name, description, required)
    }

    /// Replaces the whole parameter schema.
    pub fn parameters(mut self, schema: Value) -> Self {
        self.parameters = schema;
        self
    }

    pub fn prompt_snippet(mut self, snippet: impl Into<String>) -> Self {
        self.prompt_snippet = Some(snippet.into());
        self
    }

    pub fn guideline(mut self, guideline: impl Into<String>) -> Self {
        self.prompt_guidelines.push(guideline.into());
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// What Pi is told of a `/unipi:*` command; the [`Command`](crate::bridge::Command) it belongs to
/// holds its handler and completer. Completions come from the static list, then the completer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandSpec {
    /// The full name without the slash, e.g. `unipi:info`.
    pub name: String,
    pub description: String,
    /// Fixed argument completions, offered when they start with what is typed.
    #[serde(skip)]
    pub completions: Vec<Completion>,
}

impl CommandSpec {
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            completions: Vec::new(),
        }
    }

    pub fn completion(mut self, completion: Completion) -> Self {
        self.completions.push(completion);
        self
    }
}

/// One argument completion, in Pi's autocomplete shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Completion {
    pub value: String,
    pub label: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub description: Option<String>,
}

impl Completion {
    pub fn new(value: impl Into<String>) -> Self {
        let value = value.into();
        Self {
            label: value.clone(),
            value,
            description: None,
        }
    }

    pub fn describe(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// A custom message type a module sends (`HostCall::SendMessage`); the extension registers a
/// generic card renderer for it so Pi shows it as a titled card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MessageTypeSpec {
    pub custom_type: String,
    /// The card's title.
    pub label: String,
    /// Messages of this type are kept out of the model's context (the extension filters them in
    /// Pi's `context` event): for messages that only exist to start a turn.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hidden_from_model: bool,
}

impl MessageTypeSpec {
    pub fn new(custom_type: impl Into<String>, label: impl Into<String>) -> Self {
        Self {
            custom_type: custom_type.into(),
            label: label.into(),
            hidden_from_model: false,
        }
    }

    /// Keeps messages of this type out of the model's context.
    pub fn hidden_from_model(mut self) -> Self {
        self.hidden_from_model = true;
        self
    }
}

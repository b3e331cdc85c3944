//! Scenario files: what the scripted model answers. A scenario is a list of rules tried in order
//! against the last message of a chat request (the user's prompt, or a tool result coming back),
//! and a fallback when none matches. The server (`server.rs`) owns the counting of `times` and
//! the wire format; this file owns parsing, validation and the pure choice of a reply, so the
//! choice is table-testable without HTTP.
//!
//! The format (TOML; `demo.toml` is a worked example):
//!
//! ```toml
//! model = "scripted-demo"          # the model id served; or a list: ["a", "b"]
//! chunk_chars = 8                  # optional defaults for every reply: characters per streamed
//! chunk_delay_ms = 0               # delta, and the pause before each delta
//!
//! [price.scripted-demo]            # optional, per served model: the price Pi is told (dollars
//! input = 3                        # per million tokens; cache_read and cache_write too), so a
//! output = 15                      # scenario can offer a dear model and a cheap one
//!
//! [[rule]]
//! when = "(?i)hello"               # regex over the text of the LAST message; absent = any text
//! role = "user"                    # optional: only when the last message has this role
//!                                  # (system, developer, user, assistant, tool)
//! model = "scripted-demo"          # optional: only when the request names this served model
//! reply = "Hi! ..."                # streamed text, and/or
//! tool_calls = [{ name = "bash", arguments = { command = "ls" } }]
//!                                  # tool calls after the text; `arguments` is a table (sent as
//!                                  # JSON) or a string (sent verbatim); `id` is optional
//! delay_ms = 0                     # optional: pause before the answer starts
//! chunk_chars = 8                  # optional: overrides the scenario default
//! chunk_delay_ms = 0               # optional: overrides the scenario default
//! usage = { prompt_tokens = 10, completion_tokens = 5 }
//!                                  # optional; either count defaults to characters / 4
//! times = 1                        # optional: the rule fires at most this many times
//!                                  # `${1}` or `${name}` in tool-call arguments is replaced by
//!                                  # that group of `when`'s match (JSON-escaped), so a reply can
//!                                  # name an id it just read
//! error = { status = 500, message = "overloaded" }
//!                                  # instead of reply/tool_calls: answer with this HTTP error
//!
//! [fallback]                       # optional: when no rule matches (reply/tool_calls/error and
//! reply = "..."                    # the pacing keys above, but no when/role/times)
//! ```
//!
//! Errors name the file and the line of the offending key, so a typo in a scenario is found
//! without reading the server. Users read the format in the README ("Scenario files") and in
//! `--help`; tests load the README's example and check that both name every key this parser
//! takes (`undocumented_keys`), so neither can drift from it.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;

/// Characters per streamed delta when neither the rule nor the scenario says.
pub(crate) const DEFAULT_CHUNK_CHARS: usize = 8;

/// A parsed, validated scenario. Immutable: per-run state (how often a rule fired) lives in the
/// server, so one scenario can back several servers.
#[derive(Debug, Clone)]
pub struct Scenario {
    models: Vec<String>,
    prices: BTreeMap<String, Price>,
    rules: Vec<Rule>,
    fallback: Reply,
}

/// The price of a served model as Pi is told it (`models.json`), in dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    #[serde(default)]
    pub cache_read: f64,
    #[serde(default)]
    pub cache_write: f64,
}

/// One `[[rule]]`: a condition on the last message (and the model asked) and the reply it
/// produces.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    when: Option<Regex>,
    role: Option<Role>,
    model: Option<String>,
    times: Option<u32>,
    reply: Reply,
}

/// What the model answers, and how fast.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub outcome: Outcome,
    pub(crate) pacing: Pacing,
    /// Token counts to report; a `None` count is derived from character counts.
    pub(crate) usage: UsageSpec,
}

/// The answer proper: an assistant message, or a scripted HTTP failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Text (possibly empty) followed by tool calls (possibly none).
    Answer {
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    /// An HTTP error with an OpenAI-style body.
    Fail { status: u16, message: String },
}

/// A scripted tool call. `arguments` is the JSON text sent to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: Option<String>,
    pub name: String,
    pub arguments: String,
}

/// Streaming pace of a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pacing {
    pub delay_ms: u64,
    pub chunk_chars: usize,
    pub chunk_delay_ms: u64,
}

/// Scripted token counts; `None` means "derive from characters".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UsageSpec {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
}

/// Chat roles a rule can require of the last message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

/// The reply chosen for a request; `rule` is the index of the rule that matched (`None` for the
/// fallback), so the server can count firings.
#[derive(Debug, Clone, Copy)]
pub struct Selection<'a> {
    pub rule: Option<usize>,
    pub reply: &'a Reply,
}

/// A scenario that could not be read or is not valid.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read scenario {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}:{line}: {message}")]
    Invalid {
        origin: String,
        line: usize,
        message: String,
    },
}

impl Scenario {
    /// The scenario behind `unipi-tui demo`.
    pub fn builtin_demo() -> Result<Self, ScenarioError> {
        Self::from_toml_str(super::BUILTIN_DEMO_TOML, "<builtin demo.toml>")
    }

    /// Reads and validates a scenario file.
    pub fn from_file(path: &Path) -> Result<Self, ScenarioError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
            path: origin.clone(),
            source,
        })?;
        Self::from_toml_str(&text, &origin)
    }

    /// Parses scenario text; `origin` names it in errors (a path, or a label).
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Self, ScenarioError> {
        let invalid = |(span, message): Problem| ScenarioError::Invalid {
            origin: origin.to_string(),
            line: span.map_or(1, |span: Range<usize>| line_of(text, span.start)),
            message,
        };
        let raw: RawScenario =
            toml::from_str(text).map_err(|err| invalid((err.span(), err.message().to_string())))?;
        Self::from_raw(raw).map_err(invalid)
    }

    /// Validates a parsed scenario: models, pacing defaults, prices, rules, then the fallback.
    fn from_raw(raw: RawScenario) -> Result<Self, Problem> {
        let models = served_models(&raw.model)?;
        let defaults = Pacing {
            delay_ms: 0,
            chunk_chars: raw.chunk_chars.unwrap_or(DEFAULT_CHUNK_CHARS),
            chunk_delay_ms: raw.chunk_delay_ms.unwrap_or(0),
        };
        if defaults.chunk_chars == 0 {
            return Err((None, "`chunk_chars` must be at least 1".to_string()));
        }
        let prices = build_prices(raw.price, &models)?;
        let rules = raw
            .rules
            .into_iter()
            .enumerate()
            .map(|(index, raw_rule)| {
                let span = raw_rule.span();
                build_rule(raw_rule.into_inner(), defaults, &models).map_err(|(at, message)| {
                    (at.or(Some(span)), format!("rule {}: {message}", index + 1))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let fallback = build_fallback(raw.fallback, defaults)?;
        Ok(Self {
            models,
            prices,
            rules,
            fallback,
        })
    }

    /// The model ids this scenario serves; the first is the default.
    pub fn models(&self) -> &[String] {
        &self.models
    }

    /// The price a scenario gives served model `id`, if it gives one.
    pub fn price(&self, id: &str) -> Option<Price> {
        self.prices.get(id).copied()
    }

    /// Number of rules, so callers can size their firing counters.
    pub(crate) fn rule_count(&self) -> usize {
        self.rules.len()
    }

    /// Chooses the reply for a last message with `role` and `text`, whatever model was asked
    /// (rules that name a model never match). See [`Scenario::select_for`].
    pub fn select(&self, role: &str, text: &str, fired: &[u32]) -> Selection<'_> {
        self.select_for(None, role, text, fired)
    }

    /// Chooses the reply for a request to `model` whose last message has `role` and `text`.
    /// `fired[i]` is how often rule `i` already fired (missing entries count as zero); exhausted
    /// rules are skipped.
    pub(crate) fn select_for(
        &self,
        model: Option<&str>,
        role: &str,
        text: &str,
        fired: &[u32],
    ) -> Selection<'_> {
        let chosen = self.rules.iter().enumerate().find(|(index, rule)| {
            let exhausted = rule
                .times
                .is_some_and(|times| fired.get(*index).copied().unwrap_or(0) >= times);
            !exhausted && rule.matches(model, role, text)
        });
        match chosen {
            Some((index, rule)) => Selection {
                rule: Some(index),
                reply: &rule.reply,
            },
            None => Selection {
                rule: None,
                reply: &self.fallback,
            },
        }
    }
}

impl Scenario {
    /// `arguments` with each `${1}` / `${name}` replaced by that capture group of rule `rule`'s
    /// `when` over `text`, escaped for a JSON string. Unbraced `$` is left alone (shell commands
    /// in arguments use it), as is a group that did not match.
    pub(crate) fn expand_arguments(
        &self,
        rule: Option<usize>,
        text: &str,
        arguments: &str,
    ) -> String {
        let captures = rule
            .and_then(|index| self.rules.get(index))
            .and_then(|rule| rule.when.as_ref())
            .filter(|_| arguments.contains("${"))
            .and_then(|regex| regex.captures(text));
        let Some(captures) = captures else {
            return arguments.to_string();
        };
        let mut out = String::with_capacity(arguments.len());
        let mut rest = arguments;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                out.push_str(&rest[start..]);
                return out;
            };
            let key = &after[..end];
            let group = match key.parse::<usize>() {
                Ok(index) => captures.get(index),
                Err(_) => captures.name(key),
            };
            match group {
                Some(group) => {
                    let quoted = Value::String(group.as_str().to_string()).to_string();
                    out.push_str(&quoted[1..quoted.len() - 1]);
                }
                None => out.push_str(&rest[start..start + 2 + end + 1]),
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        out
    }
}

impl Rule {
    fn matches(&self, model: Option<&str>, role: &str, text: &str) -> bool {
        let role_ok = self.role.is_none_or(|wanted| wanted.as_str() == role);
        let model_ok = self
            .model
            .as_deref()
            .is_none_or(|wanted| model == Some(wanted));
        role_ok && model_ok && self.when.as_ref().is_none_or(|regex| regex.is_match(text))
    }
}

impl Role {
    /// The role as it appears in OpenAI chat messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// The text a rule's `when` is matched against: a string `content`, or the `text` of every text
/// part of an array `content` joined by newlines. Anything else (images, null) contributes nothing.
pub fn message_text(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

// --- parsing helpers -------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    model: Spanned<OneOrMany>,
    chunk_chars: Option<usize>,
    chunk_delay_ms: Option<u64>,
    #[serde(default)]
    price: BTreeMap<String, Spanned<Price>>,
    #[serde(default, rename = "rule")]
    rules: Vec<Spanned<RawRule>>,
    fallback: Option<Spanned<RawRule>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// A rule as written; `[fallback]` shares the shape and is checked to leave the matching keys out.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    when: Option<Spanned<String>>,
    role: Option<Role>,
    model: Option<Spanned<String>>,
    times: Option<u32>,
    reply: Option<String>,
    tool_calls: Option<Spanned<Vec<RawToolCall>>>,
    error: Option<Spanned<RawError>>,
    delay_ms: Option<u64>,
    chunk_chars: Option<Spanned<usize>>,
    chunk_delay_ms: Option<u64>,
    #[serde(default)]
    usage: UsageSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToolCall {
    id: Option<String>,
    name: String,
    #[serde(default = "empty_object")]
    arguments: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawError {
    #[serde(default = "default_error_status")]
    status: u16,
    message: String,
}

/// A validation failure: where (if more precise than the whole rule) and what.
type Problem = (Option<Range<usize>>, String);

/// The served model ids (`model`, one or a list), none empty.
fn served_models(model: &Spanned<OneOrMany>) -> Result<Vec<String>, Problem> {
    let models = match model.get_ref() {
        OneOrMany::One(id) => vec![id.clone()],
        OneOrMany::Many(ids) => ids.clone(),
    };
    if models.is_empty() || models.iter().any(|id| id.trim().is_empty()) {
        return Err((
            Some(model.span()),
            "`model` needs at least one non-empty model id".to_string(),
        ));
    }
    Ok(models)
}

/// The `[price.<id>]` tables: each for a served model, every part a finite price of 0 or more.
fn build_prices(
    raw: BTreeMap<String, Spanned<Price>>,
    models: &[String],
) -> Result<BTreeMap<String, Price>, Problem> {
    let mut prices = BTreeMap::new();
    for (id, price) in raw {
        let (span, price) = (price.span(), price.into_inner());
        if !models.contains(&id) {
            return Err((
                Some(span),
                format!("[price.{id}]: `{id}` is not a served model (`model` lists them)"),
            ));
        }
        let parts = [
            price.input,
            price.output,
            price.cache_read,
            price.cache_write,
        ];
        if parts.iter().any(|part| !part.is_finite() || *part < 0.0) {
            return Err((
                Some(span),
                format!("[price.{id}]: prices are dollars per million tokens, 0 or more"),
            ));
        }
        prices.insert(id, price);
    }
    Ok(prices)
}

/// The `[fallback]` reply (it takes none of a rule's matching keys), or the built-in one that
/// says no rule matched.
fn build_fallback(raw: Option<Spanned<RawRule>>, defaults: Pacing) -> Result<Reply, Problem> {
    let Some(raw_fallback) = raw else {
        return Ok(Reply {
            outcome: Outcome::Answer {
                text: "(scripted model: no rule of this scenario matches the last message)"
                    .to_string(),
                tool_calls: Vec::new(),
            },
            pacing: defaults,
            usage: UsageSpec::default(),
        });
    };
    let span = raw_fallback.span();
    let raw_fallback = raw_fallback.into_inner();
    if raw_fallback.when.is_some()
        || raw_fallback.role.is_some()
        || raw_fallback.model.is_some()
        || raw_fallback.times.is_some()
    {
        return Err((
            Some(span),
            "[fallback] takes no `when`, `role`, `model` or `times`; it answers whatever no rule matched"
                .to_string(),
        ));
    }
    build_reply(raw_fallback, defaults)
        .map_err(|(at, message)| (at.or(Some(span)), format!("[fallback]: {message}")))
}

fn build_rule(raw: RawRule, defaults: Pacing, models: &[String]) -> Result<Rule, Problem> {
    let when = match &raw.when {
        Some(pattern) => Some(Regex::new(pattern.get_ref()).map_err(|err| {
            let message = format!("`when` is not a valid regex: {err}");
            (Some(pattern.span()), message)
        })?),
        None => None,
    };
    if let Some(model) = raw.model.as_ref().filter(|m| !models.contains(m.get_ref())) {
        let (id, served) = (model.get_ref(), models.join(", "));
        let message = format!("`model = {id:?}` is not a served model (serves: {served})");
        return Err((Some(model.span()), message));
    }
    if raw.times == Some(0) {
        let message = "`times = 0` would never fire; remove the rule instead";
        return Err((None, message.to_string()));
    }
    Ok(Rule {
        when,
        role: raw.role,
        model: raw.model.clone().map(Spanned::into_inner),
        times: raw.times,
        reply: build_reply(raw, defaults)?,
    })
}

fn build_reply(raw: RawRule, defaults: Pacing) -> Result<Reply, Problem> {
    if let Some(chars) = raw
        .chunk_chars
        .as_ref()
        .filter(|chars| *chars.get_ref() == 0)
    {
        let message = "`chunk_chars` must be at least 1";
        return Err((Some(chars.span()), message.to_string()));
    }
    let pacing = Pacing {
        delay_ms: raw.delay_ms.unwrap_or(defaults.delay_ms),
        chunk_chars: raw
            .chunk_chars
            .map_or(defaults.chunk_chars, Spanned::into_inner),
        chunk_delay_ms: raw.chunk_delay_ms.unwrap_or(defaults.chunk_delay_ms),
    };
    let outcome = match (raw.error, raw.reply, raw.tool_calls) {
        (Some(error), None, None) => {
            let (span, error) = (error.span(), error.into_inner());
            if !(400..=599).contains(&error.status) {
                let status = error.status;
                let message =
                    format!("`error.status` must be an HTTP error status (400-599), not {status}");
                return Err((Some(span), message));
            }
            Outcome::Fail {
                status: error.status,
                message: error.message,
            }
        }
        (Some(error), _, _) => {
            let message = "`error` cannot be combined with `reply` or `tool_calls`";
            return Err((Some(error.span()), message.to_string()));
        }
        (None, None, None) => {
            return Err((None, "needs `reply`, `tool_calls` or `error`".to_string()));
        }
        (None, text, tool_calls) => {
            let span = tool_calls.as_ref().map(Spanned::span);
            let tool_calls = (tool_calls
                .map(Spanned::into_inner)
                .unwrap_or_default()
                .into_iter())
            .map(build_tool_call)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|message| (span, message))?;
            Outcome::Answer {
                text: text.unwrap_or_default(),
                tool_calls,
            }
        }
    };
    Ok(Reply {
        outcome,
        pacing,
        usage: raw.usage,
    })
}

fn build_tool_call(raw: RawToolCall) -> Result<ToolCall, String> {
    if raw.name.trim().is_empty() {
        return Err("a tool call needs a non-empty `name`".to_string());
    }
    let arguments = match raw.arguments {
        // A string is sent as written, so scenarios can script malformed arguments too.
        Value::String(verbatim) => verbatim,
        value @ Value::Object(_) => value.to_string(),
        other => {
            return Err(format!(
                "tool call `{}`: `arguments` must be a table or a string, not {other}",
                raw.name
            ));
        }
    };
    Ok(ToolCall {
        id: raw.id,
        name: raw.name,
        arguments,
    })
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

fn default_error_status() -> u16 {
    500
}

/// The keys this parser takes that `doc` does not mention, as `table.key`. A key counts as
/// mentioned when `doc` shows it as `` `key` ``, as a table header (`[key`, `[[key]]`) or as an
/// inline-table entry (`{ key = `, `, key = `). The parser is asked for its keys: each table is
/// given an unknown one, and serde's refusal lists the ones it expects.
#[cfg(test)]
pub(crate) fn undocumented_keys(doc: &str) -> Vec<String> {
    const PROBES: [(&str, &str); 6] = [
        ("scenario", "flavour = 1\nmodel = \"m\"\n"),
        (
            "price",
            "model = \"m\"\n[price.m]\ninput = 1\noutput = 1\nflavour = 1\n",
        ),
        ("rule", "model = \"m\"\n[[rule]]\nflavour = 1\n"),
        (
            "tool_calls",
            "model = \"m\"\n[[rule]]\ntool_calls = [{ name = \"x\", flavour = 1 }]\n",
        ),
        (
            "error",
            "model = \"m\"\n[[rule]]\nerror = { message = \"e\", flavour = 1 }\n",
        ),
        (
            "usage",
            "model = \"m\"\n[[rule]]\nreply = \"x\"\nusage = { flavour = 1 }\n",
        ),
    ];
    let mut missing = Vec::new();
    for (table, probe) in PROBES {
        let message = match Scenario::from_toml_str(probe, "probe") {
            Err(err) => err.to_string(),
            Ok(_) => panic!("the parser took an unknown key in [{table}]"),
        };
        let expected = message
            .split_once("expected")
            .map(|(_, keys)| keys)
            .unwrap_or_else(|| panic!("no key list for [{table}] in {message:?}"));
        let keys: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
        assert!(keys.len() >= 2, "[{table}]: {message:?}");
        for key in keys {
            let shown = [
                format!("`{key}`"),
                format!("[{key}"),
                format!("{{ {key} = "),
                format!(", {key} = "),
            ];
            if !shown.iter().any(|form| doc.contains(form.as_str())) {
                missing.push(format!("{table}.{key}"));
            }
        }
    }
    missing
}

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|byte| **byte == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_table::check_table;

    #[test]
    fn tool_call_arguments_take_capture_groups() {
        let scenario = Scenario::from_toml_str(
            r#"
model = "m"
[[rule]]
when = 'run (?P<id>h[0-9a-z-]+) asks "(.*)"'
tool_calls = [{ name = "spawn_helper", arguments = { action = "reply", id = "${id}", message = "re: ${2} ${9} $HOME" } }]
"#,
            "t",
        )
        .unwrap();
        let text = r#"run h1a-2-3 asks "a \ b""#;
        let selection = scenario.select("user", text, &[]);
        let Outcome::Answer { tool_calls, .. } = &selection.reply.outcome else {
            panic!("not an answer")
        };
        let expanded = scenario.expand_arguments(selection.rule, text, &tool_calls[0].arguments);
        let args: Value = serde_json::from_str(&expanded).unwrap();
        assert_eq!(args["id"], "h1a-2-3");
        assert_eq!(args["message"], "re: a \\ b ${9} $HOME");
        // No rule, no expansion.
        assert_eq!(scenario.expand_arguments(None, text, "${id}"), "${id}");
    }
    use serde_json::json;

    const TWO_RULES: &str = r#"
model = ["m1", "m2"]
chunk_chars = 4

[[rule]]
when = "(?i)hello"
role = "user"
reply = "hi"
times = 1

[[rule]]
role = "tool"
tool_calls = [{ name = "bash", arguments = { command = "ls" } }, { id = "x", name = "read", arguments = "{bad" }]
chunk_chars = 2

[fallback]
error = { status = 503, message = "nothing matched" }
"#;

    fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::from_toml_str(text, "test.toml")
    }

    #[test]
    fn builtin_demo_parses_and_serves_a_model() -> anyhow::Result<()> {
        let scenario = Scenario::builtin_demo()?;
        assert_eq!(scenario.models(), ["scripted-demo"]);
        Ok(())
    }

    #[test]
    fn builtin_demo_routes_the_prompts_it_advertises() -> anyhow::Result<()> {
        let demo = Scenario::builtin_demo()?;
        let bash_ls = vec![ToolCall {
            id: None,
            name: "bash".to_string(),
            arguments: r#"{"command":"ls -la"}"#.to_string(),
        }];
        let call = |name: &str| -> Vec<ToolCall> {
            match &demo.select("user", name, &[]).reply.outcome {
                Outcome::Answer { tool_calls, .. } => tool_calls.clone(),
                _ => Vec::new(),
            }
        };
        let bg_run = call("start a background task");
        assert_eq!(bg_run.first().map(|c| c.name.as_str()), Some("bg_run"));
        let helper = call("ask a helper");
        assert_eq!(
            helper.first().map(|c| c.name.as_str()),
            Some("spawn_helper")
        );
        // (role, last message text, a fragment of the reply text, expected tool calls)
        let cases: &[(&str, &str, &str, &[ToolCall])] = &[
            ("user", "hello", "Press F1", &[]),
            ("user", "Hi there!", "scripted demo", &[]),
            ("user", "list files", "`ls -la`", &bash_ls),
            ("user", "please show the files here", "`ls -la`", &bash_ls),
            ("user", "can you run a command?", "`ls -la`", &bash_ls),
            ("user", "show me markdown", "```rust", &[]),
            ("user", "render a table", "| Key |", &[]),
            (
                "tool",
                "total 8\ndrwxr-xr-x 2 me me 4096 .",
                "That listing came from",
                &[],
            ),
            (
                "tool",
                "bash: ls: command not found",
                "The tool finished",
                &[],
            ),
            ("user", "which one?", "only knows a few", &[]), // "hi" inside a word is no greeting
            ("user", "what can you do?", "`list files`", &[]),
            ("user", "start a background task", "`bg_run`", &bg_run),
            (
                "tool",
                "Started bg-1a2b3c (demo countdown)",
                "Shift+Down",
                &[],
            ),
            (
                "custom",
                "<background-task-notification>\n  <task-id>bg-1a2b3c</task-id>\n  LIFTOFF",
                "woke me up",
                &[],
            ),
            ("user", "ask a helper", "helper agent", &helper),
            (
                "user",
                "DEMO-HELPER-TASK: look around this project",
                "second Pi",
                &[],
            ),
            (
                "tool",
                "DEMO-HELPER-ANSWER: I am a second Pi",
                "Shift+Down",
                &[],
            ),
        ];
        for (role, text, fragment, calls) in cases {
            match &demo.select(role, text, &[]).reply.outcome {
                Outcome::Answer {
                    text: reply,
                    tool_calls,
                } => {
                    assert!(
                        reply.contains(fragment),
                        "{role} {text:?}: {reply:?} lacks {fragment:?}"
                    );
                    assert_eq!(tool_calls, calls, "{role} {text:?}");
                }
                other => panic!("{role} {text:?}: the demo never fails, got {other:?}"),
            }
        }
        Ok(())
    }

    #[test]
    fn select_tries_rules_in_order_and_honours_role_and_times() -> anyhow::Result<()> {
        let scenario = parse(TWO_RULES)?;
        assert_eq!(scenario.models(), ["m1", "m2"]);
        // (role, text, fired counts, expected rule)
        let cases: &[(&str, &str, &[u32], Option<usize>)] = &[
            ("user", "Hello there", &[], Some(0)),
            ("user", "HELLO", &[0, 0], Some(0)),
            ("user", "hello", &[1, 0], None), // rule 0 fired its one time
            ("assistant", "hello", &[], None), // role mismatch
            ("tool", "anything at all", &[], Some(1)),
            ("tool", "hello", &[], Some(1)), // rule 0 wants role user
            ("user", "bye", &[], None),
        ];
        for (role, text, fired, expected) in cases {
            assert_eq!(
                scenario.select(role, text, fired).rule,
                *expected,
                "role={role} text={text} fired={fired:?}"
            );
        }
        Ok(())
    }

    #[test]
    fn replies_carry_text_tool_calls_errors_and_pacing() -> anyhow::Result<()> {
        let scenario = parse(TWO_RULES)?;
        let hello = scenario.select("user", "hello", &[]).reply;
        let expected = Outcome::Answer {
            text: "hi".to_string(),
            tool_calls: vec![],
        };
        assert_eq!(hello.outcome, expected);
        assert_eq!(hello.pacing.chunk_chars, 4, "scenario default applies");

        let tool = scenario.select("tool", "", &[]).reply;
        assert_eq!(tool.pacing.chunk_chars, 2, "rule overrides the default");
        let expected_calls = vec![
            ToolCall {
                id: None,
                name: "bash".to_string(),
                arguments: r#"{"command":"ls"}"#.to_string(),
            },
            ToolCall {
                id: Some("x".to_string()),
                name: "read".to_string(),
                arguments: "{bad".to_string(), // strings are sent verbatim
            },
        ];
        let expected = Outcome::Answer {
            text: String::new(),
            tool_calls: expected_calls,
        };
        assert_eq!(tool.outcome, expected);

        let expected = Outcome::Fail {
            status: 503,
            message: "nothing matched".to_string(),
        };
        assert_eq!(scenario.select("user", "bye", &[]).reply.outcome, expected);
        Ok(())
    }

    #[test]
    fn rules_may_name_the_model_asked_and_models_may_have_prices() -> anyhow::Result<()> {
        let scenario = parse(
            r#"
model = ["dear", "cheap"]
[price.dear]
input = 15
output = 75
[price.cheap]
input = 0.25
output = 1.25
cache_read = 0.03

[[rule]]
model = "cheap"
when = "code word"
reply = "on the cheap one"

[[rule]]
when = "code word"
reply = "on any model"
"#,
        )?;
        // (model asked, expected rule)
        let cases: &[(Option<&str>, Option<usize>)] = &[
            (Some("cheap"), Some(0)),
            (Some("dear"), Some(1)),
            (None, Some(1)),
        ];
        for (model, expected) in cases {
            let chosen = scenario
                .select_for(*model, "user", "the code word?", &[])
                .rule;
            assert_eq!(chosen, *expected, "{model:?}");
        }
        let cheap = scenario.price("cheap").unwrap();
        assert_eq!(
            (cheap.input, cheap.output, cheap.cache_read),
            (0.25, 1.25, 0.03)
        );
        assert_eq!(scenario.price("dear").map(|p| p.cache_write), Some(0.0));
        assert_eq!(parse("model = \"m\"\n")?.price("m"), None);
        Ok(())
    }

    #[test]
    fn missing_fallback_answers_with_a_hint() -> anyhow::Result<()> {
        let scenario = parse("model = \"m\"\n")?;
        let outcome = &scenario.select("user", "x", &[]).reply.outcome;
        assert!(
            matches!(outcome, Outcome::Answer { text, .. } if text.contains("no rule")),
            "{outcome:?}"
        );
        Ok(())
    }

    #[test]
    fn invalid_scenarios_name_origin_line_and_problem() {
        // (scenario text, expected line, expected fragment of the message)
        let cases: &[(&str, usize, &str)] = &[
            (
                "model = \"m\"\n[[rule]]\nwhen = \"(unclosed\"\nreply = \"x\"\n",
                3,
                "not a valid regex",
            ),
            (
                "model = \"m\"\n\n[[rule]]\nwhen = \"x\"\n",
                3,
                "needs `reply`, `tool_calls` or `error`",
            ),
            (
                "model = \"m\"\n[[rule]]\nreply = \"x\"\nerror = { message = \"e\" }\n",
                4,
                "cannot be combined",
            ),
            (
                "model = \"m\"\n[[rule]]\nerror = { status = 200, message = \"e\" }\n",
                3,
                "400-599",
            ),
            (
                "model = \"m\"\n[[rule]]\nreply = \"x\"\nrole = \"robot\"\n",
                4,
                "robot",
            ),
            (
                "model = \"m\"\n[[rule]]\nreply = \"x\"\nflavour = 1\n",
                4,
                "flavour",
            ),
            (
                "model = \"m\"\n[[rule]]\nreply = \"x\"\nchunk_chars = 0\n",
                4,
                "at least 1",
            ),
            (
                "model = \"m\"\n[[rule]]\nreply = \"x\"\ntimes = 0\n",
                2,
                "never fire",
            ),
            (
                "model = \"m\"\n[fallback]\nwhen = \"x\"\nreply = \"y\"\n",
                2,
                "[fallback] takes no",
            ),
            (
                "model = \"m\"\n[[rule]]\nmodel = \"other\"\nreply = \"x\"\n",
                3,
                "not a served model",
            ),
            (
                "model = \"m\"\n[price.other]\ninput = 1\noutput = 1\n",
                2,
                "not a served model",
            ),
            (
                "model = \"m\"\n[price.m]\ninput = -1\noutput = 1\n",
                2,
                "0 or more",
            ),
            (
                "model = \"m\"\n[fallback]\nmodel = \"m\"\nreply = \"y\"\n",
                2,
                "[fallback] takes no",
            ),
            ("model = []\n", 1, "at least one"),
            ("reply = \"x\"\n", 1, "model"),
            (
                "model = \"m\"\n[[rule]]\ntool_calls = [{ name = \"bash\", arguments = 3 }]\n",
                3,
                "must be a table or a string",
            ),
            ("model = \"m\"\nthis is not toml\n", 2, ""),
        ];
        for (text, line, fragment) in cases {
            match parse(text) {
                Err(ScenarioError::Invalid {
                    origin,
                    line: got_line,
                    message,
                }) => {
                    assert_eq!(origin, "test.toml");
                    assert_eq!(got_line, *line, "line for {text:?}: {message}");
                    assert!(message.contains(fragment), "{message:?} lacks {fragment:?}");
                }
                other => panic!("{text:?} should be invalid, got {other:?}"),
            }
        }
    }

    /// The README's section on scenario files.
    fn readme_section() -> &'static str {
        let readme = include_str!("../../README.md");
        let start = readme
            .find("## Scenario files")
            .expect("the README has a section on scenario files");
        let rest = &readme[start..];
        let end = rest[3..].find("\n## ").map_or(rest.len(), |at| at + 3);
        &rest[..end]
    }

    #[test]
    fn the_readme_names_every_key_of_the_format() {
        assert_eq!(undocumented_keys(readme_section()), Vec::<String>::new());
        // The check can fail: a doc without the rules' keys misses them.
        let missing = undocumented_keys("`model` `chunk_chars`");
        assert!(missing.contains(&"rule.when".to_owned()), "{missing:?}");
        assert!(
            missing.contains(&"usage.prompt_tokens".to_owned()),
            "{missing:?}"
        );
    }

    #[test]
    fn the_readme_example_loads_and_answers_as_the_readme_says() -> anyhow::Result<()> {
        let section = readme_section();
        let example = section
            .split_once("<!-- scenario example")
            .and_then(|(_, rest)| rest.split_once("```toml\n"))
            .and_then(|(_, rest)| rest.split_once("\n```"))
            .map(|(toml, _)| toml)
            .expect("the README's example is a ```toml block after its marker");
        let scenario = Scenario::from_toml_str(example, "README.md")?;
        assert_eq!(scenario.models(), ["big", "small"]);
        let big = scenario.price("big").unwrap();
        assert_eq!((big.input, big.output), (15.0, 75.0));
        assert_eq!(scenario.price("small"), None);
        // "runs `ls` on the directory you name"
        let listing = scenario.select("user", "List src", &[]);
        let Outcome::Answer { tool_calls, .. } = &listing.reply.outcome else {
            panic!("not an answer: {listing:?}")
        };
        let arguments =
            scenario.expand_arguments(listing.rule, "List src", &tool_calls[0].arguments);
        assert_eq!(
            (tool_calls[0].name.as_str(), arguments.as_str()),
            ("bash", r#"{"command":"ls -la src"}"#)
        );
        assert_eq!(listing.reply.pacing.chunk_chars, 16);
        // "sums up the tool's answer"
        let summary = scenario.select("tool", "total 8", &[]).reply;
        assert!(
            matches!(&summary.outcome, Outcome::Answer { text, .. } if text.starts_with("That is the listing"))
        );
        assert_eq!(summary.usage.prompt_tokens, Some(1200));
        // "rate-limits the dear model once"
        let limited = scenario.select_for(Some("big"), "user", "hit the rate limit", &[]);
        assert_eq!(
            limited.reply.outcome,
            Outcome::Fail {
                status: 429,
                message: "Rate limit reached".to_owned()
            }
        );
        let fired = [0, 0, 1];
        let again = scenario.select_for(Some("big"), "user", "hit the rate limit", &fired);
        assert_eq!(again.rule, None, "once");
        assert_eq!(again.reply.pacing.delay_ms, 200);
        let cheap = scenario.select_for(Some("small"), "user", "hit the rate limit", &[]);
        assert_eq!(cheap.rule, None, "only the dear model");
        Ok(())
    }

    #[test]
    fn from_file_names_the_path() {
        let missing = Path::new("/nonexistent/unipi-scenario.toml");
        let err = Scenario::from_file(missing)
            .map(|_| ())
            .err()
            .map(|err| err.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|err| err.contains("/nonexistent/unipi-scenario.toml")),
            "{err:?}"
        );
    }

    #[test]
    fn message_text_reads_strings_and_text_parts() {
        let cases = [
            (json!({"role": "user", "content": "plain"}), "plain"),
            (
                json!({"role": "user", "content": [
                    {"type": "text", "text": "a"},
                    {"type": "image_url", "image_url": {"url": "data:"}},
                    {"type": "text", "text": "b"}
                ]}),
                "a\nb",
            ),
            (
                json!({"role": "assistant", "content": null, "tool_calls": []}),
                "",
            ),
            (
                json!({"role": "tool", "tool_call_id": "c", "content": "out"}),
                "out",
            ),
        ];
        check_table(cases, message_text);
    }
}

//! Agent types: what kind of helper a `spawn_helper` call asks for. Two are built in — `explore`
//! (read-only: read, bash, grep, find, ls; never edit or write) and `work` (every built-in tool) —
//! and users add their own as Markdown files in `~/.unipi/config/agents/` and
//! `<workspace>/.unipi/config/agents/` (the file name is the type name; the workspace wins). A
//! file is front matter between `---` lines and a body that becomes the system prompt. The front
//! matter is a small YAML subset parsed here (`key: value`, `key: [a, b]`, `key: a, b`, and
//! `- item` lines under an empty key), because no YAML crate is a dependency and the keys are few.
//! Unknown keys are errors, not ignored: a misspelt `disallowed_tools` must not silently hand a
//! helper the tools it was meant to lose. A bad file is reported with its path and line and
//! skipped; the other types still load.
//!
//! [`AgentType::pi_rpc_args`] turns a type into the child's `pi --mode rpc` arguments (the task
//! then goes in as an RPC `prompt` command) and [`AgentType::pi_args`] into `pi --mode json -p`
//! arguments (the runner's fallback attempt), both using only flags both Pi lines (1.x and 0.7x)
//! accept: `--model`, `--thinking`, `--tools` (a plain allow-list, which replaces the default
//! selection in both), `--no-tools`, `--system-prompt`, `--append-system-prompt`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::error::{BadValue, ConfigError};
use crate::text::unquote;

/// Pi's built-in tools, in the order Pi lists them.
pub(crate) const BUILTIN_TOOLS: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

/// Thinking levels Pi accepts on both lines.
pub(crate) const THINKING_LEVELS: [&str; 6] = ["off", "minimal", "low", "medium", "high", "xhigh"];

/// How the type's system prompt combines with Pi's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptMode {
    /// Added after Pi's default prompt (`--append-system-prompt`).
    Append,
    /// Used instead of Pi's default prompt (`--system-prompt`).
    Replace,
}

/// Where a type was defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSource {
    Builtin,
    Home(PathBuf),
    Workspace(PathBuf),
    /// Switched off in this `subagents.json`.
    Switched(PathBuf),
}

impl std::fmt::Display for AgentSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Builtin => f.write_str("built in"),
            Self::Home(path) | Self::Workspace(path) | Self::Switched(path) => {
                write!(f, "{}", path.display())
            }
        }
    }
}

/// One kind of helper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentType {
    pub name: String,
    pub description: String,
    /// The tools it may be offered, before `disallowed_tools` is taken away.
    pub tools: Vec<String>,
    pub disallowed_tools: Vec<String>,
    /// `provider/model` or a name Pi resolves; `None` inherits the caller's choice.
    pub model: Option<String>,
    pub thinking: Option<String>,
    pub max_turns: Option<u32>,
    pub prompt_mode: PromptMode,
    pub run_in_background: bool,
    pub enabled: bool,
    pub system_prompt: String,
    pub source: AgentSource,
}

/// Why a type cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    #[error(
        "unknown helper type {name:?}; known types: {} (agent files are read when the \
         workbench starts: one added since needs a restart)",
        known.join(", ")
    )]
    Unknown { name: String, known: Vec<String> },
    #[error("helper type {name:?} is disabled (enabled: false in {defined_in})")]
    Disabled {
        name: String,
        defined_in: AgentSource,
    },
}

/// The types available in one workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentCatalog {
    agents: BTreeMap<String, AgentType>,
}

impl AgentCatalog {
    /// Only the built-in types.
    pub fn builtin() -> Self {
        let agents = [explore(), work()]
            .into_iter()
            .map(|agent| (agent.name.clone(), agent))
            .collect();
        Self { agents }
    }

    /// The enabled type called `name`.
    pub fn resolve(&self, name: &str) -> Result<AgentType, AgentError> {
        match self.agents.get(name) {
            Some(agent) if agent.enabled => Ok(agent.clone()),
            Some(agent) => Err(AgentError::Disabled {
                name: name.to_string(),
                defined_in: agent.source.clone(),
            }),
            None => Err(AgentError::Unknown {
                name: name.to_string(),
                known: self
                    .agents
                    .values()
                    .filter(|agent| agent.enabled)
                    .map(|agent| agent.name.clone())
                    .collect(),
            }),
        }
    }

    /// Every type, enabled or not, by name.
    pub fn iter(&self) -> impl Iterator<Item = &AgentType> {
        self.agents.values()
    }

    /// `subagents.json`'s `types.<name>.enabled` (Unipi's): switches the types it names, a type
    /// switched off naming `file` in its refusal; names of no type are passed over, as in Unipi.
    pub fn switch(&mut self, types: &BTreeMap<String, (bool, PathBuf)>) {
        for (name, (enabled, file)) in types {
            if let Some(agent) = self.agents.get_mut(name) {
                agent.enabled = *enabled;
                if !enabled {
                    agent.source = AgentSource::Switched(file.clone());
                }
            }
        }
    }

    /// Adds or replaces a type (a later definition wins).
    pub fn insert(&mut self, agent: AgentType) {
        self.agents.insert(agent.name.clone(), agent);
    }
}

/// The built-in types, then `<home>/.unipi/config/agents/*.md`, then
/// `<workspace>/.unipi/config/agents/*.md`, each replacing a type of the same name. Files are
/// read in name order so the result does not depend on the directory's order.
pub(crate) fn load_agents(
    home: Option<&Path>,
    workspace: &Path,
) -> (AgentCatalog, Vec<ConfigError>) {
    let mut catalog = AgentCatalog::builtin();
    let mut errors = Vec::new();
    let dirs = home
        .map(|home| {
            (
                agents_dir(home),
                AgentSource::Home as fn(PathBuf) -> AgentSource,
            )
        })
        .into_iter()
        .chain([(
            agents_dir(workspace),
            AgentSource::Workspace as fn(PathBuf) -> AgentSource,
        )]);
    for (dir, source) in dirs {
        for path in agent_files(&dir, &mut errors) {
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(err) => {
                    errors.push(ConfigError::Unreadable {
                        path,
                        message: err.to_string(),
                    });
                    continue;
                }
            };
            match parse_agent_file(&path, &text, source(path.clone())) {
                Ok(agent) => catalog.insert(agent),
                Err(err) => errors.push(err),
            }
        }
    }
    (catalog, errors)
}

/// `<root>/.unipi/config/agents`.
pub(crate) fn agents_dir(root: &Path) -> PathBuf {
    root.join(".unipi").join("config").join("agents")
}

/// Parses one agent file; the type is named after the file (without `.md`).
pub(crate) fn parse_agent_file(
    path: &Path,
    text: &str,
    source: AgentSource,
) -> Result<AgentType, ConfigError> {
    let name = path
        .file_stem()
        .and_then(|stem| stem.to_str())
        .unwrap_or_default()
        .to_string();
    if !is_valid_name(&name) {
        return Err(ConfigError::at(
            path,
            text,
            0,
            format!(
                "the file name {name:?} is not a valid helper type name (letters, digits, '-', '_')"
            ),
        ));
    }
    let (entries, body) = split_front_matter(path, text)?;
    let mut agent = AgentType {
        description: format!("{name} agent"),
        name,
        tools: BUILTIN_TOOLS.map(str::to_string).to_vec(),
        disallowed_tools: Vec::new(),
        model: None,
        thinking: None,
        max_turns: None,
        // As in the original's custom agents: the file's body is the whole prompt by default.
        prompt_mode: PromptMode::Replace,
        run_in_background: false,
        enabled: true,
        system_prompt: body.trim().to_string(),
        source,
    };
    for entry in entries {
        apply_entry(&mut agent, &entry).map_err(|message| {
            ConfigError::at(
                path,
                text,
                entry.offset,
                format!("{}: {message}", entry.key),
            )
        })?;
    }
    Ok(agent)
}

impl AgentType {
    /// The tools the child is offered: `tools` without `disallowed_tools`.
    pub(crate) fn allowed_tools(&self) -> Vec<String> {
        self.tools
            .iter()
            .filter(|tool| !self.disallowed_tools.contains(tool))
            .cloned()
            .collect()
    }

    /// Arguments for `pi` running this type on `prompt` in JSON print mode. The caller adds what
    /// belongs to the launch rather than the type (session file, extensions, offline flags).
    pub fn pi_args(&self, prompt: &str) -> Vec<String> {
        let mut args = vec!["--mode".to_string(), "json".to_string()];
        self.push_type_flags(&mut args);
        args.extend(["-p".to_string(), positional_prompt(prompt)]);
        args
    }

    /// Arguments for `pi` running this type in RPC mode: the same type flags as [`Self::pi_args`]
    /// and no message (RPC mode takes the task as a `prompt` command on stdin).
    pub(crate) fn pi_rpc_args(&self) -> Vec<String> {
        let mut args = vec!["--mode".to_string(), "rpc".to_string()];
        self.push_type_flags(&mut args);
        args
    }

    /// This type with `extra` added after its system prompt (a blank line between), e.g. the
    /// budget sentences. With no system prompt of its own, `extra` becomes it.
    pub(crate) fn with_prompt_appended(&self, extra: &str) -> AgentType {
        let system_prompt = match (self.system_prompt.is_empty(), extra.is_empty()) {
            (_, true) => self.system_prompt.clone(),
            (true, false) => extra.to_string(),
            (false, false) => format!("{}\n\n{extra}", self.system_prompt),
        };
        AgentType {
            system_prompt,
            ..self.clone()
        }
    }

    /// `--model`, `--thinking`, the tool selection and the system prompt flag.
    fn push_type_flags(&self, args: &mut Vec<String>) {
        if let Some(model) = &self.model {
            args.extend(["--model".to_string(), model.clone()]);
        }
        if let Some(thinking) = &self.thinking {
            args.extend(["--thinking".to_string(), thinking.clone()]);
        }
        let tools = self.allowed_tools();
        if tools.is_empty() {
            args.push("--no-tools".to_string());
        } else {
            args.extend(["--tools".to_string(), tools.join(",")]);
        }
        if !self.system_prompt.is_empty() {
            let flag = match self.prompt_mode {
                PromptMode::Append => "--append-system-prompt",
                PromptMode::Replace => "--system-prompt",
            };
            args.extend([flag.to_string(), self.system_prompt.clone()]);
        }
    }
}

/// A prompt Pi reads as the message, not as a flag or an `@file` argument: Pi 0.7x has no `--`
/// separator and takes the word after `-p` only when it starts with neither `-` nor `@`, so such
/// a prompt gets a leading space (the model does not care; the file-delivery path is the
/// runner's answer for prompts too long for argv).
fn positional_prompt(prompt: &str) -> String {
    if prompt.starts_with('-') || prompt.starts_with('@') {
        format!(" {prompt}")
    } else {
        prompt.to_string()
    }
}

/// A builtin type: Pi's tools as listed, appended to Pi's own prompt, in the foreground.
fn builtin(name: &str, description: &str, tools: &[&str], system_prompt: &str) -> AgentType {
    AgentType {
        name: name.to_string(),
        description: description.to_string(),
        tools: tools.iter().map(|tool| tool.to_string()).collect(),
        disallowed_tools: Vec::new(),
        model: None,
        thinking: None,
        max_turns: None,
        prompt_mode: PromptMode::Append,
        run_in_background: false,
        enabled: true,
        system_prompt: system_prompt.to_string(),
        source: AgentSource::Builtin,
    }
}

fn explore() -> AgentType {
    AgentType {
        disallowed_tools: vec!["edit".to_string(), "write".to_string()],
        ..builtin(
            "explore",
            "Read-only investigation: reads, searches and runs commands, never edits",
            &["read", "bash", "grep", "find", "ls"],
            "You are an explore agent. Read files, search code, and report findings. \
             Do NOT modify any files.",
        )
    }
}

fn work() -> AgentType {
    builtin(
        "work",
        "Implements changes with every built-in tool",
        &BUILTIN_TOOLS,
        "You are a worker agent. Implement changes, write code, and complete \
         tasks. Use the provided tools to make the requested modifications.",
    )
}

/// The `*.md` files in `dir`, sorted; a missing directory is the normal case.
fn agent_files(dir: &Path, errors: &mut Vec<ConfigError>) -> Vec<PathBuf> {
    match crate::sys::files_with_extension(dir, "md") {
        Ok(files) => files,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(err) => {
            errors.push(ConfigError::Unreadable {
                path: dir.to_owned(),
                message: err.to_string(),
            });
            Vec::new()
        }
    }
}

/// One `key: value` of the front matter, with list items gathered from `- item` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    key: String,
    value: Value,
    /// Byte offset of the key in the file, for errors.
    offset: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Scalar(String),
    List(Vec<String>),
}

/// The front-matter entries and the body. A file without front matter is all body.
fn split_front_matter<'a>(
    path: &Path,
    text: &'a str,
) -> Result<(Vec<Entry>, &'a str), ConfigError> {
    let text_start = text
        .strip_prefix('\u{feff}')
        .map_or(0, |_| '\u{feff}'.len_utf8());
    let mut lines = line_spans(text, text_start);
    let Some((first_start, first)) = lines.next() else {
        return Ok((Vec::new(), ""));
    };
    if first.trim_end() != "---" {
        return Ok((Vec::new(), &text[first_start..]));
    }
    let mut entries: Vec<Entry> = Vec::new();
    // `- item` lines extend the last entry only when its key had no value on its own line.
    let mut block_list_open = false;
    for (start, line) in lines {
        if line.trim_end() == "---" {
            let body_start = text[start..]
                .find('\n')
                .map_or(text.len(), |i| start + i + 1);
            return Ok((entries, &text[body_start..]));
        }
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if let Some(item) = trimmed.strip_prefix("- ") {
            match entries.last_mut() {
                Some(Entry {
                    value: Value::List(items),
                    ..
                }) if block_list_open => {
                    items.push(unquote(item.trim()).to_string());
                    continue;
                }
                _ => {
                    return Err(ConfigError::at(
                        path,
                        text,
                        start + indent,
                        "a list item must follow a key with an empty value (e.g. `tools:`)",
                    ));
                }
            }
        }
        let entry = parse_entry(path, text, start + indent, trimmed)?;
        block_list_open = entry.value == Value::List(Vec::new());
        entries.push(entry);
    }
    Err(ConfigError::at(
        path,
        text,
        text_start,
        "the front matter opened with `---` is never closed by a `---` line",
    ))
}

/// One `key: value` line of the front matter (at byte `offset` of `text`): a scalar, a `[a, b]`
/// list, or an empty value that `- item` lines may fill.
fn parse_entry(path: &Path, text: &str, offset: usize, line: &str) -> Result<Entry, ConfigError> {
    let Some((key, value)) = line.split_once(':') else {
        return Err(ConfigError::at(
            path,
            text,
            offset,
            format!("expected `key: value`, found {line:?}"),
        ));
    };
    let key = key.trim().to_string();
    let value = value.trim();
    let value = if value.is_empty() {
        Value::List(Vec::new())
    } else if let Some(inner) = value.strip_prefix('[') {
        let Some(inner) = inner.strip_suffix(']') else {
            return Err(ConfigError::at(
                path,
                text,
                offset,
                format!("{key}: a `[` list must end with `]` on the same line"),
            ));
        };
        Value::List(split_list(inner))
    } else {
        Value::Scalar(unquote(value).to_string())
    };
    Ok(Entry { key, value, offset })
}

/// Lines of `text` from byte `from`, each with its byte offset, without the LF (and CR).
fn line_spans(text: &str, from: usize) -> impl Iterator<Item = (usize, &str)> {
    let mut offset = from;
    text[from..].split_inclusive('\n').map(move |raw| {
        let start = offset;
        offset += raw.len();
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        (start, line.strip_suffix('\r').unwrap_or(line))
    })
}

fn apply_entry(agent: &mut AgentType, entry: &Entry) -> Result<(), BadValue> {
    match entry.key.as_str() {
        "tools" => agent.tools = tool_list(&entry.value)?,
        "disallowed_tools" | "disallowedTools" => agent.disallowed_tools = tool_list(&entry.value)?,
        "description" => agent.description = scalar(&entry.value)?.to_string(),
        "model" => agent.model = non_empty(scalar(&entry.value)?),
        "thinking" => {
            let level = scalar(&entry.value)?;
            if !THINKING_LEVELS.contains(&level) {
                return Err(BadValue(format!(
                    "expected one of {}, found {level:?}",
                    THINKING_LEVELS.join(", ")
                )));
            }
            agent.thinking = Some(level.to_string());
        }
        "max_turns" | "maxTurns" => {
            let text = scalar(&entry.value)?;
            match text.parse::<u32>() {
                Ok(turns) if turns > 0 => agent.max_turns = Some(turns),
                _ => {
                    return Err(BadValue(format!(
                        "expected a whole number of turns ≥ 1, found {text:?}"
                    )));
                }
            }
        }
        "prompt_mode" | "promptMode" => {
            agent.prompt_mode = match scalar(&entry.value)? {
                "append" => PromptMode::Append,
                "replace" => PromptMode::Replace,
                other => {
                    return Err(BadValue(format!(
                        "expected append or replace, found {other:?}"
                    )));
                }
            }
        }
        "run_in_background" | "runInBackground" => agent.run_in_background = boolean(&entry.value)?,
        "enabled" => agent.enabled = boolean(&entry.value)?,
        // Keys of the original's format that have no effect here; accepted so its files load.
        "name" | "display_name" | "displayName" | "extensions" | "skills" | "inherit_context"
        | "inheritContext" | "isolated" | "memory" => {}
        other => {
            return Err(BadValue(format!(
                "unknown key {other:?}; expected tools, disallowed_tools, model, thinking, \
                 max_turns, prompt_mode, run_in_background, enabled or description"
            )));
        }
    }
    Ok(())
}

fn scalar(value: &Value) -> Result<&str, BadValue> {
    match value {
        Value::Scalar(text) => Ok(text),
        Value::List(items) if items.is_empty() => Ok(""),
        Value::List(_) => Err(BadValue(
            "expected a single value, found a list".to_string(),
        )),
    }
}

fn boolean(value: &Value) -> Result<bool, BadValue> {
    match scalar(value)? {
        "true" | "yes" | "on" => Ok(true),
        "false" | "no" | "off" => Ok(false),
        other => Err(BadValue(format!("expected true or false, found {other:?}"))),
    }
}

fn tool_list(value: &Value) -> Result<Vec<String>, BadValue> {
    let items = match value {
        Value::Scalar(text) => split_list(text),
        Value::List(items) => items.clone(),
    };
    if let Some(bad) = items.iter().find(|item| !is_valid_tool_name(item)) {
        return Err(BadValue(format!(
            "{bad:?} is not a tool name (letters, digits, '_', '-', '.', '*')"
        )));
    }
    Ok(items)
}

fn split_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(|item| unquote(item.trim()).to_string())
        .filter(|item| !item.is_empty())
        .collect()
}

fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_string())
}

fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '*'))
}

#[cfg(test)]
// A panic is how a test reports failure; the workspace denies unwrap for non-test code.
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::config::error::assert_one_error_at;

    fn parse(text: &str) -> Result<AgentType, ConfigError> {
        parse_agent_file(
            Path::new("/cfg/reviewer.md"),
            text,
            AgentSource::Workspace(PathBuf::from("/cfg/reviewer.md")),
        )
    }

    fn write(root: &Path, name: &str, text: &str) {
        let dir = agents_dir(root);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn builtins_resolve_and_explore_never_edits() {
        let catalog = AgentCatalog::builtin();
        let explore = catalog.resolve("explore").unwrap();
        assert_eq!(
            explore.allowed_tools(),
            ["read", "bash", "grep", "find", "ls"]
        );
        let work = catalog.resolve("work").unwrap();
        assert_eq!(work.allowed_tools(), BUILTIN_TOOLS);
        let err = catalog.resolve("nope").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown helper type \"nope\"; known types: explore, work (agent files are read \
             when the workbench starts: one added since needs a restart)"
        );
    }

    /// A check on a parsed type, for the table below.
    type Check = fn(&AgentType) -> bool;

    #[test]
    fn front_matter_table() {
        let cases: [(&str, Check); 8] = [
            ("no front matter\nat all", |a| {
                a.system_prompt == "no front matter\nat all" && a.tools.len() == 7
            }),
            ("---\ntools: read, grep\n---\nBody.\n", |a| {
                a.tools == ["read", "grep"] && a.system_prompt == "Body."
            }),
            (
                "---\ntools: [read, \"ls\"]\ndisallowed_tools: [ls]\n---\n",
                |a| a.allowed_tools() == ["read"],
            ),
            ("---\ndisallowedTools: edit,write\n---\n", |a| {
                a.allowed_tools() == ["read", "bash", "grep", "find", "ls"]
            }),
            ("---\ntools:\n  - read\n  - bash\n---\nx", |a| {
                a.tools == ["read", "bash"]
            }),
            (
                "---\r\nmodel: anthropic/claude-x\r\nthinking: high\r\nmax_turns: 12\r\n---\r\nP\r\n",
                |a| {
                    a.model.as_deref() == Some("anthropic/claude-x")
                        && a.thinking.as_deref() == Some("high")
                        && a.max_turns == Some(12)
                        && a.system_prompt == "P"
                },
            ),
            (
                "---\nprompt_mode: append\nrun_in_background: true\nenabled: false\n\
                 description: 'Reviews diffs'\n# a comment\ndisplay_name: R\n---\n",
                |a| {
                    a.prompt_mode == PromptMode::Append
                        && a.run_in_background
                        && !a.enabled
                        && a.description == "Reviews diffs"
                },
            ),
            ("---\n---\n", |a| {
                a.prompt_mode == PromptMode::Replace
                    && a.description == "reviewer agent"
                    && a.name == "reviewer"
            }),
        ];
        for (text, check) in cases {
            let agent = parse(text).unwrap_or_else(|err| panic!("{text:?}: {err}"));
            assert!(check(&agent), "{text:?}: {agent:#?}");
        }
    }

    #[test]
    fn bad_files_name_file_and_line() {
        let cases = [
            (
                "---\ntools: read\n",
                "reviewer.md:1:1: the front matter opened",
            ),
            (
                "---\ntools: read\ndisalowed_tools: edit\n---\n",
                "reviewer.md:3:1: disalowed_tools: unknown key",
            ),
            (
                "---\nthinking: max\n---\n",
                "reviewer.md:2:1: thinking: expected one of off",
            ),
            (
                "---\nmax_turns: 0\n---\n",
                "reviewer.md:2:1: max_turns: expected a whole number",
            ),
            (
                "---\nenabled: maybe\n---\n",
                "reviewer.md:2:1: enabled: expected true or false",
            ),
            (
                "---\nprompt_mode: prepend\n---\n",
                "reviewer.md:2:1: prompt_mode: expected append or replace",
            ),
            (
                "---\n  just words\n---\n",
                "reviewer.md:2:3: expected `key: value`",
            ),
            (
                "---\ntools: [read, grep\n---\n",
                "reviewer.md:2:1: tools: a `[` list must end",
            ),
            (
                "---\ntools: read grep\n---\n",
                "reviewer.md:2:1: tools: \"read grep\" is not a tool name",
            ),
            (
                "---\n- read\n---\n",
                "reviewer.md:2:1: a list item must follow",
            ),
            (
                "---\nmodel: [a, b]\n---\n",
                "reviewer.md:2:1: model: expected a single value",
            ),
        ];
        for (text, want) in cases {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.starts_with("/cfg/"), "{text:?}: {err}");
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }

    #[test]
    fn workspace_wins_over_home_and_bad_files_are_reported_and_skipped() {
        let home = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        write(
            home.path(),
            "reviewer.md",
            "---\nmodel: home/model\n---\nHome prompt",
        );
        write(home.path(), "scout.md", "---\ntools: read\n---\nScout");
        write(
            workspace.path(),
            "reviewer.md",
            "---\nmodel: ws/model\n---\nWorkspace prompt",
        );
        write(workspace.path(), "broken.md", "---\nthinking: loud\n---\n");
        write(workspace.path(), "off.md", "---\nenabled: false\n---\n");
        write(workspace.path(), "notes.txt", "not an agent");
        // A workspace file may also switch a built-in off.
        write(workspace.path(), "work.md", "---\nenabled: false\n---\n");

        let (catalog, errors) = load_agents(Some(home.path()), workspace.path());
        let broken = agents_dir(workspace.path()).join("broken.md");
        assert_one_error_at(&errors, &broken, "2:1: thinking:");

        let reviewer = catalog.resolve("reviewer").unwrap();
        assert_eq!(reviewer.model.as_deref(), Some("ws/model"));
        assert_eq!(reviewer.system_prompt, "Workspace prompt");
        assert!(matches!(reviewer.source, AgentSource::Workspace(_)));
        assert_eq!(catalog.resolve("scout").unwrap().tools, ["read"]);
        assert!(catalog.resolve("explore").is_ok());
        assert!(matches!(
            catalog.resolve("broken"),
            Err(AgentError::Unknown { .. })
        ));

        let off = agents_dir(workspace.path()).join("off.md");
        let err = catalog.resolve("off").unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "helper type \"off\" is disabled (enabled: false in {})",
                off.display()
            )
        );
        assert!(matches!(
            catalog.resolve("work"),
            Err(AgentError::Disabled { .. })
        ));
        // Disabled types are not offered as alternatives.
        match catalog.resolve("nope") {
            Err(AgentError::Unknown { known, .. }) => {
                assert_eq!(known, ["explore", "reviewer", "scout"]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn no_config_dirs_is_just_the_builtins() {
        let workspace = tempfile::tempdir().unwrap();
        let (catalog, errors) = load_agents(None, workspace.path());
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(catalog, AgentCatalog::builtin());
    }

    /// The builtin `explore`, a custom type that sets every flag, and `explore` without a prompt.
    fn argument_agents() -> (AgentType, AgentType, AgentType) {
        let explore = AgentCatalog::builtin().resolve("explore").unwrap();
        let custom = AgentType {
            model: Some("unipi-scripted/m".into()),
            thinking: Some("low".into()),
            prompt_mode: PromptMode::Replace,
            system_prompt: "Only review.".into(),
            tools: vec!["read".into()],
            disallowed_tools: vec!["read".into()],
            ..explore.clone()
        };
        let silent = AgentType {
            system_prompt: String::new(),
            ..explore.clone()
        };
        (explore, custom, silent)
    }

    #[test]
    fn pi_args_table() {
        let (explore, custom, silent) = argument_agents();
        // (type, the flags both modes put after `--mode <mode>`)
        let cases: [(&AgentType, Vec<&str>); 3] = [
            (
                &explore,
                vec![
                    "--tools",
                    "read,bash,grep,find,ls",
                    "--append-system-prompt",
                    &explore.system_prompt,
                ],
            ),
            (
                &custom,
                vec![
                    "--model",
                    "unipi-scripted/m",
                    "--thinking",
                    "low",
                    "--no-tools",
                    "--system-prompt",
                    "Only review.",
                ],
            ),
            (&silent, vec!["--tools", "read,bash,grep,find,ls"]),
        ];
        // (prompt, the message print mode passes); Pi would read the last two as a flag or a
        // file argument.
        let prompts = [
            ("find the bug", "find the bug"),
            ("--help me", " --help me"),
            ("@notes.md", " @notes.md"),
        ];
        for (agent, flags) in cases {
            let rpc = [&["--mode", "rpc"][..], &flags].concat();
            assert_eq!(agent.pi_rpc_args(), rpc, "{}", agent.system_prompt);
            for (prompt, message) in prompts {
                let print = [&["--mode", "json"][..], &flags, &["-p", message]].concat();
                assert_eq!(agent.pi_args(prompt), print, "{prompt}: {}", agent.name);
            }
        }
    }

    #[test]
    fn appended_prompt_table() {
        let (explore, _, silent) = argument_agents();
        let cases = [
            (
                &explore,
                "Budget.",
                format!("{}\n\nBudget.", explore.system_prompt),
            ),
            (&explore, "", explore.system_prompt.clone()),
            (&silent, "Budget.", "Budget.".to_string()),
            (&silent, "", String::new()),
        ];
        for (agent, extra, want) in cases {
            let changed = agent.with_prompt_appended(extra);
            assert_eq!(changed.system_prompt, want);
            assert_eq!(changed.prompt_mode, agent.prompt_mode);
        }
    }
}

//! MCP server configuration: the `mcpServers` format that Claude Desktop, Cursor and Pi 1.x share,
//! read from Pi's files and Unipi's (later files win on the same server name), plus the
//! workbench's own MCP settings (`.unipi/config/workbench.json`, key `mcp`). Field meanings follow
//! Pi's `docs/mcp.md` so one file works in both: `timeout` is in seconds, as Pi reads it
//! (`timeoutMs` gives milliseconds), and a later entry with no `command`, `url` or `type` only
//! switches `enabled` of the earlier one. Parsing is pure ([`parse`] takes the texts and an
//! environment lookup) so every rule is a table test; [`load`] does the reading. A bad entry
//! becomes a [`ConfigError`] naming the file, the server and the field, and the other servers
//! still load.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::config::error::Origin;
use crate::config::error::read_user_file;
use crate::config::json::Doc;
use crate::config::module_file::{ModuleConfig, Object, Style, positive, to_usize};
use crate::config::references::replace_references;
use crate::config::{ConfigError, pi_agent_dir, same_file};

/// How the workbench talks to one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        /// Absolute. As in Pi, the config's `cwd` (`~` expanded) resolved against the
        /// workspace; the workspace itself when the config names none.
        cwd: PathBuf,
    },
    /// A streamable HTTP endpoint.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// One configured server, with `${VAR}` references already expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    /// The file the (last) definition came from.
    pub source: PathBuf,
    pub transport: Transport,
    pub enabled: bool,
    /// Per tool call; progress notifications restart it.
    pub timeout: Duration,
    /// From spawn to the end of `initialize` and the first tool listing.
    pub startup_timeout: Duration,
    /// When set, only these tools are offered.
    pub enabled_tools: Option<Vec<String>>,
    /// Never offered (applied after `enabled_tools`).
    pub disabled_tools: Vec<String>,
    /// How its tools are named for the model (`"toolNaming"`, the same for every server).
    pub tool_naming: super::naming::ToolNaming,
}

impl ServerConfig {
    /// What the server runs or reaches, for status lines: `npx -y x` or the URL.
    pub fn target(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Transport::Http { url, .. } => url.clone(),
        }
    }

    /// Whether the enabled/disabled tool filters let `tool` through.
    pub(crate) fn offers_tool(&self, tool: &str) -> bool {
        let enabled = self
            .enabled_tools
            .as_ref()
            .is_none_or(|names| names.iter().any(|name| name == tool));
        enabled && !self.disabled_tools.iter().any(|name| name == tool)
    }
}

/// Who runs MCP servers: the workbench (Pi 1.x then starts with `--no-mcp`) or each Pi itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Owner {
    #[default]
    Workbench,
    Pi,
}

/// Workbench-wide MCP settings, from `.unipi/config/workbench.json` `{"mcp": {…}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSettings {
    pub(crate) owner: Owner,
    /// Enabled servers beyond this many (in name order) are refused with an error.
    pub max_servers: usize,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            owner: Owner::Workbench,
            max_servers: DEFAULT_MAX_SERVERS,
        }
    }
}

/// Every configured server and what was wrong with the files.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct McpConfig {
    /// Sorted by name; enabled and disabled ones (disabled ones are shown, never started).
    pub servers: Vec<ServerConfig>,
    pub settings: McpSettings,
    pub errors: Vec<ConfigError>,
    /// Which file was used where ours and Unipi's both define a server (shown at start).
    pub notices: Vec<String>,
}

impl McpConfig {
    /// The server called `name`.
    pub fn server(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|server| server.name == name)
    }
}

pub(crate) const DEFAULT_MAX_SERVERS: usize = 20;
pub(crate) const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
pub(crate) const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// The workbench settings file (home, then workspace), relative to either.
pub(crate) const WORKBENCH_CONFIG_FILE: &str = ".unipi/config/workbench.json";

/// The original Unipi's MCP files, relative to the home directory and to the workspace: its
/// servers (the `mcpServers` shape) and its switches (`{"servers": {name: {"enabled": bool}}}`).
pub(crate) const UNIPI_SERVERS_FILE: &str = ".unipi/config/mcp/mcp-config.json";
pub(crate) const UNIPI_SWITCHES_FILE: &str = ".unipi/config/mcp/config.json";

/// The MCP files, lowest precedence first, home then workspace and at each level Unipi's before
/// ours: Unipi's servers and switches, Pi's user file (in Pi's agent directory: `pi_agent_dir`,
/// i.e. `PI_CODING_AGENT_DIR`, else `~/.pi/agent`), our user file; then the same in the workspace.
pub(crate) fn config_files(
    home: Option<&Path>,
    pi_agent_dir: Option<&Path>,
    workspace: &Path,
) -> Vec<PathBuf> {
    let pi_user = match (pi_agent_dir, home) {
        (Some(dir), _) => Some(dir.join("mcp.json")),
        (None, home) => home.map(|home| home.join(".pi/agent/mcp.json")),
    };
    let unipi = [UNIPI_SERVERS_FILE, UNIPI_SWITCHES_FILE];
    let home_files = home
        .into_iter()
        .flat_map(|home| unipi.map(|file| home.join(file)));
    let user = home.map(|home| home.join(".unipi/config/mcp.json"));
    let project = [unipi[0], unipi[1], ".pi/mcp.json", ".unipi/config/mcp.json"];
    home_files
        .chain([pi_user, user].into_iter().flatten())
        .chain(project.map(|file| workspace.join(file)))
        .collect()
}

/// Reads the MCP files and the workbench settings; `${VAR}` comes from the process environment,
/// Pi's agent directory from `PI_CODING_AGENT_DIR` (else `~/.pi/agent`).
pub fn load(home: Option<&Path>, workspace: &Path) -> McpConfig {
    load_with_agent_dir(home, pi_agent_dir(home).as_deref(), workspace)
}

/// [`load`] with Pi's agent directory given (the demo's throwaway one).
pub(crate) fn load_with_agent_dir(
    home: Option<&Path>,
    pi_agent_dir: Option<&Path>,
    workspace: &Path,
) -> McpConfig {
    let (settings, mut errors) = McpSettings::load(home, workspace);
    let mut sources: Vec<(PathBuf, String)> = Vec::new();
    for file in config_files(home, pi_agent_dir, workspace) {
        // The same file reached twice (workspace = home) is read once, at its later place.
        sources.retain(|(seen, _)| !same_file(seen, &file));
        match read_user_file(Some(&file)) {
            Ok(Some(text)) => sources.push((file, text)),
            Ok(None) => {}
            Err(err) => errors.push(err),
        }
    }
    let mut config = parse(&sources, settings, workspace, &|name| {
        std::env::var(name).ok()
    });
    errors.append(&mut config.errors);
    config.errors = errors;
    config
}

/// The servers of `sources` ((path, text), lowest precedence first), later definitions replacing
/// earlier ones of the same name; `env` resolves `${VAR}` references; a relative `cwd` is
/// relative to `workspace`, whichever file it is in (as in Pi).
pub fn parse(
    sources: &[(PathBuf, String)],
    settings: McpSettings,
    workspace: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> McpConfig {
    // Each server with where it was (last) defined, to point errors about it at its key.
    let mut servers: BTreeMap<String, (ServerConfig, Origin)> = BTreeMap::new();
    let mut errors = Vec::new();
    let mut notices = Vec::new();
    let mut naming = super::naming::ToolNaming::default();
    for (path, text) in sources {
        let Some(doc) = Doc::parse(path, text).map_err(|err| errors.push(err)).ok() else {
            continue;
        };
        if path.ends_with(UNIPI_SWITCHES_FILE) {
            read_unipi_switches(&doc, &mut servers);
            errors.extend(doc.take_errors(true));
            continue;
        }
        naming = tool_naming(&doc).unwrap_or(naming);
        for (name, value) in entries(&doc) {
            let mut entry = Entry {
                doc: &doc,
                name,
                workspace,
                env,
                value,
                failed: false,
            };
            match entry.read() {
                Some(Parsed::Server(server)) => {
                    let at = doc.offset(&entry.keys(None), false);
                    let new = (*server, Origin::new(path, text, at));
                    if let Some((old, _)) = servers.insert(name.clone(), new) {
                        notices.extend(ours_over_unipi(&old, &servers[name].0));
                    }
                }
                Some(Parsed::Override(enabled)) => match servers.get_mut(name) {
                    Some((server, _)) => server.enabled = enabled.unwrap_or(server.enabled),
                    None => entry.fail(None, NO_TRANSPORT),
                },
                None => {}
            }
        }
        errors.extend(doc.take_errors(false));
    }
    refuse_beyond_maximum(&mut servers, settings.max_servers, &mut errors);
    McpConfig {
        servers: (servers.into_values())
            .map(|(server, _)| ServerConfig {
                tool_naming: naming,
                ..server
            })
            .collect(),
        settings,
        errors,
        notices,
    }
}

/// The one-line notice when our file's definition of a server replaces a different one of
/// Unipi's `mcp-config.json` (none when `unipi-tui migrate` copied it unchanged).
fn ours_over_unipi(old: &ServerConfig, new: &ServerConfig) -> Option<String> {
    let unipi = |server: &ServerConfig| server.source.ends_with(UNIPI_SERVERS_FILE);
    let same = ServerConfig {
        source: old.source.clone(),
        ..new.clone()
    };
    (unipi(old) && !unipi(new) && same != *old).then(|| {
        format!(
            "MCP server `{}`: using {}, not Unipi's {}",
            new.name,
            new.source.display(),
            old.source.display()
        )
    })
}

/// Unipi's `mcp/config.json`: `servers.<name>.enabled` switches a server defined so far (Unipi's
/// own metadata, `addedAt` and `sync`, is passed over; a name nobody defines is ignored, as in
/// Unipi).
fn read_unipi_switches(doc: &Doc<'_>, servers: &mut BTreeMap<String, (ServerConfig, Origin)>) {
    let Some(mut file) = Object::root(doc, Style::BACKTICKS.dotted(), true) else {
        return;
    };
    file.ignore(&["sync"]);
    if let Some(mut list) = file.section("servers", "an object of servers") {
        for (name, _) in list.members() {
            let Some(mut entry) = list.section(name, "an object") else {
                continue;
            };
            let enabled = entry.get("enabled", "true or false", Value::as_bool);
            entry.ignore(&["addedAt"]);
            entry.warn_unknown();
            if let (Some(enabled), Some((server, _))) = (enabled, servers.get_mut(name.as_str())) {
                server.enabled = enabled;
            }
        }
    }
    file.warn_unknown();
}

const NO_TRANSPORT: &str = "needs either `command` (stdio) or `url` (streamable HTTP)";

/// Enabled servers beyond `max` (in name order) are removed, with one message for all of them,
/// placed at the first one refused.
fn refuse_beyond_maximum(
    servers: &mut BTreeMap<String, (ServerConfig, Origin)>,
    max: usize,
    errors: &mut Vec<ConfigError>,
) {
    let enabled: Vec<String> = servers
        .values()
        .filter(|(server, _)| server.enabled)
        .map(|(server, _)| server.name.clone())
        .collect();
    let refused = enabled.get(max..).unwrap_or_default();
    let removed: Vec<_> = refused
        .iter()
        .filter_map(|name| servers.remove(name))
        .collect();
    if let Some((_, origin)) = removed.first() {
        errors.push(origin.error(format!(
            "{} MCP servers are enabled, more than mcp.maxServers ({max}, in \
             {WORKBENCH_CONFIG_FILE}) allows: the first {max} by name were started, these \
             {} were not: {} (raise mcp.maxServers or set \"enabled\": false on servers you \
             do not need, then /unipi:mcp-reload)",
            enabled.len(),
            refused.len(),
            refused.join(", ")
        )));
    }
}

/// The `mcp` object of `workbench.json`, home then workspace, key by key; the file's other keys
/// are other modules'.
impl ModuleConfig for McpSettings {
    const FILE: &'static str = WORKBENCH_CONFIG_FILE;
    const STYLE: Style = Style::BACKTICKS.dotted().unsorted();

    /// The `mcp` object's keys (in the order the errors have always come: by name).
    fn read(&mut self, file: &mut Object<'_>) {
        let Some(mut mcp) = file.section("mcp", "an object") else {
            return;
        };
        let positive = |v: &Value| positive(v).map(to_usize);
        let max = &mut self.max_servers;
        mcp.set("maxServers", "a positive integer", max, positive);
        let owner = |v: &Value| match v.as_str()? {
            "workbench" => Some(Owner::Workbench),
            "pi" => Some(Owner::Pi),
            _ => None,
        };
        mcp.set("owner", "\"workbench\" or \"pi\"", &mut self.owner, owner);
        mcp.warn_unknown_with(|key, _| format!("unknown key `{key}` (expected owner, maxServers)"));
    }
}

/// The file's `"toolNaming"` (`"pi"`: `mcp__server__tool`, `"unipi"`: `server__tool`), a later
/// file's replacing an earlier one's; another value is reported at it and changes nothing.
fn tool_naming(doc: &Doc<'_>) -> Option<super::naming::ToolNaming> {
    let value = doc.root.get("toolNaming")?;
    let naming = value.as_str().and_then(super::naming::ToolNaming::parse);
    if naming.is_none() {
        let message = format!(
            "`toolNaming` must be \"pi\" (mcp__server__tool, the default) or \"unipi\" \
             (server__tool, as the original Unipi named MCP tools), not {value}"
        );
        doc.report(doc.offset(&["toolNaming".to_owned()], true), message);
    }
    naming
}

/// The `mcpServers` entries of a file, in file order; a file that has none has none, one whose
/// root or `mcpServers` is not an object is reported. Other keys (Pi's settings, comments some
/// tools add) are not ours to judge.
fn entries<'d>(doc: &'d Doc<'d>) -> impl Iterator<Item = (&'d String, &'d Value)> + use<'d> {
    let servers = match doc.root.as_object().map(|root| root.get("mcpServers")) {
        None => {
            doc.report(0, "expected a JSON object with `mcpServers`");
            None
        }
        Some(Some(Value::Object(servers))) => Some(servers),
        Some(Some(_)) => {
            let message = "`mcpServers` must be an object mapping server names to their settings";
            doc.report(doc.offset(&["mcpServers".to_owned()], false), message);
            None
        }
        Some(None) => None,
    };
    servers.into_iter().flatten()
}

/// What one entry of one file amounts to.
enum Parsed {
    Server(Box<ServerConfig>),
    /// An entry with no `command`, `url` or `type`: Pi's override of an earlier definition
    /// (`enabled`).
    Override(Option<bool>),
}

/// One server entry being read. Every problem is reported (at its field, naming the file, the
/// server and the field), rather than stopping at the first; an entry with any is skipped.
struct Entry<'a> {
    doc: &'a Doc<'a>,
    name: &'a str,
    workspace: &'a Path,
    env: &'a dyn Fn(&str) -> Option<String>,
    value: &'a Value,
    failed: bool,
}

impl Entry<'_> {
    fn read(&mut self) -> Option<Parsed> {
        let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if self.name.is_empty() || !self.name.chars().all(valid) {
            let message = "invalid server name (use letters, digits, `_` and `-`)";
            self.fail(None, message);
            return None;
        }
        if !self.value.is_object() {
            self.fail(None, "must be an object");
            return None;
        }
        let parsed = self.fields();
        parsed.filter(|_| !self.failed)
    }

    fn fields(&mut self) -> Option<Parsed> {
        let enabled = self.get::<bool>("enabled", "must be true or false");
        let disabled = self.get::<bool>("disabled", "must be true or false");
        let enabled = enabled.or(disabled.map(|disabled| !disabled));
        let kind = self.string("type");
        let command = self.string("command");
        let url = self.string("url");
        if kind.is_none() && command.is_none() && url.is_none() {
            // A `type`, `command` or `url` that is not a string was reported, so the entry is
            // skipped anyway.
            return Some(Parsed::Override(enabled));
        }
        let timeout = self.duration("timeout", "timeoutMs", DEFAULT_CALL_TIMEOUT);
        let startup_timeout = self.duration(
            "startupTimeout",
            "startupTimeoutMs",
            DEFAULT_STARTUP_TIMEOUT,
        );
        let enabled_tools = (self.value.get("enabledTools")).map(|_| self.strings("enabledTools"));
        let disabled_tools = self.strings("disabledTools");
        let transport = self.transport(kind.as_deref(), command, url)?;
        Some(Parsed::Server(Box::new(ServerConfig {
            name: self.name.to_owned(),
            source: self.doc.path.to_owned(),
            transport,
            enabled: enabled.unwrap_or(true),
            timeout,
            startup_timeout,
            enabled_tools,
            disabled_tools,
            tool_naming: super::naming::ToolNaming::default(),
        })))
    }

    /// How the server is reached: `url` (streamable HTTP) or `command` (stdio), as `kind` says.
    fn transport(
        &mut self,
        kind: Option<&str>,
        command: Option<String>,
        url: Option<String>,
    ) -> Option<Transport> {
        match (kind, command, url) {
            (Some("sse"), _, _) => self.fail(
                Some("type"),
                "the legacy SSE transport is not supported; use the server's streamable \
                 HTTP URL (often `/mcp` instead of `/sse`)",
            ),
            (None | Some("http" | "streamable-http"), _, Some(url)) => {
                let url = self.expand("url", &url);
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    self.fail(Some("url"), "must be an http or https URL");
                }
                let headers = self.string_map("headers");
                return Some(Transport::Http { url, headers });
            }
            (None | Some("stdio"), Some(command), _) => {
                let command = self.expand("command", &command);
                let command = self.home_path(&command);
                let mut args = Vec::new();
                for arg in self.strings("args") {
                    let arg = self.expand("args", &arg);
                    args.push(self.home_path(&arg));
                }
                // Pi: `resolve(sessionCwd, expandHome(config.cwd ?? "."))`. Joining an absolute
                // path replaces the workspace.
                let cwd = match self.string("cwd") {
                    Some(cwd) => {
                        let cwd = self.expand("cwd", &cwd);
                        self.workspace.join(self.home_path(&cwd))
                    }
                    None => self.workspace.to_path_buf(),
                };
                let env = self.string_map("env");
                return Some(Transport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                });
            }
            (Some(kind), _, _) if !matches!(kind, "stdio" | "http" | "streamable-http") => self
                .fail(
                    Some("type"),
                    "must be \"stdio\", \"http\" or \"streamable-http\"",
                ),
            _ => self.fail(None, NO_TRANSPORT),
        }
        None
    }

    /// The key path of `field` of this entry (`None`: the entry's own key).
    fn keys(&self, field: Option<&str>) -> Vec<String> {
        let keys = ["mcpServers", self.name].into_iter().chain(field);
        keys.map(str::to_owned).collect()
    }

    /// Reports `message` about `field` (at its key), or about the entry (`None`, at its name).
    fn fail(&mut self, field: Option<&str>, message: &str) {
        let (name, at) = (self.name, self.doc.offset(&self.keys(field), false));
        self.doc.report(
            at,
            match field {
                Some(field) => format!("MCP server `{name}`, field `{field}`: {message}"),
                None => format!("MCP server `{name}`: {message}"),
            },
        );
        self.failed = true;
    }

    /// The value of `key` as a `T`; another value is reported as `must` says.
    fn get<T: DeserializeOwned>(&mut self, key: &str, must: &str) -> Option<T> {
        let read = T::deserialize(self.value.get(key)?).ok();
        if read.is_none() {
            self.fail(Some(key), must);
        }
        read
    }

    fn string(&mut self, key: &str) -> Option<String> {
        self.get(key, "must be a string")
    }

    fn strings(&mut self, key: &str) -> Vec<String> {
        self.get(key, "must be an array of strings")
            .unwrap_or_default()
    }

    /// An object of strings (`env`, `headers`), each value `${VAR}`-expanded.
    fn string_map(&mut self, key: &str) -> BTreeMap<String, String> {
        let map: BTreeMap<String, String> = self
            .get(key, "must map names to strings")
            .unwrap_or_default();
        map.into_iter()
            .map(|(name, text)| (name, self.expand(key, &text)))
            .collect()
    }

    /// `seconds_key` in seconds (Pi's unit) or `millis_key` in milliseconds.
    fn duration(&mut self, seconds_key: &str, millis_key: &str, default: Duration) -> Duration {
        let mut duration = default;
        for (key, scale) in [(seconds_key, 1000.0), (millis_key, 1.0)] {
            let Some(value) = self.value.get(key) else {
                continue;
            };
            match value.as_f64().filter(|n| *n > 0.0 && n.is_finite()) {
                Some(n) => duration = Duration::from_secs_f64(n * scale / 1000.0),
                None => self.fail(Some(key), "must be a positive number"),
            }
        }
        duration
    }

    /// `${VAR}` and `${VAR:-default}` in a value of `field`; an unset variable with no default is
    /// an error (the server would start with a wrong value otherwise).
    fn expand(&mut self, field: &str, text: &str) -> String {
        expand_vars(text, self.env).unwrap_or_else(|missing| {
            let message = format!("environment variable `{missing}` is not set");
            self.fail(Some(field), &message);
            text.to_owned()
        })
    }

    /// `~` and a leading `~/` name the home directory, as in Pi.
    fn home_path(&self, text: &str) -> String {
        let home = || (self.env)("HOME");
        match (text, text.strip_prefix("~/")) {
            ("~", _) => home().unwrap_or_else(|| text.to_owned()),
            (_, Some(rest)) => match home() {
                Some(home) => format!("{}/{rest}", home.trim_end_matches('/')),
                None => text.to_owned(),
            },
            _ => text.to_owned(),
        }
    }
}

/// Expands `${VAR}` and `${VAR:-default}`; Err(name) of the first unset variable with no default.
pub(crate) fn expand_vars(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    replace_references(text, "${", "}", |reference| {
        let (name, default) = match reference.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (reference, None),
        };
        match (
            env(name).filter(|value| !value.is_empty() || default.is_none()),
            default,
        ) {
            (Some(value), _) => Ok(Some(value)),
            (None, Some(default)) => Ok(Some(default.to_owned())),
            (None, None) => Err(name.to_owned()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("secret".into()),
            "HOME" => Some("/home/u".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn parse_files(files: &[(&str, &str)]) -> McpConfig {
        parse_with(files, McpSettings::default())
    }

    fn parse_with(files: &[(&str, &str)], settings: McpSettings) -> McpConfig {
        let sources: Vec<(PathBuf, String)> = files
            .iter()
            .map(|(path, text)| (PathBuf::from(path), (*text).to_owned()))
            .collect();
        parse(&sources, settings, Path::new("/w"), &env)
    }

    fn errors(config: &McpConfig) -> Vec<String> {
        config.errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn config_files_are_in_precedence_order() {
        let files = config_files(Some(Path::new("/h")), None, Path::new("/w"));
        let expected: Vec<PathBuf> = [
            "/h/.unipi/config/mcp/mcp-config.json",
            "/h/.unipi/config/mcp/config.json",
            "/h/.pi/agent/mcp.json",
            "/h/.unipi/config/mcp.json",
            "/w/.unipi/config/mcp/mcp-config.json",
            "/w/.unipi/config/mcp/config.json",
            "/w/.pi/mcp.json",
            "/w/.unipi/config/mcp.json",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(files, expected);
        assert_eq!(
            config_files(None, None, Path::new("/w")),
            expected[4..].to_vec()
        );
        // Pi's agent directory moved with PI_CODING_AGENT_DIR: its mcp.json is Pi's user file.
        let moved = config_files(
            Some(Path::new("/h")),
            Some(Path::new("/pi")),
            Path::new("/w"),
        );
        assert_eq!(moved[2], PathBuf::from("/pi/mcp.json"));
        assert_eq!(moved[..2], expected[..2]);
        assert_eq!(moved[3..], expected[3..]);
    }

    /// Pi 1.x starts a stdio server in `resolve(sessionCwd, expandHome(cwd ?? "."))`: a relative
    /// `cwd` is relative to the workspace even in a file under the home directory.
    #[test]
    fn a_server_cwd_resolves_against_the_workspace_like_pi() {
        let config = parse_files(&[(
            "/h/.pi/agent/mcp.json",
            r#"{"mcpServers": {
                "none": {"command": "a"},
                "dot": {"command": "a", "cwd": "."},
                "sub": {"command": "a", "cwd": "tools/mcp"},
                "up": {"command": "a", "cwd": "../other"},
                "home": {"command": "a", "cwd": "~"},
                "abs": {"command": "a", "cwd": "/srv/mcp"}
            }}"#,
        )]);
        assert_eq!(errors(&config), Vec::<String>::new());
        let cwd = |name: &str| match &config.server(name).unwrap().transport {
            Transport::Stdio { cwd, .. } => cwd.clone(),
            Transport::Http { .. } => panic!("{name} is stdio"),
        };
        assert_eq!(cwd("none"), Path::new("/w"));
        assert_eq!(cwd("dot"), Path::new("/w/."));
        assert_eq!(cwd("sub"), Path::new("/w/tools/mcp"));
        assert_eq!(cwd("up"), Path::new("/w/../other"));
        assert_eq!(cwd("home"), Path::new("/home/u"));
        assert_eq!(cwd("abs"), Path::new("/srv/mcp"));
    }

    #[test]
    fn stdio_and_http_servers_parse_with_defaults() {
        let config = parse_files(&[(
            "/h/.pi/agent/mcp.json",
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "server-fs", "~/code"],
                       "env": {"KEY": "${TOKEN}", "MODE": "${MODE:-fast}"}, "cwd": "~/w"},
                "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"},
                         "timeout": 5, "startupTimeoutMs": 1500, "enabledTools": ["search"],
                         "disabledTools": ["drop"]}
            }}"#,
        )]);
        assert_eq!(errors(&config), Vec::<String>::new());
        let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["docs", "fs"]);
        let fs = &config.servers[1];
        assert_eq!(
            fs.transport,
            Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "server-fs".into(), "/home/u/code".into()],
                env: BTreeMap::from([
                    ("KEY".into(), "secret".into()),
                    ("MODE".into(), "fast".into())
                ]),
                cwd: PathBuf::from("/home/u/w"),
            }
        );
        assert!(fs.enabled);
        assert_eq!(fs.timeout, DEFAULT_CALL_TIMEOUT);
        assert_eq!(fs.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
        assert_eq!(fs.enabled_tools, None);
        assert_eq!(fs.target(), "npx -y server-fs /home/u/code");
        let docs = &config.servers[0];
        assert_eq!(
            docs.transport,
            Transport::Http {
                url: "https://example.com/mcp".into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer secret".into())]),
            }
        );
        assert_eq!(docs.timeout, Duration::from_secs(5));
        assert_eq!(docs.startup_timeout, Duration::from_millis(1500));
        assert_eq!(docs.enabled_tools, Some(vec!["search".to_owned()]));
        assert!(docs.offers_tool("search"));
        assert!(!docs.offers_tool("drop"));
        assert!(!docs.offers_tool("other"));
        assert_eq!(docs.source, PathBuf::from("/h/.pi/agent/mcp.json"));
    }

    #[test]
    fn later_sources_win_and_overrides_switch_enabled() {
        let config = parse_files(&[
            (
                "/h/.pi/agent/mcp.json",
                r#"{"mcpServers": {"a": {"command": "one"}, "b": {"command": "b"}}}"#,
            ),
            (
                "/h/.unipi/config/mcp.json",
                r#"{"mcpServers": {"a": {"command": "two"}}}"#,
            ),
            (
                "/w/.pi/mcp.json",
                r#"{"mcpServers": {"b": {"enabled": false}}}"#,
            ),
            (
                "/w/.unipi/config/mcp.json",
                r#"{"mcpServers": {"c": {"url": "http://localhost:1/mcp", "disabled": true}}}"#,
            ),
        ]);
        assert_eq!(errors(&config), Vec::<String>::new());
        let summary: Vec<(String, String, bool, String)> = config
            .servers
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    s.target(),
                    s.enabled,
                    s.source.display().to_string(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "a".into(),
                    "two".into(),
                    true,
                    "/h/.unipi/config/mcp.json".into()
                ),
                (
                    "b".into(),
                    "b".into(),
                    false,
                    "/h/.pi/agent/mcp.json".into()
                ),
                (
                    "c".into(),
                    "http://localhost:1/mcp".into(),
                    false,
                    "/w/.unipi/config/mcp.json".into()
                ),
            ]
        );
    }

    #[test]
    fn bad_entries_name_file_server_and_field_and_others_still_load() {
        let cases: &[(&str, &str)] = &[
            (
                r#"{"bad": {"command": 5}}"#,
                "/p/mcp.json:1:52: MCP server `bad`, field `command`: must be a string",
            ),
            (
                r#"{"bad": {"command": "x", "args": "y"}}"#,
                "/p/mcp.json:1:68: MCP server `bad`, field `args`: must be an array of strings",
            ),
            (
                r#"{"bad": {"command": "x", "env": {"A": 1}}}"#,
                "/p/mcp.json:1:68: MCP server `bad`, field `env`: must map names to strings",
            ),
            (
                r#"{"bad": {"command": "x", "env": {"A": "${NOPE}"}}}"#,
                "/p/mcp.json:1:68: MCP server `bad`, field `env`: environment variable `NOPE` is not set",
            ),
            (
                r#"{"bad": {"command": "x", "enabled": "yes"}}"#,
                "/p/mcp.json:1:68: MCP server `bad`, field `enabled`: must be true or false",
            ),
            (
                r#"{"bad": {"command": "x", "timeout": -1}}"#,
                "/p/mcp.json:1:68: MCP server `bad`, field `timeout`: must be a positive number",
            ),
            (
                r#"{"bad": {"url": "ftp://x"}}"#,
                "/p/mcp.json:1:52: MCP server `bad`, field `url`: must be an http or https URL",
            ),
            (
                r#"{"bad": {"type": "sse", "url": "http://x"}}"#,
                "/p/mcp.json:1:52: MCP server `bad`, field `type`: the legacy SSE transport is not supported; use the server's streamable HTTP URL (often `/mcp` instead of `/sse`)",
            ),
            (
                r#"{"bad": {"type": "ws", "url": "http://x"}}"#,
                "/p/mcp.json:1:52: MCP server `bad`, field `type`: must be \"stdio\", \"http\" or \"streamable-http\"",
            ),
            (
                r#"{"bad": {"type": "stdio"}}"#,
                "/p/mcp.json:1:44: MCP server `bad`: needs either `command` (stdio) or `url` (streamable HTTP)",
            ),
            (
                r#"{"bad": {"enabled": false}}"#,
                "/p/mcp.json:1:44: MCP server `bad`: needs either `command` (stdio) or `url` (streamable HTTP)",
            ),
            (
                r#"{"bad": 3}"#,
                "/p/mcp.json:1:44: MCP server `bad`: must be an object",
            ),
            (
                r#"{"b d": {"command": "x"}}"#,
                "/p/mcp.json:1:44: MCP server `b d`: invalid server name (use letters, digits, `_` and `-`)",
            ),
        ];
        for (servers, expected) in cases {
            let text = format!(
                r#"{{"mcpServers": {{"ok": {{"command": "fine"}}, {}}}"#,
                &servers[1..]
            );
            let config = parse_files(&[("/p/mcp.json", &text)]);
            assert_eq!(errors(&config), [expected.to_string()], "for {servers}");
            let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(names, ["ok"], "for {servers}");
        }
    }

    #[test]
    fn broken_files_are_reported_and_skipped() {
        let config = parse_files(&[
            ("/a.json", "{not json"),
            ("/b.json", "[1]"),
            ("/c.json", r#"{"mcpServers": []}"#),
            ("/d.json", r#"{"other": 1}"#),
            ("/e.json", r#"{"mcpServers": {"ok": {"command": "x"}}}"#),
        ]);
        let errors = errors(&config);
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(
            errors[0].starts_with("/a.json:1:2: invalid JSON"),
            "{errors:?}"
        );
        assert_eq!(
            errors[1],
            "/b.json:1:1: expected a JSON object with `mcpServers`"
        );
        assert_eq!(
            errors[2],
            "/c.json:1:2: `mcpServers` must be an object mapping server names to their settings"
        );
        assert_eq!(config.servers.len(), 1);
    }

    /// `"toolNaming"`: a later file's wins and applies to every server; a bad value is an
    /// error at it and leaves the naming as it was.
    #[test]
    fn tool_naming_is_read_from_the_mcp_files() {
        use crate::mcp::naming::ToolNaming;
        let namings = |config: &McpConfig| -> Vec<ToolNaming> {
            config.servers.iter().map(|s| s.tool_naming).collect()
        };
        let plain = parse_files(&[("/a.json", r#"{"mcpServers": {"a": {"command": "x"}}}"#)]);
        assert_eq!(namings(&plain), [ToolNaming::Pi]);
        let config = parse_files(&[
            ("/a.json", r#"{"mcpServers": {"a": {"command": "x"}}}"#),
            (
                "/b.json",
                r#"{"toolNaming": "unipi", "mcpServers": {"b": {"url": "http://x"}}}"#,
            ),
        ]);
        assert_eq!(errors(&config), Vec::<String>::new());
        assert_eq!(namings(&config), [ToolNaming::Unipi, ToolNaming::Unipi]);
        let back = parse_files(&[
            ("/a.json", r#"{"toolNaming": "unipi"}"#),
            (
                "/b.json",
                r#"{"toolNaming": "pi", "mcpServers": {"b": {"command": "x"}}}"#,
            ),
        ]);
        assert_eq!(namings(&back), [ToolNaming::Pi]);
        let bad = parse_files(&[
            ("/a.json", r#"{"toolNaming": "unipi"}"#),
            (
                "/b.json",
                "{\n  \"mcpServers\": {\"b\": {\"command\": \"x\"}},\n  \"toolNaming\": \"claude\"\n}",
            ),
        ]);
        assert_eq!(
            errors(&bad),
            [
                "/b.json:3:17: `toolNaming` must be \"pi\" (mcp__server__tool, the default) or \
              \"unipi\" (server__tool, as the original Unipi named MCP tools), not \"claude\""
            ]
        );
        assert_eq!(namings(&bad), [ToolNaming::Unipi]);
    }

    #[test]
    fn servers_beyond_the_maximum_are_refused_by_name() {
        let text = r#"{"mcpServers": {"a": {"command": "x"}, "b": {"command": "x"},
            "c": {"command": "x", "enabled": false}, "d": {"command": "x"}, "e": {"command": "x"}}}"#;
        let settings = McpSettings {
            max_servers: 2,
            ..McpSettings::default()
        };
        let config = parse_with(&[("/m.json", text)], settings);
        let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(
            errors(&config),
            [
                "/m.json:2:54: 4 MCP servers are enabled, more than mcp.maxServers (2, in \
                 .unipi/config/workbench.json) allows: the first 2 by name were started, these \
                 2 were not: d, e (raise mcp.maxServers or set \"enabled\": false on servers \
                 you do not need, then /unipi:mcp-reload)"
            ],
            "one message, at the first server refused, naming every one"
        );
    }

    /// Thirty servers over the default limit of 20 give one message, not ten.
    #[test]
    fn many_servers_over_the_limit_are_one_message() {
        let entries: Vec<String> = (1..=30)
            .map(|n| format!("\"s{n:02}\": {{\"command\": \"x\"}}"))
            .collect();
        let text = format!("{{\"mcpServers\": {{{}}}}}", entries.join(",\n"));
        let config = parse_with(&[("/m.json", &text)], McpSettings::default());
        assert_eq!(config.servers.len(), 20);
        let errors = errors(&config);
        assert_eq!(errors.len(), 1, "{errors:#?}");
        let not_started: Vec<String> = (21..=30).map(|n| format!("s{n}")).collect();
        assert!(
            errors[0].contains(&format!("these 10 were not: {} (", not_started.join(", "))),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn settings_merge_key_by_key() {
        let sources = vec![
            (
                PathBuf::from("/h/w.json"),
                r#"{"mcp": {"owner": "pi", "maxServers": 3}}"#.to_owned(),
            ),
            (
                PathBuf::from("/w/w.json"),
                r#"{"mcp": {"maxServers": 5}, "other": {}}"#.to_owned(),
            ),
        ];
        let (settings, errors) = McpSettings::from_sources(&sources);
        assert_eq!(errors, []);
        assert_eq!(
            settings,
            McpSettings {
                owner: Owner::Pi,
                max_servers: 5
            }
        );

        let bad = vec![(
            PathBuf::from("/w.json"),
            r#"{"mcp": {"owner": "me", "maxServers": 0, "x": 1}}"#.to_owned(),
        )];
        let (settings, errors) = McpSettings::from_sources(&bad);
        assert_eq!(settings, McpSettings::default());
        let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            errors,
            [
                "/w.json:1:25: `mcp.maxServers` must be a positive integer",
                "/w.json:1:10: `mcp.owner` must be \"workbench\" or \"pi\"",
                "/w.json:1:42: unknown key `mcp.x` (expected owner, maxServers)",
            ]
        );
    }

    /// Unipi's `mcp/mcp-config.json` and `mcp/config.json`, home then workspace: the project's
    /// server replaces the home one whole, and each level's switches turn servers off or on.
    #[test]
    fn unipi_mcp_files_are_read_with_their_switches() {
        let config = parse_files(&[
            (
                "/h/.unipi/config/mcp/mcp-config.json",
                r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "fs"]},
                    "git": {"command": "git-mcp", "args": []}, "off": {"command": "o", "args": []}}}"#,
            ),
            (
                "/h/.unipi/config/mcp/config.json",
                r#"{"servers": {"off": {"enabled": false, "addedAt": "2026-01-01T00:00:00Z"},
                    "gone": {"enabled": false}}, "sync": {"enabled": true, "lastSyncAt": null}}"#,
            ),
            (
                "/w/.unipi/config/mcp/mcp-config.json",
                r#"{"mcpServers": {"fs": {"command": "fs-local", "args": ["."], "env": {"K": "${TOKEN}"}}}}"#,
            ),
            (
                "/w/.unipi/config/mcp/config.json",
                r#"{"servers": {"git": {"enabled": false}}}"#,
            ),
        ]);
        assert_eq!(errors(&config), Vec::<String>::new());
        assert_eq!(config.notices, Vec::<String>::new());
        let summary: Vec<(&str, String, bool)> = config
            .servers
            .iter()
            .map(|s| (s.name.as_str(), s.target(), s.enabled))
            .collect();
        assert_eq!(
            summary,
            [
                ("fs", "fs-local .".to_owned(), true),
                ("git", "git-mcp".to_owned(), false),
                ("off", "o".to_owned(), false),
            ]
        );
        let fs = config.server("fs").unwrap();
        assert_eq!(
            fs.source,
            PathBuf::from("/w/.unipi/config/mcp/mcp-config.json")
        );
        let Transport::Stdio { env, .. } = &fs.transport else {
            panic!("fs is stdio")
        };
        assert_eq!(env["K"], "secret");
    }

    #[test]
    fn broken_unipi_mcp_files_name_path_line_and_column() {
        let config = parse_files(&[
            (
                "/h/.unipi/config/mcp/mcp-config.json",
                "{\n  \"mcpServers\": {\n    \"fs\": {\"command\": 7}\n  }\n}",
            ),
            (
                "/h/.unipi/config/mcp/config.json",
                "{\"servers\": {\"fs\": {\"enabled\": \"no\"}}, \"extra\": 1}",
            ),
            (
                "/w/.unipi/config/mcp/mcp-config.json",
                "{\n  \"mcpServers\": ",
            ),
        ]);
        let errors = errors(&config);
        assert_eq!(errors.len(), 4, "{errors:#?}");
        assert_eq!(
            errors[0],
            "/h/.unipi/config/mcp/mcp-config.json:3:12: MCP server `fs`, field `command`: must be \
             a string"
        );
        assert_eq!(
            errors[1],
            "/h/.unipi/config/mcp/config.json:1:21: `servers.fs.enabled` must be true or false"
        );
        assert_eq!(
            errors[2],
            "/h/.unipi/config/mcp/config.json:1:40: unknown key `extra` (expected servers)"
        );
        assert!(
            errors[3].starts_with("/w/.unipi/config/mcp/mcp-config.json:2:16: invalid JSON"),
            "{}",
            errors[3]
        );
        assert!(config.servers.is_empty());
    }

    /// Where our file and Unipi's both define a server, ours wins, and the start notice says
    /// which file was used; a copy made by `migrate` (the same server) says nothing.
    #[test]
    fn ours_wins_over_unipi_with_a_notice() {
        let unipi = r#"{"mcpServers": {"fs": {"command": "old", "args": []},
            "same": {"command": "s", "args": ["1"]}}}"#;
        let ours = r#"{"mcpServers": {"fs": {"command": "new"}, "same": {"command": "s", "args": ["1"]}}}"#;
        let config = parse_files(&[
            ("/h/.unipi/config/mcp/mcp-config.json", unipi),
            ("/h/.unipi/config/mcp.json", ours),
        ]);
        assert_eq!(errors(&config), Vec::<String>::new());
        assert_eq!(config.server("fs").unwrap().target(), "new");
        assert_eq!(
            config.notices,
            [
                "MCP server `fs`: using /h/.unipi/config/mcp.json, not Unipi's \
              /h/.unipi/config/mcp/mcp-config.json"
            ]
        );
    }

    #[test]
    fn expansion_table() {
        let cases: &[(&str, Result<&str, &str>)] = &[
            ("plain", Ok("plain")),
            ("${TOKEN}", Ok("secret")),
            ("a-${TOKEN}-b", Ok("a-secret-b")),
            ("${MISSING:-dflt}", Ok("dflt")),
            ("${TOKEN:-dflt}", Ok("secret")),
            ("${EMPTY:-dflt}", Ok("dflt")),
            ("${EMPTY}", Ok("")),
            ("${MISSING}", Err("MISSING")),
            ("${unclosed", Ok("${unclosed")),
            ("$TOKEN", Ok("$TOKEN")),
        ];
        for (input, expected) in cases {
            let got = expand_vars(input, &env);
            assert_eq!(
                got.as_deref().map_err(String::as_str),
                *expected,
                "for {input}"
            );
        }
    }

    #[test]
    fn load_reads_every_source_and_workbench_settings() -> anyhow::Result<()> {
        let home = tempfile::tempdir()?;
        let ws = tempfile::tempdir()?;
        let write = |path: PathBuf, text: &str| -> anyhow::Result<()> {
            std::fs::create_dir_all(path.parent().unwrap_or(Path::new("/")))?;
            std::fs::write(path, text)?;
            Ok(())
        };
        // (root, file, server name, its command)
        for (root, file, name, command) in [
            (home.path(), ".pi/agent/mcp.json", "a", "pi-user"),
            (home.path(), ".unipi/config/mcp.json", "b", "unipi-user"),
            (ws.path(), ".pi/mcp.json", "a", "pi-project"),
            (ws.path(), ".unipi/config/mcp.json", "c", "unipi-project"),
        ] {
            let servers = serde_json::json!({"mcpServers": {name: {"command": command}}});
            write(root.join(file), &servers.to_string())?;
        }
        write(
            ws.path().join(".unipi/config/workbench.json"),
            r#"{"mcp": {"owner": "pi"}}"#,
        )?;
        let config = load(Some(home.path()), ws.path());
        assert_eq!(config.errors, []);
        let targets: Vec<String> = config.servers.iter().map(ServerConfig::target).collect();
        assert_eq!(targets, ["pi-project", "unipi-user", "unipi-project"]);
        assert_eq!(config.settings.owner, Owner::Pi);
        Ok(())
    }
}

//! What a migration would do: every key of Unipi's files that has a place in ours ([`Move`]),
//! what each comes to against our file as it is ([`Outcome`]), what is left alone and why, and
//! the files that could not be read. Built without writing anything; [`Plan::apply`] writes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::{Map, Value, json};

use crate::askuser::config::ASK_USER_CONFIG_FILE;
use crate::compactor::config::{CONFIG_FILE as COMPACTOR_FILE, UNIPI_GLOBAL_FILE};
use crate::config::footer::FOOTER_FILE;
use crate::config::json::Doc;
use crate::mcp::config::{UNIPI_SERVERS_FILE, UNIPI_SWITCHES_FILE};
use crate::web::config::{UNIPI_AUTH_FILE, UNIPI_CONFIG_FILE, WEB_CONFIG_FILE};

/// Our MCP file at each level.
const MCP_FILE: &str = ".unipi/config/mcp.json";
/// Unipi's footer keys that have no counterpart (the native footer draws its own way).
const FOOTER_LOOKS: [&str; 2] = ["zoneSeparator", "showFullLabels"];

/// One key of a Unipi file and where it goes in ours.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Move {
    pub(super) from: PathBuf,
    pub(super) from_key: String,
    pub(super) to: Vec<String>,
    pub(super) value: Value,
    /// How much of `to` is one setting: a server (`mcpServers.<name>`, 2) is kept or moved whole,
    /// a flag (its whole path) alone.
    unit: usize,
    /// A key of the same file to remove (a key renamed in our own file).
    drop: Option<Vec<String>>,
}

/// What a move comes to.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Outcome {
    /// Written to our file.
    Added,
    /// Our file already says the same.
    Same,
    /// Our file has its own value there, which wins.
    KeptOurs(Value),
    /// An earlier file of this migration gave the key already (ours before Unipi's, the project
    /// before home within a level).
    Earlier,
    /// Our file is not a JSON object: nothing is written to it.
    Blocked,
}

/// One file of ours and the moves into it.
#[derive(Debug)]
pub(super) struct Target {
    pub(super) file: PathBuf,
    /// May hold secrets (`env`, `headers`): written 0600.
    secret: bool,
    /// The file as it is (empty when there is none); `None` when it is not a JSON object.
    original: Option<Map<String, Value>>,
    merged: Map<String, Value>,
    pub(super) moves: Vec<(Move, Outcome)>,
}

impl Target {
    fn changed(&self) -> bool {
        self.original.is_some()
            && self
                .moves
                .iter()
                .any(|(_, outcome)| *outcome == Outcome::Added)
    }

    fn add(&mut self, change: Move) {
        let outcome = match &self.original {
            None => Outcome::Blocked,
            Some(original) => {
                let unit = &change.to[..change.unit.min(change.to.len())];
                match (lookup(original, unit), lookup(original, &change.to)) {
                    (_, Some(ours)) if *ours == change.value => Outcome::Same,
                    (Some(ours), _) => Outcome::KeptOurs(ours.clone()),
                    (None, _) if lookup(&self.merged, &change.to).is_some() => Outcome::Earlier,
                    (None, _) => match insert(&mut self.merged, &change.to, change.value.clone()) {
                        Ok(()) => Outcome::Added,
                        Err(ours) => Outcome::KeptOurs(ours),
                    },
                }
            }
        };
        if outcome == Outcome::Added
            && let Some(drop) = &change.drop
        {
            remove(&mut self.merged, drop);
        }
        self.moves.push((change, outcome));
    }
}

/// Everything a migration would do.
#[derive(Debug, Default)]
pub(super) struct Plan {
    pub(super) targets: Vec<Target>,
    /// (file, key, why): what stays where it is.
    pub(super) left_alone: Vec<(PathBuf, String, String)>,
    /// Files that could not be read, with where and why.
    pub(super) problems: Vec<String>,
}

/// The migration of `home` and `workspace`; `pi_settings` is Pi's user `settings.json`.
pub(super) fn plan(home: Option<&Path>, workspace: &Path, pi_settings: Option<&Path>) -> Plan {
    let mut plan = Plan::default();
    let same = home.is_some_and(|home| crate::config::same_file(home, workspace));
    let levels: Vec<&Path> = match home {
        Some(home) if !same => vec![home, workspace],
        Some(home) => vec![home],
        None => vec![workspace],
    };
    // Servers Unipi knew at home, for the switches of each level.
    let home_servers = home.map_or_else(BTreeSet::new, |home| plan.mcp_servers(home));
    for root in &levels {
        let mut known = plan.mcp_servers(root);
        if Some(*root) != home {
            known.extend(home_servers.iter().cloned());
        }
        plan.mcp(root, &known);
        plan.compactor_in_place(root);
    }
    if let Some(home) = home {
        plan.compactor_global(home);
        if let Some(settings) = pi_settings {
            plan.pi_settings(settings, home);
        }
    }
    for root in &levels {
        let subagents = root.join(crate::helpers::config::CONFIG_FILE);
        if subagents.exists() {
            let why = "read as it is (`enabled` and `types.<name>.enabled` are honoured)";
            plan.leave(&subagents, "", why);
        }
        plan.web(root);
    }
    plan
}

impl Plan {
    /// The JSON object in `path`; `None` when there is none, and when it is not valid JSON or not
    /// an object (a problem, at its place).
    fn read(&mut self, path: &Path) -> Option<Map<String, Value>> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
            Err(err) => {
                self.problems
                    .push(format!("{}: cannot be read: {err}", path.display()));
                return None;
            }
        };
        match Doc::parse(path, &text) {
            Ok(Doc {
                root: Value::Object(map),
                ..
            }) => Some(map),
            Ok(_) => {
                let problem = format!("{}:1:1: expected a JSON object", path.display());
                self.problems.push(problem);
                None
            }
            Err(err) => {
                self.problems.push(err.to_string());
                None
            }
        }
    }

    fn target(&mut self, file: PathBuf, secret: bool) -> &mut Target {
        let index = match self.targets.iter().position(|target| target.file == file) {
            Some(index) => index,
            None => {
                let original = match crate::config::module_file::read_json_object(&file) {
                    Ok(map) => Some(map),
                    Err(err) => {
                        self.problems.push(format!("{err:#}"));
                        None
                    }
                };
                self.targets.push(Target {
                    merged: original.clone().unwrap_or_default(),
                    file,
                    secret,
                    original,
                    moves: Vec::new(),
                });
                self.targets.len() - 1
            }
        };
        &mut self.targets[index]
    }

    fn leave(&mut self, file: &Path, key: &str, why: &str) {
        let entry = (file.to_owned(), key.to_owned(), why.to_owned());
        self.left_alone.push(entry);
    }

    /// The servers of Unipi's `mcp-config.json` under `root`.
    fn mcp_servers(&mut self, root: &Path) -> BTreeSet<String> {
        let servers = self.read_quiet(&root.join(UNIPI_SERVERS_FILE));
        servers
            .as_ref()
            .and_then(|file| file.get("mcpServers"))
            .and_then(Value::as_object)
            .map(|servers| servers.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// [`Plan::read`] for a second look at a file (its problems are reported once).
    fn read_quiet(&mut self, path: &Path) -> Option<Map<String, Value>> {
        let problems = self.problems.len();
        let map = self.read(path);
        self.problems.truncate(problems);
        map
    }

    /// Unipi's `mcp/mcp-config.json` (each server whole) and `mcp/config.json` (each switch)
    /// under `root` into our `mcp.json` there; `known` are the servers a switch may name.
    fn mcp(&mut self, root: &Path, known: &BTreeSet<String>) {
        let target = root.join(MCP_FILE);
        let servers_file = root.join(UNIPI_SERVERS_FILE);
        if let Some(file) = self.read(&servers_file) {
            for (key, value) in &file {
                match (key.as_str(), value.as_object()) {
                    ("mcpServers", Some(servers)) => {
                        for (name, server) in servers {
                            let to = vec!["mcpServers".to_owned(), name.clone()];
                            let change = moved(&servers_file, &format!("mcpServers.{name}"), to);
                            self.target(target.clone(), true)
                                .add(change.value(server.clone()).unit(2));
                        }
                    }
                    _ => self.leave(&servers_file, key, "not an MCP setting"),
                }
            }
        }
        let switches_file = root.join(UNIPI_SWITCHES_FILE);
        let Some(file) = self.read(&switches_file) else {
            return;
        };
        for (key, value) in &file {
            let Some(servers) = value.as_object().filter(|_| key == "servers") else {
                let why = "Unipi's catalog sync; unipi-tui has no catalog";
                self.leave(&switches_file, key, why);
                continue;
            };
            for (name, entry) in servers {
                let from_key = format!("servers.{name}.enabled");
                match entry.get("enabled").and_then(Value::as_bool) {
                    Some(enabled) if known.contains(name) => {
                        let to = ["mcpServers", name, "enabled"].map(str::to_owned).to_vec();
                        let change = moved(&switches_file, &from_key, to);
                        self.target(target.clone(), true)
                            .add(change.value(json!(enabled)).unit(2));
                    }
                    Some(_) => self.leave(
                        &switches_file,
                        &from_key,
                        "no such server (Unipi passed it over too)",
                    ),
                    None => {}
                }
                if entry.get("addedAt").is_some() {
                    let key = format!("servers.{name}.addedAt");
                    self.leave(&switches_file, &key, "Unipi's bookkeeping");
                }
            }
        }
    }

    /// `autoCompaction.cooldownMs` in our own `compactor.json` under `root` becomes
    /// `cooldownSeconds` (ours wins when both are there).
    fn compactor_in_place(&mut self, root: &Path) {
        let file = root.join(COMPACTOR_FILE);
        let Some(map) = self.read(&file) else {
            return;
        };
        let path = ["autoCompaction", "cooldownMs"].map(str::to_owned).to_vec();
        if let Some(ms) = lookup(&map, &path).cloned() {
            let change = moved(&file, "autoCompaction.cooldownMs", cooldown_seconds());
            let change = Move {
                drop: Some(path),
                ..change.value(seconds(&ms))
            };
            self.target(file.clone(), false).add(change);
        }
    }

    /// Unipi's global `~/.unipi/config/compactor/config.json` into
    /// `~/.unipi/config/compactor.json`: the keys unipi-tui has; its strategies and presets are
    /// left alone.
    fn compactor_global(&mut self, home: &Path) {
        let file = home.join(UNIPI_GLOBAL_FILE);
        let Some(map) = self.read(&file) else {
            return;
        };
        let target = home.join(COMPACTOR_FILE);
        for (key, value) in &map {
            if !["overrideDefaultCompaction", "autoCompaction", "recall"].contains(&key.as_str()) {
                let why = "accepted and ignored by unipi-tui (strategies, presets, sandbox)";
                self.leave(&file, key, why);
                continue;
            }
            for (path, leaf) in leaves(vec![key.clone()], value) {
                let from_key = path.join(".");
                let change = match path.last().map(String::as_str) {
                    Some("cooldownMs") => moved(&file, &from_key, cooldown_seconds()),
                    _ => moved(&file, &from_key, path.clone()),
                };
                let value = match from_key.as_str() {
                    "autoCompaction.cooldownMs" => seconds(leaf),
                    _ => leaf.clone(),
                };
                self.target(target.clone(), false).add(change.value(value));
            }
        }
    }

    /// `unipi.askUser` and `unipi.footer` of Pi's `settings.json` into `ask-user.json` and
    /// `footer.json` under `home`, key by key; the rest of `unipi` is left alone.
    fn pi_settings(&mut self, file: &Path, home: &Path) {
        let Some(settings) = self.read(file) else {
            return;
        };
        let Some(unipi) = settings.get("unipi").and_then(Value::as_object) else {
            return;
        };
        for (key, value) in unipi {
            let target = match key.as_str() {
                "askUser" => ASK_USER_CONFIG_FILE,
                "footer" => FOOTER_FILE,
                "info" => {
                    let why =
                        "the dashboard's groups differ: set info.json with /unipi:info-settings";
                    self.leave(file, "unipi.info", why);
                    continue;
                }
                _ => {
                    self.leave(file, &format!("unipi.{key}"), "not read by unipi-tui");
                    continue;
                }
            };
            for (path, leaf) in leaves(Vec::new(), value) {
                let from_key = format!("unipi.{key}.{}", path.join("."));
                let first = path.first().map(String::as_str).unwrap_or_default();
                let preset = leaf
                    .as_str()
                    .and_then(unipi_widgets::footer::Preset::from_name);
                if key == "footer" && FOOTER_LOOKS.contains(&first) {
                    let why = "no counterpart: the native footer draws its own way";
                    self.leave(file, &from_key, why);
                } else if key == "footer" && first == "preset" && preset.is_none() {
                    self.leave(file, &from_key, "no such preset in unipi-tui");
                } else {
                    let change = moved(file, &from_key, path);
                    self.target(home.join(target), false)
                        .add(change.value(leaf.clone()));
                }
            }
        }
    }

    /// Unipi's `web-api/config.json` and `auth.json` under `root` into our `web.json` there (which
    /// holds the keys, so it is written 0600).
    fn web(&mut self, root: &Path) {
        let target = root.join(WEB_CONFIG_FILE);
        let config_file = root.join(UNIPI_CONFIG_FILE);
        let config = self.read(&config_file).map(Value::Object);
        for (path, leaf) in config.iter().flat_map(|config| leaves(Vec::new(), config)) {
            let from_key = path.join(".");
            let to: Option<(&str, Value)> = match from_key.as_str() {
                "smartFetch.maxChars" => Some(("maxChars", leaf.clone())),
                "smartFetch.batchConcurrency" => Some(("batchConcurrency", leaf.clone())),
                "smartFetch.timeoutMs" => Some(("timeoutSeconds", seconds(leaf))),
                "smartFetch.removeImages" => leaf.as_bool().map(|r| ("includeImages", json!(!r))),
                "cache.enabled" if leaf == &json!(false) => Some(("cacheTtlSeconds", json!(0))),
                "cache.ttlMs" => Some(("cacheTtlSeconds", seconds(leaf))),
                _ => None,
            };
            let provider = match path.as_slice() {
                [providers, id, enabled] if providers == "providers" && enabled == "enabled" => {
                    Some(id.as_str()).filter(|id| *id != "jina-reader")
                }
                _ => None,
            };
            let to = match (to, provider.map(|id| (id, web_provider(id)))) {
                (Some((key, value)), _) => Some((vec![key.to_owned()], value)),
                (None, Some((_, Some(name)))) => {
                    Some((provider_key(name, "enabled"), leaf.clone()))
                }
                _ => None,
            };
            match to {
                Some((to, value)) => {
                    let change = moved(&config_file, &from_key, to).value(value);
                    self.target(target.clone(), true).add(change);
                }
                None => self.leave(&config_file, &from_key, "no counterpart in web.json"),
            }
        }
        let auth_file = root.join(UNIPI_AUTH_FILE);
        let Some(auth) = self.read(&auth_file) else {
            return;
        };
        // Jina Search's key before Jina Reader's: the first one given stays (as when reading).
        let mut ids: Vec<&String> = auth.keys().collect();
        ids.sort_by_key(|id| *id == "jina-reader");
        for id in ids {
            match web_provider(id).filter(|_| id != "duckduckgo" && id != "searxng") {
                Some(name) => {
                    let change = moved(&auth_file, id, provider_key(name, "apiKey"));
                    self.target(target.clone(), true)
                        .add(change.value(auth[id].clone()));
                }
                None => self.leave(&auth_file, id, "no such search provider in unipi-tui"),
            }
        }
    }

    /// Writes every file of ours that changes; each with what came of it.
    pub(super) fn apply(&self) -> Vec<(PathBuf, anyhow::Result<()>)> {
        let changed = self.targets.iter().filter(|target| target.changed());
        changed
            .map(|target| (target.file.clone(), write(target)))
            .collect()
    }

    /// The report: each move (grouped by file → file), what is left alone, the problems.
    pub(super) fn render(&self, home: Option<&Path>, apply: bool) -> String {
        let mut text = match apply {
            true => "unipi-tui migrate: moving the Unipi setup into unipi-tui's files\n".to_owned(),
            false => "unipi-tui migrate: dry run, nothing is written (`unipi-tui migrate \
                      --apply` writes)\n"
                .to_owned(),
        };
        let mut heading = None;
        for target in &self.targets {
            for (change, outcome) in &target.moves {
                let pair = (change.from.clone(), target.file.clone());
                if heading.as_ref() != Some(&pair) {
                    let (from, to) = (show(home, &pair.0), show(home, &pair.1));
                    text.push_str(&format!("\n{from} → {to}\n"));
                    heading = Some(pair);
                }
                let to = change.to.join(".");
                let what = match outcome {
                    Outcome::Added => String::new(),
                    Outcome::Same => ": already there".to_owned(),
                    Outcome::KeptOurs(ours) => format!(": kept ours ({})", brief(ours)),
                    Outcome::Earlier => ": kept the value given above".to_owned(),
                    Outcome::Blocked => ": not written (our file is not a JSON object)".to_owned(),
                };
                text.push_str(&format!("  {} → {to}{what}\n", change.from_key));
            }
        }
        if !self.left_alone.is_empty() {
            text.push_str("\nLeft alone:\n");
            for (file, key, why) in &self.left_alone {
                let key = if key.is_empty() {
                    String::new()
                } else {
                    format!(" {key}")
                };
                text.push_str(&format!("  {}{key}: {why}\n", show(home, file)));
            }
        }
        if !self.problems.is_empty() {
            text.push_str("\nCould not be read (fix, then run again):\n");
            for problem in &self.problems {
                text.push_str(&format!("  {problem}\n"));
            }
        }
        if self.targets.is_empty() && self.left_alone.is_empty() && self.problems.is_empty() {
            text.push_str("\nNo Unipi config files found: nothing to migrate.\n");
        } else if !apply && self.targets.iter().any(Target::changed) {
            text.push_str("\nUnipi's files are read where they are either way; none is changed.\n");
        }
        text
    }
}

/// `path` with the home directory as `~`.
pub(super) fn show(home: Option<&Path>, path: &Path) -> String {
    match home.and_then(|home| path.strip_prefix(home).ok()) {
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}

/// The value, on one line and not too long.
fn brief(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

fn moved(from: &Path, from_key: &str, to: Vec<String>) -> Move {
    Move {
        from: from.to_owned(),
        from_key: from_key.to_owned(),
        unit: to.len(),
        to,
        value: Value::Null,
        drop: None,
    }
}

impl Move {
    fn value(self, value: Value) -> Move {
        Move { value, ..self }
    }

    fn unit(self, unit: usize) -> Move {
        Move { unit, ..self }
    }
}

/// Our name of Unipi's provider `id`.
fn web_provider(id: &str) -> Option<&'static str> {
    crate::web::search::unipi_provider(id)
}

/// `search.providers.<name>.<key>` in `web.json`.
fn provider_key(name: &str, key: &str) -> Vec<String> {
    ["search", "providers", name, key]
        .map(str::to_owned)
        .to_vec()
}

fn cooldown_seconds() -> Vec<String> {
    ["autoCompaction", "cooldownSeconds"]
        .map(str::to_owned)
        .to_vec()
}

/// Milliseconds as whole seconds, rounded up (a cooldown is never shortened); another value as
/// it is, for the reader to report.
fn seconds(ms: &Value) -> Value {
    ms.as_u64()
        .map_or_else(|| ms.clone(), |ms| json!(ms.div_ceil(1000)))
}

/// Every leaf (a value that is not an object) below `value`, with its path after `prefix`.
fn leaves(prefix: Vec<String>, value: &Value) -> Vec<(Vec<String>, &Value)> {
    match value.as_object() {
        Some(map) if !map.is_empty() => map
            .iter()
            .flat_map(|(key, value)| {
                let path = [prefix.as_slice(), std::slice::from_ref(key)].concat();
                leaves(path, value)
            })
            .collect(),
        _ => vec![(prefix, value)],
    }
}

fn lookup<'m>(map: &'m Map<String, Value>, path: &[String]) -> Option<&'m Value> {
    let (first, rest) = path.split_first()?;
    let value = map.get(first)?;
    match rest.is_empty() {
        true => Some(value),
        false => lookup(value.as_object()?, rest),
    }
}

/// Sets `path` to `value`, making the objects on the way; Err(the value in the way) when one on
/// the way is not an object.
fn insert(map: &mut Map<String, Value>, path: &[String], value: Value) -> Result<(), Value> {
    let Some((first, rest)) = path.split_first() else {
        return Ok(());
    };
    if rest.is_empty() {
        map.insert(first.clone(), value);
        return Ok(());
    }
    let next = map
        .entry(first.clone())
        .or_insert_with(|| Value::Object(Map::new()));
    match next {
        Value::Object(inner) => insert(inner, rest, value),
        other => Err(other.clone()),
    }
}

fn remove(map: &mut Map<String, Value>, path: &[String]) {
    match path.split_first() {
        Some((last, [])) => {
            map.remove(last);
        }
        Some((first, rest)) => {
            if let Some(Value::Object(inner)) = map.get_mut(first) {
                remove(inner, rest);
            }
        }
        None => {}
    }
}

/// Writes `target`'s merged object crash-safe; a file that may hold secrets is made 0600 first,
/// so the new one is too (a new file is always 0600).
fn write(target: &Target) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let file = &target.file;
    let mut text = serde_json::to_string_pretty(&Value::Object(target.merged.clone()))
        .context("encoding the merged settings")?;
    text.push('\n');
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    if target.secret && file.exists() {
        let private = std::fs::Permissions::from_mode(0o600);
        std::fs::set_permissions(file, private)
            .with_context(|| format!("making {} private", file.display()))?;
    }
    crate::sys::write_atomic(file, text.as_bytes())
        .with_context(|| format!("writing {}", file.display()))
}

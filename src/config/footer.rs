//! The footer's configuration: `~/.unipi/config/footer.json`, overridden by
//! `<workspace>/.unipi/config/footer.json`, with Unipi's key names so a Unipi `unipi.footer`
//! block can be pasted in:
//!
//! ```json
//! { "enabled": true,
//!   "preset": "default",
//!   "groups": { "core": { "show": true, "segments": { "cwd": false, "cost": true } },
//!               "notify": { "show": true } },
//!   "contextThresholds": { "warning": 60, "error": 85 } }
//! ```
//!
//! Modules' segments are toggled under their module's group like the core ones: the background
//! tasks' `tasks.running` and the helpers' `helpers.running` (`⧉ 2 helpers · 41k tok · $0.12`)
//! show from the default preset up, so `{"groups": {"helpers": {"show": false}}}` hides helper
//! spend and `{"preset": "minimal", "groups": {"helpers": {"segments": {"running": true}}}}`
//! keeps it in the minimal footer.
//!
//! Merging follows Unipi (its compactor and subagents configs): objects merge key by key, scalars
//! from the workspace file replace the home file's, so a workspace can flip one segment without
//! restating the rest. Unipi's appearance keys (`separator`, `iconStyle`, `zoneSeparator`,
//! `showFullLabels`) are accepted and ignored. Each file is checked on its own: a bad entry is
//! reported as `path:line:col: message` and skipped, the rest of the file still applies; a file
//! that is not JSON at all is reported and skipped whole. The defaults always stand underneath.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};
use unipi_widgets::footer::{ContextThresholds, FooterSettings, GroupToggles, Preset};

use super::error::{ConfigError, Origin};
use super::module_file::{load_module_config, sort_by_position};

/// The footer file, relative to the home directory or the workspace.
pub const FOOTER_FILE: &str = ".unipi/config/footer.json";

/// The resolved footer configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FooterConfig {
    /// `false` hides the footer row (Unipi's `enabled`).
    pub enabled: bool,
    /// Preset, toggles and context thresholds, as the footer widget takes them.
    pub settings: FooterSettings,
}

impl Default for FooterConfig {
    fn default() -> Self {
        FooterConfig {
            enabled: true,
            settings: FooterSettings::default(),
        }
    }
}

/// Load the footer config: defaults, then `<home>/.unipi/config/footer.json`, then
/// `<workspace>/.unipi/config/footer.json` (read once when both are the same file). Problems are
/// returned, never fatal.
pub fn load_footer_config(
    home: Option<&Path>,
    workspace: &Path,
) -> (FooterConfig, Vec<ConfigError>) {
    load_module_config(home, workspace, FOOTER_FILE, footer_config_from_sources)
}

/// The footer config from file contents given as (path, text), lowest precedence first.
pub fn footer_config_from_sources(sources: &[(&Path, &str)]) -> (FooterConfig, Vec<ConfigError>) {
    let mut errors = Vec::new();
    let mut config = FooterConfig::default();
    let mut thresholds_origin = None;
    for (path, text) in sources {
        let mut found = Vec::new();
        let layer = parse_layer(path, text, &mut found);
        sort_by_position(&mut found);
        errors.extend(found);
        if layer.thresholds_at.is_some() {
            thresholds_origin = layer.thresholds_at.clone();
        }
        layer.merge_into(&mut config);
    }
    let context = config.settings.context;
    if context.warning > context.error {
        if let Some(origin) = thresholds_origin {
            errors.push(origin.error(format!(
                "the warning threshold ({}%) is above the error threshold ({}%); using {}% and {}%",
                context.warning,
                context.error,
                ContextThresholds::default().warning,
                ContextThresholds::default().error,
            )));
        }
        config.settings.context = ContextThresholds::default();
    }
    (config, errors)
}

/// What one file says; `None` and absent keys leave the layer below in force.
#[derive(Debug, Default)]
struct Layer {
    enabled: Option<bool>,
    preset: Option<Preset>,
    groups: Vec<(String, GroupToggles)>,
    warning: Option<u8>,
    error: Option<u8>,
    /// Where this file set the thresholds, to point at if they end up inverted.
    thresholds_at: Option<Origin>,
}

impl Layer {
    fn merge_into(self, config: &mut FooterConfig) {
        if let Some(enabled) = self.enabled {
            config.enabled = enabled;
        }
        let settings = &mut config.settings;
        if let Some(preset) = self.preset {
            settings.preset = preset;
        }
        for (id, toggles) in self.groups {
            let group = settings.groups.entry(id).or_default();
            if toggles.show.is_some() {
                group.show = toggles.show;
            }
            group.segments.extend(toggles.segments);
        }
        if let Some(warning) = self.warning {
            settings.context.warning = warning;
        }
        if let Some(error) = self.error {
            settings.context.error = error;
        }
    }
}

/// One file's text with the positions of its keys and values, for error messages.
struct Source<'a> {
    path: &'a Path,
    text: &'a str,
    positions: HashMap<Vec<String>, Position>,
}

impl Source<'_> {
    /// Where the value at `keys` is (the file's start if unknown).
    fn value_at(&self, keys: &[&str]) -> Origin {
        self.origin(keys, |position| position.value)
    }

    /// Where the key at the end of `keys` is written.
    fn key_at(&self, keys: &[&str]) -> Origin {
        self.origin(keys, |position| position.key)
    }

    fn origin(&self, keys: &[&str], pick: impl Fn(&Position) -> usize) -> Origin {
        let keys: Vec<String> = keys.iter().map(|key| (*key).to_owned()).collect();
        let offset = self.positions.get(&keys).map_or(0, pick);
        Origin::new(self.path, self.text, offset)
    }
}

fn parse_layer(path: &Path, text: &str, errors: &mut Vec<ConfigError>) -> Layer {
    let mut layer = Layer::default();
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(err) => {
            errors.push(json_error(path, text, &err));
            return layer;
        }
    };
    let source = Source {
        path,
        text,
        positions: positions(text),
    };
    let Value::Object(root) = value else {
        errors.push(
            source
                .value_at(&[])
                .error("expected a JSON object".to_owned()),
        );
        return layer;
    };
    for (key, value) in &root {
        let at = [key.as_str()];
        match key.as_str() {
            "enabled" => match value.as_bool() {
                Some(enabled) => layer.enabled = Some(enabled),
                None => errors.push(source.value_at(&at).error(expected_bool("enabled"))),
            },
            "preset" => match value.as_str().and_then(Preset::from_name) {
                Some(preset) => layer.preset = Some(preset),
                None => errors.push(source.value_at(&at).error(format!(
                    "unknown preset {value}; expected {}",
                    quoted_list(Preset::ALL.iter().map(|preset| preset.name()))
                ))),
            },
            "groups" => match value.as_object() {
                Some(groups) => layer.groups = parse_groups(&source, groups, errors),
                None => errors.push(
                    source
                        .value_at(&at)
                        .error("expected an object of groups, e.g. {\"core\": {…}}".to_owned()),
                ),
            },
            "contextThresholds" => {
                layer.thresholds_at = Some(source.value_at(&at));
                parse_thresholds(&source, value, &mut layer, errors);
            }
            // Unipi's appearance settings: the native footer draws its own way.
            "separator" | "iconStyle" | "zoneSeparator" | "showFullLabels" => {}
            other => errors.push(source.key_at(&at).error(format!(
                "unknown key {other:?}; expected enabled, preset, groups or contextThresholds"
            ))),
        }
    }
    layer
}

fn parse_groups(
    source: &Source,
    groups: &Map<String, Value>,
    errors: &mut Vec<ConfigError>,
) -> Vec<(String, GroupToggles)> {
    let mut parsed = Vec::new();
    for (id, value) in groups {
        let Some(fields) = value.as_object() else {
            errors.push(source.value_at(&["groups", id]).error(format!(
                "expected an object for group {id:?}, e.g. {{\"show\": true, \"segments\": {{}}}}"
            )));
            continue;
        };
        let mut toggles = GroupToggles::default();
        for (key, value) in fields {
            let at = ["groups", id.as_str(), key.as_str()];
            match key.as_str() {
                "show" => match value.as_bool() {
                    Some(show) => toggles.show = Some(show),
                    None => errors.push(source.value_at(&at).error(expected_bool("show"))),
                },
                "segments" => match value.as_object() {
                    Some(segments) => {
                        for (segment, shown) in segments {
                            match shown.as_bool() {
                                Some(shown) => {
                                    toggles.segments.insert(segment.clone(), shown);
                                }
                                None => errors.push(
                                    source
                                        .value_at(&["groups", id, "segments", segment])
                                        .error(expected_bool(segment)),
                                ),
                            }
                        }
                    }
                    None => errors.push(source.value_at(&at).error(
                        "expected an object of segment toggles, e.g. {\"cwd\": false}".to_owned(),
                    )),
                },
                other => errors.push(source.key_at(&at).error(format!(
                    "unknown key {other:?} in group {id:?}; expected show or segments"
                ))),
            }
        }
        parsed.push((id.clone(), toggles));
    }
    parsed
}

fn parse_thresholds(
    source: &Source,
    value: &Value,
    layer: &mut Layer,
    errors: &mut Vec<ConfigError>,
) {
    let Some(fields) = value.as_object() else {
        errors.push(
            source
                .value_at(&["contextThresholds"])
                .error("expected an object, e.g. {\"warning\": 60, \"error\": 85}".to_owned()),
        );
        return;
    };
    for (key, value) in fields {
        let at = ["contextThresholds", key.as_str()];
        let slot = match key.as_str() {
            "warning" => &mut layer.warning,
            "error" => &mut layer.error,
            other => {
                errors.push(source.key_at(&at).error(format!(
                    "unknown key {other:?} in contextThresholds; expected warning or error"
                )));
                continue;
            }
        };
        match value
            .as_u64()
            .and_then(|n| u8::try_from(n).ok())
            .filter(|n| *n <= 100)
        {
            Some(percent) => *slot = Some(percent),
            None => errors.push(source.value_at(&at).error(format!(
                "expected a whole percentage from 0 to 100 for {key}, found {value}"
            ))),
        }
    }
}

/// A JSON syntax error at the position serde_json reports.
fn json_error(path: &Path, text: &str, err: &serde_json::Error) -> ConfigError {
    // serde_json counts the column in bytes from 1; turn it into an offset so the column we
    // report counts characters like every other config error.
    let line_start: usize = text
        .split_inclusive('\n')
        .take(err.line().saturating_sub(1))
        .map(str::len)
        .sum();
    let offset = line_start + err.column().saturating_sub(1);
    let message = err.to_string();
    let message = message
        .rsplit_once(" at line ")
        .map_or(message.as_str(), |(head, _)| head);
    ConfigError::at(path, text, offset, format!("invalid JSON: {message}"))
}

fn expected_bool(key: &str) -> String {
    format!("expected true or false for {key}")
}

fn quoted_list<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let items: Vec<String> = items.map(|item| format!("{item:?}")).collect();
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => items.concat(),
    }
}

/// Where a key and its value start, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Position {
    key: usize,
    value: usize,
}

/// The position of every object member in `text` (valid JSON), by key path; the root is the
/// empty path. serde_json's `Value` keeps no positions, and an error must point at its value.
fn positions(text: &str) -> HashMap<Vec<String>, Position> {
    let mut scanner = Scanner {
        text,
        bytes: text.as_bytes(),
        at: 0,
        found: HashMap::new(),
    };
    scanner.skip_space();
    let root = scanner.at;
    scanner.found.insert(
        Vec::new(),
        Position {
            key: root,
            value: root,
        },
    );
    scanner.value(&mut Vec::new());
    scanner.found
}

/// A forward-only walk over JSON that serde_json has already accepted; on anything unexpected it
/// stops early rather than guessing.
struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    found: HashMap<Vec<String>, Position>,
}

impl Scanner<'_> {
    fn value(&mut self, keys: &mut Vec<String>) {
        self.skip_space();
        match self.bytes.get(self.at) {
            Some(b'{') => {
                self.at += 1;
                loop {
                    self.skip_space();
                    if self.bytes.get(self.at) != Some(&b'"') {
                        self.at += 1; // the closing brace (or give up on a malformed object)
                        return;
                    }
                    let key_at = self.at;
                    let key = self.string();
                    self.skip_space();
                    self.at += 1; // ':'
                    self.skip_space();
                    keys.push(key);
                    self.found.insert(
                        keys.clone(),
                        Position {
                            key: key_at,
                            value: self.at,
                        },
                    );
                    self.value(keys);
                    keys.pop();
                    self.skip_space();
                    if self.bytes.get(self.at) == Some(&b',') {
                        self.at += 1;
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                let mut index = 0;
                loop {
                    self.skip_space();
                    match self.bytes.get(self.at) {
                        Some(b']') | None => {
                            self.at += 1;
                            return;
                        }
                        Some(_) => {}
                    }
                    keys.push(index.to_string());
                    self.value(keys);
                    keys.pop();
                    index += 1;
                    self.skip_space();
                    if self.bytes.get(self.at) == Some(&b',') {
                        self.at += 1;
                    } else if self.bytes.get(self.at) != Some(&b']') {
                        return;
                    }
                }
            }
            Some(b'"') => {
                self.string();
            }
            Some(_) => {
                while let Some(byte) = self.bytes.get(self.at) {
                    if matches!(byte, b',' | b'}' | b']') || byte.is_ascii_whitespace() {
                        break;
                    }
                    self.at += 1;
                }
            }
            None => {}
        }
    }

    /// The string starting at the current quote, decoded; moves past its closing quote.
    fn string(&mut self) -> String {
        let start = self.at;
        self.at += 1;
        while let Some(byte) = self.bytes.get(self.at) {
            match byte {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    break;
                }
                _ => self.at += 1,
            }
        }
        let end = self.at.min(self.text.len());
        self.text
            .get(start..end)
            .and_then(|raw| serde_json::from_str(raw).ok())
            .unwrap_or_default()
    }

    fn skip_space(&mut self) {
        while self
            .bytes
            .get(self.at)
            .is_some_and(|byte| byte.is_ascii_whitespace())
        {
            self.at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn write(dir: &Path, text: &str) {
        let file = dir.join(FOOTER_FILE);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }

    fn toggles(show: Option<bool>, segments: &[(&str, bool)]) -> GroupToggles {
        GroupToggles {
            show,
            segments: segments
                .iter()
                .map(|(id, shown)| ((*id).to_owned(), *shown))
                .collect(),
        }
    }

    /// The default config with `edit` applied.
    fn config_with(edit: impl FnOnce(&mut FooterConfig)) -> FooterConfig {
        let mut config = FooterConfig::default();
        edit(&mut config);
        config
    }

    #[test]
    fn merge_table() {
        let home_text = r#"{
            "preset": "minimal",
            "groups": {"core": {"segments": {"cwd": false, "cost": true}}},
            "contextThresholds": {"warning": 50}
        }"#;
        let workspace_text = r#"{
            "preset": "full",
            "groups": {"core": {"segments": {"cwd": true}}, "notify": {"show": true}},
            "contextThresholds": {"error": 90}
        }"#;
        let bad_text = "{\"preset\": \"full\",\n  \"enabled\": false,,\n}";
        let home_config = config_with(|c| {
            c.settings.preset = Preset::Minimal;
            c.settings.groups.insert(
                "core".to_owned(),
                toggles(None, &[("cwd", false), ("cost", true)]),
            );
            c.settings.context.warning = 50;
        });
        // (name, home file, workspace file, resulting config, number of errors)
        type Case<'a> = (
            &'a str,
            Option<&'a str>,
            Option<&'a str>,
            FooterConfig,
            usize,
        );
        let cases: [Case; 6] = [
            ("neither", None, None, FooterConfig::default(), 0),
            ("home only", Some(home_text), None, home_config.clone(), 0),
            (
                "workspace only",
                None,
                Some(workspace_text),
                config_with(|c| {
                    c.settings.preset = Preset::Full;
                    c.settings
                        .groups
                        .insert("core".to_owned(), toggles(None, &[("cwd", true)]));
                    c.settings
                        .groups
                        .insert("notify".to_owned(), toggles(Some(true), &[]));
                    c.settings.context.error = 90;
                }),
                0,
            ),
            (
                // Key by key: the workspace turns cwd back on and keeps the home's cost toggle
                // and warning threshold.
                "both",
                Some(home_text),
                Some(workspace_text),
                config_with(|c| {
                    c.settings.preset = Preset::Full;
                    c.settings.groups.insert(
                        "core".to_owned(),
                        toggles(None, &[("cwd", true), ("cost", true)]),
                    );
                    c.settings
                        .groups
                        .insert("notify".to_owned(), toggles(Some(true), &[]));
                    c.settings.context = ContextThresholds {
                        warning: 50,
                        error: 90,
                    };
                }),
                0,
            ),
            // A broken workspace file is skipped whole; the home file still applies.
            (
                "bad workspace file",
                Some(home_text),
                Some(bad_text),
                home_config,
                1,
            ),
            (
                "bad home file",
                Some(bad_text),
                None,
                FooterConfig::default(),
                1,
            ),
        ];
        for (name, home_text, workspace_text, want, error_count) in cases {
            let home = tempfile::tempdir().unwrap();
            let workspace = tempfile::tempdir().unwrap();
            if let Some(text) = home_text {
                write(home.path(), text);
            }
            if let Some(text) = workspace_text {
                write(workspace.path(), text);
            }
            let (config, errors) = load_footer_config(Some(home.path()), workspace.path());
            assert_eq!(config, want, "{name}");
            assert_eq!(errors.len(), error_count, "{name}: {errors:?}");
        }
    }

    #[test]
    fn bad_json_is_reported_at_its_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "{\"preset\": \"full\",\n  \"enabled\": false,,\n}",
        );
        let (config, errors) = load_footer_config(None, dir.path());
        assert_eq!(config, FooterConfig::default());
        let file = dir.path().join(FOOTER_FILE);
        assert_eq!(
            errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [format!(
                "{}:2:20: invalid JSON: key must be a string",
                file.display()
            )]
        );
    }

    #[test]
    fn bad_entries_are_reported_and_skipped() {
        let path = Path::new("/w/.unipi/config/footer.json");
        let text = r#"{
  "preset": "tiny",
  "enabled": "yes",
  "colour": "red",
  "separator": "pipe",
  "groups": {
    "core": {"show": 1, "segments": {"cwd": false, "git": "no"}, "order": []},
    "mcp": true
  },
  "contextThresholds": {"warning": 70, "error": 120.5, "info": 1}
}"#;
        let (config, errors) = footer_config_from_sources(&[(path, text)]);
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let at =
            |line_col: &str, message: &str| format!("{}:{line_col}: {message}", path.display());
        assert_eq!(
            messages,
            [
                at(
                    "2:13",
                    "unknown preset \"tiny\"; expected \"minimal\", \"default\" or \"full\""
                ),
                at("3:14", "expected true or false for enabled"),
                at(
                    "4:3",
                    "unknown key \"colour\"; expected enabled, preset, groups or contextThresholds"
                ),
                at("7:22", "expected true or false for show"),
                at("7:59", "expected true or false for git"),
                at(
                    "7:66",
                    "unknown key \"order\" in group \"core\"; expected show or segments"
                ),
                at(
                    "8:12",
                    "expected an object for group \"mcp\", e.g. {\"show\": true, \"segments\": {}}"
                ),
                at(
                    "10:49",
                    "expected a whole percentage from 0 to 100 for error, found 120.5"
                ),
                at(
                    "10:56",
                    "unknown key \"info\" in contextThresholds; expected warning or error"
                ),
            ]
        );
        // What was good still applies.
        let want = config_with(|c| {
            c.settings
                .groups
                .insert("core".to_owned(), toggles(None, &[("cwd", false)]));
            c.settings.context.warning = 70;
        });
        assert_eq!(config, want);
    }

    #[test]
    fn inverted_thresholds_fall_back_to_the_defaults() {
        let home = Path::new("/h/.unipi/config/footer.json");
        let workspace = Path::new("/w/.unipi/config/footer.json");
        let (config, errors) = footer_config_from_sources(&[
            (home, r#"{"contextThresholds": {"error": 70}}"#),
            (
                workspace,
                "{\n  \"contextThresholds\": {\"warning\": 80}\n}",
            ),
        ]);
        assert_eq!(config.settings.context, ContextThresholds::default());
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "/w/.unipi/config/footer.json:2:24: the warning threshold (80%) is above the error \
              threshold (70%); using 60% and 85%"
            ]
        );
    }

    #[test]
    fn a_non_object_file_is_reported() {
        let path = Path::new("/h/.unipi/config/footer.json");
        let (config, errors) = footer_config_from_sources(&[(path, "\n  [1, 2]")]);
        assert_eq!(config, FooterConfig::default());
        assert_eq!(
            errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["/h/.unipi/config/footer.json:2:3: expected a JSON object"]
        );
    }

    #[test]
    fn workspace_at_home_is_read_once() {
        let home = tempfile::tempdir().unwrap();
        write(home.path(), r#"{"preset": "nope"}"#);
        let (config, errors) = load_footer_config(Some(home.path()), home.path());
        assert_eq!(config, FooterConfig::default());
        assert_eq!(errors.len(), 1, "{errors:?}");
    }

    #[test]
    fn unipi_footer_block_loads() {
        // Unipi's `unipi.footer` settings, pasted as they are.
        let path = Path::new("/h/.unipi/config/footer.json");
        let text = r#"{"enabled": false, "preset": "minimal", "separator": "powerline-thin",
            "iconStyle": "nerd", "zoneSeparator": "│", "showFullLabels": false,
            "groups": {"core": {"show": true, "segments": {"clock": false}}}}"#;
        let (config, errors) = footer_config_from_sources(&[(path, text)]);
        assert_eq!(errors, []);
        assert!(!config.enabled);
        assert_eq!(config.settings.preset, Preset::Minimal);
        assert_eq!(
            config.settings.groups.get("core"),
            Some(&toggles(Some(true), &[("clock", false)]))
        );
    }

    #[test]
    fn the_helpers_segment_follows_presets_and_its_group() {
        let spend = unipi_widgets::agents::HelperSpend {
            running: 2,
            finished: 0,
            tokens: 41_000,
            cost: 0.12,
        };
        let Some(segment) = unipi_widgets::agents::helpers_segment(&spend) else {
            panic!("running helpers have a segment");
        };
        let path = Path::new("/h/.unipi/config/footer.json");
        // (footer.json, shown)
        let cases = [
            ("{}", true),
            (r#"{"preset": "minimal"}"#, false),
            (
                r#"{"preset": "minimal", "groups": {"helpers": {"segments": {"running": true}}}}"#,
                true,
            ),
            (r#"{"groups": {"helpers": {"show": false}}}"#, false),
            (
                r#"{"groups": {"helpers": {"segments": {"running": false}}}}"#,
                false,
            ),
            (r#"{"preset": "full"}"#, true),
        ];
        for (text, shown) in cases {
            let (config, errors) = footer_config_from_sources(&[(path, text)]);
            assert_eq!(errors, [], "{text}");
            assert_eq!(config.settings.shows(&segment), shown, "{text}");
        }
    }

    #[test]
    fn positions_table() {
        let text = "{\"a\": 1, \"b\": {\"c\": [true, {\"d\": \"x\\\"y\"}]}, \"e\\u0041\": null}";
        let found: BTreeMap<String, (usize, usize)> = positions(text)
            .into_iter()
            .map(|(keys, position)| (keys.join("."), (position.key, position.value)))
            .collect();
        let want: BTreeMap<String, (usize, usize)> = [
            ("", (0, 0)),
            ("a", (1, 6)),
            ("b", (9, 14)),
            ("b.c", (15, 20)),
            ("b.c.1.d", (28, 33)),
            ("eA", (44, 55)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        assert_eq!(found, want);
    }
}

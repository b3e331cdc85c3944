//! The fusion presets file: `~/.unipi/config/fusion.json`, overridden by
//! `<workspace>/.unipi/config/fusion.json` (presets by name, the other keys one by one):
//!
//! ```json
//! { "active": "daily",
//!   "presets": { "daily": { "primary": "anthropic/claude-opus-4-1",
//!                           "sidekick": "anthropic/claude-haiku-4-5",
//!                           "fallback": "openai/gpt-5", "cooldownSeconds": 300 } },
//!   "warmPool": { "size": 2, "idleSeconds": 600 },
//!   "nameSessions": true }
//! ```
//!
//! `fallback` and `cooldownSeconds` are optional (no fallback; 300 s); `nameSessions` (default
//! true) lets the sidekick name a session that has no name after its first turn. A bad preset or
//! key is a [`ConfigError`] naming file, line and column; the rest of the file still applies. Edits
//! (the picker's confirm, the preset editor) are written back with the crash-safe JSON merge into
//! the workspace file when it exists, else the home file, keeping keys this module does not know.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::config::error::BadValue;
use crate::config::json::Doc;
use crate::config::module_file::{
    ModuleConfig, Object, Style, non_empty, or_null, positive, to_usize,
};
use crate::config::{ConfigError, read_module_config};

/// The file's path below the home or workspace directory.
pub(crate) const FUSION_CONFIG_FILE: &str = ".unipi/config/fusion.json";

/// How long the pair stays on its fallback after a rate-limit or quota error, by default.
pub(crate) const DEFAULT_COOLDOWN: Duration = Duration::from_secs(300);
/// Idle sidekick Pi processes kept warm for helpers, by default.
pub const DEFAULT_POOL_SIZE: usize = 2;
/// The most a pool may hold, whatever the file says (each idle Pi is a Node process).
pub(crate) const MAX_POOL_SIZE: usize = 8;
/// How long a warm process may wait unused before it is stopped, by default.
pub(crate) const DEFAULT_POOL_IDLE: Duration = Duration::from_secs(600);

/// A model as presets name it: `provider/id` (the id may hold further slashes).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ModelRef {
    pub provider: String,
    pub id: String,
}

impl ModelRef {
    /// `provider/id`; `None` unless both parts are non-empty.
    pub fn parse(text: &str) -> Option<Self> {
        let (provider, id) = text.trim().split_once('/')?;
        (!provider.is_empty() && !id.is_empty()).then(|| ModelRef {
            provider: provider.to_owned(),
            id: id.to_owned(),
        })
    }
}

impl std::fmt::Display for ModelRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.provider, self.id)
    }
}

/// A named pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preset {
    pub primary: ModelRef,
    pub sidekick: ModelRef,
    /// Where the primary's work goes while it is rate-limited or out of quota.
    pub fallback: Option<ModelRef>,
    pub cooldown: Duration,
}

impl Preset {
    pub fn new(primary: ModelRef, sidekick: ModelRef) -> Self {
        Preset {
            primary,
            sidekick,
            fallback: None,
            cooldown: DEFAULT_COOLDOWN,
        }
    }

    fn to_json(&self) -> Value {
        let mut object = json!({
            "primary": self.primary.to_string(),
            "sidekick": self.sidekick.to_string(),
        });
        if let Some(fallback) = &self.fallback {
            object["fallback"] = json!(fallback.to_string());
        }
        if self.cooldown != DEFAULT_COOLDOWN {
            object["cooldownSeconds"] = json!(self.cooldown.as_secs());
        }
        object
    }
}

/// The warm pool of idle sidekick Pi processes the helpers keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSettings {
    pub size: usize,
    pub idle: Duration,
}

impl Default for PoolSettings {
    fn default() -> Self {
        PoolSettings {
            size: DEFAULT_POOL_SIZE,
            idle: DEFAULT_POOL_IDLE,
        }
    }
}

/// What the files say, merged.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FusionConfig {
    /// The preset applied at start-up (it names one in `presets`).
    pub active: Option<String>,
    pub presets: BTreeMap<String, Preset>,
    pub pool: PoolSettings,
    /// The sidekick names sessions that have none.
    pub name_sessions: bool,
    /// The file edits are written to.
    pub target: PathBuf,
}

impl Default for FusionConfig {
    fn default() -> Self {
        FusionConfig {
            active: None,
            presets: BTreeMap::new(),
            pool: PoolSettings::default(),
            name_sessions: true,
            target: PathBuf::new(),
        }
    }
}

impl FusionConfig {
    /// The active preset, if one is set and exists.
    pub(crate) fn active_preset(&self) -> Option<(&str, &Preset)> {
        let name = self.active.as_deref()?;
        self.presets.get(name).map(|preset| (name, preset))
    }

    /// Saves `presets` and `active` into [`FusionConfig::target`] (crash-safe, other keys kept).
    pub(crate) fn save(&self) -> anyhow::Result<()> {
        let presets: Map<String, Value> = self
            .presets
            .iter()
            .map(|(name, preset)| (name.clone(), preset.to_json()))
            .collect();
        let values = json!({ "active": self.active, "presets": presets });
        crate::config::merge_json_file(&self.target, &values)
    }
}

/// The home file, then the workspace file over it; edits go to the workspace file when it
/// exists, else to the home file.
impl ModuleConfig for FusionConfig {
    const FILE: &'static str = FUSION_CONFIG_FILE;
    const STYLE: Style = Style::BACKTICKS.unsorted();

    fn read(&mut self, file: &mut Object<'_>) {
        let name = "a preset's name, or null";
        file.set("active", name, &mut self.active, or_null(non_empty));
        file.flag("nameSessions", &mut self.name_sessions);
        if let Some(presets) = file.section("presets", "an object of named presets") {
            for (name, preset) in presets.members() {
                match parse_preset(preset) {
                    Ok(preset) => {
                        self.presets.insert(name.clone(), preset);
                    }
                    Err(message) => presets.report(name, format!("preset `{name}`: {message}")),
                }
            }
        }
        if let Some(value) = file.value("warmPool") {
            match parse_pool(value, self.pool) {
                Ok(pool) => self.pool = pool,
                Err(message) => file.report("warmPool", format!("`warmPool`: {message}")),
            }
        }
    }

    /// An `active` preset no file defines is reported where the last file set it.
    fn finish(&mut self, files: &[Doc<'_>], errors: &mut Vec<ConfigError>) {
        let Some(name) = self.active.take_if(|name| !self.presets.contains_key(name)) else {
            return;
        };
        if let Some(doc) = files
            .iter()
            .rev()
            .find(|doc| doc.root.get("active").is_some())
        {
            let at = doc.offset(&["active".to_owned()], false);
            let message =
                format!("`active` names preset `{name}`, which no file defines; fusion stays off");
            errors.push(ConfigError::at(doc.path, doc.text, at, message));
        }
    }

    fn load(home: Option<&Path>, workspace: &Path) -> (Self, Vec<ConfigError>) {
        let (sources, mut errors) = read_module_config(home, workspace, FUSION_CONFIG_FILE);
        let (mut config, more) = Self::from_sources(&sources);
        errors.extend(more);
        let workspace_file = workspace.join(FUSION_CONFIG_FILE);
        config.target = match home {
            Some(home) if !workspace_file.exists() => home.join(FUSION_CONFIG_FILE),
            _ => workspace_file,
        };
        (config, errors)
    }
}

fn parse_preset(value: &Value) -> Result<Preset, BadValue> {
    let object = value
        .as_object()
        .ok_or("must be an object with `primary` and `sidekick`")?;
    let model = |key: &str| -> Result<Option<ModelRef>, BadValue> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => ModelRef::parse(text)
                .map(Some)
                .ok_or_else(|| format!("`{key}` must be `provider/id`, not {text:?}").into()),
            Some(other) => {
                Err(format!("`{key}` must be a string `provider/id`, not {other}").into())
            }
        }
    };
    let cooldown = match object.get("cooldownSeconds") {
        None | Some(Value::Null) => Ok(DEFAULT_COOLDOWN),
        Some(value) => seconds(value, "cooldownSeconds"),
    };
    Ok(Preset {
        primary: model("primary")?.ok_or("`primary` is missing")?,
        sidekick: model("sidekick")?.ok_or("`sidekick` is missing")?,
        fallback: model("fallback")?,
        cooldown: cooldown?,
    })
}

fn parse_pool(value: &Value, mut pool: PoolSettings) -> Result<PoolSettings, BadValue> {
    let object = value
        .as_object()
        .ok_or("must be an object with `size` and `idleSeconds`")?;
    if let Some(size) = object.get("size") {
        let max = MAX_POOL_SIZE;
        pool.size = (size.as_u64().map(to_usize).filter(|size| *size <= max))
            .ok_or(format!("`size` must be a whole number from 0 to {max}"))?;
    }
    if let Some(idle) = object.get("idleSeconds") {
        pool.idle = seconds(idle, "idleSeconds")?;
    }
    Ok(pool)
}

/// `key`'s value, a whole number of seconds above 0.
fn seconds(value: &Value, key: &str) -> Result<Duration, BadValue> {
    let message = || format!("`{key}` must be a whole number of seconds above 0").into();
    positive(value).map(Duration::from_secs).ok_or_else(message)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;

    fn model(text: &str) -> ModelRef {
        ModelRef::parse(text).unwrap()
    }

    struct Dirs {
        _root: tempfile::TempDir,
        home: PathBuf,
        workspace: PathBuf,
    }

    fn dirs() -> Dirs {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let workspace = root.path().join("work");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&workspace).unwrap();
        Dirs {
            _root: root,
            home,
            workspace,
        }
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn model_refs_table() {
        let cases = [
            (
                "anthropic/claude-haiku-4-5",
                Some(("anthropic", "claude-haiku-4-5")),
            ),
            (
                "openrouter/meta/llama-3",
                Some(("openrouter", "meta/llama-3")),
            ),
            (" p/m ", Some(("p", "m"))),
            ("no-slash", None),
            ("/id", None),
            ("provider/", None),
        ];
        for (text, want) in cases {
            let got = ModelRef::parse(text);
            let got = got.as_ref().map(|m| (m.provider.as_str(), m.id.as_str()));
            assert_eq!(got, want, "{text:?}");
        }
        assert_eq!(model("p/m").to_string(), "p/m");
    }

    #[test]
    fn presets_round_trip_through_the_file_keeping_other_keys() {
        let dirs = dirs();
        let home_file = dirs.home.join(FUSION_CONFIG_FILE);
        write(&home_file, r#"{"warmPool": {"size": 1}, "note": "kept"}"#);
        let (mut config, errors) = FusionConfig::load(Some(&dirs.home), &dirs.workspace);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(config.target, home_file, "no workspace file: edits go home");
        assert_eq!(config.pool.size, 1);
        // Save, rename, delete, apply — each written and read back.
        let mut daily = Preset::new(model("p/big"), model("p/small"));
        daily.fallback = Some(model("q/other"));
        daily.cooldown = Duration::from_secs(60);
        config.presets.insert("daily".into(), daily.clone());
        config.presets.insert(
            "cheap".into(),
            Preset::new(model("p/mid"), model("p/small")),
        );
        config.active = Some("daily".into());
        config.save().unwrap();
        let (mut again, errors) = FusionConfig::load(Some(&dirs.home), &dirs.workspace);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(again.active_preset(), Some(("daily", &daily)));
        assert_eq!(again.presets.len(), 2);
        let renamed = again.presets.remove("cheap").unwrap();
        again.presets.insert("thrifty".into(), renamed);
        again.presets.remove("daily");
        again.active = Some("thrifty".into());
        again.save().unwrap();
        let (last, _) = FusionConfig::load(Some(&dirs.home), &dirs.workspace);
        assert_eq!(last.presets.keys().collect::<Vec<_>>(), ["thrifty"]);
        assert_eq!(last.active_preset().unwrap().1.primary, model("p/mid"));
        let text = std::fs::read_to_string(&home_file).unwrap();
        assert!(text.contains("\"note\": \"kept\""), "{text}");
        // Fusion off: active null.
        let mut off = last.clone();
        off.active = None;
        off.save().unwrap();
        assert_eq!(
            FusionConfig::load(Some(&dirs.home), &dirs.workspace)
                .0
                .active,
            None
        );
    }

    #[test]
    fn the_workspace_file_overrides_presets_by_name_and_takes_the_edits() {
        let dirs = dirs();
        write(
            &dirs.home.join(FUSION_CONFIG_FILE),
            r#"{"active": "a", "presets": {"a": {"primary": "p/1", "sidekick": "p/2"},
                "b": {"primary": "p/3", "sidekick": "p/4"}}}"#,
        );
        let workspace_file = dirs.workspace.join(FUSION_CONFIG_FILE);
        write(
            &workspace_file,
            r#"{"active": "b", "presets": {"b": {"primary": "w/3", "sidekick": "w/4"}}}"#,
        );
        let (config, errors) = FusionConfig::load(Some(&dirs.home), &dirs.workspace);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(config.target, workspace_file);
        let (name, preset) = config.active_preset().unwrap();
        assert_eq!((name, preset.primary.to_string()), ("b", "w/3".to_owned()));
        assert_eq!(config.presets["a"].sidekick, model("p/2"));
    }

    #[test]
    fn bad_entries_name_file_line_and_column_and_the_rest_applies() {
        let dirs = dirs();
        let file = dirs.home.join(FUSION_CONFIG_FILE);
        write(
            &file,
            "{\"active\": \"gone\",\n \"presets\": {\n  \"ok\": {\"primary\": \"p/a\", \"sidekick\": \"p/b\"},\n  \"bad\": {\"primary\": \"nope\", \"sidekick\": \"p/b\"},\n  \"cool\": {\"primary\": \"p/a\", \"sidekick\": \"p/b\", \"cooldownSeconds\": 0}},\n \"warmPool\": {\"size\": 99}}",
        );
        let (config, errors) = FusionConfig::load(Some(&dirs.home), &dirs.workspace);
        let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let shown = texts.join("\n");
        assert_eq!(errors.len(), 4, "{shown}");
        for want in [
            ":4:3: preset `bad`: `primary` must be `provider/id`",
            "preset `cool`: `cooldownSeconds`",
            ":6:2: `warmPool`: `size` must be",
            ":1:2: `active` names preset `gone`",
        ] {
            assert!(texts.iter().any(|t| t.contains(want)), "{want}: {shown}");
        }
        assert_eq!(config.presets.keys().collect::<Vec<_>>(), ["ok"]);
        assert_eq!(config.active, None);
        assert_eq!(config.pool, PoolSettings::default());
        // Not JSON at all: one error, defaults stand.
        write(&file, "{ not json");
        let (config, errors) = FusionConfig::load(Some(&dirs.home), &dirs.workspace);
        assert_eq!(errors.len(), 1);
        assert!(config.presets.is_empty());
    }
}

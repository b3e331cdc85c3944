//! The notification settings, in the original's files and keys so Unipi users keep theirs:
//!
//! - `~/.unipi/config/notify/config.json`: `defaultPlatforms`, `events` (`{key: {enabled,
//!   platforms, priority?}}`), `native`, `gotify` (`serverUrl`, `appToken`, `priority`), `telegram`
//!   (`botToken`, `chatId`), plus what the workbench adds beside them: `terminal` (`enabled`,
//!   `method`), `telegram.apiUrl` (a self-hosted Bot API server), `silenceAfterInputSeconds`,
//!   `sendTimeoutSeconds` and `headlessAgentEnd`. Keys it does not know (`recap`,
//!   `native.windowsAppId`) are kept when the settings overlay saves.
//! - `ntfy.json`, its own file: the project's (`<workspace>/.unipi/config/notify/ntfy.json`) if it
//!   exists, else the global one (`~/.unipi/config/notify/ntfy.json`), each merged over the
//!   defaults; without either, an `ntfy` section in `config.json` that was ever set up (the
//!   original's legacy place) is read instead of being migrated on disk.
//!
//! A key of the wrong type is a [`ConfigError`] naming file, line and column; its default stays.
//! Secrets (tokens) are kept here and in the platforms' requests only — [`mask`] is what every
//! display shows of them.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::config::error::{ConfigError, read_user_file};
use crate::config::module_file::{ModuleConfig, Object, non_empty, read_json_file, whole_in};

/// `config.json` below the home directory.
pub const CONFIG_FILE: &str = ".unipi/config/notify/config.json";
/// `ntfy.json` below the home or workspace directory.
pub(crate) const NTFY_FILE: &str = ".unipi/config/notify/ntfy.json";

pub(crate) const DEFAULT_NTFY_SERVER: &str = "https://ntfy.sh";
pub(crate) const DEFAULT_TELEGRAM_API: &str = "https://api.telegram.org";

crate::config::keyed_enum! {
    /// A place a notification can go.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub(crate) enum Platform {
        Native = "native",
        Terminal = "terminal",
        Ntfy = "ntfy",
        Gotify = "gotify",
        Telegram = "telegram",
    }
}

impl Platform {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Platform::Native => "Native",
            Platform::Terminal => "Terminal",
            Platform::Ntfy => "ntfy",
            Platform::Gotify => "Gotify",
            Platform::Telegram => "Telegram",
        }
    }
}

crate::config::keyed_enum! {
    /// How urgent a notification is.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    pub(crate) enum Priority {
        Low = "low",
        Normal = "normal",
        High = "high",
    }
}

crate::config::keyed_enum! {
    /// Which terminal notification the terminal channel sends.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum TerminalMethod {
        /// Chosen from the environment (kitty: OSC 99; iTerm2, WezTerm, Ghostty: OSC 9; foot,
        /// urxvt: OSC 777; anything else: BEL).
        Auto = "auto",
        Osc9 = "osc9",
        Osc777 = "osc777",
        Osc99 = "osc99",
        Bell = "bell",
    }
}

/// One event's routing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct EventConfig {
    pub enabled: bool,
    /// Where it goes; empty: every enabled platform.
    pub platforms: Vec<Platform>,
    /// Overrides the event's own priority.
    pub priority: Option<Priority>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NtfyConfig {
    pub enabled: bool,
    pub server_url: String,
    pub topic: Option<String>,
    pub token: Option<String>,
    /// What `normal` maps to (1-5; low is 2, high is 5).
    pub priority: u8,
}

impl Default for NtfyConfig {
    fn default() -> Self {
        NtfyConfig {
            enabled: false,
            server_url: DEFAULT_NTFY_SERVER.to_owned(),
            topic: None,
            token: None,
            priority: 3,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GotifyConfig {
    pub enabled: bool,
    pub server_url: Option<String>,
    pub app_token: Option<String>,
    /// What `normal` maps to (1-10; low is 2, high is 8).
    pub priority: u8,
}

impl Default for GotifyConfig {
    fn default() -> Self {
        GotifyConfig {
            enabled: false,
            server_url: None,
            app_token: None,
            priority: 5,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TelegramConfig {
    pub enabled: bool,
    pub bot_token: Option<String>,
    pub chat_id: Option<String>,
    pub api_url: String,
}

impl Default for TelegramConfig {
    fn default() -> Self {
        TelegramConfig {
            enabled: false,
            bot_token: None,
            chat_id: None,
            api_url: DEFAULT_TELEGRAM_API.to_owned(),
        }
    }
}

impl EventConfig {
    /// On or off, everywhere, at the event's own priority.
    fn on(enabled: bool) -> Self {
        EventConfig {
            enabled,
            ..EventConfig::default()
        }
    }
}

/// Where the ntfy settings came from (and where the overlay saves them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NtfySource {
    Project(PathBuf),
    Global(PathBuf),
    /// `config.json`'s legacy `ntfy` section, or nothing: saved to the global file.
    Legacy,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotifyConfig {
    pub(crate) default_platforms: Vec<Platform>,
    pub(crate) events: BTreeMap<String, EventConfig>,
    pub native: bool,
    pub terminal: bool,
    pub terminal_method: TerminalMethod,
    pub(crate) ntfy: NtfyConfig,
    pub(crate) ntfy_source: NtfySource,
    pub(crate) gotify: GotifyConfig,
    pub(crate) telegram: TelegramConfig,
    /// How long after the user's last keystroke alerts hold back.
    pub silence_after_input: Duration,
    /// How long one platform may take to deliver.
    pub send_timeout: Duration,
    /// `headlessAgentEnd`: whether a run without the workbench's screen (`-p`, `--mode
    /// json|rpc`, no terminal) sends `agent_end` too. Off: a script calling `unipi-tui -p` in a
    /// loop would buzz a phone per call, and it learns of the end from the exit anyway.
    pub headless_agent_end: bool,
}

/// Every event key with its default (enabled) and what the overlay calls it: the original's, and
/// the workbench's own.
pub(crate) const EVENT_DEFAULTS: &[(&str, bool, &str)] = &[
    ("agent_end", true, "agent done"),
    ("ask_user_prompt", true, "needs your input"),
    ("agent_error", true, "agent error"),
    ("bg_task_finished", true, "background task done"),
    ("helper_finished", false, "helper done"),
    ("mcp_server_error", true, "MCP server failed"),
    ("compaction_done", false, "compaction done"),
    ("session_shutdown", false, "session end"),
    ("workflow_end", true, "workflow end"),
    ("ralph_loop_end", true, "ralph loop end"),
    ("memory_consolidated", false, "memory consolidated"),
];

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig {
            default_platforms: vec![Platform::Native],
            events: EVENT_DEFAULTS
                .iter()
                .map(|(key, enabled, _)| ((*key).to_owned(), EventConfig::on(*enabled)))
                .collect(),
            native: true,
            terminal: true,
            terminal_method: TerminalMethod::Auto,
            ntfy: NtfyConfig::default(),
            ntfy_source: NtfySource::Legacy,
            gotify: GotifyConfig::default(),
            telegram: TelegramConfig::default(),
            silence_after_input: Duration::from_secs(10),
            send_timeout: Duration::from_secs(10),
            headless_agent_end: false,
        }
    }
}

impl NotifyConfig {
    /// The event's routing (an unknown event: enabled, everywhere).
    pub(crate) fn event(&self, key: &str) -> EventConfig {
        self.events
            .get(key)
            .cloned()
            .unwrap_or(EventConfig::on(true))
    }

    pub(crate) fn enabled(&self, platform: Platform) -> bool {
        match platform {
            Platform::Native => self.native,
            Platform::Terminal => self.terminal,
            Platform::Ntfy => self.ntfy.enabled,
            Platform::Gotify => self.gotify.enabled,
            Platform::Telegram => self.telegram.enabled,
        }
    }

    /// What a platform still needs before it can send; `None` when it is set up.
    pub(crate) fn missing(&self, platform: Platform) -> Option<&'static str> {
        match platform {
            Platform::Native | Platform::Terminal => None,
            Platform::Ntfy if self.ntfy.topic.is_none() => {
                Some("ntfy serverUrl and topic are required")
            }
            Platform::Gotify
                if self.gotify.server_url.is_none() || self.gotify.app_token.is_none() =>
            {
                Some("Gotify serverUrl and appToken are required")
            }
            Platform::Telegram
                if self.telegram.bot_token.is_none() || self.telegram.chat_id.is_none() =>
            {
                Some("Telegram botToken and chatId are required")
            }
            _ => None,
        }
    }

    /// The platforms an event goes to: its own list, else every enabled one, else the default
    /// list — then only those enabled.
    pub(crate) fn platforms_for(&self, requested: &[Platform]) -> Vec<Platform> {
        let all_enabled: Vec<Platform> = Platform::ALL
            .iter()
            .copied()
            .filter(|p| self.enabled(*p))
            .collect();
        let chosen = if !requested.is_empty() {
            requested.to_vec()
        } else if !all_enabled.is_empty() {
            all_enabled
        } else {
            self.default_platforms.clone()
        };
        let mut out = Vec::new();
        for platform in chosen {
            if self.enabled(platform) && !out.contains(&platform) {
                out.push(platform);
            }
        }
        out
    }
}

/// A secret as every display shows it: never its characters.
pub fn mask(secret: Option<&str>) -> String {
    match secret {
        Some(secret) if !secret.is_empty() => "•••••••• (set)".to_owned(),
        _ => "(not set)".to_owned(),
    }
}

/// `config.json` from the home directory only (the original's place), then the ntfy file that
/// applies: the project's if it exists, else the global one; without either, a set-up legacy
/// `ntfy` section of `config.json`.
impl ModuleConfig for NotifyConfig {
    const FILE: &'static str = CONFIG_FILE;

    fn read(&mut self, file: &mut Object<'_>) {
        let platforms = "a list of native, terminal, ntfy, gotify, telegram";
        let defaults = &mut self.default_platforms;
        file.set("defaultPlatforms", platforms, defaults, platform_list);
        if let Some(mut events) = file.section("events", "an object") {
            for (name, _) in events.members() {
                let mut routing = self.event(name);
                let Some(mut fields) = events.section(name, "an object") else {
                    continue;
                };
                fields.flag("enabled", &mut routing.enabled);
                let routed = &mut routing.platforms;
                fields.set("platforms", platforms, routed, platform_list);
                let priority = "\"low\", \"normal\" or \"high\"";
                fields.set("priority", priority, &mut routing.priority, |v| {
                    v.as_str().and_then(Priority::parse).map(Some)
                });
                self.events.insert(name.clone(), routing);
            }
        }
        if let Some(mut native) = file.section("native", "an object") {
            native.flag("enabled", &mut self.native);
        }
        if let Some(mut terminal) = file.section("terminal", "an object") {
            terminal.flag("enabled", &mut self.terminal);
            let methods = "auto, osc9, osc777, osc99 or bell";
            terminal.set("method", methods, &mut self.terminal_method, |v| {
                v.as_str().and_then(TerminalMethod::parse)
            });
        }
        if let Some(mut fields) = file.section("gotify", "an object") {
            self.gotify.read(&mut fields);
        }
        if let Some(mut fields) = file.section("telegram", "an object") {
            self.telegram.read(&mut fields);
        }
        if let Some(mut fields) = file.section("ntfy", "an object") {
            let mut ntfy = NtfyConfig::default();
            ntfy.read(&mut fields);
            if ntfy.enabled || ntfy.topic.is_some() || ntfy.server_url != DEFAULT_NTFY_SERVER {
                self.ntfy = ntfy;
            }
        }
        if let Some(seconds) = whole(file, "silenceAfterInputSeconds", 0..=3600) {
            self.silence_after_input = Duration::from_secs(seconds);
        }
        if let Some(seconds) = whole(file, "sendTimeoutSeconds", 1..=300) {
            self.send_timeout = Duration::from_secs(seconds);
        }
        file.flag("headlessAgentEnd", &mut self.headless_agent_end);
    }

    fn load(home: Option<&Path>, workspace: &Path) -> (Self, Vec<ConfigError>) {
        let main = home.map(|home| home.join(CONFIG_FILE));
        let (mut config, mut errors) = match read_user_file(main.as_deref()) {
            Ok(Some(text)) => Self::from_sources(&[(main.unwrap_or_default(), text)]),
            Ok(None) => Default::default(),
            Err(err) => (Self::default(), vec![err]),
        };
        let project = NtfySource::Project(workspace.join(NTFY_FILE));
        let global = home.map(|home| NtfySource::Global(home.join(NTFY_FILE)));
        for source in [Some(project), global].into_iter().flatten() {
            let (NtfySource::Project(path) | NtfySource::Global(path)) = &source else {
                continue;
            };
            let Some(read) = read_user_file(Some(path)).transpose() else {
                continue;
            };
            config.ntfy = NtfyConfig::default();
            let read = read.map_err(|err| errors.push(err)).ok().and_then(|text| {
                read_json_file(path, &text, Self::STYLE, &mut errors, |object| {
                    config.ntfy.read(object)
                })
            });
            if read.is_some() {
                config.ntfy_source = source;
            }
            break;
        }
        (config, errors)
    }
}

impl GotifyConfig {
    fn read(&mut self, fields: &mut Object<'_>) {
        fields.flag("enabled", &mut self.enabled);
        text(fields, "serverUrl", &mut self.server_url);
        text(fields, "appToken", &mut self.app_token);
        priority(fields, 10, &mut self.priority);
    }
}

impl TelegramConfig {
    fn read(&mut self, fields: &mut Object<'_>) {
        fields.flag("enabled", &mut self.enabled);
        text(fields, "botToken", &mut self.bot_token);
        // A chat id is a number in Telegram's own answers; either form is kept as text.
        match fields.value("chatId") {
            Some(Value::Number(id)) => self.chat_id = Some(id.to_string()),
            _ => text(fields, "chatId", &mut self.chat_id),
        }
        let mut api = None;
        text(fields, "apiUrl", &mut api);
        if let Some(api) = api {
            self.api_url = api;
        }
    }
}

impl NtfyConfig {
    /// The keys of `ntfy.json`, or of `config.json`'s legacy `ntfy` section.
    fn read(&mut self, fields: &mut Object<'_>) {
        fields.flag("enabled", &mut self.enabled);
        let mut server = None;
        text(fields, "serverUrl", &mut server);
        if let Some(server) = server {
            self.server_url = server;
        }
        text(fields, "topic", &mut self.topic);
        text(fields, "token", &mut self.token);
        priority(fields, 5, &mut self.priority);
    }
}

/// A string; an empty one is "not set", null leaves the slot as it was.
fn text(fields: &mut Object<'_>, key: &str, slot: &mut Option<String>) {
    if fields.value(key).is_some_and(|value| !value.is_null()) {
        fields.set(key, "a string", slot, |v| {
            v.is_string().then(|| non_empty(v))
        });
    }
}

/// What `normal` maps to on a platform whose priorities run from 1 to `max`.
fn priority(fields: &mut Object<'_>, max: u64, slot: &mut u8) {
    if let Some(priority) = whole(fields, "priority", 1..=max) {
        *slot = u8::try_from(priority).unwrap_or(u8::MAX);
    }
}

/// A whole number within `range`.
fn whole(fields: &mut Object<'_>, key: &str, range: RangeInclusive<u64>) -> Option<u64> {
    let expected = format!("a whole number from {} to {}", range.start(), range.end());
    fields.get(key, &expected, whole_in(range))
}

fn platform_list(value: &Value) -> Option<Vec<Platform>> {
    let items = value.as_array()?;
    items
        .iter()
        .map(|item| item.as_str().and_then(Platform::parse))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn write(path: &Path, value: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, value).unwrap();
    }

    #[test]
    fn unipi_files_load_with_their_keys_and_the_workbench_keys_beside_them() {
        let dir = tempfile::tempdir().unwrap();
        let (home, work) = (dir.path().join("home"), dir.path().join("work"));
        write(
            &home.join(CONFIG_FILE),
            &json!({
                "defaultPlatforms": ["native"],
                "events": {"agent_end": {"enabled": false, "platforms": ["ntfy"]},
                           "ask_user_prompt": {"enabled": true, "priority": "normal"}},
                "native": {"enabled": false, "windowsAppId": "x"},
                "gotify": {"enabled": true, "serverUrl": "http://127.0.0.1:9/", "appToken": "A1", "priority": 7},
                "telegram": {"enabled": true, "botToken": "123:abc", "chatId": 42, "apiUrl": "http://127.0.0.1:8"},
                "terminal": {"method": "osc99"},
                "recap": {"enabled": false},
                "silenceAfterInputSeconds": 0,
                "headlessAgentEnd": true,
            })
            .to_string(),
        );
        write(
            &home.join(NTFY_FILE),
            &json!({"enabled": true, "topic": "global-topic"}).to_string(),
        );
        let (config, errors) = NotifyConfig::load(Some(&home), &work);
        assert!(errors.is_empty(), "{errors:?}");
        assert!(!config.native && config.terminal);
        assert_eq!(config.terminal_method, TerminalMethod::Osc99);
        let agent_end = config.event("agent_end");
        assert!(!agent_end.enabled);
        assert_eq!(agent_end.platforms, vec![Platform::Ntfy]);
        assert_eq!(
            config.event("ask_user_prompt").priority,
            Some(Priority::Normal)
        );
        assert!(config.event("bg_task_finished").enabled, "a default kept");
        assert_eq!(
            config.gotify.server_url.as_deref(),
            Some("http://127.0.0.1:9/")
        );
        assert_eq!(config.gotify.priority, 7);
        assert_eq!(config.telegram.chat_id.as_deref(), Some("42"));
        assert_eq!(config.telegram.api_url, "http://127.0.0.1:8");
        assert_eq!(config.silence_after_input, Duration::ZERO);
        assert!(config.headless_agent_end);
        assert_eq!(config.ntfy.topic.as_deref(), Some("global-topic"));
        assert_eq!(config.ntfy.server_url, DEFAULT_NTFY_SERVER);
        assert_eq!(config.ntfy_source, NtfySource::Global(home.join(NTFY_FILE)));

        // The project's ntfy file replaces the global one.
        write(
            &work.join(NTFY_FILE),
            &json!({"enabled": false}).to_string(),
        );
        let (config, _) = NotifyConfig::load(Some(&home), &work);
        assert_eq!(config.ntfy, NtfyConfig::default());
        assert_eq!(
            config.ntfy_source,
            NtfySource::Project(work.join(NTFY_FILE))
        );
    }

    #[test]
    fn the_legacy_ntfy_section_is_read_when_no_ntfy_file_exists() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        write(
            &home.join(CONFIG_FILE),
            &json!({"ntfy": {"enabled": true, "serverUrl": "http://127.0.0.1:5", "topic": "old"}})
                .to_string(),
        );
        let (config, errors) = NotifyConfig::load(Some(&home), dir.path());
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(config.ntfy.topic.as_deref(), Some("old"));
        assert_eq!(config.ntfy_source, NtfySource::Legacy);
        // An untouched legacy section means nothing.
        write(
            &home.join(CONFIG_FILE),
            &json!({"ntfy": {"enabled": false}}).to_string(),
        );
        assert_eq!(
            NotifyConfig::load(Some(&home), dir.path()).0.ntfy,
            NtfyConfig::default()
        );
    }

    #[test]
    fn bad_keys_are_named_where_they_are_and_keep_their_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        write(
            &home.join(CONFIG_FILE),
            "{\n  \"native\": {\"enabled\": \"yes\"},\n  \"gotify\": {\"priority\": 11},\n  \
             \"defaultPlatforms\": [\"pager\"],\n  \"events\": {\"agent_end\": {\"priority\": \"urgent\"}},\n  \
             \"headlessAgentEnd\": \"yes\"\n}",
        );
        let (config, errors) = NotifyConfig::load(Some(&home), dir.path());
        let errors: Vec<String> = errors
            .iter()
            .map(|e| {
                e.to_string()
                    .rsplit("config.json:")
                    .next()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(
            errors,
            vec![
                "2:14: `enabled` must be true or false",
                "3:14: `priority` must be a whole number from 1 to 10",
                "4:3: `defaultPlatforms` must be a list of native, terminal, ntfy, gotify, telegram",
                "5:28: `priority` must be \"low\", \"normal\" or \"high\"",
                "6:3: `headlessAgentEnd` must be true or false",
            ]
        );
        assert!(config.native);
        assert!(!config.headless_agent_end, "off unless turned on");
        assert_eq!(config.gotify.priority, 5);
        assert_eq!(config.default_platforms, vec![Platform::Native]);
    }

    #[test]
    fn platforms_resolve_event_list_then_all_enabled_then_defaults() {
        let mut config = NotifyConfig::default();
        assert_eq!(
            config.platforms_for(&[]),
            vec![Platform::Native, Platform::Terminal]
        );
        config.ntfy.enabled = true;
        assert_eq!(
            config.platforms_for(&[Platform::Ntfy, Platform::Gotify]),
            vec![Platform::Ntfy],
            "a disabled platform is left out even when asked for"
        );
        config.native = false;
        config.terminal = false;
        config.ntfy.enabled = false;
        config.default_platforms = vec![Platform::Native];
        assert!(
            config.platforms_for(&[]).is_empty(),
            "the defaults are filtered too"
        );
        assert_eq!(mask(Some("123:secret")), "•••••••• (set)");
        assert_eq!(mask(None), "(not set)");
        assert_eq!(
            config.missing(Platform::Ntfy),
            Some("ntfy serverUrl and topic are required")
        );
    }
}

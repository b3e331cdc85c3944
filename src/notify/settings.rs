//! `/unipi:notify-settings`: the notification settings as the settings overlay's fields —
//! platforms with their servers and tokens (secrets never shown), the terminal method, the
//! silence after input, and each event on or off — and saving them back into the original's
//! files: `config.json` (each section merged into what the file holds, so keys this overlay does
//! not show stay) and `ntfy.json` where the ntfy settings came from (the project's file, or the
//! global one). A platform turned on without what it needs is refused with the reason, as the
//! original's validation did.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::bail;
use serde_json::{Map, Value, json};
use unipi_widgets::settings::{SettingField, SettingValue};

use super::config::{
    CONFIG_FILE, DEFAULT_NTFY_SERVER, EVENT_DEFAULTS, NTFY_FILE, NotifyConfig, NtfySource,
    TerminalMethod,
};
use crate::capability::settings::{field, flag, secret, text};

pub const SETTINGS_TITLE: &str = "Notification settings";

/// A number stepped by one within `min..=max`.
fn number(
    key: &str,
    label: &str,
    value: u64,
    (min, max): (u64, u64),
    unit: &str,
    help: &str,
) -> SettingField {
    field(
        key,
        label,
        SettingValue::Number {
            value,
            unit: unit.to_owned(),
            min,
            max,
            step: 1,
        },
        help,
    )
}

/// What an event key is called in the overlay.
fn event_label(key: &str) -> String {
    match key {
        "agent_end" => "Event: agent done".to_owned(),
        "ask_user_prompt" => "Event: needs your input".to_owned(),
        "agent_error" => "Event: agent error".to_owned(),
        "bg_task_finished" => "Event: background task done".to_owned(),
        "helper_finished" => "Event: helper done".to_owned(),
        "mcp_server_error" => "Event: MCP server failed".to_owned(),
        "compaction_done" => "Event: compaction done".to_owned(),
        "session_shutdown" => "Event: session end".to_owned(),
        other => format!("Event: {}", other.replace('_', " ")),
    }
}

pub fn settings_fields(config: &NotifyConfig) -> Vec<SettingField> {
    let methods = TerminalMethod::ALL
        .iter()
        .map(|m| m.key().to_owned())
        .collect();
    let mut fields = vec![
        flag(
            "native.enabled",
            "Desktop (native)",
            config.native,
            "The desktop's own notifications; held back while this terminal has focus.",
        ),
        flag(
            "terminal.enabled",
            "Terminal",
            config.terminal,
            "The terminal's own notification (works over SSH; inside tmux it needs allow-passthrough on).",
        ),
        field(
            "terminal.method",
            "Terminal method",
            SettingValue::Choice {
                value: config.terminal_method.key().to_owned(),
                options: methods,
            },
            "auto picks OSC 99 for kitty, OSC 9 for iTerm2/WezTerm/Ghostty, OSC 777 for foot/urxvt, else the bell.",
        ),
    ];
    fields.extend(ntfy_fields(config));
    fields.extend(bot_fields(config));
    fields.push(
        number(
            "silenceAfterInputSeconds",
            "Silence after input",
            config.silence_after_input.as_secs(),
            (0, 600),
            "s",
            "While you typed this recently you are at the keyboard: no alerts; a question alerts only once you are away this long.",
        ),
    );
    for (key, _) in EVENT_DEFAULTS {
        fields.push(flag(
            &format!("events.{key}.enabled"),
            &event_label(key),
            config.event(key).enabled,
            "Whether this event notifies you.",
        ));
    }
    fields
}

/// Said under a field the user types into.
const TYPE: &str = " Enter to type; Backspace clears.";

/// ntfy's fields: its server, topic and token.
fn ntfy_fields(config: &NotifyConfig) -> Vec<SettingField> {
    vec![
        flag(
            "ntfy.enabled",
            "ntfy",
            config.ntfy.enabled,
            "Push to your phone through an ntfy server (ntfy.sh or your own).",
        ),
        text(
            "ntfy.serverUrl",
            "ntfy server",
            Some(&config.ntfy.server_url),
            &format!("The server's address.{TYPE}"),
        ),
        text(
            "ntfy.topic",
            "ntfy topic",
            config.ntfy.topic.as_deref(),
            &format!("The topic your phone subscribes to.{TYPE}"),
        ),
        secret(
            "ntfy.token",
            "ntfy token",
            config.ntfy.token.as_deref(),
            &format!("Access token for a protected topic (optional).{TYPE}"),
        ),
        number(
            "ntfy.priority",
            "ntfy normal priority",
            u64::from(config.ntfy.priority),
            (1, 5),
            "",
            "What a normal notification is sent as (low is 2, high is 5).",
        ),
    ]
}

/// Gotify's and Telegram's fields: where, and with what token.
fn bot_fields(config: &NotifyConfig) -> Vec<SettingField> {
    vec![
        flag(
            "gotify.enabled",
            "Gotify",
            config.gotify.enabled,
            "Push through your Gotify server.",
        ),
        text(
            "gotify.serverUrl",
            "Gotify server",
            config.gotify.server_url.as_deref(),
            &format!("The server's address.{TYPE}"),
        ),
        secret(
            "gotify.appToken",
            "Gotify app token",
            config.gotify.app_token.as_deref(),
            &format!("The application's token.{TYPE}"),
        ),
        number(
            "gotify.priority",
            "Gotify normal priority",
            u64::from(config.gotify.priority),
            (1, 10),
            "",
            "What a normal notification is sent as (low is 2, high is 8).",
        ),
        flag(
            "telegram.enabled",
            "Telegram",
            config.telegram.enabled,
            "Messages from your Telegram bot.",
        ),
        secret(
            "telegram.botToken",
            "Telegram bot token",
            config.telegram.bot_token.as_deref(),
            &format!("From @BotFather.{TYPE}"),
        ),
        text(
            "telegram.chatId",
            "Telegram chat id",
            config.telegram.chat_id.as_deref(),
            &format!("The chat the bot writes to.{TYPE}"),
        ),
    ]
}

/// The edited fields as `{"dotted.key": value}`.
pub fn apply_settings(fields: &[SettingField]) -> Value {
    let object: Map<String, Value> = fields
        .iter()
        .map(|field| {
            let value = match &field.value {
                SettingValue::Bool(on) => json!(on),
                SettingValue::Number { value, .. } => json!(value),
                SettingValue::Text(text) | SettingValue::Secret(text) => json!(text.trim()),
                SettingValue::Choice { value, .. } => json!(value),
            };
            (field.key.clone(), value)
        })
        .collect();
    Value::Object(object)
}

/// Why `values` cannot be saved: a platform on without what it needs.
pub fn validate(values: &Value) -> Result<(), String> {
    let on = |key: &str| values.get(key) == Some(&Value::Bool(true));
    let set = |key: &str| {
        values
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty())
    };
    let mut problems = Vec::new();
    if on("ntfy.enabled") && !(set("ntfy.serverUrl") && set("ntfy.topic")) {
        problems.push("ntfy needs a server and a topic");
    }
    if on("gotify.enabled") && !(set("gotify.serverUrl") && set("gotify.appToken")) {
        problems.push("Gotify needs a server and an app token");
    }
    if on("telegram.enabled") && !(set("telegram.botToken") && set("telegram.chatId")) {
        problems.push("Telegram needs a bot token and a chat id");
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// Writes `values` into the files: `config.json` under `home`, and `ntfy.json` where the ntfy
/// settings came from (the global file when they came from nowhere or from `config.json`). A
/// cleared text is written as `null`, which reads as "not set".
pub fn save(home: &Path, source: &NtfySource, values: &Value) -> anyhow::Result<()> {
    if let Err(problems) = validate(values) {
        bail!("{problems}");
    }
    let Some(values) = values.as_object() else {
        bail!("the notification settings must be an object");
    };
    let config_path = home.join(CONFIG_FILE);
    let existing = crate::config::module_file::read_json_object(&config_path)?;
    // Each section starts from what the file holds, so keys not shown here are kept.
    let mut sections: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    let mut top = Map::new();
    let mut ntfy = Map::new();
    let blank_is_null = |value: &Value| match value {
        Value::String(text) if text.is_empty() => Value::Null,
        other => other.clone(),
    };
    for (key, value) in values {
        let parts: Vec<&str> = key.split('.').collect();
        match parts.as_slice() {
            ["ntfy", "serverUrl"] if value.as_str() == Some("") => {
                ntfy.insert("serverUrl".to_owned(), json!(DEFAULT_NTFY_SERVER));
            }
            ["ntfy", name] => {
                ntfy.insert((*name).to_owned(), blank_is_null(value));
            }
            ["events", event, name] => {
                let events = section(&mut sections, &existing, "events");
                let entry = events
                    .entry((*event).to_owned())
                    .or_insert_with(|| json!({"enabled": true, "platforms": []}));
                if !entry.is_object() {
                    *entry = json!({});
                }
                if let Value::Object(entry) = entry {
                    entry.insert((*name).to_owned(), value.clone());
                }
            }
            [group, name] => {
                section(&mut sections, &existing, group)
                    .insert((*name).to_owned(), blank_is_null(value));
            }
            [name] => {
                top.insert((*name).to_owned(), value.clone());
            }
            _ => bail!("unknown notification setting `{key}`"),
        }
    }
    top.extend(
        sections
            .into_iter()
            .map(|(name, object)| (name, Value::Object(object))),
    );
    crate::config::merge_json_file(&config_path, &Value::Object(top))?;
    let ntfy_path = match source {
        NtfySource::Project(path) | NtfySource::Global(path) => path.clone(),
        NtfySource::Legacy => home.join(NTFY_FILE),
    };
    crate::config::merge_json_file(&ntfy_path, &Value::Object(ntfy))
}

/// A section of `config.json` as it will be written: what the file has, to be updated.
fn section<'a>(
    sections: &'a mut BTreeMap<String, Map<String, Value>>,
    existing: &Map<String, Value>,
    name: &str,
) -> &'a mut Map<String, Value> {
    sections
        .entry(name.to_owned())
        .or_insert_with(|| match existing.get(name) {
            Some(Value::Object(object)) => object.clone(),
            _ => Map::new(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::module_file::ModuleConfig;
    use crate::notify::config::Platform;

    fn set(fields: &mut [SettingField], key: &str, value: SettingValue) {
        let field = fields.iter_mut().find(|f| f.key == key).unwrap();
        field.value = value;
    }

    #[test]
    fn saving_keeps_unknown_keys_writes_ntfy_where_it_came_from_and_reloads_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let (home, work) = (dir.path().join("home"), dir.path().join("work"));
        let config_path = home.join(CONFIG_FILE);
        std::fs::create_dir_all(config_path.parent().unwrap()).unwrap();
        std::fs::write(
            &config_path,
            json!({"recap": {"enabled": true, "model": "a/b"},
                   "native": {"enabled": true, "windowsAppId": "Pi"},
                   "events": {"agent_end": {"enabled": true, "platforms": ["ntfy"]}}})
            .to_string(),
        )
        .unwrap();
        let project_ntfy = work.join(NTFY_FILE);
        std::fs::create_dir_all(project_ntfy.parent().unwrap()).unwrap();
        std::fs::write(
            &project_ntfy,
            json!({"enabled": false, "extra": 1}).to_string(),
        )
        .unwrap();

        let (config, errors) = NotifyConfig::load(Some(&home), &work);
        assert!(errors.is_empty(), "{errors:?}");
        let mut fields = settings_fields(&config);
        set(&mut fields, "native.enabled", SettingValue::Bool(false));
        set(&mut fields, "ntfy.enabled", SettingValue::Bool(true));
        set(
            &mut fields,
            "ntfy.topic",
            SettingValue::Text("alerts".into()),
        );
        set(
            &mut fields,
            "ntfy.token",
            SettingValue::Secret("tk_1".into()),
        );
        set(
            &mut fields,
            "telegram.botToken",
            SettingValue::Secret("1:x".into()),
        );
        set(
            &mut fields,
            "events.agent_end.enabled",
            SettingValue::Bool(false),
        );
        set(
            &mut fields,
            "terminal.method",
            SettingValue::Choice {
                value: "osc777".into(),
                options: TerminalMethod::ALL
                    .iter()
                    .map(|m| m.key().to_owned())
                    .collect(),
            },
        );
        save(&home, &config.ntfy_source, &apply_settings(&fields)).unwrap();

        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(&config_path).unwrap()).unwrap();
        assert_eq!(
            written["recap"],
            json!({"enabled": true, "model": "a/b"}),
            "kept"
        );
        assert_eq!(
            written["native"],
            json!({"enabled": false, "windowsAppId": "Pi"})
        );
        assert_eq!(
            written["events"]["agent_end"],
            json!({"enabled": false, "platforms": ["ntfy"]}),
            "the event's platforms kept"
        );
        assert_eq!(written["telegram"]["botToken"], "1:x");
        assert!(written.get("ntfy").is_none(), "ntfy lives in its own file");
        let ntfy: Value =
            serde_json::from_str(&std::fs::read_to_string(&project_ntfy).unwrap()).unwrap();
        assert_eq!(ntfy["topic"], "alerts");
        assert_eq!(ntfy["token"], "tk_1");
        assert_eq!(ntfy["extra"], 1);
        assert!(
            !home.join(NTFY_FILE).exists(),
            "the project's file was the one in use"
        );

        let (reloaded, errors) = NotifyConfig::load(Some(&home), &work);
        assert!(errors.is_empty(), "{errors:?}");
        assert!(!reloaded.native && reloaded.ntfy.enabled);
        assert_eq!(reloaded.terminal_method, TerminalMethod::Osc777);
        assert_eq!(reloaded.ntfy.token.as_deref(), Some("tk_1"));
        assert!(!reloaded.event("agent_end").enabled);
        assert_eq!(reloaded.event("agent_end").platforms, vec![Platform::Ntfy]);
        assert_eq!(
            settings_fields(&reloaded),
            fields,
            "what was saved is what loads"
        );
    }

    #[test]
    fn a_platform_on_without_what_it_needs_is_not_saved() {
        let dir = tempfile::tempdir().unwrap();
        let mut fields = settings_fields(&NotifyConfig::default());
        set(&mut fields, "gotify.enabled", SettingValue::Bool(true));
        set(&mut fields, "telegram.enabled", SettingValue::Bool(true));
        let err = save(dir.path(), &NtfySource::Legacy, &apply_settings(&fields)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Gotify needs a server and an app token; Telegram needs a bot token and a chat id"
        );
        assert!(!dir.path().join(CONFIG_FILE).exists(), "nothing written");
        // A file that is not JSON is never overwritten.
        let path = dir.path().join(CONFIG_FILE);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "{ broken").unwrap();
        let fields = settings_fields(&NotifyConfig::default());
        let err = save(dir.path(), &NtfySource::Legacy, &apply_settings(&fields)).unwrap_err();
        assert!(err.to_string().contains("not overwriting it"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ broken");
    }
}

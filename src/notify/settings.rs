//! `/unipi:notify-settings`: the notification settings as the settings overlay's fields —
//! platforms with their servers and tokens (secrets never shown), the terminal method, the
//! silence after input, and each event on or off — and saving them back into the original's
//! files: `config.json` (each section merged into what the file holds, so keys this overlay does
//! not show stay) and `ntfy.json` where the ntfy settings came from (the project's file, or the
//! global one). A platform turned on without what it needs is refused with the reason, as the
//! original's validation did.

use std::path::Path;

use anyhow::bail;
use serde_json::{Map, Value, json};

use super::config::{
    CONFIG_FILE, DEFAULT_NTFY_SERVER, EVENT_DEFAULTS, NTFY_FILE, NotifyConfig, NtfySource,
    TerminalMethod,
};
use crate::capability::settings::{Kind, Setting, SettingsPage};

/// The overlay: the platforms, the silence after input, then each event.
pub const SETTINGS_PAGE: SettingsPage<NotifyConfig> = SettingsPage {
    title: "Notification settings",
    file: CONFIG_FILE,
    what: "notification settings",
    load: <NotifyConfig as crate::config::module_file::ModuleConfig>::load,
    settings,
    values,
};

/// The platforms' settings, then the silence after input, then each event's.
fn settings() -> Vec<Setting> {
    let methods = Kind::Choice(TerminalMethod::KEYS);
    let mut settings = vec![
        Setting::flag(
            "native.enabled",
            "Desktop (native)",
            "The desktop's own notifications; held back while this terminal has focus.",
        ),
        Setting::flag(
            "terminal.enabled",
            "Terminal",
            "The terminal's own notification (works over SSH; inside tmux it needs \
             allow-passthrough on).",
        ),
        Setting::new(
            "terminal.method",
            "Terminal method",
            methods,
            "auto picks OSC 99 for kitty, OSC 9 for iTerm2/WezTerm/Ghostty, OSC 777 for \
             foot/urxvt, else the bell.",
        ),
        Setting::flag(
            "ntfy.enabled",
            "ntfy",
            "Push to your phone through an ntfy server (ntfy.sh or your own).",
        ),
        Setting::new(
            "ntfy.serverUrl",
            "ntfy server",
            Kind::Text,
            "The server's address.",
        ),
        Setting::new(
            "ntfy.topic",
            "ntfy topic",
            Kind::Text,
            "The topic your phone subscribes to.",
        ),
        Setting::new(
            "ntfy.token",
            "ntfy token",
            Kind::Secret,
            "Access token for a protected topic (optional).",
        ),
        Setting::number(
            "ntfy.priority",
            "ntfy normal priority",
            (1, 5),
            "",
            "What a normal notification is sent as (low is 2, high is 5).",
        ),
    ];
    settings.extend(bot_settings());
    settings.push(Setting::number(
        "silenceAfterInputSeconds",
        "Silence after input",
        (0, 600),
        "s",
        "While you typed this recently you are at the keyboard: no alerts; a question alerts \
         only once you are away this long.",
    ));
    settings.extend(EVENT_DEFAULTS.iter().map(|(key, _, label)| {
        let (key, label) = (format!("events.{key}.enabled"), format!("Event: {label}"));
        Setting::flag(&key, &label, "Whether this event notifies you.")
    }));
    settings
}

/// Gotify's and Telegram's settings: where, and with what token.
fn bot_settings() -> Vec<Setting> {
    vec![
        Setting::flag(
            "gotify.enabled",
            "Gotify",
            "Push through your Gotify server.",
        ),
        Setting::new(
            "gotify.serverUrl",
            "Gotify server",
            Kind::Text,
            "The server's address.",
        ),
        Setting::new(
            "gotify.appToken",
            "Gotify app token",
            Kind::Secret,
            "The application's token.",
        ),
        Setting::number(
            "gotify.priority",
            "Gotify normal priority",
            (1, 10),
            "",
            "What a normal notification is sent as (low is 2, high is 8).",
        ),
        Setting::flag(
            "telegram.enabled",
            "Telegram",
            "Messages from your Telegram bot.",
        ),
        Setting::new(
            "telegram.botToken",
            "Telegram bot token",
            Kind::Secret,
            "From @BotFather.",
        ),
        Setting::new(
            "telegram.chatId",
            "Telegram chat id",
            Kind::Text,
            "The chat the bot writes to.",
        ),
    ]
}

/// `config` as the files write it.
fn values(config: &NotifyConfig) -> Value {
    let events: Map<String, Value> = EVENT_DEFAULTS
        .iter()
        .map(|(key, ..)| {
            (
                (*key).to_owned(),
                json!({"enabled": config.event(key).enabled}),
            )
        })
        .collect();
    let (ntfy, gotify, telegram) = (&config.ntfy, &config.gotify, &config.telegram);
    json!({
        "native": {"enabled": config.native},
        "terminal": {"enabled": config.terminal, "method": config.terminal_method.key()},
        "ntfy": {"enabled": ntfy.enabled, "serverUrl": ntfy.server_url, "topic": ntfy.topic,
                 "token": ntfy.token, "priority": ntfy.priority},
        "gotify": {"enabled": gotify.enabled, "serverUrl": gotify.server_url,
                   "appToken": gotify.app_token, "priority": gotify.priority},
        "telegram": {"enabled": telegram.enabled, "botToken": telegram.bot_token,
                     "chatId": telegram.chat_id},
        "silenceAfterInputSeconds": config.silence_after_input.as_secs(),
        "events": events,
    })
}

/// Writes `values` (the overlay's, [`SettingsPage::to_values`]) into the files, each section
/// merged into what the file holds: `config.json` under `home`, and `ntfy.json` where the ntfy
/// settings came from (the global file when they came from nowhere or from `config.json`). A
/// cleared text is written as `null`, which reads as "not set"; a cleared ntfy server as the
/// default one.
pub(crate) fn save(home: &Path, source: &NtfySource, mut values: Value) -> anyhow::Result<()> {
    // A platform on without what it needs is refused, as the original's validation did.
    let set = |platform: &str, key: &str| values[platform][key].is_string();
    let problems: Vec<&str> = [
        (
            "ntfy",
            ["serverUrl", "topic"],
            "ntfy needs a server and a topic",
        ),
        (
            "gotify",
            ["serverUrl", "appToken"],
            "Gotify needs a server and an app token",
        ),
        (
            "telegram",
            ["botToken", "chatId"],
            "Telegram needs a bot token and a chat id",
        ),
    ]
    .into_iter()
    .filter(|(platform, needs, _)| {
        values[platform]["enabled"] == true && !needs.iter().all(|key| set(platform, key))
    })
    .map(|(.., problem)| problem)
    .collect();
    if !problems.is_empty() {
        bail!("{}", problems.join("; "));
    }
    let Some(values) = values.as_object_mut() else {
        bail!("the notification settings must be an object");
    };
    let mut ntfy = values.remove("ntfy").unwrap_or_else(|| json!({}));
    if ntfy.get("serverUrl") == Some(&Value::Null) {
        ntfy["serverUrl"] = json!(DEFAULT_NTFY_SERVER);
    }
    // Each section is merged into what the file holds, so keys not shown here are kept; an
    // event the file does not list yet is written whole, as the original writes it.
    let config_path = home.join(CONFIG_FILE);
    let mut file = Value::Object(crate::config::module_file::read_json_object(&config_path)?);
    if let Some(Value::Object(events)) = values.get_mut("events") {
        for (name, entry) in events.iter_mut() {
            if file["events"].get(name).is_none() {
                entry["platforms"] = json!([]);
            }
        }
    }
    merge(&mut file, &Value::Object(std::mem::take(values)));
    crate::config::merge_json_file(&config_path, &file)?;
    let ntfy_path = match source {
        NtfySource::Project(path) | NtfySource::Global(path) => path.clone(),
        NtfySource::Legacy => home.join(NTFY_FILE),
    };
    crate::config::merge_json_file(&ntfy_path, &ntfy)
}

/// `value` into `into`, object into object (keys only in `into` stay), else replacing it.
fn merge(into: &mut Value, value: &Value) {
    match (into, value) {
        (Value::Object(into), Value::Object(values)) => {
            for (key, value) in values {
                merge(into.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
        (into, value) => *into = value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use unipi_widgets::settings::{SettingField, SettingValue};

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
        let mut fields = SETTINGS_PAGE.fields(&config);
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
        save(&home, &config.ntfy_source, SETTINGS_PAGE.to_values(&fields)).unwrap();

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
            SETTINGS_PAGE.fields(&reloaded),
            fields,
            "what was saved is what loads"
        );
    }

    #[test]
    fn a_platform_on_without_what_it_needs_is_not_saved() {
        let dir = tempfile::tempdir().unwrap();
        let mut fields = SETTINGS_PAGE.fields(&NotifyConfig::default());
        set(&mut fields, "gotify.enabled", SettingValue::Bool(true));
        set(&mut fields, "telegram.enabled", SettingValue::Bool(true));
        let err = save(
            dir.path(),
            &NtfySource::Legacy,
            SETTINGS_PAGE.to_values(&fields),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Gotify needs a server and an app token; Telegram needs a bot token and a chat id"
        );
        assert!(!dir.path().join(CONFIG_FILE).exists(), "nothing written");
        // A file that is not JSON is never overwritten.
        let path = dir.path().join(CONFIG_FILE);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "{ broken").unwrap();
        let fields = SETTINGS_PAGE.fields(&NotifyConfig::default());
        let err = save(
            dir.path(),
            &NtfySource::Legacy,
            SETTINGS_PAGE.to_values(&fields),
        )
        .unwrap_err();
        assert!(err.to_string().contains("not overwriting it"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ broken");
    }
}

//! `/unipi:notify-set-ntfy`, `/unipi:notify-set-gotify` and `/unipi:notify-set-tg`: one
//! platform set up without editing JSON, as Unipi's wizards did. Each is a settings overlay of
//! that platform's few fields ([`NTFY_PAGE`], [`GOTIFY_PAGE`], [`TELEGRAM_PAGE`]); its save
//! checks what is needed, sends a test message (`Pi — Setup Test`) and only when it arrived
//! writes the platform, turned on, into Unipi's file for it — `ntfy.json` at the scope chosen,
//! `config.json`'s `gotify` or `telegram` section (the section's other keys kept) — crash-safe,
//! and 0600 since it holds a token. Telegram's chat is found as Unipi found it: the last update
//! the bot received (`getUpdates`), so the user sends the bot a message first.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::{Map, Value, json};

use super::config::{
    CONFIG_FILE, DEFAULT_NTFY_SERVER, DEFAULT_TELEGRAM_API, GotifyConfig, NTFY_FILE, NotifyConfig,
    NtfyConfig, NtfySource, Priority, TelegramConfig,
};
use super::dispatch::Dispatcher;
use super::platforms::Notice;
use super::platforms::http::{Request, gotify_request, ntfy_request, post, telegram_request};
use crate::capability::settings::{Kind, Save, Setting, SettingsPage};
use crate::config::module_file::ModuleConfig;

/// The scopes ntfy's file may live at.
const SCOPES: &[&str] = &["global", "project"];

/// How long a Telegram set-up waits for a message to the bot, asking every [`TG_POLL`]
/// (Unipi's wizard waited five minutes in its own screen; the overlay waits a minute).
const TG_WAIT: Duration = Duration::from_secs(60);
const TG_POLL: Duration = Duration::from_secs(2);

/// `/unipi:notify-set-ntfy`.
pub(crate) const NTFY_PAGE: SettingsPage<NotifyConfig> = SettingsPage {
    title: "Set up ntfy",
    file: NTFY_FILE,
    what: "ntfy set-up",
    load: <NotifyConfig as ModuleConfig>::load,
    settings: ntfy_settings,
    values,
};

/// `/unipi:notify-set-gotify`.
pub(crate) const GOTIFY_PAGE: SettingsPage<NotifyConfig> = SettingsPage {
    title: "Set up Gotify",
    file: CONFIG_FILE,
    what: "Gotify set-up",
    load: <NotifyConfig as ModuleConfig>::load,
    settings: gotify_settings,
    values,
};

/// `/unipi:notify-set-tg`.
pub(crate) const TELEGRAM_PAGE: SettingsPage<NotifyConfig> = SettingsPage {
    title: "Set up Telegram",
    file: CONFIG_FILE,
    what: "Telegram set-up",
    load: <NotifyConfig as ModuleConfig>::load,
    settings: telegram_settings,
    values,
};

fn ntfy_settings() -> Vec<Setting> {
    vec![
        Setting::new(
            "scope",
            "Save for",
            Kind::Choice(SCOPES),
            "Where ntfy.json goes: global (~/.unipi) or this project (which wins). s tests, \
             then saves.",
        ),
        Setting::new(
            "ntfy.serverUrl",
            "Server",
            Kind::Text,
            "ntfy.sh or your own; empty is https://ntfy.sh.",
        ),
        Setting::new(
            "ntfy.topic",
            "Topic",
            Kind::Text,
            "The topic your phone subscribes to.",
        ),
        Setting::new(
            "ntfy.token",
            "Access token",
            Kind::Secret,
            "For a protected topic; else empty.",
        ),
        Setting::number(
            "ntfy.priority",
            "Normal priority",
            (1, 5),
            "",
            "What a normal notification is sent as (low is 2, high is 5).",
        ),
    ]
}

fn gotify_settings() -> Vec<Setting> {
    vec![
        Setting::new(
            "gotify.serverUrl",
            "Server",
            Kind::Text,
            "Your Gotify server; s sends a test, then saves.",
        ),
        Setting::new(
            "gotify.appToken",
            "App token",
            Kind::Secret,
            "From an application in Gotify (Apps).",
        ),
        Setting::number(
            "gotify.priority",
            "Normal priority",
            (1, 10),
            "",
            "What a normal notification is sent as (low is 2, high is 8).",
        ),
    ]
}

fn telegram_settings() -> Vec<Setting> {
    vec![
        Setting::new(
            "telegram.botToken",
            "Bot token",
            Kind::Secret,
            "From @BotFather; message your bot, then s to test and save.",
        ),
        Setting::new(
            "telegram.chatId",
            "Chat id",
            Kind::Text,
            "Empty: the chat of the bot's last message.",
        ),
        Setting::new(
            "telegram.apiUrl",
            "Bot API server",
            Kind::Text,
            "Your own Bot API server, or empty for Telegram's.",
        ),
    ]
}

/// What the pages show of `config`: each platform as it is now, and ntfy's scope as where its
/// settings came from.
fn values(config: &NotifyConfig) -> Value {
    let scope = match config.ntfy_source {
        NtfySource::Project(_) => "project",
        NtfySource::Global(_) | NtfySource::Legacy => "global",
    };
    let (ntfy, gotify, telegram) = (&config.ntfy, &config.gotify, &config.telegram);
    json!({
        "scope": scope,
        "ntfy": {"serverUrl": ntfy.server_url, "topic": ntfy.topic, "token": ntfy.token,
                 "priority": ntfy.priority},
        "gotify": {"serverUrl": gotify.server_url, "appToken": gotify.app_token,
                   "priority": gotify.priority},
        "telegram": {"botToken": telegram.bot_token, "chatId": telegram.chat_id,
                     "apiUrl": telegram.api_url},
    })
}

/// The platforms one set-up page saves.
#[derive(Clone, Copy, Debug)]
pub(crate) enum SetUp {
    Ntfy,
    Gotify,
    Telegram,
}

impl SetUp {
    /// The save of this page: checks, tests and writes under the home directory (`workspace`
    /// for ntfy's project scope), then puts the new settings in force.
    pub(crate) fn save(self, dispatcher: Dispatcher, workspace: PathBuf) -> Save {
        std::sync::Arc::new(move |home: &Path, values: Value| {
            // The overlay saves on a blocking thread of the runtime, where waiting is allowed.
            let runtime = tokio::runtime::Handle::current();
            let saved = match self {
                SetUp::Ntfy => {
                    runtime.block_on(set_ntfy(&dispatcher, home, &workspace, &values))?
                }
                SetUp::Gotify => runtime.block_on(set_gotify(&dispatcher, home, &values))?,
                SetUp::Telegram => runtime.block_on(set_telegram(&dispatcher, home, &values))?,
            };
            dispatcher.reload_config();
            Ok(saved)
        })
    }
}

/// The text at `key` (`ntfy.topic`), trimmed; `None` when empty or absent.
fn text(values: &Value, key: &str) -> Option<String> {
    let value = key.split('.').fold(values, |value, key| &value[key]);
    value
        .as_str()
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
}

/// The number at `key` within `min..=max`, else `default`.
fn priority(values: &Value, key: &str, (min, max): (u8, u8), default: u8) -> u8 {
    let value = key.split('.').fold(values, |value, key| &value[key]);
    value
        .as_u64()
        .and_then(|number| u8::try_from(number).ok())
        .map_or(default, |number| number.clamp(min, max))
}

/// The set-up's test message.
fn setup_notice(platform: &str) -> Notice {
    Notice::new(
        "Pi — Setup Test",
        format!(
            "{platform} configured successfully at {}",
            crate::sys::utc_clock(crate::sys::now_ms())
        ),
        Priority::Normal,
    )
}

async fn set_ntfy(
    dispatcher: &Dispatcher,
    home: &Path,
    workspace: &Path,
    values: &Value,
) -> anyhow::Result<String> {
    let Some(topic) = text(values, "ntfy.topic") else {
        bail!("ntfy needs a topic: the one your phone subscribes to");
    };
    let config = NtfyConfig {
        enabled: true,
        server_url: text(values, "ntfy.serverUrl")
            .map_or_else(|| DEFAULT_NTFY_SERVER.to_owned(), trim_slash),
        topic: Some(topic),
        token: text(values, "ntfy.token"),
        priority: priority(values, "ntfy.priority", (1, 5), 3),
    };
    tested(dispatcher, ntfy_request(&config, &setup_notice("ntfy"))).await?;
    let path = match values["scope"].as_str() {
        Some("project") => workspace.join(NTFY_FILE),
        _ => home.join(NTFY_FILE),
    };
    let section = json!({"enabled": true, "serverUrl": config.server_url, "topic": config.topic,
                         "token": config.token, "priority": config.priority});
    write_private(&path, section)?;
    Ok(format!(
        "ntfy set up: the test reached topic {}. Saved to {}.",
        config.topic.unwrap_or_default(),
        path.display()
    ))
}

async fn set_gotify(
    dispatcher: &Dispatcher,
    home: &Path,
    values: &Value,
) -> anyhow::Result<String> {
    let (Some(server), Some(token)) = (
        text(values, "gotify.serverUrl"),
        text(values, "gotify.appToken"),
    ) else {
        bail!("Gotify needs a server and an app token");
    };
    let config = GotifyConfig {
        enabled: true,
        server_url: Some(trim_slash(server)),
        app_token: Some(token),
        priority: priority(values, "gotify.priority", (1, 10), 5),
    };
    tested(dispatcher, gotify_request(&config, &setup_notice("Gotify"))).await?;
    let path = home.join(CONFIG_FILE);
    let section = json!({"enabled": true, "serverUrl": config.server_url,
                         "appToken": config.app_token, "priority": config.priority});
    write_section(&path, "gotify", section)?;
    Ok(format!(
        "Gotify set up: the test reached {}. Saved to {}.",
        config.server_url.unwrap_or_default(),
        path.display()
    ))
}

async fn set_telegram(
    dispatcher: &Dispatcher,
    home: &Path,
    values: &Value,
) -> anyhow::Result<String> {
    // Only what a bot token is made of (Unipi's filter): a paste's stray characters go.
    let token: String = text(values, "telegram.botToken")
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '_' | '-'))
        .collect();
    if token.is_empty() {
        bail!("Telegram needs the bot token @BotFather gave you");
    }
    let api_url = text(values, "telegram.apiUrl").map(trim_slash);
    let mut config = TelegramConfig {
        enabled: true,
        bot_token: Some(token),
        chat_id: text(values, "telegram.chatId"),
        api_url: api_url
            .clone()
            .unwrap_or_else(|| DEFAULT_TELEGRAM_API.to_owned()),
    };
    let found = config.chat_id.is_none();
    if found {
        config.chat_id = Some(find_chat(dispatcher, &config).await?);
    }
    tested(
        dispatcher,
        telegram_request(&config, &setup_notice("Telegram")),
    )
    .await?;
    let path = home.join(CONFIG_FILE);
    let mut section = json!({"enabled": true, "botToken": config.bot_token,
                             "chatId": config.chat_id});
    if let Some(api_url) = api_url {
        section["apiUrl"] = Value::from(api_url);
    }
    write_section(&path, "telegram", section)?;
    let chat = config.chat_id.unwrap_or_default();
    let how = if found {
        " (found from the bot's messages)"
    } else {
        ""
    };
    Ok(format!(
        "Telegram set up: the test reached chat {chat}{how}. Saved to {}.",
        path.display()
    ))
}

/// The chat of the last message the bot received (`getUpdates`), asked every [`TG_POLL`]
/// until one came or [`TG_WAIT`] passed. A network error is tried again, as Unipi's did; a
/// refusal (a wrong token) ends it at once. Errors never carry the URL (it holds the token).
async fn find_chat(dispatcher: &Dispatcher, config: &TelegramConfig) -> anyhow::Result<String> {
    let url = format!(
        "{}/bot{}/getUpdates?allowed_updates=%5B%22message%22%5D",
        config.api_url.trim_end_matches('/'),
        config.bot_token.as_deref().unwrap_or_default()
    );
    let client = dispatcher.client().await.map_err(anyhow::Error::msg)?;
    let wait = dispatcher.config().send_timeout;
    let deadline = Instant::now() + TG_WAIT;
    loop {
        match tokio::time::timeout(wait, client.get(&url).send()).await {
            Ok(Ok(response)) => {
                let status = response.status();
                let body = response.text().await.unwrap_or_default();
                if !status.is_success() {
                    bail!("Telegram API error {}: {}", status.as_u16(), body.trim());
                }
                let updates: Value = serde_json::from_str(&body)
                    .context("Telegram answered getUpdates with something other than JSON")?;
                if let Some(chat) = last_chat(&updates) {
                    return Ok(chat);
                }
            }
            Ok(Err(err)) => tracing::debug!("notify: Telegram set-up: {}", err.without_url()),
            Err(_) => tracing::debug!("notify: Telegram set-up: no answer within {wait:?}"),
        }
        if Instant::now() + TG_POLL > deadline {
            bail!(
                "no message reached the bot within {} s: send your bot any message in \
                 Telegram, then press s again",
                TG_WAIT.as_secs()
            );
        }
        tokio::time::sleep(TG_POLL).await;
    }
}

/// The chat id of the last update with a message (`message.chat.id`, or a button's
/// `callback_query.message.chat.id`).
fn last_chat(updates: &Value) -> Option<String> {
    updates["result"]
        .as_array()?
        .iter()
        .rev()
        .find_map(|update| {
            let chat = [&update["message"], &update["callback_query"]["message"]]
                .into_iter()
                .map(|message| &message["chat"]["id"])
                .find(|id| !id.is_null())?;
            match chat {
                Value::Number(id) => Some(id.to_string()),
                Value::String(id) => Some(id.clone()),
                _ => None,
            }
        })
}

/// Sends the set-up's test under the send timeout; nothing is saved when it does not arrive.
async fn tested(dispatcher: &Dispatcher, request: Request) -> anyhow::Result<()> {
    let service = request.service;
    let wait = dispatcher.config().send_timeout;
    let client = dispatcher.client().await.map_err(anyhow::Error::msg)?;
    let sent = tokio::time::timeout(wait, post(client, request))
        .await
        .unwrap_or_else(|_| Err(format!("{service}: no answer within {wait:?}")));
    match sent {
        Ok(()) => Ok(()),
        Err(err) => bail!("the test message did not go through, nothing was saved: {err}"),
    }
}

fn trim_slash(url: String) -> String {
    url.trim_end_matches('/').to_owned()
}

/// `section` into the `key` object of the JSON file at `path`, the object's other keys kept.
fn write_section(path: &Path, key: &str, section: Value) -> anyhow::Result<()> {
    let file = crate::config::module_file::read_json_object(path)?;
    let mut merged = match file.get(key) {
        Some(Value::Object(object)) => object.clone(),
        _ => Map::new(),
    };
    if let Value::Object(section) = section {
        merged.extend(section);
    }
    write_private(path, json!({ key: merged }))
}

/// Merges `values` into the JSON file at `path` crash-safe, the file readable by its owner only
/// (it holds a token): a file others could read is made private before the token goes in.
fn write_private(path: &Path, values: Value) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o077 != 0
    {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("making {} private", path.display()))?;
    }
    crate::config::merge_json_file(path, &values)
}

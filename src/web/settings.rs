//! `/unipi:web-settings`: the web settings as the settings overlay's fields — the fetch defaults,
//! the private-network switch, the search provider first asked, SearXNG's address and the keyed
//! providers' API keys (secrets: typed, never shown) — saved into `~/.unipi/config/web.json`.
//! The `search` section is merged provider by provider into what the file holds, so what the
//! overlay does not show (a provider's `url`, `enabled`) stays; a cleared key is written as
//! `null`, which leaves the provider to its environment variable.

use std::path::Path;

use serde_json::{Value, json};

use super::config::{MAX_BATCH_CONCURRENCY, MAX_TIMEOUT, WEB_CONFIG_FILE, WebConfig};
use super::search::ProviderKind;
use crate::capability::settings::{Kind, Setting, SettingsPage};

/// The keyed providers, as the overlay lists their keys.
const KEYED: [ProviderKind; 4] = [
    ProviderKind::Brave,
    ProviderKind::Tavily,
    ProviderKind::Jina,
    ProviderKind::SerpApi,
];

const PROVIDERS: &[&str] = &[
    "duckduckgo",
    "searxng",
    "brave",
    "tavily",
    "jina",
    "serpapi",
];

/// The overlay: search first, then the fetch defaults.
pub(crate) const SETTINGS_PAGE: SettingsPage<WebConfig> = SettingsPage {
    title: "Web settings",
    file: WEB_CONFIG_FILE,
    what: "web settings",
    load: <WebConfig as crate::config::module_file::ModuleConfig>::load,
    settings,
    values,
};

fn number(
    key: &'static str,
    label: &'static str,
    range: (u64, u64),
    step: u64,
    unit: &'static str,
    help: &'static str,
) -> Setting {
    let kind = Kind::Number {
        unit,
        min: range.0,
        max: range.1,
        step,
        scale: 1,
        zero_is_null: false,
    };
    Setting::new(key, label, kind, help)
}

fn settings() -> Vec<Setting> {
    let mut settings = vec![
        Setting::new(
            "search.default",
            "Search provider",
            Kind::Choice(PROVIDERS),
            "Asked first by web_search; the others that are configured follow if it fails.",
        ),
        Setting::new(
            "search.providers.searxng.url",
            "SearXNG address",
            Kind::Text,
            "Your instance, e.g. http://127.0.0.1:8888 (its JSON format must be on).",
        ),
    ];
    for kind in KEYED {
        let name = kind.name();
        settings.push(Setting::new(
            &format!("search.providers.{name}.apiKey"),
            &format!("{} API key", kind.label()),
            Kind::Secret,
            "Empty: the provider's environment variable, if set.",
        ));
    }
    settings.extend([
        Setting::flag(
            "allowPrivateNetwork",
            "Allow private addresses",
            "Let web_fetch reach loopback, private and link-local addresses.",
        ),
        number(
            "maxChars",
            "Characters shown",
            (1_000, 1_000_000),
            1_000,
            "characters",
            "The default output budget of a fetch.",
        ),
        number(
            "timeoutSeconds",
            "Timeout",
            (1, MAX_TIMEOUT.as_secs()),
            1,
            "s",
            "A fetch or a provider gives up after this long.",
        ),
        number(
            "batchConcurrency",
            "Batch pool",
            (1, MAX_BATCH_CONCURRENCY as u64),
            1,
            "pages",
            "Pages a batch fetches at the same time.",
        ),
        number(
            "cacheTtlSeconds",
            "Cache lifetime",
            (0, 7 * 24 * 3600),
            300,
            "s",
            "How long pages and searches are served from the cache; 0 turns it off.",
        ),
    ]);
    settings
}

fn values(config: &WebConfig) -> Value {
    let search = &config.search;
    let mut providers = json!({});
    for kind in KEYED {
        let key = search
            .providers
            .get(kind.name())
            .and_then(|p| p.api_key.clone());
        providers[kind.name()] = json!({ "apiKey": key });
    }
    let searxng = search.providers.get("searxng").and_then(|p| p.url.clone());
    providers["searxng"] = json!({ "url": searxng });
    json!({
        "search": {
            "default": search.default.unwrap_or(ProviderKind::DuckDuckGo).name(),
            "providers": providers,
        },
        "allowPrivateNetwork": config.allow_private_network,
        "maxChars": config.max_chars,
        "timeoutSeconds": config.timeout.as_secs(),
        "batchConcurrency": config.batch_concurrency,
        "cacheTtlSeconds": config.cache_ttl.as_secs(),
    })
}

/// Writes the overlay's `values` into `home`'s web.json: the `search` section provider by
/// provider into what the file holds, the other keys as they are.
pub(crate) fn save(home: &Path, mut values: Value) -> anyhow::Result<String> {
    let path = home.join(WEB_CONFIG_FILE);
    let file = crate::config::module_file::read_json_object(&path)?;
    if let Some(shown) = values.get_mut("search").map(Value::take) {
        let mut search = match file.get("search") {
            Some(Value::Object(kept)) => Value::Object(kept.clone()),
            _ => json!({}),
        };
        if let Some(default) = shown.get("default") {
            search["default"] = default.clone();
        }
        if !search["providers"].is_object() {
            search["providers"] = json!({});
        }
        let providers = shown["providers"].as_object().cloned().unwrap_or_default();
        for (name, fields) in providers {
            if !search["providers"][&name].is_object() {
                search["providers"][&name] = json!({});
            }
            for (key, value) in fields.as_object().cloned().unwrap_or_default() {
                search["providers"][&name][&key] = value;
            }
        }
        values["search"] = search;
    }
    crate::config::merge_json_file(&path, &values)?;
    Ok("Saved. In force from the next fetch or search.".to_owned())
}

#[cfg(test)]
mod tests {
    use unipi_widgets::settings::SettingValue;

    use super::*;
    use crate::config::module_file::ModuleConfig as _;

    #[test]
    fn keys_are_secret_fields_and_a_save_keeps_what_the_overlay_does_not_show() {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let path = home.path().join(WEB_CONFIG_FILE);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            r#"{"userAgent": "probe", "search": {"providers": {
                "brave": {"url": "http://proxy.example/brave", "apiKey": "BSA-old-key-0001"},
                "duckduckgo": {"enabled": false}}}}"#,
        )
        .unwrap();
        let (config, errors) = WebConfig::load(Some(home.path()), work.path());
        assert!(errors.is_empty(), "{errors:?}");
        let mut fields = SETTINGS_PAGE.fields(&config);
        let brave = fields
            .iter_mut()
            .find(|field| field.key == "search.providers.brave.apiKey")
            .unwrap();
        assert!(matches!(&brave.value, SettingValue::Secret(key) if key == "BSA-old-key-0001"));
        brave.value = SettingValue::Secret("BSA-new-key-0002".into());
        let tavily = fields
            .iter_mut()
            .find(|field| field.key == "search.providers.tavily.apiKey")
            .unwrap();
        tavily.value = SettingValue::Secret("tvly-new".into());
        save(home.path(), SETTINGS_PAGE.to_values(&fields)).unwrap();

        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(written["userAgent"], "probe", "kept");
        assert_eq!(
            written["search"]["providers"]["brave"],
            json!({"url": "http://proxy.example/brave", "apiKey": "BSA-new-key-0002"})
        );
        assert_eq!(
            written["search"]["providers"]["duckduckgo"],
            json!({"enabled": false})
        );
        assert_eq!(
            written["search"]["providers"]["tavily"]["apiKey"],
            "tvly-new"
        );
        assert_eq!(written["search"]["default"], "duckduckgo");
        // What it wrote reads back without a complaint (a cleared key is null: not set).
        let (config, errors) = WebConfig::load(Some(home.path()), work.path());
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(config.max_chars, crate::web::config::DEFAULT_MAX_CHARS);
        let jina = config.search.providers.get("jina").unwrap();
        assert_eq!(jina.api_key, None);
    }

    /// The overlay as it opens with a key and SearXNG's address set: the key is shown masked.
    #[test]
    fn the_overlay_shows_keys_masked() {
        use ratatui::buffer::Buffer;
        use ratatui::layout::Rect;
        use unipi_widgets::Theme;
        use unipi_widgets::settings::{SettingsModel, render};

        let text = r#"{"search": {"default": "searxng", "providers": {
            "searxng": {"url": "http://127.0.0.1:8888"}, "brave": {"apiKey": "BSA-secret-0001"}}}}"#;
        let (config, errors) = WebConfig::from_sources(&[(Path::new("/h/web.json"), text)]);
        assert!(errors.is_empty(), "{errors:?}");
        let model = SettingsModel {
            title: SETTINGS_PAGE.title.to_owned(),
            fields: SETTINGS_PAGE.fields(&config),
            keys: vec![
                ("s".to_owned(), "save".to_owned()),
                ("Esc".to_owned(), "close".to_owned()),
            ],
            ..SettingsModel::default()
        };
        let mut buf = Buffer::empty(Rect::new(0, 0, 80, 24));
        render(&model, &Theme::plain(), buf.area, &mut buf);
        let screen: Vec<String> = (0..buf.area.height)
            .map(|y| {
                let row: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
                row.trim_end().to_owned()
            })
            .collect();
        let screen = screen.join("\n");
        assert!(!screen.contains("BSA-secret-0001"), "{screen}");
        crate::assert_ui_snapshot!("web_settings_overlay_80x24", screen);
    }
}

//! The `search` section of `web.json`: which provider goes first and how each one is reached.
//!
//! ```json
//! { "search": { "default": "searxng",
//!               "providers": { "searxng": { "url": "http://127.0.0.1:8888" },
//!                              "brave": { "apiKey": "…" },
//!                              "duckduckgo": { "enabled": false } } } }
//! ```
//!
//! Read home first, then the workspace, key by key (a workspace's `brave.apiKey` leaves the
//! home's `brave.url` in force). A key missing from the files is read from the provider's
//! environment variable (`BRAVE_API_KEY`, …). Keys are never shown: `Debug` masks them.

use std::collections::BTreeMap;
use std::fmt;

use super::provider::{Provider, ProviderKind, mask};
use crate::bridge::Refusal;
use serde_json::Value;

use crate::config::module_file::{Object, non_empty, or_null};
use crate::web::names::WEB_CONFIG_FILE;

/// What the files say about search.
#[derive(Clone, PartialEq, Eq, Default)]
pub(crate) struct SearchConfig {
    /// The provider tried first (DuckDuckGo when the files name none).
    pub default: Option<ProviderKind>,
    /// What the files set for each provider they mention.
    pub providers: BTreeMap<&'static str, ProviderSettings>,
}

/// One provider's settings.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ProviderSettings {
    /// Off: never tried.
    pub enabled: bool,
    pub url: Option<String>,
    pub api_key: Option<String>,
}

impl Default for ProviderSettings {
    fn default() -> Self {
        ProviderSettings {
            enabled: true,
            url: None,
            api_key: None,
        }
    }
}

impl fmt::Debug for ProviderSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderSettings")
            .field("enabled", &self.enabled)
            .field("url", &self.url)
            .field("api_key", &self.api_key.as_deref().map(mask))
            .finish()
    }
}

impl fmt::Debug for SearchConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SearchConfig")
            .field("default", &self.default.map(ProviderKind::name))
            .field("providers", &self.providers)
            .finish()
    }
}

/// The original Unipi's provider ids and ours for them, lowest precedence first; `None`: known
/// there, with no counterpart here (its read and summarize providers).
const UNIPI_PROVIDERS: [(&str, Option<ProviderKind>); 11] = [
    ("duckduckgo", Some(ProviderKind::DuckDuckGo)),
    ("jina-reader", Some(ProviderKind::Jina)),
    ("jina-search", Some(ProviderKind::Jina)),
    ("jina", Some(ProviderKind::Jina)),
    ("serpapi", Some(ProviderKind::SerpApi)),
    ("tavily", Some(ProviderKind::Tavily)),
    ("brave", Some(ProviderKind::Brave)),
    ("searxng", Some(ProviderKind::Searxng)),
    ("firecrawl", None),
    ("perplexity", None),
    ("llm-summarize", None),
];

/// Our name of the provider the original Unipi called `id`, if we have it (`migrate`).
pub(crate) fn unipi_provider(id: &str) -> Option<&'static str> {
    let found = UNIPI_PROVIDERS.iter().find(|(unipi, _)| *unipi == id);
    found.and_then(|(_, kind)| kind.map(ProviderKind::name))
}

/// The provider names, as an error lists them.
fn names() -> String {
    let names: Vec<&str> = ProviderKind::ALL.iter().map(|kind| kind.name()).collect();
    names.join(", ")
}

impl SearchConfig {
    /// Reads the `search` object of one file over what earlier files gave.
    pub(crate) fn read(&mut self, section: &mut Object<'_>) {
        let provider = format!("one of {}", names());
        section.set("default", &provider, &mut self.default, |v| {
            v.as_str().and_then(ProviderKind::parse).map(Some)
        });
        if let Some(mut providers) = section.section("providers", "an object") {
            for kind in ProviderKind::ALL {
                let Some(mut one) = providers.section(kind.name(), "an object") else {
                    continue;
                };
                let settings = self.providers.entry(kind.name()).or_default();
                one.flag("enabled", &mut settings.enabled);
                let url = "an http:// or https:// URL";
                // null: not set (the overlay writes a cleared field so).
                one.set("url", url, &mut settings.url, |v| match v {
                    Value::Null => Some(None),
                    _ => non_empty(v)
                        .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
                        .map(Some),
                });
                if kind.key_env().is_some() {
                    let key = "a non-empty string";
                    let read = or_null(non_empty);
                    one.set("apiKey", key, &mut settings.api_key, read);
                }
                one.warn_unknown();
            }
            providers.warn_unknown();
        }
        section.warn_unknown();
    }

    /// The original Unipi's `web-api/config.json` `providers` object (`{id: {"enabled": bool}}`)
    /// over what earlier files gave; ids as [`UNIPI_PROVIDERS`] maps them
    /// (Jina Reader's switch is the reader's, not the search's).
    pub(crate) fn read_unipi_providers(&mut self, providers: &mut Object<'_>) {
        for (id, kind) in UNIPI_PROVIDERS {
            let Some(mut one) = providers.section(id, "an object") else {
                continue;
            };
            if let Some(kind) = kind.filter(|_| id != "jina-reader") {
                one.flag(
                    "enabled",
                    &mut self.providers.entry(kind.name()).or_default().enabled,
                );
            }
            one.ignore(&["enabled"]);
            one.warn_unknown();
        }
        providers.warn_unknown();
    }

    /// The original Unipi's `web-api/auth.json` (`{providerId: "apiKey"}`) over what earlier
    /// files gave: the keys of the providers we have (a Jina Reader key is Jina's key too, as it
    /// is the same account; Jina Search's wins when both are there).
    pub(crate) fn read_unipi_auth(&mut self, file: &mut Object<'_>) {
        for (id, kind) in UNIPI_PROVIDERS {
            let Some(kind) = kind.filter(|kind| kind.key_env().is_some()) else {
                file.ignore(&[id]);
                continue;
            };
            let settings = self.providers.entry(kind.name()).or_default();
            file.set(id, "a non-empty string", &mut settings.api_key, |v| {
                non_empty(v).map(Some)
            });
        }
        file.warn_unknown();
    }

    fn settings(&self, kind: ProviderKind) -> ProviderSettings {
        self.providers.get(kind.name()).cloned().unwrap_or_default()
    }

    /// `kind` ready to search, or why it cannot (what to set, and where). `env` reads an
    /// environment variable.
    pub(crate) fn provider(
        &self,
        kind: ProviderKind,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Provider, Refusal> {
        let name = kind.name();
        let settings = self.settings(kind);
        if !settings.enabled {
            return Err(Refusal::new(format!(
                "{name} is switched off (\"enabled\": false under search.providers.{name} in \
                 {WEB_CONFIG_FILE})"
            )));
        }
        let url = settings
            .url
            .or_else(|| kind.default_url().map(str::to_owned))
            .ok_or_else(|| {
                Refusal::new(format!(
                    "{name} needs the address of an instance: set search.providers.{name}.url \
                     in ~/{WEB_CONFIG_FILE} or the workspace's {WEB_CONFIG_FILE}"
                ))
            })?;
        let key = match kind.key_env() {
            None => None,
            Some(variable) => Some(
                settings
                    .api_key
                    .or_else(|| env(variable).filter(|key| !key.trim().is_empty()))
                    .ok_or_else(|| {
                        Refusal::new(format!(
                            "{name} needs an API key: set search.providers.{name}.apiKey in \
                             ~/{WEB_CONFIG_FILE} or the workspace's {WEB_CONFIG_FILE}, or \
                             {variable} in the environment"
                        ))
                    })?,
            ),
        };
        Ok(Provider { kind, url, key })
    }

    /// The providers that can search, in the order they are tried: `first` (or the default),
    /// then every other one that is configured. Why the first one cannot run, when it cannot.
    pub(crate) fn order(
        &self,
        first: Option<ProviderKind>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> (Vec<Provider>, Option<String>) {
        let first = first.or(self.default).unwrap_or(ProviderKind::DuckDuckGo);
        let mut order = Vec::new();
        let mut missing = None;
        match self.provider(first, env) {
            Ok(provider) => order.push(provider),
            Err(why) => missing = Some(why.into_text()),
        }
        for kind in ProviderKind::ALL {
            if kind != first
                && let Ok(provider) = self.provider(kind, env)
            {
                order.push(provider);
            }
        }
        (order, missing)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::module_file::ModuleConfig;

    /// A settings file with only the `search` section, read as `web.json` reads it.
    #[derive(Debug, Default)]
    struct WebConfig {
        search: SearchConfig,
    }

    impl ModuleConfig for WebConfig {
        const FILE: &'static str = WEB_CONFIG_FILE;

        fn read(&mut self, file: &mut Object<'_>) {
            if let Some(mut search) = file.section("search", "an object") {
                self.search.read(&mut search);
            }
            file.warn_unknown();
        }
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn the_workspace_overrides_the_home_key_by_key_and_keys_stay_masked() {
        let home = r#"{"search": {"default": "brave", "providers": {
            "brave": {"url": "http://proxy.example/brave", "apiKey": "home-key-0001"},
            "searxng": {"url": "http://127.0.0.1:8888"}}}}"#;
        let work = r#"{"search": {"providers": {"brave": {"apiKey": "work-key-0002"}}}}"#;
        let (config, errors) = WebConfig::from_sources(&[
            (Path::new("/h/web.json"), home),
            (Path::new("/w/web.json"), work),
        ]);
        assert_eq!(errors, vec![]);
        let search = &config.search;
        assert_eq!(search.default, Some(ProviderKind::Brave));
        let brave = search.provider(ProviderKind::Brave, &no_env).unwrap();
        assert_eq!(brave.url, "http://proxy.example/brave");
        assert_eq!(brave.key.as_deref(), Some("work-key-0002"));
        let shown = format!("{config:?}");
        assert!(
            !shown.contains("work-key") && !shown.contains("home-key"),
            "{shown}"
        );
        assert!(shown.contains("••••0002"), "{shown}");

        let (order, missing) = search.order(None, &no_env);
        let names: Vec<&str> = order.iter().map(Provider::name).collect();
        assert_eq!(names, ["brave", "duckduckgo", "searxng"]);
        assert_eq!(missing, None);
    }

    #[test]
    fn keys_come_from_the_environment_when_the_files_give_none() {
        let config = SearchConfig::default();
        let env = |name: &str| (name == "TAVILY_API_KEY").then(|| "tvly-env".to_owned());
        let tavily = config.provider(ProviderKind::Tavily, &env).unwrap();
        assert_eq!(tavily.key.as_deref(), Some("tvly-env"));
        assert_eq!(tavily.url, "https://api.tavily.com/search");
        let (order, _) = config.order(None, &env);
        let names: Vec<&str> = order.iter().map(Provider::name).collect();
        assert_eq!(names, ["duckduckgo", "tavily"]);
    }

    #[test]
    fn what_cannot_run_says_what_to_set() {
        let config = SearchConfig::default();
        let why = config.provider(ProviderKind::Brave, &no_env).unwrap_err();
        assert_eq!(
            why.text(),
            "brave needs an API key: set search.providers.brave.apiKey in \
             ~/.unipi/config/web.json or the workspace's .unipi/config/web.json, or \
             BRAVE_API_KEY in the environment"
        );
        let why = config.provider(ProviderKind::Searxng, &no_env).unwrap_err();
        assert!(
            why.starts_with("searxng needs the address of an instance"),
            "{why}"
        );
        let (order, missing) = config.order(Some(ProviderKind::Jina), &no_env);
        assert_eq!(order.len(), 1, "DuckDuckGo, which needs nothing");
        assert!(missing.unwrap().starts_with("jina needs an API key"));

        let off = r#"{"search": {"providers": {"duckduckgo": {"enabled": false}}}}"#;
        let (config, _) = WebConfig::from_sources(&[(Path::new("/w/web.json"), off)]);
        let (order, missing) = config.search.order(None, &no_env);
        assert!(order.is_empty());
        assert!(missing.unwrap().starts_with("duckduckgo is switched off"));
    }

    #[test]
    fn bad_search_keys_name_path_line_and_column() {
        let text = "{\"search\": {\n  \"default\": \"altavista\",\n  \"providers\": {\n    \
                    \"brave\": {\"apiKey\": 7, \"token\": \"x\"}\n  }\n}}";
        let (config, errors) = WebConfig::from_sources(&[(Path::new("/w/web.json"), text)]);
        assert_eq!(config.search.default, None);
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "/w/web.json:2:3: `default` must be one of duckduckgo, searxng, brave, tavily, \
                 jina, serpapi",
                "/w/web.json:4:15: `apiKey` must be a non-empty string",
                "/w/web.json:4:28: unknown key `token` (expected enabled, url, apiKey)",
            ]
        );
    }
}

//! The web settings file: `~/.unipi/config/web.json`, overridden key by key by
//! `<workspace>/.unipi/config/web.json`. A bad file or key is a
//! [`ConfigError`](crate::config::ConfigError) with path, line and column, and the default stays in
//! force for it.
//!
//! ```json
//! { "enabled": true, "allowPrivateNetwork": false, "maxChars": 50000, "timeoutSeconds": 15,
//!   "batchConcurrency": 8, "cacheTtlSeconds": 3600, "userAgent": "…", "includeImages": true,
//!   "search": { "default": "duckduckgo", "providers": { "brave": { "apiKey": "…" } } } }
//! ```
//!
//! `search` is [`SearchConfig`]'s.
//!
//! The original Unipi's files come first, home then workspace, so `web.json` wins wherever both
//! set a value: `.unipi/config/web-api/config.json` (`smartFetch.maxChars`, `.timeoutMs`,
//! `.batchConcurrency`, `.removeImages`; `cache.ttlMs`, `cache.enabled`; `providers.<id>.enabled`)
//! and `.unipi/config/web-api/auth.json` (`{providerId: "apiKey"}`: the keys of Brave, Tavily, Jina
//! and SerpAPI). Their problems are reported like `web.json`'s.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::search::SearchConfig;
use crate::config::module_file::{ModuleConfig, Object, non_empty, to_usize, whole_in};

pub use super::names::{UNIPI_AUTH_FILE, UNIPI_CONFIG_FILE, WEB_CONFIG_FILE};

/// The files read, lowest precedence first (each home, then workspace).
pub const WEB_CONFIG_FILES: [&str; 3] = [UNIPI_CONFIG_FILE, UNIPI_AUTH_FILE, WEB_CONFIG_FILE];

/// The original's defaults.
pub(crate) const DEFAULT_MAX_CHARS: usize = 50_000;
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);
pub(crate) const DEFAULT_BATCH_CONCURRENCY: usize = 8;
pub(crate) const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(60 * 60);
/// The largest batch worker pool the file or a call may ask for.
pub(crate) const MAX_BATCH_CONCURRENCY: usize = 32;
/// The longest timeout a call may ask for.
pub(crate) const MAX_TIMEOUT: Duration = Duration::from_secs(300);

/// What the file can set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebConfig {
    /// Off: no web tools at all.
    pub enabled: bool,
    /// Let fetches reach private, loopback and link-local addresses.
    pub allow_private_network: bool,
    pub max_chars: usize,
    pub timeout: Duration,
    pub batch_concurrency: usize,
    /// Whether images are kept when a call does not say (`includeImages`).
    pub include_images: bool,
    /// How long a fetched page is served from the cache; zero turns the cache off.
    pub cache_ttl: Duration,
    /// Replaces the browser-like User-Agent.
    pub user_agent: Option<String>,
    /// The file that gave `allowPrivateNetwork` last, and what it gave (a refusal points there).
    pub allow_private_given: Option<(PathBuf, Value)>,
    /// The `search` section: providers and their keys.
    pub(crate) search: SearchConfig,
}

impl WebConfig {
    /// How a refusal tells the user to allow private addresses: where the switch is, or the file
    /// whose value keeps it off (never "set the key" when a file already sets it).
    pub(crate) fn private_network_remedy(&self) -> String {
        match &self.allow_private_given {
            None => "set \"allowPrivateNetwork\": true in ~/.unipi/config/web.json or the \
                     workspace's .unipi/config/web.json to allow it"
                .to_owned(),
            Some((path, Value::Bool(false))) => format!(
                "{} sets \"allowPrivateNetwork\": false; set it to true there to allow it",
                path.display()
            ),
            Some((path, other)) => format!(
                "{} sets \"allowPrivateNetwork\" to {other}, which is not true or false; set it \
                 to true there to allow it",
                path.display()
            ),
        }
    }

    /// The original Unipi's `web-api/config.json`: its fetch defaults, cache and provider
    /// switches (the browser, OS and reply settings have no counterpart and are passed over).
    fn read_unipi_config(&mut self, file: &mut Object<'_>) {
        if let Some(mut fetch) = file.section("smartFetch", "an object") {
            let max_chars = whole_in(1..=u64::from(u32::MAX));
            fetch.set("maxChars", "a positive integer", &mut self.max_chars, |v| {
                max_chars(v).map(to_usize)
            });
            let most = MAX_TIMEOUT.as_millis() as u64;
            let timeout = format!("an integer from 1 to {most}");
            fetch.set("timeoutMs", &timeout, &mut self.timeout, |v| {
                whole_in(1..=most)(v).map(Duration::from_millis)
            });
            batch_concurrency(&mut fetch, &mut self.batch_concurrency);
            let mut remove = !self.include_images;
            fetch.flag("removeImages", &mut remove);
            self.include_images = !remove;
            fetch.ignore(&["browser", "os", "includeReplies"]);
            fetch.warn_unknown();
        }
        if let Some(mut cache) = file.section("cache", "an object") {
            let ttl = "a whole number of milliseconds";
            cache.set("ttlMs", ttl, &mut self.cache_ttl, |v| {
                v.as_u64().map(Duration::from_millis)
            });
            if cache.get("enabled", "true or false", Value::as_bool) == Some(false) {
                self.cache_ttl = Duration::ZERO;
            }
            cache.warn_unknown();
        }
        if let Some(mut providers) = file.section("providers", "an object") {
            self.search.read_unipi_providers(&mut providers);
        }
        file.warn_unknown();
    }
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig {
            enabled: true,
            allow_private_network: false,
            max_chars: DEFAULT_MAX_CHARS,
            timeout: DEFAULT_TIMEOUT,
            batch_concurrency: DEFAULT_BATCH_CONCURRENCY,
            include_images: true,
            cache_ttl: DEFAULT_CACHE_TTL,
            user_agent: None,
            allow_private_given: None,
            search: SearchConfig::default(),
        }
    }
}

impl ModuleConfig for WebConfig {
    const FILE: &'static str = WEB_CONFIG_FILE;
    const UNIPI_FILES: &'static [&'static str] = &[UNIPI_CONFIG_FILE, UNIPI_AUTH_FILE];

    fn read(&mut self, file: &mut Object<'_>) {
        if file.path().ends_with(UNIPI_CONFIG_FILE) {
            return self.read_unipi_config(file);
        }
        if file.path().ends_with(UNIPI_AUTH_FILE) {
            return self.search.read_unipi_auth(file);
        }
        file.flag("enabled", &mut self.enabled);
        if let Some(given) = file.value("allowPrivateNetwork") {
            self.allow_private_given = Some((file.path().to_owned(), given.clone()));
        }
        file.flag("allowPrivateNetwork", &mut self.allow_private_network);
        let chars = "a positive integer";
        let max_chars = whole_in(1..=u64::from(u32::MAX));
        file.set("maxChars", chars, &mut self.max_chars, |v| {
            max_chars(v).map(to_usize)
        });
        let timeout = format!("an integer from 1 to {}", MAX_TIMEOUT.as_secs());
        let seconds = whole_in(1..=MAX_TIMEOUT.as_secs());
        file.set("timeoutSeconds", &timeout, &mut self.timeout, |v| {
            seconds(v).map(Duration::from_secs)
        });
        batch_concurrency(file, &mut self.batch_concurrency);
        let ttl = "a whole number of seconds (0 turns the cache off)";
        file.set("cacheTtlSeconds", ttl, &mut self.cache_ttl, |v| {
            v.as_u64().map(Duration::from_secs)
        });
        file.flag("includeImages", &mut self.include_images);
        let agent = "a non-empty string";
        file.set("userAgent", agent, &mut self.user_agent, |v| {
            non_empty(v).map(Some)
        });
        if let Some(mut search) = file.section("search", "an object") {
            self.search.read(&mut search);
        }
        file.warn_unknown();
    }
}

/// `batchConcurrency`, in `web.json` and in Unipi's `smartFetch`: how many pages a batch reads
/// at once.
fn batch_concurrency(object: &mut Object<'_>, slot: &mut usize) {
    let workers = format!("an integer from 1 to {MAX_BATCH_CONCURRENCY}");
    let most = whole_in(1..=MAX_BATCH_CONCURRENCY as u64);
    object.set("batchConcurrency", &workers, slot, |v| {
        most(v).map(to_usize)
    });
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::error::assert_one_error_at;
    use crate::config::module_file::write_module_file;

    #[test]
    fn workspace_overrides_home_key_by_key() {
        let home = r#"{"maxChars": 1000, "timeoutSeconds": 5}"#;
        let work = r#"{"allowPrivateNetwork": true, "maxChars": 2000}"#;
        let (config, errors) = WebConfig::from_sources(&[
            (Path::new("/h/web.json"), home),
            (Path::new("/w/web.json"), work),
        ]);
        assert_eq!(errors, vec![]);
        assert!(config.allow_private_network);
        assert_eq!(config.max_chars, 2000);
        assert_eq!(config.timeout, Duration::from_secs(5));
        assert_eq!(config.batch_concurrency, DEFAULT_BATCH_CONCURRENCY);
    }

    #[test]
    fn bad_values_name_path_line_and_column_and_keep_the_default() {
        let text =
            "{\n  \"allowPrivateNetwork\": \"yes\",\n  \"batchConcurrency\": 0,\n  \"proxy\": 1\n}";
        let (config, errors) = WebConfig::from_sources(&[(Path::new("/w/web.json"), text)]);
        assert_eq!(
            config,
            WebConfig {
                allow_private_given: Some(("/w/web.json".into(), Value::from("yes"))),
                ..WebConfig::default()
            }
        );
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "/w/web.json:2:3: `allowPrivateNetwork` must be true or false",
                "/w/web.json:3:3: `batchConcurrency` must be an integer from 1 to 32",
                "/w/web.json:4:3: unknown key `proxy` (expected enabled, allowPrivateNetwork, \
                 maxChars, timeoutSeconds, batchConcurrency, cacheTtlSeconds, includeImages, userAgent, \
                 search)",
            ]
        );
        let (_, errors) =
            WebConfig::from_sources(&[(Path::new("/b.json"), "{\n  \"maxChars\": ,")]);
        assert_one_error_at(&errors, Path::new("/b.json"), "2:");
    }

    /// The refusal names the file that keeps private addresses off, and only asks for the key
    /// when no file gives it.
    #[test]
    fn the_remedy_points_at_the_file_that_keeps_private_addresses_off() {
        let remedy = |sources: &[(&Path, &str)]| {
            let (config, _) = WebConfig::from_sources(sources);
            (
                config.allow_private_network,
                config.private_network_remedy(),
            )
        };
        let (home, work) = (Path::new("/h/web.json"), Path::new("/w/web.json"));
        let (allowed, text) = remedy(&[(home, r#"{"maxChars": 900}"#)]);
        assert!(!allowed);
        assert!(
            text.starts_with("set \"allowPrivateNetwork\": true in ~/.unipi"),
            "{text}"
        );
        let cases = [
            (
                r#"{"allowPrivateNetwork": true}"#,
                r#"{"allowPrivateNetwork": false}"#,
                "/w/web.json sets \"allowPrivateNetwork\": false; set it to true there to allow it",
            ),
            (
                r#"{"allowPrivateNetwork": false}"#,
                "{}",
                "/h/web.json sets \"allowPrivateNetwork\": false; set it to true there to allow it",
            ),
            (
                "{}",
                r#"{"allowPrivateNetwork": "yes"}"#,
                "/w/web.json sets \"allowPrivateNetwork\" to \"yes\", which is not true or false; \
                 set it to true there to allow it",
            ),
        ];
        for (home_text, work_text, want) in cases {
            assert_eq!(
                remedy(&[(home, home_text), (work, work_text)]),
                (false, want.to_owned()),
                "{home_text} then {work_text}"
            );
        }
    }

    #[test]
    fn files_on_disk_home_then_workspace() {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let (config, errors) = WebConfig::load(Some(home.path()), work.path());
        assert_eq!((config, errors), (WebConfig::default(), vec![]));
        write_module_file(home.path(), WEB_CONFIG_FILE, r#"{"cacheTtlSeconds": 0}"#);
        write_module_file(
            work.path(),
            WEB_CONFIG_FILE,
            r#"{"allowPrivateNetwork": true}"#,
        );
        let (config, errors) = WebConfig::load(Some(home.path()), work.path());
        assert!(errors.is_empty(), "{errors:?}");
        assert!(config.allow_private_network);
        assert_eq!(config.cache_ttl, Duration::ZERO);
    }

    /// The original Unipi's files, in a home that is not the working directory and in the
    /// workspace: their values under web.json's, their keys mapped, their problems reported with
    /// path, line and column, and nothing stopped by them.
    #[test]
    fn unipi_files_are_read_under_web_json() {
        use crate::web::search::ProviderKind;

        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        write_module_file(
            home.path(),
            UNIPI_CONFIG_FILE,
            r#"{"providers": {"tavily": {"enabled": true}, "duckduckgo": {"enabled": false},
                "firecrawl": {"enabled": true}},
              "cache": {"enabled": true, "ttlMs": 120000},
              "smartFetch": {"browser": "chrome_145", "maxChars": 9000, "timeoutMs": 2500,
                             "batchConcurrency": 3, "removeImages": true}}"#,
        );
        write_module_file(
            home.path(),
            UNIPI_AUTH_FILE,
            r#"{"tavily": "tvly-unipi-0001", "jina-reader": "jina-reader-0002",
                "jina-search": "jina-search-0003", "serpapi": "serp-unipi-0004",
                "firecrawl": "fc-0005"}"#,
        );
        write_module_file(
            work.path(),
            UNIPI_AUTH_FILE,
            r#"{"brave": "BSA-workspace-0006"}"#,
        );
        write_module_file(
            work.path(),
            WEB_CONFIG_FILE,
            r#"{"maxChars": 20000, "search": {"providers": {"serpapi": {"apiKey": "serp-ours"}}}}"#,
        );
        let (config, errors) = WebConfig::load(Some(home.path()), work.path());
        assert_eq!(errors, vec![]);
        assert_eq!(config.max_chars, 20_000, "web.json wins");
        assert_eq!(config.timeout, Duration::from_millis(2500));
        assert_eq!(config.batch_concurrency, 3);
        assert!(!config.include_images, "removeImages: true");
        assert_eq!(config.cache_ttl, Duration::from_secs(120));
        let env = |_: &str| None;
        let key = |kind| config.search.provider(kind, &env).unwrap().key;
        assert_eq!(
            key(ProviderKind::Tavily).as_deref(),
            Some("tvly-unipi-0001")
        );
        assert_eq!(key(ProviderKind::Jina).as_deref(), Some("jina-search-0003"));
        assert_eq!(key(ProviderKind::SerpApi).as_deref(), Some("serp-ours"));
        assert_eq!(
            key(ProviderKind::Brave).as_deref(),
            Some("BSA-workspace-0006")
        );
        let off = config.search.provider(ProviderKind::DuckDuckGo, &env);
        assert!(off.unwrap_err().starts_with("duckduckgo is switched off"));
        assert!(!format!("{config:?}").contains("tvly-unipi"));

        // The cache switched off there; bad values and unknown keys are reported, the rest read.
        write_module_file(
            home.path(),
            UNIPI_CONFIG_FILE,
            "{\"cache\": {\"enabled\": false},\n \"smartFetch\": {\"timeoutMs\": \"soon\", \"proxy\": \"x\"}}",
        );
        write_module_file(
            home.path(),
            UNIPI_AUTH_FILE,
            "{\"tavily\": 7,\n \"bing\": \"k\"}",
        );
        write_module_file(work.path(), UNIPI_AUTH_FILE, "{\"brave\": ");
        let (config, errors) = WebConfig::load(Some(home.path()), work.path());
        assert_eq!(config.cache_ttl, Duration::ZERO);
        assert_eq!(config.timeout, DEFAULT_TIMEOUT);
        assert_eq!(config.max_chars, 20_000);
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let (unipi_config, home_auth, work_auth) = (
            home.path().join(UNIPI_CONFIG_FILE),
            home.path().join(UNIPI_AUTH_FILE),
            work.path().join(UNIPI_AUTH_FILE),
        );
        assert_eq!(shown.len(), 5, "{shown:#?}");
        for (index, (path, at, message)) in [
            (
                &unipi_config,
                "2:17",
                "`timeoutMs` must be an integer from 1 to 300000",
            ),
            (&unipi_config, "2:38", "unknown key `proxy`"),
            (&home_auth, "1:2", "`tavily` must be a non-empty string"),
            (&home_auth, "2:2", "unknown key `bing`"),
            (&work_auth, "1:", ""),
        ]
        .into_iter()
        .enumerate()
        {
            let want = format!("{}:{at}", path.display());
            assert!(
                shown
                    .iter()
                    .any(|e| e.starts_with(&want) && e.contains(message)),
                "{index}: {want} {message} in {shown:#?}"
            );
        }
    }
}

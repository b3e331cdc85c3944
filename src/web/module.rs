//! The bridge face of the web capability: the tools `web_fetch`, `web_fetch_batch`,
//! `web_read` (the original Unipi's name: one URL like `web_fetch`, a list like the batch) and
//! `web_search` (the [`search`](super::search) providers), and the `/unipi:web-cache-clear`
//! command. Argument handling is pure ([`parse_options`],
//! [`parse_urls`]); the work is the [`Fetcher`]'s. A failed fetch is an error result whose text
//! names the code, phase and whether retrying helps, with the typed error in `details.error`.
//!
//! `web.json` is followed ([`LiveConfig`]): every call reads the config as the file is now, and
//! a fetcher is built afresh when it changed (the guard, the user agent and the cache are the
//! config's), so an edit — `allowPrivateNetwork` above all — takes effect at the next fetch.
//! Only the tools Pi was told at start stay: `enabled` switched on later needs a restart, and
//! switched off, the tools refuse.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use unipi_widgets::dashboard::{InfoGroup, InfoRow};

use super::batch;
use super::config::{MAX_BATCH_CONCURRENCY, MAX_TIMEOUT, WEB_CONFIG_FILE, WebConfig};
use super::error::FetchError;
use super::fetch::{Fetched, Fetcher, FetcherSettings};
use super::format::{self, MIN_MAX_CHARS};
use super::page::{FetchOptions, Format};
use super::search::{
    ProviderKind, SearchCache, SearchError, SearchOutcome, SearchRequest, Searcher,
};
use crate::bridge::{
    Card, CardTint, Command, CommandReply, CommandSpec, Module, NotifyLevel, Refusal, ToolCall,
    ToolError, ToolOutput, ToolSpec,
};
use crate::config::live::LiveConfig;

/// The largest `maxChars` a call may ask for.
pub(crate) const MAX_MAX_CHARS: usize = 1_000_000;
/// The most URLs one batch may hold.
pub(crate) const MAX_BATCH_URLS: usize = 50;

/// Declares the tools and the command, and runs them with the fetcher of the config in force.
#[derive(Clone)]
pub struct WebModule {
    config: LiveConfig<WebConfig>,
    /// Where the cache keeps its files (`None`: no cache).
    cache_dir: Option<PathBuf>,
    /// The fetcher built for a config (shared by the calls while the config stays).
    fetcher: Arc<Mutex<(Arc<WebConfig>, Fetcher)>>,
    searcher: Searcher,
}

/// One call's options and its output budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallOptions {
    pub fetch: FetchOptions,
    pub max_chars: usize,
    /// `format: "json"`: the page (or batch) as a JSON object, its content in markdown.
    pub json: bool,
}

impl WebModule {
    pub(crate) const FETCH: &'static str = "web_fetch";
    pub(crate) const BATCH: &'static str = "web_fetch_batch";
    /// The original's name, kept so prompts written for it still work.
    pub(crate) const READ: &'static str = "web_read";
    pub(crate) const SEARCH: &'static str = "web_search";
    /// The original Unipi's tool, with its parameter names ([`unipi_args`]): `web_read` again.
    pub(crate) const UNIPI_READ: &'static str = "multi_web_content_read";

    /// The module for `config` (followed as its files change), its cache in `cache_dir`.
    pub fn new(config: impl Into<LiveConfig<WebConfig>>, cache_dir: Option<PathBuf>) -> Self {
        let config = config.into();
        let now = config.get();
        let fetcher = Fetcher::new(FetcherSettings::from_config(&now, cache_dir.clone()));
        WebModule {
            config,
            cache_dir,
            fetcher: Arc::new(Mutex::new((now, fetcher))),
            searcher: Searcher::default(),
        }
    }

    /// The config in force and its fetcher, built again if the config changed since the last
    /// call.
    pub fn current(&self) -> (Arc<WebConfig>, Fetcher) {
        let config = self.config.get();
        let mut built = crate::sys::lock(&self.fetcher);
        if !Arc::ptr_eq(&built.0, &config) {
            let settings = FetcherSettings::from_config(&config, self.cache_dir.clone());
            *built = (Arc::clone(&config), Fetcher::new(settings));
        }
        (config, built.1.clone())
    }

    /// The config in force, refusing the call when `enabled` was switched off since the start.
    fn enabled(&self) -> Result<(Arc<WebConfig>, Fetcher), ToolError> {
        let (config, fetcher) = self.current();
        if !config.enabled {
            return Err(ToolError::new(format!(
                "the web tools are switched off (\"enabled\": false in {WEB_CONFIG_FILE}); \
                 set it to true to use them again"
            )));
        }
        Ok((config, fetcher))
    }

    /// One URL.
    pub(crate) async fn fetch_one(
        &self,
        call: &ToolCall,
        url: &str,
    ) -> Result<ToolOutput, ToolError> {
        let (config, fetcher) = self.enabled()?;
        let options = parse_options(&call.args, &config).map_err(ToolError::new)?;
        call.updates
            .send(ToolOutput::text(format!("Fetching {url}…")));
        let fetched = fetcher
            .fetch(url, &options.fetch)
            .await
            .map_err(FetchError::into_tool_error)?;
        Ok(single_output(&fetched, &options))
    }

    /// Many URLs, `concurrency` at a time.
    pub(crate) async fn fetch_many(
        &self,
        call: &ToolCall,
        urls: &[String],
    ) -> Result<ToolOutput, ToolError> {
        let (config, fetcher) = self.enabled()?;
        let options = parse_options(&call.args, &config).map_err(ToolError::new)?;
        let concurrency = match call.args.get("concurrency") {
            None | Some(Value::Null) => config.batch_concurrency,
            Some(value) => value
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| (1..=MAX_BATCH_CONCURRENCY).contains(n))
                .ok_or_else(|| {
                    ToolError::new(format!(
                        "`concurrency` must be an integer from 1 to {MAX_BATCH_CONCURRENCY}"
                    ))
                })?,
        };
        let updates = call.updates.clone();
        let results = batch::fetch_all(
            &fetcher,
            urls,
            &options.fetch,
            concurrency,
            |done, total| {
                updates.send(ToolOutput::text(format!("Fetched {done}/{total}")));
            },
        )
        .await;
        Ok(batch_output(&results, &options))
    }

    /// `web_read`: `urls` (or a list given as `url`, as the original accepted) is a batch, one
    /// `url` a single fetch.
    async fn read(&self, call: &ToolCall) -> Result<ToolOutput, ToolError> {
        match (call.args.get("urls"), call.args.get("url")) {
            (Some(list), _) | (None, Some(list @ Value::Array(_))) => {
                let key = if call.args.get("urls").is_some() {
                    "urls"
                } else {
                    "url"
                };
                let urls = parse_urls(Some(list), key).map_err(ToolError::new)?;
                self.fetch_many(call, &urls).await
            }
            _ => {
                let url = required_string(&call.args, "url")?;
                self.fetch_one(call, &url).await
            }
        }
    }

    /// `web_search`: the providers of the config in force, the one asked for (or the default)
    /// first; keys missing from the config come from the environment.
    pub(crate) async fn search(&self, call: &ToolCall) -> Result<ToolOutput, ToolError> {
        let (config, _) = self.enabled()?;
        let query = required_text(&call.args, "query", "the search query")?;
        let count = parse_count(call.args.get("count")).map_err(ToolError::new)?;
        let first =
            match call.args.get("provider") {
                None | Some(Value::Null) => None,
                Some(value) => Some(value.as_str().and_then(ProviderKind::parse).ok_or_else(
                    || {
                        let names: Vec<&str> = ProviderKind::ALL.iter().map(|k| k.name()).collect();
                        ToolError::new(format!(
                            "`provider` must be one of {}, not {value}",
                            names.join(", ")
                        ))
                    },
                )?),
            };
        let env = |name: &str| std::env::var(name).ok();
        let (providers, unavailable) = config.search.order(first, &env);
        call.updates
            .send(ToolOutput::text(format!("Searching for {query}…")));
        // Cached like the pages: same directory and TTL, cleared with them.
        let cache = (self.cache_dir.as_ref())
            .filter(|_| !config.cache_ttl.is_zero())
            .map(|dir| SearchCache::new(dir.clone(), config.cache_ttl));
        let request = SearchRequest {
            providers: &providers,
            unavailable,
            query: &query,
            count,
            timeout: config.timeout,
        };
        let outcome = self
            .searcher
            .search(request, cache.as_ref())
            .await
            .map_err(SearchError::into_tool_error)?;
        Ok(search_output(&query, &outcome))
    }

    /// Its `/unipi:*` command (it needs no screen): `/unipi:web-cache-clear`.
    pub fn commands(&self) -> Vec<Command> {
        let spec = CommandSpec::new("unipi:web-cache-clear", "Remove every cached web page");
        vec![Command::new(spec, self.clone(), |module, _| async move {
            module.clear_cache().await
        })]
    }

    /// `/unipi:web-cache-clear`.
    pub(crate) async fn clear_cache(&self) -> CommandReply {
        let (_, fetcher) = self.current();
        let Some(cache) = fetcher.cache() else {
            return CommandReply::Notify {
                message: "The web cache is off (cacheTtlSeconds is 0).".to_owned(),
                level: NotifyLevel::Info,
            };
        };
        match cache.clear().await {
            Ok(cleared) => CommandReply::Notify {
                message: format!(
                    "Web cache cleared: {} entries removed ({:.1} KB freed)",
                    cleared.entries,
                    cleared.bytes as f64 / 1024.0
                ),
                level: NotifyLevel::Info,
            },
            Err(err) => CommandReply::Failed {
                message: format!("Clearing the web cache failed: {err:#}"),
            },
        }
    }

    /// Its tab in `/unipi:info`: what the cache holds on disk, for how long, and where.
    pub(crate) async fn info_group(&self) -> InfoGroup {
        let (config, fetcher) = self.current();
        let cache = match fetcher.cache() {
            None => InfoRow::new("Cache", "off (cacheTtlSeconds is 0)"),
            Some(cache) => {
                let held = match super::cache::stored(cache.dir().to_path_buf()).await {
                    Ok(found) => format!(
                        "{} entries · {:.1} KB",
                        found.entries,
                        found.bytes as f64 / 1024.0
                    ),
                    Err(err) => format!("unreadable: {err:#}"),
                };
                InfoRow::new("Cache", held)
                    .detail(format!("kept {} s", config.cache_ttl.as_secs()))
                    .detail(cache.dir().display().to_string())
            }
        };
        InfoGroup {
            id: "web".to_owned(),
            title: "Web".to_owned(),
            rows: vec![cache],
        }
    }
}

impl Module for WebModule {
    fn name(&self) -> &'static str {
        "web"
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let defaults = self.config.get();
        vec![
            fetch_tool(&defaults),
            batch_tool(&defaults),
            read_tool(&defaults),
            search_tool(),
            unipi_read_tool(&defaults),
        ]
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let module = self.clone();
        Box::pin(async move {
            if !call.args.is_object() {
                return Err(ToolError::new(format!(
                    "{} arguments must be an object",
                    call.tool
                )));
            }
            match call.tool.as_str() {
                Self::FETCH => {
                    let url = required_string(&call.args, "url")?;
                    module.fetch_one(&call, &url).await
                }
                Self::BATCH => {
                    let urls = parse_urls(call.args.get("urls"), "urls").map_err(ToolError::new)?;
                    module.fetch_many(&call, &urls).await
                }
                Self::READ => module.read(&call).await,
                Self::SEARCH => module.search(&call).await,
                Self::UNIPI_READ => {
                    let args = unipi_args(&call.args).map_err(ToolError::new)?;
                    module.read(&ToolCall { args, ..call }).await
                }
                other => Err(ToolError::new(format!(
                    "module `web` declares no tool `{other}`"
                ))),
            }
        })
    }
}

fn required_string(args: &Value, key: &str) -> Result<String, ToolError> {
    required_text(args, key, "an http:// or https:// URL")
}

fn required_text(args: &Value, key: &str, what: &str) -> Result<String, ToolError> {
    match args.get(key) {
        Some(Value::String(text)) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
        _ => Err(ToolError::new(format!("`{key}` is required: {what}"))),
    }
}

/// Results a search gives unless the call asks for another number.
pub(crate) const DEFAULT_SEARCH_COUNT: usize = 5;

/// `count`: 1 to [`MAX_COUNT`](super::search::MAX_COUNT) results.
fn parse_count(value: Option<&Value>) -> Result<usize, Refusal> {
    let most = super::search::MAX_COUNT;
    match value {
        None | Some(Value::Null) => Ok(DEFAULT_SEARCH_COUNT),
        Some(value) => value
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| (1..=most).contains(n))
            .ok_or_else(|| {
                format!("`count` must be an integer from 1 to {most}, not {value}").into()
            }),
    }
}

/// What the model reads of a search: a numbered list, and which providers it fell back from.
fn search_output(query: &str, outcome: &SearchOutcome) -> ToolOutput {
    let mut text = format!(
        "Search results for {query:?} ({}, {} results)",
        outcome.provider,
        outcome.results.len()
    );
    if !outcome.fell_back.is_empty() {
        text.push_str(&format!(
            "\nFell back to {}: {}",
            outcome.provider,
            outcome.fell_back.join("; ")
        ));
    }
    if outcome.results.is_empty() {
        text.push_str("\nNo results.");
    }
    for (rank, result) in outcome.results.iter().enumerate() {
        text.push_str(&format!(
            "\n\n{}. {}\n   {}",
            rank + 1,
            result.title,
            result.url
        ));
        if !result.snippet.is_empty() {
            text.push_str(&format!("\n   {}", result.snippet));
        }
    }
    let mut card = Card::new(format!("🔎 {query}"), CardTint::Info).footer(format!(
        "{} results · {}{}",
        outcome.results.len(),
        outcome.provider,
        if outcome.cached { " · cached" } else { "" }
    ));
    if !outcome.fell_back.is_empty() {
        card = card.line(format!("fell back to {}", outcome.provider));
    }
    for result in outcome.results.iter().take(8) {
        card = card.line(format!("{} — {}", result.title, result.url));
    }
    ToolOutput::text(text)
        .with_details(json!({
            "query": query,
            "provider": outcome.provider,
            "fellBack": outcome.fell_back,
            "cached": outcome.cached,
            "results": outcome.results,
        }))
        .with_card(&card)
}

/// A non-empty list of at most [`MAX_BATCH_URLS`] strings under `key`.
pub(crate) fn parse_urls(value: Option<&Value>, key: &str) -> Result<Vec<String>, Refusal> {
    let Some(Value::Array(items)) = value else {
        return Err(format!("`{key}` must be a list of URLs").into());
    };
    if items.is_empty() {
        return Err(format!("`{key}` is empty: give at least one URL").into());
    }
    if items.len() > MAX_BATCH_URLS {
        return Err(format!(
            "`{key}` has {} URLs; at most {MAX_BATCH_URLS} per call",
            items.len()
        )
        .into());
    }
    items
        .iter()
        .enumerate()
        .map(|(index, item)| match item.as_str() {
            Some(url) if !url.trim().is_empty() => Ok(url.trim().to_owned()),
            _ => Err(format!("`{key}[{index}]` must be a URL string").into()),
        })
        .collect()
}

/// The original `multi_web_content_read`'s arguments (an object) in `web_read`'s names:
/// `timeoutMs` becomes `timeoutSeconds`, `removeImages` the opposite `includeImages`,
/// `batchConcurrency` `concurrency`. `source` may only be 0 (the page read directly; the
/// original's Jina Reader, Firecrawl and Perplexity reads are not here). `browser`, `os`,
/// `includeReplies`, `proxy` and `verbose` have no counterpart and are passed over.
pub(crate) fn unipi_args(args: &Value) -> Result<Value, Refusal> {
    let mut ours = args.as_object().cloned().unwrap_or_default();
    let given = |ours: &mut serde_json::Map<String, Value>, key: &str| {
        ours.remove(key).filter(|value| !value.is_null())
    };
    if let Some(value) = given(&mut ours, "timeoutMs") {
        let ms = (value.as_f64())
            .filter(|ms| ms.is_finite() && *ms > 0.0)
            .ok_or_else(|| format!("`timeoutMs` must be a positive number, not {value}"))?;
        ours.insert("timeoutSeconds".to_owned(), json!(ms / 1000.0));
    }
    if let Some(value) = given(&mut ours, "removeImages") {
        let remove = (value.as_bool())
            .ok_or_else(|| format!("`removeImages` must be true or false, not {value}"))?;
        ours.insert("includeImages".to_owned(), json!(!remove));
    }
    if let Some(value) = given(&mut ours, "batchConcurrency") {
        ours.insert("concurrency".to_owned(), value);
    }
    if let Some(value) = given(&mut ours, "source")
        && value.as_f64() != Some(0.0)
    {
        return Err(format!(
            "`source` {value} is not available: only 0 (read the page directly) is; the \
             original's Jina Reader (1), Firecrawl (2) and Perplexity (3) reads are not here. \
             Leave `source` out."
        )
        .into());
    }
    Ok(Value::Object(ours))
}

/// The options shared by every tool, with the config's defaults.
pub(crate) fn parse_options(args: &Value, config: &WebConfig) -> Result<CallOptions, Refusal> {
    let (format, json) = match args.get("format") {
        None | Some(Value::Null) => (Format::default(), false),
        Some(Value::String(name)) if name.trim().eq_ignore_ascii_case("json") => {
            (Format::Markdown, true)
        }
        Some(value) => value
            .as_str()
            .and_then(Format::parse)
            .map(|format| (format, false))
            .ok_or_else(|| format!("`format` must be markdown, text, html or json, not {value}"))?,
    };
    let max_chars = match args.get("maxChars") {
        None | Some(Value::Null) => config.max_chars,
        Some(value) => value
            .as_f64()
            .filter(|n| n.is_finite() && *n >= 1.0)
            .map(|n| n as usize)
            .ok_or_else(|| format!("`maxChars` must be a positive number, not {value}"))?,
    }
    .clamp(MIN_MAX_CHARS, MAX_MAX_CHARS);
    let include_images = match args.get("includeImages") {
        None | Some(Value::Null) => config.include_images,
        Some(value) => value
            .as_bool()
            .ok_or_else(|| format!("`includeImages` must be true or false, not {value}"))?,
    };
    let timeout = match args.get("timeoutSeconds") {
        None | Some(Value::Null) => config.timeout,
        Some(value) => value
            .as_f64()
            .filter(|n| n.is_finite() && *n > 0.0)
            .map(|n| Duration::from_secs_f64(n).min(MAX_TIMEOUT))
            .ok_or_else(|| format!("`timeoutSeconds` must be a positive number, not {value}"))?,
    };
    Ok(CallOptions {
        fetch: FetchOptions {
            format,
            include_images,
            timeout,
        },
        max_chars,
        json,
    })
}

fn single_output(fetched: &Fetched, options: &CallOptions) -> ToolOutput {
    let page = &fetched.page;
    let (mut text, body) = format::page_text(fetched, options.max_chars);
    if options.json {
        text = pretty(&format::page_json(fetched, &body));
    }
    let mut card = Card::new(
        format!("🌐 {}", page.meta.title.as_deref().unwrap_or("Untitled")),
        CardTint::Info,
    )
    .line(page.final_url.clone())
    .line(format!(
        "{} words · {}{}",
        page.word_count(),
        page.mime_type,
        if fetched.cached { " · cached" } else { "" }
    ));
    if body.was_cut() {
        card = card.footer(format!(
            "showing {} of {} characters",
            body.shown, body.total
        ));
    }
    ToolOutput::text(text)
        .with_details(json!({
            "url": page.url,
            "finalUrl": page.final_url,
            "title": page.meta.title,
            "wordCount": page.word_count(),
            "mimeType": page.mime_type,
            "kind": page.kind,
            "extraction": page.extraction,
            "cached": fetched.cached,
            "truncated": body.was_cut(),
            "shownChars": body.shown,
            "totalChars": body.total,
        }))
        .with_card(&card)
}

/// `value` as the `json` format's text.
fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

fn batch_output(results: &[Result<Fetched, FetchError>], options: &CallOptions) -> ToolOutput {
    let succeeded = results.iter().filter(|result| result.is_ok()).count();
    let failed = results.len() - succeeded;
    let (mut text, cuts) = format::batch_view(results, options.max_chars);
    if options.json {
        text = pretty(&format::batch_json(results, &cuts));
    }
    let items: Vec<Value> = results
        .iter()
        .zip(&cuts)
        .map(|(result, cut)| match result {
            Ok(fetched) => json!({
                "url": fetched.page.url,
                "ok": true,
                "finalUrl": fetched.page.final_url,
                "title": fetched.page.meta.title,
                "wordCount": fetched.page.word_count(),
                "cached": fetched.cached,
                "truncated": cut.as_ref().is_some_and(format::Truncated::was_cut),
                "shownChars": cut.as_ref().map(|cut| cut.shown),
                "totalChars": cut.as_ref().map(|cut| cut.total),
            }),
            Err(error) => json!({"url": error.url, "ok": false, "error": error.to_json()}),
        })
        .collect();
    let mut card = Card::new(
        format!("🌐 {} pages", results.len()),
        if failed == 0 {
            CardTint::Info
        } else {
            CardTint::Warning
        },
    )
    .footer(format!("{succeeded} succeeded · {failed} failed"));
    for result in results.iter().take(8) {
        card = card.line(match result {
            Ok(fetched) => format!(
                "✓ {}",
                fetched
                    .page
                    .meta
                    .title
                    .as_deref()
                    .unwrap_or(&fetched.page.url)
            ),
            Err(error) => format!("✗ {} ({})", error.url, error.code.as_str()),
        });
    }
    ToolOutput::text(text)
        .with_details(json!({
            "total": results.len(),
            "succeeded": succeeded,
            "failed": failed,
            "items": items,
        }))
        .with_card(&card)
}

/// `web_fetch`: one URL.
fn fetch_tool(defaults: &WebConfig) -> ToolSpec {
    common_params(
        ToolSpec::new(
            WebModule::FETCH,
            "Web Fetch",
            "Read a web page as clean markdown: the main content without navigation, \
             ads or footers, with title, author, date and site. Follows redirects and \
             meta refreshes; JSON comes pretty-printed, text as is, binary files as a \
             placeholder. A failure names its code and whether retrying helps.",
        )
        .string_param("url", "The http:// or https:// URL", true),
        &single_chars(defaults),
        defaults,
    )
    .prompt_snippet("web_fetch: read a web page (or JSON/text URL) as clean markdown")
    .guideline("Use web_fetch to read a specific URL; use web_fetch_batch for several URLs at once rather than many web_fetch calls.")
    .guideline("When web_fetch fails with retryable: no, do not retry the same URL.")
}

/// `web_fetch_batch`: several URLs, a bounded number in parallel.
fn batch_tool(defaults: &WebConfig) -> ToolSpec {
    let batch_chars = format!(
        "Characters per page, as for one page; what a short page leaves goes to the long ones \
         (default {})",
        defaults.max_chars
    );
    common_params(
        ToolSpec::new(
            WebModule::BATCH,
            "Web Fetch Batch",
            "Read several web pages at once (a bounded number in parallel). Results come \
             in the order of the URLs; a failed URL is reported in its place and does \
             not fail the others.",
        )
        .param("urls", urls_schema(), true)
        .param("concurrency", concurrency_schema(defaults), false),
        &batch_chars,
        defaults,
    )
    .timeout(BATCH_TIMEOUT)
}

/// `web_read`: `web_fetch` or `web_fetch_batch`, by which of `url` and `urls` is given.
fn read_tool(defaults: &WebConfig) -> ToolSpec {
    common_params(
        ToolSpec::new(
            WebModule::READ,
            "Web Read",
            "Same as web_fetch for one URL (`url`) and as web_fetch_batch for a list \
             (`urls`).",
        )
        .string_param("url", "One http:// or https:// URL", false)
        .param("urls", urls_schema(), false)
        .param("concurrency", concurrency_schema(defaults), false),
        &single_chars(defaults),
        defaults,
    )
    .timeout(BATCH_TIMEOUT)
}

/// `web_search`: a query to the configured providers.
fn search_tool() -> ToolSpec {
    let names: Vec<&str> = ProviderKind::ALL.iter().map(|kind| kind.name()).collect();
    ToolSpec::new(
        WebModule::SEARCH,
        "Web Search",
        "Search the web: results with title, URL and a snippet, deduplicated, in the \
         provider's ranking. Read a result with web_fetch. If a provider fails the next \
         configured one is tried, and the result says so.",
    )
    .string_param("query", "What to search for", true)
    .integer_param(
        "count",
        &format!(
            "How many results (default {DEFAULT_SEARCH_COUNT}, at most {})",
            super::search::MAX_COUNT
        ),
        false,
    )
    .param(
        "provider",
        json!({
            "type": "string",
            "enum": names,
            "description": "The provider to ask first (default: the configured one, \
                            DuckDuckGo unless web.json says otherwise)",
        }),
        false,
    )
    .timeout(MAX_TIMEOUT + Duration::from_secs(60))
    .prompt_snippet("web_search: search the web; read results with web_fetch")
    .guideline("Use web_search to find pages, then web_fetch (or web_fetch_batch) to read the ones that matter.")
}

/// `multi_web_content_read`: `web_read` under the original Unipi's name and parameter names,
/// so prompts and skills written for it keep working.
fn unipi_read_tool(defaults: &WebConfig) -> ToolSpec {
    ToolSpec::new(
        WebModule::UNIPI_READ,
        "Multi Web Content Read",
        "The same tool as web_fetch / web_fetch_batch under the original Unipi's name: read a \
         web page (or several at once, in parallel) as clean markdown, without navigation, ads \
         or footers, with title, author, date and site. A failed URL is reported in its place.",
    )
    .param(
        "url",
        json!({
            "description": "One http:// or https:// URL (a string), or a list of them (read \
                            in parallel, results in the same order)",
        }),
        true,
    )
    .param("format", format_schema(), false)
    .integer_param("maxChars", &single_chars(defaults), false)
    .number_param(
        "timeoutMs",
        &format!(
            "Give up after this many milliseconds, redirects included (default {})",
            defaults.timeout.as_millis()
        ),
        false,
    )
    .boolean_param(
        "removeImages",
        &format!(
            "Leave images out (default {}; kept, they are ![alt](url))",
            !defaults.include_images
        ),
        false,
    )
    .param("batchConcurrency", concurrency_schema(defaults), false)
    .integer_param(
        "source",
        "0 (the default): read the page directly, the only source here",
        false,
    )
    .timeout(BATCH_TIMEOUT)
}

/// A batch's time limit: more than one page's.
const BATCH_TIMEOUT: Duration = MAX_TIMEOUT.saturating_mul(4);

/// The parameters every web tool takes (format, characters, images, timeout) and its time limit.
fn common_params(spec: ToolSpec, max_chars_text: &str, defaults: &WebConfig) -> ToolSpec {
    spec.param("format", format_schema(), false)
        .integer_param("maxChars", max_chars_text, false)
        .boolean_param(
            "includeImages",
            &format!(
                "Keep images as ![alt](url) (default {})",
                defaults.include_images
            ),
            false,
        )
        .number_param(
            "timeoutSeconds",
            &format!(
                "Give up after this many seconds, redirects included (default {})",
                defaults.timeout.as_secs()
            ),
            false,
        )
        .timeout(MAX_TIMEOUT + Duration::from_secs(60))
}

/// `maxChars` of a tool that reads one page.
fn single_chars(defaults: &WebConfig) -> String {
    format!(
        "Cut the content to this many characters on a clean boundary (default {})",
        defaults.max_chars
    )
}

/// `format`: how the content is given.
fn format_schema() -> Value {
    json!({
        "type": "string",
        "enum": ["markdown", "text", "html", "json"],
        "description": "How an HTML page's main content is given (default markdown); \
                        JSON is pretty-printed and plain text given as it is. json: the \
                        page as a JSON object (url, finalUrl, title, author, published, \
                        site, language, mimeType, wordCount, content in markdown, \
                        truncated, shownChars, totalChars); a batch as {total, succeeded, \
                        failed, pages}",
    })
}

fn urls_schema() -> Value {
    json!({
        "type": "array",
        "items": {"type": "string"},
        "minItems": 1,
        "maxItems": MAX_BATCH_URLS,
        "description": "The http:// or https:// URLs",
    })
}

fn concurrency_schema(defaults: &WebConfig) -> Value {
    json!({
        "type": "integer",
        "description": format!(
            "Pages fetched at the same time (default {}, at most {MAX_BATCH_CONCURRENCY})",
            defaults.batch_concurrency
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_take_the_configs_defaults_and_check_what_is_given() {
        let config = WebConfig::default();
        let defaults = parse_options(&json!({"url": "x"}), &config).unwrap();
        assert_eq!(defaults.fetch.format, Format::Markdown);
        assert_eq!(defaults.max_chars, config.max_chars);
        assert!(defaults.fetch.include_images);
        let no_images = WebConfig {
            include_images: false,
            ..WebConfig::default()
        };
        let options = parse_options(&json!({}), &no_images).unwrap();
        assert!(!options.fetch.include_images, "the config's default");
        assert_eq!(defaults.fetch.timeout, config.timeout);
        let given = parse_options(
            &json!({"format": "TEXT", "maxChars": 10, "includeImages": false, "timeoutSeconds": 2.5}),
            &config,
        )
        .unwrap();
        assert_eq!(given.fetch.format, Format::Text);
        assert!(!given.json);
        let json = parse_options(&json!({"format": "JSON"}), &config).unwrap();
        assert_eq!((json.fetch.format, json.json), (Format::Markdown, true));
        assert_eq!(
            given.max_chars, MIN_MAX_CHARS,
            "clamped to the smallest useful budget"
        );
        assert!(!given.fetch.include_images);
        assert_eq!(given.fetch.timeout, Duration::from_millis(2500));
        for (args, want) in [
            (
                json!({"format": "pdf"}),
                "`format` must be markdown, text, html or json",
            ),
            (
                json!({"maxChars": "lots"}),
                "`maxChars` must be a positive number",
            ),
            (
                json!({"includeImages": "yes"}),
                "`includeImages` must be true or false",
            ),
            (
                json!({"timeoutSeconds": 0}),
                "`timeoutSeconds` must be a positive number",
            ),
        ] {
            let err = parse_options(&args, &config).unwrap_err();
            assert!(err.starts_with(want), "{args}: {err}");
        }
    }

    #[test]
    fn five_tools_and_one_command_are_declared() {
        let module = WebModule::new(WebConfig::default(), None);
        let tools = module.tools();
        let declared: Vec<(&str, Value)> = tools
            .iter()
            .map(|tool| (tool.name.as_str(), tool.parameters["required"].clone()))
            .collect();
        assert_eq!(
            declared,
            [
                ("web_fetch", json!(["url"])),
                ("web_fetch_batch", json!(["urls"])),
                ("web_read", Value::Null),
                ("web_search", json!(["query"])),
                ("multi_web_content_read", json!(["url"])),
            ]
        );
        for tool in &tools {
            assert_eq!(tool.parameters["type"], "object", "{}", tool.name);
            assert!(
                !tool.parameters.to_string().contains("anyOf"),
                "{}",
                tool.name
            );
            assert!(
                tool.timeout.is_some_and(|timeout| timeout > MAX_TIMEOUT),
                "{}",
                tool.name
            );
        }
        let commands: Vec<String> = module.commands().into_iter().map(|c| c.spec.name).collect();
        assert_eq!(commands, ["unipi:web-cache-clear"]);
    }

    #[test]
    fn url_lists_are_checked_item_by_item() {
        assert_eq!(
            parse_urls(Some(&json!([" http://a/ ", "http://b/"])), "urls").unwrap(),
            ["http://a/", "http://b/"]
        );
        let cases = [
            (json!("http://a/"), "`urls` must be a list of URLs"),
            (json!([]), "`urls` is empty"),
            (json!(["http://a/", 3]), "`urls[1]` must be a URL string"),
        ];
        for (value, want) in cases {
            let err = parse_urls(Some(&value), "urls").unwrap_err();
            assert!(err.starts_with(want), "{value}: {err}");
        }
        let many: Vec<String> = (0..=MAX_BATCH_URLS)
            .map(|i| format!("http://a/{i}"))
            .collect();
        assert!(
            parse_urls(Some(&json!(many)), "urls")
                .unwrap_err()
                .contains("at most 50")
        );
    }

    /// The original's parameter names become ours; `source` other than 0 is refused.
    #[test]
    fn unipi_arguments_become_ours() {
        let ours = unipi_args(&json!({
            "url": ["http://a/"], "timeoutMs": 2500, "removeImages": true,
            "batchConcurrency": 3, "source": 0, "browser": "chrome", "verbose": false,
        }))
        .unwrap();
        assert_eq!(
            ours,
            json!({"url": ["http://a/"], "timeoutSeconds": 2.5, "includeImages": false,
                   "concurrency": 3, "browser": "chrome", "verbose": false})
        );
        let options = parse_options(&ours, &WebConfig::default()).unwrap();
        assert_eq!(options.fetch.timeout, Duration::from_millis(2500));
        assert!(!options.fetch.include_images);
        assert_eq!(
            unipi_args(&json!({"url": "http://a/", "source": null})).unwrap(),
            json!({"url": "http://a/"})
        );
        for (args, want) in [
            (
                json!({"timeoutMs": "soon"}),
                "`timeoutMs` must be a positive number",
            ),
            (
                json!({"removeImages": 1}),
                "`removeImages` must be true or false",
            ),
            (json!({"source": 1}), "`source` 1 is not available"),
        ] {
            let err = unipi_args(&args).unwrap_err();
            assert!(err.starts_with(want), "{args}: {err}");
        }
    }
}

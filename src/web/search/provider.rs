//! The search providers: what each one is asked (method, path, query, headers, where its key
//! goes) and how its answer reads, from each provider's public API documentation:
//!
//! | provider | request | results in |
//! |---|---|---|
//! | `duckduckgo` | `GET https://html.duckduckgo.com/html/?q=…` (no key) | the HTML page's `.result` blocks |
//! | `searxng` | `GET <url>/search?q=…&format=json` (self-hosted, no key) | `results[]`: `title`, `url`, `content` |
//! | `brave` | `GET https://api.search.brave.com/res/v1/web/search?q=…&count=…`, `X-Subscription-Token: <key>` | `web.results[]`: `title`, `url`, `description` |
//! | `tavily` | `POST https://api.tavily.com/search` `{"query", "max_results"}`, `Authorization: Bearer <key>` | `results[]`: `title`, `url`, `content` |
//! | `jina` | `GET https://s.jina.ai/?q=…`, `Authorization: Bearer <key>`, `Accept: application/json` | `data[]`: `title`, `url`, `description` |
//! | `serpapi` | `GET https://serpapi.com/search.json?engine=google&q=…&num=…&api_key=<key>` | `organic_results[]`: `title`, `link`, `snippet` |
//!
//! Every provider's `url` can be set (self-hosting, a proxy, a test's loopback server); for
//! SearXNG it is the instance's address, for the others the endpoint itself.

use std::fmt;
use std::time::Duration;

use anyhow::Context as _;
use reqwest::{Url, header};
use serde_json::{Value, json};

use super::SearchResult;
use super::duckduckgo::{self, plain};
use super::error::{SearchError, SearchErrorCode};
use crate::web::names::WEB_CONFIG_FILE;

/// The most results a call may ask for (the keyed APIs' own per-request limit is 20).
pub(crate) const MAX_COUNT: usize = 20;

/// Which search service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ProviderKind {
    DuckDuckGo,
    Searxng,
    Brave,
    Tavily,
    Jina,
    SerpApi,
}

impl ProviderKind {
    /// Every provider, in the order they are tried after the default.
    pub(crate) const ALL: [ProviderKind; 6] = [
        ProviderKind::DuckDuckGo,
        ProviderKind::Searxng,
        ProviderKind::Brave,
        ProviderKind::Tavily,
        ProviderKind::Jina,
        ProviderKind::SerpApi,
    ];

    /// Its name in `web.json` and in the tool's `provider`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ProviderKind::DuckDuckGo => "duckduckgo",
            ProviderKind::Searxng => "searxng",
            ProviderKind::Brave => "brave",
            ProviderKind::Tavily => "tavily",
            ProviderKind::Jina => "jina",
            ProviderKind::SerpApi => "serpapi",
        }
    }

    /// Its name as people write it, for the settings overlay.
    pub(crate) fn label(self) -> &'static str {
        match self {
            ProviderKind::DuckDuckGo => "DuckDuckGo",
            ProviderKind::Searxng => "SearXNG",
            ProviderKind::Brave => "Brave",
            ProviderKind::Tavily => "Tavily",
            ProviderKind::Jina => "Jina",
            ProviderKind::SerpApi => "SerpAPI",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<ProviderKind> {
        let name = name.trim().to_ascii_lowercase();
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// Where it answers unless `url` says otherwise (SearXNG is self-hosted: none).
    pub(crate) fn default_url(self) -> Option<&'static str> {
        match self {
            ProviderKind::DuckDuckGo => Some("https://html.duckduckgo.com/html/"),
            ProviderKind::Searxng => None,
            ProviderKind::Brave => Some("https://api.search.brave.com/res/v1/web/search"),
            ProviderKind::Tavily => Some("https://api.tavily.com/search"),
            ProviderKind::Jina => Some("https://s.jina.ai/"),
            ProviderKind::SerpApi => Some("https://serpapi.com/search.json"),
        }
    }

    /// The environment variable its key is read from when `web.json` gives none (keyed
    /// providers only).
    pub(crate) fn key_env(self) -> Option<&'static str> {
        match self {
            ProviderKind::DuckDuckGo | ProviderKind::Searxng => None,
            ProviderKind::Brave => Some("BRAVE_API_KEY"),
            ProviderKind::Tavily => Some("TAVILY_API_KEY"),
            ProviderKind::Jina => Some("JINA_API_KEY"),
            ProviderKind::SerpApi => Some("SERPAPI_API_KEY"),
        }
    }
}

/// A provider ready to search: where it answers and its key.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Provider {
    pub kind: ProviderKind,
    pub url: String,
    pub key: Option<String>,
}

impl fmt::Debug for Provider {
    /// The key masked: a provider may be logged.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Provider")
            .field("kind", &self.kind)
            .field("url", &self.url)
            .field("key", &self.key.as_deref().map(mask))
            .finish()
    }
}

/// A key as it may be shown: its last four characters at most.
pub(crate) fn mask(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() <= 8 {
        return "••••".to_owned();
    }
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("••••{tail}")
}

impl Provider {
    pub(crate) fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// Up to `count` results for `query`, in the provider's order.
    pub(crate) async fn search(
        &self,
        client: &reqwest::Client,
        query: &str,
        count: usize,
        timeout: Duration,
    ) -> Result<Vec<SearchResult>, SearchError> {
        let name = self.name();
        let sent = self.request(client, query, count)?.timeout(timeout).send();
        let response = sent.await.map_err(|err| self.network_error(&err))?;
        let status = response.status();
        if !status.is_success() {
            return Err(SearchError::http_status(name, status.as_u16()));
        }
        let body = response
            .text()
            .await
            .map_err(|err| self.network_error(&err))?;
        let mut results = self.parse(&body).map_err(|why| {
            SearchError::new(
                SearchErrorCode::BadResponse,
                Some(name),
                false,
                format!("{name} answered in an unexpected shape: {why:#}"),
            )
        })?;
        results.retain(|result| !result.url.is_empty());
        results.truncate(count);
        Ok(results)
    }

    /// A failed request, without its URL (it may carry the key).
    fn network_error(&self, err: &reqwest::Error) -> SearchError {
        let name = self.name();
        if err.is_timeout() {
            return SearchError::new(
                SearchErrorCode::Timeout,
                Some(name),
                true,
                format!("{name} did not answer in time"),
            );
        }
        let mut cause = String::new();
        let mut source = std::error::Error::source(err);
        while let Some(inner) = source {
            cause = inner.to_string();
            source = inner.source();
        }
        let detail = if cause.is_empty() {
            String::new()
        } else {
            format!(" ({cause})")
        };
        SearchError::new(
            SearchErrorCode::NetworkError,
            Some(name),
            true,
            format!("{name} could not be reached{detail}"),
        )
    }

    /// The request for `query`, asking for `count` results, the key where the provider wants it.
    pub(crate) fn request(
        &self,
        client: &reqwest::Client,
        query: &str,
        count: usize,
    ) -> Result<reqwest::RequestBuilder, SearchError> {
        let name = self.name();
        let key = self.key.as_deref().unwrap_or_default();
        let count = count.clamp(1, MAX_COUNT);
        let mut url = Url::parse(self.url.trim()).map_err(|_| {
            SearchError::new(
                SearchErrorCode::NotConfigured,
                Some(name),
                false,
                format!("the url of {name} in {WEB_CONFIG_FILE} is not an http:// or https:// URL"),
            )
        })?;
        if self.kind == ProviderKind::Searxng && !url.path().ends_with("/search") {
            let path = format!("{}/search", url.path().trim_end_matches('/'));
            url.set_path(&path);
        }
        let count_text = count.to_string();
        let pairs: &[(&str, &str)] = match self.kind {
            ProviderKind::DuckDuckGo | ProviderKind::Jina => &[("q", query)],
            ProviderKind::Searxng => &[("q", query), ("format", "json")],
            ProviderKind::Brave => &[("q", query), ("count", &count_text)],
            ProviderKind::Tavily => &[],
            ProviderKind::SerpApi => &[
                ("engine", "google"),
                ("q", query),
                ("num", &count_text),
                ("api_key", key),
            ],
        };
        if !pairs.is_empty() {
            url.query_pairs_mut().extend_pairs(pairs);
        }
        Ok(match self.kind {
            ProviderKind::DuckDuckGo => client.get(url).header(header::ACCEPT, "text/html"),
            ProviderKind::Searxng => client.get(url).header(header::ACCEPT, "application/json"),
            ProviderKind::Brave => client
                .get(url)
                .header(header::ACCEPT, "application/json")
                .header("X-Subscription-Token", key),
            ProviderKind::Tavily => client
                .post(url)
                .bearer_auth(key)
                .json(&json!({"query": query, "max_results": count})),
            ProviderKind::Jina => client
                .get(url)
                .bearer_auth(key)
                .header(header::ACCEPT, "application/json")
                .header("X-Respond-With", "no-content"),
            ProviderKind::SerpApi => client.get(url),
        })
    }

    /// The results in a success answer's `body`.
    pub(crate) fn parse(&self, body: &str) -> anyhow::Result<Vec<SearchResult>> {
        if self.kind == ProviderKind::DuckDuckGo {
            return Ok(duckduckgo::results(body, self.name()));
        }
        let json: Value = serde_json::from_str(body).context("not JSON")?;
        // Where the list is, and the keys of its title, address and snippet.
        let (list, url_key, snippet_key) = match self.kind {
            ProviderKind::Searxng => (json.get("results"), "url", "content"),
            ProviderKind::Brave => (
                // No `web` at all: nothing found (Brave leaves the section out).
                Some(json.pointer("/web/results").unwrap_or(&Value::Null)),
                "url",
                "description",
            ),
            ProviderKind::Tavily => (json.get("results"), "url", "content"),
            ProviderKind::Jina => (json.get("data"), "url", "description"),
            ProviderKind::SerpApi => (
                Some(json.get("organic_results").unwrap_or(&Value::Null)),
                "link",
                "snippet",
            ),
            ProviderKind::DuckDuckGo => unreachable!("answered above"),
        };
        let items = match list {
            Some(Value::Array(items)) => items.as_slice(),
            Some(Value::Null) => &[],
            _ => anyhow::bail!("no list of results"),
        };
        let text = |item: &Value, key: &str| {
            item.get(key)
                .and_then(Value::as_str)
                .map(plain)
                .unwrap_or_default()
        };
        Ok(items
            .iter()
            .map(|item| SearchResult {
                title: text(item, "title"),
                url: text(item, url_key),
                snippet: text(item, snippet_key),
                provider: self.name().to_owned(),
            })
            .collect())
    }
}

//! `web_search`: finding pages, where the fetch reads them. A query goes to the configured
//! providers ([`provider`]: DuckDuckGo's HTML endpoint without a key by default; SearXNG, Brave,
//! Tavily, Jina and SerpAPI as `web.json` or their environment variables configure them), and
//! comes back as [`SearchResult`]s: title, URL, snippet, provider. Failures are typed
//! ([`SearchError`]: code, provider, retryable). Results are not checked against the
//! private-network guard (the provider's URL is the user's choice); every page fetched
//! afterwards is.

mod cache;
mod config;
mod duckduckgo;
mod error;
mod provider;
mod searcher;
#[cfg(test)]
pub(crate) mod tests;

use serde::{Deserialize, Serialize};

pub(crate) use cache::SearchCache;
pub(crate) use config::{SearchConfig, unipi_provider};
pub(crate) use error::SearchError;
pub(crate) use provider::{MAX_COUNT, ProviderKind};
pub(crate) use searcher::{SearchOutcome, SearchRequest, Searcher};

/// One result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SearchResult {
    pub title: String,
    pub url: String,
    pub snippet: String,
    /// The provider that found it.
    pub provider: String,
}

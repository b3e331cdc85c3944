//! One search, start to results: from the cache when it holds it, else the providers in order,
//! each tried until one answers; what the ones before it said is kept, so the result says it
//! fell back and why. Results are
//! deduplicated by address (the provider's ranking kept, the first of two equal addresses
//! wins) and cut to the count asked for.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;

use super::SearchResult;
use super::cache::{Cached, SearchCache};
use super::error::{SearchError, SearchErrorCode};
use super::provider::Provider;
use crate::http::LazyClient;
use crate::web::names::BROWSER_USER_AGENT;
use crate::web::names::WEB_CONFIG_FILE;

/// Runs searches; cheap to clone (one HTTP client, built at the first search).
#[derive(Clone, Default)]
pub(crate) struct Searcher {
    client: Arc<LazyClient>,
}

/// One search as asked.
pub(crate) struct SearchRequest<'a> {
    /// The providers, in the order they are tried.
    pub providers: &'a [Provider],
    /// Why the provider asked for first cannot run, when it cannot.
    pub unavailable: Option<String>,
    pub query: &'a str,
    /// Results wanted, at most.
    pub count: usize,
    /// Each provider's time limit.
    pub timeout: Duration,
}

/// What a search found, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SearchOutcome {
    pub results: Vec<SearchResult>,
    /// The provider that answered.
    pub provider: String,
    /// Why the providers before it gave nothing (the first one asked for that could not run
    /// included), in order.
    pub fell_back: Vec<String>,
    /// Served from the cache (nothing was asked).
    pub cached: bool,
}

impl Searcher {
    /// The client: no private-network guard (the providers' addresses are the user's choice),
    /// no system proxy, a browser's user agent (DuckDuckGo's HTML endpoint wants one).
    async fn client(&self) -> Result<&reqwest::Client, SearchError> {
        self.client
            .get(|| {
                reqwest::Client::builder()
                    .no_proxy()
                    .user_agent(BROWSER_USER_AGENT)
                    .build()
                    .map_err(|err| format!("cannot set up HTTP for web searches: {err}"))
            })
            .await
            .map_err(|message| {
                SearchError::new(SearchErrorCode::NetworkError, None, false, message)
            })
    }

    /// Up to `count` results for `query` from the first of `providers` that answers, or from
    /// `cache` when it holds this search.
    pub(crate) async fn search(
        &self,
        request: SearchRequest<'_>,
        cache: Option<&SearchCache>,
    ) -> Result<SearchOutcome, SearchError> {
        let SearchRequest {
            providers,
            query,
            count,
            ..
        } = request;
        if let Some(cache) = cache
            && let Some(found) = cache.get(query, count, providers).await
        {
            return Ok(SearchOutcome {
                results: found.results,
                provider: found.provider,
                fell_back: request.unavailable.into_iter().collect(),
                cached: true,
            });
        }
        let outcome = self.search_uncached(request).await?;
        if let Some(cache) = cache {
            let found = Cached {
                results: outcome.results.clone(),
                provider: outcome.provider.clone(),
            };
            cache.put(query, count, providers, found).await;
        }
        Ok(outcome)
    }

    async fn search_uncached(
        &self,
        request: SearchRequest<'_>,
    ) -> Result<SearchOutcome, SearchError> {
        let SearchRequest {
            providers,
            unavailable,
            query,
            count,
            timeout,
        } = request;
        let mut fell_back: Vec<String> = unavailable.iter().cloned().collect();
        if providers.is_empty() {
            let why = unavailable
                .map(|why| format!(": {why}"))
                .unwrap_or_default();
            return Err(SearchError::new(
                SearchErrorCode::NotConfigured,
                None,
                false,
                format!(
                    "no search provider can run{why}. DuckDuckGo needs nothing unless it is \
                     switched off; configure another under \"search\" in {WEB_CONFIG_FILE} \
                     (e.g. {{\"search\": {{\"providers\": {{\"brave\": {{\"apiKey\": \"…\"}}}}}}}}) \
                     or set BRAVE_API_KEY, TAVILY_API_KEY, JINA_API_KEY or SERPAPI_API_KEY"
                ),
            ));
        }
        let client = self.client().await?;
        let mut last = None;
        for provider in providers {
            match provider.search(client, query, count, timeout).await {
                Ok(results) => {
                    return Ok(SearchOutcome {
                        results: deduplicated(results, count),
                        provider: provider.name().to_owned(),
                        fell_back,
                        cached: false,
                    });
                }
                Err(err) => {
                    tracing::info!("web search: {}", err.describe());
                    fell_back.push(err.message.clone());
                    last = Some(err);
                }
            }
        }
        // Every provider failed: the last one's kind, retryable if any of them was.
        let Some(mut err) = last else {
            unreachable!("providers is not empty, so one was tried");
        };
        if fell_back.len() > 1 {
            err.message = format!("every search provider failed: {}", fell_back.join("; "));
        }
        Err(err)
    }
}

/// `results` in their order without a second copy of an address, at most `count`.
pub(crate) fn deduplicated(results: Vec<SearchResult>, count: usize) -> Vec<SearchResult> {
    let mut seen = HashSet::new();
    results
        .into_iter()
        .filter(|result| seen.insert(same_page(&result.url)))
        .take(count)
        .collect()
}

/// An address as two results of one page share it: no fragment, no trailing slash, the host in
/// lower case, http and https alike.
fn same_page(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut parsed) => {
            parsed.set_fragment(None);
            let host = parsed.host_str().unwrap_or_default().to_owned();
            let path = parsed.path().trim_end_matches('/').to_owned();
            let query = parsed.query().map(|q| format!("?{q}")).unwrap_or_default();
            format!("{host}{path}{query}")
        }
        Err(_) => url.to_owned(),
    }
}

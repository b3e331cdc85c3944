//! Each provider against a loopback stand-in answering in its documented shape: the exact
//! request (method, path, query, headers, where the key goes) and what is read from the answer.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, Method, StatusCode, Uri};
use serde_json::{Value, json};

use super::error::SearchErrorCode;
use super::provider::{Provider, mask};
use super::*;

/// What the stand-in was asked.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    method: Method,
    path: String,
    query: BTreeMap<String, String>,
    headers: HeaderMap,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }
}

/// A server on loopback answering every request with `status`, `content_type` and `body`; its
/// address and what it was asked.
pub(crate) async fn stand_in(
    status: u16,
    content_type: &'static str,
    body: String,
) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let handler = move |method: Method, uri: Uri, headers: HeaderMap, sent: String| {
        let log = Arc::clone(&log);
        let body = body.clone();
        async move {
            let query = reqwest::Url::parse(&format!("http://x/?{}", uri.query().unwrap_or("")))
                .unwrap()
                .query_pairs()
                .into_owned()
                .collect();
            log.lock().unwrap().push(Seen {
                method,
                path: uri.path().to_owned(),
                query,
                headers,
                body: sent,
            });
            (
                StatusCode::from_u16(status).unwrap(),
                [(axum::http::header::CONTENT_TYPE, content_type)],
                body,
            )
        }
    };
    let app = axum::Router::new().fallback(handler);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, seen)
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

fn provider(kind: ProviderKind, url: String, key: Option<&str>) -> Provider {
    Provider {
        kind,
        url,
        key: key.map(str::to_owned),
    }
}

/// `kind` asked for "rust async" (5 results) at a stand-in answering `body` under `path`: the
/// results, and the one request it saw.
async fn ask(
    kind: ProviderKind,
    path: &str,
    key: Option<&str>,
    content_type: &'static str,
    body: Value,
) -> (Vec<SearchResult>, Seen) {
    let body = match body {
        Value::String(text) => text,
        other => other.to_string(),
    };
    let (base, seen) = stand_in(200, content_type, body).await;
    let provider = provider(kind, format!("{base}{path}"), key);
    let results = provider
        .search(&client(), "rust async", 5, Duration::from_secs(5))
        .await
        .unwrap();
    let mut seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    (results, seen.remove(0))
}

fn query(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect()
}

fn found(results: &[SearchResult]) -> Vec<(&str, &str, &str, &str)> {
    results
        .iter()
        .map(|r| {
            (
                r.title.as_str(),
                r.url.as_str(),
                r.snippet.as_str(),
                r.provider.as_str(),
            )
        })
        .collect()
}

/// DuckDuckGo's HTML results page, as its HTML endpoint serves it (trimmed): a redirect link, a
/// direct one, an ad.
const DDG_PAGE: &str = r#"<!DOCTYPE html><html><body><div id="links" class="results">
<div class="result results_links results_links_deep web-result">
  <div class="links_main links_deep result__body">
    <h2 class="result__title"><a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Ftokio.rs%2Ftokio%2Ftutorial&amp;rut=abc">Tutorial | <b>Tokio</b></a></h2>
    <a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Ftokio.rs%2Ftokio%2Ftutorial">Tokio is an <b>asynchronous</b> runtime for the <b>Rust</b> &amp; friends.</a>
  </div>
</div>
<div class="result results_links results_links_deep result--ad">
  <h2 class="result__title"><a class="result__a" href="https://ads.example/buy">Buy async now</a></h2>
  <a class="result__snippet">An ad.</a>
</div>
<div class="result results_links results_links_deep web-result">
  <h2 class="result__title"><a class="result__a" href="https://rust-lang.github.io/async-book/">Asynchronous Programming in Rust</a></h2>
  <div class="result__snippet">The async book.</div>
</div>
</div></body></html>"#;

#[tokio::test]
async fn duckduckgo_html_is_read_from_its_result_blocks_without_a_key() {
    let (results, seen) = ask(
        ProviderKind::DuckDuckGo,
        "/html/",
        None,
        "text/html; charset=UTF-8",
        Value::String(DDG_PAGE.to_owned()),
    )
    .await;
    assert_eq!(seen.method, Method::GET);
    assert_eq!(seen.path, "/html/");
    assert_eq!(seen.query, query(&[("q", "rust async")]));
    assert_eq!(seen.header("authorization"), None);
    assert_eq!(
        found(&results),
        [
            (
                "Tutorial | Tokio",
                "https://tokio.rs/tokio/tutorial",
                "Tokio is an asynchronous runtime for the Rust & friends.",
                "duckduckgo"
            ),
            (
                "Asynchronous Programming in Rust",
                "https://rust-lang.github.io/async-book/",
                "The async book.",
                "duckduckgo"
            ),
        ]
    );
}

#[tokio::test]
async fn searxng_is_asked_for_json_at_its_search_path() {
    let answer = json!({
        "query": "rust async",
        "number_of_results": 0,
        "results": [
            {"url": "https://tokio.rs/", "title": "Tokio", "content": "An async runtime.",
             "engine": "duckduckgo", "engines": ["duckduckgo", "brave"], "score": 2.5,
             "category": "general", "parsed_url": ["https", "tokio.rs", "/", "", "", ""]},
            {"url": "https://docs.rs/futures", "title": "futures", "content": "",
             "engine": "bing", "score": 1.0}
        ],
        "answers": [], "corrections": [], "infoboxes": [], "suggestions": [],
        "unresponsive_engines": []
    });
    // The instance's address, as `web.json` gives it (with or without a slash).
    let (results, seen) = ask(ProviderKind::Searxng, "/", None, "application/json", answer).await;
    assert_eq!(seen.method, Method::GET);
    assert_eq!(seen.path, "/search");
    assert_eq!(
        seen.query,
        query(&[("q", "rust async"), ("format", "json")])
    );
    assert_eq!(
        found(&results),
        [
            ("Tokio", "https://tokio.rs/", "An async runtime.", "searxng"),
            ("futures", "https://docs.rs/futures", "", "searxng"),
        ]
    );
}

#[tokio::test]
async fn brave_gets_its_key_in_the_subscription_header() {
    let answer = json!({
        "type": "search",
        "query": {"original": "rust async", "more_results_available": true},
        "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": false}]},
        "web": {
            "type": "search",
            "results": [
                {"type": "search_result", "title": "Tokio - An asynchronous <strong>Rust</strong> runtime",
                 "url": "https://tokio.rs/", "is_source_local": false, "is_source_both": false,
                 "description": "Tokio is an <strong>asynchronous</strong> runtime for the <strong>Rust</strong> programming language.",
                 "language": "en", "family_friendly": true,
                 "profile": {"name": "Tokio", "url": "https://tokio.rs/", "long_name": "tokio.rs"},
                 "meta_url": {"scheme": "https", "netloc": "tokio.rs", "hostname": "tokio.rs", "path": ""}}
            ],
            "family_friendly": true
        }
    });
    let (results, seen) = ask(
        ProviderKind::Brave,
        "/res/v1/web/search",
        Some("BSA-secret-key"),
        "application/json",
        answer,
    )
    .await;
    assert_eq!(seen.method, Method::GET);
    assert_eq!(seen.path, "/res/v1/web/search");
    assert_eq!(seen.query, query(&[("q", "rust async"), ("count", "5")]));
    assert_eq!(seen.header("x-subscription-token"), Some("BSA-secret-key"));
    assert_eq!(seen.header("accept"), Some("application/json"));
    assert_eq!(seen.header("authorization"), None);
    assert_eq!(
        found(&results),
        [(
            "Tokio - An asynchronous Rust runtime",
            "https://tokio.rs/",
            "Tokio is an asynchronous runtime for the Rust programming language.",
            "brave"
        )]
    );
}

#[tokio::test]
async fn tavily_gets_a_json_post_with_a_bearer_key() {
    let answer = json!({
        "query": "rust async",
        "follow_up_questions": null,
        "answer": null,
        "images": [],
        "results": [
            {"title": "Async in depth | Tokio", "url": "https://tokio.rs/tokio/tutorial/async",
             "content": "Futures are lazy.", "score": 0.93, "raw_content": null},
            {"title": "async-std", "url": "https://async.rs/", "content": "Async version of std.",
             "score": 0.71, "raw_content": null}
        ],
        "response_time": 1.09
    });
    let (results, seen) = ask(
        ProviderKind::Tavily,
        "/search",
        Some("tvly-secret"),
        "application/json",
        answer,
    )
    .await;
    assert_eq!(seen.method, Method::POST);
    assert_eq!(seen.path, "/search");
    assert!(seen.query.is_empty(), "{:?}", seen.query);
    assert_eq!(seen.header("authorization"), Some("Bearer tvly-secret"));
    assert_eq!(seen.header("content-type"), Some("application/json"));
    assert_eq!(
        serde_json::from_str::<Value>(&seen.body).unwrap(),
        json!({"query": "rust async", "max_results": 5})
    );
    assert_eq!(
        found(&results),
        [
            (
                "Async in depth | Tokio",
                "https://tokio.rs/tokio/tutorial/async",
                "Futures are lazy.",
                "tavily"
            ),
            (
                "async-std",
                "https://async.rs/",
                "Async version of std.",
                "tavily"
            ),
        ]
    );
}

#[tokio::test]
async fn jina_is_asked_for_json_without_page_content() {
    let answer = json!({
        "code": 200,
        "status": 20000,
        "data": [
            {"title": "Tokio", "url": "https://tokio.rs/", "description": "An async runtime.",
             "content": "", "usage": {"tokens": 1000}}
        ],
        "meta": {"usage": {"tokens": 10000}}
    });
    let (results, seen) = ask(
        ProviderKind::Jina,
        "/",
        Some("jina_secret"),
        "application/json",
        answer,
    )
    .await;
    assert_eq!(seen.method, Method::GET);
    assert_eq!(seen.path, "/");
    assert_eq!(seen.query, query(&[("q", "rust async")]));
    assert_eq!(seen.header("authorization"), Some("Bearer jina_secret"));
    assert_eq!(seen.header("accept"), Some("application/json"));
    assert_eq!(seen.header("x-respond-with"), Some("no-content"));
    assert_eq!(
        found(&results),
        [("Tokio", "https://tokio.rs/", "An async runtime.", "jina")]
    );
}

#[tokio::test]
async fn serpapi_gets_its_key_as_the_api_key_parameter() {
    let answer = json!({
        "search_metadata": {"id": "1", "status": "Success"},
        "search_parameters": {"engine": "google", "q": "rust async"},
        "search_information": {"total_results": 2},
        "organic_results": [
            {"position": 1, "title": "Tokio", "link": "https://tokio.rs/",
             "displayed_link": "https://tokio.rs", "snippet": "An async runtime.",
             "snippet_highlighted_words": ["async"], "source": "tokio.rs"},
            {"position": 2, "title": "The async book", "link": "https://rust-lang.github.io/async-book/",
             "snippet": "Asynchronous programming in Rust."}
        ]
    });
    let (results, seen) = ask(
        ProviderKind::SerpApi,
        "/search.json",
        Some("serp-secret"),
        "application/json",
        answer,
    )
    .await;
    assert_eq!(seen.method, Method::GET);
    assert_eq!(seen.path, "/search.json");
    assert_eq!(
        seen.query,
        query(&[
            ("engine", "google"),
            ("q", "rust async"),
            ("num", "5"),
            ("api_key", "serp-secret"),
        ])
    );
    assert_eq!(seen.header("authorization"), None);
    assert_eq!(
        found(&results),
        [
            ("Tokio", "https://tokio.rs/", "An async runtime.", "serpapi"),
            (
                "The async book",
                "https://rust-lang.github.io/async-book/",
                "Asynchronous programming in Rust.",
                "serpapi"
            ),
        ]
    );
}

#[tokio::test]
async fn failures_are_typed_name_the_provider_and_never_show_the_key() {
    for (status, code, retryable) in [
        (401, SearchErrorCode::Unauthorized, false),
        (429, SearchErrorCode::RateLimited, true),
        (503, SearchErrorCode::ServerError, true),
    ] {
        let (base, _) = stand_in(status, "application/json", "{}".to_owned()).await;
        let brave = provider(ProviderKind::Brave, base, Some("BSA-secret-key"));
        let err = brave
            .search(&client(), "q", 3, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert_eq!(
            (err.code, err.retryable, err.provider.as_deref()),
            (code, retryable, Some("brave")),
            "{status}"
        );
    }
    let (base, _) = stand_in(200, "application/json", "<html>".to_owned()).await;
    let tavily = provider(ProviderKind::Tavily, base, Some("tvly-secret"));
    let err = tavily
        .search(&client(), "q", 3, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert_eq!(err.code, SearchErrorCode::BadResponse);
    assert!(
        err.message
            .starts_with("tavily answered in an unexpected shape")
    );

    // Nobody listens: the error names the provider and not the URL, which holds the key.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/search.json", closed.local_addr().unwrap());
    drop(closed);
    let serpapi = provider(ProviderKind::SerpApi, url, Some("serp-secret"));
    let err = serpapi
        .search(&client(), "q", 3, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert_eq!(err.code, SearchErrorCode::NetworkError);
    assert!(
        err.message.starts_with("serpapi could not be reached"),
        "{}",
        err.message
    );
    assert!(
        !err.describe().contains("serp-secret"),
        "{}",
        err.describe()
    );
    assert!(!format!("{serpapi:?}").contains("serp-secret"));
}

#[test]
fn keys_are_masked_to_their_last_four_characters() {
    assert_eq!(mask("BSA-0123456789abcdef"), "••••cdef");
    assert_eq!(mask("short"), "••••");
}

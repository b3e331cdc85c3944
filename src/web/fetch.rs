//! One fetch, start to content: the URL is checked (http/https only, and against the
//! private-network guard), requested with browser-like headers, redirects — HTTP 3xx and HTML
//! meta refresh alike, relative targets resolved — are followed up to [`MAX_REDIRECTS`] with
//! every hop checked again, the body is read (decompressed by the client; at most
//! [`MAX_BODY_BYTES`]; a binary body not at all), decoded to text and turned into a [`Page`]. Every
//! failure is a typed [`FetchError`]. The whole fetch, redirects included, runs under one
//! timeout. Successful pages go through the [`Cache`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::{self, HeaderMap, HeaderValue};
use reqwest::{Response, Url};

use super::cache::Cache;
use super::charset;
use super::config::WebConfig;
use super::content::{self, BodyKind};
use super::error::{ErrorCode, FetchError, Phase};
use super::extract::{self, HtmlOutcome};
use super::guard::{self, AddressPolicy, GuardedResolver};
use super::page::{ContentKind, FetchOptions, Format, Page, PageMeta};
use crate::http::LazyClient;

/// Redirects followed, HTTP and meta refresh together (the original's limit).
pub(crate) const MAX_REDIRECTS: usize = 5;
/// The largest body read; a larger one is refused rather than cut mid-document.
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
pub(crate) use super::names::BROWSER_USER_AGENT;
/// Connecting gets at most this long of the fetch's timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How the fetcher is set up.
#[derive(Debug, Clone)]
pub struct FetcherSettings {
    pub policy: AddressPolicy,
    pub user_agent: Option<String>,
    /// `None`: no cache.
    pub cache: Option<Cache>,
}

impl FetcherSettings {
    /// The settings `config` asks for, with the cache (unless its TTL is zero) in `cache_dir`.
    pub fn from_config(config: &WebConfig, cache_dir: Option<PathBuf>) -> Self {
        FetcherSettings {
            policy: AddressPolicy {
                remedy: config.private_network_remedy(),
                ..AddressPolicy::new(config.allow_private_network)
            },
            user_agent: config.user_agent.clone(),
            cache: cache_dir
                .filter(|_| !config.cache_ttl.is_zero())
                .map(|dir| {
                    Cache::new(dir, config.cache_ttl).reaching_private(config.allow_private_network)
                }),
        }
    }
}

/// Fetches pages; cheap to clone (one HTTP client, one connection pool).
#[derive(Clone)]
pub struct Fetcher {
    /// Built at the first request ([`Fetcher::client`]).
    client: Arc<LazyClient>,
    user_agent: Arc<str>,
    policy: Arc<AddressPolicy>,
    cache: Option<Cache>,
}

/// A fetched page and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    pub page: Page,
    /// Served from the cache.
    pub cached: bool,
}

impl Fetcher {
    pub fn new(settings: FetcherSettings) -> Fetcher {
        Fetcher {
            client: Arc::default(),
            user_agent: settings
                .user_agent
                .unwrap_or_else(|| BROWSER_USER_AGENT.to_owned())
                .into(),
            policy: Arc::new(settings.policy),
            cache: settings.cache,
        }
    }

    /// The client, built now if this is the first request.
    async fn client(&self, asked: &str) -> Result<&reqwest::Client, FetchError> {
        let policy = Arc::clone(&self.policy);
        let user_agent = Arc::clone(&self.user_agent);
        self.client
            .get(move || build_client(policy, &user_agent))
            .await
            .map_err(|message| {
                FetchError::new(
                    ErrorCode::NetworkError,
                    Phase::Connecting,
                    false,
                    asked,
                    message,
                )
            })
    }

    pub fn cache(&self) -> Option<&Cache> {
        self.cache.as_ref()
    }

    /// `url` as a page, from the cache when a fresh copy is there.
    pub async fn fetch(&self, url: &str, options: &FetchOptions) -> Result<Fetched, FetchError> {
        let url = url.trim();
        if let Some(cache) = &self.cache {
            if let Some(page) = cache.get(url, options).await {
                return Ok(Fetched { page, cached: true });
            }
        }
        let page = self.fetch_uncached(url, options).await?;
        if let Some(cache) = &self.cache {
            cache.put(url, options, &page).await;
        }
        Ok(Fetched {
            page,
            cached: false,
        })
    }

    /// `url` as a page, from the network.
    pub(crate) async fn fetch_uncached(
        &self,
        asked: &str,
        options: &FetchOptions,
    ) -> Result<Page, FetchError> {
        let mut url = parse_url(asked)?;
        let deadline = Instant::now() + options.timeout;
        let mut redirects = 0;
        loop {
            guard::check_host(&self.policy, asked, &url, Phase::Validation)?;
            let hop = self.request(asked, &url, deadline, options).await?;
            let next = match hop {
                Hop::Redirect(next) => next,
                Hop::Body(body) => match self.process(asked, &url, body, options).await? {
                    Processed::Page(page) => return Ok(page),
                    Processed::Refresh(next) => next,
                },
            };
            redirects += 1;
            if redirects > MAX_REDIRECTS {
                return Err(FetchError::new(
                    ErrorCode::TooManyRedirects,
                    Phase::Waiting,
                    false,
                    asked,
                    format!("{asked} redirected more than {MAX_REDIRECTS} times (last to {next})"),
                )
                .at(url.as_str()));
            }
            check_scheme(asked, &next, Phase::Waiting)?;
            tracing::debug!("web: {url} redirects to {next}");
            url = next;
        }
    }

    /// One request: a redirect's target, or the body of a successful response.
    async fn request(
        &self,
        asked: &str,
        url: &Url,
        deadline: Instant,
        options: &FetchOptions,
    ) -> Result<Hop, FetchError> {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(timed_out(asked, url, Phase::Waiting, options.timeout));
        }
        let response = self
            .client(asked)
            .await?
            .get(url.clone())
            .timeout(remaining)
            .send()
            .await
            .map_err(|err| send_error(&self.policy, asked, url, &err, options.timeout))?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(header::LOCATION)
                .and_then(|value| value.to_str().ok())
                .ok_or_else(|| {
                    FetchError::new(
                        ErrorCode::UnexpectedResponse,
                        Phase::Waiting,
                        false,
                        asked,
                        format!("{url} answered {status} without a usable Location header"),
                    )
                    .at(url.as_str())
                })?;
            let next = url.join(location.trim()).map_err(|err| {
                FetchError::new(
                    ErrorCode::UnexpectedResponse,
                    Phase::Waiting,
                    false,
                    asked,
                    format!("{url} redirects to {location:?}, which is not a URL ({err})"),
                )
                .at(url.as_str())
            })?;
            return Ok(Hop::Redirect(next));
        }
        if !status.is_success() {
            return Err(FetchError::http_status(
                asked,
                url.as_str(),
                status.as_u16(),
                status.canonical_reason().unwrap_or_default(),
            ));
        }
        let (mime, charset) = content::parse_content_type(
            response
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default(),
        );
        if content::classify(&mime) == Some(BodyKind::Binary) {
            let length = response.content_length();
            return Ok(Hop::Body(Body {
                bytes: Vec::new(),
                mime,
                charset,
                binary_length: Some(length),
            }));
        }
        let bytes = read_body(asked, url, response, options.timeout).await?;
        Ok(Hop::Body(Body {
            bytes,
            mime,
            charset,
            binary_length: None,
        }))
    }

    /// A body as a page, or the target of its meta refresh.
    async fn process(
        &self,
        asked: &str,
        url: &Url,
        body: Body,
        options: &FetchOptions,
    ) -> Result<Processed, FetchError> {
        let processed =
            |kind, mime: String, content| Processed::Page(page(asked, url, kind, mime, content));
        if let Some(length) = body.binary_length {
            let content = content::binary_placeholder(&body.mime, length);
            return Ok(processed(ContentKind::Binary, body.mime, content));
        }
        let charset = body.charset.as_deref();
        let length = u64::try_from(body.bytes.len()).unwrap_or(u64::MAX);
        let (kind, mime) = match content::classify(&body.mime) {
            Some(kind) => {
                // Served as text, but it is not: named for what it is, never decoded.
                if let Some(real) = content::binary_type(&body.bytes, charset) {
                    let content = content::mislabelled_placeholder(real, &body.mime, length);
                    return Ok(processed(ContentKind::Binary, real.to_owned(), content));
                }
                (kind, body.mime)
            }
            None => {
                let (kind, mime) = content::sniff(&body.bytes);
                (kind, mime.to_owned())
            }
        };
        let host = url.host_str();
        match kind {
            BodyKind::Binary => {
                let content = content::binary_placeholder(&mime, Some(length));
                Ok(processed(ContentKind::Binary, mime, content))
            }
            BodyKind::Json => {
                let text = charset::decode(&body.bytes, charset, false, host);
                let content = content::pretty_json(&text);
                Ok(processed(ContentKind::Json, mime, content))
            }
            BodyKind::Text => {
                let content = charset::decode(&body.bytes, charset, false, host);
                Ok(processed(ContentKind::Text, mime, content))
            }
            BodyKind::Html => {
                let html = charset::decode(&body.bytes, charset, true, host);
                process_html(asked, url, html, mime, options).await
            }
        }
    }
}

/// A page of `kind` with no metadata yet.
fn page(asked: &str, url: &Url, kind: ContentKind, mime: String, content: String) -> Page {
    Page {
        url: asked.to_owned(),
        final_url: url.to_string(),
        meta: PageMeta::default(),
        mime_type: mime,
        kind,
        extraction: None,
        content,
    }
}

/// An HTML page's main content in the asked format (off the runtime: extraction is CPU work),
/// or the target of its meta refresh.
async fn process_html(
    asked: &str,
    url: &Url,
    html: String,
    mime: String,
    options: &FetchOptions,
) -> Result<Processed, FetchError> {
    let at = url.clone();
    let (format, images) = (options.format, options.include_images);
    let outcome =
        tokio::task::spawn_blocking(move || extract::extract_html(&html, &at, format, images))
            .await
            .map_err(|err| {
                FetchError::new(
                    ErrorCode::UnexpectedResponse,
                    Phase::Processing,
                    false,
                    asked,
                    format!("extracting the content of {url} failed: {err}"),
                )
                .at(url.as_str())
            })?;
    match outcome {
        HtmlOutcome::Refresh(next) => Ok(Processed::Refresh(next)),
        HtmlOutcome::Content(extracted) => {
            let kind = match options.format {
                Format::Markdown => ContentKind::Markdown,
                Format::Text => ContentKind::Text,
                Format::Html => ContentKind::Html,
            };
            let mut page = page(asked, url, kind, mime, extracted.content);
            page.meta = extracted.meta;
            page.extraction = Some(extracted.method);
            Ok(Processed::Page(page))
        }
    }
}

enum Hop {
    Redirect(Url),
    Body(Body),
}

struct Body {
    bytes: Vec<u8>,
    mime: String,
    charset: Option<String>,
    /// Set for a binary body, which is not read: its length, when the server said.
    binary_length: Option<Option<u64>>,
}

enum Processed {
    Page(Page),
    Refresh(Url),
}

/// The client every fetch uses: no redirects (followed hop by hop, so each is counted and
/// checked), no proxy (it would resolve names out of the guard's sight), names resolved through
/// the private-network guard, browser-like headers.
fn build_client(policy: Arc<AddressPolicy>, user_agent: &str) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(GuardedResolver::new(policy))
        .user_agent(user_agent)
        .default_headers(browser_headers())
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
        .map_err(|err| format!("cannot set up HTTP for web fetches: {err}"))
}

/// The headers a browser sends when the user opens a page (the user agent is set apart).
fn browser_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    let pairs = [
        (
            header::ACCEPT,
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        ),
        (header::ACCEPT_LANGUAGE, "en-US,en;q=0.9"),
        (header::UPGRADE_INSECURE_REQUESTS, "1"),
        (
            header::HeaderName::from_static("sec-fetch-dest"),
            "document",
        ),
        (
            header::HeaderName::from_static("sec-fetch-mode"),
            "navigate",
        ),
        (header::HeaderName::from_static("sec-fetch-site"), "none"),
        (header::HeaderName::from_static("sec-fetch-user"), "?1"),
    ];
    for (name, value) in pairs {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers
}

/// `text` as an http(s) URL, or why not.
pub(crate) fn parse_url(text: &str) -> Result<Url, FetchError> {
    let url = Url::parse(text).map_err(|err| {
        FetchError::new(
            ErrorCode::InvalidUrl,
            Phase::Validation,
            false,
            text,
            format!(
                "{text:?} is not a valid URL ({err}); give an absolute http:// or https:// URL"
            ),
        )
    })?;
    check_scheme(text, &url, Phase::Validation)?;
    if url.host_str().is_none_or(str::is_empty) {
        return Err(FetchError::new(
            ErrorCode::InvalidUrl,
            Phase::Validation,
            false,
            text,
            format!("{text:?} has no host"),
        ));
    }
    Ok(url)
}

fn check_scheme(asked: &str, url: &Url, phase: Phase) -> Result<(), FetchError> {
    match url.scheme() {
        "http" | "https" => Ok(()),
        scheme => Err(FetchError::new(
            ErrorCode::UnsupportedProtocol,
            phase,
            false,
            asked,
            format!("{url} uses {scheme}:, but only http and https pages can be fetched"),
        )
        .at(url.as_str())),
    }
}

/// Reads the body, refusing one larger than [`MAX_BODY_BYTES`].
async fn read_body(
    asked: &str,
    url: &Url,
    mut response: Response,
    timeout: Duration,
) -> Result<Vec<u8>, FetchError> {
    // Every failure here is while loading the body, of this URL.
    let failed = |code: ErrorCode, retryable: bool, message: String| {
        FetchError::new(code, Phase::Loading, retryable, asked, message).at(url.as_str())
    };
    let too_large = || {
        failed(
            ErrorCode::UnexpectedResponse,
            false,
            format!(
                "{url} is larger than {} MiB; it was not read",
                MAX_BODY_BYTES / (1024 * 1024)
            ),
        )
    };
    let expected = response.content_length().unwrap_or(0);
    if expected > MAX_BODY_BYTES as u64 {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(expected).unwrap_or(0));
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if bytes.len() + chunk.len() > MAX_BODY_BYTES {
                    return Err(too_large());
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(bytes),
            Err(err) if err.is_timeout() => {
                return Err(timed_out(asked, url, Phase::Loading, timeout));
            }
            Err(err) if err.is_decode() => {
                return Err(failed(
                    ErrorCode::UnexpectedResponse,
                    false,
                    format!("the body of {url} could not be decoded: {}", chain(&err)),
                ));
            }
            Err(err) => {
                return Err(failed(
                    ErrorCode::NetworkError,
                    true,
                    format!("reading {url} broke off: {}", chain(&err)),
                ));
            }
        }
    }
}

fn timed_out(asked: &str, url: &Url, phase: Phase, timeout: Duration) -> FetchError {
    let what = match phase {
        Phase::Connecting => format!("connecting to {}", url.host_str().unwrap_or_default()),
        Phase::Loading => format!("reading {url}"),
        _ => format!("waiting for {url} to answer"),
    };
    FetchError::new(
        ErrorCode::Timeout,
        phase,
        true,
        asked,
        format!(
            "{what} took longer than the {} s timeout",
            timeout.as_secs_f64()
        ),
    )
    .at(url.as_str())
}

/// A failed `send()` as a typed error: a refused address, a timeout, or a network failure.
fn send_error(
    policy: &AddressPolicy,
    asked: &str,
    url: &Url,
    err: &reqwest::Error,
    timeout: Duration,
) -> FetchError {
    if let Some(blocked) = guard::find_blocked(err) {
        return guard::blocked(
            policy,
            asked,
            url.as_str(),
            Phase::Connecting,
            &format!("{} (which resolves to {})", blocked.host, blocked.addresses),
        );
    }
    let phase = if err.is_connect() {
        Phase::Connecting
    } else {
        Phase::Waiting
    };
    if err.is_timeout() {
        return timed_out(asked, url, phase, timeout);
    }
    let what = if err.is_connect() {
        format!(
            "could not connect to {}",
            url.host_str().unwrap_or_default()
        )
    } else {
        format!("the request to {url} failed")
    };
    FetchError::new(
        ErrorCode::NetworkError,
        phase,
        true,
        asked,
        format!("{what}: {}", chain(err)),
    )
    .at(url.as_str())
}

/// An error and its causes in one line, each said once.
fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current = Some(err);
    while let Some(err) = current {
        let text = err.to_string();
        if !parts.iter().any(|part| part.contains(&text)) {
            parts.push(text);
        }
        current = err.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, SocketAddr};
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::Router;
    use axum::http::{StatusCode, Uri, header as axum_header};
    use axum::response::{IntoResponse, Response};

    use super::*;

    /// Serves `routes` (path → response maker) on `ip`, counting requests.
    async fn serve(
        ip: &str,
        answer: fn(&str, u16) -> Response,
        target_port: u16,
    ) -> (SocketAddr, Arc<AtomicUsize>) {
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&hits);
        let app = Router::new().fallback(move |uri: Uri| {
            let counted = Arc::clone(&counted);
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                answer(uri.path(), target_port)
            }
        });
        let ip: IpAddr = ip.parse().unwrap();
        let listener = tokio::net::TcpListener::bind(SocketAddr::new(ip, 0))
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (addr, hits)
    }

    fn private_page(_: &str, _: u16) -> Response {
        "<p>the router's admin page</p>".into_response()
    }

    /// "The internet": pages that send the reader to the private server on `port`.
    fn public_page(path: &str, port: u16) -> Response {
        let to = |location: String| {
            (StatusCode::FOUND, [(axum_header::LOCATION, location)]).into_response()
        };
        match path {
            "/to-localhost" => to(format!("http://localhost:{port}/admin")),
            "/to-literal" => to(format!("http://127.0.0.1:{port}/admin")),
            "/refresh-to-localhost" => (
                [(axum_header::CONTENT_TYPE, "text/html")],
                format!(
                    r#"<meta http-equiv="refresh" content="0; url=http://localhost:{port}/admin">"#
                ),
            )
                .into_response(),
            _ => axum::response::Html("<html><body><p>A public page.</p></body></html>")
                .into_response(),
        }
    }

    /// A public-looking page that redirects into the private network is refused at the hop,
    /// for a name (checked where it resolves) and a literal alike, and for a meta refresh.
    #[tokio::test]
    async fn a_redirect_from_a_public_page_to_loopback_is_refused() {
        let (private, private_hits) = serve("127.0.0.1", private_page, 0).await;
        // 127.0.0.2 stands in for a public server: the policy treats it as public.
        let (public, public_hits) = serve("127.0.0.2", public_page, private.port()).await;
        let policy = AddressPolicy {
            public_for_tests: vec![public.ip()],
            ..AddressPolicy::new(false)
        };
        let fetcher = Fetcher::new(FetcherSettings {
            policy,
            user_agent: None,
            cache: None,
        });
        let options = FetchOptions {
            format: Format::Markdown,
            include_images: true,
            timeout: Duration::from_secs(10),
        };
        let page = fetcher
            .fetch_uncached(&format!("http://{public}/"), &options)
            .await
            .unwrap();
        assert_eq!(page.content, "A public page.");
        for (path, phase) in [
            ("/to-localhost", Phase::Connecting),
            ("/to-literal", Phase::Validation),
            ("/refresh-to-localhost", Phase::Connecting),
        ] {
            let asked = format!("http://{public}{path}");
            let error = fetcher.fetch_uncached(&asked, &options).await.unwrap_err();
            assert_eq!(
                error.code,
                ErrorCode::BlockedAddress,
                "{path}: {}",
                error.message
            );
            assert_eq!(error.phase, phase, "{path}");
            assert_eq!(error.url, asked);
            assert!(
                error
                    .final_url
                    .as_deref()
                    .is_some_and(|url| url.ends_with("/admin")),
                "{path}: {error:?}"
            );
        }
        assert_eq!(public_hits.load(Ordering::SeqCst), 4);
        assert_eq!(
            private_hits.load(Ordering::SeqCst),
            0,
            "the private server was never reached"
        );
    }

    /// The HTTP client (TLS set-up, the system's certificates) is built by the first request,
    /// not by the fetcher: a session that never fetches does not carry it. Clones share it.
    #[tokio::test]
    async fn the_client_is_built_by_the_first_request_and_shared_by_clones() {
        let (server, hits) = serve("127.0.0.1", private_page, 0).await;
        let fetcher = Fetcher::new(FetcherSettings {
            policy: AddressPolicy::new(true),
            user_agent: None,
            cache: None,
        });
        let clone = fetcher.clone();
        assert!(!fetcher.client.is_built(), "built before any request");
        let options = FetchOptions {
            format: Format::Text,
            include_images: false,
            timeout: Duration::from_secs(10),
        };
        // Refused before any request: still not built.
        let error = fetcher
            .fetch_uncached("ftp://example.com/", &options)
            .await
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::UnsupportedProtocol);
        assert!(!fetcher.client.is_built(), "built for a refused URL");
        let page = clone
            .fetch_uncached(&format!("http://{server}/"), &options)
            .await
            .unwrap();
        // Served as text/plain, so given as it came.
        assert_eq!(page.content, "<p>the router's admin page</p>");
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        assert!(
            fetcher.client.is_built(),
            "the clone's request built the shared client"
        );
    }
}

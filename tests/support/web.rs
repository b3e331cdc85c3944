//! A local HTTP server on loopback that serves the web fixtures (`tests/fixtures/web/`: a news
//! article, a docs page, a forum thread, a page whose content is only in `<main>`, a list of
//! links readability finds no article in, a windows-1252 page, a windows-1251 page under a
//! header that says UTF-8, JSON, text, a PDF, an image) and the awkward answers the fetcher must
//! survive: noise and images labelled as HTML,
//! redirect chains and loops, meta refreshes, gzip bodies, slow headers and slow bodies,
//! error statuses, an oversized body, and a route that holds requests to show how many run at
//! once. It counts the requests per path, so a test can see what reached it. Each test binary
//! (and the web bench) uses only part of it, hence the `dead_code` allowance.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)] // test code: a failed step should panic

use std::collections::HashMap;
use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::Response;
use tokio::sync::Notify;

/// How long the slow routes keep the client waiting (far past any test's timeout).
const SLOW: Duration = Duration::from_secs(60);
/// How many `/hold/…` requests must be in flight before they are answered.
pub const HOLD_UNTIL: usize = 2;

pub struct FixtureServer {
    pub addr: SocketAddr,
    state: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Default)]
struct Shared {
    hits: Mutex<HashMap<String, usize>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    moved: Notify,
}

impl FixtureServer {
    /// Serves on `127.0.0.1`, a free port.
    pub async fn start() -> FixtureServer {
        FixtureServer::start_on("127.0.0.1".parse().expect("an address")).await
    }

    pub async fn start_on(ip: IpAddr) -> FixtureServer {
        let state = Arc::new(Shared::default());
        let app = Router::new().fallback(serve).with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind(SocketAddr::new(ip, 0))
            .await
            .expect("bind the fixture server");
        let addr = listener.local_addr().expect("the fixture server's address");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FixtureServer { addr, state, task }
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Requests that reached `path`.
    pub fn hits(&self, path: &str) -> usize {
        let hits = self
            .state
            .hits
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        hits.get(path).copied().unwrap_or(0)
    }

    /// Requests that reached any path.
    pub fn total_hits(&self) -> usize {
        let hits = self
            .state
            .hits
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        hits.values().sum()
    }

    /// The most `/hold/…` requests that were in flight at once.
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }
}

impl Drop for FixtureServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A fixture file's bytes.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/web")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn answer(status: StatusCode, content_type: Option<&str>, body: impl Into<Body>) -> Response {
    let mut builder = Response::builder().status(status);
    if let Some(content_type) = content_type {
        builder = builder.header(header::CONTENT_TYPE, content_type);
    }
    builder.body(body.into()).expect("a valid response")
}

fn redirect(status: StatusCode, location: &str) -> Response {
    Response::builder()
        .status(status)
        .header(header::LOCATION, location)
        .body(Body::empty())
        .expect("a valid response")
}

const HTML: Option<&str> = Some("text/html; charset=utf-8");

async fn serve(State(state): State<Arc<Shared>>, uri: Uri, headers: HeaderMap) -> Response {
    let path = uri.path().to_owned();
    *state
        .hits
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(path.clone())
        .or_default() += 1;
    let ok = StatusCode::OK;
    match path.as_str() {
        "/news" => answer(ok, HTML, fixture("news-article.html")),
        // A SearXNG instance (`/search?q=…&format=json`) whose one result is the article here.
        "/searxng/search" => {
            let host = headers
                .get(header::HOST)
                .and_then(|host| host.to_str().ok())
                .unwrap_or("127.0.0.1");
            let results = format!(
                r#"{{"query": "harbour", "number_of_results": 1, "results": [{{"url": "http://{host}/news", "title": "Harbour city switches on tidal energy pilot", "content": "A tidal energy pilot starts in the harbour.", "engine": "fixture"}}], "answers": [], "suggestions": []}}"#
            );
            answer(ok, Some("application/json"), results)
        }
        "/docs" => answer(ok, HTML, fixture("docs-page.html")),
        "/forum" => answer(ok, HTML, fixture("forum-thread.html")),
        "/main-only" => answer(ok, HTML, fixture("main-only.html")),
        "/links" => answer(ok, HTML, fixture("link-list.html")),
        // No charset in the header: the page's <meta> says windows-1252.
        "/latin1" => answer(ok, Some("text/html"), fixture("latin1.html")),
        "/old/page" => answer(ok, HTML, fixture("refresh.html")),
        "/refresh-a" => answer(
            ok,
            HTML,
            r#"<meta http-equiv="refresh" content="0;url=/refresh-b">"#,
        ),
        "/refresh-b" => answer(
            ok,
            HTML,
            r#"<meta http-equiv="refresh" content="0;url=/refresh-a">"#,
        ),
        // windows-1251 bytes under a header that says UTF-8: without the page's <meta> (the
        // charset must be guessed), and with it (the meta disagrees with the header).
        "/cp1251/no-meta" => answer(ok, HTML, without_meta(&fixture("cp1251.html"))),
        "/cp1251/meta" => answer(ok, HTML, fixture("cp1251.html")),
        // Not text at all, under a text label: noise, and an image.
        "/noise.html" => answer(ok, HTML, noise(4096)),
        "/pixels.html" => answer(ok, Some("text/html"), fixture("pixels.png")),
        "/data.json" => answer(ok, Some("application/json"), fixture("data.json")),
        "/notes.txt" => answer(ok, Some("text/plain; charset=utf-8"), fixture("notes.txt")),
        "/report.pdf" => answer(ok, Some("application/pdf"), fixture("report.pdf")),
        // No Content-Type at all: the body says what it is.
        "/unlabelled" => answer(ok, None, fixture("report.pdf")),
        "/gzip/news" => {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            encoder
                .write_all(&fixture("news-article.html"))
                .expect("gzip");
            let body = encoder.finish().expect("gzip");
            Response::builder()
                .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
                .header(header::CONTENT_ENCODING, "gzip")
                .body(Body::from(body))
                .expect("a valid response")
        }
        "/loop/a" => redirect(StatusCode::FOUND, "/loop/b"),
        "/loop/b" => redirect(StatusCode::MOVED_PERMANENTLY, "a"),
        "/to-ftp" => redirect(StatusCode::FOUND, "ftp://files.example/report.pdf"),
        "/no-location" => answer(StatusCode::FOUND, None, Body::empty()),
        "/slow" => {
            tokio::time::sleep(SLOW).await;
            answer(ok, HTML, "<p>too late</p>")
        }
        "/slow-body" => {
            let first = futures_util::stream::once(async {
                Ok::<_, std::io::Error>(axum::body::Bytes::from_static(b"<html><body><p>Start"))
            });
            let stall = futures_util::stream::once(async {
                tokio::time::sleep(SLOW).await;
                Ok::<_, std::io::Error>(axum::body::Bytes::from_static(b" end</p>"))
            });
            answer(
                ok,
                HTML,
                Body::from_stream(futures_util::StreamExt::chain(first, stall)),
            )
        }
        "/big" => {
            let chunk = axum::body::Bytes::from(vec![b'a'; 1024 * 1024]);
            let chunks = futures_util::stream::iter(
                (0..17).map(move |_| Ok::<_, std::io::Error>(chunk.clone())),
            );
            answer(ok, Some("text/plain"), Body::from_stream(chunks))
        }
        "/headers" => {
            let seen: HashMap<String, String> = headers
                .iter()
                .map(|(name, value)| {
                    (
                        name.to_string(),
                        value.to_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect();
            answer(
                ok,
                Some("application/json"),
                serde_json::to_vec(&seen).expect("JSON"),
            )
        }
        "/counter" => {
            let count = state
                .hits
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get("/counter")
                .copied()
                .unwrap_or(0);
            answer(
                ok,
                Some("text/plain"),
                format!("counter page, request {count}"),
            )
        }
        other => {
            if let Some(rest) = other.strip_prefix("/redirect/") {
                return match rest.parse::<u32>() {
                    // Relative: resolved against /redirect/<n>.
                    Ok(n) if n > 0 => redirect(StatusCode::FOUND, &format!("{}", n - 1)),
                    Ok(_) => answer(ok, Some("text/plain"), "arrived after the redirects"),
                    Err(_) => answer(StatusCode::BAD_REQUEST, None, "bad count"),
                };
            }
            if let Some(code) = other.strip_prefix("/status/") {
                let status = code
                    .parse::<u16>()
                    .ok()
                    .and_then(|code| StatusCode::from_u16(code).ok())
                    .unwrap_or(StatusCode::BAD_REQUEST);
                return answer(status, Some("text/plain"), format!("status {code}"));
            }
            if let Some(item) = other.strip_prefix("/hold/") {
                return hold(&state, item).await;
            }
            answer(StatusCode::NOT_FOUND, Some("text/plain"), "no such fixture")
        }
    }
}

/// `html` without its `<meta http-equiv>` line.
fn without_meta(html: &[u8]) -> Vec<u8> {
    html.split_inclusive(|byte| *byte == b'\n')
        .filter(|line| !line.starts_with(b"<meta"))
        .flatten()
        .copied()
        .collect()
}

/// `length` bytes from a fixed linear congruential generator: the same noise every run.
pub fn noise(length: usize) -> Vec<u8> {
    let mut state: u32 = 0x2545_f491;
    (0..length)
        .map(|_| {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (state >> 16) as u8
        })
        .collect()
}

/// Answers once [`HOLD_UNTIL`] requests are in flight together (or after a few seconds, so a
/// client that sends fewer still gets its answers).
async fn hold(state: &Shared, item: &str) -> Response {
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    state.max_in_flight.fetch_max(now, Ordering::SeqCst);
    state.moved.notify_waiters();
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            // Listening before the check, so an arrival between the two still wakes this one.
            let moved = state.moved.notified();
            let mut moved = std::pin::pin!(moved);
            moved.as_mut().enable();
            if state.in_flight.load(Ordering::SeqCst) >= HOLD_UNTIL {
                return;
            }
            moved.await;
        }
    })
    .await;
    // Answer a little after the others have arrived, so a pool that is too large is seen.
    tokio::time::sleep(Duration::from_millis(20)).await;
    state.in_flight.fetch_sub(1, Ordering::SeqCst);
    answer(
        StatusCode::OK,
        HTML,
        format!(
            "<html><head><title>Item {item}</title></head><body><main><p>Held item {item}.</p></main></body></html>"
        ),
    )
}

//! Web smart-fetch against a real HTTP server on loopback (`support/web.rs`) serving realistic
//! pages saved as fixtures: the tools are called through the bridge `Module` interface exactly
//! as Pi's calls arrive, with the fetcher built from the config files the way the capability
//! builds it. Loopback is reachable only because each test's workspace sets
//! `"allowPrivateNetwork": true` in `.unipi/config/web.json`; without it every request is refused
//! (`loopback_is_refused_without_the_config_switch`).
//!
//! Extraction goldens are insta snapshots in `snapshots/` (`web_fetch__*.snap`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support::web as web_fixtures;

use serde_json::{Value, json};
use unipi_tui::bridge::{
    AgentId, CancelToken, CommandCall, CommandReply, Module, ToolCall, ToolError, ToolOutput,
    UpdateSender,
};
use unipi_tui::config::live::LiveConfig;
use unipi_tui::config::module_file::ModuleConfig;
use unipi_tui::web::config::{WEB_CONFIG_FILE, WebConfig};
use unipi_tui::web::module::WebModule;
use web_fixtures::{FixtureServer, HOLD_UNTIL};

const ALLOW: &str = r#"{ "allowPrivateNetwork": true }"#;

/// A web module as the capability builds it, from a home and a workspace (which differ) whose
/// workspace config is `workspace_config`, with its cache in a directory of its own. It follows
/// the files, as in the workbench.
struct Setup {
    _root: tempfile::TempDir,
    module: WebModule,
    cache_dir: std::path::PathBuf,
    home: std::path::PathBuf,
    workspace: std::path::PathBuf,
}

fn setup(workspace_config: Option<&str>) -> Setup {
    let root = tempfile::tempdir().unwrap();
    let [home, workspace, cache_dir] =
        ["home", "project", "cache"].map(|name| root.path().join(name));
    for dir in [&home, &workspace] {
        std::fs::create_dir_all(dir).unwrap();
    }
    if let Some(text) = workspace_config {
        write_config(&workspace, text);
    }
    let (config, errors) =
        LiveConfig::module(Some(&home), &workspace, &[WEB_CONFIG_FILE], WebConfig::load);
    assert!(errors.is_empty(), "{errors:?}");
    Setup {
        _root: root,
        module: WebModule::new(config, Some(cache_dir.clone())),
        cache_dir,
        home,
        workspace,
    }
}

/// Writes `text` as the web.json below `dir` (the home or the workspace).
fn write_config(dir: &std::path::Path, text: &str) {
    let file = dir.join(WEB_CONFIG_FILE);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, text).unwrap();
}

async fn call(module: &WebModule, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
    module
        .call_tool(ToolCall {
            agent: AgentId::main(),
            tool: tool.to_owned(),
            call_id: "call-1".to_owned(),
            args,
            updates: UpdateSender::detached(),
            cancel: CancelToken::never(),
        })
        .await
}

fn text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .map(|block| match block {
            unipi_tui::bridge::ContentBlock::Text { text } => text.clone(),
            other => panic!("unexpected block {other:?}"),
        })
        .collect()
}

async fn fetch_ok(module: &WebModule, args: Value) -> ToolOutput {
    call(module, "web_fetch", args.clone())
        .await
        .unwrap_or_else(|err| panic!("{args}: {}", err.message))
}

async fn fetch_err(module: &WebModule, args: Value) -> ToolError {
    match call(module, "web_fetch", args.clone()).await {
        Ok(output) => panic!("{args}: expected a failure, got {}", text(&output)),
        Err(err) => err,
    }
}

fn snapshot(name: &str, value: &str, server: &FixtureServer) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"));
    settings.add_filter(&regex_escape(&server.addr.to_string()), "127.0.0.1:PORT");
    // Named as when this suite was a test binary of its own.
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(format!("web_fetch__{name}"), value));
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_ascii_alphanumeric() {
                vec![c]
            } else {
                vec!['\\', c]
            }
        })
        .collect()
}

#[tokio::test]
async fn real_world_pages_become_clean_markdown() {
    let server = FixtureServer::start().await;
    let s = setup(Some(ALLOW));
    // (route, golden name, how the content was found, text that must be there, page furniture
    // that must not)
    let cases = [
        (
            "/news",
            "news-article",
            "readability",
            "Predictable, if not constant",
            [
                "Accept all",
                "Most read",
                "All rights reserved",
                "Advertisement",
            ],
        ),
        (
            "/docs",
            "docs-page",
            "readability",
            "TARNISH_CHECK=1 tarnish polish",
            [
                "Skip to content",
                "Search the docs",
                "Edit this page",
                "Quick start",
            ],
        ),
        (
            "/forum",
            "forum-thread",
            "readability",
            "It is alcohol made by the yeast",
            [
                "Log in to reply",
                "Suggested topics",
                "Community guidelines",
                "bake-along",
            ],
        ),
        (
            "/main-only",
            "main-only",
            "readability",
            "Recurring shifts can now skip public holidays.",
            ["Pricing", "Sign in", "Status", "Lumen Scheduler Ltd"],
        ),
        // Readability finds no article in a list of links and keeps the whole body: the page's
        // own <main> is taken instead, its links made absolute.
        (
            "/links",
            "link-list",
            "fallback: main",
            "[Linux (AppImage)](http://127.0.0.1:PORT/dl/lumen-3.2-linux-x86_64.AppImage)",
            ["Sign in", "Status", "Lumen Scheduler Ltd", "analytics"],
        ),
    ];
    for (route, golden, method, wanted, furniture) in cases {
        let output = fetch_ok(&s.module, json!({"url": server.url(route)})).await;
        assert_eq!(output.details["extraction"], method, "{route}");
        let wanted = wanted.replace("127.0.0.1:PORT", &server.addr.to_string());
        let shown = text(&output);
        assert!(
            shown.contains(&wanted),
            "{route}: {wanted:?} missing:\n{shown}"
        );
        for junk in furniture {
            assert!(
                !shown.contains(junk),
                "{route}: page furniture {junk:?} kept:\n{shown}"
            );
        }
        assert!(
            !shown.contains("<script") && !shown.contains("gtag("),
            "{route}:\n{shown}"
        );
        assert_eq!(output.details["truncated"], false);
        snapshot(golden, &shown, &server);
    }
}

#[tokio::test]
async fn metadata_comes_with_the_originals_fallbacks() {
    let server = FixtureServer::start().await;
    let s = setup(Some(ALLOW));
    let news = text(&fetch_ok(&s.module, json!({"url": server.url("/news")})).await);
    for line in [
        "# Harbour city switches on tidal energy pilot\n",
        "Author: Maren Holt\n",
        "Published: 2025-03-14T07:30:00Z\n",
        "Site: The Northern Ledger\n",
        "Language: en-GB\n",
    ] {
        assert!(news.contains(line), "{line:?} missing:\n{news}");
    }
    let words: usize = news
        .lines()
        .find_map(|line| line.strip_prefix("Word count: "))
        .and_then(|count| count.parse().ok())
        .unwrap();
    assert!((300..600).contains(&words), "{words} words");
    // The forum thread has no author or date of its own: the site and title still come.
    let forum = text(&fetch_ok(&s.module, json!({"url": server.url("/forum")})).await);
    assert!(forum.contains("Site: Fermentation Forum\n"), "{forum}");
    assert!(
        forum.contains("Sourdough starter smells like nail polish remover?"),
        "{forum}"
    );
}

#[tokio::test]
async fn formats_images_and_the_web_read_alias() {
    let server = FixtureServer::start().await;
    let s = setup(Some(ALLOW));
    let url = server.url("/news");
    let markdown = text(&fetch_ok(&s.module, json!({"url": url})).await);
    assert!(
        markdown.contains("## Predictable, if not constant"),
        "{markdown}"
    );
    assert!(
        markdown.contains(&format!(
            "![Turbine frames being lowered beside the ferry pier]({})",
            server.url("/images/pier-turbines.jpg")
        )),
        "images are kept, with absolute URLs:\n{markdown}"
    );
    let no_images = text(&fetch_ok(&s.module, json!({"url": url, "includeImages": false})).await);
    assert!(!no_images.contains("pier-turbines.jpg"), "{no_images}");
    assert!(
        no_images.contains("Turbine frames were lowered into place"),
        "captions stay"
    );

    let plain = text(&fetch_ok(&s.module, json!({"url": url, "format": "text"})).await);
    assert!(plain.contains("Predictable, if not constant"), "{plain}");
    assert!(!plain.contains("## ") && !plain.contains("]("), "{plain}");

    let html = fetch_ok(&s.module, json!({"url": url, "format": "html"})).await;
    assert!(
        text(&html).contains("<h2>Predictable, if not constant</h2>"),
        "{}",
        text(&html)
    );
    assert_eq!(html.details["kind"], "html");

    // web_read: one URL is web_fetch, a list is the batch.
    let one = call(&s.module, "web_read", json!({"url": url}))
        .await
        .unwrap();
    assert_eq!(text(&one), markdown);
    let many = call(
        &s.module,
        "web_read",
        json!({"url": [url, server.url("/docs")]}),
    )
    .await
    .unwrap();
    assert_eq!(many.details["total"], 2);
    assert_eq!(many.details["succeeded"], 2);
}

/// `format: "json"`: the page as a JSON object, its content the markdown; a batch as pages.
#[tokio::test]
async fn the_json_format() {
    let server = FixtureServer::start().await;
    let s = setup(Some(ALLOW));
    let url = server.url("/news");
    let page = fetch_ok(&s.module, json!({"url": url, "format": "json"})).await;
    let value: Value = serde_json::from_str(&text(&page)).unwrap();
    assert_eq!(value["url"], url);
    assert_eq!(
        value["title"],
        "Harbour city switches on tidal energy pilot"
    );
    assert_eq!(value["author"], "Maren Holt");
    assert_eq!(value["truncated"], false);
    let content = value["content"].as_str().unwrap();
    assert!(
        content.contains("## Predictable, if not constant"),
        "{content}"
    );

    let batch = call(
        &s.module,
        "multi_web_content_read",
        json!({"url": [url, server.url("/missing")], "format": "json", "maxChars": 800}),
    )
    .await
    .unwrap();
    let value: Value = serde_json::from_str(&text(&batch)).unwrap();
    assert_eq!(
        (value["total"].clone(), value["succeeded"].clone()),
        (json!(2), json!(1))
    );
    assert_eq!(value["pages"][0]["truncated"], true);
    assert!(value["pages"][0]["shownChars"].as_u64().unwrap() <= 800);
    assert_eq!(value["pages"][1]["ok"], false);
}

/// The original Unipi's tool name and parameter names reach the same fetch.
#[tokio::test]
async fn the_original_unipi_tool_name_and_parameters() {
    let server = FixtureServer::start().await;
    let s = setup(Some(ALLOW));
    let url = server.url("/news");
    let ours = text(&fetch_ok(&s.module, json!({"url": url, "includeImages": false})).await);
    let theirs = call(
        &s.module,
        "multi_web_content_read",
        json!({"url": url, "removeImages": true, "timeoutMs": 5000, "source": 0}),
    )
    .await
    .unwrap();
    assert_eq!(text(&theirs), ours);
    let many = call(
        &s.module,
        "multi_web_content_read",
        json!({"url": [url, server.url("/docs")], "batchConcurrency": 2}),
    )
    .await
    .unwrap();
    assert_eq!(many.details["succeeded"], 2);
    let refused = call(
        &s.module,
        "multi_web_content_read",
        json!({"url": url, "source": 2}),
    )
    .await
    .unwrap_err();
    assert!(
        refused.to_string().contains("`source` 2 is not available"),
        "{refused}"
    );
}

#[tokio::test]
async fn json_text_binary_and_charsets() {
    let server = FixtureServer::start().await;
    let s = setup(Some(ALLOW));
    let json = fetch_ok(&s.module, json!({"url": server.url("/data.json")})).await;
    assert!(
        text(&json).ends_with("{\n  \"ok\": true,\n  \"readings\": [\n    {\n      \"kw\": 412.5,\n      \"time\": \"2025-03-14T08:00:00Z\"\n    },\n    {\n      \"kw\": 388.0,\n      \"time\": \"2025-03-14T09:00:00Z\"\n    }\n  ],\n  \"station\": \"Pier Head\"\n}"),
        "{}",
        text(&json)
    );
    assert_eq!(json.details["kind"], "json");

    let notes = fetch_ok(&s.module, json!({"url": server.url("/notes.txt")})).await;
    let expected = String::from_utf8(web_fixtures::fixture("notes.txt")).unwrap();
    assert!(
        text(&notes).ends_with(&expected),
        "text as is:\n{}",
        text(&notes)
    );

    for route in ["/report.pdf", "/unlabelled"] {
        let pdf = fetch_ok(&s.module, json!({"url": server.url(route)})).await;
        assert!(
            text(&pdf).contains("[Binary file: application/pdf"),
            "{route}: {}",
            text(&pdf)
        );
        assert_eq!(pdf.details["kind"], "binary", "{route}");
    }

    let latin1 = text(&fetch_ok(&s.module, json!({"url": server.url("/latin1")})).await);
    assert!(latin1.contains("# Café crème — la recette"), "{latin1}");
    assert!(
        latin1.contains("jusqu’à obtenir une mousse épaisse"),
        "{latin1}"
    );

    let gzip = text(&fetch_ok(&s.module, json!({"url": server.url("/gzip/news")})).await);
    assert!(gzip.contains("Predictable, if not constant"), "{gzip}");
}

/// Bytes that are not text reach the model as one line naming what they are, whatever the
/// server called them; a page whose header names the wrong charset reads as its real one.
#[tokio::test]
async fn mislabelled_bodies_and_charsets_are_read_for_what_they_are() {
    let server = FixtureServer::start().await;
    let s = setup(Some(ALLOW));
    for (route, mime, size) in [
        ("/noise.html", "application/octet-stream", "4.0 KiB"),
        ("/pixels.html", "image/png", "165 bytes"),
    ] {
        let output = fetch_ok(&s.module, json!({"url": server.url(route)})).await;
        let shown = text(&output);
        let placeholder = format!(
            "[Binary file: {mime}, {size} — served as text/html, but the bytes are not text]"
        );
        assert!(shown.ends_with(&placeholder), "{route}:\n{shown}");
        assert_eq!(output.details["kind"], "binary", "{route}");
        assert_eq!(output.details["mimeType"], mime, "{route}");
        assert!(
            output.details["wordCount"].as_u64().unwrap() < 25,
            "{route}: no mojibake words:\n{shown}"
        );
    }

    for route in ["/cp1251/no-meta", "/cp1251/meta"] {
        let shown = text(&fetch_ok(&s.module, json!({"url": server.url(route)})).await);
        assert!(
            shown.starts_with("# Зимняя рыбалка на Ладоге — советы новичкам"),
            "{route}:\n{shown}"
        );
        assert!(
            shown.contains("«Главное — не спешить и проверять лёд перед каждым шагом»"),
            "{route}:\n{shown}"
        );
        assert!(!shown.contains('\u{fffd}'), "{route}:\n{shown}");
    }
}

#[tokio::test]
async fn requests_look_like_a_browser() {
    let server = FixtureServer::start().await;
    let s = setup(Some(ALLOW));
    let output = fetch_ok(&s.module, json!({"url": server.url("/headers")})).await;
    let shown = text(&output);
    let body = &shown[shown.find("{\n").unwrap()..];
    let headers: Value = serde_json::from_str(body).unwrap();
    assert!(
        headers["user-agent"]
            .as_str()
            .unwrap()
            .starts_with("Mozilla/5.0"),
        "{headers}"
    );
    assert!(
        headers["accept"].as_str().unwrap().starts_with("text/html"),
        "{headers}"
    );
    assert_eq!(headers["accept-language"], "en-US,en;q=0.9");
    let encodings = headers["accept-encoding"].as_str().unwrap();
    for encoding in ["gzip", "br", "deflate"] {
        assert!(encodings.contains(encoding), "{encodings}");
    }
}

#[tokio::test]
async fn redirects_and_meta_refreshes_are_followed_up_to_five() {
    let server = FixtureServer::start().await;
    let s = setup(Some(ALLOW));
    let five = fetch_ok(&s.module, json!({"url": server.url("/redirect/5")})).await;
    assert!(text(&five).contains("arrived after the redirects"));
    assert_eq!(five.details["finalUrl"], server.url("/redirect/0"));

    let refreshed = fetch_ok(&s.module, json!({"url": server.url("/old/page")})).await;
    assert_eq!(
        refreshed.details["finalUrl"],
        server.url("/news"),
        "relative ../news resolved"
    );
    assert!(text(&refreshed).contains(&format!("Final URL: {}", server.url("/news"))));
    assert!(text(&refreshed).contains("Predictable, if not constant"));

    for route in ["/redirect/6", "/loop/a", "/refresh-a"] {
        let error = fetch_err(&s.module, json!({"url": server.url(route)})).await;
        assert_eq!(
            error.details["error"]["code"], "too_many_redirects",
            "{route}: {}",
            error.message
        );
        assert_eq!(error.details["error"]["retryable"], false);
        assert!(
            error.message.contains("redirected more than 5 times"),
            "{}",
            error.message
        );
    }
    assert_eq!(
        server.hits("/redirect/0"),
        1,
        "six redirects: the sixth is not followed"
    );

    let ftp = fetch_err(&s.module, json!({"url": server.url("/to-ftp")})).await;
    assert_eq!(
        ftp.details["error"]["code"], "unsupported_protocol",
        "{}",
        ftp.message
    );
    let nowhere = fetch_err(&s.module, json!({"url": server.url("/no-location")})).await;
    assert_eq!(
        nowhere.details["error"]["code"], "unexpected_response",
        "{}",
        nowhere.message
    );
}

#[tokio::test]
async fn failures_are_typed_readable_and_say_whether_to_retry() {
    let server = FixtureServer::start().await;
    let s = setup(Some(ALLOW));
    // (arguments, code, phase, retryable, words in the message)
    let refused = {
        // A port nothing listens on: bind one, then let it go.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        format!("http://127.0.0.1:{port}/")
    };
    let cases = [
        (
            json!({"url": "not a url"}),
            "invalid_url",
            "validation",
            false,
            "is not a valid URL",
        ),
        (
            json!({"url": "ftp://files.example/x"}),
            "unsupported_protocol",
            "validation",
            false,
            "only http and https",
        ),
        (
            json!({"url": "file:///etc/passwd"}),
            "unsupported_protocol",
            "validation",
            false,
            "uses file:",
        ),
        (
            json!({"url": server.url("/status/404")}),
            "http_status",
            "waiting",
            false,
            "answered HTTP 404 Not Found",
        ),
        (
            json!({"url": server.url("/status/500")}),
            "http_status",
            "waiting",
            true,
            "answered HTTP 500 Internal Server Error",
        ),
        (
            json!({"url": server.url("/status/429")}),
            "http_status",
            "waiting",
            true,
            "HTTP 429",
        ),
        (
            json!({"url": server.url("/slow"), "timeoutSeconds": 1}),
            "timeout",
            "waiting",
            true,
            "took longer than the 1 s timeout",
        ),
        (
            json!({"url": server.url("/slow-body"), "timeoutSeconds": 1}),
            "timeout",
            "loading",
            true,
            "reading",
        ),
        (
            json!({"url": server.url("/big")}),
            "unexpected_response",
            "loading",
            false,
            "larger than 16 MiB",
        ),
        (
            json!({"url": refused}),
            "network_error",
            "connecting",
            true,
            "could not connect",
        ),
    ];
    for (args, code, phase, retryable, words) in cases {
        let error = fetch_err(&s.module, args.clone()).await;
        let typed = &error.details["error"];
        assert_eq!(
            (
                typed["code"].as_str(),
                typed["phase"].as_str(),
                typed["retryable"].as_bool()
            ),
            (Some(code), Some(phase), Some(retryable)),
            "{args}: {}",
            error.message
        );
        assert!(error.message.contains(words), "{args}: {}", error.message);
        assert!(
            error.message.starts_with("Fetch failed: "),
            "{}",
            error.message
        );
        let tail = format!(
            "[code: {code}, phase: {phase}, retryable: {}]",
            if retryable { "yes" } else { "no" }
        );
        assert!(error.message.ends_with(&tail), "{}", error.message);
        assert!(!error.message.contains("[object Object]"));
    }
    let bad = call(
        &s.module,
        "web_fetch",
        json!({"url": server.url("/news"), "format": "pdf"}),
    )
    .await;
    assert!(
        bad.unwrap_err()
            .message
            .contains("`format` must be markdown, text, html or json")
    );
}

#[tokio::test]
async fn long_pages_are_cut_on_a_clean_boundary_with_a_note() {
    let server = FixtureServer::start().await;
    let s = setup(Some(ALLOW));
    let output = fetch_ok(
        &s.module,
        json!({"url": server.url("/news"), "maxChars": 900}),
    )
    .await;
    let shown = text(&output);
    let body = shown.split("\n---\n\n").nth(1).unwrap();
    assert!(body.chars().count() <= 900, "{}", body.chars().count());
    assert!(body.contains("[… truncated: showing "), "{body}");
    assert!(
        body.contains("fetch again with a larger maxChars"),
        "{body}"
    );
    let kept = body.split("\n\n[… truncated").next().unwrap();
    assert!(
        kept.ends_with('.') || kept.ends_with(')'),
        "cut mid-sentence: {kept:?}"
    );
    assert_eq!(output.details["truncated"], true);
    assert!(output.details["totalChars"].as_u64().unwrap() > 900);
}

#[tokio::test]
async fn each_page_of_a_batch_has_its_own_budget_and_the_result_names_the_cuts() {
    let server = FixtureServer::start().await;
    let s = setup(Some(ALLOW));
    let urls = vec![
        server.url("/news"),
        server.url("/docs"),
        server.url("/data.json"),
    ];
    let output = call(
        &s.module,
        "web_fetch_batch",
        json!({"urls": urls, "maxChars": 900}),
    )
    .await
    .unwrap();
    let items = output.details["items"].as_array().unwrap();
    // As much of each page as web_fetch with the same maxChars gives (at least 900 characters
    // less the note), not a third of 900.
    for item in items {
        let (shown, total) = (
            item["shownChars"].as_u64().unwrap(),
            item["totalChars"].as_u64().unwrap(),
        );
        assert!(shown >= total.min(750), "{item}");
        assert_eq!(item["truncated"], shown < total, "{item}");
    }
    let shown = text(&output);
    let summary = shown.lines().nth(1).unwrap();
    assert!(
        summary.starts_with("Cut to fit (each page has maxChars = 900 of its own): [1/3] "),
        "{shown}"
    );
    for (index, item) in items.iter().enumerate() {
        let named = summary.contains(&format!("[{}/3]", index + 1));
        assert_eq!(named, item["truncated"] == true, "{summary}");
    }
}

#[tokio::test]
async fn a_batch_keeps_input_order_isolates_failures_and_bounds_its_pool() {
    let server = FixtureServer::start().await;
    let s = setup(Some(ALLOW));
    let urls = vec![
        server.url("/news"),
        server.url("/status/404"),
        "gopher://old.example/".to_owned(),
        server.url("/docs"),
        server.url("/data.json"),
    ];
    let output = call(&s.module, "web_fetch_batch", json!({"urls": urls}))
        .await
        .unwrap();
    assert_eq!(
        (
            &output.details["total"],
            &output.details["succeeded"],
            &output.details["failed"]
        ),
        (&json!(5), &json!(3), &json!(2))
    );
    let items = output.details["items"].as_array().unwrap();
    let order: Vec<&str> = items
        .iter()
        .map(|item| item["url"].as_str().unwrap())
        .collect();
    assert_eq!(order, urls.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(items[1]["error"]["code"], "http_status");
    assert_eq!(items[2]["error"]["code"], "unsupported_protocol");
    let shown = text(&output);
    assert!(
        shown.starts_with("# Batch fetch: 5 URLs · 3 succeeded · 2 failed\n"),
        "{shown}"
    );
    let positions: Vec<usize> = (1..=5)
        .map(|i| shown.find(&format!("## [{i}/5]")).unwrap())
        .collect();
    assert!(
        positions.windows(2).all(|pair| pair[0] < pair[1]),
        "{shown}"
    );
    // The whole content, not the original's 500-character previews.
    assert!(shown.contains("The project cost £14 million"), "{shown}");
    assert!(shown.contains("\"station\": \"Pier Head\""), "{shown}");

    // At most `concurrency` requests in flight.
    let held: Vec<String> = (0..6).map(|i| server.url(&format!("/hold/{i}"))).collect();
    let output = call(
        &s.module,
        "web_fetch_batch",
        json!({"urls": held, "concurrency": HOLD_UNTIL}),
    )
    .await
    .unwrap();
    assert_eq!(output.details["succeeded"], 6);
    assert_eq!(server.max_in_flight(), HOLD_UNTIL);
    let titles: Vec<&str> = output.details["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        ["Item 0", "Item 1", "Item 2", "Item 3", "Item 4", "Item 5"]
    );
}

#[tokio::test]
async fn the_cache_serves_repeat_fetches_until_cleared() {
    let server = FixtureServer::start().await;
    let s = setup(Some(ALLOW));
    let url = server.url("/counter");
    let first = fetch_ok(&s.module, json!({"url": url})).await;
    let second = fetch_ok(&s.module, json!({"url": url, "maxChars": 5000})).await;
    assert_eq!(
        server.hits("/counter"),
        1,
        "the second fetch came from the cache"
    );
    assert_eq!(
        (
            first.details["cached"].as_bool(),
            second.details["cached"].as_bool()
        ),
        (Some(false), Some(true))
    );
    assert_eq!(text(&first), text(&second));
    // The key holds the options that change the content.
    fetch_ok(&s.module, json!({"url": url, "format": "text"})).await;
    assert_eq!(server.hits("/counter"), 2);
    let entries = std::fs::read_dir(&s.cache_dir).unwrap().count();
    assert_eq!(entries, 2, "one file per URL and options");

    let commands = s.module.commands();
    let clear = commands
        .iter()
        .find(|command| command.spec.name == "unipi:web-cache-clear")
        .expect("the cache-clear command");
    let reply = clear
        .run(CommandCall {
            agent: AgentId::main(),
            name: "unipi:web-cache-clear".to_owned(),
            args: String::new(),
        })
        .await;
    match reply {
        CommandReply::Notify { message, .. } => {
            assert!(
                message.starts_with("Web cache cleared: 2 entries removed ("),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read_dir(&s.cache_dir).unwrap().count(), 0);
    let again = fetch_ok(&s.module, json!({"url": url})).await;
    assert_eq!(again.details["cached"], false);
    assert_eq!(server.hits("/counter"), 3);
    assert!(
        text(&again).contains("counter page, request 3"),
        "{}",
        text(&again)
    );
}

#[tokio::test]
async fn loopback_is_refused_without_the_config_switch() {
    let server = FixtureServer::start().await;
    // No web.json at all, then one that sets other keys: the guard is on by default.
    for config in [
        None,
        Some(r#"{ "maxChars": 1000 }"#),
        Some(r#"{ "allowPrivateNetwork": false }"#),
    ] {
        let s = setup(config);
        let port = server.addr.port();
        let cases = [
            // An IP literal: refused before any request.
            (
                format!("http://127.0.0.1:{port}/news"),
                "validation",
                "127.0.0.1 is a private",
            ),
            (
                format!("http://[::ffff:127.0.0.1]:{port}/news"),
                "validation",
                "is a private",
            ),
            // A name: refused where it resolves (localhost -> 127.0.0.1 / ::1).
            (
                format!("http://localhost:{port}/news"),
                "connecting",
                "localhost (which resolves to",
            ),
        ];
        for (url, phase, words) in cases {
            let error = fetch_err(&s.module, json!({"url": url})).await;
            let typed = &error.details["error"];
            assert_eq!(typed["code"], "blocked_address", "{url}: {}", error.message);
            assert_eq!(typed["phase"], phase, "{url}: {}", error.message);
            assert_eq!(typed["retryable"], false);
            assert!(error.message.contains(words), "{url}: {}", error.message);
            assert!(
                error.message.contains("allowPrivateNetwork"),
                "{}",
                error.message
            );
        }
        // The batch refuses each one in its place.
        let output = call(
            &s.module,
            "web_fetch_batch",
            json!({"urls": [format!("http://localhost:{port}/docs")]}),
        )
        .await
        .unwrap();
        assert_eq!(
            output.details["items"][0]["error"]["code"],
            "blocked_address"
        );
    }
    assert_eq!(
        server.total_hits(),
        0,
        "nothing reached the loopback server"
    );
    // The same URLs with the switch on.
    let s = setup(Some(ALLOW));
    fetch_ok(&s.module, json!({"url": server.url("/news")})).await;
    fetch_ok(
        &s.module,
        json!({"url": format!("http://localhost:{}/news", server.addr.port())}),
    )
    .await;
    assert_eq!(server.hits("/news"), 2);
}

/// web.json is followed while the workbench runs: switching `allowPrivateNetwork` on in the
/// workspace lets the next fetch through, the refusal before it asked for exactly that, and a
/// file that switches it off again is named by the next refusal (never "set the key" when a
/// file sets it). The other keys follow too (`maxChars`, `userAgent`).
#[tokio::test]
async fn an_edit_of_web_json_takes_effect_at_the_next_fetch() {
    let server = FixtureServer::start().await;
    let s = setup(None);
    let url = server.url("/news");
    let refusal = fetch_err(&s.module, json!({"url": url})).await;
    assert!(
        refusal.message.contains(
            "set \"allowPrivateNetwork\": true in ~/.unipi/config/web.json or the workspace's"
        ),
        "{}",
        refusal.message
    );

    write_config(
        &s.workspace,
        r#"{ "allowPrivateNetwork": true, "maxChars": 600 }"#,
    );
    let output = fetch_ok(&s.module, json!({"url": url})).await;
    assert!(output.details["shownChars"].as_u64().unwrap() < 600);
    assert_eq!(
        output.details["truncated"], true,
        "maxChars 600 is in force"
    );
    assert_eq!(server.hits("/news"), 1);

    // The home file says yes, the workspace file (which wins) no: the refusal names it, and
    // the page cached while it was allowed is not served either.
    write_config(&s.home, r#"{ "allowPrivateNetwork": true }"#);
    write_config(&s.workspace, r#"{ "allowPrivateNetwork": false }"#);
    let refusal = fetch_err(&s.module, json!({"url": url})).await;
    let workspace_file = s.workspace.join(WEB_CONFIG_FILE);
    assert!(
        refusal.message.ends_with(&format!(
            "({} sets \"allowPrivateNetwork\": false; set it to true there to allow it) \
             [code: blocked_address, phase: validation, retryable: no]",
            workspace_file.display()
        )),
        "{}",
        refusal.message
    );
    assert!(!refusal.message.contains("~/.unipi"), "{}", refusal.message);
    assert_eq!(server.hits("/news"), 1);

    // Removing the workspace file leaves the home file's yes, and a new user agent.
    std::fs::remove_file(&workspace_file).unwrap();
    write_config(
        &s.home,
        r#"{ "allowPrivateNetwork": true, "userAgent": "live-reload-test/1" }"#,
    );
    let headers = fetch_ok(&s.module, json!({"url": server.url("/headers")})).await;
    assert!(
        text(&headers).contains("\"user-agent\": \"live-reload-test/1\""),
        "{}",
        text(&headers)
    );
}

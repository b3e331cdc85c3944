//! Web smart-fetch benchmark, on the fixtures of `tests/fixtures/web/`:
//!
//! - **extraction**: `extract_html` (parse, meta-refresh check, readability, metadata, markdown) on
//!   each fixture page, and on a large page (the news article's paragraphs repeated to ~120 KB), N
//!   rounds each; p50/p90/max per page.
//! - **batch throughput**: `web_fetch_batch`-style fetches (`batch::fetch_all`, no cache) of M URLs
//!   from the loopback fixture server (`tests/support/web.rs`), the five HTML fixtures in turn, at
//!   concurrency 1 and 8; pages per second end to end (request, body, extraction).
//!
//! Figures are printed, never asserted. Run with `cargo bench --bench web`
//! (`UNIPI_BENCH_ROUNDS` overrides N = 200, `UNIPI_BENCH_PAGES` M = 400). Under
//! `cargo test --all-targets` (no `--bench` argument) it does a short smoke pass instead.

mod support;
#[path = "../tests/support/web.rs"]
mod web_fixtures;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use support::{Stats, ms};
use unipi_tui::web::batch;
use unipi_tui::web::extract::{HtmlOutcome, extract_html};
use unipi_tui::web::fetch::{Fetcher, FetcherSettings};
use unipi_tui::web::guard::AddressPolicy;
use unipi_tui::web::page::{FetchOptions, Format};
use web_fixtures::{FixtureServer, fixture};

const PAGES: [(&str, &str); 5] = [
    ("/news", "news-article.html"),
    ("/docs", "docs-page.html"),
    ("/forum", "forum-thread.html"),
    ("/main-only", "main-only.html"),
    ("/links", "link-list.html"),
];

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

fn main() -> ExitCode {
    // cargo passes `--bench` under `cargo bench`; `cargo test --all-targets` runs us without it.
    let full = std::env::args().any(|arg| arg == "--bench");
    let (rounds, pages) = if full {
        (
            env_or("UNIPI_BENCH_ROUNDS", 200),
            env_or("UNIPI_BENCH_PAGES", 400),
        )
    } else {
        (3, 10)
    };
    let result = extraction(rounds).and_then(|()| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("cannot build the tokio runtime")?
            .block_on(throughput(pages))
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("web bench: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn extraction(rounds: usize) -> Result<()> {
    let url = reqwest::Url::parse("https://news.example/2025/03/tidal")?;
    let news = String::from_utf8(fixture("news-article.html"))?;
    // The article's paragraphs repeated: a long read of about 120 KB.
    let start = news
        .find("<p>The first")
        .context("the article's first paragraph")?;
    let end = news.find("</article>").context("the article's end")?;
    let large = format!(
        "{}{}{}",
        &news[..start],
        news[start..end].repeat(60),
        &news[end..]
    );
    let mut inputs: Vec<(String, String)> = PAGES
        .iter()
        .map(|(_, file)| Ok(((*file).to_owned(), String::from_utf8(fixture(file))?)))
        .collect::<Result<_>>()?;
    inputs.push(("news-article ×60 (large)".to_owned(), large));
    println!("Extraction to markdown, {rounds} rounds per page");
    println!(
        "  {:<28} {:>9} {:>8} {:>8} {:>8}",
        "page", "size", "p50", "p90", "max"
    );
    for (name, html) in &inputs {
        let mut samples = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let started = Instant::now();
            let outcome = extract_html(html, &url, Format::Markdown, true);
            samples.push(started.elapsed());
            match outcome {
                HtmlOutcome::Content(extracted) if !extracted.content.is_empty() => {}
                other => bail!("{name}: nothing extracted: {other:?}"),
            }
        }
        let stats = Stats::of(&samples);
        println!(
            "  {name:<28} {:>6} KB {:>8} {:>8} {:>8}   (ms)",
            html.len() / 1024,
            ms(stats.p50),
            ms(stats.p90),
            ms(stats.max)
        );
    }
    Ok(())
}

async fn throughput(pages: usize) -> Result<()> {
    let server = FixtureServer::start().await;
    let fetcher = Fetcher::new(FetcherSettings {
        policy: AddressPolicy::new(true),
        user_agent: None,
        cache: None,
    });
    let options = FetchOptions {
        format: Format::Markdown,
        include_images: true,
        timeout: Duration::from_secs(30),
    };
    let urls: Vec<String> = (0..pages)
        .map(|i| server.url(&format!("{}?n={i}", PAGES[i % PAGES.len()].0)))
        .collect();
    println!("\nBatch fetch from the loopback fixture server, {pages} HTML pages, no cache");
    for concurrency in [1, 8] {
        let started = Instant::now();
        let results = batch::fetch_all(&fetcher, &urls, &options, concurrency, |_, _| {}).await;
        let elapsed = started.elapsed();
        let failed = results.iter().filter(|result| result.is_err()).count();
        if failed > 0 {
            bail!("{failed} of {pages} fetches failed");
        }
        println!(
            "  concurrency {concurrency}: {:.1} s, {:.0} pages/s, {} ms per page",
            elapsed.as_secs_f64(),
            pages as f64 / elapsed.as_secs_f64(),
            ms(elapsed / u32::try_from(pages.max(1)).unwrap_or(1))
        );
    }
    Ok(())
}

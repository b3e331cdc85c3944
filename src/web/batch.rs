//! Many URLs at once: a bounded pool of at most `concurrency` fetches in flight (a new one
//! starts as one ends), each result written to its URL's place so the answer is in input
//! order, and a failed URL is that item's error — never the batch's.

use futures_util::StreamExt as _;

use super::error::FetchError;
use super::fetch::{Fetched, Fetcher};
use super::page::FetchOptions;

/// Every URL's result, in input order. `on_done(done, total)` is called as each one ends.
pub async fn fetch_all(
    fetcher: &Fetcher,
    urls: &[String],
    options: &FetchOptions,
    concurrency: usize,
    mut on_done: impl FnMut(usize, usize),
) -> Vec<Result<Fetched, FetchError>> {
    let total = urls.len();
    let mut results: Vec<Option<Result<Fetched, FetchError>>> = vec![None; total];
    // Each fetch owns what it uses: the pool's futures borrow nothing from this frame.
    let mut finished = futures_util::stream::iter(urls.iter().cloned().enumerate())
        .map(|(index, url)| {
            let fetcher = fetcher.clone();
            let options = options.clone();
            async move { (index, fetcher.fetch(&url, &options).await) }
        })
        .buffer_unordered(concurrency.max(1));
    let mut done = 0;
    while let Some((index, result)) = finished.next().await {
        results[index] = Some(result);
        done += 1;
        on_done(done, total);
    }
    // Every index was filled: the stream yields exactly one result per URL.
    results.into_iter().flatten().collect()
}

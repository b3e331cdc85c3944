//! Search results on disk, beside the fetched pages and like them (`web/cache.rs`): one JSON
//! file per query, named `search-<SHA-256>.json` of the query, the count and the providers in
//! the order they would be asked (names and addresses, never keys), served while younger than
//! `cacheTtlSeconds`, written crash-safe; an expired or unreadable entry goes when it is looked
//! up, and `/unipi:web-cache-clear` removes them with the pages.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::SearchResult;
use super::provider::Provider;
use crate::sys::now_ms;
use crate::web::cache::write_entry;

/// A version in every key: a change to the stored shape changes every name.
const KEY_VERSION: u32 = 1;

#[derive(Debug, Clone)]
pub(crate) struct SearchCache {
    dir: PathBuf,
    ttl: Duration,
}

/// What is kept of a search: what it found and who answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Cached {
    pub results: Vec<SearchResult>,
    pub provider: String,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    query: String,
    stored_at_ms: u64,
    ttl_ms: u64,
    found: Cached,
}

impl SearchCache {
    pub(crate) fn new(dir: PathBuf, ttl: Duration) -> Self {
        SearchCache { dir, ttl }
    }

    fn path(&self, query: &str, count: usize, providers: &[Provider]) -> PathBuf {
        let order: Vec<(&str, &str)> = providers
            .iter()
            .map(|provider| (provider.name(), provider.url.as_str()))
            .collect();
        let key = serde_json::json!({
            "v": KEY_VERSION,
            "query": query,
            "count": count,
            "providers": order,
        });
        let digest = Sha256::digest(key.to_string().as_bytes());
        let name: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        self.dir.join(format!("search-{name}.json"))
    }

    /// The results kept for this search, if they are fresh.
    pub(crate) async fn get(
        &self,
        query: &str,
        count: usize,
        providers: &[Provider],
    ) -> Option<Cached> {
        let path = self.path(query, count, providers);
        let text = tokio::fs::read(&path).await.ok()?;
        match serde_json::from_slice::<Entry>(&text) {
            Ok(entry)
                if entry.query == query
                    && now_ms() < entry.stored_at_ms.saturating_add(entry.ttl_ms) =>
            {
                Some(entry.found)
            }
            Ok(_) | Err(_) => {
                // Expired, or not ours to read: it will not be served, so it goes.
                let _ = tokio::fs::remove_file(&path).await;
                None
            }
        }
    }

    /// Keeps `found` (a failure is logged: it only costs the next search a request).
    pub(crate) async fn put(
        &self,
        query: &str,
        count: usize,
        providers: &[Provider],
        found: Cached,
    ) {
        let path = self.path(query, count, providers);
        let entry = Entry {
            query: query.to_owned(),
            stored_at_ms: now_ms(),
            ttl_ms: u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX),
            found,
        };
        write_entry(self.dir.clone(), path, entry).await;
    }
}

//! The response cache on disk: one JSON file per fetched page, named by the SHA-256 of the URL
//! and the options that change the content (format, images), served while younger than the TTL
//! (an hour by default). Only successful fetches are kept; the full content is stored and
//! truncated when shown, so `maxChars` is not part of the key. Files are written crash-safe
//! (temp, fsync, rename, directory fsync), so a half-written entry never exists; an entry that
//! is expired or cannot be read is removed when it is looked up. `/unipi:web-cache-clear`
//! removes them all.
//!
//! A page fetched while `allowPrivateNetwork` was on is kept under a key of its own, so switching
//! it off (at run time: `web.json` is followed) also stops serving what the guard now refuses.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::page::{FetchOptions, Page};
use crate::sys::now_ms;

/// A version in every key: a change to the stored shape changes every name.
const KEY_VERSION: u32 = 1;

#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
    ttl: Duration,
    /// Fetches may reach private addresses: entries are kept apart from the guarded ones.
    private: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    url: String,
    stored_at_ms: u64,
    ttl_ms: u64,
    page: Page,
}

/// What a clear removed, or what the cache holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cleared {
    pub entries: usize,
    pub bytes: u64,
}

impl Cache {
    pub fn new(dir: PathBuf, ttl: Duration) -> Self {
        Cache {
            dir,
            ttl,
            private: false,
        }
    }

    /// The cache of a fetcher that may reach private addresses (its entries are not served to
    /// one that may not).
    pub(crate) fn reaching_private(self, private: bool) -> Self {
        Cache { private, ..self }
    }

    /// The default directory: `unipi-tui/web` in the user's cache directory.
    pub(crate) fn default_dir(home: Option<&Path>) -> Option<PathBuf> {
        dirs::cache_dir()
            .or_else(|| home.map(|home| home.join(".cache")))
            .map(|dir| dir.join("unipi-tui").join("web"))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, url: &str, options: &FetchOptions) -> PathBuf {
        let mut key = serde_json::json!({
            "v": KEY_VERSION,
            "url": url,
            "format": options.format,
            "images": options.include_images,
        });
        if self.private {
            key["private"] = true.into();
        }
        let digest = Sha256::digest(key.to_string().as_bytes());
        let name: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        self.dir.join(format!("{name}.json"))
    }

    /// The cached page for `url` with `options`, if one is fresh.
    pub async fn get(&self, url: &str, options: &FetchOptions) -> Option<Page> {
        let path = self.path(url, options);
        let text = tokio::fs::read(&path).await.ok()?;
        let entry = match serde_json::from_slice::<Entry>(&text) {
            Ok(entry)
                if entry.url == url
                    && now_ms() < entry.stored_at_ms.saturating_add(entry.ttl_ms) =>
            {
                entry
            }
            Ok(_) | Err(_) => {
                // Expired, or not ours to read: it will not be served, so it goes.
                let _ = tokio::fs::remove_file(&path).await;
                return None;
            }
        };
        Some(entry.page)
    }

    /// Keeps `page`; a failure only costs the next fetch a request, so it is logged, not raised.
    pub async fn put(&self, url: &str, options: &FetchOptions, page: &Page) {
        let path = self.path(url, options);
        let entry = Entry {
            url: url.to_owned(),
            stored_at_ms: now_ms(),
            ttl_ms: u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX),
            page: page.clone(),
        };
        write_entry(self.dir.clone(), path, entry).await;
    }

    /// Removes every entry (and leftovers of interrupted writes).
    pub async fn clear(&self) -> anyhow::Result<Cleared> {
        walk(self.dir.clone(), true).await
    }
}

/// The entries in `dir` and the bytes they take (the dashboard's figures); nothing is removed.
pub(crate) async fn stored(dir: PathBuf) -> anyhow::Result<Cleared> {
    walk(dir, false).await
}

/// Counts the entries (`*.json`) and the bytes of the cache's files in `dir` (leftovers of
/// interrupted writes, `*.tmp`, among them), removing each when `remove` says so; off the runtime.
async fn walk(dir: PathBuf, remove: bool) -> anyhow::Result<Cleared> {
    tokio::task::spawn_blocking(move || {
        let mut found = Cleared::default();
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(found),
            Err(err) => return Err(err).with_context(|| format!("reading {}", dir.display())),
        };
        for entry in entries {
            let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
            let path = entry.path();
            let ours = path
                .extension()
                .is_some_and(|ext| ext == "json" || ext == "tmp");
            if !ours || !entry.file_type().is_ok_and(|kind| kind.is_file()) {
                continue;
            }
            let size = entry.metadata().map(|meta| meta.len()).unwrap_or(0);
            if remove {
                std::fs::remove_file(&path)
                    .with_context(|| format!("removing {}", path.display()))?;
            }
            if path.extension().is_some_and(|ext| ext == "json") {
                found.entries += 1;
            }
            found.bytes += size;
        }
        Ok(found)
    })
    .await
    .context("the cache walker failed")?
}

/// Writes `entry` as JSON to `path` in `dir`, crash-safe, off the runtime; a failure only costs
/// the next lookup a request, so it is logged, not raised (the pages' and the searches' entries).
pub(crate) async fn write_entry(
    dir: PathBuf,
    path: PathBuf,
    entry: impl Serialize + Send + 'static,
) {
    let written = tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        let bytes = serde_json::to_vec(&entry).context("encoding the cache entry")?;
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        crate::sys::write_atomic(&path, &bytes)
            .with_context(|| format!("writing {}", path.display()))
    })
    .await;
    match written {
        Ok(Ok(())) => {}
        Ok(Err(err)) => tracing::warn!("web cache: {err:#}"),
        Err(err) => tracing::warn!("web cache: the writer failed: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::page::{ContentKind, Format, PageMeta};

    fn page(content: &str) -> Page {
        Page {
            url: "http://a.example/".into(),
            final_url: "http://a.example/".into(),
            meta: PageMeta {
                title: Some("A".into()),
                ..PageMeta::default()
            },
            mime_type: "text/html".into(),
            kind: ContentKind::Markdown,
            extraction: Some("readability".into()),
            content: content.into(),
        }
    }

    fn options(format: Format) -> FetchOptions {
        FetchOptions {
            format,
            include_images: true,
            timeout: Duration::from_secs(1),
        }
    }

    #[tokio::test]
    async fn entries_are_keyed_by_url_and_options_and_expire() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path().join("web"), Duration::from_secs(60));
        let url = "http://a.example/";
        assert_eq!(cache.get(url, &options(Format::Markdown)).await, None);
        cache
            .put(url, &options(Format::Markdown), &page("md"))
            .await;
        cache.put(url, &options(Format::Text), &page("text")).await;
        for (format, content) in [(Format::Markdown, "md"), (Format::Text, "text")] {
            let cached = cache.get(url, &options(format)).await.unwrap();
            assert_eq!(cached.content, content, "{format:?}");
        }
        assert_eq!(
            cache.get("http://b.example/", &options(Format::Text)).await,
            None
        );
        let no_images = FetchOptions {
            include_images: false,
            ..options(Format::Text)
        };
        assert_eq!(cache.get(url, &no_images).await, None);

        let stale = Cache::new(dir.path().join("web"), Duration::ZERO);
        stale.put(url, &options(Format::Html), &page("old")).await;
        assert_eq!(stale.get(url, &options(Format::Html)).await, None);
        assert!(
            !stale.path(url, &options(Format::Html)).exists(),
            "an expired entry is removed"
        );

        let cleared = cache.clear().await.unwrap();
        assert_eq!(cleared.entries, 2);
        assert!(cleared.bytes > 0);
        assert_eq!(cache.get(url, &options(Format::Markdown)).await, None);
        assert_eq!(cache.clear().await.unwrap(), Cleared::default());
        // A directory that was never created clears to nothing.
        let never = Cache::new(dir.path().join("never"), Duration::from_secs(1));
        assert_eq!(never.clear().await.unwrap(), Cleared::default());
    }

    #[tokio::test]
    async fn an_unreadable_entry_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path().to_path_buf(), Duration::from_secs(60));
        let path = cache.path("http://a.example/", &options(Format::Markdown));
        std::fs::write(&path, "{ not json").unwrap();
        assert_eq!(
            cache
                .get("http://a.example/", &options(Format::Markdown))
                .await,
            None
        );
        assert!(!path.exists());
    }
}

//! What a fetch is asked for ([`FetchOptions`]) and what it gives back ([`Page`]): the content in
//! full (truncation to `maxChars` happens when it is shown, so one cached page serves every
//! `maxChars`) with the page's metadata.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The form the content of an HTML page is given in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    #[default]
    Markdown,
    Text,
    Html,
}

impl Format {
    pub fn parse(text: &str) -> Option<Format> {
        match text.trim().to_ascii_lowercase().as_str() {
            "markdown" | "md" => Some(Format::Markdown),
            "text" | "txt" | "plain" => Some(Format::Text),
            "html" => Some(Format::Html),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Markdown => "markdown",
            Format::Text => "text",
            Format::Html => "html",
        }
    }
}

/// How one URL is fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchOptions {
    pub format: Format,
    /// Keep images (`![alt](src)` in markdown); off removes them before extraction.
    pub include_images: bool,
    /// For the whole fetch, redirects included.
    pub timeout: Duration,
}

/// What the content is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ContentKind {
    Markdown,
    Text,
    Html,
    /// A JSON body, pretty-printed.
    Json,
    /// A body that is not text: the content is a placeholder naming its type.
    Binary,
}

/// What a page says about itself, each part when it was found.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct PageMeta {
    pub title: Option<String>,
    pub author: Option<String>,
    pub published: Option<String>,
    pub site: Option<String>,
    pub language: Option<String>,
}

impl PageMeta {
    /// Each part of `self`, or `fallback`'s where `self` has none.
    pub(crate) fn or(self, fallback: PageMeta) -> PageMeta {
        PageMeta {
            title: self.title.or(fallback.title),
            author: self.author.or(fallback.author),
            published: self.published.or(fallback.published),
            site: self.site.or(fallback.site),
            language: self.language.or(fallback.language),
        }
    }
}

/// One fetched page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    /// The URL asked for.
    pub url: String,
    /// Where the content came from, after redirects and meta refreshes.
    pub final_url: String,
    #[serde(flatten)]
    pub(crate) meta: PageMeta,
    /// The MIME type the server gave (or the one sniffed from the body when it gave none).
    pub mime_type: String,
    pub(crate) kind: ContentKind,
    /// How the content was found: `readability`, `fallback: main`, … (HTML only).
    pub extraction: Option<String>,
    /// The content, in full.
    pub content: String,
}

impl Page {
    /// Words in the content (runs of non-whitespace).
    pub(crate) fn word_count(&self) -> usize {
        self.content.split_whitespace().count()
    }
}

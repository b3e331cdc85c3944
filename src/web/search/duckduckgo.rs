//! DuckDuckGo's HTML endpoint (`html.duckduckgo.com/html/`), the provider that needs no key: a
//! page whose results are `.result` blocks, each a `.result__a` link (its address either the
//! result's or DuckDuckGo's redirect `//duckduckgo.com/l/?uddg=<the result's, encoded>`) and a
//! `.result__snippet`; ads are `.result--ad` and are left out.

use dom_query::Document;
use reqwest::Url;

use super::SearchResult;

/// The results on a DuckDuckGo HTML page, in its order.
pub(super) fn results(html: &str, provider: &str) -> Vec<SearchResult> {
    let document = Document::from(html);
    let mut found = Vec::new();
    for block in document.select(".result").iter() {
        if block.has_class("result--ad") {
            continue;
        }
        let link = block.select("a.result__a");
        let Some(href) = link.attr("href") else {
            continue;
        };
        let Some(url) = target(&href) else {
            continue;
        };
        found.push(SearchResult {
            title: plain(&link.text()),
            url,
            snippet: plain(&block.select(".result__snippet").text()),
            provider: provider.to_owned(),
        });
    }
    found
}

/// The result's address: the `uddg` of a redirect link, or the link itself.
fn target(href: &str) -> Option<String> {
    let absolute = if href.starts_with("//") {
        format!("https:{href}")
    } else {
        href.to_owned()
    };
    let url = Url::parse(&absolute).ok()?;
    let redirected = url
        .query_pairs()
        .find(|(key, _)| key == "uddg")
        .map(|(_, value)| value.into_owned());
    let url = match redirected {
        Some(target) => Url::parse(&target).ok()?,
        None => url,
    };
    matches!(url.scheme(), "http" | "https").then(|| url.to_string())
}

/// `text` without markup (Brave marks matches with `<strong>`) or entities, on one line.
pub(super) fn plain(text: &str) -> String {
    let text = if text.contains('<') || text.contains('&') {
        dom_query::Document::from(format!("<body>{text}</body>"))
            .select("body")
            .text()
            .to_string()
    } else {
        text.to_owned()
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

//! An HTML page to its main content: a meta refresh is reported (the fetch follows it like a
//! redirect); otherwise the page furniture is taken out ([`clean`]: bylines, share tools,
//! newsletter lines, related lists, galleries, …) and `dom_smoothie` (a port of Mozilla's
//! readability.js) picks the article,
//! and when it finds nothing — or gives up on the page — a fallback chain takes the first of
//! `article`, `main`, `[role=main]`, `.content`, `#content` that has text, else the body without
//! its navigation, header, footer and asides. Metadata comes from readability (JSON-LD, Open
//! Graph, meta tags) with the original's DOM fallbacks (`<title>`, `og:title`, `meta[name=author]`,
//! `og:site_name`, `html[lang]`) and a few for the publication date.
//!
//! Pure and CPU-bound: the fetch runs it on a blocking thread.

use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};

use dom_query::{Document, NodeRef};
use dom_smoothie::{Config, Readability, TextMode};
use reqwest::Url;

use super::page::{Format, PageMeta};

mod clean;

/// What an HTML document is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HtmlOutcome {
    /// A `<meta http-equiv="refresh">` sends the reader to this absolute URL.
    Refresh(Url),
    Content(Extracted),
}

/// The main content of a page and its metadata.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Extracted {
    pub content: String,
    /// `readability`, or `fallback: <selector>`.
    pub method: String,
    pub(crate) meta: PageMeta,
}

/// The containers tried, in order, when readability finds nothing.
pub(crate) const FALLBACK_CHAIN: [&str; 5] =
    ["article", "main", "[role=main]", ".content", "#content"];

/// Elements that are never content.
const NEVER_CONTENT: &str = "script, style, noscript, template, iframe, object, embed";
/// Page furniture dropped when the whole body is the content.
const FURNITURE: &str = "nav, header, footer, aside, form, [role=navigation], [role=banner], \
                         [role=contentinfo], [aria-hidden=true]";
/// What "no images" removes.
const IMAGES: &str = "img, picture, svg, video, audio, source, canvas";

/// The content of `html`, fetched from `url`, in `format`.
pub fn extract_html(html: &str, url: &Url, format: Format, include_images: bool) -> HtmlOutcome {
    let document = Document::from(html);
    if let Some(target) = meta_refresh(&document, url) {
        return HtmlOutcome::Refresh(target);
    }
    let fallback_meta = dom_metadata(&document);
    let base = base_url(&document, url);
    prepare(&document, &base, include_images);
    let declared = declared_main(&document, format);
    let readable = catch_unwind(AssertUnwindSafe(|| readable(document, url, format)))
        .unwrap_or_else(|_| {
            tracing::warn!("web: readability panicked on {url}; using the fallback chain");
            None
        });
    let mut extracted = match (readable, declared) {
        // Readability took more than the page's own main content: it found no article and
        // kept the page around it (menus, footers). The page's container is the better cut —
        // when it is inside what readability took; a lone `<article>` elsewhere on the page (a
        // related story's teaser in a sidebar) is not the page's content.
        (Some(found), Some((selector, content)))
            if spills_past(&found.content, &content) && mostly_within(&content, &found.content) =>
        {
            Extracted {
                content,
                method: format!("fallback: {selector}"),
                ..found
            }
        }
        (Some(extracted), _) => extracted,
        (None, _) => {
            // Readability changed the document it worked on: start again from the source.
            let document = Document::from(html);
            prepare(&document, &base, include_images);
            fallback(&document, format)
        }
    };
    extracted.meta = extracted.meta.or(fallback_meta);
    extracted.content = tidy(&extracted.content, format);
    HtmlOutcome::Content(extracted)
}

/// Readability's article, or `None` when it found none or only whitespace.
fn readable(document: Document, url: &Url, format: Format) -> Option<Extracted> {
    let config = Config {
        text_mode: match format {
            Format::Markdown | Format::Html => TextMode::Markdown,
            Format::Text => TextMode::Formatted,
        },
        ..Config::default()
    };
    let mut readability = Readability::with_document(document, Some(url.as_str()), Some(config))
        .map_err(|err| tracing::debug!("web: readability refused {url}: {err}"))
        .ok()?;
    let article = readability
        .parse()
        .map_err(|err| tracing::debug!("web: readability found nothing in {url}: {err}"))
        .ok()?;
    if article.text_content.trim().is_empty() {
        return None;
    }
    let content = match format {
        Format::Html => article.content.to_string(),
        Format::Markdown | Format::Text => article.text_content.to_string(),
    };
    Some(Extracted {
        content,
        method: "readability".to_owned(),
        meta: PageMeta {
            title: non_empty(&article.title),
            author: article.byline.as_deref().and_then(non_empty),
            published: article.published_time.as_deref().and_then(non_empty),
            site: article.site_name.as_deref().and_then(non_empty),
            language: article.lang.as_deref().and_then(non_empty),
        },
    })
}

/// The page's one declared main container (a single `article`, `main` or `[role=main]` with
/// text), rendered in `format`, with the selector that found it.
fn declared_main(document: &Document, format: Format) -> Option<(&'static str, String)> {
    FALLBACK_CHAIN[..3].iter().find_map(|&selector| {
        let found = document.select(selector);
        match found.nodes() {
            [node] if !node.text().trim().is_empty() => Some((selector, render(node, format))),
            _ => None,
        }
    })
}

/// Whether readability's content has text the declared main container's has not — at least
/// [`SPILL_WORDS`] words more of some word (a menu, a sign-in link, a footer).
fn spills_past(readable: &str, declared: &str) -> bool {
    let mut counts: HashMap<String, isize> = HashMap::new();
    for word in words(readable) {
        *counts.entry(word).or_insert(0) += 1;
    }
    for word in words(declared) {
        *counts.entry(word).or_insert(0) -= 1;
    }
    let extra: isize = counts.values().filter(|count| **count > 0).sum();
    extra >= SPILL_WORDS
}

/// Words readability may have beyond the declared container before it counts as spilling.
const SPILL_WORDS: isize = 3;

/// Whether most of `part`'s text is in `whole`: the share of its runs of four words that
/// `whole` has too.
fn mostly_within(part: &str, whole: &str) -> bool {
    let runs = |words: &[String]| -> Vec<String> {
        words
            .windows(4.min(words.len()).max(1))
            .map(|run| run.join(" "))
            .collect()
    };
    let whole: HashSet<String> = runs(&words(whole)).into_iter().collect();
    let part = runs(&words(part));
    let shared = part.iter().filter(|run| whole.contains(*run)).count();
    shared * 2 >= part.len()
}

/// The runs of letters and digits of `text`, lower-cased.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The first container of [`FALLBACK_CHAIN`] with text, else the body without its furniture,
/// else all the document's text.
fn fallback(document: &Document, format: Format) -> Extracted {
    document.select(NEVER_CONTENT).remove();
    let has_text = |node: &NodeRef| !node.text().trim().is_empty();
    for selector in FALLBACK_CHAIN {
        let found = document.select(selector);
        if let Some(node) = found.nodes().iter().find(|node| has_text(node)) {
            return Extracted {
                content: render(node, format),
                method: format!("fallback: {selector}"),
                ..Extracted::default()
            };
        }
    }
    document.select(FURNITURE).remove();
    let bodies = document.select("body");
    if let Some(body) = bodies.nodes().iter().find(|node| has_text(node)) {
        return Extracted {
            content: render(body, format),
            method: "fallback: body".to_owned(),
            ..Extracted::default()
        };
    }
    Extracted {
        content: document.root().text().to_string(),
        method: "fallback: document text".to_owned(),
        ..Extracted::default()
    }
}

fn render(node: &NodeRef, format: Format) -> String {
    match format {
        Format::Markdown => node.md(None).to_string(),
        Format::Text => node.formatted_text().to_string(),
        Format::Html => node.html().to_string(),
    }
}

/// Blank runs collapsed to one empty line, trailing spaces and the ends trimmed (markdown and
/// text; HTML is left as it is).
fn tidy(content: &str, format: Format) -> String {
    if format == Format::Html {
        return content.trim().to_owned();
    }
    let mut out = String::with_capacity(content.len());
    let mut blank_run = 0;
    for line in content.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank_run += 1;
            if blank_run > 1 {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}

/// The metadata the DOM gives without readability.
fn dom_metadata(document: &Document) -> PageMeta {
    let meta = |selector: &str| {
        document
            .select(selector)
            .iter()
            .find_map(|node| node.attr("content").as_deref().and_then(non_empty))
    };
    let title = document
        .select("title")
        .iter()
        .find_map(|node| non_empty(&node.text()))
        .or_else(|| meta(r#"meta[property="og:title"]"#));
    let published = meta(r#"meta[property="article:published_time"]"#)
        .or_else(|| meta(r#"meta[name="date"]"#))
        .or_else(|| meta(r#"meta[itemprop="datePublished"]"#))
        .or_else(|| {
            document
                .select("time[datetime]")
                .iter()
                .find_map(|node| node.attr("datetime").as_deref().and_then(non_empty))
        });
    PageMeta {
        title,
        author: meta(r#"meta[name="author"]"#),
        published,
        site: meta(r#"meta[property="og:site_name"]"#),
        language: document
            .select("html[lang]")
            .iter()
            .find_map(|node| node.attr("lang").as_deref().and_then(non_empty)),
    }
}

/// The URL relative links resolve against: the page's `<base href>`, else its own URL.
fn base_url(document: &Document, url: &Url) -> Url {
    document
        .select("base[href]")
        .iter()
        .find_map(|node| node.attr("href"))
        .and_then(|href| url.join(href.trim()).ok())
        .unwrap_or_else(|| url.clone())
}

/// Links and image sources made absolute (the content is read away from its page), and the
/// images removed when they are not wanted.
fn prepare(document: &Document, base: &Url, include_images: bool) {
    if !include_images {
        document.select(IMAGES).remove();
    }
    unplayable_figures(document);
    clean::declutter(document);
    for (selector, attribute) in [("a[href]", "href"), ("img[src]", "src")] {
        for node in document.select(selector).nodes() {
            let Some(value) = node.attr(attribute) else {
                continue;
            };
            let value = value.trim();
            if value.starts_with('#') || value.is_empty() {
                continue;
            }
            if let Ok(absolute) = base.join(value) {
                node.set_attr(attribute, absolute.as_str());
            }
        }
    }
}

/// A `<figure>` with no image whose attributes hold JSON (a video player's
/// `data-playable='{…, "poster": "….jpg"}'`) loses those attributes: readability makes an image
/// of a picture-less figure from any attribute naming an image file, and the address would be
/// the whole JSON text.
fn unplayable_figures(document: &Document) {
    for figure in document.select("figure").nodes() {
        if figure.is("figure:has(img, picture)") {
            continue;
        }
        let json: Vec<String> = figure
            .attrs()
            .iter()
            .filter(|attr| attr.value.trim_start().starts_with(['{', '[']))
            .map(|attr| attr.name.local.to_string())
            .collect();
        for name in json {
            figure.remove_attr(&name);
        }
    }
}

/// The target of a `<meta http-equiv="refresh" content="N; url=…">`, resolved against the
/// document's base URL. A refresh without a URL, or back to the page itself, only reloads it
/// and is not a redirect.
fn meta_refresh(document: &Document, url: &Url) -> Option<Url> {
    let base = base_url(document, url);
    document
        .select("meta[http-equiv]")
        .iter()
        .filter(|node| {
            node.attr("http-equiv")
                .is_some_and(|value| value.trim().eq_ignore_ascii_case("refresh"))
        })
        .filter_map(|node| node.attr("content"))
        .filter_map(|content| refresh_target(&content).and_then(|t| base.join(t).ok()))
        .find(|target| target.as_str() != url.as_str())
}

/// The URL part of a refresh's `content` (`5; url='/next'`, `0;URL=next.html`, `3, /next`).
fn refresh_target(content: &str) -> Option<&str> {
    let rest = content
        .trim_start()
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
        .trim_start();
    let rest = rest.strip_prefix([';', ',']).unwrap_or(rest).trim_start();
    let rest = match rest.get(..3) {
        Some(word) if word.eq_ignore_ascii_case("url") => {
            match rest[3..].trim_start().strip_prefix('=') {
                Some(after) => after.trim_start(),
                None => rest,
            }
        }
        _ => rest,
    };
    let target = match rest.chars().next() {
        Some(quote @ ('"' | '\'')) => rest[1..].split(quote).next().unwrap_or_default(),
        _ => rest.trim_end(),
    };
    (!target.is_empty()).then_some(target)
}

fn non_empty(text: &str) -> Option<String> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_table::check_table;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn refresh_targets_in_the_forms_pages_write_them() {
        let cases = [
            ("0; url=/next", Some("/next")),
            ("0;URL='next.html'", Some("next.html")),
            (
                "5 ; Url = \"http://a.example/x y\"",
                Some("http://a.example/x y"),
            ),
            ("3, /comma", Some("/comma")),
            ("0.5; url=/half", Some("/half")),
            ("1;/bare", Some("/bare")),
            ("30", None),
            ("", None),
            ("0; url=", None),
        ];
        check_table(cases, |content| refresh_target(content));
    }

    #[test]
    fn a_meta_refresh_is_resolved_against_the_page_and_a_reload_is_not_one() {
        let page = url("http://site.example/a/b.html");
        let outcome = |html: &str| extract_html(html, &page, Format::Markdown, true);
        assert_eq!(
            outcome(r#"<meta http-equiv="Refresh" content="0; url=../c/d.html">"#),
            HtmlOutcome::Refresh(url("http://site.example/c/d.html"))
        );
        assert_eq!(
            outcome(
                r#"<base href="http://other.example/x/"><meta http-equiv="refresh" content="0;url=y">"#
            ),
            HtmlOutcome::Refresh(url("http://other.example/x/y"))
        );
        for reload in [
            r#"<meta http-equiv="refresh" content="300"><p>Live scores</p>"#,
            r#"<meta http-equiv="refresh" content="0; url=b.html"><p>Same page</p>"#,
        ] {
            assert!(
                matches!(outcome(reload), HtmlOutcome::Content(_)),
                "{reload}"
            );
        }
    }

    #[test]
    fn without_an_article_the_fallback_chain_takes_the_first_container_with_text() {
        let cases = [
            (
                "<body><nav>Home About</nav><div class=content><p>Short note.</p></div>\
                 <main><p>Main text.</p></main></body>",
                "fallback: main",
                "Main text.",
            ),
            (
                "<body><div id=content><p>Only here.</p></div></body>",
                "fallback: #content",
                "Only here.",
            ),
            (
                "<body><nav><a href=/>Home</a></nav><p>Body text.</p><footer>© Site</footer></body>",
                "fallback: body",
                "Body text.",
            ),
        ];
        for (html, method, want) in cases {
            let document = Document::from(html);
            let extracted = fallback(&document, Format::Markdown);
            assert_eq!(extracted.method, method, "{html}");
            assert_eq!(tidy(&extracted.content, Format::Markdown), want, "{html}");
        }
    }

    #[test]
    fn dom_metadata_uses_the_originals_fallbacks() {
        let html = r#"<html lang="de"><head>
            <meta property="og:title" content="OG title">
            <meta name="author" content="Ada  Lovelace">
            <meta property="og:site_name" content="The Site">
            <meta property="article:published_time" content="2024-05-01T10:00:00Z">
            </head><body><p>x</p></body></html>"#;
        let meta = dom_metadata(&Document::from(html));
        assert_eq!(meta.title.as_deref(), Some("OG title"));
        assert_eq!(meta.author.as_deref(), Some("Ada Lovelace"));
        assert_eq!(meta.site.as_deref(), Some("The Site"));
        assert_eq!(meta.published.as_deref(), Some("2024-05-01T10:00:00Z"));
        assert_eq!(meta.language.as_deref(), Some("de"));
        let titled = dom_metadata(&Document::from("<title> Doc title </title>"));
        assert_eq!(titled.title.as_deref(), Some("Doc title"));
    }

    #[test]
    fn images_are_kept_or_removed() {
        let page = url("http://site.example/post");
        let html = "<body><article><h1>Post</h1><p>Text before.</p>\
                    <img src=\"/pic.png\" alt=\"A picture\"><p>Text after.</p></article></body>";
        let content = |include| match extract_html(html, &page, Format::Markdown, include) {
            HtmlOutcome::Content(extracted) => extracted.content,
            other => panic!("{other:?}"),
        };
        assert!(
            content(true).contains("![A picture](http://site.example/pic.png)"),
            "{}",
            content(true)
        );
        assert!(!content(false).contains("pic.png"), "{}", content(false));
    }

    fn markdown_of(html: &str) -> Extracted {
        match extract_html(
            html,
            &url("http://site.example/story"),
            Format::Markdown,
            true,
        ) {
            HtmlOutcome::Content(extracted) => extracted,
            other => panic!("{other:?}"),
        }
    }

    /// A story long enough for readability, in `<div>`s.
    fn story_paragraphs() -> String {
        (1..=6)
            .map(|n| {
                format!(
                    "<p>Paragraph {n} of the story, which tells at some length how the harbour \
                     wall was repaired after the winter storms, who paid for it, and what the \
                     fishing crews made of the weeks of noise and detours along the quay.</p>"
                )
            })
            .collect()
    }

    #[test]
    fn a_lone_article_that_is_a_teaser_elsewhere_does_not_replace_the_story() {
        let html = format!(
            "<body><div class=story><h1>Harbour wall repaired</h1>{}</div>\
             <div class=sidebar><h3>Related</h3><article class=teaser><h3><a href=/other>\
             Ferry timetable cut</a></h3><p>What it means for islanders.</p></article></div>\
             </body>",
            story_paragraphs()
        );
        let extracted = markdown_of(&html);
        assert_eq!(extracted.method, "readability");
        assert!(
            extracted.content.contains("Paragraph 6 of the story"),
            "{}",
            extracted.content
        );
        assert!(
            !extracted.content.contains("Ferry timetable"),
            "{}",
            extracted.content
        );
    }

    #[test]
    fn a_video_figure_is_not_an_image_whose_address_is_json() {
        let html = format!(
            "<body><article><h1>Harbour wall repaired</h1>{}\
             <figure class=video data-playable='{{\"id\": \"v1\", \"poster\": \
             \"https://media.example/v1/poster.jpg\", \"sources\": []}}'>\
             <div class=placeholder><button aria-label=Play></button></div></figure>{}\
             </article></body>",
            story_paragraphs(),
            story_paragraphs()
        );
        let content = markdown_of(&html).content;
        assert!(content.contains("Paragraph 6 of the story"), "{content}");
        assert!(!content.contains("poster"), "{content}");
    }
}

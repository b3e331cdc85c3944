//! What the model reads: a page as a short header (title, URL, metadata, word count) over its
//! content, a batch as one section per URL in input order (each page with a `maxChars` of its
//! own), and the truncation that keeps either within `maxChars` — cut at a paragraph, line,
//! sentence or word boundary (in that order of preference) and closed with a note saying how much
//! was left out and how to get more.

use serde_json::{Value, json};

use super::error::FetchError;
use super::fetch::Fetched;
use super::page::Page;

/// No cut lands earlier than this share of the budget to find a clean boundary.
const BOUNDARY_SEARCH: f64 = 0.7;
/// The smallest budget worth showing (a note and a few lines).
pub(crate) const MIN_MAX_CHARS: usize = 500;

/// Content cut to a budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncated {
    pub text: String,
    /// Characters of the content shown (the note not counted).
    pub shown: usize,
    /// Characters of the whole content.
    pub total: usize,
}

impl Truncated {
    pub fn was_cut(&self) -> bool {
        self.shown < self.total
    }

    /// The text without the note saying what was cut (the `json` format says it in fields).
    pub(crate) fn without_note(&self) -> &str {
        let note = note(self.shown, self.total);
        self.text.strip_suffix(note.as_str()).unwrap_or(&self.text)
    }
}

/// `content` in at most `max_chars` characters, note included.
pub(crate) fn truncate(content: &str, max_chars: usize) -> Truncated {
    let total = content.chars().count();
    if total <= max_chars {
        return Truncated {
            text: content.to_owned(),
            shown: total,
            total,
        };
    }
    // The note's length with the largest numbers it can hold, so the cut leaves room for it.
    let room = note(total, total).chars().count() + "\n```".len();
    let budget = max_chars.saturating_sub(room);
    let limit = content
        .char_indices()
        .nth(budget)
        .map_or(content.len(), |(at, _)| at);
    let head = &content[..limit];
    let floor = (limit as f64 * BOUNDARY_SEARCH) as usize;
    let boundary = ["\n\n", "\n", ". ", " "].iter().find_map(|separator| {
        head.rfind(separator)
            .filter(|at| *at >= floor)
            .map(|at| at + separator.trim_end().len())
    });
    let mut text = without_trailing_headings(&head[..boundary.unwrap_or(limit)]).to_owned();
    let shown = text.chars().count();
    // A cut inside a fenced code block would leave the rest of the answer as code.
    let fences = text
        .lines()
        .filter(|line| line.trim_start().starts_with("```"))
        .count();
    if fences % 2 == 1 {
        text.push_str("\n```");
    }
    text.push_str(&note(shown, total));
    Truncated { text, shown, total }
}

/// `text` trimmed, without the markdown headings at its end: a heading with nothing under it
/// says only what was cut (kept when it is all there is).
fn without_trailing_headings(text: &str) -> &str {
    let mut text = text.trim_end();
    while let Some((before, last)) = text.rsplit_once('\n') {
        if !last.trim_start().starts_with('#') || before.trim().is_empty() {
            break;
        }
        text = before.trim_end();
    }
    text
}

fn note(shown: usize, total: usize) -> String {
    format!(
        "\n\n[… truncated: showing {shown} of {total} characters; fetch again with a larger \
         maxChars to read more]"
    )
}

/// One page for the model: the header, then the content within `max_chars`.
pub fn page_text(fetched: &Fetched, max_chars: usize) -> (String, Truncated) {
    let page = &fetched.page;
    let body = truncate(&page.content, max_chars);
    let mut text = header(page, 1);
    text.push_str("\n---\n\n");
    text.push_str(&body.text);
    (text, body)
}

/// The title line and the metadata lines; `level` is the heading's depth.
fn header(page: &Page, level: usize) -> String {
    let title = page.meta.title.as_deref().unwrap_or("Untitled");
    let mut text = format!("{} {title}\n\n", "#".repeat(level));
    text.push_str(&format!("URL: {}\n", page.url));
    if page.final_url != page.url {
        text.push_str(&format!("Final URL: {}\n", page.final_url));
    }
    let fields = [
        ("Author", &page.meta.author),
        ("Published", &page.meta.published),
        ("Site", &page.meta.site),
        ("Language", &page.meta.language),
    ];
    for (label, value) in fields {
        if let Some(value) = value {
            text.push_str(&format!("{label}: {value}\n"));
        }
    }
    if !page.mime_type.is_empty() && page.mime_type != "text/html" {
        text.push_str(&format!("Type: {}\n", page.mime_type));
    }
    text.push_str(&format!("Word count: {}\n", page.word_count()));
    text
}

/// A whole batch for the model: totals, then each URL's section in input order.
pub fn batch_text(results: &[Result<Fetched, FetchError>], max_chars: usize) -> String {
    batch_view(results, max_chars).0
}

/// A whole batch for the model, and how each page's content was cut (`None` for a failed
/// URL). Every page has `max_chars` of its own, as if it were fetched alone, and what a short
/// page leaves goes to the long ones (the call's budget is `max_chars` times the pages, shared
/// fairly). The totals line is followed by a line naming every page that was cut.
pub fn batch_view(
    results: &[Result<Fetched, FetchError>],
    max_chars: usize,
) -> (String, Vec<Option<Truncated>>) {
    let total = results.len();
    let succeeded = results.iter().filter(|result| result.is_ok()).count();
    let lengths: Vec<usize> = results
        .iter()
        .filter_map(|result| result.as_ref().ok())
        .map(|fetched| fetched.page.content.chars().count())
        .collect();
    let mut shares = fair_shares(&lengths, max_chars.saturating_mul(succeeded)).into_iter();
    let cuts: Vec<Option<Truncated>> = results
        .iter()
        .map(|result| {
            result.as_ref().ok().map(|fetched| {
                let share = shares.next().unwrap_or(MIN_MAX_CHARS).max(MIN_MAX_CHARS);
                truncate(&fetched.page.content, share)
            })
        })
        .collect();
    let mut text = format!(
        "# Batch fetch: {total} URLs · {succeeded} succeeded · {} failed\n",
        total - succeeded
    );
    text.push_str(&cut_summary(&cuts, max_chars));
    for (index, (result, cut)) in results.iter().zip(&cuts).enumerate() {
        text.push_str("\n---\n\n");
        match (result, cut) {
            (Ok(fetched), Some(cut)) => {
                text.push_str(&format!("## [{}/{total}] ✓ ", index + 1));
                text.push_str(header(&fetched.page, 0).trim_start());
                text.push('\n');
                text.push_str(&cut.text);
                text.push('\n');
            }
            (Err(error), _) => {
                text.push_str(&format!("## [{}/{total}] ✗ {}\n\n", index + 1, error.url));
                text.push_str(&format!("Error: {}\n", error.describe()));
            }
            (Ok(_), None) => {}
        }
    }
    (text, cuts)
}

/// One page as the `json` format gives it: its address, metadata and content (cut as `cut`
/// says, the cut in fields rather than a note).
pub(crate) fn page_json(fetched: &Fetched, cut: &Truncated) -> Value {
    let page = &fetched.page;
    json!({
        "url": page.url,
        "finalUrl": page.final_url,
        "title": page.meta.title,
        "author": page.meta.author,
        "published": page.meta.published,
        "site": page.meta.site,
        "language": page.meta.language,
        "mimeType": page.mime_type,
        "wordCount": page.word_count(),
        "content": cut.without_note(),
        "truncated": cut.was_cut(),
        "shownChars": cut.shown,
        "totalChars": cut.total,
    })
}

/// A batch as the `json` format gives it: the totals and each URL's page or error, in input
/// order, each page with the share of the budget [`batch_view`] gave it.
pub(crate) fn batch_json(
    results: &[Result<Fetched, FetchError>],
    cuts: &[Option<Truncated>],
) -> Value {
    let succeeded = results.iter().filter(|result| result.is_ok()).count();
    let pages: Vec<Value> = results
        .iter()
        .zip(cuts)
        .map(|(result, cut)| match (result, cut) {
            (Ok(fetched), Some(cut)) => {
                let mut page = page_json(fetched, cut);
                page["ok"] = Value::Bool(true);
                page
            }
            (Ok(fetched), None) => json!({"url": fetched.page.url, "ok": true}),
            (Err(error), _) => json!({"url": error.url, "ok": false, "error": error.to_json()}),
        })
        .collect();
    json!({
        "total": results.len(),
        "succeeded": succeeded,
        "failed": results.len() - succeeded,
        "pages": pages,
    })
}

/// The line under a batch's totals that names the pages that were cut (empty when none was).
fn cut_summary(cuts: &[Option<Truncated>], max_chars: usize) -> String {
    let total = cuts.len();
    let cut: Vec<String> = cuts
        .iter()
        .enumerate()
        .filter_map(|(index, cut)| {
            let cut = cut.as_ref().filter(|cut| cut.was_cut())?;
            Some(format!(
                "[{}/{total}] {} of {} characters",
                index + 1,
                cut.shown,
                cut.total
            ))
        })
        .collect();
    if cut.is_empty() {
        return String::new();
    }
    format!(
        "Cut to fit (each page has maxChars = {max_chars} of its own): {}; fetch a page with \
         web_fetch and a larger maxChars to read all of it.\n",
        cut.join(", ")
    )
}

/// `budget` split between contents of `lengths`: whoever needs less than an equal share gets
/// what it needs, and what is left is split again between the others.
pub(crate) fn fair_shares(lengths: &[usize], budget: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&index| lengths[index]);
    let mut shares = vec![0; lengths.len()];
    let mut left = budget;
    for (done, &index) in order.iter().enumerate() {
        let equal = left / (lengths.len() - done);
        shares[index] = lengths[index].min(equal);
        left -= shares[index];
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::page::{ContentKind, PageMeta};

    #[test]
    fn short_content_is_untouched() {
        let cut = truncate("hello", 500);
        assert_eq!((cut.text.as_str(), cut.was_cut()), ("hello", false));
    }

    #[test]
    fn cuts_land_on_the_cleanest_boundary_within_the_budget() {
        let paragraph = "word ".repeat(30).trim_end().to_owned() + ".";
        let content = [paragraph.as_str(); 20].join("\n\n");
        for max in [500, 777, 1500, 3000] {
            let cut = truncate(&content, max);
            assert!(
                cut.text.chars().count() <= max,
                "{max}: {}",
                cut.text.chars().count()
            );
            let kept = cut.text.split("\n\n[… truncated").next().unwrap();
            assert!(
                kept.ends_with("word."),
                "{max}: cut inside a paragraph: {kept:?}"
            );
            assert!(
                cut.text
                    .contains(&format!("of {} characters", content.chars().count()))
            );
            assert!(cut.was_cut());
        }
        // No paragraph or line near the end: a word boundary.
        let words = "alpha beta gamma delta ".repeat(100);
        let cut = truncate(&words, 600);
        let kept = cut.text.split("\n\n[…").next().unwrap();
        assert!(
            kept.ends_with("alpha")
                || kept.ends_with("beta")
                || kept.ends_with("gamma")
                || kept.ends_with("delta"),
            "{kept:?}"
        );
        // Multi-byte text is cut on a character boundary.
        let wide = "é".repeat(2000);
        let cut = truncate(&wide, 700);
        assert!(cut.text.chars().count() <= 700);
    }

    #[test]
    fn a_cut_does_not_end_on_a_heading() {
        let content = format!(
            "{}\n\n## Next part\n\n{}",
            "First words here. ".repeat(25).trim_end(),
            "More words follow. ".repeat(40)
        );
        let cut = truncate(&content, 580);
        let kept = cut.text.split("\n\n[… truncated").next().unwrap();
        assert!(kept.ends_with("First words here."), "{kept:?}");
        assert!(cut.was_cut());
    }

    #[test]
    fn a_cut_inside_a_code_block_closes_it() {
        let code = format!(
            "Intro.\n\n```rust\n{}```\n\nAfter.",
            "let x = 1;\n".repeat(200)
        );
        let cut = truncate(&code, 800);
        let fences = cut
            .text
            .lines()
            .filter(|line| line.starts_with("```"))
            .count();
        assert_eq!(fences % 2, 0, "{}", cut.text);
        assert!(cut.text.chars().count() <= 800);
    }

    #[test]
    fn fair_shares_give_short_pages_all_they_need() {
        assert_eq!(
            fair_shares(&[100, 10_000, 10_000], 3000),
            vec![100, 1450, 1450]
        );
        assert_eq!(fair_shares(&[100, 200], 3000), vec![100, 200]);
        assert_eq!(fair_shares(&[], 3000), Vec::<usize>::new());
    }

    fn fetched(content: &str) -> Fetched {
        Fetched {
            page: Page {
                url: "http://a.example/x".into(),
                final_url: "http://a.example/y".into(),
                meta: PageMeta {
                    title: Some("A page".into()),
                    author: Some("Ada".into()),
                    published: None,
                    site: Some("A".into()),
                    language: Some("en".into()),
                },
                mime_type: "text/html".into(),
                kind: ContentKind::Markdown,
                extraction: Some("readability".into()),
                content: content.into(),
            },
            cached: false,
        }
    }

    #[test]
    fn a_page_has_its_header_over_its_content() {
        let (text, body) = page_text(&fetched("Some *content* here."), 50_000);
        assert_eq!(
            text,
            "# A page\n\nURL: http://a.example/x\nFinal URL: http://a.example/y\nAuthor: Ada\n\
             Site: A\nLanguage: en\nWord count: 3\n\n---\n\nSome *content* here."
        );
        assert!(!body.was_cut());
    }

    #[test]
    fn each_page_of_a_batch_has_its_own_budget_and_the_cuts_are_named() {
        let long = "A sentence of the long page. ".repeat(3000);
        let results = [
            Ok(fetched(&long)),
            Ok(fetched("Short.")),
            Ok(fetched(&long)),
            Ok(fetched(&long)),
        ];
        let (text, cuts) = batch_view(&results, 50_000);
        let shown: Vec<usize> = cuts.iter().flatten().map(|cut| cut.shown).collect();
        // The short page's unused budget goes to the long ones: each shows more than maxChars.
        assert_eq!(shown[1], 6);
        for at in [0, 2, 3] {
            assert!(shown[at] > 50_000 && shown[at] < long.len(), "{shown:?}");
        }
        let summary = text.lines().nth(1).unwrap();
        assert!(
            summary.starts_with("Cut to fit (each page has maxChars = 50000 of its own): [1/4] "),
            "{summary}"
        );
        assert!(
            summary.contains("[3/4]") && summary.contains("[4/4]"),
            "{summary}"
        );
        assert!(!summary.contains("[2/4]"), "{summary}");
        assert!(
            summary.contains(&format!("of {} characters", long.len())),
            "{summary}"
        );
        // Nothing cut: no such line.
        let (text, _) = batch_view(&[Ok(fetched("Short."))], 50_000);
        assert!(!text.contains("Cut to fit"), "{text}");
    }

    #[test]
    fn a_batch_lists_every_url_in_order_with_its_error() {
        let error =
            FetchError::http_status("http://b.example/", "http://b.example/", 404, "Not Found");
        let text = batch_text(
            &[Ok(fetched("First.")), Err(error), Ok(fetched("Third."))],
            50_000,
        );
        assert!(
            text.starts_with("# Batch fetch: 3 URLs · 2 succeeded · 1 failed\n"),
            "{text}"
        );
        let first = text.find("## [1/3] ✓ A page").unwrap();
        let second = text.find("## [2/3] ✗ http://b.example/").unwrap();
        let third = text.find("## [3/3] ✓ A page").unwrap();
        assert!(first < second && second < third, "{text}");
        assert!(text.contains("Error: http://b.example/ answered HTTP 404 Not Found [code: http_status, phase: waiting, retryable: no]"), "{text}");
        assert!(text.contains("First.") && text.contains("Third."));
    }

    /// The `json` format: the page's fields, its content without the note (the cut is in
    /// fields), a batch's pages and errors in order.
    #[test]
    fn the_json_format_gives_fields_and_the_cut() {
        let page = fetched("Some *content* here.");
        let (_, body) = page_text(&page, 50_000);
        assert_eq!(
            page_json(&page, &body),
            json!({
                "url": "http://a.example/x", "finalUrl": "http://a.example/y",
                "title": "A page", "author": "Ada", "published": null, "site": "A",
                "language": "en", "mimeType": "text/html", "wordCount": 3,
                "content": "Some *content* here.", "truncated": false,
                "shownChars": 20, "totalChars": 20,
            })
        );
        let long = fetched(&"A sentence of the long page. ".repeat(100));
        let (_, cut) = page_text(&long, 600);
        let value = page_json(&long, &cut);
        let content = value["content"].as_str().unwrap();
        assert!(content.ends_with("long page."), "{content}");
        assert_eq!(content.chars().count(), cut.shown);
        assert_eq!(
            (value["truncated"].clone(), value["totalChars"].clone()),
            (json!(true), json!(2900))
        );

        let error =
            FetchError::http_status("http://b.example/", "http://b.example/", 404, "Not Found");
        let results = [Ok(fetched("First.")), Err(error)];
        let (_, cuts) = batch_view(&results, 50_000);
        let batch = batch_json(&results, &cuts);
        assert_eq!(
            (
                batch["total"].clone(),
                batch["succeeded"].clone(),
                batch["failed"].clone()
            ),
            (json!(2), json!(1), json!(1))
        );
        assert_eq!(batch["pages"][0]["content"], "First.");
        assert_eq!(batch["pages"][0]["ok"], true);
        assert_eq!(batch["pages"][1]["ok"], false);
        assert_eq!(batch["pages"][1]["error"]["code"], "http_status");
    }
}

//! Page furniture taken out before the article is looked for: what news sites and blogs put in
//! and around a story that is not the story (issue 27's precision families). Readability keeps
//! much of it when it sits inside the story's container.
//!
//! - Controls and pop-ups: buttons, form fields, tooltips and hover cards (a card about a person
//!   injected mid-sentence), hidden elements.
//! - Containers named for furniture by their `class` or `id` ([`FURNITURE_WORDS`],
//!   [`FURNITURE_PHRASES`]): share tools, newsletter sign-ups, related stories, bylines and
//!   timestamps, kickers, breadcrumbs, comments, galleries, credits, author bios, tags.
//! - Short blocks that say what they are: gallery counters ("Image 1 of 8", a lone "6"), "Updated
//!   …" stamps, newsletter and tip lines, copyright and address lines.
//! - Lists under a heading such as "You may also like".
//! - Captions: a caption that repeats a heading, and the shorter of a caption given twice (the
//!   truncated one with a "more" toggle and the full one).
//!
//! None of it removes an element that holds most of the page's text, so a story whose container
//! happens to carry one of these names is kept.

use std::sync::LazyLock;

use dom_query::{Document, NodeRef, Selection};
use regex::Regex;

/// Never content: form fields, pop-ups and what is hidden (but a caption's hidden full text,
/// which [`captions`] prefers to its truncated twin).
const CONTROLS: &str =
    "input, select, textarea, [role=tooltip], [hidden]:not(figcaption *), dialog";
/// A button of at most this many words is a control ("Copy link", "more", "Show 42 comments"); a
/// longer one may be a question that opens its answer, and stays.
const BUTTON_WORDS: usize = 5;

/// A `class` or `id` with one of these as a part (split at `-`, `_` and case changes) names
/// furniture.
const FURNITURE_WORDS: &[&str] = &[
    "share",
    "sharing",
    "social",
    "newsletter",
    "signup",
    "subscribe",
    "subscription",
    "promo",
    "related",
    "recommended",
    "recommendations",
    "byline",
    "breadcrumb",
    "breadcrumbs",
    "comments",
    "disqus",
    "tooltip",
    "hovercard",
    "popover",
    "kicker",
    "eyebrow",
    "credit",
    "credits",
    "gallery",
    "slideshow",
    "carousel",
    "copyright",
    "timestamp",
    "tags",
    "sponsored",
    "outbrain",
    "taboola",
    "advert",
    "advertisement",
    "ad",
    "ads",
];

/// Runs of parts that name furniture together.
const FURNITURE_PHRASES: &[&[&str]] = &[
    &["read", "more"],
    &["more", "stories"],
    &["most", "read"],
    &["section", "label"],
    &["read", "time"],
    &["reading", "time"],
    &["author", "bio"],
    &["about", "author"],
    &["author", "card"],
    &["publisher", "info"],
    &["hover", "card"],
    &["person", "card"],
];

/// The largest share of the page's text a removed element may hold.
const MAX_SHARE: f64 = 0.4;
/// The longest text a block matched by what it says may have.
const SHORT_BLOCK: usize = 300;

macro_rules! pattern {
    ($name:ident, $source:expr) => {
        static $name: LazyLock<Regex> = LazyLock::new(|| {
            #[allow(clippy::expect_used)] // a literal pattern
            Regex::new($source).expect("a valid regex")
        });
    };
}

pattern!(
    COUNTER,
    r"(?i)^(image|photo|picture|slide|foto)\s*\d+\s*(of|/)\s*\d+$"
);
pattern!(NUMBER, r"^\d{1,3}$");
pattern!(
    STAMP,
    r"(?i)^(updated|published|posted|last updated|last modified|first published)\b.{0,60}(\d{1,2}:\d{2}|\d{4}-\d{2}-\d{2}|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}\b|\b\d{1,2} (jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))"
);
/// The longest "Updated …" stamp.
const STAMP_LENGTH: usize = 120;
pattern!(
    PROMOTION,
    r"(?i)(newsletter.{0,80}(inbox|sign up|subscribe)|(sign up|subscribe).{0,80}(newsletter|inbox)|by signing up|all rights reserved|©\s*\d{4}|\(c\)\s*\d{4}|(have|got) a (news )?tip\b|\btips@|story (ideas?|tips?)\b.{0,80}(email|contact|message|send)|(email|contact|message) us.{0,80}\btips?\b)"
);
pattern!(
    CREDIT,
    r"(?i)^((photo|photograph|image|picture|illustration|video|graphic)s?( credit)?\s*(:|by\b)|(credit|source)\s*:)"
);
/// The longest credit line.
const CREDIT_LENGTH: usize = 120;
pattern!(
    COMMENT_POLICY,
    r"(?i)(comments (are|will be|is) (moderated|reviewed|closed)|comment.{0,100}(guidelines|standards|rules|policy)|(guidelines|standards|rules|policy).{0,100}\bcomment)"
);
pattern!(
    COMMENTS_HEADING,
    r"(?i)^(\d+ )?(comments?|responses|replies|leave a (comment|reply)|join the (conversation|discussion))\s*(\(\d+\))?:?$"
);
pattern!(
    RELATED_HEADING,
    r"(?i)^(you (may|might) also (like|enjoy)|related( stories| articles| content| posts| coverage)?|more (stories|news|from [\w .]{1,40})|read (more|next)|recommended( for you| reading)?|most (read|popular|viewed)|trending( now)?|more on this story|editors'? picks)\s*:?$"
);

/// Takes the furniture out of `document`.
pub(super) fn declutter(document: &Document) {
    document.select(CONTROLS).remove();
    for button in document.select("button").nodes() {
        if button.text().split_whitespace().count() <= BUTTON_WORDS {
            button.remove_from_parent();
        }
    }
    let total = text_len(&document.root()).max(1);
    let small = |node: &NodeRef| (text_len(node) as f64) < MAX_SHARE * total as f64;
    // The story's own containers: a furniture-like name on one of them is not furniture.
    let protected = |node: &NodeRef| node.is("html, body, main, article, [role=main], :has(h1)");

    for node in document.select("[class], [id]").nodes() {
        // Cheapest test first: `protected` and `small` walk the element's subtree.
        if named_furniture(node) && !protected(node) && small(node) && !prose(node) {
            node.remove_from_parent();
        }
    }
    for node in document
        .select("p, div, span, li, small, em, time, aside, section, figcaption")
        .nodes()
    {
        if node.parent().is_none() {
            continue;
        }
        let text = squeezed(&node.text());
        if text.is_empty() || text.chars().count() > SHORT_BLOCK || protected(node) {
            continue;
        }
        let furniture = COUNTER.is_match(&text)
            || (STAMP.is_match(&text) && text.chars().count() <= STAMP_LENGTH)
            || (CREDIT.is_match(&text) && text.chars().count() <= CREDIT_LENGTH)
            || PROMOTION.is_match(&text)
            || COMMENT_POLICY.is_match(&text)
            || (NUMBER.is_match(&text) && stands_alone(node));
        if furniture {
            node.remove_from_parent();
        }
    }
    related_lists(document, &small);
    galleries(document);
    labels_over_the_headline(document);
    captions(document);
}

/// A list whose every item is a picture with a short caption is a gallery (a list of pictures
/// with paragraphs of their own — a buyer's guide — is not).
fn galleries(document: &Document) {
    for list in document.select("ul, ol").nodes() {
        let items: Vec<NodeRef> = list
            .element_children()
            .into_iter()
            .filter(|child| child.is("li"))
            .collect();
        let slide =
            |item: &NodeRef| item.is("li:has(img, picture)") && text_len(item) <= GALLERY_CAPTION;
        if items.len() >= 2 && items.iter().all(slide) {
            list.remove_from_parent();
        }
    }
}

/// The longest caption (with its credit) of a gallery's picture.
const GALLERY_CAPTION: usize = 250;

/// Short labels just before the headline (a kicker, a section label, a date): the few
/// elements before the first `<h1>`, beside it, of a few words each.
fn labels_over_the_headline(document: &Document) {
    let Some(headline) = document.select("h1").nodes().first().cloned() else {
        return;
    };
    let mut previous = headline.prev_element_sibling();
    for _ in 0..LABELS_OVER_THE_HEADLINE {
        let Some(label) = previous else { break };
        previous = label.prev_element_sibling();
        let text = squeezed(&label.text());
        let short = text.split_whitespace().count() <= 4 && text.chars().count() <= 40;
        if short && label.is("a, span, p, div, small, strong") && !label.is(":has(img)") {
            label.remove_from_parent();
        }
    }
}

/// How many elements before the headline may be labels.
const LABELS_OVER_THE_HEADLINE: usize = 3;

/// Whether `node` holds paragraphs of prose ([`PROSE_PARAGRAPHS`] of [`PROSE_LENGTH`]
/// characters): a story in a container whose name only looks like furniture
/// (`credit-card-guide`, `gallery-review`), kept — unless the name is a comment section's, whose
/// prose is the readers'.
fn prose(node: &NodeRef) -> bool {
    let comments = [node.attr("class"), node.attr("id")]
        .iter()
        .flatten()
        .flat_map(|value| {
            value
                .split_whitespace()
                .flat_map(name_parts)
                .collect::<Vec<_>>()
        })
        .any(|part| part == "comments" || part == "disqus");
    if comments {
        return false;
    }
    let long = Selection::from(*node)
        .select("p")
        .nodes()
        .iter()
        .filter(|paragraph| text_len(paragraph) >= PROSE_LENGTH)
        .count();
    long >= PROSE_PARAGRAPHS
}

/// Paragraphs that make a container prose.
const PROSE_PARAGRAPHS: usize = 3;
/// The shortest paragraph of prose, in characters.
const PROSE_LENGTH: usize = 200;

/// Whether `node`'s `class` or `id` names furniture.
fn named_furniture(node: &NodeRef) -> bool {
    let names = [node.attr("class"), node.attr("id")];
    names.iter().flatten().any(|value| {
        value.split_whitespace().any(|name| {
            let parts = name_parts(name);
            parts
                .iter()
                .any(|part| FURNITURE_WORDS.contains(&part.as_str()))
                || FURNITURE_PHRASES.iter().any(|phrase| {
                    parts.windows(phrase.len()).any(|run| {
                        run.iter()
                            .zip(phrase.iter())
                            .all(|(part, word)| part == word)
                    })
                })
        })
    })
}

/// A class or id in lower-case parts: `share-tools`, `share_tools`, `shareTools` → share, tools.
fn name_parts(name: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut part = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if c == '-' || c == '_' || c == ':' || c == '.' {
            parts.push(std::mem::take(&mut part));
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower {
            parts.push(std::mem::take(&mut part));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        part.extend(c.to_lowercase());
    }
    parts.push(part);
    parts.retain(|part| !part.is_empty());
    parts
}

/// Whether a number stands on its own (a gallery's count), not inside a sentence.
fn stands_alone(node: &NodeRef) -> bool {
    let beside_text = |sibling: Option<NodeRef>| {
        sibling.is_some_and(|sibling| sibling.is_text() && !sibling.text().trim().is_empty())
    };
    !beside_text(node.prev_sibling()) && !beside_text(node.next_sibling())
}

/// The longest container a "You may also like" heading takes with it.
const RELATED_LENGTH: usize = 1500;

/// A heading such as "You may also like" or "Comments" with what it introduces: its container when
/// that is small, else the list after it.
fn related_lists(document: &Document, small: &impl Fn(&NodeRef) -> bool) {
    for heading in document.select("h2, h3, h4, h5, h6, strong").nodes() {
        let text = squeezed(&heading.text());
        let comments = COMMENTS_HEADING.is_match(&text);
        if heading.parent().is_none() || !(comments || RELATED_HEADING.is_match(&text)) {
            continue;
        }
        // A comment section may be long; a related list is short.
        let container = heading.parent().filter(|parent| {
            parent.is("section, aside, div, nav")
                && !parent.is("main, article, body, [role=main], :has(h1)")
                && small(parent)
                && (comments || text_len(parent) < RELATED_LENGTH)
        });
        match container {
            Some(container) => container.remove_from_parent(),
            // A "Comments" heading inside the story may be about comments in code.
            None if comments => {}
            None => {
                if let Some(next) = heading.next_element_sibling()
                    && next.is("ul, ol")
                {
                    next.remove_from_parent();
                }
                heading.remove_from_parent();
            }
        }
    }
}

/// A caption that repeats a heading of the page goes; of two parts of a caption where one is
/// the start of the other (a truncated caption and the full one), the shorter goes.
fn captions(document: &Document) {
    let headings: Vec<String> = document
        .select("h1, h2, h3, h4, h5, h6")
        .iter()
        .map(|heading| squeezed(&heading.text()))
        .filter(|text| !text.is_empty())
        .collect();
    for caption in document.select("figcaption").nodes() {
        let text = squeezed(&caption.text());
        if headings.contains(&text) {
            caption.remove_from_parent();
            continue;
        }
        let parts = caption.element_children();
        for part in &parts {
            let short = squeezed(&part.text());
            let stem = short
                .trim_end_matches(['…', '.', ' '])
                .trim_end_matches("...");
            if stem.is_empty() {
                continue;
            }
            let repeated = parts.iter().any(|other| {
                other.id != part.id && {
                    let long = squeezed(&other.text());
                    long.len() > short.len() && long.starts_with(stem)
                }
            });
            if repeated {
                part.remove_from_parent();
            }
        }
    }
}

/// Characters of `node`'s text, whitespace runs counted once.
fn text_len(node: &NodeRef) -> usize {
    node.text()
        .split_whitespace()
        .map(|word| word.len() + 1)
        .sum()
}

/// `text` with its whitespace runs made single spaces and its ends trimmed.
fn squeezed(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `body` decluttered, as text with whitespace squeezed.
    fn cleaned(body: &str) -> String {
        cleaned_beside(body, 4)
    }

    /// `body` decluttered beside a story of `paragraphs` paragraphs, as text with whitespace
    /// squeezed (the story left out).
    fn cleaned_beside(body: &str, paragraphs: usize) -> String {
        let story = "<p>The story itself, long enough to be most of the page, tells how the \
                     harbour wall was rebuilt after the storms and who paid for the work.</p>"
            .repeat(paragraphs);
        let document = Document::from(format!("<body><article>{story}{body}</article></body>"));
        declutter(&document);
        let text = squeezed(&document.select("article").text());
        let rest = text.replace(&squeezed(&Document::from(story).root().text()), "");
        squeezed(&rest)
    }

    #[test]
    fn furniture_named_by_class_or_id_goes() {
        for html in [
            "<ul class=share-tools><li><a href=#>Share on Facebook</a></li></ul>",
            "<div class=byline>By <a href=/a>Maren Holt</a></div>",
            "<a class=kicker href=/s>Energy</a>",
            "<div id=newsletterSignup><p>Get the Morning Brief.</p></div>",
            "<section class=relatedLinks><h2>More</h2><ul><li><a href=/x>X</a></li></ul></section>",
            "<section id=comments><p>We welcome respectful discussion.</p></section>",
            "<nav class=breadcrumbs><a href=/>Home</a> › <a href=/news>News</a></nav>",
            "<div class=author-bio><p>Maren covers the coast.</p></div>",
            "<span class=credit>Photo: Hana Sato / Coastline Pictures</span>",
        ] {
            assert_eq!(cleaned(html), "", "{html}");
        }
        // Words that only contain a furniture word are not it.
        assert_eq!(cleaned("<p class=shared-values>Kept.</p>"), "Kept.");
        assert_eq!(cleaned("<p class=adjacent>Kept too.</p>"), "Kept too.");
    }

    #[test]
    fn a_comment_section_goes_however_long_its_comments() {
        let comment = "<p>I have lived by the harbour for thirty years and have never seen the \
                       wall in such a state; the council should have acted after the first storm \
                       instead of waiting for the insurers to argue it out.</p>"
            .repeat(3);
        let section = format!("<section id=comments>{comment}</section>");
        assert_eq!(cleaned_beside(&section, 20), "");
    }

    #[test]
    fn a_story_whose_container_has_a_furniture_name_is_kept() {
        let story = "<p>Paragraph of the story with enough words to matter here.</p>".repeat(5);
        let document = Document::from(format!(
            "<body><div class=story-share-wrap>{story}</div><p>Footer.</p></body>"
        ));
        declutter(&document);
        assert!(
            document
                .select("body")
                .text()
                .contains("Paragraph of the story")
        );
        // Nor is one with the headline in it, however much else the page has.
        let menu = "<li><a href=/x>A link of the site's very long menu</a></li>".repeat(40);
        let document = Document::from(format!(
            "<body><ul>{menu}</ul><div class=post-has-comments><h1>Title</h1>{story}</div></body>"
        ));
        declutter(&document);
        assert!(
            document
                .select("body")
                .text()
                .contains("Paragraph of the story")
        );
    }

    #[test]
    fn what_looks_like_furniture_in_a_story_stays() {
        let guide = "<p>Paying off a card in full each month avoids interest entirely, and the \
                     statement shows the date by which the balance must be cleared to keep that \
                     grace period; missing it once brings back interest on the whole sum.</p>"
            .repeat(3);
        let guide = format!("<div class=credit-card-guide>{guide}</div>");
        assert_eq!(
            cleaned_beside(&guide, 20),
            squeezed(&Document::from(guide.as_str()).root().text())
        );
        for html in [
            "<p>He sent a story to his editor by email before the deadline.</p>",
            "<p>YouTube said the video broke its community guidelines.</p>",
            "<p>Published in 1998, the book sold well.</p>",
            "<button>What does the warranty cover when the screen cracks?</button>",
            "<ul><li><img src=a.jpg><p>The first laptop has a long section of its own, with \
             enough words about its keyboard, battery, screen, ports, weight and price that \
             it is plainly a paragraph of the guide and not the caption of a gallery's slide, \
             which would be a line or two at most.</p></li><li><img src=b.jpg><p>The second \
             laptop likewise gets a full paragraph about its trackpad, speakers, webcam, fan \
             noise, repairability and the warranty that comes with it in most countries.</p>\
             </li></ul>",
        ] {
            let whole = squeezed(&Document::from(html).root().text());
            assert_eq!(cleaned(html), whole, "{html}");
        }
        // A "Comments" heading inside the story (about comments in code) stays.
        assert_eq!(
            cleaned("<h2>Comments</h2> <p>Write comments that say why.</p>"),
            "Comments Write comments that say why."
        );
    }

    #[test]
    fn blocks_that_say_what_they_are_go() {
        for html in [
            "<span class=count>Image 1 of 8</span>",
            "<div>6</div>",
            "<p>Updated 4:12 PM GMT, Tue March 4, 2025</p>",
            "<p>Get the Morning Brief newsletter: top stories in your inbox before 7am.</p>",
            "<p><em>Do you have a story or a tip? Email tips@gazette.example.</em></p>",
            "<p>© 2025 Coastline Media Ltd. All rights reserved.</p>",
            "<button>Show 42 comments</button>",
            "<p>Maren <span role=tooltip>Maren Holt writes about the coast.</span></p>",
        ] {
            assert_eq!(cleaned(html).trim_end_matches("Maren").trim(), "", "{html}");
        }
        // A number inside a sentence stays.
        assert_eq!(
            cleaned("<p>There were <span>6</span> boats.</p>"),
            "There were 6 boats."
        );
    }

    #[test]
    fn furniture_without_class_names_goes_by_what_it_says_and_where_it_is() {
        for html in [
            "<span>Photo: Hana Sato / Coastline Pictures</span>",
            "<ul><li><img src=1.jpg><p>View one.</p></li><li><img src=2.jpg><p>View two.</p>\
             </li></ul>",
            "<div><h3>Comments</h3><p>Be kind.</p><p>First!</p></div>",
            "<p>Comments are moderated and may take a day to appear.</p>",
        ] {
            assert_eq!(cleaned(html), "", "{html}");
        }
        let document = Document::from(
            "<body><div><a href=/s>Solar</a><span>Analysis</span><h1>Headline</h1> \
             <p>Story.</p></div></body>",
        );
        declutter(&document);
        assert_eq!(squeezed(&document.select("body").text()), "Headline Story.");
    }

    #[test]
    fn related_lists_go_with_their_heading() {
        assert_eq!(
            cleaned("<div><h2>You may also like</h2><ul><li><a href=/1>One</a></li></ul></div>"),
            ""
        );
        assert_eq!(
            cleaned("<h3>Related stories</h3><ul><li>One</li></ul><p>After.</p>"),
            "After."
        );
    }

    #[test]
    fn captions_repeating_a_heading_or_themselves_go() {
        assert_eq!(
            cleaned(
                "<h2>Rising waters</h2> <p>Text.</p><figure><img src=a.jpg alt=''>\
                 <figcaption>Rising waters</figcaption></figure>"
            ),
            "Rising waters Text."
        );
        assert_eq!(
            cleaned(
                "<figure><figcaption><div>Crews inspect the site…</div>\
                 <div>Crews inspect the site before work began.</div></figcaption></figure>"
            ),
            "Crews inspect the site before work began."
        );
        assert_eq!(
            cleaned("<figure><figcaption>A plain caption.</figcaption></figure>"),
            "A plain caption."
        );
    }
}

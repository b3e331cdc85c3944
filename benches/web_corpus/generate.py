#!/usr/bin/env python3
"""Writes the web reading-quality corpus: `<id>.html.gz` pages and `ground-truth.json`.

Every word here is ours: the articles are made up (invented towns, people and events, written
from sentence patterns below), and the pages imitate the layouts of news sites and blogs with the
failure modes issue 27 lists — bylines and "Updated" stamps, captions with credits and less/more
toggles, gallery counters, kickers, share buttons, newsletter and tip lines, "You may also like"
lists, comment policies, breadcrumbs, hover cards injected mid-sentence, address and copyright
footers, headings repeated as captions, a single `<article>` that is a related-story teaser, and
a video `<figure data-playable='{…}'>`.

The ground truth of a page is its article body as a reader would copy it: the paragraphs,
in-body subheadings, lists and quotes, one block a line; not the headline, byline, captions,
credits or any of the furniture around them (the convention of the public article-extraction
benchmarks).

The last pages have every `class` and `id` hashed (as CSS-in-JS sites do), so only what the
page says and its tags tell its parts apart: the rules that go by class names cannot help there.
Four long reads close the corpus.

Deterministic: `python3 benches/web_corpus/generate.py` rewrites the same files.
"""

import gzip
import hashlib
import html
import json
import random
import re
from pathlib import Path

OUT = Path(__file__).resolve().parent

TOWNS = ["Port Ellery", "Marrowfield", "Ashcombe", "Lindqvist Bay", "Tarrow", "Kelby Cross",
         "Oldwater", "Fenmarch", "Siltbridge", "Hollins Reach", "Caddow", "Brenlow"]
PEOPLE = ["Maren Holt", "Idris Okafor", "Lucia Ferrand", "Tomasz Wielki", "Aiyana Brooks",
          "Priya Raman", "Olek Stanis", "Hana Sato", "Benedikt Aue", "Rosa Quintero",
          "Femi Adeyemi", "Clara Lindgren", "Jonah Pell", "Sunniva Dahl"]
ROLES = ["the council's transport lead", "a hydrologist at the regional water board",
         "the head of the local growers' cooperative", "a spokesperson for the port authority",
         "the school's principal", "an engineer who has worked on the project since 2019",
         "the chair of the residents' association", "a historian at the county archive"]

TOPICS = [
    ("harbour", "Harbour wall repairs begin after winter storms",
     ["the harbour wall", "the breakwater", "the fishing fleet", "the repair crews",
      "the granite blocks", "the tidal gauge"],
     ["storm damage", "a funding gap", "rising insurance costs", "the spring tides"]),
    ("tram", "New tram line opens to the eastern suburbs",
     ["the tram line", "the new depot", "the ticket machines", "the eastern stops",
      "the overhead cables", "the first timetable"],
     ["delays during testing", "a shortage of drivers", "complaints about noise",
      "a cheaper monthly pass"]),
    ("orchard", "Growers try frost fans as spring arrives earlier",
     ["the apple orchards", "the frost fans", "the blossom", "the cooperative's growers",
      "the cold-storage barn", "the pickers"],
     ["a late frost", "the price of diesel", "a wetter summer", "new export rules"]),
    ("library", "The old library reopens as a community hub",
     ["the reading room", "the restored roof", "the children's corner", "the archive shelves",
      "the volunteers", "the evening classes"],
     ["a leaking roof", "the cost of heating", "a donated collection", "longer opening hours"]),
    ("river", "River levels prompt a review of flood defences",
     ["the river gauges", "the flood barriers", "the low-lying streets", "the pumping station",
      "the emergency crews", "the sandbag depot"],
     ["a week of heavy rain", "silt in the channel", "an ageing pump", "a new warning system"]),
    ("school", "A village school adds a four-day outdoor week",
     ["the outdoor classroom", "the timetable", "the pupils", "the teachers",
      "the woodland site", "the parents' survey"],
     ["muddy boots", "a staffing shortfall", "better attendance", "the inspectors' visit"]),
    ("bridge", "Footbridge closure splits the market town in two",
     ["the footbridge", "the market stalls", "the detour", "the inspection report",
      "the temporary ferry", "the steel girders"],
     ["corroded bolts", "lost trade", "a replacement design", "a lengthy tender"]),
    ("solar", "Farmers weigh a shared solar field on common land",
     ["the solar field", "the grazing rights", "the grid connection", "the sheep",
      "the planning committee", "the community fund"],
     ["a crowded grid queue", "objections from walkers", "lower power bills",
      "a twenty-year lease"]),
    ("ferry", "Island ferry timetable cut for the winter",
     ["the ferry", "the island shop", "the crossing", "the car deck",
      "the harbourmaster", "the winter timetable"],
     ["an engine refit", "fewer visitors", "a petition from islanders", "fuel prices"]),
    ("bakery", "A bakery cooperative feeds the night shift",
     ["the bakery", "the night shift", "the sourdough starter", "the delivery bikes",
      "the hospital canteen", "the apprentices"],
     ["flour prices", "a broken oven", "a new wholesale order", "a grant for training"]),
]

OPENERS = [
    "{Subject} has become the talk of {town} this month, and not only because of {issue}.",
    "For most people in {town}, {subject} was something they rarely thought about until {issue} "
    "changed that.",
    "Officials in {town} confirmed on Tuesday that work on {subject} will go ahead despite "
    "{issue}.",
]
SENTENCES = [
    "{Person}, {role}, said the plan for {subject} had been discussed for years before anyone "
    "agreed to pay for it.",
    "\u201cWe knew {issue} would come up sooner or later,\u201d {person} said, standing beside "
    "{subject2}.",
    "The first estimate put the cost at {money}, roughly {pct} per cent more than the figure "
    "given last autumn.",
    "Residents who live near {subject} say they were not asked early enough, although several "
    "meetings were held in the town hall.",
    "A report published in {month} found that {subject2} had been patched rather than "
    "replaced on at least {small} occasions.",
    "By the end of the week, {subject} was expected to be running on a reduced schedule while "
    "the remaining checks are carried out.",
    "Some of the strongest support came from younger families, who said {subject2} mattered "
    "more to them than {issue}.",
    "The committee will meet again in {month} to decide whether {subject} needs a second "
    "phase of work.",
    "{Person} pointed out that {subject2} had survived worse winters, but added that nobody "
    "wanted to rely on luck a second time.",
    "Neighbouring towns have faced {issue} too, and at least two of them chose a cheaper "
    "approach that is now being reviewed.",
    "Figures shared with the council show that {big} people used {subject} in the last twelve "
    "months, a record for {town}.",
    "Not everyone is convinced: a group of shop owners wrote to the council warning that "
    "{issue} could last well into the summer.",
    "The contractor said its crews would work in shifts so that {subject2} stays open for as "
    "long as possible each day.",
    "Asked whether the timetable was realistic, {person} laughed and said the honest answer "
    "was that it depended on the weather.",
    "Records held at the county archive show that {subject} was first built in {year}, "
    "largely by hand and with local stone.",
    "Volunteers have offered to help with {subject2}, and a sign-up sheet at the post office "
    "filled up within two days.",
    "In a statement, the regional authority said it would publish the full costs of "
    "{subject} once the contracts were signed.",
    "The change means {subject2} will look different by the autumn, though most of the work "
    "will happen out of sight.",
]
SUBHEADS = ["What happens next", "The cost question", "A long history", "What residents say",
            "How it will work", "Lessons from elsewhere"]
LIST_ITEMS = ["a public meeting in {month}", "a revised budget of {money}",
              "monthly progress reports", "a phone line for residents",
              "a review after {small} months", "extra crews on weekends"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "September",
          "October", "November"]


def cap(text):
    return text[0].upper() + text[1:]


class Article:
    """A made-up article: headline, author, blocks of body (`("p"|"h2"|"ul"|"quote", text)`)."""

    def __init__(self, rnd, topic, town, n_paragraphs):
        key, headline, subjects, issues = topic
        self.key = key
        self.headline = headline + " in " + town
        self.town = town
        self.author = rnd.choice(PEOPLE)
        self.coauthor = rnd.choice([p for p in PEOPLE if p != self.author])
        self.person = rnd.choice([p for p in PEOPLE if p not in (self.author, self.coauthor)])
        self.role = rnd.choice(ROLES)
        fill = lambda template: template.format(
            town=town, subject=rnd.choice(subjects), Subject=cap(rnd.choice(subjects)),
            subject2=rnd.choice(subjects), issue=rnd.choice(issues), person=self.person,
            Person=self.person, role=self.role, money="\u00a3" + f"{rnd.randint(2, 90)}"
            + rnd.choice([".5 million", " million", "0,000"]), pct=rnd.randint(5, 40),
            month=rnd.choice(MONTHS), small=rnd.choice(["three", "four", "five", "six"]),
            big=f"{rnd.randint(12, 980)},{rnd.randint(100, 999)}", year=rnd.randint(1790, 1960))
        pool = SENTENCES[:]
        rnd.shuffle(pool)
        self.blocks = [("p", fill(rnd.choice(OPENERS)) + " " + fill(pool.pop()))]
        subheads = SUBHEADS[:]
        rnd.shuffle(subheads)
        for index in range(1, n_paragraphs):
            if index % 4 == 0 and subheads:
                self.blocks.append(("h2", subheads.pop()))
            if index == 5:
                self.blocks.append(("ul", [fill(item) for item in rnd.sample(LIST_ITEMS, 3)]))
            if index == 3 and rnd.random() < 0.5:
                self.blocks.append(("quote", fill(pool.pop())))
            if not pool:
                pool = SENTENCES[:]
                rnd.shuffle(pool)
            count = rnd.choice([1, 2, 2, 3])
            sentences = [fill(pool.pop()) for _ in range(min(count, len(pool)))]
            self.blocks.append(("p", " ".join(sentences) or fill(SENTENCES[0])))

    def truth(self):
        lines = []
        for kind, text in self.blocks:
            lines.extend(text if kind == "ul" else [text])
        return "\n".join(lines)


def esc(text):
    return html.escape(text, quote=False)


def block_html(kind, text):
    if kind == "p":
        return f"<p>{esc(text)}</p>"
    if kind == "h2":
        return f"<h2>{esc(text)}</h2>"
    if kind == "quote":
        return f"<blockquote><p>{esc(text)}</p></blockquote>"
    return "<ul>" + "".join(f"<li>{esc(item)}</li>" for item in text) + "</ul>"


# ---- The furniture: each a function of (article, rnd) to HTML. ----

def byline(a, rnd):
    return (f'<div class="byline">By <a href="/authors/{a.author.lower().replace(" ", "-")}">'
            f'{a.author}</a> and <a href="/authors/x">{a.coauthor}</a>, {a.town} correspondents'
            f'</div><div class="timestamp"><time datetime="2025-03-04T16:12:00Z">Updated '
            f'{rnd.randint(1, 11)}:{rnd.randint(10, 59)} PM GMT, Tue March 4, 2025</time> '
            f'<span>Published 9:02 AM GMT</span></div>')


def caption_figure(a, rnd, n=1):
    text = (f"Crews from {a.town} inspect the site on a grey morning before the work on the "
            f"{a.key} project began in earnest last week")
    return (f'<figure class="lead-image"><img src="/img/{a.key}-{n}.jpg" alt="{a.key} site">'
            f'<figcaption><div class="caption-short">{esc(text[:60])}\u2026 '
            f'<button class="more">more</button></div><div class="caption-full" '
            f'hidden>{esc(text)}. <button class="less">less</button></div>'
            f'<span class="credit">Photo: {rnd.choice(PEOPLE)} / Coastline Pictures</span>'
            f'</figcaption></figure>')


def gallery(a, rnd):
    slides = []
    for i in range(1, 5):
        slides.append(
            f'<li class="slide"><span class="counter">Image {i} of 8</span>'
            f'<img src="/img/g{i}.jpg" alt=""><p class="slide-caption">View number {i} of the '
            f'{a.key} works, taken from the north side of {a.town} at first light.</p>'
            f'<span class="credit">{rnd.choice(PEOPLE)} for The Gazette</span></li>')
    return (f'<div class="gallery"><div class="gallery-count">8</div><ul>{"".join(slides)}'
            f'</ul><button>Previous</button><button>Next</button><span>6</span></div>')


def kicker(a, rnd):
    return (f'<a class="kicker" href="/section/{a.key}">{cap(a.key)} &amp; Environment</a>'
            f'<span class="section-label">Analysis</span>')


def share(a, rnd):
    return ('<ul class="share-tools"><li><a href="#">Share on Facebook</a></li><li><a href="#">'
            'Share on X</a></li><li><a href="#">Email this story</a></li><li><button>Copy link'
            '</button></li><li><a href="#">Print</a></li></ul>')


def newsletter(a, rnd):
    return (f'<div class="newsletter-signup"><p class="promo">Get the {a.town} Morning Brief '
            f'newsletter: the day\u2019s top local stories in your inbox before 7am.</p>'
            f'<form><input type="email" placeholder="Your email"><button>Sign up</button>'
            f'</form><p class="small">By signing up you agree to our privacy notice.</p></div>')


def tipline(a, rnd):
    return ("<p><em>Do you have a story or a tip for our newsroom? Email tips@gazette.example "
            "or message us on our secure line.</em></p>")


def related(a, rnd):
    items = "".join(f'<li><a href="/story/{i}">{esc(h)}</a></li>' for i, h in enumerate(
        [t[1] for t in rnd.sample(TOPICS, 4)]))
    return f'<section class="related-links"><h2>You may also like</h2><ul>{items}</ul></section>'


def comment_policy(a, rnd):
    return ('<section id="comments"><h3>Comments</h3><p class="policy">We welcome lively and '
            'respectful discussion. Comments are moderated and may take up to a day to appear; '
            'please read our community guidelines before posting.</p><button>Show 42 comments'
            '</button></section>')


def breadcrumbs(a, rnd):
    return (f'<nav class="breadcrumbs"><a href="/">Home</a> \u203a <a href="/news">News</a> '
            f'\u203a <a href="/news/local">Local</a> \u203a <span>{a.town}</span></nav>')


def address_footer(a, rnd):
    return (f'<div class="publisher-info"><p>The {a.town} Gazette, 14 Quay Street, {a.town}. '
            f'Registered in England no. 0{rnd.randint(1000000, 9999999)}.</p><p>\u00a9 2025 '
            f'Coastline Media Ltd. All rights reserved.</p></div>')


def tags(a, rnd):
    return (f'<div class="tags">Topics: <a href="/t/{a.key}">{a.key}</a> <a href="/t/local">'
            f'local news</a> <a href="/t/{a.town}">{a.town}</a></div>')


def author_bio(a, rnd):
    return (f'<div class="author-bio"><img src="/img/authors/1.jpg" alt=""><p><strong>'
            f'{a.author}</strong> covers transport, planning and the coast for the Gazette. '
            f'Follow her work and get in touch with ideas for stories.</p></div>')


FURNITURE = [byline, caption_figure, gallery, kicker, share, newsletter, tipline, related,
             comment_policy, breadcrumbs, address_footer, tags, author_bio]


def hover_card(a, text):
    """The person's name in the first paragraph that mentions it, wrapped in a hover card."""
    card = (f'<span class="entity"><a href="/people/1">{a.person}</a><span class="hover-card" '
            f'role="tooltip"><span>{a.person}</span><span>Born in {a.town}. Has written 38 '
            f'articles for the Gazette.</span><button>Follow</button></span></span>')
    return text.replace(esc(a.person), card, 1)


def video_figure(a):
    playable = json.dumps({
        "id": f"v-{a.key}-01", "title": f"Watch: {a.headline}", "duration": 94,
        "poster": f"https://media.gazette.example/video/{a.key}/poster-1280x720.jpg",
        "sources": [{"type": "application/x-mpegURL",
                     "src": f"https://media.gazette.example/video/{a.key}/master.m3u8"},
                    {"type": "video/mp4",
                     "src": f"https://media.gazette.example/video/{a.key}/720.mp4"}],
        "ads": {"preroll": True, "tag": "https://ads.example/vast?slot=news"}})
    return (f"<figure class=\"video-player\" data-playable='{html.escape(playable)}'>"
            f'<div class="video-placeholder"><button aria-label="Play video"></button></div>'
            f"</figure>")


def body_html(a, rnd, modes):
    parts = []
    for index, (kind, text) in enumerate(a.blocks):
        piece = block_html(kind, text)
        if "hover" in modes and kind == "p" and esc(a.person) in piece:
            piece = hover_card(a, piece)
            modes = modes - {"hover"}
        parts.append(piece)
        if index == 1 and "video" in modes:
            parts.append(video_figure(a))
        if index == 2 and "newsletter-mid" in modes:
            parts.append(newsletter(a, rnd))
        if kind == "h2" and "heading-caption" in modes:
            parts.append(f'<figure><img src="/img/{index}.jpg" alt=""><figcaption>{esc(text)}'
                         f'</figcaption></figure>')
        if index == 4 and "gallery" in modes:
            parts.append(gallery(a, rnd))
        if index == 3 and "related-mid" in modes:
            parts.append(f'<aside class="inline-related"><strong>Read more:</strong> <a href='
                         f'"/s/9">{esc(rnd.choice(TOPICS)[1])}</a></aside>')
    return "\n".join(parts)


def site_header(a):
    return (f'<header class="site-header"><a class="logo" href="/">The {a.town} Gazette</a>'
            f'<nav><ul><li><a href="/news">News</a></li><li><a href="/sport">Sport</a></li><li>'
            f'<a href="/opinion">Opinion</a></li><li><a href="/culture">Culture</a></li><li><a '
            f'href="/subscribe">Subscribe</a></li></ul></nav></header>')


def site_footer(a):
    return (f'<footer class="site-footer"><ul><li><a href="/about">About us</a></li><li><a '
            f'href="/contact">Contact</a></li><li><a href="/privacy">Privacy</a></li></ul><p>'
            f'\u00a9 2025 Coastline Media Ltd</p></footer>')


def head(a):
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>'
            f'{esc(a.headline)} | The {a.town} Gazette</title><meta property="og:title" '
            f'content="{html.escape(a.headline)}"><meta name="author" content="{a.author}">'
            f'<script>window.dataLayer=[{{"page":"article"}}];</script></head>')


def layout_news(a, rnd, modes, top, bottom):
    """A news site: one `<article>` holding the story and its furniture."""
    return (f'{head(a)}<body>{site_header(a)}<main><article class="story">{top}'
            f'<h1>{esc(a.headline)}</h1>'
            f'<div class="story-body">{body_html(a, rnd, modes)}</div>{bottom}</article>'
            f'<aside class="rail"><h3>Most read</h3><ol><li><a href="/1">'
            f'{esc(TOPICS[0][1])}</a></li><li><a href="/2">{esc(TOPICS[1][1])}</a></li></ol>'
            f'</aside></main>{site_footer(a)}</body></html>')


def layout_teaser(a, rnd, modes, top, bottom):
    """The story in `<div>`s with no `<article>`; the page's only `<article>` is a teaser."""
    other = rnd.choice([t for t in TOPICS if t[0] != a.key])
    teaser = (f'<article class="card teaser"><a href="/story/77"><img src="/img/t.jpg" alt="">'
              f'<h3>{esc(other[1])}</h3></a><p>The {other[0]} story everyone in {a.town} is '
              f'talking about, and what it means for the rest of the county this year.</p>'
              f'<span class="read-time">4 min read</span></article>')
    return (f'{head(a)}<body>{site_header(a)}<div id="page"><div class="story-wrap">{top}'
            f'<h1>{esc(a.headline)}</h1><div class="story-text">{body_html(a, rnd, modes)}'
            f'</div>{bottom}</div><div class="sidebar"><h3>Related</h3>{teaser}</div></div>'
            f'{site_footer(a)}</body></html>')


def layout_blog(a, rnd, modes, top, bottom):
    """A blog: `<main>` with the post in a `div.entry-content`, comments below."""
    return (f'{head(a)}<body><div class="wrap">{site_header(a)}<main id="main">'
            f'<div class="post">{top}<h1 class="entry-title">{esc(a.headline)}</h1>'
            f'<div class="entry-content">{body_html(a, rnd, modes)}</div>{bottom}</div>'
            f'</main><div class="widget-area"><section><h2>Archives</h2><ul><li>March 2025'
            f'</li><li>February 2025</li></ul></section></div>{site_footer(a)}</div></body>'
            f'</html>')


def layout_magazine(a, rnd, modes, top, bottom):
    """A magazine: no semantic containers, the story in `section`s with a lead figure."""
    return (f'{head(a)}<body><div class="top-bar">{site_header(a)}</div><div class="content">'
            f'<div class="hero">{top}<h1>{esc(a.headline)}</h1></div><section class="body">'
            f'{body_html(a, rnd, modes)}</section>{bottom}</div>{site_footer(a)}</body></html>')


LAYOUTS = [layout_news, layout_blog, layout_magazine]


def layout_of(index):
    """Every seventh page has the teaser layout; the others take the rest in turn."""
    return layout_teaser if index % 7 == 3 else LAYOUTS[index % len(LAYOUTS)]
BODY_MODES = ["hover", "video", "newsletter-mid", "heading-caption", "gallery", "related-mid"]


def page(index):
    rnd = random.Random(1000 + index)
    topic = TOPICS[index % len(TOPICS)]
    town = TOWNS[index % len(TOWNS)]
    long_read = index >= NAMED_PAGES + HASHED_PAGES
    a = Article(rnd, topic, town, rnd.randint(90, 120) if long_read else rnd.randint(7, 14))
    layout = layout_of(index)
    # Two or three body failure modes and four to seven furniture pieces per page, in turn.
    modes = {BODY_MODES[index % len(BODY_MODES)], BODY_MODES[(index * 5 + 2) % len(BODY_MODES)]}
    if index % 3 == 0:
        modes.add(BODY_MODES[(index + 3) % len(BODY_MODES)])
    furniture = rnd.sample(FURNITURE, rnd.randint(4, 7))
    if index % 5 == 0 and breadcrumbs not in furniture:
        furniture.append(breadcrumbs)
    top_kinds = {byline, caption_figure, kicker, share, breadcrumbs}
    top = "".join(f(a, rnd) for f in furniture if f in top_kinds)
    bottom = "".join(f(a, rnd) for f in furniture if f not in top_kinds)
    return layout(a, rnd, modes, top, bottom), a


def hashed_names(document):
    """Every `class` and `id` replaced by a hash, as CSS-in-JS sites write them (`css-1q2w3e`):
    the page says what its parts are only by their text, tags and roles."""
    def rename(match):
        names = " ".join("css-" + hashlib.sha1(name.encode()).hexdigest()[:6]
                         for name in match.group(2).split())
        return f'{match.group(1)}="{names}"'
    return re.sub(r'\b(class|id)="([^"]*)"', rename, document)


#: Pages with ordinary class names, then pages whose names are hashed, then long reads (some
#: 20,000 characters: ten pages of a `web_fetch_batch` call together pass its 50,000).
NAMED_PAGES = 40
HASHED_PAGES = 12
LONG_PAGES = 4


def main():
    truth = {}
    for index in range(NAMED_PAGES + HASHED_PAGES + LONG_PAGES):
        document, article = page(index)
        layout = layout_of(index).__name__[7:]
        if index >= NAMED_PAGES + HASHED_PAGES:
            layout += "-long"
        elif index >= NAMED_PAGES:
            document = hashed_names(document)
            layout += "-hashed"
        page_id = f"{index:02d}-{article.key}-{layout}"
        # Gzipped with no name or time in the header: the same bytes every run.
        with open(OUT / f"{page_id}.html.gz", "wb") as raw, \
                gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as packed:
            packed.write(document.encode("utf-8"))
        truth[page_id] = {"articleBody": article.truth(),
                          "url": f"https://{article.town.lower().replace(' ', '')}.example/"
                                 f"news/{article.key}-{index}"}
    (OUT / "ground-truth.json").write_text(
        json.dumps(truth, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

//! Web reading quality: how much of a page's article `web_fetch` gives the model, and how much
//! else, against hand-made ground truth, side by side with other extractors in the same run.
//!
//! **The corpus** is a folder of `<id>.html` (or `<id>.html.gz`) pages and a
//! `ground-truth.json` of `{id: {"articleBody": text, "url": …}}`; `UNIPI_WEB_CORPUS` names it,
//! else `benches/web_corpus/` (ours: 40 made-up pages imitating news and blog layouts with the
//! failure modes of issue 27, written by `benches/web_corpus/generate.py`).
//!
//! **The engines**, each given every page:
//! - `unipi web_fetch`: the pages are served from a loopback server and fetched by the real
//!   [`Fetcher`] (body decoding, extraction, metadata), and each page becomes the text the
//!   `web_fetch` tool returns (`format::page_text` at the default `maxChars`, markdown); the header
//!   (title, URL, metadata) is dropped and the content after it is scored.
//! - `unipi web_fetch_batch`: the same fetches given ten a call to `format::batch_text`, the text
//!   `web_fetch_batch` returns, each page's section scored without its header.
//! - `whole page text`: the text of `<body>` without scripts and styles (the floor).
//! - `trafilatura (Python)`: `trafilatura.extract(html, url=…, include_comments=False)` when
//!   `python3` can import it (with `.test-deps/python` on its path: `scripts/test-deps.sh` installs
//!   it there); "not installed" otherwise.
//! - `rs-trafilatura`: `rs_trafilatura::extract_bytes(html).content_text` (its defaults), by a
//!   helper built apart (`benches/web_corpus/rs-trafilatura`: its HTML stack is a second copy of
//!   ours, so it is not one of our dependencies) that `UNIPI_WEB_QUALITY_RS_TRAFILATURA` names;
//!   "not built" otherwise.
//!
//! **The score.** Markdown is reduced to words: images (`![alt](src)`) are dropped, a link
//! `[text](url)` keeps its text; then a text's tokens are its runs of Unicode word characters
//! (`\w+`), lower-cased, and its shingles are the multiset of its runs of 4 consecutive tokens (a
//! text of 1–3 tokens is one shingle). Per page, with `tp` the shingles the extraction and the
//! truth share (counted with multiplicity): precision = tp / the extraction's shingles, recall =
//! tp / the truth's shingles, F1 their harmonic mean; an empty extraction scores 0 on all three.
//! The table gives each of the three averaged over the pages (so F1 is the mean of the pages'
//! F1, not the F1 of the mean precision and recall), and how many pages fall below 0.9
//! precision and recall.
//!
//! Run with `cargo bench --bench web_quality` (`UNIPI_WEB_QUALITY_PAGES=1` lists every page's
//! scores, `UNIPI_WEB_QUALITY_DUMP=<dir>` writes every engine's text of every page there;
//! `cargo test --bench web_quality -- --bench` gives the same figures from a debug build). Under
//! `cargo test --all-targets` (no `--bench` argument) it scores our engine on a few pages as a
//! smoke pass. Figures are printed, never asserted.

use std::collections::{BTreeMap, HashMap};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use axum::Router;
use axum::extract::{Path as RoutePath, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use dom_query::Document;
use unipi_tui::web::batch;
use unipi_tui::web::config::WebConfig;
use unipi_tui::web::fetch::{Fetched, Fetcher, FetcherSettings};
use unipi_tui::web::format::{batch_text, page_text};
use unipi_tui::web::guard::AddressPolicy;
use unipi_tui::web::page::{FetchOptions, Format};

/// Pages per `web_fetch_batch` call.
const BATCH_SIZE: usize = 10;
/// Pages scored by the smoke pass.
const SMOKE_PAGES: usize = 3;

/// A page of the corpus.
struct Sample {
    id: String,
    html: Vec<u8>,
    truth: String,
}

/// One engine's extraction of every page (`Err`: why the engine is not available).
struct Run {
    engine: &'static str,
    texts: Result<Vec<String>, String>,
}

fn main() -> ExitCode {
    // cargo passes `--bench` under `cargo bench`; `cargo test --all-targets` runs us without it.
    let full = std::env::args().any(|arg| arg == "--bench");
    match run(full) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("web_quality bench: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(full: bool) -> Result<()> {
    let corpus = std::env::var_os("UNIPI_WEB_CORPUS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/web_corpus"),
        PathBuf::from,
    );
    let mut samples = load(&corpus)?;
    if !full {
        samples.truncate(SMOKE_PAGES);
    }
    let fetched = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot build the tokio runtime")?
        .block_on(fetch_all(&samples))?;
    let max_chars = WebConfig::default().max_chars;
    let mut runs = vec![
        Run {
            engine: "unipi web_fetch",
            texts: Ok(fetched
                .iter()
                .map(|page| after_header(&page_text(page, max_chars).0))
                .collect()),
        },
        Run {
            engine: "unipi web_fetch_batch (10/call)",
            texts: Ok(batched(&fetched, max_chars)),
        },
    ];
    if full {
        runs.push(Run {
            engine: "whole page text",
            texts: Ok(samples.iter().map(whole_text).collect()),
        });
        runs.push(Run {
            engine: "trafilatura (Python)",
            texts: trafilatura(&corpus, &samples),
        });
        runs.push(Run {
            engine: "rs-trafilatura 0.2.2",
            texts: rs_trafilatura(&corpus, &samples),
        });
    }
    println!(
        "Web reading quality: {} pages of {}\n",
        samples.len(),
        corpus.display()
    );
    let scores: Vec<Result<Vec<Score>, &String>> = runs
        .iter()
        .map(|run| match &run.texts {
            Ok(texts) => Ok(samples
                .iter()
                .zip(texts)
                .map(|(sample, text)| Score::of(text, &sample.truth))
                .collect()),
            Err(why) => Err(why),
        })
        .collect();
    let all: Vec<usize> = (0..samples.len()).collect();
    table(&runs, &scores, &all);
    // Our corpus's last pages have hashed class names: the rules that read them cannot help.
    let hashed: Vec<usize> = all
        .iter()
        .copied()
        .filter(|&index| samples[index].id.ends_with("-hashed"))
        .collect();
    if !hashed.is_empty() {
        println!(
            "\nOf which the {} pages with hashed class names:\n",
            hashed.len()
        );
        table(&runs, &scores, &hashed);
    }
    let ours = match scores.first() {
        Some(Ok(scores)) => scores.as_slice(),
        _ => &[],
    };
    if let Some(dump) = std::env::var_os("UNIPI_WEB_QUALITY_DUMP") {
        dump_texts(Path::new(&dump), &samples, &runs)?;
    }
    let junk_images = fetched
        .iter()
        .filter(|page| json_image(&page.page.content))
        .count();
    println!("\nunipi web_fetch: {junk_images} pages with an image whose address is JSON");
    let listed = std::env::var_os("UNIPI_WEB_QUALITY_PAGES").is_some();
    let mut order: Vec<usize> = (0..ours.len()).collect();
    order.sort_by(|&a, &b| ours[a].f1.total_cmp(&ours[b].f1));
    let shown = if listed {
        order.len()
    } else {
        order.len().min(8)
    };
    println!("unipi web_fetch, the {shown} lowest F1 (page: F1 precision recall, extraction):");
    for &index in &order[..shown] {
        let score = &ours[index];
        println!(
            "  {:<28} {:.3} {:.3} {:.3}  {}",
            samples[index].id,
            score.f1,
            score.precision,
            score.recall,
            fetched[index].page.extraction.as_deref().unwrap_or("-")
        );
    }
    Ok(())
}

/// The table of every engine's mean scores over the pages `pages`.
fn table(runs: &[Run], scores: &[Result<Vec<Score>, &String>], pages: &[usize]) {
    println!(
        "| {:<32} | {:>5} | {:>9} | {:>6} | {:>6} | {:>6} |",
        "extractor", "F1", "precision", "recall", "P<0.9", "R<0.9"
    );
    println!(
        "|{:-<34}|{:->7}|{:->11}|{:->8}|{:->8}|{:->8}|",
        "", "", "", "", "", ""
    );
    for (run, scores) in runs.iter().zip(scores) {
        let scores = match scores {
            Ok(scores) => pages
                .iter()
                .map(|&index| &scores[index])
                .collect::<Vec<_>>(),
            Err(why) => {
                println!("| {:<32} | {why}", run.engine);
                continue;
            }
        };
        let mean = |part: fn(&Score) -> f64| {
            scores.iter().map(|score| part(score)).sum::<f64>() / scores.len().max(1) as f64
        };
        let below =
            |part: fn(&Score) -> f64| scores.iter().filter(|score| part(score) < 0.9).count();
        println!(
            "| {:<32} | {:>5.3} | {:>9.3} | {:>6.3} | {:>6} | {:>6} |",
            run.engine,
            mean(|s| s.f1),
            mean(|s| s.precision),
            mean(|s| s.recall),
            below(|s| s.precision),
            below(|s| s.recall),
        );
    }
}

/// Every engine's text of every page, as `<dir>/<id>.<engine>.txt`, to see what was scored.
fn dump_texts(dir: &Path, samples: &[Sample], runs: &[Run]) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    for run in runs {
        let Ok(texts) = &run.texts else { continue };
        let engine: String = run
            .engine
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect();
        for (sample, text) in samples.iter().zip(texts) {
            std::fs::write(dir.join(format!("{}.{engine}.txt", sample.id)), text)?;
        }
    }
    Ok(())
}

/// Whether `markdown` has an image whose address is JSON (`![](<…/{&quot;id&quot;…>)`).
fn json_image(markdown: &str) -> bool {
    markdown.match_indices("![").any(|(at, _)| {
        let rest = &markdown[at..];
        rest.find("](").is_some_and(|open| {
            let target = &rest[open + 2..];
            let target = &target[..target.find(')').unwrap_or(target.len())];
            target.contains('{') || target.contains("%7B")
        })
    })
}

/// The pages of `corpus` that have ground truth, in the order of their ids.
fn load(corpus: &Path) -> Result<Vec<Sample>> {
    let truth_path = corpus.join("ground-truth.json");
    let truth: BTreeMap<String, serde_json::Value> = serde_json::from_slice(
        &std::fs::read(&truth_path).with_context(|| truth_path.display().to_string())?,
    )
    .with_context(|| truth_path.display().to_string())?;
    let mut samples = Vec::new();
    for (id, item) in truth {
        let body = item["articleBody"].as_str().unwrap_or_default().to_owned();
        let plain = corpus.join(format!("{id}.html"));
        let packed = corpus.join(format!("{id}.html.gz"));
        let html = if plain.exists() {
            std::fs::read(&plain).with_context(|| plain.display().to_string())?
        } else if packed.exists() {
            let mut bytes = Vec::new();
            flate2::read::GzDecoder::new(std::fs::File::open(&packed)?)
                .read_to_end(&mut bytes)
                .with_context(|| packed.display().to_string())?;
            bytes
        } else {
            eprintln!("web_quality: {id} has ground truth but no page; skipped");
            continue;
        };
        samples.push(Sample {
            id,
            html,
            truth: body,
        });
    }
    if samples.is_empty() {
        bail!("no pages in {}", corpus.display());
    }
    Ok(samples)
}

/// Every page fetched by the real fetcher from a loopback server, in corpus order.
async fn fetch_all(samples: &[Sample]) -> Result<Vec<Fetched>> {
    let pages: Arc<HashMap<String, Vec<u8>>> = Arc::new(
        samples
            .iter()
            .map(|sample| (sample.id.clone(), sample.html.clone()))
            .collect(),
    );
    let app = Router::new()
        .route("/page/{id}", axum::routing::get(serve))
        .with_state(pages);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let fetcher = Fetcher::new(FetcherSettings {
        policy: AddressPolicy::new(true),
        user_agent: None,
        cache: None,
    });
    let defaults = WebConfig::default();
    let options = FetchOptions {
        format: Format::Markdown,
        include_images: true,
        timeout: defaults.timeout.max(Duration::from_secs(60)),
    };
    let urls: Vec<String> = samples
        .iter()
        .map(|sample| format!("http://{addr}/page/{}", sample.id))
        .collect();
    let results = batch::fetch_all(&fetcher, &urls, &options, 2, |_, _| {}).await;
    server.abort();
    results
        .into_iter()
        .map(|result| result.map_err(|err| anyhow::anyhow!(err.describe())))
        .collect()
}

async fn serve(
    State(pages): State<Arc<HashMap<String, Vec<u8>>>>,
    RoutePath(id): RoutePath<String>,
) -> Response {
    match pages.get(&id) {
        Some(html) => ([(header::CONTENT_TYPE, "text/html")], html.clone()).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The content under a `web_fetch` answer's header.
fn after_header(text: &str) -> String {
    text.split_once("\n---\n\n")
        .map_or(text, |(_, content)| content)
        .to_owned()
}

/// Each page's content as `web_fetch_batch` gives it, [`BATCH_SIZE`] pages a call.
fn batched(fetched: &[Fetched], max_chars: usize) -> Vec<String> {
    let mut texts = Vec::with_capacity(fetched.len());
    for chunk in fetched.chunks(BATCH_SIZE) {
        let results: Vec<_> = chunk.iter().cloned().map(Ok).collect();
        let text = batch_text(&results, max_chars);
        // Sections are separated by rules; the first is the batch's own header.
        let sections: Vec<&str> = text.split("\n---\n\n").skip(1).collect();
        for index in 0..chunk.len() {
            let section = sections.get(index).copied().unwrap_or_default();
            // The page's header ends at its word count; its content follows the blank line.
            let content = section
                .find("\nWord count: ")
                .and_then(|at| section[at + 1..].split_once('\n'))
                .map_or(section, |(_, rest)| rest);
            texts.push(content.to_owned());
        }
    }
    texts
}

/// The text of a page's `<body>` without scripts and styles.
fn whole_text(sample: &Sample) -> String {
    let document = Document::from(String::from_utf8_lossy(&sample.html).as_ref());
    document
        .select("script, style, noscript, template")
        .remove();
    document.select("body").text().to_string()
}

/// Python trafilatura's extraction of every page, run once over the corpus.
fn trafilatura(corpus: &Path, samples: &[Sample]) -> Result<Vec<String>, String> {
    const SCRIPT: &str = r#"
import gzip, json, os, sys
import trafilatura
corpus, ids = sys.argv[-1], json.loads(sys.stdin.read())
truth = json.load(open(os.path.join(corpus, "ground-truth.json"), encoding="utf-8"))
out = {}
for page in ids:
    path = os.path.join(corpus, page + ".html")
    raw = open(path, "rb").read() if os.path.exists(path) else gzip.open(path + ".gz").read()
    text = trafilatura.extract(raw, url=truth[page].get("url"), include_comments=False)
    out[page] = text or ""
print(json.dumps({"version": trafilatura.__version__, "texts": out}))
"#;
    let deps = Path::new(env!("CARGO_MANIFEST_DIR")).join(".test-deps/python");
    let python_path = match std::env::var_os("PYTHONPATH") {
        Some(existing) => {
            let mut paths = vec![deps];
            paths.extend(std::env::split_paths(&existing));
            std::env::join_paths(paths).map_err(|err| err.to_string())?
        }
        None => deps.into_os_string(),
    };
    let probe = Command::new("python3")
        .args(["-c", "import trafilatura"])
        .env("PYTHONPATH", &python_path)
        .stderr(Stdio::null())
        .status();
    if !probe.is_ok_and(|status| status.success()) {
        return Err("not installed (scripts/test-deps.sh installs it)".to_owned());
    }
    let mut command = Command::new("python3");
    command
        .arg("-c")
        .arg(SCRIPT)
        .env("PYTHONPATH", &python_path);
    external(command, corpus, samples)
}

/// rs-trafilatura's extraction of every page, by the helper in `benches/web_corpus/rs-trafilatura`
/// (built apart: its HTML stack is a second copy of ours) that `UNIPI_WEB_QUALITY_RS_TRAFILATURA`
/// names.
fn rs_trafilatura(corpus: &Path, samples: &[Sample]) -> Result<Vec<String>, String> {
    let Some(helper) = std::env::var_os("UNIPI_WEB_QUALITY_RS_TRAFILATURA") else {
        return Err("not built (see benches/web_corpus/rs-trafilatura/Cargo.toml)".to_owned());
    };
    external(Command::new(helper), corpus, samples)
}

/// Another extractor's text of every page: `command` is given the corpus folder as its last
/// argument and the page ids as a JSON list on stdin, and prints
/// `{"version": …, "texts": {id: text}}`.
fn external(
    mut command: Command,
    corpus: &Path,
    samples: &[Sample],
) -> Result<Vec<String>, String> {
    let ids: Vec<&str> = samples.iter().map(|sample| sample.id.as_str()).collect();
    let program = command.get_program().to_string_lossy().into_owned();
    let mut child = command
        .arg(corpus)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // Its diagnostics are shown only when it fails (rs-trafilatura's debug build talks).
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| format!("{program}: {err}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write as _;
        let ids = serde_json::to_vec(&ids).map_err(|err| err.to_string())?;
        stdin.write_all(&ids).map_err(|err| err.to_string())?;
    }
    let output = child
        .wait_with_output()
        .map_err(|err| format!("{program}: {err}"))?;
    if !output.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&output.stderr));
        return Err(format!("failed ({})", output.status));
    }
    let answer: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|err| err.to_string())?;
    eprintln!(
        "web_quality: {program} {}",
        answer["version"].as_str().unwrap_or("?")
    );
    Ok(ids
        .iter()
        .map(|id| answer["texts"][id].as_str().unwrap_or_default().to_owned())
        .collect())
}

/// One page's precision, recall and F1.
struct Score {
    precision: f64,
    recall: f64,
    f1: f64,
}

impl Score {
    fn of(extracted: &str, truth: &str) -> Score {
        let (extracted, truth) = (words(extracted), words(truth));
        let (got, want) = (shingles(&extracted), shingles(&truth));
        let (got_total, want_total): (usize, usize) = (got.values().sum(), want.values().sum());
        let shared: usize = got
            .iter()
            .map(|(shingle, count)| (*count).min(want.get(shingle).copied().unwrap_or(0)))
            .sum();
        if got_total == 0 || want_total == 0 {
            let both_empty = got_total == 0 && want_total == 0;
            let score = if both_empty { 1.0 } else { 0.0 };
            return Score {
                precision: score,
                recall: score,
                f1: score,
            };
        }
        let precision = shared as f64 / got_total as f64;
        let recall = shared as f64 / want_total as f64;
        let f1 = if shared == 0 {
            0.0
        } else {
            2.0 * precision * recall / (precision + recall)
        };
        Score {
            precision,
            recall,
            f1,
        }
    }
}

/// Markdown reduced to words: images dropped, links to their text, then the runs of word
/// characters, lower-cased.
fn words(markdown: &str) -> Vec<String> {
    let mut text = String::with_capacity(markdown.len());
    let mut rest = markdown;
    while let Some(at) = rest.find('[') {
        let image = rest[..at].ends_with('!');
        text.push_str(&rest[..if image { at - 1 } else { at }]);
        let after = &rest[at + 1..];
        // `[label](target)`: the label stays (not an image's), the target goes.
        let link = after.find("](").and_then(|close| {
            let target = &after[close + 2..];
            target
                .find(')')
                .map(|end| (&after[..close], &target[end + 1..]))
        });
        match link {
            Some((label, tail)) if !label.contains('\n') => {
                if !image {
                    text.push_str(label);
                }
                rest = tail;
            }
            _ => {
                text.push('[');
                rest = after;
            }
        }
    }
    text.push_str(rest);
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The multiset of runs of 4 consecutive words (one run of all of them when there are fewer).
fn shingles(words: &[String]) -> HashMap<Vec<&str>, usize> {
    let mut counts = HashMap::new();
    if words.is_empty() {
        return counts;
    }
    let size = 4.min(words.len());
    for window in words.windows(size) {
        let key: Vec<&str> = window.iter().map(String::as_str).collect();
        *counts.entry(key).or_insert(0) += 1;
    }
    counts
}

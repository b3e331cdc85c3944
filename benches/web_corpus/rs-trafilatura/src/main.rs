//! Runs rs-trafilatura over a corpus folder for the web_quality bench: the folder is the first
//! argument, the page ids a JSON list on stdin; prints `{"version": …, "texts": {id: text}}`.

use std::io::Read as _;
use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let corpus = std::env::args()
        .nth(1)
        .ok_or("usage: rs-trafilatura-corpus <folder>")?;
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input)?;
    let ids: Vec<String> = serde_json::from_str(&input)?;
    let mut texts = serde_json::Map::new();
    for id in ids {
        let plain = Path::new(&corpus).join(format!("{id}.html"));
        let bytes = if plain.exists() {
            std::fs::read(&plain)?
        } else {
            let packed = std::fs::File::open(Path::new(&corpus).join(format!("{id}.html.gz")))?;
            let mut bytes = Vec::new();
            flate2::read::GzDecoder::new(packed).read_to_end(&mut bytes)?;
            bytes
        };
        let text = rs_trafilatura::extract_bytes(&bytes)
            .map(|result| result.content_text)
            .unwrap_or_default();
        texts.insert(id, text.into());
    }
    let answer = serde_json::json!({"version": "0.2.2", "texts": texts});
    println!("{answer}");
    Ok(())
}

//! Splitting long texts into index chunks. A recall hit names a chunk, and its snippet and
//! bm25 score are computed per chunk, so a 200 KB tool output must not be one document (it would
//! match everything weakly and its snippet would be arbitrary). Chunks are slices of the
//! original text, cut at a paragraph break if one falls in the second half of the window, else a
//! line break, else whitespace, else at a character boundary.

/// The target chunk size in bytes (close to characters for the mostly-ASCII text of sessions).
pub(crate) const CHUNK_BYTES: usize = 2_000;

/// The non-blank chunks of `text`, each at most `max_bytes` long (unless one character is longer).
pub(crate) fn chunk_text(text: &str, max_bytes: usize) -> Vec<&str> {
    let max_bytes = max_bytes.max(1);
    let mut chunks = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let cut = if rest.len() <= max_bytes {
            rest.len()
        } else {
            best_break(&rest[..floor_char_boundary(rest, max_bytes)], max_bytes / 2)
        };
        let cut = if cut == 0 { first_char_len(rest) } else { cut };
        let (chunk, tail) = rest.split_at(cut);
        let chunk = chunk.trim();
        if !chunk.is_empty() {
            chunks.push(chunk);
        }
        rest = tail;
    }
    chunks
}

/// Where to end a chunk inside `window`: after the last paragraph break, line break or
/// whitespace that leaves at least `min` bytes in the chunk; else the whole window.
fn best_break(window: &str, min: usize) -> usize {
    for separator in ["\n\n", "\n"] {
        if let Some(at) = window.rfind(separator)
            && at + separator.len() >= min
        {
            return at + separator.len();
        }
    }
    if let Some((at, ch)) = window.char_indices().rev().find(|(_, c)| c.is_whitespace())
        && at >= min
    {
        return at + ch.len_utf8();
    }
    window.len()
}

fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn first_char_len(text: &str) -> usize {
    text.chars().next().map_or(text.len(), char::len_utf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_one_chunk_and_blank_is_none() {
        assert_eq!(chunk_text("hello world", 2_000), ["hello world"]);
        assert!(chunk_text("  \n\n ", 2_000).is_empty());
        assert!(chunk_text("", 2_000).is_empty());
    }

    #[test]
    fn cuts_prefer_paragraphs_then_lines_then_spaces() {
        let paragraph = "p".repeat(60);
        let text = format!("{paragraph}\n\n{paragraph}\n\n{paragraph}");
        assert_eq!(chunk_text(&text, 100), [paragraph.as_str(); 3]);
        let two = format!("{paragraph}\n\n{paragraph}");
        assert_eq!(chunk_text(&text, 130), [two.as_str(), paragraph.as_str()]);

        let lines = "l".repeat(40);
        let text = format!("{lines}\n{lines}\n{lines}\n{lines}");
        let chunks = chunk_text(&text, 100);
        assert_eq!(
            chunks,
            [format!("{lines}\n{lines}"), format!("{lines}\n{lines}")]
        );

        let words = "word ".repeat(50);
        let chunks = chunk_text(&words, 42);
        assert!(chunks.iter().all(|c| c.len() <= 42 && !c.contains("wo ")));
        assert!(chunks.iter().all(|c| c.split(' ').all(|w| w == "word")));
    }

    #[test]
    fn hard_cuts_respect_char_boundaries_and_cover_everything() {
        let text = "é".repeat(1_001); // 2,002 bytes, no whitespace
        let chunks = chunk_text(&text, 999);
        assert!(chunks.iter().all(|c| c.len() <= 999));
        assert_eq!(chunks.concat(), text);
        // A limit smaller than one character still makes progress.
        assert_eq!(chunk_text("éé", 1), ["é", "é"]);
    }

    #[test]
    fn long_realistic_text_stays_near_the_target() {
        let text = (0..400)
            .map(|i| format!("line {i}: cargo test failed in src/lib.rs with error E{i:04}"))
            .collect::<Vec<_>>()
            .join("\n");
        let chunks = chunk_text(&text, CHUNK_BYTES);
        assert!(chunks.len() > 5);
        assert!(chunks.iter().all(|c| c.len() <= CHUNK_BYTES));
        let (_last, full) = chunks.split_last().unwrap();
        assert!(full.iter().all(|c| c.len() > CHUNK_BYTES / 2));
        assert!(chunks.iter().all(|c| c.starts_with("line ")));
    }
}

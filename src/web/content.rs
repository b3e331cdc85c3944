//! What a response body is, from its `Content-Type` (or, when the server names none, from its
//! first bytes): HTML for extraction, JSON to pretty-print, text to give as it is, or binary —
//! which is never downloaded, only named.

use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE};

use super::charset;

/// How a body is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyKind {
    Html,
    Json,
    Text,
    Binary,
}

/// The MIME type (lower case, without parameters) and the `charset` parameter of a
/// `Content-Type` header value.
pub(crate) fn parse_content_type(value: &str) -> (String, Option<String>) {
    let mut parts = value.split(';');
    let mime = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
    let charset = parts.find_map(|part| {
        let (name, value) = part.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches(['"', '\'']).to_owned())
            .filter(|value| !value.is_empty())
    });
    (mime, charset)
}

/// The kind a declared MIME type means; `None` when there is none to go by.
pub(crate) fn classify(mime: &str) -> Option<BodyKind> {
    if mime.is_empty() {
        return None;
    }
    let (top, sub) = mime.split_once('/').unwrap_or((mime, ""));
    Some(match (top, sub) {
        ("text", "html") | ("application", "xhtml+xml") => BodyKind::Html,
        ("application" | "text", "json") => BodyKind::Json,
        (_, sub) if sub.ends_with("+json") => BodyKind::Json,
        ("text", _) => BodyKind::Text,
        (
            "application",
            "xml"
            | "javascript"
            | "ecmascript"
            | "x-javascript"
            | "yaml"
            | "x-yaml"
            | "toml"
            | "x-sh"
            | "sql"
            | "graphql"
            | "x-ndjson"
            | "jsonl"
            | "x-www-form-urlencoded",
        ) => BodyKind::Text,
        (_, sub) if sub.ends_with("+xml") => BodyKind::Text,
        // image/, audio/, video/, font/, model/, application/pdf, zip, octet-stream, x-…
        _ => BodyKind::Binary,
    })
}

/// The kind and MIME type of a body the server did not label, from its first bytes.
pub(crate) fn sniff(body: &[u8]) -> (BodyKind, &'static str) {
    if let Some(mime) = binary_type(body, None) {
        return (BodyKind::Binary, mime);
    }
    let head = &body[..body.len().min(SNIFF_BYTES)];
    let text = charset::decode(head, None, false, None);
    let start = text.trim_start_matches('\u{feff}').trim_start();
    if start.starts_with('<') {
        return (BodyKind::Html, "text/html");
    }
    if (start.starts_with('{') || start.starts_with('['))
        && serde_json::from_slice::<serde_json::Value>(body).is_ok()
    {
        return (BodyKind::Json, "application/json");
    }
    (BodyKind::Text, "text/plain")
}

/// How many first bytes are looked at (the WHATWG MIME sniffing standard's resource header).
const SNIFF_BYTES: usize = 1445;

/// A body that is not text whatever its label says (a server that calls everything
/// `text/html`, a download behind a page's URL): its real type when its first bytes show it,
/// else `application/octet-stream`; `None` for text. Binary is a known file signature, a NUL
/// byte, or more than 1 in [`CONTROLS_PER_TEXT`] of the first bytes being control bytes that
/// no text uses (the WHATWG standard's "binary data bytes": not tab, newline, form feed,
/// carriage return or escape) — random bytes have one in ten, a text file with a stray one
/// stays text. A body declared as UTF-16 (`charset`) is text with NULs in it.
pub(crate) fn binary_type(body: &[u8], charset: Option<&str>) -> Option<&'static str> {
    if let Some(mime) = signature(body, Strong) {
        return Some(mime);
    }
    let head = &body[..body.len().min(SNIFF_BYTES)];
    let utf16 = Encoding::for_bom(head).is_some_and(|(encoding, _)| encoding != UTF_8)
        || charset
            .and_then(|label| Encoding::for_label(label.trim().as_bytes()))
            .is_some_and(|encoding| encoding == UTF_16LE || encoding == UTF_16BE);
    if utf16 {
        return None;
    }
    let controls = head
        .iter()
        .filter(|byte| is_binary_data_byte(**byte))
        .count();
    let binary = head.contains(&0) || controls * CONTROLS_PER_TEXT > head.len();
    binary.then(|| signature(body, Weak).unwrap_or("application/octet-stream"))
}

/// More control bytes than one in this many makes a body binary ([`binary_type`]).
const CONTROLS_PER_TEXT: usize = 50;

fn is_binary_data_byte(byte: u8) -> bool {
    matches!(byte, 0x00..=0x08 | 0x0b | 0x0e..=0x1a | 0x1c..=0x1f)
}

/// What a file signature tells of a body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Sign {
    /// A text could start with it too: it only names a body already found binary.
    Weak,
    /// No text starts with it: the body is binary whatever else it holds.
    Strong,
}
use Sign::{Strong, Weak};

/// A file signature: `magic` at `offset`, and what it tells.
type Signature = (Sign, usize, &'static [u8], &'static str);

#[rustfmt::skip]
const SIGNATURES: &[Signature] = &[
    (Strong, 0, b"%PDF-", "application/pdf"),
    (Strong, 0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (Strong, 0, b"GIF87a", "image/gif"),
    (Strong, 0, b"GIF89a", "image/gif"),
    (Strong, 0, b"\xff\xd8\xff", "image/jpeg"),
    (Strong, 8, b"WEBP", "image/webp"),
    (Strong, 8, b"WAVE", "audio/wav"),
    (Strong, 8, b"AVI ", "video/x-msvideo"),
    (Strong, 0, b"OggS\0", "application/ogg"),
    (Strong, 0, b"\x1a\x45\xdf\xa3", "video/webm"),
    (Strong, 4, b"ftyp", "video/mp4"),
    (Strong, 0, b"PK\x03\x04", "application/zip"),
    (Strong, 0, b"\x1f\x8b\x08", "application/gzip"),
    (Strong, 0, b"Rar!\x1a\x07", "application/vnd.rar"),
    (Strong, 0, b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
    (Strong, 0, b"\xfd7zXZ\0", "application/x-xz"),
    (Strong, 0, b"\x28\xb5\x2f\xfd", "application/zstd"),
    (Strong, 0, b"wOFF", "font/woff"),
    (Strong, 0, b"wOF2", "font/woff2"),
    (Strong, 0, b"\x7fELF", "application/x-executable"),
    (Strong, 0, b"\0asm", "application/wasm"),
    (Strong, 0, b"SQLite format 3\0", "application/vnd.sqlite3"),
    (Weak, 0, b"BM", "image/bmp"),
    (Weak, 0, b"\0\0\x01\0", "image/x-icon"),
    (Weak, 0, b"ID3", "audio/mpeg"),
    (Weak, 0, b"OTTO", "font/otf"),
    (Weak, 0, b"\0\x01\0\0", "font/ttf"),
    (Weak, 0, b"BZh", "application/x-bzip2"),
];

/// The MIME type of the first of the [`SIGNATURES`] at least as strong as `sign` that `body`
/// starts with.
fn signature(body: &[u8], sign: Sign) -> Option<&'static str> {
    // The RIFF containers (WebP, WAV, AVI) say what they hold at offset 8.
    let riff = body.starts_with(b"RIFF");
    SIGNATURES
        .iter()
        .find(|(strength, offset, magic, _)| {
            *strength >= sign
                && (*offset != 8 || riff)
                && body
                    .get(*offset..*offset + magic.len())
                    .is_some_and(|found| found == *magic)
        })
        .map(|(_, _, _, mime)| *mime)
}

/// A JSON body pretty-printed with two spaces; a body that is not valid JSON is given as it is,
/// with a note saying why (nothing is lost).
pub(crate) fn pretty_json(text: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => serde_json::to_string_pretty(&value).unwrap_or_else(|_| text.to_owned()),
        Err(err) => format!("[The body is not valid JSON ({err}); shown as it is.]\n\n{text}"),
    }
}

/// The placeholder for a binary body.
pub(crate) fn binary_placeholder(mime: &str, length: Option<u64>) -> String {
    match length {
        Some(bytes) => format!("[Binary file: {mime}, {}]", human_bytes(bytes)),
        None => format!("[Binary file: {mime}]"),
    }
}

/// The placeholder for a body served as text (`declared`) whose bytes are not text.
pub(crate) fn mislabelled_placeholder(mime: &str, declared: &str, length: u64) -> String {
    format!(
        "[Binary file: {mime}, {} — served as {declared}, but the bytes are not text]",
        human_bytes(length)
    )
}

fn human_bytes(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let value = bytes as f64;
    if value < KIB {
        format!("{bytes} bytes")
    } else if value < KIB * KIB {
        format!("{:.1} KiB", value / KIB)
    } else {
        format!("{:.1} MiB", value / (KIB * KIB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_table::check_table;

    #[test]
    fn content_types_are_split_and_classified() {
        assert_eq!(
            parse_content_type("Text/HTML; Charset=\"ISO-8859-1\""),
            ("text/html".to_owned(), Some("ISO-8859-1".to_owned()))
        );
        assert_eq!(parse_content_type(""), (String::new(), None));
        let cases = [
            ("text/html", Some(BodyKind::Html)),
            ("application/xhtml+xml", Some(BodyKind::Html)),
            ("application/json", Some(BodyKind::Json)),
            ("application/ld+json", Some(BodyKind::Json)),
            ("text/plain", Some(BodyKind::Text)),
            ("text/markdown", Some(BodyKind::Text)),
            ("application/rss+xml", Some(BodyKind::Text)),
            ("application/javascript", Some(BodyKind::Text)),
            ("application/pdf", Some(BodyKind::Binary)),
            ("application/octet-stream", Some(BodyKind::Binary)),
            ("application/x-tar", Some(BodyKind::Binary)),
            ("image/png", Some(BodyKind::Binary)),
            ("font/woff2", Some(BodyKind::Binary)),
            ("", None),
        ];
        check_table(cases, |mime| classify(mime));
    }

    #[test]
    fn unlabelled_bodies_are_sniffed() {
        let cases: [(&[u8], BodyKind, &str); 6] = [
            (b"%PDF-1.7\n...", BodyKind::Binary, "application/pdf"),
            (b"abc\0def", BodyKind::Binary, "application/octet-stream"),
            (b"  <!doctype html><p>x", BodyKind::Html, "text/html"),
            (b"{\"a\": 1}", BodyKind::Json, "application/json"),
            (b"{not json", BodyKind::Text, "text/plain"),
            (b"plain words", BodyKind::Text, "text/plain"),
        ];
        for (body, kind, mime) in cases {
            assert_eq!(
                sniff(body),
                (kind, mime),
                "{:?}",
                String::from_utf8_lossy(body)
            );
        }
    }

    /// Bytes from a fixed linear congruential generator: the same "random" body every run.
    fn noise(length: usize) -> Vec<u8> {
        let mut state: u32 = 0x2545_f491;
        (0..length)
            .map(|_| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                (state >> 16) as u8
            })
            .collect()
    }

    #[test]
    fn bodies_that_are_not_text_are_found_whatever_their_label() {
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.extend(noise(300));
        let mut webp = b"RIFF\x10\0\0\0WEBPVP8 ".to_vec();
        webp.extend(noise(64));
        // A bitmap's header: its size, reserved zeros, where the pixels start.
        let mut bmp = b"BM\x36\x0c\0\0\0\0\0\0\x36\0\0\0".to_vec();
        bmp.extend(noise(64));
        let text_with_a_stray_control =
            format!("{}\x01{}", "words ".repeat(20), "more ".repeat(20));
        let cases: [(&[u8], Option<&str>, Option<&str>); 11] = [
            (&png, None, Some("image/png")),
            (&webp, None, Some("image/webp")),
            (
                b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n",
                None,
                Some("application/pdf"),
            ),
            (&noise(2000), None, Some("application/octet-stream")),
            // A weak signature names a body only when its bytes are binary.
            (&bmp, None, Some("image/bmp")),
            (b"BMW and Audi, a comparison", None, None),
            (b"RIFF is not a WEBP file", None, None),
            (text_with_a_stray_control.as_bytes(), None, None),
            ("Привет, мир".as_bytes(), None, None),
            // UTF-16 has NULs in it and is text.
            (b"<\0p\0>\0h\0i\0", Some("utf-16le"), None),
            (b"\xff\xfe<\0p\0>\0", None, None),
        ];
        for (body, charset, want) in cases {
            assert_eq!(
                binary_type(body, charset),
                want,
                "{:?}",
                String::from_utf8_lossy(&body[..body.len().min(40)])
            );
        }
        assert_eq!(
            mislabelled_placeholder("image/png", "text/html", 3 * 1024),
            "[Binary file: image/png, 3.0 KiB — served as text/html, but the bytes are not text]"
        );
    }

    #[test]
    fn json_is_pretty_printed_or_kept_with_a_note() {
        assert_eq!(
            pretty_json("{\"a\":[1,2]}"),
            "{\n  \"a\": [\n    1,\n    2\n  ]\n}"
        );
        let kept = pretty_json("{\"a\":");
        assert!(kept.starts_with("[The body is not valid JSON ("), "{kept}");
        assert!(kept.ends_with("{\"a\":"), "{kept}");
        assert_eq!(
            binary_placeholder("application/pdf", Some(2048)),
            "[Binary file: application/pdf, 2.0 KiB]"
        );
        assert_eq!(
            binary_placeholder("image/png", None),
            "[Binary file: image/png]"
        );
    }
}

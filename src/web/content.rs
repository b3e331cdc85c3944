//! What a response body is, from its `Content-Type` (or, when the server names none, from its
//! first bytes): HTML for extraction, JSON to pretty-print, text to give as it is, or binary —
//! which is never downloaded, only named.

use super::charset;

/// How a body is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    Html,
    Json,
    Text,
    Binary,
}

/// The MIME type (lower case, without parameters) and the `charset` parameter of a
/// `Content-Type` header value.
pub fn parse_content_type(value: &str) -> (String, Option<String>) {
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
pub fn classify(mime: &str) -> Option<BodyKind> {
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
pub fn sniff(body: &[u8]) -> (BodyKind, &'static str) {
    const MAGIC: [(&[u8], &str); 6] = [
        (b"%PDF-", "application/pdf"),
        (b"\x89PNG\r\n\x1a\n", "image/png"),
        (b"GIF8", "image/gif"),
        (b"\xff\xd8\xff", "image/jpeg"),
        (b"PK\x03\x04", "application/zip"),
        (b"\x1f\x8b", "application/gzip"),
    ];
    if let Some((_, mime)) = MAGIC.iter().find(|(magic, _)| body.starts_with(magic)) {
        return (BodyKind::Binary, mime);
    }
    let head = &body[..body.len().min(1024)];
    if head.contains(&0) {
        return (BodyKind::Binary, "application/octet-stream");
    }
    let text = charset::decode(head, None, false);
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

/// A JSON body pretty-printed with two spaces; a body that is not valid JSON is given as it is,
/// with a note saying why (nothing is lost).
pub fn pretty_json(text: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => serde_json::to_string_pretty(&value).unwrap_or_else(|_| text.to_owned()),
        Err(err) => format!("[The body is not valid JSON ({err}); shown as it is.]\n\n{text}"),
    }
}

/// The placeholder for a binary body.
pub fn binary_placeholder(mime: &str, length: Option<u64>) -> String {
    match length {
        Some(bytes) => format!("[Binary file: {mime}, {}]", human_bytes(bytes)),
        None => format!("[Binary file: {mime}]"),
    }
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

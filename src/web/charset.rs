//! Bytes to text the way a browser picks the encoding, and a little more forgiving of servers
//! that say the wrong thing: a byte-order mark wins; then the declarations — the
//! `Content-Type` header's `charset`, then (for HTML) a `<meta charset>` or `<meta http-equiv>`
//! in the first bytes of the document — each taken only if it decodes the bytes (a page whose
//! header says UTF-8 but whose bytes are windows-1251 is common on old servers, and a browser
//! would show replacement characters); when none is declared, or none decodes them, the
//! encoding is guessed from the bytes with [`chardetng`] (Firefox's detector: UTF-8 when the
//! bytes are valid UTF-8, else the legacy encoding whose letters they read best as, the
//! host's top-level domain as a hint). A guess that decodes no better than the declaration
//! loses to it. Decoding never fails: malformed sequences become U+FFFD.

use std::sync::LazyLock;

use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};
use encoding_rs::Encoding;

/// How far into an HTML document a `<meta>` charset is looked for (the HTML spec's prescan
/// looks at 1024 bytes; pages with long heads put it later, so look a little further).
const META_PRESCAN_BYTES: usize = 4096;

/// A declared encoding still fits bytes it finds this few malformed sequences in — fewer than
/// one per this many non-ASCII bytes (a UTF-8 page with a stray byte stays UTF-8; a windows-1251
/// page read as UTF-8 is malformed at nearly every letter).
const NON_ASCII_PER_MALFORMED: usize = 20;

static META_CHARSET: LazyLock<Option<regex::bytes::Regex>> = LazyLock::new(|| {
    regex::bytes::Regex::new(r#"(?i)<meta\b[^>]*?charset\s*=\s*["']?\s*([a-z0-9_:.\-]+)"#).ok()
});

/// `bytes` as text. `header_charset` is the `charset` parameter of the response's content type;
/// `html` allows looking for a `<meta>` declaration; `host` (the page's) hints the guess.
pub fn decode(
    bytes: &[u8],
    header_charset: Option<&str>,
    html: bool,
    host: Option<&str>,
) -> String {
    if let Some((encoding, bom_length)) = Encoding::for_bom(bytes) {
        return decode_with(encoding, &bytes[bom_length..]).0;
    }
    let header = header_charset.and_then(|label| Encoding::for_label(label.trim().as_bytes()));
    let meta = html.then(|| meta_charset(bytes)).flatten();
    let mut first_declared = None;
    for encoding in [header, meta].into_iter().flatten() {
        let (text, malformed) = decode_with(encoding, bytes);
        if fits(bytes, malformed) {
            return text;
        }
        first_declared.get_or_insert((text, malformed));
    }
    let (guessed, guess_malformed) = decode_with(guess(bytes, host), bytes);
    match first_declared {
        Some((declared, malformed)) if malformed <= guess_malformed => declared,
        _ => guessed,
    }
}

/// The encoding the bytes read best as ([`chardetng`]); `host`'s top-level domain is a hint
/// (`.ru` leans Cyrillic, `.jp` Japanese).
pub fn guess(bytes: &[u8], host: Option<&str>) -> &'static Encoding {
    let mut detector = EncodingDetector::new(Iso2022JpDetection::Deny);
    detector.feed(bytes, true);
    let tld = host.and_then(top_level_domain);
    detector.guess(tld.as_deref().map(str::as_bytes), Utf8Detection::Allow)
}

/// `bytes` decoded by `encoding`, and how many malformed sequences became U+FFFD (counted in
/// the text, so a page that holds U+FFFD itself counts it too: only ever against it).
fn decode_with(encoding: &'static Encoding, bytes: &[u8]) -> (String, usize) {
    let (text, had_errors) = encoding.decode_without_bom_handling(bytes);
    let malformed = if had_errors {
        text.chars()
            .filter(|c| *c == char::REPLACEMENT_CHARACTER)
            .count()
    } else {
        0
    };
    (text.into_owned(), malformed)
}

fn fits(bytes: &[u8], malformed: usize) -> bool {
    malformed == 0
        || malformed * NON_ASCII_PER_MALFORMED < bytes.iter().filter(|b| !b.is_ascii()).count()
}

/// The last label of `host` as the detector takes it (lower-case ASCII letters, digits and
/// hyphens: an IP address or an unusual name gives none, which the detector reads as `.com`).
fn top_level_domain(host: &str) -> Option<String> {
    let label = host
        .trim_end_matches('.')
        .rsplit('.')
        .next()?
        .to_ascii_lowercase();
    let usable = !label.is_empty()
        && label.bytes().any(|b| b.is_ascii_alphabetic())
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    usable.then_some(label)
}

/// The encoding a `<meta>` near the start of an HTML document declares. A document that got
/// this far is ASCII-compatible, so a UTF-16 declaration means UTF-8 (as the HTML spec says).
fn meta_charset(bytes: &[u8]) -> Option<&'static Encoding> {
    let head = &bytes[..bytes.len().min(META_PRESCAN_BYTES)];
    let label = META_CHARSET.as_ref()?.captures(head)?.get(1)?.as_bytes();
    Some(Encoding::for_label(label)?.output_encoding())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// "Съешь же ещё этих мягких французских булок, да выпей чаю." in windows-1251.
    fn cp1251_sentence() -> Vec<u8> {
        let (bytes, _, _) = encoding_rs::WINDOWS_1251
            .encode("Съешь же ещё этих мягких французских булок, да выпей чаю.");
        bytes.into_owned()
    }

    #[test]
    fn the_encoding_is_chosen_like_a_browser() {
        let latin1 = b"caf\xe9 cr\xe8me";
        let cases: [(&[u8], Option<&str>, bool, &str); 8] = [
            // The header's charset.
            (latin1, Some("iso-8859-1"), false, "café crème"),
            (b"\xef\xbb\xbfcaf\xc3\xa9", Some("iso-8859-1"), false, "café"),
            // No label: valid UTF-8 is UTF-8, anything else windows-1252.
            ("café".as_bytes(), None, false, "café"),
            (latin1, None, false, "café crème"),
            (b"\x93quoted\x94", None, false, "\u{201c}quoted\u{201d}"),
            // A meta declaration, for HTML only.
            (
                b"<html><head><meta charset=\"windows-1251\"></head>\xcf\xf0\xe8\xe2\xe5\xf2",
                None,
                true,
                "Привет",
            ),
            (
                b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=ISO-8859-15\">\xa4",
                None,
                true,
                "€",
            ),
            (
                b"<meta charset=utf-16><p>caf\xc3\xa9",
                None,
                true,
                "café",
            ),
        ];
        for (bytes, header, html, want) in cases {
            let text = decode(bytes, header, html, None);
            assert!(
                text.ends_with(want),
                "{header:?} {html}: {text:?} should end with {want:?}"
            );
        }
    }

    #[test]
    fn a_declaration_that_does_not_decode_the_bytes_gives_way() {
        let russian = "Съешь же ещё этих мягких французских булок, да выпей чаю.";
        let cp1251 = cp1251_sentence();
        // Labelled UTF-8, bytes windows-1251: guessed, on any host.
        for host in [None, Some("news.example.ru"), Some("127.0.0.1")] {
            assert_eq!(
                decode(&cp1251, Some("utf-8"), false, host),
                russian,
                "{host:?}"
            );
        }
        // The header is wrong, the page's own <meta> is right: the meta is taken.
        let mut page = b"<html><head><meta charset=\"windows-1251\"></head><p>".to_vec();
        page.extend_from_slice(&cp1251);
        let text = decode(&page, Some("utf-8"), true, None);
        assert!(text.ends_with(russian), "{text}");
        // A header that decodes the bytes wins over a meta that disagrees (as in a browser).
        let mut page = b"<meta charset=\"utf-8\"><p>".to_vec();
        page.extend_from_slice(&cp1251);
        let text = decode(&page, Some("windows-1251"), true, None);
        assert!(text.ends_with(russian), "{text}");
    }

    #[test]
    fn a_stray_bad_byte_does_not_unseat_a_declaration_that_fits() {
        let mut bytes = "Grüße aus Köln, schöne Straße, süße Äpfel — "
            .repeat(3)
            .into_bytes();
        bytes.push(0xff);
        let text = decode(&bytes, Some("utf-8"), false, None);
        assert!(text.starts_with("Grüße aus Köln"), "{text}");
        assert!(text.ends_with('\u{fffd}'), "{text}");
    }

    #[test]
    fn top_level_domains_are_given_to_the_detector_only_when_usable() {
        let cases = [
            ("example.RU", Some("ru")),
            ("example.com.", Some("com")),
            ("127.0.0.1", None),
            ("[::1]", None),
            ("localhost", Some("localhost")),
        ];
        for (host, want) in cases {
            assert_eq!(top_level_domain(host).as_deref(), want, "{host}");
        }
    }
}

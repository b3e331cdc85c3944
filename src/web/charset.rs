//! Bytes to text the way a browser picks the encoding: a byte-order mark wins, then the
//! `Content-Type` header's `charset`, then (for HTML) a `<meta charset>` or `<meta http-equiv>`
//! in the first bytes of the document, then UTF-8 when the bytes are valid UTF-8, and
//! windows-1252 (what browsers assume for unlabelled Western pages) otherwise. Decoding never
//! fails: malformed sequences become U+FFFD.

use std::sync::LazyLock;

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

/// How far into an HTML document a `<meta>` charset is looked for (the HTML spec's prescan
/// looks at 1024 bytes; pages with long heads put it later, so look a little further).
const META_PRESCAN_BYTES: usize = 4096;

static META_CHARSET: LazyLock<Option<regex::bytes::Regex>> = LazyLock::new(|| {
    regex::bytes::Regex::new(r#"(?i)<meta\b[^>]*?charset\s*=\s*["']?\s*([a-z0-9_:.\-]+)"#).ok()
});

/// `bytes` as text. `header_charset` is the `charset` parameter of the response's content type;
/// `html` allows looking for a `<meta>` declaration.
pub fn decode(bytes: &[u8], header_charset: Option<&str>, html: bool) -> String {
    if let Some((encoding, bom_length)) = Encoding::for_bom(bytes) {
        return decode_with(encoding, &bytes[bom_length..]);
    }
    let declared = header_charset
        .and_then(|label| Encoding::for_label(label.trim().as_bytes()))
        .or_else(|| html.then(|| meta_charset(bytes)).flatten());
    match declared {
        Some(encoding) => decode_with(encoding, bytes),
        None if std::str::from_utf8(bytes).is_ok() => decode_with(UTF_8, bytes),
        None => decode_with(WINDOWS_1252, bytes),
    }
}

fn decode_with(encoding: &'static Encoding, bytes: &[u8]) -> String {
    encoding.decode_without_bom_handling(bytes).0.into_owned()
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
            let text = decode(bytes, header, html);
            assert!(
                text.ends_with(want),
                "{header:?} {html}: {text:?} should end with {want:?}"
            );
        }
    }
}

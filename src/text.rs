//! Small text helpers more than one capability's parser needs (front matter, agent files, task
//! commands), kept once here so the parsers agree.

/// `text` without one pair of matching outer quotes (`"…"` or `'…'`); anything else as it is.
pub fn unquote(text: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = text
            .strip_prefix(quote)
            .and_then(|rest| rest.strip_suffix(quote))
        {
            return inner;
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquote_table() {
        let cases = [
            ("\"a b\"", "a b"),
            ("'a b'", "a b"),
            ("\"\"", ""),
            ("\"", "\""),
            ("'", "'"),
            ("\"a'", "\"a'"),
            ("a\"", "a\""),
            ("plain", "plain"),
            ("\"'x'\"", "'x'"),
        ];
        for (text, want) in cases {
            assert_eq!(unquote(text), want, "{text:?}");
        }
    }
}

//! Small text helpers more than one capability's parser needs (front matter, agent files, task
//! names, tools' string arguments), kept once here so the parsers agree.

use serde_json::Value;

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

/// A JSON argument's text, trimmed (as `object.get(key)`); `None` when it is absent, not a
/// string, or blank.
pub fn non_blank_str(value: Option<&Value>) -> Option<&str> {
    value
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|text| !text.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_table::check_table;

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
        check_table(cases, |text| unquote(text));
    }

    #[test]
    fn non_blank_str_table() {
        let object = serde_json::json!({"a": "  x y ", "blank": "  ", "n": 3, "null": null});
        let cases = [
            ("a", Some("x y")),
            ("blank", None),
            ("n", None),
            ("null", None),
            ("missing", None),
        ];
        check_table(cases, |key| non_blank_str(object.get(*key)));
    }
}

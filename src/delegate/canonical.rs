//! Canonical JSON and its hash: the same value gives the same bytes (and so the same sha256)
//! whatever order its maps were built in. The seed, the manifest and the child's result are all
//! written and checked this way; a file of its own so the seed and the artifacts need not import
//! each other.

use std::collections::BTreeMap;

use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// `JSON.stringify` with recursively sorted keys and no whitespace: the same value gives the
/// same bytes whatever map order serde_json was built with.
pub(crate) fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

/// Lower-case hex sha256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, &Value> = map.iter().collect();
            out.push('{');
            for (index, (key, value)) in sorted.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn canonical_json_sorts_keys_and_has_no_whitespace() {
        let cases = [
            (
                json!({"b": 1, "a": {"d": [1, {"z": 0, "y": "x"}], "c": null}}),
                r#"{"a":{"c":null,"d":[1,{"y":"x","z":0}]},"b":1}"#,
            ),
            (json!("é\n\""), r#""é\n\"""#),
            (json!([]), "[]"),
        ];
        for (value, want) in cases {
            assert_eq!(canonical_json(&value), want);
        }
    }
}

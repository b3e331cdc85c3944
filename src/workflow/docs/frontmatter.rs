//! The front matter of a workflow document: `---` on the first line, `key: value` lines, `---`.
//! Only flat keys are read (values trimmed, surrounding quotes dropped); a YAML list under a key
//! (`specs:` then `  - a.md`) becomes its items joined with `, `. Anything fancier is the
//! model's business, not the board's.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use super::Warning;
use crate::text::unquote;

/// Front matter keys: a word, then word characters or dashes.
static KEY: LazyLock<Regex> = LazyLock::new(|| {
    // A literal pattern: compiling it cannot fail.
    #[allow(clippy::expect_used)]
    Regex::new(r"^(\w[\w-]*):\s*(.*)$").expect("a valid regex")
});

/// A list item under a key.
static LIST_ITEM: LazyLock<Regex> = LazyLock::new(|| {
    #[allow(clippy::expect_used)] // a literal pattern
    Regex::new(r"^\s*-\s+(.*)$").expect("a valid regex")
});

/// The front matter read from `lines`: its keys, the index of the first body line, and a warning
/// when it never closes (then the whole file is body and no key is read).
pub(crate) struct FrontMatter {
    pub metadata: BTreeMap<String, String>,
    pub body_start: usize,
    pub warning: Option<Warning>,
}

pub(super) fn read(lines: &[&str]) -> FrontMatter {
    let mut metadata = BTreeMap::new();
    if lines.first().map(|line| line.trim_end()) != Some("---") {
        return FrontMatter {
            metadata,
            body_start: 0,
            warning: None,
        };
    }
    let Some(close) = lines
        .iter()
        .skip(1)
        .position(|line| line.trim_end() == "---")
        .map(|at| at + 1)
    else {
        return FrontMatter {
            metadata,
            body_start: 0,
            warning: Some(Warning {
                line: Some(1),
                message: "the front matter opened here is never closed with `---`".to_owned(),
            }),
        };
    };
    let mut last_key: Option<String> = None;
    for line in &lines[1..close] {
        if let Some(found) = KEY.captures(line) {
            let key = found[1].to_owned();
            metadata.insert(key.clone(), unquote(found[2].trim()).to_owned());
            last_key = Some(key);
        } else if let (Some(key), Some(item)) = (&last_key, LIST_ITEM.captures(line)) {
            let value = metadata.entry(key.clone()).or_default();
            if !value.is_empty() {
                value.push_str(", ");
            }
            value.push_str(unquote(item[1].trim()));
        }
    }
    FrontMatter {
        metadata,
        body_start: close + 1,
        warning: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_lists_and_quotes() {
        let lines = [
            "---",
            "title: \"Auth plan\"",
            "type: plan",
            "workbranch:",
            "specs:",
            "  - a-design.md",
            "  - 'b-design.md'",
            "---",
            "body",
        ];
        let front = read(&lines);
        assert_eq!(front.body_start, 8);
        assert_eq!(front.metadata["title"], "Auth plan");
        assert_eq!(front.metadata["workbranch"], "");
        assert_eq!(front.metadata["specs"], "a-design.md, b-design.md");
        assert!(front.warning.is_none());
    }

    #[test]
    fn an_unclosed_front_matter_is_a_warning_and_all_body() {
        let front = read(&["---", "title: x", "- [ ] item"]);
        assert_eq!(front.body_start, 0);
        assert!(front.metadata.is_empty());
        assert_eq!(front.warning.map(|w| w.line), Some(Some(1)));
    }
}

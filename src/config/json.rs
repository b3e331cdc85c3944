//! A JSON config file as read: its value, and where each member's key and value are written, so
//! an error found after parsing (a bad value, an unknown key) points at its place in the file.
//! serde_json's `Value` keeps no positions; a forward scan over the text, which serde_json has
//! already accepted, finds them. The problems found in one file are collected here, in the file
//! they are about.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::ConfigError;

/// One parsed JSON file, with the problems found in it so far.
pub struct Doc<'a> {
    pub path: &'a Path,
    pub text: &'a str,
    pub root: Value,
    positions: HashMap<Vec<String>, Position>,
    errors: RefCell<Vec<ConfigError>>,
}

impl<'a> Doc<'a> {
    /// `text`, the contents of `path`; or where it is not valid JSON.
    pub fn parse(path: &'a Path, text: &'a str) -> Result<Self, ConfigError> {
        let root = serde_json::from_str(text).map_err(|err| syntax_error(path, text, &err))?;
        Ok(Doc {
            path,
            text,
            root,
            positions: positions(text),
            errors: RefCell::default(),
        })
    }

    /// The byte offset of the member at `keys` (the root: its value): its key, or its value.
    pub fn offset(&self, keys: &[String], value: bool) -> usize {
        self.positions
            .get(keys)
            .map_or(0, |at| if value { at.value } else { at.key })
    }

    /// Records `message` at byte `offset`.
    pub fn report(&self, offset: usize, message: impl Into<String>) {
        let error = ConfigError::at(self.path, self.text, offset, message);
        self.errors.borrow_mut().push(error);
    }

    /// The problems recorded, in file order when `sorted` (a JSON map's keys come by name).
    pub fn take_errors(&self, sorted: bool) -> Vec<ConfigError> {
        let mut errors = self.errors.take();
        if sorted {
            super::error::sort_by_position(&mut errors);
        }
        errors
    }
}

/// A JSON syntax error at the position serde_json reports.
fn syntax_error(path: &Path, text: &str, err: &serde_json::Error) -> ConfigError {
    // serde_json counts the column in bytes from 1; turn it into an offset so the column we
    // report counts characters like every other config error.
    let line_start: usize = text
        .split_inclusive('\n')
        .take(err.line().saturating_sub(1))
        .map(str::len)
        .sum();
    let offset = line_start + err.column().saturating_sub(1);
    let message = err.to_string();
    let message = message
        .rsplit_once(" at line ")
        .map_or(message.as_str(), |(head, _)| head);
    ConfigError::at(path, text, offset, format!("invalid JSON: {message}"))
}

/// Where a key and its value start, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Position {
    pub key: usize,
    pub value: usize,
}

/// The position of every object member in `text` (valid JSON), by key path; the root is the
/// empty path, array items are keyed by their index.
pub(super) fn positions(text: &str) -> HashMap<Vec<String>, Position> {
    let mut scanner = Scanner {
        text,
        at: 0,
        found: HashMap::new(),
    };
    scanner.skip_space();
    let root = scanner.at;
    let position = Position {
        key: root,
        value: root,
    };
    scanner.found.insert(Vec::new(), position);
    scanner.value(&mut Vec::new());
    scanner.found
}

/// A forward-only walk over JSON that serde_json has already accepted; on anything unexpected it
/// stops early rather than guessing.
struct Scanner<'a> {
    text: &'a str,
    at: usize,
    found: HashMap<Vec<String>, Position>,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn value(&mut self, keys: &mut Vec<String>) {
        self.skip_space();
        match self.peek() {
            Some(open @ (b'{' | b'[')) => self.members(keys, open == b'{'),
            Some(b'"') => {
                self.string();
            }
            _ => {
                let end =
                    |byte: u8| matches!(byte, b',' | b'}' | b']') || byte.is_ascii_whitespace();
                while self.peek().is_some_and(|byte| !end(byte)) {
                    self.at += 1;
                }
            }
        }
    }

    /// An object's members (each one's position found) or an array's items (keyed by their
    /// index), from the opening bracket past the closing one.
    fn members(&mut self, keys: &mut Vec<String>, object: bool) {
        self.at += 1;
        for index in 0usize.. {
            self.skip_space();
            if matches!(self.peek(), Some(b'}' | b']') | None) {
                self.at += 1;
                return;
            }
            let key = self.at;
            if object {
                let name = self.string();
                self.skip_space();
                self.at += 1; // ':'
                self.skip_space();
                keys.push(name);
                let value = self.at;
                self.found.insert(keys.clone(), Position { key, value });
            } else {
                keys.push(index.to_string());
            }
            self.value(keys);
            keys.pop();
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}' | b']') => {}
                _ => return,
            }
        }
    }

    /// The string starting at the current quote, decoded; moves past its closing quote.
    fn string(&mut self) -> String {
        let start = self.at;
        self.at += 1;
        while let Some(byte) = self.peek() {
            self.at += if byte == b'\\' { 2 } else { 1 };
            if byte == b'"' {
                break;
            }
        }
        let end = self.at.min(self.text.len());
        self.text
            .get(start..end)
            .and_then(|raw| serde_json::from_str(raw).ok())
            .unwrap_or_default()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(|byte| byte.is_ascii_whitespace()) {
            self.at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn positions_table() {
        let text = "{\"a\": 1, \"b\": {\"c\": [true, {\"d\": \"x\\\"y\"}]}, \"e\\u0041\": null}";
        let found: BTreeMap<String, (usize, usize)> = positions(text)
            .into_iter()
            .map(|(keys, position)| (keys.join("."), (position.key, position.value)))
            .collect();
        let want: BTreeMap<String, (usize, usize)> = [
            ("", (0, 0)),
            ("a", (1, 6)),
            ("b", (9, 14)),
            ("b.c", (15, 20)),
            ("b.c.1.d", (28, 33)),
            ("eA", (44, 55)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        assert_eq!(found, want);
    }
}

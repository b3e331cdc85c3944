//! Errors in the user's configuration files. Each one names the file and, when it can, the line
//! and column and what was expected there, in the `path:line:col: message` form editors and
//! terminals turn into links. Config errors never stop the workbench: loaders collect them, skip
//! the bad entry, and keep the default; the app shows and logs them.

use std::path::{Path, PathBuf};

/// One problem in one configuration file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The file was read but something in it is wrong; `line` and `column` are 1-based, the
    /// column counted in characters.
    #[error("{}:{line}:{column}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// The file exists but could not be read.
    #[error("{}: cannot read: {message}", path.display())]
    Unreadable { path: PathBuf, message: String },
}

impl ConfigError {
    /// An error at byte `offset` of `text`, the contents of `path`.
    pub fn at(path: &Path, text: &str, offset: usize, message: impl Into<String>) -> Self {
        let (line, column) = line_column(text, offset);
        Self::Invalid {
            path: path.to_owned(),
            line,
            column,
            message: message.into(),
        }
    }

    /// The file this error is about.
    pub fn path(&self) -> &Path {
        match self {
            Self::Invalid { path, .. } | Self::Unreadable { path, .. } => path,
        }
    }
}

/// What is wrong with one value of a config file, in words; the reader places it at its key (a
/// [`ConfigError`] with path, line and column).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadValue(pub String);

impl From<String> for BadValue {
    fn from(text: String) -> Self {
        BadValue(text)
    }
}

impl From<&str> for BadValue {
    fn from(text: &str) -> Self {
        BadValue(text.to_owned())
    }
}

/// A position in a config file, kept with an entry so an error found after parsing (a bad value,
/// a missing colour) still names where it was written.
#[derive(Clone, Debug)]
pub struct Origin {
    path: PathBuf,
    line: usize,
    column: usize,
}

impl Origin {
    /// Byte `offset` of `text`, the contents of `path`.
    pub fn new(path: &Path, text: &str, offset: usize) -> Self {
        let (line, column) = line_column(text, offset);
        Origin {
            path: path.to_owned(),
            line,
            column,
        }
    }

    pub fn error(&self, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            path: self.path.clone(),
            line: self.line,
            column: self.column,
            message: message.into(),
        }
    }
}

/// Orders errors as they stand in their files (line, then column), whatever order the JSON map
/// iterated its keys in; an unreadable file's error comes first.
pub(crate) fn sort_by_position(errors: &mut [ConfigError]) {
    errors.sort_by_key(|err| match err {
        ConfigError::Invalid { line, column, .. } => (*line, *column),
        ConfigError::Unreadable { .. } => (0, 0),
    });
}

/// 1-based line and column (in characters) of byte `offset` in `text`; an offset past the end or
/// inside a character points at the position just before it.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// Read an optional user file: `Ok(None)` when there is no path or no file (the normal case:
/// users have no config until they write one), an error when it exists but cannot be read.
pub fn read_user_file(path: Option<&Path>) -> Result<Option<String>, ConfigError> {
    let Some(path) = path else {
        return Ok(None);
    };
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(ConfigError::Unreadable {
            path: path.to_owned(),
            message: err.to_string(),
        }),
    }
}

/// A TOML syntax error from the `toml` crate as a [`ConfigError`] at the span it reports.
pub(crate) fn from_toml(path: &Path, text: &str, err: &toml::de::Error) -> ConfigError {
    let offset = err.span().map_or(0, |span| span.start);
    // The crate's message may span lines (it quotes the source); the first one says what it is.
    let message = err
        .message()
        .lines()
        .next()
        .unwrap_or("invalid TOML")
        .trim();
    // The usual slip in our files: keys such as shift+pageup must be quoted.
    let hint = if message.contains("unquoted key") {
        " (put keys in quotes, e.g. \"shift+pageup\")"
    } else {
        ""
    };
    ConfigError::at(path, text, offset, format!("invalid TOML: {message}{hint}"))
}

/// Asserts that `errors` is one error, about `path`, whose text is `path:` then `at` (as much of
/// the line, column and message as the caller pins down). Loaders' tests check each reported
/// error this way, so a failure shows the error that came instead.
#[cfg(test)]
#[track_caller]
pub(crate) fn assert_one_error_at(errors: &[ConfigError], path: &Path, at: &str) {
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].path(), path, "{errors:?}");
    let shown = errors[0].to_string();
    let want = format!("{}:{at}", path.display());
    assert!(shown.starts_with(&want), "got  {shown}\nwant {want}…");
}

#[cfg(test)]
// A panic is how a test reports failure; the workspace denies unwrap for non-test code.
mod tests {
    use super::*;

    #[test]
    fn line_column_table() {
        let text = "ab\ncdé\n\nx";
        let cases = [
            (0, (1, 1)),
            (1, (1, 2)),
            (3, (2, 1)),
            (5, (2, 3)),
            // Inside the two-byte "é": reported at its start.
            (6, (2, 3)),
            (7, (2, 4)),
            (8, (3, 1)),
            (9, (4, 1)),
            (99, (4, 2)),
        ];
        for (offset, want) in cases {
            assert_eq!(line_column(text, offset), want, "offset {offset}");
        }
    }

    #[test]
    fn display_is_path_line_column_message() {
        let err = ConfigError::at(Path::new("/tmp/k.toml"), "a\nbc", 3, "expected an action");
        assert_eq!(err.to_string(), "/tmp/k.toml:2:2: expected an action");
        assert_eq!(err.path(), Path::new("/tmp/k.toml"));
    }

    #[test]
    fn missing_user_file_is_not_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_user_file(None), Ok(None));
        assert_eq!(
            read_user_file(Some(&dir.path().join("nope.toml"))),
            Ok(None)
        );
        // A directory exists but cannot be read as a file.
        let err = read_user_file(Some(dir.path())).unwrap_err();
        assert!(matches!(err, ConfigError::Unreadable { .. }), "{err:?}");
    }
}

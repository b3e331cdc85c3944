//! The one way a module's JSON config file (`.unipi/config/<name>.json`) becomes its config:
//! the home file, then the workspace file (which wins key by key), each read as a JSON object and
//! applied over the defaults; a file that cannot be read or is not an object, and a key the module
//! rejects, is a [`ConfigError`] naming the file, line and column, and the earlier value stays.
//! Each module says only what its keys mean. A settings save reads the file back as an object to
//! merge into ([`read_json_object`]).

use std::path::Path;

use serde_json::{Map, Value};

use super::ConfigError;
use super::error::{json_object, key_offset};

/// Reports a rejected key of the file being applied: the key and what is wrong with it.
pub type Report<'a> = dyn FnMut(&str, String) + 'a;

/// Reads `relative` below the home directory and the workspace ([`super::read_module_config`])
/// and turns the files into a config with `from_sources`; the read errors come first.
pub fn load_module_config<C>(
    home: Option<&Path>,
    workspace: &Path,
    relative: &str,
    from_sources: impl FnOnce(&[(&Path, &str)]) -> (C, Vec<ConfigError>),
) -> (C, Vec<ConfigError>) {
    let (sources, mut errors) = super::read_module_config(home, workspace, relative);
    let sources: Vec<(&Path, &str)> = sources
        .iter()
        .map(|(path, text)| (path.as_path(), text.as_str()))
        .collect();
    let (config, more) = from_sources(&sources);
    errors.extend(more);
    (config, errors)
}

/// A `from_sources` for [`load_module_config`] that starts from the defaults and gives each file,
/// in order, to `merge`, which reports a bad value and keeps the one before it.
pub fn merge_each<C: Default>(
    merge: impl Fn(&mut C, &Path, &str, &mut Vec<ConfigError>),
) -> impl FnOnce(&[(&Path, &str)]) -> (C, Vec<ConfigError>) {
    move |sources| {
        let mut config = C::default();
        let mut errors = Vec::new();
        for (path, text) in sources {
            merge(&mut config, path, text, &mut errors);
        }
        (config, errors)
    }
}

/// The config from (path, text) pairs, lowest precedence first: the defaults, then each file's
/// object given to `apply` with a [`Report`] that places a rejected key in that file.
pub fn apply_json_objects<C: Default>(
    sources: &[(impl AsRef<Path>, impl AsRef<str>)],
    mut apply: impl FnMut(&mut C, &Map<String, Value>, &mut Report<'_>),
) -> (C, Vec<ConfigError>) {
    let mut config = C::default();
    let mut errors = Vec::new();
    for (path, text) in sources {
        let (path, text) = (path.as_ref(), text.as_ref());
        match json_object(path, text) {
            Ok(object) => apply(&mut config, &object, &mut |key, message| {
                errors.push(ConfigError::at(path, text, key_offset(text, key), message));
            }),
            Err(err) => errors.push(err),
        }
    }
    (config, errors)
}

/// The integer at `key` of `object` (absent: `None`); one below `min` or not an integer is
/// reported as "`key` must be an integer ≥ `min`, found …" and read as absent.
pub fn integer_at_least(
    object: &Map<String, Value>,
    key: &str,
    min: u64,
    report: &mut Report<'_>,
) -> Option<u64> {
    let raw = object.get(key)?;
    let found = raw.as_u64().filter(|n| *n >= min);
    if found.is_none() {
        report(
            key,
            format!("{key} must be an integer ≥ {min}, found {raw}"),
        );
    }
    found
}

/// The flag at `key` of `object` (absent: `None`); anything but true or false is reported as
/// "`key` must be true or false, found …" and read as absent.
pub fn flag(object: &Map<String, Value>, key: &str, report: &mut Report<'_>) -> Option<bool> {
    let raw = object.get(key)?;
    let found = raw.as_bool();
    if found.is_none() {
        report(key, format!("{key} must be true or false, found {raw}"));
    }
    found
}

/// The JSON object in `path` (empty when the file does not exist), for a save to merge into; a
/// file that is not a JSON object is an error and is not to be overwritten.
pub fn read_json_object(path: &Path) -> anyhow::Result<Map<String, Value>> {
    match std::fs::read_to_string(path) {
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(object)) => Ok(object),
            Ok(_) => anyhow::bail!(
                "{}: expected a JSON object; not overwriting it",
                path.display()
            ),
            Err(err) => anyhow::bail!(
                "{}:{}:{}: invalid JSON ({err}); not overwriting it",
                path.display(),
                err.line().max(1),
                err.column().max(1)
            ),
        },
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Map::new()),
        Err(err) => Err(anyhow::Error::new(err).context(format!("reading {}", path.display()))),
    }
}

/// Writes `text` as the module config file `relative` below `dir`, creating its folders (tests).
#[cfg(test)]
pub fn write_module_file(dir: &Path, relative: &str, text: &str) {
    let file = dir.join(relative);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, text).unwrap();
}

/// A home and a workspace (two temporary directories), each with the module config file
/// `relative` holding its text (tests).
#[cfg(test)]
pub fn home_and_workspace(
    relative: &str,
    home_text: &str,
    workspace_text: &str,
) -> (tempfile::TempDir, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    write_module_file(home.path(), relative, home_text);
    write_module_file(workspace.path(), relative, workspace_text);
    (home, workspace)
}

/// Orders errors as they stand in their files (line, then column), whatever order the JSON map
/// iterated its keys in; an unreadable file's error comes first.
pub fn sort_by_position(errors: &mut [ConfigError]) {
    errors.sort_by_key(|err| match err {
        ConfigError::Invalid { line, column, .. } => (*line, *column),
        ConfigError::Unreadable { .. } => (0, 0),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A config of one flag, `on`, to apply files to.
    fn apply_on(config: &mut bool, object: &Map<String, Value>, report: &mut Report<'_>) {
        for (key, value) in object {
            match (key.as_str(), value.as_bool()) {
                ("on", Some(on)) => *config = on,
                _ => report(key, format!("`{key}` is not `on` as true or false")),
            }
        }
    }

    #[test]
    fn later_files_win_and_errors_name_file_line_and_column() {
        let sources = [
            ("/h.json", "{\"on\": true}"),
            ("/w.json", "{\n  \"on\": false,\n  \"off\": 1\n}"),
            ("/x.json", "[1]"),
        ];
        let (on, errors) = apply_json_objects(&sources, apply_on);
        assert!(!on);
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "/w.json:3:3: `off` is not `on` as true or false",
                "/x.json:1:1: expected a JSON object",
            ]
        );
    }

    #[test]
    fn the_workspace_file_overrides_the_home_file_and_read_errors_come_first() {
        let relative = ".unipi/config/test.json";
        let (home, workspace) = home_and_workspace(relative, "{\"on\": true}", "{}");
        let load = |home| {
            load_module_config(home, workspace.path(), relative, |sources| {
                apply_json_objects(sources, apply_on)
            })
        };
        assert_eq!(load(Some(home.path())), (true, vec![]));
        assert_eq!(load(None), (false, vec![]));

        // A directory where the file should be cannot be read.
        let unreadable = home.path().join(".unipi/config/dir.json");
        std::fs::create_dir_all(&unreadable).unwrap();
        let (on, errors) = load_module_config(
            Some(home.path()),
            workspace.path(),
            ".unipi/config/dir.json",
            |sources| apply_json_objects(sources, apply_on),
        );
        assert!(!on);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].path(), unreadable);
    }

    #[test]
    fn errors_sort_by_line_then_column_unreadable_first() {
        let text = "{\n  \"b\": 1, \"a\": 2\n}";
        let mut errors = vec![
            ConfigError::at(Path::new("/f.json"), text, key_offset(text, "a"), "a"),
            ConfigError::at(Path::new("/f.json"), text, key_offset(text, "b"), "b"),
            ConfigError::Unreadable {
                path: "/g.json".into(),
                message: "gone".into(),
            },
        ];
        sort_by_position(&mut errors);
        let paths_and_places: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(paths_and_places[1], "/f.json:2:3: b");
        assert_eq!(paths_and_places[2], "/f.json:2:11: a");
        assert!(matches!(errors[0], ConfigError::Unreadable { .. }));
    }
}

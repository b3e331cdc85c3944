//! The background-task settings file: `~/.unipi/config/background-tasks.json`, overridden key by
//! key by `<workspace>/.unipi/config/background-tasks.json`. `enabled: false` turns the whole
//! feature off (the app then registers no module, no commands, no dock). A bad file or key is a
//! [`ConfigError`] with path, line and column; the default stays in force for it.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::error::{self, ConfigError};

/// The file's path below the home or workspace directory.
pub const TASKS_CONFIG_FILE: &str = ".unipi/config/background-tasks.json";

/// What the file can set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TasksConfig {
    pub enabled: bool,
    /// The output cap (`UNIPI_BG_MAX_OUTPUT_BYTES` still wins).
    pub max_output_bytes: Option<u64>,
    /// Applied when `bg_run` or `/unipi:bg` gives no timeout.
    pub default_timeout_seconds: Option<u64>,
    /// `bg_run`'s defaults.
    pub notify_on_completion: bool,
    pub trigger_on_completion: bool,
}

impl Default for TasksConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_output_bytes: None,
            default_timeout_seconds: None,
            notify_on_completion: true,
            trigger_on_completion: true,
        }
    }
}

/// Loads the config: defaults, then `<home>/TASKS_CONFIG_FILE`, then `<workspace>/…`.
pub fn load_tasks_config(home: Option<&Path>, workspace: &Path) -> (TasksConfig, Vec<ConfigError>) {
    let mut files: Vec<PathBuf> = home
        .map(|home| home.join(TASKS_CONFIG_FILE))
        .into_iter()
        .collect();
    let workspace_file = workspace.join(TASKS_CONFIG_FILE);
    if !files.contains(&workspace_file) {
        files.push(workspace_file);
    }
    let mut errors = Vec::new();
    let mut sources = Vec::new();
    for file in files {
        match error::read_user_file(Some(&file)) {
            Ok(Some(text)) => sources.push((file, text)),
            Ok(None) => {}
            Err(err) => errors.push(err),
        }
    }
    let sources: Vec<(&Path, &str)> = sources
        .iter()
        .map(|(p, t)| (p.as_path(), t.as_str()))
        .collect();
    let (config, more) = tasks_config_from_sources(&sources);
    errors.extend(more);
    (config, errors)
}

/// The config from (path, text) pairs, lowest precedence first.
pub fn tasks_config_from_sources(sources: &[(&Path, &str)]) -> (TasksConfig, Vec<ConfigError>) {
    let mut config = TasksConfig::default();
    let mut errors = Vec::new();
    for (path, text) in sources {
        let value: Value = match serde_json::from_str(text) {
            Ok(value) => value,
            Err(err) => {
                errors.push(ConfigError::Invalid {
                    path: path.to_path_buf(),
                    line: err.line().max(1),
                    column: err.column().max(1),
                    message: format!("invalid JSON: {err}"),
                });
                continue;
            }
        };
        let Some(object) = value.as_object() else {
            errors.push(ConfigError::at(path, text, 0, "expected a JSON object"));
            continue;
        };
        for (key, value) in object {
            let at = |message: String| ConfigError::at(path, text, key_offset(text, key), message);
            let positive = || value.as_u64().filter(|n| *n > 0);
            match key.as_str() {
                "enabled" | "notifyOnCompletion" | "triggerOnCompletion" => match value.as_bool() {
                    Some(flag) => match key.as_str() {
                        "enabled" => config.enabled = flag,
                        "notifyOnCompletion" => config.notify_on_completion = flag,
                        _ => config.trigger_on_completion = flag,
                    },
                    None => errors.push(at(format!("`{key}` must be true or false"))),
                },
                "maxOutputBytes" => match positive() {
                    Some(n) => config.max_output_bytes = Some(n),
                    None => errors.push(at("`maxOutputBytes` must be a positive integer".into())),
                },
                "defaultTimeoutSeconds" => match (value, positive()) {
                    (Value::Null, _) => config.default_timeout_seconds = None,
                    (_, Some(n)) => config.default_timeout_seconds = Some(n),
                    _ => errors.push(at(
                        "`defaultTimeoutSeconds` must be a positive integer or null".into(),
                    )),
                },
                _ => errors.push(at(format!(
                    "unknown key `{key}` (expected enabled, maxOutputBytes, \
                     defaultTimeoutSeconds, notifyOnCompletion, triggerOnCompletion)"
                ))),
            }
        }
    }
    errors.sort_by_key(|err| match err {
        ConfigError::Invalid { line, column, .. } => (*line, *column),
        ConfigError::Unreadable { .. } => (0, 0),
    });
    (config, errors)
}

/// Where `"key"` first appears in `text` (good enough to point an editor at it).
fn key_offset(text: &str, key: &str) -> usize {
    text.find(&format!("\"{key}\"")).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_overrides_home_key_by_key() {
        let home = r#"{"enabled": true, "maxOutputBytes": 1000, "triggerOnCompletion": false}"#;
        let work = r#"{"maxOutputBytes": 2000}"#;
        let (config, errors) = tasks_config_from_sources(&[
            (Path::new("/h.json"), home),
            (Path::new("/w.json"), work),
        ]);
        assert_eq!(errors, vec![]);
        assert_eq!(config.max_output_bytes, Some(2000));
        assert!(!config.trigger_on_completion);
        assert!(config.enabled);
    }

    #[test]
    fn bad_values_name_path_line_and_column() {
        let text = "{\n  \"enabled\": \"no\",\n  \"colour\": 1\n}";
        let (config, errors) = tasks_config_from_sources(&[(Path::new("/w.json"), text)]);
        assert!(config.enabled, "the default stays");
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(shown.len(), 2, "{shown:?}");
        assert!(
            shown[0].starts_with("/w.json:2:3: `enabled` must be true or false"),
            "{shown:?}"
        );
        assert!(
            shown[1].starts_with("/w.json:3:3: unknown key `colour`"),
            "{shown:?}"
        );
        let (_, errors) =
            tasks_config_from_sources(&[(Path::new("/b.json"), "{\n  \"enabled\": ,")]);
        assert!(
            errors[0].to_string().starts_with("/b.json:2:"),
            "{errors:?}"
        );
    }

    #[test]
    fn disabled_and_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let (config, errors) = load_tasks_config(Some(dir.path()), dir.path());
        assert_eq!((config, errors), (TasksConfig::default(), vec![]));
        let file = dir.path().join(TASKS_CONFIG_FILE);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, r#"{"enabled": false}"#).unwrap();
        let (config, errors) = load_tasks_config(None, dir.path());
        assert!(!config.enabled);
        assert!(errors.is_empty());
    }
}

//! `~/.unipi/config/workbench.json` (overridden by `<workspace>/.unipi/config/workbench.json`):
//! whether plain `unipi-tui` runs detachable, and under which name.
//!
//! ```json
//! { "detach": { "enabled": true, "name": "api-server" } }
//! ```
//!
//! Without `name` the session is named after the working directory's folder (`my-project`),
//! with `-2`, `-3`, … added while a live session has that name, so a second workbench in the
//! same folder gets a session of its own.

use std::path::Path;

use serde_json::Value;

use crate::config::error::{ConfigError, json_object, key_offset_from};

/// The file, relative to the home directory or the workspace.
pub const CONFIG_FILE: &str = ".unipi/config/workbench.json";

/// The resolved `detach` settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DetachConfig {
    pub enabled: bool,
    /// A fixed session name; `None`: named after the folder.
    pub name: Option<String>,
}

/// Defaults, then the home file, then the workspace's; problems are returned, never fatal.
pub fn load(home: Option<&Path>, workspace: &Path) -> (DetachConfig, Vec<ConfigError>) {
    let (sources, mut errors) = crate::config::read_module_config(home, workspace, CONFIG_FILE);
    let mut config = DetachConfig::default();
    for (path, text) in &sources {
        apply(&mut config, path, text, &mut errors);
    }
    (config, errors)
}

fn apply(config: &mut DetachConfig, path: &Path, text: &str, errors: &mut Vec<ConfigError>) {
    let object = match json_object(path, text) {
        Ok(object) => object,
        Err(err) => {
            errors.push(err);
            return;
        }
    };
    let Some(detach) = object.get("detach") else {
        return;
    };
    let detach_at = key_offset_from(text, 0, "detach").unwrap_or(0);
    let error_at = |key: &str, message: String| {
        let offset = key_offset_from(text, detach_at, key).unwrap_or(detach_at);
        ConfigError::at(path, text, offset, message)
    };
    let Value::Object(detach) = detach else {
        errors.push(error_at(
            "detach",
            "\"detach\" must be an object, e.g. {\"enabled\": true}".to_owned(),
        ));
        return;
    };
    for (key, value) in detach {
        match (key.as_str(), value) {
            ("enabled", Value::Bool(enabled)) => config.enabled = *enabled,
            ("enabled", _) => errors.push(error_at(
                "enabled",
                "\"enabled\" must be true or false".to_owned(),
            )),
            ("name", Value::String(name)) => match super::registry::check_name(name) {
                Ok(()) => config.name = Some(name.clone()),
                Err(err) => errors.push(error_at("name", format!("{err:#}"))),
            },
            ("name", _) => errors.push(error_at(
                "name",
                "\"name\" must be a string (a session name)".to_owned(),
            )),
            (other, _) => errors.push(error_at(
                other,
                format!("unknown key {other:?} in \"detach\" (known: enabled, name)"),
            )),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;
    use crate::config::module_file::home_and_workspace;

    fn parse(text: &str) -> (DetachConfig, Vec<String>) {
        let mut config = DetachConfig::default();
        let mut errors = Vec::new();
        apply(
            &mut config,
            Path::new("/h/workbench.json"),
            text,
            &mut errors,
        );
        (config, errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn detach_is_off_unless_enabled_and_takes_a_name() {
        assert_eq!(parse("{}").0, DetachConfig::default());
        assert_eq!(
            parse(r#"{"detach": {"enabled": true}}"#),
            (
                DetachConfig {
                    enabled: true,
                    name: None
                },
                vec![]
            )
        );
        assert_eq!(
            parse(r#"{"detach": {"enabled": true, "name": "api"}}"#).0,
            DetachConfig {
                enabled: true,
                name: Some("api".into())
            }
        );
    }

    #[test]
    fn bad_entries_are_named_with_their_place_and_skipped() {
        let (config, errors) =
            parse("{\n  \"detach\": {\"enabled\": \"yes\",\n    \"name\": \"a b\", \"x\": 1}\n}");
        assert_eq!(config, DetachConfig::default());
        assert_eq!(
            errors,
            [
                "/h/workbench.json:2:14: \"enabled\" must be true or false",
                "/h/workbench.json:3:5: \"a b\" is not a session name: use letters, digits, '.', \
                 '_' and '-', not starting with '.' or '-'",
                "/h/workbench.json:3:20: unknown key \"x\" in \"detach\" (known: enabled, name)",
            ]
        );
        let (_, errors) = parse(r#"{"detach": true}"#);
        assert_eq!(
            errors,
            ["/h/workbench.json:1:2: \"detach\" must be an object, e.g. {\"enabled\": true}"]
        );
    }

    #[test]
    fn the_workspace_file_wins() {
        let (home, workspace) = home_and_workspace(
            CONFIG_FILE,
            r#"{"detach": {"enabled": true, "name": "home"}}"#,
            r#"{"detach": {"name": "here"}}"#,
        );
        let (config, errors) = load(Some(home.path()), workspace.path());
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            config,
            DetachConfig {
                enabled: true,
                name: Some("here".into())
            }
        );
    }
}

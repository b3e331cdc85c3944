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

use serde_json::Value;

use crate::config::module_file::{ModuleConfig, Object, Style, Wording};

/// The file, relative to the home directory or the workspace.
pub const CONFIG_FILE: &str = ".unipi/config/workbench.json";

/// The resolved `detach` settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DetachConfig {
    pub enabled: bool,
    /// A fixed session name; `None`: named after the folder.
    pub name: Option<String>,
}

/// The file's other keys (`mcp`) are other modules'.
impl ModuleConfig for DetachConfig {
    const FILE: &'static str = CONFIG_FILE;
    const STYLE: Style = Style::BACKTICKS.wording(Wording::Quotes);

    fn read(&mut self, file: &mut Object<'_>) {
        let example = "an object, e.g. {\"enabled\": true}";
        let Some(mut detach) = file.section("detach", example) else {
            return;
        };
        detach.flag("enabled", &mut self.enabled);
        if let Some(name) = detach.get("name", "a string (a session name)", Value::as_str) {
            match super::registry::check_name(name) {
                Ok(()) => self.name = Some(name.to_owned()),
                Err(err) => detach.report("name", format!("{err:#}")),
            }
        }
        detach.warn_unknown_with(|key, known| {
            format!(
                "unknown key {key:?} in \"detach\" (known: {})",
                known.join(", ")
            )
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;
    use crate::config::module_file::home_and_workspace;

    fn parse(text: &str) -> (DetachConfig, Vec<String>) {
        let (config, errors) = DetachConfig::from_sources(&[("/h/workbench.json", text)]);
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
        let (config, errors) = DetachConfig::load(Some(home.path()), workspace.path());
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

//! The ask-user settings file: `~/.unipi/config/ask-user.json`, overridden key by key by
//! `<workspace>/.unipi/config/ask-user.json`, with the original's keys (it kept them under
//! `unipi.askUser` in Pi's settings; the shape is the same):
//!
//! ```json
//! { "enabled": true,
//!   "allowedFormats": { "singleSelect": true, "multiSelect": true, "freeform": true },
//!   "notifyOnAsk": true }
//! ```
//!
//! A key of the wrong type is a [`ConfigError`](crate::config::ConfigError) naming file, line and
//! column, and its default stays in force. `/unipi:ask-user-settings` edits the same keys
//! ([`settings_fields`], [`apply_settings`]) and saves them into the user's file, keeping keys it
//! does not know.

use serde_json::{Map, Value, json};
use unipi_widgets::settings::{SettingField, SettingValue};

use crate::capability::settings::flag;
use crate::config::module_file::{ModuleConfig, Object};

/// The file's path below the home or workspace directory.
pub const ASK_USER_CONFIG_FILE: &str = ".unipi/config/ask-user.json";

/// What the file can set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AskUserConfig {
    /// The `ask_user` tool answers at all (it stays declared, so the model is told why not).
    pub enabled: bool,
    pub single_select: bool,
    pub multi_select: bool,
    pub freeform: bool,
    /// Publish `unipi:ask-user:prompt` so the notifications can reach the user.
    pub notify_on_ask: bool,
}

impl Default for AskUserConfig {
    fn default() -> Self {
        AskUserConfig {
            enabled: true,
            single_select: true,
            multi_select: true,
            freeform: true,
            notify_on_ask: true,
        }
    }
}

/// Keys this module does not know are left alone (the file may carry more of Unipi's).
impl ModuleConfig for AskUserConfig {
    const FILE: &'static str = ASK_USER_CONFIG_FILE;

    fn read(&mut self, file: &mut Object<'_>) {
        file.flag("enabled", &mut self.enabled);
        file.flag("notifyOnAsk", &mut self.notify_on_ask);
        let formats = "an object of singleSelect, multiSelect and freeform flags";
        if let Some(mut formats) = file.section("allowedFormats", formats) {
            formats.flag("singleSelect", &mut self.single_select);
            formats.flag("multiSelect", &mut self.multi_select);
            formats.flag("freeform", &mut self.freeform);
        }
    }
}

/// The overlay's title.
pub const ASK_USER_SETTINGS_TITLE: &str = "Ask-user settings";

/// The overlay's fields for `config`.
pub fn settings_fields(config: &AskUserConfig) -> Vec<SettingField> {
    vec![
        flag(
            "enabled",
            "Enable the ask_user tool",
            config.enabled,
            "Off: the model is told the tool is disabled and has to decide alone.",
        ),
        flag(
            "singleSelect",
            "Allow single-select",
            config.single_select,
            "Questions where the user picks one option.",
        ),
        flag(
            "multiSelect",
            "Allow multi-select",
            config.multi_select,
            "Questions where the user ticks several options.",
        ),
        flag(
            "freeform",
            "Allow freeform text",
            config.freeform,
            "Questions the user may answer in their own words.",
        ),
        flag(
            "notifyOnAsk",
            "Notify when asking",
            config.notify_on_ask,
            "Alert you (desktop, phone, terminal) when a question waits and you are away.",
        ),
    ]
}

/// The file's keys for the edited `fields`.
pub fn apply_settings(fields: &[SettingField]) -> Value {
    let flag = |key: &str| {
        fields
            .iter()
            .find_map(|field| match (&field.key, &field.value) {
                (name, SettingValue::Bool(on)) if name == key => Some(*on),
                _ => None,
            })
    };
    let mut object = Map::new();
    for key in ["enabled", "notifyOnAsk"] {
        if let Some(on) = flag(key) {
            object.insert(key.to_owned(), Value::Bool(on));
        }
    }
    let defaults = AskUserConfig::default();
    object.insert(
        "allowedFormats".to_owned(),
        json!({
            "singleSelect": flag("singleSelect").unwrap_or(defaults.single_select),
            "multiSelect": flag("multiSelect").unwrap_or(defaults.multi_select),
            "freeform": flag("freeform").unwrap_or(defaults.freeform),
        }),
    );
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::module_file::write_module_file;

    #[test]
    fn files_override_key_by_key_and_bad_types_keep_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let (home, workspace) = (dir.path().join("home"), dir.path().join("work"));
        let write = |base: &Path, text: &str| write_module_file(base, ASK_USER_CONFIG_FILE, text);
        write(
            &home,
            r#"{"notifyOnAsk": false, "allowedFormats": {"multiSelect": false}}"#,
        );
        write(
            &workspace,
            "{\n  \"enabled\": \"yes\",\n  \"allowedFormats\": {\"freeform\": false}\n}",
        );
        let (config, errors) = AskUserConfig::load(Some(&home), &workspace);
        assert_eq!(
            config,
            AskUserConfig {
                enabled: true,
                single_select: true,
                multi_select: false,
                freeform: false,
                notify_on_ask: false,
            }
        );
        let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].ends_with("ask-user.json:2:3: `enabled` must be true or false"),
            "{errors:?}"
        );
    }

    #[test]
    fn settings_round_trip_through_the_fields() {
        let config = AskUserConfig {
            multi_select: false,
            ..AskUserConfig::default()
        };
        let values = apply_settings(&settings_fields(&config));
        assert_eq!(
            values,
            json!({"enabled": true, "notifyOnAsk": true,
                   "allowedFormats": {"singleSelect": true, "multiSelect": false, "freeform": true}})
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ask-user.json");
        std::fs::write(&path, values.to_string()).unwrap();
        let (loaded, errors) = AskUserConfig::from_sources(&[(&path, values.to_string())]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(loaded, config);
    }
}

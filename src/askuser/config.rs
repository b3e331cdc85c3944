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
//! ([`SETTINGS_PAGE`]) and saves them into the user's file, keeping keys it does not know.

use serde_json::json;

use crate::capability::settings::{Setting, SettingsPage};
use crate::config::module_file::{ModuleConfig, Object};

/// The file's path below the home or workspace directory.
pub(crate) const ASK_USER_CONFIG_FILE: &str = ".unipi/config/ask-user.json";

/// What the file can set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AskUserConfig {
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
    const PI_SETTINGS_KEY: Option<&'static str> = Some("askUser");

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

/// The `/unipi:ask-user-settings` overlay.
pub(crate) const SETTINGS_PAGE: SettingsPage<AskUserConfig> = SettingsPage {
    title: "Ask-user settings",
    file: ASK_USER_CONFIG_FILE,
    what: "ask-user settings",
    load: AskUserConfig::load,
    settings: || {
        vec![
            Setting::flag(
                "enabled",
                "Enable the ask_user tool",
                "Off: the model is told the tool is disabled and has to decide alone.",
            ),
            Setting::flag(
                "allowedFormats.singleSelect",
                "Allow single-select",
                "Questions where the user picks one option.",
            ),
            Setting::flag(
                "allowedFormats.multiSelect",
                "Allow multi-select",
                "Questions where the user ticks several options.",
            ),
            Setting::flag(
                "allowedFormats.freeform",
                "Allow freeform text",
                "Questions the user may answer in their own words.",
            ),
            Setting::flag(
                "notifyOnAsk",
                "Notify when asking",
                "Alert you (desktop, phone, terminal) when a question waits and you are away.",
            ),
        ]
    },
    values: |config| {
        json!({
            "enabled": config.enabled,
            "notifyOnAsk": config.notify_on_ask,
            "allowedFormats": {
                "singleSelect": config.single_select,
                "multiSelect": config.multi_select,
                "freeform": config.freeform,
            },
        })
    },
};

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

    /// The original Unipi kept these keys under `unipi.askUser` in Pi's `settings.json`: read
    /// first (Pi's other keys left alone), so `ask-user.json` wins key by key; a bad value there
    /// is named at its place.
    #[test]
    fn unipi_ask_user_in_pi_settings_is_read_under_ours() {
        let dir = tempfile::tempdir().unwrap();
        let (home, workspace) = (dir.path().join("home"), dir.path().join("work"));
        let settings = crate::config::pi_settings_file(Some(&home)).unwrap();
        std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
        std::fs::write(
            &settings,
            "{\"defaultModel\": \"x\", \"packages\": [],\n \"unipi\": {\"askUser\": {\"enabled\": false,\n  \"notifyOnAsk\": false, \"allowedFormats\": {\"freeform\": 0}}, \"info\": {}}}",
        )
        .unwrap();
        let (config, errors) = AskUserConfig::load(Some(&home), &workspace);
        assert!(!config.enabled && !config.notify_on_ask && config.freeform);
        let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            errors,
            [format!(
                "{}:3:44: `unipi.askUser.allowedFormats.freeform` must be true or false",
                settings.display()
            )]
        );
        write_module_file(&home, ASK_USER_CONFIG_FILE, r#"{"enabled": true}"#);
        let (config, _) = AskUserConfig::load(Some(&home), &workspace);
        assert!(config.enabled, "ours wins");
        assert!(
            !config.notify_on_ask,
            "the rest still comes from Pi's settings"
        );
    }

    /// Only when both Unipi's place and ours have settings, one start line says which is used.
    #[test]
    fn a_notice_names_ours_over_unipi_s_only_when_both_are_there() {
        let dir = tempfile::tempdir().unwrap();
        let (home, workspace) = (dir.path().join("home"), dir.path().join("work"));
        assert_eq!(AskUserConfig::unipi_notice(Some(&home), &workspace), None);
        let settings = crate::config::pi_settings_file(Some(&home)).unwrap();
        std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
        std::fs::write(&settings, r#"{"unipi": {"footer": {}}}"#).unwrap();
        write_module_file(&workspace, ASK_USER_CONFIG_FILE, r#"{"enabled": true}"#);
        assert_eq!(
            AskUserConfig::unipi_notice(Some(&home), &workspace),
            None,
            "Pi's settings hold no askUser"
        );
        std::fs::write(&settings, r#"{"unipi": {"askUser": {"enabled": false}}}"#).unwrap();
        assert_eq!(
            AskUserConfig::unipi_notice(Some(&home), &workspace),
            Some(format!(
                "{} is used over Unipi's unipi.askUser in {} where both set a key",
                workspace.join(ASK_USER_CONFIG_FILE).display(),
                settings.display()
            ))
        );
    }

    #[test]
    fn settings_round_trip_through_the_fields() {
        let config = AskUserConfig {
            multi_select: false,
            ..AskUserConfig::default()
        };
        let values = SETTINGS_PAGE.to_values(&SETTINGS_PAGE.fields(&config));
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

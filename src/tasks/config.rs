//! The background-task settings file: `~/.unipi/config/background-tasks.json`, overridden key by
//! key by `<workspace>/.unipi/config/background-tasks.json`. `enabled: false` turns the whole
//! feature off (the app then registers no module, no commands, no dock). A bad file or key is a
//! [`ConfigError`](crate::config::ConfigError) with path, line and column; the default stays in
//! force for it.
//!
//! The settings overlay (`/unipi:bg-settings`, [`SETTINGS_PAGE`]) edits the same keys; a save
//! merges them into the home file crash-safe ([`crate::config::merge_json_file`]), keeping keys it
//! does not know and refusing to replace a file it cannot parse.

use serde_json::json;

use crate::capability::settings::{Kind, Setting, SettingsPage};
use crate::config::module_file::{ModuleConfig, Object, or_null, positive};
use crate::tasks::DEFAULT_MAX_OUTPUT_BYTES;

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

impl ModuleConfig for TasksConfig {
    const FILE: &'static str = TASKS_CONFIG_FILE;

    fn read(&mut self, file: &mut Object<'_>) {
        file.flag("enabled", &mut self.enabled);
        let cap = "a positive integer";
        file.set("maxOutputBytes", cap, &mut self.max_output_bytes, |v| {
            positive(v).map(Some)
        });
        let timeout = "a positive integer or null";
        let slot = &mut self.default_timeout_seconds;
        file.set("defaultTimeoutSeconds", timeout, slot, or_null(positive));
        file.flag("notifyOnCompletion", &mut self.notify_on_completion);
        file.flag("triggerOnCompletion", &mut self.trigger_on_completion);
        file.warn_unknown();
    }
}

const MIB: u64 = 1024 * 1024;
/// The largest output cap the overlay offers, in MiB (the file itself may say more).
const MAX_OUTPUT_MIB: u64 = 10 * 1024;
/// The longest default timeout the overlay offers: a day.
const MAX_TIMEOUT_SECONDS: u64 = 24 * 60 * 60;

/// The overlay: its fields are keyed by the file's keys; the output cap is shown in MiB, rounded
/// up (with none set, the built-in default), a timeout of 0 is written as `null` (none).
pub(super) const SETTINGS_PAGE: SettingsPage<TasksConfig> = SettingsPage {
    title: "Background tasks settings",
    file: TASKS_CONFIG_FILE,
    what: "background-task settings",
    load: TasksConfig::load,
    settings: || {
        vec![
            Setting::flag(
                "enabled",
                "Enabled",
                "Background tasks on or off: tools, commands and the dock. Takes effect on next \
                 start.",
            ),
            Setting::flag(
                "notifyOnCompletion",
                "Notify on completion",
                "Default for bg_run: tell the agent when a task ends.",
            ),
            Setting::flag(
                "triggerOnCompletion",
                "Wake agent on completion",
                "Default for bg_run: a task's end starts a turn of the agent.",
            ),
            Setting::new(
                "defaultTimeoutSeconds",
                "Default timeout",
                Kind::Number {
                    unit: "s",
                    min: 0,
                    max: MAX_TIMEOUT_SECONDS,
                    step: 30,
                    scale: 1,
                    zero_is_null: true,
                },
                "Stops a task started without its own timeout after this long; 0 = none.",
            ),
            Setting::new(
                "maxOutputBytes",
                "Max output",
                Kind::Number {
                    unit: "MiB",
                    min: 1,
                    max: MAX_OUTPUT_MIB,
                    step: 1,
                    scale: MIB,
                    zero_is_null: false,
                },
                "A task writing more output than this is stopped. UNIPI_BG_MAX_OUTPUT_BYTES \
                 overrides it. Takes effect on next start.",
            ),
        ]
    },
    values: |config| {
        let cap = config.max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT_BYTES);
        let timeout = config
            .default_timeout_seconds
            .map(|s| s.min(MAX_TIMEOUT_SECONDS));
        json!({
            "enabled": config.enabled,
            "notifyOnCompletion": config.notify_on_completion,
            "triggerOnCompletion": config.trigger_on_completion,
            "defaultTimeoutSeconds": timeout,
            "maxOutputBytes": cap.clamp(MIB, MAX_OUTPUT_MIB * MIB),
        })
    },
};

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::Value;
    use unipi_widgets::settings::{SettingField, SettingValue};

    use super::*;
    use crate::config::error::assert_one_error_at;
    use crate::config::merge_json_file;
    use crate::config::module_file::write_module_file;

    #[test]
    fn workspace_overrides_home_key_by_key() {
        let home = r#"{"enabled": true, "maxOutputBytes": 1000, "triggerOnCompletion": false}"#;
        let work = r#"{"maxOutputBytes": 2000}"#;
        let (config, errors) = TasksConfig::from_sources(&[
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
        let (config, errors) = TasksConfig::from_sources(&[(Path::new("/w.json"), text)]);
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
            TasksConfig::from_sources(&[(Path::new("/b.json"), "{\n  \"enabled\": ,")]);
        assert_one_error_at(&errors, Path::new("/b.json"), "2:");
    }

    #[test]
    fn disabled_and_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let (config, errors) = TasksConfig::load(Some(dir.path()), dir.path());
        assert_eq!((config, errors), (TasksConfig::default(), vec![]));
        write_module_file(dir.path(), TASKS_CONFIG_FILE, r#"{"enabled": false}"#);
        let (config, errors) = TasksConfig::load(None, dir.path());
        assert!(!config.enabled);
        assert!(errors.is_empty());
    }

    fn set(fields: &mut [SettingField], key: &str, new: SettingValue) {
        let field = fields.iter_mut().find(|field| field.key == key).unwrap();
        field.value = new;
    }

    fn number(value: u64) -> SettingValue {
        SettingValue::Number {
            value,
            unit: String::new(),
            min: 0,
            max: u64::MAX,
            step: 1,
        }
    }

    #[test]
    fn fields_show_the_config_and_defaults() {
        let shown = |config: &TasksConfig| -> Vec<(String, String)> {
            SETTINGS_PAGE
                .fields(config)
                .iter()
                .map(|field| (field.key.clone(), field.value.display()))
                .collect()
        };
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        assert_eq!(
            shown(&TasksConfig::default()),
            pairs(&[
                ("enabled", "[x] on"),
                ("notifyOnCompletion", "[x] on"),
                ("triggerOnCompletion", "[x] on"),
                ("defaultTimeoutSeconds", "none"),
                ("maxOutputBytes", "20 MiB"),
            ])
        );
        let config = TasksConfig {
            enabled: false,
            max_output_bytes: Some(MIB + 1),
            default_timeout_seconds: Some(90),
            notify_on_completion: false,
            trigger_on_completion: true,
        };
        assert_eq!(
            shown(&config),
            pairs(&[
                ("enabled", "[ ] off"),
                ("notifyOnCompletion", "[ ] off"),
                ("triggerOnCompletion", "[x] on"),
                ("defaultTimeoutSeconds", "90 s"),
                // Rounded up: the overlay never offers less than the file allowed.
                ("maxOutputBytes", "2 MiB"),
            ])
        );
    }

    #[test]
    fn applied_settings_load_back_as_the_same_config() {
        let cases = [
            TasksConfig::default(),
            TasksConfig {
                enabled: false,
                max_output_bytes: Some(64 * MIB),
                default_timeout_seconds: Some(600),
                notify_on_completion: false,
                trigger_on_completion: false,
            },
        ];
        for want in cases {
            let values = SETTINGS_PAGE.to_values(&SETTINGS_PAGE.fields(&want));
            let text = values.to_string();
            let (got, errors) = TasksConfig::from_sources(&[(Path::new("/s.json"), &text)]);
            assert_eq!(errors, vec![], "{text}");
            // The default cap is written out explicitly; everything else round-trips.
            let want = TasksConfig {
                max_output_bytes: Some(want.max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT_BYTES)),
                ..want
            };
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn apply_maps_zero_timeout_to_null_and_skips_unknown_fields() {
        let mut fields = SETTINGS_PAGE.fields(&TasksConfig::default());
        set(&mut fields, "defaultTimeoutSeconds", number(0));
        set(&mut fields, "maxOutputBytes", number(3));
        fields.push(SettingField {
            key: "colour".to_owned(),
            label: "Colour".to_owned(),
            value: SettingValue::Text("red".to_owned()),
            help: String::new(),
        });
        let values = SETTINGS_PAGE.to_values(&fields);
        assert_eq!(values["defaultTimeoutSeconds"], Value::Null);
        assert_eq!(values["maxOutputBytes"], Value::from(3 * MIB));
        assert_eq!(values.get("colour"), None);
    }

    #[test]
    fn save_creates_parents_and_merges_keeping_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TASKS_CONFIG_FILE);
        merge_json_file(&path, &serde_json::json!({"enabled": false})).unwrap();
        let read =
            || -> Value { serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap() };
        assert_eq!(read(), serde_json::json!({"enabled": false}));
        std::fs::write(
            &path,
            r#"{"enabled": false, "maxOutputBytes": 5, "futureKey": {"a": 1}}"#,
        )
        .unwrap();
        merge_json_file(
            &path,
            &serde_json::json!({"enabled": true, "defaultTimeoutSeconds": null}),
        )
        .unwrap();
        assert_eq!(
            read(),
            serde_json::json!({
                "enabled": true,
                "maxOutputBytes": 5,
                "futureKey": {"a": 1},
                "defaultTimeoutSeconds": null,
            })
        );
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(
            names,
            vec![std::ffi::OsString::from("background-tasks.json")]
        );
    }

    #[test]
    fn save_refuses_to_replace_a_bad_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("background-tasks.json");
        let cases = [
            ("{\n  \"enabled\": ,", ":2:"),
            ("[1, 2]", "expected a JSON object"),
        ];
        for (text, want) in cases {
            std::fs::write(&path, text).unwrap();
            let err = merge_json_file(&path, &serde_json::json!({"enabled": true}))
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{err}");
            assert!(err.contains("not overwriting"), "{err}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        }
        let err = merge_json_file(&path, &serde_json::json!([true])).unwrap_err();
        assert!(err.to_string().contains("must be a JSON object"), "{err}");
    }
}

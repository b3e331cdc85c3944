//! The footer's configuration: `~/.unipi/config/footer.json`, overridden by
//! `<workspace>/.unipi/config/footer.json`, with Unipi's key names so a Unipi `unipi.footer`
//! block can be pasted in:
//!
//! ```json
//! { "enabled": true,
//!   "preset": "default",
//!   "groups": { "core": { "show": true, "segments": { "cwd": false, "cost": true } },
//!               "notify": { "show": true } },
//!   "contextThresholds": { "warning": 60, "error": 85 } }
//! ```
//!
//! Modules' segments are toggled under their module's group like the core ones: the background
//! tasks' `tasks.running` and the helpers' `helpers.running` (`⧉ 2 helpers · 41k tok · $0.12`)
//! show from the default preset up, so `{"groups": {"helpers": {"show": false}}}` hides helper
//! spend and `{"preset": "minimal", "groups": {"helpers": {"segments": {"running": true}}}}`
//! keeps it in the minimal footer.
//!
//! Presets: `minimal`, `compact`, `default`, `full`, `nerd` (full with Nerd Font icons and
//! powerline separators) and `ascii` (compact in plain ASCII). The look: `separator` (Unipi's
//! `powerline`, `powerline-thin`, `slash`, `pipe`, `dot`, `ascii`, or our `bar`), `iconStyle`
//! (`nerd`, `emoji`, `text`, `unicode`, or `auto`: Nerd Font icons when the terminal is known to
//! have them) and `overflowRow` (a second row for what does not fit; the `full` and `nerd`
//! presets have it unless it is `false`).
//!
//! Merging follows Unipi (its compactor and subagents configs): objects merge key by key, scalars
//! from the workspace file replace the home file's, so a workspace can flip one segment without
//! restating the rest. Unipi's `zoneSeparator` and `showFullLabels` are accepted and ignored. Each
//! file is checked on its own: a bad entry is reported as `path:line:col: message` and skipped, the
//! rest of the file still applies; a file that is not JSON at all is reported and skipped whole.
//! The defaults always stand underneath.

use serde_json::Value;
use unipi_widgets::footer::{ContextThresholds, FooterSettings, IconStyle, Preset, SeparatorStyle};

use super::error::ConfigError;
use super::json::Doc;
use super::module_file::{ModuleConfig, Object, Style, Wording, or_list};

/// The footer file, relative to the home directory or the workspace.
pub const FOOTER_FILE: &str = ".unipi/config/footer.json";

/// The resolved footer configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FooterConfig {
    /// `false` hides the footer row (Unipi's `enabled`).
    pub enabled: bool,
    /// Preset, toggles and context thresholds, as the footer widget takes them.
    pub settings: FooterSettings,
}

impl Default for FooterConfig {
    fn default() -> Self {
        FooterConfig {
            enabled: true,
            settings: FooterSettings::default(),
        }
    }
}

/// An error names the value at fault ("expected true or false for enabled", at the value).
impl ModuleConfig for FooterConfig {
    const FILE: &'static str = FOOTER_FILE;
    const PI_SETTINGS_KEY: Option<&'static str> = Some("footer");
    const STYLE: Style = Style::BACKTICKS.wording(Wording::Expected);

    fn read(&mut self, file: &mut Object<'_>) {
        file.flag("enabled", &mut self.enabled);
        if let Some(value) = file.value("preset") {
            match value.as_str().and_then(Preset::from_name) {
                Some(preset) => self.settings.preset = preset,
                None => file.report("preset", unknown_preset(value)),
            }
        }
        let groups = "expected an object of groups, e.g. {\"core\": {…}}";
        if let Some(groups) = file.section_or("groups", groups) {
            read_groups(&mut self.settings, groups);
        }
        let thresholds = "expected an object, e.g. {\"warning\": 60, \"error\": 85}";
        if let Some(mut thresholds) = file.section_or("contextThresholds", thresholds) {
            let context = &mut self.settings.context;
            for (key, slot) in [
                ("warning", &mut context.warning),
                ("error", &mut context.error),
            ] {
                let Some(value) = thresholds.value(key) else {
                    continue;
                };
                match value.as_u64().and_then(|n| u8::try_from(n).ok()) {
                    Some(percent) if percent <= 100 => *slot = percent,
                    _ => thresholds.report(
                        key,
                        format!(
                            "expected a whole percentage from 0 to 100 for {key}, found {value}"
                        ),
                    ),
                }
            }
            thresholds.warn_unknown_with(|key, known| {
                format!(
                    "unknown key {key:?} in contextThresholds; expected {}",
                    or_list(known)
                )
            });
        }
        let look = &mut self.settings.look;
        let separators = or_list(SeparatorStyle::ALL.map(SeparatorStyle::name));
        file.set("separator", &separators, &mut look.separator, |v| {
            v.as_str().and_then(SeparatorStyle::from_name).map(Some)
        });
        let icons = or_list(
            IconStyle::ALL
                .map(IconStyle::name)
                .into_iter()
                .chain(["auto"]),
        );
        file.set("iconStyle", &icons, &mut look.icons, |v| {
            match v.as_str()? {
                "auto" => Some(None),
                name => IconStyle::from_name(name).map(Some),
            }
        });
        file.set(
            "overflowRow",
            "true or false",
            &mut look.overflow_row,
            |v| v.as_bool().map(Some),
        );
        // Unipi's zone settings: the native footer has no zones.
        file.ignore(&["zoneSeparator", "showFullLabels"]);
        file.warn_unknown_with(|key, known| {
            format!("unknown key {key:?}; expected {}", or_list(known))
        });
    }

    /// Thresholds that end up inverted fall back to the defaults, reported where the last file
    /// that set them did.
    fn finish(&mut self, files: &[Doc<'_>], errors: &mut Vec<ConfigError>) {
        let context = self.settings.context;
        if context.warning <= context.error {
            return;
        }
        let key = ["contextThresholds".to_owned()];
        if let Some(file) = files
            .iter()
            .rev()
            .find(|file| file.root.get(&key[0]).is_some())
        {
            let default = ContextThresholds::default();
            errors.push(ConfigError::at(
                file.path,
                file.text,
                file.offset(&key, true),
                format!(
                    "the warning threshold ({}%) is above the error threshold ({}%); using {}% \
                     and {}%",
                    context.warning, context.error, default.warning, default.error,
                ),
            ));
        }
        self.settings.context = ContextThresholds::default();
    }
}

/// `groups`: each group's `show` and its `segments` toggles, merged into what the files before
/// said.
fn read_groups(settings: &mut FooterSettings, mut groups: Object<'_>) {
    for (id, _) in groups.members() {
        let message = format!(
            "expected an object for group {id:?}, e.g. {{\"show\": true, \"segments\": {{}}}}"
        );
        let Some(mut fields) = groups.section_or(id, &message) else {
            continue;
        };
        let group = settings.groups.entry(id.clone()).or_default();
        fields.set("show", "true or false", &mut group.show, |v| {
            v.as_bool().map(Some)
        });
        let toggles = "expected an object of segment toggles, e.g. {\"cwd\": false}";
        if let Some(mut segments) = fields.section_or("segments", toggles) {
            for (segment, _) in segments.members() {
                if let Some(shown) = segments.get(segment, "true or false", Value::as_bool) {
                    group.segments.insert(segment.clone(), shown);
                }
            }
        }
        fields.warn_unknown_with(|key, known| {
            format!(
                "unknown key {key:?} in group {id:?}; expected {}",
                or_list(known)
            )
        });
    }
}

fn unknown_preset(value: &Value) -> String {
    let names = Preset::ALL
        .iter()
        .map(|preset| format!("{:?}", preset.name()));
    format!("unknown preset {value}; expected {}", or_list(names))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use unipi_widgets::footer::GroupToggles;

    use super::*;

    fn write(dir: &Path, text: &str) {
        let file = dir.join(FOOTER_FILE);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }

    fn toggles(show: Option<bool>, segments: &[(&str, bool)]) -> GroupToggles {
        GroupToggles {
            show,
            segments: segments
                .iter()
                .map(|(id, shown)| ((*id).to_owned(), *shown))
                .collect(),
        }
    }

    /// The default config with `edit` applied.
    fn config_with(edit: impl FnOnce(&mut FooterConfig)) -> FooterConfig {
        let mut config = FooterConfig::default();
        edit(&mut config);
        config
    }

    #[test]
    fn merge_table() {
        let home_text = r#"{
            "preset": "minimal",
            "groups": {"core": {"segments": {"cwd": false, "cost": true}}},
            "contextThresholds": {"warning": 50}
        }"#;
        let workspace_text = r#"{
            "preset": "full",
            "groups": {"core": {"segments": {"cwd": true}}, "notify": {"show": true}},
            "contextThresholds": {"error": 90}
        }"#;
        let bad_text = "{\"preset\": \"full\",\n  \"enabled\": false,,\n}";
        let home_config = config_with(|c| {
            c.settings.preset = Preset::Minimal;
            c.settings.groups.insert(
                "core".to_owned(),
                toggles(None, &[("cwd", false), ("cost", true)]),
            );
            c.settings.context.warning = 50;
        });
        // (name, home file, workspace file, resulting config, number of errors)
        type Case<'a> = (
            &'a str,
            Option<&'a str>,
            Option<&'a str>,
            FooterConfig,
            usize,
        );
        let cases: [Case; 6] = [
            ("neither", None, None, FooterConfig::default(), 0),
            ("home only", Some(home_text), None, home_config.clone(), 0),
            (
                "workspace only",
                None,
                Some(workspace_text),
                config_with(|c| {
                    c.settings.preset = Preset::Full;
                    c.settings
                        .groups
                        .insert("core".to_owned(), toggles(None, &[("cwd", true)]));
                    c.settings
                        .groups
                        .insert("notify".to_owned(), toggles(Some(true), &[]));
                    c.settings.context.error = 90;
                }),
                0,
            ),
            (
                // Key by key: the workspace turns cwd back on and keeps the home's cost toggle
                // and warning threshold.
                "both",
                Some(home_text),
                Some(workspace_text),
                config_with(|c| {
                    c.settings.preset = Preset::Full;
                    c.settings.groups.insert(
                        "core".to_owned(),
                        toggles(None, &[("cwd", true), ("cost", true)]),
                    );
                    c.settings
                        .groups
                        .insert("notify".to_owned(), toggles(Some(true), &[]));
                    c.settings.context = ContextThresholds {
                        warning: 50,
                        error: 90,
                    };
                }),
                0,
            ),
            // A broken workspace file is skipped whole; the home file still applies.
            (
                "bad workspace file",
                Some(home_text),
                Some(bad_text),
                home_config,
                1,
            ),
            (
                "bad home file",
                Some(bad_text),
                None,
                FooterConfig::default(),
                1,
            ),
        ];
        for (name, home_text, workspace_text, want, error_count) in cases {
            let home = tempfile::tempdir().unwrap();
            let workspace = tempfile::tempdir().unwrap();
            if let Some(text) = home_text {
                write(home.path(), text);
            }
            if let Some(text) = workspace_text {
                write(workspace.path(), text);
            }
            let (config, errors) = FooterConfig::load(Some(home.path()), workspace.path());
            assert_eq!(config, want, "{name}");
            assert_eq!(errors.len(), error_count, "{name}: {errors:?}");
        }
    }

    #[test]
    fn bad_json_is_reported_at_its_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "{\"preset\": \"full\",\n  \"enabled\": false,,\n}",
        );
        let (config, errors) = FooterConfig::load(None, dir.path());
        assert_eq!(config, FooterConfig::default());
        let file = dir.path().join(FOOTER_FILE);
        assert_eq!(
            errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [format!(
                "{}:2:20: invalid JSON: key must be a string",
                file.display()
            )]
        );
    }

    #[test]
    fn bad_entries_are_reported_and_skipped() {
        let path = Path::new("/w/.unipi/config/footer.json");
        let text = r#"{
  "preset": "tiny",
  "enabled": "yes",
  "colour": "red",
  "separator": "pipe",
  "groups": {
    "core": {"show": 1, "segments": {"cwd": false, "git": "no"}, "order": []},
    "mcp": true
  },
  "contextThresholds": {"warning": 70, "error": 120.5, "info": 1}
}"#;
        let (config, errors) = FooterConfig::from_sources(&[(path, text)]);
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let at =
            |line_col: &str, message: &str| format!("{}:{line_col}: {message}", path.display());
        assert_eq!(
            messages,
            [
                at(
                    "2:13",
                    "unknown preset \"tiny\"; expected \"minimal\", \"compact\", \"ascii\", \
                     \"default\", \"full\" or \"nerd\""
                ),
                at("3:14", "expected true or false for enabled"),
                at(
                    "4:3",
                    "unknown key \"colour\"; expected enabled, preset, groups, contextThresholds, \
                     separator, iconStyle or overflowRow"
                ),
                at("7:22", "expected true or false for show"),
                at("7:59", "expected true or false for git"),
                at(
                    "7:66",
                    "unknown key \"order\" in group \"core\"; expected show or segments"
                ),
                at(
                    "8:12",
                    "expected an object for group \"mcp\", e.g. {\"show\": true, \"segments\": {}}"
                ),
                at(
                    "10:49",
                    "expected a whole percentage from 0 to 100 for error, found 120.5"
                ),
                at(
                    "10:56",
                    "unknown key \"info\" in contextThresholds; expected warning or error"
                ),
            ]
        );
        // What was good still applies.
        let want = config_with(|c| {
            c.settings
                .groups
                .insert("core".to_owned(), toggles(None, &[("cwd", false)]));
            c.settings.context.warning = 70;
            c.settings.look.separator = Some(SeparatorStyle::Pipe);
        });
        assert_eq!(config, want);
    }

    #[test]
    fn inverted_thresholds_fall_back_to_the_defaults() {
        let home = Path::new("/h/.unipi/config/footer.json");
        let workspace = Path::new("/w/.unipi/config/footer.json");
        let (config, errors) = FooterConfig::from_sources(&[
            (home, r#"{"contextThresholds": {"error": 70}}"#),
            (
                workspace,
                "{\n  \"contextThresholds\": {\"warning\": 80}\n}",
            ),
        ]);
        assert_eq!(config.settings.context, ContextThresholds::default());
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "/w/.unipi/config/footer.json:2:24: the warning threshold (80%) is above the error \
              threshold (70%); using 60% and 85%"
            ]
        );
    }

    #[test]
    fn a_non_object_file_is_reported() {
        let path = Path::new("/h/.unipi/config/footer.json");
        let (config, errors) = FooterConfig::from_sources(&[(path, "\n  [1, 2]")]);
        assert_eq!(config, FooterConfig::default());
        assert_eq!(
            errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["/h/.unipi/config/footer.json:2:3: expected a JSON object"]
        );
    }

    #[test]
    fn workspace_at_home_is_read_once() {
        let home = tempfile::tempdir().unwrap();
        write(home.path(), r#"{"preset": "nope"}"#);
        let (config, errors) = FooterConfig::load(Some(home.path()), home.path());
        assert_eq!(config, FooterConfig::default());
        assert_eq!(errors.len(), 1, "{errors:?}");
    }

    #[test]
    fn unipi_footer_block_loads() {
        // Unipi's `unipi.footer` settings, pasted as they are.
        let path = Path::new("/h/.unipi/config/footer.json");
        let text = r#"{"enabled": false, "preset": "minimal", "separator": "powerline-thin",
            "iconStyle": "nerd", "zoneSeparator": "│", "showFullLabels": false,
            "groups": {"core": {"show": true, "segments": {"clock": false}}}}"#;
        let (config, errors) = FooterConfig::from_sources(&[(path, text)]);
        assert_eq!(errors, []);
        assert!(!config.enabled);
        assert_eq!(config.settings.preset, Preset::Minimal);
        assert_eq!(
            config.settings.groups.get("core"),
            Some(&toggles(Some(true), &[("clock", false)]))
        );
        let look = config.settings.look;
        assert_eq!(look.separator, Some(SeparatorStyle::PowerlineThin));
        assert_eq!(look.icons, Some(IconStyle::Nerd));
    }

    #[test]
    fn the_look_keys_and_their_errors() {
        let path = Path::new("/h/.unipi/config/footer.json");
        let good =
            r#"{"preset": "ascii", "separator": "dot", "iconStyle": "auto", "overflowRow": true}"#;
        let (config, errors) = FooterConfig::from_sources(&[(path, good)]);
        assert_eq!(errors, []);
        assert_eq!(config.settings.preset, Preset::Ascii);
        assert_eq!(config.settings.look.separator, Some(SeparatorStyle::Dot));
        assert_eq!(config.settings.look.icons, None);
        assert_eq!(config.settings.look.overflow_row, Some(true));
        let bad = "{\"separator\": \"zigzag\",\n \"iconStyle\": 3, \"overflowRow\": \"yes\"}";
        let (config, errors) = FooterConfig::from_sources(&[(path, bad)]);
        assert_eq!(config, FooterConfig::default(), "nothing bad applies");
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(
            messages[0].starts_with("/h/.unipi/config/footer.json:1:15: expected bar, powerline"),
            "{messages:?}"
        );
        assert!(
            messages[1].contains(":2:15: expected unicode, nerd, emoji, text or auto"),
            "{messages:?}"
        );
        assert!(
            messages[2].contains("expected true or false for overflowRow"),
            "{messages:?}"
        );
    }

    /// Unipi's `unipi.footer` where it was, in Pi's `settings.json`: read under `footer.json`.
    #[test]
    fn unipi_footer_in_pi_settings_is_read_under_ours() {
        let home = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let settings = crate::config::pi_settings_file(Some(home.path())).unwrap();
        std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
        let text = r#"{"theme": "dark", "unipi": {"footer": {"enabled": false, "preset": "minimal",
            "separator": "slash", "groups": {"core": {"segments": {"clock": "no"}}}}}}"#;
        std::fs::write(&settings, text).unwrap();
        let (config, errors) = FooterConfig::load(Some(home.path()), workspace.path());
        assert!(!config.enabled);
        assert_eq!(config.settings.preset, Preset::Minimal);
        let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with(&format!(
                "{}:2:77: expected true or false for unipi.footer.groups.core.segments.clock",
                settings.display()
            )),
            "{errors:?}"
        );
        super::super::module_file::write_module_file(
            workspace.path(),
            FOOTER_FILE,
            r#"{"enabled": true}"#,
        );
        let (config, _) = FooterConfig::load(Some(home.path()), workspace.path());
        assert!(config.enabled, "ours wins");
        assert_eq!(config.settings.preset, Preset::Minimal);
    }

    #[test]
    fn the_helpers_segment_follows_presets_and_its_group() {
        let spend = unipi_widgets::agents::HelperSpend {
            running: 2,
            finished: 0,
            tokens: 41_000,
            cost: 0.12,
        };
        let Some(segment) = unipi_widgets::agents::helpers_segment(&spend) else {
            panic!("running helpers have a segment");
        };
        let path = Path::new("/h/.unipi/config/footer.json");
        // (footer.json, shown)
        let cases = [
            ("{}", true),
            (r#"{"preset": "minimal"}"#, false),
            (
                r#"{"preset": "minimal", "groups": {"helpers": {"segments": {"running": true}}}}"#,
                true,
            ),
            (r#"{"groups": {"helpers": {"show": false}}}"#, false),
            (
                r#"{"groups": {"helpers": {"segments": {"running": false}}}}"#,
                false,
            ),
            (r#"{"preset": "full"}"#, true),
        ];
        for (text, shown) in cases {
            let (config, errors) = FooterConfig::from_sources(&[(path, text)]);
            assert_eq!(errors, [], "{text}");
            assert_eq!(config.settings.shows(&segment), shown, "{text}");
        }
    }
}

//! `compactor.json`: whether this workbench answers every compaction (`overrideDefaultCompaction`),
//! the auto-compaction settings and the limits of `session_recall`. Read from the home directory,
//! then the workspace (which wins key by key); a bad value is reported with its file, line and
//! key and the earlier value (or the default) kept. Unipi's other compactor keys (strategies,
//! presets, sandbox) are accepted and ignored, so a Unipi config file works unchanged: its global
//! file, `~/.unipi/config/compactor/config.json`, is read first, and its `cooldownMs` beside our
//! `cooldownSeconds` (which wins in the same object).

use serde_json::Value;

use super::auto::AutoConfig;
use crate::config::ConfigError;
use crate::config::json::Doc;
use crate::config::module_file::{ModuleConfig, Object, Style, positive, to_usize};

/// The config file, under the home directory and the workspace.
pub const CONFIG_FILE: &str = ".unipi/config/compactor.json";
/// The original Unipi's global file (its project file was ours), read before ours.
pub const UNIPI_GLOBAL_FILE: &str = ".unipi/config/compactor/config.json";

/// Limits of `session_recall`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecallLimits {
    pub default_limit: usize,
    pub max_limit: usize,
    /// The most text one recall answer returns.
    pub max_output_bytes: usize,
}

impl Default for RecallLimits {
    fn default() -> Self {
        RecallLimits {
            default_limit: 8,
            max_limit: 20,
            max_output_bytes: 8 * 1024,
        }
    }
}

/// `compactor.json`, as this module reads it. Unipi's other compactor keys (strategies,
/// presets, sandbox) are accepted and ignored, so a Unipi config file works unchanged.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CompactorConfig {
    pub override_default_compaction: bool,
    pub auto: AutoConfig,
    pub recall: RecallLimits,
}

impl Default for CompactorConfig {
    fn default() -> Self {
        CompactorConfig {
            override_default_compaction: true,
            auto: AutoConfig::default(),
            recall: RecallLimits::default(),
        }
    }
}

/// A bad value is reported with its file and key and the earlier value (or the default) kept;
/// the errors come in the order the keys are read.
impl ModuleConfig for CompactorConfig {
    const FILE: &'static str = CONFIG_FILE;
    const UNIPI_FILES: &'static [&'static str] = &[UNIPI_GLOBAL_FILE];
    const STYLE: Style = Style::BACKTICKS.dotted().unsorted();

    fn read(&mut self, file: &mut Object<'_>) {
        let overrides = &mut self.override_default_compaction;
        file.flag("overrideDefaultCompaction", overrides);
        if let Some(mut auto) = file.section("autoCompaction", "an object") {
            let config = &mut self.auto;
            auto.flag("enabled", &mut config.enabled);
            let percent = "a number from 1 to 99";
            let threshold = &mut config.threshold_percent;
            auto.set("thresholdPercent", percent, threshold, |v| {
                v.as_f64().filter(|p| (1.0..=99.0).contains(p))
            });
            let ms = "a whole number of milliseconds";
            auto.set("cooldownMs", ms, &mut config.cooldown_ms, Value::as_u64);
            let seconds = "a whole number of seconds";
            auto.set("cooldownSeconds", seconds, &mut config.cooldown_ms, |v| {
                v.as_u64().map(|seconds| seconds.saturating_mul(1000))
            });
            let tokens = "a whole number of tokens";
            let growth = &mut config.repeat_min_growth_tokens;
            auto.set("repeatMinGrowthTokens", tokens, growth, Value::as_u64);
            auto.flag("notify", &mut config.notify);
            let after = &mut config.continue_after_threshold_compact;
            auto.flag("continueAfterThresholdCompact", after);
            auto.warn_unknown();
        }
        if let Some(mut section) = file.section("recall", "an object") {
            let recall = &mut self.recall;
            let count = |v: &Value| positive(v).map(to_usize);
            let expected = "a positive integer";
            section.set("defaultLimit", expected, &mut recall.default_limit, count);
            section.set("maxLimit", expected, &mut recall.max_limit, count);
            let bytes = &mut recall.max_output_bytes;
            section.set("maxOutputBytes", expected, bytes, count);
            section.warn_unknown();
            recall.max_limit = recall.max_limit.min(crate::sessiondb::recall::MAX_LIMIT);
            recall.default_limit = recall.default_limit.min(recall.max_limit);
        }
    }

    fn finish(&mut self, _files: &[Doc<'_>], _errors: &mut Vec<ConfigError>) {
        self.auto = std::mem::take(&mut self.auto).clamped();
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn sources(texts: &[&str]) -> Vec<(PathBuf, String)> {
        texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                (
                    PathBuf::from(format!("/cfg{i}/compactor.json")),
                    (*text).to_owned(),
                )
            })
            .collect()
    }

    /// Unipi's `cooldownMs` is read beside our `cooldownSeconds`, which wins in the same object;
    /// Unipi's global file comes before ours.
    #[test]
    fn unipi_cooldown_ms_and_global_file() {
        let (config, errors) = CompactorConfig::from_sources(&sources(&[
            r#"{"autoCompaction": {"cooldownMs": 90000}}"#,
        ]));
        assert_eq!((config.auto.cooldown_ms, errors), (90_000, vec![]));
        let (config, _) = CompactorConfig::from_sources(&sources(&[
            r#"{"autoCompaction": {"cooldownSeconds": 5, "cooldownMs": 90000}}"#,
        ]));
        assert_eq!(config.auto.cooldown_ms, 5_000, "ours wins");
        let (_, errors) = CompactorConfig::from_sources(&sources(&[
            "{\"autoCompaction\":\n {\"cooldownMs\": -1}}",
        ]));
        assert_eq!(
            errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "/cfg0/compactor.json:2:3: `autoCompaction.cooldownMs` must be a whole number of \
              milliseconds"
            ]
        );

        let (home, workspace) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let unipi = r#"{"overrideDefaultCompaction": false, "sessionGoals": {"enabled": true},
            "autoCompaction": {"enabled": true, "cooldownMs": 2000}}"#;
        crate::config::module_file::write_module_file(home.path(), UNIPI_GLOBAL_FILE, unipi);
        let ours = r#"{"autoCompaction": {"cooldownSeconds": 30}}"#;
        crate::config::module_file::write_module_file(workspace.path(), CONFIG_FILE, ours);
        let (config, errors) = CompactorConfig::load(Some(home.path()), workspace.path());
        assert_eq!(errors, []);
        assert!(!config.override_default_compaction && config.auto.enabled);
        assert_eq!(config.auto.cooldown_ms, 30_000);
    }

    #[test]
    fn config_defaults_overrides_and_errors() {
        let (config, errors) = CompactorConfig::from_sources(&sources(&[]));
        assert_eq!(config, CompactorConfig::default());
        assert!(config.override_default_compaction && !config.auto.enabled);
        assert!(errors.is_empty());

        let (config, errors) = CompactorConfig::from_sources(&sources(&[
            r#"{"overrideDefaultCompaction": false, "autoCompaction": {"enabled": true, "cooldownSeconds": 5},
                "sessionGoals": {"enabled": true}}"#,
            r#"{"autoCompaction": {"thresholdPercent": 70}, "recall": {"defaultLimit": 5}}"#,
        ]));
        assert!(errors.is_empty(), "{errors:?}");
        assert!(!config.override_default_compaction);
        assert!(config.auto.enabled);
        assert_eq!(config.auto.cooldown_ms, 5_000);
        assert_eq!(config.auto.threshold_percent, 70.0);
        assert_eq!(config.recall.default_limit, 5);

        let (config, errors) = CompactorConfig::from_sources(&sources(&[
            "{\n  \"autoCompaction\": {\"thresholdPercent\": 150, \"enabled\": \"yes\"},\n  \"overrideDefaultCompaction\": 1\n}",
            "not json",
        ]));
        assert_eq!(
            config,
            CompactorConfig::default(),
            "bad values keep the defaults"
        );
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(messages.len(), 4, "{messages:?}");
        assert!(
            messages[0].starts_with("/cfg0/compactor.json:3:3:")
                && messages[0].contains("overrideDefaultCompaction"),
            "{messages:?}"
        );
        for key in ["autoCompaction.thresholdPercent", "autoCompaction.enabled"] {
            assert!(
                messages.iter().any(|m| m.contains(key)),
                "{key}: {messages:?}"
            );
        }
        assert!(
            messages[3].starts_with("/cfg1/compactor.json:1:"),
            "{messages:?}"
        );
    }
}

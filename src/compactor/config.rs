//! `compactor.json`: whether this workbench answers every compaction (`overrideDefaultCompaction`),
//! the auto-compaction settings and the limits of `session_recall`. Read from the home directory,
//! then the workspace (which wins key by key); a bad value is reported with its file, line and
//! key and the earlier value (or the default) kept. Unipi's other compactor keys (strategies,
//! presets, sandbox) are accepted and ignored, so a Unipi config file works unchanged.

use std::path::Path;

use serde_json::{Map, Value};

use super::auto::AutoConfig;
use crate::config::ConfigError;
use crate::config::module_file::{Report, apply_json_objects, load_module_config};

/// The config file, under the home directory and the workspace.
pub const CONFIG_FILE: &str = ".unipi/config/compactor.json";

/// Limits of `session_recall`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallLimits {
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
pub struct CompactorConfig {
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

/// Reads `compactor.json` from the home directory, then the workspace (which wins key by key).
pub fn load_config(home: Option<&Path>, workspace: &Path) -> (CompactorConfig, Vec<ConfigError>) {
    load_module_config(home, workspace, CONFIG_FILE, |sources| {
        config_from_sources(sources)
    })
}

/// The config from (path, text) pairs, lowest precedence first. A bad value is reported with
/// its file and key and the earlier value (or the default) kept.
pub fn config_from_sources(
    sources: &[(impl AsRef<Path>, impl AsRef<str>)],
) -> (CompactorConfig, Vec<ConfigError>) {
    let (mut config, errors) = apply_json_objects(sources, apply_file);
    config.auto = config.auto.clamped();
    (config, errors)
}

/// One file's keys over `config`.
fn apply_file(config: &mut CompactorConfig, object: &Map<String, Value>, report: &mut Report<'_>) {
    if let Some(value) = object.get("overrideDefaultCompaction") {
        match value.as_bool() {
            Some(flag) => config.override_default_compaction = flag,
            None => report(
                "overrideDefaultCompaction",
                "`overrideDefaultCompaction` must be true or false".into(),
            ),
        }
    }
    if let Some(value) = object.get("autoCompaction") {
        apply_auto(&mut config.auto, value, report);
    }
    if let Some(value) = object.get("recall") {
        apply_recall(&mut config.recall, value, report);
    }
}

fn apply_auto(auto: &mut AutoConfig, value: &Value, report: &mut Report<'_>) {
    let Some(object) = value.as_object() else {
        report(
            "autoCompaction",
            "`autoCompaction` must be an object".into(),
        );
        return;
    };
    for (key, value) in object {
        let bad = |what: &str| format!("`autoCompaction.{key}` must be {what}");
        match key.as_str() {
            "enabled" | "notify" | "continueAfterThresholdCompact" => match value.as_bool() {
                Some(flag) => match key.as_str() {
                    "enabled" => auto.enabled = flag,
                    "notify" => auto.notify = flag,
                    _ => auto.continue_after_threshold_compact = flag,
                },
                None => report(key, bad("true or false")),
            },
            "thresholdPercent" => match value.as_f64().filter(|p| (1.0..=99.0).contains(p)) {
                Some(percent) => auto.threshold_percent = percent,
                None => report(key, bad("a number from 1 to 99")),
            },
            "cooldownSeconds" => match value.as_u64() {
                Some(seconds) => auto.cooldown_ms = seconds.saturating_mul(1000),
                None => report(key, bad("a whole number of seconds")),
            },
            "repeatMinGrowthTokens" => match value.as_u64() {
                Some(tokens) => auto.repeat_min_growth_tokens = tokens,
                None => report(key, bad("a whole number of tokens")),
            },
            _ => report(
                key,
                format!(
                    "unknown key `autoCompaction.{key}` (expected enabled, thresholdPercent, \
                     cooldownSeconds, repeatMinGrowthTokens, notify, continueAfterThresholdCompact)"
                ),
            ),
        }
    }
}

fn apply_recall(recall: &mut RecallLimits, value: &Value, report: &mut Report<'_>) {
    let Some(object) = value.as_object() else {
        report("recall", "`recall` must be an object".into());
        return;
    };
    for (key, value) in object {
        let number = value.as_u64().filter(|n| *n > 0).map(|n| n as usize);
        let slot = match key.as_str() {
            "defaultLimit" => &mut recall.default_limit,
            "maxLimit" => &mut recall.max_limit,
            "maxOutputBytes" => &mut recall.max_output_bytes,
            _ => {
                report(
                    key,
                    format!(
                        "unknown key `recall.{key}` (expected defaultLimit, maxLimit, maxOutputBytes)"
                    ),
                );
                continue;
            }
        };
        match number {
            Some(number) => *slot = number,
            None => report(key, format!("`recall.{key}` must be a positive integer")),
        }
    }
    recall.max_limit = recall.max_limit.min(crate::sessiondb::recall::MAX_LIMIT);
    recall.default_limit = recall.default_limit.min(recall.max_limit);
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

    #[test]
    fn config_defaults_overrides_and_errors() {
        let (config, errors) = config_from_sources(&sources(&[]));
        assert_eq!(config, CompactorConfig::default());
        assert!(config.override_default_compaction && !config.auto.enabled);
        assert!(errors.is_empty());

        let (config, errors) = config_from_sources(&sources(&[
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

        let (config, errors) = config_from_sources(&sources(&[
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

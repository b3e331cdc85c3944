//! The delegate's settings: the `delegate` object of `background-tasks.json` (global, then the
//! workspace's), read here rather than in `tasks::config` so the background-task parsing stays
//! untouched — that file is shared, and unknown keys are ignored on both sides. The master
//! `enabled: false` of the file turns delegates off too, as in Unipi.

use std::path::Path;

use serde_json::Value;

use super::artifacts::INLINE_ANSWER_BYTES;
use crate::config::ConfigError;
use crate::config::error::key_offset;
use crate::config::module_file::{flag, integer_at_least, load_module_config, merge_each};
use crate::tasks::TASKS_CONFIG_FILE;

/// The default seed budget in bytes. It also bounds the child's task, which reaches Pi as one
/// command-line argument (Linux caps one argument at 128 KiB).
pub const DEFAULT_SEED_BUDGET_BYTES: usize = 64 * 1024;

/// Delegate defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelegateConfig {
    pub enabled: bool,
    /// `delegate.inlineAnswerBytes`: answers up to this size are delivered inline.
    pub inline_answer_bytes: usize,
    /// `delegate.seedBudgetBytes`: the most the conversation projection may take.
    pub seed_budget_bytes: usize,
    /// `delegate.maxTurns`.
    pub max_turns: u32,
    /// `delegate.timeoutSeconds`.
    pub timeout_seconds: u64,
}

impl Default for DelegateConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            inline_answer_bytes: INLINE_ANSWER_BYTES,
            seed_budget_bytes: DEFAULT_SEED_BUDGET_BYTES,
            max_turns: 24,
            timeout_seconds: 1200,
        }
    }
}

impl DelegateConfig {
    /// The defaults, then `<home>/.unipi/config/background-tasks.json`, then the workspace's.
    /// A bad value is reported and the value before it kept.
    pub fn load(home: Option<&Path>, workspace: &Path) -> (Self, Vec<ConfigError>) {
        load_module_config(home, workspace, TASKS_CONFIG_FILE, merge_each(Self::merge))
    }

    /// Applies one file's keys. Invalid JSON is the background-task reader's to report; here it
    /// only means "nothing to apply".
    pub fn merge(&mut self, path: &Path, text: &str, errors: &mut Vec<ConfigError>) {
        let Ok(Value::Object(root)) = serde_json::from_str::<Value>(text) else {
            return;
        };
        if let Some(Value::Bool(enabled)) = root.get("enabled") {
            self.enabled = *enabled;
        }
        let Some(delegate) = root.get("delegate") else {
            return;
        };
        let mut report = |key: &str, message: String| {
            errors.push(ConfigError::at(path, text, key_offset(text, key), message));
        };
        let Some(delegate) = delegate.as_object() else {
            report("delegate", "delegate must be an object".to_owned());
            return;
        };
        // A message names the key within its object: `delegate.maxTurns must be …`.
        let report = &mut |key: &str, message: String| report(key, format!("delegate.{message}"));
        if let Some(enabled) = flag(delegate, "enabled", report) {
            self.enabled = self.enabled && enabled;
        }
        let mut number = |key: &str, min: u64| integer_at_least(delegate, key, min, report);
        if let Some(n) = number("inlineAnswerBytes", 1) {
            self.inline_answer_bytes = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(n) = number("seedBudgetBytes", 1024) {
            self.seed_budget_bytes = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(n) = number("maxTurns", 1) {
            self.max_turns = u32::try_from(n).unwrap_or(u32::MAX);
        }
        if let Some(n) = number("timeoutSeconds", 1) {
            self.timeout_seconds = n;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;
    use crate::config::module_file::home_and_workspace;

    #[test]
    fn workspace_keys_override_global_ones_and_bad_values_are_reported() {
        let (home, workspace) = home_and_workspace(
            TASKS_CONFIG_FILE,
            r#"{"maxOutputBytes": 10, "delegate": {"inlineAnswerBytes": 100, "maxTurns": 3}}"#,
            "{\n \"delegate\": {\"maxTurns\": 5, \"timeoutSeconds\": 0}\n}",
        );
        let (config, errors) = DelegateConfig::load(Some(home.path()), workspace.path());
        assert_eq!(config.inline_answer_bytes, 100);
        assert_eq!(config.max_turns, 5);
        assert_eq!(config.timeout_seconds, 1200, "the bad value is not applied");
        assert_eq!(errors.len(), 1, "{errors:?}");
        let error = errors[0].to_string();
        assert!(
            error.contains(":2:") && error.contains("timeoutSeconds"),
            "{error}"
        );
    }

    #[test]
    fn the_master_toggle_disables_delegates() {
        let mut config = DelegateConfig::default();
        config.merge(Path::new("f"), r#"{"enabled": false}"#, &mut Vec::new());
        assert!(!config.enabled);
        let mut config = DelegateConfig::default();
        config.merge(
            Path::new("f"),
            r#"{"delegate": {"enabled": false}}"#,
            &mut Vec::new(),
        );
        assert!(!config.enabled);
    }
}

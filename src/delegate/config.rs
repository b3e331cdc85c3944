//! The delegate's settings: the `delegate` object of `background-tasks.json` (global, then the
//! workspace's), read here rather than in `tasks::config` so the background-task parsing stays
//! untouched — that file is shared, and unknown keys are ignored on both sides. The master
//! `enabled: false` of the file turns delegates off too, as in Unipi.

use serde_json::Value;

use super::artifacts::INLINE_ANSWER_BYTES;
use crate::config::module_file::{ModuleConfig, Object, Style, Wording, to_u32, to_usize};
use crate::tasks::TASKS_CONFIG_FILE;

/// The default seed budget in bytes. It also bounds the child's task, which reaches Pi as one
/// command-line argument (Linux caps one argument at 128 KiB).
pub(crate) const DEFAULT_SEED_BUDGET_BYTES: usize = 64 * 1024;

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

/// A bad value is reported and the value before it kept. Invalid JSON is the background-task
/// reader's to report; here it only means "nothing to apply".
impl ModuleConfig for DelegateConfig {
    const FILE: &'static str = TASKS_CONFIG_FILE;
    const STYLE: Style = Style::BACKTICKS.wording(Wording::Found).dotted();
    const OWNS_FILE: bool = false;

    fn read(&mut self, file: &mut Object<'_>) {
        if let Some(enabled) = file.value("enabled").and_then(Value::as_bool) {
            self.enabled = enabled;
        }
        let Some(mut delegate) = file.section("delegate", "an object") else {
            return;
        };
        let mut enabled = true;
        delegate.set("enabled", "true or false", &mut enabled, Value::as_bool);
        self.enabled = self.enabled && enabled;
        let mut number = |key: &str, min: u64| delegate.at_least(key, min);
        let inline = number("inlineAnswerBytes", 1).map(to_usize);
        let seed = number("seedBudgetBytes", 1024).map(to_usize);
        let turns = number("maxTurns", 1).map(to_u32);
        let timeout = number("timeoutSeconds", 1);
        self.inline_answer_bytes = inline.unwrap_or(self.inline_answer_bytes);
        self.seed_budget_bytes = seed.unwrap_or(self.seed_budget_bytes);
        self.max_turns = turns.unwrap_or(self.max_turns);
        self.timeout_seconds = timeout.unwrap_or(self.timeout_seconds);
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
        let (config, _) = DelegateConfig::from_sources(&[("f", r#"{"enabled": false}"#)]);
        assert!(!config.enabled);
        let (config, _) =
            DelegateConfig::from_sources(&[("f", r#"{"delegate": {"enabled": false}}"#)]);
        assert!(!config.enabled);
    }
}

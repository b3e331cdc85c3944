//! The auto-compaction decision: given the config, a context-usage sample from the bridge and the
//! state the previous sample left, decide whether to ask Pi to compact now. It is a pure function
//! returning the next state, so the runtime only replaces the state it holds with
//! `Decision::state`, and every branch is a row in a table test. The order of the checks is the
//! seed's (§2.2.2) and carries its loop safeguards: the first sample after a compaction is only a
//! baseline, a cooldown follows every trigger, and staying above the threshold re-triggers only
//! after real growth. `in_flight` is the mutex between the trigger and Pi's completion report;
//! [`mark_complete`] and [`mark_error`] release it.
//!
//! State changes, branch by branch (anything not named stays as it was):
//! - disabled, in flight, unknown usage: nothing changes (the baseline is preserved).
//! - post-compaction sample: `awaiting_post_compaction_sample` is cleared and `previous_percent`
//!   set; at or above the threshold the tokens become the repeat baseline, below it the baseline is
//!   reset like any below-threshold sample.
//! - below threshold: `previous_percent` set, `repeat_baseline_tokens` reset.
//! - cooldown, repeat growth needed: `previous_percent` set (and a missing repeat baseline is taken
//!   from this sample, so growth is measured from here on).
//! - trigger: `in_flight`, `last_trigger_at_ms = now`, `repeat_baseline_tokens = tokens`,
//!   `previous_percent` set.

use serde::{Deserialize, Serialize};

/// The longest cooldown a config may ask for: a day.
pub(crate) const MAX_COOLDOWN_MS: u64 = 24 * 60 * 60 * 1000;

/// The `autoCompaction` settings, clamped with [`AutoConfig::clamped`] before use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct AutoConfig {
    pub enabled: bool,
    pub threshold_percent: f64,
    pub cooldown_ms: u64,
    pub repeat_min_growth_tokens: u64,
    pub notify: bool,
    pub continue_after_threshold_compact: bool,
}

impl Default for AutoConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            threshold_percent: 80.0,
            cooldown_ms: 60_000,
            repeat_min_growth_tokens: 4_000,
            notify: true,
            continue_after_threshold_compact: true,
        }
    }
}

impl AutoConfig {
    /// Threshold into 1–99 % (a non-finite one becomes the default) and cooldown to at most a day.
    pub(crate) fn clamped(self) -> Self {
        let threshold_percent = if self.threshold_percent.is_finite() {
            self.threshold_percent.clamp(1.0, 99.0)
        } else {
            Self::default().threshold_percent
        };
        Self {
            threshold_percent,
            cooldown_ms: self.cooldown_ms.min(MAX_COOLDOWN_MS),
            ..self
        }
    }
}

/// One context-usage sample (Pi's `ctx.getContextUsage()`); either field may be unknown.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct UsageSample {
    pub tokens: Option<f64>,
    pub percent: Option<f64>,
}

/// What the decision remembers between samples; `Default` is a fresh session.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct AutoState {
    pub in_flight: bool,
    pub awaiting_post_compaction_sample: bool,
    pub last_trigger_at_ms: Option<u64>,
    pub previous_percent: Option<f64>,
    pub repeat_baseline_tokens: Option<f64>,
}

/// Why the decision came out as it did; [`DecisionReason::code`] gives the seed's snake-case name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum DecisionReason {
    Disabled,
    InFlight,
    UnknownUsage,
    PostCompactionBaseline,
    BelowThreshold,
    CooldownActive { remaining_ms: u64 },
    ThresholdReached,
    ThresholdCrossed,
    RepeatGrowthNeeded { tokens_until_repeat: u64 },
    RepeatGrowthReached,
}

impl DecisionReason {
    pub(crate) fn code(&self) -> &'static str {
        match self {
            DecisionReason::Disabled => "disabled",
            DecisionReason::InFlight => "in_flight",
            DecisionReason::UnknownUsage => "unknown_usage",
            DecisionReason::PostCompactionBaseline => "post_compaction_baseline",
            DecisionReason::BelowThreshold => "below_threshold",
            DecisionReason::CooldownActive { .. } => "cooldown_active",
            DecisionReason::ThresholdReached => "threshold_reached",
            DecisionReason::ThresholdCrossed => "threshold_crossed",
            DecisionReason::RepeatGrowthNeeded { .. } => "repeat_growth_needed",
            DecisionReason::RepeatGrowthReached => "repeat_growth_reached",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decision {
    pub trigger: bool,
    pub reason: DecisionReason,
    pub state: AutoState,
}

/// Decides on one usage sample; see the module doc for the order and the state changes.
/// `config` is clamped here too, so a caller cannot forget it.
pub(crate) fn decide(
    config: &AutoConfig,
    usage: &UsageSample,
    state: &AutoState,
    now_ms: u64,
) -> Decision {
    let config = config.clone().clamped();
    let threshold = config.threshold_percent;
    if !config.enabled {
        return hold(DecisionReason::Disabled, state.clone());
    }
    if state.in_flight {
        return hold(DecisionReason::InFlight, state.clone());
    }
    let (Some(tokens), Some(percent)) = (known(usage.tokens), known(usage.percent)) else {
        return hold(DecisionReason::UnknownUsage, state.clone());
    };
    let mut next = AutoState {
        previous_percent: Some(percent),
        ..state.clone()
    };
    if state.awaiting_post_compaction_sample {
        next.awaiting_post_compaction_sample = false;
        return if percent < threshold {
            next.repeat_baseline_tokens = None;
            hold(DecisionReason::BelowThreshold, next)
        } else {
            next.repeat_baseline_tokens = Some(tokens);
            hold(DecisionReason::PostCompactionBaseline, next)
        };
    }
    if percent < threshold {
        next.repeat_baseline_tokens = None;
        return hold(DecisionReason::BelowThreshold, next);
    }
    if let Some(last) = state.last_trigger_at_ms {
        let elapsed = now_ms.saturating_sub(last);
        if elapsed < config.cooldown_ms {
            let remaining_ms = config.cooldown_ms - elapsed;
            return hold(DecisionReason::CooldownActive { remaining_ms }, next);
        }
    }
    match state.previous_percent {
        None => return fire(DecisionReason::ThresholdReached, next, tokens, now_ms),
        Some(previous) if previous < threshold => {
            return fire(DecisionReason::ThresholdCrossed, next, tokens, now_ms);
        }
        Some(_) => {}
    }
    if state.last_trigger_at_ms.is_none() {
        return fire(DecisionReason::ThresholdReached, next, tokens, now_ms);
    }
    // Still above the threshold after an earlier trigger: only real growth since the baseline
    // justifies another compaction, or a summary that cannot shrink would loop.
    let min_growth = config.repeat_min_growth_tokens as f64;
    let Some(baseline) = state.repeat_baseline_tokens else {
        next.repeat_baseline_tokens = Some(tokens);
        let tokens_until_repeat = config.repeat_min_growth_tokens;
        return hold(
            DecisionReason::RepeatGrowthNeeded {
                tokens_until_repeat,
            },
            next,
        );
    };
    let growth = tokens - baseline;
    if growth >= min_growth {
        fire(DecisionReason::RepeatGrowthReached, next, tokens, now_ms)
    } else {
        let tokens_until_repeat = (min_growth - growth).ceil() as u64;
        hold(
            DecisionReason::RepeatGrowthNeeded {
                tokens_until_repeat,
            },
            next,
        )
    }
}

/// Pi reported the compaction done: release the mutex; the next sample is the new baseline.
pub(crate) fn mark_complete(state: &AutoState) -> AutoState {
    AutoState {
        in_flight: false,
        awaiting_post_compaction_sample: true,
        ..state.clone()
    }
}

/// The compaction failed: release the mutex but keep `last_trigger_at_ms`, so the cooldown
/// still spaces out the retries.
pub(crate) fn mark_error(state: &AutoState) -> AutoState {
    AutoState {
        in_flight: false,
        ..state.clone()
    }
}

fn known(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_finite() && *v >= 0.0)
}

fn hold(reason: DecisionReason, state: AutoState) -> Decision {
    Decision {
        trigger: false,
        reason,
        state,
    }
}

fn fire(reason: DecisionReason, mut state: AutoState, tokens: f64, now_ms: u64) -> Decision {
    state.in_flight = true;
    state.last_trigger_at_ms = Some(now_ms);
    state.repeat_baseline_tokens = Some(tokens);
    Decision {
        trigger: true,
        reason,
        state,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enabled() -> AutoConfig {
        AutoConfig {
            enabled: true,
            ..AutoConfig::default()
        }
    }

    fn usage(tokens: f64, percent: f64) -> UsageSample {
        UsageSample {
            tokens: Some(tokens),
            percent: Some(percent),
        }
    }

    fn state_after_trigger(at_ms: u64, percent: f64, baseline: f64) -> AutoState {
        AutoState {
            last_trigger_at_ms: Some(at_ms),
            previous_percent: Some(percent),
            repeat_baseline_tokens: Some(baseline),
            ..AutoState::default()
        }
    }

    struct Case {
        name: &'static str,
        config: AutoConfig,
        usage: UsageSample,
        state: AutoState,
        now_ms: u64,
        trigger: bool,
        reason: DecisionReason,
        next: AutoState,
    }

    /// A case that does not trigger and leaves the state as it was.
    fn unchanged(
        name: &'static str,
        config: AutoConfig,
        usage: UsageSample,
        state: AutoState,
        now_ms: u64,
        reason: DecisionReason,
    ) -> Case {
        Case {
            name,
            config,
            usage,
            next: state.clone(),
            state,
            now_ms,
            trigger: false,
            reason,
        }
    }

    #[test]
    fn every_branch_of_decide() {
        let fresh = AutoState::default();
        let in_flight = AutoState {
            in_flight: true,
            last_trigger_at_ms: Some(1_000),
            previous_percent: Some(85.0),
            repeat_baseline_tokens: Some(170_000.0),
            ..AutoState::default()
        };
        let awaiting = AutoState {
            awaiting_post_compaction_sample: true,
            ..state_after_trigger(1_000, 85.0, 170_000.0)
        };
        let cases = vec![
            unchanged(
                "disabled: nothing changes",
                AutoConfig::default(),
                usage(190_000.0, 95.0),
                fresh.clone(),
                10,
                DecisionReason::Disabled,
            ),
            unchanged(
                "in flight: nothing changes",
                enabled(),
                usage(190_000.0, 95.0),
                in_flight.clone(),
                500_000,
                DecisionReason::InFlight,
            ),
            unchanged(
                "unknown tokens keep the baseline",
                enabled(),
                UsageSample {
                    tokens: None,
                    percent: Some(95.0),
                },
                state_after_trigger(1_000, 85.0, 170_000.0),
                500_000,
                DecisionReason::UnknownUsage,
            ),
            unchanged(
                "negative percent is unknown",
                enabled(),
                usage(1.0, -3.0),
                fresh.clone(),
                0,
                DecisionReason::UnknownUsage,
            ),
            unchanged(
                "NaN tokens are unknown",
                enabled(),
                usage(f64::NAN, 90.0),
                fresh.clone(),
                0,
                DecisionReason::UnknownUsage,
            ),
            Case {
                name: "post-compaction sample above the threshold becomes the baseline",
                config: enabled(),
                usage: usage(165_000.0, 82.0),
                state: awaiting.clone(),
                now_ms: 2_000,
                trigger: false,
                reason: DecisionReason::PostCompactionBaseline,
                next: state_after_trigger(1_000, 82.0, 165_000.0),
            },
            Case {
                name: "post-compaction sample below the threshold resets the baseline",
                config: enabled(),
                usage: usage(40_000.0, 20.0),
                state: awaiting.clone(),
                now_ms: 2_000,
                trigger: false,
                reason: DecisionReason::BelowThreshold,
                next: AutoState {
                    repeat_baseline_tokens: None,
                    ..state_after_trigger(1_000, 20.0, 0.0)
                },
            },
            Case {
                name: "below threshold resets the repeat baseline",
                config: enabled(),
                usage: usage(100_000.0, 50.0),
                state: state_after_trigger(1_000, 85.0, 170_000.0),
                now_ms: 500_000,
                trigger: false,
                reason: DecisionReason::BelowThreshold,
                next: AutoState {
                    repeat_baseline_tokens: None,
                    ..state_after_trigger(1_000, 50.0, 0.0)
                },
            },
            Case {
                name: "cooldown reports the time left",
                config: enabled(),
                usage: usage(190_000.0, 95.0),
                state: state_after_trigger(1_000, 50.0, 100_000.0),
                now_ms: 21_000,
                trigger: false,
                reason: DecisionReason::CooldownActive {
                    remaining_ms: 40_000,
                },
                next: state_after_trigger(1_000, 95.0, 100_000.0),
            },
            Case {
                name: "a clock running backwards keeps the whole cooldown",
                config: enabled(),
                usage: usage(190_000.0, 95.0),
                state: state_after_trigger(50_000, 50.0, 100_000.0),
                now_ms: 10_000,
                trigger: false,
                reason: DecisionReason::CooldownActive {
                    remaining_ms: 60_000,
                },
                next: state_after_trigger(50_000, 95.0, 100_000.0),
            },
            Case {
                name: "first sample at the threshold triggers",
                config: enabled(),
                usage: usage(160_000.0, 80.0),
                state: fresh.clone(),
                now_ms: 7,
                trigger: true,
                reason: DecisionReason::ThresholdReached,
                next: AutoState {
                    in_flight: true,
                    ..state_after_trigger(7, 80.0, 160_000.0)
                },
            },
            Case {
                name: "crossing the threshold triggers",
                config: enabled(),
                usage: usage(170_000.0, 85.0),
                state: AutoState {
                    previous_percent: Some(70.0),
                    ..AutoState::default()
                },
                now_ms: 9,
                trigger: true,
                reason: DecisionReason::ThresholdCrossed,
                next: AutoState {
                    in_flight: true,
                    ..state_after_trigger(9, 85.0, 170_000.0)
                },
            },
            Case {
                name: "crossing again after the cooldown triggers",
                config: enabled(),
                usage: usage(170_000.0, 85.0),
                state: state_after_trigger(1_000, 70.0, 100_000.0),
                now_ms: 61_000,
                trigger: true,
                reason: DecisionReason::ThresholdCrossed,
                next: AutoState {
                    in_flight: true,
                    ..state_after_trigger(61_000, 85.0, 170_000.0)
                },
            },
            Case {
                name: "above the threshold but never triggered triggers",
                config: enabled(),
                usage: usage(180_000.0, 90.0),
                state: AutoState {
                    previous_percent: Some(88.0),
                    ..AutoState::default()
                },
                now_ms: 11,
                trigger: true,
                reason: DecisionReason::ThresholdReached,
                next: AutoState {
                    in_flight: true,
                    ..state_after_trigger(11, 90.0, 180_000.0)
                },
            },
            Case {
                name: "staying above needs growth",
                config: enabled(),
                usage: usage(172_500.0, 86.0),
                state: state_after_trigger(1_000, 85.0, 170_000.0),
                now_ms: 100_000,
                trigger: false,
                reason: DecisionReason::RepeatGrowthNeeded {
                    tokens_until_repeat: 1_500,
                },
                next: state_after_trigger(1_000, 86.0, 170_000.0),
            },
            Case {
                name: "staying above without a baseline starts measuring",
                config: enabled(),
                usage: usage(172_500.0, 86.0),
                state: AutoState {
                    repeat_baseline_tokens: None,
                    ..state_after_trigger(1_000, 85.0, 0.0)
                },
                now_ms: 100_000,
                trigger: false,
                reason: DecisionReason::RepeatGrowthNeeded {
                    tokens_until_repeat: 4_000,
                },
                next: state_after_trigger(1_000, 86.0, 172_500.0),
            },
            Case {
                name: "enough growth triggers again",
                config: enabled(),
                usage: usage(174_000.0, 87.0),
                state: state_after_trigger(1_000, 85.0, 170_000.0),
                now_ms: 100_000,
                trigger: true,
                reason: DecisionReason::RepeatGrowthReached,
                next: AutoState {
                    in_flight: true,
                    ..state_after_trigger(100_000, 87.0, 174_000.0)
                },
            },
            Case {
                name: "an out-of-range threshold is clamped to 99",
                config: AutoConfig {
                    threshold_percent: 150.0,
                    ..enabled()
                },
                usage: usage(196_000.0, 98.0),
                state: fresh.clone(),
                now_ms: 0,
                trigger: false,
                reason: DecisionReason::BelowThreshold,
                next: AutoState {
                    previous_percent: Some(98.0),
                    ..AutoState::default()
                },
            },
        ];
        for case in cases {
            let decision = decide(&case.config, &case.usage, &case.state, case.now_ms);
            assert_eq!(decision.trigger, case.trigger, "{}", case.name);
            assert_eq!(decision.reason, case.reason, "{}", case.name);
            assert_eq!(decision.state, case.next, "{}", case.name);
        }
    }

    #[test]
    fn config_is_clamped() {
        let table = [
            (0.0, 0, 1.0, 0),
            (50.0, 5_000, 50.0, 5_000),
            (100.0, u64::MAX, 99.0, MAX_COOLDOWN_MS),
            (f64::NAN, MAX_COOLDOWN_MS + 1, 80.0, MAX_COOLDOWN_MS),
            (-5.0, 1, 1.0, 1),
        ];
        for (threshold, cooldown, want_threshold, want_cooldown) in table {
            let clamped = AutoConfig {
                threshold_percent: threshold,
                cooldown_ms: cooldown,
                ..AutoConfig::default()
            }
            .clamped();
            assert_eq!(clamped.threshold_percent, want_threshold, "{threshold}");
            assert_eq!(clamped.cooldown_ms, want_cooldown, "{cooldown}");
        }
        let defaults = AutoConfig::default();
        assert!(!defaults.enabled && defaults.notify && defaults.continue_after_threshold_compact);
        assert_eq!(defaults.repeat_min_growth_tokens, 4_000);
    }

    #[test]
    fn trigger_complete_then_baseline_then_growth() {
        let config = enabled();
        let mut state = AutoState::default();
        let mut reasons = Vec::new();
        // (now, tokens, percent, event): None = a usage sample; Some(true) = Pi finished.
        let script: &[(u64, f64, f64, Option<bool>)] = &[
            (0, 100_000.0, 50.0, None),
            (1_000, 170_000.0, 85.0, None),
            (1_500, 0.0, 0.0, Some(true)),
            (2_000, 166_000.0, 83.0, None),
            (30_000, 180_000.0, 90.0, None),
            (70_000, 168_000.0, 84.0, None),
            (80_000, 170_000.0, 85.0, None),
        ];
        for &(now, tokens, percent, completion) in script {
            if completion.is_some() {
                state = mark_complete(&state);
                continue;
            }
            let decision = decide(&config, &usage(tokens, percent), &state, now);
            reasons.push(decision.reason.code());
            state = decision.state;
        }
        assert_eq!(
            reasons,
            [
                "below_threshold",
                "threshold_crossed",
                "post_compaction_baseline",
                "cooldown_active",
                "repeat_growth_needed",
                "repeat_growth_reached",
            ]
        );
        assert!(state.in_flight);
        assert_eq!(state.last_trigger_at_ms, Some(80_000));
    }

    #[test]
    fn error_releases_the_mutex_but_keeps_the_cooldown() {
        let config = enabled();
        let fired = decide(
            &config,
            &usage(170_000.0, 85.0),
            &AutoState::default(),
            1_000,
        );
        assert!(fired.trigger);
        let blocked = decide(&config, &usage(170_000.0, 85.0), &fired.state, 2_000);
        assert_eq!(blocked.reason, DecisionReason::InFlight);

        let failed = mark_error(&fired.state);
        assert!(!failed.in_flight);
        assert!(!failed.awaiting_post_compaction_sample);
        assert_eq!(failed.last_trigger_at_ms, Some(1_000));

        let cooling = decide(&config, &usage(170_000.0, 85.0), &failed, 2_000);
        assert_eq!(
            cooling.reason,
            DecisionReason::CooldownActive {
                remaining_ms: 59_000
            }
        );
        assert!(!cooling.trigger);
        // After the cooldown the same size does not re-fire: growth is measured from the trigger.
        let later = decide(&config, &usage(170_000.0, 85.0), &cooling.state, 61_000);
        assert_eq!(
            later.reason,
            DecisionReason::RepeatGrowthNeeded {
                tokens_until_repeat: 4_000
            }
        );
    }

    #[test]
    fn complete_awaits_a_sample_and_keeps_the_trigger_time() {
        let fired = decide(
            &enabled(),
            &usage(170_000.0, 85.0),
            &AutoState::default(),
            5,
        );
        let done = mark_complete(&fired.state);
        assert!(!done.in_flight);
        assert!(done.awaiting_post_compaction_sample);
        assert_eq!(done.last_trigger_at_ms, Some(5));
        // An unknown sample does not consume the post-compaction slot.
        let unknown = decide(&enabled(), &UsageSample::default(), &done, 10);
        assert_eq!(unknown.reason, DecisionReason::UnknownUsage);
        assert!(unknown.state.awaiting_post_compaction_sample);
    }
}

//! The primary's fallback: when the main agent's model call fails with a rate-limit or quota
//! error (HTTP 429, "rate limit", "quota", "too many requests", "resource exhausted") and the
//! active preset names a fallback, the pair moves the main Pi to the fallback model and returns
//! it to the primary after the preset's cooldown — the closest competitor's per-role fallback,
//! for the primary role. A further rate-limit error while on the fallback does not move it
//! again (the fallback has its own limits; chasing them would loop), and a return that finds the
//! fallback replaced (a new pair applied) does nothing. Pure state, driven by the engine.

use std::time::{Duration, Instant};

use super::config::ModelRef;

/// Whether an error message from a model call says the provider is rate-limiting or out of
/// quota (as opposed to a bad request, an outage or an auth failure).
pub(crate) fn is_rate_limit(message: &str) -> bool {
    let lower = message.to_lowercase();
    let words = [
        "429",
        "rate limit",
        "rate_limit",
        "ratelimit",
        "too many requests",
        "quota",
        "resource_exhausted",
        "resource exhausted",
    ];
    words.iter().any(|word| lower.contains(word))
}

/// The fallback standing in for the primary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ActiveFallback {
    pub model: ModelRef,
    pub until: Instant,
    /// Which switch this is, so a stale return does nothing.
    pub generation: u64,
}

/// What the engine must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Nothing,
    /// Set the main model to `to`, and come back at `until` with `generation`.
    SwitchTo {
        to: ModelRef,
        until: Instant,
        generation: u64,
    },
    /// Set the main model back to the primary.
    Return {
        to: ModelRef,
    },
}

/// The fallback state of the pair.
#[derive(Debug, Default)]
pub(crate) struct FallbackState {
    active: Option<ActiveFallback>,
    generation: u64,
}

impl FallbackState {
    pub(crate) fn active(&self) -> Option<&ActiveFallback> {
        self.active.as_ref()
    }

    /// A main-model call failed with `error`. `fallback` and `cooldown` come from the preset.
    pub(crate) fn on_error(
        &mut self,
        error: &str,
        fallback: Option<&ModelRef>,
        cooldown: Duration,
        now: Instant,
    ) -> Step {
        let Some(fallback) = fallback else {
            return Step::Nothing;
        };
        if self.active.is_some() || !is_rate_limit(error) {
            return Step::Nothing;
        }
        self.generation += 1;
        let until = now + cooldown;
        self.active = Some(ActiveFallback {
            model: fallback.clone(),
            until,
            generation: self.generation,
        });
        Step::SwitchTo {
            to: fallback.clone(),
            until,
            generation: self.generation,
        }
    }

    /// The cooldown of switch `generation` is over: back to `primary`.
    pub(crate) fn on_cooldown_over(&mut self, generation: u64, primary: &ModelRef) -> Step {
        match &self.active {
            Some(active) if active.generation == generation => {
                self.active = None;
                Step::Return {
                    to: primary.clone(),
                }
            }
            _ => Step::Nothing,
        }
    }

    /// A new pair (or fusion off): whatever fallback ran is forgotten.
    pub(crate) fn reset(&mut self) {
        self.active = None;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;
    use crate::test_table::check_table;

    #[test]
    fn rate_limit_table() {
        let cases = [
            ("429 Too Many Requests", true),
            ("Rate limit reached for requests", true),
            ("rate_limit_error: slow down", true),
            (
                "You exceeded your current quota, please check your plan",
                true,
            ),
            ("RESOURCE_EXHAUSTED: try later", true),
            ("500 internal server error", false),
            ("401 invalid api key", false),
            ("overloaded_error", false),
            ("", false),
        ];
        check_table(cases, |message| is_rate_limit(message));
    }

    #[test]
    fn switches_once_returns_after_the_cooldown_and_ignores_stale_returns() {
        let (primary, spare) = (
            ModelRef::parse("p/big").unwrap(),
            ModelRef::parse("q/spare").unwrap(),
        );
        let cooldown = Duration::from_secs(60);
        let now = Instant::now();
        let mut state = FallbackState::default();
        // No fallback configured, or not a rate limit: nothing.
        assert_eq!(state.on_error("429", None, cooldown, now), Step::Nothing);
        assert_eq!(
            state.on_error("500 oops", Some(&spare), cooldown, now),
            Step::Nothing
        );
        let step = state.on_error("429 rate limited", Some(&spare), cooldown, now);
        assert_eq!(
            step,
            Step::SwitchTo {
                to: spare.clone(),
                until: now + cooldown,
                generation: 1
            }
        );
        assert_eq!(state.active().unwrap().model, spare);
        // Rate-limited again on the fallback: it stays.
        assert_eq!(
            state.on_error("429", Some(&spare), cooldown, now),
            Step::Nothing
        );
        assert_eq!(
            state.on_cooldown_over(1, &primary),
            Step::Return {
                to: primary.clone()
            }
        );
        assert!(state.active().is_none());
        assert_eq!(state.on_cooldown_over(1, &primary), Step::Nothing);
        // A new pair while on a fallback: its old return does nothing.
        state.on_error("quota", Some(&spare), cooldown, now);
        state.reset();
        assert_eq!(state.on_cooldown_over(2, &primary), Step::Nothing);
    }
}

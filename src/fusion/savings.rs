//! The arithmetic of savings: what a call's tokens cost at a model's prices, what a call served
//! by the sidekick cost there against what the same tokens would have cost on the primary, and
//! the price ratio the picker previews. Prices are Pi's: dollars per million tokens, for input,
//! output, cache reads and cache writes. Pure functions, table-tested.

use crate::bridge::ModelCost;

/// Tokens of one call (or of many, summed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Tokens {
    pub fn total(&self) -> u64 {
        self.input + self.output + self.cache_read + self.cache_write
    }
}

/// What `tokens` cost at `price` (dollars).
pub(crate) fn cost_at(tokens: &Tokens, price: &ModelCost) -> f64 {
    let per = |count: u64, dollars_per_million: f64| count as f64 * dollars_per_million / 1e6;
    per(tokens.input, price.input)
        + per(tokens.output, price.output)
        + per(tokens.cache_read, price.cache_read)
        + per(tokens.cache_write, price.cache_write)
}

/// One served call's cost on the sidekick and the primary's cost of the same tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct CallCost {
    pub sidekick: f64,
    pub primary: f64,
}

/// A served call's costs. The sidekick's is what Pi reported for the call when it reported one
/// (it priced the call itself); otherwise it is worked out from the sidekick's prices. A model
/// Pi lists without prices costs nothing.
pub(crate) fn call_cost(
    tokens: &Tokens,
    reported: Option<f64>,
    sidekick: Option<&ModelCost>,
    primary: Option<&ModelCost>,
) -> CallCost {
    let free = ModelCost::default();
    let sidekick_cost = match reported {
        Some(cost) if cost.is_finite() && cost > 0.0 => cost,
        _ => cost_at(tokens, sidekick.unwrap_or(&free)),
    };
    CallCost {
        sidekick: sidekick_cost,
        primary: cost_at(tokens, primary.unwrap_or(&free)),
    }
}

/// How much dearer the primary is than the sidekick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PriceRatio {
    pub input: Option<f64>,
    pub output: Option<f64>,
    /// Over a typical mix of three input tokens to one output token.
    pub blended: Option<f64>,
}

/// Input tokens per output token in the blended ratio (a coding agent reads far more than it
/// writes).
const INPUT_PER_OUTPUT: f64 = 3.0;

/// The primary's prices over the sidekick's; `None` where the sidekick's price is zero.
pub(crate) fn price_ratio(primary: &ModelCost, sidekick: &ModelCost) -> PriceRatio {
    let ratio = |dear: f64, cheap: f64| (cheap > 0.0).then(|| dear / cheap);
    let blend = |price: &ModelCost| (INPUT_PER_OUTPUT * price.input + price.output) / 4.0;
    PriceRatio {
        input: ratio(primary.input, sidekick.input),
        output: ratio(primary.output, sidekick.output),
        blended: ratio(blend(primary), blend(sidekick)),
    }
}

/// The picker's preview line for a pair.
pub(crate) fn ratio_line(primary: Option<&ModelCost>, sidekick: Option<&ModelCost>) -> String {
    let (Some(primary), Some(sidekick)) = (primary, sidekick) else {
        return "No prices listed for this pair: savings cannot be worked out".to_owned();
    };
    let ratio = price_ratio(primary, sidekick);
    let times = |value: Option<f64>| match value {
        Some(value) if value >= 10.0 => format!("{value:.0}×"),
        Some(value) => format!("{value:.1}×"),
        None => "—".to_owned(),
    };
    let head = match ratio.blended {
        Some(blended) if blended > 1.0 => {
            format!("The sidekick is {} cheaper", times(Some(blended)))
        }
        Some(blended) if blended < 1.0 => format!(
            "The sidekick is {} dearer than the primary",
            times(Some(1.0 / blended))
        ),
        Some(_) => "Both cost the same".to_owned(),
        None => "The sidekick is free".to_owned(),
    };
    format!(
        "{head} (input {}, output {})",
        times(ratio.input),
        times(ratio.output)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn price(input: f64, output: f64) -> ModelCost {
        ModelCost {
            input,
            output,
            cache_read: input / 10.0,
            cache_write: input * 1.25,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn cost_at_table() {
        let tokens = |input, output, cache_read, cache_write| Tokens {
            input,
            output,
            cache_read,
            cache_write,
        };
        // (tokens, price, dollars)
        let cases = [
            (tokens(1_000_000, 0, 0, 0), price(3.0, 15.0), 3.0),
            (tokens(0, 1_000_000, 0, 0), price(3.0, 15.0), 15.0),
            (tokens(1_000, 500, 0, 0), price(3.0, 15.0), 0.003 + 0.0075),
            (
                tokens(0, 0, 2_000_000, 1_000_000),
                price(3.0, 15.0),
                0.6 + 3.75,
            ),
            (tokens(0, 0, 0, 0), price(3.0, 15.0), 0.0),
            (tokens(123, 456, 7, 8), ModelCost::default(), 0.0),
        ];
        for (tokens, price, want) in cases {
            assert!(
                close(cost_at(&tokens, &price), want),
                "{tokens:?} at {price:?}"
            );
        }
    }

    #[test]
    fn call_cost_table() {
        let tokens = Tokens {
            input: 100_000,
            output: 10_000,
            ..Tokens::default()
        };
        let (small, big) = (price(0.25, 1.25), price(15.0, 75.0));
        // (reported cost, sidekick price, primary price, sidekick $, primary $)
        let cases = [
            // Pi's own figure wins for the sidekick.
            (Some(0.0375), Some(&small), Some(&big), 0.0375, 2.25),
            // None reported: worked out from the sidekick's prices (0.025 + 0.0125).
            (None, Some(&small), Some(&big), 0.0375, 2.25),
            (Some(0.0), Some(&small), Some(&big), 0.0375, 2.25),
            (Some(f64::NAN), Some(&small), Some(&big), 0.0375, 2.25),
            // No prices listed: free.
            (None, None, Some(&big), 0.0, 2.25),
            (None, Some(&small), None, 0.0375, 0.0),
        ];
        for (reported, sidekick, primary, want_sidekick, want_primary) in cases {
            let cost = call_cost(&tokens, reported, sidekick, primary);
            assert!(
                close(cost.sidekick, want_sidekick),
                "{reported:?}: {cost:?}"
            );
            assert!(close(cost.primary, want_primary), "{reported:?}: {cost:?}");
        }
    }

    #[test]
    fn ratio_table() {
        let cases = [
            (
                price(15.0, 75.0),
                price(0.25, 1.25),
                "The sidekick is 60× cheaper (input 60×, output 60×)",
            ),
            (
                price(3.0, 15.0),
                price(1.0, 4.0),
                "The sidekick is 3.4× cheaper (input 3.0×, output 3.8×)",
            ),
            (
                price(1.0, 2.0),
                price(1.0, 2.0),
                "Both cost the same (input 1.0×, output 1.0×)",
            ),
            (
                price(1.0, 2.0),
                price(2.0, 4.0),
                "The sidekick is 2.0× dearer than the primary (input 0.5×, output 0.5×)",
            ),
            (
                price(1.0, 2.0),
                price(0.0, 0.0),
                "The sidekick is free (input —, output —)",
            ),
        ];
        for (primary, sidekick, want) in cases {
            assert_eq!(ratio_line(Some(&primary), Some(&sidekick)), want);
        }
        assert!(ratio_line(None, Some(&price(1.0, 1.0))).starts_with("No prices"));
    }
}

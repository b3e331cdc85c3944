//! Helper budgets: how many turns, tool calls, tokens and how much cost one helper run may use,
//! and the pure decision of when to act on them. Pi has no flag for any of these, so a budget is
//! stated to the child in its system prompt ([`budget_prompt`]) and enforced from outside by the
//! runner: [`BudgetWatch`] is fed the run's running totals after every event and answers at most
//! one [`BudgetAction::Steer`] (the limit is reached: "answer now, no more tools") and then at
//! most one [`BudgetAction::Abort`] once `grace_turns` more turns ended without the run finishing.
//! The watch knows nothing of processes, so every threshold is table-tested here and the runner
//! only carries the actions out.

use super::agents::AgentType;
use super::args::SpawnArgs;

/// The limits of one run. `None` means no limit; the default sets none.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    pub max_turns: Option<u32>,
    pub max_tool_uses: Option<u32>,
    /// Total tokens (input + output + cache) over all model calls.
    pub max_tokens: Option<u64>,
    /// In the provider's currency units as Pi reports them (USD for the built-in models).
    pub max_cost: Option<f64>,
    /// Turns the child may still take after the steer before it is aborted.
    pub grace_turns: u32,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            max_turns: None,
            max_tool_uses: None,
            max_tokens: None,
            max_cost: None,
            grace_turns: 2,
        }
    }
}

impl Budget {
    /// A budget of `turns` turns and nothing else.
    pub fn turns(turns: u32) -> Self {
        Self {
            max_turns: Some(turns),
            ..Self::default()
        }
    }

    /// The limits a call asked for: its own, and the agent type's turn limit where the call set
    /// none.
    pub(super) fn of(args: &SpawnArgs, agent: &AgentType) -> Self {
        Self {
            max_turns: args.max_turns.or(agent.max_turns),
            max_tool_uses: args.max_tool_uses,
            max_tokens: args.max_tokens,
            max_cost: args.max_cost,
            ..Self::default()
        }
    }

    /// No limit is set.
    #[cfg(test)]
    pub(crate) fn is_unlimited(&self) -> bool {
        self.max_turns.is_none()
            && self.max_tool_uses.is_none()
            && self.max_tokens.is_none()
            && self.max_cost.is_none()
    }
}

/// What a run has used so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    pub turns: u32,
    pub tool_uses: u32,
    pub tokens: u64,
    pub cost: f64,
}

/// What the runner must do now.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BudgetAction {
    /// Deliver this message to the child before its next model call.
    Steer(String),
    /// End the run; the reason is the run's error (`turn budget exceeded: 7 turns (limit 5)`).
    Abort(String),
}

/// Which limit was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BudgetKind {
    Turns,
    ToolUses,
    Tokens,
    Cost,
}

impl BudgetKind {
    /// `turn`, `tool-use`, `token`, `cost`: the word before "budget".
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Turns => "turn",
            Self::ToolUses => "tool-use",
            Self::Tokens => "token",
            Self::Cost => "cost",
        }
    }
}

/// Watches one run's totals against its budget.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BudgetWatch {
    budget: Budget,
    /// The limit that was reached and the turn count when the steer went out.
    steered: Option<(BudgetKind, u32)>,
    aborted: Option<String>,
}

impl BudgetWatch {
    pub(crate) fn new(budget: Budget) -> Self {
        Self {
            budget,
            steered: None,
            aborted: None,
        }
    }

    /// Feeds the totals after an event; returns the action due now, if any. Each action is
    /// returned at most once; after the abort nothing more is returned.
    pub(crate) fn observe(&mut self, totals: &Totals) -> Option<BudgetAction> {
        if self.aborted.is_some() {
            return None;
        }
        match self.steered {
            None => {
                let kind = self.reached(totals)?;
                self.steered = Some((kind, totals.turns));
                Some(BudgetAction::Steer(steer_message(
                    kind,
                    &self.budget,
                    totals,
                )))
            }
            Some((kind, steered_at)) => {
                if totals.turns < steered_at.saturating_add(self.budget.grace_turns) {
                    return None;
                }
                let reason = abort_reason(kind, &self.budget, totals);
                self.aborted = Some(reason.clone());
                Some(BudgetAction::Abort(reason))
            }
        }
    }

    /// The limit that was reached, once the steer went out.
    #[cfg(test)]
    pub(crate) fn reached_kind(&self) -> Option<BudgetKind> {
        self.steered.map(|(kind, _)| kind)
    }

    /// The abort reason, once aborted.
    #[cfg(test)]
    pub(crate) fn exceeded(&self) -> Option<&str> {
        self.aborted.as_deref()
    }

    /// The first limit (in the order turns, tool uses, tokens, cost) the totals reach.
    fn reached(&self, totals: &Totals) -> Option<BudgetKind> {
        let budget = &self.budget;
        if budget.max_turns.is_some_and(|max| totals.turns >= max) {
            Some(BudgetKind::Turns)
        } else if budget
            .max_tool_uses
            .is_some_and(|max| totals.tool_uses >= max)
        {
            Some(BudgetKind::ToolUses)
        } else if budget.max_tokens.is_some_and(|max| totals.tokens >= max) {
            Some(BudgetKind::Tokens)
        } else if budget.max_cost.is_some_and(|max| totals.cost >= max) {
            Some(BudgetKind::Cost)
        } else {
            None
        }
    }
}

/// The sentences appended to the child's system prompt stating its budgets; `None` when the
/// budget sets no limit.
pub(crate) fn budget_prompt(budget: &Budget) -> Option<String> {
    let mut limits = Vec::new();
    if let Some(turns) = budget.max_turns {
        limits.push(plural(u64::from(turns), "turn"));
    }
    if let Some(tool_uses) = budget.max_tool_uses {
        limits.push(plural(u64::from(tool_uses), "tool call"));
    }
    if let Some(tokens) = budget.max_tokens {
        limits.push(plural(tokens, "token"));
    }
    if let Some(cost) = budget.max_cost {
        limits.push(format!("${cost:.2} of model cost"));
    }
    if limits.is_empty() {
        return None;
    }
    Some(format!(
        "Your budget for this task: at most {}. Plan to give your final answer before it runs \
         out. When a budget is reached you will be told; then answer at once with what you \
         have, without calling more tools. A run that goes on is aborted.",
        join_limits(&limits)
    ))
}

fn steer_message(kind: BudgetKind, budget: &Budget, totals: &Totals) -> String {
    format!(
        "Budget reached: {}. Stop now: do not call any more tools, and give your final answer \
         with what you have found so far.",
        usage_against_limit(kind, budget, totals)
    )
}

fn abort_reason(kind: BudgetKind, budget: &Budget, totals: &Totals) -> String {
    format!(
        "{} budget exceeded: {}",
        kind.as_str(),
        used_and_limit(kind, budget, totals)
    )
}

/// `you have used 5 of your 5 turns`.
fn usage_against_limit(kind: BudgetKind, budget: &Budget, totals: &Totals) -> String {
    match kind {
        BudgetKind::Turns => format!(
            "you have used {} of your {}",
            totals.turns,
            plural(u64::from(budget.max_turns.unwrap_or(0)), "turn")
        ),
        BudgetKind::ToolUses => format!(
            "you have made {} of your {}",
            totals.tool_uses,
            plural(u64::from(budget.max_tool_uses.unwrap_or(0)), "tool call")
        ),
        BudgetKind::Tokens => format!(
            "you have used {} of your {}",
            totals.tokens,
            plural(budget.max_tokens.unwrap_or(0), "token")
        ),
        BudgetKind::Cost => format!(
            "you have spent ${:.2} of your ${:.2}",
            totals.cost,
            budget.max_cost.unwrap_or(0.0)
        ),
    }
}

/// `7 turns (limit 5)`.
fn used_and_limit(kind: BudgetKind, budget: &Budget, totals: &Totals) -> String {
    match kind {
        BudgetKind::Turns => format!(
            "{} (limit {})",
            plural(u64::from(totals.turns), "turn"),
            budget.max_turns.unwrap_or(0)
        ),
        BudgetKind::ToolUses => format!(
            "{} (limit {})",
            plural(u64::from(totals.tool_uses), "tool use"),
            budget.max_tool_uses.unwrap_or(0)
        ),
        BudgetKind::Tokens => format!(
            "{} (limit {})",
            plural(totals.tokens, "token"),
            budget.max_tokens.unwrap_or(0)
        ),
        BudgetKind::Cost => format!(
            "${:.2} (limit ${:.2})",
            totals.cost,
            budget.max_cost.unwrap_or(0.0)
        ),
    }
}

fn plural(count: u64, noun: &str) -> String {
    if count == 1 {
        format!("{count} {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join_limits(limits: &[String]) -> String {
    match limits {
        [] => String::new(),
        [only] => only.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_table::check_table;

    fn totals(turns: u32, tool_uses: u32, tokens: u64, cost: f64) -> Totals {
        Totals {
            turns,
            tool_uses,
            tokens,
            cost,
        }
    }

    /// How every steering message is worded around what was reached.
    const REACHED: &str = "Budget reached: ";
    const STOP: &str = ". Stop now: do not call any more tools, and give your final answer with \
                        what you have found so far.";

    /// Feeds `steps` in order and returns the action each produced, as a short string: a
    /// steering message shows what was reached when it is worded as [`REACHED`]…[`STOP`], and
    /// whole otherwise.
    fn run(budget: Budget, steps: &[Totals]) -> Vec<String> {
        let mut watch = BudgetWatch::new(budget);
        steps
            .iter()
            .map(|step| match watch.observe(step) {
                None => "-".to_string(),
                Some(BudgetAction::Steer(message)) => {
                    let reached = message
                        .strip_prefix(REACHED)
                        .and_then(|rest| rest.strip_suffix(STOP));
                    format!("steer: {}", reached.unwrap_or(&message))
                }
                Some(BudgetAction::Abort(reason)) => format!("abort: {reason}"),
            })
            .collect()
    }

    #[test]
    fn watch_table() {
        let steer_turns = "steer: you have used 5 of your 5 turns";
        let cases: Vec<(&str, Budget, Vec<Totals>, Vec<&str>)> = vec![
            (
                "no budget never acts",
                Budget::default(),
                vec![totals(100, 100, 1_000_000, 99.0)],
                vec!["-"],
            ),
            (
                "turns: steer at the limit, abort after the grace",
                Budget::turns(5),
                vec![
                    totals(4, 0, 0, 0.0),
                    totals(5, 0, 0, 0.0),
                    totals(5, 1, 0, 0.0),
                    totals(6, 1, 0, 0.0),
                    totals(7, 1, 0, 0.0),
                    totals(8, 1, 0, 0.0),
                ],
                vec![
                    "-",
                    steer_turns,
                    "-",
                    "-",
                    "abort: turn budget exceeded: 7 turns (limit 5)",
                    "-",
                ],
            ),
            (
                "a jump past the limit still steers once",
                Budget::turns(2),
                vec![
                    totals(4, 0, 0, 0.0),
                    totals(5, 0, 0, 0.0),
                    totals(6, 0, 0, 0.0),
                ],
                vec![
                    "steer: you have used 4 of your 2 turns",
                    "-",
                    "abort: turn budget exceeded: 6 turns (limit 2)",
                ],
            ),
            (
                "zero grace aborts at the next observation",
                Budget {
                    grace_turns: 0,
                    ..Budget::turns(1)
                },
                vec![totals(1, 0, 0, 0.0), totals(1, 0, 0, 0.0)],
                vec![
                    "steer: you have used 1 of your 1 turn",
                    "abort: turn budget exceeded: 1 turn (limit 1)",
                ],
            ),
            (
                "tool uses; grace counts turns after the steer",
                Budget {
                    max_tool_uses: Some(3),
                    grace_turns: 1,
                    ..Budget::default()
                },
                vec![
                    totals(1, 2, 0, 0.0),
                    totals(1, 3, 0, 0.0),
                    totals(2, 4, 0, 0.0),
                ],
                vec![
                    "-",
                    "steer: you have made 3 of your 3 tool calls",
                    "abort: tool-use budget exceeded: 4 tool uses (limit 3)",
                ],
            ),
            (
                "tokens",
                Budget {
                    max_tokens: Some(1000),
                    grace_turns: 1,
                    ..Budget::default()
                },
                vec![
                    totals(1, 0, 999, 0.0),
                    totals(2, 0, 1200, 0.0),
                    totals(3, 0, 1500, 0.0),
                ],
                vec![
                    "-",
                    "steer: you have used 1200 of your 1000 tokens",
                    "abort: token budget exceeded: 1500 tokens (limit 1000)",
                ],
            ),
            (
                "cost",
                Budget {
                    max_cost: Some(0.5),
                    grace_turns: 1,
                    ..Budget::default()
                },
                vec![
                    totals(1, 0, 0, 0.49),
                    totals(2, 0, 0, 0.5),
                    totals(3, 0, 0, 0.61),
                ],
                vec![
                    "-",
                    "steer: you have spent $0.50 of your $0.50",
                    "abort: cost budget exceeded: $0.61 (limit $0.50)",
                ],
            ),
            (
                "the first limit in order wins when several are reached",
                Budget {
                    max_turns: Some(1),
                    max_cost: Some(0.1),
                    grace_turns: 1,
                    ..Budget::default()
                },
                vec![totals(1, 0, 0, 5.0), totals(2, 0, 0, 6.0)],
                vec![
                    "steer: you have used 1 of your 1 turn",
                    "abort: turn budget exceeded: 2 turns (limit 1)",
                ],
            ),
        ];
        for (name, budget, steps, want) in cases {
            assert_eq!(run(budget, &steps), want, "{name}");
        }
    }

    #[test]
    fn watch_remembers_what_it_did() {
        let mut watch = BudgetWatch::new(Budget::turns(1));
        assert_eq!(watch.reached_kind(), None);
        assert!(matches!(
            watch.observe(&totals(1, 0, 0, 0.0)),
            Some(BudgetAction::Steer(_))
        ));
        assert_eq!(watch.reached_kind(), Some(BudgetKind::Turns));
        assert_eq!(watch.exceeded(), None);
        watch.observe(&totals(3, 0, 0, 0.0));
        assert_eq!(
            watch.exceeded(),
            Some("turn budget exceeded: 3 turns (limit 1)")
        );
        assert_eq!(watch.observe(&totals(9, 0, 0, 0.0)), None);
    }

    #[test]
    fn budget_prompt_table() {
        let tail = "Plan to give your final answer before it runs out. When a budget is reached \
                    you will be told; then answer at once with what you have, without calling \
                    more tools. A run that goes on is aborted.";
        let cases = [
            (Budget::default(), None),
            (
                Budget::turns(1),
                Some(format!("Your budget for this task: at most 1 turn. {tail}")),
            ),
            (
                Budget {
                    max_turns: Some(5),
                    max_tool_uses: Some(20),
                    ..Budget::default()
                },
                Some(format!(
                    "Your budget for this task: at most 5 turns and 20 tool calls. {tail}"
                )),
            ),
            (
                Budget {
                    max_turns: Some(5),
                    max_tool_uses: Some(1),
                    max_tokens: Some(100_000),
                    max_cost: Some(0.5),
                    grace_turns: 2,
                },
                Some(format!(
                    "Your budget for this task: at most 5 turns, 1 tool call, 100000 tokens and \
                     $0.50 of model cost. {tail}"
                )),
            ),
        ];
        check_table(cases, budget_prompt);
        assert!(Budget::default().is_unlimited());
        assert!(!Budget::turns(3).is_unlimited());
        assert_eq!(Budget::default().grace_turns, 2);
    }
}

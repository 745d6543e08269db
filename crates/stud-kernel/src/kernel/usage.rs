//! Usage accounting: tokens per turn and per session from provider usage,
//! a cost when the model has a price in settings (`pricing`), and the
//! session budget (`--max-cost` / `budget.maxCostUsd`) that stops the
//! session cleanly before a request once the cost reached it.

use serde_json::{Value, json};

use std::collections::HashMap;

use crate::config::Price;
use crate::runtime::domain::Usage;
use stud_protocol::events;

/// USD for `usage` at `price` (per million tokens).
pub fn cost(usage: &Usage, price: &Price) -> f64 {
    let m = |tokens: u64, per_million: f64| tokens as f64 * per_million / 1_000_000.0;
    m(usage.input_tokens, price.input)
        + m(usage.output_tokens, price.output)
        + m(usage.cache_read_tokens, price.cache_read)
        + m(usage.cache_write_tokens, price.cache_write)
}

/// Why the next request was not sent.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "the session has cost ${spent:.4}, which reached its budget of ${budget:.4} (--max-cost / budget.maxCostUsd); raise the budget to go on"
)]
pub struct BudgetExceeded {
    pub spent: f64,
    pub budget: f64,
}

/// What the session has spent: tokens, turns and money, against the
/// prices in settings and the session budget.
pub struct UsageLedger {
    /// Tokens over the whole session.
    pub usage: Usage,
    /// USD so far, when prices are known.
    pub cost_usd: f64,
    pub turns: u64,
    /// Prices per model id (settings `pricing`).
    pricing: HashMap<String, Price>,
    /// Stop before a request once the cost reached this (USD).
    max_cost_usd: Option<f64>,
}

impl UsageLedger {
    pub fn new(pricing: HashMap<String, Price>, max_cost_usd: Option<f64>) -> Self {
        UsageLedger {
            usage: zero_usage(),
            cost_usd: 0.0,
            turns: 0,
            pricing,
            max_cost_usd,
        }
    }

    /// What `usage` costs on `model` (0 without a price).
    pub fn cost_of(&self, model: &str, usage: &Usage) -> f64 {
        self.pricing
            .get(model)
            .map(|p| cost(usage, p))
            .unwrap_or(0.0)
    }

    /// Add `usage` on `model` to the session; returns what it cost.
    pub fn charge(&mut self, model: &str, usage: &Usage) -> f64 {
        let spent = self.cost_of(model, usage);
        add_usage(&mut self.usage, usage);
        self.cost_usd += spent;
        spent
    }

    /// Add what a child session spent (already priced on its model).
    pub fn charge_child(&mut self, usage: &Usage, cost_usd: f64) {
        add_usage(&mut self.usage, usage);
        self.cost_usd += cost_usd;
    }

    /// Refused once the session, with `pending` (this turn's usage, not
    /// charged yet) on `model`, has cost its budget.
    /// `children`: what child sessions spent this turn (USD).
    pub fn check_budget(
        &self,
        model: &str,
        pending: &Usage,
        children: f64,
    ) -> Result<(), BudgetExceeded> {
        let Some(budget) = self.max_cost_usd else {
            return Ok(());
        };
        let spent = self.cost_usd + self.cost_of(model, pending) + children;
        if spent < budget {
            return Ok(());
        }
        Err(BudgetExceeded { spent, budget })
    }

    /// A new budget (a replay runs each start's turns under its budget).
    pub fn set_max_cost(&mut self, max_cost_usd: Option<f64>) {
        self.max_cost_usd = max_cost_usd;
    }

    /// Whether the session has cost its budget (`--max-cost`); no turn
    /// can start then.
    pub fn budget_spent(&self) -> bool {
        self.max_cost_usd
            .is_some_and(|budget| self.cost_usd >= budget)
    }

    /// Carry on from what a resumed session had spent.
    pub fn restore(&mut self, usage: Usage, cost_usd: f64, turns: u64) {
        self.usage = usage;
        self.cost_usd = cost_usd;
        self.turns = turns;
    }
}

pub(crate) fn zero_usage() -> Usage {
    Usage {
        input_tokens: 0,
        output_tokens: 0,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
    }
}

/// The size of the prompts counted in `u`, cached parts included.
pub(crate) fn prompt_tokens(u: &Usage) -> u64 {
    u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
}

pub(crate) fn add_usage(total: &mut Usage, u: &Usage) {
    total.input_tokens += u.input_tokens;
    total.output_tokens += u.output_tokens;
    total.cache_read_tokens += u.cache_read_tokens;
    total.cache_write_tokens += u.cache_write_tokens;
}

/// Usage as events carry it.
pub fn usage_event(u: &Usage) -> events::Usage {
    events::Usage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        cache_read_tokens: u.cache_read_tokens,
        cache_write_tokens: u.cache_write_tokens,
    }
}

/// Usage as JSON (the manifest, the result line): the event's shape.
pub fn usage_json(u: &Usage) -> Value {
    json!(usage_event(u))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_per_million() {
        let u = Usage {
            input_tokens: 1_000_000,
            output_tokens: 500_000,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        };
        let p = Price {
            input: 3.0,
            output: 15.0,
            ..Default::default()
        };
        assert!((cost(&u, &p) - 10.5).abs() < 1e-9);
    }
}

/// What the children of the running turn spent; charged to the parent at
/// the turn's end (and counted by its budget before then).
#[derive(Debug, Clone)]
pub struct ChildSpend {
    pub usage: Usage,
    pub cost_usd: f64,
}

impl Default for ChildSpend {
    fn default() -> Self {
        ChildSpend {
            usage: zero_usage(),
            cost_usd: 0.0,
        }
    }
}

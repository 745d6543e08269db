//! Usage accounting: tokens per turn and per session from provider usage,
//! a cost when the model has a price in settings (`pricing`), and the
//! session budget (`--max-cost` / `budget.maxCostUsd`) that stops the
//! session cleanly before a request once the cost reached it.

use crate::config::Price;
use crate::runtime::bindings::stud::extension::types::Usage;

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

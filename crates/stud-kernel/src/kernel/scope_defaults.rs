//! The limits in `config::scope_rules`' table (what a project may only
//! lower) are the kernel's defaults: the table lives below the kernel, so
//! this check lives here, where both are in view.

#[cfg(test)]
mod tests {
    #[test]
    fn the_defaults_in_the_table_are_the_kernels() {
        use crate::config::scope_rules::{ScopeRule, Stricter, rule_for};
        use crate::kernel::agent_catalog;
        use crate::kernel::response_limits as resp;
        let net = crate::runtime::net::NetLimits::default();
        let retries = crate::kernel::retry::RetryPolicy::default();
        let default = |key: &str| match rule_for(&key.split('.').collect::<Vec<_>>()) {
            Some(ScopeRule::Tighten(Stricter::Lower { default })) => default,
            other => panic!("{key}: {other:?}"),
        };
        let cases: &[(&str, f64)] = &[
            (
                "runtime.continuation.maxIterations",
                f64::from(crate::kernel::session::DEFAULT_MAX_ITERATIONS),
            ),
            (
                "runtime.toolOutputLimit",
                crate::kernel::session::DEFAULT_TOOL_OUTPUT_LIMIT as f64,
            ),
            ("runtime.retries.maxRetries", f64::from(retries.max_retries)),
            (
                "runtime.network.headerTimeoutMs",
                net.header_timeout.as_millis() as f64,
            ),
            (
                "runtime.network.responseTimeoutMs",
                net.response_timeout.as_millis() as f64,
            ),
            (
                "runtime.network.maxResponseBytes",
                net.max_response_bytes as f64,
            ),
            (
                "runtime.responseLimits.textBytes",
                resp::DEFAULT_TEXT_BYTES as f64,
            ),
            (
                "runtime.responseLimits.thinkingBytes",
                resp::DEFAULT_THINKING_BYTES as f64,
            ),
            (
                "runtime.responseLimits.toolArgumentBytes",
                resp::DEFAULT_TOOL_ARGUMENT_BYTES as f64,
            ),
            (
                "agents.maxDepth",
                f64::from(agent_catalog::DEFAULT_MAX_DEPTH),
            ),
            ("agents.budgetShare", agent_catalog::DEFAULT_BUDGET_SHARE),
            (
                "agents.maxIterations",
                f64::from(agent_catalog::DEFAULT_CHILD_ITERATIONS),
            ),
        ];
        for (key, kernel) in cases {
            assert_eq!(default(key), Some(*kernel), "{key}");
        }
    }
}

//! `/cost`: show the tokens this session used, what it cost and the budget left.
use stud_sdk::host::session;
use stud_sdk::prelude::*;

#[derive(Default)]
struct Cost;

impl Command for Cost {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new(
            "/cost",
            "Show the tokens this session used, what it cost and the budget left.",
        )
    }

    fn execute(&mut self, _args: CommandArgs) -> Result<CommandOutput, Error> {
        let o = session::overview()?;
        let u = &o.usage;
        let mut out = format!(
            "{} turns; tokens: {} in, {} out, {} cache read, {} cache write\n",
            o.turns, u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens
        );
        match o.cost_usd {
            Some(c) => out.push_str(&format!("cost: ${c:.4}\n")),
            None => out.push_str(&format!(
                "cost: unknown (no `pricing` for model {} in settings)\n",
                o.model
            )),
        }
        if let Some(b) = o.budget_usd {
            let left = (b - o.cost_usd.unwrap_or(0.0)).max(0.0);
            out.push_str(&format!("budget: ${b:.2}, ${left:.4} left\n"));
        }
        if let Some(w) = o.context_window {
            out.push_str(&format!(
                "context: about {} of {w} tokens ({:.0}%)\n",
                o.context_tokens,
                o.context_tokens as f64 * 100.0 / w as f64
            ));
        }
        if o.turn_running {
            out.push_str("(a turn is running: these numbers are from before it; it adds its own when it ends)\n");
        }
        let payload = json!({"turns": o.turns, "usage": u, "cost_usd": o.cost_usd, "budget_usd": o.budget_usd});
        Ok(CommandOutput::with_payload(out, &payload))
    }
}

stud_sdk::export_command!(Cost);

//! `/health`: show each extension: loaded or not, calls, failures and the last error, call latency, and what it cost (CPU, time in the host, peak memory, network).
use stud_sdk::host::session;
use stud_sdk::prelude::*;

#[derive(Default)]
struct Health;

impl Command for Health {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new(
            "/health",
            "Show each extension: loaded or not, calls, failures and the last error, call latency.",
        )
    }

    fn execute(&mut self, _args: CommandArgs) -> Result<CommandOutput, Error> {
        let o = session::overview()?;
        let (loaded, waiting): (Vec<_>, Vec<_>) =
            o.extensions.iter().partition(|e| e.status == "loaded");
        let width = loaded
            .iter()
            .map(|e| e.id.chars().count())
            .max()
            .unwrap_or(0);
        let mut out = String::new();
        for e in loaded {
            let h = &e.health;
            let restarted = if h.instantiations > 1 {
                format!("  restarted {}x", h.instantiations - 1)
            } else {
                String::new()
            };
            out.push_str(&format!(
                "{:width$}  {:<16} {:>5} calls {:>3} failed  mean {:>7.2} ms  max {:>8.2} ms{restarted}\n",
                e.id, e.kind, h.calls, h.failures, h.mean_ms, h.max_ms,
            ));
            let m = &h.metered;
            if h.calls > 0 {
                let mut line = format!(
                    "{:width$}  cpu {:.1} ms  in host {:.1} ms  peak memory {:.1} MiB",
                    "",
                    m.cpu_ms,
                    m.host_ms,
                    m.peak_memory_bytes as f64 / (1024.0 * 1024.0)
                );
                if m.net_bytes_sent + m.net_bytes_received > 0 {
                    line.push_str(&format!(
                        "  network {} B out, {} B in",
                        m.net_bytes_sent, m.net_bytes_received
                    ));
                }
                out.push_str(&line);
                out.push('\n');
            }
            if let Some(err) = &h.last_error {
                let first = err.lines().next().unwrap_or("");
                out.push_str(&format!("{:width$}  last error: {first}\n", ""));
            }
        }
        if !waiting.is_empty() {
            let ids: Vec<&str> = waiting.iter().map(|e| e.id.as_str()).collect();
            out.push_str(&format!(
                "not loaded yet (commands load at first use): {}\n",
                ids.join(", ")
            ));
        }
        Ok(CommandOutput::text(out))
    }
}

stud_sdk::export_command!(Health);

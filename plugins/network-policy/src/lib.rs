//! `/network-policy`: show which hosts each extension may reach, or allow or deny one (global settings, after you confirm).
use stud_sdk::host::session::{self, Action, NetworkChange};
use stud_sdk::prelude::*;

const USAGE: &str = "usage: /network-policy show | allow EXTENSION HOST | deny EXTENSION HOST";

#[derive(Default)]
struct NetworkPolicy;

impl Command for NetworkPolicy {
    fn spec(&self) -> CommandSpec {
        CommandSpec::new("/network-policy", "Show which hosts each extension may reach, or allow or deny one (global settings, after you confirm).")
            .hint("show | allow EXTENSION HOST | deny EXTENSION HOST")
    }

    fn execute(&mut self, args: CommandArgs) -> Result<CommandOutput, Error> {
        let words: Vec<&str> = args.positional.iter().map(String::as_str).collect();
        let change = |extension: &str, host: &str| NetworkChange {
            extension: extension.to_string(),
            host: host.to_string(),
        };
        match words.as_slice() {
            [] | ["show"] => show(),
            ["allow", ext, host] => Ok(CommandOutput::text(session::act(&Action::NetworkAllow(
                change(ext, host),
            ))?)),
            ["deny", ext, host] => Ok(CommandOutput::text(session::act(&Action::NetworkDeny(
                change(ext, host),
            ))?)),
            _ => Err(Error::invalid_input(USAGE)),
        }
    }
}

fn show() -> Result<CommandOutput, Error> {
    let p = session::network_policy()?;
    let mut out = String::new();
    for e in &p.extensions {
        let list = |v: &[String]| {
            if v.is_empty() {
                "-".to_string()
            } else {
                v.join(", ")
            }
        };
        out.push_str(&format!("{} ({} scope)\n", e.id, e.scope));
        out.push_str(&format!("  manifest: {}\n", list(&e.manifest)));
        if e.user_hosts {
            out.push_str(&format!("  granted (global): {}\n", list(&e.global)));
            out.push_str(&format!("  granted (project): {}\n", list(&e.project)));
        }
    }
    if out.is_empty() {
        out.push_str("No extension uses the network.\n");
    }
    out.push_str(&format!("Grants are written to {}.\n", p.settings_file));
    Ok(CommandOutput::text(out))
}

stud_sdk::export_command!(NetworkPolicy);

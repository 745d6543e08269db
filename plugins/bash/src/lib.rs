//! `bash`: run a shell line in the project directory through the host's
//! process capability. The approval key comes from a shell parser
//! (`stud_sdk_shell`): one line per simple command and per output
//! redirection, so `bash:git *` approves `git status` but not
//! `git status; rm -rf ~`. The parser models a closed world: anything it
//! does not model completely (loops, `case`, expansions, assignments,
//! builtins that change the shell's state, ...) is unclassified, and so
//! is a call with a `cwd` of its own (the folder changes what a command
//! does): those are asked.

use stud_sdk::host::process::{Command, SpawnRequest, run};
use stud_sdk::prelude::*;

const DEFAULT_TIMEOUT_MS: u64 = 120_000;

#[derive(Default)]
struct Bash {
    timeout_ms: u64,
}

impl Tool for Bash {
    fn init(&mut self, config: &Value) -> Result<(), Error> {
        self.timeout_ms = config
            .get("timeout-ms")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_TIMEOUT_MS);
        Ok(())
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec::new("bash", "Run a shell command in the project directory")
            .param(
                "command",
                "string",
                "The command line (run with sh -c)",
                true,
            )
            .param(
                "timeout_ms",
                "integer",
                "Stop the command after this many milliseconds (default 120000)",
                false,
            )
            .param(
                "cwd",
                "string",
                "Folder inside the project to run in (default the root)",
                false,
            )
    }

    fn approval_key(&self, args: &Args) -> Result<String, Error> {
        Ok(stud_sdk_shell::approval_key_in(
            args.str("command")?,
            args.opt_str("cwd"),
        ))
    }

    fn invoke(&mut self, _call: &CallContext, args: Args) -> Result<ToolOutput, Error> {
        let command = args.str("command")?;
        let timeout = args
            .opt_u64("timeout_ms")
            .unwrap_or(self.timeout_ms)
            .clamp(1, 3_600_000);
        let out = run(&SpawnRequest {
            command: Command::Shell(command.to_string()),
            cwd: args.opt_str("cwd").map(str::to_string),
            timeout_ms: Some(timeout as u32),
            stdin: None,
        })?;
        let mut text = String::new();
        text.push_str(&String::from_utf8_lossy(&out.stdout));
        if out.stdout_truncated {
            text.push_str("\n[stdout cut at 256 KB]");
        }
        if !out.stderr.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            if out.stderr_truncated {
                text.push_str("\n[stderr cut at 256 KB]");
            }
        }
        if out.timed_out {
            text.push_str(&format!("\n[stopped after {timeout} ms: timeout]"));
        } else if let Some(code) = out.exit_code.filter(|c| *c != 0) {
            text.push_str(&format!("\n[exit code {code}]"));
        }
        Ok(ToolOutput::text(text).with_details(json!({
            "exit_code": out.exit_code,
            "timed_out": out.timed_out,
            "stdout_truncated": out.stdout_truncated,
            "stderr_truncated": out.stderr_truncated,
        })))
    }
}

stud_sdk::export_tool!(Bash);

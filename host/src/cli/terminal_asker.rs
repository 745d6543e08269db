//! Questions of a session that has no UI of its own but does have the
//! person's terminal (`stud mcp serve --http` started from a shell): an
//! approval is asked on stderr and answered on stdin, so a client's call
//! that needs a person gets one instead of `approval-required`. Anything
//! but an explicit yes is a refusal.

use std::io::{BufRead as _, Write as _};

use stud_protocol::terminal::safe;
use tokio::sync::mpsc;

use crate::kernel::interaction::Ask;
use crate::runtime::domain::{InteractionKind, InteractionResponse, InteractionStatus};

/// Answer `asks` on this terminal until the session ends.
pub fn spawn(mut asks: mpsc::UnboundedReceiver<Ask>) {
    tokio::spawn(async move {
        while let Some(ask) = asks.recv().await {
            let correlation_id = ask.request.correlation_id.clone();
            let (question, choices) = match &ask.request.kind {
                // What the client chose (a command, a path) reaches the
                // person's terminal only with its escapes made visible.
                InteractionKind::Approve(a) => (
                    format!(
                        "An MCP client asks to run `{}`: {}\n  {}",
                        safe(&a.tool),
                        safe(&a.approval_key.replace('\n', "; ")),
                        safe(&a.description.replace('\n', " "))
                    ),
                    "allow once [y], for this session [a], refuse [N]: ",
                ),
                InteractionKind::Confirm(q) => (safe(q).into_owned(), "yes [y], no [N]: "),
                // A choice or free text has no place on this terminal.
                _ => {
                    let _ = ask.reply.send(Ok(InteractionResponse {
                        correlation_id,
                        status: InteractionStatus::Rejected,
                        value: None,
                    }));
                    continue;
                }
            };
            let approval = matches!(ask.request.kind, InteractionKind::Approve(_));
            let answer = tokio::task::spawn_blocking(move || {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\n{question}\n{choices}");
                let _ = err.flush();
                let mut line = String::new();
                std::io::stdin().lock().read_line(&mut line).ok()?;
                Some(line.trim().to_ascii_lowercase())
            })
            .await
            .ok()
            .flatten();
            let (status, value) = match answer.as_deref() {
                Some("y" | "yes") if approval => (InteractionStatus::Accepted, Some("once".into())),
                Some("a") if approval => (InteractionStatus::Accepted, None),
                Some("y" | "yes") => (InteractionStatus::Accepted, None),
                _ => (InteractionStatus::Rejected, None),
            };
            let _ = ask.reply.send(Ok(InteractionResponse {
                correlation_id,
                status,
                value,
            }));
        }
    });
}

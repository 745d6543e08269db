//! `jsonl`: appends each event as one JSON line to `<data>/<file>` (default
//! `events.jsonl`). Values under secret-sounding keys and tokens shaped like
//! credentials are replaced by `[REDACTED]` before writing.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};

use stud_sdk::prelude::*;

/// Keys whose values are never written.
const SECRET_KEYS: &[&str] = &[
    "api_key",
    "apikey",
    "authorization",
    "password",
    "secret",
    "token",
    "x-api-key",
];
/// Credential prefixes (token must be at least 16 characters after them).
const SECRET_PREFIXES: &[&str] = &["sk-", "ghp_", "github_pat_", "xoxb-", "AKIA", "AIza"];

#[derive(Default)]
struct Jsonl {
    out: Option<BufWriter<File>>,
}

impl Logger for Jsonl {
    fn init(&mut self, config: &Value) -> Result<(), Error> {
        let file = config
            .get("file")
            .and_then(Value::as_str)
            .unwrap_or("events.jsonl");
        let f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(format!("/data/{file}"))
            .map_err(|e| Error::internal(format!("cannot open /data/{file}: {e}")))?;
        self.out = Some(BufWriter::new(f));
        Ok(())
    }

    fn sink(&mut self, event: Event) -> Result<(), Error> {
        let mut payload: Value = serde_json_parse(&event.payload);
        redact(&mut payload);
        let line = json!({
            "seq": event.sequence,
            "ts": event.timestamp_ms,
            "name": event.name,
            "turn": event.turn_id,
            "payload": payload,
        });
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| Error::internal("logger not initialised"))?;
        writeln!(out, "{line}").map_err(|e| Error::internal(e.to_string()))?;
        if event.name == "turn.end" {
            out.flush().map_err(|e| Error::internal(e.to_string()))?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Error> {
        if let Some(out) = self.out.as_mut() {
            out.flush().map_err(|e| Error::internal(e.to_string()))?;
        }
        Ok(())
    }
}

fn serde_json_parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

fn redact(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if SECRET_KEYS
                    .iter()
                    .any(|s| k.to_ascii_lowercase().contains(s))
                    && !val.is_object()
                    && !val.is_array()
                {
                    *val = Value::String("[REDACTED]".into());
                } else {
                    redact(val);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        Value::String(s) if contains_secret(s) => *s = redact_text(s),
        _ => {}
    }
}

fn contains_secret(s: &str) -> bool {
    SECRET_PREFIXES.iter().any(|p| s.contains(p))
}

/// Replace each credential-shaped word.
fn redact_text(s: &str) -> String {
    s.split_inclusive(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '=')
        .map(|word| {
            let trimmed = word
                .trim_end_matches(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '=');
            let tail = &word[trimmed.len()..];
            let secret = SECRET_PREFIXES
                .iter()
                .any(|p| trimmed.starts_with(p) && trimmed.len() >= p.len() + 16);
            if secret {
                format!("[REDACTED]{tail}")
            } else {
                word.to_string()
            }
        })
        .collect()
}

stud_sdk::export_logger!(Jsonl);

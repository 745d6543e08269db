//! A logger: appends every event as one JSON line to `events.jsonl` in the
//! extension's data folder (`~/.stud/data/<id>/`).

use std::fs::{File, OpenOptions};
use std::io::Write as _;

use stud_sdk::prelude::*;

#[derive(Default)]
struct JsonLines {
    file: Option<File>,
}

/// One line of the log.
fn line(event: &Event) -> String {
    let payload: Value = serde_json::from_str(&event.payload).unwrap_or(Value::Null);
    let record = json!({
        "at": event.timestamp_ms,
        "seq": event.sequence,
        "event": event.name,
        "payload": payload,
    });
    format!("{record}\n")
}

impl Logger for JsonLines {
    fn sink(&mut self, event: Event) -> Result<(), Error> {
        if self.file.is_none() {
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .open("/data/events.jsonl")
                .map_err(|e| Error::internal(format!("cannot open /data/events.jsonl: {e}")))?;
            self.file = Some(f);
        }
        if let Some(f) = self.file.as_mut() {
            f.write_all(line(&event).as_bytes())
                .map_err(|e| Error::internal(format!("cannot write the log: {e}")))?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Error> {
        if let Some(f) = self.file.as_mut() {
            f.flush()
                .map_err(|e| Error::internal(format!("cannot flush the log: {e}")))?;
        }
        Ok(())
    }
}

stud_sdk::export_logger!(JsonLines);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_one_json_line() {
        let event = Event {
            name: "turn.started".into(),
            sequence: 7,
            timestamp_ms: 1,
            turn_id: None,
            payload: r#"{"turn":1}"#.into(),
        };
        let text = line(&event);
        assert!(text.ends_with('\n') && text.matches('\n').count() == 1);
        let v: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v["payload"]["turn"], 1);
    }
}

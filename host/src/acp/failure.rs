//! How `stud acp` refuses a request: a JSON-RPC error whose number says
//! the family (bad params, unknown session, stud failed) and whose `data`
//! carries stud's own typed code, so an editor can tell one failure from
//! another without parsing prose.

use agent_client_protocol::Error;
use serde_json::json;

/// The JSON-RPC code of failures inside stud (a turn, a launch). ACP keeps
/// -32000 (auth) and -32002 (not found) for itself.
pub const STUD_FAILED: i32 = -32010;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Failure {
    /// A field of the request is wrong; `field` names it.
    #[error("{field}: {message}")]
    Invalid {
        field: &'static str,
        code: &'static str,
        message: String,
    },
    #[error("no session `{0}` is open here")]
    NoSession(String),
    /// stud could not do what was asked (`code` is stud's).
    #[error("{code}: {message}")]
    Failed { code: String, message: String },
}

impl Failure {
    pub fn invalid(field: &'static str, code: &'static str, message: impl Into<String>) -> Self {
        Failure::Invalid {
            field,
            code,
            message: message.into(),
        }
    }

    pub fn failed(code: impl Into<String>, message: impl Into<String>) -> Self {
        Failure::Failed {
            code: code.into(),
            message: message.into(),
        }
    }

    pub fn into_error(self) -> Error {
        let message = self.to_string();
        match self {
            Failure::Invalid { field, code, .. } => Error::invalid_params()
                .data(json!({"code": code, "field": field, "message": message})),
            Failure::NoSession(id) => Error::new(-32002, "Resource not found").data(json!({
                "code": "session-not-found",
                "sessionId": id,
                "message": message,
            })),
            Failure::Failed { code, .. } => Error::new(STUD_FAILED, "stud failed")
                .data(json!({"code": code, "message": message})),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_carries_a_typed_code() {
        for f in [
            Failure::invalid("cwd", "cwd-not-absolute", "x"),
            Failure::NoSession("s".into()),
            Failure::failed("loop-bound-exceeded", "y"),
        ] {
            let v = serde_json::to_value(f.into_error()).unwrap();
            assert!(v["data"]["code"].as_str().is_some(), "{v}");
        }
    }
}

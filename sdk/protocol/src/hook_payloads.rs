//! What a hook receives at each slot, as types: the kernel builds these and
//! guests read them (`stud_sdk::hook_payloads`), so neither side spells a
//! key by hand. On the wire each is the JSON object of its fields (the
//! table in `docs/hooks-and-events.md`); a field may be added, never
//! renamed or removed. A transform returns the same shape with what it
//! changed.
//!
//! Parts that carry another documented structure (a message, a result
//! part) stay JSON values, as in the event catalogue.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A slot payload: its type says which slot it belongs to.
pub trait SlotPayload: Serialize + DeserializeOwned {
    /// The slots (`stage.phase`) that carry it.
    const SLOTS: &'static [&'static str];

    /// As JSON, for the hook call.
    fn to_value(&self) -> Value {
        // A struct of strings, numbers and JSON values always serializes.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// As JSON, moving the parts instead of copying them (the kernel
    /// builds one per hooked call; arguments and results can be large).
    fn into_value(self) -> Value {
        self.to_value()
    }

    /// Read from what a hook received; `None` when it is not this shape.
    fn from_value(v: &Value) -> Option<Self> {
        Self::deserialize(v).ok()
    }
}

fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

impl CallView {
    fn into_value(self) -> Value {
        object([
            ("id", Value::String(self.id)),
            ("name", Value::String(self.name)),
            ("arguments", self.arguments),
        ])
    }
}

/// A tool call as hooks see it. Reading one, only `name` is required: a
/// hook written against an older kernel still reads a newer payload, and
/// the other way round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallView {
    #[serde(default)]
    pub id: String,
    pub name: String,
    /// The arguments as JSON; a string when the model's text was not JSON.
    #[serde(default)]
    pub arguments: Value,
}

/// `tool-call.pre`: the call before anything is decided. A transform may
/// change `call.arguments`; they are checked against the tool's schema
/// again, and what is approved and guarded is what runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallPre {
    pub call: CallView,
}

impl SlotPayload for ToolCallPre {
    const SLOTS: &'static [&'static str] = &["tool-call.pre"];

    fn into_value(self) -> Value {
        object([("call", self.call.into_value())])
    }
}

/// A tool's result as hooks see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultView {
    /// Result parts: `{"type": "text", "text"}` or an image.
    pub content: Vec<Value>,
    #[serde(default)]
    pub is_error: bool,
}

/// `tool-call.post`: a call and its result, before the model sees it. A
/// transform may change `result.content` (redact it, shorten it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallPost {
    pub call: CallView,
    pub result: ResultView,
}

impl SlotPayload for ToolCallPost {
    const SLOTS: &'static [&'static str] = &["tool-call.post"];

    fn into_value(self) -> Value {
        object([
            ("call", self.call.into_value()),
            (
                "result",
                object([
                    ("content", Value::Array(self.result.content)),
                    ("is_error", Value::Bool(self.result.is_error)),
                ]),
            ),
        ])
    }
}

/// `receive-input.pre` and `.post`: the person's input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Input {
    pub input: String,
}

impl SlotPayload for Input {
    const SLOTS: &'static [&'static str] = &["receive-input.pre", "receive-input.post"];

    fn into_value(self) -> Value {
        object([("input", Value::String(self.input))])
    }
}

/// `compose-request.pre`: the history a request is composed from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComposePre {
    pub iteration: u32,
    /// Messages: `{"role", "content": [parts]}`.
    pub messages: Vec<Value>,
}

impl SlotPayload for ComposePre {
    const SLOTS: &'static [&'static str] = &["compose-request.pre"];

    fn into_value(self) -> Value {
        object([
            ("iteration", Value::from(self.iteration)),
            ("messages", Value::Array(self.messages)),
        ])
    }
}

/// `compose-request.post`: the request about to be sent. A transform may
/// change `system` (`null` removes it) and `messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComposePost {
    pub system: Option<String>,
    pub messages: Vec<Value>,
    /// The names of the tools offered.
    pub tools: Vec<String>,
    pub model: String,
}

impl SlotPayload for ComposePost {
    const SLOTS: &'static [&'static str] = &["compose-request.post"];

    fn into_value(self) -> Value {
        object([
            ("system", self.system.map_or(Value::Null, Value::String)),
            ("messages", Value::Array(self.messages)),
            (
                "tools",
                Value::Array(self.tools.into_iter().map(Value::String).collect()),
            ),
            ("model", Value::String(self.model)),
        ])
    }
}

/// `send-request.pre` and `.post`: who is asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SendRequest {
    pub provider: String,
    pub model: String,
    pub iteration: u32,
}

impl SlotPayload for SendRequest {
    const SLOTS: &'static [&'static str] = &["send-request.pre", "send-request.post"];
}

/// `stream-response.pre`: who answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamStart {
    pub provider: String,
    pub model: String,
}

impl SlotPayload for StreamStart {
    const SLOTS: &'static [&'static str] = &["stream-response.pre"];
}

/// `stream-response.post`: the assembled answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamDone {
    pub text: String,
    pub tool_calls: Vec<CallView>,
    /// `stop`, `tool-calls`, `length`, `content-filter`, `error` or `other`.
    pub finish: String,
}

impl SlotPayload for StreamDone {
    const SLOTS: &'static [&'static str] = &["stream-response.post"];

    fn into_value(self) -> Value {
        object([
            ("text", Value::String(self.text)),
            (
                "tool_calls",
                Value::Array(
                    self.tool_calls
                        .into_iter()
                        .map(CallView::into_value)
                        .collect(),
                ),
            ),
            ("finish", Value::String(self.finish)),
        ])
    }
}

/// `render.pre` and `.post`: the answer's text as shown. A `render.pre`
/// transform may change it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Render {
    pub text: String,
}

impl SlotPayload for Render {
    const SLOTS: &'static [&'static str] = &["render.pre", "render.post"];

    fn into_value(self) -> Value {
        object([("text", Value::String(self.text))])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_wire_shape_is_the_documented_object() {
        let post = ToolCallPost {
            call: CallView {
                id: "c1".into(),
                name: "read".into(),
                arguments: json!({"path": "a.txt"}),
            },
            result: ResultView {
                content: vec![json!({"type": "text", "text": "hi"})],
                is_error: false,
            },
        };
        let v = post.to_value();
        assert_eq!(
            post.clone().into_value(),
            v,
            "moving builds the same object"
        );
        let pre = ToolCallPre {
            call: post.call.clone(),
        };
        assert_eq!(pre.clone().into_value(), pre.to_value());
        let compose = ComposePost {
            system: None,
            messages: vec![json!({"role": "user", "content": []})],
            tools: vec!["read".into()],
            model: "m".into(),
        };
        assert_eq!(compose.clone().into_value(), compose.to_value());
        let done = StreamDone {
            text: "t".into(),
            tool_calls: vec![pre.call.clone()],
            finish: "stop".into(),
        };
        assert_eq!(done.clone().into_value(), done.to_value());
        let input = Input { input: "i".into() };
        assert_eq!(input.clone().into_value(), input.to_value());
        let pre_c = ComposePre {
            iteration: 2,
            messages: vec![],
        };
        assert_eq!(pre_c.clone().into_value(), pre_c.to_value());
        let r = Render { text: "x".into() };
        assert_eq!(r.clone().into_value(), r.to_value());
        assert_eq!(v["call"]["arguments"]["path"], "a.txt");
        assert_eq!(v["result"]["content"][0]["text"], "hi");
        assert_eq!(ToolCallPost::from_value(&v), Some(post));
        // Another slot's payload is not this one.
        assert_eq!(ToolCallPre::from_value(&json!({"text": "x"})), None);
    }
}

//! Tools: functions the model calls.

use serde_json::{Map, Value, json};

use crate::Error;
use crate::wit::stud::extension::tool_types as w;
use crate::wit::stud::extension::types::ResultPart;

/// A tool. `spec` names it and describes its arguments; `invoke` runs it.
/// The kernel validates arguments against the schema before `invoke`, so
/// `invoke` only sees arguments of the declared shape.
pub trait Tool: Default + 'static {
    /// Name, description and argument schema shown to the model.
    ///
    /// Asked once per build of the component and config: stud keeps the
    /// answer beside the compiled code and does not start the tool to ask
    /// again. So it must depend only on the code and the config given to
    /// `init`, never on files, the clock or the network.
    fn spec(&self) -> ToolSpec;

    /// Called once with the validated config before any other call.
    fn init(&mut self, _config: &Value) -> Result<(), Error> {
        Ok(())
    }

    /// The extension is being retired: a reload replaced it, or the
    /// session ended. Release what `init` took; `dispose` follows. Bounded
    /// by the call deadline; an error is logged, not shown.
    fn deactivate(&mut self) -> Result<(), Error> {
        Ok(())
    }

    /// The last call before the instance is dropped (after `deactivate`).
    fn dispose(&mut self) {}

    /// The key allowlist patterns match (a command, a path). Must not depend
    /// on time, randomness or the network. Default: empty (match by name).
    fn approval_key(&self, _args: &Args) -> Result<String, Error> {
        Ok(String::new())
    }

    /// Run the tool on already-validated arguments.
    fn invoke(&mut self, call: &CallContext, args: Args) -> Result<ToolOutput, Error>;
}

/// Name, description and JSON Schema of a tool, built step by step.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    /// Unique name the model calls the tool by.
    pub name: String,
    /// Tells the model when and how to use the tool.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    /// True if the tool never changes anything (informs approvals).
    pub read_only: bool,
}

impl ToolSpec {
    /// A tool with no parameters yet (`{"type":"object"}`), not read-only.
    pub fn new(name: &str, description: &str) -> Self {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters: json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false}),
            read_only: false,
        }
    }

    /// Add a parameter of a JSON Schema type (`string`, `integer`, ...).
    pub fn param(self, name: &str, ty: &str, description: &str, required: bool) -> Self {
        self.param_schema(
            name,
            json!({"type": ty, "description": description}),
            required,
        )
    }

    /// Add a parameter with a full JSON Schema.
    pub fn param_schema(mut self, name: &str, schema: Value, required: bool) -> Self {
        if let Some(props) = self
            .parameters
            .get_mut("properties")
            .and_then(Value::as_object_mut)
        {
            props.insert(name.into(), schema);
        }
        if required
            && let Some(req) = self
                .parameters
                .get_mut("required")
                .and_then(Value::as_array_mut)
        {
            req.push(Value::String(name.into()));
        }
        self
    }

    /// Mark the tool as never changing anything: `ask` mode runs it
    /// without asking. The host refuses the tool at load if its manifest
    /// grants it `exec`, a read-write folder or the network (`network`
    /// hosts or `user-hosts`): with those it could change or send things.
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }
}

/// Where the call comes from and what it may touch.
pub struct CallContext {
    /// Identifies this call in events and logs.
    pub call_id: String,
    /// The project directory as a guest path, if the tool was granted it.
    pub project_dir: Option<String>,
}

/// Tool arguments (a JSON object) with typed accessors that produce
/// model-facing errors.
#[derive(Debug, Clone)]
pub struct Args(pub Map<String, Value>);

impl Args {
    /// Parse the JSON text the host passes; anything but an object is rejected.
    pub fn parse(text: &str) -> Result<Self, Error> {
        match serde_json::from_str(text)? {
            Value::Object(map) => Ok(Args(map)),
            other => Err(Error::invalid_input(format!(
                "arguments must be a JSON object, got {other}"
            ))),
        }
    }

    /// A required string.
    pub fn str(&self, key: &str) -> Result<&str, Error> {
        self.opt_str(key)
            .ok_or_else(|| Error::invalid_input(format!("missing string argument `{key}`")))
    }

    /// An optional string; `None` if absent or not a string.
    pub fn opt_str(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    /// An optional non-negative integer; `None` if absent or another type.
    pub fn opt_u64(&self, key: &str) -> Option<u64> {
        self.0.get(key).and_then(Value::as_u64)
    }

    /// An optional boolean; `None` if absent or not a boolean.
    pub fn opt_bool(&self, key: &str) -> Option<bool> {
        self.0.get(key).and_then(Value::as_bool)
    }

    /// The raw value, for shapes the typed accessors do not cover.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// Deserialize the whole object into a typed struct.
    pub fn into_typed<T: serde::de::DeserializeOwned>(self) -> Result<T, Error> {
        serde_json::from_value(Value::Object(self.0))
            .map_err(|e| Error::invalid_input(format!("invalid arguments: {e}")))
    }
}

/// What a tool returns: content for the model and details for people.
#[derive(Debug, Clone, Default)]
pub struct ToolOutput {
    /// What the model sees.
    pub content: Vec<ResultPart>,
    /// Structured detail for UIs and logs; the model does not see it.
    pub details: Option<Value>,
}

impl ToolOutput {
    /// The common case: a single text part.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ResultPart::Text(text.into())],
            details: None,
        }
    }

    /// Attach detail for people without adding to the model's context.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

/// Called by `export_tool!`; converts between WIT and SDK types.
#[doc(hidden)]
pub mod glue {
    use super::*;
    use crate::__private::Instance;
    use crate::wit::stud::extension::types::ExtError;

    /// The spec in WIT form, with the schema serialized.
    pub fn describe<T: Tool>(inst: &Instance<T>) -> w::ToolSpec {
        inst.with(|t| {
            let s = t.spec();
            w::ToolSpec {
                name: s.name,
                description: s.description,
                parameters: s.parameters.to_string(),
                read_only: s.read_only,
            }
        })
    }

    /// Parse the arguments, then ask the tool for its key.
    pub fn approval_key<T: Tool>(inst: &Instance<T>, args: String) -> Result<String, ExtError> {
        let args = Args::parse(&args)?;
        inst.with(|t| t.approval_key(&args)).map_err(Into::into)
    }

    /// Parse the arguments, run the tool and serialize its details.
    pub fn invoke<T: Tool>(
        inst: &Instance<T>,
        call: w::CallContext,
        args: String,
    ) -> Result<w::ToolOutput, ExtError> {
        let args = Args::parse(&args)?;
        let ctx = CallContext {
            call_id: call.call_id,
            project_dir: call.project_dir,
        };
        let out = inst.with(|t| t.invoke(&ctx, args))?;
        Ok(w::ToolOutput {
            content: out.content,
            details: out.details.map(|d| d.to_string()),
        })
    }
}

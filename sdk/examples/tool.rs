//! A tool: repeats the text it is given in capitals. The tool is named
//! after the crate (`stud ext new --kind tool shout` makes `shout`).

use stud_sdk::prelude::*;

/// The name the model calls the tool by.
const NAME: &str = env!("CARGO_PKG_NAME");

#[derive(Default)]
struct Shout;

impl Tool for Shout {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(NAME, "Repeat the text in capitals")
            .param("text", "string", "What to repeat", true)
            .read_only()
    }

    fn invoke(&mut self, _call: &CallContext, args: Args) -> Result<ToolOutput, Error> {
        let text = args.str("text")?;
        Ok(ToolOutput::text(text.to_uppercase()))
    }
}

stud_sdk::export_tool!(Shout);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_the_text_in_capitals() {
        let call = CallContext {
            call_id: "test".into(),
            project_dir: None,
        };
        let args = Args::parse(r#"{"text":"hello"}"#).expect("arguments");
        let out = Shout.invoke(&call, args).expect("invoke");
        assert!(matches!(&out.content[..], [ResultPart::Text(t)] if t == "HELLO"));
    }

    #[test]
    fn a_missing_argument_is_the_model_s_error() {
        let call = CallContext {
            call_id: "test".into(),
            project_dir: None,
        };
        let args = Args::parse("{}").expect("arguments");
        assert!(Shout.invoke(&call, args).is_err());
    }
}

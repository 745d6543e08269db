//! A provider: an offline "model" that answers every request by echoing
//! the last thing the user wrote, streamed a word at a time. Replace
//! `answer` with a call to your API (`stud_sdk::llm_http` and
//! `stud_sdk::sse` do the HTTP and server-sent-events parts).

use stud_sdk::kinds::provider::{FinishReason, VecStream};
use stud_sdk::prelude::*;

#[derive(Default)]
struct Echo;

/// What the model says to `request`.
fn answer(request: &ProviderRequest) -> String {
    let last = request
        .messages
        .iter()
        .rev()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| m.content.iter())
        .find_map(|part| match part {
            ContentPart::Text(t) => Some(t.as_str()),
            _ => None,
        });
    match last {
        Some(text) => format!("You said: {text}"),
        None => "Say something.".to_string(),
    }
}

impl Provider for Echo {
    fn models(&self) -> Vec<ModelInfo> {
        vec![ModelInfo {
            id: "echo".into(),
            capabilities: ModelCapabilities {
                streaming: true,
                tool_calling: false,
                parallel_tool_calls: false,
                vision: false,
                thinking: false,
                prompt_caching: false,
                context_window: 100_000,
                max_output: 4_096,
            },
        }]
    }

    fn send(&mut self, request: ProviderRequest) -> Result<Box<dyn EventStream>, Error> {
        let text = answer(&request);
        let mut batches: Vec<Vec<StreamEvent>> = text
            .split_inclusive(' ')
            .map(|word| vec![StreamEvent::TextDelta(word.to_string())])
            .collect();
        let words = batches.len() as u64;
        batches.push(vec![
            StreamEvent::Usage(Usage {
                input_tokens: 0,
                output_tokens: words,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
            }),
            StreamEvent::Finish(FinishReason::Stop),
        ]);
        Ok(Box::new(VecStream::new(batches)))
    }
}

stud_sdk::export_provider!(Echo);

#[cfg(test)]
mod tests {
    use super::*;
    use stud_sdk::kinds::provider::{RequestParams, ThinkingLevel};

    #[test]
    fn echoes_the_last_user_message() {
        let request = ProviderRequest {
            system: None,
            messages: vec![Message {
                role: Role::User,
                content: vec![ContentPart::Text("hi there".into())],
            }],
            tools: vec![],
            params: RequestParams {
                model: "echo".into(),
                max_tokens: None,
                temperature: None,
                thinking: ThinkingLevel::Off,
                cache_hints: false,
            },
        };
        let mut stream = Echo.send(request).expect("send");
        let mut text = String::new();
        while let Some(batch) = stream.next().expect("next") {
            for event in batch {
                if let StreamEvent::TextDelta(t) = event {
                    text.push_str(&t);
                }
            }
        }
        assert_eq!(text, "You said: hi there");
    }
}

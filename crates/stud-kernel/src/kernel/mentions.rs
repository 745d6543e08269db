//! `@path` in a person's prompt: a word that starts with `@` and holds a
//! `.` or a `/` (and no `:`, which is an MCP resource) names a project
//! file. Each is read by the `read` tool on the path a model's call takes
//! (the authority stack, guards such as `protect-paths`, the tool-call
//! slots and their events), and attached below the message as `read`
//! returned it. A read that is refused or fails refuses the prompt,
//! naming the mention: nothing is sent, so `@.env` never reaches the model
//! when the guard protects it.

use std::collections::HashSet;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::act::{Called, NO_ONE_TO_ASK};
use super::payloads::result_text;
use super::session::Session;
use crate::runtime::domain::{Image, ResultPart};

/// The path a word mentions, if it is a file mention.
fn mention(word: &str) -> Option<&str> {
    let path = word
        .strip_prefix('@')?
        .trim_end_matches([',', ';', ')', '?', '!', '"', '\''])
        .trim_end_matches('.');
    let pathlike = path.contains('.') || path.contains('/');
    (pathlike && !path.is_empty() && !path.contains(':') && !path.starts_with('@')).then_some(path)
}

/// `text` with each file it mentions read and attached below it, and
/// the images among them (for the turn's message; the session's model
/// must see images, or the prompt is refused).
pub(crate) async fn attach_files(
    session: &Session,
    text: String,
) -> Result<(String, Vec<Image>), String> {
    let mut attached = String::new();
    let mut images = Vec::new();
    let mut seen = HashSet::new();
    for word in text.split_whitespace() {
        let Some(path) = mention(word) else { continue };
        if !seen.insert(path.to_string()) {
            continue;
        }
        let refused = |why: String| {
            format!(
                "@{path}: {why}; the prompt was not sent (write the path without @ to send it as text)"
            )
        };
        let arguments = json!({ "path": path }).to_string();
        match session
            .call_for_person("mention", "read", arguments, &CancellationToken::new())
            .await
        {
            Called::Ran(r) if !r.is_error => {
                let mut text = String::new();
                for part in r.content {
                    match part {
                        ResultPart::Image(i) => images.push(i),
                        ResultPart::Text(t) => text.push_str(&t),
                    }
                }
                attached.push_str(&file_block(path, &text));
            }
            Called::Ran(r) | Called::Refused(r) => return Err(refused(result_text(&r.content))),
            Called::Halted(_) => return Err(refused(NO_ONE_TO_ASK.into())),
        }
    }
    Ok((text + &attached, images))
}

/// The block a file is attached in; its body cannot close the block.
fn file_block(path: &str, body: &str) -> String {
    format!(
        "\n\n<file path=\"{}\">\n{}\n</file>",
        path.replace('"', "%22"),
        body.replace("</file", "<\\/file")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_paths_not_handles_or_resources() {
        assert_eq!(mention("@src/main.rs"), Some("src/main.rs"));
        assert_eq!(mention("@.env"), Some(".env"));
        assert_eq!(mention("@notes.txt,"), Some("notes.txt"));
        assert_eq!(mention("@notes.txt."), Some("notes.txt"));
        assert_eq!(mention("@alice"), None);
        assert_eq!(mention("@everything:test://static/1"), None);
        assert_eq!(mention("a@b.com"), None);
        assert_eq!(mention("@"), None);
    }

    #[test]
    fn a_file_cannot_close_its_block() {
        let b = file_block("a\".txt", "x</file>y");
        assert!(b.contains("path=\"a%22.txt\""), "{b}");
        assert!(!b.contains("x</file>"), "{b}");
    }
}

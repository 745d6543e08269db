//! The pieces of a request most providers render the same way, whatever
//! their wire format: a message's text, a tool result as text, an image
//! as a URL, extra headers from the config.

use serde_json::Value;

use crate::wit::stud::extension::types::{ContentPart, Image, ImageSource, ResultPart};

/// A message's text parts joined by newlines (images, tool calls and
/// thinking left out).
pub fn text_of(parts: &[ContentPart]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A tool result as text, an image in it as `[image]` (for APIs whose tool
/// results are text only).
pub fn result_text(content: &[ResultPart]) -> String {
    content
        .iter()
        .map(|p| match p {
            ResultPart::Text(t) => t.clone(),
            ResultPart::Image(_) => "[image]".to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// An image as a URL: a `data:` URL for inline bytes.
pub fn image_url(image: &Image) -> String {
    match &image.source {
        ImageSource::Base64(data) => format!("data:{};base64,{data}", image.media_type),
        ImageSource::Url(url) => url.clone(),
    }
}

/// The config's `headers` object as name/value pairs (values that are not
/// strings are left out).
pub fn config_headers(config: &Value) -> Vec<(String, String)> {
    config
        .get("headers")
        .and_then(Value::as_object)
        .map(|h| {
            h.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

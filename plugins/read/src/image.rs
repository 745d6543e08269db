//! Images: a PNG, JPEG, GIF or WebP file is returned as an image the
//! model can see (when its capabilities say vision; the kernel leaves it
//! out otherwise), as Claude Code's read does. Known by its first bytes,
//! not its name alone.

use base64::Engine as _;
use stud_sdk::prelude::*;

/// What providers take inline (Anthropic's limit per image).
const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// The media type of an image file named `rel` whose content starts with
/// `head`, if it is one.
pub fn media_type(rel: &str, head: &[u8]) -> Option<&'static str> {
    let ext = rel.rsplit('.').next()?.to_ascii_lowercase();
    let by_magic = if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        "image/png"
    } else if head.starts_with(b"\xff\xd8\xff") {
        "image/jpeg"
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        "image/gif"
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        "image/webp"
    } else {
        return None;
    };
    matches!(ext.as_str(), "png" | "jpg" | "jpeg" | "gif" | "webp").then_some(by_magic)
}

/// The image as the model sees it, with a line saying what it is.
pub fn output(rel: &str, media_type: &str, bytes: &[u8]) -> Result<ToolOutput, Error> {
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(Error::invalid_input(format!(
            "`{rel}` is an image of {} bytes (over {MAX_IMAGE_BYTES}); make it smaller",
            bytes.len()
        )));
    }
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    Ok(ToolOutput {
        content: vec![
            ResultPart::Text(format!("{rel}: {media_type}, {} bytes", bytes.len())),
            ResultPart::Image(Image {
                media_type: media_type.to_string(),
                source: ImageSource::Base64(data),
            }),
        ],
        details: Some(json!({"path": rel, "bytes": bytes.len(), "image": media_type})),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_is_known_by_its_bytes_and_its_name() {
        assert_eq!(
            media_type("a.png", b"\x89PNG\r\n\x1a\nrest"),
            Some("image/png")
        );
        assert_eq!(media_type("a.JPG", b"\xff\xd8\xff\xe0"), Some("image/jpeg"));
        assert_eq!(
            media_type("a.webp", b"RIFF\0\0\0\0WEBPVP8 "),
            Some("image/webp")
        );
        assert_eq!(media_type("a.png", b"not an image"), None);
        assert_eq!(media_type("a.txt", b"\x89PNG\r\n\x1a\n"), None);
    }
}

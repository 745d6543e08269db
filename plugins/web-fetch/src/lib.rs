//! `web-fetch`: GET a URL through the host (which allows only hosts the
//! user granted, checks redirects and refuses internal addresses), stop at
//! a size limit, turn HTML into text. The approval key is the host, so an
//! allowlist entry `web-fetch:docs.rs` approves one site.

use stud_sdk::host::http::{self, Header, Request};
use stud_sdk::prelude::*;

const DEFAULT_MAX_BYTES: u64 = 2 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS: u32 = 30_000;
/// Line width for rendered HTML.
const WIDTH: usize = 100;

#[derive(Default)]
struct WebFetch {
    max_bytes: u64,
    timeout_ms: u32,
}

/// The host of an http(s) URL, lowercased; `None` for anything else.
fn host_of(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit('@').next()?;
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        host_port.split(':').next()?
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

impl Tool for WebFetch {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "web-fetch",
            "Fetch a web page or text file by URL (http or https GET) and return its text. Only hosts the user granted are reachable.",
        )
        .param("url", "string", "The http:// or https:// URL", true)
    }

    fn init(&mut self, config: &Value) -> Result<(), Error> {
        self.max_bytes = config["maxBytes"].as_u64().unwrap_or(DEFAULT_MAX_BYTES);
        self.timeout_ms = config["timeoutMs"]
            .as_u64()
            .map(|t| t.min(u64::from(u32::MAX)) as u32)
            .unwrap_or(DEFAULT_TIMEOUT_MS);
        Ok(())
    }

    fn approval_key(&self, args: &Args) -> Result<String, Error> {
        let url = args.str("url")?;
        host_of(url).ok_or_else(|| {
            Error::invalid_input(format!("`{url}` is not an http:// or https:// URL"))
        })
    }

    fn invoke(&mut self, _call: &CallContext, args: Args) -> Result<ToolOutput, Error> {
        let url = args.str("url")?;
        host_of(url).ok_or_else(|| {
            Error::invalid_input(format!("`{url}` is not an http:// or https:// URL"))
        })?;
        let response = http::send(&Request {
            method: "GET".into(),
            url: url.into(),
            headers: vec![Header {
                name: "accept".into(),
                value: "text/html, text/plain, text/markdown, application/json;q=0.9, */*;q=0.5"
                    .into(),
            }],
            body: None,
            timeout_ms: Some(self.timeout_ms),
        })?;
        let status = response.status();
        let content_type = response
            .headers()
            .into_iter()
            .find(|h| h.name.eq_ignore_ascii_case("content-type"))
            .map(|h| h.value)
            .unwrap_or_default();
        let mut body = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = response.next_chunk()? {
            let room = self.max_bytes.saturating_sub(body.len() as u64) as usize;
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if chunk.len() > room {
                truncated = true;
                break;
            }
        }
        let ct = content_type.to_ascii_lowercase();
        if !(ct.is_empty() || ct.starts_with("text/") || ct.contains("json") || ct.contains("xml"))
        {
            return Err(Error::tool(
                "unsupported-content",
                format!(
                    "`{url}` is {content_type} ({} bytes), not text; web-fetch returns text only",
                    body.len()
                ),
            ));
        }
        let text = if ct.contains("html") {
            html2text::from_read(body.as_slice(), WIDTH)
                .map_err(|e| Error::tool("html", format!("cannot render the page: {e}")))?
        } else {
            String::from_utf8_lossy(&body).into_owned()
        };
        let mut out = format!("[untrusted content fetched from {url}, HTTP {status}]\n{text}");
        if truncated {
            out.push_str(&format!(
                "\n[cut at {} bytes (web-fetch maxBytes); fetch a more specific page]",
                self.max_bytes
            ));
        }
        if !(200..300).contains(&status) {
            return Err(Error::tool(
                "http-status",
                format!(
                    "`{url}` answered HTTP {status}: {}",
                    out.chars().take(500).collect::<String>()
                ),
            ));
        }
        Ok(ToolOutput::text(out).with_details(json!({
            "url": url,
            "status": status,
            "content_type": content_type,
            "bytes": body.len(),
            "truncated": truncated,
            "untrusted": true,
        })))
    }
}

stud_sdk::export_tool!(WebFetch);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        assert_eq!(host_of("https://Docs.rs/x?y"), Some("docs.rs".into()));
        assert_eq!(
            host_of("http://u:p@127.0.0.1:8080/"),
            Some("127.0.0.1".into())
        );
        assert_eq!(host_of("http://[::1]:80/"), Some("::1".into()));
        assert_eq!(host_of("file:///etc/passwd"), None);
    }
}

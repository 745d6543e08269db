//! Providers end to end: the `stud` binary with each bundled provider
//! against a loopback server that replays recorded streams cut at awkward
//! places (every few bytes and inside multi-byte characters); retries,
//! mid-stream failures, the network policy and secret hygiene.

use crate::common;

use std::process::{Command, Output};

use common::StudEnv;
use common::http::{Received, Reply, TestServer};
use serde_json::{Value, json};

const KEY: &str = "sk-test-KEY-0123456789abcdef";
const NOTE: &str = "héllo wörld → 世界";
const ANSWER: &str = "The note says: héllo wörld → 世界 ✓";

fn stream(name: &str) -> String {
    common::recorded_stream(name)
}

/// A home with these settings and a project holding `notes.txt`.
struct Env(StudEnv);

impl std::ops::Deref for Env {
    type Target = StudEnv;
    fn deref(&self) -> &StudEnv {
        &self.0
    }
}

impl Env {
    fn new(settings: Value) -> Self {
        let env = StudEnv::new();
        env.settings(settings);
        env.file("notes.txt", &format!("{NOTE}\n"));
        Env(env)
    }

    /// `stud run ARGS` with extra environment variables.
    fn stud(&self, args: &[&str], vars: &[(&str, &str)]) -> Output {
        let mut c = self.command(&[&["run"], args].concat());
        c.envs(vars.iter().copied());
        c.output().unwrap()
    }

    fn files_written(&self) -> usize {
        let mut n = 0;
        common::walk(self.home.path(), &mut |_| n += 1);
        n
    }
}

fn result(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap_or_else(|| {
        panic!(
            "no output; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    serde_json::from_str(last).unwrap()
}

fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("event").is_some())
        .collect()
}

/// The first event called `name`.
fn event<'a>(evs: &'a [Value], name: &str) -> &'a Value {
    evs.iter()
        .find(|e| e["event"] == name)
        .unwrap_or_else(|| panic!("no {name} event"))
}

fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "stud failed ({:?}): {}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The first request asked for tools; the second carried the tool result
/// (the file's text) back under the call id.
fn assert_round_trip(requests: &[Received], call_id: &str) {
    assert_eq!(requests.len(), 2, "{requests:?}");
    let first = requests[0].json().to_string();
    assert!(
        first.contains("\"read\"") && first.contains("What does notes.txt say?"),
        "{first}"
    );
    let second = requests[1].json().to_string();
    assert!(second.contains(call_id), "{second}");
    assert!(second.contains(NOTE), "tool result missing: {second}");
}

fn run_provider(env: &Env, vars: &[(&str, &str)]) -> Output {
    let out = env.stud(
        &[
            "-p",
            "--yolo",
            "--output-format",
            "json",
            "What does notes.txt say?",
        ],
        vars,
    );
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains(KEY), "key on stderr: {stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains(KEY));
    // The session's log is on disk (so the scan below reads real output).
    assert!(
        !env.files_containing("The note says").is_empty(),
        "no session log among {} files",
        env.files_written()
    );
    assert_eq!(
        env.files_containing(KEY),
        Vec::<String>::new(),
        "key in files"
    );
    out
}

#[test]
fn openai_compatible_streams_text_and_tool_calls() {
    let server = TestServer::start(vec![
        Reply::sse(&stream("openai-tool.sse"), 7),
        Reply::sse(&stream("openai-text.sse"), 5),
    ]);
    let env = Env::new(json!({
        "active": {"provider": "openai-compatible", "model": "gpt-4.1-mini"},
        "providers": {"openai-compatible": {"baseUrl": format!("{}/v1", server.url())}}
    }));
    let out = run_provider(&env, &[("OPENAI_API_KEY", KEY)]);
    let r = result(&out);
    assert_eq!(r["result"], ANSWER, "{r}");
    // 412 + 530 prompt tokens, of which 384 were read from the cache.
    assert_eq!(r["usage"]["input_tokens"], 558, "{r}");
    assert_eq!(r["usage"]["cache_read_tokens"], 384, "{r}");
    let requests = server.requests();
    assert_round_trip(&requests, "call_abc123");
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = requests[0].json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(body["tools"][0]["type"], "function");
    // The stream's events were published as they arrived, in order.
    let names = logged_provider_events(&env);
    let first_request: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .take_while(|n| *n != "provider.request.completed")
        .filter(|n| !n.starts_with("provider.request"))
        .collect();
    let mut expected = vec!["provider.tool_call.start"];
    let deltas = first_request
        .iter()
        .filter(|n| **n == "provider.tool_call.delta")
        .count();
    assert!(deltas >= 2, "{first_request:?}");
    expected.extend(std::iter::repeat_n("provider.tool_call.delta", deltas));
    expected.extend([
        "provider.usage",
        "provider.tool_call.end",
        "provider.finish",
    ]);
    assert_eq!(first_request, expected);
}

/// The `provider.*` event names of the session's jsonl log, in order.
fn logged_provider_events(env: &Env) -> Vec<String> {
    let log = env
        .files_containing("\"session.start\"")
        .into_iter()
        .find(|f| f.ends_with(".jsonl"))
        .expect("a jsonl session log");
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["name"].as_str().map(str::to_string))
        .filter(|n| n.starts_with("provider."))
        .collect()
}

#[test]
fn a_key_that_a_tool_reads_never_reaches_the_model() {
    // Not credential-shaped, so the pattern-based redact-secrets hook does
    // not catch it: only the kernel's knowledge of the secret's value can.
    const PLAIN: &str = "correct-horse-battery-staple-4711";
    let server = TestServer::start(vec![
        Reply::sse(&stream("openai-tool.sse"), 7),
        Reply::sse(&stream("openai-text.sse"), 5),
    ]);
    let env = Env::new(json!({
        "active": {"provider": "openai-compatible", "model": "gpt-4.1-mini"},
        "providers": {"openai-compatible": {"baseUrl": format!("{}/v1", server.url())}}
    }));
    env.file("notes.txt", &format!("{NOTE}\ntoken={PLAIN}\n"));
    let out = env.stud(
        &[
            "-p",
            "--yolo",
            "--output-format",
            "json",
            "What does notes.txt say?",
        ],
        &[("OPENAI_API_KEY", PLAIN)],
    );
    assert_ok(&out);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let second = String::from_utf8_lossy(&requests[1].body).to_string();
    assert!(second.contains(NOTE), "tool result missing: {second}");
    assert!(second.contains("token=[REDACTED]"), "{second}");
    for r in &requests {
        let body = String::from_utf8_lossy(&r.body);
        assert!(!body.contains(PLAIN), "key sent to the model: {body}");
    }
    let leaks: Vec<String> = env
        .files_containing(PLAIN)
        .into_iter()
        .filter(|f| !f.ends_with("notes.txt"))
        .collect();
    assert!(leaks.is_empty(), "{leaks:?}");
}

#[test]
fn openai_compat_settings_shape_the_request() {
    let server = TestServer::start(vec![Reply::sse(&stream("openai-text.sse"), 5)]);
    let env = Env::new(json!({
        "active": {"provider": "openai-compatible", "model": "gpt-4.1-mini", "maxTokens": 256},
        "systemPrompt": "Be brief.",
        "providers": {"openai-compatible": {
            "baseUrl": server.url(),
            "maxTokensField": "max_completion_tokens",
            "systemRole": "developer",
            "includeUsage": false
        }}
    }));
    let out = env.stud(
        &["-p", "--no-tools", "--output-format", "json", "hi"],
        &[("OPENAI_API_KEY", KEY)],
    );
    assert_ok(&out);
    let body = server.requests()[0].json();
    assert_eq!(body["max_completion_tokens"], 256, "{body}");
    assert!(body.get("max_tokens").is_none(), "{body}");
    assert_eq!(body["messages"][0]["role"], "developer", "{body}");
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(system.contains("Be brief."), "{body}");
    assert!(body.get("stream_options").is_none(), "{body}");
}

#[test]
fn anthropic_streams_thinking_text_and_tool_use() {
    // A redacted (encrypted) thinking block after the readable one: it has
    // to go back unchanged too.
    let mut tool = stream("anthropic-tool.sse");
    let at = tool
        .find("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1")
        .unwrap();
    tool.insert_str(at, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":7,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"EmwKAhgBEgy3va3pzix\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":7}\n\n");
    let server = TestServer::start(vec![
        Reply::sse(&tool, 11),
        Reply::sse(&stream("anthropic-text.sse"), 3),
    ]);
    let env = Env::new(json!({
        "active": {"provider": "anthropic", "model": "claude-sonnet-4-5", "cacheHints": true},
        "providers": {"anthropic": {"baseUrl": server.url()}},
        "secrets": {"anthropic": {"ANTHROPIC_API_KEY": {"env": "MY_CLAUDE_KEY"}}}
    }));
    let out = run_provider(&env, &[("MY_CLAUDE_KEY", KEY)]);
    let r = result(&out);
    assert_eq!(r["result"], ANSWER, "{r}");
    assert_eq!(r["usage"]["output_tokens"], 72, "{r}");
    assert_eq!(r["usage"]["cache_read_tokens"], 256, "{r}");
    assert_eq!(r["usage"]["cache_write_tokens"], 128, "{r}");
    let requests = server.requests();
    assert_round_trip(&requests, "toolu_01A");
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(requests[0].header("x-api-key"), Some(KEY));
    assert_eq!(requests[0].header("anthropic-version"), Some("2023-06-01"));
    let first = requests[0].json();
    assert_eq!(
        first["tools"].as_array().unwrap().last().unwrap()["cache_control"]["type"],
        "ephemeral"
    );
    // The thinking block goes back with its signature, before the tool use.
    let second = requests[1].json();
    let assistant = &second["messages"][1]["content"];
    assert_eq!(assistant[0]["type"], "thinking", "{second}");
    assert_eq!(assistant[0]["signature"], "EqQBCgIYAhIM1gbcDa9GJwZA2b3h");
    assert_eq!(assistant[1]["type"], "redacted_thinking", "{second}");
    assert_eq!(assistant[1]["data"], "EmwKAhgBEgy3va3pzix");
    assert!(
        assistant
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["type"] == "tool_use")
    );
}

#[test]
fn gemini_streams_text_and_function_calls() {
    let server = TestServer::start(vec![
        Reply::sse(&stream("gemini-tool.sse"), 13),
        Reply::sse(&stream("gemini-text.sse"), 4),
    ]);
    let env = Env::new(json!({
        "active": {"provider": "gemini", "model": "gemini-2.5-flash"},
        "providers": {"gemini": {"baseUrl": format!("{}/v1beta", server.url())}}
    }));
    let key_file = env.home.path().join("gemini.key");
    std::fs::write(&key_file, format!("{KEY}\n")).unwrap();
    let settings = json!({
        "active": {"provider": "gemini", "model": "gemini-2.5-flash"},
        "providers": {"gemini": {"baseUrl": format!("{}/v1beta", server.url())}},
        "secrets": {"gemini": {"GEMINI_API_KEY": {"file": key_file}}}
    });
    env.settings(settings);
    let out = env.stud(
        &[
            "-p",
            "--yolo",
            "--output-format",
            "json",
            "What does notes.txt say?",
        ],
        &[],
    );
    assert_ok(&out);
    // The key file itself holds the key; nothing else may.
    let leaks: Vec<String> = env
        .files_containing(KEY)
        .into_iter()
        .filter(|f| !f.ends_with("gemini.key"))
        .collect();
    assert!(leaks.is_empty(), "{leaks:?}");
    let r = result(&out);
    assert_eq!(r["result"], ANSWER, "{r}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(
        requests[0].path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(requests[0].header("x-goog-api-key"), Some(KEY));
    let second = requests[1].json().to_string();
    assert!(
        second.contains("functionResponse") && second.contains(NOTE),
        "{second}"
    );
    assert!(
        second.contains("CiQB0e2Kb6Zx"),
        "thought signature not sent back: {second}"
    );
}

#[test]
fn a_stream_that_breaks_halfway_fails_typed_and_keeps_the_partial_text() {
    let text = stream("openai-text.sse");
    let cut = text.find("data: {\"id\":\"chatcmpl-2\",\"object\":\"chat.completion.chunk\",\"created\":1763900001,\"model\":\"gpt-4.1-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" ✓\"}").unwrap();
    let server = TestServer::start(vec![Reply::sse(&text, 9).stop_after(cut)]);
    let env = Env::new(json!({
        "active": {"provider": "openai-compatible", "model": "gpt-4.1-mini"},
        "providers": {"openai-compatible": {"baseUrl": server.url()}}
    }));
    let out = env.stud(
        &["-p", "--yolo", "--output-format", "stream-json", "hi"],
        &[("OPENAI_API_KEY", KEY)],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let evs = events(&out);
    let failed = event(&evs, "provider.request.failed");
    assert_eq!(failed["payload"]["code"], "stream-truncated", "{failed}");
    assert_eq!(
        failed["payload"]["partial_text"],
        "The note says: héllo wörld → 世界"
    );
    let r = result(&out);
    assert_eq!(r["error_code"], "provider-stream-truncated", "{r}");
    // The session's own log on disk has the partial text too.
    assert!(
        !env.files_containing("The note says: héllo wörld")
            .is_empty()
    );
    // No retry once text reached the user.
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn an_anthropic_error_event_midstream_is_typed() {
    let mut text = stream("anthropic-text.sse");
    let at = text.find("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" w").unwrap();
    text.truncate(at);
    text.push_str("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n");
    let server = TestServer::start(vec![Reply::sse(&text, 6)]);
    let env = Env::new(json!({
        "active": {"provider": "anthropic", "model": "claude-sonnet-4-5"},
        "providers": {"anthropic": {"baseUrl": server.url()}}
    }));
    let out = env.stud(
        &["-p", "--yolo", "--output-format", "stream-json", "hi"],
        &[("ANTHROPIC_API_KEY", KEY)],
    );
    assert_eq!(out.status.code(), Some(1));
    let evs = events(&out);
    let failed = event(&evs, "provider.request.failed");
    assert_eq!(failed["payload"]["code"], "overloaded", "{failed}");
    assert_eq!(failed["payload"]["partial_text"], "The note says: héllo");
}

#[test]
fn an_overloaded_error_before_any_text_is_retried() {
    // Anthropic may send `overloaded_error` right after message_start:
    // nothing reached the person yet, so the request is sent again.
    let full = stream("anthropic-text.sse");
    let start = full.find("event: content_block_start").unwrap();
    let early = format!(
        "{}event: ping\ndata: {{\"type\": \"ping\"}}\n\nevent: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}}}\n\n",
        &full[..start]
    );
    let server = TestServer::start(vec![Reply::sse(&early, 5), Reply::sse(&full, 7)]);
    let env = Env::new(json!({
        "active": {"provider": "anthropic", "model": "claude-sonnet-4-5"},
        "providers": {"anthropic": {"baseUrl": server.url()}},
        "runtime": {"retries": {"baseDelayMs": 20}}
    }));
    let out = env.stud(
        &["-p", "--output-format", "stream-json", "hi"],
        &[("ANTHROPIC_API_KEY", KEY)],
    );
    assert_ok(&out);
    let evs = events(&out);
    let retry = event(&evs, "provider.retry");
    assert_eq!(retry["payload"]["code"], "overloaded", "{retry}");
    assert_eq!(result(&out)["result"], ANSWER);
    assert_eq!(server.requests().len(), 2);
    // The text was shown once, not once per attempt.
    let shown: String = evs
        .iter()
        .filter(|e| e["event"] == "provider.tokens")
        .filter_map(|e| e["payload"]["delta"].as_str())
        .collect();
    assert_eq!(shown, ANSWER);
}

#[test]
fn server_errors_are_retried_up_to_the_configured_count() {
    let busy = || Reply::new(503, r#"{"error":{"message":"upstream busy"}}"#);
    let server = TestServer::start(vec![busy(), busy(), busy(), busy()]);
    let env = Env::new(json!({
        "active": {"provider": "openai-compatible", "model": "gpt-4.1-mini"},
        "providers": {"openai-compatible": {"baseUrl": server.url()}},
        "runtime": {"retries": {"maxRetries": 2, "baseDelayMs": 10}}
    }));
    let out = env.stud(
        &["-p", "--output-format", "stream-json", "hi"],
        &[("OPENAI_API_KEY", KEY)],
    );
    assert_eq!(out.status.code(), Some(1));
    let evs = events(&out);
    let attempts: Vec<u64> = evs
        .iter()
        .filter(|e| e["event"] == "provider.retry")
        .filter_map(|e| e["payload"]["attempt"].as_u64())
        .collect();
    assert_eq!(attempts, [1, 2]);
    assert_eq!(result(&out)["error_code"], "provider-server-error");
    // The first attempt and two retries; the fourth reply was never asked for.
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn a_429_with_retry_after_is_retried_and_succeeds() {
    let server = TestServer::start(vec![
        Reply::new(
            429,
            r#"{"error":{"message":"Rate limit reached for requests","type":"requests"}}"#,
        )
        .header("retry-after", "1")
        .header("content-type", "application/json"),
        Reply::sse(&stream("openai-text.sse"), 8),
    ]);
    let env = Env::new(json!({
        "active": {"provider": "openai-compatible", "model": "gpt-4.1-mini"},
        "providers": {"openai-compatible": {"baseUrl": server.url()}}
    }));
    let out = env.stud(
        &["-p", "--output-format", "stream-json", "hi"],
        &[("OPENAI_API_KEY", KEY)],
    );
    assert_ok(&out);
    let evs = events(&out);
    let retry = event(&evs, "provider.retry");
    assert_eq!(retry["payload"]["code"], "rate-limited", "{retry}");
    assert_eq!(retry["payload"]["delay_ms"], 1000, "{retry}");
    assert_eq!(retry["payload"]["attempt"], 1);
    assert_eq!(result(&out)["result"], ANSWER);
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_rejected_key_is_not_retried_and_says_what_to_fix() {
    let server = TestServer::start(vec![Reply::new(
        401,
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#,
    )]);
    let env = Env::new(json!({
        "active": {"provider": "openai-compatible", "model": "gpt-4.1-mini"},
        "providers": {"openai-compatible": {"baseUrl": server.url()}}
    }));
    let out = env.stud(
        &["-p", "--output-format", "json", "hi"],
        &[("OPENAI_API_KEY", KEY)],
    );
    assert_eq!(out.status.code(), Some(1));
    let r = result(&out);
    assert_eq!(r["error_code"], "provider-auth", "{r}");
    let message =
        r["error"].as_str().unwrap_or_default().to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(message.contains("OPENAI_API_KEY"), "{message}");
    assert!(!message.contains(KEY), "{message}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_provider_cannot_reach_a_host_it_was_not_granted() {
    let granted = TestServer::start(vec![Reply::new(200, "hello")]);
    let other = TestServer::start(vec![Reply::new(200, "should never be asked")]);
    let env = Env::new(json!({
        "active": {"provider": "net-probe"},
        "providers": {"net-probe": {"target": format!("http://127.0.0.1:{}/", other.addr.port())}}
    }));
    common::install_fixture(env.home.path(), "net-probe");
    let out = env.stud(&["-p", "--output-format", "json", "hi"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let r = result(&out);
    let message = r["error"].as_str().unwrap_or_default();
    assert!(
        message.contains("`net-probe`") && message.contains("127.0.0.1"),
        "{r}"
    );
    assert!(message.contains("not granted"), "{r}");
    assert_eq!(r["error_code"], "provider-network-denied", "{r}");
    assert_eq!(
        other.requests().len(),
        0,
        "a request left for an ungranted host"
    );

    // Its manifest asks for `localhost`, which resolves to this machine:
    // the manifest's word is not enough for an internal address.
    let target = format!("http://localhost:{}/ok", granted.addr.port());
    env.settings(json!({
        "active": {"provider": "net-probe"},
        "providers": {"net-probe": {"target": target}}
    }));
    let out = env.stud(&["-p", "--output-format", "json", "hi"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let message = result(&out)["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains("internal address"), "{message}");
    assert_eq!(granted.requests().len(), 0);

    // Granted by the user, exactly: the same component reaches it.
    env.settings(json!({
        "active": {"provider": "net-probe"},
        "providers": {"net-probe": {"target": target}},
        "network": {"net-probe": ["localhost"]}
    }));
    let out = env.stud(&["-p", "--output-format", "json", "hi"], &[]);
    assert_ok(&out);
    assert_eq!(result(&out)["result"], "status 200: hello");
}

#[test]
fn a_redirect_to_an_ungranted_host_is_refused_before_connecting() {
    let other = TestServer::start(vec![Reply::new(200, "should never be asked")]);
    let server = TestServer::start(vec![Reply::new(307, "").header(
        "location",
        &format!("http://localhost:{}/v1/chat/completions", other.addr.port()),
    )]);
    let env = Env::new(json!({
        "active": {"provider": "openai-compatible", "model": "gpt-4.1-mini"},
        "providers": {"openai-compatible": {"baseUrl": server.url()}}
    }));
    let out = env.stud(
        &["-p", "--output-format", "json", "hi"],
        &[("OPENAI_API_KEY", KEY)],
    );
    assert_eq!(out.status.code(), Some(1));
    let r = result(&out);
    assert_eq!(r["error_code"], "provider-network-denied", "{r}");
    let message = r["error"].as_str().unwrap_or_default();
    assert!(message.contains("network.openai-compatible"), "{message}");
    assert_eq!(other.requests().len(), 0);
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_model_without_tool_calling_is_refused_before_sending() {
    let server = TestServer::start(vec![Reply::sse(&stream("openai-text.sse"), 50)]);
    let env = Env::new(json!({
        "active": {"provider": "openai-compatible", "model": "tiny"},
        "providers": {"openai-compatible": {
            "baseUrl": server.url(),
            "models": [{"id": "tiny", "toolCalling": false, "contextWindow": 4096}]
        }}
    }));
    let out = env.stud(&["-p", "--output-format", "json", "hi"], &[]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`tiny`")
            && stderr.contains("tool calling")
            && stderr.contains("--no-tools"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 0);
    // Without tools the same model serves the session.
    let out = env.stud(&["-p", "--no-tools", "--output-format", "json", "hi"], &[]);
    assert_ok(&out);
    assert_eq!(result(&out)["result"], ANSWER);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].json().get("tools").is_none());
    assert!(
        requests[0].header("authorization").is_none(),
        "no key was configured"
    );
}

#[tokio::test]
async fn switching_model_rechecks_capabilities_and_keeps_the_old_one_on_refusal() {
    use stud::kernel::{LaunchOptions, SessionError, launch};
    use stud::paths::StudHome;
    let env = Env::new(json!({
        "active": {"provider": "openai-compatible", "model": "big", "thinking": "low"},
        "providers": {"openai-compatible": {
            "baseUrl": "http://127.0.0.1:9/v1",
            "models": [
                {"id": "big", "contextWindow": 128000, "thinking": true},
                {"id": "tiny", "toolCalling": false, "thinking": true},
                {"id": "plain", "thinking": false}
            ]
        }}
    }));
    let mut launched = launch(LaunchOptions::headless(
        StudHome::at(env.home.path()),
        env.project.path().to_path_buf(),
    ))
    .await
    .expect("launch");
    let session = &mut launched.session;
    assert_eq!(session.model(), "big");
    let err = session.set_model("tiny").unwrap_err();
    assert!(matches!(err, SessionError::Capability(_)), "{err}");
    assert!(err.to_string().contains("tool calling"), "{err}");
    assert_eq!(session.model(), "big", "a refused switch keeps the model");
    // What the next request carries is checked too: thinking is on.
    let err = session.set_model("plain").unwrap_err();
    assert!(
        err.to_string().contains("`plain`") && err.to_string().contains("thinking"),
        "{err}"
    );
    assert_eq!(session.model(), "big");
    assert!(matches!(
        session.set_model("nope"),
        Err(SessionError::UnknownModel { .. })
    ));
    session.set_model("big").expect("same model");
    launched.shutdown().await;
}

#[test]
fn ctrl_c_stops_a_stalled_stream_at_once() {
    use std::io::{BufRead, BufReader};
    use std::time::{Duration, Instant};
    let text = stream("openai-text.sse");
    let stall = text.find("data: {\"id\":\"chatcmpl-2\",\"object\":\"chat.completion.chunk\",\"created\":1763900001,\"model\":\"gpt-4.1-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"héllo").unwrap();
    let server = TestServer::start(vec![Reply::sse(&text, 1000).stall_after(stall)]);
    let env = Env::new(json!({
        "active": {"provider": "openai-compatible", "model": "gpt-4.1-mini"},
        "providers": {"openai-compatible": {"baseUrl": server.url()}}
    }));
    let mut child = env
        .command(&["run", "-p", "--output-format", "stream-json", "hi"])
        .env("OPENAI_API_KEY", KEY)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        if line.unwrap().contains("\"provider.tokens\"") {
            break;
        }
    }
    let t = Instant::now();
    let killed = Command::new("kill")
        .arg("-INT")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(killed.success());
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    // The server stays silent for a minute; the turn did not wait for it.
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    assert!(
        rest.iter()
            .any(|l| l.contains("\"turn.end\"") && l.contains("cancelled")),
        "{rest:?}"
    );
}

//! The `openai-responses` provider end to end: the `stud` binary against a
//! loopback server replaying recorded Responses streams (typed SSE events)
//! cut every 1, 7 and 4096 bytes: reasoning summaries as thinking, two
//! function calls in parallel, the reasoning item passed back with its
//! encrypted content, usage with cached tokens; a failed response retried
//! or refused by its code, an incomplete one typed; Azure-style URLs.

use crate::common;

use std::process::Output;

use common::StudEnv;
use common::http::{Reply, TestServer};
use serde_json::{Value, json};

const KEY: &str = "sk-test-KEY-0123456789abcdef";
const NOTE: &str = "héllo wörld → 世界";
const ANSWER: &str = "The note says: héllo wörld → 世界 ✓";

fn stream(name: &str) -> String {
    common::recorded_stream(name)
}

fn env_for(server: &TestServer, provider: Value, extra: Value) -> StudEnv {
    let env = StudEnv::new();
    let mut settings = json!({
        "active": {"provider": "openai-responses", "model": "gpt-5-codex"},
        "providers": {"openai-responses": provider},
        "runtime": {"retries": {"baseDelayMs": 10}}
    });
    if settings["providers"]["openai-responses"]["baseUrl"].is_null() {
        settings["providers"]["openai-responses"]["baseUrl"] =
            json!(format!("{}/v1", server.url()));
    }
    common::merge(&mut settings, extra);
    env.settings(settings);
    env.file("notes.txt", &format!("{NOTE}\n"));
    env
}

fn run(env: &StudEnv) -> Output {
    env.command(&[
        "run",
        "-p",
        "--yolo",
        "--output-format",
        "stream-json",
        "What does notes.txt say?",
    ])
    .env("OPENAI_API_KEY", KEY)
    .output()
    .expect("run stud")
}

fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn result(out: &Output) -> Value {
    lines(out)
        .into_iter()
        .rev()
        .find(|v| v.get("type") == Some(&json!("result")))
        .unwrap_or_else(|| {
            panic!(
                "no result: {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                String::from_utf8_lossy(&out.stdout)
            )
        })
}

#[test]
fn reasoning_parallel_calls_and_text_at_every_cut() {
    for every in [1, 7, 4096] {
        let server = TestServer::start(vec![
            Reply::sse(&stream("openai-responses-tool.sse"), every),
            Reply::sse(&stream("openai-responses-text.sse"), every),
        ]);
        let env = env_for(&server, json!({}), json!({}));
        let out = run(&env);
        let r = result(&out);
        assert_eq!(r["result"], ANSWER, "cut every {every}: {r}");
        // 412 + (530 - 384) uncached prompt tokens, 384 read from the cache;
        // reasoning tokens are output tokens.
        assert_eq!(r["usage"]["input_tokens"], 558, "{r}");
        assert_eq!(r["usage"]["cache_read_tokens"], 384, "{r}");
        assert_eq!(r["usage"]["output_tokens"], 96 + 18, "{r}");
        let evs = lines(&out);
        // The reasoning summary was shown as thinking, as it streamed.
        let thought: String = evs
            .iter()
            .filter(|e| e["event"] == "provider.reasoning")
            .filter_map(|e| e["payload"]["delta"].as_str())
            .collect();
        assert!(thought.starts_with("**Reading the note**"), "{thought:?}");
        // Both calls ran.
        let ran: Vec<&str> = evs
            .iter()
            .filter(|e| e["event"] == "tool.succeeded")
            .filter_map(|e| e["payload"]["tool"].as_str())
            .collect();
        assert_eq!(ran.len(), 2, "{ran:?}");
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[0].path, "/v1/responses");
        assert_eq!(
            requests[0].header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        let first = requests[0].json();
        assert_eq!(first["stream"], true);
        assert_eq!(first["store"], false);
        assert_eq!(first["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(first["reasoning"]["summary"], "auto");
        assert_eq!(first["parallel_tool_calls"], true);
        assert!(
            first["tools"]
                .as_array()
                .expect("tools")
                .iter()
                .any(|t| t["type"] == "function" && t["name"] == "read"),
            "{first}"
        );
        assert_eq!(first["input"][0]["role"], "user");
        assert_eq!(first["input"][0]["content"][0]["type"], "input_text");
        // The second request carries the reasoning item back (encrypted
        // content, summary), both calls and both outputs, in order.
        let input = requests[1].json()["input"].clone();
        let kinds: Vec<&str> = input
            .as_array()
            .expect("input")
            .iter()
            .map(|i| i["type"].as_str().or(i["role"].as_str()).unwrap_or("?"))
            .collect();
        assert_eq!(
            kinds,
            [
                "user",
                "reasoning",
                "function_call",
                "function_call",
                "function_call_output",
                "function_call_output"
            ],
            "{input:#}"
        );
        assert_eq!(input[1]["id"], "rs_01");
        assert!(
            input[1]["encrypted_content"]
                .as_str()
                .is_some_and(|e| e.starts_with("gAAAAAB")),
            "{input:#}"
        );
        assert!(
            input[1]["summary"][0]["text"]
                .as_str()
                .is_some_and(|t| t.ends_with("list the folder.")),
            "{input:#}"
        );
        assert_eq!(input[2]["call_id"], "call_read1");
        assert_eq!(input[2]["arguments"], "{\"path\":\"notes.txt\"}");
        assert_eq!(input[3]["call_id"], "call_glob2");
        let outputs: Vec<&Value> = input
            .as_array()
            .expect("input")
            .iter()
            .filter(|i| i["type"] == "function_call_output")
            .collect();
        assert!(
            outputs.iter().any(|o| o["call_id"] == "call_read1"
                && o["output"].as_str().is_some_and(|t| t.contains(NOTE))),
            "{input:#}"
        );
    }
}

#[test]
fn a_failed_response_with_a_server_error_is_retried() {
    let server = TestServer::start(vec![
        Reply::sse(&stream("openai-responses-failed.sse"), 7),
        Reply::sse(&stream("openai-responses-text.sse"), 7),
    ]);
    let env = env_for(&server, json!({}), json!({}));
    let out = run(&env);
    assert_eq!(result(&out)["result"], ANSWER);
    let retry = lines(&out)
        .into_iter()
        .find(|e| e["event"] == "provider.retry")
        .expect("a retry");
    assert_eq!(retry["payload"]["code"], "server-error", "{retry}");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_rejected_prompt_is_not_retried_and_says_why() {
    let server = TestServer::start(vec![
        Reply::sse(&stream("openai-responses-rejected.sse"), 7),
        Reply::sse(&stream("openai-responses-text.sse"), 7),
    ]);
    let env = env_for(&server, json!({}), json!({}));
    let out = run(&env);
    assert_eq!(out.status.code(), Some(1));
    let r = result(&out);
    assert_eq!(r["error_code"], "provider-request-rejected", "{r}");
    assert!(
        r["error"]
            .as_str()
            .is_some_and(|e| e.contains("(invalid_prompt)") && e.contains("usage policy")),
        "{r}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn an_incomplete_response_is_a_truncated_turn() {
    let server = TestServer::start(vec![Reply::sse(
        &stream("openai-responses-incomplete.sse"),
        7,
    )]);
    let env = env_for(&server, json!({}), json!({}));
    let out = run(&env);
    assert_eq!(out.status.code(), Some(1));
    let r = result(&out);
    assert_eq!(r["error_code"], "response-truncated", "{r}");
}

/// Azure: the key as `api-key`, the API version as a query parameter, the
/// deployment's name as the model.
#[test]
fn azure_style_urls_and_key_header() {
    let server = TestServer::start(vec![Reply::sse(&stream("openai-responses-text.sse"), 4096)]);
    let env = env_for(
        &server,
        json!({
            "baseUrl": format!("{}/openai/v1", server.url()),
            "apiVersion": "2025-04-01-preview",
            "authHeader": "api-key",
            "models": [{"id": "my-gpt5-deployment", "thinking": true}]
        }),
        json!({"active": {"model": "my-gpt5-deployment"}}),
    );
    let out = run(&env);
    assert_eq!(result(&out)["result"], ANSWER);
    let req = &server.requests()[0];
    assert_eq!(
        req.path,
        "/openai/v1/responses?api-version=2025-04-01-preview"
    );
    assert_eq!(req.header("api-key"), Some(KEY));
    assert_eq!(req.header("authorization"), None);
    assert_eq!(req.json()["model"], "my-gpt5-deployment");
}

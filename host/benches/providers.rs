//! Provider streaming benchmarks (a bench binary; numbers are printed, not
//! asserted), with the `openai-compatible` (Chat Completions) and
//! `openai-responses` (Responses) components against a loopback server
//! that sends a recorded-format SSE stream:
//! - overhead per streamed delta through host HTTP, the component's SSE and
//!   JSON parsing, the kernel's assembly and the event bus: the difference
//!   between a 10,000-delta and a 1-delta response, divided by 9,999;
//! - time from request dispatch (`provider.request.started`) to the first
//!   `provider.tokens` event.
//!
//! Run: `cargo bench -p stud --bench providers`.

#[path = "../../tests/common/http.rs"]
#[allow(dead_code)]
mod http;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{Reply, TestServer};
use serde_json::json;
use stud::kernel::{LaunchOptions, Launched, launch};
use stud::paths::StudHome;
use tokio_util::sync::CancellationToken;

const REPS: usize = 30;

/// The two OpenAI protocols the bundled providers speak.
#[derive(Clone, Copy)]
enum Api {
    Chat,
    Responses,
}

impl Api {
    fn provider(self) -> &'static str {
        match self {
            Api::Chat => "openai-compatible",
            Api::Responses => "openai-responses",
        }
    }
}

fn sse(api: Api, deltas: usize) -> String {
    match api {
        Api::Chat => chat_sse(deltas),
        Api::Responses => responses_sse(deltas),
    }
}

/// The same answer as Responses events: item added, text deltas, item
/// done, completed with usage.
fn responses_sse(deltas: usize) -> String {
    let mut s = String::new();
    let mut ev = |v: serde_json::Value| {
        s.push_str(&format!(
            "event: {}\ndata: {v}\n\n",
            v["type"].as_str().unwrap_or("")
        ));
    };
    ev(json!({"type": "response.created", "response": {"id": "r", "status": "in_progress"}}));
    ev(
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"id": "m", "type": "message", "role": "assistant", "content": []}}),
    );
    for i in 0..deltas {
        ev(
            json!({"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0, "delta": format!("tok{i} ")}),
        );
    }
    ev(
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"id": "m", "type": "message", "role": "assistant", "content": []}}),
    );
    ev(
        json!({"type": "response.completed", "response": {"id": "r", "status": "completed", "usage": {"input_tokens": 5, "output_tokens": 5}}}),
    );
    s
}

fn chat_sse(deltas: usize) -> String {
    let mut s = String::new();
    for i in 0..deltas {
        let chunk = json!({"id": "b", "object": "chat.completion.chunk", "model": "m", "choices": [{"index": 0, "delta": {"content": format!("tok{i} ")}, "finish_reason": null}]});
        s.push_str(&format!("data: {chunk}\n\n"));
    }
    s.push_str("data: {\"id\":\"b\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
    s.push_str("data: {\"id\":\"b\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":5}}\n\n");
    s.push_str("data: [DONE]\n\n");
    s
}

struct Setup {
    _home: tempfile::TempDir,
    _project: tempfile::TempDir,
    _server: TestServer,
    launched: Launched,
}

async fn setup(api: Api, deltas: usize) -> Setup {
    let body = sse(api, deltas);
    let replies = (0..REPS + 5)
        .map(|_| Reply::new(200, body.clone()).header("content-type", "text/event-stream"))
        .collect();
    let server = TestServer::start(replies);
    let home = tempfile::tempdir().expect("tmp");
    let project = tempfile::tempdir().expect("tmp");
    let p = api.provider();
    let settings = json!({
        "active": {"provider": p, "model": "m"},
        "providers": {p: {"baseUrl": server.url(), "requireKey": false, "models": [{"id": "m", "thinking": false}]}}
    });
    std::fs::write(home.path().join("settings.json"), settings.to_string()).expect("settings");
    let launched = launch(LaunchOptions {
        no_tools: true,
        ..LaunchOptions::headless(StudHome::at(home.path()), project.path().to_path_buf())
    })
    .await
    .expect("launch");
    Setup {
        _home: home,
        _project: project,
        _server: server,
        launched,
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Median turn time, and (with `watch`, through a subscriber that wakes
/// for every event) median dispatch-to-first-token.
async fn measure(api: Api, deltas: usize, watch: bool) -> (Duration, Duration) {
    let mut s = setup(api, deltas).await;
    let sub = s.launched.bus.subscribe_except(
        "bench",
        1 << 20,
        if watch { None } else { Some(|_: &str| true) },
    );
    let marks: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let log = marks.clone();
    let listener = tokio::spawn(async move {
        while let Some(ev) = sub.next().await {
            // Only the first token after each dispatch matters.
            let mut marks = log.lock().unwrap();
            let after_start = marks
                .last()
                .is_some_and(|(n, _)| n == "provider.request.started");
            if ev.name == "provider.request.started"
                || (ev.name == "provider.tokens" && after_start)
            {
                marks.push((ev.name.clone(), Instant::now()));
            }
            sub.ack();
        }
    });
    let cancel = CancellationToken::new();
    let mut turns = Vec::new();
    let mut first = Vec::new();
    for rep in 0..REPS + 3 {
        s.launched.session.clear_history();
        marks.lock().unwrap().clear();
        let t = Instant::now();
        let out = s.launched.session.run_turn("go", &cancel).await;
        let elapsed = t.elapsed();
        assert_eq!(out.status.as_str(), "ok", "{:?}", out.status);
        tokio::time::sleep(Duration::from_millis(5)).await;
        let m = marks.lock().unwrap().clone();
        let started = m.iter().find(|(n, _)| n == "provider.request.started");
        let token = m.iter().find(|(n, _)| n == "provider.tokens");
        if rep >= 3 {
            turns.push(elapsed);
            if let (Some((_, a)), Some((_, b))) = (started, token) {
                first.push(b.duration_since(*a));
            }
        }
    }
    s.launched.shutdown().await;
    listener.abort();
    let first = if first.is_empty() {
        Duration::ZERO
    } else {
        median(first)
    };
    (median(turns), first)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        for api in [Api::Chat, Api::Responses] {
            let p = api.provider();
            let (one, _) = measure(api, 1, false).await;
            let (many, _) = measure(api, 10_000, false).await;
            let (_, first_one) = measure(api, 1, true).await;
            let (_, first_many) = measure(api, 10_000, true).await;
            let per = (many.saturating_sub(one)).as_secs_f64() / 9_999.0 * 1e6;
            println!(
                "{p}/turn_1_delta         median {:>10.3} ms",
                one.as_secs_f64() * 1e3
            );
            println!(
                "{p}/turn_10000_deltas    median {:>10.3} ms",
                many.as_secs_f64() * 1e3
            );
            println!("{p}/per_delta_overhead          {per:>10.2} us");
            println!(
                "{p}/dispatch_to_first_event median {:>7.3} ms (1-delta), {:.3} ms (10k-delta)",
                first_one.as_secs_f64() * 1e3,
                first_many.as_secs_f64() * 1e3
            );
        }
    });
}

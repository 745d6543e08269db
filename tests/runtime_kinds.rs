//! Every bundled component loads, and a typed call into each kind works.

use crate::common;

use std::sync::Arc;

use common::{Recorder, find, load_bundled};
use stud::runtime::domain::HookOutcome;
use stud::runtime::domain::{
    ContentPart, HookSlot, Message, Phase, ResultPart, Role, Stage, ToolResult,
};
use stud::runtime::domain::{Request, RequestParams, StreamEvent, ThinkingLevel};
use stud::runtime::{CallError, Extension};

fn text(parts: &[ResultPart]) -> String {
    parts
        .iter()
        .map(|p| match p {
            ResultPart::Text(t) => t.clone(),
            ResultPart::Image(_) => "<image>".into(),
        })
        .collect()
}

/// Native code runs where it lies in the binary, and wasmtime knows code
/// by its address process-wide: the same bundled component loaded twice
/// by one runtime (a reload, a subagent) shares that code, and a second
/// runtime in the process copies it. All of them must work, side by side
/// and after one of them is gone.
#[tokio::test]
async fn one_bundled_component_serves_two_loads_and_two_runtimes_at_once() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("notes.txt"), "alpha\n").unwrap();
    let home = tempfile::tempdir().unwrap();
    let first = common::runtime();
    let second = common::runtime();
    let load = |rt: &Arc<stud::runtime::Runtime>| {
        common::load_bundled_into(
            rt.clone(),
            home.path(),
            project.path(),
            Arc::new(Recorder::default()),
        )
    };
    let (a, b, c) = (load(&first).await, load(&first).await, load(&second).await);
    for (i, exts) in [&a, &b, &c].into_iter().enumerate() {
        let out = find(exts, "list")
            .tool_invoke(&format!("c{i}"), "{}")
            .await
            .unwrap();
        assert_eq!(text(&out.content), "notes.txt");
    }
    let native = |rt: &Arc<stud::runtime::Runtime>| {
        rt.cache_stats()
            .native
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    assert!(native(&first) >= 2 && native(&second) >= 1);
    // The first load's code goes; the second's, on the same pages, runs on.
    drop(a);
    let out = find(&b, "list").tool_invoke("c9", "{}").await.unwrap();
    assert_eq!(text(&out.content), "notes.txt");
}

/// The attack on in-place code is a write to it. Read from the process's
/// own page table, not from the code that sets it: while bundled code
/// runs, no page of any embedded blob is writable, and (on x86-64 Linux,
/// where it runs in place) the running one is executable where it lies.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn embedded_native_code_is_never_writable_while_it_runs() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("notes.txt"), "alpha\n").unwrap();
    let exts = load_bundled(project.path(), Arc::new(Recorder::default())).await;
    let out = find(&exts, "list").tool_invoke("c1", "{}").await.unwrap();
    assert_eq!(text(&out.content), "notes.txt");

    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    // (start, end, permissions) of every mapping.
    let mappings: Vec<(usize, usize, String)> = maps
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (lo, hi) = f.next()?.split_once('-')?;
            let perms = f.next()?.to_string();
            Some((
                usize::from_str_radix(lo, 16).ok()?,
                usize::from_str_radix(hi, 16).ok()?,
                perms,
            ))
        })
        .collect();
    let over = |code: &[u8]| {
        let (a, b) = (code.as_ptr() as usize, code.as_ptr() as usize + code.len());
        mappings
            .iter()
            .filter(move |(lo, hi, _)| *lo < b && a < *hi)
            .map(|(_, _, p)| p.clone())
            .collect::<Vec<_>>()
    };
    for n in stud_native::NATIVE {
        for perms in over(n.code) {
            assert_eq!(&perms[1..2], "-", "a native blob is mapped {perms}");
        }
    }
    if cfg!(target_arch = "x86_64") {
        let list = stud::bundled::BUNDLED
            .iter()
            .find(|b| b.id == "list")
            .unwrap();
        let blob = stud_native::NATIVE
            .iter()
            .find(|n| n.wasm_sha256 == list.sha256)
            .unwrap();
        assert!(
            over(blob.code).iter().any(|p| p.starts_with("r-x")),
            "`list` ran, but not from its pages in the binary: {:?}",
            over(blob.code)
        );
    }
}

#[tokio::test]
async fn tools_read_and_list_work_on_a_real_project() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("notes.txt"), "alpha\nbeta\ngamma\n").unwrap();
    std::fs::create_dir(project.path().join("src")).unwrap();
    let exts = load_bundled(project.path(), Arc::new(Recorder::default())).await;

    let read = find(&exts, "read");
    let spec = read.tool_describe().await.unwrap();
    assert_eq!(spec.name, "read");
    assert!(spec.read_only);
    assert!(spec.parameters.contains("\"path\""));
    assert_eq!(
        read.tool_approval_key(r#"{"path":"notes.txt"}"#)
            .await
            .unwrap(),
        "notes.txt"
    );
    let out = read
        .tool_invoke("c1", r#"{"path":"notes.txt","offset":2,"limit":1}"#)
        .await
        .unwrap();
    assert_eq!(
        text(&out.content),
        "     2\tbeta\n[1 more lines; call read with offset 3 to continue]\n"
    );
    let details: serde_json::Value = serde_json::from_str(out.details.as_deref().unwrap()).unwrap();
    assert_eq!(details["lines"], 3);

    let missing = read
        .tool_invoke("c2", r#"{"path":"nope.txt"}"#)
        .await
        .unwrap_err();
    match missing {
        CallError::Guest { error, .. } => assert_eq!(error.code, "not-found"),
        other => panic!("expected a guest error, got {other}"),
    }

    let list = find(&exts, "list");
    let out = list.tool_invoke("c3", "{}").await.unwrap();
    assert_eq!(text(&out.content), "notes.txt\nsrc/");
}

fn user(text: &str) -> Message {
    Message {
        role: Role::User,
        content: vec![ContentPart::Text(text.into())],
    }
}

fn request(messages: Vec<Message>) -> Request {
    Request {
        system: None,
        messages,
        tools: vec![],
        params: RequestParams {
            model: "scripted".into(),
            max_tokens: None,
            temperature: None,
            thinking: ThinkingLevel::Off,
            cache_hints: false,
        },
    }
}

fn streamed_text(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

async fn drain(ext: &Extension, req: &Request) -> Vec<StreamEvent> {
    let mut stream = ext.provider_send(req).await.unwrap();
    let mut events = Vec::new();
    while let Some(batch) = ext.provider_next(&mut stream).await.unwrap() {
        events.extend(batch);
    }
    events
}

#[tokio::test]
async fn scripted_provider_streams_a_tool_call_then_an_answer() {
    let project = tempfile::tempdir().unwrap();
    let exts = load_bundled(project.path(), Arc::new(Recorder::default())).await;
    let scripted = find(&exts, "scripted");

    let models = scripted.provider_models().await.unwrap();
    assert_eq!(models[0].id, "scripted");
    assert!(models[0].capabilities.tool_calling);

    // Turn 1 of the demo script: text, then a `list` call.
    let events = drain(scripted, &request(vec![user("what is here?")])).await;
    let text = streamed_text(&events);
    assert_eq!(text, "I'll look at the files in this project.");
    let start = events
        .iter()
        .find_map(|e| {
            if let StreamEvent::ToolCallStart(s) = e {
                Some(s)
            } else {
                None
            }
        })
        .unwrap();
    assert_eq!(start.name, "list");
    let args: String = events
        .iter()
        .filter_map(|e| {
            if let StreamEvent::ToolCallDelta(d) = e {
                Some(d.arguments.as_str())
            } else {
                None
            }
        })
        .collect();
    assert_eq!(args, r#"{"path":"."}"#);
    assert!(matches!(events.last(), Some(StreamEvent::Finish(_))));

    // Turn 2 quotes the tool result.
    let mut messages = vec![user("what is here?")];
    messages.push(Message {
        role: Role::Tool,
        content: vec![ContentPart::ToolResult(ToolResult {
            call_id: start.id.clone(),
            name: "list".into(),
            content: vec![ResultPart::Text("Cargo.toml\nsrc/".into())],
            is_error: false,
        })],
    });
    let events = drain(scripted, &request(messages)).await;
    let text = streamed_text(&events);
    assert_eq!(text, "Here is what the project contains:\nCargo.toml\nsrc/");
    assert_eq!(scripted.state().as_deref(), Some(r#"{"next":2}"#));
}

fn slot(stage: Stage, phase: Phase) -> HookSlot {
    HookSlot { stage, phase }
}

#[tokio::test]
async fn hooks_guard_transform_and_observe() {
    let project = tempfile::tempdir().unwrap();
    let recorder = Arc::new(Recorder::default());
    let exts = load_bundled(project.path(), recorder.clone()).await;

    let guard = find(&exts, "protect-paths");
    let pre = slot(Stage::ToolCall, Phase::Pre);
    let deny = guard
        .hook_run(
            pre,
            r#"{"call":{"name":"read","arguments":{"path":"config/.env"}}}"#,
        )
        .await
        .unwrap();
    match deny {
        HookOutcome::Deny(e) => {
            assert_eq!(e.code, "path-protected");
            assert!(e.message.contains("config/.env"), "{}", e.message);
        }
        other => panic!("expected deny, got {other:?}"),
    }
    let allow = guard
        .hook_run(
            pre,
            r#"{"call":{"name":"read","arguments":{"path":"src/main.rs"}}}"#,
        )
        .await
        .unwrap();
    assert!(matches!(allow, HookOutcome::Allow));
    // What it cannot read as a call it does not let through.
    let unreadable = guard
        .hook_run(pre, r#"{"path":"config/.env"}"#)
        .await
        .unwrap();
    match unreadable {
        HookOutcome::Deny(e) => assert_eq!(e.code, "payload-unreadable"),
        other => panic!("expected deny, got {other:?}"),
    }

    let redact = find(&exts, "redact-secrets");
    let payload = r#"{"call":{"name":"bash"},"result":{"content":[{"type":"text","text":"key=sk-abcdefghijklmnopqrstuvwxyz0123 ok"}]}}"#;
    let out = redact
        .hook_run(slot(Stage::ToolCall, Phase::Post), payload)
        .await
        .unwrap();
    let HookOutcome::Transform(json) = out else {
        panic!("expected transform")
    };
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["result"]["content"][0]["text"], "key=[REDACTED] ok");

    let counter = find(&exts, "stage-counter");
    for s in [
        slot(Stage::ReceiveInput, Phase::Pre),
        slot(Stage::Render, Phase::Post),
        slot(Stage::Render, Phase::Post),
    ] {
        assert!(matches!(
            counter.hook_run(s, "{}").await.unwrap(),
            HookOutcome::Observed
        ));
    }
    let state: serde_json::Value = serde_json::from_str(&counter.state().unwrap()).unwrap();
    assert_eq!(state["counts"]["render.post"], 2);
    assert_eq!(state["counts"]["receive-input.pre"], 1);
    let events = recorder.events.lock().unwrap().clone();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].0, "ext.stage-counter.counts");
}

/// Linking ahead is taken on once per extension: a second claim (another
/// link lane) is refused while the first has it queued or is linking it,
/// and once it is linked, however it was linked; so no lane thread starts
/// only to wait for another one.
#[tokio::test]
async fn a_link_ahead_is_taken_on_once() {
    let rt = common::runtime();
    let queued = common::load_fixture(&rt, "hostile", None, None).expect("loads");
    assert!(queued.claim_link(), "the first claim takes it on");
    assert!(
        !queued.claim_link(),
        "taken on: a second lane is not needed"
    );
    assert!(!queued.is_linked(), "a claim links nothing by itself");
    queued.link_now().expect("links");
    assert!(queued.is_linked());
    assert!(!queued.claim_link(), "linked: nothing to take on");
    let called = common::load_fixture(&rt, "hostile", None, None).expect("loads");
    called.link_now().expect("links at its first use");
    assert!(
        !called.claim_link(),
        "linked without a claim: nothing to take on"
    );
}

/// The first call of an extension a link lane took on waits for that
/// lane (no thread of its own to link it again, or to wait on); a claim
/// the lane gives up (it never ran, or panicked) leaves the call to link
/// it itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_call_waits_for_the_lane_that_took_its_link_on() {
    use std::time::Duration;
    let rt = common::runtime();
    let answer = |out: Result<stud::runtime::domain::ToolOutput, CallError>| {
        text(&out.expect("the call answers").content)
    };

    // An extension whose link a lane claimed, and a first call of it.
    let claimed_call = |wait: u64| {
        let ext = Arc::new(common::load_fixture(&rt, "hostile", None, None).expect("loads"));
        assert!(ext.claim_link());
        let call = tokio::spawn({
            let e = ext.clone();
            async move { e.tool_invoke("1", r#"{"mode":"ok"}"#).await }
        });
        async move {
            tokio::time::sleep(Duration::from_millis(wait)).await;
            (ext, call)
        }
    };

    let (queued, call) = claimed_call(200).await;
    assert!(!call.is_finished(), "the call waits for the lane");
    assert!(!queued.is_linked(), "and does not link it itself");
    let lane = queued.clone();
    std::thread::spawn(move || lane.link_now())
        .join()
        .expect("the lane")
        .expect("links");
    assert_eq!(answer(call.await.expect("joined")), "alive");

    let (given_up, call) = claimed_call(100).await;
    assert!(!call.is_finished(), "the call waits for the lane");
    given_up.release_link_claim();
    assert_eq!(answer(call.await.expect("joined")), "alive");
    assert!(given_up.is_linked(), "the call linked it");
}

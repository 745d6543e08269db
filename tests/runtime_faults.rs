//! Misbehaving guests give typed errors naming the extension; the host and
//! the other extensions keep working; the slot survives a restart.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Recorder, find, load_bundled, load_fixture, runtime};
use stud::runtime::{CallError, LoadError, Runtime, RuntimeOptions};

#[tokio::test]
async fn trap_panic_loop_and_alloc_are_contained() {
    let rt = runtime();
    let hostile = load_fixture(&rt, "hostile", None, None).expect("hostile loads");
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "still here\n").unwrap();
    let others = load_bundled(project.path(), Arc::new(Recorder::default())).await;
    let read = find(&others, "read");

    assert_eq!(
        hostile
            .tool_invoke("1", r#"{"mode":"count"}"#)
            .await
            .unwrap()
            .content
            .len(),
        1
    );
    hostile
        .tool_invoke("2", r#"{"mode":"count"}"#)
        .await
        .unwrap();

    match hostile
        .tool_invoke("3", r#"{"mode":"trap"}"#)
        .await
        .unwrap_err()
    {
        CallError::Trap { id, func, detail } => {
            assert_eq!(id.as_str(), "hostile");
            assert_eq!(func, "invoke");
            assert!(detail.contains("unreachable"), "{detail}");
        }
        other => panic!("expected trap, got {other}"),
    }

    match hostile
        .tool_invoke("4", r#"{"mode":"panic"}"#)
        .await
        .unwrap_err()
    {
        CallError::Trap { detail, .. } => assert!(
            detail.contains("hostile fixture panicked on purpose"),
            "{detail}"
        ),
        other => panic!("expected trap, got {other}"),
    }

    // The runaway loop is stopped by the epoch deadline (500 ms in its manifest).
    let started = Instant::now();
    let err = hostile
        .tool_invoke("5", r#"{"mode":"loop"}"#)
        .await
        .unwrap_err();
    let took = started.elapsed();
    match &err {
        CallError::Timeout { id, timeout_ms, .. } => {
            assert_eq!(id.as_str(), "hostile");
            assert_eq!(*timeout_ms, 500);
        }
        other => panic!("expected timeout, got {other}"),
    }
    assert!(err.to_string().contains("`hostile`"));
    assert!(
        took >= Duration::from_millis(500),
        "stopped before its deadline: {took:?}"
    );
    assert!(took < Duration::from_secs(30), "not stopped: {took:?}");

    match hostile
        .tool_invoke("6", r#"{"mode":"alloc"}"#)
        .await
        .unwrap_err()
    {
        CallError::MemoryLimit { id, limit_mib, .. } => {
            assert_eq!(id.as_str(), "hostile");
            assert_eq!(limit_mib, 32);
        }
        other => panic!("expected memory limit, got {other}"),
    }

    // A fresh instance answers, and the state slot survived four faults.
    assert_eq!(
        common_text(hostile.tool_invoke("7", r#"{"mode":"ok"}"#).await.unwrap()),
        "alive"
    );
    assert_eq!(
        common_text(
            hostile
                .tool_invoke("8", r#"{"mode":"count"}"#)
                .await
                .unwrap()
        ),
        "3"
    );
    assert!(
        hostile.instantiations() >= 5,
        "restarted after each fault: {}",
        hostile.instantiations()
    );

    // Other extensions were never affected.
    let out = read.tool_invoke("9", r#"{"path":"a.txt"}"#).await.unwrap();
    assert!(common_text(out).contains("still here"));
}

fn common_text(out: stud::runtime::domain::ToolOutput) -> String {
    out.content
        .iter()
        .map(|p| match p {
            stud::runtime::domain::ResultPart::Text(t) => t.clone(),
            _ => String::new(),
        })
        .collect()
}

#[tokio::test]
async fn cancel_stops_a_running_guest() {
    let rt = runtime();
    let manifest = std::fs::read_to_string(common::fixture_dir("hostile").join("extension.toml"))
        .unwrap()
        .replace("timeout-ms = 500", "timeout-ms = 600000");
    let hostile = Arc::new(load_fixture(&rt, "hostile", Some(&manifest), None).unwrap());
    hostile.start().await.unwrap();
    let h = hostile.clone();
    let call = tokio::spawn(async move { h.tool_invoke("1", r#"{"mode":"loop"}"#).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    hostile.cancel();
    let err = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("cancel reached the guest")
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, CallError::Cancelled { .. }), "{err}");
    assert_eq!(
        common_text(hostile.tool_invoke("2", r#"{"mode":"ok"}"#).await.unwrap()),
        "alive"
    );
}

#[tokio::test]
async fn unsupported_contract_is_refused_before_instantiation() {
    let rt = runtime();
    let err = load_fixture(&rt, "future-contract", None, None)
        .err()
        .expect("must be refused");
    match &err {
        LoadError::ContractUnsupported {
            id,
            built_for,
            supported,
        } => {
            assert_eq!(id.as_str(), "future-contract");
            assert_eq!(built_for, "0.9.0");
            assert_eq!(supported, "0.1.0 to 0.1.4");
        }
        other => panic!("expected a contract error, got {other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("0.9.0") && text.contains("0.1.0 to 0.1.4"),
        "{text}"
    );
    // Refused before compiling: nothing was compiled.
    assert_eq!(
        rt.cache_stats()
            .compiled
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
}

#[tokio::test]
async fn a_component_declared_as_the_wrong_kind_is_refused() {
    let rt = runtime();
    let manifest = std::fs::read_to_string(common::fixture_dir("hostile").join("extension.toml"))
        .unwrap()
        .replace("kind = \"tool\"", "kind = \"logger\"");
    let err = load_fixture(&rt, "hostile", Some(&manifest), None)
        .err()
        .expect("refused");
    assert!(matches!(err, LoadError::MissingExport { .. }), "{err}");
    assert!(
        err.to_string().contains("stud:extension/logger-api"),
        "{err}"
    );
}

/// A bundled component (bytes inside the binary, digest recorded at build
/// time) is checked when first used: bytes that do not have the recorded
/// digest never run, and every call says why.
#[tokio::test]
async fn a_bundled_component_with_other_bytes_is_refused_at_first_use() {
    let rt = runtime();
    let spec = common::fixture_spec("counter", None, None);
    let bytes: &'static [u8] = Box::leak(spec.bytes.to_vec().into_boxed_slice());
    let ext = rt
        .load(stud::runtime::LoadSpec {
            bytes: stud::runtime::ComponentBytes::Embedded(bytes),
            expected_digest: Some(stud::digest::Sha256Digest::of(b"what the build recorded")),
            ..spec
        })
        .expect("checked at first use, not at load");
    for _ in 0..2 {
        let err = ext.start().await.expect_err("refused");
        let text = err.to_string();
        assert!(
            matches!(err, stud::runtime::CallError::Unloadable { .. })
                && text.contains("integrity check failed")
                && text.contains("`counter`"),
            "{text}"
        );
    }
    assert_eq!(ext.instantiations(), 0, "no guest code ran");
    assert_eq!(
        rt.cache_stats()
            .compiled
            .load(std::sync::atomic::Ordering::Relaxed),
        0,
        "nothing was compiled"
    );
}

#[tokio::test]
async fn a_changed_component_fails_its_integrity_check() {
    let rt = runtime();
    let err = rt
        .load(stud::runtime::LoadSpec {
            expected_digest: Some(stud::digest::Sha256Digest::of(b"other bytes")),
            ..common::fixture_spec("hostile", None, None)
        })
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(matches!(err, LoadError::Integrity { .. }));
    assert!(
        text.contains("`hostile`")
            && text.contains("expected sha256:")
            && text.contains("found sha256:"),
        "{text}"
    );
}

#[tokio::test]
async fn a_call_abandoned_mid_flight_does_not_break_the_next_one() {
    let rt = runtime();
    let manifest = std::fs::read_to_string(common::fixture_dir("hostile").join("extension.toml"))
        .unwrap()
        .replace("timeout-ms = 500", "timeout-ms = 600000");
    let hostile = Arc::new(load_fixture(&rt, "hostile", Some(&manifest), None).unwrap());
    let h = hostile.clone();
    let task = tokio::spawn(async move { h.tool_invoke("1", r#"{"mode":"loop"}"#).await });
    // In the guest's loop, not still compiling (see the next test for that).
    until_instantiated(&hostile, 1).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Dropping the call's future leaves its instance unusable...
    task.abort();
    let _ = task.await;
    // ...so the next call must get a fresh one.
    let out = hostile.tool_invoke("2", r#"{"mode":"ok"}"#).await.unwrap();
    assert_eq!(common_text(out), "alive");
    assert_eq!(hostile.instantiations(), 2);
}

/// A call dropped while its component is still being compiled (its first
/// use, no compile cache) stops that call only: the lane's stop must not
/// be read as the next call's, which compiles, instantiates and answers.
#[tokio::test]
async fn a_call_abandoned_while_its_component_compiles_does_not_cancel_the_next_one() {
    let rt = Runtime::new(RuntimeOptions {
        cache: None,
        pooling: true,
    })
    .expect("runtime");
    let hostile = Arc::new(load_fixture(&rt, "hostile", None, None).expect("hostile loads"));
    let h = hostile.clone();
    let task = tokio::spawn(async move { h.tool_invoke("1", r#"{"mode":"ok"}"#).await });
    // Long enough for the call to start compiling, far shorter than a
    // compile of the component.
    tokio::time::sleep(Duration::from_millis(2)).await;
    task.abort();
    assert!(
        task.await.is_err(),
        "the first call was dropped, not finished"
    );
    assert_eq!(hostile.instantiations(), 0, "dropped before its instance");
    let out = hostile.tool_invoke("2", r#"{"mode":"ok"}"#).await;
    assert_eq!(common_text(out.expect("the next call answers")), "alive");
    assert_eq!(hostile.instantiations(), 1);
}

/// Wait until `ext` has made `n` instances: the calls that made them hold
/// their lanes.
async fn until_instantiated(ext: &stud::runtime::Extension, n: u64) {
    while ext.instantiations() < n {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Two calls of one tool run on two instances of its pool: the second
/// answers while the first still spins (with one instance it would wait
/// for the first's deadline). Stopping one call leaves the other to run
/// to its own end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_pool_runs_calls_at_once_and_stops_them_one_by_one() {
    use stud::runtime::extension::CallStop;
    let rt = runtime();
    let hostile = Arc::new(load_fixture(&rt, "hostile", None, None).expect("hostile loads"));
    assert_eq!(hostile.pool_size(), 4, "a tool's default pool");
    // A manifest cannot multiply its memory by asking for a pool: eight
    // instances of 4096 MiB are one.
    let greedy = std::fs::read_to_string(common::fixture_dir("hostile").join("extension.toml"))
        .unwrap()
        .replace("memory-mib = 32", "memory-mib = 4096\ninstances = 8");
    let greedy = load_fixture(&rt, "hostile", Some(&greedy), None).expect("loads");
    assert_eq!(greedy.pool_size(), 1);

    let spinning = tokio::spawn({
        let h = hostile.clone();
        async move { h.tool_invoke("1", r#"{"mode":"loop"}"#).await }
    });
    until_instantiated(&hostile, 1).await;
    let quick = hostile.tool_invoke("2", r#"{"mode":"ok"}"#).await.unwrap();
    assert_eq!(common_text(quick), "alive");
    assert!(
        !spinning.is_finished(),
        "the second call waited for the first"
    );
    assert!(matches!(
        spinning.await.unwrap(),
        Err(CallError::Timeout { .. })
    ));

    let hostile = Arc::new(load_fixture(&rt, "hostile", None, None).expect("hostile loads"));
    let other = tokio::spawn({
        let h = hostile.clone();
        async move { h.tool_invoke("3", r#"{"mode":"loop"}"#).await }
    });
    until_instantiated(&hostile, 1).await;
    let stop = CallStop::default();
    let stopped = tokio::spawn({
        let (h, stop) = (hostile.clone(), stop.clone());
        async move { stop.scope(h.tool_invoke("4", r#"{"mode":"loop"}"#)).await }
    });
    until_instantiated(&hostile, 2).await;
    stop.cancel();
    let err = stopped.await.unwrap().unwrap_err();
    assert!(matches!(err, CallError::Cancelled { .. }), "{err}");
    let err = other.await.unwrap().unwrap_err();
    assert!(
        matches!(err, CallError::Timeout { .. }),
        "the sibling call ran to its deadline: {err}"
    );
}

//! The manifest writer against the real `filesystem` store: a session's
//! first snapshot is written at once, a later one waits to settle and only
//! the newest is written, and a flush writes what is waiting.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Recorder, find, load_bundled_at};
use stud::kernel::Bus;
use stud::kernel::manifest_writer::ManifestWriter;
use stud::runtime::Extension;

fn manifest(n: u32) -> String {
    format!(r#"{{"session_id":"s1","turns":{n}}}"#)
}

async fn stored_turns(store: &Extension) -> serde_json::Value {
    let data = store.store_read("s1").await.expect("read back");
    let v: serde_json::Value = serde_json::from_str(&data.manifest).expect("a JSON manifest");
    v["turns"].clone()
}

/// Wait until `store` made a call after `before` calls, or `limit` passed.
async fn wait_for_call(store: &Extension, before: u64, limit: Duration) -> u64 {
    let deadline = Instant::now() + limit;
    while store.health().calls == before && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    store.health().calls
}

#[tokio::test]
async fn snapshots_settle_and_only_the_newest_is_written() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let exts = load_bundled_at(home.path(), project.path(), Arc::new(Recorder::default())).await;
    let store = find(&exts, "filesystem").clone();
    store
        .store_append("s1", &[r#"{"type":"note"}"#.to_string()])
        .await
        .expect("append");
    let bus = Bus::new();

    // A settle far longer than the test: what is written, is written for
    // another reason.
    let writer = ManifestWriter::settling(Duration::from_secs(600));
    // The first snapshot of a session does not wait.
    let before = store.health().calls;
    writer.write(store.clone(), "s1".into(), manifest(1), bus.clone());
    let after = wait_for_call(&store, before, Duration::from_secs(30)).await;
    assert_eq!(after, before + 1, "the first snapshot waited to settle");
    writer.flush().await;
    assert_eq!(store.health().calls, before + 1, "written twice");
    assert_eq!(stored_turns(&store).await, 1);

    // A later one waits; a newer one replaces it while it waits, and a
    // flush writes that one.
    let before = store.health().calls;
    writer.write(store.clone(), "s1".into(), manifest(2), bus.clone());
    writer.write(store.clone(), "s1".into(), manifest(3), bus.clone());
    let after = wait_for_call(&store, before, Duration::from_millis(300)).await;
    assert_eq!(after, before, "a later snapshot did not wait to settle");
    writer.flush().await;
    assert_eq!(
        store.health().calls,
        before + 1,
        "one write for two snapshots"
    );
    assert_eq!(stored_turns(&store).await, 3);

    // Unflushed, a snapshot is written once it settled.
    let writer = ManifestWriter::settling(Duration::from_millis(50));
    writer.write(store.clone(), "s1".into(), manifest(4), bus.clone());
    writer.flush().await;
    let before = store.health().calls;
    writer.write(store.clone(), "s1".into(), manifest(5), bus.clone());
    let after = wait_for_call(&store, before, Duration::from_secs(30)).await;
    assert_eq!(after, before + 1, "the settled snapshot was never written");
    assert_eq!(stored_turns(&store).await, 5);
}

//! The session-store contract as one suite that every store must pass:
//! the operations the kernel relies on for resume, `-c`, `session
//! list|show|delete`, workflows' positions, subagent trees and the audit
//! trail. [`suite`] takes a way to open the store (twice over the same
//! place, as two processes would), so a second store runs the very same
//! checks; here it runs on the bundled `filesystem` store and on the
//! `postgres` store against a real PostgreSQL server.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::common::{Recorder, find, load_bundled_at};
use serde_json::json;
use stud::runtime::Extension;

type Open<'a> = &'a dyn Fn() -> Pin<Box<dyn Future<Output = Arc<Extension>> + 'a>>;

fn manifest(id: &str, project: &str, title: &str, updated: u64) -> String {
    json!({
        "session_id": id, "store": "any", "created_ms": 1000, "updated_ms": updated,
        "project_root": project, "security_mode": "ask", "provider": "p", "model": "m",
        "extensions": [], "state": {}, "usage": {}, "cost_usd": 0.0, "turns": 1,
        "messages": 1, "title": title
    })
    .to_string()
}

/// The contract, on the store `open` opens.
pub(crate) async fn suite(open: Open<'_>) {
    let a = open().await;
    // Records come back in order, byte for byte: text with newlines and
    // quotes, non-ASCII, and one large record.
    let large = json!({"type": "message", "text": "x".repeat(1 << 20)}).to_string();
    let batch = vec![
        json!({"type": "message", "text": "line one\nline \"two\""}).to_string(),
        json!({"type": "trace", "entries": [{"kind": "input", "text": "ünï ✓"}]}).to_string(),
    ];
    a.store_append("s-one", &batch).await.expect("append");
    a.store_append("s-one", std::slice::from_ref(&large))
        .await
        .expect("append large");
    a.store_write_manifest("s-one", &manifest("s-one", "/p/one", "first", 2000))
        .await
        .expect("manifest");
    a.store_write_manifest("s-one", &manifest("s-one", "/p/one", "first, again", 3000))
        .await
        .expect("manifest replaced");
    let data = a.store_read("s-one").await.expect("read");
    assert_eq!(data.records.len(), 3);
    assert_eq!(&data.records[..2], &batch[..]);
    assert_eq!(data.records[2], large);
    let m: serde_json::Value = serde_json::from_str(&data.manifest).unwrap();
    assert_eq!(m["title"], "first, again", "the newest manifest");

    // Another opening over the same place (another process) sees it all,
    // and what it writes the first one sees.
    let b = open().await;
    assert_eq!(
        b.store_read("s-one").await.expect("read").records,
        data.records
    );
    b.store_append(
        "s-two",
        &[json!({"type": "workflow", "position": {}}).to_string()],
    )
    .await
    .expect("append from the other");
    b.store_write_manifest("s-two", &manifest("s-two", "/p/one", "second", 4000))
        .await
        .expect("manifest from the other");
    assert_eq!(a.store_read("s-two").await.expect("read").records.len(), 1);
    // An append of no records claims a session and stores nothing.
    a.store_append("s-one", &[]).await.expect("claim");
    assert_eq!(a.store_read("s-one").await.expect("read").records.len(), 3);

    // Listings carry what the manifest says.
    for i in 0..20 {
        let id = format!("s-many-{i}");
        b.store_append(&id, &[json!({"type": "message"}).to_string()])
            .await
            .unwrap();
        b.store_write_manifest(&id, &manifest(&id, "/p/two", &format!("n{i}"), 5000 + i))
            .await
            .unwrap();
    }
    let list = a.store_list().await.expect("list");
    assert_eq!(list.len(), 22, "{list:?}");
    // Newest first.
    assert!(
        list.windows(2).all(|w| w[0].updated_ms >= w[1].updated_ms),
        "{list:?}"
    );
    let one = list.iter().find(|s| s.session_id == "s-one").unwrap();
    assert_eq!(
        (
            one.project_root.as_str(),
            one.title.as_str(),
            one.created_ms
        ),
        ("/p/one", "first, again", 1000)
    );

    // Unknown and malformed ids are refused by name; an id is never a path.
    let err = a.store_read("s-none").await.unwrap_err().to_string();
    assert!(err.contains("s-none"), "{err}");
    for bad in ["../escape", "a/b", "", "..", "s one"] {
        let err = a
            .store_append(bad, &["{}".to_string()])
            .await
            .expect_err(bad)
            .to_string();
        assert!(err.contains("not a session id"), "{bad}: {err}");
    }

    // Delete takes the session away for every opening.
    a.store_delete("s-one").await.expect("delete");
    assert!(b.store_read("s-one").await.is_err());
    assert!(
        !b.store_list()
            .await
            .unwrap()
            .iter()
            .any(|s| s.session_id == "s-one")
    );
}

#[tokio::test]
async fn the_filesystem_store_keeps_the_contract() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let open = || -> Pin<Box<dyn Future<Output = Arc<Extension>> + '_>> {
        Box::pin(async {
            let exts =
                load_bundled_at(home.path(), project.path(), Arc::new(Recorder::default())).await;
            find(&exts, "filesystem").clone()
        })
    };
    suite(&open).await;
    // Nothing was written outside the store's own folder of the home.
    assert!(std::fs::read_dir(project.path()).unwrap().next().is_none());
}

/// Settings that point the `postgres` store at `url`, its password from a
/// file (a secret reference, as a person would set it up).
pub(crate) fn postgres_settings(url: &str, password_file: &std::path::Path) -> serde_json::Value {
    json!({
        "sessionStores": {"postgres": {"url": url}},
        "secrets": {"postgres": {"PGPASSWORD": {"file": password_file}}}
    })
}

/// The bundled `postgres` store loaded with `settings` (as global settings).
pub(crate) async fn load_postgres(
    home: &std::path::Path,
    project: &std::path::Path,
    settings: &serde_json::Value,
) -> Result<Arc<Extension>, String> {
    use stud::extensions::{Discovery, Registry, UserGrants};
    let settings = stud::config::Settings::from_value(settings).expect("settings");
    let (grants, _) = UserGrants::from_settings(&settings);
    let registry = Arc::new(Registry {
        runtime: crate::common::runtime(),
        home: stud::paths::StudHome::at(home),
        project_dir: project.to_path_buf(),
        services: Arc::new(Recorder::default()),
        configs: settings.extension_configs(),
        fallback_configs: settings.extension_configs(),
        grants,
    });
    let mut discovery = Discovery::scan(&registry.home, &stud::extensions::ProjectScope::None);
    discovery
        .found
        .retain(|d| d.manifest.id.as_str() == "postgres");
    let report = registry.load_all(discovery.found).await;
    if let Some((_, e)) = report.failed.first() {
        return Err(e.to_string());
    }
    report
        .loaded
        .into_iter()
        .next()
        .ok_or_else(|| "no postgres store was found".to_string())
}

#[tokio::test]
async fn the_postgres_store_keeps_the_contract() {
    let pg = crate::common::pg::Pg::shared();
    let db = pg.create_db("contract");
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let pw = home.path().join("pgpass");
    std::fs::write(&pw, crate::common::pg::Pg::PASSWORD).unwrap();
    let settings = postgres_settings(&pg.url(&db), &pw);
    let open = || -> Pin<Box<dyn Future<Output = Arc<Extension>> + '_>> {
        Box::pin(async {
            load_postgres(home.path(), project.path(), &settings)
                .await
                .expect("the postgres store loads")
        })
    };
    suite(&open).await;
    // It all went to the database: the store wrote nothing on disk.
    assert!(std::fs::read_dir(project.path()).unwrap().next().is_none());
    assert!(!home.path().join("data").join("postgres").exists());
    assert_eq!(pg.psql(&db, "SELECT version FROM stud_schema"), "1");
}

//! The session stores against real databases: SQLite in a temporary file, and Postgres from
//! `CRAG_TEST_POSTGRES_URL` or, when it is unset, a throwaway cluster started by
//! `scripts/pg-cluster.sh` (the test fails, never passes, when no Postgres can be had).

use crag_ports::testsuite::postgres_url;
use std::sync::Arc;
use std::time::Duration;

use crag_core::{CachedNode, SessionUpdate, TraversedSymbol};
use crag_ports::testsuite::session_store_suite;
use crag_ports::SessionStore;
use crag_sessions::{
    new_session_id, now_ms, spawn_sweeper, PostgresSessionStore, SessionStoreConfig,
    SqliteSessionStore,
};
use sqlx::Connection as _;

#[tokio::test]
async fn sqlite_passes_the_session_suite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteSessionStore::open(
        &dir.path().join("s/sessions.sqlite"),
        SessionStoreConfig::default(),
    )
    .await
    .unwrap();
    session_store_suite(&store).await;
}

#[tokio::test]
async fn sqlite_sessions_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.sqlite");
    let id = new_session_id().unwrap();
    let update = SessionUpdate {
        nodes: vec![CachedNode {
            chunk_id: "a#0".into(),
            source: "a.rs".into(),
            text: "fn a() {}".into(),
        }],
        not_found: vec!["verify_user".into()],
        symbols: vec![TraversedSymbol {
            symbol: "a::a".into(),
            definition: vec!["a#0".into()],
            neighbours: vec!["b#0".into(), "c#1".into()],
        }],
        turn: None,
    };
    {
        let store = SqliteSessionStore::open(&path, SessionStoreConfig::default())
            .await
            .unwrap();
        store.save(id, &update, 50, now_ms()).await.unwrap();
    }
    let reopened = SqliteSessionStore::open(&path, SessionStoreConfig::default())
        .await
        .unwrap();
    let s = reopened
        .load(id)
        .await
        .unwrap()
        .expect("kept across a restart");
    assert_eq!(s.not_found, vec!["verify_user".to_owned()]);
    assert_eq!(s.nodes, update.nodes);
    assert_eq!(s.symbols, update.symbols);
}

#[tokio::test]
async fn the_sweeper_expires_idle_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn SessionStore> = Arc::new(
        SqliteSessionStore::open(&dir.path().join("s.sqlite"), SessionStoreConfig::default())
            .await
            .unwrap(),
    );
    let (old, fresh) = (new_session_id().unwrap(), new_session_id().unwrap());
    assert_ne!(old, fresh, "random ids");
    store
        .save(old, &SessionUpdate::default(), 50, now_ms() - 60_000)
        .await
        .unwrap();
    store
        .save(fresh, &SessionUpdate::default(), 50, now_ms())
        .await
        .unwrap();
    let sweeper = spawn_sweeper(
        Arc::clone(&store),
        Duration::from_millis(20),
        Duration::from_secs(30),
    );
    let mut expired = false;
    for _ in 0..250 {
        if store.load(old).await.unwrap().is_none() {
            expired = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sweeper.abort();
    assert!(expired, "the idle session was swept");
    assert!(
        store.load(fresh).await.unwrap().is_some(),
        "the fresh one stays"
    );
}

/// A fresh, empty database on the server, and its URL.
async fn fresh_postgres_database() -> String {
    let url = postgres_url();
    let name = format!("crag_test_{}", new_session_id().unwrap());
    let mut admin = sqlx::PgConnection::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}"));
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await
        .unwrap();
    admin.close().await.unwrap();
    // Swap the database path of the URL, keeping its query (`?host=/socket/dir`).
    let (base, query) = url
        .split_once('?')
        .map_or((url.as_str(), ""), |(b, q)| (b, q));
    let server = base.rsplit_once('/').map_or(base, |(s, _)| s);
    if query.is_empty() {
        format!("{server}/{name}")
    } else {
        format!("{server}/{name}?{query}")
    }
}

#[tokio::test]
async fn postgres_passes_the_session_suite() {
    let url = fresh_postgres_database().await;
    let store = PostgresSessionStore::connect(&url, SessionStoreConfig::default())
        .await
        .unwrap();
    session_store_suite(&store).await;
}

#[tokio::test]
async fn postgres_sessions_survive_a_reconnect_and_bad_urls_are_refused() {
    let url = fresh_postgres_database().await;
    let id = new_session_id().unwrap();
    {
        let store = PostgresSessionStore::connect(&url, SessionStoreConfig::default())
            .await
            .unwrap();
        let update = SessionUpdate {
            not_found: vec!["class Ghost".into()],
            ..SessionUpdate::default()
        };
        store.save(id, &update, 50, now_ms()).await.unwrap();
    }
    let again = PostgresSessionStore::connect(&url, SessionStoreConfig::default())
        .await
        .unwrap();
    let s = again.load(id).await.unwrap().expect("kept");
    assert_eq!(s.not_found, vec!["class Ghost".to_owned()]);

    let err = PostgresSessionStore::connect("not a url", SessionStoreConfig::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), crag_ports::ErrorKind::InvalidInput, "{err}");
}

use std::sync::Arc;

use crate::Config;
use crag_engine::{Engine, EngineConfig};
use crag_ports::fakes::{HashEmbedder, InMemoryKeywordIndex, InMemoryVectorIndex};

use super::*;

fn api_with(config: &Config, tokens: TokenSet) -> Api {
    let engine = Engine::new(
        Arc::new(HashEmbedder::new(32)),
        Arc::new(InMemoryVectorIndex::new(32)),
        Arc::new(InMemoryKeywordIndex::default()),
        EngineConfig::default(),
    )
    .unwrap();
    Api::new(engine, config, tokens)
}

fn api() -> Api {
    api_with(&Config::default(), TokenSet::default())
}

fn doc(id: &str, text: &str) -> DocumentParams {
    DocumentParams {
        id: id.into(),
        text: text.into(),
        ..DocumentParams::default()
    }
}

#[tokio::test]
async fn ingest_reports_refused_documents_by_position_and_ingests_the_rest() {
    let api = api();
    let outcome = api
        .ingest(vec![
            doc("a", "Rust crates compile to native code."),
            doc("", "no id"),
            doc("a", "a second a"),
            doc("b", "Tantivy is a search library."),
        ])
        .await
        .unwrap();
    assert_eq!(outcome.received, 4);
    assert_eq!(outcome.report.as_ref().unwrap().documents_added, 2);
    let refused: Vec<(usize, &str)> = outcome
        .errors
        .iter()
        .map(|e| (e.index, e.message.as_str()))
        .collect();
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert_eq!(refused[0].0, 1);
    assert_eq!(refused[1], (2, "duplicate id in this request"));
    assert_eq!(api.stats().await.unwrap().documents, 2);

    let none = api.ingest(vec![doc("", "")]).await.unwrap();
    assert!(none.report.is_none());
    assert_eq!(none.errors.len(), 1);
}

#[tokio::test]
async fn queries_are_validated_then_run() {
    let api = api();
    api.ingest(vec![doc("a", "Rust crates compile to native code.")])
        .await
        .unwrap();
    let (request, outcome) = api
        .query(&QueryParams {
            query: "rust crates".into(),
            top_k: Some(3),
            use_crag: Some(false),
            ..QueryParams::default()
        })
        .await
        .unwrap();
    assert_eq!(request.top_k.get(), 3);
    assert!(!outcome.artifacts.is_empty());
    let err = api
        .query(&QueryParams {
            query: "  ".into(),
            ..QueryParams::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::InvalidArgument);
    assert!(err.message.contains("query"), "{err}");
}

#[tokio::test]
async fn deleting_an_unknown_document_is_not_found_and_bad_ids_are_invalid() {
    let api = api();
    api.ingest(vec![doc("a", "text")]).await.unwrap();
    api.delete("a").await.unwrap();
    let err = api.delete("a").await.unwrap_err();
    assert_eq!(err.code, Code::NotFound);
    assert!(err.message.contains("`a`"), "{err}");
    let err = api.delete("").await.unwrap_err();
    assert_eq!(err.code, Code::InvalidArgument);
}

#[tokio::test]
async fn requests_past_the_limit_are_shed_not_queued() {
    let mut config = Config::default();
    config.server.max_concurrent_requests = 1;
    config.server.request_timeout_ms = 50;
    let api = api_with(&config, TokenSet::default());
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    let busy = api.clone();
    let holder = tokio::spawn(async move {
        busy.guarded(async move {
            let _ = started_tx.send(());
            let _ = release_rx.await;
        })
        .await
    });
    started_rx.await.unwrap();
    assert_eq!(api.guarded(async { 1 }).await, Err(Shed::Concurrency));
    release_tx.send(()).unwrap();
    holder.await.unwrap().unwrap();
    assert_eq!(api.guarded(async { 2 }).await, Ok(2));
    let slow = api
        .guarded(tokio::time::sleep(std::time::Duration::from_secs(5)))
        .await;
    assert_eq!(slow, Err(Shed::Timeout));
    assert_eq!(AppError::from(Shed::Timeout).code, Code::DeadlineExceeded);
    assert_eq!(
        AppError::from(Shed::Concurrency).code,
        Code::ResourceExhausted
    );
}

#[test]
fn tokens_are_required_when_configured() {
    let open = api();
    assert!(open.authorize(None).is_ok());
    let closed = api_with(
        &Config::default(),
        TokenSet::new(&["0123456789abcdef".into()]),
    );
    assert_eq!(
        closed.authorize(None).unwrap_err().code,
        Code::Unauthenticated
    );
    assert!(closed.authorize(Some(b"Bearer 0123456789abcdef")).is_ok());
    assert!(closed.authorize(Some(b"Bearer 0123456789abcdeX")).is_err());
}

#[tokio::test]
async fn tokens_reload_from_the_file_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crag.toml");
    let write = |text: &str| std::fs::write(&path, text).unwrap();
    write("[auth]\ntokens = [\"first-token-0123456789\"]\n");
    let api = api_with(
        &Config::default(),
        crate::reload_tokens(Some(&path)).unwrap(),
    );
    let bearer = |t: &str| format!("Bearer {t}");
    assert!(api
        .authorize(Some(bearer("first-token-0123456789").as_bytes()))
        .is_ok());

    write(
        "[auth]\ntokens = [\"second-token-0123456789\"]\n\
         [[auth.scoped]]\ntoken = \"team-token-0123456789\"\ncollections = [\"team\"]\n",
    );
    api.set_tokens(crate::reload_tokens(Some(&path)).unwrap());
    assert!(api
        .authorize(Some(bearer("first-token-0123456789").as_bytes()))
        .is_err());
    assert!(api
        .authorize(Some(bearer("second-token-0123456789").as_bytes()))
        .is_ok());
    let team = api
        .authorize(Some(bearer("team-token-0123456789").as_bytes()))
        .unwrap();
    assert_eq!(team.collections, Some(vec!["team".to_owned()]));
    assert!(!team.admin && team.read_only);

    // A file that no longer loads is refused; the tokens in force stay.
    write("[auth]\ntokens = [\"short\"]\n");
    assert!(crate::reload_tokens(Some(&path)).is_err());
    assert!(api
        .authorize(Some(bearer("second-token-0123456789").as_bytes()))
        .is_ok());
}

//! Bearer tokens never reach the logs: every event of every level and target, emitted while
//! the API serves requests with the right token, a wrong one and malformed headers, is
//! captured and searched for the secrets. (One test in this binary: it installs the global
//! subscriber.)

use std::io::Write;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use crag_app::Config;
use crag_app::TokenSet;
use crag_http::{router, AppState};
use http_body_util::BodyExt;
use tower::ServiceExt;

const TOKEN: &str = "right-secret-7f3a9c0b5d2e4f61";
const WRONG: &str = "wrong-secret-1b2c3d4e5f60718293";

/// Everything the subscriber writes, kept for the assertions.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

fn request(method: Method, uri: &str, authorization: Option<String>, body: &str) -> Request<Body> {
    let mut builder = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(value) = authorization {
        builder = builder.header(header::AUTHORIZATION, value);
    }
    builder.body(Body::from(body.to_owned())).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_never_reach_the_logs() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();

    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        data_dir: dir.path().join("data"),
        ..Config::default()
    };
    let engine = crag_app::compose::engine(&config).await.unwrap();
    let state = AppState::new(engine, &config, TokenSet::new(&[TOKEN.to_owned()])).unwrap();
    let app = router(state);

    let ingest = r#"{"documents": [{"id": "docs/bread.md", "title": "Bread",
        "text": "Sourdough bread needs a starter, flour, water and salt."}]}"#;
    let query = r#"{"query": "sourdough starter", "topK": 3}"#;
    let bearer = |t: &str| Some(format!("Bearer {t}"));
    let cases = [
        (
            Method::POST,
            "/v1/documents",
            bearer(TOKEN),
            ingest,
            StatusCode::OK,
        ),
        (
            Method::POST,
            "/v1/query",
            bearer(TOKEN),
            query,
            StatusCode::OK,
        ),
        (Method::GET, "/v1/stats", bearer(TOKEN), "", StatusCode::OK),
        (
            Method::POST,
            "/v1/query",
            bearer(WRONG),
            query,
            StatusCode::UNAUTHORIZED,
        ),
        (
            Method::POST,
            "/v1/documents",
            bearer(WRONG),
            ingest,
            StatusCode::UNAUTHORIZED,
        ),
        (
            Method::POST,
            "/v1/query",
            Some(format!("Basic {WRONG}")),
            query,
            StatusCode::UNAUTHORIZED,
        ),
        (
            Method::POST,
            "/v1/query",
            Some(WRONG.to_owned()),
            query,
            StatusCode::UNAUTHORIZED,
        ),
        (
            Method::POST,
            "/v1/query",
            Some(format!("Bearer  {WRONG} ")),
            query,
            StatusCode::UNAUTHORIZED,
        ),
        (
            Method::GET,
            &format!("/v1/stats?token={WRONG}"),
            None,
            "",
            StatusCode::UNAUTHORIZED,
        ),
        (
            Method::DELETE,
            "/v1/documents/docs/bread.md",
            bearer(TOKEN),
            "",
            StatusCode::OK,
        ),
    ];
    for (method, uri, authorization, body, expected) in cases {
        let response = app
            .clone()
            .oneshot(request(method.clone(), uri, authorization, body))
            .await
            .unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8_lossy(&bytes);
        assert_eq!(status, expected, "{method} {uri}: {text}");
        assert!(
            !text.contains(TOKEN) && !text.contains(WRONG),
            "{method} {uri}: {text}"
        );
    }

    let logs = captured.text();
    assert!(
        logs.contains("request") && logs.lines().count() > 10,
        "the capture works: {} lines",
        logs.lines().count()
    );
    for secret in [TOKEN, WRONG] {
        let leaks: Vec<&str> = logs.lines().filter(|l| l.contains(secret)).collect();
        assert!(leaks.is_empty(), "a token reached the logs: {leaks:#?}");
    }
}

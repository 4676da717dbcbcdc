//! Collections over HTTP, and tenancy: a token limited to collection `a` is answered 404 for
//! collection `b` (and for the default one) on every route the OpenAPI document lists,
//! sessions included, and may not manage collections without `admin`.

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use crag_app::{Config, TokenSet};
use crag_http::{router, AppState};
use serde_json::{json, Value};

#[path = "support/documented.rs"]
#[allow(dead_code, reason = "shared with http.rs, which uses all of it")]
mod documented;

const ADMIN: &str = "admin-token-0123456789";
const TEAM_A: &str = "team-a-token-0123456789";

async fn app(dir: &std::path::Path) -> Router {
    let mut config = Config::parse(&format!(
        "[sessions]\nbackend = \"sqlite\"\n\
         [[auth.scoped]]\ntoken = \"{TEAM_A}\"\ncollections = [\"a\"]\nwrite = true\n"
    ))
    .unwrap();
    config.data_dir = dir.join("data");
    let engine = crag_app::compose::engine(&config).await.unwrap();
    let tokens = TokenSet::new(&[ADMIN.to_owned()])
        .with_scoped(&config)
        .unwrap();
    router(AppState::new(engine, &config, tokens).unwrap())
}

fn request(token: &str, method: Method, uri: &str, body: Value) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(uri)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::from(body.to_string()))
        .unwrap()
}

async fn send(
    app: &Router,
    token: &str,
    method: Method,
    uri: &str,
    body: Value,
) -> (StatusCode, Value) {
    documented::call(app, request(token, method, uri, body)).await
}

/// Creates collection `name` with the admin token.
async fn create(app: &Router, name: &str) -> (StatusCode, Value) {
    let body = json!({"name": name});
    send(app, ADMIN, Method::POST, "/v1/collections", body).await
}

/// A body each route accepts, so that only the collection decides the answer.
fn body_for(path: &str, session: &str) -> Value {
    if path.ends_with("/query") {
        json!({"query": "green tea", "useCrag": false})
    } else if path.ends_with("/ask") {
        json!({"query": "green tea", "sessionId": session})
    } else if path.ends_with("/documents") {
        json!({"documents": [{"id": "tea.md", "text": "Green tea steeps below boiling."}]})
    } else {
        json!({})
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_for_one_collection_finds_no_other_on_any_route() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    for name in ["a", "b"] {
        let (status, body) = create(&app, name).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["name"], name);
        assert_eq!(body["stats"]["documents"], 0);
    }
    let (status, body) = create(&app, "a").await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "already_exists");

    // Data in both, a session in each.
    let session = "0123456789abcdef0123456789abcdef";
    for name in ["a", "b"] {
        let uri = format!("/v1/collections/{name}/documents");
        let (status, body) = send(&app, ADMIN, Method::POST, &uri, body_for(&uri, session)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let uri = format!("/v1/collections/{name}/ask");
        let (status, body) = send(&app, ADMIN, Method::POST, &uri, body_for(&uri, session)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (status, body) = send(&app, ADMIN, Method::GET, "/v1/stats", json!({})).await;
    assert_eq!(
        (status, body["documents"].clone()),
        (StatusCode::OK, json!(0)),
        "default untouched"
    );

    // Every per-collection route, for b and for default: not found for team a's token.
    let routes = documented::declared_routes();
    let per_collection: Vec<&(String, Method, bool)> = routes
        .iter()
        .filter(|(path, _, _)| path.starts_with("/v1/collections/{"))
        .collect();
    assert!(per_collection.len() >= 10, "{per_collection:?}");
    let uri_of = |path: &str, name: &str| {
        path.replace("{collection}", name)
            .replace("{name}", name)
            .replace("/documents/{id}", "/documents/tea.md")
            .replace("{id}", session)
    };
    for (path, method, _) in &per_collection {
        for name in ["b", "default"] {
            let uri = uri_of(path, name);
            let (status, body) =
                send(&app, TEAM_A, method.clone(), &uri, body_for(&uri, session)).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{method} {uri}: {body}");
            assert!(
                body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("no collection"),
                "{method} {uri}: {body}"
            );
        }
    }
    // The default collection's own routes are refused to team a likewise.
    for (path, method, _) in routes.iter().filter(|(p, _, _)| {
        [
            "/v1/query",
            "/v1/ask",
            "/v1/documents",
            "/v1/stats",
            "/v1/sessions",
        ]
        .iter()
        .any(|r| p.starts_with(r))
    }) {
        let uri = uri_of(path, "default");
        let (status, body) =
            send(&app, TEAM_A, method.clone(), &uri, body_for(&uri, session)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {uri}: {body}");
    }

    // Its own collection answers, its session included; b's session is b's.
    let (status, body) = send(
        &app,
        TEAM_A,
        Method::GET,
        &format!("/v1/collections/a/sessions/{session}"),
        json!({}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["turns"].as_array().unwrap().len(), 1, "{body}");
    let (status, body) = send(
        &app,
        TEAM_A,
        Method::POST,
        "/v1/collections/a/query",
        body_for("/query", session),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["results"][0]["documentId"], "tea.md", "{body}");
    let (_, body) = send(&app, TEAM_A, Method::GET, "/v1/collections", json!({})).await;
    assert_eq!(body["collections"], json!([{"name": "a"}]));

    // Managing needs admin.
    let (status, body) = send(
        &app,
        TEAM_A,
        Method::POST,
        "/v1/collections",
        json!({"name": "a2"}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _) = send(&app, TEAM_A, Method::DELETE, "/v1/collections/a", json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Deleting b takes its sessions and data; a is untouched.
    let (status, body) = send(&app, ADMIN, Method::DELETE, "/v1/collections/b", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = send(
        &app,
        ADMIN,
        Method::GET,
        "/v1/collections/b/stats",
        json!({}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, body) = send(&app, ADMIN, Method::GET, "/v1/collections", json!({})).await;
    assert_eq!(
        body["collections"],
        json!([{"name": "default"}, {"name": "a"}])
    );
    let (status, body) = send(&app, ADMIN, Method::GET, "/v1/collections/a", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["stats"]["documents"], 1);
    let (status, body) = send(
        &app,
        ADMIN,
        Method::POST,
        "/v1/collections",
        json!({"name": "Bad Name"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}

/// `/metrics`' value of the gauge `name` for `collection`, if shown.
fn copy_gauge(text: &str, name: &str, collection: &str) -> Option<i64> {
    let series = format!("{name}{{collection=\"{collection}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&series)?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_show_each_open_collection_s_vector_copy() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let (status, body) = create(&app, "a").await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let uri = "/v1/collections/a/documents";
    let (status, body) = send(&app, ADMIN, Method::POST, uri, body_for(uri, "")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let uri = "/v1/collections/a/query";
    let (status, body) = send(&app, ADMIN, Method::POST, uri, body_for(uri, "")).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let metrics = || async {
        let (status, body) = send(&app, ADMIN, Method::GET, "/metrics", json!({})).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body.as_str().unwrap().to_owned()
    };
    let text = metrics().await;
    // LanceDB's in-memory copy of the one chunk `a` holds (loaded when the collection opened
    // and again for the table version its ingestion made); the default collection holds
    // nothing.
    assert_eq!(
        copy_gauge(&text, "crag_vector_copy_rows", "a"),
        Some(1),
        "{text}"
    );
    assert!(
        copy_gauge(&text, "crag_vector_copy_loads", "a") >= Some(1),
        "{text}"
    );
    assert_eq!(
        copy_gauge(&text, "crag_vector_copy_rows", "default"),
        Some(0),
        "{text}"
    );

    // A deleted collection's gauges go.
    let (status, body) = send(&app, ADMIN, Method::DELETE, "/v1/collections/a", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let text = metrics().await;
    assert_eq!(
        copy_gauge(&text, "crag_vector_copy_rows", "a"),
        None,
        "{text}"
    );
    assert!(
        copy_gauge(&text, "crag_vector_copy_rows", "default").is_some(),
        "{text}"
    );
}

//! Transport parity of the surface: every use case of `crag_app::Api` is served by both the
//! HTTP API and the gRPC API, or is named in an allow-list with the reason it is not.
//!
//! [`TABLE`] maps each use case (the `Api` method the transports call) to its HTTP route and
//! its gRPC method. The test reads what the servers actually serve: the OpenAPI document at
//! `GET /openapi.json` of a running HTTP server, and the gRPC services and methods a running
//! gRPC server describes through server reflection. It fails when
//!
//! - a row's route (method + path, and media type where given) is not in the OpenAPI document,
//!   or its per-collection twin `/v1/collections/{collection}/...` is missing;
//! - a row's gRPC method is not served, or its streaming does not match the HTTP media type
//!   (server-sent events <-> a server-streaming rpc);
//! - an OpenAPI operation or a served gRPC method is in no row and not in an allow-list
//!   (an endpoint added on one transport only);
//! - a public method of `Api` (crates/crag-app/src/api/) is in no row and not in an allow-list
//!   (a use case with no transport at all).

use std::collections::BTreeSet;
use std::time::Duration;

use crag_app::{Config, TokenSet};
use prost::Message;
use serde_json::Value;
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
use tonic_reflection::pb::v1::ServerReflectionRequest;

mod support;
use support::{server, TOKEN};

/// One use case on both transports.
struct Row {
    /// The `crag_app::Api` method both transports call.
    use_case: &'static str,
    /// HTTP method (lower case, as in OpenAPI) and path.
    http: (&'static str, &'static str),
    /// The media type of the 200 answer that selects this use case, when a route serves more
    /// than one (`POST /v1/ask`: JSON, or server-sent events with `Accept: text/event-stream`).
    media: Option<&'static str>,
    /// `package.Service/Method`.
    grpc: &'static str,
    /// Also served under `/v1/collections/{collection}/` over HTTP; over gRPC the collection
    /// comes from the `x-crag-collection` metadata.
    per_collection: bool,
}

const fn row(
    use_case: &'static str,
    http: (&'static str, &'static str),
    grpc: &'static str,
    per_collection: bool,
) -> Row {
    Row {
        use_case,
        http,
        media: None,
        grpc,
        per_collection,
    }
}

/// Use case -> HTTP route -> gRPC method. Add a row with every endpoint.
const TABLE: &[Row] = &[
    row("query", ("post", "/v1/query"), "crag.v1.Crag/Query", true),
    Row {
        media: Some("application/json"),
        ..row("ask", ("post", "/v1/ask"), "crag.v1.Crag/Ask", true)
    },
    Row {
        media: Some("text/event-stream"),
        ..row(
            "ask_streamed",
            ("post", "/v1/ask"),
            "crag.v1.Crag/AskStream",
            true,
        )
    },
    row(
        "evaluate",
        ("post", "/v1/evaluate"),
        "crag.v1.Crag/Evaluate",
        false,
    ),
    row("stats", ("get", "/v1/stats"), "crag.v1.Crag/Stats", true),
    row(
        "ingest",
        ("post", "/v1/documents"),
        "crag.v1.Crag/Ingest",
        true,
    ),
    row(
        "delete",
        ("delete", "/v1/documents/{id}"),
        "crag.v1.Crag/DeleteDocument",
        true,
    ),
    row(
        "sessions",
        ("get", "/v1/sessions"),
        "crag.v1.Crag/ListSessions",
        true,
    ),
    row(
        "session",
        ("get", "/v1/sessions/{id}"),
        "crag.v1.Crag/GetSession",
        true,
    ),
    row(
        "delete_session",
        ("delete", "/v1/sessions/{id}"),
        "crag.v1.Crag/DeleteSession",
        true,
    ),
    row(
        "list_collections",
        ("get", "/v1/collections"),
        "crag.v1.Crag/ListCollections",
        false,
    ),
    row(
        "create_collection",
        ("post", "/v1/collections"),
        "crag.v1.Crag/CreateCollection",
        false,
    ),
    row(
        "describe_collection",
        ("get", "/v1/collections/{name}"),
        "crag.v1.Crag/DescribeCollection",
        false,
    ),
    row(
        "delete_collection",
        ("delete", "/v1/collections/{name}"),
        "crag.v1.Crag/DeleteCollection",
        false,
    ),
    // Readiness: /readyz is 503 while draining or while an index cannot be read within 2 s;
    // the gRPC health service turns NOT_SERVING while draining only (it does not call
    // `Api::readiness`, so an unreachable object store still answers SERVING).
    row(
        "readiness",
        ("get", "/readyz"),
        "grpc.health.v1.Health/Check",
        false,
    ),
];

/// HTTP operations that are no use case of `Api`, served over HTTP only.
const HTTP_ONLY: &[((&str, &str), &str)] = &[
    (
        ("get", "/healthz"),
        "liveness probe for HTTP orchestrators, answered without touching the engine; a gRPC \
         client learns liveness from the connection and Health/Check",
    ),
    (
        ("get", "/metrics"),
        "Prometheus scrapes text over HTTP; the gRPC server's own metrics (crag_grpc_*) are in \
         the same registry, so one scrape covers both transports",
    ),
    (
        ("get", "/openapi.json"),
        "HTTP's self-description; gRPC's is server reflection",
    ),
];

/// Served gRPC methods (or whole services, `package.Service/*`) that are no use case of `Api`.
const GRPC_ONLY: &[(&str, &str)] = &[
    (
        "grpc.health.v1.Health/Watch",
        "the standard health protocol's streaming variant of Check, for gRPC load balancers",
    ),
    (
        "grpc.reflection.v1.ServerReflection/*",
        "gRPC tooling (grpcurl, this test); HTTP's self-description is /openapi.json",
    ),
];

/// Public methods of `Api` that are no use case a remote API serves.
const NOT_REMOTE: &[(&str, &str)] = &[
    ("new", "construction"),
    ("engine", "accessor"),
    ("limits", "accessor"),
    ("collections", "accessor"),
    (
        "authorize",
        "authentication, run by both transports before every call",
    ),
    ("set_tokens", "token reload (SIGHUP), not a request"),
    (
        "may_write",
        "authorisation check inside the write use cases",
    ),
    (
        "in_collection",
        "collection selection, inside every per-collection call",
    ),
    ("guarded", "load shedding and deadline around every call"),
    ("is_ready", "the flag behind readiness"),
    ("set_ready", "draining at shutdown, not a request"),
    (
        "ask_request",
        "the validation half of ask_streamed, called by both streaming transports",
    ),
    (
        "run_ask",
        "a checked ask with a pass observer, under ask and ask_streamed",
    ),
    ("metrics_text", "GET /metrics, HTTP only (see HTTP_ONLY)"),
    // Read tools for agents: served over MCP (apps/crag-mcp, `fetch_chunk`,
    // `fetch_document`, `find_symbol`), not over the HTTP or gRPC APIs.
    ("chunk", "MCP only"),
    ("document", "MCP only"),
    ("find_symbol", "MCP only"),
];

/// The OpenAPI document the HTTP server serves at `/openapi.json`.
async fn served_openapi() -> Value {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        data_dir: dir.path().join("data"),
        ..Config::default()
    };
    config.validate().unwrap();
    let engine = crag_app::compose::engine(&config).await.unwrap();
    let state =
        crag_http::AppState::new(engine, &config, TokenSet::new(&[TOKEN.to_owned()])).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = state.connections();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(crag_http::serve(
        listener,
        crag_http::router(state),
        connections,
        async move {
            let _ = stopped.await;
        },
        Duration::from_secs(1),
    ));
    let answer = reqwest::Client::new()
        .get(format!("http://{addr}/openapi.json"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let doc: Value = answer.json().await.unwrap();
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
    doc
}

/// Every (method, path) of the document's operations.
fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in [
            "get", "put", "post", "delete", "options", "head", "patch", "trace",
        ] {
            if item.get(method).is_some() {
                out.insert((method.to_owned(), path.clone()));
            }
        }
    }
    out
}

/// A served method: its name and whether it answers with a stream.
struct Served {
    name: String,
    server_streaming: bool,
}

/// Every method of every service the gRPC server lists through reflection, as
/// `package.Service/Method`, described by the descriptors reflection serves.
async fn served_grpc(s: &support::Server) -> Vec<Served> {
    let mut reflection = ServerReflectionClient::new(s.channel().await);
    let Some(MessageResponse::ListServicesResponse(list)) =
        reflect(&mut reflection, MessageRequest::ListServices(String::new())).await
    else {
        panic!("reflection did not list the services");
    };
    let mut out = Vec::new();
    for service in list.service {
        let request = MessageRequest::FileContainingSymbol(service.name.clone());
        let Some(MessageResponse::FileDescriptorResponse(files)) =
            reflect(&mut reflection, request).await
        else {
            panic!("reflection did not describe {}", service.name);
        };
        let mut found = false;
        for bytes in &files.file_descriptor_proto {
            let file = prost_types::FileDescriptorProto::decode(bytes.as_slice()).unwrap();
            for described in &file.service {
                if format!("{}.{}", file.package(), described.name()) != service.name {
                    continue;
                }
                found = true;
                out.extend(described.method.iter().map(|m| Served {
                    name: format!("{}/{}", service.name, m.name()),
                    server_streaming: m.server_streaming(),
                }));
            }
        }
        assert!(
            found,
            "no descriptor of the served service {}",
            service.name
        );
    }
    out
}

/// One reflection request, with the bearer token, and its answer.
async fn reflect(
    client: &mut ServerReflectionClient<tonic::transport::Channel>,
    request: MessageRequest,
) -> Option<MessageResponse> {
    let mut r = tonic::Request::new(tokio_stream::iter(vec![ServerReflectionRequest {
        host: String::new(),
        message_request: Some(request),
    }]));
    r.metadata_mut()
        .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    let mut answers = client.server_reflection_info(r).await.unwrap().into_inner();
    answers.message().await.unwrap().unwrap().message_response
}

/// The public methods of `impl Api` blocks in crates/crag-app/src/api/.
fn api_methods() -> BTreeSet<String> {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates/crag-app/src/api");
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let mut in_api = false;
        for line in text.lines() {
            if line.starts_with("impl Api {") {
                in_api = true;
            } else if line == "}" {
                in_api = false;
            } else if in_api {
                let name = line
                    .strip_prefix("    pub async fn ")
                    .or_else(|| line.strip_prefix("    pub fn "));
                if let Some(name) = name {
                    let end = name.find(['(', '<']).unwrap_or(name.len());
                    out.insert(name[..end].to_owned());
                }
            }
        }
    }
    out
}

/// The media types of the 200 answer of `operation`.
fn media_types(operation: &Value) -> Vec<String> {
    operation["responses"]["200"]["content"]
        .as_object()
        .map(|c| c.keys().cloned().collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn every_use_case_has_both_transports() {
    let doc = served_openapi().await;
    let s = server(|_| {}, &[TOKEN]).await;
    let grpc = served_grpc(&s).await;
    s.shutdown().await;
    let http = operations(&doc);
    let mut failures = Vec::new();

    // (a) and (b): every row's route and method are served.
    let mut covered_http = BTreeSet::new();
    let mut covered_grpc = BTreeSet::new();
    for r in TABLE {
        let (method, path) = r.http;
        let mut paths = vec![path.to_owned()];
        if r.per_collection {
            let tail = path.strip_prefix("/v1/").expect("a /v1/ route");
            paths.push(format!("/v1/collections/{{collection}}/{tail}"));
        }
        for path in paths {
            let key = (method.to_owned(), path.clone());
            if !http.contains(&key) {
                failures.push(format!(
                    "{}: {method} {path} not in the OpenAPI",
                    r.use_case
                ));
                continue;
            }
            let media = media_types(&doc["paths"][&path][method]);
            if let Some(want) = r.media {
                if !media.iter().any(|m| m == want) {
                    failures.push(format!(
                        "{}: {method} {path} does not answer {want}",
                        r.use_case
                    ));
                }
            }
            covered_http.insert(key);
        }
        match grpc.iter().find(|m| m.name == r.grpc) {
            None => failures.push(format!("{}: {} is not served", r.use_case, r.grpc)),
            Some(m) => {
                let sse = r.media == Some("text/event-stream");
                if m.server_streaming != sse {
                    failures.push(format!(
                        "{}: {} streams: {}, the HTTP route streams: {sse}",
                        r.use_case, r.grpc, m.server_streaming
                    ));
                }
                covered_grpc.insert(m.name.clone());
            }
        }
    }

    // (c): nothing served on one transport only without a reason.
    for (method, path) in &http {
        let allowed = HTTP_ONLY.iter().any(|((m, p), _)| m == method && p == path);
        if !covered_http.contains(&(method.clone(), path.clone())) && !allowed {
            failures.push(format!(
                "{method} {path} is in the OpenAPI but in no row of TABLE"
            ));
        }
    }
    for m in &grpc {
        let service = m.name.split('/').next().unwrap();
        let allowed = GRPC_ONLY
            .iter()
            .any(|(name, _)| *name == m.name || *name == format!("{service}/*"));
        if !covered_grpc.contains(&m.name) && !allowed {
            failures.push(format!(
                "{} is served over gRPC but in no row of TABLE",
                m.name
            ));
        }
    }

    // (d): every use case has its row (or its reason).
    let methods = api_methods();
    assert!(
        methods.contains("query") && methods.contains("ingest"),
        "cannot read Api's methods: {methods:?}"
    );
    for method in &methods {
        let in_table = TABLE.iter().any(|r| r.use_case == method);
        let allowed = NOT_REMOTE.iter().any(|(name, _)| name == method);
        if !in_table && !allowed {
            failures.push(format!(
                "Api::{method} is a use case in no row of TABLE (and not in NOT_REMOTE)"
            ));
        }
    }
    // Stale entries: a row or reason for something that no longer exists.
    for name in TABLE
        .iter()
        .map(|r| r.use_case)
        .chain(NOT_REMOTE.iter().map(|(n, _)| *n))
    {
        if !methods.contains(name) {
            failures.push(format!("{name} is listed but Api has no such method"));
        }
    }
    for ((method, path), _) in HTTP_ONLY {
        if !http.contains(&(method.to_string(), path.to_string())) {
            failures.push(format!(
                "HTTP_ONLY lists {method} {path}, which is not served"
            ));
        }
    }
    for (name, _) in GRPC_ONLY {
        let service = name.strip_suffix("/*");
        if !grpc.iter().any(|m| {
            m.name == *name || service.is_some_and(|s| m.name.starts_with(&format!("{s}/")))
        }) {
            failures.push(format!("GRPC_ONLY lists {name}, which is not served"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

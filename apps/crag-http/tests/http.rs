//! The HTTP router driven with `tower::ServiceExt::oneshot` over the real embedded adapters
//! (ONNX MiniLM, Tantivy, LanceDB) on a small fixture corpus written by the test.

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use crag_app::Config;
use crag_app::TokenSet;
use crag_http::{router, AppState};
use serde_json::{json, Value};

#[path = "support/documented.rs"]
mod documented;

const TOKEN: &str = "test-token-0123456789";

struct App {
    router: Router,
    state: AppState,
    _dir: tempfile::TempDir,
}

async fn app(tweak: impl FnOnce(&mut Config), tokens: &[&str]) -> App {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config {
        data_dir: dir.path().join("data"),
        ..Config::default()
    };
    tweak(&mut config);
    config.validate().unwrap();
    let engine = crag_app::compose::engine(&config).await.unwrap();
    let tokens: Vec<String> = tokens.iter().map(|t| t.to_string()).collect();
    let state = AppState::new(
        engine,
        &config,
        TokenSet::new(&tokens).with_scoped(&config).unwrap(),
    )
    .unwrap();
    App {
        router: router(state.clone()),
        state,
        _dir: dir,
    }
}

fn fixture() -> Value {
    json!({"documents": [
        {"id": "docs/fusion.md", "title": "Fusion",
         "text": "Reciprocal rank fusion merges the BM25 list and the vector list. Each document scores one over sixty plus its rank in every list."},
        {"id": "docs/bread.md", "title": "Bread",
         "text": "Sourdough bread needs a starter, flour, water and salt. Bake it in a hot oven until the crust is dark."},
        {"id": "src/fuse.rs", "kind": "code", "title": "fuse.rs",
         "text": "pub fn reciprocal_rank_fusion(bm25: &[Hit], vectors: &[Hit], k: f32) -> Vec<Hit> { todo() }"}
    ]})
}

/// Sends `request` and checks the answer against the OpenAPI document ([`documented::check`]).
async fn send(app: &App, request: Request<Body>) -> (StatusCode, Value) {
    documented::call(&app.router, request).await
}

fn json_request(method: Method, uri: &str, body: impl Into<Body>) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(uri)
        .header(header::CONTENT_TYPE, "application/json")
        .body(body.into())
        .unwrap()
}

fn get(uri: &str) -> Request<Body> {
    Request::builder().uri(uri).body(Body::empty()).unwrap()
}

async fn ingest_fixture(app: &App) {
    let (status, body) = send(
        app,
        json_request(Method::POST, "/v1/documents", fixture().to_string()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["documentsAdded"], 3, "{body}");
}

async fn documents(app: &App) -> u64 {
    documents_by(app, get("/v1/stats")).await
}

/// `request` with `Authorization: Bearer <token>`.
fn with_token(token: &str, mut request: Request<Body>) -> Request<Body> {
    let value = format!("Bearer {token}").parse().unwrap();
    request.headers_mut().insert(header::AUTHORIZATION, value);
    request
}

/// The documents `/v1/stats` counts, asked with `request`.
async fn documents_by(app: &App, request: Request<Body>) -> u64 {
    let (status, body) = send(app, request).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["documents"].as_u64().unwrap()
}

#[tokio::test]
async fn query_ingest_delete_stats_metrics_and_health() {
    let app = app(|_| {}, &[]).await;
    ingest_fixture(&app).await;
    assert_eq!(documents(&app).await, 3);

    let (status, body) = send(
        &app,
        json_request(
            Method::POST,
            "/v1/query",
            json!({"query": "how does reciprocal rank fusion merge lists?", "topK": 3,
                   "sessionId": "s-1", "useWebSearch": false})
            .to_string(),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["sessionId"], "s-1");
    assert!(body["cragDecision"].is_string(), "{body}");
    assert!(body["cragScore"].is_number());
    assert!(body["cragCorrectionStrategy"].is_string());
    assert_eq!(body["cragWebSearchUsed"], false);
    let results = body["results"].as_array().unwrap();
    assert!(!results.is_empty());
    assert!(results
        .iter()
        .any(|r| r["documentId"].as_str().unwrap().contains("fus")));
    assert!(body["timings"]["totalMs"].as_f64().unwrap() > 0.0);

    // Filters: code only.
    let (status, body) = send(
        &app,
        json_request(
            Method::POST,
            "/v1/query",
            json!({"query": "reciprocal rank fusion", "useCrag": false,
                   "filters": {"kinds": ["code"]}})
            .to_string(),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let results = body["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{body}");
    assert_eq!(results[0]["documentId"], "src/fuse.rs");

    // Re-sending the same documents changes nothing.
    let (_, body) = send(
        &app,
        json_request(Method::POST, "/v1/documents", fixture().to_string()),
    )
    .await;
    assert_eq!(body["documentsUnchanged"], 3, "{body}");

    // Delete with a slash in the id, percent-encoded and as segments.
    let (status, body) = send(
        &app,
        Request::delete("/v1/documents/docs%2Fbread.md")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["id"], "docs/bread.md");
    let (status, body) = send(
        &app,
        Request::delete("/v1/documents/docs/bread.md")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"]["code"], "not_found");
    assert_eq!(documents(&app).await, 2);

    let (status, body) = send(&app, get("/healthz")).await;
    assert_eq!(
        (status, body["status"].as_str()),
        (StatusCode::OK, Some("ok"))
    );
    let (status, _) = send(&app, get("/readyz")).await;
    assert_eq!(status, StatusCode::OK);
    app.state.set_ready(false);
    let (status, body) = send(&app, get("/readyz")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    app.state.set_ready(true);

    let (status, body) = send(&app, get("/metrics")).await;
    assert_eq!(status, StatusCode::OK);
    let text = body.as_str().unwrap();
    assert!(text.contains("crag_decisions_total"), "{text}");
    // LanceDB's in-memory copy of the vectors ingested above.
    let gauge = |name: &str| -> i64 {
        let series = format!("{name}{{collection=\"default\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&series)?.parse().ok())
            .unwrap_or_else(|| panic!("no {name}: {text}"))
    };
    assert!(gauge("crag_vector_copy_rows") > 0, "{text}");
    assert!(gauge("crag_vector_copy_loads") >= 1, "{text}");
    assert_eq!(gauge("crag_vector_copy_partitions"), 0, "{text}");
    assert!(
        text.contains(
            "crag_http_requests_total{method=\"POST\",route=\"/v1/query\",status=\"200\"}"
        ),
        "{text}"
    );

    let (status, body) = send(&app, get("/openapi.json")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["openapi"], "3.1.0");
    for path in [
        "/v1/query",
        "/v1/evaluate",
        "/v1/documents",
        "/v1/documents/{id}",
        "/v1/stats",
        "/v1/ask",
        "/v1/sessions",
        "/v1/sessions/{id}",
        "/healthz",
        "/readyz",
        "/metrics",
        "/openapi.json",
    ] {
        assert!(
            body["paths"][path].is_object(),
            "{path} missing from openapi.json"
        );
    }
    assert_eq!(documented::dangling_references(), Vec::<String>::new());
    for schema in [
        "QueryResponse",
        "AskResponse",
        "EvaluateResponse",
        "Error",
        "Session",
        "Result",
    ] {
        assert!(
            body["components"]["schemas"][schema]["properties"].is_object(),
            "{schema} is not described: {}",
            body["components"]["schemas"][schema]
        );
    }
}

/// A query's own fusion: RRF's fused scores are sums of `1 / (k + rank)` over the legs that
/// found the hit, the convex fusion's lie in [0, 1] with the best at the top; the configured
/// fusion (convex) is what an unset `fusion` gets.
#[tokio::test]
async fn a_query_may_choose_its_fusion() {
    let app = app(|_| {}, &[]).await;
    ingest_fixture(&app).await;
    let ask = |extra: Value| {
        let mut body = json!({"query": "reciprocal rank fusion of lists", "topK": 3,
                              "useCrag": false, "useWebSearch": false});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        query(body)
    };
    let scores = |answer: &Value| -> Vec<(f64, Option<u64>, Option<u64>)> {
        answer["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["fusedScore"].as_f64().unwrap(),
                    r["keyword"]["rank"].as_u64(),
                    r["vector"]["rank"].as_u64(),
                )
            })
            .collect()
    };
    for k in [60.0, 5.0] {
        let (status, answer) = send(&app, ask(json!({"fusion": "rrf", "rrfK": k}))).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        let hits = scores(&answer);
        assert!(!hits.is_empty(), "{answer}");
        for (score, keyword, vector) in hits {
            let expected: f64 = [keyword, vector]
                .into_iter()
                .flatten()
                .map(|rank| 1.0 / (k + rank as f64))
                .sum();
            assert!(
                (score - expected).abs() < 1e-4,
                "k {k}: {score} vs {expected}: {answer}"
            );
        }
    }
    for body in [json!({}), json!({"fusion": "convex", "keywordWeight": 0.8})] {
        let (status, answer) = send(&app, ask(body)).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        let hits = scores(&answer);
        assert!(
            hits.iter().all(|(s, _, _)| (0.0..=1.0).contains(s)),
            "{answer}"
        );
        assert!(
            hits[0].0 > 2.0 / 61.0,
            "convex scores are not RRF sums: {answer}"
        );
    }
    // All-BM25 and all-vector convex fusions rank each leg's best first.
    for (weight, leg) in [(1.0, "keyword"), (0.0, "vector")] {
        let (_, answer) = send(&app, ask(json!({"keywordWeight": weight}))).await;
        assert_eq!(answer["results"][0][leg]["rank"], 1, "{answer}");
    }
}

#[tokio::test]
async fn evaluate_judges_documents_retrieved_elsewhere() {
    let app = app(|_| {}, &[]).await;
    let evaluate = |body: Value| json_request(Method::POST, "/v1/evaluate", body.to_string());
    let query = "how does reciprocal rank fusion merge the BM25 and vector lists?";
    let (status, body) = send(
        &app,
        evaluate(json!({"query": query, "documents": [
            {"id": "fusion", "source": "docs/fusion.md",
             "text": "Reciprocal rank fusion merges the BM25 list and the vector list: each document scores one over sixty plus its rank in every list."},
            {"text": "Sourdough bread needs a starter, flour, water and salt."}
        ]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["evaluator"], "heuristic");
    assert!(
        ["correct", "ambiguous", "incorrect"].contains(&body["verdict"].as_str().unwrap()),
        "{body}"
    );
    let docs = body["documents"].as_array().unwrap();
    assert_eq!(docs[0]["id"], "fusion");
    assert_eq!(
        docs[1]["id"], "1",
        "an id-less document is named by its position"
    );
    let score = |i: usize, key: &str| docs[i][key].as_f64().unwrap();
    assert!(score(0, "score") > score(1, "score"), "{body}");
    assert!(score(0, "similarity") > score(1, "similarity"), "{body}");
    assert!(
        docs.iter().all(|d| d["reason"].is_null()),
        "the heuristic gives no per-document reason: {body}"
    );
    let criteria = body["criteria"].as_array().unwrap();
    let agreement = criteria.iter().find(|c| c["name"] == "leg_agreement");
    assert!(
        agreement.is_none_or(|c| c["weight"] == 0.0),
        "no retrieval signals: leg agreement is left out: {body}"
    );

    let (status, body) = send(
        &app,
        evaluate(json!({"query": query, "context": "Sourdough bread needs a starter."})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["documents"][0]["id"], "context");

    for (request, message) in [
        (
            json!({"query": query}),
            "documents (at least one) or context is required",
        ),
        (
            json!({"query": query, "context": "c", "documents": [{"text": "t"}]}),
            "either documents or context",
        ),
        (
            json!({"query": query, "documents": [{"text": "t"}, {"text": " "}]}),
            "documents[1]: text must not be empty",
        ),
        (
            json!({"query": " ", "context": "c"}),
            "query must not be empty",
        ),
    ] {
        let (status, body) = send(&app, evaluate(request)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["code"], "invalid_argument");
        let got = body["error"]["message"].as_str().unwrap();
        assert!(got.contains(message), "{got}");
    }
}

/// An OpenAI-compatible chat server scripted like a small model judging documents: prose around
/// a fenced JSON answer, a score 9 and a reason for each document shown that mentions fusion,
/// a score 1 and no reason for the others. Every request body is kept.
async fn scripted_judge() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    use axum::{routing::post, Json};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = std::sync::Arc::clone(&seen);
    let reply = move |Json(request): Json<Value>| {
        let kept = std::sync::Arc::clone(&kept);
        async move {
            let prompt = request["messages"][1]["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            kept.lock().unwrap().push(request);
            let entries: Vec<Value> = prompt
                .split("[Document ")
                .skip(1)
                .enumerate()
                .map(|(i, shown)| {
                    let text = shown.split("\n\n").next().unwrap_or_default();
                    if text.to_lowercase().contains("fusion") {
                        json!({"document": i + 1, "score": 9,
                               "reason": "  It explains\nreciprocal rank fusion. "})
                    } else {
                        json!({"document": i + 1, "score": 1})
                    }
                })
                .collect();
            let answer = json!({"scores": entries, "reasoning": "Fusion documents answer it."});
            let content = format!("Here is my judgement:\n```json\n{answer}\n```\nHope it helps!");
            Json(json!({"choices": [{"message": {"role": "assistant", "content": content}}]}))
        }
    };
    let router = Router::new().route("/v1/chat/completions", post(reply));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (base, seen)
}

/// The LLM evaluator over [`scripted_judge`]: per-document reasons reach `/v1/evaluate`'s
/// documents and the query answer's `crag.documentReasons`, beside their scores.
#[tokio::test]
async fn llm_reasons_reach_the_evaluate_and_query_answers() {
    let (base, seen) = scripted_judge().await;
    let app = app(
        |config| {
            let parsed = Config::parse(&format!(
                "[llm]\nbase_url = \"{base}\"\nmodel = \"scripted\"\nrewrite = false\n\
                 [evaluator]\nkind = \"llm\"\n"
            ))
            .unwrap();
            config.adapters.llm = parsed.adapters.llm;
            config.adapters.evaluator = parsed.adapters.evaluator;
        },
        &[],
    )
    .await;
    let (status, body) = send(
        &app,
        json_request(
            Method::POST,
            "/v1/evaluate",
            json!({"query": "how does reciprocal rank fusion merge lists?", "documents": [
                {"id": "fusion", "text": "Reciprocal rank fusion merges the BM25 list and the vector list."},
                {"id": "bread", "text": "Sourdough bread needs a starter, flour, water and salt."}
            ]})
            .to_string(),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["evaluator"], "llm", "{body}");
    let docs = body["documents"].as_array().unwrap();
    assert_eq!(docs[0]["score"], 0.9, "{body}");
    assert_eq!(
        docs[0]["reason"], "It explains reciprocal rank fusion.",
        "{body}"
    );
    assert_eq!(docs[1]["score"], 0.1, "{body}");
    assert!(docs[1]["reason"].is_null(), "no reason given: {body}");
    assert!(
        body["reasoning"]
            .as_str()
            .unwrap()
            .ends_with("Model: Fusion documents answer it."),
        "{body}"
    );
    let prompt = seen.lock().unwrap()[0]["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(prompt.contains(r#""reason": "#), "{prompt}");

    ingest_fixture(&app).await;
    let (status, body) = send(
        &app,
        json_request(
            Method::POST,
            "/v1/query",
            json!({"query": "how does reciprocal rank fusion merge lists?", "topK": 3,
                   "useWebSearch": false})
            .to_string(),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let crag = &body["crag"];
    assert_eq!(crag["evaluator"], "llm", "{body}");
    let scores = crag["documentScores"].as_array().unwrap();
    let reasons = crag["documentReasons"].as_array().unwrap();
    assert_eq!(reasons.len(), scores.len(), "{body}");
    assert!(scores.iter().any(|s| s == 0.9), "{body}");
    for (score, reason) in scores.iter().zip(reasons) {
        let expected = if score == 0.9 {
            json!("It explains reciprocal rank fusion.")
        } else {
            Value::Null
        };
        assert_eq!(reason, &expected, "{body}");
    }
}

/// A bad request, the status and error code it must get, and a piece of its message.
struct Case {
    name: &'static str,
    request: Request<Body>,
    status: StatusCode,
    code: &'static str,
    message: &'static str,
}

fn case(
    name: &'static str,
    request: Request<Body>,
    status: StatusCode,
    code: &'static str,
    message: &'static str,
) -> Case {
    Case {
        name,
        request,
        status,
        code,
        message,
    }
}

fn query(body: Value) -> Request<Body> {
    json_request(Method::POST, "/v1/query", body.to_string())
}

fn docs(body: Value) -> Request<Body> {
    json_request(Method::POST, "/v1/documents", body.to_string())
}

fn bad_inputs() -> Vec<Case> {
    use StatusCode as S;
    let huge_query = "x".repeat(1024 * 1024);
    let many: Vec<Value> = (0..257)
        .map(|i| json!({"id": format!("d{i}"), "text": "t"}))
        .collect();
    vec![
        case(
            "unknown fusion",
            query(json!({"query": "q", "fusion": "max"})),
            S::BAD_REQUEST,
            "invalid_argument",
            "fusion must be \"convex\" or \"rrf\"",
        ),
        case(
            "keyword weight out of range",
            query(json!({"query": "q", "keywordWeight": 1.5})),
            S::BAD_REQUEST,
            "invalid_argument",
            "keywordWeight must be within [0, 1]",
        ),
        case(
            "rrf constant with the convex fusion",
            query(json!({"query": "q", "fusion": "convex", "rrfK": 60})),
            S::BAD_REQUEST,
            "invalid_argument",
            "rrfK applies to fusion \"rrf\" only",
        ),
        case(
            "empty query",
            query(json!({"query": ""})),
            S::BAD_REQUEST,
            "invalid_argument",
            "query must not be empty",
        ),
        case(
            "whitespace query",
            query(json!({"query": " \n\t "})),
            S::BAD_REQUEST,
            "invalid_argument",
            "query must not be empty",
        ),
        case(
            "1 MB query",
            query(json!({"query": huge_query})),
            S::BAD_REQUEST,
            "invalid_argument",
            "the limit is 2000",
        ),
        case(
            "missing query",
            query(json!({"topK": 3})),
            S::BAD_REQUEST,
            "invalid_argument",
            "missing field `query`",
        ),
        case(
            "query not a string",
            query(json!({"query": 42})),
            S::BAD_REQUEST,
            "invalid_argument",
            "invalid type",
        ),
        case(
            "negative topK",
            query(json!({"query": "bread", "topK": -1})),
            S::BAD_REQUEST,
            "invalid_argument",
            "topK must be between 1 and 100",
        ),
        case(
            "zero topK",
            query(json!({"query": "bread", "topK": 0})),
            S::BAD_REQUEST,
            "invalid_argument",
            "topK",
        ),
        case(
            "huge topK",
            query(json!({"query": "bread", "topK": 1_000_000_000_000i64})),
            S::BAD_REQUEST,
            "invalid_argument",
            "topK",
        ),
        case(
            "topK overflows i64",
            json_request(
                Method::POST,
                "/v1/query",
                r#"{"query":"bread","topK":99999999999999999999999}"#,
            ),
            S::BAD_REQUEST,
            "invalid_argument",
            "invalid",
        ),
        case(
            "fractional topK",
            query(json!({"query": "bread", "topK": 2.5})),
            S::BAD_REQUEST,
            "invalid_argument",
            "invalid type",
        ),
        case(
            "zero tokenBudget",
            query(json!({"query": "bread", "tokenBudget": 0})),
            S::BAD_REQUEST,
            "invalid_argument",
            "tokenBudget",
        ),
        case(
            "unknown field",
            query(json!({"query": "bread", "top_k": 3})),
            S::BAD_REQUEST,
            "invalid_argument",
            "unknown field `top_k`",
        ),
        case(
            "unknown filter kind",
            query(json!({"query": "bread", "filters": {"kinds": ["pdf"]}})),
            S::BAD_REQUEST,
            "invalid_argument",
            "unknown kind `pdf`",
        ),
        case(
            "bad session id",
            query(json!({"query": "bread", "sessionId": "a b/c"})),
            S::BAD_REQUEST,
            "invalid_argument",
            "sessionId",
        ),
        case(
            "malformed JSON",
            json_request(Method::POST, "/v1/query", "{\"query\": "),
            S::BAD_REQUEST,
            "invalid_argument",
            "malformed JSON",
        ),
        case(
            "JSON array body",
            json_request(Method::POST, "/v1/query", "[1,2]"),
            S::BAD_REQUEST,
            "invalid_argument",
            "invalid",
        ),
        case(
            "invalid UTF-8",
            json_request(Method::POST, "/v1/query", &b"{\"query\": \"\xff\xfe\"}"[..]),
            S::BAD_REQUEST,
            "invalid_argument",
            "malformed JSON",
        ),
        case(
            "wrong content type",
            Request::post("/v1/query")
                .header(header::CONTENT_TYPE, "text/plain")
                .body(Body::from("{\"query\":\"bread\"}"))
                .unwrap(),
            S::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "application/json",
        ),
        case(
            "no content type",
            Request::post("/v1/query")
                .body(Body::from("{\"query\":\"bread\"}"))
                .unwrap(),
            S::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "application/json",
        ),
        case(
            "body over the limit",
            json_request(
                Method::POST,
                "/v1/documents",
                format!(
                    "{{\"documents\":[{{\"id\":\"big\",\"text\":\"{}\"}}]}}",
                    "y".repeat(5 * 1024 * 1024)
                ),
            ),
            S::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "max_body_bytes",
        ),
        case(
            "empty batch",
            docs(json!({"documents": []})),
            S::BAD_REQUEST,
            "invalid_argument",
            "documents must not be empty",
        ),
        case(
            "batch over the limit",
            docs(json!({"documents": many})),
            S::BAD_REQUEST,
            "invalid_argument",
            "the limit is 256",
        ),
        case(
            "document without text",
            docs(json!({"documents": [{"id": "a"}]})),
            S::BAD_REQUEST,
            "invalid_argument",
            "missing field `text`",
        ),
        case(
            "delete: dot-dot path",
            Request::delete("/v1/documents/docs/../etc/passwd")
                .body(Body::empty())
                .unwrap(),
            S::BAD_REQUEST,
            "invalid_argument",
            "`..`",
        ),
        case(
            "delete: encoded dot-dot",
            Request::delete("/v1/documents/%2E%2E%2Fsecret")
                .body(Body::empty())
                .unwrap(),
            S::BAD_REQUEST,
            "invalid_argument",
            "`..`",
        ),
        case(
            "delete: control character",
            Request::delete("/v1/documents/a%00b")
                .body(Body::empty())
                .unwrap(),
            S::BAD_REQUEST,
            "invalid_argument",
            "control characters",
        ),
        case(
            "delete: backslash",
            Request::delete("/v1/documents/a%5Cb")
                .body(Body::empty())
                .unwrap(),
            S::BAD_REQUEST,
            "invalid_argument",
            "backslashes",
        ),
        case(
            "delete: unknown id",
            Request::delete("/v1/documents/nope.md")
                .body(Body::empty())
                .unwrap(),
            S::NOT_FOUND,
            "not_found",
            "nope.md",
        ),
        case(
            "delete: id too long",
            Request::delete(format!("/v1/documents/{}", "z".repeat(600)))
                .body(Body::empty())
                .unwrap(),
            S::BAD_REQUEST,
            "invalid_argument",
            "the limit is 512",
        ),
        case(
            "unknown route",
            get("/v1/nope"),
            S::NOT_FOUND,
            "not_found",
            "no such route",
        ),
        case(
            "wrong method",
            get("/v1/query"),
            S::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "method",
        ),
    ]
}

#[tokio::test]
async fn bad_inputs_get_clear_errors_and_lose_nothing() {
    let app = app(|_| {}, &[]).await;
    ingest_fixture(&app).await;
    let cases = bad_inputs();
    assert!(cases.len() >= 25);
    for c in cases {
        let (status, body) = send(&app, c.request).await;
        assert_eq!(status, c.status, "{}: {body}", c.name);
        assert_eq!(body["error"]["code"], c.code, "{}: {body}", c.name);
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(c.message), "{}: {message}", c.name);
    }
    // Per-document errors: the good document is ingested, the bad ones reported.
    let (status, body) = send(
        &app,
        docs(json!({"documents": [
            {"id": "ok.md", "text": "a fine document about ovens"},
            {"id": "../escape", "text": "x"},
            {"id": "blank.md", "text": "   "},
            {"id": "kind.md", "text": "x", "kind": "web"},
            {"id": "ok.md", "text": "duplicate"}
        ]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["documentsAdded"], 1, "{body}");
    let errors = body["errors"].as_array().unwrap();
    let indexes: Vec<u64> = errors
        .iter()
        .map(|e| e["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indexes, vec![1, 2, 3, 4], "{body}");

    // Still serving, nothing lost.
    assert_eq!(documents(&app).await, 4);
    let (status, body) = send(&app, query(json!({"query": "sourdough bread oven"}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["results"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["documentId"] == "docs/bread.md"));
}

#[tokio::test]
async fn bearer_tokens_guard_everything_but_health() {
    let app = app(|_| {}, &[TOKEN]).await;
    let with = |req: Request<Body>, auth: Option<&str>| {
        let (mut parts, body) = req.into_parts();
        if let Some(a) = auth {
            parts
                .headers
                .insert(header::AUTHORIZATION, a.parse().unwrap());
        }
        Request::from_parts(parts, body)
    };
    for (auth, expected) in [
        (None, StatusCode::UNAUTHORIZED),
        (
            Some("Bearer wrong-token-0123456789"),
            StatusCode::UNAUTHORIZED,
        ),
        (Some(TOKEN), StatusCode::UNAUTHORIZED),
        (Some("Basic dXNlcjpwYXNz"), StatusCode::UNAUTHORIZED),
        (Some(&format!("Bearer {TOKEN}") as &str), StatusCode::OK),
    ] {
        for uri in ["/v1/stats", "/metrics", "/openapi.json"] {
            let (status, body) = send(&app, with(get(uri), auth)).await;
            assert_eq!(status, expected, "{uri} {auth:?}: {body}");
            if expected == StatusCode::UNAUTHORIZED {
                assert_eq!(body["error"]["code"], "unauthenticated");
            }
        }
    }
    let (status, body) = send(&app, query(json!({"query": "bread"}))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    for uri in ["/healthz", "/readyz"] {
        let (status, _) = send(&app, get(uri)).await;
        assert_eq!(status, StatusCode::OK, "{uri}");
    }
}

#[tokio::test]
async fn overload_is_refused_and_slow_requests_time_out() {
    let app = app(|c| c.server.max_concurrent_requests = 1, &[]).await;
    ingest_fixture(&app).await;
    let q = || query(json!({"query": "how does reciprocal rank fusion merge lists?"}));
    let (a, b) = tokio::join!(send(&app, q()), send(&app, q()));
    let mut statuses = [a.0, b.0];
    statuses.sort();
    assert_eq!(
        statuses,
        [StatusCode::OK, StatusCode::SERVICE_UNAVAILABLE],
        "{} / {}",
        a.1,
        b.1
    );
    let refused = if a.0 == StatusCode::OK { b.1 } else { a.1 };
    assert_eq!(refused["error"]["code"], "resource_exhausted");
    // The permit is released: the next request is served.
    let (status, _) = send(&app, q()).await;
    assert_eq!(status, StatusCode::OK);

    // A 1 ms deadline against a query of several ms. The deadline is checked when the query
    // waits; a worker starved of CPU until the legs' blocking tasks are done (a loaded
    // machine) can finish the query in one poll past it, so a few tries.
    let slow = app_with_timeout().await;
    let mut answers = Vec::new();
    for _ in 0..5 {
        let (status, body) = send(&slow, q()).await;
        if status == StatusCode::GATEWAY_TIMEOUT {
            assert_eq!(body["error"]["code"], "deadline_exceeded");
            return;
        }
        answers.push((status, body));
    }
    panic!("no query of five ran past the 1 ms deadline: {answers:?}");
}

async fn app_with_timeout() -> App {
    let app = app(|c| c.server.request_timeout_ms = 1, &[]).await;
    // Ingest runs before the deadline matters? No: it is guarded too, so write directly.
    let docs: Vec<_> = fixture()["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            crag_core::Document::new(
                crag_core::DocumentId::new(d["id"].as_str().unwrap()).unwrap(),
                d["id"].as_str().unwrap(),
                "",
                d["text"].as_str().unwrap(),
                crag_core::ChunkKind::Prose,
            )
            .unwrap()
        })
        .collect();
    app.state
        .engine()
        .ingest(
            docs,
            Vec::new(),
            &crag_engine::Scope::None,
            &crag_engine::NoProgress,
        )
        .await
        .unwrap();
    app
}

#[tokio::test]
async fn ask_runs_cgrag_within_a_session_and_sessions_are_listed_read_and_deleted() {
    let app = app(|_| {}, &[]).await;
    ingest_fixture(&app).await;
    let body = serde_json::json!({"query": "how are results fused", "newSession": true, "useWebSearch": false});
    let (status, answer) = send(
        &app,
        json_request(Method::POST, "/v1/ask", body.to_string()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let id = answer["sessionId"]
        .as_str()
        .expect("a session id")
        .to_owned();
    assert_eq!(id.len(), 32, "{answer}");
    assert!(answer["answer"].is_null(), "LLM-free: no answer text");
    assert_eq!(answer["detector"], "code");
    assert!(answer["passesUsed"].as_u64().unwrap() >= 1, "{answer}");
    assert!(
        !answer["results"].as_array().unwrap().is_empty(),
        "{answer}"
    );
    for key in [
        "gapsIdentified",
        "gapsResolved",
        "gapsUnresolved",
        "contextFromCache",
        "stop",
    ] {
        assert!(!answer[key].is_null(), "{key} in {answer}");
    }
    // The gaps as lists beside their counts.
    for (list, count) in [
        ("identifiedGaps", "gapsIdentified"),
        ("resolvedGaps", "gapsResolved"),
        ("unresolvedGaps", "gapsUnresolved"),
    ] {
        let listed = answer[list].as_array().unwrap_or_else(|| panic!("{list}"));
        assert_eq!(
            listed.len() as u64,
            answer[count].as_u64().unwrap(),
            "{answer}"
        );
    }
    assert_eq!(answer["contextFromCache"], false, "{answer}");

    // A follow-up in the session (named by the X-Session-Id header) starts from its cache.
    let follow = serde_json::json!({"query": "and the vector leg", "useWebSearch": false});
    let mut request = json_request(Method::POST, "/v1/ask", follow.to_string());
    request
        .headers_mut()
        .insert("x-session-id", id.parse().unwrap());
    let (status, second) = send(&app, request).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["sessionId"], id.as_str(), "{second}");
    assert_eq!(second["contextFromCache"], true, "{second}");
    assert!(
        second["contextFromCacheCount"].as_u64().unwrap() > 0,
        "{second}"
    );

    let (status, list) = send(&app, get("/v1/sessions")).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list["sessions"][0]["sessionId"], id.as_str());
    assert_eq!(list["sessions"][0]["turns"], 2);
    let (status, session) = send(&app, get(&format!("/v1/sessions/{id}"))).await;
    assert_eq!(status, StatusCode::OK, "{session}");
    assert_eq!(session["turns"][0]["question"], "how are results fused");
    let delete = Request::builder()
        .method(Method::DELETE)
        .uri(format!("/v1/sessions/{id}"))
        .body(Body::empty())
        .unwrap();
    let (status, _) = send(&app, delete).await;
    assert_eq!(status, StatusCode::OK);
    let (status, gone) = send(&app, get(&format!("/v1/sessions/{id}"))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{gone}");

    // Bad input is a 400 naming the field.
    for bad in [
        serde_json::json!({"query": "x", "sessionId": "not-hex"}),
        serde_json::json!({"query": "  "}),
        serde_json::json!({"query": "x", "passes": 9}),
    ] {
        let (status, err) =
            send(&app, json_request(Method::POST, "/v1/ask", bad.to_string())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {err}");
    }
    let (status, _) = send(&app, get("/v1/sessions?limit=0")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = send(&app, get("/v1/sessions/xyz")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn ask_streams_passes_as_server_sent_events() {
    let app = app(|_| {}, &[]).await;
    ingest_fixture(&app).await;
    let body = serde_json::json!({"query": "how are results fused", "useWebSearch": false});
    let request = Request::builder()
        .method(Method::POST)
        .uri("/v1/ask")
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, text) = send(&app, request).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let text = text.as_str().expect("an event stream, not JSON").to_owned();
    let pass = text.find("event: pass").expect("a pass event");
    let answer = text.find("event: answer").expect("the answer event");
    assert!(pass < answer, "{text}");
    // Bad input is still a plain 400 before any event.
    let bad = Request::builder()
        .method(Method::POST)
        .uri("/v1/ask")
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(Body::from(r#"{"query": "x", "sessionId": "nope"}"#))
        .unwrap();
    let (status, _) = send(&app, bad).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn every_route_but_health_needs_a_token() {
    let routes = documented::declared_routes();
    assert!(
        routes.len() >= 12,
        "the route list was not read: {routes:?}"
    );
    let app = app(|_| {}, &[TOKEN]).await;
    let openapi = send(&app, {
        let mut r = get("/openapi.json");
        r.headers_mut().insert(
            header::AUTHORIZATION,
            format!("Bearer {TOKEN}").parse().unwrap(),
        );
        r
    })
    .await
    .1;
    assert_eq!(
        openapi,
        *documented::DOCUMENT,
        "the served document is the derived one"
    );
    let open: Vec<&str> = routes
        .iter()
        .filter(|r| r.2)
        .map(|r| r.0.as_str())
        .collect();
    assert_eq!(open, ["/healthz", "/readyz"]);
    for (path, method, _) in &routes {
        let uri = path
            .replace("{collection}", "default")
            .replace("{name}", "default")
            .replace("/documents/{id}", "/documents/docs/x.md")
            .replace("{id}", "0123456789abcdef0123456789abcdef");
        let request = json_request(method.clone(), &uri, "{}");
        let (status, body) = send(&app, request).await;
        if ["/healthz", "/readyz"].contains(&path.as_str()) {
            assert_eq!(status, StatusCode::OK, "{method} {path}: {body}");
        } else {
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}: {body}");
            assert_eq!(body["error"]["code"], "unauthenticated", "{method} {path}");
            assert!(
                !body.to_string().contains(TOKEN),
                "the token never appears in an error: {body}"
            );
        }
    }
}

/// JSON bodies of every shape, a few levels deep, with the API's own field names.
fn json_body() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|x| json!(x)),
        any::<f64>().prop_map(|x| json!(x)),
        ".{0,12}".prop_map(Value::String),
        Just(json!("code")),
        Just(json!("rust")),
    ];
    let key = prop_oneof![
        Just("query"),
        Just("topK"),
        Just("tokenBudget"),
        Just("filters"),
        Just("kinds"),
        Just("languages"),
        Just("symbolKinds"),
        Just("sourcePrefix"),
        Just("documents"),
        Just("id"),
        Just("text"),
        Just("kind"),
        Just("sessionId"),
        Just("useCrag"),
        Just("x"),
    ]
    .prop_map(str::to_owned);
    leaf.prop_recursive(4, 32, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn arbitrary_json_bodies_get_a_clear_answer() {
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::{Config as RunnerConfig, TestRunner};
    let app = app(|_| {}, &[]).await;
    ingest_fixture(&app).await;
    let mut runner = TestRunner::new(RunnerConfig {
        failure_persistence: None,
        ..RunnerConfig::default()
    });
    let strategy = json_body();
    let mut answered = std::collections::BTreeMap::<u16, usize>::new();
    for case in 0..10_000 {
        let body = strategy.new_tree(&mut runner).expect("value").current();
        let (uri, method) = match case % 3 {
            0 => ("/v1/query", Method::POST),
            1 => ("/v1/documents", Method::POST),
            _ => ("/v1/ask", Method::POST),
        };
        let (status, answer) = send(&app, json_request(method, uri, body.to_string())).await;
        assert!(
            !status.is_server_error() || status == StatusCode::SERVICE_UNAVAILABLE,
            "{uri} {body}: {status} {answer}"
        );
        if status.is_client_error() {
            assert!(
                answer["error"]["message"]
                    .as_str()
                    .is_some_and(|m| !m.is_empty()),
                "{uri} {body}: {status} {answer}"
            );
        }
        *answered.entry(status.as_u16()).or_default() += 1;
    }
    assert!(answered.keys().any(|s| *s >= 400), "{answered:?}");
    // Nothing stored was lost: the fixture is still there.
    assert!(documents(&app).await >= 3);
}

#[test]
fn the_document_check_catches_drift() {
    let schema = json!({"$ref": "#/components/schemas/QueryResponse"});
    let undocumented = json!({"query": "q", "notAField": 1});
    let error = documented::conforms(&schema, &undocumented, "$").unwrap_err();
    assert!(error.contains("notAField"), "{error}");
    let mistyped = json!({"query": 7});
    let error = documented::conforms(&schema, &mistyped, "$").unwrap_err();
    assert!(error.contains("$.query"), "{error}");
    let error = documented::conforms(
        &json!({"$ref": "#/components/schemas/Error"}),
        &json!({}),
        "$",
    )
    .unwrap_err();
    assert!(error.contains("required"), "{error}");
    let nested = json!({"results": [{"span": {"byteStart": "zero"}}]});
    let error = documented::conforms(&schema, &nested, "$").unwrap_err();
    assert!(error.contains("$.results[0].span.byteStart"), "{error}");
    if std::env::var_os("CRAG_PRINT_OPENAPI").is_some() {
        println!(
            "{}",
            serde_json::to_string_pretty(&*documented::DOCUMENT).unwrap()
        );
    }
}

#[tokio::test]
async fn metadata_is_kept_returned_and_filtered_on_and_bad_filters_are_refused() {
    let app = app(|_| {}, &[]).await;
    let sent = json!({"documents": [
        {"id": "kb/oven.md", "title": "Oven", "metadata": {"team": "billing", "year": 2021},
         "text": "A hot oven bakes bread with a dark crust in forty minutes."},
        {"id": "kb/proof.md", "title": "Proof", "metadata": {"team": "search", "year": 2024},
         "text": "Bread dough proofs slowly overnight before it meets the oven."},
        {"id": "kb/salt.md", "title": "Salt",
         "text": "Salt tightens gluten and slows the yeast in bread dough."}
    ]});
    let (status, body) = send(
        &app,
        json_request(Method::POST, "/v1/documents", sent.to_string()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let query = |filter: Value| {
        json_request(
            Method::POST,
            "/v1/query",
            json!({"query": "bread oven", "topK": 3, "useCrag": false,
                   "filters": {"metadata": filter}})
            .to_string(),
        )
    };
    let (status, body) = send(&app, query(json!({"year": {"$gte": 2022}}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let results = body["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{body}");
    assert_eq!(results[0]["documentId"], "kb/proof.md");
    assert_eq!(results[0]["metadata"]["team"], "search");
    assert_eq!(
        results[0]["metadata"]["kind"], "prose",
        "derived fields returned"
    );
    let (status, body) = send(&app, query(json!({"team": "nobody"}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["results"],
        json!([]),
        "a filter matching nothing returns nothing"
    );

    for (filter, expected) in [
        (json!({"colour": "red"}), "unknown metadata field `colour`"),
        (
            json!({"year": "2021"}),
            "holds number, compared with a string",
        ),
        (json!({"year": {"$like": 1}}), "unknown operator `$like`"),
        (json!([1]), "expected a JSON object"),
    ] {
        let (status, body) = send(&app, query(filter.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{filter}: {body}");
        let got = body["error"]["message"].as_str().unwrap();
        assert!(got.contains(expected), "{got}");
    }
    // Bad metadata at ingest: refused, nothing stored.
    for (metadata, expected) in [
        (json!({"source": "x"}), "derives"),
        (json!({"a.b": 1}), "key `a.b`"),
        (json!([1]), "must be a JSON object"),
        (json!({"big": "x".repeat(20_000)}), "bytes of JSON"),
    ] {
        let body = json!({"documents": [{"id": "kb/bad.md", "text": "bad", "metadata": metadata}]});
        let (status, answer) = send(
            &app,
            json_request(Method::POST, "/v1/documents", body.to_string()),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["documentsAdded"], 0, "{answer}");
        let got = answer["errors"][0]["message"].as_str().unwrap();
        assert!(got.contains(expected), "{got}");
    }
    assert_eq!(documents(&app).await, 3);
}

#[tokio::test]
async fn a_scoped_token_sees_its_documents_only_and_cannot_widen_or_write() {
    const BILLING: &str = "billing-token-0123456789";
    let app = app(
        |c| {
            c.auth.scoped = vec![crag_config::ScopedToken {
                token: BILLING.into(),
                filter: json!({"team": "billing"}).as_object().unwrap().clone(),
                ..Default::default()
            }]
        },
        &[TOKEN],
    )
    .await;
    let sent = json!({"documents": [
        {"id": "kb/a.md", "metadata": {"team": "billing"}, "text": "Refunds of bread orders."},
        {"id": "kb/b.md", "metadata": {"team": "search"}, "text": "Bread ranking in search."},
        {"id": "kb/c.md", "text": "Bread without a team."}
    ]});
    let ingest = || json_request(Method::POST, "/v1/documents", sent.to_string());
    let (status, body) = send(&app, with_token(BILLING, ingest())).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "permission_denied");
    let (status, body) = send(&app, with_token(TOKEN, ingest())).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let query = |filter: Value| {
        json_request(
            Method::POST,
            "/v1/query",
            json!({"query": "bread", "topK": 5, "useCrag": false,
                   "filters": {"metadata": filter}})
            .to_string(),
        )
    };
    let ids = |body: &Value| -> Vec<String> {
        body["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["documentId"].as_str().unwrap().to_owned())
            .collect()
    };
    let (status, body) = send(&app, with_token(TOKEN, query(json!({})))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(ids(&body).len(), 3, "the full token sees everything");
    for widening in [
        json!({}),
        json!({"$or": [{"team": "search"}, {"team": "billing"}]}),
        json!({"team": {"$ne": "billing"}}),
    ] {
        let (status, body) = send(&app, with_token(BILLING, query(widening.clone()))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let seen = ids(&body);
        assert!(
            seen.iter().all(|id| id == "kb/a.md"),
            "{widening}: {seen:?}"
        );
    }
    let (_, body) = send(&app, with_token(BILLING, query(json!({})))).await;
    assert_eq!(ids(&body), ["kb/a.md"]);
    let delete = Request::delete("/v1/documents/kb%2Fa.md")
        .body(Body::empty())
        .unwrap();
    let (status, _) = send(&app, with_token(BILLING, delete)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        documents_by(&app, with_token(TOKEN, get("/v1/stats"))).await,
        3,
        "nothing deleted"
    );
}

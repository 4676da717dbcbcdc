//! The gRPC service in process (a real server on 127.0.0.1, the generated client) over the
//! real embedded adapters on a small fixture corpus written by the test.

use std::time::Duration;

use crag_grpc::pb::crag_client::CragClient;
use crag_grpc::pb::{DeleteDocumentRequest, Document, Filters, QueryRequest, StatsRequest};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};

mod support;
use support::{server, TOKEN};

fn doc(id: &str, text: &str, kind: &str) -> Document {
    Document {
        id: id.into(),
        text: text.into(),
        title: String::new(),
        source: String::new(),
        kind: kind.into(),
        metadata_json: String::new(),
    }
}

fn fixture() -> Vec<Document> {
    vec![
        doc("docs/fusion.md", "Reciprocal rank fusion merges the BM25 list and the vector list. Each document scores one over sixty plus its rank in every list.", ""),
        doc("docs/bread.md", "Sourdough bread needs a starter, flour, water and salt. Bake it in a hot oven until the crust is dark.", "prose"),
        doc("src/fuse.rs", "pub fn reciprocal_rank_fusion(bm25: &[Hit], vectors: &[Hit], k: f32) -> Vec<Hit> { todo() }", "code"),
    ]
}

fn query(text: &str) -> QueryRequest {
    QueryRequest {
        query: text.into(),
        ..QueryRequest::default()
    }
}

async fn documents(client: &mut CragClient<Channel>) -> u64 {
    client
        .stats(StatsRequest {})
        .await
        .unwrap()
        .into_inner()
        .documents
}

#[tokio::test]
async fn query_ingest_delete_stats_health_and_reflection() {
    let s = server(|_| {}, &[]).await;
    let mut client = s.client().await;
    let r = client
        .ingest(tokio_stream::iter(fixture()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!((r.documents_received, r.documents_added), (3, 3), "{r:?}");
    assert!(r.chunks_written >= 3 && r.errors.is_empty());
    assert_eq!(documents(&mut client).await, 3);

    let r = client
        .query(QueryRequest {
            top_k: Some(3),
            session_id: "s-1".into(),
            use_web_search: Some(false),
            ..query("how does reciprocal rank fusion merge lists?")
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.session_id, "s-1");
    let crag = r.crag.unwrap();
    assert!(["correct", "ambiguous", "incorrect"].contains(&crag.verdict.as_str()));
    assert!(crag.score.is_some() && !crag.criteria.is_empty());
    assert!(!crag.web_search_used);
    assert_eq!(crag.route, "single");
    assert!(
        crag.route_reason.contains("single retrieval"),
        "{}",
        crag.route_reason
    );
    assert!(crag.timings.unwrap().stages_ms["total"] > 0.0);
    assert!(!r.artifacts.is_empty());
    let first = &r.artifacts[0];
    assert!(first.fused_score.is_some() && first.span.is_some());
    assert!(first.keyword.is_some() || first.vector.is_some());

    let r = client
        .query(QueryRequest {
            use_crag: Some(false),
            filters: Some(Filters {
                source_prefix: String::new(),
                kinds: vec!["code".into()],
                ..Filters::default()
            }),
            ..query("reciprocal rank fusion")
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.artifacts.len(), 1, "{r:?}");
    assert_eq!(r.artifacts[0].document_id, "src/fuse.rs");
    let code = r.artifacts[0].code.as_ref().expect("code metadata");
    assert_eq!(
        (
            code.language.as_str(),
            code.symbol.as_str(),
            code.symbol_kind.as_str()
        ),
        ("rust", "reciprocal_rank_fusion", "function")
    );
    assert_eq!(r.artifacts[0].id, "src/fuse.rs#reciprocal_rank_fusion");
    let r = client
        .query(QueryRequest {
            use_crag: Some(false),
            filters: Some(Filters {
                languages: vec!["python".into()],
                ..Filters::default()
            }),
            ..query("reciprocal rank fusion")
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.artifacts.is_empty(), "no python here: {r:?}");

    let r = client
        .delete_document(DeleteDocumentRequest {
            id: "docs/bread.md".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.deleted);
    let e = client
        .delete_document(DeleteDocumentRequest {
            id: "docs/bread.md".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    assert_eq!(documents(&mut client).await, 2);

    // Standard health service.
    let mut health = tonic_health::pb::health_client::HealthClient::new(s.channel().await);
    let status = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "crag.v1.Crag".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .status;
    assert_eq!(
        status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );

    // Server reflection lists the service.
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    let mut reflection = ServerReflectionClient::new(s.channel().await);
    let mut answers = reflection
        .server_reflection_info(tokio_stream::iter(vec![ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        }]))
        .await
        .unwrap()
        .into_inner();
    let answer = answers.message().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = answer.message_response else {
        panic!("unexpected reflection answer {answer:?}");
    };
    let names: Vec<_> = list.service.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"crag.v1.Crag"), "{names:?}");
    assert!(names.contains(&"grpc.health.v1.Health"), "{names:?}");
    drop(client);
    s.shutdown().await;
}

/// Sends raw bytes as a request message (to test malformed protobuf).
#[derive(Default, Clone)]
struct RawCodec;

struct RawEncoder;
struct RawDecoder;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawEncoder;
    type Decoder = RawDecoder;
    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }
    fn decoder(&mut self) -> RawDecoder {
        RawDecoder
    }
}

impl Encoder for RawEncoder {
    type Item = Vec<u8>;
    type Error = Status;
    fn encode(&mut self, item: Vec<u8>, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        use bytes::BufMut;
        buf.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawDecoder {
    type Item = Vec<u8>;
    type Error = Status;
    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        use bytes::Buf;
        let mut out = vec![0; buf.remaining()];
        buf.copy_to_slice(&mut out);
        Ok(Some(out))
    }
}

/// `n` as a protobuf varint.
fn varint(mut n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    out
}

async fn raw_query(channel: Channel, bytes: Vec<u8>) -> Status {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    grpc.unary(
        Request::new(bytes),
        "/crag.v1.Crag/Query".parse().unwrap(),
        RawCodec,
    )
    .await
    .unwrap_err()
}

#[tokio::test]
async fn bad_inputs_get_clear_codes_and_lose_nothing() {
    let s = server(|_| {}, &[]).await;
    let mut client = s.client().await;
    client.ingest(tokio_stream::iter(fixture())).await.unwrap();
    let cases: Vec<(&str, QueryRequest, &str)> = vec![
        ("empty query", query(""), "query must not be empty"),
        (
            "whitespace query",
            query(" \t\n"),
            "query must not be empty",
        ),
        (
            "1 MB query",
            query(&"q".repeat(1024 * 1024)),
            "the limit is 2000",
        ),
        (
            "negative top_k",
            QueryRequest {
                top_k: Some(-5),
                ..query("bread")
            },
            "topK must be between 1 and 100",
        ),
        (
            "huge top_k",
            QueryRequest {
                top_k: Some(i64::MAX),
                ..query("bread")
            },
            "topK",
        ),
        (
            "zero token budget",
            QueryRequest {
                token_budget: Some(0),
                ..query("bread")
            },
            "tokenBudget",
        ),
        (
            "negative token budget",
            QueryRequest {
                token_budget: Some(-1),
                ..query("bread")
            },
            "tokenBudget",
        ),
        (
            "unknown kind",
            QueryRequest {
                filters: Some(Filters {
                    source_prefix: String::new(),
                    kinds: vec!["pdf".into()],
                    ..Filters::default()
                }),
                ..query("bread")
            },
            "unknown kind `pdf`",
        ),
        (
            "unknown language",
            QueryRequest {
                filters: Some(Filters {
                    languages: vec!["cobol".into()],
                    ..Filters::default()
                }),
                ..query("bread")
            },
            "unknown language `cobol`",
        ),
        (
            "unknown symbol kind",
            QueryRequest {
                filters: Some(Filters {
                    symbol_kinds: vec!["lambda".into()],
                    ..Filters::default()
                }),
                ..query("bread")
            },
            "unknown kind `lambda`",
        ),
        (
            "bad session id",
            QueryRequest {
                session_id: "a b".into(),
                ..query("bread")
            },
            "sessionId",
        ),
        (
            "control char prefix",
            QueryRequest {
                filters: Some(Filters {
                    source_prefix: "a\u{1}".into(),
                    kinds: vec![],
                    ..Filters::default()
                }),
                ..query("bread")
            },
            "sourcePrefix",
        ),
    ];
    for (name, request, message) in cases {
        let e = client.query(request).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{name}: {e:?}");
        assert!(e.message().contains(message), "{name}: {}", e.message());
    }

    // Malformed protobuf: a truncated varint, a wrong wire type for `query`, invalid UTF-8.
    for bytes in [
        vec![0x10, 0xff],
        vec![0x0d, 1, 2, 3, 4],
        vec![0x0a, 0x02, 0xff, 0xfe],
    ] {
        let e = raw_query(s.channel().await, bytes.clone()).await;
        assert_eq!(e.code(), Code::InvalidArgument, "{bytes:?}: {e:?}");
        assert!(
            e.message().contains("malformed protobuf"),
            "{}",
            e.message()
        );
    }

    // Deeply nested: 10,000 unknown groups inside one another (prost stops at its recursion
    // limit), and 1,000 nested length-delimited unknown fields inside `filters` (skipped
    // whole, so the request reaches validation: its query is empty).
    let mut groups = vec![0x7b_u8; 10_000];
    groups.extend(std::iter::repeat_n(0x7c_u8, 10_000));
    let e = raw_query(s.channel().await, groups).await;
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(
        e.message().contains("malformed protobuf"),
        "{}",
        e.message()
    );
    let mut nested: Vec<u8> = Vec::new();
    for _ in 0..1_000 {
        nested = [vec![0x7a], varint(nested.len()), nested].concat();
    }
    let request = [vec![0x3a], varint(nested.len()), nested].concat();
    let e = raw_query(s.channel().await, request).await;
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("query"), "{}", e.message());

    // Over the message size limit.
    let e = client
        .query(query(&"q".repeat(5 * 1024 * 1024)))
        .await
        .unwrap_err();
    assert!(
        matches!(e.code(), Code::OutOfRange | Code::ResourceExhausted),
        "{e:?}"
    );

    // Deletes: path tricks and unknown ids.
    for (id, code, message) in [
        ("../etc/passwd", Code::InvalidArgument, "`..`"),
        ("a\\b", Code::InvalidArgument, "backslashes"),
        ("", Code::InvalidArgument, "must not be empty"),
        ("nope.md", Code::NotFound, "nope.md"),
    ] {
        let e = client
            .delete_document(DeleteDocumentRequest { id: id.into() })
            .await
            .unwrap_err();
        assert_eq!(e.code(), code, "{id}: {e:?}");
        assert!(e.message().contains(message), "{id}: {}", e.message());
    }

    // Ingest: empty stream, too many documents, per-document errors.
    let e = client
        .ingest(tokio_stream::iter(Vec::<Document>::new()))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message().contains("documents must not be empty"),
        "{}",
        e.message()
    );
    let many: Vec<_> = (0..300)
        .map(|i| doc(&format!("m{i}"), "text", ""))
        .collect();
    let e = client.ingest(tokio_stream::iter(many)).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("max_ingest_batch"), "{}", e.message());
    let r = client
        .ingest(tokio_stream::iter(vec![
            doc("ok.md", "an oven document", ""),
            doc("../up", "x", ""),
            doc("blank.md", "  ", ""),
            doc("web.md", "x", "web"),
        ]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.documents_added, 1, "{r:?}");
    let indexes: Vec<u32> = r.errors.iter().map(|e| e.index).collect();
    assert_eq!(indexes, vec![1, 2, 3], "{r:?}");

    // Still serving, nothing lost.
    assert_eq!(documents(&mut client).await, 4);
    let r = client
        .query(query("sourdough bread oven"))
        .await
        .unwrap()
        .into_inner();
    assert!(r.artifacts.iter().any(|a| a.document_id == "docs/bread.md"));
    drop(client);
    s.shutdown().await;
}

#[tokio::test]
async fn tokens_guard_everything_but_health() {
    let s = server(|_| {}, &[TOKEN]).await;
    let mut client = s.client().await;
    let e = client.stats(StatsRequest {}).await.unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
    for value in ["Bearer wrong-token-00000000", TOKEN, "Basic abc"] {
        let mut request = Request::new(StatsRequest {});
        request
            .metadata_mut()
            .insert("authorization", MetadataValue::try_from(value).unwrap());
        let e = client.stats(request).await.unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated, "{value}: {e:?}");
    }
    let mut request = Request::new(StatsRequest {});
    request.metadata_mut().insert(
        "authorization",
        MetadataValue::try_from(format!("Bearer {TOKEN}")).unwrap(),
    );
    client.stats(request).await.unwrap();
    let mut health = tonic_health::pb::health_client::HealthClient::new(s.channel().await);
    health
        .check(tonic_health::pb::HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap();
    drop(client);
    s.shutdown().await;
}

#[tokio::test]
async fn health_answers_from_readiness() {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::HealthCheckRequest;
    let s = server(|_| {}, &[]).await;
    let mut health = tonic_health::pb::health_client::HealthClient::new(s.channel().await);
    let check = |service: &str| HealthCheckRequest {
        service: service.into(),
    };
    let status = |r: tonic_health::pb::HealthCheckResponse| r.status;
    let serving = ServingStatus::Serving as i32;
    let not_serving = ServingStatus::NotServing as i32;
    for service in ["", "crag.v1.Crag"] {
        let r = health.check(check(service)).await.unwrap().into_inner();
        assert_eq!(status(r), serving, "{service:?}");
    }
    let e = health.check(check("crag.v1.Nope")).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    assert!(e.message().contains("crag.v1.Nope"), "{e:?}");

    let mut watch = health.watch(check("")).await.unwrap().into_inner();
    let first = watch.message().await.unwrap().unwrap();
    assert_eq!(status(first), serving);
    // Draining: Check says so at once, Watch within its interval.
    s.api.set_ready(false);
    let r = health
        .check(check("crag.v1.Crag"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status(r), not_serving);
    let next = tokio::time::timeout(std::time::Duration::from_secs(10), watch.message())
        .await
        .expect("Watch reports the change")
        .unwrap()
        .unwrap();
    assert_eq!(status(next), not_serving);
    s.api.set_ready(true);
    let r = health.check(check("")).await.unwrap().into_inner();
    assert_eq!(status(r), serving);
    s.shutdown().await;
}

#[tokio::test]
async fn overload_is_refused_and_shutdown_drains() {
    let s = server(|c| c.server.max_concurrent_requests = 1, &[]).await;
    let mut client = s.client().await;
    client.ingest(tokio_stream::iter(fixture())).await.unwrap();
    let (mut a, mut b) = (client.clone(), client.clone());
    let q = || query("how does reciprocal rank fusion merge lists?");
    let (ra, rb) = tokio::join!(a.query(q()), b.query(q()));
    let codes: Vec<Code> = [&ra, &rb]
        .iter()
        .map(|r| r.as_ref().map_or_else(|e| e.code(), |_| Code::Ok))
        .collect();
    assert!(codes.contains(&Code::Ok), "{codes:?}");
    assert!(codes.contains(&Code::ResourceExhausted), "{codes:?}");
    client.query(q()).await.unwrap();

    // Counted by method and code, the refusal by reason too.
    let calls = |method, code| {
        s.counter(
            "crag_grpc_requests_total",
            &[("method", method), ("code", code)],
        )
    };
    assert_eq!(calls("Ingest", "OK"), 1.0);
    assert_eq!(calls("Query", "OK"), 2.0);
    assert_eq!(calls("Query", "RESOURCE_EXHAUSTED"), 1.0);
    assert_eq!(
        s.counter("crag_grpc_rejected_total", &[("reason", "concurrency")]),
        1.0
    );

    // A call in flight when shutdown starts still completes.
    let mut c = client.clone();
    let in_flight = tokio::spawn(async move { c.query(q()).await });
    tokio::time::sleep(Duration::from_millis(20)).await;
    s.shutdown().await;
    in_flight.await.unwrap().unwrap();
}

#[tokio::test]
async fn evaluate_judges_documents_retrieved_elsewhere() {
    use crag_grpc::pb::{EvaluateDocument, EvaluateRequest};
    let s = server(|_| {}, &[]).await;
    let mut client = s.client().await;
    let query = "how does reciprocal rank fusion merge the BM25 and vector lists?";
    let document = |id: &str, text: &str| EvaluateDocument {
        id: id.into(),
        text: text.into(),
        ..EvaluateDocument::default()
    };
    let answer = client
        .evaluate(EvaluateRequest {
            query: query.into(),
            documents: vec![
                document(
                    "fusion",
                    "Reciprocal rank fusion merges the BM25 list and the vector list: each \
                     document scores one over sixty plus its rank in every list.",
                ),
                document(
                    "",
                    "Sourdough bread needs a starter, flour, water and salt.",
                ),
            ],
            context: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.evaluator, "heuristic");
    assert!(["correct", "ambiguous", "incorrect"].contains(&answer.verdict.as_str()));
    assert!(!answer.criteria.is_empty() && !answer.reasoning.is_empty());
    let [fusion, bread] = answer.documents.as_slice() else {
        panic!("two judged documents: {answer:?}");
    };
    assert_eq!((fusion.id.as_str(), bread.id.as_str()), ("fusion", "1"));
    assert!(fusion.score > bread.score, "{answer:?}");
    assert!(fusion.similarity > bread.similarity, "{answer:?}");
    assert!(
        fusion.reason.is_none() && bread.reason.is_none(),
        "the heuristic gives no per-document reason: {answer:?}"
    );

    let answer = client
        .evaluate(EvaluateRequest {
            query: query.into(),
            context: Some("Sourdough bread needs a starter.".into()),
            ..EvaluateRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.documents[0].id, "context");

    for (request, message) in [
        (
            EvaluateRequest {
                query: query.into(),
                ..EvaluateRequest::default()
            },
            "documents (at least one) or context is required",
        ),
        (
            EvaluateRequest {
                query: query.into(),
                documents: vec![document("a", "t")],
                context: Some("c".into()),
            },
            "either documents or context",
        ),
        (
            EvaluateRequest {
                query: String::new(),
                context: Some("c".into()),
                ..EvaluateRequest::default()
            },
            "query must not be empty",
        ),
    ] {
        let e = client.evaluate(request).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
        assert!(e.message().contains(message), "{}", e.message());
    }
    s.shutdown().await;
}

#[tokio::test]
async fn ask_and_sessions_over_grpc() {
    use crag_grpc::pb::{AskRequest, ListSessionsRequest, SessionRequest};
    let s = server(|_| {}, &[]).await;
    let mut client = s.client().await;
    client.ingest(tokio_stream::iter(fixture())).await.unwrap();
    let answer = client
        .ask(AskRequest {
            query: "how are results fused".into(),
            new_session: true,
            use_web_search: Some(false),
            ..AskRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.session_id.len(), 32, "{answer:?}");
    assert!(answer.answer.is_none(), "LLM-free");
    assert_eq!(answer.detector, "code");
    assert!(answer.passes_used >= 1);
    assert!(!answer.artifacts.is_empty());
    assert!(answer.crag.is_some());

    let list = client
        .list_sessions(ListSessionsRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(list.sessions[0].session_id, answer.session_id);
    let session = client
        .get_session(SessionRequest {
            session_id: answer.session_id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(session.turns.len(), 1);
    assert_eq!(session.turns[0].question, "how are results fused");
    client
        .delete_session(SessionRequest {
            session_id: answer.session_id.clone(),
        })
        .await
        .unwrap();
    let gone = client
        .get_session(SessionRequest {
            session_id: answer.session_id,
        })
        .await
        .unwrap_err();
    assert_eq!(gone.code(), Code::NotFound);

    // Streamed: a pass event per pass, then the answer.
    let mut stream = client
        .ask_stream(AskRequest {
            query: "how are results fused".into(),
            use_web_search: Some(false),
            ..AskRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut events = Vec::new();
    while let Some(event) = stream.message().await.unwrap() {
        events.push(event.event.expect("an event"));
    }
    use crag_grpc::pb::ask_event::Event;
    assert!(matches!(events.first(), Some(Event::Pass(_))), "{events:?}");
    assert!(
        matches!(events.last(), Some(Event::Answer(_))),
        "{events:?}"
    );
    let e = client
        .ask_stream(AskRequest {
            query: " ".into(),
            ..AskRequest::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);

    for bad in [
        AskRequest {
            query: "x".into(),
            session_id: "not-hex".into(),
            ..AskRequest::default()
        },
        AskRequest {
            query: " ".into(),
            ..AskRequest::default()
        },
    ] {
        let e = client.ask(bad).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    }
    s.shutdown().await;
}

/// The RPCs of `crag.v1.Crag`, read from the proto: an RPC added without authentication fails
/// [`every_rpc_needs_a_token`].
fn declared_rpcs() -> Vec<String> {
    include_str!("../../../proto/crag/v1/crag.proto")
        .lines()
        .filter_map(|l| l.trim().strip_prefix("rpc "))
        .filter_map(|l| l.split('(').next())
        .map(|name| name.trim().to_owned())
        .collect()
}

#[tokio::test]
async fn every_rpc_needs_a_token() {
    let rpcs = declared_rpcs();
    assert!(rpcs.len() >= 10, "the RPC list was not read: {rpcs:?}");
    let s = server(|_| {}, &[TOKEN]).await;
    for rpc in &rpcs {
        let mut grpc = tonic::client::Grpc::new(s.channel().await);
        grpc.ready().await.unwrap();
        let path = format!("/crag.v1.Crag/{rpc}").parse().unwrap();
        // An empty message, sent as a stream of one: valid for every kind of RPC.
        let mut request = Request::new(tokio_stream::iter(vec![Vec::<u8>::new()]));
        request.metadata_mut().insert(
            "authorization",
            MetadataValue::try_from("Bearer not-the-token-0000000000").unwrap(),
        );
        let status = match grpc.streaming(request, path, RawCodec).await {
            Err(status) => status,
            Ok(response) => match response.into_inner().message().await {
                Err(status) => status,
                Ok(message) => panic!("{rpc} answered without a valid token: {message:?}"),
            },
        };
        assert_eq!(status.code(), Code::Unauthenticated, "{rpc}: {status:?}");
        assert!(
            !status.message().contains("not-the-token"),
            "{rpc}: the token never appears in an error: {status:?}"
        );
    }
    s.shutdown().await;
}

/// 1 ms deadlines and ingest streams the client abandons half-way: the call fails with a
/// clear code (or completes), the server keeps serving, and whatever was cut off leaves both
/// indexes agreeing (a query never meets a half-ingested document; `reconcile` finds at most
/// what the cancellation left and repairs it).
#[tokio::test]
async fn deadlines_and_abandoned_streams_leave_the_indexes_consistent() {
    let s = server(|_| {}, &[]).await;
    let mut client = s.client().await;
    client.ingest(tokio_stream::iter(fixture())).await.unwrap();

    let mut hasty = Request::new(query("how does reciprocal rank fusion merge lists?"));
    hasty.set_timeout(Duration::from_millis(1));
    match client.query(hasty).await {
        Ok(_) => {}
        Err(status) => assert!(
            matches!(status.code(), Code::DeadlineExceeded | Code::Cancelled),
            "{status:?}"
        ),
    }

    // Ingests cut off by a 1 ms deadline, a few times over.
    for round in 0..5 {
        let docs: Vec<Document> = (0..8)
            .map(|i| {
                doc(
                    &format!("hasty/{round}-{i}.md"),
                    &format!("Hasty note {round} {i}: the kiln fires the glaze at cone six."),
                    "prose",
                )
            })
            .collect();
        let mut hasty = Request::new(tokio_stream::iter(docs));
        hasty.set_timeout(Duration::from_millis(1));
        if let Err(status) = client.ingest(hasty).await {
            assert!(
                matches!(status.code(), Code::DeadlineExceeded | Code::Cancelled),
                "{status:?}"
            );
        }
    }

    // A stream the client abandons after one document.
    let abandoned = tokio_stream::StreamExt::chain(
        tokio_stream::iter(vec![doc(
            "abandoned/a.md",
            "Half a stream of pottery notes.",
            "prose",
        )]),
        tokio_stream::pending(),
    );
    let mut c = client.clone();
    let cut = tokio::time::timeout(Duration::from_millis(500), c.ingest(abandoned)).await;
    assert!(
        cut.is_err(),
        "the stream never ends, so the call cannot complete"
    );

    // The server serves on; what a cancellation cut between the two index writes is
    // repaired once, and a stream abandoned half-way stored nothing (a stream is ingested
    // whole or not at all).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stats = client.stats(StatsRequest {}).await.unwrap().into_inner();
    assert!(stats.documents >= 3, "{stats:?}");
    let first = s.engine.reconcile().await.unwrap();
    println!("after the cancelled calls: {first:?}");
    let report = s.engine.reconcile().await.unwrap();
    assert!(
        !report.repaired(),
        "a second reconcile finds nothing: {report:?}"
    );
    let stats = s.engine.stats().await.unwrap();
    assert_eq!(stats.keyword_chunks, stats.vector_chunks, "{stats:?}");
    let answer = client
        .query(query("half a stream of pottery notes"))
        .await
        .unwrap()
        .into_inner();
    assert!(
        answer
            .artifacts
            .iter()
            .all(|a| a.document_id != "abandoned/a.md"),
        "{answer:?}"
    );
    s.shutdown().await;
}

#[tokio::test]
async fn metadata_is_kept_returned_and_filtered_on_over_grpc() {
    let s = server(|_| {}, &[]).await;
    let mut client = s.client().await;
    let with = |id: &str, text: &str, metadata: &str| Document {
        metadata_json: metadata.into(),
        ..doc(id, text, "prose")
    };
    client
        .ingest(tokio_stream::iter(vec![
            with(
                "kb/oven.md",
                "A hot oven bakes bread with a dark crust.",
                r#"{"team": "billing", "year": 2021}"#,
            ),
            with(
                "kb/proof.md",
                "Bread dough proofs overnight before the oven.",
                r#"{"team": "search", "year": 2024}"#,
            ),
        ]))
        .await
        .unwrap();
    let filtered = |metadata_json: &str| QueryRequest {
        use_crag: Some(false),
        filters: Some(Filters {
            metadata_json: metadata_json.into(),
            ..Filters::default()
        }),
        ..query("bread oven")
    };
    let answer = client
        .query(filtered(r#"{"team": {"$in": ["search"]}}"#))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.artifacts.len(), 1);
    assert_eq!(answer.artifacts[0].document_id, "kb/proof.md");
    let metadata: serde_json::Value =
        serde_json::from_str(&answer.artifacts[0].metadata_json).unwrap();
    assert_eq!(metadata["year"], 2024);
    assert_eq!(metadata["kind"], "prose");
    for (bad, expected) in [
        ("{not json", "filters.metadataJson is not JSON"),
        (r#"{"colour": 1}"#, "unknown metadata field `colour`"),
        (r#"{"year": {"$gt": "soon"}}"#, "RFC 3339"),
    ] {
        let e = client.query(filtered(bad)).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{bad}: {e:?}");
        assert!(e.message().contains(expected), "{bad}: {}", e.message());
    }
    let e = client
        .ingest(tokio_stream::iter(vec![with("kb/bad.md", "bad", "{oops")]))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(
        e.message().contains("metadataJson is not JSON"),
        "{}",
        e.message()
    );
    let r = client
        .ingest(tokio_stream::iter(vec![with(
            "kb/bad.md",
            "bad",
            r#"{"kind": "x"}"#,
        )]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.documents_added, 0, "{r:?}");
    assert!(r.errors[0].message.contains("derives"), "{r:?}");
    assert_eq!(documents(&mut client).await, 2, "nothing stored");
}

#[tokio::test]
async fn a_scoped_token_sees_its_documents_only_over_grpc() {
    const BILLING: &str = "billing-token-0123456789";
    let s = server(
        |c| {
            c.auth.scoped = vec![crag_config::ScopedToken {
                token: BILLING.into(),
                filter: serde_json::json!({"team": "billing"})
                    .as_object()
                    .unwrap()
                    .clone(),
                ..Default::default()
            }]
        },
        &[TOKEN],
    )
    .await;
    let mut client = s.client().await;
    fn as_token<T>(token: &str, message: T) -> Request<T> {
        let mut request = Request::new(message);
        let value = MetadataValue::try_from(format!("Bearer {token}")).unwrap();
        request.metadata_mut().insert("authorization", value);
        request
    }
    let with = |id: &str, team: &str| Document {
        metadata_json: format!(r#"{{"team": "{team}"}}"#),
        ..doc(id, "Bread orders and their refunds.", "prose")
    };
    let documents = || vec![with("kb/a.md", "billing"), with("kb/b.md", "search")];
    let e = client
        .ingest(as_token(BILLING, tokio_stream::iter(documents())))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    client
        .ingest(as_token(TOKEN, tokio_stream::iter(documents())))
        .await
        .unwrap();
    let widening = QueryRequest {
        use_crag: Some(false),
        filters: Some(Filters {
            metadata_json: r#"{"$or": [{"team": "search"}, {"team": "billing"}]}"#.into(),
            ..Filters::default()
        }),
        ..query("bread refunds")
    };
    let answer = client
        .query(as_token(BILLING, widening.clone()))
        .await
        .unwrap()
        .into_inner();
    let seen: Vec<&str> = answer
        .artifacts
        .iter()
        .map(|a| a.document_id.as_str())
        .collect();
    assert_eq!(seen, ["kb/a.md"]);
    let answer = client
        .query(as_token(TOKEN, widening))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.artifacts.len(), 2, "the full token sees both");
    let e = client
        .delete_document(as_token(
            BILLING,
            DeleteDocumentRequest {
                id: "kb/a.md".into(),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    drop(client);
    s.shutdown().await;
}

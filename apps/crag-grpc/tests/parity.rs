//! Transport parity: a gRPC client learns what an HTTP client learns. The same query's HTTP
//! answer (`crag_http::dto::query_response`, the JSON of `POST /v1/query` and `crag query
//! --json`) must equal the gRPC answer read back into the HTTP shape, key for key: a field
//! added to the HTTP answer and not to the proto fails here.

use crag_core::{Query, TopK};
use crag_grpc::pb::{self, Document, QueryRequest};
use serde_json::{json, Map, Value};

mod support;
use support::server;

fn doc(id: &str, title: &str, text: &str, kind: &str) -> Document {
    Document {
        id: id.into(),
        text: text.into(),
        title: title.into(),
        source: String::new(),
        kind: kind.into(),
        metadata_json: r#"{"team": "search"}"#.into(),
    }
}

fn leg(l: &Option<pb::LegScore>) -> Value {
    l.as_ref()
        .map_or(Value::Null, |l| json!({"rank": l.rank, "score": l.score}))
}

/// `stages_ms` keys as the HTTP answer's `timings` keys (`web_search` -> `webSearchMs`), every
/// value 0: timings differ from one run to the next, their presence does not.
fn timings(t: &Option<pb::Timings>) -> Value {
    let mut out = Map::new();
    for key in t.as_ref().map(|t| t.stages_ms.keys()).into_iter().flatten() {
        let mut camel = String::new();
        let mut upper = false;
        for c in key.chars() {
            match (c, upper) {
                ('_', _) => upper = true,
                (c, true) => {
                    camel.extend(c.to_uppercase());
                    upper = false;
                }
                (c, false) => camel.push(c),
            }
        }
        out.insert(format!("{camel}Ms"), json!(0.0));
    }
    Value::Object(out)
}

fn result(rank: usize, a: &pb::Artifact) -> Value {
    let span = a.span.unwrap_or_default();
    let mut r = json!({
        "rank": rank,
        "chunkId": a.id,
        "documentId": a.document_id,
        "source": a.source,
        "title": a.title,
        "kind": a.kind,
        "origin": a.origin,
        "span": {"byteStart": span.byte_start, "byteEnd": span.byte_end,
                 "lineStart": span.line_start, "lineEnd": span.line_end},
        "score": a.normalized_score,
        "fusedScore": a.fused_score,
        "keyword": leg(&a.keyword),
        "vector": leg(&a.vector),
        "relevance": a.relevance,
        "rerank": match (a.rerank_logit, a.rerank_probability) {
            (Some(logit), Some(probability)) => json!({"logit": logit, "probability": probability}),
            _ => Value::Null,
        },
        "webRank": a.web_rank,
        "refined": a.refined,
        "tokens": a.tokens,
        "metadata": serde_json::from_str::<Value>(&a.metadata_json).unwrap(),
        "text": a.text,
    });
    if let Some(c) = &a.code {
        r["code"] = json!({"language": c.language, "symbol": c.symbol, "symbolKind": c.symbol_kind,
            "qualified": c.qualified, "signature": c.signature, "part": c.part, "parts": c.parts});
    }
    r
}

/// The gRPC answer in the HTTP answer's shape.
fn http_shape(r: &pb::QueryResponse) -> Value {
    let c = r.crag.clone().unwrap_or_default();
    let judged = !c.verdict.is_empty();
    let empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    json!({
        "sessionId": empty(&r.session_id),
        "query": r.query,
        "topK": r.top_k,
        "route": {"route": c.route, "reason": c.route_reason, "subQueries": c.sub_queries},
        "cragDecision": empty(&c.verdict),
        "cragScore": c.score,
        "cragCorrectionStrategy": c.correction_strategy,
        "cragWebSearchUsed": c.web_search_used,
        "crag": if judged {
            json!({
                "evaluator": empty(&c.evaluator),
                "verdict": c.verdict,
                "score": c.score,
                "reasoning": c.reasoning,
                "criteria": c.criteria.iter()
                    .map(|k| json!({"name": k.name, "score": k.score, "weight": k.weight}))
                    .collect::<Vec<_>>(),
                "documentScores": c.document_scores.iter().map(|d| d.score).collect::<Vec<_>>(),
                "documentReasons": c.document_scores.iter().map(|d| d.reason.clone()).collect::<Vec<_>>(),
                "issues": c.issues,
            })
        } else {
            Value::Null
        },
        "corrections": c.corrections.iter()
            .map(|k| json!({"kind": k.kind, "reason": k.reason, "queries": k.queries}))
            .collect::<Vec<_>>(),
        "originalCount": c.original_count,
        "rerank": r.rerank.as_ref().map_or(Value::Null, |k| json!({
            "modelId": k.model_id, "candidates": k.candidates, "kept": k.kept,
            "skipped": empty(&k.skipped), "cacheHit": k.cache_hit,
        })),
        "tokensUsed": r.tokens_used,
        "tokenBudget": r.token_budget,
        "results": r.artifacts.iter().enumerate().map(|(i, a)| result(i + 1, a)).collect::<Vec<_>>(),
        "timings": timings(&c.timings),
        "warnings": r.warnings,
    })
}

#[tokio::test]
async fn a_grpc_query_answer_holds_everything_the_http_answer_holds() {
    let s = server(|_| {}, &[]).await;
    let mut client = s.client().await;
    let corpus = vec![
        doc("docs/fusion.md", "Fusion", "Reciprocal rank fusion merges the BM25 list and the vector list. Each document scores one over sixty plus its rank in every list.", ""),
        doc("docs/bread.md", "Bread", "Sourdough bread needs a starter, flour, water and salt. Bake it in a hot oven until the crust is dark.", "prose"),
        doc("src/fuse.rs", "", "pub fn reciprocal_rank_fusion(bm25: &[Hit], vectors: &[Hit], k: f32) -> Vec<Hit> { todo() }", "code"),
    ];
    client.ingest(tokio_stream::iter(corpus)).await.unwrap();

    // A judged query and a multi-step one (sub-queries), then one with Corrective RAG off.
    let asks = [
        ("how does reciprocal rank fusion merge lists?", true),
        (
            "what is reciprocal rank fusion and how do I bake sourdough bread?",
            true,
        ),
        ("sourdough crust", false),
    ];
    for (text, use_crag) in asks {
        let grpc = client
            .query(QueryRequest {
                query: text.into(),
                top_k: Some(3),
                session_id: "s-1".into(),
                use_web_search: Some(false),
                use_crag: Some(use_crag),
                ..QueryRequest::default()
            })
            .await
            .unwrap()
            .into_inner();
        // The same request to the engine the server serves, shaped as the HTTP answer.
        let top_k = TopK::new(3).unwrap();
        let request = crag_engine::QueryRequest {
            use_web_search: false,
            use_crag,
            ..crag_engine::QueryRequest::new(Query::new(text).unwrap(), top_k)
        };
        let outcome = s.engine.query(&request).await.unwrap();
        let mut http = serde_json::to_value(crag_http::dto::query_response(
            None,
            Some("s-1"),
            top_k,
            &outcome,
        ))
        .unwrap();
        for value in http["timings"].as_object_mut().unwrap().values_mut() {
            *value = json!(0.0);
        }
        let shaped = http_shape(&grpc);
        assert_eq!(
            shaped, http,
            "{text}: the gRPC answer (left) differs from the HTTP answer (right)"
        );
        if text.contains(" and how ") {
            assert!(
                !grpc.crag.unwrap().sub_queries.is_empty(),
                "{text}: a multi-step question"
            );
        }
    }
}

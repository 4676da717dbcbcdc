//! Corrective RAG over the in-memory fakes: the seeds' cases (fast path, ambiguous filtering,
//! web fallback, empty results, evaluator and web failures) and the routing, budget and metrics
//! behaviour around them.

use std::sync::Arc;

use crag_core::{
    ChunkKind, CorrectionKind, CriterionScore, Document, DocumentId, EvalDocument, Evaluation,
    Query, TopK, Verdict,
};
use crag_engine::{
    ArtifactOrigin, ChunkingConfig, CragComponents, CragConfig, Engine, EngineConfig, FailMode,
    NoProgress, QueryOutcome, QueryRequest, Scope,
};
use crag_expansion::SynonymTable;
use crag_ports::fakes::{
    FnEvaluator, HashEmbedder, InMemoryKeywordIndex, InMemoryVectorIndex, ScriptedLanguageModel,
    StaticWebSearch,
};
use crag_ports::{ErrorKind, PortError, RelevanceEvaluator, WebResult, WebSearch};

const DOCS: &[(&str, &str, &str)] = &[
    (
        "async.md",
        "Python async patterns",
        "Python async patterns use asyncio, coroutines and event loops to run concurrent IO.",
    ),
    (
        "review.md",
        "Code review",
        "A code review checks a change for defects, style and design before it is merged.",
    ),
    (
        "rust.md",
        "Rust ownership",
        "Rust ownership and borrowing rules make memory safety possible without a collector.",
    ),
    (
        "vitamin.md",
        "Vitamin D",
        "Vitamin D deficiency lowers bone density in older adults and raises fracture risk.",
    ),
];

async fn engine() -> Engine {
    let embedder = Arc::new(HashEmbedder::new(64));
    let engine = Engine::new(
        embedder,
        Arc::new(InMemoryVectorIndex::new(64)),
        Arc::new(InMemoryKeywordIndex::default()),
        EngineConfig {
            chunking: ChunkingConfig {
                chunk_tokens: 64,
                overlap_tokens: 8,
            },
            ..EngineConfig::default()
        },
    )
    .unwrap();
    let docs = DOCS
        .iter()
        .map(|(id, title, text)| {
            Document::new(
                DocumentId::new(*id).unwrap(),
                *id,
                *title,
                *text,
                ChunkKind::Prose,
            )
            .unwrap()
        })
        .collect();
    engine
        .ingest(docs, Vec::new(), &Scope::None, &NoProgress)
        .await
        .unwrap();
    engine
}

fn evaluation(verdict: Verdict, score: f32, document_scores: Vec<Option<f32>>) -> Evaluation {
    Evaluation {
        verdict,
        score,
        document_scores,
        criteria: vec![CriterionScore {
            name: "scripted".into(),
            score,
            weight: 1.0,
        }],
        reasoning: format!("scripted {verdict}"),
        issues: Vec::new(),
    }
}

/// Evaluator giving `verdict` and the scores in order (missing ones: 0.9).
fn scripted(verdict: Verdict, scores: Vec<f32>) -> Arc<FnEvaluator> {
    Arc::new(FnEvaluator::new(
        "scripted",
        move |_q, docs: &[EvalDocument]| {
            let ds = (0..docs.len())
                .map(|i| Some(scores.get(i).copied().unwrap_or(0.9)))
                .collect();
            Ok(evaluation(verdict, 0.6, ds))
        },
    ))
}

fn web_results() -> Vec<WebResult> {
    (1..=7)
        .map(|i| WebResult {
            title: format!("SpaceX launch {i}"),
            url: format!("https://news.example/spacex/{i}"),
            snippet: format!("SpaceX launch update number {i}: Falcon 9 lifted off."),
        })
        .collect()
}

async fn with(
    evaluator: Arc<dyn RelevanceEvaluator>,
    web: Option<Arc<dyn WebSearch>>,
    config: CragConfig,
) -> Engine {
    let mut parts = CragComponents::heuristic(config).unwrap();
    parts.evaluator = evaluator;
    parts.web_search = web;
    engine().await.with_crag(parts).unwrap()
}

fn request(q: &str, k: usize) -> QueryRequest {
    QueryRequest::new(Query::new(q).unwrap(), TopK::new(k).unwrap())
}

fn kinds(o: &QueryOutcome) -> Vec<CorrectionKind> {
    o.corrections.iter().map(|c| c.kind).collect()
}

#[tokio::test]
async fn correct_verdict_takes_the_fast_path() {
    let web = Arc::new(StaticWebSearch::new(web_results()));
    let e = with(
        scripted(Verdict::Correct, vec![]),
        Some(web.clone()),
        CragConfig::default(),
    )
    .await;
    let o = e.query(&request("Python async patterns", 3)).await.unwrap();
    assert_eq!(o.verdict(), Some(Verdict::Correct));
    assert_eq!(kinds(&o), vec![CorrectionKind::Keep]);
    assert_eq!(o.correction_strategy(), "none");
    assert!(!o.web_search_used);
    assert!(web.queries().is_empty());
    assert_eq!(o.artifacts.len(), o.original_count);
    assert_eq!(o.artifacts[0].chunk.document_id.as_str(), "async.md");
    assert!(o.artifacts.iter().all(|a| a.relevance == Some(0.9)));
}

#[tokio::test]
async fn ambiguous_drops_documents_below_the_filter_threshold_and_expands() {
    // Chunk 1 scores 0.3 < 0.4: dropped; the others stay.
    let e = with(
        scripted(Verdict::Ambiguous, vec![0.3, 0.5, 0.8, 0.45]),
        None,
        CragConfig::default(),
    )
    .await;
    let plain = e
        .query(&QueryRequest {
            use_crag: false,
            ..request("explain code review", 4)
        })
        .await
        .unwrap();
    let first = plain.artifacts[0].chunk.id.clone();
    let o = e.query(&request("explain code review", 4)).await.unwrap();
    assert_eq!(o.verdict(), Some(Verdict::Ambiguous));
    let discard = o
        .corrections
        .iter()
        .find(|c| c.kind == CorrectionKind::Discard)
        .expect("a discard correction");
    assert!(
        discard.reason.contains(first.as_str()),
        "{}",
        discard.reason
    );
    assert!(discard.reason.contains("0.30"), "{}", discard.reason);
    let expand = o
        .corrections
        .iter()
        .find(|c| c.kind == CorrectionKind::Expand)
        .expect("an expand correction: `explain` has synonyms in the seed table");
    assert_eq!(expand.queries.len(), 1);
    assert!(
        expand.queries[0].contains("describe"),
        "{:?}",
        expand.queries
    );
    // No web provider: no web search even though few documents remain.
    assert!(!o.web_search_used);
    // Budget and de-duplication hold after the merge.
    let mut ids: Vec<_> = o.artifacts.iter().map(|a| a.chunk.id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), o.artifacts.len());
    assert!(o.tokens_used <= o.token_budget);
}

#[tokio::test]
async fn ambiguous_with_few_good_documents_searches_the_web() {
    let web = Arc::new(StaticWebSearch::new(vec![WebResult {
        title: "Vitamin D and bones".into(),
        url: "https://health.example/vitamin-d".into(),
        snippet: "Vitamin D supplements help bone density in older adults.".into(),
    }]));
    let e = with(
        scripted(Verdict::Ambiguous, vec![0.9, 0.1, 0.1, 0.1]),
        Some(web.clone()),
        CragConfig::default(),
    )
    .await;
    let o = e.query(&request("vitamin bone density", 4)).await.unwrap();
    assert!(o.web_search_used);
    assert_eq!(web.queries(), vec!["vitamin bone density".to_owned()]);
    assert!(kinds(&o).contains(&CorrectionKind::WebSearch));
    assert!(o.artifacts.iter().any(|a| a.origin == ArtifactOrigin::Web));
    assert!(o
        .artifacts
        .iter()
        .any(|a| a.origin == ArtifactOrigin::Index));
}

#[tokio::test]
async fn incorrect_discards_rewrites_and_falls_back_to_the_web() {
    let web = Arc::new(StaticWebSearch::new(web_results()));
    let e = with(
        scripted(Verdict::Incorrect, vec![0.05; 4]),
        Some(web.clone()),
        CragConfig::default(),
    )
    .await;
    let o = e
        .query(&request("What are the latest SpaceX launch updates?", 4))
        .await
        .unwrap();
    assert_eq!(o.verdict(), Some(Verdict::Incorrect));
    assert!(o.web_search_used);
    assert_eq!(o.correction_strategy(), "web_search");
    let k = kinds(&o);
    assert_eq!(k[0], CorrectionKind::Discard);
    assert!(k.contains(&CorrectionKind::Rewrite));
    // The web is searched with the keyword rewrite, not the question.
    let searched = web.queries();
    assert_eq!(searched.len(), 1);
    assert!(!searched[0].contains("What"), "{searched:?}");
    assert!(searched[0].contains("SpaceX launch"), "{searched:?}");
    assert!(!o.artifacts.is_empty());
    assert!(o.artifacts.len() <= 5, "web results are limited to 5");
    assert!(o
        .artifacts
        .iter()
        .all(|a| a.origin == ArtifactOrigin::Web && a.chunk.kind == ChunkKind::Web));
    assert!(o.artifacts[0]
        .chunk
        .source
        .starts_with("https://news.example/"));
}

#[tokio::test]
async fn incorrect_uses_the_language_model_to_rewrite_when_configured() {
    let web = Arc::new(StaticWebSearch::new(web_results()));
    let llm = Arc::new(ScriptedLanguageModel::new([Ok(
        "\"spacex falcon 9 launch news\"\n".to_owned(),
    )]));
    let mut parts = CragComponents::heuristic(CragConfig::default()).unwrap();
    parts.evaluator = scripted(Verdict::Incorrect, vec![]);
    parts.web_search = Some(web.clone());
    parts.rewriter = Some(llm.clone());
    let e = engine().await.with_crag(parts).unwrap();
    let o = e.query(&request("any news on spacex?", 4)).await.unwrap();
    assert_eq!(
        web.queries(),
        vec!["spacex falcon 9 launch news".to_owned()]
    );
    let rewrite = o
        .corrections
        .iter()
        .find(|c| c.kind == CorrectionKind::Rewrite)
        .unwrap();
    assert_eq!(
        rewrite.queries,
        vec!["spacex falcon 9 launch news".to_owned()]
    );
    assert_eq!(llm.requests().len(), 1);
}

#[tokio::test]
async fn evaluation_input_carries_the_retrieval_signals() {
    let e = with(
        scripted(Verdict::Correct, vec![]),
        None,
        CragConfig::default(),
    )
    .await;
    let input = e
        .evaluation_input(&request("vitamin D bone density", 3))
        .await
        .unwrap();
    assert_eq!(input.documents.len(), input.artifacts.len());
    assert_eq!(input.artifacts[0].chunk.document_id.as_str(), "vitamin.md");
    for (d, a) in input.documents.iter().zip(&input.artifacts) {
        assert_eq!(d.id, a.chunk.id.to_string());
        assert_eq!(d.retrieval.keyword, a.keyword);
        assert_eq!(d.retrieval.vector, a.vector);
        assert_eq!(d.retrieval.normalized_score, a.normalized_score);
        assert_eq!(d.retrieval.fused_score, a.fused_score);
        assert!(d.retrieval.normalized_score.is_some());
    }
    assert!(input.documents[0].retrieval.keyword.is_some());
    let none = e.evaluation_input(&request("thanks!", 3)).await.unwrap();
    assert!(none.documents.is_empty());
}

#[tokio::test]
async fn empty_results_are_judged_incorrect_by_the_heuristic() {
    let e = Engine::new(
        Arc::new(HashEmbedder::new(16)),
        Arc::new(InMemoryVectorIndex::new(16)),
        Arc::new(InMemoryKeywordIndex::default()),
        EngineConfig::default(),
    )
    .unwrap();
    let o = e
        .query(&request("latest SpaceX launch updates", 5))
        .await
        .unwrap();
    assert_eq!(o.original_count, 0);
    assert_eq!(o.verdict(), Some(Verdict::Incorrect));
    assert!(o.artifacts.is_empty());
    assert_eq!(o.evaluator.as_deref(), Some("heuristic"));
}

#[tokio::test]
async fn heuristic_judges_an_unrelated_query_incorrect() {
    let web = Arc::new(StaticWebSearch::new(web_results()));
    let mut parts = CragComponents::heuristic(CragConfig::default()).unwrap();
    parts.web_search = Some(web.clone());
    let e = engine().await.with_crag(parts).unwrap();
    let o = e
        .query(&request("latest SpaceX launch updates", 4))
        .await
        .unwrap();
    assert_eq!(o.verdict(), Some(Verdict::Incorrect), "{:?}", o.evaluation);
    assert!(o.web_search_used);
    assert_eq!(web.queries().len(), 1);
}

#[tokio::test]
async fn evaluator_failure_honours_the_fail_mode() {
    let failing = || {
        Arc::new(FnEvaluator::new("broken", |_q, _d: &[EvalDocument]| {
            Err(PortError::new(ErrorKind::Unavailable, "evaluator down"))
        }))
    };
    let open = with(failing(), None, CragConfig::default()).await;
    let o = open.query(&request("Rust ownership", 3)).await.unwrap();
    assert_eq!(o.verdict(), None);
    assert_eq!(o.decision(), "unjudged");
    assert_eq!(o.artifacts.len(), o.original_count);
    assert!(o.warnings.iter().any(|w| w.contains("evaluator down")));
    assert_eq!(kinds(&o), vec![CorrectionKind::Keep]);

    let closed = with(
        failing(),
        None,
        CragConfig {
            evaluator_fail_mode: FailMode::Closed,
            ..CragConfig::default()
        },
    )
    .await;
    let err = closed
        .query(&request("Rust ownership", 3))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert!(err.to_string().contains("evaluator down"));
}

#[tokio::test]
async fn web_search_failure_honours_the_fail_mode() {
    let web = || -> Arc<dyn WebSearch> {
        Arc::new(StaticWebSearch::failing(
            ErrorKind::Timeout,
            "searxng timed out",
        ))
    };
    let open = with(
        scripted(Verdict::Incorrect, vec![]),
        Some(web()),
        CragConfig::default(),
    )
    .await;
    let o = open
        .query(&request("latest SpaceX launch updates", 3))
        .await
        .unwrap();
    assert!(!o.web_search_used);
    assert!(o.warnings.iter().any(|w| w.contains("searxng timed out")));
    let text = open.metrics().render().unwrap();
    assert!(text.contains("crag_web_search_failures_total{provider=\"static\"} 1"));

    let closed = with(
        scripted(Verdict::Incorrect, vec![]),
        Some(web()),
        CragConfig {
            web_search_fail_mode: FailMode::Closed,
            ..CragConfig::default()
        },
    )
    .await;
    let err = closed
        .query(&request("latest SpaceX launch updates", 3))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
}

#[tokio::test]
async fn small_talk_skips_retrieval() {
    let evaluator = scripted(Verdict::Correct, vec![]);
    let e = with(evaluator.clone(), None, CragConfig::default()).await;
    let o = e.query(&request("thanks!", 3)).await.unwrap();
    assert_eq!(o.route.route, crag_routing::Route::NoRetrieval);
    assert!(o.artifacts.is_empty());
    assert_eq!(o.evaluation, None);
    assert_eq!(o.decision(), "no_retrieval");
    assert_eq!(evaluator.calls(), 0);
}

#[tokio::test]
async fn the_token_budget_is_never_exceeded() {
    let e = with(
        scripted(Verdict::Correct, vec![]),
        None,
        CragConfig::default(),
    )
    .await;
    let o = e
        .query(&QueryRequest {
            token_budget: Some(20),
            ..request("Python Rust code review vitamin", 4)
        })
        .await
        .unwrap();
    assert!(o.tokens_used <= 20);
    assert!(o.artifacts.len() < 4);
    assert!(o.warnings.iter().any(|w| w.contains("token budget")));
}

#[tokio::test]
async fn metrics_count_decisions_and_corrections() {
    let e = with(
        scripted(Verdict::Ambiguous, vec![0.1, 0.9]),
        None,
        CragConfig::default(),
    )
    .await;
    e.query(&request("code review", 2)).await.unwrap();
    let text = e.metrics().render().unwrap();
    assert!(
        text.contains("crag_decisions_total{category=\"ambiguous\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("crag_corrections_total{strategy=\"discard\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("crag_retrieval_latency_seconds_count"),
        "{text}"
    );
    assert!(text.contains("crag_relevance_score 0.6"), "{text}");
}

#[tokio::test]
async fn custom_synonyms_drive_expansion() {
    let mut parts = CragComponents::heuristic(CragConfig::default()).unwrap();
    parts.evaluator = scripted(Verdict::Ambiguous, vec![]);
    parts.synonyms =
        SynonymTable::from_json(r#"{"ownership": ["borrowing", "lifetimes", "moves"]}"#).unwrap();
    let e = engine().await.with_crag(parts).unwrap();
    let o = e.query(&request("rust ownership", 3)).await.unwrap();
    let expand = o
        .corrections
        .iter()
        .find(|c| c.kind == CorrectionKind::Expand)
        .unwrap();
    let q = &expand.queries[0];
    assert!(q.contains("borrowing") && q.contains("lifetimes"), "{q}");
    assert!(!q.contains("moves"), "at most 2 synonyms per term: {q}");
}

#[tokio::test]
async fn llm_evaluator_judges_with_the_model_and_never_guesses() {
    use crag_engine::LlmRelevance;
    use crag_evaluation::LlmJudgeConfig;

    let llm = Arc::new(ScriptedLanguageModel::new([
        Ok("```json\n{\"scores\": [{\"document\": 1, \"score\": 9}, {\"document\": 2, \"score\": 8}], \"reasoning\": \"on topic\"}\n```".to_owned()),
        Ok("No, I cannot help with that, the documents are not relevant.".to_owned()),
    ]));
    let mut parts = CragComponents::heuristic(CragConfig::default()).unwrap();
    parts.evaluator = Arc::new(LlmRelevance::new(llm.clone(), LlmJudgeConfig::default()).unwrap());
    let e = engine().await.with_crag(parts).unwrap();

    let o = e.query(&request("Rust ownership", 2)).await.unwrap();
    assert_eq!(o.verdict(), Some(Verdict::Correct), "{:?}", o.evaluation);
    assert_eq!(o.evaluator.as_deref(), Some("llm"));
    let ev = o.evaluation.as_ref().unwrap();
    assert_eq!(ev.document_scores, vec![Some(0.9), Some(0.8)]);
    let prompt = &llm.requests()[0];
    assert_eq!(prompt.temperature, 0.0);
    assert!(prompt
        .messages
        .iter()
        .any(|m| m.content.contains("Rust ownership")));

    // Prose without scores is not a verdict: the evaluator fails, fail-open keeps the results.
    let o = e.query(&request("Rust ownership", 2)).await.unwrap();
    assert_eq!(o.verdict(), None);
    assert!(
        o.warnings.iter().any(|w| w.contains("could not be parsed")),
        "{:?}",
        o.warnings
    );
}

#[tokio::test]
async fn refinement_trims_documents_to_their_relevant_sentences() {
    let config = CragConfig {
        refine: crag_expansion::RefineConfig {
            sentences_per_strip: 1,
            ..Default::default()
        },
        ..CragConfig::default()
    };
    let e = with(scripted(Verdict::Ambiguous, vec![]), None, config).await;
    let doc = Document::new(
        DocumentId::new("mixed.md").unwrap(),
        "mixed.md",
        "Mixed",
        "Glaciers carve deep valleys over thousands of years. The museum cafe serves excellent coffee on weekends.",
        ChunkKind::Prose,
    )
    .unwrap();
    e.ingest(vec![doc], Vec::new(), &Scope::None, &NoProgress)
        .await
        .unwrap();
    let o = e
        .query(&request("how do glaciers carve valleys", 3))
        .await
        .unwrap();
    assert!(
        kinds(&o).contains(&CorrectionKind::Refine),
        "{:?}",
        o.corrections
    );
    let mixed = o
        .artifacts
        .iter()
        .find(|a| a.chunk.document_id.as_str() == "mixed.md")
        .expect("the mixed document is kept");
    assert!(mixed.refined);
    assert!(
        mixed.chunk.text.contains("Glaciers carve"),
        "{}",
        mixed.chunk.text
    );
    assert!(!mixed.chunk.text.contains("coffee"), "{}", mixed.chunk.text);
    assert_eq!(
        o.artifacts.len(),
        o.original_count,
        "documents without a relevant strip stay whole"
    );
    assert!(o.artifacts.iter().filter(|a| a.refined).count() == 1);
}

mod rerank {
    use super::*;
    use crag_ports::fakes::TermOverlapReranker;
    use crag_ports::{RerankScore, Reranker};

    #[derive(Debug)]
    struct Broken;

    #[async_trait::async_trait]
    impl Reranker for Broken {
        fn model_id(&self) -> &str {
            "broken"
        }
        async fn rerank(
            &self,
            _q: &str,
            _p: &[String],
        ) -> crag_ports::PortResult<Vec<RerankScore>> {
            Err(PortError::new(
                ErrorKind::Unavailable,
                "rerank service down",
            ))
        }
    }

    async fn reranking(reranker: Arc<dyn Reranker>, config: CragConfig) -> Engine {
        let mut parts = CragComponents::heuristic(config).unwrap();
        parts.evaluator = scripted(Verdict::Correct, vec![]);
        parts.reranker = Some(reranker);
        engine().await.with_crag(parts).unwrap()
    }

    const LONG: &str = "how does vitamin D deficiency change bone density";

    #[tokio::test]
    async fn candidates_are_reranked_thresholded_and_cached() {
        let fake = Arc::new(TermOverlapReranker::default());
        let e = reranking(fake.clone(), CragConfig::default()).await;
        let o = e.query(&request(LONG, 3)).await.unwrap();
        let r = o.rerank.clone().expect("rerank outcome");
        assert_eq!(r.skipped, None);
        assert!(!r.cache_hit);
        assert_eq!(r.candidates, 4, "coarse retrieval fetched every document");
        assert!(r.kept <= 3);
        assert_eq!(o.artifacts[0].chunk.document_id.as_str(), "vitamin.md");
        let probs: Vec<f32> = o
            .artifacts
            .iter()
            .map(|a| a.rerank.expect("scored").probability)
            .collect();
        assert!(probs.windows(2).all(|w| w[0] >= w[1]), "{probs:?}");
        assert!(probs.iter().all(|p| *p >= 0.35), "{probs:?}");
        let scored = fake.passages_scored();

        let again = e.query(&request(LONG, 3)).await.unwrap();
        assert!(again.rerank.unwrap().cache_hit);
        assert_eq!(fake.passages_scored(), scored, "served from the cache");
        let text = e.metrics().render().unwrap();
        assert!(
            text.contains("crag_rerank_cache_total{result=\"hit\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("crag_rerank_cache_total{result=\"miss\"} 1"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn the_evaluator_sees_the_rerank_probabilities() {
        let seen: Arc<std::sync::Mutex<Vec<EvalDocument>>> = Arc::default();
        let recorder = Arc::clone(&seen);
        let mut parts = CragComponents::heuristic(CragConfig::default()).unwrap();
        parts.evaluator = Arc::new(FnEvaluator::new(
            "recording",
            move |_q, docs: &[EvalDocument]| {
                *recorder.lock().unwrap() = docs.to_vec();
                Ok(evaluation(Verdict::Correct, 0.9, vec![None; docs.len()]))
            },
        ));
        parts.reranker = Some(Arc::new(TermOverlapReranker::default()));
        let e = engine().await.with_crag(parts).unwrap();
        let o = e.query(&request(LONG, 3)).await.unwrap();
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), o.original_count);
        for (d, a) in seen.iter().zip(&o.artifacts) {
            assert_eq!(
                d.retrieval.rerank_probability,
                a.rerank.map(|r| r.probability)
            );
            assert!(d.retrieval.rerank_probability.is_some());
        }
        // The same documents, unjudged, for calibration.
        let input = e.evaluation_input(&request(LONG, 3)).await.unwrap();
        assert_eq!(input.documents, seen);
        let plain = e
            .evaluation_input(&QueryRequest {
                use_rerank: false,
                ..request(LONG, 3)
            })
            .await
            .unwrap();
        assert!(plain
            .documents
            .iter()
            .all(|d| d.retrieval.rerank_probability.is_none()));
    }

    #[tokio::test]
    async fn short_queries_skip_reranking_and_say_why() {
        let e = reranking(
            Arc::new(TermOverlapReranker::default()),
            CragConfig::default(),
        )
        .await;
        let o = e.query(&request("vitamin D", 3)).await.unwrap();
        let r = o.rerank.unwrap();
        assert!(r.skipped.unwrap().contains("words"));
        assert_eq!(o.original_count, 3);
        assert!(o.artifacts.iter().all(|a| a.rerank.is_none()));
    }

    #[tokio::test]
    async fn reranking_can_be_switched_off_per_collection() {
        let mut config = CragConfig::default();
        config.rerank.enabled = false;
        let e = reranking(Arc::new(TermOverlapReranker::default()), config).await;
        let o = e.query(&request(LONG, 3)).await.unwrap();
        assert_eq!(o.rerank, None);
    }

    #[tokio::test]
    async fn a_failing_reranker_honours_the_fail_mode() {
        let e = reranking(Arc::new(Broken), CragConfig::default()).await;
        let o = e.query(&request(LONG, 2)).await.unwrap();
        assert!(o.warnings.iter().any(|w| w.contains("rerank service down")));
        assert_eq!(o.original_count, 2, "fused order kept");
        let mut config = CragConfig::default();
        config.rerank.fail_mode = FailMode::Closed;
        let e = reranking(Arc::new(Broken), config).await;
        let err = e.query(&request(LONG, 2)).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unavailable);
    }
}

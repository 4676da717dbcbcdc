//! Corrective RAG over the in-memory fakes: the seeds' cases (fast path, ambiguous filtering,
//! web fallback, empty results, evaluator and web failures) and the routing, budget and metrics
//! behaviour around them.

use std::sync::Arc;

use crag_core::{
    ChunkKind, CorrectionKind, CriterionScore, Document, DocumentId, EvalDocument, Evaluation,
    Query, TopK, Verdict,
};
use crag_engine::{
    ArtifactOrigin, ChunkingConfig, CragComponents, CragConfig, Engine, EngineConfig,
    ExpansionStrategy, FailMode, FeedbackRerankConfig, JudgedDocument, NoProgress, QueryOutcome,
    QueryRequest, Scope,
};
use crag_expansion::SynonymTable;
use crag_ports::fakes::{
    FnEvaluator, HashEmbedder, InMemoryKeywordIndex, InMemoryVectorIndex, ScriptedLanguageModel,
    StaticWebSearch,
};
use crag_ports::{
    Embedder, ErrorKind, KeywordIndex, PortError, RelevanceEvaluator, WebResult, WebSearch,
};

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

/// Documents where feedback from the first results finds a third one (uptake.md shares no
/// word with "bone density").
const FEEDBACK_DOCS: &[(&str, &str, &str)] = &[
    ("bones.md", "Bone density", "Bone density falls with age."),
    (
        "vitd.md",
        "Vitamin D",
        "Vitamin D deficiency lowers bone density and calcium absorption.",
    ),
    (
        "uptake.md",
        "Calcium",
        "Calcium absorption needs vitamin D; dairy is rich in calcium.",
    ),
    (
        "rust.md",
        "Rust ownership",
        "Rust ownership and borrowing rules make memory safety possible without a collector.",
    ),
    (
        "tea.md",
        "Green tea",
        "Green tea is brewed from unoxidised leaves.",
    ),
    (
        "sail.md",
        "Sailing",
        "Sailing upwind needs a close-hauled course.",
    ),
    (
        "jazz.md",
        "Jazz",
        "Jazz standards are played with improvised solos.",
    ),
    (
        "maps.md",
        "Maps",
        "Old maps were drawn from surveys on foot.",
    ),
];

async fn engine() -> Engine {
    engine_of(DOCS).await
}

async fn engine_of(documents: &[(&str, &str, &str)]) -> Engine {
    engine_over(documents, Arc::new(InMemoryVectorIndex::new(64))).await
}

/// [`engine_of`] over the given vector index.
async fn engine_over(
    documents: &[(&str, &str, &str)],
    vectors: Arc<InMemoryVectorIndex>,
) -> Engine {
    engine_over_both(
        documents,
        vectors,
        Arc::new(InMemoryKeywordIndex::default()),
    )
    .await
}

/// [`engine_of`] over the given vector and keyword indexes.
async fn engine_over_both(
    documents: &[(&str, &str, &str)],
    vectors: Arc<InMemoryVectorIndex>,
    keywords: Arc<InMemoryKeywordIndex>,
) -> Engine {
    let embedder = Arc::new(HashEmbedder::new(64));
    let engine = Engine::new(
        embedder,
        vectors,
        keywords,
        EngineConfig {
            chunking: ChunkingConfig {
                chunk_tokens: 64,
                overlap_tokens: 8,
            },
            ..EngineConfig::default()
        },
    )
    .unwrap();
    let docs = documents
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
        document_reasons: Vec::new(),
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

/// Like [`scripted`], but each evaluation scores 0.1 above the one before (0.5, 0.6, ...):
/// a corrected list always judges better than the list it corrects.
fn rising(verdict: Verdict, scores: Vec<f32>) -> Arc<FnEvaluator> {
    let calls = std::sync::atomic::AtomicUsize::new(0);
    Arc::new(FnEvaluator::new(
        "rising",
        move |_q, docs: &[EvalDocument]| {
            let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let ds = (0..docs.len())
                .map(|i| Some(scores.get(i).copied().unwrap_or(0.9)))
                .collect();
            Ok(evaluation(verdict, 0.5 + 0.1 * n as f32, ds))
        },
    ))
}

fn assert_unique<T: Ord + Clone + std::fmt::Debug>(items: &[T]) {
    let mut unique = items.to_vec();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), items.len(), "duplicates in {items:?}");
}

fn ids(o: &QueryOutcome) -> Vec<String> {
    o.artifacts.iter().map(|a| a.chunk.id.to_string()).collect()
}

async fn plain(e: &Engine, q: &str, k: usize) -> QueryOutcome {
    e.query(&QueryRequest {
        use_crag: false,
        ..request(q, k)
    })
    .await
    .unwrap()
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
        rising(Verdict::Ambiguous, vec![0.3, 0.5, 0.8, 0.45]),
        None,
        CragConfig {
            expansion: ExpansionStrategy::Synonyms,
            expansion_enabled: true,
            ..judged_again()
        },
    )
    .await;
    let plain = plain(&e, "explain code review", 4).await;
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
    // The expanded list was judged again and kept because it scored higher: both scores.
    assert!(
        expand.reason.contains("judged 0.600 against 0.500"),
        "{}",
        expand.reason
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
async fn incorrect_rewrites_searches_the_web_and_keeps_the_local_results() {
    let web = Arc::new(StaticWebSearch::new(web_results()));
    let e = with(
        scripted(Verdict::Incorrect, vec![0.05; 4]),
        Some(web.clone()),
        CragConfig::default(),
    )
    .await;
    let q = "What are the latest SpaceX launch updates?";
    let local = ids(&plain(&e, q, 4).await);
    let o = e.query(&request(q, 4)).await.unwrap();
    assert_eq!(o.verdict(), Some(Verdict::Incorrect));
    assert!(o.web_search_used);
    assert_eq!(o.correction_strategy(), "web_search");
    let k = kinds(&o);
    assert_eq!(k[0], CorrectionKind::Rewrite);
    assert!(!k.contains(&CorrectionKind::Discard), "{k:?}");
    // The web is searched with the keyword rewrite, not the question.
    let searched = web.queries();
    assert_eq!(searched.len(), 1);
    assert!(!searched[0].contains("What"), "{searched:?}");
    assert!(searched[0].contains("SpaceX launch"), "{searched:?}");
    // Web results first (at most 5), then every local result, flagged by the verdict.
    let web_count = o
        .artifacts
        .iter()
        .take_while(|a| a.origin == ArtifactOrigin::Web && a.chunk.kind == ChunkKind::Web)
        .count();
    assert!((1..=5).contains(&web_count), "{web_count}");
    assert!(o.artifacts[0]
        .chunk
        .source
        .starts_with("https://news.example/"));
    let rest: Vec<String> = o.artifacts[web_count..]
        .iter()
        .map(|a| a.chunk.id.to_string())
        .collect();
    assert_eq!(rest, local);
}

#[tokio::test]
async fn incorrect_without_web_search_keeps_the_original_when_the_rewrite_judges_no_better() {
    let e = with(
        scripted(Verdict::Incorrect, vec![0.05; 4]),
        None,
        judged_again(),
    )
    .await;
    let q = "What are the latest SpaceX launch updates?";
    let local = ids(&plain(&e, q, 4).await);
    assert!(!local.is_empty());
    let o = e.query(&request(q, 4)).await.unwrap();
    assert_eq!(o.verdict(), Some(Verdict::Incorrect));
    assert!(!o.web_search_used);
    // The rewrite's retrieval did not judge better (the scripted score is constant): the
    // original list comes back whole, never an empty one.
    assert_eq!(ids(&o), local);
    assert_eq!(o.correction_strategy(), "none", "{:?}", o.corrections);
    let note = &o.corrections[0];
    assert_eq!(note.kind, CorrectionKind::Keep);
    assert!(
        note.reason.contains("did not judge better"),
        "{}",
        note.reason
    );
    assert!(!note.queries.is_empty(), "the rewritten query is reported");
}

#[tokio::test]
async fn incorrect_fuses_a_rewrite_that_judges_better_with_the_original() {
    // The scripted judge scores each call higher, even of a list it has judged: no
    // evaluation cache, which would give the same list the same judgement.
    let e = with(
        rising(Verdict::Incorrect, vec![0.05; 4]),
        None,
        CragConfig {
            evaluation_cache_capacity: 0,
            ..judged_again()
        },
    )
    .await;
    let q = "What do we know about Rust ownership and vitamin D?";
    let local = ids(&plain(&e, q, 3).await);
    let o = e.query(&request(q, 3)).await.unwrap();
    let rewrite = o
        .corrections
        .iter()
        .find(|c| c.kind == CorrectionKind::Rewrite)
        .expect("a rewrite correction");
    assert!(
        rewrite.reason.contains("fused by rank"),
        "{}",
        rewrite.reason
    );
    assert!(rewrite.reason.contains("against"), "{}", rewrite.reason);
    // Fused, not substituted: the original's best result is still there.
    assert!(ids(&o).contains(&local[0]), "{:?} vs {local:?}", ids(&o));
}

/// Corrections judged again before they are kept (`crag.reevaluate_corrections`).
fn judged_again() -> CragConfig {
    CragConfig {
        reevaluate_corrections: true,
        ..CragConfig::default()
    }
}

#[tokio::test]
async fn by_default_a_rewrite_is_fused_without_a_second_judgement() {
    let judged = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let calls = Arc::clone(&judged);
    let evaluator = Arc::new(FnEvaluator::new(
        "counting",
        move |_q, docs: &[EvalDocument]| {
            calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(evaluation(
                Verdict::Incorrect,
                0.2,
                vec![Some(0.05); docs.len()],
            ))
        },
    ));
    let e = with(evaluator, None, CragConfig::default()).await;
    let q = "What do we know about Rust ownership and vitamin D?";
    let local = ids(&plain(&e, q, 3).await);
    let o = e.query(&request(q, 3)).await.unwrap();
    assert_eq!(
        judged.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "judged once"
    );
    let rewrite = o
        .corrections
        .iter()
        .find(|c| c.kind == CorrectionKind::Rewrite)
        .unwrap_or_else(|| panic!("a rewrite correction: {:?}", o.corrections));
    assert!(
        rewrite.reason.contains("fused by rank"),
        "{}",
        rewrite.reason
    );
    assert!(!rewrite.reason.contains("judged"), "{}", rewrite.reason);
    // The query's judgement is the first list's; the list is the fusion.
    assert_eq!(o.verdict(), Some(Verdict::Incorrect));
    assert!(ids(&o).contains(&local[0]), "{:?} vs {local:?}", ids(&o));
}

#[tokio::test]
async fn a_rewrite_retrieves_each_leg_to_the_further_depth_only() {
    let vectors = Arc::new(InMemoryVectorIndex::new(64));
    let engine = engine_over(DOCS, vectors.clone()).await;
    let config = CragConfig {
        further_leg_depth: 7,
        ..CragConfig::default()
    };
    let mut parts = CragComponents::heuristic(config).unwrap();
    parts.evaluator = scripted(Verdict::Incorrect, vec![0.05; 4]);
    let e = engine.with_crag(parts).unwrap();
    let o = e
        .query(&request("What do we know about Rust ownership?", 3))
        .await
        .unwrap();
    assert!(
        o.corrections.iter().any(|c| c.queries.len() == 1),
        "a rewrite ran: {:?}",
        o.corrections
    );
    // The first retrieval asks `leg_depth` (100) per leg, the rewrite's 7: both in the same
    // unit (chunks per document wanted when documents are ranked).
    let asked = vectors.asked();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(
        asked[0] * 7,
        asked[1] * EngineConfig::default().leg_depth,
        "{asked:?}"
    );
}

#[tokio::test]
async fn a_rewrite_of_the_same_index_terms_takes_the_first_keyword_search_s_hits() {
    let keywords = Arc::new(InMemoryKeywordIndex::default());
    let vectors = Arc::new(InMemoryVectorIndex::new(64));
    let engine = engine_over_both(DOCS, vectors, keywords.clone()).await;
    let mut parts = CragComponents::heuristic(CragConfig::default()).unwrap();
    parts.evaluator = scripted(Verdict::Incorrect, vec![0.05; 4]);
    let e = engine.with_crag(parts).unwrap();
    let rewritten_once = |o: &QueryOutcome| {
        assert_eq!(
            o.corrections
                .iter()
                .filter(|c| c.queries.len() == 1)
                .count(),
            1,
            "one rewrite: {:?}",
            o.corrections
        );
    };
    // "Rust ownership?" is rewritten to "Rust ownership": the same index terms, so the
    // rewrite's keyword leg is the first search's head, not a second search.
    let before = keywords.searches();
    let same = e.query(&request("Rust ownership?", 3)).await.unwrap();
    rewritten_once(&same);
    assert_eq!(keywords.searches() - before, 1, "the first search only");
    // Dropping words the index keeps changes the terms: the rewrite searches again.
    let before = keywords.searches();
    let other = e
        .query(&request("What do we know about Rust ownership?", 3))
        .await
        .unwrap();
    rewritten_once(&other);
    assert_eq!(keywords.searches() - before, 2, "a search of its own");
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
async fn the_evaluation_service_judges_given_documents_and_fails_closed() {
    let doc = |id: &str, text: &str| JudgedDocument {
        id: id.into(),
        source: id.into(),
        text: text.into(),
    };
    let documents = [
        doc(
            "own",
            "Rust ownership: each value has one owner; borrowing lends it.",
        ),
        doc(
            "bread",
            "Sourdough bread needs a starter, flour, water and salt.",
        ),
    ];
    let query = Query::new("Rust ownership and borrowing").unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let shown = seen.clone();
    let judge = Arc::new(FnEvaluator::new(
        "recorder",
        move |_q, d: &[EvalDocument]| {
            shown
                .lock()
                .unwrap()
                .extend(d.iter().map(|d| (d.id.clone(), d.similarity)));
            Ok(Evaluation {
                verdict: Verdict::Correct,
                score: 0.9,
                document_scores: vec![Some(0.9), Some(0.1)],
                document_reasons: Vec::new(),
                criteria: Vec::new(),
                reasoning: "scripted".into(),
                issues: Vec::new(),
            })
        },
    ));
    let e = with(judge, None, CragConfig::default()).await;
    let report = e.evaluate(&query, &documents).await.unwrap();
    assert_eq!(report.evaluator, "recorder");
    assert_eq!(report.ids, ["own", "bread"]);
    assert_eq!(report.evaluation.verdict, Verdict::Correct);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "the evaluator saw each document once");
    assert_eq!((seen[0].0.as_str(), seen[1].0.as_str()), ("own", "bread"));
    assert_eq!(seen[0].1, report.similarities[0]);
    assert!(report.similarities.iter().all(|s| (0.0..=1.0).contains(s)));

    let err = e.evaluate(&query, &[]).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let many = vec![doc("x", "text"); crag_engine::MAX_EVALUATED_DOCUMENTS + 1];
    assert_eq!(
        e.evaluate(&query, &many).await.unwrap_err().kind(),
        ErrorKind::InvalidInput
    );

    // A failing evaluator is an error even under the default fail-open mode: the caller has
    // nothing to fall back on.
    let broken = Arc::new(FnEvaluator::new("broken", |_q, _d: &[EvalDocument]| {
        Err(PortError::new(ErrorKind::Unavailable, "evaluator down"))
    }));
    let e = with(broken, None, CragConfig::default()).await;
    let err = e.evaluate(&query, &documents).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert!(err.to_string().contains("evaluator down"));

    // The heuristic, with similarities from the engine's embedder (a hashing fake here): the
    // on-topic document scores higher.
    let e = engine()
        .await
        .with_crag(CragComponents::heuristic(CragConfig::default()).unwrap())
        .unwrap();
    let report = e.evaluate(&query, &documents).await.unwrap();
    assert_eq!(report.evaluator, "heuristic");
    let scores = &report.evaluation.document_scores;
    assert!(scores[0] > scores[1], "{:?}", report.evaluation);
}

#[tokio::test]
async fn the_evaluation_cache_judges_the_same_documents_once() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = calls.clone();
    let counting = move || {
        let counter = counter.clone();
        Arc::new(FnEvaluator::new(
            "counting",
            move |_q, d: &[EvalDocument]| {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok(Evaluation {
                    verdict: Verdict::Ambiguous,
                    score: 0.6,
                    document_scores: vec![Some(0.6); d.len()],
                    document_reasons: Vec::new(),
                    criteria: Vec::new(),
                    reasoning: "scripted".into(),
                    issues: Vec::new(),
                })
            },
        ))
    };
    let doc = |text: &str| JudgedDocument {
        id: "a".into(),
        source: "a".into(),
        text: text.into(),
    };
    let query = Query::new("Rust ownership").unwrap();
    let e = with(counting(), None, CragConfig::default()).await;
    let count = || calls.load(std::sync::atomic::Ordering::SeqCst);
    let first = e.evaluate(&query, &[doc("ownership")]).await.unwrap();
    let again = e.evaluate(&query, &[doc("ownership")]).await.unwrap();
    assert_eq!(count(), 1, "judged once, then from the cache");
    assert_eq!(first.evaluation, again.evaluation);
    e.evaluate(&query, &[doc("ownership, re-ingested")])
        .await
        .unwrap();
    assert_eq!(count(), 2, "changed text: judged again");
    let metrics = e.metrics().render().unwrap();
    assert!(
        metrics.contains("crag_evaluation_cache_total{result=\"hit\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("crag_evaluation_cache_total{result=\"miss\"} 2"));

    let uncached = with(
        counting(),
        None,
        CragConfig {
            evaluation_cache_capacity: 0,
            ..CragConfig::default()
        },
    )
    .await;
    uncached
        .evaluate(&query, &[doc("ownership")])
        .await
        .unwrap();
    uncached
        .evaluate(&query, &[doc("ownership")])
        .await
        .unwrap();
    assert_eq!(count(), 4, "no cache: judged each time");
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
async fn packing_reads_the_token_counts_stored_at_ingestion() {
    let keywords = Arc::new(InMemoryKeywordIndex::default());
    let vectors = Arc::new(InMemoryVectorIndex::new(64));
    let e = engine_over_both(DOCS, vectors, keywords.clone()).await;
    // Ingestion stored each chunk's count, its tokenizer's.
    let mut chunks = Vec::new();
    for doc in keywords.documents().await.unwrap() {
        chunks.extend(keywords.document_chunks(&doc.id).await.unwrap());
    }
    assert_eq!(chunks.len(), DOCS.len());
    for c in &mut chunks {
        let spans = HashEmbedder::new(64).token_spans(&c.text).unwrap();
        assert_eq!(c.tokens, Some(spans.len() as u32), "{}", c.text);
        c.tokens = Some(500);
    }
    // Packing takes the stored count, not a count of the text: with 500 stored per chunk a
    // budget of 600 holds one result.
    keywords.upsert(&chunks).await.unwrap();
    let o = e
        .query(&QueryRequest {
            token_budget: Some(600),
            use_crag: false,
            ..request("Python Rust code", 4)
        })
        .await
        .unwrap();
    assert_eq!((o.artifacts.len(), o.tokens_used), (1, 500));
    assert_eq!(o.artifacts[0].tokens, 500);
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
    let mut parts = CragComponents::heuristic(CragConfig {
        expansion: ExpansionStrategy::Synonyms,
        expansion_enabled: true,
        ..CragConfig::default()
    })
    .unwrap();
    parts.evaluator = rising(Verdict::Ambiguous, vec![]);
    parts.synonyms =
        SynonymTable::from_json(r#"{"ownership": ["borrowing", "lifetimes", "moves"]}"#).unwrap();
    let e = engine().await.with_crag(parts).unwrap();
    let o = e.query(&request("rust ownership", 3)).await.unwrap();
    // Expand when the synonyms found something new, else a note that nothing new was found:
    // either way the expanded query is reported.
    let expand = o
        .corrections
        .iter()
        .find(|c| c.reason.contains("with synonyms"))
        .unwrap_or_else(|| panic!("{:?}", o.corrections));
    let q = &expand.queries[0];
    assert!(q.contains("borrowing") && q.contains("lifetimes"), "{q}");
    assert!(!q.contains("moves"), "at most 2 synonyms per term: {q}");
}

#[tokio::test]
async fn llm_evaluator_judges_with_the_model_and_never_guesses() {
    use crag_engine::LlmRelevance;
    use crag_judge::LlmJudgeConfig;

    let llm = Arc::new(ScriptedLanguageModel::new([
        Ok("```json\n{\"scores\": [{\"document\": 1, \"score\": 9}, {\"document\": 2, \"score\": 8}], \"reasoning\": \"on topic\"}\n```".to_owned()),
        Ok("No, I cannot help with that, the documents are not relevant.".to_owned()),
    ]));
    // The same query is asked twice, each time to the model: no evaluation cache.
    let mut parts = CragComponents::heuristic(CragConfig {
        evaluation_cache_capacity: 0,
        ..CragConfig::default()
    })
    .unwrap();
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
        refine: crag_refine::RefineConfig {
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
        "Glaciers carve deep valleys over thousands of years. The museum cafe serves excellent coffee on weekends. Glaciers also carve fjords.",
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
    assert!(
        mixed.chunk.text.ends_with(" … Glaciers also carve fjords"),
        "{}",
        mixed.chunk.text
    );
    assert_eq!(
        o.artifacts.len(),
        o.original_count,
        "documents without a relevant strip stay whole"
    );
    assert!(o.artifacts.iter().filter(|a| a.refined).count() == 1);
    // A refined text's tokens are its strips' and separators', what counting it gives.
    let embedder = HashEmbedder::new(64);
    for a in &o.artifacts {
        let counted = embedder.token_spans(&a.chunk.text).unwrap().len();
        assert_eq!(a.tokens, counted, "{}", a.chunk.text);
    }
    let sum: usize = o.artifacts.iter().map(|a| a.tokens).sum();
    assert_eq!(o.tokens_used, sum);
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

#[tokio::test]
async fn the_ambiguous_filter_never_empties_the_list() {
    let e = with(
        scripted(Verdict::Ambiguous, vec![0.1; 4]),
        None,
        CragConfig::default(),
    )
    .await;
    let local = ids(&plain(&e, "code review", 3).await);
    let o = e.query(&request("code review", 3)).await.unwrap();
    assert_eq!(ids(&o), local);
    assert!(!kinds(&o).contains(&CorrectionKind::Discard));
}

#[tokio::test]
async fn unjudged_documents_are_kept_but_do_not_count_as_good() {
    // An LLM judge reads only the top documents: here only the first is scored.
    let evaluator = Arc::new(FnEvaluator::new("top-one", |_q, docs: &[EvalDocument]| {
        let mut ds = vec![None; docs.len()];
        if let Some(first) = ds.first_mut() {
            *first = Some(0.9);
        }
        Ok(evaluation(Verdict::Ambiguous, 0.6, ds))
    }));
    let web = Arc::new(StaticWebSearch::new(web_results()));
    let e = with(evaluator, Some(web.clone()), CragConfig::default()).await;
    let local = ids(&plain(&e, "code review defects", 4).await);
    let o = e.query(&request("code review defects", 4)).await.unwrap();
    // Nothing unjudged is dropped ...
    for id in &local {
        assert!(ids(&o).contains(id), "{id} kept");
    }
    // ... but one judged-good document is fewer than 3: the web is searched.
    assert_eq!(web.queries().len(), 1);
    assert!(o.web_search_used);
}

/// Feedback with most of the weight on the feedback terms and two feedback documents, so
/// that documents of one line each move the retrieval.
fn feedback_config() -> CragConfig {
    let mut c = CragConfig {
        expansion_enabled: true,
        ..CragConfig::default()
    };
    c.prf.original_weight = 0.2;
    c.prf.feedback_docs = 2;
    c
}

async fn feedback_engine(evaluator: Arc<dyn RelevanceEvaluator>, config: CragConfig) -> Engine {
    let mut parts = CragComponents::heuristic(config).unwrap();
    parts.evaluator = evaluator;
    engine_of(FEEDBACK_DOCS).await.with_crag(parts).unwrap()
}

#[tokio::test]
async fn pseudo_relevance_feedback_refills_what_the_filter_dropped() {
    // The third result scores 0.1 and is dropped; feedback from the two kept documents
    // finds uptake.md, which shares no word with the query.
    let e = feedback_engine(
        rising(Verdict::Ambiguous, vec![0.9, 0.9, 0.1]),
        feedback_config(),
    )
    .await;
    let local = ids(&plain(&e, "bone density", 3).await);
    assert!(!local.iter().any(|id| id.starts_with("uptake.md")));
    let o = e.query(&request("bone density", 3)).await.unwrap();
    let expand = o
        .corrections
        .iter()
        .find(|c| c.kind == CorrectionKind::Expand)
        .unwrap_or_else(|| panic!("an expand correction: {:?}", o.corrections));
    assert!(
        expand
            .reason
            .contains("pseudo-relevance feedback from 2 documents"),
        "{}",
        expand.reason
    );
    // The weighted terms: the query's own first, then the feedback terms.
    let q = &expand.queries[0];
    assert!(q.starts_with("bone^") || q.starts_with("density^"), "{q}");
    assert!(q.contains("calcium^"), "{q}");
    assert_eq!(
        ids(&o),
        [local[0].clone(), local[1].clone(), "uptake.md#0".to_owned()]
    );
}

#[tokio::test]
async fn an_expansion_that_does_not_judge_better_is_not_kept() {
    let e = feedback_engine(
        scripted(Verdict::Ambiguous, vec![0.9, 0.9, 0.1]),
        CragConfig {
            reevaluate_corrections: true,
            ..feedback_config()
        },
    )
    .await;
    let local = ids(&plain(&e, "bone density", 3).await);
    let o = e.query(&request("bone density", 3)).await.unwrap();
    assert_eq!(ids(&o), local[..2], "filtered, not expanded");
    assert!(!kinds(&o).contains(&CorrectionKind::Expand));
    let note = o
        .corrections
        .iter()
        .find(|c| c.reason.contains("did not judge better"))
        .unwrap_or_else(|| panic!("{:?}", o.corrections));
    assert_eq!(note.kind, CorrectionKind::Keep);
    assert!(
        note.reason.contains("judged 0.600 against 0.600"),
        "{}",
        note.reason
    );
    // Without re-evaluation the fused list is taken as it is.
    let e = feedback_engine(
        scripted(Verdict::Ambiguous, vec![0.9, 0.9, 0.1]),
        CragConfig {
            reevaluate_corrections: false,
            ..feedback_config()
        },
    )
    .await;
    let o = e.query(&request("bone density", 3)).await.unwrap();
    assert!(
        kinds(&o).contains(&CorrectionKind::Expand),
        "{:?}",
        o.corrections
    );
    assert_eq!(o.artifacts.len(), 3);
}

#[tokio::test]
async fn a_multi_step_question_retrieves_each_part_and_fuses_them() {
    let e = with(
        scripted(Verdict::Correct, vec![]),
        None,
        CragConfig::default(),
    )
    .await;
    let o = e
        .query(&request(
            "compare Rust ownership and Python async patterns",
            4,
        ))
        .await
        .unwrap();
    assert_eq!(
        o.route.route,
        crag_routing::Route::MultiStep,
        "{}",
        o.route.reason
    );
    assert!(o.route.sub_queries.len() >= 2, "{:?}", o.route.sub_queries);
    let docs: Vec<&str> = o
        .artifacts
        .iter()
        .map(|a| a.chunk.document_id.as_str())
        .collect();
    assert!(
        docs.contains(&"rust.md") && docs.contains(&"async.md"),
        "{docs:?}"
    );
    assert_unique(&docs);
}

#[tokio::test]
async fn below_the_judged_head_a_multi_step_question_keeps_its_own_ranking() {
    // Each part finds its own documents first; the question as a whole ranks them lower.
    let docs: &[(&str, &str, &str)] = &[
        (
            "both.md",
            "Rust and Python",
            "compare rust ownership and python async patterns",
        ),
        ("own1.md", "Ownership", "rust ownership"),
        ("own2.md", "Borrowing", "rust ownership ownership borrowing"),
        ("own3.md", "Lifetimes", "ownership lifetimes ownership"),
        ("py1.md", "Asyncio", "python async"),
        (
            "py2.md",
            "Coroutines",
            "async async patterns python coroutines",
        ),
        ("py3.md", "Event loops", "async patterns event loops"),
        (
            "cmp.md",
            "Comparisons",
            "compare compare and compare patterns",
        ),
        ("cmp2.md", "Contrast", "compare rust and python patterns"),
    ];
    let mut parts = CragComponents::heuristic(CragConfig {
        judge_depth: 1,
        ..CragConfig::default()
    })
    .unwrap();
    parts.evaluator = scripted(Verdict::Correct, vec![]);
    let e = engine_of(docs).await.with_crag(parts).unwrap();
    let q = "compare rust ownership and python async patterns";
    let o = e.query(&request(q, 9)).await.unwrap();
    assert_eq!(o.route.route, crag_routing::Route::MultiStep);
    let ids: Vec<&str> = o.artifacts.iter().map(|a| a.chunk.id.as_str()).collect();
    let plain = e
        .retrieve(&Query::new(q).unwrap(), TopK::new(9).unwrap())
        .await
        .unwrap();
    let own: Vec<&str> = plain
        .hits
        .iter()
        .map(|h| h.chunk.id.as_str())
        .filter(|id| *id != ids[0])
        .collect();
    assert!(ids.len() > 4, "{ids:?}");
    assert_eq!(ids[1..], own[..ids.len() - 1], "head {:?}", ids[0]);
}

#[tokio::test]
async fn the_corrections_counter_counts_only_corrections_made() {
    // Constant scores: the expansion is judged no better and is not kept; nothing is
    // dropped (every score is above the threshold); refinement is off for this test.
    let e = with(
        scripted(Verdict::Ambiguous, vec![0.9; 4]),
        None,
        CragConfig {
            refine_ambiguous: false,
            ..CragConfig::default()
        },
    )
    .await;
    e.query(&request("bone density", 3)).await.unwrap();
    let text = e.metrics().render().unwrap();
    assert!(
        !text.contains("crag_corrections_total{"),
        "no correction was made: {text}"
    );
    assert!(text.contains("crag_decisions_total{category=\"ambiguous\"} 1"));
}

#[tokio::test]
async fn only_the_judged_depth_is_judged_and_deeper_results_follow() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let evaluator = Arc::new(FnEvaluator::new(
        "depth",
        move |_q, docs: &[EvalDocument]| {
            record.lock().unwrap().push(docs.len());
            // The second judged document is dropped by the filter.
            let ds = (0..docs.len())
                .map(|i| Some(if i == 1 { 0.1 } else { 0.9 }))
                .collect();
            Ok(evaluation(Verdict::Ambiguous, 0.6, ds))
        },
    ));
    let e = with(
        evaluator,
        None,
        CragConfig {
            judge_depth: 2,
            expansion_enabled: false,
            ..CragConfig::default()
        },
    )
    .await;
    let local = ids(&plain(&e, "code review", 4).await);
    assert_eq!(local.len(), 4);
    let o = e.query(&request("code review", 4)).await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        vec![2],
        "the evaluator saw the top 2 only"
    );
    // The judged head filtered to its first document; the dropped one ranks after it (the
    // request is deeper than the judged depth), then the unjudged tail.
    assert_eq!(ids(&o), local);
    assert!(kinds(&o).contains(&CorrectionKind::Discard));
}

#[tokio::test]
async fn results_a_correction_pushes_out_of_the_judged_head_move_below_it() {
    // Judge 3 of 8; the expanded query's best document is new, so fusing it into the head
    // pushes the head's last document out: that one follows the head instead of being lost.
    let mut parts = CragComponents::heuristic(CragConfig {
        judge_depth: 3,
        ambiguous_filter_enabled: false,
        expansion: ExpansionStrategy::Synonyms,
        expansion_enabled: true,
        // Likeness in words would lift the calcium document into the head before the
        // expansion: this test is about what the expansion's fusion pushes out.
        feedback_rerank: FeedbackRerankConfig {
            term_weight: 0.0,
            ..FeedbackRerankConfig::default()
        },
        ..CragConfig::default()
    })
    .unwrap();
    parts.evaluator = rising(Verdict::Ambiguous, vec![]);
    parts.synonyms = SynonymTable::from_json(r#"{"density": ["calcium", "dairy"]}"#).unwrap();
    let e = engine_of(FEEDBACK_DOCS).await.with_crag(parts).unwrap();
    let local = ids(&plain(&e, "bone density", 8).await);
    let o = e.query(&request("bone density", 8)).await.unwrap();
    let got = ids(&o);
    assert!(
        kinds(&o).contains(&CorrectionKind::Expand),
        "{:?}",
        o.corrections
    );
    assert!(
        got[..3].contains(&"uptake.md#0".to_owned())
            && !local[..3].contains(&"uptake.md#0".to_owned()),
        "the head changed: {got:?} from {local:?}"
    );
    for id in &local {
        assert!(got.contains(id), "{id} is kept: {got:?}");
    }
    assert_unique(&got);
}

#[tokio::test]
async fn feedback_in_words_lifts_a_document_that_shares_words_with_the_first_results() {
    // uptake.md shares no word with "bone density" but "calcium", "absorption" and "vitamin"
    // with the first results: likeness in words brings it into the head, embeddings alone not.
    let uptake = "uptake.md#0".to_owned();
    let default_weight = FeedbackRerankConfig::default().term_weight;
    assert!(default_weight > 0.0);
    for (term_weight, lifted) in [(0.0, false), (default_weight, true)] {
        let mut parts = CragComponents::heuristic(CragConfig {
            judge_depth: 3,
            ambiguous_filter_enabled: false,
            expansion_enabled: false,
            feedback_rerank: FeedbackRerankConfig {
                term_weight,
                ..FeedbackRerankConfig::default()
            },
            ..CragConfig::default()
        })
        .unwrap();
        parts.evaluator = rising(Verdict::Ambiguous, vec![]);
        let e = engine_of(FEEDBACK_DOCS).await.with_crag(parts).unwrap();
        let local = ids(&plain(&e, "bone density", 8).await);
        assert!(!local[..3].contains(&uptake), "{local:?}");
        let got = ids(&e.query(&request("bone density", 8)).await.unwrap());
        assert_eq!(
            got[..3].contains(&uptake),
            lifted,
            "term_weight {term_weight}: {got:?}"
        );
    }
}

#[tokio::test]
async fn filtered_documents_rank_after_the_judged_ones_under_a_deeper_top_k() {
    // Judge 3 of 6; the second judged document scores 0.1. Asked for 3, it is dropped; asked
    // for 6, it follows the judged results and precedes the unjudged ones.
    let e = with(
        scripted(Verdict::Ambiguous, vec![0.9, 0.1, 0.9]),
        None,
        CragConfig {
            judge_depth: 3,
            expansion_enabled: false,
            ..CragConfig::default()
        },
    )
    .await;
    let q = "code review defects";
    let local = ids(&plain(&e, q, 4).await);
    let shallow = e.query(&request(q, 3)).await.unwrap();
    assert_eq!(ids(&shallow), [local[0].clone(), local[2].clone()]);
    let deep = e.query(&request(q, 4)).await.unwrap();
    assert_eq!(
        ids(&deep),
        [
            local[0].clone(),
            local[2].clone(),
            local[1].clone(),
            local[3].clone()
        ]
    );
}

/// A near-copy of the first result that shares no word with the query: only its likeness to
/// the first result can lift it.
const LIKENESS_DOCS: &[(&str, &str, &str)] = &[
    (
        "panels.md",
        "Solar energy",
        "Photovoltaic silicon wafers, inverters, roof mounts and cables make up the panels.",
    ),
    ("drinks.md", "Drinks", "Energy drinks contain caffeine."),
    (
        "install.md",
        "Photovoltaic installation",
        "Photovoltaic silicon wafers, inverters, roof mounts and cables: installing the panels.",
    ),
    (
        "tea.md",
        "Green tea",
        "Green tea is brewed from unoxidised leaves.",
    ),
    (
        "jazz.md",
        "Jazz",
        "Jazz standards are played with improvised solos.",
    ),
];

/// The feedback rerank at its strongest (one feedback document, weight 10): a result's place
/// is its likeness to the first.
fn strong_feedback() -> FeedbackRerankConfig {
    FeedbackRerankConfig {
        feedback_docs: 1,
        weight: 10.0,
        ..FeedbackRerankConfig::default()
    }
}

async fn with_feedback(
    feedback_rerank: FeedbackRerankConfig,
    vectors: Arc<InMemoryVectorIndex>,
) -> Engine {
    let mut parts = CragComponents::heuristic(CragConfig {
        feedback_rerank,
        ..CragConfig::default()
    })
    .unwrap();
    parts.evaluator = scripted(Verdict::Correct, vec![]);
    engine_over(LIKENESS_DOCS, vectors)
        .await
        .with_crag(parts)
        .unwrap()
}

fn documents(o: &QueryOutcome) -> Vec<String> {
    o.artifacts
        .iter()
        .map(|a| a.chunk.document_id.to_string())
        .collect()
}

#[tokio::test]
async fn the_feedback_rerank_lifts_results_like_the_first_one() {
    let q = "solar energy";
    let e = with_feedback(strong_feedback(), Arc::new(InMemoryVectorIndex::new(64))).await;
    let local = plain(&e, q, 5).await;
    assert_eq!(
        documents(&local)[..2],
        ["panels.md", "drinks.md"],
        "{:?}",
        documents(&local)
    );
    // Asked for 2, the rerank still looks 30 deep: the near-copy comes second.
    let lifted = e.query(&request(q, 2)).await.unwrap();
    assert_eq!(documents(&lifted), ["panels.md", "install.md"]);
    // Off, the first retrieval keeps the fused order.
    let off = with_feedback(
        FeedbackRerankConfig {
            enabled: false,
            ..strong_feedback()
        },
        Arc::new(InMemoryVectorIndex::new(64)),
    )
    .await;
    let kept = off.query(&request(q, 5)).await.unwrap();
    assert_eq!(ids(&kept), ids(&plain(&off, q, 5).await));
}

#[tokio::test]
async fn the_feedback_rerank_fails_open_when_the_vectors_cannot_be_read() {
    let q = "solar energy";
    let vectors = Arc::new(InMemoryVectorIndex::new(64));
    let e = with_feedback(strong_feedback(), vectors.clone()).await;
    vectors.fail_vector_reads(true);
    let o = e.query(&request(q, 2)).await.unwrap();
    assert_eq!(documents(&o), ["panels.md", "drinks.md"]);
    assert!(
        o.warnings
            .iter()
            .any(|w| w.contains("feedback rerank skipped")),
        "{:?}",
        o.warnings
    );
    vectors.fail_vector_reads(false);
    let o = e.query(&request(q, 2)).await.unwrap();
    assert_eq!(documents(&o), ["panels.md", "install.md"]);
    assert!(o.warnings.is_empty(), "{:?}", o.warnings);
}

#[tokio::test]
async fn strict_fails_the_query_where_a_lenient_one_falls_back() {
    // Evaluator: fail-open by its own key, closed under strict.
    let failing = Arc::new(FnEvaluator::new("broken", |_q, _d: &[EvalDocument]| {
        Err(PortError::new(ErrorKind::Unavailable, "evaluator down"))
    }));
    let strict = CragConfig {
        strict: true,
        ..CragConfig::default()
    };
    let e = with(failing, None, strict.clone()).await;
    let err = e.query(&request("Rust ownership", 3)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert!(err.to_string().contains("evaluator down"), "{err}");

    // Web search: the same.
    let web = Arc::new(StaticWebSearch::failing(
        ErrorKind::Timeout,
        "searxng timed out",
    ));
    let e = with(
        scripted(Verdict::Incorrect, vec![]),
        Some(web),
        strict.clone(),
    )
    .await;
    let err = e
        .query(&request("latest SpaceX launch updates", 3))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);

    // A failed rewrite by the language model: keywords when lenient, an error when strict.
    for (config, fails) in [(CragConfig::default(), false), (strict.clone(), true)] {
        let llm = Arc::new(ScriptedLanguageModel::new([Err((
            ErrorKind::Unavailable,
            "model down".to_owned(),
        ))]));
        let mut parts = CragComponents::heuristic(config).unwrap();
        parts.evaluator = scripted(Verdict::Incorrect, vec![]);
        parts.rewriter = Some(llm);
        let e = engine().await.with_crag(parts).unwrap();
        let r = e.query(&request("any news on spacex?", 4)).await;
        if fails {
            let err = r.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Unavailable);
            assert!(err.to_string().contains("model down"), "{err}");
            assert!(err.to_string().contains("crag.strict"), "{err}");
        } else {
            let o = r.unwrap();
            assert!(
                o.warnings.iter().any(|w| w.contains("model down")),
                "{:?}",
                o.warnings
            );
        }
    }

    // The feedback rerank's embeddings not read: the fused order when lenient, an error when
    // strict.
    let vectors = Arc::new(InMemoryVectorIndex::new(64));
    let mut parts = CragComponents::heuristic(CragConfig {
        feedback_rerank: strong_feedback(),
        ..strict
    })
    .unwrap();
    parts.evaluator = scripted(Verdict::Correct, vec![]);
    let e = engine_over(LIKENESS_DOCS, vectors.clone())
        .await
        .with_crag(parts)
        .unwrap();
    vectors.fail_vector_reads(true);
    let err = e.query(&request("solar energy", 2)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert!(err.to_string().contains("feedback rerank"), "{err}");
    vectors.fail_vector_reads(false);
    e.query(&request("solar energy", 2)).await.unwrap();
}

#[tokio::test]
async fn crag_disabled_makes_every_query_a_plain_retrieval() {
    let evaluator = Arc::new(FnEvaluator::new("counting", |_q, _d: &[EvalDocument]| {
        panic!("the evaluator is not called when Corrective RAG is disabled")
    }));
    let e = with(
        evaluator,
        None,
        CragConfig {
            enabled: false,
            feedback_rerank: strong_feedback(),
            ..CragConfig::default()
        },
    )
    .await;
    let o = e.query(&request("Rust ownership", 3)).await.unwrap();
    assert_eq!(o.verdict(), None);
    assert!(o.corrections.is_empty(), "{:?}", o.corrections);
    assert_eq!(ids(&o), ids(&plain(&e, "Rust ownership", 3).await));
}

//! Conformance suites: every adapter of a port must pass its suite.
//!
//! Each suite takes a fresh, empty instance and panics with a message on the first broken
//! promise. Fakes run them in unit tests, real adapters in their integration tests.

use std::collections::HashSet;

use crag_core::{Chunk, ChunkId, ChunkKind, DocumentId, Span};

use crate::KeywordIndex;

mod embedder;
mod evaluator;
mod feedback;
mod gaps;
mod language_model;
mod metadata;
mod rerank;
mod session;
mod symbols;
mod terms;
mod vector;
mod websearch;

pub use embedder::embedder_suite;
pub use evaluator::{relevance_evaluator_suite, sample_evaluation_input};
use feedback::{document_frequencies_contract, weighted_terms_contract};
pub use gaps::{gap_detector_suite, sample_gap_context, MAX_GAP_CHARS, SAMPLE_GAP_QUESTION};
pub use language_model::{language_model_suite, sample_completion_request};
pub use metadata::{
    filter_matches_brute_force, metadata_chunks, metadata_filter_suite, sample_filters,
    with_metadata,
};
pub use rerank::{reranker_suite, RerankerModel};
pub use session::session_store_suite;
pub use symbols::symbol_index_suite;
pub use terms::term_graph_suite;
pub use vector::vector_index_suite;
pub use websearch::web_search_suite;

/// A Postgres server's URL for tests: `CRAG_TEST_POSTGRES_URL`, or a throwaway cluster started
/// by the project's `scripts/pg-cluster.sh`. Panics (never skips) when neither gives one.
pub fn postgres_url() -> String {
    if let Ok(url) = std::env::var("CRAG_TEST_POSTGRES_URL") {
        return url;
    }
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg-cluster.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg("start")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "no Postgres for this test: set CRAG_TEST_POSTGRES_URL or install Debian's postgresql ({})",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .expect("the script prints a URL")
        .to_owned()
}

/// Builds a chunk of `document` for tests.
pub fn chunk(document: &str, ordinal: usize, title: &str, text: &str) -> Chunk {
    let document_id = DocumentId::new(document).expect("valid document id");
    let id = ChunkId::for_document(&document_id, ordinal);
    let span = Span::new(0, text.len() as u64, 1, 1).expect("valid span");
    Chunk::new(
        id,
        document_id,
        format!("fixtures/{document}"),
        title,
        text,
        span,
        ChunkKind::Prose,
        format!("hash-of-{document}"),
    )
    .expect("valid chunk")
}

/// A small corpus of chunks on distinct topics, spread over three documents.
pub fn sample_chunks() -> Vec<Chunk> {
    vec![
        chunk(
            "rust.md",
            0,
            "Rust ownership",
            "Ownership and borrowing make Rust memory safe without a garbage collector.",
        ),
        chunk(
            "rust.md",
            1,
            "Rust ownership",
            "The borrow checker rejects dangling references at compile time.",
        ),
        chunk(
            "bread.md",
            0,
            "Baking bread",
            "Sourdough bread needs flour, water, salt and a lively starter.",
        ),
        chunk(
            "bread.md",
            1,
            "Baking bread",
            "Bake the loaf in a hot oven until the crust is deep brown.",
        ),
        chunk(
            "space.md",
            0,
            "Orbital mechanics",
            "A rocket reaches orbit when its horizontal velocity is high enough.",
        ),
    ]
}

fn ids(hits: &[crag_core::ScoredChunk]) -> Vec<&str> {
    hits.iter().map(|h| h.chunk.id.as_str()).collect()
}

/// Chunks are read back by id and by document.
async fn get_contract(index: &dyn KeywordIndex, chunks: &[Chunk]) {
    let wanted = [
        chunks[2].id.clone(),
        ChunkId::new("missing.md#0").expect("id"),
        chunks[0].id.clone(),
    ];
    let got = index.get(&wanted).await.expect("get");
    assert_eq!(
        got,
        vec![chunks[2].clone(), chunks[0].clone()],
        "get keeps the order asked"
    );
    assert!(index.get(&[]).await.expect("get none").is_empty());
    let stored = index.contains(&wanted).await.expect("contains");
    assert_eq!(
        stored,
        [chunks[2].id.clone(), chunks[0].id.clone()].into(),
        "contains names exactly the stored ids"
    );
    assert!(index.contains(&[]).await.expect("contains none").is_empty());
    let document = chunks[0].document_id.clone();
    let mut expected: Vec<Chunk> = chunks
        .iter()
        .filter(|c| c.document_id == document)
        .cloned()
        .collect();
    expected.sort_by(|a, b| {
        a.span
            .byte_start
            .cmp(&b.span.byte_start)
            .then_with(|| a.id.cmp(&b.id))
    });
    assert_eq!(
        index
            .document_chunks(&document)
            .await
            .expect("document chunks"),
        expected
    );
    let absent = DocumentId::new("absent.md").expect("id");
    assert!(index
        .document_chunks(&absent)
        .await
        .expect("absent")
        .is_empty());
}

/// Runs the keyword-index contract against an empty `index`.
pub async fn keyword_index_suite(index: &dyn KeywordIndex) {
    assert_eq!(
        index.count().await.expect("count"),
        0,
        "index must start empty"
    );
    assert!(index
        .search("bread", 10)
        .await
        .expect("search empty")
        .is_empty());

    let chunks = sample_chunks();
    index.upsert(&chunks).await.expect("upsert");
    assert_eq!(index.count().await.expect("count"), chunks.len());
    weighted_terms_contract(index).await;
    document_frequencies_contract(index).await;

    let hits = index
        .search("sourdough bread starter", 10)
        .await
        .expect("search");
    assert_eq!(
        hits.first().map(|h| h.chunk.id.as_str()),
        Some("bread.md#0"),
        "best hit: {:?}",
        ids(&hits)
    );
    assert!(
        hits.windows(2).all(|w| w[0].score >= w[1].score),
        "scores must not increase"
    );
    assert!(hits.iter().all(|h| h.score.is_finite() && h.score > 0.0));
    assert_eq!(hits[0].chunk, chunks[2], "stored chunk must round-trip");
    get_contract(index, &chunks).await;

    // Titles are searched too.
    let hits = index.search("orbital", 10).await.expect("search title");
    assert_eq!(ids(&hits), vec!["space.md#0"]);

    // k is respected.
    assert!(index.search("the", 1).await.expect("search").len() <= 1);

    // Upsert is idempotent by chunk id and replaces content.
    let mut changed = chunks[4].clone();
    changed.text = "A rocket needs thrust; satellites circle the planet.".into();
    index.upsert(&[changed.clone()]).await.expect("re-upsert");
    assert_eq!(index.count().await.expect("count"), chunks.len());
    let hits = index.search("satellites", 10).await.expect("search");
    assert_eq!(ids(&hits), vec!["space.md#0"]);
    assert_eq!(hits[0].chunk.text, changed.text);

    // Any user text is a valid query.
    for odd in [
        "",
        "   ",
        "\"unbalanced",
        "title:rust",
        "(borrow AND",
        "NOT",
        "a OR",
        "[1 TO",
        "^2~",
        "*",
        "?",
        "\\",
        "-",
        "+",
        ":",
        "rust)",
        "{}",
        "日本語の検索",
        "Ünïcödé bröt",
        "the of and",
        "!!!",
        "borrow\" checker:(",
        "&& ||",
    ] {
        let hits = index
            .search(odd, 5)
            .await
            .unwrap_or_else(|e| panic!("query {odd:?} failed: {e}"));
        assert!(hits.len() <= 5);
    }
    let hits = index.search("borrow\" checker:(", 5).await.expect("search");
    assert_eq!(
        hits.first().map(|h| h.chunk.id.as_str()),
        Some("rust.md#1"),
        "syntax characters are taken literally"
    );

    // Documents are listed with their hashes.
    let docs = index.documents().await.expect("documents");
    let mut listed: Vec<(&str, usize)> = docs.iter().map(|d| (d.id.as_str(), d.chunks)).collect();
    listed.sort();
    assert_eq!(
        listed,
        vec![("bread.md", 2), ("rust.md", 2), ("space.md", 1)]
    );
    assert!(docs
        .iter()
        .all(|d| d.content_hash == format!("hash-of-{}", d.id)));

    // Delete by document removes all its chunks and nothing else.
    let bread = DocumentId::new("bread.md").expect("id");
    index.delete_documents(&[bread]).await.expect("delete");
    assert_eq!(index.count().await.expect("count"), 3);
    assert!(index
        .search("sourdough", 10)
        .await
        .expect("search")
        .is_empty());
    assert_eq!(
        index.search("ownership", 10).await.expect("search").len(),
        2
    );
    let missing = DocumentId::new("never-stored.md").expect("id");
    index
        .delete_documents(&[missing])
        .await
        .expect("deleting an unknown document is fine");
    assert_eq!(index.count().await.expect("count"), 3);
    replace_contract(index).await;
    document_search_contract(index).await;
}

/// `search_documents` and `search_terms_documents`: at most `k` hits, one per document, best
/// first, each a stored chunk of its document; a deleted document is never returned.
async fn document_search_contract(index: &dyn KeywordIndex) {
    let extra = [
        chunk(
            "lake.md",
            0,
            "Lakes",
            "A lake holds fresh water; trout swim in it.",
        ),
        chunk(
            "lake.md",
            1,
            "Lakes",
            "Trout and perch feed on insects in the lake.",
        ),
        chunk(
            "sea.md",
            0,
            "Seas",
            "Salt water fills the sea, where no trout swims.",
        ),
    ];
    index.upsert(&extra).await.expect("upsert");
    for k in [1, 2, 10] {
        let hits = index
            .search_documents("trout lake water", k)
            .await
            .expect("search documents");
        assert!(!hits.is_empty() && hits.len() <= k, "{k}: {:?}", ids(&hits));
        let documents: HashSet<&DocumentId> = hits.iter().map(|h| &h.chunk.document_id).collect();
        assert_eq!(
            documents.len(),
            hits.len(),
            "one hit per document: {:?}",
            ids(&hits)
        );
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        assert!(hits.iter().all(|h| h.score.is_finite() && h.score > 0.0));
        assert_eq!(
            hits[0].chunk.document_id.as_str(),
            "lake.md",
            "{:?}",
            ids(&hits)
        );
        let stored = index.get(&[hits[0].chunk.id.clone()]).await.expect("get");
        assert_eq!(
            stored,
            vec![hits[0].chunk.clone()],
            "a stored chunk of the document"
        );
    }
    let term = |term: &str, weight: f32| crag_core::WeightedTerm {
        term: term.into(),
        weight,
    };
    let terms = [term("trout", 1.0), term("sea", 2.0)];
    let hits = index
        .search_terms_documents(&terms, 10)
        .await
        .expect("search terms documents");
    assert_eq!(ids(&hits).first(), Some(&"sea.md#0"), "{:?}", ids(&hits));
    let documents: HashSet<&DocumentId> = hits.iter().map(|h| &h.chunk.document_id).collect();
    assert_eq!(documents.len(), hits.len());
    assert!(index
        .search_documents("", 5)
        .await
        .expect("empty")
        .is_empty());
    assert!(index
        .search_documents("trout", 0)
        .await
        .expect("k 0")
        .is_empty());
    let lake = DocumentId::new("lake.md").expect("id");
    index.delete_documents(&[lake]).await.expect("delete");
    let hits = index
        .search_documents("trout lake", 10)
        .await
        .expect("search");
    assert!(
        hits.iter()
            .all(|h| h.chunk.document_id.as_str() != "lake.md"),
        "{:?}",
        ids(&hits)
    );
}

/// `replace_documents`: the replaced documents' chunks all go, the new chunks come in (a new
/// version with fewer chunks leaves none of the old behind), other documents are untouched.
async fn replace_contract(index: &dyn KeywordIndex) {
    let rust = DocumentId::new("rust.md").expect("id");
    let mut shorter = chunk(
        "rust.md",
        0,
        "Rust lifetimes",
        "Lifetimes name how long a reference lives.",
    );
    shorter.content_hash = "hash-of-rust.md-v2".into();
    let new_doc = chunk(
        "tea.md",
        0,
        "Tea",
        "Green tea steeps for two minutes in water below boiling.",
    );
    index
        .replace_documents(
            std::slice::from_ref(&rust),
            &[shorter.clone(), new_doc.clone()],
        )
        .await
        .expect("replace");
    let docs = index.documents().await.expect("documents");
    let mut listed: Vec<(&str, usize, &str)> = docs
        .iter()
        .map(|d| (d.id.as_str(), d.chunks, d.content_hash.as_str()))
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        vec![
            ("rust.md", 1, "hash-of-rust.md-v2"),
            ("space.md", 1, "hash-of-space.md"),
            ("tea.md", 1, "hash-of-tea.md"),
        ]
    );
    assert!(index
        .search("ownership", 10)
        .await
        .expect("search")
        .is_empty());
    let hits = index.search("lifetimes", 10).await.expect("search");
    assert_eq!(ids(&hits), vec!["rust.md#0"]);
    index
        .replace_documents(&[], &[])
        .await
        .expect("replace nothing");
    assert_eq!(index.count().await.expect("count"), 3);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fakes::{HashEmbedder, InMemoryKeywordIndex, InMemoryVectorIndex};

    #[tokio::test]
    async fn fakes_pass_their_suites() {
        keyword_index_suite(&InMemoryKeywordIndex::default()).await;
        metadata_filter_suite(&InMemoryKeywordIndex::default()).await;
        let embedder = HashEmbedder::new(64);
        vector_index_suite(&InMemoryVectorIndex::new(64), &embedder).await;
        embedder_suite(&embedder).await;
        let evaluator = crate::fakes::FnEvaluator::new("fake", |_q, docs| {
            if docs.is_empty() {
                return Ok(crag_core::Evaluation::nothing_retrieved());
            }
            let scores: Vec<Option<f32>> = docs.iter().map(|d| Some(d.similarity)).collect();
            let mean = scores.iter().flatten().sum::<f32>() / docs.len() as f32;
            Ok(crag_core::Evaluation {
                verdict: crag_core::Verdict::Ambiguous,
                score: mean,
                document_scores: scores,
                document_reasons: Vec::new(),
                criteria: Vec::new(),
                reasoning: "mean similarity".into(),
                issues: Vec::new(),
            })
        });
        relevance_evaluator_suite(&evaluator).await;
        let web: Vec<crate::WebResult> = (1..=5)
            .map(|i| crate::WebResult {
                title: format!("Result {i}"),
                url: format!("https://example.org/{i}"),
                snippet: String::new(),
            })
            .collect();
        web_search_suite(&crate::fakes::StaticWebSearch::new(web), "anything").await;
        let model = crate::fakes::ScriptedLanguageModel::new([Ok("Blue.".to_owned())]);
        language_model_suite(&model).await;
    }
}

//! The LanceDB keyword index (LanceDB's full-text index) on a temporary directory: the
//! keyword conformance suite, metadata filters, and rows written since the index's last
//! update.

use crag_core::WeightedTerm;
use crag_lancedb::{LanceKeywordIndex, StoreOptions};
use crag_ports::testsuite::{chunk, keyword_index_suite, metadata_filter_suite};
use crag_ports::{ErrorKind, KeywordIndex};
use tempfile::TempDir;

const TABLE: &str = "keyword";

async fn open(dir: &TempDir) -> LanceKeywordIndex {
    LanceKeywordIndex::open(
        dir.path().to_str().expect("utf-8 temp dir"),
        TABLE,
        &StoreOptions::default(),
    )
    .await
    .expect("open keyword index")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passes_the_keyword_index_suite() {
    let dir = TempDir::new().expect("tmp");
    keyword_index_suite(&open(&dir).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passes_the_metadata_filter_suite() {
    let dir = TempDir::new().expect("tmp");
    metadata_filter_suite(&open(&dir).await).await;
}

/// Rows written after the index was built are found before the background update adds
/// them, and the update leaves none unindexed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_written_since_the_last_index_update_are_found() {
    let dir = TempDir::new().expect("tmp");
    let index = open(&dir).await;
    assert_eq!(index.unindexed_rows().await.expect("stats"), None);
    index
        .upsert(&[chunk("a.md", 0, "Ovens", "A hot oven bakes bread.")])
        .await
        .expect("upsert");
    index.update_index().await.expect("update");
    assert_eq!(index.unindexed_rows().await.expect("stats"), Some(0));
    index
        .upsert(&[chunk("b.md", 0, "Kilns", "A kiln fires clay pots.")])
        .await
        .expect("upsert");
    let hits = index.search("kiln clay", 5).await.expect("search");
    assert_eq!(hits.first().map(|h| h.chunk.id.as_str()), Some("b.md#0"));
    index.update_index().await.expect("update");
    assert_eq!(index.unindexed_rows().await.expect("stats"), Some(0));
    let hits = index.search("kiln clay", 5).await.expect("search");
    assert_eq!(hits.first().map(|h| h.chunk.id.as_str()), Some("b.md#0"));
}

/// The title weighs against the text as set; a bad weight is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_title_weight_moves_title_matches() {
    let dir = TempDir::new().expect("tmp");
    let index = open(&dir).await;
    index
        .upsert(&[
            chunk("title.md", 0, "Glaze", "Pots are fired twice."),
            chunk(
                "text.md",
                0,
                "Pottery",
                "A glaze melts into glass in the kiln.",
            ),
        ])
        .await
        .expect("upsert");
    let glaze = [WeightedTerm {
        term: index.analyze("glaze").remove(0),
        weight: 1.0,
    }];
    let no_title = index.clone().with_title_weight(0.0).expect("weight");
    let hits = no_title.search_terms(&glaze, 5).await.expect("search");
    assert_eq!(hits.len(), 1, "titles not searched");
    assert_eq!(hits[0].chunk.id.as_str(), "text.md#0");
    let heavy = index.clone().with_title_weight(10.0).expect("weight");
    let hits = heavy.search_terms(&glaze, 5).await.expect("search");
    assert_eq!(hits[0].chunk.id.as_str(), "title.md#0");
    for bad in [-1.0, f32::NAN, f32::INFINITY] {
        let err = index.clone().with_title_weight(bad).expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
    }
}

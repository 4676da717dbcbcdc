//! The metadata-filter contract of keyword indexes: a filtered search is the unfiltered
//! ranking with what the filter leaves out taken away (ids, scores and order kept), `k`
//! results whenever `k` pass; the documents passing and the fields held are those a brute
//! force over the stored metadata finds.

use std::collections::{BTreeMap, BTreeSet};

use crag_core::{Chunk, DocumentId, Metadata, MetadataFilter};
use serde_json::{json, Value};

use super::chunk;
use crate::{metadata_fields_of, KeywordIndex, KeywordQuery};

/// `chunk` with `metadata` (a JSON object).
pub fn with_metadata(chunk: Chunk, metadata: &Value) -> Chunk {
    let object: Metadata = metadata.as_object().cloned().expect("a JSON object");
    chunk.with_metadata(object)
}

/// Six documents (two of two chunks) about bread and ovens, with metadata of every kind:
/// text, whole and fractional numbers, booleans, timestamps, arrays and nested objects.
pub fn metadata_chunks() -> Vec<Chunk> {
    let rows = [
        (
            "a.md",
            json!({"team": "billing", "year": 2021, "tags": ["oven", "rye"], "draft": false,
            "modified": "2026-01-05T10:00:00Z", "owner": {"name": "ana", "level": 2}}),
        ),
        (
            "b.md",
            json!({"team": "search", "year": 2023.0, "tags": ["oven"], "draft": true,
            "modified": "2026-03-01T00:00:00Z"}),
        ),
        (
            "c.md",
            json!({"team": "billing", "year": 2019, "score": 0.75,
            "owner": {"name": "bo"}}),
        ),
        (
            "d.md",
            json!({"team": "core", "tags": [], "modified": "2025-12-31T23:59:59Z"}),
        ),
        (
            "e.md",
            json!({"year": 2024, "score": 1.5, "tags": ["rye", "wheat"]}),
        ),
        ("f.md", json!({})),
    ];
    let texts = [
        "A hot oven bakes rye bread with a dark crust.",
        "Bread dough rises slowly in a cold oven overnight.",
        "Rye flour absorbs more water than wheat flour in bread.",
        "Stone ovens keep heat for hours after the fire is out.",
        "Wheat bread and rye bread bake at different oven temperatures.",
        "A bread oven needs steam in the first minutes of baking.",
    ];
    let mut chunks = Vec::new();
    for (i, ((document, metadata), text)) in rows.iter().zip(texts).enumerate() {
        chunks.push(with_metadata(chunk(document, 0, "Baking", text), metadata));
        if i % 3 == 0 {
            let more = "The oven door stays shut while bread bakes.";
            chunks.push(with_metadata(chunk(document, 1, "Baking", more), metadata));
        }
    }
    chunks
}

/// The filters the suite checks: each operator, alone and combined.
pub fn sample_filters() -> Vec<MetadataFilter> {
    [
        json!({"team": "billing"}),
        json!({"team": {"$ne": "billing"}}),
        json!({"year": 2023}),
        json!({"year": {"$gte": 2021, "$lt": 2024}}),
        json!({"score": {"$gt": 1}}),
        json!({"tags": "rye"}),
        json!({"tags": {"$in": ["wheat", "oven"]}}),
        json!({"tags": {"$nin": ["oven"]}}),
        json!({"draft": true}),
        json!({"modified": {"$gte": "2026-01-01T00:00:00Z"}}),
        json!({"modified": "2026-03-01T00:00:00Z"}),
        json!({"owner": {"$exists": true}}),
        json!({"owner.name": "bo"}),
        json!({"owner.level": {"$lte": 2}}),
        json!({"year": {"$exists": false}}),
        json!({"$or": [{"team": "core"}, {"score": {"$lt": 1}}]}),
        json!({"$not": {"team": "billing"}, "tags": "oven"}),
        json!({"team": "nobody"}),
        json!({"$or": []}),
        json!({}),
    ]
    .iter()
    .map(|f| MetadataFilter::from_json(f).expect("a valid filter"))
    .collect()
}

/// Checks `index`, holding `chunks`, against a brute force for `filter`: for each query,
/// chunk and document rankings at several depths, and the documents passing.
pub async fn filter_matches_brute_force(
    index: &dyn KeywordIndex,
    chunks: &[Chunk],
    queries: &[&str],
    filter: &MetadataFilter,
) {
    let all = chunks.len();
    for query in queries {
        for documents in [false, true] {
            let ranking = if documents {
                index.search_documents(query, all).await
            } else {
                index.search(query, all).await
            }
            .expect("unfiltered search");
            let expected: Vec<(String, f32)> = ranking
                .iter()
                .filter(|h| filter.matches(&h.chunk.metadata))
                .map(|h| (key(&h.chunk, documents), h.score))
                .collect();
            for k in [1, 2, all] {
                let got = index
                    .search_filtered(KeywordQuery::Text(query), documents, k, filter)
                    .await
                    .expect("filtered search");
                let got: Vec<(String, f32)> = got
                    .iter()
                    .map(|h| {
                        assert!(
                            filter.matches(&h.chunk.metadata),
                            "{} does not pass {filter:?}",
                            h.chunk.id
                        );
                        (key(&h.chunk, documents), h.score)
                    })
                    .collect();
                let want = &expected[..k.min(expected.len())];
                let ids = |v: &[(String, f32)]| v.iter().map(|h| h.0.clone()).collect::<Vec<_>>();
                assert_eq!(
                    ids(&got),
                    ids(want),
                    "{filter:?} on {query:?} (documents: {documents}, k {k})"
                );
                for (g, w) in got.iter().zip(want) {
                    assert!((g.1 - w.1).abs() < 1e-4, "score of {} moved", g.0);
                }
            }
        }
    }
    let mut first: BTreeMap<&DocumentId, &Metadata> = BTreeMap::new();
    for c in chunks {
        first.entry(&c.document_id).or_insert(&c.metadata);
    }
    let passing: Vec<DocumentId> = first
        .into_iter()
        .filter(|(_, m)| filter.matches(m))
        .map(|(d, _)| d.clone())
        .collect();
    assert_eq!(
        index
            .filter_documents(filter)
            .await
            .expect("filter documents"),
        passing,
        "documents passing {filter:?}"
    );
}

/// A hit's identity in a ranking: its chunk, or its document in a document ranking (whose
/// representative chunk depends on how deep the chunk ranking was read).
fn key(chunk: &Chunk, documents: bool) -> String {
    if documents {
        chunk.document_id.as_str().to_owned()
    } else {
        chunk.id.as_str().to_owned()
    }
}

/// Runs the metadata contract against an empty `index`.
pub async fn metadata_filter_suite(index: &dyn KeywordIndex) {
    let chunks = metadata_chunks();
    index.upsert(&chunks).await.expect("upsert");
    let mut fields = BTreeMap::new();
    for c in &chunks {
        metadata_fields_of(&c.metadata, &mut fields);
    }
    assert_eq!(
        index.metadata_fields().await.expect("fields"),
        fields,
        "the fields held, with their kinds"
    );
    let stored = index.get(&[chunks[0].id.clone()]).await.expect("get");
    assert_eq!(
        stored[0].metadata, chunks[0].metadata,
        "metadata kept as given"
    );
    let queries = ["rye bread oven", "stone heat fire", "wheat"];
    for filter in sample_filters() {
        filter_matches_brute_force(index, &chunks, &queries, &filter).await;
    }
    // A filter passing one document finds it however far down the ranking it is.
    let only_d = MetadataFilter::from_json(&json!({"team": "core"})).expect("filter");
    let hits = index
        .search_filtered(KeywordQuery::Text("oven heat"), false, 3, &only_d)
        .await
        .expect("search");
    let ids: BTreeSet<&str> = hits.iter().map(|h| h.chunk.id.as_str()).collect();
    assert_eq!(ids, BTreeSet::from(["d.md#0", "d.md#1"]));
}

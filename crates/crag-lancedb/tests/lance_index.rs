//! Integration tests of the LanceDB vector index on a temporary directory.

use crag_core::{Chunk, ChunkId, ChunkKind, DocumentId, Span};
use crag_lancedb::{AnnPolicy, LanceVectorIndex, MemoryPartitioning, Warming};
use crag_ports::fakes::HashEmbedder;
use crag_ports::testsuite::{chunk, sample_chunks, vector_index_suite};
use crag_ports::{EmbeddedChunk, Embedder, ErrorKind, MemoryCopy, VectorIndex};
use tempfile::TempDir;

const DIM: usize = 64;
const TABLE: &str = "chunks";

fn uri(dir: &TempDir) -> &str {
    dir.path().to_str().expect("utf-8 temp dir")
}

async fn open(dir: &TempDir) -> LanceVectorIndex {
    LanceVectorIndex::open(uri(dir), TABLE, DIM)
        .await
        .expect("open index")
}

async fn embedded(chunks: Vec<Chunk>) -> Vec<EmbeddedChunk> {
    let texts: Vec<String> = chunks.iter().map(|c| c.text.clone()).collect();
    let vectors = HashEmbedder::new(DIM).embed(&texts).await.expect("embed");
    chunks
        .into_iter()
        .zip(vectors)
        .map(|(chunk, vector)| EmbeddedChunk { chunk, vector })
        .collect()
}

/// Returns the ids of every stored chunk, sorted.
async fn stored_ids(index: &LanceVectorIndex) -> Vec<String> {
    let probe = vec![1.0f32; DIM];
    let mut ids: Vec<String> = index
        .nearest(&probe, 1000)
        .await
        .expect("nearest")
        .into_iter()
        .map(|h| h.chunk.id.as_str().to_owned())
        .collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread")]
async fn passes_the_vector_index_suite() {
    let dir = TempDir::new().expect("temp dir");
    let index = open(&dir).await;
    vector_index_suite(&index, &HashEmbedder::new(DIM)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn passes_the_vector_index_suite_without_the_memory_scan() {
    let dir = TempDir::new().expect("temp dir");
    let index = open(&dir).await.with_memory_scan(0);
    vector_index_suite(&index, &HashEmbedder::new(DIM)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_memory_scan_agrees_with_lancedb_and_follows_writes() {
    let dir = TempDir::new().expect("temp dir");
    let memory = open(&dir).await;
    // The same table handle, searched by LanceDB.
    let lance = memory.clone().with_memory_scan(0);
    let records = random_records(300, 0);
    memory.upsert(&records).await.expect("upsert");
    let same = |a: &[crag_core::ScoredId], b: &[crag_core::ScoredId]| {
        assert_eq!(
            a.iter().map(|h| &h.id).collect::<Vec<_>>(),
            b.iter().map(|h| &h.id).collect::<Vec<_>>()
        );
        for (x, y) in a.iter().zip(b) {
            assert!(
                (x.score - y.score).abs() < 1e-5,
                "{} vs {}",
                x.score,
                y.score
            );
        }
    };
    for probe in records.iter().step_by(37) {
        let a = memory.nearest_ids(&probe.vector, 20).await.expect("memory");
        let b = lance.nearest_ids(&probe.vector, 20).await.expect("lance");
        assert_eq!(a[0].id, probe.chunk.id, "a stored vector finds itself");
        same(&a, &b);
    }
    // A write through the handle is seen by its next scan: a new nearest neighbour, then
    // its deletion.
    let probe = records[5].vector.clone();
    let twin = EmbeddedChunk {
        chunk: chunk("twin.md", 0, "Twin", "twin"),
        vector: probe.clone(),
    };
    memory
        .upsert(std::slice::from_ref(&twin))
        .await
        .expect("upsert twin");
    let hits = memory.nearest_ids(&probe, 2).await.expect("after upsert");
    let mut ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, [records[5].chunk.id.as_str(), "twin.md#0"]);
    memory
        .delete_documents(std::slice::from_ref(&twin.chunk.document_id))
        .await
        .expect("delete twin");
    let hits = memory.nearest_ids(&probe, 2).await.expect("after delete");
    assert!(hits.iter().all(|h| h.id.as_str() != "twin.md#0"));
    assert_eq!(memory.nearest_ids(&probe, 0).await.expect("k 0"), vec![]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_partitioned_memory_copy_finds_what_lancedb_finds_when_every_partition_is_probed() {
    let dir = TempDir::new().expect("temp dir");
    let (rows, partitions) = (2_000, 45);
    let every = MemoryPartitioning {
        from_rows: 1_000,
        probes: partitions,
    };
    let memory = open(&dir).await.with_memory_partitions(every);
    let lance = memory.clone().with_memory_scan(0);
    let few = memory
        .clone()
        .with_memory_partitions(MemoryPartitioning { probes: 4, ..every });
    let records = random_records(rows, 0);
    memory.upsert(&records).await.expect("upsert");
    assert_eq!(memory.warm().await.expect("warm"), Some(rows));
    let partitioned = memory.memory_partitions().await.expect("partitions");
    assert_eq!(partitioned, Some(partitions), "the square root of the rows");
    let copy = memory.memory_copy().await.expect("copy state");
    assert_eq!(
        copy,
        Some(MemoryCopy {
            rows: Some(rows),
            partitions: Some(partitions),
            loading: false,
            loads: 1,
        })
    );
    assert_eq!(lance.memory_copy().await.expect("no copy"), None);
    let ids = |hits: &[crag_core::ScoredId]| hits.iter().map(|h| h.id.clone()).collect::<Vec<_>>();
    let documents: std::collections::HashSet<DocumentId> = records
        .iter()
        .step_by(7)
        .map(|r| r.chunk.document_id.clone())
        .collect();
    for probe in records.iter().step_by(101) {
        let exact = lance.nearest_ids(&probe.vector, 10).await.expect("lance");
        let all = memory.nearest_ids(&probe.vector, 10).await.expect("all");
        assert_eq!(
            ids(&all),
            ids(&exact),
            "every partition probed: the exact scan"
        );
        // Four partitions of 45: a stored vector is in the partition nearest it.
        let some = few.nearest_ids(&probe.vector, 10).await.expect("few");
        assert_eq!(some.len(), 10);
        assert_eq!(some[0].id, probe.chunk.id, "a stored vector finds itself");
        // Among given documents every row is scanned, whatever the probes.
        let within = few
            .nearest_ids_within(&probe.vector, 10, &documents)
            .await
            .expect("within");
        let exact_within = lance
            .nearest_ids_within(&probe.vector, 10, &documents)
            .await
            .expect("lance within");
        assert_eq!(ids(&within), ids(&exact_within));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn data_survives_reopening() {
    let dir = TempDir::new().expect("temp dir");
    let records = embedded(sample_chunks()).await;
    {
        let index = open(&dir).await;
        index.upsert(&records).await.expect("upsert");
    }
    let index = open(&dir).await;
    assert_eq!(index.count().await.expect("count"), records.len());
    let hits = index.nearest(&records[3].vector, 1).await.expect("nearest");
    assert_eq!(hits[0].chunk, records[3].chunk);
}

#[tokio::test(flavor = "multi_thread")]
async fn reopening_with_another_dimension_is_invalid_input() {
    let dir = TempDir::new().expect("temp dir");
    drop(open(&dir).await);
    let err = LanceVectorIndex::open(uri(&dir), TABLE, DIM * 2)
        .await
        .expect_err("dimension mismatch");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let message = err.to_string();
    assert!(
        message.contains(&DIM.to_string()) && message.contains(&(DIM * 2).to_string()),
        "message names both dimensions: {message}"
    );
    // Another table of the same database may use another dimension.
    let other = LanceVectorIndex::open(uri(&dir), "other", DIM * 2)
        .await
        .expect("other table");
    assert_eq!(other.dimension(), DIM * 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn zero_dimension_is_invalid_input() {
    let dir = TempDir::new().expect("temp dir");
    let err = LanceVectorIndex::open(uri(&dir), TABLE, 0)
        .await
        .expect_err("zero dimension");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

#[tokio::test(flavor = "multi_thread")]
async fn every_chunk_field_round_trips() {
    let dir = TempDir::new().expect("temp dir");
    let index = open(&dir).await;
    let document = DocumentId::new("src/main.rs").expect("id");
    let chunk = Chunk::new(
        ChunkId::for_document(&document, 7),
        document,
        "https://example.com/src/main.rs?x='1'",
        "Main — entry point",
        "fn main() {\n    println!(\"héllo\");\n}\n",
        Span::new(u64::from(u32::MAX) + 5, u64::MAX, 40, u32::MAX).expect("span"),
        ChunkKind::Code,
        "0123abcd",
    )
    .expect("chunk");
    let records = embedded(vec![chunk.clone()]).await;
    index.upsert(&records).await.expect("upsert");
    let hits = index.nearest(&records[0].vector, 5).await.expect("nearest");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].chunk, chunk);
}

#[tokio::test(flavor = "multi_thread")]
async fn ids_with_quotes_backslashes_and_unicode_delete_correctly() {
    let dir = TempDir::new().expect("temp dir");
    let index = open(&dir).await;
    let odd = [
        "it's.md",
        "O''Brien'",
        "back\\slash\\'.md",
        "quote\"double\".md",
        "x') OR ('1' = '1",
        "日本語/ドキュメント.md",
        "ümlaut 'ß' 🦀.md",
    ];
    let mut chunks: Vec<Chunk> = odd
        .iter()
        .enumerate()
        .map(|(i, doc)| chunk(doc, 0, "Odd", &format!("odd document number {i}")))
        .collect();
    chunks.push(chunk("plain.md", 0, "Plain", "an ordinary document"));
    index.upsert(&embedded(chunks).await).await.expect("upsert");
    assert_eq!(index.count().await.expect("count"), odd.len() + 1);

    // Delete one at a time: each removes exactly its own chunk.
    for (i, doc) in odd.iter().enumerate() {
        let id = DocumentId::new(*doc).expect("id");
        index.delete_documents(&[id]).await.expect("delete");
        assert_eq!(
            index.count().await.expect("count"),
            odd.len() - i,
            "deleting {doc:?}"
        );
        let ids = stored_ids(&index).await;
        assert!(!ids.contains(&format!("{doc}#0")), "{doc:?} still stored");
    }
    assert_eq!(stored_ids(&index).await, vec!["plain.md#0".to_owned()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_one_document_leaves_the_others_intact() {
    let dir = TempDir::new().expect("temp dir");
    let index = open(&dir).await;
    let records = embedded(sample_chunks()).await;
    index.upsert(&records).await.expect("upsert");

    let bread = DocumentId::new("bread.md").expect("id");
    index
        .delete_documents(std::slice::from_ref(&bread))
        .await
        .expect("delete");
    assert_eq!(index.count().await.expect("count"), 3);
    for record in &records {
        let hits = index.nearest(&record.vector, 10).await.expect("nearest");
        assert!(hits.iter().all(|h| h.chunk.document_id != bread));
        if record.chunk.document_id != bread {
            assert_eq!(
                hits[0].chunk, record.chunk,
                "other documents keep their chunks"
            );
        }
    }
    // Deleting nothing, or an unknown document, changes nothing.
    index.delete_documents(&[]).await.expect("empty delete");
    let unknown = DocumentId::new("unknown.md").expect("id");
    index
        .delete_documents(&[unknown])
        .await
        .expect("delete unknown");
    assert_eq!(index.count().await.expect("count"), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn ties_are_broken_by_chunk_id() {
    let dir = TempDir::new().expect("temp dir");
    let index = open(&dir).await;
    let mut vector = vec![0.0f32; DIM];
    vector[0] = 1.0;
    // Inserted out of id order and in two writes, so storage order differs from id order.
    for names in [["e.md", "b.md", "d.md"], ["a.md", "f.md", "c.md"]] {
        let records: Vec<EmbeddedChunk> = names
            .iter()
            .map(|name| EmbeddedChunk {
                chunk: chunk(name, 0, "Same", "same vector"),
                vector: vector.clone(),
            })
            .collect();
        index.upsert(&records).await.expect("upsert");
    }
    let expected = ["a.md#0", "b.md#0", "c.md#0", "d.md#0", "e.md#0", "f.md#0"];
    let lance = index.clone().with_memory_scan(0);
    for k in 1..=6 {
        let hits = index.nearest(&vector, k).await.expect("nearest");
        let ids: Vec<&str> = hits.iter().map(|h| h.chunk.id.as_str()).collect();
        assert_eq!(ids, expected[..k].to_vec());
        for by_id in [&index, &lance] {
            let hits = by_id.nearest_ids(&vector, k).await.expect("nearest_ids");
            let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
            assert_eq!(ids, expected[..k].to_vec());
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_last_duplicate_in_one_upsert_wins() {
    let dir = TempDir::new().expect("temp dir");
    let index = open(&dir).await;
    let first = chunk("dup.md", 0, "Dup", "first version");
    let mut second = first.clone();
    second.text = "second version".into();
    let records = embedded(vec![first, second.clone()]).await;
    index.upsert(&records).await.expect("upsert");
    assert_eq!(index.count().await.expect("count"), 1);
    let hits = index.nearest(&records[1].vector, 5).await.expect("nearest");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].chunk, second);
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_vectors_write_nothing() {
    let dir = TempDir::new().expect("temp dir");
    let index = open(&dir).await;
    let mut records = embedded(sample_chunks()).await;
    records[4].vector = vec![0.0; DIM];
    let err = index.upsert(&records).await.expect_err("zero vector");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    records[4].vector = vec![f32::NAN; DIM];
    let err = index.upsert(&records).await.expect_err("nan vector");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(index.count().await.expect("count"), 0);
    assert!(index
        .nearest(&records[0].vector, 0)
        .await
        .expect("k = 0")
        .is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn optimize_compacts_many_small_writes_without_changing_results() {
    let dir = TempDir::new().expect("temp dir");
    let index = open(&dir).await;
    // One upsert per new chunk: each write leaves a fragment of its own.
    let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"];
    let chunks: Vec<Chunk> = (0..12)
        .map(|i| {
            let text = format!("{} {} note {i}", words[i % 6], words[(i + 1) % 6]);
            chunk(&format!("doc-{}.md", i / 3), i % 3, "Notes", &text)
        })
        .collect();
    let records = embedded(chunks).await;
    for record in &records {
        index
            .upsert(std::slice::from_ref(record))
            .await
            .expect("upsert");
    }
    assert_eq!(
        index.layout().await.expect("layout").fragments,
        records.len()
    );
    let probe = records[0].vector.clone();
    let before = index.nearest(&probe, 10).await.expect("nearest");

    index.optimize().await.expect("optimize");
    assert_eq!(index.layout().await.expect("layout").fragments, 1);
    assert_eq!(index.count().await.expect("count"), records.len());
    let after = index.nearest(&probe, 10).await.expect("nearest");
    assert_eq!(after, before, "compaction must not change results");

    // A few more writes stay below the threshold: nothing is rewritten.
    index.upsert(&records[..1]).await.expect("upsert");
    index.optimize().await.expect("optimize");
    assert_eq!(index.layout().await.expect("layout").fragments, 2);

    // The compacted table reopens with everything in it.
    drop(index);
    let reopened = open(&dir).await;
    assert_eq!(reopened.count().await.expect("count"), records.len());
    assert_eq!(reopened.nearest(&probe, 10).await.expect("nearest"), before);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_run_of_writes_is_compacted_and_upserts_through_the_chunk_id_index() {
    let dir = TempDir::new().expect("temp dir");
    let index = open(&dir).await;
    let records = random_records(2 * crag_lancedb::WRITES_PER_UPKEEP, 0);
    // One write per chunk, as an ingestion's batches: no optimize in between.
    for record in &records[..crag_lancedb::WRITES_PER_UPKEEP] {
        index
            .upsert(std::slice::from_ref(record))
            .await
            .expect("upsert");
    }
    let layout = index.layout().await.expect("layout");
    assert!(layout.fragments < 8, "compacted on the way: {layout:?}");
    assert_eq!(
        index.key_index_rows().await.expect("stats"),
        Some((crag_lancedb::WRITES_PER_UPKEEP, 0))
    );
    for record in &records[crag_lancedb::WRITES_PER_UPKEEP..] {
        index
            .upsert(std::slice::from_ref(record))
            .await
            .expect("upsert");
    }
    // Upserts of stored chunks, found through the index (indexed rows) and past it (rows
    // written since the last upkeep), replace them: no row twice.
    let mut moved = vec![records[3].clone(), records[records.len() - 2].clone()];
    for (record, other) in moved.iter_mut().zip([&records[10], &records[11]]) {
        record.vector = other.vector.clone();
    }
    index.upsert(&moved).await.expect("upsert");
    assert_eq!(index.count().await.expect("count"), records.len());
    let mut ids = stored_ids(&index).await;
    ids.dedup();
    assert_eq!(ids.len(), records.len(), "every chunk once");
    for record in &moved {
        let hits = index.nearest(&record.vector, 3).await.expect("nearest");
        assert!(
            hits.iter()
                .any(|h| h.chunk.id == record.chunk.id && h.score > 0.999),
            "{} holds its new vector",
            record.chunk.id
        );
    }
    index.optimize().await.expect("optimize");
    assert_eq!(
        index.key_index_rows().await.expect("stats"),
        Some((records.len(), 0))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_chunk_id_index_segments_are_merged_so_that_compaction_joins_their_fragments() {
    let dir = TempDir::new().expect("temp dir");
    // No in-memory copy: stored vectors are read by chunk id through the index.
    let index = open(&dir).await.with_memory_scan(0);
    let upkeeps = crag_lancedb::KEY_INDEX_SEGMENTS + 2;
    let records = random_records(upkeeps * crag_lancedb::WRITES_PER_UPKEEP, 0);
    let mut most_segments = 0;
    for (i, record) in records.iter().enumerate() {
        index
            .upsert(std::slice::from_ref(record))
            .await
            .expect("upsert");
        if (i + 1) % crag_lancedb::WRITES_PER_UPKEEP == 0 {
            let segments = index.key_index_segments().await.expect("stats");
            most_segments = most_segments.max(segments.expect("a chunk id index"));
        }
        if i + 1 == crag_lancedb::WRITES_PER_UPKEEP {
            // The first upkeep prunes old versions (none pruned yet), the next ones within
            // the minute do not.
            assert_eq!(index.version_prunes(), 1, "pruned by the first upkeep");
        }
    }
    assert_eq!(index.version_prunes(), 1, "at most one prune a minute");
    // Each upkeep adds a segment until one more would pass the most; then they are merged.
    assert_eq!(most_segments, crag_lancedb::KEY_INDEX_SEGMENTS);
    assert!(
        index.key_index_segments().await.expect("stats") < Some(crag_lancedb::KEY_INDEX_SEGMENTS),
        "merged at the upkeep that would have passed the most"
    );
    // Without the merge every upkeep's fragment stays apart (compaction only joins fragments
    // covered by the same segments): one per upkeep.
    let layout = index.layout().await.expect("layout");
    assert!(
        layout.fragments < upkeeps / 2,
        "fragments of merged segments joined: {layout:?}"
    );
    assert_eq!(index.count().await.expect("count"), records.len());
    let mut ids = stored_ids(&index).await;
    ids.dedup();
    assert_eq!(ids.len(), records.len(), "every chunk once");
    let read = index
        .vectors(&[records[5].chunk.id.clone(), records[300].chunk.id.clone()])
        .await
        .expect("vectors");
    assert_eq!(read.len(), 2, "chunks found by id through the merged index");
    assert_eq!(read[0].1, records[5].vector);
}

#[tokio::test(flavor = "multi_thread")]
async fn optimize_applies_deletions_of_a_tenth_of_the_rows() {
    let dir = TempDir::new().expect("temp dir");
    let index = open(&dir).await;
    let records = embedded(sample_chunks()).await;
    index.upsert(&records).await.expect("upsert");
    let gone = records[0].chunk.document_id.clone();
    index
        .delete_documents(std::slice::from_ref(&gone))
        .await
        .expect("delete");
    let kept = index.count().await.expect("count");
    let before = index.layout().await.expect("layout");
    assert_eq!(before.deleted_rows, records.len() - kept);
    assert!(before.deleted_rows * 10 >= records.len(), "a tenth deleted");
    index.optimize().await.expect("optimize");
    let after = index.layout().await.expect("layout");
    assert_eq!(after.deleted_rows, 0, "deletions applied");
    assert_eq!(after.rows, kept);
    assert_eq!(index.count().await.expect("count"), kept);
    let hits = index
        .nearest(&records[0].vector, 10)
        .await
        .expect("nearest");
    assert_eq!(hits.len(), kept);
    assert!(hits.iter().all(|h| h.chunk.document_id != gone));
}

/// `n` chunks `offset..offset + n` with pseudo-random vectors (fixed seed): spread like
/// embeddings, unlike the hash embedder's bag-of-words vectors over a few test words, whose
/// near-duplicates an ANN index cannot tell apart.
fn random_records(n: usize, offset: usize) -> Vec<EmbeddedChunk> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15 ^ offset as u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    (offset..offset + n)
        .map(|i| {
            let text = format!("note {i}");
            EmbeddedChunk {
                chunk: chunk(&format!("doc-{}.md", i / 10), i % 10, "Notes", &text),
                vector: (0..DIM).map(|_| next() + next() + next()).collect(),
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn ann_index_is_built_at_the_threshold_and_keeps_exact_scores() {
    let dir = TempDir::new().expect("temp dir");
    let index = open(&dir).await.with_ann(AnnPolicy::FromRows(400));
    let records = random_records(300, 0);
    index.upsert(&records).await.expect("upsert");
    index.optimize().await.expect("optimize");
    assert_eq!(
        index.ann_index().await.expect("ann"),
        None,
        "below 400 rows"
    );

    let more = random_records(200, 300);
    index.upsert(&more).await.expect("upsert");
    index.optimize().await.expect("optimize");
    let ann = index
        .ann_index()
        .await
        .expect("ann")
        .expect("built at 500 rows");
    assert_eq!((ann.indexed_rows, ann.unindexed_rows), (500, 0));

    // Against an exact scan of the same table: the same best hits, exact scores.
    let exact = open(&dir).await.with_ann(AnnPolicy::Off);
    let mut same_top10 = 0;
    for probe in records.iter().chain(&more).step_by(25) {
        let approx = index.nearest(&probe.vector, 10).await.expect("ann search");
        let truth = exact
            .nearest(&probe.vector, 10)
            .await
            .expect("exact search");
        assert_eq!(approx.len(), 10);
        assert_eq!(approx[0].chunk, probe.chunk, "a vector finds itself first");
        assert!((approx[0].score - 1.0).abs() < 1e-4, "exact self score");
        for hit in &approx {
            let distance = cosine_distance(&probe.vector, &vector_of(&records, &more, hit));
            assert!(
                (hit.score - (1.0 - distance / 2.0)).abs() < 1e-4,
                "exact scores"
            );
        }
        same_top10 += approx
            .iter()
            .filter(|h| truth.iter().any(|t| t.chunk.id == h.chunk.id))
            .count();
    }
    assert!(same_top10 >= 190, "recall@10 {same_top10}/200");
    // A chosen number of partitions (here the index's only one) searches the same way.
    let probed = index.clone().with_nprobes(1);
    let hits = probed
        .nearest(&more[7].vector, 10)
        .await
        .expect("nprobes search");
    assert_eq!(hits.len(), 10);
    assert_eq!(hits[0].chunk, more[7].chunk, "a vector finds itself first");

    // Later rows are scanned until optimize adds them to the index.
    let late = random_records(20, 500);
    index.upsert(&late).await.expect("upsert");
    let ann = index.ann_index().await.expect("ann").expect("index");
    assert_eq!(ann.unindexed_rows, 20);
    let hits = index.nearest(&late[3].vector, 1).await.expect("nearest");
    assert_eq!(hits[0].chunk, late[3].chunk, "unindexed rows are searched");
    index.optimize().await.expect("optimize");
    let ann = index.ann_index().await.expect("ann").expect("index");
    assert_eq!((ann.indexed_rows, ann.unindexed_rows), (520, 0));
    let hits = index.nearest(&late[3].vector, 1).await.expect("nearest");
    assert_eq!(hits[0].chunk, late[3].chunk);
}

#[tokio::test(flavor = "multi_thread")]
async fn ann_off_never_builds_an_index() {
    let dir = TempDir::new().expect("temp dir");
    let index = open(&dir).await.with_ann(AnnPolicy::Off);
    index.upsert(&random_records(300, 0)).await.expect("upsert");
    index.optimize().await.expect("optimize");
    assert_eq!(index.ann_index().await.expect("ann"), None);
}

fn vector_of(a: &[EmbeddedChunk], b: &[EmbeddedChunk], hit: &crag_core::ScoredChunk) -> Vec<f32> {
    a.iter()
        .chain(b)
        .find(|r| r.chunk.id == hit.chunk.id)
        .expect("hit is stored")
        .vector
        .clone()
}

/// `1 - cosine similarity`, LanceDB's cosine distance.
fn cosine_distance(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    1.0 - dot / (na * nb)
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_searches_after_a_write_load_the_memory_copy_once() {
    let dir = TempDir::new().expect("temp dir");
    let index = open(&dir).await;
    index.upsert(&random_records(200, 0)).await.expect("upsert");
    let before = index.memory_loads();
    let probe = vec![0.5f32; DIM];
    let searches: Vec<_> = (0..8)
        .map(|_| {
            let (index, probe) = (index.clone(), probe.clone());
            tokio::spawn(async move { index.nearest_ids(&probe, 5).await })
        })
        .collect();
    let mut found = Vec::new();
    for search in searches {
        let hits = search.await.expect("task").expect("search");
        found.push(hits.into_iter().map(|h| h.id).collect::<Vec<_>>());
    }
    // One search copied the vectors; the others searched LanceDB meanwhile, or the copy
    // once it was there: the same neighbours either way.
    assert_eq!(
        index.memory_loads() - before,
        1,
        "one load for eight searches"
    );
    assert!(found.windows(2).all(|w| w[0] == w[1]), "{found:?}");
    assert_eq!(found[0].len(), 5);
    assert_eq!(index.warm().await.expect("warm"), Some(200));
    assert_eq!(index.memory_loads() - before, 1, "the copy is current");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_memory_copy_is_loaded_by_warm_and_after_optimize_not_by_the_next_search() {
    let dir = TempDir::new().expect("temp dir");
    let index = open(&dir).await;
    let records = random_records(40, 3);
    index.upsert(&records).await.expect("upsert");
    assert_eq!(
        index.memory_rows().await.expect("rows"),
        None,
        "stale after a write"
    );
    index.optimize().await.expect("optimize");
    assert_eq!(
        index.memory_rows().await.expect("rows"),
        Some(40),
        "reloaded by optimize"
    );

    index
        .delete_documents(std::slice::from_ref(&records[0].chunk.document_id))
        .await
        .expect("delete");
    assert_eq!(index.memory_rows().await.expect("rows"), None);
    assert_eq!(
        index.warm().await.expect("warm"),
        Some(33),
        "doc-0.md had seven chunks (notes 3 to 9)"
    );
    assert_eq!(index.memory_rows().await.expect("rows"), Some(33));

    // Memory scans off, or a table over the limit: nothing is copied.
    assert_eq!(
        index.clone().with_memory_scan(0).warm().await.expect("off"),
        None
    );
    // A clone shares the copy but keeps to its own limit.
    assert_eq!(
        index
            .clone()
            .with_memory_scan(10)
            .warm()
            .await
            .expect("large"),
        None
    );
    assert_eq!(
        index.memory_rows().await.expect("rows"),
        Some(33),
        "the first handle keeps its copy"
    );
}

// One thread: the background task cannot run before the test awaits.
#[tokio::test]
async fn a_large_memory_copy_loads_in_the_background_while_searches_go_to_lancedb() {
    let dir = TempDir::new().expect("temp dir");
    // 200 rows count as large from 100.
    let index = open(&dir).await.with_warm_wait_rows(100);
    index.upsert(&random_records(200, 0)).await.expect("upsert");
    let before = index.memory_loads();
    assert_eq!(
        index.start_warm().await.expect("start"),
        Warming::Background
    );
    // The background task holds the load from before `start_warm` returned (it has not run
    // yet): this search goes to LanceDB (or finds the copy loaded), it loads none of its own.
    assert!(
        index.memory_loading(),
        "the load is held before the task runs"
    );
    let probe = vec![0.5f32; DIM];
    let first = index.nearest_ids(&probe, 5).await.expect("search");
    index.warm_up().await.expect("warm up");
    assert_eq!(index.memory_rows().await.expect("rows"), Some(200));
    assert_eq!(
        index.memory_loads() - before,
        1,
        "one load, the background's"
    );
    let copied = index.nearest_ids(&probe, 5).await.expect("search");
    let ids = |hits: &[crag_core::ScoredId]| hits.iter().map(|h| h.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&first), ids(&copied), "the same neighbours either way");
    assert_eq!(
        index.start_warm().await.expect("again"),
        Warming::Loaded(200),
        "current: nothing to load"
    );

    // A table within the wait rows is loaded before `start_warm` returns; none beyond the
    // memory scan's rows.
    index
        .upsert(&random_records(10, 200))
        .await
        .expect("upsert");
    assert_eq!(
        index
            .clone()
            .with_warm_wait_rows(1000)
            .start_warm()
            .await
            .expect("small"),
        Warming::Loaded(210)
    );
    index
        .upsert(&random_records(10, 210))
        .await
        .expect("upsert");
    assert_eq!(
        index
            .clone()
            .with_memory_scan(100)
            .start_warm()
            .await
            .expect("over"),
        Warming::Off
    );
    assert_eq!(index.memory_loads() - before, 2);
}

//! Hybrid retrieval: both legs concurrently, the catalogue check, filters, fusion, and the
//! reading of the chunks only the vector leg found.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crag_core::{
    Chunk, ChunkFilter, ChunkId, DocumentId, FusedHit, MetadataFilter, ScoredChunk, ScoredId, TopK,
};
use crag_ports::{KeywordQuery, PortResult};

use super::{Engine, KeywordInput, Retrieval, RetrievalTimings, VectorInput, FILTER_OVERFETCH};
use crate::code;
use crate::config::RetrievalScope;
use crate::error::Result;
use crate::fusion::{first_per_document, fuse, fuse_ids, per_document, per_document_ids, Fusion};

/// How far the vector-only search widens past `k` to replace hits outside the catalogue.
const ORPHAN_WIDENING: usize = 8;

/// Chunks the vector leg asks for per document wanted when documents are ranked: its depth
/// is counted in documents (a document's further chunks are left out), so it asks for more
/// chunks than documents (SciFact has 2 chunks a document, Cranfield 1.4).
const DOCUMENT_CHUNKS: usize = 2;

/// What the vector leg returned.
enum VectorHits {
    /// Ids and scores: the chunks are read after fusion, for the hits kept.
    Ids(Vec<ScoredId>),
    /// Whole chunks (catalogued), which a filter reads before fusion.
    Chunks(Vec<ScoredChunk>),
}

impl Engine {
    /// Both legs, each `leg_depth` deep (the configured `leg_depth` when `None`, at least
    /// `top_k`), fused into the best `top_k`.
    pub(crate) async fn retrieve_legs(
        &self,
        keyword_input: KeywordInput<'_>,
        vector_input: VectorInput<'_>,
        top_k: TopK,
        leg_depth: Option<usize>,
        filter: &ChunkFilter,
        fusion: Option<Fusion>,
    ) -> Result<Retrieval> {
        let started = Instant::now();
        let fusion = fusion.unwrap_or(self.config.fusion);
        if let Some(metadata) = &filter.metadata {
            self.check_metadata_filter(metadata).await?;
        }
        let mut depth = leg_depth.unwrap_or(self.config.leg_depth).max(top_k.get());
        // The metadata filter is applied inside both searches; the rest on their candidates.
        if filter.filters_candidates() {
            depth = depth.saturating_mul(FILTER_OVERFETCH);
        }
        let metadata = filter.search_metadata();
        let keyword_leg = self.keyword_leg(keyword_input, depth, metadata.as_ref());
        let vector_leg = self.vector_leg(vector_input, depth, filter, metadata.as_ref());
        let ((keyword, keyword_time), (vector, query_vector, embed_time, vector_time)) =
            tokio::join!(keyword_leg, vector_leg);
        let mut warnings = Vec::new();
        let (keyword, vector) = match (keyword, vector) {
            (Ok(k), Ok(v)) => (k, v),
            (Ok(k), Err(e)) => {
                tracing::warn!(error = %e, "vector leg failed");
                warnings.push(format!("vector leg failed: {e}"));
                (k, VectorHits::Ids(Vec::new()))
            }
            (Err(e), Ok(v)) => {
                tracing::warn!(error = %e, "keyword leg failed");
                warnings.push(format!("keyword leg failed: {e}"));
                (Vec::new(), v)
            }
            (Err(e), Err(_)) => return Err(e.into()),
        };
        let keyword = Arc::new(keyword);
        let t = Instant::now();
        let (mut hits, vector_floor) = match vector {
            VectorHits::Ids(ids) => {
                match self.fuse_read(&keyword, ids, fusion, top_k.get()).await {
                    Ok(fused) => fused,
                    Err(error) => {
                        // The keyword index could not give the vector hits' chunks: read them
                        // from the vector index, keeping those its membership test lists.
                        tracing::warn!(%error, "reading vector hits from the keyword index failed");
                        warnings.push(format!(
                            "reading vector hits from the keyword index failed ({error}); \
                         read from the vector index"
                        ));
                        let vector = match &query_vector {
                            Some(q) => self.vectors.nearest(q, depth).await.unwrap_or_else(|e| {
                                // Both indexes failed in turn: the keyword leg's hits still answer.
                                tracing::warn!(error = %e, "vector leg failed");
                                warnings.push(format!("vector leg failed: {e}"));
                                Vec::new()
                            }),
                            None => Vec::new(),
                        };
                        let vector = self.catalogued(&keyword, vector).await;
                        self.fuse_chunks(keyword.to_vec(), vector, filter, fusion, top_k.get())
                            .await?
                    }
                }
            }
            VectorHits::Chunks(vector) => {
                self.fuse_chunks(keyword.to_vec(), vector, filter, fusion, top_k.get())
                    .await?
            }
        };
        let fusion = t.elapsed();
        if let Some(symbols) = &self.symbols {
            code::hydrate(symbols.as_ref(), hits.iter_mut().map(|h| &mut h.chunk)).await?;
        }
        Ok(Retrieval {
            hits,
            timings: RetrievalTimings {
                keyword: keyword_time,
                embed: embed_time,
                vector: vector_time,
                fusion,
                total: started.elapsed(),
            },
            warnings,
            vector_floor,
            query_vector,
            keyword_hits: keyword,
        })
    }

    /// Refuses a metadata filter that names a field no stored document has, or compares a
    /// field with a kind of value it never holds.
    pub(crate) async fn check_metadata_filter(&self, filter: &MetadataFilter) -> Result<()> {
        let fields = self.keywords.metadata_fields().await?;
        filter.check(&|field| fields.get(field).cloned())?;
        Ok(())
    }

    /// The keyword leg: BM25 over chunks or documents, of text or weighted terms, among the
    /// chunks `metadata` passes, at most `depth` hits, and how long it took.
    async fn keyword_leg(
        &self,
        input: KeywordInput<'_>,
        depth: usize,
        metadata: Option<&MetadataFilter>,
    ) -> (PortResult<Vec<ScoredChunk>>, Duration) {
        let t = Instant::now();
        let keywords = self.keywords.as_ref();
        let query = match input {
            KeywordInput::Hits(hits) => {
                return (Ok(hits.iter().take(depth).cloned().collect()), t.elapsed())
            }
            KeywordInput::Text(text) => KeywordQuery::Text(text),
            KeywordInput::Terms(terms) => KeywordQuery::Terms(terms),
        };
        let documents = self.config.scope == RetrievalScope::Documents;
        if let Some(filter) = metadata {
            let hits = keywords
                .search_filtered(query, documents, depth, filter)
                .await;
            return (hits, t.elapsed());
        }
        let hits = match (query, documents) {
            (KeywordQuery::Text(text), true) => keywords.search_documents(text, depth).await,
            (KeywordQuery::Text(text), false) => keywords.search(text, depth).await,
            (KeywordQuery::Terms(terms), true) => {
                keywords.search_terms_documents(terms, depth).await
            }
            (KeywordQuery::Terms(terms), false) => keywords.search_terms(terms, depth).await,
        };
        (hits, t.elapsed())
    }

    /// The vector leg: the query embedded (or the vector given), its nearest `depth` chunks
    /// among the documents `metadata` passes (as ids, or as catalogued chunks when a filter
    /// reads them before fusion), the vector used, and the embedding and search times.
    async fn vector_leg(
        &self,
        input: VectorInput<'_>,
        depth: usize,
        filter: &ChunkFilter,
        metadata: Option<&MetadataFilter>,
    ) -> (PortResult<VectorHits>, Option<Vec<f32>>, Duration, Duration) {
        let t = Instant::now();
        let embed = async {
            let embedded = match input {
                VectorInput::Text(text) => {
                    self.query_vectors.embed(self.embedder.as_ref(), text).await
                }
                VectorInput::Vector(v) => Ok(Some(v.to_vec())),
            };
            (embedded, t.elapsed())
        };
        // The documents a metadata filter passes, read while the query is embedded: the
        // vector search is restricted to their chunks.
        let passing = async {
            match metadata {
                Some(metadata) => Some(
                    self.keywords
                        .filter_documents(metadata)
                        .await
                        .map(|ids| ids.into_iter().collect::<HashSet<DocumentId>>()),
                ),
                None => None,
            }
        };
        let ((embedded, embed_time), passing) = tokio::join!(embed, passing);
        let within = match passing.transpose() {
            Ok(within) => within,
            Err(e) => return (Err(e), None, embed_time, Duration::ZERO),
        };
        let t = Instant::now();
        let (hits, used): (PortResult<VectorHits>, _) = match embedded {
            Ok(Some(vector)) => {
                let hits = if filter.filters_candidates() {
                    // A filter reads the chunks before fusion: ids from the vector index,
                    // the chunks from the catalogue (orphans left out).
                    self.nearest_catalogued(&vector, depth, within.as_ref())
                        .await
                        .map(VectorHits::Chunks)
                } else {
                    let documents = self.config.scope == RetrievalScope::Documents;
                    let asked = if documents {
                        depth.saturating_mul(DOCUMENT_CHUNKS)
                    } else {
                        depth
                    };
                    match &within {
                        Some(within) => self.vectors.nearest_ids_within(&vector, asked, within),
                        None => self.vectors.nearest_ids(&vector, asked),
                    }
                    .await
                    .map(|ids| match documents {
                        true => first_per_document(ids, depth),
                        false => ids,
                    })
                    .map(VectorHits::Ids)
                };
                (hits, Some(vector))
            }
            Ok(None) => (Ok(VectorHits::Ids(Vec::new())), None),
            Err(e) => (Err(e), None),
        };
        (hits, used, embed_time, t.elapsed())
    }

    /// The `k` catalogued chunks nearest to `vector`, best first: ids and scores from the
    /// vector index, the chunks read in one call to the keyword index (the catalogue of what
    /// is fully ingested; an id it does not hold is skipped and the search widened). If that
    /// read fails, the chunks come from the vector index, as before the catalogue read.
    pub(crate) async fn nearest_catalogued(
        &self,
        vector: &[f32],
        k: usize,
        within: Option<&HashSet<DocumentId>>,
    ) -> PortResult<Vec<ScoredChunk>> {
        let mut asked = k;
        loop {
            let ids = match within {
                Some(within) => {
                    self.vectors
                        .nearest_ids_within(vector, asked, within)
                        .await?
                }
                None => self.vectors.nearest_ids(vector, asked).await?,
            };
            let wanted: Vec<ChunkId> = ids.iter().map(|h| h.id.clone()).collect();
            let mut read: HashMap<ChunkId, Chunk> = match self.keywords.get(&wanted).await {
                Ok(chunks) => chunks.into_iter().map(|c| (c.id.clone(), c)).collect(),
                Err(error) => {
                    tracing::warn!(%error, "reading vector hits from the keyword index failed");
                    let hits = self.vectors.nearest(vector, k).await?;
                    return Ok(self.catalogued(&[], hits).await);
                }
            };
            let exhausted = ids.len() < asked;
            let orphans = ids.len() - read.len();
            let hits: Vec<ScoredChunk> = ids
                .into_iter()
                .filter_map(|h| {
                    let chunk = read.remove(&h.id)?;
                    Some(ScoredChunk {
                        chunk,
                        score: h.score,
                    })
                })
                .take(k)
                .collect();
            if orphans == 0 || hits.len() == k || exhausted || asked >= k * ORPHAN_WIDENING {
                if orphans > 0 {
                    tracing::warn!(
                        dropped = orphans,
                        "vector hits outside the keyword catalogue dropped (run reconcile)"
                    );
                }
                return Ok(hits);
            }
            asked = asked.saturating_mul(2);
        }
    }

    /// Fuses the keyword hits with the vector leg's ids and reads the chunks of the fused hits
    /// only the vector leg found, in one call to the keyword index. The keyword index is the
    /// catalogue of what is fully ingested: a vector id it does not hold (a document whose
    /// write stopped between the two indexes) is dropped and the fusion done again, so a
    /// document is never returned by half. Returns the hits and the vector leg's lowest score.
    async fn fuse_read(
        &self,
        keyword: &[ScoredChunk],
        mut vector: Vec<ScoredId>,
        fusion: Fusion,
        top_k: usize,
    ) -> PortResult<(Vec<FusedHit>, Option<f32>)> {
        let known: HashMap<&str, &Chunk> = keyword
            .iter()
            .map(|h| (h.chunk.id.as_str(), &h.chunk))
            .collect();
        let keyword_scores: Vec<(&str, f32)> = keyword
            .iter()
            .map(|h| (h.chunk.id.as_str(), h.score))
            .collect();
        let mut read: HashMap<String, Chunk> = HashMap::new();
        loop {
            let missing: HashSet<ChunkId> = {
                let mut vector_scores: Vec<(&str, f32)> =
                    vector.iter().map(|h| (h.id.as_str(), h.score)).collect();
                let mut keyword_scores = keyword_scores.clone();
                if self.config.scope == RetrievalScope::Documents {
                    (keyword_scores, vector_scores) =
                        per_document_ids(&keyword_scores, vector_scores);
                }
                let fused = fuse_ids(&keyword_scores, &vector_scores, fusion, top_k);
                let kept: HashSet<&str> = fused.iter().map(|f| f.id).collect();
                let wanted: Vec<ChunkId> = vector
                    .iter()
                    .filter(|h| kept.contains(h.id.as_str()))
                    .filter(|h| !known.contains_key(h.id.as_str()))
                    .filter(|h| !read.contains_key(h.id.as_str()))
                    .map(|h| h.id.clone())
                    .collect();
                if !wanted.is_empty() {
                    for chunk in self.keywords.get(&wanted).await? {
                        read.insert(chunk.id.as_str().to_owned(), chunk);
                    }
                }
                let missing: HashSet<ChunkId> = wanted
                    .into_iter()
                    .filter(|id| !read.contains_key(id.as_str()))
                    .collect();
                if missing.is_empty() {
                    // Every fused id is a keyword hit's or was read just now.
                    let hits = fused
                        .into_iter()
                        .filter_map(|f| {
                            let chunk = known.get(f.id).map(|c| (*c).clone());
                            let chunk = chunk.or_else(|| read.get(f.id).cloned())?;
                            Some(f.with_chunk(chunk))
                        })
                        .collect();
                    let floor = vector.iter().map(|h| h.score).reduce(f32::min);
                    return Ok((hits, floor));
                }
                missing
            };
            tracing::warn!(
                dropped = missing.len(),
                "vector hits outside the keyword catalogue dropped (run reconcile)"
            );
            vector.retain(|h| !missing.contains(&h.id));
        }
    }

    /// Fuses two legs of whole chunks (vector hits already checked against the catalogue),
    /// both legs filtered. Returns the hits and the vector leg's lowest score.
    async fn fuse_chunks(
        &self,
        keyword: Vec<ScoredChunk>,
        vector: Vec<ScoredChunk>,
        filter: &ChunkFilter,
        fusion: Fusion,
        top_k: usize,
    ) -> Result<(Vec<FusedHit>, Option<f32>)> {
        let (mut keyword, mut vector) = self.keep(keyword, vector, filter).await?;
        let floor = vector.iter().map(|h| h.score).reduce(f32::min);
        if self.config.scope == RetrievalScope::Documents {
            (keyword, vector) = per_document(keyword, vector);
        }
        Ok((fuse(&keyword, &vector, fusion, top_k), floor))
    }

    /// Keeps the vector hits whose chunk the keyword catalogue lists: a document whose write
    /// stopped between the two indexes is not returned by half. Hits the keyword leg also
    /// returned are listed; the rest are looked up in one membership test. If the test fails
    /// the hits are kept (the vector leg still answers when the keyword index is down).
    async fn catalogued(
        &self,
        keyword: &[ScoredChunk],
        mut vector: Vec<ScoredChunk>,
    ) -> Vec<ScoredChunk> {
        let seen: HashSet<&ChunkId> = keyword.iter().map(|h| &h.chunk.id).collect();
        let unseen: Vec<ChunkId> = vector
            .iter()
            .map(|h| &h.chunk.id)
            .filter(|id| !seen.contains(id))
            .cloned()
            .collect();
        if unseen.is_empty() {
            return vector;
        }
        match self.keywords.contains(&unseen).await {
            Ok(stored) => {
                let before = vector.len();
                vector.retain(|h| seen.contains(&h.chunk.id) || stored.contains(&h.chunk.id));
                if vector.len() < before {
                    tracing::warn!(
                        dropped = before - vector.len(),
                        "vector hits outside the keyword catalogue dropped (run reconcile)"
                    );
                }
                vector
            }
            Err(error) => {
                tracing::debug!(%error, "catalogue membership test failed; vector hits kept");
                vector
            }
        }
    }

    /// Applies `filter` to both legs' candidates; code metadata is put on them first when the
    /// filter reads it.
    async fn keep(
        &self,
        mut keyword: Vec<ScoredChunk>,
        mut vector: Vec<ScoredChunk>,
        filter: &ChunkFilter,
    ) -> Result<(Vec<ScoredChunk>, Vec<ScoredChunk>)> {
        if filter.is_empty() {
            return Ok((keyword, vector));
        }
        if filter.needs_code() {
            if let Some(symbols) = &self.symbols {
                let chunks = keyword.iter_mut().chain(vector.iter_mut());
                code::hydrate(symbols.as_ref(), chunks.map(|h| &mut h.chunk)).await?;
            }
        }
        keyword.retain(|h| filter.matches(&h.chunk));
        vector.retain(|h| filter.matches(&h.chunk));
        Ok((keyword, vector))
    }
}

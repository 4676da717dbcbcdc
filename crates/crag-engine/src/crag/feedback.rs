//! The feedback rerank of the first retrieval: its top candidates reordered by their likeness
//! to the first ones (stored embeddings, shown words), before the judgement.

use std::collections::HashMap;
use std::time::Instant;

use crag_core::{ChunkId, FusedHit};
use crag_expansion::{feedback_order_with_terms, CandidateTerms, FeedbackRerankConfig, TokenTerms};

use super::run::QueryState;
use super::timings::Stage;
use crate::error::Result;

impl QueryState<'_> {
    /// The top `depth` hits reordered by their stored embeddings' and their words' similarity
    /// to the first ones ([`feedback_order_with_terms`]). Fails open: when the embeddings cannot be read, or one is
    /// missing, the order stays (with a warning for a failed read; an error under
    /// `crag.strict`).
    pub(super) async fn feedback_rerank(
        &mut self,
        mut hits: Vec<FusedHit>,
        config: &FeedbackRerankConfig,
    ) -> Result<Vec<FusedHit>> {
        let k = config.depth.min(hits.len());
        let t = Instant::now();
        let ids: Vec<ChunkId> = hits[..k].iter().map(|h| h.chunk.id.clone()).collect();
        match self.engine.stored_vectors(&ids).await {
            Ok(found) => {
                let mut by_id: HashMap<ChunkId, Vec<f32>> = found.into_iter().collect();
                let vectors: Option<Vec<Vec<f32>>> =
                    ids.iter().map(|id| by_id.remove(id)).collect();
                if let Some(vectors) = vectors {
                    let scores: Vec<f32> = hits[..k].iter().map(|h| h.fused_score).collect();
                    let mut terms = CandidateTerms::new();
                    if config.term_weight > 0.0 {
                        let (cache, memo) = (&self.engine.candidate_terms, &self.engine.term_memo);
                        let mut seen = TokenTerms::default();
                        for h in &hits[..k] {
                            terms.push_counts(&cache.get(&h.chunk, memo, &mut seen));
                        }
                    }
                    let order = feedback_order_with_terms(
                        &scores,
                        &vectors,
                        &terms,
                        config.feedback_docs,
                        config.weight,
                        config.term_weight,
                    );
                    let mut head: Vec<Option<FusedHit>> = hits.drain(..k).map(Some).collect();
                    let reordered: Vec<FusedHit> =
                        order.into_iter().filter_map(|i| head[i].take()).collect();
                    hits.splice(0..0, reordered);
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "feedback rerank: embeddings not read");
                self.fall_back(format!(
                    "feedback rerank skipped: embeddings not read ({e})"
                ))?;
            }
        }
        self.timings.add(Stage::Rerank, t.elapsed());
        Ok(hits)
    }
}

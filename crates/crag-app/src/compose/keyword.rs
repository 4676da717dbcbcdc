//! The keyword leg's index, as `[storage] keyword` names it.

use std::path::Path;
use std::sync::Arc;

use crag_lancedb::LanceKeywordIndex;
use crag_ports::KeywordIndex;
use crag_tantivy::{Bm25, TantivyKeywordIndex};

use super::adapters::KeywordStore;
use super::{store_options, ComposeError, Result};
use crate::Config;

/// Name of the LanceDB table holding the keyword leg with `[storage] keyword = "lancedb"`.
pub const KEYWORD_TABLE: &str = "keyword";

/// The keyword index `[storage] keyword` names: Tantivy in `<data_dir>/keyword` with
/// `[retrieval]`'s BM25 parameters, or LanceDB's full-text index beside the vectors.
pub(super) async fn keyword_index(
    config: &Config,
    data_dir: &Path,
    vectors_uri: &str,
) -> Result<Arc<dyn KeywordIndex>> {
    let retrieval = &config.retrieval;
    Ok(match config.adapters.storage.keyword {
        KeywordStore::Tantivy => {
            let bm25 = Bm25::new(retrieval.bm25_k1, retrieval.bm25_b)
                .and_then(|bm25| bm25.with_title_weight(retrieval.bm25_title_weight))
                .and_then(|bm25| {
                    bm25.with_document_title_weight(retrieval.bm25_document_title_weight)
                })
                .map_err(|message| ComposeError::invalid(format!("retrieval: {message}")))?;
            Arc::new(TantivyKeywordIndex::open_with(
                &data_dir.join("keyword"),
                bm25,
            )?)
        }
        KeywordStore::Lancedb => {
            let index =
                LanceKeywordIndex::open(vectors_uri, KEYWORD_TABLE, &store_options(config)?)
                    .await?
                    .with_title_weight(retrieval.bm25_title_weight)
                    .map_err(|e| {
                        ComposeError::invalid(format!("retrieval.bm25_title_weight: {e}"))
                    })?;
            if let Err(error) = index.warm().await {
                tracing::warn!(%error, "full-text index not loaded at start; searches will load it");
            }
            Arc::new(index)
        }
    })
}

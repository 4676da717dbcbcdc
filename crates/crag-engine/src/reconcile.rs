//! Reconciliation of the indexes after an interrupted or failed write.
//!
//! A document is written to the vector index, then the symbol index, then the keyword index,
//! which is the catalogue of what is fully ingested (content hash and chunk count per
//! document). A write that stops half-way (a crash, a full disk, a killed process) can leave:
//!
//! - vectors (and symbols) of a document the catalogue does not list: *orphans*, which a query
//!   would otherwise return without their keyword side. They are deleted.
//! - a catalogued document whose vector rows do not match it, in chunk count or in content
//!   hash (a new version's vectors written when the keyword side of the same write failed,
//!   or vectors lost). Its vectors are rebuilt from the catalogued chunks: stored vectors of
//!   chunks whose text is unchanged are kept, only the others are embedded.
//!
//! Nothing the catalogue lists is ever deleted, so reconciling loses no ingested document.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crag_core::DocumentId;

use crate::engine::Engine;
use crate::error::Result;

/// What a reconciliation found and repaired.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReconcileReport {
    /// Documents in the catalogue (the keyword index).
    pub documents_checked: usize,
    /// Documents the vector index held that the catalogue does not: their vectors and symbols
    /// were deleted.
    pub orphans_removed: Vec<DocumentId>,
    /// Catalogued documents whose vectors did not match their chunks: rebuilt.
    pub documents_repaired: Vec<DocumentId>,
    /// Chunks embedded again while rebuilding (the others kept their stored vectors).
    pub chunks_embedded: usize,
    /// Wall time.
    pub elapsed: Duration,
}

impl ReconcileReport {
    /// Whether anything was repaired.
    pub fn repaired(&self) -> bool {
        !self.orphans_removed.is_empty() || !self.documents_repaired.is_empty()
    }
}

impl Engine {
    /// Brings the vector and symbol indexes back in line with the keyword catalogue; see the
    /// module documentation. Safe to run at any time no ingestion is running; idempotent.
    pub async fn reconcile(&self) -> Result<ReconcileReport> {
        let started = Instant::now();
        let (catalogue, vectors) = tokio::try_join!(
            self.keyword_index().documents(),
            self.vector_index().documents()
        )?;
        let vector_side: HashMap<DocumentId, (usize, String)> = vectors
            .into_iter()
            .map(|d| (d.id, (d.chunks, d.content_hash)))
            .collect();
        let catalogued: HashSet<&DocumentId> = catalogue.iter().map(|d| &d.id).collect();
        let mut report = ReconcileReport {
            documents_checked: catalogue.len(),
            ..ReconcileReport::default()
        };

        report.orphans_removed = vector_side
            .keys()
            .filter(|id| !catalogued.contains(id))
            .cloned()
            .collect();
        report.orphans_removed.sort();
        if !report.orphans_removed.is_empty() {
            self.vector_index()
                .delete_documents(&report.orphans_removed)
                .await?;
            if let Some(symbols) = self.symbol_index() {
                symbols.delete_documents(&report.orphans_removed).await?;
            }
        }

        let ingestor = self.ingestor();
        for entry in &catalogue {
            let (same_version, matches) = match vector_side.get(&entry.id) {
                Some((chunks, hash)) => {
                    let same_version = *hash == entry.content_hash;
                    (same_version, same_version && *chunks == entry.chunks)
                }
                None => (false, false),
            };
            if matches {
                continue;
            }
            let chunks = self.keyword_index().document_chunks(&entry.id).await?;
            let document = std::slice::from_ref(&entry.id);
            // Stored vectors are reused only when they are of the catalogued version: rows of
            // another version may hold other text under the same chunk ids.
            let reuse: &[DocumentId] = if same_version { document } else { &[] };
            let (records, embedded) = ingestor.embed_reusing(&chunks, reuse).await?;
            self.vector_index().delete_documents(document).await?;
            self.vector_index().upsert(&records).await?;
            report.chunks_embedded += embedded;
            report.documents_repaired.push(entry.id.clone());
        }
        if report.repaired() {
            crate::ingest::tidy_indexes(self.vector_index(), self.keyword_index()).await;
        }
        report.elapsed = started.elapsed();
        if report.repaired() {
            tracing::warn!(
                orphans_removed = report.orphans_removed.len(),
                documents_repaired = report.documents_repaired.len(),
                chunks_embedded = report.chunks_embedded,
                "indexes reconciled after an interrupted write"
            );
        } else {
            tracing::debug!(documents = report.documents_checked, "indexes consistent");
        }
        Ok(report)
    }
}

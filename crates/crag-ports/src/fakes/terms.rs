//! An in-memory term graph.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use async_trait::async_trait;
use crag_core::{ChunkId, ChunkTerms, DocumentId, TermNeighbour};

use crate::{PortResult, TermGraph};

/// The key terms of each chunk in a mutex-guarded map; for tests of the layers above the
/// port. Every query scans everything.
#[derive(Debug, Default)]
pub struct InMemoryTermGraph {
    chunks: Mutex<BTreeMap<ChunkId, (DocumentId, BTreeSet<String>)>>,
}

impl InMemoryTermGraph {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<ChunkId, (DocumentId, BTreeSet<String>)>> {
        self.chunks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl TermGraph for InMemoryTermGraph {
    async fn replace_documents(
        &self,
        replaced: &[DocumentId],
        chunks: &[ChunkTerms],
    ) -> PortResult<()> {
        let mut state = self.lock();
        state.retain(|_, (document, _)| !replaced.contains(document));
        for c in chunks {
            state.insert(
                c.chunk.clone(),
                (c.document.clone(), c.terms.iter().cloned().collect()),
            );
        }
        Ok(())
    }

    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()> {
        self.lock()
            .retain(|_, (document, _)| !ids.contains(document));
        Ok(())
    }

    async fn documents(&self) -> PortResult<Vec<DocumentId>> {
        let documents: BTreeSet<DocumentId> =
            self.lock().values().map(|(d, _)| d.clone()).collect();
        Ok(documents.into_iter().collect())
    }

    async fn chunk_count(&self) -> PortResult<u64> {
        Ok(self.lock().len() as u64)
    }

    async fn frequencies(&self, terms: &[String]) -> PortResult<Vec<u64>> {
        let state = self.lock();
        Ok(terms
            .iter()
            .map(|t| state.values().filter(|(_, set)| set.contains(t)).count() as u64)
            .collect())
    }

    async fn neighbours(
        &self,
        term: &str,
        min_together: u64,
        limit: usize,
    ) -> PortResult<Vec<TermNeighbour>> {
        let state = self.lock();
        let mut together: HashMap<&str, u64> = HashMap::new();
        let mut frequency: HashMap<&str, u64> = HashMap::new();
        for (_, set) in state.values() {
            let shared = set.contains(term);
            for t in set {
                *frequency.entry(t).or_default() += 1;
                if shared && t != term {
                    *together.entry(t).or_default() += 1;
                }
            }
        }
        let mut out: Vec<TermNeighbour> = together
            .into_iter()
            .filter(|(_, n)| *n >= min_together.max(1))
            .map(|(t, n)| TermNeighbour {
                term: t.to_owned(),
                together: n,
                frequency: frequency[t],
            })
            .collect();
        out.sort_by(|a, b| b.together.cmp(&a.together).then(a.term.cmp(&b.term)));
        out.truncate(limit);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn passes_the_term_graph_suite() {
        crate::testsuite::term_graph_suite(&InMemoryTermGraph::default()).await;
    }
}

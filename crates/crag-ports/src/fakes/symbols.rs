//! An in-memory symbol index.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use crag_core::{ChunkId, CodeMeta, DocumentId, FileSymbols, StoredReference, StoredSymbol};

use crate::{Neighbour, PortResult, Relation, SymbolIndex, SymbolLookup};

#[derive(Debug, Default)]
struct State {
    /// Definitions; a definition's identity is its position-independent sequence number.
    defs: Vec<(u64, StoredSymbol)>,
    refs: Vec<StoredReference>,
    meta: HashMap<ChunkId, (DocumentId, CodeMeta)>,
    next: u64,
}

/// Definitions, references and chunk metadata in mutex-guarded vectors; for tests of the
/// layers above the port. Every query scans everything.
#[derive(Debug, Default)]
pub struct InMemorySymbolIndex {
    state: Mutex<State>,
}

impl InMemorySymbolIndex {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Rank of a relation in a neighbourhood's order: Uses, Child, Parent, UsedBy.
fn relation_rank(relation: Relation) -> u8 {
    match relation {
        Relation::Uses => 0,
        Relation::Child => 1,
        Relation::Parent => 2,
        Relation::UsedBy => 3,
    }
}

/// Whether `qualified` is `suffix` or ends with `::` + `suffix`.
fn has_qualified_suffix(qualified: &str, suffix: &str) -> bool {
    qualified == suffix
        || qualified
            .strip_suffix(suffix)
            .is_some_and(|head| head.ends_with("::"))
}

fn lookup_order(a: &StoredSymbol, b: &StoredSymbol) -> std::cmp::Ordering {
    (&a.def.qualified, &a.path, a.def.line_start, &a.chunk_id).cmp(&(
        &b.def.qualified,
        &b.path,
        b.def.line_start,
        &b.chunk_id,
    ))
}

impl State {
    fn remove(&mut self, ids: &[DocumentId]) {
        self.defs.retain(|(_, s)| !ids.contains(&s.document_id));
        self.refs.retain(|r| !ids.contains(&r.document_id));
        self.meta.retain(|_, (doc, _)| !ids.contains(doc));
    }

    fn defs_where(&self, keep: impl Fn(&StoredSymbol) -> bool) -> Vec<(u64, StoredSymbol)> {
        self.defs.iter().filter(|(_, s)| keep(s)).cloned().collect()
    }

    /// The definitions related to `from`, each with its relation.
    fn related(&self, from: &StoredSymbol) -> Vec<(Relation, (u64, StoredSymbol))> {
        let q = &from.def.qualified;
        let mut out = Vec::new();
        for r in self
            .refs
            .iter()
            .filter(|r| r.reference.from.as_deref() == Some(q.as_str()))
        {
            let name = &r.reference.name;
            let named = self.defs_where(|s| &s.def.name == name);
            let preferred: Vec<_> = match &r.reference.qualifier {
                Some(qualifier) => named
                    .iter()
                    .filter(|(_, s)| {
                        has_qualified_suffix(&s.def.qualified, &format!("{qualifier}::{name}"))
                    })
                    .cloned()
                    .collect(),
                None => Vec::new(),
            };
            let targets = if preferred.is_empty() {
                named
            } else {
                preferred
            };
            out.extend(targets.into_iter().map(|d| (Relation::Uses, d)));
        }
        let child_prefix = format!("{q}::");
        out.extend(
            self.defs_where(|s| {
                s.def
                    .qualified
                    .strip_prefix(&child_prefix)
                    .is_some_and(|rest| !rest.is_empty() && !rest.contains("::"))
            })
            .into_iter()
            .map(|d| (Relation::Child, d)),
        );
        if let Some((parent, _)) = q.rsplit_once("::") {
            out.extend(
                self.defs_where(|s| s.def.qualified == parent)
                    .into_iter()
                    .map(|d| (Relation::Parent, d)),
            );
        }
        for r in self
            .refs
            .iter()
            .filter(|r| r.reference.name == from.def.name)
        {
            if let Some(user) = &r.reference.from {
                out.extend(
                    self.defs_where(|s| &s.def.qualified == user)
                        .into_iter()
                        .map(|d| (Relation::UsedBy, d)),
                );
            }
        }
        out
    }
}

#[async_trait]
impl SymbolIndex for InMemorySymbolIndex {
    async fn replace_document(
        &self,
        document: &DocumentId,
        symbols: &FileSymbols,
    ) -> PortResult<()> {
        let mut state = self.lock();
        state.remove(std::slice::from_ref(document));
        for def in &symbols.definitions {
            let id = state.next;
            state.next += 1;
            let mut def = def.clone();
            def.document_id = document.clone();
            state.defs.push((id, def));
        }
        for r in &symbols.references {
            let mut r = r.clone();
            r.document_id = document.clone();
            state.refs.push(r);
        }
        for (chunk, meta) in &symbols.chunks {
            state
                .meta
                .insert(chunk.clone(), (document.clone(), meta.clone()));
        }
        Ok(())
    }

    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()> {
        self.lock().remove(ids);
        Ok(())
    }

    async fn lookup(&self, lookup: &SymbolLookup, limit: usize) -> PortResult<Vec<StoredSymbol>> {
        let state = self.lock();
        let mut found: Vec<StoredSymbol> = state
            .defs
            .iter()
            .map(|(_, s)| s)
            .filter(|s| match lookup {
                SymbolLookup::Name(name) => &s.def.name == name,
                SymbolLookup::Qualified(q) => has_qualified_suffix(&s.def.qualified, q),
                SymbolLookup::NameInPath { name, path } => {
                    &s.def.name == name && s.path.contains(path.as_str())
                }
            })
            .cloned()
            .collect();
        found.sort_by(lookup_order);
        found.truncate(limit);
        Ok(found)
    }

    async fn definitions_in(&self, chunks: &[ChunkId]) -> PortResult<Vec<StoredSymbol>> {
        let mut found: Vec<StoredSymbol> = self
            .lock()
            .defs
            .iter()
            .map(|(_, s)| s)
            .filter(|s| chunks.contains(&s.chunk_id))
            .cloned()
            .collect();
        found.sort_by(|a, b| {
            (&a.path, a.def.line_start, &a.def.qualified, &a.chunk_id).cmp(&(
                &b.path,
                b.def.line_start,
                &b.def.qualified,
                &b.chunk_id,
            ))
        });
        Ok(found)
    }

    async fn references_in(&self, chunks: &[ChunkId]) -> PortResult<Vec<StoredReference>> {
        let mut found: Vec<StoredReference> = self
            .lock()
            .refs
            .iter()
            .filter(|r| chunks.contains(&r.chunk_id))
            .cloned()
            .collect();
        found.sort_by(|a, b| {
            (
                &a.document_id,
                a.reference.line,
                &a.reference.name,
                &a.chunk_id,
            )
                .cmp(&(
                    &b.document_id,
                    b.reference.line,
                    &b.reference.name,
                    &b.chunk_id,
                ))
        });
        Ok(found)
    }

    async fn neighbours(
        &self,
        qualified: &str,
        hops: u8,
        limit: usize,
    ) -> PortResult<Vec<Neighbour>> {
        let hops = hops.min(2);
        if hops == 0 || limit == 0 {
            return Ok(Vec::new());
        }
        let state = self.lock();
        let start = state.defs_where(|s| s.def.qualified == qualified);
        let excluded: Vec<u64> = start.iter().map(|(id, _)| *id).collect();
        let mut best: HashMap<u64, Neighbour> = HashMap::new();
        let mut frontier: Vec<StoredSymbol> = start.into_iter().map(|(_, s)| s).collect();
        for hop in 1..=hops {
            for from in &frontier {
                for (relation, (id, symbol)) in state.related(from) {
                    if excluded.contains(&id) {
                        continue;
                    }
                    let better = best.get(&id).is_none_or(|seen| {
                        seen.hops == hop && relation_rank(relation) < relation_rank(seen.relation)
                    });
                    if better {
                        best.insert(
                            id,
                            Neighbour {
                                symbol,
                                hops: hop,
                                relation,
                            },
                        );
                    }
                }
            }
            frontier = best
                .values()
                .filter(|n| n.hops == hop)
                .map(|n| n.symbol.clone())
                .collect();
        }
        let mut out: Vec<Neighbour> = best.into_values().collect();
        out.sort_by(|a, b| {
            (a.hops, relation_rank(a.relation))
                .cmp(&(b.hops, relation_rank(b.relation)))
                .then_with(|| lookup_order(&a.symbol, &b.symbol))
        });
        out.truncate(limit);
        Ok(out)
    }

    async fn chunk_meta(&self, chunks: &[ChunkId]) -> PortResult<HashMap<ChunkId, CodeMeta>> {
        let state = self.lock();
        Ok(chunks
            .iter()
            .filter_map(|c| state.meta.get(c).map(|(_, m)| (c.clone(), m.clone())))
            .collect())
    }

    async fn count(&self) -> PortResult<usize> {
        Ok(self.lock().defs.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_in_memory_index_passes_the_symbol_suite() {
        crate::testsuite::symbol_index_suite(|| async {
            Box::new(InMemorySymbolIndex::default()) as Box<dyn SymbolIndex>
        })
        .await;
    }

    #[test]
    fn qualified_suffixes_are_segment_aligned() {
        assert!(has_qualified_suffix("a::B::c", "B::c"));
        assert!(has_qualified_suffix("a::B::c", "a::B::c"));
        assert!(has_qualified_suffix("a::B::c", "c"));
        assert!(!has_qualified_suffix("a::MyB::c", "B::c"));
        assert!(!has_qualified_suffix("a::B::c", "::c"));
    }
}

//! The expansion of code results with the definitions they use (the symbol graph's `Uses`
//! edges).

use std::collections::HashSet;

use crag_core::ChunkId;
use crag_ports::{Relation, SymbolIndex};

use super::hydrate::hydrate;
use crate::crag::{Artifact, ArtifactOrigin};
use crate::engine::Engine;
use crate::error::Result;

/// Adds to `artifacts` the chunks defining what its code results use, within `depth` hops of
/// the symbol graph and at most `budget` chunks, each after the results already there (origin
/// [`ArtifactOrigin::Graph`]). Returns how many were added.
pub(crate) async fn expand_with_definitions(
    engine: &Engine,
    symbols: &dyn SymbolIndex,
    artifacts: &mut Vec<Artifact>,
    depth: u8,
    budget: usize,
) -> Result<usize> {
    if depth == 0 || budget == 0 {
        return Ok(0);
    }
    let mut present: HashSet<ChunkId> = artifacts.iter().map(|a| a.chunk.id.clone()).collect();
    let starts: Vec<String> = artifacts
        .iter()
        .filter_map(|a| a.chunk.code.as_ref())
        .filter(|meta| !meta.symbol.is_empty())
        .map(|meta| meta.qualified.clone())
        .collect();
    let mut wanted: Vec<ChunkId> = Vec::new();
    let mut seen_starts = HashSet::new();
    for qualified in starts {
        if wanted.len() >= budget {
            break;
        }
        if !seen_starts.insert(qualified.clone()) {
            continue;
        }
        let reached = symbols
            .neighbours(&qualified, depth, budget.saturating_mul(4))
            .await?;
        for n in reached {
            if n.relation != Relation::Uses {
                continue;
            }
            if wanted.len() >= budget {
                break;
            }
            if present.insert(n.symbol.chunk_id.clone()) {
                wanted.push(n.symbol.chunk_id);
            }
        }
    }
    if wanted.is_empty() {
        return Ok(0);
    }
    let mut chunks = engine.keyword_index().get(&wanted).await?;
    hydrate(symbols, chunks.iter_mut()).await?;
    let added = chunks.len();
    artifacts.extend(chunks.into_iter().map(|chunk| {
        let tokens = engine.chunk_tokens(&chunk);
        Artifact::unscored(chunk, ArtifactOrigin::Graph, tokens)
    }));
    Ok(added)
}

//! Gaps read off the symbol graph: the names the context's code calls or uses as types that no
//! chunk of the context defines, ranked by how often and how near the top of the context they
//! are used. A name the corpus defines nowhere (standard library, external crates) is not a
//! gap to search for: it joins the not-found set at once.

use std::collections::{HashMap, HashSet};

use crag_core::{ChunkId, ReferenceKind};
use crag_ports::{ContextItem, PortResult, SymbolIndex, SymbolLookup};

use super::code_gaps::is_builtin;

/// What the symbol graph says of a context.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SymbolGaps {
    /// Whether any context chunk is known to the symbol index (when none is, the caller falls
    /// back to reading the text).
    pub known: bool,
    /// Names to fetch, most wanted first (`Type::method` when the call named its type).
    pub gaps: Vec<String>,
    /// Names used and defined nowhere in the corpus.
    pub external: Vec<String>,
}

/// One name the context uses and does not define.
#[derive(Debug)]
struct Wanted {
    /// How much it is wanted: the sum over its uses of 1 / (1 + rank of the using chunk).
    weight: f32,
    /// First use, for stable ordering.
    first: usize,
    /// A type qualifier it was called with (`Session` in `Session::open`), if any.
    qualifier: Option<String>,
}

/// Reads the gaps of `context` off `symbols`, at most `max_gaps`, leaving out the names in
/// `known_missing` (compared case-insensitively).
pub(crate) async fn symbol_gaps(
    symbols: &dyn SymbolIndex,
    context: &[ContextItem],
    known_missing: &[String],
    max_gaps: usize,
) -> PortResult<SymbolGaps> {
    let ids: Vec<ChunkId> = context
        .iter()
        .filter_map(|item| ChunkId::new(item.id.clone()).ok())
        .collect();
    let rank: HashMap<&ChunkId, usize> = ids.iter().enumerate().map(|(i, id)| (id, i)).collect();
    let meta = symbols.chunk_meta(&ids).await?;
    if meta.is_empty() {
        return Ok(SymbolGaps::default());
    }
    let mut defined: HashSet<String> = meta
        .values()
        .filter(|m| !m.symbol.is_empty())
        .map(|m| m.symbol.clone())
        .collect();
    defined.extend(
        symbols
            .definitions_in(&ids)
            .await?
            .into_iter()
            .map(|d| d.def.name),
    );
    let missing: HashSet<String> = known_missing.iter().map(|m| m.to_lowercase()).collect();
    let mut wanted: HashMap<String, Wanted> = HashMap::new();
    for (order, stored) in symbols.references_in(&ids).await?.into_iter().enumerate() {
        let r = stored.reference;
        if r.kind == ReferenceKind::Import
            || defined.contains(&r.name)
            || is_builtin(&r.name)
            || r.name.len() < 3
            || missing.contains(&r.name.to_lowercase())
        {
            continue;
        }
        let at = rank.get(&stored.chunk_id).copied().unwrap_or(ids.len());
        let entry = wanted.entry(r.name).or_insert(Wanted {
            weight: 0.0,
            first: order,
            qualifier: None,
        });
        entry.weight += 1.0 / (1.0 + at as f32);
        let typed = r
            .qualifier
            .filter(|q| q.starts_with(|c: char| c.is_ascii_uppercase()) && !q.contains('.'));
        if entry.qualifier.is_none() {
            entry.qualifier = typed;
        }
    }
    let mut ranked: Vec<(String, Wanted)> = wanted.into_iter().collect();
    ranked.sort_by(|a, b| {
        b.1.weight
            .total_cmp(&a.1.weight)
            .then(a.1.first.cmp(&b.1.first))
    });
    let mut out = SymbolGaps {
        known: true,
        ..SymbolGaps::default()
    };
    for (name, w) in ranked {
        if out.gaps.len() >= max_gaps {
            break;
        }
        let defined_somewhere = !symbols
            .lookup(&SymbolLookup::Name(name.clone()), 1)
            .await?
            .is_empty();
        if !defined_somewhere {
            out.external.push(name);
            continue;
        }
        let gap = match w.qualifier {
            Some(q)
                if !symbols
                    .lookup(&SymbolLookup::Qualified(format!("{q}::{name}")), 1)
                    .await?
                    .is_empty() =>
            {
                format!("{q}::{name}")
            }
            _ => name,
        };
        out.gaps.push(gap);
    }
    Ok(out)
}

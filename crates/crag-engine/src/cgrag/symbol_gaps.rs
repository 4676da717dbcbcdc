//! Gaps read off the symbol graph: the names the context's code calls or uses as types that no
//! chunk of the context defines, ranked by how often and how near the top of the context they
//! are used. A name the corpus defines nowhere (standard library, external crates) is not a
//! gap to search for: it joins the not-found set at once.

use std::collections::{HashMap, HashSet};

use crag_core::{ChunkId, ReferenceKind};
use crag_ports::{ContextItem, PortResult, SymbolIndex, SymbolLookup};

use crag_gaps::is_builtin;

/// Definitions of a name looked at to choose the one meant.
const CANDIDATES: usize = 50;

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
    /// The document of its first use: of several definitions of the name, the nearest to it
    /// is the one meant.
    near: String,
}

/// Bytes of the longest common prefix of two paths, counted at `/` boundaries.
fn shared_prefix(a: &str, b: &str) -> usize {
    a.split('/')
        .zip(b.split('/'))
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len() + 1)
        .sum()
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
            near: stored.document_id.as_str().to_owned(),
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
        let candidates = symbols
            .lookup(&SymbolLookup::Name(name.clone()), CANDIDATES)
            .await?;
        if candidates.is_empty() {
            out.external.push(name);
            continue;
        }
        let typed = match &w.qualifier {
            Some(q) => !symbols
                .lookup(&SymbolLookup::Qualified(format!("{q}::{name}")), 1)
                .await?
                .is_empty(),
            None => false,
        };
        let gap = if typed {
            format!("{}::{name}", w.qualifier.unwrap_or_default())
        } else if candidates.len() == 1 {
            name
        } else {
            // Several definitions of the name: the one nearest the use (same file, then the
            // same directory...) is meant, looked up as `name in path`.
            let nearest = candidates
                .iter()
                .max_by_key(|c| shared_prefix(c.document_id.as_str(), &w.near))
                .map(|c| c.path.clone())
                .unwrap_or_default();
            format!("{name} in {nearest}")
        };
        out.gaps.push(gap);
    }
    Ok(out)
}

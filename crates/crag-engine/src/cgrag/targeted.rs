//! Pass 2+: the retrieval of one gap. Specific gaps (a symbol, a qualified name, a name in a
//! path) are looked up in the symbol index first (their definitions' chunks, and the candidates
//! of their one-hop neighbourhood); failing that, or without a symbol index, by BM25 over the
//! symbol's name, kept only where the chunk holds the name (a definition first) or the path;
//! fuzzy gaps take the vector leg's top k. A gap whose retrieval adds nothing new is not found.

use std::collections::{HashMap, HashSet};

use crag_core::TraversedSymbol;
use crag_core::{Chunk, ChunkFilter, ChunkId, Query, ScoredChunk, StoredSymbol, TopK};
use crag_gaps::{classify_gap, GapQuery};
use crag_ports::SymbolLookup;

use super::neighbourhood::neighbourhoods;

use crate::crag::{Artifact, ArtifactOrigin};
use crate::engine::Engine;
use crate::error::Result;

/// Candidates asked of BM25 for a specific gap, before keeping those that hold the name.
const LOOKUP_DEPTH: usize = 20;

/// Whether `text` holds `name` as a whole identifier.
fn holds_identifier(text: &str, name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(name).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// Whether `text` defines `name` (`fn name`, `def name`, `class Name`, ...).
fn defines(text: &str, name: &str) -> bool {
    const DEFINERS: &[&str] = &[
        "fn",
        "def",
        "class",
        "struct",
        "enum",
        "trait",
        "type",
        "interface",
        "func",
        "function",
        "const",
        "impl",
        "mod",
    ];
    DEFINERS.iter().any(|d| {
        holds_identifier(text, &format!("{d} {name}"))
            || text.contains(&format!("{d} {name}<"))
            || text.contains(&format!("{d} {name}("))
    })
}

fn source_matches(chunk: &Chunk, path: &str) -> bool {
    let path = path.trim_start_matches("./");
    !path.is_empty() && chunk.source.contains(path)
}

fn artifact(hit: ScoredChunk, engine: &Engine) -> Artifact {
    let tokens = engine.chunk_tokens(&hit.chunk);
    Artifact {
        normalized_score: Some(hit.score.clamp(0.0, 1.0)),
        ..Artifact::unscored(hit.chunk, ArtifactOrigin::Gap, tokens)
    }
}

/// How the gaps of a pass are retrieved.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Targeting<'a> {
    /// Chunks one gap's retrieval adds at most (its neighbourhood aside).
    pub top_k: usize,
    /// Neighbour chunks of a symbol gap's definitions taken at most (0: none).
    pub neighbourhood: usize,
    /// The session's traversed subgraph, by qualified path.
    pub subgraph: &'a HashMap<String, TraversedSymbol>,
    /// The request's filter.
    pub filter: &'a ChunkFilter,
}

/// What the retrieval of one gap found.
#[derive(Debug, Default)]
pub(crate) struct GapFind {
    /// How it was looked up (`symbol_index`, `symbol`, `path`, `vector`...).
    pub lookup: &'static str,
    /// The new chunks answering it, best first (for a symbol: its definitions).
    pub found: Vec<Artifact>,
    /// Chunks of the found definitions' one-hop neighbourhood not held yet, in order (callees,
    /// owning type, members, callers): candidates, the pass keeps those it has room for.
    pub neighbours: Vec<Artifact>,
    /// The symbols whose neighbourhood was taken, as the session records them.
    pub traversed: Vec<TraversedSymbol>,
}

/// Chunks by id, in the order of `ids`, with their code metadata.
async fn chunks_by_id(engine: &Engine, ids: &[ChunkId]) -> Result<Vec<ScoredChunk>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut hits: Vec<ScoredChunk> = engine
        .keyword_index()
        .get(ids)
        .await?
        .into_iter()
        .map(|chunk| ScoredChunk { chunk, score: 1.0 })
        .collect();
    hits.sort_by_key(|h| ids.iter().position(|id| *id == h.chunk.id));
    engine.hydrate_code(&mut hits).await?;
    Ok(hits)
}

/// The chunks defining what `lookup` names, from the symbol index (none without one), leaving
/// out `known` chunks; at most `top_k`; with the definitions they hold.
async fn definitions(
    engine: &Engine,
    lookup: &SymbolLookup,
    known: &HashSet<String>,
    top_k: usize,
) -> Result<(Vec<ScoredChunk>, Vec<StoredSymbol>)> {
    let Some(symbols) = engine.symbol_index() else {
        return Ok((Vec::new(), Vec::new()));
    };
    let found = symbols.lookup(lookup, top_k.saturating_mul(4)).await?;
    let mut ids: Vec<ChunkId> = Vec::new();
    for symbol in &found {
        if !known.contains(symbol.chunk_id.as_str()) && !ids.contains(&symbol.chunk_id) {
            ids.push(symbol.chunk_id.clone());
        }
    }
    ids.truncate(top_k);
    let defined = found
        .into_iter()
        .filter(|s| ids.contains(&s.chunk_id))
        .collect();
    Ok((chunks_by_id(engine, &ids).await?, defined))
}

/// What the lookup of a symbol gap found.
enum SymbolHits {
    /// Its definitions' chunks, from the symbol index (code metadata already on them), and the
    /// definitions.
    Defined(Vec<ScoredChunk>, Vec<StoredSymbol>),
    /// Keyword hits holding the name (definitions first), and how they were looked up.
    Mentioned(&'static str, Vec<ScoredChunk>),
}

/// Retrieves a symbol gap (a name, a name in a file, a qualified name): its definitions from
/// the symbol index, else the keyword hits that hold the name, definitions first, then chunks
/// in the named file or next to the qualifier, then plain mentions; at most `top_k`, none in
/// `known`.
async fn retrieve_symbol(
    engine: &Engine,
    query: GapQuery,
    known: &HashSet<String>,
    top_k: usize,
) -> Result<SymbolHits> {
    let fresh = |h: &ScoredChunk| !known.contains(h.chunk.id.as_str());
    let (name, path, context): (String, Option<String>, Vec<String>) = match query {
        GapQuery::Symbol { name, .. } => (name, None, Vec::new()),
        GapQuery::SymbolInPath { symbol, path } => {
            let last = symbol.rsplit("::").next().unwrap_or(&symbol).to_owned();
            (last, Some(path), Vec::new())
        }
        GapQuery::Qualified { mut path } => {
            let name = path.pop().unwrap_or_default();
            (name, None, path)
        }
        _ => unreachable!("retrieve_gap passes symbol gaps only"),
    };
    let lookup = match (&path, context.is_empty()) {
        (Some(path), _) => SymbolLookup::NameInPath {
            name: name.clone(),
            path: path.trim_start_matches("./").to_owned(),
        },
        (None, true) => SymbolLookup::Name(name.clone()),
        (None, false) => SymbolLookup::Qualified(format!("{}::{name}", context.join("::"))),
    };
    let (hits, defined) = definitions(engine, &lookup, known, top_k).await?;
    if !hits.is_empty() {
        return Ok(SymbolHits::Defined(hits, defined));
    }
    let Ok(q) = Query::new(&name) else {
        return Ok(SymbolHits::Mentioned("symbol", Vec::new()));
    };
    let hits = engine
        .retrieve_keyword(&q, TopK::new(LOOKUP_DEPTH)?)
        .await?;
    let mut kept: Vec<(u8, ScoredChunk)> = hits
        .into_iter()
        .filter(|h| fresh(h) && holds_identifier(&h.chunk.text, &name))
        .map(|h| {
            // Definitions first, then chunks in the named file or next to the
            // qualifier, then plain mentions.
            let mut rank = 3u8;
            if defines(&h.chunk.text, &name) {
                rank -= 2;
            }
            let near = path.as_deref().is_some_and(|p| source_matches(&h.chunk, p))
                || context.iter().any(|c| {
                    h.chunk.text.contains(c.as_str()) || h.chunk.source.contains(c.as_str())
                });
            if near {
                rank -= 1;
            }
            (rank, h)
        })
        .collect();
    kept.sort_by_key(|(rank, _)| *rank);
    let lookup = if path.is_some() {
        "symbol_in_path"
    } else if context.is_empty() {
        "symbol"
    } else {
        "qualified"
    };
    Ok(SymbolHits::Mentioned(
        lookup,
        kept.into_iter().map(|(_, h)| h).take(top_k).collect(),
    ))
}

/// Retrieves `gap`: how it was looked up, the new artifacts (not in `known`, passing the
/// request's filter), best first, at most `top_k`, and for a symbol found in the symbol index
/// the candidates of its neighbourhood.
pub(crate) async fn retrieve_gap(
    engine: &Engine,
    gap: &str,
    known: &HashSet<String>,
    how: &Targeting<'_>,
) -> Result<GapFind> {
    let (lookup, mut hits, mut defined) = lookup_gap(engine, gap, known, how.top_k).await?;
    // A gap's lookups read the whole index: what the request's filter leaves out is dropped
    // here (code metadata is on every hit, for the filter's languages and symbol kinds).
    hits.retain(|h| how.filter.matches(&h.chunk));
    defined.retain(|s| hits.iter().any(|h| h.chunk.id == s.chunk_id));
    let mut find = GapFind {
        lookup,
        found: hits.into_iter().map(|h| artifact(h, engine)).collect(),
        ..GapFind::default()
    };
    let Some(symbols) = engine.symbol_index() else {
        return Ok(find);
    };
    if how.neighbourhood == 0 || defined.is_empty() {
        return Ok(find);
    }
    find.traversed =
        neighbourhoods(symbols.as_ref(), &defined, how.subgraph, how.neighbourhood).await?;
    let mut seen: HashSet<&str> = find.found.iter().map(|a| a.chunk.id.as_str()).collect();
    let mut ids: Vec<ChunkId> = Vec::new();
    for id in find.traversed.iter().flat_map(|t| &t.neighbours) {
        if ids.len() == how.neighbourhood {
            break;
        }
        if known.contains(id.as_str()) || !seen.insert(id.as_str()) {
            continue;
        }
        if let Ok(id) = ChunkId::new(id.clone()) {
            ids.push(id);
        }
    }
    let mut hits = chunks_by_id(engine, &ids).await?;
    hits.retain(|h| how.filter.matches(&h.chunk));
    find.neighbours = hits.into_iter().map(|h| artifact(h, engine)).collect();
    Ok(find)
}

/// Looks `gap` up: how, the new hits (not in `known`), best first, at most `top_k`, with their
/// code metadata, and the definitions they hold when the symbol index found them.
async fn lookup_gap(
    engine: &Engine,
    gap: &str,
    known: &HashSet<String>,
    top_k: usize,
) -> Result<(&'static str, Vec<ScoredChunk>, Vec<StoredSymbol>)> {
    let fresh = |h: &ScoredChunk| !known.contains(h.chunk.id.as_str());
    let (lookup, hits): (&'static str, Vec<ScoredChunk>) = match classify_gap(gap) {
        GapQuery::Fuzzy(text) | GapQuery::TopicInPath { topic: text, .. }
            if Query::new(&text).is_err() =>
        {
            ("none", Vec::new())
        }
        GapQuery::Fuzzy(text) => {
            let hits = engine
                .retrieve_vector(&Query::new(&text)?, TopK::new(top_k + known.len().min(20))?)
                .await?;
            (
                "vector",
                hits.into_iter().filter(fresh).take(top_k).collect(),
            )
        }
        GapQuery::TopicInPath { topic, path } => {
            let hits = engine
                .retrieve_keyword(&Query::new(&topic)?, TopK::new(LOOKUP_DEPTH)?)
                .await?;
            let kept = hits
                .into_iter()
                .filter(|h| fresh(h) && source_matches(&h.chunk, &path))
                .take(top_k)
                .collect();
            ("topic_in_path", kept)
        }
        GapQuery::Path(path) => {
            let words = path.replace(['/', '.', '_', '-'], " ");
            let hits = match Query::new(&words) {
                Ok(q) => {
                    engine
                        .retrieve_keyword(&q, TopK::new(LOOKUP_DEPTH)?)
                        .await?
                }
                Err(_) => Vec::new(),
            };
            let kept = hits
                .into_iter()
                .filter(|h| fresh(h) && source_matches(&h.chunk, &path))
                .take(top_k)
                .collect();
            ("path", kept)
        }
        query @ (GapQuery::Symbol { .. }
        | GapQuery::SymbolInPath { .. }
        | GapQuery::Qualified { .. }) => {
            match retrieve_symbol(engine, query, known, top_k).await? {
                SymbolHits::Defined(hits, defined) => return Ok(("symbol_index", hits, defined)),
                SymbolHits::Mentioned(lookup, hits) => (lookup, hits),
            }
        }
    };
    let mut hits = hits;
    engine.hydrate_code(&mut hits).await?;
    Ok((lookup, hits, Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_and_definitions_are_whole_words() {
        assert!(holds_identifier("x = verify_user(a)", "verify_user"));
        assert!(!holds_identifier("x = verify_users(a)", "verify_user"));
        assert!(!holds_identifier("x = reverify_user(a)", "verify_user"));
        assert!(!holds_identifier("anything", ""));
        assert!(defines("def verify_user(name):", "verify_user"));
        assert!(defines("pub fn fuse<T>(lists: T)", "fuse"));
        assert!(defines("class Session:\n", "Session"));
        assert!(!defines("verify_user(name)", "verify_user"));
    }
}

//! Reading what is stored, as the caller's scope allows: a chunk, a document, a code symbol's
//! definitions with what calls them and what they call. Anything outside the caller's scope is
//! answered as if it were not stored.

use std::collections::HashMap;

use crag_core::{Chunk, ChunkId, StoredSymbol};
use crag_ports::{Relation, SymbolLookup};

use super::Api;
use crate::auth::Caller;
use crate::error::{AppError, Code};

/// Definitions a symbol lookup returns at most.
pub const MAX_SYMBOL_DEFINITIONS: usize = 20;
/// Callers (and callees) listed at most per lookup.
pub const MAX_SYMBOL_NEIGHBOURS: usize = 50;

/// A code symbol as stored, with the chunk holding its definition.
#[derive(Debug, Clone, PartialEq)]
pub struct SymbolHit {
    /// The definition.
    pub symbol: StoredSymbol,
    /// The chunk holding it (first part).
    pub chunk: Chunk,
}

/// What a symbol lookup found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SymbolReport {
    /// The definitions matching the name.
    pub definitions: Vec<SymbolHit>,
    /// Definitions that call, use or import one of them.
    pub callers: Vec<SymbolHit>,
    /// Definitions one of them calls, uses or imports.
    pub callees: Vec<SymbolHit>,
}

fn not_stored(what: &str, raw: &str) -> AppError {
    AppError::new(
        Code::NotFound,
        format!("no {what} with id `{}`", raw.escape_debug()),
    )
}

fn in_scope(caller: &Caller, chunk: &Chunk) -> bool {
    caller
        .scope
        .as_ref()
        .is_none_or(|scope| scope.matches(&chunk.metadata))
}

impl Api {
    /// One stored chunk by id (`<document id>#<ordinal>`).
    pub async fn chunk(&self, caller: &Caller, raw: &str) -> Result<Chunk, AppError> {
        let id = ChunkId::new(raw)
            .map_err(|e| AppError::new(Code::InvalidArgument, format!("chunk id: {e}")))?;
        self.engine()
            .chunks(std::slice::from_ref(&id))
            .await?
            .into_iter()
            .find(|c| in_scope(caller, c))
            .ok_or_else(|| not_stored("chunk", raw))
    }

    /// Every chunk of a stored document, in order.
    pub async fn document(&self, caller: &Caller, raw: &str) -> Result<Vec<Chunk>, AppError> {
        let id = self.limits().document_id(raw)?;
        let chunks = self.engine().document_chunks(&id).await?;
        if chunks.is_empty() || !chunks.iter().all(|c| in_scope(caller, c)) {
            return Err(not_stored("document", raw));
        }
        Ok(chunks)
    }

    /// The definitions of a code symbol: `name` (`verify_user`), a qualified path or its
    /// suffix (`Session::verify_user`), optionally only in files whose path contains `path`;
    /// with the definitions that call them and those they call (one hop).
    pub async fn find_symbol(
        &self,
        caller: &Caller,
        name: &str,
        path: Option<&str>,
    ) -> Result<SymbolReport, AppError> {
        let name = name.trim();
        if name.is_empty() || name.len() > 512 || name.contains(char::is_whitespace) {
            return Err(AppError::new(
                Code::InvalidArgument,
                "name must be one identifier or `::`-separated path, at most 512 bytes",
            ));
        }
        let Some(symbols) = self.engine().symbol_index() else {
            return Err(AppError::new(
                Code::InvalidArgument,
                "code intelligence is off on this server ([code] enabled = false)",
            ));
        };
        let lookup = match path.map(str::trim).filter(|p| !p.is_empty()) {
            Some(path) => SymbolLookup::NameInPath {
                name: name.to_owned(),
                path: path.to_owned(),
            },
            None if name.contains("::") => SymbolLookup::Qualified(name.to_owned()),
            None => SymbolLookup::Name(name.to_owned()),
        };
        let unavailable = |e| AppError::from(crag_engine::EngineError::from(e));
        let definitions = symbols
            .lookup(&lookup, MAX_SYMBOL_DEFINITIONS)
            .await
            .map_err(unavailable)?;
        let mut callers = Vec::new();
        let mut callees = Vec::new();
        let mut qualified: Vec<&str> = definitions
            .iter()
            .map(|d| d.def.qualified.as_str())
            .collect();
        qualified.dedup();
        for q in qualified {
            for n in symbols
                .neighbours(q, 1, MAX_SYMBOL_NEIGHBOURS)
                .await
                .map_err(unavailable)?
            {
                match n.relation {
                    Relation::UsedBy => callers.push(n.symbol),
                    Relation::Uses => callees.push(n.symbol),
                    Relation::Parent | Relation::Child => {}
                }
            }
        }
        let ids: Vec<ChunkId> = definitions
            .iter()
            .chain(&callers)
            .chain(&callees)
            .map(|s| s.chunk_id.clone())
            .collect();
        let chunks: HashMap<ChunkId, Chunk> = self
            .engine()
            .chunks(&ids)
            .await?
            .into_iter()
            .filter(|c| in_scope(caller, c))
            .map(|c| (c.id.clone(), c))
            .collect();
        let visible = |list: Vec<StoredSymbol>| -> Vec<SymbolHit> {
            let mut hits: Vec<SymbolHit> = list
                .into_iter()
                .filter_map(|symbol| {
                    let chunk = chunks.get(&symbol.chunk_id)?.clone();
                    Some(SymbolHit { symbol, chunk })
                })
                .collect();
            hits.truncate(MAX_SYMBOL_NEIGHBOURS);
            hits
        };
        Ok(SymbolReport {
            definitions: visible(definitions),
            callers: visible(callers),
            callees: visible(callees),
        })
    }
}

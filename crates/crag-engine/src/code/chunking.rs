//! Syntax-aware chunking of one source file, and the symbols it yields.

use std::collections::HashMap;

use crag_core::{
    Chunk, ChunkId, ChunkKind, Document, FileSymbols, Span, StoredReference, StoredSymbol,
};
use crag_syntax::{parse_file, Language, SyntaxLimits};

/// A source file cut along its syntax.
#[derive(Debug, Clone)]
pub(crate) struct SyntaxChunks {
    /// One chunk per definition part and top-level group, in source order, with code metadata.
    pub chunks: Vec<Chunk>,
    /// The file's definitions, references and chunk metadata, for the symbol index.
    pub symbols: FileSymbols,
}

/// Cuts `doc` along its syntax when it is code in a known language; `None` when it is not (the
/// caller cuts token windows), or when it does not parse (logged as a warning).
///
/// Chunk ids are `<document id>#<key>` with the key naming the definition (`Engine::ask`,
/// `Engine::ask~1` for its second part, `top~0` for top-level code), so they survive edits of
/// other definitions.
pub(crate) fn syntax_chunks(
    doc: &Document,
    max_tokens: usize,
    count_tokens: &dyn Fn(&str) -> usize,
) -> Option<SyntaxChunks> {
    if doc.kind != ChunkKind::Code {
        return None;
    }
    let language = Language::from_path(&doc.source)?;
    let limits = SyntaxLimits {
        max_tokens,
        count_tokens,
    };
    let parsed = match parse_file(&doc.source, &doc.text, language, &limits) {
        Ok(parsed) => parsed,
        Err(error) => {
            tracing::warn!(
                document = %doc.id,
                language = language.as_str(),
                %error,
                "source file did not parse; cut into token windows instead"
            );
            return None;
        }
    };
    let hash = doc.content_hash();
    let mut ids: HashMap<String, ChunkId> = HashMap::new();
    let mut chunks = Vec::with_capacity(parsed.pieces.len());
    let mut symbols = FileSymbols::default();
    for piece in parsed.pieces {
        let built = ChunkId::new(format!("{}#{}", doc.id, piece.key)).and_then(|id| {
            let span = Span::new(
                piece.byte_start as u64,
                piece.byte_end as u64,
                piece.line_start.max(1),
                piece.line_end.max(piece.line_start.max(1)),
            )?;
            Chunk::new(
                id,
                doc.id.clone(),
                doc.source.clone(),
                doc.title.clone(),
                piece.text,
                span,
                ChunkKind::Code,
                hash.clone(),
            )
        });
        match built {
            Ok(chunk) => {
                let chunk = chunk.with_code(piece.meta.clone());
                ids.insert(piece.key, chunk.id.clone());
                symbols.chunks.push((chunk.id.clone(), piece.meta));
                chunks.push(chunk);
            }
            // Blank pieces hold nothing to retrieve.
            Err(error) => {
                tracing::debug!(document = %doc.id, key = %piece.key, %error, "piece left out")
            }
        }
    }
    for (key, def) in parsed.definitions {
        if let Some(chunk_id) = ids.get(&key) {
            symbols.definitions.push(StoredSymbol {
                document_id: doc.id.clone(),
                path: doc.source.clone(),
                chunk_id: chunk_id.clone(),
                def,
            });
        }
    }
    for (key, reference) in parsed.references {
        if let Some(chunk_id) = ids.get(&key) {
            symbols.references.push(StoredReference {
                document_id: doc.id.clone(),
                chunk_id: chunk_id.clone(),
                reference,
            });
        }
    }
    if chunks.is_empty() {
        return None;
    }
    Some(SyntaxChunks { chunks, symbols })
}

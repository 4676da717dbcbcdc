//! Code metadata on retrieved chunks, read from the symbol index.

use crag_core::{Chunk, ChunkId, ChunkKind};
use crag_ports::SymbolIndex;

use crate::error::Result;

/// Puts the symbol index's code metadata on the code chunks among `chunks` that lack it.
pub(crate) async fn hydrate<'a>(
    symbols: &dyn SymbolIndex,
    chunks: impl IntoIterator<Item = &'a mut Chunk>,
) -> Result<()> {
    let mut wanting: Vec<&'a mut Chunk> = chunks
        .into_iter()
        .filter(|c| c.kind == ChunkKind::Code && c.code.is_none())
        .collect();
    if wanting.is_empty() {
        return Ok(());
    }
    let ids: Vec<ChunkId> = wanting.iter().map(|c| c.id.clone()).collect();
    let mut meta = symbols.chunk_meta(&ids).await?;
    for chunk in &mut wanting {
        chunk.code = meta.remove(&chunk.id);
    }
    Ok(())
}

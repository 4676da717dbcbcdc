//! The metadata every chunk of a document carries: the document's own, and the fields crag
//! derives ([`crag_core::DERIVED_FIELDS`]).

use crag_core::{Chunk, ChunkKind, Document, Metadata};
use crag_syntax::Language;

/// The document's metadata with its source and kind, and the language of a source file of a
/// known language (by its extension). `modified` is set by the source that read the file.
pub(crate) fn of_document(doc: &Document) -> Metadata {
    let mut metadata = doc.metadata.clone();
    metadata.insert("source".into(), doc.source.clone().into());
    metadata.insert("kind".into(), doc.kind.as_str().into());
    if doc.kind == ChunkKind::Code {
        if let Some(language) = Language::from_path(&doc.source) {
            metadata.insert("language".into(), language.as_str().into());
        }
    }
    metadata
}

/// Puts the document's metadata ([`of_document`]) on each of its chunks.
pub(crate) fn stamp(doc: &Document, chunks: &mut [Chunk]) {
    let metadata = of_document(doc);
    for chunk in chunks {
        chunk.metadata.clone_from(&metadata);
    }
}

#[cfg(test)]
mod tests {
    use crag_core::DocumentId;
    use serde_json::json;

    use super::*;

    #[test]
    fn derived_fields_join_the_documents_own() {
        let id = DocumentId::new("src/lib.rs").unwrap();
        let own = json!({"team": "core"}).as_object().unwrap().clone();
        let doc = Document::new(id, "src/lib.rs", "lib.rs", "fn main() {}", ChunkKind::Code)
            .unwrap()
            .with_metadata(own);
        let metadata = of_document(&doc);
        assert_eq!(
            serde_json::Value::Object(metadata),
            json!({"team": "core", "source": "src/lib.rs", "kind": "code", "language": "rust"})
        );
    }
}

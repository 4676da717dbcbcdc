use std::ops::Range;

use crag_core::{Chunk, ChunkId, Document, Span};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};

/// How documents are cut into chunks (`[chunking]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ChunkingConfig {
    /// Model tokens per chunk (at least 1); with the title and the two special tokens a chunk of
    /// 224 fits all-MiniLM-L6-v2's 256-token window, a longer one is embedded by its first 256
    /// tokens only (BM25 indexes all of it).
    pub chunk_tokens: usize,
    /// Tokens consecutive chunks of a document share, smaller than `chunk_tokens`.
    pub overlap_tokens: usize,
}

impl Default for ChunkingConfig {
    /// 224 tokens with 32 of overlap: with the title prepended for embedding and the two special
    /// tokens, a chunk fits all-MiniLM-L6-v2's 256-token window.
    fn default() -> Self {
        Self {
            chunk_tokens: 224,
            overlap_tokens: 32,
        }
    }
}

impl ChunkingConfig {
    /// Checks that chunks have tokens and overlap leaves progress.
    pub fn validate(&self) -> Result<()> {
        if self.chunk_tokens == 0 {
            return Err(EngineError::InvalidInput(
                "chunk_tokens must be at least 1".into(),
            ));
        }
        if self.overlap_tokens >= self.chunk_tokens {
            return Err(EngineError::InvalidInput(format!(
                "overlap_tokens ({}) must be smaller than chunk_tokens ({})",
                self.overlap_tokens, self.chunk_tokens
            )));
        }
        Ok(())
    }
}

/// Cuts `doc` into windows of `config.chunk_tokens` tokens overlapping by
/// `config.overlap_tokens`, given the byte spans of its tokens.
///
/// A chunk's text is the document's own text from its first token to its last, so byte and
/// line spans point at the source exactly; its token count is its window's.
pub fn chunk_document(
    doc: &Document,
    token_spans: &[Range<usize>],
    config: ChunkingConfig,
) -> Result<Vec<Chunk>> {
    config.validate()?;
    let text = &doc.text;
    if token_spans.iter().any(|r| {
        r.start >= r.end
            || r.end > text.len()
            || !text.is_char_boundary(r.start)
            || !text.is_char_boundary(r.end)
    }) {
        return Err(EngineError::InvalidInput(format!(
            "token spans out of bounds for document {}",
            doc.id
        )));
    }
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line_of = |byte: usize| -> u32 {
        let line = line_starts.partition_point(|&start| start <= byte);
        u32::try_from(line).unwrap_or(u32::MAX)
    };
    let hash = doc.content_hash();
    let step = config.chunk_tokens - config.overlap_tokens;
    let mut chunks = Vec::new();
    let mut first = 0;
    while first < token_spans.len() {
        let last = (first + config.chunk_tokens).min(token_spans.len()) - 1;
        let (start, end) = (token_spans[first].start, token_spans[last].end);
        let span = Span::new(start as u64, end as u64, line_of(start), line_of(end - 1))?;
        chunks.push(
            Chunk::new(
                ChunkId::for_document(&doc.id, chunks.len()),
                doc.id.clone(),
                doc.source.clone(),
                doc.title.clone(),
                &text[start..end],
                span,
                doc.kind,
                hash.clone(),
            )?
            .with_tokens(last + 1 - first),
        );
        if last + 1 == token_spans.len() {
            break;
        }
        first += step;
    }
    Ok(chunks)
}

#[cfg(test)]
mod tests {
    use crag_core::{ChunkKind, DocumentId};

    use super::*;

    fn words(text: &str) -> Vec<Range<usize>> {
        text.split_whitespace()
            .map(|w| {
                let start = w.as_ptr() as usize - text.as_ptr() as usize;
                start..start + w.len()
            })
            .collect()
    }

    fn doc(text: &str) -> Document {
        Document::new(
            DocumentId::new("d.md").unwrap(),
            "d.md",
            "D",
            text,
            ChunkKind::Prose,
        )
        .unwrap()
    }

    #[test]
    fn windows_overlap_and_cover_everything() {
        let text = (0..25)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        let d = doc(&text);
        let cfg = ChunkingConfig {
            chunk_tokens: 10,
            overlap_tokens: 3,
        };
        let chunks = chunk_document(&d, &words(&text), cfg).unwrap();
        let texts: Vec<_> = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(chunks.len(), 4, "{texts:?}");
        assert!(texts[0].starts_with("w0 ") && texts[0].ends_with(" w9"));
        assert!(texts[1].starts_with("w7 "), "overlap of 3: {}", texts[1]);
        assert!(texts[3].ends_with("w24"));
        assert_eq!(chunks[2].id.as_str(), "d.md#2");
        for c in &chunks {
            let s = &c.span;
            assert_eq!(&text[s.byte_start as usize..s.byte_end as usize], c.text);
        }
        // Each chunk carries its window's token count: 10, 10, 10, then w21..w24.
        let tokens: Vec<_> = chunks.iter().map(|c| c.tokens).collect();
        assert_eq!(tokens, [Some(10), Some(10), Some(10), Some(4)]);
    }

    #[test]
    fn line_spans_follow_newlines() {
        let text = "alpha beta\ngamma\n\ndelta epsilon\nzeta";
        let d = doc(text);
        let cfg = ChunkingConfig {
            chunk_tokens: 3,
            overlap_tokens: 1,
        };
        let chunks = chunk_document(&d, &words(text), cfg).unwrap();
        let lines: Vec<_> = chunks
            .iter()
            .map(|c| (c.span.line_start, c.span.line_end))
            .collect();
        assert_eq!(lines, vec![(1, 2), (2, 4), (4, 5)]);
    }

    #[test]
    fn short_document_is_one_chunk() {
        let d = doc("just a few words");
        let chunks = chunk_document(&d, &words(&d.text), ChunkingConfig::default()).unwrap();
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].text, "just a few words");
        assert_eq!(chunks[0].content_hash, d.content_hash());
    }

    #[test]
    fn bad_config_and_spans_are_rejected() {
        let d = doc("a b");
        assert!(chunk_document(
            &d,
            &words("a b"),
            ChunkingConfig {
                chunk_tokens: 2,
                overlap_tokens: 2
            }
        )
        .is_err());
        assert!(chunk_document(
            &d,
            std::slice::from_ref(&(0..10)),
            ChunkingConfig::default()
        )
        .is_err());
        assert!(chunk_document(&d, &[], ChunkingConfig::default())
            .unwrap()
            .is_empty());
    }
}

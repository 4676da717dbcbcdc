//! The LLM-free gap detector: with a symbol index, names the context's code uses that the
//! symbol graph does not define in the context (`symbol_gaps.rs`); without one, or for context
//! the index does not know, the lexical reading of the text (`crag_gaps::code_gaps`).

use std::sync::Arc;

use async_trait::async_trait;
use crag_gaps::{code_gaps, MAX_CODE_GAPS};
use crag_ports::{ContextItem, GapDetector, GapReport, PortResult, SymbolIndex};

use super::symbol_gaps::symbol_gaps;

/// [`GapDetector`] without a language model: names used in the code context and defined
/// nowhere in it. With a symbol index it reads the symbol graph (references and definitions
/// of the context's chunks, names the corpus does not define reported as external); without
/// one, or for context the index does not know, it reads the text.
#[derive(Debug, Default, Clone)]
pub struct CodeGapDetector {
    symbols: Option<Arc<dyn SymbolIndex>>,
}

impl CodeGapDetector {
    /// A detector reading the text of the context only.
    pub fn lexical() -> Self {
        Self { symbols: None }
    }

    /// A detector reading the symbol graph of `symbols`.
    pub fn with_symbols(symbols: Arc<dyn SymbolIndex>) -> Self {
        Self {
            symbols: Some(symbols),
        }
    }
}

#[async_trait]
impl GapDetector for CodeGapDetector {
    fn name(&self) -> &str {
        "code"
    }

    fn answers(&self) -> bool {
        false
    }

    async fn detect(
        &self,
        _question: &str,
        context: &[ContextItem],
        known_missing: &[String],
    ) -> PortResult<GapReport> {
        if let Some(symbols) = &self.symbols {
            let found =
                symbol_gaps(symbols.as_ref(), context, known_missing, MAX_CODE_GAPS).await?;
            if found.known {
                return Ok(GapReport {
                    gaps: found.gaps,
                    external: found.external,
                    parsed: true,
                    ..GapReport::default()
                });
            }
        }
        Ok(GapReport {
            gaps: code_gaps(context.iter().map(|i| i.text.as_str()), known_missing),
            parsed: true,
            ..GapReport::default()
        })
    }
}

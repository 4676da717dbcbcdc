//! `[code]`: the configuration of code intelligence.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};

/// `[code]`: how source files are chunked and how code results are expanded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CodeConfig {
    /// Cut source files in Rust, Python, TypeScript/TSX, JavaScript and Go along their syntax (one
    /// chunk per function, method, type...; long ones in parts with the signature repeated) and
    /// keep their symbols in the symbol index (`<data_dir>/symbols.sqlite`, or Postgres with
    /// `[storage] graphs`); `false`: token windows like prose.
    pub syntax_chunks: bool,
    /// Hops of the symbol graph by which `crag query` adds the definitions its code results call
    /// (0: off, 1 or 2).
    pub expand_depth: u8,
    /// Definitions that expansion adds to a result list at most (at least 1 when `expand_depth` is
    /// set).
    pub expand_budget: usize,
}

impl Default for CodeConfig {
    fn default() -> Self {
        Self {
            syntax_chunks: true,
            expand_depth: 0,
            expand_budget: 4,
        }
    }
}

impl CodeConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        if self.expand_depth > 2 {
            return Err(EngineError::InvalidInput(format!(
                "code.expand_depth must be 0, 1 or 2, got {}",
                self.expand_depth
            )));
        }
        if self.expand_depth > 0 && self.expand_budget == 0 {
            return Err(EngineError::InvalidInput(
                "code.expand_budget must be at least 1 when code.expand_depth is set".into(),
            ));
        }
        Ok(())
    }
}

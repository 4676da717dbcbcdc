//! Syntax-aware chunking of source code and symbol extraction, with tree-sitter.
//!
//! [`parse_file`] cuts a Rust, Python, TypeScript/TSX, JavaScript or Go file into one piece per
//! definition (functions, methods, types, impls, traits, interfaces, constants, modules), keeps
//! doc comments and attributes with their definition, groups top-level code between
//! definitions, splits long definitions with their signature repeated, and lists the file's
//! definitions and references (calls, type uses, imports) for the symbol graph. Pure: no IO.

mod defs;
mod lang;
mod module_path;
mod pieces;
mod refs;

use crag_core::{CodeMeta, SymbolDef, SymbolRef};

pub use lang::Language;
pub use module_path::module_path;

/// How large a piece may be.
pub struct SyntaxLimits<'a> {
    /// Most model tokens per piece.
    pub max_tokens: usize,
    /// Counts the model tokens of a text (the embedder's tokenizer).
    pub count_tokens: &'a dyn Fn(&str) -> usize,
}

/// One chunk of a source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodePiece {
    /// Unique within the file, stable across edits of other definitions: the definition's
    /// path within the file (`Engine::ask`), `~<part>` for parts after the first, `#<n>` for a
    /// repeated name, `top~<n>` for top-level code.
    pub key: String,
    /// First byte in the source.
    pub byte_start: usize,
    /// One past the last byte in the source.
    pub byte_end: usize,
    /// First line (1-based).
    pub line_start: u32,
    /// Last line (1-based, inclusive).
    pub line_end: u32,
    /// The source text of the span; parts after the first start with the signature line.
    pub text: String,
    /// What the piece defines.
    pub meta: CodeMeta,
}

/// What a source file holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedFile {
    /// Pieces in source order.
    pub pieces: Vec<CodePiece>,
    /// Definitions, each with the key of the piece holding its first part.
    pub definitions: Vec<(String, SymbolDef)>,
    /// References, each with the key of the piece it occurs in.
    pub references: Vec<(String, SymbolRef)>,
}

/// Why a file could not be cut along its syntax.
#[derive(Debug, thiserror::Error)]
pub enum SyntaxError {
    /// The grammar could not be loaded (a version mismatch).
    #[error("the {language} grammar cannot be loaded: {message}")]
    Grammar {
        /// The language.
        language: &'static str,
        /// What tree-sitter said.
        message: String,
    },
    /// The parser gave up: the file took far more work than source files of its length do.
    #[error("the file is too costly to parse as {language}")]
    TooComplex {
        /// The language.
        language: &'static str,
    },
    /// The file does not parse and no definition could be read from it.
    #[error("the file does not parse as {language}")]
    Unparsable {
        /// The language.
        language: &'static str,
    },
}

/// Progress reports of tree-sitter a parse may take whatever the file's length (a real
/// 100 KB file takes about 600, one byte in a hundred).
const PARSE_BUDGET_BASE: usize = 4096;

/// Cuts `text`, the source file at `path`, along its syntax.
pub fn parse_file(
    path: &str,
    text: &str,
    language: Language,
    limits: &SyntaxLimits,
) -> Result<ParsedFile, SyntaxError> {
    if text.trim().is_empty() {
        return Ok(ParsedFile::default());
    }
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&language.grammar())
        .map_err(|e| SyntaxError::Grammar {
            language: language.as_str(),
            message: e.to_string(),
        })?;
    // Some grammars' error recovery runs away on odd input (minutes and gigabytes on 150
    // bytes of TSX): tree-sitter reports progress about every hundred operations, and the
    // parse is given up past a budget of reports that grows with the file's length, 25 to
    // 100 times what real source files take.
    let budget = PARSE_BUDGET_BASE + text.len() / 4;
    let mut reports = 0usize;
    let mut give_up = |_: &tree_sitter::ParseState| {
        reports += 1;
        reports > budget
    };
    let bytes = text.as_bytes();
    let tree = parser
        .parse_with_options(
            &mut |at, _| bytes.get(at..).unwrap_or_default(),
            None,
            Some(tree_sitter::ParseOptions::new().progress_callback(&mut give_up)),
        )
        .ok_or(if reports > budget {
            SyntaxError::TooComplex {
                language: language.as_str(),
            }
        } else {
            SyntaxError::Unparsable {
                language: language.as_str(),
            }
        })?;
    let root = tree.root_node();
    let defs = defs::collect(language, root, text);
    if root.has_error() && defs.is_empty() {
        return Err(SyntaxError::Unparsable {
            language: language.as_str(),
        });
    }
    let module = module_path(path, language);
    let built = pieces::build(text, language, &module, &defs, limits);
    let references = refs::collect(language, root, text, &built);
    Ok(ParsedFile {
        pieces: built.pieces,
        definitions: built.definitions,
        references,
    })
}

//! Code intelligence types: what a syntax-aware chunk knows about the code it holds, and the
//! definitions and references of a source file that form the symbol graph.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, Result};
use crate::{ChunkId, DocumentId};

/// What kind of definition a symbol (or a code chunk) is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SymbolKind {
    /// A free function.
    Function,
    /// A function inside a type, impl, class or interface.
    Method,
    /// A class (Python, TypeScript, JavaScript).
    Class,
    /// A struct (Rust, Go).
    Struct,
    /// An enum.
    Enum,
    /// A Rust `impl` block.
    Impl,
    /// A Rust trait.
    Trait,
    /// An interface (TypeScript, Go).
    Interface,
    /// A module (Rust `mod`, a TypeScript namespace).
    Module,
    /// A type alias or a Go named type that is neither struct nor interface.
    Type,
    /// A constant or static.
    Constant,
    /// Top-level statements between definitions, grouped (imports, module code).
    TopLevel,
}

impl SymbolKind {
    /// Every kind, in declaration order.
    pub const ALL: [Self; 12] = [
        Self::Function,
        Self::Method,
        Self::Class,
        Self::Struct,
        Self::Enum,
        Self::Impl,
        Self::Trait,
        Self::Interface,
        Self::Module,
        Self::Type,
        Self::Constant,
        Self::TopLevel,
    ];

    /// Returns the snake_case name used in indexes and wire formats.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Function => "function",
            Self::Method => "method",
            Self::Class => "class",
            Self::Struct => "struct",
            Self::Enum => "enum",
            Self::Impl => "impl",
            Self::Trait => "trait",
            Self::Interface => "interface",
            Self::Module => "module",
            Self::Type => "type",
            Self::Constant => "constant",
            Self::TopLevel => "top_level",
        }
    }
}

impl fmt::Display for SymbolKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SymbolKind {
    type Err = CoreError;
    fn from_str(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| CoreError::invalid("symbol kind", format!("unknown kind `{s}`")))
    }
}

/// How a reference uses the name it references.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceKind {
    /// A call of a function or method (`name(...)`, `x.name(...)`, `Type::name(...)`).
    Call,
    /// A use of a type (annotations, struct literals, `Type::`, `new Type`).
    TypeUse,
    /// An import (`use a::b::Name`, `from a import Name`, `import { Name }`).
    Import,
}

impl ReferenceKind {
    /// Returns the snake_case name used in indexes and wire formats.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Call => "call",
            Self::TypeUse => "type_use",
            Self::Import => "import",
        }
    }
}

impl FromStr for ReferenceKind {
    type Err = CoreError;
    fn from_str(s: &str) -> Result<Self> {
        [Self::Call, Self::TypeUse, Self::Import]
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| CoreError::invalid("reference kind", format!("unknown kind `{s}`")))
    }
}

/// What a syntax-aware code chunk holds; absent on prose chunks and on code cut into line
/// windows (no grammar, or a parse failure).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CodeMeta {
    /// Language name: `rust`, `python`, `typescript`, `tsx`, `javascript`, `go`.
    pub language: String,
    /// The defined symbol's own name (`ask`); for top-level groups, empty.
    pub symbol: String,
    /// What the symbol is.
    pub symbol_kind: SymbolKind,
    /// Qualified path: the file's module path and the enclosing definitions joined with `::`
    /// (`crag_engine::cgrag::ask::Engine::ask`).
    pub qualified: String,
    /// The definition's first line(s) up to its body (`pub async fn ask(&self, ...) -> Result<..>`).
    pub signature: String,
    /// Part of a long definition cut in several chunks (0-based).
    pub part: u32,
    /// Number of parts of the definition (1 when it fits one chunk).
    pub parts: u32,
}

/// A definition found in a source file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SymbolDef {
    /// The symbol's own name.
    pub name: String,
    /// Its qualified path (see [`CodeMeta::qualified`]).
    pub qualified: String,
    /// What it is.
    pub kind: SymbolKind,
    /// Language name.
    pub language: String,
    /// First line (1-based).
    pub line_start: u32,
    /// Last line (1-based, inclusive).
    pub line_end: u32,
    /// Its signature.
    pub signature: String,
}

/// A use of a name found in a source file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SymbolRef {
    /// The referenced name as its last segment (`verify_user` in `auth::verify_user(x)`).
    pub name: String,
    /// What was written before the name, if anything (`auth` above, `self`, `Type`).
    pub qualifier: Option<String>,
    /// Qualified path of the innermost definition holding the reference; `None` at top level.
    pub from: Option<String>,
    /// Call, type use or import.
    pub kind: ReferenceKind,
    /// Line of the reference (1-based).
    pub line: u32,
}

/// A definition as stored in a symbol index: which document and chunk hold it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StoredSymbol {
    /// The document (source file).
    pub document_id: DocumentId,
    /// The file's path.
    pub path: String,
    /// The chunk holding the definition (its first part).
    pub chunk_id: ChunkId,
    /// The definition.
    pub def: SymbolDef,
}

/// A reference as stored in a symbol index: which chunk it occurs in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StoredReference {
    /// The document (source file).
    pub document_id: DocumentId,
    /// The chunk the reference occurs in.
    pub chunk_id: ChunkId,
    /// The reference.
    pub reference: SymbolRef,
}

/// Everything a symbol index keeps of one source file; written whole on each (re)ingest.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSymbols {
    /// Definitions, each with its chunk.
    pub definitions: Vec<StoredSymbol>,
    /// References, each with its chunk.
    pub references: Vec<StoredReference>,
    /// The code metadata of each syntax-aware chunk of the file.
    pub chunks: Vec<(ChunkId, CodeMeta)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip() {
        for kind in SymbolKind::ALL {
            assert_eq!(kind.as_str().parse::<SymbolKind>().unwrap(), kind);
        }
        assert!("lambda".parse::<SymbolKind>().is_err());
        for kind in [
            ReferenceKind::Call,
            ReferenceKind::TypeUse,
            ReferenceKind::Import,
        ] {
            assert_eq!(kind.as_str().parse::<ReferenceKind>().unwrap(), kind);
        }
        assert!("".parse::<ReferenceKind>().is_err());
    }

    #[test]
    fn kinds_serialise_as_their_names() {
        let json = serde_json::to_string(&SymbolKind::TopLevel).unwrap();
        assert_eq!(json, "\"top_level\"");
        let json = serde_json::to_string(&ReferenceKind::TypeUse).unwrap();
        assert_eq!(json, "\"type_use\"");
    }
}

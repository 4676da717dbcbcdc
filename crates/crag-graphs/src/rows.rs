//! Statements, and the mapping between rows and the core types.

use crag_core::{
    ChunkId, CodeMeta, DocumentId, ReferenceKind, StoredReference, StoredSymbol, SymbolDef,
    SymbolKind, SymbolRef,
};
use crag_ports::{ErrorKind, PortError, PortResult};
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::Row as _;

/// The columns of a definition, in the order [`symbol`] reads them.
pub(crate) const DEF_COLUMNS: &str = "id, document_id, path, chunk_id, name, qualified, kind, \
     language, line_start, line_end, signature";

/// Ordering of lookups; `id` (insertion order) breaks the last ties.
pub(crate) const LOOKUP_ORDER: &str = "ORDER BY qualified, path, line_start, chunk_id, id";

pub(crate) const INSERT_DEF: &str = "INSERT INTO symbol_defs (document_id, path, chunk_id, \
     name, qualified, qualified_rev, kind, language, line_start, line_end, signature) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
pub(crate) const INSERT_REF: &str = "INSERT INTO symbol_refs (document_id, chunk_id, name, \
     qualifier, from_qualified, kind, line) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
pub(crate) const UPSERT_META: &str = "INSERT INTO chunk_meta (chunk_id, document_id, language, \
     symbol, symbol_kind, qualified, signature, part, parts) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
     ON CONFLICT (chunk_id) DO UPDATE SET document_id = excluded.document_id, \
     language = excluded.language, symbol = excluded.symbol, \
     symbol_kind = excluded.symbol_kind, qualified = excluded.qualified, \
     signature = excluded.signature, part = excluded.part, parts = excluded.parts";
pub(crate) const DELETE_DOCUMENT: [&str; 3] = [
    "DELETE FROM symbol_defs WHERE document_id = ?1",
    "DELETE FROM symbol_refs WHERE document_id = ?1",
    "DELETE FROM chunk_meta WHERE document_id = ?1",
];

/// `text` reversed by characters.
pub(crate) fn reversed(text: &str) -> String {
    text.chars().rev().collect()
}

/// Bounds `[low, high)` of the strings starting with `prefix`, which must end with `:`: the
/// upper bound swaps that `:` for the next character, `;`.
pub(crate) fn prefix_range(prefix: &str) -> (String, String) {
    debug_assert!(prefix.ends_with(':'));
    let head = prefix.strip_suffix(':').unwrap_or(prefix);
    (prefix.to_owned(), format!("{head};"))
}

/// `?, ?, …` for `n` parameters.
pub(crate) fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}

fn corrupt(what: &str, detail: impl std::fmt::Display) -> PortError {
    PortError::new(
        ErrorKind::Internal,
        format!("symbol index: malformed {what} in the database: {detail}"),
    )
}

/// The columns of a row of either backend, read by name; a missing column or one of another
/// type is a malformed row.
pub(crate) trait Columns {
    /// A text column.
    fn text(&self, column: &str) -> PortResult<String>;
    /// A text column that may be NULL.
    fn text_opt(&self, column: &str) -> PortResult<Option<String>>;
    /// An integer column.
    fn int(&self, column: &str) -> PortResult<i64>;
}

macro_rules! columns {
    ($row:ty) => {
        impl Columns for $row {
            fn text(&self, column: &str) -> PortResult<String> {
                self.try_get(column).map_err(|e| corrupt(column, e))
            }
            fn text_opt(&self, column: &str) -> PortResult<Option<String>> {
                self.try_get(column).map_err(|e| corrupt(column, e))
            }
            fn int(&self, column: &str) -> PortResult<i64> {
                self.try_get(column).map_err(|e| corrupt(column, e))
            }
        }
    };
}
columns!(SqliteRow);
columns!(PgRow);

fn line(value: i64) -> PortResult<u32> {
    u32::try_from(value).map_err(|_| corrupt("line number", value))
}

fn ids(row: &impl Columns, document: &str, chunk: &str) -> PortResult<(DocumentId, ChunkId)> {
    let document = DocumentId::new(row.text(document)?).map_err(|e| corrupt("document id", e))?;
    let chunk = ChunkId::new(row.text(chunk)?).map_err(|e| corrupt("chunk id", e))?;
    Ok((document, chunk))
}

fn symbol_kind(raw: &str) -> PortResult<SymbolKind> {
    raw.parse().map_err(|e| corrupt("symbol kind", e))
}

/// A definition row (selected with [`DEF_COLUMNS`]) and its row id.
pub(crate) fn symbol(row: &impl Columns) -> PortResult<(i64, StoredSymbol)> {
    let (document_id, chunk_id) = ids(row, "document_id", "chunk_id")?;
    let symbol = StoredSymbol {
        document_id,
        path: row.text("path")?,
        chunk_id,
        def: SymbolDef {
            name: row.text("name")?,
            qualified: row.text("qualified")?,
            kind: symbol_kind(&row.text("kind")?)?,
            language: row.text("language")?,
            line_start: line(row.int("line_start")?)?,
            line_end: line(row.int("line_end")?)?,
            signature: row.text("signature")?,
        },
    };
    Ok((row.int("id")?, symbol))
}

/// A reference row (`document_id, chunk_id, name, qualifier, from_qualified, kind, line`).
pub(crate) fn reference(row: &impl Columns) -> PortResult<StoredReference> {
    let (document_id, chunk_id) = ids(row, "document_id", "chunk_id")?;
    Ok(StoredReference {
        document_id,
        chunk_id,
        reference: SymbolRef {
            name: row.text("name")?,
            qualifier: row.text_opt("qualifier")?,
            from: row.text_opt("from_qualified")?,
            kind: row
                .text("kind")?
                .parse::<ReferenceKind>()
                .map_err(|e| corrupt("reference kind", e))?,
            line: line(row.int("line")?)?,
        },
    })
}

/// A chunk-metadata row (`chunk_id, language, symbol, symbol_kind, qualified, signature, part,
/// parts`).
pub(crate) fn chunk_meta(row: &impl Columns) -> PortResult<(ChunkId, CodeMeta)> {
    let chunk = ChunkId::new(row.text("chunk_id")?).map_err(|e| corrupt("chunk id", e))?;
    let meta = CodeMeta {
        language: row.text("language")?,
        symbol: row.text("symbol")?,
        symbol_kind: symbol_kind(&row.text("symbol_kind")?)?,
        qualified: row.text("qualified")?,
        signature: row.text("signature")?,
        part: line(row.int("part")?)?,
        parts: line(row.int("parts")?)?,
    };
    Ok((chunk, meta))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ranges_hold_exactly_the_prefixed_strings() {
        let (low, high) = prefix_range("a::B::");
        for inside in ["a::B::", "a::B::c", "a::B::c::d", "a::B::\u{10ffff}"] {
            assert!(low.as_str() <= inside && inside < high.as_str(), "{inside}");
        }
        for outside in ["a::B:", "a::B", "a::B;", "a::C::x", "a::A::x", "a::B:;"] {
            assert!(
                !(low.as_str() <= outside && outside < high.as_str()),
                "{outside}"
            );
        }
        assert_eq!(reversed("ab::ç"), "ç::ba");
        assert_eq!(placeholders(3), "?, ?, ?");
    }
}

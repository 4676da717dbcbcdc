//! The fixture of the symbol-index contract: four source files that call into each other.

use crag_core::{
    ChunkId, CodeMeta, DocumentId, FileSymbols, ReferenceKind, StoredReference, StoredSymbol,
    SymbolDef, SymbolKind, SymbolRef,
};

use crate::{Neighbour, Relation, SymbolIndex, SymbolLookup};

pub(super) fn doc(path: &str) -> DocumentId {
    DocumentId::new(path).expect("valid document id")
}

pub(super) fn chunk(path: &str, ordinal: usize) -> ChunkId {
    ChunkId::for_document(&doc(path), ordinal)
}

pub(super) fn def(
    path: &str,
    ordinal: usize,
    qualified: &str,
    kind: SymbolKind,
    lines: u32,
) -> StoredSymbol {
    let name = qualified.rsplit("::").next().unwrap_or(qualified);
    StoredSymbol {
        document_id: doc(path),
        path: path.to_owned(),
        chunk_id: chunk(path, ordinal),
        def: SymbolDef {
            name: name.to_owned(),
            qualified: qualified.to_owned(),
            kind,
            language: "rust".into(),
            line_start: lines,
            line_end: lines + 2,
            signature: format!("fn {name}()"),
        },
    }
}

pub(super) fn reference(
    path: &str,
    ordinal: usize,
    (name, qualifier): (&str, Option<&str>),
    from: Option<&str>,
    kind: ReferenceKind,
    line: u32,
) -> StoredReference {
    StoredReference {
        document_id: doc(path),
        chunk_id: chunk(path, ordinal),
        reference: SymbolRef {
            name: name.into(),
            qualifier: qualifier.map(Into::into),
            from: from.map(Into::into),
            kind,
            line,
        },
    }
}

pub(super) fn meta(symbol: &StoredSymbol, part: u32, parts: u32) -> (ChunkId, CodeMeta) {
    let meta = CodeMeta {
        language: symbol.def.language.clone(),
        symbol: symbol.def.name.clone(),
        symbol_kind: symbol.def.kind,
        qualified: symbol.def.qualified.clone(),
        signature: symbol.def.signature.clone(),
        part,
        parts,
    };
    (symbol.chunk_id.clone(), meta)
}

pub(super) const AUTH: &str = "src/auth.rs";
pub(super) const DB: &str = "src/db.rs";
pub(super) const API: &str = "src/api.rs";
pub(super) const LEGACY: &str = "src/legacy/auth.rs";

/// `src/auth.rs`: a struct, two methods and a function using the struct; calls into `db`.
pub(super) fn auth_file() -> FileSymbols {
    use ReferenceKind::{Call, TypeUse};
    let defs = vec![
        def(AUTH, 0, "auth::Session", SymbolKind::Struct, 1),
        def(AUTH, 1, "auth::Session::verify_user", SymbolKind::Method, 6),
        def(AUTH, 2, "auth::Session::new", SymbolKind::Method, 14),
        def(AUTH, 3, "auth::hash_password", SymbolKind::Function, 18),
    ];
    let verify = Some("auth::Session::verify_user");
    FileSymbols {
        references: vec![
            reference(AUTH, 1, ("hash_password", None), verify, Call, 8),
            reference(AUTH, 1, ("lookup", Some("db")), verify, Call, 9),
            reference(
                AUTH,
                2,
                ("Session", None),
                Some("auth::Session::new"),
                TypeUse,
                15,
            ),
            reference(
                AUTH,
                3,
                ("Session", None),
                Some("auth::hash_password"),
                TypeUse,
                19,
            ),
        ],
        chunks: defs.iter().map(|d| meta(d, 0, 1)).collect(),
        definitions: defs,
    }
}

/// `src/db.rs`: two functions named `lookup` and one `open_pool`.
pub(super) fn db_file() -> FileSymbols {
    use ReferenceKind::Call;
    let from = Some("db::lookup");
    FileSymbols {
        definitions: vec![
            def(DB, 0, "db::lookup", SymbolKind::Function, 1),
            def(DB, 1, "db::cache::lookup", SymbolKind::Function, 7),
            def(DB, 2, "db::open_pool", SymbolKind::Function, 11),
        ],
        references: vec![
            reference(DB, 0, ("open_pool", None), from, Call, 2),
            reference(DB, 0, ("hash_password", Some("auth")), from, Call, 3),
        ],
        chunks: Vec::new(),
    }
}

/// `src/api.rs`: `login` calls `Session::verify_user`, `routes` calls `login` and an unknown
/// `self::lookup`.
pub(super) fn api_file() -> FileSymbols {
    use ReferenceKind::{Call, Import};
    let routes = Some("api::routes");
    FileSymbols {
        definitions: vec![
            def(API, 1, "api::login", SymbolKind::Function, 3),
            def(API, 2, "api::routes", SymbolKind::Function, 10),
        ],
        references: vec![
            reference(API, 0, ("Session", Some("auth")), None, Import, 1),
            reference(
                API,
                1,
                ("verify_user", Some("Session")),
                Some("api::login"),
                Call,
                5,
            ),
            reference(API, 2, ("login", None), routes, Call, 11),
            reference(API, 2, ("lookup", Some("self")), routes, Call, 12),
        ],
        chunks: Vec::new(),
    }
}

/// `src/legacy/auth.rs`: another `verify_user`.
pub(super) fn legacy_file() -> FileSymbols {
    FileSymbols {
        definitions: vec![def(
            LEGACY,
            0,
            "legacy::auth::verify_user",
            SymbolKind::Function,
            1,
        )],
        ..FileSymbols::default()
    }
}

pub(super) fn qualified(symbols: &[StoredSymbol]) -> Vec<&str> {
    symbols.iter().map(|s| s.def.qualified.as_str()).collect()
}

pub(super) fn hood(neighbours: &[Neighbour]) -> Vec<(u8, Relation, &str)> {
    neighbours
        .iter()
        .map(|n| (n.hops, n.relation, n.symbol.def.qualified.as_str()))
        .collect()
}

pub(super) async fn find(index: &dyn SymbolIndex, lookup: SymbolLookup) -> Vec<StoredSymbol> {
    index.lookup(&lookup, 100).await.expect("lookup")
}

pub(super) fn name(n: &str) -> SymbolLookup {
    SymbolLookup::Name(n.into())
}

pub(super) fn path_q(q: &str) -> SymbolLookup {
    SymbolLookup::Qualified(q.into())
}

pub(super) async fn ingest(index: &dyn SymbolIndex) {
    for (path, file) in [
        (AUTH, auth_file()),
        (DB, db_file()),
        (API, api_file()),
        (LEGACY, legacy_file()),
    ] {
        index
            .replace_document(&doc(path), &file)
            .await
            .expect("replace_document");
    }
}

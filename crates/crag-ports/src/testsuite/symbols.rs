//! The symbol-index contract.

use std::future::Future;

use crag_core::{ChunkId, DocumentId, FileSymbols, ReferenceKind, SymbolKind};

use crate::{Relation, SymbolIndex, SymbolLookup};

mod fixtures;
use fixtures::*;

/// Runs the symbol-index contract on instances made by `make` (each must be fresh and empty):
/// lookups by name, qualified path and suffix, and name in path; definitions, references and
/// chunk metadata by chunk; the 1- and 2-hop neighbourhoods (every relation, the start left
/// out, each definition once at its smallest hop count, the limit); re-ingesting and deleting
/// documents; odd input; and 10 concurrent `replace_document` calls that all land.
pub async fn symbol_index_suite<F, Fut>(mut make: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Box<dyn SymbolIndex>>,
{
    let index = make().await;
    let index = index.as_ref();
    assert_eq!(index.count().await.expect("count"), 0, "starts empty");
    assert!(find(index, name("verify_user")).await.is_empty());
    ingest(index).await;
    assert_eq!(index.count().await.expect("count"), 10, "every definition");

    lookups(index).await;
    by_chunk(index).await;
    neighbourhoods(index).await;
    odd_input(index).await;
    reingest_and_delete(index).await;
    stored_under_the_document(index).await;

    concurrent_replaces(make().await.as_ref()).await;
}

async fn lookups(index: &dyn SymbolIndex) {
    let auth = auth_file();
    let verify = find(index, name("verify_user")).await;
    assert_eq!(
        qualified(&verify),
        vec!["auth::Session::verify_user", "legacy::auth::verify_user"],
        "two documents define the name; ordered by qualified path"
    );
    assert_eq!(verify[0], auth.definitions[1], "a definition round-trips");
    assert_eq!(verify[1], legacy_file().definitions[0]);
    assert!(find(index, name("Verify_user")).await.is_empty(), "case");
    assert!(find(index, name("verify")).await.is_empty(), "exact names");
    assert_eq!(
        qualified(&index.lookup(&name("verify_user"), 1).await.expect("lookup")),
        vec!["auth::Session::verify_user"],
        "limit"
    );

    for (q, expected) in [
        (
            "auth::Session::verify_user",
            vec!["auth::Session::verify_user"],
        ),
        ("Session::verify_user", vec!["auth::Session::verify_user"]),
        (
            "verify_user",
            vec!["auth::Session::verify_user", "legacy::auth::verify_user"],
        ),
        ("lookup", vec!["db::cache::lookup", "db::lookup"]),
        ("cache::lookup", vec!["db::cache::lookup"]),
        ("auth::Session", vec!["auth::Session"]),
    ] {
        assert_eq!(qualified(&find(index, path_q(q)).await), expected, "{q}");
    }
    for q in [
        "sion::verify_user",
        "Session::",
        "::verify_user",
        "AUTH::Session",
    ] {
        assert!(
            find(index, path_q(q)).await.is_empty(),
            "{q} matches nothing"
        );
    }

    let in_path = |n: &str, p: &str| SymbolLookup::NameInPath {
        name: n.into(),
        path: p.into(),
    };
    for (n, p, expected) in [
        ("verify_user", "legacy", vec!["legacy::auth::verify_user"]),
        (
            "verify_user",
            "src/auth.rs",
            vec!["auth::Session::verify_user"],
        ),
        (
            "verify_user",
            "auth",
            vec!["auth::Session::verify_user", "legacy::auth::verify_user"],
        ),
        ("verify_user", "Auth", vec![]),
        ("verify_user", "db", vec![]),
        ("lookup", "db.rs", vec!["db::cache::lookup", "db::lookup"]),
        ("lookup", "", vec!["db::cache::lookup", "db::lookup"]),
    ] {
        let found = find(index, in_path(n, p)).await;
        assert_eq!(qualified(&found), expected, "{n} in {p}");
    }
}

async fn by_chunk(index: &dyn SymbolIndex) {
    let (auth, db) = (auth_file(), db_file());
    let unknown = chunk("nowhere.rs", 0);
    let defs = index
        .definitions_in(&[chunk(DB, 0), chunk(AUTH, 1), unknown.clone()])
        .await
        .expect("definitions_in");
    assert_eq!(
        defs,
        vec![auth.definitions[1].clone(), db.definitions[0].clone()],
        "ordered by path"
    );
    let refs = index
        .references_in(&[chunk(AUTH, 1), unknown.clone()])
        .await
        .expect("references_in");
    assert_eq!(refs, auth.references[..2].to_vec(), "ordered by line");
    let refs = index
        .references_in(&[chunk(API, 2), chunk(DB, 0)])
        .await
        .expect("references_in");
    let lines: Vec<(&str, u32)> = refs
        .iter()
        .map(|r| (r.document_id.as_str(), r.reference.line))
        .collect();
    assert_eq!(
        lines,
        vec![(API, 11), (API, 12), (DB, 2), (DB, 3)],
        "ordered by document, then line"
    );

    let metas = index
        .chunk_meta(&[chunk(AUTH, 0), chunk(AUTH, 3), chunk(DB, 0), unknown])
        .await
        .expect("chunk_meta");
    assert_eq!(metas.len(), 2, "only chunks with metadata: {metas:?}");
    assert_eq!(metas.get(&chunk(AUTH, 0)), Some(&auth.chunks[0].1));
    assert_eq!(metas.get(&chunk(AUTH, 3)), Some(&auth.chunks[3].1));
}

async fn neighbourhoods(index: &dyn SymbolIndex) {
    use Relation::{Child, Parent, UsedBy, Uses};
    let verify = "auth::Session::verify_user";
    let near = vec![
        (1, Uses, "auth::hash_password"),
        (1, Uses, "db::lookup"), // the qualifier `db` rules out db::cache::lookup
        (1, Parent, "auth::Session"), // hop 2 reaches it again, as Uses: it stays here
        (1, UsedBy, "api::login"),
    ];
    let n = index.neighbours(verify, 1, 50).await.expect("neighbours");
    assert_eq!(hood(&n), near, "one hop from {verify}");
    assert_eq!(n[0].symbol, auth_file().definitions[3], "round-trips");

    // hash_password is also reached at hop 2 (from db::lookup): it stays at hop 1. The
    // qualified `Session::verify_user` of api::login does not lead to legacy::auth.
    let mut far = near.clone();
    far.extend([
        (2, Uses, "db::open_pool"),
        (2, Child, "auth::Session::new"), // also UsedBy: Child comes first
        (2, UsedBy, "api::routes"),
    ]);
    let n = index.neighbours(verify, 2, 50).await.expect("neighbours");
    assert_eq!(hood(&n), far, "two hops from {verify}");
    let n = index.neighbours(verify, 9, 50).await.expect("neighbours");
    assert_eq!(hood(&n), far, "more than two hops count as two");
    let n = index.neighbours(verify, 2, 5).await.expect("neighbours");
    assert_eq!(hood(&n), far[..5].to_vec(), "limit");

    let n = index
        .neighbours("auth::Session", 1, 50)
        .await
        .expect("neighbours");
    assert_eq!(
        hood(&n),
        vec![
            (1, Child, "auth::Session::new"),
            (1, Child, "auth::Session::verify_user"),
            (1, UsedBy, "auth::hash_password"),
        ],
        "children and users; a top-level reference has no user"
    );

    // The start is never included, even when reached again; an unmatched qualifier (`self`)
    // falls back to every definition of the name.
    let n = index
        .neighbours("api::login", 2, 50)
        .await
        .expect("neighbours");
    assert_eq!(
        hood(&n),
        vec![
            (1, Uses, verify),
            (1, UsedBy, "api::routes"),
            (2, Uses, "auth::hash_password"),
            (2, Uses, "db::cache::lookup"),
            (2, Uses, "db::lookup"),
            (2, Parent, "auth::Session"),
        ],
        "two hops from api::login"
    );

    // Several start definitions, across files (an impl in another file).
    let other = "src/session_impl.rs";
    let split = FileSymbols {
        definitions: vec![
            def(other, 0, "auth::Session", SymbolKind::Impl, 1),
            def(other, 0, "auth::Session::refresh", SymbolKind::Method, 2),
            def(
                other,
                0,
                "auth::Session::refresh::retry",
                SymbolKind::Function,
                3,
            ),
        ],
        ..FileSymbols::default()
    };
    index
        .replace_document(&doc(other), &split)
        .await
        .expect("replace");
    let both = find(index, path_q("auth::Session")).await;
    assert_eq!(
        both.iter().map(|s| s.path.as_str()).collect::<Vec<_>>(),
        vec![AUTH, other],
        "same qualified path: ordered by path"
    );
    let n = index
        .neighbours("auth::Session", 1, 50)
        .await
        .expect("neighbours");
    assert_eq!(
        hood(&n),
        vec![
            (1, Child, "auth::Session::new"),
            (1, Child, "auth::Session::refresh"),
            (1, Child, "auth::Session::verify_user"),
            (1, UsedBy, "auth::hash_password"),
        ],
        "children of every start definition; grandchildren are not children"
    );
    let n = index
        .neighbours("auth::Session::refresh", 1, 50)
        .await
        .expect("neighbours");
    let paths: Vec<(Relation, &str)> = n
        .iter()
        .map(|n| (n.relation, n.symbol.path.as_str()))
        .collect();
    assert_eq!(
        paths,
        vec![(Child, other), (Parent, AUTH), (Parent, other)],
        "Child before Parent; both parents, ordered by path"
    );
    index
        .replace_document(&doc(other), &FileSymbols::default())
        .await
        .expect("an empty replace deletes");
    assert_eq!(index.count().await.expect("count"), 10);
}

async fn odd_input(index: &dyn SymbolIndex) {
    assert!(index
        .lookup(&name("verify_user"), 0)
        .await
        .expect("lookup")
        .is_empty());
    assert!(find(index, name("")).await.is_empty());
    assert!(find(index, path_q("")).await.is_empty());
    assert!(index.definitions_in(&[]).await.expect("defs").is_empty());
    assert!(index.references_in(&[]).await.expect("refs").is_empty());
    assert!(index.chunk_meta(&[]).await.expect("meta").is_empty());
    for (q, hops, limit) in [
        ("auth::Session::verify_user", 0, 50),
        ("auth::Session::verify_user", 2, 0),
        ("nothing::here", 2, 50),
        ("", 2, 50),
        ("%", 2, 50),
        ("auth::Session::", 1, 50),
    ] {
        let n = index.neighbours(q, hops, limit).await.expect("neighbours");
        assert!(n.is_empty(), "{q} {hops} {limit}: {n:?}");
    }
    let odd = SymbolLookup::NameInPath {
        name: "'; DROP TABLE x; --".into(),
        path: "%_\\".into(),
    };
    assert!(find(index, odd).await.is_empty());
    let many: Vec<ChunkId> = (0..2_000).map(|i| chunk("many.rs", i)).collect();
    assert!(index.definitions_in(&many).await.expect("defs").is_empty());
}

async fn reingest_and_delete(index: &dyn SymbolIndex) {
    // Re-ingesting auth without `new`: its definition, reference and metadata go.
    let mut auth = auth_file();
    auth.definitions.remove(2);
    auth.references.remove(2);
    auth.chunks.remove(2);
    auth.definitions[2].def.line_start = 30;
    index
        .replace_document(&doc(AUTH), &auth)
        .await
        .expect("replace");
    assert_eq!(index.count().await.expect("count"), 9);
    assert!(find(index, name("new")).await.is_empty());
    assert_eq!(
        find(index, name("hash_password")).await[0].def.line_start,
        30
    );
    assert!(index
        .references_in(&[chunk(AUTH, 2)])
        .await
        .expect("refs")
        .is_empty());
    assert!(index
        .chunk_meta(&[chunk(AUTH, 2)])
        .await
        .expect("meta")
        .is_empty());
    assert_eq!(
        index
            .references_in(&[chunk(AUTH, 1)])
            .await
            .expect("refs")
            .len(),
        2
    );

    // Deleting documents removes all their rows and nothing else.
    index
        .delete_documents(&[doc(DB), doc(LEGACY), doc("never-stored.rs")])
        .await
        .expect("delete");
    index.delete_documents(&[]).await.expect("delete nothing");
    assert_eq!(index.count().await.expect("count"), 5);
    assert!(find(index, name("lookup")).await.is_empty());
    assert_eq!(qualified(&find(index, name("verify_user")).await).len(), 1);
    assert!(index
        .references_in(&[chunk(DB, 0)])
        .await
        .expect("refs")
        .is_empty());
    let n = index
        .neighbours("auth::Session::verify_user", 1, 50)
        .await
        .expect("neighbours");
    assert_eq!(
        hood(&n),
        vec![
            (1, Relation::Uses, "auth::hash_password"),
            (1, Relation::Parent, "auth::Session"),
            (1, Relation::UsedBy, "api::login"),
        ],
        "deleted definitions are no longer reached"
    );
    assert_eq!(
        index
            .chunk_meta(&[chunk(AUTH, 0)])
            .await
            .expect("meta")
            .len(),
        1
    );
    index
        .delete_documents(&[doc(AUTH), doc(API)])
        .await
        .expect("delete");
    assert_eq!(index.count().await.expect("count"), 0);
    assert!(index
        .chunk_meta(&[chunk(AUTH, 0)])
        .await
        .expect("meta")
        .is_empty());
}

/// Rows carrying another document id are stored under the replaced document; of two metadata
/// entries for one chunk the last wins.
async fn stored_under_the_document(index: &dyn SymbolIndex) {
    let mut file = auth_file();
    file.definitions.truncate(1);
    file.references.clear();
    file.definitions[0].document_id = doc("elsewhere.rs");
    let (chunk0, first) = file.chunks[0].clone();
    let mut second = first.clone();
    second.part = 1;
    second.parts = 2;
    file.chunks = vec![(chunk0.clone(), first), (chunk0.clone(), second.clone())];
    index
        .replace_document(&doc(AUTH), &file)
        .await
        .expect("replace");
    let found = find(index, name("Session")).await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].document_id, doc(AUTH), "stored under the document");
    let metas = index
        .chunk_meta(std::slice::from_ref(&chunk0))
        .await
        .expect("meta");
    assert_eq!(metas.get(&chunk0), Some(&second), "the last entry wins");
    index
        .delete_documents(&[doc(AUTH)])
        .await
        .expect("delete by the replaced document");
    assert_eq!(index.count().await.expect("count"), 0);
    assert!(index.chunk_meta(&[chunk0]).await.expect("meta").is_empty());
}

async fn concurrent_replaces(index: &dyn SymbolIndex) {
    let files: Vec<(DocumentId, FileSymbols)> = (0..10)
        .map(|i| {
            let path = format!("gen/file{i}.rs");
            let d = def(&path, 0, &format!("gen::f{i}"), SymbolKind::Function, 1);
            let r = reference(
                &path,
                0,
                ("shared", None),
                Some(&d.def.qualified),
                ReferenceKind::Call,
                2,
            );
            let file = FileSymbols {
                chunks: vec![meta(&d, 0, 1)],
                definitions: vec![d],
                references: vec![r],
            };
            (doc(&path), file)
        })
        .collect();
    let writes = files.iter().map(|(id, file)| async move {
        index
            .replace_document(id, file)
            .await
            .expect("concurrent replace_document")
    });
    futures::future::join_all(writes).await;
    assert_eq!(
        index.count().await.expect("count"),
        10,
        "every replace landed"
    );
    for (i, (_, file)) in files.iter().enumerate() {
        let found = find(index, name(&format!("f{i}"))).await;
        assert_eq!(found, file.definitions, "file {i}");
        let refs = index
            .references_in(&[file.chunks[0].0.clone()])
            .await
            .expect("refs");
        assert_eq!(refs, file.references, "file {i}");
    }
}

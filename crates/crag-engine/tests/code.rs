//! Code intelligence over the in-memory fakes: syntax-aware chunks and their stable ids,
//! re-ingest embedding only what changed, code metadata and filters on results, the symbol
//! graph's gaps (external names known missing at once) and graph expansion.

use std::sync::Arc;

use crag_core::{ChunkFilter, ChunkKind, Document, DocumentId, Query, SymbolKind, TopK};
use crag_engine::{
    ArtifactOrigin, AskRequest, CgragComponents, CgragConfig, ChunkingConfig, CodeConfig,
    CodeGapDetector, Engine, EngineConfig, NoProgress, QueryRequest, Scope, StopReason,
};
use crag_ports::fakes::{
    HashEmbedder, InMemoryKeywordIndex, InMemorySymbolIndex, InMemoryVectorIndex,
};
use crag_ports::{KeywordIndex, SymbolIndex, SymbolLookup};

const AUTH: &str = r#"use std::collections::HashMap;

/// Logs a user in and returns a session token.
pub fn login(name: &str, password: &str) -> Option<String> {
    let user = verify_user(name, password)?;
    let mut claims = HashMap::new();
    claims.insert("sub", user);
    Some(issue_token(&claims))
}

/// Checks a password against the stored hash.
pub fn check_password(stored: &str, given: &str) -> bool {
    stored == given
}
"#;

const USERS: &str = r#"/// Looks a user up and checks the password.
pub fn verify_user(name: &str, password: &str) -> Option<String> {
    if crate::auth::check_password(name, password) {
        Some(name.to_owned())
    } else {
        None
    }
}
"#;

const TOKENS: &str = r#"/// Signs the claims into a token.
pub fn issue_token(claims: &std::collections::HashMap<&str, String>) -> String {
    format!("token-{}", claims.len())
}
"#;

struct Fixture {
    engine: Engine,
    embedder: Arc<HashEmbedder>,
    keywords: Arc<InMemoryKeywordIndex>,
    symbols: Arc<InMemorySymbolIndex>,
}

fn fixture(code: CodeConfig) -> Fixture {
    let embedder = Arc::new(HashEmbedder::new(64));
    let keywords = Arc::new(InMemoryKeywordIndex::default());
    let symbols = Arc::new(InMemorySymbolIndex::default());
    let engine = Engine::new(
        embedder.clone(),
        Arc::new(InMemoryVectorIndex::new(64)),
        keywords.clone(),
        EngineConfig {
            chunking: ChunkingConfig {
                chunk_tokens: 200,
                overlap_tokens: 16,
            },
            code,
            ..EngineConfig::default()
        },
    )
    .unwrap()
    .with_symbols(symbols.clone());
    Fixture {
        engine,
        embedder,
        keywords,
        symbols,
    }
}

fn doc(path: &str, text: &str) -> Document {
    let kind = if path.ends_with(".md") {
        ChunkKind::Prose
    } else {
        ChunkKind::Code
    };
    Document::new(DocumentId::new(path).unwrap(), path, path, text, kind).unwrap()
}

async fn ingest(f: &Fixture, docs: Vec<Document>) -> crag_engine::IngestReport {
    f.engine
        .ingest(docs, Vec::new(), &Scope::None, &NoProgress)
        .await
        .unwrap()
}

fn corpus() -> Vec<Document> {
    vec![
        doc("crates/app/src/auth.rs", AUTH),
        doc("crates/app/src/users.rs", USERS),
        doc("crates/app/src/tokens.rs", TOKENS),
        doc(
            "docs/auth.md",
            "Users log in with a name and a password and receive a token.",
        ),
    ]
}

#[tokio::test]
async fn source_files_are_cut_along_their_syntax_with_symbols() {
    let f = fixture(CodeConfig::default());
    let report = ingest(&f, corpus()).await;
    assert_eq!(report.syntax_files, 3, "{report:?}");
    let chunks = f
        .keywords
        .document_chunks(&DocumentId::new("crates/app/src/auth.rs").unwrap())
        .await
        .unwrap();
    let ids: Vec<&str> = chunks.iter().map(|c| c.id.as_str()).collect();
    assert!(
        ids.contains(&"crates/app/src/auth.rs#login"),
        "one chunk per function, keyed by name: {ids:?}"
    );
    assert!(
        ids.contains(&"crates/app/src/auth.rs#check_password"),
        "{ids:?}"
    );
    let login = chunks
        .iter()
        .find(|c| c.id.as_str().ends_with("#login"))
        .unwrap();
    assert!(
        login.text.contains("/// Logs a user in"),
        "doc comment kept"
    );
    assert!(
        !login.text.contains("fn check_password"),
        "one definition per chunk"
    );

    let found = f
        .symbols
        .lookup(&SymbolLookup::Name("verify_user".into()), 5)
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].chunk_id.as_str(),
        "crates/app/src/users.rs#verify_user"
    );
    assert_eq!(found[0].def.kind, SymbolKind::Function);
    assert!(
        found[0].def.qualified.ends_with("users::verify_user"),
        "{:?}",
        found[0].def
    );
}

#[tokio::test]
async fn editing_one_function_reembeds_only_its_chunk() {
    let f = fixture(CodeConfig::default());
    ingest(&f, corpus()).await;
    let before = f
        .keywords
        .document_chunks(&DocumentId::new("crates/app/src/auth.rs").unwrap())
        .await
        .unwrap();
    let embedded_before = f.embedder.texts_embedded();

    let edited = AUTH.replace(
        "stored == given",
        "stored.len() == given.len() && stored == given",
    );
    let report = ingest(&f, vec![doc("crates/app/src/auth.rs", &edited)]).await;
    assert_eq!(report.documents_updated, 1);
    assert_eq!(
        report.chunks_embedded, 1,
        "only check_password changed: {report:?}"
    );
    assert_eq!(f.embedder.texts_embedded() - embedded_before, 1);

    let after = f
        .keywords
        .document_chunks(&DocumentId::new("crates/app/src/auth.rs").unwrap())
        .await
        .unwrap();
    let ids = |v: &[crag_core::Chunk]| v.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&before), ids(&after), "chunk ids are stable");
    let changed: Vec<&str> = before
        .iter()
        .zip(&after)
        .filter(|(b, a)| b.text != a.text)
        .map(|(b, _)| b.id.as_str())
        .collect();
    assert_eq!(changed, vec!["crates/app/src/auth.rs#check_password"]);
}

#[tokio::test]
async fn results_carry_code_metadata_and_code_filters_apply() {
    let f = fixture(CodeConfig::default());
    ingest(&f, corpus()).await;
    let q = Query::new("verify user password").unwrap();
    let k = TopK::new(10).unwrap();
    let all = f.engine.retrieve(&q, k).await.unwrap();
    let code_hit = all
        .hits
        .iter()
        .find(|h| h.chunk.kind == ChunkKind::Code)
        .expect("a code hit");
    let meta = code_hit
        .chunk
        .code
        .as_ref()
        .expect("code metadata on code hits");
    assert_eq!(meta.language, "rust");
    assert!(all.hits.iter().any(|h| h.chunk.kind == ChunkKind::Prose));

    let rust_functions = ChunkFilter {
        languages: vec!["rust".into()],
        symbol_kinds: vec![SymbolKind::Function],
        ..ChunkFilter::default()
    };
    let only = f
        .engine
        .retrieve_with(&q, k, &rust_functions)
        .await
        .unwrap();
    assert!(!only.hits.is_empty());
    assert!(only.hits.iter().all(|h| h
        .chunk
        .code
        .as_ref()
        .is_some_and(|c| c.language == "rust" && c.symbol_kind == SymbolKind::Function)));
    let python = ChunkFilter {
        languages: vec!["python".into()],
        ..ChunkFilter::default()
    };
    assert!(f
        .engine
        .retrieve_with(&q, k, &python)
        .await
        .unwrap()
        .hits
        .is_empty());
}

#[tokio::test]
async fn deleting_a_file_removes_its_symbols() {
    let f = fixture(CodeConfig::default());
    ingest(&f, corpus()).await;
    let before = f.symbols.count().await.unwrap();
    assert!(f
        .engine
        .delete_document(&DocumentId::new("crates/app/src/tokens.rs").unwrap())
        .await
        .unwrap());
    assert!(f.symbols.count().await.unwrap() < before);
    assert!(f
        .symbols
        .lookup(&SymbolLookup::Name("issue_token".into()), 5)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn symbol_gaps_fetch_definitions_and_know_external_names_missing() {
    let f = fixture(CodeConfig::default());
    ingest(&f, corpus()).await;
    let symbols: Arc<dyn SymbolIndex> = f.symbols.clone();
    let engine = f
        .engine
        .with_cgrag(CgragComponents {
            detector: Arc::new(CodeGapDetector::with_symbols(symbols)),
            sessions: None,
            config: CgragConfig::default(),
        })
        .unwrap();
    let mut request = AskRequest::new(
        Query::new("logs a user in and returns a session token").unwrap(),
        TopK::new(1).unwrap(),
    );
    request.use_crag = false;
    let outcome = engine.ask(&request).await.unwrap();
    let ids: Vec<&str> = outcome
        .artifacts
        .iter()
        .map(|a| a.chunk.id.as_str())
        .collect();
    assert!(ids.contains(&"crates/app/src/auth.rs#login"), "{ids:?}");
    assert!(
        ids.contains(&"crates/app/src/users.rs#verify_user")
            && ids.contains(&"crates/app/src/tokens.rs#issue_token")
            && ids.contains(&"crates/app/src/auth.rs#check_password"),
        "the callees' definitions were fetched: {ids:?} {:?}",
        outcome.passes
    );
    let fetched: Vec<&str> = outcome
        .passes
        .iter()
        .flat_map(|p| p.retrieved.iter())
        .map(|r| r.lookup)
        .collect();
    assert!(fetched.iter().all(|l| *l == "symbol_index"), "{fetched:?}");
    // `to_owned` (called by `verify_user`): defined nowhere in the corpus, so known missing at
    // once, never searched (`new`, `insert` are built-ins, never gaps at all).
    let skipped: Vec<&str> = outcome
        .passes
        .iter()
        .flat_map(|p| &p.skipped)
        .map(String::as_str)
        .collect();
    assert!(skipped.contains(&"to_owned"), "{:?}", outcome.passes);
    let searched: Vec<&str> = outcome
        .passes
        .iter()
        .flat_map(|p| p.retrieved.iter().map(|r| r.gap.as_str()))
        .collect();
    assert!(!searched.contains(&"to_owned"), "{searched:?}");
    assert!(outcome.gaps_unresolved > 0);
    assert_ne!(outcome.stop, StopReason::DetectorFailed);
    assert!(outcome
        .artifacts
        .iter()
        .all(|a| a.origin != ArtifactOrigin::Web));
}

#[tokio::test]
async fn graph_expansion_adds_the_definitions_a_result_calls() {
    let f = fixture(CodeConfig {
        expand_depth: 1,
        expand_budget: 4,
        ..CodeConfig::default()
    });
    ingest(&f, corpus()).await;
    let mut request = QueryRequest::new(
        Query::new("logs a user in and returns a session token").unwrap(),
        TopK::new(1).unwrap(),
    );
    request.use_crag = false;
    let outcome = f.engine.query(&request).await.unwrap();
    let first = &outcome.artifacts[0];
    assert_eq!(first.chunk.id.as_str(), "crates/app/src/auth.rs#login");
    let graph: Vec<&str> = outcome
        .artifacts
        .iter()
        .filter(|a| a.origin == ArtifactOrigin::Graph)
        .map(|a| a.chunk.id.as_str())
        .collect();
    assert!(
        graph.contains(&"crates/app/src/users.rs#verify_user"),
        "{graph:?}"
    );
    assert!(
        graph.contains(&"crates/app/src/tokens.rs#issue_token"),
        "{graph:?}"
    );

    // Off by default.
    let plain = fixture(CodeConfig::default());
    ingest(&plain, corpus()).await;
    let outcome = plain.engine.query(&request).await.unwrap();
    assert!(outcome
        .artifacts
        .iter()
        .all(|a| a.origin != ArtifactOrigin::Graph));
}

#[tokio::test]
async fn syntax_chunks_can_be_switched_off() {
    let f = fixture(CodeConfig {
        syntax_chunks: false,
        ..CodeConfig::default()
    });
    let report = ingest(&f, corpus()).await;
    assert_eq!(report.syntax_files, 0);
    assert_eq!(f.symbols.count().await.unwrap(), 0);
    let chunks = f
        .keywords
        .document_chunks(&DocumentId::new("crates/app/src/auth.rs").unwrap())
        .await
        .unwrap();
    assert_eq!(chunks[0].id.as_str(), "crates/app/src/auth.rs#0");
}

#[tokio::test]
async fn of_several_definitions_the_nearest_is_fetched() {
    let f = fixture(CodeConfig::default());
    ingest(
        &f,
        vec![
            doc(
                "crates/a/src/run.rs",
                "/// Runs the job of crate a.\npub fn run_job() -> u32 {\n    helper_step(1)\n}\n",
            ),
            doc(
                "crates/a/src/util.rs",
                "pub fn helper_step(x: u32) -> u32 {\n    x + 1\n}\n",
            ),
            doc(
                "crates/b/src/util.rs",
                "pub fn helper_step(x: u32) -> u32 {\n    x * 2\n}\n",
            ),
        ],
    )
    .await;
    let symbols: Arc<dyn SymbolIndex> = f.symbols.clone();
    let engine = f
        .engine
        .with_cgrag(CgragComponents {
            detector: Arc::new(CodeGapDetector::with_symbols(symbols)),
            sessions: None,
            config: CgragConfig::default(),
        })
        .unwrap();
    let mut request = AskRequest::new(
        Query::new("runs the job of crate a").unwrap(),
        TopK::new(1).unwrap(),
    );
    request.use_crag = false;
    let outcome = engine.ask(&request).await.unwrap();
    let gaps: Vec<&str> = outcome.passes[0].gaps.iter().map(String::as_str).collect();
    assert_eq!(gaps, ["helper_step in crates/a/src/util.rs"]);
    let ids: Vec<&str> = outcome
        .artifacts
        .iter()
        .map(|a| a.chunk.id.as_str())
        .collect();
    assert!(ids.contains(&"crates/a/src/util.rs#helper_step"), "{ids:?}");
    assert!(
        !ids.contains(&"crates/b/src/util.rs#helper_step"),
        "{ids:?}"
    );
}

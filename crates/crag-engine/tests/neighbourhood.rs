//! CGRAG's symbol gaps with their one-hop neighbourhood over the in-memory fakes: the order and
//! the room of the neighbours, the session's traversed subgraph (a follow-up does not walk the
//! graph again) and the `cgrag_*` metrics an ask moves.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use crag_core::{
    ChunkId, ChunkKind, CodeMeta, Document, DocumentId, FileSymbols, Query, SessionId,
    StoredReference, StoredSymbol, TopK,
};
use crag_engine::{
    AskOutcome, AskRequest, CgragComponents, CgragConfig, ChunkingConfig, Engine, EngineConfig,
    LlmGapDetector, NoProgress, Scope, SessionSourceConfig, SourcesConfig,
};
use crag_ports::fakes::{
    HashEmbedder, InMemoryKeywordIndex, InMemorySessionStore, InMemorySymbolIndex,
    InMemoryVectorIndex, ScriptedLanguageModel,
};
use crag_ports::{Neighbour, PortResult, SessionStore, SymbolIndex, SymbolLookup};

const FILES: &[(&str, &str)] = &[
    (
        "src/auth.rs",
        "/// Logs a user in and returns a session token.\npub fn login(name: &str, password: &str) -> String {\n    verify_user(name, password);\n    issue_token(name)\n}\n",
    ),
    (
        "src/users.rs",
        "/// Looks a user up and checks the password.\npub fn verify_user(name: &str, password: &str) -> bool {\n    let record = lookup_record(name);\n    check_password(&record, password)\n}\n",
    ),
    (
        "src/db.rs",
        "/// Reads the stored record of a user.\npub fn lookup_record(name: &str) -> String {\n    format!(\"record of {name}\")\n}\n",
    ),
    (
        "src/hash.rs",
        "/// Compares a record with a password.\npub fn check_password(record: &str, password: &str) -> bool {\n    record.ends_with(password)\n}\n",
    ),
    (
        "src/tokens.rs",
        "/// Signs a token for a name.\npub fn issue_token(name: &str) -> String {\n    format!(\"token-{name}\")\n}\n",
    ),
    (
        "src/admin.rs",
        "/// Resets an account after checking it.\npub fn reset_account(name: &str) -> bool {\n    verify_user(name, \"\")\n}\n",
    ),
];

const VERIFY_USER: &str = "src/users.rs#verify_user";

/// The in-memory symbol index, counting the neighbourhood walks.
#[derive(Debug, Default)]
struct CountingSymbols {
    inner: InMemorySymbolIndex,
    walks: AtomicUsize,
}

#[async_trait]
impl SymbolIndex for CountingSymbols {
    async fn replace_document(&self, document: &DocumentId, s: &FileSymbols) -> PortResult<()> {
        self.inner.replace_document(document, s).await
    }
    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()> {
        self.inner.delete_documents(ids).await
    }
    async fn lookup(&self, lookup: &SymbolLookup, limit: usize) -> PortResult<Vec<StoredSymbol>> {
        self.inner.lookup(lookup, limit).await
    }
    async fn definitions_in(&self, chunks: &[ChunkId]) -> PortResult<Vec<StoredSymbol>> {
        self.inner.definitions_in(chunks).await
    }
    async fn references_in(&self, chunks: &[ChunkId]) -> PortResult<Vec<StoredReference>> {
        self.inner.references_in(chunks).await
    }
    async fn neighbours(&self, q: &str, hops: u8, limit: usize) -> PortResult<Vec<Neighbour>> {
        self.walks.fetch_add(1, Ordering::SeqCst);
        self.inner.neighbours(q, hops, limit).await
    }
    async fn chunk_meta(&self, chunks: &[ChunkId]) -> PortResult<HashMap<ChunkId, CodeMeta>> {
        self.inner.chunk_meta(chunks).await
    }
    async fn count(&self) -> PortResult<usize> {
        self.inner.count().await
    }
}

/// An engine over `FILES` whose detector names `verify_user` after pass 1 and nothing after
/// pass 2, `asks` times over.
async fn engine(
    config: CgragConfig,
    sessions: Option<Arc<dyn SessionStore>>,
    asks: usize,
) -> (Engine, Arc<CountingSymbols>) {
    let symbols = Arc::new(CountingSymbols::default());
    let engine = Engine::new(
        Arc::new(HashEmbedder::new(64)),
        Arc::new(InMemoryVectorIndex::new(64)),
        Arc::new(InMemoryKeywordIndex::default()),
        EngineConfig {
            chunking: ChunkingConfig {
                chunk_tokens: 200,
                overlap_tokens: 16,
            },
            ..EngineConfig::default()
        },
    )
    .unwrap()
    .with_symbols(symbols.clone());
    let docs = FILES
        .iter()
        .map(|(path, text)| {
            Document::new(
                DocumentId::new(*path).unwrap(),
                *path,
                *path,
                *text,
                ChunkKind::Code,
            )
            .unwrap()
        })
        .collect();
    engine
        .ingest(docs, Vec::new(), &Scope::None, &NoProgress)
        .await
        .unwrap();
    let replies = (0..asks).flat_map(|_| {
        [
            Ok("ANSWER: login checks the user.\nMISSING:\n- verify_user".to_owned()),
            Ok("ANSWER: it looks the record up and checks it.\nMISSING: NONE".to_owned()),
        ]
    });
    let model = Arc::new(ScriptedLanguageModel::new(replies));
    let engine = engine
        .with_cgrag(CgragComponents {
            detector: Arc::new(LlmGapDetector::new(model, 200, false)),
            sessions,
            config,
        })
        .unwrap();
    (engine, symbols)
}

fn ask(session: Option<SessionId>) -> AskRequest {
    AskRequest {
        use_crag: false,
        session,
        ..AskRequest::new(
            Query::new("logs a user in and returns a session token").unwrap(),
            TopK::new(1).unwrap(),
        )
    }
}

/// The chunks fetched for `verify_user` in pass 2, and its neighbours.
fn fetched(o: &AskOutcome) -> (Vec<String>, Vec<String>) {
    let gap = &o.passes[1].retrieved[0];
    assert_eq!(gap.gap, "verify_user");
    assert_eq!(gap.lookup, "symbol_index");
    (gap.chunk_ids.clone(), gap.neighbour_ids.clone())
}

fn context_ids(o: &AskOutcome) -> Vec<&str> {
    o.artifacts.iter().map(|a| a.chunk.id.as_str()).collect()
}

#[tokio::test]
async fn a_symbol_gap_brings_its_callees_then_its_callers_after_the_definition() {
    let (e, symbols) = engine(CgragConfig::default(), None, 1).await;
    let o = e.ask(&ask(None)).await.unwrap();
    assert_eq!(o.passes_used(), 2);
    let (definition, neighbours) = fetched(&o);
    assert_eq!(definition, [VERIFY_USER]);
    // Callees (`db::lookup_record`, `hash::check_password`: the graph's order) before the
    // caller not yet in the context (reset_account; login is pass 1's result, not fetched again).
    assert_eq!(
        neighbours,
        [
            "src/db.rs#lookup_record",
            "src/hash.rs#check_password",
            "src/admin.rs#reset_account"
        ],
        "{:?}",
        o.passes
    );
    let distinct: HashSet<&String> = definition.iter().chain(&neighbours).collect();
    assert_eq!(distinct.len(), 4, "no chunk twice");
    assert_eq!(o.passes[1].neighbour_chunks(), 3);
    assert_eq!(o.passes[0].neighbour_chunks(), 0);
    // The next context holds them after the definition.
    let ids = context_ids(&o);
    let at = |id: &str| ids.iter().position(|i| *i == id).unwrap();
    assert!(at(VERIFY_USER) < at("src/db.rs#lookup_record"), "{ids:?}");
    assert!(at("src/hash.rs#check_password") < at("src/admin.rs#reset_account"));
    assert_eq!(symbols.walks.load(Ordering::SeqCst), 1);
    assert_eq!((o.gaps_resolved, o.gaps_unresolved), (1, 0));
}

#[tokio::test]
async fn the_neighbours_stop_when_the_room_is_spent_and_can_be_switched_off() {
    // Pass 1's chunk and the definition leave room for one chunk: the first callee.
    let small = CgragConfig {
        context_chunks: 3,
        ..CgragConfig::default()
    };
    let (e, _) = engine(small, None, 1).await;
    let o = e.ask(&ask(None)).await.unwrap();
    let (definition, neighbours) = fetched(&o);
    assert_eq!(definition, [VERIFY_USER]);
    assert_eq!(neighbours, ["src/db.rs#lookup_record"]);
    assert_eq!(o.artifacts.len(), 3);

    // A token limit one short of pass 1's chunk, the definition and the first callee: the
    // definition is kept, the first callee does not fit and the neighbours stop there (the
    // smaller ones after it are not tried), the context within the limit.
    let (e, _) = engine(CgragConfig::default(), None, 1).await;
    let o = e.ask(&ask(None)).await.unwrap();
    let tokens = |id: &str| {
        o.artifacts
            .iter()
            .find(|a| a.chunk.id.as_str() == id)
            .map(|a| a.tokens)
            .unwrap()
    };
    let limit =
        tokens("src/auth.rs#login") + tokens(VERIFY_USER) + tokens("src/db.rs#lookup_record") - 1;
    assert!(limit >= 64, "the smallest limit allowed is 64: {limit}");
    let tight = CgragConfig {
        context_tokens: limit,
        ..CgragConfig::default()
    };
    let (e, _) = engine(tight.clone(), None, 1).await;
    let o = e.ask(&ask(None)).await.unwrap();
    let (definition, neighbours) = fetched(&o);
    assert_eq!(definition, [VERIFY_USER]);
    assert!(neighbours.is_empty(), "{neighbours:?}");
    assert!(o.tokens_used <= tight.context_tokens, "{}", o.tokens_used);

    let off = CgragConfig {
        neighbourhood: 0,
        ..CgragConfig::default()
    };
    let (e, symbols) = engine(off, None, 1).await;
    let o = e.ask(&ask(None)).await.unwrap();
    let (definition, neighbours) = fetched(&o);
    assert_eq!((definition.len(), neighbours.len()), (1, 0));
    assert_eq!(
        symbols.walks.load(Ordering::SeqCst),
        0,
        "the graph is not walked"
    );

    let one = CgragConfig {
        neighbourhood: 1,
        ..CgragConfig::default()
    };
    let (e, _) = engine(one, None, 1).await;
    let (_, neighbours) = fetched(&e.ask(&ask(None)).await.unwrap());
    assert_eq!(neighbours, ["src/db.rs#lookup_record"], "at most one");
}

#[tokio::test]
async fn a_follow_up_takes_the_traversed_subgraph_from_the_session() {
    let store = Arc::new(InMemorySessionStore::default());
    let config = CgragConfig {
        // The follow-up starts without the cached context, so it needs verify_user again.
        sources: SourcesConfig {
            session: SessionSourceConfig {
                enabled: false,
                ..Default::default()
            },
            ..SourcesConfig::default()
        },
        ..CgragConfig::default()
    };
    let (e, symbols) = engine(config, Some(store.clone()), 3).await;
    let id = SessionId::from_bits(0x42);
    let first = e.ask(&ask(Some(id))).await.unwrap();
    assert_eq!(symbols.walks.load(Ordering::SeqCst), 1);
    let session = store.load(id).await.unwrap().unwrap();
    assert_eq!(session.symbols.len(), 1, "{:?}", session.symbols);
    let record = &session.symbols[0];
    assert_eq!(record.definition, [VERIFY_USER]);
    // The whole neighbourhood, login included: the request held it already, so it was not
    // fetched, but a follow-up may not hold it.
    let (_, mut neighbours) = fetched(&first);
    neighbours.push("src/auth.rs#login".into());
    assert_eq!(record.neighbours, neighbours);

    let follow_up = e.ask(&ask(Some(id))).await.unwrap();
    assert_eq!(
        symbols.walks.load(Ordering::SeqCst),
        1,
        "the follow-up does not walk the graph again"
    );
    assert_eq!(
        fetched(&follow_up),
        fetched(&first),
        "the same neighbourhood"
    );

    // Another session has no record: it walks the graph.
    e.ask(&ask(Some(SessionId::from_bits(0x43)))).await.unwrap();
    assert_eq!(symbols.walks.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_ask_moves_the_cgrag_metrics() {
    let (e, _) = engine(CgragConfig::default(), None, 2).await;
    let before = e.metrics().render().unwrap();
    assert!(!before.contains("cgrag_passes_count 1"), "{before}");
    e.ask(&ask(None)).await.unwrap();
    let text = e.metrics().render().unwrap();
    for line in [
        "cgrag_passes_count 1",
        "cgrag_passes_sum 2",
        "cgrag_passes_bucket{le=\"1\"} 0",
        "cgrag_passes_bucket{le=\"2\"} 1",
        "cgrag_gaps_total{outcome=\"identified\"} 1",
        "cgrag_gaps_total{outcome=\"resolved\"} 1",
        "cgrag_gaps_total{outcome=\"unresolved\"} 0",
        "cgrag_asks_total{stop=\"no_gaps\"} 1",
        "cgrag_neighbour_chunks_total 3",
    ] {
        assert!(text.contains(line), "{line} missing from\n{text}");
    }
    e.ask(&ask(None)).await.unwrap();
    let text = e.metrics().render().unwrap();
    assert!(text.contains("cgrag_passes_count 2"), "{text}");
    assert!(text.contains("cgrag_gaps_total{outcome=\"resolved\"} 2"));
}

//! crag composed with its shared stores in Postgres (`[storage] graphs = "postgres"`, the
//! sessions at the same URL) over the real embedded stack: a replica finds the definitions
//! another one ingested and embeds queries with the model the shared index records;
//! collections are listed, found and deleted through every replica, their graphs kept apart
//! and dropped with them. Postgres is
//! `CRAG_TEST_POSTGRES_URL` or a throwaway cluster started by `scripts/pg-cluster.sh` (the
//! test fails, never passes, when none can be had).

use crag_ports::testsuite::postgres_url;
use std::time::{SystemTime, UNIX_EPOCH};

use crag_app::compose::EMBEDDING_MODEL_FILE;
use crag_app::{Api, Caller, Code, Config, DocumentParams, TokenSet};
use crag_config::EmbedderPrecision;
use crag_graphs::{drop_schema, PostgresGraphs, PostgresGraphsConfig};
use crag_ports::{SymbolIndex, SymbolLookup, TermGraph};

const AUTH_RS: &str = "\
pub struct Session {
    user: String,
}

impl Session {
    /// Checks the user of the session.
    pub fn verify_user(&self) -> bool {
        !self.user.is_empty()
    }
}
";

const DB_RS: &str = "\
pub fn lookup_row(key: u64) -> Option<u64> {
    key.checked_mul(2)
}
";

/// A document as the API takes it; `.rs` files are code, cut along their syntax.
fn doc(id: &str, text: &str) -> DocumentParams {
    DocumentParams {
        id: id.into(),
        text: text.into(),
        kind: id.ends_with(".rs").then(|| "code".to_owned()),
        ..DocumentParams::default()
    }
}

async fn defined(index: &dyn SymbolIndex, name: &str) -> Vec<(String, String)> {
    index
        .lookup(&SymbolLookup::Name(name.into()), 10)
        .await
        .unwrap()
        .into_iter()
        .map(|s| (s.path, s.def.qualified))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_the_symbol_index_and_term_graph_in_postgres() {
    let url = postgres_url();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let schema = format!("test/app/{nanos:x}-{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    // One catalogue for every replica: both legs in one LanceDB database (a directory here,
    // an object store in production), the graphs in Postgres.
    let vectors = dir.path().join("shared").display().to_string();
    let text = format!(
        "vectors_uri = {vectors:?}\n[storage]\nkeyword = \"lancedb\"\ngraphs = \"postgres\"\n\
         read_consistency_ms = 0\n\
         postgres_url = {url:?}\npostgres_schema = {schema:?}\n\
         [knowledge_graph]\nenabled = true\n[sessions]\nbackend = \"postgres\"\n\
         [embedder]\nprecision = \"int8\"\n"
    );
    let writer = Config {
        data_dir: dir.path().join("a"),
        ..Config::parse(&text).unwrap()
    };
    let engine = crag_app::compose::engine(&writer).await.unwrap();
    let sessions = engine.cgrag().sessions.as_ref().expect("sessions");
    assert_eq!(sessions.backend(), "postgres", "at [storage] postgres_url");
    let api = Api::new(engine, &writer, TokenSet::default());
    api.ingest(vec![
        doc("src/auth.rs", AUTH_RS),
        doc(
            "notes.md",
            "Sessions verify the user before any tumour sample is read.",
        ),
    ])
    .await
    .unwrap();
    let symbols = api.engine().symbol_index().expect("a symbol index").clone();
    let auth = defined(symbols.as_ref(), "verify_user").await;
    assert!(
        auth.len() == 1
            && auth[0].0 == "src/auth.rs"
            && auth[0].1.ends_with("Session::verify_user"),
        "the definition, through the symbol index: {auth:?}"
    );

    // A replica with an empty data directory of its own finds what the writer ingested.
    // With `precision = "auto"` and nothing in its data directory, it reads the model the
    // index was built with from beside the shared tables (it would assume float32 for an
    // index it has no record of).
    let mut replica = Config {
        data_dir: dir.path().join("b"),
        ..writer.clone()
    };
    replica.embedder.precision = EmbedderPrecision::Auto;
    let engine = crag_app::compose::engine_with(&replica, None, Some(api.engine()))
        .await
        .unwrap();
    assert_eq!(engine.embedder().model_id(), "all-MiniLM-L6-v2-int8");
    let copied = std::fs::read_to_string(replica.data_dir.join(EMBEDDING_MODEL_FILE)).unwrap();
    assert_eq!(
        copied.trim(),
        "all-MiniLM-L6-v2-int8",
        "this machine's copy"
    );
    let seen = engine.symbol_index().expect("a symbol index");
    assert_eq!(defined(seen.as_ref(), "verify_user").await, auth);
    for data in ["a", "b"] {
        for file in ["symbols.sqlite", "terms.sqlite"] {
            assert!(!dir.path().join(data).join(file).exists(), "{data}/{file}");
        }
    }
    let config = PostgresGraphsConfig {
        schema: schema.clone(),
        ..PostgresGraphsConfig::default()
    };
    let graphs = PostgresGraphs::connect(&url, &config).await.unwrap();
    let documents = graphs.term_graph().documents().await.unwrap();
    assert!(
        documents.iter().any(|d| d.as_str() == "notes.md"),
        "the prose's terms are in Postgres: {documents:?}"
    );

    // Collections are in the shared catalogue: one created through the writer is listed and
    // searched through the replica.
    let replica_api = Api::new(engine, &replica, TokenSet::default());
    let admin = Caller::default();
    api.create_collection(&admin, "code", serde_json::Map::new())
        .await
        .unwrap();
    assert_eq!(
        replica_api.list_collections(&admin).await.unwrap(),
        ["default", "code"]
    );
    let duplicate = replica_api
        .create_collection(&admin, "code", serde_json::Map::new())
        .await
        .unwrap_err();
    assert_eq!(duplicate.code, Code::AlreadyExists, "{duplicate}");
    let code = api.in_collection(&admin, Some("code")).await.unwrap();
    code.ingest(vec![doc("src/db.rs", DB_RS)]).await.unwrap();
    let code_there = replica_api
        .in_collection(&admin, Some("code"))
        .await
        .unwrap();
    let there = code_there.engine().symbol_index().unwrap().clone();
    assert_eq!(defined(there.as_ref(), "lookup_row").await.len(), 1);
    drop((code_there, there));

    // A collection's graphs are a schema of their own, dropped with it.
    let in_code = code.engine().symbol_index().unwrap().clone();
    let rows = defined(in_code.as_ref(), "lookup_row").await;
    assert!(
        rows.len() == 1 && rows[0].0 == "src/db.rs",
        "in the collection: {rows:?}"
    );
    assert!(defined(in_code.as_ref(), "verify_user").await.is_empty());
    assert!(defined(symbols.as_ref(), "lookup_row").await.is_empty());
    drop((code, in_code));
    api.delete_collection(&admin, "code").await.unwrap();
    // Gone for the replica too (it asks the catalogue again: read_consistency_ms = 0).
    let gone = replica_api
        .in_collection(&admin, Some("code"))
        .await
        .unwrap_err();
    assert_eq!(gone.code, Code::NotFound, "{gone}");
    assert_eq!(
        replica_api.list_collections(&admin).await.unwrap(),
        ["default"]
    );
    let collection_schema = format!("{schema}/code");
    assert!(
        !drop_schema(&url, &collection_schema).await.unwrap(),
        "{collection_schema} was dropped with the collection"
    );
    assert!(drop_schema(&url, &schema).await.unwrap());
}

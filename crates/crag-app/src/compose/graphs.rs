//! The symbol index and the term graph where `[storage] graphs` keeps them: SQLite files in
//! the data directory, or a schema of the Postgres database at `[storage] postgres_url` that
//! replicas share (a named collection's in a schema of its own).

use std::path::Path;
use std::sync::Arc;

use crag_graphs::{
    drop_schema, PostgresGraphs, PostgresGraphsConfig, SqliteSymbolIndex, SqliteTermGraph,
};
use crag_ports::{SymbolIndex, TermGraph};

use super::error::bail;
use super::{Context as _, GraphStore, KeywordStore, Result, SYMBOLS_FILE, TERMS_FILE};
use crate::Config;

/// The symbol index and, when `terms`, the term graph of the collection `config` describes
/// (its `data_dir`, or its `[storage] postgres_schema`).
pub(crate) async fn open(
    config: &Config,
    data_dir: &Path,
    terms: bool,
) -> Result<(Arc<dyn SymbolIndex>, Option<Arc<dyn TermGraph>>)> {
    let storage = &config.adapters.storage;
    match storage.graphs {
        GraphStore::Sqlite => {
            let symbols_path = data_dir.join(SYMBOLS_FILE);
            let symbols = SqliteSymbolIndex::open(&symbols_path)
                .await
                .with_context(|| {
                    format!("cannot open the symbol index {}", symbols_path.display())
                })?;
            let graph: Option<Arc<dyn TermGraph>> = if terms {
                let terms_path = data_dir.join(TERMS_FILE);
                let graph = SqliteTermGraph::open(&terms_path).await.with_context(|| {
                    format!("cannot open the term graph {}", terms_path.display())
                })?;
                Some(Arc::new(graph))
            } else {
                None
            };
            Ok((Arc::new(symbols), graph))
        }
        GraphStore::Postgres => {
            let graphs = connect(config).await?;
            let graph: Option<Arc<dyn TermGraph>> = if terms {
                Some(Arc::new(graphs.term_graph()))
            } else {
                None
            };
            Ok((Arc::new(graphs.symbol_index()), graph))
        }
    }
}

/// The Postgres schema `storage.postgres_schema` at `storage.postgres_url`, created and
/// migrated when needed. Refused unless the catalogue of documents (the keyword index) is
/// shared too: ingest and reconcile drop from the graphs the documents their catalogue does
/// not hold, which would be every other process's.
async fn connect(config: &Config) -> Result<PostgresGraphs> {
    let storage = &config.adapters.storage;
    let url = storage.graphs_url()?;
    let schema = storage.graphs_schema()?;
    if storage.keyword != KeywordStore::Lancedb || config.vectors_uri.is_none() {
        bail!(
            "storage.graphs = \"postgres\" shares the graphs between processes, which must \
             share the catalogue of documents too: set storage.keyword = \"lancedb\" and \
             vectors_uri (each process's own keyword index would drop the others' documents \
             from the graphs at its next ingest)"
        );
    }
    let config = PostgresGraphsConfig {
        schema: schema.to_owned(),
        ..PostgresGraphsConfig::default()
    };
    PostgresGraphs::connect(&url, &config)
        .await
        .with_context(|| {
            format!(
                "cannot open the symbol index and term graph in Postgres schema {schema} \
                 (storage.postgres_url, storage.postgres_schema)"
            )
        })
}

/// Drops the graphs of collection `name` of `base` when they are in Postgres (SQLite's are
/// files in the collection's directory, removed with it); whether there were any.
pub async fn drop_collection_graphs(base: &Config, name: &str) -> Result<bool> {
    let storage = &base.adapters.storage;
    if storage.graphs != GraphStore::Postgres {
        return Ok(false);
    }
    let url = storage.graphs_url()?;
    let schema = storage.collection_schema(name);
    drop_schema(&url, &schema)
        .await
        .with_context(|| format!("cannot drop the Postgres schema {schema} of collection `{name}`"))
}

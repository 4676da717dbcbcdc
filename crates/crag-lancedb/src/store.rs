//! Where a LanceDB database lives and how it is reached: a local directory or an object
//! store (`s3://bucket/prefix`), the object store's options, and how stale a read may be when
//! other processes write the same tables.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use arrow_schema::SchemaRef;
use crag_ports::{PortError, PortResult};
use lancedb::{Connection, Table};

use crate::error::map_lance_error;
use crate::CacheBudget;

/// How a LanceDB database is opened, beyond its URI.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreOptions {
    /// The object store's options, passed to LanceDB as they are (keys as LanceDB names
    /// them: `aws_endpoint`, `aws_region`, `allow_http`, ...). Credentials are best left to
    /// the environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`), which LanceDB reads.
    pub storage_options: BTreeMap<String, String>,
    /// How long a table handle may serve a version another process has since replaced:
    /// `None` never looks for other writers (one process owns the database), `Some(0)`
    /// looks before every read, `Some(d)` at most every `d`. Writes through this handle are
    /// seen at once either way.
    pub read_consistency: Option<Duration>,
    /// Budgets of LanceDB's caches.
    pub budget: CacheBudget,
}

impl StoreOptions {
    /// Local-directory defaults with these cache budgets.
    pub fn with_budget(budget: CacheBudget) -> Self {
        Self {
            budget,
            ..Self::default()
        }
    }
}

/// Connects to the LanceDB database at `uri` with `options`.
pub(crate) async fn connect(uri: &str, options: &StoreOptions) -> PortResult<Connection> {
    let mut builder = lancedb::connect(uri)
        .session(Arc::new(options.budget.session()))
        .storage_options(options.storage_options.clone());
    if let Some(interval) = options.read_consistency {
        builder = builder.read_consistency_interval(interval);
    }
    builder
        .execute()
        .await
        .map_err(map_lance_error("failed to connect to the LanceDB database"))
}

/// Drops every table of the LanceDB database at `uri` (a collection's, when the collection is
/// deleted): what a local directory's removal does, for an object store too.
pub async fn drop_database(uri: &str, options: &StoreOptions) -> PortResult<()> {
    connect(uri, options)
        .await?
        .drop_all_tables(&[])
        .await
        .map_err(map_lance_error("failed to drop the database's tables"))
}

/// Opens `table`, creating it empty with `schema` if it does not exist (another process
/// creating it meanwhile is fine). `CreateTableMode::ExistOk` is not used: it rejects any
/// difference from the schema with one generic message, where each adapter's own check
/// names what differs. `what` names the table in errors and logs ("vector table").
pub(crate) async fn open_or_create(
    connection: &Connection,
    table: &str,
    schema: SchemaRef,
    what: &'static str,
) -> PortResult<Table> {
    let opened =
        |e| PortError::with_source(crate::error::kind(&e), format!("failed to open {what}"), e);
    match connection.open_table(table).execute().await {
        Ok(handle) => return Ok(handle),
        Err(lancedb::Error::TableNotFound { .. }) => {}
        Err(e) => return Err(opened(e)),
    }
    match connection.create_empty_table(table, schema).execute().await {
        Ok(handle) => {
            tracing::info!(table, what, "created table");
            Ok(handle)
        }
        Err(lancedb::Error::TableAlreadyExists { .. }) => {
            connection.open_table(table).execute().await.map_err(opened)
        }
        Err(e) => Err(PortError::with_source(
            crate::error::kind(&e),
            format!("failed to create {what}"),
            e,
        )),
    }
}

//! `[storage]`: how the LanceDB database at `vectors_uri` is reached when it lives in an
//! object store, how stale a read may be when several processes share it, and where the
//! symbol index and the term graph live (SQLite files, or a Postgres schema replicas share).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::compose::error::bail;
use crate::compose::Result;
use crag_lancedb::{CacheBudget, StoreOptions};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// Longest schema name Postgres keeps (longer ones are cut).
const MAX_SCHEMA_LEN: usize = 63;

/// The object store under `vectors_uri` (`s3://bucket/prefix`) and the read consistency of
/// processes sharing it. Credentials come from the environment as LanceDB reads them
/// (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, a profile), never
/// from this file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct StorageSection {
    /// Where the keyword (BM25) leg lives: `tantivy`, a local index in `<data_dir>/keyword`
    /// (the single-machine default); or `lancedb`, LanceDB's full-text index in the database
    /// at `vectors_uri` beside the vectors, which replicas sharing an object store share.
    pub keyword: KeywordStore,
    /// An S3-compatible server's URL (MinIO, moto, Ceph, R2); unset: AWS's own.
    #[schemars(example = &"http://127.0.0.1:5391")]
    pub endpoint: Option<String>,
    /// The bucket's region (unset: the environment's `AWS_REGION`, else LanceDB asks S3).
    #[schemars(example = &"eu-west-1")]
    pub region: Option<String>,
    /// Allows an `http://` endpoint (a server on loopback or a private network).
    pub allow_http: bool,
    /// How long a process may serve a table version another process has replaced, in
    /// milliseconds: unset (one process owns the database) never looks for other writers;
    /// 0 looks before every read; replicas sharing one database set it (e.g. 1000).
    #[schemars(example = &1000)]
    pub read_consistency_ms: Option<u64>,
    /// Further object-store options passed to LanceDB unchanged (keys as LanceDB names them,
    /// e.g. `aws_virtual_hosted_style_request`, `timeout`); the typed keys above win.
    pub options: BTreeMap<String, String>,
    /// Where the symbol index and the term graph live: `sqlite`, files in the data directory
    /// (`symbols.sqlite`, `terms.sqlite`; the single-machine default); or `postgres`, the
    /// schema `postgres_schema` of the database at `postgres_url`, which replicas share.
    pub graphs: GraphStore,
    /// The Postgres database of the shared stores (`postgres://user@host/db`; a unix socket:
    /// `?host=/dir`): the graphs with `graphs = "postgres"`, and the sessions with
    /// `[sessions] backend = "postgres"` when `[sessions]` names no URL of its own.
    #[schemars(example = &"postgres://crag@db.internal/crag")]
    pub postgres_url: Option<String>,
    /// Environment variable holding `postgres_url` (keeps passwords out of files); the key
    /// itself wins.
    #[schemars(example = &"CRAG_POSTGRES_URL")]
    pub postgres_url_env: Option<String>,
    /// The Postgres schema of the default collection's symbol index and term graph (created
    /// when missing); a named collection's are in `<postgres_schema>/<name>`.
    pub postgres_schema: String,
}

impl Default for StorageSection {
    fn default() -> Self {
        Self {
            keyword: KeywordStore::default(),
            endpoint: None,
            region: None,
            allow_http: false,
            read_consistency_ms: None,
            options: BTreeMap::new(),
            graphs: GraphStore::default(),
            postgres_url: None,
            postgres_url_env: None,
            postgres_schema: DEFAULT_POSTGRES_SCHEMA.to_owned(),
        }
    }
}

/// The Postgres schema of the default collection's graphs.
pub const DEFAULT_POSTGRES_SCHEMA: &str = "crag";

/// Where the symbol index and the term graph live.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GraphStore {
    /// SQLite files in the data directory, each replica its own.
    #[default]
    Sqlite,
    /// The Postgres database at `postgres_url`, shared by the replicas.
    Postgres,
}

/// The keyword leg's store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeywordStore {
    /// Tantivy in `<data_dir>/keyword`: BM25 over chunks and BM25F over whole documents.
    #[default]
    Tantivy,
    /// LanceDB's full-text index, table `keyword` of the database at `vectors_uri`.
    Lancedb,
}

impl StorageSection {
    /// The Postgres URL of the shared stores: `postgres_url`, else the value of
    /// `$postgres_url_env`; `None` when neither is set. `why` says what needs it, for the error
    /// when the variable named is unset.
    pub fn postgres_url(&self, why: &str) -> Result<Option<String>> {
        if let Some(url) = self.postgres_url.as_deref() {
            if url.trim().is_empty() {
                bail!("storage.postgres_url is empty: leave it out or give the URL");
            }
            return Ok(Some(url.trim().to_owned()));
        }
        let Some(var) = &self.postgres_url_env else {
            return Ok(None);
        };
        match super::key_from_env(Some(var.as_str())) {
            Some(url) => Ok(Some(url.trim().to_owned())),
            None => bail!("{why}: the variable {var} (storage.postgres_url_env) is not set"),
        }
    }

    /// The Postgres URL `graphs = "postgres"` needs.
    pub fn graphs_url(&self) -> Result<String> {
        let why = "storage.graphs = \"postgres\"";
        match self.postgres_url(why)? {
            Some(url) => Ok(url),
            None => bail!("{why} needs storage.postgres_url or storage.postgres_url_env"),
        }
    }

    /// `postgres_schema`, checked: a name Postgres keeps as it is.
    pub fn graphs_schema(&self) -> Result<&str> {
        let schema = self.postgres_schema.as_str();
        if schema.is_empty()
            || schema.len() > MAX_SCHEMA_LEN
            || schema.contains('\0')
            || schema.starts_with("pg_")
        {
            bail!(
                "storage.postgres_schema `{}`: 1 to {MAX_SCHEMA_LEN} bytes, not starting with `pg_`",
                schema.escape_debug()
            );
        }
        Ok(schema)
    }

    /// The Postgres schema of collection `name`'s graphs: `<postgres_schema>/<name>`, or when
    /// that is longer than Postgres keeps, its start and a digest of the whole.
    pub fn collection_schema(&self, name: &str) -> String {
        let full = format!("{}/{name}", self.postgres_schema);
        if full.len() <= MAX_SCHEMA_LEN {
            return full;
        }
        let digest = format!("{:x}", Sha256::digest(full.as_bytes()));
        let mut keep = MAX_SCHEMA_LEN - 13;
        while !full.is_char_boundary(keep) {
            keep -= 1;
        }
        format!("{}~{}", &full[..keep], &digest[..12])
    }

    /// The LanceDB adapter's options: these keys, with the caches held to `budget`.
    pub fn store_options(&self, budget: CacheBudget) -> Result<StoreOptions> {
        let mut storage_options = self.options.clone();
        if let Some(endpoint) = &self.endpoint {
            let url = super::parse_url("storage.endpoint", endpoint)?;
            if url.scheme() == "http" && !self.allow_http {
                bail!("storage.endpoint `{endpoint}` is plain http: set storage.allow_http = true to allow it");
            }
            storage_options.insert("aws_endpoint".into(), endpoint.trim().to_owned());
        }
        if let Some(region) = &self.region {
            if region.trim().is_empty() {
                bail!("storage.region is empty: leave it out or name the region");
            }
            storage_options.insert("aws_region".into(), region.trim().to_owned());
        }
        if self.allow_http {
            storage_options.insert("allow_http".into(), "true".into());
        }
        Ok(StoreOptions {
            storage_options,
            read_consistency: self.read_consistency_ms.map(Duration::from_millis),
            budget,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_keys_become_lancedb_options() {
        let section = StorageSection {
            endpoint: Some("http://127.0.0.1:5391".into()),
            region: Some("us-east-1".into()),
            allow_http: true,
            read_consistency_ms: Some(250),
            keyword: KeywordStore::Lancedb,
            options: BTreeMap::from([("timeout".into(), "30s".into())]),
            ..StorageSection::default()
        };
        let options = section.store_options(CacheBudget::default()).unwrap();
        assert_eq!(
            options.storage_options,
            BTreeMap::from([
                ("allow_http".into(), "true".into()),
                ("aws_endpoint".into(), "http://127.0.0.1:5391".into()),
                ("aws_region".into(), "us-east-1".into()),
                ("timeout".into(), "30s".into()),
            ])
        );
        assert_eq!(options.read_consistency, Some(Duration::from_millis(250)));
    }

    #[test]
    fn plain_http_and_bad_values_are_refused_with_the_key() {
        let mut section = StorageSection {
            endpoint: Some("http://127.0.0.1:5391".into()),
            ..StorageSection::default()
        };
        let err = section.store_options(CacheBudget::default()).unwrap_err();
        assert!(err.to_string().contains("allow_http"), "{err}");
        section.endpoint = Some("not a url".into());
        let err = section.store_options(CacheBudget::default()).unwrap_err();
        assert!(err.to_string().contains("storage.endpoint"), "{err}");
        section.endpoint = None;
        section.region = Some(" ".into());
        let err = section.store_options(CacheBudget::default()).unwrap_err();
        assert!(err.to_string().contains("storage.region"), "{err}");
        assert_eq!(
            StorageSection::default()
                .store_options(CacheBudget::default())
                .unwrap(),
            StoreOptions::default()
        );
    }

    #[test]
    fn the_postgres_url_and_schema_are_read_and_their_errors_named() {
        let mut section = StorageSection::default();
        assert_eq!(section.postgres_url("x").unwrap(), None);
        let err = section.graphs_url().unwrap_err().to_string();
        assert!(
            err.contains("storage.postgres_url or storage.postgres_url_env"),
            "{err}"
        );
        section.postgres_url_env = Some("CRAG_TEST_UNSET_POSTGRES_URL_VARIABLE".into());
        let err = section.graphs_url().unwrap_err().to_string();
        assert!(
            err.contains("CRAG_TEST_UNSET_POSTGRES_URL_VARIABLE (storage.postgres_url_env)"),
            "{err}"
        );
        section.postgres_url = Some(" postgres://crag@db/crag ".into());
        assert_eq!(
            section.graphs_url().unwrap(),
            "postgres://crag@db/crag",
            "the key wins"
        );
        section.postgres_url = Some(" ".into());
        let err = section.graphs_url().unwrap_err().to_string();
        assert!(err.contains("storage.postgres_url is empty"), "{err}");

        assert_eq!(section.graphs_schema().unwrap(), "crag");
        assert_eq!(section.collection_schema("docs"), "crag/docs");
        let long = "n".repeat(64);
        let schema = section.collection_schema(&long);
        assert_eq!(schema.len(), MAX_SCHEMA_LEN, "{schema}");
        assert!(schema.starts_with("crag/nnn"), "{schema}");
        assert_ne!(
            schema,
            section.collection_schema(&"n".repeat(63)),
            "kept apart"
        );
        for bad in ["", "pg_x", &"é".repeat(32)] {
            section.postgres_schema = bad.to_owned();
            let err = section.graphs_schema().unwrap_err().to_string();
            assert!(err.contains("storage.postgres_schema"), "{err}");
        }
        section.postgres_schema = "é".repeat(31);
        assert!(section.collection_schema("docs").len() <= MAX_SCHEMA_LEN);
    }
}

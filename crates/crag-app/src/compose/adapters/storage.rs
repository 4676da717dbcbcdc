//! `[storage]`: how the LanceDB database at `vectors_uri` is reached when it lives in an
//! object store, and how stale a read may be when several processes share it.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::compose::error::bail;
use crate::compose::Result;
use crag_lancedb::{CacheBudget, StoreOptions};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The object store under `vectors_uri` (`s3://bucket/prefix`) and the read consistency of
/// processes sharing it. Credentials come from the environment as LanceDB reads them
/// (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, a profile), never
/// from this file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
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
}

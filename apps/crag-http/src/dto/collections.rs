//! Wire shapes of `/v1/collections`.

use crag_app::CollectionInfo;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::StatsResponse;

/// `POST /v1/collections` body.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = CreateCollection)]
pub struct CollectionBody {
    /// 1 to 64 lowercase letters, digits, `_` and `-`, starting with a letter or a digit.
    #[schema(example = "billing-docs")]
    pub name: String,
    /// Configuration tables merged over the server's, as in the configuration file (e.g.
    /// `{"retrieval": {"fusion": "rrf"}, "evaluator": {"kind": "heuristic"}}`); `data_dir`,
    /// `vectors_uri`, `assets_dir`, `sessions`, `server`, `limits`, `auth` and `vector_index`
    /// are the server's. The embedding model (`embedder.precision`) is fixed at creation.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub overrides: serde_json::Map<String, serde_json::Value>,
}

/// A collection.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Collection)]
pub struct CollectionResponse {
    /// Its name.
    pub name: String,
    /// Creation time, ms since the Unix epoch (absent for `default`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_ms: Option<i64>,
    /// The embedding model, fixed at creation.
    pub embedding_model: String,
    /// Its configuration overrides.
    #[schema(value_type = Object)]
    pub overrides: serde_json::Map<String, serde_json::Value>,
    /// What its indexes hold.
    pub stats: StatsResponse,
}

impl From<CollectionInfo> for CollectionResponse {
    fn from(info: CollectionInfo) -> Self {
        Self {
            name: info.name,
            created_ms: info.created_ms,
            embedding_model: info.embedding_model,
            overrides: info.overrides,
            stats: info.stats.into(),
        }
    }
}

/// A collection in a list.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = CollectionName)]
pub struct CollectionEntry {
    /// Its name; `GET /v1/collections/{name}` describes it.
    pub name: String,
}

/// `GET /v1/collections` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Collections)]
pub struct CollectionsResponse {
    /// The collections the token may use, `default` first.
    pub collections: Vec<CollectionEntry>,
}

/// `DELETE /v1/collections/{name}` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = CollectionDeleted)]
pub struct CollectionDeleted {
    /// The collection.
    pub name: String,
    /// Always true (a missing collection is a 404).
    pub deleted: bool,
}

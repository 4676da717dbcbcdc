//! Collections over gRPC: which one a call is for (the `x-crag-collection` metadata), and the
//! four RPCs that manage them.

use crag_app::{Api, AppError, CollectionInfo};
use tonic::{Request, Status};

use crate::pb;
use crate::{caller_of, status, CragService};

/// The request metadata naming a call's collection; absent or empty: `default`.
pub const COLLECTION_METADATA: &str = "x-crag-collection";

/// The wire form of index statistics.
pub(crate) fn stats_response(s: crag_engine::EngineStats) -> pb::StatsResponse {
    pb::StatsResponse {
        documents: s.documents as u64,
        keyword_chunks: s.keyword_chunks as u64,
        vector_chunks: s.vector_chunks as u64,
        embedding_model: s.embedding_model,
        dimension: s.dimension as u32,
    }
}

fn collection(info: CollectionInfo) -> pb::Collection {
    pb::Collection {
        name: info.name,
        created_ms: info.created_ms,
        embedding_model: info.embedding_model,
        overrides_json: serde_json::Value::Object(info.overrides).to_string(),
        stats: Some(stats_response(info.stats)),
    }
}

impl CragService {
    /// The API bound to the collection `request` names, as its caller may see it.
    pub(crate) async fn in_collection<T>(&self, request: &Request<T>) -> Result<Api, Status> {
        let caller = caller_of(request)?;
        let name = match request.metadata().get(COLLECTION_METADATA) {
            None => None,
            Some(value) => Some(value.to_str().map_err(|_| {
                Status::invalid_argument(format!("{COLLECTION_METADATA} is not ASCII"))
            })?),
        };
        self.api.in_collection(&caller, name).await.map_err(status)
    }

    pub(crate) async fn list_collections_rpc(
        &self,
        request: Request<pb::ListCollectionsRequest>,
    ) -> Result<tonic::Response<pb::ListCollectionsResponse>, Status> {
        let caller = caller_of(&request)?;
        self.guarded("ListCollections", async {
            let names = self.api.list_collections(&caller).await?;
            Ok::<_, AppError>(pb::ListCollectionsResponse { names })
        })
        .await
    }

    pub(crate) async fn create_collection_rpc(
        &self,
        request: Request<pb::CreateCollectionRequest>,
    ) -> Result<tonic::Response<pb::Collection>, Status> {
        let caller = caller_of(&request)?;
        let body = request.into_inner();
        let overrides = if body.overrides_json.trim().is_empty() {
            serde_json::Map::new()
        } else {
            match serde_json::from_str(&body.overrides_json) {
                Ok(serde_json::Value::Object(map)) => map,
                Ok(_) => {
                    return Err(Status::invalid_argument(
                        "overrides_json: not a JSON object",
                    ))
                }
                Err(e) => return Err(Status::invalid_argument(format!("overrides_json: {e}"))),
            }
        };
        self.guarded("CreateCollection", async {
            let info = self
                .api
                .create_collection(&caller, &body.name, overrides)
                .await?;
            Ok::<_, AppError>(collection(info))
        })
        .await
    }

    pub(crate) async fn describe_collection_rpc(
        &self,
        request: Request<pb::CollectionRequest>,
    ) -> Result<tonic::Response<pb::Collection>, Status> {
        let caller = caller_of(&request)?;
        let name = request.into_inner().name;
        self.guarded("DescribeCollection", async {
            Ok::<_, AppError>(collection(
                self.api.describe_collection(&caller, &name).await?,
            ))
        })
        .await
    }

    pub(crate) async fn delete_collection_rpc(
        &self,
        request: Request<pb::CollectionRequest>,
    ) -> Result<tonic::Response<pb::DeleteCollectionResponse>, Status> {
        let caller = caller_of(&request)?;
        let name = request.into_inner().name;
        self.guarded("DeleteCollection", async {
            self.api.delete_collection(&caller, &name).await?;
            Ok::<_, AppError>(pb::DeleteCollectionResponse {
                name: name.clone(),
                deleted: true,
            })
        })
        .await
    }
}

//! `/v1/collections`: list, create, describe, delete. Each collection's data routes are the
//! default collection's under `/v1/collections/{collection}/` (see [`crate::collection`]).

use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{Path, State};
use axum::Extension;
use axum::Json;
use crag_app::Caller;

use crate::openapi::{
    AdminErrors, AlreadyExists, AuthErrors, BodyErrors, InvalidArgument, NotFound,
};
use crate::{dto, ApiError, AppState};

/// The collections this token may use, `default` first.
#[utoipa::path(get, path = "/v1/collections", responses(
    (status = 200, description = "Collection names", body = dto::CollectionsResponse),
    AuthErrors,
))]
pub(crate) async fn list_collections(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<dto::CollectionsResponse>, ApiError> {
    let names = state.inner.api.list_collections(&caller).await?;
    Ok(Json(dto::CollectionsResponse {
        collections: names
            .into_iter()
            .map(|name| dto::CollectionEntry { name })
            .collect(),
    }))
}

/// Create a collection: its own keyword and vector indexes, sessions and symbol graph, the
/// server's configuration with its overrides; its embedding model is fixed now.
#[utoipa::path(post, path = "/v1/collections", request_body = dto::CollectionBody, responses(
    (status = 201, description = "Created", body = dto::CollectionResponse),
    InvalidArgument,
    AlreadyExists,
    AdminErrors,
    BodyErrors,
    AuthErrors,
))]
pub(crate) async fn create_collection(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    body: Result<Json<dto::CollectionBody>, JsonRejection>,
) -> Result<(axum::http::StatusCode, Json<dto::CollectionResponse>), ApiError> {
    let Json(body) = body?;
    let info = state
        .inner
        .api
        .create_collection(&caller, &body.name, body.overrides)
        .await?;
    Ok((axum::http::StatusCode::CREATED, Json(info.into())))
}

/// A collection: its model, overrides and statistics.
#[utoipa::path(get, path = "/v1/collections/{name}",
    params(("name" = String, Path, description = "The collection")),
    responses(
        (status = 200, description = "The collection", body = dto::CollectionResponse),
        NotFound,
        InvalidArgument,
        AuthErrors,
    ))]
pub(crate) async fn describe_collection(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    name: Result<Path<String>, PathRejection>,
) -> Result<Json<dto::CollectionResponse>, ApiError> {
    let Path(name) = name?;
    let info = state.inner.api.describe_collection(&caller, &name).await?;
    Ok(Json(info.into()))
}

/// Delete a collection: its indexes, sessions and files (`default` cannot be deleted).
#[utoipa::path(delete, path = "/v1/collections/{name}",
    params(("name" = String, Path, description = "The collection")),
    responses(
        (status = 200, description = "Deleted", body = dto::CollectionDeleted),
        NotFound,
        InvalidArgument,
        AdminErrors,
        AuthErrors,
    ))]
pub(crate) async fn delete_collection(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    name: Result<Path<String>, PathRejection>,
) -> Result<Json<dto::CollectionDeleted>, ApiError> {
    let Path(name) = name?;
    state.inner.api.delete_collection(&caller, &name).await?;
    Ok(Json(dto::CollectionDeleted {
        name,
        deleted: true,
    }))
}

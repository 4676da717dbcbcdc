//! Which collection a request is for. The data routes exist twice: `/v1/query` is the
//! default collection's, `/v1/collections/{collection}/query` another's. The second form is
//! rewritten to the first before routing, the name kept in the request's extensions, so each
//! handler, each middleware and the OpenAPI document are written once
//! ([`crate::openapi::document`] lists both forms).

use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::Extension;
use crag_app::{Api, Caller};

use crate::{ApiError, AppState};

/// The routes (first path segment after `/v1/`) that exist per collection.
pub(crate) const PER_COLLECTION: [&str; 5] = ["query", "ask", "documents", "stats", "sessions"];

/// Prefix of the per-collection routes.
pub(crate) const PREFIX: &str = "/v1/collections/";

/// The collection named by the request's path.
#[derive(Debug, Clone)]
pub(crate) struct Selected(pub String);

/// Rewrites `/v1/collections/{name}/<route>...` to `/v1/<route>...` with [`Selected`] set;
/// any other request passes unchanged.
pub(crate) fn select(mut request: Request) -> Request {
    let path = request.uri().path();
    let Some((name, tail)) = path
        .strip_prefix(PREFIX)
        .and_then(|rest| rest.split_once('/'))
    else {
        return request;
    };
    let route = tail.split('/').next().unwrap_or_default();
    if !PER_COLLECTION.contains(&route) {
        return request;
    }
    let rewritten = match request.uri().query() {
        Some(query) => format!("/v1/{tail}?{query}"),
        None => format!("/v1/{tail}"),
    };
    let name = name.to_owned();
    let Ok(uri) = rewritten.parse() else {
        return request;
    };
    *request.uri_mut() = uri;
    request.extensions_mut().insert(Selected(name));
    request
}

/// The API bound to the request's collection, as its caller may see it: a handler's
/// extractor. A collection the caller may not use is a 404, as one that does not exist.
pub(crate) struct InCollection(pub Api);

impl FromRequestParts<AppState> for InCollection {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let Extension(caller) = Extension::<Caller>::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::Internal("no caller on an authenticated route".into()))?;
        let name = parts.extensions.get::<Selected>().map(|s| s.0.as_str());
        Ok(Self(state.inner.api.in_collection(&caller, name).await?))
    }
}

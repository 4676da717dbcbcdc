//! The OpenAPI 3.1 document served at `/openapi.json`, derived with utoipa from the handlers'
//! `#[utoipa::path]` attributes and the wire types' `ToSchema` derives: a route or a field
//! cannot change without the document changing with it.

use std::sync::LazyLock;

use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;

use crate::error::ErrorBody;

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "crag HTTP API",
        version = "1.0.0",
        description = "Self-correcting hybrid retrieval (BM25 + vectors fused, Corrective RAG, \
            CGRAG). Every route but /healthz and /readyz needs `Authorization: Bearer <token>` \
            when [auth] configures tokens. Errors are `{\"error\": {\"code\", \"message\"}}`; a \
            method a route does not have is answered 405, an unknown route 404."
    ),
    components(schemas(ErrorBody))
)]
struct ApiDoc;

/// The refusal of a write by a token that may not write.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code, reason = "describes responses, never constructed")]
pub(crate) enum WriteErrors {
    /// The token may not ingest or delete (a scoped token without `write`).
    #[response(status = 403)]
    PermissionDenied(ErrorBody<'static>),
}

/// The errors of every authenticated route.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code, reason = "describes responses, never constructed")]
pub(crate) enum AuthErrors {
    /// Missing or wrong bearer token.
    #[response(status = 401)]
    Unauthenticated(ErrorBody<'static>),
    /// Too many requests in flight (`server.max_concurrent_requests`; refused, never queued),
    /// shutting down, or a dependency configured fail-closed failed.
    #[response(status = 503)]
    Unavailable(ErrorBody<'static>),
    /// Over `server.request_timeout_ms`.
    #[response(status = 504)]
    DeadlineExceeded(ErrorBody<'static>),
    /// Answered without detail (the server logged it).
    #[response(status = 500)]
    Internal(ErrorBody<'static>),
}

/// A malformed body, id or parameter, or one out of the bounds of `[limits]`.
#[derive(utoipa::IntoResponses)]
#[response(status = 400)]
#[allow(dead_code, reason = "describes a response, never constructed")]
pub(crate) struct InvalidArgument(ErrorBody<'static>);

/// The errors of a route that reads a JSON body.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code, reason = "describes responses, never constructed")]
pub(crate) enum BodyErrors {
    /// The body is over `limits.max_body_bytes`.
    #[response(status = 413)]
    PayloadTooLarge(ErrorBody<'static>),
    /// The body is not `application/json`.
    #[response(status = 415)]
    UnsupportedMediaType(ErrorBody<'static>),
}

/// The token may not create or delete collections (a scoped token without `admin`, or a
/// name outside its `collections`).
#[derive(utoipa::IntoResponses)]
#[allow(dead_code, reason = "describes responses, never constructed")]
pub(crate) enum AdminErrors {
    /// Not an admin of this collection.
    #[response(status = 403)]
    PermissionDenied(ErrorBody<'static>),
}

/// The collection exists already.
#[derive(utoipa::IntoResponses)]
#[response(status = 409)]
#[allow(dead_code, reason = "describes a response, never constructed")]
pub(crate) struct AlreadyExists(ErrorBody<'static>);

/// No such document, session or collection (or one the token may not use).
#[derive(utoipa::IntoResponses)]
#[response(status = 404)]
#[allow(dead_code, reason = "describes a response, never constructed")]
pub(crate) struct NotFound(ErrorBody<'static>);

/// Shutting down.
#[derive(utoipa::IntoResponses)]
#[response(status = 503)]
#[allow(dead_code, reason = "describes a response, never constructed")]
pub(crate) struct ServiceUnavailable(ErrorBody<'static>);

/// The document of the API: every route of [`crate::router`], its parameters, bodies and
/// answers.
pub fn document() -> utoipa::openapi::OpenApi {
    let (public, authenticated) = crate::routes();
    let (_, mut doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(public)
        .merge(authenticated)
        .split_for_parts();
    // axum's catch-all `{*id}` is OpenAPI's `{id}`.
    let wildcards: Vec<String> = doc
        .paths
        .paths
        .keys()
        .filter(|path| path.contains("{*"))
        .cloned()
        .collect();
    for path in wildcards {
        if let Some(item) = doc.paths.paths.remove(&path) {
            doc.paths.paths.insert(path.replace("{*", "{"), item);
        }
    }
    add_collection_paths(&mut doc);
    doc.components
        .get_or_insert_with(Default::default)
        .add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    doc.security = Some(vec![SecurityRequirement::new(
        "bearer",
        Vec::<String>::new(),
    )]);
    doc
}

/// Lists each per-collection route ([`crate::collection::PER_COLLECTION`]) a second time
/// under `/v1/collections/{collection}/`, with the `collection` path parameter and its own
/// operation ids: what the router serves through [`crate::collection::select`].
fn add_collection_paths(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
    use utoipa::openapi::{ObjectBuilder, Required, Type};
    let nested: Vec<(String, utoipa::openapi::PathItem)> = doc
        .paths
        .paths
        .iter()
        .filter_map(|(path, item)| {
            let tail = path.strip_prefix("/v1/")?;
            let route = tail.split('/').next()?;
            crate::collection::PER_COLLECTION.contains(&route).then(|| {
                (
                    format!("{}{{collection}}/{tail}", crate::collection::PREFIX),
                    item.clone(),
                )
            })
        })
        .collect();
    let per_collection: Vec<String> = doc
        .paths
        .paths
        .keys()
        .filter(|path| {
            path.strip_prefix("/v1/")
                .and_then(|tail| tail.split('/').next())
                .is_some_and(|route| crate::collection::PER_COLLECTION.contains(&route))
        })
        .cloned()
        .collect();
    for path in per_collection {
        if let Some(item) = doc.paths.paths.get_mut(&path) {
            no_such_collection(item);
        }
    }
    for (path, mut item) in nested {
        no_such_collection(&mut item);
        let parameter = ParameterBuilder::new()
            .name("collection")
            .parameter_in(ParameterIn::Path)
            .required(Required::True)
            .description(Some(
                "The collection (`default` is also served without this prefix)",
            ))
            .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
            .build();
        item.parameters
            .get_or_insert_with(Vec::new)
            .push(parameter.into());
        for operation in operations(&mut item) {
            if let Some(id) = &mut operation.operation_id {
                id.push_str("_in_collection");
            }
        }
        doc.paths.paths.insert(path, item);
    }
}

/// The operations of `item` (the methods crag's routes use).
fn operations(
    item: &mut utoipa::openapi::PathItem,
) -> impl Iterator<Item = &mut utoipa::openapi::path::Operation> {
    [
        &mut item.get,
        &mut item.post,
        &mut item.put,
        &mut item.delete,
    ]
    .into_iter()
    .flatten()
}

/// Documents the 404 of a collection that does not exist or that the token may not use on
/// every operation of `item`.
fn no_such_collection(item: &mut utoipa::openapi::PathItem) {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    for operation in operations(item) {
        operation
            .responses
            .responses
            .entry("404".into())
            .or_insert_with(|| {
                ResponseBuilder::new()
                    .description("No such collection, or one the token may not use")
                    .content(
                        "application/json",
                        ContentBuilder::new()
                            .schema(Some(Ref::from_schema_name("Error")))
                            .build(),
                    )
                    .build()
                    .into()
            });
    }
}

/// [`document`] as JSON, built once.
pub(crate) fn json() -> &'static str {
    static JSON: LazyLock<String> = LazyLock::new(|| {
        document().to_pretty_json().unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot serialise the OpenAPI document");
            String::from("{}")
        })
    });
    &JSON
}

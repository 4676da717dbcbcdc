//! The query inspector (`/inspect`, with `server.inspector`): a page of plain HTML, CSS and
//! JavaScript modules embedded in the binary, with no build step. It holds no data: the page
//! runs queries through the public JSON API with the bearer token typed into it, so it needs
//! no route of its own behind the authentication (docs/inspector.md).

use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS,
};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

const INDEX: &str = include_str!("inspector/index.html");
const SCRIPT: &str = include_str!("inspector/inspector.js");
const STYLE: &str = include_str!("inspector/inspector.css");

/// Where the page is served.
pub const PATH: &str = "/inspect";

fn file(body: &'static str, content_type: &'static str) -> Response {
    (
        [
            (CONTENT_TYPE, content_type),
            (CACHE_CONTROL, "no-cache"),
            (X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (
                CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
            ),
        ],
        body,
    )
        .into_response()
}

/// The page's three files.
pub(crate) fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            PATH,
            get(|| async { file(INDEX, "text/html; charset=utf-8") }),
        )
        .route(
            "/inspect/inspector.js",
            get(|| async { file(SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/inspect/inspector.css",
            get(|| async { file(STYLE, "text/css; charset=utf-8") }),
        )
}

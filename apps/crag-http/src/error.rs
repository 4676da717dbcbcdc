//! The one place where errors become HTTP statuses and `{"error": {"code", "message"}}`.

use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use crag_app::{AppError, Code};
use serde::Serialize;

/// An error answered to an HTTP caller.
#[derive(Debug)]
pub enum ApiError {
    /// 400: the request is malformed or out of bounds.
    InvalidArgument(String),
    /// 401: missing or wrong bearer token.
    Unauthenticated,
    /// 403: the token may not do this (a read-only scoped token writing).
    PermissionDenied(String),
    /// 404: no such document, session, collection or route.
    NotFound(String),
    /// 409: the collection to create exists already.
    AlreadyExists(String),
    /// 405: the route exists, the method does not.
    MethodNotAllowed,
    /// 413: the body is over `limits.max_body_bytes`.
    PayloadTooLarge(String),
    /// 415: not `application/json`.
    UnsupportedMediaType(String),
    /// 503: too many requests in flight (`server.max_concurrent_requests`).
    ResourceExhausted,
    /// 503: shutting down, or a dependency configured fail-closed failed.
    Unavailable(String),
    /// 504: the request took longer than `server.request_timeout_ms`.
    DeadlineExceeded,
    /// 500: answered without detail (the application layer logged it).
    Internal(String),
}

/// The body of every error answer.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Error)]
pub(crate) struct ErrorBody<'a> {
    error: Detail<'a>,
}

/// What went wrong.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ErrorDetail)]
struct Detail<'a> {
    /// Stable, machine-readable: `invalid_argument`, `unauthenticated`,
    /// `permission_denied`, `not_found`, `already_exists`,
    /// `method_not_allowed`, `payload_too_large`, `unsupported_media_type`,
    /// `resource_exhausted`, `unavailable`, `deadline_exceeded` or `internal`.
    code: &'a str,
    /// For people.
    message: &'a str,
}

impl ApiError {
    /// Status, stable code and the message shown to the caller.
    fn parts(&self) -> (StatusCode, &'static str, &str) {
        match self {
            Self::InvalidArgument(m) => (StatusCode::BAD_REQUEST, "invalid_argument", m),
            Self::Unauthenticated => (
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                "missing or invalid bearer token",
            ),
            Self::PermissionDenied(m) => (StatusCode::FORBIDDEN, "permission_denied", m),
            Self::NotFound(m) => (StatusCode::NOT_FOUND, "not_found", m),
            Self::AlreadyExists(m) => (StatusCode::CONFLICT, "already_exists", m),
            Self::MethodNotAllowed => (
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "method not allowed on this route",
            ),
            Self::PayloadTooLarge(m) => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", m),
            Self::UnsupportedMediaType(m) => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                m,
            ),
            Self::ResourceExhausted => (
                StatusCode::SERVICE_UNAVAILABLE,
                "resource_exhausted",
                "too many requests in flight; retry later",
            ),
            Self::Unavailable(m) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable", m),
            Self::DeadlineExceeded => (
                StatusCode::GATEWAY_TIMEOUT,
                "deadline_exceeded",
                "the request took longer than the server's timeout",
            ),
            Self::Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "internal error; see the server log",
            ),
        }
    }
}

impl ApiError {
    /// Status code, stable code and message, as an event of a stream reports them.
    pub fn parts_owned(&self) -> (u16, &'static str, String) {
        let (status, code, message) = self.parts();
        (status.as_u16(), code, message.to_owned())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code, message) = self.parts();
        let mut response = (
            status,
            axum::Json(ErrorBody {
                error: Detail { code, message },
            }),
        )
            .into_response();
        if matches!(self, Self::Unauthenticated) {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}

impl From<AppError> for ApiError {
    fn from(e: AppError) -> Self {
        match e.code {
            Code::InvalidArgument => Self::InvalidArgument(e.message),
            Code::Unauthenticated => Self::Unauthenticated,
            Code::PermissionDenied => Self::PermissionDenied(e.message),
            Code::NotFound => Self::NotFound(e.message),
            Code::AlreadyExists => Self::AlreadyExists(e.message),
            Code::ResourceExhausted => Self::ResourceExhausted,
            Code::Unavailable => Self::Unavailable(e.message),
            Code::DeadlineExceeded => Self::DeadlineExceeded,
            Code::Internal => Self::Internal(e.message),
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        match r {
            JsonRejection::MissingJsonContentType(_) => Self::UnsupportedMediaType(
                "expected a body with `Content-Type: application/json`".into(),
            ),
            JsonRejection::BytesRejection(b) if b.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Self::PayloadTooLarge("request body is over limits.max_body_bytes".into())
            }
            JsonRejection::JsonSyntaxError(e) => {
                Self::InvalidArgument(format!("malformed JSON: {}", e.body_text()))
            }
            JsonRejection::JsonDataError(e) => {
                Self::InvalidArgument(format!("invalid request: {}", e.body_text()))
            }
            other => Self::InvalidArgument(other.body_text()),
        }
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> Self {
        Self::InvalidArgument(format!("invalid path: {}", r.body_text()))
    }
}

//! crag's application layer and composition root, shared by the CLI, the HTTP and the gRPC
//! apps.
//!
//! - [`api`]: the use cases both APIs serve (query, ingest, delete, stats) with
//!   authentication, load shedding, the request deadline and readiness around them;
//! - [`collections`]: named collections, each its own indexes, opened on first use;
//! - [`requests`]: what callers send, checked against `[limits]` into domain requests;
//! - [`error`]: the error kinds the APIs answer, mapped once from engine errors;
//! - [`compose`]: the composition root, building the adapters the configuration names by kind;
//! - [`runtime`]: logging, thin binaries' configuration, shutdown and draining.
//!
//! The wire types (HTTP DTOs, protobuf) stay in the apps.
//!
//! The binaries (`crag`, `crag-http`, `crag-grpc`) each set jemalloc as their allocator: a
//! library does not choose its user's allocator.

pub mod api;
pub mod auth;
pub mod collections;
pub mod compose;
pub mod error;
pub mod requests;
pub mod runtime;
mod shared_pg;
pub mod tls;
pub mod tokens;

/// crag's configuration: [`crag_config::Config`] with crag's adapter sections ([`Adapters`]).
pub type Config = crag_config::Config<Adapters>;

pub use api::{
    Api, AskEvent, AskParams, DocumentError, EvaluateDocumentParams, EvaluateParams, IngestOutcome,
    Shed, SymbolHit, SymbolReport,
};
pub use auth::{Caller, TokenSet};
pub use collections::{CollectionInfo, Collections, Descriptor};
pub use compose::{Adapters, ComposeError};
pub use crag_config::{error_chain, ConfigError};
pub use error::{AppError, Code};
pub use requests::{DocumentParams, FusionParams, Invalid, Limits, QueryParams, DEFAULT_TOP_K};
pub use runtime::{
    bind, config_from_args, exit_code, init_tracing, serve_gracefully, server_main,
    shutdown_signal, ShutdownFuture, SERVER_LOG_FILTER,
};
pub use tls::TlsIdentity;
pub use tokens::{reload_tokens, SharedTokens, StoredToken, TokenReload, TokenScope};

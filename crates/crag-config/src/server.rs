//! `[server]`, `[limits]` and `[auth]`: how the HTTP and gRPC apps listen, bound requests and
//! authenticate callers.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::error::{bail, ConfigError, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `[server]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSection {
    /// HTTP listening address.
    pub http_addr: SocketAddr,
    /// gRPC listening address (must differ from `http_addr`).
    pub grpc_addr: SocketAddr,
    /// Deadline of one request: HTTP 504 `deadline_exceeded`, gRPC DEADLINE_EXCEEDED.
    pub request_timeout_ms: u64,
    /// Requests served at once per API; more are refused at once (HTTP 503 `resource_exhausted`,
    /// gRPC RESOURCE_EXHAUSTED), never queued.
    pub max_concurrent_requests: usize,
    /// On SIGTERM / Ctrl-C: time in-flight requests get to finish.
    pub shutdown_grace_ms: u64,
    /// An HTTP client that has not sent its request headers by then is disconnected (slow clients),
    /// and so is a gRPC client that has not sent the HTTP/2 preface and its first SETTINGS frame;
    /// bodies are bounded by `request_timeout_ms`.
    pub header_read_timeout_ms: u64,
    /// A gRPC connection is closed gracefully (GOAWAY: calls in flight finish, clients reconnect)
    /// once this old; the handshake is bounded by `header_read_timeout_ms`.
    pub grpc_max_connection_age_ms: u64,
    /// A gRPC connection idle this long is sent an HTTP/2 PING.
    pub grpc_keepalive_interval_ms: u64,
    /// A PING not answered within this closes the connection: a peer that completed the handshake
    /// and then stopped answering (or vanished without closing) is dropped within interval +
    /// timeout, 80 s by default.
    pub grpc_keepalive_timeout_ms: u64,
    /// At start (`crag serve`, `crag ask`, the servers): repair what an interrupted write left
    /// between the indexes, as `crag reconcile` does
    /// ([reliability](reliability.md#index-consistency-after-an-interrupted-write)).
    pub reconcile_on_start: bool,
    /// A PEM certificate chain: both APIs serve TLS with it (HTTP/1.1 and HTTP/2 by ALPN over HTTP,
    /// HTTP/2 over gRPC; rustls with the ring provider, TLS 1.2 and 1.3). Empty serves plain TCP.
    /// Read once at start; a missing or malformed file stops the server with a message naming the
    /// key. The TLS handshake is bounded by `header_read_timeout_ms`.
    pub tls_cert_path: PathBuf,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1); set with `tls_cert_path` or not
    /// at all.
    pub tls_key_path: PathBuf,
    /// Serve the query inspector page at `/inspect` on the HTTP listener
    /// ([inspector](inspector.md)): static files only; its requests to the API carry the token
    /// typed into the page.
    pub inspector: bool,
}

impl Default for ServerSection {
    fn default() -> Self {
        Self {
            http_addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            grpc_addr: SocketAddr::from(([127, 0, 0, 1], 50051)),
            request_timeout_ms: 30_000,
            max_concurrent_requests: 32,
            shutdown_grace_ms: 30_000,
            header_read_timeout_ms: 30_000,
            grpc_max_connection_age_ms: 600_000,
            grpc_keepalive_interval_ms: 60_000,
            grpc_keepalive_timeout_ms: 20_000,
            reconcile_on_start: true,
            tls_cert_path: PathBuf::new(),
            tls_key_path: PathBuf::new(),
            inspector: false,
        }
    }
}

impl ServerSection {
    /// The certificate chain and key files, when TLS is configured.
    pub fn tls(&self) -> Option<(&Path, &Path)> {
        (!self.tls_cert_path.as_os_str().is_empty())
            .then_some((self.tls_cert_path.as_path(), self.tls_key_path.as_path()))
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.request_timeout_ms == 0 {
            bail!("server.request_timeout_ms must be positive");
        }
        if self.header_read_timeout_ms == 0 {
            bail!("server.header_read_timeout_ms must be positive");
        }
        for (key, value) in [
            (
                "grpc_max_connection_age_ms",
                self.grpc_max_connection_age_ms,
            ),
            (
                "grpc_keepalive_interval_ms",
                self.grpc_keepalive_interval_ms,
            ),
            ("grpc_keepalive_timeout_ms", self.grpc_keepalive_timeout_ms),
        ] {
            if value == 0 {
                bail!("server.{key} must be positive");
            }
        }
        if self.max_concurrent_requests == 0 {
            bail!("server.max_concurrent_requests must be positive");
        }
        if self.tls_cert_path.as_os_str().is_empty() != self.tls_key_path.as_os_str().is_empty() {
            bail!("server.tls_cert_path and server.tls_key_path are set together or not at all");
        }
        if self.http_addr == self.grpc_addr {
            bail!(
                "server.http_addr and server.grpc_addr are both {}",
                self.http_addr
            );
        }
        Ok(())
    }
}

/// `[limits]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsSection {
    /// Largest HTTP body / gRPC message (HTTP 413; gRPC OUT_OF_RANGE from tonic).
    pub max_body_bytes: usize,
    /// Longest query.
    pub max_query_chars: usize,
    /// Largest `topK`.
    pub max_top_k: usize,
    /// Largest `tokenBudget`.
    pub max_token_budget: usize,
    /// Documents per ingest request / stream.
    pub max_ingest_batch: usize,
    /// Largest document text (at most `max_body_bytes`).
    pub max_document_bytes: usize,
    /// Longest document id (also bounds `source` and `sourcePrefix`).
    pub max_document_id_bytes: usize,
    /// Largest document metadata object, as JSON (refused at ingest, nothing stored).
    pub max_metadata_bytes: usize,
}

impl Default for LimitsSection {
    fn default() -> Self {
        Self {
            max_body_bytes: 4 * 1024 * 1024,
            max_query_chars: 2000,
            max_top_k: 100,
            max_token_budget: 100_000,
            max_ingest_batch: 256,
            max_document_bytes: 1024 * 1024,
            max_document_id_bytes: 512,
            max_metadata_bytes: 16 * 1024,
        }
    }
}

impl LimitsSection {
    pub(crate) fn validate(&self) -> Result<()> {
        for (key, value) in [
            ("max_body_bytes", self.max_body_bytes),
            ("max_query_chars", self.max_query_chars),
            ("max_top_k", self.max_top_k),
            ("max_token_budget", self.max_token_budget),
            ("max_ingest_batch", self.max_ingest_batch),
            ("max_document_bytes", self.max_document_bytes),
            ("max_document_id_bytes", self.max_document_id_bytes),
            ("max_metadata_bytes", self.max_metadata_bytes),
        ] {
            if value == 0 {
                bail!("limits.{key} must be positive");
            }
        }
        if self.max_document_bytes > self.max_body_bytes {
            bail!(
                "limits.max_document_bytes ({}) exceeds limits.max_body_bytes ({})",
                self.max_document_bytes,
                self.max_body_bytes
            );
        }
        Ok(())
    }
}

/// `[auth]`: bearer tokens. With no token configured the APIs are open.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AuthSection {
    /// Accepted bearer tokens (at least 16 characters, no whitespace): every route, the whole
    /// corpus.
    pub tokens: Vec<String>,
    /// Variable holding more tokens, comma-separated.
    pub tokens_env: String,
    /// Scoped tokens (`[[auth.scoped]]`): each sees the documents its `filter` passes, and
    /// writes only with `write = true` ([filters](filters.md#scoped-tokens)).
    pub scoped: Vec<ScopedToken>,
    /// Also accept the scoped tokens kept in the shared Postgres database (table
    /// `crag_tokens` of `[storage] postgres_schema` at `[storage] postgres_url`), created and
    /// revoked with `crag tokens` and seen by every replica within `[storage]
    /// read_consistency_ms`. Authentication is then always on, even with no token yet
    /// ([deploying](deploying.md#tokens-shared-by-the-replicas)).
    pub shared: bool,
}

/// `[[auth.scoped]]`: a bearer token whose requests see part of the corpus.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ScopedToken {
    /// The token (at least 16 characters, no whitespace); empty to read it from `token_env`.
    pub token: String,
    /// Variable holding the token, when `token` is empty.
    pub token_env: String,
    /// A metadata filter (JSON as in `filters.metadata`, written as a TOML inline table)
    /// ANDed into every retrieval of the token's requests: queries, asks and their further
    /// retrievals. A request's own filter can narrow it, never widen it. Empty: everything.
    pub filter: serde_json::Map<String, serde_json::Value>,
    /// Whether the token may ingest and delete documents.
    pub write: bool,
    /// The collections the token may use; any other answers 404 as if it did not exist.
    /// Empty: every collection.
    pub collections: Vec<String>,
    /// Whether the token may create and delete collections (among `collections`).
    pub admin: bool,
}

impl fmt::Debug for ScopedToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopedToken")
            .field("token", &"<redacted>")
            .field("token_env", &self.token_env)
            .field("filter", &self.filter)
            .field("write", &self.write)
            .field("collections", &self.collections)
            .field("admin", &self.admin)
            .finish()
    }
}

impl Default for AuthSection {
    fn default() -> Self {
        Self {
            tokens: Vec::new(),
            tokens_env: "CRAG_API_TOKENS".into(),
            scoped: Vec::new(),
            shared: false,
        }
    }
}

impl fmt::Debug for AuthSection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthSection")
            .field("tokens", &format_args!("[{} redacted]", self.tokens.len()))
            .field("tokens_env", &self.tokens_env)
            .field("scoped", &self.scoped)
            .field("shared", &self.shared)
            .finish()
    }
}

/// A scoped token resolved: the token, its filter, whether it may write.
#[derive(Clone)]
pub struct ResolvedScope {
    /// The token.
    pub token: String,
    /// Its filter; `None`: everything.
    pub filter: Option<crag_core::MetadataFilter>,
    /// Whether it may ingest and delete.
    pub write: bool,
    /// The collections it may use; `None`: every one.
    pub collections: Option<Vec<String>>,
    /// Whether it may create and delete collections.
    pub admin: bool,
}

/// Shortest token accepted: guessable tokens are refused at start.
pub const MIN_TOKEN_LEN: usize = 16;

impl AuthSection {
    pub(crate) fn validate(&self) -> Result<()> {
        check_tokens("auth.tokens", &self.tokens)?;
        for (i, scoped) in self.scoped.iter().enumerate() {
            if scoped.token.is_empty() == scoped.token_env.is_empty() {
                bail!("auth.scoped[{i}]: set one of token and token_env");
            }
            if !scoped.token.is_empty() {
                check_tokens(
                    &format!("auth.scoped[{i}].token"),
                    std::slice::from_ref(&scoped.token),
                )?;
            }
            scoped_filter(i, scoped)?;
            for name in &scoped.collections {
                crate::collection::check_name(name).map_err(|e| {
                    ConfigError::invalid(format!("auth.scoped[{i}].collections: {e}"))
                })?;
            }
        }
        Ok(())
    }

    /// The scoped tokens with their filters, `token_env` read with `var`.
    pub fn resolve_scoped(
        &self,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Vec<ResolvedScope>> {
        self.scoped
            .iter()
            .enumerate()
            .map(|(i, scoped)| {
                let token = if scoped.token.is_empty() {
                    var(&scoped.token_env).ok_or_else(|| {
                        ConfigError::invalid(format!(
                            "auth.scoped[{i}]: ${} is not set",
                            scoped.token_env
                        ))
                    })?
                } else {
                    scoped.token.clone()
                };
                check_tokens(&format!("auth.scoped[{i}]"), std::slice::from_ref(&token))?;
                Ok(ResolvedScope {
                    token,
                    filter: scoped_filter(i, scoped)?,
                    write: scoped.write,
                    collections: (!scoped.collections.is_empty())
                        .then(|| scoped.collections.clone()),
                    admin: scoped.admin,
                })
            })
            .collect()
    }

    /// The accepted tokens: `tokens` plus those in `$tokens_env` (read from `vars`).
    pub fn resolve(&self, var: Option<&str>) -> Result<Vec<String>> {
        let mut tokens = self.tokens.clone();
        if let Some(raw) = var {
            let extra: Vec<String> = raw
                .split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(String::from)
                .collect();
            check_tokens(&self.tokens_env, &extra)?;
            tokens.extend(extra);
        }
        Ok(tokens)
    }
}

fn scoped_filter(i: usize, scoped: &ScopedToken) -> Result<Option<crag_core::MetadataFilter>> {
    if scoped.filter.is_empty() {
        return Ok(None);
    }
    crag_core::MetadataFilter::from_json(&serde_json::Value::Object(scoped.filter.clone()))
        .map(Some)
        .map_err(|e| ConfigError::invalid(format!("auth.scoped[{i}].filter: {e}")))
}

fn check_tokens(key: &str, tokens: &[String]) -> Result<()> {
    for (i, token) in tokens.iter().enumerate() {
        if token.chars().count() < MIN_TOKEN_LEN {
            bail!("{key}[{i}]: tokens must have at least {MIN_TOKEN_LEN} characters");
        }
        if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
            bail!("{key}[{i}]: tokens must not contain whitespace or control characters");
        }
    }
    Ok(())
}

//! crag's Model Context Protocol server, on the official Rust SDK (`rmcp`): the tools an
//! agent uses to find context, over stdio ([`serve_stdio`], `crag mcp`) or MCP's streamable
//! HTTP ([`http_service`], mounted at `/mcp` by the HTTP app behind its bearer tokens).
//!
//! Tools (read-only unless writes are enabled): `search`, `ask`, `get_chunk`, `get_document`,
//! `find_symbol`, `collections`, `stats`; `ingest` and `delete` with
//! [`McpOptions::allow_writes`] (and, over HTTP, a token that may write). Every call runs
//! through the same use cases as the JSON API ([`crag_app::Api`]): the same limits, scopes,
//! concurrency limit and deadline. Arguments are checked against the tools' schemas (unknown
//! fields refused); failures are MCP errors with a message.

mod tools;
pub mod wire;

use std::sync::Arc;

use crag_app::{Api, AppError, Caller, Code};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{ErrorCode, ErrorData, Implementation, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServiceExt as _;

pub use rmcp;
pub use tokio_util::sync::CancellationToken;

/// Where the HTTP app mounts the streamable HTTP transport.
pub const HTTP_PATH: &str = "/mcp";

/// The tools that change the collection, offered only with [`McpOptions::allow_writes`].
pub const WRITE_TOOLS: [&str; 2] = ["ingest", "delete"];

/// How the server is offered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpOptions {
    /// Offer `ingest` and `delete`.
    pub allow_writes: bool,
    /// `Host` values the HTTP transport accepts (empty: any).
    pub allowed_hosts: Vec<String>,
    /// The largest request body the HTTP transport reads (`limits.max_body_bytes`).
    pub max_body_bytes: usize,
    /// The collection a call naming none uses (`None`: `default`).
    pub default_collection: Option<String>,
}

impl McpOptions {
    /// The options of the `[mcp]` section.
    pub fn from_config(config: &crag_app::Config) -> Self {
        Self {
            allow_writes: config.mcp.allow_writes,
            allowed_hosts: config.mcp.allowed_hosts.clone(),
            max_body_bytes: config.limits.max_body_bytes,
            default_collection: None,
        }
    }
}

/// Who calls: over stdio the local user (every right); over HTTP the caller the HTTP app's
/// authentication put in the request's extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Stdio,
    Http,
}

/// The MCP service over crag's use cases.
#[derive(Clone)]
pub struct CragMcp {
    api: Api,
    transport: Transport,
    default_collection: Option<String>,
    tool_router: ToolRouter<Self>,
}

impl std::fmt::Debug for CragMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CragMcp")
            .field("transport", &self.transport)
            .field("tools", &self.tool_names())
            .finish_non_exhaustive()
    }
}

impl CragMcp {
    fn new(api: Api, options: &McpOptions, transport: Transport) -> Self {
        let mut tool_router = Self::tool_router();
        if !options.allow_writes {
            for name in WRITE_TOOLS {
                tool_router.remove_route(name);
            }
        }
        Self {
            api,
            transport,
            default_collection: options.default_collection.clone(),
            tool_router,
        }
    }

    /// The names of the tools offered.
    pub fn tool_names(&self) -> Vec<String> {
        self.tool_router
            .list_all()
            .into_iter()
            .map(|t| t.name.into_owned())
            .collect()
    }

    /// The caller of a request, from its extensions.
    fn caller(&self, extensions: &rmcp::model::Extensions) -> Result<Caller, ErrorData> {
        match self.transport {
            Transport::Stdio => Ok(Caller::default()),
            Transport::Http => extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Caller>())
                .cloned()
                .ok_or_else(|| to_mcp(AppError::unauthenticated())),
        }
    }

    /// The API bound to the collection the caller asked for.
    async fn api_for(
        &self,
        extensions: &rmcp::model::Extensions,
        collection: Option<&str>,
    ) -> Result<(Caller, Api), ErrorData> {
        let caller = self.caller(extensions)?;
        let api = self
            .api
            .in_collection(
                &caller,
                collection
                    .filter(|c| !c.is_empty())
                    .or(self.default_collection.as_deref()),
            )
            .await
            .map_err(to_mcp)?;
        Ok((caller, api))
    }

    /// Runs a use case under the server's concurrency limit and deadline.
    async fn guarded<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, AppError>>,
    ) -> Result<T, ErrorData> {
        match self.api.guarded(work).await {
            Ok(result) => result.map_err(to_mcp),
            Err(shed) => Err(to_mcp(AppError::from(shed))),
        }
    }
}

/// An application error as an MCP error: bad arguments are `invalid_params`, unknown ids
/// `resource_not_found`, refused rights `invalid_request`, the rest `internal_error`; the
/// message is the one the JSON API shows.
pub fn to_mcp(e: AppError) -> ErrorData {
    let code = match e.code {
        Code::InvalidArgument => ErrorCode::INVALID_PARAMS,
        Code::NotFound => ErrorCode::RESOURCE_NOT_FOUND,
        Code::Unauthenticated | Code::PermissionDenied | Code::AlreadyExists => {
            ErrorCode::INVALID_REQUEST
        }
        Code::ResourceExhausted | Code::Unavailable | Code::DeadlineExceeded | Code::Internal => {
            ErrorCode::INTERNAL_ERROR
        }
    };
    ErrorData::new(code, e.message, None)
}

fn server_config() -> ServerConfig {
    ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        .with_server_info(Implementation::new("crag", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "crag finds passages in the collections it has indexed (documents and source \
             code) with hybrid keyword + vector search, and judges whether they answer. Use \
             `search` for a question or keywords, `ask` when a question needs context gathered \
             over several passes (code above all), `find_symbol` for a definition and its \
             callers, `get_chunk` / `get_document` to read more around a result.",
        )
}

#[rmcp::tool_handler(router = self.tool_router)]
impl rmcp::ServerHandler for CragMcp {
    fn get_info(&self) -> ServerConfig {
        server_config()
    }
}

/// Serves MCP over this process's stdin and stdout until the client closes them. Nothing
/// else may write to stdout meanwhile (logs go to stderr).
pub async fn serve_stdio(api: Api, options: &McpOptions) -> Result<(), std::io::Error> {
    let service = CragMcp::new(api, options, Transport::Stdio)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(std::io::Error::other)?;
    service.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}

/// MCP's streamable HTTP transport as a tower service, to mount at `/mcp` behind the HTTP
/// app's authentication (which puts the [`Caller`] in each request's extensions); it stops
/// with `cancel`.
pub fn http_service(
    api: Api,
    options: &McpOptions,
    cancel: tokio_util::sync::CancellationToken,
) -> StreamableHttpService<CragMcp, LocalSessionManager> {
    let server = CragMcp::new(api, options, Transport::Http);
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(cancel)
        .with_max_request_body_bytes(options.max_body_bytes);
    config = if options.allowed_hosts.is_empty() {
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(options.allowed_hosts.clone())
    };
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

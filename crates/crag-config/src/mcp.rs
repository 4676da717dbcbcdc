//! `[mcp]`: the Model Context Protocol server (`crag mcp` over stdio, `/mcp` over HTTP).

use crate::error::{bail, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `[mcp]`: crag's tools for agents over the Model Context Protocol
/// ([mcp](mcp.md)). `crag mcp` serves them over stdio whatever `http` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct McpSection {
    /// Serve MCP's streamable HTTP transport at `/mcp` on the HTTP listener (same bearer
    /// tokens and scopes as the JSON API).
    pub http: bool,
    /// Offer the `ingest` and `delete` tools (a token must still be allowed to write).
    pub allow_writes: bool,
    /// `Host` header values `/mcp` accepts (`name` or `name:port`), against DNS rebinding;
    /// empty: any host.
    pub allowed_hosts: Vec<String>,
}

impl Default for McpSection {
    fn default() -> Self {
        Self {
            http: false,
            allow_writes: false,
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
        }
    }
}

impl McpSection {
    pub(crate) fn validate(&self) -> Result<()> {
        if let Some(host) = self
            .allowed_hosts
            .iter()
            .find(|h| h.trim().is_empty() || h.contains(char::is_whitespace) || h.contains('/'))
        {
            bail!("mcp.allowed_hosts: `{host}` is not a host name or host:port");
        }
        Ok(())
    }
}

//! `crag mcp`: the Model Context Protocol server over stdin and stdout, for an agent that
//! starts crag as a child process.

use anyhow::Result;
use clap::Args;

use crate::commands::Context;

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Offer the `ingest` and `delete` tools (overrides mcp.allow_writes).
    #[arg(long)]
    allow_writes: bool,
}

pub async fn mcp(ctx: &Context, args: McpArgs) -> Result<()> {
    let mut config = ctx.base.clone();
    config.mcp.allow_writes |= args.allow_writes;
    config.validate()?;
    let engine = crag_app::compose::engine(&config).await?;
    // The local user runs this process: no token, every collection.
    let api = crag_app::Api::new(engine, &config, crag_app::TokenSet::default());
    let options = crag_mcp::McpOptions {
        default_collection: Some(ctx.collection.clone()),
        ..crag_mcp::McpOptions::from_config(&config)
    };
    tracing::info!(writes = options.allow_writes, "crag MCP server on stdio");
    crag_mcp::serve_stdio(api, &options).await?;
    Ok(())
}

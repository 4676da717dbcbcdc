//! `crag collections`: list, create, describe and delete the collections of the data
//! directory (what `/v1/collections` does over HTTP).

use anyhow::Result;
use clap::Subcommand;
use crag_app::{Api, Caller, CollectionInfo, TokenSet};

use crate::commands::Context;

#[derive(Debug, Subcommand)]
pub enum CollectionsCommand {
    /// The collections, `default` first.
    List {
        /// Print them as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Create a collection: its own indexes and sessions; its embedding model fixed now.
    Create {
        /// 1 to 64 lowercase letters, digits, `_` and `-`.
        name: String,
        /// Configuration tables merged over the server's, as JSON (e.g.
        /// '{"retrieval": {"fusion": "rrf"}}').
        #[arg(long, value_parser = crate::commands::parse_json)]
        overrides: Option<serde_json::Value>,
        /// Print the collection as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a collection: model, overrides, statistics.
    Describe {
        /// The collection.
        name: String,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete a collection with its indexes and sessions (not `default`).
    Delete {
        /// The collection.
        name: String,
    },
}

fn json_of(info: &CollectionInfo) -> serde_json::Value {
    serde_json::json!({
        "name": info.name,
        "createdMs": info.created_ms,
        "embeddingModel": info.embedding_model,
        "overrides": info.overrides,
        "stats": {
            "documents": info.stats.documents,
            "keywordChunks": info.stats.keyword_chunks,
            "vectorChunks": info.stats.vector_chunks,
            "embeddingModel": info.stats.embedding_model,
            "dimension": info.stats.dimension,
        },
    })
}

fn show(info: &CollectionInfo, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(&json_of(info))?);
    } else {
        println!("collection:      {}", info.name);
        println!("embedding model: {}", info.embedding_model);
        println!("documents:       {}", info.stats.documents);
        println!("chunks:          {}", info.stats.keyword_chunks);
        println!(
            "overrides:       {}",
            serde_json::Value::Object(info.overrides.clone())
        );
    }
    Ok(())
}

pub async fn collections(ctx: &Context, command: CollectionsCommand) -> Result<()> {
    let engine = crag_app::compose::engine(&ctx.base).await?;
    let api = Api::new(engine, &ctx.base, TokenSet::default());
    let owner = Caller::default();
    match command {
        CollectionsCommand::List { json } => {
            let names = api
                .list_collections(&owner)
                .await
                .map_err(anyhow::Error::msg)?;
            if json {
                println!("{}", serde_json::json!({ "collections": names }));
            } else {
                names.iter().for_each(|name| println!("{name}"));
            }
        }
        CollectionsCommand::Create {
            name,
            overrides,
            json,
        } => {
            let overrides = match overrides {
                None => serde_json::Map::new(),
                Some(serde_json::Value::Object(map)) => map,
                Some(_) => anyhow::bail!("--overrides must be a JSON object"),
            };
            let info = api
                .create_collection(&owner, &name, overrides)
                .await
                .map_err(anyhow::Error::msg)?;
            show(&info, json)?;
        }
        CollectionsCommand::Describe { name, json } => {
            let info = api
                .describe_collection(&owner, &name)
                .await
                .map_err(anyhow::Error::msg)?;
            show(&info, json)?;
        }
        CollectionsCommand::Delete { name } => {
            api.delete_collection(&owner, &name)
                .await
                .map_err(anyhow::Error::msg)?;
            println!("deleted collection {name}");
        }
    }
    Ok(())
}

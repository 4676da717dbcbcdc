//! `crag tokens`: make, list and revoke the scoped tokens kept in the shared Postgres
//! database (`[auth] shared = true`), which every replica accepts within `[storage]
//! read_consistency_ms` (docs/deploying.md).

use anyhow::{bail, Result};
use clap::Subcommand;
use crag_app::{SharedTokens, StoredToken, TokenScope};

use crate::commands::Context;

#[derive(Debug, Subcommand)]
pub enum TokensCommand {
    /// Make a token and print it: the only time it is shown (only its digest is kept).
    Create {
        /// 1 to 64 lowercase letters, digits, `_` and `-`: how it is listed and revoked.
        name: String,
        /// A metadata filter ANDed into every retrieval of its requests, as JSON (e.g.
        /// '{"team": "billing"}'); none: every document.
        #[arg(long, value_parser = crate::commands::parse_json)]
        filter: Option<serde_json::Value>,
        /// It may ingest and delete documents.
        #[arg(long)]
        write: bool,
        /// The collections it may use, comma-separated; none: every collection.
        #[arg(long, value_delimiter = ',')]
        collections: Vec<String>,
        /// It may create and delete collections (among those it may use).
        #[arg(long)]
        admin: bool,
        /// Print the token and its scope as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The stored tokens by name, with their scopes (never the tokens).
    List {
        /// Print them as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token: no replica accepts it after `[storage] read_consistency_ms`.
    Revoke {
        /// Its name.
        name: String,
    },
}

fn json_of(token: &StoredToken) -> serde_json::Value {
    serde_json::json!({
        "name": token.name,
        "filter": token.scope.filter,
        "write": token.scope.write,
        "collections": token.scope.collections,
        "admin": token.scope.admin,
        "createdMs": token.created_ms,
    })
}

pub async fn tokens(ctx: &Context, command: TokensCommand) -> Result<()> {
    let Some(store) = SharedTokens::of(&ctx.base)? else {
        bail!("crag tokens keeps tokens in the shared Postgres database: set [auth] shared = true and [storage] postgres_url (docs/deploying.md)");
    };
    match command {
        TokensCommand::Create {
            name,
            filter,
            write,
            collections,
            admin,
            json,
        } => {
            let filter = match filter {
                None => serde_json::Map::new(),
                Some(serde_json::Value::Object(map)) => map,
                Some(_) => bail!("--filter must be a JSON object"),
            };
            let scope = TokenScope {
                filter,
                write,
                collections,
                admin,
            };
            let token = store
                .create(&name, &scope)
                .await
                .map_err(anyhow::Error::msg)?;
            if json {
                println!("{}", serde_json::json!({ "name": name, "token": token }));
            } else {
                println!("{token}");
                eprintln!("token `{name}` made: it is not shown again");
            }
        }
        TokensCommand::List { json } => {
            let stored = store.list().await.map_err(anyhow::Error::msg)?;
            if json {
                let all: Vec<_> = stored.iter().map(json_of).collect();
                println!("{}", serde_json::json!({ "tokens": all }));
            } else {
                for token in &stored {
                    println!("{}\t{}", token.name, json_of(token));
                }
            }
        }
        TokensCommand::Revoke { name } => {
            if !store.revoke(&name).await.map_err(anyhow::Error::msg)? {
                bail!("no token named `{name}`");
            }
            println!("revoked token {name}");
        }
    }
    Ok(())
}

//! Scoped tokens kept in the shared Postgres database (`[auth] shared = true`): made and
//! revoked with `crag tokens` on any machine, accepted by every replica within `[storage]
//! read_consistency_ms`. Only each token's SHA-256 digest is stored; the token itself is
//! shown once, when it is made.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use crag_core::MetadataFilter;
use sqlx::postgres::PgPool;
use sqlx::Row as _;
use tokio::sync::OnceCell;

use crate::auth::{digest, Caller, TokenSet};
use crate::compose::ComposeError;
use crate::error::{AppError, Code};
use crate::shared_pg::{create_once, lazy_pool, quote_ident};
use crate::Config;
use crag_config::{error_chain, ConfigError};

/// The table of tokens, in `[storage] postgres_schema`.
const TABLE: &str = "crag_tokens";

/// Random bytes in a token made here (shown as hexadecimal after [`PREFIX`]).
const TOKEN_BYTES: usize = 32;

/// What a token made here starts with, so that one found in a log or a file is recognised.
const PREFIX: &str = "crag_";

/// What a stored token may see and do, as `[[auth.scoped]]` says it for a configured one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenScope {
    /// A metadata filter ANDed into every retrieval (JSON as in `filters.metadata`).
    pub filter: serde_json::Map<String, serde_json::Value>,
    /// Whether it may ingest and delete documents.
    pub write: bool,
    /// The collections it may use; empty: every one.
    pub collections: Vec<String>,
    /// Whether it may create and delete collections (among `collections`).
    pub admin: bool,
}

impl TokenScope {
    /// The caller a token of this scope makes; an error names what is wrong.
    pub fn caller(&self) -> Result<Caller, String> {
        for name in &self.collections {
            crag_config::check_collection_name(name).map_err(|e| format!("collections: {e}"))?;
        }
        let scope = if self.filter.is_empty() {
            None
        } else {
            let value = serde_json::Value::Object(self.filter.clone());
            Some(MetadataFilter::from_json(&value).map_err(|e| format!("filter: {e}"))?)
        };
        Ok(Caller {
            scope,
            read_only: !self.write,
            collections: (!self.collections.is_empty()).then(|| self.collections.clone()),
            admin: self.admin,
        })
    }
}

/// A stored token as listed: its name and scope (never the token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredToken {
    /// The name it was made with.
    pub name: String,
    /// What it may see and do.
    pub scope: TokenScope,
    /// When it was made, in milliseconds since the epoch.
    pub created_ms: i64,
}

/// The tokens table of the shared database.
pub struct SharedTokens {
    pool: PgPool,
    /// The table, schema-qualified and quoted.
    table: String,
    ready: OnceCell<()>,
}

impl std::fmt::Debug for SharedTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedTokens({})", self.table)
    }
}

fn unavailable(what: &str, e: &sqlx::Error) -> AppError {
    AppError::new(
        Code::Unavailable,
        format!("the tokens in Postgres: {what}: {e}"),
    )
}

/// Refuses a token name that is not 1 to 64 lowercase letters, digits, `_` and `-`.
fn check_token_name(name: &str) -> Result<(), AppError> {
    let good = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if good {
        Ok(())
    } else {
        Err(AppError::new(
            Code::InvalidArgument,
            format!(
                "token name `{}`: 1 to 64 lowercase letters, digits, `_` and `-`",
                name.escape_debug()
            ),
        ))
    }
}

impl SharedTokens {
    /// The shared tokens `config` names: `None` unless `[auth] shared = true` (no
    /// connection is made before the first use).
    pub fn of(config: &Config) -> Result<Option<Self>, ComposeError> {
        if !config.auth.shared {
            return Ok(None);
        }
        let storage = &config.adapters.storage;
        let why = "auth.shared = true";
        let Some(url) = storage.postgres_url(why)? else {
            return Err(ComposeError::invalid(format!(
                "{why} needs storage.postgres_url or storage.postgres_url_env"
            )));
        };
        Ok(Some(Self {
            pool: lazy_pool(&url)?,
            table: format!("{}.{TABLE}", quote_ident(storage.graphs_schema()?)),
            ready: OnceCell::new(),
        }))
    }

    /// The pool, once the table exists.
    async fn pool(&self) -> Result<&PgPool, AppError> {
        self.ready
            .get_or_try_init(|| async {
                let schema = self.table.rsplit_once('.').map_or("", |(s, _)| s);
                let create = format!(
                    "CREATE TABLE IF NOT EXISTS {} (name TEXT PRIMARY KEY, \
                     digest BYTEA NOT NULL UNIQUE, filter TEXT NOT NULL, \
                     can_write BOOLEAN NOT NULL, collections TEXT NOT NULL, \
                     admin BOOLEAN NOT NULL, created_ms BIGINT NOT NULL)",
                    self.table
                );
                create_once(&self.pool, TABLE, schema, &create)
                    .await
                    .map_err(|e| unavailable("creating its table", &e))
            })
            .await?;
        Ok(&self.pool)
    }

    /// Makes a token named `name` with `scope` and returns it: the only time it is shown.
    /// A name already taken is refused (revoke it first).
    pub async fn create(&self, name: &str, scope: &TokenScope) -> Result<String, AppError> {
        check_token_name(name)?;
        scope
            .caller()
            .map_err(|why| AppError::new(Code::InvalidArgument, why))?;
        let mut bytes = [0u8; TOKEN_BYTES];
        getrandom::fill(&mut bytes)
            .map_err(|e| AppError::internal(format!("no random bytes for a token: {e}")))?;
        let token = bytes.iter().fold(String::from(PREFIX), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        });
        let sql = format!(
            "INSERT INTO {} (name, digest, filter, can_write, collections, admin, created_ms) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (name) DO NOTHING",
            self.table
        );
        let done = sqlx::query(&sql)
            .bind(name)
            .bind(digest(token.as_bytes()).to_vec())
            .bind(serde_json::Value::Object(scope.filter.clone()).to_string())
            .bind(scope.write)
            .bind(serde_json::Value::from(scope.collections.clone()).to_string())
            .bind(scope.admin)
            .bind(crag_sessions::now_ms())
            .execute(self.pool().await?)
            .await
            .map_err(|e| unavailable("making a token", &e))?;
        if done.rows_affected() == 0 {
            return Err(AppError::new(
                Code::AlreadyExists,
                format!("a token named `{name}` exists: revoke it first"),
            ));
        }
        Ok(token)
    }

    /// Revokes the token named `name`; `false` when there is none.
    pub async fn revoke(&self, name: &str) -> Result<bool, AppError> {
        let sql = format!("DELETE FROM {} WHERE name = $1", self.table);
        let done = sqlx::query(&sql)
            .bind(name)
            .execute(self.pool().await?)
            .await
            .map_err(|e| unavailable("revoking", &e))?;
        Ok(done.rows_affected() == 1)
    }

    /// The stored tokens by name, with their scopes and (for [`Self::accepted`]) digests.
    async fn rows(&self) -> Result<Vec<(StoredToken, Vec<u8>)>, AppError> {
        let sql = format!(
            "SELECT name, digest, filter, can_write, collections, admin, created_ms FROM {} \
             ORDER BY name",
            self.table
        );
        let rows = sqlx::query(&sql)
            .fetch_all(self.pool().await?)
            .await
            .map_err(|e| unavailable("reading", &e))?;
        rows.iter()
            .map(|row| {
                let name: String = row.get(0);
                let unreadable =
                    |e: serde_json::Error| AppError::internal(format!("token `{name}`: {e}"));
                let filter: String = row.get(2);
                let collections: String = row.get(4);
                let scope = TokenScope {
                    filter: serde_json::from_str(&filter).map_err(unreadable)?,
                    write: row.get(3),
                    collections: serde_json::from_str(&collections).map_err(unreadable)?,
                    admin: row.get(5),
                };
                let token = StoredToken {
                    scope,
                    created_ms: row.get(6),
                    name,
                };
                Ok((token, row.get(1)))
            })
            .collect()
    }

    /// The stored tokens, by name.
    pub async fn list(&self) -> Result<Vec<StoredToken>, AppError> {
        Ok(self.rows().await?.into_iter().map(|(t, _)| t).collect())
    }

    /// The stored tokens' digests and the callers they make. A stored token whose scope no
    /// longer reads is left out and logged, never accepted with a wider one.
    pub async fn stored(&self) -> Result<Vec<([u8; 32], Caller)>, AppError> {
        let mut stored = Vec::new();
        for (token, digest) in self.rows().await? {
            match (
                <[u8; 32]>::try_from(digest.as_slice()),
                token.scope.caller(),
            ) {
                (Ok(d), Ok(caller)) => stored.push((d, caller)),
                (_, Err(why)) => {
                    tracing::error!(token = %token.name, %why, "a stored token is left out")
                }
                (Err(_), _) => {
                    tracing::error!(token = %token.name, "a stored token's digest is not 32 bytes")
                }
            }
        }
        Ok(stored)
    }
}

/// The tokens the APIs accept, kept current: the configuration's, read again from the file
/// and the environment on each SIGHUP (a file that no longer loads keeps the tokens in force
/// and logs why), and with `[auth] shared = true` the stored ones, read again every
/// `[storage] read_consistency_ms` (while Postgres cannot be reached, the last read stay in
/// force and each failed read is logged).
pub struct TokenReload {
    path: Option<PathBuf>,
    base: TokenSet,
    shared: Option<SharedTokens>,
    stored: Vec<([u8; 32], Caller)>,
    every: Duration,
    on_hangup: bool,
}

impl TokenReload {
    /// The configuration's tokens and, with `[auth] shared`, a first read of the stored ones
    /// (when it fails the service starts with the configuration's alone, and logs why).
    pub async fn start(config: &Config, path: Option<PathBuf>) -> Result<Self, ComposeError> {
        let mut reload = Self {
            path,
            base: TokenSet::from_config(config)?,
            shared: SharedTokens::of(config)?,
            stored: Vec::new(),
            every: crate::collections::recheck_interval(config),
            on_hangup: true,
        };
        reload.read_stored().await;
        Ok(reload)
    }

    /// Without reading the configuration again on SIGHUP (a binary that does not know its
    /// file's path).
    pub fn without_hangups(mut self) -> Self {
        self.on_hangup = false;
        self
    }

    /// The tokens accepted now.
    pub fn tokens(&self) -> TokenSet {
        self.stored
            .iter()
            .fold(self.base.clone(), |set, (d, caller)| {
                set.with_digest(*d, caller.clone())
            })
    }

    async fn read_stored(&mut self) {
        let Some(shared) = &self.shared else { return };
        match shared.stored().await {
            Ok(stored) => self.stored = stored,
            Err(e) => tracing::warn!(
                error = %e,
                "the stored tokens cannot be read: those read last stay in force"
            ),
        }
    }

    fn read_config(&mut self) {
        match reload_tokens(self.path.as_deref()) {
            Ok(base) => {
                self.base = base;
                tracing::info!("SIGHUP: tokens reloaded from the configuration");
            }
            Err(e) => tracing::error!(
                error = %error_chain(&e),
                "SIGHUP: tokens not reloaded; the previous ones stay in force"
            ),
        }
    }

    /// Keeps `api`'s tokens current until the process ends.
    pub fn spawn(mut self, api: crate::Api) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut hangups = hangups(self.on_hangup);
            let mut ticks = tokio::time::interval(self.every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            loop {
                tokio::select! {
                    () = hangup(&mut hangups) => self.read_config(),
                    _ = ticks.tick(), if self.shared.is_some() => self.read_stored().await,
                }
                api.set_tokens(self.tokens());
            }
        })
    }
}

/// The tokens the configuration at `path` (with the environment) accepts now.
pub fn reload_tokens(path: Option<&std::path::Path>) -> Result<TokenSet, ConfigError> {
    let config = Config::load(path, std::env::vars())?;
    TokenSet::from_config(&config)
}

#[cfg(unix)]
type Hangups = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type Hangups = ();

#[cfg(unix)]
fn hangups(wanted: bool) -> Hangups {
    use tokio::signal::unix::{signal, SignalKind};
    if !wanted {
        return None;
    }
    signal(SignalKind::hangup())
        .map_err(
            |e| tracing::error!(error = %e, "cannot listen for SIGHUP: tokens will not reload"),
        )
        .ok()
}

#[cfg(not(unix))]
fn hangups(_wanted: bool) -> Hangups {}

/// The next SIGHUP (never, where there are none).
async fn hangup(hangups: &mut Hangups) {
    #[cfg(unix)]
    if let Some(signal) = hangups {
        if signal.recv().await.is_some() {
            return;
        }
    }
    let _ = hangups;
    std::future::pending::<()>().await;
}

//! The session store (CGRAG): per-session cached context, the not-found set and the chat turns,
//! shared by concurrent requests.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use crag_core::{Session, SessionId, SessionSummary, SessionUpdate};

use crate::PortResult;

/// Cached nodes a session keeps by default; the least recently used go first.
pub const DEFAULT_MAX_NODES: usize = 50;

/// Stores sessions. Every method is atomic: concurrent updates of one session all land.
#[async_trait]
pub trait SessionStore: Debug + Send + Sync + 'static {
    /// The backend's name (`sqlite`, `postgres`, `memory`).
    fn backend(&self) -> &str;

    /// The session, or `None` when it does not exist (never created, deleted or expired).
    async fn load(&self, id: SessionId) -> PortResult<Option<Session>>;

    /// Applies `update` to the session at time `now_ms`, creating it if needed: its nodes move
    /// to the front of the cache in their order (the first ends first), the cache keeps the
    /// `max_nodes` most recently used, the not-found items join the set, the traversed symbols
    /// move to the front of the session's subgraph in their order (each replacing the one of
    /// its name; at most `max_nodes` symbols, the least recently traversed out first), the turn
    /// is appended; `last_used_ms` becomes `now_ms`.
    async fn save(
        &self,
        id: SessionId,
        update: &SessionUpdate,
        max_nodes: usize,
        now_ms: i64,
    ) -> PortResult<()>;

    /// Sessions, most recently used first, at most `limit`.
    async fn list(&self, limit: usize) -> PortResult<Vec<SessionSummary>>;

    /// Deletes the session; whether it existed.
    async fn delete(&self, id: SessionId) -> PortResult<bool>;

    /// Deletes the sessions last used before `idle_before_ms`, in every namespace of the
    /// store (one sweeper serves them all); how many.
    async fn expire(&self, idle_before_ms: i64) -> PortResult<usize>;

    /// The same store seen through `namespace` (a collection's name, without `/`; empty:
    /// the default namespace): its sessions are invisible to every other namespace (load, list, delete).
    /// A session id may exist in several namespaces as several sessions.
    fn in_namespace(&self, namespace: &str) -> Arc<dyn SessionStore>;

    /// Deletes every session of this namespace (its collection was deleted); how many.
    async fn clear(&self) -> PortResult<usize>;
}

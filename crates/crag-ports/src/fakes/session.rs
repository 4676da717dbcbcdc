//! An in-memory session store.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use crag_core::{Session, SessionId, SessionSummary, SessionUpdate};

use crate::{PortResult, SessionStore};

/// Sessions in a mutex-guarded map; for tests of the layers above the port, and for
/// deployments that want sessions to end with the process.
#[derive(Debug, Default, Clone)]
pub struct InMemorySessionStore {
    sessions: Arc<Mutex<HashMap<Key, Session>>>,
    namespace: Arc<str>,
}

type Key = (Arc<str>, SessionId);

impl InMemorySessionStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Session>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn key(&self, id: SessionId) -> Key {
        (Arc::clone(&self.namespace), id)
    }
}

#[async_trait]
impl SessionStore for InMemorySessionStore {
    fn backend(&self) -> &str {
        "memory"
    }

    async fn load(&self, id: SessionId) -> PortResult<Option<Session>> {
        Ok(self.lock().get(&self.key(id)).cloned())
    }

    async fn save(
        &self,
        id: SessionId,
        update: &SessionUpdate,
        max_nodes: usize,
        now_ms: i64,
    ) -> PortResult<()> {
        let mut sessions = self.lock();
        let s = sessions.entry(self.key(id)).or_insert_with(|| Session {
            id,
            nodes: Vec::new(),
            not_found: Vec::new(),
            symbols: Vec::new(),
            turns: Vec::new(),
            created_ms: now_ms,
            last_used_ms: now_ms,
        });
        let mut seen = std::collections::HashSet::new();
        let mut nodes: Vec<_> = update
            .nodes
            .iter()
            .filter(|n| seen.insert(n.chunk_id.clone()))
            .cloned()
            .collect();
        s.nodes
            .retain(|n| !nodes.iter().any(|m| m.chunk_id == n.chunk_id));
        nodes.append(&mut s.nodes);
        nodes.truncate(max_nodes);
        s.nodes = nodes;
        let set: BTreeSet<String> = s
            .not_found
            .drain(..)
            .chain(update.not_found.iter().cloned())
            .collect();
        s.not_found = set.into_iter().collect();
        let mut seen = std::collections::HashSet::new();
        let mut symbols: Vec<_> = update
            .symbols
            .iter()
            .filter(|t| seen.insert(t.symbol.clone()))
            .cloned()
            .collect();
        s.symbols.retain(|t| !seen.contains(&t.symbol));
        symbols.append(&mut s.symbols);
        symbols.truncate(max_nodes);
        s.symbols = symbols;
        s.turns.extend(update.turn.clone());
        s.last_used_ms = now_ms;
        Ok(())
    }

    async fn list(&self, limit: usize) -> PortResult<Vec<SessionSummary>> {
        let mut all: Vec<SessionSummary> = self
            .lock()
            .iter()
            .filter(|((namespace, _), _)| *namespace == self.namespace)
            .map(|(_, s)| SessionSummary {
                id: s.id,
                nodes: s.nodes.len(),
                turns: s.turns.len(),
                created_ms: s.created_ms,
                last_used_ms: s.last_used_ms,
            })
            .collect();
        all.sort_by(|a, b| b.last_used_ms.cmp(&a.last_used_ms).then(a.id.cmp(&b.id)));
        all.truncate(limit);
        Ok(all)
    }

    async fn delete(&self, id: SessionId) -> PortResult<bool> {
        Ok(self.lock().remove(&self.key(id)).is_some())
    }

    async fn expire(&self, idle_before_ms: i64) -> PortResult<usize> {
        let mut sessions = self.lock();
        let before = sessions.len();
        sessions.retain(|_, s| s.last_used_ms >= idle_before_ms);
        Ok(before - sessions.len())
    }

    fn in_namespace(&self, namespace: &str) -> Arc<dyn SessionStore> {
        Arc::new(Self {
            sessions: Arc::clone(&self.sessions),
            namespace: namespace.into(),
        })
    }

    async fn clear(&self) -> PortResult<usize> {
        let mut sessions = self.lock();
        let before = sessions.len();
        sessions.retain(|(namespace, _), _| *namespace != self.namespace);
        Ok(before - sessions.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_in_memory_store_passes_the_session_suite() {
        crate::testsuite::session_store_suite(&InMemorySessionStore::default()).await;
    }
}

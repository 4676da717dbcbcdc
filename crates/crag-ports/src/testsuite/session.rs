//! The session-store contract.

use crag_core::{CachedNode, ChatTurn, SessionId, SessionUpdate, TraversedSymbol};

use crate::SessionStore;

fn node(i: usize) -> CachedNode {
    CachedNode {
        chunk_id: format!("doc-{i}#0"),
        source: format!("src/file{i}.rs"),
        text: format!("fn item_{i}() {{}}"),
    }
}

fn traversed(symbol: &str, neighbours: &[&str]) -> TraversedSymbol {
    TraversedSymbol {
        symbol: symbol.into(),
        definition: vec![format!("{symbol}#def")],
        neighbours: neighbours.iter().map(|n| (*n).to_owned()).collect(),
    }
}

fn turn(question: &str, at_ms: i64) -> ChatTurn {
    ChatTurn {
        question: question.into(),
        answer: Some(format!("answer to {question}")),
        model: Some("model".into()),
        tokens: 12,
        at_ms,
    }
}

/// Runs the session-store contract against an empty store: a saved session reads back; nodes
/// move to the front when re-added and the cache keeps the most recent `max_nodes`; the
/// not-found set and the turns accumulate; unknown sessions read as `None`; listing, deleting
/// and expiring by idle time; 20 concurrent saves on one session all land; namespaces
/// ([`namespace_isolation`]) keep their sessions apart; the traversed subgraph
/// ([`traversed_subgraph`]) reads back, most recently traversed first, capped.
pub async fn session_store_suite(store: &dyn SessionStore) {
    assert!(!store.backend().is_empty(), "a store names its backend");
    let id = SessionId::from_bits(0xfeed_0000_0000_0000_0000_0000_0000_0001);
    assert_eq!(store.load(id).await.expect("load"), None, "unknown session");

    // Round trip.
    let first = SessionUpdate {
        nodes: vec![node(1), node(2)],
        not_found: vec!["verify_user".into()],
        turn: Some(turn("q1", 1_000)),
        ..SessionUpdate::default()
    };
    store.save(id, &first, 50, 1_000).await.expect("save");
    let s = store.load(id).await.expect("load").expect("saved session");
    assert_eq!(s.id, id);
    assert_eq!(s.nodes, vec![node(1), node(2)], "first node first");
    assert_eq!(s.not_found, vec!["verify_user".to_owned()]);
    assert_eq!(s.turns, vec![turn("q1", 1_000)]);
    assert_eq!((s.created_ms, s.last_used_ms), (1_000, 1_000));

    // Re-adding moves to the front without duplicating; the set and the turns accumulate.
    let second = SessionUpdate {
        nodes: vec![node(2), node(3)],
        not_found: vec!["verify_user".into(), "class Session".into()],
        turn: Some(turn("q2", 2_000)),
        ..SessionUpdate::default()
    };
    store.save(id, &second, 50, 2_000).await.expect("save");
    let s = store.load(id).await.expect("load").expect("session");
    assert_eq!(
        s.nodes,
        vec![node(2), node(3), node(1)],
        "most recent first"
    );
    assert_eq!(
        s.not_found,
        vec!["class Session".to_owned(), "verify_user".to_owned()],
        "a sorted set"
    );
    assert_eq!(
        s.turns,
        vec![turn("q1", 1_000), turn("q2", 2_000)],
        "oldest first"
    );
    assert_eq!((s.created_ms, s.last_used_ms), (1_000, 2_000));

    // The LRU cap.
    let many = SessionUpdate {
        nodes: (10..70).map(node).collect(),
        ..SessionUpdate::default()
    };
    store.save(id, &many, 50, 3_000).await.expect("save");
    let s = store.load(id).await.expect("load").expect("session");
    assert_eq!(s.nodes.len(), 50, "capped");
    assert_eq!(s.nodes.first(), Some(&node(10)));
    assert_eq!(s.nodes.last(), Some(&node(59)));
    assert!(!s.nodes.contains(&node(1)), "the least recently used left");

    // Listing, most recently used first.
    let other = SessionId::from_bits(2);
    store
        .save(other, &SessionUpdate::default(), 50, 5_000)
        .await
        .expect("save");
    let list = store.list(10).await.expect("list");
    let ids: Vec<SessionId> = list.iter().map(|s| s.id).collect();
    assert_eq!(ids, vec![other, id]);
    assert_eq!((list[1].nodes, list[1].turns), (50, 2));
    assert_eq!(store.list(1).await.expect("list").len(), 1, "limit");

    // Expiry by idle time keeps the fresh session.
    assert_eq!(store.expire(4_000).await.expect("expire"), 1);
    assert_eq!(store.load(id).await.expect("load"), None, "expired");
    assert!(store.load(other).await.expect("load").is_some(), "kept");

    // Deleting.
    assert!(store.delete(other).await.expect("delete"));
    assert!(!store.delete(other).await.expect("delete again"));
    assert_eq!(store.load(other).await.expect("load"), None);

    // Concurrent saves on one session lose nothing.
    let shared = SessionId::from_bits(3);
    let saves = (0..20).map(|i| {
        let update = SessionUpdate {
            nodes: vec![node(100 + i)],
            not_found: vec![format!("gap {i}")],
            symbols: vec![traversed(&format!("module::f{i}"), &[])],
            turn: Some(turn(&format!("question {i}"), 10_000 + i as i64)),
        };
        async move {
            store
                .save(shared, &update, 50, 10_000 + i as i64)
                .await
                .expect("concurrent save")
        }
    });
    futures::future::join_all(saves).await;
    let s = store.load(shared).await.expect("load").expect("session");
    assert_eq!(s.nodes.len(), 20, "every node landed");
    assert_eq!(s.not_found.len(), 20, "every not-found item landed");
    assert_eq!(s.turns.len(), 20, "every turn landed");
    assert_eq!(s.symbols.len(), 20, "every traversed symbol landed");
    namespace_isolation(store).await;
    traversed_subgraph(store).await;
}

/// A session saved in one namespace is invisible to the others (load, list, delete); the
/// same id in two namespaces is two sessions; `clear` empties one namespace only.
async fn namespace_isolation(store: &dyn SessionStore) {
    let a = store.in_namespace("team-a");
    let b = store.in_namespace("team_b");
    let id = SessionId::from_bits(0xa11ce);
    let update = SessionUpdate {
        nodes: vec![node(1)],
        ..SessionUpdate::default()
    };
    a.save(id, &update, 50, 20_000).await.expect("save in a");
    assert_eq!(
        b.load(id).await.expect("load"),
        None,
        "b does not see a's session"
    );
    assert_eq!(
        store.load(id).await.expect("load"),
        None,
        "nor does the default namespace"
    );
    assert!(!b.delete(id).await.expect("delete"), "b cannot delete it");
    assert!(
        b.list(10).await.expect("list").is_empty(),
        "b lists nothing"
    );
    assert!(
        store
            .list(100)
            .await
            .expect("list")
            .iter()
            .all(|s| s.id != id),
        "the default namespace does not list it"
    );
    let listed: Vec<SessionId> = a
        .list(10)
        .await
        .expect("list")
        .iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(listed, vec![id], "a lists it under its own id");

    b.save(id, &SessionUpdate::default(), 50, 21_000)
        .await
        .expect("the same id in b");
    let in_a = a.load(id).await.expect("load").expect("a's session");
    let in_b = b.load(id).await.expect("load").expect("b's session");
    assert_eq!((in_a.nodes.len(), in_b.nodes.len()), (1, 0), "two sessions");

    assert_eq!(a.clear().await.expect("clear"), 1);
    assert_eq!(a.load(id).await.expect("load"), None, "cleared");
    assert!(
        b.load(id).await.expect("load").is_some(),
        "b kept its session"
    );
    assert!(b.delete(id).await.expect("delete"));
}

/// The symbols a session traversed read back with their chunks, in order; a symbol traversed
/// again moves to the front with its new chunks; the cap keeps the most recently traversed;
/// deleting the session deletes them.
async fn traversed_subgraph(store: &dyn SessionStore) {
    let id = SessionId::from_bits(0x5ab9_7a9f);
    let first = SessionUpdate {
        symbols: vec![
            traversed("auth::login", &["users.rs#verify_user", "auth.rs#Auth"]),
            traversed("users::verify_user", &[]),
            traversed("auth::login", &["ignored, a repeat"]),
        ],
        ..SessionUpdate::default()
    };
    store.save(id, &first, 3, 30_000).await.expect("save");
    let s = store.load(id).await.expect("load").expect("session");
    assert_eq!(
        s.symbols,
        vec![
            traversed("auth::login", &["users.rs#verify_user", "auth.rs#Auth"]),
            traversed("users::verify_user", &[]),
        ],
        "first traversed first, a repeat within one update ignored"
    );
    assert!(s.nodes.is_empty(), "symbols are not cached nodes");

    let second = SessionUpdate {
        nodes: vec![node(1)],
        symbols: vec![
            traversed("tokens::issue", &["tokens.rs#sign"]),
            traversed("users::verify_user", &["db.rs#lookup"]),
        ],
        ..SessionUpdate::default()
    };
    store.save(id, &second, 3, 31_000).await.expect("save");
    let s = store.load(id).await.expect("load").expect("session");
    let names: Vec<&str> = s.symbols.iter().map(|t| t.symbol.as_str()).collect();
    assert_eq!(
        names,
        ["tokens::issue", "users::verify_user", "auth::login"],
        "most recently traversed first"
    );
    assert_eq!(
        s.symbols[1],
        traversed("users::verify_user", &["db.rs#lookup"]),
        "traversed again: its new chunks replace the old"
    );
    assert_eq!(s.nodes, vec![node(1)], "the nodes are kept apart");

    let third = SessionUpdate {
        symbols: vec![traversed("cli::main", &[])],
        ..SessionUpdate::default()
    };
    store.save(id, &third, 3, 32_000).await.expect("save");
    let s = store.load(id).await.expect("load").expect("session");
    let names: Vec<&str> = s.symbols.iter().map(|t| t.symbol.as_str()).collect();
    assert_eq!(
        names,
        ["cli::main", "tokens::issue", "users::verify_user"],
        "capped: the least recently traversed left"
    );
    assert!(store.delete(id).await.expect("delete"));
    store
        .save(id, &SessionUpdate::default(), 3, 33_000)
        .await
        .expect("save");
    let s = store.load(id).await.expect("load").expect("session");
    assert!(s.symbols.is_empty(), "deleted with its session");
    assert!(store.delete(id).await.expect("delete"));
}

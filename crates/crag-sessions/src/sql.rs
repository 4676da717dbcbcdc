//! The session stores' SQL, one text for both backends (SQLite's dialect is derived from it
//! where they differ).

pub(crate) const UPSERT_SESSION: &str =
    "INSERT INTO sessions (id, created_ms, last_used_ms, clock) \
     VALUES ($1, $2, $2, 0) \
     ON CONFLICT (id) DO UPDATE SET last_used_ms = excluded.last_used_ms \
     RETURNING clock";
pub(crate) const UPSERT_NODE: &str =
    "INSERT INTO session_nodes (session_id, chunk_id, source, body, used) \
     VALUES ($1, $2, $3, $4, $5) \
     ON CONFLICT (session_id, chunk_id) DO UPDATE \
     SET source = excluded.source, body = excluded.body, used = excluded.used";
pub(crate) const EVICT_NODES: &str =
    "DELETE FROM session_nodes WHERE session_id = $1 AND chunk_id NOT IN \
     (SELECT chunk_id FROM session_nodes WHERE session_id = $1 ORDER BY used DESC LIMIT $2)";
pub(crate) const ADD_NOT_FOUND: &str =
    "INSERT INTO session_not_found (session_id, item) VALUES ($1, $2) \
     ON CONFLICT (session_id, item) DO NOTHING";
pub(crate) const ADD_TURN: &str = "INSERT INTO session_turns \
     (session_id, seq, question, answer, model, tokens, at_ms) \
     VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM session_turns WHERE session_id = $1), \
     $2, $3, $4, $5, $6)";
pub(crate) const UPSERT_SYMBOL: &str = "INSERT INTO session_symbols \
     (session_id, symbol, definition, neighbours, used) VALUES ($1, $2, $3, $4, $5) \
     ON CONFLICT (session_id, symbol) DO UPDATE \
     SET definition = excluded.definition, neighbours = excluded.neighbours, used = excluded.used";
pub(crate) const EVICT_SYMBOLS: &str =
    "DELETE FROM session_symbols WHERE session_id = $1 AND symbol NOT IN \
     (SELECT symbol FROM session_symbols WHERE session_id = $1 ORDER BY used DESC LIMIT $2)";
pub(crate) const SELECT_SYMBOLS: &str =
    "SELECT symbol, definition, neighbours FROM session_symbols \
     WHERE session_id = $1 ORDER BY used DESC";
pub(crate) const SET_CLOCK: &str = "UPDATE sessions SET clock = $2 WHERE id = $1";
pub(crate) const SELECT_SESSION: &str =
    "SELECT created_ms, last_used_ms FROM sessions WHERE id = $1";
pub(crate) const SELECT_NODES: &str =
    "SELECT chunk_id, source, body FROM session_nodes WHERE session_id = $1 ORDER BY used DESC";
pub(crate) const SELECT_NOT_FOUND: &str =
    "SELECT item FROM session_not_found WHERE session_id = $1";
pub(crate) const SELECT_TURNS: &str =
    "SELECT question, answer, model, tokens, at_ms FROM session_turns \
     WHERE session_id = $1 ORDER BY seq";
/// The sessions of the namespace whose key prefix is `$n`: ids without `/` for the default
/// namespace (`''`), ids starting with the prefix for the others.
macro_rules! in_namespace {
    ($column:literal, $n:literal) => {
        concat!(
            "((",
            $n,
            " = '' AND ",
            $column,
            " NOT LIKE '%/%') OR (",
            $n,
            " <> '' AND substr(",
            $column,
            ", 1, length(",
            $n,
            ")) = ",
            $n,
            "))"
        )
    };
}
pub(crate) const LIST: &str = concat!(
    "SELECT s.id, s.created_ms, s.last_used_ms, \
     (SELECT COUNT(*) FROM session_nodes n WHERE n.session_id = s.id) AS nodes, \
     (SELECT COUNT(*) FROM session_turns t WHERE t.session_id = s.id) AS turns \
     FROM sessions s WHERE ",
    in_namespace!("s.id", "$2"),
    " ORDER BY s.last_used_ms DESC, s.id LIMIT $1"
);
pub(crate) const DELETE: &str = "DELETE FROM sessions WHERE id = $1";
pub(crate) const EXPIRE: &str = "DELETE FROM sessions WHERE last_used_ms < $1";
pub(crate) const CLEAR: &str = concat!("DELETE FROM sessions WHERE ", in_namespace!("id", "$1"));

-- CGRAG sessions (seed 002): cached context, the not-found set and chat turns.
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    created_ms BIGINT NOT NULL,
    last_used_ms BIGINT NOT NULL,
    -- Next value of the LRU clock of the session's nodes.
    clock BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX sessions_last_used ON sessions (last_used_ms);

CREATE TABLE session_nodes (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    chunk_id TEXT NOT NULL,
    source TEXT NOT NULL,
    body TEXT NOT NULL,
    used BIGINT NOT NULL,
    PRIMARY KEY (session_id, chunk_id)
);

CREATE TABLE session_not_found (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    item TEXT NOT NULL,
    PRIMARY KEY (session_id, item)
);

CREATE TABLE session_turns (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    question TEXT NOT NULL,
    answer TEXT,
    model TEXT,
    tokens BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq)
);

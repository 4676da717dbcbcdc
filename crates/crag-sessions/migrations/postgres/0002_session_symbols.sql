-- The traversed subgraph of CGRAG sessions: the symbols whose definition and one-hop
-- neighbourhood a session fetched, with the chunks reached (ids separated by newlines: chunk ids
-- hold no control characters). `used` is a stamp of the session's LRU clock.
CREATE TABLE session_symbols (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    symbol TEXT NOT NULL,
    definition TEXT NOT NULL,
    neighbours TEXT NOT NULL,
    used BIGINT NOT NULL,
    PRIMARY KEY (session_id, symbol)
);

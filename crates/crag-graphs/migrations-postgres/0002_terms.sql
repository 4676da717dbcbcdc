-- The term graph in Postgres: the tables of `migrations-terms/` (SQLite), text compared byte
-- by byte (COLLATE "C") as in SQLite.

-- One row per document written, locked by its writers until commit (as `symbol_documents`).
CREATE TABLE term_documents (
    document_id TEXT COLLATE "C" PRIMARY KEY
);

CREATE TABLE term_chunks (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    chunk_id TEXT COLLATE "C" NOT NULL UNIQUE,
    document_id TEXT COLLATE "C" NOT NULL
);
CREATE INDEX term_chunks_document ON term_chunks (document_id);

CREATE TABLE chunk_terms (
    chunk BIGINT NOT NULL REFERENCES term_chunks (id) ON DELETE CASCADE,
    term TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (term, chunk)
);
CREATE INDEX chunk_terms_chunk ON chunk_terms (chunk, term);

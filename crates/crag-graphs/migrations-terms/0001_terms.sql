-- The term graph: the key terms of each chunk. Two terms are neighbours when they are key
-- terms of the same chunk; co-occurrence counts are read with a self-join.
CREATE TABLE term_chunks (
    id INTEGER PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    document_id TEXT NOT NULL
);
CREATE INDEX term_chunks_document ON term_chunks (document_id);
CREATE TABLE chunk_terms (
    chunk INTEGER NOT NULL,
    term TEXT NOT NULL,
    PRIMARY KEY (term, chunk)
) WITHOUT ROWID;
CREATE INDEX chunk_terms_chunk ON chunk_terms (chunk, term);

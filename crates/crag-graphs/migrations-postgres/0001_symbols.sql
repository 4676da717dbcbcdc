-- The symbol index in Postgres: the tables of `migrations/` (SQLite), text compared byte by
-- byte (COLLATE "C") so that ordering and the prefix ranges of suffix lookups are the same
-- as SQLite's whatever the database's locale.

-- One row per document written: a writer upserts it first, which locks it until commit, so
-- writes of one document from several processes happen one after the other.
CREATE TABLE symbol_documents (
    document_id TEXT COLLATE "C" PRIMARY KEY
);

CREATE TABLE symbol_defs (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id TEXT COLLATE "C" NOT NULL,
    path TEXT COLLATE "C" NOT NULL,
    chunk_id TEXT COLLATE "C" NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    qualified TEXT COLLATE "C" NOT NULL,
    -- `qualified` reversed by characters: suffix lookups become index range scans.
    qualified_rev TEXT COLLATE "C" NOT NULL,
    kind TEXT NOT NULL,
    language TEXT NOT NULL,
    line_start BIGINT NOT NULL,
    line_end BIGINT NOT NULL,
    signature TEXT NOT NULL
);
CREATE INDEX symbol_defs_name ON symbol_defs (name);
CREATE INDEX symbol_defs_qualified ON symbol_defs (qualified);
CREATE INDEX symbol_defs_qualified_rev ON symbol_defs (qualified_rev);
CREATE INDEX symbol_defs_document ON symbol_defs (document_id);
CREATE INDEX symbol_defs_chunk ON symbol_defs (chunk_id);

CREATE TABLE symbol_refs (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id TEXT COLLATE "C" NOT NULL,
    chunk_id TEXT COLLATE "C" NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    qualifier TEXT COLLATE "C",
    -- The qualified path of the definition holding the reference; NULL at top level.
    from_qualified TEXT COLLATE "C",
    kind TEXT NOT NULL,
    line BIGINT NOT NULL
);
CREATE INDEX symbol_refs_name ON symbol_refs (name);
CREATE INDEX symbol_refs_from ON symbol_refs (from_qualified);
CREATE INDEX symbol_refs_document ON symbol_refs (document_id);
CREATE INDEX symbol_refs_chunk ON symbol_refs (chunk_id);

CREATE TABLE chunk_meta (
    chunk_id TEXT COLLATE "C" PRIMARY KEY,
    document_id TEXT COLLATE "C" NOT NULL,
    language TEXT NOT NULL,
    symbol TEXT NOT NULL,
    symbol_kind TEXT NOT NULL,
    qualified TEXT NOT NULL,
    signature TEXT NOT NULL,
    part BIGINT NOT NULL,
    parts BIGINT NOT NULL
);
CREATE INDEX chunk_meta_document ON chunk_meta (document_id);

-- The symbol index: definitions and references of source files, and the code metadata of
-- their chunks. Every row belongs to one document and is replaced with it.
CREATE TABLE symbol_defs (
    id INTEGER PRIMARY KEY,
    document_id TEXT NOT NULL,
    path TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    name TEXT NOT NULL,
    qualified TEXT NOT NULL,
    -- `qualified` reversed by characters: suffix lookups become index range scans.
    qualified_rev TEXT NOT NULL,
    kind TEXT NOT NULL,
    language TEXT NOT NULL,
    line_start INTEGER NOT NULL,
    line_end INTEGER NOT NULL,
    signature TEXT NOT NULL
);
CREATE INDEX symbol_defs_name ON symbol_defs (name);
CREATE INDEX symbol_defs_qualified ON symbol_defs (qualified);
CREATE INDEX symbol_defs_qualified_rev ON symbol_defs (qualified_rev);
CREATE INDEX symbol_defs_document ON symbol_defs (document_id);
CREATE INDEX symbol_defs_chunk ON symbol_defs (chunk_id);

CREATE TABLE symbol_refs (
    id INTEGER PRIMARY KEY,
    document_id TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    name TEXT NOT NULL,
    qualifier TEXT,
    -- The qualified path of the definition holding the reference; NULL at top level.
    from_qualified TEXT,
    kind TEXT NOT NULL,
    line INTEGER NOT NULL
);
CREATE INDEX symbol_refs_name ON symbol_refs (name);
CREATE INDEX symbol_refs_from ON symbol_refs (from_qualified);
CREATE INDEX symbol_refs_document ON symbol_refs (document_id);
CREATE INDEX symbol_refs_chunk ON symbol_refs (chunk_id);

CREATE TABLE chunk_meta (
    chunk_id TEXT PRIMARY KEY,
    document_id TEXT NOT NULL,
    language TEXT NOT NULL,
    symbol TEXT NOT NULL,
    symbol_kind TEXT NOT NULL,
    qualified TEXT NOT NULL,
    signature TEXT NOT NULL,
    part INTEGER NOT NULL,
    parts INTEGER NOT NULL
);
CREATE INDEX chunk_meta_document ON chunk_meta (document_id);

//! Upgrading a keyword index written by an earlier release (before token counts, or before
//! metadata, were stored).
//!
//! Tantivy cannot add a field to an existing index, so the chunks are written again, with
//! their counts, into a new index beside it, whose segment files are then copied into the old
//! index's directory; replacing `meta.json` (one atomic write) switches to them. Before that
//! write the old index is whole and in use; after it, the new one. A crash in between leaves
//! unreferenced files that the next writer's garbage collection deletes (they are registered
//! as the index's own), never a half index. The old segments are collected at the end.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crag_ports::{ErrorKind, PortError, PortResult};
use tantivy::directory::footer::Footer;
use tantivy::directory::{Directory, MmapDirectory, TerminatingWrite as _};
use tantivy::{Index, IndexWriter, TantivyDocument};

use crate::error::{io_error, port_error};
use crate::index::WRITER_MEMORY_BUDGET;
use crate::schema::{analyzer, open_index, Fields, Version, ANALYZER};

/// Rewrites the keyword index in `dir` with the current schema: each chunk with its stored
/// token count, or the one `count` gives its text (the embedder's tokenizer: what a query
/// would count for it) when it has none, and its metadata (for chunks written before
/// metadata was stored, the fields derived from their source and kind). Returns the number
/// of chunks written, or `None` when the index has the current schema.
///
/// Takes the index's writer lock for the whole upgrade: it fails as
/// [`ErrorKind::Unavailable`] while another process (a server) has the index open. Blocking
/// IO; idempotent.
pub fn upgrade(dir: &Path, count: &dyn Fn(&str) -> usize) -> PortResult<Option<usize>> {
    const MESSAGE: &str = "failed to upgrade the keyword index";
    let (index, fields) = open_index(dir)?;
    if fields.is_current() {
        return Ok(None);
    }
    // Held until the switch: nobody writes the old index meanwhile.
    let writer: IndexWriter = index
        .writer(WRITER_MEMORY_BUDGET)
        .map_err(|err| PortError::with_source(ErrorKind::Unavailable, MESSAGE, err))?;
    let staging = staging_dir(dir);
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(io_error(MESSAGE))?;
    }
    std::fs::create_dir_all(&staging).map_err(io_error(MESSAGE))?;
    let (schema, current) = Fields::schema_of(Version::Current);
    let upgraded = Index::create_in_dir(&staging, schema).map_err(port_error(MESSAGE))?;
    upgraded.tokenizers().register(ANALYZER, analyzer()?);
    // One thread: one segment per memory budget's worth of chunks, not one per thread.
    let mut staging_writer: IndexWriter = upgraded
        .writer_with_num_threads(1, WRITER_MEMORY_BUDGET)
        .map_err(port_error(MESSAGE))?;
    // Chunk by chunk: the index is never held in memory whole.
    let reader = index.reader().map_err(port_error(MESSAGE))?;
    let searcher = reader.searcher();
    let mut chunks = 0usize;
    for segment in searcher.segment_readers() {
        let store = segment.get_store_reader(1).map_err(io_error(MESSAGE))?;
        for doc in store.iter::<TantivyDocument>(segment.alive_bitset()) {
            let chunk = fields.chunk_of(&doc.map_err(port_error(MESSAGE))?)?;
            let chunk = match chunk.tokens {
                Some(_) => chunk,
                None => {
                    let tokens = count(&chunk.text);
                    chunk.with_tokens(tokens)
                }
            };
            staging_writer
                .add_document(current.document_of(&chunk))
                .map_err(port_error(MESSAGE))?;
            chunks += 1;
        }
    }
    drop(searcher);
    drop(reader);
    staging_writer.commit().map_err(port_error(MESSAGE))?;
    staging_writer
        .wait_merging_threads()
        .map_err(port_error(MESSAGE))?;

    // Copy the new segments into the old directory (registered as its files), then switch.
    let source = copy_segments(&staging, &index)?;
    let meta = std::fs::read(staging.join("meta.json")).map_err(io_error(MESSAGE))?;
    index
        .directory()
        .atomic_write(Path::new("meta.json"), &meta)
        .map_err(io_error(MESSAGE))?;
    drop(writer);
    drop(index);
    drop(source);
    std::fs::remove_dir_all(&staging).map_err(io_error(MESSAGE))?;
    // The whole documents' rows were written from the old chunks: the next open writes them
    // again from the upgraded ones (their metadata included).
    let rows = dir.join(crate::documents::DIRECTORY);
    if rows.exists() {
        std::fs::remove_dir_all(&rows).map_err(io_error(MESSAGE))?;
    }

    // The old segments are no longer referenced: collect them.
    let (index, fields) = open_index(dir)?;
    if !fields.is_current() {
        return Err(PortError::new(
            ErrorKind::Internal,
            "the upgraded keyword index does not have the current schema",
        ));
    }
    let writer: IndexWriter = index
        .writer(WRITER_MEMORY_BUDGET)
        .map_err(port_error(MESSAGE))?;
    writer
        .garbage_collect_files()
        .wait()
        .map_err(port_error(MESSAGE))?;
    tracing::info!(path = %dir.display(), chunks, "keyword index upgraded to the current schema");
    Ok(Some(chunks))
}

/// Copies the staging index's own files into `index`'s directory, registered as its files:
/// its segments' (`<uuid>.<component>`), not its meta, its list of managed files or its locks
/// (dot files). Read mapped, not loaded; returns the staging directory, still open.
fn copy_segments(staging: &Path, index: &Index) -> PortResult<MmapDirectory> {
    const MESSAGE: &str = "failed to upgrade the keyword index";
    let source = MmapDirectory::open(staging)
        .map_err(|err| PortError::with_source(ErrorKind::Internal, MESSAGE, err))?;
    for entry in std::fs::read_dir(staging).map_err(io_error(MESSAGE))? {
        let entry = entry.map_err(io_error(MESSAGE))?;
        let name = PathBuf::from(entry.file_name());
        let text = name.to_string_lossy();
        if text == "meta.json" || text.starts_with('.') || !entry.path().is_file() {
            continue;
        }
        // The directory writes a file's footer (its checksum) itself: copy the body.
        let file = source
            .open_read(&name)
            .map_err(|err| PortError::internal(MESSAGE, err))?;
        let (_, body) = Footer::extract_footer(file).map_err(io_error(MESSAGE))?;
        let body = body.read_bytes().map_err(io_error(MESSAGE))?;
        let mut out = index
            .directory()
            .open_write(&name)
            .map_err(|err| PortError::internal(MESSAGE, err))?;
        out.write_all(body.as_slice()).map_err(io_error(MESSAGE))?;
        out.terminate().map_err(io_error(MESSAGE))?;
    }
    Ok(source)
}

/// Removes what an upgrade of the keyword index in `dir` left beside it when it stopped
/// after the switch (its staging index, no longer used); whether there was anything.
pub fn remove_upgrade_leftovers(dir: &Path) -> PortResult<bool> {
    let staging = staging_dir(dir);
    if !staging.exists() {
        return Ok(false);
    }
    std::fs::remove_dir_all(&staging)
        .map_err(io_error("failed to remove an upgrade's leftovers"))?;
    Ok(true)
}

/// Whether the keyword index in `dir` has the current schema (an absent one has).
pub fn is_upgraded(dir: &Path) -> PortResult<bool> {
    if !dir.join("meta.json").exists() {
        return Ok(true);
    }
    Ok(open_index(dir)?.1.is_current())
}

/// Where the new index is built: beside `dir`.
fn staging_dir(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(".upgrade");
    dir.with_file_name(name)
}

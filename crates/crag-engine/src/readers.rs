//! Readers turning a directory tree or a BEIR `corpus.jsonl` into documents.
//!
//! Directory walks never follow symbolic links (so nothing outside the root is read), skip
//! hidden entries and build/vendor folders, files over the size limit and anything that is not
//! UTF-8 text.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use crag_core::{ChunkKind, Document, DocumentId};
use serde::Deserialize;

use crate::error::{EngineError, Result};

mod meta;

pub use meta::{MAX_FILE_METADATA_BYTES, SIDECAR_SUFFIX};

/// Largest file read by default (1 MiB).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Folders never descended into.
const SKIPPED_DIRS: &[&str] = &[
    "target",
    "node_modules",
    "__pycache__",
    "venv",
    "dist",
    "build",
];

/// Extensions read as source code.
const CODE_EXTENSIONS: &[&str] = &[
    "rs", "py", "js", "jsx", "ts", "tsx", "go", "java", "kt", "scala", "c", "h", "cc", "cpp",
    "hpp", "cs", "rb", "php", "swift", "sh", "bash", "sql", "proto", "toml", "yaml", "yml", "json",
    "lua", "zig", "hs", "ml", "ex", "exs", "r", "jl",
];

/// Extensions read as prose.
const PROSE_EXTENSIONS: &[&str] = &["md", "markdown", "txt", "rst", "adoc", "org", "text"];

/// Which stored documents an ingestion run owns: those it does not see again are deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Documents whose id starts with this prefix (a directory or a corpus file).
    Prefix(String),
    /// Exactly this document (a single file).
    Exact(DocumentId),
    /// Nothing is deleted (documents pushed one by one).
    None,
}

impl Scope {
    pub(crate) fn owns(&self, id: &DocumentId) -> bool {
        match self {
            Self::Prefix(prefix) => id.as_str().starts_with(prefix.as_str()),
            Self::Exact(exact) => exact == id,
            Self::None => false,
        }
    }
}

/// A file that was not ingested, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The file.
    pub path: PathBuf,
    /// Why, in a few words.
    pub reason: String,
}

/// Documents read from a source, what was skipped, and the scope they cover.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Readable documents.
    pub documents: Vec<Document>,
    /// Files or records left out.
    pub skipped: Vec<Skipped>,
    /// Which stored documents this source owns (for detecting deletions).
    pub scope: Scope,
}

fn kind_of(path: &Path) -> Option<ChunkKind> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    if PROSE_EXTENSIONS.contains(&ext.as_str()) {
        Some(ChunkKind::Prose)
    } else if CODE_EXTENSIONS.contains(&ext.as_str()) {
        Some(ChunkKind::Code)
    } else {
        None
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> EngineError + '_ {
    move |source| EngineError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads a single file or every text file under `root`.
///
/// Document ids are canonical absolute paths (stable whatever the working directory); sources
/// shown to users are paths as given (`root` joined with the relative path).
pub fn read_path(root: &Path, max_file_bytes: u64) -> Result<Loaded> {
    let canonical = root.canonicalize().map_err(io_err(root))?;
    let mut documents = Vec::new();
    let mut skipped = Vec::new();
    if canonical.is_file() {
        match read_file(&canonical, root, max_file_bytes)? {
            Ok(doc) => documents.push(doc),
            Err(reason) => skipped.push(Skipped {
                path: root.to_path_buf(),
                reason,
            }),
        }
        let scope = Scope::Exact(DocumentId::new(canonical.to_string_lossy())?);
        return Ok(Loaded {
            documents,
            skipped,
            scope,
        });
    }
    let walker = walkdir::WalkDir::new(&canonical)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            e.depth() == 0
                || !(name.starts_with('.')
                    || (e.file_type().is_dir() && SKIPPED_DIRS.contains(&name.as_ref())))
        });
    for entry in walker {
        let entry = entry.map_err(|e| {
            let path = e
                .path()
                .map_or_else(|| canonical.clone(), Path::to_path_buf);
            EngineError::Io {
                path,
                source: e.into(),
            }
        })?;
        let file_type = entry.file_type();
        if file_type.is_symlink() {
            skipped.push(Skipped {
                path: entry.path().to_path_buf(),
                reason: "symbolic link not followed".into(),
            });
            continue;
        }
        if !file_type.is_file() {
            continue;
        }
        let relative = entry
            .path()
            .strip_prefix(&canonical)
            .unwrap_or(entry.path());
        let shown = root.join(relative);
        match read_file(entry.path(), &shown, max_file_bytes)? {
            Ok(doc) => documents.push(doc),
            Err(reason) => skipped.push(Skipped {
                path: shown,
                reason,
            }),
        }
    }
    let prefix = format!("{}/", canonical.to_string_lossy().trim_end_matches('/'));
    Ok(Loaded {
        documents,
        skipped,
        scope: Scope::Prefix(prefix),
    })
}

/// Reads one file; the inner error says why it was skipped.
fn read_file(
    path: &Path,
    shown: &Path,
    max_bytes: u64,
) -> Result<std::result::Result<Document, String>> {
    if meta::is_sidecar(path) {
        return Ok(Err("metadata sidecar (read with its file)".into()));
    }
    let Some(kind) = kind_of(path) else {
        return Ok(Err("not a known text or source extension".into()));
    };
    let meta = std::fs::metadata(path).map_err(io_err(path))?;
    if meta.len() > max_bytes {
        return Ok(Err(format!("larger than {max_bytes} bytes")));
    }
    let bytes = std::fs::read(path).map_err(io_err(path))?;
    if bytes.contains(&0) {
        return Ok(Err("binary content".into()));
    }
    let Ok(text) = String::from_utf8(bytes) else {
        return Ok(Err("not valid UTF-8".into()));
    };
    if text.trim().is_empty() {
        return Ok(Err("empty".into()));
    }
    let title = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let metadata = match meta::of_file(path, &text, meta.modified().ok()) {
        Ok(metadata) => metadata,
        Err(reason) => return Ok(Err(reason)),
    };
    let id = DocumentId::new(path.to_string_lossy())?;
    Ok(Ok(Document::new(
        id,
        shown.to_string_lossy(),
        title,
        text,
        kind,
    )?
    .with_metadata(metadata)))
}

#[derive(Deserialize)]
struct BeirRecord {
    #[serde(rename = "_id")]
    id: serde_json::Value,
    #[serde(default)]
    title: String,
    #[serde(default)]
    text: String,
    /// The record's metadata (BEIR corpora may carry one object per record).
    #[serde(default)]
    metadata: Option<serde_json::Value>,
}

/// Separator between a corpus path and a record id in document ids of BEIR documents.
pub const BEIR_ID_SEPARATOR: char = '#';

/// Reads a BEIR `corpus.jsonl` (`{"_id", "title", "text"}` per line).
///
/// Document ids are `<canonical corpus path>#<_id>`; records with no text and no title are
/// skipped and reported, malformed lines are an error naming the line.
pub fn read_beir_corpus(corpus: &Path) -> Result<Loaded> {
    let canonical = corpus.canonicalize().map_err(io_err(corpus))?;
    let file = std::fs::File::open(&canonical).map_err(io_err(corpus))?;
    let mut documents = Vec::new();
    let mut skipped = Vec::new();
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(io_err(corpus))?;
        if line.trim().is_empty() {
            continue;
        }
        let record: BeirRecord = serde_json::from_str(&line).map_err(|e| {
            EngineError::InvalidInput(format!(
                "{}:{}: malformed corpus record: {e}",
                corpus.display(),
                n + 1
            ))
        })?;
        let id = match record.id {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        };
        let text = match (
            record.title.trim().is_empty(),
            record.text.trim().is_empty(),
        ) {
            (_, false) => record.text,
            (false, true) => record.title.clone(),
            (true, true) => {
                skipped.push(Skipped {
                    path: PathBuf::from(format!("{}#{id}", corpus.display())),
                    reason: "empty record".into(),
                });
                continue;
            }
        };
        let metadata = match record.metadata {
            None | Some(serde_json::Value::Null) => crag_core::Metadata::new(),
            Some(serde_json::Value::Object(object)) => object,
            Some(_) => {
                return Err(EngineError::InvalidInput(format!(
                    "{}:{}: `metadata` is not a JSON object",
                    corpus.display(),
                    n + 1
                )))
            }
        };
        crag_core::check_metadata(&metadata, MAX_FILE_METADATA_BYTES).map_err(|e| {
            EngineError::InvalidInput(format!("{}:{}: {e}", corpus.display(), n + 1))
        })?;
        let doc_id = DocumentId::new(format!("{}{BEIR_ID_SEPARATOR}{id}", canonical.display()))?;
        let source = format!("{}{BEIR_ID_SEPARATOR}{id}", corpus.display());
        documents.push(
            Document::new(doc_id, source, record.title, text, ChunkKind::Prose)?
                .with_metadata(metadata),
        );
    }
    let prefix = format!("{}{BEIR_ID_SEPARATOR}", canonical.display());
    Ok(Loaded {
        documents,
        skipped,
        scope: Scope::Prefix(prefix),
    })
}

/// Returns true when `path` looks like a BEIR corpus file.
pub fn is_beir_corpus(path: &Path) -> bool {
    path.is_file() && path.file_name().is_some_and(|n| n == "corpus.jsonl")
}

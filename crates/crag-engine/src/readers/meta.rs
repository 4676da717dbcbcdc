//! A file's own metadata: a sidecar `<file>.meta.json` beside it, or a Markdown file's YAML
//! front matter (`---` lines around it at the top), and its modification time.

use std::path::{Path, PathBuf};

use crag_core::{check_metadata, format_time, Metadata};
use serde_json::Value;

/// Most bytes of JSON a file's own metadata may hold (the ingest API's default limit).
pub const MAX_FILE_METADATA_BYTES: usize = 16 * 1024;

/// The suffix of a sidecar metadata file: `notes.md.meta.json` holds `notes.md`'s.
pub const SIDECAR_SUFFIX: &str = ".meta.json";

/// Whether `path` is a sidecar (read with its file, never ingested itself).
pub fn is_sidecar(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(SIDECAR_SUFFIX) && n.len() > SIDECAR_SUFFIX.len())
}

fn sidecar_of(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(SIDECAR_SUFFIX);
    path.with_file_name(name)
}

/// The metadata of the file at `path` with text `text`: its sidecar's object when there is
/// one, else its front matter's (Markdown), checked ([`check_metadata`]); then the file's
/// modification time as `modified`. The error says why the file is skipped.
pub fn of_file(
    path: &Path,
    text: &str,
    modified: Option<std::time::SystemTime>,
) -> Result<Metadata, String> {
    let sidecar = sidecar_of(path);
    let own = if sidecar.is_file() {
        let raw = std::fs::read_to_string(&sidecar)
            .map_err(|e| format!("metadata sidecar unreadable: {e}"))?;
        match serde_json::from_str::<Value>(&raw) {
            Ok(Value::Object(object)) => object,
            Ok(_) => return Err("metadata sidecar is not a JSON object".into()),
            Err(e) => return Err(format!("metadata sidecar is not JSON: {e}")),
        }
    } else if is_markdown(path) {
        front_matter(text)?
    } else {
        Metadata::new()
    };
    check_metadata(&own, MAX_FILE_METADATA_BYTES).map_err(|e| e.to_string())?;
    let mut metadata = own;
    let seconds = modified
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_secs()).ok());
    if let Some(time) = seconds.and_then(format_time) {
        metadata.insert("modified".into(), time.into());
    }
    Ok(metadata)
}

fn is_markdown(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("md") || e.eq_ignore_ascii_case("markdown"))
}

/// The YAML mapping between a first line `---` and the next line `---` (or `...`); none
/// when the text does not open with one.
fn front_matter(text: &str) -> Result<Metadata, String> {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok(Metadata::new());
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\r', '\n']);
        if bare == "---" || bare == "..." {
            let yaml = &rest[..offset];
            return match serde_yaml_ng::from_str::<Value>(yaml) {
                Ok(Value::Object(object)) => Ok(object),
                Ok(Value::Null) => Ok(Metadata::new()),
                Ok(_) => Err("front matter is not a mapping".into()),
                Err(e) => Err(format!("front matter is not YAML: {e}")),
            };
        }
        offset += line.len();
    }
    Ok(Metadata::new())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn front_matter_is_read_and_checked() {
        let text = "---\nteam: billing\nyear: 2024\ntags: [a, b]\n---\n# Title\n";
        assert_eq!(
            Value::Object(front_matter(text).unwrap()),
            json!({"team": "billing", "year": 2024, "tags": ["a", "b"]})
        );
        assert!(front_matter("# No front matter\n---\n").unwrap().is_empty());
        assert!(front_matter("---\n- a\n---\n").is_err());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.md");
        let err = of_file(&path, "---\nsource: x\n---\nbody", None).unwrap_err();
        assert!(err.contains("derives"), "{err}");
    }

    #[test]
    fn a_sidecar_wins_and_modified_is_derived() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.md");
        std::fs::write(dir.path().join("a.md.meta.json"), r#"{"team": "search"}"#).unwrap();
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
        let metadata = of_file(&path, "---\nteam: billing\n---\n", Some(time)).unwrap();
        assert_eq!(
            Value::Object(metadata),
            json!({"team": "search", "modified": "2027-01-15T08:00:00Z"})
        );
        assert!(is_sidecar(&dir.path().join("a.md.meta.json")));
        assert!(!is_sidecar(&dir.path().join(".meta.json")));
        std::fs::write(dir.path().join("a.md.meta.json"), "[1]").unwrap();
        assert!(of_file(&path, "", None).is_err());
    }
}

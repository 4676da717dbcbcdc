//! Identifiers of documents and chunks, validated at construction.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, Result};

/// Longest accepted identifier, in bytes.
pub(crate) const MAX_ID_BYTES: usize = 2048;

fn validate_id(field: &'static str, raw: &str) -> Result<()> {
    if raw.trim().is_empty() {
        return Err(CoreError::invalid(field, "must not be empty"));
    }
    if raw.len() > MAX_ID_BYTES {
        return Err(CoreError::invalid(
            field,
            format!("longer than {MAX_ID_BYTES} bytes"),
        ));
    }
    if raw.chars().any(char::is_control) {
        return Err(CoreError::invalid(field, "contains control characters"));
    }
    Ok(())
}

/// Identifier of a document: a canonical file path, a corpus-qualified id or a URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct DocumentId(String);

impl DocumentId {
    /// Validates `raw`: not blank, at most 2048 bytes, no control characters.
    pub fn new(raw: impl Into<String>) -> Result<Self> {
        let raw = raw.into();
        validate_id("document id", &raw)?;
        Ok(Self(raw))
    }

    /// Returns the id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Identifier of a chunk, unique across the index: `<document id>#<ordinal>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ChunkId(String);

impl ChunkId {
    /// Validates `raw` with the same rules as [`DocumentId::new`].
    pub fn new(raw: impl Into<String>) -> Result<Self> {
        let raw = raw.into();
        validate_id("chunk id", &raw)?;
        Ok(Self(raw))
    }

    /// Returns the id of the `ordinal`-th chunk of `document`.
    pub fn for_document(document: &DocumentId, ordinal: usize) -> Self {
        Self(format!("{}#{ordinal}", document.0))
    }

    /// Returns the id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

macro_rules! string_id_impls {
    ($ty:ident) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl TryFrom<String> for $ty {
            type Error = CoreError;
            fn try_from(raw: String) -> Result<Self> {
                Self::new(raw)
            }
        }
        impl From<$ty> for String {
            fn from(id: $ty) -> String {
                id.0
            }
        }
    };
}
string_id_impls!(DocumentId);
string_id_impls!(ChunkId);

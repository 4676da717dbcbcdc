//! The synonym table: lowercase term or phrase -> synonyms.

use std::collections::BTreeMap;

use crate::error::{ExpansionError, Result};
use crate::tokens::{normalize, tokens};

/// The built-in synonym table: local mappings of 9 programming terms, no external API call. The
/// expander takes the first synonyms of each list, so their order matters.
const SEED_SYNONYMS: &[(&str, &[&str])] = &[
    ("function", &["method", "procedure", "routine", "callable"]),
    (
        "variable",
        &["parameter", "argument", "value", "identifier"],
    ),
    ("error", &["exception", "failure", "bug", "issue"]),
    ("class", &["type", "object", "structure", "entity"]),
    ("async", &["asynchronous", "concurrent", "non-blocking"]),
    ("explain", &["describe", "clarify", "illustrate", "define"]),
    ("compare", &["contrast", "differentiate", "distinguish"]),
    ("implement", &["create", "build", "develop", "code"]),
    ("optimize", &["improve", "enhance", "refactor", "speed up"]),
];

/// Synonym table: lowercase term (single word or multi-word phrase) -> synonyms, in order of
/// preference.
///
/// Terms are normalized with the crate's tokenizer (lowercase, edge punctuation trimmed, words
/// joined by one space), so a term matches the same words in a query whatever their case or
/// punctuation. Synonyms are lowercased, whitespace-collapsed and deduplicated; a synonym equal
/// to its term is dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SynonymTable {
    entries: BTreeMap<String, Vec<String>>,
    /// Number of words of the longest term, the widest window the expander has to try.
    max_phrase_words: usize,
}

impl SynonymTable {
    /// Returns the built-in synonym table (9 programming terms).
    pub fn seed_default() -> Self {
        let mut table = Self::default();
        for (term, synonyms) in SEED_SYNONYMS {
            // The built-in entries are valid by construction; a failure would only drop one.
            let _ = table.insert(term, synonyms.iter().copied());
        }
        table
    }

    /// Parses a table from JSON of the form `{"term": ["synonym", ...], ...}`.
    ///
    /// Rejects non-objects, values that are not lists of strings, empty lists, terms or
    /// synonyms that are empty or pure punctuation, and two keys that normalize to the same
    /// term; the error names the offending key.
    pub fn from_json(text: &str) -> Result<Self> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| ExpansionError::Json(e.to_string()))?;
        let serde_json::Value::Object(map) = value else {
            return Err(ExpansionError::NotAnObject);
        };
        let mut table = Self::default();
        for (term, synonyms) in &map {
            let invalid = |reason: &str| ExpansionError::InvalidEntry {
                term: term.clone(),
                reason: reason.to_owned(),
            };
            let list = synonyms
                .as_array()
                .ok_or_else(|| invalid("synonyms must be a list of strings"))?;
            let strings = list
                .iter()
                .map(|s| {
                    s.as_str()
                        .ok_or_else(|| invalid("synonyms must be strings"))
                })
                .collect::<Result<Vec<&str>>>()?;
            table.insert(term, strings)?;
        }
        Ok(table)
    }

    /// Adds the synonyms of `term`, validated as in [`SynonymTable::from_json`].
    pub fn insert<'a>(
        &mut self,
        term: &str,
        synonyms: impl IntoIterator<Item = &'a str>,
    ) -> Result<()> {
        let invalid = |reason: &str| ExpansionError::InvalidEntry {
            term: term.to_owned(),
            reason: reason.to_owned(),
        };
        let key = normalize_phrase(term);
        if key.is_empty() {
            return Err(invalid("term must contain a word"));
        }
        if self.entries.contains_key(&key) {
            return Err(invalid(&format!("duplicate of term {key:?}")));
        }
        let mut list: Vec<String> = Vec::new();
        for raw in synonyms {
            let synonym = raw
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase();
            if synonym.is_empty() {
                return Err(invalid("synonyms must not be empty"));
            }
            if normalize_phrase(&synonym).is_empty() {
                return Err(invalid(&format!("synonym {raw:?} must contain a word")));
            }
            if synonym != key && !list.contains(&synonym) {
                list.push(synonym);
            }
        }
        if list.is_empty() {
            return Err(invalid(
                "needs at least one synonym other than the term itself",
            ));
        }
        self.max_phrase_words = self.max_phrase_words.max(key.split(' ').count());
        self.entries.insert(key, list);
        Ok(())
    }

    /// Returns the number of terms.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Returns whether the table has no terms.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Returns the synonyms of `term` (normalized first, so case and punctuation do not
    /// matter), best first; empty when the term is unknown.
    pub fn synonyms(&self, term: &str) -> &[String] {
        self.lookup(&normalize_phrase(term))
    }

    /// Looks up an already normalized term.
    pub(crate) fn lookup(&self, key: &str) -> &[String] {
        self.entries.get(key).map_or(&[], Vec::as_slice)
    }

    /// Returns the number of words of the longest term.
    pub(crate) fn max_phrase_words(&self) -> usize {
        self.max_phrase_words
    }
}

/// Normalizes a term or phrase: the crate's tokens, normalized, joined by one space.
pub(crate) fn normalize_phrase(text: &str) -> String {
    tokens(text)
        .into_iter()
        .map(normalize)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_table_is_complete() {
        let t = SynonymTable::seed_default();
        assert_eq!(t.len(), 9);
        assert_eq!(
            t.synonyms("optimize"),
            ["improve", "enhance", "refactor", "speed up"]
        );
        assert_eq!(
            t.synonyms("Async"),
            ["asynchronous", "concurrent", "non-blocking"]
        );
        assert!(t.synonyms("rust").is_empty());
        assert!(SynonymTable::default().is_empty());
    }

    #[test]
    fn json_tables_parse_and_normalize() {
        let t = SynonymTable::from_json(
            r#"{"Ownership": ["Borrowing", "  lifetimes ", "borrowing"], "machine  learning": ["ML", "statistical learning"]}"#,
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t.synonyms("ownership"), ["borrowing", "lifetimes"]);
        assert_eq!(
            t.synonyms("Machine Learning"),
            ["ml", "statistical learning"]
        );
        assert_eq!(t.max_phrase_words(), 2);
        assert!(SynonymTable::from_json("{}").unwrap().is_empty());
    }

    #[test]
    fn json_errors_name_the_offending_key() {
        let cases = [
            (r#"{"ok": ["fine"], "bad": "not a list"}"#, "\"bad\""),
            (r#"{"bad": [1, 2]}"#, "\"bad\""),
            (r#"{"bad": []}"#, "\"bad\""),
            (r#"{"bad": ["x", "  "]}"#, "\"bad\""),
            (r#"{"bad": ["?!"]}"#, "\"bad\""),
            (r#"{"bad": ["bad"]}"#, "\"bad\""),
            (r#"{"  ": ["x"]}"#, "\"  \""),
            (r#"{"Term": ["x"], "term": ["y"]}"#, "\"term\""),
        ];
        for (json, key) in cases {
            let err = SynonymTable::from_json(json).unwrap_err();
            assert!(
                matches!(err, ExpansionError::InvalidEntry { .. }),
                "{json}: {err:?}"
            );
            assert!(err.to_string().contains(key), "{json}: {err}");
        }
    }

    #[test]
    fn json_syntax_and_shape_errors() {
        assert!(matches!(
            SynonymTable::from_json("{\"a\": [").unwrap_err(),
            ExpansionError::Json(_)
        ));
        assert_eq!(
            SynonymTable::from_json("[\"a\"]").unwrap_err(),
            ExpansionError::NotAnObject
        );
        let msg = SynonymTable::from_json("{\"a\": 3}")
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            "synonym table entry \"a\": synonyms must be a list of strings"
        );
    }
}

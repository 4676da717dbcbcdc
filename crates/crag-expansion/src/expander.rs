//! Synonym query expansion, used on an ambiguous verdict.

use std::collections::HashSet;

use crate::synonyms::{normalize_phrase, SynonymTable};
use crate::tokens::{normalize, tokens};

/// Synonyms added per matched term by default.
pub const DEFAULT_MAX_SYNONYMS_PER_TERM: usize = 2;

/// Expands queries with synonyms from a [`SynonymTable`] so a second retrieval can find
/// documents that use other words.
#[derive(Debug, Clone)]
pub struct QueryExpander {
    table: SynonymTable,
    max_synonyms: usize,
}

impl Default for QueryExpander {
    /// The default expander: the built-in table, at most 2 synonyms per term.
    fn default() -> Self {
        Self::new(SynonymTable::seed_default(), DEFAULT_MAX_SYNONYMS_PER_TERM)
    }
}

impl QueryExpander {
    /// Creates an expander adding at most `max_synonyms_per_term` synonyms per matched term
    /// ([`DEFAULT_MAX_SYNONYMS_PER_TERM`] by default).
    pub fn new(table: SynonymTable, max_synonyms_per_term: usize) -> Self {
        Self {
            table,
            max_synonyms: max_synonyms_per_term,
        }
    }

    /// Returns the synonym table.
    pub fn table(&self) -> &SynonymTable {
        &self.table
    }

    /// Returns the expanded query: the original query (trimmed, whitespace collapsed) followed
    /// by at most `max_synonyms_per_term` synonyms for each matched term, in query order.
    ///
    /// Terms are matched on normalized words, longest phrase first ("speed up" before
    /// "speed"), without overlap. Synonyms already in the query or already added are skipped,
    /// so they do not use up a term's allowance. Returns `None` when nothing would be added
    /// (no term of the query has synonyms), so the caller can skip a useless second
    /// retrieval.
    ///
    /// The output order is deterministic (the same query always expands the same way) and the
    /// original wording is kept for the embedder.
    pub fn expand(&self, query: &str) -> Option<String> {
        if self.max_synonyms == 0 || self.table.is_empty() {
            return None;
        }
        let words: Vec<String> = tokens(query).into_iter().map(normalize).collect();
        // Space-delimited so that phrase containment respects word boundaries.
        let mut present = format!(" {} ", words.join(" "));
        let mut added: Vec<&str> = Vec::new();
        let mut seen: HashSet<&str> = HashSet::new();
        let widest = self.table.max_phrase_words().max(1);
        let mut i = 0;
        while i < words.len() {
            let mut step = 1;
            for n in (1..=widest.min(words.len() - i)).rev() {
                let synonyms = self.table.lookup(&words[i..i + n].join(" "));
                if synonyms.is_empty() {
                    continue;
                }
                step = n;
                let mut taken = 0;
                for synonym in synonyms {
                    if taken == self.max_synonyms {
                        break;
                    }
                    let norm = normalize_phrase(synonym);
                    if present.contains(&format!(" {norm} ")) || !seen.insert(synonym) {
                        continue;
                    }
                    present.push_str(&norm);
                    present.push(' ');
                    added.push(synonym);
                    taken += 1;
                }
                break;
            }
            i += step;
        }
        if added.is_empty() {
            return None;
        }
        let mut out: Vec<&str> = query.split_whitespace().collect();
        out.extend(added);
        Some(out.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn words(s: &str) -> Vec<&str> {
        s.split_whitespace().collect()
    }

    /// The built-in table expands "explain async function" with two synonyms per term.
    #[test]
    fn seed_expander_test() {
        let expanded = QueryExpander::default()
            .expand("explain async function")
            .unwrap();
        let w = words(&expanded);
        assert!(w.contains(&"async"));
        assert!(w.contains(&"asynchronous") || w.contains(&"concurrent"));
        assert!(w.contains(&"explain"));
        assert!(w.contains(&"describe") || w.contains(&"clarify"));
        assert_eq!(
            expanded,
            "explain async function describe clarify asynchronous concurrent method procedure"
        );
    }

    #[test]
    fn at_most_max_synonyms_per_term() {
        let e = QueryExpander::default();
        let expanded = e.expand("Optimize this function").unwrap();
        assert_eq!(
            expanded,
            "Optimize this function improve enhance method procedure"
        );
        for (max, expected) in [(1, "error exception"), (3, "error exception failure bug")] {
            let e = QueryExpander::new(SynonymTable::seed_default(), max);
            assert_eq!(e.expand("error").unwrap(), expected);
        }
        let none = QueryExpander::new(SynonymTable::seed_default(), 0);
        assert_eq!(none.expand("error"), None);
    }

    #[test]
    fn punctuation_and_case_do_not_hide_terms() {
        let e = QueryExpander::default();
        assert_eq!(
            e.expand("  Why does my Function   throw an ERROR?")
                .unwrap(),
            "Why does my Function throw an ERROR? method procedure exception failure"
        );
    }

    #[test]
    fn none_when_nothing_to_add() {
        let e = QueryExpander::default();
        assert_eq!(e.expand("rust ownership rules"), None);
        assert_eq!(e.expand(""), None);
        // Both synonyms already present: the next ones are taken instead.
        assert_eq!(
            e.expand("error exception failure").unwrap(),
            "error exception failure bug issue"
        );
        let t = SynonymTable::from_json(r#"{"error": ["bug"]}"#).unwrap();
        assert_eq!(QueryExpander::new(t, 2).expand("error bug"), None);
    }

    #[test]
    fn phrases_match_longest_first_and_synonyms_are_not_repeated() {
        let t = SynonymTable::from_json(
            r#"{"machine learning": ["ml", "statistical learning"], "learning": ["training"],
                "bug": ["defect"], "error": ["defect", "fault"]}"#,
        )
        .unwrap();
        let e = QueryExpander::new(t, 2);
        assert_eq!(
            e.expand("Machine-learning? no: machine learning basics")
                .unwrap(),
            "Machine-learning? no: machine learning basics ml statistical learning"
        );
        assert_eq!(e.expand("learning").unwrap(), "learning training");
        assert_eq!(e.expand("bug error").unwrap(), "bug error defect fault");
    }

    proptest! {
        #[test]
        fn text_functions_never_panic(query in "\\PC{0,80}", strip in "\\PC{0,80}") {
            let table = SynonymTable::from_json(r#"{"speed up": ["accelerate"], "é": ["e"]}"#).unwrap();
            for e in [QueryExpander::default(), QueryExpander::new(table, 2)] {
                if let Some(expanded) = e.expand(&query) {
                    let original = query.split_whitespace().collect::<Vec<_>>().join(" ");
                    prop_assert!(expanded.starts_with(&original));
                    prop_assert!(expanded.len() > original.len());
                }
            }
            if let Some(rewritten) = crate::rewrite_keywords(&query) {
                prop_assert!(!rewritten.is_empty());
            }
            let _ = crate::content_terms(&strip);
        }
    }
}

//! Keyword extraction and light term normalisation.
//!
//! Tokens are maximal runs of alphanumeric characters (apostrophes are dropped, so `SpaceX's`
//! is one token), lowercased. A keyword is a token that is not an English stop word and has at
//! least three characters, or two when it holds a digit (`5g`, `h2`). Matching compares
//! stems: crag's one stemmer (`crag_text::stem`, Snowball English, the keyword index's)
//! folds plurals and `-ing`/`-ed` forms (`vitamins` -> `vitamin`, `launched` -> `launch`,
//! `updates` -> `updat`) on both sides.
//!
//! The tokens are not `crag_text::tokens`: here apostrophes join a word instead of ending it
//! (`SpaceX's` -> `spacexs`, where the index's analysis gives `spacex`), letters are not folded
//! to ASCII and long tokens are kept. The heuristic evaluator's keyword overlap, and with it
//! its verdicts and the thresholds calibrated on them, depends on these tokens, so they stay
//! as they are; stemming is already the index's (`crag_text::stem`).

use std::collections::HashSet;

/// English stop words (common function and question words), sorted for binary search.
const STOP_WORDS: &[&str] = &[
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "and",
    "any",
    "are",
    "aren",
    "arent",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "can",
    "cannot",
    "cant",
    "could",
    "couldnt",
    "describe",
    "did",
    "didnt",
    "does",
    "doesnt",
    "doing",
    "dont",
    "down",
    "during",
    "each",
    "explain",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "hasnt",
    "have",
    "havent",
    "having",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "into",
    "isnt",
    "its",
    "itself",
    "just",
    "may",
    "might",
    "more",
    "most",
    "must",
    "myself",
    "nor",
    "not",
    "now",
    "off",
    "once",
    "only",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "please",
    "same",
    "shall",
    "she",
    "should",
    "some",
    "such",
    "tell",
    "than",
    "that",
    "thats",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "too",
    "under",
    "until",
    "very",
    "was",
    "wasnt",
    "were",
    "werent",
    "what",
    "whats",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "whose",
    "why",
    "will",
    "with",
    "wont",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
];

/// Returns the keywords of `query`: lowercased tokens without stop words, deduplicated, in
/// order of first appearance (surface forms, not normalised).
pub fn keywords(query: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    tokens(query)
        .filter(|token| is_keyword(token) && seen.insert(token.clone()))
        .collect()
}

/// Returns the normalised keywords of `query`, deduplicated on the normalised form.
pub(crate) fn query_terms(query: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    keywords(query)
        .iter()
        .map(|keyword| normalize(keyword))
        .filter(|term| seen.insert(term.clone()))
        .collect()
}

/// Returns, for each of `terms`, whether `text` contains it after normalisation.
///
/// Only tokens that could stem to a term are stemmed: a Snowball English stem keeps its word's
/// first letter and is never longer than the word, so a token starting with no term's first
/// letter, or shorter than every term, is skipped unstemmed (`crag_text::StemTargets`; the
/// proptest below checks the result against stemming every token).
pub(crate) fn terms_found(terms: &[String], text: &str) -> Vec<bool> {
    let mut found = vec![false; terms.len()];
    if terms.is_empty() {
        return found;
    }
    let wanted: HashSet<&str> = terms.iter().map(String::as_str).collect();
    let targets = crag_text::StemTargets::new(terms.iter().map(String::as_str));
    let mut remaining = wanted.len();
    for raw in pieces(text) {
        // The token's first letter, before the token is built.
        let first = raw
            .chars()
            .find(|c| !is_apostrophe(*c))
            .and_then(|c| c.to_lowercase().next());
        if first.is_none_or(|c| !targets.may_start_with(c)) {
            continue;
        }
        let token = lowercase(raw);
        if !targets.may_stem(&token) {
            continue;
        }
        let term = normalize(&token);
        if !wanted.contains(term.as_str()) {
            continue;
        }
        for (slot, candidate) in found.iter_mut().zip(terms) {
            if !*slot && *candidate == term {
                *slot = true;
                remaining = remaining.saturating_sub(1);
            }
        }
        if remaining == 0 {
            break;
        }
    }
    found
}

/// Splits `text` into lowercased alphanumeric tokens, dropping apostrophes.
fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    pieces(text)
        .map(lowercase)
        .filter(|token| !token.is_empty())
}

/// The runs of alphanumeric characters and apostrophes of `text`, as written.
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || is_apostrophe(c)))
}

/// The token of a piece: lowercased, without apostrophes.
fn lowercase(piece: &str) -> String {
    piece
        .chars()
        .filter(|c| !is_apostrophe(*c))
        .flat_map(char::to_lowercase)
        .collect()
}

fn is_apostrophe(c: char) -> bool {
    matches!(c, '\'' | '\u{2019}')
}

fn is_keyword(token: &str) -> bool {
    let chars = token.chars().count();
    let long_enough = chars >= 3 || (chars == 2 && token.chars().any(|c| c.is_ascii_digit()));
    long_enough && STOP_WORDS.binary_search(&token).is_err()
}

/// The stem of a keyword: crag's one stemmer (`crag_text::stem`, Snowball English, as the
/// keyword index stems), so inflected forms meet and match the terms BM25 matched.
fn normalize(token: &str) -> String {
    crag_text::stem(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_and_unique() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn keywords_drop_stop_words_and_keep_order() {
        assert_eq!(
            keywords("What are the latest SpaceX launch updates? SpaceX!"),
            vec!["latest", "spacex", "launch", "updates"]
        );
        assert_eq!(
            keywords("Python async patterns"),
            ["python", "async", "patterns"]
        );
        assert_eq!(keywords("is it a 5G phone"), ["5g", "phone"]);
        assert_eq!(keywords("SpaceX's rockets"), ["spacexs", "rockets"]);
        assert!(keywords("how is it?").is_empty());
        assert!(keywords("").is_empty());
    }

    #[test]
    fn normalisation_folds_inflections() {
        for (a, b) in [
            ("vitamins", "vitamin"),
            ("strategies", "strategy"),
            ("launched", "launch"),
            ("launching", "launch"),
            ("updates", "update"),
            ("updated", "update"),
            ("databases", "database"),
            ("spacexs", "spacex"),
        ] {
            assert_eq!(normalize(a), normalize(b), "{a} vs {b}");
        }
        // Snowball English, the keyword index's stemmer.
        assert_eq!(normalize("analysis"), "analysi");
        assert_eq!(normalize("status"), "status");
        assert_eq!(normalize("process"), "process");
        assert_eq!(normalize("string"), "string");
        for word in ["generalization", "studies", "effects", "running"] {
            assert_eq!(normalize(word), crag_text::analyze(word)[0], "{word}");
        }
        assert_ne!(normalize("cat"), normalize("education"));
    }

    #[test]
    fn terms_found_matches_whole_normalised_tokens() {
        let terms = query_terms("vitamins immune cats");
        let found = terms_found(
            &terms,
            "Vitamin D supports the immune system; education matters.",
        );
        assert_eq!(found, [true, true, false]);
    }

    /// Every token stemmed, as `terms_found` did before it skipped tokens.
    fn terms_found_stemming_all(terms: &[String], text: &str) -> Vec<bool> {
        let stems: HashSet<String> = tokens(text).map(|t| normalize(&t)).collect();
        terms.iter().map(|t| stems.contains(t)).collect()
    }

    /// A sample of English: the words a stem's first letter or length could trip over are
    /// `crag_text::STEMMING_EDGE_CASES`; these are ordinary inflected forms.
    const VOCABULARY_WORDS: &str = "vitamins deficiency lowers bone density adults raises \
        fracture risk supplements immune system education matters launches launched updates \
        running runner ran relational relativity possibly possibility operational operators \
        hopefulness allegedly applied applies applying studies studied studying analyses \
        analysed analysing children mice feet geese criteria phenomena indices matrices \
        agreement agreements disagreeing beautifully happiness emptiness ownership borrowing";

    proptest::proptest! {
        #[test]
        fn skipping_tokens_finds_what_stemming_all_finds(
            query in proptest::collection::vec(0usize..80, 1..6),
            text in proptest::collection::vec(0usize..80, 0..60),
        ) {
            let words: Vec<&str> = crag_text::STEMMING_EDGE_CASES
                .iter()
                .copied()
                .chain(VOCABULARY_WORDS.split_whitespace())
                .collect();
            let pick = |i: &usize| words[i % words.len()];
            let query: Vec<&str> = query.iter().map(pick).collect();
            let text: Vec<&str> = text.iter().map(pick).collect();
            let terms = query_terms(&query.join(" "));
            let text = text.join(" ");
            proptest::prop_assert_eq!(
                terms_found(&terms, &text),
                terms_found_stemming_all(&terms, &text)
            );
        }
    }

    #[test]
    fn query_terms_dedupe_on_normalised_form() {
        assert_eq!(query_terms("vitamin vitamins"), ["vitamin"]);
    }
}

//! LLM-free query rewriting by keyword extraction: the rewrite of an incorrect verdict when no
//! language model is configured.

use std::collections::HashSet;

use crate::tokens::{is_stop_word, normalize, strip_possessive, tokens};

/// Rewrites a question into its keywords, the fallback query rewrite when no LLM is
/// configured: drops question words, stop words, request words ("please", "explain") and
/// punctuation, keeps the content words in order with their original case, each once.
///
/// "What are the effects of vitamin D on bone density?" becomes
/// "effects vitamin D bone density" (single letters such as the "D" are kept on purpose).
/// Returns `None` when nothing is left or when the keywords equal the input up to case and
/// whitespace, as a retry with the same query would be useless.
pub fn rewrite_keywords(query: &str) -> Option<String> {
    let mut seen = HashSet::new();
    let keywords: Vec<&str> = tokens(query)
        .into_iter()
        .filter(|t| {
            let n = normalize(t);
            !n.is_empty() && !is_stop_word(&n) && seen.insert(n)
        })
        .map(strip_possessive)
        .collect();
    if keywords.is_empty() {
        return None;
    }
    let rewritten = keywords.join(" ");
    let original = query.split_whitespace().collect::<Vec<_>>().join(" ");
    if rewritten.to_lowercase() == original.to_lowercase() {
        return None;
    }
    Some(rewritten)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_become_keywords() {
        for (query, expected) in [
            (
                "What are the effects of vitamin D on bone density?",
                "effects vitamin D bone density",
            ),
            (
                "Can you please explain how Rust's borrow checker works?",
                "Rust borrow checker works",
            ),
            (
                "How do I fix a segfault in my C++ program when using std::vector?",
                "fix segfault C++ program using std vector",
            ),
            ("Who won the 2022 World Cup?", "won 2022 World Cup"),
            ("tokio tokio runtime, runtime!", "tokio runtime"),
        ] {
            assert_eq!(
                rewrite_keywords(query).as_deref(),
                Some(expected),
                "{query}"
            );
        }
    }

    #[test]
    fn none_when_empty_or_unchanged() {
        assert_eq!(rewrite_keywords(""), None);
        assert_eq!(rewrite_keywords("what is it?"), None);
        assert_eq!(rewrite_keywords("?!"), None);
        assert_eq!(rewrite_keywords("rust ownership"), None);
        assert_eq!(rewrite_keywords("  Rust   Ownership "), None);
        // Punctuation alone is a change worth making.
        assert_eq!(
            rewrite_keywords("rust ownership?").as_deref(),
            Some("rust ownership")
        );
    }
}

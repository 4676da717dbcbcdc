//! The tokenizer shared by expansion, rewriting and lexical scoring.
//!
//! It is not `crag_text::tokens`, on purpose: expansion and rewriting write their terms back
//! into queries a user reads, so a token keeps `' - _ . + #` inside a word ("c++", "node.js",
//! "3.5", "non-blocking" stay whole, where the index's analysis splits them at every
//! non-alphanumeric character), keeps its letters unfolded, and is filtered by a longer stop
//! list (question and request words). Stemming is `crag_text::stem`, the index's, so the terms
//! still meet the ones BM25 matched.

/// English stop words, question words and request words ("please", "explain", "tell"), sorted
/// for binary search. Single letters other than "a", "i", "s" and "t" are kept on purpose:
/// "vitamin d", "plan b" and "c" carry meaning.
#[rustfmt::skip]
const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any",
    "are", "aren't", "as", "at", "be", "because", "been", "before", "being", "below", "between",
    "both", "but", "by", "can", "can't", "cannot", "could", "couldn't", "describe", "did",
    "didn't", "do", "does", "doesn't", "doing", "don't", "down", "during", "e.g", "each",
    "either", "etc", "explain", "few", "for", "from", "further", "give", "had", "hadn't", "has",
    "hasn't", "have", "haven't", "having", "he", "her", "here", "hers", "herself", "him",
    "himself", "his", "how", "i", "i'd", "i'll", "i'm", "i've", "i.e", "if", "in", "into", "is",
    "isn't", "it", "its", "itself", "just", "know", "let", "let's", "lets", "may", "me",
    "might", "mine", "more", "most", "must", "my", "myself", "no", "nor", "not", "of", "off",
    "on", "once", "only", "or", "other", "ought", "our", "ours", "ourselves", "out", "over",
    "own", "please", "s", "same", "shall", "she", "should", "shouldn't", "show", "so", "some",
    "such", "t", "tell", "than", "that", "the", "their", "theirs", "them", "themselves", "then",
    "there", "these", "they", "they're", "this", "those", "through", "to", "too", "under",
    "until", "up", "us", "very", "was", "wasn't", "we", "we're", "were", "weren't", "what",
    "when", "where", "whether", "which", "while", "who", "whom", "whose", "why", "will", "with",
    "won't", "would", "wouldn't", "you", "you're", "your", "yours", "yourself", "yourselves",
];

/// Whether `word` (lowercase, normalized) is a stop word.
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// Characters a token may contain besides letters and digits: apostrophes (contractions,
/// possessives), hyphens, underscores, dots (decimals, "node.js") and `+`/`#` ("c++", "c#").
fn is_token_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '\'' | '\u{2019}' | '-' | '_' | '.' | '+' | '#')
}

/// Splits `text` into tokens, in order, as slices of the original text: runs of letters,
/// digits and `' - _ . + #`, trimmed of leading non-alphanumerics and of trailing ones other
/// than `+`/`#` after a letter ("c++"). Pure punctuation yields no token.
pub fn tokens(text: &str) -> Vec<&str> {
    text.split(|c: char| !is_token_char(c))
        .filter_map(trim_token)
        .collect()
}

fn trim_token(raw: &str) -> Option<&str> {
    let s = raw.trim_start_matches(|c: char| !c.is_alphanumeric());
    let core = s.trim_end_matches(|c: char| !c.is_alphanumeric());
    if core.is_empty() {
        return None;
    }
    // Keep a trailing run of `+` or `#` ("c++", "c#", "f#"), nothing else.
    let rest = &s[core.len()..];
    let keep = rest
        .char_indices()
        .take_while(|&(_, c)| c == '+' || c == '#')
        .last()
        .map_or(0, |(i, c)| i + c.len_utf8());
    Some(&s[..core.len() + keep])
}

/// Normalizes a token: lowercase, typographic apostrophe to `'`, possessive `'s` removed.
pub fn normalize(token: &str) -> String {
    let lower = token.to_lowercase().replace('\u{2019}', "'");
    match lower.strip_suffix("'s") {
        Some(stem) if !stem.is_empty() => stem.to_owned(),
        _ => lower,
    }
}

/// Strips a possessive `'s` from an original-case token ("Rust's" -> "Rust").
pub fn strip_possessive(token: &str) -> &str {
    token
        .strip_suffix("'s")
        .or_else(|| token.strip_suffix("\u{2019}s"))
        .or_else(|| token.strip_suffix("'S"))
        .filter(|s| !s.is_empty())
        .unwrap_or(token)
}

/// Returns the lowercase content words of `text`, in order, duplicates kept: the crate's
/// tokenizer (runs of letters and digits plus `' - _ . + #` inside words, so "c++", "node.js",
/// "3.5" and "non-blocking" stay whole) with possessives stripped and English stop words,
/// question words and request words ("please", "explain", "tell") removed.
pub fn content_terms(text: &str) -> Vec<String> {
    tokens(text)
        .into_iter()
        .map(normalize)
        .filter(|w| !w.is_empty() && !is_stop_word(w))
        .collect()
}

/// The stem of a normalised word: crag's one stemmer (`crag_text::stem`, Snowball English,
/// as the keyword index stems), so "effects"/"effect", "studies"/"study" and
/// "running"/"run" meet, and refinement matches the terms BM25 matched. Words with
/// non-letters ("c++", "node.js", "3.5") are kept whole.
pub fn stem(word: &str) -> String {
    if !word.chars().all(char::is_alphabetic) {
        return word.to_owned();
    }
    crag_text::stem(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_and_unique() {
        assert!(
            STOP_WORDS.windows(2).all(|w| w[0] < w[1]),
            "keep STOP_WORDS sorted"
        );
    }

    #[test]
    fn tokens_keep_technical_words_whole() {
        assert_eq!(
            tokens("Is C++ faster than C#? (node.js, 3.5, non-blocking!)"),
            [
                "Is",
                "C++",
                "faster",
                "than",
                "C#",
                "node.js",
                "3.5",
                "non-blocking"
            ]
        );
        assert_eq!(tokens("... -- ?? ++"), Vec::<&str>::new());
        assert_eq!(tokens("end."), ["end"]);
    }

    #[test]
    fn content_terms_drop_stop_words_and_possessives() {
        assert_eq!(
            content_terms("What is Rust's ownership model, and how does it work?"),
            ["rust", "ownership", "model", "work"]
        );
        assert_eq!(content_terms("vitamin D"), ["vitamin", "d"]);
        assert!(content_terms("what is it?").is_empty());
    }

    #[test]
    fn stemming_meets_common_inflections() {
        for (a, b) in [
            ("effects", "effect"),
            ("studies", "study"),
            ("running", "run"),
            ("stopped", "stop"),
            ("boxes", "box"),
            ("classes", "class"),
            ("installed", "install"),
            ("computed", "compute"),
            ("computing", "computes"),
            ("strings", "string"),
            ("embeddings", "embedding"),
            ("densities", "density"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} vs {b}");
        }
        // Snowball English, the keyword index's stemmer: the terms BM25 matched.
        assert_eq!(stem("analysis"), "analysi");
        assert_eq!(stem("analysis"), crag_text::analyze("analysis")[0]);
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("bus"), "bus");
        assert_eq!(stem("3.5s"), "3.5s");
    }
}

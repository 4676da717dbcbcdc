//! Items that mean "nothing is missing".

/// Whole items meaning no gaps (after lowercasing and trimming punctuation).
const NONE_ITEMS: &[&str] = &[
    "none",
    "nothing",
    "n/a",
    "na",
    "nil",
    "null",
    "no",
    "empty",
    "-",
    "[]",
    "not applicable",
    "none needed",
    "nothing needed",
    "nothing missing",
    "none missing",
    "nothing else",
    "all good",
    "not needed",
];

/// First words that make an item mean no gaps: "None. The context is sufficient.".
const NONE_FIRST_WORDS: &[&str] = &["none", "nothing", "n/a", "nil", "null"];

/// Words after a leading "no" that make an item mean no gaps: "no missing context",
/// "No additional code is needed".
const NO_SECOND_WORDS: &[&str] = &[
    "missing",
    "additional",
    "further",
    "more",
    "extra",
    "other",
    "gaps",
    "gap",
    "need",
    "needed",
    "context",
    "information",
    "items",
];

/// Returns whether `item` says nothing is missing: "NONE", "None.", "(none)", "n/a",
/// "nothing", "no missing context", "No additional context is needed", "The context is
/// sufficient" and the like.
pub(crate) fn is_none_marker(item: &str) -> bool {
    let lower = item.to_lowercase();
    let t = lower.trim_matches(|c: char| !c.is_alphanumeric() && c != '/' && c != '-');
    let t = t.trim_matches(|c: char| !c.is_alphanumeric() && c != '/');
    if t.is_empty() || NONE_ITEMS.contains(&t) {
        return true;
    }
    let words: Vec<&str> = t
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '.' | ';' | ':' | '!' | '('))
        .filter(|w| !w.is_empty())
        .collect();
    let Some(first) = words.first() else {
        return true;
    };
    if NONE_FIRST_WORDS.contains(first) {
        return true;
    }
    if *first == "no" && words.get(1).is_some_and(|w| NO_SECOND_WORDS.contains(w)) {
        return true;
    }
    // "The provided context is sufficient", "context is enough": short and not negated.
    let says_enough = words
        .iter()
        .any(|w| matches!(*w, "sufficient" | "enough" | "complete"));
    let negated = words.iter().any(|w| {
        matches!(
            *w,
            "not" | "isn't" | "isn’t" | "insufficient" | "incomplete"
        )
    });
    let about_context = words
        .iter()
        .any(|w| matches!(*w, "context" | "information" | "code" | "answer"));
    says_enough && about_context && !negated && words.len() <= 12
}

#[cfg(test)]
mod tests {
    use super::is_none_marker;

    #[test]
    fn none_markers_are_recognised() {
        for item in [
            "NONE",
            "None.",
            "none",
            "(none)",
            "\"NONE\"",
            "n/a",
            "N/A",
            "nothing",
            "Nothing.",
            "no missing context",
            "No missing context.",
            "No additional context is needed.",
            "no further information required",
            "None needed",
            "Nothing needed",
            "None. The context is sufficient to answer the question.",
            "The provided context is sufficient.",
            "-",
            "",
            "[]",
            "null",
        ] {
            assert!(is_none_marker(item), "{item:?}");
        }
    }

    #[test]
    fn real_gaps_are_not_none_markers() {
        for item in [
            "verify_user in auth.py",
            "no_op in utils.py",
            "None_handler",
            "Nonexistent config loader",
            "the file that handles errors",
            "the context is not sufficient: verify_user is missing",
            "notification sender",
            "NoneType handling in parser.py",
        ] {
            assert!(!is_none_marker(item), "{item:?}");
        }
    }
}

//! Comparison and analysis questions (an analysis word such as "compare" with several
//! parts): one sub-query per compared item, sharing the item's context.

use crate::words::{ends_sentence, Word};

/// Words before "between" that make it a comparison ("the difference between A and B").
const BETWEEN_CUES: &[&str] = &[
    "differ",
    "difference",
    "differences",
    "different",
    "differs",
    "distinction",
    "distinctions",
    "similarities",
    "similarity",
    "trade-off",
    "trade-offs",
    "tradeoff",
    "tradeoffs",
];
/// "A vs B".
const VERSUS: &[&str] = &["v", "versus", "vs"];
/// Words separating compared items.
const SEPARATORS: &[&str] = &["against", "and", "then", "v", "versus", "vs"];
/// Words separating two items when no other separator is present ("compare A with B").
const PAIR_SEPARATORS: &[&str] = &["against", "to", "with"];
/// Prepositions starting a shared head ("the cost of A and B") or tail ("A and B for C").
const PREPOSITIONS: &[&str] = &[
    "about",
    "across",
    "at",
    "by",
    "during",
    "for",
    "from",
    "in",
    "into",
    "of",
    "on",
    "over",
    "regarding",
    "under",
    "using",
    "when",
    "with",
    "within",
    "without",
];
/// Question and request words dropped before the first item ("how does A compare to B").
const LEAD_WORDS: &[&str] = &[
    "are", "can", "could", "did", "do", "does", "how", "i", "is", "me", "please", "should", "tell",
    "well", "what", "which", "why", "will", "would", "you",
];

/// Words that do not make an item on their own: determiners and pronouns.
const NOT_ITEMS: &[&str] = &[
    "a", "an", "it", "its", "my", "our", "that", "the", "their", "them", "these", "they", "this",
    "those", "your",
];

/// Occurrences of a cue word tried per frame, so a query repeating it stays linear.
const MAX_CANDIDATES: usize = 8;

/// Normalizes configured keywords: trimmed, lowercase, empty ones dropped.
pub(crate) fn normalize_keywords(keywords: &[String]) -> Vec<String> {
    keywords
        .iter()
        .map(|k| k.trim().to_lowercase())
        .filter(|k| !k.is_empty())
        .collect()
}

/// Whether `word` (lowercase) is one of `keywords` (normalized) or an inflection of one
/// ("comparing", "comparison" for "compare"; "evaluation" for "evaluate").
pub(crate) fn is_keyword(word: &str, keywords: &[String]) -> bool {
    keywords.iter().any(|k| {
        let stem = k.strip_suffix('e').unwrap_or(k);
        word == k
            || (stem.chars().count() >= 5 && word.starts_with(stem) && word.len() <= k.len() + 4)
    })
}

/// `keywords` must be normalized with [`normalize_keywords`].
///
/// Returns one sub-query per compared item when the query compares or analyses several
/// items: "difference between A and B", "compare A and B", "compare A with B", "how does A
/// compare to B", "A vs B", "analyze A and B". Items share the context of the first item's
/// head ("the cost of A and B" -> "the cost of B") and of the last item's tail ("A and B
/// for C" -> "A for C").
pub(crate) fn comparison(words: &[Word<'_>], keywords: &[String]) -> Option<Vec<String>> {
    between_frame(words)
        .or_else(|| keyword_frame(words, keywords))
        .or_else(|| versus_frame(words))
        .map(|items| share_context(words, &items))
}

fn clause_of(words: &[Word<'_>], i: usize) -> (usize, usize) {
    let start = (0..i)
        .rev()
        .find(|&j| ends_sentence(words, j))
        .map_or(0, |j| j + 1);
    let end = (i..words.len())
        .find(|&j| ends_sentence(words, j))
        .map_or(words.len(), |j| j + 1);
    (start, end)
}

fn lower<'a>(words: &'a [Word<'_>], i: usize) -> &'a str {
    words[i].lower.as_str()
}

fn between_frame(words: &[Word<'_>]) -> Option<Vec<Vec<usize>>> {
    (0..words.len())
        .filter(|&i| lower(words, i) == "between")
        .filter(|&i| (i.saturating_sub(4)..i).any(|j| BETWEEN_CUES.contains(&lower(words, j))))
        .take(MAX_CANDIDATES)
        .find_map(|i| {
            let (_, end) = clause_of(words, i);
            at_least_two(words, split_items(words, i + 1, end, false))
        })
}

fn keyword_frame(words: &[Word<'_>], keywords: &[String]) -> Option<Vec<Vec<usize>>> {
    (0..words.len())
        .filter(|&i| is_keyword(lower(words, i), keywords))
        .take(MAX_CANDIDATES)
        .find_map(|k| {
            let (start, end) = clause_of(words, k);
            let mut j = k + 1;
            while j < end && (is_keyword(lower(words, j), keywords) || lower(words, j) == "and") {
                j += 1;
            }
            // "how does A compare to B", "A compared with B".
            if j < end && PAIR_SEPARATORS.contains(&lower(words, j)) {
                let a = skip_lead(words, start, k);
                if a < k {
                    let mut items = vec![real(words, a, k)];
                    items.extend(split_items(words, j + 1, end, false));
                    if let Some(items) = at_least_two(words, items) {
                        return Some(items);
                    }
                }
            }
            while j < end && matches!(lower(words, j), "of" | "between" | "among") {
                j += 1;
            }
            at_least_two(words, split_items(words, j, end, true))
        })
}

fn versus_frame(words: &[Word<'_>]) -> Option<Vec<Vec<usize>>> {
    (0..words.len())
        .filter(|&i| is_versus(words, i))
        .take(MAX_CANDIDATES)
        .find_map(|v| {
            let (start, end) = clause_of(words, v);
            let start = (start..v)
                .rev()
                .find(|&j| words[j].trailing.contains([',', ':', ';']))
                .map_or(start, |j| j + 1);
            at_least_two(
                words,
                split_items(words, skip_lead(words, start, v), end, false),
            )
        })
}

/// "vs", "versus" or "v.", but not "VS" (Visual Studio) nor "vs code".
fn is_versus(words: &[Word<'_>], i: usize) -> bool {
    let w = &words[i];
    VERSUS.contains(&w.lower.as_str())
        && w.core != "VS"
        && (w.lower != "v" || w.trailing.starts_with('.'))
        && words.get(i + 1).is_none_or(|n| n.lower != "code")
}

fn skip_lead(words: &[Word<'_>], mut a: usize, limit: usize) -> usize {
    while a < limit && (LEAD_WORDS.contains(&lower(words, a)) || !words[a].is_real()) {
        a += 1;
    }
    a
}

fn real(words: &[Word<'_>], a: usize, b: usize) -> Vec<usize> {
    (a..b).filter(|&i| words[i].is_real()).collect()
}

/// Keeps items with a word other than a determiner or pronoun; `None` if fewer than two.
fn at_least_two(words: &[Word<'_>], items: Vec<Vec<usize>>) -> Option<Vec<Vec<usize>>> {
    let items: Vec<Vec<usize>> = items
        .into_iter()
        .filter(|item| item.iter().any(|&i| !NOT_ITEMS.contains(&lower(words, i))))
        .collect();
    (items.len() >= 2).then_some(items)
}

/// Splits words `[a, b)` into items at separators and commas; with `allow_pair` and no other
/// separator, the first "with"/"to"/"against" separates two items.
fn split_items(words: &[Word<'_>], a: usize, b: usize, allow_pair: bool) -> Vec<Vec<usize>> {
    let has_separator = (a..b).any(|i| {
        SEPARATORS.contains(&lower(words, i)) || (i + 1 < b && words[i].trailing.contains(','))
    });
    let mut items = Vec::new();
    let mut current = Vec::new();
    let mut paired = false;
    for (i, w) in words.iter().enumerate().take(b).skip(a) {
        let pair = allow_pair
            && !has_separator
            && !paired
            && !current.is_empty()
            && PAIR_SEPARATORS.contains(&w.lower.as_str());
        if pair || SEPARATORS.contains(&w.lower.as_str()) {
            paired |= pair;
            items.push(std::mem::take(&mut current));
            continue;
        }
        if w.is_real() {
            current.push(i);
        }
        if w.trailing.contains([',', ':', ';']) {
            items.push(std::mem::take(&mut current));
        }
    }
    items.push(current);
    items
}

/// Gives short items (at most 3 words, no preposition) the head of the first item up to its
/// last preposition, and the tail of the last item from its first preposition.
fn share_context(words: &[Word<'_>], items: &[Vec<usize>]) -> Vec<String> {
    let is_prep = |i: &usize| PREPOSITIONS.contains(&lower(words, *i));
    let short = |item: &[usize]| item.len() <= 3 && !item.iter().any(is_prep);
    let head = items.first().and_then(|first| {
        let p = first.iter().rposition(is_prep)?;
        (p >= 1 && p + 1 < first.len()).then(|| &first[..=p])
    });
    let tail = items.last().and_then(|last| {
        let p = last.iter().position(is_prep)?;
        (p >= 1).then(|| &last[p..])
    });
    let n = items.len();
    items
        .iter()
        .enumerate()
        .map(|(k, item)| {
            let mut parts: Vec<usize> = Vec::new();
            if k > 0 && short(item) {
                parts.extend(head.unwrap_or_default());
            }
            parts.extend(item);
            if k + 1 < n && short(item) {
                parts.extend(tail.unwrap_or_default());
            }
            parts
                .iter()
                .map(|&i| words[i].core)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::words::words;

    fn keywords() -> Vec<String> {
        normalize_keywords(&["analyze", "Compare ", "contrast", "evaluate", ""].map(String::from))
    }

    fn cmp(q: &str) -> Option<Vec<String>> {
        comparison(&words(q), &keywords())
    }

    #[test]
    fn comparisons_split_into_items_with_shared_context() {
        for (q, expected) in [
            (
                "Compare PostgreSQL and MySQL for write-heavy workloads",
                vec![
                    "PostgreSQL for write-heavy workloads",
                    "MySQL for write-heavy workloads",
                ],
            ),
            (
                "What is the difference between TCP and UDP?",
                vec!["TCP", "UDP"],
            ),
            (
                "What's the difference between let and const in JavaScript?",
                vec!["let in JavaScript", "const in JavaScript"],
            ),
            (
                "How does Rust compare to Go for web servers?",
                vec!["Rust for web servers", "Go for web servers"],
            ),
            ("Compare tokio with async-std", vec!["tokio", "async-std"]),
            ("Which is faster: rust vs. go?", vec!["rust", "go"]),
            ("Roe v. Wade", vec!["Roe", "Wade"]),
            ("Rust vs Go vs Zig", vec!["Rust", "Go", "Zig"]),
            (
                "Compare and contrast REST, GraphQL, and gRPC",
                vec!["REST", "GraphQL", "gRPC"],
            ),
            (
                "Evaluate the pros and cons of microservices",
                vec!["the pros of microservices", "cons of microservices"],
            ),
            (
                "Analyze the impact of remote work on productivity and employee satisfaction",
                vec![
                    "the impact of remote work on productivity",
                    "the impact of remote work on employee satisfaction",
                ],
            ),
            (
                "How do I compare two strings in Rust and Python?",
                vec!["two strings in Rust", "two strings in Python"],
            ),
            (
                "a comparison of quicksort and mergesort",
                vec!["quicksort", "mergesort"],
            ),
        ] {
            assert_eq!(
                cmp(q),
                Some(expected.iter().map(|s| s.to_string()).collect()),
                "{q}"
            );
        }
    }

    #[test]
    fn single_items_are_not_comparisons() {
        for q in [
            "compare performance",
            "I want to analyze my logs",
            "relationship between sleep and memory",
            "which one should I compare?",
            "evaluate the expression 2+2",
            "the vs code editor",
            "how to configure the VS Code debugger",
            "v and w are vectors",
            "the and a",
            "then compare it to them",
            "",
        ] {
            assert_eq!(cmp(q), None, "{q}");
        }
    }

    #[test]
    fn keywords_match_inflections() {
        let k = keywords();
        for w in [
            "compare",
            "comparing",
            "comparison",
            "compared",
            "evaluation",
            "analyzing",
        ] {
            assert!(is_keyword(w, &k), "{w}");
        }
        for w in ["company", "compile", "eval", "analytic"] {
            assert!(!is_keyword(w, &k), "{w}");
        }
    }
}

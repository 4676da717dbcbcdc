//! Splitting a multi-part query into sub-queries: several questions, enumerations, clauses
//! joined by "and how/why/what ...", and sentences of long queries.

use crate::words::{ends_sentence, words, Word};

/// Words that start a question; "and"/"but" before one of them joins two questions.
const QUESTION_STARTERS: &[&str] = &[
    "are", "can", "could", "did", "do", "does", "has", "have", "how", "how's", "is", "should",
    "was", "were", "what", "what's", "when", "where", "whether", "which", "who", "whom", "whose",
    "why", "will", "would",
];

/// A range `[start, end)` of word indices.
type Span = (usize, usize);

/// Returns the text of the words `span`, from the first word with letters or digits to the
/// end of the last word, without trailing `, ; : . !` (a `?` stays); empty if no word has
/// letters or digits.
pub(crate) fn span_text(query: &str, words: &[Word<'_>], (a, b): Span) -> String {
    let Some(first) = words[a..b].iter().find(|w| w.is_real()) else {
        return String::new();
    };
    let end = words[b - 1].end;
    query[first.core_start..end]
        .trim_end_matches(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ':' | '.' | '!'))
        .to_owned()
}

fn real_words(words: &[Word<'_>], (a, b): Span) -> usize {
    words[a..b].iter().filter(|w| w.is_real()).count()
}

/// Merges spans of fewer than two real words into their neighbour ("What is X? Why?" keeps
/// "Why?" with the first question).
fn merge_short(words: &[Word<'_>], spans: Vec<Span>) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    for span in spans {
        match out.last_mut() {
            Some(last) if real_words(words, span) < 2 || real_words(words, *last) < 2 => {
                last.1 = span.1;
            }
            _ => out.push(span),
        }
    }
    out
}

/// Sentence spans of the words.
fn sentence_spans(words: &[Word<'_>]) -> Vec<Span> {
    let mut spans = Vec::new();
    let mut start = 0;
    for i in 0..words.len() {
        if ends_sentence(words, i) {
            spans.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < words.len() {
        spans.push((start, words.len()));
    }
    spans
}

fn is_question(words: &[Word<'_>], (_, b): Span) -> bool {
    words[b - 1].trailing.contains(['?', '\u{FF1F}'])
}

/// Returns the questions of a query with at least two ("What is X? How is it used?").
/// Statements are kept with the question that follows them, as its context.
pub(crate) fn questions(query: &str, words: &[Word<'_>]) -> Option<Vec<String>> {
    // Sentences with whether each is a question; short ones merge into their neighbour.
    let mut sentences: Vec<(Span, bool)> = Vec::new();
    for span in sentence_spans(words) {
        let question = is_question(words, span);
        match sentences.last_mut() {
            Some((last, q)) if real_words(words, span) < 2 || real_words(words, *last) < 2 => {
                last.1 = span.1;
                *q |= question;
            }
            _ => sentences.push((span, question)),
        }
    }
    if sentences.iter().filter(|(_, q)| *q).count() < 2 {
        return None;
    }
    let mut out: Vec<Span> = Vec::new();
    let mut pending: Option<usize> = None;
    for ((a, b), question) in sentences {
        let start = pending.take().unwrap_or(a);
        if question {
            out.push((start, b));
        } else {
            pending = Some(start);
        }
    }
    if let (Some(_), Some(last)) = (pending, out.last_mut()) {
        last.1 = words.len();
    }
    Some(
        out.into_iter()
            .map(|s| span_text(query, words, s))
            .collect(),
    )
}

/// Splits a query into clauses: at sentence ends, and at "and"/"but" followed by a question
/// word ("what are A and how do they affect B, and why ..."), ", then" and "and then" (the
/// conjunctions are dropped). Returns the clauses and whether a conjunction split happened
/// (the caller still checks that at least two clauses remain: one-word clauses are merged).
pub(crate) fn clauses(query: &str, words: &[Word<'_>]) -> (Vec<String>, bool) {
    let mut spans = Vec::new();
    let mut joined = false;
    let mut start = 0;
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        let next = words.get(i + 1).map(|n| n.lower.as_str());
        let conjunction = w.trailing.is_empty() && matches!(w.lower.as_str(), "and" | "but");
        let skip =
            if i > start && conjunction && next.is_some_and(|n| QUESTION_STARTERS.contains(&n)) {
                1
            } else if i > start && conjunction && next == Some("then") {
                2
            } else if i > start && w.lower == "then" && words[i - 1].trailing.contains(',') {
                1
            } else {
                0
            };
        if skip > 0 {
            spans.push((start, i));
            joined = true;
            start = i + skip;
            i += skip;
            continue;
        }
        if ends_sentence(words, i) {
            spans.push((start, i + 1));
            start = i + 1;
        }
        i += 1;
    }
    if start < words.len() {
        spans.push((start, words.len()));
    }
    let spans: Vec<Span> = spans.into_iter().filter(|&(a, b)| a < b).collect();
    let parts = merge_short(words, spans)
        .into_iter()
        .map(|s| span_text(query, words, s))
        .collect();
    (parts, joined)
}

/// Returns the items of an enumeration: numbered ("1. a 2. b", "(1) a (2) b", "a) x b) y"),
/// in sequence from 1 (or "a"), or bullet lines ("- a", "* b", "• c").
pub(crate) fn enumeration(query: &str, words: &[Word<'_>]) -> Option<Vec<String>> {
    numbered(query, words).or_else(|| bullets(query))
}

fn numbered(query: &str, words: &[Word<'_>]) -> Option<Vec<String>> {
    let mut markers: Vec<usize> = Vec::new();
    let mut kind = None;
    for (i, w) in words.iter().enumerate() {
        if let Some((k, ordinal)) = marker(w.raw) {
            if ordinal == markers.len() + 1 && kind.is_none_or(|known| known == k) {
                kind = Some(k);
                markers.push(i);
            }
        }
    }
    if markers.len() < 2 {
        return None;
    }
    let items: Vec<String> = markers
        .iter()
        .enumerate()
        .map(|(n, &m)| {
            let end = markers.get(n + 1).copied().unwrap_or(words.len());
            if m + 1 < end {
                span_text(query, words, (m + 1, end))
            } else {
                String::new()
            }
        })
        .collect();
    items.iter().all(|s| !s.is_empty()).then_some(items)
}

/// `1.` `1)` `(1)` (numbers up to 99) -> (true, n); `a)` `(a)` -> (false, 1) ...
fn marker(raw: &str) -> Option<(bool, usize)> {
    let inner = raw
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .or_else(|| raw.strip_suffix(')'))
        .or_else(|| {
            raw.strip_suffix('.')
                .filter(|r| r.chars().all(|c| c.is_ascii_digit()))
        })?;
    if (1..=2).contains(&inner.len()) && inner.chars().all(|c| c.is_ascii_digit()) {
        return inner.parse().ok().map(|n| (true, n));
    }
    let mut chars = inner.chars();
    match (chars.next(), chars.next()) {
        (Some(c @ 'a'..='h'), None) => Some((false, usize::from(c as u8 - b'a') + 1)),
        _ => None,
    }
}

fn bullets(query: &str) -> Option<Vec<String>> {
    let items: Vec<String> = query
        .lines()
        .filter_map(|line| {
            let rest = line.trim_start();
            let mut chars = rest.chars();
            match (chars.next(), chars.next()) {
                (Some('-' | '*' | '\u{2022}' | '+'), Some(c)) if c.is_whitespace() => {
                    Some(chars.as_str().trim().to_owned())
                }
                _ => None,
            }
        })
        .filter(|s| s.chars().any(char::is_alphanumeric))
        .collect();
    (items.len() >= 2).then_some(items)
}

/// Pronouns that refer back to the subject of the first part.
const PRONOUNS: &[&str] = &["it", "them", "they"];
/// Words after "it" that make it impersonal ("is it possible to ...").
const IMPERSONAL: &[&str] = &["possible", "worth", "necessary", "true", "likely"];

/// Replaces the first "it"/"they"/"them" of each later part with the subject of the first
/// part when that part names one ("What is X", "What are X", "Explain X", "Tell me about X",
/// "How does X work"), so each sub-query stands on its own: "What are transformers and how
/// do they work?" gives "how do transformers work?" as the second part. "It" never takes a
/// plural subject: for "the pros and cons of X" it takes "X".
pub(crate) fn resolve_pronouns(parts: &mut [String]) {
    let Some((first, rest)) = parts.split_first_mut() else {
        return;
    };
    let Some(subject) = subject(first) else {
        return;
    };
    for part in rest {
        let ws = words(part);
        let found = ws.iter().enumerate().find_map(|(i, w)| {
            let impersonal = ws
                .get(i + 1)
                .is_some_and(|n| IMPERSONAL.contains(&n.lower.as_str()));
            let replacement = match w.lower.as_str() {
                "it" if !impersonal => subject.singular.as_deref(),
                "they" | "them" => Some(subject.whole.as_str()),
                _ => None,
            }?;
            Some((w.core_start..w.core_start + w.core.len(), replacement))
        });
        if let Some((range, replacement)) = found {
            part.replace_range(range, replacement);
        }
    }
}

/// What "it" and "they" may stand for.
struct Subject {
    /// The whole subject: "the pros and cons of Kubernetes".
    whole: String,
    /// A singular reading: the whole subject when its head is singular, else the object of
    /// its last "of" ("Kubernetes"), if any.
    singular: Option<String>,
}

/// Verbs ending a "How does X work" question.
const HOW_VERBS: &[&str] = &["behave", "function", "happen", "operate", "work"];

/// The subject named by a first question, at most 6 words, not itself a pronoun.
fn subject(part: &str) -> Option<Subject> {
    let ws: Vec<Word<'_>> = words(part).into_iter().filter(Word::is_real).collect();
    let lower: Vec<&str> = ws.iter().map(|w| w.lower.as_str()).collect();
    let (skip, drop_last) = match lower.as_slice() {
        ["what" | "who" | "which", "is" | "are" | "was" | "were", ..] => (2, 0),
        ["what's" | "who's", ..] | ["explain" | "describe" | "define", ..] => (1, 0),
        ["tell", "me", "about", ..] => (3, 0),
        ["how", "do" | "does" | "did", .., last] if HOW_VERBS.contains(last) => (2, 1),
        _ => return None,
    };
    let rest = ws.get(skip..ws.len().saturating_sub(drop_last))?;
    let meaningful = rest.iter().any(|w| {
        !PRONOUNS.contains(&w.lower.as_str())
            && !matches!(
                w.lower.as_str(),
                "a" | "an" | "the" | "this" | "that" | "i" | "we" | "you"
            )
    });
    let personal = rest
        .first()
        .is_some_and(|w| matches!(w.lower.as_str(), "i" | "we" | "you"));
    if rest.is_empty() || rest.len() > 6 || !meaningful || personal {
        return None;
    }
    let join = |ws: &[Word<'_>]| ws.iter().map(|w| w.core).collect::<Vec<_>>().join(" ");
    let of = rest.iter().rposition(|w| w.lower == "of");
    let head = &rest[..of.unwrap_or(rest.len())];
    let plural = head.iter().any(|w| w.lower == "and")
        || head.last().is_some_and(|w| {
            w.lower.ends_with('s') && !w.lower.ends_with("ss") && !w.lower.ends_with("us")
        });
    let singular = match (plural, of) {
        (false, _) => Some(join(rest)),
        (true, Some(i)) if i + 1 < rest.len() => Some(join(&rest[i + 1..])),
        (true, _) => None,
    };
    Some(Subject {
        whole: join(rest),
        singular,
    })
}

/// Cleans sub-queries (trimmed, non-empty, case-insensitive duplicates removed) and caps
/// them at `max`, merging the overflow into the last one so nothing is lost. `None` when
/// fewer than two remain or `max` < 2.
pub(crate) fn finish(parts: Vec<String>, max: usize) -> Option<Vec<String>> {
    if max < 2 {
        return None;
    }
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<String> = parts
        .into_iter()
        .map(|p| p.trim().to_owned())
        .filter(|p| p.chars().any(char::is_alphanumeric) && seen.insert(p.to_lowercase()))
        .collect();
    if out.len() < 2 {
        return None;
    }
    if out.len() > max {
        let tail = out.split_off(max - 1).join(" ");
        out.push(tail);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(query: &str) -> Option<Vec<String>> {
        questions(query, &words(query))
    }

    fn c(query: &str) -> (Vec<String>, bool) {
        clauses(query, &words(query))
    }

    fn e(query: &str) -> Option<Vec<String>> {
        enumeration(query, &words(query))
    }

    #[test]
    fn several_questions() {
        assert_eq!(
            q("What is Rust? How does it compare to C++?").unwrap(),
            ["What is Rust?", "How does it compare to C++?"]
        );
        assert_eq!(
            q("I run Postgres 14. How do I enable replication? What are the limits? Thanks.")
                .unwrap(),
            [
                "I run Postgres 14. How do I enable replication?",
                "What are the limits? Thanks"
            ]
        );
        assert_eq!(q("What is X? Why?"), None);
        assert_eq!(q("What is Rust?"), None);
        assert_eq!(q("huh? what is rust?"), None);
    }

    #[test]
    fn clauses_split_at_question_conjunctions() {
        assert_eq!(
            c("What are statins and how do they affect cholesterol, and why do doctors prescribe them?"),
            (
                vec![
                    "What are statins".to_owned(),
                    "how do they affect cholesterol".to_owned(),
                    "why do doctors prescribe them?".to_owned()
                ],
                true
            )
        );
        assert_eq!(
            c("Parse the logs, then count errors and then plot them"),
            (
                vec![
                    "Parse the logs".to_owned(),
                    "count errors".to_owned(),
                    "plot them".to_owned()
                ],
                true
            )
        );
        assert_eq!(
            c("relationship between sleep and memory"),
            (
                vec!["relationship between sleep and memory".to_owned()],
                false
            )
        );
        assert_eq!(c("How and why does rust prevent data races").0.len(), 1);
        assert_eq!(c("One sentence. Another sentence here.").0.len(), 2);
    }

    #[test]
    fn enumerations() {
        assert_eq!(
            e("Explain the following: 1) ownership 2) borrowing 3) lifetimes").unwrap(),
            ["ownership", "borrowing", "lifetimes"]
        );
        assert_eq!(
            e("Questions: (a) what is TCP, (b) what is UDP?").unwrap(),
            ["what is TCP", "what is UDP?"]
        );
        assert_eq!(
            e("Compare:\n- tokio runtime\n- async-std runtime\n").unwrap(),
            ["tokio runtime", "async-std runtime"]
        );
        assert_eq!(e("1. only one item"), None);
        assert_eq!(e("version 2. and 3.5 are out"), None);
        assert_eq!(e("1) 2) 3)"), None);
    }

    #[test]
    fn pronouns_take_the_subject_of_the_first_part() {
        let mut parts = vec![
            "What are transformers".to_owned(),
            "how do they work?".to_owned(),
            "is it possible to train them at home?".to_owned(),
        ];
        resolve_pronouns(&mut parts);
        assert_eq!(
            parts,
            [
                "What are transformers",
                "how do transformers work?",
                "is it possible to train transformers at home?"
            ]
        );
        let mut parts = vec![
            "How do I install it".to_owned(),
            "why does it fail".to_owned(),
        ];
        resolve_pronouns(&mut parts);
        assert_eq!(parts[1], "why does it fail");
        let mut parts = vec!["What is it".to_owned(), "why does it fail".to_owned()];
        resolve_pronouns(&mut parts);
        assert_eq!(parts[1], "why does it fail");
    }

    #[test]
    fn finish_dedupes_and_caps() {
        let parts = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            finish(parts(&["a", " A ", "", "b"]), 4).unwrap(),
            ["a", "b"]
        );
        assert_eq!(finish(parts(&["a", "a"]), 4), None);
        assert_eq!(finish(parts(&["a", "b"]), 1), None);
        assert_eq!(
            finish(parts(&["a", "b", "c", "d", "e"]), 3).unwrap(),
            ["a", "b", "c d e"]
        );
        assert_eq!(finish(parts(&["a", "?", "b"]), 4).unwrap(), ["a", "b"]);
    }
}
